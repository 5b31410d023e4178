/* layer_times.h — [train] layer_times = FILE: the trainer measures its
 * own forward, each layer's backward between gradient events and the
 * optimizer, on its device with its settings (precision, activations,
 * layout, threads), and writes them in `dtctl plan --layer-times` form:
 * the per-layer times of a GPU run that a plan of GPU clusters needs
 * (docs/PLAN.md). Rank 0 times steps 3 to 7 of this process (the first
 * ones allocate and tune) with its compute stream synchronized at each
 * event (dt_device_sync: the stream, not the device -- at N > 1 the
 * communication streams run beside it, so time with -n 1), keeps the
 * fastest of each and rewrites FILE after each timed step. */
#ifndef DT_TRAIN_LAYER_TIMES_H
#define DT_TRAIN_LAYER_TIMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dt/nn.h>

typedef struct dt_layer_timer dt_layer_timer_t;

/* NULL path or "": no timer (*out = NULL). batch: the rank's batch the
 * times are for (written into FILE; dtctl plan scales by it). */
dt_status_t dt_layer_timer_new(const char *path, dt_device_t *dev,
                               size_t batch, dt_layer_timer_t **out);
void dt_layer_timer_free(dt_layer_timer_t *lt);

/* Whether optimizer step `step` is timed: the 3rd to 7th step of this
 * process (a resumed run counts from where it resumed). */
bool dt_layer_timer_on(dt_layer_timer_t *lt, uint64_t step);

/* The marks of one timed step, in order: begin (before forward),
 * forward_done, the gradient events (dt_layer_timer_ready, which calls
 * the real callback after its mark), backward_done, optimizer_begin,
 * optimizer_done, then step_done (folds the step in, writes FILE). Each
 * mark synchronizes the compute stream first. */
dt_status_t dt_layer_timer_begin(dt_layer_timer_t *lt,
                                 dt_status_t (*ready)(void *, size_t, size_t),
                                 void *ready_arg);
dt_status_t dt_layer_timer_mark(dt_layer_timer_t *lt, int what);
dt_status_t dt_layer_timer_ready(void *lt, size_t offset, size_t len);
dt_status_t dt_layer_timer_step_done(dt_layer_timer_t *lt);

enum { DT_LT_FORWARD_DONE, DT_LT_BACKWARD_DONE, DT_LT_OPT_BEGIN,
       DT_LT_OPT_DONE };

#endif
