#!/bin/sh
# The trainer's gradient averaging (grad_sync.c: its communication thread
# and bucket queue) on every rank of real jobs over tcp: 3 ranks, and a
# job of 2. grad_sync_check.c says what it checks.
set -u
fail=0
for n in 2 3; do
    out=$(timeout 120 "$DTCTL" run -n $n -- "$top_builddir/tests/grad_sync_check" 2>&1)
    rc=$?
    oks=$(printf '%s\n' "$out" | grep -c "ok: rank [0-9]* of $n averaged 3 steps")
    if [ $rc -ne 0 ] || [ "$oks" -ne $n ]; then
        printf '%s\n' "$out"
        echo "FAIL: grad_sync at N = $n (exit $rc, $oks of $n ranks ok)"
        fail=1
    else
        echo "ok: grad_sync at N = $n, every rank averaged"
    fi
done
exit $fail
