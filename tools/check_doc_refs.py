#!/usr/bin/env python3
"""tools/check_doc_refs.py: the references of the documentation to the
sources point where they say.

Checks README.md and every docs/**/*.md (or the files given):

  - A reference FILE:LINE (or FILE:LINE:COLUMN, as gcc prints them) to a
    file of the repository, in text or in a quoted output: line LINE of
    the file must contain one of the names the page's line gives for it,
    as a whole word.  The names are those gcc quotes (`'pld_load'`, in
    gcc's typographic quotes) and the function pld's own outputs name
    before the reference ("pld program NAME (", "dispatch N: NAME on ...
    (", "host task N: NAME on ... ("); a reference whose line gives no
    name fails, so that every reference can be checked.  FILE may be
    absolute (the pages quote outputs of a checkout elsewhere: its longest
    tail that is a file of the repository counts), relative to the
    repository, or relative to the build directory (`../include/...`).
    Files that are not in the repository (the `mine.c` a page has the
    reader make) are not checked.
  - A whole file: the comment `<!-- the whole of FILE -->` on a line of its
    own, followed by a fenced code block whose text must be FILE's.

Prints one line per mistake and exits 1 if there is one; otherwise one
line saying how many references it checked.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REF = re.compile(r"((?:[\w.+-]*/)*[\w.+-]+\.[ch]):(\d+)(?::\d+)?")
GCC_NAME = re.compile("\u2018([A-Za-z_]\\w*)\u2019")
PLD_NAME = re.compile(r"(?:pld program|dispatch \d+:|host task \d+:) ([A-Za-z_]\w*)")
WHOLE = re.compile(r"^<!-- the whole of (\S+) -->$")
FENCE = re.compile(r"^(```+|~~~+)")


def repo_file(path):
    """The repository path PATH names, or None."""
    if path.startswith("/"):
        parts = path.strip("/").split("/")
        for i in range(len(parts)):
            tail = "/".join(parts[i:])
            if os.path.isfile(os.path.join(ROOT, tail)):
                return tail
        return None
    rel = path
    while rel.startswith("../"):
        rel = rel[3:]
    if "/" in rel and os.path.isfile(os.path.join(ROOT, rel)):
        return rel
    return None


def source_lines(path, cache={}):
    if path not in cache:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            cache[path] = f.read().split("\n")
    return cache[path]


def check_refs(page, n, line, errors):
    count = 0
    for m in REF.finditer(line):
        path = repo_file(m.group(1))
        if path is None:
            if m.group(1).startswith("/") or "/" in m.group(1):
                if not m.group(1).startswith("/tmp/"):
                    errors.append("%s:%d: %s is not a file of the repository"
                                  % (page, n, m.group(1)))
            continue
        count += 1
        at = int(m.group(2))
        names = GCC_NAME.findall(line) + PLD_NAME.findall(line[:m.start()])
        src = source_lines(path)
        if not names:
            errors.append("%s:%d: %s:%d: the line names nothing to check it "
                          "against (quote a name as gcc does, or see "
                          "tools/check_doc_refs.py)" % (page, n, path, at))
        elif at < 1 or at > len(src):
            errors.append("%s:%d: %s:%d: beyond the file's %d lines"
                          % (page, n, path, at, len(src)))
        elif not any(re.search(r"\b%s\b" % re.escape(x), src[at - 1])
                     for x in names):
            hits = [i + 1 for i, s in enumerate(src)
                    if any(re.search(r"\b%s\b" % re.escape(x), s)
                           for x in names)]
            errors.append("%s:%d: %s:%d is '%s', which names none of %s%s"
                          % (page, n, path, at, src[at - 1].strip(),
                             ", ".join(names),
                             " (they are on line%s %s)" %
                             ("s" if len(hits) > 1 else "",
                              ", ".join(map(str, hits[:8])))
                             if hits else ""))
    return count


def check_page(page, errors):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    count = 0
    i = 0
    while i < len(lines):
        m = WHOLE.match(lines[i])
        if m:
            count += 1
            path = m.group(1)
            j = i + 1
            fence = FENCE.match(lines[j]) if j < len(lines) else None
            if not fence:
                errors.append("%s:%d: no code block follows the comment"
                              % (page, i + 1))
            elif not os.path.isfile(os.path.join(ROOT, path)):
                errors.append("%s:%d: %s is not a file of the repository"
                              % (page, i + 1, path))
            else:
                k = j + 1
                while k < len(lines) and not lines[k].startswith(fence.group(1)):
                    k += 1
                block = lines[j + 1:k]
                want = source_lines(path)
                if want and want[-1] == "":
                    want = want[:-1]
                if block != want:
                    first = next((d for d in range(max(len(block), len(want)))
                                  if d >= len(block) or d >= len(want)
                                  or block[d] != want[d]), 0)
                    errors.append("%s:%d: the code block is not %s: they "
                                  "differ from its line %d on"
                                  % (page, j + 2 + first, path, first + 1))
                i = k
        else:
            count += check_refs(page, i + 1, lines[i], errors)
        i += 1
    return count


def main(argv):
    pages = argv or ["README.md"] + sorted(
        os.path.relpath(os.path.join(d, f), ROOT)
        for d, _, fs in os.walk(os.path.join(ROOT, "docs"))
        for f in fs if f.endswith(".md"))
    errors = []
    count = sum(check_page(p, errors) for p in pages)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print("tools/check_doc_refs.py: %d of the references in %d page%s "
              "are wrong" % (len(errors), len(pages),
                             "" if len(pages) == 1 else "s"), file=sys.stderr)
        return 1
    print("tools/check_doc_refs.py: %d references in %d pages point where "
          "they say" % (count, len(pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
