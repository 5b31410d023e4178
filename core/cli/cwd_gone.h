/* cwd_gone.h — a warning when dtctl runs in a directory that was deleted
 * (cwd_gone.c says why). */
#ifndef DT_CLI_CWD_GONE_H
#define DT_CLI_CWD_GONE_H

/* Warn, naming what fails and what to do, when the current directory no
 * longer exists; 1 when it warned, else 0. */
int dt_warn_if_cwd_gone(void);

#endif /* DT_CLI_CWD_GONE_H */
