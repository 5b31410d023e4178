/* sweep.c — after a job that did not end cleanly, kill what is left of it
 * on the other hosts. mpirun's daemons (orted) should end their ranks when
 * mpirun aborts or dies, but an orted that is itself killed mid-abort (its
 * ssh session ends with mpirun after kill_grace) leaves its ranks running:
 * seen under a loaded sanitizer make check, one worker and its children
 * outlived the job on a namespace host. So dtctl goes to each remote host
 * through mpirun's own rsh agent (run_on_host) and kills every process
 * whose environment carries this job's DT_JOB_ID. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/hosts.h>
#include "mpi_types.h"
#include "run_on_host.h"
#include "sweep.h"

/* Every process with DT_JOB_ID=<id> in its environment, SIGKILLed; the
 * shell running this has no DT_JOB_ID (run_on_host's environment is
 * dtctl's minus the job's variables), so it never matches itself. */
#define SWEEP_SCRIPT                                                       \
    "for d in /proc/[0-9]*; do "                                          \
    "tr '\\000' '\\n' <\"$d/environ\" 2>/dev/null | "                     \
    "grep -qx \"DT_JOB_ID=$0\" && kill -KILL \"${d#/proc/}\" 2>/dev/null; " \
    "done; exit 0"

static int job_id_ok(const char *id)
{
    if (!id || !*id || strlen(id) > 64)
        return 0;
    return strspn(id, "0123456789abcdefABCDEF") == strlen(id);
}

void mpi_sweep_remote(mpi_launcher_t *L)
{
    if (!L->hosts.n || !job_id_ok(L->job_id))
        return;
    dt_debug("mpi launcher: the job did not end cleanly: killing what is "
             "left of job %s on the other hosts",
             L->job_id);
    const char *argv[] = {"sh", "-c", SWEEP_SCRIPT, L->job_id, NULL};
    for (size_t i = 0; i < L->hosts.n; i++) {
        const dt_host_t *h = &L->hosts.hosts[i];
        if (dt_host_is_local(h->name))
            continue;
        char *out = NULL;
        int code = 0;
        if (mpi_run_on_host(L, h, argv, &out, &code) != DT_OK || code != 0)
            dt_warn("mpi launcher: could not clean up job %s on %s (%s): "
                    "check for leftover workers there",
                    L->job_id, h->name, out && *out ? out : "no output");
        else
            dt_debug("mpi launcher: swept job %s on %s", L->job_id,
                     h->name);
        free(out);
    }
}
