#!/bin/sh
# train_examples.sh — the example job files (conf/examples/) on generated
# data, through dtctl as a user runs them:
#   - every example parses, and `dtctl config` prints the ResNet-20
#     summaries (272,186 parameters on Fashion-MNIST, 272,474 on CIFAR-10);
#   - cifar10-resnet20.ini on a small generated CIFAR-format set (the five
#     data_batch_N.bin and test_batch.bin): one epoch (13 steps) at N = 2,
#     the model summary in the log, a checkpoint written, an evaluation;
#   - image-folder.ini (a ResNet-8) on a generated folder of PNGs and JPEGs
#     in 3 classes: a 2-worker job over tcp (shared memory off) trains 300
#     steps and must beat chance (33%) by a wide margin;
#   - [data] decode = loader with 2 loader threads ends bit-identical to
#     decode = load.
# Images are written by tests/make_images (libpng + libjpeg).
gen="$top_builddir/tests/make_images"
if [ ! -x "$gen" ]; then
    echo "SKIP: tests/make_images not built (needs libpng-dev and libjpeg62-turbo-dev)"
    exit 77
fi
tmp=$(mktemp -d /tmp/dt-examples-test.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
ex="$top_srcdir/conf/examples"
compare="$top_builddir/tests/ckpt_compare"
fail() { echo "FAIL: $*"; exit 1; }
run() { timeout 300 "$DTCTL" run "$@" >"$tmp/out" 2>&1; }

# ---- every example parses; the ResNet-20 summaries -------------------------
for f in "$ex"/*.ini; do
    "$DTCTL" config "$f" >out 2>&1 || { cat out; fail "dtctl config $f"; }
done
"$DTCTL" config "$ex/fashion-mnist-resnet.ini" >out 2>&1
grep -q "^#   total: 272186 parameters" out ||
    { cat out; fail "fashion-mnist-resnet: not ResNet-20's 272186 parameters"; }
"$DTCTL" config "$ex/cifar10-resnet20.ini" >out 2>&1
grep -q "^#   total: 272474 parameters" out ||
    { cat out; fail "cifar10-resnet20: not ResNet-20's 272474 parameters"; }
grep -q "shortcut: conv(64,1,stride=2,bias=no)" out ||
    { cat out; fail "cifar10-resnet20: no projection shortcut in stage 3"; }

# ---- cifar10-resnet20.ini on a generated CIFAR-format set ------------------
mkdir c10 || exit 99
for i in 1 2 3 4 5; do
    "$gen" cifar c10/data_batch_$i.bin 40 $i || fail "make_images cifar"
done
"$gen" cifar c10/test_batch.bin 40 9 || fail "make_images cifar"
run -n 2 --set data.path="$tmp/c10" --set train.batch_size=8 \
    --set train.epochs=1 --set train.checkpoint_dir=c10ck \
    --set train.log_every=5 "$ex/cifar10-resnet20.ini" ||
    { cat out; fail "cifar10-resnet20.ini did not run"; }
grep -q "data: 200 training and 40 test samples (3x32x32, 10 classes)" out ||
    { cat out; fail "cifar10-resnet20: the generated set was not read"; }
grep -q "total: 272474 parameters" out ||
    { cat out; fail "cifar10-resnet20: no model summary in the log"; }
grep -q "augmentation of the training images: random crop with 4 px padding on, horizontal flip on" out ||
    { cat out; fail "cifar10-resnet20: augmentation not on"; }
[ -f c10ck/ckpt-000000000013.dtckpt ] ||
    { ls c10ck; cat out; fail "cifar10-resnet20: no checkpoint at step 13"; }
grep -q "final test accuracy: [0-9.]*% after 1 epoch (13 steps, 2 workers)" out ||
    { cat out; fail "cifar10-resnet20: no final accuracy"; }

# ---- image-folder.ini: a 2-worker ResNet-8 over tcp beats chance -----------
# 3 classes x 160 training, 40 test images, 32x32 (every third 36x32),
# PNG and JPEG alternating. The images are read at 16x16 to keep the test
# short: 2 x 8 samples a step, 30 steps an epoch.
"$gen" folder img 3 160 40 32 mixed 7 || fail "make_images folder"
start=$(date +%s)
run -n 2 --transport tcp --set collectives.shm=off \
    --set data.path="$tmp/img" --set data.image_size=16 \
    --set train.batch_size=8 --set train.epochs=10 --set train.log_every=50 \
    --set train.checkpoint_dir=imgck --metrics m.jsonl \
    "$ex/image-folder.ini" || { cat out; fail "image-folder.ini did not run"; }
echo "image-folder.ini: 300 steps at N = 2 over tcp in $(( $(date +%s) - start ))s"
grep -q "data: 480 training and 120 test samples (3x16x16, 3 classes)" out ||
    { cat out; fail "image-folder: the generated folder was not read"; }
grep -q "stage 3, block 1" out ||
    { cat out; fail "image-folder: no ResNet summary in the log"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
echo "image-folder accuracy after 300 steps: $acc% (chance: 33.3%)"
awk -v a="$acc" 'BEGIN { exit !(a >= 80.0) }' ||
    { cat out; fail "accuracy '$acc%' is not above 80%"; }
grep -q "final test accuracy: .* after 10 epochs (300 steps, 2 workers)" out ||
    { cat out; fail "image-folder: not 300 steps"; }
grep '"data_wait"' m.jsonl | tail -1 |
    sed 's/.*"data_wait":\([0-9.]*\).*/image-folder data_wait (epoch 10): \1/'

# ---- decode = loader: the same bits as decode = load -----------------------
for mode in load loader; do
    run -n 2 --set data.path="$tmp/img" --set data.image_size=16 \
        --set train.batch_size=8 --set train.max_steps=40 \
        --set data.decode=$mode --set data.loader_threads=2 \
        --set train.checkpoint_dir=dec$mode "$ex/image-folder.ini" ||
        { cat out; fail "decode = $mode"; }
done
"$compare" decload/ckpt-000000000040.dtckpt decloader/ckpt-000000000040.dtckpt ||
    fail "decode = loader ends elsewhere than decode = load"
printf '[data]\ndataset = folder\npath = %s\nimage_size = 16\ndecode = later\n[model]\nlayers = flatten linear(3)\n' "$tmp/img" >bad.ini
"$DTCTL" run -n 1 bad.ini >out 2>&1 && fail "decode = later was accepted"
grep -q "\[data\] decode = 'later': use load" out ||
    { cat out; fail "bad decode value not named"; }
echo "PASS"
