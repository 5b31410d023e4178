#!/bin/sh
# linger_after_finalize.sh — a dt-train rank stuck after dt_finalize
# (training ended on every rank; rank 1 stops itself once dt_finalize
# returned: the DT_TEST_STOP_AFTER_FINALIZE hook, as a stopped process or
# a transport's shutdown hung would) is named and stopped [cluster]
# timeout after the first rank exited, and the job keeps its success
# (exit 0). dtctl waited for it without bound. `timeout -s KILL` only
# guards a hang.
name=linger
. "$top_srcdir/tests/train_common.sh"

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 1
batch_size = 32
device = cpu
[model]
layers = flatten linear(16) relu linear(10)
[data]
train_samples = 256
test_samples = 64
INI

DT_TEST_STOP_AFTER_FINALIZE=1 timeout -s KILL 120 "$DTCTL" run -n 3 \
    --set cluster.timeout=3s --set cluster.kill_grace=1s job.ini >out 2>&1
rc=$?
grep -q "rank 1 (pid [0-9]*) stops (SIGSTOP) after dt_finalize" out ||
    { cat out; fail "rank 1 did not stop after dt_finalize"; }
[ "$rc" -eq 0 ] || { cat out; fail "dtctl exited $rc, want 0 (training ended on every rank)"; }
grep -q "^dt: warning: rank 1 still running 3 s after every rank reached dt_finalize" out ||
    { cat out; fail "dtctl did not name rank 1 as stuck after dt_finalize"; }
grep -q "final test accuracy" out || { cat out; fail "no final accuracy line"; }
pid=$(sed -n 's/.*rank 1 (pid \([0-9]*\)) stops.*/\1/p' out)
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; fail "rank 1 (pid $pid) is left running"; }
echo "ok: a rank stuck after dt_finalize named and stopped; exit 0"

exit 0
