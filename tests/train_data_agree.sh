#!/bin/sh
# train_data_agree.sh — every worker must train on the same data set. Two
# "hosts" that are both this machine (localhost and 127.0.0.1) give each
# rank its own copy of a generated image folder through [data] path's
# {host}, as a per-host staged copy would:
#   - identical copies: the job trains;
#   - one image fewer on 127.0.0.1: the job fails before its first step
#     (no hang, no training), rank 1 naming its host, path and counts
#     against rank 0's; in sync mode and in async mode (2 workers and a
#     parameter server: the workers compare through the job's store);
#   - as many images, but one in another class: the counts agree, the
#     labels' digest does not, and the job fails the same way (not
#     silently misaligned labels);
#   - a bad image_size or channels, random_crop not below image_size, and
#     bad_images = skip with decode = loader: refused by dtctl before any
#     worker starts, once, with the file:line or --set.
# Images are written by tests/make_images (libpng + libjpeg).
gen="$top_builddir/tests/make_images"
if [ ! -x "$gen" ]; then
    echo "SKIP: tests/make_images not built (needs libpng-dev and libjpeg62-turbo-dev)"
    exit 77
fi
tmp=$(mktemp -d /tmp/dt-data-agree-test.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
fail() { echo "FAIL: $*"; exit 1; }

# 3 classes x 20 training, 6 test images, read at 8x8: a job of seconds.
"$gen" folder img 3 20 6 16 png 7 || fail "make_images folder"
cat >job.ini <<'INI'
[train]
seed = 1
epochs = 2
batch_size = 4
lr = 0.05
optimizer = sgd
device = cpu
threads = 1
[model]
layers = flatten linear(3)
[data]
dataset = folder
image_size = 8
channels = 3
mean = 0.5
std = 0.25
INI
printf 'localhost slots=1\n127.0.0.1 slots=1\n' >hosts
# async: rank 1 (worker 1) and rank 2 (the server) on 127.0.0.1
printf 'localhost slots=1\n127.0.0.1 slots=2\n' >hosts3
# copies: rank 0's (localhost) and rank 1's (127.0.0.1), from img
copies() {
    rm -rf d && mkdir d && cp -r img d/localhost && cp -r img d/127.0.0.1 ||
        exit 99
}
# run HOSTFILE ARGS...: the job, each rank reading d/<its host>
run() {
    h=$1
    shift
    timeout 60 "$DTCTL" run -n 2 --no-stage --hostfile "$h" \
        --set "data.path=$tmp/d/{host}" "$@" job.ini >out 2>&1
}
# refused WHAT ARGS...: fails within the timeout, before any step, and
# rank 1 names its host and path
refused() {
    what=$1
    shift
    run "$@"
    rc=$?
    [ $rc -eq 0 ] && { cat out; fail "$what: the job trained"; }
    [ $rc -eq 124 ] && { cat out; fail "$what: the job hung"; }
    grep -q "epoch 1/2" out && { cat out; fail "$what: a step was taken"; }
    grep -q "rank 1 (host 127.0.0.1) loaded .* from $tmp/d/127.0.0.1, .*every worker must see the same data set" out ||
        { cat out; fail "$what: rank 1 did not name its host and path"; }
}

# ---- the folder's keys: said once by dtctl, with their origin, before any
# worker starts (the workers check them too) ---------------------------------
sed 's/^channels = 3$/&\nbad_images = skip/' job.ini >skip.ini
skip_line=$(grep -n '^bad_images' skip.ini | cut -d: -f1)
for kv in "job.ini|data.image_size=0x5|--set: .data. image_size = '0x5': give N (N x N pixels) or HxW" \
          "job.ini|data.channels=2|--set: .data. channels = 2: use 1 (grayscale) or 3 (RGB)" \
          "job.ini|data.random_crop=8|--set: .data. random_crop = 8: the padding must be below the image's side (8x8" \
          "skip.ini|data.decode=loader|skip.ini:$skip_line: .data. bad_images = skip needs decode = load (--set: decode = loader)"; do
    file=${kv%%|*}
    rest=${kv#*|}
    kset=${rest%%|*}
    want=${rest#*|}
    timeout 60 "$DTCTL" run -n 2 --set "data.path=$tmp/img" --set "$kset" \
        "$file" >out 2>&1
    [ $? -eq 2 ] || { cat out; fail "$kset: not refused (exit 2)"; }
    [ "$(grep -c -- "$want" out)" -eq 1 ] ||
        { cat out; fail "$kset: not said once: '$want'"; }
    grep -q "^\[" out && { cat out; fail "$kset: workers were started"; }
done

# ---- identical copies train -------------------------------------------------
copies
run hosts || { cat out; fail "identical copies did not train"; }
grep -q "final test accuracy: .* (16 steps, 2 workers)" out ||
    { cat out; fail "identical copies: not 16 steps"; }

# ---- one image fewer on one host: sync, then async --------------------------
rm d/127.0.0.1/train/c01/00003.png || exit 99
refused "one file fewer (sync)" hosts
grep -q "loaded 59 training and 18 test samples (3x8x8, 3 classes) from .*, rank 0 60 training and 18 test samples" out ||
    { cat out; fail "one file fewer: the counts are not named"; }
grep -q "1 of 2 workers loaded a data set other than rank 0's (host localhost: 60 training" out ||
    { cat out; fail "one file fewer: rank 0 did not fail with the job"; }
refused "one file fewer (async)" hosts3 --set train.mode=async \
    --set cluster.servers=1

# ---- as many images, one in another class: the digest tells ----------------
copies
mv d/127.0.0.1/train/c01/00003.png d/127.0.0.1/train/c02/00099.png ||
    exit 99
refused "a file in another class" hosts
grep -q "loaded 60 training and 18 test samples .*, as many as rank 0 but other labels, class or file names (digest [0-9a-f]*, rank 0's [0-9a-f]*)" out ||
    { cat out; fail "a file in another class: no digest message"; }
echo "PASS"
