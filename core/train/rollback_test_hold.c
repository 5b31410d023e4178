/* rollback_test_hold.c — the DT_TEST_ROLLBACK_HOLD hook: rank 0 of a
 * rollback holds between choosing its checkpoint (by the LOSSES section
 * alone, unverified) and restoring it, so that a test can damage the
 * chosen file there, as a disk or a stray writer could, and see the
 * restore take the next sound one (tests/train_rollback.sh). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <dt/log.h>
#include "train.h"

#define HOLD_MAX_MS 60000
#define HOLD_TICK_MS 50

void dt_trainer_test_hold_rollback(const dt_trainer_t *t, uint64_t step)
{
    const char *file = getenv("DT_TEST_ROLLBACK_HOLD");
    if (t->rank != 0 || !file || !*file)
        return;
    char chosen[4096], tmp[4200];
    snprintf(chosen, sizeof chosen, "%s.chosen", file);
    snprintf(tmp, sizeof tmp, "%s.tmp", chosen);
    FILE *f = fopen(tmp, "w");
    if (f) { /* whole or not there: the test reads it once it exists */
        fprintf(f, "%llu\n", (unsigned long long)step);
        if (fclose(f) != 0 || rename(tmp, chosen) != 0)
            remove(tmp);
    }
    dt_warn("test hook DT_TEST_ROLLBACK_HOLD: step %llu's checkpoint chosen "
            "(in %s); waiting for %s before restoring it",
            (unsigned long long)step, chosen, file);
    for (int waited = 0; waited < HOLD_MAX_MS; waited += HOLD_TICK_MS) {
        if (access(file, F_OK) == 0)
            return;
        poll(NULL, 0, HOLD_TICK_MS);
    }
    dt_warn("test hook DT_TEST_ROLLBACK_HOLD: %s did not appear in %d s; "
            "going on", file, HOLD_MAX_MS / 1000);
}
