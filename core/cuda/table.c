/* table.c (CUDA backend) — the one symbol the module exports: the table
 * libdt looks up after loading it (see cuda/backend.h). */
#include "config.h"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#ifdef DT_HAVE_CUDNN
#include <cudnn_version.h>
#endif

#include "cuda/kernels.h"
#include "cuda/precision.h"

#define STR_(x) #x
#define STR(x) STR_(x)

__attribute__((visibility("default"))) const dt_cuda_backend_t
    dt_cuda_backend_v1 = {
        .size = sizeof(dt_cuda_backend_t),
        .abi = DT_CUDA_BACKEND_ABI,
        .built_with = "CUDART_VERSION " STR(CUDART_VERSION) ", cuBLAS " STR(
            CUBLAS_VER_MAJOR) "." STR(CUBLAS_VER_MINOR) "." STR(CUBLAS_VER_PATCH)
#ifdef DT_HAVE_CUDNN
            ", cuDNN " STR(CUDNN_MAJOR) "." STR(CUDNN_MINOR) "." STR(
                CUDNN_PATCHLEVEL)
#else
            ", without cuDNN"
#endif
        ,
        .device_count = dt_cuda_count,
        .open = dt_cuda_open,
        .close = dt_cuda_close,
        .sync = dt_cuda_sync,
        .alloc = dt_cuda_alloc,
        .free = dt_cuda_free,
        .host_alloc = dt_cuda_host_alloc,
        .host_free = dt_cuda_host_free,
        .copy = dt_cuda_copy,
        .gemm = dt_cuda_gemm,
        .relu_forward = dt_cuda_relu_forward,
        .relu_backward = dt_cuda_relu_backward,
        .mul = dt_cuda_mul,
        .dropout_forward = dt_cuda_dropout_forward,
        .add_bias = dt_cuda_add_bias,
        .bias_grad = dt_cuda_bias_grad,
        .im2col = dt_cuda_im2col,
        .col2im = dt_cuda_col2im,
        .cnhw_to_nchw = dt_cuda_cnhw_to_nchw,
        .nchw_to_cnhw = dt_cuda_nchw_to_cnhw,
        .maxpool_forward = dt_cuda_maxpool_forward,
        .maxpool_backward = dt_cuda_maxpool_backward,
        .softmax_xent = dt_cuda_softmax_xent,
        .softmax_xent_backward = dt_cuda_softmax_xent_backward,
        .add = dt_cuda_add,
#ifdef DT_HAVE_CUDNN
        .cudnn_missing = NULL,
        .conv_forward = dt_cudnn_conv_forward,
        .conv_backward = dt_cudnn_conv_backward,
        .bn_forward = dt_cudnn_bn_forward,
        .bn_backward = dt_cudnn_bn_backward,
        .pool_forward = dt_cudnn_pool_forward,
        .pool_backward = dt_cudnn_pool_backward,
#else
        .cudnn_missing = "built without cuDNN: install cuDNN 9 under "
                         "/usr/local/cuda and reconfigure",
#endif
        .mem_alloc = dt_cuda_mem_alloc,
        .mem_free = dt_cuda_mem_free,
        .mem_copy = dt_cuda_mem_copy,
        .sgd_step = dt_cuda_sgd_step,
        .adam_step = dt_cuda_adam_step,
        .mem_set = dt_cuda_mem_set,
        .stream_sync = dt_cuda_stream_sync,
        .set_precision = dt_cuda_set_precision,
        .asum = dt_cuda_asum,
        /* device-resident step block (end of the table) */
        .set_current = dt_cuda_set_current,
        .stream_create = dt_cuda_stream_create,
        .stream_destroy = dt_cuda_stream_destroy,
        .event_create = dt_cuda_event_create,
        .event_destroy = dt_cuda_event_destroy,
        .event_record = dt_cuda_event_record,
        .stream_wait_event = dt_cuda_stream_wait_event,
        .event_sync = dt_cuda_event_sync,
        .copy_async = dt_cuda_copy_async,
        .scale = dt_cuda_scale,
#ifdef DT_HAVE_CUDNN
        .set_conv_benchmark = dt_cudnn_set_benchmark,
#endif
        .bn_sums = dt_cuda_bn_sums,
        .bn_apply = dt_cuda_bn_apply,
        .bn_dx = dt_cuda_bn_dx,
        .bn_stats = dt_cuda_bn_stats,
        .bn_grads = dt_cuda_bn_grads,
        .bn_dx_coef = dt_cuda_bn_dx_coef,
        .to_bf16 = dt_cuda_to_bf16,
        .from_bf16 = dt_cuda_from_bf16,
        .mem_info = dt_cuda_mem_info,
        .get_precision = dt_cuda_precision,
        .relu16_forward = dt_cuda_relu16_forward,
        .relu16_backward = dt_cuda_relu16_backward,
        .add16 = dt_cuda_add16,
        .graph_capture = dt_cuda_graph_capture,
        .graph_launch = dt_cuda_graph_launch,
        .graph_destroy = dt_cuda_graph_destroy,
        .buffers_generation = dt_cuda_buffers_generation,
};
