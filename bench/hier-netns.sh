#!/bin/sh
# hier-netns.sh — the hierarchical allreduce against the flat algorithms
# on two "hosts" (network namespaces joined by a bridge, the test suite's
# tests/fixtures/netns-hosts.sh), 2 ranks each, over the ssh launcher:
# [collectives] shm = auto (within each host through shared memory, across
# over the transport) and shm = off (every byte over the transport), one
# after the other, then the ratio per size (busbw hier / busbw flat: above
# 1 means the hierarchy is faster). Needs root (namespaces) and sshd.
#
#   bench/hier-netns.sh [--transport tcp|ucx] [--sizes 4K:64M] [--iters K]
#                       [--builddir DIR]
set -eu
transport=tcp sizes=4K:64M iters=20 builddir=
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
while [ $# -gt 0 ]; do
    case $1 in
    --transport) transport=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --builddir) builddir=$2; shift 2 ;;
    *) echo "usage: $0 [--transport NAME] [--sizes MIN:MAX] [--iters K] [--builddir DIR]" >&2
       exit 2 ;;
    esac
done
[ -n "$builddir" ] || builddir=$top/_build
builddir=$(cd "$builddir" && pwd)
dtctl=$builddir/core/dtctl bench=$builddir/bench/dt_allreduce_bench
[ -x "$dtctl" ] && [ -x "$bench" ] || { echo "build dt first ($builddir)" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-hier.XXXXXX")
. "$here/netns-lib.sh"
netns_up "$T" 2
set -- $NETNS_HOSTS
printf '%s slots=2\n%s slots=2\n' "$1" "$2" >"$T/hosts"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, 2 hosts x 2 ranks, $transport over $NETNS_SUBNET (veth + bridge)"
for shm in auto off; do
    "$dtctl" run --launcher=ssh --hostfile "$T/hosts" -n 4 \
        --transport="$transport" --set collectives.shm=$shm -- \
        "$bench" --sizes "$sizes" --iters "$iters" 2>"$T/err.$shm" |
        sed "s/^\[[0-9]*\] //" | grep -v '^#' >"$T/$shm" ||
        { cat "$T/err.$shm" >&2; exit 1; }
done
printf '%12s %14s %14s %8s\n' bytes "hier busbw" "flat busbw" "ratio"
join "$T/auto" "$T/off" | awk '{ printf "%12s %14s %14s %8.2f\n", $1, $5, $10, ($10 > 0 ? $5 / $10 : 0) }'
