#!/bin/sh
# elastic_netns.sh — elastic membership over the ssh launcher on two
# "hosts" in network namespaces (2 hosts x 2 slots, [cluster] min_np = 2):
#  1. max_restarts = 1: one host is taken away mid-run (its workers, its
#     sshd and its sessions killed: the host is gone and refuses
#     connections). The job restarts on the other host's 2 slots and
#     finishes (exit 0); the restart line names the excluded host.
#  2. The host is back: a new job runs on all 4 slots again.
#  3. Within one dtctl run (max_restarts = 2, host_cooldown 0): the host
#     goes away, the job goes on with 2 workers, the host comes back, the
#     next restart readmits it and the job finishes on 4.
#  4. min_np = 3 and a host away at the start: the job does not start and
#     names the excluded host.
set -u

: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/fixtures/netns-test-lib.sh"
need_ssh_launcher
MARK="dtelastic$$"
SL=$((300000 + $$))           # a sleep no other test runs: "sleep $SL"
netns_test_begin elastic
netns_hosts_start
netns_ssh_keys
export DT_CLUSTER_KILL_GRACE=2s
export DT_CLUSTER_INTERFACE="$NETNS_SUBNET"
export DT_CLUSTER_RESTART_BACKOFF=100ms
export DT_LAUNCHER_SSH_CONNECT_TIMEOUT=3s
printf '%s slots=2\n%s slots=2\n' "$H1" "$H2" >"$T/hosts"
# (sshd rewrites its command line: the fixture's own command instead.)
SSHD2="/usr/sbin/sshd -D -f '$T/ns/sshd_h2.conf' -E '$T/ns/sshd_h2.log'"
[ -f "$T/ns/sshd_h2.conf" ] || { echo "FAIL: the fixture has no $T/ns/sshd_h2.conf"; exit 1; }

# Host 2 away: everything in its namespace killed (workers, sessions,
# sshd): its connections close, new ones are refused.
take_h2_away() {
    pids=$(ip netns pids "$NS2")
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
}
# Host 2 back: its sshd again, as the fixture started it.
bring_h2_back() {
    ip netns exec "$NS2" unshare --uts sh -c "hostname h2 && exec $SSHD2" \
        </dev/null >/dev/null 2>&1 &
    echo $! >>"$T/ns/pids"
    i=0
    until on "$H2" true >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 50 ] || { fail "h2's sshd did not come back"; return 1; }
        sleep 0.1
    done
}
# The workers' program: say who they are; attempt $1 sleeps until
# killed; attempt $2 waits for $T/back and fails (exit 3); others exit 0
# ("x": no such attempt).
prog() {
    echo ": $MARK; echo \"attempt \$DT_RESTART_COUNT rank \$DT_RANK of \$DT_WORLD_SIZE on \$(hostname)\";
case \$DT_RESTART_COUNT in $1) exec sleep $SL;; $2) i=0; while [ ! -f $T/back ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i+1)); done; exit 3;; esac"
}
run() { timeout -k 5 60 "$DTCTL" run --launcher=ssh --hostfile "$T/hosts" "$@"; }

# --- 1. a host lost mid-run: the job goes on with the other's 2 slots ------
run --min-np 2 --max-restarts 1 -- sh -c "$(prog 0 x)" >"$T/o" 2>"$T/err" &
job=$!
wait_sleeps 4 || fail "the 4 workers did not start: $(cat "$T/err")"
take_h2_away
wait_job $job
[ $rc -eq 0 ] || fail "want the job to finish on h1 (0), got $rc: $(cat "$T/err")"
grep -q "warning: restart 1 of 1: rank [23] on $H2 exited with code 255" "$T/err" ||
    fail "the restart line does not name the lost host's rank: $(grep restart "$T/err")"
grep -q "warning: restart 1 of 1: host $H2 excluded (unreachable: .*); continuing on 2 workers (min_np 2, max_np 4)" "$T/err" ||
    fail "no membership line naming $H2: $(cat "$T/err")"
for r in 0 1; do
    grep -qx "\[$r\] attempt 1 rank $r of 2 on h1" "$T/o" ||
        fail "attempt 1: rank $r of 2 on h1 missing: $(cat "$T/o")"
done
grep -q "attempt 1 .* on h2" "$T/o" && fail "attempt 1 ran on h2: $(cat "$T/o")"
grep -q "info: the job finished; restarts used: 1 of 1" "$T/err" ||
    fail "no final line: $(tail -n 3 "$T/err")"
ok "h2 lost mid-run: restart 1 on h1's 2 slots (min_np 2), h2 named as excluded, exit 0"

# --- 2. the host is back: a later job uses it again ------------------------
bring_h2_back
run --min-np 2 --max-restarts 1 -- sh -c "$(prog x x)" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q "^\[3\] attempt 0 rank 3 of 4 on h2" "$T/o" ||
    fail "with h2 back, want a 4-worker job (0), got $rc: $(cat "$T/o" "$T/err")"
[ $rc -eq 0 ] && ok "h2 back: the next job runs on both hosts (4 workers)"
hosts_clean || fail "processes left on the hosts: $(strays_text)"

# --- 3. readmitted at a later restart of the same run -----------------------
rm -f "$T/back"
run --min-np 2 --max-restarts 2 --set cluster.host_cooldown=0s \
    -- sh -c "$(prog 0 1)" >"$T/o" 2>"$T/err" &
job=$!
wait_sleeps 4 || fail "the 4 workers did not start (3): $(cat "$T/err")"
take_h2_away
i=0
while ! grep -q "attempt 1 rank 1 of 2 on h1" "$T/o" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
bring_h2_back
touch "$T/back"
wait_job $job
[ $rc -eq 0 ] || fail "(3) want 0 after the readmission, got $rc: $(cat "$T/err")"
grep -q "warning: restart 1 of 2: host $H2 excluded (unreachable" "$T/err" ||
    fail "(3) no exclusion line: $(grep restart "$T/err")"
grep -q "warning: restart 2 of 2: host $H2 rejoins (reachable again; excluded for: unreachable.*); continuing on 4 workers (min_np 2, max_np 4)" "$T/err" ||
    fail "(3) no readmission line: $(grep restart "$T/err")"
grep -qx "\[3\] attempt 2 rank 3 of 4 on h2" "$T/o" ||
    fail "(3) attempt 2 did not run rank 3 on h2: $(cat "$T/o")"
[ $fails -eq 0 ] && ok "one run: h2 lost (2 workers on h1), back, readmitted at restart 2 (4 workers), exit 0"

# --- 4. too few slots left: not started, the excluded host named -----------
take_h2_away
run --min-np 3 --max-restarts 1 -- sh -c "$(prog x x)" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 127 ] && grep -q "error: start: host $H2 excluded (unreachable.*); only 2 slots left, fewer than min_np 3: not starting; excluded: $H2 (unreachable" "$T/err" ||
    fail "(4) want 127 and the excluded host named, got $rc: $(cat "$T/err")"
[ $rc -eq 127 ] && ok "min_np 3 with h2 away: not started (127), h2 named"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all elastic namespace tests passed"
