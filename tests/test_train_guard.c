/* test_train_guard.c — what keeps training finite: gradient clipping
 * against a reference on a synthetic gradient set, the same bits on every
 * rank after a real allreduce (N ranks as threads over the in-process
 * transport), the collective vote on a non-finite loss (every rank learns
 * which rank and what value), and the [train] keys' errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/coll.h"
#include "train/divergence.h"
#include "train/grad_clip.h"
#include "train/preempt.h"
#include "train/train.h"
#include <dt/train.h>
#include "inproc_transport.h"
#include "stderr_capture.h"

#define N_GRAD 100003 /* not a multiple of the 8 summation lanes */
#define MAX_RANKS 8

/* Rank r's synthetic gradient: a spread of magnitudes and signs. */
static float grad_value(int r, size_t i)
{
    double x = sin((double)i * 0.37 + r) * pow(10.0, (double)(i % 7) - 4);
    return (float)(x * (1 + r));
}

static long double ref_norm(const float *g, size_t n)
{
    long double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (long double)g[i] * g[i];
    return sqrtl(s);
}

static void test_clip_matches_reference(void **state)
{
    (void)state;
    float *g = malloc(N_GRAD * sizeof *g), *orig = malloc(N_GRAD * sizeof *g);
    for (size_t i = 0; i < N_GRAD; i++)
        orig[i] = g[i] = grad_value(0, i);
    long double ref = ref_norm(g, N_GRAD);
    assert_true(fabsl(dt_grad_norm(g, N_GRAD) - ref) < 1e-12L * ref);

    /* Norm clipping: scaled by max / (norm + 1e-6), as PyTorch does. */
    dt_grad_clip_t c = {.max_value = 0, .max_norm = 1.0};
    assert_true(ref > 1.0);
    double norm = dt_grad_clip_apply(&c, g, N_GRAD);
    assert_true(fabsl(norm - ref) < 1e-12L * ref);
    float f = (float)(1.0 / (norm + 1e-6));
    for (size_t i = 0; i < N_GRAD; i++)
        assert_true(g[i] == orig[i] * f);
    assert_true(fabs(dt_grad_norm(g, N_GRAD) - 1.0) < 1e-5);

    /* Below the limit nothing changes. */
    memcpy(g, orig, N_GRAD * sizeof *g);
    c.max_norm = 2.0 * (double)ref;
    dt_grad_clip_apply(&c, g, N_GRAD);
    assert_memory_equal(g, orig, N_GRAD * sizeof *g);

    /* Value clipping first, then the norm of what it left. */
    memcpy(g, orig, N_GRAD * sizeof *g);
    c = (dt_grad_clip_t){.max_value = 0.01, .max_norm = 0.5};
    float *want = malloc(N_GRAD * sizeof *want);
    for (size_t i = 0; i < N_GRAD; i++)
        want[i] = orig[i] > 0.01f ? 0.01f
                  : orig[i] < -0.01f ? -0.01f : orig[i];
    long double vref = ref_norm(want, N_GRAD);
    norm = dt_grad_clip_apply(&c, g, N_GRAD);
    assert_true(fabsl(norm - vref) < 1e-12L * vref);
    f = (float)(0.5 / (norm + 1e-6));
    for (size_t i = 0; i < N_GRAD; i++)
        assert_true(g[i] == want[i] * f);

    /* A NaN is not hidden: it stays, the norm says so, nothing scales. */
    memcpy(g, orig, N_GRAD * sizeof *g);
    g[17] = NAN;
    norm = dt_grad_clip_apply(&c, g, N_GRAD);
    assert_true(isnan(norm));
    assert_true(isnan(g[17]));
    assert_true(g[18] == want[18]);
    free(want);
    free(orig);
    free(g);
}

/* ---- N ranks as threads ------------------------------------------------ */

typedef struct rank_arg {
    inproc_world_t *w;
    int rank, size;
    size_t small_bytes;          /* picks the allreduce algorithm         */
    float *grads;                /* out: the clipped average              */
    double norm;                 /* out                                   */
    dt_bad_kind_t kind;          /* in: this rank's vote                  */
    double value;
    dt_divergence_t vote;        /* out                                   */
    dt_status_t st;
} rank_arg_t;

static dt_comm_t comm_of(rank_arg_t *a)
{
    return (dt_comm_t){.ops = &inproc_ops,
                       .ctx = inproc_rank_ctx(a->w, a->rank),
                       .rank = a->rank,
                       .size = a->size,
                       .small_bytes = a->small_bytes,
                       .ring_bytes = a->small_bytes == 1 ? 1 : 0,
                       .chunk_bytes = 64 * 1024,
                       .timeout_ms = 20000};
}

static void *clip_rank(void *p)
{
    rank_arg_t *a = p;
    dt_comm_t c = comm_of(a);
    for (size_t i = 0; i < N_GRAD; i++)
        a->grads[i] = grad_value(a->rank, i);
    a->st = dt_coll_allreduce(&c, a->grads, a->grads, N_GRAD, DT_FLOAT32,
                              DT_AVG);
    dt_grad_clip_t clip = {.max_value = 0.5, .max_norm = 0.25};
    a->norm = dt_grad_clip_apply(&clip, a->grads, N_GRAD);
    dt_comm_release(&c);
    return NULL;
}

static dt_status_t comm_sum(double *buf, size_t n, void *arg)
{
    return dt_coll_allreduce(arg, buf, buf, n, DT_FLOAT64, DT_SUM);
}

static void *vote_rank(void *p)
{
    rank_arg_t *a = p;
    dt_comm_t c = comm_of(a);
    a->st = dt_divergence_vote(a->kind, a->value, a->rank, a->size, comm_sum,
                               &c, &a->vote);
    dt_comm_release(&c);
    return NULL;
}

static void run(int n, rank_arg_t *a, void *(*fn)(void *))
{
    inproc_world_t *w;
    pthread_t th[MAX_RANKS];
    assert_int_equal(inproc_world_new(n, &w), DT_OK);
    for (int r = 0; r < n; r++) {
        a[r].w = w;
        a[r].rank = r;
        a[r].size = n;
        assert_int_equal(pthread_create(&th[r], NULL, fn, &a[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++)
        assert_int_equal(a[r].st, DT_OK);
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);
}

static void test_clip_same_on_every_rank(void **state)
{
    (void)state;
    /* The ring (large) and recursive doubling (small): both leave the
     * same average everywhere, so the clipping is the same everywhere. */
    size_t smalls[] = {1, (size_t)-1};
    int sizes[] = {3, 4, 8};
    for (size_t k = 0; k < 2; k++)
        for (size_t z = 0; z < 3; z++) {
            int n = sizes[z];
            rank_arg_t a[MAX_RANKS];
            memset(a, 0, sizeof a);
            for (int r = 0; r < n; r++) {
                a[r].small_bytes = smalls[k];
                a[r].grads = malloc(N_GRAD * sizeof(float));
            }
            run(n, a, clip_rank);
            assert_true(a[0].norm > 0.25); /* it did clip */
            assert_true(fabs(dt_grad_norm(a[0].grads, N_GRAD) - 0.25) <
                        1e-5);
            for (int r = 1; r < n; r++) {
                assert_memory_equal(&a[r].norm, &a[0].norm,
                                    sizeof a[0].norm);
                assert_memory_equal(a[r].grads, a[0].grads,
                                    N_GRAD * sizeof(float));
            }
            for (int r = 0; r < n; r++)
                free(a[r].grads);
        }
}

static void test_vote(void **state)
{
    (void)state;
    rank_arg_t a[MAX_RANKS];
    /* Everything finite: one sum, nobody diverged. */
    memset(a, 0, sizeof a);
    run(5, a, vote_rank);
    for (int r = 0; r < 5; r++)
        assert_int_equal(a[r].vote.nbad, 0);

    /* NaN on rank 3 only: every rank learns it, with the value. */
    memset(a, 0, sizeof a);
    a[3].kind = DT_BAD_LOSS;
    a[3].value = NAN;
    run(5, a, vote_rank);
    for (int r = 0; r < 5; r++) {
        assert_int_equal(a[r].vote.nbad, 1);
        assert_int_equal(a[r].vote.first_rank, 3);
        assert_int_equal(a[r].vote.kind, DT_BAD_LOSS);
        assert_true(isnan(a[r].vote.value));
    }

    /* inf on ranks 1 and 4, a bad gradient norm everywhere: the loss is
     * what is named. */
    memset(a, 0, sizeof a);
    for (int r = 0; r < 6; r++) {
        a[r].kind = DT_BAD_GRAD;
        a[r].value = INFINITY;
    }
    a[4].kind = a[1].kind = DT_BAD_LOSS;
    a[1].value = INFINITY;
    a[4].value = NAN;
    run(6, a, vote_rank);
    for (int r = 0; r < 6; r++) {
        assert_int_equal(a[r].vote.nbad, 2);
        assert_int_equal(a[r].vote.first_rank, 1);
        assert_int_equal(a[r].vote.kind, DT_BAD_LOSS);
        assert_true(isinf(a[r].vote.value));
    }

    /* Only the gradient norm: every rank, kind GRAD. */
    memset(a, 0, sizeof a);
    for (int r = 0; r < 2; r++) {
        a[r].kind = DT_BAD_GRAD;
        a[r].value = NAN;
    }
    run(2, a, vote_rank);
    assert_int_equal(a[1].vote.nbad, 2);
    assert_int_equal(a[1].vote.kind, DT_BAD_GRAD);

    /* One rank: no communication at all. */
    dt_divergence_t d;
    assert_int_equal(dt_divergence_vote(DT_BAD_LOSS, NAN, 0, 1, NULL, NULL,
                                        &d), DT_OK);
    assert_int_equal(d.nbad, 1);
    assert_int_equal(d.first_rank, 0);
    assert_int_equal(dt_divergence_vote(DT_BAD_NONE, 0, 0, 1, NULL, NULL,
                                        &d), DT_OK);
    assert_int_equal(d.nbad, 0);
}

/* The trainer's agreements ride on the vote: one sum call carries them,
 * and every rank gets the totals. */
typedef struct flag_sum {
    int calls;
} flag_sum_t;

static dt_status_t fake_sum(double *buf, size_t n, void *arg)
{
    flag_sum_t *f = arg;
    f->calls++;
    /* as if 3 other ranks voted: no divergence, flags 1 and 0 */
    assert_int_equal(n, 3);
    buf[1] += 1.0;
    return DT_OK;
}

static void test_vote_flags(void **state)
{
    (void)state;
    flag_sum_t f = {0};
    double flags[2] = {0.0, 1.0}; /* no preemption here; clock due */
    dt_divergence_t d;
    assert_int_equal(dt_divergence_vote_flags(DT_BAD_NONE, 0, 0, 4, fake_sum,
                                              &f, flags, 2, &d), DT_OK);
    assert_int_equal(f.calls, 1); /* no extra collective */
    assert_int_equal(d.nbad, 0);
    assert_true(flags[0] == 1.0 && flags[1] == 1.0);
    /* One rank: the flags stay as they are, nothing is called. */
    double one[1] = {1.0};
    assert_int_equal(dt_divergence_vote_flags(DT_BAD_NONE, 0, 0, 1, NULL,
                                              NULL, one, 1, &d), DT_OK);
    assert_true(one[0] == 1.0);
    double many[DT_VOTE_MAX_FLAGS + 1];
    assert_int_equal(dt_divergence_vote_flags(DT_BAD_NONE, 0, 0, 1, NULL,
                                              NULL, many,
                                              DT_VOTE_MAX_FLAGS + 1, &d),
                     DT_ERR_INVALID);
}

static void expect_config_error(const char *key, const char *value,
                                int has_ckpt, const char *text)
{
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(dt_config_set(cfg, "train", key, value,
                                   DT_SRC_JOB_FILE, "job.ini:7"), DT_OK);
    capture_t c;
    capture_begin(&c);
    dt_grad_clip_t clip;
    dt_on_divergence_t on;
    dt_status_t st = dt_grad_clip_from_config(cfg, &clip);
    if (st == DT_OK)
        st = dt_on_divergence_from_config(cfg, has_ckpt, &on);
    char *log = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(log, "job.ini:7: [train] "));
    assert_non_null(strstr(log, text));
    free(log);
    dt_config_free(cfg);
}

static void test_config(void **state)
{
    (void)state;
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    dt_grad_clip_t clip;
    dt_on_divergence_t on;
    assert_int_equal(dt_grad_clip_from_config(cfg, &clip), DT_OK);
    assert_false(dt_grad_clip_enabled(&clip));
    assert_int_equal(dt_on_divergence_from_config(cfg, 0, &on), DT_OK);
    assert_int_equal(on, DT_DIVERGE_STOP);
    assert_int_equal(dt_config_set(cfg, "train", "clip_grad_norm", "2.5",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_config_set(cfg, "train", "on_divergence", "halve_lr",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_grad_clip_from_config(cfg, &clip), DT_OK);
    assert_true(clip.max_norm == 2.5 && clip.max_value == 0);
    assert_true(dt_grad_clip_enabled(&clip));
    assert_int_equal(dt_on_divergence_from_config(cfg, 1, &on), DT_OK);
    assert_int_equal(on, DT_DIVERGE_HALVE_LR);
    dt_config_free(cfg);

    expect_config_error("clip_grad_norm", "-1", 1, "clip_grad_norm must be 0 "
                                                   "(off) or more");
    expect_config_error("clip_grad_value", "big", 1, "clip_grad_value = "
                                                     "'big' is not a number");
    expect_config_error("on_divergence", "retry", 1, "on_divergence 'retry' "
                                                     "is not known");
    expect_config_error("on_divergence", "halve_lr", 0,
                        "set [train] checkpoint_dir too");
}

/* async over nccl: refused with both settings' origins (nccl matches
 * point-to-point messages by posting order, the servers by tag). */
static void test_async_transport(void **state)
{
    (void)state;
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(dt_config_set(cfg, "train", "mode", "async",
                                   DT_SRC_JOB_FILE, "job.ini:2"), DT_OK);
    assert_int_equal(dt_train_check_config(cfg, 2), DT_OK);
    assert_int_equal(dt_config_set(cfg, "cluster", "transport", "nccl",
                                   DT_SRC_CLI, "--transport"), DT_OK);
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_train_check_config(cfg, 2);
    char *log = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(log, "job.ini:2: [train] mode = async does not "
                                "run over transport nccl (--transport)"));
    free(log);
    dt_config_free(cfg);
}

/* A preemption request that comes while the rank evaluates or writes a
 * checkpoint (busy) waits without the watchdog; after it, the watchdog
 * has its grace and, with no vote, the worker dies by the signal (in a
 * child: the signal is real). */
static void test_preempt_busy(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        dt_preempt_install();
        dt_preempt_set_grace_ms(50);
        dt_preempt_busy(true);
        raise(SIGTERM);
        usleep(400 * 1000); /* 8 graces: a watchdog would have fired */
        char alive = dt_preempt_requested() == SIGTERM ? 'a' : 'x';
        if (write(p[1], &alive, 1) != 1)
            _exit(3);
        dt_preempt_busy(false);
        usleep(2000 * 1000); /* the watchdog ends it within 50 ms */
        _exit(0);
    }
    close(p[1]);
    char c = 0;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    assert_int_equal(c, 'a');
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFSIGNALED(ws));
    assert_int_equal(WTERMSIG(ws), SIGTERM);
}

/* dt_train_run in a process started as one of N workers, without
 * dt_init: refused (it trained alone as rank 0 of 1, N times over). */
static void test_run_without_init(void **state)
{
    (void)state;
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(setenv("DT_WORLD_SIZE", "2", 1), 0);
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_train_run(cfg, NULL);
    char *log = capture_end(&cap);
    unsetenv("DT_WORLD_SIZE");
    assert_int_equal(st, DT_ERR_INVALID);
    assert_non_null(strstr(log, "call dt_init() first"));
    free(log);
    dt_config_free(cfg);
}

/* on_divergence = halve_lr passes over a checkpoint whose last loss is
 * more than 10x the job's first step's; unknown losses never are. */
static void test_loss_ruined(void **state)
{
    (void)state;
    assert_false(dt_loss_ruined(2.3, 2.3));
    assert_false(dt_loss_ruined(23.0, 2.3));  /* 10x: still sound */
    assert_true(dt_loss_ruined(23.1, 2.3));
    assert_true(dt_loss_ruined(3e36, 2.3));
    assert_true(dt_loss_ruined(INFINITY, 2.3));
    assert_false(dt_loss_ruined(NAN, 2.3));   /* step 0: no loss yet */
    assert_false(dt_loss_ruined(1e30, NAN));  /* a dt before the record */
    assert_false(dt_loss_ruined(1e30, 0.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_matches_reference),
        cmocka_unit_test(test_clip_same_on_every_rank),
        cmocka_unit_test(test_vote),
        cmocka_unit_test(test_vote_flags),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_async_transport),
        cmocka_unit_test(test_preempt_busy),
        cmocka_unit_test(test_run_without_init),
        cmocka_unit_test(test_loss_ruined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
