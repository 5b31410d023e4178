/* dt/train.h — dt's built-in data-parallel trainer as a library call: what
 * the dt-train worker program runs. A program that embeds the trainer
 * calls dt_init, builds a configuration (dt/config.h: the job file's
 * [model], [data], [train] sections and [cluster]), checks it and runs it,
 * then dt_finalize. */
#ifndef DT_PUBLIC_TRAIN_H
#define DT_PUBLIC_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/nn.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Check the [train] settings of cfg for a job of `world` workers without
 * running anything (dtctl does before it starts workers, so errors name
 * the job file's lines). */
dt_status_t dt_train_check_config(const dt_config_t *cfg, int world);

/* Check the parsed model against cfg for a job of `world` workers (a
 * batchnorm with one value per channel in a batch, [model] layout = nhwc
 * where a layer has no NHWC form, sync_bn with [cluster] work_load, ...):
 * what dtctl can say before workers start when it knows the input's
 * shape; the workers check it again. */
dt_status_t dt_train_check_model(const dt_config_t *cfg, const dt_model_t *m,
                                 int world);

/* Run the whole job on this worker: data, model, the training loop,
 * evaluation, checkpoints and metrics as cfg says. *final_accuracy (may
 * be NULL) gets the last test accuracy (0..1). Every rank calls it,
 * after dt_init (a process started as one of several workers without it
 * is refused: DT_ERR_INVALID; a process on its own trains as rank 0 of
 * 1). */
dt_status_t dt_train_run(dt_config_t *cfg, double *final_accuracy);

/* dt_train_run returns DT_ERR_INTERRUPTED when SIGTERM or SIGUSR1 reached
 * a worker (with [train] checkpoint_dir set, dt_train_run handles both
 * while it trains): every rank wrote its checkpoint at the same step and
 * stopped; dt-train then exits with DT_TRAIN_EXIT_PREEMPTED, which dtctl
 * reports as "preempted, resumable". */
#define DT_TRAIN_EXIT_PREEMPTED 75
/* dt_train_run failed in a way a restart repeats: training diverged
 * (DT_ERR_DIVERGED: on_divergence = stop, or its rollbacks used up) or
 * the configuration is wrong (DT_ERR_CONFIG; also a model and batch
 * that clearly cannot fit in the host's memory, and a data set in a
 * wrong format or layout; a missing or unreadable one is left to
 * restarts) or an image that does not decode was met while training
 * (DT_ERR_BAD_DATA: [data] decode = loader). dt-train exits with this
 * (EX_DATAERR of sysexits.h) and dtctl --max-restarts does not restart
 * the job. */
#define DT_TRAIN_EXIT_FINAL 65

/* What one worker of the job will hold in memory, estimated before
 * anything large is allocated (dt_model_memory_estimate for the model,
 * the optimizer's state from its plugin at [train] optimizer): the
 * trainer refuses a job whose workers on a host clearly cannot fit, and
 * dtctl check prints it. A lower bound: the data set, the layers'
 * scratch and the libraries are left out. */
typedef struct dt_train_memory {
    dt_model_memory_t model;
    size_t optimizer; /* the optimizer's state (momentum, moments)      */
    size_t total;     /* all of the above                               */
    int batch;        /* the samples a step holds activations for       */
} dt_train_memory_t;
/* For a step of `batch` samples (0: [train] batch_size); on_gpu as for
 * dt_model_memory_estimate. An optimizer that cannot be loaded or made
 * counts 0 (the job's checks name it). */
dt_status_t dt_train_memory_estimate(const dt_config_t *cfg,
                                     const dt_model_t *m, int batch,
                                     int on_gpu, dt_train_memory_t *out);

/* Where a checkpoint directory's newest valid checkpoint stands (what
 * --resume would continue from; dtctl names it when it restarts a job). */
typedef struct dt_train_checkpoint {
    char path[4096];
    uint64_t epoch;         /* the epoch it continues, from 1              */
    uint64_t step_in_epoch; /* steps of that epoch already done            */
    uint64_t global_step;   /* optimizer steps done                        */
} dt_train_checkpoint_t;

/* DT_ERR_NOT_FOUND when dir holds no valid checkpoint (corrupt newer ones
 * are named in warnings and skipped, as --resume does); DT_ERR_UNSUPPORTED
 * when the newest is of a newer dt's format, DT_ERR_CONFIG when this user
 * may not read it (each named in an error). A dir that other users could
 * change (another user's, writable by every user, under a directory
 * others may write, through a link another user owns or may replace) is
 * said in warnings as the trainer's rank 0 says it, once per directory
 * in a process; a link on the way is followed once per call, so that
 * the files listed are the files read. */
dt_status_t dt_train_latest_checkpoint(const char *dir,
                                       dt_train_checkpoint_t *out);

/* The job's input pipeline alone, as one worker runs it: [data]'s data
 * set, loader_threads, prefetch and augmentation, batches of `batch`
 * samples (0: [train] batch_size), taken as fast as the loaders make them
 * for about `seconds` after a warm-up, nothing computed. What a step
 * shorter than batch_seconds waits for its data (dtctl plan's data wait;
 * a program asking whether its loaders keep up). Loads the training set
 * first (its errors are dt_dataset's: no data here, a bad file). */
typedef struct dt_train_input_rate {
    double batch_seconds;   /* a batch, at the loaders' steady rate; with
                               loader_threads = 0 the step's own gather   */
    double samples_per_sec; /* batch / batch_seconds                      */
    size_t batch;
    int threads;            /* [data] loader_threads (0: in the step)    */
    size_t timed;           /* batches timed                             */
} dt_train_input_rate_t;

dt_status_t dt_train_input_rate(const dt_config_t *cfg, size_t batch,
                                double seconds, dt_train_input_rate_t *out);

#ifdef __cplusplus
}
#endif
#endif /* DT_PUBLIC_TRAIN_H */
