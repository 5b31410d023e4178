/* tcp_plugin.c — the tcp transport plugin: its keys, init and fini. The
 * data path is in tcp_progress.c, connection setup in tcp_wireup.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/plugin.h>
#include "tcp.h"

#define SECTION "transport.tcp"

static const dt_key_spec_t tcp_keys[] = {
    {"timeout", DT_KEY_DURATION, "60s",
     "a peer silent this long while a transfer waits on it is an error "
     "(a closed or crashed peer is reported at once); also bounds "
     "connection setup"},
    {"sockets_per_peer", DT_KEY_INT, "1",
     "TCP connections between each pair of ranks (1-16); messages of "
     "stripe_min or more are split across them"},
    {"stripe_min", DT_KEY_SIZE, "256K",
     "messages at least this large are striped over sockets_per_peer "
     "connections"},
    {"buffer_size", DT_KEY_STRING, "auto",
     "SO_SNDBUF/SO_RCVBUF per socket (a size); 0 keeps the kernel's "
     "autotuning; auto: 2M when every rank is on one host (a 512K ring "
     "chunk then never waits for a window to grow), else 0"},
    {"send_max", DT_KEY_STRING, "auto",
     "most bytes one sendmsg() writes while at most 4M wait to be sent "
     "(a size, at least 4K; a longer queue is written whole); 0: no "
     "limit; auto: 256K when every rank is on one host and has a CPU of "
     "its own (a long write holds the socket while the peer's data waits "
     "to be taken in), else 0"},
    {"spin", DT_KEY_STRING, "auto",
     "a wait first polls this long (a duration: 30us), yielding the CPU "
     "between polls, before it sleeps in poll(): a reply that comes within "
     "it skips a wake-up, most of a small message's time; auto: 100us when "
     "this rank has CPUs of its own ([cluster] bind), 30us when this "
     "host's ranks outnumber its CPUs, else 0"},
    {"listen_port", DT_KEY_INT, "0",
     "port each worker listens on; 0: any free port (needed when several "
     "workers share a host)"},
    {NULL, 0, NULL, NULL}};

/* A value set by the user (file, env, --set) beats the core's default. */
static int user_set(const dt_config_t *cfg, const char *key)
{
    dt_config_source_t src = DT_SRC_DEFAULT;
    const char *where = NULL;
    return cfg && dt_config_origin(cfg, SECTION, key, &src, &where) == DT_OK &&
           src != DT_SRC_DEFAULT;
}

static dt_status_t read_config(tcp_ctx_t *c, const dt_config_t *cfg,
                               const dt_transport_args_t *a)
{
    long long nsock = 1, port = 0;
    uint64_t stripe = 256 << 10, buf = 0;
    const char *buf_text = "auto", *send_max_text = "auto";
    double timeout = 60.0;
    const char *spin_text = "auto";
    if (cfg) {
        DT_CHECK(dt_config_get_string(cfg, SECTION, "spin", &spin_text));
        DT_CHECK(dt_config_get_int(cfg, SECTION, "sockets_per_peer", &nsock));
        DT_CHECK(dt_config_get_size(cfg, SECTION, "stripe_min", &stripe));
        DT_CHECK(dt_config_get_string(cfg, SECTION, "buffer_size",
                                      &buf_text));
        DT_CHECK(dt_config_get_string(cfg, SECTION, "send_max",
                                      &send_max_text));
        DT_CHECK(dt_config_get_int(cfg, SECTION, "listen_port", &port));
        DT_CHECK(dt_config_get_duration(cfg, SECTION, "timeout", &timeout));
    }
    if (!user_set(cfg, "timeout") && a->timeout > 0)
        timeout = a->timeout;
    if (nsock < 1 || nsock > TCP_MAX_SOCKETS) {
        dt_error("[transport.tcp] sockets_per_peer = %lld: must be 1..%d",
                 nsock, TCP_MAX_SOCKETS);
        return DT_ERR_CONFIG;
    }
    if (port < 0 || port > 65535 || timeout <= 0) {
        dt_error("[transport.tcp] listen_port must be 0..65535 and timeout "
                 "positive (got %lld, %g s)",
                 port, timeout);
        return DT_ERR_CONFIG;
    }
    if (strcmp(buf_text, "auto") == 0)
        buf = a->size == a->local_size ? TCP_ONE_HOST_BUFFER : 0;
    else if (dt_parse_size(buf_text, &buf) != DT_OK) {
        const char *where = "default";
        dt_config_origin(cfg, SECTION, "buffer_size", NULL, &where);
        dt_error("%s: [transport.tcp] buffer_size = '%s': use auto, 0 or a "
                 "size such as 2M", where, buf_text);
        return DT_ERR_CONFIG;
    }
    uint64_t send_max = 0;
    if (strcmp(send_max_text, "auto") == 0)
        send_max = a->size == a->local_size &&
                           a->local_size <= sysconf(_SC_NPROCESSORS_ONLN)
                       ? TCP_ONE_HOST_SEND_MAX
                       : 0;
    else if (dt_parse_size(send_max_text, &send_max) != DT_OK ||
             (send_max != 0 && send_max < TCP_SEND_MAX_MIN)) {
        const char *where = "default";
        dt_config_origin(cfg, SECTION, "send_max", NULL, &where);
        dt_error("%s: [transport.tcp] send_max = '%s': use auto, 0 (no "
                 "limit) or a size of at least 4K such as 256K",
                 where, send_max_text);
        return DT_ERR_CONFIG;
    }
    c->send_max = (size_t)send_max;
    if (a->rank == 0)
        dt_debug("[transport.tcp] send_max = %s (%zu bytes; 0: no limit)",
                 send_max_text, c->send_max);
    if (a->rank == 0)
        dt_debug("[transport.tcp] buffer_size = %s%s", buf_text,
                 buf ? (buf == TCP_ONE_HOST_BUFFER ? " (2M)" : "")
                     : " (kernel autotuning)");
    DT_CHECK(dt_wait_spin_init(&c->spin, spin_text, SECTION,
                               a->local_size));
    c->nsock = (int)nsock;
    c->stripe_min = stripe ? (size_t)stripe : 1;
    c->bufsize = (size_t)buf;
    c->listen_port = (int)port;
    c->timeout = timeout;
    /* A wait blocked this long says whom it waits on (tcp_cause.c): well
     * within the timeout, so that a timed-out rank finds the records. */
    c->wait_note_after = timeout / 4 < 1.0 ? timeout / 4 : 1.0;
    return DT_OK;
}

static void tcp_fini(void *ctx)
{
    tcp_ctx_t *c = ctx;
    if (!c)
        return;
    tcp_close_all(c);
    tcp_free_requests(c);
    free(c->peers);
    free(c->pfds);
    free(c->pfd_sock);
    free(c);
}

static dt_status_t tcp_init(const dt_config_t *cfg,
                            const dt_transport_args_t *a, void **out)
{
    if (a->size < 1 || a->rank < 0 || a->rank >= a->size || !a->token ||
        a->token_len == 0) {
        dt_error("tcp: init needs a rank in 0..size-1 and the job token");
        return DT_ERR_INVALID;
    }
    tcp_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return DT_ERR_NOMEM;
    c->rank = a->rank;
    c->size = a->size;
    dt_status_t st = read_config(c, cfg, a);
    if (st != DT_OK)
        goto out;
    size_t nfd = (size_t)a->size * (size_t)c->nsock;
    c->peers = calloc((size_t)a->size, sizeof *c->peers);
    c->pfds = calloc(nfd, sizeof *c->pfds);
    c->pfd_sock = calloc(nfd, sizeof *c->pfd_sock);
    if (!c->peers || !c->pfds || !c->pfd_sock) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    for (int p = 0; p < a->size; p++) {
        tcp_peer_t *pe = &c->peers[p];
        pe->rank = p;
        snprintf(pe->addr, sizeof pe->addr, "?");
        for (int j = 0; j < TCP_MAX_SOCKETS; j++) {
            tcp_sock_t *s = &pe->socks[j];
            s->fd = -1;
            s->index = j;
            s->peer = pe;
            s->unexp_tail = &s->unexp;
            s->tx_tail = &s->tx_head;
        }
    }
    if (a->size > 1)
        st = tcp_wireup(c, a);
out:
    if (st != DT_OK) {
        tcp_fini(c);
        return st;
    }
    *out = c;
    return DT_OK;
}

static uint32_t tcp_caps(void *ctx)
{
    (void)ctx;
    return 0; /* host memory only: no DT_CAP_CUDA_MEM */
}

static const dt_transport_ops_t tcp_ops = {
    .size = sizeof(dt_transport_ops_t),
    .init = tcp_init,
    .caps = tcp_caps,
    .isend = tcp_isend,
    .irecv = tcp_irecv,
    .test = tcp_test,
    .wait = tcp_wait,
    /* Collectives: the core's algorithms over isend/irecv. */
    .fini = tcp_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    DT_PLUGIN_ABI,
    DT_KIND_TRANSPORT,
    "tcp",
    "1.0",
    "TCP sockets between every pair of ranks (token-authenticated)",
    tcp_keys,
    NULL,
    &tcp_ops,
};
