/* cudnn_conv.c (CUDA backend) — convolution forward and backward through
 * cuDNN's convolution API (cudnnConvolutionForward, BackwardData,
 * BackwardFilter, BackwardBias), NCHW float with cross-correlation (what
 * dt's cpu conv computes).
 *
 * Precision ([train] precision, precision.c): in fp32 the math type is
 * CUDNN_FMA_MATH, FMA kernels only. cuDNN's CUDNN_DEFAULT_MATH lets
 * Ampere and Hopper GPUs run float convolutions on tensor cores in TF32
 * (10-bit mantissa), which would not match the cpu layers within float
 * tolerance: that is precision = tf32 (CUDNN_TENSOR_OP_MATH, what
 * PyTorch does by default). In fp16 (as cuBLAS's GEMMs then) the
 * convolution opts into CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: tensor
 * cores, the float inputs converted down, float storage and accumulation.
 * That conversion's 16-bit type is cuDNN's choice (fp16, the one it is
 * documented for; on an H200 bf16 and fp16 runs gave bit-identical
 * losses, 2026-11-26), so in bf16 dt converts itself: x, w and dy to
 * bf16 copies (the backend's to_bf16 kernel), cuDNN on BF16 tensors with
 * float accumulation (PSEUDO_BFLOAT16, compute capability 8.0 and up),
 * its outputs widened back to float (the "bf16 copies" below).
 *
 * Algorithms: per shape (n, c, h, w, out channels, k, stride, pad) the
 * three algorithms are picked once and cached with the math type to run
 * each with in the device's state (cuda/cudnn.h). By default from cuDNN's
 * heuristics (cudnnGet*Algorithm_v7, no trial runs), preferring
 * deterministic full-precision algorithms within the workspace limit
 * (512 MiB; the environment's DT_CUDNN_WORKSPACE_MAX, a size like 64M --
 * a bare number is bytes, 0 only algorithms without workspace --
 * changes it: less memory, maybe slower algorithms; a shape with nothing
 * within it is said) (DT_CUDNN_PICK); with [train] cudnn_benchmark = yes
 * by timing them (cudnnFind*Algorithm: one trial run of each candidate,
 * on cuDNN's own scratch buffers -- the limit then filters the choice
 * only, the trials allocate what they need), the fastest within the
 * workspace limit, deterministic or not. The workspace is grown to the
 * largest the shapes seen need, once per new shape at most. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include <dt/config.h>
#include <dt/log.h>
#include "cuda/cudnn.h"
#include "cuda/precision.h"

#define DT_CUDNN_WORKSPACE_DEFAULT ((uint64_t)512 << 20)
#define DT_CUDNN_NALGO 16

/* The workspace an algorithm may need to be preferred: read once. */
static uint64_t workspace_max(void)
{
    static uint64_t max;
    if (!max) {
        const char *e = getenv("DT_CUDNN_WORKSPACE_MAX");
        uint64_t v = DT_CUDNN_WORKSPACE_DEFAULT;
        if (e && *e && dt_parse_size(e, &v) != DT_OK) {
            dt_warn("DT_CUDNN_WORKSPACE_MAX=%s: not a size like 64M; "
                    "using 512M", e);
            v = DT_CUDNN_WORKSPACE_DEFAULT;
        } else if (e && *e) {
            dt_info("cuDNN: algorithms needing at most %s of workspace "
                    "preferred (DT_CUDNN_WORKSPACE_MAX)", e);
        }
        max = v ? v : 1;
    }
    return max;
}

/* Index of the perf result to use, -1 if none: of those that ran (they
 * come sorted by expected speed) the first in full float precision (not
 * a tensor-op math type; in bf16/fp16 any math type counts) and
 * deterministic within the workspace limit, then the first in full
 * precision within the limit, then in full precision, and only then
 * anything (its math type is then used for the call, with a warning in
 * fp32: cuDNN offered nothing else for this shape). */
#define DT_CUDNN_PICK(perf, n, out, exact)                                    \
    do {                                                                      \
        (out) = -1;                                                           \
        for (int pass = 0; pass < 4 && (out) < 0; pass++)                     \
            for (int i_ = 0; i_ < (n) && (out) < 0; i_++) {                   \
                if ((perf)[i_].status != CUDNN_STATUS_SUCCESS)                \
                    continue;                                                 \
                int fp32_ = !(exact) ||                                       \
                            (perf)[i_].mathType == CUDNN_FMA_MATH ||          \
                            (perf)[i_].mathType == CUDNN_DEFAULT_MATH;        \
                int det_ = benchmark ||                                       \
                           (perf)[i_].determinism == CUDNN_DETERMINISTIC;     \
                int fits_ = (perf)[i_].memory <= workspace_max();            \
                if ((pass == 0 && fp32_ && det_ && fits_) ||                  \
                    (pass == 1 && fp32_ && fits_) || (pass == 2 && fp32_) ||  \
                    pass == 3)                                                \
                    (out) = i_;                                               \
            }                                                                 \
    } while (0)

/* A pick beyond the workspace limit (nothing within it ran for the
 * shape): said, so that a lowered limit is not believed silently. */
static void note_over_limit(const dt_conv_geom_t *g, const char *which,
                            size_t bytes)
{
    if (bytes > workspace_max())
        dt_info("cuDNN: no %s algorithm within the workspace limit for a "
                "conv of %dx%dx%d at batch %d: using one that needs %.1f "
                "MiB", which, g->c, g->h, g->w, g->n,
                (double)bytes / (1 << 20));
}

/* [train] cudnn_benchmark: time the candidates (the process drives one
 * GPU with one trainer, so the mode is the module's, as precision's). */
static int benchmark;

dt_status_t dt_cudnn_set_benchmark(dt_device_t *dev, int on)
{
    (void)dev;
    benchmark = on != 0;
    return DT_OK;
}

/* The math type the descriptor asks for while algorithms are picked:
 * FMA in fp32, tensor ops (TF32) in tf32, tensor ops with conversion in
 * bf16/fp16. */
static cudnnMathType_t wanted_math(void)
{
    int p = dt_cuda_precision();
    return p == DT_PRECISION_FP32   ? CUDNN_FMA_MATH
           : p == DT_PRECISION_TF32 ? CUDNN_TENSOR_OP_MATH
           : p == DT_PRECISION_BF16 ? CUDNN_TENSOR_OP_MATH
                                    : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* The element type cuDNN sees: bf16 copies under precision = bf16. */
static cudnnDataType_t data_type(void)
{
    return dt_cuda_precision() == DT_PRECISION_BF16 ? CUDNN_DATA_BFLOAT16
                                                    : CUDNN_DATA_FLOAT;
}

/* The math type to run a picked algorithm with: in fp32, FMA (full float
 * precision) unless cuDNN offered only a tensor-op one; in tf32, bf16 and
 * fp16 the one it was offered with. */
static cudnnMathType_t math_of(dt_device_t *dev, cudnnMathType_t offered,
                               const char *which)
{
    if (dt_cuda_precision() != DT_PRECISION_FP32)
        return offered;
    if (offered == CUDNN_FMA_MATH || offered == CUDNN_DEFAULT_MATH)
        return CUDNN_FMA_MATH;
    dt_warn("cuDNN offers only a tensor-op (reduced precision) %s "
            "algorithm for a conv shape on %s: using it", which, dev->name);
    return offered;
}

/* Set the convolution's math type for the call about to be made. */
static dt_status_t set_math(dt_device_t *dev, dt_cudnn_t *s,
                            cudnnMathType_t math)
{
    return dt_cudnn_check(dev, cudnnSetConvolutionMathType(s->conv, math),
                          "cudnnSetConvolutionMathType");
}

/* y's descriptor with elements of type t. */
static dt_status_t describe_y(dt_device_t *dev, dt_cudnn_t *s,
                              const dt_conv_geom_t *g, int out_c,
                              cudnnDataType_t t)
{
    return dt_cudnn_check(dev,
                          cudnnSetTensor4dDescriptor(s->y, CUDNN_TENSOR_NCHW,
                                                     t, g->n, out_c, g->oh,
                                                     g->ow),
                          "cudnnSetTensor4dDescriptor");
}

/* Describe x, w, y (of type t) and the convolution (math type math) for
 * this shape; the convolution accumulates in float. */
static dt_status_t describe_as(dt_device_t *dev, dt_cudnn_t *s,
                               const dt_conv_geom_t *g, int out_c,
                               cudnnDataType_t t, cudnnMathType_t math)
{
    DT_CHECK(dt_cudnn_check(dev,
                            cudnnSetTensor4dDescriptor(s->x,
                                                       CUDNN_TENSOR_NCHW, t,
                                                       g->n, g->c, g->h,
                                                       g->w),
                            "cudnnSetTensor4dDescriptor"));
    DT_CHECK(describe_y(dev, s, g, out_c, t));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnSetFilter4dDescriptor(s->filter, t, CUDNN_TENSOR_NCHW, out_c,
                                   g->c, g->k, g->k),
        "cudnnSetFilter4dDescriptor"));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnSetConvolution2dDescriptor(s->conv, g->pad, g->pad, g->s, g->s,
                                        1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor"));
    DT_CHECK(dt_cudnn_check(dev, cudnnSetConvolutionMathType(s->conv, math),
                            "cudnnSetConvolutionMathType"));
    int n, c, h, w;
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnGetConvolution2dForwardOutputDim(s->conv, s->x, s->filter, &n,
                                              &c, &h, &w),
        "cudnnGetConvolution2dForwardOutputDim"));
    if (n != g->n || c != out_c || h != g->oh || w != g->ow) {
        dt_error("cuDNN sees a %dx%dx%dx%d output for the conv with a "
                 "%dx%dx%dx%d output on %s", n, c, h, w, g->n, out_c, g->oh,
                 g->ow, dev->name);
        return DT_ERR_INTERNAL;
    }
    return DT_OK;
}

/* In the precision's own element type and math. */
static dt_status_t describe(dt_device_t *dev, dt_cudnn_t *s,
                            const dt_conv_geom_t *g, int out_c)
{
    return describe_as(dev, s, g, out_c, data_type(), wanted_math());
}

/* A bf16 shape for which cuDNN had no bf16 algorithm (float_io): float
 * data, tensor-op math with conversion (what fp16 uses). */
static dt_status_t describe_float_io(dt_device_t *dev, dt_cudnn_t *s,
                                     const dt_conv_geom_t *g, int out_c)
{
    return describe_as(dev, s, g, out_c, CUDNN_DATA_FLOAT,
                       CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

/* The algorithms for the shape just described: from the cache, or picked
 * now (and the workspace grown for them). Under bf16, a shape with no bf16
 * algorithm for a pass is searched again on float data (float_io): said
 * once per shape, and the conv then converts stored bf16 activations
 * around the call instead (forward, backward below). */
static dt_status_t algos(dt_device_t *dev, dt_cudnn_t *s,
                         const dt_conv_geom_t *g, int out_c,
                         const dt_cudnn_algos_t **out)
{
    for (int i = 0; i < s->nalgos; i++) {
        const dt_cudnn_algos_t *a = &s->algos[i];
        if (a->n == g->n && a->c == g->c && a->h == g->h && a->w == g->w &&
            a->out_c == out_c && a->k == g->k && a->stride == g->s &&
            a->pad == g->pad && a->precision == dt_cuda_precision()) {
            *out = a;
            return DT_OK;
        }
    }
    dt_cudnn_algos_t a = {g->n, g->c, g->h, g->w, out_c, g->k, g->s, g->pad,
                          dt_cuda_precision(), 0, 0, 0, CUDNN_FMA_MATH,
                          CUDNN_FMA_MATH, CUDNN_FMA_MATH, 0};
    int got = 0, pick, exact = a.precision == DT_PRECISION_FP32;
    size_t need = 0, bytes = 0;
    const char *stage;
retry:
    stage = "forward";
    need = 0;

    cudnnConvolutionFwdAlgoPerf_t fwd[DT_CUDNN_NALGO];
    DT_CHECK(dt_cudnn_check(
        dev,
        benchmark
            ? cudnnFindConvolutionForwardAlgorithm(s->handle, s->x, s->filter,
                                                   s->conv, s->y,
                                                   DT_CUDNN_NALGO, &got, fwd)
            : cudnnGetConvolutionForwardAlgorithm_v7(
                  s->handle, s->x, s->filter, s->conv, s->y, DT_CUDNN_NALGO,
                  &got, fwd),
        benchmark ? "cudnnFindConvolutionForwardAlgorithm"
                  : "cudnnGetConvolutionForwardAlgorithm_v7"));
    DT_CUDNN_PICK(fwd, got, pick, exact);
    if (pick < 0)
        goto none;
    a.fwd = fwd[pick].algo;
    note_over_limit(g, "forward", fwd[pick].memory);
    a.fwd_math = math_of(dev, fwd[pick].mathType, "forward");
    DT_CHECK(set_math(dev, s, a.fwd_math));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnGetConvolutionForwardWorkspaceSize(s->handle, s->x, s->filter,
                                                s->conv, s->y, a.fwd, &bytes),
        "cudnnGetConvolutionForwardWorkspaceSize"));
    need = bytes > need ? bytes : need;
    DT_CHECK(set_math(dev, s, wanted_math()));

    cudnnConvolutionBwdDataAlgoPerf_t bd[DT_CUDNN_NALGO];
    DT_CHECK(dt_cudnn_check(
        dev,
        benchmark ? cudnnFindConvolutionBackwardDataAlgorithm(
                        s->handle, s->filter, s->y, s->conv, s->x,
                        DT_CUDNN_NALGO, &got, bd)
                  : cudnnGetConvolutionBackwardDataAlgorithm_v7(
                        s->handle, s->filter, s->y, s->conv, s->x,
                        DT_CUDNN_NALGO, &got, bd),
        benchmark ? "cudnnFindConvolutionBackwardDataAlgorithm"
                  : "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    stage = "backward data";
    DT_CUDNN_PICK(bd, got, pick, exact);
    if (pick < 0)
        goto none;
    a.bwd_data = bd[pick].algo;
    note_over_limit(g, "backward data", bd[pick].memory);
    a.bwd_data_math = math_of(dev, bd[pick].mathType, "backward data");
    DT_CHECK(set_math(dev, s, a.bwd_data_math));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnGetConvolutionBackwardDataWorkspaceSize(
            s->handle, s->filter, s->y, s->conv, s->x, a.bwd_data, &bytes),
        "cudnnGetConvolutionBackwardDataWorkspaceSize"));
    need = bytes > need ? bytes : need;
    DT_CHECK(set_math(dev, s, wanted_math()));

    cudnnConvolutionBwdFilterAlgoPerf_t bf[DT_CUDNN_NALGO];
    DT_CHECK(dt_cudnn_check(
        dev,
        benchmark ? cudnnFindConvolutionBackwardFilterAlgorithm(
                        s->handle, s->x, s->y, s->conv, s->filter,
                        DT_CUDNN_NALGO, &got, bf)
                  : cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                        s->handle, s->x, s->y, s->conv, s->filter,
                        DT_CUDNN_NALGO, &got, bf),
        benchmark ? "cudnnFindConvolutionBackwardFilterAlgorithm"
                  : "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
    stage = "backward filter";
    DT_CUDNN_PICK(bf, got, pick, exact);
    if (pick < 0)
        goto none;
    a.bwd_filter = bf[pick].algo;
    note_over_limit(g, "backward filter", bf[pick].memory);
    a.bwd_filter_math = math_of(dev, bf[pick].mathType, "backward filter");
    DT_CHECK(set_math(dev, s, a.bwd_filter_math));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnGetConvolutionBackwardFilterWorkspaceSize(
            s->handle, s->x, s->y, s->conv, s->filter, a.bwd_filter, &bytes),
        "cudnnGetConvolutionBackwardFilterWorkspaceSize"));
    need = bytes > need ? bytes : need;

    DT_CHECK(dt_cudnn_grow(dev, &s->workspace, &s->workspace_bytes, need,
                           "convolution workspace"));
    if (s->nalgos == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        dt_cudnn_algos_t *more = realloc(s->algos, (size_t)cap * sizeof *more);
        if (!more)
            return DT_ERR_NOMEM;
        s->algos = more;
        s->cap = cap;
    }
    s->algos[s->nalgos] = a;
    *out = &s->algos[s->nalgos++];
    return DT_OK;
none:
    if (a.precision == DT_PRECISION_BF16 && !a.float_io) {
        dt_warn("cuDNN offers no bf16 %s algorithm for the conv over "
                "%dx%dx%dx%d (%d out channels, %dx%d kernel, stride %d) on "
                "%s: this shape runs on float32 data with tensor-op math",
                stage, g->n, g->c, g->h, g->w, out_c, g->k, g->k, g->s,
                dev->name);
        a.float_io = 1;
        DT_CHECK(describe_float_io(dev, s, g, out_c));
        goto retry;
    }
    /* bf16 below compute capability 8.0 was refused at set-up
     * (precision.c): here cuDNN has no algorithm even on float data */
    dt_error("cuDNN offers no %s algorithm for the conv over %dx%dx%dx%d "
             "(%d out channels, %dx%d kernel, stride %d, pad %d) on %s%s",
             stage, g->n, g->c, g->h, g->w, out_c, g->k, g->k, g->s, g->pad,
             dev->name,
             a.precision == DT_PRECISION_BF16
                 ? " in bf16: use [train] precision = tf32 or fp32 for "
                   "this model, and tell dt's developers the shape"
                 : "");
    return DT_ERR_UNSUPPORTED;
}

/* ---- bf16 copies --------------------------------------------------------
 * One device block per device (s->half), grown to the largest shape:
 * [X: n c h w][W: o c k k][Y: n o oh ow][DW: o c k k] bf16 elements, each
 * starting on a 256-byte boundary (as cudaMalloc's blocks do): cuDNN's
 * tensor-core kernels want 16-byte aligned operands, and a weight count
 * like 3x3x3x5 = 135 would leave the next copy on a 2-byte one. */
#define HALF_ALIGN 128 /* bf16 elements: 256 bytes */
static size_t half_up(size_t n)
{
    return (n + HALF_ALIGN - 1) / HALF_ALIGN * HALF_ALIGN;
}

typedef struct half_bufs {
    void *x, *w, *y, *dw;
} half_bufs_t;

static dt_status_t half_bufs(dt_device_t *dev, dt_cudnn_t *s,
                             const dt_conv_geom_t *g, int out_c,
                             half_bufs_t *h)
{
    size_t nx = (size_t)g->n * g->c * g->h * g->w,
           nw = (size_t)out_c * g->c * g->k * g->k,
           ny = (size_t)g->n * out_c * g->oh * g->ow;
    size_t ax = half_up(nx), aw = half_up(nw), ay = half_up(ny);
    DT_CHECK(dt_cudnn_grow(dev, &s->half, &s->half_bytes,
                           2 * (ax + 2 * aw + ay), "bf16 conv copies"));
    uint16_t *b = s->half;
    h->x = b;
    h->w = b + ax;
    h->y = b + ax + aw;
    h->dw = b + ax + aw + ay;
    return DT_OK;
}

static int bf16(void) { return dt_cuda_precision() == DT_PRECISION_BF16; }

/* Stored bf16 activations reach a conv only under precision = bf16, and
 * its output only without a bias (added in float32): the model decides
 * so (model_act16.c); anything else is a bug, said rather than run. */
static dt_status_t check_io16(dt_device_t *dev, const dt_conv_geom_t *g,
                              int bias)
{
    if (!g->x16 && !g->y16)
        return DT_OK;
    if (!bf16() || (g->y16 && bias)) {
        dt_error("conv on %s handed bf16 activations (x %d, y %d) with "
                 "precision %d and %s bias: dt's model should not do that",
                 dev->name, g->x16, g->y16, dt_cuda_precision(),
                 bias ? "a" : "no");
        return DT_ERR_INTERNAL;
    }
    return DT_OK;
}

dt_status_t dt_cudnn_conv_forward(dt_device_t *dev, const dt_conv_geom_t *g,
                                  int out_c, const float *x, const float *w,
                                  const float *bias, float *y)
{
    dt_cudnn_t *s;
    const dt_cudnn_algos_t *a;
    const float one = 1.0f, zero = 0.0f;
    DT_CHECK(dt_cudnn_get(dev, &s));
    DT_CHECK(describe(dev, s, g, out_c));
    DT_CHECK(algos(dev, s, g, out_c, &a));
    int b16 = bf16() && !a->float_io; /* cuDNN on bf16 data */
    if (a->float_io)
        DT_CHECK(describe_float_io(dev, s, g, out_c));
    DT_CHECK(set_math(dev, s, a->fwd_math));
    DT_CHECK(check_io16(dev, g, bias != NULL));
    size_t nx = (size_t)g->n * g->c * g->h * g->w,
           ny = (size_t)g->n * out_c * g->oh * g->ow;
    const void *cx = x, *cw = w;
    void *cy = y;
    half_bufs_t h;
    if (b16) { /* x (unless stored bf16) and w to bf16 copies */
        DT_CHECK(half_bufs(dev, s, g, out_c, &h));
        if (!g->x16)
            DT_CHECK(dt_cuda_to_bf16(dev, x, h.x, nx));
        DT_CHECK(dt_cuda_to_bf16(dev, w, h.w,
                                 (size_t)out_c * g->c * g->k * g->k));
        cx = g->x16 ? (const void *)x : h.x, cw = h.w;
        cy = g->y16 ? (void *)y : h.y; /* stored bf16: written in place */
    } else if (g->x16 || g->y16) { /* float_io: float copies of them */
        DT_CHECK(dt_cudnn_grow(dev, &s->fio, &s->fio_bytes,
                               (nx + ny) * sizeof(float),
                               "conv float copies"));
        float *xf = s->fio, *yf = xf + nx;
        if (g->x16) {
            DT_CHECK(dt_cuda_from_bf16(dev, x, xf, nx));
            cx = xf;
        }
        if (g->y16)
            cy = yf;
    }
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnConvolutionForward(s->handle, &one, s->x, cx, s->filter, cw,
                                s->conv, a->fwd, s->workspace,
                                s->workspace_bytes, &zero, s->y, cy),
        "cudnnConvolutionForward"));
    if (b16 && !g->y16) {
        DT_CHECK(dt_cuda_from_bf16(dev, h.y, y, ny));
        DT_CHECK(describe_y(dev, s, g, out_c, CUDNN_DATA_FLOAT));
    } else if (!b16 && g->y16) {
        DT_CHECK(dt_cuda_to_bf16(dev, cy, y, ny));
    }
    if (!bias)
        return DT_OK;
    DT_CHECK(dt_cudnn_tensor(dev, s->per_channel, 1, out_c, 1, 1));
    return dt_cudnn_check(dev,
                          cudnnAddTensor(s->handle, &one, s->per_channel,
                                         bias, &one, s->y, y),
                          "cudnnAddTensor (conv bias)");
}

dt_status_t dt_cudnn_conv_backward(dt_device_t *dev, const dt_conv_geom_t *g,
                                   int out_c, const float *x, const float *w,
                                   const float *dy, float *dw, float *db,
                                   float *dx)
{
    dt_cudnn_t *s;
    const dt_cudnn_algos_t *a;
    const float one = 1.0f, zero = 0.0f;
    DT_CHECK(dt_cudnn_get(dev, &s));
    DT_CHECK(describe(dev, s, g, out_c));
    DT_CHECK(algos(dev, s, g, out_c, &a));
    int b16 = bf16() && !a->float_io; /* cuDNN on bf16 data */
    if (a->float_io)
        DT_CHECK(describe_float_io(dev, s, g, out_c));
    size_t nx = (size_t)g->n * g->c * g->h * g->w,
           nw = (size_t)out_c * g->c * g->k * g->k,
           ny = (size_t)g->n * out_c * g->oh * g->ow;
    if (db) { /* from the float dy, whatever the precision */
        if (b16)
            DT_CHECK(describe_y(dev, s, g, out_c, CUDNN_DATA_FLOAT));
        DT_CHECK(dt_cudnn_tensor(dev, s->per_channel, 1, out_c, 1, 1));
        DT_CHECK(dt_cudnn_check(
            dev,
            cudnnConvolutionBackwardBias(s->handle, &one, s->y, dy, &zero,
                                         s->per_channel, db),
            "cudnnConvolutionBackwardBias"));
        if (b16)
            DT_CHECK(describe_y(dev, s, g, out_c, CUDNN_DATA_BFLOAT16));
    }
    /* bf16: the copies of x (unless stored bf16), w and dy; dw and dx
     * come back in bf16 and are widened (dx into the x copy's room, free
     * by then; never into a stored x). float_io: a stored x widened. */
    DT_CHECK(check_io16(dev, g, 0));
    const void *cx = x, *cw = w, *cdy = dy;
    void *cdw = dw, *cdx = dx;
    half_bufs_t h;
    if (b16) {
        DT_CHECK(half_bufs(dev, s, g, out_c, &h));
        if (!g->x16)
            DT_CHECK(dt_cuda_to_bf16(dev, x, h.x, nx));
        DT_CHECK(dt_cuda_to_bf16(dev, w, h.w, nw));
        DT_CHECK(dt_cuda_to_bf16(dev, dy, h.y, ny));
        cx = g->x16 ? (const void *)x : h.x;
        cw = h.w, cdy = h.y, cdw = h.dw, cdx = h.x;
    } else if (g->x16) {
        DT_CHECK(dt_cudnn_grow(dev, &s->fio, &s->fio_bytes,
                               nx * sizeof(float), "conv float copies"));
        DT_CHECK(dt_cuda_from_bf16(dev, x, s->fio, nx));
        cx = s->fio;
    }
    DT_CHECK(set_math(dev, s, a->bwd_filter_math));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnConvolutionBackwardFilter(s->handle, &one, s->x, cx, s->y, cdy,
                                       s->conv, a->bwd_filter, s->workspace,
                                       s->workspace_bytes, &zero, s->filter,
                                       cdw),
        "cudnnConvolutionBackwardFilter"));
    if (b16)
        DT_CHECK(dt_cuda_from_bf16(dev, h.dw, dw, nw));
    if (!dx)
        return DT_OK;
    DT_CHECK(set_math(dev, s, a->bwd_data_math));
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnConvolutionBackwardData(s->handle, &one, s->filter, cw, s->y,
                                     cdy, s->conv, a->bwd_data, s->workspace,
                                     s->workspace_bytes, &zero, s->x, cdx),
        "cudnnConvolutionBackwardData"));
    return b16 ? dt_cuda_from_bf16(dev, h.x, dx, nx) : DT_OK;
}
