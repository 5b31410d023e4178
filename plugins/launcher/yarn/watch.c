/* watch.c — wait(): tail the job directory, and ask the ResourceManager
 * for the application's state every poll interval; signal(): kill the
 * application (PUT .../state {"state":"KILLED"}), which stops every
 * container on every NodeManager. */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "yarn.h"

/* After a kill, how long to wait for the RM to report KILLED. */
#define KILL_WAIT_MS 30000

static int is_final(const char *state)
{
    return !strcmp(state, "FINISHED") || !strcmp(state, "FAILED") ||
           !strcmp(state, "KILLED");
}

/* GET the application; on a final state, remember it and say why. */
static void poll_rm(yarn_launcher_t *L)
{
    char path[256];
    snprintf(path, sizeof path, "/ws/v1/cluster/apps/%s", L->app_id);
    long code;
    json_t *resp = NULL;
    if (yarn_rest(L, "GET", path, NULL, &code, &resp) != DT_OK)
        return; /* logged; try again next time */
    json_t *app = json_object_get(resp, "app");
    const char *state = json_string_value(json_object_get(app, "state"));
    const char *final = json_string_value(json_object_get(app, "finalStatus"));
    const char *diag = json_string_value(json_object_get(app, "diagnostics"));
    if (code != 200 || !state) {
        dt_warn("yarn: GET %s answered HTTP %ld: %s", path, code,
                yarn_remote_message(resp));
    } else if (is_final(state)) {
        L->app_over = 1;
        snprintf(L->final_state, sizeof L->final_state, "%s", state);
        snprintf(L->final_status, sizeof L->final_status, "%s",
                 final ? final : "UNDEFINED");
        int ok = !strcmp(state, "FINISHED") && final &&
                 !strcmp(final, "SUCCEEDED");
        if (!ok && !L->kill_sent)
            dt_error("yarn: application %s ended %s (final status %s)%s%s",
                     L->app_id, state, final ? final : "?",
                     diag && *diag ? ": " : "", diag ? diag : "");
        else
            dt_debug("yarn: application %s ended %s/%s", L->app_id, state,
                     final ? final : "?");
    }
    json_decref(resp);
}

static int whole_app_event(yarn_launcher_t *L, dt_worker_exit_t *ev)
{
    if (!L->app_over || jobdir_mon_started(&L->mon) > 0)
        return 0;
    static char host[] = "the YARN cluster";
    dt_worker_exit_t e;
    int exited = 0, any = 0;
    for (int r = 0; r < L->mon.np; r++)
        exited |= L->mon.ranks[r].exited && !L->mon.ranks[r].reported;
    if (exited)
        return 0; /* ranks that failed while starting speak for themselves */
    while (jobdir_mon_next(&L->mon, &e) > 0)
        any = 1;
    if (!any)
        return 0;
    memset(ev, 0, sizeof *ev);
    ev->rank = -1;
    ev->host = host;
    if (L->kill_sent) {
        ev->signaled = 1;
        ev->signo = SIGKILL;
    } else {
        ev->code = 1;
    }
    return 1;
}

dt_status_t yarn_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev)
{
    yarn_launcher_t *L = ctx;
    if (!L || !ev)
        return DT_ERR_INVALID;
    if (!L->mon_ready || !L->app_id[0])
        return DT_ERR_NOT_FOUND;
    long long deadline = timeout_ms < 0 ? -1 : dt_clock_now_ms() + timeout_ms;
    for (int polled = 0;; polled = 1) {
        if (jobdir_mon_poll(&L->mon)) {
            dt_info("yarn: application %s: every container started",
                    L->app_id);
            jobdir_mon_poll(&L->mon);
        }
        if (!L->app_over && dt_clock_now_ms() >= L->next_poll) {
            poll_rm(L);
            L->next_poll = dt_clock_now_ms() + L->conf.poll_ms;
            if (L->app_over)
                jobdir_mon_finish(&L->mon);
        }
        if (whole_app_event(L, ev))
            return DT_OK;
        int rep = jobdir_mon_next(&L->mon, ev);
        if (rep > 0)
            return DT_OK;
        if (rep < 0)
            return DT_ERR_NOT_FOUND;
        long long left = deadline < 0 ? L->conf.poll_ms
                                      : deadline - dt_clock_now_ms();
        if (polled && deadline >= 0 && left <= 0)
            return DT_ERR_TIMEOUT;
        int ms = left < 0 ? 0 : left > L->conf.poll_ms ? L->conf.poll_ms
                                                        : (int)left;
        /* The workers' files change without a descriptor to wait on. */
        if (poll(NULL, 0, ms) < 0)
            return DT_ERR_TIMEOUT; /* a signal for dtctl: let it look */
    }
}

static void kill_app(yarn_launcher_t *L)
{
    char path[256];
    snprintf(path, sizeof path, "/ws/v1/cluster/apps/%s/state", L->app_id);
    json_t *body = json_pack("{s:s}", "state", "KILLED");
    long code;
    json_t *resp = NULL;
    L->kill_sent++;
    dt_info("yarn: killing application %s (the ResourceManager stops every "
            "container)",
            L->app_id);
    if (body && yarn_rest(L, "PUT", path, body, &code, &resp) == DT_OK &&
        code != 200 && code != 202)
        dt_warn("yarn: PUT %s answered HTTP %ld: %s", path, code,
                yarn_remote_message(resp));
    json_decref(body);
    json_decref(resp);
}

dt_status_t yarn_signal(void *ctx, int signo)
{
    yarn_launcher_t *L = ctx;
    if (!L)
        return DT_ERR_INVALID;
    if (L->app_over || !L->app_id[0])
        return DT_OK;
    if (L->kill_sent == 0 || (signo == SIGKILL && L->kill_sent == 1))
        kill_app(L);
    return DT_OK;
}

void yarn_stop(yarn_launcher_t *L)
{
    if (L->app_over || !L->app_id[0])
        return;
    poll_rm(L);
    if (L->app_over)
        return;
    if (!L->kill_sent)
        kill_app(L);
    long long deadline = dt_clock_now_ms() + KILL_WAIT_MS;
    while (!L->app_over && dt_clock_now_ms() < deadline) {
        poll(NULL, 0, L->conf.poll_ms);
        poll_rm(L);
    }
    if (!L->app_over)
        dt_warn("yarn: application %s is not KILLED %d s after the kill "
                "request; check it with `yarn application -status %s`",
                L->app_id, KILL_WAIT_MS / 1000, L->app_id);
}
