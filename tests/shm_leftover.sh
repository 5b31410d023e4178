#!/bin/sh
# shm_leftover.sh — a shared-memory segment never outlives its job on this
# host: rank 0 killed (SIGKILL) right after creating /dev/shm/dt-<pid>-*,
# before the attach barrier after which it unlinks it (the test hook
# DT_TEST_SHM_DIE_AFTER_CREATE; by hand: kill -9 rank 0 at start-up), and
# dtctl (local launcher) removes the segment once that worker is gone. A
# segment of another process (named after the test shell's pid) stays.
set -u
prog="$top_builddir/tests/coll_mismatch"
if [ ! -x "$prog" ]; then
    echo "ERROR: tests/coll_mismatch was not built"
    exit 99
fi
if [ ! -d /dev/shm ] || [ ! -w /dev/shm ]; then
    echo "SKIP: no writable /dev/shm"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-shm-leftover.XXXXXX") || exit 99
other=/dev/shm/dt-$$-0123456789abcdef01234567
trap 'rm -rf "$tmp"; rm -f "$other"' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_COLLECTIVES_SHM \
    2>/dev/null
: >"$other"

MISMATCH_CASE=none DT_COLLECTIVES_SHM=auto DT_CLUSTER_TIMEOUT=5s \
    DT_TEST_SHM_DIE_AFTER_CREATE="$tmp/name" \
    timeout 60 "$DTCTL" run -n 2 -- "$prog" >"$tmp/out" 2>&1
rc=$?
seg=$(cat "$tmp/name" 2>/dev/null)
case "$seg" in
/dev/shm/dt-*) ;;
*) echo "FAIL: rank 0 created no segment (exit $rc): $(cat "$tmp/out")"; exit 1 ;;
esac
[ $rc -ne 0 ] || { echo "FAIL: the job survived rank 0's SIGKILL"; exit 1; }
if [ -e "$seg" ]; then
    rm -f "$seg"
    echo "FAIL: $seg left behind after rank 0 died (dtctl exit $rc)"
    exit 1
fi
[ -e "$other" ] || { echo "FAIL: another process's $other was removed"; exit 1; }
echo "ok: rank 0's segment removed after its SIGKILL; another's kept"
