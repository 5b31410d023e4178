/* train.h — the built-in data-parallel trainer (internal to libdt).
 *
 * Horovod/DDP semantics: every worker holds the whole model, rank 0's
 * initial parameters are broadcast, each rank trains on its shard of every
 * epoch (dt_sampler), gradients are averaged in buckets that overlap
 * backward (grad_sync), the optimizer plugin steps, the test set is
 * evaluated every epoch over all ranks, rank 0 reports and checkpoints.
 *
 * Split by job: train_setup.c (configuration, device, data, model,
 * optimizer, outputs), train_eval.c (evaluation), train_state.c
 * (checkpoints and resume), train_guard.c (gradient clipping and what
 * happens when the loss stops being finite), train.c (the loop). */
#ifndef DT_TRAIN_H
#define DT_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/nn.h>
#include <dt/plugin.h>
#include <dt/train.h>

#include "ckpt/ckpt.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "data/sampler.h"
#include "divergence.h"
#include "grad_clip.h"
#include "grad_sync.h"
#include "layer_times.h"
#include "loss_scale.h"
#include "lr_schedule.h"
#include "mem_budget.h"
#include "metrics/metrics.h"
#include "ps.h"

/* checkpoint_best's file in checkpoint_dir, beside the ckpt-<step> ones. */
#define DT_TRAIN_BEST_NAME "best.dtckpt"
/* Appended to a checkpoint --resume went past because it did not verify:
 * kept, out of the series (docs/TRAINING.md). */
#define DT_TRAIN_CORRUPT_SUFFIX ".corrupt"

typedef struct dt_trainer {
    const dt_config_t *cfg;
    int rank, world, local_rank;

    /* [train] settings */
    uint64_t seed;
    uint64_t epochs;
    size_t batch;               /* per rank                                */
    dt_lr_schedule_t lr;
    size_t bucket_bytes;
    char *ckpt_dir;             /* NULL: no checkpoints; rank 0, once
                                   dt_trainer_prepare_outputs checked it:
                                   the path it resolved to (a link on the
                                   way followed once: dt_ckpt_dir_resolve) */
    uint64_t ckpt_every;        /* in ckpt_unit_steps ? steps : epochs     */
    bool ckpt_unit_steps;
    int ckpt_keep;
    uint64_t ckpt_steps;        /* also every N steps (0: off)             */
    uint64_t eval_steps;        /* evaluate every N steps too (0: off)     */
    double ckpt_interval;       /* also every T seconds of wall time (0)   */
    bool ckpt_best;             /* keep best.dtckpt (best test accuracy)   */
    bool resume;
    int ckpt_lock;              /* rank 0: checkpoint_dir's lock (fd), -1 */
    /* rank 0: the newest checkpoint of this run (written or resumed
     * from), which a failed write names; and the steps of the files above
     * the one --resume took (corrupt ones it went past): not this run's,
     * so checkpoint_keep neither counts nor deletes them (malloc'd) */
    bool ckpt_have;
    uint64_t ckpt_last_step;
    uint64_t *ckpt_foreign;
    size_t nforeign;
    /* rank 0: the newest of this run's checkpoints that is not ruined
     * (rollback_target.c); ruined ones written after it do not push it
     * out of checkpoint_keep, so a rollback always finds it */
    bool ckpt_sound;
    uint64_t ckpt_sound_step;
    dt_grad_clip_t clip;
    dt_loss_scale_t ls;         /* [train] precision, loss_scale          */
    bool skip_update;           /* this step's gradients overflowed       */
    dt_on_divergence_t on_divergence;
    int restarts;               /* on_divergence = halve_lr rollbacks for
                                   one divergence (no sound checkpoint
                                   written in between)                     */
    uint64_t rollback_step;     /* the checkpoint the last one went to     */

    /* compute */
    dt_device_t *dev;
    dt_model_t *model;
    float *params, *grads;      /* device memory                           */
    size_t nparams;
    const dt_plugin_t *opt_plugin;
    const dt_optimizer_ops_t *opt;
    void *opt_state;
    dt_grad_sync_t *sync;
    dt_layer_timer_t *layer_timer; /* [train] layer_times (rank 0)      */
    float *clip_host;           /* host copy of device gradients (clipping) */

    /* data */
    dt_dataset_t train, test;
    dt_sampler_t train_sampler, test_sampler;
    dt_pipeline_t *pipe;        /* training batches, loaded ahead          */
    /* [cluster] work_load: unequal shares of each global batch */
    double *work_load;          /* world weights (NULL: equal shares)      */
    bool work_load_auto;        /* auto: rebalanced every epoch            */
    double compute_seconds;     /* this epoch: forward + backward ...      */
    uint64_t compute_samples;   /* ... over this many samples              */
    int slow_rank;              /* DT_TEST_SLOW_RANK (-1: none)            */
    double slow_factor;         /* DT_TEST_SLOW_FACTOR                     */
    uint64_t nan_at[8];         /* DT_TEST_NAN_AT: rank 0's loss is NaN at
                                   these job steps, each once, in order    */
    int nan_n, nan_next;
    uint64_t preempt_at;        /* DT_TEST_PREEMPT_AT: rank 0 asks for a
                                   preemption before this step's vote     */
    uint64_t inf_param_at;      /* DT_TEST_INF_PARAM_AT: rank 0's first
                                   parameter is +inf after this step's
                                   update (0: neither)                    */
    float *x;                   /* evaluation batch inputs, host           */
    int *y;
    int xy_pinned;              /* x, y pinned (dt_device_host_alloc)      */

    /* progress: where training stands (what checkpoints hold) */
    uint64_t epoch;             /* current epoch, 0-based                  */
    uint64_t step_in_epoch;     /* steps done in the current epoch         */
    uint64_t epoch_start;       /* position of the epoch's order where this
                                   world's shards begin: 0, or the samples
                                   seen before a resume at another world
                                   size (data/sampler.h)                   */
    uint64_t global_step;       /* optimizer steps done                    */
    uint64_t opt_base;          /* of them, steps the optimizer's state did
                                   not take (skipped for overflow; before
                                   a fresh state): its step number, which
                                   Adam's bias correction uses, is
                                   global_step + 1 - opt_base            */
    double loss_sum, loss_count;/* this epoch's training loss so far       */
    double step_lr;             /* the lr the last step ran at             */
    /* this rank's training loss at the last step and at the job's first
     * (NaN: none yet); rank 0's go into each checkpoint, by which a
     * rollback tells a sound one from a ruined one (rollback_target.c) */
    double last_loss, first_loss;
    double best_acc;            /* checkpoint_best: best test accuracy ... */
    uint64_t best_epoch;        /* ... and its epoch (1-based; 0: none)    */
    bool best_improved;         /* the epoch just evaluated is the best    */

    /* what every rank agreed on in this step's vote (train_guard.c) */
    bool preempt_now;           /* SIGTERM/SIGUSR1 somewhere: save, stop   */
    bool time_due;              /* rank 0: checkpoint_interval has passed  */
    double last_ckpt_time;      /* rank 0: when the last checkpoint was    */
    double last_vote_time, max_vote_gap; /* for the preemption watchdog    */

    /* timing of the current epoch */
    double train_seconds, comm_wait_seconds;
    double data_wait_seconds;   /* the step waiting for its batch          */
    uint64_t epoch_samples;     /* this rank's samples this epoch          */
    uint64_t epoch_global;      /* every rank's, this epoch (sync)         */

    /* [train] mode = async (ps.h): world is the number of workers, the
     * servers are ranks world .. world + nservers - 1 */
    bool async;
    int nservers;
    /* what the host's workers share, measured before any allocates its
     * model (dt_trainer_measure_memory) */
    dt_mem_shared_t mem_shared;
    int max_staleness;
    bool push_overlap;          /* async: dt_ps_push_begin, not push_pull */
    dt_ps_client_t *ps;
    double ps_wait_seconds;     /* this epoch's waits for the servers      */

    /* rank 0's outputs */
    dt_jsonl_t *jsonl;
    dt_tb_t *tb;
    dt_progress_t progress;
    double final_accuracy;
    bool evaluated;             /* final_accuracy holds a result (0% is one) */
} dt_trainer_t;

/* train_setup.c */
dt_status_t dt_trainer_setup(dt_trainer_t *t, dt_config_t *cfg);
/* What setup gives the optimizer after create: the model's parameter
 * tensors (set_tensors), then what each is (set_tensor_kinds), each when
 * the ops table has it. name: the optimizer's, for errors; plugin: the
 * one whose ops they are, named if one crashes (NULL: none). */
dt_status_t dt_trainer_opt_tensors(const dt_plugin_t *plugin,
                                   const dt_optimizer_ops_t *ops,
                                   void *state, const dt_model_t *m,
                                   const char *name);
void dt_trainer_teardown(dt_trainer_t *t);
/* The host's memory and cgroup limits the workers on it share, measured
 * before dt_trainer_agree_data, which no worker leaves before every
 * worker has entered it (sync: a collective; async: through the job's
 * store), so that no worker counts a neighbour's model as taken
 * (train_memory_check.c). The CPU only. */
void dt_trainer_measure_memory(dt_trainer_t *t);
/* Test hooks: rank 0 (and 1) says it has allocated its model; rank 1
 * says it would, but waits for the other workers' measures
 * (train_memory_check.c). */
void dt_trainer_memory_test_allocated(const dt_trainer_t *t);
void dt_trainer_memory_test_held(const dt_trainer_t *t);
/* Before dt_model_init: DT_ERR_CONFIG, with the numbers, when the
 * estimate of what this worker will hold (dt_train_memory_estimate)
 * clearly exceeds its share of the host's memory (mem_budget.h)
 * (train_memory_check.c). */
dt_status_t dt_trainer_check_memory(const dt_config_t *cfg,
                                    const dt_trainer_t *t);
/* Rank 0 on a GPU: one info line of where its memory goes (the device's
 * count, the model's parts, cuDNN's) (train_memory.c). */
void dt_trainer_report_memory(dt_trainer_t *t);
/* Broadcast a device buffer from rank 0 (staged through host memory when
 * the device is a GPU). */
dt_status_t dt_trainer_broadcast(dt_trainer_t *t, void *dev_ptr,
                                 size_t bytes);
/* After loading (train_data.c): the workers compare their data sets
 * with rank 0's (counts, shape, a digest of labels, class and file
 * names); a rank that differs says so, naming its host and path, and
 * the job fails (sync: every rank; async, through the job's store: that
 * rank and the workers waiting for its verdict, and dtctl stops the
 * others). No worker returns before every worker has entered it. */
dt_status_t dt_trainer_agree_data(const dt_config_t *cfg,
                                  const dt_trainer_t *t);
/* The data set is missing or could not be read (a failure that may
 * pass): say whether dtctl restarts the job for it, once a host
 * (data_retry.c). */
void dt_trainer_say_data_may_pass(const dt_trainer_t *t);
/* st of loading a batch while training or evaluating: the same said by
 * this rank when st is such a failure (DT_ERR_NOT_FOUND, DT_ERR_IO). */
dt_status_t dt_trainer_batch_data_status(dt_status_t st);
/* Broadcast bytes of host memory from rank 0 (any length). */
dt_status_t dt_trainer_broadcast_host(void *buf, size_t bytes);
/* mode = async: the number of parameter servers dtctl started
 * (DT_NUM_SERVERS; 0 when unset). */
int dt_train_async_servers(void);
/* Steps per epoch for this rank. */
uint64_t dt_trainer_steps_per_epoch(const dt_trainer_t *t);
/* Steps of the current epoch: steps_per_epoch, fewer when it starts at
 * epoch_start > 0. */
uint64_t dt_trainer_epoch_steps(const dt_trainer_t *t);

/* work_load = auto keeps every weight at least this share of the
 * largest (a slow rank still takes part). */
#define DT_WORK_LOAD_MIN_WEIGHT 0.05

/* [cluster] work_load for world ranks, checked (errors name the key and
 * file:line): *weights (malloc'd, world entries) or NULL (unset: equal
 * shares), *is_auto for "auto" (weights NULL: start equal). */
dt_status_t dt_work_load_from_config(const dt_config_t *cfg, int world,
                                     double **weights, bool *is_auto);
/* Format weights as "1.00,1.00,0.48". */
/* The fewest samples a rank takes a step under the job's [cluster]
 * work_load, and which rank (train_setup.c). */
dt_status_t dt_train_least_share(const dt_config_t *cfg, int world,
                                 long long batch, long long *least,
                                 int *rank);
void dt_work_load_format(const double *w, int world, char *buf, size_t len);
/* work_load = auto, at the end of an epoch (collective): every rank's
 * compute time per sample, new weights proportional to speed (smoothed
 * with the old ones, at least 1/20 of the largest), logged on rank 0, in
 * force from the next epoch (the pipeline seeks to its start). */
dt_status_t dt_trainer_rebalance(dt_trainer_t *t);

/* train_eval.c: loss and accuracy on the whole test set, every rank its
 * shard, sums allreduced; first dt_trainer_sync_buffers. */
dt_status_t dt_trainer_evaluate(dt_trainer_t *t, double *loss,
                                double *accuracy);
/* train_eval_steps.c: [train] eval_steps inside an epoch, after step
 * `step` of its `steps` (collective, but async: rank 0 alone, on the
 * servers' parameters): the test set's loss and accuracy in rank 0's
 * output, --metrics ({"event":"eval",...}) and TensorBoard (eval/...
 * against the job's step). */
dt_status_t dt_trainer_eval_steps(dt_trainer_t *t, uint64_t step,
                                  uint64_t steps);
/* Collective: every rank takes rank 0's model buffers (batchnorm running
 * statistics; nothing without batchnorm or with one rank). Before each
 * evaluation and each checkpoint. Rank 0's buffers never change here, so
 * they evolve the same however often this runs (resume stays bit-exact
 * whatever the checkpoint schedule); docs/TRAINING.md says why rank 0's
 * rather than the average. */
dt_status_t dt_trainer_sync_buffers(dt_trainer_t *t);

/* train_state.c */
/* Before training (collective): [train] checkpoint_keep >= 0, rank 0
 * creates checkpoint_dir and a file in it (an unwritable directory fails
 * now, not at the first checkpoint); a fresh run (no --resume) is refused
 * when the directory holds checkpoints (it would prune them by step, and
 * a later --resume would continue the old run), else its metrics file is
 * emptied (a resumed run appends). */
dt_status_t dt_trainer_prepare_outputs(dt_trainer_t *t);
dt_status_t dt_trainer_save(dt_trainer_t *t);     /* collective          */
/* The same under a fixed name (NULL: the series, ckpt-<step>); *written
 * (may be NULL; rank 0's answer) says whether the file was written: a
 * failed write is a warning and training goes on. */
dt_status_t dt_trainer_save_as(dt_trainer_t *t, const char *name,
                               bool *written);
/* The job's last checkpoint (end of training, max_steps, preemption;
 * collective): not written is the job's failure, DT_ERR_IO on every rank,
 * said once with the newest checkpoint that remains. */
dt_status_t dt_trainer_save_last(dt_trainer_t *t);
/* Collective: the newest valid checkpoint of a step below `before`
 * (UINT64_MAX: any). *found: one was loaded; found NULL (--resume): none
 * is a warning and a fresh start. */
dt_status_t dt_trainer_restore(dt_trainer_t *t, uint64_t before,
                               bool *found);
/* The same among the checkpoints whose recorded loss is not ruined
 * (dt_loss_ruined): a rollback's, to the file dt_trainer_sound_checkpoint
 * chose unverified; a ruined one is passed over, said. *found must not be
 * NULL. */
dt_status_t dt_trainer_restore_sound(dt_trainer_t *t, uint64_t before,
                                     bool *found);
/* The checkpoint section of those losses: two little-endian doubles. */
#define DT_TRAIN_TAG_LOSSES 9
void dt_trainer_losses_decode(const unsigned char *b, double *last,
                              double *first);
/* The training losses a checkpoint recorded (rank 0's, at its last step
 * and at the job's first); NaN for none (step 0, or a dt before them). */
void dt_trainer_ckpt_losses(const dt_ckpt_t *c, double *last,
                            double *first);

/* rollback_target.c. A checkpoint whose last step's loss is above
 * DT_RUINED_LOSS_FACTOR times the job's first step's holds a state that
 * had already blown up although still finite: a rollback passes over it.
 * Unknown losses (NaN) are never ruined. */
#define DT_RUINED_LOSS_FACTOR 10.0
bool dt_loss_ruined(double last, double first);
/* Rank 0: the newest checkpoint of a step below `below` that is not
 * ruined, by each file's LOSSES section alone (dt_ckpt_peek: no file is
 * read whole, none is verified: dt_trainer_restore_sound does that).
 * *found, its *step; *ruined: the ruined ones newer than it (below
 * `below`), *worst the highest loss among them. Files that are not
 * checkpoints are passed over (named, as a restore would); none found
 * leaves the choice, and any error, to dt_trainer_restore. */
void dt_trainer_sound_checkpoint(const dt_trainer_t *t, uint64_t below,
                                 bool *found, uint64_t *step,
                                 uint64_t *ruined, double *worst);
/* Test hook DT_TEST_ROLLBACK_HOLD=FILE (rank 0; rollback_test_hold.c):
 * writes `step` to FILE.chosen and waits (at most 60 s) for FILE. */
void dt_trainer_test_hold_rollback(const dt_trainer_t *t, uint64_t step);

/* train_guard.c. After the gradients are averaged, before the optimizer
 * step (collective): clip them ([train] clip_grad_*), then vote on whether
 * this step is finite. A diverged step is reported (rank 0) and either
 * fails (DT_ERR_INVALID on every rank) or, with on_divergence = halve_lr,
 * rolls every rank back to the newest sound checkpoint (one not ruined by
 * a blow-up still finite, rollback_target.c; a further restart: the one
 * before the last restart's, when there is one) with the lr halved, and
 * sets *rolled_back: the caller restarts from t->epoch, t->step_in_epoch. */
dt_status_t dt_trainer_guard_step(dt_trainer_t *t, float loss, double lr,
                                  uint64_t step_in_epoch,
                                  bool *rolled_back);
/* Before the state after a step is evaluated or checkpointed
 * (collective, sync mode; async: nothing): are the parameters finite, and
 * test_loss (0 where none was computed)? An update can overflow them after
 * a finite loss, which the next step's vote would see, but the epoch's last
 * step and max_steps have none. A failure is a divergence of the last
 * step, handled as dt_trainer_guard_step's. */
dt_status_t dt_trainer_guard_kept(dt_trainer_t *t, double test_loss,
                                  bool *rolled_back);
/* With on_divergence = halve_lr, a fresh job's first checkpoint (step 0),
 * so there is always one to go back to. */
dt_status_t dt_trainer_guard_begin(dt_trainer_t *t);
/* At an agreed preemption (after the step's update): *bad when any rank's
 * parameters are not finite, so that no checkpoint is written of them
 * (a collective of the sync ranks; async: never bad). */
dt_status_t dt_trainer_guard_preempt(dt_trainer_t *t, bool *bad);

/* train_state.c, mode = async, rank 0 with --resume: the newest
 * checkpoint's parameters into t->params and its position; opt[s] /
 * opt_len[s] the optimizer state of server s's shard when the checkpoint
 * was written by as many servers (else NULL: fresh state, warned), and
 * *opt_steps the optimizer steps that state had made. *found: one was
 * loaded. */
dt_status_t dt_trainer_restore_async(dt_trainer_t *t, void **opt,
                                     size_t *opt_len, dt_ps_pos_t *pos,
                                     uint64_t *opt_steps, bool *found);

/* dt_train_check_config, dt_train_run: the public dt/train.h. */

#endif /* DT_TRAIN_H */
