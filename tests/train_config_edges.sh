#!/bin/sh
# train_config_edges.sh — what a job ends with and which [train] values
# it takes, on a generated image folder of 2 classes:
#   - a model at 0% test accuracy still ends with its `final test
#     accuracy: 0.00% ...` line (it was left out, as if never evaluated);
#     the test folder's two classes are swapped, so a model that tells
#     them apart gets every test image wrong;
#   - checkpoint_every = -3 is refused with its --set (strtoull took it
#     as 2^64 - 3 epochs: a checkpoint only at the end, said nowhere);
#     +2 steps is taken, as it was before that refusal;
#   - log_every = 0 prints no step lines (it printed every 100); below 0
#     refused.
# Images are written by tests/make_images (libpng + libjpeg).
gen="$top_builddir/tests/make_images"
if [ ! -x "$gen" ]; then
    echo "SKIP: tests/make_images not built (needs libpng-dev and libjpeg62-turbo-dev)"
    exit 77
fi
tmp=$(mktemp -d /tmp/dt-config-edges-test.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
cd "$tmp" || exit 99
fail() { echo "FAIL: $*"; exit 1; }

# 2 classes x 100 training, 5 test images at 8x8: a job of a second.
"$gen" folder img 2 100 5 8 png 3 || fail "make_images folder"
mv img/test/c00 img/test/swap && mv img/test/c01 img/test/c00 &&
    mv img/test/swap img/test/c01 || fail "swapping the test classes"
cat >job.ini <<'INI'
[train]
seed = 1
epochs = 3
batch_size = 8
lr = 0.1
optimizer = sgd
device = cpu
threads = 1
log_every = 1
[model]
layers = flatten linear(2)
[data]
dataset = folder
path = img
image_size = 8
mean = 0.5
std = 0.25
INI
run() { timeout 120 "$DTCTL" run -n 2 "$@" job.ini >out 2>&1; }

# ---- 0% accuracy: the final line is there ---------------------------------
run || { cat out; fail "the job failed"; }
grep -q "epoch 3/3 .*test_accuracy 0\.00%" out ||
    { cat out; fail "the swapped test classes did not give 0% (the test needs it)"; }
grep -q "final test accuracy: 0\.00% after 3 epochs (39 steps, 2 workers); best 0\.00% at epoch 1" out ||
    { cat out; fail "no final line for a model at 0%"; }
# log_every = 1: a step line for each of the 13 steps of an epoch.
[ "$(grep -c 'epoch [0-9]/3  step ' out)" -eq 39 ] ||
    { cat out; fail "log_every = 1 did not print 39 step lines"; }

# ---- log_every = 0: no step lines, the epoch lines and the end stay -------
# (batch 1: 100 steps an epoch, where the 100 it stood for would print)
run --set train.log_every=0 --set train.batch_size=1 ||
    { cat out; fail "log_every = 0 failed"; }
grep -q "step [0-9]*/[0-9]*  loss" out && { cat out; fail "log_every = 0 printed step lines"; }
[ "$(grep -c 'epoch [0-9]/3  train_loss' out)" -eq 3 ] ||
    { cat out; fail "log_every = 0 lost the epoch lines"; }
grep -q "final test accuracy" out || { cat out; fail "log_every = 0 lost the final line"; }

# ---- refused before any worker starts, with where they were set -----------
run --set train.log_every=-5
rc=$?
[ $rc -eq 2 ] || { cat out; fail "log_every = -5 exited $rc, not 2"; }
grep -q "error: --set: \[train\] log_every = -5: a progress line every N steps, or 0 for none" out ||
    { cat out; fail "log_every = -5 not refused by name"; }
grep -q "epoch 1/3" out && { cat out; fail "log_every = -5 trained"; }

for every in -3 "-1 steps" "-2 epochs" "99999999999999999999 steps"; do
    run --set train.checkpoint_dir=ck --set "train.checkpoint_every=$every"
    rc=$?
    [ $rc -eq 2 ] || { cat out; fail "checkpoint_every = '$every' exited $rc, not 2"; }
    grep -q "error: --set: \[train\] checkpoint_every = '$every': write 'N epochs' or 'N steps' with N >= 1" out ||
        { cat out; fail "checkpoint_every = '$every' not refused by name"; }
    [ -e ck ] && { ls -R ck; fail "checkpoint_every = '$every' wrote into ck"; }
done
# A positive count still works, also with a + as before (39 steps: every
# 2nd and the end; the newest 3 kept).
run --set train.checkpoint_dir=ck --set "train.checkpoint_every=+2 steps" ||
    { cat out; fail "checkpoint_every = +2 steps refused"; }
[ "$(ls ck)" = "ckpt-000000000036.dtckpt
ckpt-000000000038.dtckpt
ckpt-000000000039.dtckpt" ] || { ls ck; fail "checkpoint_every = +2 steps wrote other checkpoints"; }
echo "0% final line, log_every 0 and < 0, checkpoint_every < 0: ok"
