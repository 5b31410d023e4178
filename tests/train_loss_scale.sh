#!/bin/sh
# train_loss_scale.sh — [train] precision and loss scaling (issue 18 part
# 3) on the CPU, where they can run here: loss scaling is the same code on
# every device (a scale kernel and cuBLAS sasum on a GPU, loops here).
#  (a) loss_scale = dynamic at the default 65536 trains bit-identically to
#      no scaling (a power of two scales exactly);
#  (b) a scale so large that gradients overflow: steps are skipped, the
#      scale halves, training goes on; each epoch says how many;
#  (c) the scaler's state is in the checkpoint: a resumed run ends
#      bit-identical to the uninterrupted one;
#  (d) bad values, precision = bf16/tf32 and activations = bf16 on the
#      CPU are refused by name.
# What bf16/fp16 change on a GPU (tensor-core math) is checked by
# tests/gpu/run.sh on a lent GPU.
name=loss-scale
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 5
epochs = 2
batch_size = 16
lr = 0.02
device = cpu
log_every = 1000
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
run() { timeout 300 "$DTCTL" run -n 2 "$@" job.ini; }

# ---- (a) exact at 65536 ----------------------------------------------------
run --set train.checkpoint_dir=none >out.none 2>&1 || { cat out.none; fail "(a) reference"; }
run --set train.checkpoint_dir=dyn --set train.loss_scale=dynamic >out.dyn 2>&1 ||
    { cat out.dyn; fail "(a) dynamic"; }
"$compare" none/ckpt-000000000250.dtckpt dyn/ckpt-000000000250.dtckpt ||
    fail "(a) loss_scale = dynamic (65536) changed the parameters"
echo "(a) loss_scale = dynamic at 65536: bit-identical to none"

# ---- (b) overflow: skipped steps, the scale halves ---------------------------
big="--set train.loss_scale=dynamic --set train.loss_scale_init=1.7014118346046923e38 --set train.loss_scale_growth_interval=20"
# shellcheck disable=SC2086
run $big --set train.checkpoint_dir=big >out.big 2>&1 || { cat out.big; fail "(b) run"; }
grep -q "info: epoch 1: loss scale 1.70141e+38; [1-9][0-9]* steps\? skipped for overflowing gradients" out.big ||
    { cat out.big; fail "(b) no skipped steps reported at 2^127"; }
skipped=$(sed -n 's/.*epoch 2: loss scale .*(\([0-9]*\) in the job).*/\1/p' out.big)
[ -n "$skipped" ] && [ "$skipped" -ge 1 ] || { cat out.big; fail "(b) job total"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9]*\)\..*/\1/p' out.big)
[ -n "$acc" ] && [ "$acc" -ge 70 ] || { cat out.big; fail "(b) accuracy $acc% < 70%"; }
differ none/ckpt-000000000250.dtckpt big/ckpt-000000000250.dtckpt ||
    fail "(b) skipped steps left the parameters identical to the reference"
echo "(b) at 2^127: $skipped steps skipped over 2 epochs, $acc% accuracy"
# Skipped steps are no optimizer steps (as GradScaler): Adam's bias
# correction counts from the first applied one (it used the job's step,
# and after k skips the first update was a fraction of lr).
# shellcheck disable=SC2086
# (inputs scaled 353x by std = 0.001: the first steps overflow at 2^127)
run $big --set train.optimizer=adam --set train.lr=0.001 --set data.std=0.001 \
    --set train.max_steps=20 --set train.checkpoint_dir=adamck -v -v >out.adam 2>&1 ||
    { cat out.adam; fail "(b) adam run"; }
first=$(sed -n "s/.*optimizer 'adam': step 1 of its state at step \([0-9]*\) of the job.*/\1/p" out.adam | head -n 1)
skips=$(grep -c '^\[0\] .*gradients overflowed at loss scale .*: step skipped' out.adam)
[ -n "$first" ] && [ "$first" -gt 1 ] && [ "$first" -eq $((skips + 1)) ] ||
    { grep -iE "skipped|optimizer" out.adam; fail "(b) adam: after $skips skipped steps the first applied one was not its step 1 (got '$first')"; }
echo "(b) adam at 2^127: its step 1 is step $first of the job"
# ... resumed without loss scaling to step 30, then again: the state's
# step stays 30 - skips (the checkpoint at 30 said 0 skipped steps, and
# the next resume counted Adam's step as the job's)
for steps in 30 35; do
    run --set train.optimizer=adam --set train.lr=0.001 --set data.std=0.001 \
        --set train.max_steps=$steps --set train.checkpoint_dir=adamck --resume -v \
        >out.adam2 2>&1 || { cat out.adam2; fail "(b) adam resumed to $steps"; }
done
ostep=$(sed -n "s/.*the optimizer's state goes on from its step \([0-9]*\) (step 30 of the job).*/\1/p" out.adam2 | head -n 1)
[ "$ostep" = $((30 - skips)) ] ||
    { cat out.adam2; fail "(b) adam resumed at step 30 without loss scaling: its state's step '$ostep', not $((30 - skips))"; }

# ---- (c) the scaler resumes where it was -----------------------------------
# shellcheck disable=SC2086
run $big --set train.epochs=1 --set train.checkpoint_dir=res >out.r1 2>&1 ||
    { cat out.r1; fail "(c) first part"; }
# shellcheck disable=SC2086
run $big --resume --set train.checkpoint_dir=res >out.r2 2>&1 ||
    { cat out.r2; fail "(c) resume"; }
"$compare" big/ckpt-000000000250.dtckpt res/ckpt-000000000250.dtckpt ||
    fail "(c) resumed with loss scaling: parameters differ from the uninterrupted run"
grep -q "(${skipped} in the job)" out.r2 || { cat out.r2; fail "(c) the job's skipped count was not carried over"; }
echo "(c) resumed: bit-identical, skipped count carried over"

# ---- (d) refusals -----------------------------------------------------------
{ cat job.ini; printf '[train]\nprecision = fp8\n'; } >bad.ini
line=$(grep -c '' bad.ini)
"$DTCTL" run -n 1 bad.ini >out.d1 2>&1 && fail "(d) precision = fp8 accepted"
grep -q "bad.ini:$line: \[train\] precision = 'fp8': use fp32, tf32, bf16 or fp16" out.d1 ||
    { cat out.d1; fail "(d) fp8 not named with file:line"; }
run --set train.loss_scale=dynamic --set train.loss_scale_init=1000 >out.d2 2>&1 &&
    fail "(d) loss_scale_init = 1000 accepted"
grep -q "loss_scale_init = 1000: must be a power of two" out.d2 || { cat out.d2; fail "(d) 1000"; }
run --set train.loss_scale=3 >out.d3 2>&1 && fail "(d) loss_scale = 3 accepted"
grep -q "loss_scale = '3': use none, dynamic or a power of two" out.d3 || { cat out.d3; fail "(d) 3"; }
run --set train.precision=bf16 >out.d4 2>&1 && fail "(d) bf16 on device = cpu accepted"
grep -q "precision = bf16 is tensor-core math on a GPU (\[train\] device = cuda); the CPU computes in fp32" out.d4 ||
    { cat out.d4; fail "(d) bf16 on the cpu not explained"; }
run --set train.precision=tf32 >out.d5 2>&1 && fail "(d) tf32 on device = cpu accepted"
grep -q "precision = tf32 is tensor-core math on a GPU" out.d5 ||
    { cat out.d5; fail "(d) tf32 on the cpu not explained"; }
{ cat job.ini; printf '[train]\nactivations = bf16\n'; } >act.ini
line=$(grep -c '' act.ini)
"$DTCTL" run -n 1 act.ini >out.d6 2>&1 && fail "(d) activations = bf16 on the cpu accepted"
grep -q "act.ini:$line: \[train\] activations = bf16 stores a GPU's activations in 16 bits" out.d6 ||
    { cat out.d6; fail "(d) activations = bf16 on the cpu not named with file:line"; }
# device = auto without a GPU (here): bf16 storage is said and dropped, as
# precision's bf16 is (on a machine with a GPU, auto would take it)
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    run --set train.device=auto --set train.activations=bf16 >out.d8 2>&1 ||
        { cat out.d8; fail "(d) activations = bf16 with device = auto and no GPU: the job failed"; }
    grep -q "activations = bf16: no GPU here (device = auto), so float32 on the CPU" out.d8 ||
        { cat out.d8; fail "(d) activations = bf16 with device = auto and no GPU: not said"; }
fi
run --set train.activations=half >out.d7 2>&1 && fail "(d) activations = half accepted"
grep -q "\[train\] activations = 'half': use auto, float32 or bf16" out.d7 ||
    { cat out.d7; fail "(d) activations = half"; }
# [train] cuda_graphs: a misspelt mode, and on with device = cpu, refused
# before any worker starts, with file:line
{ cat job.ini; printf '[train]\ncuda_graphs = maybe\n'; } >cg.ini
line=$(grep -c '' cg.ini)
"$DTCTL" run -n 1 cg.ini >out.d9 2>&1 && fail "(d) cuda_graphs = maybe accepted"
grep -q "cg.ini:$line: \[train\] cuda_graphs = 'maybe': use auto, on or off" out.d9 ||
    { cat out.d9; fail "(d) cuda_graphs = maybe not named with file:line"; }
{ cat job.ini; printf '[train]\ncuda_graphs = on\n'; } >cg.ini
"$DTCTL" run -n 2 cg.ini >out.d10 2>&1 && fail "(d) cuda_graphs = on with device = cpu accepted"
grep -q "cg.ini:$line: \[train\] cuda_graphs = on captures a GPU's step; \[train\] device = cpu has none" out.d10 ||
    { cat out.d10; fail "(d) cuda_graphs = on on the cpu not explained with file:line"; }
# by dtctl: the workers named their DT_TRAIN_CUDA_GRAPHS, after loading data
grep -q '^\[' out.d10 && { cat out.d10; fail "(d) cuda_graphs = on on the cpu: workers were started"; }
run --set train.cuda_graphs=off >out.d11 2>&1 || { cat out.d11; fail "(d) cuda_graphs = off on the cpu refused"; }
echo "(d) fp8, a scale not a power of two, bf16 and tf32 on the CPU, bf16 activations on the CPU, an unknown storage and cuda_graphs misspelt or on for the CPU refused by name"
echo PASS
