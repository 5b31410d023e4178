/* std_fds.h — descriptors 0, 1 and 2 open before a program opens anything:
 * shared by dtctl and dt-train (std_fds.c says why). */
#ifndef DT_CLI_STD_FDS_H
#define DT_CLI_STD_FDS_H

/* Each of stdin, stdout and stderr that is closed gets /dev/null. 0 when
 * all three are open afterwards, -1 (errno set) when /dev/null cannot be
 * opened. Call it first thing in main. */
int dt_std_fds_open(void);

/* 1 when stdin is /dev/null (or was closed: dt_std_fds_open gave it
 * /dev/null): nothing there for a rank to read. */
int dt_stdin_is_dev_null(void);

#endif /* DT_CLI_STD_FDS_H */
