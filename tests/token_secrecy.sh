#!/bin/sh
# The job token (DT_JOB_TOKEN) reaches workers only through their
# environment: it must never show in any process's arguments (ps -eo args)
# while the job runs, nor in dtctl's most verbose output (-vv), which also
# carries the workers' own trace logs.
set -u
plugin="$top_builddir/plugins/modules/dt_transport_tcp.so"
if [ ! -e "$plugin" ]; then
    echo "SKIP: the tcp transport plugin is not built ($plugin is missing)"
    exit 77
fi
ex="$top_builddir/examples/allreduce"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-token.XXXXXX") || exit 1
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal

# Each worker records the token (for this test only), runs the collectives,
# says it is done, then stays alive until released, so that ps sees the
# whole job: dtctl, its store and every worker.
"$DTCTL" -vv run -n 2 -- sh -c '
    printf %s "$DT_JOB_TOKEN" > "$0/token.$DT_RANK"
    "$1" || exit 1
    : > "$0/done.$DT_RANK"
    while [ ! -e "$0/release" ]; do sleep 0.1; done' "$tmp" "$ex" \
    >"$tmp/out" 2>&1 &
pid=$!

i=0
while [ ! -e "$tmp/done.0" ] || [ ! -e "$tmp/done.1" ]; do
    if ! kill -0 "$pid" 2>/dev/null || [ $i -ge 1200 ]; then
        echo "FAIL: the job did not get going (waited $((i / 10)) s):"
        cat "$tmp/out"
        exit 1
    fi
    sleep 0.1
    i=$((i + 1))
done
ps -eo args >"$tmp/ps"
grep -q -- "-vv run -n 2" "$tmp/ps" ||
    { echo "FAIL: ps did not see the running job"; exit 1; }
: >"$tmp/release"
wait "$pid"
rc=$?
pid=
token=$(cat "$tmp/token.0")
status=0
if [ ${#token} -ne 64 ] || [ "$(cat "$tmp/token.1")" != "$token" ]; then
    echo "FAIL: workers did not get one 64-hex-digit token"
    status=1
fi
if [ $rc -ne 0 ]; then
    echo "FAIL: the job failed (exit $rc):"
    cat "$tmp/out"
    status=1
fi
# The -vv output must really be verbose (store and worker traces) ...
if ! grep -q "rendezvous store" "$tmp/out" ||
   ! grep -q "joined the job" "$tmp/out"; then
    echo "FAIL: dtctl -vv output lacks the store's and the workers' logs"
    status=1
fi
# ... and must not hold the token, nor must any argv.
if grep -F -q "$token" "$tmp/ps"; then
    echo "FAIL: the job token appears in ps -eo args"
    status=1
fi
if grep -F -q "$token" "$tmp/out"; then
    echo "FAIL: the job token appears in dtctl -vv output"
    status=1
fi
[ $status -eq 0 ] && echo "ok: token in neither ps ($(wc -l <"$tmp/ps") processes) nor $(wc -l <"$tmp/out") lines of -vv output"
exit $status
