#!/bin/sh
# plan-validate.sh — dtctl plan's predictions against real runs on one
# host (docs/PLAN.md#validation). Per job and round: the trainer on each
# of --workers N (one epoch of --samples Fashion-MNIST samples PER WORKER,
# N x S in all, at most the 60000 there are: every N runs as many steps,
# so a short run's start-up and noise weigh alike at every N; one thread
# per worker, --metrics samples/s), then dtctl plan with the profile of
# `dtctl plan --measure`. Four predictions per N:
#   raw         the model as the planner measures it (forward, backward
#               per gradient event, optimizer): no input from the run
#   calibrated  compute scaled so that N = 1 matches the run's N = 1 step
#               (the trainer's data pipeline, loss, the VM's speed), and by
#               N / cores where workers outnumber cores (they share them)
#   trainer     the layers as the trainer times them itself ([train]
#               layer_times, one extra run at N = 1), scaled only by
#               N / cores where workers outnumber cores
#   col         raw, with the compute of k co-located copies at once and
#               the slowest of N (dtctl plan --colocation, measured with
#               the model's layers on this host)
# Prints measured and predicted step times (ms) and the errors.
#
# Two halves, for a host without SimGrid (the GPU check's 16-core device
# machine): --measure-only DIR runs the profile, the model's layers and
# the trainer there and writes them to DIR; --predict DIR plans from DIR
# here. Without either, both run here.
#
#   bench/plan-validate.sh [--builddir DIR] [--dtctl PATH] [--samples S]
#                          [--rounds R] [--workers "1 2 4"] [--profile FILE]
#                          [--set SECTION.KEY=VALUE]...
#                          [--measure-only DIR | --predict DIR] [JOB.ini...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
builddir=$here/../_build
samples=12800 rounds=3 workers="1 2 4" profile= dtctl= mode=both dir= extra=
while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --dtctl) dtctl=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --set) extra="$extra --set $2"; shift 2 ;; # e.g. data.path=DIR
    --measure-only) mode=measure; dir=$2; shift 2 ;;
    --predict) mode=predict; dir=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || set -- "$here/../conf/examples/fashion-mnist-mlp.ini" \
    "$here/../conf/examples/fashion-mnist-cnn.ini"
[ -n "$dtctl" ] || dtctl=$builddir/core/dtctl
case "$mode $workers " in predict*|*" 1 "*) ;; *)
    echo "plan-validate: --workers \"$workers\" needs 1 (the calibration)" >&2
    exit 2 ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-planval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -n "$dir" ] || dir=$tmp/runs
mkdir -p "$dir"

rtt() { "$builddir/bench/cacheline_rtt" 2>/dev/null | tail -1 || true; }

# ---- measure: profile, layers, the trainer at each N -> $dir ------------
measure() {
    if [ -n "$profile" ]; then cp "$profile" "$dir/profile.ini"
    else "$dtctl" plan --measure --profile "$dir/profile.ini" >&2; fi
    {
        echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "host $(uname -n)"
        echo "cores $(nproc)"
        echo "cpu $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
        # hardware threads per core: 2 means N workers share N/2 cores
        # once their threads outnumber the cores
        echo "threads_per_core $(lscpu 2>/dev/null | sed -n 's/^Thread(s) per core: *//p')"
        # which CPUs are one core's hardware threads ("0,8 1,9 ..."): with
        # [cluster] bind = auto rank i gets the i-th run of CPUs in this order
        echo "siblings $(cat /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list \
            2>/dev/null | sort -un | tr '\n' ' ')"
        echo "workers $workers"
        echo "rounds $rounds"
        echo "samples $samples per worker"
    } >"$dir/meta"
    sets="--set data.test_samples=1000
          --set train.epochs=1 --set train.threads=1 --set train.device=cpu
          $extra"
    # N workers: N x samples (Fashion-MNIST has 60000)
    samples_for() { sn=$(( $1 * samples )); [ "$sn" -le 60000 ] || sn=60000; echo "$sn"; }
    echo "# cache-line round trip before: $(rtt)" >&2
    for job in "$@"; do
        name=$(basename "$job" .ini)
        cp "$job" "$dir/$name.ini"
        # the model measured once (the load can vary from call to call)
        "$dtctl" plan "$job" --save-layers "$dir/$name.layers" >/dev/null
        # and its step times with 1 .. max copies at once on this host
        # (--colocation: co-located workers' contention and the slowest
        # of N, the planner's "col" column)
        maxw=$(echo "$workers" | tr ' ' '\n' | sort -n | tail -1)
        "$dtctl" plan "$job" --gpus-per-host "$maxw" --colocation measure \
            --save-colocation "$dir/$name.coloc" >"$tmp/coloc.log" 2>&1 ||
            { echo "plan-validate: $name: --colocation measure failed (no col column):" >&2
              tail -5 "$tmp/coloc.log" >&2; rm -f "$dir/$name.coloc"; }
        # and as the trainer times its own steps (a run of its own: its
        # timed steps are slower, kept out of the samples/s rounds)
        # (optional: a failure costs only that column, not the rounds)
        rm -f "$dir/$name.trained"
        # shellcheck disable=SC2086
        "$dtctl" -q run -n 1 $sets --set data.train_samples="$samples" \
            --set train.max_steps=8 \
            --set train.layer_times="$dir/$name.trained" \
            "$job" >"$tmp/run.log" 2>&1 || {
            echo "plan-validate: $name with layer_times failed (no trainer column):" >&2
            tail -5 "$tmp/run.log" >&2; rm -f "$dir/$name.trained"; }
        # the same at the largest N: rank 0's layers while its neighbours
        # train too (slower than at N = 1: the compute itself is slowed by
        # sharing the host; as fast: the step loses its time in the waits)
        rm -f "$dir/$name.trained.$maxw"
        if [ "$maxw" -gt 1 ] && [ -s "$dir/$name.trained" ]; then
            # shellcheck disable=SC2086
            "$dtctl" -q run -n "$maxw" $sets \
                --set data.train_samples="$(samples_for "$maxw")" \
                --set train.max_steps=8 \
                --set train.layer_times="$dir/$name.trained.$maxw" \
                "$job" >"$tmp/run.log" 2>&1 || {
                echo "plan-validate: $name with layer_times at N = $maxw failed:" >&2
                tail -5 "$tmp/run.log" >&2; rm -f "$dir/$name.trained.$maxw"; }
        fi
        echo "# $name: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
        for n in $workers; do : >"$dir/$name.sps.$n"; : >"$dir/$name.waits.$n"; done
        : >"$dir/$name.unbound.$maxw"
        for r in $(seq "$rounds"); do
            for n in $workers; do
                rm -f "$tmp/m.jsonl"
                # shellcheck disable=SC2086
                "$dtctl" -q run -n "$n" $sets \
                    --set data.train_samples="$(samples_for "$n")" \
                    --metrics "$tmp/m.jsonl" "$job" \
                    >"$tmp/run.log" 2>&1 || {
                    echo "plan-validate: $name at N = $n failed:" >&2
                    tail -5 "$tmp/run.log" >&2; exit 1; }
                sed -n 's/.*"samples_per_sec":\([0-9.]*\).*/\1/p' "$tmp/m.jsonl" |
                    tail -1 >>"$dir/$name.sps.$n"
                # where rank 0's step went: waiting for the allreduce (the
                # slowest rank) and for data, fractions of its step time
                sed -n 's/.*"samples_per_sec":\([0-9.]*\),"comm_fraction":\([0-9.]*\),"data_wait":\([0-9.]*\).*/\1 \2 \3/p' \
                    "$tmp/m.jsonl" | tail -1 >>"$dir/$name.waits.$n"
            done
            # the largest N again with each worker free to run on any CPU
            # ([cluster] bind = none): whether binding costs the rate
            [ "$maxw" -gt 1 ] || continue
            rm -f "$tmp/m.jsonl"
            # shellcheck disable=SC2086
            "$dtctl" -q run -n "$maxw" $sets --set cluster.bind=none \
                --set data.train_samples="$(samples_for "$maxw")" \
                --metrics "$tmp/m.jsonl" "$job" >"$tmp/run.log" 2>&1 &&
                sed -n 's/.*"samples_per_sec":\([0-9.]*\).*/\1/p' "$tmp/m.jsonl" |
                tail -1 >>"$dir/$name.unbound.$maxw" || {
                echo "plan-validate: $name at N = $maxw unbound failed:" >&2
                tail -5 "$tmp/run.log" >&2; }
        done
    done
    echo "# cache-line round trip after: $(rtt)" >&2
}

# ---- predict: the plan from $dir against its runs ------------------------
predict() {
    cores=$(awk '$1 == "cores" { print $2 }' "$dir/meta")
    ns=$(sed -n 's/^workers //p' "$dir/meta")
    max=$(echo "$ns" | tr ' ' '\n' | sort -n | tail -1)
    sed -n 's/^/# measured: /p' "$dir/meta"
    printf '# %-28s %2s %9s %9s %7s %9s %7s %9s %7s %9s %7s  %s\n' job N meas_ms raw_ms raw_err \
        cal_ms cal_err trn_ms trn_err col_ms col_err "waits (rank 0)"
    for layers in "$dir"/*.layers; do
        name=$(basename "$layers" .layers) job=${layers%.layers}.ini
        [ -f "$job" ] && [ -s "$dir/$name.sps.1" ] || continue # not a measured job
        batch=$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' "$job" | head -1)
        # best of the rounds, as compare-train.sh: step = batch x N / samples/s
        meas() { sort -g "$dir/$name.sps.$1" | tail -1 |
            awk -v b="$batch" -v n="$1" '{ printf "%.4f", 1e3 * b * n / $1 }'; }
        plan() { # N SCALE [LAYERS [MORE OPTIONS]] -> predicted step ms for N
            pn=$1 ps=$2 pl=${3:-$layers}; shift 2; [ $# -gt 0 ] && shift
            "$dtctl" plan "$job" --hosts 1 --gpus-per-host "$max" \
                --max-workers "$max" --intra-latency 0 --profile "$dir/profile.ini" \
                --compute-scale "$ps" --layer-times "$pl" "$@" 2>/dev/null |
                awk -v n="$pn" '$1 == n { print $2 }'; }
        m1=$(meas 1)
        r1=$(plan 1 1)
        scale=$(awk -v m="$m1" -v r="$r1" 'BEGIN { printf "%.4f", m / r }')
        for n in $ns; do
            m=$(meas "$n")
            raw=$(plan "$n" 1)
            s=$(awk -v s="$scale" -v n="$n" -v c="$cores" \
                'BEGIN { printf "%.4f", (n > c ? s * n / c : s) }')
            cal=$(plan "$n" "$s")
            trn=
            if [ -s "$dir/$name.trained" ]; then
                trn=$(plan "$n" "$(awk -v n="$n" -v c="$cores" \
                    'BEGIN { print (n > c ? n / c : 1) }')" "$dir/$name.trained")
            fi
            col=
            if [ -s "$dir/$name.coloc" ]; then # raw, with co-located compute
                col=$(plan "$n" 1 "$layers" --colocation "$dir/$name.coloc")
            fi
            # the best round's comm and data waits (of rank 0's step)
            w=$( [ -s "$dir/$name.waits.$n" ] && sort -g "$dir/$name.waits.$n" | tail -1 |
                awk '{ printf "comm %.0f%% data %.0f%%", 100 * $2, 100 * $3 }')
            awk -v j="$name" -v n="$n" -v m="$m" -v r="$raw" -v c="$cal" -v t="$trn" -v o="$col" -v w="$w" \
                'BEGIN { printf "  %-28s %2d %9.3f %9.3f %+6.1f%% %9.3f %+6.1f%%",
                         j, n, m, r, 100 * (r - m) / m, c, 100 * (c - m) / m
                         if (t != "") printf " %9.3f %+6.1f%%", t, 100 * (t - m) / m
                         else printf " %9s %7s", "-", "-"
                         if (o != "") printf " %9.3f %+6.1f%%", o, 100 * (o - m) / m
                         else printf " %9s %7s", "-", "-"
                         printf "  %s\n", w }'
        done
        # where the largest N's time went, if measured: rank 0's own layer
        # times there against N = 1's, and the rate with workers unbound
        lsum() { awk '$1 == "forward" || $1 == "optimizer" { s += $2 }
                      $1 ~ /^[0-9.e+-]+$/ && NF == 2 { s += $1 }
                      END { printf "%.3f", 1e3 * s }' "$1"; }
        if [ -s "$dir/$name.trained.$max" ] && [ -s "$dir/$name.trained" ]; then
            awk -v a="$(lsum "$dir/$name.trained")" -v b="$(lsum "$dir/$name.trained.$max")" -v n="$max" -v j="$name" \
                'BEGIN { printf "# %s: rank 0'"'"'s layers (fastest of 5 steps) %.3f ms at N = 1, %.3f ms at N = %d (%+.1f%%)\n", j, a, b, n, 100 * (b - a) / a }'
        fi
        if [ -s "$dir/$name.unbound.$max" ] && [ -s "$dir/$name.sps.$max" ]; then
            awk -v u="$(sort -g "$dir/$name.unbound.$max" | tail -1)" -v b="$(sort -g "$dir/$name.sps.$max" | tail -1)" -v n="$max" -v j="$name" \
                'BEGIN { printf "# %s: N = %d unbound ([cluster] bind = none) %.1f samples/s, bound %.1f (%+.1f%%)\n", j, n, u, b, 100 * (u - b) / b }'
        fi
    done
}

case $mode in
measure) measure "$@" ;;
predict) predict ;;
both) measure "$@"; predict ;;
esac
