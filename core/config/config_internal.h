/* config_internal.h — the layered store behind dt/config.h. Owned by
 * config.c, which defines everything declared here; config_load.c (files,
 * environment) and config_validate.c (schemas) build on it, so the
 * dependency runs one way. Not installed. */
#ifndef DT_CONFIG_INTERNAL_H
#define DT_CONFIG_INTERNAL_H

#include <dt/config.h>

/* One value: the one from the highest source seen so far. */
typedef struct cfg_entry {
    char *key;
    char *value;
    char *where; /* "file:line", "DT_CLUSTER_NP", "--set", "default" */
    dt_config_source_t src;
} cfg_entry_t;

typedef struct cfg_section {
    char *name;
    const dt_key_spec_t *schema; /* NULL until registered or looked up */
    cfg_entry_t *entries;
    size_t n, cap;
} cfg_section_t;

struct dt_config {
    cfg_section_t **sections; /* registration/appearance order */
    size_t n, cap;
    /* Problems found while loading (unparsable or too long lines, bad
     * --set), already logged: dt_config_validate counts them in its
     * summary, so the count matches the errors printed above it. */
    int load_problems;
};

cfg_section_t *cfg_find_section(const dt_config_t *cfg, const char *name);
cfg_entry_t *cfg_find_entry(const cfg_section_t *sec, const char *key);
const dt_key_spec_t *cfg_find_spec(const dt_key_spec_t *schema,
                                   const char *key);
/* Text from a file, the environment or the command line made safe to
 * echo to a terminal: control bytes, DEL, C1 controls and bytes that are
 * not UTF-8 become \xNN (so an escape sequence in a file is shown, not
 * run). Written into buf (truncated with "..." when it does not fit);
 * returns buf. */
#define CFG_PRINTABLE_MAX 1024
const char *dt_config_printable(const char *s, char *buf, size_t len);
/* "file:line", "environment variable DT_X", "option --set", ...: the prefix
 * of a message about this entry, written into buf. */
const char *cfg_origin_text(const cfg_entry_t *e, char *buf, size_t len);
/* Does value parse as type? DT_OK; DT_ERR_INVALID when it does not (or
 * type is no dt_key_type_t); DT_ERR_NOMEM. Logs nothing. */
dt_status_t cfg_value_parses(const char *value, dt_key_type_t type);
/* What a value that does not parse as type is: "is not an integer"... */
const char *cfg_type_expectation(dt_key_type_t type);
/* Check one value against its type; on error log the full message and
 * return DT_ERR_CONFIG. */
dt_status_t cfg_check_type(const char *section, const cfg_entry_t *e,
                           dt_key_type_t type);
/* "a, b, c" (malloc'd): the keys of a schema. */
char *cfg_key_names(const dt_key_spec_t *schema);

#endif /* DT_CONFIG_INTERNAL_H */
