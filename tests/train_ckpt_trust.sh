#!/bin/sh
# train_ckpt_trust.sh — a [train] checkpoint_dir that other users can
# change is said (another user's, every user's, under a directory every
# user may write, or its group with another user in it, reached through
# another user's link), not refused (a container's 0777 volume), and the
# lock file is never opened through a link: that is refused. A
# group-writable parent of one's own private group is not said. Rank 0
# followed
# a link planted at
# checkpoint_dir/.dt-lock and truncated and overwrote what it pointed at
# (as root: any file), and wrote its checkpoints into a directory another
# user owned (who could then replace what --resume loads).
name=ckpt-trust
. "$top_srcdir/tests/train_common.sh"

user=
cleanup() {
    [ -n "$user" ] && userdel "$user" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

cat >job.ini <<'INI'
[train]
seed = 3
epochs = 1
batch_size = 16
lr = 0.02
device = cpu
log_every = 1000
[model]
layers = flatten linear(16) relu linear(10)
[data]
train_samples = 160
test_samples = 32
INI
run() { timeout 120 "$DTCTL" run -n 2 --set "train.checkpoint_dir=$1" job.ini; }
echo "precious" >victim
# refused(DIR, TEXT): the job stops with exit 65 (a configuration error,
# not restarted), names TEXT, writes no checkpoint and leaves victim be.
refused() {
    run "$1" >out 2>err
    rc=$?
    [ $rc -eq 65 ] || fail "checkpoint_dir $1: want exit 65, got $rc: $(cat err)"
    grep -qF "$2" err || fail "checkpoint_dir $1: the error lacks '$2': $(cat err)"
    ! ls "$1"/ckpt-*.dtckpt >/dev/null 2>&1 || fail "checkpoints written in $1"
    [ "$(cat victim)" = precious ] || fail "victim overwritten via $1"
}

# A link where the lock file goes, in a directory of our own.
mkdir link && ln -s "$tmp/victim" link/.dt-lock || exit 99
refused link "link/.dt-lock is a symbolic link: rank 0 would write through it"
[ -h link/.dt-lock ] || fail "the planted link was removed"

# said(DIR, TEXT): the job trains, saying TEXT (a container's 0777
# volume holds no other user, and the job could not change its mode).
said() {
    run "$1" >out 2>err || fail "checkpoint_dir $1 was refused: $(cat err)"
    grep -qF "$2" err || fail "checkpoint_dir $1: the warning lacks '$2': $(cat err)"
    ls "$1"/ckpt-*.dtckpt >/dev/null 2>&1 || fail "no checkpoint in $1"
}

# A directory every user may write; a link planted there is refused.
mkdir open && chmod 777 open || exit 99
said open "checkpoint_dir open is writable by every user (mode 0777): on a host shared with other users they could replace the checkpoints --resume loads; run \`chmod o-w open\`"
mkdir open2 && chmod 777 open2 && ln -s "$tmp/victim" open2/.dt-lock || exit 99
refused open2 "open2/.dt-lock is a symbolic link: rank 0 would write through it"

# Inside one every user may write, without the sticky bit.
mkdir -m 777 shared || exit 99
said shared/ck "checkpoint_dir shared/ck is inside $tmp/shared, which every user may write and which lacks the sticky bit"

# Another user's directory (as root only: it takes a second user).
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null; then
    user=dtck$$
    if useradd -M -d /nonexistent -s /bin/sh "$user"; then
        # said, not refused (root in a container on a volume of the host
        # user's is legitimate); a link planted there is still refused
        mkdir theirs && chown "$user" theirs || exit 99
        run theirs >out 2>err || fail "another user's checkpoint_dir was refused: $(cat err)"
        grep -qF "checkpoint_dir theirs belongs to $user (uid $(id -u "$user")), not to this user" err ||
            fail "another user's checkpoint_dir is not said: $(cat err)"
        mkdir theirs2 && chown "$user" theirs2 &&
            ln -s "$tmp/victim" theirs2/.dt-lock || exit 99
        refused theirs2 "theirs2/.dt-lock is a symbolic link: rank 0 would write through it"
        # A parent its group may write without the sticky bit, the group
        # another user's too (the throwaway user's own): said as the
        # world's is, with what to do; with the sticky bit, not said.
        grp=$(id -gn "$user")
        mkdir team && chgrp "$grp" team && chmod 770 team || exit 99
        run team/ck >out 2>err || fail "a checkpoint_dir in a group's directory was refused: $(cat err)"
        grep -qF "checkpoint_dir team/ck is inside $tmp/team, which its group $grp may write (user " err &&
            grep -qF "is in it) and which lacks the sticky bit: any member of that group could put a directory of their own in its place; run \`chmod +t $tmp/team\`" err ||
            fail "a group-writable parent with another user in the group is not said: $(cat err)"
        chmod 1770 team && rm -rf team/ck || exit 99
        run team/ck >out 2>err || fail "a checkpoint_dir in a sticky group directory was refused: $(cat err)"
        ! grep -q "is inside $tmp/team" err || fail "a sticky group directory is said: $(cat err)"
        # Through a link another user owns: its owner chose the target.
        mkdir target && ln -s "$tmp/target" lnk && chown -h "$user" lnk || exit 99
        run lnk >out 2>err || fail "a checkpoint_dir through another user's link was refused: $(cat err)"
        grep -qF "checkpoint_dir lnk (-> $tmp/target) goes through the symbolic link $tmp/lnk, which belongs to $user (uid $(id -u "$user")): its owner chooses where the checkpoints go" err ||
            fail "another user's link on the way is not said: $(cat err)"
    else
        user=
        echo "note: useradd failed: another user's directory not tried"
    fi
else
    echo "note: not root: another user's directory not tried"
fi

# Still trains: a new directory, and one its group may write (a user's
# private group under umask 002).
run new >out 2>err || fail "a new checkpoint_dir was refused: $(cat err)"
ls new/ckpt-*.dtckpt >/dev/null 2>&1 || fail "no checkpoint in new: $(ls -a new)"
mkdir group && chmod 770 group || exit 99
run group >out 2>err || fail "a group-writable checkpoint_dir was refused: $(cat err)"
# A parent its group may write, the group this user's alone (a private
# group under umask 002): not said. Where others share it, not tried.
gid=$(id -g)
if [ -z "$(getent group "$gid" | cut -d: -f4)" ] &&
    [ -z "$(getent passwd | awk -F: -v g="$gid" -v u="$(id -u)" '$4 == g && $3 != u')" ]; then
    mkdir mine && chmod 770 mine || exit 99
    run mine/ck >out 2>err || fail "a checkpoint_dir in a private group's directory was refused: $(cat err)"
    ! grep -q "is inside $tmp/mine" err || fail "a private group's directory is said: $(cat err)"
else
    echo "note: group $gid has other users: a private group's directory not tried"
fi
echo "ok: links at the lock refused; open, group-shared and other users' checkpoint directories and links said"
exit 0
