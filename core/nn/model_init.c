/* model_init.c — parameters on the device, initialized from a seed:
 * He (normal, std sqrt(2/fan_in)) for a layer followed by relu or by
 * batchnorm (which in a ResNet leads to a relu, directly or after the
 * residual sum), Xavier (uniform, limit sqrt(6/(fan_in+fan_out)))
 * otherwise, biases zero; batchnorm gamma 1, beta 0, running mean 0 and
 * variance 1. One
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
    if (l->ops == &dt_layer_batchnorm) {
        for (size_t j = 0; j < l->nweights; j++)
            w[j] = 1.0f;
        memset(w + l->nweights, 0, l->nbias * sizeof *w);
        return;
    }
    /* the layer reading this one's output (the next, in forward order) */
    const dt_layer_ops_t *next =
        i + 1 < m->nlayers && m->layers[i + 1].src == i + 1
            ? m->layers[i + 1].ops
            : NULL;
    if (next == &dt_layer_relu || next == &dt_layer_batchnorm) {
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

/* Is acts[j] read by layer j alone (no branch starts from it)? */
static int read_once(const dt_model_t *m, int j)
{
    for (int i = 0; i < m->nlayers; i++)
        if ((i != j && m->layers[i].src == j) || m->layers[i].skip == j)
            return 0;
    return 1;
}

/* cpu: conv relu [maxpool(2)], batchnorm relu and add relu run as one layer (see
 * layer.h), when the activations in between are read by nothing else. */
static void fuse_layers(dt_model_t *m)
{
    for (int i = 0; i + 1 < m->nlayers; i++) {
        dt_layer_t *l = m->layers + i;
        if ((l->ops != &dt_layer_conv2d && l->ops != &dt_layer_batchnorm &&
             l->ops != &dt_layer_add) ||
            l[1].ops != &dt_layer_relu || l[1].src != i + 1 ||
            !read_once(m, i + 1))
            continue;
        l->fused = 1;
        if (l->ops == &dt_layer_conv2d && i + 2 < m->nlayers &&
            l[2].ops == &dt_layer_maxpool2d &&
            dt_maxpool2_fusable(&l[2]) && read_once(m, i + 2))
            l->fused = 2;
        for (int j = 1; j <= l->fused; j++)
            l[j].absorbed = 1;
        i += l->fused;
    }
}

/* cuda: a relu over an activation only it reads, made by a layer whose
 * backward does not read its own output, runs in place (layer.h): one
 * activation buffer less per such relu (PyTorch's ReLU(inplace=True) in
 * its ResNets). The cpu fuses these instead (fuse_layers). */
static void relu_in_place(dt_model_t *m)
{
    for (int i = 1; i < m->nlayers; i++) {
        dt_layer_t *l = m->layers + i;
        const dt_layer_ops_t *p = l[-1].ops;
        /* not the last layer: the logits stay float32 while the relu's
         * input may be stored in bf16 (activations = bf16) */
        l->inplace = l->ops == &dt_layer_relu && l->src == i &&
                     i + 1 < m->nlayers && read_once(m, i) &&
                     (p == &dt_layer_conv2d || p == &dt_layer_linear ||
                      p == &dt_layer_batchnorm || p == &dt_layer_add);
    }
}

void dt_model_plan_fusion(dt_model_t *m, int cpu)
{
    if (cpu)
        fuse_layers(m);
    else
        relu_in_place(m);
}

void dt_model_pick_conv(dt_model_t *m)
{
    for (int i = 0; i < m->nlayers; i++) {
        dt_layer_t *l = m->layers + i;
        int wanted = m->conv_algo == DT_CONV_WINOGRAD ||
                     m->conv_algo == DT_CONV_WINOGRAD4 ||
                     (m->conv_algo == DT_CONV_AUTO &&
                      l->in_c >= DT_CONV_WINOGRAD_MIN_IN);
        l->winograd = m->dev && m->dev->kind == DT_DEVICE_CPU && wanted &&
                      dt_conv2d_winograd_applies(l);
        if (l->winograd)
            l->winograd = m->conv_algo == DT_CONV_WINOGRAD4 ||
                                  (m->conv_algo == DT_CONV_AUTO &&
                                   dt_conv2d_winograd4_pays(l))
                              ? 4
                              : 2;
    }
}

dt_status_t dt_model_init(dt_model_t *m, dt_device_t *dev, uint64_t seed)
{
    if (m->params) {
        dt_error("dt_model_init called twice on one model");
        return DT_ERR_INVALID;
    }
    DT_CHECK(dt_model_check_activations(m, dev));
    if (dev && dev->kind == DT_DEVICE_CUDA) {
        for (int i = 0; i < m->nlayers; i++) {
            const dt_layer_t *l = &m->layers[i];
            const char *why =
                l->ops->cuda_missing ? l->ops->cuda_missing(l) : NULL;
            if (why) {
                dt_error("layer %d '%s' cannot run on %s: %s; use [train] "
                         "device = cpu", i, l->desc, dev->name, why);
                return DT_ERR_UNSUPPORTED;
            }
        }
    }
    if (!dev) {
        DT_CHECK(dt_device_open("cpu", 0, 1, &dev));
        m->own_dev = 1;
    }
    m->dev = dev;
    size_t bytes = m->nparams * sizeof(float);
    if (dt_device_alloc(dev, bytes, (void **)&m->params) != DT_OK ||
        dt_device_alloc(dev, bytes, (void **)&m->grads) != DT_OK) {
        /* name what is that large: the model, and its largest layer */
        int big = 0;
        for (int i = 1; i < m->nlayers; i++)
            if (m->layers[i].nweights + m->layers[i].nbias >
                m->layers[big].nweights + m->layers[big].nbias)
                big = i;
        dt_error("the model's %zu parameters (%.3g GB with their gradients "
                 "as float32) do not fit on %s; the largest layer is %d "
                 "'%s' with %zu: fewer or smaller layers", m->nparams,
                 2.0 * (double)bytes * 1e-9, dev->name, big + 1,
                 m->nlayers ? m->layers[big].desc : "",
                 m->nlayers ? m->layers[big].nweights + m->layers[big].nbias
                            : (size_t)0);
        return DT_ERR_NOMEM;
    }
    /* bias=no convs add the zeros and write their bias gradient to junk */
    size_t nobias = 0;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].no_bias && (size_t)m->layers[i].out_c > nobias)
            nobias = (size_t)m->layers[i].out_c;
    if (nobias) {
        DT_CHECK(dt_device_alloc(dev, nobias * sizeof(float),
                                 (void **)&m->zeros));
        DT_CHECK(dt_device_alloc(dev, nobias * sizeof(float),
                                 (void **)&m->junk));
    }
    float *host_buf = NULL;
    if (m->nbuffers) {
        DT_CHECK(dt_device_alloc(dev, m->nbuffers * sizeof(float),
                                 (void **)&m->buffers));
        host_buf = calloc(m->nbuffers, sizeof *host_buf);
        if (!host_buf)
            return DT_ERR_NOMEM;
    }
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        if (l->src != i || l->skip >= 0)
            m->branched = 1;
        if (l->ops == &dt_layer_batchnorm) /* means 0, variances 1 */
            for (size_t j = (size_t)l->in_c; j < l->nbuffers; j++)
                host_buf[l->buffer_offset + j] = 1.0f;
    }
    if (m->nbuffers) {
        dt_status_t st = dt_device_copy(dev, m->buffers, dev->mem, host_buf,
                                        DT_MEM_HOST,
                                        m->nbuffers * sizeof(float));
        free(host_buf);
        DT_CHECK(st);
    }
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
        if (l->no_bias)
            l->b = m->zeros, l->db = m->junk;
        l->buf = m->buffers ? m->buffers + l->buffer_offset : NULL;
        l->rng_seed = &m->rng_seed;
        l->rng_counter = &m->rng_counter;
        init_layer(m, i, host + l->param_offset, &rng);
    }
    dt_model_plan_fusion(m, dev->kind == DT_DEVICE_CPU);
    dt_model_pick_conv(m);
    dt_status_t st = dt_model_pick_layout(m);
    if (st == DT_OK)
        st = dt_device_copy(dev, m->params, dev->mem, host, DT_MEM_HOST,
                            bytes);
    free(host);
    m->rng_seed = seed;
    m->rng_counter = 0;
    return st;
}
