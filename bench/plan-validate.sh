#!/bin/sh
# plan-validate.sh — dtctl plan's predictions against real runs on this
# host (docs/PLAN.md#validation). Per job and round: the trainer on 1, 2
# and 4 workers (one epoch of --samples Fashion-MNIST samples, one thread
# per worker, --metrics samples/s), then dtctl plan with the profile of
# `dtctl plan --measure`. Two predictions per N:
#   raw         the model as the planner measures it (forward, backward
#               per gradient event, optimizer): no input from the run
#   calibrated  compute scaled so that N = 1 matches the run's N = 1 step
#               (the trainer's data pipeline, loss, the VM's speed), and by
#               N / cores where workers outnumber cores (they share them)
# Prints measured and predicted step times (ms) and the errors.
#
#   bench/plan-validate.sh [--builddir DIR] [--samples S] [--rounds R]
#                          [--profile FILE] [JOB.ini...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
builddir=$here/../_build
samples=12800
rounds=3
profile=
while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || set -- "$here/../conf/examples/fashion-mnist-mlp.ini" \
    "$here/../conf/examples/fashion-mnist-cnn.ini"
dtctl=$builddir/core/dtctl
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-planval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$profile" ]; then
    profile=$tmp/profile.ini
    "$dtctl" plan --measure --profile "$profile" >&2
fi
cores=$(nproc)
sets="--set data.train_samples=$samples --set data.test_samples=1000
      --set train.epochs=1 --set train.threads=1 --set train.device=cpu"
rtt() { "$builddir/bench/cacheline_rtt" 2>/dev/null | tail -1; }
echo "# cache-line round trip before: $(rtt)"
printf '# %-28s %2s %9s %9s %7s %9s %7s\n' job N meas_ms raw_ms raw_err cal_ms cal_err
for job in "$@"; do
    batch=$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' "$job" | head -1)
    for n in 1 2 4; do : >"$tmp/sps.$n"; done
    echo "# $(basename "$job"): load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq "$rounds"); do
        for n in 1 2 4; do
            rm -f "$tmp/m.jsonl"
            # shellcheck disable=SC2086
            "$dtctl" -q run -n $n $sets --metrics "$tmp/m.jsonl" "$job" \
                >/dev/null 2>&1
            sed -n 's/.*"samples_per_sec":\([0-9.]*\).*/\1/p' "$tmp/m.jsonl" |
                tail -1 >>"$tmp/sps.$n"
        done
    done
    # best of the rounds, as compare-train.sh: step = batch x N / samples/s
    meas() { sort -g "$tmp/sps.$1" | tail -1 |
        awk -v b="$batch" -v n="$1" '{ printf "%.4f", 1e3 * b * n / $1 }'; }
    plan() { # N SCALE -> predicted step ms for N
        "$dtctl" plan "$job" --hosts 1 --gpus-per-host 4 --max-workers 4 \
            --intra-latency 0 --profile "$profile" --compute-scale "$2" \
            --layer-times "$tmp/layers" 2>/dev/null |
            awk -v n="$1" '$1 == n { print $2 }'; }
    # the model measured once (the load here varies from call to call)
    "$dtctl" plan "$job" --hosts 1 --network 1Gbit --max-workers 1 \
        --profile "$profile" --save-layers "$tmp/layers" >/dev/null 2>&1
    m1=$(meas 1)
    r1=$(plan 1 1)
    scale=$(awk -v m="$m1" -v r="$r1" 'BEGIN { printf "%.4f", m / r }')
    for n in 1 2 4; do
        m=$(meas $n)
        raw=$(plan $n 1)
        s=$(awk -v s="$scale" -v n=$n -v c="$cores" \
            'BEGIN { printf "%.4f", (n > c ? s * n / c : s) }')
        cal=$(plan $n "$s")
        awk -v j="$(basename "$job")" -v n=$n -v m="$m" -v r="$raw" -v c="$cal" \
            'BEGIN { printf "  %-28s %2d %9.3f %9.3f %+6.1f%% %9.3f %+6.1f%%\n",
                     j, n, m, r, 100 * (r - m) / m, c, 100 * (c - m) / m }'
    done
done
echo "# cache-line round trip after: $(rtt)"
