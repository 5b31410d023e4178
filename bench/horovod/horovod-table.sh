#!/bin/sh
# horovod-table.sh — Horovod's published scaling table (Sergeev & Del
# Balso, arXiv:1802.05799; horovod docs/benchmarks.rst) against dtctl plan:
# 128 hosts x 4 P100, 25 Gbit/s, N = 8..512 GPUs, for Inception V3,
# ResNet-101 and VGG-16. Columns: Horovod's published efficiency (where a
# number is given in text), the plan's Horovod-like baseline (NCCL ring of
# 64 MB fused buffers every 5 ms, no hierarchy, float32), then dt's choices
# one at a time: dt's buckets and algorithms with the hierarchy off, with
# it on, with bf16 on the wire, and that last without overlap (one bucket
# after backward). Inputs and their sources: docs/PLAN.md#horovod.
#
#   bench/horovod/horovod-table.sh [--builddir DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
builddir=$here/../../_build
[ "${1:-}" = --builddir ] && builddir=$2
dtctl=$builddir/core/dtctl
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-horovod.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
awk -v model=vgg16 -f "$here/layers.awk" >"$tmp/vgg16"
awk -v model=resnet101 -f "$here/layers.awk" >"$tmp/resnet101"

common="--hosts 128 --gpus-per-host 4 --network 25Gbit
  --profile $here/p100-roce.ini --net-transport roce"
# model | how dtctl plan gets it | published efficiency at 128 and 512
models="inception3|--model-params 23851784 --samples-per-sec 142|90|90
resnet101|--layer-times $tmp/resnet101 --samples-per-sec 129|90|90
vgg16|--layer-times $tmp/vgg16 --samples-per-sec 154|79|68"
configs="--baseline horovod
--hierarchy off --compression none
--hierarchy on --compression none
--hierarchy on --compression bf16
--hierarchy on --compression bf16 --bucket 64G"

echo "$models" | while IFS='|' read -r name model p128 p512; do
    i=0
    echo "$configs" | while read -r cfg; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        "$dtctl" plan $model $common $cfg 2>/dev/null |
            awk -v c=$i '/^ +[0-9]/ { sub("%", "", $4); print c, $1, $4 }'
    done >"$tmp/$name.eff"
    echo
    echo "**$name** (efficiency %, N GPUs = N/4 hosts)"
    echo
    echo "| N | Horovod published | plan: Horovod-like | dt, flat | + hierarchy | + bf16 | + bf16, no overlap |"
    echo "|---|---|---|---|---|---|---|"
    for n in 8 16 32 64 128 256 512; do
        pub=—
        [ $n = 128 ] && pub=$p128
        [ $n = 512 ] && pub=$p512
        awk -v n=$n -v pub=$pub '$2 == n { e[$1] = $3 }
            END { printf "| %d | %s | %s | %s | %s | %s | %s |\n", n, pub,
                  e[1], e[2], e[3], e[4], e[5] }' "$tmp/$name.eff"
    done
done
