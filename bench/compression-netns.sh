#!/bin/sh
# compression-netns.sh — [collectives] compression = bf16 against none on
# two "hosts" (network namespaces joined by a bridge, the test suite's
# tests/fixtures/netns-hosts.sh), 1 rank each, shm off, the link limited
# by a token bucket (tc tbf on the host side of each veth: every byte
# towards a namespace passes one, so each direction gets RATE). Runs the
# allreduce bench with each setting, one after the other, then the ratio
# per size (busbw bf16 / busbw none; both on the float32 byte count, so
# this is the effective speed-up). Needs root (namespaces, tc) and sshd.
#
#   bench/compression-netns.sh [--rate 1gbit] [--sizes 16M:64M] [--iters K]
#                              [--wire bf16|fp16] [--builddir DIR]
set -eu
rate=1gbit sizes=16M:64M iters=5 wire=bf16 builddir= transport=tcp
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
while [ $# -gt 0 ]; do
    case $1 in
    --rate) rate=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --wire) wire=$2; shift 2 ;;
    --builddir) builddir=$2; shift 2 ;;
    *) echo "usage: $0 [--rate R] [--sizes MIN:MAX] [--iters K] [--wire bf16|fp16] [--builddir DIR]" >&2
       exit 2 ;;
    esac
done
[ -n "$builddir" ] || builddir=$top/_build
builddir=$(cd "$builddir" && pwd)
dtctl=$builddir/core/dtctl bench=$builddir/bench/dt_allreduce_bench
[ -x "$dtctl" ] && [ -x "$bench" ] || { echo "build dt first ($builddir)" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-compress.XXXXXX")
. "$here/netns-lib.sh"
netns_up "$T" 2
k=${NETNS_BRIDGE#dtbr}
for i in 1 2; do
    tc qdisc add dev "dt${k}v$i" root tbf rate "$rate" burst 256kb latency 50ms ||
        { echo "cannot shape dt${k}v$i (tc tbf)" >&2; exit 1; }
done
set -- $NETNS_HOSTS
printf '%s slots=1\n%s slots=1\n' "$1" "$2" >"$T/hosts"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, 2 hosts x 1 rank, $transport over $NETNS_SUBNET (veth + bridge, tbf $rate each way), shm off"
for z in none "$wire"; do
    "$dtctl" run --launcher=ssh --hostfile "$T/hosts" -n 2 \
        --transport="$transport" --set collectives.shm=off \
        --set collectives.compression=$z -- \
        "$bench" --sizes "$sizes" --iters "$iters" 2>"$T/err.$z" |
        sed "s/^\[[0-9]*\] //" | grep -v '^#' >"$T/$z" ||
        { cat "$T/err.$z" >&2; exit 1; }
done
printf '%12s %14s %14s %8s\n' bytes "$wire busbw" "none busbw" "ratio"
join "$T/$wire" "$T/none" | awk '{ printf "%12s %14s %14s %8.2f\n", $1, $5, $10, ($10 > 0 ? $5 / $10 : 0) }'
