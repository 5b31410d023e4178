#!/bin/sh
# Every fuzz target (tests/fuzz/) replays its corpus: the seeds and every
# input a fuzzing run kept (crashes found and fixed stay as regressions).
# A crash, a sanitizer report (in the ASan/UBSan build) or a hang fails.
set -u
corpus="$top_srcdir/tests/fuzz/corpus"
status=0
for t in fuzz_config fuzz_idx fuzz_cifar fuzz_ckpt fuzz_store fuzz_auth fuzz_image fuzz_model; do
    bin="$top_builddir/tests/$t"
    [ -x "$bin" ] || { echo "FAIL: $t is not built"; status=1; continue; }
    [ -d "$corpus/${t#fuzz_}" ] || { echo "FAIL: no corpus $corpus/${t#fuzz_}"; status=1; continue; }
    if out=$(timeout 300 "$bin" "$corpus/${t#fuzz_}" 2>"$t.replay.err"); then
        echo "ok: $t: $out"
    else
        echo "FAIL: $t exited $? on its corpus:"; tail -n 30 "$t.replay.err"; status=1
    fi
    rm -f "$t.replay.err"
done
exit $status
