/* cmd_run.c — `dtctl run` (being written: see issue 2). */
#include <dt/log.h>
#include "cli.h"
int dt_cmd_run(dt_cli_t *cli) { (void)cli; dt_error("dtctl run: not built yet"); return 1; }
