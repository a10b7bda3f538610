# Sourced on the GPU machine: the packed kevolve (bench/device_pack.sh) on
# PATH, its libraries found, nvcc found.
ROOT=$(pwd)
export PATH=$ROOT/.dev/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$ROOT/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KEVOLVE_BINARY=${KEVOLVE_BINARY:-$ROOT/.dev/bin/kevolve} # another build: set it first
export KV=$KEVOLVE_BINARY

# resume_stopped PID: waits for PID, resuming any kevolve process found
# stopped meanwhile (a red-team candidate such as reach_parent stops its
# parent), so a batch goes on; STOPS counts them.
resume_stopped() {
    local p
    STOPS=0
    while kill -0 "$1" 2>/dev/null; do
        for p in $(ps -eo pid=,stat=,comm= | awk '$2 ~ /^[Tt]/ && $3 ~ /^kevolve/ {print $1}'); do
            STOPS=$((STOPS + 1))
            kill -CONT "$p" 2>/dev/null
        done
        sleep 0.2
    done
    wait "$1"
}
