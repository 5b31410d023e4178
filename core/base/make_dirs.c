/* make_dirs.c — mkdir -p (make_dirs.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dt/log.h>
#include "make_dirs.h"

dt_status_t dt_make_dirs(const char *dir, const char *what, const char *hint,
                         dt_status_t (*made)(char *path))
{
    char *p = strdup(dir);
    if (!p)
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) == 0) {
            if (made)
                st = made(p);
        } else if (errno != EEXIST) {
            dt_error("cannot create %s %s: %s (check %s)", what, p,
                     strerror(errno), hint);
            st = DT_ERR_IO;
        }
        *s = c;
        if (c == '\0' || st != DT_OK)
            break;
    }
    free(p);
    return st;
}
