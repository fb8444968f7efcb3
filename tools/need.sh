#!/bin/sh
# tools/need.sh WHO PACKAGE...: installs the Debian packages among PACKAGE
# that are not installed yet (as root; otherwise says which are missing and
# fails).  WHO names the caller in messages.
set -eu
who=$1
shift
need=""
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    need="$need $pkg"
done
[ -n "$need" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "$who: needs the Debian packages:$need; install them or run as root" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
