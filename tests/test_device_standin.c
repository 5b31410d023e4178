/* test_device_standin.c — dt/device.h, the optimizers' device path and
 * dt_allreduce_mem's choice between handing device buffers to the
 * transport and staging them through host memory, on a machine WITHOUT a
 * GPU.
 *
 * Plainly: nothing here runs CUDA. DT_PLUGIN_PATH points libdt at a
 * STAND-IN backend (tests/fixtures/fixture_cuda_backend.c), loaded through
 * the real lazy loader, whose "device memory" is host memory it keeps a
 * list of. That makes visible which pointers are "device" memory, so the
 * test checks who is handed what: the transports here (the in-process
 * transport under a recording wrapper, N threads as N ranks) never get a
 * device pointer unless their caps report DT_CAP_CUDA_MEM and they have a
 * native allreduce, and then they get DT_MEM_CUDA with the caller's
 * stream. The values are checked element by element. The trainer's
 * gradient sync (grad_sync.c) runs one simulated backward per rank on a
 * hand-made "cuda" dt_device_t: with a transport that reads device memory
 * no gradient is copied to the host and every bucket is read only after an
 * event recorded behind its gradients; with a tcp-like one each bucket is
 * copied once, to pinned memory, on a copy stream. The input pipeline's
 * batches on such a device come from pinned memory. Real CUDA copies,
 * kernels and the nccl transport are tested on a GPU (test_optimizers_cuda,
 * test_nn_cuda, run_nccl.sh). */
#include <dlfcn.h>
#include <math.h>
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
#include <dt/device.h>
#include <dt/dt.h>
#include "coll/coll.h"
#include "data/pipeline.h"
#include "cuda/backend.h"
#include "fixtures/standin_cuda.h"
#include "inproc_transport.h"
#include "train/grad_sync.h"
#include "plugin/plugin_loader.h"

/* ---- the stand-in backend's counters (fixture_cuda_backend.c) -------- */


static standin_stats_t *standin;
static char standin_dir[4096];

static int setup_standin(void **state)
{
    (void)state;
    const char *b = getenv("top_builddir");
    snprintf(standin_dir, sizeof standin_dir, "%s/tests/fixtures/standin_cuda/.libs",
             b ? b : "..");
    setenv("DT_PLUGIN_PATH", standin_dir, 1);
    return 0;
}

/* The backend is the stand-in (never a real one that happens to be built
 * or installed), and its counters. */
static void test_standin_loaded(void **state)
{
    (void)state;
    char why[512] = "";
    assert_int_equal(dt_gpu_available(why, sizeof why), 1);
    const dt_cuda_backend_t *be = dt_cuda_backend_loaded();
    assert_non_null(be);
    assert_non_null(strstr(be->built_with, "stand-in"));
    char path[4200];
    snprintf(path, sizeof path, "%s/dt-cuda-backend.so", standin_dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    standin = dlsym(h, "standin_cuda_stats");
    assert_non_null(standin);
}

/* ---- dt/device.h ------------------------------------------------------ */

static void test_device_api(void **state)
{
    (void)state;
    enum { N = 100 };
    float host[N], back[N];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    float *a, *b;
    assert_int_equal(dt_gpu_alloc(N * sizeof(float), (void **)&a), DT_OK);
    assert_int_equal(dt_gpu_alloc(N * sizeof(float), (void **)&b), DT_OK);
    assert_true(standin->is_device(a) && standin->is_device(b));
    /* Zeroed. */
    assert_int_equal(dt_gpu_copy(back, DT_MEM_HOST, a, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_OK);
    for (int i = 0; i < N; i++)
        assert_true(back[i] == 0.0f);
    unsigned long c0 = standin->copies;
    /* h2d, d2d, d2h through the backend; h2h without it. */
    assert_int_equal(dt_gpu_copy(a, DT_MEM_CUDA, host, DT_MEM_HOST,
                                 sizeof host, NULL), DT_OK);
    assert_int_equal(dt_gpu_copy(b, DT_MEM_CUDA, a, DT_MEM_CUDA, sizeof host,
                                 NULL), DT_OK);
    assert_int_equal(dt_gpu_copy(back, DT_MEM_HOST, b, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_OK);
    assert_memory_equal(back, host, sizeof host);
    assert_int_equal(standin->copies - c0, 3);
    float h2[N];
    assert_int_equal(dt_gpu_copy(h2, DT_MEM_HOST, host, DT_MEM_HOST,
                                 sizeof h2, NULL), DT_OK);
    assert_memory_equal(h2, host, sizeof host);
    assert_int_equal(standin->copies - c0, 3);
    /* memset, sync, bad kinds. */
    assert_int_equal(dt_gpu_memset(b, 0, sizeof host, NULL), DT_OK);
    assert_int_equal(dt_gpu_stream_sync(NULL), DT_OK);
    assert_int_equal(dt_gpu_copy(back, DT_MEM_HOST, b, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_OK);
    for (int i = 0; i < N; i++)
        assert_true(back[i] == 0.0f);
    assert_int_equal(dt_gpu_copy(back, (dt_mem_t)7, b, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_ERR_INVALID);
    dt_gpu_free(a);
    dt_gpu_free(b);
    dt_gpu_free(NULL);
}

/* ---- the optimizer plugins' device path ------------------------------- */

typedef struct opt {
    const dt_optimizer_ops_t *ops;
    dt_config_t *cfg;
    void *state;
} opt_t;

static void opt_open(opt_t *o, const char *name, const char *const *settings,
                     size_t n, dt_mem_t mem)
{
    const dt_plugin_t *p;
    memset(o, 0, sizeof *o);
    assert_int_equal(dt_plugin_load(DT_KIND_OPTIMIZER, name, &p, NULL), DT_OK);
    o->ops = p->ops;
    char section[64];
    snprintf(section, sizeof section, "optimizer.%s", name);
    assert_int_equal(dt_config_new(&o->cfg), DT_OK);
    assert_int_equal(dt_config_add_schema(o->cfg, section, p->keys), DT_OK);
    for (const char *const *s = settings; s && *s; s++) {
        char key[64];
        const char *eq = strchr(*s, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - *s), *s);
        assert_int_equal(dt_config_set(o->cfg, section, key, eq + 1,
                                       DT_SRC_CLI, "--set"), DT_OK);
    }
    assert_int_equal(o->ops->create(o->cfg, n, mem, &o->state), DT_OK);
}

static void opt_close(opt_t *o)
{
    o->ops->destroy(o->state);
    dt_config_free(o->cfg);
}

/* The same steps with "device" state and host state agree; the device
 * state saves into a host blob that loads on the host and back. */
static void same_steps(const char *name, const char *const *settings)
{
    enum { N = 257 };
    float ph[N], gh[N], back[N], *pd, *gd;
    for (int i = 0; i < N; i++) {
        ph[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
        gh[i] = (float)((i * 11) % 13) / 16.0f - 0.4f;
    }
    assert_int_equal(dt_gpu_alloc(sizeof ph, (void **)&pd), DT_OK);
    assert_int_equal(dt_gpu_alloc(sizeof gh, (void **)&gd), DT_OK);
    assert_int_equal(dt_gpu_copy(pd, DT_MEM_CUDA, ph, DT_MEM_HOST, sizeof ph,
                                 NULL), DT_OK);
    assert_int_equal(dt_gpu_copy(gd, DT_MEM_CUDA, gh, DT_MEM_HOST, sizeof gh,
                                 NULL), DT_OK);
    opt_t h, d;
    opt_open(&h, name, settings, N, DT_MEM_HOST);
    opt_open(&d, name, settings, N, DT_MEM_CUDA);
    unsigned long s0 = standin->steps;
    for (uint64_t t = 1; t <= 3; t++) {
        assert_int_equal(h.ops->step(h.state, ph, gh, 0.05f, t, NULL), DT_OK);
        assert_int_equal(d.ops->step(d.state, pd, gd, 0.05f, t, NULL), DT_OK);
    }
    assert_int_equal(standin->steps - s0, 3); /* the device path ran */
    assert_int_equal(dt_gpu_copy(back, DT_MEM_HOST, pd, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_OK);
    for (int i = 0; i < N; i++)
        assert_true(fabsf(back[i] - ph[i]) <= 1e-6f * (1 + fabsf(ph[i])));
    /* Device state -> blob -> a FRESH host instance f, which steps as the
     * host instance that ran the 3 steps itself: the blob holds the
     * device's moments (loaded into instances that already had the same
     * ones, a save writing wrong moments passed). Then back into the
     * device, which steps as the host. */
    size_t len = d.ops->state_size(d.state);
    assert_int_equal(len, h.ops->state_size(h.state));
    void *blob = malloc(len);
    assert_non_null(blob);
    assert_int_equal(d.ops->save(d.state, blob, len), DT_OK);
    opt_t f;
    opt_open(&f, name, settings, N, DT_MEM_HOST);
    assert_int_equal(f.ops->load(f.state, blob, len), DT_OK);
    float pf[N];
    memcpy(ph, back, sizeof ph);
    memcpy(pf, back, sizeof pf);
    assert_int_equal(f.ops->step(f.state, pf, gh, 0.05f, 4, NULL), DT_OK);
    assert_int_equal(d.ops->load(d.state, blob, len), DT_OK);
    assert_int_equal(h.ops->step(h.state, ph, gh, 0.05f, 4, NULL), DT_OK);
    assert_int_equal(d.ops->step(d.state, pd, gd, 0.05f, 4, NULL), DT_OK);
    for (int i = 0; i < N; i++)
        assert_true(fabsf(pf[i] - ph[i]) <= 1e-6f * (1 + fabsf(ph[i])));
    assert_int_equal(dt_gpu_copy(back, DT_MEM_HOST, pd, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_OK);
    for (int i = 0; i < N; i++)
        assert_true(fabsf(back[i] - ph[i]) <= 1e-6f * (1 + fabsf(ph[i])));
    free(blob);
    opt_close(&f);
    opt_close(&h);
    opt_close(&d);
    dt_gpu_free(pd);
    dt_gpu_free(gd);
}

static void test_optimizers_device_path(void **state)
{
    (void)state;
    const char *nest[] = {"momentum=0.9", "nesterov=true",
                          "weight_decay=0.01", NULL};
    same_steps("sgd", nest);
    same_steps("sgd", NULL);
    const char *wd[] = {"weight_decay=0.05", NULL};
    same_steps("adam", wd);
    same_steps("adamw", wd);
}

/* ---- dt_allreduce_mem: the decision ----------------------------------- */

static void test_mem_path(void **state)
{
    (void)state;
    /* Host memory: the host path, whatever the transport can do. */
    assert_int_equal(dt_coll_mem_path(0, 0, DT_MEM_HOST), DT_PATH_HOST);
    assert_int_equal(dt_coll_mem_path(DT_CAP_CUDA_MEM, 1, DT_MEM_HOST),
                     DT_PATH_HOST);
    /* Device memory: to the transport only with the cap AND a native
     * allreduce (the core's own algorithms reduce on the CPU). */
    assert_int_equal(dt_coll_mem_path(DT_CAP_CUDA_MEM, 1, DT_MEM_CUDA),
                     DT_PATH_DEVICE);
    assert_int_equal(dt_coll_mem_path(DT_CAP_CUDA_MEM, 0, DT_MEM_CUDA),
                     DT_PATH_STAGE);
    assert_int_equal(dt_coll_mem_path(0, 1, DT_MEM_CUDA), DT_PATH_STAGE);
    assert_int_equal(dt_coll_mem_path(0, 0, DT_MEM_CUDA), DT_PATH_STAGE);
}

/* ---- dt_allreduce_mem over a recording transport ----------------------- */

enum { NATIVE_NONE, NATIVE_ALL, NATIVE_HOST_ONLY };
#define STREAM ((void *)0x5157) /* a made-up cudaStream_t: never used */
#define RANKS 3
#define NATIVE_TAG 0x7e57

typedef struct scenario {
    uint32_t caps;
    int native; /* NATIVE_* */
} scenario_t;

/* What one rank's transport was handed. */
typedef struct rec {
    void *inner; /* the in-process transport of this rank */
    int rank;
    const scenario_t *sc;
    int caps_calls;
    long p2p_host, p2p_cuda, p2p_devptr; /* isend/irecv                   */
    long nat_host, nat_cuda, nat_devptr; /* native allreduce calls       */
    long nat_declined;
    long nat_badstream; /* not the caller's stream (NULL for host memory) */
} rec_t;

static uint32_t rec_caps(void *ctx)
{
    rec_t *r = ctx;
    r->caps_calls++;
    return r->sc->caps;
}

static void note_p2p(rec_t *r, const void *buf, size_t len, dt_mem_t mem)
{
    if (mem == DT_MEM_CUDA)
        r->p2p_cuda++;
    else
        r->p2p_host++;
    if (len && standin->is_device(buf))
        r->p2p_devptr++;
}

static dt_status_t rec_isend(void *ctx, int peer, const void *buf, size_t len,
                             dt_mem_t mem, int tag, dt_request_t **req)
{
    rec_t *r = ctx;
    note_p2p(r, buf, len, mem);
    return inproc_ops.isend(r->inner, peer, buf, len, mem, tag, req);
}

static dt_status_t rec_irecv(void *ctx, int peer, void *buf, size_t len,
                             dt_mem_t mem, int tag, dt_request_t **req)
{
    rec_t *r = ctx;
    note_p2p(r, buf, len, mem);
    return inproc_ops.irecv(r->inner, peer, buf, len, mem, tag, req);
}

static dt_status_t rec_test(void *ctx, dt_request_t *q, int *done)
{
    return inproc_ops.test(((rec_t *)ctx)->inner, q, done);
}

static dt_status_t rec_wait(void *ctx, dt_request_t **q, size_t n, int ms)
{
    return inproc_ops.wait(((rec_t *)ctx)->inner, q, n, ms);
}

/* A native allreduce (float32 sum/avg): every rank sends its whole vector
 * to every other and adds them up in rank order. It reads DT_MEM_CUDA
 * buffers directly, as NCCL would read real device memory: the stand-in's
 * "device" memory is host memory. */
static dt_status_t rec_allreduce(void *ctx, const void *send, void *recv,
                                 size_t count, dt_dtype_t t, dt_redop_t op,
                                 dt_mem_t mem, void *stream)
{
    rec_t *r = ctx;
    if (mem == DT_MEM_CUDA && r->sc->native == NATIVE_HOST_ONLY) {
        r->nat_declined++;
        return DT_DECLINED;
    }
    if (t != DT_FLOAT32 || (op != DT_SUM && op != DT_AVG))
        return DT_DECLINED;
    if (mem == DT_MEM_CUDA)
        r->nat_cuda++;
    else
        r->nat_host++;
    if (count && (standin->is_device(send) || standin->is_device(recv)))
        r->nat_devptr++;
    if (stream != (mem == DT_MEM_CUDA ? STREAM : NULL))
        r->nat_badstream++;
    size_t bytes = count * sizeof(float);
    float *all = calloc(RANKS, bytes ? bytes : 1);
    if (!all)
        return DT_ERR_NOMEM;
    memcpy(all + (size_t)r->rank * count, send, bytes);
    dt_request_t *q[2 * RANKS];
    size_t nq = 0;
    dt_status_t st = DT_OK;
    for (int p = 0; p < RANKS && st == DT_OK; p++) {
        if (p == r->rank)
            continue;
        st = inproc_ops.irecv(r->inner, p, all + (size_t)p * count, bytes,
                              DT_MEM_HOST, NATIVE_TAG, &q[nq++]);
        if (st == DT_OK)
            st = inproc_ops.isend(r->inner, p, send, bytes, DT_MEM_HOST,
                                  NATIVE_TAG, &q[nq++]);
    }
    if (st == DT_OK)
        st = inproc_ops.wait(r->inner, q, nq, 20000);
    for (size_t i = 0; st == DT_OK && i < count; i++) {
        float s = 0;
        for (int p = 0; p < RANKS; p++)
            s += all[(size_t)p * count + i];
        ((float *)recv)[i] = op == DT_AVG ? s * (1.0f / RANKS) : s;
    }
    free(all);
    return st;
}

static void rec_fini(void *ctx) { (void)ctx; }

static const dt_transport_ops_t rec_ops = {
    .size = sizeof(dt_transport_ops_t),
    .caps = rec_caps,
    .isend = rec_isend,
    .irecv = rec_irecv,
    .test = rec_test,
    .wait = rec_wait,
    .fini = rec_fini,
};

static const dt_transport_ops_t rec_native_ops = {
    .size = sizeof(dt_transport_ops_t),
    .caps = rec_caps,
    .isend = rec_isend,
    .irecv = rec_irecv,
    .test = rec_test,
    .wait = rec_wait,
    .allreduce = rec_allreduce,
    .fini = rec_fini,
};

/* Sizes: empty, one element, below small_bytes (recursive doubling) and
 * above it (Rabenseifner's halving at 3 ranks). */
static const size_t counts[] = {0, 1, 1000, 100003};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static float input(int rank, size_t i)
{
    return (float)((long)((i * 7 + (size_t)rank * 13) % 101) - 50);
}

typedef struct thread_arg {
    inproc_world_t *w;
    rec_t rec;
    long wrong;
} thread_arg_t;

/* Per rank: every count, in place and not, sum and avg, on device memory,
 * then once on host memory. Returns wrong elements (-1: a call failed). */
static void *rank_main(void *p)
{
    thread_arg_t *ta = p;
    rec_t *r = &ta->rec;
    dt_comm_t c = {.ops = r->sc->native ? &rec_native_ops : &rec_ops,
                   .ctx = r,
                   .rank = r->rank,
                   .size = RANKS,
                   .timeout_ms = 20000};
    dt_comm_query_caps(&c, "recording");
    for (size_t k = 0; k < NCOUNTS && ta->wrong == 0; k++)
        for (int v = 0; v < 4 && ta->wrong == 0; v++) {
            size_t n = counts[k], bytes = n * sizeof(float);
            int in_place = v & 1;
            dt_redop_t op = v & 2 ? DT_AVG : DT_SUM;
            float *h = malloc(bytes + 4), *ds = NULL, *dr = NULL;
            for (size_t i = 0; i < n; i++)
                h[i] = input(r->rank, i);
            if (dt_gpu_alloc(bytes, (void **)&ds) != DT_OK ||
                dt_gpu_alloc(bytes, (void **)&dr) != DT_OK ||
                dt_gpu_copy(ds, DT_MEM_CUDA, h, DT_MEM_HOST, bytes, NULL) ||
                dt_coll_allreduce_mem(&c, ds, in_place ? ds : dr, n,
                                      DT_FLOAT32, op, DT_MEM_CUDA,
                                      STREAM) != DT_OK ||
                dt_gpu_copy(h, DT_MEM_HOST, in_place ? ds : dr, DT_MEM_CUDA,
                            bytes, NULL) != DT_OK)
                ta->wrong = -1;
            for (size_t i = 0; ta->wrong >= 0 && i < n; i++) {
                float s = 0;
                for (int q = 0; q < RANKS; q++)
                    s += input(q, i);
                if (op == DT_AVG)
                    s *= 1.0f / RANKS;
                if (fabsf(h[i] - s) > 1e-5f * (1 + fabsf(s)))
                    ta->wrong++;
            }
            dt_gpu_free(ds);
            dt_gpu_free(dr);
            free(h);
        }
    /* Host memory goes the host way, with no copy through the backend. */
    float hv[64];
    for (int i = 0; i < 64; i++)
        hv[i] = input(r->rank, (size_t)i);
    if (ta->wrong == 0 &&
        dt_coll_allreduce_mem(&c, hv, hv, 64, DT_FLOAT32, DT_SUM,
                              DT_MEM_HOST, NULL) != DT_OK)
        ta->wrong = -1;
    for (int i = 0; ta->wrong == 0 && i < 64; i++)
        if (hv[i] != input(0, (size_t)i) + input(1, (size_t)i) +
                         input(2, (size_t)i))
            ta->wrong++;
    dt_comm_release(&c);
    return NULL;
}

/* Runs every rank of one scenario; returns the backend copies it made
 * beyond the test's own (2 per rank and non-empty call). */
static unsigned long run(const scenario_t *sc, thread_arg_t ta[RANKS])
{
    inproc_world_t *w;
    assert_int_equal(inproc_world_new(RANKS, &w), DT_OK);
    unsigned long c0 = standin->copies;
    pthread_t th[RANKS];
    for (int r = 0; r < RANKS; r++) {
        memset(&ta[r], 0, sizeof ta[r]);
        ta[r].rec = (rec_t){.inner = inproc_rank_ctx(w, r), .rank = r,
                            .sc = sc};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &ta[r]), 0);
    }
    for (int r = 0; r < RANKS; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < RANKS; r++) {
        if (ta[r].wrong)
            fail_msg("caps 0x%x native %d: rank %d: %ld wrong (-1: a call "
                     "failed)", (unsigned)sc->caps, sc->native, r,
                     ta[r].wrong);
        /* caps asked once, at setup, never per call. */
        assert_int_equal(ta[r].rec.caps_calls, 1);
        /* The core's own algorithms never get device memory. */
        assert_int_equal(ta[r].rec.p2p_cuda, 0);
        assert_int_equal(ta[r].rec.p2p_devptr, 0);
    }
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);
    unsigned long calls = 0;
    for (size_t k = 0; k < NCOUNTS; k++)
        calls += counts[k] ? 4 : 0;
    return standin->copies - c0 - 2ul * RANKS * calls;
}

/* Device calls per rank (every count, 4 variants), and those moving data. */
#define DEVICE_CALLS (4 * (long)NCOUNTS)
#define NONEMPTY_CALLS (4 * (long)(NCOUNTS - 1))

/* A host-memory transport (no caps, like tcp): staged, d2h and h2d per
 * call; the core's algorithms get the host copy. */
static void test_stage_plain_transport(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = 0, .native = NATIVE_NONE};
    thread_arg_t ta[RANKS];
    unsigned long extra = run(&sc, ta);
    assert_int_equal(extra, 2ul * RANKS * NONEMPTY_CALLS);
    for (int r = 0; r < RANKS; r++)
        assert_true(ta[r].rec.p2p_host > 0);
}

/* No DT_CAP_CUDA_MEM, but a native allreduce on host memory (like ucx's
 * shared-memory one): it gets the staged host copy, with DT_MEM_HOST. */
static void test_stage_native_host(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = 0, .native = NATIVE_ALL};
    thread_arg_t ta[RANKS];
    unsigned long extra = run(&sc, ta);
    assert_int_equal(extra, 2ul * RANKS * NONEMPTY_CALLS);
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(ta[r].rec.nat_cuda, 0);
        assert_int_equal(ta[r].rec.nat_devptr, 0);
        assert_int_equal(ta[r].rec.nat_host, DEVICE_CALLS + 1);
    }
}

/* DT_CAP_CUDA_MEM and a native allreduce (like nccl): the device buffers
 * and the caller's stream go to the transport; nothing is staged. */
static void test_device_to_transport(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = DT_CAP_CUDA_MEM,
                                  .native = NATIVE_ALL};
    thread_arg_t ta[RANKS];
    unsigned long extra = run(&sc, ta);
    assert_int_equal(extra, 0);
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(ta[r].rec.nat_cuda, DEVICE_CALLS);
        assert_int_equal(ta[r].rec.nat_devptr, NONEMPTY_CALLS);
        assert_int_equal(ta[r].rec.nat_host, 1); /* the host-memory call */
        assert_int_equal(ta[r].rec.p2p_host, 0);
        assert_int_equal(ta[r].rec.nat_badstream, 0); /* the caller's */
    }
}

/* DT_CAP_CUDA_MEM, but the native allreduce declines device memory: the
 * core stages, and the transport gets the host copy. */
static void test_declined_is_staged(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = DT_CAP_CUDA_MEM,
                                  .native = NATIVE_HOST_ONLY};
    thread_arg_t ta[RANKS];
    unsigned long extra = run(&sc, ta);
    assert_int_equal(extra, 2ul * RANKS * NONEMPTY_CALLS);
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(ta[r].rec.nat_declined, DEVICE_CALLS);
        assert_int_equal(ta[r].rec.nat_cuda, 0);
        assert_int_equal(ta[r].rec.nat_devptr, 0);
        assert_int_equal(ta[r].rec.nat_host, DEVICE_CALLS + 1);
    }
}

/* DT_CAP_CUDA_MEM without a native allreduce: the core's algorithms
 * reduce on the CPU, so they get the staged host copy. */
static void test_cap_without_native(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = DT_CAP_CUDA_MEM,
                                  .native = NATIVE_NONE};
    thread_arg_t ta[RANKS];
    unsigned long extra = run(&sc, ta);
    assert_int_equal(extra, 2ul * RANKS * NONEMPTY_CALLS);
}


/* ---- grad_sync: the trainer's gradient buckets on "device" memory ----- */

/* Parameter ranges of a made-up model, forward order. Backward reports
 * them last to first; with 2000-float buckets: [90, 3, 1500, 15, 700] is
 * one bucket, [7, 3000] another, [30] the last (reduced in finish). */
static const size_t gs_len[] = {30, 3000, 7, 700, 15, 1500, 3, 90};
#define GS_LAYERS (sizeof gs_len / sizeof gs_len[0])
#define GS_BUCKET_BYTES (2000 * sizeof(float))
#define GS_BUCKETS 3
#define GS_STEPS 2

typedef struct gs_rank {
    inproc_world_t *w;
    rec_t rec;
    dt_comm_t comm;
    dt_device_t dev;
    char stream_marker; /* &stream_marker is this rank's compute stream */
    const char *grads_lo, *grads_hi; /* the gradient buffer (freed at the
                                        end: the log is checked after) */
    long reads_cuda, reads_host, reads_devptr, reads_pinned;
    size_t buckets[GS_STEPS], d2h[GS_STEPS];
    long wrong; /* -1: a call failed */
} gs_rank_t;

static float gs_grad(int rank, size_t i, int step)
{
    return input(rank, i) + (float)step;
}

/* The dt_grad_sync_comm_t: logs what the reduction reads, then hands the
 * buffer to dt_allreduce_mem's decision (dt_coll_allreduce_mem). */
static dt_status_t gs_allreduce(void *arg, const void *send, void *recv,
                                size_t count, dt_dtype_t t, dt_redop_t op,
                                dt_mem_t mem, void *stream)
{
    gs_rank_t *g = arg;
    if (t == DT_FLOAT32 && count) {
        standin->note(SI_TEST_READ, &g->dev, stream, NULL, send, NULL,
                      count * sizeof(float));
        if (mem == DT_MEM_CUDA)
            g->reads_cuda++;
        else
            g->reads_host++;
        if (standin->is_device(send))
            g->reads_devptr++;
        if (standin->is_pinned(send))
            g->reads_pinned++;
    }
    return dt_coll_allreduce_mem(&g->comm, send, recv, count, t, op, mem,
                                 stream);
}

static void *gs_rank_main(void *p)
{
    gs_rank_t *g = p;
    g->comm = (dt_comm_t){.ops = g->rec.sc->native ? &rec_native_ops
                                                   : &rec_ops,
                          .ctx = &g->rec,
                          .rank = g->rec.rank,
                          .size = RANKS,
                          .timeout_ms = 20000};
    dt_comm_query_caps(&g->comm, "recording");
    g->dev = (dt_device_t){.kind = DT_DEVICE_CUDA,
                           .mem = DT_MEM_CUDA,
                           .ordinal = 0,
                           .stream = &g->stream_marker};
    snprintf(g->dev.name, sizeof g->dev.name, "stand-in rank %d",
             g->rec.rank);
    size_t n = 0;
    for (size_t l = 0; l < GS_LAYERS; l++)
        n += gs_len[l];
    float *grads = NULL;
    dt_grad_sync_t *s = NULL;
    dt_grad_sync_comm_t comm = {
        .allreduce = gs_allreduce,
        .arg = g,
        .device_mem = dt_comm_device_path(&g->comm) == DT_PATH_DEVICE};
    if (dt_device_alloc(&g->dev, n * sizeof(float), (void **)&grads) !=
            DT_OK ||
        dt_grad_sync_new_comm(grads, n, &g->dev, GS_BUCKET_BYTES, RANKS,
                              &comm, &s) != DT_OK) {
        g->wrong = -1;
        goto out;
    }
    g->grads_lo = (const char *)grads;
    g->grads_hi = (const char *)(grads + n);
    for (int step = 0; step < GS_STEPS && g->wrong == 0; step++) {
        /* The second step has unequal shares: scale 1/2, then DT_SUM. */
        dt_grad_sync_set_scale(s, step == 1 ? 0.5 : 0.0);
        size_t hi = n;
        for (size_t l = GS_LAYERS; l-- > 0 && g->wrong == 0;) {
            size_t lo = hi - gs_len[l];
            /* The layer's backward "kernel" writes its gradients on the
             * compute stream (the stand-in's device memory is host). */
            for (size_t i = lo; i < hi; i++)
                grads[i] = gs_grad(g->rec.rank, i, step);
            standin->note(SI_TEST_WRITE, &g->dev, g->dev.stream, NULL,
                          grads + lo, NULL, (hi - lo) * sizeof(float));
            if (dt_grad_sync_ready(s, lo, hi - lo) != DT_OK)
                g->wrong = -1;
            hi = lo;
        }
        if (g->wrong == 0 && dt_grad_sync_finish(s, NULL) != DT_OK)
            g->wrong = -1;
        g->buckets[step] = dt_grad_sync_buckets(s);
        g->d2h[step] = dt_grad_sync_d2h_copies(s);
        for (size_t i = 0; g->wrong >= 0 && i < n; i++) {
            float want = 0;
            for (int q = 0; q < RANKS; q++)
                want += step == 1 ? gs_grad(q, i, step) * 0.5f
                                  : gs_grad(q, i, step);
            if (step == 0)
                want *= 1.0f / RANKS;
            if (fabsf(grads[i] - want) > 1e-5f * (1 + fabsf(want)))
                g->wrong++;
        }
    }
out:
    dt_grad_sync_free(s);
    dt_device_free(&g->dev, grads);
    dt_comm_release(&g->comm);
    return NULL;
}

static int overlaps(const standin_entry_t *e, const void *p, size_t bytes)
{
    const char *a = e->dst, *b = p;
    return a < b + bytes && b < a + e->bytes;
}

/* Index of an entry before `before` and after `after` matching op, dev,
 * stream (NULL: any) and event (NULL: any); -1 if none. Latest first. */
static long find(const standin_entry_t *log, long after, long before,
                 standin_op_t op, const void *dev, const void *stream,
                 const void *event)
{
    for (long k = before - 1; k > after; k--)
        if (log[k].op == op && log[k].dev == dev &&
            (!stream || log[k].stream == stream) &&
            (!event || log[k].event == event))
            return k;
    return -1;
}

/* The latest write of [p, p + bytes) on the compute stream before i. */
static long last_write(const standin_entry_t *log, long i, const void *dev,
                       const void *p, size_t bytes)
{
    for (long k = i - 1; k >= 0; k--)
        if (log[k].dev == dev &&
            (log[k].op == SI_TEST_WRITE || log[k].op == SI_SCALE) &&
            overlaps(&log[k], p, bytes))
            return k;
    return -1;
}

/* An event recorded on `on` after w and waited for (op SI_WAIT on
 * waiter, or SI_EVSYNC) after that and before i. */
static int ordered(const standin_entry_t *log, long w, long i,
                   const void *dev, const void *on, standin_op_t wait_op,
                   const void *waiter)
{
    for (long j = i - 1; j > w; j--) {
        if (log[j].op != wait_op || log[j].dev != dev ||
            (waiter && log[j].stream != waiter))
            continue;
        if (find(log, w, j, SI_RECORD, dev, on, log[j].event) >= 0)
            return 1;
    }
    return 0;
}

static void gs_run(const scenario_t *sc, gs_rank_t g[RANKS])
{
    inproc_world_t *w;
    assert_int_equal(inproc_world_new(RANKS, &w), DT_OK);
    standin->nlog = 0;
    unsigned long d2h0 = standin->dev_d2h;
    pthread_t th[RANKS];
    for (int r = 0; r < RANKS; r++) {
        memset(&g[r], 0, sizeof g[r]);
        g[r].rec = (rec_t){.inner = inproc_rank_ctx(w, r), .rank = r,
                           .sc = sc};
        assert_int_equal(pthread_create(&th[r], NULL, gs_rank_main, &g[r]),
                         0);
    }
    for (int r = 0; r < RANKS; r++)
        pthread_join(th[r], NULL);
    assert_true(standin->nlog < MAX_LOG);
    for (int r = 0; r < RANKS; r++) {
        if (g[r].wrong)
            fail_msg("caps 0x%x: rank %d: %ld wrong gradients (-1: a call "
                     "failed)", (unsigned)sc->caps, r, g[r].wrong);
        for (int step = 0; step < GS_STEPS; step++)
            assert_int_equal(g[r].buckets[step], GS_BUCKETS);
    }
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);
    /* Copies device to host through the dt_device_t, over every rank. */
    d2h0 = standin->dev_d2h - d2h0;
    g[0].wrong = (long)d2h0; /* handed back through rank 0 */
}

/* A transport that reads device memory (like nccl): zero device-to-host
 * copies; every bucket reaches the transport as a device pointer, on the
 * collectives' stream, which first waited for an event recorded on the
 * compute stream after the bucket's last write; no device-wide sync. */
static void test_grad_sync_device_resident(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = DT_CAP_CUDA_MEM,
                                  .native = NATIVE_ALL};
    gs_rank_t g[RANKS];
    gs_run(&sc, g);
    assert_int_equal(g[0].wrong, 0); /* no d2h copy on any rank */
    const standin_entry_t *log = standin->log;
    long n = (long)standin->nlog;
    for (int r = 0; r < RANKS; r++) {
        const void *dev = &g[r].dev, *compute = g[r].dev.stream;
        for (int step = 0; step < GS_STEPS; step++)
            assert_int_equal(g[r].d2h[step], 0);
        assert_int_equal(g[r].reads_cuda, GS_STEPS * GS_BUCKETS);
        assert_int_equal(g[r].reads_devptr, GS_STEPS * GS_BUCKETS);
        assert_int_equal(g[r].reads_host, 0);
        assert_int_equal(g[r].rec.nat_cuda, GS_STEPS * GS_BUCKETS);
        assert_int_equal(g[r].rec.p2p_cuda, 0);
        long reads = 0, last_read = -1;
        for (long i = 0; i < n; i++) {
            const standin_entry_t *e = &log[i];
            if (e->dev != dev)
                continue;
            assert_int_not_equal(e->op, SI_DEVSYNC);
            assert_int_not_equal(e->op, SI_EVSYNC); /* no host waits */
            assert_int_not_equal(e->op, SI_COPY);
            assert_int_not_equal(e->op, SI_COPY_ASYNC);
            if (e->op != SI_TEST_READ)
                continue;
            reads++;
            last_read = i;
            /* Not the compute stream: the reduction overlaps backward. */
            assert_non_null(e->stream);
            assert_ptr_not_equal(e->stream, compute);
            long wr = last_write(log, i, dev, e->dst, e->bytes);
            assert_true(wr >= 0);
            if (!ordered(log, wr, i, dev, compute, SI_WAIT, e->stream))
                fail_msg("rank %d: a bucket of %zu bytes was reduced "
                         "without waiting for an event recorded after its "
                         "gradients were written", r, e->bytes);
        }
        assert_int_equal(reads, GS_STEPS * GS_BUCKETS);
        /* The compute stream (the optimizer) waits for the reductions. */
        assert_true(find(log, last_read, n, SI_WAIT, dev, compute, NULL) >
                    last_read);
    }
}

/* A host-memory transport (no caps, like tcp): one device-to-host copy
 * per bucket, queued on a copy stream (not the compute stream) after an
 * event behind the bucket's gradients, into pinned memory; the reduction
 * reads the pinned copy only after an event behind that copy. */
static void test_grad_sync_staged_per_bucket(void **state)
{
    (void)state;
    static const scenario_t sc = {.caps = 0, .native = NATIVE_NONE};
    gs_rank_t g[RANKS];
    gs_run(&sc, g);
    assert_int_equal(g[0].wrong, RANKS * GS_STEPS * GS_BUCKETS);
    const standin_entry_t *log = standin->log;
    long n = (long)standin->nlog;
    for (int r = 0; r < RANKS; r++) {
        const void *dev = &g[r].dev, *compute = g[r].dev.stream;
        for (int step = 0; step < GS_STEPS; step++)
            assert_int_equal(g[r].d2h[step], GS_BUCKETS);
        assert_int_equal(g[r].reads_cuda, 0);
        assert_int_equal(g[r].reads_devptr, 0);
        assert_int_equal(g[r].reads_host, GS_STEPS * GS_BUCKETS);
        assert_int_equal(g[r].reads_pinned, GS_STEPS * GS_BUCKETS);
        long copies = 0, reads = 0;
        for (long i = 0; i < n; i++) {
            const standin_entry_t *e = &log[i];
            if (e->dev != dev)
                continue;
            assert_int_not_equal(e->op, SI_DEVSYNC);
            if (e->op == SI_COPY_ASYNC &&
                (const char *)e->src >= g[r].grads_lo &&
                (const char *)e->src < g[r].grads_hi) {
                copies++;
                assert_ptr_not_equal(e->stream, compute);
                long wr = last_write(log, i, dev, e->src, e->bytes);
                assert_true(wr >= 0);
                if (!ordered(log, wr, i, dev, compute, SI_WAIT, e->stream))
                    fail_msg("rank %d: a bucket was copied to the host "
                             "without waiting for its gradients", r);
            }
            if (e->op != SI_TEST_READ)
                continue;
            reads++;
            /* The latest copy into this range, and an event behind it
             * that the host waited for before reading. */
            long c = -1;
            for (long k = i - 1; k >= 0 && c < 0; k--)
                if (log[k].dev == dev && log[k].op == SI_COPY_ASYNC &&
                    overlaps(&log[k], e->dst, e->bytes))
                    c = k;
            assert_true(c >= 0);
            assert_true((const char *)log[c].dst <= (const char *)e->dst &&
                        (const char *)log[c].dst + log[c].bytes >=
                            (const char *)e->dst + e->bytes);
            if (!ordered(log, c, i, dev, log[c].stream, SI_EVSYNC, NULL))
                fail_msg("rank %d: a bucket's host copy was reduced before "
                         "its copy was waited for", r);
        }
        assert_int_equal(copies, GS_STEPS * GS_BUCKETS);
        assert_int_equal(reads, GS_STEPS * GS_BUCKETS);
    }
}


/* ---- pinned input batches (dt_pipeline_pin) ---------------------------- */

/* The pipeline's batches on a "cuda" device come from pinned memory (the
 * stand-in's host_alloc) and hold the same samples as unpinned ones. */
static void test_pipeline_pinned(void **state)
{
    (void)state;
    enum { NS = 40, C = 1, H = 4, W = 4, B = 6 };
    dt_dataset_t ds;
    memset(&ds, 0, sizeof ds);
    ds.n = NS;
    ds.channels = C;
    ds.height = H;
    ds.width = W;
    ds.sample_len = C * H * W;
    ds.nclasses = 10;
    ds.pixels = malloc(NS * ds.sample_len);
    ds.labels = malloc(NS);
    assert_non_null(ds.pixels);
    assert_non_null(ds.labels);
    for (size_t i = 0; i < NS * ds.sample_len; i++)
        ds.pixels[i] = (uint8_t)(i * 37 + 11);
    for (size_t i = 0; i < NS; i++)
        ds.labels[i] = (uint8_t)(i % 10);
    float mean[1] = {0.5f}, sd[1] = {0.25f};
    assert_int_equal(dt_dataset_set_norm(&ds, mean, 1, sd, 1), DT_OK);
    char marker;
    dt_device_t dev = {.kind = DT_DEVICE_CUDA, .mem = DT_MEM_CUDA,
                       .stream = &marker};
    dt_pipeline_opts_t o = {.batch = B, .world = 1, .seed = 3,
                            .end_epoch = 2, .threads = 2, .prefetch = 2};
    dt_pipeline_t *pin = NULL, *plain = NULL;
    assert_int_equal(dt_pipeline_new(&ds, &o, &pin), DT_OK);
    assert_int_equal(dt_pipeline_new(&ds, &o, &plain), DT_OK);
    assert_int_equal(dt_pipeline_pin(pin, &dev), DT_OK);
    assert_int_equal(dt_pipeline_seek(pin, 0, 0), DT_OK);
    assert_int_equal(dt_pipeline_seek(plain, 0, 0), DT_OK);
    /* Too late once it runs. */
    dt_device_t dev2 = dev;
    dt_pipeline_t *late = NULL;
    assert_int_equal(dt_pipeline_new(&ds, &o, &late), DT_OK);
    assert_int_equal(dt_pipeline_seek(late, 0, 0), DT_OK);
    assert_int_equal(dt_pipeline_pin(late, &dev2), DT_ERR_INTERNAL);
    dt_pipeline_free(late);
    uint64_t steps = dt_pipeline_steps(pin);
    for (uint64_t e = 0; e < 2; e++)
        for (uint64_t st = 0; st < steps; st++) {
            dt_batch_t a, b;
            assert_int_equal(dt_pipeline_next(pin, &a, NULL), DT_OK);
            assert_int_equal(dt_pipeline_next(plain, &b, NULL), DT_OK);
            assert_true(standin->is_pinned(a.x));
            assert_true(standin->is_pinned(a.y));
            assert_false(standin->is_pinned(b.x));
            assert_int_equal(a.count, b.count);
            assert_memory_equal(a.x, b.x,
                                a.count * ds.sample_len * sizeof(float));
            assert_memory_equal(a.y, b.y, a.count * sizeof(int32_t));
        }
    dt_pipeline_free(pin);
    dt_pipeline_free(plain);
    free(ds.pixels);
    free(ds.labels);
}

/* ---- dt_allreduce_mem in a job of one (no dtctl, no transport) --------- */

static void test_job_of_one(void **state)
{
    (void)state;
    unsetenv("DT_RANK");
    unsetenv("DT_WORLD_SIZE");
    assert_int_equal(dt_init(), DT_OK);
    float h[5] = {1, 2, 3, 4, 5}, back[5];
    float *a, *b;
    assert_int_equal(dt_gpu_alloc(sizeof h, (void **)&a), DT_OK);
    assert_int_equal(dt_gpu_alloc(sizeof h, (void **)&b), DT_OK);
    assert_int_equal(dt_gpu_copy(a, DT_MEM_CUDA, h, DT_MEM_HOST, sizeof h,
                                 NULL), DT_OK);
    assert_int_equal(dt_allreduce_mem(a, b, 5, DT_FLOAT32, DT_AVG,
                                      DT_MEM_CUDA, NULL), DT_OK);
    assert_int_equal(dt_gpu_copy(back, DT_MEM_HOST, b, DT_MEM_CUDA,
                                 sizeof back, NULL), DT_OK);
    assert_memory_equal(back, h, sizeof h);
    assert_int_equal(dt_allreduce_mem(a, a, 5, DT_FLOAT32, DT_SUM,
                                      DT_MEM_CUDA, NULL), DT_OK);
    assert_int_equal(dt_allreduce_mem(h, back, 5, DT_FLOAT32, DT_SUM,
                                      (dt_mem_t)9, NULL), DT_ERR_INVALID);
    dt_gpu_free(a);
    dt_gpu_free(b);
    assert_int_equal(dt_finalize(), DT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standin_loaded),
        cmocka_unit_test(test_device_api),
        cmocka_unit_test(test_optimizers_device_path),
        cmocka_unit_test(test_mem_path),
        cmocka_unit_test(test_stage_plain_transport),
        cmocka_unit_test(test_stage_native_host),
        cmocka_unit_test(test_device_to_transport),
        cmocka_unit_test(test_declined_is_staged),
        cmocka_unit_test(test_cap_without_native),
        cmocka_unit_test(test_grad_sync_device_resident),
        cmocka_unit_test(test_grad_sync_staged_per_bucket),
        cmocka_unit_test(test_pipeline_pinned),
        cmocka_unit_test(test_job_of_one),
    };
    return cmocka_run_group_tests(tests, setup_standin, NULL);
}
