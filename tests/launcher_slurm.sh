#!/bin/sh
# launcher_slurm.sh — `dtctl run --launcher=slurm` against a real Slurm:
# this script starts its own single-node munged + slurmctld + slurmd in a
# temp dir on private ports (tests/fixtures/slurm-cluster.sh) and always
# stops them. Checks: a real dt job (examples/allreduce) in a new
# allocation (salloc + srun) and inside one (srun only; -n against its
# tasks), the worker
# environment from Slurm's variables, the exit status and name of a
# failing rank, a restart after a failure (--max-restarts; in a new
# allocation and inside one), a killed worker, Ctrl-C (scancel), Ctrl-Z and
# fg (the workers stop and continue with dtctl, a dt job too), dtctl
# itself killed by SIGKILL (salloc's parent-death signal) leaving no
# process and no job, an impossible request failing at once, and `dtctl
# check`.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?}" "${top_builddir:?}"
PATH=$PATH:/usr/sbin
# Only the private cluster this test starts: never a real one from outside.
unset SLURM_CONF
for t in slurmctld slurmd munged srun salloc; do
    command -v $t >/dev/null 2>&1 || {
        echo "SKIP: $t is not installed (Debian: apt install slurm-wlm munge)"
        exit 77
    }
done
if ! "$DTCTL" plugins | grep -q '^launcher *slurm .*available'; then
    echo "SKIP: the slurm launcher plugin is not available:"
    "$DTCTL" plugins | grep slurm
    exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-slurm.XXXXXX") || exit 99
chmod 755 "$T"
MARK="dtslurmtest$$"
. "$top_srcdir/tests/fixtures/slurm-cluster.sh"
cleanup() {
    [ -n "${SLURM_CONF:-}" ] && timeout 20 scancel --user=root >/dev/null 2>&1
    slurm_cluster_stop
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if ! slurm_cluster_start "$T/cluster" 2>"$T/why"; then
    # installed (checked above), yet it did not come up: a failure
    echo "ERROR: a private Slurm could not start here: $(cat "$T/why")"
    exit 99
fi
echo "slurm is up (SLURM_CONF=$SLURM_CONF)"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN OMPI_COMM_WORLD_RANK \
    SLURM_PROCID SLURM_JOB_ID 2>/dev/null
export DT_CLUSTER_KILL_GRACE=3s
run() { timeout -k 5 90 "$DTCTL" run --launcher=slurm "$@"; }
leftovers() { pgrep -f "$MARK" >/dev/null 2>&1; }
jobs_left() { [ -n "$(squeue -h -o %i 2>/dev/null)" ]; }
# A process that runs (an orphan that ended may stay a zombie here: PID 1
# of a container need not reap).
running() { st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
# Slurm ends a cancelled job's steps asynchronously: wait (bounded).
settle() {
    i=0
    while { leftovers || jobs_left; } && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
}

# --- 1. a real dt job in a new allocation ----------------------------------
ex="$top_builddir/examples/allreduce"
if run -n 4 -- "$ex" >"$T/o" 2>"$T/e" &&
    grep -q '^\[0\] allreduce example: 4 ranks, all collectives correct' "$T/o"; then
    ok "allreduce example, 4 ranks, salloc + srun"
else
    fail "allreduce under slurm: $(cat "$T/o" "$T/e")"
fi

# --- 2. environment from Slurm's variables -------------------------------------
host=$(hostname -s)
run -n 3 --set launcher.slurm.job_name=envtest -- sh -c 'echo "R=$DT_RANK/$DT_WORLD_SIZE L=$DT_LOCAL_RANK/$DT_LOCAL_SIZE N=$DT_NODE_RANK/$DT_NUM_NODES H=$DT_HOST T=$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE/$GROUP_RANK/$ROLE_RANK OMP=${OMP_NUM_THREADS-unset} S=$SLURM_PROCID J=$SLURM_JOB_NAME TL=${#DT_JOB_TOKEN} M=$MASTER_ADDR:$MASTER_PORT"' \
    >"$T/o" 2>"$T/e" || fail "env job exited $?: $(cat "$T/e")"
for r in 0 1 2; do
    grep -q "^\[$r\] R=$r/3 L=$r/3 N=0/1 H=$host T=$r/3/$r/3/0/$r OMP=unset S=$r J=envtest-[0-9a-f]* TL=64 M=127\\.0\\.0\\.1:[0-9][0-9]*\$" "$T/o" ||
        fail "rank $r environment wrong: $(cat "$T/o")"
done
[ "$(sed -n 's/.* M=//p' "$T/o" | sort -u | wc -l)" -eq 1 ] ||
    fail "ranks disagree on MASTER_ADDR:MASTER_PORT: $(cat "$T/o")"
grep -q 'dt-exit:' "$T/o" "$T/e" && fail "exit markers leaked into the output"
ok "worker environment from SLURM_PROCID/LOCALID/NODEID; one node: MASTER_ADDR 127.0.0.1"

# dtctl's stdin (a pipe) reaches task 0 only (srun --input=0; srun's own
# default would give it to every task).
printf 'a\nb\n' | run -n 2 -- sh -c 'echo "lines=$(wc -l)"' >"$T/o" 2>"$T/e" ||
    fail "stdin job exited $?: $(cat "$T/e")"
grep -qx '\[0\] lines=2' "$T/o" && grep -qx '\[1\] lines=0' "$T/o" ||
    fail "stdin: want rank 0 to read 2 lines and rank 1 none: $(cat "$T/o")"
ok "dtctl's stdin reaches rank 0 only (srun --input=0)"

# --- 3. inside an allocation: srun only, in that job ----------------------------
timeout -k 5 120 salloc -n 3 --job-name=outer "$DTCTL" run --launcher=slurm -n 3 -- \
    sh -c 'echo "job=$SLURM_JOB_ID rank=$DT_RANK"' >"$T/o" 2>"$T/e"
rc=$?
n=$(sed -n 's/^\[[0-9]\] job=\([0-9]*\) rank=.*/\1/p' "$T/o" | sort -u | wc -l)
outer=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$T/e")
[ $rc -eq 0 ] && [ "$n" -eq 1 ] && grep -q "^\[0\] job=$outer rank=0" "$T/o" ||
    fail "inside salloc (job $outer): rc=$rc: $(cat "$T/o" "$T/e")"
ok "inside an allocation the ranks run in it (job $outer)"

# -n against the allocation: not given, dtctl runs the host list's one
# slot, not srun's one per task, and says so; more than it holds is said
# with the fix before srun refuses the step; -n that fits says nothing.
npfit() { timeout -k 5 60 salloc -n 2 --job-name=npfit "$DTCTL" run --launcher=slurm "$@"; }
npfit -- sh -c 'echo "w=$DT_WORLD_SIZE"' >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -qx '\[0\] w=1' "$T/o" &&
    grep -q "warning: slurm launcher: 1 worker in allocation [0-9]*, which holds 2 tasks (SLURM_NTASKS): .* give -n 2 to use them all" "$T/e" ||
    fail "no -n inside salloc -n 2: rc=$rc: $(cat "$T/o" "$T/e")"
npfit -n 3 -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "warning: slurm launcher: 3 ranks are more than allocation [0-9]* holds (2 tasks, SLURM_NTASKS): .* start 2 or fewer (-n, .*), or allocate more (salloc -n 3)" "$T/e" ||
    fail "-n 3 inside salloc -n 2: rc=$rc: $(cat "$T/o" "$T/e")"
npfit -n 2 -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && ! grep -q 'slurm launcher:' "$T/e" ||
    fail "-n 2 inside salloc -n 2: rc=$rc: $(cat "$T/o" "$T/e")"
ok "-n against the allocation's tasks: not given or too many is said, a fit is not"

# --- 3b. restarts (--max-restarts): a new allocation per attempt outside
# one; inside one, the attempts are steps of that same allocation ----------
P='[ "$DT_RESTART_COUNT" -ge 1 ] || { [ "$DT_RANK" = 1 ] && exit 3; }; echo "ok-$DT_RANK-$DT_RESTART_COUNT job=$SLURM_JOB_ID"'
run -n 2 --max-restarts 1 --set cluster.restart_backoff=100ms -- sh -c "$P" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q "restart 1 of 1: rank 1 on $host exited with code 3" "$T/e" &&
    grep -q '^\[0\] ok-0-1 job=[0-9]' "$T/o" && grep -q '^\[1\] ok-1-1 job=[0-9]' "$T/o" ||
    fail "restart in new allocations: rc=$rc: $(cat "$T/o" "$T/e")"
ok "restart 1 of 1 after rank 1 exited 3: the second attempt ran both ranks (new allocation)"
salloc -n 2 --job-name=rst timeout -k 5 90 "$DTCTL" run --launcher=slurm -n 2 \
    --max-restarts 1 --set cluster.restart_backoff=100ms -- sh -c "$P" >"$T/o" 2>"$T/e"
rc=$?
outer=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$T/e")
jobs=$(sed -n 's/^\[[0-9]\] ok-.* job=\([0-9]*\)$/\1/p' "$T/o" | sort -u)
[ $rc -eq 0 ] && [ -n "$outer" ] && [ "$jobs" = "$outer" ] &&
    grep -q "restart 1 of 1: rank 1 on $host exited with code 3" "$T/e" &&
    grep -q "^\[0\] ok-0-1 job=$outer\$" "$T/o" && grep -q "^\[1\] ok-1-1 job=$outer\$" "$T/o" ||
    fail "restart inside allocation $outer: rc=$rc: $(cat "$T/o" "$T/e")"
settle
jobs_left && fail "jobs left after the restarts: $(squeue)"
ok "restart inside an allocation: both attempts are steps of job $outer"

# --- 4. failure: rank and exit status ---------------------------------------------
run -n 3 -- sh -c "if [ \$DT_RANK = 1 ]; then exit 7; fi; sleep 60 # $MARK" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 7 ] || fail "want exit 7 from rank 1, got $rc: $(cat "$T/e")"
grep -q "rank 1 on $host exited with code 7" "$T/e" || fail "rank 1 not named: $(cat "$T/e")"
settle
leftovers && fail "workers left after a failing rank: $(pgrep -fa "$MARK")"
jobs_left && fail "jobs left after a failing rank: $(squeue)"
ok "exit status 7 of rank 1 propagated, no process or job left"

# --- 5. a worker killed by SIGKILL ----------------------------------------------------
rm -f "$T"/pid.*
run -n 3 -- sh -c "sh -c 'sleep 60; true # $MARK-bg' & echo \$\$ >$T/pid.\$DT_RANK; sleep 60 # $MARK" \
    >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ ! -s "$T/pid.2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/pid.2" ] && kill -KILL "$(cat "$T/pid.2")"
wait $dtpid; rc=$?
[ $rc -eq 137 ] || fail "want 137 for a SIGKILLed rank, got $rc: $(cat "$T/e")"
grep -q "rank 2 on $host was killed by signal 9" "$T/e" || fail "rank 2 not named: $(cat "$T/e")"
settle
leftovers && fail "processes left after a killed worker: $(pgrep -fa "$MARK")"
jobs_left && fail "jobs left after a killed worker: $(squeue)"
ok "killed worker named, no process or job left"

# --- 6. Ctrl-C: scancel, nothing left -------------------------------------------------
rm -f "$T"/pid.*
run -n 3 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; sleep 60 # $MARK" >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ "$(ls "$T" | grep -c '^pid\.')" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT "$(pgrep -P $dtpid)"
wait $dtpid; rc=$?
[ $rc -eq 130 ] || fail "want 130 after SIGINT, got $rc: $(cat "$T/e")"
settle
leftovers && fail "processes left after Ctrl-C: $(pgrep -fa "$MARK")"
jobs_left && fail "jobs left after Ctrl-C: $(squeue)"
ok "Ctrl-C cancels the job (exit 130), nothing left"

# --- 6a. Ctrl-Z stops the workers with dtctl (scancel --signal=STOP of
# the step: slurmstepd stops every process of it, the workers in their
# own sessions too, and runs on itself), fg continues them (CONT); once
# dtctl stopped alone and the workers ran on unwatched ------------------
. "$top_srcdir/tests/fixtures/proc-states.sh"
# wait for a job, at most 60 s (then SIGKILL: a hang is a failure); rc
bounded_wait() {
    i=0
    while kill -0 "$1" 2>/dev/null && [ "$(pstate "$1")" != Z ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 "$1" 2>/dev/null && [ "$(pstate "$1")" != Z ] && kill -KILL "$1"
    wait "$1"; rc=$?
}
# dtctl in a process group of its own, child of this shell (as a shell
# with job control starts it): not orphaned, so SIGTSTP stops it
rm -f "$T"/pid.* "$T/release"
start_in_own_group \
    "$DTCTL" run --launcher=slurm -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
kill -TSTP "$dtpid"
all_in T "$dtpid" || fail "Ctrl-Z with slurm: dtctl did not stop ($(states "$dtpid"))"
# shellcheck disable=SC2086
all_in T $workers || fail "Ctrl-Z with slurm: the workers run on ($(states $workers)): $(cat "$T/e")"
# the workers' slurmstepd (their task shell's parent), read while they
# are stopped: their parents cannot change then (a lookup before the
# stop once found none: cause not known; the diagnostics below say)
ppid_of() { ps -o ppid= -p "$1" 2>/dev/null | tr -d ' '; }
steps=""
for w in $workers; do sh_pid=$(ppid_of "$w"); [ -n "$sh_pid" ] && steps="$steps $(ppid_of "$sh_pid")"; done
[ -n "$(echo $steps)" ] || fail "Ctrl-Z with slurm: no slurmstepd found for workers $workers ($(ps -o pid,ppid,stat,args -e | grep -e "$MARK" -e slurmstepd | grep -v grep))"
# shellcheck disable=SC2086
[ -n "$(echo $steps)" ] && all_in '[RSD]' $steps || fail "Ctrl-Z with slurm: slurmstepd stopped or not found ($steps: $(states $steps))"
grep -q "the workers are stopped too" "$T/e" ||
    fail "Ctrl-Z with slurm: dtctl did not say the workers stopped: $(cat "$T/e")"
kill -CONT "$dtpid"
# shellcheck disable=SC2086
all_in '[RSD]' $workers || fail "fg with slurm: the workers stay stopped ($(states $workers))"
touch "$T/release"
bounded_wait $dtpid
[ $rc -eq 0 ] || fail "Ctrl-Z then fg with slurm: want exit 0, got $rc: $(cat "$T/e")"
settle
ok "Ctrl-Z with slurm stops the workers (not slurmstepd) with dtctl; fg continues them, exit 0"

# dtctl killed while the job is stopped: its guard's SIGTERM to the
# front-end ends the stopped workers too (continued first), nothing left.
rm -f "$T"/pid.* "$T/release"
start_in_own_group \
    "$DTCTL" run --launcher=slurm -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
kill -TSTP "$dtpid"
# shellcheck disable=SC2086
all_in T "$dtpid" $workers || fail "Ctrl-Z with slurm (2): not all stopped ($(states "$dtpid" $workers))"
kill -KILL "$dtpid"
bounded_wait $dtpid
i=0
while leftovers && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
leftovers && fail "stopped workers survived dtctl being killed (slurm): $(pgrep -fa "$MARK")"
settle
jobs_left && fail "jobs left after dtctl was killed while Ctrl-Z'd: $(squeue)"
ok "dtctl killed while Ctrl-Z'd: the job ends, the stopped workers too, nothing left"

# A stop that Slurm refuses (a stand-in scancel fails for STOP) is said:
# dtctl does not claim the workers stopped, and they do run on.
mkdir -p "$T/bin"
real_scancel=$(command -v scancel)
printf '#!/bin/sh\ncase " $* " in *" --signal=STOP "*) echo "scancel: error: stand-in refuses" >&2; exit 1 ;; esac\nexec "%s" "$@"\n' \
    "$real_scancel" >"$T/bin/scancel"
chmod +x "$T/bin/scancel"
rm -f "$T"/pid.* "$T/release"
oldpath=$PATH PATH="$T/bin:$PATH"
start_in_own_group \
    "$DTCTL" run --launcher=slurm -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
PATH=$oldpath
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
kill -TSTP "$dtpid"
all_in T "$dtpid" || fail "Ctrl-Z with a failing scancel: dtctl did not stop ($(states "$dtpid"))"
grep -q "the workers may keep running: scancel --signal=STOP [0-9]* failed (exit 1): scancel: error: stand-in refuses" "$T/e" &&
    grep -q "dtctl and the workers, but not those named above (they keep running)" "$T/e" &&
    ! grep -q "the workers are stopped too" "$T/e" ||
    fail "Ctrl-Z with a failing scancel: not said as it is: $(cat "$T/e")"
# shellcheck disable=SC2086
for w in $workers; do
    [ "$(pstate "$w")" != T ] || fail "Ctrl-Z with a failing scancel: a worker stopped ($(states $workers))"
done
kill -CONT "$dtpid"
touch "$T/release"
bounded_wait $dtpid
[ $rc -eq 0 ] || fail "a failed Ctrl-Z then fg with slurm: want exit 0, got $rc: $(cat "$T/e")"
settle
ok "Ctrl-Z with slurm when scancel fails: dtctl says the workers keep running (they do); fg, exit 0"

# A real dt job inside an allocation (scancel of our step) Ctrl-Z'd for
# longer than [cluster] timeout (2 s) goes on after fg (exit 0, not 124
# "hung"). Rank 1 stops itself after the first allreduce (rank 0 then
# waits on it); Ctrl-Z stops both, fg's CONT continues both. The sleep
# outlasts the timeout; it asserts nothing.
pe="$top_builddir/tests/peer_exit"
if [ -x "$pe" ]; then
    timeout -k 5 120 salloc -n 2 --job-name=outer python3 -c 'import os, sys; os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' \
        "$DTCTL" run --launcher=slurm -n 2 --transport=tcp \
        --set cluster.timeout=2s -x PEER_EXIT_RANK=1 -x PEER_EXIT_MODE=pause \
        -- sh -c ": $MARK; exec \"\$0\"" "$pe" >"$T/pe" 2>&1 &
    job=$!
    i=0 p0="" p1=""
    while [ $i -lt 300 ] && { [ -z "$p0" ] || [ -z "$p1" ]; }; do
        p0=$(sed -n 's/^\[0\] peer_exit: rank 0 pid \([0-9]*\)$/\1/p' "$T/pe" | head -n 1)
        p1=$(sed -n 's/^\[1\] peer_exit: rank 1 pid \([0-9]*\)$/\1/p' "$T/pe" | head -n 1)
        sleep 0.1; i=$((i + 1))
    done
    # dtctl (not timeout or salloc, whose argv has the same words)
    dtpid=""
    for p in $(pgrep -s 0 -f "run --launcher=slurm -n 2 --transport=tcp"); do
        case "$(ps -o comm= -p "$p")" in *dtctl) dtpid=$p ;; esac
    done
    if [ -n "$p0" ] && [ -n "$p1" ] && [ -n "$dtpid" ] && all_in T "$p1"; then
        kill -TSTP "$dtpid"
        all_in T "$dtpid" "$p0" || fail "Ctrl-Z of a dt job inside an allocation: not stopped ($(states "$dtpid" "$p0")): $(cat "$T/pe")"
        sleep 3                  # longer than the 2 s timeout
        kill -CONT "$dtpid"
        bounded_wait $job
        [ $rc -eq 0 ] || fail "a dt job in an allocation Ctrl-Z'd past [cluster] timeout, then fg: want 0, got $rc: $(cat "$T/pe")"
    else
        fail "peer_exit under slurm: the ranks or dtctl not found, or rank 1 did not pause (dtctl: '$dtpid'): $(cat "$T/pe")"
        kill -KILL "$job"; bounded_wait $job
    fi
    settle
    ok "a dt job Ctrl-Z'd inside an allocation longer than [cluster] timeout goes on after fg (exit 0)"
else
    fail "tests/peer_exit is not built ($pe)"
fi

# --- 6b. dtctl itself dies (SIGKILL): salloc gets SIGTERM (its parent-death
# signal), forwards it to srun, and the job ends; nothing is left ----------
rm -f "$T"/pid.*
"$DTCTL" run --launcher=slurm -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; sleep 60 # $MARK" >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ "$(ls "$T" | grep -c '^pid\.')" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
fe=$(pgrep -P $dtpid -x salloc)
[ -n "$fe" ] || fail "dtctl-killed test: no salloc under dtctl: $(cat "$T/e")"
kill -KILL $dtpid
wait $dtpid 2>/dev/null
settle
i=0
while [ -n "$fe" ] && running "$fe" && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
[ -n "$fe" ] && running "$fe" && fail "salloc ($fe) outlived dtctl"
leftovers && fail "workers left after dtctl was killed: $(pgrep -fa "$MARK")"
jobs_left && fail "jobs left after dtctl was killed: $(squeue)"
[ -n "$fe" ] && kill -HUP "$fe" 2>/dev/null
jobs_left && { timeout 20 scancel --user=root; settle; }
ok "dtctl killed by SIGKILL: salloc ended, no process or job left"

# --- 7. an impossible request fails at once, with Slurm's reason -----------------------
run -n 2 --set launcher.slurm.partition=no-such-partition -- true >"$T/o" 2>"$T/e"; rc=$?
# Slurm's own words ("Invalid partition name specified"), not the name
# the test gave, which dtctl's own lines echo
[ $rc -ne 0 ] && grep -qi 'invalid partition' "$T/e" ||
    fail "bad partition: rc=$rc: $(cat "$T/e")"
ok "bad partition refused (exit $rc) with Slurm's reason"

# --- 8. dtctl check against this Slurm -----------------------------------------------
chk() { timeout -k 5 120 "$DTCTL" check --launcher=slurm "$@"; }
chk --set launcher.slurm.partition=debug >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q '^all checks passed' "$T/o" ||
    fail "check against the running slurmctld: rc=$rc: $(cat "$T/o" "$T/e")"
ok "dtctl check --launcher=slurm passes (partition debug)"
# run_on_host: srun -w NODE runs the probes on the node. Interface: the
# one of the default route (loopback would pass only because every worker
# is on this machine); the default host list (localhost) is this node.
IF=$(ip -o route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
[ -n "$IF" ] || IF=$(ip -o -4 addr show up scope global 2>/dev/null | awk '{ print $2; exit }')
NODE=$(hostname -s)
if [ -z "$IF" ]; then
    echo "note: no non-loopback interface here: the interface row is not checked"
else
    for hosts in "" "-H $NODE"; do
        chk $hosts --set cluster.interface="$IF" >"$T/o" 2>"$T/e"; rc=$?
        row=${hosts#-H }; row=${row:-localhost}
        [ $rc -eq 0 ] &&
            grep -q "^$row *interface *ok *$IF [0-9.:a-f]* matches '$IF'" "$T/o" &&
            grep -q "^$row *rendezvous *ok *reaches this machine at " "$T/o" ||
            fail "check ${hosts:-(default hosts)} with interface $IF: rc=$rc: $(cat "$T/o" "$T/e")"
    done
    chk -H "$NODE" --set cluster.interface=nonexistent0 >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 1 ] && grep -q "^$NODE *interface *FAIL *no interface matches \[cluster\] interface = 'nonexistent0' (there: .*$IF" "$T/o" ||
        fail "a wrong interface on $NODE: rc=$rc: $(cat "$T/o" "$T/e")"
    ok "check: the interface ($IF) and rendezvous rows ok on node $NODE through srun; nonexistent0 fails naming it"
    chk -H no-such-node --set cluster.interface="$IF" >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 1 ] && grep -q "^no-such-node *interface *FAIL *could not list the interfaces there" "$T/o" &&
        grep -q "srun could not run 'sh' on node no-such-node: srun: error: " "$T/e" ||
        fail "a host that is no Slurm node: rc=$rc: $(cat "$T/o" "$T/e")"
    ok "check: a host that is no Slurm node fails its row, srun's reason logged"
fi
jobs_left && fail "probe jobs left in the queue: $(squeue)"
# Inside an allocation the probes are steps of it (--overlap).
timeout -k 5 120 salloc -n 1 --job-name=chkin "$DTCTL" check --launcher=slurm -H "$NODE" >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q "^$NODE *rendezvous *ok" "$T/o" ||
    fail "check inside an allocation: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check inside an allocation: the probe runs as a step there"
chk --set launcher.slurm.partition=nope >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] && grep -q "^slurmctld *launcher *FAIL *partition 'nope' does not exist" "$T/o" ||
    fail "bad partition not reported by check: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check names the bad partition 'nope' (exit $rc)"
timeout -k 5 120 salloc -n 2 --job-name=chk "$DTCTL" check --launcher=slurm -n 3 >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] && grep -q "^allocation *launcher *FAIL *-n 3 does not fit allocation [0-9]*, which holds 2 tasks" "$T/o" ||
    fail "-n beyond the allocation not reported: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check inside a 2-task allocation refuses -n 3 (exit $rc)"
printf 'ClusterName=none\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\n' >"$T/down.conf"
SLURM_CONF=$T/down.conf chk >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] && grep -q "^slurmctld *launcher *FAIL *slurmctld does not answer" "$T/o" ||
    fail "a controller that does not answer: rc=$rc: $(cat "$T/o" "$T/e")"
# ... and no host is "ready" then; the gpu row names srun, not an old dt
grep -q "^localhost *launcher *ok" "$T/o" &&
    fail "controller down, yet localhost ready: $(cat "$T/o")"
grep -q "^localhost *gpu .*the slurm launcher could not run dt-train there" "$T/o" ||
    fail "controller down: the gpu row does not name the launcher: $(cat "$T/o")"
ok "check reports a slurmctld that does not answer (exit $rc); no host ready"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all slurm launcher checks passed"
