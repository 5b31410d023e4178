#!/bin/sh
# train_async.sh — [train] mode = async: 2 workers + 1 parameter server
# train the Fashion-MNIST MLP on a subset far above chance (> 70%); max_staleness
# holds a worker that ran ahead of a slowed one (the server's count of
# held replies, and the largest lead it answered, within the bound); a
# server killed with SIGKILL is named by dtctl (and, with --max-restarts,
# the job restarts from the last checkpoint and finishes); a checkpoint written by
# the servers' shards resumes, in async and in sync mode; 2 servers shard
# adam's state; bad settings are refused before anything starts.
name=async
. "$top_srcdir/tests/train_common.sh"

# 4000 training samples, 2 workers x batch 16: 125 pushes each per epoch.
cat >job.ini <<'INI'
[train]
mode = async
seed = 3
epochs = 1
batch_size = 16
lr = 0.02
optimizer = sgd
device = cpu
log_every = 50
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
run() { timeout 120 "$DTCTL" run "$@" >out 2>&1; }

# ---- refused before any worker starts --------------------------------------
run -n 2 --set train.mode=asink job.ini && fail "mode = asink accepted"
grep -q "\[train\] mode = 'asink': use sync or async" out || { cat out; fail "bad mode message"; }
run -n 2 --set cluster.servers=0 job.ini && fail "servers = 0 accepted"
grep -q "\[cluster\] servers = 0" out || { cat out; fail "servers = 0 message"; }
run -n 2 --set train.max_staleness=-1 job.ini && fail "max_staleness -1 accepted"
grep -q "max_staleness = -1" out || { cat out; fail "max_staleness message"; }
run -n 2 --set train.clip_grad_norm=1 job.ini && fail "clipping accepted in async"
grep -q "mode = async does not support clip_grad" out || { cat out; fail "clip message"; }
grep -q "^\[" out && { cat out; fail "workers were started"; }

# ---- 1 epoch: far above chance ---------------------------------------------
# 8000 samples: 250 pushes per worker, each applied at lr / 2 (the same
# job in sync mode applies lr to the average of 2 batches).
# max_staleness = 1 keeps the workers interleaved however the scheduler
# runs them (79-81% seen).
run -n 2 --set data.train_samples=8000 --set train.max_staleness=1 job.ini || { cat out; fail "async training failed"; }
grep -q "async: 2 workers and 1 parameter server (ranks 2..2)" out || { cat out; fail "no layout line"; }
grep -q "parameter server 0 (rank 2): 500 pushes applied from 2 workers" out ||
    { cat out; fail "the server did not apply 500 pushes"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
echo "async accuracy after 1 epoch on 8000 samples: $acc%"
awk -v a="$acc" 'BEGIN { exit !(a >= 70.0) }' ||
    { cat out; fail "accuracy '$acc' is not above 70% (chance is 10%)"; }

# ---- push_overlap: every push still applied, training far above chance ----
# The last push of each worker is still in flight when its loop ends: it
# must complete before DONE (500 applied, not 498). One push staler, so
# a lower floor (68-75% seen here, against 79% without overlap).
run -n 2 --set data.train_samples=8000 --set train.max_staleness=1 \
    --set train.push_overlap=yes job.ini || { cat out; fail "push_overlap run failed"; }
grep -q "parameter server 0 (rank 2): 500 pushes applied from 2 workers" out ||
    { cat out; fail "push_overlap: the server did not apply all 500 pushes"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
echo "push_overlap = yes: $acc% after 1 epoch"
awk -v a="$acc" 'BEGIN { exit !(a >= 50.0) }' ||
    { cat out; fail "push_overlap: accuracy '$acc' is not above 50%"; }

# ---- max_staleness = 2 with worker 1 slowed 20x ----------------------------
DT_TEST_SLOW_RANK=1 DT_TEST_SLOW_FACTOR=20 \
    run -n 2 --set train.max_staleness=2 job.ini || { cat out; fail "staleness run"; }
line=$(grep "parameter server 0 (rank 2): 250 pushes" out)
echo "$line"
held=$(echo "$line" | sed -n 's/.*max_staleness 2: \([0-9]*\) replies held, largest lead answered \([0-9]*\).*/\1 \2/p')
[ -n "$held" ] || { cat out; fail "no staleness summary"; }
set -- $held
[ "$1" -gt 0 ] || { cat out; fail "worker 0 was never held (held $1)"; }
[ "$2" -le 2 ] || { cat out; fail "a reply went out $2 pushes ahead (bound 2)"; }

# ---- a killed server is named ----------------------------------------------
DT_TEST_PS_DIE_AFTER=40 run -n 2 job.ini && { cat out; fail "survived a dead server"; }
# dtctl's own line (workers' lines about the lost peer may come after it)
grep -q "^dt: error: rank 2 (parameter server 0) on localhost was killed by signal 9" out ||
    { cat out; fail "dtctl did not name the killed server"; }
# ... and with restarts, the job starts again from the servers' last
# checkpoint (the hook kills only in the first attempt) and finishes
DT_TEST_PS_DIE_AFTER=140 run -n 2 --max-restarts 1 --set cluster.restart_backoff=100ms \
    --set train.checkpoint_dir=ck_restart --set train.checkpoint_steps=50 job.ini ||
    { cat out; fail "a killed server was not restarted"; }
grep -q "restart 1 of 1: rank 2 (parameter server 0) on localhost was killed by signal 9" out ||
    { cat out; fail "the restart did not name the killed server"; }
# (which checkpoint depends on timing: step 50, 100, or 125 where worker 0
# finished its epoch before the server died, and the restart then only
# evaluates it; the name has 12 digits)
grep -q "resuming from ck_restart/ckpt-[0-9]\{12\}\.dtckpt" out || { cat out; fail "the restart did not resume"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
awk -v a="$acc" 'BEGIN { exit !(a >= 70.0) }' || { cat out; fail "restarted accuracy '$acc'"; }

# ---- checkpoints: 2 servers, adam's sharded state, resumed -----------------
run -n 2 --set cluster.servers=2 --set train.optimizer=adam \
    --set train.lr=0.002 --set train.checkpoint_dir=ck \
    --set train.max_steps=60 job.ini || { cat out; fail "checkpointed run"; }
[ -f ck/ckpt-000000000060.dtckpt ] || { ls ck; fail "no step-60 checkpoint"; }
cp -r ck ck_sync
run -n 2 --set cluster.servers=2 --set train.optimizer=adam \
    --set train.lr=0.002 --set train.checkpoint_dir=ck --resume job.ini ||
    { cat out; fail "async resume"; }
grep -q "resuming from ck/ckpt-000000000060.dtckpt" out || { cat out; fail "did not resume"; }
grep -q "fresh optimizer state" out && { cat out; fail "the sharded optimizer state was not restored"; }
acc=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
awk -v a="$acc" 'BEGIN { exit !(a >= 70.0) }' || { cat out; fail "resumed accuracy '$acc'"; }
# resumed once more: that run's last checkpoint is the end of training;
# rank 0 evaluates the servers' parameters, the job ends with them
run -n 2 --set cluster.servers=2 --set train.optimizer=adam \
    --set train.lr=0.002 --set train.checkpoint_dir=ck --resume job.ini ||
    { cat out; fail "async resume at the end"; }
grep -q "nothing left to train; evaluating it" out || { cat out; fail "async resume at the end not said"; }
# (not the accuracy the run that ended there said: rank 0 evaluated
# while the other worker's last pushes could still land, the checkpoint
# holds the servers' parameters after them)
acc2=$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' out)
awk -v a="$acc2" 'BEGIN { exit !(a >= 70.0) }' || { cat out; fail "accuracy at the end '$acc2'"; }
run -n 2 --set train.mode=sync --set train.optimizer=adam \
    --set train.lr=0.002 --set train.checkpoint_dir=ck_sync --resume job.ini ||
    { cat out; fail "sync resume of an async checkpoint"; }
grep -q "written in \[train\] mode = async: .*fresh optimizer state" out ||
    { cat out; fail "no warning about the servers' optimizer state"; }
echo "PASS"
