#!/bin/sh
# ipv6_netns.sh — dt across two "hosts" with IPv6 addresses only (network
# namespaces on a bridge, tests/fixtures/netns-hosts.sh with
# NETNS_FAMILY=ipv6): the ssh launcher with IPv6 addresses in a hostfile
# and in -H, MASTER_ADDR bare (torch's env:// takes no brackets) and the
# store at [addr]:port, examples/allreduce over tcp (and ucx), dtctl
# check, a stranger at the store logged as [addr]:port, dtctl on an
# IPv6-only host facing its IPv6 default route, and the mpi launcher
# refusing what Open MPI's mpirun cannot take (an IPv6 host or network)
# before it starts.
set -u

: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/fixtures/netns-test-lib.sh"
need_ssh_launcher
MARK="dtipv6ns$$"
netns_test_begin ipv6ns
export NETNS_FAMILY=ipv6
netns_hosts_start
netns_ssh_keys
export DT_CLUSTER_KILL_GRACE=2s
printf '%s slots=2\n%s slots=2\n' "$H1" "$H2" >"$T/hosts"
run() { timeout -k 5 120 "$DTCTL" run "$@"; }
case "$H1$H2" in *.*) fail "the hosts have IPv4 addresses: $H1 $H2" ;; esac

# --- 1. ranks on both hosts; MASTER_ADDR bare, the store bracketed -------
want_rdz="\\[$NETNS_GATEWAY\\]:[0-9]*"
for form in hostfile brackets; do
    if [ $form = hostfile ]; then
        set -- --hostfile "$T/hosts"
    else
        set -- -H "[$H1]:2,[$H2]:2"
    fi
    out=$(run --launcher=ssh "$@" -n 4 -- sh -c ": $MARK; echo \"\$DT_RANK \$(hostname) \$MASTER_ADDR \$DT_RENDEZVOUS\"" 2>"$T/err")
    rc=$?
    [ $rc -eq 0 ] || fail "$form: the 2x2 job exited $rc: $(cat "$T/err")"
    for want in "0 h1" "1 h1" "2 h2" "3 h2"; do
        echo "$out" | grep -qx "\[${want%% *}\] $want $H1 $want_rdz" ||
            fail "$form: want '$want $H1 [$NETNS_GATEWAY]:PORT' in: $out"
    done
done
ok "IPv6 hosts (hostfile, -H [addr]:N): ranks on both, MASTER_ADDR=$H1, DT_RENDEZVOUS=[$NETNS_GATEWAY]:PORT"
hosts_clean || fail "processes left on the hosts: $(strays_text)"

# --- 2. collectives over IPv6: tcp, and ucx where built ----------------
ex="$top_builddir/examples/allreduce"
if [ -x "$ex" ]; then
    for transport in tcp ucx; do
        "$DTCTL" plugins | grep -q "^transport *$transport .*available" || {
            echo "note: the $transport transport is not available: not run"
            continue
        }
        run --launcher=ssh --hostfile "$T/hosts" -n 4 --transport=$transport \
            --set cluster.interface="$NETNS_SUBNET" -- "$ex" >"$T/o" 2>"$T/err"
        rc=$?
        [ $rc -eq 0 ] && grep -q "4 ranks, all collectives correct" "$T/o" ||
            fail "allreduce over $transport: exited $rc: $(cat "$T/o") $(tail -n 20 "$T/err")"
    done
    ok "examples/allreduce across the IPv6-only hosts ([cluster] interface = $NETNS_SUBNET)"
else
    echo "note: $ex not built; the allreduce part was not run"
fi

# --- 3. dtctl check -----------------------------------------------------
timeout 120 "$DTCTL" check --launcher=ssh --hostfile "$T/hosts" \
    --set cluster.interface="$NETNS_SUBNET" >"$T/o" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "dtctl check exited $rc: $(cat "$T/o")"
grep -q "^$H1 *interface *ok *dt0 $H1" "$T/o" &&
    grep -q "^$H2 *rendezvous *ok *reaches this machine at $NETNS_GATEWAY " "$T/o" ||
    fail "dtctl check lacks the interface/rendezvous rows: $(cat "$T/o")"
ok "dtctl check passes across the IPv6-only hosts"

# --- 4. a stranger at the store is named [addr]:port ---------------------
# (rank 1, on h2, opens a TCP connection to the store and closes it, then
# waits, 20 s at most, until dtctl has said so: /tmp is shared)
cat >"$T/stranger.sh" <<'EOF2'
[ "$DT_RANK" = 1 ] || exit 0
a=${DT_RENDEZVOUS%]:*}
bash -c 'exec 3<>"/dev/tcp/$1/$2"' sh "${a#?}" "${DT_RENDEZVOUS##*:}"
i=0
while ! grep -q "dropped connection" "$1" && [ $i -lt 200 ]; do
    sleep 0.1
    i=$((i + 1))
done
EOF2
out=$(run --launcher=ssh -H "$H1,$H2" -n 2 -- sh -c ": $MARK; . $T/stranger.sh" sh "$T/err" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "the stranger job exited $rc: $(cat "$T/err")"
grep -q "dropped connection from \[$H2\]:[0-9]*: " "$T/err" ||
    fail "want 'dropped connection from [$H2]:PORT' in: $(cat "$T/err")"
ok "an unauthenticated connection from h2 is logged as [$H2]:PORT"

# --- 5. dtctl on an IPv6-only host (h1, its default route via the bridge)
# with a launcher that is not local and no other host: the store faces
# the IPv6 default route, not 127.0.0.1 ---------------------------------
ip -n "$NS1" -6 route add default via "$NETNS_GATEWAY" ||
    fail "cannot add a default route in $NS1"
out=$(ip netns exec "$NS1" timeout -k 5 60 "$DTCTL" run --launcher=ssh -H "$H1" \
    -- sh -c ": $MARK; echo \"\$DT_RENDEZVOUS\"" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "dtctl on h1 exited $rc: $(cat "$T/err")"
echo "$out" | grep -qx "\[0\] \[$H1\]:[0-9]*" ||
    fail "dtctl on h1: want DT_RENDEZVOUS=[$H1]:PORT, got: $out $(cat "$T/err")"
grep -q "no default route" "$T/err" && fail "dtctl on h1 saw no default route: $(cat "$T/err")"
ok "dtctl on an IPv6-only host: the store faces its IPv6 default route ([$H1])"

# --- 6. the mpi launcher: refused before mpirun, with the way out -------
if "$DTCTL" plugins | grep -q '^launcher *mpi .*available'; then
    run --launcher=mpi --hostfile "$T/hosts" -n 4 -- sh -c ": $MARK; true" >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -ne 0 ] && grep -q "host '$H1' is an IPv6 address, which Open MPI's mpirun cannot take as a host.*--launcher=ssh" "$T/err" ||
        fail "mpi launcher with IPv6 hosts: want a refusal naming $H1, got $rc: $(cat "$T/err")"
    grep -q "^\[job\]" "$T/err" && fail "mpirun ran anyway: $(cat "$T/err")"
    run --launcher=mpi -H localhost -n 1 --set cluster.interface="$NETNS_SUBNET" -- true >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -ne 0 ] && grep -qF "interface item '$NETNS_SUBNET' is an IPv6 network" "$T/err" ||
        fail "mpi launcher with an IPv6 interface network: want a refusal, got $rc: $(cat "$T/err")"
    timeout 120 "$DTCTL" check --launcher=mpi --hostfile "$T/hosts" >"$T/o" 2>&1
    grep -q "^$H2 *launcher *FAIL *host '$H2' is an IPv6 address" "$T/o" ||
        fail "dtctl check --launcher=mpi does not fail $H2: $(cat "$T/o")"
    ok "mpi launcher: IPv6 hosts and networks refused before mpirun (run and check)"
else
    echo "note: the mpi launcher is not available: its part was not run"
fi
hosts_clean || fail "processes left on the hosts: $(strays_text)"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all IPv6 namespace tests passed"
