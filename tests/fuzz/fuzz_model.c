/* fuzz_model.c — the job file's [model] layers, as the trainer takes it:
 * parsed for an input shape, checked (dt_train_check_model), built on the
 * cpu and run for one training step on a small random batch. Must never
 * crash, leak, hang or compute outside its buffers; an accepted model
 * must give (batch, classes) logits that are no infinities and gradient
 * ranges that cover the parameters once.
 *
 * Input: 5 bytes, then the layers string (up to the first NUL):
 *   [0] channels 1 + b % 4        [1] height 1 + b % 64
 *   [2] width 1 + b % 64          [3] classes 1 + b % 100
 *   [4] batch 1 + (b & 7), layout (b >> 3) & 3 (auto nchw nhwc auto),
 *       conv_algo (b >> 5) & 3 (auto im2col winograd winograd4)
 * Models above the caps below are skipped before anything large is
 * allocated: the fuzzer looks for wrong answers, not big ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/nn.h>
#include <dt/train.h>
#include "nn/model.h"
#include "fuzz.h"

#define HEADER 5
#define MAX_BYTES (64u << 20) /* params + activations + scratch   */
#define MAX_FLOPS 1e8         /* one step: 3x forward, all samples */
#define MAX_LAYERS 1000       /* planning the block is quadratic    */

static const char *const layouts[] = {"auto", "nchw", "nhwc", "auto"};
static const dt_conv_algo_t algos[] = {DT_CONV_AUTO, DT_CONV_IM2COL,
                                       DT_CONV_WINOGRAD, DT_CONV_WINOGRAD4};

static void bad(const char *layers, const char *what)
{
    fprintf(stderr, "fuzz_model: %s\n  layers: %s\n", what, layers);
    abort();
}

/* Backward's gradient ranges: in decreasing offsets, each ending where
 * the next one starts, together [0, nparams). */
typedef struct ranges {
    size_t next_end;
    int bad;
} ranges_t;

static dt_status_t on_grads(void *arg, size_t offset, size_t len)
{
    ranges_t *r = arg;
    if (offset + len != r->next_end)
        r->bad = 1;
    r->next_end = offset;
    return DT_OK;
}

static int too_large(const dt_model_t *m, int batch)
{
    dt_model_memory_t e;
    if (dt_model_nlayers(m) > MAX_LAYERS ||
        dt_model_memory_estimate(m, batch, 0, &e) != DT_OK)
        return 1;
    double bytes = (double)e.params + (double)e.activations +
                   (double)e.act_grads + (double)e.act_copies +
                   (double)e.scratch;
    return bytes > MAX_BYTES || dt_model_flops(m) * 3.0 * batch > MAX_FLOPS;
}

/* The layers' scratch as dt_model_init sized it (Winograd or im2col). */
static int scratch_too_large(const dt_model_t *m, int batch)
{
    double floats = 0;
    for (int i = 0; i < m->nlayers; i++)
        floats += (double)dt_model_scratch_floats(&m->layers[i], batch);
    return floats * sizeof(float) > MAX_BYTES;
}

static void run_step(dt_model_t *m, const char *layers, int c, int h, int w,
                     int classes, int batch)
{
    size_t n = (size_t)batch * (size_t)c * (size_t)h * (size_t)w;
    float *x = malloc(n * sizeof *x);
    int *y = malloc((size_t)batch * sizeof *y);
    if (!x || !y)
        goto out;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) * (1.0 / 8388608.0) - 1.0);
    }
    for (int i = 0; i < batch; i++)
        y[i] = i % classes;
    ranges_t r = {dt_model_nparams(m), 0};
    float loss = 0;
    if (dt_model_train_step(m, x, y, batch, &loss, on_grads, &r) != DT_OK)
        bad(layers, "an accepted model's training step failed");
    if (r.bad || r.next_end != 0)
        bad(layers, "the gradient ranges do not cover the parameters once");
    if (isinf(loss))
        bad(layers, "the loss is infinite");
    const dt_tensor_t *out = dt_model_output(m);
    if (!out || out->numel != (size_t)batch * (size_t)classes ||
        out->shape[0] != batch || out->shape[1] != classes)
        bad(layers, "the logits are not (batch, classes)");
    for (size_t i = 0; i < out->numel; i++)
        if (isinf(out->data[i]))
            bad(layers, "a logit is infinite");
out:
    free(x);
    free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dt_device_t *cpu;
    if (size < HEADER)
        return 0;
    if (!cpu) {
        dt_log_set_level(DT_LOG_ERROR);
        if (dt_device_open("cpu", 0, 1, &cpu) != DT_OK)
            abort();
    }
    int c = 1 + data[0] % 4, h = 1 + data[1] % 64, w = 1 + data[2] % 64;
    int classes = 1 + data[3] % 100, batch = 1 + (data[4] & 7);
    const char *layout = layouts[(data[4] >> 3) & 3];
    dt_conv_algo_t algo = algos[(data[4] >> 5) & 3];
    char *layers = strndup((const char *)data + HEADER, size - HEADER);
    dt_config_t *cfg = NULL;
    dt_model_t *m = NULL;
    dt_layout_t lay;
    char num[16];
    snprintf(num, sizeof num, "%d", batch);
    if (!layers || dt_config_new(&cfg) != DT_OK ||
        dt_config_set(cfg, "train", "batch_size", num, DT_SRC_CLI, "fuzz") !=
            DT_OK ||
        dt_config_set(cfg, "model", "layout", layout, DT_SRC_CLI, "fuzz") !=
            DT_OK ||
        dt_layout_parse(layout, &lay) != DT_OK)
        goto out;
    if (dt_model_parse(layers, "fuzz", c, h, w, classes, &m, NULL) != DT_OK)
        goto out;
    if (dt_model_nlayers(m) < 1)
        bad(layers, "a model without layers was accepted");
    if (dt_train_check_model(cfg, m, 1) != DT_OK || too_large(m, batch))
        goto out;
    if (dt_model_set_conv_algo(m, algo) != DT_OK ||
        dt_model_set_layout(m, lay) != DT_OK)
        bad(layers, "conv_algo or layout refused on a parsed model");
    /* what dt_train_check_model let through must build (an nhwc layout
     * that a layer cannot run was refused there) */
    if (dt_model_init(m, cpu, 1) != DT_OK)
        bad(layers, "dt_model_init refused a model the checks accepted");
    if (scratch_too_large(m, batch))
        goto out;
    run_step(m, layers, c, h, w, classes, batch);
out:
    dt_model_free(m);
    dt_config_free(cfg);
    free(layers);
    return 0;
}
