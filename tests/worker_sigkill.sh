#!/bin/sh
# worker_sigkill.sh — a worker killed by a SIGKILL that dtctl did not send
# is explained, not only "killed by signal 9": the kernel's out-of-memory
# killer is named, with what helps. A self-inflicted kill -9 is not blamed
# on it; a real out-of-memory kill (a memory cgroup of 64 MiB, where this
# machine has cgroup v1's memory controller and we may write it) is said
# as such, from that cgroup's oom_kill count; each count is read once a
# look, however many cgroups enclose dtctl's; dtctl in the hierarchy's
# root says a kill elsewhere as the host's, hedged. Each message, from
# fake counts: tests/worker_sigkill_oom.sh.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-sigkill.XXXXXX") || exit 1
cg=
cleanup() {
    if [ -n "$cg" ]; then
        # the cgroups, deepest first, their tasks moved out
        find "$cg" -depth -type d 2>/dev/null | while read -r d; do
            cat "$d/tasks" 2>/dev/null | while read -r p; do
                echo "$p" >/sys/fs/cgroup/memory/tasks 2>/dev/null
            done
            rmdir "$d" 2>/dev/null
        done
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
grep -q "error: the kernel's out-of-memory killer killed [0-9]* process.* in the memory cgroup of rank 0 on [^ ]* during the job (oom_kill [0-9]* -> [0-9]* in $cg/memory.oom_control and the cgroups below it): it most likely ran out of memory" "$tmp/out" ||
    fail "an out-of-memory kill is not said as one"

# ---- the worker moved to another cgroup, the limit on a parent ----------
# dtctl in $cg/dtctl (no limit of its own: the 64 MiB of $cg binds it);
# the worker moves itself, then doubles a string until the killer takes
# it. v1 counts a kill in the victim's cgroup alone, so dtctl's own count
# stayed 0 and the kill was said to be someone's kill -9.
mkdir "$cg/dtctl" "$cg/dtctl/own" "$cg/other" ||
    fail "cannot make cgroups under $cg"
cat >"$tmp/hog.sh" <<'EOF'
echo $$ >"$1/tasks" && exec awk 'BEGIN { s = "x"; while (1) s = s s }'
EOF
moved() { # the cgroup the worker moves to
    sh -c 'echo $$ >"$1/tasks" && exec timeout -s KILL 60 "$2" run -n 1 -- sh "$3" "$4"' \
        sh "$cg/dtctl" "$DTCTL" "$tmp/hog.sh" "$1" >"$tmp/out" 2>&1
    rc=$?
    [ $rc -eq 137 ] || fail "a worker moved to $1 and killed for memory: exit $rc, not 137"
}
# into a cgroup below dtctl's: counted with dtctl's, so sure
moved "$cg/dtctl/own"
grep -q "error: the kernel's out-of-memory killer killed 1 process in the memory cgroup of rank 0 on [^ ]* during the job (oom_kill 0 -> 1 in $cg/dtctl/memory.oom_control and the cgroups below it): it most likely ran out of memory" "$tmp/out" ||
    fail "a worker killed for memory in a cgroup below dtctl's is not said as such"
# beside dtctl's, under the parent with the limit: possibly
moved "$cg/other"
grep -q "error: possibly the kernel's out-of-memory killer: it killed 1 process during the job in the memory cgroup $cg (oom_kill [0-9]* -> [0-9]*, with the cgroups below it), which holds that of rank 0 on [^ ]*, though none in that one (oom_kill stayed [0-9]* in $cg/dtctl/memory.oom_control and the cgroups below it)" "$tmp/out" ||
    fail "a worker killed for memory in a cgroup beside dtctl's is not said as possibly so"
grep -q "ran kill -9" "$tmp/out" &&
    fail "a worker killed for memory in another cgroup is blamed on a kill -9"

# ---- each cgroup's count read once per look (at the start, at the
# failure): every enclosing cgroup walked its whole subtree again, up to
# ~70k reads where the big ones (/user.slice, /slurm) sit near the root.
# An LD_PRELOAD shim logs each memory.oom_control opened (not in a
# sanitizer build: its runtime must come first).
if [ -z "${ASAN_OPTIONS-}" ]; then
    ${CC:-cc} -Wall -Wextra -Werror -shared -fPIC -o "$tmp/shim.so" \
        "$top_srcdir/tests/fixtures/libc_shim.c" -ldl >"$tmp/out" 2>&1 ||
        fail "building tests/fixtures/libc_shim.c"
    sh -c 'echo $$ >"$1/tasks" && exec env LD_PRELOAD="$3" \
        DT_SHIM_OPEN_LOG="$4" DT_SHIM_OPEN_SUFFIX=/memory.oom_control \
        timeout -s KILL 60 "$2" run -n 1 -- sh -c "kill -9 \$\$"' \
        sh "$cg/dtctl" "$DTCTL" "$tmp/shim.so" "$tmp/opens" >"$tmp/out" 2>&1
    grep -q "error: rank 0 on .* was killed by signal 9" "$tmp/out" ||
        fail "counting reads: the killed rank is not named"
    # (dtctl's own file is read once more, when it is found)
    sort "$tmp/opens" | uniq -c >"$tmp/reads"
    cat "$tmp/reads"
    grep -Eqx " *2 $cg/dtctl/own/memory.oom_control" "$tmp/reads" ||
        fail "$cg/dtctl/own's count is not read once at the start and once at the failure"
    awk '$1 > 3' "$tmp/reads" | grep -q . &&
        fail "a cgroup's count is read more than once at the start and once at the failure"
fi

# ---- dtctl in the hierarchy's root (memory:/): its count (with the
# cgroups below it) is every process's on this machine, so a kill in
# another cgroup was said as the worker's, for sure. Said as the host's
# count is: hedged. Rank 1 has a process in a 64 MiB cgroup of its own
# killed for memory, then kills itself.
mkdir "$cg/victim" || fail "cannot make $cg/victim"
sh -c 'echo $$ >"$1/tasks" && exec timeout -s KILL 60 "$2" run -n 2 -- sh -c "
    if [ \"\$DT_RANK\" = 1 ]; then
        sh \"\$1\" \"\$2\"
        kill -9 \$\$
    fi
    sleep 5" sh "$3" "$4"' sh "$mem" "$DTCTL" "$tmp/hog.sh" "$cg/victim" \
    >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 137 ] || fail "dtctl in the root cgroup, a worker killed by SIGKILL: exit $rc, not 137"
grep -q "error: an out-of-memory kill happened on this machine during the job: the kernel's out-of-memory killer killed [0-9]* process.* (/proc/vmstat oom_kill [0-9]* -> [0-9]*; whose, dtctl cannot tell: it reads no memory cgroup of the worker's): rank 1 on [^ ]* probably ran out of memory" "$tmp/out" ||
    fail "dtctl in the root cgroup: a kill in another cgroup is not said as the host's"
grep -q "most likely ran out of memory" "$tmp/out" &&
    fail "dtctl in the root cgroup: a kill in another cgroup is blamed on the worker"
echo "PASS"
