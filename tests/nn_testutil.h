/* nn_testutil.h — helpers for the layer and model tests: seeded inputs
 * and finite-difference gradient checks through the public model API.
 * Header-only, for tests. */
#ifndef DT_TEST_NN_TESTUTIL_H
#define DT_TEST_NN_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <dt/nn.h>

/* Uniform in [-1, 1) from a seeded LCG (tests only). */
static inline float test_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) * (1.0 / 8388608.0) - 1.0);
}

static inline void fill_random(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = test_rand(&seed);
}

/* Loss of a train=1 forward with the dropout stream reset to (7, 0), so
 * every evaluation sees the same mask. */
static inline float loss_at(dt_model_t *m, const float *x, const int *y,
                            int batch)
{
    float loss = NAN;
    dt_model_set_rng(m, 7, 0);
    if (dt_model_forward(m, x, y, batch, 1, &loss, NULL) != DT_OK)
        return NAN;
    return loss;
}

/* Compare backward's gradient with central differences for every
 * parameter (cpu model). Returns the number of mismatches; prints each.
 * |analytic - numeric| <= atol + rtol * max(|a|, |n|). */
static inline int grad_check(dt_model_t *m, const float *x, const int *y,
                             int batch, float eps, float atol, float rtol)
{
    float *p, *g;
    size_t n;
    if (dt_model_params(m, &p, &g, &n) != DT_OK)
        return -1;
    if (isnan(loss_at(m, x, y, batch)) ||
        dt_model_backward(m, NULL, NULL) != DT_OK)
        return -1;
    float *analytic = malloc(n * sizeof *analytic);
    if (!analytic)
        return -1;
    for (size_t i = 0; i < n; i++)
        analytic[i] = g[i];
    int bad = 0;
    double maxerr = 0.0;
    for (size_t i = 0; i < n; i++) {
        float keep = p[i];
        p[i] = keep + eps;
        double lp = loss_at(m, x, y, batch);
        p[i] = keep - eps;
        double lm = loss_at(m, x, y, batch);
        p[i] = keep;
        double num = (lp - lm) / (2.0 * eps), a = analytic[i];
        double err = fabs(a - num);
        if (err > maxerr)
            maxerr = err;
        if (!(err <= atol + rtol * fmax(fabs(a), fabs(num)))) {
            if (bad < 10)
                fprintf(stderr, "  param %zu: analytic %.6g numeric %.6g\n",
                        i, a, num);
            bad++;
        }
    }
    fprintf(stderr, "  %zu params checked, max abs error %.3g, %d bad\n", n,
            maxerr, bad);
    free(analytic);
    return bad;
}

/* sync_bn's allreduce, with a second rank made up: it adds that rank's
 * sums (the forward's 2C + 1: sum x, sum x^2, count; the backward's 2C:
 * sum dy, sum dy x) as if it held 24 values per channel of mean 0.25 and
 * variance 1.5, and gradients of sum 0.5 and sum dy x of -0.75 per
 * channel. Both models get the same rank, so the CPU layer and the
 * CUDA path must agree; and the statistics differ from this rank's
 * alone. (test_nn_standin, test_nn_cuda) */
static int test_synthetic_calls;

static inline dt_status_t test_synthetic_rank(void *arg, double *v,
                                             size_t n)
{
    (void)arg;
    test_synthetic_calls++;
    if (n % 2) { /* forward: S, Q, M */
        size_t C = (n - 1) / 2;
        double M = 24.0; /* its count: 24 values per channel */
        for (size_t c = 0; c < C; c++) {
            v[c] += 0.25 * M;
            v[C + c] += (1.5 + 0.25 * 0.25) * M;
        }
        v[2 * C] += M;
    } else {
        size_t C = n / 2;
        for (size_t c = 0; c < C; c++) {
            v[c] += 0.5;
            v[C + c] += -0.75;
        }
    }
    return DT_OK;
}

#endif /* DT_TEST_NN_TESTUTIL_H */
