#!/bin/sh
# launcher_yarn.sh — the yarn launcher against a STAND-IN ResourceManager.
#
# Plainly: this is NOT Hadoop. No Hadoop or YARN exists in Debian and
# nothing can be downloaded, so tests/fixtures/yarn-rm-standin.py serves
# the ResourceManager REST endpoints the launcher uses (new-application,
# submit, application report, application state / kill) with the request
# and response shapes of the Hadoop docs, and plays the distributed-shell
# ApplicationMaster: it really starts the containers as local processes.
# Checks: submission, the worker environment contract, per-rank output,
# the token in no argv and not in the submission, failure propagation
# (code, rank, host; the application killed; nothing left), a restart
# (--max-restarts: a new application), SIGINT kills
# the application, rejected submissions explained.
set -u

: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
: "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-yarn.XXXXXX") || exit 99
MARK="dtyarntest$$"
RM_PID=
cleanup() {
    [ -n "$RM_PID" ] && kill "$RM_PID" 2>/dev/null && wait "$RM_PID" 2>/dev/null
    pkill -KILL -f "$MARK" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

if ! "$DTCTL" plugins | awk '$1 == "launcher" && $2 == "yarn"' | grep -q available; then
    echo "SKIP: the yarn launcher is not built (it needs libcurl and jansson: apt-get install libcurl4-openssl-dev libjansson-dev)"
    exit 77
fi
transports=$("$DTCTL" plugins | awk '$1 == "transport" && $4 == "available" { print $2 }')
if [ -z "$transports" ]; then
    echo "SKIP: no transport plugin is built, so dtctl run cannot start"
    exit 77
fi
if echo "$transports" | grep -qx tcp; then TR=""; else
    TR="--transport=$(echo "$transports" | head -n 1)"
fi
command -v python3 >/dev/null || { echo "SKIP: python3 (for the ResourceManager stand-in) is not installed"; exit 77; }

mkdir "$T/rm" "$T/shared"
python3 "$top_srcdir/tests/fixtures/yarn-rm-standin.py" --port-file "$T/port" \
    --work "$T/rm" --queues default,gpu --max-memory 4096 --max-vcores 8 &
RM_PID=$!
for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || { echo "ERROR: the ResourceManager stand-in (ours) did not start"; exit 99; }
RM="http://127.0.0.1:$(cat "$T/port")"
echo "ResourceManager STAND-IN (not Hadoop) at $RM"

export DT_LAUNCHER_YARN_RM_URL="$RM" DT_LAUNCHER_YARN_SHARED_DIR="$T/shared"
export DT_LAUNCHER_YARN_POLL_INTERVAL=100ms DT_CLUSTER_KILL_GRACE=2s
run() { timeout -k 5 120 "$DTCTL" run $TR --launcher=yarn "$@"; }
# A worker that exec'ed sleep has lost the marker from its argv: its
# sleep carries this test's PID instead (sleep 100.PID).
leftovers() { pgrep -f "$1" >/dev/null 2>&1 || pgrep -f "sleep 100\\.$$\$" >/dev/null 2>&1; }
# YARN answers a kill with 202 Accepted and changes state afterwards (the
# stand-in does the same): wait, bounded, for the state a test expects.
state_becomes() { # WANT -> 0 once the state is WANT, 1 after ~10 s
    i=0
    while [ $i -lt 100 ]; do
        [ "$(app_state)" = "$1" ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
app_state() { # the stand-in's view of the last application
    python3 - "$RM" "$T/rm" <<'PY'
import glob, json, os, sys, urllib.request
ids = sorted(os.path.basename(p)[:-5] for p in glob.glob(sys.argv[2] + "/application_*.json"))
app = json.load(urllib.request.urlopen(sys.argv[1] + "/ws/v1/cluster/apps/" + ids[-1]))["app"]
print(app["state"], app["finalStatus"])
PY
}


# --- 1. submission and the worker environment contract -------------------
run -n 3 --set launcher.yarn.queue=gpu --set launcher.yarn.memory=2G --set launcher.yarn.vcores=2 -- \
    sh -c 'echo "R=$DT_RANK/$DT_WORLD_SIZE L=$DT_LOCAL_RANK/$DT_LOCAL_SIZE N=$DT_NODE_RANK/$DT_NUM_NODES H=$DT_HOST T=$RANK,$WORLD_SIZE,$LOCAL_RANK,$LOCAL_WORLD_SIZE,$GROUP_RANK,$GROUP_WORLD_SIZE,$ROLE_RANK M=$MASTER_ADDR ID=$DT_JOB_ID TL=${#DT_JOB_TOKEN} RZ=${DT_RENDEZVOUS:+set} C=${CONTAINER_ID:+yes} PWD=$(pwd)"; echo "e$DT_RANK" >&2' \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] || fail "3-container job exited $rc: $(cat "$T/e")"
for r in 0 1 2; do
    grep -q "^\[$r\] R=$r/3 L=$r/3 N=0/1 H=localhost T=$r,3,$r,3,0,1,$r M=localhost ID=[0-9a-f]* TL=64 RZ=set C=yes PWD=$(pwd)\$" "$T/o" \
        || fail "rank $r: environment wrong or missing: $(cat "$T/o")"
    grep -qx "\[$r\] e$r" "$T/e" || fail "rank $r: stderr line missing"
done
[ "$(wc -l <"$T/o")" -eq 3 ] || fail "want 3 stdout lines: $(cat "$T/o")"
sub=$(ls "$T/rm"/application_*.json | tail -n 1)
python3 - "$sub" <<'PY' || fail "submission context not as documented: $(cat "$sub")"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["queue"] == "gpu", c["queue"]
assert c["max-app-attempts"] == 1 and c["unmanaged-AM"] is False
cmd = c["am-container-spec"]["commands"]["command"]
assert "distributedshell.ApplicationMaster" in cmd and "--num_containers 3" in cmd, cmd
assert "--container_memory 2048" in cmd and "--container_vcores 2" in cmd, cmd
keys = [e["key"] for e in c["am-container-spec"]["local-resources"]["entry"]]
assert sorted(keys) == ["shellArgs", "shellCommands"], keys
PY
state_becomes "FINISHED SUCCEEDED" || fail "application state: $(app_state)"
[ -z "$(ls -A "$T/shared")" ] || fail "job directory left behind: $(ls -A "$T/shared")"
ok "submission, environment, per-rank output, FINISHED/SUCCEEDED"

# --- 2. the token: in no argv, not in the submission context -------------
run -n 2 -- sh -c 'ps -eo args >"$0.ps.$DT_RANK"; echo "$DT_JOB_TOKEN" >"$0.tok.$DT_RANK"' "$T/$MARK" \
    >"$T/o" 2>"$T/e" || fail "token job failed: $(cat "$T/e")"
tok=$(cat "$T/$MARK.tok.0" 2>/dev/null)
[ ${#tok} -eq 64 ] && [ "$tok" = "$(cat "$T/$MARK.tok.1")" ] || fail "token missing or different between ranks"
grep -q "$MARK" "$T/$MARK.ps.0" || fail "ps snapshot missed the job"
if [ -n "$tok" ] && grep -q "$tok" "$T/$MARK.ps.0" "$T/$MARK.ps.1" "$T/rm"/*.json "$T/rm/access.log" "$T/o" "$T/e"; then
    fail "the job token is visible in ps, the submission or dtctl's output"
fi
ok "token not in argv, submission or logs"

# --- 3. failure: code, rank, host; the application killed; nothing left --
run -n 3 -- sh -c 'if [ $DT_RANK = 1 ]; then sleep 0.5; exit 4; fi; exec sleep "100.$1"' "$MARK-fail" "$$" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 4 ] || fail "want exit 4 from rank 1, got $rc: $(cat "$T/e")"
grep -q "rank 1 on localhost exited with code 4" "$T/e" || fail "error does not name rank 1 and host: $(cat "$T/e")"
grep -q "^PUT /ws/v1/cluster/apps/application_[0-9_]*/state" "$T/rm/access.log" || fail "the application was not killed"
state_becomes "KILLED KILLED" || fail "application state after the failure: $(app_state)"
if leftovers "$MARK-fail"; then fail "containers left: $(pgrep -fa "$MARK-fail")"; fi
ok "failure: exit code, rank and host, application KILLED, nothing left"

# --- 3b. restart (--max-restarts): a new application, new containers -----
P='[ "$DT_RESTART_COUNT" -ge 1 ] || { [ "$DT_RANK" = 1 ] && exit 3; }; echo "ok-$DT_RANK-$DT_RESTART_COUNT"'
napps=$(ls "$T/rm"/application_*.json | wc -l)
run -n 2 --max-restarts 1 --set cluster.restart_backoff=100ms -- sh -c "$P" \
    >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 0 ] && grep -q "restart 1 of 1: rank 1 on localhost exited with code 3" "$T/e" &&
    grep -qx '\[0\] ok-0-1' "$T/o" && grep -qx '\[1\] ok-1-1' "$T/o" &&
    [ "$(ls "$T/rm"/application_*.json | wc -l)" -eq $((napps + 2)) ] ||
    fail "restart under YARN: rc=$rc, $(ls "$T/rm"/application_*.json | wc -l) applications (had $napps): $(cat "$T/o" "$T/e")"
state_becomes "FINISHED SUCCEEDED" || fail "application state after the restart: $(app_state)"
ok "restart 1 of 1 after rank 1 exited 3: a second application's containers ran both ranks"

# --- 4. SIGINT kills the application ---------------------------------------
"$DTCTL" run $TR --launcher=yarn -n 2 -- sh -c 'echo up; exec sleep "100.$1"' "$MARK-int" "$$" >"$T/o" 2>"$T/e" &
bg=$!
for i in $(seq 300); do [ "$(grep -c up "$T/o")" -eq 2 ] && break; sleep 0.1; done
[ "$(grep -c up "$T/o")" -eq 2 ] || fail "SIGINT test: containers did not start: $(cat "$T/e")"
kill -INT $bg
( sleep 60; kill -KILL $bg 2>/dev/null ) & guard=$!
wait $bg; rc=$?
kill $guard 2>/dev/null
[ $rc -eq 130 ] || fail "SIGINT: want exit 130, got $rc: $(cat "$T/e")"
state_becomes "KILLED KILLED" || fail "application state after SIGINT: $(app_state)"
if leftovers "$MARK-int"; then fail "containers left after SIGINT: $(pgrep -fa "$MARK-int")"; fi
ok "SIGINT kills the application, nothing left"

# --- 5. rejected submissions are explained ---------------------------------
run -n 2 --set launcher.yarn.queue=nosuchqueue -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 127 ] && grep -q "rejected application .*unknown queue: nosuchqueue" "$T/e" \
    || fail "unknown queue: rc=$rc $(cat "$T/e")"
run -n 2 --set launcher.yarn.memory=16G -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 127 ] && grep -q "16384 MiB .* at most 4096 MiB" "$T/e" || fail "too much memory: rc=$rc $(cat "$T/e")"
# refused before submitting: nothing to kill (it used to poll and kill the
# never-submitted id for 30 s)
grep -q "killing application\|not KILLED" "$T/e" && fail "too much memory: dtctl tried to kill an application never submitted: $(cat "$T/e")"
run -n 2 --set launcher.yarn.rm_url=http://127.0.0.1:1 -- true >"$T/o" 2>"$T/e"; rc=$?
[ $rc -eq 127 ] && grep -q "rm_url" "$T/e" || fail "unreachable RM: rc=$rc $(cat "$T/e")"
ok "rejected submissions"

# --- 6. a real dt job, when the example is built ---------------------------
if [ -x "$top_builddir/examples/allreduce" ]; then
    run -n 3 -- "$top_builddir/examples/allreduce" >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 0 ] || fail "examples/allreduce under the YARN stand-in exited $rc: $(tail -5 "$T/e")"
    ok "examples/allreduce, 3 containers"
else
    echo "note: examples/allreduce is not built; skipped the dt job check"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all launcher_yarn checks passed (against the ResourceManager stand-in)"
