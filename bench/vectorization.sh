#!/bin/sh
# Reports which loops of the tile layer gcc vectorizes, compiling each
# src/tile/*.c as the library is built (-O2 -fno-math-errno, portable)
# with -fopt-info-vec-optimized: one line per file and source line, with
# the count and vector width of the loops vectorized there (loops written
# in macros are reported at the line that expands them).  Each hot loop is
# compiled once per level of instructions (src/tile/isa.h), so it shows up
# with 16-byte vectors (generic: SSE2), 32-byte (avx2) and 64-byte ones
# (avx512).  Extra gcc flags go to every compilation:
# `bench/vectorization.sh -march=native` shows the native build, whose one
# copy is built for this CPU.  Prints; never fails on a missed loop.
set -eu
cd "$(dirname "$0")/.."
for f in src/tile/*.c; do
  ${CC:-gcc} -std=c11 -D_GNU_SOURCE -O2 -fno-math-errno \
    -Iinclude -Isrc "$@" -c "$f" -o /dev/null -fopt-info-vec-optimized 2>&1 |
    sed -n 's/^\([^:]*:[0-9]*\):[0-9]*: optimized: \(.*\)$/\1: \2/p' |
    sort | uniq -c
done
