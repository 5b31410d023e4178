/* stdin_channel.c — dtctl's standard input to rank 0
 * (dt_launch_spec_t.forward_stdin). Its end of file cannot travel on the
 * rank's own channel (there it tells the watchdog that dtctl is gone), so
 * a second channel on the same connection runs `cat` into a fifo that
 * rank 0's script made and opened as its stdin (script.c). dtctl's stdin
 * is read only while the chunk before was passed on, and a chunk is
 * written only as far as the channel's window goes: a rank that does not
 * read stops the reading of dtctl's stdin, never the launcher's loop. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "script.h"
#include "stdin_channel.h"

/* Output of the channel's own `cat` (an error: no fifo) is rank 0's. */
static int on_in_data(ssh_session s, ssh_channel ch, void *data,
                      uint32_t len, int is_stderr, void *arg)
{
    (void)s;
    (void)ch;
    ssh_launcher_t *L = arg;
    if (L->output && len)
        L->output(L->output_arg, 0, is_stderr ? 2 : 1, data, len);
    return (int)len;
}

dt_status_t ssh_stdin_open(ssh_launcher_t *L)
{
    ssh_rank_t *rk = &L->ranks[0];
    char *cmd = NULL;
    if (!rk->stdin_dir[0]) { /* no fifo there: it said why, as rank 0 */
        dt_debug("ssh launcher: rank 0 on %s reads /dev/null",
                 rk->conn->name);
        return DT_OK;
    }
    if (!ssh_stdin_dir_ok(rk->stdin_dir)) {
        dt_error("ssh launcher: rank 0 on %s did not name a usable fifo for "
                 "its standard input ('%s'; a bug in dt: please report it)",
                 rk->conn->name, rk->stdin_dir);
        return DT_ERR_PEER;
    }
    if (ssh_stdin_cmd(rk->stdin_dir, &cmd) != DT_OK)
        return DT_ERR_NOMEM;
    ssh_session s = rk->conn->s;
    dt_status_t st = DT_OK;
    if (!(L->in_ch = ssh_channel_new(s))) {
        st = DT_ERR_NOMEM;
    } else {
        memset(&L->in_cb, 0, sizeof L->in_cb);
        L->in_cb.userdata = L;
        L->in_cb.channel_data_function = on_in_data;
        ssh_callbacks_init(&L->in_cb);
        ssh_set_channel_callbacks(L->in_ch, &L->in_cb);
        if (ssh_channel_open_session(L->in_ch) != SSH_OK ||
            ssh_channel_request_exec(L->in_ch, cmd) != SSH_OK)
            st = DT_ERR_PEER;
    }
    free(cmd);
    if (st != DT_OK)
        dt_error("ssh launcher: rank 0 on %s: cannot open the channel for "
                 "its standard input: %s; check the ssh server's MaxSessions "
                 "(dt uses up to 10 sessions a connection; `dtctl run --stdin "
                 "none` needs none for it)",
                 rk->conn->name, ssh_get_error(s));
    return st;
}

static int on_stdin_readable(socket_t fd, int revents, void *arg)
{
    (void)fd;
    (void)revents; /* POLLHUP too: read() says end of file */
    stdin_relay_read(((ssh_launcher_t *)arg)->relay);
    return 0;
}

static void poll_stdin(ssh_launcher_t *L, int want)
{
    if (!L->event || want == L->in_polled)
        return;
    if (want)
        want = ssh_event_add_fd(L->event, L->relay->src, POLLIN,
                                on_stdin_readable, L) == SSH_OK;
    else
        ssh_event_remove_fd(L->event, L->in_polled_fd);
    if (want)
        L->in_polled_fd = L->relay->src;
    L->in_polled = want;
}

void ssh_stdin_close(ssh_launcher_t *L)
{
    if (!L->relay)
        return;
    poll_stdin(L, 0);
    stdin_relay_stop(L->relay);
    if (L->in_ch) {
        if (!L->ranks[0].conn->lost)
            ssh_channel_close(L->in_ch);
        ssh_channel_free(L->in_ch);
        L->in_ch = NULL;
    }
}

/* Rank 0 ended (or its connection): its input goes nowhere now. */
static int rank0_gone(ssh_launcher_t *L)
{
    ssh_rank_t *rk = &L->ranks[0];
    return rk->have_status || rk->closed || rk->conn->lost ||
           ssh_channel_is_closed(L->in_ch);
}

int ssh_stdin_busy(ssh_launcher_t *L)
{
    const char *data;
    if (!L->relay || !L->in_ch)
        return 0;
    if (rank0_gone(L))
        return 1; /* to close */
    if (stdin_relay_pending(L->relay, &data) > 0)
        return ssh_channel_window_size(L->in_ch) > 0;
    return stdin_relay_done(L->relay) && !L->in_eof_sent;
}

void ssh_stdin_pump(ssh_launcher_t *L)
{
    if (!L->relay || !L->in_ch)
        return;
    ssh_rank_t *rk = &L->ranks[0];
    if (rank0_gone(L)) {
        ssh_stdin_close(L); /* its input goes nowhere now */
        return;
    }
    const char *data;
    size_t n;
    while ((n = stdin_relay_pending(L->relay, &data)) > 0) {
        uint32_t room = ssh_channel_window_size(L->in_ch);
        if (room == 0)
            break; /* the rank does not read: wait for a window adjust */
        /* Non-blocking: a blocking write ends in a flush that waits for
         * the socket (up to connect_timeout on a dead link), holding up
         * the supervisor; unsent bytes stay in libssh's buffer and go
         * out with the event loop. */
        ssh_set_blocking(rk->conn->s, 0);
        int w = ssh_channel_write(L->in_ch, data,
                                  (uint32_t)(n < room ? n : room));
        ssh_set_blocking(rk->conn->s, 1);
        if (w == SSH_AGAIN || w == 0)
            break; /* 0: a key re-exchange under way; again later */
        if (w <= 0) {
            dt_debug("ssh launcher: rank 0 takes no more standard input: %s",
                     ssh_get_error(rk->conn->s));
            ssh_stdin_close(L);
            return;
        }
        stdin_relay_consumed(L->relay, (size_t)w);
    }
    if (stdin_relay_done(L->relay) && !L->in_eof_sent) {
        /* dtctl's stdin ended: `cat` ends, the fifo's reader gets EOF */
        ssh_channel_send_eof(L->in_ch);
        L->in_eof_sent = 1;
    }
    poll_stdin(L, stdin_relay_wants_input(L->relay));
}
