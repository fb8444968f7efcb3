#!/bin/sh
# Builds and runs every benchmark; installs what they need (compiler,
# CMake) and what they compare against (OpenBLAS, Open MPI) when missing
# (Debian 12, as root).  Prints figures; never fails on a slow result.  The
# exit status is 1 only if a benchmark itself failed (a pld call returned
# an error, or it crashed); the others still run.
#
#   bench/run.sh             every benchmark
#   bench/run.sh tile [N]    the portable build next to a native one: every
#                            tile benchmark of bench_tile (the library as
#                            configured, by default portable: AVX2 or
#                            AVX-512 chosen at run time) and of
#                            bench_tile_native (a copy built -march=native),
#                            alternately, in N pairs of fresh processes
#                            (11), then one table of their medians and
#                            ratios (bench_tile --versus)
#   bench/run.sh versus REV [N]
#                            before and after a change: the dispatch and
#                            communication benchmarks of git revision REV
#                            (built from `git archive` in build-bench-REV)
#                            and of this tree, alternately, N times each
#                            (3), then one table per benchmark of their
#                            medians and ratios (bench/versus.py)
#   bench/run.sh model [N]   bench_model (the timing model's figures: one
#                            run, modeled times are exact), then what the
#                            model costs: bench_tile (--versus itself
#                            with PLD_MODEL=on), bench_comm model-cost
#                            (a barrier loop, off and on in one
#                            process), bench_coll model-cost (every
#                            collective, likewise), bench_comm (quick,
#                            bench/model_cost.py),
#                            bench_dispatch and
#                            bench_workloads' fused GEMMs (quick, 2 ranks)
#                            with PLD_MODEL=off and PLD_MODEL=on,
#                            alternately, N times each (3), one table per
#                            benchmark (bench/versus.py)
#
# The build goes to build-bench, or to $PLD_BENCH_BUILD; extra CMake
# options (-DPLD_NATIVE=ON, ...) can come in $PLD_BENCH_CMAKE.
set -eu
cd "$(dirname "$0")/.."
build=${PLD_BENCH_BUILD:-build-bench}

sh tools/need.sh bench/run.sh cmake build-essential libopenblas-dev \
  libopenmpi-dev openmpi-bin

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLD_BENCH=ON \
  -DPLD_TESTS=OFF ${PLD_BENCH_CMAKE:-} >/dev/null

if [ "${1:-}" = tile ]; then
  cmake --build "$build" -j "$(nproc)" --target bench_tile bench_tile_native
  exec "$build/bench/bench_tile" --versus "$build/bench/bench_tile_native" \
    "${2:-11}"
fi

if [ "${1:-}" = versus ]; then
  rev=$(git rev-parse --short "${2:?bench/run.sh versus REV [N]}")
  old=$build-$rev
  if [ ! -f "$old/src/CMakeLists.txt" ]; then
    mkdir -p "$old/src"
    git archive "$rev" | tar -x -C "$old/src"
  fi
  cmake -S "$old/src" -B "$old" -DCMAKE_BUILD_TYPE=Release -DPLD_BENCH=ON \
    -DPLD_TESTS=OFF ${PLD_BENCH_CMAKE:-} >/dev/null
  for b in "$old" "$build"; do
    cmake --build "$b" -j "$(nproc)" --target bench_dispatch bench_comm mpi_ref
  done
  st=0
  python3 bench/versus.py "${3:-3}" "$old/bench/bench_dispatch" \
    "$build/bench/bench_dispatch" 20 2000 || st=1
  echo
  python3 bench/versus.py "${3:-3}" "$old/bench/bench_comm" \
    "$build/bench/bench_comm" quick || st=1
  exit $st
fi

if [ "${1:-}" = model ]; then
  cmake --build "$build" -j "$(nproc)" --target bench_model bench_dispatch \
    bench_comm bench_coll bench_workloads bench_tile mpi_ref
  st=0
  "$build/bench/bench_model" || st=1
  # The same binaries with the model off and on: versus.py runs the
  # benchmark through these, alternately.
  for m in off on; do
    printf '#!/bin/sh\nPLD_MODEL=%s exec "$@"\n' $m \
      >"$build/bench/model-$m"
    chmod +x "$build/bench/model-$m"
  done
  # bench_tile compares itself with a program, row by row: itself with
  # the model on.
  printf '#!/bin/sh\nPLD_MODEL=on exec "%s" "$@"\n' "$build/bench/bench_tile" \
    >"$build/bench/bench_tile-model-on"
  chmod +x "$build/bench/bench_tile-model-on"
  echo
  echo "bench_tile with the model off (pld) against on (reference):"
  PLD_MODEL=off "$build/bench/bench_tile" --versus \
    "$build/bench/bench_tile-model-on" "${2:-3}" || st=1
  echo
  echo
  "$build/bench/bench_comm" model-cost || st=1
  echo
  "$build/bench/bench_coll" model-cost || st=1
  python3 bench/model_cost.py "${2:-3}" "$build/bench/bench_comm" || st=1
  for args in "bench_dispatch 20 2000" "bench_workloads quick fused -n 2"; do
    echo
    # $args unquoted: the benchmark, then its arguments
    python3 bench/versus.py "${2:-3}" "$build/bench/model-off" \
      "$build/bench/model-on" "$build/bench/"$args || st=1
  done
  exit $st
fi

cmake --build "$build" -j "$(nproc)"
failed=""
for b in "$build"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo
  "$b" || failed="$failed $(basename "$b")"
done
# pld's MPI fabric next to Open MPI on the same transport, after the
# default runs: every peer through MPI RMA over TCP (mpi-tcp) and over UCX
# (mpi-ucx), then peers through shared memory under mpirun, against the
# shared-memory fabric's figures (mpi-shm).  Quick (every figure takes MPI
# jobs of its own), but every collective at 2, 4 and 8 ranks from 16 B to
# 4 MiB, 64 KiB among them: issue 28's target 1 is judged on them.
run_mpi() { # NAME ARG...: $build/bench/NAME ARG... --fabric $f, if built
  b=$build/bench/$1
  shift
  [ -x "$b" ] || return 0
  echo
  "$b" "$@" --fabric "$f" || failed="$failed $(basename "$b") --fabric $f"
}
for f in mpi-tcp mpi-ucx mpi-shm; do
  run_mpi bench_comm quick
  run_mpi bench_coll -n 2,4,8 -b 16 -e 4M quick
done
if [ -n "$failed" ]; then
  echo "bench/run.sh: failed (not slow: an error or a crash):$failed" >&2
  exit 1
fi
