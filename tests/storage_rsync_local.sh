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
# Two jobs staging to one dst at once never mix it (the second refused or
# waiting); a dead or expired holder's lock is taken over; a bwlimit rsync
# would refuse is refused with its file:line and a verified dst stays
# verified; SIGTERM to dtctl during a copy leaves no rsync running.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
command -v rsync >/dev/null 2>&1 || { echo "SKIP: rsync is not installed (apt-get install rsync)"; exit 77; }
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIP: $data missing (apt-get install dataset-fashion-mnist)"; exit 77; }
[ "${DT_HAVE_ZLIB:-yes}" = yes ] || { echo "SKIP: dt was built without zlib: $data holds .gz files (apt-get install zlib1g-dev)"; exit 77; }
"$DTCTL" plugins | grep -q '^storage *rsync .*available' ||
    { echo "SKIP: the rsync storage plugin is not available"; exit 77; }
name=rsync-local
. "$top_srcdir/tests/check_common.sh"
cd "$T" || exit 99
unset DT_CONFIG DT_DATA_PATH DT_HOST
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

# --- 7. two jobs staging to one dst at once --------------------------------
# The first (slowed down) holds dst's lock from its checks to its marker:
# the second is refused naming it (lock_wait = 0), or waits and then
# stages its own data set whole; dst never mixes the two, and the marker
# names the source that is there.
mkdir setA setB
head -c 1500000 /dev/urandom >setA/a.bin && echo A >setA/only-a.txt
head -c 1500000 /dev/urandom >setB/b.bin && echo B >setB/only-b.txt
stage_job ja.ini "$T/setA" "$T/one"
stage_job jb.ini "$T/setB" "$T/one"
# copying SET: until rsync copies SET into $T/one (20 s at most).
copying() {
    i=0
    while [ -z "$(pgrep -f "^rsync .*$T/$1/ $T/one/")" ] && [ $i -lt 200 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$(pgrep -f "^rsync .*$T/$1/ $T/one/")" ] || fail "rsync never copied $1 to $T/one"
}
# only SET: $T/one holds exactly SET's files and a marker naming it.
only() {
    [ "$(ls -A one | sort | tr '\n' ' ')" = "$(ls -A "$1" | sed '$a .dt-staged' | sort | tr '\n' ' ')" ] ||
        fail "$T/one is not exactly $1: $(ls -A one | tr '\n' ' ')"
    for f in "$1"/*; do cmp -s "$f" "one/${f#"$1"/}" || fail "one/${f#"$1"/} differs from $f"; done
    grep -q "^staged by job [0-9a-f]* from $T/$1\$" one/.dt-staged ||
        fail "the marker does not name $T/$1: $(cat one/.dt-staged 2>&1)"
}
dt stage ja.ini --set storage.rsync.bwlimit=300K >outA 2>&1 &
pa=$!
copying setA
dt stage jb.ini --set storage.rsync.lock_wait=0 >outB 2>&1; rcb=$?
wait $pa; rca=$?
[ $rca -eq 0 ] || fail "the first staging failed (exit $rca): $(grep -i error outA | head -3)"
[ $rcb -eq 1 ] || fail "the second staging to the same dst was not refused (exit $rcb): $(grep -i error outB | head -3)"
ida=$(sed -n 's/^staged by job \([0-9a-f]*\) from .*/\1/p' one/.dt-staged)
grep -q "host localhost: $T/one is locked by another staging, job $ida (dtctl pid [0-9]* on $(hostname), staging host localhost, since [0-9-]* [0-9:]*); gave up after" outB ||
    fail "the refusal does not name the first job ($ida), its pid, machine and start: $(grep -i error outB | head -3)"
only setA
# Now the second waits (lock_wait's default) and then copies its own set.
dt stage jb.ini --set storage.rsync.bwlimit=300K >outB 2>&1 &
pb=$!
copying setB
dt stage ja.ini >outA 2>&1; rca=$?
kill -0 $pb 2>/dev/null &&
    fail "the second staging ended (exit $rca) while the first still copied into $T/one, marked '$(cat one/.dt-staged 2>&1)'"
wait $pb; rcb=$?
[ $rca -eq 0 ] && [ $rcb -eq 0 ] || fail "waiting for the lock: exits $rcb and $rca: $(grep -i error outA outB | head -3)"
grep -q "host localhost: $T/one is being staged by job [0-9a-f]* .*; waiting up to 600 s" outA ||
    fail "the waiting job did not say whose lock it waits for: $(cat outA)"
only setA
[ -e one/.dt-lock ] && fail "a lock was left behind"
ok "two stagings to one dst: the second refused naming the first, or waits; dst never mixed, its marker names its source"

# --- 8. stale and foreign locks ---------------------------------------------
# A lock whose dtctl is gone from this machine is taken over at once; one
# of another machine counts until it was not refreshed for 10 minutes.
echo "job 0bad0bad pid 999999 start 1 on $(hostname) for localhost since 1700000000" >one/.dt-lock
dt stage ja.ini --set storage.rsync.lock_wait=0 >out 2>&1 ||
    fail "a dead dtctl's lock blocked staging: $(grep -i error out | head -3)"
grep -q "taking over the lock on $T/one of job 0bad0bad .*: its dtctl is no longer running on this machine" out ||
    fail "taking over a dead dtctl's lock was not said: $(cat out)"
echo "job f00df00d pid 4242 start 1 on elsewhere for localhost since 1700000000" >one/.dt-lock
dt stage ja.ini --set storage.rsync.lock_wait=0 >out 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "is locked by another staging, job f00df00d (dtctl pid 4242 on elsewhere, staging host localhost, since 2023-11-1[45] [0-9:]*).*remove $T/one/.dt-lock on localhost" out ||
    fail "a fresh lock of another machine was not respected (exit $rc): $(cat out)"
touch -d '20 minutes ago' one/.dt-lock
dt stage ja.ini --set storage.rsync.lock_wait=0 >out 2>&1 && grep -q "not refreshed for over 10 minutes" out ||
    fail "a lock not refreshed for 20 minutes blocked staging: $(cat out)"
only setA
ok "a dead dtctl's lock and an expired one are taken over; another machine's fresh one is respected"

# --- 9. a bwlimit rsync would refuse ----------------------------------------
# Refused when the job is read, naming file:line, with the verified copy
# left verified; rsync refusing before it copied anything leaves it so too.
stage_job jv.ini set "$T/verified"
dt stage jv.ini >out 2>&1 || fail "staging $T/verified failed: $(grep -i error out | head -3)"
stage_job jbad.ini set "$T/verified" "bwlimit = 8 M"
line=$(grep -n '^bwlimit' jbad.ini | cut -d: -f1)
dt stage jbad.ini >out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "jbad.ini:$line: \[storage.rsync\] bwlimit = '8 M' is not a rate rsync takes: it holds a space" out ||
    fail "bwlimit = 8 M was not refused with jbad.ini:$line (exit $rc): $(grep -i error out | head -3)"
dt stage jv.ini --set storage.rsync.bwlimit=8b >out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -- "--set: \[storage.rsync\] bwlimit = '8b' .*below rsync's minimum of 512 bytes" out ||
    fail "bwlimit = 8b was not refused naming --set (exit $rc): $(grep -i error out | head -3)"
printf '#!/bin/sh\nexec rsync --no-such-option "$@"\n' >bad-rsync
chmod +x bad-rsync
dt stage jv.ini --set storage.rsync.rsync="$T/bad-rsync" >out 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "the data set there is as it was (still complete)" out ||
    fail "rsync refusing its options: not reported as leaving dst as it was (exit $rc): $(grep -i error out | head -3)"
[ -f verified/.dt-staged ] && [ ! -e verified/.dt-staging ] ||
    fail "a verified dst was demoted: $(ls -A verified | tr '\n' ' ')"
dt stage verify jv.ini >out 2>&1 ||
    fail "the verified dst no longer verifies: $(grep -i error out | head -3)"
ok "bad bwlimit refused with its file:line or --set; a verified dst stays verified, also when rsync refuses to start"

# --- 10. SIGTERM during a copy ends rsync with dtctl ------------------------
# rsync runs in a process group of its own that dtctl ends when it is
# asked to stop (dtctl stage, and dtctl run while it stages), and that gets
# SIGTERM should dtctl die: nothing copies on unwatched and unmarked.
mkdir slow && head -c 3000000 /dev/urandom >slow/big.bin
stage_job jslow.ini "$T/slow" "$T/slowdst"
# Processes running rsync for $T/slow (zombies waiting for init aside).
live_rsyncs() {
    for p in $(pgrep -f "^rsync .*$T/slow/"); do
        case $(ps -o stat= -p "$p" 2>/dev/null) in Z*|'') ;; *) echo "$p" ;; esac
    done
}
# stop_during_copy WHAT ARGS...: dtctl ARGS, SIGTERM once rsync copies.
stop_during_copy() {
    what=$1
    shift
    "$DTCTL" "$@" >out 2>&1 &
    pid=$!
    i=0
    while [ -z "$(live_rsyncs)" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    [ -n "$(live_rsyncs)" ] || fail "$what: rsync never started: $(cat out)"
    sleep 0.5
    kill -TERM $pid
    i=0
    while kill -0 $pid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL $pid 2>/dev/null && fail "$what: dtctl did not end within 10 s of SIGTERM"
    wait $pid
    rc=$?
    [ $rc -eq 143 ] || fail "$what: want exit 143 (SIGTERM), got $rc: $(cat out)"
    i=0
    while [ -n "$(live_rsyncs)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    if [ -n "$(live_rsyncs)" ]; then
        fail "$what: rsync still runs 5 s after dtctl got SIGTERM: $(ps -o pid,ppid,stat,args -p "$(live_rsyncs | tr '\n' ',' | sed 's/,$//')")"
        kill -KILL $(live_rsyncs) 2>/dev/null
    fi
    grep -q "host localhost: copying $T/slow to $T/slowdst stopped (dtctl was asked to stop" out ||
        fail "$what: the stop was not reported with host and paths: $(cat out)"
    [ -e slowdst/.dt-staging ] && [ ! -e slowdst/.dt-staged ] && [ ! -e slowdst/.dt-lock ] ||
        fail "$what: markers and lock after the stop: $(ls -A slowdst | tr '\n' ' ')"
}
stop_during_copy "dtctl stage" stage jslow.ini --set storage.rsync.bwlimit=200K
stop_during_copy "dtctl run" run -n 1 jslow.ini --set storage.rsync.bwlimit=200K -- true
dt stage jslow.ini >out 2>&1 && cmp -s slow/big.bin slowdst/big.bin && [ -f slowdst/.dt-staged ] ||
    fail "the next staging did not complete the stopped copy: $(grep -i error out | head -3)"
ok "SIGTERM to dtctl stage / dtctl run while rsync copies: rsync ends with it, dst stays incomplete and unlocked"

# --- 11. what a stopped copy left behind goes with the next complete one ---
# rsync's --delay-updates parks files in .~tmp~ until the end; one that
# left the data set before the next copy was never collected.
head -c 3000000 /dev/urandom >slow/big.bin
stop_during_copy "dtctl stage (again)" stage jslow.ini --set storage.rsync.bwlimit=200K
[ -d slowdst/.~tmp~ ] || fail "the stopped copy left no .~tmp~ to test with: $(ls -A slowdst | tr '\n' ' ')"
mv slow/big.bin slow/renamed.bin
dt stage jslow.ini >out 2>&1 && cmp -s slow/renamed.bin slowdst/renamed.bin ||
    fail "staging after the data set changed failed: $(grep -i error out | head -3)"
left=$(find slowdst -name '.~tmp~')
[ -z "$left" ] || fail "a complete copy left rsync's parked files behind: $(find slowdst -path '*.~tmp~*' | head -3)"
ok "a complete copy removes what an interrupted one parked in .~tmp~"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all storage_rsync_local checks passed"
