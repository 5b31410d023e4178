#!/bin/sh
# train_batchnorm.sh — batchnorm in data-parallel jobs, for real (dtctl run
# -n 2, a small ResNet on a Fashion-MNIST subset): the running statistics,
# different on each rank after training on different data, are rank 0's on
# every rank before each evaluation; checkpoints hold them, and a job
# stopped mid-epoch and resumed ends bit-identical (parameters, optimizer
# state and running statistics); sync_bn keeps them identical without the
# broadcast and makes N=2 x B match N=1 x 2B; a checkpoint without them
# (an older dt) or with another count is refused for a model with
# batchnorm, and still loads for a model without.
name=bn
. "$top_srcdir/tests/train_common.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

# 2000 training samples, 2 workers x batch 16: 63 steps per epoch.
cat >job.ini <<'INI'
[train]
seed = 5
epochs = 2
batch_size = 16
lr = 0.05
optimizer = sgd
device = cpu
log_every = 50
[optimizer.sgd]
momentum = 0.9
[model]
layers = conv(8,3,stride=2,pad=1,bias=no) batchnorm relu stage(basic,8,1) gap flatten linear(10)
[data]
mean = 0.286
std = 0.353
train_samples = 2000
test_samples = 500
INI

run() { timeout 300 "$DTCTL" run "$@" >>"$tmp/out" 2>&1; }

# Rewrite a checkpoint: drop section 5 (BUFFERS), as an older dt wrote it,
# or keep only its first N floats; the checksum is recomputed.
cat >edit.py <<'PY'
import hashlib, struct, sys
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
b = open(src, 'rb').read()[:-32]
magic, ver, nsec, step = b[:8], *struct.unpack('<IIQ', b[8:24])
out, at, kept = [], 24, 0
for _ in range(nsec):
    tag, _z, n = struct.unpack('<IIQ', b[at:at + 16])
    body = b[at + 16:at + 16 + n]
    at += 16 + n + (8 - n % 8) % 8
    if tag == 5:
        if mode == 'drop':
            continue
        body = body[:4 * int(mode)]
    out.append(struct.pack('<IIQ', tag, 0, len(body)) + body +
               b'\0' * ((8 - len(body) % 8) % 8))
head = magic + struct.pack('<IIQ', ver, len(out), step)
data = head + b''.join(out)
open(dst, 'wb').write(data + hashlib.sha256(data).digest())
PY

# ---- training on different data: rank 0's statistics everywhere -----------
run -n 2 -v --set train.checkpoint_dir=a job.ini ||
    { cat out; fail "training failed"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
echo "accuracy after 126 steps on 2000 samples: $acc%"
awk -v a="$acc" 'BEGIN { exit !(a >= 40.0) }' ||
    { cat out; fail "accuracy '$acc' is not above 40% (chance is 10%)"; }
# "rank R: batchnorm running statistics <own>, rank 0's <after> (N floats)"
grep "rank [01]: batchnorm running statistics" out >sync.txt
[ "$(grep -c 'rank 1: batchnorm' sync.txt)" -ge 2 ] ||
    { cat out; fail "no buffer synchronization before evaluations"; }
awk '{ own = $(NF-5); after = $(NF-2); sub(/,$/, "", own)
       if ($0 ~ /rank 0: /) { if (own != after) bad = 1; r0[++n0] = after }
       else { if (own != after) differed++; r1[++n1] = after } }
     END { if (bad || n0 != n1) exit 1
           for (i = 1; i <= n0; i++) if (r0[i] != r1[i]) exit 1
           if (!differed) exit 2 }' sync.txt
case $? in
0) ;;
2) cat sync.txt; fail "rank 1's statistics always equalled rank 0's before the sync: not different data?" ;;
*) cat sync.txt; fail "the ranks' running statistics differ after the sync" ;;
esac
final=a/ckpt-000000000126.dtckpt
[ -f "$final" ] || { ls a; fail "no final checkpoint $final"; }
cp "$final" full.dtckpt

# ---- stopped mid-epoch, resumed: bit-identical, running statistics too ----
: >out
run -n 2 --set train.checkpoint_dir=b --set train.checkpoint_every=20steps \
    --set train.max_steps=90 job.ini || { cat out; fail "first half"; }
run -n 2 --resume --set train.checkpoint_dir=b job.ini ||
    { cat out; fail "resume failed"; }
grep -q "resuming from .*ckpt-000000000090.dtckpt" out ||
    { cat out; fail "did not resume from step 90"; }
"$compare" full.dtckpt b/ckpt-000000000126.dtckpt ||
    fail "resumed run differs from the uninterrupted one"

# ---- checkpoints without the running statistics, or with another count ----
python3 edit.py b/ckpt-000000000090.dtckpt old.dtckpt drop
mkdir old && cp old.dtckpt old/ckpt-000000000090.dtckpt
: >out
run -n 2 --resume --set train.checkpoint_dir=old job.ini &&
    { cat out; fail "a checkpoint without batchnorm statistics was resumed"; }
grep -q "checkpoint .*ckpt-000000000090.dtckpt has no batchnorm running statistics (written by an older dt)" out ||
    { cat out; fail "the old checkpoint was not refused clearly"; }
mkdir short && python3 edit.py b/ckpt-000000000090.dtckpt \
    short/ckpt-000000000090.dtckpt 12
: >out
run -n 2 --resume --set train.checkpoint_dir=short job.ini &&
    { cat out; fail "a checkpoint with 12 buffer floats was resumed"; }
grep -q "holds 12 buffer floats (batchnorm running statistics) but \[model\] layers gives 48" out ||
    { cat out; fail "the buffer count mismatch was not named"; }
# Without batchnorm an old checkpoint (no section) still resumes.
mlp="model.layers=flatten linear(32) relu linear(10)"
run -n 1 --set train.checkpoint_dir=m --set train.max_steps=10 --set "$mlp" \
    job.ini || { cat out; fail "MLP run"; }
mkdir mold && python3 edit.py m/ckpt-000000000010.dtckpt \
    mold/ckpt-000000000010.dtckpt drop
: >out
run -n 1 --resume --set train.checkpoint_dir=mold --set train.max_steps=12 \
    --set "$mlp" job.ini || { cat out; fail "an old MLP checkpoint was refused"; }
grep -q "resuming from .*ckpt-000000000010.dtckpt" out ||
    { cat out; fail "the old MLP checkpoint was not resumed"; }

# ---- sync_bn: the same statistics on every rank, N=2 x B == N=1 x 2B ------
: >out
run -n 1 --set train.batch_size=32 --set train.checkpoint_dir=s1 \
    --set train.max_steps=20 job.ini || { cat out; fail "N=1 run"; }
run -n 2 -v --set train.checkpoint_dir=s2 --set model.sync_bn=yes \
    --set train.max_steps=20 job.ini ||
    { cat out; fail "N=2 sync_bn run"; }
grep -q "sync_bn: batchnorm statistics over the global batch of 2 workers" out ||
    { cat out; fail "sync_bn not announced"; }
grep "rank 1: batchnorm running statistics" out >sync.txt
[ -s sync.txt ] || { cat out; fail "no buffer sync line"; }
awk '{ own = $(NF-5); sub(/,$/, "", own); if (own != $(NF-2)) exit 1 }' \
    sync.txt || { cat sync.txt; fail "sync_bn: the ranks' statistics differed"; }
"$compare" s1/ckpt-000000000020.dtckpt s2/ckpt-000000000020.dtckpt 2e-4 ||
    fail "sync_bn: N=1 batch 32 and N=2 batch 16 differ after 20 steps"
run -n 2 --set train.checkpoint_dir=p2 --set train.max_steps=20 \
    job.ini || { cat out; fail "N=2 per-rank run"; }
differ s1/ckpt-000000000020.dtckpt p2/ckpt-000000000020.dtckpt 2e-4 ||
    fail "per-rank statistics matched N=1: sync_bn tests nothing"
echo "PASS"
