/* fuzz_scratch.c — the scratch file the path-taking readers read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char scratch[4096];

static void remove_scratch(void)
{
    if (scratch[0])
        unlink(scratch);
}

const char *fuzz_scratch_file(const uint8_t *data, size_t size,
                              const char *suffix)
{
    if (!scratch[0]) {
        /* /dev/shm when there is one: no disk on the fuzzing loop. */
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
        if (!dir)
            dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(scratch, sizeof scratch, "%s/dt-fuzz-%d%s", dir,
                 (int)getpid(), suffix);
        atexit(remove_scratch);
    }
    FILE *f = fopen(scratch, "wb");
    if (!f)
        return NULL;
    int ok = fwrite(data, 1, size, f) == size;
    ok &= fclose(f) == 0;
    return ok ? scratch : NULL;
}
