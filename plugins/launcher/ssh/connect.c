/* connect.c — one ssh connection (options, TCP connect, host key, user
 * authentication), and all of a job's connections opened in parallel by a
 * small pool of threads. Threads only touch their own session and write
 * errors into it; logging happens afterwards, in host order. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/log.h>
#include "connect.h"
#include "hostkey.h"
#include "ssh_types.h"

static dt_status_t fail(ssh_conn_t *c, dt_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static dt_status_t fail(ssh_conn_t *c, dt_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return st;
}

static dt_status_t set_options(const ssh_opts_t *o, ssh_conn_t *c)
{
    int port = c->port > 0 ? c->port : o->port;
    long timeout = o->timeout_s;
    int verbosity = SSH_LOG_NOLOG;
    bool no = false;
    if (ssh_options_set(c->s, SSH_OPTIONS_HOST, c->name) < 0 ||
        ssh_options_set(c->s, SSH_OPTIONS_PORT, &port) < 0 ||
        ssh_options_set(c->s, SSH_OPTIONS_TIMEOUT, &timeout) < 0 ||
        ssh_options_set(c->s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity) < 0 ||
        /* Only [launcher.ssh] decides: ~/.ssh/config is not read. */
        ssh_options_set(c->s, SSH_OPTIONS_PROCESS_CONFIG, &no) < 0 ||
        ssh_options_set(c->s, SSH_OPTIONS_KNOWNHOSTS, o->known_hosts) < 0 ||
        (o->user && ssh_options_set(c->s, SSH_OPTIONS_USER, o->user) < 0))
        return fail(c, DT_ERR_CONFIG, "cannot set ssh options: %s",
                    ssh_get_error(c->s));
    return DT_OK;
}

/* What a non-blocking step of the connection waits under: dtctl's stop
 * request and a deadline. why: "" while going on, else what ended it. */
typedef struct conn_wait {
    int (*stop)(void); /* NULL: blocking calls, libssh's own timeout */
    long long deadline;
    const char *why;
} conn_wait_t;

/* Wait for what libssh waits for (the TCP connect: writable; the
 * server's words: readable), 50 ms at most between stop checks. 0: call
 * libssh again; -1: stopped or timed out (w->why says which). */
static int wait_socket(ssh_conn_t *c, conn_wait_t *w)
{
    if (w->stop()) {
        w->why = "stopped";
        return -1;
    }
    if (dt_clock_now_ms() >= w->deadline) {
        w->why = "timeout";
        return -1;
    }
    int want = ssh_get_poll_flags(c->s);
    struct pollfd pf = {
        ssh_get_fd(c->s),
        (short)(POLLIN | ((want & SSH_WRITE_PENDING) ? POLLOUT : 0)), 0};
    if (pf.fd < 0 || poll(&pf, 1, 50) < 0)
        usleep(20000); /* no socket: a short wait, then again */
    return 0;
}

/* One authentication call, repeated while the (non-blocking) session
 * says SSH_AUTH_AGAIN: a server that stalls the answer (a slow
 * AuthorizedKeysCommand, a hung PAM) no longer holds a stop. */
typedef int (*auth_step_t)(ssh_session s, void *arg);

static int auth_until_done(ssh_conn_t *c, conn_wait_t *w, auth_step_t step,
                           void *arg)
{
    int rc;
    while ((rc = step(c->s, arg)) == SSH_AUTH_AGAIN) {
        /* blocking (no stop to watch: dtctl check): libssh's own timeout
         * ran out with the server still silent */
        if (!w->stop) {
            w->why = "timeout";
            return SSH_AUTH_ERROR;
        }
        if (wait_socket(c, w) != 0)
            return SSH_AUTH_ERROR;
    }
    return rc;
}

static int step_none(ssh_session s, void *arg)
{
    (void)arg;
    return ssh_userauth_none(s, NULL);
}

static int step_agent(ssh_session s, void *arg)
{
    (void)arg;
    return ssh_userauth_agent(s, NULL);
}

static int step_key(ssh_session s, void *key)
{
    return ssh_userauth_publickey(s, NULL, key);
}

static int try_identity(ssh_conn_t *c, conn_wait_t *w, const char *path,
                        char *why, size_t why_len)
{
    if (access(path, R_OK) != 0)
        return 0;
    ssh_key key = NULL;
    int rc = ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key);
    if (rc != SSH_OK) {
        snprintf(why, why_len,
                 "; %s could not be read (protected by a passphrase? load it "
                 "into ssh-agent with `ssh-add %s` and set use_agent = yes)",
                 path, path);
        return 0;
    }
    rc = auth_until_done(c, w, step_key, key);
    ssh_key_free(key);
    return rc == SSH_AUTH_SUCCESS;
}

static dt_status_t authenticate(const ssh_opts_t *o, ssh_conn_t *c,
                                conn_wait_t *w)
{
    char why[600] = "";
    w->deadline = dt_clock_now_ms() + o->timeout_s * 1000;
    /* "none" first: it also fetches the methods the server allows. */
    if (auth_until_done(c, w, step_none, NULL) == SSH_AUTH_SUCCESS)
        return DT_OK;
    if (!w->why[0] && o->use_agent && getenv("SSH_AUTH_SOCK") &&
        auth_until_done(c, w, step_agent, NULL) == SSH_AUTH_SUCCESS)
        return DT_OK;
    for (size_t i = 0; !w->why[0] && o->identity && o->identity[i]; i++)
        if (try_identity(c, w, o->identity[i], why + strlen(why),
                         sizeof why - strlen(why)))
            return DT_OK;
    if (!strcmp(w->why, "stopped"))
        return DT_ERR_INTERRUPTED;
    if (!strcmp(w->why, "timeout"))
        return fail(c, DT_ERR_PEER,
                    "no answer to authentication within %ld s (the host's "
                    "sshd is stalled: check its PAM or AuthorizedKeysCommand, "
                    "or raise [launcher.ssh] connect_timeout)",
                    o->timeout_s);
    char *user = NULL;
    ssh_options_get(c->s, SSH_OPTIONS_USER, &user);
    dt_status_t st = fail(
        c, DT_ERR_AUTH,
        "public-key authentication as '%s' failed (tried %s%s)%s; put the "
        "public key into that user's ~/.ssh/authorized_keys on the host "
        "(ssh-copy-id), or set [launcher.ssh] identity / user; when the key "
        "is there, the host's sshd log says why (a locked account, "
        "AllowUsers, the file's permissions)",
        user ? user : "?", o->use_agent ? "ssh-agent and " : "",
        o->identity && o->identity[0] ? "the identity files" : "no key", why);
    ssh_string_free_char(user);
    return st;
}

/* A host that vanishes without a word (powered off, cut off) sends no
 * FIN or RST: without probes the connection looks alive for ever, and a
 * job whose ranks all ran there would never end. TCP keepalive probes
 * after half of [cluster] timeout, three more a sixth apart, and unacked
 * data given up after the timeout: the socket fails in about the
 * timeout, libssh reports it, and pump.c fails the ranks on it. */
static void keep_alive(const ssh_opts_t *o, ssh_conn_t *c)
{
    int fd = ssh_get_fd(c->s);
    if (fd < 0)
        return;
    double t = o->alive_s > 3 ? o->alive_s : 3;
    int one = 1, idle = (int)(t / 2), intvl = (int)(t / 6), cnt = 3;
    unsigned user_ms = (unsigned)(t * 1000.0);
    if (intvl < 1)
        intvl = 1;
    /* best effort (no logging here: a pool thread, see above) */
    (void)(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) ||
           setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) ||
           setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
                      sizeof intvl) ||
           setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) ||
           setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms,
                      sizeof user_ms));
}

/* ssh_connect, given up when stop() says so (dtctl was asked to stop:
 * a host that takes the TCP connection and says nothing, or drops SYNs,
 * held the launch for connect_timeout). Non-blocking (the session stays
 * so through authentication), with libssh's own timeout replaced by
 * connect_timeout from here. Not stoppable: the name lookup inside the
 * first call. */
static int connect_stoppable(const ssh_opts_t *o, ssh_conn_t *c,
                             conn_wait_t *w)
{
    if (!w->stop)
        return ssh_connect(c->s);
    w->deadline = dt_clock_now_ms() + o->timeout_s * 1000;
    ssh_set_blocking(c->s, 0);
    int rc;
    while ((rc = ssh_connect(c->s)) == SSH_AGAIN)
        if (wait_socket(c, w) != 0)
            break;
    return rc;
}

dt_status_t ssh_conn_open(const ssh_opts_t *o, ssh_conn_t *c,
                          int (*stop)(void))
{
    c->err[0] = '\0';
    c->s = ssh_new();
    if (!c->s)
        return fail(c, DT_ERR_NOMEM, "out of memory");
    dt_status_t st = set_options(o, c);
    if (st != DT_OK)
        goto out;
    conn_wait_t w = {stop, 0, ""};
    int rc = connect_stoppable(o, c, &w);
    if (!strcmp(w.why, "stopped")) {
        st = DT_ERR_INTERRUPTED;
        goto out;
    }
    if (!strcmp(w.why, "timeout")) {
        st = fail(c, DT_ERR_PEER,
                  "cannot connect to port %d: no ssh session within %ld s; "
                  "check that the host is up and runs sshd on that port, "
                  "and [launcher.ssh] connect_timeout",
                  c->port > 0 ? c->port : o->port, o->timeout_s);
        goto out;
    }
    if (rc != SSH_OK) {
        const char *e = ssh_get_error(c->s);
        /* A name that does not resolve is a typo or DNS, not sshd. */
        if (strstr(e, "resolve"))
            st = fail(c, DT_ERR_PEER,
                      "cannot connect: %s; check the host's name in the "
                      "host list (and DNS or /etc/hosts on this machine)",
                      e);
        else
            st = fail(c, DT_ERR_PEER,
                      "cannot connect to port %d: %s; check that the host "
                      "is up and runs sshd on that port (port=P on its "
                      "hostfile line, or [launcher.ssh] port; in -H the "
                      "number after ':' is slots), and connect_timeout",
                      c->port > 0 ? c->port : o->port, e);
        goto out;
    }
    if ((st = ssh_verify_host_key(o, c)) != DT_OK ||
        (st = authenticate(o, c, &w)) != DT_OK)
        goto out;
    keep_alive(o, c);
out:
    if (c->s)
        ssh_set_blocking(c->s, 1); /* channels and pump.c expect it */
    if (st != DT_OK)
        ssh_conn_close(c);
    return st;
}

void ssh_conn_close(ssh_conn_t *c)
{
    if (!c->s)
        return;
    if (ssh_is_connected(c->s))
        ssh_disconnect(c->s);
    ssh_free(c->s);
    c->s = NULL;
}

typedef struct pool {
    const ssh_opts_t *o;
    ssh_conn_t *conns;
    size_t n;
    size_t next;   /* next host to connect    */
    int fail_fast; /* stop after a failure    */
    int failed;    /* stop taking new hosts   */
    int (*stop)(void);
    int stopped;   /* dtctl was asked to stop */
    pthread_mutex_t lock;
} pool_t;

static void *connect_worker(void *arg)
{
    pool_t *p = arg;
    for (;;) {
        int stop = p->stop && p->stop();
        pthread_mutex_lock(&p->lock);
        if (stop)
            p->stopped = p->failed = 1;
        size_t i = p->failed ? p->n : p->next++;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->n)
            return NULL;
        dt_status_t st = ssh_conn_open(p->o, &p->conns[i], p->stop);
        if (st == DT_ERR_INTERRUPTED) {
            pthread_mutex_lock(&p->lock);
            p->stopped = p->failed = 1;
            pthread_mutex_unlock(&p->lock);
        } else if (st != DT_OK && p->fail_fast) {
            pthread_mutex_lock(&p->lock);
            p->failed = 1;
            pthread_mutex_unlock(&p->lock);
        }
    }
}

static const char *label(const ssh_opts_t *o, const ssh_conn_t *c, char *buf,
                         size_t len)
{
    int port = c->port > 0 ? c->port : o->port;
    if (port == 22)
        return c->name;
    /* [fd00::7]:2222: "fd00::7:2222" would read as another address */
    snprintf(buf, len, strchr(c->name, ':') ? "[%s]:%d" : "%s:%d", c->name,
             port);
    return buf;
}

dt_status_t ssh_conn_open_all(const ssh_opts_t *o, ssh_conn_t *conns,
                              size_t n, int fail_fast, int (*stop)(void))
{
    pool_t p = {o, conns, n, 0, fail_fast, 0, stop, 0,
                PTHREAD_MUTEX_INITIALIZER};
    size_t nt = n < (size_t)o->max_parallel ? n : (size_t)o->max_parallel;
    pthread_t *t = calloc(nt ? nt : 1, sizeof *t);
    if (!t)
        return DT_ERR_NOMEM;
    size_t started = 0;
    for (; started < nt; started++)
        if (pthread_create(&t[started], NULL, connect_worker, &p) != 0)
            break;
    if (started == 0)
        connect_worker(&p); /* no thread at all: connect one by one */
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    if (p.stopped || (stop && stop())) {
        for (size_t i = 0; i < n; i++)
            ssh_conn_close(&conns[i]);
        return DT_ERR_INTERRUPTED;
    }
    if (!fail_fast) /* the caller reports each host's c->err */
        return DT_OK;
    dt_status_t st = DT_OK;
    for (size_t i = 0; i < n; i++) {
        char buf[300];
        if (conns[i].err[0]) {
            dt_error("ssh launcher: host %s: %s",
                     label(o, &conns[i], buf, sizeof buf), conns[i].err);
            st = DT_ERR_PEER;
        } else if (!conns[i].s && st == DT_OK) {
            st = DT_ERR_PEER; /* not tried: another host failed first */
        }
    }
    if (st != DT_OK) {
        size_t skipped = 0;
        for (size_t i = 0; i < n; i++)
            skipped += !conns[i].s && !conns[i].err[0];
        if (skipped)
            dt_info("ssh launcher: %zu other host%s not tried after the "
                    "failure above",
                    skipped, skipped == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++)
            ssh_conn_close(&conns[i]);
    }
    return st;
}
