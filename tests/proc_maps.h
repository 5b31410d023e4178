/* proc_maps.h — is a library mapped into this process? (/proc/self/maps)
 * Header-only, for tests of what gets loaded when. */
#ifndef DT_TEST_PROC_MAPS_H
#define DT_TEST_PROC_MAPS_H

#include <stdio.h>
#include <string.h>

/* 1 when a mapped file's path contains needle, 0 when none does, -1 when
 * /proc/self/maps cannot be read. */
static inline int maps_has(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

#endif /* DT_TEST_PROC_MAPS_H */
