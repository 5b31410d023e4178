#!/bin/sh
# async-vs-sync.sh — [train] mode = async against sync on the Fashion-MNIST
# MLP, N workers (+ S parameter servers in async), with and without one
# worker slowed (DT_TEST_SLOW_RANK: it sleeps (factor - 1) x its own
# compute time every step). Prints, for each run, the samples/s of the
# workers that are not slowed (async: each worker's own line; sync: the
# job's samples/s / N, every worker runs at the job's pace) and the final
# accuracy.
#
#   bench/async-vs-sync.sh [DTCTL]   (env: N=4 S=2 SLOW=3 EPOCHS=1
#                                     SAMPLES=12000 BATCH=32
#                                     DATA=fashion-mnist folder)
dtctl=${1:-${DTCTL:-_build/core/dtctl}}
N=${N:-4} S=${S:-2} SLOW=${SLOW:-3} EPOCHS=${EPOCHS:-1}
SAMPLES=${SAMPLES:-12000} BATCH=${BATCH:-32}
slow_rank=$((N - 1))
tmp=$(mktemp -d /tmp/dt-async-bench.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/job.ini" <<INI
[train]
seed = 1
epochs = $EPOCHS
batch_size = $BATCH
lr = 0.02
optimizer = sgd
device = cpu
log_every = 1000000
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(256) relu linear(128) relu linear(10)
[data]
path = ${DATA:-/usr/share/datasets/fashion-mnist}
mean = 0.286
std = 0.353
train_samples = $SAMPLES
test_samples = 2000
INI

# one MODE SLOWED: "<others' samples/s> <accuracy>"
one() {
    mode=$1 slowed=$2
    if [ "$slowed" = yes ]; then
        export DT_TEST_SLOW_RANK=$slow_rank DT_TEST_SLOW_FACTOR=$SLOW
    else
        unset DT_TEST_SLOW_RANK DT_TEST_SLOW_FACTOR
    fi
    "$dtctl" run -n "$N" --set train.mode="$mode" --set cluster.servers="$S" \
        "$tmp/job.ini" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
    acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/out")
    if [ "$mode" = async ]; then
        rate=$(sed -n 's/.*async worker \([0-9]*\): epoch [0-9]*: .*(\([0-9.]*\) samples\/s).*/\1 \2/p' \
            "$tmp/out" | awk -v s="$slow_rank" -v sl="$slowed" '
            !(sl == "yes" && $1 == s) { t += $2; n++ } END { printf "%.0f", t / n }')
    else
        rate=$(sed -n 's/.*train_loss.* \([0-9.]*\) samples\/s .*/\1/p' "$tmp/out" |
            awk -v n="$N" '{ t += $1; k++ } END { printf "%.0f", t / k / n }')
    fi
    echo "$rate $acc"
}

printf "N=%s workers, async with S=%s servers, worker %s slowed %sx, %s samples x %s epoch(s), batch %s\n" \
    "$N" "$S" "$slow_rank" "$SLOW" "$SAMPLES" "$EPOCHS" "$BATCH"
printf "%-6s %-8s %28s %10s\n" mode slowed "samples/s per other worker" accuracy
for mode in sync async; do
    for slowed in no yes; do
        set -- $(one "$mode" "$slowed")
        printf "%-6s %-8s %28s %9s%%\n" "$mode" "$slowed" "$1" "$2"
    done
done
