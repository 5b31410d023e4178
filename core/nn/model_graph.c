/* model_graph.c — dt_model_train_step: forward and backward of one
 * training batch, eagerly or as a CUDA graph ([train] cuda_graphs).
 *
 * Why graphs: on a GPU every layer costs the host a few kernel launches
 * and library calls; for a small model (a CIFAR ResNet at batch 256) the
 * host's launching, not the GPU, can set the pace. A captured step is
 * one launch. What it needs: the same buffers every step (the model's
 * are fixed once sized: model_arena.c), no host decisions that change
 * between steps, and no synchronization or allocation inside the step.
 *
 * The step: the input's copies are queued outside the graph (their
 * source, a loader's pinned slot, changes every step); the graph holds
 * the layers, the loss rows and backward; the rows come back by a queued
 * copy after it, and the one wait of the step is for them. Gradient
 * callbacks, which record events on the stream for the gradient sync,
 * cannot run inside a capture: their ranges are noted while capturing
 * and the callbacks are made after each launch, so a sync over ranks
 * starts after the whole backward instead of during it (why the trainer's
 * auto times whole steps, the sync included: dt_model_graph_step_time).
 *
 * Chosen by: two eager warm-up steps of the batch (cuDNN picks its
 * algorithms, buffers reach their size), then under auto three timed
 * eager steps, the capture, three timed graph steps, and the faster
 * kept. A capture that fails (a call that cannot be captured) is said
 * and the step stays eager (auto), or is an error naming why (on). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/clock.h>
#include <dt/log.h>
#include "model.h"

enum { WARM_STEPS = 2, TIMED_STEPS = 3 };

static const char *const mode_names[] = {"off", "on", "auto"};

dt_status_t dt_cuda_graphs_parse(const char *name, dt_cuda_graphs_t *out)
{
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, mode_names[i]) == 0) {
            *out = (dt_cuda_graphs_t)i;
            return DT_OK;
        }
    return DT_ERR_INVALID;
}

void dt_model_graph_reset(dt_model_t *m)
{
    struct dt_model_graphs *g = &m->graphs;
    if (g->exec) {
        const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
        if (cu && m->dev)
            cu->graph_destroy(m->dev, g->exec);
        g->exec = NULL;
    }
    g->warm = 0;
    g->nready = 0;
}

dt_status_t dt_model_set_cuda_graphs(dt_model_t *m, dt_cuda_graphs_t mode)
{
    if (mode != DT_CUDA_GRAPHS_OFF && mode != DT_CUDA_GRAPHS_ON &&
        mode != DT_CUDA_GRAPHS_AUTO) {
        dt_error("dt_model_set_cuda_graphs: unknown mode %d", (int)mode);
        return DT_ERR_INVALID;
    }
    dt_model_graph_reset(m);
    free(m->graphs.ready);
    memset(&m->graphs, 0, sizeof m->graphs);
    m->graphs.mode = mode;
    return DT_OK;
}

/* Why this model's step cannot be captured (NULL: it can). */
static const char *unfit(const dt_model_t *m, char *buf, size_t len)
{
    if (m->dev->kind != DT_DEVICE_CUDA)
        return "not on a GPU";
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].ops == &dt_layer_dropout) {
            snprintf(buf, len, "layer %d (%s) draws a new mask every step",
                     i, m->layers[i].desc);
            return buf;
        }
    if (m->allreduce)
        return "sync_bn sums batch statistics over the ranks inside "
               "forward";
    if (m->prof)
        return "per-layer profiling times each layer on the host";
    if (m->poison)
        return "DT_DEBUG_POISON_BLOCK fills the block on the host";
    if (!dt_cuda_backend_loaded()->graph_capture)
        return "this CUDA backend cannot capture";
    return NULL;
}

/* ---- the step's parts ------------------------------------------------ */

typedef struct dt_model_step_body step_body_t;

/* Forward with labels, the loss rows, backward: what a graph holds. */
static dt_status_t body(void *p)
{
    step_body_t *s = p;
    DT_CHECK(dt_model_forward_layers(s->m, s->batch, 1, 1));
    s->m->trained = 1;
    return dt_model_backward(s->m, s->cb, s->arg);
}

/* While capturing: note the range; the callback comes after launches. */
static dt_status_t note_ready(void *arg, size_t offset, size_t len)
{
    struct dt_model_graphs *g = arg;
    if (!g->capturing) /* a replay of the body (the tests' stand-in) */
        return DT_OK;
    if (g->nready == g->cap_ready) {
        int cap = g->cap_ready ? 2 * g->cap_ready : 64;
        size_t(*r)[2] = realloc(g->ready, (size_t)cap * sizeof *r);
        if (!r)
            return DT_ERR_NOMEM;
        g->ready = r;
        g->cap_ready = cap;
    }
    g->ready[g->nready][0] = offset;
    g->ready[g->nready][1] = len;
    g->nready++;
    return DT_OK;
}

static dt_status_t capture(dt_model_t *m, int batch, char *why, size_t len)
{
    struct dt_model_graphs *g = &m->graphs;
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    g->nready = 0;
    g->body = (step_body_t){m, batch, note_ready, g};
    g->capturing = 1;
    dt_status_t st = cu->graph_capture(m->dev, body, &g->body, &g->exec, why,
                                       len);
    g->capturing = 0;
    if (st != DT_OK)
        return st;
    g->batch = batch;
    g->scale = m->loss_scale;
    g->smoothing = m->label_smoothing;
    g->precision = cu->get_precision();
    g->gen = cu->buffers_generation(m->dev);
    g->captures++;
    return DT_OK;
}

static dt_status_t launch(dt_model_t *m, int batch, dt_grad_ready_fn cb,
                          void *arg)
{
    struct dt_model_graphs *g = &m->graphs;
    DT_CHECK(dt_cuda_backend_loaded()->graph_launch(m->dev, g->exec));
    g->launches++;
    m->batch = batch; /* what forward_layers set when it was captured */
    m->output.shape[0] = batch;
    m->output.numel = (size_t)batch * m->nclasses;
    for (int i = 0; cb && i < g->nready; i++)
        DT_CHECK(cb(arg, g->ready[i][0], g->ready[i][1]));
    return DT_OK;
}

/* ---- choosing ------------------------------------------------------- */

/* The capture failed: auto and on go on eagerly, on says it loudly. */
static dt_status_t capture_failed(dt_model_t *m, dt_status_t st,
                                  const char *why)
{
    struct dt_model_graphs *g = &m->graphs;
    g->decided = -1;
    if (st != DT_ERR_UNSUPPORTED)
        return st;
    if (g->mode == DT_CUDA_GRAPHS_ON) {
        dt_error("cuda_graphs = on: the training step could not be "
                 "captured: %s; set [train] cuda_graphs = auto or off",
                 why);
        return DT_ERR_UNSUPPORTED;
    }
    dt_warn("cuda_graphs: the training step could not be captured (%s): "
            "it runs eagerly", why);
    return DT_OK;
}

/* auto, after the timed graph steps: keep the faster. */
static void decide(dt_model_t *m)
{
    struct dt_model_graphs *g = &m->graphs;
    g->decided = g->graph_s < g->eager_s ? 1 : -1;
    dt_info("cuda_graphs = auto: a captured step took %.3f ms, an eager "
            "one %.3f ms (fastest of %d each, batch %d%s): %s",
            1e3 * g->graph_s, 1e3 * g->eager_s, TIMED_STEPS, g->batch,
            g->external ? ", whole steps with the gradient sync" : "",
            g->decided > 0 ? "graphs kept" : "eager steps from now on");
    if (g->decided < 0)
        dt_model_graph_reset(m);
}

static double min_or(double a, double b) { return a > 0 && a < b ? a : b; }

/* auto: one timed step: eager ones after the warm-up, then graph ones
 * (the capture's own step not counted), then the decision. */
static void note_time(dt_model_t *m, double seconds)
{
    struct dt_model_graphs *g = &m->graphs;
    if (!g->exec && g->warm > WARM_STEPS) {
        g->eager_s = min_or(g->eager_s, seconds);
        g->timed++;
    } else if (g->exec) {
        if (g->timed >= 0)
            g->graph_s = min_or(g->graph_s, seconds);
        if (++g->timed >= TIMED_STEPS)
            decide(m);
    }
}

void dt_model_graph_external_timing(dt_model_t *m) { m->graphs.external = 1; }

void dt_model_graph_step_time(dt_model_t *m, double seconds)
{
    if (m->graphs.pending) {
        m->graphs.pending = 0;
        note_time(m, seconds);
    }
}

dt_status_t dt_model_train_step(dt_model_t *m, const float *x,
                                const int *labels, int batch, float *loss,
                                dt_grad_ready_fn cb, void *arg)
{
    if (!labels) {
        dt_error("dt_model_train_step needs labels");
        return DT_ERR_INVALID;
    }
    double t0 = dt_clock_now();
    DT_CHECK(dt_model_forward_begin(m, x, labels, batch));
    struct dt_model_graphs *g = &m->graphs;
    char buf[160];
    const char *why = NULL;
    int graphs = g->mode != DT_CUDA_GRAPHS_OFF && g->decided >= 0;
    /* Unfit now (profiling or sync_bn turned on since, say): eager, and
     * any graph dropped; graphs may come back when it is fit again. */
    if (graphs && (why = unfit(m, buf, sizeof buf)) != NULL) {
        graphs = 0;
        dt_model_graph_reset(m);
        if (g->mode == DT_CUDA_GRAPHS_ON && m->dev->kind == DT_DEVICE_CUDA &&
            !g->said_unfit)
            dt_warn("cuda_graphs = on: the step is not captured: %s; it "
                    "runs eagerly", why);
        g->said_unfit = 1;
    }
    /* What the captured kernels were given at capture and cannot change:
     * a new loss scale (fp16), label smoothing or GPU precision, or a
     * backend buffer moved since (cuDNN's workspace grown for an
     * evaluation's shapes) is a new graph. */
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    if (g->exec &&
        (g->scale != m->loss_scale || g->smoothing != m->label_smoothing ||
         g->precision != cu->get_precision() ||
         g->gen != cu->buffers_generation(m->dev)))
        dt_model_graph_reset(m);
    /* Another batch size: an epoch's last runs eagerly and leaves the
     * graph; the same other size twice in a row (work_load = auto's new
     * share) is the new size: warmed up and captured anew. */
    if (graphs && g->exec && g->batch != batch) {
        g->other = g->other_batch == batch ? g->other + 1 : 1;
        g->other_batch = batch;
        if (g->other >= WARM_STEPS) {
            dt_model_graph_reset(m);
            g->batch = batch;
            g->warm = g->other - 1; /* this step is counted below */
        }
    } else {
        g->other = 0;
    }
    if (graphs && g->exec && g->batch == batch) {
        DT_CHECK(launch(m, batch, cb, arg));
    } else if (graphs && !g->exec && g->batch == batch &&
               g->warm >= WARM_STEPS &&
               (g->decided || g->mode == DT_CUDA_GRAPHS_ON ||
                g->timed >= TIMED_STEPS)) {
        dt_status_t st = capture(m, batch, buf, sizeof buf);
        if (st != DT_OK) {
            DT_CHECK(capture_failed(m, st, buf));
            step_body_t s = {m, batch, cb, arg};
            DT_CHECK(body(&s));
        } else {
            if (g->mode == DT_CUDA_GRAPHS_ON && g->captures == 1)
                dt_info("cuda_graphs = on: the training step captured "
                        "(batch %d), one launch per step", batch);
            if (g->mode == DT_CUDA_GRAPHS_ON)
                g->decided = 1;
            g->timed = -1; /* the capture's own step is not timed */
            DT_CHECK(launch(m, batch, cb, arg));
        }
    } else {
        step_body_t s = {m, batch, cb, arg};
        DT_CHECK(body(&s));
        if (graphs && !g->exec) {
            if (g->batch != batch) { /* warm-up (again) for this size */
                g->batch = batch;
                g->warm = g->timed = 0;
                g->eager_s = g->graph_s = 0.0;
            }
            g->warm++;
        }
    }
    m->trained = 0; /* backward is done */
    m->rng_counter++;
    DT_CHECK(dt_model_read_loss(m, batch, loss, NULL)); /* the one wait */
    /* auto: this step timed (by the caller, whole, when it said so) */
    g->pending = 0;
    if (graphs && g->mode == DT_CUDA_GRAPHS_AUTO && !g->decided &&
        g->batch == batch) {
        if (g->external)
            g->pending = 1;
        else
            note_time(m, dt_clock_now() - t0);
    }
    return DT_OK;
}
