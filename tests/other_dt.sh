#!/bin/sh
# A worker of another dt (a rolling upgrade, a stale /usr/local on one
# node, a program linked against an older libdt) is refused at its first
# contact with dtctl's rendezvous store: dtctl names the rank, host, both
# protocols and both programs, says what to do, stops the job and exits 78
# (not restarted). An old worker (9d8db69) among new ones was refused only
# as 'refused this worker's job token'.
#
# The other dt is simulated with a test hook of libdt's store client:
# DT_TEST_PROTO_VERSION=N makes a worker advertise protocol N, and 0 makes
# it greet as a dt from before protocol versions did (DTSTORE1). The
# store's side, which is under test, is the real one.
set -u
plugin="$top_builddir/plugins/modules/dt_transport_tcp.so"
if [ ! -e "$plugin" ]; then
    echo "SKIP: the tcp transport plugin is not built ($plugin is missing)"
    exit 77
fi
ex="$top_builddir/examples/allreduce"
proto=$(sed -n 's/^#define DT_PROTOCOL_VERSION \([0-9]*\).*/\1/p' \
    "$top_srcdir/include/dt/store.h")
[ -n "$proto" ] || { echo "FAIL: no DT_PROTOCOL_VERSION in dt/store.h"; exit 1; }
other=$((proto + 1))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-otherdt.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_TEST_PROTO_VERSION \
    2>/dev/null
status=0

fail() {
    echo "FAIL: $1"
    sed 's/^/    /' "$tmp/out"
    status=1
}

# Runs 3 workers, rank $1 advertising protocol $2 (empty: the real one);
# further arguments go to dtctl run. Bounded: a hang is a failure (124).
job() {
    rank=$1 hook=$2
    shift 2
    timeout 120 "$DTCTL" run -n 3 "$@" -- sh -c '
        [ "$DT_RANK" = "$1" ] && [ -n "$2" ] && export DT_TEST_PROTO_VERSION="$2"
        exec "$0"' "$ex" "$rank" "$hook" >"$tmp/out" 2>&1
}

has() {
    grep -qF -- "$1" "$tmp/out" || fail "$2: no '$1' in the output:"
}

# 1. Rank 1 speaks a later protocol: dtctl refuses it by name, the worker
#    says the same, the job stops with 78 before any collective ran.
job 1 "$other"
rc=$?
[ $rc -eq 78 ] || fail "protocol $other: dtctl exited $rc, not 78:"
has "rendezvous store: refused rank 1 on " "protocol $other"
has "it runs dt " "protocol $other"
has "of protocol $other (program " "protocol $other"
has "while this dtctl runs dt " "protocol $other"
has "of protocol $proto (" "protocol $other"
has "install the same dt on every host" "protocol $other"
has "refused this worker: dtctl there runs dt " "protocol $other"
has "stopping the job: a worker runs another dt than this dtctl" \
    "protocol $other"
has "exit status 78" "protocol $other"
! grep -q "all collectives correct" "$tmp/out" ||
    fail "protocol $other: the other ranks computed anyway:"

# 2. Rank 2 greets as a dt from before protocol versions: it cannot say its
#    protocol, the store still refuses it once it proved the job token.
job 2 0
rc=$?
[ $rc -eq 78 ] || fail "old greeting: dtctl exited $rc, not 78:"
has "rendezvous store: refused a worker at 127.0.0.1:" "old greeting"
has "from before protocol versions" "old greeting"
has "install the same dt on every host" "old greeting"

# 3. Not restarted: a restart would meet the same worker.
job 1 "$other" --max-restarts 2
rc=$?
[ $rc -eq 78 ] || fail "with restarts: dtctl exited $rc, not 78:"
n=$(grep -c "rendezvous store: refused rank 1" "$tmp/out")
[ "$n" -eq 1 ] || fail "with restarts: $n refusals, not 1 (restarted?):"
has "not restarting" "with restarts"

# 4. The hook set to this dt's own protocol changes nothing: the refusals
#    above are of the protocol, not of the hook.
job 1 "$proto"
rc=$?
[ $rc -eq 0 ] || fail "own protocol: dtctl exited $rc, not 0:"
has "all collectives correct" "own protocol"

[ $status -eq 0 ] && echo "ok: workers of another dt protocol are refused"
exit $status
