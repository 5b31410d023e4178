#!/bin/sh
# plan-netns.sh — dtctl plan against the trainer on two network-namespace
# hosts (tests/fixtures/netns-hosts.sh) x --slots ranks (default 1; 2:
# the hierarchical allreduce, shm within a host), tcp, each host's link
# limited by `tc qdisc ... tbf` (netem is not available here) to RATE
# (default: 1gbit and 10gbit). Per rate, the link is measured as dt sees
# it: `dtctl bench allreduce` on the 2 hosts, fitted (`dtctl plan --fit`)
# into alpha (latency included) and beta, and the plan gets --network
# 1/beta, --latency 0 and that alpha (tbf's real rate depends on its
# burst and the kernel's timer, so the nominal rate is not assumed). Per
# job and rate: the measured step (batch x 2 / samples/s, best of
# --rounds) against the plan, with the model's per-layer times measured
# once here and calibrated so that one local worker matches (as
# plan-validate.sh; and by ranks / cores where the ranks of both hosts
# outnumber this machine's cores, which they share). Needs root and sshd.
#
#   bench/plan-netns.sh [--builddir DIR] [--rounds R] [--profile FILE]
#                       [--rates "1gbit 10gbit"] [--slots S]
#                       [--fit-sizes 4K:16M] [--fit-stat median|mean]
#                       [JOB.ini...]
# --fit-sizes and --fit-stat: the link's benchmark sizes and statistic
# (docs/PLAN.md: neither fixed the MLP at 1 Gbit/s; the defaults stay).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
builddir=$top/_build rounds=2 profile= rates="1gbit 10gbit" samples=12800 slots=1
fit_sizes=4K:16M fit_stat=median
while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --fit-sizes) fit_sizes=$2; shift 2 ;;
    --fit-stat) fit_stat=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || set -- "$top/conf/examples/fashion-mnist-mlp.ini" \
    "$top/conf/examples/fashion-mnist-cnn.ini"
builddir=$(cd "$builddir" && pwd)
dtctl=$builddir/core/dtctl
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-plannet.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
if [ -z "$profile" ]; then
    profile=$T/profile.ini
    "$dtctl" plan --measure --profile "$profile" >&2
fi
. "$here/netns-lib.sh"
netns_up "$T" 2
set -- "$@" -- $NETNS_HOSTS
jobs=
while [ "$1" != -- ]; do jobs="$jobs $1"; shift; done
shift
printf '%s slots=%s\n%s slots=%s\n' "$1" "$slots" "$2" "$slots" >"$T/hosts"
printf '%s slots=1\n%s slots=1\n' "$1" "$2" >"$T/hosts1" # the link's fit
n=$((2 * slots)) cores=$(nproc)
sets="--set data.train_samples=$samples --set data.test_samples=1000
      --set train.epochs=1 --set train.threads=1 --set train.device=cpu"
sps() { sed -n 's/.*"samples_per_sec":\([0-9.]*\).*/\1/p' "$T/m.jsonl" | tail -1; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), 2 namespace hosts x $slots rank(s), tcp, $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '# %-24s %7s %9s %9s %7s\n' job rate meas_ms plan_ms error
for job in $jobs; do
    batch=$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' "$job" | head -1)
    "$dtctl" plan "$job" --hosts 1 --max-workers 1 --profile "$profile" \
        --save-layers "$T/layers" >/dev/null 2>&1
    best1=0
    for r in $(seq "$rounds"); do
        rm -f "$T/m.jsonl"
        # shellcheck disable=SC2086
        "$dtctl" -q run -n 1 $sets --metrics "$T/m.jsonl" "$job" >/dev/null 2>&1
        best1=$(printf '%s\n%s\n' "$best1" "$(sps)" | sort -g | tail -1)
    done
    m1=$(awk -v b="$batch" -v s="$best1" 'BEGIN { printf "%.4f", 1e3 * b / s }')
    p1=$("$dtctl" plan "$job" --hosts 1 --max-workers 1 --profile "$profile" \
        --layer-times "$T/layers" 2>/dev/null | awk '$1 == 1 { print $2 }')
    scale=$(awk -v m="$m1" -v p="$p1" -v n="$n" -v c="$cores" \
        'BEGIN { printf "%.4f", m / p * (n > c ? n / c : 1) }')
    for rate in $rates; do
        for ns in $NETNS_NAMES; do
            ip netns exec "$ns" tc qdisc replace dev "$NETNS_IFACE" root tbf \
                rate "$rate" burst 64kb latency 100ms
        done
        "$dtctl" -q run --launcher=ssh --hostfile "$T/hosts1" -n 2 \
            --transport=tcp --set collectives.shm=off -- \
            "$builddir/bench/dt_allreduce_bench" --sizes "$fit_sizes" --iters 20 \
            --stat "$fit_stat" \
            >"$T/bench" 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
        { cat "$profile"; "$dtctl" plan --fit net "2:$T/bench"; } >"$T/prof"
        rate_bps=$(awk -F' = ' '/^\[transport.net\]/ { s = 1 }
            s && /^beta/ { printf "%.6g", 1 / $2; exit }' "$T/prof")
        alpha=$(awk -F' = ' '/^\[transport.net\]/ { s = 1 }
            s && /^alpha/ { printf "%.1f", $2 * 1e6; exit }' "$T/prof")
        best=0
        for r in $(seq "$rounds"); do
            rm -f "$T/m.jsonl"
            # shellcheck disable=SC2086
            "$dtctl" -q run --launcher=ssh --hostfile "$T/hosts" -n "$n" \
                --transport=tcp $sets --metrics "$T/m.jsonl" "$job" \
                >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
            best=$(printf '%s\n%s\n' "$best" "$(sps)" | sort -g | tail -1)
        done
        m=$(awk -v b="$batch" -v s="$best" -v n="$n" 'BEGIN { printf "%.4f", 1e3 * b * n / s }')
        p=$("$dtctl" plan "$job" --hosts 2 --gpus-per-host "$slots" --network "${rate_bps}B/s" \
            --latency 0 --net-transport net \
            --profile "$T/prof" --layer-times "$T/layers" \
            --compute-scale "$scale" 2>/dev/null | awk -v n="$n" '$1 == n { print $2 }')
        awk -v j="$(basename "$job")" -v r="$rate" -v m="$m" -v p="$p" \
            -v bw="$rate_bps" -v al="$alpha" \
            'BEGIN { printf "  %-24s %7s %9.3f %9.3f %+6.1f%%   fitted %.0f MB/s, alpha %s us\n",
                     j, r, m, p, 100 * (p - m) / m, bw / 1e6, al }'
    done
done
