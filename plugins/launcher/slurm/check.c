/* check.c — the slurm launcher's preflight for `dtctl check`: Slurm's
 * client tools are on PATH, slurmctld answers, the configured partition
 * exists and is up, and inside an allocation the requested number of
 * ranks fits it. Every problem is reported with how to fix it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/env.h>
#include "../common/jobdir/jobdir.h"
#include "slurm.h"

typedef void (*report_fn)(void *, const char *, const char *);

/* Run argv; its output (malloc'd) or NULL when it failed, with *code. */
static char *run(const char *const *argv, int *code)
{
    char *out = NULL;
    *code = -1;
    if (proc_run(argv, NULL, 30000, &out, code) != DT_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* 1: slurmctld answers. */
static int check_controller(report_fn report, void *arg)
{
    const char *argv[] = {"scontrol", "ping", NULL};
    char msg[1024];
    int code;
    char *out = run(argv, &code);
    int up = out && code == 0 && strstr(out, "is UP");
    if (!up) {
        snprintf(msg, sizeof msg,
                 "slurmctld does not answer (scontrol ping: %.*s): start it "
                 "(systemctl start slurmctld), or point SLURM_CONF at the "
                 "cluster's slurm.conf",
                 out ? (int)strcspn(out, "\n") : 6, out ? out : "failed");
        report(arg, "slurmctld", msg);
    }
    free(out);
    return up;
}

static void check_partition(const char *part, report_fn report, void *arg)
{
    const char *argv[] = {"sinfo", "-h", "-p", part, "-o", "%a", NULL};
    char msg[1024];
    int code;
    char *out = run(argv, &code);
    if (!out || code != 0) {
        snprintf(msg, sizeof msg,
                 "sinfo -p %s failed: %.*s; check that slurmctld answers",
                 part, out ? (int)strcspn(out, "\n") : 0, out ? out : "");
        report(arg, "slurmctld", msg);
    } else if (strspn(out, " \t\r\n") == strlen(out)) {
        snprintf(msg, sizeof msg,
                 "partition '%s' does not exist: fix [launcher.slurm] "
                 "partition (sinfo -s lists the partitions)",
                 part);
        report(arg, "slurmctld", msg);
    } else {
        /* One line per node state; the availability is the same. */
        size_t n = strcspn(out, " \t\r\n");
        if (n != 2 || strncmp(out, "up", 2) != 0) {
            snprintf(msg, sizeof msg,
                     "partition '%s' is %.*s, not up: jobs there wait; use "
                     "another [launcher.slurm] partition, or an admin runs "
                     "scontrol update PartitionName=%s State=UP",
                     part, (int)n, out, part);
            report(arg, "slurmctld", msg);
        }
    }
    free(out);
}

/* Inside an allocation srun can start no more tasks than it holds. */
static void check_allocation(const slurm_launcher_t *L, report_fn report,
                             void *arg)
{
    char msg[512];
    long long have = slurm_alloc_tasks();
    if (have < 1 || L->np <= have)
        return;
    snprintf(msg, sizeof msg,
             "-n %lld does not fit allocation %s, which holds %lld tasks "
             "(SLURM_NTASKS): run with -n %lld or less, or allocate more "
             "(salloc -n %lld)",
             L->np, L->alloc_id, have, have, L->np);
    report(arg, "allocation", msg);
}

dt_status_t slurm_check(void *ctx, const dt_hostlist_t *hosts,
                        report_fn report, void *arg)
{
    (void)hosts; /* Slurm chooses the nodes */
    slurm_launcher_t *L = ctx;
    static const char *const tools[] = {"srun",     "sbatch", "salloc",
                                        "scontrol", "sinfo",  "scancel",
                                        "squeue"};
    char msg[512];
    if (!L || !report)
        return DT_ERR_INVALID;
    int missing = 0;
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++)
        if (!dt_program_found(tools[i])) {
            snprintf(msg, sizeof msg,
                     "'%s' is not on PATH: install the Slurm client "
                     "(Debian: apt install slurm-client) or fix PATH",
                     tools[i]);
            report(arg, "slurm-client", msg);
            missing = 1;
        }
    if (missing)
        return DT_OK; /* the rest needs scontrol and sinfo */
    int up = check_controller(report, arg);
    if (L->inside)
        check_allocation(L, report, arg);
    else if (up && *L->conf.partition)
        check_partition(L->conf.partition, report, arg);
    return DT_OK;
}
