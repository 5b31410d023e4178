/* run_env.c — the worker environment contract (see run_env.h). */
#include <dt/log.h>
#include "run_env.h"

dt_status_t run_env_common(const run_job_t *job, env_list_t *env)
{
    DT_CHECK(env_list_addf(env, "DT_JOB_ID", "%s", job->job_id));
    DT_CHECK(env_list_addf(env, "DT_JOB_TOKEN", "%s", job->token_hex));
    DT_CHECK(env_list_addf(env, "DT_WORLD_SIZE", "%d", job->np));
    DT_CHECK(env_list_addf(env, "DT_NUM_NODES", "%d", job->num_nodes));
    /* torchrun's names, for init_method="env://" */
    DT_CHECK(env_list_addf(env, "WORLD_SIZE", "%d", job->np));
    DT_CHECK(env_list_addf(env, "GROUP_WORLD_SIZE", "%d", job->num_nodes));
    DT_CHECK(env_list_addf(env, "MASTER_ADDR", "%s", job->master_addr));
    DT_CHECK(env_list_addf(env, "MASTER_PORT", "%d", job->master_port));
    return DT_OK;
}

dt_status_t run_env_rank(const run_job_t *job, int rank, env_list_t *env)
{
    const dt_placement_t *p = &job->placement[rank];
    DT_CHECK(env_list_addf(env, "DT_RANK", "%d", rank));
    DT_CHECK(env_list_addf(env, "DT_LOCAL_RANK", "%d", p->local_rank));
    DT_CHECK(env_list_addf(env, "DT_LOCAL_SIZE", "%d", p->local_size));
    DT_CHECK(env_list_addf(env, "DT_NODE_RANK", "%d", p->node_rank));
    DT_CHECK(env_list_addf(env, "DT_HOST", "%s",
                           job->hosts->hosts[p->host].name));
    DT_CHECK(env_list_addf(env, "RANK", "%d", rank));
    DT_CHECK(env_list_addf(env, "LOCAL_RANK", "%d", p->local_rank));
    DT_CHECK(env_list_addf(env, "LOCAL_WORLD_SIZE", "%d", p->local_size));
    DT_CHECK(env_list_addf(env, "GROUP_RANK", "%d", p->node_rank));
    return DT_OK;
}
