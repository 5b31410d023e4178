/* dt/dt.h — the worker API: join the job that dtctl started, then run
 * collectives with the other workers.
 *
 *   #include <dt/dt.h>
 *   int main(void) {
 *       if (dt_init() != DT_OK) return 1;
 *       float grad[1000];  ... fill ...
 *       dt_allreduce(grad, grad, 1000, DT_FLOAT32, DT_AVG);   // in place
 *       dt_finalize();
 *   }
 *   $ dtctl run -n 4 -- ./train          (or just ./train: one worker)
 *
 * Where dt_init learns the job (all set by `dtctl run`):
 *   DT_RANK, DT_WORLD_SIZE, DT_LOCAL_RANK, DT_LOCAL_SIZE   who am I
 *     (when DT_RANK is unset: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/
 *      LOCAL_SIZE under mpirun, else SLURM_PROCID/NTASKS/LOCALID under
 *      srun; with none of them the program is a job of one worker)
 *   DT_RENDEZVOUS=host:port   the job's rendezvous store (in dtctl)
 *   DT_JOB_TOKEN              the job secret (hex); never put it in argv
 *   DT_TRANSPORT              transport plugin, default tcp
 *   DT_INTERFACE              which interface to use (see [cluster]
 *                             interface); default: the one that routes to
 *                             the rendezvous host
 *   DT_<SECTION>_<KEY>        configuration, e.g. DT_TRANSPORT_TCP_...,
 *                             DT_CLUSTER_TIMEOUT (connect/peer timeout)
 *   DT_LOG_LEVEL              error, warn, info (default), debug, trace
 *
 * A job of one worker needs no dtctl and no transport: collectives copy.
 *
 * Rules for collectives (as in MPI): every rank calls the same collectives
 * in the same order with the same count, type, op and root. Buffers are
 * host memory (dt_allreduce_mem also takes GPU memory); NULL only with
 * count 0. send == recv means in place, as in MPI: dt_allgather then finds
 * this rank's block already at recv + rank * count (not at recv), and
 * dt_reduce_scatter reads the whole input from recv and leaves this
 * rank's block at its start. Counts may be 0 and need not
 * divide by the number of ranks. Calls come from one thread at a time.
 * Reductions in host memory take DT_FLOAT32, DT_FLOAT64 and DT_INT32 with
 * every op (16-bit types: DT_ERR_UNSUPPORTED, with one worker too; a
 * transport such as nccl may reduce them in GPU memory). Integer sums
 * wrap; DT_AVG of DT_INT32 is that sum divided by the number of ranks,
 * rounded to nearest (ties away from zero): it wraps where the sum does.
 *
 * Errors: every function returns DT_OK or a negative dt_status_t, and logs
 * what failed (with rank and host) before returning; dt_status_str() names
 * the code. Collectives that do not match across ranks fail with
 * DT_ERR_INVALID, each rank's error line naming the calls: through shared
 * memory (ranks of one host) any difference; over tcp a different
 * collective, type, op or message size (a root only where a rank receives
 * what it did not expect). After a failed collective the job cannot continue: every later
 * collective fails, dt_finalize returns that error at once, and peers the
 * failure did not reach may wait until their own timeout. */
#ifndef DT_DT_H
#define DT_DT_H

#include <stddef.h>
#include <dt/status.h>
#include <dt/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Join the job: read the environment, connect to the rendezvous store,
 * load the transport and connect to every other worker. Collective: every
 * rank must call it. Calling it twice without dt_finalize is an error. */
dt_status_t dt_init(void);

/* This worker's rank (0..size-1), the number of workers, and the same on
 * this host. -1 before dt_init. */
int dt_rank(void);
int dt_size(void);
int dt_local_rank(void);
int dt_local_size(void);

/* recv[i] = op over all ranks of send[i], on every rank. */
dt_status_t dt_allreduce(const void *send, void *recv, size_t count,
                         dt_dtype_t type, dt_redop_t op);
/* dt_allreduce on buffers of kind mem: DT_MEM_HOST, or DT_MEM_CUDA (GPU
 * memory, e.g. a model's gradients on a CUDA device; dt/device.h). The
 * work is ordered after what is queued on stream (a cudaStream_t; NULL:
 * the default stream; ignored for host memory), and the call returns when
 * recv holds the result. Every rank passes the same kind.
 * A transport that reads CUDA memory (its caps report DT_CAP_CUDA_MEM)
 * and has a native allreduce (nccl) gets the device buffers and the
 * stream. Any other transport, or one that declines the call, gets host
 * memory: dt copies send to a host buffer it keeps for the next call,
 * reduces it there and copies the result into recv. */
dt_status_t dt_allreduce_mem(const void *send, void *recv, size_t count,
                             dt_dtype_t type, dt_redop_t op, dt_mem_t mem,
                             void *stream);
/* root's buf is copied into every other rank's buf. */
dt_status_t dt_broadcast(void *buf, size_t count, dt_dtype_t type, int root);
/* recv (size * count elements) gets rank r's send at r * count. */
dt_status_t dt_allgather(const void *send, void *recv, size_t count,
                         dt_dtype_t type);
/* send holds size * count elements; recv (count elements) gets this rank's
 * block of the reduction over all ranks. */
dt_status_t dt_reduce_scatter(const void *send, void *recv, size_t count,
                              dt_dtype_t type, dt_redop_t op);
/* Returns once every rank has entered it. */
dt_status_t dt_barrier(void);

/* Leave the job: waits (bounded by the job timeout) until every rank has
 * called it, then closes connections. dt_init may be called again. After
 * a collective failed it does not wait (some rank may never come): it
 * closes at once and returns that collective's error. A store that does
 * not answer (dtctl stopped, this host cut off from dtctl's) costs it
 * DT_STORE_FAILURE_WAIT_S (dt/store.h), then DT_OK with a warning that
 * the rank leaves without waiting for the others (its collectives all
 * completed: its part of the job is done). */
dt_status_t dt_finalize(void);

/* Which way this job's host-memory collectives carry data between the
 * ranks, and why, in words for people (`dtctl bench` prints it): "shared
 * memory: all 4 ranks on this host; transport tcp carries none of it ..."
 * (whatever --transport says), "transport tcp across 2 hosts; allreduce
 * within each host ...", or "transport tcp ([collectives] shm = off)".
 * NULL before dt_init; valid until dt_finalize. */
const char *dt_collectives_path(void);

/* dt_status_str(st), a short name for a status ("timed out"), is
 * declared in dt/status.h. */

#ifdef __cplusplus
}
#endif
#endif /* DT_DT_H */
