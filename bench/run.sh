#!/bin/sh
# Builds and runs every benchmark; installs what they compare against
# (OpenBLAS, Open MPI) when missing (Debian 12, as root).  Prints figures;
# never fails on a slow result.
set -eu
cd "$(dirname "$0")/.."

need=""
[ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ] ||
  need="$need libopenblas-dev"
command -v mpicc >/dev/null 2>&1 || need="$need libopenmpi-dev openmpi-bin"
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
for b in build-bench/bench/bench_*; do
  [ -x "$b" ] || continue
  echo
  "$b"
done
