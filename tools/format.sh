#!/bin/sh
# The C sources' formatting, with the checked-in .clang-format (Debian 12's
# clang-format 14):
#   tools/format.sh           formats every tracked .c and .h file in place
#   tools/format.sh --check   changes nothing; fails naming each file whose
#                             formatting differs (what .ci/run does)
set -eu
cd "$(dirname "$0")/.."

sh tools/need.sh tools/format.sh clang-format

files=$(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
  bad=""
  for f in $files; do
    clang-format --style=file "$f" | cmp -s - "$f" || bad="$bad $f"
  done
  if [ -n "$bad" ]; then
    echo "tools/format.sh: not formatted as .clang-format says (run sh tools/format.sh):$bad" >&2
    exit 1
  fi
  echo "tools/format.sh: $(echo "$files" | wc -l) files formatted"
elif [ -z "${1:-}" ]; then
  # shellcheck disable=SC2086
  clang-format --style=file -i $files
else
  echo "tools/format.sh: expected no argument or --check, got '$1'" >&2
  exit 2
fi
