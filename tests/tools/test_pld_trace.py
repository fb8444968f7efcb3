#!/usr/bin/env python3
"""Tests of pld-trace, one case per run: test_pld_trace.py PLD_TRACE CASE.

The traces are written here, in the format of docs/trace-format.md, and
the figures the tool prints are checked against figures computed here, from
the same events, independently of the tool.  Prints OK and exits 0 when the
case passes; prints what differs and exits 1 when it fails."""
import bisect
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

EPS = 0.0005  # half a nanosecond, in microseconds: the tool's tolerance
SVG = "{http://www.w3.org/2000/svg}"
USAGE = ("usage: pld-trace TRACE.json [-o OUT.svg] [--width PX] | "
         "pld-trace --diag FOLDER")
TOOL = None
TMP = None


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def us(ns):
    """Nanoseconds as the trace's microseconds (three decimals, exactly as
    the tool reads them back)."""
    return ns / 1000


# Writing traces.

def trace_text(events, lost=0):
    """The trace as the recorder writes it: one event per line."""
    head = ('{"displayTimeUnit":"ns",\n "otherData":{"producer":"pld",'
            '"clock":"CLOCK_MONOTONIC","lost_events":%d,"runs":1},\n'
            ' "traceEvents":[\n' % lost)
    return head + ",\n".join(json.dumps(e) for e in events) + "\n]}\n"


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def meta(pid, name, tid=None, sort=None):
    if tid is None:
        return [{"ph": "M", "pid": pid, "name": "process_name",
                 "args": {"name": name}},
                {"ph": "M", "pid": pid, "name": "process_sort_index",
                 "args": {"sort_index": pid}}]
    return [{"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
             "args": {"name": name}},
            {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
             "args": {"sort_index": tid}}]


def span(cat, name, pid, tid, ts_ns, end_ns, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
            "ts": us(ts_ns), "dur": us(end_ns - ts_ns), "args": args}


def cell_text(cell):
    """A cell's index as pld writes it: "[4, 1]"."""
    return "[%s]" % ", ".join(map(str, cell))


def wait_span(pid, tid, ts_ns, end_ns, window, cell, cmp=">=", expected=1):
    return span("wait", "wait %s cell %s" % (window, cell_text(cell)), pid,
                tid, ts_ns, end_ns, window=window, cell=cell, cmp=cmp,
                expected=expected, seen=expected, outcome="ok")


def notify(pid, tid, ts_ns, window, cell, peer, flow_id):
    """A notify instant and the start of its flow."""
    return [{"ph": "i", "s": "t", "cat": "notify",
             "name": "notify %s cell %s" % (window, cell_text(cell)),
             "pid": pid,
             "tid": tid, "ts": us(ts_ns),
             "args": {"peer": peer, "window": window, "cell": cell,
                      "op": "add", "value": 1}},
            {"ph": "s", "cat": "signal", "name": "signal", "id": flow_id,
             "pid": pid, "tid": tid, "ts": us(ts_ns)}]


def flow_end(pid, tid, wait_end_ns, flow_id):
    """The end of a flow, 1 ns before the end of the wait it released."""
    return {"ph": "f", "bp": "e", "cat": "signal", "name": "signal",
            "id": flow_id, "pid": pid, "tid": tid, "ts": us(wait_end_ns - 1)}


# Kernel names that need escaping in XML, \u escapes (one a surrogate pair
# in JSON) and spaces.
KERNELS = ["matmul", "softmax & <norm>", 'lay "norm"', "gelu\u00e9",
           "emoji\U0001F600", "allreduce_step", "it's"]


def random_trace(seed, nranks, blocks=(3, 8)):
    """Host spans, and per rank an AICPU with dispatches and launches and 2
    to 4 cores running blocks with waits (some inside a collective's span),
    RMA spans, notifies and flows between ranks; in a random order."""
    rng = random.Random(seed)
    ev = meta(0, "host") + meta(0, "host", tid=0)
    ev.append(span("host", "compile", 0, 0, 0, 1500))
    ev.append(span("host", "run", 0, 0, 1600, 1600 + rng.randint(1, 90000),
                   run=1))
    cores, waits = [], []
    for r in range(nranks):
        pid = r + 1
        ev += meta(pid, "rank %d (device %d)" % (r, rng.randint(0, 7)))
        ev += meta(pid, "AICPU", tid=0)
        d0 = rng.randint(0, 3000)
        d1 = d0 + rng.randint(5000, 80000)
        ev.append(span("dispatch", "dev_fn", pid, 0, d0, d1, run=1, call=0))
        ev.append(span("launch", "launch k", pid, 0, d0 + 10, d1 - 10,
                       kernel="k", blocks=4, task=0))
        for c in range(rng.randint(2, 4)):
            tid = c + 1
            ev += meta(pid, "%s core %d" % (rng.choice(["AIC", "AIV"]), c),
                       tid=tid)
            cores.append((pid, tid))
            t = rng.randint(0, 2000)
            for b in range(rng.randint(*blocks)):
                t += rng.randint(0, 3000)
                dur = rng.randint(2000, 40000)
                kernel = rng.choice(KERNELS)
                ev.append(span("block", kernel, pid, tid, t, t + dur,
                               kernel=kernel, block=b, blocks=8, task=0))
                k = rng.randint(0, 3)
                points = sorted(rng.sample(range(t + 1, t + dur), 4 * k))
                for i in range(k):
                    a, ws, we, z = points[4 * i:4 * i + 4]
                    if we - ws < 100:
                        continue
                    window = rng.choice(["sig", "flag"])
                    cell = [rng.randint(0, 3), rng.randint(0, 1)]
                    ev.append(wait_span(pid, tid, ws, we, window, cell))
                    waits.append((pid, tid, ws, we, window, cell))
                    roll = rng.random()
                    if roll < 0.3:
                        ev.append(span("coll", "allreduce", pid, tid, a, z,
                                       call=i, bytes=4096))
                    elif roll < 0.6:
                        ev.append(span("rma", "put", pid, tid, a, ws,
                                       peer=0, window="buf", bytes=1024))
                t += dur
    flow_id = 1
    for pid, tid, ws, we, window, cell in waits:
        others = [c for c in cores if c[0] != pid]
        if rng.random() < 0.8 and others:
            npid, ntid = rng.choice(others)
            at = rng.randint(max(0, ws - 5000), we - 1)
            ev += notify(npid, ntid, at, window, cell, pid - 1, flow_id)
            ev.append(flow_end(pid, tid, we, flow_id))
            flow_id += 1
    for _ in range(rng.randint(1, 5)):  # notifies that released no wait
        npid, ntid = rng.choice(cores)
        ev += notify(npid, ntid, rng.randint(0, 50000), "sig", [0], 0, flow_id)
        flow_id += 1
    rng.shuffle(ev)
    return ev


# What the tool should print, computed here.

def is_lane_event(e):
    return "tid" in e and not (e["ph"] == "M" and
                               e["name"].startswith("process_"))


def extent(events):
    timed = [e for e in events if e["ph"] != "M"]
    if not timed:
        return None
    return (min(e["ts"] for e in timed),
            max(e["ts"] + e.get("dur", 0) for e in timed))


def expected_kernels(events):
    stats = {}
    for e in events:
        if e["ph"] == "X" and e["cat"] == "block":
            s = stats.setdefault(e["args"]["kernel"], [0, 0.0, 0.0])
            s[0] += 1
            s[1] += e["dur"]
            s[2] = max(s[2], e["dur"])
    return {k: (n, tot, tot / n, top) for k, (n, tot, top) in stats.items()}


def inside(w, b):
    return b["ts"] - EPS <= w["ts"] and \
        w["ts"] + w["dur"] <= b["ts"] + b["dur"] + EPS


def by_lane(spans, key):
    """{(pid, tid): the spans of that lane sorted by key}."""
    lanes = {}
    for e in spans:
        lanes.setdefault((e["pid"], e["tid"]), []).append(e)
    for v in lanes.values():
        v.sort(key=key)
    return lanes


class Blocks:
    """The block spans by lane, by start."""

    def __init__(self, events):
        self.lanes = by_lane([e for e in events if e["ph"] == "X" and
                              e["cat"] == "block"], lambda b: b["ts"])
        self.starts = {k: [b["ts"] for b in v] for k, v in self.lanes.items()}


def block_around(blocks, w):
    """The block of w's lane that w lies in, or None (the blocks of a core
    do not overlap)."""
    lane = blocks.lanes.get((w["pid"], w["tid"]), [])
    i = bisect.bisect_right(blocks.starts.get((w["pid"], w["tid"]), []),
                            w["ts"] + EPS)
    for b in lane[max(0, i - 2):i]:
        if inside(w, b):
            return b
    return None


def expected_ranks(events):
    """{process name: (core lanes, busy %, waiting %, idle %)}."""
    t0, t1 = extent(events)
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    out = {}
    around = Blocks(events)
    for pid in sorted({e["pid"] for e in events if e["pid"] >= 1}):
        lanes = {e["tid"] for e in events
                 if e["pid"] == pid and is_lane_event(e) and e["tid"] >= 1}
        spans = [e for e in events if e["ph"] == "X" and e["pid"] == pid
                 and e["tid"] >= 1]
        blocks = [e for e in spans if e["cat"] == "block"]
        waits = [e for e in spans if e["cat"] == "wait"]
        busy = sum(b["dur"] for b in blocks) - sum(
            w["dur"] for w in waits if block_around(around, w))
        waiting = sum(w["dur"] for w in waits)
        total = len(lanes) * (t1 - t0)
        out[names.get(pid, "rank %d" % (pid - 1))] = (
            len(lanes), 100 * busy / total, 100 * waiting / total,
            100 - 100 * busy / total - 100 * waiting / total)
    return out


def who(names, pid, tid):
    return "rank %d %s" % (pid - 1, names[(pid, tid)])


def expected_chain(events):
    """The chain's lines, by the rule the tool documents, or None when the
    last block is not the only one to end last."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    order = {id(e): i for i, e in enumerate(events)}
    blocks = [e for e in events if e["ph"] == "X" and e["cat"] == "block"]
    waits = [e for e in events if e["ph"] == "X" and e["cat"] == "wait"]
    if not waits:
        return ["critical chain: no waits recorded"]
    end = max(b["ts"] + b["dur"] for b in blocks)
    last = [b for b in blocks if b["ts"] + b["dur"] > end - EPS]
    if len(last) > 1:
        return None
    last = last[0]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    lane_waits = by_lane(waits, lambda w: (w["ts"] + w["dur"], w["ts"],
                                           order[id(w)]))
    lane_ends = {k: [w["ts"] + w["dur"] for w in v]
                 for k, v in lane_waits.items()}
    lane_blocks = Blocks(events)
    released = {}
    for f in (e for e in events if e["ph"] == "f"):
        s = starts[f["id"]]
        lane = (f["pid"], f["tid"])
        i = bisect.bisect_left(lane_ends.get(lane, []), f["ts"] - EPS)
        if i == len(lane_ends.get(lane, [])):
            continue
        w = lane_waits[lane][i]
        if w["ts"] <= f["ts"] + EPS:
            if id(w) not in released or s["ts"] > released[id(w)]["ts"]:
                released[id(w)] = s
    lane = (last["pid"], last["tid"])
    now = last["ts"] + last["dur"]
    lines = ["critical chain, back from the block that ends last "
             "(%s kernel %s, at %.3f us):" % (who(names, *lane),
                                              last["args"]["kernel"], now)]
    seen = set()
    while True:
        i = bisect.bisect_left(lane_ends.get(lane, []), now + EPS)
        # The block running at now: a wait that ended before it began did
        # not hold it up (an earlier block's or an earlier run's).
        running = [b for b in lane_blocks.lanes.get(lane, [])
                   if b["ts"] <= now + EPS and now <= b["ts"] + b["dur"] + EPS]
        running = running[-1] if running else None
        if i == 0 or (running and lane_ends[lane][i - 1] <
                      running["ts"] - EPS):
            if running:
                lines.append("  %s: no wait of its block (kernel %s, from "
                             "%.3f us) ends by %.3f us: the chain starts "
                             "there" % (who(names, *lane),
                                        running["args"]["kernel"],
                                        running["ts"], now))
            else:
                lines.append("  %s: no wait ends by %.3f us: the chain "
                             "starts there" % (who(names, *lane), now))
            break
        w = lane_waits[lane][i - 1]
        if id(w) in seen:
            lines.append("  (the chain comes back to a wait it passed: "
                         "stopped)")
            break
        seen.add(id(w))
        around = block_around(lane_blocks, w)
        line = "  " + who(names, *lane)
        if around:
            line += " kernel " + around["args"]["kernel"]
        a = w["args"]
        line += ": waited %.3f us on window '%s' cell %s (%s %d)" % (
            w["dur"], a["window"], cell_text(a["cell"]), a["cmp"],
            a["expected"])
        s = released.get(id(w))
        if s is None:
            lines.append(line + ", released by no recorded notify")
            break
        lines.append(line + ", released by %s at %.3f us" % (
            who(names, s["pid"], s["tid"]), s["ts"]))
        lane, now = (s["pid"], s["tid"]), s["ts"]
    return lines


# Running the tool and reading what it printed.

def run(*args):
    p = subprocess.run([TOOL, *args], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def section(out, start):
    """The lines of the summary's section whose header starts with start:
    the header, then its indented lines."""
    lines = out.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(start):
            body = [line]
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                body.append(more)
            return body
    raise Failure("no section %r in the summary:\n%s" % (start, out))


def printed_kernels(out):
    body = section(out, "kernels")
    if body[0] == "kernels: none (no block spans)":
        return {}
    check(body[0] == "kernels (block spans), by total time:", body[0])
    check(body[1].split() == ["kernel", "count", "total", "us", "mean", "us",
                              "longest", "us"], body[1])
    got = {}
    totals = []
    for line in body[2:]:
        name, n, tot, mean, top = line.strip().rsplit(None, 4)
        got[name] = (int(n), float(tot), float(mean), float(top))
        totals.append(float(tot))
    check(totals == sorted(totals, reverse=True),
          "kernels not by total time, descending: %s" % totals)
    return got


RANK = re.compile(r"^  (.*): (\d+) core lanes?, busy (-?[\d.]+)%, "
                  r"waiting ([\d.]+)%, idle (-?[\d.]+)%$")


def printed_ranks(out):
    body = section(out, "ranks")
    if body[0] == "ranks: none":
        return {}
    got = {}
    for line in body[1:]:
        m = RANK.match(line)
        check(m, "a rank's line reads %r" % line)
        got[m.group(1)] = (int(m.group(2)), float(m.group(3)),
                           float(m.group(4)), float(m.group(5)))
    return got


def close(got, want, precision, what):
    # The printed figure is want rounded to precision; sums added in another
    # order may differ in the last bits, so a hair more than half a unit.
    check(abs(got - want) <= precision * 0.5 + 1e-6,
          "%s: printed %r, expected %r" % (what, got, want))


def check_summary(events, out):
    want = expected_kernels(events)
    got = printed_kernels(out)
    check(set(got) == set(want),
          "kernels: printed %s, expected %s" % (sorted(got), sorted(want)))
    for k, (n, tot, mean, top) in want.items():
        check(got[k][0] == n, "kernel %s: count %d, expected %d" %
              (k, got[k][0], n))
        close(got[k][1], tot, 0.001, "kernel %s total" % k)
        close(got[k][2], mean, 0.001, "kernel %s mean" % k)
        close(got[k][3], top, 0.001, "kernel %s longest" % k)
    want = expected_ranks(events)
    got = printed_ranks(out)
    check(set(got) == set(want),
          "ranks: printed %s, expected %s" % (sorted(got), sorted(want)))
    for r, (lanes, busy, waiting, idle) in want.items():
        check(got[r][0] == lanes, "%s: %d core lanes, expected %d" %
              (r, got[r][0], lanes))
        close(got[r][1], busy, 0.01, "%s busy %%" % r)
        close(got[r][2], waiting, 0.01, "%s waiting %%" % r)
        close(got[r][3], idle, 0.02, "%s idle %%" % r)
    chain = expected_chain(events)
    if chain is not None:
        got = section(out, "critical chain")
        check(got == chain, "the chain:\n%s\nexpected:\n%s" %
              ("\n".join(got), "\n".join(chain)))
    check("events lost" not in out, "a warning of lost events:\n" + out)


def check_svg(events, path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise Failure("%s is not well-formed XML: %s" % (path, e))
    check(root.tag == SVG + "svg", "the root is %s" % root.tag)

    def of_class(node, cls):
        return [e for e in node.iter() if cls in e.get("class", "").split()]

    pids = sorted({e["pid"] for e in events})
    groups = of_class(root, "process")
    check([int(g.get("data-pid")) for g in groups] == pids,
          "process groups %s, expected %s" %
          ([g.get("data-pid") for g in groups], pids))
    lanes = sorted({(e["pid"], e["tid"]) for e in events if is_lane_event(e)})
    got = []
    for g in groups:
        for lane in of_class(g, "lane"):
            check(lane.get("data-pid") == g.get("data-pid"),
                  "lane of pid %s in the group of pid %s" %
                  (lane.get("data-pid"), g.get("data-pid")))
            got.append((int(lane.get("data-pid")), int(lane.get("data-tid"))))
    check(got == lanes, "lanes %s, expected %s" % (got, lanes))
    check(len(of_class(root, "lane")) == len(lanes), "lanes outside groups")
    flows = [e for e in events if e["ph"] == "f"]
    arrows = of_class(root, "flow")
    check(len(arrows) == len(flows),
          "%d flow arrows, expected %d" % (len(arrows), len(flows)))
    check(all(a.get("marker-end") == "url(#arrow)" for a in arrows),
          "a flow without an arrowhead")
    spans = [e for e in events if e["ph"] == "X"]
    rects = of_class(root, "span")
    check(len(rects) == len(spans),
          "%d span rectangles, expected %d" % (len(rects), len(spans)))
    check(all(r.find(SVG + "title") is not None for r in rects),
          "a span without a tooltip")
    waits = of_class(root, "wait")
    check(len(waits) == sum(e["cat"] == "wait" for e in spans) and
          all(w.get("fill") == "url(#hatch)" for w in waits),
          "waits not drawn hatched")
    chain = expected_chain(events)
    if chain is not None:
        links = sum(": waited " in line for line in chain)
        marked = [w for w in waits if w.get("data-critical") == "1"]
        check(len(marked) == links and
              all(w.get("stroke") == "#d50000" for w in marked),
              "%d waits marked critical, expected %d" % (len(marked), links))
    notifies = [e for e in events if e["ph"] == "i" and e["cat"] == "notify"]
    check(len(of_class(root, "notify")) == len(notifies), "notify marks")
    kernels = {e["args"]["kernel"] for e in spans if e["cat"] == "block"}
    legend = {"".join(g.itertext()) for g in of_class(root, "legend-kernel")}
    check(legend == kernels, "legend %s, expected %s" %
          (sorted(legend), sorted(kernels)))
    for r in of_class(root, "block"):
        check(r.get("data-kernel") in kernels, "block of kernel %r" %
              r.get("data-kernel"))


def span_rects(svg):
    """The SVG's rectangles of spans."""
    return [r for r in ET.parse(svg).getroot().iter(SVG + "rect")
            if "span" in r.get("class", "").split()]


def summary_and_svg(events, name, lost=0):
    path = write(name + ".json", trace_text(events, lost))
    svg = os.path.join(TMP, name + ".svg")
    status, out, err = run(path, "-o", svg, "--width", "1200")
    check(status == 0 and err == "",
          "status %d, stderr %r, stdout:\n%s" % (status, err, out))
    check(out.startswith("%s: %d events" % (path, len(events))),
          "the first line: " + out.split("\n")[0])
    return out, svg


# The cases.

def case_random(seed, nranks):
    def test():
        events = random_trace(seed, nranks)
        out, svg = summary_and_svg(events, "random")
        check_summary(events, out)
        check_svg(events, svg)
        check(expected_chain(events) is None or
              len(section(out, "critical chain")) > 1, "an empty chain")
    return test


def case_large():
    """About 300 000 events, with the summary still right, in seconds."""
    events = random_trace(7, 4, blocks=(3500, 4000))
    check(len(events) > 250000, "only %d events" % len(events))
    path = write("large.json", trace_text(events))
    svg = os.path.join(TMP, "large.svg")
    start = time.monotonic()
    status, out, err = run(path, "-o", svg)
    took = time.monotonic() - start
    check(status == 0 and err == "", "status %d, stderr %r" % (status, err))
    # A sanitizer build is several times slower: its limit is wider.
    limit = 20 * (4 if os.environ.get("PLD_SANITIZED") else 1)
    check(took < limit, "took %.1f s for %d events" % (took, len(events)))
    check_summary(events, out)
    check_svg(events, svg)


def chain_trace():
    """Rank 0's last block waits on rank 1 (sig cell [0, 0]), whose wait
    was released by rank 0's other core (sig cell [0, 1]), whose wait was
    released by rank 1's other core (flag cell [2]), whose wait, which
    ends exactly when that core notifies (a wait that ends at the time
    point counts), no recorded notify released.  Decoys: an earlier wait of rank 0's first
    core, released by a flow; a wait that ends 1 ns after a notify."""
    ev = meta(1, "rank 0 (device 3)") + meta(2, "rank 1 (device 5)")
    ev += meta(1, "AIV core 0", tid=1) + meta(1, "AIV core 1", tid=2)
    ev += meta(2, "AIV core 0", tid=1) + meta(2, "AIC core 0", tid=2)
    ms = 1000
    ev.append(span("block", "step", 1, 1, 0, 100 * ms, kernel="step",
                   block=0, blocks=2, task=0))
    ev.append(wait_span(1, 1, 20 * ms, 40 * ms, "sig", [4, 1]))
    ev.append(flow_end(1, 1, 40 * ms, 4))
    ev.append(wait_span(1, 1, 60 * ms, 99 * ms, "sig", [0, 0]))
    ev.append(flow_end(1, 1, 99 * ms, 3))
    ev.append(span("block", "step", 2, 1, 0, 98500, kernel="step", block=1,
                   blocks=2, task=0))
    ev += notify(2, 1, 98 * ms, "sig", [0, 0], 0, 3)
    ev.append(wait_span(2, 1, 10 * ms, 25 * ms, "sig", [4, 0]))
    ev.append(wait_span(2, 1, 30 * ms, 90 * ms, "sig", [0, 1]))
    ev.append(flow_end(2, 1, 90 * ms, 2))
    ev.append(span("block", "pre", 1, 2, 0, 95 * ms, kernel="pre", block=0,
                   blocks=1, task=0))
    ev += notify(1, 2, 89 * ms, "sig", [0, 1], 1, 2)
    ev.append(wait_span(1, 2, 10 * ms, 80 * ms, "flag", [2], "==", 2))
    ev.append(flow_end(1, 2, 80 * ms, 1))
    ev.append(span("block", "load", 2, 2, 0, 76 * ms, kernel="load", block=0,
                   blocks=1, task=0))
    ev += notify(2, 2, 75 * ms, "flag", [2], 0, 1)
    ev += notify(2, 2, 2 * ms, "sig", [4, 1], 0, 4)
    ev.append(wait_span(2, 2, 5 * ms, 75 * ms, "sig", [1, 1]))
    ev.append(span("block", "step", 2, 1, 99 * ms, 99900, kernel="step",
                   block=3, blocks=4, task=0))
    ev.append(wait_span(2, 1, 97 * ms, 98 * ms + 1, "sig", [3, 1]))
    return ev


def case_known_chain():
    events = chain_trace()
    out, svg = summary_and_svg(events, "chain")
    want = [
        "critical chain, back from the block that ends last (rank 0 AIV "
        "core 0 kernel step, at 100.000 us):",
        "  rank 0 AIV core 0 kernel step: waited 39.000 us on window 'sig' "
        "cell [0, 0] (>= 1), released by rank 1 AIV core 0 at 98.000 us",
        "  rank 1 AIV core 0 kernel step: waited 60.000 us on window 'sig' "
        "cell [0, 1] (>= 1), released by rank 0 AIV core 1 at 89.000 us",
        "  rank 0 AIV core 1 kernel pre: waited 70.000 us on window 'flag' "
        "cell [2] (== 2), released by rank 1 AIC core 0 at 75.000 us",
        "  rank 1 AIC core 0 kernel load: waited 70.000 us on window 'sig' "
        "cell [1, 1] (>= 1), released by no recorded notify",
    ]
    got = section(out, "critical chain")
    check(got == want, "the chain:\n%s\nexpected:\n%s" %
          ("\n".join(got), "\n".join(want)))
    # The rule written independently gives the same, and so do the rest.
    check(expected_chain(events) == want, "expected_chain disagrees")
    check_summary(events, out)
    check_svg(events, svg)
    # Events in any order: the same chain.
    random.Random(5).shuffle(events)
    out, _ = summary_and_svg(events, "chain_shuffled")
    check(section(out, "critical chain") == want, "shuffled: another chain")


def case_chain_across_runs():
    """Two runs: in the first, rank 0's block waits on rank 1; in the
    second, rank 0's block (the one that ends last) waits for nothing.
    The first run's wait did not hold the second block up: the chain
    starts at that block, not in the run before."""
    ev = meta(1, "rank 0 (device 0)") + meta(2, "rank 1 (device 1)")
    ev += meta(1, "AIV core 0", tid=1) + meta(2, "AIV core 0", tid=1)
    ms = 1000
    ev.append(span("block", "first", 1, 1, 0, 10 * ms, kernel="first",
                   block=0, blocks=1, task=0))
    ev.append(wait_span(1, 1, 2 * ms, 5 * ms, "sig", [0]))
    ev.append(flow_end(1, 1, 5 * ms, 1))
    ev.append(span("block", "first", 2, 1, 0, 8 * ms, kernel="first",
                   block=0, blocks=1, task=0))
    ev += notify(2, 1, 4 * ms, "sig", [0], 0, 1)
    ev.append(span("block", "second", 1, 1, 20 * ms, 30 * ms,
                   kernel="second", block=0, blocks=1, task=0))
    ev.append(span("block", "second", 2, 1, 20 * ms, 25 * ms,
                   kernel="second", block=0, blocks=1, task=0))
    out, svg = summary_and_svg(ev, "across_runs")
    want = [
        "critical chain, back from the block that ends last (rank 0 AIV "
        "core 0 kernel second, at 30.000 us):",
        "  rank 0 AIV core 0: no wait of its block (kernel second, from "
        "20.000 us) ends by 30.000 us: the chain starts there",
    ]
    got = section(out, "critical chain")
    check(got == want, "the chain:\n%s\nexpected:\n%s" %
          ("\n".join(got), "\n".join(want)))
    check(expected_chain(ev) == want, "expected_chain disagrees")
    check_summary(ev, out)
    check_svg(ev, svg)


def case_empty_events():
    out, svg = summary_and_svg([], "empty")
    check(out == "%s: 0 events\n\nkernels: none (no block spans)\n\n"
          "ranks: none\n\ncritical chain: no waits recorded\n" %
          os.path.join(TMP, "empty.json"), "the summary:\n" + out)
    check_svg([], svg)


def case_zero_duration():
    ev = meta(1, "rank 0 (device 0)") + meta(1, "AIV core 0", tid=1)
    ev.append(span("block", "matmul", 1, 1, 1000, 1000, kernel="matmul",
                   block=0, blocks=2, task=0))
    ev.append(span("block", "matmul", 1, 1, 2000, 5000, kernel="matmul",
                   block=1, blocks=2, task=0))
    ev.append(wait_span(1, 1, 3000, 3000, "sig", [0]))
    out, svg = summary_and_svg(ev, "zero")
    check_summary(ev, out)
    check_svg(ev, svg)
    check(printed_kernels(out)["matmul"] == (2, 3.0, 1.5, 3.0),
          "matmul: %s" % (printed_kernels(out)["matmul"],))
    check(all(float(r.get("width")) > 0 for r in span_rects(svg)),
          "a zero-duration span drawn with no width")
    # A trace whose only events are at one instant.
    ev = meta(1, "rank 0 (device 0)") + meta(1, "AIV core 0", tid=1)
    ev.append(span("block", "matmul", 1, 1, 7000, 7000, kernel="matmul"))
    out, svg = summary_and_svg(ev, "instant")
    check(printed_kernels(out) == {"matmul": (1, 0.0, 0.0, 0.0)}, out)
    check("  rank 0 (device 0): 1 core lane, no time to share\n" in out, out)
    check_svg(ev, svg)


def lost_trace(instants):
    ev = random_trace(3, 2)
    cores = sorted({(e["pid"], e["tid"]) for e in ev
                    if e["ph"] == "X" and e["cat"] == "block"})
    for (pid, tid), lost in zip(cores, instants):
        ev.append({"ph": "i", "s": "t", "cat": "pld", "name": "events lost",
                   "pid": pid, "tid": tid, "ts": 99.0, "args": {"lost": lost}})
    return ev


def check_lost(out, total):
    want = ("warning: %d events lost: the trace misses them "
            "(PLD_TRACE_EVENTS bounds each thread's events per run)" % total)
    check(out.rstrip("\n").split("\n")[-1] == want,
          "the last line of:\n%s\nexpected:\n%s" % (out, want))


def case_svg_nesting():
    """A span is drawn a quarter lower than the span it lies in, siblings
    one right after another alike, and a span that starts as its lane's
    last one ends as high as that one."""
    ev = meta(1, "rank 0 (device 0)") + meta(1, "AIV core 0", tid=1)
    ev.append(span("block", "k", 1, 1, 0, 10000, kernel="k"))
    for start in (1000, 2000, 3000):
        ev.append(wait_span(1, 1, start, start + 1000, "sig", [0]))
    ev.append(span("block", "k", 1, 1, 10000, 12000, kernel="k"))
    out, svg = summary_and_svg(ev, "nesting")
    check_svg(ev, svg)
    heights = [float(r.get("height")) for r in
               sorted(span_rects(svg), key=lambda r: float(r.get("x")))]
    top = heights[0]
    want = [top, 0.75 * top, 0.75 * top, 0.75 * top, top]
    check(len(heights) == 5 and
          all(abs(h - w) < 0.011 for h, w in zip(heights, want)),
          "span heights %s, expected %s" % (heights, want))


def case_lost_events():
    for instants, total in [([1000, 200, 34], 1234), ([], 1234),
                            ([1000], 1234)]:
        ev = lost_trace(instants)
        path = write("lost.json", trace_text(ev, lost=total))
        status, out, err = run(path)
        check(status == 0 and err == "", "status %d, %r" % (status, err))
        check_lost(out, total)


def case_lost_instants_only():
    ev = lost_trace([70, 7])
    path = write("lost.json", trace_text(ev, lost=0))
    status, out, err = run(path)
    check(status == 0 and err == "", "status %d, %r" % (status, err))
    check_lost(out, 77)


def expect_error(path, message, *args):
    status, out, err = run(path, *args)
    check(status == 1, "status %d, expected 1; stderr %r" % (status, err))
    check(out == "", "stdout %r" % out)
    check(err == message + "\n", "stderr %r, expected %r" %
          (err, message + "\n"))


def case_error_truncated():
    text = trace_text(random_trace(11, 2))
    lines = text.split("\n")
    k = 10  # a line that holds a timed event with a name
    while '"ts": ' not in lines[k - 1] or '"name": "' not in lines[k - 1]:
        k += 1
    check(lines[k - 1].startswith('{"ph"') and lines[k - 1].endswith("},"),
          "line %d: %r" % (k, lines[k - 1]))
    upto = len("\n".join(lines[:k - 1])) + 1  # where line k starts
    line_k = lines[k - 1]
    name_at = line_k.index('"name": "') + len('"name": "') + 2
    ts_at = line_k.index('"ts": ') + len('"ts":')
    cuts = [
        (upto + len(line_k) - 1, k,
         "expected ',' or ']' after an array element, got the end of the "
         "file"),
        (upto + len(line_k) + 1, k + 1,
         "expected a value, got the end of the file"),
        (upto + name_at, k, "expected '\"' to end a string, got the end of "
         "the file"),
        (upto + ts_at, k, "expected a value, got the end of the file"),
        (upto + 5, k, "expected ':' after a member name, got the end of the "
         "file"),
        (upto + 2, k, "expected '\"' to end a string, got the end of the "
         "file"),
        (upto, k, "expected a value, got the end of the file"),
        (len(text) - 2, len(lines) - 1,
         "expected ',' or '}' after an object member, got the end of the "
         "file"),
    ]
    for cut, line, message in cuts:
        path = write("truncated.json", text[:cut])
        expect_error(path, "pld-trace: %s: line %d: %s" % (path, line,
                                                           message))
    path = write("extra.json", text + "]")
    expect_error(path, "pld-trace: %s: line %d: expected the end of the file "
                 "after the trace, got ']'" % (path, len(lines)))
    path = write("empty.json", "")
    expect_error(path, "pld-trace: %s: line 1: expected a trace (an object "
                 "with \"traceEvents\"), got the end of the file" % path)


def case_error_missing_file():
    path = os.path.join(TMP, "no", "such.json")
    expect_error(path, "pld-trace: cannot open %s: No such file or directory"
                 % path)


def case_error_flow_without_start():
    ev = chain_trace()
    ev.append(flow_end(1, 2, 50000, 42))
    path = write("flow.json", trace_text(ev))
    # The header is 3 lines; the event is the last.
    expect_error(path, "pld-trace: %s: line %d: traceEvents[%d]: flow end "
                 "(\"f\") with id 42 has no flow start (\"s\") with that id"
                 % (path, 3 + len(ev), len(ev) - 1))


def case_error_negative_duration():
    ev = chain_trace()
    ev.insert(3, span("block", "step", 1, 1, 5000, 3500, kernel="step"))
    path = write("negative.json", trace_text(ev))
    expect_error(path, "pld-trace: %s: line 7: traceEvents[3]: span 'step' "
                 "has a negative duration, -1.5 us" % path)


def case_error_not_an_object():
    ev = chain_trace()
    ev.insert(2, 42)
    path = write("number.json", trace_text(ev))
    expect_error(path, "pld-trace: %s: line 6: traceEvents[2]: expected an "
                 "event object, got a number" % path)
    ev[2] = {"ph": "X", "pid": 1, "tid": 1, "ts": "12", "dur": 1}
    path = write("string_ts.json", trace_text(ev))
    expect_error(path, "pld-trace: %s: line 6: traceEvents[2]: \"ts\": "
                 "expected a number, got a string" % path)
    ev[2] = {"ph": "X", "pid": 1, "tid": 1, "ts": 12}
    path = write("no_dur.json", trace_text(ev))
    expect_error(path, "pld-trace: %s: line 6: traceEvents[2]: a \"X\" event "
                 "without \"dur\"" % path)
    path = write("no_events.json", '{"otherData": {}}')
    expect_error(path, "pld-trace: %s: line 1: the trace has no "
                 "\"traceEvents\" member" % path)


def case_error_bad_escape():
    good = '{"traceEvents": [\n{"ph": "M", "pid": 1, "name": "%s"}\n]}\n'
    for bad, message in [
            ("a\\x", "invalid escape in a string: '\\' then 'x'"),
            ("a\\u12G4", "expected 4 hex digits after '\\u', got 'G'"),
            ("a\\ud800b", "expected a low surrogate (\\uDC00 to \\uDFFF) "
             "after \\uD800, got 'b'"),
            ("a\\udc00", "a string holds a low surrogate (\\uDC00) with no "
             "high surrogate before it"),
            ("a\\udfff", "a string holds a low surrogate (\\uDFFF) with no "
             "high surrogate before it"),
            ("a\\udbff\\ue000", "expected a low surrogate (\\uDC00 to "
             "\\uDFFF) after \\uDBFF, got \\uE000"),
            ("a\\ud800\\udbff", "expected a low surrogate (\\uDC00 to "
             "\\uDFFF) after \\uD800, got \\uDBFF"),
            ("a\tb", "a string holds a control character (byte 0x09): JSON "
             "needs it escaped")]:
        path = write("escape.json", good % bad)
        expect_error(path, "pld-trace: %s: line 2: %s" % (path, message))
    # Raw bytes the reader refuses as UTF-8, at the sequence's first byte:
    # Latin-1's e-acute, overlong forms of 2, 3 and 4 bytes, surrogates,
    # past U+10FFFF, bytes that lead nothing, a sequence cut short by the
    # string's end.
    for raw in [b"\xe9", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x9f\xbf",
                b"\xf0\x8f\xbf\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
                b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff",
                b"\x80", b"\xe2\x82"]:
        path = os.path.join(TMP, "utf8.json")
        with open(path, "wb") as f:
            f.write((good % "a").encode().replace(b'"a"', b'"a' + raw + b'"'))
        expect_error(path, "pld-trace: %s: line 2: a string holds invalid "
                     "UTF-8 (byte 0x%02x)" % (path, raw[0]))
    # ... and the code points at the edges of each length of sequence as
    # they are (U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF, U+10000,
    # U+10FFFF), written raw or as escapes (surrogate pairs past U+FFFF,
    # which the reader encodes as UTF-8).
    name = "\u0080 \u07ff \u0800 \ud7ff \ue000 \uffff \U00010000 \U0010ffff"
    ev = meta(1, "RAW") + meta(1, "AIV core 0", tid=1)
    ev.append(span("block", "k", 1, 1, 0, 1000, kernel="k"))
    text = trace_text(ev)
    for kind, named in [("raw", text.replace("RAW", name)),
                        ("escaped", text.replace('"RAW"', json.dumps(name)))]:
        path = write(kind + "_utf8.json", named)
        status, out, err = run(path)
        check(status == 0 and err == "", "%s: status %d, stderr %r" %
              (kind, status, err))
        check("  %s: 1 core lane, busy 100.00%%" % name in out, kind + out)
    # The escapes JSON has, decoded: a process's name with all of them.
    name = "q\" b\\ s/ \b\f\n\r\t \u00e9 \U0001F600 <&>"
    ev = meta(1, name) + meta(1, "AIV core 0", tid=1)
    ev.append(span("block", "k", 1, 1, 0, 1000, kernel="k"))
    out, svg = summary_and_svg(ev, "escapes")
    check("  %s: 1 core lane, busy 100.00%%" % name in out, out)
    labels = [t.text for t in ET.parse(svg).getroot().iter(SVG + "text")
              if t.get("class") == "process-label"]
    check(labels == [name.replace("\b", "?").replace("\f", "?")],
          "labels %r" % labels)


def case_error_usage():
    def usage(args, message, status=2):
        got, out, err = run(*args)
        check(got == status, "%s: status %d, expected %d" %
              (args, got, status))
        check(err == message + "\n", "%s: stderr %r, expected %r" %
              (args, err, message + "\n"))
        check(out == "", "%s: stdout %r" % (args, out))
    usage([], USAGE)
    usage(["--bogus", "t.json"],
          "pld-trace: unknown option '--bogus' (%s)" % USAGE)
    usage(["t.json", "-o"], "pld-trace: -o: expected a value, got nothing "
          "after it (%s)" % USAGE)
    usage(["t.json", "--width", "wide"], "pld-trace: --width: expected a "
          "number of pixels in [400, 100000], got 'wide' (%s)" % USAGE)
    usage(["t.json", "--width", "10"], "pld-trace: --width: expected a "
          "number of pixels in [400, 100000], got '10' (%s)" % USAGE)
    usage(["a.json", "b.json"], "pld-trace: expected one trace file, got a "
          "second, 'b.json' (%s)" % USAGE)
    usage(["--diag"], "pld-trace: --diag: expected a folder, got nothing "
          "after it (%s)" % USAGE)
    status, out, err = run("--help")
    check(status == 0 and out.startswith(USAGE + "\n") and err == "",
          "--help: %d %r %r" % (status, out, err))


CASES = {
    "random_2_ranks": case_random(1, 2),
    "random_3_ranks": case_random(2, 3),
    "random_4_ranks": case_random(3, 4),
    "known_chain": case_known_chain,
    "chain_across_runs": case_chain_across_runs,
    "empty_events": case_empty_events,
    "zero_duration": case_zero_duration,
    "svg_nesting": case_svg_nesting,
    "lost_events": case_lost_events,
    "lost_instants_only": case_lost_instants_only,
    "error_truncated": case_error_truncated,
    "error_missing_file": case_error_missing_file,
    "error_flow_without_start": case_error_flow_without_start,
    "error_negative_duration": case_error_negative_duration,
    "error_not_an_object": case_error_not_an_object,
    "error_bad_escape": case_error_bad_escape,
    "error_usage": case_error_usage,
    "large": case_large,
}


def main():
    global TOOL, TMP
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        sys.exit("usage: test_pld_trace.py PLD_TRACE CASE (one of %s)" %
                 ", ".join(CASES))
    TOOL = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="pld-trace-test-") as tmp:
        TMP = tmp
        try:
            CASES[sys.argv[2]]()
        except Failure as e:
            print("FAIL %s: %s" % (sys.argv[2], e))
            sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
