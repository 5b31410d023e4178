#!/bin/sh
# plot.sh — `dtctl plot` (issue 19 item 12): two tiny --metrics files
# (a null test loss, a resumed epoch written twice) drawn into a PNG and
# an SVG that exist and are not empty; without gnuplot a message naming
# the package; a picture type gnuplot is not asked for is refused; dtctl's
# restart records pass without a warning; a step going back starts a run
# of its own (not merged by epoch); a panel with only nulls is drawn empty;
# a one-epoch run draws without gnuplot's empty-range warnings;
# a picture that cannot be written is refused naming it.
set -u
: "${DTCTL:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-plot.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }

line() { # epoch loss test_loss acc lr sps
    printf '{"epoch":%s,"step":%s0,"train_loss":%s,"test_loss":%s,"test_accuracy":%s,"lr":%s,"samples_per_sec":%s,"comm_fraction":0.1,"data_wait":0.01,"epoch_seconds":1.0}\n' \
        "$1" "$1" "$2" "$3" "$4" "$5" "$6"
}
{ line 1 1.9 1.5 0.61 0.05 1000.0; line 2 1.2 null 0.70 0.1 1100.0
  line 2 1.1 1.0 0.72 0.1 1150.0; line 3 0.8 0.9 0.80 0.05 1200.0; } >"$tmp/a.jsonl"
{ line 1 2.1 1.8 0.55 0.1 900.0; line 2 1.4 1.2 0.66 0.1 950.0; } >"$tmp/b.jsonl"

# The missing-gnuplot message (checked first: it needs no gnuplot here).
mkdir "$tmp/empty"
if env PATH="$tmp/empty" "$DTCTL" plot "$tmp/a.jsonl" -o "$tmp/x.png" \
    >"$tmp/out" 2>&1; then
    fail "dtctl plot succeeded without gnuplot on PATH"
fi
grep -q "needs gnuplot.*apt-get install gnuplot-nox" "$tmp/out" ||
    fail "the missing-gnuplot message does not name gnuplot-nox"
if GNUPLOT="$tmp/empty/gnuplot" "$DTCTL" plot "$tmp/a.jsonl" \
    -o "$tmp/x.png" >"$tmp/out" 2>&1; then
    fail "dtctl plot succeeded with GNUPLOT naming nothing"
fi
grep -q "needs gnuplot" "$tmp/out" || fail "GNUPLOT=missing: no message"

if "$DTCTL" plot "$tmp/a.jsonl" -o "$tmp/x.pdf" >"$tmp/out" 2>&1; then
    fail "-o x.pdf was accepted"
fi
grep -q "is a .png or .svg file" "$tmp/out" || fail "-o x.pdf: no reason"
# A picture that cannot be written (as any user: its directory is
# missing) is named with what to do, before gnuplot runs: gnuplot's own
# "cannot open file; output not changed" named its temporary script.
if "$DTCTL" plot "$tmp/a.jsonl" -o "$tmp/nodir/x.png" >"$tmp/out" 2>&1; then
    fail "-o into a missing directory succeeded"
fi
grep -qF "dtctl plot -o: cannot write the picture $tmp/nodir/x.png: No such file or directory; name a file in a directory that exists and that you may write to" "$tmp/out" ||
    fail "-o into a missing directory: no clear reason"
grep -q "gnuplot" "$tmp/out" && fail "-o into a missing directory: gnuplot ran"
# ... and a link to a picture not there yet stays a link, written through
# (the check created the target, then removed the user's link)
if command -v gnuplot >/dev/null 2>&1; then
    mkdir "$tmp/tgt" && ln -s tgt/l.png "$tmp/l.png"
    "$DTCTL" plot "$tmp/a.jsonl" -o "$tmp/l.png" >"$tmp/out" 2>&1 ||
        fail "-o through a link: $(cat "$tmp/out")"
    [ -L "$tmp/l.png" ] && [ -s "$tmp/tgt/l.png" ] ||
        fail "-o through a link to a new file: the link is gone or its target empty"
fi
printf 'not json\n' >"$tmp/junk.jsonl"
if "$DTCTL" plot "$tmp/junk.jsonl" -o "$tmp/j.png" >"$tmp/out" 2>&1; then
    fail "a file without metrics lines was accepted"
fi
grep -q "no metrics lines" "$tmp/out" || fail "junk: no reason"

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP: gnuplot is not installed (Debian: gnuplot-nox)"
    exit 77
fi
"$DTCTL" plot "$tmp/a.jsonl" "$tmp/b.jsonl" -o "$tmp/curves.png" \
    >"$tmp/out" 2>&1 || fail "dtctl plot -o curves.png exited $?"
test -s "$tmp/curves.png" || fail "curves.png is missing or empty"
# The PNG signature: \211PNG
[ "$(head -c 4 "$tmp/curves.png" | od -An -c | tr -d ' ')" = '211PNG' ] ||
    fail "curves.png is not a PNG"
"$DTCTL" plot "$tmp/a.jsonl" --output "$tmp/curves.svg" >"$tmp/out" 2>&1 ||
    fail "dtctl plot -o curves.svg exited $?"
test -s "$tmp/curves.svg" || fail "curves.svg is missing or empty"
grep -q '<svg' "$tmp/curves.svg" || fail "curves.svg is not SVG"
grep -q 'a.jsonl' "$tmp/curves.svg" || fail "the run is not named in the legend"

# dtctl's restart record and a resumed epoch: one run, no warning; then a
# fresh run appended (its step goes back): a curve of its own
{ line 1 1.9 1.5 0.61 0.05 1000.0; line 2 1.2 1.1 0.70 0.1 1100.0
  printf '{"event":"restart","restarts":1,"max_restarts":1,"exit_code":137,"checkpoint":"a/ckpt-000000000020.dtckpt","resume_epoch":2,"time":1}\n'
  line 2 1.1 1.0 0.72 0.1 1150.0; line 3 0.8 0.9 0.80 0.05 1200.0
  line 1 2.2 2.0 0.40 0.05 900.0; line 2 1.9 1.8 0.50 0.05 950.0; } >"$tmp/runs.jsonl"
"$DTCTL" plot "$tmp/runs.jsonl" -o "$tmp/runs.svg" >"$tmp/out" 2>&1 ||
    fail "two runs in one file: exit $?"
grep -q "not a metrics line" "$tmp/out" && fail "dtctl's restart record was called not a metrics line"
grep -q "runs.jsonl:6: the step goes back from 30 to 10 (epoch 1): another run starts there" "$tmp/out" ||
    fail "the second run in one file is not said"
grep -q 'runs.jsonl #2' "$tmp/runs.svg" && grep -q 'runs.jsonl #1' "$tmp/runs.svg" ||
    fail "the two runs are not two curves"
grep -q "2 runs" "$tmp/out" || fail "not 2 runs"

# one epoch at a constant lr: every panel a single value, drawn without
# gnuplot's 'Warning: empty x range' and 'empty y range' (seven lines on
# dtctl's output for the shortest run)
line 1 0.9 0.7 0.75 0.05 1000.0 >"$tmp/one.jsonl"
"$DTCTL" plot "$tmp/one.jsonl" -o "$tmp/one.svg" >"$tmp/out" 2>&1 ||
    fail "a one-epoch run failed the plot (exit $?)"
grep -q '</svg>' "$tmp/one.svg" || fail "one.svg is not complete"
grep -qi "warning" "$tmp/out" && fail "a one-epoch run: gnuplot's warnings passed on"

# a panel with nothing but nulls: drawn empty, the picture complete
{ line 1 1.9 null 0.61 0.05 null; line 2 1.2 null 0.70 0.1 null; } >"$tmp/nulls.jsonl"
"$DTCTL" plot "$tmp/nulls.jsonl" -o "$tmp/nulls.svg" >"$tmp/out" 2>&1 ||
    fail "a column of nulls failed the plot (exit $?)"
grep -q 'throughput (no values)' "$tmp/nulls.svg" || fail "the empty panel is not titled so"
grep -q '</svg>' "$tmp/nulls.svg" || fail "nulls.svg is not complete"
# two runs kept as r1/metrics.jsonl and r2/metrics.jsonl: told apart in
# the legend by their paths, not both "metrics.jsonl"; a line longer
# than any buffer is one line (the next one's number stays right)
mkdir "$tmp/r1" "$tmp/r2"
cp "$tmp/a.jsonl" "$tmp/r1/metrics.jsonl"
{ line 1 2.1 1.8 0.55 0.1 900.0
  printf '{"epoch":2,"step":20,"train_loss":1.4,"pad":"%06000d"}\n' 0
  printf 'junk\n'; } >"$tmp/r2/metrics.jsonl"
"$DTCTL" plot "$tmp/r1/metrics.jsonl" "$tmp/r2/metrics.jsonl" -o "$tmp/same.svg" \
    >"$tmp/out" 2>&1 || fail "two files of one name: exit $?"
grep -q "r1/metrics.jsonl" "$tmp/same.svg" && grep -q "r2/metrics.jsonl" "$tmp/same.svg" ||
    fail "two files of one name are not told apart in the legend"
grep -q "metrics.jsonl:3: not a metrics line" "$tmp/out" && ! grep -q "metrics.jsonl:2: not a metrics line" "$tmp/out" ||
    fail "a long line was split (the warning names the wrong line)"
if "$DTCTL" plot "$tmp/r1" -o "$tmp/dir.svg" >"$tmp/out" 2>&1; then
    fail "a directory was plotted"
fi
grep -q "r1: is a directory" "$tmp/out" || fail "a directory: not said so"
"$DTCTL" plot "$tmp/a.jsonl" -o "$tmp/upper.SVG" >"$tmp/out" 2>&1 ||
    fail "-o upper.SVG (capital extension) was refused"
grep -q '<svg' "$tmp/upper.SVG" || fail "upper.SVG is not SVG"
echo "PASS: plot"
