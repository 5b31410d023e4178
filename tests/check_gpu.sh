#!/bin/sh
# check_gpu.sh — `dt-train --gpus` and the gpu row of `dtctl check`
# (issue 18 part 5: dtctl check reports each host's GPUs, driver and
# library versions, and refuses nccl with more ranks than GPUs).
#
# This machine has no GPU: the GPUs come from a STAND-IN libcuda.so.1
# (tests/fixtures/fixture_libcuda.c, the driver API calls the inventory
# makes), put first on LD_LIBRARY_PATH. The CUDA libraries' versions are
# the real ones where CUDA is installed (dlopen of the files dt loads).
trainer="$top_builddir/core/dt-train"
standin="$top_builddir/tests/fixtures/standin_libcuda/.libs/libcuda.so"
[ -x "$trainer" ] || { echo "FAIL: $trainer missing"; exit 1; }
[ -f "$standin" ] || { echo "FAIL: $standin missing"; exit 1; }
tmp=$(mktemp -d /tmp/dt-check-gpu.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir "$tmp/lib" && ln -s "$standin" "$tmp/lib/libcuda.so.1"

# ---- no driver: the reason, and the libraries found anyway -----------------
# (a machine with a real driver would list its GPUs: skip this part there;
# where the system has no libcuda.so.1 the part must run)
no_driver=1
ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && no_driver=0
if [ $no_driver = 1 ]; then
    LD_LIBRARY_PATH=/nonexistent "$trainer" --gpus >"$tmp/none" 2>&1 ||
        { cat "$tmp/none"; fail "dt-train --gpus without a driver: exit $?"; }
    grep -q '^none no NVIDIA driver' "$tmp/none" ||
        { cat "$tmp/none"; fail "no 'none no NVIDIA driver' line without libcuda.so.1"; }
    grep -q '^end$' "$tmp/none" || { cat "$tmp/none"; fail "no end line"; }
    grep -q '^gpu ' "$tmp/none" && { cat "$tmp/none"; fail "GPUs listed without a driver"; }
    "$DTCTL" --set train.device=cuda check >"$tmp/c0" 2>&1 &&
        { cat "$tmp/c0"; fail "device = cuda without a GPU passed dtctl check"; }
    grep -q "gpu  *FAIL  *\[train\] device = cuda, but no GPU here: no NVIDIA driver" "$tmp/c0" ||
        { cat "$tmp/c0"; fail "no gpu FAIL row naming the missing driver"; }
    "$DTCTL" check >"$tmp/c1" 2>&1 || { cat "$tmp/c1"; fail "a cpu job failed dtctl check"; }
    grep -q "gpu  *skip  *no GPU (no NVIDIA driver" "$tmp/c1" ||
        { cat "$tmp/c1"; fail "no gpu skip row"; }
    LD_LIBRARY_PATH=/nonexistent "$DTCTL" --nproc-per-node gpu run -- true >"$tmp/n0" 2>&1 &&
        fail "--nproc-per-node gpu started workers without a GPU"
    grep -q "error: --nproc-per-node gpu: no GPU here (no NVIDIA driver" "$tmp/n0" ||
        { cat "$tmp/n0"; fail "--nproc-per-node gpu without a GPU not explained"; }
    # torchrun's auto: no GPU, one worker per CPU (pinned to one: one)
    cpu=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//; s/[-,].*//')
    if [ -n "$cpu" ]; then
        LD_LIBRARY_PATH=/nonexistent taskset -c "$cpu" "$DTCTL" --nproc-per-node auto run -- sh -c 'echo "ws=$WORLD_SIZE"' >"$tmp/a0" 2>&1 ||
            { cat "$tmp/a0"; fail "--nproc-per-node auto without a GPU failed"; }
        [ "$(grep -c 'ws=1$' "$tmp/a0")" = 1 ] &&
            grep -q "info: --nproc-per-node auto: 1 CPU here (no GPU: no NVIDIA driver" "$tmp/a0" ||
            { cat "$tmp/a0"; fail "--nproc-per-node auto without a GPU: want one worker per CPU, said"; }
    fi
    echo "no driver: named; device = cuda refused, a cpu job passes"
fi

# ---- the stand-in driver: two GPUs ----------------------------------------
LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
"$trainer" --gpus >"$tmp/two" 2>&1 || { cat "$tmp/two"; fail "dt-train --gpus exit $?"; }
cat "$tmp/two"
[ "$(grep -c '^gpu ' "$tmp/two")" = 2 ] || fail "not 2 gpu lines"
grep -q '^gpu 1 81559 9.0 Stand-in GPU A$' "$tmp/two" || fail "gpu 1 line"
grep -q '^driver [^ ]* cuda 13.0$' "$tmp/two" || fail "driver line"
DT_STANDIN_GPUS=fail "$trainer" --gpus >"$tmp/nodev" 2>&1
grep -q '^none the NVIDIA driver reports no usable GPU: no CUDA-capable device is detected (CUDA driver error 100)$' "$tmp/nodev" ||
    { cat "$tmp/nodev"; fail "cuInit's error not reported"; }

# -n counts GPUs: --nproc-per-node gpu (torchrun's spelling) starts one
# worker per GPU of this machine; a host list must give its slots.
DT_STANDIN_GPUS=3 "$DTCTL" --nproc-per-node gpu run -- sh -c 'echo "ws=$WORLD_SIZE"' >"$tmp/n3" 2>&1 ||
    { cat "$tmp/n3"; fail "--nproc-per-node gpu with 3 GPUs"; }
[ "$(grep -c 'ws=3$' "$tmp/n3")" = 3 ] || { cat "$tmp/n3"; fail "--nproc-per-node gpu did not start 3 workers of 3"; }
grep -q "info: --nproc-per-node gpu: 3 GPUs here (Stand-in GPU A): 3 workers" "$tmp/n3" ||
    { cat "$tmp/n3"; fail "no line saying how many GPUs were counted"; }
# auto: one per GPU where there are GPUs
DT_STANDIN_GPUS=3 "$DTCTL" --nproc-per-node auto run -- sh -c 'echo "ws=$WORLD_SIZE"' >"$tmp/a3" 2>&1 ||
    { cat "$tmp/a3"; fail "--nproc-per-node auto with 3 GPUs"; }
[ "$(grep -c 'ws=3$' "$tmp/a3")" = 3 ] && grep -q "info: --nproc-per-node auto: 3 GPUs here (Stand-in GPU A): 3 workers" "$tmp/a3" ||
    { cat "$tmp/a3"; fail "--nproc-per-node auto did not start one worker per GPU"; }
"$DTCTL" --nproc-per-node gpu -H localhost:2 run -- true >"$tmp/n4" 2>&1 &&
    fail "--nproc-per-node gpu with a host list accepted"
grep -q "counts this machine's GPUs; with a host list give each host's slots" "$tmp/n4" ||
    { cat "$tmp/n4"; fail "--nproc-per-node gpu with -H not explained"; }
echo "--nproc-per-node gpu: 3 workers on 3 (stand-in) GPUs; refused without a GPU and with -H; auto: GPUs, else CPUs"

# nccl: one rank per GPU. 4 ranks on a host with 2 GPUs: refused.
"$DTCTL" -H localhost:4 --transport=nccl check >"$tmp/c2" 2>&1 &&
    { cat "$tmp/c2"; fail "nccl with 4 ranks on 2 GPUs passed"; }
grep -q "gpu  *FAIL  *nccl runs one rank per GPU: 4 ranks would share 2 GPUs (2 x Stand-in GPU A (81559 MiB, compute 9.0)); give the host 2 slots" "$tmp/c2" ||
    { cat "$tmp/c2"; fail "the nccl row does not name ranks and GPUs"; }
# Only -n 2 of 4 slots used: 2 ranks there, fine for the gpu row.
"$DTCTL" -H localhost:4 -n 2 --transport=nccl check >"$tmp/c3" 2>&1
grep -q "gpu  *\(ok\|FAIL\)  *2 x Stand-in GPU A\|needs nccl" "$tmp/c3" ||
    { cat "$tmp/c3"; fail "-n 2 of 4 slots judged as 4 ranks"; }
grep -q "would share" "$tmp/c3" && { cat "$tmp/c3"; fail "-n 2 counted as 4 ranks"; }
if grep -q '^lib cudart [0-9]' "$tmp/two" && grep -q '^lib cublas [0-9]' "$tmp/two"; then
    "$DTCTL" --set train.device=cuda -H localhost:2 check >"$tmp/c4" 2>&1 ||
        { cat "$tmp/c4"; fail "device = cuda with 2 (stand-in) GPUs and CUDA failed dtctl check"; }
    grep -q "gpu  *ok  *2 x Stand-in GPU A (81559 MiB, compute 9.0); driver [^(]* (CUDA 13.0); cudart [0-9.]*, cublas [0-9.]*" "$tmp/c4" ||
        { cat "$tmp/c4"; fail "the ok row does not list GPUs and versions"; }
    grep "gpu  *ok" "$tmp/c4"
else
    echo "the CUDA runtime is not installed here: the ok row not checked"
fi
echo PASS
