/* test_schedenv.c — the launchers' scheduler variables
 * (plugins/launcher/common/schedenv, mpi/mpi_env.c, slurm/slurm_env.c):
 * identify (what libdt asks when a plain mpirun or srun started the
 * program) on Open MPI's and Slurm's variables, Slurm's "2(x3),1" form,
 * the step's variables before the allocation's, refusals that name the
 * variables; and the rank prologue made from the same description, run
 * by a real /bin/sh on the same environments, agreeing with identify;
 * the slurm prologue's MASTER_ADDR/MASTER_PORT on a step of two nodes (a
 * stand-in environment); and, as this program links the launchers' common
 * libraries, the front-ends' death signal (spawn/guard.c): one SIGTERM
 * when a stand-in dtctl of several threads is SIGKILLed, none when only
 * the thread that started the front-end ends. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "../plugins/launcher/common/schedenv/schedenv.h"
#include "../plugins/launcher/common/spawn/spawn.h"
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

/* identity, then tail, run by /bin/sh with exactly envp: its stdout. */
static char *run_sh(const char *identity, const char *tail,
                    char *const *envp)
{
    char *script = NULL;
    assert_true(asprintf(&script, "%s%s", identity, tail) > 0);
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

/* The identity part of the prologue, run by /bin/sh with exactly envp:
 * what it exports, one line. */
static char *run_prologue(const char *identity, char *const *envp)
{
    return run_sh(identity,
                  "printf '%s|' \"$DT_RANK\" \"$DT_WORLD_SIZE\" "
                  "\"$DT_LOCAL_RANK\" \"$DT_LOCAL_SIZE\" \"$DT_NODE_RANK\" "
                  "\"$DT_NUM_NODES\" \"$DT_HOST\" \"$RANK\" "
                  "\"$LOCAL_WORLD_SIZE\" \"$DT_PLACEMENT_HOSTS\"\n"
                  "env | grep -c '^DT_RANK=' >/dev/null || "
                  "echo not-exported\n",
                  envp);
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
    assert_int_equal(slurm_prologue_identity(1, &slurm), DT_OK);
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

/* MASTER_ADDR and MASTER_PORT as the slurm prologue exports them to the
 * program: "ADDR|PORT". */
static const char *slurm_master(int derive_port, char *const *envp)
{
    char *id = NULL;
    assert_int_equal(slurm_prologue_identity(derive_port, &id), DT_OK);
    const char *out = run_sh(id,
                             "exec /bin/sh -c 'printf \"%s|%s\" "
                             "\"$MASTER_ADDR\" \"$MASTER_PORT\"'\n",
                             envp);
    free(id);
    return out;
}

/* A STAND-IN for a two-node allocation (there is one node here): the
 * variables srun gives the rank on the second node. dtctl set MASTER_ADDR
 * from its own host list, which Slurm ignores (127.0.0.1, and a port that
 * was free on dtctl's machine); rank 0 runs on the step's first node. */
static void test_slurm_master(void **state)
{
    (void)state;
    char list[128] = "SLURM_STEP_NODELIST=nodeA,nodeB";
    char *two[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0",
                   "SLURM_NODEID=1", "SLURM_STEP_NUM_NODES=2",
                   "SLURM_STEP_TASKS_PER_NODE=1(x2)", list,
                   "SLURM_JOB_NODELIST=big[0-7]", "SLURMD_NODENAME=nodeB",
                   "SLURM_JOB_ID=1234", "SLURM_STEP_ID=3",
                   "MASTER_ADDR=127.0.0.1", "MASTER_PORT=41234",
                   "PATH=/nonexistent", NULL};
    char want[64];
    int port = SLURM_MASTER_PORT_BASE +
               (1234 * 31 + 3) % SLURM_MASTER_PORT_RANGE;
    snprintf(want, sizeof want, "nodeA|%d", port);
    assert_string_equal(slurm_master(1, two), want);
    /* Rank 0, on nodeA, agrees. */
    two[0] = "SLURM_PROCID=0";
    two[3] = "SLURM_NODEID=0";
    two[8] = "SLURMD_NODENAME=nodeA";
    assert_string_equal(slurm_master(1, two), want);
    /* [cluster] master_port set: the address changes, the port stays. */
    assert_string_equal(slurm_master(0, two), "nodeA|41234");
    /* No job id to derive one from: dtctl's port. */
    two[9] = "SLURM_JOB_ID=";
    assert_string_equal(slurm_master(1, two), "nodeA|41234");
    two[9] = "SLURM_JOB_ID=1234";

    /* Slurm's compressed lists: the first host. */
    static const char *const forms[][2] = {
        {"node[1-3],other", "node1"},    {"other,node[1-3]", "other"},
        {"gpu[07,09-10]", "gpu07"},      {"n[1-2]-ib", "n1-ib"},
        {"rack[1-2]-n[3-4],z", "rack1-n3"}, {"", "big0"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(list, sizeof list, "SLURM_STEP_NODELIST=%s", forms[i][0]);
        snprintf(want, sizeof want, "%s|41234", forms[i][1]);
        assert_string_equal(slurm_master(0, two), want);
    }

    /* A list the prologue cannot read: scontrol's first name, and dtctl's
     * when there is no scontrol either. */
    char dir[] = "/tmp/dt-schedenv-XXXXXX", path[256], tool[256];
    assert_non_null(mkdtemp(dir));
    snprintf(tool, sizeof tool, "%s/scontrol", dir);
    FILE *f = fopen(tool, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n[ \"$*\" = 'show hostnames odd[1-2' ] && "
          "printf 'first\\nsecond\\n'\n", f);
    fclose(f);
    assert_int_equal(chmod(tool, 0755), 0);
    snprintf(list, sizeof list, "SLURM_STEP_NODELIST=odd[1-2");
    assert_string_equal(slurm_master(0, two), "127.0.0.1|41234");
    snprintf(path, sizeof path, "PATH=%s", dir);
    two[13] = path;
    assert_string_equal(slurm_master(0, two), "first|41234");
    unlink(tool);
    rmdir(dir);

    /* One node: dtctl's 127.0.0.1 and port are right there. */
    two[4] = "SLURM_STEP_NUM_NODES=1";
    two[5] = "SLURM_STEP_TASKS_PER_NODE=2";
    snprintf(list, sizeof list, "SLURM_STEP_NODELIST=nodeA");
    assert_string_equal(slurm_master(1, two), "127.0.0.1|41234");
}

/* ---- the front-ends' death signal (plugins/launcher/common/spawn) -------
 * Here because this program links the launchers' common libraries: the
 * path mpirun, salloc and srun are started by. A stand-in front-end counts
 * the SIGTERMs it gets. */

/* sh that appends a line to $0 for each SIGTERM, until $0.stop exists. */
static const char counter_sh[] =
    "trap 'echo TERM >>\"$0\"' TERM; echo up >\"$0.up\"\n"
    "while [ ! -e \"$0.stop\" ]; do sleep 0.02; done";

static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

typedef struct spawner {
    const char *file;
    int out;      /* pipe: the child's and the guard's pid */
} spawner_t;

static void *spawn_thread(void *arg)
{
    spawner_t *a = arg;
    const char *argv[] = {"sh", "-c", counter_sh, a->file, NULL};
    extern char **environ;
    spawn_req_t req = {argv, environ, NULL, 0, 0, SIGTERM, 0,
                       SPAWN_STDIN_NULL, 0};
    spawn_child_t child;
    char why[256];
    pid_t pids[2] = {0, 0};
    if (spawn_start(&req, &child, why, sizeof why) == DT_OK) {
        pids[0] = child.pid;
        pids[1] = child.guard;
    }
    ssize_t w = write(a->out, pids, sizeof pids);
    (void)w;
    return NULL; /* this thread ends: the child's parent thread is gone */
}

/* A stand-in dtctl (a process of several threads) that starts the child
 * from a thread that then ends, and lives on. */
static pid_t start_stand_in_dtctl(const char *file, pid_t pids[2])
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t d = fork();
    assert_true(d >= 0);
    if (d == 0) {
        pthread_t t;
        spawner_t a = {file, p[1]};
        for (int i = 0; i < 3; i++)
            if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                _exit(1);
        if (pthread_create(&t, NULL, spawn_thread, &a) != 0 ||
            pthread_join(t, NULL) != 0)
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    assert_int_equal(read(p[0], pids, 2 * sizeof *pids),
                     (ssize_t)(2 * sizeof *pids));
    close(p[0]);
    return d;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

/* pid exists and is no zombie. */
static int running(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z';
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Reap pid (ours as subreaper) within ms, SIGKILLed after; its status. */
static int reap_within(pid_t pid, long ms)
{
    int status = -1;
    for (long t = 0; pid > 0 && t < ms; t += 20) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        sleep_ms(20);
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    return status;
}

static void test_death_signal_once(void **state)
{
    (void)state;
    char dir[] = "/tmp/dt-guard-XXXXXX", file[64], up[80], stop[80];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/terms", dir);
    snprintf(up, sizeof up, "%s.up", file);
    snprintf(stop, sizeof stop, "%s.stop", file);
    /* orphans (the stand-in front-end, its guard) come back to us */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    pid_t pids[2];
    pid_t d = start_stand_in_dtctl(file, pids);
    for (int i = 0; i < 250 && pids[0] > 0 && access(up, F_OK) != 0; i++)
        sleep_ms(20);
    /* The thread that started it ended; the process lives: no signal. */
    sleep_ms(300);
    int alive = pids[0] > 0 && running(pids[0]);
    int early = count_lines(file);
    /* "dtctl" killed outright: one SIGTERM, not one per thread. */
    kill(d, SIGKILL);
    waitpid(d, NULL, 0);
    for (int i = 0; i < 250 && alive && count_lines(file) == 0; i++)
        sleep_ms(20);
    sleep_ms(300); /* time for a second one to arrive */
    int terms = count_lines(file);
    FILE *f = fopen(stop, "w");
    if (f)
        fclose(f);
    reap_within(pids[0], 2000);
    reap_within(pids[1], 2000);
    unlink(file);
    unlink(up);
    unlink(stop);
    rmdir(dir);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    assert_true(pids[0] > 0 && pids[1] > 0); /* started, with a guard */
    assert_true(alive); /* not stopped when only its thread ended */
    assert_int_equal(early, 0);
    assert_int_equal(terms, 1);
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
        cmocka_unit_test(test_slurm_master),
        cmocka_unit_test(test_death_signal_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
