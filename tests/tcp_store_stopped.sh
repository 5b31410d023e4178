#!/bin/sh
# tcp_store_stopped.sh — a rank that times out on a hung peer while the
# rendezvous store does not answer (dtctl stopped; the same as a host cut
# off from dtctl's) still ends soon after its timeout, naming the peer.
# Rank 1 stops itself after the first allreduce (peer_exit's pause mode);
# once it is stopped, dtctl is stopped too, so rank 0's wait record and
# every request of its failure path find no store. Rank 0 must end while
# dtctl is still stopped: it once asked the store for the culprit record
# with the client's 60 s I/O limit per request (and each request first
# waited that long for the reply its wait record still owed), so it
# lingered some 3 minutes after its timeout; a rank cut off from dtctl
# held its GPU, and a rank 0 the checkpoint lock a restart needs.
# The 60 s wait for rank 0's end is a hang guard, not a measurement.
set -u
pe="$top_builddir/tests/peer_exit"
if [ ! -x "$pe" ] || [ ! -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    echo "SKIP: peer_exit or the tcp plugin is not built"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-tcp-store-stopped.XXXXXX") || exit 1
bg="" ctl="" pid0="" pid1=""
cleanup() {
    [ -n "$ctl" ] && kill -CONT "$ctl" 2>/dev/null
    for p in $bg $ctl $pid0 $pid1; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
fail() { echo "FAIL: $*"; cat "$tmp/out"; exit 1; }

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
pid_of() { # rank -> pid, from the line peer_exit writes
    sed -n "s/^\[$1\] peer_exit: rank $1 pid \([0-9]*\)$/\1/p" "$tmp/out" | head -n 1
}

PEER_EXIT_RANK=1 PEER_EXIT_MODE=pause timeout -s KILL 200 "$DTCTL" run -n 2 \
    --transport=tcp --set collectives.shm=off --set cluster.timeout=4s \
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
# Rank 0 ends (a zombie: its stopped parent cannot reap it) while dtctl
# is stopped: 4 s, the walk's nap, 5 s for the store; not 3 minutes.
wait_state "$pid0" Z- 600 || fail "rank 0 did not end within 60 s of a stopped store (state $(state "$pid0"))"
kill -CONT "$ctl"
wait "$bg"; rc=$?; bg=""; ctl=""
grep -q "^\[0\] .*tcp: rank 0: the rendezvous store did not answer within 5 s" "$tmp/out" ||
    fail "rank 0 did not say that the store did not answer"
grep -q "^\[0\] .*tcp: rank 0: rank 1 went silent" "$tmp/out" ||
    fail "rank 0 did not name rank 1 as silent"
[ "$rc" -ne 0 ] || fail "dtctl exited 0 after a rank hung"
echo "ok: a rank that times out on a hung peer while the store is stopped ends at once, naming the peer (dtctl exit $rc)"
