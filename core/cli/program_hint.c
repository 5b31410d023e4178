/* program_hint.c — see program_hint.h. */
#include <stdio.h>
#include <string.h>

#include "program_hint.h"

void dt_cli_program_hint(const dt_cli_t *cli, const char *prog, char *out,
                         size_t len)
{
    size_t n = strlen(prog);
    int script = n >= 3 && strcmp(prog + n - 3, ".py") == 0;
    int np = cli->np > 0 ? cli->np
             : cli->nproc_per_node > 0 ? cli->nproc_per_node
                                       : 4;
    snprintf(out, len, "dtctl run -n %d -- %s%s", np,
             script ? "python3 " : "", prog);
}
