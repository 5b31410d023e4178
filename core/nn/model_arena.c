/* model_arena.c — one block for the memory a training step passes
 * through: the activations backward keeps, their gradients, the branch
 * sums and (activations = bf16) the float32 copies layers run on, each
 * placed at an offset where nothing it shares the step with lies.
 *
 * A step is a timeline: the forward of layer i is step i, the loss step
 * L, the backward of layer i step 2L - i. An activation lives from the
 * step writing it to its last reader, its producer's backward; a
 * gradient dacts[k] from the backward step first writing it (the
 * highest layer reading activation k; the loss's for the logits) to its
 * producer's, which reads it as dy; a branch sum (dtmp) and a float32
 * copy for the one step using them. Buffers whose lifetimes do not meet
 * may share bytes: the gradients of the early layers, which are the
 * largest, reuse what the later layers' activations held, as PyTorch's
 * caching allocator reuses what autograd frees. Every kernel that reads
 * or writes the block runs on the model's one stream, in step order, so
 * reuse needs no further ordering.
 *
 * Measured on an H200 (2026-11-26, ResNet-18 at batch 256 on 28x28,
 * bf16 activations) before this block: 563.8 MiB of activations beside
 * 196 MiB of shared gradient buffers and 98 MiB of float32 copies, each
 * of the largest activation's size, in buffers of their own: dt's peak
 * +1767 MiB against PyTorch AMP's +1581; in this block, +1447 (the
 * gradients adding 24.2 MiB to the activations, the copies 16.5).
 *
 * Placement: greedy by size (the largest first, at the lowest offset
 * clear of every placed buffer whose lifetime meets its own), as
 * TensorFlow Lite's arena planner does. The input (acts[0], written by
 * the host copy) and the logits (dt_model_output) keep buffers of their
 * own. A layer's x and y, and its dy and dx, are live at the same step,
 * so they never share. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <dt/device.h>
#include "model.h"

#define ALIGN 256 /* cudaMalloc's: every buffer as aligned as its own */

/* The first layer backward runs (below it nothing needs a gradient): the
 * first with parameters, as dt_model_backward decides. */
int dt_model_first_backward(const dt_model_t *m)
{
    int first = 0, L = m->nlayers;
    while (first < L - 1 &&
           m->layers[first].nweights + m->layers[first].nbias == 0)
        first++;
    return first;
}

static size_t act_size(const dt_model_t *m, int k)
{
    return k == 0 ? (size_t)m->in_c * m->in_h * m->in_w
                  : dt_layer_out_size(&m->layers[k - 1]);
}

enum { ACT, GRAD, COPY }; /* what a buffer is, for dt_model_memory */

typedef struct item {
    size_t bytes, off;
    int from, to; /* steps, inclusive */
    int kind;
    float **slot; /* where its address goes */
} item_t;

typedef struct plan {
    item_t *it;
    int n, cap;
} plan_t;

static int add_item(plan_t *p, size_t floats, int from, int to, int kind,
                    float **slot)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        item_t *it = realloc(p->it, (size_t)cap * sizeof *it);
        if (!it)
            return -1;
        p->it = it;
        p->cap = cap;
    }
    size_t bytes = (floats * sizeof(float) + ALIGN - 1) / ALIGN * ALIGN;
    p->it[p->n++] = (item_t){.bytes = bytes ? bytes : ALIGN, .from = from,
                             .to = to, .kind = kind, .slot = slot};
    return p->n - 1;
}

static int meets(const item_t *a, const item_t *b)
{
    return !(a->to < b->from || b->to < a->from);
}

static int by_size(const void *pa, const void *pb)
{
    const item_t *a = *(item_t *const *)pa, *b = *(item_t *const *)pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return (a->from > b->from) - (a->from < b->from);
}

static int by_off(const void *pa, const void *pb)
{
    const item_t *a = *(item_t *const *)pa, *b = *(item_t *const *)pb;
    return (a->off > b->off) - (a->off < b->off);
}

/* Offsets for the items of the kinds in mask; the block's size. */
static size_t place(plan_t *p, unsigned mask, int *nomem)
{
    item_t **order = malloc(((size_t)p->n + 1) * sizeof *order);
    item_t **near = malloc(((size_t)p->n + 1) * sizeof *near);
    size_t top = 0;
    int n = 0;
    if (!order || !near) {
        *nomem = 1;
        free(order);
        free(near);
        return 0;
    }
    for (int i = 0; i < p->n; i++)
        if (mask & (1u << p->it[i].kind))
            order[n++] = &p->it[i];
    qsort(order, (size_t)n, sizeof *order, by_size);
    for (int a = 0; a < n; a++) {
        int nn = 0;
        for (int b = 0; b < a; b++) /* placed, and live with it */
            if (meets(order[a], order[b]))
                near[nn++] = order[b];
        qsort(near, (size_t)nn, sizeof *near, by_off);
        size_t off = 0;
        for (int b = 0; b < nn; b++) {
            if (off + order[a]->bytes <= near[b]->off)
                break; /* fits in the gap below this one */
            if (near[b]->off + near[b]->bytes > off)
                off = near[b]->off + near[b]->bytes;
        }
        order[a]->off = off;
        if (off + order[a]->bytes > top)
            top = off + order[a]->bytes;
    }
    free(order);
    free(near);
    return top;
}

/* The step of layer i's backward. */
static int bstep(int L, int i) { return 2 * L - i; }

/* The layer writing activation k (k >= 1): the one whose output, after
 * the layers it applies, is k. */
static int writer(const dt_model_t *m, int k)
{
    for (int i = k - 1; i >= 0; i--)
        if (!m->layers[i].absorbed && i + 1 + m->layers[i].fused == k)
            return i;
    return k - 1;
}

/* Every buffer of the block for batch samples, slots into m's arrays
 * (NULL slots when only sizing). act16: the activations stored in bf16
 * and the float32 copies. */
static int build(const dt_model_t *m, int batch, int act16, int with_slots,
                 plan_t *p)
{
    int L = m->nlayers, first = dt_model_first_backward(m), branched = 0;
    size_t b = (size_t)batch;
    for (int i = 0; i < L; i++) /* as dt_model_init sets m->branched: this
                                   may run before it (bf16_saving) */
        branched |= m->layers[i].src != i || m->layers[i].skip >= 0;
    int *root = malloc(((size_t)L + 1) * sizeof *root);
    int *w = malloc(2 * ((size_t)L + 1) * sizeof *w), *r = w ? w + L + 1 : NULL;
    unsigned char *written = calloc((size_t)L + 1, 1);
    if (!root || !w || !written)
        goto nomem;

    /* activations 1 .. L-1 (a relu in place shares its input's: one
     * buffer, the union of both lifetimes; inside a cpu fused chain the
     * outputs before the chain's last have none) */
    for (int k = 1; k < L; k++) {
        root[k] = -1;
        if (m->layers[k - 1].inplace) {
            root[k] = root[k - 1];
            continue;
        }
        int bf = act16;
        if (!bf && m->layers[k].absorbed)
            continue;
        size_t n = b * act_size(m, k);
        root[k] = add_item(p, bf ? (n + 1) / 2 : n, writer(m, k),
                           writer(m, k), ACT,
                           with_slots ? &m->acts[k] : NULL);
        if (root[k] < 0)
            goto nomem;
    }
    for (int j = 0; j < L; j++) { /* readers: forward, then backward */
        const dt_layer_t *l = &m->layers[j];
        int back = j >= first && !l->absorbed,
            out = j + 1 + l->fused;
        int ks[3] = {l->src, l->skip, back ? out : -1};
        for (int a = 0; a < 3; a++) {
            int k = ks[a];
            if (k < 1 || k >= L || root[k] < 0)
                continue;
            item_t *it = &p->it[root[k]];
            int last = back ? bstep(L, j) : j;
            if (last > it->to)
                it->to = last;
            if (a == 2 && j < it->from) /* an in-place relu's write */
                it->from = j;
        }
    }

    /* gradients: w[k] the backward step first writing dacts[k], r[k]
     * the step reading it last (its producer's); the loss writes the
     * logits' at step L */
    for (int k = 0; k <= L; k++)
        w[k] = r[k] = -1;
    w[L] = L;
    for (int i = first; i < L; i++) {
        const dt_layer_t *l = &m->layers[i];
        if (l->absorbed)
            continue;
        r[i + 1 + l->fused] = bstep(L, i);
        if (l->src > first && (w[l->src] < 0 || bstep(L, i) < w[l->src]))
            w[l->src] = bstep(L, i);
        if (l->skip > first && (w[l->skip] < 0 || bstep(L, i) < w[l->skip]))
            w[l->skip] = bstep(L, i);
    }
    for (int k = 0; k <= L; k++)
        if (w[k] >= 0 &&
            add_item(p, b * act_size(m, k), w[k], r[k] >= 0 ? r[k] : 2 * L + 1,
                     GRAD, with_slots ? &m->dacts[k] : NULL) < 0)
            goto nomem;

    /* branch sums: where dt_model_backward adds a second gradient
     * (accumulate) or an add with its relu fused masks dy for a shortcut
     * whose main path wants none: its dwritten, replayed */
    for (int i = L - 1; branched && i >= first; i--) {
        const dt_layer_t *l = &m->layers[i];
        if (l->absorbed)
            continue;
        int dx = l->src > first, acc = dx && written[l->src];
        if ((acc || (l->skip >= 0 && l->fused && !dx)) &&
            add_item(p, b * dt_layer_in_size(l), bstep(L, i), bstep(L, i),
                     GRAD, with_slots ? &m->dtmp_at[bstep(L, i)] : NULL) < 0)
            goto nomem;
        if (dx)
            written[l->src] = 1;
        if (l->skip > first)
            written[l->skip] = 1;
    }

    /* bf16 storage: each step's float32 x and y (the add widens its
     * second input into y: at least x's size) */
    for (int i = 0; act16 && i < L; i++) {
        const dt_layer_t *l = &m->layers[i];
        if (l->absorbed)
            continue;
        int out = i + 1 + l->fused;
        size_t nin = b * dt_layer_in_size(l),
               nout = b * dt_layer_out_size(&m->layers[out - 1]);
        if (b * dt_layer_out_size(l) > nout)
            nout = b * dt_layer_out_size(l);
        if (nin > nout)
            nout = nin;
        int steps[2] = {i, i >= first ? bstep(L, i) : -1};
        for (int s = 0; s < 2; s++)
            if (steps[s] >= 0 &&
                (add_item(p, nin, steps[s], steps[s], COPY,
                          with_slots ? &m->wx_at[steps[s]] : NULL) < 0 ||
                 add_item(p, nout, steps[s], steps[s], COPY,
                          with_slots ? &m->wy_at[steps[s]] : NULL) < 0))
                goto nomem;
    }
    free(root);
    free(w);
    free(written);
    return 0;
nomem:
    free(root);
    free(w);
    free(written);
    return -1;
}

/* The block's bytes by kind: activations, what the gradients and sums
 * add, what the copies add (their sum is what is allocated). */
static int sizes(plan_t *p, size_t out[3])
{
    int nomem = 0;
    size_t a = place(p, 1u << ACT, &nomem),
           ag = place(p, 1u << ACT | 1u << GRAD, &nomem);
    size_t all = place(p, 1u << ACT | 1u << GRAD | 1u << COPY, &nomem);
    if (nomem)
        return -1;
    /* greedy placement is not monotone: what is allocated covers the
     * largest of the three */
    out[0] = a;
    out[1] = ag > a ? ag - a : 0;
    out[2] = all > a + out[1] ? all - a - out[1] : 0;
    return 0;
}

int dt_model_block_parts(const dt_model_t *m, int batch, int act16,
                         size_t parts[3])
{
    plan_t p = {0};
    parts[0] = parts[1] = parts[2] = 0;
    int st = build(m, batch, act16, 0, &p) != 0 || sizes(&p, parts) != 0
                 ? -1
                 : 0;
    free(p.it);
    return st;
}

size_t dt_model_block_bytes(const dt_model_t *m, int batch, int act16)
{
    size_t s[3];
    if (dt_model_block_parts(m, batch, act16, s) != 0)
        return 0;
    return s[0] + s[1] + s[2];
}

dt_status_t dt_model_plan_block(dt_model_t *m, int batch)
{
    int L = m->nlayers;
    m->dtmp_at = calloc(2 * (size_t)L + 2, sizeof *m->dtmp_at);
    m->wx_at = calloc(2 * (size_t)L + 2, sizeof *m->wx_at);
    m->wy_at = calloc(2 * (size_t)L + 2, sizeof *m->wy_at);
    if (!m->dtmp_at || !m->wx_at || !m->wy_at)
        return DT_ERR_NOMEM;
    plan_t p = {0};
    size_t s[3];
    if (build(m, batch, m->act16, 1, &p) != 0 || sizes(&p, s) != 0) {
        free(p.it);
        return DT_ERR_NOMEM;
    }
    /* the last placement (every kind) holds the offsets */
    const char *poison = getenv("DT_DEBUG_POISON_BLOCK");
    m->poison = poison && *poison && strcmp(poison, "0") != 0;
    if (m->poison) {
        m->spans = malloc(((size_t)p.n + 1) * sizeof *m->spans);
        if (!m->spans) {
            free(p.it);
            return DT_ERR_NOMEM;
        }
        for (int i = 0; i < p.n; i++)
            m->spans[i] = (struct dt_block_span){p.it[i].off, p.it[i].bytes,
                                                 p.it[i].from, p.it[i].to};
        m->nspans = p.n;
    }
    m->block_acts = s[0];
    m->block_grads = s[1];
    m->block_copies = s[2];
    size_t bytes = s[0] + s[1] + s[2];
    dt_status_t st = DT_OK;
    if (bytes)
        st = dt_device_alloc(m->dev, bytes, &m->block);
    for (int i = 0; st == DT_OK && i < p.n; i++)
        *p.it[i].slot = (float *)((char *)m->block + p.it[i].off);
    for (int k = 1; st == DT_OK && k < L; k++)
        if (m->layers[k - 1].inplace)
            m->acts[k] = m->acts[k - 1];
    free(p.it);
    return st;
}

int dt_model_block_overlaps(const dt_model_t *m, int batch, int act16)
{
    plan_t p = {0};
    size_t s[3];
    if (build(m, batch, act16, 0, &p) != 0 || sizes(&p, s) != 0) {
        free(p.it);
        return -1;
    }
    int bad = 0;
    for (int a = 0; a < p.n; a++)
        for (int b = a + 1; b < p.n; b++) {
            const item_t *x = &p.it[a], *y = &p.it[b];
            if (meets(x, y) && x->off < y->off + y->bytes &&
                y->off < x->off + x->bytes)
                bad++;
        }
    free(p.it);
    return bad;
}

static int by_span_off(const void *pa, const void *pb)
{
    const struct dt_block_span *a = pa, *b = pb;
    return (a->off > b->off) - (a->off < b->off);
}

static dt_status_t fill(dt_model_t *m, size_t from, size_t to)
{
    if (to <= from)
        return DT_OK;
    char *p = (char *)m->block + from;
    if (m->dev->kind == DT_DEVICE_CUDA)
        return dt_gpu_memset(p, 0x41, to - from, m->dev->stream);
    memset(p, 0x41, to - from); /* 0x41414141: 12.08 as a float */
    return DT_OK;
}

dt_status_t dt_model_block_poison(dt_model_t *m, int step)
{
    if (!m->poison || !m->block)
        return DT_OK;
    struct dt_block_span *keep =
        malloc(((size_t)m->nspans + 1) * sizeof *keep);
    if (!keep)
        return DT_ERR_NOMEM;
    int n = 0;
    for (int i = 0; i < m->nspans; i++) /* live, and written before */
        if (m->spans[i].from < step && step <= m->spans[i].to)
            keep[n++] = m->spans[i];
    qsort(keep, (size_t)n, sizeof *keep, by_span_off);
    size_t at = 0, end = m->block_acts + m->block_grads + m->block_copies;
    dt_status_t st = DT_OK;
    for (int i = 0; st == DT_OK && i < n; i++) {
        st = fill(m, at, keep[i].off);
        if (keep[i].off + keep[i].bytes > at)
            at = keep[i].off + keep[i].bytes;
    }
    if (st == DT_OK)
        st = fill(m, at, end);
    free(keep);
    return st;
}
