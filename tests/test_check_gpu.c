/* test_check_gpu.c — dtctl check's gpu row: a host's `dt-train --gpus`
 * report judged against the job (device, transport, ranks there). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "cli/check_gpu.h"

/* What dt-train --gpus prints on a host with two H100s (a login shell's
 * line first, as some hosts print). */
static const char two_h100[] =
    "pyenv: cannot rehash: /root/.pyenv/shims isn't writable\n"
    "driver 580.65.06 cuda 13.0\n"
    "gpu 0 81559 9.0 NVIDIA H100 80GB HBM3\n"
    "gpu 1 81559 9.0 NVIDIA H100 80GB HBM3\n"
    "lib cudart 13.0\nlib cublas 13.1.0\nlib cudnn 9.13.0\nlib nccl 2.27.7\n"
    "end\n";

static const char mixed[] =
    "driver 580.65.06 cuda 13.0\n"
    "gpu 0 81559 9.0 NVIDIA H100 80GB HBM3\n"
    "gpu 1 143771 9.0 NVIDIA H200\n"
    "lib cudart 13.0\nlib cublas 13.1.0\nlib cudnn -\nlib nccl -\nend\n";

static const char no_gpu[] =
    "driver - cuda -\n"
    "lib cudart 13.0\nlib cublas 13.1.0\nlib cudnn 9.19.0\nlib nccl 2.28.9\n"
    "none no NVIDIA driver (libcuda.so.1: cannot open shared object file)\n"
    "end\n";

static const char no_runtime[] =
    "driver 580.65.06 cuda 13.0\ngpu 0 81559 9.0 NVIDIA H100 80GB HBM3\n"
    "lib cudart -\nlib cublas -\nlib cudnn -\nlib nccl -\nend\n";

static int judge(const char *out, int cuda, int nccl, int ranks, char *d)
{
    check_gpu_job_t job = {.want_cuda = cuda, .nccl = nccl, .ranks = ranks};
    return check_gpu_judge(out, &job, d, 1024);
}

static void test_gpus_listed(void **state)
{
    (void)state;
    char d[1024];
    assert_int_equal(judge(two_h100, 1, 1, 2, d), CHECK_GPU_OK);
    assert_string_equal(d, "2 x NVIDIA H100 80GB HBM3 (81559 MiB, compute "
                           "9.0); driver 580.65.06 (CUDA 13.0); cudart "
                           "13.0, cublas 13.1.0, cudnn 9.13.0, nccl 2.27.7");
    assert_int_equal(judge(mixed, 0, 0, 2, d), CHECK_GPU_OK);
    assert_non_null(strstr(d, "NVIDIA H100 80GB HBM3 (81559 MiB, compute "
                              "9.0), NVIDIA H200 (143771 MiB"));
    assert_non_null(strstr(d, "cudnn missing, nccl missing"));
}

static void test_nccl_one_rank_per_gpu(void **state)
{
    (void)state;
    char d[1024];
    assert_int_equal(judge(two_h100, 1, 1, 4, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "4 ranks would share 2 GPUs"));
    assert_non_null(strstr(d, "-H host:2"));
    /* tcp may put two ranks on one GPU (tests/gpu does). */
    assert_int_equal(judge(two_h100, 1, 0, 4, d), CHECK_GPU_OK);
    /* nccl without the library there. */
    assert_int_equal(judge(mixed, 0, 1, 1, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "needs nccl"));
}

static void test_no_gpu(void **state)
{
    (void)state;
    char d[1024];
    assert_int_equal(judge(no_gpu, 0, 0, 1, d), CHECK_GPU_SKIP);
    assert_non_null(strstr(d, "no GPU (no NVIDIA driver"));
    assert_int_equal(judge(no_gpu, 1, 0, 1, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "[train] device = cuda, but no GPU here: no "
                              "NVIDIA driver"));
    assert_int_equal(judge(no_gpu, 0, 1, 1, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "[cluster] transport = nccl"));
}

static void test_libraries_missing(void **state)
{
    (void)state;
    char d[1024];
    assert_int_equal(judge(no_runtime, 1, 0, 1, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "needs cudart"));
    assert_int_equal(judge(no_runtime, 0, 0, 1, d), CHECK_GPU_OK);
#ifdef DT_HAVE_CUDNN
    /* built with cuDNN, the CUDA backend links it: no GPU job without it */
    assert_int_equal(judge(mixed, 1, 0, 1, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "needs cudnn"));
#else
    assert_int_equal(judge(mixed, 1, 0, 1, d), CHECK_GPU_OK);
    assert_non_null(strstr(d, "without cuDNN"));
#endif
}

static void test_no_report(void **state)
{
    (void)state;
    char d[1024];
    /* dt-train missing there, or an older one, or a cut-off report. */
    assert_int_equal(judge(NULL, 0, 0, 1, d), CHECK_GPU_SKIP);
    assert_int_equal(judge(NULL, 1, 0, 1, d), CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "install this version of dt"));
    char cut[sizeof two_h100];
    memcpy(cut, two_h100, sizeof two_h100);
    *strstr(cut, "end\n") = '\0';
    assert_int_equal(judge(cut, 0, 1, 1, d), CHECK_GPU_FAIL);
}

/* The launcher could not run dt-train there: its reason, not an old dt. */
static void test_launcher_failed(void **state)
{
    (void)state;
    char d[1024];
    check_gpu_job_t cpu = {.ranks = 1}, cuda = {.want_cuda = 1, .ranks = 1};
    const char *why = "the slurm launcher could not run dt-train there: "
                      "srun: error: Unable to contact slurm controller";
    assert_int_equal(check_gpu_unknown(why, "fix it", &cpu, d, sizeof d),
                     CHECK_GPU_SKIP);
    assert_string_equal(d, "could not ask the host for its GPUs (the slurm "
                           "launcher could not run dt-train there: srun: "
                           "error: Unable to contact slurm controller)");
    assert_int_equal(check_gpu_unknown(why, "fix it", &cuda, d, sizeof d),
                     CHECK_GPU_FAIL);
    assert_non_null(strstr(d, "controller); fix it"));
    assert_null(strstr(d, "older"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpus_listed),
        cmocka_unit_test(test_nccl_one_rank_per_gpu),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_libraries_missing),
        cmocka_unit_test(test_no_report),
        cmocka_unit_test(test_launcher_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
