#!/bin/sh
# cmake/check_exports.sh CC NM INCLUDE_DIR LIBRARY: checks that the shared
# library LIBRARY exports exactly the public API, that is the functions
# and data objects with external linkage that INCLUDE_DIR/pld.h and the
# headers it includes from INCLUDE_DIR declare, and nothing else.  The
# set is taken from the headers as the compiler CC (gcc) reads them, not
# from cmake/pld.map: an internal symbol exported, or a public one missed,
# fails here.  Prints each difference; exits 1 if there is any.
set -eu
cc=$1 nm=$2 inc=$3 lib=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '#include <pld.h>\n' >"$tmp/api.c"

# Functions: gcc -aux-info lists every function the translation unit
# declares, one line each: /* FILE:LINE:NC */ extern TYPE NAME (PARAMS);
# Those of the public headers are kept, but static (inline) ones.
"$cc" -std=c11 -fsyntax-only -I"$inc" -aux-info "$tmp/aux" "$tmp/api.c"
awk -v inc="$inc/" '
  index($0, "/* " inc) == 1 {
    sub(/^\/\*[^*]*\*\/ /, "")
    if ($1 == "static") next
    sub(/ \(.*/, "")
    n = split($0, w, /[ *]+/)
    print w[n]
  }' "$tmp/aux" >"$tmp/functions"

# Data objects (-aux-info lists none): the file-scope declarations of the
# preprocessed headers that begin with extern and declare no function.
"$cc" -std=c11 -E -I"$inc" "$tmp/api.c" | awk -v inc="$inc/" '
  /^# [0-9]+ "/ { keep = index($3, "\"" inc) == 1; next }
  keep { text = text " " $0 }
  END {
    depth = 0; stmt = ""
    for (i = 1; i <= length(text); i++) {
      c = substr(text, i, 1)
      if (c == "{") { depth++; continue }
      if (c == "}") {
        depth--
        # The end of a function definition ends its statement too.
        if (depth == 0 && stmt ~ /\)[ \t]*$/) stmt = ""
        continue
      }
      if (depth > 0) continue
      if (c != ";") { stmt = stmt c; continue }
      sub(/^[ \t]+/, "", stmt)
      if (stmt ~ /^extern[ \t]/ && stmt !~ /\(/) {
        sub(/[ \t]*=.*$/, "", stmt)
        gsub(/\[[^]]*\]/, "", stmt)
        n = split(stmt, w, /[ \t*]+/)
        print w[n]
      }
      stmt = ""
    }
  }' >"$tmp/objects"

sort -u "$tmp/functions" "$tmp/objects" >"$tmp/public"
if [ ! -s "$tmp/public" ]; then
  echo "check_exports: no declaration found in $inc/pld.h" >&2
  exit 1
fi

# The exports: every defined dynamic symbol (a named version node would
# show as an absolute symbol: none is expected, and it would be listed).
"$nm" -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' |
  sort -u >"$tmp/exported"

comm -13 "$tmp/public" "$tmp/exported" >"$tmp/extra"
comm -23 "$tmp/public" "$tmp/exported" >"$tmp/missing"
status=0
if [ -s "$tmp/extra" ]; then
  echo "exported by $(basename "$lib") but declared by no public header:"
  sed 's/^/  /' "$tmp/extra"
  status=1
fi
if [ -s "$tmp/missing" ]; then
  echo "declared by the public headers but not exported by $(basename "$lib"):"
  sed 's/^/  /' "$tmp/missing"
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "$(basename "$lib") exports the $(wc -l <"$tmp/public") symbols of the public API, and nothing else"
fi
exit "$status"
