#!/bin/sh
# worker_sigkill_oom.sh — how sure dtctl is that the out-of-memory killer
# ended a worker killed by SIGKILL, from fake counts (the test hooks
# DT_TEST_OOM_CGROUP_EVENTS for the workers' memory cgroup's memory.events,
# DT_TEST_OOM_VMSTAT for /proc/vmstat) that rank 1 bumps before its kill -9:
# a kill in its cgroup is the OOM killer's; one elsewhere on the host only
# is "possibly" its (the worker may have moved to another cgroup); none at
# all is not; with no cgroup count, a kill on the host is a hedged
# "probably". The real kernel's counts (a worker that moved, a limit on a
# parent cgroup): tests/worker_sigkill.sh.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-sigkill-oom.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
status=0
fail() { echo "FAIL: $*"; sed 's/^/  | /' "$tmp/out"; status=1; }

# $1: the cgroup file's oom_kill after the kill ("" leaves it), $2: the
# host's ("" leaves it), $3: the cgroup file to name (default the fake),
# $4: the host's file to name (default the fake).
job() {
    printf 'oom_kill_disable 0\noom_kill 0\n' >"$tmp/events"
    printf 'pgfault 7\noom_kill 5\n' >"$tmp/vmstat"
    DT_TEST_OOM_CGROUP_EVENTS=${3:-$tmp/events} \
    DT_TEST_OOM_VMSTAT=${4:-$tmp/vmstat} \
        timeout -s KILL 60 "$DTCTL" run -n 2 -- sh -c '
        if [ "$DT_RANK" = 1 ]; then
            [ -n "$1" ] && printf "oom_kill %s\n" "$1" >"$3/events"
            [ -n "$2" ] && printf "oom_kill %s\n" "$2" >"$3/vmstat"
            kill -9 $$
        fi
        sleep 5' sh "$1" "$2" "$tmp" >"$tmp/out" 2>&1
    rc=$?
    [ $rc -eq 137 ] || fail "exit $rc, not 137"
    grep -q "error: rank 1 on [^ ]* was killed by signal 9" "$tmp/out" ||
        fail "the killed rank is not named"
}

job 1 6
grep -q "error: the kernel's out-of-memory killer killed 1 process in the memory cgroup of rank 1 on [^ ]* during the job (oom_kill 0 -> 1 in $tmp/events): it most likely ran out of memory; a smaller model or \[train\] batch_size" "$tmp/out" ||
    fail "an out-of-memory kill in the worker's cgroup is not said as one"

# A kill elsewhere on the host may be the worker's (had it moved to
# another cgroup): "possibly", neither blamed on it nor on a person.
job "" 6
grep -q "warning: possibly the kernel's out-of-memory killer: an out-of-memory kill happened on this machine during the job (/proc/vmstat oom_kill 5 -> 6), though not in the memory cgroup of rank 1 on [^ ]* (oom_kill stayed 0 in $tmp/events) nor in those holding it: it was rank 1 on [^ ]* only if the worker had moved to another cgroup" "$tmp/out" ||
    fail "an out-of-memory kill elsewhere on the host is not said as possibly the worker's"
grep -q "most likely ran out of memory" "$tmp/out" &&
    fail "an out-of-memory kill elsewhere on the host: the worker is said to have run out of memory"

# No out-of-memory kill on this machine at all: a person's (or a tool's).
job "" ""
grep -q "dtctl did not send that SIGKILL, nor did the kernel's out-of-memory killer (oom_kill stayed 0 in $tmp/events, the memory cgroup of rank 1 on [^ ]*, and 5 on this machine): someone or something (a scheduler, a watchdog) ran kill -9" "$tmp/out" ||
    fail "no out-of-memory kill at all: not said"

# The host's count unreadable: the cgroup's alone cannot rule the OOM
# killer out (the worker may have moved).
job "" "" "" "$tmp/no-vmstat"
grep -q "the kernel's out-of-memory killer killed nothing in the memory cgroup of rank 1 on [^ ]* (oom_kill stayed 0 in $tmp/events); this machine's count is unreadable: possibly the out-of-memory killer, had the worker moved to another cgroup" "$tmp/out" ||
    fail "an unreadable host count: the out-of-memory killer is ruled out"

# no readable cgroup count: the host's, hedged
job "" 6 "$tmp/no-such-cgroup/memory.events"
grep -q "error: an out-of-memory kill happened on this machine during the job: the kernel's out-of-memory killer killed 1 process (/proc/vmstat oom_kill 5 -> 6; whose, dtctl cannot tell: it reads no memory cgroup of the worker's): rank 1 on [^ ]* probably ran out of memory" "$tmp/out" ||
    fail "without a cgroup count, a kill on the host is not said as a likely cause"

[ $status -eq 0 ] && echo "PASS"
exit $status
