/* run_on_host.c — a short command on one host (storage plugins verify
 * paths with it; `dtctl check` probes with it): its own connection,
 * stdout and stderr together, bounded in time and size. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "connect.h"
#include "run_on_host.h"
#include "script.h"
#include "ssh_types.h"

#define RUN_TIMEOUT_MS 60000
#define RUN_OUTPUT_MAX (1u << 20)

typedef struct outbuf {
    char *p;
    size_t len, cap;
} outbuf_t;

static dt_status_t append(outbuf_t *b, const char *data, size_t n)
{
    /* Drop the excess, keep reading. (Written so that n never grows:
     * gcc -O3 saw n = MAX - len > 0 for append(b, "", 0), and
     * -Wstringop-overread failed the build.) */
    if (b->len >= RUN_OUTPUT_MAX)
        n = 0;
    else if (n > RUN_OUTPUT_MAX - b->len)
        n = RUN_OUTPUT_MAX - b->len;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return DT_ERR_NOMEM;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return DT_OK;
}

/* Read both streams until the channel is at EOF or the deadline. */
static dt_status_t collect(ssh_channel ch, long long deadline, outbuf_t *b)
{
    char chunk[4096];
    dt_status_t st = append(b, "", 0);
    while (st == DT_OK && !ssh_channel_is_eof(ch)) {
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0)
            return DT_ERR_TIMEOUT;
        int got = 0;
        for (int is_err = 0; is_err < 2 && st == DT_OK; is_err++) {
            int n = ssh_channel_read_nonblocking(ch, chunk, sizeof chunk,
                                                 is_err);
            if (n == SSH_ERROR)
                return DT_ERR_PEER;
            if (n > 0) {
                st = append(b, chunk, (size_t)n);
                got = 1;
            }
        }
        if (!got && !ssh_channel_is_eof(ch))
            ssh_channel_poll_timeout(ch, left > 200 ? 200 : (int)left, 0);
    }
    /* What arrived together with the EOF. */
    for (int is_err = 0; is_err < 2 && st == DT_OK; is_err++) {
        int n;
        while ((n = ssh_channel_read_nonblocking(ch, chunk, sizeof chunk,
                                                 is_err)) > 0 &&
               st == DT_OK)
            st = append(b, chunk, (size_t)n);
    }
    return st;
}

dt_status_t ssh_run_on_conn(ssh_conn_t *c, const char *cmd, char **output,
                            int *exit_code)
{
    outbuf_t b = {0};
    dt_status_t st = DT_ERR_PEER;
    ssh_channel ch = ssh_channel_new(c->s);
    if (!ch || ssh_channel_open_session(ch) != SSH_OK ||
        ssh_channel_request_exec(ch, ssh_bootstrap_cmd) != SSH_OK ||
        ssh_channel_write(ch, cmd, (uint32_t)strlen(cmd)) !=
            (int)strlen(cmd) ||
        ssh_channel_send_eof(ch) != SSH_OK) {
        dt_error("%s: cannot run a command over ssh: %s", c->name,
                 ssh_get_error(c->s));
        goto out;
    }
    st = collect(ch, dt_clock_now_ms() + RUN_TIMEOUT_MS, &b);
    if (st == DT_ERR_TIMEOUT)
        dt_error("%s: the command did not finish within %d s; closed its "
                 "channel",
                 c->name, RUN_TIMEOUT_MS / 1000);
    else if (st == DT_ERR_PEER)
        dt_error("%s: reading the command's output failed: %s", c->name,
                 ssh_get_error(c->s));
    if (st == DT_OK) {
        int code = ssh_channel_get_exit_status(ch);
        /* -1: no status (killed by a signal, reported as such by sshd). */
        *exit_code = code < 0 ? 255 : code;
        *output = b.p;
        b.p = NULL;
    }
out:
    free(b.p);
    if (ch) {
        ssh_channel_close(ch);
        ssh_channel_free(ch);
    }
    return st;
}

dt_status_t ssh_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code)
{
    ssh_launcher_t *L = ctx;
    if (!L || !host || !host->name || !argv || !argv[0] || !output ||
        !exit_code)
        return DT_ERR_INVALID;
    *output = NULL;
    char *joined = NULL, *cmd = NULL;
    dt_status_t st = ssh_join_argv(argv, &joined);
    if (st != DT_OK)
        return st;
    if (asprintf(&cmd, "dt_nl=$(printf '\\nx'); dt_nl=${dt_nl%%x}; %s\n",
                 joined) < 0) {
        free(joined);
        return DT_ERR_NOMEM;
    }
    free(joined);
    ssh_conn_t c;
    memset(&c, 0, sizeof c);
    c.name = host->name;
    c.port = host->port;
    if (ssh_conn_open(&L->o, &c, NULL) != DT_OK) {
        dt_error("ssh launcher: host %s: %s", host->name, c.err);
        st = c.err[0] && strstr(c.err, "REFUSED") ? DT_ERR_AUTH : DT_ERR_PEER;
    } else {
        st = ssh_run_on_conn(&c, cmd, output, exit_code);
    }
    ssh_conn_close(&c);
    free(cmd);
    return st;
}
