#!/bin/sh
# The nccl transport: on a host without a GPU, `dtctl plugins` lists it as
# unavailable with the reason and a job asking for it fails at once with a
# clear message (then the GPU part is skipped, visibly). With a GPU: the
# allreduce example over nccl.
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
if echo "$line" | grep -q " available "; then
    if timeout 300 "$DTCTL" --transport=nccl run -n 1 -- "$ex" >"$tmp/out" \
        2>&1 && grep -q "all collectives correct" "$tmp/out"; then
        echo "ok: allreduce example over nccl on the GPU"
        exit 0
    fi
    echo "FAIL: allreduce over nccl:"
    cat "$tmp/out"
    exit 1
fi
if ! echo "$line" | grep -q "unavailable" ||
   ! echo "$line" | grep -qi "GPU"; then
    echo "FAIL: dtctl plugins does not say why nccl is unavailable:"
    cat "$tmp/plugins"
    exit 1
fi
echo "ok: dtctl plugins shows nccl unavailable with the reason"
timeout 120 "$DTCTL" --transport=nccl run -n 2 -- "$ex" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] ||
   ! grep -q "transport plugin 'nccl'.*not available here: .*GPU" "$tmp/out"; then
    echo "FAIL: a job with --transport=nccl without a GPU (exit $rc):"
    cat "$tmp/out"
    exit 1
fi
echo "ok: a job asking for nccl without a GPU fails clearly (exit $rc)"
echo "SKIP: no CUDA GPU on this host: the GPU runs of nccl were not done"
exit 77
