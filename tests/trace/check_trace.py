#!/usr/bin/env python3
"""Runs a pld program with a trace (PLD_TRACE) and checks the trace against
docs/trace-format.md, independently of the code that wrote it:

  check_trace.py [--ranks N] [--expect CAT ...] [--lost] [--pld-trace BIN]
                 [--launcher WORDS] [--rounds NAME=R ...] [--host NAME ...]
                 -- PROGRAM ARGS...

- the program prints OK (its own golden check) and exits 0;
- the file is valid JSON with traceEvents and otherData;
- every pid and (pid, tid) with events is named by metadata, the ranks are
  "rank r (device d)" and there are N of them;
- spans have a non-negative duration and nest on each thread; on each
  thread, events come in the order they end;
- every flow end has its start, each start at a notify of its thread, each
  end inside a wait span of its thread, after the notify;
- the categories given with --expect occur on every rank (host: on the
  host); each block span names its kernel and block;
- lost events: none (or, with --lost, some, counted in otherData and in an
  instant);
- with --rounds NAME=R: the program's collective spans named NAME (a
  `coll` span, e.g. pld_allreduce) are there on every rank, and each
  counts R synchronisation rounds;
- with --host NAME: every run of the program has a host span named NAME
  (e.g. "host task t_sum", "copy in");
- with --pld-trace: the tool renders the trace to a well-formed SVG with a
  lane per thread, and its summary counts the kernels' blocks.
Prints the first violation and exits 1."""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_trace.py [options] -- PROGRAM ARGS...")
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1:]
    ranks, expect, lost, tool, launcher = None, [], False, None, []
    rounds, host = {}, []
    i = 0
    while i < len(opts):
        o = opts[i]
        if o == "--ranks":
            ranks = int(opts[i + 1])
            i += 2
        elif o == "--expect":
            expect.append(opts[i + 1])
            i += 2
        elif o == "--lost":
            lost = True
            i += 1
        elif o == "--pld-trace":
            tool = opts[i + 1]
            i += 2
        elif o == "--launcher":
            launcher = opts[i + 1].split()
            i += 2
        elif o == "--rounds":
            name, _, r = opts[i + 1].partition("=")
            rounds[name] = int(r)
            i += 2
        elif o == "--host":
            host.append(opts[i + 1])
            i += 2
        else:
            fail("unknown option " + o)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        env = dict(os.environ, PLD_TRACE=path)
        run = subprocess.run(launcher + cmd, env=env, capture_output=True,
                             text=True, timeout=300)
        if run.returncode != 0 or run.stdout != "OK\n":
            fail("program: status %d, output %r, errors %r" %
                 (run.returncode, run.stdout, run.stderr[-2000:]))
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            fail("trace is not valid JSON: %s" % e)
        check(doc, ranks, expect, lost)
        check_rounds(doc, rounds)
        check_host(doc, host)
        if tool:
            render(tool, path, tmp, doc)
    print("trace OK")


def check_host(doc, names):
    spans = [e for e in doc["traceEvents"]
             if e.get("ph") == "X" and e.get("pid") == 0]
    runs = sorted({e["args"].get("run") for e in spans if e["name"] == "run"})
    if names and not runs:
        fail("no host span named run")
    for name in names:
        have = sorted({e["args"].get("run") for e in spans
                       if e["name"] == name})
        if have != runs:
            fail("host spans named %r in runs %r, expected every run %r "
                 "(the host's spans: %r)" %
                 (name, have, runs, sorted({e["name"] for e in spans})))


def check_rounds(doc, rounds):
    ranks = {e["pid"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e["pid"] > 0}
    for name, want in rounds.items():
        spans = [e for e in doc["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") == "coll" and
                 e.get("name") == name]
        if {e["pid"] for e in spans} != ranks:
            fail("%s: spans on ranks %r, expected every rank %r" %
                 (name, sorted(p - 1 for p in {e["pid"] for e in spans}),
                  sorted(p - 1 for p in ranks)))
        for e in spans:
            if e["args"].get("rounds") != want:
                fail("%s on rank %d: %r rounds, expected %d" %
                     (name, e["pid"] - 1, e["args"].get("rounds"), want))


def check(doc, ranks, expect, lost):
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"),
                                                   list):
        fail("no traceEvents array")
    other = doc.get("otherData", {})
    if other.get("producer") != "pld" or other.get("runs", 0) < 1:
        fail("otherData: %r" % other)
    ev = doc["traceEvents"]
    pname, tname = {}, {}
    for e in ev:
        if e.get("ph") == "M":
            if e["name"] == "process_name":
                pname[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                tname[(e["pid"], e["tid"])] = e["args"]["name"]
    body = [e for e in ev if e.get("ph") != "M"]
    if not body:
        fail("no events")
    for e in body:
        for k in ("ph", "pid", "tid", "ts"):
            if k not in e:
                fail("event without %s: %r" % (k, e))
        if e["pid"] not in pname:
            fail("pid %d has no process_name" % e["pid"])
        if (e["pid"], e["tid"]) not in tname:
            fail("pid %d tid %d has no thread_name" % (e["pid"], e["tid"]))
    rank_pids = sorted(p for p in pname if p > 0)
    for p in rank_pids:
        if not re.fullmatch(r"rank %d \(device \d+\)" % (p - 1), pname[p]):
            fail("pid %d is named %r" % (p, pname[p]))
    if pname.get(0) != "host":
        fail("pid 0 is named %r" % pname.get(0))
    if ranks is not None and len(rank_pids) != ranks:
        fail("%d ranks in the trace, expected %d" % (len(rank_pids), ranks))

    # Spans: durations, nesting and order per thread.
    by_thread = {}
    for e in body:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, es in by_thread.items():
        last_end = None
        spans = []
        for e in es:
            if e["ph"] == "X":
                if e["dur"] < 0:
                    fail("negative duration: %r" % e)
                end = e["ts"] + e["dur"]
                if last_end is not None and end < last_end - 0.0015:
                    fail("thread %r: %r ends before the event before it" %
                         (key, e["name"]))
                last_end = end
                spans.append((e["ts"], end, e))
        # Nesting: sorted by start (longer first), a span starting inside
        # another must end inside it.
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s in spans:
            while stack and s[0] >= stack[-1][1] - 0.0005:
                stack.pop()
            if stack and s[1] > stack[-1][1] + 0.0015:
                fail("thread %r: %r [%.3f, %.3f] overlaps %r [%.3f, %.3f]" %
                     (key, s[2]["name"], s[0], s[1], stack[-1][2]["name"],
                      stack[-1][0], stack[-1][1]))
            stack.append(s)

    # Flows.
    starts, ends = {}, {}
    for e in body:
        if e["ph"] == "s":
            if e["id"] in starts:
                fail("flow %d starts twice" % e["id"])
            starts[e["id"]] = e
        elif e["ph"] == "f":
            ends.setdefault(e["id"], []).append(e)
    notifies = {(e["pid"], e["tid"], e["ts"]): e for e in body
                if e["ph"] == "i" and e.get("cat") == "notify"}
    waits = {}
    for e in body:
        if e["ph"] == "X" and e.get("cat") == "wait":
            waits.setdefault((e["pid"], e["tid"]), []).append(e)
    for fid, s in starts.items():
        if (s["pid"], s["tid"], s["ts"]) not in notifies:
            fail("flow %d starts where no notify is" % fid)
        if fid not in ends:
            fail("flow %d has no end" % fid)
    for fid, fs in ends.items():
        if fid not in starts:
            fail("flow %d ends without a start" % fid)
        for f in fs:
            if f.get("bp") != "e":
                fail("flow end %d does not bind to its slice" % fid)
            if f["ts"] < starts[fid]["ts"] - 0.0015:
                fail("flow %d ends before it starts" % fid)
            inside = [w for w in waits.get((f["pid"], f["tid"]), [])
                      if w["ts"] <= f["ts"] <= w["ts"] + w["dur"]]
            if not inside:
                fail("flow %d ends outside any wait of its thread" % fid)
            # The notify went to the waiting rank's cell the wait waits on.
            s = starts[fid]
            n = notifies[(s["pid"], s["tid"], s["ts"])]["args"]
            w = inside[-1]["args"]
            if (n["to"] != f["pid"] - 1 or n["window"] != w["window"] or
                    n["cell"] != w["cell"]):
                fail("flow %d: a notify of %s cell %s to rank %d releases "
                     "a wait on %s cell %s of rank %d" %
                     (fid, n["window"], n["cell"], n["to"], w["window"],
                      w["cell"], f["pid"] - 1))
    for key, ws in waits.items():
        for w in ws:
            a = w["args"]
            for k in ("window", "cell", "cmp", "expected", "seen", "outcome"):
                if k not in a:
                    fail("wait without %s: %r" % (k, w))
            if a["outcome"] == "ok" and not cmp_holds(a["cmp"], a["seen"],
                                                      a["expected"]):
                fail("wait returned with %r" % a)

    # Expected categories on every rank.
    for cat in expect:
        pids = [0] if cat == "host" else rank_pids
        for p in pids:
            if not any(e.get("cat") == cat and e["pid"] == p for e in body):
                fail("no %s event on pid %d" % (cat, p))
    for e in body:
        if e.get("cat") == "block":
            a = e["args"]
            if a.get("kernel") != e["name"] or not (0 <= a["block"] <
                                                    a["blocks"]):
                fail("block span %r" % e)
            if tname[(e["pid"], e["tid"])].split(" core ")[0] not in ("AIV",
                                                                     "AIC"):
                fail("block on a thread named %r" %
                     tname[(e["pid"], e["tid"])])

    dropped = sum(e["args"]["lost"] for e in body
                  if e.get("name") == "events lost")
    if lost:
        if dropped == 0 or other.get("lost_events") != dropped:
            fail("lost events: %d in instants, %r in otherData" %
                 (dropped, other.get("lost_events")))
    elif dropped or other.get("lost_events"):
        fail("events were lost: %r" % other.get("lost_events"))


def cmp_holds(cmp, seen, expected):
    return {"==": seen == expected, "!=": seen != expected,
            ">=": seen >= expected, ">": seen > expected,
            "<=": seen <= expected, "<": seen < expected}[cmp]


def render(tool, path, tmp, doc):
    svg = os.path.join(tmp, "trace.svg")
    r = subprocess.run([tool, path, "-o", svg], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        fail("pld-trace: status %d: %s" % (r.returncode, r.stderr))
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as e:
        fail("pld-trace's SVG is not well-formed: %s" % e)
    lanes = {(int(g.get("data-pid")), int(g.get("data-tid")))
             for g in root.iter() if g.get("class") == "lane"}
    threads = {(e["pid"], e["tid"]) for e in doc["traceEvents"]
               if e.get("ph") in ("X", "i")}
    if not threads <= lanes:
        fail("pld-trace's SVG lacks lanes %r" % sorted(threads - lanes))
    blocks = {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "block":
            blocks[e["name"]] = blocks.get(e["name"], 0) + 1
    for kernel, n in blocks.items():
        if not re.search(r"^\s*%s\s+%d\s" % (re.escape(kernel), n), r.stdout,
                         re.M):
            fail("pld-trace's summary does not count %d blocks of %s:\n%s" %
                 (n, kernel, r.stdout))


main()
