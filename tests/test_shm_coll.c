/* test_shm_coll.c — the shared-memory collectives (core/coll/shm/shm_coll.c) with
 * threads of this process as ranks, joined through a real rendezvous
 * store and a real /dev/shm segment; forked processes for a rank that
 * dies.
 *
 * Results are compared bit for bit with a serial reduction in rank order
 * (((x0 op x1) op x2) ...), which is what every rank must get: random
 * floats, so a piece reduced twice, in another order, or taken from the
 * wrong block or round shows. A 4 KiB chunk makes large counts run
 * hundreds of rounds, so slots are reused while other ranks still read.
 * Calls that differ across ranks fail on every rank, naming both. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dt/log.h>
#include <dt/store.h>
#include "coll/coll.h"
#include "coll/shm/shm_coll.h"
#include "stderr_capture.h"

#define MAX_RANKS 17

static uint8_t token[DT_TOKEN_BYTES];
static char rdv[64];
static int job_no; /* store keys of each job apart */

typedef struct job job_t;
typedef struct rank {
    job_t *job;
    int rank;
    dt_shm_t *shm;
    dt_store_t *store; /* the segment keeps it (the failure record) */
    dt_status_t st;
    char detail[200];
} rank_t;

struct job {
    int size;
    char prefix[32];
    size_t chunk;
    size_t bad_chunk_rank; /* 1 + rank that asks for another layout */
    double timeout;
    int absent_rank;       /* 1 + rank that opens but then never calls */
    void (*body)(rank_t *r);
    rank_t ranks[MAX_RANKS];
};

static float value_f(int rank, size_t i)
{
    /* Random-looking floats of mixed sign and magnitude: sums round. */
    uint32_t h = (uint32_t)(rank * 2654435761u) ^ (uint32_t)(i * 40503u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return ((float)(h % 20001) - 10000.0f) / (float)(1 + h % 97);
}

static dt_status_t open_rank(rank_t *r)
{
    job_t *j = r->job;
    dt_store_t *store = NULL;
    DT_CHECK(dt_store_connect(rdv, token, 60.0, &store));
    size_t chunk = j->bad_chunk_rank == (size_t)r->rank + 1 ? j->chunk * 2
                                                            : j->chunk;
    dt_shm_args_t a = {.name = "test", .store = store, .prefix = j->prefix,
                       .rank = r->rank, .size = j->size,
                       .timeout = j->timeout > 0 ? j->timeout : 60.0,
                       .chunk = chunk, .spin = 100e-6};
    r->store = store;
    return dt_shm_open(&a, &r->shm);
}

static void *rank_main(void *p)
{
    rank_t *r = p;
    r->st = open_rank(r);
    if (r->st == DT_OK && r->shm && r->job->absent_rank != r->rank + 1)
        r->job->body(r);
    return NULL;
}

static void run_job(job_t *j)
{
    pthread_t th[MAX_RANKS];
    snprintf(j->prefix, sizeof j->prefix, "job%d/shm", ++job_no);
    if (!j->chunk)
        j->chunk = 4096;
    for (int r = 0; r < j->size; r++) {
        j->ranks[r] = (rank_t){.job = j, .rank = r, .st = DT_OK};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main,
                                        &j->ranks[r]), 0);
    }
    for (int r = 0; r < j->size; r++)
        pthread_join(th[r], NULL);
}

static void close_job(job_t *j)
{
    for (int r = 0; r < j->size; r++)
        dt_shm_close(j->ranks[r].shm);
    for (int r = 0; r < j->size; r++)
        dt_store_close(j->ranks[r].store);
}

static void expect_ok(job_t *j)
{
    for (int r = 0; r < j->size; r++) {
        if (j->ranks[r].st != DT_OK || j->ranks[r].detail[0])
            fail_msg("n=%d rank %d: %s %s", j->size, r,
                     dt_status_str(j->ranks[r].st), j->ranks[r].detail);
        assert_non_null(j->ranks[r].shm);
    }
    close_job(j);
}

/* ---- allreduce ------------------------------------------------------- */

static const size_t counts_extra[] = {0, 1, 1009, 100003};

static void serial(int n, size_t count, dt_dtype_t t, dt_redop_t op,
                   void *out)
{
    size_t es = dt_dtype_size(t);
    char *x = malloc(count * es + 1);
    for (int q = 0; q < n; q++) {
        for (size_t i = 0; i < count; i++) {
            if (t == DT_FLOAT32)
                ((float *)x)[i] = value_f(q, i);
            else
                ((int32_t *)x)[i] = (int32_t)(value_f(q, i) * 1000.0f);
        }
        if (q == 0)
            memcpy(out, x, count * es);
        else
            dt_reduce_local(out, x, count, t, op);
    }
    if (op == DT_AVG)
        dt_reduce_scale(out, count, t, 1.0 / n);
    free(x);
}

static void fill(int rank, size_t count, dt_dtype_t t, void *buf)
{
    for (size_t i = 0; i < count; i++) {
        if (t == DT_FLOAT32)
            ((float *)buf)[i] = value_f(rank, i);
        else
            ((int32_t *)buf)[i] = (int32_t)(value_f(rank, i) * 1000.0f);
    }
}

typedef struct case_ {
    dt_dtype_t t;
    dt_redop_t op;
} case_t;
static const case_t cases[] = {{DT_FLOAT32, DT_SUM},
                               {DT_FLOAT32, DT_AVG},
                               {DT_INT32, DT_MAX},
                               {DT_INT32, DT_SUM}};

static void allreduce_body(rank_t *r)
{
    int n = r->job->size;
    size_t counts[] = {(size_t)n - 1, (size_t)n + 1, counts_extra[0],
                       counts_extra[1], counts_extra[2], counts_extra[3]};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            size_t count = counts[c], bytes = count * 4 + 4;
            dt_dtype_t t = cases[k].t;
            char *send = malloc(bytes), *recv = malloc(bytes),
                 *want = malloc(bytes);
            int in_place = (c + k) % 2;
            fill(r->rank, count, t, send);
            if (in_place)
                memcpy(recv, send, count * 4);
            serial(n, count, t, cases[k].op, want);
            r->st = dt_shm_allreduce(r->shm, in_place ? recv : send, recv,
                                     count, t, cases[k].op);
            if (r->st == DT_OK && memcmp(recv, want, count * 4) != 0)
                snprintf(r->detail, sizeof r->detail,
                         "allreduce of %zu (%s, op %d, %s) differs from the "
                         "serial reduction",
                         count, dt_dtype_name(t), (int)cases[k].op,
                         in_place ? "in place" : "out of place");
            free(send);
            free(recv);
            free(want);
            if (r->st != DT_OK || r->detail[0])
                return;
        }
}

static void test_allreduce_exact(void **state)
{
    (void)state;
    for (int n = 2; n <= 8; n++) {
        job_t j = {.size = n, .body = allreduce_body};
        run_job(&j);
        expect_ok(&j);
    }
    /* 17 ranks on a host with the smallest chunk the key allows (4K, under
     * 256 bytes a rank): raised, not refused (it failed dt_init). */
    job_t j = {.size = 17, .body = allreduce_body, .chunk = 4096};
    run_job(&j);
    expect_ok(&j);
}

/* The halves of a hierarchical allreduce, with nothing in between: block
 * r reduced in place, then gathered, is the whole allreduce. */
static void halves_body(rank_t *r)
{
    int n = r->job->size;
    size_t counts[] = {1, (size_t)n + 1, 1009, 100003};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        size_t count = counts[c];
        float *buf = malloc(count * 4), *want = malloc(count * 4);
        fill(r->rank, count, DT_FLOAT32, buf);
        serial(n, count, DT_FLOAT32, DT_SUM, want);
        r->st = dt_shm_reduce_blocks(r->shm, buf, buf, count, DT_FLOAT32,
                                     DT_AVG /* sums: scaled by the caller */);
        if (r->st == DT_OK)
            r->st = dt_shm_allgather_blocks(r->shm, buf, count, DT_FLOAT32);
        if (r->st == DT_OK && memcmp(buf, want, count * 4) != 0) {
            snprintf(r->detail, sizeof r->detail,
                     "reduce_blocks + allgather_blocks of %zu differ from "
                     "the serial sum",
                     count);
        }
        free(buf);
        free(want);
        if (r->st != DT_OK || r->detail[0])
            return;
    }
}

static void test_hierarchical_halves(void **state)
{
    (void)state;
    for (int n = 2; n <= 5; n++) {
        job_t j = {.size = n, .body = halves_body};
        run_job(&j);
        expect_ok(&j);
    }
}

/* ---- reduce-scatter, allgather, broadcast, barrier ------------------- */

static void others_body(rank_t *r)
{
    const int n = r->job->size, me = r->rank;
    const size_t per[] = {0, 1, 777, 20011};
    for (size_t c = 0; c < sizeof per / sizeof *per && !r->detail[0]; c++) {
        size_t cpr = per[c], total = cpr * (size_t)n;
        float *send = malloc(total * 4 + 4), *recv = malloc(total * 4 + 4),
              *want = malloc(total * 4 + 4);
        /* reduce-scatter, out of place then in place */
        for (int in_place = 0; in_place < 2 && !r->detail[0]; in_place++) {
            fill(me, total, DT_FLOAT32, send);
            serial(n, total, DT_FLOAT32, DT_SUM, want);
            float *src = send;
            if (in_place) {
                memcpy(recv, send, total * 4);
                src = recv;
            }
            r->st = dt_shm_reduce_scatter(r->shm, src, recv, cpr,
                                          DT_FLOAT32, DT_SUM);
            if (r->st != DT_OK)
                return;
            if (memcmp(recv, want + (size_t)me * cpr, cpr * 4) != 0)
                snprintf(r->detail, sizeof r->detail,
                         "reduce-scatter of %zu per rank (%s) is wrong", cpr,
                         in_place ? "in place" : "out of place");
        }
        /* allgather: from a separate buffer, from recv itself, from this
         * rank's block of recv */
        for (int mode = 0; mode < 3 && !r->detail[0]; mode++) {
            memset(recv, 0xff, total * 4);
            for (size_t i = 0; i < cpr; i++)
                send[i] = value_f(me, i);
            const void *src = send;
            if (mode == 1) {
                memcpy(recv, send, cpr * 4);
                src = recv;
                if (me != 0) /* recv == send: the block is already at me */
                    memcpy(recv + (size_t)me * cpr, send, cpr * 4);
            } else if (mode == 2) {
                memcpy(recv + (size_t)me * cpr, send, cpr * 4);
                src = recv + (size_t)me * cpr;
            }
            r->st = dt_shm_allgather(r->shm, mode == 1 ? recv : src, recv,
                                     cpr, DT_FLOAT32);
            if (r->st != DT_OK)
                return;
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < cpr; i++)
                    if (recv[(size_t)q * cpr + i] != value_f(q, i)) {
                        snprintf(r->detail, sizeof r->detail,
                                 "allgather (mode %d): element %zu of rank "
                                 "%d's block is wrong",
                                 mode, i, q);
                        q = n;
                        break;
                    }
        }
        /* broadcast from every root */
        for (int root = 0; root < n && !r->detail[0]; root++) {
            for (size_t i = 0; i < total; i++)
                recv[i] = me == root ? value_f(root, i) : -1.0f;
            r->st = dt_shm_broadcast(r->shm, recv, total, DT_FLOAT32, root);
            if (r->st != DT_OK)
                return;
            for (size_t i = 0; i < total; i++)
                if (recv[i] != value_f(root, i)) {
                    snprintf(r->detail, sizeof r->detail,
                             "broadcast of %zu from root %d: element %zu "
                             "is wrong",
                             total, root, i);
                    break;
                }
        }
        free(send);
        free(recv);
        free(want);
    }
    if (!r->detail[0])
        r->st = dt_shm_barrier(r->shm);
}

static void test_other_collectives(void **state)
{
    (void)state;
    for (int n = 2; n <= 5; n++) {
        job_t j = {.size = n, .body = others_body};
        run_job(&j);
        expect_ok(&j);
    }
}

/* A barrier lets no rank out before every rank is in. */
static int arrived;
static void barrier_body(rank_t *r)
{
    for (int round = 1; round <= 50 && r->st == DT_OK; round++) {
        if (r->rank == round % r->job->size)
            usleep(1000); /* a late rank */
        __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
        r->st = dt_shm_barrier(r->shm);
        int seen = __atomic_load_n(&arrived, __ATOMIC_SEQ_CST);
        if (r->st == DT_OK && seen < round * r->job->size) {
            snprintf(r->detail, sizeof r->detail,
                     "left barrier %d when only %d of %d arrivals happened",
                     round, seen, round * r->job->size);
            return;
        }
        r->st = dt_shm_barrier(r->shm); /* no one counts round+1 early */
    }
}

static void test_barrier(void **state)
{
    (void)state;
    arrived = 0;
    job_t j = {.size = 4, .body = barrier_body};
    run_job(&j);
    expect_ok(&j);
}

/* ---- calls that do not match ------------------------------------------ */

/* Rank 2 calls something else than ranks 0 and 1 (mismatch_case picks
 * what): every rank fails with DT_ERR_INVALID, before reading the others'
 * data, and so does its next call, at once. */
static int mismatch_case;
static void mismatch_body(rank_t *r)
{
    float x[64] = {0};
    int odd = r->rank == 2;
    switch (mismatch_case) {
    case 0: /* a count of 0 still meets the others */
        r->st = dt_shm_allreduce(r->shm, x, x, odd ? 5 : 0, DT_FLOAT32,
                                 DT_SUM);
        break;
    case 1: /* the root of a broadcast waits on no one's data */
        r->st = odd ? dt_shm_broadcast(r->shm, x, 16, DT_FLOAT32, 2)
                    : dt_shm_allgather(r->shm, x, x, 4, DT_FLOAT32);
        break;
    case 2: /* allgather waits on the data flag allreduce posts last */
        r->st = odd ? dt_shm_allreduce(r->shm, x, x, 8, DT_FLOAT32, DT_SUM)
                    : dt_shm_allgather(r->shm, x, x, 4, DT_FLOAT32);
        break;
    default: /* avg and sum both sum within the host, yet differ */
        r->st = dt_shm_reduce_blocks(r->shm, x, x, 64, DT_FLOAT32,
                                     odd ? DT_AVG : DT_SUM);
    }
    if (r->st == DT_ERR_INVALID && dt_shm_barrier(r->shm) != DT_ERR_INVALID)
        snprintf(r->detail, sizeof r->detail, "the next call did not fail");
}

static void test_mismatch_fails_every_rank(void **state)
{
    (void)state;
    static const char *const want[] = {
        "rank 0 called allreduce of 0 float32 (sum), rank 2 allreduce of "
        "5 float32 (sum): every rank must call the same collectives",
        "rank 0 called allgather of 4 float32 per rank, rank 2 broadcast "
        "of 16 float32 from rank 2",
        "rank 0 called allgather of 4 float32 per rank, rank 2 allreduce "
        "of 8 float32 (sum)",
        "rank 0 called allreduce of 64 float32 (sum; its reduction within "
        "the host), rank 2 allreduce of 64 float32 (avg; its reduction "
        "within the host)"};
    for (mismatch_case = 0; mismatch_case < 4; mismatch_case++) {
        capture_t cap;
        capture_begin(&cap);
        job_t j = {.size = 3, .body = mismatch_body, .timeout = 10.0};
        run_job(&j);
        char *log = capture_end(&cap);
        for (int r = 0; r < 3; r++) {
            char who[32];
            snprintf(who, sizeof who, "test: rank %d: ", r);
            if (j.ranks[r].st != DT_ERR_INVALID || j.ranks[r].detail[0] ||
                !strstr(log, who))
                fail_msg("case %d: rank %d: %s %s; log:\n%s", mismatch_case,
                         r, dt_status_str(j.ranks[r].st), j.ranks[r].detail,
                         log);
        }
        if (!strstr(log, want[mismatch_case]))
            fail_msg("case %d: no error names both calls ('%s'); log:\n%s",
                     mismatch_case, want[mismatch_case], log);
        free(log);
        close_job(&j);
    }
}

/* ---- agreement and failures ------------------------------------------ */

/* One rank cannot use the segment (here: another layout): every rank
 * falls back, none hangs. */
static void nothing(rank_t *r) { (void)r; }
static void test_one_rank_cannot_so_none_do(void **state)
{
    (void)state;
    job_t j = {.size = 3, .body = nothing, .bad_chunk_rank = 2};
    capture_t cap;
    capture_begin(&cap);
    run_job(&j);
    char *log = capture_end(&cap);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(j.ranks[r].st, DT_OK);
        assert_null(j.ranks[r].shm);
    }
    /* The rank that could not says why, as a warning. */
    assert_non_null(strstr(log, "test: rank 1: collectives through the "
                                "transport, not shared memory"));
    assert_non_null(strstr(log, "does not match this job's layout"));
    free(log);
    close_job(&j);
}

/* A rank that is alive but never joins the collective: the others say
 * which rank they waited on once the timeout passes. */
static void one_allreduce(rank_t *r)
{
    float x[64] = {0};
    r->st = dt_shm_allreduce(r->shm, x, x, 64, DT_FLOAT32, DT_SUM);
}

static void test_hung_peer_is_named(void **state)
{
    (void)state;
    capture_t cap;
    capture_begin(&cap);
    job_t j = {.size = 3, .body = one_allreduce, .timeout = 0.5,
               .absent_rank = 2 /* rank 1 */};
    run_job(&j);
    char *log = capture_end(&cap);
    assert_int_equal(j.ranks[0].st, DT_ERR_PEER);
    assert_int_equal(j.ranks[2].st, DT_ERR_PEER);
    assert_non_null(strstr(log, "rank 1 went silent: hung"));
    free(log);
    /* The job's failure record names it too, as hung (dtctl reads it). */
    dt_store_t *store = NULL;
    int culprit = -1, detector = -1;
    char how[DT_CULPRIT_HOW_MAX] = "";
    assert_int_equal(dt_store_connect(rdv, token, 10.0, &store), DT_OK);
    assert_int_equal(dt_store_culprit_get(store, 1.0, &culprit, &detector,
                                          how),
                     DT_OK);
    dt_store_close(store);
    assert_int_equal(culprit, 1);
    assert_string_equal(how, "hung");
    close_job(&j);
}

/* Ranks as processes; rank 1 exits right after joining. The others name
 * it at once (its pid is gone), long before the 60 s timeout: the test
 * would otherwise take a minute. */
static void test_dead_peer_is_named(void **state)
{
    (void)state;
    job_t j = {.size = 3, .timeout = 60.0, .chunk = 4096};
    snprintf(j.prefix, sizeof j.prefix, "job%d/shm", ++job_no);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pids[3];
    for (int r = 0; r < 3; r++) {
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            close(fds[0]);
            dup2(fds[1], STDERR_FILENO);
            rank_t me = {.job = &j, .rank = r};
            if (open_rank(&me) != DT_OK || !me.shm)
                _exit(2);
            if (r == 1)
                _exit(0);
            float x[4096] = {0};
            dt_status_t st = dt_shm_allreduce(me.shm, x, x, 4096, DT_FLOAT32,
                                              DT_SUM);
            _exit(st == DT_ERR_PEER ? 3 : 4);
        }
    }
    close(fds[1]);
    char log[8192];
    size_t len = 0;
    ssize_t got;
    while (len < sizeof log - 1 &&
           (got = read(fds[0], log + len, sizeof log - 1 - len)) > 0)
        len += (size_t)got;
    log[len] = '\0';
    close(fds[0]);
    int codes[3];
    for (int r = 0; r < 3; r++) {
        int ws = 0;
        assert_int_equal(waitpid(pids[r], &ws, 0), pids[r]);
        codes[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    }
    if (codes[0] != 3 || codes[2] != 3 || !strstr(log, "rank 1 (pid") ||
        !strstr(log, "is gone"))
        fail_msg("ranks 0 and 2 should fail naming rank 1 (exit codes "
                 "%d %d %d); log:\n%s",
                 codes[0], codes[1], codes[2], log);
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
        cmocka_unit_test(test_allreduce_exact),
        cmocka_unit_test(test_hierarchical_halves),
        cmocka_unit_test(test_other_collectives),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_mismatch_fails_every_rank),
        cmocka_unit_test(test_one_rank_cannot_so_none_do),
        cmocka_unit_test(test_hung_peer_is_named),
        cmocka_unit_test(test_dead_peer_is_named),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_store_server_stop(srv);
    return rc;
}
