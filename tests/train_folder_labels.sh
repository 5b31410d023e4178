#!/bin/sh
# train_folder_labels.sh — an image folder's job says which label is which
# class folder. Labels are train/'s folders in byte order, so "Zebra"
# (upper case) is label 0 before "apple", and a folder name with a space
# or non-ASCII letters is a class like any other; a class test/ lacks
# keeps its label but is never evaluated. Both are said once by rank 0,
# before the first step, so a prediction can be read back to its folder
# without guessing the sort. A folder inside a class folder is not read
# (torchvision's ImageFolder would read it): a warning names it.
# Images are written by tests/make_images (libpng + libjpeg).
gen="$top_builddir/tests/make_images"
if [ ! -x "$gen" ]; then
    echo "SKIP: tests/make_images not built (needs libpng-dev and libjpeg62-turbo-dev)"
    exit 77
fi
tmp=$(mktemp -d /tmp/dt-folder-labels-test.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
fail() { echo "FAIL: $*"; exit 1; }

# 3 classes x 8 training, 4 test images, read at 8x8: a job of seconds.
"$gen" folder img 3 8 4 16 png 5 || fail "make_images folder"
for split in train test; do
    mv "img/$split/c00" "img/$split/red car" &&
        mv "img/$split/c01" "img/$split/Zebra" &&
        mv "img/$split/c02" "img/$split/$(printf 'caf\303\251')" || exit 99
done
rm -rf img/test/Zebra || exit 99
mkdir "img/train/red car/more" &&
    cp "img/train/red car/"* "img/train/red car/more/" 2>/dev/null
[ -n "$(ls "img/train/red car/more")" ] || exit 99
cat >job.ini <<'INI'
[train]
seed = 1
epochs = 1
batch_size = 4
lr = 0.05
optimizer = sgd
device = cpu
threads = 1
[model]
layers = flatten linear(3)
[data]
dataset = folder
path = img
image_size = 8
channels = 3
INI
timeout 60 "$DTCTL" run -n 2 job.ini >out 2>&1
rc=$?
[ $rc -eq 0 ] || { cat out; fail "the job failed (exit $rc)"; }
cafe=$(printf 'caf\303\251')
grep -q "data: labels are train/'s class folders in byte order: 0 'Zebra', 1 'caf.*', 2 'red car'" out ||
    { cat out; fail "the labels' class folders were not said in byte order"; }
grep -q "1 '$cafe'" out || { cat out; fail "the non-ASCII folder name was not said as it is"; }
grep -q "no test samples of 1 of them (not evaluated): 0 'Zebra'$" out ||
    { cat out; fail "the class test/ lacks was not said"; }
[ "$(grep -c "labels are train/'s class folders" out)" -eq 1 ] ||
    { cat out; fail "the mapping was not said exactly once"; }
grep -q "warning: img/train/red car/more: a folder inside a class folder: its images are not read" out ||
    { cat out; fail "the folder inside a class folder was not named"; }
grep -q "data: 24 training and 8 test samples" out ||
    { cat out; fail "the images in the class's subfolder were counted"; }

# A test class that train/ lacks is refused (exit 65) with what to do.
mkdir img/test/extra && cp "img/test/red car/"* img/test/extra/ || exit 99
timeout 60 "$DTCTL" run -n 2 job.ini >out 2>&1
rc=$?
[ $rc -eq 65 ] || { cat out; fail "a test class train/ lacks: exit $rc, not 65"; }
grep -q "img/test/extra: a class that img/train does not have: .*; add img/train/extra, or move img/test/extra out of the test set" out ||
    { cat out; fail "a test class train/ lacks: the remedy is not said"; }
echo "PASS: the class-to-label mapping and the class test/ lacks are said once"
