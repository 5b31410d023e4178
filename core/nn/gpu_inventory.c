/* gpu_inventory.c — the GPUs and CUDA library versions of this host, for
 * `dt-train --gpus` and through it `dtctl check`. Everything is asked by
 * dlopen of the libraries themselves (the driver API of libcuda.so.1, then
 * each library's own version call), so libdt links none of them, a
 * machine without a GPU answers with the reason, and the versions are
 * those of the files dt would really load, not of the headers it was
 * built with. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpu_inventory.h"

#ifndef DT_CUDA_LIBDIR
#define DT_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

typedef int (*cu_int_fn)(int *);
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_get_fn)(int *dev, int ordinal);
typedef int (*cu_name_fn)(char *name, int len, int dev);
typedef int (*cu_mem_fn)(size_t *bytes, int dev);
typedef int (*cu_attr_fn)(int *value, int attr, int dev);
typedef int (*cu_err_fn)(int error, const char **text);

#define CU_ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_* */
#define CU_ATTR_CC_MINOR 76

static const char *const lib_names[DT_GPU_LIB_COUNT] = {"cudart", "cublas",
                                                        "cudnn", "nccl"};
/* The sonames dt's backend, cuDNN path and nccl plugin link against. */
static const char *const lib_files[DT_GPU_LIB_COUNT] = {
    "libcudart.so.13", "libcublas.so.13", "libcudnn.so.9", "libnccl.so.2"};

const char *dt_gpu_lib_name(int lib)
{
    return lib >= 0 && lib < DT_GPU_LIB_COUNT ? lib_names[lib] : "?";
}

/* The soname through the usual search, then in the CUDA toolkit's folder
 * (where configure found it: the backend's RUNPATH points there too). */
static void *open_lib(const char *file)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DT_CUDA_LIBDIR, file);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return h;
}

/* "580.65.06" from the kernel module's banner, if it is loaded. */
static void driver_release(char *out, size_t len)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512];
    out[0] = '\0';
    if (!f)
        return;
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        if (p && sscanf(p + strlen("Kernel Module"), " %63s", out) != 1)
            out[0] = '\0';
    }
    fclose(f);
}

static void driver_gpus(dt_gpu_inventory_t *inv)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(inv->why, sizeof inv->why, "no NVIDIA driver (%s)",
                 e ? e : "libcuda.so.1 not found");
        return;
    }
    cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
    cu_int_fn count = (cu_int_fn)dlsym(h, "cuDeviceGetCount");
    cu_int_fn version = (cu_int_fn)dlsym(h, "cuDriverGetVersion");
    cu_get_fn get = (cu_get_fn)dlsym(h, "cuDeviceGet");
    cu_name_fn name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
    cu_mem_fn mem = (cu_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
    cu_attr_fn attr = (cu_attr_fn)dlsym(h, "cuDeviceGetAttribute");
    cu_err_fn err = (cu_err_fn)dlsym(h, "cuGetErrorString");
    if (!init || !count || !get || !name || !mem || !attr) {
        snprintf(inv->why, sizeof inv->why,
                 "libcuda.so.1 lacks the driver API (cuInit, "
                 "cuDeviceGetCount, ...): the NVIDIA driver installation "
                 "is damaged");
        dlclose(h);
        return;
    }
    if (version && version(&inv->driver_cuda) != 0)
        inv->driver_cuda = 0;
    int n = 0, rc = init(0);
    if (rc == 0)
        rc = count(&n);
    if (rc != 0) {
        const char *text = NULL;
        if (!err || err(rc, &text) != 0 || !text)
            text = "unknown error";
        snprintf(inv->why, sizeof inv->why,
                 "the NVIDIA driver reports no usable GPU: %s (CUDA driver "
                 "error %d)", text, rc);
        dlclose(h);
        return;
    }
    if (n <= 0)
        snprintf(inv->why, sizeof inv->why,
                 "the NVIDIA driver sees no GPU (check nvidia-smi and "
                 "CUDA_VISIBLE_DEVICES)");
    if (n > DT_GPU_INVENTORY_MAX)
        n = DT_GPU_INVENTORY_MAX;
    for (int i = 0; i < n; i++) {
        dt_gpu_info_t *g = &inv->gpu[i];
        int dev = 0;
        size_t bytes = 0;
        if (get(&dev, i) != 0 || name(g->name, sizeof g->name, dev) != 0)
            snprintf(g->name, sizeof g->name, "GPU %d (name unknown)", i);
        if (mem(&bytes, dev) == 0)
            g->mem_mib = bytes >> 20;
        if (attr(&g->cc_major, CU_ATTR_CC_MAJOR, dev) != 0 ||
            attr(&g->cc_minor, CU_ATTR_CC_MINOR, dev) != 0)
            g->cc_major = g->cc_minor = 0;
    }
    inv->count = n;
    /* Not closed: a process that goes on to use CUDA keeps the driver. */
}

/* MAJOR*10000 + MINOR*100 + PATCH (cuDNN 9, NCCL >= 2.9) as "M.m.p". */
static void dotted(char *out, size_t len, long v)
{
    snprintf(out, len, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
}

static void lib_version(int lib, char *out, size_t len)
{
    void *h = open_lib(lib_files[lib]);
    out[0] = '\0';
    if (!h)
        return;
    int v = 0, minor = 0, patch = 0;
    if (lib == DT_GPU_LIB_CUDART) {
        cu_int_fn f = (cu_int_fn)dlsym(h, "cudaRuntimeGetVersion");
        if (f && f(&v) == 0)
            snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
    } else if (lib == DT_GPU_LIB_CUBLAS) {
        /* libraryPropertyType: MAJOR_VERSION 0, MINOR 1, PATCH_LEVEL 2. */
        int (*f)(int, int *) =
            (int (*)(int, int *))dlsym(h, "cublasGetProperty");
        if (f && f(0, &v) == 0 && f(1, &minor) == 0 && f(2, &patch) == 0)
            snprintf(out, len, "%d.%d.%d", v, minor, patch);
    } else if (lib == DT_GPU_LIB_CUDNN) {
        size_t (*f)(void) = (size_t(*)(void))dlsym(h, "cudnnGetVersion");
        if (f)
            dotted(out, len, (long)f());
    } else if (lib == DT_GPU_LIB_NCCL) {
        cu_int_fn f = (cu_int_fn)dlsym(h, "ncclGetVersion");
        if (f && f(&v) == 0)
            dotted(out, len, v);
    }
    if (!out[0])
        snprintf(out, len, "?");
    /* Left open: unloading cuBLAS or NCCL at exit runs their destructors
     * for nothing; dt-train --gpus exits right after. */
}

void dt_gpu_inventory(dt_gpu_inventory_t *inv)
{
    memset(inv, 0, sizeof *inv);
    driver_release(inv->driver, sizeof inv->driver);
    driver_gpus(inv);
    for (int i = 0; i < DT_GPU_LIB_COUNT; i++)
        lib_version(i, inv->lib[i], sizeof inv->lib[i]);
}

void dt_gpu_inventory_print(FILE *f, const dt_gpu_inventory_t *inv)
{
    fprintf(f, "driver %s cuda ", inv->driver[0] ? inv->driver : "-");
    if (inv->driver_cuda > 0)
        fprintf(f, "%d.%d\n", inv->driver_cuda / 1000,
                inv->driver_cuda % 1000 / 10);
    else
        fprintf(f, "-\n");
    for (int i = 0; i < inv->count; i++)
        fprintf(f, "gpu %d %zu %d.%d %s\n", i, inv->gpu[i].mem_mib,
                inv->gpu[i].cc_major, inv->gpu[i].cc_minor,
                inv->gpu[i].name);
    for (int i = 0; i < DT_GPU_LIB_COUNT; i++)
        fprintf(f, "lib %s %s\n", lib_names[i],
                inv->lib[i][0] ? inv->lib[i] : "-");
    if (inv->count == 0)
        fprintf(f, "none %s\n", inv->why);
    fprintf(f, "end\n");
}
