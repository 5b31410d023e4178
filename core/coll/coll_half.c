/* coll_half.c — 16-bit wire formats for the compressed float32 allreduce
 * ([collectives] compression, coll_internal.h): float32 to bfloat16 or
 * IEEE half and back, the widening add the reductions use, and the error
 * feedback residuals.
 *
 * Rounding: round to nearest, ties to even, in both formats.
 * - bf16: the top 16 bits of the float32, rounded (+0x7fff plus the lowest
 *   kept bit); NaN stays NaN (quiet bit set); overflow rounds to inf as
 *   float32 itself would, which bf16's float32 range makes a non-issue.
 * - fp16: IEEE binary16. Its range ends at 65504, below what a gradient sum
 *   can reach, so finite values beyond ±65504 SATURATE to ±65504 instead of
 *   becoming inf (a silent inf would poison the whole model at the next
 *   step; a clipped element is a bounded error). inf and NaN pass through.
 *   Values below 2^-24 flush to (signed) zero, subnormals round as IEEE
 *   says. No loss scaling: scale gradients before the allreduce if they
 *   live near the subnormal range.
 * Loops: bf16 in GCC vector extensions (SIMD at every level, AVX2/AVX-512
 * clones, simd_clones.h); fp16 with F16C (vcvtps2ph / vcvtph2ps) when the
 * CPU has it, chosen once at run time, else a portable scalar loop that
 * gives the same bits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "cuda/elem_math.h"
#include "coll_internal.h"
#include "simd_clones.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define DT_HAVE_F16C_PATH 1
#endif

typedef uint32_t vu32 __attribute__((vector_size(32)));
typedef uint16_t vu16 __attribute__((vector_size(16)));
typedef float vf32 __attribute__((vector_size(32)));

#define FP16_MAX 65504.0f

/* ---- scalar conversions (the reference every loop agrees with) ---- */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bf16: the rounding the CUDA kernels use too (cuda/elem_math.h) */
static inline uint16_t bf16_round(float f) { return dt_elem_to_bf16(f); }

static inline float bf16_widen(uint16_t h) { return dt_elem_from_bf16(h); }

/* float32 -> binary16, round to nearest even, saturating finite values. */
static uint16_t fp16_round(float f)
{
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: keep it a quiet NaN */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a == 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x477fe000u) /* >= 65520 would round to inf: saturate */
        return (uint16_t)(sign | 0x7bffu);
    if (a >= 0x38800000u) { /* normal in half: >= 2^-14 */
        uint32_t r = a + 0x0fffu + ((a >> 13) & 1);
        return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
    }
    if (a < 0x33000000u) /* < 2^-25: rounds to zero */
        return (uint16_t)sign;
    /* Subnormal half: mantissa with the implicit bit, shifted. */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    /* value = m * 2^(e-150); the half subnormal unit is 2^-24, so
     * units = m * 2^(e-126) = m >> (126 - e), shift 14..24. */
    uint32_t shift = 126 - e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1),
             halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1)))
        q++;
    return (uint16_t)(sign | q);
}

static float fp16_widen(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f,
             m = h & 0x3ffu;
    if (e == 0x1f)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return bits_f32(sign);
        float v = (float)m * (1.0f / 16777216.0f); /* exact: m * 2^-24 */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* ---- bf16 loops ---- */

DT_SIMD_CLONES static void bf16_from(uint16_t *dst, const float *src,
                                     size_t n)
{
    size_t i = 0;
    const vu32 zero = {0}, bias = zero + 0x7fffu, absm = zero + 0x7fffffffu,
               infb = zero + 0x7f800000u;
    for (; i + 8 <= n; i += 8) {
        vu32 u;
        memcpy(&u, src + i, sizeof u);
        vu32 r = (u + bias + ((u >> 16) & 1)) >> 16;
        vu32 nan = (vu32)((u & absm) > infb);
        r = (r & ~nan) | (((u >> 16) | 0x40) & nan);
        vu16 h = __builtin_convertvector(r, vu16);
        memcpy(dst + i, &h, sizeof h);
    }
    for (; i < n; i++)
        dst[i] = bf16_round(src[i]);
}

DT_SIMD_CLONES static void bf16_to(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vu16 h;
        memcpy(&h, src + i, sizeof h);
        vu32 u = __builtin_convertvector(h, vu32) << 16;
        memcpy(dst + i, &u, sizeof u);
    }
    for (; i < n; i++)
        dst[i] = bf16_widen(src[i]);
}

/* dst = a + widen(b) */
DT_SIMD_CLONES static void bf16_add(float *dst, const float *a,
                                    const uint16_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vu16 h;
        vf32 x;
        memcpy(&h, b + i, sizeof h);
        memcpy(&x, a + i, sizeof x);
        vf32 y = (vf32)(__builtin_convertvector(h, vu32) << 16);
        x = x + y;
        memcpy(dst + i, &x, sizeof x);
    }
    for (; i < n; i++)
        dst[i] = a[i] + bf16_widen(b[i]);
}

/* ---- fp16 loops ---- */

static void fp16_from_scalar(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = fp16_round(src[i]);
}

static void fp16_to_scalar(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = fp16_widen(src[i]);
}

static void fp16_add_scalar(float *dst, const float *a, const uint16_t *b,
                            size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = a[i] + fp16_widen(b[i]);
}

#ifdef DT_HAVE_F16C_PATH
/* vcvtps2ph rounds as its immediate says (nearest even, whatever MXCSR
 * holds) and handles subnormals and NaN as IEEE; only the saturation is
 * ours: finite lanes are clamped to ±65504 first, inf and NaN lanes keep
 * the input (min/max would turn NaN into the bound). */
__attribute__((target("avx2,f16c"))) static void
fp16_from_f16c(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    const __m256 hi = _mm256_set1_ps(FP16_MAX), lo = _mm256_set1_ps(-FP16_MAX);
    const __m256 inf = _mm256_set1_ps(__builtin_inff());
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(src + i);
        __m256 c = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
        __m256 fin = _mm256_cmp_ps(_mm256_and_ps(x, absm), inf, _CMP_LT_OQ);
        x = _mm256_blendv_ps(x, c, fin);
        __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    fp16_from_scalar(dst + i, src + i, n - i);
}

__attribute__((target("avx2,f16c"))) static void
fp16_to_f16c(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      (const __m128i *)(src + i))));
    fp16_to_scalar(dst + i, src + i, n - i);
}

__attribute__((target("avx2,f16c"))) static void
fp16_add_f16c(float *dst, const float *a, const uint16_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i)));
        _mm256_storeu_ps(dst + i, _mm256_add_ps(_mm256_loadu_ps(a + i), y));
    }
    fp16_add_scalar(dst + i, a + i, b + i, n - i);
}

static int portable_only; /* dt_wire_set_portable (tests) */

static int have_f16c(void)
{
    static int v = -1;
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    }
    return v && !portable_only;
}

void dt_wire_set_portable(int on) { portable_only = on; }
#else
void dt_wire_set_portable(int on) { (void)on; }
#endif

/* ---- entry points (coll_internal.h) ---- */

size_t dt_wire_size(dt_dtype_t wire)
{
    return wire == DT_BFLOAT16 || wire == DT_FLOAT16 ? 2 : 4;
}

void dt_wire_from_f32(void *dst, const float *src, size_t n, dt_dtype_t wire)
{
    if (wire == DT_BFLOAT16) {
        bf16_from(dst, src, n);
        return;
    }
#ifdef DT_HAVE_F16C_PATH
    if (have_f16c()) {
        fp16_from_f16c(dst, src, n);
        return;
    }
#endif
    fp16_from_scalar(dst, src, n);
}

void dt_wire_to_f32(float *dst, const void *src, size_t n, dt_dtype_t wire)
{
    if (wire == DT_BFLOAT16) {
        bf16_to(dst, src, n);
        return;
    }
#ifdef DT_HAVE_F16C_PATH
    if (have_f16c()) {
        fp16_to_f16c(dst, src, n);
        return;
    }
#endif
    fp16_to_scalar(dst, src, n);
}

void dt_wire_add(float *dst, const float *a, const void *b, size_t n,
                 dt_dtype_t wire)
{
    if (wire == DT_BFLOAT16) {
        bf16_add(dst, a, b, n);
        return;
    }
#ifdef DT_HAVE_F16C_PATH
    if (have_f16c()) {
        fp16_add_f16c(dst, a, b, n);
        return;
    }
#endif
    fp16_add_scalar(dst, a, b, n);
}

/* x = widen(round(x)), through a small stack buffer. */
void dt_wire_round_f32(float *x, size_t n, dt_dtype_t wire)
{
    uint16_t tmp[2048];
    for (size_t i = 0; i < n; i += 2048) {
        size_t k = n - i < 2048 ? n - i : 2048;
        dt_wire_from_f32(tmp, x + i, k, wire);
        dt_wire_to_f32(x + i, tmp, k, wire);
    }
}

/* ---- error feedback (coll_internal.h) ---- */

typedef struct ef_entry {
    const void *key;
    size_t count;
    float *res;
} ef_entry_t;

struct dt_coll_ef {
    ef_entry_t *e;
    size_t n, cap;
    int warned;
};

/* At most this many distinct buffers keep a residual (the trainer has at
 * most 4096 buckets); beyond, calls go without feedback (warned once). */
#define EF_MAX_BUFFERS 4096

/* The residual of an element whose wire value w stands for x, plus what
 * it held (prev). An inf or NaN in the vector (inf - inf = NaN) would
 * make the element NaN in every later call on this buffer (one overflowed
 * step of a loss-scaled job, skipped by the optimizer, poisoned the rest
 * of the run): such an element starts over at 0. A finite excess (fp16
 * saturated at ±65504) is carried and paid back in later calls, at most
 * 65504 a call, as any rounding error. */
static inline float residual_of(float prev, float x, float w, float f)
{
    float r = prev + (x - w) * f;
    return __builtin_isfinite(r) ? r : 0.0f;
}

void dt_wire_residual(float *res, const float *x, const void *h, size_t n,
                      dt_dtype_t wire, float f)
{
    float w[2048];
    const char *hb = h;
    for (size_t i = 0; i < n; i += 2048) {
        size_t k = n - i < 2048 ? n - i : 2048;
        dt_wire_to_f32(w, hb + i * 2, k, wire);
        for (size_t j = 0; j < k; j++)
            res[i + j] = residual_of(res[i + j], x[i + j], w[j], f);
    }
}

dt_status_t dt_coll_feedback(dt_comm_t *c, float *buf, size_t count,
                             dt_dtype_t wire, float **res_out)
{
    *res_out = NULL;
    if (!c->ef && !(c->ef = calloc(1, sizeof *c->ef)))
        return DT_ERR_NOMEM;
    struct dt_coll_ef *f = c->ef;
    ef_entry_t *hit = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->e[i].key == buf && f->e[i].count == count) {
            hit = &f->e[i];
            break;
        }
    if (!hit) {
        if (f->n == EF_MAX_BUFFERS) {
            if (!f->warned)
                dt_warn("collectives: rank %d: compression_feedback keeps "
                        "residuals for %d buffers at most; further buffers "
                        "go without feedback", c->rank, EF_MAX_BUFFERS);
            f->warned = 1;
            dt_wire_round_f32(buf, count, wire);
            return DT_OK;
        }
        if (f->n == f->cap) {
            size_t cap = f->cap ? 2 * f->cap : 16;
            ef_entry_t *p = realloc(f->e, cap * sizeof *p);
            if (!p)
                return DT_ERR_NOMEM;
            f->e = p;
            f->cap = cap;
        }
        float *res = calloc(count ? count : 1, sizeof *res);
        if (!res) {
            dt_error("collectives: rank %d: cannot allocate %zu bytes for "
                     "the compression_feedback residual", c->rank,
                     count * sizeof *res);
            return DT_ERR_NOMEM;
        }
        hit = &f->e[f->n++];
        *hit = (ef_entry_t){.key = buf, .count = count, .res = res};
    }
    /* v = x + e; x = widen(round(v)); e = v - x. */
    float tmp[2048];
    float *res = hit->res;
    *res_out = res;
    for (size_t i = 0; i < count; i += 2048) {
        size_t k = count - i < 2048 ? count - i : 2048;
        for (size_t j = 0; j < k; j++)
            tmp[j] = buf[i + j] + res[i + j];
        memcpy(buf + i, tmp, k * sizeof *tmp);
        dt_wire_round_f32(buf + i, k, wire);
        for (size_t j = 0; j < k; j++)
            res[i + j] = residual_of(0.0f, tmp[j], buf[i + j], 1.0f);
    }
    return DT_OK;
}

void dt_coll_feedback_free(dt_comm_t *c)
{
    struct dt_coll_ef *f = c->ef;
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        free(f->e[i].res);
    free(f->e);
    free(f);
    c->ef = NULL;
}
