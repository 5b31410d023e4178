/* temp_files.h — where dtctl plot and dtctl plan put their scratch files:
 * $TMPDIR when set (POSIX, as mktemp(1) and gnuplot), else /tmp. */
#ifndef DT_CLI_TEMP_FILES_H
#define DT_CLI_TEMP_FILES_H

#include <stddef.h>
#include <stdio.h>

/* $TMPDIR when set and not empty, else "/tmp". */
const char *dt_temp_dir(void);

/* name is the start of the file's name, its separator included
 * ("dt-plan-"); six random characters follow. */

/* A new private directory <temp dir>/<name>XXXXXX, its path in buf:
 * 0, or -1 after an error naming who, the directory and what to do. */
int dt_temp_mkdtemp(const char *who, const char *name, char *buf,
                    size_t len);

/* A new file <temp dir>/<name>XXXXXX, its path in buf: the open
 * descriptor (close-on-exec), or -1 after such an error. */
int dt_temp_mkstemp(const char *who, const char *name, char *buf,
                    size_t len);

/* An unnamed scratch file (as tmpfile(3), which ignores TMPDIR; and
 * close-on-exec): NULL after such an error. */
FILE *dt_temp_file(const char *who);

#endif /* DT_CLI_TEMP_FILES_H */
