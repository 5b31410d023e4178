/* test_schedenv.c — the launchers' scheduler variables
 * (plugins/launcher/common/schedenv, mpi/mpi_env.c, slurm/slurm_env.c):
 * identify (what libdt asks when a plain mpirun or srun started the
 * program) on Open MPI's and Slurm's variables, Slurm's "2(x3),1" form,
 * the step's variables before the allocation's, refusals that name the
 * variables; and the rank prologue made from the same description, run
 * by a real /bin/sh on the same environments, agreeing with identify. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "../plugins/launcher/common/schedenv/schedenv.h"
#include "../plugins/launcher/mpi/mpi_env.h"
#include "../plugins/launcher/slurm/slurm_env.h"

typedef dt_status_t (*identify_fn)(char *const *, dt_worker_identity_t *,
                                   char *, size_t);

static char why[512];

static dt_status_t ident(identify_fn f, char *const *envp,
                         dt_worker_identity_t *id)
{
    memset(id, 0x5a, sizeof *id);
    why[0] = '\0';
    return f(envp, id, why, sizeof why);
}

static void test_slurm(void **state)
{
    (void)state;
    dt_worker_identity_t id;
    /* Nodes 0-2 run 2 tasks, node 3 runs 1: this is node 3. */
    char *envp[] = {"SLURM_PROCID=6", "SLURM_NTASKS=7", "SLURM_LOCALID=0",
                    "SLURM_NODEID=3", "SLURM_TASKS_PER_NODE=2(x3),1", NULL};
    assert_int_equal(ident(slurm_identify, envp, &id), DT_OK);
    assert_int_equal(id.rank, 6);
    assert_int_equal(id.size, 7);
    assert_int_equal(id.local_rank, 0);
    assert_int_equal(id.local_size, 1);
    assert_int_equal(id.node_rank, 3);
    assert_int_equal(id.num_nodes, -1);
    assert_int_equal(id.precedence, 0);
    assert_string_equal(id.source, "Slurm");
    char *envp2[] = {"SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1",
                     "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2(x2)",
                     "SLURM_NNODES=2", NULL};
    assert_int_equal(ident(slurm_identify, envp2, &id), DT_OK);
    assert_int_equal(id.local_rank, 1);
    assert_int_equal(id.local_size, 2);
    assert_int_equal(id.num_nodes, 2);
    /* A step smaller than its allocation: the step's variables count. */
    char *step[] = {"SLURM_PROCID=1", "SLURM_NTASKS=8",
                    "SLURM_STEP_NUM_TASKS=2", "SLURM_LOCALID=0",
                    "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=4(x2)",
                    "SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURM_NNODES=2",
                    "SLURM_STEP_NUM_NODES=2", NULL};
    assert_int_equal(ident(slurm_identify, step, &id), DT_OK);
    assert_int_equal(id.rank, 1);
    assert_int_equal(id.size, 2);
    assert_int_equal(id.local_size, 1);
    /* Only the rank and the size: one task per node. */
    char *bare[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", NULL};
    assert_int_equal(ident(slurm_identify, bare, &id), DT_OK);
    assert_int_equal(id.local_size, 1);
    assert_int_equal(id.node_rank, -1);
}

static void test_openmpi(void **state)
{
    (void)state;
    dt_worker_identity_t id;
    char *envp[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                    "OMPI_COMM_WORLD_LOCAL_RANK=1",
                    "OMPI_COMM_WORLD_LOCAL_SIZE=4", "SLURM_PROCID=2", NULL};
    assert_int_equal(ident(mpi_identify, envp, &id), DT_OK);
    assert_int_equal(id.rank, 5);
    assert_int_equal(id.size, 8);
    assert_int_equal(id.local_rank, 1);
    assert_int_equal(id.local_size, 4);
    assert_int_equal(id.node_rank, -1);
    assert_string_equal(id.source, "Open MPI");
    /* mpirun inside a Slurm job: Open MPI's claim must win. */
    assert_true(id.precedence > 0);
}

static void test_not_theirs(void **state)
{
    (void)state;
    dt_worker_identity_t id;
    char *none[] = {"PATH=/bin", "DT_WORLD_SIZE=2", "SLURM_NTASKS=2",
                    "SLURM_PROCID=", NULL};
    assert_int_equal(ident(slurm_identify, none, &id), DT_ERR_NOT_FOUND);
    assert_int_equal(ident(mpi_identify, none, &id), DT_ERR_NOT_FOUND);
    char *empty[] = {NULL};
    assert_int_equal(ident(mpi_identify, empty, &id), DT_ERR_NOT_FOUND);
}

static void test_refusals(void **state)
{
    (void)state;
    dt_worker_identity_t id;
    char *no_size[] = {"SLURM_PROCID=0", NULL};
    assert_int_equal(ident(slurm_identify, no_size, &id), DT_ERR_CONFIG);
    assert_non_null(strstr(why, "SLURM_PROCID is set but not "
                                "SLURM_STEP_NUM_TASKS or SLURM_NTASKS"));
    char *not_number[] = {"OMPI_COMM_WORLD_RANK=one",
                          "OMPI_COMM_WORLD_SIZE=2", NULL};
    assert_int_equal(ident(mpi_identify, not_number, &id), DT_ERR_CONFIG);
    assert_string_equal(why, "OMPI_COMM_WORLD_RANK='one' is not a worker "
                             "number");
    char *out_of_range[] = {"OMPI_COMM_WORLD_RANK=4",
                            "OMPI_COMM_WORLD_SIZE=4", NULL};
    assert_int_equal(ident(mpi_identify, out_of_range, &id), DT_ERR_CONFIG);
    assert_non_null(strstr(why, "inconsistent worker numbers from Open MPI"));
    assert_non_null(strstr(why, "OMPI_COMM_WORLD_RANK=4"));
    assert_non_null(strstr(why, "OMPI_COMM_WORLD_SIZE=4"));
    char *bad_local[] = {"SLURM_PROCID=1", "SLURM_NTASKS=4",
                         "SLURM_LOCALID=2", "SLURM_TASKS_PER_NODE=2(x2)",
                         NULL};
    assert_int_equal(ident(slurm_identify, bad_local, &id), DT_ERR_CONFIG);
    assert_non_null(strstr(why, "SLURM_LOCALID=2"));
    assert_non_null(strstr(why, "SLURM_TASKS_PER_NODE=2(x2)"));
    assert_non_null(strstr(why, "local rank 2 of 2"));
    char *bad_slurm[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_NODEID=5",
                         "SLURM_TASKS_PER_NODE=2", NULL};
    assert_int_equal(ident(slurm_identify, bad_slurm, &id), DT_ERR_CONFIG);
    assert_string_equal(why, "SLURM_TASKS_PER_NODE='2' has no entry for node "
                             "5 (SLURM_NODEID)");
}

static void test_tasks_on_node(void **state)
{
    (void)state;
    assert_int_equal(schedenv_tasks_on_node("2(x3),1", 0), 2);
    assert_int_equal(schedenv_tasks_on_node("2(x3),1", 2), 2);
    assert_int_equal(schedenv_tasks_on_node("2(x3),1", 3), 1);
    assert_int_equal(schedenv_tasks_on_node("2(x3),1", 4), -1);
    assert_int_equal(schedenv_tasks_on_node("1,3(x2)", 2), 3);
    assert_int_equal(schedenv_tasks_on_node("4", 0), 4);
    assert_int_equal(schedenv_tasks_on_node("2(x", 0), -1);
    assert_int_equal(schedenv_tasks_on_node("0", 0), -1);
    assert_int_equal(schedenv_tasks_on_node("2x", 0), -1);
    assert_int_equal(schedenv_tasks_on_node("", 0), -1);
}

/* The identity part of the prologue, run by /bin/sh with exactly envp:
 * what it exports, one line. */
static char *run_prologue(const char *identity, char *const *envp)
{
    char *script = NULL;
    assert_true(asprintf(&script, "%s"
                                  "printf '%%s|' \"$DT_RANK\" "
                                  "\"$DT_WORLD_SIZE\" \"$DT_LOCAL_RANK\" "
                                  "\"$DT_LOCAL_SIZE\" \"$DT_NODE_RANK\" "
                                  "\"$DT_NUM_NODES\" \"$DT_HOST\" \"$RANK\" "
                                  "\"$LOCAL_WORLD_SIZE\" "
                                  "\"$DT_PLACEMENT_HOSTS\"\n"
                                  "env | grep -c '^DT_RANK=' >/dev/null || "
                                  "echo not-exported\n",
                         identity) > 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        char *argv[] = {"sh", "-c", script, NULL};
        execve("/bin/sh", argv, envp);
        _exit(127);
    }
    close(p[1]);
    static char out[1024];
    size_t n = 0;
    ssize_t r;
    while ((r = read(p[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(p[0]);
    int status;
    waitpid(pid, &status, 0);
    free(script);
    return out;
}

/* identify and the prologue agree on envp: rank, size, local rank and
 * size, node (or the prologue's own when identify has none). */
static void agree(identify_fn f, const char *identity, char *const *envp,
                  const char *node, const char *expect_tail)
{
    dt_worker_identity_t id;
    assert_int_equal(ident(f, envp, &id), DT_OK);
    char want[512];
    char nr[16] = "", nn[16] = "";
    if (id.node_rank >= 0)
        snprintf(nr, sizeof nr, "%d", id.node_rank);
    if (id.num_nodes >= 0)
        snprintf(nn, sizeof nn, "%d", id.num_nodes);
    snprintf(want, sizeof want, "%d|%d|%d|%d|%s|%s|%s", id.rank, id.size,
             id.local_rank, id.local_size, node ? node : nr, nn,
             expect_tail);
    assert_string_equal(run_prologue(identity, envp), want);
}

static void test_prologue_agrees(void **state)
{
    (void)state;
    char *slurm = NULL, *ompi = NULL;
    assert_int_equal(slurm_prologue_identity(&slurm), DT_OK);
    assert_int_equal(mpi_prologue_identity(&ompi), DT_OK);

    char *s1[] = {"SLURM_PROCID=6", "SLURM_NTASKS=7", "SLURM_LOCALID=0",
                  "SLURM_NODEID=3", "SLURM_TASKS_PER_NODE=2(x3),1",
                  "SLURM_NNODES=4", "SLURMD_NODENAME=n3", NULL};
    agree(slurm_identify, slurm, s1, NULL, "n3|6|1||");
    char *s2[] = {"SLURM_PROCID=3", "SLURM_NTASKS=8",
                  "SLURM_STEP_NUM_TASKS=4", "SLURM_LOCALID=1",
                  "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=4(x2)",
                  "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_NNODES=3",
                  "SLURM_STEP_NUM_NODES=2", "SLURMD_NODENAME=n1", NULL};
    agree(slurm_identify, slurm, s2, NULL, "n1|3|2||");
    char *s3[] = {"SLURM_PROCID=2", "SLURM_NTASKS=5", "SLURM_LOCALID=0",
                  "SLURM_NODEID=2", "SLURM_TASKS_PER_NODE=1,3(x2)",
                  "SLURMD_NODENAME=c", "DT_WORLD_SIZE=5", NULL};
    agree(slurm_identify, slurm, s3, NULL, "c|2|3||");

    char *o1[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                  "OMPI_COMM_WORLD_LOCAL_RANK=1",
                  "OMPI_COMM_WORLD_LOCAL_SIZE=4", "PMIX_HOSTNAME=h9",
                  "SLURM_PROCID=0", NULL};
    agree(mpi_identify, ompi, o1, "", "h9|5|4||");
    /* With dtctl's placement: ranks 0-3 on a, 4-7 on b. */
    char *o2[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                  "OMPI_COMM_WORLD_LOCAL_RANK=1",
                  "OMPI_COMM_WORLD_LOCAL_SIZE=4", "PMIX_HOSTNAME=h9",
                  "DT_PLACEMENT_FIRST_RANKS=0 4", "DT_PLACEMENT_HOSTS=a b",
                  "DT_NODE_RANK=7", NULL};
    agree(mpi_identify, ompi, o2, "1", "b|5|4||");
    free(slurm);
    free(ompi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_openmpi),
        cmocka_unit_test(test_not_theirs),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_tasks_on_node),
        cmocka_unit_test(test_prologue_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
