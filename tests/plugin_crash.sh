#!/bin/sh
# A broken third-party plugin takes nothing down with it, and its crash
# is named. Built from fixtures/fixture_transport.c and fixture_plugin.c:
# - transport crashavail: its `available` check segfaults; hangavail: it
#   never returns. `dtctl plugins` runs each check in a child process: it
#   lists every other plugin and marks these two unavailable, saying which
#   op crashed or hung and which file to rebuild or remove (also with
#   SIGCHLD ignored, inherited: a check that returned is not "hung"); dtctl run
#   refuses the transport before launching.
# - transport longnamedtransport (18 characters): the columns after NAME
#   stay aligned (a name of 11 or more shifted them).
# - optimizer crashcreate: create segfaults. dtctl run makes the optimizer
#   once before launching (to check its settings), in a child: the job
#   fails there naming plugin, op and file (dtctl was killed, exit 139).
# - transport crashisend: isend segfaults in the workers' first
#   collective (tests/peer_exit, shm off so that the transport carries
#   it): the op is named, by the rank and by dtctl's closing line (isend
#   and the other per-message ops were not marked: the rank died unnamed).
# - optimizer crashstep: step segfaults in the workers. Each rank says
#   which plugin and op it crashed in, then dies of SIGSEGV as before;
#   dtctl's closing line names them too (it said only "rank 0 ... was
#   killed by signal 11 (Segmentation fault)").
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
cc=${CC:-cc}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_TRANSPORT \
    DT_CLUSTER_TRANSPORT DT_TRAIN_OPTIMIZER 2>/dev/null
# The sanitizers' own SIGSEGV handler would report the fixtures' crashes
# as an exit code: let them end by their signal, as in a normal build.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
export ASAN_OPTIONS

build() { # KIND NAME SOURCE [CFLAGS...]
    kind=$1 name=$2 src=$3
    shift 3
    $cc -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
        -I"$top_srcdir/include" -I"$top_builddir" -DFIXTURE_NAME="\"$name\"" \
        "$@" -o "$tmp/dt_${kind}_$name.so" "$top_srcdir/tests/fixtures/$src" \
        -L"$top_builddir/core/.libs" -ldt >"$tmp/cc.log" 2>&1 ||
        { cat "$tmp/cc.log" >&2; fail "building fixture $name"; }
}
build transport crashavail fixture_transport.c -DFIXTURE_COMPLETE -DFIXTURE_AVAILABLE=1
build transport hangavail fixture_transport.c -DFIXTURE_COMPLETE -DFIXTURE_AVAILABLE=2
build transport longnamedtransport fixture_transport.c -DFIXTURE_COMPLETE \
    -DFIXTURE_VERSION='"0.1"'
build optimizer crashcreate fixture_plugin.c -DFIXTURE_CRASH_IN_CREATE
build optimizer crashstep fixture_plugin.c -DFIXTURE_CRASH_IN_STEP
build transport crashisend fixture_transport.c -DFIXTURE_COMPLETE \
    -DFIXTURE_CRASH_IN_ISEND
export DT_PLUGIN_PATH="$tmp"

# 1. The listing goes on past a check that crashes or hangs (10 s).
timeout -k 5 60 "$DTCTL" plugins >"$tmp/plugins" 2>&1
rc=$?
cat "$tmp/plugins"
[ $rc -eq 0 ] || fail "dtctl plugins: exit $rc, not 0"
row() { # NAME: its line and the reason line under it
    grep -A1 -E "^[a-z]+ +$1 " "$tmp/plugins"
}
row crashavail | grep -Eq "^transport +crashavail +0\.0 +unavailable " ||
    fail "crashavail is not listed as unavailable"
row crashavail | grep -qF "crashed in available() (signal 11: Segmentation fault): rebuild or remove $tmp/dt_transport_crashavail.so" ||
    fail "crashavail's crash is not named"
row hangavail | grep -Eq "^transport +hangavail +0\.0 +unavailable " ||
    fail "hangavail is not listed as unavailable"
row hangavail | grep -qF "hung in available(): it did not return within 10 s and was killed; rebuild or remove $tmp/dt_transport_hangavail.so" ||
    fail "hangavail's hang is not named"
for p in "launcher +local" "transport +tcp" "optimizer +sgd" "optimizer +crashstep"; do
    grep -Eq "^$p +[^ ]+ +available " "$tmp/plugins" ||
        fail "dtctl plugins no longer lists $p as available"
done

# 1b. dtctl started with SIGCHLD ignored (a parent's setting survives
# exec): a check that returned is not called hung (its child was reaped
# at once and the loader read that as a check that never ended).
# (perl: dash does not pass a trap '' CHLD on to what it execs)
DT_PLUGIN_PATH= timeout -k 5 60 perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV' \
    "$DTCTL" plugins >"$tmp/plugins-ign" 2>&1 ||
    { cat "$tmp/plugins-ign"; fail "dtctl plugins with SIGCHLD ignored failed"; }
grep -q "hung in\|crashed in\|ended its process" "$tmp/plugins-ign" &&
    { cat "$tmp/plugins-ign"; fail "SIGCHLD ignored: an in-tree check was called hung or crashed"; }

# 2. Every row's VERSION and STATUS start under their headings.
awk 'NR == 1 { v = index($0, "VERSION"); s = index($0, "STATUS"); next }
     /^[a-z]/ && !(substr($0, v - 1, 1) == " " && substr($0, v, 1) != " " &&
                   substr($0, s - 1, 1) == " " && substr($0, s, 1) != " ") {
         print "misaligned: " $0; bad = 1 }
     END { exit bad }' "$tmp/plugins" || fail "dtctl plugins' columns shift"
grep -Eq "^transport +longnamedtransport 0\.1 +available " "$tmp/plugins" ||
    fail "longnamedtransport is not listed with its version"

# 3. dtctl run refuses the transport whose check crashed, before launching.
timeout -k 5 60 "$DTCTL" --transport crashavail run -n 2 -- \
    sh -c 'echo worker started' >"$tmp/run" 2>&1
rc=$?
cat "$tmp/run"
[ $rc -eq 2 ] || fail "dtctl run --transport crashavail: exit $rc, not 2"
grep -qF "transport plugin 'crashavail' ($tmp/dt_transport_crashavail.so) is not available here: crashed in available() (signal 11" "$tmp/run" ||
    fail "dtctl run --transport crashavail does not name the crash"
grep -q "worker started" "$tmp/run" && fail "dtctl run launched workers"
echo "ok: a crashing or hanging available() is named, nothing else lost"

# 4. An optimizer's create that crashes: dtctl's check before launching
# names it (and dtctl survives it).
job() { # OPTIMIZER
    printf '[train]\nepochs = 1\nbatch_size = 16\noptimizer = %s\ndevice = cpu\n[model]\nlayers = flatten linear(10)\n[data]\ntrain_samples = 200\ntest_samples = 50\n' \
        "$1" >"$tmp/job.ini"
    timeout -k 5 120 "$DTCTL" run -n 2 "$tmp/job.ini" >"$tmp/run" 2>&1
}
job crashcreate
rc=$?
cat "$tmp/run"
[ $rc -ne 0 ] && [ $rc -lt 124 ] || fail "a crashing optimizer create: dtctl run exit $rc"
grep -qF "optimizer plugin 'crashcreate' crashed in create() (signal 11: Segmentation fault): rebuild or remove $tmp/dt_optimizer_crashcreate.so" "$tmp/run" ||
    fail "dtctl run does not name the optimizer whose create crashed"
echo "ok: an optimizer whose create crashes is named before launch"

# dtctl's closing line: its last error, which names the rank that died,
# its signal, and the plugin op the rank's own report named.
closing_line_names() { # PLUGIN-WORDS
    last=$(grep '^dt: error: ' "$tmp/run" | tail -n 1)
    printf '%s\n' "$last" | grep -Eq "^dt: error: rank [01] on [^ ]+ was killed by signal 11 \(Segmentation fault\) in $1\$" ||
        fail "dtctl's closing line does not name $1: $last"
}

# 5. A crash in a transport's per-message op (isend) in the workers: the
# ranks and dtctl's closing line name it.
pe="$top_builddir/tests/peer_exit"
if [ -x "$pe" ]; then
    PEER_EXIT_RANK=-1 timeout -k 5 120 "$DTCTL" run -n 2 \
        --transport crashisend --set collectives.shm=off -- "$pe" \
        >"$tmp/run" 2>&1
    rc=$?
    cat "$tmp/run"
    [ $rc -eq 139 ] || fail "a crashing transport isend: dtctl run exit $rc, not 139"
    grep -qF "error: crashed in transport plugin 'crashisend', in its op isend() (signal 11: Segmentation fault): the fault is the plugin's, not dt's; rebuild or remove $tmp/dt_transport_crashisend.so" "$tmp/run" ||
        fail "the rank that crashed in the transport's isend does not name it"
    closing_line_names "transport plugin 'crashisend', in its op isend\(\)"
    echo "ok: a crash in a transport's isend is named, by the rank and dtctl"
else
    echo "SKIP (case 5): $pe is not built"
fi

# 6. A crash in the workers, in the optimizer's step: each rank names the
# plugin and op; the rank still dies of SIGSEGV (dtctl: exit 139), and
# dtctl's closing line names them too.
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ] || [ "${DT_HAVE_ZLIB:-yes}" != yes ]; then
    echo "SKIP: $data or zlib missing: the crash in a worker is not tried"
    exit 77
fi
job crashstep
rc=$?
cat "$tmp/run"
[ $rc -eq 139 ] || fail "a crashing optimizer step: dtctl run exit $rc, not 139 (128 + SIGSEGV)"
grep -qF "error: crashed in optimizer plugin 'crashstep', in its op step() (signal 11: Segmentation fault): the fault is the plugin's, not dt's; rebuild or remove $tmp/dt_optimizer_crashstep.so" "$tmp/run" ||
    fail "the rank that crashed in the optimizer's step does not name it"
closing_line_names "optimizer plugin 'crashstep', in its op step\(\)"
echo "ok: a crash in a worker's plugin op names the plugin and op"
