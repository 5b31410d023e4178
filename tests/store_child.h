/* store_child.h — a rendezvous store server in a child process, so that a
 * test can stop it (SIGSTOP) as a stopped dtctl is, continue it and end
 * it. Header-only, for the cmocka tests of the failure paths that ask a
 * store that does not answer. */
#ifndef DT_TEST_STORE_CHILD_H
#define DT_TEST_STORE_CHILD_H

#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/store.h>

typedef struct store_child {
    pid_t pid;
    int port;
    char where[64]; /* "127.0.0.1:PORT" */
} store_child_t;

/* Start it with the job token; 0 when it did not start. */
static inline int store_child_start(store_child_t *sc,
                                    const uint8_t token[DT_TOKEN_BYTES])
{
    int p[2];
    if (pipe(p) != 0)
        return 0;
    sc->pid = fork();
    if (sc->pid < 0)
        return 0;
    if (sc->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no store left if the test dies */
        close(p[0]);
        dt_store_server_t *srv = NULL;
        int port = -1;
        if (dt_store_server_start("127.0.0.1", 0, token, &srv) == DT_OK)
            port = dt_store_server_port(srv);
        if (write(p[1], &port, sizeof port) != sizeof port || port < 0)
            _exit(1);
        for (;;)
            pause(); /* until store_child_end's SIGKILL */
    }
    close(p[1]);
    sc->port = -1;
    ssize_t n = read(p[0], &sc->port, sizeof sc->port);
    close(p[0]);
    snprintf(sc->where, sizeof sc->where, "127.0.0.1:%d", sc->port);
    return n == (ssize_t)sizeof sc->port && sc->port > 0;
}

/* Stopped once it returns 1 (waitpid saw the stop). */
static inline int store_child_stop(const store_child_t *sc)
{
    int ws;
    return kill(sc->pid, SIGSTOP) == 0 &&
           waitpid(sc->pid, &ws, WUNTRACED) == sc->pid && WIFSTOPPED(ws);
}

static inline void store_child_continue(const store_child_t *sc)
{
    kill(sc->pid, SIGCONT);
}

static inline void store_child_end(store_child_t *sc)
{
    int ws;
    if (sc->pid <= 0)
        return;
    kill(sc->pid, SIGKILL);
    waitpid(sc->pid, &ws, 0);
    sc->pid = 0;
}

#endif /* DT_TEST_STORE_CHILD_H */
