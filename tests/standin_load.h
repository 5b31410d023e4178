/* standin_load.h — load the STAND-IN CUDA backend
 * (fixtures/fixture_cuda_backend.c) for a test: DT_PLUGIN_PATH at its
 * build directory, libdt's own loader opens it, and it must say it is
 * the stand-in. Test code only. */
#ifndef DT_TEST_STANDIN_LOAD_H
#define DT_TEST_STANDIN_LOAD_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/device.h>
#include "cuda/backend.h"

/* 0 when loaded; the module's handle (opened RTLD_LOCAL by libdt: found
 * again by path) in *handle for dlsym of its counters. */
static inline int standin_load(void **handle)
{
    const char *b = getenv("top_builddir");
    static char dir[4096];
    char why[512] = "", path[4200];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/standin_cuda/.libs",
             b ? b : "..");
    setenv("DT_PLUGIN_PATH", dir, 1);
    if (dt_gpu_available(why, sizeof why) != 1) {
        fprintf(stderr, "stand-in backend not loaded: %s\n", why);
        return -1;
    }
    const dt_cuda_backend_t *be = dt_cuda_backend_loaded();
    if (!be || !strstr(be->built_with, "stand-in"))
        return -1;
    snprintf(path, sizeof path, "%s/dt-cuda-backend.so", dir);
    *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    return *handle ? 0 : -1;
}

#endif /* DT_TEST_STANDIN_LOAD_H */
