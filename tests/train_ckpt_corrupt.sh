#!/bin/sh
# train_ckpt_corrupt.sh — a corrupt newer checkpoint that --resume goes
# past is set aside as NAME.corrupt, kept byte for byte, and said once
# (rank 0's word, on 2 workers). It was left under its name, and the run's
# own checkpoint of that step was then renamed over it, destroying what a
# user may want back by hand or show in a storage bug report. A second
# one of the same step goes to NAME.corrupt.1, never over the first; the
# set-aside files are never resumed from nor pruned. dtctl's automatic
# restart over only corrupt checkpoints sets them aside too before it
# starts over; a plain --resume over only corrupt ones stops, leaving
# them where they are.
name=ckpt-corrupt
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 2
batch_size = 16
lr = 0.02
device = cpu
log_every = 1000
checkpoint_dir = ck
[model]
layers = flatten linear(16) relu linear(10)
[data]
train_samples = 320
test_samples = 64
INI
run() { timeout 120 "$DTCTL" run -n 2 "$@"; }
# one byte of the file changed: its checksum no longer matches
spoil() { printf 'X' | dd of="$1" bs=1 seek=100 conv=notrunc 2>/dev/null; }
sum() { cksum <"$1"; }

run job.ini >out 2>&1 || fail "the first job failed: $(cat out)"
newest=ck/ckpt-000000000020.dtckpt
[ -f ck/ckpt-000000000010.dtckpt ] && [ -f $newest ] ||
    fail "want checkpoints at steps 10 and 20: $(ls ck)"

# ---- the first corrupt one: set aside, then the run writes step 20 again
spoil $newest || exit 99
bad1=$(sum $newest)
run --resume job.ini >out 2>&1 || fail "resume past the corrupt $newest failed: $(cat out)"
grep -q "resuming from ck/ckpt-000000000010.dtckpt" out ||
    fail "did not resume from step 10: $(cat out)"
said="warning: ck/ckpt-000000000020.dtckpt did not verify (see above): set aside as $newest.corrupt, which --resume never picks"
[ "$(grep -c "did not verify (see above): set aside" out)" -eq 1 ] && grep -qF "$said" out ||
    fail "the set-aside file is not named once (by rank 0): $(cat out)"
[ -f $newest.corrupt ] && [ "$(sum $newest.corrupt)" = "$bad1" ] ||
    fail "the corrupt file was not kept as $newest.corrupt: $(ls ck)"
[ -f $newest ] && [ "$(sum $newest)" != "$bad1" ] ||
    fail "the resumed run did not write its own step 20: $(ls ck)"
"$compare" $newest $newest >/dev/null 2>&1 || fail "the new $newest does not verify"

# ---- a second corrupt one of the same step: .corrupt.1, the first kept;
# checkpoint_keep = 1 deletes neither (they are not in the series)
spoil $newest || exit 99
bad2=$(sum $newest)
run --resume --set train.checkpoint_keep=1 job.ini >out 2>&1 ||
    fail "the second resume failed: $(cat out)"
grep -qF "set aside as $newest.corrupt.1," out ||
    fail "the second corrupt file is not named as $newest.corrupt.1: $(cat out)"
[ "$(sum $newest.corrupt)" = "$bad1" ] && [ "$(sum $newest.corrupt.1)" = "$bad2" ] ||
    fail "the set-aside files were overwritten: $(ls -l ck)"
got=$(cd ck && ls | grep -v '^\.' | tr '\n' ' ')
[ "$got" = "ckpt-000000000020.dtckpt ckpt-000000000020.dtckpt.corrupt ckpt-000000000020.dtckpt.corrupt.1 " ] ||
    fail "checkpoint_keep = 1 left '$got'"
# they are never resumed from: the good step 20 is the end of training
run --resume job.ini >out 2>&1 || fail "the third resume failed: $(cat out)"
grep -q "resuming from $newest: written at the end of training" out &&
    ! grep -q "set aside" out || fail "the third resume: $(cat out)"

# ---- only corrupt ones: --resume stops and leaves them; dtctl's automatic
# restart sets them aside before it starts over
mkdir bad && cp $newest bad/ && spoil bad/ckpt-000000000020.dtckpt || exit 99
bad3=$(sum bad/ckpt-000000000020.dtckpt)
run --resume --set train.checkpoint_dir=bad job.ini >out 2>&1 &&
    fail "--resume over only a corrupt checkpoint started over: $(cat out)"
[ "$(sum bad/ckpt-000000000020.dtckpt)" = "$bad3" ] && [ ! -e bad/ckpt-000000000020.dtckpt.corrupt ] ||
    fail "a refused --resume moved the corrupt file: $(ls bad)"
DT_RESTART_COUNT=1 DT_TRAIN_RESUME=yes DT_TRAIN_CHECKPOINT_DIR=bad \
    timeout 120 "$top_builddir/core/dt-train" job.ini >out 2>&1 ||
    fail "an automatic restart over a corrupt checkpoint failed: $(cat out)"
grep -qF "set aside as bad/ckpt-000000000020.dtckpt.corrupt," out &&
    [ "$(sum bad/ckpt-000000000020.dtckpt.corrupt)" = "$bad3" ] &&
    [ -f bad/ckpt-000000000020.dtckpt ] && [ "$(sum bad/ckpt-000000000020.dtckpt)" != "$bad3" ] ||
    fail "the restart did not keep the corrupt file aside: $(ls bad) $(cat out)"
echo "ok: corrupt checkpoints --resume goes past are kept as NAME.corrupt(.N), never overwritten"
exit 0
