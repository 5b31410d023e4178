#!/bin/sh
# launcher_sge.sh — the sge launcher against a REAL Son of Grid Engine:
# a private single-node cluster (sge_qmaster + sge_execd of the Debian
# packages, own SGE_ROOT and ports, a parallel environment with $fill_up
# and control_slaves TRUE) started here, once, and torn down on exit.
# Checks: worker environment and ranks, output per rank, argument
# quoting, the token in no argv and not in qstat -j, dtctl's environment
# in the workers and not in qstat -j (export_env), exit status of a
# failing rank with its host, a failure stops every worker (none left),
# a restart after a failure (--max-restarts: a new job), job_name made
# unique (its qdel by name spares another job of that name), SIGINT qdels
# the job, Ctrl-Z stops dtctl alone and says why (the workers run on),
# dtctl killed by SIGKILL leaves no job (qsub's parent-death signal), a
# rejected submission is explained.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-sge.XXXXXX") || exit 99
chmod 755 "$T"
MARK="dtsgetest$$"
. "$top_srcdir/tests/fixtures/sge-cluster.sh"
cleanup() {
    sge_cluster_stop
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

transports=$("$DTCTL" plugins | awk '$1 == "transport" && $4 == "available" { print $2 }')
if [ -z "$transports" ]; then
    echo "SKIP: no transport plugin is built, so dtctl run cannot start"
    exit 77
fi
if echo "$transports" | grep -qx tcp; then TR=""; else
    TR="--transport=$(echo "$transports" | head -n 1)"
fi
if ! "$DTCTL" plugins | awk '$1 == "launcher" && $2 == "sge"' | grep -q available; then
    echo "SKIP: the sge launcher is not available: $("$DTCTL" plugins | grep -A1 ' sge ')"
    exit 77
fi

SLOTS=4
mkdir "$T/sge" "$T/shared"
sge_cluster_start "$T/sge" $SLOTS; rc=$?
if [ $rc -eq 77 ]; then
    echo "SKIP: cannot start a private Grid Engine: $SGE_SKIP_REASON"
    exit 77
elif [ $rc -ne 0 ]; then
    # installed and root, yet it did not come up: a failure, not a skip
    echo "ERROR: the private Grid Engine did not start: $SGE_SKIP_REASON"
    exit 99
fi
echo "Grid Engine up: SGE_ROOT=$SGE_ROOT qmaster port $SGE_QMASTER_PORT"
HOST=$(hostname)

export DT_LAUNCHER_SGE_PE=dtpe DT_LAUNCHER_SGE_SHARED_DIR="$T/shared"
export DT_CLUSTER_KILL_GRACE=2s
# Bounded: a bug must fail the test, never hang it.
run() { DT_TEST_SECRET="${SECRET:-}" JOB_ID=dtctl-side timeout -k 5 120 "$DTCTL" run $TR --launcher=sge "$@"; }
no_jobs() { [ -z "$(qstat 2>/dev/null)" ]; }
# A worker that exec'ed sleep has lost the marker from its argv: its
# sleep carries this test's PID instead (sleep 100.PID).
leftovers() { pgrep -f "$1" >/dev/null 2>&1 || pgrep -f "sleep 100\\.$$\$" >/dev/null 2>&1; }
# A process that runs (an orphan that ended may stay a zombie here: PID 1
# of a container need not reap).
running() { st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
wait_jobs_gone() { # SGE may need a moment to clean up after qdel
    for i in $(seq 100); do no_jobs && return 0; sleep 0.2; done
    return 1
}

# --- 1. environment contract, ranks host by host, output per rank --------
run -n 4 -- sh -c 'echo "R=$DT_RANK/$DT_WORLD_SIZE L=$DT_LOCAL_RANK/$DT_LOCAL_SIZE N=$DT_NODE_RANK/$DT_NUM_NODES H=$DT_HOST T=$RANK,$WORLD_SIZE,$LOCAL_RANK,$LOCAL_WORLD_SIZE,$GROUP_RANK,$GROUP_WORLD_SIZE,$ROLE_RANK M=$MASTER_ADDR P=$MASTER_PORT ID=$DT_JOB_ID TL=${#DT_JOB_TOKEN} SGEJOB=${JOB_ID:-none} PWD=$(pwd)"; echo "e$DT_RANK" >&2' \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] || fail "4-rank env job exited $rc: $(cat "$T/e")"
for r in 0 1 2 3; do
    grep -q "^\[$r\] R=$r/4 L=$r/4 N=0/1 H=$HOST T=$r,4,$r,4,0,1,$r M=$HOST P=[0-9][0-9]* ID=[0-9a-f][0-9a-f]* TL=64 SGEJOB=[0-9][0-9]* PWD=$(pwd)\$" "$T/o" \
        || fail "rank $r: environment wrong or missing: $(cat "$T/o")"
    grep -qx "\[$r\] e$r" "$T/e" || fail "rank $r: stderr line missing: $(cat "$T/e")"
done
[ "$(wc -l <"$T/o")" -eq 4 ] || fail "want 4 stdout lines: $(cat "$T/o")"
[ "$(sed -n 's/.* ID=\([0-9a-f]*\) .*/\1/p' "$T/o" | sort -u | wc -l)" -eq 1 ] \
    || fail "ranks disagree on DT_JOB_ID"
grep -q "sge: job [0-9]* (dt-" "$T/e" || fail "no submission message: $(cat "$T/e")"
[ -z "$(ls -A "$T/shared")" ] || fail "job directory left behind: $(ls -A "$T/shared")"
wait_jobs_gone || fail "job still in qstat: $(qstat)"
ok "environment, ranks and per-rank output"

# --- 2. arguments reach the worker exactly --------------------------------
run -n 1 -- printf '<%s>\n' 'two words' "it's" '$HOME' 'a"b' '*' '' >"$T/o" 2>"$T/e" \
    || fail "quoting job failed: $(cat "$T/e")"
printf '[0] <%s>\n' 'two words' "it's" '$HOME' 'a"b' '*' '' >"$T/want"
cmp -s "$T/o" "$T/want" || fail "arguments changed on the way: $(cat "$T/o")"
ok "argument quoting"

# --- 3. the token: in no argv (any process), not in qstat -j --------------
run -n 2 -- sh -c 'ps -eo args >"$0.ps.$DT_RANK"; qstat -j "$JOB_ID" >"$0.qstat.$DT_RANK" 2>&1; echo "$DT_JOB_TOKEN" >"$0.tok.$DT_RANK"' "$T/$MARK" \
    >"$T/o" 2>"$T/e" || fail "token job failed: $(cat "$T/e")"
tok=$(cat "$T/$MARK.tok.0" 2>/dev/null)
[ ${#tok} -eq 64 ] && [ "$tok" = "$(cat "$T/$MARK.tok.1")" ] || fail "token missing or different between ranks"
grep -q "$MARK" "$T/$MARK.ps.0" || fail "ps snapshot missed the job"
grep -q "env_list\|job_number" "$T/$MARK.qstat.0" || fail "qstat -j gave nothing: $(cat "$T/$MARK.qstat.0")"
if [ -n "$tok" ] && grep -q "$tok" "$T/$MARK.ps.0" "$T/$MARK.ps.1" "$T/$MARK.qstat.0" "$T/o" "$T/e"; then
    fail "the job token is visible in ps, qstat -j or dtctl's output"
fi
if grep -rqs "$tok" "$SGE_ROOT/execd" 2>/dev/null; then fail "the token is in SGE's spool"; fi
ok "token not in argv, qstat -j, spool or logs"

# --- 3b. export_env: dtctl's environment reaches the workers, not qstat -j -
# (qsub -V would put it in the job record, which qstat -j shows to every
# user of the cell.) SGE's own per-job values stay SGE's.
SECRET="sec$$-it's a \"value\"
second line"
run -n 2 -- sh -c 'printf "%s\n" "$DT_TEST_SECRET" >"$0.sec.$DT_RANK"; qstat -j "$JOB_ID" >"$0.qstat.$DT_RANK" 2>&1; echo "J=$JOB_ID"' "$T/$MARK" \
    >"$T/o" 2>"$T/e" || fail "export_env job failed: $(cat "$T/e")"
for r in 0 1; do
    [ "$(cat "$T/$MARK.sec.$r" 2>/dev/null)" = "$SECRET" ] ||
        fail "rank $r did not get dtctl's variable exactly: '$(cat "$T/$MARK.sec.$r" 2>/dev/null)'"
    grep -qx "\[$r\] J=[0-9][0-9]*" "$T/o" || fail "rank $r: JOB_ID is not SGE's: $(cat "$T/o")"
done
grep -q "job_number" "$T/$MARK.qstat.0" || fail "qstat -j gave nothing: $(cat "$T/$MARK.qstat.0")"
grep -q "sec$$" "$T/$MARK.qstat.0" "$T/$MARK.qstat.1" && fail "dtctl's environment is in qstat -j: $(grep "sec$$" "$T/$MARK.qstat.0" | head -2)"
run -n 1 --set launcher.sge.export_env=no -- sh -c 'echo "S=${DT_TEST_SECRET:-unset}"' >"$T/o" 2>"$T/e" ||
    fail "export_env = no job failed: $(cat "$T/e")"
grep -qx "\[0\] S=unset" "$T/o" || fail "export_env = no still gave the workers dtctl's environment: $(cat "$T/o")"
[ -z "$(ls -A "$T/shared")" ] || fail "job directory (and its env file) left behind: $(ls -A "$T/shared")"
ok "export_env: the workers get dtctl's variables exactly, qstat -j does not show them"

# --- 4. a failing rank: its code and host, the others stopped -------------
run -n 4 -- sh -c 'if [ $DT_RANK = 2 ]; then sleep 1; exit 7; fi; exec sleep "100.$1"' "$MARK-fail" "$$" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 7 ] || fail "want exit 7 from rank 2, got $rc: $(cat "$T/e")"
grep -q "rank 2 on $HOST exited with code 7" "$T/e" || fail "error does not name rank 2 and host: $(cat "$T/e")"
grep -q "qdel" "$T/e" || fail "the job was not qdel'ed: $(cat "$T/e")"
wait_jobs_gone || fail "job still in qstat after the failure: $(qstat)"
if leftovers "$MARK-fail"; then fail "workers left: $(pgrep -fa "$MARK-fail")"; fi
ok "failure: exit code, rank and host, nothing left"

# --- 4b. restart (--max-restarts): a new job (qsub) per attempt ----------
P='[ "$DT_RESTART_COUNT" -ge 1 ] || { [ "$DT_RANK" = 1 ] && exit 3; }; echo "ok-$DT_RANK-$DT_RESTART_COUNT job=$JOB_ID"'
run -n 2 --max-restarts 1 --set cluster.restart_backoff=100ms -- sh -c "$P" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q "restart 1 of 1: rank 1 on $HOST exited with code 3" "$T/e" &&
    grep -q '^\[0\] ok-0-1 job=[0-9]' "$T/o" && grep -q '^\[1\] ok-1-1 job=[0-9]' "$T/o" &&
    [ "$(grep -c "sge: job [0-9]* (dt-" "$T/e")" -eq 2 ] ||
    fail "restart under SGE: rc=$rc: $(cat "$T/o" "$T/e")"
wait_jobs_gone || fail "job still in qstat after the restart: $(qstat)"
ok "restart 1 of 1 after rank 1 exited 3: a second SGE job ran both ranks"

# --- 4c. job_name is a prefix: the name is this job's alone --------------
# Without a job number (qsub silent for submit_timeout) dtctl qdels by
# name; a held job of the same user named "train" must survive that.
run -n 1 --set launcher.sge.job_name=train -- true >"$T/o" 2>"$T/e" ||
    fail "job_name=train: exit $?: $(cat "$T/e")"
grep -q "sge: job [0-9]* (train-[0-9a-f]*) submitted" "$T/e" ||
    fail "job_name=train is not made unique: $(grep 'sge: job' "$T/e")"
decoy=$(qsub -terse -h -N train -b y /bin/true 2>&1)
case $decoy in ''|*[!0-9]*) fail "cannot submit the held decoy job: $decoy"; decoy= ;; esac
run -n 1 --set launcher.sge.job_name=train --set launcher.sge.submit_timeout=1ms \
    -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "qsub gave no job number" "$T/e" &&
    grep -q "qdel train-[0-9a-f]*: SGE stops" "$T/e" ||
    fail "submit_timeout=1ms: want a failure and qdel train-<id>: rc=$rc: $(cat "$T/e")"
if [ -n "$decoy" ]; then
    qstat -j "$decoy" >/dev/null 2>&1 ||
        fail "dtctl's qdel by name deleted another job named train ($decoy)"
    qdel "$decoy" >/dev/null 2>&1
fi
wait_jobs_gone || fail "jobs left after the job_name checks: $(qstat)"
ok "job_name=train submits train-<job id>; its qdel by name leaves the user's job 'train' alone"

# --- 5. SIGINT to dtctl qdels the job -------------------------------------
"$DTCTL" run $TR --launcher=sge -n 3 -- sh -c 'echo up; exec sleep "100.$1"' "$MARK-int" "$$" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 300); do [ "$(grep -c up "$T/o")" -eq 3 ] && break; sleep 0.1; done
[ "$(grep -c up "$T/o")" -eq 3 ] || fail "SIGINT test: workers did not start: $(cat "$T/e")"
kill -INT $bg
( sleep 60; kill -KILL $bg 2>/dev/null ) & guard=$!
wait $bg; rc=$?
kill $guard 2>/dev/null
[ $rc -eq 130 ] || fail "SIGINT: want exit 130, got $rc: $(cat "$T/e")"
grep -q "qdel" "$T/e" || fail "SIGINT did not qdel: $(cat "$T/e")"
wait_jobs_gone || fail "job still in qstat after SIGINT: $(qstat)"
if leftovers "$MARK-int"; then fail "workers left after SIGINT: $(pgrep -fa "$MARK-int")"; fi
ok "SIGINT qdels the job, nothing left"

# --- 5a. Ctrl-Z stops dtctl alone, and says why: qmod -sj (the stop a
# job's owner may use) stops the job script, not the workers that qrsh
# -inherit started (sge_execd passes over them), so they keep running,
# as said; fg, and the job ends normally -----------------------------
. "$top_srcdir/tests/fixtures/proc-states.sh"
rm -f "$T"/pid.* "$T"/beat.* "$T/release"
# dtctl in a process group of its own, child of this shell (as a shell
# with job control starts it): not orphaned, so SIGTSTP stops it. Each
# worker counts in beat.R until released (at most 60 s).
start_in_own_group \
    "$DTCTL" run $TR --launcher=sge -n 2 -- sh -c "echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do i=\$((i + 1)); echo \$i >$T/beat.\$DT_RANK; sleep 0.1; done # $MARK-tstp" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
[ -n "$workers" ] || fail "Ctrl-Z with sge: the workers did not start: $(cat "$T/e")"
# dtctl may not supervise them yet (in the sanitizer build the workers
# once wrote their pids first): a Ctrl-Z then is kept for the supervisor,
# which says the same (it once stopped dtctl alone without a word)
kill -TSTP "$dtpid"
i=0
while [ "$(pstate "$dtpid")" != T ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(pstate "$dtpid")" = T ] || fail "Ctrl-Z with sge: dtctl did not stop ($(pstate "$dtpid"))"
grep -q "stopped (SIGTSTP, Ctrl-Z): dtctl alone; the workers keep running (the sge launcher cannot stop them: qmod -sj stops the job script, not the workers qrsh -inherit started)" "$T/e" ||
    fail "Ctrl-Z with sge: dtctl does not say that it stopped alone, and why: $(cat "$T/e")"
grep -q "the workers are stopped too" "$T/e" && fail "Ctrl-Z with sge: dtctl claims the workers stopped: $(cat "$T/e")"
# What it says holds: while dtctl is stopped the workers are not, and
# go on counting (bounded: 10 s).
for w in $workers; do
    [ "$(pstate "$w")" != T ] || fail "Ctrl-Z with sge: worker $w is stopped, yet dtctl says they keep running"
done
b0=$(cat "$T/beat.0" 2>/dev/null); i=0
while [ "$(cat "$T/beat.0" 2>/dev/null)" = "$b0" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$T/beat.0" 2>/dev/null)" != "$b0" ] || fail "Ctrl-Z with sge: rank 0 stopped counting ($b0)"
# Why: qmod -sj stops the job script (its group, with the qrsh clients)
# but not the workers. A Grid Engine that stops them too gets a note, not
# a failure: the launcher could then use it (docs/LAUNCHERS.md).
jid=$(sed -n 's/.*sge: job \([0-9]*\) (dt-.*/\1/p' "$T/e" | head -n 1)
script=$(pgrep -f "$SGE_ROOT/execd/[^ ]*/job_scripts/$jid\$" | head -n 1)
if [ -n "$jid" ] && [ -n "$script" ] && qmod -sj "$jid" >/dev/null 2>&1; then
    i=0
    while [ "$(pstate "$script")" != T ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    stopped=0
    for w in $workers; do [ "$(pstate "$w")" = T ] && stopped=$((stopped + 1)); done
    if [ "$(pstate "$script")" != T ]; then
        fail "qmod -sj $jid did not stop the job script ($script: $(pstate "$script"))"
    elif [ $stopped -gt 0 ]; then
        echo "note: qmod -sj stopped $stopped worker(s) here: the sge launcher could stop them on Ctrl-Z"
    fi
    qmod -usj "$jid" >/dev/null 2>&1 || fail "qmod -usj $jid failed"
else
    fail "Ctrl-Z with sge: no job number ('$jid'), job script ('$script') or qmod -sj: $(cat "$T/e")"
fi
kill -CONT "$dtpid"
touch "$T/release"
( sleep 60; kill -KILL $dtpid 2>/dev/null ) & guard=$!
wait $dtpid; rc=$?
kill $guard 2>/dev/null
[ $rc -eq 0 ] || fail "Ctrl-Z then fg with sge: want exit 0, got $rc: $(cat "$T/e")"
wait_jobs_gone || fail "job still in qstat after Ctrl-Z and fg: $(qstat)"
if leftovers "$MARK-tstp"; then fail "workers left after Ctrl-Z and fg: $(pgrep -fa "$MARK-tstp")"; fi
ok "Ctrl-Z with sge: dtctl stops alone and says why (the workers run on, as said); fg, exit 0"

# --- 5b. dtctl itself dies (SIGKILL): qsub -sync y gets SIGTERM (its
# parent-death signal) and cancels the job; nothing is left --------------
"$DTCTL" run $TR --launcher=sge -n 2 -- sh -c 'echo up; exec sleep "100.$1"' "$MARK-die" "$$" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 300); do [ "$(grep -c up "$T/o")" -eq 2 ] && break; sleep 0.1; done
[ "$(grep -c up "$T/o")" -eq 2 ] || fail "dtctl-killed test: workers did not start: $(cat "$T/e")"
q=$(pgrep -P $bg -x qsub)
kill -KILL $bg
wait $bg 2>/dev/null
wait_jobs_gone || fail "job still in qstat after dtctl was killed: $(qstat)"
for i in $(seq 50); do [ -n "$q" ] && running "$q" || break; sleep 0.2; done
[ -n "$q" ] && running "$q" && fail "qsub ($q) outlived dtctl"
if leftovers "$MARK-die"; then fail "workers left after dtctl was killed: $(pgrep -fa "$MARK-die")"; fi
[ -n "$q" ] && kill -KILL "$q" 2>/dev/null
no_jobs || { qdel -f -u '*' >/dev/null 2>&1; wait_jobs_gone; }
rm -rf "$T"/shared/job-*
ok "dtctl killed by SIGKILL: qsub ended, the job is gone, nothing left"

# --- 6. a job SGE rejects is explained -------------------------------------
run -n 2 --set launcher.sge.pe=nosuchpe -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 127 ] || fail "unknown PE: want 127, got $rc"
grep -q "qsub rejected the job" "$T/e" && grep -q "nosuchpe" "$T/e" || fail "unclear rejection: $(cat "$T/e")"
run -n 9 -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 127 ] || fail "9 slots on a 4-slot cluster: want 127 (rejected by -w e), got $rc: $(cat "$T/e")"
ok "rejected submissions"

# --- 7. a real dt job, when the example is built ---------------------------
if [ -x "$top_builddir/examples/allreduce" ]; then
    run -n 4 -- "$top_builddir/examples/allreduce" >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 0 ] || fail "examples/allreduce under SGE exited $rc: $(tail -5 "$T/e")"
    ok "examples/allreduce, 4 ranks under SGE"
else
    echo "note: examples/allreduce is not built; skipped the dt job check"
fi

# --- 8. dtctl check: probes run on the execution host through qrsh --------
# Interface: the one of the default route (a loopback never counts for
# [cluster] interface); the default host list (localhost) is this host.
chk() { timeout -k 5 300 "$DTCTL" check --launcher=sge "$@"; }
IF=$(ip -o route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
[ -n "$IF" ] || IF=$(ip -o -4 addr show up scope global 2>/dev/null | awk '{ print $2; exit }')
if [ -z "$IF" ]; then
    echo "note: no non-loopback interface here: the interface row is not checked"
else
    for hosts in "" "-H $HOST"; do
        chk $hosts --set cluster.interface="$IF" >"$T/o" 2>"$T/e"; rc=$?
        row=${hosts#-H }; row=${row:-localhost}
        [ $rc -eq 0 ] &&
            grep -q "^$row *interface *ok *$IF [0-9.:a-f]* matches '$IF'" "$T/o" &&
            grep -q "^$row *rendezvous *ok *reaches this machine at " "$T/o" ||
            fail "check ${hosts:-(default hosts)} with interface $IF: rc=$rc: $(cat "$T/o" "$T/e")"
    done
    chk -H "$HOST" --set cluster.interface=nonexistent0 >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 1 ] && grep -q "^$HOST *interface *FAIL *no interface matches \\[cluster\\] interface = 'nonexistent0' (there: .*$IF" "$T/o" ||
        fail "a wrong interface on $HOST: rc=$rc: $(cat "$T/o" "$T/e")"
    chk -H no-such-host.invalid --set cluster.interface="$IF" >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 1 ] && grep -q "^no-such-host.invalid *interface *FAIL *could not list the interfaces there" "$T/o" &&
        grep -q "qrsh could not run 'sh' on host no-such-host.invalid: " "$T/e" ||
        fail "a host SGE does not know: rc=$rc: $(cat "$T/o" "$T/e")"
    ok "check: interface ($IF) and rendezvous rows ok on $HOST through qrsh; nonexistent0 and an unknown host fail"
fi
wait_jobs_gone || fail "probe jobs left in qstat: $(qstat)"

# --- 9. [launcher.sge] pe unset: the cell's one PE that fits is used ------
# README's canonical command as written: no pe anywhere.
unset DT_LAUNCHER_SGE_PE
data=/usr/share/datasets/fashion-mnist
tr=tcp
"$DTCTL" plugins | awk '$1 == "transport" && $2 == "ucx"' | grep -q available && tr=ucx
if [ -r "$data/train-images-idx3-ubyte.gz" ]; then
    printf '[train]\nepochs = 1\nbatch_size = 50\ndevice = cpu\n[model]\nlayers = flatten linear(10)\n[data]\ntrain_samples = 500\ntest_samples = 200\n' >"$T/job.ini"
    (cd "$T" && timeout -k 5 180 "$DTCTL" --launcher=sge --transport=$tr -n 2 run job.ini -v) >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 0 ] && grep -q "final test accuracy: .*2 workers" "$T/o" ||
        fail "dtctl --launcher=sge --transport=$tr -n 2 run job.ini (pe unset): exit $rc: $(grep -i error "$T/e" | head -3)"
else
    run -v -n 2 -- true >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 0 ] || fail "pe unset, -n 2 -- true: exit $rc: $(grep -i error "$T/e" | head -3)"
fi
grep -q "sge: \[launcher.sge\] pe is not set: using parallel environment dtpe, the only one of this cell that can hold 2 workers" "$T/e" ||
    fail "-v does not say which PE was chosen: $(grep -i 'pe\b\|parallel' "$T/e" | head -3)"
wait_jobs_gone || fail "job still in qstat: $(qstat)"
# A second PE with one slot cannot hold 2 workers: dtpe is still the one.
sed -e 's/^pe_name .*/pe_name dtsmall/' -e 's/^slots .*/slots 1/' "$SGE_ROOT/pe.conf" >"$T/small.conf"
qconf -Ap "$T/small.conf" >/dev/null 2>&1 || fail "qconf -Ap dtsmall failed"
run -v -n 2 -- true >"$T/o" 2>"$T/e" || fail "pe unset with dtsmall (1 slot) beside dtpe: exit $?: $(grep -i error "$T/e" | head -3)"
grep -q "using parallel environment dtpe, .*dtsmall (slots 1, control_slaves TRUE): too few slots" "$T/e" ||
    fail "dtsmall was not set aside for its slots: $(grep -i 'parallel' "$T/e" | head -3)"
# Two PEs that fit: no guess, the error lists them.
sed -e 's/^pe_name .*/pe_name dtpe2/' "$SGE_ROOT/pe.conf" >"$T/pe2.conf"
qconf -Ap "$T/pe2.conf" >/dev/null 2>&1 || fail "qconf -Ap dtpe2 failed"
run -n 2 -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "pe is not set and more than one of this cell's parallel environments can hold 2 workers .*dtpe (slots 999, control_slaves TRUE).*dtpe2 (slots 999, control_slaves TRUE).*--set launcher.sge.pe=NAME" "$T/e" ||
    fail "two fitting PEs: want an error listing dtpe and dtpe2, got exit $rc: $(grep -i 'error' "$T/e" | head -3)"
no_jobs || fail "a job was submitted although no PE was chosen: $(qstat)"
ok "pe unset: the one PE that fits is used (-v says so, a too-small one set aside); two that fit are listed"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all launcher_sge checks passed"
