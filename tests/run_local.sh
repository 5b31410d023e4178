#!/bin/sh
# run_local.sh — `dtctl run` with the local launcher, against the real
# dtctl and real processes: environment, output lines, exit codes, failure
# propagation, stop signals, no leftover processes, token secrecy.
set -u

name=run-local
MARK="dtrunlocal$$"              # unique word in every process we start
. "$top_srcdir/tests/check_common.sh"

# Every dtctl call is bounded: a bug must fail the test, never hang it.
# 90 s, not 30: the pid-reuse case (its rank 1 waits up to 20 s) met 30
# in a distcheck beside a sanitizer run (load 12 on 2 cores).
dt() { timeout -k 5 90 "$DTCTL" "$@"; }
pick_transport
run() { dt run $TR "$@"; }
export DT_CLUSTER_KILL_GRACE=2s   # keep stop tests short

leftovers() { pgrep -f "$1" >/dev/null 2>&1; }

# --- 1. environment and line prefixes --------------------------------------
out=$(run -n 3 -- sh -c 'echo $DT_RANK/$DT_WORLD_SIZE' 2>"$T/err"); rc=$?
[ $rc -eq 0 ] || fail "3 echo workers exited $rc: $(cat "$T/err")"
for r in 0 1 2; do
    echo "$out" | grep -qx "\[$r\] $r/3" || fail "no line '[$r] $r/3' in: $out"
done
[ "$(echo "$out" | wc -l)" -eq 3 ] || fail "want exactly 3 lines, got: $out"
ok "rank lines"

out=$(run -n 2 -- sh -c 'echo "R=$RANK W=$WORLD_SIZE L=$LOCAL_RANK LW=$LOCAL_WORLD_SIZE G=$GROUP_RANK A=$MASTER_ADDR P=$MASTER_PORT H=$DT_HOST N=$DT_NODE_RANK/$DT_NUM_NODES LS=$DT_LOCAL_SIZE ID=$DT_JOB_ID TL=${#DT_JOB_TOKEN}"') \
    || fail "torch env job failed"
for r in 0 1; do
    line=$(echo "$out" | grep "^\[$r\] ")
    echo "$line" | grep -q "R=$r W=2 L=$r LW=2 G=0 A=127.0.0.1 P=[1-9][0-9]* H=localhost N=0/1 LS=2 ID=[0-9a-f][0-9a-f]* TL=64" \
        || fail "rank $r environment wrong: $line"
done
ports=$(echo "$out" | sed -n 's/.* P=\([0-9]*\) .*/\1/p' | sort -u | wc -l)
[ "$ports" -eq 1 ] || fail "ranks disagree on MASTER_PORT: $out"
# A master_port the user sets is kept on one machine too (it was replaced
# by a free port, silently), and one out of range is refused with its origin.
out=$(run -n 2 --set cluster.master_port=29611 -- sh -c 'echo "P=$MASTER_PORT"') ||
    fail "master_port 29611: exit $?"
[ "$(echo "$out" | grep -c '^\[[01]\] P=29611$')" -eq 2 ] || fail "master_port 29611 not kept: $out"
# ...unless another job holds it: a free port, said (two local jobs with
# one cluster file's master_port would otherwise collide)
python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 29612)); s.listen(); print("up", flush=True); time.sleep(30)' >"$T/held" &
holder=$!
i=0; while ! grep -q up "$T/held" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
out=$(run -n 1 --set cluster.master_port=29612 -- sh -c 'echo "P=$MASTER_PORT"' 2>"$T/e")
kill $holder 2>/dev/null; wait $holder 2>/dev/null
case $out in "[0] P=29612" | "[0] P=") fail "master_port in use: $out" ;; esac
grep -q "master_port = 29612 is in use on this machine" "$T/e" || fail "master_port in use not said: $(cat "$T/e")"
run -n 1 --set cluster.master_port=99999 -- true 2>"$T/e"
rc=$?
[ $rc -eq 2 ] && grep -q "^dt: error: --set: \[cluster\] master_port = 99999 is not a TCP port" "$T/e" ||
    fail "master_port 99999: rc=$rc $(cat "$T/e")"
ok "torch-style variables; an explicit master_port kept, a bad one refused"

# As torchrun's workers: Python's output unbuffered (a pipe to dtctl held
# print() until exit), OMP threads shared out among a host's workers; the
# user's own values win.
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) # nproc reads them
want=$((cpus / 2)); [ $want -ge 1 ] || want=1
out=$(env -u PYTHONUNBUFFERED -u OMP_NUM_THREADS "$DTCTL" run -n 2 -- sh -c 'echo "PU=$PYTHONUNBUFFERED OMP=$OMP_NUM_THREADS"' 2>"$T/e")
[ "$(echo "$out" | grep -c "^\[[01]\] PU=1 OMP=$want\$")" -eq 2 ] || fail "program defaults: $out"
grep -q "OMP_NUM_THREADS=$want for each worker (2 workers share a host's CPUs)" "$T/e" ||
    fail "OMP_NUM_THREADS not said: $(cat "$T/e")"
out=$(PYTHONUNBUFFERED= OMP_NUM_THREADS=3 "$DTCTL" run -n 2 -- sh -c 'echo "PU=[$PYTHONUNBUFFERED] OMP=$OMP_NUM_THREADS"' 2>/dev/null)
[ "$(echo "$out" | grep -c '^\[[01]\] PU=\[\] OMP=3$')" -eq 2 ] || fail "the user's values not kept: $out"
out=$(env -u OMP_NUM_THREADS "$DTCTL" run -n 1 -- sh -c 'echo "OMP=[$OMP_NUM_THREADS]"' 2>/dev/null)
[ "$out" = "[0] OMP=[]" ] || fail "one worker: OMP_NUM_THREADS set: $out"
ok "PYTHONUNBUFFERED and OMP_NUM_THREADS for a program, the user's values kept"

# -x NAME[=VALUE] (mpirun's) and [cluster] env_vars: dtctl's value or the
# given one, for every launcher (ssh passes only the job's variables); a
# name dt sets itself, or no name at all, is refused before anything runs
out=$(DTX_FOO=bar "$DTCTL" run -n 2 --set "cluster.env_vars=DTX_A='x y'" -x DTX_FOO -x "DTX_B=a b,c'q" \
    -x OMP_NUM_THREADS=7 -x DTX_UNSET -- sh -c 'echo "$DTX_FOO|$DTX_A|$DTX_B|$OMP_NUM_THREADS|${DTX_UNSET-unset}"' 2>"$T/e")
[ "$(echo "$out" | grep -c "^\[[01]\] bar|x y|a b,c'q|7|unset\$")" -eq 2 ] || fail "-x / env_vars: $out $(cat "$T/e")"
grep -q "env_vars: DTX_UNSET is not set in dtctl's environment" "$T/e" || fail "-x of an unset variable not said: $(cat "$T/e")"
! grep -q "OMP_NUM_THREADS=[0-9]* for each worker" "$T/e" || fail "-x OMP_NUM_THREADS=7, yet dtctl says its own: $(cat "$T/e")"
for bad in RANK=3 DT_RANK MASTER_PORT=1 1A=2; do
    run -n 1 -x "$bad" -- sh -c "echo RAN" >"$T/o" 2>"$T/e"
    rc=$?
    [ $rc -eq 2 ] && ! grep -q RAN "$T/o" && grep -q "^dt: error: -x: \[cluster\] env_vars: " "$T/e" ||
        fail "-x $bad: rc=$rc $(cat "$T/o" "$T/e")"
done
ok "-x NAME[=VALUE] and [cluster] env_vars reach the workers; dt's own names refused"

# torchrun's habit (a script named alone) and a program in the directory
# without ./: the error says what to write
mkdir -p "$T/wd2" && printf 'print(1)\n' >"$T/wd2/tr.py" && printf '#!/bin/sh\n' >"$T/wd2/prog" && chmod +x "$T/wd2/prog"
(cd "$T/wd2" && "$DTCTL" run -n 1 -- tr.py) 2>"$T/e"
grep -q "cannot execute 'tr.py': No such file or directory; a Python script runs as: -- python3 SCRIPT.py" "$T/e" ||
    fail "a .py named alone: $(cat "$T/e")"
(cd "$T/wd2" && "$DTCTL" run -n 1 -- prog) 2>"$T/e"
grep -q "cannot execute 'prog': .*where PATH is not searched: write ./PROGRAM" "$T/e" ||
    fail "a program in the directory without ./: $(cat "$T/e")"
# A directory named as the program (EACCES): said, not "chmod +x".
mkdir -p "$T/wd2/sub"
(cd "$T/wd2" && "$DTCTL" run -n 1 -- ./sub) 2>"$T/e"
grep -q "cannot execute './sub': Permission denied; it is a directory: name the program inside it" "$T/e" ||
    fail "a directory as the program: $(cat "$T/e")"
# An environment too large to exec (E2BIG): said with the likely cause.
# ulimit -s 512 makes the limit 128 KiB (its floor); three 60 KB
# variables from a job file exceed it, while dtctl's own exec does not.
python3 -c "v = 'a' * 60000; print('[cluster]\nenv_vars = A=%s,B=%s,C=%s' % (v, v, v))" >"$T/big.ini"
(ulimit -s 512 && "$DTCTL" run -n 1 --config "$T/big.ini" -- true) 2>"$T/e"
grep -q "cannot execute 'true': Argument list too long; .*a very large variable from \[cluster\] env_vars" "$T/e" ||
    fail "an environment too large to exec: $(cat "$T/e")"
ok "a script or program named the torchrun way: the error says what to write"

# Two names of this machine are one host to number: a LOCAL_RANK (a GPU,
# CPU cores) each, one GROUP_RANK; DT_HOST keeps each entry's name.
out=$(run -H localhost:2,127.0.0.1:2 -- sh -c 'echo "$RANK L=$LOCAL_RANK/$LOCAL_WORLD_SIZE G=$GROUP_RANK/$GROUP_WORLD_SIZE H=$DT_HOST"' 2>"$T/err") ||
    fail "two names of this machine: exit $?: $(cat "$T/err")"
for want in "0 L=0/4 G=0/1 H=localhost" "1 L=1/4 G=0/1 H=localhost" \
    "2 L=2/4 G=0/1 H=127.0.0.1" "3 L=3/4 G=0/1 H=127.0.0.1"; do
    echo "$out" | grep -qx "\[${want%% *}\] $want" ||
        fail "two names of this machine: want '$want' in: $out"
done
grep -q "hosts 'localhost', '127.0.0.1' all name this machine.*-H localhost:4" "$T/err" ||
    fail "two names of this machine: no line says so: $(cat "$T/err")"
ok "two names of this machine (localhost, 127.0.0.1): LOCAL_RANK 0-3, one group"

# stderr of a worker stays on stderr, prefixed
run -n 1 -- sh -c 'echo to-out; echo to-err >&2' >"$T/o" 2>"$T/e" || fail "stdout/stderr job failed"
grep -qx '\[0\] to-out' "$T/o" && grep -qx '\[0\] to-err' "$T/e" && ! grep -q to-err "$T/o" \
    || fail "streams mixed: out=$(cat "$T/o") err=$(cat "$T/e")"
# a last line without newline is still printed
out=$(run -n 1 -- printf 'no newline') || fail "printf job failed"
[ "$out" = "[0] no newline" ] || fail "partial last line lost: '$out'"
ok "streams and partial lines"

# --- 2. failure propagation ------------------------------------------------
run -n 3 -- sh -c 'exit $((DT_RANK==1 ? 7 : 0))' >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 7 ] || fail "want exit 7 from rank 1, got $rc"
grep -q 'rank 1 on localhost exited with code 7' "$T/e" || fail "stderr does not name rank 1: $(cat "$T/e")"
ok "exit code of the failing rank"

run -n 2 -- sh -c '[ $DT_RANK = 1 ] && kill -9 $$; exit 0' >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 137 ] || fail "want 137 for a SIGKILLed worker, got $rc"
grep -q 'rank 1 on localhost was killed by signal 9' "$T/e" || fail "no signal message: $(cat "$T/e")"
ok "worker killed by signal"

# rank 1 fails; its siblings sleep 100 s (and leave a background child):
# dtctl must stop them at once, within the guard (below their 100 s), and leave nothing.
run -n 3 -- sh -c 'sh -c "sleep 100; true" '"$MARK"'-bg &
    if [ $DT_RANK = 1 ]; then sleep 0.2; exit 5; fi
    sh -c "sleep 100; true" '"$MARK"'-fg' >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 5 ] || fail "want 5 from the failing rank, got $rc: $(cat "$T/e")"
if leftovers "$MARK"; then fail "processes left: $(pgrep -fa "$MARK")"; fi
ok "failure stops siblings, no leftovers"

# A worker's child that leaves its process group (setsid, a daemon) comes
# back to dtctl, the child subreaper: ended, it must be reaped (it stayed a
# zombie of dtctl, one per worker and restart); running when its attempt
# ends, it must end with it (it ran on past the job, one per restart).
# 3 attempts x 2 workers, each leaving a short-lived one (orphaned at
# once by its subshell) and a long-lived one.
run -n 2 --max-restarts 2 --set cluster.restart_backoff=0s -- sh -c '
    s=short; (setsid sh -c "sleep 0.1; true" "'"$MARK"'-$s$DT_RANK" &)
    setsid sh -c "sleep 100; true" '"$MARK"'-setsid &
    # the short one ended first (under load it may not have started yet:
    # a count taken before its end saw nothing to reap)
    i=0; while pgrep -f "'"$MARK"'-$s$DT_RANK" >/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    # zombies among dtctl'"'"'s children (/proc: state Z, parent dtctl),
    # counted until none for up to 5 s
    zombies() { n=0; for f in /proc/[0-9]*/stat; do
        read -r st <"$f" 2>/dev/null || continue
        set -- ${st##*) }; [ "$1" = Z ] && [ "$2" = $PPID ] && n=$((n + 1)); done; echo $n; }
    i=0; while [ "$(zombies)" -gt 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    zombies >"'"$T"'/zombies.$DT_RESTART_COUNT.$DT_RANK"
    # rank 1 fails once rank 0 counted: its own exit, not yet reaped,
    # must not be counted as a zombie
    i=0; while [ $DT_RANK = 1 ] && [ ! -s "'"$T"'/zombies.$DT_RESTART_COUNT.0" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ $DT_RANK = 1 ] && exit 3; sleep 100' >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 3 ] || fail "want 3 after the restarts, got $rc: $(cat "$T/e")"
z=$(cat "$T"/zombies.2.* 2>/dev/null | sort -n | tail -n 1)
[ "${z:-x}" = 0 ] || fail "zombies under dtctl in the third attempt: ${z:-none counted}"
if leftovers "$MARK-setsid"; then fail "setsid children left: $(pgrep -fa "$MARK-setsid")"; fi
ok "children that left their group: reaped, none left"

# torchrun's restart and role variables: the count per attempt, the run
# id kept across restarts (a script resumes on TORCHELASTIC_RESTART_COUNT)
run -n 2 --max-restarts 1 --set cluster.restart_backoff=0s -- sh -c \
    'echo "TE $RANK $TORCHELASTIC_RESTART_COUNT/$TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_RUN_ID $ROLE_NAME $ROLE_RANK/$ROLE_WORLD_SIZE $DT_JOB_ID"; exit 3' \
    >"$T/o" 2>"$T/e"
for want in "0 0/1" "1 0/1" "0 1/1" "1 1/1"; do
    grep -q "^\[[01]\] TE $want [0-9a-f]* default [01]/2 " "$T/o" ||
        fail "torchrun variables: no line 'TE $want ...' in: $(cat "$T/o")"
done
[ "$(sed -n 's/^\[.\] TE [0-9] [0-9]\/1 \([0-9a-f]*\) .*/\1/p' "$T/o" | sort -u | wc -l)" -eq 1 ] ||
    fail "TORCHELASTIC_RUN_ID changed across the restart: $(cat "$T/o")"
[ "$(sed -n 's/^\[.\] TE .* \([0-9a-f]*\)$/\1/p' "$T/o" | sort -u | wc -l)" -eq 2 ] ||
    fail "want a new DT_JOB_ID per attempt: $(cat "$T/o")"
ok "torchrun's TORCHELASTIC_* and ROLE_* variables, the run id kept across restarts"

# --- 3. stop signals ------------------------------------------------------
# Workers write their parent's pid (dtctl) so the signal goes to dtctl
# alone, as from a terminal or a scheduler.
stop_test() { # signal expected-code
    tag="$MARK-$1"
    rm -f "$T/ppid".*
    run -n 2 -- sh -c 'echo $PPID >"$0.$DT_RANK"; sh -c "sleep 100; true" '"$tag"'; true' \
        "$T/ppid" >"$T/o" 2>"$T/e" &
    bg=$!
    for i in $(seq 100); do [ -s "$T/ppid.0" ] && [ -s "$T/ppid.1" ] && break; sleep 0.05; done
    p=$(cat "$T/ppid.0" 2>/dev/null)
    [ -n "$p" ] && kill -"$1" "$p" || fail "SIG$1: workers did not start"
    wait $bg; rc=$?
    [ $rc -eq "$2" ] || fail "SIG$1 to dtctl: want exit $2, got $rc: $(cat "$T/e")"
    # (dtctl killed by the signal exits 128+S too, without a word)
    grep -q "received .*: stopping the job" "$T/e" ||
        fail "SIG$1 to dtctl: no 'received ...: stopping the job': $(cat "$T/e")"
    if leftovers "$tag"; then fail "SIG$1 left processes: $(pgrep -fa "$tag")"; fi
}
stop_test INT 130
stop_test TERM 143
stop_test QUIT 131   # Ctrl-\
stop_test USR2 140
# A Ctrl-C reaches a program's workers as SIGINT, as from a terminal (and
# torchrun): Python's KeyboardInterrupt, so a handler that saves a
# checkpoint runs (they got SIGTERM, which Python does not turn into an
# exception). Rank 0 is a shell that says which signal came; rank 1 a
# Python script catching KeyboardInterrupt. SIGTERM to dtctl stays SIGTERM.
sig_test() { # signal: what rank 0 must have got
    tag="$MARK-sig$1"
    rm -f "$T/ppid".* "$T/got".*
    # (rank 1 writes its file once in the try: a SIGINT before it would
    # hit Python's start-up, not the handler)
    run -n 2 -- sh -c 'if [ $DT_RANK = 1 ]; then exec python3 -c "
import os, sys, time
try:
    open(sys.argv[1] + \".1\", \"w\").write(\"%d\\n\" % os.getppid())
    time.sleep(100)
except KeyboardInterrupt:
    open(sys.argv[2] + \".saved\", \"w\").write(\"checkpoint\\n\")
    sys.exit(130)" "$1" "$2" "$3"; fi
        trap "echo INT >$2.0; exit 130" INT
        trap "echo TERM >$2.0; exit 143" TERM
        echo $PPID >"$1.$DT_RANK"
        while :; do sleep 0.1; done' sh "$T/ppid" "$T/got" "$tag" >"$T/o" 2>"$T/e" &
    bg=$!
    for i in $(seq 200); do [ -s "$T/ppid.0" ] && [ -s "$T/ppid.1" ] && break; sleep 0.05; done
    p=$(cat "$T/ppid.0" 2>/dev/null)
    [ -n "$p" ] && [ -s "$T/ppid.1" ] && kill -"$1" "$p" || fail "SIG$1 to a program: workers did not start"
    wait $bg; rc=$?
    [ "$(cat "$T/got.0" 2>/dev/null)" = "$1" ] ||
        fail "SIG$1 to dtctl: rank 0 got '$(cat "$T/got.0" 2>/dev/null)', want $1: $(cat "$T/e")"
    if leftovers "$tag"; then fail "SIG$1 left processes: $(pgrep -fa "$tag")"; fi
}
sig_test INT
[ $rc -eq 130 ] || fail "Ctrl-C to a program: want exit 130, got $rc: $(cat "$T/e")"
[ -s "$T/got.saved" ] || fail "Ctrl-C: the Python rank's KeyboardInterrupt handler did not run: $(cat "$T/o" "$T/e")"
grep -q "received Interrupt: stopping the job (SIGINT to every worker" "$T/e" ||
    fail "Ctrl-C: dtctl did not say the workers get SIGINT: $(cat "$T/e")"
sig_test TERM
[ $rc -eq 143 ] || fail "SIGTERM to a program: want exit 143, got $rc: $(cat "$T/e")"
ok "Ctrl-C reaches a program's workers as SIGINT (Python's KeyboardInterrupt handler saves), SIGTERM as SIGTERM"
# ... also while dtctl's output pipe is full and nobody reads it (a paused
# pager): the blocked write must not hold the stop up. The reader sleeps
# 60 s; dtctl must be gone well before (kill_grace is 2 s here).
rm -f "$T/ppid".*
tag="$MARK-blocked"
( run -n 2 -- sh -c 'echo $PPID >"$0.$DT_RANK"; exec yes '"$tag" "$T/ppid" 2>"$T/e" |
    sh -c "sleep 60; : $MARK-reader" ) &
for i in $(seq 100); do [ -s "$T/ppid.0" ] && break; sleep 0.05; done
p=$(cat "$T/ppid.0" 2>/dev/null)
if [ -n "$p" ]; then
    sleep 0.5 # the pipe fills
    kill -INT "$p"
    for i in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
        fail "SIGINT to dtctl writing to a full pipe: still running after 15 s"
        kill -KILL "$p"
    fi
    # (timeout, whose command line holds the tag too, ends just after
    # dtctl: up to 5 s for it, the workers had to be gone already)
    for i in $(seq 50); do pgrep -f "^timeout .*$tag" >/dev/null || break; sleep 0.1; done
    if leftovers "$tag"; then fail "blocked output: processes left: $(pgrep -fa "$tag" | head -3)"; fi
else
    fail "blocked output: workers did not start"
fi
pkill -f "$MARK-reader" 2>/dev/null
# ... and when the output comes only after the stop began (the workers'
# own shutdown lines into the pipe nobody reads): no second signal comes
rm -f "$T/ppid".*
tag="$MARK-late"
( run -n 2 -- sh -c 'echo $PPID >"$0.$DT_RANK"
    trap "yes '"$tag"' | head -c 2000000; exit 0" TERM
    while :; do sleep 0.1; done' "$T/ppid" 2>"$T/e" |
    sh -c "sleep 60; : $MARK-reader2" ) &
for i in $(seq 100); do [ -s "$T/ppid.0" ] && [ -s "$T/ppid.1" ] && break; sleep 0.05; done
p=$(cat "$T/ppid.0" 2>/dev/null)
if [ -n "$p" ]; then
    kill -INT "$p"
    for i in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
        fail "SIGINT, then output into a full pipe: dtctl still running after 15 s"
        kill -KILL "$p"
    fi
    grep -q "again: killing" "$T/e" &&
        fail "the workers' late output was taken for a second signal: $(cat "$T/e")"
else
    fail "late output: workers did not start"
fi
pkill -f "$MARK-reader2" 2>/dev/null
# ... and one SIGINT just after a worker failed (while dtctl decides which
# failure is the root one, or stops the rest itself): a first signal,
# SIGTERM and the grace, not SIGKILL at once (it was taken for a second).
rm -f "$T/ppid".* "$T/graceful"
run -n 2 -- sh -c 'echo $PPID >"$0.$DT_RANK"; [ $DT_RANK = 1 ] && exit 1
    trap "sleep 1; echo yes >$0.graceful; exit 0" TERM
    while :; do sleep 0.1; done' "$T/ppid" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 100); do [ -s "$T/ppid.0" ] && [ -s "$T/ppid.1" ] && break; sleep 0.05; done
p=$(cat "$T/ppid.0" 2>/dev/null)
sleep 0.1
[ -n "$p" ] && kill -INT "$p" || fail "SIGINT after a failure: workers did not start"
wait $bg
grep -q "again: killing" "$T/e" && fail "one SIGINT after a failure killed at once: $(cat "$T/e")"
[ -s "$T/ppid.graceful" ] || fail "one SIGINT after a failure: rank 0 got no SIGTERM grace: $(cat "$T/e")"
# ... and dtctl itself killed (SIGKILL: no handler runs): nobody is left
# to stop the job, so each worker's group guard does: SIGTERM to the
# whole group (rank 0 gets it), SIGKILL after kill_grace (2 s here) for
# what ignores it: rank 1 itself and both ranks' own children (the
# kernel's parent-death signal reached the workers only: their children
# ran on, reparented to init).
rm -f "$T/ppid".*
tag="$MARK-orphan"
# (Output to /dev/null: a dead dtctl's pipes would SIGPIPE rank 0's shell
# reporting its killed `sleep` before the trap runs.)
run -n 2 -- sh -c 'exec >/dev/null 2>&1
    if [ "$DT_RANK" = 1 ]; then trap "" TERM
    else trap "echo yes >$0.term.$DT_RANK; exit 0" TERM; fi
    sh -c "trap \"\" TERM; while :; do sleep 0.1; done; : child-$1" &
    echo $PPID >"$0.$DT_RANK"
    while :; do sleep 0.1; done; : '"$tag" "$T/ppid" "$tag" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 100); do
    [ -s "$T/ppid.0" ] && [ -s "$T/ppid.1" ] &&
        [ "$(pgrep -f "child-$tag" | wc -l)" -ge 2 ] && break
    sleep 0.05
done
p=$(cat "$T/ppid.0" 2>/dev/null)
if [ -n "$p" ] && [ "$(pgrep -f "child-$tag" | wc -l)" -ge 2 ] &&
    kill -KILL "$p"; then
    wait $bg
    # kill_grace + 3 s: the guards' SIGKILL must have come by then
    for i in $(seq 50); do leftovers "$tag" || break; sleep 0.1; done
    if leftovers "$tag"; then
        fail "dtctl SIGKILLed: processes left after kill_grace + 3 s: $(pgrep -fa "$tag" | head -4)"
        pkill -KILL -f "$tag"
    fi
    [ -s "$T/ppid.term.0" ] || fail "dtctl SIGKILLed: rank 0 got no SIGTERM first"
else
    fail "dtctl SIGKILLed: workers and their children did not start"
    pkill -KILL -f "$tag"; wait $bg
fi
# ... but a SIGHUP that dtctl was started with ignored stays ignored
# (`nohup dtctl run ... &` outlives the logout).
rm -f "$T/ppid".*
timeout -k 5 30 sh -c 'trap "" HUP; exec "$@"' sh "$DTCTL" run $TR -n 2 -- \
    sh -c 'echo $PPID >"$0.$DT_RANK"; sleep 1.5; echo done-$DT_RANK' "$T/ppid" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 100); do [ -s "$T/ppid.0" ] && [ -s "$T/ppid.1" ] && break; sleep 0.05; done
p=$(cat "$T/ppid.0" 2>/dev/null)
if [ -n "$p" ]; then
    kill -HUP "$p"
    wait $bg; rc=$?
    [ $rc -eq 0 ] && grep -qx "\[1\] done-1" "$T/o" ||
        fail "SIGHUP ignored by dtctl's caller (nohup) stopped the job (exit $rc): $(cat "$T/e")"
else
    fail "ignored SIGHUP: workers did not start"; wait $bg
fi
ok "SIGINT/SIGTERM/SIGQUIT/SIGUSR2 stop the job; a SIGHUP ignored by the caller (nohup) stays ignored"

# Ctrl-Z (SIGTSTP to dtctl): the workers stop with dtctl (they trained on
# unwatched), and continue with it (fg: SIGCONT to dtctl); the job ends 0.
. "$top_srcdir/tests/fixtures/proc-states.sh"
state() { pstate "$1"; }
wait_state() { all_in "$2" "$1"; } # pid pattern: at most 10 s (a hang guard)
rm -f "$T/ppid".* "$T/pid".* "$T/release"
run -n 2 -- sh -c 'echo $$ >"$0/pid.$DT_RANK"; echo $PPID >"$0/ppid.$DT_RANK"
    i=0; while [ ! -e "$0/release" ] && [ $i -lt 250 ]; do sleep 0.1; i=$((i + 1)); done
    [ -e "$0/release" ]' "$T" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 100); do [ -s "$T/pid.0" ] && [ -s "$T/pid.1" ] && [ -s "$T/ppid.0" ] && break; sleep 0.05; done
p=$(cat "$T/ppid.0" 2>/dev/null) w0=$(cat "$T/pid.0" 2>/dev/null) w1=$(cat "$T/pid.1" 2>/dev/null)
if [ -n "$p" ] && [ -n "$w0" ] && [ -n "$w1" ]; then
    kill -TSTP "$p"
    wait_state "$p" T || fail "SIGTSTP: dtctl did not stop ($(state "$p"))"
    wait_state "$w0" T && wait_state "$w1" T ||
        fail "SIGTSTP: the workers run on while dtctl is stopped ($(state "$w0") $(state "$w1"))"
    kill -CONT "$p"
    wait_state "$w0" '[RSD]' && wait_state "$w1" '[RSD]' ||
        fail "SIGCONT to dtctl: the workers stay stopped ($(state "$w0") $(state "$w1"))"
    touch "$T/release"
    wait $bg; rc=$?
    [ $rc -eq 0 ] || fail "a job stopped (Ctrl-Z) and continued: want exit 0, got $rc: $(cat "$T/e")"
else
    fail "SIGTSTP: workers did not start"; touch "$T/release"; wait $bg
fi
ok "Ctrl-Z stops the workers with dtctl, fg continues them"

# ...but not in an orphaned process group (setsid here; docker run -it,
# srun --pty): no shell could continue it, so the kernel drops the stop
# and so does dtctl (it froze the job there, workers and all)
rm -f "$T/ppid".* "$T/pid".* "$T/release"
setsid "$DTCTL" run -n 2 -- sh -c 'echo $$ >"$0/pid.$DT_RANK"; echo $PPID >"$0/ppid.$DT_RANK"
    i=0; while [ ! -e "$0/release" ] && [ $i -lt 250 ]; do sleep 0.1; i=$((i + 1)); done
    [ -e "$0/release" ]' "$T" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 100); do [ -s "$T/pid.0" ] && [ -s "$T/pid.1" ] && [ -s "$T/ppid.0" ] && break; sleep 0.05; done
p=$(cat "$T/ppid.0" 2>/dev/null) w0=$(cat "$T/pid.0" 2>/dev/null)
if [ -n "$p" ] && [ -n "$w0" ]; then
    kill -TSTP "$p"
    for i in $(seq 100); do grep -q "SIGTSTP (Ctrl-Z) ignored: no job control here" "$T/e" && break; sleep 0.1; done
    grep -q "SIGTSTP (Ctrl-Z) ignored: no job control here" "$T/e" ||
        fail "orphaned group: SIGTSTP not said as ignored: $(cat "$T/e")"
    case "$(state "$p") $(state "$w0")" in *T*)
        fail "orphaned group: SIGTSTP stopped the job ($(state "$p") $(state "$w0"))"
        kill -CONT "$p" ;; # nothing else would: the test must end
    esac
    touch "$T/release"
    wait $bg; rc=$?
    [ $rc -eq 0 ] || fail "orphaned group: want exit 0, got $rc: $(cat "$T/e")"
else
    fail "orphaned group: workers did not start"; touch "$T/release"; wait $bg
fi
ok "Ctrl-Z in an orphaned process group is ignored, as the kernel does"

# --- 4. the job token stays secret ----------------------------------------
# The workers stay until the snapshot is taken (a fixed `sleep 1` let a
# test shell delayed that long on a loaded machine snapshot an ended job).
run -vv -n 2 -- sh -c 'echo "$DT_JOB_TOKEN" >"$0.$DT_RANK"
    i=0; while [ ! -e "$0.release" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done' \
    "$T/tok-$MARK" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 300); do [ -s "$T/tok-$MARK.0" ] && [ -s "$T/tok-$MARK.1" ] && break; sleep 0.1; done
ps -eo args >"$T/ps"
: >"$T/tok-$MARK.release"
wait $bg || fail "token job failed: $(cat "$T/e")"
tok=$(cat "$T/tok-$MARK.0")
[ ${#tok} -eq 64 ] || fail "DT_JOB_TOKEN has ${#tok} characters, want 64"
[ "$tok" = "$(cat "$T/tok-$MARK.1")" ] || fail "ranks got different tokens"
grep -q "$MARK" "$T/ps" || fail "ps snapshot missed the job"
if grep -q "$tok" "$T/ps"; then fail "token visible in ps"; fi
if grep -q "$tok" "$T/e" "$T/o"; then fail "token in dtctl -vv output"; fi
ok "token not in argv or logs"

# --- 5. errors before anything starts -------------------------------------
dt run --transport=nope -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "--transport=nope exited $rc"
grep -q "nope" "$T/e" || fail "--transport=nope message does not name it"
for t in $transports; do
    grep -q "available transports:.*$t" "$T/e" || fail "--transport=nope does not list $t: $(cat "$T/e")"
done
dt run $TR --launcher=nope -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "available launchers:.*local" "$T/e" || fail "--launcher=nope: rc=$rc $(cat "$T/e")"
run -n 2 -- dt-no-such-program-$MARK >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] || fail "a missing program exited 0"
grep -q "rank 0: cannot execute 'dt-no-such-program-$MARK': No such file or directory" "$T/e" \
    || fail "unclear message for a missing program: $(cat "$T/e")"
dt run $TR >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "after '--'" "$T/e" || fail "run without a program: rc=$rc $(cat "$T/e")"
printf '[cluster]\nnp = 1\n' >"$T/job.ini"
dt run $TR "$T/job.ini" >"$T/o" 2>"$T/e"; rc=$?
[ $rc -ne 0 ] && grep -q "trainer" "$T/e" || fail "job file alone: rc=$rc $(cat "$T/e")"
ok "clear errors"

# --- 6. many local workers: the open-file limit --------------------------
# A soft limit of 256 stopped a launch of 100 workers ("Too many open
# files" at rank 80): dtctl raises it as far as the job needs; a hard
# limit too low for the job is said before anything starts.
(ulimit -S -n 256 && run -n 100 -- true) >"$T/o" 2>"$T/e" ||
    fail "100 workers under a soft limit of 256: $(tail -3 "$T/e")"
# Refused before anything runs, as bad input: exit 2, not 127 ("the
# workers could not be started"), saying how many and how to raise it.
(ulimit -S -n 200 && ulimit -H -n 200 && run -n 100 -- true) >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "100 workers need about 464 open files here (dtctl holds 4 descriptors a worker, and 64), and the hard limit is 200 (ulimit -Hn): raise it where dtctl starts (as root, \`ulimit -Hn 464\` in that shell; for a user, nofile in /etc/security/limits.conf" "$T/e" ||
    fail "a hard limit too low: rc=$rc (want 2) $(cat "$T/e")"
grep -q "could not be started" "$T/e" &&
    fail "a hard limit too low is said as workers that could not start: $(cat "$T/e")"
ok "the open-file limit"

# --- 7. a finished worker's pid, taken by a stranger, is left alone --------
# Rank 0 ends at once; once dtctl has reaped it, a process outside the job
# (its own group, as setsid gives) is started at rank 0's old pid
# (ns_last_pid). Rank 1 then fails: stopping the job, and its final kill,
# once sent kill(-pid) to every worker's old group and killed the stranger.
# The stranger can die of other causes: another job on the machine that
# also hands out pids by ns_last_pid (once: this test running beside a
# build without the fix) may take it. So two tries: a dtctl that signals
# the old group kills it every time (checked: without the fix both fail).
reuse_try() { # -> 0 survived, 1 killed, 2 not checked
    rm -f "$T/reuse".*
    run -n 2 -- sh -c 'if [ $DT_RANK = 0 ]; then echo $$ >"$0.p0"; exit 0; fi
        i=0; while [ ! -e "$0.go" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done; exit 3' \
        "$T/reuse" >"$T/o" 2>"$T/e" &
    bg=$!
    for i in $(seq 100); do [ -s "$T/reuse.p0" ] && break; sleep 0.05; done
    p0=$(cat "$T/reuse.p0" 2>/dev/null)
    for i in $(seq 100); do kill -0 "$p0" 2>/dev/null || break; sleep 0.05; done
    s=
    for try in 1 2 3 4 5; do
        echo $((p0 - 1)) >/proc/sys/kernel/ns_last_pid
        setsid sh -c "sleep 60; : $MARK-stranger" &
        s=$!
        [ "$s" = "$p0" ] && break
        kill "$s" 2>/dev/null; s=
    done
    : >"$T/reuse.go"
    wait $bg; rc=$?
    [ $rc -eq 3 ] || fail "pid reuse job: want exit 3, got $rc: $(cat "$T/e")"
    [ -n "$s" ] || return 2
    if kill -0 "$s" 2>/dev/null; then kill "$s" 2>/dev/null; return 0; fi
    return 1
}
if [ -w /proc/sys/kernel/ns_last_pid ]; then
    reuse_try; r=$?
    if [ $r -eq 1 ]; then
        echo "note: the process at rank 0's old pid $p0 died; trying again"
        reuse_try; r=$?
    fi
    case $r in
    0) ok "a reused pid is not signalled" ;;
    1) fail "dtctl killed a process outside the job at rank 0's old pid $p0 (twice)" ;;
    *) echo "note: no process could be started at pid $p0 (taken meanwhile): not checked" ;;
    esac
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all run_local checks passed"
