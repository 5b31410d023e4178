/* stg_hosts.c — visit every host with at most N at a time: threads that
 * take the next host from a shared counter. */
#include <pthread.h>
#include <stdlib.h>

#include <dt/log.h>
#include "stg.h"

typedef struct pool {
    const dt_hostlist_t *hosts;
    stg_host_fn fn;
    void *arg;
    pthread_mutex_t mu;
    size_t next;
    dt_status_t first_err;
} pool_t;

static void *worker(void *p_)
{
    pool_t *p = p_;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->hosts->n)
            return NULL;
        dt_status_t st = p->fn(p->arg, i, &p->hosts->hosts[i]);
        if (st != DT_OK) {
            pthread_mutex_lock(&p->mu);
            if (p->first_err == DT_OK)
                p->first_err = st;
            pthread_mutex_unlock(&p->mu);
        }
    }
}

dt_status_t stg_for_each_host(const dt_hostlist_t *hosts, int max_parallel,
                              stg_host_fn fn, void *arg)
{
    if (!hosts || hosts->n == 0)
        return DT_OK;
    pool_t p = {hosts, fn, arg, PTHREAD_MUTEX_INITIALIZER, 0, DT_OK};
    size_t nt = max_parallel < 1 ? 1 : (size_t)max_parallel;
    if (nt > hosts->n)
        nt = hosts->n;
    pthread_t *t = calloc(nt, sizeof *t);
    if (!t)
        return DT_ERR_NOMEM;
    size_t started = 0;
    for (; started < nt; started++)
        if (pthread_create(&t[started], NULL, worker, &p) != 0)
            break;
    if (started == 0) /* no thread at all: do the work here */
        worker(&p);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    pthread_mutex_destroy(&p.mu);
    return p.first_err;
}
