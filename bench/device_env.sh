# Sourced on the GPU machine: the packed kevolve (bench/device_pack.sh) on
# PATH, its libraries found, nvcc found.
ROOT=$(pwd)
export PATH=$ROOT/.dev/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$ROOT/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KEVOLVE_BINARY=${KEVOLVE_BINARY:-$ROOT/.dev/bin/kevolve} # another build: set it first
export KV=$KEVOLVE_BINARY
