#!/bin/sh
# digest.sh — back home after the device call: what tests/gpu/run.sh
# brought back, turned into the numbers the issues ask for. Given the
# reply's files_at folder (summary.txt, logs.tar.gz):
#   - the summary table as it came;
#   - issue 21's validation on the device's cores: bench/plan-validate.sh
#     --predict on logs/plan (measured there at N = 1, 2, 4, 8, planned
#     here with SimGrid);
#   - issue 21's projection from a GPU's own layer times
#     (logs/layers/resnet18-gpu.layers, [train] layer_times): dtctl plan
#     on 8 and 64 hosts x 8 GPUs over 100 and 400 Gbit/s, dt's choices
#     and the Horovod-like baseline; the hosts HGX-like (NVLink between
#     a host's GPUs taken as 400 GB/s, 2 us: assumed, not measured), the
#     software costs dtctl plan's defaults without a profile (alpha 20 us
#     across hosts, 5 us within; gamma 0.25 ns/B).
# Runs here (SimGrid, the build tree); writes nothing but its output.
#
#   tests/gpu/digest.sh FILES_AT [--builddir DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: tests/gpu/digest.sh FILES_AT [--builddir DIR]" >&2; exit 2; }
at=$1; shift
builddir=$top/_build
[ "${1:-}" = --builddir ] && builddir=$2
dtctl=$builddir/core/dtctl
[ -x "$dtctl" ] || { echo "digest: no $dtctl: build dt here first" >&2; exit 1; }
[ -f "$at/logs.tar.gz" ] || { echo "digest: no $at/logs.tar.gz (the reply's files_at folder?)" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-gpu-digest.XXXXXX")
trap 'rm -rf "$T"' EXIT
tar xzf "$at/logs.tar.gz" -C "$T"

echo "## the device's summary"
cat "$at/summary.txt" 2>/dev/null || echo "(no summary.txt)"

echo
echo "## issue 21: plan against the device's runs (logs/plan)"
if [ -f "$T/logs/plan/meta" ]; then
    sh "$top/bench/plan-validate.sh" --builddir "$builddir" --predict "$T/logs/plan" 2>&1
else
    echo "(no logs/plan: plan_measure did not run)"
fi

echo
echo "## issue 21: projections from the GPU's own layer times"
lt=$T/logs/layers/resnet18-gpu.layers
if [ -s "$lt" ]; then
    head -3 "$lt"
    # planned at the batch the layers were timed at (the planner's default
    # is 64: it would scale the compute down 4x)
    lb=$(awk '$1 == "batch" { print $2; exit }' "$lt")
    for hosts in 8 64; do
        for net in 100Gbit 400Gbit; do
            for base in dt horovod; do
                printf '# %s hosts x 8 GPUs, %s, %s: ' "$hosts" "$net" "$base"
                "$dtctl" plan --layer-times "$lt" --batch "${lb:-64}" --hosts "$hosts" --gpus-per-host 8 \
                    --network "$net" --intra 400GB/s --intra-latency 2us \
                    --profile /nonexistent --baseline "$base" 2>/dev/null |
                    awk -v n=$((hosts * 8)) '$1 == n { printf "step %s ms, %s samples/s, efficiency %s, exposed %s ms\n", $2, $3, $4, $6 }'
            done
        done
    done
else
    echo "(no logs/layers/resnet18-gpu.layers: the ResNet-18 bf16 bench run did not time its layers)"
fi
