#!/bin/sh
# launcher_available.sh — what the scheduler launchers read alike from
# the SDK and launcher/common: whether their client programs are on PATH
# (dt_program_found, dt/env.h: each launcher's `available` op, seen in
# `dtctl plugins`) and a duration key outside 1ms..24h refused by name
# (jobdir_conf_ms: sge and yarn). No scheduler runs: PATH holds every tool
# of this machine but the schedulers' clients, then stand-ins that fail.
set -u
: "${DTCTL:?DTCTL must point at dtctl (set by make check)}"
T=$(mktemp -d "${TMPDIR:-/tmp}/dt-avail.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
unset DT_LAUNCHER DT_CLUSTER_LAUNCHER DT_LAUNCHER_MPI_MPIRUN 2>/dev/null

clients="qsub qdel srun salloc scancel squeue mpirun"
mkdir "$T/bin"
for f in /usr/local/bin/* /usr/bin/* /bin/*; do
    case " $clients " in *" ${f##*/} "*) continue ;; esac
    [ -e "$T/bin/${f##*/}" ] || ln -s "$f" "$T/bin/${f##*/}"
done
# "available" or "unavailable", as `dtctl plugins` says for launcher $1.
state() {
    PATH=$T/bin "$DTCTL" plugins 2>/dev/null |
        awk -v n="$1" '$1 == "launcher" && $2 == n { print $4 }'
}
for l in sge slurm mpi; do
    [ -n "$(state $l)" ] || { echo "SKIP: the $l launcher is not built"; exit 77; }
done

# Each named launcher is in state $1; $2 says in what situation.
expect() {
    want=$1 situation=$2
    shift 2
    for l in "$@"; do
        s=$(state "$l")
        [ "$s" = "$want" ] || fail "$l is '$s' $situation"
    done
}

expect unavailable "without its clients on PATH" sge slurm mpi
ok "sge, slurm and mpi are unavailable without their clients on PATH"

for c in $clients; do
    printf '#!/bin/sh\necho "stand-in %s: no scheduler here" >&2\nexit 1\n' \
        "$c" >"$T/bin/$c"
    chmod 755 "$T/bin/$c"
done
expect available "with every client on PATH" sge slurm mpi
ok "sge, slurm and mpi are available with their clients on PATH"

chmod 644 "$T/bin/qsub" "$T/bin/srun"
expect unavailable "with qsub and srun not executable" sge slurm
expect available "though mpirun is there" mpi
ok "a client that is not executable does not count"
chmod 755 "$T/bin/qsub" "$T/bin/srun"

# mpirun named by path ([launcher.mpi] mpirun): PATH plays no part.
mv "$T/bin/mpirun" "$T/mpirun"
expect unavailable "with mpirun off PATH" mpi
export DT_LAUNCHER_MPI_MPIRUN="$T/mpirun"
expect available "with mpirun given by path" mpi
unset DT_LAUNCHER_MPI_MPIRUN
ok "an mpirun given by path is found off PATH"

for l in sge yarn; do
    [ -n "$(state $l)" ] || continue # yarn: built with libcurl and jansson
    PATH=$T/bin "$DTCTL" run --launcher=$l \
        --set launcher.$l.poll_interval=48h --np 1 -- true \
        >"$T/o" 2>"$T/e"; rc=$?
    [ $rc -eq 1 ] &&
        grep -q "\[launcher.$l\] poll_interval must be between 1ms and 24h" "$T/e" ||
        fail "$l: poll_interval=48h: rc=$rc: $(cat "$T/o" "$T/e")"
done
ok "sge and yarn refuse a poll_interval beyond 24h by name (exit 1)"

[ $fails -eq 0 ] || exit 1
exit 0
