#!/bin/sh
# plan_spec_full.sh — `dtctl plan` whose simulation spec cannot be written
# whole (a full disk; /dev/full stands in for it) stops with an error
# naming the spec, instead of planning from a cut spec (or, on /dev/full,
# leaving dt-plan-sim to read zeros for ever: the timeout catches that).
# Skips (77) without SimGrid or /dev/full.
set -u
: "${DTCTL:?run through make check}"
[ -x "$top_builddir/core/dt-plan-sim" ] || {
    echo "SKIP: dt-plan-sim not built: configure found no SimGrid"; exit 77; }
[ -c /dev/full ] && [ -w /dev/full ] || { echo "SKIP: no writable /dev/full"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-plan-full.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }

# Layer times as the trainer writes them, and an empty profile (defaults).
printf 'batch 64\nforward 0.001\noptimizer 0.0001\n0.0005 4000\n0.0005 400000\n' \
    >"$tmp/t.layers"
: >"$tmp/none.ini"
plan() {
    timeout 60 "$DTCTL" plan --layer-times "$tmp/t.layers" --hosts 2 \
        --network 10Gbit --profile "$tmp/none.ini" "$@" >"$tmp/out" 2>&1
}

plan --spec "$tmp/ok.spec" || fail "plan with a writable spec"
grep -q '^layer = ' "$tmp/ok.spec" || fail "the spec has no layer line"

plan --spec /dev/full
rc=$?
[ $rc -eq 124 ] && fail "dtctl plan --spec /dev/full hung (the simulator read the device)"
[ $rc -ne 0 ] || fail "dtctl plan --spec /dev/full succeeded"
grep -q "cannot write the simulation spec /dev/full: No space left on device" "$tmp/out" ||
    fail "no error naming the spec and why"
grep -q "^ *2 " "$tmp/out" && fail "a plan was printed from a spec that was not written"

# The realistic case, where root may mount: TMPDIR on a full file system
# (the temporary spec's directory is named, the spec itself removed).
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1 &&
    unshare -m true 2>/dev/null; then
    mkdir "$tmp/small"
    DTCTL=$DTCTL tmp=$tmp unshare -m sh -c '
        mount -t tmpfs -o size=4k tmpfs "$tmp/small" || exit 77
        head -c 8192 /dev/zero >"$tmp/small/fill" 2>/dev/null
        TMPDIR="$tmp/small" timeout 60 "$DTCTL" plan --layer-times "$tmp/t.layers" \
            --hosts 2 --network 10Gbit --profile "$tmp/none.ini" >"$tmp/out" 2>&1
        rc=$?
        ls "$tmp/small" >"$tmp/left"
        exit $rc'
    rc=$?
    if [ $rc -ne 77 ]; then
        [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "TMPDIR full: exit $rc"
        grep -q "cannot write the simulation spec in $tmp/small: No space left on device" "$tmp/out" ||
            fail "TMPDIR full: no error naming the directory"
        [ "$(cat "$tmp/left")" = fill ] || fail "TMPDIR full: the cut spec was left: $(cat "$tmp/left")"
    fi
fi
echo "ok"
