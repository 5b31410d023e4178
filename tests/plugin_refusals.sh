#!/bin/sh
# What the loader refuses, it refuses everywhere: in `dtctl plugins` (as
# "refused", with why), in the "available transports:" hint, and in dtctl
# run before any worker starts. Transports built from
# fixtures/fixture_transport.c:
# - halfdone: no test, no fini (required ops);
# - shortfini: every op, but its size ends before fini;
# - MyNet: complete, but a name with capitals (the name rule, which
#   lookup applies too: `--transport MyNet` says why, not "no file");
# - nover: complete, without a version string: it loads, so it is listed
#   as available;
# - keydup, keytype, keydefault, keyname, keyenv, keycase, keycolon:
#   complete, with a key table the configuration cannot hold (a key
#   declared twice, type 99, an int key defaulting to "x", a key name with
#   a space, rx-depth beside rx_depth and queueDepth beside queuedepth (one
#   DT_* variable would set both), a key name with a ':'): refused, naming
#   the key;
# - dashcaps: keys rx-depth and queueDepth, as out-of-tree plugins name
#   them: taken, and set from an ini line, a DT_* variable and --set.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
cc=${CC:-cc}
src="$top_srcdir/tests/fixtures/fixture_transport.c"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_TRANSPORT \
    DT_CLUSTER_TRANSPORT 2>/dev/null

build() { # NAME [CFLAGS...]
    name=$1
    shift
    $cc -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
        -I"$top_srcdir/include" -I"$top_builddir" "$@" \
        -o "$tmp/dt_transport_$name.so" "$src" \
        -L"$top_builddir/core/.libs" -ldt >"$tmp/cc.log" 2>&1 ||
        { cat "$tmp/cc.log" >&2; fail "building fixture $name"; }
}
build halfdone
build shortfini -DFIXTURE_SHORT_SIZE -DFIXTURE_NAME='"shortfini"'
build MyNet -DFIXTURE_COMPLETE -DFIXTURE_NAME='"MyNet"'
build nover -DFIXTURE_COMPLETE -DFIXTURE_NAME='"nover"' -DFIXTURE_VERSION=NULL
build nullops -DFIXTURE_COMPLETE -DFIXTURE_NAME='"nullops"' -DFIXTURE_OPS=NULL
build sizezero -DFIXTURE_COMPLETE -DFIXTURE_NAME='"sizezero"' -DFIXTURE_SIZE=0
build kind99 -DFIXTURE_COMPLETE -DFIXTURE_NAME='"kind99"' -DFIXTURE_KIND=99
n=1
for k in keydup keytype keydefault keyname keyenv keycase keycolon dashcaps; do
    build $k -DFIXTURE_COMPLETE -DFIXTURE_NAME="\"$k\"" -DFIXTURE_KEYS=$n
    n=$((n + 1))
done
export DT_PLUGIN_PATH="$tmp"

# 1. dtctl plugins: each refused, the reason on the next line.
"$DTCTL" plugins >"$tmp/plugins" 2>&1 || { cat "$tmp/plugins"; fail "dtctl plugins"; }
cat "$tmp/plugins"
expect_refused() { # NAME REASON
    grep -A1 -E "^transport +$1 " "$tmp/plugins" >"$tmp/row"
    grep -Eq "^transport +$1 +- +refused " "$tmp/row" ||
        fail "dtctl plugins does not list $1 as refused"
    grep -qF "$2" "$tmp/row" || fail "dtctl plugins does not say why $1 is refused ($2)"
}
expect_refused halfdone "lacks the required ops test, fini"
expect_refused shortfini "lacks the required op fini"
expect_refused MyNet "plugin names are lower case letters, digits, '_' and '-'"
expect_refused keydup "has a bad key table: key 'timeout' is declared twice (entries 1 and 2 of its table)"
expect_refused keytype "has a bad key table: key 'depth' has type 99, which is no dt_key_type_t"
expect_refused keydefault "has a bad key table: key 'depth': its default 'x' is not an integer"
expect_refused keyname "has a bad key table: key 'queue depth': a key name is 1 to 64 characters, none of them a blank, a control character or one of . = : # ; [ ] (an ini line and --set could not spell it)"
expect_refused keyenv "has a bad key table: keys 'rx-depth' and 'rx_depth' (entries 2 and 3 of its table) are both set by the variable DT_TRANSPORT_KEYENV_RX_DEPTH (upper case, '-' as '_')"
expect_refused keycase "has a bad key table: keys 'queueDepth' and 'queuedepth' (entries 2 and 3 of its table) are both set by the variable DT_TRANSPORT_KEYCASE_QUEUEDEPTH"
expect_refused keycolon "has a bad key table: key 'rx:depth': a key name is"
# Mistakes of a plugin's struct: the refusal says what to set.
expect_refused nullops "the plugin's .ops is NULL; point it at the plugin's dt_transport_ops_t"
expect_refused sizezero "the plugin's ops table says its size is 0 bytes, too small for any op; set its .size = sizeof (the table)"
expect_refused kind99 "the plugin's .kind is 99, which is no dt_kind_t; set it to DT_KIND_TRANSPORT"
# Keys with '-' and capitals were always spellable (an ini line keeps the
# key as written, --set splits at the last dot, DT_* upper-cases and
# writes '-' as '_'): taken, and each way of setting them reaches them.
grep -Eq "^transport +dashcaps +0.0 +available " "$tmp/plugins" ||
    fail "dtctl plugins does not list dashcaps (keys rx-depth, queueDepth) as available"
printf '[transport.dashcaps]\nrx-depth = 7\nqueueDepth = 8\n' >"$tmp/dash.ini"
"$DTCTL" --transport dashcaps config "$tmp/dash.ini" >"$tmp/config" 2>&1 ||
    { cat "$tmp/config"; fail "dtctl config with the dashcaps transport"; }
grep -Eq "^rx-depth = 7 +# job file \($tmp/dash.ini:2\)" "$tmp/config" &&
    grep -Eq "^queueDepth = 8 +# job file \($tmp/dash.ini:3\)" "$tmp/config" ||
    { cat "$tmp/config"; fail "an ini line does not set rx-depth and queueDepth"; }
DT_TRANSPORT_DASHCAPS_RX_DEPTH=9 "$DTCTL" --transport dashcaps \
    --set transport.dashcaps.queueDepth=10 config >"$tmp/config" 2>&1 ||
    { cat "$tmp/config"; fail "dtctl config with the dashcaps transport"; }
grep -Eq "^rx-depth = 9 +# environment \(DT_TRANSPORT_DASHCAPS_RX_DEPTH\)" "$tmp/config" &&
    grep -Eq "^queueDepth = 10 +# command line \(--set\)" "$tmp/config" ||
    { cat "$tmp/config"; fail "DT_* and --set do not set rx-depth and queueDepth"; }
# A plugin without a version string loads (dtctl run takes it): listed as
# available, not as refused with an empty reason.
grep -Eq "^transport +nover +\(none\) +available " "$tmp/plugins" ||
    fail "dtctl plugins does not list nover (no version) as available"

# 2. dtctl run refuses before launching: no worker prints anything.
run() { # TRANSPORT
    timeout -k 5 60 "$DTCTL" --transport "$1" run -n 2 -- \
        sh -c 'echo worker started' >"$tmp/run" 2>&1
}
for t in halfdone shortfini keydup keytype keydefault keyname keyenv keycase keycolon; do
    run $t
    rc=$?
    cat "$tmp/run"
    [ $rc -eq 2 ] || fail "dtctl run --transport $t: exit $rc, not 2"
    case $t in
    key*) why="transport plugin '$t' has a bad key table: key" ;;
    *) why="transport plugin '$t' lacks the required op" ;;
    esac
    grep -qF "$why" "$tmp/run" ||
        fail "dtctl run --transport $t does not say why it is refused"
    grep -q "worker started" "$tmp/run" &&
        fail "dtctl run --transport $t launched workers before refusing"
done

# 3. The name rule at lookup: the reason, and the hint lists only usable
# transports (neither MyNet nor the refused ones).
run MyNet && { cat "$tmp/run"; fail "dtctl run --transport MyNet succeeded"; }
cat "$tmp/run"
grep -q "plugin names are lower case" "$tmp/run" ||
    fail "--transport MyNet does not say what a plugin name may be"
grep -q "looked for dt_transport_MyNet.so" "$tmp/run" &&
    fail "--transport MyNet claims the file is missing (it is in $tmp)"
hint=$(sed -n 's/.*available transports: //p' "$tmp/run")
[ -n "$hint" ] || fail "no 'available transports:' hint"
for t in MyNet halfdone shortfini; do
    case ", $hint," in *", $t,"*) fail "the hint offers $t: $hint" ;; esac
done
grep -q "worker started" "$tmp/run" && fail "--transport MyNet launched workers"
echo "refused plugins are listed with why, never offered, never launched"

# 4. Where a plugin was chosen: a misspelt name in a job file is named
# with its file:line, the storage one too (exit 2, before the launcher is
# set up, as a usage error; it was a staging failure, exit 1).
printf '[cluster]\ntransport = tcpp\n' >"$tmp/job.ini"
timeout -k 5 60 "$DTCTL" run -n 2 "$tmp/job.ini" -- sh -c 'echo worker started' \
    >"$tmp/run" 2>&1
rc=$?
cat "$tmp/run"
[ $rc -eq 2 ] || fail "a misspelt transport in a job file: exit $rc, not 2"
grep -qF "$tmp/job.ini:2: [cluster] transport is set here" "$tmp/run" ||
    fail "a misspelt transport in a job file: its file:line is not named"
mkdir -p "$tmp/data"
printf '[cluster]\nstorage = nfss\n[data]\npath = %s\n' "$tmp/data" >"$tmp/job.ini"
timeout -k 5 60 "$DTCTL" run -n 2 "$tmp/job.ini" -- sh -c 'echo worker started' \
    >"$tmp/run" 2>&1
rc=$?
cat "$tmp/run"
[ $rc -eq 2 ] || fail "a misspelt storage in a job file: exit $rc, not 2"
grep -qF "$tmp/job.ini:2: [cluster] storage is set here" "$tmp/run" ||
    fail "a misspelt storage in a job file: its file:line is not named"
grep -q "worker started" "$tmp/run" && fail "a misspelt storage launched workers"

# 5. A name that cannot be one is shown as far as a name may go, escaped:
# the rest of the line (the names there are) is not pushed out, and no
# control byte reaches the terminal.
long=$(printf 'a%.0s' $(seq 1 5000))
"$DTCTL" --launcher "$long" run -- true >"$tmp/run" 2>&1
grep -q "can be named 'a\{64\}\.\.\.': plugin names are .*available launchers: .*local" "$tmp/run" ||
    fail "a 5000-character launcher name: $(cut -c1-300 "$tmp/run")"
"$DTCTL" --launcher "$(printf 'x\033[31my')" run -- true >"$tmp/run" 2>&1
grep -qF "can be named 'x\\x1b[31my'" "$tmp/run" ||
    fail "a launcher name with an escape byte is not escaped: $(cat -v "$tmp/run")"
echo "a plugin's name is shown bounded and escaped, with where it was set"
