#!/bin/sh
# chaos-restarts.sh — issue 17's chaos trials for automatic restarts: the
# MLP on a Fashion-MNIST subset with N workers and max_restarts, kill -9 of
# a random worker at a random moment of the training (the first 80% after
# rank 0 printed its model), TRIALS times. Each trial must exit 0
# and end within 0.3 pt of an uninterrupted run's accuracy (with the same N
# it ends bit-identical: resume is exact). Prints one line per trial and a
# summary: finished, the worst accuracy difference; per trial the step it
# resumed from and the time over an uninterrupted run (the restart's cost:
# backoff, start, load, and the steps redone since the checkpoint).
#
#   bench/chaos-restarts.sh [TRIALS=50] [NP=4] [MAX_RESTARTS=3] [MODE=kill]
#   DTCTL=_build/core/dtctl, DATA=/usr/share/datasets/fashion-mnist
#
# MODE=stop: SIGSTOP instead of kill -9 (a hung worker, not a dead one),
# with [cluster] timeout = TIMEOUT (default 5s) and kill_grace = 2s. The
# survivors give up on the stopped rank after the timeout and dtctl names
# it; per trial: the seconds from the SIGSTOP to dtctl's first line naming
# a rank (target: within the timeout + 5 s), whether that is the stopped
# rank, the exit code and the accuracy. dtctl ends the stopped worker with
# SIGKILL (its process group, after kill_grace); the script checks that
# none is left (SIGCONT + SIGKILL otherwise, counted as a failure).
#
# Not part of make check (minutes); tests/train_restarts.sh is the short
# form.
trials=${1:-50} np=${2:-4} maxr=${3:-3} mode=${4:-${MODE:-kill}}
case $mode in
kill) extra_set= ;;
stop) timeout_s=${TIMEOUT:-5s}
      extra_set="--set cluster.timeout=$timeout_s --set cluster.kill_grace=2s"
      # the target: named within the timeout + 5 s (TIMEOUT in s or ms)
      limit=$(echo "$timeout_s" | awk '/ms$/ { print $0 / 1000 + 5; next } { print $0 + 5 }') ;;
*) echo "MODE must be kill or stop, not '$mode'" >&2; exit 2 ;;
esac
DTCTL=${DTCTL:-$(dirname "$0")/../_build/core/dtctl}
DTCTL=$(cd "$(dirname "$DTCTL")" && pwd)/$(basename "$DTCTL")
tmp=$(mktemp -d /tmp/dt-chaos.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
cat >job.ini <<'INI'
[train]
seed = 3
epochs = 20
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
# Until rank 0 prints its model the workers start, connect and load the
# data (most of this short job); the failure is injected after that line,
# in training, else it would rarely find a checkpoint to resume from.
# Polls out (each 0.05 s) for that line; 1 when dtctl ended before it.
wait_training() {
    while ! grep -qs 'info: model: ' "$1"; do
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
}
start=$(date +%s.%N)
"$DTCTL" run -n "$np" --set train.checkpoint_dir=t0 job.ini >t0.out 2>&1 &
wait_training t0.out $! && train_at=$(echo "$(date +%s.%N) - $start" | bc)
wait
run_s=$(echo "$(date +%s.%N) - $start" | bc)
train_s=$(echo "$run_s - ${train_at:-0}" | bc)
echo "reference: $ref% with $np workers, ${run_s}s uninterrupted (training from ${train_at}s on, ${train_s}s); mode $mode${timeout_s:+ ([cluster] timeout $timeout_s, kill_grace 2s)}"
ok=0 worst=0 right=0 within=0 stopped=0 lat_min= lat_max=
restarted=0 cost_min= cost_max=
for t in $(seq 1 "$trials"); do
    rm -rf ck
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # extra_set: words
    "$DTCTL" run -n "$np" --max-restarts "$maxr" --set train.checkpoint_dir=ck \
        $extra_set job.ini >out 2>&1 &
    dp=$!
    # a random moment in the first 80% of the training
    wait_training out $dp
    sleep "$(awk -v s="$train_s" -v r="$(od -An -N2 -tu2 /dev/urandom)" \
        'BEGIN { printf "%.3f", r / 65535 * 0.8 * s }')"
    rank=$(( $(od -An -N1 -tu1 /dev/urandom | tr -d ' ') % np ))
    victim=
    for p in $(pgrep -P $dp); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
            grep -qx "DT_RANK=$rank" && victim=$p
    done
    if [ $mode = kill ]; then
        [ -n "$victim" ] && kill -9 "$victim"
        wait $dp; rc=$?
    else
        named= latency= left=
        if [ -n "$victim" ] && kill -STOP "$victim"; then
            ts=$(date +%s.%N)
            # dtctl's own first line naming a rank ("dt: error: rank R on H
            # hung ..." or "restart 1 of N: rank R ..."), polled each 0.1 s;
            # bounded: a job that never notices is stopped after 120 s.
            while kill -0 $dp 2>/dev/null; do
                l=$(grep -m1 -E '^dt: (error|warning): (restart 1 of [0-9]+: )?rank [0-9]+ on ' out)
                if [ -n "$l" ]; then
                    latency=$(echo "$(date +%s.%N) - $ts" | bc)
                    named=$(echo "$l" | sed -n 's/.*: rank \([0-9]*\) on .*/\1/p')
                    break
                fi
                if [ "$(echo "$(date +%s.%N) - $ts > 120" | bc)" = 1 ]; then
                    kill -CONT "$victim" 2>/dev/null; kill -INT $dp; break
                fi
                sleep 0.1
            done
        fi
        wait $dp; rc=$?
        if [ -n "$victim" ] && kill -0 "$victim" 2>/dev/null; then
            left=" (the stopped worker was still there: SIGCONT + SIGKILL)"
            kill -CONT "$victim" 2>/dev/null; kill -9 "$victim" 2>/dev/null
        fi
    fi
    extra=$(echo "$(date +%s.%N) - $t0 - $run_s" | bc)
    acc=$(acc_of out)
    line=$(grep "restart 1 of" out | head -1)
    ck=$(echo "$line" | sed -n 's/.*step \([0-9]*\) of the job.*/step \1/p')
    [ -n "$line" ] && [ -z "$ck" ] && ck="the start (no checkpoint yet)"
    [ -z "$line" ] && ck="nowhere (no restart: the kill missed)"
    diff=$(awk -v a="${acc:-0}" -v b="$ref" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2f", d }')
    status=ok
    { [ $rc -eq 0 ] && awk -v d="$diff" 'BEGIN { exit !(d <= 0.3) }'; } || status=FAIL
    [ $status = ok ] && ok=$((ok + 1)) # exit 0 and the accuracy
    if [ -n "$line" ]; then
        restarted=$((restarted + 1))
        cost_min=$(awk -v a="$cost_min" -v d="$extra" 'BEGIN { print (a == "" || d < a ? d : a) }')
        cost_max=$(awk -v a="$cost_max" -v d="$extra" 'BEGIN { print (a == "" || d > a ? d : a) }')
    fi
    worst=$(awk -v a="$worst" -v d="$diff" 'BEGIN { print (d > a ? d : a) }')
    if [ $mode = kill ]; then
        echo "trial $t: kill rank $rank ${victim:-(job already over)}: exit $rc, accuracy $acc% (|diff| $diff), resumed from $ck, ${extra}s over an uninterrupted run (backoff 0.5s included): $status"
        continue
    fi
    [ -n "$left" ] && status=FAIL
    if [ -n "$victim" ] && [ "$named" = "$rank" ]; then
        right=$((right + 1))
        awk -v d="$latency" -v l="$limit" 'BEGIN { exit !(d <= l) }' && within=$((within + 1))
        lat_min=$(awk -v a="$lat_min" -v d="$latency" 'BEGIN { print (a == "" || d < a ? d : a) }')
        lat_max=$(awk -v a="$lat_max" -v d="$latency" 'BEGIN { print (a == "" || d > a ? d : a) }')
        verdict="named rank $named after ${latency}s"
    elif [ -n "$victim" ]; then
        status=FAIL verdict="named ${named:-no rank}${latency:+ after ${latency}s}: WRONG"
    fi
    [ -n "$victim" ] && stopped=$((stopped + 1))
    echo "trial $t: SIGSTOP rank $rank ${victim:-(job already over)}: ${verdict:-nothing stopped}; exit $rc, accuracy $acc% (|diff| $diff), resumed from $ck, ${extra}s over an uninterrupted run$left: $status"
    verdict=
done
echo "summary: $ok/$trials finished with exit 0 within 0.3 pt of $ref% (worst |diff| $worst pt); $restarted/$trials restarted (the others: the job ended before the failure could be injected), ${cost_min:-?}..${cost_max:-?} s over an uninterrupted run when restarted"
[ $mode = stop ] &&
    echo "summary: the stopped rank named $right/$stopped, $within/$stopped within the timeout + 5 s (${limit}s); ${lat_min:-?}..${lat_max:-?} s from the SIGSTOP to dtctl's line"
exit 0
