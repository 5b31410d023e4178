#!/bin/sh
# compare-allreduce.sh — dt's allreduce against a peer, same sizes, inputs
# and timing, one after the other, then the ratio per size (busbw dt /
# busbw peer: above 1 means dt is faster). Peers: Open MPI's MPI_Allreduce
# over its TCP BTL (default, --peer mpi), its UCX PML (--peer mpi-ucx) or
# its shared-memory BTL (--peer mpi-sm), or PyTorch's gloo backend (--peer
# gloo, Debian's python3-torch, launched by dtctl through torch's env://).
#
#   bench/compare-allreduce.sh [-n N] [--sizes 4K:256M] [--iters K]
#                              [--builddir DIR] [--transport NAME]
#                              [--peer mpi|mpi-ucx|mpi-sm|gloo]
# DIR is the build directory (default: the current directory when it holds
# core/dtctl, else _build next to this script).
set -eu
np=2 sizes=4K:256M iters=20 transport=tcp builddir= peer=mpi
here=$(cd "$(dirname "$0")" && pwd)
while [ $# -gt 0 ]; do
    case $1 in
    -n) np=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    --builddir) builddir=$2; shift 2 ;;
    --peer) peer=$2; shift 2 ;;
    *) echo "usage: $0 [-n N] [--sizes MIN:MAX] [--iters K] [--builddir DIR] [--transport NAME]" >&2
       exit 2 ;;
    esac
done
if [ -z "$builddir" ]; then
    if [ -x core/dtctl ]; then builddir=.; else builddir=$here/../_build; fi
fi
dtctl=$builddir/core/dtctl
mpibench=$builddir/bench/mpi_allreduce
[ -x "$dtctl" ] || { echo "no dtctl in $builddir/core: build dt first" >&2; exit 1; }
if [ "$peer" != gloo ] && [ ! -x "$mpibench" ]; then
    command -v mpicc >/dev/null || { echo "no $mpibench and no mpicc: install libopenmpi-dev" >&2; exit 1; }
    mpibench=$(mktemp "${TMPDIR:-/tmp}/mpi_allreduce.XXXXXX")
    mpicc -O2 -o "$mpibench" "$here/mpi_allreduce.c"
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/dt-compare.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, N=$np"
# The VM's two speeds (bench/cacheline_rtt.c): compare only runs that
# started and ended at the same round trip.
rtt=$builddir/bench/cacheline_rtt
[ -x "$rtt" ] && "$rtt"
# Like for like: against a peer that moves bytes through TCP (Open MPI's
# TCP BTL, gloo), dt's tcp transport carries every byte too ([collectives]
# shm = off); against shared-memory peers dt uses its segment.
case $peer in mpi|gloo) export DT_COLLECTIVES_SHM="${DT_COLLECTIVES_SHM:-off}" ;; esac
"$dtctl" bench allreduce -n "$np" --transport "$transport" \
    --sizes "$sizes" --iters "$iters" | sed "s/^\[[0-9]*\] //" >"$out/dt"
case $peer in
mpi|mpi-ucx|mpi-sm)
    case $peer in
    mpi) mca="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo" ;;
    # Open MPI's UCX path (Debian disables it unless asked for).
    mpi-ucx) mca="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" ;;
    mpi-sm) mca="--mca pml ob1 --mca btl vader,self" ;;
    esac
    # shellcheck disable=SC2086 # mca is a list of words
    mpirun --allow-run-as-root --oversubscribe -np "$np" $mca \
        "$mpibench" --sizes "$sizes" --iters "$iters" >"$out/mpi" ;;
gloo)
    /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
        { echo "PyTorch is not importable by /usr/bin/python3: apt-get install python3-torch" >&2; exit 1; }
    "$dtctl" run -n "$np" -- /usr/bin/python3 "$here/gloo_allreduce.py" \
        --sizes "$sizes" --iters "$iters" | sed -n 's/^\[0\] //p' >"$out/mpi" ;;
*) echo "--peer is mpi, mpi-ucx, mpi-sm or gloo, not '$peer'" >&2; exit 2 ;;
esac
cat "$out/dt" "$out/mpi"
[ -x "$rtt" ] && "$rtt"
echo "# ratio dt/$peer (busbw; for time, $peer/dt): above 1 = dt faster"
printf '# %12s %11s %11s %11s %11s %7s\n' bytes dt_us "${peer}_us" dt_busbw "${peer}_busbw" ratio
grep -v '^#' "$out/dt" >"$out/dt.rows"
grep -v '^#' "$out/mpi" >"$out/mpi.rows"
awk 'NR == FNR { t[$1] = $3; b[$1] = $5; next }
     ($1 in t) { r = $3 > 0 ? $3 / t[$1] : 0;
                 printf "  %12s %11.2f %11.2f %11.3f %11.3f %7.2f\n",
                        $1, t[$1], $3, b[$1], $5, r }' \
    "$out/dt.rows" "$out/mpi.rows"
