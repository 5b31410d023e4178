/* tcp_ring_floor.c — how fast loopback TCP alone carries a ring
 * allreduce's traffic: N processes, each sending 2(N-1)/N of S bytes to the
 * next and receiving as much from the previous one at the same time, in
 * 512 KiB writes over one connection, with 2 MiB socket buffers, each
 * process on CPU rank % CPUs. No reduction, no headers, no matching: any
 * allreduce that moves its data over loopback TCP (dt's tcp transport,
 * Gloo, Open MPI's TCP BTL) takes at least about this long.
 *
 *   tcp_ring_floor [-n N] [--bytes S] [--iters K]     (S: 64M default)
 *
 * Prints the median and best time of K transfers (the slowest rank's). */
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

#define PIECE (512u << 10)
#define SOCKBUF (2 << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
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

/* One rank: connect to the next one's listener, take the previous one's
 * connection, run iters transfers; writes the median and best (s). */
static int run_rank(int r, int n, const int *listeners, size_t len, int iters,
                    int result_fd)
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
    char *src = malloc(len), *dst = malloc(len);
    double *t = malloc((size_t)iters * sizeof *t);
    if (!src || !dst || !t)
        return 1;
    memset(src, r + 1, len);
    memset(dst, 0, len);
    for (int it = -2; it < iters; it++) { /* two warm-up transfers */
        double t0 = now();
        if (exchange(out, in, src, dst, len) != 0) {
            fprintf(stderr, "tcp_ring_floor: rank %d: transfer failed\n", r);
            return 1;
        }
        if (it >= 0)
            t[it] = now() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double res[2] = {t[iters / 2], t[0]};
    return write(result_fd, res, sizeof res) == (ssize_t)sizeof res ? 0 : 1;
}

int main(int argc, char **argv)
{
    int n = 4, iters = 20;
    double mib = 64;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
            char *end;
            mib = strtod(argv[++i], &end);
            if (*end == 'K' || *end == 'k')
                mib /= 1024;
            else if (*end == 'G' || *end == 'g')
                mib *= 1024;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [-n N] [--bytes S (e.g. 64M)] "
                            "[--iters K]\n", argv[0]);
            return 2;
        }
    }
    if (n < 2 || n > 64 || iters < 1 || iters > 10000 || mib <= 0) {
        fprintf(stderr, "tcp_ring_floor: need 2 <= N <= 64, 1 <= K <= "
                        "10000 and S > 0\n");
        return 2;
    }
    size_t bytes = (size_t)(mib * 1048576.0);
    size_t len = bytes / (size_t)n * 2 * (size_t)(n - 1);
    int listeners[64], res[2];
    if (pipe(res) != 0)
        return 1;
    for (int r = 0; r < n; r++) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        listeners[r] = socket(AF_INET, SOCK_STREAM, 0);
        tune(listeners[r]);
        if (bind(listeners[r], (struct sockaddr *)&a, sizeof a) != 0 ||
            listen(listeners[r], 1) != 0) {
            perror("tcp_ring_floor: listen");
            return 1;
        }
    }
    for (int r = 0; r < n; r++)
        if (fork() == 0)
            _exit(run_rank(r, n, listeners, len, iters, res[1]));
    close(res[1]);
    int failed = 0, status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    double med = 0, best = 0, got[2];
    while (read(res[0], got, sizeof got) == (ssize_t)sizeof got) {
        med = got[0] > med ? got[0] : med;
        best = got[1] > best ? got[1] : best;
    }
    if (failed)
        return 1;
    printf("# loopback TCP ring, N=%d: %zu bytes each way per rank (an "
           "allreduce of %zu bytes)\n", n, len, bytes);
    printf("median %.1f us, best %.1f us (slowest rank)\n", med * 1e6,
           best * 1e6);
    return 0;
}
