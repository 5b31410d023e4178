/* test_plan.c — dtctl plan's cost model (core/plan/plan_model.c): the fit
 * recovers known alpha, beta, gamma from synthetic `dtctl bench allreduce`
 * measurements (and from ring-only ones once allgathers join them); the algorithm choice mirrors coll_allreduce.c; bench
 * tables parse; network rates parse. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "plan/plan_model.h"

#define A 25e-6
#define B 0.4e-9
#define G 0.15e-9

static size_t synth(dt_plan_sample_t *s, double noise)
{
    dt_plan_thresholds_t t;
    dt_plan_thresholds_default(&t);
    size_t m = 0;
    unsigned r = 7;
    for (int n = 2; n <= 4; n += 2)
        for (double b = 4096; b <= 64.0 * (1 << 20); b *= 2) {
            dt_plan_alg_t a = dt_plan_choose(&t, n, (size_t)b);
            r = r * 1103515245u + 12345u;
            double e = noise * (((r >> 8) % 2001) / 1000.0 - 1.0);
            s[m++] = (dt_plan_sample_t){n, b,
                                        dt_plan_cost(a, n, b, A, B, G) *
                                            (1 + e),
                                        a};
        }
    return m;
}

static void fit_exact(void **state)
{
    (void)state;
    dt_plan_sample_t s[64];
    size_t m = synth(s, 0);
    double a, b, g;
    assert_int_equal(dt_plan_fit(s, m, &a, &b, &g), 0);
    assert_true(fabs(a - A) / A < 1e-6);
    assert_true(fabs(b - B) / B < 1e-6);
    assert_true(fabs(g - G) / G < 1e-6);
}

static void fit_noisy(void **state)
{
    (void)state;
    dt_plan_sample_t s[64];
    size_t m = synth(s, 0.01); /* +-1% per sample */
    double a, b, g;
    assert_int_equal(dt_plan_fit(s, m, &a, &b, &g), 0);
    assert_true(fabs(a - A) / A < 0.05);
    assert_true(fabs(b - B) / B < 0.05);
    assert_true(fabs(g - G) / G < 0.15);
}

/* Ring-only samples hold beta and gamma in a fixed ratio: the fit keeps
 * one per-byte cost (gamma 0) that still predicts every sample. */
static void fit_ring_only(void **state)
{
    (void)state;
    dt_plan_sample_t s[32];
    size_t m = 0;
    for (int n = 2; n <= 4; n += 2)
        for (double b = 4096; b <= 16.0 * (1 << 20); b *= 4)
            s[m++] = (dt_plan_sample_t){
                n, b, dt_plan_cost(DT_PLAN_RING, n, b, A, B, G),
                DT_PLAN_RING};
    double a, b, g;
    assert_int_equal(dt_plan_fit(s, m, &a, &b, &g), 0);
    for (size_t i = 0; i < m; i++) {
        double p = dt_plan_cost(DT_PLAN_RING, s[i].n, s[i].bytes, a, b, g);
        assert_true(fabs(p - s[i].seconds) / s[i].seconds < 0.02);
    }
    assert_int_equal(dt_plan_fit(s, 1, &a, &b, &g), -1);
}

/* Ring allreduces plus allgathers (the ring's second half: no sums) make
 * gamma separable again: all three recovered, exactly without noise and
 * within 5% / 5% / 15% with +-1% per sample. */
static void fit_ring_and_allgather(void **state)
{
    (void)state;
    for (int noisy = 0; noisy <= 1; noisy++) {
        dt_plan_sample_t s[64];
        size_t m = 0;
        unsigned r = 11;
        for (int k = 0; k < 2; k++)
            for (int n = 2; n <= 4; n += 2)
                for (double b = 4096; b <= 16.0 * (1 << 20); b *= 2) {
                    dt_plan_alg_t al = k ? DT_PLAN_ALLGATHER : DT_PLAN_RING;
                    r = r * 1103515245u + 12345u;
                    double e = noisy ? 0.01 * (((r >> 8) % 2001) / 1000.0 - 1)
                                     : 0;
                    s[m++] = (dt_plan_sample_t){
                        n, b, dt_plan_cost(al, n, b, A, B, G) * (1 + e), al};
                }
        double a, b, g;
        assert_int_equal(dt_plan_fit(s, m, &a, &b, &g), 0);
        double tol = noisy ? 0.05 : 1e-6;
        assert_true(fabs(a - A) / A < tol);
        assert_true(fabs(b - B) / B < tol);
        assert_true(fabs(g - G) / G < (noisy ? 0.15 : 1e-6));
    }
    /* the allgather's cost: N - 1 steps of bytes / N, nothing reduced */
    double c[3];
    dt_plan_coeffs(DT_PLAN_ALLGATHER, 4, 1000, c);
    assert_true(c[0] == 3 && c[1] == 750 && c[2] == 0);
}

static void choice_mirrors_dt(void **state)
{
    (void)state;
    dt_plan_thresholds_t t;
    dt_plan_thresholds_default(&t);
    assert_int_equal(dt_plan_choose(&t, 2, 100 << 10), DT_PLAN_RD);
    assert_int_equal(dt_plan_choose(&t, 2, 256 << 10), DT_PLAN_RING);
    assert_int_equal(dt_plan_choose(&t, 4, 1 << 20), DT_PLAN_HALVING);
    assert_int_equal(dt_plan_choose(&t, 4, 32 << 20), DT_PLAN_RING);
    assert_int_equal(dt_plan_choose(&t, 3, 64 << 20), DT_PLAN_HALVING);
    assert_int_equal(dt_plan_choose(&t, 6, 2 << 20), DT_PLAN_RING);
    assert_int_equal(dt_plan_choose(&t, 6, 512 << 10), DT_PLAN_HALVING);
    /* closed forms: ring 2(N-1) rounds, 2(N-1)/N of the bytes */
    double c[3];
    dt_plan_coeffs(DT_PLAN_RING, 4, 1000, c);
    assert_true(c[0] == 6 && c[1] == 1500 && c[2] == 750);
    dt_plan_coeffs(DT_PLAN_RD, 3, 1000, c); /* 1 round + fold in/out */
    assert_true(c[0] == 3 && c[1] == 3000 && c[2] == 2000);
}

static void parse_bench_table(void **state)
{
    (void)state;
    const char *txt =
        "# dt allreduce: 2 ranks, float32 sum\n"
        "#        bytes        count    time(us) algbw(GB/s) busbw(GB/s)  check\n"
        "          4096         1024       12.50       0.328       0.328     ok\n"
        "       1048576       262144      800.00       1.311       1.311     ok\n"
        "       2097152       524288     1600.00       1.311       1.311  3 bad\n"
        "[0] #        bytes        count    time(us)\n"
        "[0]           8192         2048       20.00       0.410       0.410     ok\n";
    FILE *f = fmemopen((void *)txt, strlen(txt), "r");
    dt_plan_sample_t s[8];
    size_t m = 0;
    dt_plan_thresholds_t t;
    dt_plan_thresholds_default(&t);
    dt_plan_bench_stop_t stop;
    assert_int_equal(dt_plan_parse_bench(f, 2, &t, s, &m, 8, &stop), 3);
    assert_null(stop.why);
    fclose(f);
    assert_int_equal(m, 3);
    assert_true(s[2].bytes == 8192);
    assert_true(s[0].bytes == 4096 && fabs(s[0].seconds - 12.5e-6) < 1e-12);
    assert_int_equal(s[0].alg, DT_PLAN_RD);
    assert_int_equal(s[1].alg, DT_PLAN_RING);

    /* an allgather table's rows are allgathers whatever their size; a
     * following allreduce table's are dt's choice again */
    const char *both =
        "[0] # dt allgather: 2 ranks, float32, bytes = the gathered total\n"
        "[0]           4096         1024        5.00       0.819       0.410     ok\n"
        "[0] # dt allreduce: 2 ranks, float32 sum\n"
        "[0]           4096         1024       12.50       0.328       0.328     ok\n";
    f = fmemopen((void *)both, strlen(both), "r");
    m = 0;
    assert_int_equal(dt_plan_parse_bench(f, 2, &t, s, &m, 8, &stop), 2);
    fclose(f);
    assert_int_equal(s[0].alg, DT_PLAN_ALLGATHER);
    assert_int_equal(s[1].alg, DT_PLAN_RD);
}

/* A file that is no text stops the reading at its line (fgets in 512-byte
 * pieces read /dev/zero for ever, and took "12.50\0 junk" as a row). */
static void parse_bench_not_text(void **state)
{
    (void)state;
    static const char txt[] =
        "# dt allreduce: 2 ranks, float32 sum\n"
        "          4096         1024       12.50       0.328       0.328     ok\n"
        "          8192         2048       20.00\0      0.410       0.410     ok\n";
    FILE *f = fmemopen((void *)txt, sizeof txt - 1, "r");
    dt_plan_sample_t s[8];
    size_t m = 0;
    dt_plan_thresholds_t t;
    dt_plan_thresholds_default(&t);
    dt_plan_bench_stop_t stop;
    assert_int_equal(dt_plan_parse_bench(f, 2, &t, s, &m, 8, &stop), -1);
    fclose(f);
    assert_int_equal(stop.line, 3);
    assert_string_equal(stop.why, "a NUL byte (binary data)");

    f = fopen("/dev/zero", "r");
    assert_non_null(f);
    m = 0;
    assert_int_equal(dt_plan_parse_bench(f, 2, &t, s, &m, 8, &stop), -1);
    fclose(f);
    assert_int_equal(stop.line, 1);
    assert_int_equal(m, 0);
}

/* Two sweeps of the same table: one sample per size, the faster. */
static void keep_fastest(void **state)
{
    (void)state;
    dt_plan_sample_t s[] = {{2, 4096, 10e-6, DT_PLAN_RD},
                            {2, 8192, 30e-6, DT_PLAN_RD},
                            {4, 4096, 12e-6, DT_PLAN_RD},
                            {2, 4096, 8e-6, DT_PLAN_RD},
                            {2, 8192, 50e-6, DT_PLAN_RD},
                            {2, 4096, 9e-6, DT_PLAN_ALLGATHER}};
    size_t m = 6;
    dt_plan_keep_fastest(s, &m);
    assert_int_equal(m, 4);
    assert_true(s[0].bytes == 4096 && s[0].n == 2 && s[0].seconds == 8e-6);
    assert_true(s[1].bytes == 8192 && s[1].seconds == 30e-6);
    assert_true(s[2].n == 4 && s[2].seconds == 12e-6);
    assert_true(s[3].alg == DT_PLAN_ALLGATHER && s[3].seconds == 9e-6);
}

static void rates(void **state)
{
    (void)state;
    double v;
    assert_int_equal(dt_plan_parse_rate("25Gbit", &v), 0);
    assert_true(fabs(v - 3.125e9) < 1);
    assert_int_equal(dt_plan_parse_rate("12GB/s", &v), 0);
    assert_true(fabs(v - 12e9) < 1);
    assert_int_equal(dt_plan_parse_rate("100Mbit/s", &v), 0);
    assert_true(fabs(v - 12.5e6) < 1);
    assert_int_equal(dt_plan_parse_rate("25Gfoo", &v), -1);
    assert_int_equal(dt_plan_parse_rate("-1Gbit", &v), -1);
    assert_int_equal(dt_plan_parse_rate("fast", &v), -1);
    /* bits with a lower-case b, bytes with B; never inf or nan */
    assert_int_equal(dt_plan_parse_rate("25Gb/s", &v), 0);
    assert_true(fabs(v - 3.125e9) < 1);
    /* tc's lower-case spelling of bits (25gbit, 100mbit/s); a bare or
     * lower-case prefix before bytes is refused (tc's "mbps" is bytes) */
    assert_int_equal(dt_plan_parse_rate("25gbit", &v), 0);
    assert_true(fabs(v - 3.125e9) < 1);
    assert_int_equal(dt_plan_parse_rate("100mbit/s", &v), 0);
    assert_true(fabs(v - 12.5e6) < 1);
    assert_int_equal(dt_plan_parse_rate("25G", &v), -1);
    assert_int_equal(dt_plan_parse_rate("25gbps", &v), -1);
    assert_int_equal(dt_plan_parse_rate("25gB/s", &v), -1);
    assert_int_equal(dt_plan_parse_rate("infGbit", &v), -1);
    assert_int_equal(dt_plan_parse_rate("nanGB/s", &v), -1);
    /* 1 bit/s to 1e16 bit/s: value x unit overflowing to inf, or a rate
     * that would stall the simulation, refused */
    assert_int_equal(dt_plan_parse_rate("1e300Tbit", &v), -1);
    assert_int_equal(dt_plan_parse_rate("1e-300bit", &v), -1);
    assert_int_equal(dt_plan_parse_rate("0.5bit", &v), -1);
    assert_int_equal(dt_plan_parse_rate("1bit", &v), 0);
    assert_true(v == 0.125);
    assert_int_equal(dt_plan_parse_rate("10000Tbit", &v), 0);
    assert_int_equal(dt_plan_parse_rate("10001Tbit", &v), -1);
}

/* --model-params: plain counts, decimal suffixes; nothing else. */
static void counts(void **state)
{
    (void)state;
    double v;
    assert_int_equal(dt_plan_parse_count("138357544", &v), 0);
    assert_true(v == 138357544.0);
    assert_int_equal(dt_plan_parse_count("44.7M", &v), 0);
    assert_true(fabs(v - 44.7e6) < 1);
    assert_int_equal(dt_plan_parse_count("25.6e6", &v), 0);
    assert_true(fabs(v - 25.6e6) < 1);
    assert_int_equal(dt_plan_parse_count("1.5G", &v), 0);
    assert_true(fabs(v - 1.5e9) < 1);
    assert_int_equal(dt_plan_parse_count("0", &v), -1);
    assert_int_equal(dt_plan_parse_count("-5M", &v), -1);
    assert_int_equal(dt_plan_parse_count("12MB", &v), -1);
    assert_int_equal(dt_plan_parse_count("many", &v), -1);
    assert_int_equal(dt_plan_parse_count("0.5", &v), -1);
    assert_int_equal(dt_plan_parse_count("inf", &v), -1);
    assert_int_equal(dt_plan_parse_count("1e13", &v), 0);
    assert_int_equal(dt_plan_parse_count("1e300", &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fit_exact),        cmocka_unit_test(fit_noisy),
        cmocka_unit_test(fit_ring_only),    cmocka_unit_test(choice_mirrors_dt),
        cmocka_unit_test(fit_ring_and_allgather),
        cmocka_unit_test(keep_fastest),
        cmocka_unit_test(parse_bench_table),
        cmocka_unit_test(parse_bench_not_text), cmocka_unit_test(rates),
        cmocka_unit_test(counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
