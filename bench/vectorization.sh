#!/bin/sh
# Reports which loops of the tile layer gcc vectorizes, compiling each
# src/tile/*.c with the library's flags (-O2 -march=native -fno-math-errno)
# and -fopt-info-vec-optimized: one line per file and source line, with
# the count and vector width of the loops vectorized there (loops written
# in macros are reported at the line that expands them).  Prints; never
# fails on a missed loop.  Usage: bench/vectorization.sh [extra gcc flags]
set -eu
cd "$(dirname "$0")/.."
for f in src/tile/*.c; do
  ${CC:-gcc} -std=c11 -D_GNU_SOURCE -O2 -march=native -fno-math-errno \
    -Iinclude -Isrc "$@" -c "$f" -o /dev/null -fopt-info-vec-optimized 2>&1 |
    sed -n 's/^\([^:]*:[0-9]*\):[0-9]*: optimized: \(.*\)$/\1: \2/p' |
    sort | uniq -c
done
