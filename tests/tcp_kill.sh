#!/bin/sh
# A worker killed in the middle of allreduces over the tcp transport: the
# other workers fail with an error naming the dead rank (at once, on the
# closed connection, well before the 5 s timeout set here) and dtctl exits
# non-zero. `timeout` only guards against a hang.
set -u
bench="$top_builddir/bench/dt_allreduce_bench"
if [ ! -x "$bench" ] || [ ! -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    echo "SKIP: the allreduce bench worker or the tcp plugin is not built"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-tcpkill.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
# Rank 1 kills itself (SIGKILL: no cleanup) one second into the run.
cat >"$tmp/worker.sh" <<EOS
#!/bin/sh
if [ "\$DT_RANK" = 1 ]; then (sleep 1; kill -9 \$\$) & fi
exec "$bench" --sizes 16M:16M --iters 100000 --warmup 0
EOS
chmod +x "$tmp/worker.sh"
timeout 60 "$DTCTL" run -n 3 --set transport.tcp.timeout=5s -- "$tmp/worker.sh" \
    >"$tmp/out" 2>&1
rc=$?
status=0
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    echo "FAIL: dtctl exited $rc (want non-zero, no hang)"; status=1
fi
# dtctl stops the others as soon as it sees rank 1 die, so not every
# survivor gets to speak: at least one must, naming rank 1.
if ! grep -E "^\[[02]\]" "$tmp/out" | grep "error: tcp" | grep -q "rank 1"; then
    echo "FAIL: no surviving rank reported an error naming rank 1"; status=1
fi
[ "$status" -eq 0 ] || cat "$tmp/out"
exit $status
