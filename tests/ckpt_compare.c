/* ckpt_compare.c — test helper: compare the parameters (and optimizer
 * state, and the model's buffers: batchnorm running statistics) of two
 * trainer checkpoints.
 *
 *   ckpt_compare A.dtckpt B.dtckpt            bit-exact or exit 1
 *   ckpt_compare A.dtckpt B.dtckpt TOL        max |a-b| <= TOL*(1+|a|)
 *
 * Prints the number of parameters and the largest difference. Buffers
 * must be bit-exact without TOL; with TOL they are compared alike. A
 * checkpoint without the buffers section (an older dt) matches one whose
 * section is empty. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"

enum { TAG_PARAMS = 2, TAG_OPT_STATE = 3, TAG_BUFFERS = 5 };

static int section(const dt_ckpt_t *c, uint32_t tag,
                   const dt_ckpt_section_t **s)
{
    *s = dt_ckpt_find(c, tag);
    if (!*s)
        fprintf(stderr, "%s: no section %u\n", c->path, tag);
    return *s != NULL;
}

/* Floats of two sections of equal length that differ: bit-wise, or by
 * more than tol * (1 + |a|) (a NaN on either side always differs within
 * a tolerance); *worst: the largest |a - b|. */
static size_t differ(const dt_ckpt_section_t *a, const dt_ckpt_section_t *b,
                     int use_tol, double tol, double *worst)
{
    size_t bad = 0, n = a->len / sizeof(float);
    for (size_t i = 0; i < n; i++) {
        float x, y;
        memcpy(&x, (const char *)a->data + 4 * i, 4);
        memcpy(&y, (const char *)b->data + 4 * i, 4);
        double d = fabs((double)x - (double)y);
        if (d != d) /* a NaN on either side: no tolerance makes it equal */
            d = INFINITY;
        if (d > *worst)
            *worst = d;
        if (use_tol ? !(d <= tol * (1.0 + fabs((double)x)))
                    : memcmp(&x, &y, 4) != 0)
            bad++;
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: ckpt_compare A B [TOLERANCE]\n");
        return 2;
    }
    dt_ckpt_t a, b;
    if (dt_ckpt_read(argv[1], &a) != DT_OK)
        return 2;
    if (dt_ckpt_read(argv[2], &b) != DT_OK)
        return 2;
    const dt_ckpt_section_t *pa, *pb, *oa, *ob;
    if (!section(&a, TAG_PARAMS, &pa) || !section(&b, TAG_PARAMS, &pb) ||
        !section(&a, TAG_OPT_STATE, &oa) || !section(&b, TAG_OPT_STATE, &ob))
        return 2;
    if (pa->len != pb->len || oa->len != ob->len) {
        printf("different sizes: params %zu vs %zu, optimizer state %zu vs "
               "%zu bytes\n", pa->len, pb->len, oa->len, ob->len);
        return 1;
    }
    size_t n = pa->len / sizeof(float);
    double tol = argc == 4 ? atof(argv[3]) : 0.0, worst = 0.0;
    size_t bad = differ(pa, pb, argc == 4, tol, &worst);
    int same_opt = memcmp(oa->data, ob->data, oa->len) == 0;
    printf("%zu parameters, %zu differ%s, max |diff| %.3g; optimizer state "
           "%s\n", n, bad, argc == 4 ? " beyond tolerance" : "", worst,
           same_opt ? "identical" : "differs");
    int ok = bad == 0 && (argc == 4 || same_opt);
    const dt_ckpt_section_t *ba = dt_ckpt_find(&a, TAG_BUFFERS),
                            *bb = dt_ckpt_find(&b, TAG_BUFFERS);
    size_t la = ba ? ba->len : 0, lb = bb ? bb->len : 0;
    if (la != lb) {
        printf("different buffers: %zu vs %zu floats\n", la / 4, lb / 4);
        ok = 0;
    } else if (la) {
        double bworst = 0.0;
        size_t bbad = differ(ba, bb, argc == 4, tol, &bworst);
        printf("%zu buffer floats, %zu differ%s, max |diff| %.3g\n", la / 4,
               bbad, argc == 4 ? " beyond tolerance" : "", bworst);
        ok = ok && bbad == 0;
    }
    dt_ckpt_free(&a);
    dt_ckpt_free(&b);
    return ok ? 0 : 1;
}
