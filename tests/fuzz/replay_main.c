/* replay_main.c — run a fuzz target on files without libFuzzer: every
 * file named, or every file in a directory named, in name order. What
 * make check does with each target's corpus (tests/fuzz_replay.sh): a
 * crash, a sanitizer report or a hang there fails the suite. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
            }
            buf = p;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no %s\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 2;
            files++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, by_name);
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            if (names[k]->d_name[0] != '.' && stat(path, &st) == 0 &&
                S_ISREG(st.st_mode)) {
                if (run_file(path) != 0)
                    return 2;
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d input%s\n", files, files == 1 ? "" : "s");
    return files ? 0 : 2;
}
