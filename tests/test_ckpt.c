/* test_ckpt.c — checkpoint files: round trip, pruning (by the run's
 * lineage), a writer killed in the middle of a write leaves the previous
 * checkpoint intact, corrupt and truncated files are detected, named and
 * skipped, a newer dt's format is named as such and not gone past, an
 * unreadable directory is an error, the start-up check of the
 * directory, files set aside (a corrupt one --resume went past, a
 * rollback's) never go over an earlier one, and a write is durable:
 * fsync of the whole temporary file, rename, fsync of the directory (and
 * of the parent of a new one), in that order (this program defines
 * fsync, fdatasync and rename, exported so that libdt's calls come here,
 * records them and calls libc's; and renameat2 and link, to take
 * RENAME_NOREPLACE and hard links away as some filesystems do). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ckpt/ckpt.h"
#include "stderr_capture.h"

static char dir[] = "/tmp/dt-test-ckpt-XXXXXX";

/* ---- the calls that make a write durable, as libdt makes them ------------ */

typedef struct sync_event {
    char what[12];            /* "fsync", "fdatasync", "rename"            */
    char path[PATH_MAX];      /* fsync: the file (/proc/self/fd); rename:
                                 the old name                              */
    char to[PATH_MAX];        /* rename: the new name                      */
    long long size;           /* fsync of a regular file: its size then    */
} sync_event_t;

static int recording;
static sync_event_t events[16];
static int nevents;
static int (*real_fsync)(int), (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);

static sync_event_t *new_event(const char *what)
{
    if (!recording || nevents >= (int)(sizeof events / sizeof *events))
        return NULL;
    sync_event_t *e = &events[nevents++];
    memset(e, 0, sizeof *e);
    snprintf(e->what, sizeof e->what, "%s", what);
    e->size = -1;
    return e;
}

static void record_sync(const char *what, int fd)
{
    sync_event_t *e = new_event(what);
    char link[64];
    struct stat st;
    if (!e)
        return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, e->path, sizeof e->path - 1);
    e->path[n > 0 ? n : 0] = '\0';
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        e->size = (long long)st.st_size;
}

int fsync(int fd)
{
    int r = real_fsync(fd);
    if (r == 0)
        record_sync("fsync", fd);
    return r;
}

int fdatasync(int fd)
{
    int r = real_fdatasync(fd);
    if (r == 0)
        record_sync("fdatasync", fd);
    return r;
}

int rename(const char *from, const char *to)
{
    int r = real_rename(from, to);
    sync_event_t *e = r == 0 ? new_event("rename") : NULL;
    if (e) {
        snprintf(e->path, sizeof e->path, "%s", from);
        snprintf(e->to, sizeof e->to, "%s", to);
    }
    return r;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void clear_dir(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/* '%s'/.ckpt-*", dir, dir);
    assert_int_equal(system(cmd), 0);
}

static size_t count_files(const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* Parameters that depend on the step, so checkpoints are told apart. */
#define NPARAMS 50000
static float params[NPARAMS];

static void fill_params(uint64_t step)
{
    for (size_t i = 0; i < NPARAMS; i++)
        params[i] = (float)(step * 1000 + i) * 0.5f;
}

static dt_status_t write_step(uint64_t step, int keep)
{
    fill_params(step);
    uint64_t meta[2] = {step, step / 10};
    dt_ckpt_section_t secs[3] = {
        {.tag = 1, .len = sizeof meta, .data = meta},
        {.tag = 2, .len = sizeof params, .data = params},
        {.tag = 3, .len = 3, .data = "opt"},
    };
    return dt_ckpt_write(dir, step, secs, 3, keep, NULL);
}

static void check_step(const dt_ckpt_t *c, uint64_t step)
{
    assert_int_equal(c->step, step);
    assert_int_equal(c->version, DT_CKPT_VERSION);
    assert_int_equal(c->nsecs, 3);
    const dt_ckpt_section_t *m = dt_ckpt_find(c, 1), *p = dt_ckpt_find(c, 2),
                            *o = dt_ckpt_find(c, 3);
    assert_non_null(m);
    assert_non_null(p);
    assert_non_null(o);
    assert_null(dt_ckpt_find(c, 99));
    assert_int_equal(((const uint64_t *)m->data)[0], step);
    fill_params(step);
    assert_int_equal(p->len, sizeof params);
    assert_memory_equal(p->data, params, sizeof params);
    assert_int_equal(o->len, 3);
    assert_memory_equal(o->data, "opt", 3);
}

static void test_round_trip_and_keep(void **state)
{
    (void)state;
    clear_dir();
    dt_ckpt_t c;
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_ERR_NOT_FOUND);
    for (uint64_t s = 10; s <= 50; s += 10)
        assert_int_equal(write_step(s, 3), DT_OK);
    assert_int_equal(count_files("ckpt-"), 3);
    assert_int_equal(count_files(".ckpt-tmp-"), 0);
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_OK);
    check_step(&c, 50);
    assert_non_null(strstr(c.path, "ckpt-000000000050.dtckpt"));
    dt_ckpt_free(&c);
    /* a directory that does not exist yet is created */
    char sub[256];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    dt_ckpt_section_t one = {.tag = 7, .len = 0, .data = ""};
    char *path = NULL;
    assert_int_equal(dt_ckpt_write(sub, 1, &one, 1, 0, &path), DT_OK);
    assert_int_equal(dt_ckpt_read(path, &c), DT_OK);
    assert_int_equal(c.nsecs, 1);
    assert_int_equal(c.secs[0].len, 0);
    dt_ckpt_free(&c);
    free(path);
}

/* ---- a writer killed in the middle of its write ---------------------------- */

static int signal_fd = -1;

/* fill callback: after the first chunk is out, tell the parent and stop
 * forever, with a partial temporary file on disk. */
static dt_status_t slow_fill(void *arg, size_t off, void *buf, size_t n)
{
    (void)arg;
    memset(buf, 0xab, n);
    if (off > 0) {
        char c = 'w';
        if (write(signal_fd, &c, 1) != 1)
            _exit(3);
        for (;;)
            pause();
    }
    return DT_OK;
}

static void test_kill_during_write(void **state)
{
    (void)state;
    clear_dir();
    assert_int_equal(write_step(10, 3), DT_OK);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        signal_fd = fds[1];
        dt_ckpt_section_t big = {.tag = 2, .len = 1 << 20, .fill = slow_fill};
        dt_ckpt_write(dir, 20, &big, 1, 3, NULL);
        _exit(2); /* not reached: killed in slow_fill */
    }
    close(fds[1]);
    char c = 0;
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    /* the writer is mid-write: its temporary file exists, no new name */
    assert_int_equal(count_files(".ckpt-tmp-"), 1);
    assert_int_equal(count_files("ckpt-"), 1);
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    dt_ckpt_t ck;
    assert_int_equal(dt_ckpt_load_latest(dir, &ck), DT_OK);
    check_step(&ck, 10);
    dt_ckpt_free(&ck);
    /* the next successful write removes the stale temporary file */
    assert_int_equal(write_step(30, 3), DT_OK);
    assert_int_equal(count_files(".ckpt-tmp-"), 0);
    assert_int_equal(count_files("ckpt-"), 2);
}

/* ---- durability ------------------------------------------------------------ */

static void dump_events(void)
{
    for (int i = 0; i < nevents; i++)
        fprintf(stderr, "  %d: %s %s%s%s (size %lld)\n", i, events[i].what,
                events[i].path, events[i].to[0] ? " -> " : "", events[i].to,
                events[i].size);
}

/* A crash right after dt_ckpt_write returns must find the new checkpoint
 * whole: its bytes reached the disk before the name pointed at them
 * (fsync of the complete temporary file, then rename), and the new name
 * itself reached the disk (fsync of the directory after the rename). */
static void test_write_is_durable(void **state)
{
    (void)state;
    clear_dir();
    char rdir[PATH_MAX], final[PATH_MAX + 64];
    assert_non_null(realpath(dir, rdir));
    snprintf(final, sizeof final, "%s/ckpt-000000000060.dtckpt", dir);
    nevents = 0;
    recording = 1;
    dt_status_t st = write_step(60, 0);
    recording = 0;
    assert_int_equal(st, DT_OK);
    struct stat fst;
    assert_int_equal(stat(final, &fst), 0);
    /* the rename of a temporary file in dir to the checkpoint's name */
    int ren = -1;
    for (int i = 0; i < nevents; i++)
        if (strcmp(events[i].what, "rename") == 0 &&
            strcmp(events[i].to, final) == 0)
            ren = i;
    if (ren < 0) {
        dump_events();
        fail_msg("no rename to %s among the calls above", final);
    }
    const char *tmp = base_name(events[ren].path);
    assert_int_equal(strncmp(events[ren].path, dir, strlen(dir)), 0);
    /* before it: that file synced, at its final size */
    char want[PATH_MAX + 300];
    snprintf(want, sizeof want, "%s/%s", rdir, tmp);
    int synced = -1;
    for (int i = 0; i < ren; i++)
        if (strcmp(events[i].path, want) == 0 && events[i].what[0] == 'f' &&
            events[i].size == (long long)fst.st_size)
            synced = i;
    /* after it: the directory synced */
    int dir_synced = -1;
    for (int i = ren + 1; i < nevents && dir_synced < 0; i++)
        if (strcmp(events[i].what, "fsync") == 0 &&
            strcmp(events[i].path, rdir) == 0)
            dir_synced = i;
    if (synced < 0 || dir_synced < 0) {
        dump_events();
        fail_msg("%s: want fsync of the complete %s (%lld bytes) before "
                 "its rename, and fsync of %s after it; the calls were "
                 "above",
                 final, tmp, (long long)fst.st_size, rdir);
    }
}

/* ---- damaged files ---------------------------------------------------------- */

static void flip_byte(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, off, off < 0 ? SEEK_END : SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, -1, SEEK_CUR), 0);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void test_corrupt_byte_uses_previous(void **state)
{
    (void)state;
    clear_dir();
    assert_int_equal(write_step(10, 0), DT_OK);
    assert_int_equal(write_step(20, 0), DT_OK);
    char newest[512];
    snprintf(newest, sizeof newest, "%s/ckpt-000000000020.dtckpt", dir);
    flip_byte(newest, 24 + 16 + 16 + 1234); /* inside the parameters */
    dt_ckpt_t c;
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_read(newest, &c), DT_ERR_INVALID);
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_OK);
    char *log = capture_end(&cap);
    check_step(&c, 10);
    dt_ckpt_free(&c);
    char want[600];
    snprintf(want, sizeof want, "%s: checksum mismatch", newest);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "%s: skipped", newest);
    assert_non_null(strstr(log, want));
    free(log);
}

/* dt_ckpt_peek (a rollback's choice among large files): one section
 * without the others, the payloads neither read nor hashed (a flipped
 * byte among the parameters does not stop it), but a file whose sections
 * do not fill it (truncated) is refused, named. */
static void test_peek_one_section(void **state)
{
    (void)state;
    clear_dir();
    assert_int_equal(write_step(20, 0), DT_OK);
    char p[512];
    snprintf(p, sizeof p, "%s/ckpt-000000000020.dtckpt", dir);
    flip_byte(p, 24 + 16 + 16 + 1234); /* inside the parameters */
    char b[8] = {0};
    size_t len = 0;
    uint64_t step = 0;
    assert_int_equal(dt_ckpt_peek(p, 3, b, sizeof b, &len, &step), DT_OK);
    assert_int_equal(len, 3);
    assert_int_equal(step, 20);
    assert_memory_equal(b, "opt", 3);
    /* a longer section: its first cap bytes, its whole length */
    uint64_t meta = 0;
    assert_int_equal(dt_ckpt_peek(p, 1, &meta, sizeof meta, &len, &step),
                     DT_OK);
    assert_int_equal(len, 16);
    assert_int_equal(meta, 20);
    assert_int_equal(dt_ckpt_peek(p, 99, b, sizeof b, &len, &step),
                     DT_ERR_NOT_FOUND);
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(truncate(p, 1000), 0);
    dt_status_t st = dt_ckpt_peek(p, 3, b, sizeof b, &len, &step);
    char *log = capture_end(&cap);
    assert_int_equal(st, DT_ERR_INVALID);
    assert_non_null(strstr(log, "ckpt-000000000020.dtckpt: section 1"));
    assert_non_null(strstr(log, "runs past the end: corrupt"));
    free(log);
}

static void test_truncated_and_foreign(void **state)
{
    (void)state;
    clear_dir();
    assert_int_equal(write_step(10, 0), DT_OK);
    assert_int_equal(write_step(20, 0), DT_OK);
    assert_int_equal(write_step(30, 0), DT_OK);
    char p20[512], p30[512];
    snprintf(p20, sizeof p20, "%s/ckpt-000000000020.dtckpt", dir);
    snprintf(p30, sizeof p30, "%s/ckpt-000000000030.dtckpt", dir);
    assert_int_equal(truncate(p30, 1000), 0);
    flip_byte(p20, 8); /* the version field */
    dt_ckpt_t c;
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_OK);
    char *log = capture_end(&cap);
    check_step(&c, 10);
    dt_ckpt_free(&c);
    assert_non_null(strstr(log, "ckpt-000000000030.dtckpt: checksum "
                                "mismatch"));
    assert_non_null(strstr(log, "ckpt-000000000020.dtckpt: checkpoint format "
                                "version 17"));
    free(log);
    /* nothing valid at all: invalid (not "none"), each file named */
    flip_byte(p20, 8);
    assert_int_equal(truncate(p20, 10), 0);
    char p10[512];
    snprintf(p10, sizeof p10, "%s/ckpt-000000000010.dtckpt", dir);
    FILE *f = fopen(p10, "wb");
    fputs("this is not a checkpoint at all, just some text long enough to "
          "pass the length check", f);
    fclose(f);
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_ERR_INVALID);
    log = capture_end(&cap);
    assert_non_null(strstr(log, "ckpt-000000000020.dtckpt: not a dt "
                                "checkpoint (too short: truncated)"));
    assert_non_null(strstr(log, "ckpt-000000000010.dtckpt: not a dt "
                                "checkpoint (wrong magic)"));
    free(log);
}

/* Rewrite a file's format version with its checksum made to match again:
 * an intact checkpoint of another format, as another dt would write it. */
static void set_version(const char *path, uint32_t version)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    size_t len = (size_t)ftell(f);
    assert_true(len > 24 + 32);
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, len, f), len);
    for (int i = 0; i < 4; i++)
        buf[8 + i] = (unsigned char)(version >> (8 * i));
    unsigned int hlen = 0;
    assert_int_equal(EVP_Digest(buf, len - 32, buf + len - 32, &hlen,
                                EVP_sha256(), NULL), 1);
    assert_int_equal(hlen, 32);
    rewind(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

/* A newer dt's checkpoint (a later format version, intact) is said as
 * such, and --resume does not go back past it to an older file: that
 * would drop the newer dt's progress. A version no dt wrote (0) is
 * corruption, skipped like any. */
static void test_newer_format(void **state)
{
    (void)state;
    clear_dir();
    assert_int_equal(write_step(10, 0), DT_OK);
    assert_int_equal(write_step(20, 0), DT_OK);
    char p20[512];
    snprintf(p20, sizeof p20, "%s/ckpt-000000000020.dtckpt", dir);
    set_version(p20, DT_CKPT_VERSION + 1);
    dt_ckpt_t c;
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_read(p20, &c), DT_ERR_UNSUPPORTED);
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_ERR_UNSUPPORTED);
    char *log = capture_end(&cap);
    char want[800];
    snprintf(want, sizeof want, "%s was written by a newer dt (checkpoint "
             "format version %d; this dt reads version %d): resume it with "
             "that dt version or a later one", p20, DT_CKPT_VERSION + 1,
             DT_CKPT_VERSION);
    assert_non_null(strstr(log, want));
    assert_null(strstr(log, "corrupt"));
    assert_null(strstr(log, "skipped"));
    free(log);
    set_version(p20, 0);
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_load_latest(dir, &c), DT_OK);
    log = capture_end(&cap);
    check_step(&c, 10);
    dt_ckpt_free(&c);
    snprintf(want, sizeof want, "%s: checkpoint format version 0; this dt "
             "reads version %d only (no dt wrote that version: corrupt)",
             p20, DT_CKPT_VERSION);
    assert_non_null(strstr(log, want));
    free(log);
}

static void test_unwritable_dir(void **state)
{
    (void)state;
    /* below a regular file: fails even for root */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/file", dir);
    FILE *f = fopen(bad, "w");
    fclose(f);
    strcat(bad, "/sub");
    dt_ckpt_section_t one = {.tag = 1, .len = 1, .data = "x"};
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_write(bad, 1, &one, 1, 0, NULL), DT_ERR_IO);
    char *log = capture_end(&cap);
    assert_non_null(strstr(log, "cannot create checkpoint directory"));
    free(log);
}

/* A directory that cannot be read is an error naming it and errno, not
 * "no checkpoint" (which made --resume quietly start over); a missing
 * one is "none". */
static void test_unreadable_dir(void **state)
{
    (void)state;
    clear_dir();
    char bad[512], missing[512];
    snprintf(bad, sizeof bad, "%s/file", dir); /* ENOTDIR, even for root */
    snprintf(missing, sizeof missing, "%s/nothing", dir);
    FILE *f = fopen(bad, "w");
    fclose(f);
    dt_ckpt_t c;
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_load_latest(bad, &c), DT_ERR_IO);
    char *log = capture_end(&cap);
    char want[600];
    snprintf(want, sizeof want, "cannot read the checkpoint directory %s: "
             "Not a directory", bad);
    assert_non_null(strstr(log, want));
    free(log);
    assert_int_equal(dt_ckpt_load_latest(missing, &c), DT_ERR_NOT_FOUND);
}

static int exists(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* Pruning counts this run's lineage only: a newer file (a corrupt one
 * --resume went past) neither pushes out good checkpoints nor is
 * deleted; skipped steps likewise, once the run has passed them. */
static void test_prune_lineage(void **state)
{
    (void)state;
    clear_dir();
    for (uint64_t s = 16; s <= 48; s += 16) /* 16, 32, 48 */
        assert_int_equal(write_step(s, 0), DT_OK);
    /* resumed from 32 (48 corrupt), the run writes 40 with keep = 2 */
    assert_int_equal(write_step(40, 2), DT_OK);
    assert_true(exists("ckpt-000000000040.dtckpt"));
    assert_true(exists("ckpt-000000000032.dtckpt"));
    assert_true(exists("ckpt-000000000048.dtckpt"));
    assert_false(exists("ckpt-000000000016.dtckpt"));
    /* keep = 1: the newest good one stays, whatever lies above */
    assert_int_equal(write_step(44, 1), DT_OK);
    assert_true(exists("ckpt-000000000044.dtckpt"));
    assert_false(exists("ckpt-000000000040.dtckpt"));
    assert_true(exists("ckpt-000000000048.dtckpt"));
    /* past it (another world size writes 50, never 48): 48 is skipped */
    assert_int_equal(write_step(50, 0), DT_OK);
    const uint64_t skip[] = {48};
    dt_ckpt_prune(dir, 1, 50, skip, 1);
    assert_true(exists("ckpt-000000000050.dtckpt"));
    assert_true(exists("ckpt-000000000048.dtckpt"));
    assert_false(exists("ckpt-000000000044.dtckpt"));
}

/* Only regular files named ckpt-<digits>.dtckpt are in the series. */
static void test_list(void **state)
{
    (void)state;
    clear_dir();
    assert_int_equal(write_step(7, 0), DT_OK);
    assert_int_equal(write_step(300, 0), DT_OK);
    char p[512];
    snprintf(p, sizeof p, "%s/ckpt-000000000900.dtckpt", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/ckpt-12x.dtckpt", dir);
    fclose(fopen(p, "w"));
    snprintf(p, sizeof p, "%s/best.dtckpt", dir);
    fclose(fopen(p, "w"));
    dt_ckpt_entry_t *v = NULL;
    size_t n = 0;
    assert_int_equal(dt_ckpt_list(dir, &v, &n), DT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].step, 300);
    assert_string_equal(v[1].name, "ckpt-000000000007.dtckpt");
    free(v);
    snprintf(p, sizeof p, "%s/none", dir);
    assert_int_equal(dt_ckpt_list(p, &v, &n), DT_ERR_NOT_FOUND);
    assert_int_equal(n, 0);
}

/* The start-up check: a directory that cannot take a file fails naming
 * it and errno; a good one is created and left empty. */
static void test_check_dir(void **state)
{
    (void)state;
    clear_dir();
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s/new/ck", dir);
    char *path = NULL;
    assert_int_equal(dt_ckpt_check_dir(good, &path), DT_OK);
    assert_string_equal(path, good); /* no link on the way: as given */
    free(path);
    DIR *d = opendir(good);
    assert_non_null(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)))
        files += e->d_name[0] != '.' || strlen(e->d_name) > 2;
    closedir(d);
    assert_int_equal(files, 0);
    snprintf(bad, sizeof bad, "%s/file", dir);
    fclose(fopen(bad, "w"));
    strcat(bad, "/sub");
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_ckpt_check_dir(bad, &path), DT_ERR_IO);
    assert_null(path);
    char *log = capture_end(&cap);
    assert_non_null(strstr(log, "cannot create checkpoint directory"));
    assert_non_null(strstr(log, "Not a directory"));
    free(log);
}

/* A directory mkdir made reaches the disk with its parent's fsync. */
static void test_new_dir_synced(void **state)
{
    (void)state;
    clear_dir();
    char rdir[PATH_MAX], sub[PATH_MAX + 8], parent[PATH_MAX + 8];
    assert_non_null(realpath(dir, rdir));
    snprintf(sub, sizeof sub, "%s/p/q", dir);
    snprintf(parent, sizeof parent, "%s/p", rdir);
    dt_ckpt_section_t one = {.tag = 1, .len = 1, .data = "x"};
    nevents = 0;
    recording = 1;
    dt_status_t st = dt_ckpt_write(sub, 1, &one, 1, 0, NULL);
    recording = 0;
    assert_int_equal(st, DT_OK);
    int top = 0, mid = 0;
    for (int i = 0; i < nevents; i++) {
        top |= strcmp(events[i].what, "fsync") == 0 &&
               strcmp(events[i].path, rdir) == 0;
        mid |= strcmp(events[i].what, "fsync") == 0 &&
               strcmp(events[i].path, parent) == 0;
    }
    if (!top || !mid) {
        dump_events();
        fail_msg("want fsync of %s (holds p) and %s (holds q)", rdir, parent);
    }
}

/* ---- files set aside, never over another (ckpt_aside.c) ------------------ */

/* 0: libc's renameat2 and link; 1: no RENAME_NOREPLACE (NFS's EINVAL);
 * 2: and no hard links either (EPERM). */
static int aside_mode;
static int (*real_renameat2)(int, const char *, int, const char *,
                             unsigned int);
static int (*real_link)(const char *, const char *);

int renameat2(int ofd, const char *from, int nfd, const char *to,
              unsigned int flags)
{
    if (aside_mode >= 1 && (flags & RENAME_NOREPLACE)) {
        errno = EINVAL;
        return -1;
    }
    return real_renameat2(ofd, from, nfd, to, flags);
}

int link(const char *from, const char *to)
{
    if (aside_mode >= 2) {
        errno = EPERM;
        return -1;
    }
    return real_link(from, to);
}

static void put_text(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_text(const char *name, const char *want)
{
    char p[512], got[64] = "";
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    if (!f)
        fail_msg("%s: missing", p);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = '\0';
    assert_string_equal(got, want);
}

/* A corrupt file --resume went past, twice at one step: NAME.corrupt and
 * NAME.corrupt.1, the first never renamed over (each way the rename can
 * go: RENAME_NOREPLACE, a hard link, a look first); neither is in the
 * series; a file gone meanwhile is DT_ERR_NOT_FOUND. */
static void test_set_aside(void **state)
{
    (void)state;
    const char *name = "ckpt-000000000020.dtckpt";
    char to[4200], want[4200];
    for (aside_mode = 0; aside_mode <= 2; aside_mode++) {
        clear_dir();
        put_text(name, "first");
        assert_int_equal(dt_ckpt_set_aside(dir, name, ".corrupt", to,
                                           sizeof to), DT_OK);
        snprintf(want, sizeof want, "%s/%s.corrupt", dir, name);
        assert_string_equal(to, want);
        put_text(name, "second");
        assert_int_equal(dt_ckpt_set_aside(dir, name, ".corrupt", to,
                                           sizeof to), DT_OK);
        snprintf(want, sizeof want, "%s/%s.corrupt.1", dir, name);
        assert_string_equal(to, want);
        assert_text("ckpt-000000000020.dtckpt.corrupt", "first");
        assert_text("ckpt-000000000020.dtckpt.corrupt.1", "second");
        assert_false(exists(name));
        dt_ckpt_entry_t *v = NULL;
        size_t n = 1;
        assert_int_equal(dt_ckpt_list(dir, &v, &n), DT_OK);
        assert_int_equal(n, 0);
        free(v);
        assert_int_equal(dt_ckpt_set_aside(dir, name, ".corrupt", to,
                                           sizeof to), DT_ERR_NOT_FOUND);
    }
    aside_mode = 0;
    /* two rollbacks past step 30: both branches kept */
    clear_dir();
    size_t moved = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(write_step(30, 0), DT_OK);
        assert_int_equal(dt_ckpt_set_aside_after(dir, 20, ".diverged",
                                                 &moved), DT_OK);
        assert_int_equal(moved, 1);
    }
    assert_true(exists("ckpt-000000000030.dtckpt.diverged"));
    assert_true(exists("ckpt-000000000030.dtckpt.diverged.1"));
}

/* The file's mode is 0666 less the umask, as for metrics and TensorBoard
 * files: umask 077 gives 0600, umask 022 gives 0644 (a fixed fchmod 0644
 * once made every checkpoint world-readable). */
static void test_mode_follows_umask(void **state)
{
    (void)state;
    const mode_t masks[] = {077, 022, 027};
    const mode_t want[] = {0600, 0644, 0640};
    for (int i = 0; i < 3; i++) {
        clear_dir();
        mode_t old = umask(masks[i]);
        dt_ckpt_section_t one = {.tag = 1, .len = 1, .data = "x"};
        char *path = NULL;
        dt_status_t st = dt_ckpt_write(dir, 1, &one, 1, 0, &path);
        umask(old);
        assert_int_equal(st, DT_OK);
        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, want[i]);
        free(path);
    }
}

int main(void)
{
    *(void **)&real_fsync = dlsym(RTLD_NEXT, "fsync");
    *(void **)&real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    *(void **)&real_rename = dlsym(RTLD_NEXT, "rename");
    *(void **)&real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
    *(void **)&real_link = dlsym(RTLD_NEXT, "link");
    if (!real_fsync || !real_fdatasync || !real_rename || !real_renameat2 ||
        !real_link) {
        fprintf(stderr, "test_ckpt: no libc fsync/fdatasync/rename/"
                "renameat2/link: %s\n",
                dlerror());
        return 99;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_keep),
        cmocka_unit_test(test_kill_during_write),
        cmocka_unit_test(test_write_is_durable),
        cmocka_unit_test(test_corrupt_byte_uses_previous),
        cmocka_unit_test(test_peek_one_section),
        cmocka_unit_test(test_truncated_and_foreign),
        cmocka_unit_test(test_newer_format),
        cmocka_unit_test(test_unwritable_dir),
        cmocka_unit_test(test_unreadable_dir),
        cmocka_unit_test(test_prune_lineage),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_check_dir),
        cmocka_unit_test(test_new_dir_synced),
        cmocka_unit_test(test_mode_follows_umask),
        cmocka_unit_test(test_set_aside),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
