#!/bin/sh
# The "write your own transport" story, end to end: install dt's SDK into a
# temporary root, build examples/transport-skeleton there with only
# pkg-config's flags, load it through DT_PLUGIN_PATH and run the C API
# example (every collective, checked exactly on every rank) at N = 1..4
# and a short `dtctl bench allreduce` over it. A copy of the skeleton that
# corrupts one byte per message must fail, so the checks are known to bite.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
ex="$top_builddir/examples/allreduce"
[ -x "$ex" ] || fail "$ex is not built"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# Never inherit a job from whoever runs the tests.
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_INTERFACE \
    DT_TRANSPORT DT_CLUSTER_TRANSPORT OMPI_COMM_WORLD_RANK SLURM_PROCID 2>/dev/null

# Only what a plugin author builds against: headers, libdt, dt.pc (as
# plugin_skeleton.sh: a full `make install` relinks the in-tree modules).
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
test -f "$inc/dt/auth.h" || fail "dt/auth.h not installed"

build() { # DIR: build the skeleton copied there, against the installed SDK
    env MAKEFLAGS= MFLAGS= make -C "$1" >"$1.log" 2>&1 ||
        { cat "$1.log" >&2; fail "building $1 against the installed headers"; }
    grep -q -- "-I$tmp/root" "$1.log" ||
        fail "$1 was not compiled against the installed headers"
}
cp -R "$top_srcdir/examples/transport-skeleton" "$tmp/skel"
chmod -R u+w "$tmp/skel"
rm -f "$tmp/skel/dt_transport_skel.so"
build "$tmp/skel"
lines=$(wc -l <"$tmp/skel/skel.c")
echo "skeleton: skel.c, $lines lines, built with pkg-config's flags only"

# Every byte over the skeleton: on one host the core's collectives would
# otherwise meet in shared memory and never touch the transport.
export DT_COLLECTIVES_SHM=off
out=$(DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" plugins) || fail "dtctl plugins"
echo "$out" | grep -Eq '^transport +skel +1\.0 +available' ||
    { echo "$out"; fail "dtctl plugins does not list transport skel as available"; }

# DIR NP: the allreduce example over the skeleton in DIR; 0 when every rank
# checked every collective and rank 0 said so.
allreduce() {
    DT_PLUGIN_PATH="$1" DT_CLUSTER_TIMEOUT=30s "$DTCTL" --transport=skel \
        run -n "$2" -- "$ex" >"$tmp/out" 2>&1 &&
        grep -q "allreduce example: $2 ranks\{0,1\}, all collectives correct" "$tmp/out"
}
for np in 1 2 3 4; do
    allreduce "$tmp/skel" "$np" || { cat "$tmp/out"; fail "allreduce at N=$np over skel"; }
    echo "ok: allreduce example, $np rank(s), over transport skel"
done
# The ranks really talked through skel (a job of one loads no transport).
DT_PLUGIN_PATH="$tmp/skel" DT_LOG_LEVEL=debug "$DTCTL" --transport=skel \
    run -n 2 -- "$ex" 2>&1 | grep -q "joined the job: rank 1 of 2.*transport skel" ||
    fail "rank 1 did not join through transport skel"

# A short benchmark: every row's check column must say ok.
DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" bench allreduce -n 3 --transport skel \
    --sizes 4K:1M --factor 16 --iters 5 >"$tmp/bench" 2>&1 ||
    { cat "$tmp/bench"; fail "dtctl bench allreduce over skel"; }
cat "$tmp/bench"
rows=$(grep -cE '^\[0\] +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$' "$tmp/bench")
[ "$rows" = 3 ] || fail "bench: want 3 rows (4K, 64K, 1M) checked ok, got $rows"
# The header says the rows timed skel, not the shared-memory segment.
grep -q "# data path: transport skel (\[collectives\] shm = off)" "$tmp/bench" ||
    fail "bench: the header does not say the data went over transport skel"
DT_COLLECTIVES_SHM=auto DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" bench allreduce \
    -n 2 --transport skel --sizes 4K:4K --iters 5 >"$tmp/bench" 2>&1 ||
    { cat "$tmp/bench"; fail "dtctl bench with shm = auto"; }
grep -q "# data path: shared memory: all 2 ranks on this host; transport skel carries none" "$tmp/bench" ||
    { cat "$tmp/bench"; fail "bench: the header does not say shared memory carried the data"; }
# Without -n the job's np stands (2 only when nothing says): it was
# overridden by a 2 given as -n
DT_CLUSTER_NP=3 DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" bench allreduce --transport skel \
    --sizes 4K:4K --iters 5 >"$tmp/bench" 2>&1 ||
    { cat "$tmp/bench"; fail "dtctl bench with DT_CLUSTER_NP=3"; }
grep -q "dt allreduce: 3 ranks" "$tmp/bench" || { cat "$tmp/bench"; fail "bench: DT_CLUSTER_NP=3 ignored"; }
DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" bench allreduce --transport skel \
    --sizes 4K:4K --iters 5 >"$tmp/bench" 2>&1 ||
    { cat "$tmp/bench"; fail "dtctl bench without -n"; }
grep -q "dt allreduce: 2 ranks" "$tmp/bench" || { cat "$tmp/bench"; fail "bench: not 2 ranks by default"; }
# A size not of whole floats shows the bytes of its floats (a 3-byte size
# was shown as 3 bytes of bandwidth; under 4 bytes dtctl refuses it:
# bench_options.sh); the header says the 5 iterations run, not the 1
# asked for
DT_PLUGIN_PATH="$tmp/skel" "$DTCTL" bench allreduce --transport skel \
    --sizes 6:6 --iters 1 >"$tmp/bench" 2>&1 ||
    { cat "$tmp/bench"; fail "dtctl bench --sizes 6:6"; }
grep -q "median of up to 5 iterations" "$tmp/bench" || { cat "$tmp/bench"; fail "bench: iterations not as run"; }
grep -qE '^\[0\] +4 +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$' "$tmp/bench" ||
    { cat "$tmp/bench"; fail "bench: 6 bytes not shown as its one whole float"; }

# The same checks against a skeleton that flips a bit of every received
# message: the example must fail, else the test proves nothing.
cp -R "$tmp/skel" "$tmp/bad"
rm -f "$tmp/bad/dt_transport_skel.so"
sed -i 's|memcpy((\*r)->buf, hit->data, hit->len);|&\n        if (hit->len) ((char *)(*r)->buf)[0] ^= 1;|' "$tmp/bad/skel.c"
grep -q '\^= 1' "$tmp/bad/skel.c" || fail "could not plant the fault in the copy"
build "$tmp/bad"
if allreduce "$tmp/bad" 2; then
    fail "a skeleton that corrupts messages passed the allreduce example"
fi
grep -q "wrong at index" "$tmp/out" || { cat "$tmp/out"; fail "corrupt skeleton: no mismatch reported"; }
echo "ok: a skeleton that corrupts messages fails the example ($(grep -m1 -o 'rank [0-9]* of 2: [^(]*' "$tmp/out"))"
echo "transport skeleton built out of tree, passed allreduce at N=1..4 and the bench"
