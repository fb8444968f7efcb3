#!/usr/bin/env python3
"""What the timing model costs the communication benchmark.

    model_cost.py ROUNDS BENCH_COMM

Runs BENCH_COMM quick with PLD_MODEL=off, then =on, alternately, ROUNDS
times each, so that a machine that gets busier or quieter meanwhile
weighs on both alike; then, per pld figure (the barrier at 2, 4 and 8
ranks, the notify -> wait half round trip, put and get at each size),
the median of each setting and on/off.  The figures are read by their
place in bench_comm's tables, not by their lines' words (a target's
met/MISSED changes from run to run).  The exit status is 1 only if a run
failed.
"""
import os
import re
import statistics
import subprocess
import sys


def figures(out):
    """{name: value} of one bench_comm output."""
    got, sec, op = {}, None, None
    for line in out.splitlines():
        if line.startswith("("):
            sec = line[1]
        if "pld_put" in line:
            op = "put"
        elif "pld_get" in line:
            op = "get"
        m = re.match(r"^\s+([248]) \d+(?: \(oversubscribed\))?\s+([\d.]+)", line)
        if sec == "1" and m:
            got["barrier, %s ranks, us" % m.group(1)] = float(m.group(2))
        if sec == "2" and "pld_notify" in line:
            got["notify -> wait, us"] = float(line.split()[-1])
        m = re.match(r"^\s+(\d+ [KM]iB)\s+[\d.]+\s+([\d.]+)", line)
        if sec == "3" and m and op:
            got["%s %s, GB/s" % (op, m.group(1))] = float(m.group(2))
    return got


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rounds, bench = int(sys.argv[1]), sys.argv[2]
    runs = {"off": {}, "on": {}}
    status = 0
    for _ in range(rounds):
        for setting in ("off", "on"):
            p = subprocess.run([bench, "quick"], capture_output=True,
                               text=True,
                               env=dict(os.environ, PLD_MODEL=setting))
            status |= p.returncode != 0
            for k, v in figures(p.stdout).items():
                runs[setting].setdefault(k, []).append(v)
    print("bench_comm quick, PLD_MODEL=off against =on, medians of %d "
          "alternate runs" % rounds)
    for k, off in runs["off"].items():
        on = runs["on"].get(k)
        if not on:
            continue
        a, b = statistics.median(off), statistics.median(on)
        print("  %-24s off %9.3f  on %9.3f  on/off %.2fx" % (k, a, b, b / a))
    sys.exit(status)


if __name__ == "__main__":
    main()
