/* stage_reader.c — a worker that reads the staged data set: prints the
 * directory dt_data_path() gives and the size of one file in it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <dt/staging.h>

int main(void)
{
    char *path = NULL, file[4096];
    if (dt_data_path(NULL, &path) != DT_OK)
        return 1;
    snprintf(file, sizeof file, "%s/train.bin", path);
    struct stat sb;
    if (stat(file, &sb) != 0) {
        fprintf(stderr, "cannot read %s\n", file);
        free(path);
        return 1;
    }
    printf("read %s %lld\n", path, (long long)sb.st_size);
    free(path);
    return 0;
}
