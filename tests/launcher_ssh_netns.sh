#!/bin/sh
# launcher_ssh_netns.sh — a 2-host x 2-slot job over the ssh launcher
# across two "hosts" in network namespaces (own sshd, own hostname, own
# address on a bridge), with the job's traffic on the interface chosen by
# [cluster] interface: ranks land host by host, rank 0 on 127.0.0.1 gives
# h2 a MASTER_ADDR it reaches, the allreduce example
# passes, a killed worker stops the job and nothing of it remains on any
# host, and the job token is in no argv on any host.
set -u

: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/fixtures/netns-test-lib.sh"
need_ssh_launcher
MARK="dtsshns$$"
SL=$((200000 + $$))           # a sleep no other test runs: "sleep $SL"
netns_test_begin sshns
cleanup() { # test 1b's sshd on 127.0.0.1 too
    pkill -KILL -f "$MARK" 2>/dev/null
    sh "$top_srcdir/tests/fixtures/sshd-loopback.sh" stop "$T/lo"
    sh "$FX" stop "$T/ns"
    rm -rf "$T"
}
trap cleanup EXIT
netns_hosts_start
netns_ssh_keys
export DT_CLUSTER_KILL_GRACE=2s
export DT_CLUSTER_INTERFACE="$NETNS_SUBNET"
printf '%s slots=2\n%s slots=2\n' "$H1" "$H2" >"$T/hosts"
run() { timeout -k 5 120 "$DTCTL" run --launcher=ssh --hostfile "$T/hosts" "$@"; }


# --- 1. ranks host by host, each on its own host name ----------------------
out=$(run -n 4 -- sh -c ": $MARK; echo \"\$DT_RANK \$DT_HOST \$(hostname) \$LOCAL_RANK \$DT_NODE_RANK \$DT_WORLD_SIZE\"" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "2x2 echo job exited $rc: $(cat "$T/err")"
for want in "0 $H1 h1 0 0 4" "1 $H1 h1 1 0 4" "2 $H2 h2 0 1 4" "3 $H2 h2 1 1 4"; do
    r=${want%% *}
    echo "$out" | grep -qx "\[$r\] $want" || fail "rank $r: want '$want' in: $out"
done
ok "2 hosts x 2 slots: ranks, hosts, host names, local and node ranks"
hosts_clean || fail "processes left on the hosts after a clean job: $(strays_text)"

# --- 1b. rank 0 on "127.0.0.1" (this machine, horovodrun's habit), rank 1
# on h2: MASTER_ADDR must be an address h2 reaches (this machine's on the
# bridge, where the store listens), not 127.0.0.1, which is h2 itself ------
sh "$top_srcdir/tests/fixtures/sshd-loopback.sh" start "$T/lo" >/dev/null ||
    fail "cannot start an sshd on 127.0.0.1 for rank 0"
lo_port=$(sed -n 's/^SSH_PORT=//p' "$T/lo/env")
cat "$SSH_KEY.pub" >>"$T/lo/authorized_keys"
cat "$T/lo/known_hosts" >>"$SSH_KNOWN_HOSTS"
printf '127.0.0.1 slots=1 port=%s\n%s slots=1\n' "$lo_port" "$H2" >"$T/hosts_lo"
# Each rank: MASTER_ADDR, and whether a TCP connection to it reaches this
# machine's store (its port; torch's store would listen on MASTER_PORT).
cat >"$T/master.sh" <<'EOF2'
port=${DT_RENDEZVOUS##*:}
reach=no
bash -c 'exec 3<>"/dev/tcp/$1/$2"' sh "$MASTER_ADDR" "$port" 2>/dev/null && reach=yes
echo "$DT_RANK $(hostname) MASTER_ADDR=$MASTER_ADDR reach=$reach"
EOF2
out=$(timeout -k 5 120 "$DTCTL" run --launcher=ssh --hostfile "$T/hosts_lo" -n 2 \
    -- sh -c ": $MARK; . $T/master.sh" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "127.0.0.1 + h2 job exited $rc: $(cat "$T/err")"
for want in "0 $(hostname) MASTER_ADDR=$NETNS_GATEWAY reach=yes" \
    "1 h2 MASTER_ADDR=$NETNS_GATEWAY reach=yes"; do
    echo "$out" | grep -qxF "[${want%% *}] $want" ||
        fail "rank ${want%% *}: want '$want' in: $out"
done
ok "rank 0 on 127.0.0.1, rank 1 on h2: MASTER_ADDR=$NETNS_GATEWAY on both, reachable from h2"
hosts_clean || fail "processes left on the hosts after the 127.0.0.1 + h2 job: $(strays_text)"

# --- 2. a real dt job across the interface ---------------------------------
ex="$top_builddir/examples/allreduce"
if [ -x "$ex" ]; then
    # tcp: the core's hierarchical allreduce (within each host through
    # shared memory, across the hosts over tcp) for every size (hier_min
    # = 0); shm = off: the flat algorithms.
    for shm in auto off; do
        run -n 4 --set collectives.shm=$shm --set collectives.hier_min=0 \
            -v -v -- "$ex" >"$T/o" 2>"$T/err"
        rc=$?
        [ $rc -eq 0 ] || fail "allreduce (shm=$shm) across the namespace hosts exited $rc: $(cat "$T/err")"
        grep -q "4 ranks, all collectives correct" "$T/o" || fail "allreduce (shm=$shm) did not confirm: $(cat "$T/o")"
        hier=0
        grep -q "collectives: rank 3: hierarchical allreduce: 2 ranks on each of 2 hosts" \
            "$T/o" "$T/err" && hier=1
        [ $hier -eq $([ $shm = auto ] && echo 1 || echo 0) ] ||
            fail "tcp, shm=$shm: rank 3 hierarchical=$hier: $(grep 'collectives: rank 3:' "$T/o" "$T/err")"
    done
    ok "examples/allreduce over tcp, 4 ranks on 2 hosts over $NETNS_SUBNET (hierarchical; shm=off: flat)"
    # The same job over the ucx transport (issue 7): UCX between the hosts
    # on the interface [cluster] interface picks there, in both its modes:
    # its own choice of transports, and tls = tcp.
    if "$DTCTL" plugins | grep -q '^transport *ucx .*available'; then
        for tls in "" tcp; do
            run -n 4 --transport=ucx --set transport.ucx.tls="$tls" \
                -v -v -- "$ex" >"$T/o" 2>"$T/err"
            rc=$?
            [ $rc -eq 0 ] || fail "ucx (tls='$tls') across the hosts exited $rc: $(tail -n 20 "$T/err")"
            grep -q "4 ranks, all collectives correct" "$T/o" ||
                fail "ucx (tls='$tls') allreduce did not confirm: $(cat "$T/o")"
            grep -q "ucx: rank 2: UCX_NET_DEVICES=dt0" "$T/o" "$T/err" ||
                fail "ucx (tls='$tls'): rank 2 did not use dt0: $(grep NET_DEVICES "$T/o" "$T/err")"
            # UCX's own transports: allreduce within each host through
            # shared memory, across the hosts over UCX; tls = tcp: flat.
            if [ -z "$tls" ]; then
                grep -q "collectives: rank 3: hierarchical allreduce: 2 ranks on each of 2 hosts" \
                    "$T/o" "$T/err" ||
                    fail "ucx: rank 3 did not run the hierarchical allreduce: $(grep 'collectives: rank 3:' "$T/o" "$T/err")"
            fi
        done
        ok "examples/allreduce over ucx (default transports: hierarchical; tls=tcp), 4 ranks on 2 hosts via dt0"
    else
        echo "note: the ucx transport is not built; its namespace part was not run"
    fi
else
    echo "note: $ex not built; the allreduce part was not run"
fi

# --- 3. a worker killed: the job stops, nothing remains on any host --------
"$DTCTL" run --launcher=ssh --hostfile "$T/hosts" -n 4 -- sh -c ": $MARK; sleep $SL & sleep $SL" >/dev/null 2>"$T/err" &
job=$!
i=0
while [ "$(pgrep -fx "sleep $SL" | wc -l)" -lt 8 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(pgrep -fx "sleep $SL" | wc -l)" -eq 8 ] || fail "the 4 workers did not all start"
# The token: in a worker's environment, in no argv on any host.
w=$(pgrep -f "^sh -c : $MARK" | head -n 1)
tr '\0' '\n' <"/proc/$w/environ" 2>/dev/null | sed -n 's/^DT_JOB_TOKEN=//p' >"$T/tok"
[ "$(wc -c <"$T/tok")" -eq 65 ] || fail "no token in a worker's environment"
for ns in "$NS1" "$NS2"; do
    for p in $(ip netns pids "$ns"); do
        grep -qF -f "$T/tok" "/proc/$p/cmdline" 2>/dev/null &&
            fail "the token is on the command line of pid $p in $ns"
    done
done
grep -lF -f "$T/tok" /proc/[0-9]*/cmdline 2>/dev/null | grep -q . &&
    fail "the token is on a command line on this machine"
ok "the token reaches the workers on both hosts, in no argv anywhere"
# Kill rank 2's worker (on h2).
kill_worker_in "$NS2" 2
i=0
while kill -0 $job 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL $job 2>/dev/null
wait $job
rc=$?
[ $rc -eq 137 ] || fail "want dtctl to exit 137 (rank 2 killed), got $rc: $(cat "$T/err")"
grep -q "rank 2 on $H2 was killed by signal 9" "$T/err" || fail "the failure does not name rank 2 on $H2: $(cat "$T/err")"
hosts_clean || fail "processes left on the hosts after the failure: $(strays_text)"
pgrep -fx "sleep $SL" >/dev/null && fail "sleeps survived: $(pgrep -afx "sleep $SL")"
ok "a killed worker stops the job (137, rank and host named); nothing left on either host"

# --- 3b. a host that vanishes without a word (its link down: no FIN, no
# RST): TCP keepalive from [cluster] timeout (3 s here) notices, the job
# ends naming the host, in about the timeout (it waited for ever) --------
timeout -k 5 60 "$DTCTL" run --launcher=ssh --hostfile "$T/hosts" -n 4 \
    --set cluster.timeout=3s -- sh -c ": $MARK; sleep $SL" >/dev/null 2>"$T/err" &
job=$!
i=0
while [ "$(pgrep -fx "sleep $SL" | wc -l)" -lt 4 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(pgrep -fx "sleep $SL" | wc -l)" -eq 4 ] || fail "vanishing host: the 4 workers did not all start"
ip -n "$NS2" link set dt0 down
t0=$(date +%s)
wait $job
rc=$?
took=$(($(date +%s) - t0))
ip -n "$NS2" link set dt0 up
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] ||
    fail "vanishing host: want dtctl to fail by itself, got $rc after ${took}s: $(cat "$T/err")"
grep -q "the connection to $H2 was lost" "$T/err" ||
    fail "vanishing host: $H2 not named as lost: $(cat "$T/err")"
[ $took -le 30 ] || fail "vanishing host: the job took ${took}s to end (timeout 3 s)"
pkill -KILL -f "$MARK" 2>/dev/null
pkill -KILL -fx "sleep $SL" 2>/dev/null
ok "a host that vanished silently is named lost in ${took}s ([cluster] timeout 3 s)"

# --- 4. dtctl check across both hosts --------------------------------------
timeout 120 "$DTCTL" check --launcher=ssh --hostfile "$T/hosts" >"$T/o" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "dtctl check on two good hosts exited $rc: $(cat "$T/o")"
grep -q "^$H1 *interface *ok *dt0 $H1" "$T/o" && grep -q "^$H2 *rendezvous *ok *reaches this machine at $NETNS_GATEWAY" "$T/o" ||
    fail "dtctl check table lacks the interface/rendezvous rows: $(cat "$T/o")"
ok "dtctl check passes on the namespace hosts (interface, rendezvous rows)"
# An address nobody has: that host fails (named, with the cause), the
# others still pass; a wrong interface fails on every host.
dead=${NETNS_GATEWAY%.1}.250
printf '%s slots=2\n%s slots=1\n' "$H1" "$dead" >"$T/hosts3"
timeout 120 "$DTCTL" check --launcher=ssh --hostfile "$T/hosts3" \
    --set launcher.ssh.connect_timeout=2s >"$T/o" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "dtctl check with a dead host: want 1, got $rc"
grep -q "^$dead *launcher *FAIL .*cannot connect" "$T/o" && grep -q "^$H1 *launcher *ok" "$T/o" ||
    fail "dtctl check does not name the dead host, or fails the good one: $(cat "$T/o")"
timeout 120 "$DTCTL" check --launcher=ssh --hostfile "$T/hosts" --set cluster.interface=nosuch0 >"$T/o" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "^$H2 *interface *FAIL *no interface matches .*nosuch0.*dt0 $H2" "$T/o" ||
    fail "dtctl check with a wrong interface: want 1 and a FAIL row listing dt0, got $rc: $(cat "$T/o")"
ok "dtctl check names an unreachable host and a missing interface, with the fix"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all ssh namespace tests passed"
