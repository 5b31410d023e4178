#!/bin/sh
# train_edges.sh — training edge cases on tiny slices of Fashion-MNIST:
# a model that diverges in the epoch's last step (the loss it stepped from
# was finite, so the per-step vote cannot see it) is a divergence named at
# that step, before its evaluation line, best accuracy or checkpoint; not
# a job that ends 0 with test_loss nan; on_divergence = halve_lr goes back
# and stops after 3 restarts. max_steps that falls on an epoch's last step
# ends that epoch whole: a resume starts the next one, not an empty repeat.
# A preemption agreed at a step whose update overflowed writes no
# checkpoint of it: the one before stands.
name=edges
. "$top_srcdir/tests/train_common.sh"
run() { timeout 120 "$DTCTL" run -n 2 "$@" job.ini >out 2>&1; }

# One step per epoch (64 samples, 2 x 32): lr 1e30 keeps step 1's loss
# finite (the initial parameters) and makes the model's outputs overflow.
cat >job.ini <<'INI'
[train]
seed = 1
epochs = 1
batch_size = 32
lr = 1e30
device = cpu
[model]
layers = flatten linear(64) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 64
test_samples = 100
INI

# ---- on_divergence = stop: the job fails at the step, nothing kept -------
run --set train.checkpoint_dir=ck
rc=$?
[ $rc -eq 65 ] || { cat out; fail "a job whose last step diverged exited $rc, not 65"; }
grep -q "error: training diverged at epoch 1 step 1 (step 1 of the job): the test loss after it is [-a-z]*: the parameters are finite but so large that the model's outputs overflow; effective lr 1e+30" out ||
    { cat out; fail "the last step's divergence is not named with its step and lr"; }
grep -q "what helps (\[train\] keys): a lower \[train\] lr (now 1e+30)" out ||
    { cat out; fail "no keys that help"; }
grep -q "final test accuracy\|epoch 1/1 " out &&
    { cat out; fail "the diverged model was reported as an epoch or a result"; }
ls ck/*.dtckpt >/dev/null 2>&1 && { ls ck; fail "the diverged model was checkpointed"; }

# ---- halve_lr: never a checkpoint of the diverged step -------------------
# (checkpoint_every = 1 steps: step 1's is due, but the epoch's last step is
# evaluated first; a checkpoint of it would count as progress since the
# rollback and restart the count of restarts: lr halved without end)
run --set train.checkpoint_dir=ck2 --set train.on_divergence=halve_lr \
    --set train.checkpoint_every=1steps && { cat out; fail "lr 1e30 trained"; }
[ "$(grep -c 'resuming from ck2/ckpt-000000000000.dtckpt' out)" -eq 3 ] ||
    { cat out; fail "not 3 restarts from the step-0 checkpoint"; }
grep -q "resuming from ck2/ckpt-000000000001" out &&
    { cat out; fail "a rollback took the diverged step's own checkpoint"; }
grep -q "effective lr 1.25e+29" out || { cat out; fail "the lr was not halved 3 times"; }
grep -q "still diverging after 3 restarts (lr x0.125); stopping" out ||
    { cat out; fail "no final stop after 3 restarts"; }
ls ck2/ckpt-000000000001* >/dev/null 2>&1 && { ls ck2; fail "the diverged step was checkpointed"; }

# ---- max_steps at an epoch's end: the epoch is complete -------------------
run --set train.lr=0.05 --set train.epochs=3 --set train.max_steps=2 \
    --set train.checkpoint_dir=ck3 --metrics "$tmp/m.jsonl" ||
    { cat out; fail "max_steps = 2 (two 1-step epochs) failed"; }
grep -q "final test accuracy: .* after 2 epochs (2 steps, 2 workers)" out ||
    { cat out; fail "max_steps at an epoch's end did not end 2 whole epochs"; }
run --set train.lr=0.05 --set train.epochs=3 --set train.max_steps=3 \
    --set train.checkpoint_dir=ck3 --metrics "$tmp/m.jsonl" --resume ||
    { cat out; fail "the resume to max_steps = 3 failed"; }
grep -q "resuming from ck3/ckpt-000000000002.dtckpt: epoch 3, step 2" out ||
    { cat out; fail "the checkpoint at max_steps is not at the next epoch's start"; }
epochs=$(sed 's/^{"epoch":\([0-9]*\),.*/\1/' m.jsonl | tr '\n' ' ')
[ "$epochs" = "1 2 3 " ] || { cat m.jsonl; fail "metrics epochs '$epochs', not '1 2 3 '"; }
# ---- a preemption agreed at a step whose update overflowed ----------------
# (the vote that agrees it runs before the update: a checkpoint of that
# state would be what --resume and a rollback take)
cat >job.ini <<'INI'
[train]
seed = 1
epochs = 1
batch_size = 32
lr = 0.05
device = cpu
[model]
layers = flatten linear(64) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 256
test_samples = 100
INI
DT_TEST_PREEMPT_AT=3 DT_TEST_INF_PARAM_AT=3 run --set train.checkpoint_dir=ck4 \
    --set train.checkpoint_every=1steps
rc=$?
[ $rc -eq 75 ] || { cat out; fail "a preemption at a diverged step exited $rc, not 75 (resumable)"; }
grep -q "error: preempted at epoch 1 step 3 (step 3 of the job), but that step's update left parameters that are not finite (the model diverged): no checkpoint written; the newest, of step 2 in ck4, stands" out ||
    { cat out; fail "the diverged preemption is not said with the checkpoint that stands"; }
ls ck4/ckpt-000000000003* >/dev/null 2>&1 && { ls ck4; fail "the diverged state was checkpointed at the preemption"; }
grep -q "preempted: the newest checkpoint is ck4/ckpt-000000000002.dtckpt (epoch 1 step 2, step 2 of the job)" out ||
    { cat out; fail "dtctl did not name the step-2 checkpoint as the one to resume"; }
# ... before any checkpoint: nothing is said to be saved
DT_TEST_PREEMPT_AT=1 DT_TEST_INF_PARAM_AT=1 run --set train.checkpoint_dir=ck5
rc=$?
[ $rc -eq 75 ] && grep -q "preempted before any checkpoint was written in ck5: rerun the job (it starts from the beginning)" out ||
    { cat out; fail "a diverged preemption before any checkpoint: exit $rc, not said"; }
grep -q "after saving their state" out && { cat out; fail "dtctl said state was saved"; }
run --set train.checkpoint_dir=ck4 --set train.checkpoint_every=1steps --resume ||
    { cat out; fail "--resume after the diverged preemption failed"; }
grep -q "resuming from ck4/ckpt-000000000002.dtckpt" out || { cat out; fail "did not resume from step 2"; }
echo "PASS"
