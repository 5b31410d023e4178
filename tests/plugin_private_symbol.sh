#!/bin/sh
# The SDK boundary holds, shown failing once: a plugin that calls a private
# libdt function (fixtures/fixture_private_call.c calls core/coll's
# dt_coll_ring) does not link against libdt with -Wl,--no-undefined (as
# plugins/plugin.mk links every in-tree plugin), and when linked anyway
# (against the tests' libdt_private) tests/plugin_sdk_symbols.sh names it.
# The same source calling only the public API links and passes.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
cc=${CC:-cc}
libs="$top_builddir/core/.libs"
src="$top_srcdir/tests/fixtures/fixture_private_call.c"
sym=dt_coll_ring

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/public" "$tmp/private"

# The symbol exists, inside libdt: the link below fails because libdt does
# not export it, not because it is gone.
nm -D --defined-only "$libs/libdt_private.so" | awk '{print $NF}' | grep -qxF "$sym" ||
    fail "$sym is no longer a libdt function: point the fixture at another private one"

link() { # OUTPUT LIB [CFLAGS...]
    out=$1 lib=$2
    shift 2
    $cc -shared -fPIC -fvisibility=hidden -I"$top_srcdir/include" -I"$top_builddir" \
        "$@" -o "$out" "$src" -L"$libs" -l"$lib" -Wl,--no-undefined
}

# 1. Against the exported libdt: the public-only variant links ...
link "$tmp/public/dt_optimizer_sneaky.so" dt -DFIXTURE_PUBLIC_ONLY \
    >"$tmp/public.log" 2>&1 ||
    { cat "$tmp/public.log"; fail "the public-only fixture does not link against libdt"; }
# ... and the one that calls the private function does not, naming it.
if link "$tmp/sneaky.so" dt >"$tmp/private.log" 2>&1; then
    fail "a plugin calling the private $sym linked against libdt"
fi
cat "$tmp/private.log"
grep -q "undefined reference to .$sym" "$tmp/private.log" ||
    fail "the link failed, but not on $sym"
echo "ok: linking a plugin that calls $sym against libdt fails"

# 2. Linked anyway (against every dt_* symbol), the SDK check names it.
link "$tmp/private/dt_optimizer_sneaky.so" dt_private >"$tmp/link2.log" 2>&1 ||
    { cat "$tmp/link2.log"; fail "linking the fixture against libdt_private"; }
DT_SDK_MODULES="$tmp/public" DT_SDK_MIN_PLUGINS=1 \
    sh "$top_srcdir/tests/plugin_sdk_symbols.sh" >"$tmp/check1.log" 2>&1 ||
    { cat "$tmp/check1.log"; fail "the SDK check refuses the public-only fixture"; }
if DT_SDK_MODULES="$tmp/private" DT_SDK_MIN_PLUGINS=1 \
    sh "$top_srcdir/tests/plugin_sdk_symbols.sh" >"$tmp/check2.log" 2>&1; then
    cat "$tmp/check2.log"
    fail "the SDK check passed a plugin that calls $sym"
fi
cat "$tmp/check2.log"
grep -q "FAIL: dt_optimizer_sneaky uses $sym" "$tmp/check2.log" ||
    fail "the SDK check failed, but did not name $sym"
echo "ok: tests/plugin_sdk_symbols.sh names $sym"
