/* allocation.c — the allocation dtctl runs inside (salloc, sbatch) and
 * the job's -n against it. srun alone starts one task per task of the
 * allocation; dtctl starts -n (by default the host list's slots: 1), and
 * srun refuses a step of more tasks than the allocation holds. Both
 * surprised users coming from srun: a job of one rank in an `sbatch -n 8`
 * script ran without a word, and -n 8 in `salloc -n 2` failed with only
 * srun's "More processors requested than permitted". */
#define _GNU_SOURCE
#include <stdlib.h>

#include <dt/log.h>
#include "slurm.h"

long long slurm_alloc_tasks(void)
{
    const char *t = getenv("SLURM_NTASKS");
    if (!t || !*t)
        t = getenv("SLURM_NPROCS");
    if (!t || !*t)
        return 0;
    char *end = NULL;
    long long n = strtoll(t, &end, 10);
    return *end || n < 1 ? 0 : n;
}

void slurm_say_np_fit(const slurm_launcher_t *L, int np)
{
    long long have = L->inside ? slurm_alloc_tasks() : 0;
    if (have < 1 || np == have)
        return;
    if (np > have)
        /* np: the ranks started, parameter servers included (async) */
        dt_warn("slurm launcher: %d ranks are more than allocation %s holds "
                "(%lld tasks, SLURM_NTASKS): srun refuses such a step unless "
                "it may overcommit; start %lld or fewer (-n, and with "
                "[train] mode = async its servers count too), or allocate "
                "more (salloc -n %d)",
                np, L->alloc_id, have, have, np);
    else if (!L->np_given)
        dt_warn("slurm launcher: %d worker%s in allocation %s, which holds "
                "%lld tasks (SLURM_NTASKS): without -n dtctl starts the host "
                "list's slots, not one worker per task as srun would; give "
                "-n %lld to use them all",
                np, np == 1 ? "" : "s", L->alloc_id, have, have);
}
