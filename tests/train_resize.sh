#!/bin/sh
# train_resize.sh — a checkpoint written by N workers resumes on N' (the
# local launcher): N = 2 trains 10 steps (320 of 1000 samples of epoch 1),
# then
#  - N' = 3: 320 is not on the 48-sample grid of 3 workers: the remaining
#    680 samples are resharded over 3 workers (15 steps), then one whole
#    epoch of 21 steps: 46 steps in all;
#  - N' = 1: 320 is step 20 of 1 worker: epoch 1 goes on at step 21 of 63,
#    then 63: 116 steps;
#  - N' = 3 for 10 steps (to 800 samples, inside the resharded epoch,
#    epoch_start 320), then N'' = 2: step 26 of 32, 59 steps in all.
# Each resume says the global batch and lr it changed (lr_scaling linear)
# and the training finishes; the finished job's last checkpoint resumed
# on 3 says training is complete. That no sample is skipped or seen twice is
# tested at the sampler level (test_sampler: test_resume_other_world).
set -u
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
# the data set's skip, the work directory and its traps (the job trains
# on the default data set, Fashion-MNIST)
name=resize
. "$top_srcdir/tests/train_common.sh"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); } # counted, not train_common's exit
ok() { echo "ok: $*"; }

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 2
batch_size = 16
lr = 0.02
lr_scaling = linear
warmup_epochs = 0
optimizer = sgd
device = cpu
log_every = 1000
checkpoint_steps = 10
checkpoint_dir = ck
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(32) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 1000
test_samples = 200
INI
run() { timeout 120 "$DTCTL" run "$@" job.ini; }

run -n 2 --set train.max_steps=10 >o.first 2>&1 ||
    { cat o.first; echo "FAIL: the first run (N = 2)"; exit 1; }
[ -f ck/ckpt-000000000010.dtckpt ] || { ls ck; echo "FAIL: no step-10 checkpoint"; exit 1; }
cp -r ck base

# resume DIR N WANT_LINE WANT_STEPS [ARGS]: --resume from DIR's copy on N.
resume() {
    dir=$1 n=$2 want=$3 steps=$4
    shift 4
    rm -rf ck && cp -r "$dir" ck
    run -n "$n" --resume "$@" >o 2>&1
    rc=$?
    [ $rc -eq 0 ] || { fail "resume on $n exited $rc: $(tail -n 5 o)"; return 1; }
    grep -qF "info: $want" o || { fail "resume on $n: want '$want' in: $(grep -i resum o)"; return 1; }
    if [ "$steps" != - ]; then
        grep -q "final test accuracy: .* after 2 epochs ($steps steps, $n worker" o ||
            { fail "resume on $n: want $steps steps in all: $(grep final o)"; return 1; }
        [ -f "ck/ckpt-$(printf %012d "$steps").dtckpt" ] || { fail "resume on $n: no checkpoint at step $steps: $(ls ck)"; return 1; }
    fi
    return 0
}

resume base 3 "resuming a checkpoint of 2 workers on 3: global batch 32 -> 48, lr 0.04 -> 0.06 (linear); epoch 1: the remaining 680 of 1000 samples resharded (15 steps)" 46 &&
    ok "2 -> 3 workers: the rest of epoch 1 resharded (15 steps), 46 steps in all"
resume base 1 "resuming a checkpoint of 2 workers on 1: global batch 32 -> 16, lr 0.04 -> 0.02 (linear); epoch 1 goes on at step 21 of 63 (320 of 1000 samples seen)" 116 &&
    ok "2 -> 1 worker: epoch 1 goes on at step 21 of 63, 116 steps in all"
# Twice: a checkpoint written inside a resharded epoch resumes elsewhere.
resume base 3 "resuming a checkpoint of 2 workers on 3" - --set train.max_steps=20 &&
    { [ -f ck/ckpt-000000000020.dtckpt ] ||
      { fail "2 -> 3 with max_steps = 20: no step-20 checkpoint: $(ls ck)"; false; }; } &&
    cp -r ck mid &&
    resume mid 2 "resuming a checkpoint of 3 workers on 2: global batch 48 -> 32, lr 0.06 -> 0.04 (linear); epoch 1 goes on at step 26 of 32 (800 of 1000 samples seen)" 59 &&
    ok "2 -> 3 -> 2 workers: a checkpoint inside the resharded epoch (800 samples seen) resumes at step 26 of 32"
# The end of training resumed elsewhere: no epoch goes on (the line said
# "epoch 3 goes on at step 1 of 21" of a job of 2 epochs)
[ -f ck/ckpt-000000000059.dtckpt ] && cp -r ck done &&
    resume done 3 "resuming a checkpoint of 2 workers on 3: global batch 32 -> 48, lr 0.04 -> 0.06 (linear); training complete (2 of 2 epochs)" - &&
    ok "the end of training resumed on 3 workers: training complete, no epoch goes on"
# Same world size: no translation, no line.
if resume base 2 "resuming from ck/ckpt-000000000010.dtckpt" 64; then
    if grep -q "resuming a checkpoint of" o; then
        fail "2 -> 2 workers: a resume on as many workers was translated: $(grep "resuming a checkpoint of" o)"
    else
        ok "2 -> 2 workers: resumed as before (64 steps)"
    fi
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all resize tests passed"
