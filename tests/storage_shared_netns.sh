#!/bin/sh
# storage_shared_netns.sh — storage local, nfs and efs across two "hosts"
# in network namespaces (tests/fixtures/netns-hosts.sh; real sshd's, host
# keys checked), reached through the ssh launcher's run_on_host.
#
# A real NFS or EFS mount cannot be made on a test machine (no server, no
# AWS). What runs here for real: every per-host check over ssh, the
# mountinfo lookup on each host, and the shared-view check (rank 0's host
# writes a marker with the job id, every host reads it back) on a
# directory the namespace hosts truly share (/tmp). The file system type
# check is run twice: with the default fstypes (nfs, nfs4) it must refuse
# /tmp's local file system naming the host; with fstypes set to that type
# it passes. The mount command and the mountinfo parser are unit-tested on
# recorded lines (test_storage_parts).
#
# Per-host differences are made with mounts inside one host's sshd
# session, which stay in that host's mount namespace.
set -u

: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/fixtures/netns-test-lib.sh"
need_ssh_launcher
netns_test_begin shared
netns_hosts_start
netns_ssh_keys
printf '%s slots=1\n%s slots=1\n' "$H1" "$H2" >"$T/hosts"
mkdir -p "$T/d/data" "$T/shared"
echo "samples" >"$T/d/data/train.bin"
D=$T/d/data
cat >"$T/job.ini" <<EOF2
[cluster]
launcher = ssh
hostfile = $T/hosts
[data]
path = $T/d/data
EOF2
dt() { timeout -k 5 120 "$DTCTL" "$@"; }

# /tmp's mount point and file system type on this machine (and the hosts).
MP=$(df -P "$T" | awk 'NR==2 {print $6}')
FST=$(awk -v mp="$MP" '$5 == mp { for (i = 7; $i != "-"; i++) ; t = $(i + 1) } END { print t }' /proc/self/mountinfo)
[ -n "$MP" ] && [ -n "$FST" ] || { echo "cannot tell the file system of $T"; exit 99; }

# --- local: present on both; missing on one host is named ------------------
dt stage "$T/job.ini" --storage=local >"$T/out" 2>"$T/err" ||
    fail "storage local with the data on both hosts failed: $(cat "$T/err")"
grep -q "^data set: $D$" "$T/out" || fail "storage local: wrong path printed: $(cat "$T/out")"
on "$H2" "mount -t tmpfs tmpfs $T/d" || fail "cannot hide the data set on $H2"
dt stage "$T/job.ini" --storage=local >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] || fail "storage local, data missing on $H2: want exit 1, got $rc"
grep -q "storage local: host $H2: the data set path $D does not exist there" "$T/err" ||
    fail "storage local: the missing path is not reported with $H2's name: $(cat "$T/err")"
grep -q "host $H1:" "$T/err" && fail "storage local: $H1 (which has the data) reported: $(cat "$T/err")"
dt run "$T/job.ini" --storage=local -- true >/dev/null 2>"$T/err"
rc=$?
[ $rc -ne 0 ] && grep -q "host $H2: the data set path" "$T/err" ||
    fail "dtctl run started although the data set is missing on $H2 (rc $rc): $(cat "$T/err")"
# the path a link to storage not mounted there: the link and its target
on "$H2" "ln -s /mnt/dt-not-mounted $D" || fail "cannot make the link on $H2"
dt stage "$T/job.ini" --storage=local >"$T/out" 2>"$T/err"
grep -q "storage local: host $H2: the data set path $D is a symbolic link to /mnt/dt-not-mounted, which does not exist there (its file system not mounted?)" "$T/err" ||
    fail "storage local: a dangling link on $H2 is not named with its target: $(cat "$T/err")"
# ... or a folder above it such a link (path $D/sub)
sed "s|^path = .*|path = $D/sub|" "$T/job.ini" >"$T/job-sub.ini"
dt stage "$T/job-sub.ini" --storage=local >"$T/out" 2>"$T/err"
grep -q "storage local: host $H2: the data set path $D/sub does not exist there: $D is a symbolic link to /mnt/dt-not-mounted, which does not exist (its file system not mounted?)" "$T/err" ||
    fail "storage local: a dangling link above the path on $H2 is not named: $(cat "$T/err")"
on "$H2" "umount $T/d" || fail "cannot unmount on $H2"
ok "storage local: a data set missing on $H2 (or a link there to nothing) is reported with its name; dtctl run does not start"

# --- nfs: the file system type check -----------------------------------------
dt stage "$T/job.ini" --storage=nfs >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] || fail "storage nfs on a local file system: want exit 1, got $rc"
grep -q "storage nfs: host $H1: $D is on a $FST file system (mounted at $MP from .*), not on nfs, nfs4" "$T/err" ||
    fail "storage nfs: no error naming the host, the path and its file system: $(cat "$T/err")"
ok "storage nfs: a data path on $FST (not NFS) is refused, naming host and mount"

# --- nfs: the shared view ------------------------------------------------------
NFS="--storage=nfs --set storage.nfs.fstypes=$FST --set storage.nfs.shared_dir=$T/shared"
dt stage "$T/job.ini" $NFS >"$T/out" 2>"$T/err" ||
    fail "storage nfs on a shared directory failed: $(cat "$T/err")"
grep -q "storage nfs: 2 hosts share $T/shared (checked with a marker of job [0-9a-f]*)" "$T/err" &&
    grep -q "^shared directory: $T/shared$" "$T/out" ||
    fail "storage nfs: the shared-view check did not report: $(cat "$T/out" "$T/err")"
ls -A "$T/shared" | grep -q . && fail "the view marker was left in $T/shared: $(ls -A "$T/shared")"
# h2 gets its own empty directory at the shared path: it cannot see h1's marker.
on "$H2" "mount -t tmpfs tmpfs $T/shared" || fail "cannot mount a private directory on $H2"
dt stage "$T/job.ini" $NFS >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] || fail "storage nfs, $H2 not sharing: want exit 1, got $rc"
grep -q "storage nfs: host $H2 does not see the file $T/shared/.dt-view-[0-9a-f]* that rank 0's host $H1 wrote" "$T/err" ||
    fail "storage nfs: no error naming $H2 as not sharing: $(cat "$T/err")"
grep -q "host $H1 does not see" "$T/err" && fail "storage nfs: $H1 (the writer) reported as not sharing: $(cat "$T/err")"
on "$H2" "umount $T/shared" || fail "cannot unmount on $H2"
ok "storage nfs: hosts sharing $T/shared pass the marker check; a host with its own directory is named"

# --- efs: EFS defaults, paths handed to the workers ---------------------------
EFS="--storage=efs --set storage.efs.fstypes=$FST --set storage.efs.mount_point=$MP --set storage.efs.shared_dir=$T/shared"
dt config "$T/job.ini" --storage=efs >"$T/out" 2>&1
grep -q "options *= *nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport" "$T/out" ||
    fail "storage efs: the EFS mount options are not the defaults: $(grep -i options "$T/out")"
dt run "$T/job.ini" $EFS -n 2 -- sh -c 'echo "$DT_DATA_PATH $DT_SHARED_DIR"' >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "dtctl run with storage efs exited $rc: $(cat "$T/err")"
for r in 0 1; do
    grep -qx "\[$r\] $D $T/shared" "$T/out" || fail "rank $r did not get DT_DATA_PATH and DT_SHARED_DIR: $(cat "$T/out")"
done
dt stage "$T/job.ini" --storage=efs --set storage.efs.mount=yes >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "\[storage.efs\] mount = yes needs fs_id and region" "$T/err" ||
    fail "storage efs, mount without fs_id: want exit 2 and the missing keys named (rc $rc): $(cat "$T/err")"
ok "storage efs: EFS option defaults; workers get the data path and the shared directory"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all local/nfs/efs staging tests passed"
