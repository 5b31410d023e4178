/* dt/plugin.h — the plugin ABI (installed for out-of-tree plugin authors).
 *
 * A plugin is one shared object named dt_<kind>_<name>.so that exports one
 * symbol, `dt_plugin_v1`, a const dt_plugin_t. Everything else in the file
 * should be hidden (static, or -fvisibility=hidden). The loader checks that
 * abi == DT_PLUGIN_ABI, that kind and name agree with the file name, and
 * that the ops table holds the ops its kind requires.
 *
 *   #include <dt/plugin.h>
 *   static const dt_optimizer_ops_t ops = { sizeof ops, ... };
 *   DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
 *       DT_PLUGIN_ABI, DT_KIND_OPTIMIZER, "mysgd", "1.0",
 *       "plain SGD", my_keys, NULL, &ops };
 *
 * The same line works in C++, at namespace scope: DT_PLUGIN_EXPORT
 * carries extern "C" there (below).
 *
 * <name> is 1 to 64 of [a-z0-9_-] (lower case letters, digits, '_' and
 * '-'); the loader refuses any other file name, and looks up no other
 * name (`--transport MyNet`).
 *
 * Conventions for every ops table below:
 * - It starts with `size_t size` = sizeof(the table as the plugin was built),
 *   so later versions can append entries; the core never reads past size.
 * - Each kind's section says which ops are required: the loader refuses a
 *   plugin whose required op is NULL or beyond its size, naming every op
 *   it lacks (`dtctl plugins` lists it as refused; dtctl run stops before
 *   any worker starts). An optional op that is NULL means "not
 *   supported": the core falls back (a transport without a native
 *   allreduce gets the core's algorithms) or reports DT_ERR_UNSUPPORTED
 *   to the user.
 * - Functions return dt_status_t and give results through out-parameters.
 * - Plugins link against libdt and may use its logger (dt/log.h) and config
 *   getters (dt/config.h); they never parse files themselves: the core hands
 *   them the configuration, and they read their own section
 *   "<kind>.<name>", whose keys they declare in `keys`.
 * - No plugin function may log or copy a secret (the job token).
 */
#ifndef DT_PLUGIN_H
#define DT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/hosts.h>
#include <dt/status.h>
#include <dt/types.h>

/* 1 when an ops table of type `type` holds a non-NULL `field` inside the
 * size it was built with (tables grow by appending: an older plugin's
 * table simply ends before a newer field). */
#define DT_OPS_HAS(ops, type, field)                                          \
    ((ops)->size >= offsetof(type, field) + sizeof((ops)->field) &&          \
     (ops)->field != NULL)

#ifdef __cplusplus
extern "C" {
#endif

#define DT_PLUGIN_ABI 1
#define DT_PLUGIN_SYMBOL "dt_plugin_v1"
/* Exports the plugin's dt_plugin_v1. In C++ it also says extern "C": a
 * const at namespace scope is otherwise local to its file (and its name
 * mangled), so the loader would not find it. (A prior declaration of
 * dt_plugin_v1 in this header would not do: g++ then ignores, and warns
 * about, the visibility attribute on the definition.) */
#ifdef __cplusplus
#define DT_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define DT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

typedef enum dt_kind {
    DT_KIND_LAUNCHER = 0,
    DT_KIND_TRANSPORT = 1,
    DT_KIND_STORAGE = 2,
    DT_KIND_OPTIMIZER = 3,
    DT_KIND_COUNT
} dt_kind_t;

typedef struct dt_plugin {
    uint32_t abi;            /* DT_PLUGIN_ABI                                 */
    dt_kind_t kind;
    const char *name;        /* must match the file dt_<kind>_<name>.so       */
    const char *version;     /* the plugin's own version string               */
    const char *description; /* one line for `dtctl plugins`                  */
    const dt_key_spec_t *keys; /* keys of section [<kind>.<name>], NULL-name
                                  terminated; NULL when it has none           */
    /* Optional run-time check (a GPU present, a tool on PATH). Return DT_OK
     * when usable; otherwise write a one-line reason into why. NULL: always
     * available once loaded. Must be cheap and must not block. The loader
     * runs it in a child process (what it sets up there is lost); one that
     * crashes or takes over 10 s makes the plugin unavailable, saying so. */
    dt_status_t (*available)(char *why, size_t why_len);
    const void *ops;         /* the kind's ops table (below)                  */
} dt_plugin_t;

const char *dt_kind_name(dt_kind_t kind); /* "launcher", ... */

/* ======================================================================
 * Launcher: start N worker processes on hosts/slots, watch them, stop them.
 * All calls come from one thread of dtctl. Nothing blocks longer than the
 * timeout it is given.
 * ====================================================================== */

/* How a worker ended. */
typedef struct dt_worker_exit {
    int rank;          /* -1 when the scheduler only reports the whole job */
    const char *host;  /* owned by the launcher; valid until its fini      */
    int signaled;      /* 1: killed by signal `signo`; 0: exited with code */
    int signo;
    int code;
} dt_worker_exit_t;

/* Called by the launcher whenever a worker wrote to stdout (fd 1) or stderr
 * (fd 2). Data is raw bytes as they arrived (not whole lines): the core
 * assembles lines and prefixes them. */
typedef void (*dt_output_fn)(void *arg, int rank, int fd, const char *data,
                             size_t len);

typedef struct dt_launch_spec {
    const dt_hostlist_t *hosts;      /* where; "localhost" for local jobs   */
    int np;                          /* number of ranks                      */
    const dt_placement_t *placement; /* np entries: rank -> host/local rank  */
    const char *const *argv;         /* worker command, NULL-terminated      */
    const char *workdir;             /* NULL: the launcher's default         */
    /* Environment for every worker, "KEY=VALUE", NULL-terminated: the
     * job's variables only (DT_*, torchrun's, [cluster] env_vars), not
     * dtctl's own environment (PATH, HOME, LD_LIBRARY_PATH...): a launcher
     * that should pass that on adds it beneath these, as local does with
     * environ; ssh and yarn do not. Holds the job token (DT_JOB_TOKEN):
     * pass it over a channel or the environment, never in any process's
     * argv, never in a log line. */
    const char *const *env;
    /* Per-rank additions (DT_RANK, LOCAL_RANK, ...), np lists. Launchers
     * whose scheduler places ranks itself (mpirun, srun, qrsh) may ignore
     * it: workers then derive their rank from the scheduler's variables. */
    const char *const *const *rank_env;
    dt_output_fn output;             /* NULL: inherit dtctl's stdout/stderr  */
    void *output_arg;
    /* Appended: non-zero once dtctl was asked to stop (SIGINT, SIGTERM,
     * SIGHUP, SIGUSR1). A launch that waits on hosts (connections, ranks
     * reporting their start) checks it at least every 200 ms, stops what
     * it started and returns DT_ERR_INTERRUPTED. NULL: no one asks. (dtctl
     * before 2026-11-27 passed the spec without it: an out-of-tree
     * launcher that reads it needs a newer dtctl.) */
    int (*stop_requested)(void);
    /* Appended: non-zero: rank 0 reads dtctl's standard input (fd 0), as
     * under mpirun, and gets its end of file when dtctl's ends; the other
     * ranks read /dev/null. A launcher that cannot do it gives rank 0
     * /dev/null too (docs/LAUNCHERS.md says which can). A relay must never
     * block (a rank that does not read its stdin), and the caller ignores
     * SIGPIPE (dtctl does): writing to an ended rank's stdin fails. 0 (an
     * older dtctl): every rank reads /dev/null. */
    int forward_stdin;
} dt_launch_spec_t;

/* Who a worker is, as its scheduler's environment says (identify). The
 * core fills it with defaults before the call (node_rank, num_nodes -1,
 * precedence 0, source ""); identify overwrites what it knows. */
typedef struct dt_worker_identity {
    int rank, size;             /* 0 <= rank < size                         */
    int local_rank, local_size; /* among the workers on this host           */
    int node_rank, num_nodes;   /* this host among the job's; -1: not said  */
    /* When several launchers recognise one environment (mpirun inside a
     * Slurm or SGE job sees both Open MPI's and Slurm's variables), the
     * highest precedence wins: 0 for a scheduler that owns the nodes
     * (Slurm), 1 for a front-end that runs inside such a job (mpirun). */
    int precedence;
    char source[32];            /* the scheduler's name for messages,
                                   "Slurm", "Open MPI"                     */
} dt_worker_identity_t;

typedef struct dt_launcher_ops {
    size_t size;
    /* Read [launcher.<name>] from cfg; create the launcher's state. */
    dt_status_t (*init)(const dt_config_t *cfg, void **ctx);
    /* Start all workers and return once they are started (not finished).
     * On partial failure, stop those already started before returning. */
    dt_status_t (*launch)(void *ctx, const dt_launch_spec_t *spec);
    /* Forward output and wait up to timeout_ms (0: poll, -1: forever) for
     * the next worker to end. DT_OK: *ev describes one ended worker (each
     * worker is reported once); DT_ERR_TIMEOUT: none ended in time;
     * DT_ERR_NOT_FOUND: no worker is left to report. */
    dt_status_t (*wait)(void *ctx, int timeout_ms, dt_worker_exit_t *ev);
    /* Send signo to every worker still running (its whole process group,
     * on every host). Does not wait, but for SIGSTOP and SIGCONT (Ctrl-Z
     * and fg; asked only of local, ssh, mpi and slurm, cmd_run.c), which
     * return once the workers followed: not DT_OK when some may not have
     * (said). */
    dt_status_t (*signal)(void *ctx, int signo);
    /* Optional: run a short command on one host and collect its output
     * (storage plugins verify paths with it; `dtctl check` probes with it).
     * *output is malloc'd, NUL-terminated. */
    dt_status_t (*run_on_host)(void *ctx, const dt_host_t *host,
                               const char *const *argv, char **output,
                               int *exit_code);
    /* Optional preflight for `dtctl check`: append one line per problem
     * found (with how to fix it) to the callback. */
    dt_status_t (*check)(void *ctx, const dt_hostlist_t *hosts,
                         void (*report)(void *arg, const char *host,
                                        const char *problem),
                         void *arg);
    /* Release everything; workers still running are killed and reaped. */
    void (*fini)(void *ctx);
    /* Optional (appended; check with DT_OPS_HAS): the scheduler's
     * environment -> this worker's identity. The one place a launcher's
     * scheduler variables (SLURM_PROCID, OMPI_COMM_WORLD_RANK, ...) are
     * read: the core knows none of them by name.
     *
     * Called in a worker, by dt_init, only when DT_RANK is absent (a
     * program started by a plain `mpirun` or `srun`, not by dtctl): the
     * core then loads every installed launcher and asks each one that has
     * this op. No ctx: init has not run, and identify reads nothing but
     * envp (an environ-style array), allocates nothing, does not log.
     * Returns
     *   DT_OK             envp is this scheduler's; *out filled (rank,
     *                     size, local_rank, local_size at least);
     *   DT_ERR_NOT_FOUND  envp is not this scheduler's (its rank variable
     *                     is absent); *out untouched;
     *   DT_ERR_CONFIG     it is, but the values are not numbers or do not
     *                     fit together: one line in why naming the
     *                     variables and their values.
     * A launcher whose ranks run a prologue (the frontend's, the job
     * script of sge/yarn) sets DT_RANK & co. there from the same variables,
     * and should generate both from one description of them, as mpi and
     * slurm do (plugins/launcher/common/schedenv/). */
    dt_status_t (*identify)(char *const *envp, dt_worker_identity_t *out,
                            char *why, size_t why_len);
    /* Optional (appended; read with DT_LAUNCHER_FLAGS): DT_LAUNCHER_* bits,
     * what dtctl must know about the launcher before it starts anything.
     * 0 (or a table without the field): every rank starts where
     * dt_launch_spec_t.placement says. */
    uint32_t flags;
} dt_launcher_ops_t;

/* The scheduler decides which host runs each rank (srun, an SGE job
 * script, YARN's containers), not spec->placement: what rests on dtctl's
 * placement (a hostfile's weight=, elastic membership's exclusion of a
 * host) cannot reach the ranks, and dtctl refuses it before launch. */
#define DT_LAUNCHER_PLACES_RANKS (1u << 0)
/* ops' flags; 0 for a table from before the field. */
#define DT_LAUNCHER_FLAGS(ops)                                                \
    ((ops)->size >= offsetof(dt_launcher_ops_t, flags) +                      \
                        sizeof((ops)->flags)                                  \
         ? (ops)->flags                                                       \
         : 0u)

/* ======================================================================
 * Transport: move bytes between ranks. Point-to-point calls are
 * non-blocking; `wait` blocks, polling for a bounded time before it
 * sleeps (ranks may outnumber cores: dt/wait.h). All calls for one
 * transport instance come from one thread at a time.
 *
 * Required: init, isend, irecv, test, wait, fini. The loader refuses a
 * transport without one and names each missing op; the core's algorithms
 * call test and wait unconditionally. Optional: caps (NULL: host memory
 * only) and the native collectives (NULL: the core's algorithms).
 *
 * Memory: the core's own algorithms (over isend/irecv) pass host memory
 * only, with DT_MEM_HOST; they reduce on the CPU. Device buffers given to
 * dt_allreduce_mem (dt.h) reach a transport only through its native
 * allreduce, with mem = DT_MEM_CUDA and the caller's stream, and only when
 * caps reports DT_CAP_CUDA_MEM; otherwise the core stages them through
 * host memory and the transport sees DT_MEM_HOST.
 * ====================================================================== */

typedef struct dt_store dt_store_t;       /* rendezvous client (dt/store.h) */
typedef struct dt_request dt_request_t;   /* defined by each transport      */

typedef struct dt_transport_args {
    int rank, size;
    int local_rank, local_size;
    dt_store_t *store;         /* authenticated client of the job's store;
                                  valid until fini (a transport may use it
                                  after init, e.g. to agree on which rank
                                  failed)                                   */
    const uint8_t *token;      /* the job secret, for authenticating peer   */
    size_t token_len;          /*   connections (dt/auth.h); never log or
                                    copy it out                             */
    const char *bind_addr;     /* address chosen by interface selection     */
    double timeout;            /* seconds before a silent peer is an error  */
} dt_transport_args_t;

/* Capability bits returned by caps(). */
#define DT_CAP_CUDA_MEM (1u << 0) /* the native collectives (and isend/irecv)
                                     take mem = DT_MEM_CUDA buffers         */
/* The core must not bypass this transport through shared memory for the
 * ranks of one host ([collectives] shm): the user asked for every byte to
 * cross it (ucx with a UCX_TLS list without shared memory, say). */
#define DT_CAP_NO_SHM (1u << 1)

/* The tags of the core's own collectives over isend/irecv (the core's
 * other point-to-point users, such as the parameter servers, take others).
 * A tag is the kind of collective (DT_TAG_ALLREDUCE ...) plus
 * DT_COLL_TAG_KINDS times what the call said that a message's length
 * cannot show: its element type, op and root (DT_COLL_TAG_DETAIL). A
 * rank runs one collective at a time, and between a pair of ranks the
 * messages of each come in the order of the calls. So a message from a
 * peer with one of these tags arriving where the oldest receive from that
 * peer still waiting has another of them, or with a length other than
 * that receive's, means the ranks called different collectives (or
 * counts, types, ops or roots): a transport may fail the call at once
 * with DT_ERR_INVALID, naming both (dt_coll_tag_name, dt_coll_tag_text),
 * rather than wait for its timeout (tcp does). A transport that matches
 * by tag (ucx) never mixes them up; one that matches by order alone
 * cannot tell. */
enum {
    DT_TAG_ALLREDUCE = 0x4c000001,
    DT_TAG_BROADCAST,
    DT_TAG_ALLGATHER,
    DT_TAG_REDUCE_SCATTER,
    DT_TAG_BARRIER
};
#define DT_COLL_TAG_KINDS 8
/* type (3 bits), op (3 bits), root (16 bits, modulo 65536) */
#define DT_COLL_TAG_DETAIL(type, op, root)                                    \
    (((unsigned)(type) & 7u) | (((unsigned)(op) & 7u) << 3) |                 \
     (((unsigned)(root) & 0xffffu) << 6))
#define DT_COLL_TAG_SPAN ((unsigned)DT_COLL_TAG_KINDS << 22)

/* The collective of one of those tags ("allreduce"); NULL for any other. */
static inline const char *dt_coll_tag_name(int tag)
{
    static const char *const names[] = {"allreduce", "broadcast",
                                        "allgather", "reduce-scatter",
                                        "barrier"};
    unsigned d = (unsigned)tag - (unsigned)DT_TAG_ALLREDUCE;
    unsigned i = d % DT_COLL_TAG_KINDS;
    return d < DT_COLL_TAG_SPAN && i < sizeof names / sizeof *names
               ? names[i]
               : NULL;
}

/* "allreduce (float32, sum)", "broadcast (float32, root 3)", "barrier"
 * into buf for one of those tags (libdt); "" for any other. Returns buf. */
const char *dt_coll_tag_text(int tag, char *buf, size_t len);

typedef struct dt_transport_ops {
    size_t size;
    /* Connect to the other ranks (through the store). Collective: every
     * rank calls it. Errors name the rank that could not be reached. */
    dt_status_t (*init)(const dt_config_t *cfg, const dt_transport_args_t *a,
                        void **ctx);
    /* Optional: DT_CAP_* bits saying which memory kinds this instance
     * takes. Called once, right after a successful init; the core keeps
     * the answer for the job (and logs it at debug level). NULL or 0:
     * host memory only. */
    uint32_t (*caps)(void *ctx);
    /* Start sending/receiving len bytes to/from peer. Buffers stay owned by
     * the caller and must not be touched until the request completes.
     * Messages between one pair of ranks with the same tag match in order. */
    dt_status_t (*isend)(void *ctx, int peer, const void *buf, size_t len,
                         dt_mem_t mem, int tag, dt_request_t **req);
    dt_status_t (*irecv)(void *ctx, int peer, void *buf, size_t len,
                         dt_mem_t mem, int tag, dt_request_t **req);
    /* Make progress; *done = 1 when req finished (req is then freed).
     * An error (DT_ERR_PEER naming the rank in the log) also frees it. */
    dt_status_t (*test)(void *ctx, dt_request_t *req, int *done);
    /* Block until all n requests finished (and are freed) or timeout_ms
     * passed (DT_ERR_TIMEOUT; requests stay valid). -1: the configured
     * transport timeout. It polls for a bounded time first, yielding the
     * CPU between polls (a [transport.X] spin key through dt/wait.h; "auto"
     * spins only when each rank of the host has a CPU of its own, and 0
     * never), then sleeps in poll()/epoll/event fds until progress or
     * the deadline. It never spins unbounded. */
    dt_status_t (*wait)(void *ctx, dt_request_t **reqs, size_t n,
                        int timeout_ms);
    /* Optional native collectives (NULL: the core's algorithms over
     * isend/irecv). mem is DT_MEM_HOST, or DT_MEM_CUDA (only for a
     * transport whose caps report DT_CAP_CUDA_MEM, today only allreduce);
     * `stream` is the caller's cudaStream_t for CUDA memory (may be NULL:
     * the default stream), else NULL. The call returns when recv holds the
     * result.
     * send == recv means in place, as in MPI (dt.h): allgather finds this
     * rank's block at recv + rank * count_per_rank, reduce_scatter reads
     * its whole input from recv and leaves the result at its start (NCCL's
     * in-place forms). A call the transport does not handle
     * (a memory kind, a job across hosts) returns DT_DECLINED, before
     * touching any buffer or peer: the core then runs its own algorithm.
     * All ranks must decline the same calls. */
    dt_status_t (*allreduce)(void *ctx, const void *send, void *recv,
                             size_t count, dt_dtype_t t, dt_redop_t op,
                             dt_mem_t mem, void *stream);
    dt_status_t (*broadcast)(void *ctx, void *buf, size_t count, dt_dtype_t t,
                             int root, dt_mem_t mem, void *stream);
    dt_status_t (*allgather)(void *ctx, const void *send, void *recv,
                             size_t count_per_rank, dt_dtype_t t,
                             dt_mem_t mem, void *stream);
    dt_status_t (*reduce_scatter)(void *ctx, const void *send, void *recv,
                                  size_t count_per_rank, dt_dtype_t t,
                                  dt_redop_t op, dt_mem_t mem, void *stream);
    dt_status_t (*barrier)(void *ctx);
    /* Close connections, free everything. Outstanding requests are void. */
    void (*fini)(void *ctx);
} dt_transport_ops_t;

/* ======================================================================
 * Storage: put a data set where every worker can read it, and name a
 * directory all ranks share (checkpoints, logs). Runs in dtctl before the
 * workers start; uses the launcher to reach the hosts.
 * ====================================================================== */

/* A way to run a short command on a host (the launcher's run_on_host). */
typedef struct dt_remote {
    void *ctx;
    dt_status_t (*run)(void *ctx, const dt_host_t *host,
                       const char *const *argv, char **output,
                       int *exit_code);
} dt_remote_t;

typedef struct dt_stage_request {
    const char *src;             /* data set on this (dtctl's) host        */
    const dt_hostlist_t *hosts;  /* hosts that run workers                 */
    const dt_remote_t *remote;   /* NULL for a local-only job              */
    const char *job_id;          /* unique per job, for markers            */
    /* Appended: non-zero once dtctl was asked to stop (SIGINT, SIGTERM,
     * SIGHUP, SIGUSR1). A stage that runs long (a copy) checks it about
     * once a second, ends what it started and returns DT_ERR_INTERRUPTED.
     * NULL: no one asks. (dtctl before 2026-11-27 passed the request
     * without it: an out-of-tree plugin that reads it needs a newer
     * dtctl.) */
    int (*stop_requested)(void);
} dt_stage_request_t;

typedef struct dt_storage_ops {
    size_t size;
    dt_status_t (*init)(const dt_config_t *cfg, void **ctx);
    /* Make req->src readable on every host; *worker_path (malloc'd) is the
     * path workers read. Errors name the host and path. */
    dt_status_t (*stage)(void *ctx, const dt_stage_request_t *req,
                         char **worker_path);
    /* Check, without copying, that the data set is in place everywhere. */
    dt_status_t (*verify)(void *ctx, const dt_stage_request_t *req);
    /* A directory every rank sees (checkpoints, logs); NULL entry or
     * DT_ERR_UNSUPPORTED: there is none and rank 0 writes locally. */
    dt_status_t (*shared_dir)(void *ctx, const dt_stage_request_t *req,
                              char **path);
    void (*fini)(void *ctx);
    /* Optional (appended): the path workers read, without copying or
     * checking anything (dtctl run --no-stage). NULL: req->src. */
    dt_status_t (*worker_path)(void *ctx, const dt_stage_request_t *req,
                               char **path);
} dt_storage_ops_t;

/* ======================================================================
 * Optimizer: turn averaged gradients into new parameters. One instance per
 * worker; called from the training thread only.
 * ====================================================================== */

typedef struct dt_optimizer_ops {
    size_t size;
    /* State for nparams float32 parameters on `mem` (host or CUDA). */
    dt_status_t (*create)(const dt_config_t *cfg, size_t nparams,
                          dt_mem_t mem, void **state);
    /* params -= update(grads); step counts from 1. `stream` as for
     * transports. grads are not modified. */
    dt_status_t (*step)(void *state, float *params, const float *grads,
                        float lr, uint64_t step, void *stream);
    /* Serialized state (for checkpoints): size first, then save/load into a
     * caller-owned host buffer of exactly that size. */
    size_t (*state_size)(void *state);
    dt_status_t (*save)(void *state, void *buf, size_t len);
    dt_status_t (*load)(void *state, const void *buf, size_t len);
    void (*destroy)(void *state);
    /* Optional (appended; check with DT_OPS_HAS): where each parameter
     * tensor lies in the flat vector, for per-tensor ("layer-wise")
     * updates such as lars and lamb. The trainer calls it once, right
     * after create, before any step or load, with each layer's weights
     * and bias as separate tensors (dt_model_param_tensors, dt/nn.h);
     * without this op, or when it is never called, the optimizer treats
     * the whole vector as one tensor. offsets[0] = 0 < offsets[1] < ... <
     * offsets[ntensors] = nparams: tensor i is [offsets[i],
     * offsets[i+1]). offsets is host memory owned by the caller (copy
     * what you keep). A wrong table is DT_ERR_INVALID. */
    dt_status_t (*set_tensors)(void *state, const size_t *offsets,
                               size_t ntensors);
    /* Optional (appended; check with DT_OPS_HAS): what each tensor of
     * set_tensors is, kinds[i] a dt_tensor_kind_t (dt/types.h) for
     * tensor i: DT_TENSOR_WEIGHT, DT_TENSOR_BIAS, or DT_TENSOR_NORM for
     * batchnorm's scale and shift (dt_model_param_kinds, dt/nn.h). The
     * trainer calls it right after set_tensors (never without it), before
     * any step or load, with the same ntensors. Without this op, or when
     * it is never called, the optimizer cannot tell the kinds apart and
     * treats every tensor alike. kinds is host memory owned by the caller
     * (copy what you keep). A count other than set_tensors' is
     * DT_ERR_INVALID; a kind the optimizer does not know (kinds may be
     * added) is stepped as a weight. */
    dt_status_t (*set_tensor_kinds)(void *state, const unsigned char *kinds,
                                    size_t ntensors);
} dt_optimizer_ops_t;

#ifdef __cplusplus
}
#endif
#endif /* DT_PLUGIN_H */
