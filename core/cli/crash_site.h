/* crash_site.h — which plugin op each rank said it crashed in, so that
 * dtctl's closing line names it ("rank 1 on h1 was killed by signal 11
 * (Segmentation fault) in optimizer plugin 'x', in its op step()"), not
 * only the signal. The rank's fault handler writes one line
 * (plugin/crash_line.h); dtctl reads it here as it passes the rank's
 * output on (output_lines_set_watch). The output, not a side channel: a
 * process dying of a fault can safely do no more than write(2) to its
 * stderr, and that comes back through every launcher (local, ssh, mpi,
 * slurm, ...) tagged with its rank. */
#ifndef DT_CLI_CRASH_SITE_H
#define DT_CLI_CRASH_SITE_H

#include <stddef.h>
#include <dt/status.h>

typedef struct crash_sites crash_sites_t;

/* For ranks 0..np-1. */
dt_status_t crash_sites_new(int np, crash_sites_t **out);
/* One whole line rank wrote (without its newline), shaped as
 * output_lines' watch: a crash report is kept, anything else ignored. */
void crash_sites_see(void *arg, int rank, const char *line, size_t len);
/* What rank reported: "optimizer plugin 'x', in its op step()", when its
 * report names signo (the signal it then died of); else NULL. */
const char *crash_sites_of(const crash_sites_t *c, int rank, int signo);
/* Forget every report (a new attempt numbers its ranks anew). */
void crash_sites_clear(crash_sites_t *c);
void crash_sites_free(crash_sites_t *c);

#endif /* DT_CLI_CRASH_SITE_H */
