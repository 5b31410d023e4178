/* test_tcp.c — the tcp transport between real processes on loopback: the
 * parent runs the rendezvous store, N forked children load the plugin,
 * connect and run the core's collectives over it. Also: a worker with the
 * wrong job token is refused, and a worker killed in the middle of an
 * allreduce makes the others fail with an error naming it, never hang.
 * Setup survives strangers on a listener and a low open-file limit; a
 * stopped store does not stall training. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/auth.h>
#include <dt/clock.h>
#include <dt/config.h>
#include <dt/log.h>
#include <dt/store.h>
#include "coll/coll.h"
#include "plugin/plugin_loader.h"

#define MAX_N 8
/* A child that hangs is killed by this alarm, and the test fails. */
#define HANG_GUARD_S 60

enum { EXIT_OK = 0, EXIT_SETUP = 10, EXIT_WRONG = 11, EXIT_AUTH = 12,
       EXIT_PEER = 13, EXIT_OTHER = 14 };

typedef struct scenario {
    int n;
    const char *sockets_per_peer;
    const char *timeout;
    int bad_token_rank; /* this rank uses a wrong token (-1: none)    */
    int die_rank;       /* this rank dies mid-allreduce (-1: none)    */
    int (*body)(dt_comm_t *c, const struct scenario *sc);
    int stop_store;     /* the store stops once every rank is connected */
    const char *buffer_size; /* [transport.tcp] buffer_size (NULL: default) */
    int hosts;          /* ranks spread over this many hosts (0: one)     */
    int late_last_ms;   /* the last rank starts this much later           */
    int silent;         /* strangers connect to rank 0's listener and say
                           nothing, this many ...                          */
    int closing;        /* ... and this many connect and close at once    */
    int claimer;        /* before them: one that sends the last rank's
                           hello (channel 0) and never its proof          */
    int nofile;         /* > 0: soft open-file limit = open fds + this    */
    int nofile_hard;    /* > 0: hard limit = open fds + this (else soft)  */
    int stall_store;    /* the store (its own process) is SIGSTOPped while
                           the body runs; each rank then meets in a store
                           barrier on the handle the transport used       */
} scenario_t;

static uint8_t job_token[DT_TOKEN_BYTES];
static dt_store_t *child_store; /* the worker's own store connection */

static int status_exit(dt_status_t st)
{
    return st == DT_OK ? EXIT_OK
           : st == DT_ERR_AUTH ? EXIT_AUTH
           : st == DT_ERR_PEER ? EXIT_PEER
                               : EXIT_OTHER;
}

static float value(int r, size_t i)
{
    return (float)((long)((i * 5 + (size_t)r * 11) % 61) - 30);
}

/* Allreduce of several sizes, both algorithms, checked element-wise. */
static int check_allreduce(dt_comm_t *c, size_t count, int in_place)
{
    float *send = malloc(count * sizeof *send + 4);
    float *recv = malloc(count * sizeof *recv + 4);
    int rc = EXIT_OK;
    for (size_t i = 0; i < count; i++)
        send[i] = value(c->rank, i);
    if (in_place)
        memcpy(recv, send, count * sizeof *send);
    dt_status_t st = dt_coll_allreduce(c, in_place ? recv : send, recv,
                                       count, DT_FLOAT32, DT_SUM);
    if (st != DT_OK)
        rc = status_exit(st);
    for (size_t i = 0; rc == EXIT_OK && i < count; i++) {
        float want = 0;
        for (int r = 0; r < c->size; r++)
            want += value(r, i);
        if (recv[i] != want)
            rc = EXIT_WRONG;
    }
    free(send);
    free(recv);
    return rc;
}

static int body_correct(dt_comm_t *c, const scenario_t *sc)
{
    size_t counts[] = {0, 1, 7, 1000, 65537, (1u << 20) + 3};
    size_t smalls[] = {(size_t)-1, 1, 0}; /* small algo, ring, default */
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        for (size_t a = 0; a < 3; a++) {
            c->small_bytes = smalls[a];
            int rc = check_allreduce(c, counts[k], (int)(k + a) % 2);
            if (rc != EXIT_OK)
                return rc;
        }
    c->small_bytes = 0;
    /* Broadcast from the last rank, allgather, reduce-scatter, barrier. */
    size_t n = 300000;
    float *buf = malloc(n * (size_t)c->size * sizeof *buf);
    for (size_t i = 0; i < n; i++)
        buf[i] = c->rank == c->size - 1 ? value(7, i) : 0.0f;
    if (dt_coll_broadcast(c, buf, n, DT_FLOAT32, c->size - 1) != DT_OK)
        return EXIT_OTHER;
    for (size_t i = 0; i < n; i++)
        if (buf[i] != value(7, i))
            return EXIT_WRONG;
    float mine[5];
    for (size_t i = 0; i < 5; i++)
        mine[i] = value(c->rank, i);
    if (dt_coll_allgather(c, mine, buf, 5, DT_FLOAT32) != DT_OK)
        return EXIT_OTHER;
    for (int r = 0; r < c->size; r++)
        for (size_t i = 0; i < 5; i++)
            if (buf[(size_t)r * 5 + i] != value(r, i))
                return EXIT_WRONG;
    for (size_t i = 0; i < n * (size_t)c->size; i++)
        buf[i] = value(c->rank, i);
    if (dt_coll_reduce_scatter(c, buf, buf, n, DT_FLOAT32, DT_SUM) != DT_OK)
        return EXIT_OTHER;
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < c->size; r++)
            want += value(r, (size_t)c->rank * n + i);
        if (buf[i] != want)
            return EXIT_WRONG;
    }
    free(buf);
    /* Point-to-point out of order: tag 2 posted first, tag 1 sent first. */
    if (c->size >= 2 && c->rank < 2) {
        int peer = 1 - c->rank, a = 0, b = 0, one = 1, two = 2;
        dt_request_t *q[4];
        if (c->ops->irecv(c->ctx, peer, &b, sizeof b, DT_MEM_HOST, 2, &q[0]) ||
            c->ops->isend(c->ctx, peer, &one, sizeof one, DT_MEM_HOST, 1,
                          &q[1]) ||
            c->ops->isend(c->ctx, peer, &two, sizeof two, DT_MEM_HOST, 2,
                          &q[2]) ||
            c->ops->irecv(c->ctx, peer, &a, sizeof a, DT_MEM_HOST, 1, &q[3]) ||
            c->ops->wait(c->ctx, q, 4, -1))
            return EXIT_OTHER;
        if (a != 1 || b != 2)
            return EXIT_WRONG;
    }
    return dt_coll_barrier(c) == DT_OK ? EXIT_OK : EXIT_OTHER;
}

static void *killer(void *arg)
{
    usleep(3000);
    kill(getpid(), SIGKILL);
    return arg;
}

static int body_die(dt_comm_t *c, const scenario_t *sc)
{
    size_t count = 4u << 20;
    float *buf = calloc(count, sizeof *buf);
    for (int it = 0;; it++) {
        if (c->rank == sc->die_rank && it == 3) {
            /* Die during the 4th allreduce (the others are in it whenever
             * exactly the kill lands). */
            pthread_t th;
            pthread_create(&th, NULL, killer, NULL);
        }
        dt_status_t st = dt_coll_allreduce(c, buf, buf, count, DT_FLOAT32,
                                           DT_SUM);
        if (st != DT_OK) {
            free(buf);
            return status_exit(st);
        }
    }
}

/* Rank 1 is in the middle of a 64 MiB message from rank 0 when rank 2
 * dies; rank 0 sees it (its receive from rank 2 fails) and closes, so
 * rank 1 sees rank 0 close mid-payload: no abort header can reach it, and
 * only the store tells it that rank 2 is the cause. Should the message
 * finish first, rank 1 waits on rank 0 again and learns it at a message
 * boundary; either way it must name rank 2. */
static int body_mid_payload(dt_comm_t *c, const scenario_t *sc)
{
    const dt_transport_ops_t *o = c->ops;
    size_t big = 64u << 20;
    int small = 1, go = 2, got = 0;
    dt_request_t *q[3];
    dt_status_t st;
    char *buf = c->rank < 2 ? calloc(1, big) : NULL;
    if (c->rank == 0) {
        if (o->isend(c->ctx, 1, &small, sizeof small, DT_MEM_HOST, 1, &q[0]) ||
            o->isend(c->ctx, 1, buf, big, DT_MEM_HOST, 1, &q[1]) ||
            o->irecv(c->ctx, 2, &got, sizeof got, DT_MEM_HOST, 9, &q[2]))
            st = DT_ERR_INTERNAL;
        else
            st = o->wait(c->ctx, q, 3, -1);
    } else if (c->rank == 1) {
        st = o->irecv(c->ctx, 0, &got, sizeof got, DT_MEM_HOST, 1, &q[0]);
        if (st == DT_OK)
            st = o->wait(c->ctx, q, 1, -1);
        if (st == DT_OK &&
            !(st = o->isend(c->ctx, 2, &go, sizeof go, DT_MEM_HOST, 2, &q[0])) &&
            !(st = o->irecv(c->ctx, 0, buf, big, DT_MEM_HOST, 1, &q[1])))
            st = o->wait(c->ctx, q, 2, -1);
        if (st == DT_OK &&
            !(st = o->irecv(c->ctx, 0, &got, sizeof got, DT_MEM_HOST, 3, q)))
            st = o->wait(c->ctx, q, 1, -1);
    } else {
        st = o->irecv(c->ctx, 1, &got, sizeof got, DT_MEM_HOST, 2, &q[0]);
        if (st == DT_OK && (st = o->wait(c->ctx, q, 1, -1)) == DT_OK)
            kill(getpid(), SIGKILL);
    }
    free(buf);
    return st == DT_OK ? EXIT_WRONG : status_exit(st);
}

/* The store is gone (stopped once every rank connected) when rank 2 dies:
 * nobody can consult it, and still nobody hangs. */
static int body_die_storeless(dt_comm_t *c, const scenario_t *sc)
{
    if (c->rank == sc->die_rank) {
        void *v = NULL;
        size_t len = 0;
        dt_status_t st;
        while ((st = dt_store_get(child_store, "never-set", 0.05, &v,
                                  &len)) == DT_ERR_TIMEOUT)
            ;
        kill(getpid(), SIGKILL);
    }
    return body_die(c, sc);
}

/* Connected TCP sockets of this process whose receive buffer is at least
 * min_bytes (the kernel reports twice what was set; autotuning starts at
 * tcp_rmem's default, 128K, and grows only with traffic). */
static int big_buffer_sockets(int min_bytes)
{
    int count = 0;
    for (int fd = 0; fd < 1024; fd++) {
        int type = 0, buf = 0;
        socklen_t len = sizeof type;
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
            type != SOCK_STREAM ||
            getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
            continue;
        len = sizeof buf;
        if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, &len) == 0 &&
            buf >= min_bytes)
            count++;
    }
    return count;
}

/* buffer_size = auto: 2M (reported as 4M) on every peer connection when
 * all ranks share a host; kernel autotuning (small at first) otherwise. */
static int body_buffers(dt_comm_t *c, const scenario_t *sc)
{
    int big = big_buffer_sockets(4 << 20), want_big = sc->hosts <= 1;
    fprintf(stderr, "rank %d: %d sockets with >= 4M receive buffers\n",
            c->rank, big);
    if (want_big ? big < sc->n - 1 : big != 0)
        return EXIT_WRONG;
    return body_correct(c, sc);
}

static int body_init_only(dt_comm_t *c, const scenario_t *sc)
{
    return dt_coll_barrier(c) == DT_OK ? EXIT_OK : EXIT_OTHER;
}

/* Rank 1 comes 3 s late to each allreduce: rank 0's wait writes its wait
 * records while the store is stopped, and must not take much longer. */
static int body_slow_peer(dt_comm_t *c, const scenario_t *sc)
{
    for (int k = 0; k < 2; k++) {
        if (c->rank == 1)
            sleep(3);
        double t0 = dt_clock_now();
        int rc = check_allreduce(c, 1000, 0);
        double took = dt_clock_now() - t0;
        if (rc != EXIT_OK)
            return rc;
        /* stalled, it took the store's 60 s: a loaded machine's 3 s stays
         * far below 20 */
        if (took > 20.0) {
            fprintf(stderr, "allreduce %d took %.1f s (want about 3)\n", k,
                    took);
            return EXIT_WRONG;
        }
    }
    return EXIT_OK;
}

static int open_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1;
}

/* The scenario's open-file limits, relative to what is open now. */
static int limit_fds(const scenario_t *sc)
{
    if (sc->nofile <= 0)
        return 0;
    int open_now = open_fd_count();
    struct rlimit rl = {(rlim_t)(open_now + sc->nofile),
                        (rlim_t)(open_now + (sc->nofile_hard > 0
                                                 ? sc->nofile_hard
                                                 : sc->nofile))};
    return setrlimit(RLIMIT_NOFILE, &rl);
}

/* One worker: read the store port from the pipe, connect, run the body. */
static int child(int rank, int port_fd, int ready_fd, const scenario_t *sc)
{
    alarm(HANG_GUARD_S);
    char tag[32];
    snprintf(tag, sizeof tag, "[%d]", rank);
    dt_log_set_tag(tag);
    int port = 0;
    if (read(port_fd, &port, sizeof port) != sizeof port)
        return EXIT_SETUP;
    const dt_plugin_t *pl;
    dt_config_t *cfg = NULL;
    dt_store_t *store = NULL;
    if (dt_plugin_load(DT_KIND_TRANSPORT, "tcp", &pl, NULL) != DT_OK ||
        dt_config_new(&cfg) != DT_OK ||
        dt_config_add_schema(cfg, "transport.tcp", pl->keys) != DT_OK ||
        dt_config_set(cfg, "transport.tcp", "sockets_per_peer",
                      sc->sockets_per_peer, DT_SRC_CLI, "test") != DT_OK ||
        dt_config_set(cfg, "transport.tcp", "stripe_min", "64K", DT_SRC_CLI,
                      "test") != DT_OK ||
        dt_config_set(cfg, "transport.tcp", "timeout", sc->timeout,
                      DT_SRC_CLI, "test") != DT_OK ||
        (sc->buffer_size &&
         dt_config_set(cfg, "transport.tcp", "buffer_size", sc->buffer_size,
                       DT_SRC_CLI, "test") != DT_OK))
        return EXIT_SETUP;
    char hp[64];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", port);
    if (dt_store_connect(hp, job_token, 10.0, &store) != DT_OK)
        return EXIT_SETUP;
    child_store = store;
    uint8_t token[DT_TOKEN_BYTES];
    memcpy(token, job_token, sizeof token);
    if (rank == sc->bad_token_rank)
        token[0] ^= 1;
    const dt_transport_ops_t *ops = pl->ops;
    /* hosts > 1: pretend the ranks are spread (local ranks per host) */
    int per_host = sc->hosts > 1 ? (sc->n + sc->hosts - 1) / sc->hosts
                                 : sc->n;
    dt_transport_args_t args = {.rank = rank, .size = sc->n,
                                .local_rank = rank % per_host,
                                .local_size = per_host,
                                .store = store, .token = token,
                                .token_len = sizeof token,
                                .bind_addr = "127.0.0.1", .timeout = 0};
    void *ctx = NULL;
    if (rank == sc->n - 1 && sc->late_last_ms)
        usleep((useconds_t)sc->late_last_ms * 1000);
    if (limit_fds(sc) != 0)
        return EXIT_SETUP;
    dt_status_t st = ops->init(cfg, &args, &ctx);
    int rc = status_exit(st);
    int tell = sc->stop_store || sc->stall_store;
    if (st == DT_OK && tell && write(ready_fd, "", 1) != 1)
        rc = EXIT_SETUP;
    if (st == DT_OK && rc == EXIT_OK) {
        dt_comm_t c = {.ops = ops, .ctx = ctx, .rank = rank, .size = sc->n,
                       .timeout_ms = -1};
        rc = sc->body(&c, sc);
        /* The store comes back once every rank is through; a handle whose
         * request only timed out must work again (dt_finalize's barrier). */
        if (sc->stall_store && write(ready_fd, "", 1) == 1 &&
            dt_store_barrier(store, "test/fin", sc->n, 20.0) != DT_OK &&
            rc == EXIT_OK)
            rc = EXIT_OTHER;
        dt_comm_release(&c);
        ops->fini(ctx);
    }
    close(ready_fd);
    dt_store_close(store);
    dt_config_free(cfg);
    dt_plugins_unload_all();
    return rc;
}

typedef struct outcome {
    int exit_code[MAX_N]; /* -signal when killed */
    char log[MAX_N][8192];
} outcome_t;

/* The store in a process of its own (it can be stopped); its port. */
static pid_t store_process(int *port)
{
    int pp[2];
    assert_int_equal(pipe(pp), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dt_store_server_t *srv;
        close(pp[0]);
        if (dt_store_server_start("127.0.0.1", 0, job_token, &srv) != DT_OK)
            _exit(1);
        int p = dt_store_server_port(srv);
        if (write(pp[1], &p, sizeof p) != sizeof p)
            _exit(1);
        for (;;)
            pause(); /* until the test's SIGTERM */
    }
    close(pp[1]);
    assert_int_equal(read(pp[0], port, sizeof *port), sizeof *port);
    close(pp[0]);
    return pid;
}

/* Connect to rank 0's tcp listener (its address is in the store) from
 * outside the job: `silent` connections say nothing, `closing` ones close
 * at once. Returns how many silent ones are open in fds. */
static int strangers(const scenario_t *sc, int store_port, int *fds)
{
    dt_store_t *st = NULL;
    char hp[64], host[128];
    void *val = NULL;
    size_t len = 0;
    int lport = 0, n = 0;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", store_port);
    assert_int_equal(dt_store_connect(hp, job_token, 10.0, &st), DT_OK);
    assert_int_equal(dt_store_get(st, "tcp/1/addr/0", 10.0, &val, &len),
                     DT_OK);
    assert_int_equal(sscanf(val, "%127s %d", host, &lport), 2);
    free(val);
    dt_store_close(st);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)lport),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (sc->claimer) {
        /* A real rank's connector, stopped after its hello. */
        dt_auth_t au = {"tcp", job_token, DT_TOKEN_BYTES, sc->n - 1, sc->n,
                        30.0};
        dt_auth_connector_t *x = NULL;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        assert_int_equal(dt_auth_connector_new(fd, &au, 0, 0, &x), DT_OK);
        dt_auth_connector_free(x);
        fds[n++] = fd;
    }
    for (int i = 0; i < sc->silent + sc->closing; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        if (i < sc->silent)
            fds[n++] = fd;
        else
            close(fd);
    }
    return n;
}

static void run_scenario(const scenario_t *sc, outcome_t *out)
{
    pid_t pids[MAX_N];
    int pipes[MAX_N][2], logs[MAX_N], ready[2];
    fflush(NULL);
    assert_int_equal(pipe(ready), 0);
    for (int r = 0; r < sc->n; r++) {
        char path[] = "/tmp/dt-test-tcp-XXXXXX";
        logs[r] = mkstemp(path);
        assert_true(logs[r] >= 0);
        unlink(path);
        assert_int_equal(pipe(pipes[r]), 0);
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            dup2(logs[r], 2);
            close(pipes[r][1]);
            close(ready[0]);
            _exit(child(r, pipes[r][0], ready[1], sc));
        }
        close(pipes[r][0]);
    }
    close(ready[1]);
    dt_store_server_t *srv = NULL;
    pid_t store_pid = -1;
    int port = 0;
    if (sc->stall_store) {
        store_pid = store_process(&port);
    } else {
        assert_int_equal(
            dt_store_server_start("127.0.0.1", 0, job_token, &srv), DT_OK);
        port = dt_store_server_port(srv);
    }
    for (int r = 0; r < sc->n; r++) {
        assert_int_equal(write(pipes[r][1], &port, sizeof port),
                         sizeof port);
        close(pipes[r][1]);
    }
    int silent[64], nsilent = 0;
    if (sc->silent + sc->closing + sc->claimer > 0)
        nsilent = strangers(sc, port, silent);
    /* One byte per connected rank; EOF if they all exited before. */
    char b;
    int tell = sc->stop_store || sc->stall_store;
    for (int r = 0; tell && r < sc->n && read(ready[0], &b, 1) == 1; r++)
        ;
    if (sc->stop_store) {
        dt_store_server_stop(srv);
        srv = NULL;
    }
    if (sc->stall_store) {
        /* Stopped while the ranks train; back once each is through. */
        kill(store_pid, SIGSTOP);
        for (int r = 0; r < sc->n && read(ready[0], &b, 1) == 1; r++)
            ;
        kill(store_pid, SIGCONT);
    }
    close(ready[0]);
    for (int r = 0; r < sc->n; r++) {
        int status;
        assert_int_equal(waitpid(pids[r], &status, 0), pids[r]);
        out->exit_code[r] = WIFEXITED(status) ? WEXITSTATUS(status)
                                              : -WTERMSIG(status);
        ssize_t len = pread(logs[r], out->log[r], sizeof out->log[r] - 1, 0);
        out->log[r][len > 0 ? len : 0] = '\0';
        close(logs[r]);
    }
    for (int i = 0; i < nsilent; i++)
        close(silent[i]);
    if (srv)
        dt_store_server_stop(srv);
    if (store_pid > 0) {
        kill(store_pid, SIGCONT);
        kill(store_pid, SIGTERM);
        waitpid(store_pid, NULL, 0);
    }
}

static void expect_all_ok(const scenario_t *sc)
{
    outcome_t *out = calloc(1, sizeof *out);
    run_scenario(sc, out);
    for (int r = 0; r < sc->n; r++)
        if (out->exit_code[r] != EXIT_OK)
            for (int q = 0; q < sc->n; q++)
                fprintf(stderr, "rank %d exit %d:\n%s", q, out->exit_code[q], out->log[q]);
    for (int r = 0; r < sc->n; r++)
        if (out->exit_code[r] != EXIT_OK)
            fail_msg("n=%d sockets=%s: rank %d exit %d; its log:\n%s", sc->n,
                     sc->sockets_per_peer, r, out->exit_code[r],
                     out->log[r]);
    free(out);
}

static void test_collectives_over_tcp(void **state)
{
    for (int n = 1; n <= 4; n++) {
        scenario_t sc = {n, "1", "30s", -1, -1, body_correct, 0, NULL,
                         .hosts = 0};
        expect_all_ok(&sc);
    }
}

static void test_striped_sockets(void **state)
{
    scenario_t sc = {3, "3", "30s", -1, -1, body_correct, 0, NULL, .hosts = 0};
    expect_all_ok(&sc);
}

static void test_socket_buffers(void **state)
{
    scenario_t one_host = {3, "1", "30s", -1, -1, body_buffers, 0, NULL,
                           .hosts = 1};
    expect_all_ok(&one_host);
    /* autotuning across hosts, and when asked for */
    scenario_t hosts = {2, "1", "30s", -1, -1, body_buffers, 0, NULL,
                        .hosts = 2};
    expect_all_ok(&hosts);
    scenario_t zero = {3, "1", "30s", -1, -1, body_buffers, 0, "0", .hosts = 3};
    expect_all_ok(&zero);
}

static void test_wrong_token_refused(void **state)
{
    scenario_t sc = {2, "1", "3s", 1, -1, body_init_only, 0, NULL, .hosts = 0};
    outcome_t *out = calloc(1, sizeof *out);
    run_scenario(&sc, out);
    /* The impostor learns it was refused; rank 0 logs why, never admits
     * it, and gives up once the connection timeout passes. */
    assert_int_equal(out->exit_code[1], EXIT_AUTH);
    assert_int_not_equal(out->exit_code[0], EXIT_OK);
    assert_non_null(strstr(out->log[0], "wrong job token"));
    /* The impostor only sees the close: it says so, names the token as
     * one cause and sends the reader to rank 0's log for the real one. */
    assert_non_null(strstr(out->log[1], "closed the connection during "
                                        "authentication"));
    assert_non_null(strstr(out->log[1], "see rank 0's log"));
    free(out);
}

static int count_lines(const char *log, const char *what)
{
    int n = 0;
    for (const char *p = log; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* Strangers on rank 0's listener while rank 1 is late: silent ones must
 * not use up setup time (each cost up to 10 s, one after the other: 30 s
 * for three), and those that close are logged three times, then summed
 * up. */
static void test_strangers_do_not_stall_setup(void **state)
{
    scenario_t sc = {2, "2", "60s", -1, -1, body_init_only, 0, NULL, 0,
                     .late_last_ms = 1500, .silent = 3, .closing = 6};
    outcome_t *out = calloc(1, sizeof *out);
    double t0 = dt_clock_now();
    run_scenario(&sc, out);
    double took = dt_clock_now() - t0;
    for (int r = 0; r < 2; r++)
        if (out->exit_code[r] != EXIT_OK)
            fail_msg("rank %d: exit %d; its log:\n%s", r, out->exit_code[r],
                     out->log[r]);
    if (took > 20.0)
        fail_msg("setup took %.1f s (rank 1 came 1.5 s late; three silent "
                 "strangers one after the other cost 30)", took);
    if (count_lines(out->log[0], "dropped a connection from") != 3 ||
        !strstr(out->log[0], "dropped 3 more connections"))
        fail_msg("want 3 strangers logged, then one summary; log:\n%s",
                 out->log[0]);
    free(out);
}

/* A handshake dropped for room after its hello named a rank is that
 * rank's (its setup fails on the close), not a stranger's: rank 0's log
 * names the rank. The claimer comes first, so it is the oldest of the
 * 33 handshakes when the 33rd needs a slot: the one dropped. */
static void test_evicted_rank_not_a_stranger(void **state)
{
    scenario_t sc = {2, "1", "60s", -1, -1, body_init_only, 0, NULL, 0,
                     .late_last_ms = 4000, .claimer = 1, .silent = 32};
    outcome_t *out = calloc(1, sizeof *out);
    run_scenario(&sc, out);
    for (int r = 0; r < 2; r++)
        if (out->exit_code[r] != EXIT_OK)
            fail_msg("rank %d: exit %d; its log:\n%s", r, out->exit_code[r],
                     out->log[r]);
    if (!strstr(out->log[0], "dropped rank 1's connection from 127.0.0.1:") ||
        !strstr(out->log[0], "mid-handshake (its hello came, its proof not "
                             "yet): too many unauthenticated connections"))
        fail_msg("want the dropped handshake named as rank 1's; log:\n%s",
                 out->log[0]);
    free(out);
}

/* 3 ranks with 16 sockets per peer need 32 sockets each: a hard limit
 * below that fails setup at once, naming ulimit -n (no 100% CPU spin on
 * accept's EMFILE until the timeout, no blamed peers); a soft limit below
 * it is raised toward the hard one. */
static void test_fd_limit(void **state)
{
    scenario_t low = {3, "16", "60s", -1, -1, body_init_only, 0, NULL, 0,
                      .nofile = 20};
    outcome_t *out = calloc(1, sizeof *out);
    double t0 = dt_clock_now();
    run_scenario(&low, out);
    double took = dt_clock_now() - t0;
    for (int r = 0; r < 3; r++)
        if (out->exit_code[r] == EXIT_OK || !strstr(out->log[r], "ulimit -n"))
            fail_msg("rank %d: exit %d, want a failure naming ulimit -n; "
                     "log:\n%s",
                     r, out->exit_code[r], out->log[r]);
    if (took > 20.0) /* spinning on EMFILE, it waited out the 60 s */
        fail_msg("the failure took %.1f s: want it at once", took);
    scenario_t soft = {3, "16", "10s", -1, -1, body_correct, 0, NULL, 0,
                       .nofile = 20, .nofile_hard = 200};
    expect_all_ok(&soft);
    free(out);
}

/* The store stopped (SIGSTOP of dtctl) while rank 0 waits on a slow rank
 * 1: its wait records must give up within about a second, not stall the
 * allreduce for the store's 60 s, and once the store is back the same
 * handle works (dt_finalize's barrier). */
static void test_stopped_store_does_not_stall(void **state)
{
    scenario_t sc = {2, "1", "20s", -1, -1, body_slow_peer, 0, NULL, 0,
                     .stall_store = 1};
    expect_all_ok(&sc);
}

/* The rank rank's tcp error line names `dead` as the failed rank: every
 * such message starts with the culprit ("tcp: rank 1: rank 2 ..."). */
static int names_culprit(const char *log, int rank, int dead)
{
    const char *line = strstr(log, "the job cannot continue");
    if (!line)
        return 0;
    while (line > log && line[-1] != '\n')
        line--;
    char want[64];
    snprintf(want, sizeof want, "tcp: rank %d: rank %d ", rank, dead);
    const char *hit = strstr(line, want);
    return hit && hit < strchr(line, '\n');
}

static void test_dead_peer_named(void **state)
{
    /* A long timeout: the closed connection must be noticed at once. Rank
     * 2 dies; the others learn of it directly (its neighbours) or from a
     * rank that closed because of it, even one whose close lands in the
     * middle of a payload: every survivor must name rank 2, not the
     * messenger. */
    scenario_t sc = {4, "1", "40s", -1, 2, body_die, 0, NULL, .hosts = 0};
    outcome_t *out = calloc(1, sizeof *out);
    run_scenario(&sc, out);
    assert_int_equal(out->exit_code[2], -SIGKILL);
    for (int r = 0; r < 4; r++) {
        if (r == 2 ||
            (out->exit_code[r] == EXIT_PEER && names_culprit(out->log[r], r, 2)))
            continue;
        for (int q = 0; q < 4; q++)
            fprintf(stderr, "rank %d exit %d:\n%s", q, out->exit_code[q],
                    out->log[q]);
        fail_msg("rank %d: exit %d (want %d) and its error must name rank 2 "
                 "as the failed rank; log:\n%s",
                 r, out->exit_code[r], EXIT_PEER, out->log[r]);
    }
    free(out);
}

static void test_mid_payload_close_names_cause(void **state)
{
    scenario_t sc = {3, "1", "40s", -1, 2, body_mid_payload, 0, NULL,
                     .hosts = 0};
    outcome_t *out = calloc(1, sizeof *out);
    run_scenario(&sc, out);
    assert_int_equal(out->exit_code[2], -SIGKILL);
    for (int r = 0; r < 2; r++)
        if (out->exit_code[r] != EXIT_PEER || !names_culprit(out->log[r], r, 2))
            fail_msg("rank %d: exit %d (want %d) and its error must name "
                     "rank 2 as the failed rank; log:\n%s",
                     r, out->exit_code[r], EXIT_PEER, out->log[r]);
    free(out);
}

static void test_dead_peer_without_store(void **state)
{
    scenario_t sc = {4, "1", "40s", -1, 2, body_die_storeless, 1, NULL,
                     .hosts = 0};
    outcome_t *out = calloc(1, sizeof *out);
    run_scenario(&sc, out);
    assert_int_equal(out->exit_code[2], -SIGKILL);
    /* Without the store a rank may blame the messenger, but every one
     * fails at once with a peer error: none hangs until the alarm. */
    for (int r = 0; r < 4; r++)
        if (r != 2 && out->exit_code[r] != EXIT_PEER)
            fail_msg("rank %d: exit %d (want %d); log:\n%s", r,
                     out->exit_code[r], EXIT_PEER, out->log[r]);
    free(out);
}

int main(void)
{
    if (dt_token_generate(job_token) != DT_OK)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_over_tcp),
        cmocka_unit_test(test_striped_sockets),
        cmocka_unit_test(test_socket_buffers),
        cmocka_unit_test(test_wrong_token_refused),
        cmocka_unit_test(test_dead_peer_named),
        cmocka_unit_test(test_mid_payload_close_names_cause),
        cmocka_unit_test(test_dead_peer_without_store),
        cmocka_unit_test(test_strangers_do_not_stall_setup),
        cmocka_unit_test(test_evicted_rank_not_a_stranger),
        cmocka_unit_test(test_fd_limit),
        cmocka_unit_test(test_stopped_store_does_not_stall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
