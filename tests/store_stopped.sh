#!/bin/sh
# store_stopped.sh — a rank that times out on a hung peer while the
# rendezvous store does not answer (dtctl stopped; the same as a host cut
# off from dtctl's) still ends soon after its timeout, naming the peer.
# Rank 1 stops itself after the first allreduce (peer_exit's pause mode);
# once it is stopped, dtctl is stopped too, so every store request of rank
# 0's failure path finds no store. Rank 0 must end while dtctl is still
# stopped: its failure path (the failure record, the tcp transport's
# questions to the other ranks) once asked the store with the client's
# 60 s I/O limit per request, so it lingered 2 to 3 minutes after its
# timeout; a rank cut off from dtctl held its GPU, and a rank 0 the
# checkpoint lock a restart needs. Cases: the tcp transport's failure
# path (shm off), the shared-memory collectives' (one host: every
# collective goes through the segment), and ucx's when it is built (its
# failure path asks the store nothing: a guard that it stays so).
# The 45 s wait for rank 0's end is a hang guard, not a measurement (it
# takes 9 s: 4 s of timeout, 5 s for the store); each case's own message
# that the store did not answer is what shows the bound at work.
# Last, a job that succeeded, its ranks in dt_finalize while dtctl is
# stopped: each ends within 5 s, saying that it leaves without the
# others, where it waited the timeout and 65 s in the store's barrier.
set -u
pe="$top_builddir/tests/peer_exit"
mods="$top_builddir/plugins/modules"
if [ ! -x "$pe" ] || [ ! -e "$mods/dt_transport_tcp.so" ]; then
    echo "SKIP: peer_exit or the tcp plugin is not built"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-store-stopped.XXXXXX") || exit 1
bg="" ctl="" pid0="" pid1=""
cleanup() {
    [ -n "$ctl" ] && kill -CONT "$ctl" 2>/dev/null
    for p in $bg $ctl $pid0 $pid1; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_CONFIG DT_TRANSPORT \
    DT_LAUNCHER 2>/dev/null
fail() { echo "FAIL: $case: $*"; cat "$tmp/out"; exit 1; }

state() { # pid -> its state letter (R, S, T, Z, ...), empty when gone
    sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null
}
# Wait (at most $3 tenths of a second, a hang guard) until pid is in one
# of the states ("" matches a process that is gone).
wait_state() { # pid states tenths
    i=0
    while [ $i -lt "$3" ]; do
        s=$(state "$1")
        case "$s" in [$2]) return 0 ;; "") case "$2" in *-*) return 0 ;; esac ;; esac
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
# Wait (at most 20 s, a hang guard) until every thread of pid is stopped:
# kill -STOP returns before each thread has stopped, and dtctl's store
# thread may answer one more request meanwhile.
all_threads_stopped() { # pid
    i=0
    while [ $i -lt 200 ]; do
        run=0
        for t in /proc/"$1"/task/*; do
            [ "$(state_of "$t/stat")" = T ] || run=1
        done
        [ $run -eq 0 ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
state_of() { sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' "$1" 2>/dev/null; }
pid_of() { # rank -> pid, from the line peer_exit writes
    sed -n "s/^\[$1\] peer_exit: rank $1 pid \([0-9]*\)$/\1/p" "$tmp/out" 2>/dev/null | head -n 1
}

# case transport shm: run it; rank 0 must end while dtctl is stopped.
run_case() {
    case=$1
    pid0="" pid1=""
    PEER_EXIT_RANK=1 PEER_EXIT_MODE=pause timeout -s KILL 200 "$DTCTL" run -n 2 \
        --transport="$2" --set collectives.shm="$3" --set cluster.timeout=4s \
        --set cluster.kill_grace=1s -- "$pe" >"$tmp/out" 2>&1 &
    bg=$!
    i=0
    while [ $i -lt 200 ] && { [ -z "$pid0" ] || [ -z "$pid1" ]; }; do
        pid0=$(pid_of 0); pid1=$(pid_of 1)
        sleep 0.1; i=$((i + 1))
    done
    [ -n "$pid0" ] && [ -n "$pid1" ] || fail "the ranks did not say their pids"
    ctl=$(sed -n 's/^[0-9]* (.*) [A-Z] \([0-9]*\) .*/\1/p' "/proc/$pid0/stat")
    [ -n "$ctl" ] && [ "$ctl" != 1 ] || fail "no dtctl above rank 0 ($pid0)"
    wait_state "$pid1" T 200 || fail "rank 1 did not stop"
    # Rank 0 now waits on rank 1 (its timeout: 4 s); the store goes silent.
    kill -STOP "$ctl"
    all_threads_stopped "$ctl" || fail "dtctl ($ctl) did not stop"
    # Rank 0 ends (a zombie: its stopped parent cannot reap it) while
    # dtctl is stopped: 4 s, 5 s for the store; not minutes.
    wait_state "$pid0" Z- 450 ||
        fail "rank 0 did not end within 45 s of a stopped store (state $(state "$pid0"))"
    kill -CONT "$ctl"
    wait "$bg"; rc=$?; bg=""; ctl=""
    [ "$rc" -ne 0 ] || fail "dtctl exited 0 after a rank hung"
}

run_case tcp tcp off
grep -q "^\[0\] .*tcp: rank 0: the rendezvous store did not answer within 5 s" "$tmp/out" ||
    fail "rank 0 did not say that the store did not answer"
grep -q "^\[0\] .*tcp: rank 0: rank 1 went silent" "$tmp/out" ||
    fail "rank 0 did not name rank 1 as silent"
echo "ok: $case: a rank that times out on a hung peer while the store is stopped ends at once, naming the peer (dtctl exit $rc)"

run_case shm tcp auto
grep -q "^\[0\] .*collectives: rank 0: .*: rank 1 went silent" "$tmp/out" ||
    fail "rank 0 did not name rank 1 as silent in the shared-memory segment"
grep -q "^\[0\] .*rank 0: the rendezvous store did not answer within 5 s: .*Rank 1's failure (hung) is not recorded" "$tmp/out" ||
    fail "rank 0 did not say that the store did not take its failure record"
echo "ok: $case: the same through the shared-memory collectives (dtctl exit $rc)"

if [ -e "$mods/dt_transport_ucx.so" ]; then
    run_case ucx ucx off
    grep -q "^\[0\] .*ucx: rank 0: .*waiting on rank(s) 1:" "$tmp/out" ||
        fail "rank 0 did not name rank 1"
    echo "ok: $case: the same over ucx (dtctl exit $rc)"
else
    echo "ok: ucx: not built, not checked"
fi

# A job that succeeded: both ranks stop themselves before dt_finalize
# (peer_exit's finalize mode), dtctl is stopped, the ranks continued.
# dt_finalize needs the store only for its barrier (no rank closes the
# connections a peer may still read from), which a stopped store cannot
# give: the count of finished ranks it asks first goes unanswered for
# 5 s, and the rank leaves, saying so. It waited the timeout (60 s here)
# and the store client's 65 s in the barrier: the 45 s wait is a hang
# guard below the timeout, not a measurement.
case=finalize
pid0="" pid1=""
PEER_EXIT_MODE=finalize timeout -s KILL 200 "$DTCTL" run -n 2 \
    --transport=tcp --set collectives.shm=off --set cluster.timeout=60s \
    -- "$pe" >"$tmp/out" 2>&1 &
bg=$!
i=0
while [ $i -lt 200 ] && { [ -z "$pid0" ] || [ -z "$pid1" ]; }; do
    pid0=$(pid_of 0); pid1=$(pid_of 1)
    sleep 0.1; i=$((i + 1))
done
[ -n "$pid0" ] && [ -n "$pid1" ] || fail "the ranks did not say their pids"
wait_state "$pid0" T 200 && wait_state "$pid1" T 200 ||
    fail "the ranks did not stop before dt_finalize"
ctl=$(sed -n 's/^[0-9]* (.*) [A-Z] \([0-9]*\) .*/\1/p' "/proc/$pid0/stat")
[ -n "$ctl" ] && [ "$ctl" != 1 ] || fail "no dtctl above rank 0 ($pid0)"
kill -STOP "$ctl"
all_threads_stopped "$ctl" || fail "dtctl ($ctl) did not stop"
kill -CONT "$pid0" "$pid1"
for p in "$pid0" "$pid1"; do
    wait_state "$p" Z- 450 ||
        fail "rank pid $p did not end within 45 s of dt_finalize with a stopped store (state $(state "$p"))"
done
kill -CONT "$ctl"
wait "$bg"; rc=$?; bg=""; ctl=""
for r in 0 1; do
    grep -q "^\[$r\] .*rank $r: dt_finalize: the rendezvous store did not answer within 5 s (dtctl stopped, or its host cut off?): leaving without waiting for the other ranks to finish" "$tmp/out" ||
        fail "rank $r did not say that it left dt_finalize without the store"
done
# Their collectives all completed: the job succeeded (it was reported
# failed, exit 1, and restarted by --max-restarts).
[ "$rc" -eq 0 ] || fail "$case: dtctl exited $rc for a job whose ranks all finished (want 0)"
[ "$(grep -c "dt_finalize: ok$" "$tmp/out")" -eq 2 ] ||
    fail "$case: dt_finalize did not return DT_OK on both ranks"
echo "ok: $case: ranks in dt_finalize while dtctl is stopped end at once, saying so (dtctl exit $rc)"
