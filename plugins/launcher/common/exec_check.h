/* exec_check.h — the shell function that says why a rank's program
 * cannot be started on its host (not found in PATH, no such file, not
 * executable, a directory) with the rank, the host and what to do, before
 * the exec whose own words name neither ("setpriv: failed to execute
 * X", "exec: X: not found"). One line, no newline: the ssh launcher's
 * bootstrap reads its script as one line; the mpi/slurm prologue embeds
 * it too. Not a printf format: pass it as an argument. Returns 0, or
 * 127 (not found) / 126 (cannot run), as a shell would exit. */
#ifndef DT_LAUNCHER_EXEC_CHECK_H
#define DT_LAUNCHER_EXEC_CHECK_H

#define DT_EXEC_CHECK_FN                                                     \
    "dt_cannot_exec() { dt_es=0; case ${1-} in '') ;; "                      \
    "*/*) if [ -d \"$1\" ]; then dt_es=126 dt_ew='it is a directory'; "      \
    "elif [ ! -e \"$1\" ]; then dt_es=127 dt_ew=\"no such file (the "        \
    "workers' directory there is $(pwd)): the path must exist on every "     \
    "host of the job\"; elif [ ! -x \"$1\" ]; then dt_es=126 "               \
    "dt_ew='permission denied: make it executable (chmod +x; or its file "   \
    "system is mounted noexec), or start it with its interpreter "           \
    "(-- python3 FILE)'; fi;; "                                              \
    "*) command -v -- \"$1\" >/dev/null 2>&1 || { dt_es=127; dt_ew=\"command " \
    "not found in PATH=$PATH: install it there, or give its full path\"; "   \
    "};; esac; [ $dt_es = 0 ] || printf 'dt: error: rank %s on %s: cannot "  \
    "execute \\047%s\\047: %s\\n' \"${DT_RANK-?}\" "                          \
    "\"${DT_HOST:-$(uname -n)}\" \"$1\" \"$dt_ew\" >&2; return $dt_es; }"

#endif
