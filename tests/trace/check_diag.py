#!/usr/bin/env python3
"""Runs a program with the diagnostics files on (PLD_DIAG=all,
PLD_DIAG_DIR) and checks them (docs/diagnostics-files.md): every rank's
d0 has a deps.json and a scope_stats/scope_stats.jsonl that are JSON of
the format, every edge goes from an earlier task to a later one, the
dispatch's line sums its tasks'; pld-trace --diag reads them back, and
refuses a corrupted file and an empty folder with one line naming it.
With --explicit, every rank's graph has an edge the program asked for
(pld_launch_after): "explicit", with no sides.

usage: check_diag.py --ranks N --pld-trace TOOL [--launcher WORDS]
                     [--explicit] -- PROGRAM ARGS...
"""
import json
import os
import subprocess
import sys
import tempfile

COUNTS = ("launches", "blocks", "gm_load_bytes", "gm_store_bytes",
          "put_bytes", "get_bytes", "remote_load_bytes", "remote_store_bytes",
          "colls", "coll_bytes", "notifies", "waits")


def fail(msg):
    print("check_diag: " + msg)
    sys.exit(1)


def check_rank(base, r, explicit):
    d0 = os.path.join(base, "rank%d" % r, "d0")
    try:
        with open(os.path.join(d0, "deps.json")) as f:
            deps = json.load(f)
        with open(os.path.join(d0, "scope_stats", "scope_stats.jsonl")) as f:
            stats = [json.loads(line) for line in f]
    except (OSError, ValueError) as e:
        fail("rank %d: %s" % (r, e))
    if deps.get("format") != "deps" or deps.get("rank") != r:
        fail("rank %d: deps.json head %r" % (r, deps))
    ids = [t["id"] for t in deps["tasks"]]
    if not ids or ids != list(range(len(ids))):
        fail("rank %d: task ids %r" % (r, ids))
    for e in deps["edges"]:
        if not 0 <= e["from"] < e["to"] < len(ids):
            fail("rank %d: edge %r" % (r, e))
        if e["why"] == "explicit":
            if "from_side" in e or "to_side" in e:
                fail("rank %d: an explicit edge with sides %r" % (r, e))
            continue
        if e["why"] not in ("overlap", "counts"):
            fail("rank %d: edge %r" % (r, e))
        if not (e["from_side"]["writes"] or e["to_side"]["writes"]):
            fail("rank %d: an edge with no writer %r" % (r, e))
    if explicit and not any(e["why"] == "explicit" for e in deps["edges"]):
        fail("rank %d: no explicit edge in %r" % (r, deps["edges"]))
    if stats[0]["scope"] != "dispatch" or len(stats) != 1 + len(ids) or \
            stats[0]["launches"] != len(ids) or stats[0]["blocks"] < 1:
        fail("rank %d: scope_stats lines %r" % (r, stats))
    for k in COUNTS:
        if stats[0][k] != sum(s[k] for s in stats[1:]):
            fail("rank %d: the dispatch's %s is not its tasks' sum" % (r, k))


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_diag.py [options] -- PROGRAM ARGS...")
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1:]
    ranks, tool, launcher, explicit = None, None, [], False
    i = 0
    while i < len(opts):
        o = opts[i]
        if o == "--explicit":
            explicit = True
            i += 1
            continue
        if o == "--ranks":
            ranks = int(opts[i + 1])
        elif o == "--pld-trace":
            tool = opts[i + 1]
        elif o == "--launcher":
            launcher = opts[i + 1].split()
        else:
            fail("unknown option " + o)
        i += 2

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PLD_DIAG="all", PLD_DIAG_DIR=tmp)
        run = subprocess.run(launcher + cmd, env=env, capture_output=True,
                             text=True, timeout=300)
        if run.returncode != 0 or not run.stdout.endswith("OK\n"):
            fail("program: status %d, output %r, errors %r" %
                 (run.returncode, run.stdout[-2000:], run.stderr[-2000:]))
        base = os.path.join(tmp, "dfx")
        for r in range(ranks):
            check_rank(base, r, explicit)
        if os.path.exists(os.path.join(base, "rank%d" % ranks)):
            fail("a folder for rank %d of %d" % (ranks, ranks))

        read = subprocess.run([tool, "--diag", tmp], capture_output=True,
                              text=True, timeout=60)
        if read.returncode != 0:
            fail("pld-trace --diag: status %d: %s" %
                 (read.returncode, read.stderr))
        for r in range(ranks):
            if "rank %d, dispatch 0 (" % r not in read.stdout:
                fail("pld-trace --diag shows no rank %d:\n%s" %
                     (r, read.stdout))
        if read.stdout.count("  dispatch ") != ranks:
            fail("pld-trace --diag: a stats table per rank expected:\n" +
                 read.stdout)

        # A corrupted file: one line naming it, status 1.
        bad = os.path.join(base, "rank%d" % (ranks - 1), "d0", "deps.json")
        with open(bad) as f:
            text = f.read()
        with open(bad, "w") as f:
            f.write(text[:len(text) // 2])
        read = subprocess.run([tool, "--diag", tmp], capture_output=True,
                              text=True, timeout=60)
        err = read.stderr.strip()
        if (read.returncode != 1 or "\n" in err or
                not err.startswith("pld-trace: %s: line " % bad)):
            fail("corrupted deps.json: status %d, %r" %
                 (read.returncode, err))
        # A folder without the files.
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        read = subprocess.run([tool, "--diag", empty], capture_output=True,
                              text=True, timeout=60)
        if read.returncode != 1 or "expected diagnostics files" not in \
                read.stderr:
            fail("empty folder: status %d, %r" %
                 (read.returncode, read.stderr))
    print("diag OK")


main()
