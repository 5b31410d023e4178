/* check_gpu.h — `dtctl check`'s gpu row: read what `dt-train --gpus`
 * printed on a host and judge it against the job (device, transport,
 * ranks placed there). Pure functions, unit-tested (tests/test_check_gpu). */
#ifndef DT_CHECK_GPU_H
#define DT_CHECK_GPU_H

#include <stddef.h>

enum { CHECK_GPU_OK = 0, CHECK_GPU_FAIL = 1, CHECK_GPU_SKIP = 2 };

typedef struct check_gpu_job {
    int want_cuda; /* [train] device = cuda                          */
    int nccl;      /* [cluster] transport = nccl: one rank per GPU    */
    int ranks;     /* ranks the job places on this host               */
} check_gpu_job_t;

/* Parse dt-train --gpus output (out may be NULL) and judge it. Returns
 * CHECK_GPU_OK/FAIL/SKIP with the row's text (what the host has, or what
 * is wrong and what to do) in detail. */
int check_gpu_judge(const char *out, const check_gpu_job_t *job,
                    char *detail, size_t len);

/* No report to judge: why (the launcher could not run dt-train --gpus
 * there, or it gave none) into detail, with fix when the job needs GPUs.
 * CHECK_GPU_FAIL when it does ([train] device = cuda, transport = nccl),
 * else CHECK_GPU_SKIP. */
int check_gpu_unknown(const char *why, const char *fix,
                      const check_gpu_job_t *job, char *detail, size_t len);

#endif /* DT_CHECK_GPU_H */
