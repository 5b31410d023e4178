/* pipeline_bench.c — the input pipeline alone on an image folder: how fast
 * the loader threads prepare batches (decode, augment, normalize), and how
 * long a step that computes for STEP_MS waits for its batch.
 *
 *   bench/pipeline_bench DIR [decode load|loader] [THREADS] [STEP_MS]
 *                        [SIZE] [BATCH] [EPOCHS]
 *
 * DIR/train/<class>/... as [data] dataset = folder; images become
 * SIZE x SIZE RGB (32), random_crop 4 and hflip on, batch 32, 3 epochs.
 * STEP_MS > 0 stands in for the training step: the main thread spins for
 * that long after taking each batch (while the loaders run), and the wait
 * it had is reported as data_wait, the trainer's share of step time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/dataset.h"
#include "data/pipeline.h"

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pipeline_bench DIR [load|loader] [THREADS] "
                        "[STEP_MS] [SIZE] [BATCH] [EPOCHS]\n");
        return 2;
    }
    int lazy = argc > 2 && strcmp(argv[2], "loader") == 0;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    double step = argc > 4 ? atof(argv[4]) / 1000.0 : 0.0;
    int size = argc > 5 ? atoi(argv[5]) : 32;
    size_t batch = argc > 6 ? (size_t)atoi(argv[6]) : 32;
    uint64_t epochs = argc > 7 ? (uint64_t)atoi(argv[7]) : 3;
    dt_folder_opts_t o = {3, size, size, 0, lazy};
    dt_dataset_t ds;
    double t0 = wall(), c0 = cpu();
    if (dt_dataset_load_folder(argv[1], DT_SPLIT_TRAIN, &o, &ds) != DT_OK)
        return 1;
    double tload = wall() - t0, cload = cpu() - c0;
    dt_pipeline_opts_t po = {.batch = batch, .rank = 0, .world = 1,
                             .seed = 1, .end_epoch = epochs,
                             .threads = threads, .prefetch = 2,
                             .aug = {.crop_pad = 4, .hflip = true,
                                     .seed = 1}};
    dt_pipeline_t *p = NULL;
    if (dt_pipeline_new(&ds, &po, &p) != DT_OK ||
        dt_pipeline_seek(p, 0, 0) != DT_OK)
        return 1;
    uint64_t steps = epochs * dt_pipeline_steps(p);
    size_t n = 0;
    double waited = 0.0;
    volatile double sink = 0.0;
    t0 = wall();
    c0 = cpu();
    for (uint64_t s = 0; s < steps; s++) {
        dt_batch_t b;
        double w = 0.0;
        if (dt_pipeline_next(p, &b, &w) != DT_OK)
            return 1;
        n += b.count;
        waited += w;
        for (double end = wall() + step; wall() < end;)
            sink += 1.0; /* the step's computation */
    }
    (void)sink; /* read once: clang's -Wunused-but-set-variable */
    double t = wall() - t0, c = cpu() - c0;
    printf("decode = %s, %d loader thread%s: %zu images listed/decoded in "
           "%.3f s (%.3f s CPU); %llu epochs, %zu samples in %.3f s: %.0f "
           "samples/s", lazy ? "loader" : "load", threads,
           threads == 1 ? "" : "s", ds.n, tload, cload,
           (unsigned long long)epochs, n, t, (double)n / t);
    if (step > 0)
        printf(", data_wait %.1f%% of %.1f ms steps\n", 100.0 * waited / t,
               step * 1000.0);
    else
        printf(", %.1f us CPU a sample\n", c / (double)n * 1e6);
    dt_pipeline_free(p);
    dt_dataset_free(&ds);
    return 0;
}
