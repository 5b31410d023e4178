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
#include <dirent.h>
#include <sys/resource.h>
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

static int out_of_fds(int err)
{
    return err == EMFILE || err == ENFILE;
}

/* Out of descriptors: waiting cannot help, and it is no peer's fault. */
static dt_status_t fds_exhausted(const tcp_ctx_t *c, const char *what)
{
    int err = errno;
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_NOFILE, &rl);
    char host[256] = "?";
    gethostname(host, sizeof host);
    dt_error("tcp: rank %d on %s: cannot %s: %s (descriptor limit %llu, "
             "hard %llu; the mesh needs %d sockets: %d peers x "
             "sockets_per_peer %d); raise 'ulimit -n' or lower "
             "[transport.tcp] sockets_per_peer",
             c->rank, host, what, strerror(err),
             (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
             (c->size - 1) * c->nsock, c->size - 1, c->nsock);
    return DT_ERR_IO;
}

/* Descriptors open now, from /proc/self/fd (its own one not counted);
 * -1 when it cannot be read. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;
}

/* Room for the mesh's sockets (plus the listener and a few more: a store
 * reconnect, resolver files), and for strangers' connections during
 * setup: raise the soft limit toward the hard one; fail now, saying so,
 * when even the hard limit is too low (else accept() and socket() fail
 * deep in setup and the peers get blamed). */
static dt_status_t fd_room(const tcp_ctx_t *c)
{
    struct rlimit rl;
    long open_now = open_fds();
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || open_now < 0)
        return DT_OK; /* no way to tell: let setup try */
    rlim_t mesh = (rlim_t)(c->size - 1) * (rlim_t)c->nsock;
    rlim_t need = (rlim_t)open_now + mesh + TCP_FD_SPARE;
    rlim_t want = need + TCP_PENDING_MAX;
    if (rl.rlim_cur >= want)
        return DT_OK;
    rlim_t to = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want
                    ? want
                    : rl.rlim_max;
    if (to > rl.rlim_cur) {
        struct rlimit nl = {to, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0) {
            dt_debug("tcp: rank %d: raised the open file limit from %llu to "
                     "%llu (hard limit %llu) for %llu sockets",
                     c->rank, (unsigned long long)rl.rlim_cur,
                     (unsigned long long)to, (unsigned long long)rl.rlim_max,
                     (unsigned long long)mesh);
            rl.rlim_cur = to;
        }
    }
    if (rl.rlim_cur >= need)
        return DT_OK;
    char host[256] = "?";
    gethostname(host, sizeof host);
    dt_error("tcp: rank %d on %s: needs %llu file descriptors (%ld open, "
             "%llu sockets: %d peers x sockets_per_peer %d, %d spare) but "
             "its limit is %llu and the hard limit %llu; raise 'ulimit -n' "
             "(hard and soft) on this host, or lower [transport.tcp] "
             "sockets_per_peer",
             c->rank, host, (unsigned long long)need, open_now,
             (unsigned long long)mesh, c->size - 1, c->nsock, TCP_FD_SPARE,
             (unsigned long long)rl.rlim_cur,
             (unsigned long long)rl.rlim_max);
    return DT_ERR_CONFIG;
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
            if (fd < 0 && out_of_fds(errno)) {
                char what[64];
                snprintf(what, sizeof what, "open a socket to rank %d", peer);
                freeaddrinfo(res);
                return fds_exhausted(c, what);
            }
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
        char host[128] = "?"; /* numeric: an IPv6 address and its scope fit */
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
            getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, NULL,
                        0, NI_NUMERICHOST);
        /* A longer name is cut. (The return value is kept: gcc -O0's
         * -Wformat-truncation fails the build on a discarded one.) */
        int cut = snprintf(pe->addr, sizeof pe->addr, "%s", host);
        (void)cut;
    }
    set_nonblock(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->fd = fd;
}

/* Rank p let the whole timeout pass without publishing its address: it
 * is the job's root failure, not this rank (dtctl would otherwise name
 * whichever waiting rank exited first). It publishes before it waits on
 * anyone, so it is not held up by another rank; one that exited is
 * reported by its launcher. */
static void blame_unpublished(tcp_ctx_t *c, int p)
{
    int failed = -1, detector = -1;
    char how[TCP_HOW_MAX] = "";
    tcp_cause_resolve(c, p, "hung", &failed, &detector, how);
}

/* Rank p's "host" and "port": from its looked-up value when there was
 * one (the caller frees it), else waiting for p to publish it. */
static dt_status_t peer_address(tcp_ctx_t *c, const dt_transport_args_t *a,
                                int p, const void *found, size_t len,
                                double deadline, char host[128],
                                char port[16])
{
    void *got = NULL;
    if (!found) {
        char key[64];
        snprintf(key, sizeof key, "tcp/%lld/addr/%d", c->epoch, p);
        dt_status_t st = dt_store_get(a->store, key, deadline - dt_clock_now(),
                                      &got, &len);
        if (st != DT_OK) {
            dt_error("tcp: rank %d: rank %d never published its address in "
                     "the store (%s); did it start?",
                     c->rank, p, dt_status_str(st));
            if (st == DT_ERR_TIMEOUT)
                blame_unpublished(c, p);
            return st == DT_ERR_TIMEOUT ? DT_ERR_PEER : st;
        }
        found = got;
    }
    char *text = calloc(1, len + 1);
    dt_status_t st = text ? DT_OK : DT_ERR_NOMEM;
    if (text) {
        memcpy(text, found, len);
        sscanf(text, "%127s %15s", host, port);
    }
    free(text);
    free(got);
    return st;
}

/* Handshakes with lower ranks in flight together: each waits on its
 * peer's acceptor being scheduled, twice, so one after the other they
 * added up (about 1.7 ms each with 128 ranks on 2 cores). */
typedef struct outgoing {
    dt_auth_connector_t *x[TCP_CONNECT_AHEAD];
    int peer[TCP_CONNECT_AHEAD], idx[TCP_CONNECT_AHEAD];
    int n;
} outgoing_t;

static void outgoing_remove(outgoing_t *og, int i, int keep_fd)
{
    if (!keep_fd)
        close(dt_auth_connector_fd(og->x[i]));
    dt_auth_connector_free(og->x[i]);
    og->n--;
    og->x[i] = og->x[og->n];
    og->peer[i] = og->peer[og->n];
    og->idx[i] = og->idx[og->n];
}

/* One round: poll the handshakes in flight, advance those with news.
 * dt/auth.h logs a failure itself, naming both ranks. */
static dt_status_t outgoing_round(tcp_ctx_t *c, outgoing_t *og)
{
    struct pollfd p[TCP_CONNECT_AHEAD];
    double wake = 0;
    for (int i = 0; i < og->n; i++) {
        p[i] = (struct pollfd){.fd = dt_auth_connector_fd(og->x[i]),
                               .events = POLLIN};
        double d = dt_auth_connector_deadline(og->x[i]);
        wake = i == 0 || d < wake ? d : wake;
    }
    int n = og->n;
    if (poll(p, (nfds_t)n, tcp_ms_until(wake)) < 0 && errno != EINTR)
        return DT_ERR_IO;
    double now = dt_clock_now();
    /* Backwards: a finished handshake moves the last one into its slot. */
    for (int i = n - 1; i >= 0; i--) {
        if (!p[i].revents && now < dt_auth_connector_deadline(og->x[i]))
            continue;
        dt_status_t st = dt_auth_connector_step(og->x[i]);
        if (st == DT_DECLINED)
            continue;
        if (st != DT_OK)
            return st == DT_ERR_AUTH ? st : DT_ERR_PEER;
        attach(c, og->peer[i], og->idx[i], dt_auth_connector_fd(og->x[i]));
        outgoing_remove(og, i, 1);
    }
    return DT_OK;
}

/* Connect every socket to lower rank p at host:port (the TCP connect
 * completes in the peer's kernel: cheap) and start its handshake,
 * waiting first for a free slot. */
static dt_status_t connect_peer(tcp_ctx_t *c, const dt_transport_args_t *a,
                                int p, const char *host, const char *port,
                                double deadline, outgoing_t *og)
{
    int cut = snprintf(c->peers[p].addr, sizeof c->peers[p].addr, "%s:%s",
                       host, port); /* cut: see above */
    (void)cut;
    for (int i = 0; i < c->nsock; i++) {
        while (og->n == TCP_CONNECT_AHEAD)
            DT_CHECK(outgoing_round(c, og));
        int fd = -1;
        DT_CHECK(connect_to(c, host, port, p, deadline, &fd));
        dt_auth_t au = {"tcp", a->token, a->token_len, c->rank, c->size,
                        deadline - dt_clock_now()};
        dt_auth_connector_t *x = NULL;
        dt_status_t st =
            au.timeout > 0
                ? dt_auth_connector_new(fd, &au, p, (uint32_t)i, &x)
                : DT_ERR_TIMEOUT;
        if (st != DT_OK) {
            if (au.timeout <= 0)
                dt_error("tcp: rank %d: no time left to authenticate with "
                         "rank %d at %s",
                         c->rank, p, c->peers[p].addr);
            close(fd);
            return st == DT_ERR_AUTH ? st : DT_ERR_PEER;
        }
        og->x[og->n] = x;
        og->peer[og->n] = p;
        og->idx[og->n] = i;
        og->n++;
    }
    return DT_OK;
}

/* The lower ranks' addresses are looked up TCP_LOOKUP_AHEAD at a time in
 * one store round trip (most published long ago: one get each took about
 * 10 ms of a busy dtctl at 256 ranks); one not yet published is waited
 * for on its own. */
static dt_status_t connect_lower(tcp_ctx_t *c, const dt_transport_args_t *a,
                                 double deadline)
{
    dt_status_t st = DT_OK;
    outgoing_t og = {.n = 0};
    for (int base = 0; base < c->rank && st == DT_OK;
         base += TCP_LOOKUP_AHEAD) {
        int k = c->rank - base < TCP_LOOKUP_AHEAD ? c->rank - base
                                                  : TCP_LOOKUP_AHEAD;
        char keys[TCP_LOOKUP_AHEAD][48];
        const char *kp[TCP_LOOKUP_AHEAD];
        void *vals[TCP_LOOKUP_AHEAD];
        size_t lens[TCP_LOOKUP_AHEAD];
        for (int i = 0; i < k; i++) {
            snprintf(keys[i], sizeof keys[i], "tcp/%lld/addr/%d", c->epoch,
                     base + i);
            kp[i] = keys[i];
        }
        /* On failure every value is NULL: the gets below report it. */
        dt_store_lookup(a->store, kp, (size_t)k, vals, lens);
        for (int i = 0; i < k; i++) {
            char host[128] = "", port[16] = "";
            /* A rank not yet published is waited for below: the
             * handshakes in flight end first, or their acceptors give up
             * on them meanwhile (a rank that started late failed the job) */
            while (st == DT_OK && !vals[i] && og.n > 0)
                st = outgoing_round(c, &og);
            if (st == DT_OK)
                st = peer_address(c, a, base + i, vals[i], lens[i], deadline,
                                  host, port);
            if (st == DT_OK)
                st = connect_peer(c, a, base + i, host, port, deadline, &og);
            free(vals[i]);
        }
    }
    while (st == DT_OK && og.n > 0)
        st = outgoing_round(c, &og);
    while (og.n > 0)
        outgoing_remove(&og, og.n - 1, 0);
    return st;
}

/* Connections being authenticated, all at once: a stranger that connects
 * and says nothing holds up no rank (and costs no more than its socket). */
typedef struct pending {
    dt_auth_acceptor_t *x[TCP_PENDING_MAX];
    int fd[TCP_PENDING_MAX];
    double since[TCP_PENDING_MAX]; /* accepted at (dt_clock_now()) */
    int n;
    long long strays, quiet; /* dropped strangers; not logged one by one */
    char last_from[64];
    /* Dropped after a hello that named a rank: that rank's setup fails
     * (or a stranger mimics one); never summed up as a stranger. */
    long long claims, claims_quiet;
    int last_claim_rank;
    char last_claim_from[64];
} pending_t;

/* A stranger dropped: the first few logged, the rest summed up once. */
static void stray_note(const tcp_ctx_t *c, pending_t *pd, const char *from,
                       const char *why)
{
    if (++pd->strays <= TCP_STRAYS_LOGGED) {
        dt_warn("tcp: rank %d: dropped a connection from %s: %s%s",
                c->rank, from, why,
                pd->strays == TCP_STRAYS_LOGGED
                    ? " (further ones are summed up when setup ends)"
                    : "");
        return;
    }
    pd->quiet++;
    snprintf(pd->last_from, sizeof pd->last_from, "%s", from);
}

/* A handshake dropped midway whose hello named `rank`: logged as that
 * rank's (its connector fails on the close), the first few one by one. */
static void claim_note(const tcp_ctx_t *c, pending_t *pd, int rank,
                       const char *from, const char *why)
{
    if (++pd->claims <= TCP_STRAYS_LOGGED) {
        dt_warn("tcp: rank %d: dropped rank %d's connection from %s "
                "mid-handshake (its hello came, its proof not yet): %s; "
                "rank %d fails on that close%s",
                c->rank, rank, from, why, rank,
                pd->claims == TCP_STRAYS_LOGGED
                    ? " (further ones are summed up when setup ends)"
                    : "");
        return;
    }
    pd->claims_quiet++;
    pd->last_claim_rank = rank;
    snprintf(pd->last_claim_from, sizeof pd->last_claim_from, "%s", from);
}

static void stray_summary(const tcp_ctx_t *c, const pending_t *pd)
{
    if (pd->quiet)
        dt_warn("tcp: rank %d: dropped %lld more connections that did not "
                "authenticate (the last from %s); they do not know the job "
                "token (a port scanner, or a client of another job?)",
                c->rank, pd->quiet, pd->last_from);
    if (pd->claims_quiet)
        dt_warn("tcp: rank %d: dropped %lld more connections mid-handshake "
                "that named a rank in their hello (the last: rank %d from "
                "%s)",
                c->rank, pd->claims_quiet, pd->last_claim_rank,
                pd->last_claim_from);
}

/* Forget handshake i, closing its socket unless it was kept. */
static void pending_remove(pending_t *pd, int i, int keep_fd)
{
    dt_auth_acceptor_free(pd->x[i]);
    if (!keep_fd)
        close(pd->fd[i]);
    pd->n--;
    pd->x[i] = pd->x[pd->n];
    pd->fd[i] = pd->fd[pd->n];
    pd->since[i] = pd->since[pd->n];
}

/* Make room by dropping the oldest handshake (the one nearest its
 * deadline): a real connector sends its hello at once. */
static void pending_evict(const tcp_ctx_t *c, pending_t *pd, const char *why)
{
    int old = 0;
    for (int i = 1; i < pd->n; i++)
        if (dt_auth_acceptor_deadline(pd->x[i]) <
            dt_auth_acceptor_deadline(pd->x[old]))
            old = i;
    int rank = dt_auth_acceptor_claimed_rank(pd->x[old]);
    if (rank >= 0)
        claim_note(c, pd, rank, dt_auth_acceptor_from(pd->x[old]), why);
    else
        stray_note(c, pd, dt_auth_acceptor_from(pd->x[old]), why);
    pending_remove(pd, old, 0);
}

/* Take one connection off the listener into the pending set. */
static dt_status_t accept_one(tcp_ctx_t *c, const dt_transport_args_t *a,
                              int lfd, double deadline, pending_t *pd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && out_of_fds(errno) && pd->n > 0) {
        pending_evict(c, pd, "out of file descriptors for the job's ranks");
        return DT_OK;
    }
    if (fd < 0 && out_of_fds(errno))
        return fds_exhausted(c, "accept the higher ranks' connections");
    if (fd < 0)
        return DT_OK; /* gone before we took it, or interrupted */
    if (pd->n == TCP_PENDING_MAX)
        pending_evict(c, pd, "too many unauthenticated connections at once");
    double left = deadline - dt_clock_now();
    dt_auth_t au = {"tcp", a->token, a->token_len, c->rank, c->size,
                    left > TCP_HANDSHAKE_S ? TCP_HANDSHAKE_S : left};
    dt_auth_acceptor_t *x = NULL;
    dt_status_t st = au.timeout > 0
                         ? dt_auth_acceptor_new(fd, &au, c->rank + 1, c->size,
                                                (uint32_t)c->nsock, &x)
                         : DT_ERR_TIMEOUT;
    if (st != DT_OK) {
        close(fd);
        return st == DT_ERR_NOMEM ? st : DT_OK;
    }
    pd->x[pd->n] = x;
    pd->fd[pd->n] = fd;
    pd->since[pd->n] = dt_clock_now();
    pd->n++;
    return DT_OK;
}

/* Advance handshake i; 1 when it is done (authenticated or dropped). */
static int pending_step(tcp_ctx_t *c, pending_t *pd, int i, int *got)
{
    int peer = -1;
    uint32_t idx = 0;
    dt_status_t st = dt_auth_acceptor_step(pd->x[i], &peer, &idx);
    if (st == DT_DECLINED)
        return 0;
    const char *why = dt_auth_acceptor_stray(pd->x[i]);
    if (why)
        stray_note(c, pd, dt_auth_acceptor_from(pd->x[i]), why);
    if (st == DT_OK && c->peers[peer].socks[idx].fd >= 0) {
        dt_error("tcp: rank %d: rank %d connected socket %u twice; "
                 "dropped the second",
                 c->rank, peer, idx);
        st = DT_ERR_PEER;
    }
    if (st == DT_OK) {
        attach(c, peer, (int)idx, pd->fd[i]);
        (*got)++;
    }
    pending_remove(pd, i, st == DT_OK);
    return 1;
}

static dt_status_t accept_timed_out(const tcp_ctx_t *c)
{
    char missing[256] = "";
    size_t off = 0;
    for (int q = c->rank + 1; q < c->size && off < 200; q++)
        for (int i = 0; i < c->nsock; i++)
            if (c->peers[q].socks[i].fd < 0) {
                off += (size_t)snprintf(missing + off, sizeof missing - off,
                                        " %d", q);
                break;
            }
    dt_error("tcp: rank %d: timed out waiting for ranks%s to connect; they "
             "may have failed to start (see their log lines) or cannot "
             "reach this host",
             c->rank, missing);
    return DT_ERR_PEER;
}

/* One round: poll the listener and every handshake, advance them. */
static dt_status_t accept_round(tcp_ctx_t *c, const dt_transport_args_t *a,
                                int lfd, double deadline, pending_t *pd,
                                int *got)
{
    struct pollfd p[1 + TCP_PENDING_MAX];
    double wake = deadline;
    /* Full: a new connection waits in the backlog until the oldest
     * handshake has had TCP_EVICT_GRACE_S (a rank's, on a crowded host,
     * may wait that long for its connector to run; a stranger's silence
     * holds a slot no longer). */
    double evict_at = 0;
    for (int i = 0; pd->n == TCP_PENDING_MAX && i < pd->n; i++)
        if (i == 0 || pd->since[i] < evict_at)
            evict_at = pd->since[i];
    evict_at += pd->n == TCP_PENDING_MAX ? TCP_EVICT_GRACE_S : 0;
    int listen = dt_clock_now() >= evict_at;
    p[0] = (struct pollfd){.fd = listen ? lfd : -1, .events = POLLIN};
    wake = listen || evict_at > wake ? wake : evict_at;
    for (int i = 0; i < pd->n; i++) {
        p[1 + i] = (struct pollfd){.fd = pd->fd[i], .events = POLLIN};
        double d = dt_auth_acceptor_deadline(pd->x[i]);
        wake = d < wake ? d : wake;
    }
    int n = pd->n;
    if (poll(p, (nfds_t)(1 + n), tcp_ms_until(wake)) < 0 && errno != EINTR)
        return DT_ERR_IO;
    double now = dt_clock_now();
    /* Backwards: a finished handshake moves the last one into its slot. */
    for (int i = n - 1; i >= 0; i--)
        if (p[1 + i].revents || now >= dt_auth_acceptor_deadline(pd->x[i]))
            pending_step(c, pd, i, got);
    if (p[0].revents & POLLIN)
        return accept_one(c, a, lfd, deadline, pd);
    return DT_OK;
}

static dt_status_t accept_higher(tcp_ctx_t *c, const dt_transport_args_t *a,
                                 int lfd, double deadline)
{
    int want = (c->size - 1 - c->rank) * c->nsock, got = 0;
    pending_t pd = {.n = 0};
    dt_status_t st = DT_OK;
    while (got < want && st == DT_OK)
        st = tcp_ms_until(deadline) == 0
                 ? accept_timed_out(c)
                 : accept_round(c, a, lfd, deadline, &pd, &got);
    while (pd.n > 0)
        pending_remove(&pd, pd.n - 1, 0);
    stray_summary(c, &pd);
    return st;
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
    DT_CHECK(fd_room(c));
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
        st = connect_lower(c, a, deadline);
    }
    double connected = dt_clock_now();
    if (st == DT_OK)
        st = accept_higher(c, a, lfd, deadline);
    close(lfd);
    /* The sockets each way, counted (tests/tcp_wireup.sh), and how long
     * each side took: for whoever sizes a large job's setup. */
    int opened = 0, accepted = 0;
    for (int p = 0; st == DT_OK && p < c->size; p++)
        for (int i = 0; i < c->nsock; i++)
            if (c->peers[p].socks[i].fd >= 0)
                *(p < c->rank ? &opened : &accepted) += 1;
    if (st == DT_OK)
        dt_debug("tcp: rank %d: mesh up: opened %d connections to lower "
                 "ranks in %.3f s, accepted %d from higher ranks in %.3f s",
                 c->rank, opened, connected - (deadline - c->timeout),
                 accepted, dt_clock_now() - connected);
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
