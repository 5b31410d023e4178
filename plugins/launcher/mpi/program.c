/* program.c — is a program runnable here (see program.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program.h"

int mpi_program_found(const char *prog)
{
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char dir[4096];
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && n < sizeof dir - 1 - strlen(prog) - 1) {
            snprintf(dir, sizeof dir, "%.*s/%s", (int)n, p, prog);
            if (access(dir, X_OK) == 0)
                return 1;
        }
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}
