/* cuda_probe.c — does the NVIDIA driver see a GPU? Asked of libcuda.so.1
 * directly, so that a machine without a GPU (or without a driver) finds
 * out without loading the CUDA runtime or cuBLAS: on a CPU-only machine
 * this is one failed dlopen. libcuda.so.1 is what the driver installs in
 * the system library path; the CUDA runtime itself loads it the same way. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "cuda/backend.h"

#define DRIVER_LIB "libcuda.so.1"

typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_count_fn)(int *count);
typedef int (*cu_error_string_fn)(int error, const char **text);

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int driver_count;
static char driver_why[512];

static void probe(void)
{
    void *h = dlopen(DRIVER_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        snprintf(driver_why, sizeof driver_why, "no NVIDIA driver (%s)",
                 err ? err : DRIVER_LIB " not found");
        return;
    }
    /* Never closed: the CUDA runtime will use the same driver. */
    cu_init_fn cu_init = (cu_init_fn)dlsym(h, "cuInit");
    cu_count_fn cu_count = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
    cu_error_string_fn cu_error =
        (cu_error_string_fn)dlsym(h, "cuGetErrorString");
    if (!cu_init || !cu_count) {
        snprintf(driver_why, sizeof driver_why,
                 "%s has no cuInit/cuDeviceGetCount: the NVIDIA driver "
                 "installation is damaged", DRIVER_LIB);
        return;
    }
    int n = 0, rc = cu_init(0);
    if (rc == 0)
        rc = cu_count(&n);
    if (rc != 0) {
        const char *text = NULL;
        if (!cu_error || cu_error(rc, &text) != 0 || !text)
            text = "unknown error";
        snprintf(driver_why, sizeof driver_why,
                 "the NVIDIA driver reports no usable GPU: %s (CUDA driver "
                 "error %d)", text, rc);
        return;
    }
    if (n <= 0) {
        snprintf(driver_why, sizeof driver_why,
                 "the NVIDIA driver sees no GPU (check nvidia-smi and "
                 "CUDA_VISIBLE_DEVICES)");
        return;
    }
    driver_count = n;
}

int dt_cuda_driver_device_count(char *why, size_t why_len)
{
    pthread_once(&probe_once, probe);
    if (driver_count == 0 && why && why_len)
        snprintf(why, why_len, "%s", driver_why);
    return driver_count;
}
