/* run_test_hold.c — the DT_TEST_HOLD_START hook (run_test_hold.h). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <dt/log.h>
#include "run_test_hold.h"
#include "stop_signals.h"

#define HOLD_MAX_MS 60000
#define HOLD_TICK_MS 50

void run_test_hold_start(void)
{
    const char *file = getenv("DT_TEST_HOLD_START");
    if (!file || !*file)
        return;
    dt_warn("test hook DT_TEST_HOLD_START: the workers started; waiting for "
            "%s before supervising them", file);
    for (int waited = 0; waited < HOLD_MAX_MS; waited += HOLD_TICK_MS) {
        if (access(file, F_OK) == 0 || stop_signals_pending())
            return;
        poll(NULL, 0, HOLD_TICK_MS); /* a signal may cut it short */
    }
    dt_warn("test hook DT_TEST_HOLD_START: %s did not appear in %d s; "
            "going on", file, HOLD_MAX_MS / 1000);
}
