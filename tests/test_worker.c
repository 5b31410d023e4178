/* test_worker.c — the worker API without dtctl: rank/size from dtctl's
 * variables, or from the launcher plugins' identify op (loaded from the
 * build tree) for Open MPI's and Slurm's, and a job of one whose
 * collectives are copies. The details of each scheduler's variables are
 * tested on the plugins' side: test_schedenv.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dt/dt.h>
#include "comm/worker_env.h"
#include "stderr_capture.h"

static void test_env_none(void **state)
{
    (void)state;
    char *envp[] = {"PATH=/bin", "HOME=/root", NULL};
    dt_worker_env_t w;
    assert_int_equal(dt_worker_env_read(envp, &w), DT_OK);
    assert_int_equal(w.rank, 0);
    assert_int_equal(w.size, 1);
    assert_int_equal(w.local_rank, 0);
    assert_int_equal(w.local_size, 1);
    assert_string_equal(w.source, "none");
}

static void test_env_dtctl_wins(void **state)
{
    (void)state;
    char *envp[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                    "DT_RANK=3",              "DT_WORLD_SIZE=4",
                    "DT_LOCAL_RANK=1",        "DT_LOCAL_SIZE=2",
                    NULL};
    dt_worker_env_t w;
    assert_int_equal(dt_worker_env_read(envp, &w), DT_OK);
    assert_int_equal(w.rank, 3);
    assert_int_equal(w.size, 4);
    assert_int_equal(w.local_rank, 1);
    assert_int_equal(w.local_size, 2);
    assert_string_equal(w.source, "dtctl");
}

/* Through the mpi launcher's identify. SLURM_PROCID as well (mpirun in a
 * Slurm job): Open MPI's claim has the higher precedence, and Slurm's
 * refusal of its incomplete variables does not count. */
static void test_env_openmpi(void **state)
{
    (void)state;
    char *envp[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                    "OMPI_COMM_WORLD_LOCAL_RANK=1",
                    "OMPI_COMM_WORLD_LOCAL_SIZE=4", "SLURM_PROCID=2", NULL};
    dt_worker_env_t w;
    assert_int_equal(dt_worker_env_read(envp, &w), DT_OK);
    assert_int_equal(w.rank, 5);
    assert_int_equal(w.size, 8);
    assert_int_equal(w.local_rank, 1);
    assert_int_equal(w.local_size, 4);
    assert_string_equal(w.source, "Open MPI");
}

/* Through the slurm launcher's identify. */
static void test_env_slurm(void **state)
{
    (void)state;
    /* Nodes 0-2 run 2 tasks, node 3 runs 1: this is node 3. */
    char *envp[] = {"SLURM_PROCID=6", "SLURM_NTASKS=7", "SLURM_LOCALID=0",
                    "SLURM_NODEID=3", "SLURM_TASKS_PER_NODE=2(x3),1", NULL};
    dt_worker_env_t w;
    assert_int_equal(dt_worker_env_read(envp, &w), DT_OK);
    assert_int_equal(w.rank, 6);
    assert_int_equal(w.size, 7);
    assert_int_equal(w.local_size, 1);
    assert_string_equal(w.source, "Slurm");
    char *envp2[] = {"SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1",
                     "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2(x2)", NULL};
    assert_int_equal(dt_worker_env_read(envp2, &w), DT_OK);
    assert_int_equal(w.local_rank, 1);
    assert_int_equal(w.local_size, 2);
}

static void test_env_errors(void **state)
{
    (void)state;
    dt_worker_env_t w;
    char *no_size[] = {"DT_RANK=0", NULL};
    assert_int_equal(dt_worker_env_read(no_size, &w), DT_ERR_CONFIG);
    char *not_number[] = {"DT_RANK=one", "DT_WORLD_SIZE=2", NULL};
    assert_int_equal(dt_worker_env_read(not_number, &w), DT_ERR_CONFIG);
    char *out_of_range[] = {"DT_RANK=4", "DT_WORLD_SIZE=4", NULL};
    assert_int_equal(dt_worker_env_read(out_of_range, &w), DT_ERR_CONFIG);
    char *bad_local[] = {"DT_RANK=1", "DT_WORLD_SIZE=4", "DT_LOCAL_RANK=2",
                         "DT_LOCAL_SIZE=2", NULL};
    assert_int_equal(dt_worker_env_read(bad_local, &w), DT_ERR_CONFIG);
    char *bad_slurm[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_NODEID=5",
                         "SLURM_TASKS_PER_NODE=2", NULL};
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_worker_env_read(bad_slurm, &w);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    /* the launcher's message, naming the variables, reaches the user */
    assert_non_null(strstr(err, "SLURM_TASKS_PER_NODE='2' has no entry for "
                                "node 5 (SLURM_NODEID) (launcher slurm)"));
    free(err);
}

static void clear_job_env(void)
{
    static const char *const vars[] = {
        "DT_RANK", "DT_WORLD_SIZE", "DT_LOCAL_RANK", "DT_LOCAL_SIZE",
        "DT_RENDEZVOUS", "DT_JOB_TOKEN", "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID", NULL};
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
}

static void test_single_worker(void **state)
{
    (void)state;
    clear_job_env();
    assert_int_equal(dt_rank(), -1);
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {0};
    assert_int_equal(dt_allreduce(x, y, 5, DT_FLOAT32, DT_SUM),
                     DT_ERR_INVALID); /* before dt_init */
    assert_int_equal(dt_init(), DT_OK);
    assert_int_equal(dt_init(), DT_ERR_INVALID); /* twice */
    assert_int_equal(dt_rank(), 0);
    assert_int_equal(dt_size(), 1);
    assert_int_equal(dt_local_rank(), 0);
    assert_int_equal(dt_local_size(), 1);
    assert_int_equal(dt_allreduce(x, y, 5, DT_FLOAT32, DT_AVG), DT_OK);
    assert_memory_equal(x, y, sizeof x);
    assert_int_equal(dt_allreduce(x, x, 5, DT_FLOAT32, DT_SUM), DT_OK);
    assert_true(x[4] == 5.0f);
    int32_t g[3] = {7, 8, 9}, h[3] = {0};
    assert_int_equal(dt_allgather(g, h, 3, DT_INT32), DT_OK);
    assert_memory_equal(g, h, sizeof g);
    memset(h, 0, sizeof h);
    assert_int_equal(dt_reduce_scatter(g, h, 3, DT_INT32, DT_MAX), DT_OK);
    assert_memory_equal(g, h, sizeof g);
    assert_int_equal(dt_broadcast(g, 3, DT_INT32, 0), DT_OK);
    assert_int_equal(dt_broadcast(g, 3, DT_INT32, 1), DT_ERR_INVALID);
    assert_int_equal(dt_allreduce(x, y, 5, (dt_dtype_t)99, DT_SUM),
                     DT_ERR_INVALID);
    assert_int_equal(dt_allreduce(x, y, 5, DT_FLOAT32, (dt_redop_t)99),
                     DT_ERR_INVALID);
    /* NULL buffers: a status, not a crash (count 0 needs none) */
    assert_int_equal(dt_allreduce(NULL, y, 4, DT_FLOAT32, DT_SUM),
                     DT_ERR_INVALID);
    assert_int_equal(dt_allgather(g, NULL, 3, DT_INT32), DT_ERR_INVALID);
    assert_int_equal(dt_broadcast(NULL, 3, DT_INT32, 0), DT_ERR_INVALID);
    assert_int_equal(dt_allreduce(NULL, NULL, 0, DT_FLOAT32, DT_SUM), DT_OK);
    /* 16-bit host reductions, refused with one worker as with two */
    uint16_t hf[2] = {0x3c00, 0x3c00}, hg[2];
    assert_int_equal(dt_allreduce(hf, hg, 2, DT_FLOAT16, DT_SUM),
                     DT_ERR_UNSUPPORTED);
    assert_int_equal(dt_reduce_scatter(hf, hg, 2, DT_BFLOAT16, DT_SUM),
                     DT_ERR_UNSUPPORTED);
    assert_int_equal(dt_barrier(), DT_OK);
    assert_int_equal(dt_finalize(), DT_OK);
    assert_int_equal(dt_size(), -1);
    /* Again after finalize. */
    assert_int_equal(dt_init(), DT_OK);
    assert_int_equal(dt_finalize(), DT_OK);
    /* Once too often: refused, and said (not a silent -1). */
    capture_t c;
    capture_begin(&c);
    dt_status_t twice = dt_finalize();
    char *text = capture_end(&c);
    assert_int_equal(twice, DT_ERR_INVALID);
    assert_non_null(strstr(text, "dt_finalize: not in a job (dt_init was "
                                 "not called, or dt_finalize already was)"));
    free(text);
}

static void test_several_without_dtctl(void **state)
{
    (void)state;
    clear_job_env();
    setenv("DT_RANK", "0", 1);
    setenv("DT_WORLD_SIZE", "2", 1);
    /* No DT_RENDEZVOUS / DT_JOB_TOKEN: a clear error, not a hang. */
    assert_int_equal(dt_init(), DT_ERR_CONFIG);
    assert_int_equal(dt_rank(), -1);
    setenv("DT_RENDEZVOUS", "127.0.0.1:1", 1);
    setenv("DT_JOB_TOKEN", "not-hex", 1);
    assert_int_equal(dt_init(), DT_ERR_CONFIG);
    clear_job_env();
}

/* A transport that lacks ops the core calls is refused before anything
 * runs, and the message names each op it lacks. */
static void test_transport_without_required_ops(void **state)
{
    (void)state;
    clear_job_env();
    char dir[4096];
    const char *top = getenv("top_builddir");
    snprintf(dir, sizeof dir, "%s/tests/fixtures/.libs", top ? top : "..");
    setenv("DT_PLUGIN_PATH", dir, 1);
    setenv("DT_CLUSTER_TRANSPORT", "halfdone", 1);
    setenv("DT_RANK", "0", 1);
    setenv("DT_WORLD_SIZE", "2", 1);
    setenv("DT_RENDEZVOUS", "127.0.0.1:1", 1);
    /* A well-formed token: the refusal must come from the ops check. */
    setenv("DT_JOB_TOKEN",
           "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
           1);
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_init();
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_PLUGIN);
    assert_non_null(strstr(err, "transport plugin 'halfdone' lacks the "
                                "required ops test, fini"));
    free(err);
    unsetenv("DT_PLUGIN_PATH");
    unsetenv("DT_CLUSTER_TRANSPORT");
    clear_job_env();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_none),
        cmocka_unit_test(test_env_dtctl_wins),
        cmocka_unit_test(test_env_openmpi),
        cmocka_unit_test(test_env_slurm),
        cmocka_unit_test(test_env_errors),
        cmocka_unit_test(test_single_worker),
        cmocka_unit_test(test_several_without_dtctl),
        cmocka_unit_test(test_transport_without_required_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
