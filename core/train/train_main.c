/* train_main.c — dt-train, the worker program of dt's built-in trainer.
 * `dtctl run JOB.ini` starts it on every worker; its whole configuration
 * arrives in the environment (DT_TRAIN_*, DT_MODEL_*, DT_DATA_*, ...), as
 * dtctl resolved it from files and options.
 *
 *   dt-train [JOB.ini]   (a job file given here is read below the
 *                         environment; handy for a single worker)
 *   dt-train --gpus      this host's GPUs, driver and CUDA library
 *                         versions, one fact per line (dtctl check)
 *
 * Exit status: 0 trained, 1 failed (the reason is logged), 65
 * (DT_TRAIN_EXIT_FINAL) failed in a way a restart repeats (diverged, a
 * configuration error, a model too large for the host's memory, a data
 * set in a wrong format or layout, an image that does not decode met by
 * decode = loader: dtctl does not restart it), 75
 * (DT_TRAIN_EXIT_PREEMPTED) preempted by SIGTERM or SIGUSR1 after every
 * rank wrote its checkpoint: rerun with --resume. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "cli/std_fds.h"
#include "nn/gpu_inventory.h"
#include "train.h"

extern char **environ;

/* Test hook (tests/linger_after_finalize.sh): DT_TEST_STOP_AFTER_FINALIZE
 * = r stops rank r (SIGSTOP) once dt_finalize returned: a rank stuck in
 * its teardown after training ended everywhere. */
static void stop_after_finalize(void)
{
    const char *r = getenv("DT_TEST_STOP_AFTER_FINALIZE");
    const char *me = getenv("DT_RANK");
    if (!r || !*r || !me || strcmp(r, me) != 0)
        return;
    fprintf(stderr, "dt-train: rank %s (pid %d) stops (SIGSTOP) after "
                    "dt_finalize (DT_TEST_STOP_AFTER_FINALIZE, a test hook)\n",
            me, (int)getpid());
    raise(SIGSTOP);
}

int main(int argc, char **argv)
{
    dt_config_t *cfg = NULL;
    if (dt_std_fds_open() != 0) {
        fprintf(stderr, "dt-train: cannot open /dev/null for a closed "
                        "stdin, stdout or stderr: %s\n", strerror(errno));
        return 1;
    }
    if (argc == 2 && strcmp(argv[1], "--gpus") == 0) {
        dt_gpu_inventory_t inv;
        dt_gpu_inventory(&inv);
        dt_gpu_inventory_print(stdout, &inv);
        return 0;
    }
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: dt-train [JOB.ini]  (normally started by "
                        "dtctl run JOB.ini)\n"
                        "       dt-train --gpus     (this host's GPUs and "
                        "CUDA libraries)\n");
        return 2;
    }
    if (dt_config_new(&cfg) != DT_OK ||
        (argc == 2 &&
         dt_config_load_file(cfg, argv[1], DT_SRC_JOB_FILE) != DT_OK) ||
        dt_config_load_env(cfg, environ) != DT_OK) {
        dt_config_free(cfg);
        return 1;
    }
    if (dt_init() != DT_OK) {
        dt_config_free(cfg);
        return 1;
    }
    dt_status_t st = dt_train_run(cfg, NULL);
    /* After a failure peers may be stuck in a collective: leave at once
     * (dtctl stops the others) rather than wait for them in finalize. */
    if (st == DT_OK)
        st = dt_finalize();
    stop_after_finalize();
    dt_config_free(cfg);
    if (st == DT_ERR_INTERRUPTED)
        return DT_TRAIN_EXIT_PREEMPTED;
    if (st == DT_ERR_DIVERGED || st == DT_ERR_CONFIG ||
        st == DT_ERR_BAD_DATA)
        return DT_TRAIN_EXIT_FINAL;
    return st == DT_OK ? 0 : 1;
}
