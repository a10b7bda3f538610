#!/bin/sh
# A one-node Slurm cluster of this machine in a folder of its own, for
# kevolve's tests and for trying `evaluator.launcher: slurm` by hand:
# Debian's munged (its own key and socket), slurmctld and slurmd (free
# ports, linuxproc process tracking, no cgroups, no accounting), one
# partition "kv" of this host's CPUs.
#   scripts/slurm-local.sh start DIR   starts it; prints the line to source
#                                      (export SLURM_CONF=DIR/slurm.conf)
#   scripts/slurm-local.sh stop DIR    stops it (DIR stays, logs in DIR/log)
#   scripts/slurm-local.sh why-not     says why it cannot start here, or
#                                      nothing (exit 0) when it can
# Needs root (slurmd starts job steps as their user) and the packages
# slurmctld, slurmd, slurm-client and munge (scripts/install-deps.sh).
set -eu

why_not() {
    for p in munged mungekey slurmctld slurmd srun sinfo scancel squeue; do
        command -v "$p" >/dev/null 2>&1 ||
            { echo "$p is not installed (Debian: slurmctld slurmd slurm-client munge)"; return 0; }
    done
    [ "$(id -u)" = 0 ] || { echo "not root: slurmd must start job steps as their user"; return 0; }
    command -v python3 >/dev/null 2>&1 || { echo "python3 is missing (to find free ports)"; return 0; }
    return 0
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    dir=$1
    reason=$(why_not)
    [ -z "$reason" ] || { echo "slurm-local: cannot start: $reason" >&2; exit 1; }
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    dir=$(cd "$dir" && pwd)
    host=$(hostname -s)
    mungekey --create --keyfile="$dir/munge.key" --force >/dev/null 2>&1
    chmod 600 "$dir/munge.key"
    munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed"
    cat >"$dir/slurm.conf" <<EOF
ClusterName=kevolve-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SchedulerType=sched/builtin
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=kv Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -f "$SLURM_CONF" -i
    slurmd -f "$SLURM_CONF"
    i=0
    until sinfo -h -o %t 2>/dev/null | grep -q idle; do
        i=$((i + 1))
        if [ "$i" -gt 60 ]; then
            echo "slurm-local: the node did not come up in 30 s; the logs:" >&2
            tail -n 20 "$dir"/log/*.log >&2
            stop "$dir"
            exit 1
        fi
        sleep 0.5
    done
    echo "export SLURM_CONF=$dir/slurm.conf"
}

stop() {
    dir=$1
    for d in slurmd slurmctld munged; do
        if [ -f "$dir/$d.pid" ]; then
            kill "$(cat "$dir/$d.pid")" 2>/dev/null || true
        fi
    done
    # Give them a moment, then make sure.
    sleep 1
    for d in slurmd slurmctld munged; do
        if [ -f "$dir/$d.pid" ]; then
            kill -9 "$(cat "$dir/$d.pid")" 2>/dev/null || true
            rm -f "$dir/$d.pid"
        fi
    done
}

case ${1:-} in
start) start "${2:?a folder}" ;;
stop) stop "${2:?a folder}" ;;
why-not) why_not ;;
*)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
