#!/usr/bin/env python3
"""tools/check_cycles.py OBJECT...: fails when files of src/ call each other
in a loop, directly or through others.

Reads the symbols each object file defines and uses (nm); file A uses file
B when A names a symbol (a function, a table, a variable) that B defines.
Prints every loop, as strongly connected files with the symbols that tie
them, and exits 1; exits 0 when there is none.  An object named
.../src/DIR/FILE.c.o is reported as DIR/FILE.c.
"""
import re
import subprocess
import sys


def unit_name(path):
    m = re.search(r"src/(.+?)\.o$", path)
    return m.group(1) if m else path


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True,
                         check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBRVC":
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            used.add(f[1])
    return defined, used


def loops(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main(argv):
    if len(argv) < 2:
        print("usage: check_cycles.py OBJECT...", file=sys.stderr)
        return 2
    defined, used = {}, {}
    for path in argv[1:]:
        name = unit_name(path)
        defined[name], used[name] = symbols(path)
    owner = {s: n for n, ds in defined.items() for s in ds}
    edges = {}
    for n, us in used.items():
        for s in us:
            o = owner.get(s)
            if o and o != n:
                edges.setdefault(n, {}).setdefault(o, []).append(s)
    found = loops(edges)
    for comp in found:
        print("files that call each other in a loop: " + ", ".join(comp))
        for a in comp:
            for b, syms in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print("  %s -> %s (%s)" % (a, b, ", ".join(sorted(syms))))
    if found:
        return 1
    print("check_cycles.py: %d files, no loop" % len(defined))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
