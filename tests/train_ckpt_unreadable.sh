#!/bin/sh
# train_ckpt_unreadable.sh — --resume when the newest checkpoint is one
# this user may not read (a root job's written under umask 077 into the
# user's checkpoint_dir): an error naming the file and what to do, and the
# file left as it was. It was skipped as if corrupt: the job went back to
# the checkpoint before, trained again and renamed its own file over the
# unreadable one, losing that progress. Root reads every file, so as root
# the job runs as a throwaway user (created here, removed at exit).
name=ckpt-unreadable
. "$top_srcdir/tests/train_common.sh"

user=
cleanup() {
    [ -n "$user" ] && userdel "$user" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir w || exit 99
if [ "$(id -u)" -eq 0 ]; then
    command -v useradd >/dev/null && command -v runuser >/dev/null || {
        echo "SKIP: as root the test runs dtctl as another user: useradd and runuser (util-linux, passwd) are missing"
        exit 77
    }
    user=dtck$$
    useradd -M -d /nonexistent -s /bin/sh "$user" || {
        user=
        echo "SKIP: as root the test runs dtctl as another user, and useradd failed"
        exit 77
    }
    chmod 755 "$tmp" && chown "$user" w || exit 99
    as_user() { runuser -u "$user" -- "$@"; }
    as_user test -x "$DTCTL" || {
        echo "SKIP: user $user cannot run $DTCTL (a build tree under a private directory)"
        exit 77
    }
    # root's file, mode 0600: the user may not open it
    hide() { chown root:root "$1" && chmod 600 "$1"; }
else
    as_user() { "$@"; }
    hide() { chmod 000 "$1"; }
    show() { chmod 600 "$1"; }
fi
cd w || exit 99

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 2
batch_size = 16
lr = 0.02
device = cpu
log_every = 1000
[model]
layers = flatten linear(16) relu linear(10)
[data]
train_samples = 320
test_samples = 64
INI
run() { as_user timeout 120 "$DTCTL" run -n 2 --set train.checkpoint_dir=ck "$@"; }

run job.ini >a.out 2>a.err || fail "the first job failed: $(cat a.err)"
newest=ck/ckpt-000000000020.dtckpt
[ -f ck/ckpt-000000000010.dtckpt ] && [ -f $newest ] ||
    fail "want checkpoints at steps 10 and 20: $(ls ck)"
before=$(cksum <$newest)
hide $newest || exit 99

run --resume --set train.epochs=3 job.ini >b.out 2>b.err
rc=$?
[ $rc -ne 0 ] || fail "--resume went past the unreadable $newest and ran: $(cat b.err)"
grep -qF "$newest: cannot open checkpoint: Permission denied" b.err &&
    grep -qF "make it readable to this user (chown or chmod), or move it out" b.err ||
    fail "the error does not name $newest and what to do: $(cat b.err)"
grep -q "trying the previous checkpoint" b.err &&
    fail "went back to an older checkpoint: $(cat b.err)"
[ -z "$user" ] && show $newest
[ "$(cksum <$newest)" = "$before" ] || fail "$newest was replaced"
[ ! -e ck/ckpt-000000000030.dtckpt ] || fail "the refused job wrote a checkpoint"
echo "ok: --resume stops at a checkpoint this user may not read, which is kept"
exit 0
