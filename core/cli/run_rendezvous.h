/* run_rendezvous.h — dtctl run's part of the rendezvous: choose the
 * interface, start the job's store on it, and say in the workers'
 * environment where it is and how the workers are configured. */
#ifndef DT_CLI_RUN_RENDEZVOUS_H
#define DT_CLI_RUN_RENDEZVOUS_H

#include <stdint.h>
#include <dt/config.h>
#include <dt/hosts.h>
#include <dt/store.h>

/* Start the store for a job on the chosen interface ([cluster] interface,
 * else the route to the first host that is not this machine, else — for
 * a launcher other than local, whose scheduler picks the hosts — the
 * default route's interface, else 127.0.0.1) and return the variables to add to every worker's
 * environment, "KEY=VALUE", NULL-terminated (free with dt_strv_free):
 *   DT_RENDEZVOUS=addr:port   the store
 *   DT_TRANSPORT=name         [cluster] transport
 *   DT_INTERFACE=spec         [cluster] interface when set: each worker
 *                             applies it on its own host
 *   DT_CLUSTER_TIMEOUT=...    when not the default
 *   DT_<SECTION>_<KEY>=value  every non-default key of a plugin section
 *                             ([transport.tcp] ...), so --set reaches them
 *   DT_LOG_LEVEL=level        when dtctl runs with -v, -vv or -q
 * The job token is not among them (the job's common environment has it).
 * Stop the store with dt_store_server_stop() once the workers are gone. */
dt_status_t run_start_rendezvous(const dt_config_t *cfg,
                                 const dt_hostlist_t *hosts,
                                 const uint8_t *token,
                                 dt_store_server_t **srv,
                                 char ***env_additions);

#endif /* DT_CLI_RUN_RENDEZVOUS_H */
