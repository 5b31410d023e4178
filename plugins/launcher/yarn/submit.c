/* submit.c — launch(): the private job directory (token, container
 * script, the distributed-shell AM's shellCommands/shellArgs files), then
 * new-application and the application-submission-context, as in the
 * Hadoop docs' "Cluster Applications API (Submit Application)". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/env.h>
#include <dt/log.h>
#include "yarn.h"

#define DS_AM "org.apache.hadoop.yarn.applications.distributedshell." \
              "ApplicationMaster"

static long long mib(uint64_t bytes)
{
    return (long long)((bytes + (1u << 20) - 1) >> 20);
}

/* A local resource entry for a file of the job directory: the
 * NodeManager localizes it from its file:// URL and checks size and
 * modification time. */
static json_t *local_resource(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return NULL;
    char url[4200];
    snprintf(url, sizeof url, "file://%s", path);
    long long ts = (long long)sb.st_mtim.tv_sec * 1000 +
                   sb.st_mtim.tv_nsec / 1000000;
    return json_pack("{s:s, s:{s:s, s:s, s:s, s:I, s:I}}", "key", name,
                     "value", "resource", url, "type", "FILE", "visibility",
                     "APPLICATION", "size", (json_int_t)sb.st_size,
                     "timestamp", (json_int_t)ts);
}

static char *am_command(const yarn_launcher_t *L, int np)
{
    char *cmd = NULL;
    if (asprintf(&cmd,
                 "{{JAVA_HOME}}/bin/java -Xmx%lldm %s --container_memory "
                 "%lld --container_vcores %lld --num_containers %d "
                 "--priority 0 1><LOG_DIR>/AppMaster.stdout "
                 "2><LOG_DIR>/AppMaster.stderr",
                 mib(L->conf.am_memory) * 3 / 4, DS_AM,
                 mib(L->conf.memory), L->conf.vcores, np) < 0)
        return NULL;
    return cmd;
}

static json_t *submission(const yarn_launcher_t *L, const char *name, int np)
{
    char *cmd = am_command(L, np);
    json_t *sc = local_resource(L->dir, "shellCommands");
    json_t *sa = local_resource(L->dir, "shellArgs");
    json_t *ctx = NULL;
    if (cmd && sc && sa)
        ctx = json_pack(
            "{s:s, s:s, s:s, s:s, s:b, s:i, s:b, s:{s:I, s:i},"
            " s:{s:{s:[o,o]}, s:{s:[{s:s, s:s}]}, s:{s:s}}}",
            "application-id", L->app_id, "application-name", name,
            "queue", L->conf.queue, "application-type", L->conf.app_type,
            "unmanaged-AM", 0, "max-app-attempts", 1,
            "keep-containers-across-application-attempts", 0,
            "resource", "memory", (json_int_t)mib(L->conf.am_memory),
            "vCores", 1,
            "am-container-spec", "local-resources", "entry", sc, sa,
            "environment", "entry", "key", "CLASSPATH", "value",
            L->conf.am_classpath, "commands", "command", cmd);
    else {
        json_decref(sc);
        json_decref(sa);
    }
    free(cmd);
    return ctx;
}

static dt_status_t prepare_dir(yarn_launcher_t *L,
                               const dt_launch_spec_t *spec,
                               const char *job_id)
{
    char name[64];
    snprintf(name, sizeof name, "job-%s", job_id);
    DT_CHECK(jobdir_create(L->conf.shared_dir, name, &L->dir));
    const char *tok = dt_env_value(spec->env, "DT_JOB_TOKEN");
    if (!tok) {
        dt_error("yarn: the job environment has no DT_JOB_TOKEN (a bug in "
                 "dt: please report it)");
        return DT_ERR_INTERNAL;
    }
    strbuf_t b = {0};
    sb_addf(&b, "%s\n", tok);
    dt_status_t st = sb_status(&b);
    if (st == DT_OK)
        st = jobdir_write(L->dir, "token", b.s, b.len, 0600);
    explicit_bzero(b.s, b.len);
    sb_free(&b);
    if (st != DT_OK)
        return st;
    char cwd[4096];
    const char *wd = spec->workdir;
    if (!wd && !(wd = getcwd(cwd, sizeof cwd))) {
        dt_error("yarn: cannot tell dtctl's working directory (%s); set "
                 "[cluster] workdir",
                 strerror(errno));
        return DT_ERR_IO;
    }
    strbuf_t script = {0}, args = {0};
    st = yarn_worker_script(spec, L->dir, wd, L->conf.start_timeout_s,
                            &script);
    if (st == DT_OK)
        st = jobdir_write(L->dir, "worker.sh", script.s, script.len, 0700);
    sb_quote(&args, L->dir);
    sb_add(&args, "/worker.sh");
    if (st == DT_OK)
        st = sb_status(&args);
    if (st == DT_OK)
        st = jobdir_write(L->dir, "shellCommands", "/bin/sh", 7, 0600);
    if (st == DT_OK)
        st = jobdir_write(L->dir, "shellArgs", args.s, args.len, 0600);
    sb_free(&script);
    sb_free(&args);
    return st;
}

static dt_status_t new_application(yarn_launcher_t *L)
{
    long code;
    json_t *resp = NULL;
    DT_CHECK(yarn_rest(L, "POST", "/ws/v1/cluster/apps/new-application",
                       NULL, &code, &resp));
    const char *id = json_string_value(json_object_get(resp, "application-id"));
    json_t *max = json_object_get(resp, "maximum-resource-capability");
    dt_status_t st = DT_OK;
    if (code != 200 || !id || strlen(id) >= sizeof L->app_id) {
        dt_error("yarn: new-application at %s answered HTTP %ld without an "
                 "application-id: %s",
                 L->conf.rm_url, code, yarn_remote_message(resp));
        st = DT_ERR_IO;
    } else {
        snprintf(L->app_id, sizeof L->app_id, "%s", id);
        json_int_t mem = json_integer_value(json_object_get(max, "memory"));
        json_int_t vc = json_integer_value(json_object_get(max, "vCores"));
        if (max && (mib(L->conf.memory) > mem || L->conf.vcores > vc)) {
            dt_error("yarn: each container asks for %lld MiB and %lld "
                     "vcores, the cluster allows at most %lld MiB and %lld "
                     "vcores; lower [launcher.yarn] memory/vcores",
                     mib(L->conf.memory), L->conf.vcores, (long long)mem,
                     (long long)vc);
            st = DT_ERR_CONFIG;
        }
    }
    json_decref(resp);
    return st;
}

dt_status_t yarn_launch(void *ctx, const dt_launch_spec_t *spec)
{
    yarn_launcher_t *L = ctx;
    if (!L || !spec || spec->np < 1 || !spec->argv || !spec->argv[0]) {
        dt_error("yarn: launch needs np >= 1 and a program (a bug in dt: "
                 "please report it)");
        return DT_ERR_INVALID;
    }
    if (L->launched) {
        dt_error("yarn: this launcher instance already submitted a job");
        return DT_ERR_INVALID;
    }
    L->launched = 1;
    const char *job_id = dt_env_value(spec->env, "DT_JOB_ID");
    if (!job_id)
        job_id = "0";
    char name[128];
    if (L->conf.app_name && *L->conf.app_name)
        snprintf(name, sizeof name, "%s", L->conf.app_name);
    else
        snprintf(name, sizeof name, "dt-%s", job_id);
    DT_CHECK(prepare_dir(L, spec, job_id));
    DT_CHECK(jobdir_mon_init(&L->mon, L->dir, spec->np, "?", spec->output,
                             spec->output_arg));
    L->mon_ready = 1;
    dt_status_t nst = new_application(L);
    if (nst != DT_OK) {
        /* Refused before submitting: YARN forgets an application id that
         * was never submitted, so there is nothing to poll or kill. */
        L->app_over = 1;
        return nst;
    }
    json_t *sub = submission(L, name, spec->np);
    if (!sub)
        return DT_ERR_NOMEM;
    long code;
    json_t *resp = NULL;
    dt_status_t st = yarn_rest(L, "POST", "/ws/v1/cluster/apps", sub, &code,
                               &resp);
    json_decref(sub);
    if (st == DT_OK && code != 202 && code != 200) {
        dt_error("yarn: the ResourceManager rejected application %s (HTTP "
                 "%ld): %s",
                 L->app_id, code, yarn_remote_message(resp));
        st = DT_ERR_IO;
    }
    json_decref(resp);
    if (st != DT_OK) {
        L->app_over = 1; /* nothing runs */
        return st;
    }
    dt_info("yarn: application %s (%s) submitted to queue %s: %d "
            "containers of %lld MiB, %lld vcores",
            L->app_id, name, L->conf.queue, spec->np, mib(L->conf.memory),
            L->conf.vcores);
    return DT_OK;
}
