#!/bin/sh
# user_file_lines.sh — a file a user names by mistake (/dev/zero, a data
# file, a program) is refused at its line, in bounded memory: getline held
# /dev/zero's one endless line until the machine ran out of memory. The
# hostfile (--hostfile), a metrics file (dtctl plot) and a colocation file
# (dtctl plan --colocation), a layer-times file and a profile (dtctl plan
# --layer-times, --profile) each say FILE:LINE, what is wrong and what to
# check. (The config files: tests/test_config.c, test_binary_file.)
set -u
: "${DTCTL:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-lines.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM
unset DT_RANK DT_WORLD_SIZE DT_RENDEZVOUS DT_JOB_TOKEN DT_CLUSTER_HOSTFILE \
    2>/dev/null
fail() { echo "FAIL: $*"; echo "--- output:"; cut -c1-400 "$tmp/out"; exit 1; }
# Each refusal frees what it read (the sanitizer build reports a leak).
dt() {
    timeout -k 5 30 "$DTCTL" "$@" >"$tmp/out" 2>&1
    rc=$?
    grep -q "LeakSanitizer" "$tmp/out" && fail "dtctl $*: a leak"
    return $rc
}

# A second line of 16 MiB and 4 KiB with no newline (a finite /dev/zero),
# and a file with a NUL byte on its second line.
{ printf 'localhost slots=1\n'; head -c $((16 * 1048576 + 4096)) /dev/zero | tr '\0' a; } \
    >"$tmp/long"
printf 'localhost slots=1\nnode1\000 slots=2\n' >"$tmp/nul"

# ---- the hostfile ----------------------------------------------------------
dt --hostfile "$tmp/long" run -- true
rc=$?
[ $rc -eq 2 ] || fail "--hostfile with an endless line: exit $rc, not 2"
grep -qF "$tmp/long:2: a line longer than 16 MiB: not a hostfile (check the path; a hostfile is text, one host a line, e.g. 'node1 slots=4')" "$tmp/out" ||
    fail "--hostfile with an endless line: not named at its line"
# The limit is exact: a line of 16 MiB, its newline counted, is read (it
# was refused as longer); one byte more is not.
{ printf 'localhost slots=1\n# '; head -c $((16 * 1048576 - 3)) /dev/zero | tr '\0' a; printf '\n'; } \
    >"$tmp/16m"
dt --hostfile "$tmp/16m" run -n 1 -- true
rc=$?
[ $rc -eq 0 ] || fail "--hostfile with a comment line of exactly 16 MiB: exit $rc, not 0"
{ printf 'localhost slots=1\n# '; head -c $((16 * 1048576 - 2)) /dev/zero | tr '\0' a; printf '\n'; } \
    >"$tmp/16m"
dt --hostfile "$tmp/16m" run -n 1 -- true
rc=$?
[ $rc -eq 2 ] || fail "--hostfile with a line of 16 MiB and 1 byte: exit $rc, not 2"
grep -qF "$tmp/16m:2: a line longer than 16 MiB" "$tmp/out" ||
    fail "--hostfile with a line of 16 MiB and 1 byte: not named at its line"
rm -f "$tmp/16m"
dt --hostfile "$tmp/nul" run -- true
rc=$?
[ $rc -eq 2 ] || fail "--hostfile with a NUL byte: exit $rc, not 2"
grep -qF "$tmp/nul:2: a NUL byte (binary data): not a hostfile" "$tmp/out" ||
    fail "--hostfile with a NUL byte: not named at its line"
[ "$(grep -c "not a hostfile" "$tmp/out")" -eq 1 ] ||
    fail "--hostfile with a NUL byte: more than one message"
echo "ok: the hostfile"

# ---- dtctl plot ------------------------------------------------------------
dt plot "$tmp/long" -o "$tmp/x.png"
rc=$?
[ $rc -ne 0 ] || fail "dtctl plot of an endless line succeeded"
grep -qF "$tmp/long:2: a line longer than 16 MiB: not a metrics file (check the path: dtctl run --metrics FILE writes one JSON object a line)" "$tmp/out" ||
    fail "dtctl plot of an endless line: not named at its line"
dt plot "$tmp/nul" -o "$tmp/x.png"
[ $? -ne 0 ] || fail "dtctl plot of a file with no metrics line succeeded"
grep -qF "$tmp/nul:1: not a metrics line (no \"epoch\"); skipped" "$tmp/out" ||
    fail "dtctl plot: the first bad line is not named"
echo "ok: dtctl plot"

# ---- dtctl plan --colocation -----------------------------------------------
printf 'batch 64\nforward 0.01\noptimizer 0\n0.02 4000\n' >"$tmp/c.layers"
{ printf 'k 1 0.001\nk 2 '; head -c $((16 * 1048576 + 4096)) /dev/zero | tr '\0' 1; } \
    >"$tmp/long.coloc"
dt plan --layer-times "$tmp/c.layers" --hosts 1 --gpus-per-host 2 \
    --network 10Gbit --colocation "$tmp/long.coloc"
[ $? -ne 0 ] || fail "--colocation with an endless line accepted"
grep -qF "$tmp/long.coloc:2: a line longer than 16 MiB: not a colocation file (check the path: --save-colocation FILE writes one)" "$tmp/out" ||
    fail "--colocation with an endless line: not named at its line"
printf 'k 1 0.001\nk 2 0.001\000 0.002\n' >"$tmp/nul.coloc"
dt plan --layer-times "$tmp/c.layers" --hosts 1 --gpus-per-host 2 \
    --network 10Gbit --colocation "$tmp/nul.coloc"
[ $? -ne 0 ] || fail "--colocation with a NUL byte accepted"
grep -qF "$tmp/nul.coloc:2: a NUL byte (binary data): not a colocation file" "$tmp/out" ||
    fail "--colocation with a NUL byte: not named at its line"
echo "ok: dtctl plan --colocation"

# ---- dtctl plan --layer-times, --profile: fgets read them in pieces, so
# /dev/zero looped for ever (and "0.02\0 junk" was taken as 0.02) --------
printf 'forward 0.01\n0.02\000 junk\n' >"$tmp/nul.layers"
dt plan --layer-times "$tmp/nul.layers" --hosts 1 --network 10Gbit
[ $? -ne 0 ] || fail "--layer-times with a NUL byte accepted"
grep -qF "$tmp/nul.layers:2: a NUL byte (binary data): not a layer-times file (check the path: --save-layers FILE writes one)" "$tmp/out" ||
    fail "--layer-times with a NUL byte: not named at its line"
dt plan --layer-times /dev/zero --hosts 1 --network 10Gbit
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "--layer-times /dev/zero: exit $rc"
grep -qF "/dev/zero:1: a NUL byte (binary data): not a layer-times file" "$tmp/out" ||
    fail "--layer-times /dev/zero: not named"
dt plan --layer-times "$tmp/c.layers" --hosts 1 --network 10Gbit --profile /dev/zero
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "--profile /dev/zero: exit $rc"
grep -qF "/dev/zero:1: a NUL byte (binary data): not a profile (check the path: dtctl plan --measure --profile FILE writes one)" "$tmp/out" ||
    fail "--profile /dev/zero: not named"
# a layer-times file bad after its first layers: those are freed too
printf 'forward 0.01\n0.02 4000\n0.03 junk\n' >"$tmp/bad.layers"
dt plan --layer-times "$tmp/bad.layers" --hosts 1 --network 10Gbit
[ $? -ne 0 ] || fail "--layer-times with a bad line accepted"
grep -qF "$tmp/bad.layers:3: expected 'SECONDS BYTES'" "$tmp/out" ||
    fail "--layer-times with a bad line: not named at its line"
echo "ok: dtctl plan --layer-times, --profile"

# ---- dtctl plan --fit NAME N:FILE: fgets in 512-byte pieces spun on
# /dev/zero until killed -------------------------------------------------
dt plan --fit tcp 2:/dev/zero
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "--fit tcp 2:/dev/zero: exit $rc (124: it spun)"
grep -qF "plan: --fit: /dev/zero:1: a NUL byte (binary data): not dtctl bench output (check the path: dtctl bench allreduce prints one table a run)" "$tmp/out" ||
    fail "--fit tcp 2:/dev/zero: not named at its line"
{ printf '# dt allreduce: 2 ranks\n'; head -c $((16 * 1048576 + 4096)) /dev/zero | tr '\0' 1; } \
    >"$tmp/long.bench"
dt plan --fit tcp "2:$tmp/long.bench"
[ $? -ne 0 ] || fail "--fit with an endless line accepted"
grep -qF "$tmp/long.bench:2: a line longer than 16 MiB: not dtctl bench output" "$tmp/out" ||
    fail "--fit with an endless line: not named at its line"
rm -f "$tmp/long.bench"
echo "ok: dtctl plan --fit"

# ---- out of memory reading a colocation file: said as such (it was taken
# for the end of the file: "no 'k 1' line"). realloc above 1 MiB fails
# through an LD_PRELOAD shim (not in a sanitizer build: its runtime must
# come first). -----------------------------------------------------------
if [ -n "${ASAN_OPTIONS-}" ]; then
    echo "skip: out of memory through LD_PRELOAD (a sanitizer build)"
else
    ${CC:-cc} -Wall -Wextra -Werror -shared -fPIC -o "$tmp/shim.so" \
        "$top_srcdir/tests/fixtures/libc_shim.c" -ldl >"$tmp/out" 2>&1 ||
        fail "building tests/fixtures/libc_shim.c"
    { printf 'k 2 0.002\nk 1 '; head -c $((2 * 1048576)) /dev/zero | tr '\0' 1; printf '\n'; } \
        >"$tmp/big.coloc"
    env LD_PRELOAD="$tmp/shim.so" DT_SHIM_REALLOC_MAX=1048576 \
        timeout -k 5 30 "$DTCTL" plan --layer-times "$tmp/c.layers" \
        --hosts 1 --gpus-per-host 2 --network 10Gbit \
        --colocation "$tmp/big.coloc" >"$tmp/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "--colocation out of memory: exit $rc"
    grep -qF "plan: $tmp/big.coloc:2: out of memory reading this line" "$tmp/out" ||
        fail "--colocation out of memory: not said"
    grep -q "no 'k 1' line" "$tmp/out" &&
        fail "--colocation out of memory: taken for the end of the file"
    echo "ok: out of memory in a colocation file"
fi

# ---- /dev/zero itself, within a bound on memory (a sanitizer build
# reserves terabytes of address space: no such bound there) -----------------
if [ -n "${ASAN_OPTIONS-}" ]; then
    echo "skip: /dev/zero under ulimit -v (a sanitizer build: ASAN_OPTIONS is set)"
else
    (ulimit -v 1048576 && exec timeout -k 5 60 "$DTCTL" --hostfile /dev/zero \
        run -- true) >"$tmp/out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "--hostfile /dev/zero: exit $rc, not 2"
    grep -qF "/dev/zero:1: a NUL byte (binary data): not a hostfile" "$tmp/out" ||
        fail "--hostfile /dev/zero: not named"
    (ulimit -v 1048576 && exec timeout -k 5 60 "$DTCTL" plot /dev/zero \
        -o "$tmp/x.png") >"$tmp/out" 2>&1
    [ $? -ne 0 ] || fail "dtctl plot /dev/zero succeeded"
    grep -qF "/dev/zero:1: a line longer than 16 MiB: not a metrics file" "$tmp/out" ||
        fail "dtctl plot /dev/zero: not named"
    echo "ok: /dev/zero"
fi
echo PASS
