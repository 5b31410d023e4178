/* slurm_lines.c — what salloc and srun print themselves:
 *   salloc: Granted job allocation 42   (also "Pending job allocation")
 *   srun: error: node1: task 3: Exited with exit code 7
 * The job id is what scancel needs; a task's exit is a fallback for a
 * rank whose prologue could not report. */
#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "slurm.h"

int slurm_on_line(void *arg, frontend_t *fe, int fd, const char *line)
{
    slurm_launcher_t *L = arg;
    (void)fd;
    unsigned long id;
    const char *p;
    if ((p = strstr(line, "job allocation ")) &&
        sscanf(p, "job allocation %lu", &id) == 1 && !L->alloc_id[0]) {
        snprintf(L->alloc_id, sizeof L->alloc_id, "%lu", id);
        dt_debug("slurm launcher: job %s", L->alloc_id);
    }
    /* salloc's progress: in dt's log, not among the job's output */
    if (strncmp(line, "salloc: ", 8) == 0 &&
        (strstr(line, "Granted job allocation") ||
         strstr(line, "Relinquishing job allocation") ||
         strstr(line, "has been revoked") ||
         strstr(line, "Nodes ") || strstr(line, "Waiting for resource"))) {
        dt_debug("slurm launcher: %s", line);
        return 1;
    }
    if (strncmp(line, "salloc: ", 8) == 0 &&
        strstr(line, "Pending job allocation")) {
        dt_info("slurm: %s (waiting for the scheduler)", line + 8);
        return 1;
    }
    char host[256];
    int task, code;
    if ((p = strstr(line, "srun: error: ")) &&
        sscanf(p, "srun: error: %255[^:]: task %d: Exited with exit code %d",
               host, &task, &code) == 3)
        frontend_add_exit(fe, task, host, code);
    return 0;
}
