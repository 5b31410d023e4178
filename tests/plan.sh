#!/bin/sh
# plan.sh — `dtctl plan` (issue 21): without dt-plan-sim it says how to
# get SimGrid; dt-plan-sim's ring allreduce on a one-switch platform
# matches the closed-form alpha-beta cost 2(N-1)(alpha+latency) +
# 2(N-1)/N n/bandwidth (+ (N-1)/N n gamma) within 2%; buckets are ready
# last layer first, cut as grad_sync cuts them; a bad platform file, more
# workers than GPUs and a nonsense rate are refused; 512 workers get a row (the time it
# takes is measured in docs/PLAN.md, not here); --sweep names the fastest bucket/hierarchy; --fit recovers alpha and beta from a bench table;
# dtctl bench allgather checks every row; [train] layer_times writes the trainer's own layers;
# fat trees (--topology) match the switch when non-blocking and slow
# cross-leaf traffic when oversubscribed; bad trees are refused;
# --colocation's factors follow the samples' order statistics, measured
# ones are saved and planned alike, bad files and misuse are refused;
# the job's input pipeline is timed and bounds the step (the data wait);
# rates and costs out of range, a bad batch_size and platform files that
# load but cannot carry a plan are refused naming the option, file:line,
# host or link (never the temporary spec); --plot takes any --spec path.
# Skips (77) when configure found no SimGrid.
set -u
: "${DTCTL:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-plan.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }
job="$top_srcdir/conf/examples/fashion-mnist-mlp.ini"
step_of1() { awk '$1 == 1 { print $2 }' "$1"; } # the table's step at N = 1
bad() { # expected-text, then the whole argument list
    want=$1; shift
    if "$DTCTL" plan "$@" >"$tmp/out" 2>&1; then fail "accepted: $*"; fi
    grep -q -- "$want" "$tmp/out" || fail "'$*': no '$want' in: $(cat "$tmp/out")"
    # what dtctl can check it names itself, not in its temporary spec
    if grep -q "/dt-plan-[A-Za-z0-9]\{6\}:" "$tmp/out"; then fail "'$*': names the temporary spec"; fi
}

# No helper: the message names the package (checked first: needs nothing).
if DT_LIBEXECDIR="$tmp" "$DTCTL" plan "$job" --hosts 2 --network 25Gbit \
    >"$tmp/out" 2>&1; then
    fail "dtctl plan succeeded without dt-plan-sim"
fi
grep -q "apt-get install libsimgrid-dev" "$tmp/out" ||
    fail "the missing-SimGrid message does not say how to install it"

# --save-layers without a platform measures the model and stops: it needs
# no simulator (a GPU node without SimGrid measures, a laptop plans); the
# file has the forward, the optimizer and one line per gradient event
# (the MLP: 3 linear layers, their weights and biases as float32 bytes).
DT_LIBEXECDIR="$tmp" "$DTCTL" plan "$job" --save-layers "$tmp/layers" \
    >"$tmp/out" 2>&1 || fail "--save-layers alone needed the simulator"
grep -q "plan with --layer-times" "$tmp/out" || fail "--save-layers alone: no word on the file"
awk '/^forward / { f = $2 > 0 } /^optimizer / { o = $2 >= 0 }
     /^[0-9.e-]+ [0-9]+$/ && $2 > 0 { n++; b += $2 }
     END { exit !(f && o && n == 3 && b == 4 * 235146) }' "$tmp/layers" ||
    fail "--save-layers: not the MLP's forward, optimizer and 3 gradients of 235146 floats"

# [train] layer_times: the trainer times its own steps 3-7 layer by layer
# on its device (a GPU run's times for a plan of GPU clusters) in the same
# form: the MLP's 3 gradient events of 235,146 floats in all, then the
# tail after the last one; forward and optimizer measured. A run too short
# to time says so and writes nothing.
train_lt() { # samples, then dtctl run's further arguments
    n=$1; shift
    "$DTCTL" run -n 1 --set data.train_samples="$n" --set data.test_samples=100 \
        --set train.epochs=1 --set train.device=cpu "$@" "$job" >"$tmp/out" 2>&1
}
if [ "${DT_HAVE_ZLIB:-yes}" != yes ]; then
    echo "note: [train] layer_times not checked: dt was built without zlib" \
        "and the Fashion-MNIST files are .gz (apt-get install zlib1g-dev)"
else
train_lt 640 --set train.layer_times="$tmp/trained.layers" || fail "training with layer_times"
grep -q "layer times of cpu.*(fastest of steps 3-7, device synchronized at each gradient) written to $tmp/trained.layers: plan with dtctl plan --layer-times" \
    "$tmp/out" || fail "layer_times: no line naming the file"
awk '/^forward / { f = $2 > 0 } /^optimizer / { o = $2 > 0 }
     /^[0-9.e-]+ [0-9]+$/ { n++; b += $2; last = $2; t = t && $2 >= 0 }
     BEGIN { t = 1 }
     END { exit !(f && o && t && n == 4 && b == 4 * 235146 && last == 0) }' \
    "$tmp/trained.layers" || fail "layer_times: not the MLP's forward, optimizer, 3 gradients of 235146 floats and a tail: $(cat "$tmp/trained.layers")"
train_lt 128 --set train.layer_times="$tmp/short.layers" || fail "a 2-step run with layer_times"
grep -q "layer_times = $tmp/short.layers: nothing timed: this run began 2 steps and timing starts at its step 3" "$tmp/out" ||
    fail "a run too short to time: no warning"
[ ! -e "$tmp/short.layers" ] || fail "a run too short to time wrote a file"
train_lt 640 --set train.layer_times="$tmp/no/such/dir.layers" &&
    fail "layer_times into a missing folder: training went on"
grep -q "layer_times = $tmp/no/such/dir.layers: cannot write .*No such file or directory (a writable file path)" \
    "$tmp/out" || fail "layer_times into a missing folder: no clear error"
fi

# dtctl bench allgather (what --measure fits tcp's alpha and beta from,
# apart from the reduction): 3 ranks over tcp, every row's check ok, the
# size the gathered total of 3 equal parts (4K -> 4092 bytes); a benchmark
# dtctl does not have is refused naming the two it has.
DT_COLLECTIVES_SHM=off "$DTCTL" bench allgather -n 3 --transport tcp \
    --sizes 4K:64K --factor 4 --iters 5 >"$tmp/out" 2>&1 || fail "dtctl bench allgather"
grep -q "# dt allgather: 3 ranks" "$tmp/out" || fail "bench allgather: no allgather header"
[ "$(grep -cE '^\[0\] +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$' "$tmp/out")" = 3 ] ||
    fail "bench allgather: want 3 rows checked ok"
grep -qE '^\[0\] +4092 +1023 ' "$tmp/out" || fail "bench allgather: 4K at N = 3 is not 4092 bytes"
if "$DTCTL" bench alltoall -n 2 >"$tmp/out" 2>&1; then fail "bench alltoall accepted"; fi
grep -q "usage: dtctl bench allreduce|allgather" "$tmp/out" || fail "bench alltoall: no usage"

# dtctl plan --measure: every transport that runs here fitted from its
# own benchmarks, each sweep twice and merged per size -- shm from
# allreduces only (26 sizes x N = 2, 4 after the merge), tcp (and ucx
# where its plugin works) from allreduces and allgathers (52); positive
# alpha and beta, gamma not negative.
# A measurement that fails leaves the profile there as it was (written
# beside it, renamed at the end): a bad shm setting fails its first bench.
printf '# an earlier profile\n' >"$tmp/measured.ini"
if DT_COLLECTIVES_SHM=bogus "$DTCTL" plan --measure --profile "$tmp/measured.ini" >"$tmp/out" 2>&1; then
    fail "dtctl plan --measure with a broken bench succeeded"; fi
grep -q "measured.ini kept as it was" "$tmp/out" || fail "a failed --measure: no word on the profile"
[ "$(cat "$tmp/measured.ini")" = "# an earlier profile" ] && [ ! -e "$tmp/measured.ini.tmp" ] ||
    fail "a failed --measure changed the profile or left its .tmp"
"$DTCTL" plan --measure --profile "$tmp/measured.ini" >"$tmp/out" 2>&1 ||
    fail "dtctl plan --measure: $(tail -5 "$tmp/out")"
want="shm:26 tcp:52"
"$DTCTL" plugins 2>/dev/null | grep -qE '^transport +ucx .* available' && want="$want ucx:52"
for tw in $want; do
    t=${tw%:*} n=${tw#*:}
    awk -v sec="[transport.$t]" -v n="$n" '$0 == sec { s = 1; next } /^\[/ { s = 0 }
        s && $1 == "alpha" { a = $3 } s && $1 == "beta" { b = $3 } s && $1 == "gamma" { g = $3 }
        s && $1 == "samples" { m = $3 }
        END { exit !(a >= 0 && b > 0 && g >= 0 && m == n) }' "$tmp/measured.ini" ||
        fail "--measure: [transport.$t] not fitted from $n samples: $(cat "$tmp/measured.ini")"
done
echo "--measure: $want"

# --fit: a bench table of N = 2 made from alpha 10 us, beta 1 ns/B
# (doubling below 256K: alpha + n beta; the ring from it: 2 alpha + n beta).
awk 'BEGIN { for (b = 4096; b <= 16777216; b *= 2) {
    t = (b < 262144 ? 1 : 2) * 10e-6 + b * 1e-9
    printf "[0] %12d %12d %11.3f %11.3f %11.3f %6s\n", b, b / 4, t * 1e6, 0, 0, "ok" } }' \
    >"$tmp/bench2"
"$DTCTL" plan --fit net "2:$tmp/bench2" >"$tmp/out" 2>&1 || fail "dtctl plan --fit"
awk -F' = ' '/^alpha/ { a = $2 } /^beta/ { b = $2 }
    END { exit !(a > 9.9e-6 && a < 10.1e-6 && b > 0.99e-9 && b < 1.01e-9) }' \
    "$tmp/out" || fail "--fit did not recover alpha 10 us, beta 1 ns/B"
if "$DTCTL" plan --fit net "$tmp/bench2" >"$tmp/out" 2>&1; then
    fail "--fit without N: accepted"; fi
grep -q "expected N:FILE" "$tmp/out" || fail "--fit's usage error unclear"

sim="$top_builddir/core/dt-plan-sim"
if [ ! -x "$sim" ]; then
    echo "SKIP: dt-plan-sim not built: configure found no SimGrid" \
        "(apt-get install libsimgrid-dev, then configure again)"
    exit 77
fi

# An image folder whose shape cannot be read here: the error says why,
# with the path (it said "path/train not readable, or no image_size").
mkdir -p "$tmp/imgs/train/only"
printf '[data]\ndataset = folder\npath = %s/imgs\nimage_size = 32\n[model]\nlayers = flatten linear(10)\n' \
    "$tmp" >"$tmp/folder.ini"
bad "path/train = $tmp/imgs/train holds 1 class folder (2 or more needed)): give --input" \
    "$tmp/folder.ini" --hosts 2 --network 10Gbit
sed "s|$tmp/imgs|$tmp/none|" "$tmp/folder.ini" >"$tmp/folder2.ini"
bad "path/train = $tmp/none/train: not a readable directory here (No such file or directory)" \
    "$tmp/folder2.ini" --hosts 2 --network 10Gbit

# The ring against the closed form: the line "simulated S closed_form C"
# (stdout only: an ASan build's SimGrid context switches warn on stderr).
closer='/^simulated / { e = ($2 - $4) / $4; if (e < 0) e = -e; seen = 1; ok = e < 0.02 }
        END { exit !(seen && ok) }'
cat >"$tmp/switch.spec" <<EOS
hosts = 64
gpus_per_host = 1
network_bw = 3.125e9
network_latency = 5e-6
intra_bw = 1e10
intra_latency = 1e-6
alpha = 20e-6
gamma = 0.2e-9
EOS
for case in "2 1048576" "8 67108864" "16 4096" "64 104857600"; do
    set -- $case
    "$sim" --ring "$1" "$2" "$tmp/switch.spec" >"$tmp/out" 2>"$tmp/err" ||
        fail "dt-plan-sim --ring $1 $2: $(cat "$tmp/err")"
    awk "$closer" \
        "$tmp/out" || fail "ring N=$1 n=$2 is off the closed form by 2% or more"
done

# 16-bit compression: half the bytes on the wire, the closed form's
# bandwidth term halved (the reduction still per float32 element).
cp "$tmp/switch.spec" "$tmp/wire.spec"; echo "wire = 0.5" >>"$tmp/wire.spec"
"$sim" --ring 16 67108864 "$tmp/wire.spec" >"$tmp/out" 2>"$tmp/err" ||
    fail "dt-plan-sim --ring (wire 0.5): $(cat "$tmp/err")"
awk "$closer" "$tmp/out" || fail "the bf16 ring is off its closed form by 2% or more"
"$sim" --ring 16 67108864 "$tmp/switch.spec" >"$tmp/out32" 2>"$tmp/err" || fail "ring"
awk 'NR == FNR { f = $2; next } { exit !($2 < 0.7 * f) }' "$tmp/out32" "$tmp/out" ||
    fail "wire 0.5 does not cut a 64 MB ring under 0.7 of float32 (0.62 expected: bandwidth halved, gamma kept)"

# Fat trees (--topology): one leaf switch of all 64 hosts is the one
# switch (same closed form); two levels of 8-host leaves, non-blocking,
# still match it for a 100 MB ring (its 8 hops between leaves cross a
# spine: more latency, no less bandwidth).
for t in fat-tree:64 fat-tree:8 "fat-tree:2;8,8;1,8;1,1"; do
    { cat "$tmp/switch.spec"; echo "topology = $t"; } >"$tmp/tree.spec"
    "$sim" --ring 64 104857600 "$tmp/tree.spec" >"$tmp/out" 2>"$tmp/err" ||
        fail "dt-plan-sim --ring on $t: $(cat "$tmp/err")"
    awk "$closer" "$tmp/out" || fail "the ring on $t is off the closed form by 2% or more"
done

# The ring inside one host of 4 GPUs: the intra links' closed form.
sed 's/^hosts = 64/hosts = 1/; s/^gpus_per_host = 1/gpus_per_host = 4/' \
    "$tmp/switch.spec" >"$tmp/intra.spec"
"$sim" --ring 4 8388608 "$tmp/intra.spec" >"$tmp/out" 2>"$tmp/err" ||
    fail "dt-plan-sim --ring 4 (intra): $(cat "$tmp/err")"
awk "$closer" \
    "$tmp/out" || fail "the intra-host ring is off the closed form by 2% or more"

# Bucket order: 6 layers of 10 MB, bucket 25 MB: layers 3-5 first (30 MB,
# cut when the pending range reaches 25 MB), then 0-2 (the remainder,
# reduced after backward).
cp "$tmp/switch.spec" "$tmp/order.spec"
echo "bucket = 25000000" >>"$tmp/order.spec"
for i in 0 1 2 3 4 5; do echo "layer = 0.001 10000000"; done >>"$tmp/order.spec"
"$sim" --order "$tmp/order.spec" >"$tmp/out" 2>"$tmp/err" ||
    fail "dt-plan-sim --order: $(cat "$tmp/err")"
printf 'bucket layers 3-5 bytes 30000000\nbucket layers 0-2 bytes 30000000\n' \
    | cmp -s - "$tmp/out" || fail "buckets not ready last layer first"

# The trainer's layer times plan as they are: N = 1 is forward + every
# event + optimizer.
"$DTCTL" plan --layer-times "$tmp/trained.layers" --hosts 2 --network 10Gbit \
    --profile "$tmp/none.ini" >"$tmp/out" 2>&1 || fail "plan --layer-times from the trainer"
sum=$(awk '/^(forward|optimizer) / { s += $2; next } /^[0-9.e-]+ [0-9]+$/ { s += $1 }
           END { printf "%.6f", s * 1e3 }' "$tmp/trained.layers")
awk -v s="$sum" '$1 == 1 { d = $2 - s; if (d < 0) d = -d; ok = s > 0 && d <= 0.01 * s + 0.001 }
    END { exit !ok }' "$tmp/out" || fail "N = 1 is not the trainer's layer times summed ($sum ms): $(cat "$tmp/out")"
# The file says its batch (64); planned at another, the compute follows.
grep -q "^batch 64$" "$tmp/trained.layers" || fail "the trainer's layer times do not say their batch"
"$DTCTL" plan --layer-times "$tmp/trained.layers" --hosts 2 --network 10Gbit \
    --profile "$tmp/none.ini" --batch 128 >"$tmp/out" 2>&1 || fail "plan --layer-times --batch 128"
grep -q "holds times for a per-worker batch of 64; planned at 128, the compute scaled by 2" "$tmp/out" ||
    fail "another batch than the layer times': no word"
awk -v s="$sum" '$1 == 1 { d = $2 - 2 * s; if (d < 0) d = -d; ok = d <= 0.02 * s + 0.002 }
    END { exit !ok }' "$tmp/out" || fail "N = 1 at batch 128 is not twice the sum ($sum ms): $(cat "$tmp/out")"

# tests/gpu/digest.sh (back home after a GPU check): from a reply's
# folder with GPU layer times and no plan_measure runs, the summary, a
# word on the missing runs and 8 projections (8/64 hosts x 100/400 Gbit x
# dt/Horovod), each with a step and an efficiency.
mkdir -p "$tmp/reply/x/logs/layers"
printf 'batch 256\nforward 0.004\noptimizer 0.001\n' >"$tmp/reply/x/logs/layers/resnet18-gpu.layers"
i=0; while [ $i -lt 20 ]; do echo "0.0004 2000000"; i=$((i + 1)); done \
    >>"$tmp/reply/x/logs/layers/resnet18-gpu.layers"
(cd "$tmp/reply/x" && tar czf ../logs.tar.gz logs)
echo "step result" >"$tmp/reply/summary.txt"
sh "$top_srcdir/tests/gpu/digest.sh" "$tmp/reply" --builddir "$top_builddir" >"$tmp/out" 2>&1 ||
    fail "digest.sh: $(cat "$tmp/out")"
grep -q "^step result$" "$tmp/out" || fail "digest.sh: no summary"
grep -q "no logs/plan: plan_measure did not run" "$tmp/out" || fail "digest.sh: the missing runs unsaid"
[ "$(grep -cE '^# (8|64) hosts x 8 GPUs, (100|400)Gbit, (dt|horovod): step [0-9.]+ ms, .*efficiency [0-9.]+%' "$tmp/out")" = 8 ] ||
    fail "digest.sh: not 8 projections: $(cat "$tmp/out")"

# Refusals.
printf '<platform version="4.1"><zone id="z" routing="Full">\n' >"$tmp/bad.xml"
if "$DTCTL" plan "$job" --hosts 2 --platform "$tmp/bad.xml" \
    >"$tmp/out" 2>&1; then fail "a broken platform file was accepted"; fi
grep -q "platform" "$tmp/out" || fail "the platform error does not say so"
cat >"$tmp/small.xml" <<EOS
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="gpu" suffix="" radical="0-1" speed="1Gf"
           bw="25Gbps" lat="5us"/>
</platform>
EOS
if "$DTCTL" plan "$job" --hosts 4 --platform "$tmp/small.xml" \
    >"$tmp/out" 2>&1; then fail "4 workers planned on a 2-host platform"; fi
grep -q "has 2 hosts" "$tmp/out" || fail "no 'has 2 hosts' in the refusal"
if "$DTCTL" plan "$job" --hosts 2 --gpus-per-host 2 --max-workers 5 \
    --network 25Gbit >"$tmp/out" 2>&1; then fail "5 workers on 4 GPUs"; fi
grep -q "2 x 2 = 4" "$tmp/out" || fail "the GPU count is not named"
if "$DTCTL" plan "$job" --hosts 2 --network 25Gfoo >"$tmp/out" 2>&1; then
    fail "--network 25Gfoo accepted"; fi
grep -q "25Gbit" "$tmp/out" || fail "the rate error shows no example"

# A real plan: the MLP on 64 hosts x 8 GPUs (its time is measured in
# bench/, not here; timeout only guards against a hang).
timeout 600 "$DTCTL" plan "$job" --hosts 64 --gpus-per-host 8 --network 25Gbit \
    --profile "$tmp/none.ini" >"$tmp/out" 2>&1 || fail "dtctl plan 512"
grep -q "^ *512 " "$tmp/out" || fail "no row for N = 512"
grep -q "^ *1 .*100.0%" "$tmp/out" || fail "N = 1 is not 100% efficient"
# --sweep: bucket sizes x hierarchy on/off at the largest N, the fastest.
printf 'forward 0.03\noptimizer 0.002\n' >"$tmp/layers"
i=0; while [ $i -lt 20 ]; do echo "0.001 2000000"; i=$((i + 1)); done >>"$tmp/layers"
"$DTCTL" plan "$job" --hosts 4 --gpus-per-host 2 --network 10Gbit \
    --layer-times "$tmp/layers" --profile "$tmp/none.ini" --sweep \
    >"$tmp/out" 2>&1 || fail "dtctl plan --sweep"
[ "$(grep -c '  off' "$tmp/out")" -eq 9 ] || fail "--sweep: not 9 sizes with the hierarchy off"
grep -q "^# fastest: bucket [0-9]*M, hierarchy o[nf]*, .*: \[train\] bucket = [0-9]*M; \[collectives\] .*allreduce_ring = [0-9G]*, compression = [a-z0-9]*" "$tmp/out" ||
    fail "--sweep names no fastest setting with its keys"
# then the algorithm (by size, ring, halving) x wire (float32, bf16) at
# that bucket: 6 rows; bf16 on the wire is never slower than float32
[ "$(grep -cE '^ +(by size|ring|halving) +(float32|bf16) ' "$tmp/out")" -eq 6 ] ||
    fail "--sweep: not 6 algorithm x wire rows"
awk '/^ +(by size|ring|halving) +(float32|bf16) / { k = $1 == "by" ? "size" : $1
        w = $1 == "by" ? $3 : $2; t = $1 == "by" ? $4 : $3; st[k, w] = t }
     END { split("size ring halving", a, " ")
           for (i = 1; i <= 3; i++) { if (!((a[i], "bf16") in st)) exit 1
               if (st[a[i], "bf16"] > st[a[i], "float32"] + 1e-6) exit 1 } }' "$tmp/out" ||
    fail "--sweep: bf16 slower than float32 for some algorithm"
# --hierarchy off: the sweep's "on" rows still run the hierarchy (not
# the plan's off), and the fastest names hier_min where it changes.
"$DTCTL" plan "$job" --hosts 4 --gpus-per-host 2 --network 10Gbit \
    --layer-times "$tmp/layers" --profile "$tmp/none.ini" --sweep --hierarchy off \
    >"$tmp/out" 2>&1 || fail "dtctl plan --sweep --hierarchy off"
grep -q "hierarchy off, wire" "$tmp/out" || fail "--hierarchy off: the header does not say off"
on25=$(awk '$1 == "25M" && $2 == "on" { print $3 }' "$tmp/out")
off25=$(awk '$1 == "25M" && $2 == "off" { print $3 }' "$tmp/out")
[ -n "$on25" ] && [ "$on25" != "$off25" ] || fail "--sweep --hierarchy off: 'on' rows are the off ones ($on25 = $off25)"
grep -q "25M  *off .*(the job's)" "$tmp/out" || fail "--sweep --hierarchy off: the job's row is not 25M off"
if grep -q "hierarchy on, .*(.*ms): .*hier_min = 16G" "$tmp/out"; then fail "fastest 'on' names hier_min = 16G"; fi
# [collectives] shm = off: no shared segment, so no "shm" and no "hier"
# allreduce, the header says why; --hierarchy on is then refused
sed 's/^\[data\]$/[collectives]\nshm = off\n\n[data]/' "$job" >"$tmp/noshm.ini"
"$DTCTL" plan "$tmp/noshm.ini" --hosts 4 --gpus-per-host 2 --network 10Gbit \
    --layer-times "$tmp/layers" --profile "$tmp/none.ini" >"$tmp/out" 2>&1 || fail "plan with shm = off"
grep -q "hierarchy off (\[collectives\] shm = off)" "$tmp/out" || fail "shm = off: the header does not say so"
if awk '$1 ~ /^[0-9]+$/ && ($8 == "shm" || $8 == "hier")' "$tmp/out" | grep -q .; then
    fail "shm = off planned with the shared segment: $(cat "$tmp/out")"; fi
bad "--hierarchy on: the job has \[collectives\] shm = off" "$tmp/noshm.ini" --hosts 4 --gpus-per-host 2 \
    --network 10Gbit --layer-times "$tmp/layers" --profile "$tmp/none.ini" --hierarchy on
# compression is on the transport only: one host's shared segment stays
# float32, so bf16 changes nothing there
c1() { "$DTCTL" plan --layer-times "$tmp/layers" --hosts 1 --gpus-per-host 8 --profile "$tmp/none.ini" \
    --compression "$1" 2>/dev/null | awk '$1 == 8 { print $7 }'; }
[ "$(c1 none)" = "$(c1 bf16)" ] && [ -n "$(c1 none)" ] || fail "bf16 on one host's segment: $(c1 none) vs $(c1 bf16) ms"
# --save-layers saves the times as the plan uses them: a model given by
# size and rate saved and planned again gives the same step
"$DTCTL" plan --model-params 25M --samples-per-sec 100 --hosts 1 --profile "$tmp/none.ini" \
    --save-layers "$tmp/sized.layers" >"$tmp/out" 2>&1 || fail "--save-layers of a sized model"
"$DTCTL" plan --layer-times "$tmp/sized.layers" --hosts 1 --profile "$tmp/none.ini" >"$tmp/out2" 2>&1 ||
    fail "planning a saved sized model"
[ "$(step_of1 "$tmp/out")" = "$(step_of1 "$tmp/out2")" ] && [ "$(step_of1 "$tmp/out")" = 640.000 ] ||
    fail "--save-layers: 640.000 ms planned, $(step_of1 "$tmp/out2") from the file"
echo "--hierarchy off sweeps on rows too; shm = off plans no segment; bf16 not on a host's segment; --save-layers scaled"

# A GPU job (device = cuda) planned from this CPU's layer times: warned,
# naming what to give instead; with --samples-per-sec, not.
sed 's/^device = .*/device = cuda/' "$job" >"$tmp/gpu-job.ini"
"$DTCTL" plan "$tmp/gpu-job.ini" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    >"$tmp/out" 2>&1 || fail "plan of a device = cuda job"
grep -q "trains with \[train\] device = cuda, but its layers are timed here on the CPU: for a GPU cluster give --layer-times" \
    "$tmp/out" || fail "a cuda job planned from CPU times: no warning"
"$DTCTL" plan "$tmp/gpu-job.ini" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    --samples-per-sec 5000 >"$tmp/out" 2>&1 || fail "plan of a cuda job with --samples-per-sec"
if grep -q "timed here on the CPU" "$tmp/out"; then fail "warned although --samples-per-sec gave the GPU's rate"; fi
# mode = async: the plan is of synchronous steps, and says so.
sed 's/^\[train\]/[train]\nmode = async/' "$job" >"$tmp/async-job.ini"
"$DTCTL" plan "$tmp/async-job.ini" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    >"$tmp/out" 2>&1 || fail "plan of a mode = async job"
grep -q "mode = async (parameter servers); the plan simulates synchronous" "$tmp/out" ||
    fail "mode = async planned without a word"

# A model given by its size and one GPU's throughput (no job file): bad
# values are refused, each with a message naming the option.
refuse() { # expected-text, then the arguments
    want=$1; shift
    if "$DTCTL" plan "$@" --hosts 4 --gpus-per-host 4 --network 25Gbit \
        --profile "$tmp/none.ini" >"$tmp/out" 2>&1; then
        fail "accepted: $*"; fi
    grep -q -- "$want" "$tmp/out" || fail "'$*': no '$want' in the message"
}
refuse "--model-params 0" --model-params 0 --samples-per-sec 100
refuse "--model-params 12MB" --model-params 12MB --samples-per-sec 100
refuse "--samples-per-sec -3" --model-params 25M --samples-per-sec -3
refuse "--samples-per-sec fast" --model-params 25M --samples-per-sec fast
refuse "needs --samples-per-sec" --model-params 25M
refuse "--model-layers 0" --model-params 25M --samples-per-sec 100 --model-layers 0
refuse "goes with --model-params" "$job" --model-layers 10
refuse "one of them" --model-params 25M --samples-per-sec 100 --layer-times "$tmp/layers"
refuse "one of them" --model-params 25M --samples-per-sec 100 --compute-scale 2
refuse "--baseline mpi" --model-params 25M --samples-per-sec 100 --baseline mpi
refuse "--compression zip" --model-params 25M --samples-per-sec 100 --compression zip
refuse "--hierarchy maybe" --model-params 25M --samples-per-sec 100 --hierarchy maybe
refuse "--batch 0" --model-params 25M --samples-per-sec 100 --batch 0
refuse "leave out --baseline horovod" --model-params 25M --samples-per-sec 100 --baseline horovod --sweep
# a typo in the job's layers: named with the job file's line
printf '[data]\ndataset = fashion-mnist\n[model]\nlayers = flatten rleu linear(10)\n' >"$tmp/typo.ini"
refuse "typo.ini:4: .*unknown layer 'rleu'" "$tmp/typo.ini"

refuse "--topology ring" --model-params 25M --samples-per-sec 100 --topology ring
refuse "the oversubscription dividing L" --model-params 25M --samples-per-sec 100 --topology fat-tree:4:3
refuse "the oversubscription dividing L" --model-params 25M --samples-per-sec 100 --topology fat-tree:0
for bad in fat-tree:4294967297 fat-tree:4: fat-tree:-4 fat-tree:4:-2 "fat-tree:4 :2"; do
    refuse "L (1 to 65536) hosts per leaf" --model-params 25M --samples-per-sec 100 --topology "$bad"
done
refuse "SimGrid's form" --model-params 25M --samples-per-sec 100 --topology "fat-tree:2;4,4;1,2"
refuse "1073741824 leaves; at most 1048576" --model-params 25M --samples-per-sec 100 --topology "fat-tree:3;1024,1024,1024;1,1,1;1,1,1"
refuse "has 2 hosts, 4 asked" --model-params 25M --samples-per-sec 100 --topology "fat-tree:1;2;1;1"
refuse "leave out --topology" --model-params 25M --samples-per-sec 100 --topology fat-tree:4 --platform "$tmp/small.xml"

# Numbers out of range and files with bad values: refused, naming the
# option or the file and line (not overflowed, cut or planned as 0).
M="--model-params 25M --samples-per-sec 100 --profile $tmp/none.ini"
bad "--hosts 100000: hosts, 1 to 8192" $M --hosts 100000 --gpus-per-host 30000 --network 25Gbit
bad "--hosts 4096 x --gpus-per-host 32 = 131072 workers: at most 8192" $M --hosts 4096 --gpus-per-host 32 --network 25Gbit
# the time grows as N^2 (4096 workers 7 s, 65536 half an hour): a cap
bad "--hosts 16384: hosts, 1 to 8192" $M --hosts 16384 --max-workers 2 --network 25Gbit
bad "--hosts 1024 x --gpus-per-host 16 = 16384 workers: at most 8192" $M --hosts 1024 --gpus-per-host 16 \
    --max-workers 2 --network 25Gbit
bad "--gpus-per-host 65536: workers a host, 1 to 1024" $M --hosts 2 --gpus-per-host 65536 --network 25Gbit
bad "--batch 4294967360: the per-worker batch, 1 to" $M --hosts 1 --batch 4294967360
for in in 1,28,28,0 1,28,28 1,28,28,10,junk 0,28,28,10; do
    bad "--input $in: channels,height,width,classes" "$job" --hosts 1 --input "$in"
done
bad "--compute-scale inf: a positive factor" "$job" --hosts 2 --network 10Gbit --compute-scale inf
bad "--network infGbit: a rate like 25Gbit" $M --hosts 2 --network infGbit
bad "--latency 5parsecs: a duration like 5us, 500ns or 2ms" $M --hosts 2 --network 10Gbit --latency 5parsecs
bad "--model-params 10: fewer parameters than the 100 layers" --model-params 10 --samples-per-sec 100 \
    --model-layers 100 --hosts 2 --network 10Gbit
printf 'batch 64\nforward 0.01\nnan 4096\n' >"$tmp/nan.layers"
printf 'forward 0.01 junk\n0.001 4096\n' >"$tmp/junk.layers"
printf 'forward -0.5\n0.001 4096\n' >"$tmp/neg.layers"
printf 'batch 64.9\nforward 0.01\n0.001 4096\n' >"$tmp/frac.layers"
for f in nan:3 junk:1 neg:1 frac:1; do
    bad "${f%:*}.layers:${f#*:}: expected 'SECONDS BYTES'" --layer-times "$tmp/${f%:*}.layers" \
        --hosts 2 --network 10Gbit --profile "$tmp/none.ini"
done
printf '[transport.tcp]\nalpha = 20 us\nbeta = 1e-9\ngamma = 0\n' >"$tmp/us.ini"
bad "us.ini:2: \[transport.tcp\] alpha = 20 us: seconds" --model-params 25M --samples-per-sec 100 \
    --hosts 2 --network 10Gbit --profile "$tmp/us.ini"
printf '[transport.tcp]\nalpha = 2e-5\nbeta = 1e-9\ngamma = nan\n' >"$tmp/nan.ini"
bad "nan.ini:4: \[transport.tcp\] gamma = nan" --model-params 25M --samples-per-sec 100 \
    --hosts 2 --network 10Gbit --profile "$tmp/nan.ini"
# ... and what is fine: 500ns, 25Gb/s; a profile without the section
# --net-transport names (a typo) says that, not "no profile"
"$DTCTL" plan $M --hosts 2 --network 25Gb/s --latency 500ns >"$tmp/out" 2>&1 ||
    fail "--network 25Gb/s --latency 500ns refused"
grep -q "network 25 Gbit/s 0.5 us" "$tmp/out" || fail "25Gb/s, 500ns: not in the header"
printf '[transport.tcp]\nalpha = 2e-5\nbeta = 1e-9\ngamma = 0\n' >"$tmp/tcp.ini"
"$DTCTL" plan --model-params 25M --samples-per-sec 100 --hosts 2 --network 10Gbit \
    --profile "$tmp/tcp.ini" --net-transport ucxx >"$tmp/out" 2>&1 || fail "--net-transport ucxx"
grep -q "profile .*tcp.ini has no \[transport.ucxx\] section (--net-transport names it)" "$tmp/out" ||
    fail "a missing section reported as: $(grep warning "$tmp/out")"
echo "refusals: out-of-range counts, --input, inf, bad layer and profile values (file:line)"

# What a user gets wrong first: options without a model, two job files,
# --platform without --hosts or beside --network/--latency (the file's
# links would silently win), a batch this host cannot time; and headers
# that say what is planned: tc's 25gbit, 3.2Tbit as 3200 Gbit/s, one host
# without a network, one GPU a host without a hierarchy.
N="--profile $tmp/none.ini"
bad "no model to plan: give JOB.ini, --model-params N" --samples-per-sec 100 --hosts 2 --network 10Gbit $N
bad "one JOB.ini, not 'a.ini' and 'b.ini'" a.ini b.ini --hosts 2 --network 10Gbit $N
bad "--hosts H is needed" $M --platform "$tmp/small.xml"
bad "describes the network itself (its links' rates and latencies): leave out --network" \
    $M --hosts 2 --platform "$tmp/small.xml" --network 1Gbit
bad "leave out --intra-latency" $M --hosts 2 --platform "$tmp/small.xml" --intra-latency 2us
cnn="$top_srcdir/conf/examples/fashion-mnist-cnn.ini"
avail=$(awk '/^(MemAvailable|SwapFree):/ { k += $2 } END { print int(k / 1048576) }' /proc/meminfo)
if [ "${avail:-0}" -lt 1200 ]; then # GiB: the CNN at 2^24 a batch needs ~1275
    bad "timing the model here at a per-worker batch of 16777216 needs about .* GiB.*--save-layers FILE), then plan with --layer-times FILE --batch 16777216" \
        "$cnn" --hosts 2 --network 10Gbit --batch 16777216 $N
fi
"$DTCTL" plan $M --hosts 2 --network 3.2Tbit >"$tmp/out" 2>&1 || fail "--network 3.2Tbit"
grep -q "network 3200 Gbit/s 5 us" "$tmp/out" || fail "3.2Tbit: $(head -3 "$tmp/out")"
grep -q "hierarchy none (one GPU a host)" "$tmp/out" || fail "one GPU a host: $(head -3 "$tmp/out")"
"$DTCTL" plan $M --hosts 2 --gpus-per-host 2 --network 25gbit >"$tmp/out" 2>&1 || fail "--network 25gbit"
grep -q "network 25 Gbit/s 5 us" "$tmp/out" && grep -q "hierarchy on from" "$tmp/out" ||
    fail "25gbit, 2 GPUs a host: $(head -3 "$tmp/out")"
"$DTCTL" plan $M --hosts 1 --gpus-per-host 2 >"$tmp/out" 2>&1 || fail "one host"
grep -q "1 host(s) x 2 GPU(s), no network (one host), intra" "$tmp/out" || fail "one host: $(head -3 "$tmp/out")"
echo "user errors: no model, two jobs, --platform with --network or without --hosts, a batch too big to time; headers"

# Rates and costs a simulation cannot finish with (SimGrid's clock at
# infinity: it killed the step, and a garbage row or a crash came out)
# or that overflow (1e300 x Tbit): refused, naming the option or the
# file:line; the simulator's own spec checks them too.
printf '[transport.shm]\nalpha = 5e-6\nbeta = 1e300\ngamma = 0\n' >"$tmp/b300.ini"
bad "b300.ini:3: \[transport.shm\] beta = 1e+300: out of range" $M --hosts 2 --gpus-per-host 2 \
    --network 10Gbit --profile "$tmp/b300.ini"
printf '[transport.tcp]\nalpha = 5\n' >"$tmp/a5.ini"
bad "a5.ini:2: \[transport.tcp\] alpha = 5: out of range: alpha (seconds a round) at most 1" \
    --model-params 25M --samples-per-sec 100 --hosts 2 --network 10Gbit --profile "$tmp/a5.ini"
bad "--intra 1e-300bit: a rate like 100Gbit or 50GB/s, 1bit/s to 1e16bit/s" $M --hosts 2 \
    --gpus-per-host 2 --network 10Gbit --intra 1e-300bit
bad "--network 1e300Tbit: a rate like 25Gbit, 100Gbit or 12GB/s, 1bit/s to 1e16bit/s" $M --hosts 2 \
    --network 1e300Tbit
bad "--latency 2s: a duration like 5us, 500ns or 2ms, at most 1s" $M --hosts 2 --network 10Gbit --latency 2s
bad "--model-params 1e300: a parameter count like 138357544 or 44.7M, 1 to 1e+13" \
    --model-params 1e300 --samples-per-sec 100 --hosts 2 --network 10Gbit
bad "one worker's step would compute for 6.4e+301 s" --model-params 25M --samples-per-sec 1e-300 \
    --hosts 2 --network 10Gbit --profile "$tmp/none.ini"
sed 's/^intra_bw = .*/intra_bw = 1e-300/' "$tmp/switch.spec" >"$tmp/slow.spec"
"$sim" "$tmp/slow.spec" >"$tmp/out" 2>&1 && fail "dt-plan-sim planned over intra_bw = 1e-300"
grep -q "slow.spec:5: intra_bw = 1e-300: bytes/s, 1bit/s to 1e16bit/s" "$tmp/out" ||
    fail "dt-plan-sim intra_bw = 1e-300: $(cat "$tmp/out")"
# The job's batch_size is checked by dtctl with its file:line (the model
# could only say it cannot run; with --layer-times the simulator named
# its temporary spec).
sed 's/^\[train\]$/[train]\nbatch_size = -3/' "$job" | grep -v '^batch_size = [0-9]' >"$tmp/b-3.ini"
ln=$(grep -n '^batch_size = -3' "$tmp/b-3.ini" | cut -d: -f1)
bad "b-3.ini:$ln: \[train\] batch_size = -3: the per-worker batch, 1 to 16777216" "$tmp/b-3.ini" \
    --hosts 2 --network 10Gbit --profile "$tmp/none.ini"
bad "b-3.ini:$ln: \[train\] batch_size = -3" "$tmp/b-3.ini" --layer-times "$tmp/layers" \
    --hosts 2 --network 10Gbit --profile "$tmp/none.ini"
# Platform files that load but cannot carry a plan: no route between
# two hosts (a Full zone gives none, Floyd throws, Dijkstra crashed), a
# link of 0 or 1e-300 bytes/s; each said with the file and the host or
# link, the rows computed before kept; a directory is not a platform.
for routing in Full Floyd Dijkstra; do
    cat >"$tmp/noroute.xml" <<EOS
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="$routing">
    <host id="gpu0" speed="1Gf"/>
    <host id="gpu1" speed="1Gf"/>
    <link id="l0" bandwidth="1GBps" latency="5us"/>
  </zone>
</platform>
EOS
    bad "platform $tmp/noroute.xml: no route from host 'gpu0' (worker 0) to 'gpu1' (worker 1), which the plan connects at N = 2" \
        $M --hosts 2 --platform "$tmp/noroute.xml"
    grep -q "^ *1 .*100.0%" "$tmp/out" || fail "no route ($routing): the row of N = 1 lost"
done
for bw in 0Bps 1e-300Bps; do
    sed "s|<link id=\"l0\" bandwidth=\"1GBps\" latency=\"5us\"/>|<link id=\"l0\" bandwidth=\"$bw\" latency=\"5us\"/><route src=\"gpu0\" dst=\"gpu1\"><link_ctn id=\"l0\"/></route>|" \
        "$tmp/noroute.xml" >"$tmp/slow.xml"
    bad "platform $tmp/slow.xml: link 'l0' has bandwidth [0-9e.+-]* bytes/s: give it 1bit/s to 1e16bit/s" \
        $M --hosts 2 --platform "$tmp/slow.xml"
done
bad "--platform $tmp: not a regular file: give a SimGrid platform XML file" $M --hosts 2 --platform "$tmp"
# a platform that works: the header says the network is the file's
"$DTCTL" plan $M --hosts 2 --platform "$tmp/small.xml" >"$tmp/out" 2>&1 || fail "plan on small.xml"
grep -q "2 host(s) x 1 GPU(s), network from --platform $tmp/small.xml, bucket" "$tmp/out" ||
    fail "--platform: the header does not say the network is the file's: $(head -3 "$tmp/out")"
echo "rates, costs, the job's batch and platform files checked before or as the simulation uses them"

# An oversubscribed fat tree slows what crosses it: 16 hosts in leaves of
# 4, a 4 MB allreduce (halving/doubling: its last rounds pair hosts of
# different leaves). Non-blocking (4 up-links per leaf) is within 2% of
# the one switch; 4:1 (one up-link) at least doubles the communication.
tree_comm() { # the comm(ms) column at N = 16
    "$DTCTL" plan --model-params 1M --samples-per-sec 1000 --hosts 16 \
        --network 10Gbit --profile "$tmp/none.ini" "$@" 2>"$tmp/err" |
        awk '$1 == 16 { print $7 }'
}
sw=$(tree_comm) nb=$(tree_comm --topology fat-tree:4) os=$(tree_comm --topology fat-tree:4:4)
awk -v s="$sw" -v n="$nb" -v o="$os" 'BEGIN { exit !(s > 0 && n >= s && n < 1.02 * s && o > 2 * n) }' ||
    fail "fat trees: switch $sw ms, non-blocking $nb ms, 4:1 $os ms (expected n within 2% of s, o > 2n)"
echo "fat trees: one switch $sw ms, non-blocking $nb ms, 4:1 oversubscribed $os ms"

# Structure: a bandwidth-bound model (138M parameters, 300 samples/s of
# batch 64) on 8 hosts x 4 GPUs over 10 Gbit/s: N = 1 takes batch / X;
# the Horovod-like baseline's efficiency does not rise from N = 8 to 32
# (more hosts on one network only add ring steps); bf16 on the wire is not
# slower than float32 at N = 32.
plan_eff() { # prints "N step(ms) efficiency" rows
    "$DTCTL" plan --model-params 138M --samples-per-sec 300 --hosts 8 \
        --gpus-per-host 4 --network 10Gbit --profile "$tmp/none.ini" "$@" \
        2>"$tmp/err" | awk '/^ +[0-9]/ { sub("%", "", $4); print $1, $2, $4 }'
}
plan_eff --baseline horovod >"$tmp/hvd" || fail "dtctl plan --baseline horovod"
awk '$1 == 1 { ok = ($2 > 213.2 && $2 < 213.4) } END { exit !ok }' "$tmp/hvd" ||
    fail "N = 1 is not batch / samples-per-sec (213.3 ms): $(cat "$tmp/hvd" "$tmp/err")"
awk '$1 >= 8 { if (seen && $3 > last + 0.05) bad = 1; last = $3; seen = 1 }
    END { exit !(seen && !bad) }' "$tmp/hvd" ||
    fail "Horovod-like efficiency rises with N: $(cat "$tmp/hvd")"
plan_eff --compression none >"$tmp/fp32" || fail "dtctl plan --compression none"
plan_eff --compression bf16 >"$tmp/bf16" || fail "dtctl plan --compression bf16"
f=$(awk '$1 == 32 { print $2 }' "$tmp/fp32"); b=$(awk '$1 == 32 { print $2 }' "$tmp/bf16")
awk -v f="$f" -v b="$b" 'BEGIN { exit !(f > 0 && b > 0 && b <= f) }' ||
    fail "bf16 ($b ms) slower than float32 ($f ms) at N = 32"

# --plot: the same table on stdout, and a picture of efficiency and
# communication share against N (gnuplot, when installed: Debian's
# gnuplot-nox is in bootstrap.sh's list).
plot_plan() { # the plan of plan_eff, its exit status kept
    "$DTCTL" plan --model-params 138M --samples-per-sec 300 --hosts 8 \
        --gpus-per-host 4 --network 10Gbit --profile "$tmp/none.ini" \
        --compression none "$@" >"$tmp/plot.out" 2>"$tmp/err"
}
plot_plan --plot "$tmp/scale.txt" && fail "--plot to a .txt file accepted"
grep -q "the picture is a .png or .svg file" "$tmp/err" || fail "--plot .txt: $(cat "$tmp/err")"
plot_plan --plot "$tmp/nodir/scale.png" && fail "--plot into a missing directory succeeded"
grep -qF "dtctl plan --plot: cannot write the picture $tmp/nodir/scale.png: No such file or directory; name a file" "$tmp/err" ||
    fail "--plot into a missing directory: $(cat "$tmp/err")"
GNUPLOT=/nonexistent/gnuplot plot_plan --plot "$tmp/scale.png" &&
    fail "--plot without gnuplot succeeded"
grep -q "needs gnuplot, which is not installed here.*gnuplot-nox" "$tmp/err" ||
    fail "--plot without gnuplot: $(cat "$tmp/err")"
if command -v gnuplot >/dev/null 2>&1; then
    plot_plan --plot "$tmp/scale.png" || fail "--plot: $(cat "$tmp/err")"
    awk '/^ +[0-9]/ { sub("%", "", $4); print $1, $2, $4 }' "$tmp/plot.out" >"$tmp/plotted"
    cmp -s "$tmp/plotted" "$tmp/fp32" || fail "--plot changed the table: $(diff "$tmp/plotted" "$tmp/fp32")"
    [ "$(head -c 8 "$tmp/scale.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "--plot did not write a PNG"
    grep -q "scale.png: efficiency and communication share for N up to 32 ([0-9]* points)" "$tmp/err" ||
        fail "--plot: no line naming the picture: $(cat "$tmp/err")"
    plot_plan --plot "$tmp/scale.svg" || fail "--plot svg: $(cat "$tmp/err")"
    grep -q "scaling efficiency" "$tmp/scale.svg" || fail "the SVG has no efficiency axis"
    # the simulator run without a shell: any path, a quote included
    plot_plan --plot "$tmp/q.svg" --spec "$tmp/it's.spec" || fail "--plot, --spec with a quote: $(cat "$tmp/err")"
    grep -q "scaling efficiency" "$tmp/q.svg" && [ -s "$tmp/it's.spec" ] ||
        fail "--plot, --spec with a quote: no picture or no spec"
    echo "--plot: PNG and SVG, the table unchanged"
else
    echo "gnuplot not installed: --plot's picture not checked (apt-get install gnuplot-nox)"
fi
# --device-flops: the job's FLOPs (dt_model_flops) at a given rate make one
# worker's step 3 x F x batch / rate; bad rates and clashing options refused.
# (--data-wait 0: the compute alone; a loader slower than 0.119 ms a batch,
# as in the sanitizer build, would make the step its own.)
"$DTCTL" plan "$top_srcdir/bench/resnet20.ini" --hosts 2 --gpus-per-host 2 \
    --network 25Gbit --profile "$tmp/none.ini" --device-flops 100T --data-wait 0 \
    >"$tmp/df" 2>"$tmp/err" || fail "--device-flops: $(cat "$tmp/err")"
grep -q "0.06204 GFLOP per sample forward, x3 per training step: 0.119 ms for a batch of 64 at 100 TFLOP/s" "$tmp/err" ||
    fail "--device-flops: the FLOP count or the step: $(cat "$tmp/err")"
awk '$1 == 1 { ok = ($2 > 0.1185 && $2 < 0.1197) } END { exit !ok }' "$tmp/df" ||
    fail "--device-flops: N = 1's step is not 3 x F x 64 / 1e14: $(cat "$tmp/df")"
for bad in 100X -5T abc; do
    "$DTCTL" plan "$top_srcdir/bench/resnet20.ini" --hosts 2 --network 25Gbit \
        --device-flops "$bad" >/dev/null 2>"$tmp/err" && fail "--device-flops $bad accepted"
    grep -q "device-flops $bad: one worker's achieved rate" "$tmp/err" || fail "--device-flops $bad: $(cat "$tmp/err")"
done
"$DTCTL" plan --model-params 25M --hosts 2 --network 25Gbit --device-flops 100T \
    >/dev/null 2>"$tmp/err" && fail "--device-flops with --model-params accepted"
grep -q "device-flops counts the FLOPs of a job file's" "$tmp/err" || fail "--device-flops with --model-params: $(cat "$tmp/err")"
echo "--device-flops: ResNet-20 62.04 MFLOP/sample, the step from the rate"
# --device-bandwidth: each layer a roofline, nothing timed here. The MLP
# (784-256-128-10, batch 64) compute-bound at 1 TFLOP/s: its events are
# its linear layers' backward FLOPs (2 products, 1 for the first layer,
# which has no dx) / 1e12 -- 0.32768, 8.388608, 25.690112 us -- and
# forward their sum of one product each (30.048256 us), plus what moves
# no FLOPs at 1e15 B/s, the fastest rate taken: the two ReLUs'
# activations ((128 + 128) and (256 + 256) x 4 x 64 bytes, twice in
# their events) and, in forward, flatten's (784 + 784); memory-bound at
# 1 GB/s: the last layer's event is twice its activations
# ((128 + 10) x 4 x 64 bytes) and weights (1290 x 4) over 1 GB/s.
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    --device-flops 1T --device-bandwidth 1e15B/s --save-layers "$tmp/rf.layers" \
    >"$tmp/out" 2>&1 || fail "--device-bandwidth: $(cat "$tmp/out")"
awk '/^forward/ { f = $2 } /^[0-9.e-]+ [0-9]+$/ { t[++n] = $1 }
     function near(a, b) { return a > b * (1 - 1e-6) && a < b * (1 + 1e-6) }
     END { r1 = 256 * 4 * 64 / 1e15; r2 = 512 * 4 * 64 / 1e15; r0 = 1568 * 4 * 64 / 1e15
           exit !(near(f, 30.048256e-6 + r0 + r1 + r2) && n == 4 && near(t[1], 0.32768e-6) &&
                  near(t[2], 8.388608e-6 + 2 * r1) && near(t[3], 25.690112e-6 + 2 * r2) &&
                  t[4] == 0) }' \
    "$tmp/rf.layers" || fail "--device-bandwidth compute-bound: $(cat "$tmp/rf.layers")"
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    --device-flops 1e30 --device-bandwidth 1GB/s --save-layers "$tmp/rf.layers" \
    >"$tmp/out" 2>&1 || fail "--device-bandwidth memory-bound: $(cat "$tmp/out")"
awk '/^[0-9.e-]+ [0-9]+$/ && !n++ { exit !($1 > 80.975e-6 && $1 < 80.977e-6) }' \
    "$tmp/rf.layers" || fail "--device-bandwidth memory-bound: $(cat "$tmp/rf.layers")"
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --device-bandwidth 2TB/s \
    >/dev/null 2>"$tmp/err" && fail "--device-bandwidth without --device-flops accepted"
grep -q "device-bandwidth goes with --device-flops" "$tmp/err" || fail "--device-bandwidth alone: $(cat "$tmp/err")"
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --device-flops 1T --device-bandwidth fast \
    >/dev/null 2>"$tmp/err" && fail "--device-bandwidth fast accepted"
grep -q "device-bandwidth fast: the memory bandwidth" "$tmp/err" || fail "--device-bandwidth fast: $(cat "$tmp/err")"
echo "--device-bandwidth: the MLP's layers as rooflines, compute- and memory-bound"

# --device-launch: the MLP (flatten linear relu linear relu linear: 6
# layers forward, the 5 from its first linear backward, the optimizer:
# 12 launches a step) launch-bound at 1 ms a launch: the step is the
# host's 12 ms (its layers scaled to it; 1 host, 1 GPU, no traffic), and
# at 1 ns GPU-bound: the roofline's step unchanged (--data-wait 0: the
# loaders' measured rate, which may bound a step this small, is left out)
"$DTCTL" plan "$job" --hosts 1 --network 10Gbit --profile "$tmp/none.ini" \
    --data-wait 0 --device-flops 1T --device-bandwidth 1e15B/s --device-launch 1ms \
    >"$tmp/out" 2>&1 || fail "--device-launch 1ms: $(cat "$tmp/out")"
grep -q "1000 us: 12 layer launches a step, 12.000 ms of the host's .*launch-bound" "$tmp/out" ||
    fail "--device-launch 1ms: no launch-bound line: $(cat "$tmp/out")"
awk '$1 == 1 { exit !($2 > 11.999 && $2 < 12.001) }' "$tmp/out" ||
    fail "--device-launch 1ms: the N = 1 step is not 12 ms: $(cat "$tmp/out")"
"$DTCTL" plan "$job" --hosts 1 --network 10Gbit --profile "$tmp/none.ini" \
    --data-wait 0 --device-flops 1T --device-bandwidth 1e15B/s >"$tmp/out0" 2>&1 ||
    fail "the roofline alone: $(cat "$tmp/out0")"
"$DTCTL" plan "$job" --hosts 1 --network 10Gbit --profile "$tmp/none.ini" \
    --data-wait 0 --device-flops 1T --device-bandwidth 1e15B/s --device-launch 1ns \
    >"$tmp/out" 2>&1 || fail "--device-launch 1ns: $(cat "$tmp/out")"
grep -q "the GPU sets the pace" "$tmp/out" || fail "--device-launch 1ns: $(cat "$tmp/out")"
[ "$(awk '$1 == 1 { print $2 }' "$tmp/out")" = "$(awk '$1 == 1 { print $2 }' "$tmp/out0")" ] ||
    fail "--device-launch 1ns changed a GPU-bound step"
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --device-launch 20us \
    >/dev/null 2>"$tmp/err" && fail "--device-launch without --device-flops accepted"
grep -q "device-launch goes with --device-flops" "$tmp/err" || fail "--device-launch alone: $(cat "$tmp/err")"
echo "--device-launch: launch-bound steps take the host's time, GPU-bound ones the GPU's"

# --colocation FILE: each N's compute times E[slowest of N steps with
# min(N, G) workers per host] over the fastest step alone. k 1 all 1 ms
# (factor 1 at N = 1); k 2 sorted 1, 2, 2, 3 ms: E[max of 2] =
# 1(1/16) + 2(4/16 - 1/16) + 2(9/16 - 4/16) + 3(1 - 9/16) = 2.375 ms, so
# the 30 ms of compute (forward 10, one layer 20) becomes 71.25 ms at N = 2.
printf 'batch 64\nforward 0.01\noptimizer 0\n0.02 4000\n' >"$tmp/c.layers"
printf '# test\nbatch 64\nk 1 0.001 0.001 0.001 0.001\nk 2 0.003 0.001 0.002 0.002\n' >"$tmp/c.coloc"
"$DTCTL" plan --layer-times "$tmp/c.layers" --hosts 1 --gpus-per-host 2 --network 10Gbit \
    --profile "$tmp/none.ini" --colocation "$tmp/c.coloc" >"$tmp/out" 2>&1 ||
    fail "--colocation FILE: $(cat "$tmp/out")"
grep -q "N=1 x1.000 (k 1) N=2 x2.375 (k 2)" "$tmp/out" || fail "--colocation factors"
awk '$1 == 1 { one = $2 } $1 == 2 { c = $2 - $6 }
     END { exit !(one > 29.99 && one < 30.01 && c > 71.2 && c < 71.3) }' "$tmp/out" ||
    fail "--colocation: N = 1 not 30 ms or N = 2's compute not 71.25 ms"
# a file without the k the plan needs, a bad line, and the option misused
"$DTCTL" plan --layer-times "$tmp/c.layers" --hosts 1 --gpus-per-host 4 --network 10Gbit \
    --profile "$tmp/none.ini" --colocation "$tmp/c.coloc" >"$tmp/out" 2>&1 &&
    fail "--colocation without k 4 accepted"
grep -q "has no step times for 4 co-located copies (k 4)" "$tmp/out" || fail "--colocation: missing k not named"
printf 'k 1 0.001\nk 2 0.001 fast\n' >"$tmp/bad.coloc"
"$DTCTL" plan --layer-times "$tmp/c.layers" --hosts 1 --gpus-per-host 2 --network 10Gbit \
    --colocation "$tmp/bad.coloc" >"$tmp/out" 2>&1 && fail "--colocation bad file accepted"
grep -q "bad.coloc:2: k 2: positive step seconds expected" "$tmp/out" || fail "--colocation: bad line not named"
"$DTCTL" plan "$job" --hosts 1 --network 10Gbit --save-colocation "$tmp/x" \
    >"$tmp/out" 2>&1 && fail "--save-colocation alone accepted"
grep -q "save-colocation FILE writes what --colocation measure measured" "$tmp/out" || fail "--save-colocation alone: $(cat "$tmp/out")"
"$DTCTL" plan "$job" --samples-per-sec 100 --hosts 2 --network 10Gbit \
    --colocation "$tmp/c.coloc" >"$tmp/out" 2>&1 && fail "--colocation with --samples-per-sec accepted"
grep -q "colocation is how co-located CPU workers slow each other" "$tmp/out" || fail "--colocation with --samples-per-sec: $(cat "$tmp/out")"
"$DTCTL" plan --layer-times "$tmp/c.layers" --hosts 1 --gpus-per-host 2 --network 10Gbit \
    --batch 128 --colocation "$tmp/c.coloc" >"$tmp/out" 2>&1 && fail "--colocation at another batch accepted"
grep -q "c.coloc was measured at a per-worker batch of 64, the plan is for 128" "$tmp/out" || fail "--colocation batch: $(cat "$tmp/out")"
printf 'k 1 0.001\nk 1 0.002\n' >"$tmp/bad.coloc"
"$DTCTL" plan --layer-times "$tmp/c.layers" --hosts 1 --network 10Gbit \
    --colocation "$tmp/bad.coloc" >"$tmp/out" 2>&1 && fail "--colocation with k 1 twice accepted"
grep -q "bad.coloc:2: expected 'k K SECONDS...'" "$tmp/out" || fail "--colocation k twice: $(cat "$tmp/out")"
# --colocation measure: the MLP as 1 and 2 copies at once here, saved
# (k 1 and k 2, every sample positive) and planned from the file alike
"$DTCTL" plan "$job" --hosts 1 --gpus-per-host 2 --network 10Gbit --profile "$tmp/none.ini" \
    --colocation measure --save-colocation "$tmp/m.coloc" >"$tmp/out" 2>&1 ||
    fail "--colocation measure: $(cat "$tmp/out")"
awk '$1 == "k" { k[$2] = NF - 2; for (i = 3; i <= NF; i++) if (!($i > 0)) bad = 1 }
     END { exit !(k[1] >= 8 && k[2] == 2 * k[1] && !bad) }' "$tmp/m.coloc" ||
    fail "--colocation measure: not k 1 and k 2 samples: $(cut -c1-200 "$tmp/m.coloc")"
f1=$(sed -n 's/.*N=1 x\([0-9.]*\) (k 1).*/\1/p' "$tmp/out")
awk -v f="$f1" 'BEGIN { exit !(f >= 1 && f < 50) }' || fail "--colocation measure: factor at N = 1 is $f1"
"$DTCTL" plan "$job" --hosts 1 --gpus-per-host 2 --network 10Gbit --profile "$tmp/none.ini" \
    --colocation "$tmp/m.coloc" >"$tmp/out2" 2>&1 || fail "--colocation FILE from measure: $(cat "$tmp/out2")"
grep -q "N=1 x$f1 (k 1)" "$tmp/out2" || fail "--colocation: the saved file plans differently"
# without a cluster to plan, --save-colocation measures and stops: no
# simulator needed (the GPU check's device machine has none)
DT_LIBEXECDIR="$tmp" "$DTCTL" plan "$job" --gpus-per-host 2 --colocation measure \
    --save-colocation "$tmp/m2.coloc" >"$tmp/out" 2>&1 ||
    fail "--save-colocation alone needed the simulator: $(cat "$tmp/out")"
grep -q "plan with --colocation" "$tmp/out" || fail "--save-colocation alone: no word on the file"
awk '$1 == "k" { k[$2] = 1 } END { exit !(k[1] && k[2]) }' "$tmp/m2.coloc" ||
    fail "--save-colocation alone: not k 1 and k 2"
echo "--colocation: factors from the samples (2.375 at N = 2), measured and saved, bad input refused"

# The data wait: a job's input pipeline is timed here (its loaders, one
# worker) and no step is shorter than a batch's loading. With the compute
# made negligible (--device-flops 1e30) the MLP's step at N = 1 is the
# loaders' time a batch, as printed; the simulator's `load` alone: a
# 10 ms load makes a 10.000 ms step at N = 1 and says data-bound.
ms_of() { sed -n 's/^# input: .*, \([0-9.]*\) ms a batch of 64 .*/\1/p' "$1"; }
step_of() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    --device-flops 1e30 --spec "$tmp/in.spec" >"$tmp/out" 2>&1 || fail "plan with its input timed"
load=$(ms_of "$tmp/out")
[ -n "$load" ] || fail "no '# input: 1 loader thread, X ms a batch of 64' line"
s1=$(step_of "$tmp/out" 1)
awk -v l="$load" -v s="$s1" 'BEGIN { exit !(l > 0 && s >= l && s <= l + 0.002) }' ||
    fail "the step at N = 1 ($s1 ms) is not the loaders' $load ms"
grep -Eq "^# data-bound at N = 1(\\.\\.2)?: the loaders need $load ms a batch" "$tmp/out" || fail "no data-bound line"
sed 's/^load = .*/load = 0.01/' "$tmp/in.spec" >"$tmp/in10.spec"
"$sim" "$tmp/in10.spec" >"$tmp/out" 2>&1 || fail "dt-plan-sim with load"
[ "$(step_of "$tmp/out" 1)" = 10.000 ] || fail "load 10 ms: the step at N = 1 is not 10.000 ms"
grep -q "^# data-bound at N = 1\\.\\.2: the loaders need 10.000 ms a batch" "$tmp/out" || fail "load 10 ms: no data-bound line"
# loader_threads = 0: the step gathers its batch itself and every step
# pays it (the fixed data_wait, not data-bound)
sed 's/^\[data\]$/[data]\nloader_threads = 0/' "$job" >"$tmp/sync.ini"
"$DTCTL" plan "$tmp/sync.ini" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    --device-flops 1e30 --spec "$tmp/sync.spec" >"$tmp/out" 2>&1 || fail "plan with loader_threads = 0"
gather=$(sed -n 's/^# input: loader_threads = 0, the step gathers its batch of 64 itself: \([0-9.]*\) ms added to every step.*/\1/p' "$tmp/out")
[ -n "$gather" ] || fail "loader_threads = 0: no line on the gather"
grep -q '^load = 0$' "$tmp/sync.spec" && ! grep -q '^data_wait = 0$' "$tmp/sync.spec" ||
    fail "loader_threads = 0: the gather is not the spec's data_wait: $(grep -E '^(load|data_wait)' "$tmp/sync.spec")"
# --data-wait T replaces the measurement; data that is not here: a
# warning naming the job, and the plan goes on
"$DTCTL" plan "$job" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" --data-wait 1ms \
    >"$tmp/out" 2>&1 || fail "--data-wait 1ms"
grep -q "^# input:" "$tmp/out" && fail "--data-wait given: the input was timed anyway"
sed 's|^\[data\]$|[data]\npath = '"$tmp"'/no-data|' "$job" >"$tmp/nodata.ini"
"$DTCTL" plan "$tmp/nodata.ini" --hosts 2 --network 10Gbit --profile "$tmp/none.ini" \
    >"$tmp/out" 2>&1 || fail "a job whose data is not here: no plan"
grep -q "nodata.ini: its input pipeline could not be timed here" "$tmp/out" || fail "no data here: no warning"
[ -n "$(step_of "$tmp/out" 2)" ] || fail "no data here: no table"
echo "data wait: the loaders' $load ms a batch bounds the step, loader_threads = 0 adds $gather ms, --data-wait and missing data handled"

echo "ok"
