/* plan_input.c — dtctl plan's data wait: the job's input pipeline timed
 * on this host (dt_train_input_rate), one worker's loaders alone.
 *
 * The loaders prepare the next batches while the step computes, so a
 * step cannot be shorter than the time they need for a batch; with
 * loader_threads = 0 the step gathers its batch itself and the time adds
 * to every step. Timed here, it is this host's CPU: a cluster's hosts
 * with other CPUs, or G workers sharing one host's cores, load at another
 * rate; --data-wait T replaces the measurement. */
#include "config.h"

#include <stdio.h>

#include <dt/log.h>
#include "plan_cli.h"

#define SECONDS 0.5 /* timed, after the data set loads and a warm-up */

int plan_measure_input(const dt_config_t *cfg, const char *job, size_t batch,
                       dt_train_input_rate_t *out)
{
    dt_status_t st = dt_train_input_rate(cfg, batch, SECONDS, out);
    if (st == DT_OK)
        return 0;
    dt_warn("plan: %s: its input pipeline could not be timed here (%s, "
            "above): the plan assumes its loaders keep up with every step; "
            "--data-wait T adds a known wait per step", job,
            dt_status_str(st));
    return -1;
}

void plan_print_input(const dt_train_input_rate_t *in)
{
    if (in->threads > 0)
        printf("# input: %d loader thread%s, %.3f ms a batch of %zu "
               "(%.0f samples/s a worker), timed here: a step shorter than "
               "that waits for its data (--data-wait T replaces it)\n",
               in->threads, in->threads == 1 ? "" : "s",
               in->batch_seconds * 1e3, in->batch, in->samples_per_sec);
    else
        printf("# input: loader_threads = 0, the step gathers its batch of "
               "%zu itself: %.3f ms added to every step, timed here "
               "(--data-wait T replaces it)\n",
               in->batch, in->batch_seconds * 1e3);
}
