/* mon.c — follow the ranks of a scheduled job through its job directory:
 * the hosts file, per-rank output files (tailed from the last offset) and
 * exit files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "jobdir.h"

#define READ_CHUNK 65536
/* Reads per file and poll: a worker that writes without pause cannot
 * hold dtctl in one file. */
#define MAX_READS 16

dt_status_t jobdir_mon_init(jobdir_mon_t *m, const char *dir, int np,
                            const char *fallback_host, dt_output_fn output,
                            void *arg)
{
    memset(m, 0, sizeof *m);
    m->np = np;
    m->output = output;
    m->output_arg = arg;
    m->dir = strdup(dir);
    m->fallback_host = strdup(fallback_host ? fallback_host : "?");
    m->ranks = calloc((size_t)np, sizeof *m->ranks);
    m->buf = malloc(READ_CHUNK);
    m->buf_len = READ_CHUNK;
    if (!m->dir || !m->fallback_host || !m->ranks || !m->buf) {
        jobdir_mon_free(m);
        return DT_ERR_NOMEM;
    }
    return DT_OK;
}

void jobdir_mon_free(jobdir_mon_t *m)
{
    for (int r = 0; m->ranks && r < m->np; r++)
        free(m->ranks[r].host);
    free(m->ranks);
    free(m->dir);
    free(m->fallback_host);
    free(m->buf);
    memset(m, 0, sizeof *m);
}

static FILE *open_in_dir(const jobdir_mon_t *m, const char *fmt, int rank)
{
    char name[64], path[4096];
    snprintf(name, sizeof name, fmt, rank);
    snprintf(path, sizeof path, "%s/%s", m->dir, name);
    return fopen(path, "re");
}

/* DIR/hosts appears complete (renamed into place), "RANK HOST" lines. */
static void read_hosts(jobdir_mon_t *m)
{
    FILE *f = open_in_dir(m, "hosts", 0);
    if (!f)
        return;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        int rank;
        char host[256];
        if (sscanf(line, "%d %255s", &rank, host) != 2 || rank < 0 ||
            rank >= m->np || m->ranks[rank].host)
            continue;
        m->ranks[rank].host = strdup(host);
        n++;
    }
    fclose(f);
    m->hosts_known = n > 0 ? n : -1; /* -1: there, but empty or garbled */
    if (n != m->np)
        dt_warn("%s/hosts names %d of %d ranks; the others are reported on "
                "host '%s'",
                m->dir, n, m->np, m->fallback_host);
}

/* Forward what out.R (which 0) or err.R (1) holds past our offset. */
static void forward(jobdir_mon_t *m, int rank, int which)
{
    char name[64], path[4096];
    snprintf(name, sizeof name, which ? "err.%d" : "out.%d", rank);
    snprintf(path, sizeof path, "%s/%s", m->dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    jobdir_rank_t *r = &m->ranks[rank];
    for (int i = 0; i < MAX_READS; i++) {
        ssize_t n = pread(fd, m->buf, m->buf_len, r->off[which]);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        r->off[which] += n;
        if (m->output)
            m->output(m->output_arg, rank, which + 1, m->buf, (size_t)n);
    }
    close(fd);
}

static void read_exit(jobdir_mon_t *m, int rank)
{
    FILE *f = open_in_dir(m, "exit.%d", rank);
    if (!f)
        return;
    int code;
    struct stat st;
    if (fscanf(f, "%d", &code) == 1) {
        jobdir_rank_t *r = &m->ranks[rank];
        r->code = code;
        r->exited = 1;
        r->exit_ns = fstat(fileno(f), &st) == 0
                         ? (long long)st.st_mtim.tv_sec * 1000000000LL +
                               st.st_mtim.tv_nsec
                         : LLONG_MAX;
    }
    fclose(f);
}

int jobdir_mon_poll(jobdir_mon_t *m)
{
    if (!m->hosts_known) {
        read_hosts(m);
        return m->hosts_known != 0; /* the caller may announce the start */
    }
    for (int rank = 0; rank < m->np; rank++) {
        jobdir_rank_t *r = &m->ranks[rank];
        if (r->exited || r->lost)
            continue;
        read_exit(m, rank);
        /* Output written before the exit file is complete once it is
         * there: forward it all before the exit is reported. */
        forward(m, rank, 0);
        forward(m, rank, 1);
        if (r->exited) {
            forward(m, rank, 0);
            forward(m, rank, 1);
        }
    }
    return 0;
}

void jobdir_mon_finish(jobdir_mon_t *m)
{
    if (!m->hosts_known)
        read_hosts(m);
    /* Exit files and output count even where the hosts never became
     * known (a job that failed while starting its workers). */
    for (int rank = 0; rank < m->np; rank++) {
        jobdir_rank_t *r = &m->ranks[rank];
        if (r->exited || r->lost)
            continue;
        read_exit(m, rank);
        forward(m, rank, 0);
        forward(m, rank, 1);
        if (!r->exited)
            r->lost = 1;
    }
}

int jobdir_mon_next(jobdir_mon_t *m, dt_worker_exit_t *ev)
{
    int pending = 0, pick = -1;
    for (int rank = 0; rank < m->np; rank++) {
        const jobdir_rank_t *r = &m->ranks[rank];
        if (r->reported)
            continue;
        if (!r->exited && !r->lost) {
            pending = 1;
            continue;
        }
        /* an exit file before the lost (no file: ended with the job) */
        long long when = r->lost ? LLONG_MAX : r->exit_ns;
        long long best = pick < 0 ? 0
                         : m->ranks[pick].lost ? LLONG_MAX
                                               : m->ranks[pick].exit_ns;
        if (pick < 0 || when < best)
            pick = rank;
    }
    if (pick < 0)
        return pending ? 0 : -1;
    jobdir_rank_t *r = &m->ranks[pick];
    memset(ev, 0, sizeof *ev);
    ev->rank = pick;
    ev->host = r->host ? r->host : m->fallback_host;
    if (r->lost) {
        ev->signaled = 1;
        ev->signo = SIGKILL;
    } else {
        ev->code = r->code;
    }
    r->reported = 1;
    return 1;
}

int jobdir_mon_started(const jobdir_mon_t *m)
{
    return m->hosts_known;
}
