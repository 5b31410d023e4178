/* tcp_wireup.c — connect every pair of ranks: each rank listens, publishes
 * "host port" in the store, connects to every lower rank and accepts every
 * higher one. Rank r only waits on lower ranks, which reach their accept
 * phase without waiting on r, so the mesh always completes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/auth.h>
#include <dt/clock.h>
#include <dt/log.h>
#include <dt/store.h>
#include "tcp.h"

static void tune_socket(const tcp_ctx_t *c, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c->bufsize > 0) {
        int b = c->bufsize > (1u << 30) ? 1 << 30 : (int)c->bufsize;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
    }
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Listen on bind_addr (any address when NULL) and the configured port. */
static dt_status_t open_listener(tcp_ctx_t *c, const char *bind_addr,
                                 int *lfd, int *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", c->listen_port);
    int rc = getaddrinfo(bind_addr, portstr, &hints, &res);
    if (rc != 0) {
        dt_error("tcp: rank %d: cannot resolve the address to listen on "
                 "'%s': %s; check [cluster] interface / DT_INTERFACE",
                 c->rank, bind_addr ? bind_addr : "*", gai_strerror(rc));
        return DT_ERR_CONFIG;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        tune_socket(c, fd);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            listen(fd, 1024) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        dt_error("tcp: rank %d: cannot listen on %s port %d: %s; choose "
                 "another [transport.tcp] listen_port (0: any free port)",
                 c->rank, bind_addr ? bind_addr : "*", c->listen_port,
                 strerror(err));
        return DT_ERR_IO;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6
                      ? ((struct sockaddr_in6 *)&ss)->sin6_port
                      : ((struct sockaddr_in *)&ss)->sin_port);
    set_nonblock(fd);
    *lfd = fd;
    return DT_OK;
}

/* Non-blocking connect to host:port, retried until the deadline. */
static dt_status_t connect_to(tcp_ctx_t *c, const char *host,
                              const char *port, int peer, double deadline,
                              int *out)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        dt_error("tcp: rank %d: cannot resolve rank %d's address %s: %s",
                 c->rank, peer, host, gai_strerror(rc));
        return DT_ERR_PEER;
    }
    int err = ETIMEDOUT;
    do {
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = socket(ai->ai_family,
                            ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0)
                continue;
            tune_socket(c, fd);
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
                errno == EINPROGRESS) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int soerr = ETIMEDOUT;
                socklen_t sl = sizeof soerr;
                if (poll(&p, 1, tcp_ms_until(deadline)) == 1)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                if (soerr == 0) {
                    freeaddrinfo(res);
                    *out = fd;
                    return DT_OK;
                }
                err = soerr;
            } else {
                err = errno;
            }
            close(fd);
        }
        if (dt_clock_now() < deadline)
            usleep(50000);
    } while (dt_clock_now() < deadline);
    freeaddrinfo(res);
    dt_error("tcp: rank %d: cannot connect to rank %d at %s:%s: %s; is the "
             "port blocked by a firewall, or did rank %d exit?",
             c->rank, peer, host, port, strerror(err), peer);
    return DT_ERR_PEER;
}

static void attach(tcp_ctx_t *c, int peer, int idx, int fd)
{
    tcp_sock_t *s = &c->peers[peer].socks[idx];
    tcp_peer_t *pe = &c->peers[peer];
    if (strcmp(pe->addr, "?") == 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        char host[NI_MAXHOST] = "?";
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
            getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, NULL,
                        0, NI_NUMERICHOST);
        snprintf(pe->addr, sizeof pe->addr, "%s", host);
    }
    set_nonblock(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->fd = fd;
}

static dt_status_t connect_lower(tcp_ctx_t *c, const dt_transport_args_t *a,
                                 long long epoch, double deadline)
{
    for (int p = 0; p < c->rank; p++) {
        char key[64];
        void *val = NULL;
        size_t len = 0;
        snprintf(key, sizeof key, "tcp/%lld/addr/%d", epoch, p);
        dt_status_t st = dt_store_get(a->store, key, deadline - dt_clock_now(),
                                      &val, &len);
        if (st != DT_OK) {
            dt_error("tcp: rank %d: rank %d never published its address in "
                     "the store (%s); did it start?",
                     c->rank, p, dt_status_str(st));
            return st == DT_ERR_TIMEOUT ? DT_ERR_PEER : st;
        }
        char host[128] = "", port[16] = "";
        char *text = calloc(1, len + 1);
        if (text) {
            memcpy(text, val, len);
            sscanf(text, "%127s %15s", host, port);
        }
        free(text);
        free(val);
        snprintf(c->peers[p].addr, sizeof c->peers[p].addr, "%s:%s", host,
                 port);
        for (int i = 0; i < c->nsock; i++) {
            int fd;
            DT_CHECK(connect_to(c, host, port, p, deadline, &fd));
            /* dt/auth.h logs a failure itself, naming both ranks. */
            dt_auth_t au = {"tcp", a->token, a->token_len, c->rank, c->size,
                            deadline - dt_clock_now()};
            st = au.timeout > 0 ? dt_auth_connect(fd, &au, p, (uint32_t)i)
                                : DT_ERR_TIMEOUT;
            if (st != DT_OK) {
                if (au.timeout <= 0)
                    dt_error("tcp: rank %d: no time left to authenticate "
                             "with rank %d at %s",
                             c->rank, p, c->peers[p].addr);
                close(fd);
                return st == DT_ERR_AUTH ? st : DT_ERR_PEER;
            }
            attach(c, p, i, fd);
        }
    }
    return DT_OK;
}

static dt_status_t accept_higher(tcp_ctx_t *c, const dt_transport_args_t *a,
                                 int lfd, double deadline)
{
    int want = (c->size - 1 - c->rank) * c->nsock, got = 0;
    while (got < want) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int ms = tcp_ms_until(deadline);
        if (ms == 0 || poll(&p, 1, ms) == 0) {
            char missing[256] = "";
            size_t off = 0;
            for (int q = c->rank + 1; q < c->size && off < 200; q++)
                for (int i = 0; i < c->nsock; i++)
                    if (c->peers[q].socks[i].fd < 0) {
                        off += (size_t)snprintf(missing + off,
                                                sizeof missing - off, " %d",
                                                q);
                        break;
                    }
            dt_error("tcp: rank %d: timed out waiting for ranks%s to "
                     "connect; they may have failed to start (see their "
                     "log lines) or cannot reach this host",
                     c->rank, missing);
            return DT_ERR_PEER;
        }
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        int peer = -1;
        uint32_t idx = 0;
        /* One slow or hostile client must not stall the mesh for long. */
        double left = deadline - dt_clock_now();
        dt_auth_t au = {"tcp", a->token, a->token_len, c->rank, c->size,
                        left > 10.0 ? 10.0 : left};
        dt_status_t st = au.timeout > 0
                             ? dt_auth_accept(fd, &au, c->rank + 1, c->size,
                                              (uint32_t)c->nsock, &peer, &idx)
                             : DT_ERR_TIMEOUT;
        if (st != DT_OK || c->peers[peer].socks[idx].fd >= 0) {
            if (st == DT_OK)
                dt_error("tcp: rank %d: rank %d connected socket %u twice; "
                         "dropped the second",
                         c->rank, peer, idx);
            close(fd);
            continue;
        }
        attach(c, peer, (int)idx, fd);
        got++;
    }
    return DT_OK;
}

dt_status_t tcp_wireup(tcp_ctx_t *c, const dt_transport_args_t *a)
{
    if (!a->store) {
        dt_error("tcp: rank %d: no rendezvous store to exchange addresses "
                 "(DT_RENDEZVOUS unset?); start the job with dtctl run",
                 c->rank);
        return DT_ERR_INVALID;
    }
    double deadline = dt_clock_now() + c->timeout;
    const char *bind_addr = a->bind_addr && *a->bind_addr ? a->bind_addr
                                                          : NULL;
    int lfd = -1, port = 0;
    long long epoch = 0;
    char key[64], val[192], host[128];
    int64_t n = 0;
    /* Count this rank's inits so a second dt_init never reads the first
     * one's (closed) addresses: every rank inits the same number of times. */
    snprintf(key, sizeof key, "tcp/inits/%d", c->rank);
    DT_CHECK(dt_store_add(a->store, key, 1, &n));
    epoch = (long long)n;
    c->store = a->store;
    c->epoch = epoch;
    DT_CHECK(open_listener(c, bind_addr, &lfd, &port));
    if (bind_addr && strcmp(bind_addr, "0.0.0.0") != 0 &&
        strcmp(bind_addr, "::") != 0)
        snprintf(host, sizeof host, "%s", bind_addr);
    else if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    snprintf(key, sizeof key, "tcp/%lld/addr/%d", epoch, c->rank);
    snprintf(val, sizeof val, "%s %d", host, port);
    dt_status_t st = dt_store_set(a->store, key, val, strlen(val));
    if (st == DT_OK) {
        dt_debug("tcp: rank %d listening on %s:%d", c->rank, host, port);
        st = connect_lower(c, a, epoch, deadline);
    }
    if (st == DT_OK)
        st = accept_higher(c, a, lfd, deadline);
    close(lfd);
    return st;
}

void tcp_close_all(tcp_ctx_t *c)
{
    for (int p = 0; c->peers && p < c->size; p++)
        for (int i = 0; i < c->nsock; i++)
            if (c->peers[p].socks[i].fd >= 0) {
                close(c->peers[p].socks[i].fd);
                c->peers[p].socks[i].fd = -1;
            }
}
