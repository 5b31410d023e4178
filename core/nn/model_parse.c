/* model_parse.c — layer strings such as
 *   "conv(32,3,pad=1) relu maxpool(2) flatten linear(10)"
 * into a model: layers, shapes and parameter layout. Errors point at the
 * offending token with a caret line under the string. */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "model.h"

/* One kind of layer and its arguments: positional in this order, or by
 * name; `def` NAN means required, SAME_AS_FIRST takes argument 0. */
#define SAME_AS_FIRST (-1.0)
typedef struct layer_kind {
    const char *name, *alias;
    const dt_layer_ops_t *ops;
    int nargs;
    const char *arg[DT_LAYER_MAXARGS];
    double def[DT_LAYER_MAXARGS];
    double min[DT_LAYER_MAXARGS], max[DT_LAYER_MAXARGS];
    int integer;
} layer_kind_t;

static const layer_kind_t kinds[] = {
    {"linear", NULL, &dt_layer_linear, 1, {"out"}, {NAN}, {1}, {1 << 24}, 1},
    {"conv", "conv2d", &dt_layer_conv2d, 4, {"out", "k", "stride", "pad"},
     {NAN, NAN, 1, 0}, {1, 1, 1, 0}, {1 << 16, 64, 64, 64}, 1},
    {"maxpool", "maxpool2d", &dt_layer_maxpool2d, 2, {"k", "stride"},
     {NAN, SAME_AS_FIRST}, {1, 1}, {64, 64}, 1},
    {"relu", NULL, &dt_layer_relu, 0, {NULL}, {0}, {0}, {0}, 1},
    {"flatten", NULL, &dt_layer_flatten, 0, {NULL}, {0}, {0}, {0}, 1},
    {"dropout", NULL, &dt_layer_dropout, 1, {"p"}, {0.5}, {0}, {0.99}, 0},
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
     * aligned), then the caret line; both carry the same log prefix. */
    size_t n = strlen(p->text);
    char *line = malloc(n + 1), *mark = malloc((size_t)col + (size_t)len + 1);
    if (line && mark) {
        for (size_t i = 0; i <= n; i++)
            line[i] = isspace((unsigned char)p->text[i]) ? ' ' : p->text[i];
        memset(mark, ' ', (size_t)col);
        mark[col] = '^';
        memset(mark + col + 1, '~', (size_t)len - 1);
        mark[col + len] = '\0';
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
    if (*end || !isfinite(v) || (k->integer && v != floor(v)))
        return fail(p, va, vlen, "%s: argument '%s' = '%s' is not %s",
                    k->name, k->arg[slot], buf,
                    k->integer ? "an integer" : "a number");
    if (v < k->min[slot] || v > k->max[slot])
        return fail(p, va, vlen, "%s: argument '%s' = %g is out of range "
                    "[%g, %g]", k->name, k->arg[slot], v, k->min[slot],
                    k->max[slot]);
    vals[slot] = v;
    given[slot] = 1;
    return DT_OK;
}

/* "name" or "name(args)" starting at *pos; fills l. */
static dt_status_t parse_layer(parser_t *p, int *pos, dt_layer_t *l)
{
    const char *t = p->text;
    int start = *pos, i = *pos;
    while (is_name_char(t[i]))
        i++;
    if (i == start)
        return fail(p, start, 1, "expected a layer name, found '%c'",
                    t[start]);
    const layer_kind_t *k = find_kind(t + start, (size_t)(i - start));
    if (!k)
        return fail(p, start, i - start, "unknown layer '%.*s' (known: "
                    "linear, conv, maxpool, relu, flatten, dropout)",
                    i - start, t + start);
    double vals[DT_LAYER_MAXARGS];
    int given[DT_LAYER_MAXARGS] = {0};
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
        while (a <= close) {
            int b = a;
            while (b < close && t[b] != ',')
                b++;
            int ta = a, tb = b;
            while (ta < tb && isspace((unsigned char)t[ta]))
                ta++;
            while (tb > ta && isspace((unsigned char)t[tb - 1]))
                tb--;
            if (ta == tb) {
                if (!(position == 0 && b == close)) /* "relu()" is fine */
                    return fail(p, ta < close ? ta : close, 1,
                                "%s: empty argument", k->name);
            } else {
                DT_CHECK(parse_arg(p, k, ta, tb, position, vals, given));
            }
            position++;
            a = b + 1;
        }
        i = close + 1;
    }
    for (int s = 0; s < k->nargs; s++) {
        if (given[s])
            continue;
        if (isnan(k->def[s]))
            return fail(p, start, i - start, "%s needs argument '%s' (%s)",
                        k->name, k->arg[s],
                        k == &kinds[0] ? "linear(out)"
                        : k == &kinds[1] ? "conv(out, k, stride=1, pad=0)"
                                         : "maxpool(k, stride=k)");
        vals[s] = k->def[s] == SAME_AS_FIRST ? vals[0] : k->def[s];
    }
    memset(l, 0, sizeof *l);
    l->ops = k->ops;
    memcpy(l->args, vals, sizeof vals);
    l->col = start;
    l->len = i - start;
    *pos = i;
    return DT_OK;
}

static dt_status_t parse_all(parser_t *p, dt_model_t *m)
{
    const char *t = p->text;
    int pos = 0, cap = 0;
    for (;;) {
        while (isspace((unsigned char)t[pos]) || t[pos] == ',')
            pos++;
        if (!t[pos])
            break;
        if (m->nlayers == cap) {
            cap = cap ? 2 * cap : 8;
            dt_layer_t *nl = realloc(m->layers, (size_t)cap * sizeof *nl);
            if (!nl)
                return DT_ERR_NOMEM;
            m->layers = nl;
        }
        DT_CHECK(parse_layer(p, &pos, &m->layers[m->nlayers]));
        m->nlayers++;
        if (t[pos] && !isspace((unsigned char)t[pos]) && t[pos] != ',')
            return fail(p, pos, 1, "expected a space between layers, found "
                        "'%c'", t[pos]);
    }
    if (m->nlayers == 0)
        return fail(p, 0, 1, "no layers: write e.g. 'flatten linear(128) "
                    "relu linear(10)'");
    return DT_OK;
}

/* Shapes through the network, and the parameter layout. */
static dt_status_t infer_shapes(parser_t *p, dt_model_t *m)
{
    int c = m->in_c, h = m->in_h, w = m->in_w, flat = 0;
    size_t offset = 0;
    for (int i = 0; i < m->nlayers; i++) {
        dt_layer_t *l = &m->layers[i];
        l->in_c = c, l->in_h = h, l->in_w = w, l->in_flat = flat;
        l->index = i;
        char why[200] = "";
        if (l->ops->setup(l, why, sizeof why) != DT_OK)
            return fail(p, l->col, l->len, "%s", why);
        l->param_offset = offset;
        offset += l->nweights + l->nbias;
        c = l->out_c, h = l->out_h, w = l->out_w, flat = l->out_flat;
    }
    dt_layer_t *last = &m->layers[m->nlayers - 1];
    if (!flat || c != m->nclasses)
        return fail(p, last->col, last->len,
                    "the model must end in linear(%d), one output per class, "
                    "but its last layer gives %s%d value%s", m->nclasses,
                    flat ? "" : "an image of ", c * h * w,
                    c * h * w == 1 ? "" : "s");
    m->nparams = offset;
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
    dt_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return DT_ERR_NOMEM;
    m->in_c = in_c, m->in_h = in_h, m->in_w = in_w, m->nclasses = nclasses;
    dt_status_t st = parse_all(&p, m);
    if (st == DT_OK)
        st = infer_shapes(&p, m);
    if (st != DT_OK) {
        dt_model_free(m);
        return st;
    }
    *out = m;
    return DT_OK;
}
