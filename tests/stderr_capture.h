/* stderr_capture.h — capture what dt logs (stderr) during a test, so tests
 * can assert on the messages users would see. Header-only, for tests. */
#ifndef DT_TEST_STDERR_CAPTURE_H
#define DT_TEST_STDERR_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct capture {
    int saved_fd;
    FILE *tmp;
} capture_t;

/* Send fd 2 to a temporary file until capture_end(). */
static inline void capture_begin(capture_t *c)
{
    fflush(stderr);
    c->tmp = tmpfile();
    c->saved_fd = dup(STDERR_FILENO);
    if (c->tmp)
        dup2(fileno(c->tmp), STDERR_FILENO);
}

/* Restore stderr; return what was written (malloc'd, NUL-terminated),
 * also echoed to the real stderr so test logs keep it. */
static inline char *capture_end(capture_t *c)
{
    fflush(stderr);
    dup2(c->saved_fd, STDERR_FILENO);
    close(c->saved_fd);
    char *text = calloc(1, 1);
    if (!c->tmp)
        return text;
    long len = ftell(c->tmp);
    if (len > 0) {
        free(text);
        text = calloc(1, (size_t)len + 1);
        rewind(c->tmp);
        if (text && fread(text, 1, (size_t)len, c->tmp) != (size_t)len)
            text[0] = '\0';
        if (text)
            fputs(text, stderr);
    }
    fclose(c->tmp);
    return text;
}

/* Write text to a new temporary file named from tmpl ("/tmp/x-XXXXXX.ini"
 * style: suffix_len characters after the XXXXXX); returns tmpl. */
static inline char *write_temp(char *tmpl, int suffix_len, const char *text)
{
    int fd = suffix_len ? mkstemps(tmpl, suffix_len) : mkstemp(tmpl);
    if (fd < 0)
        return NULL;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len) {
        close(fd);
        return NULL;
    }
    close(fd);
    return tmpl;
}

#endif /* DT_TEST_STDERR_CAPTURE_H */
