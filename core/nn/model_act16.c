/* model_act16.c — 16-bit activation storage ([train] activations = bf16,
 * dt_model_set_activations): on a CUDA device the activations that
 * backward keeps are stored in bf16, half their float32 memory (what
 * PyTorch's autocast keeps in bf16 too). The layers stay float32: each
 * reads a widened copy of its stored input and writes a float32 output
 * that is rounded to bf16 as it is stored, so every layer sees in
 * backward exactly the values its forward used. The widened copies are
 * per step (wx, wy: x and y; the residual add widens its second input
 * into its own output), in the block shared by lifetime (model_arena.c),
 * not one per layer. The model's input (acts[0]) and the logits stay
 * float32. The layers that can read and write the bf16 themselves do
 * (dt_model_io16: relu, the residual add; under precision = bf16 conv
 * and batchnorm's forward); the copies serve every other layer type
 * (batchnorm's backward too: cuDNN wants x, dy and dx of one type). */
#include "config.h"

#include <string.h>

#include <dt/log.h>
#include "cuda/backend.h"
#include "model.h"

dt_status_t dt_activations_parse(const char *name, dt_activations_t *a)
{
    if (name && strcmp(name, "float32") == 0) {
        *a = DT_ACTIVATIONS_FLOAT32;
        return DT_OK;
    }
    if (name && strcmp(name, "bf16") == 0) {
        *a = DT_ACTIVATIONS_BF16;
        return DT_OK;
    }
    return DT_ERR_INVALID;
}

/* bf16 storage needs the CUDA backend's conversions (ABI 5). */
static dt_status_t check_device(const dt_device_t *dev)
{
    if (!dev || dev->kind != DT_DEVICE_CUDA) {
        dt_error("activations = bf16 stores a GPU's activations in 16 "
                 "bits; %s keeps float32: set activations = float32 (or "
                 "auto)", dev ? dev->name : "the cpu");
        return DT_ERR_UNSUPPORTED;
    }
    return DT_OK;
}

dt_status_t dt_model_set_activations(dt_model_t *m, dt_activations_t a)
{
    if (a != DT_ACTIVATIONS_FLOAT32 && a != DT_ACTIVATIONS_BF16) {
        dt_error("dt_model_set_activations: unknown storage %d", (int)a);
        return DT_ERR_INVALID;
    }
    if (a == DT_ACTIVATIONS_BF16 && m->dev)
        DT_CHECK(check_device(m->dev));
    if (m->dev && (a == DT_ACTIVATIONS_BF16) != m->act16) {
        dt_model_free_buffers(m); /* the activations change size */
        m->trained = 0;
    }
    m->act16 = a == DT_ACTIVATIONS_BF16;
    return DT_OK;
}

dt_status_t dt_model_check_activations(const dt_model_t *m,
                                       const dt_device_t *dev)
{
    return m->act16 ? check_device(dev) : DT_OK;
}

dt_activations_t dt_model_activations(const dt_model_t *m)
{
    return m->act16 ? DT_ACTIVATIONS_BF16 : DT_ACTIVATIONS_FLOAT32;
}

int dt_model_act16(const dt_model_t *m, int k)
{
    return m->act16 && k > 0 && k < m->nlayers;
}

dt_status_t dt_model_act_read(dt_model_t *m, int k, float *tmp, size_t n,
                              const float **out)
{
    if (!dt_model_act16(m, k)) {
        *out = m->acts[k];
        return DT_OK;
    }
    DT_CHECK(dt_cuda_backend_loaded()->from_bf16(m->dev, m->acts[k], tmp, n));
    *out = tmp;
    return DT_OK;
}

dt_status_t dt_model_act_store(dt_model_t *m, int k, const float *y,
                               size_t n)
{
    if (!dt_model_act16(m, k))
        return DT_OK;
    return dt_cuda_backend_loaded()->to_bf16(m->dev, y, m->acts[k], n);
}

/* A relu between stored activations, and a residual add of two into a
 * third, run on the bf16 itself. Under
 * precision = bf16 with cuDNN, a batchnorm's forward reads and writes the
 * stored bf16 (cuDNN's bf16 batchnorm), and a conv, which runs on bf16
 * copies of x and y anyway, reads and writes the stored ones as they are
 * instead (the geometry's x16/y16, cudnn_conv.c), sparing the widened
 * copy and its own rounding pass on each side. Not its output with a
 * bias: cuDNN adds that in float32. */
void dt_model_io16(dt_model_t *m, dt_layer_t *l, int out)
{
    l->io16 = 0;
    if (!m->act16 || m->dev->kind != DT_DEVICE_CUDA)
        return;
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    /* a relu between stored bf16 activations (in place, the usual one):
     * on the bf16 itself, the same values as on the widened copy */
    if (l->ops == &dt_layer_relu) {
        if (dt_model_act16(m, l->src) && dt_model_act16(m, out))
            l->io16 = 3;
        return;
    }
    /* the residual add, all three stored: a bf16 kernel (8: x2 is) */
    if (l->ops == &dt_layer_add) {
        if (dt_model_act16(m, l->src) && dt_model_act16(m, l->skip) &&
            dt_model_act16(m, out) && cu->add16)
            l->io16 = 1 | 2 | 8;
        return;
    }
    if (dt_cuda_cudnn_missing() || !cu->get_precision ||
        cu->get_precision() != DT_PRECISION_BF16)
        return;
    /* batchnorm through cuDNN (not sync_bn's kernels), stored bf16 on
     * both sides: its forward reads and writes them (cudnn_bn.c); its
     * backward takes the widened x (cuDNN wants x, dy and dx of one
     * type, and dy is float32) */
    if (l->ops == &dt_layer_batchnorm) {
        if (!l->allreduce && dt_model_act16(m, l->src) &&
            dt_model_act16(m, out))
            l->io16 = 3;
        return;
    }
    if (l->ops != &dt_layer_conv2d)
        return;
    int x16 = dt_model_act16(m, l->src);
    l->io16 = x16 | (dt_model_act16(m, out) && l->no_bias) << 1 | x16 << 2;
}

/* Which of its forward's input and output a layer's CUDA backward reads
 * (layer.h's backward gets both; widening one nobody reads is a wasted
 * pass). Unknown layers: both. */
void dt_model_backward_reads(const dt_layer_t *l, int *x, int *y)
{
    const dt_layer_ops_t *o = l->ops;
    *x = *y = 1;
    if (o == &dt_layer_conv2d || o == &dt_layer_linear ||
        o == &dt_layer_batchnorm)
        *y = 0; /* dW from x; batchnorm's x-hat from x */
    else if (o == &dt_layer_relu)
        *x = 0; /* the mask from y */
    else if (o == &dt_layer_dropout || o == &dt_layer_maxpool2d ||
             o == &dt_layer_add || o == &dt_layer_flatten)
        *x = *y = 0; /* a mask or argmax in scratch, or nothing */
}
