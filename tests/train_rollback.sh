#!/bin/sh
# train_rollback.sh — on_divergence = halve_lr with a loss that blows up
# while still finite: a deep MLP at lr 0.4 with momentum 0.9 goes 2.6, 6.4,
# 21, 47, 199 ... 6.6e16, then NaN at step 9. The checkpoints of steps 4
# and 8 hold that finite but ruined state (loss > 10x the first step's);
# the rollback passes over both to step 0, sets them aside, halves the lr
# once, and training recovers. Before, it went back to step 8's, and each
# ruined checkpoint counted as a new divergence: lr halved again and again
# with losses of 1e20 in between. The step lines show such losses as
# 6.554e+16, not 17 digits. With checkpoint_keep = 1 the ruined ones do
# not push step 0's out. The choice reads no candidate whole (the hook
# DT_TEST_CKPT_READ_LOG lists those read whole). A chosen file that fails
# to verify gives way to the next sound one (DT_TEST_ROLLBACK_HOLD).
name=rollback
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 1
epochs = 1
batch_size = 16
lr = 0.4
device = cpu
log_every = 1
checkpoint_dir = ck
checkpoint_every = 4steps
on_divergence = halve_lr
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(64) relu linear(64) relu linear(64) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 1600
test_samples = 100
INI
DT_TEST_CKPT_READ_LOG="$tmp/whole" \
    timeout 120 "$DTCTL" run -n 2 --metrics "$tmp/m.jsonl" job.ini >out 2>&1 ||
    { cat out; fail "the job did not recover from its divergence"; }

# the blow-up happened as described (step 1's loss, then NaN at 9)
grep -q "step 1/50  loss 2\.[0-9]*  " out || { cat out; fail "step 1's loss is not ~2.6"; }
[ "$(grep -c 'training diverged' out)" -eq 1 ] ||
    { cat out; fail "not exactly one divergence"; }
grep -q "warning: training diverged at epoch 1 step 9 (step 9 of the job): the loss is [-a-z]* on rank" out ||
    { cat out; fail "no divergence at step 9"; }

# one rollback, to step 0, past the two ruined checkpoints, lr halved once
grep -q "on_divergence = halve_lr: back to the checkpoint of step 0 with lr x0.5 (restart 1 of at most 3)" out ||
    { cat out; fail "the rollback did not go to step 0 with lr x0.5"; }
grep -q "on_divergence = halve_lr: 2 newer checkpoints passed over: their training loss (up to [0-9.]*e+16) is more than 10x the job's first step's (2\.[0-9]*)" out ||
    { cat out; fail "the ruined checkpoints 4 and 8 were not named as passed over"; }
resumed=$(grep -o 'resuming from ck/ckpt-[0-9]*' out | sed 's/.*ckpt-//' | tr '\n' ' ')
[ "$resumed" = "000000000000 " ] ||
    { cat out; fail "rollbacks went to '$resumed', not once to step 0"; }
grep -q "restart 2 of" out && { cat out; fail "the lr was halved more than once"; }
[ -f ck/ckpt-000000000004.dtckpt.diverged ] && [ -f ck/ckpt-000000000008.dtckpt.diverged ] ||
    { ls ck; fail "the ruined checkpoints 4 and 8 were not set aside"; }
# choosing reads only the LOSSES section of each candidate: of the three
# files, only step 0's is read whole, once, by the restore (before, the
# choice read and hashed 8, 4 and 0 whole, then the restore 0 again, while
# the other ranks waited: past [cluster] timeout on a large model)
whole=$(sed 's|.*/||' whole | sort | uniq -c | sed 's/^ *//' | tr '\n' ' ')
[ "$whole" = "1 ckpt-000000000000.dtckpt " ] ||
    { cat whole; fail "checkpoints read whole during the rollback: '$whole', not step 0's once"; }
grep -q "step 8/50  loss [0-9.]*e+1[0-9]  " out ||
    { cat out; fail "step 8's loss is not shown as a huge finite number (%.4g)"; }
grep -q "loss [0-9]\{9,\}" out && { cat out; fail "a huge loss was printed in full"; }

# ... and training recovers: lr 0.2 for the rest, a finite loss at the end
grep -q '"lr":0.2,' m.jsonl || { cat m.jsonl; fail "the epoch's lr is not 0.2 (halved once)"; }
grep -q '"train_loss":[0-9]' m.jsonl && grep -q '"test_loss":[0-9]' m.jsonl ||
    { cat m.jsonl; fail "the final losses are not finite"; }
grep -Eq "epoch 1/1  train_loss [0-9]\.[0-9]{4}  test_loss [0-9]\.[0-9]{4}  " out ||
    { cat out; fail "the run did not end with a sound loss (below 10)"; }
[ -f ck/ckpt-000000000050.dtckpt ] ||
    { ls ck; fail "no checkpoint at the end of training"; }

# checkpoint_keep = 1: the ruined checkpoints do not push step 0's out
rm -rf ck
timeout 120 "$DTCTL" run -n 2 --set train.checkpoint_keep=1 job.ini >out 2>&1 ||
    { cat out; fail "checkpoint_keep = 1: the job did not recover"; }
grep -q "back to the checkpoint of step 0 with lr x0.5 (restart 1 of at most 3)" out ||
    { cat out; fail "checkpoint_keep = 1: the ruined checkpoints pushed step 0's out"; }
grep -q "1 newer checkpoint passed over" out ||
    { cat out; fail "checkpoint_keep = 1: not 1 ruined checkpoint kept (step 8's)"; }
ls ck/*.dtckpt | tr '\n' ' ' | grep -qx "ck/ckpt-000000000050.dtckpt " ||
    { ls ck; fail "checkpoint_keep = 1: not only the last checkpoint left at the end"; }

# --resume goes on from there: the lr stays halved
timeout 120 "$DTCTL" run -n 2 --set train.epochs=2 --resume job.ini >out 2>&1 ||
    { cat out; fail "--resume after the recovery failed"; }
grep -q "the lr stays x0.5, as on_divergence = halve_lr left it" out ||
    { cat out; fail "--resume did not keep the halved lr"; }
grep -q "training diverged" out && { cat out; fail "the resumed job diverged"; }

# The choice reads each candidate's LOSSES section alone, unverified: a
# chosen file that then fails to verify (damaged between the choice and
# the restore; the hook DT_TEST_ROLLBACK_HOLD holds rank 0 there) gives
# way to the next sound one (step 0's), said, not to a ruined one. With
# checkpoints every 2 steps, step 2's (loss 6.4) is the newest sound one.
damage_chosen() {
    rm -f hold hold.chosen
    ( i=0; while [ ! -f hold.chosen ] && [ $i -lt 1200 ]; do
          sleep 0.1; i=$((i + 1)); done
      f=ck/ckpt-$(printf %012d "$(cat hold.chosen)").dtckpt
      at=$(( $(stat -c %s "$f") / 2 ))
      # a byte other than the one there (255 - b never equals b)
      b=$(dd if="$f" bs=1 skip=$at count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
      printf "\\$(printf %o $((255 - b)))" |
          dd of="$f" bs=1 seek=$at conv=notrunc 2>/dev/null
      touch hold ) &
}
rm -rf ck
damage_chosen
DT_TEST_ROLLBACK_HOLD="$tmp/hold" timeout 120 "$DTCTL" run -n 2 \
    --set train.checkpoint_every=2steps --set train.checkpoint_keep=10 \
    job.ini >out 2>&1 ||
    { cat out; fail "damaged chosen checkpoint: the job did not recover"; }
wait
grep -q "back to the checkpoint of step 2 with lr x0.5" out ||
    { cat out; fail "damaged chosen checkpoint: step 2's was not chosen"; }
grep -q "ckpt-000000000002.dtckpt: checksum mismatch" out ||
    { cat out; fail "damaged chosen checkpoint: the damage was not found"; }
grep -q "on_divergence = halve_lr: step 2's checkpoint did not verify (see above): back to step 0's instead" out ||
    { cat out; fail "damaged chosen checkpoint: the fallback to step 0's was not said"; }
resumed=$(grep -o 'resuming from ck/ckpt-[0-9]*' out | sed 's/.*ckpt-//' | tr '\n' ' ')
[ "$resumed" = "000000000000 " ] ||
    { cat out; fail "damaged chosen checkpoint: went to '$resumed', not once to step 0"; }

# no sound one left but the damaged one (checkpoint_keep = 2 dropped step
# 0's): said, and back to the newest that verifies, as without losses
rm -rf ck
damage_chosen
DT_TEST_ROLLBACK_HOLD="$tmp/hold" timeout 120 "$DTCTL" run -n 2 \
    --set train.checkpoint_every=2steps --set train.checkpoint_keep=2 \
    job.ini >out 2>&1
wait
grep -q "on_divergence = halve_lr: step 2's checkpoint did not verify (see above): back to step 8's instead (no older one with a sound loss verifies: the newest that does is taken, whatever its loss)" out ||
    { cat out; fail "damaged last sound checkpoint: the fallback was not said"; }
echo "PASS"
