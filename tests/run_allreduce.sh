#!/bin/sh
# dtctl run of the C API example (examples/allreduce): every collective on
# rank-dependent data, checked exactly on every rank, over the tcp
# transport and the job's rendezvous store.
set -u
plugin="$top_builddir/plugins/modules/dt_transport_tcp.so"
if [ ! -e "$plugin" ]; then
    echo "SKIP: the tcp transport plugin is not built ($plugin is missing)"
    exit 77
fi
ex="$top_builddir/examples/allreduce"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-allreduce.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Never inherit a job from whoever runs the tests.
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_INTERFACE \
    OMPI_COMM_WORLD_RANK SLURM_PROCID 2>/dev/null
status=0

fail() { echo "FAIL: $*"; status=1; }

# $1: np; the rest: extra dtctl options.
run_job() {
    np=$1; shift
    if ! "$DTCTL" "$@" run -n "$np" -- "$ex" >"$tmp/out" 2>"$tmp/err"; then
        fail "dtctl run -n $np $* -- allreduce exited non-zero"
        cat "$tmp/out" "$tmp/err"
        return
    fi
    if ! grep -q "allreduce example: $np ranks\{0,1\}, all collectives correct" \
        "$tmp/out"; then
        fail "dtctl run -n $np $*: no success line from rank 0"
        cat "$tmp/out" "$tmp/err"
        return
    fi
    echo "ok: dtctl run -n $np $* -- allreduce"
}

# One worker without dtctl: no store, no transport.
if out=$("$ex" 2>&1) && echo "$out" | grep -q "1 rank, all collectives"; then
    echo "ok: allreduce alone (a job of one)"
else
    fail "allreduce alone: $out"
fi

# By default the ranks of one host meet in shared memory ([collectives]
# shm = auto); with shm = off every byte crosses tcp, which the runs of
# tcp's own settings below need.
run_job 4
run_job 3                      # odd number of ranks
run_job 2 --set cluster.interface=lo
run_job 1
off="--set collectives.shm=off"
run_job 4 $off
run_job 3 $off
# Plugin settings given to dtctl reach the workers' transport.
run_job 4 $off --set transport.tcp.sockets_per_peer=3 --set transport.tcp.stripe_min=4K
# The bounded yield-poll before sleeping, forced on and off.
run_job 3 $off --set transport.tcp.spin=200us
run_job 3 $off --set transport.tcp.spin=0
# Writes cut at the smallest send_max (every ring chunk in many pieces,
# headers and payload split across calls) and with no limit at all.
run_job 3 $off --set transport.tcp.send_max=4K
run_job 2 $off --set transport.tcp.send_max=0
# A spin that would keep a CPU busy for long is refused, naming the key.
if "$DTCTL" run -n 2 --set transport.tcp.spin=2s -- "$ex" \
    >"$tmp/out" 2>"$tmp/err"; then
    fail "transport.tcp.spin=2s was accepted"
elif ! grep -q "\[transport.tcp\] spin = '2s'" "$tmp/err"; then
    fail "transport.tcp.spin=2s: no error naming the key"
    cat "$tmp/err"
else
    echo "ok: transport.tcp.spin=2s is refused with its key named"
fi
# A socket buffer size that is not a size is refused, naming key and origin.
if "$DTCTL" run -n 2 --set transport.tcp.buffer_size=lots -- "$ex" \
    >"$tmp/out" 2>"$tmp/err"; then
    fail "transport.tcp.buffer_size=lots was accepted"
elif ! grep -q "DT_TRANSPORT_TCP_BUFFER_SIZE: \[transport.tcp\] buffer_size = 'lots'" \
    "$tmp/out" "$tmp/err"; then
    fail "transport.tcp.buffer_size=lots: no error naming the key"
    cat "$tmp/out" "$tmp/err"
else
    echo "ok: transport.tcp.buffer_size=lots is refused with its key named"
fi

# send_max = auto: short bursts in 256K writes when every rank has a CPU
# of its own, no limit when ranks outnumber the CPUs (rank 0 says which
# at -v).
cpus=$(getconf _NPROCESSORS_ONLN)
send_max_of() { # NP [dtctl options]: the limit rank 0 chose
    np=$1; shift
    "$DTCTL" -v "$@" run -n "$np" -- "$ex" 2>&1 |
        sed -n 's/.*\[transport.tcp\] send_max = [^(]*(\([0-9]*\) bytes.*/\1/p' |
        head -1
}
if [ "$cpus" -ge 2 ]; then
    got=$(send_max_of 2)
    [ "$got" = 262144 ] && echo "ok: send_max auto, 2 ranks on $cpus CPUs: 256K" ||
        fail "send_max auto, 2 ranks on $cpus CPUs: got '$got', want 262144"
fi
if [ "$cpus" -le 7 ]; then
    got=$(send_max_of $((cpus + 1)))
    [ "$got" = 0 ] && echo "ok: send_max auto, $((cpus + 1)) ranks on $cpus CPUs: no limit" ||
        fail "send_max auto, $((cpus + 1)) ranks on $cpus CPUs: got '$got', want 0"
fi
got=$(send_max_of 2 --set transport.tcp.send_max=64K)
[ "$got" = 65536 ] && echo "ok: send_max = 64K is used as given" ||
    fail "send_max = 64K: got '$got', want 65536"

# A write limit below 4K is refused, naming key and origin.
if "$DTCTL" run -n 2 --set transport.tcp.send_max=100 -- "$ex" \
    >"$tmp/out" 2>"$tmp/err"; then
    fail "transport.tcp.send_max=100 was accepted"
elif ! grep -q "DT_TRANSPORT_TCP_SEND_MAX: \[transport.tcp\] send_max = '100'" \
    "$tmp/out" "$tmp/err"; then
    fail "transport.tcp.send_max=100: no error naming the key"
    cat "$tmp/out" "$tmp/err"
else
    echo "ok: transport.tcp.send_max=100 is refused with its key named"
fi

# What dtctl adds to the workers' environment: the store, the transport,
# the interface spec and non-default plugin and timeout settings (dtctl
# prefixes each output line with "[rank] ").
if "$DTCTL" run -n 1 --set transport.tcp.sockets_per_peer=2 \
    --set cluster.interface=lo --set cluster.timeout=45s -- \
    sh -c 'env | grep -E "^DT_(RENDEZVOUS|TRANSPORT|INTERFACE|CLUSTER_TIMEOUT|TRANSPORT_TCP_)" | sort' \
    >"$tmp/out" 2>"$tmp/err" &&
   sed 's/^\[0\] //' "$tmp/out" >"$tmp/env" &&
   grep -q "^DT_RENDEZVOUS=127.0.0.1:[0-9][0-9]*$" "$tmp/env" &&
   grep -q "^DT_TRANSPORT=tcp$" "$tmp/env" &&
   grep -q "^DT_INTERFACE=lo$" "$tmp/env" &&
   grep -q "^DT_CLUSTER_TIMEOUT=45s$" "$tmp/env" &&
   grep -q "^DT_TRANSPORT_TCP_SOCKETS_PER_PEER=2$" "$tmp/env" &&
   ! grep -q "^DT_TRANSPORT_TCP_STRIPE_MIN=" "$tmp/env"; then
    echo "ok: workers' environment carries the rendezvous and settings"
else
    fail "workers' environment:"
    cat "$tmp/env" "$tmp/err"
fi

# A worker with another job's token is refused by the store, the job fails
# (instead of hanging) and the store logs the refused address.
bad=$(printf '%064d' 7)
DT_CLUSTER_TIMEOUT=10s "$DTCTL" run -n 2 -- sh -c \
    'if [ "$DT_RANK" = 1 ]; then DT_JOB_TOKEN=$1; export DT_JOB_TOKEN; fi
     exec "$0"' "$ex" "$bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ]; then
    fail "a worker with a wrong token joined the job"
elif ! grep -q "could not prove it knows this job's token" "$tmp/err" ||
     ! grep -q "rendezvous store: dropped connection from 127.0.0.1:" \
        "$tmp/err"; then
    fail "wrong token: missing the worker's or the store's message"
    cat "$tmp/err"
else
    echo "ok: a worker with a wrong token is refused (dtctl exit $rc)"
fi
exit $status
