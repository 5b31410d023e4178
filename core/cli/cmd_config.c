/* cmd_config.c — `dtctl config` (being written: see issue 2). */
#include <dt/log.h>
#include "cli.h"
int dt_cmd_config(dt_cli_t *cli) { (void)cli; dt_error("dtctl config: not built yet"); return 1; }
