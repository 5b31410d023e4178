/* model_init.c — parameters on the device, initialized from a seed:
 * He (normal, std sqrt(2/fan_in)) for a layer followed by relu, Xavier
 * (uniform, limit sqrt(6/(fan_in+fan_out))) otherwise, biases zero. One
 * splitmix64 stream over the layers in order, generated on the host, so
 * every device gets the same numbers. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "conv2d_winograd.h"
#include "maxpool2.h"
#include "model.h"
#include "rng.h"

/* Standard normal by Box-Muller (the cosine branch only: simple, and the
 * stream stays one value per parameter). */
static float normal(uint64_t *state)
{
    double u1 = ((double)(dt_splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(dt_splitmix64(state) >> 11) * 0x1.0p-53;
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

static float uniform(uint64_t *state, float limit)
{
    double u = (double)(dt_splitmix64(state) >> 11) * 0x1.0p-53;
    return (float)((2.0 * u - 1.0) * limit);
}

static void init_layer(const dt_model_t *m, int i, float *w, uint64_t *rng)
{
    const dt_layer_t *l = &m->layers[i];
    int relu_next = i + 1 < m->nlayers &&
                    m->layers[i + 1].ops == &dt_layer_relu;
    if (relu_next) {
        float std = (float)sqrt(2.0 / (double)l->fan_in);
        for (size_t j = 0; j < l->nweights; j++)
            w[j] = std * normal(rng);
    } else {
        float limit =
            (float)sqrt(6.0 / (double)(l->fan_in + l->fan_out));
        for (size_t j = 0; j < l->nweights; j++)
            w[j] = uniform(rng, limit);
    }
    memset(w + l->nweights, 0, l->nbias * sizeof *w);
}

/* cpu: conv relu [maxpool(2)] run as one layer (see layer.h). */
static void fuse_layers(dt_model_t *m)
{
    for (int i = 0; i + 1 < m->nlayers; i++) {
        dt_layer_t *l = m->layers + i;
        if (l->ops != &dt_layer_conv2d || l[1].ops != &dt_layer_relu)
            continue;
        l->fused = 1;
        if (i + 2 < m->nlayers && l[2].ops == &dt_layer_maxpool2d &&
            dt_maxpool2_fusable(&l[2]))
            l->fused = 2;
        for (int j = 1; j <= l->fused; j++)
            l[j].absorbed = 1;
        i += l->fused;
    }
}

void dt_model_pick_conv(dt_model_t *m)
{
    for (int i = 0; i < m->nlayers; i++) {
        dt_layer_t *l = m->layers + i;
        int wanted = m->conv_algo == DT_CONV_WINOGRAD ||
                     (m->conv_algo == DT_CONV_AUTO &&
                      l->in_c >= DT_CONV_WINOGRAD_MIN_IN);
        l->winograd = m->dev && m->dev->kind == DT_DEVICE_CPU && wanted &&
                      dt_conv2d_winograd_applies(l);
    }
}

dt_status_t dt_model_init(dt_model_t *m, dt_device_t *dev, uint64_t seed)
{
    if (m->params) {
        dt_error("dt_model_init called twice on one model");
        return DT_ERR_INVALID;
    }
    if (!dev) {
        DT_CHECK(dt_device_open("cpu", 0, 1, &dev));
        m->own_dev = 1;
    }
    m->dev = dev;
    size_t bytes = m->nparams * sizeof(float);
    DT_CHECK(dt_device_alloc(dev, bytes, (void **)&m->params));
    DT_CHECK(dt_device_alloc(dev, bytes, (void **)&m->grads));
    float *host = calloc(m->nparams ? m->nparams : 1, sizeof *host);
    if (!host)
        return DT_ERR_NOMEM;
    uint64_t rng = seed;
    for (int i = 0; i < m->nlayers; i++) {
        dt_layer_t *l = &m->layers[i];
        l->dev = dev;
        l->w = m->params + l->param_offset;
        l->b = l->w + l->nweights;
        l->dw = m->grads + l->param_offset;
        l->db = l->dw + l->nweights;
        l->rng_seed = &m->rng_seed;
        l->rng_counter = &m->rng_counter;
        init_layer(m, i, host + l->param_offset, &rng);
    }
    if (dev->kind == DT_DEVICE_CPU)
        fuse_layers(m);
    dt_model_pick_conv(m);
    dt_status_t st = dt_device_copy(dev, m->params, dev->mem, host,
                                    DT_MEM_HOST, bytes);
    free(host);
    m->rng_seed = seed;
    m->rng_counter = 0;
    return st;
}
