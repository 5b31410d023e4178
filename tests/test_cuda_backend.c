/* test_cuda_backend.c — the CUDA backend module itself, on any machine
 * where it was built: it loads (every symbol it needs resolves, cuBLAS
 * comes with it), its table is complete, and without a GPU it says so and
 * the optimizers' CUDA path fails cleanly instead of crashing. Skipped
 * when dt was built without CUDA. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "cuda/backend.h"
#include "plugin/plugin_loader.h"
#include "proc_maps.h"
#include "stderr_capture.h"

static const dt_cuda_backend_t *be;

static void test_loads_complete_table(void **state)
{
    (void)state;
    assert_int_equal(dt_cuda_backend_loaded() == NULL, 1);
    assert_int_equal(dt_cuda_backend(&be), DT_OK);
    assert_ptr_equal(dt_cuda_backend_loaded(), be);
    assert_int_equal(be->abi, DT_CUDA_BACKEND_ABI);
    assert_true(be->size >= sizeof *be);
    assert_non_null(be->built_with);
    /* Only now: the module brought cuBLAS and the CUDA runtime. */
    assert_int_equal(maps_has(DT_CUDA_BACKEND_FILE), 1);
    assert_int_equal(maps_has("libcublas"), 1);
#define HAS(f) assert_non_null((void *)be->f)
    HAS(device_count); HAS(open); HAS(close); HAS(sync); HAS(alloc);
    HAS(free); HAS(host_alloc); HAS(host_free); HAS(copy); HAS(gemm);
    HAS(relu_forward); HAS(relu_backward); HAS(mul); HAS(dropout_forward);
    HAS(add_bias); HAS(bias_grad); HAS(im2col); HAS(col2im);
    HAS(cnhw_to_nchw); HAS(nchw_to_cnhw); HAS(maxpool_forward);
    HAS(maxpool_backward); HAS(softmax_xent); HAS(softmax_xent_backward);
    HAS(mem_alloc); HAS(mem_free); HAS(mem_copy); HAS(sgd_step);
    HAS(adam_step); HAS(mem_set); HAS(stream_sync); HAS(add);
    /* cuDNN: every entry, or none and the reason */
#ifdef DT_HAVE_CUDNN
    assert_null(be->cudnn_missing);
    assert_null(dt_cuda_cudnn_missing());
    assert_int_equal(maps_has("libcudnn"), 1);
#endif
    if (be->cudnn_missing) {
        assert_non_null(strstr(be->cudnn_missing, "built without cuDNN"));
        assert_null((void *)be->conv_forward);
        assert_null((void *)be->bn_forward);
        assert_null((void *)be->pool_forward);
    } else {
        HAS(conv_forward); HAS(conv_backward); HAS(bn_forward);
        HAS(bn_backward); HAS(pool_forward); HAS(pool_backward);
    }
#undef HAS
    printf("CUDA backend loaded (%s)%s%s\n", be->built_with,
           be->cudnn_missing ? ": " : "",
           be->cudnn_missing ? be->cudnn_missing : "");
}

/* The runtime's own view agrees with the driver probe on this machine. */
static void test_device_count(void **state)
{
    (void)state;
    char why[512] = "";
    int runtime = be->device_count(why, sizeof why);
    int driver = dt_cuda_driver_device_count(NULL, 0);
    printf("GPUs: driver %d, CUDA runtime %d%s%s\n", driver, runtime,
           runtime ? "" : ": ", why);
    if (driver == 0) {
        assert_int_equal(runtime, 0);
        assert_true(strlen(why) > 0);
    }
}

/* Without a GPU, an optimizer asked for CUDA state fails with a message
 * (the backend is there; the GPU memory is not). */
static void test_optimizer_without_gpu(void **state)
{
    (void)state;
    if (dt_cuda_device_count() > 0) {
        printf("SKIP (this case): a GPU is present; test_optimizers_cuda "
               "checks the CUDA steps\n");
        skip();
    }
    const char *names[] = {"sgd", "adam", "adamw"};
    for (size_t i = 0; i < 3; i++) {
        const dt_plugin_t *p;
        assert_int_equal(dt_plugin_load(DT_KIND_OPTIMIZER, names[i], &p, NULL),
                         DT_OK);
        const dt_optimizer_ops_t *ops = p->ops;
        void *st = NULL;
        capture_t cap;
        capture_begin(&cap);
        /* sgd allocates device memory only with momentum: ask for it. */
        char section[64];
        snprintf(section, sizeof section, "optimizer.%s", names[i]);
        dt_config_t *cfg = NULL;
        assert_int_equal(dt_config_new(&cfg), DT_OK);
        assert_int_equal(dt_config_add_schema(cfg, section, p->keys), DT_OK);
        if (i == 0)
            assert_int_equal(dt_config_set(cfg, section, "momentum", "0.9",
                                           DT_SRC_CLI, "--set"),
                             DT_OK);
        dt_status_t rc = ops->create(cfg, 16, DT_MEM_CUDA, &st);
        char *text = capture_end(&cap);
        assert_int_not_equal(rc, DT_OK);
        assert_null(st);
        assert_non_null(strstr(text, "cudaMalloc"));
        free(text);
        dt_config_free(cfg);
    }
}

int main(void)
{
    const char *top = getenv("top_builddir");
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/plugins/modules/%s", top ? top : ".",
             DT_CUDA_BACKEND_FILE);
    if (stat(path, &sb) != 0) {
        printf("SKIP: dt was built without CUDA (%s does not exist)\n", path);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_complete_table),
        cmocka_unit_test(test_device_count),
        cmocka_unit_test(test_optimizer_without_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
