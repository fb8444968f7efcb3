#!/bin/sh
# tools/stress-tests.sh [BUILD_DIR [PASSES [CTEST_ARG...]]]: runs the CTest
# entries whose verdict depends on time (label `timing`: limits, deadlock
# quiet times, stale snapshots, faults under mpirun) PASSES times (1) while
# 6 busy-loop processes (PLD_STRESS_BUSY) keep this machine's CPUs busy, as
# other builds and tests do on a CI machine.  Every entry must pass: a
# limit's test proves it fires in bounded time with a margin that grows
# with the measured slowdown (tests/load.h), and a test that expects a run
# to succeed does not fail because the machine is slow.  BUILD_DIR
# (build) is a configured and built tree with tests; CTEST_ARG... go to
# ctest (-R REGEX to run some of them).  The busy processes are started
# and killed here, whatever the outcome.  Prints each pass's time and
# exits 0 if every pass passed.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
passes=${2:-1}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
busy=${PLD_STRESS_BUSY:-6}
if [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "tools/stress-tests.sh: $build is no configured build (cmake -S . -B $build -DPLD_TESTS=ON)" >&2
  exit 2
fi

pids=""
ctest_pid=""
stop_busy() {
  for pid in $ctest_pid $pids; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $ctest_pid $pids; do
    wait "$pid" 2>/dev/null || true
  done
  pids=""
}
trap stop_busy EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
i=0
while [ $i -lt "$busy" ]; do
  sh -c 'while :; do :; done' &
  pids="$pids $!"
  i=$((i + 1))
done

rc=0
all=$(date +%s)
pass=1
while [ $pass -le "$passes" ]; do
  start=$(date +%s)
  echo "stress-tests: pass $pass of $passes beside $busy busy processes (load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
  # In the background, so that a signal reaches the traps at once.
  ctest --test-dir "$build" -L timing --no-tests=error --output-on-failure \
    -j 2 "$@" &
  ctest_pid=$!
  status=0
  wait $ctest_pid || status=$?
  ctest_pid=""
  if [ $status -eq 0 ]; then
    echo "stress-tests: pass $pass passed in $(($(date +%s) - start)) s"
  else
    echo "stress-tests: pass $pass FAILED in $(($(date +%s) - start)) s"
    rc=1
  fi
  pass=$((pass + 1))
done
echo "stress-tests: $passes pass(es) in $(($(date +%s) - all)) s, load average $(cut -d ' ' -f 1-3 /proc/loadavg)"
exit $rc
