#!/bin/sh
# launcher_mpi_netns.sh — `dtctl run --launcher=mpi` with the real Open MPI
# mpirun across two "hosts" in network namespaces (own sshd, own hostname,
# own address on a bridge; tests/fixtures/netns-hosts.sh). mpirun reaches
# them over ssh with host keys verified ([launcher.mpi] ssh_identity /
# ssh_known_hosts), its traffic on [cluster] interface: ranks land 2 per
# host, the allreduce example passes, an unknown host key is refused, a
# killed worker on the second host stops the job naming the rank and
# nothing of the job remains on any host, Ctrl-C too, Ctrl-Z and fg stop
# and continue the workers on both hosts, and the job token is
# in no argv on any host.
set -u

: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/fixtures/netns-test-lib.sh"
command -v mpirun >/dev/null 2>&1 ||
    { echo "SKIP: mpirun is not installed (Debian: apt install openmpi-bin)"; exit 77; }
"$DTCTL" plugins | grep -q '^launcher *mpi .*available' ||
    { echo "SKIP: the mpi launcher plugin is not built or not available: $("$DTCTL" plugins | grep mpi)"; exit 77; }
command -v ssh >/dev/null 2>&1 ||
    { echo "SKIP: the ssh client is missing (apt install openssh-client): mpirun reaches hosts with it"; exit 77; }
MARK="dtmpins$$"
SL=$((300000 + $$))           # a sleep no other test runs: "sleep $SL"
netns_test_begin mpins
netns_hosts_start

# Never inherit a job's identity from the environment running the tests.
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN OMPI_COMM_WORLD_RANK \
    SLURM_PROCID SLURM_JOB_ID 2>/dev/null
export DT_LAUNCHER_MPI_SSH_IDENTITY="$SSH_KEY"
export DT_LAUNCHER_MPI_SSH_KNOWN_HOSTS="$SSH_KNOWN_HOSTS"
export DT_CLUSTER_KILL_GRACE=3s
export DT_CLUSTER_INTERFACE="$NETNS_SUBNET"
printf '%s slots=2\n%s slots=2\n' "$H1" "$H2" >"$T/hosts"
run() { timeout -k 5 120 "$DTCTL" run --launcher=mpi --hostfile "$T/hosts" "$@"; }

I1=$(ns_inode "$NS1") I2=$(ns_inode "$NS2")

# --- 1. ranks 2 per host, each in its host's namespace ----------------------
out=$(run -n 4 -- sh -c ": $MARK; echo \"\$DT_RANK \$DT_HOST \$(hostname) \$(stat -L -c %i /proc/self/ns/net) \$DT_LOCAL_RANK \$DT_NODE_RANK \$DT_WORLD_SIZE\"" 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "2x2 echo job exited $rc: $(cat "$T/err")"
for want in "0 $H1 h1 $I1 0 0 4" "1 $H1 h1 $I1 1 0 4" "2 $H2 h2 $I2 0 1 4" "3 $H2 h2 $I2 1 1 4"; do
    r=${want%% *}
    echo "$out" | grep -qx "\[$r\] $want" || fail "rank $r: want '$want' in: $out"
done
[ "$(echo "$out" | wc -l)" -eq 4 ] || fail "want exactly 4 output lines: $out"
ok "2 hosts x 2 slots: ranks 0,1 on h1 ($NS1), 2,3 on h2 ($NS2), local and node ranks"
hosts_clean || fail "processes left on the hosts after a clean job: $(strays_text)"

# --- 2. a real dt job across the interface ---------------------------------
ex="$top_builddir/examples/allreduce"
if [ -x "$ex" ]; then
    run -n 4 -- "$ex" >"$T/o" 2>"$T/err"
    rc=$?
    [ $rc -eq 0 ] || fail "allreduce across the namespace hosts exited $rc: $(cat "$T/err")"
    grep -q '^\[0\] allreduce example: 4 ranks, all collectives correct' "$T/o" ||
        fail "allreduce did not confirm: $(cat "$T/o" "$T/err")"
    ok "examples/allreduce, 4 ranks on 2 hosts over $NETNS_SUBNET"
else
    fail "examples/allreduce is not built ($ex)"
fi
hosts_clean || fail "processes left on the hosts after allreduce: $(strays_text)"

# --- 3. host keys are verified: an unknown host is refused ------------------
: >"$T/empty_known_hosts"
DT_LAUNCHER_MPI_SSH_KNOWN_HOSTS="$T/empty_known_hosts" \
    run -n 4 -- sh -c ": $MARK; echo ran" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -ne 0 ] || fail "mpirun reached hosts whose keys are not in known_hosts"
grep -q "Host key verification failed" "$T/err" ||
    fail "no host key refusal in the output (rc $rc): $(cat "$T/err")"
grep -q "ran" "$T/o" && fail "a worker ran on a host with an unknown key"
ok "an unknown host key is refused (exit $rc, 'Host key verification failed')"
hosts_clean || fail "processes left on the hosts after the refusal: $(strays_text)"

# --- 4. a worker killed on h2: the job stops, nothing remains anywhere ------
"$DTCTL" run --launcher=mpi --hostfile "$T/hosts" -n 4 -- sh -c ": $MARK; sleep $SL & sleep $SL" >/dev/null 2>"$T/err" &
job=$!
wait_sleeps 8 || fail "the 4 workers did not all start: $(pgrep -afx "sleep $SL")"
# The token: in a worker's environment, in no argv on any host.
w=$(pgrep -f "^sh -c : $MARK" | head -n 1)
tr '\0' '\n' <"/proc/$w/environ" 2>/dev/null | sed -n 's/^DT_JOB_TOKEN=//p' >"$T/tok"
[ "$(wc -c <"$T/tok")" -eq 65 ] || fail "no token in a worker's environment"
[ -n "$(ip netns pids "$NS1")" ] && [ -n "$(ip netns pids "$NS2")" ] ||
    fail "nothing runs in the namespaces while the job runs"
for ns in "$NS1" "$NS2"; do
    for p in $(ip netns pids "$ns"); do
        grep -qF -f "$T/tok" "/proc/$p/cmdline" 2>/dev/null &&
            fail "the token is on the command line of pid $p in $ns"
    done
done
grep -lF -f "$T/tok" /proc/[0-9]*/cmdline 2>/dev/null | grep -q . &&
    fail "the token is on a command line on this machine"
ok "the token reaches the workers on both hosts, in no argv anywhere"
# What dtctl handed mpirun: the interface for both paths, an ssh that
# verifies host keys with the configured files.
mp=$(pgrep -x mpirun | while read -r p; do
    tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "$MARK" && echo "$p"; done | head -n 1)
argv=$(tr '\0' ' ' <"/proc/$mp/cmdline" 2>/dev/null)
for want in "--mca btl_tcp_if_include $NETNS_SUBNET" "--mca oob_tcp_if_include $NETNS_SUBNET" \
    "StrictHostKeyChecking=yes" "-i $SSH_KEY" "UserKnownHostsFile=$SSH_KNOWN_HOSTS"; do
    case "$argv" in *"$want"*) ;; *) fail "mpirun's command line lacks '$want': $argv" ;; esac
done
case "$argv" in *StrictHostKeyChecking=no*) fail "host key checking is off: $argv" ;; esac
ok "mpirun got the interface ($NETNS_SUBNET) and an ssh agent with host-key checking"
kill_worker_in "$NS2" 2
wait_job $job
[ $rc -eq 137 ] || fail "want dtctl to exit 137 (rank 2 killed), got $rc: $(cat "$T/err")"
grep -q "rank 2 on $H2 was killed by signal 9" "$T/err" ||
    fail "the failure does not name rank 2 on $H2: $(cat "$T/err")"
hosts_clean || fail "processes left on the hosts after the failure: $(strays_text)"
pgrep -fx "sleep $SL" >/dev/null && fail "sleeps survived: $(pgrep -afx "sleep $SL")"
pgrep -f "$MARK" >/dev/null && fail "workers survived: $(pgrep -af "$MARK")"
ok "a killed worker on h2 stops the job (137, rank 2 on $H2 named); no worker or orted left on either host"

# --- 4b. an orted killed: its ranks are orphans, dtctl still removes them --
# A daemon that dies without ending its ranks (killed mid-abort, the node's
# OOM killer) leaves them running; dtctl then kills, on every other host,
# whatever carries this job's DT_JOB_ID.
"$DTCTL" run --launcher=mpi --hostfile "$T/hosts" -n 4 -- sh -c ": $MARK; sleep $SL & sleep $SL" >/dev/null 2>"$T/err" &
job=$!
wait_sleeps 8 || fail "the 4 workers did not all start (orted part)"
orted=$(for p in $(ip netns pids "$NS1"); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "orted" && echo "$p"
done | head -n 1)
[ -n "$orted" ] || fail "no orted found in $NS1"
[ -n "$orted" ] && kill -KILL "$orted"
wait_job $job
[ $rc -ne 0 ] || fail "the job succeeded although h1's orted was killed"
hosts_clean || fail "processes left on the hosts after orted died: $(strays_text)"
pgrep -fx "sleep $SL" >/dev/null && fail "sleeps survived orted: $(pgrep -afx "sleep $SL")"
ok "h1's orted killed: the job fails (exit $rc) and its orphaned ranks are gone from both hosts"

# --- 5a. Ctrl-Z stops the workers on both hosts with dtctl (each remote
# orted forwards mpirun's SIGUSR2 to its ranks' prologues, which stop their
# workers and confirm), fg continues them; the job then ends 0 ----------------
. "$top_srcdir/tests/fixtures/proc-states.sh"
start_in_own_group \
    "$DTCTL" run --launcher=mpi --hostfile "$T/hosts" -n 4 -- sh -c ": $MARK; sleep $SL; true" >/dev/null 2>"$T/err"
job=$own_group_pid
wait_sleeps 4 || fail "the 4 workers did not all start (Ctrl-Z part)"
sleeps=$(pgrep -fx "sleep $SL" | paste -sd' ' -)
kill -TSTP $job
all_in T $job || fail "Ctrl-Z on two hosts: dtctl did not stop ($(states $job))"
# shellcheck disable=SC2086
all_in T $sleeps || fail "Ctrl-Z on two hosts: workers run on ($(states $sleeps)): $(cat "$T/err")"
grep -q "the workers are stopped too" "$T/err" ||
    fail "Ctrl-Z on two hosts: dtctl did not say the workers stopped: $(cat "$T/err")"
kill -CONT $job
# shellcheck disable=SC2086
all_in '[RSD]' $sleeps || fail "fg on two hosts: workers stay stopped ($(states $sleeps))"
# shellcheck disable=SC2086
kill -TERM $sleeps
wait_job $job
[ $rc -eq 0 ] || fail "Ctrl-Z then fg on two hosts: want 0, got $rc: $(cat "$T/err")"
hosts_clean || fail "processes left on the hosts after Ctrl-Z and fg: $(strays_text)"
ok "Ctrl-Z stops the workers on both hosts with dtctl, fg continues them (exit 0)"

# --- 5. Ctrl-C stops every rank on every host -------------------------------
"$DTCTL" run --launcher=mpi --hostfile "$T/hosts" -n 4 -- sh -c ": $MARK; sleep $SL & sleep $SL" >/dev/null 2>"$T/err" &
job=$!
wait_sleeps 8 || fail "the 4 workers did not all start (Ctrl-C part)"
kill -INT $job
wait_job $job
[ $rc -eq 130 ] || fail "want 130 after SIGINT, got $rc: $(cat "$T/err")"
hosts_clean || fail "processes left on the hosts after Ctrl-C: $(strays_text)"
pgrep -fx "sleep $SL" >/dev/null && fail "sleeps survived Ctrl-C: $(pgrep -afx "sleep $SL")"
ok "Ctrl-C stops the job on both hosts (130), nothing left"

# --- 6. dtctl check reaches both hosts with the same ssh agent -------------
timeout -k 5 120 "$DTCTL" check --launcher=mpi --hostfile "$T/hosts" >"$T/o" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "^$H1 *launcher *ok" "$T/o" && grep -q "^$H2 *launcher *ok" "$T/o" ||
    fail "dtctl check --launcher=mpi on two good hosts: rc $rc: $(cat "$T/o")"
# run_on_host through the same agent: each host lists its own interfaces
# (the address there is in the subnet) and connects back to this machine.
for h in "$H1" "$H2"; do
    grep -q "^$h *interface *ok .* $h matches '$NETNS_SUBNET'" "$T/o" ||
        fail "no interface ok row with $h's own address: $(cat "$T/o")"
    grep -q "^$h *rendezvous *ok *reaches this machine at $NETNS_GATEWAY " "$T/o" ||
        fail "no rendezvous ok row for $h (via $NETNS_GATEWAY): $(cat "$T/o")"
done
hosts_clean || fail "processes left on the hosts after dtctl check: $(strays_text)"
timeout -k 5 120 "$DTCTL" check --launcher=mpi --hostfile "$T/hosts" \
    --set cluster.interface=nonexistent0 >"$T/o" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "dtctl check with a wrong interface: want 1, got $rc: $(cat "$T/o")"
for h in "$H1" "$H2"; do
    grep -q "^$h *interface *FAIL .*no interface matches \[cluster\] interface = 'nonexistent0' (there: .*$h" "$T/o" ||
        fail "no interface FAIL row naming $h and its addresses: $(cat "$T/o")"
done
ok "dtctl check --launcher=mpi: interface and rendezvous rows ok on both hosts; a wrong interface is a FAIL row per host"
DT_LAUNCHER_MPI_SSH_KNOWN_HOSTS="$T/empty_known_hosts" \
    timeout -k 5 120 "$DTCTL" check --launcher=mpi --hostfile "$T/hosts" >"$T/o" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "^$H2 *launcher *FAIL .*host key is not known.*ssh-keyscan $H2 >> $T/empty_known_hosts" "$T/o" ||
    fail "dtctl check with an empty known_hosts: want 1 and a FAIL row naming the file: rc $rc: $(cat "$T/o")"
ok "dtctl check --launcher=mpi: both hosts ok; an unknown host key is named with the file to fix"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all mpi namespace tests passed"
