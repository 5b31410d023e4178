#!/bin/sh
# train_ckpt_lock.sh — one job per [train] checkpoint_dir: a second job
# on the directory of a running one is refused at start, naming the
# directory and the holder (pid, host, start time); once the first is
# killed with kill -9 (no handler runs: the kernel drops its flock), a
# --resume on the directory works. Two jobs in one directory deleted each
# other's temporary files ("cannot rename .../.ckpt-tmp-...") and lost
# checkpoints. A restart whose rank 0 finds the lock still held waits
# for it (the previous attempt's rank 0 may still be ending).
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

# dtctl's restart whose rank 0 finds the lock still held waits for it (up
# to [cluster] timeout) instead of failing at once with 65, which dtctl
# does not restart: on a host dtctl lost (its link down) the previous
# attempt's rank 0 ends only at its own timeout, and the elastic restart
# on the other hosts gave up. The stand-in for that rank 0: flock(1),
# queued on the lock while attempt 0 runs, so that it holds the lock from
# the moment attempt 0's rank 0 ends until attempt 1 says it waits.
rm -rf ck held release
DT_TEST_SLOW_RANK=1 DT_TEST_SLOW_FACTOR=20 "$DTCTL" run -n 2 --max-restarts 1 \
    --set cluster.restart_backoff=1s --set train.max_steps=3000 \
    --set train.checkpoint_dir=ck job.ini >d.out 2>d.err &
a=$!
n=0
until ls ck/ckpt-*.dtckpt >/dev/null 2>&1; do
    kill -0 $a 2>/dev/null || fail "job D ended early: $(cat d.err)"
    n=$((n + 1)); [ $n -lt 1200 ] || fail "job D wrote no checkpoint in 60 s"
    sleep 0.05
done
flock ck/.dt-lock sh -c 'touch held; until [ -f release ]; do sleep 0.05; done' &
h=$!
trap 'kill -9 $a $pid $h 2>/dev/null; rm -rf "$tmp"' EXIT
# (dtctl may be libtool's wrapper script: the workers are then its
# child's children.)
rank1=$(for p in $(pgrep -P $a) $(for c in $(pgrep -P $a); do pgrep -P "$c"; done); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx DT_RANK=1 && echo "$p"
done | head -n 1)
[ -n "$rank1" ] || fail "job D's rank 1 not found"
kill -9 "$rank1"
n=0
until grep -q "checkpoint_dir ck is still locked" d.err; do
    kill -0 $a 2>/dev/null || fail "the restart did not wait for the lock: $(cat d.err)"
    n=$((n + 1)); [ $n -lt 1200 ] || fail "no restart waited for the lock in 60 s: $(cat d.err)"
    sleep 0.05
done
[ -f held ] || fail "the stand-in holder did not take the lock"
touch release
wait $h
wait $a; rc=$?
[ $rc -eq 0 ] || fail "the restart that waited for the lock ended with $rc: $(cat d.err)"
grep -q "info: resuming from ck/ckpt-" d.err ||
    fail "the restart did not resume: $(cat d.err)"
grep -F "is still locked" d.err  # into the log
echo "ok: a restart waits for the lock the previous attempt's rank 0 still holds, then resumes"
exit 0
