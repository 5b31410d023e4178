/* blas_room.h — how many OpenBLAS threads fit under an address-space
 * limit (ulimit -v, SGE's h_vmem). Each OpenBLAS thread maps a buffer
 * (BUFFER_SIZE) once: a thread of its pool as it starts, the calling
 * thread at its first matrix product; a mapping that does not fit is
 * retried for ever (OpenBLAS 0.3.21 driver/others/memory.c,
 * blas_memory_alloc), so the job hangs. What fits is worked out here,
 * before any of them is asked for. */
#ifndef DT_NN_BLAS_ROOM_H
#define DT_NN_BLAS_ROOM_H

/* OpenBLAS's BUFFER_SIZE (common_<arch>.h, 0.3.21 to 0.3.28): 128 MiB on
 * x86-64 (32 << 22), 256 MiB on POWER; the 128 MiB elsewhere is the
 * largest of arm64's. The calling thread's buffer is checked against it
 * before it is mapped; once mapped, the growth measured replaces it. */
#if defined(__powerpc64__)
#define DT_BLAS_BUFFER_BYTES (256ULL << 20)
#else
#define DT_BLAS_BUFFER_BYTES (128ULL << 20)
#endif

/* Room kept free beyond the buffers and stacks: what thread creation
 * and OpenBLAS map besides them, with some to spare. */
#define DT_BLAS_ROOM_MARGIN (16ULL << 20)

/* Bytes the address space must still take for threads to run. */
typedef struct dt_blas_cost {
    unsigned long long caller; /* the calling thread's buffer; 0: mapped */
    unsigned long long thread; /* per pool thread: buffer, stack, guard */
    unsigned long long margin; /* kept free */
} dt_blas_cost_t;

/* Bytes needed to run want threads (the calling one included) when pool
 * of them run already (1: the calling thread alone). */
unsigned long long dt_blas_bytes_needed(const dt_blas_cost_t *cost, int want,
                                        int pool);

/* How many of want threads fit in room bytes: want when all do (or
 * want <= pool), 0 when not even the calling thread's buffer does (pool
 * as above). */
int dt_blas_threads_fitting(unsigned long long room,
                            const dt_blas_cost_t *cost, int want, int pool);

/* Bytes one more mapping can take now under RLIMIT_AS, up to cap (found
 * by trial mappings of no access, each released at once); cap when the
 * limit is infinite. */
unsigned long long dt_blas_room_now(unsigned long long cap);

#endif /* DT_NN_BLAS_ROOM_H */
