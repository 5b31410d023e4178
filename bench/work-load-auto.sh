#!/bin/sh
# work-load-auto.sh — [cluster] work_load = auto against equal shares with
# one straggler: 3 workers (local launcher) on the Fashion-MNIST MLP, rank
# 2 computing 2x slower (DT_TEST_SLOW_RANK=2 DT_TEST_SLOW_FACTOR=2: it
# sleeps after each step's forward and backward as long as they took).
# Prints each run's epoch times and the mean of the epochs after the first
# (auto's first epoch is equal shares: it measures), and the improvement.
#
#   bench/work-load-auto.sh [EPOCHS] [SLOW_FACTOR]     (from the build dir
#                                   or with DTCTL=path/to/dtctl; DATA=
#                                   the fashion-mnist folder)
set -eu
epochs=${1:-5}
factor=${2:-2}
dtctl=${DTCTL:-$(pwd)/core/dtctl}
[ -x "$dtctl" ] || { echo "no dtctl at $dtctl: run from the build dir or set DTCTL"; exit 2; }
tmp=$(mktemp -d /tmp/dt-work-load-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/job.ini" <<INI
[train]
seed = 1
epochs = $epochs
batch_size = 64
lr = 0.05
device = cpu
log_every = 100000
[model]
layers = flatten linear(512) relu linear(256) relu linear(10)
[data]
path = ${DATA:-/usr/share/datasets/fashion-mnist}
mean = 0.286
std = 0.353
train_samples = 12000
test_samples = 1000
INI
run() { # name, extra args
    name=$1
    shift
    DT_TEST_SLOW_RANK=2 DT_TEST_SLOW_FACTOR=$factor \
        "$dtctl" run -n 3 "$@" "$tmp/job.ini" >"$tmp/$name.out" 2>&1 ||
        { cat "$tmp/$name.out"; exit 1; }
    grep "work_load" "$tmp/$name.out" | sed 's/^.*info: /  /' || true
    # epoch lines end with the epoch's seconds ("12.3s")
    grep "^\[0\] epoch " "$tmp/$name.out" |
        awk -v n="$name" '{ t = $NF; sub("s$", "", t); all = all " " t;
                            if (NR > 1) { s += t; k++ } acc = $9 }
                          END { printf "%-6s epochs:%s  mean after epoch 1: %.2f s  accuracy %s\n",
                                       n, all, s / k, acc;
                                print s / k > "/dev/stderr" }' 2>"$tmp/$name.mean"
}
echo "3 workers, rank 2 slowed ${factor}x, $epochs epochs of 12000 samples"
run equal
run auto --set cluster.work_load=auto
awk -v e="$(cat "$tmp/equal.mean")" -v a="$(cat "$tmp/auto.mean")" \
    'BEGIN { printf "epoch time: equal %.2f s, auto %.2f s: %.0f%% better\n", e, a, 100 * (e - a) / e }'
