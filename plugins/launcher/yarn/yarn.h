/* yarn.h — state shared by the YARN launcher's files. */
#ifndef DT_LAUNCHER_YARN_H
#define DT_LAUNCHER_YARN_H

#include <jansson.h>
#include <dt/plugin.h>
#include "jobdir.h"

typedef struct yarn_conf {
    const char *rm_url, *user, *queue, *app_name, *app_type, *shared_dir,
        *am_classpath;
    uint64_t memory, am_memory;   /* bytes */
    long long vcores;
    int poll_ms, start_timeout_s, request_timeout_ms;
    char *home_dir;               /* default shared_dir, malloc'd */
} yarn_conf_t;

typedef struct yarn_launcher {
    yarn_conf_t conf;
    int launched;
    char *dir;                    /* the job directory                 */
    char app_id[128];             /* application_..._NNNN              */
    int app_over;                 /* FINISHED, FAILED or KILLED seen   */
    int kill_sent;
    char final_state[32], final_status[32];
    long long next_poll;          /* when to ask the RM again (ms)     */
    jobdir_mon_t mon;
    int mon_ready;
} yarn_launcher_t;

/* rest.c: one request to the ResourceManager. body may be NULL. *resp
 * (may be NULL on success without a body) is the parsed JSON answer.
 * HTTP errors are logged with the RM's RemoteException message. */
dt_status_t yarn_rest(const yarn_launcher_t *L, const char *method,
                      const char *path, json_t *body, long *http_code,
                      json_t **resp);
/* The RemoteException's message in resp, or "". */
const char *yarn_remote_message(json_t *resp);

/* script.c: the container's start script (no secret in it). */
dt_status_t yarn_worker_script(const dt_launch_spec_t *spec, const char *dir,
                               const char *workdir, int start_timeout_s,
                               strbuf_t *out);
/* submit.c */
dt_status_t yarn_launch(void *ctx, const dt_launch_spec_t *spec);
/* watch.c */
dt_status_t yarn_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev);
dt_status_t yarn_signal(void *ctx, int signo);
/* Kill the application if it still runs; wait (bounded) until it ended. */
void yarn_stop(yarn_launcher_t *L);

#endif /* DT_LAUNCHER_YARN_H */
