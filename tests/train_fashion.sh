#!/bin/sh
# train_fashion.sh — dt's built-in trainer on a Fashion-MNIST subset, for
# real: `dtctl run -n 2 JOB.ini` trains a few hundred steps and must clear
# an accuracy far above chance; metrics, TensorBoard events and
# checkpoints are written; a job stopped mid-epoch and resumed ends with
# bit-identical parameters; a corrupt newest checkpoint is named and the
# previous one used; N=1 with batch 2B matches N=2 with batch B, also for
# a CNN whose second conv runs by Winograd, which ends where im2col ends;
# a small ResNet ends where it ends in NCHW when it runs NHWC.
name=train
. "$top_srcdir/tests/train_common.sh"

# 4000 training samples, 2 workers x batch 16: 125 steps per epoch.
cat >job.ini <<'INI'
[train]
seed = 3
epochs = 2
batch_size = 16
lr = 0.02
optimizer = sgd
device = cpu
log_every = 50
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(64) relu dropout(0.1) linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 4000
test_samples = 1000
INI

run() { timeout 300 "$DTCTL" run "$@" >>"$tmp/out" 2>&1; }

# ---- a test split of another shape is refused, naming both ---------------
# (its samples would overflow the training set's buffers): the real
# training files beside t10k files of 4 images of 8x8
mkdir mism && ln -s "$data"/train-* mism/
printf '\0\0\10\3\0\0\0\4\0\0\0\10\0\0\0\10' >mism/t10k-images-idx3-ubyte
head -c 256 /dev/zero >>mism/t10k-images-idx3-ubyte
printf '\0\0\10\1\0\0\0\4\0\1\2\3' >mism/t10k-labels-idx1-ubyte
"$DTCTL" run -n 1 --set data.path="$tmp/mism" job.ini >out 2>&1 && fail "a test split of 8x8 images was accepted"
grep -q "the training samples are 1x28x28 of 10 classes, the test samples 1x8x8 of 10: the two splits must have one shape" out ||
    { cat out; fail "test split of another shape: no clear error"; }

# ---- mistakes are caught by dtctl before any worker starts ----------------
printf '[train]\ncheckpoint_every = 3 weeks\n[model]\nlayers = flatten linaer(10)\n' >bad.ini
"$DTCTL" run -n 2 bad.ini >out 2>&1 && fail "a bad layer string was accepted"
grep -q "bad.ini:4: unknown layer 'linaer'" out || { cat out; fail "layer error"; }
grep -q "\^~~~~~" out || { cat out; fail "no caret under the bad layer"; }
"$DTCTL" run -n 2 --set "model.layers=flatten linear(10)" bad.ini >out 2>&1
grep -q "bad.ini:2: \[train\] checkpoint_every = '3 weeks'" out ||
    { cat out; fail "bad checkpoint_every not reported with its line"; }
grep -q "^\[" out && { cat out; fail "workers were started"; }
# keys the workers also check, said by dtctl with the job file's line;
# a batchnorm that would see one value per channel; max_steps < 0; a
# cosine lr_min above its lr; a softmax layer (the loss has it)
printf '[model]\nconv_algo = fast\nlayers = flatten linear(10)\n' >bad2.ini
"$DTCTL" run -n 2 bad2.ini >out 2>&1 && fail "conv_algo = fast was accepted"
grep -q "bad2.ini:2: \[model\] conv_algo = 'fast': use auto" out || { cat out; fail "conv_algo: no file:line"; }
printf '[train]\nbatch_size = 1\n[model]\nlayers = flatten linear(32) batchnorm relu linear(10)\n' >bad3.ini
"$DTCTL" run -n 2 bad3.ini >out 2>&1 && fail "batchnorm with batch 1 was accepted"
grep -q "bad3.ini:2: \[train\] batch_size = 1: layer 3 (batchnorm) sees 1 value per channel" out ||
    { cat out; fail "batchnorm, batch 1: no clear error"; }
for kv in "train.max_steps=-1|max_steps = -1: 0 (run all epochs)" \
          "train.lr_min=1|lr_min = 1 is above the lr it decays from" \
          "model.layers=flatten linear(10) softmax|the loss applies the softmax itself"; do
    "$DTCTL" run -n 2 --set "${kv%%|*}" --set train.schedule=cosine job.ini >out 2>&1 && fail "${kv%%|*} accepted"
    grep -q "${kv#*|}" out || { cat out; fail "${kv%%|*}: no '${kv#*|}'"; }
done
grep -q "^\[" out && { cat out; fail "workers were started"; }
: >out

# ---- a short real training -------------------------------------------------
run -n 2 --metrics m.jsonl --set train.log_dir=tb \
    --set train.checkpoint_dir=a job.ini || { cat out; fail "training failed"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
echo "accuracy after 250 steps on 4000 samples: $acc%"
[ -n "$acc" ] || { cat out; fail "no final accuracy line"; }
awk -v a="$acc" 'BEGIN { exit !(a >= 70.0) }' ||
    fail "accuracy $acc% is not above 70% (chance is 10%)"
[ "$(wc -l <m.jsonl)" -eq 2 ] || fail "m.jsonl should have 2 lines"
for k in epoch train_loss test_loss test_accuracy lr samples_per_sec \
    comm_fraction; do
    grep -q "\"$k\":" m.jsonl || fail "m.jsonl lacks $k"
done
ls tb/events.out.tfevents.* >/dev/null 2>&1 || fail "no TensorBoard file"
final=a/ckpt-000000000250.dtckpt
[ -f "$final" ] || { ls a; fail "no final checkpoint $final"; }
cp "$final" full.dtckpt

# ---- stopped mid-epoch, resumed: bit-identical -----------------------------
: >out
run -n 2 --set train.checkpoint_dir=b --set train.checkpoint_every=40steps \
    --set train.bucket=16K --set train.max_steps=170 job.ini || { cat out; fail "first half"; }
ls b/ckpt-000000000170.dtckpt >/dev/null || { ls b; fail "no step-170 checkpoint"; }
run -n 2 --resume --set train.checkpoint_dir=b job.ini ||
    { cat out; fail "resume failed"; }
grep -q "resuming from .*ckpt-000000000170.dtckpt" out ||
    { cat out; fail "did not resume from step 170"; }
"$compare" full.dtckpt b/ckpt-000000000250.dtckpt ||
    fail "resumed run differs from the uninterrupted one"
# resumed again: the checkpoint is the end, nothing to train, but the job
# still ends with the model's accuracy (and writes no checkpoint)
: >out
run -n 2 --resume --set train.checkpoint_dir=b job.ini ||
    { cat out; fail "resume at the end failed"; }
grep -q "nothing left to train; evaluating it" out ||
    { cat out; fail "resume at the end not said"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
awk -v a="$acc" 'BEGIN { exit !(a >= 70.0) }' || { cat out; fail "accuracy at the end '$acc'"; }
ls b/ckpt-00000000025[1-9].dtckpt 2>/dev/null && fail "a resume at the end trained on"

# ---- a corrupt newest checkpoint: named, the previous one used -------------
printf 'X' | dd of="$final" bs=1 seek=5000 conv=notrunc 2>/dev/null
: >out
run -n 2 --resume --set train.checkpoint_dir=a job.ini ||
    { cat out; fail "resume past a corrupt checkpoint failed"; }
grep -q "ckpt-000000000250.dtckpt: checksum mismatch" out ||
    { cat out; fail "the corrupt checkpoint was not named"; }
grep -q "resuming from .*ckpt-000000000125.dtckpt" out ||
    { cat out; fail "did not fall back to step 125"; }
"$compare" full.dtckpt "$final" ||
    fail "epoch 2 redone from step 125 differs from the original"

# ---- N=1 with batch 2B equals N=2 with batch B -----------------------------
: >out
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=one \
    --set train.max_steps=40 --set "model.layers=flatten linear(64) relu linear(64) relu linear(10)" \
    job.ini || { cat out; fail "N=1 run"; }
run -n 2 -v --set train.batch_size=16 --set train.checkpoint_dir=two \
    --set train.bucket=8K \
    --set train.max_steps=40 --set "model.layers=flatten linear(64) relu linear(64) relu linear(10)" \
    job.ini || { cat out; fail "N=2 run"; }
grep -q "averaged in 2 buckets per step" out ||
    { cat out; fail "8K buckets should split the gradients in two"; }
# On the CPU the buckets are reduced where they are: no device copy.
grep -q "averaged in 2 buckets per step, reduced in place in host memory (d2h_grad_copies=0 per step)" out ||
    { cat out; fail "the first step's debug line should name the host path and 0 d2h copies"; }
"$compare" one/ckpt-000000000040.dtckpt two/ckpt-000000000040.dtckpt 1e-4 ||
    fail "N=1 batch 32 and N=2 batch 16 differ after 40 steps"

# ---- a CNN: Winograd (auto picks it for the 8-channel conv) ---------------
cnn="model.layers=conv(8,3,pad=1) relu maxpool(2) conv(16,3,pad=1) relu maxpool(2) flatten linear(10)"
: >out
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=c1 \
    --set train.max_steps=20 --set "$cnn" job.ini || { cat out; fail "CNN N=1"; }
run -n 2 --set train.batch_size=16 --set train.checkpoint_dir=c2 \
    --set train.max_steps=20 --set "$cnn" job.ini || { cat out; fail "CNN N=2"; }
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=ci \
    --set train.max_steps=20 --set model.conv_algo=im2col --set "$cnn" \
    job.ini || { cat out; fail "CNN N=1 im2col"; }
"$compare" c1/ckpt-000000000020.dtckpt c2/ckpt-000000000020.dtckpt 1e-4 ||
    fail "CNN: N=1 batch 32 and N=2 batch 16 differ after 20 steps"
"$compare" c1/ckpt-000000000020.dtckpt ci/ckpt-000000000020.dtckpt 1e-4 ||
    fail "CNN: Winograd and im2col differ after 20 steps"
"$compare" c1/ckpt-000000000020.dtckpt ci/ckpt-000000000020.dtckpt >/dev/null &&
    fail "CNN: conv_algo=im2col gave bit-identical results: not a second path"

# ---- a small ResNet: layout = auto runs it NHWC; nchw ends in the same
# place; a bad layout is named with where it was set; nhwc for a model
# with max pooling is refused naming the layer. 5 steps: batch statistics
# amplify float rounding step by step (after 20, NHWC and NCHW are 3e-4
# apart, and so are Winograd and im2col in NCHW: 1.3e-4); after 5, 5e-6.
res="model.layers=conv(8,3,pad=1,bias=no) batchnorm relu stage(basic,8,1) stage(basic,16,1,stride=2) gap flatten linear(10)"
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=rh \
    --set train.max_steps=5 --set "$res" job.ini || { cat out; fail "ResNet NHWC"; }
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=rc \
    --set train.max_steps=5 --set model.layout=nchw --set "$res" job.ini ||
    { cat out; fail "ResNet NCHW"; }
"$compare" rh/ckpt-000000000005.dtckpt rc/ckpt-000000000005.dtckpt 1e-4 ||
    fail "ResNet: layout auto (NHWC) and nchw differ after 5 steps"
"$compare" rh/ckpt-000000000005.dtckpt rc/ckpt-000000000005.dtckpt >/dev/null &&
    fail "ResNet: layout nchw gave bit-identical results: not a second path"
"$DTCTL" run -n 1 --set model.layout=sideways job.ini >out2 2>&1 &&
    fail "layout = sideways was accepted"
grep -q "\[model\] layout = 'sideways': use auto, nchw or nhwc" out2 ||
    { cat out2; fail "bad layout not named"; }
"$DTCTL" run -n 1 --set model.layout=nhwc --set "$cnn" job.ini >out2 2>&1 &&
    fail "layout = nhwc was accepted for a model with max pooling"
grep -q "cannot run with \[model\] layout = nhwc" out2 ||
    { cat out2; fail "nhwc refusal does not name the layer"; }
echo "PASS"
