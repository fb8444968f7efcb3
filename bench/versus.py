#!/usr/bin/env python3
"""Two builds of one benchmark, side by side: before and after a change.

    versus.py ROUNDS BEFORE AFTER [ARG...]

Runs the benchmark BEFORE, then AFTER (each with ARG...), alternately,
ROUNDS times each, so that a machine that gets busier or quieter meanwhile
weighs on both alike.  Then, for every line of their output that carries a
figure, one line: the label (the line with its numbers taken out), the
median of its first figure over the rounds before and after, and after /
before.  Whether higher is better is the unit's to say ("/s" and "GB/s"
higher, times lower); the table says which where it can tell.  Lines that
differ in shape between the two builds (a figure added or renamed) are
listed for the build that printed them only.  The exit status is 1 only if
a benchmark failed (not for a slower figure).
"""
import re
import statistics
import subprocess
import sys

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def figures(text):
    """{label: first number} for each line carrying a number, in order."""
    out = {}
    for line in text.splitlines():
        nums = NUMBER.findall(line)
        if not nums:
            continue
        label = " ".join(NUMBER.sub("#", line).split())
        while label in out:  # a repeated label: keep each line apart
            label += " +"
        out[label] = float(nums[0])
    return out


def better(label):
    if "/s" in label:
        return "higher is better"
    if re.search(r"\b(us|ms|ns|s)\b", label):
        return "lower is better"
    return ""


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    rounds, before, after, args = int(argv[1]), argv[2], argv[3], argv[4:]
    runs = {before: [], after: []}
    failed = 0
    for r in range(rounds):
        for exe in (before, after):
            p = subprocess.run([exe] + args, capture_output=True, text=True)
            if p.returncode != 0:
                sys.stderr.write(f"versus: {exe} {' '.join(args)}: status "
                                 f"{p.returncode}\n{p.stderr}")
                failed = 1
                continue
            runs[exe].append(figures(p.stdout))
    print(f"{after} {' '.join(args)}: after / before, medians of "
          f"{rounds} alternate runs each")
    labels = []
    for exe in (before, after):
        for run in runs[exe]:
            for label in run:
                if label not in labels:
                    labels.append(label)
    width = min(max((len(s) for s in labels), default=0), 72)
    print(f"  {'':<{width}} {'before':>12} {'after':>12} {'after/before':>9}")
    for label in labels:
        med = []
        for exe in (before, after):
            vals = [run[label] for run in runs[exe] if label in run]
            med.append(statistics.median(vals) if vals else None)
        b, a = med
        ratio = f"{a / b:8.2f}x" if a is not None and b else "         "
        show = lambda v: f"{v:12.4g}" if v is not None else f"{'-':>12}"
        print(f"  {label[:width]:<{width}} {show(b)} {show(a)} {ratio}  "
              f"{better(label)}")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv))
