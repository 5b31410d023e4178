/* coll_reduce.c — the element-wise reduction kernels the collectives use.
 *
 * Vectorization: the loops are written with GCC vector extensions (32-byte
 * vectors, loaded and stored with memcpy so any alignment works), so they
 * are SIMD at every optimization level the build uses, not only when the
 * auto-vectorizer's cost model agrees. Checked with
 *   objdump -d core/.libs/libdt.so | awk '/<dt_coll_reduce3>:/,/^$/'
 * (the kernels are inlined there), which shows addps/maxps/minps on pairs
 * of xmm registers per 32-byte vector (baseline x86-64, SSE2), vaddps with
 * -mavx; each kernel is also built for AVX2 and AVX-512 (simd_clones.h),
 * whose wider loads matter when the data is in cache: a 2 MiB allreduce
 * through shared memory spent 19% of its time here at baseline, and the
 * tcp ring at N = 2 went from parity with Open MPI at 2-4 MiB to 1.13-2.4x
 * (docs/PERFORMANCE.md#reduction-kernels). Element-wise IEEE add and the
 * max/min below give the same bits whatever the vector width and the
 * operands' order, so every rank computes the same result. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_internal.h"
#include "simd_clones.h"

typedef float vf32 __attribute__((vector_size(32)));
typedef double vf64 __attribute__((vector_size(32)));
typedef int32_t vi32 __attribute__((vector_size(32)));
typedef uint32_t vu32 __attribute__((vector_size(32)));

/* Vector select: C has no ?: on vectors, so blend with the compare mask. */
#define VSEL(cond, x, y)                                                      \
    ({                                                                        \
        __typeof__(cond) m_ = (cond);                                         \
        (__typeof__(x))(((__typeof__(m_))(x) & m_) |                          \
                        ((__typeof__(m_))(y) & ~m_));                         \
    })

/* One kernel per (type, op): dst[i] = a[i] OP b[i]; dst may equal a. */
#define DEFINE_KERNEL(NAME, T, VT, VEXPR, SEXPR)                              \
    DT_SIMD_CLONES static void NAME(T *dst, const T *a, const T *b, size_t n) \
    {                                                                         \
        const size_t lanes = sizeof(VT) / sizeof(T);                          \
        size_t i = 0;                                                         \
        for (; i + 2 * lanes <= n; i += 2 * lanes) {                          \
            VT x0, x1, y0, y1;                                                \
            memcpy(&x0, a + i, sizeof x0);                                    \
            memcpy(&x1, a + i + lanes, sizeof x1);                            \
            memcpy(&y0, b + i, sizeof y0);                                    \
            memcpy(&y1, b + i + lanes, sizeof y1);                            \
            VT r0, r1;                                                        \
            { VT x = x0, y = y0; r0 = (VEXPR); }                              \
            { VT x = x1, y = y1; r1 = (VEXPR); }                              \
            memcpy(dst + i, &r0, sizeof r0);                                  \
            memcpy(dst + i + lanes, &r1, sizeof r1);                          \
        }                                                                     \
        for (; i < n; i++) {                                                  \
            T x = a[i], y = b[i];                                             \
            dst[i] = (SEXPR);                                                 \
        }                                                                     \
    }

/* Floating max/min must not depend on the order of their operands:
 * recursive doubling has each rank of a pair compute mine OP peer's, and
 * x > y ? x : y gives max(NaN, 1) = 1 but max(1, NaN) = NaN, and keeps
 * whichever zero came first — the ranks ended with different bits. So: a
 * NaN on either side gives the one canonical NaN; equal operands (+0 and
 * -0 among them) combine their bits, AND for max (+0), OR for min (-0). */
#define VEQ_BITS(x, y, OP)                                                    \
    ((__typeof__(x))((__typeof__(x == y))(x) OP (__typeof__(x == y))(y)))
#define VMAXMIN(T, x, y, CMP, OP)                                             \
    VSEL((x != x) | (y != y), (__typeof__(x)){0} + (T)NAN,                    \
         VSEL(x == y, VEQ_BITS(x, y, OP), VSEL(x CMP y, x, y)))

#define SCALAR_MAXMIN(NAME, T, U, CMP, OP)                                    \
    static inline T NAME(T x, T y)                                            \
    {                                                                         \
        if (x != x || y != y)                                                 \
            return (T)NAN;                                                    \
        if (x == y) {                                                         \
            U a, b;                                                           \
            memcpy(&a, &x, sizeof a);                                         \
            memcpy(&b, &y, sizeof b);                                         \
            a = a OP b;                                                       \
            memcpy(&x, &a, sizeof a);                                         \
            return x;                                                         \
        }                                                                     \
        return x CMP y ? x : y;                                               \
    }
SCALAR_MAXMIN(max_f32, float, uint32_t, >, &)
SCALAR_MAXMIN(min_f32, float, uint32_t, <, |)
SCALAR_MAXMIN(max_f64, double, uint64_t, >, &)
SCALAR_MAXMIN(min_f64, double, uint64_t, <, |)

DEFINE_KERNEL(reduce_f32_sum, float, vf32, x + y, x + y)
DEFINE_KERNEL(reduce_f32_max, float, vf32, VMAXMIN(float, x, y, >, &),
              max_f32(x, y))
DEFINE_KERNEL(reduce_f32_min, float, vf32, VMAXMIN(float, x, y, <, |),
              min_f32(x, y))
DEFINE_KERNEL(reduce_f64_sum, double, vf64, x + y, x + y)
DEFINE_KERNEL(reduce_f64_max, double, vf64, VMAXMIN(double, x, y, >, &),
              max_f64(x, y))
DEFINE_KERNEL(reduce_f64_min, double, vf64, VMAXMIN(double, x, y, <, |),
              min_f64(x, y))
/* Integer sums wrap like the hardware: done on the unsigned bits (two's
 * complement), so overflow is defined. */
DEFINE_KERNEL(reduce_u32_sum, uint32_t, vu32, x + y, x + y)
DEFINE_KERNEL(reduce_i32_max, int32_t, vi32, VSEL(x > y, x, y), x > y ? x : y)
DEFINE_KERNEL(reduce_i32_min, int32_t, vi32, VSEL(x < y, x, y), x < y ? x : y)

int dt_coll_reducible(dt_dtype_t t, dt_redop_t op)
{
    return (t == DT_FLOAT32 || t == DT_FLOAT64 || t == DT_INT32) &&
           (unsigned)op < DT_REDOP_COUNT;
}

dt_status_t dt_coll_reduce3(void *dst, const void *a, const void *b, size_t n,
                            dt_dtype_t t, dt_redop_t op)
{
    if (n == 0)
        return DT_OK;
    int kind = op == DT_AVG ? DT_SUM : (int)op; /* avg: sum, scaled later */
    switch (t) {
    case DT_FLOAT32:
        if (kind == DT_SUM) reduce_f32_sum(dst, a, b, n);
        else if (kind == DT_MAX) reduce_f32_max(dst, a, b, n);
        else if (kind == DT_MIN) reduce_f32_min(dst, a, b, n);
        else break;
        return DT_OK;
    case DT_FLOAT64:
        if (kind == DT_SUM) reduce_f64_sum(dst, a, b, n);
        else if (kind == DT_MAX) reduce_f64_max(dst, a, b, n);
        else if (kind == DT_MIN) reduce_f64_min(dst, a, b, n);
        else break;
        return DT_OK;
    case DT_INT32:
        if (kind == DT_SUM) reduce_u32_sum(dst, a, b, n);
        else if (kind == DT_MAX) reduce_i32_max(dst, a, b, n);
        else if (kind == DT_MIN) reduce_i32_min(dst, a, b, n);
        else break;
        return DT_OK;
    default:
        break;
    }
    dt_error("reduction of %s with op %d is not supported (supported: "
             "float32, float64, int32 with sum, avg, max, min)",
             dt_dtype_name(t), (int)op);
    return DT_ERR_UNSUPPORTED;
}

dt_status_t dt_reduce_local(void *dst, const void *src, size_t n,
                            dt_dtype_t t, dt_redop_t op)
{
    return dt_coll_reduce3(dst, dst, src, n, t, op);
}

/* p[i] *= s in vectors, as the kernels above: the -O2 auto-vectorizer
 * left this loop scalar (an unknown count), and it is a pass over every
 * averaged gradient (6 instructions a float, as many as the sum's vector
 * adds over the same floats 9 times over). One IEEE multiply per element:
 * the same bits at any vector width. */
#define DEFINE_SCALE(NAME, T, VT)                                             \
    DT_SIMD_CLONES static void NAME(T *p, T s, size_t n)                      \
    {                                                                         \
        const size_t lanes = sizeof(VT) / sizeof(T);                          \
        size_t i = 0;                                                         \
        for (; i + 2 * lanes <= n; i += 2 * lanes) {                          \
            VT x0, x1;                                                        \
            memcpy(&x0, p + i, sizeof x0);                                    \
            memcpy(&x1, p + i + lanes, sizeof x1);                            \
            x0 *= s;                                                          \
            x1 *= s;                                                          \
            memcpy(p + i, &x0, sizeof x0);                                    \
            memcpy(p + i + lanes, &x1, sizeof x1);                            \
        }                                                                     \
        for (; i < n; i++)                                                    \
            p[i] *= s;                                                        \
    }
DEFINE_SCALE(scale_f32, float, vf32)
DEFINE_SCALE(scale_f64, double, vf64)

/* Averages multiply by f (= 1/size): float types in their own precision,
 * int32 rounds to nearest. */
dt_status_t dt_reduce_scale(void *buf, size_t n, dt_dtype_t t, double f)
{
    switch (t) {
    case DT_FLOAT32:
        scale_f32(buf, (float)f, n);
        return DT_OK;
    case DT_FLOAT64:
        scale_f64(buf, f, n);
        return DT_OK;
    case DT_INT32: {
        int32_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = (int32_t)lround((double)p[i] * f);
        return DT_OK;
    }
    default:
        dt_error("scaling %s values is not supported", dt_dtype_name(t));
        return DT_ERR_UNSUPPORTED;
    }
}
