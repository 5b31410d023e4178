#!/bin/sh
# launcher_slurm_netns.sh — `dtctl run --launcher=slurm` on a real two-node
# Slurm: the two "hosts" of tests/fixtures/netns-hosts.sh (network
# namespaces on a bridge, own address, own hostname), slurmctld here on the
# bridge address, one slurmd per namespace (NodeName = its hostname,
# NodeAddr = its address), one munged whose socket path both reach
# (tests/fixtures/slurm-cluster.sh). Checks: examples/allreduce with 2
# tasks per node over [cluster] interface, ranks 0,1 on h1 and 2,3 on h2
# (host name and network namespace of each rank), MASTER_ADDR=h1 and one
# MASTER_PORT on every rank (torch's env://), the worker environment,
# the job token in no argv on any host, a worker killed on h2 stopping the
# job (exit 137, rank 2 on h2 named, job CANCELLED, nothing left on either
# host), Ctrl-Z and fg (the workers on both nodes stop and continue with
# dtctl), and Ctrl-C.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?}" "${top_builddir:?}"
PATH=$PATH:/usr/sbin
# Only the private cluster this test starts: never a real one from outside.
unset SLURM_CONF
for t in slurmctld slurmd munged srun salloc squeue nsenter; do
    command -v $t >/dev/null 2>&1 || {
        echo "SKIP: $t is not installed (Debian: apt install slurm-wlm munge util-linux)"
        exit 77
    }
done
"$DTCTL" plugins | grep -q '^launcher *slurm .*available' || {
    echo "SKIP: the slurm launcher plugin is not available: $("$DTCTL" plugins | grep slurm)"
    exit 77
}
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-slurmns.XXXXXX") || exit 99
chmod 755 "$T"
FX="$top_srcdir/tests/fixtures/netns-hosts.sh"
MARK="dtslurmns$$"
SL=$((500000 + $$))           # a sleep no other test runs: "sleep $SL"
. "$top_srcdir/tests/fixtures/slurm-cluster.sh"
cleanup() {
    [ -n "${SLURM_CONF:-}" ] && timeout 20 scancel --user=root >/dev/null 2>&1
    slurm_cluster_stop
    sh "$FX" stop "$T/ns"     # every process left in the namespaces too
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$top_srcdir/tests/fixtures/netns-test-lib.sh"
netns_hosts_start
slurm_netns_cluster_start "$T/cluster" "$T/ns" 2>"$T/why"
rc=$?
if [ $rc -eq 2 ]; then
    echo "SKIP: a Slurm daemon cannot run in the namespace hosts here: $(cat "$T/why")"
    exit 77
elif [ $rc -ne 0 ]; then
    echo "FAIL: the two-node Slurm did not come up: $(cat "$T/why")"
    exit 1
fi
echo "slurm is up on h1 ($NS1) and h2 ($NS2): SLURM_CONF=$SLURM_CONF"

# The hosts also keep their slurmd between jobs.
ns_keep_pids() { cat "$T/ns/sshd_h$1.pid" "$T/cluster/slurmd-h$1.pid" 2>/dev/null; }
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN OMPI_COMM_WORLD_RANK \
    SLURM_PROCID SLURM_JOB_ID 2>/dev/null
export DT_CLUSTER_KILL_GRACE=3s
export DT_CLUSTER_INTERFACE="$NETNS_SUBNET"
# Two nodes, two tasks on each: without these Slurm packs all 4 on h1.
export DT_LAUNCHER_SLURM_NODES=2 DT_LAUNCHER_SLURM_TASKS_PER_NODE=2
run() { timeout -k 5 120 "$DTCTL" run --launcher=slurm "$@"; }

jobs_left() { [ -n "$(squeue -h -o %i 2>/dev/null)" ]; }
# 0 once no job is queued and neither host runs anything but its daemons
# (Slurm ends a job's steps asynchronously; 30 s at most).
settled() {
    i=0
    while { jobs_left || [ -n "$(ns_strays "$NS1" 1)$(ns_strays "$NS2" 2)" ]; } &&
        [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    ! jobs_left && [ -z "$(ns_strays "$NS1" 1)$(ns_strays "$NS2" 2)" ]
}
# Slurm's final state of the job whose name starts with $1- (dtctl appends
# its job id; slurmctld keeps ended jobs for MinJobAge, 300 s).
job_state() { squeue --states=all -h -o '%j %T' 2>/dev/null | sed -n "s/^$1-[^ ]* //p" | head -n 1; }
I1=$(ns_inode "$NS1") I2=$(ns_inode "$NS2")

# --- 1. examples/allreduce, 2 tasks per node, each rank where it should be ---
ex="$top_builddir/examples/allreduce"
[ -x "$ex" ] || { echo "FAIL: examples/allreduce is not built ($ex)"; exit 1; }
# Each rank notes its host name and network namespace, then becomes the
# example (exec: the same process, the same place).
run -n 4 -- sh -c 'echo "$DT_RANK $DT_HOST $(hostname) $(stat -L -c %i /proc/self/ns/net) $DT_LOCAL_RANK/$DT_LOCAL_SIZE $DT_NODE_RANK/$DT_NUM_NODES $DT_WORLD_SIZE ${DT_RENDEZVOUS%:*}" >"$0.$DT_RANK"; echo "$MASTER_ADDR $MASTER_PORT $SLURM_JOB_ID $SLURM_STEP_ID" >"$0.m.$DT_RANK"; exec "$1"' \
    "$T/where" "$ex" >"$T/o" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "allreduce on two slurm nodes exited $rc: $(cat "$T/o" "$T/err")"
grep -q '^\[0\] allreduce example: 4 ranks, all collectives correct' "$T/o" ||
    fail "allreduce did not confirm: $(cat "$T/o" "$T/err")"
for want in "0 h1 h1 $I1 0/2 0/2" "1 h1 h1 $I1 1/2 0/2" \
    "2 h2 h2 $I2 0/2 1/2" "3 h2 h2 $I2 1/2 1/2"; do
    r=${want%% *}
    grep -qx "$want 4 $NETNS_GATEWAY" "$T/where.$r" 2>/dev/null ||
        fail "rank $r: want '$want 4 $NETNS_GATEWAY', got '$(cat "$T/where.$r" 2>/dev/null)'"
done
ok "examples/allreduce, 4 ranks: 0,1 on h1 ($NS1), 2,3 on h2 ($NS2), rendezvous on $NETNS_GATEWAY ($NETNS_SUBNET)"
# torch's env:// rendezvous: every rank names rank 0's node (h1, the
# step's first) and the port derived from the job and step ids, not
# dtctl's 127.0.0.1 and a port that was free here.
set -- $(cat "$T/where.m.0" 2>/dev/null) x x x x
port=$((20000 + ($3 * 31 + $4) % 10000))
for r in 0 1 2 3; do
    [ "$(cat "$T/where.m.$r" 2>/dev/null)" = "h1 $port $3 $4" ] ||
        fail "rank $r: want MASTER_ADDR h1 and MASTER_PORT $port, got '$(cat "$T/where.m.$r" 2>/dev/null)'"
done
ok "MASTER_ADDR=h1 MASTER_PORT=$port on all 4 ranks"
settled || fail "left after the allreduce job: jobs '$(squeue -h)' processes $(strays_text)"

# --- 2. a worker killed on h2: the job stops and is cancelled ------------------
run -n 4 --set launcher.slurm.job_name="kill$$" -- sh -c ": $MARK; sleep $SL & sleep $SL" \
    >/dev/null 2>"$T/err" &
job=$!
wait_sleeps 8 || fail "the 4 workers did not all start: $(pgrep -afx "sleep $SL") $(cat "$T/err")"
# The token: in a worker's environment, in no argv on any host.
w=$(pgrep -f "^sh -c : $MARK" | head -n 1)
tr '\0' '\n' <"/proc/$w/environ" 2>/dev/null | sed -n 's/^DT_JOB_TOKEN=//p' >"$T/tok"
[ "$(wc -c <"$T/tok")" -eq 65 ] || fail "no token in a worker's environment"
grep -lF -f "$T/tok" /proc/[0-9]*/cmdline 2>/dev/null | grep -q . &&
    fail "the token is on a command line (every namespace shares /proc)"
ok "the token reaches the workers, in no argv on either host or here"
kill_worker_in "$NS2" 2
wait_job $job
[ $rc -eq 137 ] || fail "want dtctl to exit 137 (rank 2 killed), got $rc: $(cat "$T/err")"
grep -q "rank 2 on h2 was killed by signal 9" "$T/err" ||
    fail "the failure does not name rank 2 on h2: $(cat "$T/err")"
settled || fail "left after the failure: jobs '$(squeue -h)' processes $(strays_text)"
pgrep -fx "sleep $SL" >/dev/null && fail "sleeps survived: $(pgrep -afx "sleep $SL")"
pgrep -f "$MARK" >/dev/null && fail "workers or srun survived: $(pgrep -af "$MARK")"
st=$(job_state "kill$$")
[ "$st" = CANCELLED ] || fail "want the job CANCELLED (scancel), Slurm says '$st'"
ok "a killed worker on h2 stops the job (137, rank 2 on h2 named), job $st, nothing left on h1 or h2"

# --- 2a. Ctrl-Z stops the workers on both nodes with dtctl (each node's
# slurmstepd stops every process of the step: scancel --signal=STOP),
# fg continues them; the job then ends 0 ----------------------------------------
. "$top_srcdir/tests/fixtures/proc-states.sh"
start_in_own_group \
    "$DTCTL" run --launcher=slurm -n 4 -- sh -c ": $MARK; sleep $SL; true" >/dev/null 2>"$T/err"
job=$own_group_pid
wait_sleeps 4 || fail "the 4 workers did not all start (Ctrl-Z part)"
sleeps=$(pgrep -fx "sleep $SL" | paste -sd' ' -)
kill -TSTP $job
all_in T $job || fail "Ctrl-Z on two nodes: dtctl did not stop ($(states $job))"
# shellcheck disable=SC2086
all_in T $sleeps || fail "Ctrl-Z on two nodes: workers run on ($(states $sleeps)): $(cat "$T/err")"
grep -q "the workers are stopped too" "$T/err" ||
    fail "Ctrl-Z on two nodes: dtctl did not say the workers stopped: $(cat "$T/err")"
kill -CONT $job
# shellcheck disable=SC2086
all_in '[RSD]' $sleeps || fail "fg on two nodes: workers stay stopped ($(states $sleeps))"
# shellcheck disable=SC2086
kill -TERM $sleeps
wait_job $job
[ $rc -eq 0 ] || fail "Ctrl-Z then fg on two nodes: want 0, got $rc: $(cat "$T/err")"
settled || fail "left after Ctrl-Z and fg: jobs '$(squeue -h)' processes $(strays_text)"
ok "Ctrl-Z stops the workers on both nodes with dtctl, fg continues them (exit 0)"

# --- 3. Ctrl-C cancels the job on both nodes -------------------------------------
run -n 4 -- sh -c ": $MARK; sleep $SL & sleep $SL" >/dev/null 2>"$T/err" &
job=$!
wait_sleeps 8 || fail "the 4 workers did not all start (Ctrl-C part): $(cat "$T/err")"
kill -INT "$(pgrep -P $job)"
wait_job $job
[ $rc -eq 130 ] || fail "want 130 after SIGINT, got $rc: $(cat "$T/err")"
settled || fail "left after Ctrl-C: jobs '$(squeue -h)' processes $(strays_text)"
pgrep -fx "sleep $SL" >/dev/null && fail "sleeps survived Ctrl-C: $(pgrep -afx "sleep $SL")"
ok "Ctrl-C stops the job on both nodes (130), nothing left"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all two-node slurm tests passed"
