#!/bin/sh
# compare-train.sh — dt's trainer against PyTorch DDP (gloo, CPU) on the
# same model, data, per-worker batch, optimizer and number of workers, one
# thread per worker, side by side in one run. Prints training samples/s
# (global, evaluation excluded) of both and the ratio dt/torch.
#
#   bench/compare-train.sh [-n "1 2"] [--samples N] [--repeat R]
#                          [--base OTHER_DTCTL] JOB.ini...
#
# --base adds a column for another build of dt (e.g. the last release), run
# in the same rounds, so a change is measured against the same load.
# Needs a built tree (_build, or $DTCTL) and Debian's python3-torch (with
# libopenblas0-pthread so torch's BLAS is OpenBLAS). Each measurement is
# one epoch over the first --samples training samples (default: 20000);
# with --repeat R the best of R runs is kept for each side.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
dtctl=${DTCTL:-$top/_build/core/dtctl}
py=/usr/bin/python3
nps="1 2"
samples=20000
repeat=1
base=
while [ $# -gt 0 ]; do
    case $1 in
    -n) nps=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-n \"1 2\"] [--samples N] [--repeat R] [--base DTCTL] JOB.ini..." >&2; exit 2; }
[ -x "$dtctl" ] || { echo "no dtctl at $dtctl: build first (or set DTCTL)" >&2; exit 1; }
[ -z "$base" ] || [ -x "$base" ] || { echo "--base $base: not an executable dtctl" >&2; exit 1; }
$py -c 'import torch' 2>/dev/null ||
    { echo "PyTorch missing: apt-get install python3-torch libopenblas0-pthread" >&2; exit 1; }

tmp=$(mktemp -d /tmp/dt-compare-train.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# One thread per worker on both sides.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
sets="--set data.train_samples=$samples --set data.test_samples=1000 --set train.epochs=1 --set train.threads=1 --set train.device=cpu"

best() { sort -g | tail -1; }

# dt_run DTCTL N JOB OUTFILE: one dt measurement appended to OUTFILE.
dt_run() {
    rm -f "$tmp/m.jsonl"
    # shellcheck disable=SC2086
    "$1" -q run -n "$2" $sets --metrics "$tmp/m.jsonl" "$3" \
        >"$tmp/dt.out" 2>&1 || { cat "$tmp/dt.out"; exit 1; }
    sed -n 's/.*"samples_per_sec":\([0-9.]*\).*/\1/p' "$tmp/m.jsonl" >>"$4"
}

if [ -n "$base" ]; then
    printf '%-24s %3s %14s %14s %14s %7s %7s\n' job N dt_samples/s \
        base_samples/s torch_samples/s ratio speedup
else
    printf '%-24s %3s %14s %14s %7s\n' job N dt_samples/s torch_samples/s ratio
fi
for job in "$@"; do
    for n in $nps; do
        i=0; : >"$tmp/dt"; : >"$tmp/base"; : >"$tmp/torch"
        while [ $i -lt "$repeat" ]; do
            dt_run "$dtctl" "$n" "$job" "$tmp/dt"
            [ -z "$base" ] || dt_run "$base" "$n" "$job" "$tmp/base"
            # shellcheck disable=SC2086
            "$dtctl" -q run -n "$n" $sets -- $py "$here/torch_ddp.py" "$job" \
                >"$tmp/torch.out" 2>&1 || { cat "$tmp/torch.out"; exit 1; }
            sed -n 's/.*torch: \([0-9.]*\) samples.*/\1/p' "$tmp/torch.out" >>"$tmp/torch"
            i=$((i + 1))
        done
        d=$(best <"$tmp/dt"); t=$(best <"$tmp/torch")
        if [ -n "$base" ]; then
            b=$(best <"$tmp/base")
            printf '%-24s %3s %14.0f %14.0f %14.0f %7.2f %7.2f\n' \
                "$(basename "$job" .ini)" "$n" "$d" "$b" "$t" \
                "$(echo "$d $t" | awk '{ print $1 / $2 }')" \
                "$(echo "$d $b" | awk '{ print $1 / $2 }')"
        else
            printf '%-24s %3s %14.0f %14.0f %7.2f\n' "$(basename "$job" .ini)" \
                "$n" "$d" "$t" "$(echo "$d $t" | awk '{ print $1 / $2 }')"
        fi
    done
done
