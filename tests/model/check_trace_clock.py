#!/usr/bin/env python3
"""Runs a program twice with the timing model on (--model,
PLD_MODEL_OUT) and a trace in modeled time (PLD_TRACE,
PLD_TRACE_CLOCK=model; docs/model.md, "A trace in modeled time"), and
checks the trace against the model's report:

- in the program's last run (the one the report describes), each block
  of a task of one block lasts as long as that task in the report, and
  every block begins at its task's start in the report plus one offset,
  the same for every block of every rank (the run's first device event
  in the host's clock); a block of a task of several blocks lies within
  its task's span;
- the devices' events of each of the program's runs (blocks, dispatches,
  launches, notifies, transfers, collectives), counted from that run's
  first, are the same in both processes: modeled times depend on the
  program and its inputs only.  Not the waits: the trace shows a wait
  where it blocked on the host, which the host's timing decides.

A device event belongs to the program's run whose host span ("run")
holds it: modeled times are far shorter than the host's here.

Prints "trace clock OK".

usage: check_trace_clock.py -- PROGRAM ARGS...
"""
import json
import os
import subprocess
import sys
import tempfile

# The trace's times are in microseconds with 3 decimals: they are compared
# in nanoseconds, within the rounding of two of them.
SLACK_NS = 2


def fail(msg):
    print("check_trace_clock: " + msg)
    sys.exit(1)


def ns(us):
    return int(round(us * 1000))


def run(cmd, folder, k):
    trace = os.path.join(folder, "trace%d.json" % k)
    report = os.path.join(folder, "model%d.json" % k)
    env = dict(os.environ, PLD_TRACE=trace, PLD_TRACE_CLOCK="model",
               PLD_MODEL_OUT=report)
    p = subprocess.run(cmd + ["--model"], capture_output=True, text=True,
                       env=env, timeout=300)
    if p.returncode != 0 or not p.stdout.startswith("OK\n"):
        fail("run %d: status %d, output %r, errors %r" %
             (k, p.returncode, p.stdout, p.stderr))
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    with open(report) as f:
        rep = json.load(f)
    return events, rep


def device_runs(events):
    """The devices' timed events (pid 0 is the host's) of each of the
    program's runs, in the order of the runs."""
    runs = sorted((ns(e["ts"]), ns(e["ts"] + e["dur"]), []) for e in events
                  if e.get("pid") == 0 and e["ph"] == "X" and
                  e["name"] == "run")
    if not runs:
        fail("the trace holds no run")
    for e in events:
        if e.get("pid", 0) > 0 and e["ph"] in "Xi":
            t = ns(e["ts"])
            held = [r for r in runs if r[0] <= t <= r[1]]
            if len(held) != 1:
                fail("a device event in %d runs' spans: %r" % (len(held), e))
            held[0][2].append(e)
    for k, r in enumerate(runs):
        if not r[2]:
            fail("run %d of the program has no device event" % (k + 1))
    return [r[2] for r in runs]


def check_blocks(events, rep):
    tasks = {}
    for r in rep["ranks"]:
        for t in r["tasks"]:
            tasks.setdefault((r["rank"], t["kernel"], t["task"]), []).append(t)
    offset, blocks = None, 0
    for e in events:
        if e.get("cat") != "block":
            continue
        blocks += 1
        a = e["args"]
        rank, t0, dur = e["pid"] - 1, ns(e["ts"]), ns(e["dur"])
        cands = tasks.get((rank, a["kernel"], a["task"]), [])
        what = "rank %d's block %d of %s (task %d) at %.3f us lasting %.3f" % (
            rank, a["block"], a["kernel"], a["task"], e["ts"], e["dur"])
        if not cands:
            fail("%s: the report has no such task" % what)
        if offset is None:
            # The first block fixes the offset: that of the task it fits.
            fits = [t for t in cands
                    if a["blocks"] > 1 or
                    abs(dur - ns(t["end_ns"] / 1000 - t["start_ns"] / 1000))
                    <= SLACK_NS]
            if not fits:
                fail("%s: no task of the report lasts as long: %r" %
                     (what, cands))
            offset = t0 - ns(fits[0]["start_ns"] / 1000)
        ok = False
        for t in cands:
            if t["blocks"] != a["blocks"]:
                continue
            s = ns(t["start_ns"] / 1000) + offset
            z = ns(t["end_ns"] / 1000) + offset
            if a["blocks"] == 1:
                ok = abs(t0 - s) <= SLACK_NS and abs(t0 + dur - z) <= SLACK_NS
            else:
                ok = t0 >= s - SLACK_NS and t0 + dur <= z + SLACK_NS
            if ok:
                break
        if not ok:
            fail("%s: not at any span of the report's for it (offset %d ns): "
                 "%r" % (what, offset, cands))
    if not blocks:
        fail("the trace holds no block")
    return blocks


def shape(events):
    base = min(ns(e["ts"]) for e in events)
    return sorted((e["pid"], e["tid"], e.get("cat", ""), e["name"],
                   ns(e["ts"]) - base, ns(e.get("dur", 0))) for e in events
                  if e.get("cat") != "wait")


def main():
    args = sys.argv[1:]
    if not args or args[0] != "--" or len(args) < 2:
        fail("usage: see the top of this file")
    cmd = args[1:]
    with tempfile.TemporaryDirectory(prefix="pld-trace-clock-") as d:
        runs = [run(cmd, d, k) for k in (1, 2)]
    split = [device_runs(events) for events, _ in runs]
    for (_, rep), per_run in zip(runs, split):
        n = check_blocks(per_run[-1], rep)
    a, b = ([shape(r) for r in per_run] for per_run in split)
    if len(a) != len(b):
        fail("the traces hold %d and %d runs" % (len(a), len(b)))
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            diff = [(u, v) for u, v in zip(x, y) if u != v][:3]
            fail("run %d's device events differ between the processes (%d "
                 "and %d events; first differences: %r)" %
                 (k + 1, len(x), len(y), diff))
    print("%d blocks of the last run at their modeled spans; %d runs' "
          "device events alike in both processes" % (n, len(a)))
    print("trace clock OK")


if __name__ == "__main__":
    main()
