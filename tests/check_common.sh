# check_common.sh — the start the dtctl tests made of many checks share
# (run_local.sh, run_flags.sh, env_odd.sh...), sourced after setting `name`
# and, where the test's processes carry one, MARK
# (. "$top_srcdir/tests/check_common.sh"):
#  - DTCTL must be set (make check sets it);
#  - $T, a private directory ${TMPDIR:-/tmp}/dt-$name.XXXXXX, removed at
#    exit (cleanup(), which a test with more to undo redefines) with every
#    process whose command line holds $MARK;
#  - fail() counts a failed check and goes on; ok() ends a section, "ok"
#    only when none of its checks failed since the last one (the test
#    exits 1 at its end when $fails is not 0);
#  - pick_transport and unset_dt_config_env, for the tests that call them.
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-$name.XXXXXX") || exit 99
cleanup() {
    [ -n "${MARK:-}" ] && pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' INT TERM # dash runs no EXIT trap on a signal
fails=0 passed_at=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() {
    if [ $fails -eq $passed_at ]; then echo "ok: $*"
    else echo "FAILED: $* ($((fails - passed_at)) check(s) above)"; fi
    passed_at=$fails
}

# $TR: the --transport option `dtctl run` needs (empty when tcp is built,
# else the first transport that is); SKIP (77) when none is: dtctl run
# loads one up front even for `-- PROGRAM`.
pick_transport() {
    transports=$("$DTCTL" plugins | awk '$1 == "transport" && $4 == "available" { print $2 }')
    if [ -z "$transports" ]; then
        echo "SKIP: no transport plugin is built, so dtctl run cannot start"
        exit 77
    fi
    # shellcheck disable=SC2034 # used by the sourcing test
    if echo "$transports" | grep -qx tcp; then TR=""; else
        TR="--transport=$(echo "$transports" | head -n 1)"
    fi
}

# What the caller's environment would otherwise choose for dtctl (a config
# file, a world size, a transport, a launcher, an interface).
unset_dt_config_env() {
    unset DT_CONFIG DT_CLUSTER_NP DT_TRANSPORT DT_LAUNCHER DT_STORAGE DT_INTERFACE \
        DT_CLUSTER_INTERFACE NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME UCX_NET_DEVICES
}
