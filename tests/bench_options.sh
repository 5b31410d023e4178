#!/bin/sh
# bench_options.sh — dtctl bench checks every option with the workers' own
# parser (bench/bench_args.h) before it starts a worker: a bad value exits
# 2 with one line naming it and what is allowed, and no rank runs. The
# worker's other options (--stat, --warmup, --op) pass through; sizes
# under one float per rank are refused or skipped with a note; a MAX past
# memory is said with its bytes; compare-allreduce.sh fails when dt fails
# and joins sizes that are not whole floats.
set -u
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?set by make check}" "${top_builddir:?set by make check}"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-bench-options.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 99            # no ./conf/cluster.ini here
unset DT_CONFIG DT_CLUSTER_NP DT_TRANSPORT DT_CLUSTER_TRANSPORT DT_LAUNCHER \
    DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dt() { timeout -k 5 120 "$DTCTL" "$@"; }

# ARGS... (after `dtctl bench allreduce`): exit 2, one line matching $want,
# and no worker (no "[0]" or "rank 0" line).
refused() {
    dt bench allreduce "$@" >out 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "bench allreduce $*: exit $rc, want 2: $(cat out)"
    grep -q -- "$want" out || fail "bench allreduce $*: want '$want', got: $(cat out)"
    [ "$(wc -l <out)" -eq 1 ] || fail "bench allreduce $*: want one line, got: $(cat out)"
    ! grep -q '^\[[0-9]*\]\|rank 0' out || fail "bench allreduce $*: a worker ran: $(cat out)"
}
sizes="want MIN:MAX, bytes from 4 (one float32) to 1024T"
want="--sizes '8K:4K': MIN is above MAX; $sizes"; refused --sizes 8K:4K
want="--sizes '4K': not MIN:MAX; $sizes"; refused --sizes 4K
want="--sizes '-4K:8K': MIN '-4K' is not such a size; $sizes"; refused --sizes -4K:8K
want="--sizes '4K:-1': MAX '-1' is not such a size; $sizes"; refused --sizes 4K:-1
want="--sizes '3:3': MIN '3' is not such a size; $sizes"; refused --sizes 3:3
want="--sizes '1:3': MIN '1' is not such a size"; refused --sizes 1:3
want="--sizes '4K:2048T': MAX '2048T' is not such a size"; refused --sizes 4K:2048T
want="--iters '0': want a whole number from 1 to 10000000"; refused --iters 0
want="--iters '-5': want a whole number from 1"; refused --iters -5
want="--iters 'abc': want a whole number from 1"; refused --iters abc
want="--iters '99999999999': want a whole number from 1"; refused --iters 99999999999
want="--factor '1': want a whole number from 2 to 1024"; refused --factor 1
want="--factor '2x': want a whole number from 2"; refused --factor 2x
want="--warmup '-1': want a whole number from 0"; refused --warmup -1
want="--stat 'avg': want median or mean"; refused --stat avg
want="--op 'bcast': want allreduce or allgather"; refused --op bcast
want="dtctl bench allreduce --op allgather: two operations"; refused --op allgather
# allgather at 3 ranks: 4 and 8 bytes hold no float per rank
dt bench allgather -n 3 --sizes 4:8 >out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -- "--sizes 4:8: allgather at 3 ranks needs MAX of at least 12 bytes" out &&
    ! grep -q '^\[[0-9]*\]' out || fail "bench allgather -n 3 --sizes 4:8: exit $rc: $(cat out)"
[ $fails -eq 0 ] && echo "ok: bad values refused before any worker, each named"

# What the worker's usage offers, dtctl passes on.
export DT_COLLECTIVES_SHM=off
dt bench allreduce --sizes 4:12 --iters 1 --stat mean --warmup 1 >out 2>&1 ||
    fail "bench --stat mean --warmup 1: $(cat out)"
grep -q "mean of up to 5 iterations (1 warm-up)" out || fail "bench --stat/--warmup not passed: $(cat out)"
dt bench --op allgather -n 2 --sizes 8:8 --iters 5 >out 2>&1 && grep -q "# dt allgather: 2 ranks" out ||
    fail "bench --op allgather: $(cat out)"
# Sizes not of whole floats: the bytes of the floats moved, never 0.
dt bench allreduce --sizes 6:6 --iters 5 >out 2>&1 ||
    fail "bench --sizes 6:6: $(cat out)"
grep -qE '^\[0\] +4 +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$' out || fail "bench --sizes 6:6: want a 4-byte row: $(cat out)"
# allgather: a size under one float per rank is skipped with a note, not
# shown as a 0-byte row.
dt bench allgather -n 3 --sizes 4:16 --iters 5 >out 2>&1 || fail "bench allgather 4:16: $(cat out)"
grep -q "# 4 bytes: under one float32 per rank at 3 ranks, skipped" out &&
    grep -qE '^\[0\] +12 +3 .* ok$' out && ! grep -qE '^\[0\] +0 ' out ||
    fail "bench allgather -n 3 --sizes 4:16: $(cat out)"
# Too much to allocate: said with the bytes, by the rank that tried.
# (under ASan a malloc this large aborts unless it may return NULL, as
# libc's does)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" \
    dt bench allreduce -n 1 --sizes 4K:256T --iters 5 >out 2>&1 && fail "bench 4K:256T ran"
grep -q "rank 0: cannot allocate 2 buffers of 281474976710656 bytes (--sizes MAX)" out ||
    fail "bench 4K:256T: the failed allocation unsaid: $(cat out)"
[ $fails -eq 0 ] && echo "ok: --stat, --warmup and --op pass; sizes under a float, allocation failures said"

# compare-allreduce.sh: a dt run that fails after printing rows fails the
# script (piped into sed, it gave a table and exit 0); 6 bytes, shown as 4
# by both benchmarks, is joined (Open MPI's 6 was dropped unsaid).
cmp=$top_srcdir/bench/compare-allreduce.sh
if [ -x "$top_builddir/bench/mpi_allreduce" ] && command -v mpirun >/dev/null; then
    mkdir -p fake/core fake/bench
    ln -s "$top_builddir/bench/mpi_allreduce" fake/bench/mpi_allreduce
    cat >fake/core/dtctl <<'STUB'
#!/bin/sh
echo "[0]              4            1        6.00       0.001       0.001     ok"
echo "dt: error: rank 1 on localhost exited with code 1" >&2
exit 1
STUB
    chmod +x fake/core/dtctl
    sh "$cmp" --builddir fake --sizes 4:4 --iters 5 --rounds 1 >out 2>&1 &&
        fail "compare-allreduce.sh with a failing dt exited 0: $(cat out)"
    grep -q "dtctl bench allreduce failed" out || fail "compare-allreduce.sh: failure unsaid: $(cat out)"
    # Open MPI's own allocations at exit are not ours to leak-check
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    sh "$cmp" --builddir "$top_builddir" --sizes 6:12 --iters 5 --rounds 2 >out 2>&1 ||
        fail "compare-allreduce.sh --sizes 6:12: $(cat out)"
    grep -A3 "ratio = mpi's time / dt's" out | grep -qE '^ +4 +[0-9.]+ +[0-9.]+ +[0-9.]+ [0-9.]+-[0-9.]+$' ||
        fail "compare-allreduce.sh: no joined 4-byte row: $(cat out)"
    [ $fails -eq 0 ] && echo "ok: compare-allreduce.sh fails with dt and joins on whole floats"
else
    echo "skip: compare-allreduce.sh (no mpi_allreduce or mpirun)"
fi
# a configuration that does not load: said once, exit 2, no worker
"$DTCTL" bench allreduce --set foo >out 2>&1; rc=$?
[ $rc -eq 2 ] && [ "$(grep -c "want SECTION.KEY=VALUE" out)" -eq 1 ] ||
    fail "bench --set foo: want exit 2 and the error once, got $rc: $(cat out)"
[ $fails -eq 0 ] || exit 1
