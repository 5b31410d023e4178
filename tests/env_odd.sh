#!/bin/sh
# env_odd.sh — dtctl on machines set up unlike the developer's: started
# with stdin, stdout and stderr closed (the trainer's job must still run,
# its metrics file hold only metrics), with stdout on a full disk (what is
# lost is an error), in a current directory that was removed (a warning
# says so), and TMPDIR naming where scratch files go (dtctl plot and plan
# follow it, with spaces and quotes in it, and name it when it cannot be
# written), and under an address-space limit (ulimit -v: no hang, no
# OpenBLAS in dtctl, a job trains).
set -u

name=env-odd
. "$top_srcdir/tests/check_common.sh"
cd "$T" || exit 99            # no ./conf/cluster.ini here
unset_dt_config_env
# Every dtctl call is bounded: a bug must fail the test, never hang it.
dt() { timeout -k 5 60 "$DTCTL" "$@"; }

# --- stdin, stdout and stderr closed -----------------------------------------
# dtctl's first pipe took number 2, so its own log lines went into it and
# the workers' rendezvous stalled (130 s, then exit 1).
data=/usr/share/datasets/fashion-mnist
if [ -r "$data/train-images-idx3-ubyte.gz" ] && [ "${DT_HAVE_ZLIB:-yes}" = yes ] &&
    "$DTCTL" plugins | awk '$1 == "transport" && $2 == "tcp"' | grep -q available; then
    cat >job.ini <<'INI'
[train]
seed = 1
epochs = 1
batch_size = 50
lr = 0.05
optimizer = sgd
device = cpu
[model]
layers = flatten linear(16) relu linear(10)
[data]
train_samples = 200
test_samples = 100
INI
    dt run -n 2 --metrics m.jsonl job.ini <&- >&- 2>&-
    rc=$?
    [ $rc -eq 0 ] || fail "closed stdin/stdout/stderr: exit $rc (want 0)"
    [ "$(grep -c . m.jsonl 2>/dev/null)" = 1 ] && ! grep -qv '^{"epoch":1,' m.jsonl ||
        fail "closed stdin/stdout/stderr: the metrics file holds more than the epoch's line: $(head -c 600 m.jsonl)"
    # stdout closed alone: the error lines still reach stderr
    dt run -n 2 -- sh -c 'echo err $DT_RANK >&2; exit 3' >&- 2>err
    rc=$?
    [ $rc -eq 3 ] || fail "stdout closed: exit $rc (want the workers' 3)"
    # (both ranks exit 3: the first dtctl reaps is named, either one)
    grep -q '^\[1\] err 1$' err && grep -q 'rank [01] on localhost exited with code 3' err ||
        fail "stdout closed: stderr lacks the workers' lines: $(cat err)"
    ok "started with stdin, stdout and stderr closed"
else
    echo "skip: closed standard descriptors (no Fashion-MNIST, zlib or tcp here)"
fi

# --- stdout on a full disk (/dev/full) --------------------------------------
# What dtctl was asked to print is lost: exit 1 and say so (--help,
# --version and plan's table exited 0 in silence).
if [ -w /dev/full ]; then
    for opt in --help --version; do
        dt $opt >/dev/full 2>err
        rc=$?
        [ $rc -eq 1 ] || fail "dtctl $opt >/dev/full: exit $rc (want 1)"
        grep -q "dtctl $opt: cannot write its output to standard output" err ||
            fail "dtctl $opt >/dev/full: not said: $(cat err)"
    done
    ok "a lost --help or --version is an error"
else
    echo "skip: stdout on a full disk (no /dev/full)"
fi

# --- a current directory that was removed ------------------------------------
# Every relative path then fails with "No such file or directory" (the
# trainer blamed --metrics): one warning names the cause.
mkdir "$T/gone" || exit 99
(cd "$T/gone" && rmdir "$T/gone" && dt run -n 1 -- true) >out 2>&1
rc=$?
[ $rc -eq 0 ] || fail "removed cwd: dtctl run -- true exited $rc: $(cat out)"
grep -q "warning: the current directory no longer exists (it was removed): relative paths .* cd to an existing directory" out ||
    fail "removed cwd: no warning: $(cat out)"
dt run -n 1 -- true >out 2>&1 || fail "existing cwd: exit $?"
grep -q "no longer exists" out && fail "existing cwd: warned: $(cat out)"
ok "a removed current directory is said"

# --- TMPDIR -------------------------------------------------------------------
line() {
    printf '{"epoch":%s,"step":%s0,"train_loss":1.5,"test_loss":1.2,"test_accuracy":0.6,"lr":0.1,"samples_per_sec":1000.0,"comm_fraction":0.1,"data_wait":0.01,"epoch_seconds":1.0}\n' "$1" "$1"
}
{ line 1; line 2; } >m2.jsonl
# Unusable: said with the directory and the variable, whatever gnuplot.
if TMPDIR="$T/missing" dt plot m2.jsonl -o p.svg >out 2>&1; then
    fail "TMPDIR=missing: dtctl plot succeeded (it wrote elsewhere)"
fi
grep -q "dtctl plot: cannot create a temporary directory in $T/missing: No such file or directory (that is \$TMPDIR: point it at a writable directory)" out ||
    fail "TMPDIR=missing: dtctl plot's error does not name it: $(cat out)"
if command -v gnuplot >/dev/null 2>&1; then
    odd="$T/tmp dir 'q\" ü"
    mkdir "$odd" || exit 99
    TMPDIR="$odd" dt plot m2.jsonl -o p.svg >out 2>&1 ||
        fail "TMPDIR with a space and quotes: dtctl plot exited $?: $(cat out)"
    grep -q '<svg' p.svg 2>/dev/null || fail "TMPDIR with a space and quotes: no SVG"
    [ -z "$(ls -A "$odd")" ] || fail "dtctl plot left files in TMPDIR: $(ls -A "$odd")"
else
    echo "skip: dtctl plot in an odd TMPDIR (no gnuplot)"
fi
ok "dtctl plot follows TMPDIR"

if [ -x "${top_builddir:-}/core/dt-plan-sim" ]; then
    cat >plan.ini <<'INI'
[model]
layers = flatten linear(16) relu linear(10)
INI
    printf '[transport.tcp]\nalpha = 2e-5\nbeta = 1e-9\ngamma = 2.5e-10\n' >prof.ini
    if TMPDIR="$T/missing" dt plan plan.ini --input 1,28,28,10 --hosts 2 \
        --network 10Gbit --profile prof.ini >out 2>&1; then
        fail "TMPDIR=missing: dtctl plan succeeded (it wrote elsewhere)"
    fi
    grep -q "plan: cannot create a temporary file in $T/missing: No such file or directory (that is \$TMPDIR" out ||
        fail "TMPDIR=missing: dtctl plan's error does not name it: $(cat out)"
    mkdir -p "$T/plan tmp" || exit 99
    TMPDIR="$T/plan tmp" dt plan plan.ini --input 1,28,28,10 --hosts 2 \
        --network 10Gbit --profile prof.ini >out 2>&1 ||
        fail "TMPDIR with a space: dtctl plan exited $?: $(cat out)"
    grep -q '^ *2 ' out || fail "TMPDIR with a space: no row for N = 2: $(cat out)"
    [ -z "$(ls -A "$T/plan tmp")" ] || fail "dtctl plan left files in TMPDIR"
    if [ -w /dev/full ]; then
        dt plan plan.ini --input 1,28,28,10 --hosts 2 --network 10Gbit \
            --profile prof.ini >/dev/full 2>err
        rc=$?
        [ $rc -eq 1 ] || fail "dtctl plan >/dev/full: exit $rc (want 1)"
        grep -q "dtctl plan: cannot write its output to standard output" err ||
            fail "dtctl plan >/dev/full: not said: $(cat err)"
    fi
    ok "dtctl plan follows TMPDIR"
else
    echo "skip: dtctl plan and TMPDIR (dt-plan-sim not built)"
fi

# --- an address-space limit (ulimit -v, SGE's h_vmem) ------------------------
# OpenBLAS's constructor starts a thread per CPU, each mapping a buffer:
# linked into libdt it ran before main in dtctl too, whose threads spun for
# ever when their buffers did not fit (dtctl hung at exit and at its first
# fork), and on many CPUs it could not create them and stopped the program
# (exit 130) before main. libdt now loads OpenBLAS with the first cpu
# device, telling it the device's threads: dtctl never loads it.
out=$( (ulimit -v 150000 && timeout -k 2 20 "$DTCTL" --version) 2>&1)
rc=$?
if echo "$out" | grep -q Sanitizer; then
    echo "skip: ulimit -v (a sanitizer build reserves more address space)"
else
    [ $rc -eq 0 ] || fail "dtctl --version under ulimit -v 150000: exit $rc (124: hung): $out"
    # A host with many CPUs, played on this one: 1 GB thread stacks under
    # an 800 MB limit, so that no thread can be created (OpenBLAS linked:
    # "pthread_create failed", exit 130 before main, with 2 CPUs or more).
    out=$( (ulimit -s 1000000 && ulimit -v 800000 || exit 77
            timeout -k 2 20 "$DTCTL" --version) 2>&1)
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] ||
        fail "dtctl --version where no thread can be created: exit $rc: $out"
    out=$( (ulimit -v 150000 && timeout -k 2 30 "$DTCTL" run -q -n 2 -- sh -c 'echo "${OPENBLAS_NUM_THREADS-unset}"') 2>&1)
    rc=$?
    [ $rc -eq 0 ] && [ "$(echo "$out" | grep -c '^\[[01]\] unset$')" -eq 2 ] ||
        fail "dtctl run under ulimit -v 150000: exit $rc (124: hung): $out"
    [ -n "${OPENBLAS_NUM_THREADS-}" ] ||
    [ "$("$DTCTL" run -q -n 1 -- sh -c 'echo "${OPENBLAS_NUM_THREADS-unset}"')" = "[0] unset" ] ||
        fail "without a limit the workers' OPENBLAS_NUM_THREADS is not left alone"
    # the workers' parent is dtctl: nothing of OpenBLAS is mapped in it
    out=$(dt run -q -n 1 -- sh -c 'grep -c libopenblas /proc/$PPID/maps || :' 2>&1)
    [ "$out" = "[0] 0" ] || fail "OpenBLAS is loaded in dtctl: $out"
    ok "under ulimit -v dtctl neither hangs nor loads OpenBLAS"
    # dt-train trains under a limit with room for the buffers of the
    # OpenBLAS threads it is told to start (128 MiB each on x86-64, and a
    # stack), and no others; without room for one buffer the cpu device
    # refuses (OpenBLAS retries a mapping that does not fit for ever: the
    # job hung at its first matrix product), and with room for fewer
    # threads than [train] threads it runs those, saying so.
    if [ -r job.ini ]; then
        out=$( (ulimit -v 1000000 && timeout -k 2 60 "$DTCTL" run -n 1 --metrics lim.jsonl --set train.threads=2 job.ini) 2>&1)
        rc=$?
        [ $rc -eq 0 ] && grep -q '^{"epoch":1,' lim.jsonl ||
            fail "a job under ulimit -v 1000000: exit $rc (124: hung): $(echo "$out" | tail -5)"
        ! echo "$out" | grep -q 'address-space limit' ||
            fail "a job under ulimit -v 1000000: warned of no room: $(echo "$out" | grep 'address-space')"
        out=$( (ulimit -v 150000 && timeout -k 2 60 "$DTCTL" run -n 1 job.ini) 2>&1)
        rc=$?
        [ $rc -eq 65 ] ||
            fail "a job under ulimit -v 150000: exit $rc (want 65; 124: hung): $(echo "$out" | tail -5)"
        echo "$out" | grep -q 'cpu device: the address-space limit of 146 MiB .*OpenBLAS maps a 128 MiB buffer at the first matrix product.*the job would hang. Raise the limit by at least [0-9]* MiB' ||
            fail "a job under ulimit -v 150000: not said: $(echo "$out" | tail -5)"
        # the least limit (4 MiB steps) a job of 1 thread trains under
        lo=150000 hi=1000000
        while [ $((hi - lo)) -gt 4096 ]; do
            mid=$(((lo + hi) / 2))
            (ulimit -v $mid && timeout -k 2 30 "$DTCTL" run -q -n 1 job.ini) >/dev/null 2>&1
            rc=$?
            if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
                fail "a job under ulimit -v $mid hung"
                break
            fi
            if [ $rc -eq 0 ]; then hi=$mid; else lo=$mid; fi
        done
        # and room for one pool thread more (buffer, stack, 24 MiB): of
        # threads = 4, 2 run
        stack=$(ulimit -s)
        case $stack in *[!0-9]*|'') stack=2048 ;; esac
        lim=$((hi + 131072 + stack + 24576))
        out=$( (ulimit -v $lim && timeout -k 2 60 "$DTCTL" run -n 1 --metrics few.jsonl --set train.threads=4 job.ini) 2>&1)
        rc=$?
        [ $rc -eq 0 ] && grep -q '^{"epoch":1,' few.jsonl ||
            fail "threads = 4 under ulimit -v $lim: exit $rc (124: hung): $(echo "$out" | tail -5)"
        echo "$out" | grep -q '\[train\] threads = 4, but the address-space limit of [0-9]* MiB .* leaves room for the buffers of 2 OpenBLAS threads .*running 2' ||
            fail "threads = 4 under ulimit -v $lim: no warning naming 4 and 2: $(echo "$out" | grep -v info: | tail -5)"
        echo "$out" | grep -q 'device: cpu (OpenBLAS, 2 threads)' ||
            fail "threads = 4 under ulimit -v $lim: not 2 threads: $(echo "$out" | grep 'device:')"
        ok "dt-train trains under ulimit -v, refuses without room for OpenBLAS's buffer, runs the threads that fit"
    fi
fi

[ $fails -eq 0 ] || exit 1
exit 0
