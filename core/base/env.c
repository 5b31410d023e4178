/* env.c — dt/env.h: a variable of an environment list, a program on PATH. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/env.h>

const char *dt_env_value(const char *const *env, const char *name)
{
    if (!name)
        return NULL;
    size_t n = strlen(name);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

int dt_program_found(const char *prog)
{
    if (!prog || !*prog)
        return 0;
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char full[4096];
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        /* An empty entry is skipped; one too long to join is too. */
        if (n > 0 && n + strlen(prog) + 2 < sizeof full) {
            snprintf(full, sizeof full, "%.*s/%s", (int)n, p, prog);
            if (access(full, X_OK) == 0)
                return 1;
        }
        p += n + (p[n] == ':');
    }
    return 0;
}
