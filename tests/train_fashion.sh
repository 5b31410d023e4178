#!/bin/sh
# train_fashion.sh — dt's built-in trainer on a Fashion-MNIST subset, for
# real: `dtctl run -n 2 JOB.ini` trains a few hundred steps and must clear
# an accuracy far above chance; metrics, TensorBoard events and
# checkpoints are written; a job stopped mid-epoch and resumed ends with
# bit-identical parameters; a corrupt newest checkpoint is named and the
# previous one used; a fresh run into a used checkpoint_dir is refused (and
# empties its metrics file otherwise); an unusable checkpoint_dir fails
# before training, a last checkpoint not written fails the job, a metrics
# write failure does not; checkpoint_keep counts the run's lineage only;
# only corrupt checkpoints fail --resume; another model of the same size
# or another optimizer setting is refused; N=1 with batch 2B matches N=2
# with batch B, also for
# a CNN whose second conv runs by Winograd, which ends where im2col ends;
# a small ResNet ends where it ends in NCHW when it runs NHWC; layout =
# nhwc for a model with max pooling is refused by dtctl, naming the
# maxpool; a batchnorm whose every batch is 1 sample (a subset of one
# sample per rank) is refused; bad [data] and sync_bn keys are refused by
# dtctl, once; an image folder's image_size and decode and CIFAR-100's
# cifar100_labels are said to do nothing, and so is a warmup
# on one worker; a mean on the 0-255 scale is said.
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
grep -q "bad3.ini:2: \[train\] batch_size = 1: layer 2 'batchnorm' sees 1 value per channel" out ||
    { cat out; fail "batchnorm, batch 1: no clear error"; }
# batch 2, but work_load 1:10 gives rank 0 one sample of the 4
sed -i 's/batch_size = 1/batch_size = 2/' bad3.ini
"$DTCTL" run -n 2 --set cluster.work_load=1,10 bad3.ini >out 2>&1 && fail "batchnorm with a share of 1 was accepted"
grep -q "\[cluster\] work_load gives rank 0 1 sample a step (batch_size 2 x 2 ranks): layer 2 'batchnorm' sees 1 value" out ||
    { cat out; fail "batchnorm, a work_load share of 1: no clear error"; }
# (not advising sync_bn, which work_load refuses)
grep -q "sync_bn" out && { cat out; fail "a work_load share of 1: advises sync_bn"; }
# batch 2, but 3 samples over 3 workers give each 1 sample an epoch: every
# batch is 1 (it trained at loss log 10, learning nothing), refused by the
# workers once the data is loaded; with sync_bn the batch is the 3
"$DTCTL" run -n 3 --set data.train_samples=3 --set data.test_samples=10 \
    bad3.ini >out 2>&1 && { cat out; fail "batchnorm with 1 sample per rank was accepted"; }
grep -q "rank [0-2]: 3 training samples over 3 workers give each 1 sample an epoch, so layer 2 'batchnorm' sees 1 value per channel in every batch.*: train on at least 6 samples (\[data\] train_samples), run fewer workers, or set \[model\] sync_bn = yes" out ||
    { cat out; fail "batchnorm, 1 sample per rank: no clear error"; }
grep -q "exited with code 65" out || { cat out; fail "batchnorm, 1 sample per rank: not exit 65"; }
"$DTCTL" run -n 3 --set data.train_samples=3 --set data.test_samples=10 \
    --set model.sync_bn=yes bad3.ini >out 2>&1 ||
    { cat out; fail "batchnorm with 1 sample per rank and sync_bn refused"; }
# sync_bn with work_load: said once by dtctl, naming both
"$DTCTL" run -n 2 --set cluster.work_load=1,2 --set model.sync_bn=yes bad3.ini >out 2>&1
[ $? -eq 2 ] || { cat out; fail "sync_bn with work_load: not refused (exit 2)"; }
[ "$(grep -c -- "--set: \[model\] sync_bn = yes does not work with \[cluster\] work_load (unequal shares, --set)" out)" -eq 1 ] ||
    { cat out; fail "sync_bn with work_load: not said once with its origin"; }
grep -q "^\[" out && { cat out; fail "sync_bn with work_load: workers were started"; }
# layout = nhwc on a model whose maxpool has no NHWC form: the maxpool as
# written (not the conv it is fused into), its index as the summary counts
printf '[model]\nlayers = conv(4,3,pad=1) relu maxpool(2) flatten linear(10)\nlayout = nhwc\n' >bad4.ini
"$DTCTL" run -n 2 bad4.ini >out 2>&1 && fail "layout = nhwc with a maxpool was accepted"
grep -q "bad4.ini:3: \[model\] layout = nhwc, but layer 2 'maxpool(2)' (max pooling runs in NCHW only.*) has no NHWC form: set layout = auto .* or nchw" out ||
    { cat out; fail "layout = nhwc with a maxpool: no file:line naming the maxpool"; }
grep -q "fused" out && { cat out; fail "layout = nhwc: blames an internal fusion"; }
grep -q "^\[" out && { cat out; fail "layout = nhwc with a maxpool: workers were started"; }
for kv in "train.max_steps=-1|max_steps = -1: 0 (run all epochs)" \
          "train.lr_min=1|lr_min = 1 is above the lr it decays from" \
          "model.layers=flatten linear(10) softmax|the loss applies the softmax itself" \
          "data.std=0|--set: .data. std: 0 must be greater than 0" \
          "data.mean=0.1,0.2|--set: .data. mean has 2 values: give 1, or one per channel (1 for this data set)" \
          "data.test_samples=-1|--set: .data. test_samples must be 0 (all) or a positive count, not -1" \
          "data.random_crop=28|--set: .data. random_crop = 28: the padding must be below the image's side (28x28" \
          "data.channels=2|--set: .data. channels = 2, but fashion-mnist images have 1"; do
    "$DTCTL" run -n 2 --set "${kv%%|*}" --set train.schedule=cosine job.ini >out 2>&1
    [ $? -eq 2 ] || { cat out; fail "${kv%%|*} not refused (exit 2)"; }
    [ "$(grep -c -- "${kv#*|}" out)" -eq 1 ] || { cat out; fail "${kv%%|*}: no single '${kv#*|}'"; }
    grep -q "^\[" out && { cat out; fail "${kv%%|*}: workers were started"; }
done
# an image folder's keys and cifar100's on Fashion-MNIST do nothing: said
# (they were ignored without a word); image_size may repeat its 28x28
"$DTCTL" config --set data.decode=loader --set data.cifar100_labels=coarse \
    --set data.image_size=32 job.ini >out 2>&1 ||
    { cat out; fail "decode, cifar100_labels or image_size refused"; }
grep -q -- "--set: \[data\] image_size = 32 does nothing for fashion-mnist, whose images stay 28x28 (the model's input 1x28x28)" out ||
    { cat out; fail "image_size = 32 on fashion-mnist: not said"; }
grep -q -- "--set: \[data\] decode is an image folder's key (dataset = folder): it does nothing for fashion-mnist" out ||
    { cat out; fail "decode on fashion-mnist: not said"; }
grep -q -- "--set: \[data\] cifar100_labels chooses CIFAR-100's fine or coarse labels: it does nothing for fashion-mnist" out ||
    { cat out; fail "cifar100_labels on fashion-mnist: not said"; }
"$DTCTL" config --set data.image_size=28 job.ini >out 2>&1 ||
    { cat out; fail "image_size = 28 refused"; }
grep -q "image_size = 28 does nothing" out &&
    { cat out; fail "image_size = 28 on fashion-mnist: complained about"; }
# mean and std on the 0-255 scale (other frameworks' recipes) trained at
# chance without a word: said, with what to write instead
"$DTCTL" config --set data.mean=72.9 --set data.std=0.353 job.ini >out 2>&1
grep -q -- "--set: \[data\] mean = 72.9 is above 1, but dt normalizes pixel/255, in \[0, 1\].*divide it by 255 (0.2859)" out ||
    { cat out; fail "mean on the 0-255 scale: not said"; }
grep -q "std = 0.353 is above" out && { cat out; fail "std 0.353 said to be above 1"; }
# a warmup on one worker starts at the lr it climbs to: said by dtctl
# with its origin (it was a -v line, 'warmup 50 steps from 0.02'); on two
# it climbs from lr / 2
"$DTCTL" config -n 1 --set train.warmup_steps=50 job.ini >out 2>&1
grep -q -- "--set: \[train\] warmup_steps = 50 does nothing here: .* 1 worker at lr 0.02 starts where it ends" out ||
    { cat out; fail "warmup_steps on one worker: not said"; }
"$DTCTL" config -n 2 --set train.warmup_steps=50 job.ini >out 2>&1
grep -q "warmup_steps = 50 does nothing" out &&
    { cat out; fail "warmup_steps on two workers: said to do nothing"; }
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
# resumed with the same max_steps: nothing to train (it took one step
# more, and wrote its checkpoint, every time)
run -n 2 --resume --set train.checkpoint_dir=b --set train.bucket=16K \
    --set train.max_steps=170 job.ini || { cat out; fail "resume at max_steps failed"; }
grep -q "checkpoint is at step 170, \[train\] max_steps: nothing left to train" out ||
    { cat out; fail "resume at max_steps not said"; }
ls b/ckpt-000000000171.dtckpt 2>/dev/null && fail "a resume at max_steps trained on"
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
grep -q "resuming from b/ckpt-000000000250.dtckpt: written at the end of training (2 epochs done, step 250 of the job)" out ||
    { cat out; fail "the final checkpoint named as an epoch to resume"; }
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

# ---- a fresh run into a used checkpoint_dir: refused before it starts -----
# (it would prune the old run's checkpoints by step, its own too, and a
# later --resume would continue the old run); dtctl says it before any
# worker starts, rank 0 when started without dtctl
: >out
run -n 2 --metrics m.jsonl --set train.checkpoint_dir=a job.ini &&
    { cat out; fail "a fresh run into a used checkpoint_dir was accepted"; }
grep -q "checkpoint_dir a already holds checkpoints (the newest: a/ckpt-000000000250.dtckpt): a fresh run would mix its own with them; rerun with --resume .*to continue that run, or give an empty or another checkpoint_dir" out ||
    { cat out; fail "a fresh run into a used checkpoint_dir: no clear refusal"; }
grep -q "^\[" out && { cat out; fail "workers were started for a refused fresh run"; }
[ "$(wc -l <m.jsonl)" -eq 2 ] || fail "a refused run touched the metrics file"
DT_TRAIN_CHECKPOINT_DIR=a "$top_builddir/core/dt-train" job.ini >out 2>&1 &&
    { cat out; fail "dt-train: a fresh run into a used checkpoint_dir was accepted"; }
grep -q "error: \[train\] checkpoint_dir a already holds checkpoints (the newest: a/ckpt-000000000250.dtckpt)" out ||
    { cat out; fail "dt-train: a fresh run into a used checkpoint_dir: no clear refusal"; }

# ---- a fresh run empties its --metrics file, a resumed one appends ---------
: >out
run -n 2 --metrics m.jsonl --set train.epochs=1 --set train.checkpoint_dir=m1 \
    job.ini || { cat out; fail "one-epoch run"; }
[ "$(wc -l <m.jsonl)" -eq 1 ] || { cat m.jsonl; fail "a fresh run appended to an older run's metrics"; }
run -n 2 --resume --metrics m.jsonl --set train.checkpoint_dir=m1 job.ini ||
    { cat out; fail "resumed second epoch"; }
[ "$(wc -l <m.jsonl)" -eq 2 ] && grep -q '"epoch":2,' m.jsonl ||
    { cat m.jsonl; fail "a resumed run did not append its epoch"; }

# ---- checkpoint_dir unusable: said before training ------------------------
: >file
: >out
run -n 2 --set train.checkpoint_dir=file/ck job.ini &&
    { cat out; fail "a checkpoint_dir below a file was accepted"; }
grep -q "cannot create checkpoint directory file/ck: Not a directory" out ||
    { cat out; fail "an unusable checkpoint_dir is not named with errno"; }
grep -q "epoch 1/" out && { cat out; fail "trained before finding checkpoint_dir unusable"; }

# ---- a checkpoint that cannot be written: a periodic one is a warning, the
# last one fails the job (a directory where each file must go)
mkdir -p ro/ckpt-000000000125.dtckpt/x ro/ckpt-000000000250.dtckpt/x
: >out
run -n 2 --set train.checkpoint_dir=ro job.ini &&
    { cat out; fail "the job ended with 0 without its last checkpoint"; }
grep -q "warning: checkpoint at step 125 was not written (see above); this run has no checkpoint yet; training goes on" out ||
    { cat out; fail "the failed periodic checkpoint is not a plain warning"; }
grep -q "error: the job's last checkpoint (step 250) could not be written to ro (see above), so the job fails" out ||
    { cat out; fail "the failed last checkpoint is not an error"; }

# ---- metrics that cannot be written: one warning, training and checkpoints
# go on (the epoch's checkpoint comes before its metrics line)
: >out
run -n 2 --metrics /dev/full --set train.checkpoint_dir=nospace job.ini ||
    { cat out; fail "a metrics file on a full device stopped the job"; }
[ "$(grep -c "/dev/full: cannot write metrics: No space left on device; no more are written there" out)" -eq 1 ] ||
    { cat out; fail "no single warning for the metrics file"; }
[ -f nospace/ckpt-000000000125.dtckpt ] && [ -f nospace/ckpt-000000000250.dtckpt ] ||
    { ls nospace; fail "checkpoints missing after a metrics failure"; }

# ---- checkpoint_keep counts this run's lineage: a corrupt newer file that
# --resume went past is set aside (NAME.corrupt): it neither pushes out
# good checkpoints nor is deleted (tests/train_ckpt_corrupt.sh: nor
# overwritten)
: >out
run -n 2 --set train.checkpoint_dir=lin --set train.checkpoint_steps=100 \
    job.ini || { cat out; fail "lineage: first run"; }
printf 'X' | dd of=lin/ckpt-000000000250.dtckpt bs=1 seek=5000 conv=notrunc 2>/dev/null
run -n 2 --resume --set train.checkpoint_dir=lin --set train.checkpoint_keep=1 \
    --set train.checkpoint_steps=10 --set train.max_steps=210 job.ini ||
    { cat out; fail "lineage: resume past the corrupt checkpoint"; }
grep -q "warning: lin/ckpt-000000000250.dtckpt did not verify (see above): set aside as lin/ckpt-000000000250.dtckpt.corrupt, which --resume never picks" out ||
    { cat out; fail "lineage: the corrupt newer file is not said"; }
got=$(cd lin && ls ckpt-* | tr '\n' ' ')
[ "$got" = "ckpt-000000000210.dtckpt ckpt-000000000250.dtckpt.corrupt " ] ||
    fail "lineage: checkpoint_keep = 1 left '$got' (want the new 210 and the corrupt 250 set aside)"
# at another world size the steps pass 250 without writing it (210 on 2
# workers is step 171 of 250 on 1; the job ends at 290): keep = 2 keeps
# two good ones, the corrupt one still aside
: >out
run -n 1 --resume --set train.checkpoint_dir=lin --set train.checkpoint_keep=2 \
    --set train.checkpoint_steps=100 job.ini ||
    { cat out; fail "lineage: resume on 1 worker"; }
got=$(cd lin && ls ckpt-* | tr '\n' ' ')
[ "$got" = "ckpt-000000000210.dtckpt ckpt-000000000250.dtckpt.corrupt ckpt-000000000290.dtckpt " ] ||
    fail "lineage: at another world size checkpoint_keep = 2 left '$got'"

# ---- --resume with only corrupt checkpoints: refused, naming them; they
# stay. dtctl's automatic restart (DT_RESTART_COUNT) starts over instead,
# setting them aside first.
mkdir bad && cp lin/ckpt-000000000250.dtckpt.corrupt bad/ckpt-000000000250.dtckpt
: >out
run -n 2 --resume --set train.checkpoint_dir=bad job.ini &&
    { cat out; fail "--resume with only a corrupt checkpoint started over"; }
grep -q "error: --resume: no checkpoint in bad verifies (ckpt-000000000250.dtckpt, each named above); they are left for inspection" out ||
    { cat out; fail "--resume with only corrupt checkpoints: not named"; }
DT_RESTART_COUNT=1 DT_TRAIN_RESUME=yes DT_TRAIN_CHECKPOINT_DIR=bad \
    DT_TRAIN_MAX_STEPS=10 "$top_builddir/core/dt-train" job.ini >out 2>&1 ||
    { cat out; fail "an automatic restart with only corrupt checkpoints failed"; }
grep -q "warning: restart: no checkpoint in bad verifies (ckpt-000000000250.dtckpt, each named above): training starts from the beginning" out ||
    { cat out; fail "restart over corrupt checkpoints: not said"; }
[ -f bad/ckpt-000000000250.dtckpt.corrupt ] && [ -f bad/ckpt-000000000010.dtckpt ] ||
    { ls bad; fail "restart over corrupt checkpoints: files"; }

# ---- another model of the same parameter count is refused, naming both;
# another optimizer setting is named too; a checkpoint written before the
# model description existed resumes with the count checked, said once
big="model.layers=flatten linear(256) relu linear(128) relu linear(10)"
alt="model.layers=flatten linear(238) relu linear(194) relu linear(10)"
: >out
run -n 2 --set train.checkpoint_dir=mod --set train.max_steps=5 --set "$big" \
    --metrics ms.jsonl job.ini || { cat out; fail "256/128 run"; }
# A job that stops at max_steps inside an epoch still ends as an epoch
# does: evaluated, its metrics line, its final accuracy.
grep -q "final test accuracy: [0-9.]*% after 0 epochs and 5 steps of epoch 1 (5 steps, 2 workers)" out &&
    grep -q '"epoch":1,"step":5,' ms.jsonl ||
    { cat out ms.jsonl; fail "max_steps inside an epoch: no evaluation, final line or metrics line"; }
run -n 2 --resume --max-restarts 2 --set cluster.restart_backoff=100ms \
    --set train.checkpoint_dir=mod --set "$alt" job.ini; rc=$?
[ $rc -eq 65 ] || { cat out; fail "another model with 235146 parameters: want exit 65 (not restartable), got $rc"; }
grep -q "restart 1 of" out && { cat out; fail "a checkpoint of another model was retried by --max-restarts"; }
# rank 0 found it and said why: dtctl names rank 0, not the first to exit
grep -q "error: rank 0 on [^ ]* exited with code 65 (dt-train.s code for a failure a restart would repeat: .*)$" out ||
    { cat out; fail "another model: dtctl does not name rank 0, which refused the checkpoint"; }
grep -q "mod/ckpt-000000000005.dtckpt was written by another model: its layer 1 is linear(256) (output 256, 200960 parameters), this job's linear(238) (output 238, 186830 parameters) (the checkpoint's \[model\] layers = 'flatten linear(256) relu linear(128) relu linear(10)', this job's 'flatten linear(238) relu linear(194) relu linear(10)')" out ||
    { cat out; fail "another model: not refused naming both"; }
: >out
run -n 2 --resume --set train.checkpoint_dir=mod --set "$big" \
    --set optimizer.sgd.momentum=0 job.ini &&
    { cat out; fail "sgd without momentum took a momentum state"; }
grep -q "mod/ckpt-000000000005.dtckpt: its optimizer state is [0-9]* bytes, optimizer 'sgd' with this job's \[optimizer.sgd\] settings keeps [0-9]*: a setting that changes what it keeps differs" out ||
    { cat out; fail "the optimizer state size mismatch does not name file and settings"; }
mkdir mold && python3 - mod/ckpt-000000000005.dtckpt mold/ckpt-000000000005.dtckpt <<'PY'
import hashlib, struct, sys
d = open(sys.argv[1], 'rb').read()[:-32]
ver, n, step = struct.unpack('<IIQ', d[8:24])
out, off = [], 24
for _ in range(n):
    tag, _z, ln = struct.unpack('<IIQ', d[off:off + 16])
    end = off + 16 + ln + (8 - ln % 8) % 8
    if tag != 8:  # MODEL: absent before it existed
        out.append(d[off:end])
    off = end
data = d[:8] + struct.pack('<IIQ', ver, len(out), step) + b''.join(out)
open(sys.argv[2], 'wb').write(data + hashlib.sha256(data).digest())
PY
: >out
run -n 2 --resume --set train.checkpoint_dir=mold --set train.max_steps=6 \
    --set "$alt" job.ini || { cat out; fail "an older checkpoint was refused"; }
[ "$(grep -c "mold/ckpt-000000000005.dtckpt has no model description (written by an older dt): only its parameter count is checked" out)" -eq 1 ] ||
    { cat out; fail "an older checkpoint's missing model description is not said once"; }
: >out
run -n 2 --set train.checkpoint_keep=-1 --set train.checkpoint_dir=neg job.ini &&
    { cat out; fail "checkpoint_keep = -1 was accepted"; }
grep -q "\[train\] checkpoint_keep = -1: the number of newest checkpoints to keep, 0 (all) or more" out ||
    { cat out; fail "checkpoint_keep = -1: no clear error"; }

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
differ c1/ckpt-000000000020.dtckpt ci/ckpt-000000000020.dtckpt ||
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
differ rh/ckpt-000000000005.dtckpt rc/ckpt-000000000005.dtckpt ||
    fail "ResNet: layout nchw gave bit-identical results: not a second path"
"$DTCTL" run -n 1 --set model.layout=sideways job.ini >out2 2>&1 &&
    fail "layout = sideways was accepted"
grep -q "\[model\] layout = 'sideways': use auto, nchw or nhwc" out2 ||
    { cat out2; fail "bad layout not named"; }
"$DTCTL" run -n 1 --set model.layout=nhwc --set "$cnn" job.ini >out2 2>&1 &&
    fail "layout = nhwc was accepted for a model with max pooling"
grep -q "\[model\] layout = nhwc, but layer 2 'maxpool(2)' (max pooling runs in NCHW only.*) and layer 5 'maxpool(2)' (.*) have no NHWC form" out2 ||
    { cat out2; fail "nhwc refusal does not name the layers"; }
echo "PASS"
