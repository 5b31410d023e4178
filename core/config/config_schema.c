/* config_schema.c — key tables of the core sections. Each row: name, type,
 * default (text in the key's own syntax, NULL = unset), one-line doc.
 * New core keys are new rows here; docs/CONFIG.md and conf/cluster.ini
 * describe the same keys for users. */
#include <stddef.h>

#include "coll/coll.h"
#include "config_schema.h"

static const dt_key_spec_t cluster_keys[] = {
    {"launcher", DT_KEY_STRING, "local",
     "launcher plugin that starts the workers (local, ssh, mpi, slurm, ...)"},
    {"transport", DT_KEY_STRING, "tcp",
     "transport plugin that moves tensors between workers (tcp, ucx, nccl)"},
    {"storage", DT_KEY_STRING, "local",
     "storage plugin that puts the data set on every host (local, rsync, ...)"},
    {"np", DT_KEY_INT, "1", "number of worker processes"},
    {"hosts", DT_KEY_STRING, NULL, "hosts and slots, e.g. h1:2,h2:4"},
    {"hostfile", DT_KEY_STRING, NULL,
     "file listing hosts (host slots=N | host:N | host | ip:port)"},
    {"interface", DT_KEY_LIST, NULL,
     "network interfaces to use: names, CIDR subnets, or ^name to exclude"},
    {"timeout", DT_KEY_DURATION, "60s",
     "how long to wait for a connection or a silent peer"},
    {"kill_grace", DT_KEY_DURATION, "5s",
     "time between SIGTERM and SIGKILL when stopping workers"},
    {"master_port", DT_KEY_INT, NULL,
     "MASTER_PORT for torch-style workers (unset: 29500 across hosts, a "
     "free port for a job on this machine alone)"},
    {"workdir", DT_KEY_STRING, NULL,
     "working directory of the workers (default: the launcher's choice)"},
    {"env_vars", DT_KEY_WORDS, NULL,
     "variables every worker gets besides the job's, for every launcher: "
     "NAME (its value in dtctl's environment) or NAME=VALUE, as sh words; "
     "-x NAME[=VALUE] adds one"},
    {"bind", DT_KEY_STRING, "auto",
     "CPU binding of dt workers: auto (each worker of a host on its own "
     "share of the CPUs it was given; oversubscribed: CPU i mod n; a "
     "launcher's or scheduler's binding is kept), cores (split even then) "
     "or none"},
    {"max_restarts", DT_KEY_INT, "0",
     "dtctl run: restart the job this many times after a worker fails "
     "(the trainer resumes from its newest checkpoint; 0: never)"},
    {"restart_backoff", DT_KEY_DURATION, "2s",
     "wait before the first restart; doubles with each further one (at "
     "most 60s)"},
    {"min_np", DT_KEY_INT, NULL,
     "dtctl run with max_restarts: elastic membership; go on with at least "
     "this many workers when hosts fail or cannot be reached (unset: "
     "always np)"},
    {"max_np", DT_KEY_INT, NULL,
     "dtctl run, elastic: at most this many workers (default np); hosts "
     "that come back rejoin at a restart up to it"},
    {"host_failures", DT_KEY_INT, "2",
     "dtctl run, elastic: a host whose workers were the root failure this "
     "many times is excluded"},
    {"servers", DT_KEY_INT, NULL,
     "[train] mode = async: parameter server processes dtctl starts beside "
     "the workers (default: one per host; 1 to 4096)"},
    {"host_cooldown", DT_KEY_DURATION, "0s",
     "dtctl run, elastic: an excluded host is probed again at a restart "
     "once this long has passed since it was excluded"},
    {"work_load", DT_KEY_STRING, NULL,
     "unequal shares of each global batch: one weight per worker in rank "
     "order (e.g. 1,1,2,2), or auto (rebalanced every epoch from measured "
     "step times); unset: equal shares (or the hostfile's weight=)"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static const dt_key_spec_t train_keys[] = {
    {"seed", DT_KEY_INT, "0", "random seed for initialisation and shuffling"},
    {"epochs", DT_KEY_INT, "1", "passes over the training set"},
    {"batch_size", DT_KEY_INT, "64", "samples per step on each worker"},
    {"lr", DT_KEY_DOUBLE, "0.01", "learning rate"},
    {"optimizer", DT_KEY_STRING, "sgd", "optimizer plugin (sgd, adam, adamw, lars, lamb, ...)"},
    {"device", DT_KEY_STRING, "auto", "where to compute: auto, cpu or cuda"},
    {"threads", DT_KEY_INT, "1", "CPU threads per worker"},
    {"lr_scaling", DT_KEY_STRING, "none",
     "scale lr with the number of workers: linear (x N), sqrt (x sqrt N) "
     "or none"},
    {"lr_scaling_max_batch", DT_KEY_INT, "0",
     "global batch beyond which lr_scaling stops growing: workers count "
     "as at most this / batch_size (0: no cap)"},
    {"lr_scaling_max_lr", DT_KEY_DOUBLE, "0",
     "the largest lr scaling may give (0: no cap)"},
    {"warmup_epochs", DT_KEY_STRING, "auto",
     "epochs (may be fractional) of linear warmup from lr/workers up to the "
     "scaled lr; auto: log2 of the scaling factor, at most epochs/4"},
    {"warmup_steps", DT_KEY_INT, "0",
     "warmup in optimizer steps instead (0: warmup_epochs decides)"},
    {"schedule", DT_KEY_STRING, "constant",
     "learning rate schedule after warmup: constant, step or cosine"},
    {"lr_step_epochs", DT_KEY_INT, "10",
     "step schedule: multiply lr by lr_gamma every this many epochs"},
    {"lr_gamma", DT_KEY_DOUBLE, "0.1", "step schedule: the factor"},
    {"lr_min", DT_KEY_DOUBLE, "0", "cosine schedule: the final lr"},
    {"clip_grad_norm", DT_KEY_DOUBLE, "0",
     "scale the averaged gradient down to this global L2 norm when it is "
     "larger (0: off)"},
    {"clip_grad_value", DT_KEY_DOUBLE, "0",
     "clamp each averaged gradient value to [-X, X] (0: off)"},
    {"precision", DT_KEY_STRING, "fp32",
     "fp32, tf32, bf16 or fp16: tf32/bf16/fp16 compute on a GPU's tensor "
     "cores with TF32/16-bit inputs; parameters, gradients and optimizer "
     "state stay float32 (cuda)"},
    {"activations", DT_KEY_STRING, "auto",
     "auto, float32 or bf16: how a GPU stores the activations backward "
     "keeps; bf16 halves their memory (layers compute in float32 from "
     "widened copies); auto: bf16 with precision = bf16 on a GPU, else "
     "float32"},
    {"cudnn_benchmark", DT_KEY_BOOL, "no",
     "cuda: pick each convolution's algorithms by timing cuDNN's "
     "candidates once per shape (the fastest within the workspace limit, "
     "deterministic or not), as PyTorch's cudnn.benchmark; no: cuDNN's "
     "heuristics, deterministic algorithms preferred"},
    {"cuda_graphs", DT_KEY_STRING, "auto",
     "auto, on or off: a GPU's training step captured once as a CUDA "
     "graph and replayed by one launch; auto: kept when whole steps "
     "(the gradient sync included) time faster than eager ones"},
    {"loss_scale", DT_KEY_STRING, NULL,
     "none, dynamic or a power of two: backward on S x the loss, "
     "gradients divided by S, overflowing steps skipped (default: dynamic "
     "with precision = fp16, else none)"},
    {"loss_scale_init", DT_KEY_DOUBLE, "65536",
     "dynamic loss scaling: the first S (a power of two)"},
    {"loss_scale_growth_interval", DT_KEY_INT, "2000",
     "dynamic loss scaling: double S after this many finite steps in a row "
     "(it halves on each overflow)"},
    {"label_smoothing", DT_KEY_DOUBLE, "0",
     "label smoothing of the cross-entropy loss, in [0, 1): the target is "
     "(1 - x) onehot + x / classes"},
    {"on_divergence", DT_KEY_STRING, "stop",
     "when the loss is not finite: stop, or halve_lr (back to the last "
     "checkpoint with half the lr, at most 3 times)"},
    {"bucket", DT_KEY_SIZE, "25M",
     "gradient allreduce bucket size (bytes of float32 gradients)"},
    {"layer_times", DT_KEY_STRING, NULL,
     "rank 0 times steps 3-7 layer by layer on its device and writes them "
     "here, for dtctl plan --layer-times (unset: off)"},
    {"checkpoint_dir", DT_KEY_STRING, NULL,
     "directory for checkpoints (rank 0 writes; unset: none)"},
    {"checkpoint_every", DT_KEY_STRING, "1 epoch",
     "how often to checkpoint: N epochs or N steps (\"2 epochs\", "
     "\"500 steps\")"},
    {"checkpoint_keep", DT_KEY_INT, "3",
     "newest checkpoints to keep (0: keep all)"},
    {"checkpoint_steps", DT_KEY_INT, "0",
     "also checkpoint every N optimizer steps (0: off)"},
    {"checkpoint_interval", DT_KEY_DURATION, "0",
     "also checkpoint when this much wall time passed since the last one, "
     "e.g. 10min (rank 0's clock decides for all; 0: off)"},
    {"checkpoint_best", DT_KEY_BOOL, "no",
     "also keep the checkpoint of the best test accuracy (best.dtckpt)"},
    {"log_dir", DT_KEY_STRING, NULL,
     "directory for TensorBoard event files (unset: none)"},
    {"metrics", DT_KEY_STRING, NULL,
     "JSONL file, one line per epoch (dtctl run --metrics FILE)"},
    {"mode", DT_KEY_STRING, "sync",
     "sync (gradients averaged by allreduce every step) or async "
     "(parameter servers apply each worker's gradient as it arrives)"},
    {"max_staleness", DT_KEY_INT, "0",
     "async: a worker more than this many pushes ahead of the slowest "
     "waits (0: unbounded; 0 is not sync)"},
    {"push_overlap", DT_KEY_BOOL, "no",
     "async: send a step's gradients and receive the fresh parameters "
     "while the next step computes (on parameters one push older: faster "
     "steps, staler gradients)"},
    {"max_steps", DT_KEY_INT, "0",
     "stop after this many optimizer steps (0: run all epochs)"},
    {"resume", DT_KEY_BOOL, "no",
     "continue from the newest valid checkpoint (dtctl run --resume)"},
    {"eval_steps", DT_KEY_INT, "0",
     "also evaluate on the test set every N optimizer steps, inside "
     "epochs (0: at each epoch's end only); reported, not used for the "
     "best checkpoint"},
    {"log_every", DT_KEY_INT, "100",
     "progress line every N steps when output is not a terminal (0: "
     "none)"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static const dt_key_spec_t model_keys[] = {
    {"layers", DT_KEY_STRING, NULL, "the network's layers, in order"},
    {"conv_algo", DT_KEY_STRING, "auto",
     "how the CPU computes convolutions: auto (Winograd F(4x4,3x3) for 3x3 "
     "stride-1 layers with at least 8 input channels, F(2x2,3x3) where a "
     "2x2 max pool is fused, im2col + GEMM for the rest), im2col, winograd "
     "(F(2x2,3x3) for every 3x3 stride-1 layer) or winograd4 (F(4x4,3x3) "
     "for every one)"},
    {"layout", DT_KEY_STRING, "auto",
     "how the CPU lays out activations between layers: auto (channels "
     "innermost, NHWC, when every layer can: conv, batchnorm, relu, add, "
     "gap, flatten, linear; NCHW otherwise), nchw or nhwc"},
    {"sync_bn", DT_KEY_BOOL, "no",
     "batchnorm statistics over the global batch of all workers (an "
     "allreduce per batchnorm layer in forward and in backward); no: each "
     "worker's own batch, as PyTorch DDP"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static const dt_key_spec_t data_keys[] = {
    {"path", DT_KEY_STRING, NULL, "directory holding the data set files"},
    {"dataset", DT_KEY_STRING, "fashion-mnist",
     "which data set: fashion-mnist, mnist, cifar10, cifar100, stl10 or "
     "folder (path/train/<class>/*.png|jpg, path/test/<class>/...)"},
    {"cifar100_labels", DT_KEY_STRING, "fine",
     "cifar100: fine (100 classes) or coarse (20 superclasses)"},
    {"image_size", DT_KEY_STRING, NULL,
     "folder: every image is center-cropped to this aspect ratio and "
     "resized (antialiased bilinear) to N x N or HxW pixels"},
    {"channels", DT_KEY_INT, NULL,
     "folder: 1 (grayscale) or 3 (RGB, the default); images are converted"},
    {"bad_images", DT_KEY_STRING, "error",
     "folder: an unreadable or corrupt image is an error, or skip: left out "
     "with a warning naming it"},
    {"decode", DT_KEY_STRING, "load",
     "folder: load (decode every image at start, keep the bytes in memory) "
     "or loader (decode each image when a batch needs it, in the loader "
     "threads: a folder larger than memory, a fast start)"},
    {"mean", DT_KEY_LIST, "0",
     "normalization: x = (pixel/255 - mean) / std; one value or one per "
     "channel"},
    {"std", DT_KEY_LIST, "1", "normalization divisor(s), each > 0"},
    {"train_samples", DT_KEY_INT, "0",
     "use only the first N training samples (0: all; a folder: N spread "
     "over its classes)"},
    {"test_samples", DT_KEY_INT, "0",
     "use only the first N test samples (0: all; a folder: spread too)"},
    {"loader_threads", DT_KEY_INT, "1",
     "threads preparing the next training batches while the step computes "
     "(0: gather inside the step)"},
    {"prefetch", DT_KEY_INT, "2",
     "training batches prepared ahead of the step (1-64)"},
    {"random_crop", DT_KEY_INT, "0",
     "augmentation: pad training images by P zero pixels, crop back to the "
     "original size at a random offset (0: off)"},
    {"hflip", DT_KEY_BOOL, "no",
     "augmentation: flip training images left-right at random (off for "
     "digits)"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static const dt_core_schema_t core_schemas[] = {
    {"cluster", cluster_keys},
    {"train", train_keys},
    {"model", model_keys},
    {"data", data_keys},
    {"collectives", dt_coll_keys},
    {NULL, NULL}};

const dt_core_schema_t *dt_config_core_schemas(void) { return core_schemas; }
