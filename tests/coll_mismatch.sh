#!/bin/sh
# Collectives that do not match across ranks (tests/coll_mismatch.c says
# what each case calls): every rank gets DT_ERR_INVALID well within the
# 30 s [cluster] timeout set here (none gets ok, none waits it out, no live
# rank is blamed), every rank prints an error line, the lines name the two
# calls (over tcp a rank that learns it from another points to that
# rank's line), and dt_finalize after it returns at once with the same
# error. Through shared memory (the default on one host) and over tcp
# ([collectives] shm = off), 2 ranks and 3 (the last one odd). tcp sees
# messages: their sizes (counts, type widths) and their tags, which carry
# the collective, its type, op and root (dt/plugin.h), so a type of the
# same width and another op are caught too. Another root only where a
# rank receives a message it did not expect: a broadcast whose ranks each
# think themselves the root only sends, and nothing is seen.
set -u
prog="$top_builddir/tests/coll_mismatch"
# both are built by make check: missing is a broken build, not a skip
if [ ! -x "$prog" ] || [ ! -e "$top_builddir/plugins/modules/dt_transport_tcp.so" ]; then
    echo "ERROR: tests/coll_mismatch or the tcp plugin was not built"
    exit 99
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-mismatch.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_COLLECTIVES_SHM \
    2>/dev/null
status=0
fail() { echo "FAIL: $*"; status=1; }

# Seconds "well under" the timeout; a wait for the timeout takes 30
# (generous: a loaded machine still fails at once well inside it).
limit=15

# run NP PATH CASE [ODD_RANK]: the job's output in $tmp/out.
run() {
    shm=auto
    [ "$2" = tcp ] && shm=off
    MISMATCH_CASE=$3 MISMATCH_RANK=${4:-1} DT_COLLECTIVES_SHM=$shm \
        DT_CLUSTER_TIMEOUT=30s timeout 120 "$DTCTL" run -n "$1" -- "$prog" \
        >"$tmp/out" 2>&1
}

# The status and seconds rank R printed for CALL ("STATUS SECONDS").
result() {
    sed -n "s/^\[$1\] coll_mismatch: rank $1: $2: \(.*\) after \([0-9.]*\) s$/\1 \2/p" \
        "$tmp/out"
}

# check NP PATH CASE ODD WANT...: every rank fails quickly with
# DT_ERR_INVALID (the calls are wrong; no peer failed), its error line
# (dt: ... error: <layer>: rank R: ...) contains each WANT, dt_finalize
# returns the same error at once, and no live rank is blamed.
check() {
    np=$1 path=$2 case=$3 odd=$4
    shift 4
    what="$path, $np ranks, $case (rank $odd differs)"
    run "$np" "$path" "$case" "$odd"
    bad=0
    r=0
    while [ "$r" -lt "$np" ]; do
        got=$(result "$r" "$case")
        fin=$(result "$r" dt_finalize)
        st=${got% *} secs=${got##* }
        if [ -z "$got" ] || [ "$st" != "invalid argument" ]; then
            fail "$what: rank $r returned '${st:-nothing}', want 'invalid argument'"
            bad=1
        elif ! awk "BEGIN { exit !($secs < $limit) }"; then
            fail "$what: rank $r took $secs s (the timeout is 30 s)"; bad=1
        elif [ "${fin% *}" != "$st" ] ||
             ! awk "BEGIN { exit !(${fin##* } < $limit) }"; then
            fail "$what: rank $r: dt_finalize returned '$fin', want '$st' at once"
            bad=1
        fi
        if ! grep -q "^\[$r\] dt: .* error: [a-z]*: rank $r: " "$tmp/out"; then
            fail "$what: rank $r printed no error line of its own"; bad=1
        fi
        r=$((r + 1))
    done
    for want in "$@"; do
        # "A || B": either line will do (which rank sees the difference
        # first depends on which message arrives first)
        found=0 rest=$want
        while :; do
            alt=${rest%% || *}
            grep -F -q -- "$alt" "$tmp/out" && found=1
            [ "$alt" = "$rest" ] && break
            rest=${rest#* || }
        done
        if [ $found = 0 ]; then
            fail "$what: no error line says '$want'"; bad=1
        fi
    done
    if grep -E -q "went silent|is gone|exited or crashed" "$tmp/out"; then
        fail "$what: a live rank is blamed"; bad=1
    fi
    if [ "$bad" = 0 ]; then
        echo "ok: $what: every rank failed at once ($st), naming the calls"
    else
        cat "$tmp/out"
    fi
}

same="every rank must call the same collectives in the same order with the same count, type, op and root"

# The control: matching calls, the right sum, dt_finalize ok.
for path in shm tcp; do
    run 2 "$path" none
    if [ "$(result 0 none | cut -d' ' -f1)" != ok ] ||
       [ "$(result 1 none | cut -d' ' -f1)" != ok ] ||
       [ "$(result 0 dt_finalize | cut -d' ' -f1)" != ok ] ||
       [ "$(result 1 dt_finalize | cut -d' ' -f1)" != ok ]; then
        fail "$path: matching calls did not succeed"; cat "$tmp/out"
    else
        echo "ok: $path: matching calls succeed"
    fi
done

# Through shared memory every difference is caught, each rank naming what
# rank 0 and the first rank that differs called.
check 2 shm count 1 \
    "rank 0 called allreduce of 100 float32 (sum), rank 1 allreduce of 200 float32 (sum): $same"
check 2 shm count_large 1 \
    "rank 0 called allreduce of 100000 float32 (sum), rank 1 allreduce of 200000 float32 (sum)"
check 2 shm kind 1 "rank 0 called barrier, rank 1 allreduce of 4 float32 (sum)"
check 2 shm dtype 1 \
    "rank 0 called allreduce of 100 float32 (sum), rank 1 allreduce of 100 int32 (sum)"
check 2 shm dtype_width 1 \
    "rank 0 called allreduce of 100 float32 (sum), rank 1 allreduce of 100 float64 (sum)"
check 2 shm op 1 \
    "rank 0 called allreduce of 100 float32 (sum), rank 1 allreduce of 100 float32 (max)"
check 2 shm root 1 \
    "rank 0 called broadcast of 100 float32 from rank 0, rank 1 broadcast of 100 float32 from rank 1"
check 3 shm count_large 2 \
    "rank 0 called allreduce of 100000 float32 (sum), rank 2 allreduce of 200000 float32 (sum)"
check 3 shm kind 2 "rank 0 called barrier, rank 2 allreduce of 4 float32 (sum)"

# Over tcp: the rank whose message showed it names both sides; a rank
# that learns it from another says where to look.
sizes="bytes in its allreduce where this rank expected"
check 2 tcp count 1 "$sizes" \
    "the ranks called allreduce with different counts or types; $same"
check 2 tcp count_large 1 "$sizes"
check 2 tcp kind 1 "called allreduce (float32, sum) where this rank called barrier" \
    "called barrier where this rank called allreduce (float32, sum)"
check 2 tcp dtype_width 1 "called allreduce (float64, sum) where this rank called allreduce (float32, sum)"
check 2 tcp dtype 1 "called allreduce (int32, sum) where this rank called allreduce (float32, sum)" \
    "called allreduce (float32, sum) where this rank called allreduce (int32, sum)"
check 2 tcp op 1 "called allreduce (float32, max) where this rank called allreduce (float32, sum)" \
    "called allreduce (float32, sum) where this rank called allreduce (float32, max)"
check 3 tcp count_large 2 "$sizes"
# (rank 0 or 1 may see rank 2's allreduce first, or rank 2 rank 1's barrier:
# seen under load)
check 3 tcp kind 2 "called allreduce (float32, sum) where this rank called barrier || called barrier where this rank called allreduce (float32, sum)"
exit $status
