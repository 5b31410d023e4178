/* optim_common.h — shared by the in-tree optimizer plugins: reading
 * numeric keys of [optimizer.<name>], where the state lives (host memory,
 * or the GPU through dt/device.h) and the serialized state format. Uses
 * only the installed headers, as an out-of-tree optimizer would.
 *
 * State format (host byte order; checkpoints carry their own checksum):
 *   char magic[8] = "dtopt1\0\0"; char name[8]; uint64 nparams;
 *   uint64 nbufs; then nbufs * nparams float32 (momentum, m, v ...). */
#ifndef DT_OPTIM_COMMON_H
#define DT_OPTIM_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dt/config.h>
#include <dt/device.h>
#include <dt/log.h>
#include <dt/plugin.h>

/* A number key in [lo, hi] (hi_open: strictly below hi); cfg NULL or the
 * key unset: def. Errors name the section, key, value and its origin. */
/* Open ends of optim_number's range. Compared as the float the optimizer
 * keeps: beta2 = 0.99999999 is 1.0f (NaN parameters at step 1). */
#define OPTIM_OPEN_HI 1
#define OPTIM_OPEN_LO 2

static inline dt_status_t optim_number(const dt_config_t *cfg,
                                       const char *section, const char *key,
                                       double def, double lo, double hi,
                                       int open, double *out)
{
    *out = def;
    const char *text = cfg ? dt_config_get(cfg, section, key) : NULL;
    if (!text)
        return DT_OK;
    double v;
    const char *where = "?";
    dt_config_origin(cfg, section, key, NULL, &where);
    if (dt_parse_double(text, &v) != DT_OK) {
        dt_error("%s: [%s] %s = '%s' is not a number", where, section, key,
                 text);
        return DT_ERR_CONFIG;
    }
    int hi_open = open & OPTIM_OPEN_HI, lo_open = open & OPTIM_OPEN_LO;
    if (v < lo || v > hi || (hi_open && (float)v >= (float)hi) ||
        (lo_open && (float)v <= (float)lo)) {
        dt_error("%s: [%s] %s = %.10g must be in %c%g, %g%c (as a 32-bit "
                 "float)", where, section, key, v, lo_open ? '(' : '[', lo,
                 hi, hi_open ? ')' : ']');
        return DT_ERR_CONFIG;
    }
    *out = v;
    return DT_OK;
}

#define OPTIM_MAGIC "dtopt1"

typedef struct optim_header {
    char magic[8];
    char name[8];
    uint64_t nparams;
    uint64_t nbufs;
} optim_header_t;

static inline size_t optim_state_size(size_t nparams, size_t nbufs)
{
    return sizeof(optim_header_t) + nbufs * nparams * sizeof(float);
}

/* Where the parameters and the optimizer's buffers live. On the GPU the
 * plugin allocates, copies and steps through dt/device.h (dt's CUDA
 * backend, loaded by libdt): the plugin links no CUDA library, so it
 * loads on CPU-only machines too. */
typedef struct optim_mem {
    int cuda;     /* 0: host memory; 1: CUDA memory (dt/device.h)        */
    void *stream; /* the last step's stream: save/load copy after it     */
} optim_mem_t;

static inline dt_status_t optim_mem_init(const char *name, dt_mem_t mem,
                                         optim_mem_t *om)
{
    memset(om, 0, sizeof *om);
    if (mem == DT_MEM_HOST)
        return DT_OK;
    if (mem != DT_MEM_CUDA) {
        dt_error("optimizer %s: unknown memory type %d for the parameters",
                 name, (int)mem);
        return DT_ERR_INVALID;
    }
    char why[512];
    if (!dt_gpu_available(why, sizeof why)) {
        dt_error("optimizer %s: parameters in CUDA memory need dt's CUDA "
                 "backend: %s", name, why);
        return DT_ERR_UNSUPPORTED;
    }
    om->cuda = 1;
    return DT_OK;
}

/* n zero floats where the parameters live. */
static inline dt_status_t optim_alloc(const optim_mem_t *om, size_t n,
                                      float **out)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    if (om->cuda)
        return dt_gpu_alloc(bytes, (void **)out);
    *out = calloc(1, bytes);
    return *out ? DT_OK : DT_ERR_NOMEM;
}

static inline void optim_free(const optim_mem_t *om, float *p)
{
    if (om->cuda)
        dt_gpu_free(p);
    else
        free(p);
}

/* Copy between a state buffer (on om's memory) and the host checkpoint
 * blob: to_host 1 saves, 0 loads. */
static inline dt_status_t optim_copy(const optim_mem_t *om, void *dst,
                                     const void *src, size_t bytes,
                                     int to_host)
{
    if (om->cuda)
        return to_host ? dt_gpu_copy(dst, DT_MEM_HOST, src, DT_MEM_CUDA,
                                     bytes, om->stream)
                       : dt_gpu_copy(dst, DT_MEM_CUDA, src, DT_MEM_HOST,
                                     bytes, om->stream);
    memcpy(dst, src, bytes);
    return DT_OK;
}

/* bufs: nbufs arrays of nparams floats, on om's memory. */
static inline dt_status_t optim_save(const char *name, const optim_mem_t *om,
                                     size_t nparams, float *const *bufs,
                                     size_t nbufs, void *buf, size_t len)
{
    if (len != optim_state_size(nparams, nbufs)) {
        dt_error("optimizer %s: state buffer of %zu bytes, need %zu", name,
                 len, optim_state_size(nparams, nbufs));
        return DT_ERR_INVALID;
    }
    optim_header_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, OPTIM_MAGIC, sizeof OPTIM_MAGIC);
    /* strlen, not strnlen: gcc -O1/-Os flags a bound above a literal's size */
    size_t nl = strlen(name);
    memcpy(h.name, name, nl < sizeof h.name ? nl : sizeof h.name);
    h.nparams = nparams;
    h.nbufs = nbufs;
    memcpy(buf, &h, sizeof h);
    char *p = (char *)buf + sizeof h;
    for (size_t i = 0; i < nbufs; i++, p += nparams * sizeof(float))
        DT_CHECK(optim_copy(om, p, bufs[i], nparams * sizeof(float), 1));
    return DT_OK;
}

static inline dt_status_t optim_load(const char *name, const optim_mem_t *om,
                                     size_t nparams, float *const *bufs,
                                     size_t nbufs, const void *buf,
                                     size_t len)
{
    optim_header_t h;
    if (len < sizeof h) {
        dt_error("optimizer %s: saved state is %zu bytes, too short for its "
                 "header: the checkpoint is damaged", name, len);
        return DT_ERR_INVALID;
    }
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, OPTIM_MAGIC, sizeof OPTIM_MAGIC) != 0) {
        dt_error("optimizer %s: saved state has no dt optimizer header: the "
                 "checkpoint is damaged or from another program", name);
        return DT_ERR_INVALID;
    }
    if (strncmp(h.name, name, sizeof h.name) != 0) {
        dt_error("optimizer %s: saved state belongs to optimizer '%.8s': "
                 "resume with [train] optimizer = %.8s or start afresh", name,
                 h.name, h.name);
        return DT_ERR_INVALID;
    }
    if (h.nparams != nparams || h.nbufs != nbufs) {
        dt_error("optimizer %s: saved state is for %llu parameters (%llu "
                 "buffers), the model has %zu: the model changed since the "
                 "checkpoint", name, (unsigned long long)h.nparams,
                 (unsigned long long)h.nbufs, nparams);
        return DT_ERR_INVALID;
    }
    if (len != optim_state_size(nparams, nbufs)) {
        dt_error("optimizer %s: saved state is %zu bytes, its header says "
                 "%zu: the checkpoint is truncated or damaged", name, len,
                 optim_state_size(nparams, nbufs));
        return DT_ERR_INVALID;
    }
    const char *p = (const char *)buf + sizeof h;
    for (size_t i = 0; i < nbufs; i++, p += nparams * sizeof(float))
        DT_CHECK(optim_copy(om, bufs[i], p, nparams * sizeof(float), 0));
    return DT_OK;
}

#endif /* DT_OPTIM_COMMON_H */
