#!/bin/sh
# The plugin SDK is the installed headers: every dt_* symbol an in-tree
# plugin takes from libdt must be declared in include/dt/*.h. A plugin
# that calls a private libdt function (one a header under core/ declares)
# fails here, naming the plugin and the symbol. (It already fails to link
# when libdt does not export the symbol at all: plugins/plugin.mk links
# with -Wl,--no-undefined; this check also covers the transitional ones.)
#
# Not yet on the SDK: core/libdt.transitional.sym lists each private
# symbol libdt still exports and who uses it (today the optimizers sgd,
# adam and adamw through core/cuda/backend.h, and dtctl and dt-train; ucx
# and every other plugin use only the SDK). A plugin may use the public API plus the lines
# that name it, nothing else; a line whose user no longer takes its symbol
# fails too, so that the list only shrinks.
#
# DT_SDK_MODULES (default: the build tree's plugins/modules) and
# DT_SDK_MIN_PLUGINS (default 10) let tests/plugin_private_symbol.sh run
# this check on a fixture.
set -u
fail=0
modules=${DT_SDK_MODULES:-$top_builddir/plugins/modules}
min=${DT_SDK_MIN_PLUGINS:-10}
transitional="$top_srcdir/core/libdt.transitional.sym"
[ -d "$modules" ] || { echo "FAIL: no $modules (build first)"; exit 1; }
[ -f "$transitional" ] || { echo "FAIL: no $transitional"; exit 1; }
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# The public API, as the build exports it (without the transitional list).
sh "$top_srcdir/core/public_symbols.sh" "$top_srcdir/include/dt" >"$tmp/public" ||
    { echo "FAIL: core/public_symbols.sh"; exit 1; }
# SYMBOL USER lines, one per user.
sed -e 's/#.*//' "$transitional" |
    awk 'NF { for (i = 2; i <= NF; i++) print $1, $i }' >"$tmp/transitional"

# The dt_* symbols a shared object or program takes from elsewhere.
# nm's own failure must fail the test (in a pipeline its status is lost,
# and an empty list passes every check).
undefined_dt() {
    nm -D --undefined-only "$1" >"$tmp/nm" ||
        { echo "FAIL: nm -D $1 failed" >&2; return 1; }
    awk '{print $NF}' "$tmp/nm" | sed 's/@.*//' | grep '^dt_' | sort -u
}

checked=0
for so in "$modules"/dt_*.so; do
    [ -e "$so" ] || continue
    name=$(basename "$so" .so)               # dt_transport_ucx
    user=$(echo "$name" | sed 's/^dt_\([a-z]*\)_/\1\//')   # transport/ucx
    awk -v u="$user" '$2 == u { print $1 }' "$tmp/transitional" |
        cat "$tmp/public" - | sort -u >"$tmp/allowed"
    undefined_dt "$so" >"$tmp/used" || { fail=1; continue; }
    bad=$(grep -vxF -f "$tmp/allowed" "$tmp/used")
    if [ -n "$bad" ]; then
        for s in $bad; do
            echo "FAIL: $name uses $s, which no installed header (include/dt) declares"
        done
        fail=1
    else
        nt=$(grep -c . "$tmp/used")
        ntr=$(awk -v u="$user" '$2 == u { print $1 }' "$tmp/transitional" |
            grep -cxF -f "$tmp/used")
        if [ "$ntr" -gt 0 ]; then
            echo "ok: $name uses the installed API and $ntr transitional symbols ($nt dt_* symbols)"
        else
            echo "ok: $name uses only the installed API ($nt dt_* symbols)"
        fi
    fi
    checked=$((checked + 1))
done
[ "$checked" -ge "$min" ] || { echo "FAIL: only $checked plugins checked in $modules"; fail=1; }

# Every transitional line still needed by each user it names (users not
# built here, e.g. nccl without NCCL, are skipped).
[ -z "${DT_SDK_MODULES:-}" ] &&
while read -r sym user; do
    case $user in
    */*) obj="$modules/dt_$(echo "$user" | tr / _).so" ;;
    *) obj="$top_builddir/core/.libs/$user" ;;
    esac
    [ -e "$obj" ] || { echo "skip: $user not built ($sym)"; continue; }
    undefined_dt "$obj" >"$tmp/uses" || { fail=1; continue; }
    if ! grep -qxF "$sym" "$tmp/uses"; then
        echo "FAIL: core/libdt.transitional.sym lists $sym for $user, which no longer uses it: remove the line (or the user)"
        fail=1
    fi
done <"$tmp/transitional"
exit $fail
