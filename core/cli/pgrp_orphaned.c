/* pgrp_orphaned.c — see pgrp_orphaned.h: a scan of /proc. */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pgrp_orphaned.h"

/* ppid, pgrp and session of pid from /proc/PID/stat; 0 on success. */
static int stat_of(long pid, long *ppid, long *pgrp, long *sid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    char state;
    return p && sscanf(p + 1, " %c %ld %ld %ld", &state, ppid, pgrp, sid) == 4
               ? 0
               : -1;
}

int dt_pgrp_orphaned(void)
{
    long pg = (long)getpgrp(), sid = (long)getsid(0);
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int orphaned = 1, seen = 0;
    struct dirent *e;
    while (orphaned && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        long ppid, pgrp, s, pppid, ppgrp, psid;
        if (stat_of(atol(e->d_name), &ppid, &pgrp, &s) != 0 || pgrp != pg)
            continue;
        seen++;
        if (ppid > 0 && stat_of(ppid, &pppid, &ppgrp, &psid) == 0 &&
            ppgrp != pg && psid == sid)
            orphaned = 0;
    }
    closedir(d);
    return seen ? orphaned : 0;
}
