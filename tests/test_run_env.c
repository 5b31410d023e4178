/* test_run_env.c — the worker environment contract: every variable of
 * docs/LAUNCHERS.md, computed from a placement of 5 ranks on 2 hosts;
 * MASTER_ADDR for other hosts, the user's interface variables, and the
 * local launcher's numbering of one machine's names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/run_env.h"

static const char *get(const env_list_t *l, const char *key)
{
    size_t k = strlen(key);
    for (const char *const *e = env_list_strv(l); *e; e++)
        if (strncmp(*e, key, k) == 0 && (*e)[k] == '=')
            return *e + k + 1;
    return NULL;
}

static void expect(const env_list_t *l, const char *key, const char *value)
{
    const char *v = get(l, key);
    if (!v)
        fail_msg("%s is not set", key);
    assert_string_equal(v, value);
}

static dt_host_t hosts_v[2] = {{"node-a", 3, 0, 0}, {"node-b", 2, 0, 0}};
static dt_hostlist_t hosts = {hosts_v, 2};
/* ranks 0-2 on node-a, 3-4 on node-b, as dt_place_ranks fills them */
static dt_placement_t placement[5] = {
    {0, 0, 0, 3, 0, 2}, {1, 0, 1, 3, 0, 2}, {2, 0, 2, 3, 0, 2},
    {3, 1, 0, 2, 1, 2}, {4, 1, 1, 2, 1, 2}};

static void make_job(run_job_t *job)
{
    memset(job, 0, sizeof *job);
    job->np = 5;
    job->hosts = &hosts;
    job->placement = placement;
    job->num_nodes = 2;
    strcpy(job->job_id, "0123abcd4567");
    memset(job->token_hex, 'f', 2 * DT_TOKEN_BYTES);
    strcpy(job->master_addr, "node-a");
    job->master_port = 29500;
}

static void test_common(void **state)
{
    (void)state;
    run_job_t job;
    make_job(&job);
    env_list_t env = {0};
    assert_int_equal(run_env_common(&job, &env), DT_OK);
    expect(&env, "DT_WORLD_SIZE", "5");
    expect(&env, "WORLD_SIZE", "5");
    expect(&env, "DT_NUM_NODES", "2");
    expect(&env, "GROUP_WORLD_SIZE", "2");
    expect(&env, "MASTER_ADDR", "node-a");
    expect(&env, "MASTER_PORT", "29500");
    expect(&env, "DT_JOB_ID", "0123abcd4567");
    assert_int_equal(strlen(get(&env, "DT_JOB_TOKEN")), 2 * DT_TOKEN_BYTES);
    assert_null(get(&env, "DT_RANK")); /* per-rank values are not here */
    env_list_free(&env);
    assert_int_equal(env.n, 0);
}

static void test_per_rank(void **state)
{
    (void)state;
    run_job_t job;
    make_job(&job);
    static const struct {
        const char *rank, *local, *local_size, *node, *host;
    } want[5] = {{"0", "0", "3", "0", "node-a"}, {"1", "1", "3", "0", "node-a"},
                 {"2", "2", "3", "0", "node-a"}, {"3", "0", "2", "1", "node-b"},
                 {"4", "1", "2", "1", "node-b"}};
    for (int r = 0; r < 5; r++) {
        env_list_t env = {0};
        assert_int_equal(run_env_rank(&job, r, &env), DT_OK);
        expect(&env, "DT_RANK", want[r].rank);
        expect(&env, "RANK", want[r].rank);
        expect(&env, "DT_LOCAL_RANK", want[r].local);
        expect(&env, "LOCAL_RANK", want[r].local);
        expect(&env, "DT_LOCAL_SIZE", want[r].local_size);
        expect(&env, "LOCAL_WORLD_SIZE", want[r].local_size);
        expect(&env, "DT_NODE_RANK", want[r].node);
        expect(&env, "GROUP_RANK", want[r].node);
        expect(&env, "DT_HOST", want[r].host);
        assert_null(get(&env, "DT_JOB_TOKEN"));
        env_list_free(&env);
    }
}

static void test_free_port(void **state)
{
    (void)state;
    int port = 0;
    assert_int_equal(run_free_port("127.0.0.1", &port), DT_OK);
    assert_in_range(port, 1, 65535);
    assert_int_equal(run_free_port("not-an-address", &port), DT_ERR_INVALID);
}

/* Rank 0 on a loopback name, others elsewhere: MASTER_ADDR is the
 * store's address; a real name, or every rank here, keeps its value. */
static void test_master_reachable(void **state)
{
    (void)state;
    static dt_host_t lo_v[2] = {{"localhost", 3, 0, 0}, {"node-b", 2, 0, 0}};
    static dt_hostlist_t lo = {lo_v, 2};
    run_job_t job;
    make_job(&job);
    job.hosts = &lo;
    strcpy(job.master_addr, "localhost");
    run_job_reach_master(&job, "10.1.2.3:4567");
    assert_string_equal(job.master_addr, "10.1.2.3");
    strcpy(job.master_addr, "127.0.0.1");
    run_job_reach_master(&job, "[fd00::5]:4567");
    assert_string_equal(job.master_addr, "fd00::5");
    strcpy(job.master_addr, "localhost");
    run_job_reach_master(&job, "127.0.0.1:4567"); /* nothing better */
    assert_string_equal(job.master_addr, "localhost");
    make_job(&job); /* node-a: a name node-b can resolve */
    run_job_reach_master(&job, "10.1.2.3:4567");
    assert_string_equal(job.master_addr, "node-a");
    make_job(&job); /* every rank on this machine */
    job.hosts = &lo;
    job.np = 3;
    strcpy(job.master_addr, "127.0.0.1");
    run_job_reach_master(&job, "10.1.2.3:4567");
    assert_string_equal(job.master_addr, "127.0.0.1");
}

/* The user's NCCL_SOCKET_IFNAME is in the job's variables, with its
 * value, whatever [cluster] interface says. */
static void test_interface_user_value(void **state)
{
    (void)state;
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(dt_config_set(cfg, "cluster", "launcher", "ssh",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_config_set(cfg, "cluster", "interface", "eth0",
                                   DT_SRC_CLI, "--set"), DT_OK);
    setenv("NCCL_SOCKET_IFNAME", "ib0", 1);
    unsetenv("GLOO_SOCKET_IFNAME");
    unsetenv("UCX_NET_DEVICES");
    env_list_t env = {0};
    assert_int_equal(run_env_interface(cfg, &env), DT_OK);
    expect(&env, "NCCL_SOCKET_IFNAME", "ib0");
    expect(&env, "GLOO_SOCKET_IFNAME", "eth0");
    expect(&env, "UCX_NET_DEVICES", "eth0");
    env_list_free(&env);
    /* a network: nothing from dt, the user's value still */
    assert_int_equal(dt_config_set(cfg, "cluster", "interface",
                                   "10.0.0.0/8", DT_SRC_CLI, "--set"),
                     DT_OK);
    assert_int_equal(run_env_interface(cfg, &env), DT_OK);
    expect(&env, "NCCL_SOCKET_IFNAME", "ib0");
    assert_null(get(&env, "GLOO_SOCKET_IFNAME"));
    env_list_free(&env);
    unsetenv("NCCL_SOCKET_IFNAME");
    dt_config_free(cfg);
}

/* localhost:2,127.0.0.1:1 with the local launcher: one host to number. */
static void test_one_machine(void **state)
{
    (void)state;
    static dt_host_t v[2] = {{"localhost", 2, 0, 0}, {"127.0.0.1", 1, 0, 0}};
    dt_hostlist_t h = {v, 2};
    dt_placement_t *p = NULL;
    assert_int_equal(dt_place_ranks(&h, 3, &p), DT_OK);
    assert_int_equal(p[2].local_rank, 0); /* what the list alone says */
    run_place_one_machine(&h, p, 3, 0);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(p[r].local_rank, r);
        assert_int_equal(p[r].local_size, 3);
        assert_int_equal(p[r].node_rank, 0);
        assert_int_equal(p[r].num_nodes, 1);
    }
    assert_int_equal(p[2].host, 1); /* DT_HOST stays 127.0.0.1 */
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common),
        cmocka_unit_test(test_per_rank),
        cmocka_unit_test(test_free_port),
        cmocka_unit_test(test_master_reachable),
        cmocka_unit_test(test_interface_user_value),
        cmocka_unit_test(test_one_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
