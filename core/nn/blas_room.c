/* blas_room.c — how many OpenBLAS threads fit under an address-space
 * limit (see blas_room.h). */
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nn/blas_room.h"

unsigned long long dt_blas_bytes_needed(const dt_blas_cost_t *cost, int want,
                                        int pool)
{
    unsigned long long more = want > pool ? (unsigned long long)(want - pool)
                                          : 0;
    if (cost->thread && more > (ULLONG_MAX / 2) / cost->thread)
        return ULLONG_MAX; /* fits nowhere: no overflow into a small need */
    return cost->caller + more * cost->thread + cost->margin;
}

int dt_blas_threads_fitting(unsigned long long room,
                            const dt_blas_cost_t *cost, int want, int pool)
{
    if (pool < 1)
        pool = 1;
    unsigned long long first = cost->caller + cost->margin;
    if (cost->caller && room < first)
        return 0;
    if (want <= pool || !cost->thread)
        return want; /* threads already running need no more room */
    unsigned long long more = room > first ? (room - first) / cost->thread
                                           : 0;
    return more >= (unsigned long long)(want - pool) ? want
                                                     : pool + (int)more;
}

/* Whether a mapping of bytes fits now: tried with no access and no swap
 * reserved, so it costs nothing but the address space it is checked in. */
static int mapping_fits(unsigned long long bytes)
{
    if (bytes == 0)
        return 1;
    void *p = mmap(NULL, (size_t)bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    munmap(p, (size_t)bytes);
    return 1;
}

unsigned long long dt_blas_room_now(unsigned long long cap)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long step = page > 0 ? (unsigned long long)page : 4096;
    if (cap > (unsigned long long)SIZE_MAX)
        cap = SIZE_MAX;
    if (mapping_fits(cap))
        return cap;
    /* mapping_fits(lo) holds, mapping_fits(hi) does not: halve, in pages */
    unsigned long long lo = 0, hi = cap / step;
    while (hi - lo > 1) {
        unsigned long long mid = lo + (hi - lo) / 2;
        if (mapping_fits(mid * step))
            lo = mid;
        else
            hi = mid;
    }
    return lo * step;
}
