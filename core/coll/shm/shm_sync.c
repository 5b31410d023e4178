/* shm_sync.c — how ranks wait on each other's round counters in the
 * shared segment.
 *
 * A wait first polls (a round of a large collective is due within
 * microseconds, and a sleeping rank costs a futex wake-up of 5-20 us on
 * this VM), then sleeps on the counter's futex in slices. Between slices
 * it checks that the peer's process still exists, so a dead peer is named
 * within a slice rather than after the timeout; a live peer silent for the
 * whole timeout is named as hung. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include "shm_internal.h"
#include <dt/wait.h>

/* How often a sleeping wait looks at the peer's process and the clock. */
#define SLEEP_SLICE_NS (20 * 1000 * 1000)
/* Two looks this far apart (a slice is 20 ms) mean this rank itself did
 * not run: the whole job stopped (Ctrl-Z, kill -STOP of every rank) and
 * continued. That time is not the peer's silence: a waiter that resumed
 * first named a peer not yet continued as hung. */
#define AWAY_S 1.0

static int reached(uint32_t v, uint32_t want)
{
    return (int32_t)(v - want) >= 0;
}

static uint32_t load(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void futex_wait(uint32_t *addr, uint32_t val, long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    /* Shared (not FUTEX_PRIVATE): the word is in a segment other
     * processes map. EAGAIN (the word changed) and EINTR just return. */
    syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake_all(uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void dt_shm_post(dt_shm_t *s, shm_flag_t *f, uint32_t seq)
{
    (void)s;
    /* Sequentially consistent store then load, against the waiter's
     * increment of sleepers then load of seq: one of the two sees the
     * other, so no wake-up is lost. */
    __atomic_store_n(&f->seq, seq, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&f->sleepers, __ATOMIC_SEQ_CST))
        futex_wake_all(&f->seq);
}

void dt_shm_fail(dt_shm_t *s, int dead_rank)
{
    int32_t none = 0;
    __atomic_compare_exchange_n(&s->hdr->failed, &none, dead_rank + 1, 0,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    if (none == 0)
        __atomic_store_n(&s->hdr->failed_by, s->rank, __ATOMIC_SEQ_CST);
    for (int r = 0; r < s->size; r++) {
        futex_wake_all(&s->ctl[r].posted.seq);
        futex_wake_all(&s->ctl[r].reduced.seq);
        futex_wake_all(&s->ctl[r].done.seq);
    }
}

/* Gone: no such process, or a zombie its parent has not reaped yet. */
static int peer_gone(const dt_shm_t *s, int peer)
{
    pid_t pid = (pid_t)s->ctl[peer].pid;
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Another rank found a peer dead: stop too, naming the same peer. */
static dt_status_t failed_elsewhere(dt_shm_t *s, const char *what)
{
    int32_t f = __atomic_load_n(&s->hdr->failed, __ATOMIC_ACQUIRE);
    if (f == 0)
        return DT_OK;
    dt_error("%s: rank %d: %s: rank %d is gone (noticed by rank %d); the "
             "job cannot continue",
             s->name, shm_global(s, s->rank), what, shm_global(s, f - 1),
             shm_global(s, __atomic_load_n(&s->hdr->failed_by,
                                           __ATOMIC_ACQUIRE)));
    return s->failed = DT_ERR_PEER;
}

static int poll_for(dt_shm_t *s, const shm_flag_t *f, uint32_t seq,
                    double start)
{
    /* Ranks outnumbering CPUs: yield between polls, so the peer being
     * waited for can run on this CPU. */
    for (;;) {
        for (int i = 0; i < 128; i++) {
            if (reached(load(&f->seq), seq))
                return 1;
            cpu_relax();
        }
        if (dt_clock_now() - start >= s->spin)
            return 0;
        if (s->yield)
            sched_yield();
    }
}

/* The rank at the end of the chain of waits that starts at peer: while
 * the rank waited on is itself asleep in a wait with a recent beat, the
 * fault lies further on. A SIGSTOPped rank's beat stops; a rank busy
 * outside the segment (computing, or across hosts) waits on nobody here. */
static int silent_first(const dt_shm_t *s, int peer)
{
    uint64_t now = (uint64_t)(dt_clock_now() * 1000.0);
    uint64_t fresh = s->timeout > 4.0 ? 2000 : (uint64_t)(s->timeout * 500);
    int p = peer;
    for (int hops = 0; hops < s->size; hops++) {
        int w = __atomic_load_n(&s->ctl[p].waiting_on, __ATOMIC_ACQUIRE);
        uint64_t beat = __atomic_load_n(&s->ctl[p].beat_ms, __ATOMIC_ACQUIRE);
        if (w < 0 || w >= s->size || w == p || now - beat > fresh)
            break;
        p = w;
    }
    return p;
}

/* The failure record (dt/store.h): the first rank to record wins, so
 * every rank and dtctl name the same root cause. Bounded: a store that
 * does not answer (a stopped dtctl) once held this rank 2 minutes after
 * its own error line. */
static void record(const dt_shm_t *s, int culprit, const char *how)
{
    if (s->store)
        dt_store_culprit_record_bounded(s->store, shm_global(s, culprit),
                                        shm_global(s, s->rank), how,
                                        DT_STORE_FAILURE_WAIT_S);
}

static void beat(dt_shm_t *s, int waiting_on)
{
    __atomic_store_n(&s->ctl[s->rank].beat_ms,
                     (uint64_t)(dt_clock_now() * 1000.0), __ATOMIC_RELEASE);
    __atomic_store_n(&s->ctl[s->rank].waiting_on, waiting_on,
                     __ATOMIC_RELEASE);
}

static dt_status_t sleep_until(dt_shm_t *s, int peer, shm_flag_t *f,
                               uint32_t seq, const char *what, double start);

dt_status_t dt_shm_wait(dt_shm_t *s, int peer, shm_flag_t *f, uint32_t seq,
                        const char *what)
{
    if (reached(load(&f->seq), seq))
        return DT_OK;
    if (s->failed != DT_OK)
        return s->failed;
    double start = dt_clock_now();
    if (s->spin > 0 && poll_for(s, f, seq, start))
        return DT_OK;
    beat(s, peer);
    dt_status_t st = sleep_until(s, peer, f, seq, what, start);
    beat(s, -1);
    return st;
}

static dt_status_t sleep_until(dt_shm_t *s, int peer, shm_flag_t *f,
                               uint32_t seq, const char *what, double start)
{
    double looked = start; /* the clock's last reading in this wait */
    for (;;) {
        beat(s, peer);
        __atomic_fetch_add(&f->sleepers, 1, __ATOMIC_SEQ_CST);
        uint32_t v = __atomic_load_n(&f->seq, __ATOMIC_SEQ_CST);
        if (!reached(v, seq))
            futex_wait(&f->seq, v, SLEEP_SLICE_NS);
        __atomic_fetch_sub(&f->sleepers, 1, __ATOMIC_SEQ_CST);
        if (reached(load(&f->seq), seq))
            return DT_OK;
        DT_CHECK(failed_elsewhere(s, what));
        if (peer_gone(s, peer)) {
            dt_error("%s: rank %d: %s: rank %d (pid %d) is gone; the job "
                     "cannot continue",
                     s->name, shm_global(s, s->rank), what,
                     shm_global(s, peer), (int)s->ctl[peer].pid);
            record(s, peer, "exited");
            dt_shm_fail(s, peer);
            return s->failed = DT_ERR_PEER;
        }
        double now = dt_clock_now();
        if (now - looked > AWAY_S)
            start += now - looked; /* this rank was stopped meanwhile */
        looked = now;
        if (now - start >= s->timeout) {
            int root = silent_first(s, peer);
            char via[64] = "";
            if (root != peer)
                snprintf(via, sizeof via, " (reached through rank %d)",
                         shm_global(s, peer));
            dt_error("%s: rank %d: %s: rank %d went silent%s: hung, stopped "
                     "or unreachable (nothing for %.3g s; [cluster] "
                     "timeout)",
                     s->name, shm_global(s, s->rank), what,
                     shm_global(s, root), via, s->timeout);
            record(s, root, "hung");
            return s->failed = DT_ERR_PEER;
        }
    }
}

dt_status_t dt_shm_wait_all(dt_shm_t *s, size_t flag_off, uint32_t seq,
                            const char *what)
{
    for (int p = 0; p < s->size; p++) {
        if (p == s->rank)
            continue;
        shm_flag_t *f = (shm_flag_t *)((char *)&s->ctl[p] + flag_off);
        DT_CHECK(dt_shm_wait(s, p, f, seq, what));
    }
    return DT_OK;
}
