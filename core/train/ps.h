/* ps.h — asynchronous training ([train] mode = async): parameter servers
 * and their clients, over the transport's point-to-point calls.
 *
 * The job's ranks are W workers (0..W-1) and S servers (W..W+S-1), one
 * transport world of W+S ranks. Server s owns the contiguous shard
 * [n*s/S, n*(s+1)/S) of the flat parameter vector and the optimizer
 * plugin's state for it. A worker's request is one 64-byte control word
 * block (tag PS_TAG_CTL), its payload follows on PS_TAG_DATA, the answer
 * (a control block, then the shard) comes on PS_TAG_REPLY:
 *
 *   INIT  rank 0 -> server: the shard (and its optimizer state when
 *         resuming); nothing else is answered before it
 *   JOIN  -> the shard and the position to start at (epoch, step)
 *   PUSH  gradient shard + lr: applied at once (optimizer step), then
 *         answered with the fresh shard, held while the worker is more
 *         than max_staleness pushes ahead of the slowest active worker
 *   PULL  -> the fresh shard (held like PUSH)
 *   SAVE  rank 0 -> the shard, the optimizer state, the server's steps
 *   DONE  the worker has finished; it no longer counts as the slowest;
 *         answered (with the shard) once every worker is done
 *
 * Liveness ([cluster] timeout T): while it holds a request the server
 * sends the worker a "held" control block on PS_TAG_HELD every T/4 (10 ms
 * to 1 s); a worker fails on a server that sent neither for T. A worker
 * working alone (its setup, rank 0's evaluation after PULL and
 * checkpoint after SAVE) beats "ps/beat/RANK" in the job's store; a
 * server fails on a worker neither waiting on it, nor done, nor beating
 * that sent nothing for T plus two periods. Either records the silent
 * rank as the job's failure (dt/store.h), so dtctl names it. */
#ifndef DT_TRAIN_PS_H
#define DT_TRAIN_PS_H

#include <stddef.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/status.h>

/* Where training starts: the job's position, carried by INIT and JOIN. */
typedef struct dt_ps_pos {
    uint64_t epoch, step_in_epoch, epoch_start, global_step;
} dt_ps_pos_t;

typedef struct dt_ps_client dt_ps_client_t;

/* Shard s of S over n parameters: [*lo, *hi). */
void dt_ps_shard(size_t n, int nservers, int s, size_t *lo, size_t *hi);

/* The server's whole life: serve until every worker said DONE. Reads
 * [train] optimizer and max_staleness and [cluster] timeout from cfg. */
dt_status_t dt_ps_serve(dt_config_t *cfg, int nworkers, int nservers);

/* [cluster] timeout from the environment, as dt_init reads it; the
 * worker beats until its first request. */
dt_status_t dt_ps_client_new(int nworkers, int nservers, size_t nparams,
                             dt_ps_client_t **out);
void dt_ps_client_free(dt_ps_client_t *c);
/* Rank 0: hand each server its shard of params and, when opt[s] is not
 * NULL, the optimizer state of shard s (opt_len[s] bytes), which had made
 * opt_steps optimizer steps (a fresh state starts at 0). */
dt_status_t dt_ps_init_servers(dt_ps_client_t *c, const float *params,
                               void *const *opt, const size_t *opt_len,
                               uint64_t opt_steps, const dt_ps_pos_t *pos);
/* Every worker, once: the servers' parameters and the start position. */
dt_status_t dt_ps_join(dt_ps_client_t *c, float *params, dt_ps_pos_t *pos);
/* Push grads (every shard to its server), then receive the fresh params. */
dt_status_t dt_ps_push_pull(dt_ps_client_t *c, float *params,
                            const float *grads, float lr, uint64_t step);
/* The same, overlapped with the next step (push_overlap): the gradients
 * are copied and sent, the call returns; the fresh parameters are written
 * into params when the push completes: at the next dt_ps_push_begin (so
 * the step in between computed on parameters one push older), at
 * dt_ps_push_end, or before any other request. */
dt_status_t dt_ps_push_begin(dt_ps_client_t *c, float *params,
                             const float *grads, float lr, uint64_t step);
dt_status_t dt_ps_push_end(dt_ps_client_t *c);
dt_status_t dt_ps_pull(dt_ps_client_t *c, float *params);
/* Rank 0: every shard and its optimizer state (opt[s] malloc'd, the
 * caller frees), *steps: the optimizer steps server 0 applied. It beats
 * until its next request (writing the checkpoint alone); so does
 * dt_ps_pull (evaluating alone). */
dt_status_t dt_ps_save(dt_ps_client_t *c, float *params, void **opt,
                       size_t *opt_len, uint64_t *steps);
/* This worker is finished; returns once every worker is (params: the
 * servers' final parameters). */
dt_status_t dt_ps_done(dt_ps_client_t *c, float *params);
/* Seconds spent waiting for the servers (push, pull). */
double dt_ps_wait_seconds(const dt_ps_client_t *c);

#endif /* DT_TRAIN_PS_H */
