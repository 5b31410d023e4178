#!/bin/sh
# ipv6_loopback.sh — dt on this machine's IPv6 loopback: ::1 in any
# spelling (and Debian's ip6-localhost, ip6-loopback) is this machine for
# the local launcher; -H ::1:2 (the address ::1:2 with one slot) is told
# how slots follow an IPv6 address; the ssh launcher runs a job against a
# real sshd on [::1], dtctl check passes there, and a closed port is named
# [::1]:PORT (not "::1:PORT", another address).
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?}" "${top_builddir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-ipv6lo.XXXXXX") || exit 99
FX="$top_srcdir/tests/fixtures/sshd-loopback.sh"
cleanup() {
    sh "$FX" stop "$T/sshd"
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
finish() {
    [ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
    echo "all IPv6 loopback tests passed"
    exit 0
}
dt() { timeout -k 5 60 "$DTCTL" "$@"; }

# --- 1. spellings of ::1 are this machine: the local launcher runs them --
for h in '[::1]:2' '[0:0:0:0:0:0:0:1]:2' 'ip6-localhost:2' 'ip6-loopback:2'; do
    out=$(dt run -H "$h" -n 2 -- sh -c 'echo "$RANK $LOCAL_RANK $MASTER_ADDR"' 2>"$T/err")
    rc=$?
    [ $rc -eq 0 ] || fail "-H $h: exited $rc: $(cat "$T/err")"
    for r in 0 1; do
        echo "$out" | grep -qx "\[$r\] $r $r 127.0.0.1" ||
            fail "-H $h: want rank $r, local rank $r, MASTER_ADDR 127.0.0.1 in: $out"
    done
done
ok "-H [::1]:2, [0:0:0:0:0:0:0:1]:2, ip6-localhost:2, ip6-loopback:2 run here"

# --- 2. -H ::1:2 is one address with one slot: the error says so --------
out=$(dt run -H ::1:2 -n 2 -- true 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "-H ::1:2 -n 2 ran (one slot)"
echo "$out" | grep -qF "'::1:2' is read as one IPv6 address with 1 slot" &&
    echo "$out" | grep -qF "[::1]:2" ||
    fail "-H ::1:2 -n 2: no hint about brackets: $out"
ok "-H ::1:2 -n 2: refused, with the bracketed spelling"

# --- 3. the ssh launcher on [::1] ------------------------------------------
ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/' ||
    { echo "note: lo has no ::1 here: the ssh part was not run"; finish; }
"$DTCTL" plugins | grep -q '^launcher *ssh .*available' ||
    { echo "note: the ssh launcher is not built: its part was not run"; finish; }
SSHD_ADDRESS=::1 sh "$FX" start "$T/sshd"
rc=$?
[ $rc -eq 77 ] && { echo "note: no sshd here (above): the ssh part was not run"; finish; }
[ $rc -eq 0 ] || { fail "cannot start sshd on [::1]"; finish; }
. "$T/sshd/env"
export DT_LAUNCHER_SSH_IDENTITY="$SSH_KEY"
export DT_LAUNCHER_SSH_KNOWN_HOSTS="$SSH_KNOWN_HOSTS"
export DT_LAUNCHER_SSH_USE_AGENT=no
export DT_LAUNCHER_SSH_CONNECT_TIMEOUT=10s
export DT_CLUSTER_KILL_GRACE=2s
printf '::1 slots=2 port=%s\n' "$SSH_PORT" >"$T/hosts"
printf '[::1]:%s\n' "$SSH_PORT" >"$T/hosts_brackets" # MXNet's ip:port

out=$(dt run --launcher=ssh --hostfile "$T/hosts" -n 2 -- sh -c 'echo "$DT_RANK $DT_HOST"' 2>"$T/err")
rc=$?
[ $rc -eq 0 ] || fail "ssh to ::1: exited $rc: $(cat "$T/err")"
for r in 0 1; do
    echo "$out" | grep -qx "\[$r\] $r ::1" || fail "ssh to ::1: rank $r missing: $out"
done
out=$(dt run --launcher=ssh --hostfile "$T/hosts_brackets" -- sh -c 'echo "$DT_RANK $DT_HOST"' 2>"$T/err")
rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qx "\[0\] 0 ::1" ||
    fail "hostfile '[::1]:$SSH_PORT': exited $rc: $out $(cat "$T/err")"
ok "ssh launcher to sshd on [::1]:$SSH_PORT (port=P, and [::1]:P)"

dt check --launcher=ssh --hostfile "$T/hosts" >"$T/o" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q '^::1 *launcher *ok' "$T/o" ||
    fail "dtctl check on [::1]: want 0 and an ok launcher row, got $rc: $(cat "$T/o")"
ok "dtctl check passes on [::1]"

# The port closed: the error names the host as [::1]:PORT.
sh "$FX" stop "$T/sshd"
dt run --launcher=ssh --hostfile "$T/hosts" -n 1 -- true >/dev/null 2>"$T/err"
rc=$?
[ $rc -ne 0 ] || fail "a job on a closed port succeeded"
grep -qF "host [::1]:$SSH_PORT: cannot connect" "$T/err" ||
    fail "closed port: want 'host [::1]:$SSH_PORT: cannot connect' in: $(cat "$T/err")"
ok "a closed port on ::1 is named [::1]:$SSH_PORT"

finish
