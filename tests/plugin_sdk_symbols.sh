#!/bin/sh
# The plugin SDK is the installed headers: every dt_* symbol an in-tree
# plugin takes from libdt must be declared in include/dt/*.h. A plugin
# that calls a private libdt function (one a header under core/ declares)
# fails here, naming the plugin and the symbol.
#
# Every in-tree plugin is on the SDK: the exemption list below is empty,
# and a plugin added to it needs a reason written here.
set -u
fail=0
modules="$top_builddir/plugins/modules"
headers="$top_srcdir/include/dt"
[ -d "$modules" ] || { echo "FAIL: no $modules (build first)"; exit 1; }
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }

exempt=""
public=$(mktemp) || exit 1
trap 'rm -f "$public"' EXIT INT TERM
grep -ohE '\bdt_[A-Za-z0-9_]+\b' "$headers"/*.h | sort -u >"$public"

checked=0
for so in "$modules"/dt_*.so; do
    [ -e "$so" ] || continue
    name=$(basename "$so" .so)
    case " $exempt " in *" $name "*) echo "skip: $name (not on the SDK yet)"; continue ;; esac
    syms=$(nm -D --undefined-only "$so" | awk '{print $NF}' | sed 's/@.*//' |
        grep '^dt_' | sort -u)
    bad=$(printf '%s\n' "$syms" | grep . | grep -vxF -f "$public")
    if [ -n "$bad" ]; then
        for s in $bad; do
            echo "FAIL: $name uses $s, which no installed header (include/dt) declares"
        done
        fail=1
    else
        echo "ok: $name uses only the installed API ($(printf '%s\n' "$syms" | grep -c .) dt_* symbols)"
    fi
    checked=$((checked + 1))
done
[ "$checked" -ge 10 ] || { echo "FAIL: only $checked plugins checked in $modules"; fail=1; }
exit $fail
