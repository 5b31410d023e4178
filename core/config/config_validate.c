/* config_validate.c — every value against its section's schema: unknown
 * sections and keys, wrong types. Each problem is logged with its origin
 * (file:line, variable or option) and what would be valid. It builds on
 * the store (config.c, through config_internal.h); the store needs nothing
 * from here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "config_internal.h"

/* "cluster, train, ..." (malloc'd): sections that have a schema. */
static char *known_sections(const dt_config_t *cfg)
{
    size_t len = 1;
    for (size_t i = 0; i < cfg->n; i++)
        len += strlen(cfg->sections[i]->name) + 2;
    char *s = calloc(1, len);
    for (size_t i = 0; s && i < cfg->n; i++) {
        if (!cfg->sections[i]->schema)
            continue;
        if (*s)
            strcat(s, ", ");
        strcat(s, cfg->sections[i]->name);
    }
    return s;
}

static int check_section(dt_config_t *cfg, cfg_section_t *sec,
                         dt_schema_lookup_fn lookup, void *arg)
{
    char where[512], pk[CFG_PRINTABLE_MAX], ps[CFG_PRINTABLE_MAX];
    int problems = 0;
    if (!sec->schema && sec->n && !*sec->name) {
        for (size_t j = 0; j < sec->n; j++)
            dt_error("%s: '%s' is not under any [section]; put it under "
                     "the section it belongs to, e.g. [cluster]",
                     cfg_origin_text(&sec->entries[j], where, sizeof where),
                     dt_config_printable(sec->entries[j].key, pk, sizeof pk));
        return (int)sec->n;
    }
    if (!sec->schema && lookup) {
        const dt_key_spec_t *keys = lookup(sec->name, arg);
        /* Registering may move nothing but this section's entries. */
        if (keys && dt_config_add_schema(cfg, sec->name, keys) != DT_OK)
            return 1;
    }
    if (!sec->schema) {
        char *known = known_sections(cfg);
        dt_error("%s: unknown section [%s]; known sections: %s (plugin "
                 "sections are [<kind>.<name>] of an installed plugin, see "
                 "`dtctl plugins`)",
                 sec->n ? cfg_origin_text(&sec->entries[0], where,
                                          sizeof where)
                        : "configuration",
                 dt_config_printable(sec->name, ps, sizeof ps), known ? known : "?");
        free(known);
        return 1;
    }
    for (size_t j = 0; j < sec->n; j++) {
        const cfg_entry_t *e = &sec->entries[j];
        const dt_key_spec_t *spec = cfg_find_spec(sec->schema, e->key);
        if (!spec) {
            char *names = cfg_key_names(sec->schema);
            dt_error("%s: unknown key '%s' in [%s]; valid keys: %s",
                     cfg_origin_text(e, where, sizeof where),
                     dt_config_printable(e->key, pk, sizeof pk),
                     dt_config_printable(sec->name, ps, sizeof ps),
                     names ? names : "?");
            free(names);
            problems++;
        } else if (cfg_check_type(sec->name, e, spec->type) != DT_OK) {
            problems++;
        }
    }
    return problems;
}

dt_status_t dt_config_validate(dt_config_t *cfg, dt_schema_lookup_fn lookup,
                               void *arg)
{
    if (!cfg)
        return DT_ERR_INVALID;
    /* Problems found while loading count too: the summary's number is the
     * number of errors printed above it. */
    int problems = cfg->load_problems;
    /* Index loop: a lookup may register schemas but never adds sections. */
    for (size_t i = 0; i < cfg->n; i++)
        problems += check_section(cfg, cfg->sections[i], lookup, arg);
    if (problems) {
        dt_error("%d configuration problem%s found; fix %s and run again "
                 "(`dtctl config` shows every value and where it comes from)",
                 problems, problems == 1 ? "" : "s",
                 problems == 1 ? "it" : "them");
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}
