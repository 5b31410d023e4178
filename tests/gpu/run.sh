#!/bin/bash
# tests/gpu/run.sh — dt's one-call GPU check, run THERE on a lent H100/H200
# (one device-tool call, about 8 minutes at most) over the bundle that
# tests/gpu/prepare.sh built HERE into _gpu/. See tests/gpu/README.md.
#
#   tests/gpu/run.sh          on the device machine ($OUT: where logs go)
#   tests/gpu/run.sh --dry    anywhere, without a GPU: the script's logic,
#                             the bundle's layout, ldd, and a CPU rehearsal
#                             of each job's command line; every step that
#                             needs the GPU says SKIP(no GPU)
#
# Steps (each with its own timeout, all under one budget, $DT_GPU_BUDGET
# seconds, default 480; DT_GPU_STEPS, an extended regex of step or
# summary row names, runs only those, for a rerun of what failed): environment and library discovery; ldd of every
# ELF file in _gpu; the GPU unit tests; the MLP, CNN (and ResNet) examples
# on the GPU with transport nccl at N = 1, fixed epochs, accuracy floor;
# `dtctl bench allreduce --transport=nccl -n 1`; 2 ranks over tcp on CUDA
# buffers (tests/gpu/allreduce_mem.c: dt_allreduce_mem's host staging);
# 2 ranks over nccl on the one GPU (expected to fail clearly, not hang);
# PyTorch on the same models. Ends with ONE summary table.
#
# Uses bash, coreutils (timeout, mktemp, tar, ...), grep/sed/awk, python3
# and nvidia-smi: all on the device machine. Nothing from dt's Debian
# packages: those it needs travel in _gpu/lib.
#
# What comes back from the device: at most 8 files in $OUT, so the step
# logs go into $OUT/logs.tar.gz (and the tail of each into $OUT/all.log);
# the table is $OUT/summary.txt. All three are kept current (the table after
# each row, the logs after each step; PARTIAL until the end), and a TERM or
# INT writes them and exits: a call cut at its limit still brings back
# what ran.
set -u
export LC_ALL=C

dry=no
for a in "$@"; do
    case "$a" in
        --dry) dry=yes ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument $a" >&2; exit 2 ;;
    esac
done

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
G="$top/_gpu"
T0=$(date +%s)
BUDGET=${DT_GPU_BUDGET:-480}
if [ -z "${OUT:-}" ]; then
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/dt-gpu-out.XXXXXX")
fi
mkdir -p "$OUT"
W=$(mktemp -d "${TMPDIR:-/tmp}/dt-gpu-work.XXXXXX")
L="$W/logs"
mkdir -p "$L" "$L/layers"
SUM="$W/summary.rows"
: >"$SUM"

[ -d "$G/bin" ] || { echo "run.sh: no bundle at $G: run tests/gpu/prepare.sh first (here), and carry _gpu"; exit 2; }

echo "== dt GPU check ($([ $dry = yes ] && echo 'DRY: no GPU used' || echo 'on the device')), logs: $OUT"
cat "$G/MANIFEST.txt" 2>/dev/null | sed -n '1,6p'

# ---- helpers ----------------------------------------------------------------
elapsed() { echo $(( $(date +%s) - T0 )); }
# row STEP RESULT KEY [NOTE]
# (a step DT_GPU_STEPS filtered out: its row says SKIP(filter), whatever
# the step's own code made of RC = -1)
FILTERED=0
row() {
    local r=$2 k=$3 n=${4:-}
    [ "$FILTERED" = 1 ] && { r="SKIP(filter)"; k=""; n=""; FILTERED=0; }
    printf '%s\t%s\t%s\t%s\n' "$1" "$r" "$k" "$n" >>"$SUM"; echo "-- $1: $r  $k  $n"
    summary
}

# ---- what comes back, kept current ---------------------------------------------
# The device tool returns $OUT even when it kills the call at its limit
# (TERM, or KILL, which no trap sees), so the table is rewritten after
# every row and the logs after every step, each written aside and renamed
# (a kill mid-write leaves a *.part beside the last good copy: 6 files at
# most of the 8 that come back). STATE: running (the table says PARTIAL),
# final, or why it stopped early.
STATE=running
# summary: $SUM as the table, into $W/summary.txt and $OUT/summary.txt.
# awk -F'\t', not `read`: tab is IFS whitespace to read, so an empty key
# would shift the note into the key's column.
summary() {
    local fails w
    fails=$(awk -F'\t' '$2 == "FAIL" || $2 == "TIMEOUT"' "$SUM" | wc -l)
    w=$(awk -F'\t' 'BEGIN {w = 20} length($1) > w {w = length($1)} END {print w}' "$SUM")
    {
        echo
        echo "== dt GPU check summary ($([ "$dry" = yes ] && echo DRY || echo device): ${gpu_name:-no GPU}; $(elapsed)s of ${BUDGET}s)"
        case $STATE in
            final) ;;
            running) echo "PARTIAL: the table so far (still running at $(elapsed)s)" ;;
            *) echo "PARTIAL: $STATE; the steps after it never ran" ;;
        esac
        [ -n "${DT_GPU_STEPS:-}" ] && echo "DT_GPU_STEPS='$DT_GPU_STEPS': the steps it does not match were skipped (SKIP(filter))"
        awk -F'\t' -v w="$w" 'BEGIN {f = "%-" w "s %-14s %-32s %s\n"
                                     printf f, "step", "result", "key", "note"; printf f, "----", "------", "---", "----"}
                              {printf f, $1, $2, $3, $4}' "$SUM"
        if [ "$STATE" = final ]; then
            echo "failures: $fails  (logs: $OUT/logs.tar.gz, tails: $OUT/all.log)"
        else
            echo "failures so far: $fails  (PARTIAL; logs: $OUT/logs.tar.gz, tails: $OUT/all.log)"
        fi
    } >"$W/summary.txt"
    cp "$W/summary.txt" "$OUT/summary.txt.part" && mv -f "$OUT/summary.txt.part" "$OUT/summary.txt"
}
# logs_out: every log's tail into $OUT/all.log, every log into
# $OUT/logs.tar.gz (a few hundred KB: well under a second)
logs_out() {
    local f
    for f in "$L"/*.log; do
        echo "===== $(basename "$f") (last 60 lines)"; tail -60 "$f"
    done >"$OUT/all.log.part" 2>&1
    mv -f "$OUT/all.log.part" "$OUT/all.log"
    # (exit 1, "file changed as we read it", still leaves a good archive)
    tar czf "$OUT/logs.tar.gz.part" -C "$W" logs summary.txt 2>/dev/null
    [ -s "$OUT/logs.tar.gz.part" ] && mv -f "$OUT/logs.tar.gz.part" "$OUT/logs.tar.gz"
}
# A TERM or INT (the call's limit, a ^C): stop the running step (its
# timeout passes the signal on to the step's process group), say so in its
# row, write the three files and exit. Bash runs a trap only once its
# foreground child has ended: run_step runs the step in the background and
# waits, which the trap interrupts at once.
STEP_PID="" STEP_NAME=""
on_signal() { # TERM|INT
    trap '' TERM INT
    local step=$STEP_NAME
    STATE="killed by $1 at $(elapsed)s${step:+ during $step}"
    echo "== run.sh: $STATE: writing what ran to $OUT"
    [ -n "${MEMPID:-}" ] && kill "$MEMPID" 2>/dev/null
    if [ -n "$STEP_PID" ]; then
        kill -TERM "$STEP_PID" 2>/dev/null
        # a second for the step's last lines (a zombie counts as gone)
        for _ in 1 2 3 4 5; do
            grep -q ') Z' "/proc/$STEP_PID/stat" 2>/dev/null || [ ! -e "/proc/$STEP_PID" ] && break
            sleep 0.2
        done
    fi
    STEP_PID="" STEP_NAME="" FILTERED=0
    # cut during the ws64 run (section 11), which logs under the default
    # row's name: both logs back under their own names
    if [ -f "$W/default.log" ]; then
        mv "$L/dt_resnet18_bf16_bench.log" "$L/dt_resnet18_bf16_bench_ws64.log" 2>/dev/null
        mv "$W/default.log" "$L/dt_resnet18_bf16_bench.log"
        [ "$step" = dt_resnet18_bf16_bench ] && step=dt_resnet18_bf16_bench_ws64
    fi
    [ -n "$step" ] && row "$step" KILLED "$1 at $(elapsed)s" "the call was cut here (its limit?): see $step.log"
    summary; logs_out
    cat "$OUT/summary.txt"
    rm -rf "$W"
    [ "$1" = INT ] && exit 130
    exit 143
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
# tmo WANTED: the timeout a step gets: WANTED, or what is left of the budget.
tmo() {
    local left=$(( BUDGET - $(elapsed) - 15 ))
    [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
# selected NAME...: DT_GPU_STEPS is unset or matches one of the NAMEs
selected() {
    [ -z "${DT_GPU_STEPS:-}" ] && return 0
    local n
    for n in "$@"; do echo "$n" | grep -Eq "$DT_GPU_STEPS" && return 0; done
    return 1
}
# STEP_ROWS: the summary rows a sub-step feeds (e.g. dt_resnet18_bf16 feeds
# vs_torch_resnet18_bf16): DT_GPU_STEPS matching one of them runs it too
STEP_ROWS=""
# run_step NAME SECONDS CMD...: runs CMD under timeout with output in
# $L/NAME.log; sets RC (124: timed out; -1: no time left).
run_step() {
    local name=$1 secs; secs=$(tmo "$2"); shift 2
    # DT_GPU_STEPS (an extended regex of step or row names): a rerun of only
    # what failed, e.g. DT_GPU_STEPS='test_nn_cuda|vs_torch_resnet18_bf16$'
    FILTERED=0
    # shellcheck disable=SC2086 # STEP_ROWS: a list of names
    if ! selected "$name" $STEP_ROWS; then
        echo "(filtered out by DT_GPU_STEPS)" >"$L/$name.log"; RC=-1; FILTERED=1; return
    fi
    if [ "$secs" -lt 10 ]; then
        echo "(no time left for $name)" >"$L/$name.log"; RC=-1; return
    fi
    echo "== $name (timeout ${secs}s, at $(elapsed)s): $*"
    local t=$(date +%s)
    # in the background, so that a TERM's trap runs now (see on_signal);
    # the step's stdin is /dev/null, as it would be on the device anyway
    timeout -k 10 "$secs" "$@" >"$L/$name.log" 2>&1 &
    STEP_PID=$! STEP_NAME=$name
    wait "$STEP_PID"
    RC=$?
    STEP_PID="" STEP_NAME=""
    echo "   exit $RC after $(( $(date +%s) - t ))s"
    logs_out
}
# timed_out: RC is the step's timeout's (124 TERM, 137 KILL after -k)
timed_out() { [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; }
# after_stop LOG: a run that logged its last step ("stopping after N steps
# ([train] max_steps)") passes whatever else its exit status says, but not
# when its timeout cut it: a hang after the last step is a TIMEOUT
after_stop() {
    timed_out && return 0
    grep -q 'stopping after' "$1" 2>/dev/null && RC=0
    return 0
}
# hung_note LOG: a TIMEOUT row's note
hung_note() {
    if grep -q 'stopping after' "$1" 2>/dev/null; then echo "hung after its last step"
    else echo "cut at its timeout"; fi
}

# dt's steady rate from its progress lines, as torch_side's (which times
# after 20 warm-up steps): a line's samples/s is the epoch's so far, R_k
# at step k, so the rate between steps a and b is (b - a) / (b/R_b - a/R_a)
# (the batch cancels); a = the first line at step >= 20, b = the last.
dt_rate() { # LOG
    grep -o 'step [0-9]*/[0-9]* .* [0-9]* samples/s' "$1" |
        awk '{split($2, s, "/"); k = s[1]; r = $(NF - 1)
              if (k >= 20 && !a) {a = k; ra = r} if (k >= 20) {b = k; rb = r}}
             END {if (a && b > a) printf "%.0f", (b - a) / (b / rb - a / ra)}'
}

# ---- 1. environment ---------------------------------------------------------
{
    echo "date: $(date -u)"; echo "host: $(uname -a)"
    echo "cpus: $(nproc)"; grep -m1 'model name' /proc/cpuinfo
    echo "--- nvidia-smi"; nvidia-smi 2>&1 | head -20
    echo "--- nvidia-smi -L"; nvidia-smi -L 2>&1
    echo "--- nvcc"; (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>&1 | tail -2
    echo "--- ldconfig libcuda"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnccl|libcudnn\.so' | head
} >"$L/env.log" 2>&1

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') || gpus=0
[ "$dry" = yes ] && gpus=0
gpu_name=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)

# Where CUDA's libraries are: the toolkit, then the Python wheels
# (site-packages/nvidia/*/lib: cuBLAS, NCCL, cuDNN come with PyTorch), then
# the driver's folder for libcuda.so.1.
cuda=${CUDA_HOME:-/usr/local/cuda}
cands="$cuda/lib64 $cuda/targets/x86_64-linux/lib"
if command -v python3 >/dev/null; then
    wheels=$(python3 - <<'EOF' 2>/dev/null
import glob, os, site
roots = set(site.getsitepackages() + [site.getusersitepackages()])
try:
    import nvidia
    roots.update(os.path.dirname(p) for p in nvidia.__path__)
except Exception:
    pass
for r in sorted(roots):
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib"))):
        print(d)
EOF
)
    cands="$cands $wheels"
fi
cands="$cands /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64"
libpath=""
found=""
for lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2 libcudnn.so.9; do
    where=""
    for d in $cands; do
        if [ -e "$d/$lib" ]; then where=$d; break; fi
    done
    if [ -z "$where" ] && [ "$lib" = libcuda.so.1 ]; then
        where=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {print $NF; exit}')
        where=${where%/*}
    fi
    found="$found $lib=${where:-MISSING}"
    if [ -n "$where" ]; then
        case ":$libpath:" in *":$where:"*) ;; *) libpath="${libpath:+$libpath:}$where" ;; esac
    fi
done
vers() { # the version a library file's real name carries
    local d=${1#*=}; local l=${1%%=*}
    [ "$d" = MISSING ] && { echo "$l: MISSING"; return; }
    echo "$l: $(basename "$(readlink -f "$d/$l")") in $d"
}
{
    echo "--- libraries found (search: $cands)"
    for f in $found; do vers "$f"; done
    echo "--- LD_LIBRARY_PATH for dt: $G/lib:$libpath"
    echo "--- python3: $(command -v python3)"
    python3 - <<'EOF' 2>&1
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          "cudnn", torch.backends.cudnn.version(),
          "nccl", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-",
          "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
except Exception as e:
    print("torch: not usable:", e)
EOF
} >>"$L/env.log" 2>&1
sed -n '/--- libraries found/,$p' "$L/env.log"
DTLIBS="$G/lib:$libpath"
if [ $gpus -gt 0 ]; then
    row env PASS "$gpus GPU" "$gpu_name"
else
    row env "$([ $dry = yes ] && echo 'SKIP(no GPU)' || echo FAIL)" "0 GPU" \
        "$([ $dry = yes ] && echo 'dry run' || echo 'nvidia-smi -L lists none')"
fi
for f in $found; do
    case "$f" in *=MISSING)
        [ "${f%%=*}" = libcuda.so.1 ] && [ $dry = yes ] && continue
        row "lib ${f%%=*}" FAIL missing "searched: toolkit, wheels, driver folder" ;;
    esac
done

# Everything dt runs gets these (and nothing of ours leaks into python3).
# (An array, not a function: timeout runs it.)
DTENV=(env LD_LIBRARY_PATH="$DTLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
       DT_PLUGIN_PATH="$G/plugins/modules" DT_LIBEXECDIR="$G/bin"
       top_builddir="$G" DT_LOG_LEVEL="${DT_LOG_LEVEL:-info}")
DTCTL="$G/bin/dtctl"

# ---- 2. ldd -------------------------------------------------------------------
nf=0; outside=0; n=0
: >"$L/ldd.log"
for f in "$G"/bin/* "$G"/lib/* "$G"/plugins/modules/* "$G"/tests/*; do
    [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = "177ELF" ] || continue
    n=$((n + 1))
    echo "== ${f#"$G"/}" >>"$L/ldd.log"
    "${DTENV[@]}" ldd "$f" >>"$L/ldd.log" 2>&1
done
nf=$(grep -c 'not found' "$L/ldd.log")
# Resolved outside _gpu and CUDA's folders: Debian's own (dry run here) or
# the device's system (fine there; listed for the record).
outside=$(grep '=> /' "$L/ldd.log" | grep -v -e "=> $G/" -e 'linux-vdso' |
          grep -v -E '/(libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux[^ ]*)\.so' |
          grep -v -E 'libcuda|libcudart|libcublas|libnccl|libcudnn' | awk '{print $1}' | sort -u | tr '\n' ' ')
if [ "$nf" -eq 0 ]; then
    row ldd PASS "$n ELF files" "${outside:+also from the system: $outside}"
else
    row ldd FAIL "$nf not found" "$(grep 'not found' "$L/ldd.log" | awk '{print $1}' | sort -u | tr '\n' ' ')"
fi

# ---- 3. dtctl plugins -----------------------------------------------------------
run_step plugins 30 "${DTENV[@]}" "$DTCTL" plugins
nccl_line=$(grep -A1 '^transport  *nccl ' "$L/plugins.log" | tr -s ' ' | head -2 | tr '\n' ' ')
if [ $RC -ne 0 ]; then
    row plugins FAIL "exit $RC" "dtctl plugins"
elif echo "$nccl_line" | grep -q ' available '; then
    row plugins PASS "nccl available" ""
else
    row plugins "$([ $gpus -gt 0 ] && echo FAIL || echo 'SKIP(no GPU)')" "nccl unavailable" "$(echo "$nccl_line" | cut -c1-90)"
fi

# ---- 3b. dt-train --gpus: what dtctl check reports of a host -------------------
run_step gpus_inventory 30 "${DTENV[@]}" "$G/bin/dt-train" --gpus
inv_gpus=$(grep -c '^gpu ' "$L/gpus_inventory.log")
inv_line="$(grep -m1 '^gpu 0 ' "$L/gpus_inventory.log" | cut -d' ' -f3-) $(grep -m1 '^driver ' "$L/gpus_inventory.log") $(grep '^lib ' "$L/gpus_inventory.log" | cut -d' ' -f2- | tr '\n' ' ')"
if [ $RC -ne 0 ]; then
    row gpus_inventory FAIL "exit $RC" "dt-train --gpus"
elif [ "$inv_gpus" -eq "$gpus" ] && [ "$gpus" -gt 0 ]; then
    row gpus_inventory PASS "$inv_gpus GPU" "$(echo "$inv_line" | cut -c1-110)"
elif [ "$gpus" -eq 0 ]; then
    row gpus_inventory "SKIP(no GPU)" "$inv_gpus GPU" "$(grep -m1 '^none ' "$L/gpus_inventory.log" | cut -c1-90)"
else
    row gpus_inventory FAIL "$inv_gpus GPU, nvidia-smi $gpus" "$(echo "$inv_line" | cut -c1-90)"
fi

# ---- 4. unit tests ----------------------------------------------------------------
# They skip themselves (exit 77) without a GPU: in a dry run they still
# load (libdt, cmocka, the backend) and say so.
for t in test_cuda_backend test_optimizers_cuda test_nn_cuda; do
    run_step "$t" 120 "${DTENV[@]}" "$G/tests/$t"
    key=""
    if [ $t = test_nn_cuda ]; then
        # the worst |cpu - cuda| / tolerance over every model (tolerance:
        # 1e-3 |cpu| + 4e-6 max|cpu|, tests/test_nn_cuda.c); < 1 passes
        # (and, for batchnorm, the running statistics and eval logits)
        key=$(grep -o 'logits [0-9.e+-]* (element\|gradients [0-9.e+-]* (parameter\|statistics [0-9.e+-]* (element' "$L/$t.log" |
              awk '{print $2}' | sort -g | tail -1)
        key=${key:+worst/tol $key}
    fi
    passed=$(grep -c '^\[       OK \]' "$L/$t.log")
    failed=$(grep -c '^\[  FAILED  \]' "$L/$t.log")
    case $RC in
        0) row "$t" PASS "${key:-$passed ok}" "" ;;
        77) row "$t" "SKIP(no GPU)" "" "$(grep -m1 SKIP "$L/$t.log" | cut -c1-80)" ;;
        124|137) row "$t" TIMEOUT "" "" ;;
        -1) row "$t" "SKIP(time)" "" "" ;;
        *) row "$t" FAIL "${key:-$failed failed}" "$(grep -m1 -E 'FAILED|error|Error' "$L/$t.log" | cut -c1-80)" ;;
    esac
done

# ---- GPU memory while a job runs: the peak of nvidia-smi's "used" -------------
mem_start() {
    MEMF="$W/mem.$1"; : >"$MEMF"; MEMPID=""
    [ $gpus -gt 0 ] || return 0
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1 >"$MEMF"
    ( while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1 >>"$MEMF"; sleep 0.2; done ) &
    MEMPID=$!
}
mem_stop() { # prints the peak in MiB minus the first reading (idle)
    [ -n "$MEMPID" ] && { kill "$MEMPID" 2>/dev/null; wait "$MEMPID" 2>/dev/null; }
    awk 'NR == 1 {b = $1} {if ($1 > m) m = $1} END {if (NR) printf "%d", m - b}' "$MEMF"
}

# ---- 5. training: MLP, CNN, ResNet on the GPU, nccl, N = 1 -------------------
# Fixed epochs and an accuracy floor. CPU references (this repo's build
# with OpenBLAS, seed 1, 2 epochs, N = 1): MLP 87.76%, CNN 90.17%.
# The floor is 1 point under the CPU's; the target (issue 18) is within 0.3.
declare -A FLOOR=([mlp]=86.7 [cnn]=89.1 [resnet]=0)
declare -A CPUREF=([mlp]=87.76 [cnn]=90.17 [resnet]=0)
declare -A EPOCHS=([mlp]=2 [cnn]=2 [resnet]=1)
declare -A TLIM=([mlp]=120 [cnn]=150 [resnet]=90)
declare -A DTSPS DTACC DTMEM
train() { # MODEL
    local m=$1 job="$G/conf/fashion-mnist-$1.ini" dev=cuda tr=nccl extra=()
    [ "$m" = resnet ] && extra=(--set train.max_steps=300)
    if [ $gpus -eq 0 ]; then
        # CPU rehearsal of the same command line (data, plugins, trainer);
        # tcp, since dtctl refuses nccl up front without a GPU; 640 test
        # samples: the ResNet's full test set on plain loops (the bundle
        # has no OpenBLAS) outlasted its 90 s on a loaded machine
        dev=cpu; tr=tcp; extra=(--set train.max_steps=30 --set train.log_every=10
                                --set data.test_samples=640)
    fi
    mem_start "$m"
    run_step "train_$m" "${TLIM[$m]}" "${DTENV[@]}" "$DTCTL" --transport=$tr run -n 1 "$job" \
        --set train.device=$dev --set train.epochs="${EPOCHS[$m]}" \
        --set data.path="$G/data/fashion-mnist" "${extra[@]}"
    local mem; mem=$(mem_stop)
    local log="$L/train_$m.log"
    local acc; acc=$(grep -o 'final test accuracy: [0-9.]*' "$log" | awk '{print $4}' | tail -1)
    local sps; sps=$(grep 'test_accuracy' "$log" | grep -o '[0-9]* samples/s' | tail -1 | awk '{print $1}')
    [ -z "$sps" ] && sps=$(grep -o '[0-9]* samples/s' "$log" | tail -1 | awk '{print $1}')
    DTSPS[$m]=$sps; DTACC[$m]=$acc; DTMEM[$m]=$mem
    local used; used=$(grep -o 'device: [^ ]*' "$log" | head -1)
    if [ $gpus -eq 0 ]; then
        after_stop "$log"
        if [ $RC -eq 0 ]; then
            row "train_$m" "SKIP(no GPU)" "cpu rehearsal ok" "$used, $sps samples/s"
        elif timed_out; then
            row "train_$m" TIMEOUT "cpu rehearsal" "$(hung_note "$log")"
        else
            row "train_$m" "SKIP(no GPU)" "cpu rehearsal FAILED" "exit $RC: $(grep -m1 -i error "$log" | cut -c1-70)"
        fi
        return
    fi
    if [ $RC -eq -1 ]; then row "train_$m" "SKIP(time)" "" ""; return; fi
    # a layer still without a CUDA path, or a backend built without cuDNN
    # (conv, batchnorm, pooling need it: core/cuda/cudnn_*.c)
    local nyet='no CUDA implementation|built without cuDNN'
    if [ $RC -ne 0 ] && grep -q -E "$nyet" "$log"; then
        row "train_$m" "NOT-YET" "" "$(grep -m1 -E "$nyet" "$log" | sed 's/.*error: //' | cut -c1-90)"
        return
    fi
    [ "$m" = resnet ] && after_stop "$log"
    if timed_out; then
        row "train_$m" TIMEOUT "exit $RC" "$(hung_note "$log")"
    elif [ $RC -ne 0 ]; then
        row "train_$m" FAIL "exit $RC" "$(grep -m1 -i -E 'error|fail' "$log" | cut -c1-80)"
    elif [ "$m" = resnet ]; then
        row "train_$m" PASS "${sps:-?} samples/s" "300 steps; $used; peak mem +${mem}MiB"
    elif awk -v a="${acc:-0}" -v f="${FLOOR[$m]}" 'BEGIN {exit !(a >= f)}'; then
        row "train_$m" PASS "acc ${acc}% (cpu ${CPUREF[$m]})" "${sps} samples/s; $used; peak mem +${mem}MiB"
    else
        row "train_$m" FAIL "acc ${acc:-?}% < ${FLOOR[$m]}" "${sps} samples/s; $used"
    fi
}
train mlp
train cnn

# ---- 5b. the CNN at precision = bf16 (target: within 0.3 pt of fp32) and
# fp16 with dynamic loss scaling (GradScaler's rules; the log's skipped
# steps in the note): fp32's floor.
cnn_precision() { # bf16|fp16
    local p=$1 name="train_cnn_$1" log="$L/train_cnn_$1.log"
    if [ $gpus -eq 0 ]; then row "$name" "SKIP(no GPU)" "" "refused on the CPU; loss scaling: tests/train_loss_scale.sh"; return; fi
    run_step "$name" 150 "${DTENV[@]}" "$DTCTL" --transport=nccl run -n 1 "$G/conf/fashion-mnist-cnn.ini" \
        --set train.device=cuda --set train.epochs=2 --set train.precision="$p" \
        --set data.path="$G/data/fashion-mnist"
    local acc; acc=$(grep -o 'final test accuracy: [0-9.]*' "$log" | awk '{print $4}' | tail -1)
    local sps; sps=$(grep 'test_accuracy' "$log" | grep -o '[0-9]* samples/s' | tail -1 | awk '{print $1}')
    local note="${sps} samples/s (fp32 ${DTSPS[cnn]:-not run})"
    [ "$p" = fp16 ] && note="$note; $(grep -o -i -E '(loss scale|skipped)[^;,]*' "$log" | tail -2 | tr '\n' ' ' | cut -c1-60)"
    if [ $RC -eq -1 ]; then row "$name" "SKIP(time)" "" ""; return; fi
    if timed_out; then
        row "$name" TIMEOUT "exit $RC" "$(hung_note "$log")"
    elif [ $RC -ne 0 ]; then
        row "$name" FAIL "exit $RC" "$(grep -m1 -i -E 'error|fail' "$log" | cut -c1-80)"
    elif awk -v a="${acc:-0}" -v f="${FLOOR[cnn]}" 'BEGIN {exit !(a >= f)}'; then
        row "$name" PASS "acc ${acc}% (fp32 ${DTACC[cnn]:-not run})" "$note"
    else
        row "$name" FAIL "acc ${acc:-?}% < ${FLOOR[cnn]}" "$note"
    fi
}
cnn_precision bf16
cnn_precision fp16

# ---- 5c. the trainer at N = 2 over tcp on one GPU: grad_sync's staged path
# (a copy stream, one pinned copy per bucket, events) on a real device; the
# first step's debug line says the path and the device-to-host copies.
# Also [train] cuda_graphs = auto at N > 1 (its timed steps include the
# gradient sync; core/nn/model_graph.c decide()): each rank logs its own
# choice, and the note says which each made.
# graphs_auto LOG: "rank 0 graphs (0.41/0.55 ms), rank 1 eager (...)":
# each rank's first decision, captured/eager step in ms
graphs_auto() {
    grep 'cuda_graphs = auto: a captured step took' "$1" 2>/dev/null |
        awk '{r = ($1 ~ /^\[[0-9]+\]$/) ? substr($1, 2, length($1) - 2) : "?"
              if (seen[r]++) next
              for (i = 1; i < NF; i++) { if ($i == "took") g = $(i + 1); if ($i == "one") e = $(i + 1) }
              printf "%srank %s %s (%s/%s ms)", n++ ? ", " : "", r, ($NF == "kept") ? "graphs" : "eager", g, e}'
}
tcp2() {
    local log="$L/train_mlp_tcp2.log"
    if [ $gpus -eq 0 ]; then row train_mlp_tcp2 "SKIP(no GPU)" "" "staged path: test_device_standin"; return; fi
    run_step train_mlp_tcp2 120 "${DTENV[@]}" DT_LOG_LEVEL=debug "$DTCTL" --transport=tcp run -n 2 \
        "$G/conf/fashion-mnist-mlp.ini" --set train.device=cuda --set train.epochs=2 \
        --set data.path="$G/data/fashion-mnist"
    local acc; acc=$(grep -o 'final test accuracy: [0-9.]*' "$log" | awk '{print $4}' | tail -1)
    local path; path=$(grep -m1 -o 'd2h_grad_copies=[0-9]*' "$log")
    # auto's choice; no decision line: the capture failed (its warning) or
    # the run ended first
    local ga; ga=$(graphs_auto "$log")
    [ -z "$ga" ] && ga=$(grep -m1 -o 'training step could not be captured.*' "$log" | cut -c1-60)
    ga="graphs auto: ${ga:-no decision logged}"
    if [ $RC -eq -1 ]; then row train_mlp_tcp2 "SKIP(time)" "" ""
    elif timed_out; then row train_mlp_tcp2 TIMEOUT "exit $RC" "$(hung_note "$log"); $ga"
    elif [ $RC -ne 0 ]; then
        row train_mlp_tcp2 FAIL "exit $RC" "$(grep -m1 -i -E 'error|fail' "$log" | cut -c1-80)"
    elif awk -v a="${acc:-0}" -v f="${FLOOR[mlp]}" 'BEGIN {exit !(a >= f)}'; then
        row train_mlp_tcp2 PASS "acc ${acc}%" "${path:-no debug line}; $(grep -m1 -o 'averaged in [0-9]* bucket[s]*' "$log"); $ga"
    else
        row train_mlp_tcp2 FAIL "acc ${acc:-?}% < ${FLOOR[mlp]}" "${path}; $ga"
    fi
}
tcp2

# ---- 5d. sync_bn on the GPU (core/cuda/bn_sync.cu) in the trainer: the
# ResNet example at N = 2 over tcp on the one GPU, 200 steps; the
# kernels' arithmetic against the CPU is test_nn_cuda's test_sync_bn.
syncbn2() {
    local log="$L/train_resnet_syncbn2.log"
    if [ $gpus -eq 0 ]; then row train_resnet_syncbn2 "SKIP(no GPU)" "" "stand-in: test_nn_standin test_sync_bn"; return; fi
    run_step train_resnet_syncbn2 120 "${DTENV[@]}" "$DTCTL" --transport=tcp run -n 2 \
        "$G/conf/fashion-mnist-resnet.ini" --set train.device=cuda --set model.sync_bn=yes \
        --set train.max_steps=200 --set train.log_every=50 \
        --set data.path="$G/data/fashion-mnist"
    # the losses rank 0 logs (nan/inf included): every one finite, the
    # last under the first (the exit status kept: a hang is 124/137)
    local loss; loss=$(grep -o 'step [0-9]*/[0-9]*  *loss [^ ]*' "$log" | awk '{print $NF}' | tr '\n' ' ')
    local trained; trained=$(echo "$loss" | awk '{ok = NF >= 2; for (i = 1; i <= NF; i++) if ($i !~ /^[0-9.]+$/) ok = 0
                                        print (ok && $NF + 0 < $1 + 0) ? "yes" : "no"}')
    if [ $RC -eq -1 ]; then row train_resnet_syncbn2 "SKIP(time)" "" ""; return; fi
    if timed_out; then
        row train_resnet_syncbn2 TIMEOUT "exit $RC" "$(hung_note "$log")"
    elif [ $RC -ne 0 ]; then
        row train_resnet_syncbn2 FAIL "exit $RC" "$(grep -m1 -i -E 'error|fail' "$log" | cut -c1-80)"
    elif ! grep -q 'sync_bn: batchnorm statistics over the global batch' "$log"; then
        row train_resnet_syncbn2 FAIL "no sync_bn line" "$(grep -m1 -i sync_bn "$log" | cut -c1-80)"
    elif [ "$trained" != yes ]; then
        row train_resnet_syncbn2 FAIL "loss not finite or not falling" "loss ${loss}"
    else
        row train_resnet_syncbn2 PASS "$(dt_rate "$log") samples/s" "2 ranks, tcp, one GPU; loss ${loss}"
    fi
}
syncbn2

# ---- 6. 2 ranks over tcp on CUDA buffers (one GPU shared) -------------------------
run_step tcp_cuda_mem 90 "${DTENV[@]}" "$DTCTL" --transport=tcp run -n 2 -- "$G/tests/allreduce_mem"
if grep -q 'all sizes correct' "$L/tcp_cuda_mem.log" && [ $RC -eq 0 ]; then
    row tcp_cuda_mem PASS "$(grep -o '16777216 floats.*algbw' "$L/tcp_cuda_mem.log" | grep -o '[0-9.]* GB/s') 64MiB" "2 ranks, dt_allreduce_mem DT_MEM_CUDA"
elif grep -q 'no GPU' "$L/tcp_cuda_mem.log" && [ $gpus -eq 0 ]; then
    row tcp_cuda_mem "SKIP(no GPU)" "ran, 2 ranks said no GPU" ""
elif [ $RC -eq -1 ]; then row tcp_cuda_mem "SKIP(time)" "" ""
else
    row tcp_cuda_mem FAIL "exit $RC" "$(grep -m1 -E 'allreduce_mem|error' "$L/tcp_cuda_mem.log" | cut -c1-80)"
fi

# ---- 7. dtctl bench allreduce --transport=nccl -n 1 ------------------------------
# A job of one never loads the transport (worker.c joins only when size >
# 1): this times dt's own path, not NCCL; the -n 2 step below reaches NCCL.
btr=nccl; [ $gpus -eq 0 ] && btr=tcp  # rehearsal: nccl is refused without a GPU
run_step bench_nccl_n1 60 "${DTENV[@]}" "$DTCTL" --transport=$btr bench allreduce -n 1 --sizes 4K:16M --iters 20
last=$(grep -E '^\[0\] +[0-9]+ ' "$L/bench_nccl_n1.log" | tail -1 | awk '{print $2" B: "$4" us"}')
if [ $RC -eq 0 ] && [ -n "$last" ]; then
    row bench_nccl_n1 "$([ $gpus -gt 0 ] && echo PASS || echo 'SKIP(no GPU)')" "$last" "n=1: no NCCL call (host buffers)$([ $gpus -eq 0 ] && echo '; tcp rehearsal ok')"
elif [ $RC -eq -1 ]; then row bench_nccl_n1 "SKIP(time)" "" ""
else
    row bench_nccl_n1 "$([ $gpus -gt 0 ] && echo FAIL || echo 'SKIP(no GPU)')" "exit $RC" "$(grep -m1 -i error "$L/bench_nccl_n1.log" | cut -c1-80)"
fi

# ---- 8. PyTorch 2.11 on the same models ----------------------------------------
declare -A PTSPS PTACC PTMEM
for m in mlp cnn; do
    if [ $gpus -eq 0 ]; then
        if python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$here/torch_side.py" 2>"$L/torch_$m.log"; then
            row "torch_$m" "SKIP(no GPU)" "script compiles" ""
        else
            row "torch_$m" FAIL "syntax" "$(head -1 "$L/torch_$m.log")"
        fi
        continue
    fi
    mem_start "torch_$m"
    run_step "torch_$m" 150 env PYTHONUNBUFFERED=1 python3 "$here/torch_side.py" \
        "$G/conf/fashion-mnist-$m.ini" --data "$G/data/fashion-mnist" --epochs "${EPOCHS[$m]}"
    mem=$(mem_stop)
    line=$(grep '^torch: ' "$L/torch_$m.log" | tail -1)
    PTSPS[$m]=$(echo "$line" | awk '{print $3}')
    PTACC[$m]=$(echo "$line" | grep -o 'test_accuracy [0-9.]*' | awk '{print $2}')
    PTMEM[$m]=$mem
    if [ -n "$line" ]; then
        ratio=$(awk -v d="${DTSPS[$m]:-0}" -v p="${PTSPS[$m]:-0}" 'BEGIN {if (p > 0) printf "%.2f", d / p; else print "?"}')
        row "torch_$m" PASS "dt/torch ${ratio}x" "torch ${PTSPS[$m]} samples/s, acc ${PTACC[$m]}%, peak +${mem}MiB (dt +${DTMEM[$m]:-?}MiB)"
    elif [ $RC -eq -1 ]; then row "torch_$m" "SKIP(time)" "" ""
    else row "torch_$m" FAIL "exit $RC" "$(tail -1 "$L/torch_$m.log" | cut -c1-80)"
    fi
done

# ---- 9. ResNet example on the GPU (batchnorm: no CUDA path yet, issue 18) ----------
train resnet

# ---- 9b. ResNets against PyTorch (issue 18's targets): ResNet-20 (the
# example, batch 64) and a CIFAR-style ResNet-18 (batch 256), fixed steps,
# augmentation off on dt's side (torch_side has none). Pairs, each the same
# math on both sides: fp32 (TF32 off in PyTorch too), tf32 (PyTorch with
# TF32 on: its default for convolutions), dt bf16 against PyTorch AMP bf16
# + channels_last + cudnn.benchmark, then dt bf16 with cudnn_benchmark
# against the same. samples/s and peak GPU memory, dt/torch as a ratio.
declare -A RN_JOB=([resnet20]="$G/conf/fashion-mnist-resnet.ini" [resnet18]="$here/resnet18-fmnist.ini")
declare -A RN_STEPS=([resnet20]=400 [resnet18]=240)
declare -A TORCH_SPS TORCH_MEM
rn_dt() { # MODEL PRECISION BENCHMARK(yes|no) ACTIVATIONS(auto|float32|bf16) CUDA_GRAPHS(auto|on|off)
    local m=$1 p=$2 b=$3 a=${4:-auto} g=${5:-auto} name="dt_$1_$2$([ "$3" = yes ] && echo _bench)$([ "${4:-auto}" = float32 ] && echo _act32)$([ "${5:-auto}" = off ] && echo _eager)"
    mem_start "$name"
    # ResNet-18 bf16 (benchmark, auto activations) also times its steps
    # 3-7 layer by layer for issue 21 (before dt_rate's window: step 20 on)
    local lt=()
    [ "$name" = dt_resnet18_bf16_bench ] && [ -z "${NO_LT:-}" ] &&
        lt=(--set train.layer_times="$L/layers/resnet18-gpu.layers")
    run_step "$name" 120 "${DTENV[@]}" "$DTCTL" --transport=nccl run -n 1 "${RN_JOB[$m]}" \
        --set train.device=cuda --set train.precision="$p" --set train.cudnn_benchmark="$b" \
        --set train.activations="$a" --set train.cuda_graphs="$g" "${lt[@]}" \
        --set train.max_steps="${RN_STEPS[$m]}" \
        --set train.log_every=20 --set data.random_crop=0 --set data.hflip=no \
        --set data.path="$G/data/fashion-mnist"
    RN_MEM=$(mem_stop)
    RN_SPS=$(dt_rate "$L/$name.log")
    after_stop "$L/$name.log"
}
rn_torch() { # MODEL fp32|tf32|amp: once per model and mode
    local m=$1 name="torch_$1_$2" extra=()
    if [ -n "${TORCH_SPS[$name]:-}" ]; then RN_SPS=${TORCH_SPS[$name]}; RN_MEM=${TORCH_MEM[$name]}; return; fi
    case $2 in
        amp) extra=(--amp bf16 --channels-last --benchmark) ;;
        tf32) extra=(--tf32) ;;
    esac
    mem_start "$name"
    run_step "$name" 120 env PYTHONUNBUFFERED=1 python3 "$here/torch_side.py" "${RN_JOB[$m]}" \
        --data "$G/data/fashion-mnist" --epochs 1 --max-steps "${RN_STEPS[$m]}" "${extra[@]}"
    RN_MEM=$(mem_stop)
    RN_SPS=$(grep '^torch: ' "$L/$name.log" | tail -1 | awk '{print $3}')
    TORCH_SPS[$name]=$RN_SPS; TORCH_MEM[$name]=$RN_MEM
}
resnets() {
    local m c p b t a label dsps dmem drc rows dtrows
    for m in resnet20 resnet18; do
        # bf16 stores activations in bf16 (auto); the act32 row keeps them
        # float32 (the memory and speed that storage costs or saves; on
        # the launch-bound ResNet-20 without cudnn_benchmark: session 8
        # measured its bf16 below fp32, storage or conversions?)
        local act32=bf16:yes:amp:float32
        [ "$m" = resnet20 ] && act32=bf16:no:amp:float32
        # every row runs dt's default cuda_graphs = auto (a captured step
        # where timing says it is faster: the note says which won); the
        # _eager row is bf16 with cuda_graphs = off, for the difference
        for c in fp32:no:fp32:auto tf32:no:tf32:auto bf16:no:amp:auto bf16:no:amp:auto:off bf16:yes:amp:auto $act32; do
            IFS=: read -r p b t a g <<<"$c"
            g=${g:-auto}
            label=$p$([ "$b" = yes ] && echo _bench)$([ "$a" = float32 ] && echo _act32)$([ "$g" = off ] && echo _eager)
            # the row's name (and the mem row's, for its dt run) selects
            # its sub-steps too: DT_GPU_STEPS='vs_torch_resnet18_bf16$'
            rows="vs_torch_${m}_$label"
            case "$m:$label" in resnet18:bf16_bench|resnet18:bf16_bench_act32) dtrows="$rows mem_${m}_$label" ;; *) dtrows=$rows ;; esac
            if [ $gpus -eq 0 ]; then
                # rehearsal: the job file and every --set key as dtctl reads them
                STEP_ROWS=$dtrows run_step "cfg_${m}_$label" 30 "${DTENV[@]}" "$DTCTL" config "${RN_JOB[$m]}" \
                    --set train.device=cuda --set train.precision="$p" --set train.cudnn_benchmark="$b" \
                    --set train.activations="$a" --set train.cuda_graphs="$g" \
                    --set train.max_steps="${RN_STEPS[$m]}" \
                    --set train.log_every=20 --set data.random_crop=0 --set data.hflip=no \
                    --set data.path="$G/data/fashion-mnist"
                # a job file the real run would have refused fails the rehearsal
                if [ $RC -eq 0 ]; then row "vs_torch_${m}_$label" "SKIP(no GPU)" "job ok" "dt $label vs torch $t"
                else row "vs_torch_${m}_$label" FAIL "dtctl config refused the job: exit $RC" "dt $label vs torch $t"; fi
                continue
            fi
            STEP_ROWS=$dtrows rn_dt "$m" "$p" "$b" "$a" "$g"; dsps=$RN_SPS; dmem=$RN_MEM; drc=$RC
            # cuda_graphs = auto's choice: "graphs 1.23/2.34 ms" (captured/eager step)
            local gnote; gnote=$(grep -m1 -o 'cuda_graphs = auto: a captured step took [0-9.]* ms, an eager one [0-9.]* ms.*' "$L/dt_${m}_$label.log" 2>/dev/null |
                awk '{k = ($NF == "kept") ? "graphs" : "eager"; printf "; auto: %s (%s/%s ms)", k, $8, $13}')
            if [ "$drc" -eq -1 ]; then row "vs_torch_${m}_$label" "SKIP(time)" "" ""; continue; fi
            if [ "$drc" -eq 124 ] || [ "$drc" -eq 137 ]; then
                row "vs_torch_${m}_$label" TIMEOUT "dt exit $drc" "$(hung_note "$L/dt_${m}_$label.log")"; continue
            fi
            if [ "$drc" -ne 0 ]; then
                row "vs_torch_${m}_$label" FAIL "dt exit $drc" "$(grep -m1 -i -E 'error|fail' "$L/dt_${m}_$label.log" | cut -c1-80)"; continue
            fi
            STEP_ROWS=$rows rn_torch "$m" "$t"
            if [ -z "$RN_SPS" ] && [ "$FILTERED" = 1 ]; then
                # dt ran (DT_GPU_STEPS matched it or its mem row), PyTorch was filtered out
                FILTERED=0
                row "vs_torch_${m}_$label" "SKIP(filter)" "torch_${m}_$t filtered out" "dt ${dsps} samples/s; peak +${dmem} MiB"; continue
            fi
            if [ -z "$RN_SPS" ] && timed_out; then row "vs_torch_${m}_$label" TIMEOUT "torch exit $RC" "dt ${dsps} samples/s"; continue; fi
            if [ -z "$RN_SPS" ]; then row "vs_torch_${m}_$label" FAIL "torch exit $RC" "dt ${dsps} samples/s"; continue; fi
            local ratio; ratio=$(awk -v d="${dsps:-0}" -v t="$RN_SPS" 'BEGIN {printf "%.2f", d / t}')
            # The target: >= 1.0x PyTorch (bf16 vs AMP); a lower ratio is a
            # number to act on, not a broken build: PASS with the ratio.
            row "vs_torch_${m}_$label" PASS "dt/torch ${ratio}x" "dt ${dsps} vs ${RN_SPS} samples/s ($t); peak +${dmem} vs +${RN_MEM} MiB${gnote}"
        done
    done
}
resnets

# ---- 9b'. where dt's GPU memory goes (the trainer's line after its first
# step): ResNet-18 with bf16 activations and with float32 ones, for the
# peak-memory target against PyTorch AMP
for f in dt_resnet18_bf16_bench dt_resnet18_bf16_bench_act32; do
    [ -f "$L/$f.log" ] || continue
    # filtered out or skipped for time (or failed: its vs_torch row says so)
    if grep -q '^(filtered out' "$L/$f.log"; then row "mem_${f#dt_}" "SKIP(filter)" "" ""; continue; fi
    if grep -q '^(no time left' "$L/$f.log"; then row "mem_${f#dt_}" "SKIP(time)" "" ""; continue; fi
    line=$(grep -m1 'GPU memory after the first step' "$L/$f.log" | sed 's/.*first step: //')
    [ -n "$line" ] || { row "mem_${f#dt_}" FAIL "no memory line" ""; continue; }
    row "mem_${f#dt_}" INFO "$(echo "$line" | grep -o '^[0-9.]* MiB')" \
        "$(echo "$line" | sed 's/^.*): activations/activations/; s/parameters and gradients/params/; s/(CUDA context, libraries, optimizer state, other processes)/(context etc.)/' | cut -c1-200)"
done

# ---- 9b''. issue 21: the trainer's own per-layer times on the GPU
# ([train] layer_times: steps 3-7, the device synchronized at each
# gradient), written by the ResNet-18 bf16 bench run above (rn_dt), for
# plans of GPU clusters at home:
#   dtctl plan --layer-times logs/layers/resnet18-gpu.layers --hosts 64 \
#       --gpus-per-host 8 --network 100Gbit
# (rehearsal without a GPU: ResNet-20 on the CPU, the same key and file)
mkdir -p "$L/layers"
if [ $gpus -gt 0 ]; then
    ltf="$L/layers/resnet18-gpu.layers" LTM=resnet18
    RC=0 FILTERED=0
    grep -q '^(filtered out' "$L/dt_resnet18_bf16_bench.log" 2>/dev/null && FILTERED=1 && RC=-1
    [ -f "$L/dt_resnet18_bf16_bench.log" ] && ! grep -q '^(no time left' "$L/dt_resnet18_bf16_bench.log" || RC=-1
else
    ltf="$L/layers/resnet20-cpu.layers" LTM=resnet20
    run_step layer_times 90 "${DTENV[@]}" "$DTCTL" run -n 1 "${RN_JOB[resnet20]}" \
        --set train.device=cpu --set data.train_samples=640 --set data.test_samples=64 \
        --set train.max_steps=8 --set train.log_every=1 --set data.random_crop=0 --set data.hflip=no \
        --set data.path="$G/data/fashion-mnist" --set train.layer_times="$ltf"
    after_stop "$L/layer_times.log"
fi
if [ $RC -eq -1 ]; then row layer_times "SKIP(time)" "" ""
elif timed_out; then row layer_times TIMEOUT "exit $RC" "$(hung_note "$L/layer_times.log")"
elif [ -s "$ltf" ]; then
    row layer_times PASS "$(awk '/^[0-9.e-]+ [0-9]+$/ { n += $2 > 0; b += $1 } /^forward/ { f = $2 } /^optimizer/ { o = $2 }
        END { printf "%d gradients: fwd %.2f bwd %.2f opt %.2f ms", n, f * 1e3, b * 1e3, o * 1e3 }' "$ltf")" \
        "$LTM; plan at home: dtctl plan --layer-times logs/layers/$(basename "$ltf") ..."
else row layer_times FAIL "no $(basename "$ltf")" "$(cat "$L/layer_times.log" "$L/dt_resnet18_bf16_bench.log" 2>/dev/null | grep -m1 -i -E 'layer_times|error' | cut -c1-90)"
fi

# ---- 10. 2 ranks over nccl. On ONE GPU: NCCL refuses a duplicate GPU; dt
# must fail clearly and promptly (gpu-review defect 4), never hang. On two
# or more (a multi-GPU kind): the allreduce between GPUs, checked exactly;
# the MLP trained over nccl with the gradients reduced from device memory
# (its debug line must say d2h_grad_copies=0: issue 18's "no host
# staging"); ResNet-20 bf16 over nccl with cuda_graphs auto, on and off
# (a captured step hands its buckets to NCCL after the launch; auto says
# whether that won over eager steps' overlap). Before plan_measure (10b):
# the one-GPU hang check takes seconds and matters more than that long
# CPU-only step, which a tight budget would let crowd it out.
nccl_two_gpus() {
    run_step nccl_n2_allreduce 60 "${DTENV[@]}" "$DTCTL" --transport=nccl run -n 2 -- "$G/tests/allreduce_mem"
    case $RC in
        0) row nccl_n2_allreduce PASS "$(grep -o '16777216 floats.*algbw' "$L/nccl_n2_allreduce.log" | grep -o '[0-9.]* GB/s' | tail -1) 64MiB" "2 GPUs, dt_allreduce_mem DT_MEM_CUDA, checked exactly" ;;
        -1) row nccl_n2_allreduce "SKIP(time)" "" "" ;;
        124|137) row nccl_n2_allreduce TIMEOUT "exit $RC" "a hang between 2 GPUs?" ;;
        *) row nccl_n2_allreduce FAIL "exit $RC" "$(grep -m1 -i -E 'error|nccl' "$L/nccl_n2_allreduce.log" | cut -c1-80)" ;;
    esac
    local log="$L/nccl_n2_train.log"
    run_step nccl_n2_train 120 "${DTENV[@]}" DT_LOG_LEVEL=debug "$DTCTL" --transport=nccl run -n 2 \
        "$G/conf/fashion-mnist-mlp.ini" --set train.device=cuda --set train.epochs=2 \
        --set data.path="$G/data/fashion-mnist"
    local acc d2h; acc=$(grep -o 'final test accuracy: [0-9.]*' "$log" | awk '{print $4}' | tail -1)
    d2h=$(grep -m1 -o 'd2h_grad_copies=[0-9]*' "$log" | cut -d= -f2)
    if [ $RC -eq -1 ]; then row nccl_n2_train "SKIP(time)" "" ""
    elif timed_out; then row nccl_n2_train TIMEOUT "exit $RC" "$(hung_note "$log")"
    elif [ $RC -ne 0 ]; then row nccl_n2_train FAIL "exit $RC" "$(grep -m1 -i -E 'error|fail' "$log" | cut -c1-80)"
    elif [ "${d2h:-x}" != 0 ]; then row nccl_n2_train FAIL "d2h_grad_copies=${d2h:-?}" "gradients staged through the host over nccl"
    elif awk -v a="${acc:-0}" -v f="${FLOOR[mlp]}" 'BEGIN {exit !(a >= f)}'; then
        row nccl_n2_train PASS "acc ${acc}%" "2 GPUs, nccl: d2h_grad_copies=0; $(grep -m1 -o 'averaged in [0-9]* bucket[s]*' "$log"); $(dt_rate "$log") samples/s"
    else row nccl_n2_train FAIL "acc ${acc:-?}% < ${FLOOR[mlp]}" ""
    fi
    local g sps=() hung=""
    for g in auto on off; do
        run_step "nccl_n2_resnet20_graphs_$g" 90 "${DTENV[@]}" "$DTCTL" --transport=nccl run -n 2 "${RN_JOB[resnet20]}" \
            --set train.device=cuda --set train.precision=bf16 --set train.cuda_graphs="$g" \
            --set train.max_steps=300 --set train.log_every=20 --set data.random_crop=0 --set data.hflip=no \
            --set data.path="$G/data/fashion-mnist"
        after_stop "$L/nccl_n2_resnet20_graphs_$g.log"
        if [ $RC -eq 0 ]; then sps+=("$g $(dt_rate "$L/nccl_n2_resnet20_graphs_$g.log")")
        elif timed_out; then sps+=("$g exit $RC"); hung="${hung:+$hung, }$g: $(hung_note "$L/nccl_n2_resnet20_graphs_$g.log")"
        else sps+=("$g exit $RC"); fi
    done
    if [ -n "$hung" ]; then
        row nccl_n2_resnet20 TIMEOUT "${sps[*]}" "$hung"
    elif printf '%s\n' "${sps[@]}" | grep -q exit; then
        row nccl_n2_resnet20 FAIL "${sps[*]}" "$(grep -m1 -i -E 'error|fail' "$L"/nccl_n2_resnet20_graphs_*.log | cut -c1-80)"
    else
        row nccl_n2_resnet20 PASS "graphs ${sps[*]} samples/s" "2 GPUs, nccl, bf16, batch 64 per GPU; auto: $(grep -m1 -o 'graphs kept\|eager steps from now on' "$L/nccl_n2_resnet20_graphs_auto.log")"
    fi
}
if [ $gpus -eq 1 ]; then
    run_step nccl_n2_one_gpu 60 "${DTENV[@]}" "$DTCTL" --transport=nccl run -n 2 -- "$G/tests/allreduce_mem"
    case $RC in
        0) row nccl_n2_one_gpu INFO "ran (NCCL accepted 2 ranks on 1 GPU)" "$(grep -o '16777216 floats.*algbw' "$L/nccl_n2_one_gpu.log" | grep -o '[0-9.]* GB/s')" ;;
        124|137) row nccl_n2_one_gpu TIMEOUT "hung, exit $RC" "gpu-review defect 4: check local_size <= GPUs" ;;
        -1) row nccl_n2_one_gpu "SKIP(time)" "" "" ;;
        *) row nccl_n2_one_gpu INFO "failed, exit $RC" "$(grep -m1 -i -E 'nccl|GPU' "$L/nccl_n2_one_gpu.log" | cut -c1-80)" ;;
    esac
    for r in nccl_n2_allreduce nccl_n2_train nccl_n2_resnet20; do row "$r" "SKIP(1 GPU)" "" "needs 2 GPUs"; done
elif [ $gpus -ge 2 ]; then
    nccl_two_gpus
else
    row nccl_n2_one_gpu "SKIP(no GPU)" "" ""
    for r in nccl_n2_allreduce nccl_n2_train nccl_n2_resnet20; do row "$r" "SKIP(no GPU)" "" "needs 2 GPUs"; done
fi

# ---- 10b. issue 21: dtctl plan's inputs and the trainer at N = 1, 2, 4, 8 on
# this machine's 16 cores (the 2-vCPU VM cannot give 4 workers a core each).
# CPU only; measured here, predicted back home (no SimGrid on the device):
#   tar xzf logs.tar.gz logs/plan && bench/plan-validate.sh --predict logs/plan
# 3200 samples per worker (50 steps at every N: session 9 found 6400 in
# all, 12 steps a worker at N = 8, too few to judge): the bundle's CNN has
# no OpenBLAS (~0.15 s a step at N = 1 on one core), and --measure fits
# every transport twice over, so more would not fit the step's time.
# Also (session 10) rank 0's layer times at N = 8 and N = 8 unbound
# (bind = none) each round: where the per-worker rate lost from 1 to 8
# workers in session 9 went (compute slowed by the neighbours, waits, or
# the binding)
if [ $gpus -gt 0 ]; then PV=(--workers "1 2 4 8" --rounds 2 --samples 3200)
else PV=(--workers "1 2" --rounds 1 --samples 640); fi # rehearsal
run_step plan_measure 230 "${DTENV[@]}" sh "$top/bench/plan-validate.sh" \
    --dtctl "$DTCTL" "${PV[@]}" --set data.path="$G/data/fashion-mnist" \
    --measure-only "$L/plan" "$G/conf/fashion-mnist-mlp.ini" "$G/conf/fashion-mnist-cnn.ini"
case $RC in
    0) row plan_measure PASS "$(cat "$L"/plan/*.sps.* 2>/dev/null | wc -l) runs" "cores $(nproc); predict at home: bench/plan-validate.sh --predict logs/plan" ;;
    -1) row plan_measure "SKIP(time)" "" "rerun alone: DT_GPU_STEPS='^plan_measure\$' (~3 min)" ;;
    124|137) row plan_measure "SKIP(time)" "cut at its timeout" "rerun alone: DT_GPU_STEPS='^plan_measure\$' (~3 min)" ;;
    *) row plan_measure FAIL "exit $RC" "$(tail -3 "$L/plan_measure.log" | tr '\n' ' ' | cut -c1-90)" ;;
esac

# ---- 11. the cuDNN workspace lever for the memory target (last, after
# plan_measure: optional; at least 60 s left or SKIP(time)): the same
# ResNet-18 bf16 job preferring algorithms within 64 MiB of workspace
# (DT_CUDNN_WORKSPACE_MAX; 512M by default): its samples/s, peak and
# memory line beside the row above, against the same PyTorch AMP
# Selected by its own row's name, or by the default row's (its sub-step
# dt_resnet18_bf16_bench, the row vs_torch_resnet18_bf16_bench); it needs
# PyTorch AMP's rate from that pair (or the plain bf16 one).
ws64_names="dt_resnet18_bf16_bench vs_torch_resnet18_bf16_bench mem_resnet18_bf16_bench_ws64"
# shellcheck disable=SC2086
if [ $gpus -eq 0 ]; then
    row mem_resnet18_bf16_bench_ws64 "SKIP(no GPU)" "" "DT_CUDNN_WORKSPACE_MAX=64M"
elif ! selected $ws64_names; then
    row mem_resnet18_bf16_bench_ws64 "SKIP(filter)" "" ""
elif [ -z "${TORCH_SPS[torch_resnet18_amp]:-}" ]; then
    # selected, but no PyTorch AMP rate: its pairs were filtered out, cut
    # for time, or failed (their vs_torch rows say which)
    if grep -q '^(filtered out' "$L/torch_resnet18_amp.log" 2>/dev/null ||
       { [ ! -f "$L/torch_resnet18_amp.log" ] && grep -q '^(filtered out' "$L/dt_resnet18_bf16_bench.log" 2>/dev/null; }; then
        row mem_resnet18_bf16_bench_ws64 "SKIP(filter)" "" "needs PyTorch AMP's rate: add vs_torch_resnet18_bf16_bench to DT_GPU_STEPS"
    elif grep -q '^(no time left' "$L/torch_resnet18_amp.log" "$L/dt_resnet18_bf16_bench.log" 2>/dev/null; then
        row mem_resnet18_bf16_bench_ws64 "SKIP(time)" "" ""
    else
        row mem_resnet18_bf16_bench_ws64 "SKIP(no torch)" "" "no PyTorch AMP rate: see vs_torch_resnet18_bf16*"
    fi
elif [ "$(tmo 60)" -lt 60 ]; then
    row mem_resnet18_bf16_bench_ws64 "SKIP(time)" "" "under 60 s left"
else
    # rn_dt logs under the default row's name: that log is kept aside
    mv "$L/dt_resnet18_bf16_bench.log" "$W/default.log" 2>/dev/null
    DTENV_SAVED=("${DTENV[@]}"); DTENV+=(DT_CUDNN_WORKSPACE_MAX=64M)
    NO_LT=1 STEP_ROWS=${ws64_names#* } rn_dt resnet18 bf16 yes auto; dsps=$RN_SPS; dmem=$RN_MEM; drc=$RC
    DTENV=("${DTENV_SAVED[@]}")
    mv "$L/dt_resnet18_bf16_bench.log" "$L/dt_resnet18_bf16_bench_ws64.log" 2>/dev/null
    mv "$W/default.log" "$L/dt_resnet18_bf16_bench.log" 2>/dev/null
    # its timeout may be the budget's rest: cut short, SKIP(time); but a
    # hang after its last step is a TIMEOUT
    if { [ "$drc" -eq 124 ] || [ "$drc" -eq 137 ]; } && grep -q 'stopping after' "$L/dt_resnet18_bf16_bench_ws64.log"; then
        row mem_resnet18_bf16_bench_ws64 TIMEOUT "dt exit $drc" "hung after its last step"
    elif [ "$drc" -eq -1 ] || [ "$drc" -eq 124 ] || [ "$drc" -eq 137 ]; then
        row mem_resnet18_bf16_bench_ws64 "SKIP(time)" "" "$([ "$drc" -gt 0 ] && echo "cut at its timeout")"
    elif [ "$drc" -ne 0 ]; then row mem_resnet18_bf16_bench_ws64 FAIL "dt exit $drc" ""
    elif ! grep -q 'DT_CUDNN_WORKSPACE_MAX' "$L/dt_resnet18_bf16_bench_ws64.log"; then
        row mem_resnet18_bf16_bench_ws64 FAIL "64M not applied" "no 'DT_CUDNN_WORKSPACE_MAX' line in the worker's log"
    else
        line=$(grep -m1 'GPU memory after the first step' "$L/dt_resnet18_bf16_bench_ws64.log" | sed 's/.*first step: //')
        row mem_resnet18_bf16_bench_ws64 INFO "dt/torch $(awk -v d="${dsps:-0}" -v t="${TORCH_SPS[torch_resnet18_amp]}" 'BEGIN {printf "%.2f", d / t}')x" \
            "peak +${dmem} vs +${TORCH_MEM[torch_resnet18_amp]} MiB; $(echo "$line" | grep -o '^[0-9.]* MiB'), $(echo "$line" | grep -o 'cuDNN workspace [0-9.]*')"
    fi
fi

# ---- summary ------------------------------------------------------------------
trap '' TERM INT  # a second from here: the final files come first
STATE=final
summary; logs_out
rm -rf "$W"
cat "$OUT/summary.txt"
awk '/^failures:/ {exit ($2 > 0)}' "$OUT/summary.txt"
