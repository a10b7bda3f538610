#!/usr/bin/env python3
"""A stand-in for `kevolve eval --job FILE` (tests/unit/test_evaluator_slots.c):
reads the job, "compiles" for the seconds the candidate names, asks the
evaluator for a device over the job's slot channel, holds it for the
seconds the candidate names, and reports when it held which device, with
one scenario row as the harness would. With "prepare", it first asks
which device will be its own (a bind) and prepares for those seconds
before it asks, as the judge opens its contexts and starts its runner."""
import json
import socket
import struct
import sys
import time

job = json.load(open(sys.argv[3]))
plan = json.load(open(job["candidate"]))
time.sleep(plan["compile"])
chan = socket.socket(fileno=job["slot_fd"])
bound = -1
prepared = None
if "prepare" in plan:
    chan.send(b"b")
    msg = chan.recv(5)
    assert msg[:1] == b"B", msg
    bound = struct.unpack("<i", msg[1:5])[0]
    start = time.monotonic()
    time.sleep(plan["prepare"])
    prepared = [start, time.monotonic()]
chan.send(b"a")
msg = chan.recv(5)
device = struct.unpack("<i", msg[1:5])[0]
chan.send(b"h")
start = time.monotonic()
time.sleep(plan["device"])
end = time.monotonic()
chan.send(b"f")
scenario = {"name": "only", "tags": "decode", "weight": 1.0, "median_us": 10.0 + device,
            "speedup": 2.0, "baseline_median_us": 20.0 + 2 * device}
print(json.dumps({
    "metrics": {"combined_score": 2.0, "device": device, "start": start, "end": end,
                "bound": bound, "prepare_start": prepared[0] if prepared else 0,
                "prepare_end": prepared[1] if prepared else 0},
    "artifacts": {"task": job["task"], "backend": job["backend"],
                  "device": {"name": "stand-in", "index": device}, "scenarios": [scenario]},
}))
