#!/bin/sh
# train_data_errors.sh — a data set every attempt would find wrong is not
# restarted; one that is missing (storage not mounted yet) is.
#   - found but wrong: an image folder without test/, with an empty class
#     folder, with an image that does not decode; an IDX file (Fashion-
#     MNIST's format) with a bad magic or cut short; a damaged .gz: with
#     --max-restarts 2, dt-train exits 65 and dtctl says it does not
#     restart (each was exit 1, restarted twice with backoff, failing the
#     same way each time);
#   - the same image with decode = loader, met by a loader thread while
#     training and by the evaluation's gather: exit 65, not restarted (it
#     was exit 1: the pipeline's status was taken for any failure);
#   - an empty data folder (a mount point before its storage is mounted;
#     lost+found and hidden entries aside), an empty train/ or test/, a
#     test/ that links to a target not there: exit 1, restarted, and the
#     worker says that it will be (once a host), or, without restarts
#     left or dtctl, what to do.
#   - with decode = loader, an image gone since the folder was listed (a
#     broken link): exit 1, restarted.
# Images are written by tests/make_images (libpng + libjpeg).
gen="$top_builddir/tests/make_images"
if [ ! -x "$gen" ]; then
    echo "SKIP: tests/make_images not built (needs libpng-dev and libjpeg62-turbo-dev)"
    exit 77
fi
tmp=$(mktemp -d /tmp/dt-data-errors-test.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
cd "$tmp" || exit 99
fail() { echo "FAIL: $*"; exit 1; }

cat >job.ini <<'INI'
[train]
epochs = 1
batch_size = 4
device = cpu
threads = 1
[model]
layers = flatten linear(2)
[data]
dataset = folder
path = img
image_size = 8
[cluster]
restart_backoff = 0.1s
INI
run() { timeout 120 "$DTCTL" run -n 1 --max-restarts 2 "$@" job.ini >out 2>&1; }

# not_restarted WHAT PATTERN DTCTL-ARGS...: exit 65, the worker's error,
# dtctl's word, and no restart.
not_restarted() {
    what=$1 want=$2
    shift 2
    run "$@"
    rc=$?
    [ $rc -eq 65 ] || { cat out; fail "$what: exited $rc, not 65"; }
    grep -q -- "$want" out || { cat out; fail "$what: no '$want'"; }
    grep -q "error: not restarting: .*a data set in a wrong format or layout" out ||
        { cat out; fail "$what: dtctl does not say it is not restarting"; }
    n=$(grep -c "restart [0-9]* of 2:" out)
    [ "$n" -eq 0 ] || { cat out; fail "$what: restarted $n times"; }
}

# A fresh 2-class folder of 8x8 images, 4 training and 2 test per class.
fresh() {
    rm -rf img
    "$gen" folder img 2 4 2 8 png 1 >/dev/null || fail "make_images folder"
}

fresh
rm -r img/test
not_restarted "no test/" "path img: no test/ folder there"

fresh
rm img/train/c01/*
not_restarted "an empty class" "img/train/c01: empty class folder"

fresh
printf 'not a png at all' >img/train/c01/00000.png
not_restarted "an image that does not decode" "img/train/c01/00000.png"

# decode = loader: decoded when a batch needs it, in the loader thread
# (training) or the training thread (evaluation).
fresh
printf 'not a png at all' >img/train/c01/00000.png
not_restarted "an image that does not decode (loader)" \
    "img/train/c01/00000.png: not a PNG or JPEG image" \
    --set data.decode=loader --set data.loader_threads=1
fresh
printf 'not a png at all' >img/test/c01/00000.png
not_restarted "a test image that does not decode (loader)" \
    "img/test/c01/00000.png: not a PNG or JPEG image" \
    --set data.decode=loader --set train.log_every=1
grep -q "step 2/2" out || { cat out; fail "the test image was met before the evaluation"; }

# IDX: the Fashion-MNIST format. The labels are fine; the images are not.
mkdir idx
printf '\000\000\010\001\000\000\000\004\000\001\002\003' >idx/train-labels-idx1-ubyte
cp idx/train-labels-idx1-ubyte idx/t10k-labels-idx1-ubyte
printf 'GIF89a, not IDX at all' >idx/train-images-idx3-ubyte
cp idx/train-images-idx3-ubyte idx/t10k-images-idx3-ubyte
# idx_case WHAT PATTERN: not_restarted on the IDX files (10 classes)
idx_case() {
    not_restarted "$1" "$2" --set data.dataset=fashion-mnist \
        --set data.path=idx --set "model.layers=flatten linear(10)"
}
idx_case "an IDX bad magic" "idx/train-images-idx3-ubyte: not an IDX file"
# 4 images of 28x28 announced, 100 bytes there
{ printf '\000\000\010\003\000\000\000\004\000\000\000\034\000\000\000\034'
  head -c 100 /dev/zero; } >idx/train-images-idx3-ubyte
idx_case "a truncated IDX file" "idx/train-images-idx3-ubyte: truncated"
if [ "${DT_HAVE_ZLIB:-yes}" = yes ] && command -v gzip >/dev/null; then
    # 1000 images of 28x28 announced, the .gz cut in the middle of them.
    { printf '\000\000\010\003\000\000\003\350\000\000\000\034\000\000\000\034'
      head -c 784000 /dev/urandom; } | gzip -c >full.gz
    head -c 5000 full.gz >idx/train-images-idx3-ubyte.gz
    rm idx/train-images-idx3-ubyte
    idx_case "a damaged .gz" "idx/train-images-idx3-ubyte.gz: cannot read"
fi

# ---- missing: may be storage not mounted yet, so restarted ----------------
# retried WHAT PATTERN DTCTL-ARGS...: exit 1, the worker's error, its word
# that dtctl restarts it (once, not per rank), and 2 restarts.
retried() {
    what=$1 want=$2
    shift 2
    run "$@"
    rc=$?
    [ $rc -eq 1 ] || { cat out; fail "$what: exited $rc, not 1"; }
    grep -q -- "$want" out || { cat out; fail "$what: no '$want'"; }
    grep -q "error: the data set is missing or could not be read (above): a failure that may pass .*, so dtctl run --max-restarts .* restarts the job for it (2 of 2 restarts left)" out ||
        { cat out; fail "$what: the worker does not say a missing data set is retried"; }
    grep -q "the job's 2 restarts (\[cluster\] max_restarts) are used up: run it again once the data is there" out ||
        { cat out; fail "$what: the last attempt does not say the restarts are used up"; }
    n=$(grep -c "restart [0-9]* of 2:" out)
    [ "$n" -eq 2 ] || { cat out; fail "$what: restarted $n times, not 2"; }
    grep -q "not restarting" out && { cat out; fail "$what: not restarted"; }
    return 0
}
# An empty folder, as a mount point before its storage is mounted; a
# fresh volume's lost+found (and hidden entries) do not make it data.
mkdir -p mnt/lost+found mnt/.snapshot
retried "an empty data folder" "path mnt: no train/ folder there" --set data.path=mnt
# train/ or test/ a mount point of its own, not mounted yet (was: "no
# class folders", exit 65)
fresh
rm -r img/train/*
retried "an empty train/" "img/train: an empty folder, no class folders (may pass"
fresh
rm -r img/test/*
retried "an empty test/" "img/test: an empty folder, no class folders (may pass"
# test/ a link to storage not mounted yet (was: "no test/ folder there",
# exit 65)
fresh
rm -r img/test
ln -s "$tmp/nfs/test" img/test
retried "test/ a link to a target not there" \
    "path img/test: a symbolic link to $tmp/nfs/test that cannot be followed: No such file or directory"
grep -q "no test/ folder there" out && { cat out; fail "test/ a link: said to be no folder"; }

# Whether a restart comes is said as it is: no restarts asked for, and
# dt-train on its own; once for a host's 2 ranks, not per rank.
timeout 120 "$DTCTL" run -n 2 --set data.path=mnt job.ini >out 2>&1
rc=$?
[ $rc -eq 1 ] || { cat out; fail "no restarts: exited $rc, not 1"; }
grep -q "a failure that may pass (storage not mounted yet, an I/O error): run the job again once the data is there, or with dtctl run --max-restarts N" out ||
    { cat out; fail "no restarts: the worker does not say what to do"; }
grep -q "restarts the job for it" out && { cat out; fail "no restarts: the worker promises one"; }
n=$(grep -c "the data set is missing or could not be read" out)
[ "$n" -eq 1 ] || { cat out; fail "2 ranks of a host said it $n times, not once"; }
DT_DATA_PATH=mnt timeout 120 "$top_builddir/core/dt-train" job.ini >out 2>&1
rc=$?
[ $rc -eq 1 ] || { cat out; fail "dt-train alone: exited $rc, not 1"; }
grep -q "path mnt: no train/ folder there" out || { cat out; fail "dt-train alone: not the empty folder"; }
grep -q "a failure that may pass (storage not mounted yet, an I/O error): run the job again once the data is there (dtctl run --max-restarts N restarts" out ||
    { cat out; fail "dt-train alone: the worker does not say what to do"; }

# decode = loader, an image listed at start and gone when its batch comes.
fresh
rm img/train/c01/00000.png
ln -s "$tmp/gone.png" img/train/c01/00000.png
run --set data.decode=loader
rc=$?
[ $rc -eq 1 ] || { cat out; fail "a vanished image (loader) exited $rc, not 1"; }
grep -q "img/train/c01/00000.png" out || { cat out; fail "the vanished image is not named"; }
grep -q "img/train/c01/00000.png: cannot open: a symbolic link to $tmp/gone.png, which does not exist (its storage not mounted?)" out ||
    { cat out; fail "the image's dangling link is not named with its target"; }
grep -q "a failure that may pass (storage not mounted yet, an I/O error), so dtctl run --max-restarts (\[cluster\] max_restarts) restarts the job for it (2 of 2 restarts left)" out ||
    { cat out; fail "a vanished image (loader): the rank that met it does not say a restart comes"; }
n=$(grep -c "restart [0-9]* of 2:" out)
[ "$n" -eq 2 ] || { cat out; fail "a vanished image (loader) was restarted $n times, not 2"; }
exit 0
