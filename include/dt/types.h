/* dt/types.h — element types, reductions, memory kinds and parameter
 * tensor kinds shared by the worker API (dt.h, nn.h) and the plugin ABI
 * (plugin.h). */
#ifndef DT_TYPES_H
#define DT_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dt_dtype {
    DT_FLOAT32 = 0,
    DT_FLOAT16 = 1,
    DT_BFLOAT16 = 2,
    DT_FLOAT64 = 3,
    DT_INT32 = 4,
    DT_DTYPE_COUNT
} dt_dtype_t;

typedef enum dt_redop {
    DT_SUM = 0,
    DT_AVG = 1, /* sum divided by the number of ranks */
    DT_MAX = 2,
    DT_MIN = 3,
    DT_REDOP_COUNT
} dt_redop_t;

/* Where a buffer lives. Transports say which kinds they can read directly;
 * the core stages the others through host memory. */
typedef enum dt_mem {
    DT_MEM_HOST = 0,
    DT_MEM_CUDA = 1
} dt_mem_t;

/* What a parameter tensor is: dt_model_param_kinds (dt/nn.h) gives one
 * per tensor, and an optimizer's set_tensor_kinds (dt/plugin.h) takes
 * them, one byte each, so that lars and lamb can leave biases and
 * normalization parameters out of the trust ratio and weight decay. */
typedef enum dt_tensor_kind {
    DT_TENSOR_WEIGHT = 0, /* a linear or conv layer's weights           */
    DT_TENSOR_BIAS = 1,   /* a linear or conv layer's bias              */
    DT_TENSOR_NORM = 2,   /* batchnorm's scale (gamma) or shift (beta)  */
    DT_TENSOR_KIND_COUNT
} dt_tensor_kind_t;

/* Size in bytes of one element, 0 for an invalid type. */
size_t dt_dtype_size(dt_dtype_t t);
const char *dt_dtype_name(dt_dtype_t t);

#ifdef __cplusplus
}
#endif
#endif /* DT_TYPES_H */
