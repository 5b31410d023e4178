#!/bin/sh
# The nccl transport: on a host without a GPU, `dtctl plugins` lists it as
# unavailable with the reason and a job asking for it fails at once with a
# clear message (then the GPU part is skipped, visibly). With two GPUs or
# more: the allreduce example over nccl on two ranks, one GPU each (a job
# of one never loads the transport, so it would test no NCCL code); with
# one GPU that run is skipped, visibly.
set -u
plugin="$top_builddir/plugins/modules/dt_transport_nccl.so"
if [ ! -e "$plugin" ]; then
    echo "SKIP: the nccl transport plugin is not built (configure found no" \
         "CUDA runtime with NCCL)"
    exit 77
fi
ex="$top_builddir/examples/allreduce"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-nccl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_TRANSPORT 2>/dev/null
"$DTCTL" plugins >"$tmp/plugins" 2>&1
line=$(grep -A1 "^transport  *nccl " "$tmp/plugins")
# GPUs this job may use: nvidia-smi's, or fewer where CUDA_VISIBLE_DEVICES
# names fewer.
gpu_count() {
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') || n=0
    if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
        v=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
        [ "$v" -lt "$n" ] && n=$v
    fi
    echo "$n"
}
if echo "$line" | grep -q " available "; then
    gpus=$(gpu_count)
    if [ "$gpus" -lt 2 ]; then
        echo "SKIP: $gpus GPU(s) visible (nvidia-smi -L," \
             "CUDA_VISIBLE_DEVICES): the nccl run needs two ranks on two" \
             "GPUs (a job of one never loads the transport); not done"
        exit 77
    fi
    DT_LOG_LEVEL=debug timeout 300 "$DTCTL" --transport=nccl run -n 2 -- \
        "$ex" >"$tmp/out" 2>&1
    rc=$?
    # Both ranks joined over nccl and NCCL made its communicator.
    if [ $rc -eq 0 ] && grep -q "all collectives correct" "$tmp/out" &&
       grep -q "joined the job: rank 1 of 2 .*transport nccl" "$tmp/out" &&
       grep -q "nccl: rank 1 of 2 on GPU" "$tmp/out"; then
        echo "ok: allreduce example over nccl on 2 ranks, 2 GPUs"
        exit 0
    fi
    echo "FAIL: allreduce over nccl on 2 GPUs (exit $rc):"
    cat "$tmp/out"
    exit 1
fi
if ! echo "$line" | grep -q "unavailable" ||
   ! echo "$line" | grep -qi "GPU"; then
    echo "FAIL: dtctl plugins does not say why nccl is unavailable:"
    cat "$tmp/plugins"
    exit 1
fi
# The reason is the host's (no driver, no GPU, an old driver), not the CUDA
# runtime's "CUDA driver version is insufficient for CUDA runtime version",
# which it says when there is no driver at all.
if echo "$line" | grep -q "driver version is insufficient" ||
   ! echo "$line" | grep -q "no NVIDIA driver on this host\|no NVIDIA GPU on this host\|no usable NVIDIA GPU on this host\|update the driver"; then
    echo "FAIL: the reason does not say what this host lacks:"
    cat "$tmp/plugins"
    exit 1
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' &&
   ! echo "$line" | grep -q "no NVIDIA driver on this host"; then
    echo "FAIL: no libcuda.so.1 here, but the reason is not 'no NVIDIA driver':"
    cat "$tmp/plugins"
    exit 1
fi
echo "ok: dtctl plugins shows nccl unavailable with the reason"
timeout 120 "$DTCTL" --transport=nccl run -n 2 -- "$ex" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] ||
   ! grep -q "transport plugin 'nccl'.*not available here: .*NVIDIA" "$tmp/out"; then
    echo "FAIL: a job with --transport=nccl without a GPU (exit $rc):"
    cat "$tmp/out"
    exit 1
fi
echo "ok: a job asking for nccl without a GPU fails clearly (exit $rc)"
echo "SKIP: no CUDA GPU on this host: the GPU runs of nccl were not done"
exit 77
