/* program_hint.h — the `dtctl run` line to suggest when a program was
 * given the torchrun way (no '--'). */
#ifndef DT_CLI_PROGRAM_HINT_H
#define DT_CLI_PROGRAM_HINT_H

#include <stddef.h>
#include "cli.h"

/* "dtctl run -n N -- [python3 ]PROG" into out: N as the user gave it (-n,
 * --nproc-per-node N), else 4 as an example; python3 before a *.py (a
 * bare "-- train.py" would not start: not on PATH, maybe not
 * executable). */
void dt_cli_program_hint(const dt_cli_t *cli, const char *prog, char *out,
                         size_t len);

#endif /* DT_CLI_PROGRAM_HINT_H */
