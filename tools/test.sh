#!/bin/sh
# Installs what the tests need (Debian 12; as root, or with them installed
# already), builds the library, examples and tests, and runs every test.
#   tools/test.sh            the suite, warnings as errors
#   tools/test.sh address    the suite built with ASan + UBSan
#   tools/test.sh thread     the suite built with TSan
set -eu
cd "$(dirname "$0")/.."

sh tools/need.sh tools/test.sh cmake gcc libcmocka-dev openmpi-bin libopenmpi-dev python3

san=${1:-}
dir=build-test${san:+-$san}
# A sanitizer report inside a device process must fail its run: halting
# kills that process, and the host reports the crash.  TSan otherwise
# sleeps a second in every process that calls exit() (atexit_sleep_ms),
# as long as the host gives a device that called exit() to be gone.
export TSAN_OPTIONS="halt_on_error=1:atexit_sleep_ms=0${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLD_WERROR=ON \
  -DPLD_TESTS=ON -DPLD_SANITIZE="$san" >/dev/null
cmake --build "$dir" -j "$(nproc)"
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$(nproc)"
