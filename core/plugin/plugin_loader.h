/* plugin_loader.h — the loader's parts internal to libdt; the rest is the
 * public dt/loader.h. */
#ifndef DT_PLUGIN_LOADER_H
#define DT_PLUGIN_LOADER_H

#include <stddef.h>
#include <dt/loader.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open a shared module that is not a plugin (dt's CUDA backend) the way
 * plugins are opened (symbols resolved now, a missing library named in
 * why), keep it loaded for the life of the process, and look up symbol. */
dt_status_t dt_module_open_resident(const char *path, const char *symbol,
                                    void **sym, char *why, size_t why_len);

/* The file p was loaded from, or NULL. Takes no lock: for the fault
 * handler (plugin_crash.c), which reads the loaded list as it is. */
const char *dt_plugin_path_of(const dt_plugin_t *p);

#ifdef __cplusplus
}
#endif
#endif /* DT_PLUGIN_LOADER_H */
