#!/bin/sh
# run_many.sh — `dtctl run` with many workers on one host (local launcher):
# every rank's output, a failing rank among 64 named and the job stopped
# with nothing left running, a long list of this machine's names said in
# whole names. No timing assertions; every dtctl call is bounded.
set -u

name=run-many
MARK="dtrunmany$$"               # unique word in every process we start
. "$top_srcdir/tests/check_common.sh"
dt() { timeout -k 5 60 "$DTCTL" "$@"; }

pick_transport
N=64
# dtctl refuses N workers under a hard limit of 4N + 64 descriptors.
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt $((4 * N + 64)) ]; then
    echo "SKIP: 'ulimit -Hn' is $hard; $N workers need $((4 * N + 64))"
    exit 77
fi

# --- every rank runs once and its line comes out -----------------------------
dt run $TR -n $N -- sh -c ": $MARK; echo rank=\$DT_RANK/\$DT_WORLD_SIZE" \
    >"$T/out" 2>"$T/err" || fail "$N ranks of echo: exit $?: $(cat "$T/err")"
i=0
while [ $i -lt $N ]; do
    grep -qx "\[$i\] rank=$i/$N" "$T/out" || fail "rank $i: no line 'rank=$i/$N'"
    i=$((i + 1))
done
[ "$(wc -l <"$T/out")" -eq $N ] || fail "want $N lines, got: $(cat "$T/out")"
ok "$N ranks: one line each"

# --- rank 37 of 64 exits 3: named, the job stops, nothing is left -----------
# The others say their pid (exec: the sleep keeps it) and sleep; rank 37
# waits until most have started. Only a bound, not a timing check.
dt run $TR -n $N -- sh -c ": $MARK; if [ \$DT_RANK = 37 ]; then sleep 1; exit 3; fi; echo pid=\$\$; exec sleep 100" \
    >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 3 ] || fail "a rank's exit 3: want dtctl's exit 3, got $rc: $(cat "$T/err")"
grep -q "rank 37 on localhost exited with code 3" "$T/err" ||
    fail "the failing rank is not named: $(cat "$T/err")"
pids=$(sed -n 's/^\[[0-9]*\] pid=\([0-9]*\)$/\1/p' "$T/out")
[ -n "$pids" ] || fail "no worker said its pid: $(cat "$T/out")"
for p in $pids; do
    # gone, or a pid taken since by something that is not our sleep
    if [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q '^sleep 100'; then
        fail "worker pid $p still runs after dtctl ended"
    fi
done
pgrep -f "$MARK" >/dev/null && fail "processes of the job are left: $(pgrep -a -f "$MARK")"
ok "rank 37 of $N exits 3: named, dtctl exits 3, every worker is gone"

# --- many names of this machine: whole names, then 'and K more' -------------
# 120 entries once made the info line end mid-name ("..., '127.0.0.38', '").
hosts=$(i=2; while [ $i -le 121 ]; do printf '127.0.0.%d:1,' $i; i=$((i + 1)); done)
dt run $TR -H "${hosts%,}" -n $N -- sh -c ": $MARK" >"$T/out" 2>"$T/err" ||
    fail "120 loopback names: exit $?: $(cat "$T/err")"
line=$(grep 'all name this machine' "$T/err")
echo "$line" | grep -q "^dt: info: hosts '127\.0\.0\.2', '127\.0\.0\.3', .*'127\.0\.0\.[0-9]*' and [0-9]* more all name this machine" ||
    fail "the names are not whole names then 'and K more': $line"
listed=$(echo "$line" | sed 's/ all name this machine.*//' | grep -o "'127\.0\.0\.[0-9]*'" | wc -l)
more=$(echo "$line" | sed -n 's/.* and \([0-9]*\) more all name this machine.*/\1/p')
[ $((listed + ${more:-0})) -eq $N ] ||
    fail "named $listed and $more more, want $N hosts (those with ranks): $line"
ok "120 names of this machine, 64 used: whole names and 'and K more'"

[ $fails -eq 0 ] || exit 1
exit 0
