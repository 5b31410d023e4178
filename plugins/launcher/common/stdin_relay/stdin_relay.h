/* stdin_relay.h — dtctl's standard input passed on to rank 0, as mpirun
 * does, by a launcher that can write to that rank's stdin (local: a pipe;
 * ssh: a channel). It never blocks: dtctl's stdin is read only when poll()
 * says it is readable and the chunk before was passed on, so a rank that
 * never reads costs one chunk here (plus what its pipe or channel holds),
 * and neither the job nor its stop waits for it. */
#ifndef DT_LAUNCHER_STDIN_RELAY_H
#define DT_LAUNCHER_STDIN_RELAY_H

#include <stddef.h>

#define STDIN_RELAY_CHUNK 4096

typedef struct stdin_relay {
    int src;        /* dtctl's stdin; -1 once it ended (or was stopped) */
    int tty;        /* src is a terminal                               */
    char buf[STDIN_RELAY_CHUNK];
    size_t off, len; /* buf[off..len): read, not passed on yet          */
} stdin_relay_t;

void stdin_relay_init(stdin_relay_t *r, int src);
/* Whether to poll src for input now: nothing is waiting to be passed
 * on, it has not ended, and (a terminal) dtctl is in the terminal's
 * foreground: a dtctl in the background that read it would be stopped
 * by SIGTTIN. */
int stdin_relay_wants_input(const stdin_relay_t *r);
/* One read() from src, after poll() said it is readable. End of file or
 * an error ends the input. */
void stdin_relay_read(stdin_relay_t *r);
/* The bytes waiting to be passed on (*data); 0: none. */
size_t stdin_relay_pending(const stdin_relay_t *r, const char **data);
/* n of them were passed on. */
void stdin_relay_consumed(stdin_relay_t *r, size_t n);
/* The input ended and all of it was passed on: close the rank's stdin
 * now (its end of file). */
int stdin_relay_done(const stdin_relay_t *r);
/* Nothing more is read or passed on (the rank ended, or the launcher
 * cannot write to it). */
void stdin_relay_stop(stdin_relay_t *r);

#endif /* DT_LAUNCHER_STDIN_RELAY_H */
