#!/bin/sh
# launcher_ssh.sh — the ssh launcher against a real sshd on 127.0.0.1 (a
# free port, generated host and user keys, host-key checking on): ranks,
# environment (the user's NCCL_SOCKET_IFNAME too), working directory, exit codes, stdin to rank 0, a
# closed stdout, host keys (unknown, wrong,
# accept-new), an unreachable host, stop signals (also while a host is
# mute or stalls the authentication), Ctrl-Z and fg (the remote workers
# stop, their watchdogs do not), dtctl killed outright,
# no leftover processes, the token in no argv.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?}" "${top_builddir:?}"
"$DTCTL" plugins | grep -q '^launcher *ssh .*available' ||
    { echo "SKIP: the ssh launcher is not built (libssh-dev missing at configure)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-ssh.XXXXXX") || exit 99
FX="$top_srcdir/tests/fixtures/sshd-loopback.sh"
MARK="dtsshtest$$"            # unique word in every worker command line
SL=$((100000 + $$))           # a sleep no other test runs: "sleep $SL"
cleanup() {
    pkill -KILL -f "$MARK" 2>/dev/null
    sh "$FX" stop "$T/sshd"
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sh "$FX" start "$T/sshd"
rc=$?
[ $rc -eq 0 ] || exit $rc # 77 with its reason, or a real failure
. "$T/sshd/env"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# [launcher.ssh] through the environment; one host, this port.
export DT_LAUNCHER_SSH_IDENTITY="$SSH_KEY"
export DT_LAUNCHER_SSH_KNOWN_HOSTS="$SSH_KNOWN_HOSTS"
export DT_LAUNCHER_SSH_USE_AGENT=no
export DT_LAUNCHER_SSH_CONNECT_TIMEOUT=10s
export DT_CLUSTER_KILL_GRACE=2s
printf '127.0.0.1 slots=4 port=%s\n' "$SSH_PORT" >"$T/hosts"
dt() { timeout -k 5 60 "$DTCTL" "$@"; }
# Wait for a background dtctl, but never forever: its exit code in $rc.
bounded_wait() {
    i=0
    while kill -0 "$1" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$1" 2>/dev/null
    wait "$1"
    rc=$?
}
run() { dt run --launcher=ssh --hostfile "$T/hosts" "$@"; }
# Worker shells of this test ("sh -c : MARK; ..."), and their process
# groups: the worker, whatever it started, the launcher's watchdog.
leftovers() { pgrep -f "^sh -c : $MARK" 2>/dev/null; }
job_groups() {
    ps -eo pgid=,args= | awk -v m=": $MARK;" '$2 == "sh" && $3 == "-c" && index($0, m) { print $1 }' |
        sort -u | paste -sd, -
}
# 0 once no worker shell and no process of the groups $1 is left (10 s).
wait_gone() {
    i=0
    while { leftovers || { [ -n "$1" ] && pgrep -g "$1"; }; } >/dev/null && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    ! leftovers >/dev/null && { [ -z "$1" ] || ! pgrep -g "$1" >/dev/null; }
}

# --- 1. ranks, environment, directory, output streams, exit code ----------
mkdir -p "$T/wd"
out=$(cd "$T/wd" && run -n 3 -- sh -c ": $MARK; echo \"r=\$DT_RANK/\$WORLD_SIZE l=\$LOCAL_RANK h=\$DT_HOST tl=\${#DT_JOB_TOKEN} pwd=\$(pwd)\"; echo e\$DT_RANK >&2" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "3 ranks over ssh exited $rc: $(cat "$T/err")"
for r in 0 1 2; do
    echo "$out" | grep -qx "\[$r\] r=$r/3 l=$r h=127.0.0.1 tl=64 pwd=$T/wd" ||
        fail "rank $r line missing or wrong in: $out"
    grep -qx "\[$r\] e$r" "$T/err" || fail "rank $r stderr not forwarded: $(cat "$T/err")"
done
ok "3 ranks: environment, dtctl's directory, stdout and stderr per rank"

# dtctl's own environment does not travel over ssh: -x passes a variable
out=$(DTX_V="a b" run -n 1 -x DTX_V -x DTX_W=2 -- sh -c ": $MARK; echo \"v=\$DTX_V w=\$DTX_W\"" 2>"$T/err")
[ "$out" = "[0] v=a b w=2" ] || fail "-x over ssh: '$out' $(cat "$T/err")"
ok "-x NAME and NAME=VALUE reach ssh workers"

# Values that need quoting arrive byte for byte; [cluster] workdir is used.
dt run --launcher=ssh --hostfile "$T/hosts" -n 1 --set "cluster.workdir=$T" \
    -- sh -c ': '"$MARK"'; pwd; printf "%s|" "$@"' x "a b" "it's" '$HOME' 'x
y' >"$T/q" 2>"$T/err" || fail "quoting job failed: $(cat "$T/err")"
printf '[0] %s\n[0] %s\n' "$T" "a b|it's|\$HOME|x" >"$T/q.want"
echo "[0] y|" >>"$T/q.want"
cmp -s "$T/q" "$T/q.want" || fail "arguments or workdir changed on the way: $(cat "$T/q")"
ok "arguments with spaces, quotes, \$ and newlines; [cluster] workdir"

# [cluster] interface gives a program NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME
# and UCX_NET_DEVICES; one the user set for dtctl keeps its value, and
# reaches the workers here too (ssh passes the job's variables, not
# dtctl's environment: it arrived as nothing at all).
out=$(NCCL_SOCKET_IFNAME=ib0 run -n 2 --set cluster.interface=lo -- \
    sh -c ": $MARK; echo \"N=\${NCCL_SOCKET_IFNAME:-unset} G=\${GLOO_SOCKET_IFNAME:-unset} U=\${UCX_NET_DEVICES:-unset}\"" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "interface variables job exited $rc: $(cat "$T/err")"
for r in 0 1; do
    echo "$out" | grep -qx "\[$r\] N=ib0 G=lo U=lo" ||
        fail "rank $r: want the user's NCCL_SOCKET_IFNAME=ib0 and lo from [cluster] interface, got: $out"
done
ok "the user's NCCL_SOCKET_IFNAME reaches remote workers; [cluster] interface gives the others"

# Much more output than a channel window: nothing lost, nothing stalls.
n=$(run -n 2 -- sh -c ": $MARK; seq 1 200000; seq 1 50000 >&2" 2>"$T/err" | grep -c '^\[[01]\] [0-9]*$')
[ "$n" -eq 400000 ] && [ "$(grep -c '^\[[01]\] [0-9]*$' "$T/err")" -eq 100000 ] ||
    fail "bulk output: want 400000 stdout and 100000 stderr lines, got $n and $(wc -l <"$T/err")"
ok "bulk output (several MB) forwarded completely"

# dtctl's stdin reaches rank 0 only, over a channel of its own into a fifo
# in a private directory (the host's $TMPDIR: $T/rt here), gone with the job.
mkdir -p "$T/rt"
seq 1 100000 >"$T/in"
want=$(cksum <"$T/in")
none=$(cksum </dev/null)
rt_clean() { # 0 once nothing is in $T/rt and no process holds a file there (10 s)
    i=0
    while { [ -n "$(ls -A "$T/rt")" ] || ls -l /proc/[0-9]*/fd/ 2>/dev/null | grep -qF "$T/rt/"; } && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -z "$(ls -A "$T/rt")" ]
}
run -n 3 -x TMPDIR="$T/rt" -- sh -c ": $MARK; echo \"\$(cksum)\"" <"$T/in" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "3 ranks reading stdin over ssh exited $rc: $(cat "$T/err")"
grep -qx "\[0\] $want" "$T/o" || fail "rank 0 did not get dtctl's stdin whole over ssh: $(cat "$T/o") (want $want)"
for r in 1 2; do
    grep -qx "\[$r\] $none" "$T/o" || fail "rank $r read stdin over ssh: $(cat "$T/o")"
done
rt_clean || fail "rank 0's fifo directory is left: $(ls -A "$T/rt")"
# endless, never read: the job ends all the same, and so does the writer
yes | run -n 2 -x TMPDIR="$T/rt" -- sh -c ": $MARK; echo done" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c done "$T/o")" -eq 2 ] ||
    fail "endless stdin, never read, over ssh: exit $rc: $(cat "$T/o" "$T/err")"
rt_clean || fail "never read: a fifo or its writer is left: $(ls -A "$T/rt")"
# A $TMPDIR too long for the marker (rank 0 waited on its fifo for ever)
# or relative (every launch failed, "a bug in dt"): /tmp instead.
long="$T/$(printf '%0230d' 0)"
mkdir -p "$long" "$T/wdrel"
out=$(echo hi | run -n 2 -x TMPDIR="$long" -- sh -c ": $MARK; cat; echo end" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qx '\[0\] hi' ||
    fail "a 260-byte TMPDIR on rank 0's host: exit $rc: $out $(cat "$T/err")"
out=$(cd "$T/wdrel" && echo hi | run -n 1 -x TMPDIR=. -- sh -c ": $MARK; cat" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] && [ "$out" = "[0] hi" ] && [ -z "$(ls -A "$T/wdrel")" ] ||
    fail "a relative TMPDIR on rank 0's host: exit $rc: $out $(cat "$T/err"); left: $(ls -A "$T/wdrel")"
ok "dtctl's stdin reaches rank 0 whole, with its end of file; a stdin never read holds nothing up; nothing left; a long or relative TMPDIR there is /tmp"

# A closed stdout stops the job (exit 141), and nothing of it is left.
{ run -n 2 -- sh -c ": $MARK; exec yes $MARK-yes" 2>"$T/err"; echo $? >"$T/rc"; } | head -n 3 >/dev/null
[ "$(cat "$T/rc")" -eq 141 ] || fail "| head over ssh: want exit 141, got $(cat "$T/rc"): $(cat "$T/err")"
i=0
while pgrep -f "$MARK-yes" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
pgrep -f "$MARK-yes" >/dev/null && fail "| head over ssh: workers left: $(pgrep -fa "$MARK-yes")"
ok "dtctl run --launcher=ssh ... | head: the job stops (exit 141), no worker left"

run -n 2 -- sh -c ": $MARK; exit \$((DT_RANK * 7))" 2>"$T/err"
rc=$?
[ $rc -eq 7 ] || fail "want exit 7 from rank 1, got $rc"
grep -q "rank 1 on 127.0.0.1 exited with code 7" "$T/err" || fail "failure not named: $(cat "$T/err")"
ok "first failure's exit code and rank/host"

run -n 1 -- sh -c ": $MARK; kill -s SEGV \$\$" 2>"$T/err"
rc=$?
[ $rc -eq 139 ] || fail "a worker killed by SIGSEGV: want 139, got $rc ($(cat "$T/err"))"
ok "exit signal from the channel (128+11)"

run -n 1 --set "launcher.ssh.workdir=$T/nonexistent" -- true 2>"$T/err"
rc=$?
[ $rc -eq 127 ] && grep -q "nonexistent" "$T/err" ||
    fail "missing workdir: want 127 naming it, got $rc: $(cat "$T/err")"
ok "a missing working directory fails the start, named"

# --- 2. host keys -----------------------------------------------------------
fp=$(ssh-keygen -lf "$T/sshd/host_lo.pub" | awk '{print $2}')
ssh-keygen -q -t ed25519 -N '' -f "$T/otherkey"
echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$T/otherkey.pub")" >"$T/wrong_known"
DT_LAUNCHER_SSH_KNOWN_HOSTS="$T/wrong_known" run -n 1 -- sh -c ": $MARK; echo RAN" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 127 ] || fail "wrong host key: want 127, got $rc"
grep -q RAN "$T/o" && fail "wrong host key: the command ran"
grep -q "CHANGED" "$T/err" && grep -qF "$fp" "$T/err" && grep -q "ssh-keygen -R" "$T/err" ||
    fail "wrong host key message lacks CHANGED, the fingerprint $fp or the fix: $(cat "$T/err")"
ok "a wrong host key is refused with its fingerprint and the fix"
DT_LAUNCHER_SSH_KNOWN_HOSTS="$T/wrong_known" dt check --launcher=ssh --hostfile "$T/hosts" >"$T/o" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "^127.0.0.1 *launcher *FAIL .*CHANGED" "$T/o" && grep -qF "$fp" "$T/o" ||
    fail "dtctl check with a wrong host key: want 1 and a FAIL row with $fp, got $rc: $(cat "$T/o")"
dt check --launcher=ssh --hostfile "$T/hosts" >"$T/o" 2>&1 ||
    fail "dtctl check on a good sshd failed: $(cat "$T/o")"
ok "dtctl check: a wrong host key fails with the fingerprint; a good host passes"
# A login that prints (a ~/.bashrc's pyenv or conda noise on stderr, a
# motd on stdout) is not a missing piece of the host: it failed dtctl
# check where jobs ran. A key whose forced command prints first stands in.
ssh-keygen -q -t ed25519 -N '' -C dt-test-noisy -f "$T/noisykey" </dev/null
printf 'command="echo pyenv: cannot rehash: shims not writable >&2; echo welcome to the cluster; exec /bin/sh -c \\"$SSH_ORIGINAL_COMMAND\\"" %s\n' \
    "$(cat "$T/noisykey.pub")" >>"$T/sshd/authorized_keys"
DT_LAUNCHER_SSH_IDENTITY="$T/noisykey" dt check --launcher=ssh --hostfile "$T/hosts" >"$T/o" 2>&1 ||
    fail "dtctl check on a host whose login prints: failed: $(cat "$T/o")"
grep -q "launcher *ok" "$T/o" || fail "dtctl check, login that prints: no ok launcher row: $(cat "$T/o")"
ok "dtctl check: what a login script prints is not a problem of the host"
# a key the host does not authorize (otherkey): said with where keys go and
# where the host says why when the key is there (a locked account looks
# the same from the client)
DT_LAUNCHER_SSH_IDENTITY="$T/otherkey" run -n 1 -- sh -c ": $MARK; echo RAN" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -ne 0 ] && ! grep -q RAN "$T/o" || fail "an unauthorized key: exit $rc, ran: $(cat "$T/o")"
grep -q "public-key authentication as '[^']*' failed" "$T/err" &&
    grep -q "authorized_keys on the host" "$T/err" && grep -q "the host's sshd log says why" "$T/err" ||
    fail "an unauthorized key: the message lacks the failure, the fix or the sshd log: $(cat "$T/err")"
ok "a key the host does not authorize: said, with authorized_keys and the sshd log"

: >"$T/empty_known"
DT_LAUNCHER_SSH_KNOWN_HOSTS="$T/empty_known" run -n 1 -- sh -c ": $MARK; echo RAN" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 127 ] && ! grep -q RAN "$T/o" || fail "unknown host key: want 127 and nothing run, got $rc"
grep -q "not known" "$T/err" && grep -qF "$fp" "$T/err" && grep -q "ssh-keyscan -p $SSH_PORT 127.0.0.1 >> $T/empty_known" "$T/err" ||
    fail "unknown host key message lacks the fingerprint or the command: $(cat "$T/err")"
ok "an unknown host key is refused with the fingerprint and the ssh-keyscan command"

DT_LAUNCHER_SSH_KNOWN_HOSTS="$T/empty_known" run -n 1 --set launcher.ssh.accept_new_host_keys=yes \
    -- sh -c ": $MARK; echo RAN" >"$T/o" 2>"$T/err" || fail "accept_new_host_keys=yes did not run: $(cat "$T/err")"
grep -q RAN "$T/o" && grep -q "127.0.0.1" "$T/empty_known" ||
    fail "accept_new_host_keys=yes: not run or key not recorded"
# ...and the recorded key is the real one: strict checking passes now.
DT_LAUNCHER_SSH_KNOWN_HOSTS="$T/empty_known" run -n 1 -- true 2>"$T/err" ||
    fail "the key recorded by accept_new_host_keys is not accepted later: $(cat "$T/err")"
ok "accept_new_host_keys = yes records the key (explicit opt-in)"

# --- 3. an unreachable host fails fast, named -------------------------------
dead=$(( SSH_PORT == 65000 ? 65001 : 65000 ))
printf '127.0.0.1 slots=1 port=%s\nlocalhost slots=1 port=%s\n' "$SSH_PORT" "$dead" >"$T/hosts2"
dt run --launcher=ssh --hostfile "$T/hosts2" -n 2 -- sh -c ": $MARK; sleep 30" 2>"$T/err"
rc=$?
[ $rc -eq 127 ] || fail "unreachable host: want 127, got $rc"
grep -q "host localhost:$dead: cannot connect" "$T/err" || fail "unreachable host not named: $(cat "$T/err")"
wait_gone "" || fail "workers left after the failed start: $(leftovers)"
# a name that does not resolve: the advice is about the name, not sshd
printf '127.0.0.1 slots=1 port=%s\nno-such-host.invalid slots=1\n' "$SSH_PORT" >"$T/hosts3"
dt check --launcher=ssh --hostfile "$T/hosts3" >"$T/err" 2>&1
grep -q "cannot connect: .*resolve.*; check the host's name in the host list" "$T/err" ||
    fail "an unresolvable host: no advice about its name: $(cat "$T/err")"
wait_gone "" || fail "workers left after the failed start: $(leftovers)"
ok "an unreachable host fails the launch, named with its cause; nothing left running; a name that does not resolve is said"

# 12 ranks on one host through sshd's default of 10 sessions a connection
printf '127.0.0.1 slots=12 port=%s\n' "$SSH_PORT" >"$T/hosts12"
dt run --launcher=ssh --hostfile "$T/hosts12" -n 12 -- sh -c 'echo "r$DT_RANK"' \
    >"$T/o12" 2>"$T/e12" || fail "12 ranks on one host: exit $?: $(tail -3 "$T/e12")"
[ "$(grep -cE '^\[[0-9]+\] r[0-9]+$' "$T/o12")" -eq 12 ] ||
    fail "12 ranks on one host: want 12 rank lines, got: $(cat "$T/o12")"
ok "12 ranks on one host with sshd's MaxSessions 10"

# --- 4. stop signals, failure kills the others, no leftovers ----------------
bg() { "$DTCTL" run --launcher=ssh --hostfile "$T/hosts" "$@" & }
bg -n 3 -- sh -c ": $MARK; sleep $SL & sleep $SL" 2>"$T/err"
job=$!
i=0
while [ "$(pgrep -fx "sleep $SL" | wc -l)" -lt 6 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(pgrep -fx "sleep $SL" | wc -l)" -ge 6 ] || fail "the 3 workers did not start their sleeps"
groups=$(job_groups)
[ "$(echo "$groups" | tr ',' '\n' | wc -l)" -eq 3 ] || fail "want 3 worker process groups, got '$groups'"
# The token is in the workers' environment but in no process's argv.
w=$(pgrep -f "^sh -c : $MARK" | head -n 1)
tok=$(tr '\0' '\n' <"/proc/$w/environ" 2>/dev/null | sed -n 's/^DT_JOB_TOKEN=//p')
[ ${#tok} -eq 64 ] || fail "could not read the token from a worker's environment"
# (from a file: on grep's own command line it would find itself)
printf '%s\n' "$tok" >"$T/tok"
if [ -n "$tok" ] && grep -lF -f "$T/tok" /proc/[0-9]*/cmdline 2>/dev/null | grep -q .; then
    fail "the job token appears in a command line: $(grep -lF -f "$T/tok" /proc/[0-9]*/cmdline)"
fi
ok "the token reaches the workers and is in no argv"
pkill -KILL -o -f "^sh -c : $MARK" # one worker dies
bounded_wait $job
[ $rc -eq 137 ] || fail "a killed worker: want dtctl to exit 137, got $rc ($(cat "$T/err"))"
wait_gone "$groups" || fail "processes left after a worker was killed: $(pgrep -a -g "$groups")"
ok "one worker killed: exit 137, the others and their children stopped"

bg -n 2 -- sh -c ": $MARK; sleep $SL" 2>"$T/err"
job=$!
i=0
while [ "$(pgrep -fx "sleep $SL" | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(pgrep -fx "sleep $SL" | wc -l)" -ge 2 ] || fail "SIGTERM case: the workers did not start"
groups=$(job_groups)
[ -n "$groups" ] || fail "no worker groups found before SIGTERM"
kill -TERM "$job"
bounded_wait $job
[ $rc -eq 143 ] || fail "SIGTERM to dtctl: want 143, got $rc"
wait_gone "$groups" || fail "processes left after SIGTERM: $(pgrep -a -g "$groups")"
ok "SIGTERM to dtctl stops every remote worker"

# Ctrl-C (SIGINT to dtctl) reaches the remote workers as SIGINT, as from a
# terminal (Python's KeyboardInterrupt; they got SIGTERM).
rm -f "$T/got".*
bg -n 2 -- sh -c ": $MARK; trap 'echo INT >$T/got.\$DT_RANK; exit 130' INT
    trap 'echo TERM >$T/got.\$DT_RANK; exit 143' TERM
    while :; do sleep 0.1; done" 2>"$T/err"
job=$!
i=0
while [ "$(pgrep -f "^sh -c : $MARK; trap" | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.2 # the traps set
groups=$(job_groups)
[ -n "$groups" ] || fail "SIGINT case: the workers did not start"
kill -INT "$job"
bounded_wait $job
[ $rc -eq 130 ] || fail "SIGINT to dtctl: want 130, got $rc ($(cat "$T/err"))"
for r in 0 1; do
    [ "$(cat "$T/got.$r" 2>/dev/null)" = INT ] ||
        fail "SIGINT to dtctl: rank $r got '$(cat "$T/got.$r" 2>/dev/null)', want INT ($(cat "$T/err"))"
done
wait_gone "$groups" || fail "processes left after SIGINT: $(pgrep -a -g "$groups")"
ok "SIGINT to dtctl reaches every remote worker as SIGINT"

# Ctrl-Z (SIGTSTP to dtctl) stops the remote workers with dtctl, but not
# their watchdogs (a STOP of the whole group stopped them too: a
# connection lost meanwhile left the workers stopped for ever); fg
# (SIGCONT to dtctl) continues them, and the job ends 0. They once ran on
# unwatched while dtctl alone was stopped.
. "$top_srcdir/tests/fixtures/proc-states.sh"
# dtctl in a process group of its own whose parent is this shell (as a
# shell with job control starts it): not orphaned, so SIGTSTP stops it
start_tstp_job() {
    start_in_own_group \
        "$DTCTL" run --launcher=ssh --hostfile "$T/hosts" -n 2 -- sh -c ": $MARK; sleep $SL; true" 2>"$T/err"
    job=$own_group_pid
    i=0
    while [ "$(pgrep -fx "sleep $SL" | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    sleeps=$(pgrep -fx "sleep $SL" | paste -sd' ' -)
    groups=$(job_groups)
    # the watchdogs: the bootstrap shell's subshell, one per group
    dogs=$(pgrep -g "$groups" -f "read -r dt_s" 2>/dev/null | paste -sd' ' -)
    [ "$(echo "$sleeps" | wc -w)" -eq 2 ] && [ "$(echo "$dogs" | wc -w)" -eq 2 ]
}
if start_tstp_job; then
    kill -TSTP "$job"
    all_in T "$job" || fail "SIGTSTP: dtctl did not stop ($(states "$job"))"
    # shellcheck disable=SC2086
    all_in T $sleeps || fail "SIGTSTP with ssh: the remote workers run on ($(states $sleeps))"
    # shellcheck disable=SC2086
    all_in '[RS]' $dogs || fail "SIGTSTP with ssh stopped the watchdogs too ($(states $dogs))"
    grep -q "the workers are stopped too" "$T/err" ||
        fail "SIGTSTP: dtctl did not say the workers stopped: $(cat "$T/err")"
    kill -CONT "$job"
    # shellcheck disable=SC2086
    all_in '[RSD]' $sleeps || fail "SIGCONT to dtctl: the remote workers stay stopped ($(states $sleeps))"
    # shellcheck disable=SC2086
    kill -TERM $sleeps
    bounded_wait $job
    [ $rc -eq 0 ] || fail "a job stopped (Ctrl-Z) and continued: want 0, got $rc ($(cat "$T/err"))"
else
    fail "SIGTSTP case: the workers or their watchdogs not found (sleeps: $sleeps, watchdogs: $dogs)"
    kill -KILL "$job"; bounded_wait $job
fi
ok "Ctrl-Z stops the remote workers (not their watchdogs) with dtctl, fg continues them"

# Ctrl-Z, then fg (SIGCONT to dtctl) while dtctl still waits for the host
# to run the STOP: dtctl goes on, and so do the workers (it once stopped
# itself after the STOP anyway: dtctl and the job stayed stopped, with no
# CONT left to come). The host's sshd is frozen, so the STOP cannot
# finish before the CONT; dtctl's channel request waiting unread in
# sshd's socket says that dtctl is past its first look for a CONT.
sshd_sessions() { # the listener's sshd descendants (not the workers)
    kids=$(pgrep -P "$SSHD_PID" | paste -sd, -)
    [ -n "$kids" ] && { echo "$kids" | tr , '\n'; pgrep -P "$kids" -f '^sshd'; } | paste -sd' ' -
}
sshd_has_unread() { # bytes wait in an established socket of sshd's port
    awk -v p=":$(printf '%04X' "$SSH_PORT")" '$2 ~ p "$" && $4 == "01" {
        split($5, q, ":"); if (q[2] != "00000000") f = 1 } END { exit !f }' /proc/net/tcp
}
if start_tstp_job && frozen=$(sshd_sessions) && [ -n "$frozen" ]; then
    # shellcheck disable=SC2086
    kill -STOP $frozen
    kill -TSTP "$job"
    i=0
    while ! sshd_has_unread && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    sshd_has_unread || fail "Ctrl-Z with sshd frozen: dtctl sent no STOP request"
    kill -CONT "$job"
    # shellcheck disable=SC2086
    kill -CONT $frozen
    # shellcheck disable=SC2086
    kill -TERM $sleeps
    i=0
    while kill -0 "$job" 2>/dev/null && [ "$(pstate "$job")" != T ] && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    [ "$(pstate "$job")" != T ] ||
        fail "SIGCONT while the STOP ran: dtctl stopped itself after it: $(cat "$T/err")"
    kill -CONT "$job" 2>/dev/null
    bounded_wait $job
    [ $rc -eq 0 ] || fail "Ctrl-Z then an early fg: want 0, got $rc ($(cat "$T/err"))"
    grep -q "then SIGCONT while the workers were being stopped: they continue" "$T/err" ||
        fail "Ctrl-Z then an early fg: not said: $(cat "$T/err")"
else
    fail "early fg case: the workers, their watchdogs or the sshd session not found (sleeps: $sleeps, watchdogs: $dogs)"
    kill -KILL "$job"; bounded_wait $job
fi
ok "Ctrl-Z then fg before the host ran the STOP: dtctl and the workers go on"

# dtctl killed while the job is stopped (its connection gone): the
# watchdogs, left running, end the stopped workers.
if start_tstp_job; then
    kill -TSTP "$job"
    # shellcheck disable=SC2086
    all_in T "$job" $sleeps || fail "SIGTSTP (2): not all stopped ($(states "$job" $sleeps))"
    kill -KILL "$job"
    bounded_wait $job
    wait_gone "$groups" || fail "stopped workers survived dtctl being killed: $(pgrep -a -g "$groups")"
else
    fail "SIGTSTP case 2: the workers or their watchdogs not found (sleeps: $sleeps, watchdogs: $dogs)"
    kill -KILL "$job"; bounded_wait $job
fi
ok "dtctl killed while Ctrl-Z'd: the watchdogs end the stopped remote workers"

# A real dt job Ctrl-Z'd for longer than [cluster] timeout (8 s) over ssh
# goes on after fg: no rank takes the stop for its peer's silence (exit
# 124, "hung"). Rank 1 stops itself after the first allreduce (rank 0
# then waits on it); Ctrl-Z stops both, fg's CONT continues both. The
# sleep makes the stop outlast the timeout; it asserts nothing. The
# timeout (8 s) must outlast finding the pids and the Ctrl-Z after rank 1
# paused itself: at 2 s a loaded machine (load 12 on 2 cores) let rank 0
# take rank 1's pause for a hang before the Ctrl-Z came.
pe="$top_builddir/tests/peer_exit"
if [ -x "$pe" ] && [ -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    start_in_own_group \
        "$DTCTL" run --launcher=ssh --hostfile "$T/hosts" -n 2 --transport=tcp \
        --set cluster.timeout=8s -x PEER_EXIT_RANK=1 -x PEER_EXIT_MODE=pause \
        -- sh -c ": $MARK; exec \"\$0\"" "$pe" >"$T/pe" 2>&1
    job=$own_group_pid
    i=0 p0="" p1=""
    while [ $i -lt 200 ] && { [ -z "$p0" ] || [ -z "$p1" ]; }; do
        p0=$(sed -n 's/^\[0\] peer_exit: rank 0 pid \([0-9]*\)$/\1/p' "$T/pe" | head -n 1)
        p1=$(sed -n 's/^\[1\] peer_exit: rank 1 pid \([0-9]*\)$/\1/p' "$T/pe" | head -n 1)
        sleep 0.1; i=$((i + 1))
    done
    if [ -n "$p0" ] && [ -n "$p1" ] && all_in T "$p1"; then
        kill -TSTP "$job"
        all_in T "$job" "$p0" || fail "Ctrl-Z of a dt job over ssh: not stopped ($(states "$job" "$p0"))"
        sleep 9                  # longer than the 8 s timeout
        kill -CONT "$job"
        bounded_wait $job
        [ $rc -eq 0 ] || fail "a dt job over ssh Ctrl-Z'd past [cluster] timeout, then fg: want 0, got $rc: $(cat "$T/pe")"
    else
        fail "peer_exit over ssh: the ranks did not start or rank 1 did not pause: $(cat "$T/pe")"
        kill -KILL "$job"; bounded_wait $job
    fi
    ok "a dt job Ctrl-Z'd over ssh longer than [cluster] timeout goes on after fg (exit 0)"
else
    echo "skip: peer_exit or the tcp transport is not built (Ctrl-Z of a dt job over ssh)"
fi

# dtctl killed outright: the channels close and each watchdog kills its group.
bg -n 2 -- sh -c ": $MARK; sleep $SL & sleep $SL" 2>/dev/null
job=$!
i=0
while [ "$(pgrep -fx "sleep $SL" | wc -l)" -lt 4 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
groups=$(job_groups)
[ -n "$groups" ] || fail "no worker groups found before killing dtctl"
kill -KILL "$job"
bounded_wait $job
wait_gone "$groups" || fail "workers survived dtctl being killed: $(pgrep -a -g "$groups")"
ok "dtctl killed with SIGKILL: no worker survives"

# --- 5. a stop while the ranks are slow to start --------------------------
# A key whose forced command sleeps before the worker's shell: the launch
# waits for the ranks to report (up to 30 s + [cluster] timeout). A stop
# signal then ends the launch at once, not after that wait.
SLOW=$((SL + 1))
ssh-keygen -q -t ed25519 -N '' -f "$T/slowkey"
printf 'command="sleep %s && eval \\"$SSH_ORIGINAL_COMMAND\\"" %s\n' "$SLOW" "$(cat "$T/slowkey.pub")" \
    >>"$T/sshd/authorized_keys"
DT_LAUNCHER_SSH_IDENTITY="$T/slowkey" bg -n 2 -- sh -c ": $MARK; echo STARTED" >"$T/o" 2>"$T/err"
job=$!
i=0
while ! pgrep -fx "sleep $SLOW" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
pgrep -fx "sleep $SLOW" >/dev/null || fail "slow start: the forced command did not run ($(cat "$T/err"))"
t0=$(date +%s)
kill -TERM "$job"
bounded_wait $job
took=$(( $(date +%s) - t0 ))
pkill -KILL -f "sleep $SLOW" 2>/dev/null
[ $rc -eq 143 ] || fail "SIGTERM during a slow start: want 143, got $rc ($(cat "$T/err"))"
# The forced command sleeps 100000+ s and the launch would wait 30 s + the
# timeout: 20 s is far from both and from the few seconds it takes.
[ "$took" -lt 20 ] || fail "SIGTERM during a slow start: dtctl took $took s to stop"
grep -q "received Terminated while starting the workers" "$T/err" ||
    fail "SIGTERM during a slow start not said: $(cat "$T/err")"
! grep -q STARTED "$T/o" || fail "a worker started after the stop: $(cat "$T/o")"
wait_gone "" || fail "workers left after a stop during the start: $(leftovers)"
ok "a stop signal during a slow start ends the launch at once (exit 143), nothing started"

# ...and while a host takes the TCP connection but never says a word (it
# held the launch for connect_timeout, 60 s here)
python3 -c 'import socket,time
s=socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$T/mute" &
mute=$!
i=0; while [ ! -s "$T/mute" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
printf '127.0.0.1 slots=1 port=%s\n' "$(cat "$T/mute")" >"$T/hosts_mute"
"$DTCTL" run --launcher=ssh --hostfile "$T/hosts_mute" --set launcher.ssh.connect_timeout=60s \
    -n 1 -- sh -c ": $MARK; echo STARTED" >"$T/o" 2>"$T/err" &
job=$!
sleep 1
t0=$(date +%s)
kill -TERM "$job"
bounded_wait $job
took=$(( $(date +%s) - t0 ))
kill $mute 2>/dev/null; wait $mute 2>/dev/null
[ $rc -eq 143 ] && [ "$took" -lt 20 ] ||
    fail "SIGTERM while connecting to a mute host: rc=$rc after $took s ($(cat "$T/err"))"
grep -q "received Terminated while starting the workers" "$T/err" ||
    fail "SIGTERM while connecting not said: $(cat "$T/err")"
ok "a stop signal while a host is mute ends the connection at once (exit 143)"

# ...and while a host's sshd stalls the authentication (a slow
# AuthorizedKeysCommand, a hung PAM): a second sshd whose key check sleeps
# for a key it does not know from its file. Authentication was a blocking
# call under connect_timeout (60 s here).
. "$top_srcdir/tests/fixtures/sshd-common.sh"
STALL=$((SL + 2))
ssh-keygen -q -t ed25519 -N '' -f "$T/stallkey"
stalled=""
for try in 1 2 3 4 5; do
    sport=$(fixture_random 20000 60999)
    sed -e "s|^ListenAddress .*|ListenAddress 127.0.0.1:$sport|" \
        -e "s|^PidFile .*|PidFile $T/sshd_stall.pid|" "$T/sshd/sshd_lo.conf" >"$T/sshd_stall.conf"
    printf 'AuthorizedKeysCommand /bin/sleep %s\nAuthorizedKeysCommandUser root\n' "$STALL" >>"$T/sshd_stall.conf"
    : >"$T/sshd_stall.log"
    /usr/sbin/sshd -D -f "$T/sshd_stall.conf" -E "$T/sshd_stall.log" </dev/null >/dev/null 2>&1 &
    stalled=$!
    echo "$stalled" >>"$T/sshd/pids"
    fixture_wait_listening "$T/sshd_stall.log" "$stalled" && break
    kill -KILL "$stalled" 2>/dev/null; stalled=""
done
if [ -z "$stalled" ]; then
    fail "the stalling sshd did not start: $(cat "$T/sshd_stall.log")"
else
    echo "[127.0.0.1]:$sport $(cut -d' ' -f1,2 "$T/sshd/host_lo.pub")" >>"$T/sshd/known_hosts"
    printf '127.0.0.1 slots=1 port=%s\n' "$sport" >"$T/hosts_stall"
    DT_LAUNCHER_SSH_IDENTITY="$T/stallkey" "$DTCTL" run --launcher=ssh --hostfile "$T/hosts_stall" \
        --set launcher.ssh.connect_timeout=60s -n 1 -- sh -c ": $MARK; echo STARTED" >"$T/o" 2>"$T/err" &
    job=$!
    i=0
    while ! pgrep -fx "/bin/sleep $STALL" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    pgrep -fx "/bin/sleep $STALL" >/dev/null || fail "stalled authentication: the key command did not run ($(cat "$T/err"))"
    t0=$(date +%s)
    kill -TERM "$job"
    bounded_wait $job
    took=$(( $(date +%s) - t0 ))
    pkill -KILL -fx "/bin/sleep $STALL" 2>/dev/null
    [ $rc -eq 143 ] && [ "$took" -lt 20 ] ||
        fail "SIGTERM during a stalled authentication: rc=$rc after $took s ($(cat "$T/err"))"
    grep -q "received Terminated while starting the workers" "$T/err" ||
        fail "SIGTERM during authentication not said: $(cat "$T/err")"
    ok "a stop signal while a host stalls the authentication ends it at once (exit 143)"
    # dtctl check waits (blocking) under connect_timeout, then fails the
    # host saying why (libssh's timeout once led to a NULL stop check)
    DT_LAUNCHER_SSH_IDENTITY="$T/stallkey" dt check --launcher=ssh --hostfile "$T/hosts_stall" \
        --set launcher.ssh.connect_timeout=2s >"$T/o" 2>&1
    rc=$?
    pkill -KILL -fx "/bin/sleep $STALL" 2>/dev/null
    [ $rc -eq 1 ] && grep -q "no answer to authentication within 2 s" "$T/o" ||
        fail "dtctl check of a host that stalls the authentication: want 1 and the timeout said, got $rc: $(cat "$T/o")"
    ok "dtctl check of a host that stalls the authentication fails it after connect_timeout"
    kill "$stalled" 2>/dev/null
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all ssh launcher tests passed"
