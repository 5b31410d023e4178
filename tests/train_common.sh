# train_common.sh — the start the Fashion-MNIST training tests share,
# sourced after setting `name` (. "$top_srcdir/tests/train_common.sh"):
# SKIP (exit 77) without the data set; a private work directory
# /tmp/dt-$name-test.XXXXXX, removed at exit, as the current directory;
# $data, $compare (tests/ckpt_compare: two checkpoints' parameters bit for
# bit), differ() (they differ, both read) and fail() for the test.
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: $data missing (apt-get install dataset-fashion-mnist)"
    exit 77
fi
if [ "${DT_HAVE_ZLIB:-yes}" != yes ]; then
    echo "SKIP: dt was built without zlib and $data holds .gz files" \
        "(apt-get install zlib1g-dev, then configure again)"
    exit 77
fi
tmp=$(mktemp -d "/tmp/dt-$name-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
cd "$tmp" || exit 99
# shellcheck disable=SC2034 # used by the sourcing test
compare="$top_builddir/tests/ckpt_compare"
fail() { echo "FAIL: $*"; exit 1; }
# The checkpoints differ: ckpt_compare's exit 1, not its 2 (a file missing
# or unreadable must not pass for "they differ").
differ() {
    "$compare" "$@" >/dev/null 2>&1
    differ_rc=$?
    [ $differ_rc -eq 2 ] && fail "ckpt_compare $*: could not read the checkpoints"
    [ $differ_rc -eq 1 ]
}
