/* slurm_command.c — the salloc/srun command line (see slurm.h). */
#include "slurm.h"

static void add_opt(strv_t *argv, const char *opt, const char *value)
{
    if (value && *value) {
        strv_add(argv, opt);
        strv_add(argv, value);
    }
}

dt_status_t slurm_build_argv(const slurm_launcher_t *L,
                             const dt_launch_spec_t *spec, const char *script,
                             strv_t *argv)
{
    const slurm_conf_t *c = &L->conf;
    if (!L->inside) {
        strv_add(argv, "salloc");
        add_opt(argv, "--job-name", L->step_name);
        strv_addf(argv, "--ntasks=%d", spec->np);
        if (c->nodes > 0)
            strv_addf(argv, "--nodes=%lld", c->nodes);
        if (c->tasks_per_node > 0)
            strv_addf(argv, "--ntasks-per-node=%lld", c->tasks_per_node);
        add_opt(argv, "--partition", c->partition);
        add_opt(argv, "--time", c->time_limit);
        add_opt(argv, "--account", c->account);
        strv_add_all(argv, (const char *const *)c->extra_args);
    }
    strv_add(argv, "srun");
    /* "rank: " before every line: output and exit markers per rank */
    strv_add(argv, "--label");
    /* dtctl's environment, the job token among it, reaches the tasks
     * through Slurm, never through an argv */
    strv_add(argv, "--export=ALL");
    /* one failing task ends the step at once */
    strv_add(argv, "--kill-on-bad-exit=1");
    if (L->inside)
        add_opt(argv, "--job-name", L->step_name);
    strv_addf(argv, "--ntasks=%d", spec->np);
    if (c->nodes > 0)
        strv_addf(argv, "--nodes=%lld", c->nodes);
    if (c->tasks_per_node > 0)
        strv_addf(argv, "--ntasks-per-node=%lld", c->tasks_per_node);
    if (spec->workdir)
        strv_addf(argv, "--chdir=%s", spec->workdir);
    /* dtctl's stdin to task 0 (rank 0) only; srun's default gives it to
     * every task */
    if (spec->forward_stdin)
        strv_add(argv, "--input=0");
    strv_add_all(argv, (const char *const *)c->srun_args);
    strv_add(argv, "sh");
    strv_add(argv, "-c");
    strv_add(argv, script);
    strv_add(argv, "dt-worker");
    strv_add_all(argv, spec->argv);
    return strv_ok(argv) ? DT_OK : DT_ERR_NOMEM;
}
