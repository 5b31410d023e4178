/* opt_probe.h — the job's optimizer made before training, in a child
 * process: dtctl checks its settings (and measures its state) this way,
 * so that a third-party optimizer that crashes in create fails the job
 * with its name, op and file, and does not take dtctl down. */
#ifndef DT_TRAIN_OPT_PROBE_H
#define DT_TRAIN_OPT_PROBE_H

#include <stddef.h>
#include <dt/config.h>
#include <dt/plugin.h>

/* Make p's optimizer for one parameter and destroy it, in a child. With
 * per_param, also make one for 1 + 1024 and store its state's bytes per
 * parameter there (0 when it cannot be made). Returns DT_OK, create's
 * own failure, or DT_ERR_PLUGIN when the plugin crashed, exited or hung
 * (said, naming plugin, op and file). */
dt_status_t dt_opt_probe(const dt_config_t *cfg, const dt_plugin_t *p,
                         size_t *per_param);

#endif /* DT_TRAIN_OPT_PROBE_H */
