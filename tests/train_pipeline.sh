#!/bin/sh
# train_pipeline.sh — the input pipeline in real jobs (Fashion-MNIST
# subset, a small CNN, random_crop = 2 and hflip = yes): data_wait is in
# the metrics and the progress lines; the loader thread count does not
# change a bit of the result; N = 1 with batch 2B ends where N = 2 with
# batch B ends (the same augmented samples); a job stopped mid-epoch and
# resumed is bit-identical; a step failing mid-epoch ends the job (loader
# threads shut down, no hang); bad [data] keys are named with their line.
name=pipeline
. "$top_srcdir/tests/train_common.sh"
run() { timeout 300 "$DTCTL" run "$@" >"$tmp/out" 2>&1; }

# 2000 training samples, 2 workers x batch 16: 63 steps per epoch.
cat >job.ini <<'INI'
[train]
seed = 5
epochs = 2
batch_size = 16
lr = 0.02
optimizer = sgd
device = cpu
log_every = 20
[optimizer.sgd]
momentum = 0.9
[model]
layers = conv(8,3,pad=1) relu maxpool(2) flatten linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 2000
test_samples = 500
random_crop = 2
hflip = yes
INI

# ---- mistakes are caught by dtctl before any worker starts ----------------
printf '[model]\nlayers = flatten linear(10)\n[data]\nhflip = yes\nrandom_crop = -1\n' >bad.ini
"$DTCTL" run -n 2 bad.ini >out 2>&1 && fail "random_crop = -1 was accepted"
grep -q "bad.ini:5: \[data\] random_crop = -1" out ||
    { cat out; fail "bad random_crop not reported with its line"; }
grep -q "^\[" out && { cat out; fail "workers were started"; }
printf '[model]\nlayers = flatten linear(10)\n[data]\nloader_threads = -2\n' >bad.ini
"$DTCTL" run -n 2 bad.ini >out 2>&1 && fail "loader_threads = -2 was accepted"
grep -q "bad.ini:4: \[data\] loader_threads = -2" out ||
    { cat out; fail "bad loader_threads not reported with its line"; }
printf '[model]\nlayers = flatten linear(10)\n[data]\nrandom_crop = 28\n' >bad.ini
"$DTCTL" run -n 1 bad.ini >out 2>&1 && fail "random_crop = 28 was accepted"
# (dtctl knows Fashion-MNIST's 28x28: said once, with the line)
grep -q "bad.ini:4: \[data\] random_crop = 28: the padding must be below the image's side (28x28" out ||
    { cat out; fail "random_crop >= the image side not refused with its line"; }
grep -q "^\[" out && { cat out; fail "random_crop = 28: workers were started"; }

# ---- a short training: data_wait reported ---------------------------------
run -n 2 --metrics m.jsonl --set train.checkpoint_dir=a job.ini ||
    { cat out; fail "training failed"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
echo "accuracy after 2 epochs on 2000 augmented samples: $acc%"
awk -v a="$acc" 'BEGIN { exit !(a >= 55.0) }' ||
    { cat out; fail "accuracy '$acc%' is not above 55% (chance is 10%)"; }
grep -q "augmentation of the training images: random crop with 2 px padding on, horizontal flip on" out ||
    { cat out; fail "augmentation not announced"; }
[ "$(wc -l <m.jsonl)" -eq 2 ] || fail "m.jsonl should have 2 lines"
for k in comm_fraction data_wait; do
    grep -q "\"$k\":" m.jsonl || fail "m.jsonl lacks $k"
done
dw=$(sed -n 's/.*"data_wait":\([0-9.]*\),.*/\1/p' m.jsonl | tail -1)
echo "data_wait (epoch 2, N=2, 1 loader thread): $dw"
awk -v d="$dw" 'BEGIN { exit !(d != "" && d >= 0 && d <= 1) }' ||
    { cat m.jsonl; fail "data_wait '$dw' is not a fraction"; }
grep -q "^\[0\] epoch 2/2  train_loss .* comm [0-9.]*%  data [0-9.]*%" out ||
    { cat out; fail "the epoch line lacks data N%"; }
grep -q "^\[0\] epoch 1/2  step 20/63 .* data [0-9.]*%  ETA" out ||
    { cat out; fail "the step line lacks data N%"; }
full=a/ckpt-000000000126.dtckpt
[ -f "$full" ] || { ls a; fail "no final checkpoint $full"; }

# ---- loader threads: 0 (in the step), 1, 3 give the same bits -------------
for n in 0 3; do
    run -n 2 --set data.loader_threads=$n --set data.prefetch=1 \
        --set train.checkpoint_dir=t$n job.ini ||
        { cat out; fail "loader_threads = $n"; }
    "$compare" "$full" t$n/ckpt-000000000126.dtckpt ||
        fail "loader_threads = $n differs from loader_threads = 1"
done

# ---- stopped mid-epoch, resumed: bit-identical -----------------------------
run -n 2 --set train.checkpoint_dir=b --set train.checkpoint_every=30steps \
    --set train.max_steps=90 job.ini || { cat out; fail "first half"; }
run -n 2 --resume --set train.checkpoint_dir=b --set data.loader_threads=2 \
    job.ini || { cat out; fail "resume failed"; }
grep -q "resuming from .*ckpt-000000000090.dtckpt" out ||
    { cat out; fail "did not resume from step 90"; }
"$compare" "$full" b/ckpt-000000000126.dtckpt ||
    fail "resumed run differs from the uninterrupted one"

# ---- N=1 with batch 2B equals N=2 with batch B (same augmented samples) ---
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=one \
    --set train.max_steps=30 job.ini || { cat out; fail "N=1 run"; }
run -n 2 --set train.checkpoint_dir=two --set train.max_steps=30 job.ini ||
    { cat out; fail "N=2 run"; }
"$compare" one/ckpt-000000000030.dtckpt two/ckpt-000000000030.dtckpt 1e-4 ||
    fail "augmented: N=1 batch 32 and N=2 batch 16 differ after 30 steps"
run -n 2 --set train.checkpoint_dir=noaug --set train.max_steps=30 \
    --set data.random_crop=0 --set data.hflip=no job.ini ||
    { cat out; fail "run without augmentation"; }
differ two/ckpt-000000000030.dtckpt noaug/ckpt-000000000030.dtckpt ||
    fail "augmentation changed nothing"

# ---- a step failing mid-epoch: the job ends, no hang ----------------------
start=$(date +%s)
timeout 120 "$DTCTL" run -n 2 --set train.lr=1e6 --set data.loader_threads=2 \
    job.ini >out 2>&1
rc=$?
[ $rc -ne 0 ] || { cat out; fail "a diverging job succeeded"; }
[ $rc -ne 124 ] || { cat out; fail "a diverging job hung"; }
grep -q "training diverged at epoch 1 step" out ||
    { cat out; fail "no divergence message"; }
echo "a job failing mid-epoch ended in $(( $(date +%s) - start ))s"
echo "PASS"
