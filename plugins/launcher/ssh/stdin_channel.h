/* stdin_channel.h — dtctl's standard input to rank 0 over a channel of
 * its own (stdin_channel.c). */
#ifndef DT_LAUNCHER_SSH_STDIN_CHANNEL_H
#define DT_LAUNCHER_SSH_STDIN_CHANNEL_H

#include <dt/status.h>
#include "ssh_types.h"

/* With L->relay: open the channel to the fifo rank 0's marker named (its
 * open waits for it); none when it named none (no fifo could be made
 * there: it reads /dev/null). Blocking libssh calls: outside the event. */
dt_status_t ssh_stdin_open(ssh_launcher_t *L);
/* Around each poll of the event: pass waiting input on as far as the
 * channel's window allows, send its end of file once dtctl's stdin
 * ended, and keep dtctl's stdin in the event only while there is room
 * for more. Channel requests block: while ssh_stdin_busy says there is
 * one to make, call it with the sessions out of the event. */
void ssh_stdin_pump(ssh_launcher_t *L);
int ssh_stdin_busy(ssh_launcher_t *L);
/* Rank 0 ended, or the job is over: nothing more is read; the channel
 * closes (its `cat` ends; the watchdog ends what is left of it). */
void ssh_stdin_close(ssh_launcher_t *L);

#endif /* DT_LAUNCHER_SSH_STDIN_CHANNEL_H */
