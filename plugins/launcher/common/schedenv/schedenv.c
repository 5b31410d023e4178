/* schedenv.c — see schedenv.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/env.h>
#include "schedenv.h"

/* Return the status of a failed step (identify does not log). */
#define TRY(expr)                                                             \
    do {                                                                      \
        dt_status_t try_st_ = (expr);                                         \
        if (try_st_ != DT_OK)                                                 \
            return try_st_;                                                   \
    } while (0)

/* ---- C: identify ---------------------------------------------------------- */

typedef struct got {
    const char *name, *value; /* both NULL: none of the names is set */
} got_t;

/* envp as identify gets it (char *const *, like environ). */
static const char *env_get(char *const *envp, const char *name)
{
    return dt_env_value((const char *const *)envp, name);
}

/* The first of names that is set and not empty. */
static got_t lookup(char *const *envp, schedenv_names_t names)
{
    for (size_t i = 0; names && names[i]; i++) {
        const char *v = env_get(envp, names[i]);
        if (v && *v)
            return (got_t){names[i], v};
    }
    return (got_t){NULL, NULL};
}

/* g's value as a worker number (0 .. 2^24). */
static dt_status_t number(got_t g, int *out, char *why, size_t why_len)
{
    char *end;
    errno = 0;
    long x = strtol(g.value, &end, 10);
    if (errno || end == g.value || *end || x < 0 || x > 1 << 24) {
        snprintf(why, why_len, "%s='%s' is not a worker number", g.name,
                 g.value);
        return DT_ERR_CONFIG;
    }
    *out = (int)x;
    return DT_OK;
}

/* Read an optional field: unset leaves *out as it is. */
static dt_status_t optional(char *const *envp, schedenv_names_t names,
                            got_t *g, int *out, char *why, size_t why_len)
{
    *g = lookup(envp, names);
    return g->name ? number(*g, out, why, why_len) : DT_OK;
}

int schedenv_tasks_on_node(const char *spec, int node)
{
    const char *p = spec;
    if (node < 0)
        return -1;
    while (p && *p) {
        char *end;
        long tasks = strtol(p, &end, 10), reps = 1;
        if (end == p || tasks < 1 || tasks > 1 << 24)
            return -1;
        if (strncmp(end, "(x", 2) == 0) {
            reps = strtol(end + 2, &end, 10);
            if (reps < 1 || *end != ')')
                return -1;
            end++;
        }
        if (*end != ',' && *end)
            return -1;
        if (node < reps)
            return (int)tasks;
        node -= (int)reps;
        p = *end == ',' ? end + 1 : NULL;
    }
    return -1;
}

/* "A=1, B=2" for the variables that were read, for messages. */
static void describe(char *s, size_t len, const got_t *g, size_t n)
{
    size_t at = 0;
    s[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++) {
        if (!g[i].name)
            continue;
        int w = snprintf(s + at, len - at, "%s%s=%s", at ? ", " : "",
                         g[i].name, g[i].value);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

dt_status_t schedenv_identify(const schedenv_t *v, char *const *envp,
                              dt_worker_identity_t *out, char *why,
                              size_t why_len)
{
    enum { RANK, SIZE, LRANK, LSIZE, TPN, NODE, NODES, N };
    got_t g[N] = {{0}};
    dt_worker_identity_t id = *out;
    id.local_rank = 0;
    id.local_size = 1;
    id.node_rank = id.num_nodes = -1;
    id.precedence = v->precedence;
    snprintf(id.source, sizeof id.source, "%s", v->source);

    g[RANK] = lookup(envp, v->rank);
    if (!g[RANK].name)
        return DT_ERR_NOT_FOUND;
    TRY(number(g[RANK], &id.rank, why, why_len));
    g[SIZE] = lookup(envp, v->size);
    if (!g[SIZE].name) {
        char names[256] = "";
        for (size_t i = 0; v->size && v->size[i]; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s", i ? " or " : "", v->size[i]);
        snprintf(why, why_len,
                 "%s is set but not %s: an incomplete %s environment; start "
                 "the workers with dtctl run",
                 g[RANK].name, names[0] ? names : "the job's size", v->source);
        return DT_ERR_CONFIG;
    }
    TRY(number(g[SIZE], &id.size, why, why_len));
    TRY(optional(envp, v->local_rank, &g[LRANK], &id.local_rank, why,
                      why_len));
    TRY(optional(envp, v->node_rank, &g[NODE], &id.node_rank, why,
                      why_len));
    TRY(optional(envp, v->num_nodes, &g[NODES], &id.num_nodes, why,
                      why_len));
    TRY(optional(envp, v->local_size, &g[LSIZE], &id.local_size, why,
                      why_len));
    if (!g[LSIZE].name && (g[TPN] = lookup(envp, v->tasks_per_node)).name) {
        int node = id.node_rank >= 0 ? id.node_rank : 0;
        id.local_size = schedenv_tasks_on_node(g[TPN].value, node);
        if (id.local_size < 1) {
            snprintf(why, why_len, "%s='%s' has no entry for node %d (%s)",
                     g[TPN].name, g[TPN].value, node,
                     g[NODE].name ? g[NODE].name : "the first node");
            return DT_ERR_CONFIG;
        }
    }
    if (id.size < 1 || id.rank >= id.size || id.local_size < 1 ||
        id.local_rank >= id.local_size || id.local_size > id.size ||
        (id.num_nodes >= 0 && id.node_rank >= id.num_nodes)) {
        char vars[512];
        describe(vars, sizeof vars, g, N);
        snprintf(why, why_len,
                 "inconsistent worker numbers from %s (%s): rank %d of %d, "
                 "local rank %d of %d",
                 v->source, vars, id.rank, id.size, id.local_rank,
                 id.local_size);
        return DT_ERR_CONFIG;
    }
    *out = id;
    return DT_OK;
}

/* ---- sh: the prologue's identity part ---------------------------------- */

static int valid_names(schedenv_names_t names)
{
    for (size_t i = 0; names && names[i]; i++) {
        if (!*names[i])
            return 0;
        for (const char *c = names[i]; *c; c++)
            if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                  (*c >= '0' && *c <= '9') || *c == '_'))
                return 0;
    }
    return 1;
}

/* ${A:-${B:-dflt}} */
static void expr(FILE *f, schedenv_names_t names, const char *dflt)
{
    size_t n = 0;
    for (; names && names[n]; n++)
        fprintf(f, "${%s:-", names[n]);
    fputs(dflt, f);
    for (size_t i = 0; i < n; i++)
        fputc('}', f);
}

static void assign(FILE *f, const char *var, schedenv_names_t names,
                   const char *dflt)
{
    fprintf(f, "%s=", var);
    expr(f, names, dflt);
    fputc('\n', f);
}

dt_status_t schedenv_prologue(const schedenv_t *v, const char *extra,
                              char **out)
{
    const schedenv_names_t all[] = {v->rank,           v->size,
                                    v->local_rank,     v->local_size,
                                    v->tasks_per_node, v->node_rank,
                                    v->num_nodes,      v->host};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!valid_names(all[i]))
            return DT_ERR_INVALID;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return DT_ERR_NOMEM;
    fprintf(f, "# who this rank is, from %s's variables\n", v->source);
    assign(f, "DT_RANK", v->rank, "");
    assign(f, "DT_WORLD_SIZE", v->size, "$DT_WORLD_SIZE");
    assign(f, "DT_LOCAL_RANK", v->local_rank, "0");
    assign(f, "DT_LOCAL_SIZE", v->local_size, "");
    if (v->tasks_per_node) {
        /* tasks on our node from "2(x3),1" */
        fputs("if [ -z \"$DT_LOCAL_SIZE\" ]; then k=", f);
        expr(f, v->node_rank, "0");
        fputs("; IFS=,\n  for e in ", f);
        expr(f, v->tasks_per_node, "");
        fputs("; do\n"
              "    c=${e%%(*}; r=1; case $e in *x*) r=${e#*x}; r=${r%)};; "
              "esac\n"
              "    [ -z \"$DT_LOCAL_SIZE\" ] && [ \"$k\" -lt \"$r\" ] && "
              "DT_LOCAL_SIZE=$c\n"
              "    k=$((k-r)); done; unset IFS; fi\n",
              f);
    }
    fputs("DT_LOCAL_SIZE=${DT_LOCAL_SIZE:-1}\n", f);
    if (v->node_rank)
        assign(f, "DT_NODE_RANK", v->node_rank, "");
    if (v->num_nodes)
        assign(f, "DT_NUM_NODES", v->num_nodes, "$DT_NUM_NODES");
    assign(f, "DT_HOST", v->host, "$(hostname)");
    if (extra)
        fputs(extra, f);
    fputs("export DT_RANK RANK=$DT_RANK ROLE_RANK=$DT_RANK DT_LOCAL_RANK "
          "LOCAL_RANK=$DT_LOCAL_RANK DT_LOCAL_SIZE "
          "LOCAL_WORLD_SIZE=$DT_LOCAL_SIZE DT_HOST\n"
          "[ -z \"$DT_WORLD_SIZE\" ] || export DT_WORLD_SIZE "
          "WORLD_SIZE=$DT_WORLD_SIZE\n"
          "[ -z \"$DT_NODE_RANK\" ] || export DT_NODE_RANK "
          "GROUP_RANK=$DT_NODE_RANK\n"
          "[ -z \"$DT_NUM_NODES\" ] || export DT_NUM_NODES "
          "GROUP_WORLD_SIZE=$DT_NUM_NODES\n"
          "unset k e c r\n",
          f);
    if (fclose(f) != 0) {
        free(buf);
        return DT_ERR_NOMEM;
    }
    *out = buf;
    return DT_OK;
}
