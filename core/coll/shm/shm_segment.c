/* shm_segment.c — the job's shared segment: rank 0 creates it under an
 * unguessable name (mode 0600, O_EXCL), the name goes to the others
 * through the authenticated store, every rank maps it, and rank 0 unlinks
 * it as soon as all have, so nothing is left in /dev/shm even if the job
 * is killed later. posix_fallocate reserves the memory up front: a full
 * /dev/shm (64 MiB in a default Docker container) is a message now, not a
 * SIGBUS in the middle of a collective. All ranks then agree whether to
 * use it; any rank that cannot (no /dev/shm, another PID namespace) makes
 * every rank fall back to its transport. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "shm_internal.h"

#define PAGE ((size_t)4096)

static size_t ctl_len(int size)
{
    size_t n = sizeof(shm_header_t) + (size_t)size * sizeof(shm_rank_ctl_t);
    return (n + PAGE - 1) / PAGE * PAGE;
}

static size_t segment_len(int size, size_t chunk)
{
    return ctl_len(size) + (size_t)size * DT_SHM_SLOTS * 2 * chunk;
}

static void unmap(dt_shm_t *s)
{
    if (s->base && s->base != MAP_FAILED)
        munmap(s->base, s->len);
    s->base = NULL;
}

/* Test hook (DT_TEST_SHM_DIE_AFTER_CREATE=FILE): write the segment's path
 * into FILE and SIGKILL this process, as a kill -9 of rank 0 between
 * creating the segment and unlinking it (tests/shm_leftover.sh). */
static void test_die_after_create(const char *name)
{
    const char *file = getenv("DT_TEST_SHM_DIE_AFTER_CREATE");
    if (!file || !*file)
        return;
    FILE *f = fopen(file, "w");
    if (f) {
        fprintf(f, "/dev/shm%s\n", name);
        fclose(f);
    }
    raise(SIGKILL);
}

/* Rank 0: create, size and map the segment; name gets its name. */
static int create(dt_shm_t *s, char *name, size_t name_len, char *why,
                  size_t why_len)
{
    unsigned char rnd[12];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        snprintf(why, why_len, "getrandom: %s", strerror(errno));
        return 0;
    }
    int n = snprintf(name, name_len, "/dt-%d-", (int)getpid());
    for (size_t i = 0; i < sizeof rnd && n + 2 < (int)name_len; i++)
        n += snprintf(name + n, name_len - (size_t)n, "%02x", rnd[i]);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(why, why_len, "cannot create /dev/shm%s: %s", name,
                 strerror(errno));
        name[0] = '\0';
        return 0;
    }
    int err = ftruncate(fd, (off_t)s->len) ? errno : 0;
    if (!err)
        err = posix_fallocate(fd, 0, (off_t)s->len);
    if (!err) {
        s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED,
                       fd, 0);
        if (s->base == MAP_FAILED)
            err = errno;
    }
    close(fd);
    if (err) {
        snprintf(why, why_len,
                 "cannot reserve %zu KiB in /dev/shm: %s (a container may "
                 "need a larger --shm-size)",
                 s->len >> 10, strerror(err));
        shm_unlink(name);
        name[0] = '\0';
        s->base = NULL;
        return 0;
    }
    shm_header_t *h = s->base;
    h->size = s->size;
    h->chunk = s->chunk;
    __atomic_store_n(&h->magic, DT_SHM_MAGIC, __ATOMIC_RELEASE);
    test_die_after_create(name);
    return 1;
}

/* Ranks 1..: map the segment rank 0 created. */
static int attach(dt_shm_t *s, const char *name, char *why, size_t why_len)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        snprintf(why, why_len,
                 "cannot open /dev/shm%s that rank 0 created: %s (another "
                 "/dev/shm, as in a separate container?)",
                 name, strerror(errno));
        return 0;
    }
    struct stat st = {0};
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != s->len) {
        snprintf(why, why_len,
                 "/dev/shm%s does not match this job's layout (%lld bytes, "
                 "this rank expects %zu: ranks configured with different "
                 "shm_chunk?)",
                 name, (long long)st.st_size, s->len);
        close(fd);
        return 0;
    }
    s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->base == MAP_FAILED) {
        snprintf(why, why_len, "cannot map /dev/shm%s: %s", name,
                 strerror(errno));
        s->base = NULL;
        return 0;
    }
    const shm_header_t *h = s->base;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != DT_SHM_MAGIC ||
        h->size != s->size || h->chunk != s->chunk) {
        snprintf(why, why_len,
                 "/dev/shm%s does not match this job's layout (ranks "
                 "configured with different shm_chunk?)",
                 name);
        unmap(s);
        return 0;
    }
    return 1;
}

/* After everyone attached: can this rank see every peer's process? (A
 * dead peer is told from a slow one by its pid.) */
static int peers_visible(const dt_shm_t *s, char *why, size_t why_len)
{
    for (int p = 0; p < s->size; p++) {
        int32_t pid = __atomic_load_n(&s->ctl[p].pid, __ATOMIC_ACQUIRE);
        if (p == s->rank || !__atomic_load_n(&s->ctl[p].attached,
                                             __ATOMIC_ACQUIRE))
            continue;
        if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
            snprintf(why, why_len,
                     "rank %d's process (pid %d) is not visible from here "
                     "(another PID namespace?)",
                     p, (int)pid);
            return 0;
        }
    }
    return 1;
}

static dt_status_t key(char *buf, size_t len, const char *prefix,
                       const char *what)
{
    if ((size_t)snprintf(buf, len, "%s/%s", prefix, what) >= len)
        return DT_ERR_INVALID;
    return DT_OK;
}

dt_status_t dt_shm_open(const dt_shm_args_t *a, dt_shm_t **out)
{
    *out = NULL;
    if (a->size < 2)
        return DT_OK;
    size_t chunk = a->chunk ? a->chunk : DT_SHM_DEFAULT_CHUNK;
    chunk = chunk / 64 * 64;
    if (chunk < 4096) {
        dt_error("%s: [collectives] shm_chunk = %zu bytes: give at least 4K",
                 a->name, chunk);
        return DT_ERR_CONFIG;
    }
    /* Each rank's piece of a round must stay at least 256 bytes: a chunk
     * the key allows (4K..64M) is raised for many ranks on one host. */
    if (chunk / (size_t)a->size < 256) {
        if (a->rank == 0)
            dt_warn("%s: [collectives] shm_chunk = %zu bytes is below 256 "
                    "bytes a rank for %d ranks on a host: using %zu",
                    a->name, chunk, a->size, (size_t)a->size * 256);
        chunk = (size_t)a->size * 256;
    }
    dt_shm_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    s->rank = a->rank;
    s->size = a->size;
    s->chunk = chunk;
    s->timeout = a->timeout > 0 ? a->timeout : 60.0;
    s->spin = a->spin;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    s->yield = online > 0 && a->size > online;
    snprintf(s->name, sizeof s->name, "%s", a->name ? a->name : "shm");
    s->len = segment_len(a->size, chunk);
    s->store = a->store;
    s->global = malloc((size_t)a->size * sizeof *s->global);
    if (!s->global) {
        free(s);
        return DT_ERR_NOMEM;
    }
    for (int r = 0; r < a->size; r++)
        s->global[r] = a->global ? a->global[r] : r;

    char k_name[128], k_attach[128], k_ok[128], k_agree[128];
    char name[64] = "", why[256] = "";
    dt_status_t st = key(k_name, sizeof k_name, a->prefix, "name");
    if (st == DT_OK)
        st = key(k_attach, sizeof k_attach, a->prefix, "attached");
    if (st == DT_OK)
        st = key(k_ok, sizeof k_ok, a->prefix, "ok");
    if (st == DT_OK)
        st = key(k_agree, sizeof k_agree, a->prefix, "agreed");
    int mapped = 0;
    if (st == DT_OK && a->rank == 0) {
        mapped = create(s, name, sizeof name, why, sizeof why);
        st = dt_store_set(a->store, k_name, name, strlen(name));
    } else if (st == DT_OK) {
        void *v = NULL;
        size_t len = 0;
        st = dt_store_get(a->store, k_name, s->timeout, &v, &len);
        if (st == DT_OK && len > 0 && len < sizeof name) {
            memcpy(name, v, len);
            name[len] = '\0';
            mapped = attach(s, name, why, sizeof why);
        } else if (st == DT_OK) {
            snprintf(why, sizeof why, "rank 0 could not create a segment");
        }
        free(v);
    }
    if (mapped) {
        s->hdr = s->base;
        s->ctl = (shm_rank_ctl_t *)((char *)s->base + sizeof(shm_header_t));
        s->data = (char *)s->base + ctl_len(a->size);
        __atomic_store_n(&s->ctl[a->rank].pid, (int32_t)getpid(),
                         __ATOMIC_RELEASE);
        __atomic_store_n(&s->ctl[a->rank].waiting_on, -1, __ATOMIC_RELEASE);
        __atomic_store_n(&s->ctl[a->rank].attached, 1, __ATOMIC_RELEASE);
    }
    if (st == DT_OK)
        st = dt_store_barrier(a->store, k_attach, a->size, s->timeout);
    if (a->rank == 0 && name[0])
        shm_unlink(name);
    int ok = mapped && peers_visible(s, why, sizeof why);
    int64_t agreed = 0;
    if (st == DT_OK)
        st = dt_store_add(a->store, k_ok, ok, NULL);
    if (st == DT_OK)
        st = dt_store_barrier(a->store, k_agree, a->size, s->timeout);
    if (st == DT_OK)
        st = dt_store_add(a->store, k_ok, 0, &agreed);
    if (st != DT_OK || agreed != a->size) {
        /* This rank's own failure is worth a warning (the job runs, but
         * slower); that it follows another rank is detail. */
        if (st == DT_OK && why[0])
            dt_warn("%s: rank %d: collectives through the transport, not "
                    "shared memory: %s",
                    s->name, a->rank, why);
        else if (st == DT_OK)
            dt_debug("%s: rank %d: collectives through the transport: "
                     "another rank cannot use shared memory",
                     s->name, a->rank);
        unmap(s);
        free(s->global);
        free(s);
        return st;
    }
    dt_debug("%s: rank %d: collectives through shared memory (%d ranks, "
             "%zu KiB chunks, %zu KiB segment)",
             s->name, a->rank, a->size, chunk >> 10, s->len >> 10);
    *out = s;
    return DT_OK;
}

void dt_shm_close(dt_shm_t *s)
{
    if (!s)
        return;
    unmap(s);
    free(s->global);
    free(s);
}
