#!/usr/bin/env python3
"""The debug log (PLD_DEBUG): check_debug.py CASE PROGRAM ARGS...

Runs the program with the case's PLD_DEBUG and checks what it logs:
  signal   every line "pld: rank R dev D CORE T.TTTTTTs: signal: ..." (or the
           host's), notifies from every rank, and each blocked wait's
           "blocks" line followed by its "returns" line on the same core;
  launch   per rank: each block's "begins" before its "ends", every
           dispatch begun ends, one launch line per launch;
  subsets  "rma,coll" logs only those two subsystems, both present;
  file     PLD_DEBUG_FILE gets the lines, stderr none;
  off      without PLD_DEBUG, nothing on stderr;
  bad      an unknown subsystem: one line naming it and status 1.
Prints "debug OK", or the first violation and exits 1."""
import collections
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"^pld: (host|rank (\d+) dev (\d+) (\S+)) (\d+)\.(\d{6})s: "
                  r"(launch|signal|rma|coll|fabric|host): (.*)$")


def fail(msg):
    print("check_debug: " + msg)
    sys.exit(1)


def run(cmd, debug, extra=None):
    env = dict(os.environ)
    env.pop("PLD_DEBUG", None)
    env.pop("PLD_DEBUG_FILE", None)
    if debug is not None:
        env["PLD_DEBUG"] = debug
    env.update(extra or {})
    return subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=120)


def parse(text):
    out = []
    for ln in text.splitlines():
        m = LINE.match(ln)
        if not m:
            fail("not a debug line: %r" % ln)
        out.append(m)
    return out


def main():
    case, cmd = sys.argv[1], sys.argv[2:]
    if case == "bad":
        r = run(cmd, "signal,bogus")
        want = ("pld_compile: debug log: PLD_DEBUG='signal,bogus': expected a "
                "comma-separated list of launch, signal, rma, coll, fabric, "
                "host or all, got 'bogus'")
        if r.returncode == 0 or want not in r.stdout + r.stderr:
            fail("status %d, output %r %r" % (r.returncode, r.stdout,
                                              r.stderr))
        print("debug OK")
        return
    if case == "off":
        r = run(cmd, None)
        if r.returncode or r.stdout != "OK\n" or r.stderr:
            fail("status %d, output %r, stderr %r" % (r.returncode, r.stdout,
                                                      r.stderr))
        print("debug OK")
        return
    if case == "file":
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "debug.log")
            r = run(cmd, "launch", {"PLD_DEBUG_FILE": path})
            if r.returncode or r.stdout != "OK\n" or r.stderr:
                fail("status %d, stderr %r" % (r.returncode, r.stderr))
            lines = parse(open(path).read())
            if not any(m.group(7) == "launch" for m in lines):
                fail("no launch line in the file")
        print("debug OK")
        return
    subsystems = {"signal": "signal", "launch": "launch",
                  "subsets": "rma,coll"}[case]
    r = run(cmd, subsystems)
    if r.returncode or r.stdout != "OK\n":
        fail("status %d, output %r, stderr %r" % (r.returncode, r.stdout,
                                                  r.stderr[-2000:]))
    lines = parse(r.stderr)
    seen = {m.group(7) for m in lines}
    if seen != set(subsystems.split(",")):
        fail("subsystems logged: %r, asked for %r" % (seen, subsystems))
    ranks = {m.group(2) for m in lines if m.group(2) is not None}
    if case == "signal":
        notif = {m.group(2) for m in lines if m.group(8).startswith("notify")}
        if notif != ranks or not ranks:
            fail("notifies from ranks %r of %r" % (notif, ranks))
        pending = {}
        for m in lines:
            core = (m.group(2), m.group(4))
            msg = m.group(8)
            if msg.startswith("wait on") and msg.endswith("blocks"):
                if core in pending:
                    fail("two waits block at once on %r" % (core,))
                pending[core] = msg.split(" blocks")[0]
            elif msg.startswith("wait on"):
                w = pending.pop(core, None)
                if not w or not msg.startswith(w + " returns after "):
                    fail("%r ends no blocked wait (%r)" % (msg, w))
        if pending:
            fail("waits never returned: %r" % pending)
    if case == "launch":
        opened = collections.Counter()
        launches = collections.Counter()  # (rank, kernel): launch lines
        firsts = collections.Counter()    # (rank, kernel): block 0 begun
        for m in lines:
            key = (m.group(2), m.group(4))
            msg = m.group(8)
            mb = re.match(r"task (\d+): kernel (\S+) block (\d+) of (\d+) "
                          r"(begins|ends)", msg)
            if mb:
                b = key + mb.group(1, 2, 3)
                opened[b] += 1 if mb.group(5) == "begins" else -1
                if opened[b] < 0:
                    fail("block ends before it begins: %r" % msg)
                if mb.group(3) == "0" and mb.group(5) == "begins":
                    firsts[(m.group(2), mb.group(2))] += 1
            ml = re.match(r"task (\d+): kernel (\S+), (\d+) blocks?$", msg)
            if ml:
                launches[(m.group(2), ml.group(2))] += 1
        if any(opened.values()) or not opened:
            fail("blocks begun and not ended: %r" % opened)
        if launches != firsts:
            fail("launch lines %r, first blocks %r" % (launches, firsts))
    print("debug OK")


main()
