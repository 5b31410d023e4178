#!/bin/sh
# install_staged.sh — issue 19 item 8: install into a DESTDIR, then use
# the staged tree as a user would, with nothing pointing back at the
# build: pkg-config finds dt through the relocatable dt.pc (no
# PKG_CONFIG_SYSROOT_DIR), the plugin skeleton builds against it, the
# staged dtctl lists the staged plugins and runs a small training job with
# the staged dt-train; DT_LIBEXECDIR overrides where the trainer is; the
# manual pages, the docs and the examples are installed.
#
# Everything is installed by its own make target except the plugin
# modules, which are copied: `make install` relinks each module in place
# (libtool), and a test running meanwhile would find it missing (see
# tests/plugin_skeleton.sh).
set -u
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/out" ] && cat "$tmp/out" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-staged.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
root="$tmp/root"
B=$top_builddir

{ make -C "$B/include" install DESTDIR="$root" &&
  make -C "$B/core" install-libLTLIBRARIES install-binPROGRAMS \
      install-pkglibexecPROGRAMS DESTDIR="$root" &&
  make -C "$B/man" install DESTDIR="$root" &&
  make -C "$B/docs" install DESTDIR="$root" &&
  make -C "$B/examples" install DESTDIR="$root" &&
  make -C "$B" install-pkgconfigDATA DESTDIR="$root"; } >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "make install DESTDIR=$root"; }
dtctl=$(find "$root" -type f -name dtctl | head -1)
pc=$(find "$root" -name dt.pc | head -1)
[ -n "$dtctl" ] && [ -n "$pc" ] || fail "dtctl or dt.pc not installed"
export PKG_CONFIG_PATH="${pc%/dt.pc}"
unset PKG_CONFIG_SYSROOT_DIR DT_PLUGIN_PATH DT_LIBEXECDIR DT_CONFIG
libdir=$(pkg-config --variable=libdir dt) || fail "pkg-config dt"
plugindir=$(pkg-config --variable=plugindir dt)
case "$libdir" in "$root"/*) ;; *) fail "pkg-config libdir $libdir is not in $root";; esac
test -e "$libdir/libdt.so" || fail "no libdt.so at pkg-config's libdir $libdir"
mkdir -p "$plugindir"
for so in "$B"/plugins/modules/*.so; do cp -L "$so" "$plugindir/"; done

# Documentation, examples, manual pages.
for f in share/doc/dt/README.md share/doc/dt/PLUGINS.md \
         share/doc/dt/examples/plugin-skeleton/mysgd.c \
         share/man/man1/dtctl.1 share/man/man5/dt-config.5 share/man/man7/dt-plugins.7; do
    find "$root" -path "*/$f" | grep -q . || fail "$f not installed"
done

# The skeleton, built with the staged pkg-config alone.
cp -R "$top_srcdir/examples/plugin-skeleton" "$tmp/skel" && chmod -R u+w "$tmp/skel"
env MAKEFLAGS= MFLAGS= make -C "$tmp/skel" >"$tmp/out" 2>&1 || fail "building the skeleton"
grep -q -- "-I$root" "$tmp/out" || fail "the skeleton did not use the staged headers (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"

# The staged dtctl (its libdt from the staged libdir) finds the staged
# plugins and trainer by itself, from any directory.
export LD_LIBRARY_PATH="$libdir"
cd "$tmp" || exit 99
"$dtctl" plugins >"$tmp/out" 2>&1 || fail "staged dtctl plugins"
grep -Eq "^optimizer +lamb .*available +$plugindir/" "$tmp/out" ||
    fail "the staged dtctl does not list the staged plugins"
cp "$tmp/skel/dt_optimizer_mysgd.so" "$plugindir/"
cat >"$tmp/job.ini" <<'INI'
[train]
epochs = 1
batch_size = 32
optimizer = mysgd
lr = 0.05
[model]
layers = flatten linear(10)
[data]
train_samples = 640
test_samples = 200
INI
data=/usr/share/datasets/fashion-mnist
if [ ! -d "$data" ]; then echo "SKIP: no $data (dataset-fashion-mnist)"; exit 77; fi
"$dtctl" run -n 2 --set data.path="$data" "$tmp/job.ini" >"$tmp/out" 2>&1 ||
    fail "a job with the staged dtctl"
grep -q "final test accuracy" "$tmp/out" || fail "no final accuracy"
# DT_LIBEXECDIR overrides where dt-train is.
if DT_LIBEXECDIR="$tmp/nowhere" "$dtctl" run -n 1 --set data.path="$data" \
    "$tmp/job.ini" >"$tmp/out" 2>&1; then
    fail "DT_LIBEXECDIR=nowhere still ran"
fi
grep -q "$tmp/nowhere/dt-train is missing" "$tmp/out" || fail "DT_LIBEXECDIR not used"
echo "PASS: staged install: pkg-config, skeleton, plugins and a job"
