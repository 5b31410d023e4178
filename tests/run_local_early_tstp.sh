#!/bin/sh
# run_local_early_tstp.sh — Ctrl-Z (SIGTSTP) that reaches `dtctl run` while
# it starts the workers, before it supervises them: kept, and acted on as
# soon as the supervisor starts (the workers stop, then dtctl; fg continues
# them all, and the job ends 0). It once stopped dtctl alone, without a
# word, and the workers ran on unwatched. DT_TEST_HOLD_START holds dtctl
# between the workers' start and their supervision, so that the signal
# lands there for sure.
set -u

name=run-local-early-tstp
MARK="dtearlytstp$$"             # unique word in every process we start
. "$top_srcdir/tests/check_common.sh"
. "$top_srcdir/tests/fixtures/proc-states.sh"
pick_transport
export DT_CLUSTER_KILL_GRACE=2s

# Each worker writes its pid, then waits for $T/release (at most 25 s).
worker='echo $$ >"$0/pid.$DT_RANK"; i=0
    while [ ! -e "$0/release" ] && [ $i -lt 250 ]; do sleep 0.1; i=$((i + 1)); done
    [ -e "$0/release" ] # '"$MARK"

# Start dtctl held before supervising ($1: how: own group or setsid); sets
# dtpid and workers; 1 when dtctl did not reach the hold with both workers.
start_held() {
    rm -f "$T"/pid.* "$T/release" "$T/go"
    export DT_TEST_HOLD_START="$T/go"
    if [ "$1" = setsid ]; then
        setsid "$DTCTL" run $TR -n 2 -- sh -c "$worker" "$T" >"$T/o" 2>"$T/e" &
        dtpid=$!
    else
        start_in_own_group "$DTCTL" run $TR -n 2 -- sh -c "$worker" "$T" >"$T/o" 2>"$T/e"
        dtpid=$own_group_pid
    fi
    unset DT_TEST_HOLD_START
    i=0
    while { ! grep -q "DT_TEST_HOLD_START: the workers started" "$T/e" ||
            [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 300 ]; do
        sleep 0.1; i=$((i + 1))
    done
    workers="$(cat "$T/pid.0" "$T/pid.1" 2>/dev/null | paste -sd' ' -)"
    [ "$(echo "$workers" | wc -w)" -eq 2 ]
}
# Wait for dtctl, at most 30 s; a stop or hang is continued or killed (the
# test must end). rc: its exit status; stopped=1 if it was found stopped.
bounded_wait() {
    i=0 stopped=0
    while kill -0 "$dtpid" 2>/dev/null && [ "$(pstate "$dtpid")" != Z ] && [ $i -lt 300 ]; do
        if [ "$(pstate "$dtpid")" = T ]; then stopped=1; kill -CONT "$dtpid"; fi
        sleep 0.1; i=$((i + 1))
    done
    kill -0 "$dtpid" 2>/dev/null && [ "$(pstate "$dtpid")" != Z ] && kill -KILL "$dtpid"
    wait "$dtpid"; rc=$?
}

# --- 1. Ctrl-Z (SIGTSTP to dtctl's process group, as the terminal sends
# it) during the start: the workers stop with dtctl once it supervises
# them; fg (SIGCONT to the group) continues them all; exit 0 -------------
if start_held group; then
    kill -s TSTP -- "-$dtpid"
    touch "$T/go"
    # shellcheck disable=SC2086
    all_in T "$dtpid" $workers ||
        fail "Ctrl-Z during the start: not all stopped (dtctl and the workers: $(states "$dtpid" $workers)): $(cat "$T/e")"
    grep -q "stopped (SIGTSTP, Ctrl-Z): the workers are stopped too" "$T/e" ||
        fail "Ctrl-Z during the start: dtctl did not say the workers stopped: $(cat "$T/e")"
    kill -s CONT -- "-$dtpid"
    # shellcheck disable=SC2086
    all_in '[RSD]' $workers ||
        fail "fg after a Ctrl-Z during the start: the workers stay stopped ($(states $workers))"
    touch "$T/release"
    bounded_wait
    [ $rc -eq 0 ] && [ $stopped -eq 0 ] ||
        fail "Ctrl-Z during the start, then fg: want exit 0 and no second stop, got $rc (stopped again: $stopped): $(cat "$T/e")"
else
    fail "Ctrl-Z during the start: dtctl or its workers did not start: $(cat "$T/e")"
    touch "$T/go" "$T/release"; bounded_wait
fi
ok "Ctrl-Z while dtctl starts the workers stops them with dtctl once they run; fg continues them"

# --- 2. SIGTSTP, then SIGCONT, both before the supervisor looks: that
# stop is over already; nothing stops (no stop left to end it), exit 0 --
if start_held group; then
    kill -s TSTP -- "-$dtpid"
    kill -s CONT -- "-$dtpid"
    touch "$T/go" "$T/release"
    bounded_wait
    [ $rc -eq 0 ] && [ $stopped -eq 0 ] ||
        fail "SIGTSTP then SIGCONT during the start: want exit 0 and no stop, got $rc (stopped: $stopped): $(cat "$T/e")"
    ! grep -q "stopped (SIGTSTP" "$T/e" ||
        fail "SIGTSTP then SIGCONT during the start: dtctl says it stopped: $(cat "$T/e")"
else
    fail "TSTP then CONT: dtctl or its workers did not start: $(cat "$T/e")"
    touch "$T/go" "$T/release"; bounded_wait
fi
ok "SIGTSTP then SIGCONT during the start: the job runs on"

# --- 3. in an orphaned process group (setsid: docker run -it, srun --pty)
# no shell could continue the job: the kept Ctrl-Z is ignored, and said
# (it was dropped without a word) -----------------------------------------
if start_held setsid; then
    kill -TSTP "$dtpid"
    touch "$T/go"
    i=0
    while ! grep -q "SIGTSTP (Ctrl-Z) ignored: no job control here" "$T/e" && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    grep -q "SIGTSTP (Ctrl-Z) ignored: no job control here" "$T/e" ||
        fail "orphaned group: a Ctrl-Z during the start not said as ignored: $(cat "$T/e")"
    touch "$T/release"
    bounded_wait
    [ $rc -eq 0 ] && [ $stopped -eq 0 ] ||
        fail "orphaned group: want exit 0 and no stop, got $rc (stopped: $stopped): $(cat "$T/e")"
else
    fail "orphaned group: dtctl or its workers did not start: $(cat "$T/e")"
    touch "$T/go" "$T/release"; bounded_wait
fi
ok "Ctrl-Z during the start in an orphaned process group is ignored, and said"

# --- 4. a Ctrl-Z kept during a start that then fails (here: Ctrl-C while
# the ssh launcher waits on a host that accepts and never answers): the
# Ctrl-C ends dtctl (130); the kept Ctrl-Z is dropped, not applied on the
# way out (dtctl stopped itself, and exited only after fg) ---------------
python3 - "$T/port" "$T/accepted" <<'PY' &
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.settimeout(30)
try:
    c = s.accept()[0]  # held open, silent, until the test ends
    open(sys.argv[2], "w").close()
    time.sleep(30)
except OSError:
    pass
PY
listener=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
start_in_own_group "$DTCTL" --launcher=ssh -H 127.0.0.1 \
    --set launcher.ssh.port="$(cat "$T/port")" --set launcher.ssh.connect_timeout=30 \
    run -n 1 -- true >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while [ ! -e "$T/accepted" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -e "$T/accepted" ]; then
    kill -TSTP "$dtpid"
    sleep 0.3 # the TSTP handled first (a pending INT would be delivered first)
    kill -INT "$dtpid"
    bounded_wait
    [ $rc -eq 130 ] && [ $stopped -eq 0 ] ||
        fail "Ctrl-Z then Ctrl-C during a start: want exit 130 and no stop, got $rc (stopped: $stopped): $(cat "$T/e")"
else
    fail "the ssh launcher never reached the silent host: $(cat "$T/e")"
    kill -KILL "$dtpid" 2>/dev/null; wait "$dtpid"
fi
kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null
ok "Ctrl-Z then Ctrl-C during a failing start: dtctl exits 130, not stopped"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
