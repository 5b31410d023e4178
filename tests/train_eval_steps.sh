#!/bin/sh
# train_eval_steps.sh — [train] eval_steps = 20: the test set evaluated
# after job steps 20, 40, 60 and 80 of a 2-epoch job of 47 steps an epoch
# (not at 94, the last step, whose epoch's end evaluates), in rank 0's
# output, in --metrics as {"event":"eval",...} lines that dtctl plot
# skips, with the accuracy rising from the first to the last; a negative
# value refused with its file:line.
name=eval-steps
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 1
epochs = 2
batch_size = 64
eval_steps = 20
[model]
layers = flatten linear(128) relu linear(10)
[data]
train_samples = 6000
test_samples = 1000
INI

timeout 120 "$DTCTL" run -n 2 --metrics m.jsonl job.ini >out 2>&1 ||
    { cat out; fail "the job failed"; }
steps=$(sed -n 's/^\[0\] epoch [12]\/2  step [0-9]*\/47 (job step \([0-9]*\))  test_loss [0-9.]*  test_accuracy [0-9.]*%$/\1/p' out | tr '\n' ' ')
[ "$steps" = "20 40 60 80 " ] ||
    { cat out; fail "evaluations after job steps '$steps', want '20 40 60 80 '"; }
[ "$(grep -c '^{"event":"eval","epoch":[12],"step":[2468]0,"test_loss":[0-9.]*,"test_accuracy":[0-9.]*}$' m.jsonl)" -eq 4 ] ||
    { cat m.jsonl; fail "--metrics has not the 4 eval events"; }
[ "$(grep -c '^{"epoch":' m.jsonl)" -eq 2 ] || { cat m.jsonl; fail "--metrics has not the 2 epoch lines"; }
first=$(sed -n 's/.*"step":20,.*"test_accuracy":\([0-9.]*\)}/\1/p' m.jsonl)
last=$(sed -n 's/.*"step":80,.*"test_accuracy":\([0-9.]*\)}/\1/p' m.jsonl)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b > a && a > 0.1) }' ||
    { cat m.jsonl; fail "accuracy at step 80 ($last) not above step 20's ($first), or chance"; }
echo "ok: evaluated after steps $steps(accuracy $first -> $last)"

sed 's/eval_steps = 20/eval_steps = -3/' job.ini >bad.ini
"$DTCTL" run -n 2 bad.ini >out 2>&1 && { cat out; fail "eval_steps = -3 was accepted"; }
grep -q "bad.ini:5: \[train\] eval_steps = -3: evaluate every N optimizer steps, or 0" out ||
    { cat out; fail "eval_steps = -3: no error naming bad.ini:5"; }
echo "ok: eval_steps = -3 refused with its line"
exit 0
