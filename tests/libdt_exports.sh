#!/bin/sh
# libdt.so exports exactly the SDK: the functions and variables that
# include/dt/*.h declares, plus core/libdt.transitional.sym, nothing more —
# and defines every one of them (a declared function that libdt lacks
# would fail only in a user's link).
set -u
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
lib="$top_builddir/core/.libs/libdt.so"
[ -e "$lib" ] || { echo "FAIL: no $lib (build first)"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
sh "$top_srcdir/core/public_symbols.sh" "$top_srcdir/include/dt" \
    "$top_srcdir/core/libdt.transitional.sym" >"$tmp/expected" ||
    { echo "FAIL: core/public_symbols.sh"; exit 1; }
# Defined dynamic symbols, without the version-node names (type A).
nm -D --defined-only "$lib" | awk '$2 != "A" { print $NF }' | sed 's/@.*//' |
    LC_ALL=C sort -u >"$tmp/exported"

fail=0
extra=$(LC_ALL=C comm -13 "$tmp/expected" "$tmp/exported")
missing=$(LC_ALL=C comm -23 "$tmp/expected" "$tmp/exported")
for s in $extra; do
    echo "FAIL: libdt.so exports $s, which neither include/dt nor core/libdt.transitional.sym names"
    fail=1
done
for s in $missing; do
    echo "FAIL: $s is declared (include/dt or the transitional list) but libdt.so does not define it"
    fail=1
done
npub=$(sh "$top_srcdir/core/public_symbols.sh" "$top_srcdir/include/dt" | grep -c .)
nall=$(grep -c . "$tmp/exported")
echo "libdt.so exports $nall symbols: $npub public (include/dt), $((nall - npub)) transitional"
exit $fail
