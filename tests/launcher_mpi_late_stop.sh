#!/bin/sh
# launcher_mpi_late_stop.sh — Ctrl-Z and fg under the real Open MPI mpirun
# when the stop reaches a rank's prologue shell only after the continue
# (its shell was stopped or slow; under load mpirun's forward of it came
# after fg): the worker must end up running, as dtctl last asked. It once
# stayed stopped for good (the job hung). The late stop is forced here:
# after Ctrl-Z and fg, rank 1's prologue shell gets SIGUSR2, mpirun's
# relay of a stop, by hand. Each worker notes every SIGCONT it gets, so
# the test waits for the continue that must follow, not for a time.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?top_srcdir must be set (by make check)}"
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun is not installed (Debian: apt install openmpi-bin)"
    exit 77
fi
if ! "$DTCTL" plugins | grep -q '^launcher *mpi .*available'; then
    echo "SKIP: the mpi launcher plugin is not built or not available:"
    "$DTCTL" plugins | grep mpi
    exit 77
fi
. "$top_srcdir/tests/fixtures/proc-states.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-mpi-late.XXXXXX") || exit 99
MARK="dtmpilate$$"               # unique word in every worker we start
cleanup() {
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN OMPI_COMM_WORLD_RANK \
    SLURM_PROCID SLURM_JOB_ID 2>/dev/null
export DT_LAUNCHER_MPI_OVERSUBSCRIBE=yes
export DT_CLUSTER_KILL_GRACE=3s
# lines in FILE (0 when missing)
lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
# wait at most 20 s (a hang guard) until FILE has at least N lines
wait_lines() {
    _j=0
    while [ "$(lines "$1")" -lt "$2" ] && [ $_j -lt 200 ]; do sleep 0.1; _j=$((_j + 1)); done
    [ "$(lines "$1")" -ge "$2" ]
}
# wait for dtctl, at most 30 s (then SIGKILL: a hang is a failure); rc
bounded_wait() {
    i=0
    while kill -0 "$1" 2>/dev/null && [ "$(pstate "$1")" != Z ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 "$1" 2>/dev/null && [ "$(pstate "$1")" != Z ] && kill -KILL "$1"
    wait "$1"; rc=$?
}

# Each worker writes its pid, then a line in cont.RANK per SIGCONT, and
# ends once $T/release exists.
start_in_own_group \
    "$DTCTL" -v run --launcher=mpi -n 2 -- sh -c "trap 'echo c >>$T/cont.\$DT_RANK' CONT; echo \$\$ >$T/pid.\$DT_RANK; i=0; while [ ! -e $T/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # $MARK" \
    >"$T/o" 2>"$T/e"
dtpid=$own_group_pid
i=0
while { [ ! -s "$T/pid.0" ] || [ ! -s "$T/pid.1" ]; } && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
w0=$(cat "$T/pid.0" 2>/dev/null) w1=$(cat "$T/pid.1" 2>/dev/null)
sh1=$(ps -o ppid= -p "${w1:-0}" 2>/dev/null | tr -d ' ')
if [ -z "$w0" ] || [ -z "$w1" ] || [ -z "$sh1" ]; then
    fail "the ranks did not start: $(cat "$T/e")"
    kill -KILL "$dtpid"; bounded_wait "$dtpid"
    exit 1
fi

kill -TSTP "$dtpid"
all_in T "$dtpid" "$w0" "$w1" ||
    fail "Ctrl-Z: not all stopped ($(states "$dtpid" "$w0" "$w1")): $(cat "$T/e")"
kill -CONT "$dtpid"
wait_lines "$T/cont.1" 1 && all_in '[RSD]' "$w0" "$w1" ||
    fail "fg: the workers stay stopped ($(states "$w0" "$w1")): $(cat "$T/e")"
ok "Ctrl-Z and fg stop and continue both workers"

# The Ctrl-Z's stop, relayed late: rank 1's shell stops its worker after
# fg. dtctl, reading that confirmation, continues it again.
kill -USR2 "$sh1"
if wait_lines "$T/cont.1" 2 && all_in '[RSD]' "$w1"; then
    ok "a stop that reaches a rank after fg is undone: its worker runs"
else
    fail "a stop that reached rank 1 after fg left its worker stopped ($(states "$w1")): $(cat "$T/e")"
    kill -CONT -- "-$w1" 2>/dev/null || kill -CONT "$w1" # to end the job
fi
grep -q "rank 1 confirmed a stop, but a continue was asked for last" "$T/e" ||
    fail "dtctl -v did not say why it continued rank 1 again: $(cat "$T/e")"
[ "$(lines "$T/cont.0")" -ge 1 ] ||
    fail "rank 0's worker got no continue at all: $(cat "$T/e")"

touch "$T/release"
bounded_wait "$dtpid"
[ $rc -eq 0 ] || fail "Ctrl-Z, fg, a late stop: want exit 0, got $rc: $(cat "$T/e")"
! grep -q "Forwarding signal\|dt-ctl:" "$T/o" "$T/e" ||
    fail "mpirun's or the relay's own lines reached the output: $(cat "$T/o" "$T/e")"
sleep 0.3
pgrep -f "$MARK" >/dev/null 2>&1 && fail "processes left: $(pgrep -fa "$MARK")"
ok "the job ends normally (exit 0), nothing left"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all mpi late-stop checks passed"
