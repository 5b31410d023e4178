#!/bin/sh
# finalize_hung.sh — a rank stuck after the job's last collective (rank 1
# of 3 stops itself where it would call dt_finalize: peer_exit's
# nofinalize mode) is the one dtctl names, as hung (exit 124): the others
# wait for it in dt_finalize's barrier for [cluster] timeout, then name
# it and record it as the job's failure. They were named instead (`rank 0
# on localhost exited with code 4`), and a dt-train job so stuck was
# restarted blaming a rank that had finished. The wait is the 2 s
# timeout, bounded by the store; `timeout -s KILL` only guards a hang.
set -u
pe="$top_builddir/tests/peer_exit"
if [ ! -x "$pe" ] || [ ! -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    echo "SKIP: peer_exit or the tcp plugin is not built"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-finalize-hung.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_CONFIG 2>/dev/null
fail() { echo "FAIL: $*"; cat "$tmp/out"; exit 1; }

PEER_EXIT_RANK=1 PEER_EXIT_MODE=nofinalize timeout -s KILL 90 "$DTCTL" run \
    -n 3 --set cluster.timeout=2s --set cluster.kill_grace=1s -- "$pe" \
    >"$tmp/out" 2>&1
rc=$?
grep -q "^\[1\] peer_exit: rank 1 stops (SIGSTOP) before dt_finalize" "$tmp/out" ||
    fail "rank 1 did not stop before dt_finalize"
[ "$rc" -eq 124 ] || fail "dtctl exited $rc, want 124 (a hung rank)"
grep -q "^dt: error: rank 1 on [^ ]* hung" "$tmp/out" ||
    fail "dtctl does not name rank 1 as hung"
grep -Eq "^dt: error: rank [02] on [^ ]* exited" "$tmp/out" &&
    fail "dtctl names a rank that waited for rank 1 as the failure"
# each waiting rank says whom it waited for, once its barrier timed out
# (dtctl may stop the second before it says it)
grep -Eq "^\[[02]\] .*error: rank [02]: dt_finalize: rank 1 did not reach dt_finalize within 2 s" "$tmp/out" ||
    fail "no waiting rank names rank 1 in its dt_finalize error"
if grep -E "dt_finalize: ranks? [0-9, and]* did not reach" "$tmp/out" |
        grep -v "dt_finalize: rank 1 did not reach"; then
    fail "a rank named others than rank 1 as missing"
fi
echo "ok: a rank stuck before dt_finalize is named as hung by the others and by dtctl (exit 124)"

# Every rank arrives: nothing is named, the job exits 0.
PEER_EXIT_RANK=-1 PEER_EXIT_MODE=nofinalize timeout -s KILL 90 "$DTCTL" run \
    -n 3 --set cluster.timeout=2s -- "$pe" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "a job whose ranks all finalize exited $rc"
grep -q "did not reach dt_finalize" "$tmp/out" && fail "a rank was named missing though all arrived"
[ "$(grep -c "dt_finalize: ok$" "$tmp/out")" -eq 3 ] || fail "not every rank's dt_finalize returned OK"
echo "ok: every rank in dt_finalize: nothing named, exit 0"
exit 0
