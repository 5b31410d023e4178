/* allreduce_mem.c — dt_allreduce_mem on CUDA buffers, checked exactly on
 * every rank: the device check's "2 ranks, tcp, GPU memory" step
 * (tests/gpu/run.sh). Each rank fills a device buffer with rank-dependent
 * integers (exact in float32), reduces it with dt_allreduce_mem(...,
 * DT_MEM_CUDA, NULL), copies the result back and compares. With tcp (no
 * DT_CAP_CUDA_MEM) dt stages through host memory; with nccl it would pass
 * the device buffers. Both ranks may share one GPU (tcp does not care).
 *
 *   dtctl --transport=tcp run -n 2 -- ./allreduce_mem
 *
 * Built by tests/gpu/prepare.sh against the built libdt; uses only the
 * public headers <dt/dt.h>, <dt/device.h>, <dt/nn.h>. Prints one line per
 * size on rank 0 and exits 0 when every rank's every check passed; exits
 * 77 when no GPU is visible. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/device.h>
#include <dt/dt.h>
#include <dt/nn.h>

static const size_t counts[] = {1, 1023, 65537, 1048579, 16777216};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* DT_AVG of DT_INT32 rounds to nearest (dt.h) on every path: rank r
 * gives r + i % 3, so at N = 2 each average is k + 0.5 (ncclAvg would
 * truncate it to k). 1 when wrong. */
static int check_int32_avg(int rank, int size)
{
    enum { N = 1025 };
    int32_t h[N];
    void *buf = NULL;
    for (int i = 0; i < N; i++)
        h[i] = rank + i % 3;
    dt_status_t st = dt_gpu_alloc(sizeof h, &buf);
    if (st == DT_OK)
        st = dt_gpu_copy(buf, DT_MEM_CUDA, h, DT_MEM_HOST, sizeof h, NULL);
    if (st == DT_OK)
        st = dt_allreduce_mem(buf, buf, N, DT_INT32, DT_AVG, DT_MEM_CUDA,
                              NULL);
    if (st == DT_OK)
        st = dt_gpu_copy(h, DT_MEM_HOST, buf, DT_MEM_CUDA, sizeof h, NULL);
    dt_gpu_free(buf);
    if (st != DT_OK) {
        fprintf(stderr, "allreduce_mem: rank %d: int32 avg: %s\n", rank,
                dt_status_str(st));
        return 1;
    }
    for (int i = 0; i < N; i++) {
        /* the sum over ranks, divided by size rounded half up (all
         * positive), in integers: no libm for prepare.sh to link */
        long long sum = (long long)size * (size - 1) / 2 +
                        (long long)size * (i % 3);
        int32_t want = (int32_t)((2 * sum + size) / (2 * size));
        if (h[i] != want) {
            fprintf(stderr, "allreduce_mem: rank %d of %d: int32 avg wrong "
                    "at %d: got %d, want %d (round to nearest)\n",
                    rank, size, i, (int)h[i], (int)want);
            return 1;
        }
    }
    if (rank == 0)
        printf("allreduce_mem: int32 avg of %d on %d ranks: ok (rounded)\n",
               N, size);
    return 0;
}

int main(void)
{
    dt_status_t st = dt_init();
    if (st != DT_OK) {
        fprintf(stderr, "allreduce_mem: dt_init failed: %s\n",
                dt_status_str(st));
        return 1;
    }
    int rank = dt_rank(), size = dt_size(), bad = 0;
    char why[256] = "";
    if (!dt_gpu_available(why, sizeof why) || dt_cuda_device_count() < 1) {
        printf("allreduce_mem: rank %d: no GPU (%s)\n", rank,
               why[0] ? why : "dt_cuda_device_count() is 0");
        dt_finalize();
        return 77;
    }
    for (size_t t = 0; t < sizeof counts / sizeof *counts && !bad; t++) {
        size_t n = counts[t], bytes = n * sizeof(float);
        float *h = malloc(bytes);
        void *send = NULL, *recv = NULL;
        if (!h || dt_gpu_alloc(bytes, &send) != DT_OK ||
            dt_gpu_alloc(bytes, &recv) != DT_OK) {
            fprintf(stderr, "allreduce_mem: rank %d: out of memory (%zu)\n",
                    rank, n);
            bad = 1;
        }
        for (size_t i = 0; !bad && i < n; i++)
            h[i] = (float)((rank + 1) * (int)(i % 1000));
        if (!bad &&
            (st = dt_gpu_copy(send, DT_MEM_CUDA, h, DT_MEM_HOST, bytes,
                              NULL)) != DT_OK) {
            fprintf(stderr, "allreduce_mem: copy in: %s\n", dt_status_str(st));
            bad = 1;
        }
        double t0 = now();
        if (!bad && (st = dt_allreduce_mem(send, recv, n, DT_FLOAT32, DT_SUM,
                                           DT_MEM_CUDA, NULL)) != DT_OK) {
            fprintf(stderr, "allreduce_mem: rank %d: dt_allreduce_mem(%zu): "
                    "%s\n", rank, n, dt_status_str(st));
            bad = 1;
        }
        double dt_s = now() - t0;
        memset(h, 0xff, bytes); /* poison: every element must be written */
        if (!bad &&
            (st = dt_gpu_copy(h, DT_MEM_HOST, recv, DT_MEM_CUDA, bytes,
                              NULL)) != DT_OK) {
            fprintf(stderr, "allreduce_mem: copy out: %s\n",
                    dt_status_str(st));
            bad = 1;
        }
        /* sum over ranks r of (r + 1) * k = k * size (size + 1) / 2 */
        float f = (float)(size * (size + 1) / 2);
        for (size_t i = 0; !bad && i < n; i++) {
            float want = f * (float)(i % 1000);
            if (h[i] != want) {
                fprintf(stderr, "allreduce_mem: rank %d of %d: count %zu "
                        "wrong at %zu: got %.9g, want %.9g\n",
                        rank, size, n, i, h[i], want);
                bad = 1;
            }
        }
        if (!bad && rank == 0)
            printf("allreduce_mem: %zu floats on %d ranks: ok (%.3f ms, "
                   "%.2f GB/s algbw)\n",
                   n, size, dt_s * 1e3, bytes / (dt_s > 0 ? dt_s : 1) / 1e9);
        dt_gpu_free(send);
        dt_gpu_free(recv);
        free(h);
    }
    if (!bad)
        bad = check_int32_avg(rank, size);
    st = dt_finalize();
    if (st != DT_OK && !bad) {
        fprintf(stderr, "allreduce_mem: dt_finalize: %s\n", dt_status_str(st));
        bad = 1;
    }
    if (!bad && rank == 0)
        printf("allreduce_mem: all sizes correct on %d ranks (CUDA memory)\n",
               size);
    return bad;
}
