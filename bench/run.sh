#!/bin/sh
# Builds and runs every benchmark; installs what they need (compiler,
# CMake) and what they compare against (OpenBLAS, Open MPI) when missing
# (Debian 12, as root).  Prints figures; never fails on a slow result.  The
# exit status is 1 only if a benchmark itself failed (a pld call returned
# an error, or it crashed); the others still run.
set -eu
cd "$(dirname "$0")/.."

need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
{ command -v cc >/dev/null 2>&1 && command -v make >/dev/null 2>&1; } ||
  need="$need build-essential"
[ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ] ||
  need="$need libopenblas-dev"
command -v mpicc >/dev/null 2>&1 || need="$need libopenmpi-dev"
command -v mpirun >/dev/null 2>&1 || need="$need openmpi-bin"
if [ -n "$need" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bench/run.sh: the benchmarks need:$need; install them or run as root" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi

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
