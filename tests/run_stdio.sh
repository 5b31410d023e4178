#!/bin/sh
# run_stdio.sh — `dtctl run`'s standard streams, as mpirun users expect
# them (local launcher, real processes): dtctl's stdin reaches rank 0 only,
# byte for byte, with its end of file; a stdin nobody reads (endless, or
# silent and never closed) holds up neither the job nor its end; a closed
# stdin is /dev/null; on a terminal rank 0 shows its prompt and reads what
# is typed (Ctrl-D: end of file); a closed stdout (`| head`) stops the job in bounded time
# with exit 141, said on stderr, no process left, even when the workers
# ignore SIGTERM; --stdin none reads nothing (a loop of jobs keeps its
# lines).
set -u

name=run-stdio
MARK="dtrunstdio$$"              # unique word in every process we start
. "$top_srcdir/tests/check_common.sh"
cleanup() {
    exec 7>&- 2>/dev/null # what types into the terminal test's fifo
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}

# Every dtctl call is bounded: a bug must fail the test, never hang it.
dt() { timeout -k 5 30 "$DTCTL" "$@"; }
pick_transport
run() { dt run $TR "$@"; }
export DT_CLUSTER_KILL_GRACE=2s
leftovers() { pgrep -f "$1" >/dev/null 2>&1; }
# Up to 10 s for a line matching $2 in file $1 (a hang guard, not a timing).
wait_for() {
    i=0
    while ! grep -q "$2" "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    grep -q "$2" "$1" 2>/dev/null
}

# --- 1. stdin to rank 0 only, byte for byte, with its end of file ----------
seq 1 200000 >"$T/in"
want=$(cksum <"$T/in")
none=$(cksum </dev/null)
run -n 3 -- sh -c ': '"$MARK"'; echo "$(cksum)"' <"$T/in" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "3 ranks reading stdin exited $rc: $(cat "$T/err")"
grep -qx "\[0\] $want" "$T/out" || fail "rank 0 did not get dtctl's stdin whole: $(cat "$T/out") (want $want)"
for r in 1 2; do
    grep -qx "\[$r\] $none" "$T/out" || fail "rank $r should read nothing: $(cat "$T/out")"
done
# from a pipe, with lines read one at a time
out=$(printf 'a\nb\n' | run -n 2 -- sh -c 'while read -r l; do echo "got $l"; done; echo "end $DT_RANK"' 2>"$T/err")
[ "$(echo "$out" | grep '^\[0\]')" = "$(printf '[0] got a\n[0] got b\n[0] end 0')" ] ||
    fail "rank 0 from a pipe: $out"
echo "$out" | grep -q '^\[1\] got' && fail "rank 1 read stdin: $out"
ok "dtctl's stdin reaches rank 0 whole (1.3 MB), with its end of file; the others read nothing"

# --stdin none: no rank reads it, and it stays for whoever reads after
# dtctl (a shell loop over lines, each line a job: mpirun's --stdin none)
out=$(printf 'one\ntwo\nthree\n' | while read -r x; do
    run -q --stdin none -n 1 -- sh -c 'cat; echo "job $0"' "$x" </dev/stdin; done 2>"$T/err")
[ "$out" = "$(printf '[0] job one\n[0] job two\n[0] job three')" ] ||
    fail "--stdin none in a read loop: $out $(cat "$T/err")"
run --stdin all -n 1 -- true >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--stdin all: dtctl gives its standard input to rank 0 (--stdin 0, the default) or to none" "$T/err" ||
    fail "--stdin all: want exit 2 and the choices, got $rc: $(cat "$T/err")"
ok "--stdin none leaves dtctl's stdin to what reads it next (a loop of jobs); --stdin all refused"

# --- 2. a stdin nobody reads holds nothing up --------------------------------
yes "$MARK" | run -n 2 -- sh -c 'echo done' >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c done "$T/out")" -eq 2 ] ||
    fail "endless stdin, never read: exit $rc: $(cat "$T/out" "$T/err")"
# rank 0 reads a little and ends while more keeps coming
yes "$MARK" | run -n 2 -- sh -c 'head -n 1 >/dev/null; echo done' >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "rank 0 ending while stdin flows: exit $rc: $(cat "$T/err")"
# silent and never closed: a fifo whose writer stays
mkfifo "$T/fifo"
sh -c "exec sleep 60 # $MARK-writer" >"$T/fifo" &
writer=$!
run -n 2 -- sh -c 'echo done' <"$T/fifo" >"$T/out" 2>"$T/err"
rc=$?
kill "$writer" 2>/dev/null
[ $rc -eq 0 ] && [ "$(grep -c done "$T/out")" -eq 2 ] ||
    fail "silent open stdin: exit $rc (124: it waited for it): $(cat "$T/err")"
# closed: rank 0 reads end of file
out=$(run -n 1 -- sh -c 'cat; echo end' <&- 2>"$T/err")
[ "$out" = "[0] end" ] || fail "closed stdin: '$out' $(cat "$T/err")"
ok "a stdin never read, endless, silent or closed holds up neither the job nor its end"

# --- 3. a terminal: rank 0 shows its prompt, reads what is typed, Ctrl-D
# ends it
if command -v script >/dev/null 2>&1 && script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    mkfifo "$T/tty_in"
    # script(1) runs the command with $SHELL (bash execs it, dash forks it);
    # --foreground keeps timeout and dtctl in the terminal's foreground
    # process group either way: in a background group dtctl rightly leaves
    # the terminal unread, as mpirun does
    SHELL=/bin/sh script -qec "timeout --foreground -k 5 30 $DTCTL run $TR -n 2 -- sh -c '[ \$DT_RANK = 0 ] && printf \"name? \"; read x; echo; echo got=\$x; cat; echo eof'" \
        /dev/null <"$T/tty_in" >"$T/tty_out" 2>&1 &
    term=$!
    exec 7>"$T/tty_in"
    # typing into a terminal whose job ended: no SIGPIPE for this shell
    type_in() { (trap '' PIPE; printf "$1" >&7) 2>/dev/null; }
    # the prompt has no newline: it shows before anything is typed
    wait_for "$T/tty_out" '^\[0\] name? ' || fail "rank 0's prompt did not show: $(cat "$T/tty_out")"
    type_in 'typed\n'
    wait_for "$T/tty_out" '^\[0\] got=typed' || fail "rank 0 did not read the typed line: $(cat "$T/tty_out")"
    type_in '\004' # Ctrl-D at the start of a line: end of file
    wait_for "$T/tty_out" '^\[0\] eof' || fail "Ctrl-D did not end rank 0's stdin: $(cat "$T/tty_out")"
    grep -q '^\[1\] got=typed' "$T/tty_out" && fail "rank 1 read the terminal: $(cat "$T/tty_out")"
    exec 7>&-
    wait $term
    ok "on a terminal rank 0's prompt shows, it reads the typed line, and Ctrl-D ends its stdin"

    # dtctl in a background process group of its terminal (`dtctl run ... &`;
    # here timeout's own group): it neither reads the terminal (that would
    # stop it by SIGTTIN until fg) nor takes what was typed: the shell reads
    # it after the job
    rm -f "$T/tty_in"
    mkfifo "$T/tty_in"
    SHELL=/bin/sh script -qec "timeout -k 5 30 $DTCTL run $TR -n 1 -- sh -c 'echo done'; echo rc=\$?; read y; echo after=\$y" \
        /dev/null <"$T/tty_in" >"$T/tty_out" 2>&1 &
    term=$!
    exec 7>"$T/tty_in"
    type_in 'kept\n'
    wait_for "$T/tty_out" '^after=' || fail "the background job or the shell after it did not end: $(cat "$T/tty_out")"
    tr -d '\r' <"$T/tty_out" | grep -qx 'rc=0' || fail "dtctl in the background: want exit 0: $(cat "$T/tty_out")"
    tr -d '\r' <"$T/tty_out" | grep -qx '\[0\] done' || fail "the background job's rank 0 did not run: $(cat "$T/tty_out")"
    tr -d '\r' <"$T/tty_out" | grep -qx 'after=kept' || fail "dtctl in the background took the typed line: $(cat "$T/tty_out")"
    exec 7>&-
    wait $term
    ok "in the terminal's background dtctl leaves the terminal to the foreground (no SIGTTIN stop)"
else
    echo "skip: no script(1) for a terminal"
fi

# --- 4. a closed stdout stops the job --------------------------------------
tag="$MARK-yes"
{ run -n 2 -- sh -c "exec yes $tag" 2>"$T/err"; echo $? >"$T/rc"; } | head -n 3 >"$T/out"
rc=$(cat "$T/rc")
[ "$rc" -eq 141 ] || fail "| head -3: want exit 141 (SIGPIPE's), got $rc: $(cat "$T/err")"
[ "$(wc -l <"$T/out")" -eq 3 ] || fail "| head -3 got: $(cat "$T/out")"
grep -q "nobody reads dtctl's standard output any more.*stopping the job" "$T/err" ||
    fail "the stop is not said on stderr: $(cat "$T/err")"
if leftovers "$tag"; then fail "| head: workers left: $(pgrep -fa "$tag")"; fi
ok "dtctl run ... | head -3: the job stops (exit 141, said on stderr), no worker left"

# ... also when the workers ignore SIGTERM: SIGKILL after kill_grace
tag="$MARK-deaf"
{ run -n 2 -- sh -c "trap '' TERM; yes $tag" 2>"$T/err"; echo $? >"$T/rc"; } | head -n 1 >/dev/null
rc=$(cat "$T/rc")
[ "$rc" -eq 141 ] || fail "| head, workers ignore SIGTERM: want 141, got $rc: $(cat "$T/err")"
grep -q "sending SIGKILL" "$T/err" || fail "no SIGKILL said: $(cat "$T/err")"
if leftovers "$tag"; then fail "| head, SIGTERM ignored: workers left: $(pgrep -fa "$tag")"; fi
# ... and when the output lost is the last (the workers ended by then)
{ run -n 1 -- seq 1 1000000 2>"$T/err"; echo $? >"$T/rc"; } | head -n 1 >/dev/null
rc=$(cat "$T/rc")
[ "$rc" -eq 141 ] || fail "seq | head -1: want 141, got $rc: $(cat "$T/err")"
ok "a closed stdout: SIGKILL after kill_grace for workers that ignore SIGTERM; 141 also when only the end was lost"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all stdio tests passed"
