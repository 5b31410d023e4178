/* dt_model_bench.c — the compute half of a training step alone: forward
 * and backward of a model (no data loading, no optimizer, no
 * communication) on a fixed pseudo-random batch, one thread.
 *
 *   dt_model_bench [-l LAYERS] [-b BATCH] [-s STEPS] [-r REPEAT] [-g FILE]
 *                  [-a auto|im2col|winograd|winograd4]
 *                  [-o auto|nchw|nhwc] [-p]
 *
 * Prints the best of REPEAT runs of STEPS steps as microseconds per step,
 * both in this thread's CPU time (steadier on a shared machine than the
 * wall clock) and wall time, and samples/s from the CPU time. -g FILE
 * writes the gradients of the first step (raw floats) so two builds can
 * be compared for equality up to rounding. -o picks the activations'
 * layout (dt_model_set_layout). -p adds one more run of STEPS
 * steps with per-layer timing (dt_model_set_profiling) and prints each
 * layer's forward and backward ms per step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/nn.h>

#define CNN "conv(32,3,pad=1) relu maxpool(2) conv(64,3,pad=1) relu " \
            "maxpool(2) flatten linear(128) relu linear(10)"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static dt_status_t step(dt_model_t *m, const float *x, const int *y, int b)
{
    float loss;
    DT_CHECK(dt_model_forward(m, x, y, b, 1, &loss, NULL));
    return dt_model_backward(m, NULL, NULL);
}

static void print_line(void *arg, const char *line) { puts(line); }

static int usage(void)
{
    fprintf(stderr, "usage: dt_model_bench [-l LAYERS] [-b BATCH] "
                    "[-s STEPS] [-r REPEAT] [-g GRADS_FILE]\n"
                    "                      [-a auto|im2col|winograd|winograd4]"
                    " [-o auto|nchw|nhwc] [-p]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *layers = CNN, *grads_file = NULL;
    dt_conv_algo_t algo = DT_CONV_AUTO;
    dt_layout_t layout = DT_LAYOUT_AUTO;
    int batch = 64, steps = 20, repeat = 3, profile = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p")) {
            profile = 1;
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "-l"))
            layers = argv[++i];
        else if (!strcmp(argv[i], "-b"))
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s"))
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r"))
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-g"))
            grads_file = argv[++i];
        else if (!strcmp(argv[i], "-a")) {
            if (dt_conv_algo_parse(argv[++i], &algo) != DT_OK)
                return usage();
        } else if (!strcmp(argv[i], "-o")) {
            if (dt_layout_parse(argv[++i], &layout) != DT_OK)
                return usage();
        }
        else
            return usage();
    }
    if (batch < 1 || steps < 1 || repeat < 1)
        return usage();

    int rc = 1;
    dt_model_t *m = NULL;
    dt_device_t *dev = NULL;
    size_t in = 28 * 28;
    float *x = malloc((size_t)batch * in * sizeof *x);
    int *y = malloc((size_t)batch * sizeof *y);
    if (!x || !y)
        goto out;
    /* A fixed LCG so every build sees the same batch. */
    uint32_t r = 12345;
    for (size_t i = 0; i < (size_t)batch * in; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = (float)(r >> 8) / 16777216.0f * 2.0f - 0.5f;
    }
    for (int i = 0; i < batch; i++)
        y[i] = i % 10;
    if (dt_device_open("cpu", 0, 1, &dev) != DT_OK ||
        dt_model_parse(layers, "-l", 1, 28, 28, 10, &m, NULL) != DT_OK ||
        dt_model_set_conv_algo(m, algo) != DT_OK ||
        dt_model_set_layout(m, layout) != DT_OK ||
        dt_model_init(m, dev, 1) != DT_OK || step(m, x, y, batch) != DT_OK)
        goto out;
    if (grads_file) {
        float *g;
        size_t n;
        FILE *f = fopen(grads_file, "wb");
        if (!f || dt_model_params(m, NULL, &g, &n) != DT_OK ||
            fwrite(g, sizeof *g, n, f) != n || fclose(f) != 0) {
            fprintf(stderr, "dt_model_bench: cannot write %s\n", grads_file);
            goto out;
        }
    }
    double best_cpu = 1e30, best_wall = 1e30;
    for (int rep = 0; rep < repeat; rep++) {
        double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID),
               w0 = clock_s(CLOCK_MONOTONIC);
        for (int s = 0; s < steps; s++)
            if (step(m, x, y, batch) != DT_OK)
                goto out;
        double c = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0,
               w = clock_s(CLOCK_MONOTONIC) - w0;
        if (c < best_cpu)
            best_cpu = c;
        if (w < best_wall)
            best_wall = w;
    }
    printf("%s, batch %d: %.0f us/step cpu, %.0f us/step wall, %.0f "
           "samples/s (cpu)\n",
           dt_model_layout(m) == DT_LAYOUT_NHWC ? "nhwc" : "nchw", batch,
           1e6 * best_cpu / steps, 1e6 * best_wall / steps,
           batch * steps / best_cpu);
    if (profile) {
        if (dt_model_set_profiling(m, 1) != DT_OK)
            goto out;
        for (int s = 0; s < steps; s++)
            if (step(m, x, y, batch) != DT_OK)
                goto out;
        dt_model_profile(m, steps, print_line, NULL);
    }
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "dt_model_bench: failed\n");
    dt_model_free(m);
    if (dev)
        dt_device_close(dev);
    free(x);
    free(y);
    return rc;
}
