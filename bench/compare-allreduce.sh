#!/bin/sh
# compare-allreduce.sh — dt's allreduce against a peer, same sizes, inputs
# and timing, interleaved: each of R rounds runs dt, then the peer, so both
# share the machine's drift. Per size it prints each side's median time
# over the rounds and the median (and range) of the per-round ratios:
# ratio = the peer's time / dt's (= busbw dt / busbw peer: above 1 means
# dt is faster). Peers: Open MPI's MPI_Allreduce over its TCP BTL
# (default, --peer mpi), its UCX PML (--peer mpi-ucx) or its shared-memory
# BTL (--peer mpi-sm), or PyTorch's gloo backend (--peer gloo, Debian's
# python3-torch, launched by dtctl through torch's env://).
#
#   bench/compare-allreduce.sh [-n N] [--sizes 4K:256M] [--iters K]
#                              [--rounds R] [--builddir DIR]
#                              [--transport NAME]
#                              [--peer mpi|mpi-ucx|mpi-sm|gloo]
# DIR is the build directory (default: the current directory when it holds
# core/dtctl, else _build next to this script). R defaults to 3. A run that
# fails on either side fails the script (exit 1), naming it.
set -eu
np=2 sizes=4K:256M iters=20 rounds=3 transport=tcp builddir= peer=mpi
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 [-n N] [--sizes MIN:MAX] [--iters K] [--rounds R] [--builddir DIR] [--transport NAME] [--peer mpi|mpi-ucx|mpi-sm|gloo]"
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
    case $1 in
    -n) np=$2 ;;
    --sizes) sizes=$2 ;;
    --iters) iters=$2 ;;
    --rounds) rounds=$2 ;;
    --transport) transport=$2 ;;
    --builddir) builddir=$2 ;;
    --peer) peer=$2 ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
    shift 2
done
case $rounds in ''|*[!0-9]*|0) echo "--rounds '$rounds': want a whole number from 1" >&2; exit 2 ;; esac
case $peer in mpi|mpi-ucx|mpi-sm|gloo) ;;
*) echo "--peer is mpi, mpi-ucx, mpi-sm or gloo, not '$peer'" >&2; exit 2 ;;
esac
if [ -z "$builddir" ]; then
    if [ -x core/dtctl ]; then builddir=.; else builddir=$here/../_build; fi
fi
dtctl=$builddir/core/dtctl
mpibench=$builddir/bench/mpi_allreduce
[ -x "$dtctl" ] || { echo "no dtctl in $builddir/core: build dt first" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/dt-compare.XXXXXX")
trap 'rm -rf "$out"' EXIT
if [ "$peer" = gloo ]; then
    /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
        { echo "PyTorch is not importable by /usr/bin/python3: apt-get install python3-torch" >&2; exit 1; }
elif [ ! -x "$mpibench" ]; then
    command -v mpicc >/dev/null || { echo "no $mpibench and no mpicc: install libopenmpi-dev" >&2; exit 1; }
    mpibench=$out/mpi_allreduce
    mpicc -O2 -o "$mpibench" "$here/mpi_allreduce.c"
fi
case $peer in
mpi) mca="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo" ;;
# Open MPI's UCX path (Debian disables it unless asked for).
mpi-ucx) mca="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" ;;
mpi-sm) mca="--mca pml ob1 --mca btl vader,self" ;;
gloo) mca= ;;
esac

# WHO FILE CMD...: run one side into FILE (rank 0's table, its "[0] "
# prefix off). Files, not pipes: a pipe's exit status is its last
# command's, and a failed run left an empty table and exit 0.
run_side() {
    who=$1 file=$2
    shift 2
    st=0
    "$@" >"$file.raw" || st=$?
    if [ "$st" -ne 0 ]; then
        echo "$who failed (exit $st); no ratio" >&2
        exit 1
    fi
    sed '/^\[[1-9][0-9]*\] /d; s/^\[0\] //' "$file.raw" >"$file"
    grep -qv '^#' "$file" || { echo "$who printed no rows; no ratio" >&2; exit 1; }
}

# Like for like: against a peer that moves bytes through TCP (Open MPI's
# TCP BTL, gloo), dt's tcp transport carries every byte too ([collectives]
# shm = off); against shared-memory peers dt uses its segment.
case $peer in mpi|gloo) export DT_COLLECTIVES_SHM="${DT_COLLECTIVES_SHM:-off}" ;; esac
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, N=$np, $rounds rounds"
# The VM's two speeds (bench/cacheline_rtt.c): compare only rounds that
# started and ended at the same round trip.
rtt=$builddir/bench/cacheline_rtt
r=1
while [ "$r" -le "$rounds" ]; do
    echo "# round $r"
    if [ -x "$rtt" ]; then "$rtt"; fi
    run_side "dtctl bench allreduce" "$out/dt.$r" \
        "$dtctl" bench allreduce -n "$np" --transport "$transport" \
        --sizes "$sizes" --iters "$iters"
    if [ "$peer" = gloo ]; then
        run_side "gloo_allreduce.py" "$out/peer.$r" \
            "$dtctl" run -n "$np" -- /usr/bin/python3 "$here/gloo_allreduce.py" \
            --sizes "$sizes" --iters "$iters"
    else
        # shellcheck disable=SC2086 # mca is a list of words
        run_side "mpirun $mca mpi_allreduce" "$out/peer.$r" \
            mpirun --allow-run-as-root --oversubscribe -np "$np" $mca \
            "$mpibench" --sizes "$sizes" --iters "$iters"
    fi
    cat "$out/dt.$r" "$out/peer.$r"
    r=$((r + 1))
done
if [ -x "$rtt" ]; then "$rtt"; fi

# Per size (dt's rows, bytes as every benchmark prints them: whole floats):
# the median time of each side over the rounds, the median and range of
# the rounds' ratios. A size the peer lacks is said, not dropped unsaid.
echo "# ratio = $peer's time / dt's (= busbw dt / busbw $peer): above 1 = dt faster"
printf '# %12s %11s %11s %7s %s\n' bytes dt_us "${peer}_us" ratio rounds
r=1 files=
while [ "$r" -le "$rounds" ]; do files="$files $out/dt.$r $out/peer.$r"; r=$((r + 1)); done
# shellcheck disable=SC2086 # files is a list of paths without spaces
awk -v peer="$peer" -v rounds="$rounds" '
# The median of the numbers in s; their range left in lo and hi.
function median(s,    v, n, i, j, t) {
    n = split(s, v, " ")
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
            t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
    lo = v[1]; hi = v[n]
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
/^#/ || NF < 3 { next }
{ r = FILENAME; sub(/.*\./, "", r) }
FILENAME ~ /\/dt\.[0-9]+$/ {
    if (!($1 in seen)) { seen[$1]; order[++n] = $1 }
    dt[r, $1] = $3; next
}
{ pe[r, $1] = $3 }
END {
    for (k = 1; k <= n; k++) {
        b = order[k]; d = p = q = ""
        for (i = 1; i <= rounds; i++)
            if (((i, b) in dt) && ((i, b) in pe) && dt[i, b] > 0) {
                d = d " " dt[i, b]; p = p " " pe[i, b]
                q = q " " pe[i, b] / dt[i, b]
            }
        if (q == "") { printf "# %12s bytes: no %s row\n", b, peer; continue }
        td = median(d); tp = median(p); ratio = median(q) # lo, hi: the ratios
        printf "  %12s %11.2f %11.2f %7.2f %.2f-%.2f\n", b, td, tp, ratio, lo, hi
    }
}' $files
