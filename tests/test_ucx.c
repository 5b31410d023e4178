/* test_ucx.c — the ucx transport plugin driven directly: ranks are threads
 * of this process, each with its own UCP context, joined through a real
 * rendezvous store. Checks data integrity of point-to-point messages of
 * every protocol size (eager to rendezvous) in both tls settings, a size
 * mismatch reported as an error, the token handshake (a rank whose
 * transport token differs from its peers' is refused by them), and the
 * core's hierarchical allreduce (core/coll/coll_hier.c) over ucx for a job
 * across hosts — here ranks that bind to 127.0.0.1 and 127.0.0.2, two
 * "hosts" on loopback, placed round-robin.
 * A rank that holds the token but sends a proof off in one byte is refused
 * too: this file defines ucp_tag_send_nbx (exported, so the plugin's calls
 * come here) and changes that rank's proofs on their way to UCX. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dt/config.h>
#include <dt/plugin.h>
#include <dt/store.h>
#include <dt/log.h>
#include <dt/netif.h>
#include "coll/coll.h"
#include "coll/coll_host.h"
#include "plugin/plugin_loader.h"
#include "stderr_capture.h"
#include <ucp/api/ucp.h>

#define MAX_RANKS 4

/* ---- a rank whose proofs are changed on the wire --------------------------
 * ucx_auth.c tags its messages UCX_TAG_INTERNAL (bit 63) | sender rank << 32
 * | kind, kind 2 being the 32-byte proof. While forge_rank >= 0, the proofs
 * that rank sends leave with byte forge_byte flipped; every other message
 * goes to UCX unchanged. */
static volatile int forge_rank = -1, forge_byte;
static int forged;
static uint8_t forge_buf[64][32]; /* live until the test ends */
static pthread_mutex_t forge_lock = PTHREAD_MUTEX_INITIALIZER;
/* UCX's own, found by main() before any rank starts. */
static ucs_status_ptr_t (*real_send)(ucp_ep_h, const void *, size_t,
                                     ucp_tag_t, const ucp_request_param_t *);

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer,
                                  size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t *param)
{
    if (forge_rank >= 0 && count == 32 && (tag >> 63) == 1 &&
        (uint32_t)tag == 2 && (int)((tag >> 32) & 0x7fffffff) == forge_rank) {
        pthread_mutex_lock(&forge_lock);
        if (forged < 64) {
            uint8_t *copy = forge_buf[forged++];
            memcpy(copy, buffer, 32);
            copy[forge_byte] ^= 0x01;
            buffer = copy;
        }
        pthread_mutex_unlock(&forge_lock);
    }
    return real_send(ep, buffer, count, tag, param);
}

typedef struct job job_t;
typedef struct rank_arg {
    job_t *job;
    int rank;
    dt_status_t init_st, run_st;
    char detail[160];
    dt_store_t *store;
    char bind[32];
} rank_arg_t;

struct job {
    int size;
    const char *tls;                 /* NULL: UCX's default */
    int bad_token_rank;              /* -1: every rank has the job token */
    int some_refused;                /* some ranks' init fails: every
                                        rank waits for all inits to end
                                        (so no rank closes its endpoints
                                        while a peer still checks it),
                                        then none waits for the others'
                                        test bodies                       */
    int hosts;                       /* 0/1: one host; else rank r binds to
                                        127.0.0.(1 + r % hosts)           */
    dt_status_t (*body)(const dt_transport_ops_t *ops, void *ctx,
                        rank_arg_t *r);
    const dt_transport_ops_t *ops;
    uint8_t token[DT_TOKEN_BYTES];
    char rdv[64];
    rank_arg_t ranks[MAX_RANKS];
};

static uint8_t pattern(int src, int dst, size_t k, size_t i)
{
    return (uint8_t)(src * 31 + dst * 7 + k * 13 + i * 101 + (i >> 9));
}

static const size_t sizes[] = {0, 1, 4099, 65536 + 7, (1u << 20) + 3,
                               (8u << 20) + 1};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Every rank sends each size to every other rank and checks each byte it
 * receives. */
static dt_status_t all_to_all(const dt_transport_ops_t *ops, void *ctx,
                              rank_arg_t *r)
{
    int n = r->job->size, me = r->rank;
    size_t nreq = 2 * (size_t)(n - 1) * NSIZES, k = 0;
    dt_request_t **reqs = calloc(nreq, sizeof *reqs);
    uint8_t **bufs = calloc(nreq, sizeof *bufs);
    dt_status_t st = reqs && bufs ? DT_OK : DT_ERR_NOMEM;
    for (int p = 0; p < n && st == DT_OK; p++) {
        if (p == me)
            continue;
        for (size_t s = 0; s < NSIZES && st == DT_OK; s++) {
            uint8_t *in = malloc(sizes[s] + 1), *out = malloc(sizes[s] + 1);
            bufs[k] = in;
            bufs[k + 1] = out;
            if (!in || !out) {
                st = DT_ERR_NOMEM;
                break;
            }
            for (size_t i = 0; i < sizes[s]; i++)
                out[i] = pattern(me, p, s, i);
            st = ops->irecv(ctx, p, in, sizes[s], DT_MEM_HOST, (int)s,
                            &reqs[k]);
            if (st == DT_OK)
                st = ops->isend(ctx, p, out, sizes[s], DT_MEM_HOST, (int)s,
                                &reqs[k + 1]);
            k += 2;
        }
    }
    if (st == DT_OK)
        st = ops->wait(ctx, reqs, k, -1);
    k = 0;
    for (int p = 0; p < n && st == DT_OK; p++) {
        if (p == me)
            continue;
        for (size_t s = 0; s < NSIZES; s++, k += 2)
            for (size_t i = 0; i < sizes[s]; i++)
                if (bufs[k][i] != pattern(p, me, s, i)) {
                    snprintf(r->detail, sizeof r->detail,
                             "rank %d: byte %zu of the %zu-byte message "
                             "from rank %d is wrong",
                             me, i, sizes[s], p);
                    st = DT_ERR_INTERNAL;
                    break;
                }
    }
    for (size_t i = 0; bufs && i < nreq; i++)
        free(bufs[i]);
    free(bufs);
    free(reqs);
    return st;
}

/* Rank 0 sends 8 bytes where rank 1 expects 16: rank 1 gets an error. */
static dt_status_t size_mismatch(const dt_transport_ops_t *ops, void *ctx,
                                 rank_arg_t *r)
{
    char buf[16] = "0123456789abcde";
    dt_request_t *q;
    if (r->rank == 0) {
        dt_status_t st = ops->isend(ctx, 1, buf, 8, DT_MEM_HOST, 5, &q);
        return st == DT_OK ? ops->wait(ctx, &q, 1, -1) : st;
    }
    dt_status_t st = ops->irecv(ctx, 0, buf, 16, DT_MEM_HOST, 5, &q);
    return st == DT_OK ? ops->wait(ctx, &q, 1, -1) : st;
}

/* The core's hierarchical allreduce over ucx: sums and averages of
 * integer-valued floats (exact in any order), in place and not, counts
 * around the block sizes; a broadcast runs flat over UCX. */
static dt_status_t hier_allreduce(const dt_transport_ops_t *ops, void *ctx,
                                  rank_arg_t *r)
{
    const size_t counts[] = {0, 1, 3, 5, 1009, 100003};
    const int n = r->job->size;
    dt_comm_t comm = {.ops = ops, .ctx = ctx, .rank = r->rank, .size = n,
                      .timeout_ms = -1};
    dt_comm_hosts_args_t ha = {.store = r->store, .bind_addr = r->bind,
                               .local_size = n / r->job->hosts,
                               .timeout = 60.0};
    dt_status_t hst = dt_comm_setup_hosts(&comm, NULL, &ha);
    if (hst != DT_OK || !comm.host || comm.host->whole_job ||
        comm.host->hosts != r->job->hosts) {
        snprintf(r->detail, sizeof r->detail,
                 "rank %d: no hierarchical setup (status %d, %s)", r->rank,
                 (int)hst, comm.host ? "one host" : "none");
        dt_comm_release(&comm);
        return DT_ERR_INTERNAL;
    }
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
        for (int avg = 0; avg < 2; avg++) {
            size_t count = counts[c];
            float *send = malloc(count * 4 + 4), *recv = malloc(count * 4 + 4);
            for (size_t i = 0; i < count; i++)
                send[i] = (float)((r->rank + 1) * 4 * (int)(i % 1000 + 1));
            int in_place = (int)(c + (size_t)avg) % 2;
            if (in_place)
                memcpy(recv, send, count * 4);
            dt_status_t st = dt_coll_allreduce(&comm, in_place ? recv : send,
                                               recv, count, DT_FLOAT32,
                                               avg ? DT_AVG : DT_SUM);
            for (size_t i = 0; st == DT_OK && i < count; i++) {
                float sum = (float)(n * (n + 1) / 2 * 4 *
                                    (int)(i % 1000 + 1));
                float want = avg ? sum / (float)n : sum;
                if (recv[i] != want) {
                    snprintf(r->detail, sizeof r->detail,
                             "rank %d: hierarchical allreduce of %zu (%s, "
                             "%s): element %zu is %g, not %g",
                             r->rank, count, avg ? "avg" : "sum",
                             in_place ? "in place" : "out of place", i,
                             (double)recv[i], (double)want);
                    st = DT_ERR_INTERNAL;
                }
            }
            free(send);
            free(recv);
            if (st != DT_OK) {
                dt_comm_release(&comm);
                return st;
            }
        }
    float x = r->rank == 0 ? 42.0f : 0.0f;
    dt_status_t st = dt_coll_broadcast(&comm, &x, 1, DT_FLOAT32, 0);
    dt_comm_release(&comm);
    if (st == DT_OK && x != 42.0f) {
        snprintf(r->detail, sizeof r->detail,
                 "rank %d: broadcast across hosts gave %g, not 42", r->rank,
                 (double)x);
        return DT_ERR_INTERNAL;
    }
    return st;
}

static void *rank_main(void *p)
{
    rank_arg_t *r = p;
    job_t *j = r->job;
    dt_store_t *store = NULL;
    void *ctx = NULL;
    uint8_t tok[DT_TOKEN_BYTES];
    memcpy(tok, j->token, sizeof tok);
    if (r->rank == j->bad_token_rank)
        tok[0] ^= 0x5a;
    /* No configuration: the plugin's defaults, UCX_TLS from run_job. The
     * 60 s bounds only end a broken run; they are generous because a
     * sanitizer build on a loaded machine is slow, and a bound that a slow
     * but healthy run can hit makes the test flaky. */
    r->init_st = dt_store_connect(j->rdv, j->token, 60.0, &store);
    if (r->init_st == DT_OK) {
        int hosts = j->hosts > 1 ? j->hosts : 1;
        char *bind = r->bind;
        snprintf(r->bind, sizeof r->bind, "127.0.0.%d", 1 + r->rank % hosts);
        r->store = store;
        dt_transport_args_t a = {.rank = r->rank,
                                 .size = j->size,
                                 .local_rank = r->rank / hosts,
                                 .local_size = j->size / hosts,
                                 .store = store,
                                 .token = tok,
                                 .token_len = sizeof tok,
                                 .bind_addr = bind,
                                 .timeout = 60.0};
        r->init_st = j->ops->init(NULL, &a, &ctx);
    }
    if (store && j->some_refused)
        dt_store_barrier(store, "inits-done", j->size, 60.0);
    if (r->init_st == DT_OK && j->body)
        r->run_st = j->body(j->ops, ctx, r);
    if (r->init_st == DT_OK && !j->some_refused)
        dt_store_barrier(store, "test-done", j->size, 60.0);
    if (ctx)
        j->ops->fini(ctx);
    dt_store_close(store);
    return NULL;
}

static void run_job(job_t *j)
{
    const dt_plugin_t *pl = NULL;
    dt_store_server_t *srv = NULL;
    pthread_t th[MAX_RANKS];
    assert_int_equal(dt_plugin_load(DT_KIND_TRANSPORT, "ucx", &pl, NULL),
                     DT_OK);
    j->ops = pl->ops;
    if (j->tls)
        setenv("UCX_TLS", j->tls, 1);
    else
        unsetenv("UCX_TLS");
    assert_int_equal(dt_token_generate(j->token), DT_OK);
    assert_int_equal(dt_store_server_start("127.0.0.1", 0, j->token, &srv),
                     DT_OK);
    snprintf(j->rdv, sizeof j->rdv, "127.0.0.1:%d",
             dt_store_server_port(srv));
    for (int i = 0; i < j->size; i++) {
        j->ranks[i] = (rank_arg_t){.job = j, .rank = i};
        assert_int_equal(pthread_create(&th[i], NULL, rank_main, &j->ranks[i]),
                         0);
    }
    for (int i = 0; i < j->size; i++)
        pthread_join(th[i], NULL);
    dt_store_server_stop(srv);
    unsetenv("UCX_TLS");
}

static void check_all_ok(job_t *j)
{
    for (int i = 0; i < j->size; i++) {
        if (j->ranks[i].detail[0])
            fail_msg("%s", j->ranks[i].detail);
        assert_int_equal(j->ranks[i].init_st, DT_OK);
        assert_int_equal(j->ranks[i].run_st, DT_OK);
    }
}

static void test_all_to_all_default(void **state)
{
    (void)state;
    job_t j = {.size = 3, .bad_token_rank = -1, .body = all_to_all};
    run_job(&j);
    check_all_ok(&j);
}

static void test_all_to_all_tcp(void **state)
{
    (void)state;
    job_t j = {.size = 3, .tls = "tcp", .bad_token_rank = -1,
               .body = all_to_all};
    run_job(&j);
    check_all_ok(&j);
}

static void test_size_mismatch(void **state)
{
    (void)state;
    job_t j = {.size = 2, .bad_token_rank = -1, .body = size_mismatch};
    run_job(&j);
    assert_int_equal(j.ranks[0].init_st, DT_OK);
    assert_int_equal(j.ranks[1].init_st, DT_OK);
    assert_int_equal(j.ranks[1].run_st, DT_ERR_INVALID);
}

/* The "hosts" are loopback addresses, so every rank keeps UCX on the
 * loopback interface (-v says UCX_NET_DEVICES=lo): with every device, a
 * network interface deleted meanwhile (another test's bridge) failed 3 of
 * 40 such jobs ("Destination is unreachable") or hung them. */
static void test_hierarchical_allreduce(void **state)
{
    (void)state;
    job_t j = {.size = 4, .hosts = 2, .bad_token_rank = -1,
               .body = hier_allreduce};
    capture_t cap;
    dt_log_level_t level = dt_log_get_level();
    dt_log_set_level(DT_LOG_DEBUG);
    capture_begin(&cap);
    run_job(&j);
    char *text = capture_end(&cap);
    dt_log_set_level(level);
    assert_non_null(text);
    check_all_ok(&j);
    char lo[32], want[96];
    dt_netif_name_of("127.0.0.1", lo, sizeof lo);
    assert_true(lo[0] != '\0');
    for (int r = 0; r < j.size; r++) {
        snprintf(want, sizeof want, "ucx: rank %d: UCX_NET_DEVICES=%s\n", r,
                 lo);
        if (!strstr(text, want))
            fail_msg("rank %d did not keep UCX on %s (no \"%s\" in its "
                     "log above)",
                     r, lo, want);
    }
    free(text);
}

static void test_wrong_token_refused(void **state)
{
    (void)state;
    job_t j = {.size = 3, .bad_token_rank = 2, .body = all_to_all};
    run_job(&j);
    /* Ranks 0 and 1 see rank 2 fail the proof and rank 2 sees theirs fail;
     * a rank still waiting when a peer gives up sees that peer leave. No
     * rank joins, and at least one names the failed proof. */
    int auth = 0;
    for (int i = 0; i < j.size; i++) {
        assert_int_not_equal(j.ranks[i].init_st, DT_OK);
        auth += j.ranks[i].init_st == DT_ERR_AUTH;
    }
    assert_true(auth >= 1);
}

/* Rank 1 holds the token, but its proof arrives with the last (then the
 * first) byte changed: rank 0 refuses it and says which rank failed. Two
 * ranks: with more, a rank that refused closes its endpoints at once and a
 * third rank may see it leave before it checks the proof itself. Rank 1
 * accepts rank 0's proof and waits (some_refused) until rank 0's init has
 * ended, so rank 0 gets the proof whatever the timing. UCX_TLS=tcp: rank
 * 1 sets up no shared memory with the rank that refused it. */
static void test_wrong_proof_refused(void **state)
{
    (void)state;
    const int bytes[] = {31, 0};
    for (size_t b = 0; b < sizeof bytes / sizeof *bytes; b++) {
        job_t j = {.size = 2, .tls = "tcp", .bad_token_rank = -1,
                   .some_refused = 1};
        capture_t cap;
        forged = 0;
        forge_byte = bytes[b];
        forge_rank = 1;
        capture_begin(&cap);
        run_job(&j);
        char *text = capture_end(&cap);
        forge_rank = -1;
        assert_non_null(text);
        assert_int_equal(forged, 1); /* its one proof, to rank 0 */
        const char *want = "ucx: rank 0: the UCX worker at rank 1's address "
                           "did not prove the job token";
        if (j.ranks[0].init_st != DT_ERR_AUTH || !strstr(text, want))
            fail_msg("proof with byte %d changed: rank 0 returned %d (want "
                     "DT_ERR_AUTH) and must log \"%s\"",
                     bytes[b], j.ranks[0].init_st, want);
        /* rank 0's own proof was right */
        assert_null(strstr(text, "at rank 0's address did not prove"));
        free(text);
    }
}

int main(void)
{
    /* This program links libucp (it calls ucp_get_version_string), so
     * UCX's ucp_tag_send_nbx is the next one after ours. */
    fprintf(stderr, "test_ucx: UCX %s\n", ucp_get_version_string());
    *(void **)&real_send = dlsym(RTLD_NEXT, "ucp_tag_send_nbx");
    if (!real_send) {
        fprintf(stderr, "test_ucx: no ucp_tag_send_nbx after this program: "
                        "%s\n", dlerror());
        return 99;
    }
    const char *b = getenv("top_builddir");
    char path[4096];
    if (b) {
        snprintf(path, sizeof path, "%s/plugins/modules", b);
        setenv("DT_PLUGIN_PATH", path, 1);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_to_all_default),
        cmocka_unit_test(test_all_to_all_tcp),
        cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_hierarchical_allreduce),
        cmocka_unit_test(test_wrong_token_refused),
        cmocka_unit_test(test_wrong_proof_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
