#!/bin/sh
# Builds and runs every benchmark; installs what they need (compiler,
# CMake) and what they compare against (OpenBLAS, Open MPI) when missing
# (Debian 12, as root).  Prints figures; never fails on a slow result.  The
# exit status is 1 only if a benchmark itself failed (a pld call returned
# an error, or it crashed); the others still run.
set -eu
cd "$(dirname "$0")/.."

sh tools/need.sh bench/run.sh cmake build-essential libopenblas-dev \
  libopenmpi-dev openmpi-bin

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPLD_BENCH=ON -DPLD_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)"
failed=""
for b in build-bench/bench/bench_*; do
  [ -x "$b" ] || continue
  echo
  "$b" || failed="$failed $(basename "$b")"
done
if [ -n "$failed" ]; then
  echo "bench/run.sh: failed (not slow: an error or a crash):$failed" >&2
  exit 1
fi
