#!/usr/bin/env python3
"""Runs one controller (OpenEvolve or kevolve) for bench/openevolve_side_by_side.sh
and prints one JSON line: its own CPU seconds (the controller process alone,
sampled from /proc every 20 ms: utime + stime of all its threads, not of its
children), the CPU of the whole tree (wait4's rusage: the controller plus
every descendant it reaped), its peak resident memory (VmHWM), the
evaluations done (lines of the evaluator's log), and, with --kill-at K, the
moment it was killed with SIGKILL (its whole process group) once K
evaluations were logged.

usage: openevolve_measure.py --eval-log FILE [--kill-at K] -- COMMAND..."""
import json
import os
import signal
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def sample(pid):
    """(self CPU seconds, VmHWM kB) of PID, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
        hwm = 0
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return cpu, hwm
    except (OSError, IndexError, ValueError):
        return None


def main(argv):
    kill_at, eval_log = None, None
    while argv and argv[0] != "--":
        opt, val = argv[0], argv[1]
        argv = argv[2:]
        if opt == "--kill-at":
            kill_at = int(val)
        elif opt == "--eval-log":
            eval_log = val
    cmd = argv[1:]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=open(os.environ.get("BENCH_STDERR", os.devnull), "wb"))
    cpu = hwm = 0.0
    killed_at = None
    while True:
        s = sample(proc.pid)  # before wait4: a reaped process has no /proc entry
        done, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if s:
            cpu, hwm = max(cpu, s[0]), max(hwm, s[1])
        if done:
            break
        if kill_at is not None and killed_at is None and lines(eval_log) >= kill_at:
            killed_at = lines(eval_log)
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.02)
    proc.returncode = status
    try:  # what the kill left behind (a pool's workers in their own groups)
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    time.sleep(0.5)
    out = {
        "controller_cpu_s": round(cpu, 3),
        "tree_cpu_s": round(rusage.ru_utime + rusage.ru_stime, 3),
        "peak_rss_mb": round(hwm / 1024.0, 1),
        "wall_s": round(time.monotonic() - start, 2),
        "evaluations": lines(eval_log),
        "exit": status,
    }
    if killed_at is not None:
        out["killed_after_evaluations"] = killed_at
        out["evaluations"] = lines(eval_log)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
