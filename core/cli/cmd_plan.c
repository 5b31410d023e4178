/* cmd_plan.c — `dtctl plan`: predict a job's step time, throughput and
 * scaling efficiency on N = 1..max workers of a cluster we do not have
 * (docs/PLAN.md). dtctl measures the model here (forward, and backward
 * between consecutive gradient-ready callbacks: the order and sizes
 * grad_sync sees), takes the transport costs from a profile fitted from
 * `dtctl bench allreduce` (`dtctl plan --measure`), writes a spec and runs
 * dt-plan-sim, which simulates the step in SimGrid (C++, built only when
 * configure found libsimgrid-dev: libdt stays C). This file: the
 * options, the spec and the run; the model's profile, the transports'
 * and the --plot/--sweep runs are in plan_model_prof.c, plan_profile.c
 * and plan_runs.c (plan_cli.h). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "cli.h"
#include "plan/plan_model.h"
#include "plan_cli.h"
#include "run_trainer.h"
#include "temp_files.h"

#define SIM "dt-plan-sim"
#define INSTALL_HINT                                                        \
    "dtctl plan simulates with SimGrid, which this build of dt lacks: "    \
    "install it (Debian/Ubuntu: apt-get install libsimgrid-dev; "          \
    "./bootstrap.sh deps does), then configure and build dt again "        \
    "(./bootstrap.sh build)"

typedef struct {
    const char *job, *platform, *profile, *layer_times, *spec_out, *input;
    const char *plot;
    const char *save_layers, *fit, *colocation, *save_colocation;
    const char *net_transport, *intra_transport;
    const char *baseline, *compression, *hierarchy, *topology;
    int hosts, gpus, max_workers, measure, batch, sweep, model_layers;
    double net_bw, net_lat, intra_bw, intra_lat, compute_scale, data_wait;
    int data_wait_given; /* --data-wait: the input pipeline not measured */
    const char *link_opt; /* --network, --latency, --intra or
                           * --intra-latency as given: not with --platform */
    double model_params, sps, device_flops, device_bw, device_launch;
    uint64_t bucket;
} plan_args_t;

/* The usage to out: stdout for --help (exit 0), stderr after a mistake
 * (exit 2). */
static int usage_to(FILE *out, int code)
{
    fputs("usage: dtctl plan [JOB.ini] --hosts H [--gpus-per-host G] "
          "--network RATE\n"
          "                  [--latency 5us] [--intra RATE] "
          "[--intra-latency 1us] [--platform FILE.xml]\n"
          "                  [--topology switch|fat-tree:L[:R]|"
          "fat-tree:LEVELS;DOWN;UP;COUNT]\n"
          "                  [--profile FILE] [--bucket SIZE] "
          "[--max-workers N] [--layer-times FILE]\n"
          "                  [--compute-scale X] [--data-wait T] "
          "[--input C,H,W,CLASSES] [--spec FILE]\n"
          "                  [--save-layers FILE] [--sweep]\n"
          "                  [--model-params N [--model-layers L]] "
          "[--samples-per-sec X] [--batch B]\n"
          "                  [--baseline horovod] [--compression "
          "none|bf16|fp16] [--hierarchy on|off]\n"
          "                  [--plot FILE.png|FILE.svg] [--device-flops "
          "RATE [--device-bandwidth RATE] [--device-launch T]]\n"
          "                  [--colocation measure|FILE] "
          "[--save-colocation FILE] [--net-transport NAME]\n"
          "       (JOB.ini may be left out with --model-params or "
          "--layer-times)\n"
          "       dtctl plan --measure [--profile FILE]\n"
          "       dtctl plan --fit NAME N:BENCH_OUTPUT...  (prints a "
          "[transport.NAME] section)\n"
          "       dtctl plan JOB.ini --save-layers FILE  (only measure "
          "the model; plan elsewhere)\n"
          "RATE: 25Gbit, 100Gbit, 12GB/s. See docs/PLAN.md.\n",
          out);
    return code;
}

static int usage(void) { return usage_to(stderr, 2); }

/* hier_min: dt's default ([collectives] hier_min), and "never". */
#define HIER_DEFAULT (512ULL * 1024)
#define HIER_OFF 4000000000000000000ULL

/* Most workers a plan simulates (plan_model.h): the time grows as N^2. */
#define MAX_WORKERS DT_PLAN_WORKERS_MAX

/* A per-worker batch: --batch, a job's batch_size. */
#define MAX_BATCH (1 << 24)

/* An integer option in [lo, hi]: 0, or -1 having said which and why. */
static int int_opt(const char *name, const char *v, long lo, long hi,
                   const char *what, int *out)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        dt_error("plan: --%s %s: %s, %ld to %ld", name, v, what, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* --input C,H,W,CLASSES: four positive integers, nothing else. */
static int parse_input(const char *v)
{
    int d[4], n = 0;
    if (sscanf(v, "%d,%d,%d,%d%n", &d[0], &d[1], &d[2], &d[3], &n) != 4 ||
        v[n] || d[0] < 1 || d[0] > 4096 || d[1] < 1 || d[1] > 65536 ||
        d[2] < 1 || d[2] > 65536 || d[3] < 2 || d[3] > 1000000) {
        dt_error("plan: --input %s: channels,height,width,classes of one "
                 "sample, e.g. 3,32,32,10 (positive; at least 2 classes)",
                 v);
        return -1;
    }
    return 0;
}

/* "150T", "1.5e14", "312 TFLOP/s": FLOP/s. */
static int parse_flops(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || !(v > 0) || !isfinite(v))
        return -1;
    while (*end == ' ')
        end++;
    static const char units[] = "KMGTP";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u) {
        for (const char *k = units; k <= u; k++)
            v *= 1e3;
        end++;
    }
    if (*end && strcasecmp(end, "FLOP/s") && strcasecmp(end, "FLOPS") &&
        strcasecmp(end, "FLOP"))
        return -1;
    *out = v;
    return 0;
}

/* The job's [model] layers parsed once up front with their file:line (the
 * model's later parses, for timing and --colocation's copies, name no
 * file). 0: fine, or no layers to check. */
static int check_layers(const dt_config_t *cfg, const char *layers,
                        const char *input, int *launches)
{
    if (!layers || !*layers)
        return 0;
    int d[4];
    const char *where = "[model] layers";
    dt_config_origin(cfg, "model", "layers", NULL, &where);
    dt_model_t *m = NULL;
    if (plan_input_dims(cfg, input, d) != 0 ||
        dt_model_parse(layers, where, d[0], d[1], d[2], d[3], &m, NULL) !=
            DT_OK)
        return -1;
    *launches = plan_model_launches(m);
    dt_model_free(m);
    return 0;
}

/* --platform: a regular file that can be read (SimGrid, given a
 * directory, says only "input in flex scanner failed"). */
static int check_platform(const char *path)
{
    struct stat st;
    FILE *f = fopen(path, "r");
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        dt_error("plan: --platform %s: %s: give a SimGrid platform XML "
                 "file", path, !f ? strerror(errno) : "not a regular file");
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

/* The job's [train] batch_size (no --batch), checked here with its
 * file:line: the model's run would only say it cannot run, and the
 * simulator would name its temporary spec. */
static int check_job_batch(const dt_config_t *cfg, long long batch)
{
    if (batch >= 1 && batch <= MAX_BATCH)
        return 0;
    const char *where = "[train] batch_size";
    dt_config_origin(cfg, "train", "batch_size", NULL, &where);
    dt_error("plan: %s: [train] batch_size = %lld: the per-worker batch, 1 "
             "to %d (or give --batch B)", where, batch, MAX_BATCH);
    return -1;
}

/* One worker's compute as the spec will hold it (the model's times x the
 * scale): within DT_PLAN_SECONDS_MAX, else the simulated clock overflows
 * (--samples-per-sec 1e-300, a layer-times file's 1e300 s). */
/* A plan that stops with an error: its model's layer times and the
 * colocation samples freed (every early exit leaked them). 1. */
static int plan_fail(model_prof_t *mp, coloc_t *coloc)
{
    plan_colocation_free(coloc);
    free(mp->bwd);
    free(mp->bytes);
    mp->bwd = mp->bytes = NULL;
    return 1;
}

static int check_compute(const model_prof_t *mp, const plan_args_t *a)
{
    double tot = mp->forward + mp->optimizer;
    for (size_t i = 0; i < mp->n; i++)
        tot += mp->bwd[i];
    double step = tot * a->compute_scale;
    if (isfinite(step) && step <= DT_PLAN_SECONDS_MAX)
        return 0;
    const char *by = a->sps > 0            ? "--samples-per-sec"
                     : a->device_flops > 0 ? "--device-flops"
                                           : "--compute-scale or --batch";
    dt_error("plan: one worker's step would compute for %g s (the model's "
             "%g s from %s, x %g set by %s): at most %g s; check them",
             step, tot, a->layer_times ? a->layer_times
                        : a->model_params > 0 ? "--model-params"
                                              : "the job's layers",
             a->compute_scale, by, DT_PLAN_SECONDS_MAX);
    return -1;
}

/* --device-launch T: the host's launches against the GPU's work (times
 * of mp x --compute-scale): a launch-bound step is the host's, not the
 * GPU's (plan_launch_bound). */
static int launch_bound(model_prof_t *mp, const plan_args_t *a,
                        int launches)
{
    if (launches < 1)
        return -1;
    double gpu = mp->forward + mp->optimizer;
    for (size_t i = 0; i < mp->n; i++)
        gpu += mp->bwd[i];
    gpu *= a->compute_scale;
    double k = plan_launch_bound(mp, launches,
                                 a->device_launch / a->compute_scale);
    dt_info("plan: --device-launch %.4g us: %d layer launches a step, %.3f "
            "ms of the host's against %.3f ms of the GPU's: %s",
            a->device_launch * 1e6, launches,
            launches * a->device_launch * 1e3, gpu * 1e3,
            k > 1 ? "launch-bound, every layer's time scaled to the host's"
                  : "the GPU sets the pace");
    return 0;
}

/* --colocation measure|FILE: the step times of co-located copies of the
 * model (plan_colocation.c), measured here for the plan's workers per
 * host (saved with --save-colocation) or read from a file. */
static int load_colocation(const plan_args_t *a, const dt_config_t *cfg,
                           const char *layers, int batch, coloc_t *c)
{
    if (strcmp(a->colocation, "measure"))
        return plan_colocation_read(a->colocation, c);
    int d[4], ks[64], nk = plan_colocation_ks(a->gpus, a->max_workers, ks);
    if (ks[nk - 1] > 256 || a->gpus > 256) {
        dt_error("plan: --colocation measure: %d workers per host is more "
                 "copies than it runs here (at most 256)", a->gpus);
        return -1;
    }
    if (!layers || !*layers) {
        dt_error("plan: --colocation measure: %s has no [model] layers",
                 a->job);
        return -1;
    }
    if (plan_input_dims(cfg, a->input, d) != 0 ||
        plan_colocation_measure(layers, d, batch, ks, nk, c) != 0)
        return -1;
    return a->save_colocation ? plan_colocation_write(a->save_colocation, c)
                              : 0;
}

/* ---- dtctl plan ----------------------------------------------------- */

int dt_cmd_plan(int argc, char **argv)
{
    plan_args_t a = {.gpus = 1, .net_lat = 5e-6, .intra_lat = 1e-6,
                     .compute_scale = 1, .profile = "dt-plan-profile.ini",
                     .net_transport = "tcp", .intra_transport = "shm"};
    static const struct option opts[] = {
        {"hosts", 1, 0, 'H'},         {"gpus-per-host", 1, 0, 'G'},
        {"network", 1, 0, 'N'},       {"latency", 1, 0, 'L'},
        {"intra", 1, 0, 'I'},         {"intra-latency", 1, 0, 'J'},
        {"platform", 1, 0, 'P'},      {"profile", 1, 0, 'p'},
        {"bucket", 1, 0, 'B'},        {"max-workers", 1, 0, 'M'},
        {"layer-times", 1, 0, 'T'},   {"compute-scale", 1, 0, 'S'},
        {"data-wait", 1, 0, 'D'},     {"input", 1, 0, 'i'},
        {"spec", 1, 0, 'o'},          {"save-layers", 1, 0, 'W'},
        {"fit", 1, 0, 'F'},           {"sweep", 0, 0, 'w'},
        {"net-transport", 1, 0, 'X'}, {"measure", 0, 0, 'm'},
        {"model-params", 1, 0, 'a'},  {"model-layers", 1, 0, 'l'},
        {"samples-per-sec", 1, 0, 'x'}, {"batch", 1, 0, 'b'},
        {"baseline", 1, 0, 'z'},      {"compression", 1, 0, 'c'},
        {"hierarchy", 1, 0, 'y'},     {"plot", 1, 0, 'g'},
        {"device-flops", 1, 0, 'f'}, {"topology", 1, 0, 't'},
        {"device-bandwidth", 1, 0, 'e'}, {"device-launch", 1, 0, 'Q'},
        {"colocation", 1, 0, 'k'},    {"save-colocation", 1, 0, 'K'},
        {"help", 0, 0, 'h'},          {0, 0, 0, 0}};
    int c, li = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'a':
            if (dt_plan_parse_count(optarg, &a.model_params)) {
                dt_error("plan: --model-params %s: a parameter count like "
                         "138357544 or 44.7M, 1 to %g", optarg,
                         DT_PLAN_PARAMS_MAX);
                return 2;
            }
            break;
        case 'l':
            if (int_opt("model-layers", optarg, 1, 100000,
                        "gradient events", &a.model_layers))
                return 2;
            break;
        case 'x':
            a.sps = strtod(optarg, &end);
            if (*end || !(a.sps > 0) || !isfinite(a.sps)) {
                dt_error("plan: --samples-per-sec %s: one GPU's positive "
                         "training throughput, e.g. 142", optarg);
                return 2;
            }
            break;
        case 'b':
            if (int_opt("batch", optarg, 1, MAX_BATCH, "the per-worker batch",
                        &a.batch))
                return 2;
            break;
        case 'z':
            if (strcmp(optarg, "horovod") && strcmp(optarg, "dt")) {
                dt_error("plan: --baseline %s: horovod (ring of fused "
                         "64 MB buffers every 5 ms, no hierarchy) or dt",
                         optarg);
                return 2;
            }
            a.baseline = optarg;
            break;
        case 'c':
            if (strcmp(optarg, "none") && strcmp(optarg, "bf16") &&
                strcmp(optarg, "fp16")) {
                dt_error("plan: --compression %s: none, bf16 or fp16",
                         optarg);
                return 2;
            }
            a.compression = optarg;
            break;
        case 'y':
            if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
                dt_error("plan: --hierarchy %s: on or off", optarg);
                return 2;
            }
            a.hierarchy = optarg;
            break;
        case 'H':
            if (int_opt("hosts", optarg, 1, MAX_WORKERS, "hosts", &a.hosts))
                return 2;
            break;
        case 'G':
            if (int_opt("gpus-per-host", optarg, 1, 1024, "workers a host",
                        &a.gpus))
                return 2;
            break;
        case 'M':
            if (int_opt("max-workers", optarg, 1, MAX_WORKERS,
                        "workers to plan up to", &a.max_workers))
                return 2;
            break;
        case 'N':
            if (dt_plan_parse_rate(optarg, &a.net_bw)) {
                dt_error("plan: --network %s: a rate like 25Gbit, 100Gbit "
                         "or 12GB/s, " DT_PLAN_RATE_RANGE, optarg);
                return 2;
            }
            break;
        case 'I':
            if (dt_plan_parse_rate(optarg, &a.intra_bw)) {
                dt_error("plan: --intra %s: a rate like 100Gbit or 50GB/s, "
                         DT_PLAN_RATE_RANGE, optarg);
                return 2;
            }
            break;
        case 'L':
        case 'J':
        case 'Q':
        case 'D': {
            double *d = c == 'L'   ? &a.net_lat
                        : c == 'J' ? &a.intra_lat
                        : c == 'Q' ? &a.device_launch
                                   : &a.data_wait;
            a.data_wait_given |= c == 'D';
            /* a latency within a second (a satellite link's); a wait
             * that keeps the simulated clock finite */
            double most = c == 'D' ? DT_PLAN_SECONDS_MAX
                                   : DT_PLAN_LATENCY_MAX;
            if (dt_parse_duration(optarg, d) != DT_OK || *d > most) {
                dt_error("plan: --%s %s: a duration like 5us, 500ns or 2ms, "
                         "at most %gs", opts[li].name, optarg, most);
                return 2;
            }
            break;
        }
        case 'P': a.platform = optarg; break;
        case 'e':
            if (dt_plan_parse_rate(optarg, &a.device_bw)) {
                dt_error("plan: --device-bandwidth %s: the memory bandwidth "
                         "one worker achieves, e.g. 2.5TB/s, "
                         DT_PLAN_RATE_RANGE, optarg);
                return 2;
            }
            break;
        case 't':
            if (!strcmp(optarg, "switch")) {
                a.topology = NULL;
            } else if (!strncmp(optarg, "fat-tree:", 9) && optarg[9]) {
                a.topology = optarg; /* the simulator checks the rest */
            } else {
                dt_error("plan: --topology %s: switch (every host on one "
                         "switch, the default), fat-tree:L[:R] (leaf "
                         "switches of L hosts, R:1 oversubscribed) or "
                         "fat-tree:LEVELS;DOWN;UP;COUNT (SimGrid's form)",
                         optarg);
                return 2;
            }
            break;
        case 'p': a.profile = optarg; break;
        case 'B':
            if (dt_parse_size(optarg, &a.bucket) != DT_OK || !a.bucket) {
                dt_error("plan: --bucket %s: a size like 25M", optarg);
                return 2;
            }
            break;
        case 'T': a.layer_times = optarg; break;
        case 'S':
            a.compute_scale = strtod(optarg, &end);
            if (!*end && (!(a.compute_scale > 0) ||
                          !isfinite(a.compute_scale))) {
                dt_error("plan: --compute-scale %s: a positive factor on "
                         "the measured compute, e.g. 0.25", optarg);
                return 2;
            }
            break;
        case 'i':
            if (parse_input(optarg))
                return 2;
            a.input = optarg;
            break;
        case 'o': a.spec_out = optarg; break;
        case 'W': a.save_layers = optarg; break;
        case 'F': a.fit = optarg; break;
        case 'X': a.net_transport = optarg; break;
        case 'm': a.measure = 1; break;
        case 'w': a.sweep = 1; break;
        case 'g': a.plot = optarg; break;
        case 'h':
            usage_to(stdout, 0);
            return dt_cli_flush_stdout("plan --help");
        case 'k': a.colocation = optarg; break;
        case 'K': a.save_colocation = optarg; break;
        case 'f':
            if (parse_flops(optarg, &a.device_flops)) {
                dt_error("plan: --device-flops %s: one worker's achieved "
                         "rate, e.g. 150T or 1.5e14 (FLOP/s)", optarg);
                return 2;
            }
            break;
        default: return usage();
        }
        if (c == 'N' || c == 'I' || c == 'L' || c == 'J')
            a.link_opt = opts[li].name;
        if (end && *end) {
            dt_error("plan: --%s %s: not a number", opts[li].name, optarg);
            return 2;
        }
    }
    if (a.measure)
        return optind == argc ? plan_measure_profile(a.profile) : usage();
    if (a.fit)
        return plan_fit_files(a.fit, argc - optind, argv + optind);
    if (optind == argc && (a.model_params > 0 || a.layer_times)) {
        a.job = NULL; /* the model is given: dt's defaults for the rest */
    } else if (optind == argc) { /* options alone: say what is missing */
        dt_error("plan: no model to plan: give JOB.ini, --model-params N "
                 "with --samples-per-sec X, or --layer-times FILE "
                 "(dtctl plan --help)");
        return 2;
    } else if (optind != argc - 1) {
        dt_error("plan: one JOB.ini, not '%s' and '%s' (an option's value "
                 "without its --name?)", argv[optind], argv[optind + 1]);
        return 2;
    } else {
        a.job = argv[optind];
    }
    if (a.model_params > 0 && a.layer_times) {
        dt_error("plan: --model-params and --layer-times both give the "
                 "model: one of them");
        return 2;
    }
    if (a.device_flops > 0 && (a.model_params > 0 || a.layer_times)) {
        dt_error("plan: --device-flops counts the FLOPs of a job file's "
                 "[model] layers; with --model-params or --layer-times "
                 "give --samples-per-sec instead");
        return 2;
    }
    if (a.model_params > 0 && !(a.sps > 0)) {
        dt_error("plan: --model-params needs --samples-per-sec (one GPU's "
                 "training throughput at the batch)");
        return 2;
    }
    if (a.model_params > 0 &&
        a.model_params < (a.model_layers ? a.model_layers : 50)) {
        dt_error("plan: --model-params %.0f: fewer parameters than the %d "
                 "layers they are split into (--model-layers)",
                 a.model_params, a.model_layers ? a.model_layers : 50);
        return 2;
    }
    if (a.model_layers && !(a.model_params > 0)) {
        dt_error("plan: --model-layers goes with --model-params");
        return 2;
    }
    if (a.save_colocation &&
        !(a.colocation && !strcmp(a.colocation, "measure"))) {
        dt_error("plan: --save-colocation FILE writes what --colocation "
                 "measure measured: give both");
        return 2;
    }
    if (a.colocation &&
        (a.model_params > 0 || a.sps > 0 || a.device_flops > 0 ||
         (!a.job && !strcmp(a.colocation, "measure")))) {
        dt_error("plan: --colocation is how co-located CPU workers slow "
                 "each other, measured with the job's [model] layers: it "
                 "needs JOB.ini for 'measure', and goes with neither "
                 "--model-params, --samples-per-sec nor --device-flops (a "
                 "GPU's compute is not shared like that)");
        return 2;
    }
    if (a.sweep && a.baseline && !strcmp(a.baseline, "horovod")) {
        dt_error("plan: --sweep varies dt's buckets and hierarchy, not "
                 "Horovod's fusion: leave out --baseline horovod");
        return 2;
    }
    if (a.device_launch > 0 && !(a.device_flops > 0)) {
        dt_error("plan: --device-launch goes with --device-flops (a GPU "
                 "the plan computes for; measured times have their launches "
                 "in them)");
        return 2;
    }
    if (a.device_bw > 0 && !(a.device_flops > 0)) {
        dt_error("plan: --device-bandwidth goes with --device-flops (the "
                 "two sides of each layer's roofline)");
        return 2;
    }
    if (a.device_flops > 0 && (a.sps > 0 || a.compute_scale != 1)) {
        dt_error("plan: --device-flops, --samples-per-sec and "
                 "--compute-scale each set the compute: one of them");
        return 2;
    }
    if (a.sps > 0 && a.compute_scale != 1) {
        dt_error("plan: --samples-per-sec and --compute-scale both set the "
                 "compute: one of them");
        return 2;
    }

    /* --save-layers with no platform: measure the model here and stop,
     * to plan elsewhere (a GPU or cluster node without SimGrid). */
    /* --save-layers / --save-colocation with no cluster to plan: measure
     * here and stop (a host without SimGrid measures, another plans) */
    int layers_only = (a.save_layers || a.save_colocation) && a.hosts == 0 &&
                      !a.platform && !(a.net_bw > 0);
    char sim[4200];
    dt_cli_worker_program("core", SIM, sim, sizeof sim);
    if (!layers_only && access(sim, X_OK) != 0) {
        /* Without SimGrid configure builds no dt-plan-sim; with it, a
         * missing one is an unfinished build or install. */
        dt_error("plan: the simulator %s is missing. " INSTALL_HINT, sim);
        return 1;
    }
    if (layers_only) { /* --colocation's k: up to --gpus-per-host */
        a.hosts = 1;
        if (!a.save_colocation || !a.max_workers)
            a.max_workers = a.save_colocation ? a.gpus : 1;
    }
    if (a.hosts < 1) { /* never given: the range is checked with it */
        dt_error("plan: --hosts H is needed: the hosts to plan up to (with "
                 "--platform, its first H x --gpus-per-host hosts by name "
                 "are the workers)");
        return 2;
    }
    if ((long long)a.hosts * a.gpus > MAX_WORKERS) {
        dt_error("plan: --hosts %d x --gpus-per-host %d = %lld workers: at "
                 "most %d (every worker's flows are simulated, the time "
                 "growing as N^2: " DT_PLAN_WORKERS_TIME ")", a.hosts, a.gpus,
                 (long long)a.hosts * a.gpus, MAX_WORKERS);
        return 2;
    }
    int no_network = !a.platform && a.hosts == 1 && !(a.net_bw > 0);
    if (no_network)
        a.net_bw = 1e12; /* one host: no network on any path */
    if (!a.platform && !(a.net_bw > 0)) {
        dt_error("plan: --network RATE (e.g. 25Gbit) or --platform FILE.xml "
                 "is needed");
        return 2;
    }
    if (a.platform && check_platform(a.platform) != 0)
        return 2;
    if (a.platform && (a.topology || a.link_opt)) {
        /* the file's links and routes are the network: an option beside
         * it would be silently ignored */
        dt_error("plan: --platform %s describes the network itself (its "
                 "links' rates and latencies): leave out --%s", a.platform,
                 a.topology ? "topology" : a.link_opt);
        return 2;
    }
    if (a.max_workers == 0)
        a.max_workers = a.hosts * a.gpus;
    if (a.max_workers < 1 || a.max_workers > a.hosts * a.gpus) {
        dt_error("plan: --max-workers %d: the platform has %d x %d = %d "
                 "GPUs", a.max_workers, a.hosts, a.gpus, a.hosts * a.gpus);
        return 2;
    }
    if (!(a.compute_scale > 0)) {
        dt_error("plan: --compute-scale must be positive");
        return 2;
    }

    dt_config_t *cfg = NULL;
    if (dt_config_new(&cfg) != DT_OK ||
        (a.job && dt_config_load_file(cfg, a.job, DT_SRC_JOB_FILE) != DT_OK)) {
        dt_config_free(cfg);
        return 1;
    }
    uint64_t bucket = 0, small = 0, ring = 0, hier = 0;
    long long batch = 64;
    const char *layers = dt_config_get(cfg, "model", "layers");
    int launches = 0; /* layer passes a step launches (--device-launch) */
    if (!(a.model_params > 0) && !a.layer_times &&
        check_layers(cfg, layers, a.input, &launches) != 0) {
        dt_config_free(cfg);
        return 1;
    }
    const char *mode = dt_config_get(cfg, "train", "mode");
    if (mode && !strcmp(mode, "async"))
        dt_warn("plan: %s trains with [train] mode = async (parameter "
                "servers); the plan simulates synchronous data-parallel "
                "steps (allreduce), not the servers' traffic", a.job);
    if (dt_config_get_size(cfg, "train", "bucket", &bucket) != DT_OK ||
        dt_config_get_int(cfg, "train", "batch_size", &batch) != DT_OK ||
        dt_config_get_size(cfg, "collectives", "allreduce_small", &small) !=
            DT_OK ||
        dt_config_get_size(cfg, "collectives", "allreduce_ring", &ring) !=
            DT_OK ||
        dt_config_get_size(cfg, "collectives", "hier_min", &hier) != DT_OK) {
        dt_config_free(cfg);
        return 1;
    }
    if (a.bucket)
        bucket = a.bucket;
    if (a.batch)
        batch = a.batch;
    else if (check_job_batch(cfg, batch) != 0) {
        dt_config_free(cfg);
        return 1;
    }
    int horovod = a.baseline && !strcmp(a.baseline, "horovod");
    /* The hierarchy as dt would run it: the job's hier_min; --hierarchy
     * on: from dt's default 512K at most; off (or the Horovod-like
     * baseline, or no shared segment: shm = off): never. */
    const char *shm = dt_config_get(cfg, "collectives", "shm");
    int shm_off = shm && !strcmp(shm, "off");
    int hier_asked_on = a.hierarchy && !strcmp(a.hierarchy, "on");
    if (hier_asked_on && (shm_off || horovod)) {
        dt_error("plan: --hierarchy on: %s", horovod
                     ? "the Horovod-like baseline has none (leave out one "
                       "of them)"
                     : "the job has [collectives] shm = off, and dt's "
                       "hierarchical allreduce goes through the shared "
                       "segment");
        dt_config_free(cfg);
        return 2;
    }
    uint64_t hier_on = hier < HIER_DEFAULT || !hier_asked_on ? hier
                                                              : HIER_DEFAULT;
    if (hier_on >= HIER_OFF)
        hier_on = HIER_DEFAULT; /* the job's is off: --sweep's "on" rows */
    int hier_off = horovod || shm_off || hier >= HIER_OFF ||
                   (a.hierarchy && !strcmp(a.hierarchy, "off"));
    if (hier_asked_on)
        hier_off = 0;
    uint64_t hier_eff = hier_off ? HIER_OFF : hier_asked_on ? hier_on : hier;
    const char *comp = a.compression ? a.compression
                       : horovod     ? "none"
                                     : dt_config_get(cfg, "collectives",
                                                     "compression");
    double wire = comp && strcmp(comp, "none") ? 0.5 : 1;
    char comp_name[16];
    snprintf(comp_name, sizeof comp_name, "%s", comp ? comp : "none");
    model_prof_t mp = {0};
    coloc_t coloc = {0};
    int d[4];
    if (a.model_params > 0) {
        if (plan_synthetic_model(a.model_params,
                                 a.model_layers ? a.model_layers : 50,
                                 &mp)) {
            dt_config_free(cfg);
            return plan_fail(&mp, &coloc);
        }
    } else if (a.layer_times) {
        if (plan_read_layer_times(a.layer_times, &mp) != 0) {
            dt_config_free(cfg);
            return plan_fail(&mp, &coloc);
        }
    } else if (!layers || !*layers) {
        dt_error("plan: %s has no [model] layers (or give --layer-times "
                 "or --model-params)", a.job);
        dt_config_free(cfg);
        return 1;
    } else if (a.device_bw > 0) { /* a roofline per layer, nothing timed */
        const char *prec = dt_config_get(cfg, "train", "precision");
        size_t elem = prec && (!strcmp(prec, "bf16") || !strcmp(prec, "fp16"))
                          ? 2 : 4;
        if (plan_input_dims(cfg, a.input, d) != 0 ||
            plan_roofline_model(layers, d, (int)batch, a.device_flops,
                                a.device_bw, elem, &mp) != 0) {
            dt_config_free(cfg);
            return plan_fail(&mp, &coloc);
        }
        dt_info("plan: --device-flops %.4g TFLOP/s, --device-bandwidth %.4g "
                "GB/s: each layer's roofline (activations %zu bytes each), "
                "%.3f ms forward for a batch of %lld", a.device_flops * 1e-12,
                a.device_bw * 1e-9, elem, mp.forward * 1e3, batch);
    } else if (plan_input_dims(cfg, a.input, d) != 0 ||
               (!(layers_only && !a.save_layers) && /* colocation alone:
                                              no layer times wanted */
                plan_measure_model(layers, d, (int)batch, &mp) != 0)) {
        dt_config_free(cfg);
        return plan_fail(&mp, &coloc);
    } else if (!(a.sps > 0) && !(a.device_flops > 0) &&
               a.compute_scale == 1) {
        /* A GPU job planned from this CPU's layer times would project
         * the wrong machine: say so, and what to give instead. */
        const char *dev = dt_config_get(cfg, "train", "device");
        if (dev && strncmp(dev, "cuda", 4) == 0)
            dt_warn("plan: %s trains with [train] device = %s, but its "
                    "layers are timed here on the CPU: for a GPU cluster "
                    "give --layer-times from a GPU run ([train] "
                    "layer_times = FILE), --device-flops or "
                    "--samples-per-sec", a.job, dev);
    }
    if (a.colocation &&
        load_colocation(&a, cfg, layers, (int)batch, &coloc) != 0) {
        dt_config_free(cfg);
        return plan_fail(&mp, &coloc);
    }
    if (a.colocation && coloc.batch && coloc.batch != batch) {
        dt_error("plan: --colocation %s was measured at a per-worker batch "
                 "of %lld, the plan is for %lld: measure it at this batch",
                 a.colocation, coloc.batch, batch);
        dt_config_free(cfg);
        return plan_fail(&mp, &coloc);
    }
    const char *device = dt_config_get(cfg, "train", "device");
    if (a.colocation && device && !strncmp(device, "cuda", 4))
        dt_warn("plan: %s trains with [train] device = %s, but --colocation "
                "multiplies the compute by how CPU copies of the model slow "
                "each other", a.job, device);
    /* The job's loaders, timed here: a step shorter than a batch's
     * loading waits for it (the simulation's `load`). */
    dt_train_input_rate_t input = {0};
    int input_measured = a.job && !layers_only && !a.data_wait_given &&
                         plan_measure_input(cfg, a.job, (size_t)batch,
                                            &input) == 0;
    dt_config_free(cfg);
    if (mp.batch > 0 && mp.batch != batch && !(a.sps > 0)) {
        /* times for another batch: compute in proportion (a GPU at a
         * smaller batch is less efficient than that: optimistic) */
        a.compute_scale *= (double)batch / (double)mp.batch;
        dt_info("plan: %s holds times for a per-worker batch of %lld; "
                "planned at %lld, the compute scaled by %.3g", a.layer_times,
                mp.batch, batch, (double)batch / (double)mp.batch);
    }
    if (a.sps > 0) { /* one worker's step = batch / X */
        double tot = mp.forward + mp.optimizer;
        for (size_t i = 0; i < mp.n; i++)
            tot += mp.bwd[i];
        if (!(tot > 0)) {
            dt_error("plan: --samples-per-sec: the model has no compute "
                     "time to scale");
            return plan_fail(&mp, &coloc);
        }
        a.compute_scale = (double)batch / a.sps / tot;
    }
    if (a.device_flops > 0 && !(a.device_bw > 0)) { /* the step at that
                                 rate, this machine's proportions */
        double tot = mp.forward + mp.optimizer;
        for (size_t i = 0; i < mp.n; i++)
            tot += mp.bwd[i];
        if (!(mp.flops > 0) || !(tot > 0)) {
            dt_error("plan: --device-flops: the model has no convolution or "
                     "linear layer to count");
            return plan_fail(&mp, &coloc);
        }
        double step = 3.0 * mp.flops * (double)batch / a.device_flops;
        a.compute_scale = step / tot;
        dt_info("plan: --device-flops: %.4g GFLOP per sample forward, x3 "
                "per training step: %.3f ms for a batch of %lld at %.4g "
                "TFLOP/s (the layers in this machine's proportions)",
                mp.flops * 1e-9, step * 1e3, batch, a.device_flops * 1e-12);
    }
    if (a.device_launch > 0 && launch_bound(&mp, &a, launches) != 0) {
        return plan_fail(&mp, &coloc);
    }
    if (check_compute(&mp, &a) != 0) {
        return plan_fail(&mp, &coloc);
    }
    if (a.save_layers) { /* measured once, planned many times */
        FILE *w = fopen(a.save_layers, "w");
        if (!w) {
            dt_error("plan: cannot write %s: %s", a.save_layers,
                     strerror(errno));
            return plan_fail(&mp, &coloc);
        }
        /* the times as this plan uses them: --compute-scale,
         * --samples-per-sec, --device-flops and a batch change applied */
        double cs = a.compute_scale;
        fprintf(w, "# dtctl plan --save-layers: seconds and gradient bytes "
                   "per gradient event, last layer first\n"
                   "batch %lld\nforward %.9g\noptimizer %.9g\n",
                batch, mp.forward * cs, mp.optimizer * cs);
        for (size_t i = 0; i < mp.n; i++)
            fprintf(w, "%.9g %.0f\n", mp.bwd[i] * cs, mp.bytes[i]);
        if (fclose(w) != 0) {
            dt_error("plan: cannot write %s: %s", a.save_layers,
                     strerror(errno));
            return plan_fail(&mp, &coloc);
        }
        if (layers_only)
            printf("# layers of %s (per-worker batch %lld) written to %s: "
                   "plan with --layer-times\n", a.job ? a.job : "the model",
                   batch, a.save_layers);
    }
    if (layers_only) {
        if (a.save_colocation)
            printf("# step times of 1 to %d co-located copies of %s written "
                   "to %s: plan with --colocation\n",
                   coloc.nk ? coloc.k[coloc.nk - 1] : 1, a.job,
                   a.save_colocation);
        plan_colocation_free(&coloc);
        free(mp.bwd);
        free(mp.bytes);
        return 0;
    }

    tprof_t net = {20e-6, 0, 0.25e-9, 0, 0},
            intra = {5e-6, 0.2e-9, 0.25e-9, 0, 0};
    if (plan_read_profile(a.profile, a.net_transport, &net) ||
        plan_read_profile(a.profile, a.intra_transport, &intra))
        return plan_fail(&mp, &coloc);
    if (!net.file)
        dt_warn("plan: no profile %s (run dtctl plan --measure): assumed "
                "alpha %.0f/%.0f us, gamma %.2f ns/B, intra %.1f GB/s",
                a.profile, net.alpha * 1e6, intra.alpha * 1e6,
                net.gamma * 1e9, 1e-9 / intra.beta);
    else
        for (int i = 0; i < 2; i++) {
            const tprof_t *t = i ? &intra : &net;
            const char *name = i ? a.intra_transport : a.net_transport;
            if ((t->found & 5) == 5 && (!i || (t->found & 2)))
                continue;
            if (!t->found)
                dt_warn("plan: profile %s has no [transport.%s] section%s: "
                        "assumed alpha %.1f us, gamma %.3f ns/B%s", a.profile,
                        name, i ? "" : " (--net-transport names it)",
                        t->alpha * 1e6, t->gamma * 1e9,
                        i ? " and the intra-host rate" : "");
            else
                dt_warn("plan: profile %s's [transport.%s] lacks%s%s%s: "
                        "assumed instead (dtctl plan --measure writes every "
                        "key)", a.profile, name,
                        t->found & 1 ? "" : " alpha",
                        !i || t->found & 2 ? "" : " beta",
                        t->found & 4 ? "" : " gamma");
        }
    if (!(a.intra_bw > 0))
        a.intra_bw = intra.beta > 0 ? 1.0 / intra.beta : 10e9;

    char tmpl[4096];
    const char *spec = a.spec_out;
    FILE *f;
    int fd = -1;
    if (spec) {
        f = fopen(spec, "w");
    } else {
        fd = dt_temp_mkstemp("plan", "dt-plan-", tmpl, sizeof tmpl);
        if (fd < 0)
            return plan_fail(&mp, &coloc);
        f = fdopen(fd, "w");
        spec = tmpl;
    }
    if (!f) {
        dt_error("plan: cannot write the simulation spec %s: %s", spec,
                 strerror(errno));
        return plan_fail(&mp, &coloc);
    }
    fprintf(f, "# dtctl plan %s\nhosts = %d\ngpus_per_host = %d\n"
               "max_workers = %d\nnetwork_bw = %.9g\nnetwork_latency = %.9g\n"
               "intra_bw = %.9g\nintra_latency = %.9g\nalpha = %.9g\n"
               "gamma = %.9g\nalpha_intra = %.9g\ngamma_intra = %.9g\n"
               "bucket = %llu\nallreduce_small = %llu\nallreduce_ring = %llu\n"
               "hier_min = %llu\nbatch = %lld\nforward = %.9g\n"
               "optimizer = %.9g\ndata_wait = %.9g\nload = %.9g\n",
            a.job ? a.job : "(no job file)", a.hosts, a.gpus,
            a.max_workers, a.net_bw, a.net_lat,
            a.intra_bw, a.intra_lat, net.alpha, net.gamma, intra.alpha,
            intra.gamma, (unsigned long long)bucket,
            (unsigned long long)small, (unsigned long long)ring,
            (unsigned long long)hier_eff, batch, mp.forward * a.compute_scale,
            mp.optimizer * a.compute_scale,
            a.data_wait + (input_measured && input.threads == 0
                               ? input.batch_seconds : 0),
            input_measured && input.threads > 0 ? input.batch_seconds : 0.0);
    if (a.platform)
        fprintf(f, "platform = %s\n", a.platform);
    if (a.topology)
        fprintf(f, "topology = %s\n", a.topology);
    fprintf(f, "wire = %g\n", wire);
    if (horovod) /* NCCL's flat ring, Tensor Fusion's 64 MB, 5 ms cycle */
        fprintf(f, "force_ring = 1\ncycle = 0.005\nfusion = %llu\n",
                a.bucket ? (unsigned long long)a.bucket : 64ULL << 20);
    if (shm_off)
        fprintf(f, "shm = 0\n");
    /* The spec lists layers in model order; measured in ready order. */
    for (size_t i = mp.n; i-- > 0;)
        fprintf(f, "layer = %.9g %.0f\n", mp.bwd[i] * a.compute_scale,
                mp.bytes[i]);
    if (a.colocation &&
        plan_colocation_spec(&coloc, a.gpus, a.max_workers,
                             strcmp(a.colocation, "measure")
                                 ? a.colocation
                                 : "measured here",
                             f) != 0) {
        fclose(f);
        plan_colocation_free(&coloc);
        unlink(spec); /* a spec without its factors: none */
        return 1;
    }
    plan_colocation_free(&coloc);
    free(mp.bwd);
    free(mp.bytes);
    /* A full disk cuts the spec short: dt-plan-sim would plan from what is
     * left (or, on a device such as /dev/full, read zeros for ever). */
    if ((ferror(f) | fclose(f)) != 0) {
        int err = errno;
        if (a.spec_out) {
            dt_error("plan: cannot write the simulation spec %s: %s (free "
                     "some space there, or give --spec another path)",
                     spec, strerror(err));
            return 1;
        }
        /* The temporary file is not the user's: its directory is. */
        const char *slash = strrchr(spec, '/');
        dt_error("plan: cannot write the simulation spec in %.*s: %s (free "
                 "some space there, or point TMPDIR elsewhere)",
                 slash ? (int)(slash - spec) : 1, slash ? spec : ".",
                 strerror(err));
        unlink(spec);
        return 1;
    }
    printf("# plan %s: %d host(s) x %d GPU(s), ",
           a.job ? a.job : "(no job file)", a.hosts, a.gpus);
    /* %.4g: 3.2Tbit reads 3200 Gbit/s, not 3.2e+03 */
    if (a.platform) /* its links and routes, not --network's */
        printf("network from --platform %s", a.platform);
    else if (no_network) /* one host: its 1e12 B/s stand-in is no rate */
        printf("no network (one host), intra %.4g GB/s", a.intra_bw * 1e-9);
    else
        printf("network %.4g Gbit/s %.4g us, intra %.4g GB/s",
               a.net_bw * 8e-9, a.net_lat * 1e6, a.intra_bw * 1e-9);
    printf(", bucket %llu, per-worker batch %lld\n",
           (unsigned long long)bucket, batch);
    if (input_measured)
        plan_print_input(&input);
    if (a.topology)
        printf("# topology %s: every link %.4g Gbit/s, %.4g us per switch "
               "crossed\n", a.topology, a.net_bw * 8e-9, a.net_lat * 1e6);
    char hs[64];
    if (hier_off)
        snprintf(hs, sizeof hs, "off%s",
                 shm_off && !horovod ? " ([collectives] shm = off)" : "");
    else if (a.gpus == 1) /* the simulator's hierarchy needs G > 1 */
        snprintf(hs, sizeof hs, "none (one GPU a host)");
    else
        snprintf(hs, sizeof hs, "on from %llu bytes",
                 (unsigned long long)hier_eff);
    printf("# %s: %s allreduce, hierarchy %s, wire %s%s\n",
           horovod ? "Horovod-like baseline" : "dt",
           horovod ? "ring (NCCL)" : "dt's choice of", hs,
           wire < 1 ? comp_name : "float32",
           horovod ? ", tensor fusion every 5 ms" : "");
    fflush(stdout);
    int rc;
    if (a.plot) {
        char title[512], net[300];
        if (a.platform)
            snprintf(net, sizeof net, "%s", a.platform);
        else
            snprintf(net, sizeof net, "%.3g Gbit/s", a.net_bw * 8e-9);
        snprintf(title, sizeof title, "dt plan: %d host(s) x %d GPU(s), "
                 "%s, %s", a.hosts, a.gpus, net,
                 horovod ? "Horovod-like baseline" : "dt");
        rc = plan_simulate_and_plot(sim, spec, a.plot, title);
    } else {
        pid_t pid = fork();
        if (pid == 0) {
            execl(sim, sim, spec, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (rc == 0 && a.sweep)
        rc = plan_sweep(sim, spec, a.max_workers,
                        a.hosts > 1 && a.gpus > 1 && !shm_off, hier_on,
                        hier_off, bucket, wire);
    if (!a.spec_out)
        unlink(spec);
    return rc;
}
