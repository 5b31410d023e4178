#!/bin/sh
# worker_sigkill.sh — a worker killed by a SIGKILL that dtctl did not send
# is explained, not only "killed by signal 9": the kernel's out-of-memory
# killer is named, with what helps. A self-inflicted kill -9 is not blamed
# on it; a real out-of-memory kill (a memory cgroup of 64 MiB, where this
# machine has cgroup v1's memory controller and we may write it) is said
# as such, from that cgroup's oom_kill count. Each message, from fake
# counts: tests/worker_sigkill_oom.sh.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-sigkill.XXXXXX") || exit 1
cg=
cleanup() {
    if [ -n "$cg" ]; then
        cat "$cg/tasks" 2>/dev/null | while read -r p; do
            echo "$p" >/sys/fs/cgroup/memory/tasks 2>/dev/null
        done
        rmdir "$cg" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN 2>/dev/null
fail() { echo "FAIL: $*"; cat "$tmp/out"; exit 1; }

# ---- kill -9 by the worker itself: where to look -------------------------
timeout -s KILL 60 "$DTCTL" run -n 2 -- sh -c \
    'if [ "$DT_RANK" = 1 ]; then kill -9 $$; fi; sleep 5' >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 137 ] || fail "a worker killed by SIGKILL: exit $rc, not 137"
grep -q "error: rank 1 on .* was killed by signal 9" "$tmp/out" ||
    fail "the killed rank is not named"
grep -q "out-of-memory kill" "$tmp/out" ||
    fail "a SIGKILL dtctl did not send does not mention the out-of-memory killer"
grep -q "most likely ran out of memory" "$tmp/out" &&
    fail "a kill -9 is blamed on the out-of-memory killer"

# ---- a real out-of-memory kill, in a 64 MiB memory cgroup ---------------
mem=/sys/fs/cgroup/memory
if ! grep -q '^oom_kill ' /proc/vmstat 2>/dev/null || [ ! -w "$mem" ] ||
   ! mkdir "$mem/dt-sigkill-$$" 2>/dev/null; then
    echo "PASS (the out-of-memory part skipped: no writable cgroup v1 memory controller)"
    exit 0
fi
cg="$mem/dt-sigkill-$$"
echo $((64 * 1024 * 1024)) >"$cg/memory.limit_in_bytes" ||
    { echo "PASS (out-of-memory part skipped: the limit cannot be set)"; exit 0; }
# memsw (swap) may not exist; without swap the limit above is enough
echo $((64 * 1024 * 1024)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
# the worker doubles a string until the limit's killer takes it
sh -c 'echo $$ >"$1/tasks" && exec timeout -s KILL 60 "$2" run -n 1 -- \
    awk "BEGIN { s = \"x\"; while (1) s = s s }"' sh "$cg" "$DTCTL" \
    >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 137 ] || fail "a worker killed for memory: exit $rc, not 137"
grep -q "error: the kernel's out-of-memory killer killed [0-9]* process.* in the memory cgroup of rank 0 on [^ ]* during the job (oom_kill [0-9]* -> [0-9]* in $cg/memory.oom_control): it most likely ran out of memory" "$tmp/out" ||
    fail "an out-of-memory kill is not said as one"
echo "PASS"
