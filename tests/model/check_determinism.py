#!/usr/bin/env python3
"""Runs a program with the timing model on (--model, PLD_MODEL_OUT) twice
at every instruction level this CPU and build run (PLD_ISA, as pld-env
lists them), or with --mpirun once on the shm fabric and twice each
under mpirun on N processes (the MPI fabric, PLD_FABRIC=mpi: shared
memory between peers, then every peer through MPI RMA,
PLD_MPI_SAME_NODE=rma), and checks that every run wrote
the same bytes (docs/model.md: the modeled times depend on the program
and its inputs only), and that the report holds "platform", "total_ns"
equal to the last rank's "finish_ns", and "ranks" with one entry per rank
in order.  Prints "model OK".

usage: check_determinism.py --env PLD_ENV [--ranks N] [--mpirun WORDS]
                            -- PROGRAM ARGS...
(WORDS: tools/mpirun.sh as a command, given FABRIC N and the program.)
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_determinism: " + msg)
    sys.exit(1)


def levels(pld_env):
    out = subprocess.run([pld_env], capture_output=True, text=True).stdout
    m = re.search(r"this CPU and build run ([a-z0-9 ]+)\)", out)
    if not m:
        fail("pld-env names no instruction levels:\n" + out)
    return m.group(1).split()


def run(cmd, env, path, what):
    env = dict(os.environ, **env, PLD_MODEL_OUT=path)
    p = subprocess.run(cmd + ["--model"], capture_output=True, text=True,
                       env=env, timeout=300)
    if p.returncode != 0 or not p.stdout.startswith("OK\nmodel: "):
        fail("%s: status %d, output %r, errors %r" %
             (what, p.returncode, p.stdout, p.stderr))
    with open(path, "rb") as f:
        return f.read()


def check_report(data, ranks, what):
    try:
        r = json.loads(data)
    except ValueError as e:
        fail("%s: not JSON (%s)" % (what, e))
    if not isinstance(r.get("platform"), str) or not r["platform"]:
        fail("%s: no platform in %r" % (what, list(r)))
    rs = r.get("ranks")
    if not isinstance(rs, list) or len(rs) != ranks:
        fail("%s: expected %d ranks, got %r" % (what, ranks, rs))
    if [k.get("rank") for k in rs] != list(range(ranks)):
        fail("%s: ranks out of order: %r" % (what, [k.get("rank") for k in rs]))
    last = max(k["finish_ns"] for k in rs)
    if r.get("total_ns") != last or last <= 0:
        fail("%s: total_ns %r, the last rank's finish %r" %
             (what, r.get("total_ns"), last))


def main():
    args = sys.argv[1:]
    if "--" not in args:
        fail("usage: see the top of this file")
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    pld_env, mpirun, ranks = None, None, 4
    while opts:
        o = opts.pop(0)
        if o == "--env":
            pld_env = opts.pop(0)
        elif o == "--mpirun":
            mpirun = opts.pop(0).split()
        elif o == "--ranks":
            ranks = int(opts.pop(0))
        else:
            fail("unknown option %r" % o)
    if not pld_env or not cmd:
        fail("usage: see the top of this file")
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        # Under mpirun, one run of the shm fabric is the reference.
        isas = ["auto"] if mpirun else levels(pld_env)
        for isa in isas:
            for i in range(1 if mpirun else 2):
                what = "PLD_ISA=%s, run %d" % (isa, i + 1)
                path = os.path.join(tmp, "%s.%d.json" % (isa, i))
                runs.append((what, run(cmd, {"PLD_ISA": isa}, path, what)))
        for fabric in ("shm", "tcp") if mpirun else ():
            for i in range(2):
                what = "mpirun %s, %d processes, run %d" % (fabric, ranks,
                                                           i + 1)
                path = os.path.join(tmp, "mpi.%s.%d.json" % (fabric, i))
                env = {"PLD_FABRIC": "mpi"}
                if fabric == "tcp":
                    env["PLD_MPI_SAME_NODE"] = "rma"
                runs.append((what, run(mpirun + [fabric, str(ranks)] + cmd,
                                       env, path, what)))
        first_what, first = runs[0]
        check_report(first, ranks, first_what)
        for what, data in runs[1:]:
            if data != first:
                fail("%s wrote another report than %s:\n%s\n---\n%s" %
                     (what, first_what, data.decode()[:2000],
                      first.decode()[:2000]))
    print("model OK: %d runs, one report" % len(runs))


if __name__ == "__main__":
    main()
