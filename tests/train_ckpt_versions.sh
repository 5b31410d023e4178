#!/bin/sh
# train_ckpt_versions.sh — checkpoints of other dt versions, made here by
# rewriting one this dt wrote (checksum recomputed): an older progress
# record (META versions 1, 3 and 5, with the sections those versions
# lacked left out) resumes to the same bits as the file it was made from;
# a newer dt's (META version 7, or checkpoint format version 2) is refused
# naming the file and what wrote it, exit 65 (a restart would refuse it
# alike), and --resume does not go back to an older checkpoint past it.
# Before, a newer progress record was read as far as this dt knew it
# (silently, whatever its new fields meant) and a newer format was called
# corrupt, skipped, and an older checkpoint resumed in its place.
name=ckpt-versions
. "$top_srcdir/tests/train_common.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

# 1000 training samples, 2 workers x batch 16: 32 steps per epoch;
# max_steps stops inside epoch 2.
cat >job.ini <<'INI'
[train]
seed = 7
epochs = 3
batch_size = 16
lr = 0.05
optimizer = sgd
device = cpu
log_every = 1000
[optimizer.sgd]
momentum = 0.9
[model]
layers = flatten linear(32) relu linear(10)
[data]
train_samples = 1000
test_samples = 200
INI
run() { timeout 120 "$DTCTL" run -n 2 "$@" job.ini >out 2>&1; }

# remeta.py IN OUT META_VERSION [FIELDS|-] [FORMAT|-] [DROP_TAGS]: META's
# version (and length, in u64 fields), the file's format version, sections
# dropped (5 BUFFERS, 6 WORK_LOAD, 8 MODEL: absent before they existed).
cat >remeta.py <<'PY'
import hashlib, struct, sys
src, dst, mver = sys.argv[1], sys.argv[2], int(sys.argv[3])
arg = lambda i: sys.argv[i] if len(sys.argv) > i and sys.argv[i] != '-' else None
nf, fver, drop = arg(4), arg(5), arg(6)
drop = [int(x) for x in drop.split(',')] if drop else []
d = open(src, 'rb').read()[:-32]
ver, n, step = struct.unpack('<IIQ', d[8:24])
out, off = [], 24
for _ in range(n):
    tag, z, ln = struct.unpack('<IIQ', d[off:off + 16])
    body = d[off + 16:off + 16 + ln]
    off += 16 + ln + (8 - ln % 8) % 8
    if tag in drop:
        continue
    if tag == 1:
        f = list(struct.unpack('<%dQ' % (ln // 8), body))
        f[0] = mver
        if nf:
            f = (f + [0] * int(nf))[:int(nf)]
        body = struct.pack('<%dQ' % len(f), *f)
    out.append(struct.pack('<IIQ', tag, z, len(body)) + body +
               b'\0' * ((8 - len(body) % 8) % 8))
data = d[:8] + struct.pack('<IIQ', int(fver) if fver else ver, len(out),
                           step) + b''.join(out)
open(dst, 'wb').write(data + hashlib.sha256(data).digest())
PY

run --set train.checkpoint_dir=a --set train.max_steps=40 ||
    { cat out; fail "the first run failed"; }
ck=ckpt-000000000040.dtckpt
[ -f a/$ck ] || { ls a; cat out; fail "no checkpoint at max_steps"; }
last=ckpt-000000000096.dtckpt
cp -r a ref
run --resume --set train.checkpoint_dir=ref ||
    { cat out; fail "resuming this dt's own checkpoint failed"; }
[ -f ref/$last ] || { ls ref; cat out; fail "the reference resume wrote no $last"; }

# Older progress records resume, to the same bits.
for v in "1 12 - 5,6,8" "3 15 - 6,8" "5 19 - 8"; do
    set -- $v
    rm -rf old && mkdir old && python3 remeta.py a/$ck old/$ck "$@" ||
        fail "remeta.py $*"
    run --resume --set train.checkpoint_dir=old ||
        { cat out; fail "META version $1 (an older dt's) was refused"; }
    "$compare" ref/$last old/$last >/dev/null ||
        { cat out; fail "META version $1 resumed to other parameters than the file it was made from"; }
done

# A newer dt's progress record: refused, nothing trained or written.
rm -rf new && mkdir new && python3 remeta.py a/$ck new/$ck 7 21 ||
    fail "remeta.py 7"
run --resume --set train.checkpoint_dir=new; rc=$?
[ $rc -eq 65 ] || { cat out; fail "META version 7 (a newer dt's): want exit 65, got $rc"; }
grep -q "new/$ck was written by a newer dt (its progress record is version 7; this dt reads versions 1 to 6): resume it with that dt version or a later one; this one can only start afresh (without --resume, or with another checkpoint_dir)" out ||
    { cat out; fail "META version 7: not refused naming the file and the version"; }
[ "$(ls new)" = "$ck" ] || { ls new; cat out; fail "META version 7: the refused job wrote checkpoints"; }
grep -q "rerun with --resume" out &&
    { cat out; fail "META version 7: dtctl advises --resume, which refused it"; }

# A newer format beside an older checkpoint of this dt's: refused, and
# the older one is not resumed in its place.
rm -rf fmt && mkdir fmt && cp a/ckpt-000000000032.dtckpt fmt/ &&
    python3 remeta.py a/$ck fmt/$ck 6 - 2 || fail "remeta.py format 2"
run --resume --set train.checkpoint_dir=fmt; rc=$?
[ $rc -eq 65 ] || { cat out; fail "format version 2 (a newer dt's): want exit 65, got $rc"; }
grep -q "fmt/$ck was written by a newer dt (checkpoint format version 2; this dt reads version 1): resume it with that dt version or a later one" out ||
    { cat out; fail "format version 2: not said as a newer dt's"; }
grep -q "corrupt\|resuming from" out &&
    { cat out; fail "format version 2: called corrupt, or an older checkpoint resumed past it"; }
[ "$(ls fmt | wc -l)" -eq 2 ] || { ls fmt; cat out; fail "format version 2: the refused job wrote checkpoints"; }
echo "PASS"
