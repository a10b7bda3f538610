#!/usr/bin/env python3
"""How a kernel run's children used the device (issue 21.6), from its
store: children per minute (and those judged on the device: duplicates of a
program judged already repeat its verdict), the median seconds a child held the device
(device_held_seconds: from taking the device to letting it go; older
stores: the judge's worker_seconds), the timed calls' share of that (the
median over children timed in full, and over all held time), the median
compile, prepare (contexts and the runner, before the device is held) and
wait seconds, the device's busy share of the run, and the share of
children correct (of those judged, and of all; a child the controller
turned down before any judge saw it, with nothing to change or too long,
was not judged); then where the held
seconds went (the judge's profile steps, summed over the children judged,
as shares of all held time), and per mutator its children, those correct,
beating their parent, and the failures by reason; and how often the
baseline was timed (seeds included) and its seconds; and the device's
time between holds (idle_between_holds). Used by
hand_sweep_table.py; alone:

Usage: main_job_stats.py RUN_DB RUN_SECONDS
"""
import json
import sqlite3
import statistics
import sys

CHILD = "p.iteration > 0 and p.is_migrant = 0"


def artifact(con, name):
    """{program id: value} of artifact NAME over the children."""
    rows = con.execute(f"select p.id, a.value from programs p join artifacts a on "
                       f"a.program_id = p.id and a.name = ? where {CHILD}", (name,)).fetchall()
    out = {}
    for pid, v in rows:
        try:
            out[pid] = json.loads(v) if isinstance(v, str) else v
        except ValueError:
            out[pid] = v
    return out


def med(xs):
    return statistics.median(xs) if xs else 0.0


def idle_between_holds(con):
    """Where the device's idle time went, from the judges' device_hold_clock
    (asked, granted, held, freed on the host's monotonic clock; stores from
    before it have none): per device, each gap between one hold's end and the
    next one's start is a handoff when the next child had asked before the
    device was let go (its slot's grant and its lock took the gap), else the
    device starved (no child was ready) until the next one held it."""
    clocks = {}
    for (v,) in con.execute("select value from artifacts where name = 'device_hold_clock'"):
        try:
            c = json.loads(v)
        except (TypeError, ValueError):
            continue
        if isinstance(c, dict) and all(k in c for k in ("asked", "granted", "held", "freed")):
            # A duplicate or a migrant repeats another program's artifacts.
            clocks[(c.get("device", 0), c["held"])] = c
    out = {"holds": len(clocks), "handoffs": 0, "handoff_s": 0.0, "grant_s": 0.0, "lock_s": 0.0,
           "handoff_median_ms": 0.0, "starved": 0, "starved_s": 0.0, "held_s": 0.0}
    gaps = []
    for dev in {d for d, _ in clocks}:
        seq = sorted((c for (d, _), c in clocks.items() if d == dev), key=lambda c: c["held"])
        out["held_s"] += sum(c["freed"] - c["held"] for c in seq)
        for prev, nxt in zip(seq, seq[1:]):
            if nxt["asked"] < prev["freed"]:
                out["handoffs"] += 1
                gap = max(0.0, nxt["held"] - prev["freed"])
                out["handoff_s"] += gap
                out["grant_s"] += max(0.0, nxt["granted"] - prev["freed"])
                out["lock_s"] += max(0.0, nxt["held"] - max(nxt["granted"], prev["freed"]))
                gaps.append(gap)
            else:
                # The whole gap: no child was ready, then the late one's
                # grant and lock (not a handoff: none waited).
                out["starved"] += 1
                out["starved_s"] += max(0.0, nxt["held"] - prev["freed"])
    out["handoff_median_ms"] = 1000 * med(gaps)
    return out


def stats(db, run_s):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ids = [r[0] for r in con.execute(f"select p.id from programs p where {CHILD}")]
    correct = con.execute(f"select count(*) from programs p where {CHILD} and status = 'ok' "
                          "and json_extract(metrics, '$.correct') = 1").fetchone()[0]
    screened = con.execute(f"select count(*) from programs p where {CHILD} and "
                           "json_extract(metrics, '$.screened_out') = 1").fetchone()[0]
    held = artifact(con, "device_held_seconds")
    worker = artifact(con, "worker_seconds")
    prof = artifact(con, "profile_seconds")
    # The judge's input writes inside the timed windows: the calls alone are
    # the windows less these.
    writes = {i: float((c or {}).get("block_write", 0)) if isinstance(c, dict) else 0.0
              for i, c in artifact(con, "profile_check_seconds").items()}
    # A duplicate (the same source, or the same compiled artifact, as a
    # program judged already) repeats that verdict: it held nothing.
    dup = set(artifact(con, "duplicate_of_artifact")) | {
        r[0] for r in con.execute(f"select p.id from programs p where {CHILD} and "
                                  "status = 'duplicate'")}
    wait = artifact(con, "device_wait_seconds")

    def held_of(i):
        if i in dup:
            return 0.0
        if i in held:
            return float(held[i])
        # Older stores, or a judge that failed before it held the device.
        return max(0.0, float(worker.get(i, 0) or 0) - float(wait.get(i, 0) or 0))

    held_s = {i: held_of(i) for i in ids}
    prof = {i: p for i, p in prof.items() if i not in dup}
    ok = {r[0] for r in con.execute(f"select p.id from programs p where {CHILD} and status = 'ok' "
                                    "and json_extract(metrics, '$.correct') = 1 and "
                                    "coalesce(json_extract(metrics, '$.screened_out'), 0) = 0")}
    full = [i for i in ids if i in prof and i in ok and held_s[i] > 0 and
            float(prof[i].get("timed", 0)) > 0]
    shares = [float(prof[i]["timed"]) / held_s[i] for i in full]
    call_shares = [(float(prof[i]["timed"]) - writes.get(i, 0.0)) / held_s[i] for i in full]
    timed_all = sum(float(prof[i].get("timed", 0)) for i in ids if i in prof)
    held_all = sum(held_s.values())
    # Children the controller turned down before any judge saw them (no
    # change to make, too long, an edit outside the blocks).
    turned_down = {r[0] for r in con.execute(f"select p.id from programs p where {CHILD} and "
                                             "status = 'rejected'")}
    n = len(ids)
    judged = n - len(dup) - len(turned_down - dup)
    # Where the held seconds went: every step but the one before the hold
    # (timing the baseline is held time too).
    steps = {}
    for i, p in prof.items():
        for k, v in p.items():
            if k != "prepare":
                steps[k] = steps.get(k, 0.0) + float(v)
    # The baseline timed in the run, the seeds' evaluations included (a
    # duplicate or a migrant repeats another program's artifacts).
    base_timed = [float(json.loads(pv).get("baseline", 0)) for pv, in con.execute(
        "select pa.value from programs p join artifacts a on a.program_id = p.id and "
        "a.name = 'baseline' join artifacts pa on pa.program_id = p.id and "
        "pa.name = 'profile_seconds' where p.status != 'duplicate' and p.is_migrant = 0 and "
        "p.duplicate_of is null and not exists (select 1 from artifacts d where "
        "d.program_id = p.id and d.name = 'duplicate_of_artifact')")]
    held_by_step = {k: v / held_all for k, v in sorted(steps.items(), key=lambda kv: -kv[1])
                    } if held_all else {}
    mutators = {}
    for m, status, code, reason, correct_, fit, pfit in con.execute(
            f"select coalesce(p.mutator, '?'), p.status, p.reason_code, "
            f"coalesce(p.status_reason, ''), json_extract(p.metrics, '$.correct'), p.fitness, "
            f"q.fitness from programs p left join programs q on q.id = p.parent_id "
            f"where {CHILD}"):
        e = mutators.setdefault(m, {"children": 0, "correct": 0, "better": 0, "failed": {}})
        e["children"] += 1
        if status == "ok" and correct_ == 1:
            e["correct"] += 1
            e["better"] += int(fit is not None and pfit is not None and fit > pfit)
        elif status != "duplicate":
            # The stored reason code; older stores: "rejected by the
            # harness: CODE: detail" -> CODE.
            parts = [x.strip() for x in reason.split(":")]
            why = code or (parts[1] if parts[0].startswith("rejected") and len(parts) > 1
                           else parts[0])[:40] or status
            e["failed"][why] = e["failed"].get(why, 0) + 1
    idle = idle_between_holds(con)
    return {
        "children": n,
        "judged": judged,
        "run_s": run_s,
        "per_minute": 60.0 * n / run_s if run_s else 0.0,
        "judged_per_minute": 60.0 * judged / run_s if run_s else 0.0,
        "held_median_s": med([h for h in held_s.values() if h > 0]),
        "held_full_median_s": med([held_s[i] for i in full]),
        "timed_share_full_median": med(shares),
        "timed_share_all": timed_all / held_all if held_all else 0.0,
        "calls_share_full_median": med(call_shares),
        "compile_median_s": med([float(v) for v in artifact(con, "compile_seconds").values()]),
        "wait_median_s": med([float(v) for v in wait.values()]),
        "prepare_median_s": med([float(p.get("prepare", 0)) for p in prof.values()]),
        # The seeds' holds too, where the judges said when they held it.
        "device_busy": (idle["held_s"] if idle["holds"] else held_all) / run_s if run_s else 0.0,
        "correct": correct,
        "correct_share": correct / n if n else 0.0,
        "correct_share_judged": correct / judged if judged else 0.0,
        "screened": screened,
        "duplicates": len(dup),
        "turned_down": len(turned_down - dup),
        "timed_in_full": len(full),
        "held_by_step": held_by_step,
        "baseline_timed": len(base_timed),
        "baseline_seconds": sum(base_timed),
        "mutators": mutators,
        "idle": idle,
    }


def lines(s):
    return [
        f"  children per minute {s['per_minute']:.1f} ({s['children']} in {s['run_s']:.0f} s; "
        f"judged on the device, duplicates and those turned down before the judge aside: "
        f"{s['judged_per_minute']:.1f}); "
        f"device held per child, median {s['held_median_s']:.2f} s (timed in full: "
        f"{s['held_full_median_s']:.2f} s, {s['timed_in_full']} children), timed windows "
        f"{s['timed_share_full_median']:.0%} of it (of all held time: {s['timed_share_all']:.0%}; "
        f"the calls alone, the judge's input writes aside: {s.get('calls_share_full_median', 0):.0%})",
        f"  compile {s['compile_median_s']:.1f} s, prepare {s['prepare_median_s']:.2f} s, wait "
        f"{s['wait_median_s']:.1f} s per child (medians); device busy {s['device_busy']:.0%} "
        f"of the run; correct {s['correct']} ({s['correct_share_judged']:.0%} of those judged, "
        f"{s['correct_share']:.0%} of all); screened out "
        f"{s['screened']}; duplicates {s['duplicates']}; turned down {s.get('turned_down', 0)}",
        "  held time by step: " + ", ".join(f"{k} {v:.0%}" for k, v in s.get("held_by_step",
                                                                              {}).items()),
        f"  baseline timed {s.get('baseline_timed', 0)} times in the run, seeds included "
        f"({s.get('baseline_seconds', 0):.0f} s of the device)",
    ] + ([
        f"  device between holds ({s['idle']['holds']} holds, {s['idle']['held_s']:.0f} s held): "
        f"{s['idle']['handoffs']} handoffs to a child waiting, {s['idle']['handoff_s']:.1f} s "
        f"(median {s['idle']['handoff_median_ms']:.0f} ms; the slot's grant "
        f"{s['idle']['grant_s']:.1f} s, the lock {s['idle']['lock_s']:.1f} s); starved, no child "
        f"ready: {s['idle']['starved']} times, {s['idle']['starved_s']:.1f} s"
    ] if s.get("idle", {}).get("holds") else []) + [f"  {m}: {e['children']} children, {e['correct']} correct, {e['better']} beat their "
         f"parent; failed: " + (", ".join(f"{k} {v}" for k, v in sorted(
             e['failed'].items(), key=lambda kv: -kv[1])) or "none")
         for m, e in sorted(s.get("mutators", {}).items())]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    s = stats(sys.argv[1], float(sys.argv[2]))
    print("\n".join(lines(s)))
    print(json.dumps(s))
