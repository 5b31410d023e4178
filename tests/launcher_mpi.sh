#!/bin/sh
# launcher_mpi.sh — `dtctl run --launcher=mpi` against the real Open MPI
# mpirun on this machine: a real dt job (examples/allreduce), the worker
# environment (dt's and torchrun's names from mpirun's ranks), output per
# rank, the exit status and name of a failing rank, a restart after it
# (--max-restarts), a killed worker, Ctrl-C, preemption (a checkpoint
# written on SIGTERM), Ctrl-Z and fg (the workers
# stop and continue with dtctl, a dt job too), dtctl itself killed (mpirun's
# parent-death signal), no process left behind, the job token in no argv,
# and `dtctl check`.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun is not installed (Debian: apt install openmpi-bin)"
    exit 77
fi
if ! "$DTCTL" plugins | grep -q '^launcher *mpi .*available'; then
    echo "SKIP: the mpi launcher plugin is not built or not available:"
    "$DTCTL" plugins | grep mpi
    exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-mpi.XXXXXX") || exit 99
MARK="dtmpitest$$"               # unique word in every worker we start
cleanup() {
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# Never inherit a job's identity from the environment running the tests.
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN OMPI_COMM_WORLD_RANK \
    SLURM_PROCID SLURM_JOB_ID 2>/dev/null
# 2 cores here: more ranks than cores needs --oversubscribe.
export DT_LAUNCHER_MPI_OVERSUBSCRIBE=yes
export DT_CLUSTER_KILL_GRACE=3s
run() { timeout -k 5 60 "$DTCTL" run --launcher=mpi "$@"; }
leftovers() { pgrep -f "$MARK" >/dev/null 2>&1; }

# --- 1. a real dt job: every collective over the tcp transport --------------
ex="$top_builddir/examples/allreduce"
if [ -x "$ex" ]; then
    if run -n 4 -- "$ex" >"$T/o" 2>"$T/e" &&
        grep -q '^\[0\] allreduce example: 4 ranks, all collectives correct' "$T/o"; then
        ok "allreduce example, 4 ranks under mpirun"
    else
        fail "allreduce under mpirun: $(cat "$T/o" "$T/e")"
    fi
else
    fail "examples/allreduce is not built ($ex)"
fi

# --- 2. environment: dt's and torchrun's names, per rank --------------------
run -n 3 -- sh -c 'echo "R=$DT_RANK/$DT_WORLD_SIZE L=$DT_LOCAL_RANK/$DT_LOCAL_SIZE N=$DT_NODE_RANK/$DT_NUM_NODES H=$DT_HOST T=$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE/$GROUP_RANK/$ROLE_RANK O=$OMPI_COMM_WORLD_RANK TL=${#DT_JOB_TOKEN} RV=${DT_RENDEZVOUS:+set}"; echo "to-err $DT_RANK" >&2' \
    >"$T/o" 2>"$T/e" || fail "env job exited $?: $(cat "$T/e")"
for r in 0 1 2; do
    grep -qx "\[$r\] R=$r/3 L=$r/3 N=0/1 H=localhost T=$r/3/$r/3/0/$r O=$r TL=64 RV=set" "$T/o" ||
        fail "rank $r environment wrong: $(cat "$T/o")"
    grep -qx "\[$r\] to-err $r" "$T/e" || fail "rank $r stderr not on stderr: $(cat "$T/e")"
done
[ "$(wc -l <"$T/o")" -eq 3 ] || fail "want exactly 3 stdout lines: $(cat "$T/o")"
grep -q 'dt-exit:' "$T/o" "$T/e" && fail "exit markers leaked into the output"
ok "worker environment and per-rank output"

# dtctl's stdin (a pipe) reaches rank 0 through mpirun, and only rank 0:
# the prologue's `&` must not swap it for /dev/null.
printf 'a\nb\n' | run -n 2 -- sh -c 'echo "lines=$(wc -l)"' >"$T/o" 2>"$T/e" ||
    fail "stdin job exited $?: $(cat "$T/e")"
grep -qx '\[0\] lines=2' "$T/o" && grep -qx '\[1\] lines=0' "$T/o" ||
    fail "stdin: want rank 0 to read 2 lines and rank 1 none: $(cat "$T/o")"
ok "dtctl's stdin reaches rank 0 only, through mpirun"

# --- 3. failure: the rank and its exit status come back ---------------------
run -n 4 -- sh -c "if [ \$DT_RANK = 2 ]; then exit 7; fi; sleep 60 # $MARK" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 7 ] || fail "want exit 7 from rank 2, got $rc: $(cat "$T/e")"
grep -q 'rank 2 on localhost exited with code 7' "$T/e" ||
    fail "stderr does not name rank 2: $(cat "$T/e")"
leftovers && fail "workers left after a failing rank: $(pgrep -fa "$MARK")"
ok "exit status 7 of rank 2 propagated, nothing left"

# --- 3b. restart (--max-restarts): a new mpirun runs every rank again -------
P='[ "$DT_RESTART_COUNT" -ge 1 ] || { [ "$DT_RANK" = 1 ] && exit 3; }; echo "ok-$DT_RANK-$DT_RESTART_COUNT"'
run -n 2 --max-restarts 1 --set cluster.restart_backoff=100ms -- sh -c "$P" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q "restart 1 of 1: rank 1 on localhost exited with code 3" "$T/e" &&
    grep -qx '\[0\] ok-0-1' "$T/o" && grep -qx '\[1\] ok-1-1' "$T/o" ||
    fail "restart under mpirun: rc=$rc: $(cat "$T/o" "$T/e")"
ok "restart 1 of 1 after rank 1 exited 3: the second mpirun ran both ranks"

# --- 4. a worker killed by SIGKILL: the others are stopped ------------------
# Each rank leaves a background child too: it must go with the job.
run -n 3 -- sh -c "sh -c 'sleep 60; true # $MARK-bg' & echo \$\$ >$T/pid.\$DT_RANK; sleep 60 # $MARK" \
    >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ ! -s "$T/pid.1" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/pid.1" ] && kill -KILL "$(cat "$T/pid.1")"
wait $dtpid; rc=$?
[ $rc -eq 137 ] || fail "want 137 for a SIGKILLed rank, got $rc: $(cat "$T/e")"
grep -q 'rank 1 on localhost was killed by signal 9' "$T/e" ||
    fail "no message naming rank 1: $(cat "$T/e")"
sleep 0.5
leftovers && fail "processes left after a killed worker: $(pgrep -fa "$MARK")"
ok "killed worker named, no process left"

# --- 5. Ctrl-C stops every rank ------------------------------------------------
rm -f "$T"/pid.*
run -n 3 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; sleep 60 # $MARK" >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ "$(ls "$T" | grep -c '^pid\.')" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
# SIGINT as from Ctrl-C, to dtctl itself (the shell made `timeout`
# ignore it: a background job).
kill -INT "$(pgrep -P $dtpid)"
wait $dtpid; rc=$?
[ $rc -eq 130 ] || fail "want 130 after SIGINT, got $rc: $(cat "$T/e")"
sleep 0.5
leftovers && fail "processes left after Ctrl-C: $(pgrep -fa "$MARK")"
ok "Ctrl-C stops the job, exit 130"

# --- 5p. preemption (SIGUSR1 to dtctl): each rank writes its checkpoint on
# SIGTERM and exits 75; rank 1's takes 2 s. dtctl exits 75 (resumable).
# mpirun's own SIGTERM reached the ranks after 1 s and its SIGKILL came 1 s
# later (Open MPI's odls_base_sigkill_timeout): rank 1 was killed and
# dtctl exited 138. Now mpirun forwards SIGUSR1, which each prologue
# passes on as SIGTERM, and [cluster] kill_grace (20 s here) rules.
rm -f "$T"/pid.*
# dtctl itself, not `run`'s timeout (SIGUSR1 would end timeout alone);
# kill_grace bounds it
"$DTCTL" run --launcher=mpi -n 2 --set cluster.kill_grace=20s -- sh -c "trap 'sleep \$((DT_RANK * 2)); exit 75' TERM; echo \$\$ >$T/pid.\$DT_RANK; while :; do sleep 0.1; done # $MARK" \
    >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ "$(ls "$T" | grep -c '^pid\.')" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
kill -USR1 $dtpid
wait $dtpid; rc=$?
[ $rc -eq 75 ] || fail "preempted with a 2 s checkpoint: want exit 75, got $rc: $(cat "$T/e")"
for r in 0 1; do
    grep -q "rank $r on localhost was preempted: resumable (exit code 75)" "$T/e" ||
        fail "preemption: rank $r's exit 75 not reported: $(cat "$T/e")"
done
! grep -q "Forwarding signal\|dt-exit:" "$T/e" "$T/o" ||
    fail "preemption: mpirun's or the prologue's own lines reached the output: $(cat "$T/e" "$T/o")"
sleep 0.3
leftovers && fail "processes left after a preemption: $(pgrep -fa "$MARK")"
ok "preemption: a rank's 2 s checkpoint is not cut short by mpirun, exit 75"

# --- 5a. Ctrl-Z stops the workers with dtctl, fg continues them: mpirun
# forwards SIGUSR2 and SIGCONT to each rank's prologue shell, which passes
# them on to its worker (in a session of its own: mpirun's SIGTSTP, a
# SIGSTOP of the shell's group, missed it). Once dtctl stopped alone and
# the workers ran on unwatched.
. "$top_srcdir/tests/fixtures/proc-states.sh"
# wait for dtctl, at most 30 s (then SIGKILL: a hang is a failure); rc
bounded_wait() {
    i=0
    while kill -0 "$1" 2>/dev/null && [ "$(pstate "$1")" != Z ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 "$1" 2>/dev/null && [ "$(pstate "$1")" != Z ] && kill -KILL "$1"
    wait "$1"; rc=$?
}
rm -f "$T"/pid.* "$T/release"
# dtctl in a process group of its own, child of this shell (as a shell
# with job control starts it): not orphaned, so SIGTSTP stops it
start_in_own_group \
    "$DTCTL" run --launcher=mpi -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
shells=""
for w in $workers; do shells="$shells $(ps -o ppid= -p "$w")"; done
kill -TSTP "$dtpid"
all_in T "$dtpid" || fail "Ctrl-Z with mpi: dtctl did not stop ($(states "$dtpid"))"
# shellcheck disable=SC2086
all_in T $workers || fail "Ctrl-Z with mpi: the workers run on ($(states $workers)): $(cat "$T/e")"
# shellcheck disable=SC2086
all_in '[RSD]' $shells || fail "Ctrl-Z with mpi stopped the prologue shells ($(states $shells))"
grep -q "the workers are stopped too" "$T/e" ||
    fail "Ctrl-Z with mpi: dtctl did not say the workers stopped: $(cat "$T/e")"
! grep -q "Forwarding signal\|dt-ctl:" "$T/e" "$T/o" ||
    fail "Ctrl-Z with mpi: mpirun's or the relay's own lines reached the output: $(cat "$T/e" "$T/o")"
kill -CONT "$dtpid"
# shellcheck disable=SC2086
all_in '[RSD]' $workers || fail "fg with mpi: the workers stay stopped ($(states $workers))"
touch "$T/release"
bounded_wait $dtpid
[ $rc -eq 0 ] || fail "Ctrl-Z then fg with mpi: want exit 0, got $rc: $(cat "$T/e")"
ok "Ctrl-Z with mpi stops the workers (not their prologue shells) with dtctl; fg continues them, exit 0"

# dtctl killed while the job is stopped: its guard's SIGTERM to the
# front-end ends the stopped workers too (continued first), nothing left.
rm -f "$T"/pid.* "$T/release"
start_in_own_group \
    "$DTCTL" run --launcher=mpi -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
kill -TSTP "$dtpid"
# shellcheck disable=SC2086
all_in T "$dtpid" $workers || fail "Ctrl-Z with mpi (2): not all stopped ($(states "$dtpid" $workers))"
kill -KILL "$dtpid"
bounded_wait $dtpid
i=0
while leftovers && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
leftovers && fail "stopped workers survived dtctl being killed (mpi): $(pgrep -fa "$MARK")"
ok "dtctl killed while Ctrl-Z'd: mpirun ends the stopped workers, nothing left"

# A rank that cannot confirm the stop (its prologue shell stopped from
# outside, so it cannot pass SIGUSR2 on) is named after 5 s, and dtctl
# does not claim that every worker stopped: rank 0's did, rank 1's runs.
rm -f "$T"/pid.* "$T/release"
start_in_own_group \
    "$DTCTL" run --launcher=mpi -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
w0=$(cat "$T/pid.0") w1=$(cat "$T/pid.1")
sh1=$(ps -o ppid= -p "$w1" | tr -d ' ')
kill -STOP "$sh1"
kill -TSTP "$dtpid"
all_in T "$dtpid" "$w0" || fail "Ctrl-Z with a mute rank: dtctl or rank 0's worker not stopped ($(states "$dtpid" "$w0"))"
grep -q "1 rank (1) did not confirm the stop within 5 s: their workers may keep running" "$T/e" &&
    grep -q "dtctl and the workers, but not those named above (they keep running)" "$T/e" &&
    ! grep -q "the workers are stopped too" "$T/e" ||
    fail "Ctrl-Z with a mute rank: not said as it is: $(cat "$T/e")"
[ "$(pstate "$w1")" != T ] || fail "Ctrl-Z with a mute rank: its worker stopped, yet it was said to run on"
kill -CONT "$sh1"
kill -CONT "$dtpid"
all_in '[RSD]' "$w0" || fail "fg after a mute rank: rank 0's worker stays stopped ($(states "$w0"))"
# Rank 1's shell, continued by hand, passes on the stop it was sent while
# stopped; under load mpirun's forward of it came after fg (once in a
# loaded CI run: rank 1's worker stayed stopped, exit 137). dtctl reads
# that late confirmation and continues it again
# (launcher_mpi_late_stop.sh forces that order).
all_in '[RSD]' "$w1" || fail "fg after a mute rank: rank 1's worker stays stopped ($(states "$w1"))"
touch "$T/release"
bounded_wait $dtpid
[ $rc -eq 0 ] || fail "Ctrl-Z with a mute rank, then fg: want exit 0, got $rc: $(cat "$T/e")"
ok "Ctrl-Z with mpi: a rank that does not confirm is named, its worker said (and left) running; fg, exit 0"

# A real dt job Ctrl-Z'd for longer than [cluster] timeout (2 s) under
# mpirun goes on after fg (exit 0, not 124 "hung"). Rank 1 stops itself
# after the first allreduce (rank 0 then waits on it); Ctrl-Z stops both,
# fg's CONT continues both. The sleep outlasts the timeout; it asserts
# nothing.
pe="$top_builddir/tests/peer_exit"
if [ -x "$pe" ]; then
    start_in_own_group \
        "$DTCTL" run --launcher=mpi -n 2 --transport=tcp \
        --set cluster.timeout=2s -x PEER_EXIT_RANK=1 -x PEER_EXIT_MODE=pause \
        -- sh -c ": $MARK; exec \"\$0\"" "$pe" >"$T/pe" 2>&1
    dtpid=$own_group_pid
    i=0 p0="" p1=""
    while [ $i -lt 200 ] && { [ -z "$p0" ] || [ -z "$p1" ]; }; do
        p0=$(sed -n 's/^\[0\] peer_exit: rank 0 pid \([0-9]*\)$/\1/p' "$T/pe" | head -n 1)
        p1=$(sed -n 's/^\[1\] peer_exit: rank 1 pid \([0-9]*\)$/\1/p' "$T/pe" | head -n 1)
        sleep 0.1; i=$((i + 1))
    done
    if [ -n "$p0" ] && [ -n "$p1" ] && all_in T "$p1"; then
        kill -TSTP "$dtpid"
        all_in T "$dtpid" "$p0" || fail "Ctrl-Z of a dt job under mpi: not stopped ($(states "$dtpid" "$p0"))"
        sleep 3                  # longer than the 2 s timeout
        kill -CONT "$dtpid"
        bounded_wait $dtpid
        [ $rc -eq 0 ] || fail "a dt job under mpi Ctrl-Z'd past [cluster] timeout, then fg: want 0, got $rc: $(cat "$T/pe")"
    else
        fail "peer_exit under mpi: the ranks did not start or rank 1 did not pause: $(cat "$T/pe")"
        kill -KILL "$dtpid"; bounded_wait $dtpid
    fi
    ok "a dt job Ctrl-Z'd under mpi longer than [cluster] timeout goes on after fg (exit 0)"
else
    fail "tests/peer_exit is not built ($pe)"
fi

# --- 5b. dtctl itself dies (SIGKILL): mpirun gets SIGTERM (its parent-death
# signal) and ends every rank; then it removes its session directory (in
# $TMPDIR): it died of SIGPIPE at the ranks' last lines (nobody reads its
# output any more) and left /tmp/ompi.HOST.UID/pid.N behind, each time --
rm -f "$T"/pid.*
mkdir -p "$T/fe-tmp"
TMPDIR="$T/fe-tmp" "$DTCTL" run --launcher=mpi -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; sleep 60 # $MARK" >"$T/o" 2>"$T/e" &
dtpid=$!
i=0
while [ "$(ls "$T" | grep -c '^pid\.')" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
fe=$(pgrep -P $dtpid -x mpirun)
[ -n "$fe" ] || fail "dtctl-killed test: no mpirun under dtctl: $(cat "$T/e")"
kill -KILL $dtpid
wait $dtpid 2>/dev/null
# an orphan that ended may stay a zombie here (PID 1 need not reap)
running() { st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
i=0
while { leftovers || { [ -n "$fe" ] && running "$fe"; }; } && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -n "$fe" ] && running "$fe" && fail "mpirun ($fe) outlived dtctl"
leftovers && fail "ranks left after dtctl was killed: $(pgrep -fa "$MARK")"
[ -n "$fe" ] && left=$(find "$T/fe-tmp" -mindepth 2 -maxdepth 2 -name "pid.$fe") &&
    [ -n "$left" ] && fail "mpirun ($fe) left its session directory $left (killed by SIGPIPE?)"
[ -n "$fe" ] && kill -KILL "$fe" 2>/dev/null
for p in $(cat "$T"/pid.* 2>/dev/null); do kill -KILL -- -"$p" 2>/dev/null; done # if left
ok "dtctl killed by SIGKILL: mpirun and every rank ended, mpirun's session directory removed"

# --- 5c. a rank's prologue shell killed outright (mpirun's SIGKILL, 1 s
# after its SIGTERM, can come before a busy shell passed the stop on): the
# worker, in a session of its own, gets SIGTERM from the kernel (setpriv
# --pdeathsig) instead of running on ----------------------------------------
if setpriv --pdeathsig TERM -- true 2>/dev/null; then
    rm -f "$T"/pid.* "$T/term"
    run -n 1 -- sh -c "echo \$\$ >$T/pid.0; trap 'echo yes >$T/term; exit 0' TERM
        while :; do sleep 0.1; done # $MARK" >"$T/o" 2>"$T/e" &
    dtpid=$!
    i=0
    while [ ! -s "$T/pid.0" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    w=$(cat "$T/pid.0" 2>/dev/null)
    pro=$(ps -o ppid= -p "${w:-0}" 2>/dev/null | tr -d ' ')
    if [ -n "$pro" ] && [ "$pro" -gt 1 ] && kill -KILL "$pro"; then
        i=0
        while [ ! -s "$T/term" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        [ -s "$T/term" ] || fail "the worker got no SIGTERM when its prologue shell was killed"
    else
        fail "prologue-killed test: no rank or prologue found: $(cat "$T/e")"
    fi
    wait $dtpid 2>/dev/null
    sleep 0.3
    leftovers && { fail "ranks left after the prologue was killed: $(pgrep -fa "$MARK")"; pkill -KILL -f "$MARK"; }
    ok "a killed prologue shell takes its worker with it (SIGTERM)"
else
    echo "note: setpriv has no --pdeathsig here: a killed prologue shell is not covered"
fi

# --- 6. a program that does not exist -----------------------------------------
run -n 2 -- dt-no-such-program-$MARK >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 127 ] || fail "want 127 for a missing program, got $rc"
grep -q 'exited with code 127' "$T/e" || fail "no exit message: $(cat "$T/e")"
# said by the rank's prologue with rank, host and what to do (it was
# setpriv's "failed to execute", naming neither)
grep -q "^\[\([01]\)\] dt: error: rank \1 on [^:]*: cannot execute 'dt-no-such-program-$MARK': command not found in PATH=.*: install it there, or give its full path" "$T/o" "$T/e" ||
    fail "missing program: no clear message: $(cat "$T/o" "$T/e")"
grep -q 'setpriv' "$T/o" "$T/e" && fail "missing program: setpriv's message: $(cat "$T/o" "$T/e")"
ok "missing program: 127, said with rank and host"

# --- 7. the job token is in no process's argv -------------------------------
run -n 2 -- sh -c "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' >$T/argv.\$DT_RANK; echo \$DT_JOB_TOKEN >$T/tok.\$DT_RANK" \
    >/dev/null 2>&1 || fail "argv scan job failed"
tok=$(cat "$T/tok.0" 2>/dev/null)
if [ ${#tok} -ne 64 ]; then
    fail "workers did not get a 64-hex token: '$tok'"
elif grep -q "$tok" "$T"/argv.*; then
    fail "the job token appears in some process's argv"
else
    ok "job token in no argv while the job ran"
fi

# --- 8. configuration reaches mpirun: a bad option is refused by mpirun ------
run -n 1 --set launcher.mpi.extra_args=--no-such-mpirun-option -- true \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] || fail "extra_args did not reach mpirun (a bad option was accepted)"
bad_rc=$rc
# Words split as sh would, commas kept: "--mca btl self,tcp" is three
# words (a comma-separated list made it "--mca btl self tcp": mpirun ran
# a program named tcp), and a quoted value with a space stays one word.
run -n 2 --set "launcher.mpi.extra_args=--mca btl self,tcp --mca orte_tmpdir_base '$T/tmp dir'" \
    -- sh -c 'echo "btl=$OMPI_MCA_btl tmp=$OMPI_MCA_orte_tmpdir_base"' >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -qx "\[0\] btl=self,tcp tmp=$T/tmp dir" "$T/o" ||
    fail "extra_args with a comma inside a word did not run (exit $rc): $(tail -3 "$T/e")"
run -n 1 --set "launcher.mpi.extra_args=--mca btl 'self" -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "extra_args = .* has a quote left open" "$T/e" ||
    fail "an open quote in extra_args was not refused with its origin (exit $rc): $(cat "$T/e")"
ok "extra_args passed to mpirun (exit $bad_rc for a bad option), split as sh would (self,tcp one word)"

# --- 9. dtctl check: passes here; names what is wrong, with the fix -------
chk() { timeout -k 5 120 "$DTCTL" check --launcher=mpi "$@"; }
chk >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q '^localhost *launcher *ok' "$T/o" &&
    grep -q '^all checks passed' "$T/o" ||
    fail "check on this machine: rc=$rc: $(cat "$T/o" "$T/e")"
ok "dtctl check --launcher=mpi passes here"
# a remote host that does not exist: its row says why
chk -H localhost:2,nohost.invalid:2 >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] && grep -q '^nohost.invalid *launcher *FAIL .*does not resolve' "$T/o" ||
    fail "unreachable host not reported: rc=$rc: $(cat "$T/o" "$T/e")"
grep -q '^localhost *launcher *ok' "$T/o" || fail "localhost blamed too: $(cat "$T/o")"
ok "check names the unreachable host nohost.invalid (exit $rc)"
# no rsh agent to reach other hosts with
chk -H nohost.invalid --set launcher.mpi.rsh_agent=dt-no-agent-$MARK >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] && grep -q "^mpirun *launcher *FAIL .*rsh agent (dt-no-agent-$MARK) is not on PATH" "$T/o" ||
    fail "missing rsh agent not reported: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check names a missing rsh agent (exit $rc)"
# settings mpirun would refuse
chk --set launcher.mpi.map_by=bogus --set launcher.mpi.bind_to=nowhere >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] && grep -q "map_by = 'bogus' is not an Open MPI mapping policy" "$T/o" &&
    grep -q "bind_to = 'nowhere' is not an Open MPI binding policy" "$T/o" ||
    fail "bad map_by/bind_to not reported: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check reports bad map_by and bind_to (exit $rc)"
# PATH without Open MPI's programs (every other tool is still there)
mkdir "$T/bin"
for f in /usr/local/bin/* /usr/bin/* /bin/*; do
    case ${f##*/} in mpirun | mpiexec | orterun | oshrun) continue ;; esac
    [ -e "$T/bin/${f##*/}" ] || ln -s "$f" "$T/bin/${f##*/}"
done
PATH=$T/bin chk >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "'mpirun' is not on PATH: install Open MPI (Debian: apt install openmpi-bin)" "$T/e" ||
    fail "mpirun missing from PATH not reported: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check without mpirun on PATH fails (exit $rc) and says how to fix it"
chk --set launcher.mpi.mpirun=/nonexistent/mpirun >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "mpirun = '/nonexistent/mpirun' was not found" "$T/e" ||
    fail "a configured mpirun that does not exist: rc=$rc: $(cat "$T/o" "$T/e")"
ok "check with a configured mpirun that does not exist fails (exit $rc)"

# --- 10. the ssh_* keys: refused when unusable, with the key named ----------
run -n 1 --set launcher.mpi.ssh_identity="$T/no-such-key" -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "ssh_identity = '$T/no-such-key' cannot be read" "$T/e" ||
    fail "a missing ssh_identity was not refused by name (rc $rc): $(cat "$T/e")"
: >"$T/kh"
run -n 1 --set launcher.mpi.ssh_known_hosts="$T/kh" --set launcher.mpi.rsh_agent=ssh -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "rsh_agent is set together with ssh_identity" "$T/e" ||
    fail "rsh_agent with ssh_known_hosts was not refused (rc $rc): $(cat "$T/e")"
run -n 1 --set launcher.mpi.ssh_port=70000 -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "ssh_port = 70000 is not a port" "$T/e" ||
    fail "ssh_port 70000 was not refused (rc $rc): $(cat "$T/e")"
ok "ssh_identity / ssh_known_hosts / ssh_port errors name the key"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all mpi launcher checks passed"
