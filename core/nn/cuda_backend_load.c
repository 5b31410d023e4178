/* cuda_backend_load.c — find and load dt's CUDA backend module once, on
 * the first CUDA device (see cuda/backend.h), with the plugins' search
 * path and loader. */
#define _GNU_SOURCE
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dt/log.h>
#include "cuda/backend.h"
#include "plugin/plugin_loader.h"

static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;
static const dt_cuda_backend_t *backend; /* set once, never unloaded */
static int backend_tried;
static char backend_why[1024];

dt_status_t dt_cuda_backend_open_file(const char *path,
                                      const dt_cuda_backend_t **out,
                                      char *why, size_t why_len)
{
    void *sym = NULL;
    *out = NULL;
    dt_status_t st = dt_module_open_resident(path, DT_CUDA_BACKEND_SYMBOL,
                                             &sym, why, why_len);
    if (st != DT_OK)
        return st;
    const dt_cuda_backend_t *be = sym;
    if (be->abi != DT_CUDA_BACKEND_ABI || be->size < sizeof *be) {
        snprintf(why, why_len,
                 "%s: CUDA backend ABI %u with a table of %zu bytes, this "
                 "libdt needs ABI %u and %zu bytes: it is from another dt "
                 "build; reinstall dt", path, be->abi, be->size,
                 (unsigned)DT_CUDA_BACKEND_ABI, sizeof *be);
        return DT_ERR_PLUGIN;
    }
    *out = be;
    return DT_OK;
}

static char *join(char **dirs)
{
    size_t len = 1;
    for (char **d = dirs; *d; d++)
        len += strlen(*d) + 2;
    char *s = calloc(1, len);
    for (char **d = dirs; s && *d; d++) {
        if (d != dirs)
            strcat(s, ", ");
        strcat(s, *d);
    }
    return s;
}

/* The first backend file on the search path, loaded; caller holds lock. */
static void load_locked(void)
{
    char **dirs = dt_plugin_search_path();
    if (!dirs) {
        snprintf(backend_why, sizeof backend_why, "out of memory");
        return;
    }
    char *found = NULL;
    for (char **d = dirs; *d && !found; d++) {
        struct stat sb;
        if (asprintf(&found, "%s/%s", *d, DT_CUDA_BACKEND_FILE) < 0) {
            found = NULL;
            break;
        }
        if (stat(found, &sb) != 0) {
            free(found);
            found = NULL;
        }
    }
    if (found) {
        const dt_cuda_backend_t *be;
        char why[sizeof backend_why - 64];
        if (dt_cuda_backend_open_file(found, &be, why, sizeof why) == DT_OK) {
            dt_debug("CUDA backend %s (%s)", found, be->built_with);
            __atomic_store_n(&backend, be, __ATOMIC_RELEASE);
        } else {
            snprintf(backend_why, sizeof backend_why,
                     "dt's CUDA backend failed to load: %s", why);
        }
    } else {
        char *where = join(dirs);
        snprintf(backend_why, sizeof backend_why,
                 "dt's CUDA backend %s is not installed (looked in %s): %s",
                 DT_CUDA_BACKEND_FILE, where ? where : "?",
#ifdef DT_HAVE_CUDA_NN
                 "reinstall dt, or set DT_PLUGIN_PATH to the directory "
                 "holding it"
#else
                 "this dt was built without CUDA (configure found no "
                 "nvcc/cuBLAS); rebuild it with CUDA"
#endif
        );
        free(where);
    }
    free(found);
    for (char **d = dirs; *d; d++)
        free(*d);
    free(dirs);
}

/* The backend, or the reason it cannot be had, without logging. */
static dt_status_t backend_try(const dt_cuda_backend_t **out, char *why,
                               size_t why_len)
{
    pthread_mutex_lock(&backend_lock);
    if (!backend_tried) {
        backend_tried = 1;
        load_locked();
    }
    *out = backend;
    if (!backend && why && why_len)
        snprintf(why, why_len, "%s", backend_why);
    pthread_mutex_unlock(&backend_lock);
    return *out ? DT_OK : DT_ERR_UNSUPPORTED;
}

dt_status_t dt_cuda_backend(const dt_cuda_backend_t **out)
{
    char why[sizeof backend_why];
    dt_status_t st = backend_try(out, why, sizeof why);
    if (st != DT_OK)
        dt_error("%s", why);
    return st;
}

const dt_cuda_backend_t *dt_cuda_backend_try(char *why, size_t why_len)
{
    const dt_cuda_backend_t *be;
    return backend_try(&be, why, why_len) == DT_OK ? be : NULL;
}

const dt_cuda_backend_t *dt_cuda_backend_loaded(void)
{
    return __atomic_load_n(&backend, __ATOMIC_ACQUIRE);
}

int dt_cuda_usable(char *why, size_t why_len)
{
    if (dt_cuda_driver_device_count(why, why_len) == 0)
        return 0;
    const dt_cuda_backend_t *be;
    if (backend_try(&be, why, why_len) != DT_OK)
        return 0;
    return be->device_count(why, why_len);
}

int dt_cuda_device_count(void)
{
    return dt_cuda_usable(NULL, 0);
}

const char *dt_cuda_cudnn_missing(void)
{
    const dt_cuda_backend_t *be = dt_cuda_backend_loaded();
    if (!be)
        return "the CUDA backend is not loaded";
    if (be->cudnn_missing)
        return be->cudnn_missing;
    if (!be->conv_forward || !be->conv_backward || !be->bn_forward ||
        !be->bn_backward || !be->pool_forward || !be->pool_backward)
        return "the CUDA backend has no cuDNN entries";
    return NULL;
}
