#!/bin/sh
# chaos-restarts.sh — issue 17's chaos trials for automatic restarts: the
# MLP on a Fashion-MNIST subset with N workers and max_restarts, kill -9 of
# a random worker at a random moment, TRIALS times. Each trial must exit 0
# and end within 0.3 pt of an uninterrupted run's accuracy (with the same N
# it ends bit-identical: resume is exact). Prints one line per trial and a
# summary: finished, the worst accuracy difference; per trial the step it
# resumed from and the time over an uninterrupted run (the restart's cost:
# backoff, start, load, and the steps redone since the checkpoint).
#
#   bench/chaos-restarts.sh [TRIALS=50] [NP=4] [MAX_RESTARTS=3]
#   DTCTL=_build/core/dtctl, DATA=/usr/share/datasets/fashion-mnist
#
# Not part of make check (minutes); tests/train_restarts.sh is the short
# form.
trials=${1:-50} np=${2:-4} maxr=${3:-3}
DTCTL=${DTCTL:-$(dirname "$0")/../_build/core/dtctl}
DTCTL=$(cd "$(dirname "$DTCTL")" && pwd)/$(basename "$DTCTL")
tmp=$(mktemp -d /tmp/dt-chaos.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
cat >job.ini <<'INI'
[train]
seed = 3
epochs = 8
batch_size = 16
lr = 0.02
device = cpu
log_every = 100000
checkpoint_steps = 50
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(64) relu dropout(0.1) linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 8000
test_samples = 1000
[cluster]
restart_backoff = 500ms
INI
acc_of() { sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' "$1" | tail -1; }
"$DTCTL" run -n "$np" --set train.checkpoint_dir=ref job.ini >ref.out 2>&1 ||
    { cat ref.out; exit 1; }
ref=$(acc_of ref.out)
start=$(date +%s.%N)
"$DTCTL" run -n "$np" --set train.checkpoint_dir=t0 job.ini >/dev/null 2>&1
run_s=$(echo "$(date +%s.%N) - $start" | bc)
echo "reference: $ref% with $np workers, ${run_s}s uninterrupted"
ok=0 worst=0
for t in $(seq 1 "$trials"); do
    rm -rf ck
    t0=$(date +%s.%N)
    "$DTCTL" run -n "$np" --max-restarts "$maxr" --set train.checkpoint_dir=ck \
        job.ini >out 2>&1 &
    dp=$!
    # a random moment in the first 80% of the run
    sleep "$(awk -v s="$run_s" -v r="$(od -An -N2 -tu2 /dev/urandom)" \
        'BEGIN { printf "%.2f", 0.1 + r / 65535 * 0.7 * s }')"
    rank=$(( $(od -An -N1 -tu1 /dev/urandom | tr -d ' ') % np ))
    victim=
    for p in $(pgrep -P $dp); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
            grep -qx "DT_RANK=$rank" && victim=$p
    done
    [ -n "$victim" ] && kill -9 "$victim"
    wait $dp; rc=$?
    extra=$(echo "$(date +%s.%N) - $t0 - $run_s" | bc)
    acc=$(acc_of out)
    line=$(grep "restart 1 of" out | head -1)
    ck=$(echo "$line" | sed -n 's/.*step \([0-9]*\) of the job.*/step \1/p')
    [ -n "$line" ] && [ -z "$ck" ] && ck="the start (no checkpoint yet)"
    [ -z "$line" ] && ck="nowhere (no restart: the kill missed)"
    diff=$(awk -v a="${acc:-0}" -v b="$ref" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2f", d }')
    status=ok
    { [ $rc -eq 0 ] && awk -v d="$diff" 'BEGIN { exit !(d <= 0.3) }'; } || status=FAIL
    [ $status = ok ] && ok=$((ok + 1))
    worst=$(awk -v a="$worst" -v d="$diff" 'BEGIN { print (d > a ? d : a) }')
    echo "trial $t: kill rank $rank ${victim:-(job already over)}: exit $rc, accuracy $acc% (|diff| $diff), resumed from $ck, ${extra}s over an uninterrupted run (backoff 0.5s included): $status"
done
echo "summary: $ok/$trials finished with exit 0 within 0.3 pt of $ref% (worst |diff| $worst pt)"
