#!/bin/sh
# A worker killed in the middle of allreduces over the tcp transport: the
# other workers fail with an error naming the dead rank (at once, on the
# closed connection, well before the 5 s timeout set here) and dtctl exits
# non-zero. With 4 ranks, rank 3 is no neighbour of rank 1 in the ring: it
# learns of the failure from a rank that closed because of it, and must
# still name rank 1, not the messenger. `timeout` only guards against a
# hang. The transport's own detection runs with [collectives] shm = off
# (else the ranks of one host meet in shared memory, not over tcp); a
# second job checks that the shared-memory path names rank 1 too.
set -u
bench="$top_builddir/bench/dt_allreduce_bench"
if [ ! -x "$bench" ] || [ ! -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    echo "SKIP: the allreduce bench worker or the tcp plugin is not built"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-tcpkill.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
# Rank 1 is SIGKILLed (no cleanup) once it has joined the job (its debug
# line says so) and is in its allreduces. The others ignore the SIGTERM
# dtctl sends when it sees rank 1 go, so each of them gets to report (they
# exit on their own, at once; dtctl's SIGKILL after kill_grace only guards
# against a hang).
cat >"$tmp/worker.sh" <<EOS
#!/bin/sh
trap '' TERM
if [ "\$DT_RANK" != 1 ]; then
    exec "$bench" --sizes 16M:16M --iters 100000 --warmup 0
fi
DT_LOG_LEVEL=debug "$bench" --sizes 16M:16M --iters 100000 --warmup 0 \
    2>"$tmp/rank1.err" &
pid=\$!
i=0
until grep -q "joined the job" "$tmp/rank1.err" || [ \$i -ge 500 ]; do
    sleep 0.1; i=\$((i + 1))
done
sleep 0.5
kill -9 \$pid
wait \$pid
EOS
chmod +x "$tmp/worker.sh"
status=0
run_job() {
    timeout 60 "$DTCTL" run -n 4 --set transport.tcp.timeout=5s \
        --set cluster.kill_grace=30s "$@" -- "$tmp/worker.sh" \
        >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
        echo "FAIL: dtctl exited $rc (want non-zero, no hang)"; status=1
    fi
}

# Through shared memory (the default on one host): the segment's wait sees
# rank 1's process gone; the others learn it from the segment. Rank 1 kills
# itself after 5 allreduces (tests/peer_exit's kill mode): the segment is
# fast enough for the bench to end before a kill timed from outside.
printf '#!/bin/sh\ntrap "" TERM\nexec "%s"\n' "$top_builddir/tests/peer_exit" \
    >"$tmp/pe.sh"
chmod +x "$tmp/pe.sh"
PEER_EXIT_RANK=1 PEER_EXIT_MODE=kill timeout 60 "$DTCTL" run -n 4 \
    --set cluster.kill_grace=30s -- "$tmp/pe.sh" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    echo "FAIL: dtctl exited $rc (want non-zero, no hang)"; status=1
fi
for r in 0 2 3; do
    if ! grep -qE "^\[$r\] .*error: collectives: rank $r: .* rank 1 (\(pid [0-9]+\) )?is gone" "$tmp/out"; then
        echo "FAIL: rank $r did not report rank 1 gone through shared memory"
        status=1
    fi
done
[ "$status" -eq 0 ] || cat "$tmp/out"
rm -f "$tmp/rank1.err"

run_job --set collectives.shm=off
# Every survivor reports a tcp error, and it names rank 1 as the failed
# rank (the messages start with the culprit).
for r in 0 2 3; do
    if ! grep -qE "^\[$r\] .*error: tcp: rank $r: rank 1 " "$tmp/out"; then
        echo "FAIL: rank $r did not report an error naming rank 1 as failed"
        status=1
    fi
done
if grep -E "error: tcp: rank [0-9]+: " "$tmp/out" |
    grep -vE "error: tcp: rank [023]: rank 1 "; then
    echo "FAIL: the tcp errors above do not name rank 1 as the failed rank"
    status=1
fi
# Seen on the closed connection, not by the 5 s timeout: no rank says
# rank 1 "went silent" (the timeout's words), rank 1's neighbours say it
# closed the connection.
if grep -q "went silent" "$tmp/out"; then
    echo "FAIL: a survivor waited for the timeout instead of seeing the closed connection"
    status=1
fi
grep -qE "error: tcp: rank [0-3]: rank 1 .*(closed the connection|connection failed)" "$tmp/out" || {
    echo "FAIL: no survivor says rank 1's connection closed or failed"; status=1; }
[ "$status" -eq 0 ] || cat "$tmp/out"
exit $status
