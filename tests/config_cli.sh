#!/bin/sh
# config_cli.sh — `dtctl config` end to end: defaults, the precedence of
# job file < environment < --set, and a bad key failing with file:line.
set -u
: "${DTCTL:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-config-cli.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99          # no ./conf/cluster.ini here
unset DT_CONFIG DT_CLUSTER_NP DT_TRANSPORT DT_LAUNCHER DT_STORAGE DT_INTERFACE

fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }
expect() { grep -E -q -- "$1" "$tmp/out" || fail "expected /$1/"; }

# Built-in defaults only.
"$DTCTL" config >"$tmp/out" 2>&1 || fail "dtctl config exited $?"
expect '^launcher = local +# default$'
expect '^np = 1 +# default$'

# A job file, then the environment, then --set: each layer wins over the last.
printf '[cluster]\n# workers\nnp = 4\n' >"$tmp/job.ini"
"$DTCTL" config "$tmp/job.ini" >"$tmp/out" 2>&1 || fail "job file: exit $?"
expect "^np = 4 +# job file \\($tmp/job.ini:3\\)$"
DT_CLUSTER_NP=2 "$DTCTL" config "$tmp/job.ini" >"$tmp/out" 2>&1 || fail "env: exit $?"
expect '^np = 2 +# environment \(DT_CLUSTER_NP\)$'
DT_CLUSTER_NP=2 "$DTCTL" --set cluster.np=3 config "$tmp/job.ini" >"$tmp/out" 2>&1 ||
    fail "--set: exit $?"
expect '^np = 3 +# command line \(--set\)$'
DT_TRANSPORT=tcp "$DTCTL" config >"$tmp/out" 2>&1 || fail "alias: exit $?"
expect '^transport = tcp +# environment \(DT_TRANSPORT\)$'

# The annotated example cluster file loads cleanly.
"$DTCTL" --config "$top_srcdir/conf/cluster.ini" config >"$tmp/out" 2>&1 ||
    fail "conf/cluster.ini does not load"

# A bad key in a job file: non-zero exit and file:line in the message.
printf '[cluster]\nnp = 2\n\n[train]\nepochz = 3\n' >"$tmp/bad.ini"
if "$DTCTL" config "$tmp/bad.ini" >"$tmp/out" 2>&1; then
    fail "a bad key was accepted"
fi
expect "$tmp/bad.ini:5: unknown key 'epochz' in \\[train\\]; valid keys: seed,"

# A badly typed value from --set names the option.
if "$DTCTL" --set cluster.np=many config >"$tmp/out" 2>&1; then
    fail "np=many was accepted"
fi
expect "option --set: \\[cluster\\] np = 'many' is not an integer"

# A missing job file is named.
if "$DTCTL" config "$tmp/nope.ini" >"$tmp/out" 2>&1; then
    fail "a missing job file was accepted"
fi
expect "nope.ini does not exist"

# A misspelt optimizer stops `dtctl run` before anything starts (issue 19
# item 5: it used to fail in every worker after launch), naming the file
# and line and the optimizers there are, lamb and lars among them.
printf '[train]\noptimizer = lamp\n\n[model]\nlayers = flatten linear(10)\n' \
    >"$tmp/opt.ini"
if "$DTCTL" run -n 2 "$tmp/opt.ini" >"$tmp/out" 2>&1; then
    fail "optimizer = lamp was accepted"
fi
expect "$tmp/opt.ini:2: \\[train\\] optimizer = lamp cannot be used; no worker was started"
expect "available optimizers: .*lamb, lars"
if grep -q '^\[[01]\]' "$tmp/out"; then fail "a worker started"; fi
# ... and so does a bad setting of the optimizer (every worker refused it
# after launch, naming its environment variable)
printf '[train]\noptimizer = adam\n[optimizer.adam]\neps = 0\n[model]\nlayers = flatten linear(10)\n' \
    >"$tmp/opt2.ini"
if "$DTCTL" run -n 2 "$tmp/opt2.ini" >"$tmp/out" 2>&1; then
    fail "adam eps = 0 was accepted"
fi
expect "$tmp/opt2.ini:4: \\[optimizer.adam\\] eps = 0 must be in \\(0, 1\\]"
if grep -q '^\[[01]\]' "$tmp/out"; then fail "a worker started (eps = 0)"; fi

# dtctl config summarizes the model for every data set whose shape it
# knows (one table with dtctl run and plan): STL-10's 96x96, CIFAR-100's
# 100 classes (a model ending in linear(10) is refused for it)
"$DTCTL" config --set data.dataset=stl10 "$top_srcdir/conf/examples/cifar10-resnet20.ini" \
    >"$tmp/out" 2>&1 || fail "dtctl config for stl10"
expect "# model for stl10 \\(3x96x96, 10 classes\\):"
if "$DTCTL" config --set data.dataset=cifar100 "$top_srcdir/conf/examples/cifar10-resnet20.ini" \
    >"$tmp/out" 2>&1; then fail "a 10-class model accepted for cifar100"; fi
expect "the model must end in linear\\(100\\)"
# A configuration error is exit 2, as for every other command (dtctl(1));
# a long value is printed whole.
"$DTCTL" config --set train.mode=asynch --set model.layers='flatten linear(10)' \
    --set data.dataset=cifar100 >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a model dtctl config refuses: exit $rc, want 2"
long=$(i=0; while [ $i -lt 60 ]; do printf 'node%03d:8,' $i; i=$((i + 1)); done)
"$DTCTL" config --set "cluster.hosts=${long%,}" >"$tmp/out" 2>&1 || fail "long hosts: exit $?"
expect "node059:8 +# command line"
# An optimizer's keys from the environment are shown and checked (they
# were read by local workers only)
DT_OPTIMIZER_SGD_MOMENTUM=0.9 DT_OPTIMIZER_SGD_MOMENTUMM=1 "$DTCTL" config >"$tmp/out" 2>&1 ||
    fail "optimizer environment: exit $?"
expect "^momentum = 0.9 +# environment \(DT_OPTIMIZER_SGD_MOMENTUM\)"
expect "DT_OPTIMIZER_SGD_MOMENTUMM matches no key of \[optimizer.sgd\]"

# dtctl check runs the checks dtctl run makes of a job: a job run refuses
# does not pass (it said "all checks passed")
cp "$top_srcdir/conf/examples/fashion-mnist-mlp.ini" "$tmp/mlp.ini"
"$DTCTL" check "$tmp/mlp.ini" --set train.mode=asynch >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "dtctl check of a refused job: exit $rc, want 1"
expect "\[train\] mode = 'asynch': use sync or async"
expect "^localhost +job +FAIL +dtctl run would refuse this job"
if [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    "$DTCTL" check "$tmp/mlp.ini" >"$tmp/out" 2>&1 || fail "dtctl check of a good job: exit $?"
    expect "^localhost +job +ok +settings valid for 1 worker"
fi
# dtctl config prints what it was given, then says what dtctl run would
# refuse, with each origin, and exits 2 (it exited 0 for all of these)
for set in train.lr=-1 cluster.min_np=0 collectives.ring_chunk=0 \
    collectives.shm_chunk=1K cluster.transport=tpc cluster.timeout=0; do
    "$DTCTL" config --set "$set" "$tmp/mlp.ini" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "dtctl config --set $set: exit $rc, want 2"
    grep -q "^\[${set%%.*}\]" "$tmp/out" || fail "dtctl config --set $set printed no configuration"
    grep -q "dtctl run would refuse this configuration" "$tmp/err" ||
        fail "dtctl config --set $set: refusal not said: $(cat "$tmp/err")"
done
# ...and a worker's [collectives] error is said by dtctl run, with its
# origin, before any worker starts (every worker said it, without one)
"$DTCTL" run -n 2 --set collectives.ring_chunk=0 "$tmp/mlp.ini" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "dtctl run with ring_chunk 0: exit $rc, want 2"
expect "^dt: error: --set: \[collectives\] ring_chunk must be at least 1 byte"
! grep -q "^\[[01]\]" "$tmp/out" || fail "workers started for ring_chunk 0: $(cat "$tmp/out")"
# fp16 on the wire hides an overflow from fp16 loss scaling: said, not refused
"$DTCTL" config --set collectives.compression=fp16 --set train.precision=fp16 "$tmp/mlp.ini" >/dev/null 2>"$tmp/err" ||
    fail "fp16 compression with fp16 precision refused: $(cat "$tmp/err")"
grep -q "compression = fp16 with \[train\] precision = fp16: the wire saturates" "$tmp/err" ||
    fail "fp16 compression with fp16 precision not warned: $(cat "$tmp/err")"
echo "PASS: config_cli"
