/* test_coll_hier_names.c — a hierarchical allreduce (2 "hosts" x 2 ranks:
 * threads of this process told apart by bind address, a real store, real
 * /dev/shm segments, the in-process transport across "hosts") names the
 * job's ranks when a rank of the second host hangs: rank 3, found by rank
 * 2, in the messages and in the job's failure record — not the host's
 * local indexes (rank 1, found by rank 0), which put the blame on a
 * healthy rank of the other host. And a second setup in the same job
 * (dt_finalize, then dt_init) builds the hierarchy again: it read the
 * first setup's agreement counts and fell back to the flat algorithms. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dt/log.h>
#include <dt/store.h>
#include "coll/coll.h"
#include "coll/coll_host.h"
#include "inproc_transport.h"
#include "stderr_capture.h"

#define RANKS 4

static uint8_t token[DT_TOKEN_BYTES];
static char rdv[64];
static inproc_world_t *world;
/* Rank 3 (the hung one) holds its segment open until the others are
 * done: a hung rank, not a dead one. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int finished;

typedef struct {
    int rank, hier;
    dt_status_t st;
} rank_arg_t;

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    dt_store_t *store = NULL;
    a->st = dt_store_connect(rdv, token, 10.0, &store);
    dt_comm_t c = {.ops = &inproc_ops, .ctx = inproc_rank_ctx(world, a->rank),
                   .rank = a->rank, .size = RANKS, .timeout_ms = 2000,
                   .hier_bytes = 0};
    dt_comm_hosts_args_t ha = {.store = store,
                               .bind_addr = a->rank < 2 ? "10.9.9.1"
                                                        : "10.9.9.2",
                               .local_size = 2, .timeout = 1.0};
    if (a->st == DT_OK)
        a->st = dt_comm_setup_hosts(&c, NULL, &ha);
    a->hier = c.host != NULL;
    if (a->st == DT_OK && a->rank != 3) {
        float x[64] = {0};
        a->st = dt_coll_allreduce(&c, x, x, 64, DT_FLOAT32, DT_SUM);
        pthread_mutex_lock(&mu);
        finished++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    } else {
        pthread_mutex_lock(&mu);
        while (finished < RANKS - 1)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    }
    dt_comm_release(&c);
    dt_store_close(store);
    return NULL;
}

static void test_hung_rank_named_by_job_rank(void **state)
{
    (void)state;
    assert_int_equal(inproc_world_new(RANKS, &world), DT_OK);
    capture_t cap;
    capture_begin(&cap);
    pthread_t th[RANKS];
    rank_arg_t arg[RANKS];
    for (int r = 0; r < RANKS; r++) {
        arg[r] = (rank_arg_t){.rank = r};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &arg[r]), 0);
    }
    for (int r = 0; r < RANKS; r++)
        pthread_join(th[r], NULL);
    char *log = capture_end(&cap);
    for (int r = 0; r < RANKS; r++)
        if (!arg[r].hier)
            fail_msg("rank %d did not set up the hierarchy; log:\n%s", r,
                     log);
    assert_int_not_equal(arg[2].st, DT_OK);
    if (!strstr(log, "rank 3 went silent") ||
        strstr(log, "rank 1 went silent"))
        fail_msg("the hung rank should be named as rank 3; log:\n%s", log);
    free(log);
    dt_store_t *store = NULL;
    int culprit = -1, detector = -1;
    char how[DT_CULPRIT_HOW_MAX] = "";
    assert_int_equal(dt_store_connect(rdv, token, 10.0, &store), DT_OK);
    assert_int_equal(
        dt_store_culprit_get(store, 1.0, &culprit, &detector, how), DT_OK);
    dt_store_close(store);
    assert_int_equal(culprit, 3);
    assert_int_equal(detector, 2);
    assert_string_equal(how, "hung");
    inproc_world_free(world);
}

typedef struct {
    int rank, hier[2];
    dt_status_t st;
} again_arg_t;

static void *again_main(void *p)
{
    again_arg_t *a = p;
    for (int round = 0; round < 2; round++) {
        dt_store_t *store = NULL;
        a->st = dt_store_connect(rdv, token, 10.0, &store);
        dt_comm_t c = {.ops = &inproc_ops,
                       .ctx = inproc_rank_ctx(world, a->rank),
                       .rank = a->rank, .size = RANKS, .timeout_ms = 5000,
                       .hier_bytes = 0};
        dt_comm_hosts_args_t ha = {.store = store,
                                   .bind_addr = a->rank < 2 ? "10.9.8.1"
                                                            : "10.9.8.2",
                                   .local_size = 2, .timeout = 5.0};
        if (a->st == DT_OK)
            a->st = dt_comm_setup_hosts(&c, NULL, &ha);
        a->hier[round] = c.host != NULL;
        float x[64];
        for (int i = 0; i < 64; i++)
            x[i] = (float)(a->rank + i);
        if (a->st == DT_OK)
            a->st = dt_coll_allreduce(&c, x, x, 64, DT_FLOAT32, DT_SUM);
        if (a->st == DT_OK && x[5] != (float)(0 + 1 + 2 + 3 + 4 * 5))
            a->st = DT_ERR_INTERNAL;
        dt_comm_release(&c);
        dt_store_close(store);
        if (a->st != DT_OK)
            return NULL;
    }
    return NULL;
}

static void test_second_setup_in_a_job(void **state)
{
    (void)state;
    assert_int_equal(inproc_world_new(RANKS, &world), DT_OK);
    pthread_t th[RANKS];
    again_arg_t arg[RANKS];
    for (int r = 0; r < RANKS; r++) {
        arg[r] = (again_arg_t){.rank = r};
        assert_int_equal(pthread_create(&th[r], NULL, again_main, &arg[r]),
                         0);
    }
    for (int r = 0; r < RANKS; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(arg[r].st, DT_OK);
        if (!arg[r].hier[0] || !arg[r].hier[1])
            fail_msg("rank %d: hierarchy in the first setup %d, in the "
                     "second %d (want both)", r, arg[r].hier[0],
                     arg[r].hier[1]);
    }
    inproc_world_free(world);
}

int main(void)
{
    dt_store_server_t *srv = NULL;
    if (dt_token_generate(token) != DT_OK ||
        dt_store_server_start("127.0.0.1", 0, token, &srv) != DT_OK) {
        fprintf(stderr, "cannot start a rendezvous store\n");
        return 1;
    }
    snprintf(rdv, sizeof rdv, "127.0.0.1:%d", dt_store_server_port(srv));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_setup_in_a_job),
        cmocka_unit_test(test_hung_rank_named_by_job_rank),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_store_server_stop(srv);
    return rc;
}
