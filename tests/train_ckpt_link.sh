#!/bin/sh
# train_ckpt_link.sh — a [train] checkpoint_dir given through a symbolic
# link is followed once, at the job's start: the link swapped to another
# directory mid-run (while rank 0 holds in a rollback, after checkpoints
# were written: the hook DT_TEST_ROLLBACK_HOLD) moves nothing, the
# rollback's reading, the checkpoints after it, their pruning and the lock
# stay in the directory the job started with, and the start names both
# paths. The checks looked at the link's target, but every write went
# through the link as typed: after a swap the checkpoints went wherever
# whoever swapped it chose.
name=ckpt-link
. "$top_srcdir/tests/train_common.sh"
real=$(pwd -P) || exit 99

cat >job.ini <<'INI'
[train]
seed = 1
epochs = 1
batch_size = 16
lr = 0.05
device = cpu
log_every = 1
checkpoint_dir = link
checkpoint_every = 2steps
checkpoint_keep = 4
on_divergence = halve_lr
[model]
layers = flatten linear(16) relu linear(10)
[data]
train_samples = 320
test_samples = 32
INI
mkdir orig other && ln -s orig link || exit 99

# Once rank 0 chose its checkpoint: the link now leads to `other`
# (renamed over, as an attacker or a user re-pointing it would).
( i=0; while [ ! -f hold.chosen ] && [ $i -lt 1200 ]; do
      sleep 0.1; i=$((i + 1)); done
  ln -s other link.new && mv -T link.new link
  touch hold ) &
DT_TEST_NAN_AT=5 DT_TEST_ROLLBACK_HOLD="$tmp/hold" timeout 120 "$DTCTL" run \
    -n 2 job.ini >out 2>&1 || { cat out; fail "the job failed"; }
wait
[ "$(readlink link)" = other ] || { cat out; fail "the link was not swapped"; }

grep -qF "[train] checkpoint_dir link (-> $real/orig): a symbolic link on the way, followed once: this job's checkpoints and its lock go to $real/orig" out ||
    { cat out; fail "the start does not name the link and its target"; }
grep -q "back to the checkpoint of step 4 with lr x0.5" out ||
    { cat out; fail "no rollback to step 4"; }
grep -qF "resuming from $real/orig/ckpt-000000000004.dtckpt" out ||
    { cat out; fail "the rollback did not read step 4's checkpoint in orig"; }
# the steps after the swap (6, 8, the last: 10) went to orig, pruning
# kept 4 there; nothing at all in other
for s in 4 6 8 10; do
    f=orig/ckpt-$(printf %012d $s).dtckpt
    [ -f "$f" ] || { ls -la orig other; cat out; fail "$f missing"; }
done
set -- orig/ckpt-*.dtckpt
[ $# -eq 4 ] || { ls -la orig; fail "checkpoint_keep = 4 did not prune orig to 4"; }
[ -f orig/.dt-lock ] || fail "the lock is not in orig"
[ -z "$(ls -A other)" ] || { ls -la other; cat out; fail "files written into other"; }
echo "PASS"
