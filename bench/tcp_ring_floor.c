/* tcp_ring_floor.c — how fast loopback TCP alone carries a ring
 * allreduce's traffic: N processes, each sending 2(N-1)/N of the vector to
 * the next and receiving as much from the previous one at the same time,
 * in 512 KiB writes over one connection, with 2 MiB socket buffers, each
 * process on CPU rank % CPUs. No reduction, no headers, no matching: any
 * allreduce that moves its data over loopback TCP (dt's tcp transport,
 * Gloo, Open MPI's TCP BTL) takes at least about this long.
 *
 *   tcp_ring_floor [-n N] [--sizes MIN:MAX] [--iters K] ...
 *
 * The options and the table are those of the allreduce benchmarks
 * (bench_args.h), so its rows line up with theirs; time is the slowest
 * rank's median, check counts received floats that are not the sender's. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"

#define PIECE (512u << 10)
#define SOCKBUF (2 << 20)
#define MAX_RANKS 64

typedef struct result {
    int size_index;
    long wrong;
    double median;
} result_t;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void tune(int fd)
{
    int one = 1, buf = SOCKBUF;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

/* Send len bytes on out while receiving len bytes on in. */
static int exchange(int out, int in, const char *src, char *dst, size_t len)
{
    size_t sent = 0, got = 0;
    while (sent < len || got < len) {
        if (sent < len) {
            size_t n = len - sent < PIECE ? len - sent : PIECE;
            ssize_t w = send(out, src + sent, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
        }
        if (got < len) {
            ssize_t r = recv(in, dst + got, len - got, MSG_DONTWAIT);
            if (r > 0)
                got += (size_t)r;
            else if (r == 0 || (errno != EAGAIN && errno != EINTR))
                return -1;
        }
        if (sent < len || got < len) {
            struct pollfd p[2] = {{in, got < len ? POLLIN : 0, 0},
                                  {out, sent < len ? POLLOUT : 0, 0}};
            poll(p, 2, 1000);
        }
    }
    return 0;
}

/* Ring traffic per rank for an allreduce of bytes: whole floats. */
static size_t ring_bytes(size_t bytes, int n)
{
    return bytes / sizeof(float) / (size_t)n * 2 * (size_t)(n - 1) *
           sizeof(float);
}

/* One rank: connect to the next one's listener, take the previous one's
 * connection, then every size; one result per size to result_fd. */
static int run_rank(int r, int n, const int *listeners,
                    const bench_args_t *a, int result_fd)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t m;
    CPU_ZERO(&m);
    CPU_SET(r % (cpus > 0 ? (int)cpus : 1), &m);
    sched_setaffinity(0, sizeof m, &m);
    struct sockaddr_in next;
    socklen_t alen = sizeof next;
    getsockname(listeners[(r + 1) % n], (struct sockaddr *)&next, &alen);
    int out = socket(AF_INET, SOCK_STREAM, 0);
    tune(out);
    if (connect(out, (struct sockaddr *)&next, sizeof next) != 0) {
        perror("tcp_ring_floor: connect");
        return 1;
    }
    int in = accept(listeners[r], NULL, NULL);
    if (in < 0) {
        perror("tcp_ring_floor: accept");
        return 1;
    }
    tune(in);
    size_t most = ring_bytes(a->max_bytes, n), count = most / sizeof(float);
    float *src = malloc(most + 1), *dst = malloc(most + 1);
    /* bench_iters_for runs at least 5, whatever --iters says */
    double *t = malloc((size_t)(a->iters < 5 ? 5 : a->iters) * sizeof *t);
    if (!src || !dst || !t)
        return 1;
    for (size_t i = 0; i < count; i++)
        src[i] = bench_input(r, i);
    int idx = 0;
    for (size_t b = a->min_bytes; b <= a->max_bytes;
         b *= (size_t)a->factor, idx++) {
        size_t len = ring_bytes(b, n);
        int iters = bench_iters_for(a, b);
        memset(dst, 0, len);
        for (int it = -a->warmup; it < iters; it++) {
            double t0 = now();
            if (exchange(out, in, (char *)src, (char *)dst, len) != 0) {
                fprintf(stderr, "tcp_ring_floor: rank %d: transfer failed\n",
                        r);
                return 1;
            }
            if (it >= 0)
                t[it] = now() - t0;
        }
        result_t res = {idx, 0, bench_median(t, iters)};
        for (size_t i = 0; i < len / sizeof(float); i++)
            res.wrong += dst[i] != bench_input((r + n - 1) % n, i);
        if (write(result_fd, &res, sizeof res) != (ssize_t)sizeof res)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int n = 4;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        n = atoi(argv[2]);
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    bench_args_t a;
    if (bench_parse_args(argc, argv, &a) != 0)
        return 2;
    if (a.allgather) {
        fprintf(stderr, "tcp_ring_floor: --op allgather is "
                        "dt_allreduce_bench's only\n");
        return 2;
    }
    if (n < 2 || n > MAX_RANKS) {
        fprintf(stderr, "tcp_ring_floor: -n takes 2 to %d ranks\n",
                MAX_RANKS);
        return 2;
    }
    int listeners[MAX_RANKS], res[2];
    if (pipe(res) != 0)
        return 1;
    for (int r = 0; r < n; r++) {
        struct sockaddr_in sa = {.sin_family = AF_INET};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        listeners[r] = socket(AF_INET, SOCK_STREAM, 0);
        tune(listeners[r]);
        if (bind(listeners[r], (struct sockaddr *)&sa, sizeof sa) != 0 ||
            listen(listeners[r], 1) != 0) {
            perror("tcp_ring_floor: listen");
            return 1;
        }
    }
    for (int r = 0; r < n; r++)
        if (fork() == 0)
            _exit(run_rank(r, n, listeners, &a, res[1]));
    close(res[1]);
    double median[64] = {0};
    long wrong[64] = {0};
    result_t got;
    while (read(res[0], &got, sizeof got) == (ssize_t)sizeof got)
        if (got.size_index >= 0 && got.size_index < 64) {
            if (got.median > median[got.size_index])
                median[got.size_index] = got.median;
            wrong[got.size_index] += got.wrong;
        }
    int failed = 0, status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed)
        return 1;
    bench_header("loopback TCP ring transfer (no reduction)", n, &a);
    int idx = 0;
    for (size_t b = a.min_bytes; b <= a.max_bytes && idx < 64;
         b *= (size_t)a.factor, idx++)
        bench_row(bench_shown_bytes(b, n, 0), median[idx], n, wrong[idx]);
    return 0;
}
