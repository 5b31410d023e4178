/* model_parse.c — layer strings such as
 *   "conv(32,3,pad=1) relu maxpool(2) flatten linear(10)"
 * into a model: layers, shapes and parameter layout. Errors point at the
 * offending token with a caret line under the string. */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dt/log.h>
#include "model.h"
#include "utf8_chars.h"

/* One kind of layer and its arguments: positional in this order, or by
 * name; `def` NAN means required, SAME_AS_FIRST takes argument 0. An
 * argument whose bit is set in `yesno` also takes yes/no (true/false,
 * on/off) for 1/0. A kind without ops is a stage: its first argument is
 * a word (the block type) and the parser expands it into layers. */
#define SAME_AS_FIRST (-1.0)
typedef struct layer_kind {
    const char *name, *alias;
    const dt_layer_ops_t *ops;
    int nargs;
    const char *arg[DT_LAYER_MAXARGS];
    double def[DT_LAYER_MAXARGS];
    double min[DT_LAYER_MAXARGS], max[DT_LAYER_MAXARGS];
    int integer;
    unsigned yesno;
    const char *usage;
} layer_kind_t;

static const layer_kind_t kinds[] = {
    {"linear", NULL, &dt_layer_linear, 2, {"out", "bias"}, {NAN, 1},
     {1, 0}, {1 << 24, 1}, 1, 1u << 1, "linear(out, bias=yes)"},
    {"conv", "conv2d", &dt_layer_conv2d, 5,
     {"out", "k", "stride", "pad", "bias"}, {NAN, NAN, 1, 0, 1},
     {1, 1, 1, 0, 0}, {1 << 16, 64, 64, 64, 1}, 1, 1u << 4,
     "conv(out, k, stride=1, pad=0, bias=yes)"},
    {"maxpool", "maxpool2d", &dt_layer_maxpool2d, 2, {"k", "stride"},
     {NAN, SAME_AS_FIRST}, {1, 1}, {64, 64}, 1, 0, "maxpool(k, stride=k)"},
    {"avgpool", "avgpool2d", &dt_layer_avgpool, 2, {"k", "stride"},
     {NAN, SAME_AS_FIRST}, {1, 1}, {64, 64}, 1, 0, "avgpool(k, stride=k)"},
    {"gap", NULL, &dt_layer_gap, 0, {NULL}, {0}, {0}, {0}, 1, 0, "gap"},
    {"relu", NULL, &dt_layer_relu, 0, {NULL}, {0}, {0}, {0}, 1, 0, "relu"},
    {"flatten", NULL, &dt_layer_flatten, 0, {NULL}, {0}, {0}, {0}, 1, 0,
     "flatten"},
    {"dropout", NULL, &dt_layer_dropout, 1, {"p"}, {0.5}, {0}, {0.99}, 0, 0,
     "dropout(p=0.5)"},
    {"batchnorm", "bn", &dt_layer_batchnorm, 2, {"momentum", "eps"},
     {0.1, 1e-5}, {0, 1e-12}, {1, 1}, 0, 0,
     "batchnorm(momentum=0.1, eps=1e-5)"},
    {"stage", NULL, NULL, 3, {"out", "n", "stride"}, {NAN, NAN, 1},
     {1, 1, 1}, {1 << 16, 1000, 64}, 1, 0,
     "stage(basic, out, n, stride=1)"},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

typedef struct parser {
    const char *text, *origin;
    dt_model_error_t *err;
} parser_t;

/* Log "origin: message", the string and a caret under [col, col+len). */
static dt_status_t fail(parser_t *p, int col, int len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static dt_status_t fail(parser_t *p, int col, int len, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (len < 1)
        len = 1;
    dt_error("%s: %s", p->origin ? p->origin : "[model] layers", msg);
    /* The string on one line (tabs and newlines as spaces keep the caret
     * aligned), then the caret line; both carry the same log prefix. The
     * caret counts characters: a UTF-8 "é" before it is one column. */
    size_t n = strlen(p->text);
    int at = col < (int)n ? col : (int)n;
    int mcol = dt_utf8_chars(p->text, at);
    int mlen = dt_utf8_chars(p->text + at, len);
    if (mlen < 1)
        mlen = 1;
    char *line = malloc(n + 1);
    char *mark = malloc((size_t)mcol + (size_t)mlen + 1);
    if (line && mark) {
        for (size_t i = 0; i <= n; i++)
            line[i] = isspace((unsigned char)p->text[i]) ? ' ' : p->text[i];
        memset(mark, ' ', (size_t)mcol);
        mark[mcol] = '^';
        memset(mark + mcol + 1, '~', (size_t)mlen - 1);
        mark[mcol + mlen] = '\0';
        dt_error("  %s", line);
        dt_error("  %s", mark);
    }
    free(line);
    free(mark);
    if (p->err) {
        p->err->column = col;
        p->err->length = len;
        snprintf(p->err->message, sizeof p->err->message, "%s", msg);
    }
    return DT_ERR_CONFIG;
}

static const layer_kind_t *find_kind(const char *name, size_t len)
{
    for (size_t i = 0; i < NKINDS; i++)
        if ((strlen(kinds[i].name) == len &&
             strncmp(kinds[i].name, name, len) == 0) ||
            (kinds[i].alias && strlen(kinds[i].alias) == len &&
             strncmp(kinds[i].alias, name, len) == 0))
            return &kinds[i];
    return NULL;
}

static int is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* What ends a layer's name as written. Every accepted name is followed by
 * one of these, so reading up to it accepts what the name characters did;
 * a name with other bytes ("linéar", "relu-x") is then quoted whole. */
static int ends_layer_word(char c)
{
    return c == '\0' || isspace((unsigned char)c) || c == ',' || c == '(' ||
           c == ')';
}

/* One argument "[name=]number" at text[a, b) (trimmed). */
static dt_status_t parse_arg(parser_t *p, const layer_kind_t *k, int a, int b,
                             int position, double *vals, int *given)
{
    const char *t = p->text;
    int slot = position, eq = -1;
    for (int i = a; i < b; i++)
        if (t[i] == '=')
            eq = i;
    int va = a;
    if (eq >= 0) {
        int ne = eq;
        while (ne > a && isspace((unsigned char)t[ne - 1]))
            ne--;
        slot = -1;
        for (int i = 0; i < k->nargs; i++)
            if ((int)strlen(k->arg[i]) == ne - a &&
                strncmp(k->arg[i], t + a, (size_t)(ne - a)) == 0)
                slot = i;
        if (slot < 0) {
            char names[64] = "";
            for (int i = 0; i < k->nargs; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names),
                         "%s%s", i ? ", " : "", k->arg[i]);
            return fail(p, a, ne - a, "%s has no argument '%.*s' (it takes: "
                        "%s)", k->name, ne - a, t + a,
                        k->nargs ? names : "none");
        }
        va = eq + 1;
        while (va < b && isspace((unsigned char)t[va]))
            va++;
    } else if (slot >= k->nargs) {
        return fail(p, a, b - a, "%s takes at most %d argument%s", k->name,
                    k->nargs, k->nargs == 1 ? "" : "s");
    }
    if (given[slot])
        return fail(p, a, b - a, "%s: argument '%s' given twice", k->name,
                    k->arg[slot]);
    char buf[64];
    int vlen = b - va;
    if (vlen <= 0 || vlen >= (int)sizeof buf)
        return fail(p, a, b - a > 0 ? b - a : 1, "%s: argument '%s' needs a "
                    "value", k->name, k->arg[slot]);
    memcpy(buf, t + va, (size_t)vlen);
    buf[vlen] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (k->yesno & (1u << slot)) {
        static const char *const words[] = {"no", "yes", "false", "true",
                                            "off", "on"};
        for (int w = 0; w < 6; w++)
            if (strcmp(buf, words[w]) == 0)
                v = w % 2, end = buf + vlen;
        if (*end)
            return fail(p, va, vlen, "%s: argument '%s' = '%s' is not yes "
                        "or no", k->name, k->arg[slot], buf);
    }
    if (*end || !isfinite(v) || (k->integer && v != floor(v)))
        return fail(p, va, vlen, "%s: argument '%s' = '%s' is not %s",
                    k->name, k->arg[slot], buf,
                    k->integer ? "an integer" : "a number");
    if (v < k->min[slot] || v > k->max[slot])
        return fail(p, va, vlen, "%s: argument '%s' = %.10g is out of range "
                    "[%.10g, %.10g]", k->name, k->arg[slot], v, k->min[slot],
                    k->max[slot]);
    vals[slot] = v;
    given[slot] = 1;
    return DT_OK;
}

/* A layer as written: its kind, arguments (defaults filled in), token
 * [start, end) and, for a stage, the block type's word [wa, wb). */
typedef struct parsed {
    const layer_kind_t *k;
    double vals[DT_LAYER_MAXARGS];
    int start, end, wa, wb;
} parsed_t;

static void known_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < NKINDS; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "",
                 kinds[i].name);
}

/* "name" or "name(args)" starting at *pos. */
static dt_status_t parse_layer(parser_t *p, int *pos, parsed_t *out)
{
    const char *t = p->text;
    int start = *pos, i = *pos;
    while (!ends_layer_word(t[i]))
        i++;
    if (i == start)
        return fail(p, start, 1, "expected a layer name, found '%c'",
                    t[start]);
    const layer_kind_t *k = find_kind(t + start, (size_t)(i - start));
    if (!k) {
        char known[200];
        known_names(known, sizeof known);
        int n = i - start;
        /* the loss is softmax cross-entropy: the model ends in logits */
        int softmax = (n == 7 && !strncasecmp(t + start, "softmax", 7)) ||
                      (n == 10 && !strncasecmp(t + start, "logsoftmax", 10));
        return fail(p, start, n, "unknown layer '%.*s' (known: %s)%s", n,
                    t + start, known,
                    softmax ? "; the loss applies the softmax itself: end "
                              "the model in linear(classes)" : "");
    }
    double vals[DT_LAYER_MAXARGS];
    int given[DT_LAYER_MAXARGS] = {0};
    int wa = -1, wb = -1;
    int j = i;
    while (t[j] == ' ' || t[j] == '\t')
        j++;
    if (t[j] == '(') {
        int close = j + 1;
        while (t[close] && t[close] != ')' && t[close] != '(')
            close++;
        if (t[close] != ')')
            return fail(p, start, close - start, "'%.*s(' is missing its ')'",
                        i - start, t + start);
        int a = j + 1, position = 0;
        /* a stage's first argument: the block type, a word */
        int word = k->ops == NULL;
        while (a <= close) {
            int b = a;
            while (b < close && t[b] != ',')
                b++;
            int ta = a, tb = b;
            while (ta < tb && isspace((unsigned char)t[ta]))
                ta++;
            while (tb > ta && isspace((unsigned char)t[tb - 1]))
                tb--;
            if (word && position == 0) {
                int w = ta;
                while (w < tb && is_name_char(t[w]))
                    w++;
                if (ta == tb || w != tb || isdigit((unsigned char)t[ta]))
                    return fail(p, ta < close ? ta : close,
                                tb > ta ? tb - ta : 1,
                                "%s: the first argument is the block type "
                                "(basic), as in %s", k->name, k->usage);
                wa = ta, wb = tb;
            } else if (ta == tb) {
                if (!(position == 0 && b == close)) /* "relu()" is fine */
                    return fail(p, ta < close ? ta : close, 1,
                                "%s: empty argument", k->name);
            } else {
                DT_CHECK(parse_arg(p, k, ta, tb, position - word, vals,
                                   given));
            }
            position++;
            a = b + 1;
        }
        i = close + 1;
    }
    if (k->ops == NULL && wa < 0)
        return fail(p, start, i - start, "%s needs its arguments: %s",
                    k->name, k->usage);
    for (int s = 0; s < k->nargs; s++) {
        if (given[s])
            continue;
        if (isnan(k->def[s]))
            return fail(p, start, i - start, "%s needs argument '%s' (%s)",
                        k->name, k->arg[s], k->usage);
        vals[s] = k->def[s] == SAME_AS_FIRST ? vals[0] : k->def[s];
    }
    memset(out, 0, sizeof *out);
    out->k = k;
    memcpy(out->vals, vals, sizeof vals);
    out->start = start;
    out->end = i;
    out->wa = wa, out->wb = wb;
    *pos = i;
    return DT_OK;
}

/* Shape of acts[j]: the input, or layer j-1's output. */
static void act_shape(const dt_model_t *m, int j, int *c, int *h, int *w,
                      int *flat)
{
    if (j == 0) {
        *c = m->in_c, *h = m->in_h, *w = m->in_w, *flat = 0;
        return;
    }
    const dt_layer_t *l = &m->layers[j - 1];
    *c = l->out_c, *h = l->out_h, *w = l->out_w, *flat = l->out_flat;
}

/* What a layer's messages call it: "layer 7 'conv(32,3,pad=1)'", plus
 * where a stage put it. */
static void layer_name(const dt_layer_t *l, char *buf, size_t len)
{
    int n = snprintf(buf, len, "layer %d '%s'", l->index, l->desc);
    if (l->stage && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " (stage %d, block %d%s)",
                 l->stage, l->block, l->shortcut ? ", shortcut" : "");
}

/* Append a layer reading acts[src] (and acts[skip] for add), set it up
 * for that input's shape and lay out its parameters and buffers. col/len:
 * the token to point at when it does not fit. */
static dt_status_t append(parser_t *p, dt_model_t *m, int *cap,
                          const dt_layer_ops_t *ops, const double *args,
                          const char *desc, int src, int skip, int col,
                          int len, int stage, int block, int shortcut)
{
    if (m->nlayers == DT_MODEL_MAX_LAYERS)
        return fail(p, col, len, "the model would have more than %d layers "
                    "(a stage's blocks counted as their layers, 7 or 9 "
                    "each): fewer layers or fewer blocks per stage",
                    DT_MODEL_MAX_LAYERS);
    if (m->nlayers == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        dt_layer_t *nl = realloc(m->layers, (size_t)*cap * sizeof *nl);
        if (!nl)
            return DT_ERR_NOMEM;
        m->layers = nl;
    }
    dt_layer_t *l = &m->layers[m->nlayers];
    memset(l, 0, sizeof *l);
    l->ops = ops;
    if (args)
        memcpy(l->args, args, sizeof l->args);
    snprintf(l->desc, sizeof l->desc, "%s", desc);
    l->index = m->nlayers;
    l->src = src, l->skip = skip;
    l->col = col, l->len = len;
    l->stage = stage, l->block = block, l->shortcut = shortcut;
    act_shape(m, src, &l->in_c, &l->in_h, &l->in_w, &l->in_flat);
    char why[200] = "", name[160];
    layer_name(l, name, sizeof name);
    if (skip >= 0) {
        int c, h, w, flat;
        act_shape(m, skip, &c, &h, &w, &flat);
        if (c != l->in_c || h != l->in_h || w != l->in_w)
            return fail(p, col, len, "%s: the residual sum's inputs differ: "
                        "%dx%dx%d and %dx%dx%d", name, l->in_c, l->in_h,
                        l->in_w, c, h, w);
    }
    if (l->ops->setup(l, why, sizeof why) != DT_OK)
        return fail(p, col, len, "%s: %s", name, why);
    /* sizes are ints per sample: refuse what would overflow them */
    long long values = (long long)l->out_c * l->out_h * l->out_w;
    if (values > INT_MAX)
        return fail(p, col, len, "%s: %dx%dx%d = %lld values per sample, "
                    "more than dt's layers take (2^31 - 1): fewer channels "
                    "or a smaller input", name, l->out_c, l->out_h, l->out_w,
                    values);
    l->param_offset = m->nparams;
    m->nparams += l->nweights + l->nbias;
    l->buffer_offset = m->nbuffers;
    m->nbuffers += l->nbuffers;
    m->nlayers++;
    return DT_OK;
}

/* The layer as written, without blanks, as its description. */
static void token_desc(const char *t, int a, int b, char *desc, size_t len)
{
    size_t n = 0;
    for (int i = a; i < b && n + 1 < len; i++)
        if (!isspace((unsigned char)t[i]))
            desc[n++] = t[i];
    desc[n] = '\0';
}

/* stage(basic, C, n, stride=s): n basic blocks (He et al. 2016)
 *   conv(C,3,stride,pad=1,bias=no) batchnorm relu conv(C,3,pad=1,bias=no)
 *   batchnorm, + shortcut, relu
 * the shortcut being the block's input, or where the first block changes
 * the channels or the size, conv(C,1,stride,bias=no) batchnorm of it. */
static dt_status_t expand_stage(parser_t *p, dt_model_t *m, int *cap,
                                const parsed_t *ps, int stage)
{
    const char *t = p->text;
    int col = ps->start, len = ps->end - ps->start;
    if (ps->wb - ps->wa != 5 || strncmp(t + ps->wa, "basic", 5) != 0)
        return fail(p, ps->wa, ps->wb - ps->wa, "stage: unknown block type "
                    "'%.*s' (known: basic)", ps->wb - ps->wa, t + ps->wa);
    int C = (int)ps->vals[0], n = (int)ps->vals[1], stride = (int)ps->vals[2];
    int c, h, w, flat;
    act_shape(m, m->nlayers, &c, &h, &w, &flat);
    if (flat)
        return fail(p, col, len, "stage %d: a residual stage needs an image "
                    "input (channels x height x width) but gets a flat "
                    "vector of %d: move it before flatten", stage, c);
    const double bn[DT_LAYER_MAXARGS] = {0.1, 1e-5};
    for (int b = 1; b <= n; b++) {
        int s = b == 1 ? stride : 1, in = m->nlayers;
        act_shape(m, in, &c, &h, &w, &flat);
        double c1[DT_LAYER_MAXARGS] = {C, 3, s, 1, 0},
               c2[DT_LAYER_MAXARGS] = {C, 3, 1, 1, 0},
               pr[DT_LAYER_MAXARGS] = {C, 1, s, 0, 0};
        char d1[64], d2[64], dp[64];
        if (s > 1) {
            snprintf(d1, sizeof d1, "conv(%d,3,stride=%d,pad=1,bias=no)", C,
                     s);
            snprintf(dp, sizeof dp, "conv(%d,1,stride=%d,bias=no)", C, s);
        } else {
            snprintf(d1, sizeof d1, "conv(%d,3,pad=1,bias=no)", C);
            snprintf(dp, sizeof dp, "conv(%d,1,bias=no)", C);
        }
        snprintf(d2, sizeof d2, "conv(%d,3,pad=1,bias=no)", C);
        DT_CHECK(append(p, m, cap, &dt_layer_conv2d, c1, d1, in, -1, col,
                        len, stage, b, 0));
        DT_CHECK(append(p, m, cap, &dt_layer_batchnorm, bn, "batchnorm",
                        m->nlayers, -1, col, len, stage, b, 0));
        DT_CHECK(append(p, m, cap, &dt_layer_relu, NULL, "relu", m->nlayers,
                        -1, col, len, stage, b, 0));
        DT_CHECK(append(p, m, cap, &dt_layer_conv2d, c2, d2, m->nlayers, -1,
                        col, len, stage, b, 0));
        DT_CHECK(append(p, m, cap, &dt_layer_batchnorm, bn, "batchnorm",
                        m->nlayers, -1, col, len, stage, b, 0));
        int main_end = m->nlayers;
        const dt_layer_t *last = &m->layers[main_end - 1];
        if (last->out_c != c || last->out_h != h || last->out_w != w) {
            DT_CHECK(append(p, m, cap, &dt_layer_conv2d, pr, dp, in, -1, col,
                            len, stage, b, 1));
            DT_CHECK(append(p, m, cap, &dt_layer_batchnorm, bn, "batchnorm",
                            m->nlayers, -1, col, len, stage, b, 1));
            DT_CHECK(append(p, m, cap, &dt_layer_add, NULL, "add", m->nlayers,
                            main_end, col, len, stage, b, 0));
        } else {
            DT_CHECK(append(p, m, cap, &dt_layer_add, NULL, "add", main_end,
                            in, col, len, stage, b, 0));
        }
        DT_CHECK(append(p, m, cap, &dt_layer_relu, NULL, "relu", m->nlayers,
                        -1, col, len, stage, b, 0));
    }
    return DT_OK;
}

static dt_status_t parse_all(parser_t *p, dt_model_t *m)
{
    const char *t = p->text;
    int pos = 0, cap = 0, stages = 0;
    for (;;) {
        while (isspace((unsigned char)t[pos]) || t[pos] == ',')
            pos++;
        if (!t[pos])
            break;
        parsed_t ps;
        DT_CHECK(parse_layer(p, &pos, &ps));
        if (ps.k->ops) {
            char desc[64];
            token_desc(t, ps.start, ps.end, desc, sizeof desc);
            DT_CHECK(append(p, m, &cap, ps.k->ops, ps.vals, desc, m->nlayers,
                            -1, ps.start, ps.end - ps.start, 0, 0, 0));
        } else {
            DT_CHECK(expand_stage(p, m, &cap, &ps, ++stages));
        }
        if (t[pos] && !isspace((unsigned char)t[pos]) && t[pos] != ',') {
            int bytes = dt_utf8_char_bytes(t + pos); /* "é", not its byte */
            return fail(p, pos, bytes, "expected a space between layers, "
                        "found '%.*s'", bytes, t + pos);
        }
    }
    if (m->nlayers == 0)
        return fail(p, 0, 1, "no layers: write e.g. 'flatten linear(128) "
                    "relu linear(10)'");
    dt_layer_t *last = &m->layers[m->nlayers - 1];
    int c = last->out_c, h = last->out_h, w = last->out_w;
    if (!last->out_flat || c != m->nclasses)
        return fail(p, last->col, last->len,
                    "the model must end in linear(%d), one output per class, "
                    "but its last layer gives %s%d value%s%s", m->nclasses,
                    last->out_flat ? "" : "an image of ", c * h * w,
                    c * h * w == 1 ? "" : "s",
                    last->out_flat ? "" : " (an image goes to linear through "
                                          "flatten, e.g. gap flatten "
                                          "linear(classes))");
    return DT_OK;
}

dt_status_t dt_model_parse(const char *layers, const char *origin, int in_c,
                           int in_h, int in_w, int nclasses,
                           dt_model_t **out, dt_model_error_t *err)
{
    *out = NULL;
    if (err)
        memset(err, 0, sizeof *err);
    parser_t p = {layers ? layers : "", origin, err};
    if (in_c < 1 || in_h < 1 || in_w < 1 || nclasses < 2) {
        dt_error("model input %dx%dx%d with %d classes: every size must be "
                 "positive and there must be at least 2 classes", in_c, in_h,
                 in_w, nclasses);
        return DT_ERR_INVALID;
    }
    /* the layers' per-sample sizes are ints (checked after each layer;
     * the input itself must fit before the first one computes from it) */
    long long in = (long long)in_c * in_h * in_w;
    if (in > INT_MAX) {
        dt_error("model input %dx%dx%d = %lld values per sample, more than "
                 "dt's layers take (2^31 - 1): a smaller input", in_c, in_h,
                 in_w, in);
        return DT_ERR_INVALID;
    }
    dt_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return DT_ERR_NOMEM;
    m->in_c = in_c, m->in_h = in_h, m->in_w = in_w, m->nclasses = nclasses;
    m->loss_scale = 1.0f;
    dt_status_t st = parse_all(&p, m);
    if (st != DT_OK) {
        dt_model_free(m);
        return st;
    }
    *out = m;
    return DT_OK;
}
