/* dt/loader.h — finding, loading and listing plugins, as dtctl does: for
 * tools and programs that load dt's plugins themselves. Plugin authors
 * need only dt/plugin.h.
 *
 * Search order (dt_plugin_search_path): each directory of DT_PLUGIN_PATH
 * (colon list); then the build tree's plugins/modules when this libdt runs
 * from its build tree (so an uninstalled build works), or else dt/ beside
 * the running libdt (<its libdir>/dt: a staged or moved installation finds
 * its own plugins; skipped when it is the configured directory); then
 * dt's configured plugin directory (`pkg-config --variable=plugindir dt`).
 * The first file named dt_<kind>_<name>.so wins. A plugin name is 1 to 64
 * of [a-z0-9_-]; a file whose name breaks that is refused, and no other
 * name is looked up. Loading refuses a plugin whose ops table lacks an op
 * its kind requires (dt/plugin.h). Loaded plugins stay loaded until
 * dt_plugins_unload_all(). */
#ifndef DT_LOADER_H
#define DT_LOADER_H

#include <stddef.h>
#include <dt/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Load and check a plugin (the file's name, the symbol, ABI, kind and
 * name, the required ops); on failure logs one clear line (the file and
 * the cause, and the plugins of that kind that do exist) and returns
 * DT_ERR_NOT_FOUND (no such file, or a name that breaks the name rule) or
 * DT_ERR_PLUGIN. *path (may be NULL) is the file. */
dt_status_t dt_plugin_load(dt_kind_t kind, const char *name,
                           const dt_plugin_t **out, const char **path);

/* Like dt_plugin_load, but loads one file directly (tests, `dtctl
 * plugins`) and writes the reason for a failure into why. */
dt_status_t dt_plugin_load_file(const char *path, const dt_plugin_t **out,
                                char *why, size_t why_len);

typedef struct dt_plugin_entry {
    dt_kind_t kind;
    char *name;
    char *path;
    const char *version;     /* NULL when the loader refused it; ""
                                when the plugin gives none        */
    const char *description; /* NULL when the loader refused it; "" */
    int available;
    char why[512];           /* why refused, or why not available */
} dt_plugin_entry_t;

/* Every plugin file on the search path (the first of each kind/name),
 * sorted by kind then name, each loaded to check it. */
dt_status_t dt_plugin_scan(dt_plugin_entry_t **out, size_t *n);
void dt_plugin_entries_free(dt_plugin_entry_t *entries, size_t n);

/* Every plugin of one kind on the search path (the first file of each
 * name), loaded, in name order: fn(plugin, arg) for each that loads; a
 * nonzero return stops the walk and is returned. Files that do not load
 * are skipped (a debug line); `available` is not consulted. Loads nothing
 * of other kinds. */
int dt_plugin_each(dt_kind_t kind,
                   int (*fn)(const dt_plugin_t *p, void *arg), void *arg);

/* "local, ssh" (malloc'd): names of loadable plugins of a kind, or "none". */
char *dt_plugin_names(dt_kind_t kind);

/* The search directories in order (malloc'd, NULL-terminated). */
char **dt_plugin_search_path(void);

/* dt_schema_lookup_fn for dt_config_validate(): the key table of a plugin
 * section such as "transport.tcp" (loading the plugin), or NULL. */
const dt_key_spec_t *dt_plugin_schema_lookup(const char *section, void *arg);

void dt_plugins_unload_all(void);

/* The ops a kind requires: DT_OPS_REQUIRE(missing, ops, type, field) for
 * each appends the absent ones' names to `missing` (a char array, "" to
 * start), so the refusal names every op the plugin lacks. The loader
 * runs it for every kind when it loads a plugin. */
void dt_ops_note_missing(char *missing, size_t len, int present,
                         const char *name);
#define DT_OPS_REQUIRE(missing, ops, type, field)                             \
    dt_ops_note_missing(missing, sizeof(missing),                            \
                        DT_OPS_HAS(ops, type, field), #field)

#ifdef __cplusplus
}
#endif
#endif /* DT_LOADER_H */
