#!/bin/sh
# storage_rsync_local.sh — rsync staging with `dst = DIR/{host}` (the form
# docs/STORAGE.md recommends for hosts that share a file system) through
# dt's own trainer, on this host (local launcher): the workers read the
# staged copy at DIR/localhost ({host} expanded on the worker's side, not
# a directory literally named '{host}'), also when the source is gone
# (--no-stage), and refuse an interrupted copy naming the expanded path.
# Then `dtctl stage` alone: a dst that dt did not stage, the root, one
# apart from [data] path neither, a link or a directory others may write
# is refused with nothing changed there; a marker planted as a link is
# not written through; odd relative data paths and a dst with a space
# (copied as by an rsync older than 3.2.4 over ssh) land where they should.
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

# --- the rest: `dtctl stage` alone, with a small data set ------------------
mkdir set
echo one >set/a.txt
echo two >set/b.txt
# stage_job FILE DATA DST [LINE]: a job file that only stages.
stage_job() {
    printf '[cluster]\nstorage = rsync\n[data]\npath = %s\n[storage.rsync]\ndst = %s\n%s\n' \
        "$2" "$3" "${4:-}" >"$1"
}
# refused WHAT DST PATTERN: staging `set` to DST fails, saying PATTERN.
refused() {
    stage_job j.ini set "$2"
    dt stage j.ini >out 2>&1; rc=$?
    [ $rc -ne 0 ] && grep -q "$3" out ||
        fail "$1: not refused with '$3' (exit $rc): $(grep -i 'error' out | head -3)"
}

# --- 4. a dst that dt did not stage is refused, its files kept -------------
mkdir -p mine/project
echo keep >mine/precious.txt
echo 'int main(void) { return 0; }' >mine/project/main.c
refused "a dst holding other files" "$T/mine" "holds entries that dt did not stage (precious.txt, project)"
[ "$(cat mine/precious.txt 2>/dev/null)" = keep ] && [ -f mine/project/main.c ] ||
    fail "files at dst were deleted: $(ls -A mine)"
[ -e mine/a.txt ] || [ -e mine/.dt-staging ] && fail "dt wrote into a dst it refused: $(ls -A mine)"
# The root: `stage verify` only reads (safe even without the check).
stage_job j.ini set /
dt stage verify j.ini >out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "dst = '/' is the root directory" out ||
    fail "dst = / was not refused as the root (exit $rc): $(grep -i 'error' out | head -3)"
# dst and [data] path apart: not the same, not inside, not around it.
refused "dst = [data] path" "$T/set" "is the data set set"
refused "dst inside [data] path" "$T/set/copy" "lies inside the data set set"
[ -e set/copy ] && fail "dt created $T/set/copy inside the data set"
mkdir around && echo 'staged by job x from y' >around/.dt-staged && cp -r set around/set
stage_job j.ini around/set "$T/around"
dt stage j.ini >out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "holds the data set around/set" out ||
    fail "a dst holding [data] path was not refused (exit $rc): $(grep -i 'error' out | head -3)"
[ -f around/set/a.txt ] || fail "staging deleted the data set inside dst: $(ls -AR around)"
# A dst that dt staged before is staged again (delete = yes at work).
stage_job j.ini set "$T/again"
dt stage j.ini >out 2>&1 && echo stale >again/stale.txt && dt stage j.ini >out 2>&1 ||
    fail "re-staging into a dst that dt staged failed: $(grep -i 'error' out | head -3)"
[ -f again/a.txt ] && [ -f again/.dt-staged ] && [ ! -e again/stale.txt ] ||
    fail "re-staging did not bring dst up to date: $(ls -A again)"
ok "dst holding other files, /, [data] path, inside or around it: refused, nothing touched; a dt-staged dst is re-staged"

# --- 5. links and other users' hands ----------------------------------------
echo mine >victim.txt
ln -s "$T/victim.txt" again/.dt-staging
dt stage j.ini >out 2>&1 ||
    fail "staging over a marker planted as a link failed: $(grep -i 'error' out | head -3)"
[ "$(cat victim.txt)" = mine ] || fail "the marker was written through a link into victim.txt: $(cat victim.txt)"
[ -h again/.dt-staging ] && fail "the planted link is still there"
mkdir real
ln -s "$T/real" link
refused "a dst that is a link" "$T/link" "$T/link is a symbolic link"
refused "a dst that is a link (dst/)" "$T/link/" "$T/link is a symbolic link"
[ -z "$(ls -A real)" ] || fail "dt wrote through the link: $(ls -A real)"
mkdir shared && chmod 775 shared
refused "a group-writable dst" "$T/shared" "writable by its group or by others (drwxrwxr-x).*chmod go-w $T/shared"
[ -z "$(ls -A shared)" ] || fail "dt wrote into a group-writable dst: $(ls -A shared)"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    mkdir theirs && chown nobody theirs
    refused "a dst of another user" "$T/theirs" "belongs to uid $(id -u nobody), not to you (uid 0)"
fi
# A group-writable data set leaves no group-writable dst (or the next
# stage would refuse it).
chmod 775 set
stage_job j.ini set "$T/gw"
dt stage j.ini >out 2>&1 && dt stage j.ini >out 2>&1 ||
    fail "re-staging a group-writable data set failed: $(grep -i 'error' out | head -3)"
chmod 755 set
ok "no marker written through a link; a linked, group-writable or foreign dst refused"

# --- 6. what rsync is given: paths as paths -----------------------------------
# Relative data paths that rsync would take for an option or a host:path.
cp -r set ./-set
cp -r set ./x:set
for p in -set x:set; do
    stage_job j.ini "$p" "$T/rel-$p"
    dt stage j.ini >out 2>&1 && [ -f "rel-$p/a.txt" ] ||
        fail "[data] path = $p was not staged: $(grep -i 'error' out | head -3)"
done
# An rsync older than 3.2.4 lets the remote shell split dst at spaces
# (RSYNC_OLD_ARGS=1 does the same); a wrapper sends this machine's copy
# through a fake ssh that runs the remote command as sshd would.
cat >fake-ssh <<'EOF2'
#!/bin/sh
shift
exec sh -c "$*"
EOF2
cat >old-rsync <<EOF2
#!/bin/sh
n=\$# i=0
for a; do
    i=\$((i + 1))
    [ \$i -eq 1 ] && set --
    [ \$i -eq \$n ] && a="fakehost:\$a"
    set -- "\$@" "\$a"
done
RSYNC_OLD_ARGS=1 exec rsync -e "$T/fake-ssh" "\$@"
EOF2
chmod +x fake-ssh old-rsync
mkdir "sp ace"
stage_job j.ini set "$T/sp ace/dst" "rsync = $T/old-rsync"
dt stage j.ini >out 2>&1; rc=$?
[ $rc -eq 0 ] && [ -f "sp ace/dst/a.txt" ] ||
    fail "dst with a space was not copied to as one path (exit $rc): $(ls -A "sp ace/dst" 2>&1 | tr '\n' ' ') $(grep -i 'error' out | head -3)"
[ -e sp ] && fail "the remote shell split dst: files went to $T/sp: $(ls -AR sp | tr '\n' ' ')"
ok "relative -set and x:set staged; a dst with a space reached whole through an old-style remote shell"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all storage_rsync_local checks passed"
