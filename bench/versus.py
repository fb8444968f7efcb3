#!/usr/bin/env python3
"""Two builds of one benchmark, side by side: before and after a change.

    versus.py ROUNDS BEFORE AFTER [ARG...]

Runs the benchmark BEFORE, then AFTER (each with ARG...), alternately,
ROUNDS times each, so that a machine that gets busier or quieter meanwhile
weighs on both alike.  Then every line of their output, once: each number the median over the rounds, shown as
[before -> after] where the two differ, and the largest change of the
line as after/before.  Whether higher is better is the unit's to say
(GB/s and runs per second higher, times lower).  A line only one build
prints shows '-' for the other.  The exit status is 1 only if a benchmark
failed (not for a slower figure).
"""
import re
import statistics
import subprocess
import sys

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def figures(text):
    """{label: [numbers]} for each line that is not blank, in order; the
    label is the line with each number replaced by '#'."""
    out = {}
    for line in text.splitlines():
        nums = NUMBER.findall(line)
        if not line.strip():
            continue
        label = " ".join(NUMBER.sub("#", line).split())
        while label in out:  # a repeated label (rows of a table): apart
            label += " "
        out[label] = [float(n) for n in nums]
    return out


def show(v):
    return f"{v:.4g}"


def merged(label, before, after):
    """The label with each number as its medians, before -> after (once
    where they agree), and the largest change after/before among them."""
    parts = label.rstrip().split("#")
    text, worst = parts[0], None
    for i, part in enumerate(parts[1:]):
        b = statistics.median(r[i] for r in before) if before else None
        a = statistics.median(r[i] for r in after) if after else None
        if b is not None and a is not None and show(b) == show(a):
            text += show(a)
        else:
            text += f"[{show(b) if b is not None else '-'} -> " \
                    f"{show(a) if a is not None else '-'}]"
            if b and a is not None and (worst is None or
                                        abs(a / b - 1) > abs(worst - 1)):
                worst = a / b
        text += part
    return text, worst


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
    print(f"{after} {' '.join(args)}: medians of {rounds} alternate runs "
          f"each, [before -> after] where they differ")
    labels = []
    for exe in (before, after):
        for run in runs[exe]:
            for label in run:
                if label not in labels:
                    labels.append(label)
    for label in labels:
        sides = []
        for exe in (before, after):
            vals = [run[label] for run in runs[exe] if label in run]
            n = len(label.split("#")) - 1
            sides.append([v for v in vals if len(v) == n])
        text, worst = merged(label, *sides)
        print(f"  {text}" + (f"   (after/before {worst:.2f}x)" if worst else ""))
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv))
