#!/bin/sh
# tcp_wireup.sh — the tcp transport's mesh, set up with its handshakes in
# flight together and the store's addresses looked up many per round trip:
# every rank opens one connection (or sockets_per_peer) to each lower rank
# and accepts one from each higher rank (its debug line counts them), and
# every collective of the C API example is then exact. 70 ranks cross the
# 64 addresses of one store lookup and the 16 handshakes in flight. A rank
# that starts late holds nobody's handshake up. No timing assertions; every
# dtctl call is bounded.
set -u
plugin="$top_builddir/plugins/modules/dt_transport_tcp.so"
if [ ! -e "$plugin" ]; then
    echo "SKIP: the tcp transport plugin is not built ($plugin is missing)"
    exit 77
fi
ex="$top_builddir/examples/allreduce"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-wireup.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Never inherit a job from whoever runs the tests.
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_INTERFACE \
    OMPI_COMM_WORLD_RANK SLURM_PROCID 2>/dev/null
status=0
fail() { echo "FAIL: $*"; status=1; }

# $1: ranks, $2: sockets_per_peer. Over tcp itself (shm off), -v for the
# debug lines.
mesh() {
    np=$1 k=$2
    if ! timeout -k 5 120 "$DTCTL" -v run -n "$np" --transport=tcp \
        --set collectives.shm=off --set transport.tcp.sockets_per_peer="$k" \
        -- "$ex" >"$tmp/out" 2>"$tmp/err"; then
        fail "$np ranks, $k sockets per peer: dtctl exited non-zero"
        tail -n 20 "$tmp/err"
        return
    fi
    grep -q "allreduce example: $np ranks, all collectives correct" \
        "$tmp/out" || fail "$np ranks, $k sockets per peer: no success line"
    r=0
    while [ $r -lt "$np" ]; do
        want="tcp: rank $r: mesh up: opened $((r * k)) connections to lower ranks in [0-9.]* s, accepted $(((np - 1 - r) * k)) from higher ranks"
        grep -q "$want" "$tmp/err" ||
            fail "rank $r of $np: no line '$want': $(grep "rank $r: mesh up" "$tmp/err")"
        r=$((r + 1))
    done
    [ "$(grep -c 'mesh up' "$tmp/err")" -eq "$np" ] ||
        fail "$np ranks: want $np 'mesh up' lines, got $(grep -c 'mesh up' "$tmp/err")"
    [ $status -eq 0 ] && echo "ok: $np ranks, $k sockets per peer: each rank connects to the lower ones only, collectives exact"
}

mesh 5 3
# A rank that starts late (rank 1, 3 s): the higher ranks' handshakes with
# rank 0, in flight, must end before they wait for rank 1's address; left
# waiting, rank 0 (32 slots) gave up on them after 1 s and the job failed.
if ! timeout -k 5 120 "$DTCTL" run -q -n 40 --transport=tcp --set collectives.shm=off \
    -- sh -c '[ "$DT_RANK" = 1 ] && sleep 3; exec "$0"' "$ex" >"$tmp/out" 2>"$tmp/err"; then
    fail "40 ranks, rank 1 late: dtctl exited non-zero: $(tail -n 5 "$tmp/err")"
elif ! grep -q "allreduce example: 40 ranks, all collectives correct" "$tmp/out"; then
    fail "40 ranks, rank 1 late: no success line"
else
    echo "ok: 40 ranks, rank 1 started 3 s late: the mesh still forms"
fi
# dtctl refuses N workers under a hard limit of 4N + 64 descriptors.
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt $((4 * 70 + 64)) ]; then
    echo "SKIP (70 ranks): 'ulimit -Hn' is $hard"
else
    mesh 70 1
fi
exit $status
