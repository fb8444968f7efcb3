#!/usr/bin/env python3
"""tools/check_lengths.py [--max N] [DIR]: fails when a source file of DIR
(src/ of the checkout by default) is longer than N lines (900): a file
that long does more than one job, and is to be split by its jobs.

Prints every such file with its length and exits 1; exits 0 when there is
none.  `--self-test` checks the check: of files of N and N + 1 lines in a
scratch folder, it must name the second alone.
"""
import os
import subprocess
import sys
import tempfile


def self_test():
    with tempfile.TemporaryDirectory() as top:
        for name, n in (("at.c", 900), ("past.h", 901), ("note.txt", 2000)):
            with open(os.path.join(top, name), "w", encoding="utf-8") as fh:
                fh.write("x\n" * n)
        r = subprocess.run([sys.executable, __file__, top],
                           capture_output=True, text=True)
    want = ("past.h: 901 lines, more than 900\n"
            "1 file(s) longer than 900 lines: split each by its jobs\n")
    if r.returncode != 1 or r.stdout != want:
        print(f"self-test: expected exit 1 and\n{want}got exit "
              f"{r.returncode} and\n{r.stdout}")
        return 1
    print("self-test: ok")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    most, top = 900, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--max" and args:
            most = int(args.pop(0))
        elif top is None and not a.startswith("-"):
            top = a
        else:
            print("usage: tools/check_lengths.py [--max N] [DIR]",
                  file=sys.stderr)
            return 2
    if top is None:
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "src")
    over = []
    for d, _, files in sorted(os.walk(top)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    n = sum(1 for _ in fh)
                if n > most:
                    over.append((os.path.relpath(path, top), n))
    for path, n in over:
        print(f"{path}: {n} lines, more than {most}")
    if over:
        print(f"{len(over)} file(s) longer than {most} lines: split each "
              "by its jobs")
        return 1
    print(f"no file longer than {most} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
