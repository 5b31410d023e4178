/* test_cuda_lazy.c — libdt loads no CUDA library until a GPU is used:
 * device = auto on a machine whose driver sees no GPU stays on the CPU
 * without mapping cuBLAS or the CUDA backend, device = cuda fails with a
 * message saying why, and a broken backend file is named with its cause.
 * The device cases need a machine without a GPU; elsewhere they are
 * skipped with a message (test_nn_cuda covers GPUs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dt/log.h>
#include <dt/nn.h>
#include "cuda/backend.h"
#include "proc_maps.h"
#include "stderr_capture.h"

static void assert_no_cuda_mapped(void)
{
    assert_int_equal(maps_has("libcublas"), 0);
    assert_int_equal(maps_has("libcudart"), 0);
    assert_int_equal(maps_has(DT_CUDA_BACKEND_FILE), 0);
}

/* The device cases need a driver that sees no GPU. */
static int gpu_present(void)
{
    char why[512];
    if (dt_cuda_driver_device_count(why, sizeof why) == 0)
        return 0;
    printf("SKIP (this case): the NVIDIA driver sees a GPU, so device = "
           "auto/cuda rightly load the CUDA backend here\n");
    return 1;
}

static void test_libdt_links_no_cuda(void **state)
{
    (void)state;
    assert_no_cuda_mapped();
}

static void test_auto_stays_on_cpu(void **state)
{
    (void)state;
    if (gpu_present())
        skip();
    dt_device_t *dev = NULL;
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_device_open("auto", 0, 1, &dev);
    char *text = capture_end(&cap);
    assert_int_equal(st, DT_OK);
    assert_int_equal(dev->kind, DT_DEVICE_CPU);
    assert_non_null(strstr(text, "device = auto: using the CPU"));
    free(text);
    dt_device_close(dev);
    /* Said once per host, by local rank 0: not by every worker. */
    capture_begin(&cap);
    st = dt_device_open("auto", 3, 1, &dev);
    text = capture_end(&cap);
    assert_int_equal(st, DT_OK);
    assert_int_equal(dev->kind, DT_DEVICE_CPU);
    assert_null(strstr(text, "using the CPU"));
    free(text);
    dt_device_close(dev);
    assert_int_equal(dt_cuda_device_count(), 0);
    assert_no_cuda_mapped();
}

static void test_cuda_says_why(void **state)
{
    (void)state;
    if (gpu_present())
        skip();
    char why[512];
    dt_cuda_driver_device_count(why, sizeof why);
    dt_device_t *dev = NULL;
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_device_open("cuda", 0, 1, &dev);
    char *text = capture_end(&cap);
    assert_int_equal(st, DT_ERR_UNSUPPORTED);
    assert_null(dev);
    assert_non_null(strstr(text, "device = cuda, but no GPU can be used"));
    assert_non_null(strstr(text, why)); /* the driver's reason */
    assert_non_null(strstr(text, "use device = auto or cpu"));
    free(text);
    assert_no_cuda_mapped();
}

/* Broken backend files: each failure names the file and its cause. */
static void test_backend_file_errors(void **state)
{
    (void)state;
    const char *top = getenv("top_builddir");
    assert_non_null(top);
    char path[4096], why[1024];
    const dt_cuda_backend_t *be = NULL;

    snprintf(path, sizeof path, "%s/nowhere/%s", top, DT_CUDA_BACKEND_FILE);
    assert_int_not_equal(dt_cuda_backend_open_file(path, &be, why, sizeof why),
                         DT_OK);
    assert_null(be);
    assert_non_null(strstr(why, path));

    /* A library it needs is not installed (as libcublas.so.13 would be). */
    snprintf(path, sizeof path,
             "%s/tests/fixtures/.libs/dt_optimizer_needsdep.so", top);
    assert_int_not_equal(dt_cuda_backend_open_file(path, &be, why, sizeof why),
                         DT_OK);
    assert_non_null(strstr(why, "libdtfixturegone.so"));

    /* Loads, but is not a backend. */
    snprintf(path, sizeof path,
             "%s/tests/fixtures/.libs/dt_optimizer_good.so", top);
    assert_int_not_equal(dt_cuda_backend_open_file(path, &be, why, sizeof why),
                         DT_OK);
    assert_non_null(strstr(why, DT_CUDA_BACKEND_SYMBOL));
    assert_no_cuda_mapped();
}

int main(void)
{
    if (maps_has("/") < 0) {
        printf("SKIP: /proc/self/maps cannot be read, so what is loaded "
               "cannot be checked\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libdt_links_no_cuda),
        cmocka_unit_test(test_auto_stays_on_cpu),
        cmocka_unit_test(test_cuda_says_why),
        cmocka_unit_test(test_backend_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
