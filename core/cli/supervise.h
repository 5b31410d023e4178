/* supervise.h — watch a launched job until every worker ended: forward
 * output, stop everything on the first failure or on a stop signal
 * (SIGTERM to all, SIGKILL after kill_grace), and decide dtctl's exit
 * code. Never waits without bound. */
#ifndef DT_CLI_SUPERVISE_H
#define DT_CLI_SUPERVISE_H

#include <dt/plugin.h>
#include "output_lines.h"

/* After SIGKILL, give up on workers that still do not end after this. */
#define SUPERVISE_AFTER_KILL_MS 10000

typedef struct supervise_args {
    const dt_launcher_ops_t *ops;
    void *ctx;
    output_lines_t *lines;
    double kill_grace; /* seconds from SIGTERM to SIGKILL */
} supervise_args_t;

/* dtctl's exit code: 0 when every worker succeeded; else the first
 * failure's code (128+signal for a killed worker), 128+signal when dtctl
 * itself was told to stop, 1 when the launcher failed. */
int supervise_job(const supervise_args_t *a);

#endif /* DT_CLI_SUPERVISE_H */
