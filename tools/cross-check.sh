#!/bin/sh
# tools/cross-check.sh: compiles every file under src/ for arm64 with
# Debian's cross compiler, with the library's flags and warnings as errors,
# to check that the default build builds there: the tile loops' x86 copies
# (src/tile/isa.h) drop out, leaving their plain C.  Compiles only
# (nothing is linked or run, so no arm64 libraries are needed); prints one
# line per file that fails and exits 1 if any did.  The MPI backend's
# files (src/fabric/mpi*.c, src/host/ctl_mpi*.c), which the build compiles
# only where MPI is found, take this machine's Open MPI headers
# (pkg-config ompi-c), and are left out (said so) without them.  Installs
# gcc-aarch64-linux-gnu when missing (Debian 12, as root).
#   tools/cross-check.sh [extra compiler flags]
# CROSS_CC names another compiler (e.g. riscv64-linux-gnu-gcc, after
# installing it).
set -eu
cd "$(dirname "$0")/.."
cc=${CROSS_CC:-aarch64-linux-gnu-gcc}
if [ -z "${CROSS_CC:-}" ]; then
  sh tools/need.sh tools/cross-check.sh gcc-aarch64-linux-gnu
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpi_flags=$(pkg-config --cflags ompi-c 2>/dev/null || echo none)
files=0
failed=0
skipped=0
for f in src/*/*.c; do
  extra=
  case $f in
  src/fabric/mpi*.c | src/host/ctl_mpi*.c)
    if [ "$mpi_flags" = none ]; then
      skipped=$((skipped + 1))
      continue
    fi
    extra=$mpi_flags
    ;;
  esac
  files=$((files + 1))
  # shellcheck disable=SC2086 # the flags split into words
  if ! "$cc" -std=c11 -D_GNU_SOURCE -O2 -fno-math-errno -Wall -Wextra \
    -Wpedantic -Wshadow -Wconversion -Wstrict-prototypes \
    -Wmissing-prototypes -Wvla -Wformat=2 -Werror -Iinclude -Isrc $extra "$@" \
    -c "$f" -o "$out/file.o"; then
    echo "tools/cross-check.sh: $f does not compile with $cc" >&2
    failed=$((failed + 1))
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "tools/cross-check.sh: $failed of $files files failed with $cc" >&2
  exit 1
fi
if [ "$skipped" -ne 0 ]; then
  echo "tools/cross-check.sh: $skipped files of the MPI backend left out: no MPI headers (pkg-config ompi-c)" >&2
fi
echo "tools/cross-check.sh: all $files files under src/ compile with $cc"
