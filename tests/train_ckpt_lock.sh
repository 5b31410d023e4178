#!/bin/sh
# train_ckpt_lock.sh — one job per [train] checkpoint_dir: a second job
# on the directory of a running one is refused at start, naming the
# directory and the holder (pid, host, start time); once the first is
# killed with kill -9 (no handler runs: the kernel drops its flock), a
# --resume on the directory works. Two jobs in one directory deleted each
# other's temporary files ("cannot rename .../.ckpt-tmp-...") and lost
# checkpoints.
name=ckpt-lock
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 40
batch_size = 16
lr = 0.02
device = cpu
log_every = 1000
checkpoint_steps = 10
[model]
layers = flatten linear(32) relu linear(10)
[data]
train_samples = 2000
test_samples = 200
INI
run() { timeout 120 "$DTCTL" run -n 2 --set train.checkpoint_dir=ck "$@"; }

# Job A, slowed (rank 1 computes 20x slower) so that it runs on; dtctl
# itself in the background (not under timeout) to be killed below.
a= pid=
trap 'kill -9 $a $pid 2>/dev/null; rm -rf "$tmp"' EXIT
DT_TEST_SLOW_RANK=1 DT_TEST_SLOW_FACTOR=20 "$DTCTL" run -n 2 \
    --set train.checkpoint_dir=ck job.ini >a.out 2>a.err &
a=$!
n=0
until ls ck/ckpt-*.dtckpt >/dev/null 2>&1; do
    kill -0 $a 2>/dev/null || fail "job A ended early: $(cat a.err)"
    n=$((n + 1)); [ $n -lt 1200 ] || fail "job A wrote no checkpoint in 60 s"
    sleep 0.05
done

# Job B on the same directory, as --resume: refused, naming it and A's
# rank 0 as the lock file records it.
run --resume job.ini >b.out 2>b.err; rc=$?
[ $rc -ne 0 ] || fail "job B ran beside job A: $(cat b.err)"
holder=$(cat ck/.dt-lock 2>/dev/null)
pid=$(echo "$holder" | sed -n 's/^pid \([0-9]*\) on .* since .*/\1/p')
[ -n "$pid" ] && kill -0 "$pid" ||
    fail "the lock file does not name job A's live rank 0: '$holder'"
grep -qF "checkpoint_dir ck is in use by another job ($holder;" b.err ||
    fail "job B's refusal does not name ck and '$holder': $(cat b.err)"
kill -0 $a 2>/dev/null || fail "job A ended when B was refused: $(cat a.err)"
grep -F "in use by another job" b.err  # into the log

# kill -9 of dtctl and of A's rank 0 (the lock's holder): nothing is
# left to unlock, yet the next --resume must run.
kill -9 $a "$pid"
wait $a 2>/dev/null
run --resume --set train.max_steps=1 job.ini >c.out 2>c.err ||
    fail "--resume after kill -9 of job A failed: $(cat c.err)"
grep -q "in use by another job" c.err && fail "stale lock refused: $(cat c.err)"
echo "ok: a second job on checkpoint_dir is refused; --resume after kill -9 runs"
exit 0
