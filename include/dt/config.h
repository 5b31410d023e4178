/* dt/config.h — layered configuration (libinih underneath).
 *
 * Precedence, highest first: command line (--set, --transport...) >
 * environment (DT_<SECTION>_<KEY>, section dots as underscores, e.g.
 * DT_CLUSTER_TRANSPORT, DT_TRANSPORT_TCP_TIMEOUT) > job file > cluster file >
 * built-in defaults. Loading order does not matter: each value remembers its
 * source and only a higher source replaces it.
 *
 * Every section has a schema: a table of keys (name, type, default, doc).
 * Core sections ([cluster], [train], ...) are registered by libdt; plugin
 * sections ([launcher.NAME], ...) come from the plugin's own key table.
 * dt_config_validate() rejects unknown sections and keys and badly typed
 * values with "file:line: ..." and the list of valid keys.
 *
 * Ownership: strings returned by getters belong to the config and live until
 * dt_config_free(); lists returned by dt_config_get_list() are the caller's
 * (free with dt_strv_free()). */
#ifndef DT_CONFIG_H
#define DT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_config dt_config_t;

typedef enum dt_key_type {
    DT_KEY_STRING = 0,
    DT_KEY_INT,      /* decimal integer, may be negative                  */
    DT_KEY_BOOL,     /* yes/no, true/false, on/off, 1/0                   */
    DT_KEY_SIZE,     /* bytes with optional K/M/G/T suffix (powers of 2)  */
    DT_KEY_DURATION, /* seconds, or with ns/us/ms/s/m (min)/h: 500ms, 5m */
    DT_KEY_LIST,     /* comma- or space-separated strings                 */
    DT_KEY_DOUBLE,   /* a finite decimal number: 0.05, -1, 1e-4 (no nan,
                        inf or hex)                                       */
    DT_KEY_WORDS     /* command-line words: split at blanks only, as sh
                        would with '...', "..." and \ (commas are kept:
                        --mca btl self,tcp), for another program's argv  */
} dt_key_type_t;

/* One key of a section's schema. Tables end with an entry whose name is
 * NULL. default_value is text in the key's own syntax; NULL means unset. */
typedef struct dt_key_spec {
    const char *name;
    dt_key_type_t type;
    const char *default_value;
    const char *doc;
} dt_key_spec_t;

typedef enum dt_config_source {
    DT_SRC_DEFAULT = 0,
    DT_SRC_CLUSTER_FILE = 1,
    DT_SRC_JOB_FILE = 2,
    DT_SRC_ENV = 3,
    DT_SRC_CLI = 4
} dt_config_source_t;

/* A new configuration holding the core schemas and their built-in defaults
 * (launcher local, transport tcp, storage local): usable with no file. */
dt_status_t dt_config_new(dt_config_t **out);
void dt_config_free(dt_config_t *cfg);

/* Register (or replace) the schema of a section; its defaults apply at once.
 * The table must outlive the config (plugins' tables are static). */
dt_status_t dt_config_add_schema(dt_config_t *cfg, const char *section,
                                 const dt_key_spec_t *keys);

/* Parse an ini file as the given source. Syntax errors report file:line. */
dt_status_t dt_config_load_file(dt_config_t *cfg, const char *path,
                                dt_config_source_t src);
/* Read DT_<SECTION>_<KEY> variables for every key of every known schema,
 * and DT_LAUNCHER, DT_TRANSPORT, DT_STORAGE, DT_INTERFACE as short forms of
 * DT_CLUSTER_*. Empty variables count as unset. envp NULL: environ. Safe to
 * call again after more schemas were registered. */
dt_status_t dt_config_load_env(dt_config_t *cfg, char *const *envp);
/* The variable that sets [section] key: DT_<SECTION>_<KEY>, upper case,
 * '.' and '-' as '_' ([transport.my-net] timeout: DT_TRANSPORT_MY_NET_
 * TIMEOUT); key NULL: the section's prefix, DT_<SECTION>. */
void dt_config_env_name(const char *section, const char *key, char *out,
                        size_t len);
/* Warn (never fail) about DT_<SECTION>_<X> variables that name no key of a
 * registered section: most likely a typo. Call once every schema is in. */
void dt_config_check_env(const dt_config_t *cfg, char *const *envp);
/* Set one value; `where` names the origin for messages ("--set", ...). */
dt_status_t dt_config_set(dt_config_t *cfg, const char *section,
                          const char *key, const char *value,
                          dt_config_source_t src, const char *where);
/* Parse "section.key=value" (the --set syntax; section may contain dots:
 * the key is the part after the last dot before '='). */
dt_status_t dt_config_set_assignment(dt_config_t *cfg, const char *assignment,
                                     dt_config_source_t src);

/* Called for a section with no registered schema (e.g. "launcher.ssh"):
 * return its key table, or NULL when the section is unknown. */
typedef const dt_key_spec_t *(*dt_schema_lookup_fn)(const char *section,
                                                    void *arg);
/* Check every value: unknown section/key, wrong type. Logs each problem with
 * its origin and returns DT_ERR_CONFIG if there was any. */
dt_status_t dt_config_validate(dt_config_t *cfg, dt_schema_lookup_fn lookup,
                               void *arg);

/* Getters. DT_ERR_NOT_FOUND when the key has no value and no default;
 * DT_ERR_CONFIG (logged with its origin) when the text has the wrong type. */
const char *dt_config_get(const dt_config_t *cfg, const char *section,
                          const char *key);
dt_status_t dt_config_get_string(const dt_config_t *cfg, const char *section,
                                 const char *key, const char **out);
dt_status_t dt_config_get_int(const dt_config_t *cfg, const char *section,
                              const char *key, long long *out);
dt_status_t dt_config_get_bool(const dt_config_t *cfg, const char *section,
                               const char *key, bool *out);
dt_status_t dt_config_get_size(const dt_config_t *cfg, const char *section,
                               const char *key, uint64_t *out);
dt_status_t dt_config_get_duration(const dt_config_t *cfg, const char *section,
                                   const char *key, double *seconds);
dt_status_t dt_config_get_double(const dt_config_t *cfg, const char *section,
                                 const char *key, double *out);
dt_status_t dt_config_get_list(const dt_config_t *cfg, const char *section,
                               const char *key, char ***items, size_t *n);
void dt_strv_free(char **strv);
/* A DT_KEY_WORDS value as words (the caller's; free with dt_strv_free). */
dt_status_t dt_config_get_words(const dt_config_t *cfg, const char *section,
                                const char *key, char ***words, size_t *n);

/* Where a value came from: its source and a text such as
 * "conf/cluster.ini:12", "DT_CLUSTER_NP", "--set" or "default". */
dt_status_t dt_config_origin(const dt_config_t *cfg, const char *section,
                             const char *key, dt_config_source_t *src,
                             const char **where);

/* Visit every value that is set (defaults included), sections in
 * registration/appearance order. Return non-zero from cb to stop. */
typedef int (*dt_config_visit_fn)(const char *section, const char *key,
                                  const char *value, dt_config_source_t src,
                                  const char *where, void *arg);
void dt_config_foreach(const dt_config_t *cfg, dt_config_visit_fn cb,
                       void *arg);

/* "default", "cluster file", "job file", "environment", "command line". */
const char *dt_config_source_name(dt_config_source_t src);
/* The key table of a section: registered, or NULL. */
const dt_key_spec_t *dt_config_schema(const dt_config_t *cfg,
                                      const char *section);

/* Typed parsers used by the getters, public for plugins and tests. */
dt_status_t dt_parse_int(const char *text, long long *out);
dt_status_t dt_parse_bool(const char *text, bool *out);
dt_status_t dt_parse_size(const char *text, uint64_t *out);
dt_status_t dt_parse_duration(const char *text, double *seconds);
dt_status_t dt_parse_double(const char *text, double *out);
dt_status_t dt_parse_list(const char *text, char ***items, size_t *n);
/* Words as sh splits a command line: at blanks; '...' keeps everything,
 * "..." keeps all but \" \\ \$ \` (backslash-escaped), a backslash
 * elsewhere keeps the next character. No expansion of any kind.
 * DT_ERR_INVALID for an unclosed quote or a trailing backslash. */
dt_status_t dt_parse_words(const char *text, char ***words, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* DT_CONFIG_H */
