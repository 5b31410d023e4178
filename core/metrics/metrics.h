/* metrics.h — what the trainer reports (internal): one JSON line per epoch
 * (--metrics FILE), TensorBoard scalars ([train] log_dir), and a progress
 * line on the terminal. Only rank 0 writes any of them. */
#ifndef DT_METRICS_H
#define DT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <dt/status.h>
#include <dt/clock.h>

/* One epoch's summary. */
typedef struct dt_epoch_metrics {
    uint64_t epoch;          /* 1-based                                    */
    uint64_t step;           /* global steps done at the end of the epoch */
    double train_loss;       /* mean over the epoch's samples, all ranks   */
    double test_loss;
    double test_accuracy;    /* fraction 0..1                              */
    double lr;               /* learning rate at the end of the epoch      */
    double samples_per_sec;  /* global: all ranks together                 */
    double comm_fraction;    /* share of step time waiting for allreduce   */
    double data_wait;        /* share of step time waiting for the batch   */
    double epoch_seconds;
} dt_epoch_metrics_t;

/* ---- JSONL ---------------------------------------------------------------- */
typedef struct dt_jsonl dt_jsonl_t;
/* Append to path (created if missing); each line is flushed as written. */
dt_status_t dt_jsonl_open(const char *path, dt_jsonl_t **out);
/* Empty the file (a fresh run's; a resumed one appends). Not a regular
 * file (a pipe, /dev/stdout): nothing to do. */
dt_status_t dt_jsonl_truncate(dt_jsonl_t *j);
/* DT_ERR_IO when the line could not be written: warned once, naming the
 * file and errno; the caller stops writing there (dt_jsonl_close). */
dt_status_t dt_jsonl_write_epoch(dt_jsonl_t *j, const dt_epoch_metrics_t *m);
/* {"event":"eval","epoch":E,"step":S,"test_loss":..,"test_accuracy":..}:
 * an evaluation inside epoch E (1-based) after the job's step S ([train]
 * eval_steps); dtctl plot skips events. Errors as dt_jsonl_write_epoch. */
dt_status_t dt_jsonl_write_eval(dt_jsonl_t *j, uint64_t epoch, uint64_t step,
                                double test_loss, double test_accuracy);
void dt_jsonl_close(dt_jsonl_t *j);

/* ---- TensorBoard event files ------------------------------------------------
 * events.out.tfevents.<time>.<host>.<pid> in dir: TFRecord framing (u64
 * length, masked CRC32C of it, data, masked CRC32C of data) around Event
 * protobufs: a first event with file_version "brain.Event:2", then one
 * event per scalar with wall_time, step and summary { value { tag,
 * simple_value } }. */
typedef struct dt_tb dt_tb_t;
dt_status_t dt_tb_open(const char *dir, dt_tb_t **out);
/* DT_ERR_IO when the event could not be written: warned, naming the
 * file and errno; the caller stops writing there (dt_tb_close). */
dt_status_t dt_tb_scalar(dt_tb_t *tb, const char *tag, int64_t step,
                         float value);
/* The file's path (owned by tb). */
const char *dt_tb_path(const dt_tb_t *tb);
void dt_tb_close(dt_tb_t *tb);

/* CRC-32C (Castagnoli), and TFRecord's masked form of it. */
uint32_t dt_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t dt_crc32c_masked(const void *buf, size_t len);

/* Encoders for the few protobuf fields the event file needs (exposed so
 * tests can build expected bytes). Each returns bytes written into buf
 * (which must be large enough: tag + 10 bytes of varint + payload). */
size_t dt_pb_varint(unsigned char *buf, uint64_t v);
size_t dt_tb_encode_scalar_event(unsigned char *buf, size_t cap,
                                 double wall_time, int64_t step,
                                 const char *tag, float value);

/* ---- progress line ----------------------------------------------------------
 * On a terminal: one line redrawn in place ("\r") at most a few times a
 * second. Otherwise: a plain line every `every` steps and at epoch ends. */
typedef struct dt_progress {
    FILE *out;
    bool tty;
    uint64_t every;          /* plain mode: print every N steps (0: none)  */
    double last_draw;        /* monotonic seconds of the last redraw       */
    double epoch_start;
    uint64_t epoch_done;     /* steps of the epoch done before its start:
                                a resumed epoch's                          */
    uint64_t epochs;
    size_t line_len;         /* characters drawn, to clear on redraw       */
} dt_progress_t;

void dt_progress_init(dt_progress_t *p, FILE *out, uint64_t epochs);
/* done: the epoch's steps already done before this start (a checkpoint
 * of the middle of the epoch resumed), 0 otherwise. */
void dt_progress_epoch_start(dt_progress_t *p, uint64_t done);
/* Seconds left in the epoch after `step` of `steps`, from the `elapsed`
 * seconds its steps since `done` took (a resumed epoch's first steps took
 * none of it: counted in, they made its ETA a third of the truth at step
 * 30 of 63 resumed at 20); negative when nothing is measured yet. */
double dt_progress_eta(double elapsed, uint64_t done, uint64_t step,
                       uint64_t steps);
/* step: 1-based within the epoch, of steps; data_wait: the share of the
 * epoch's step time so far spent waiting for batches. */
void dt_progress_step(dt_progress_t *p, uint64_t epoch, uint64_t step,
                      uint64_t steps, double loss, double samples_per_sec,
                      double data_wait);
void dt_progress_epoch_end(dt_progress_t *p, const dt_epoch_metrics_t *m);
/* An evaluation inside an epoch ([train] eval_steps), after its step
 * `step` of `steps` (the job's `global_step`). */
void dt_progress_eval(dt_progress_t *p, uint64_t epoch, uint64_t step,
                      uint64_t steps, uint64_t global_step, double test_loss,
                      double test_accuracy);

/* Monotonic clock in seconds. */

#endif /* DT_METRICS_H */
