#!/bin/sh
# tools/consumer.sh: pld as a project outside its tree gets it.  Builds pld
# (Release, no tests, no benchmarks) in a temporary directory and installs
# it into a temporary prefix; builds the program of tests/consumer, copied
# out of the tree, against that copy with CMake (find_package) and with
# make and pkg-config, each linked with the shared and with the static
# library, and runs every build (each must print OK); runs the installed
# tools; makes the Debian package (cpack -G DEB) and checks its control
# data and content; then, as root, installs it with dpkg, builds and runs
# the consumer against the system copy with no prefix hint, removes the
# package, checks that nothing of it remains, and purges it.  One line per
# check; a failing check prints what its commands printed and ends the
# script with status 1.  Temporary directories are removed however it
# ends, and the package too if the script installed it.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
me=tools/consumer.sh
start=$(date +%s)

sh tools/need.sh "$me" cmake gcc make pkg-config dpkg-dev binutils

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pld-consumer.XXXXXX")
installed=""
cleanup() {
  if [ -n "$installed" ]; then
    dpkg -P pld >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# check WHAT COMMAND...: runs COMMAND (a shell function may be one) in a
# subshell with -e, its output into a log; prints "ok: WHAT (its
# seconds)", or the log and "FAILED: WHAT", and exits 1.
log=$tmp/log
check() {
  what=$1
  shift
  t0=$(date +%s)
  set +e
  (set -e; "$@") >"$log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    sed 's/^/    /' "$log" >&2
    echo "$me: FAILED: $what" >&2
    exit 1
  fi
  echo "$me: ok: $what ($(($(date +%s) - t0)) s)"
}
fail() {
  echo "$*"
  return 1
}
# prints_ok COMMAND...: runs COMMAND, which must print exactly OK and
# exit with status 0.
prints_ok() {
  out=$("$@" 2>&1) && [ "$out" = OK ] && return 0
  printf '%s\n' "$out"
  fail "$*: expected OK alone, with status 0"
}
# resolves_to PROGRAM DIR: the dynamic loader finds PROGRAM's libpld.so.0
# in DIR (a pattern).
resolves_to() {
  found=$(ldd "$1" | sed -n 's/^[[:space:]]*libpld\.so\.0 => \([^ ]*\).*/\1/p')
  case $found in
  $2/libpld.so.0) ;;
  *) fail "$1 loads libpld.so.0 from '${found:-nowhere}', expected $2" ;;
  esac
}

build=$tmp/build
prefix=$tmp/prefix
jobs=$(nproc)

# ---- build and install into a prefix --------------------------------------
# Only what is installed is built (not the examples): install and cpack
# then need no other target (CMAKE_SKIP_INSTALL_ALL_DEPENDENCY).
build_pld() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLD_TESTS=OFF \
    -DPLD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON
  cmake --build "$build" -j "$jobs" --target pld pld_shared pld-env pld-trace
}
check "pld builds (Release, no tests, no benchmarks)" build_pld

libdir_rel=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
soversion=${version%%.*}
libdir=$prefix/$libdir_rel
install_prefix() {
  cmake --install "$build" --prefix "$prefix"
  for f in include/pld.h include/pld/levels.h include/pld/pp.h bin/pld-env \
    bin/pld-trace "$libdir_rel/libpld.a" "$libdir_rel/libpld.so" \
    "$libdir_rel/libpld.so.$soversion" "$libdir_rel/libpld.so.$version" \
    "$libdir_rel/cmake/pld/pldConfig.cmake" \
    "$libdir_rel/cmake/pld/pldConfigVersion.cmake" \
    "$libdir_rel/cmake/pld/pldTargets.cmake" "$libdir_rel/pkgconfig/pld.pc"; do
    [ -e "$prefix/$f" ] || fail "$f is not installed"
  done
  grep -q "^prefix=$prefix\$" "$libdir/pkgconfig/pld.pc" ||
    fail "pld.pc does not say prefix=$prefix"
}
check "cmake --install --prefix: libraries, headers, tools, CMake and pkg-config files" install_prefix

exports() {
  readelf -d "$libdir/libpld.so.$version" |
    grep -q "Library soname: \[libpld.so.$soversion\]" ||
    fail "libpld.so.$version has no soname libpld.so.$soversion"
  sh "$root/cmake/check_exports.sh" gcc nm "$prefix/include" \
    "$libdir/libpld.so.$version"
}
check "installed libpld.so.$version: soname libpld.so.$soversion, exports the public API only" exports

# ---- the consumer against the prefix --------------------------------------
# The consumer's sources, outside the tree.
src=$tmp/consumer
mkdir "$src"
cp "$root/tests/consumer/consumer.c" "$root/tests/consumer/CMakeLists.txt" \
  "$root/tests/consumer/Makefile" "$src/"

# cmake_consumer DIR PLD_DIR LIBDIR [CMAKE ARGS...]: configures and builds
# the consumer in DIR; find_package must find pld in PLD_DIR, the shared
# build load libpld.so.0 from LIBDIR; both builds print OK.
cmake_consumer() {
  dir=$1 want_dir=$2 want_lib=$3
  shift 3
  cmake -S "$src" -B "$dir" "$@"
  cmake --build "$dir" -j "$jobs"
  got=$(sed -n 's/^pld_DIR:PATH=//p' "$dir/CMakeCache.txt")
  [ "$got" = "$want_dir" ] || fail "find_package(pld) found $got, expected $want_dir"
  resolves_to "$dir/consumer" "$want_lib"
  prints_ok "$dir/consumer"
  prints_ok "$dir/consumer_static"
}
check "CMake consumer, -DCMAKE_PREFIX_PATH=<prefix>: pld::pld and pld::pld_static print OK" \
  cmake_consumer "$tmp/cmake-prefix" "$libdir/cmake/pld" "$libdir" \
  -DCMAKE_PREFIX_PATH="$prefix"

# make_consumer DIR LIBDIR: builds the consumer with make and pkg-config in
# a copy DIR; the shared build loads libpld.so.0 from LIBDIR; both print OK.
make_consumer() {
  cp -R "$src" "$1"
  make -C "$1" consumer consumer_static
  resolves_to "$1/consumer" "$2"
  prints_ok "$1/consumer"
  prints_ok "$1/consumer_static"
}
make_prefix() {
  export PKG_CONFIG_PATH="$libdir/pkgconfig" LD_LIBRARY_PATH="$libdir"
  make_consumer "$tmp/make-prefix" "$libdir"
}
check "make consumer, pkg-config with PKG_CONFIG_PATH: shared and static builds print OK" make_prefix

static_libs() {
  libs=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --static --libs pld)
  echo "pkg-config --static --libs pld: $libs"
  for l in -lpld -lpthread -lm; do
    case " $libs " in *" $l "*) ;; *) fail "no $l" ;; esac
  done
  if readelf -d "$libdir/libpld.so.$version" | grep -q 'NEEDED.*libmpi'; then
    case " $libs " in *" -lmpi "*) ;; *) fail "built with MPI, but no -lmpi" ;; esac
  fi
}
check "pkg-config --static --libs pld names what libpld.a needs" static_libs

tools() {
  "$prefix/bin/pld-env" >"$tmp/env.txt"
  grep -q '^PLD_WAIT_TIMEOUT_MS ' "$tmp/env.txt" || fail "pld-env printed no table"
  prints_ok env PLD_TRACE="$tmp/trace.json" LD_LIBRARY_PATH="$libdir" \
    "$tmp/make-prefix/consumer"
  "$prefix/bin/pld-trace" "$tmp/trace.json" | grep -q scale_and_sum ||
    fail "pld-trace does not show the consumer's kernel"
}
check "installed pld-env prints its table, pld-trace reads the consumer's trace" tools

# ---- the Debian package ---------------------------------------------------
arch=$(dpkg --print-architecture)
deb=$build/pld_${version}_$arch.deb
list=$tmp/deb-content
package() {
  (cd "$build" && cpack -G DEB)
  [ -f "$deb" ] || fail "cpack made no $deb"
}
check "cpack -G DEB makes $(basename "$deb")" package

control() {
  dpkg-deb -I "$deb"
  field() { dpkg-deb -f "$deb" "$1"; }
  [ "$(field Package)" = pld ] || fail "Package is not pld"
  [ "$(field Version)" = "$version" ] || fail "Version is not $version"
  [ "$(field Architecture)" = "$arch" ] || fail "Architecture is not $arch"
  for f in Maintainer Description Section; do
    [ -n "$(field $f)" ] || fail "no $f"
  done
  depends=$(field Depends)
  case $depends in *libc6*) ;; *) fail "Depends has no libc6: $depends" ;; esac
  if readelf -d "$libdir/libpld.so.$version" | grep -q 'NEEDED.*libmpi'; then
    case $depends in *libopenmpi*) ;; *) fail "Depends has no Open MPI: $depends" ;; esac
  fi
}
check "the package's control: pld $version, maintainer, section, Depends" control

# The package's paths, without the leading "." (directories end with /).
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's/^\.//' >"$list"
content() {
  cat "$list"
  ! grep -v '^/usr/' "$list" || fail "paths outside /usr"
  for f in /usr/include/pld.h /usr/include/pld/program.h /usr/bin/pld-env \
    /usr/bin/pld-trace "/usr/$libdir_rel/libpld.a" "/usr/$libdir_rel/libpld.so" \
    "/usr/$libdir_rel/libpld.so.$soversion" "/usr/$libdir_rel/libpld.so.$version" \
    "/usr/$libdir_rel/cmake/pld/pldConfig.cmake" "/usr/$libdir_rel/pkgconfig/pld.pc"; do
    grep -qx "$f" "$list" || fail "no $f"
  done
  dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "./usr/$libdir_rel/pkgconfig/pld.pc" |
    grep -qx 'prefix=/usr' || fail "its pld.pc does not say prefix=/usr"
  # No file another package installed already, nor any left by hand.
  files=$(grep -v '/$' "$list")
  owners=$(dpkg -S $files 2>/dev/null || true)
  [ -z "$owners" ] || fail "files of other packages: $owners"
  for f in $files; do
    [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f exists on this system already"
  done
}
check "the package's content: everything under /usr, no file another package or a hand owns" content

# ---- installed for real ----------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
  echo "$me: skipped: installing the package with dpkg -i needs root"
else
  if dpkg-query -W -f='${Status}' pld 2>/dev/null | grep -q 'install ok installed'; then
    echo "$me: FAILED: the package pld is installed already (dpkg -r pld)" >&2
    exit 1
  fi
  installed=yes
  check "dpkg -i installs the package" dpkg -i "$deb"
  sys_libdir=/usr/$libdir_rel
  system_pc() {
    unset PKG_CONFIG_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH
    [ "$(pkg-config --variable=prefix pld)" = /usr ] ||
      fail "pkg-config finds a pld whose prefix is not /usr"
    make_consumer "$tmp/make-system" "*"
    case $(ldd "$tmp/make-system/consumer") in
    *"$tmp"*) fail "the consumer loads a library from $tmp" ;;
    esac
    /usr/bin/pld-env >/dev/null
  }
  check "make consumer, pkg-config of the system copy: shared and static builds print OK" system_pc
  system_cmake() {
    unset PKG_CONFIG_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH
    cmake_consumer "$tmp/cmake-system" "$sys_libdir/cmake/pld" "*"
  }
  check "CMake consumer, find_package of the system copy: pld::pld and pld::pld_static print OK" system_cmake
  check "dpkg -r removes the package" dpkg -r pld
  # Then nothing of it may remain: no file, no directory of its own, no
  # entry in dpkg's database once purged (the entry dpkg -r keeps for
  # the maintainer scripts' purge).
  removed() {
    unset PKG_CONFIG_PATH
    ! dpkg-query -W -f='${Status}\n' pld 2>/dev/null | grep -q 'ok installed' ||
      fail "dpkg still lists pld as installed"
    dpkg -P pld
    ! dpkg-query -W pld 2>/dev/null || fail "dpkg still knows pld once purged"
    while read -r f; do
      case $f in
      */) case $f in *pld*) [ ! -d "$f" ] || fail "$f remains" ;; esac ;;
      *) [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f remains" ;;
      esac
    done <"$list"
    ! pkg-config --exists pld || fail "pkg-config still finds pld"
  }
  check "nothing of the package remains (then purged)" removed
  installed=""
fi

echo "$me: all checks passed in $(($(date +%s) - start)) s"
