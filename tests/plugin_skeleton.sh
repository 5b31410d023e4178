#!/bin/sh
# The "write your own plugin" story, end to end: install dt into a temporary
# root, build examples/plugin-skeleton there with only pkg-config and the
# installed headers, then load it through DT_PLUGIN_PATH and run a step.
# The same plugin in C++ (fixtures/skeleton_cxx.cc, dt_plugin_v1 defined
# as docs/PLUGINS.md shows) must build without a warning and load too.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Only what a plugin author builds against: headers, libdt, dt.pc. (A full
# `make install` relinks every in-tree plugin module in place, and a dtctl
# of a test running meanwhile then finds the module missing.)
{ make -C "$top_builddir/include" install DESTDIR="$tmp/root" &&
    make -C "$top_builddir/core" install-libLTLIBRARIES DESTDIR="$tmp/root" &&
    make -C "$top_builddir" install-pkgconfigDATA DESTDIR="$tmp/root"; } \
    >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "make install into $tmp/root"; }
# dt.pc is relocatable (${pcfiledir}): no PKG_CONFIG_SYSROOT_DIR needed.
pc=$(find "$tmp/root" -name dt.pc | head -1)
test -n "$pc" || fail "dt.pc not installed"
export PKG_CONFIG_PATH="${pc%/dt.pc}"
inc=$(pkg-config --variable=includedir dt) || fail "pkg-config dt"
test -f "$inc/dt/plugin.h" || fail "dt/plugin.h not at the staged $inc"

cp -R "$top_srcdir/examples/plugin-skeleton" "$tmp/skel"
chmod -R u+w "$tmp/skel"
env MAKEFLAGS= MFLAGS= make -C "$tmp/skel" >"$tmp/skel.log" 2>&1 ||
    { cat "$tmp/skel.log" >&2; fail "building the skeleton against installed headers"; }
grep -q -- "-I$tmp/root" "$tmp/skel.log" ||
    fail "the skeleton was not compiled against the staged headers"

out=$(DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" plugins) || fail "dtctl plugins"
echo "$out"
echo "$out" | grep -Eq '^optimizer +mysgd +1\.0 +available' ||
    fail "dtctl plugins does not list mysgd as available"

# One step with lr 0.5: p - 0.5*g, then with weight decay 0.5.
got=$(DT_PLUGIN_PATH="$tmp/skel" ./optimizer_step mysgd) || fail "optimizer_step"
[ "$got" = "0.75 -2.5 1 3" ] || fail "step without decay gave '$got'"
got=$(DT_PLUGIN_PATH="$tmp/skel" DT_OPTIMIZER_MYSGD_WEIGHT_DECAY=0.5 ./optimizer_step mysgd) ||
    fail "optimizer_step with weight decay"
[ "$got" = "0.5 -2 0.875 2" ] || fail "step with decay 0.5 gave '$got'"
echo "skeleton plugin built out of tree, listed and stepped correctly"

# C++: DT_PLUGIN_EXPORT must make the namespace-scope const external and
# unmangled (without extern "C" it is a local _ZL12dt_plugin_v1, g++ warns
# "visibility attribute ignored", and the loader finds no dt_plugin_v1).
cxx=${CXX:-c++}
if ! command -v "${cxx%% *}" >/dev/null 2>&1; then
    echo "no C++ compiler ($cxx): the C++ plugin is not checked"
    exit 0
fi
mkdir "$tmp/cxx"
$cxx -O2 -Wall -Wextra -fPIC -fvisibility=hidden $(pkg-config --cflags dt) \
    -shared -o "$tmp/cxx/dt_optimizer_cxxsgd.so" \
    "$top_srcdir/tests/fixtures/skeleton_cxx.cc" $(pkg-config --libs dt) \
    >"$tmp/cxx.log" 2>&1 ||
    { cat "$tmp/cxx.log" >&2; fail "building the C++ plugin with $cxx"; }
if grep -q "attribute" "$tmp/cxx.log"; then
    cat "$tmp/cxx.log" >&2
    fail "$cxx warns about DT_PLUGIN_EXPORT in a C++ plugin"
fi
nm -D --defined-only "$tmp/cxx/dt_optimizer_cxxsgd.so" | grep -q ' dt_plugin_v1$' ||
    fail "the C++ plugin does not export an unmangled dt_plugin_v1: $(nm "$tmp/cxx/dt_optimizer_cxxsgd.so" | grep dt_plugin_v1)"
out=$(DT_PLUGIN_PATH="$tmp/cxx" "$DTCTL" plugins) || fail "dtctl plugins (C++)"
echo "$out" | grep -Eq '^optimizer +cxxsgd +1\.0 +available' ||
    { echo "$out"; fail "dtctl plugins does not list the C++ cxxsgd as available"; }
got=$(DT_PLUGIN_PATH="$tmp/cxx" DT_OPTIMIZER_CXXSGD_WEIGHT_DECAY=0.5 ./optimizer_step cxxsgd) ||
    fail "optimizer_step cxxsgd (C++)"
[ "$got" = "0.5 -2 0.875 2" ] || fail "C++ step with decay 0.5 gave '$got'"
echo "the same plugin in C++ built, listed and stepped correctly"
