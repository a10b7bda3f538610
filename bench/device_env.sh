# Sourced on the GPU machine: the packed kevolve (bench/device_pack.sh) on
# PATH, its libraries found, nvcc found.
ROOT=$(pwd)
export PATH=$ROOT/.dev/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$ROOT/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KEVOLVE_BINARY=${KEVOLVE_BINARY:-$ROOT/.dev/bin/kevolve} # another build: set it first
export KV=$KEVOLVE_BINARY
# The packed binary embeds the task files it was built from: a tree edited
# since would judge the old headers under the new names.
if [ -s "$ROOT/.dev/SOURCES.sha256" ] && [ "$KEVOLVE_BINARY" = "$ROOT/.dev/bin/kevolve" ] &&
    ! (cd "$ROOT" && sha256sum -c --quiet .dev/SOURCES.sha256 >/dev/null 2>&1); then
    echo "device_env: .dev was packed from other sources than this tree's:" >&2
    (cd "$ROOT" && sha256sum -c --quiet .dev/SOURCES.sha256 2>&1 | head -5) >&2
    echo "device_env: run bench/device_pack.sh again" >&2
    exit 1
fi

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
