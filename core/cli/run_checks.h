/* run_checks.h — the settings `dtctl run` refuses before anything
 * starts, in functions `dtctl check` calls too: run stops at the first
 * one that fails (exit 2), check shows each as a row of its table. Each
 * logs what is wrong with the setting's origin (file:line, --option). */
#ifndef DT_CLI_RUN_CHECKS_H
#define DT_CLI_RUN_CHECKS_H

#include <dt/config.h>
#include <dt/hosts.h>
#include <dt/plugin.h>

/* The plugin a [cluster] key names (launcher, transport, storage),
 * loaded here; the loader explains a missing or unavailable one and
 * lists those that exist. */
dt_status_t run_load_plugin(const dt_config_t *cfg, dt_kind_t kind,
                            const char *key, const dt_plugin_t **p);

/* [cluster] timeout above 0, master_port a TCP port, env_vars names that
 * dt does not set itself. */
dt_status_t run_check_cluster_keys(const dt_config_t *cfg);

/* [cluster] kill_grace (seconds) and workdir (NULL: dtctl's own
 * directory). */
dt_status_t run_read_supervision(const dt_config_t *cfg, double *kill_grace,
                                 const char **workdir);

/* The keys of restarts and elastic membership (max_restarts,
 * restart_backoff, min_np, max_np, host_failures, host_cooldown, with
 * kill_grace and workdir), read as run reads them for np workers on
 * hosts; trainer: the job runs dt's trainer (a fresh run must not mix its
 * checkpoints with an old run's). */
dt_status_t run_check_restarts(const dt_config_t *cfg,
                               const dt_hostlist_t *hosts, int np,
                               int trainer);

/* "FILE:LINE" of the hostfile's first weight= (the hostfile [cluster]
 * hostfile names), else "the hostfile NAME". */
void run_weight_line(const dt_config_t *cfg, char *buf, size_t len);

/* A launcher whose scheduler places the ranks (DT_LAUNCHER_PLACES_RANKS)
 * ignores dtctl's placement: refuse what rests on it, a hostfile's
 * weight= (naming its file:line) and [cluster] min_np (naming its
 * origin), saying what to do instead. */
dt_status_t run_check_placed_by(const dt_config_t *cfg,
                                const dt_hostlist_t *hosts,
                                const dt_plugin_t *launcher);

#endif /* DT_CLI_RUN_CHECKS_H */
