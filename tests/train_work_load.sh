#!/bin/sh
# train_work_load.sh — unequal shares ([cluster] work_load), local launcher,
# Fashion-MNIST MLP (dropout off, no augmentation, plain SGD):
#  - bad lists (wrong length, zero, negative, non-numeric) are refused
#    before any worker starts, naming the key and file:line;
#  - 3 workers with work_load = 1,1,2 (shares 12,12,24 of each global batch
#    of 48) end with the same parameters, to float rounding, as 1 worker
#    with batch 48 (the same global batches: the weighted average equals
#    the mean over the global batch), and so does the equal split;
#  - rank 0's progress line counts every rank's samples (its samples/s
#    at the epoch's last step is the epoch line's);
#  - work_load = auto with rank 2 slowed 2x (DT_TEST_SLOW_RANK) lowers rank
#    2's weight in the logged line;
#  - resume: a checkpoint records the weights; resuming with other fixed
#    weights mid-epoch is refused with a message, with auto it goes on.
set -u
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_builddir:?}"
name=work-load
. "$top_srcdir/tests/train_common.sh"
run() { timeout 300 "$DTCTL" run "$@" >out 2>&1; }

cat >job.ini <<'INI'
[train]
seed = 5
epochs = 2
batch_size = 16
lr = 0.05
optimizer = sgd
device = cpu
log_every = 1000
checkpoint_every = 1 epoch
[model]
layers = flatten linear(32) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 960
test_samples = 200
loader_threads = 0
INI

# ---- bad lists --------------------------------------------------------------
for bad in "1,1" "1,0,1" "1,-2,1" "1,x,1" "1,,1"; do
    printf '[cluster]\nwork_load = %s\n' "$bad" >bad.ini
    "$DTCTL" run -n 3 --config bad.ini job.ini >out 2>&1 &&
        fail "work_load = $bad was accepted"
    grep -q "bad.ini:2: \[cluster\] work_load = '$bad'" out ||
        { cat out; fail "work_load = $bad: no key and file:line"; }
    grep -q "^\[" out && { cat out; fail "workers were started ($bad)"; }
done
echo "bad work_load lists refused with file:line"

# ---- the weighted average equals the mean over the global batch ------------
run -n 1 --set train.batch_size=48 --set train.checkpoint_dir=one job.ini ||
    { cat out; fail "1 worker"; }
run -n 3 -v --set cluster.work_load=1,1,2 --set train.checkpoint_dir=w job.ini ||
    { cat out; fail "3 workers, work_load 1,1,2"; }
# the loaders hold the largest share, 24, not the whole global batch
grep -q "the loaders' batch slots hold up to 24 samples" out ||
    { cat out; fail "work_load 1,1,2: loader slots not sized by the largest share"; }
grep -q "work_load 1.00,1.00,2.00: each global batch of 48 split 12,12,24" \
    out || { cat out; fail "no work_load line"; }
run -n 3 --set train.checkpoint_dir=e job.ini || { cat out; fail "equal"; }
last=ckpt-000000000040.dtckpt
"$compare" one/$last w/$last 1e-4 ||
    fail "work_load 1,1,2 differs from 1 worker on the same global batches"
"$compare" one/$last e/$last 1e-4 ||
    fail "equal shares differ from 1 worker on the same global batches"
differ e/$last w/$last ||
    fail "work_load 1,1,2 is bit-identical to equal shares (not used?)"
# 1,2,3 gives shares 8,16,24: rank 1's 16 is global / world without the
# shares being equal; it once averaged while the others summed (silently
# wrong gradients, accuracy 10 points down)
run -n 3 --set cluster.work_load=1,2,3 --set train.checkpoint_dir=w123 \
    --set train.log_every=20 job.ini ||
    { cat out; fail "3 workers, work_load 1,2,3"; }
"$compare" one/$last w123/$last 1e-4 ||
    fail "work_load 1,2,3 differs from 1 worker on the same global batches"
# rank 0's progress line counts every rank's samples: at the epoch's last
# step (20 of 20) its samples/s is the epoch line's, the same samples over
# the same time (it was 3 x rank 0's share of 8: half the real rate)
rate() { sed -n "s|^\[0\] epoch 1/2  $1.*  \([0-9]*\) samples/s.*|\1|p" out; }
p=$(rate 'step 20/20') e=$(rate 'train_loss')
[ -n "$p" ] && [ -n "$e" ] || { cat out; fail "no progress or epoch line"; }
[ "$p" -ge $((e - 1)) ] && [ "$p" -le $((e + 1)) ] ||
    { cat out; fail "work_load 1,2,3: progress says $p samples/s, the epoch line $e"; }
echo "work_load: the progress line's samples/s is the epoch line's ($p)"

# ---- auto: a 2x slower rank gets a smaller share ---------------------------
DT_TEST_SLOW_RANK=2 DT_TEST_SLOW_FACTOR=2 run -n 3 --set train.epochs=3 \
    --set cluster.work_load=auto --set train.checkpoint_dir=a job.ini ||
    { cat out; fail "auto"; }
grep "work_load" out
line=$(grep "epoch 1: work_load" out) || { cat out; fail "no auto line"; }
w2=$(echo "$line" | sed 's/.*work_load [0-9.]*,[0-9.]*,\([0-9.]*\) .*/\1/')
awk -v w="$w2" 'BEGIN { exit !(w < 0.8) }' ||
    fail "rank 2 (2x slower) kept weight $w2"
echo "$line" | grep -q "rank 2 slower" || fail "the slow rank is not named"

# ---- resume with other weights ----------------------------------------------
# The global batches do not depend on the weights: stopped mid-epoch with
# 1,1,2 and resumed with 1,2,1 (or equal shares) ends where the straight
# run does, to float rounding; with the same weights, bit for bit.
run -n 3 --set cluster.work_load=1,1,2 --set train.checkpoint_dir=r \
    --set train.checkpoint_every=5steps --set train.max_steps=5 job.ini ||
    { cat out; fail "first part"; }
cp -r r r2
run -n 3 --resume --set cluster.work_load=1,1,2 --set train.checkpoint_dir=r \
    job.ini || { cat out; fail "resume with the same weights"; }
"$compare" w/$last r/$last || fail "resumed run differs from the straight one"
run -n 3 --resume --set cluster.work_load=1,2,1 \
    --set train.checkpoint_dir=r2 job.ini ||
    { cat out; fail "resume with other weights"; }
grep -q "written with work_load 1.00,1.00,2.00, this run has 1.00,2.00,1.00" \
    out || { cat out; fail "no line about the changed weights"; }
"$compare" w/$last r2/$last 1e-4 ||
    fail "resumed with other weights: not the same training"
# auto takes its weights back from the checkpoint
DT_TEST_SLOW_RANK=2 DT_TEST_SLOW_FACTOR=2 run -n 3 --resume \
    --set train.epochs=4 --set cluster.work_load=auto \
    --set train.checkpoint_dir=a job.ini || { cat out; fail "auto resume"; }
grep -q "work_load = auto: .* from the checkpoint" out ||
    { cat out; fail "auto did not take the checkpoint's weights"; }
# ... but not weights beyond auto's floor (1,1,40: a share of 46 of 48,
# more than auto's loaders hold): equal shares, said
run -n 3 --set cluster.work_load=1,1,40 --set train.checkpoint_dir=w40 \
    --set train.checkpoint_every=5steps --set train.max_steps=5 job.ini ||
    { cat out; fail "work_load 1,1,40"; }
run -n 3 --resume --set train.max_steps=8 --set cluster.work_load=auto \
    --set train.checkpoint_dir=w40 job.ini || { cat out; fail "auto resume of 1,1,40"; }
grep -q "work_load = auto: the checkpoint's 1.00,1.00,40.00 give a rank a larger share than auto ever does; equal shares" out ||
    { cat out; fail "auto resume of 1,1,40: no fallback to equal shares"; }
# ---- the hostfile's weight= ---------------------------------------------------
printf 'localhost slots=2\n127.0.0.1 slots=1 weight=2\n' >hosts
run -n 3 --hostfile hosts --set train.epochs=1 job.ini ||
    { cat out; fail "hostfile weights"; }
grep -q "hostfile weights: work_load = 1,1,2" out &&
    grep -q "split 12,12,24" out || { cat out; fail "weight= not used"; }
printf 'localhost slots=2 weight=-1\n' >hosts
run -n 2 --hostfile hosts job.ini && fail "weight=-1 accepted"
grep -q "hosts:1: weight='-1'" out || { cat out; fail "weight=-1 message"; }
echo "OK"
