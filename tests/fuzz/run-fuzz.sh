#!/bin/sh
# run-fuzz.sh — build dt's fuzz targets with clang's libFuzzer (ASan and
# UBSan on, libdt instrumented for coverage) and run each for a while.
#
#   tests/fuzz/run-fuzz.sh [-t SECONDS] [--save] [TARGET...]
#
# SECONDS per target (default 60); targets: config idx cifar ckpt store image
# auth model (default all). Each starts from a copy of
# tests/fuzz/corpus/TARGET; --save copies the new inputs that grew
# coverage back there (what make check then replays). A crash leaves its
# input as crash-* in the work directory the script names, and the script
# exits non-zero. A TARGET.dict beside this script is the target's
# libFuzzer dictionary (the words of its input). Needs clang (Debian:
# apt-get install clang). The instrumented build goes to _build-fuzz
# beside the source.
set -eu
secs=60 save=0 targets=
while [ $# -gt 0 ]; do
    case $1 in
    -t) secs=$2; shift 2 ;;
    --save) save=1; shift ;;
    -*) echo "usage: $0 [-t SECONDS] [--save] [TARGET...]" >&2; exit 2 ;;
    *) targets="$targets $1"; shift ;;
    esac
done
[ -n "$targets" ] || targets="config idx cifar ckpt store auth image model"
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
command -v clang >/dev/null || { echo "run-fuzz: clang is missing (apt-get install clang)" >&2; exit 1; }
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
b=$top/_build-fuzz
mkdir -p "$b"
[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
if [ ! -f "$b/Makefile" ]; then
    (cd "$b" && "$top/configure" -q CC=clang \
        CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $san" \
        LDFLAGS="$san" --enable-static)
fi
# Warnings are the gcc build's business; clang's own set is not kept clean.
make -C "$b/core" -s -j"$(nproc)" WARN_CFLAGS=-w libdt_private.la >/dev/null
lib=$(ls "$b"/core/.libs/libdt_private.a 2>/dev/null || true)
[ -n "$lib" ] || { echo "run-fuzz: no static libdt_private in $b/core" >&2; exit 1; }
libs="$(sed -n 's/^LIBS = //p' "$b/core/Makefile") $(sed -n 's/^LTDL_LIBS = //p;s/^INIH_LIBS = //p;s/^CRYPTO_LIBS = //p;s/^ZLIB_LIBS = //p;s/^PNG_LIBS = //p;s/^JPEG_LIBS = //p' "$b/core/Makefile" | tr '\n' ' ') -lm -ldl -lpthread"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-fuzz.XXXXXX")
echo "run-fuzz: work directory $work"
status=0
for t in $targets; do
    extra=
    [ "$t" = store ] && extra="$top/core/rendezvous/store_proto.c $top/core/rendezvous/store_version.c"
    clang -g -O1 -fsanitize=fuzzer $san -I"$top/include" -I"$top/core" -I"$b" \
        "$here/fuzz_$t.c" "$here/fuzz_scratch.c" $extra "$lib" $libs \
        -o "$work/fuzz_$t"
    mkdir -p "$work/corpus_$t"
    cp "$here/corpus/$t"/* "$work/corpus_$t/"
    before=$(ls "$work/corpus_$t" | wc -l)
    dict=
    [ -f "$here/$t.dict" ] && dict="-dict=$here/$t.dict"
    echo "== $t: $secs s"
    if (cd "$work" && "./fuzz_$t" -max_total_time="$secs" -close_fd_mask=2 \
            -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 $dict \
            "corpus_$t" 2>&1 | grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY|crash-|Done [0-9]+ runs'); then :; fi
    if ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* >/dev/null 2>&1; then
        echo "run-fuzz: $t found a problem: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null)"
        status=1
    fi
    after=$(ls "$work/corpus_$t" | wc -l)
    echo "   corpus $before -> $after inputs"
    [ $save -eq 1 ] && cp -n "$work/corpus_$t"/* "$here/corpus/$t/" 2>/dev/null || true
done
exit $status
