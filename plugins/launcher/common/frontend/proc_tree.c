/* proc_tree.c — see proc_tree.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_tree.h"

typedef struct proc_entry {
    pid_t pid, ppid, pgrp;
} proc_entry_t;

/* pid, ppid and pgrp from /proc/PID/stat ("pid (comm) state ppid pgrp"). */
static int read_stat(pid_t pid, proc_entry_t *e)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')'); /* comm may hold spaces and parens */
    int ppid, pgrp;
    char state;
    if (!rp || sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
        return -1;
    e->pid = pid;
    e->ppid = (pid_t)ppid;
    e->pgrp = (pid_t)pgrp;
    return 0;
}

static proc_entry_t *snapshot(size_t *n)
{
    DIR *d = opendir("/proc");
    if (!d)
        return NULL;
    size_t cap = 256;
    proc_entry_t *v = malloc(cap * sizeof *v);
    *n = 0;
    struct dirent *de;
    while (v && (de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        if (*n == cap) {
            proc_entry_t *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
            cap *= 2;
        }
        if (read_stat((pid_t)pid, &v[*n]) == 0)
            (*n)++;
    }
    closedir(d);
    return v;
}

int proc_tree_signal(pid_t root, int signo, int root_group)
{
    size_t n = 0;
    proc_entry_t *v = snapshot(&n);
    int found = 0;
    if (v) {
        /* mark descendants: repeat until no new one is found */
        char *in = calloc(n ? n : 1, 1);
        for (int changed = 1; in && changed;) {
            changed = 0;
            for (size_t i = 0; i < n; i++) {
                if (in[i])
                    continue;
                int parent_in = v[i].ppid == root;
                for (size_t j = 0; !parent_in && j < n; j++)
                    parent_in = in[j] && v[j].pid == v[i].ppid;
                if (parent_in) {
                    in[i] = 1;
                    changed = 1;
                    found++;
                }
            }
        }
        for (size_t i = 0; in && i < n; i++)
            if (in[i]) {
                if (v[i].pgrp > 1 && v[i].pgrp != getpgrp())
                    kill(-v[i].pgrp, signo);
                kill(v[i].pid, signo);
            }
        free(in);
        free(v);
    }
    if (root_group)
        kill(-root, signo);
    return found;
}
