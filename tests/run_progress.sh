#!/bin/sh
# run_progress.sh — progress bars (text a '\r' ends, tqdm's) through
# `dtctl run`, local launcher, real processes: to a file or a pipe each
# bar is one line, its last state, and "\r\n" is one line end; on a
# terminal (script(1)) the bar is drawn in place as "[rank] ...", another
# rank's line first erases it, and its last state stays as a line.
set -u

name=run-progress
MARK="dtrunprogress$$"             # unique word in every process we start
. "$top_srcdir/tests/check_common.sh"

# Every dtctl call is bounded: a bug must fail the test, never hang it.
pick_transport
run() { timeout -k 5 30 "$DTCTL" run $TR "$@"; }
# Up to 30 s for the bytes $2 in file $1 (a hang guard, not a timing).
wait_for() {
    i=0
    while ! grep -qaF "$2" "$1" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    grep -qaF "$2" "$1" 2>/dev/null
}
CR=$(printf '\r')
ESC=$(printf '\033')

# --- 1. a file and a pipe: one line per bar, its last state ----------------
bars='printf "a\r"; printf "b\r"; printf "c\n"; printf "crlf\r\n"
i=0; while [ $i -le 300 ]; do printf "\r%3d%%|bar|" $i >&2; i=$((i + 1)); done; printf "\n" >&2'
run -n 2 -- sh -c ": $MARK; $bars" >"$T/out" 2>"$T/err" || fail "to a file: exit $?: $(cat "$T/err")"
want='[0] c
[0] crlf
[1] c
[1] crlf'
[ "$(sort "$T/out")" = "$want" ] || fail "a bar to a file: want only its last state: $(od -c "$T/out" | head)"
grep -v '^dt: ' "$T/err" | sort >"$T/err_lines"
[ "$(cat "$T/err_lines")" = "[0] 300%|bar|
[1] 300%|bar|" ] || fail "301 states to a file: want one line per rank: $(head -c 300 "$T/err_lines" | od -c | head)"
run -n 2 -- sh -c ": $MARK; $bars" 2>&1 | cat >"$T/pipe"
grep -q "$CR" "$T/pipe" && fail "a bar to a pipe: a carriage return written: $(od -c "$T/pipe" | head)"
[ "$(grep -c '^\[[01]\] ' "$T/pipe")" -eq 6 ] || fail "a bar to a pipe: want 6 lines: $(cat "$T/pipe")"
ok "to a file or a pipe a bar is one line, its last state; CR LF is one line end"

# --- 2. a terminal: drawn in place, erased for another rank's line ---------
if command -v script >/dev/null 2>&1 && script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    # rank 0 draws a bar and waits; rank 1 writes a line while it shows
    worker="$T/worker.sh"
    cat >"$worker" <<WORKER
if [ "\$DT_RANK" = 0 ]; then
    printf '\rhalf' >&2
    while [ ! -e "$T/go0" ]; do sleep 0.05; done
    printf '\rdone\n' >&2
else
    while [ ! -e "$T/go1" ]; do sleep 0.05; done
    echo other line
fi
WORKER
    # script(1) runs the command with $SHELL; --foreground keeps dtctl in
    # the terminal's foreground process group
    TERM=xterm SHELL=/bin/sh script -qec "timeout --foreground -k 5 30 $DTCTL run $TR -n 2 -- sh $worker $MARK" \
        /dev/null </dev/null >"$T/tty" 2>&1 &
    term=$!
    wait_for "$T/tty" "${CR}[0] half${ESC}[K" || fail "the bar was not drawn before its line ended: $(od -c "$T/tty" | tail -5)"
    touch "$T/go1"
    wait_for "$T/tty" "[1] other line" || fail "rank 1's line did not come: $(od -c "$T/tty" | tail -5)"
    touch "$T/go0"
    wait $term || fail "dtctl under script: exit $?: $(cat "$T/tty")"
    # the bar is erased before the line, and drawn again after it
    grep -qaF "${CR}${ESC}[K[1] other line" "$T/tty" ||
        fail "rank 1's line was not written over an erased bar: $(od -c "$T/tty")"
    tr '\n' '~' <"$T/tty" | grep -qaF "other line${CR}~${CR}[0] half${ESC}[K" ||
        fail "the bar was not drawn again under the line: $(od -c "$T/tty")"
    # what the terminal shows: each line's text after its last '\r'
    sed "s/${CR}\$//; s/${ESC}\\[K//g; s/.*${CR}//" "$T/tty" | grep '^\[' >"$T/shown"
    [ "$(cat "$T/shown")" = "[1] other line
[0] done" ] || fail "the terminal shows: $(cat "$T/shown")"
    ok "on a terminal a bar is drawn in place, erased for other lines, and stays as its last state"

    # dtctl's own message (rank 1 fails) while rank 0's bar shows: the
    # message erases the bar in its own write, not after the bar's text
    cat >"$worker" <<WORKER
if [ "\$DT_RANK" = 0 ]; then
    printf '\rhalf' >&2
    sleep 30
else
    while [ ! -e "$T/go2" ]; do sleep 0.05; done
    exit 3
fi
WORKER
    TERM=xterm SHELL=/bin/sh script -qec "timeout --foreground -k 5 30 $DTCTL run $TR -n 2 -- sh $worker $MARK" \
        /dev/null </dev/null >"$T/tty2" 2>&1 &
    term=$!
    wait_for "$T/tty2" "${CR}[0] half${ESC}[K" || fail "the bar was not drawn: $(od -c "$T/tty2" | tail -5)"
    touch "$T/go2"
    wait $term
    grep -qaF "${CR}${ESC}[Kdt: error: rank 1 on " "$T/tty2" ||
        fail "dtctl's message did not erase the bar first: $(od -c "$T/tty2" | tail -12)"
    grep -qaF "half${ESC}[Kdt: " "$T/tty2" &&
        fail "dtctl's message was written after the bar's text: $(od -c "$T/tty2" | tail -12)"
    ok "on a terminal dtctl's own messages erase the bar first"
else
    echo "skip: no script(1) for a terminal"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all progress bar tests passed"
