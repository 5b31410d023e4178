/* test_ckpt_dir.c — a checkpoint_dir reached through symbolic links is
 * followed once, as the kernel follows it (relative targets, "..", links
 * inside links, a loop refused), and the checks say a link that another
 * user could change (in a directory every user may write, without the
 * sticky bit), not one in a sticky one; dt_train_latest_checkpoint (the
 * public call dtctl makes at each restart) checks its directory as rank
 * 0 does, saying it once, and says nothing of one not there. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/train.h>
#include "ckpt/ckpt.h"
#include "stderr_capture.h"

static char dir[] = "/tmp/dt-test-ckpt-dir-XXXXXX";
static char rdir[PATH_MAX]; /* dir without links */

static void at(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static void make(const char *name, mode_t mode)
{
    char p[PATH_MAX];
    at(p, sizeof p, name);
    assert_int_equal(mkdir(p, mode), 0);
    assert_int_equal(chmod(p, mode), 0); /* past the umask */
}

static void link_to(const char *target, const char *name)
{
    char p[PATH_MAX];
    at(p, sizeof p, name);
    assert_int_equal(symlink(target, p), 0);
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* The links met, for the walk's test. */
typedef struct seen {
    int n;
    char link[4][PATH_MAX], parent[4][PATH_MAX];
} seen_t;

static void note_link(void *arg, const char *link, const char *parent,
                      const struct stat *lsb)
{
    seen_t *s = arg;
    assert_true(S_ISLNK(lsb->st_mode));
    if (s->n < 4) {
        snprintf(s->link[s->n], PATH_MAX, "%s", link);
        snprintf(s->parent[s->n], PATH_MAX, "%s", parent);
    }
    s->n++;
}

/* No link: the path as given, relative too; a link (a relative target
 * with "..", leading to another link): where it leads; each link named
 * by the directory it is really in. */
static void test_resolve(void **state)
{
    (void)state;
    char p[PATH_MAX], want[PATH_MAX + 16], real[PATH_MAX];
    char *path = NULL;
    make("a", 0700);
    make("a/real", 0700);
    make("b", 0700);
    at(p, sizeof p, "a/real");
    assert_int_equal(dt_ckpt_dir_resolve(p, &path), DT_OK);
    assert_string_equal(path, p);
    free(path);
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(dt_ckpt_dir_resolve("a/./real", &path), DT_OK);
    assert_string_equal(path, "a/./real");
    free(path);
    /* b/hop -> ../a/real; top -> b/hop */
    link_to("../a/real", "b/hop");
    link_to("b/hop", "top");
    seen_t seen = {0};
    assert_int_equal(dt_ckpt_dir_walk("top", real, note_link, &seen), 2);
    snprintf(want, sizeof want, "%s/a/real", rdir);
    assert_string_equal(real, want);
    assert_int_equal(seen.n, 2);
    snprintf(want, sizeof want, "%s/top", rdir);
    assert_string_equal(seen.link[0], want);
    assert_string_equal(seen.parent[0], rdir);
    snprintf(want, sizeof want, "%s/b/hop", rdir);
    assert_string_equal(seen.link[1], want);
    at(p, sizeof p, "top");
    assert_int_equal(dt_ckpt_dir_resolve(p, &path), DT_OK);
    snprintf(want, sizeof want, "%s/a/real", rdir);
    assert_string_equal(path, want);
    free(path);
    /* a loop: refused, named */
    link_to("loop2", "loop1");
    link_to("loop1", "loop2");
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_dir_resolve("loop1/x", &path), DT_ERR_IO);
    char *log = capture_end(&cap);
    assert_null(path);
    assert_non_null(strstr(log, "checkpoint_dir loop1/x: cannot follow its "
                                "path: Too many levels of symbolic links"));
    free(log);
    assert_int_equal(chdir("/"), 0);
}

/* The start's check through a link: the resolved path comes back, said
 * with the path as given; a link another user could replace is said,
 * one in a sticky directory is not. */
static void test_check_through_link(void **state)
{
    (void)state;
    char p[PATH_MAX], want[4 * PATH_MAX + 400];
    char *path = NULL;
    make("ck", 0700);
    make("open", 0777);
    make("sticky", 01777);
    char target[PATH_MAX + 8];
    snprintf(target, sizeof target, "%s/ck", rdir);
    link_to(target, "open/l");
    link_to(target, "sticky/l");

    at(p, sizeof p, "sticky/l");
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_check_dir(p, &path), DT_OK);
    char *log = capture_end(&cap);
    assert_string_equal(path, target);
    snprintf(want, sizeof want, "[train] checkpoint_dir %s (-> %s): a "
             "symbolic link on the way, followed once", p, target);
    assert_non_null(strstr(log, want));
    assert_null(strstr(log, "warning"));
    free(log);
    free(path);

    at(p, sizeof p, "open/l");
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_check_dir(p, &path), DT_OK);
    log = capture_end(&cap);
    assert_string_equal(path, target);
    snprintf(want, sizeof want, "[train] checkpoint_dir %s (-> %s) goes "
             "through the symbolic link %s/open/l, under %s/open, which "
             "every user may write and which lacks the sticky bit: any user "
             "could point it elsewhere", p, target, rdir, rdir);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "give the directory itself ([train] "
             "checkpoint_dir = %s)", target);
    assert_non_null(strstr(log, want));
    free(log);
    free(path);
}

/* dtctl's question at each restart: the directory is checked as rank 0
 * checks it, said once; one not there (another host's) is quiet. */
static void test_latest_checks_once(void **state)
{
    (void)state;
    char p[PATH_MAX];
    make("world", 0777);
    at(p, sizeof p, "world");
    dt_train_checkpoint_t ck;
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_train_latest_checkpoint(p, &ck), DT_ERR_NOT_FOUND);
    assert_int_equal(dt_train_latest_checkpoint(p, &ck), DT_ERR_NOT_FOUND);
    char *log = capture_end(&cap);
    assert_int_equal(count(log, "is writable by every user (mode 0777)"), 1);
    free(log);
    at(p, sizeof p, "not-here");
    capture_begin(&cap);
    assert_int_equal(dt_train_latest_checkpoint(p, &ck), DT_ERR_NOT_FOUND);
    log = capture_end(&cap);
    assert_string_equal(log, "");
    free(log);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir) || !realpath(dir, rdir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_check_through_link),
        cmocka_unit_test(test_latest_checks_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
