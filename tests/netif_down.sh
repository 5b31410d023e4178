#!/bin/sh
# netif_down.sh — an interface [cluster] interface names but that is down
# (an IPoIB port not up, a cable out) is said as such when nothing
# matches, rather than only "matches no network interface": a network
# namespace of its own with a veth pair left down (root and `ip netns`;
# else skipped, saying why).
set -u
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for a network namespace"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: no ip (iproute2)"; exit 77; }
ns="dtdown$$"
ip netns add "$ns" 2>/dev/null || { echo "SKIP: ip netns add failed here"; exit 77; }
trap 'ip netns del "$ns" 2>/dev/null' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
ip -n "$ns" link add dtva type veth peer name dtvb 2>/dev/null ||
    { echo "SKIP: no veth here"; exit 77; }
ip -n "$ns" link set lo up
out=$(ip netns exec "$ns" "$DTCTL" check --network-interface dtva 2>&1); rc=$?
echo "$out" | grep -q "matches no network interface of this host; interfaces here: .*; not in use here: .*dtva (down)" || {
    echo "FAIL: a down interface is not named as down (exit $rc): $out"
    exit 1
}
echo "ok: [cluster] interface naming a down interface says it is down"
