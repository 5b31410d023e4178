#!/bin/sh
# train_scaling.sh — the trainer with more workers, for real (Fashion-MNIST):
# the MLP example's own defaults stay finite at N = 8 past the point where
# linear scaling without a cap diverged; a diverging job stops every rank
# with a message naming the epoch, step, rank, effective lr and global
# batch and the keys that help; on_divergence = halve_lr goes back to a
# checkpoint with half the lr, at most 3 times, on every rank together.
name=scaling
. "$top_srcdir/tests/train_common.sh"
run() { timeout 300 "$DTCTL" run "$@" >"$tmp/out" 2>&1; }
mlp="$top_srcdir/conf/examples/fashion-mnist-mlp.ini"

# ---- mistakes in the new keys: caught by dtctl, with the job file's line --
printf '[train]\nlr_scaling = cubic\n[model]\nlayers = flatten linear(10)\n' >bad.ini
"$DTCTL" run -n 2 bad.ini >out 2>&1 && fail "lr_scaling = cubic was accepted"
grep -q "bad.ini:2: \[train\] lr_scaling 'cubic' is not known: use linear, sqrt or none" out ||
    { cat out; fail "bad lr_scaling not reported with its line"; }
printf '[train]\non_divergence = halve_lr\n[model]\nlayers = flatten linear(10)\n' >bad.ini
"$DTCTL" run -n 2 bad.ini >out 2>&1 && fail "halve_lr without checkpoint_dir"
grep -q "bad.ini:2: \[train\] on_divergence = halve_lr restarts from the last checkpoint: set \[train\] checkpoint_dir too" out ||
    { cat out; fail "halve_lr without checkpoint_dir not reported"; }
grep -q "^\[" out && { cat out; fail "workers were started"; }

# ---- the example at N = 8, its defaults: finite through 250 steps ----------
# (118 steps per epoch; lr 0.05 x 8 = 0.4 without a cap diverged in epoch 2)
run -n 8 -v --set train.max_steps=250 "$mlp" ||
    { cat out; fail "the MLP example at N = 8 failed"; }
grep -q "debug: global batch 512 (8 x 64): lr 0.05 x 4 (linear) = 0.2" out ||
    { cat out; fail "-v does not show the scaled lr"; }
grep -q "warmup 2 epochs (236 steps; auto" out ||
    { cat out; fail "-v does not show the auto warmup"; }
grep -q "stopping after 250 steps" out || { cat out; fail "no 250 steps"; }
grep -E "epoch 2/15 +train_loss [0-9]" out ||
    { cat out; fail "no finite epoch-2 summary"; }

# ---- divergence: named, every rank stops -----------------------------------
cat >job.ini <<'INI'
[train]
seed = 3
epochs = 2
batch_size = 16
lr = 50
lr_scaling = linear
warmup_epochs = 0
device = cpu
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(64) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 4000
test_samples = 1000
INI
run -n 2 job.ini && { cat out; fail "lr 100 did not diverge"; }
cat out
grep -q "error: training diverged at epoch 1 step [0-9]* (step [0-9]* of the job): the loss is [-a-z]* on rank [01]" out ||
    fail "the divergence message lacks epoch, step or rank"
grep -q "effective lr 100, global batch 32 (2 workers x 16)" out ||
    fail "the divergence message lacks the effective lr or global batch"
grep -q "what helps (\[train\] keys): a lower \[train\] lr (now 50); .*lr_scaling_max_batch = 16.*clip_grad_norm = 1.*on_divergence = halve_lr" out ||
    fail "the divergence message does not name the keys that help"
[ "$(grep -c 'error: training diverged' out)" -eq 1 ] ||
    fail "more than one rank reported the divergence"
# ... with --max-restarts: not restarted, the same checkpoint-less run
# would diverge the same way (it was restarted max_restarts times)
timeout 300 "$DTCTL" run -n 2 --max-restarts 2 job.ini >out 2>&1
rc=$?
[ "$rc" -eq 65 ] || { cat out; fail "a diverged job with --max-restarts exited $rc, not 65"; }
grep -q "not restarting: .*a restart repeats it" out || { cat out; fail "no word on not restarting"; }
grep -q "restart 1 of 2" out && { cat out; fail "a diverged job was restarted"; }

# ---- on_divergence = halve_lr: back to a checkpoint, lr / 2, 3 times -------
run -n 2 --set train.lr=1e6 --set train.on_divergence=halve_lr \
    --set train.checkpoint_dir=ck job.ini && { cat out; fail "lr 2e6 trained"; }
cat out
[ -f ck/ckpt-000000000000.dtckpt ] || fail "no step-0 checkpoint to go back to"
for lr in 2e+06 1e+06 5e+05 2.5e+05; do
    grep -q "training diverged .* effective lr $lr," out ||
        fail "no divergence at lr $lr: the lr was not halved"
done
[ "$(grep -c 'resuming from ck/ckpt-000000000000.dtckpt' out)" -eq 3 ] ||
    fail "not 3 restarts from the step-0 checkpoint"
grep -q "restart 3 of at most 3" out || fail "no third restart"
grep -q "still diverging after 3 restarts (lr x0.125); stopping" out ||
    fail "no final stop after 3 restarts"

# ---- rollbacks after progress, and the branches they leave ----------------
# (DT_TEST_NAN_AT: rank 0's loss is NaN at job steps 25, then 35, then 33)
# 25: back to step 20; checkpoint 30 written; 35 is a new divergence (a
# checkpoint since): back to 30, the newest, restart 1 again (it went to
# step 10 and counted restart 2 before); 33 before another checkpoint:
# back past 30 to 20, and checkpoint 30 of that branch leaves the series
# (it stayed the newest: --resume and dtctl's hint took the diverged
# branch)
DT_TEST_NAN_AT=25,35,33 timeout 300 "$DTCTL" run -n 2 --set train.lr=0.05 \
    --set train.on_divergence=halve_lr --set train.checkpoint_dir=ck2 \
    --set train.checkpoint_every=10steps --set train.max_steps=40 \
    job.ini >"$tmp/out" 2>&1 ||
    { cat out; fail "rollbacks at steps 25, 35, 33"; }
resumed=$(grep -o 'resuming from ck2/ckpt-0*[0-9]*' out | sed 's/.*ckpt-0*//' | tr '\n' ' ')
[ "$resumed" = "20 30 20 " ] ||
    { cat out; fail "rollbacks went to steps '$resumed', not '20 30 20 '"; }
grep -q "restart 1 of at most 3.*" out && [ "$(grep -c 'restart 1 of at most 3' out)" -eq 2 ] ||
    { cat out; fail "the divergence after a checkpoint did not count from 1 again"; }
grep -q "1 checkpoint after step 20 set aside in ck2" out ||
    { cat out; fail "the abandoned checkpoint 30 was not set aside"; }
[ -f ck2/ckpt-000000000030.dtckpt.diverged ] || { ls ck2; fail "no ckpt-30 .diverged"; }
grep -q "stopping after 40 steps" out || { cat out; fail "no 40 steps after the rollbacks"; }
echo "PASS"
