#!/bin/sh
# run_metrics_full.sh — `dtctl run --metrics` on a full disk: dtctl's
# restart and end records that cannot be written are said (not lost in
# silence), and one written in part is taken back, so that it does not
# tear the next line (readers of JSON lines fail on both). /dev/full
# stands in for the full disk; as root, a full tmpfs shows the torn line.
set -u
: "${DTCTL:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-metrics-full.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }
# One rank that fails once, then succeeds: a restart record and an end.
run_once_failing() {
    timeout 60 "$DTCTL" run -n 1 --max-restarts 1 \
        --set cluster.restart_backoff=10ms --metrics "$1" -- \
        sh -c '[ "$DT_RESTART_COUNT" -ge 1 ] || exit 3' >"$tmp/out" 2>&1
}

if [ -c /dev/full ] && [ -w /dev/full ]; then
    run_once_failing /dev/full || fail "the job failed for its metrics file (exit $?)"
    for event in restart end; do
        grep -q "/dev/full: cannot record the $event in the metrics file: No space left on device" \
            "$tmp/out" || fail "the lost $event record is not said"
    done
else
    echo "no writable /dev/full: that part skipped"
fi

# A metrics file with room for the short end record but not the restart
# record: the restart record is taken back whole, every line is JSON.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1 &&
    unshare -m true 2>/dev/null; then
    mkdir "$tmp/small"
    DTCTL=$DTCTL tmp=$tmp unshare -m sh -c '
        mount -t tmpfs -o size=4k tmpfs "$tmp/small" || exit 77
        pad=$(head -c 3960 /dev/zero | tr "\0" x)
        printf "{\"epoch\":1,\"pad\":\"%s\"}\n" "$pad" >"$tmp/small/m.jsonl"
        timeout 60 "$DTCTL" run -n 1 --max-restarts 1 \
            --set cluster.restart_backoff=10ms --metrics "$tmp/small/m.jsonl" -- \
            sh -c "[ \"\$DT_RESTART_COUNT\" -ge 1 ] || exit 3" >"$tmp/out" 2>&1 || exit 1
        cp "$tmp/small/m.jsonl" "$tmp/m.jsonl"'
    rc=$?
    if [ $rc -ne 77 ]; then
        [ $rc -eq 0 ] || fail "the job on a full tmpfs: exit $rc"
        grep -q "cannot record the restart in the metrics file: No space left on device" "$tmp/out" ||
            fail "full tmpfs: the lost restart record is not said"
        grep -q '[^}]{"event"' "$tmp/m.jsonl" &&
            fail "a torn record: $(tail -c 300 "$tmp/m.jsonl")"
        [ "$(tail -c 1 "$tmp/m.jsonl" | od -An -c | tr -d ' ')" = '\n' ] ||
            fail "the metrics file ends in a torn line"
        grep -q '^{"event":"end",' "$tmp/m.jsonl" || fail "full tmpfs: the end record did not fit after all"
    fi
fi
echo "ok"
