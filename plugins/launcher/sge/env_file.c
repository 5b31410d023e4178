/* env_file.c — [launcher.sge] export_env: dtctl's environment for the
 * workers, as a file in the job directory (0600, in a 0700 directory on
 * the shared file system) that each worker's starter reads before it
 * becomes the program. Not qsub -V: SGE keeps -V's variables in the job
 * record, and `qstat -j` shows that record's env_list to every user of
 * the cell, with whatever tokens and keys the user's shell held. */
#define _GNU_SOURCE
#include <string.h>

#include "sge.h"

/* What SGE sets for each job and task (its value wins, as with -V), and
 * what a shell sets for itself. */
static int sge_owns(const char *name, size_t len)
{
    static const char *const names[] = {
        "JOB_ID", "JOB_NAME", "JOB_SCRIPT", "NSLOTS", "NHOSTS", "NQUEUES",
        "QUEUE", "PE", "PE_HOSTFILE", "HOSTNAME", "TMPDIR", "TMP",
        "REQUEST", "ENVIRONMENT", "ARC", "RESTARTED", "HOME", "USER",
        "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", NULL};
    if (len >= 4 && strncmp(name, "SGE_", 4) == 0)
        return 1;
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == len && strncmp(name, names[i], len) == 0)
            return 1;
    return 0;
}

/* A name sh can assign (bash's exported functions, BASH_FUNC_f%%, and
 * other odd names cannot be, and are left out). */
static int sh_name(const char *name, size_t len)
{
    if (len == 0 || (name[0] >= '0' && name[0] <= '9'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* One of dt's own variables for this job (spec->env), set per worker. */
static int dt_sets(const dt_launch_spec_t *spec, const char *name, size_t len)
{
    for (size_t i = 0; spec->env && spec->env[i]; i++)
        if (strncmp(spec->env[i], name, len) == 0 && spec->env[i][len] == '=')
            return 1;
    return 0;
}

dt_status_t sge_write_env(const char *dir, const dt_launch_spec_t *spec,
                          char *const *environment)
{
    strbuf_t b = {0};
    sb_add(&b, "# dtctl's environment for the workers ([launcher.sge] "
               "export_env); read by each worker's starter.\n");
    for (size_t i = 0; environment && environment[i]; i++) {
        const char *e = environment[i], *eq = strchr(e, '=');
        if (!eq)
            continue;
        size_t len = (size_t)(eq - e);
        if (!sh_name(e, len) || sge_owns(e, len) || dt_sets(spec, e, len) ||
            sge_script_sets(e) || (len == 12 && !strncmp(e, "DT_JOB_TOKEN", 12)))
            continue;
        sb_addn(&b, e, len);
        sb_add(&b, "=");
        sb_quote(&b, eq + 1);
        sb_add(&b, "\nexport ");
        sb_addn(&b, e, len);
        sb_add(&b, "\n");
    }
    dt_status_t st = sb_status(&b);
    if (st == DT_OK)
        st = jobdir_write(dir, SGE_ENV_FILE, b.s, b.len, 0600);
    if (b.s)
        explicit_bzero(b.s, b.len);
    sb_free(&b);
    return st;
}
