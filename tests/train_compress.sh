#!/bin/sh
# train_compress.sh — [collectives] compression in the trainer: the
# Fashion-MNIST MLP on 2 workers over tcp (shm off, so the gradients
# cross the transport, where compression applies) trains to within 1 point
# of the float32 run with bf16 on the wire, and with fp16 plus error
# feedback. dtctl refuses a bad value with its line before any worker
# starts, and warns where compression does nothing (feedback without
# it, async); a job on one host with shm = auto says it compresses nothing.
name=train-compress
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 2
batch_size = 16
lr = 0.02
optimizer = sgd
device = cpu
log_every = 0
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(64) relu linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 4000
test_samples = 1000
[collectives]
shm = off
INI

accuracy() { # name, then --set arguments
    name=$1
    shift
    timeout 300 "$DTCTL" run -n 2 "$@" job.ini >"out.$name" 2>&1 ||
        { cat "out.$name"; fail "training with $name failed"; }
    a=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' "out.$name")
    [ -n "$a" ] || { cat "out.$name"; fail "$name: no final accuracy"; }
    echo "$a"
}
none=$(accuracy none) || exit 1
bf16=$(accuracy bf16 --set collectives.compression=bf16) || exit 1
fp16=$(accuracy fp16 --set collectives.compression=fp16 \
    --set collectives.compression_feedback=yes) || exit 1
echo "final test accuracy: none $none%, bf16 $bf16%, fp16 + feedback $fp16%"
for v in "bf16 $bf16" "fp16 $fp16"; do
    set -- $v
    awk -v a="$2" -v b="$none" 'BEGIN { d = a - b; exit !(d <= 1.0 && d >= -1.0) }' ||
        fail "$1: accuracy $2% is more than 1 point from float32's $none%"
done
awk -v a="$none" 'BEGIN { exit !(a >= 70.0) }' || fail "float32 run at $none%"
# The compressed runs said so, and did reduce differently.
grep -q "collectives: compression bf16:" out.bf16 || { cat out.bf16; fail "no compression line (bf16)"; }
grep -q "collectives: compression fp16 with error feedback:" out.fp16 ||
    { cat out.fp16; fail "no compression line (fp16)"; }
grep -q "collectives: compression" out.none && fail "compression line without compression"
loss() { sed -n 's/.*epoch 2\/2 .*test_loss \([0-9.]*\).*/\1/p' "out.$1"; }
[ "$(loss none)" != "$(loss bf16)" ] || fail "bf16 test loss identical to float32's"

# ---- said before launch, and only what is true -----------------------------
quick() { timeout 60 "$DTCTL" run -n 2 --set train.max_steps=3 "$@" >out.q 2>&1; }
cp job.ini bad.ini
echo "compression = bf17" >>bad.ini
quick bad.ini && fail "compression = bf17 accepted"
grep -q "compression is set by bad.ini:$(wc -l <bad.ini); no worker was started" out.q ||
    { cat out.q; fail "bf17: no file:line"; }
grep -q "^\[" out.q && { cat out.q; fail "bf17: workers were started"; }
quick --set collectives.compression_feedback=yes job.ini || { cat out.q; fail "feedback run"; }
grep -q "warning: --set: \[collectives\] compression_feedback = yes does nothing without compression" out.q ||
    { cat out.q; fail "feedback without compression not warned"; }
# a resume with feedback says its residuals start at zero (not bit-exact)
quick --set collectives.compression=bf16 --set collectives.compression_feedback=yes \
    --set train.checkpoint_dir=fb job.ini || { cat out.q; fail "feedback run with checkpoints"; }
timeout 60 "$DTCTL" run -n 2 --resume --set collectives.compression=bf16 \
    --set collectives.compression_feedback=yes --set train.checkpoint_dir=fb \
    --set train.max_steps=5 job.ini >out.q 2>&1 || { cat out.q; fail "feedback resume"; }
grep -q "compression_feedback: the ranks' residuals are not in the checkpoint and start at zero" out.q ||
    { cat out.q; fail "a resume with compression_feedback does not say the residuals start at zero"; }
quick --set train.mode=async --set collectives.compression=bf16 job.ini || { cat out.q; fail "async run"; }
grep -q "compression = bf16 does not apply to \[train\] mode = async" out.q ||
    { cat out.q; fail "compression in async not warned"; }
grep -q "collectives: compression bf16" out.q &&
    { cat out.q; fail "async: a worker claims (or discusses) compression dtctl said does not apply"; }
# one host, shm = auto: every collective goes through shared memory
quick --set collectives.shm=auto --set collectives.compression=bf16 job.ini || { cat out.q; fail "shm run"; }
grep -q "collectives: compression bf16 has no effect in this job: its 2 ranks are on one host" out.q ||
    { cat out.q; fail "shm = auto on one host: not said that compression does nothing"; }
grep -q "over the transport in 16 bits, reduced" out.q && { cat out.q; fail "shm = auto on one host: claims compression"; }
exit 0
