/* gpu_inventory.h — what a host offers a GPU job: the GPUs its NVIDIA
 * driver sees and the versions of the CUDA libraries dt loads. `dt-train
 * --gpus` prints it (dt_gpu_inventory_print) and `dtctl check` reads that
 * from every host (core/cli/check_gpu.c). Internal to dt (not installed). */
#ifndef DT_GPU_INVENTORY_H
#define DT_GPU_INVENTORY_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_GPU_INVENTORY_MAX 64

typedef struct dt_gpu_info {
    char name[128];       /* "NVIDIA H100 80GB HBM3"                     */
    size_t mem_mib;       /* total memory                                */
    int cc_major, cc_minor; /* compute capability (9.0: Hopper)          */
} dt_gpu_info_t;

/* The libraries dt's GPU path loads, in this order. */
enum { DT_GPU_LIB_CUDART, DT_GPU_LIB_CUBLAS, DT_GPU_LIB_CUDNN,
       DT_GPU_LIB_NCCL, DT_GPU_LIB_COUNT };

typedef struct dt_gpu_inventory {
    int count;            /* GPUs the driver sees; 0: why says why       */
    char why[512];
    char driver[64];      /* kernel module release ("580.65.06"), or ""  */
    int driver_cuda;      /* newest CUDA the driver runs (13000), or 0   */
    dt_gpu_info_t gpu[DT_GPU_INVENTORY_MAX];
    /* Version of each library ("13.1.0"); "" when it cannot be loaded. */
    char lib[DT_GPU_LIB_COUNT][32];
} dt_gpu_inventory_t;

/* Library names as printed: "cudart", "cublas", "cudnn", "nccl". */
const char *dt_gpu_lib_name(int lib);

/* Fill inv. Asks libcuda.so.1 (driver API) and each library by dlopen:
 * needs no GPU, and on a machine without a driver says why in inv->why. */
void dt_gpu_inventory(dt_gpu_inventory_t *inv);

/* The machine-readable form `dtctl check` parses, one fact per line:
 *   driver 580.65.06 cuda 13.0
 *   gpu 0 81559 9.0 NVIDIA H100 80GB HBM3
 *   lib cudnn 9.13.0          (lib cudnn -   when missing)
 *   none <why>                (no GPU)
 *   end                                                                  */
void dt_gpu_inventory_print(FILE *f, const dt_gpu_inventory_t *inv);

#ifdef __cplusplus
}
#endif
#endif /* DT_GPU_INVENTORY_H */
