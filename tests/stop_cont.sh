#!/bin/sh
# stop_cont.sh — a job stopped and continued (Ctrl-Z and fg, kill -STOP
# and -CONT of every rank) goes on: the time a waiting rank was itself
# stopped is not its peer's silence. Rank 1 stops itself after the first
# allreduce; rank 0, waiting on it, is stopped for longer than [cluster]
# timeout (3 s), continued, and rank 1 a second later. Rank 0 once took
# the whole stop for rank 1's silence and named it hung at once (exit 124).
# Through the shared segment (shm = auto), tcp and ucx (shm = off).
# The sleeps make the stop outlast the timeout; they assert nothing.
set -u
pe="$top_builddir/tests/peer_exit"
if [ ! -x "$pe" ] || [ ! -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    echo "SKIP: peer_exit or the tcp plugin is not built"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-stop-cont.XXXXXX") || exit 1
bg=""
cleanup() {
    [ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null
    for p in ${pid0:-} ${pid1:-}; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
status=0

state() { # pid -> its state letter (R, S, T, ...), empty when gone
    sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null
}
# Wait (at most 20 s, a hang guard) until pid is in one of the states.
wait_state() { # pid states
    i=0
    while [ $i -lt 200 ]; do
        case "$(state "$1")" in [$2]) return 0 ;; esac
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
pid_of() { # rank -> pid, from the line peer_exit writes
    sed -n "s/^\[$1\] peer_exit: rank $1 pid \([0-9]*\)$/\1/p" "$tmp/out" | head -n 1
}

paths="auto/tcp off/tcp"
[ -e "$top_builddir/plugins/modules/dt_transport_ucx.so" ] && paths="$paths off/ucx"
for path in $paths; do
    shm=${path%/*} tr=${path#*/} pid0="" pid1=""
    PEER_EXIT_RANK=1 PEER_EXIT_MODE=pause timeout -s KILL 90 "$DTCTL" run -n 2 \
        --transport="$tr" --set cluster.timeout=3s --set cluster.kill_grace=1s \
        --set collectives.shm="$shm" -- "$pe" >"$tmp/out" 2>&1 &
    bg=$!
    i=0
    while [ $i -lt 200 ] && { [ -z "$pid0" ] || [ -z "$pid1" ]; }; do
        pid0=$(pid_of 0); pid1=$(pid_of 1)
        sleep 0.1; i=$((i + 1))
    done
    if [ -z "$pid0" ] || [ -z "$pid1" ]; then
        echo "FAIL ($path): the ranks did not say their pids"
        cat "$tmp/out"; status=1; wait "$bg"; bg=""; continue
    fi
    # Rank 1 stopped itself; rank 0 then waits on it (asleep in its wait).
    if ! wait_state "$pid1" T || ! wait_state "$pid0" S; then
        echo "FAIL ($path): rank 1 did not stop, or rank 0 did not wait"
        cat "$tmp/out"; status=1
    fi
    kill -STOP "$pid0"
    sleep 4                      # longer than the 3 s timeout
    kill -CONT "$pid0"
    sleep 1                      # rank 0 runs, rank 1 is still stopped
    kill -CONT "$pid1"
    wait "$bg"; rc=$?; bg=""
    if [ "$rc" -ne 0 ]; then
        echo "FAIL ($path): a job stopped and continued ended with $rc, want 0"
        cat "$tmp/out"; status=1
    fi
done
[ "$status" -eq 0 ] && echo "ok: a job stopped longer than the timeout and continued goes on ($paths)"
exit $status
