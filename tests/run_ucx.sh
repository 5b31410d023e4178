#!/bin/sh
# The ucx transport through dtctl run: the allreduce example (every
# collective, odd counts, checked exactly) for N = 1..8 with the
# collectives through the shared-memory segment (the default on one host),
# over UCX's own transports (shm = off: shared memory, CMA) and over
# tls = tcp; a peer that dies and a peer that hangs are errors naming that
# rank, on either path; a worker with another job's token is refused.
set -u
plugin="$top_builddir/plugins/modules/dt_transport_ucx.so"
if [ ! -e "$plugin" ]; then
    echo "SKIP: the ucx transport plugin is not built ($plugin is missing;" \
         "install libucx-dev and reconfigure)"
    exit 77
fi
ex="$top_builddir/examples/allreduce"
pe="$top_builddir/tests/peer_exit"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-ucx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_INTERFACE \
    DT_TRANSPORT OMPI_COMM_WORLD_RANK SLURM_PROCID UCX_TLS \
    UCX_NET_DEVICES 2>/dev/null
status=0
fail() { echo "FAIL: $*"; status=1; }
# Nothing here may hang: every job runs under a hard limit.
# SIGKILL, so that a hang (137) is not taken for dtctl's own 124 (a hung
# rank it names, docs/LAUNCHERS.md).
dtctl() { timeout -s KILL 240 "$DTCTL" --transport=ucx "$@"; }

# Stalls seen before (issue 7): under the full test suite, a ucx job of 3+
# ranks sometimes waited on its left neighbour until the timeout, or
# ucp_worker_create failed with ENODEV. The cause: UCX used every network
# device, including the bridges the netns tests add and delete; a job that
# scanned one and then connected through it after it went failed (reproduced
# with a bridge coming and going: 1 of 12 jobs). Single-host jobs now keep
# UCX on loopback (checked below, with such a bridge), so these tests run
# beside the netns tests. Should a stall still happen it is reported and the
# job runs once more; a second stall fails the test.
stalled() {
    grep -q -e "nothing moved for" -e "cannot create a UCX worker" \
        "$tmp/out" "$tmp/err"
}
known_stalls=0

# $1: np; the rest: extra dtctl options.
run_job() {
    np=$1; shift
    tries=0
    while :; do
        tries=$((tries + 1))
        if dtctl --set transport.ucx.timeout=30s "$@" run -n "$np" -- "$ex" \
            >"$tmp/out" 2>"$tmp/err"; then
            break
        fi
        if stalled; then
            known_stalls=$((known_stalls + 1))
            echo "STALL: ucx -n $np $* stalled or could not start (try $tries)"
            [ $tries -lt 2 ] && continue
            fail "ucx -n $np $* stalled twice"
            cat "$tmp/out" "$tmp/err"
            return
        fi
        fail "dtctl --transport=ucx $* run -n $np -- allreduce failed"
        cat "$tmp/out" "$tmp/err"
        return
    done
    if ! grep -q "allreduce example: $np ranks\{0,1\}, all collectives correct" \
        "$tmp/out"; then
        fail "dtctl --transport=ucx $* run -n $np: no success line"
        cat "$tmp/out" "$tmp/err"
        return
    fi
    echo "ok: ucx $* -n $np"
}

# $1: a [transport.ucx] key; $2: a value it refuses; $3: what the error
# must say (default: the key and the value). A clear error, no hang.
refuses() {
    pat=${3:-"\[transport.ucx\] $1 = '$2'"}
    if dtctl --set "transport.ucx.$1=$2" run -n 2 -- "$ex" \
           >"$tmp/out" 2>&1; then
        fail "$1 = $2: the job succeeded"
    elif ! grep -q "$pat" "$tmp/out"; then
        fail "$1 = $2: no error naming the key"
        cat "$tmp/out"
    else
        echo "ok: $1 = $2 is refused with its key named"
    fi
}

for np in 1 2 3 4 5 6 7 8; do
    run_job $np
done
for np in 2 3 5 8; do
    run_job $np --set transport.ucx.shm=off
done
for np in 2 3 4 5 8; do
    run_job $np --set transport.ucx.tls=tcp --set cluster.interface=lo
done

# Which path the collectives take: the segment by default on one host;
# UCX when shm = off or when tls leaves out shared memory (tls = tcp).
if DT_LOG_LEVEL=debug dtctl run -n 3 -- "$ex" >"$tmp/out" 2>&1 &&
   grep -q "collectives: rank 2: through shared memory (all 3 ranks" \
       "$tmp/out"; then
    echo "ok: a job on one host runs its collectives through shared memory"
else
    fail "a job on one host did not use the shared-memory collectives:"
    cat "$tmp/out"
fi
if DT_LOG_LEVEL=debug dtctl --set transport.ucx.tls=tcp run -n 2 -- "$ex" \
       >"$tmp/out" 2>&1 &&
   grep -q "collectives: rank 1: over the transport (the transport asks to carry every byte)" \
       "$tmp/out"; then
    echo "ok: tls = tcp keeps the collectives on UCX"
else
    fail "tls = tcp did not keep the collectives on UCX:"
    cat "$tmp/out"
fi
refuses shm maybe

# The settings reach UCX: tls, and devices from [cluster] interface.
if DT_LOG_LEVEL=debug dtctl --set transport.ucx.tls=tcp \
       --set cluster.interface=lo run -n 2 -- "$ex" >"$tmp/out" 2>&1 &&
   grep -q "ucx: rank 1: UCX_TLS=tcp" "$tmp/out" &&
   grep -q "ucx: rank 0: UCX_NET_DEVICES=lo" "$tmp/out"; then
    echo "ok: [transport.ucx] tls and [cluster] interface reach UCX"
else
    fail "settings did not reach UCX:"
    cat "$tmp/out"
fi

# peer_errors = ignore: UCX's shared-memory transports, still correct; a
# value that is neither is refused naming the key.
run_job 3 --set transport.ucx.peer_errors=ignore
refuses peer_errors maybe

# A job on one host keeps UCX on loopback without being told, and a
# network interface that comes and goes meanwhile (a container's or a
# namespace's bridge) cannot break it: six 3-rank jobs while a bridge with
# an address is added and deleted every half second.
if DT_LOG_LEVEL=debug dtctl run -n 2 -- "$ex" >"$tmp/out" 2>&1 &&
   grep -q "ucx: rank 0: UCX_NET_DEVICES=lo" "$tmp/out"; then
    echo "ok: a single-host job keeps UCX's network devices on loopback"
else
    fail "a single-host job did not restrict UCX_NET_DEVICES to loopback:"
    cat "$tmp/out"
fi
# The churn runs in a network namespace of its own, so no other test sees
# the bridge.
ns=dtucx$$ br=dtucxbr
if ip netns add "$ns" 2>/dev/null; then
    churn=
    trap '[ -n "$churn" ] && kill "$churn" 2>/dev/null; ip netns del "$ns" 2>/dev/null; rm -rf "$tmp"' EXIT
    inns() { ip netns exec "$ns" "$@"; }
    inns ip link set lo up
    (
        while :; do
            inns ip link add "$br" type bridge 2>/dev/null &&
                inns ip addr add 10.199.0.1/24 dev "$br" 2>/dev/null &&
                inns ip link set "$br" up 2>/dev/null
            sleep 0.3
            inns ip link del "$br" 2>/dev/null
            sleep 0.2
        done
    ) &
    churn=$!
    churn_bad=0
    for i in 1 2 3 4 5 6; do
        inns timeout 240 "$DTCTL" --transport=ucx \
            --set transport.ucx.timeout=30s run -n 3 -- "$ex" \
            >"$tmp/out" 2>"$tmp/err" || {
            churn_bad=$((churn_bad + 1))
            cat "$tmp/out" "$tmp/err"
        }
    done
    kill "$churn" 2>/dev/null
    wait "$churn" 2>/dev/null
    ip netns del "$ns"
    if [ $churn_bad -eq 0 ]; then
        echo "ok: 6 of 6 ucx jobs passed while a bridge came and went"
    else
        fail "$churn_bad of 6 ucx jobs failed while a bridge came and went"
    fi
else
    echo "SKIP (this part): cannot create a network namespace here (needs" \
         "root and iproute2); the interface churn check did not run"
fi

# A transport UCX does not have: a clear error naming the key, no hang.
refuses tls nosuchtransport "transport.ucx\] tls"

# $1: label; $2: PEER_EXIT_MODE; $3: [cluster] timeout; $4: pattern the
# survivors must log; rest: dtctl options. The timeout also bounds startup
# (store, wireup), so it stays long enough for slow sanitizer builds on a
# loaded machine: a dead peer gets a long one, which it must beat by the
# connection failure; a hung peer one just long enough to start.
peer_fails() {
    label=$1 mode=$2 tmo=$3 pat=$4; shift 4
    # dtctl exits 124 for a hung rank it names: the wrapper's SIGKILL
    # (137) says the test itself hung.
    PEER_EXIT_MODE=$mode DT_CLUSTER_TIMEOUT=$tmo dtctl \
        --set cluster.kill_grace=1s "$@" run -n 3 -- "$pe" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 137 ]; then
        fail "$label: the job hung"
    elif [ $rc -eq 0 ]; then
        fail "$label: the job succeeded although rank 1 is gone"
    elif ! grep -q "$pat" "$tmp/err" ||
         ! grep -q "peer_exit: rank [02]: allreduce failed" "$tmp/err"; then
        fail "$label: no error naming rank 1"
        cat "$tmp/out" "$tmp/err"
    else
        echo "ok: $label is an error naming rank 1 (dtctl exit $rc)"
    fi
}
# The shared-memory collectives: a peer whose process is gone is named at
# once (the 120 s timeout would end the test first), a hung one when the
# timeout passes.
peer_fails "dead peer (shared-memory collectives)" exit 120s \
    "collectives: rank [02]: allreduce (shared memory): rank 1 (pid [0-9]*) is gone\|rank 1 is gone (noticed by rank"
peer_fails "hung peer (shared-memory collectives)" stop 20s \
    "collectives: rank [02]: allreduce (shared memory): rank 1 went silent: hung"
# Collectives over UCX (shm = off). UCX itself names a peer that is gone
# (peer_errors = report; auto picks it across hosts, ignore on one: see
# below).
peer_fails "dead peer (shm)" exit 120s \
    "ucx: rank [02]: the connection to rank 1 failed" \
    --set transport.ucx.peer_errors=report --set transport.ucx.shm=off
peer_fails "dead peer (tcp)" exit 120s \
    "ucx: rank [02]: the connection to rank 1 failed" \
    --set transport.ucx.tls=tcp --set transport.ucx.peer_errors=report
# On one host (auto: ignore) a peer that leaves mid-collective is named by
# the survivors when the timeout passes, or at once when UCX's shared
# memory transport notices the peer's segment is gone (seen in a sanitizer
# run: "a send to rank 1 failed: Shared memory error"); one that crashes,
# by dtctl at once.
peer_fails "peer gone, one host (auto)" exit 20s \
    "waiting on rank(s) 1: they are hung\|ucx: rank [02]: a send to rank 1 failed" \
    --set transport.ucx.shm=off
if dtctl -v -v run -n 3 -- sh -c \
       'if [ "$DT_RANK" = 1 ]; then sleep 1; kill -SEGV $$; fi; exec "$0"' \
       "$ex" >"$tmp/out" 2>"$tmp/err"; then
    fail "a crashed rank 1: the job succeeded"
elif ! grep -q "rank 1 on localhost was killed by signal" "$tmp/err" ||
     ! grep -q "peer errors: ignore" "$tmp/out" "$tmp/err"; then
    fail "a crashed rank 1 on one host (auto) was not named by dtctl:"
    cat "$tmp/out" "$tmp/err"
else
    echo "ok: one host (peer_errors auto = ignore): a crashed rank 1 is named by dtctl"
fi
peer_fails "hung peer (shm)" stop 20s "waiting on rank(s) 1: they are hung" \
    --set transport.ucx.shm=off
peer_fails "hung peer (tcp)" stop 20s "waiting on rank(s) 1: they are hung" \
    --set transport.ucx.tls=tcp

# A worker with another job's token cannot join: the store refuses it, the
# job fails instead of hanging.
bad=$(printf '%064d' 7)
DT_CLUSTER_TIMEOUT=60s dtctl run -n 2 -- sh -c \
    'if [ "$DT_RANK" = 1 ]; then DT_JOB_TOKEN=$1; export DT_JOB_TOKEN; fi
     exec "$0"' "$ex" "$bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 137 ]; then
    fail "a worker with a wrong token: dtctl exit $rc"
elif ! grep -q "could not prove it knows this job's token" "$tmp/err"; then
    fail "wrong token: missing the refusal message"
    cat "$tmp/err"
else
    echo "ok: a worker with a wrong token is refused (dtctl exit $rc)"
fi
[ $known_stalls -eq 0 ] || echo "note: $known_stalls ucx stall(s) retried in this run"
exit $status
