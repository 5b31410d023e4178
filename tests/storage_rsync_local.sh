#!/bin/sh
# storage_rsync_local.sh — rsync staging with `dst = DIR/{host}` (the form
# docs/STORAGE.md recommends for hosts that share a file system) through
# dt's own trainer, on this host (local launcher): the workers read the
# staged copy at DIR/localhost ({host} expanded on the worker's side, not
# a directory literally named '{host}'), also when the source is gone
# (--no-stage), and refuse an interrupted copy naming the expanded path.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
command -v rsync >/dev/null 2>&1 || { echo "SKIP: rsync is not installed (apt-get install rsync)"; exit 77; }
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIP: $data missing (apt-get install dataset-fashion-mnist)"; exit 77; }
"$DTCTL" plugins | grep -q '^storage *rsync .*available' ||
    { echo "SKIP: the rsync storage plugin is not available"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-rsync-local.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 99
unset DT_CONFIG DT_DATA_PATH DT_HOST
fails=0 passed_at=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() {
    if [ $fails -eq $passed_at ]; then echo "ok: $*"
    else echo "FAILED: $* ($((fails - passed_at)) check(s) above)"; fi
    passed_at=$fails
}
dt() { timeout -k 5 180 "$DTCTL" "$@"; }

mkdir src
cp "$data"/*.gz src/
cat >job.ini <<EOF2
[cluster]
storage = rsync
[data]
path = $T/src
train_samples = 500
test_samples = 200
[storage.rsync]
dst = $T/stage/{host}
[train]
epochs = 1
batch_size = 50
device = cpu
[model]
layers = flatten linear(10)
EOF2

# --- 1. stage and train: the workers read $T/stage/localhost ---------------
dt run -n 2 job.ini >out 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "final test accuracy: " out ||
    fail "training from the staged copy failed (exit $rc): $(grep -i 'error' out | head -3)"
grep -q '^\[[0-9]*\] .*{host}' out && fail "a worker saw '{host}' unexpanded: $(grep '^\[[0-9]*\] .*{host}' out | head -3)"
[ -f "$T/stage/localhost/train-images-idx3-ubyte.gz" ] || fail "nothing staged at $T/stage/localhost: $(ls -R "$T/stage")"
[ -e "$T/stage/{host}" ] && fail "a directory literally named {host} was made"
ok "dst = $T/stage/{host}: staged to stage/localhost, 2 workers trained from it"

# --- 2. the source gone: --no-stage still trains, from the staged copy -----
rm -rf src
dt run -n 2 --no-stage job.ini >out 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "final test accuracy: " out ||
    fail "--no-stage without the source did not train from stage/localhost (exit $rc): $(grep -i 'error' out | head -3)"
ok "the workers read the staged copy, not [data] path"

# --- 3. an interrupted copy is refused, with the host's path ---------------
touch "$T/stage/localhost/.dt-staging"
dt run -n 2 --no-stage job.ini >out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "the data set at $T/stage/localhost is incomplete" out ||
    fail "an interrupted copy was not refused with its path (exit $rc): $(grep -i 'error' out | head -3)"
ok "an incomplete staged copy is refused, naming $T/stage/localhost"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all storage_rsync_local checks passed"
