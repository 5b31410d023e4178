/* cmd_plan.c — `dtctl plan`: predict a job's step time, throughput and
 * scaling efficiency on N = 1..max workers of a cluster we do not have
 * (docs/PLAN.md). dtctl measures the model here (forward, and backward
 * between consecutive gradient-ready callbacks: the order and sizes
 * grad_sync sees), takes the transport costs from a profile fitted from
 * `dtctl bench allreduce` (`dtctl plan --measure`), writes a spec and runs
 * dt-plan-sim, which simulates the step in SimGrid (C++, built only when
 * configure found libsimgrid-dev: libdt stays C). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dt/clock.h>
#include <dt/config.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "cli.h"
#include "gnuplot.h"
#include "plan/plan_model.h"
#include "run_trainer.h"

#define SIM "dt-plan-sim"
#define INSTALL_HINT                                                        \
    "dtctl plan simulates with SimGrid, which this build of dt lacks: "    \
    "install it (Debian/Ubuntu: apt-get install libsimgrid-dev; "          \
    "./bootstrap.sh deps does), then configure and build dt again "        \
    "(./bootstrap.sh build)"

typedef struct {
    const char *job, *platform, *profile, *layer_times, *spec_out, *input;
    const char *plot;
    const char *save_layers, *fit;
    const char *net_transport, *intra_transport;
    const char *baseline, *compression, *hierarchy, *topology;
    int hosts, gpus, max_workers, measure, batch, sweep, model_layers;
    double net_bw, net_lat, intra_bw, intra_lat, compute_scale, data_wait;
    double model_params, sps, device_flops, device_bw;
    uint64_t bucket;
} plan_args_t;

static int usage(void)
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
          "RATE [--device-bandwidth RATE]]\n"
          "       (JOB.ini may be left out with --model-params or "
          "--layer-times)\n"
          "       dtctl plan --measure [--profile FILE]\n"
          "       dtctl plan --fit NAME N:BENCH_OUTPUT...  (prints a "
          "[transport.NAME] section)\n"
          "       dtctl plan JOB.ini --save-layers FILE  (only measure "
          "the model; plan elsewhere)\n"
          "RATE: 25Gbit, 100Gbit, 12GB/s. See docs/PLAN.md.\n",
          stderr);
    return 2;
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

/* ---- the model, measured here -------------------------------------- */

typedef struct {
    double last, *t, *bytes;
    size_t n, cap;
} ready_log_t;

static dt_status_t on_ready(void *arg, size_t offset, size_t len)
{
    (void)offset;
    ready_log_t *r = arg;
    double now = dt_clock_now();
    if (r->n < r->cap) {
        r->t[r->n] = now - r->last;
        r->bytes[r->n] = (double)len * sizeof(float);
        r->n++;
    }
    r->last = now;
    return DT_OK;
}

typedef struct {
    double forward, optimizer;
    double *bwd, *bytes; /* in the order they are ready (reverse layers) */
    size_t n;
    double flops;        /* one sample's forward (dt_model_flops); 0:
                            not known (a model given by size or times) */
} model_prof_t;

static int input_dims(const dt_config_t *cfg, const char *given, int d[4])
{
    if (given)
        return sscanf(given, "%d,%d,%d,%d", &d[0], &d[1], &d[2], &d[3]) == 4
                   ? 0 : -1;
    const char *ds = dt_config_get(cfg, "data", "dataset");
    if (ds && !strncmp(ds, "cifar", 5)) {
        d[0] = 3, d[1] = d[2] = 32, d[3] = strstr(ds, "100") ? 100 : 10;
        return 0;
    }
    if (!ds || !strcmp(ds, "fashion-mnist") || !strcmp(ds, "mnist") ||
        !strcmp(ds, "synthetic")) {
        d[0] = 1, d[1] = d[2] = 28, d[3] = 10;
        return 0;
    }
    dt_error("plan: input shape of dataset '%s' unknown: give --input "
             "C,H,W,CLASSES", ds);
    return -1;
}

/* --device-flops F with --device-bandwidth B: each layer's forward a
 * roofline, max(its FLOPs / F, the bytes it moves / B) for the batch
 * (activations at elem bytes, its float32 parameters read once);
 * backward twice that (two products; x and dy read, dx written, dW
 * read-modified), once for the first layer with parameters (no dx) and
 * nothing below it (dt_model_backward stops there); an event where a
 * layer has parameters, as dt_model_backward calls grad_sync after the
 * layer's backward; the
 * optimizer (SGD with momentum: p, g, v read, p and v written) at B.
 * Nothing timed here: the model is only parsed. */
static int roofline_model(const char *layers, const int d[4], int batch,
                          double rate, double bw, size_t elem,
                          model_prof_t *mp)
{
    dt_model_t *m = NULL;
    if (dt_model_parse(layers, "[model] layers", d[0], d[1], d[2], d[3], &m,
                       NULL) != DT_OK)
        return -1;
    int L = dt_model_nlayers(m);
    double *fwd = calloc((size_t)L + 1, sizeof *fwd);
    mp->bwd = calloc((size_t)L + 1, sizeof *mp->bwd);
    mp->bytes = calloc((size_t)L + 1, sizeof *mp->bytes);
    if (!fwd || !mp->bwd || !mp->bytes) {
        free(fwd);
        dt_model_free(m);
        return -1;
    }
    double nparams = 0;
    mp->forward = 0;
    for (int i = 0; i < L; i++) {
        double f, b;
        size_t p;
        dt_model_layer_cost(m, i, elem, &f, &b, &p);
        double tc = f * batch / rate, tm = (b * batch + 4.0 * p) / bw;
        fwd[i] = tc > tm ? tc : tm;
        mp->forward += fwd[i];
        nparams += (double)p;
    }
    int first = 0; /* the first layer with parameters */
    for (; first < L; first++) {
        double f, b;
        size_t p;
        dt_model_layer_cost(m, first, elem, &f, &b, &p);
        if (p)
            break;
    }
    double acc = 0;
    mp->n = 0;
    for (int i = L - 1; i >= first; i--) {
        double f, b;
        size_t p;
        dt_model_layer_cost(m, i, elem, &f, &b, &p);
        acc += (i == first ? 1 : 2) * fwd[i];
        if (p) {
            mp->bwd[mp->n] = acc;
            mp->bytes[mp->n++] = 4.0 * (double)p;
            acc = 0;
        }
    }
    mp->bwd[mp->n] = acc; /* after the last gradient: no bytes */
    mp->bytes[mp->n++] = 0;
    mp->optimizer = 20.0 * nparams / bw;
    mp->flops = dt_model_flops(m);
    free(fwd);
    dt_model_free(m);
    return 0;
}

static int measure_model(const char *layers, const int d[4], int batch,
                         model_prof_t *mp)
{
    int rc = -1;
    dt_model_t *m = NULL;
    dt_device_t *dev = NULL;
    size_t in = (size_t)d[0] * d[1] * d[2];
    float *x = malloc((size_t)batch * in * sizeof *x);
    int *y = malloc((size_t)batch * sizeof *y);
    ready_log_t r = {0};
    double *best = NULL;
    if (!x || !y)
        goto out;
    uint32_t s = 12345;
    for (size_t i = 0; i < (size_t)batch * in; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    }
    for (int i = 0; i < batch; i++)
        y[i] = i % d[3];
    if (dt_device_open("cpu", 0, 1, &dev) != DT_OK ||
        dt_model_parse(layers, "[model] layers", d[0], d[1], d[2], d[3], &m,
                       NULL) != DT_OK ||
        dt_model_init(m, dev, 1) != DT_OK)
        goto out;
    r.cap = 4096;
    r.t = calloc(r.cap, sizeof *r.t);
    r.bytes = calloc(r.cap, sizeof *r.bytes);
    best = calloc(r.cap + 1, sizeof *best);
    if (!r.t || !r.bytes || !best)
        goto out;
    mp->forward = 1e30;
    size_t events = 0;
    for (int rep = 0; rep < 6; rep++) { /* the first warms up */
        float loss;
        double t0 = dt_clock_now();
        if (dt_model_forward(m, x, y, batch, 1, &loss, NULL) != DT_OK)
            goto out;
        double t1 = dt_clock_now();
        r.n = 0;
        r.last = t1;
        if (dt_model_backward(m, on_ready, &r) != DT_OK)
            goto out;
        double tail = dt_clock_now() - r.last;
        if (rep == 0) {
            events = r.n;
            for (size_t i = 0; i <= events; i++)
                best[i] = 1e30;
            continue;
        }
        if (t1 - t0 < mp->forward)
            mp->forward = t1 - t0;
        for (size_t i = 0; i < events && i < r.n; i++)
            if (r.t[i] < best[i])
                best[i] = r.t[i];
        if (tail < best[events])
            best[events] = tail;
    }
    mp->flops = dt_model_flops(m);
    /* The optimizer: SGD with momentum over every parameter (3 streams). */
    size_t np = dt_model_nparams(m);
    float *p, *g;
    if (dt_model_params(m, &p, &g, &np) != DT_OK)
        goto out;
    float *v = calloc(np ? np : 1, sizeof *v);
    if (!v)
        goto out;
    mp->optimizer = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = dt_clock_now();
        for (size_t i = 0; i < np; i++) {
            v[i] = 0.9f * v[i] + g[i];
            p[i] -= 1e-9f * v[i];
        }
        double t = dt_clock_now() - t0;
        if (t < mp->optimizer)
            mp->optimizer = t;
    }
    free(v);
    mp->n = events + 1;
    mp->bwd = malloc(mp->n * sizeof *mp->bwd);
    mp->bytes = malloc(mp->n * sizeof *mp->bytes);
    if (!mp->bwd || !mp->bytes)
        goto out;
    for (size_t i = 0; i < events; i++) {
        mp->bwd[i] = best[i];
        mp->bytes[i] = r.bytes[i];
    }
    mp->bwd[events] = best[events]; /* after the last gradient: no bytes */
    mp->bytes[events] = 0;
    rc = 0;
out:
    if (rc)
        dt_error("plan: cannot run the model '%s' here", layers);
    dt_model_free(m);
    if (dev)
        dt_device_close(dev);
    free(x);
    free(y);
    free(r.t);
    free(r.bytes);
    free(best);
    return rc;
}

/* --layer-times FILE: "SECONDS BYTES" a line, in the order the gradients
 * are ready (last layer first), e.g. from a GPU run; "forward S" and
 * "optimizer S" lines set those. */
static int read_layer_times(const char *path, model_prof_t *mp)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        dt_error("plan: cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char line[256];
    size_t cap = 0;
    int ln = 0;
    mp->n = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        double a, b;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (sscanf(line, "forward %lf", &a) == 1) {
            mp->forward = a;
            continue;
        }
        if (sscanf(line, "optimizer %lf", &a) == 1) {
            mp->optimizer = a;
            continue;
        }
        if (sscanf(line, "%lf %lf", &a, &b) != 2 || a < 0 || b < 0) {
            dt_error("plan: %s:%d: expected 'SECONDS BYTES', 'forward S' "
                     "or 'optimizer S'", path, ln);
            fclose(f);
            return -1;
        }
        if (mp->n == cap) {
            cap = cap ? 2 * cap : 64;
            mp->bwd = realloc(mp->bwd, cap * sizeof *mp->bwd);
            mp->bytes = realloc(mp->bytes, cap * sizeof *mp->bytes);
            if (!mp->bwd || !mp->bytes) {
                fclose(f);
                return -1;
            }
        }
        mp->bwd[mp->n] = a;
        mp->bytes[mp->n++] = b;
    }
    fclose(f);
    if (!mp->n) {
        dt_error("plan: %s has no layer line", path);
        return -1;
    }
    return 0;
}

/* --model-params N: a model given by its size alone (docs/PLAN.md): N
 * float32 gradients split evenly into L layers; compute in unit times,
 * forward 1/3 and backward 2/3 of the step (backward costs about twice
 * the forward), spread evenly over the layers, no separate optimizer;
 * --samples-per-sec then scales the whole to batch / X. */
static int synthetic_model(double params, int layers, model_prof_t *mp)
{
    mp->n = (size_t)layers;
    mp->bwd = malloc(mp->n * sizeof *mp->bwd);
    mp->bytes = malloc(mp->n * sizeof *mp->bytes);
    if (!mp->bwd || !mp->bytes)
        return -1;
    mp->forward = 1.0 / 3;
    mp->optimizer = 0;
    for (size_t i = 0; i < mp->n; i++) {
        mp->bwd[i] = 2.0 / 3 / layers;
        mp->bytes[i] = params * sizeof(float) / layers;
    }
    return 0;
}

/* ---- the transport profile ----------------------------------------- */

typedef struct {
    double alpha, beta, gamma;
    int found;
} tprof_t;

static void read_profile(const char *path, const char *transport, tprof_t *t)
{
    t->found = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[256], want[96], sec[96] = "";
    snprintf(want, sizeof want, "transport.%s", transport);
    while (fgets(line, sizeof line, f)) {
        char k[64];
        double v;
        if (sscanf(line, " [%95[^]]]", sec) == 1)
            continue;
        if (strcmp(sec, want) || sscanf(line, " %63[a-z] = %lf", k, &v) != 2)
            continue;
        if (!strcmp(k, "alpha"))
            t->alpha = v, t->found |= 1;
        else if (!strcmp(k, "beta"))
            t->beta = v, t->found |= 2;
        else if (!strcmp(k, "gamma"))
            t->gamma = v, t->found |= 4;
    }
    fclose(f);
}

static int run_capture(char *const argv[], const char *env, FILE **out)
{
    *out = tmpfile();
    if (!*out)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fileno(*out), 1);
        if (env)
            putenv((char *)env);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return -1;
    rewind(*out);
    return 0;
}

static int measure_profile(const char *path)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = '\0';
    struct {
        const char *name, *env;
    } tr[] = {{"shm", NULL}, {"tcp", "DT_COLLECTIVES_SHM=off"}};
    FILE *pf = fopen(path, "w");
    if (!pf) {
        dt_error("plan: cannot write %s: %s", path, strerror(errno));
        return 1;
    }
    fprintf(pf, "# dtctl plan --measure: allreduce costs fitted from dtctl "
                "bench allreduce (tcp: and allgather, which has no "
                "reduction) at N = 2, 4 on this host, the faster of two "
                "sweeps per size\n"
                "# t = c_a(N) alpha + c_b(N, bytes) beta + c_g(N, bytes) "
                "gamma (docs/PLAN.md)\n");
    dt_plan_thresholds_t th;
    dt_plan_thresholds_default(&th);
    for (size_t k = 0; k < sizeof tr / sizeof tr[0]; k++) {
        dt_plan_sample_t s[256];
        size_t m = 0;
        /* tcp's allgather (the ring's second half over the transport,
         * no sums) pins alpha and beta apart from gamma; the shared
         * segment's allgather is another algorithm: allreduce only. Each
         * sweep twice, the faster of each size kept (keep_fastest). */
        for (int j = 0; j < (k == 0 ? 4 : 8); j++) {
            int n = j % 2 ? 4 : 2;
            const char *op = j % 4 < 2 ? "allreduce" : "allgather";
            char ns[8];
            snprintf(ns, sizeof ns, "%d", n);
            char *argv[] = {self, "-q", "-n", ns, "bench", (char *)op,
                            "--sizes", "4K:16M", "--iters", "50", NULL};
            FILE *o;
            dt_info("plan: dtctl bench %s -n %d (%s)", op, n, tr[k].name);
            if (run_capture(argv, tr[k].env, &o) != 0) {
                dt_error("plan: dtctl bench %s -n %d failed", op, n);
                fclose(pf);
                return 1;
            }
            /* shm: the whole job on one host is one algorithm (the shared
             * segment), fitted in the ring's form; tcp: dt's choice. */
            dt_plan_parse_bench(o, n, k == 0 ? NULL : &th, s, &m, 256);
            fclose(o);
        }
        dt_plan_keep_fastest(s, &m);
        double a, b, g;
        if (dt_plan_fit(s, m, &a, &b, &g) != 0) {
            dt_error("plan: cannot fit %s (%zu samples)", tr[k].name, m);
            fclose(pf);
            return 1;
        }
        fprintf(pf, "\n[transport.%s]\nalpha = %.6g\nbeta = %.6g\n"
                    "gamma = %.6g\nsamples = %zu\n",
                tr[k].name, a, b, g, m);
        printf("%s: alpha %.2f us, beta %.4f ns/B (%.2f GB/s), gamma %.4f "
               "ns/B (%zu samples)\n",
               tr[k].name, a * 1e6, b * 1e9, b > 0 ? 1e-9 / b : 0, g * 1e9,
               m);
    }
    fclose(pf);
    printf("profile written: %s\n", path);
    return 0;
}

/* --fit NAME N:FILE...: tables of `dtctl bench allreduce` run elsewhere
 * (other hosts, other links), each at N ranks, with dt's algorithm choice;
 * prints the profile section. */
static int fit_files(const char *name, int n, char **files)
{
    dt_plan_sample_t s[512];
    size_t m = 0;
    dt_plan_thresholds_t th;
    dt_plan_thresholds_default(&th);
    if (n < 1)
        return usage();
    for (int i = 0; i < n; i++) {
        char *colon = strchr(files[i], ':');
        int ranks = colon ? atoi(files[i]) : 0;
        FILE *f = colon ? fopen(colon + 1, "r") : NULL;
        if (ranks < 2 || !f) {
            dt_error("plan: --fit: '%s': expected N:FILE, N >= 2, a "
                     "readable dtctl bench allreduce output", files[i]);
            if (f)
                fclose(f);
            return 2;
        }
        dt_plan_parse_bench(f, ranks, &th, s, &m, 512);
        fclose(f);
    }
    double al, be, ga;
    if (dt_plan_fit(s, m, &al, &be, &ga) != 0) {
        dt_error("plan: --fit: cannot fit %s (%zu samples)", name, m);
        return 1;
    }
    printf("[transport.%s]\nalpha = %.6g\nbeta = %.6g\ngamma = %.6g\n"
           "samples = %zu\n", name, al, be, ga, m);
    return 0;
}

/* --plot: the simulation's table passes through as usual, its rows (N,
 * step, samples/s, efficiency %, communication %) go to a data file, and
 * gnuplot draws efficiency and communication share against N (log 2). */
static int simulate_and_plot(const char *sim, const char *spec,
                             const char *out, const char *title)
{
    char term_buf[128], gnuplot[4096];
    const char *term = dt_gnuplot_terminal("dtctl plan --plot", out, 900,
                                           600, term_buf, sizeof term_buf);
    if (!term)
        return 2;
    if (!dt_gnuplot_find("dtctl plan --plot", gnuplot, sizeof gnuplot))
        return 1;
    char dir[] = "/tmp/dt-plan-plot.XXXXXX";
    if (!mkdtemp(dir)) {
        dt_error("plan: temporary directory: %s", strerror(errno));
        return 1;
    }
    char data[128], script[128], cmd[8300];
    snprintf(data, sizeof data, "%s/plan.dat", dir);
    snprintf(script, sizeof script, "%s/plan.gp", dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s'", sim, spec);
    int rc = 1, rows = 0;
    double maxn = 0;
    FILE *d = fopen(data, "w");
    FILE *p = d ? popen(cmd, "r") : NULL;
    if (p) {
        char line[1024];
        while (fgets(line, sizeof line, p)) {
            fputs(line, stdout);
            double n, step, sps, eff, comm;
            if (line[0] != '#' &&
                sscanf(line, "%lf %lf %lf %lf%% %lf%%", &n, &step, &sps,
                       &eff, &comm) == 5) {
                fprintf(d, "%g %g %g %g %g\n", n, step, sps, eff, comm);
                rows++;
                maxn = n > maxn ? n : maxn;
            }
        }
        int st = pclose(p);
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (d && fclose(d) != 0)
        rc = 1;
    if (rc == 0 && rows == 0) {
        dt_error("plan: the simulation printed no rows to plot");
        rc = 1;
    }
    FILE *g = rc == 0 ? fopen(script, "w") : NULL;
    if (g) {
        fprintf(g, "set terminal %s\nset output ", term);
        dt_gnuplot_quote(g, out);
        fputs("\nset termoption noenhanced\nset title ", g);
        dt_gnuplot_quote(g, title);
        fputs("\nset grid\nset logscale x 2\nset xlabel 'workers'\n"
              "set ylabel 'scaling efficiency (%)'\nset yrange [0:105]\n"
              "set y2label 'communication (% of the step)'\n"
              "set y2range [0:105]\nset y2tics\n"
              "set key center right opaque box\nplot ", g);
        dt_gnuplot_quote(g, data);
        fputs(" using 1:4 with linespoints pointtype 7 title 'efficiency', ",
              g);
        dt_gnuplot_quote(g, data);
        fputs(" using 1:5 axes x1y2 with linespoints dashtype 2 "
              "pointtype 6 title 'communication'\nset output\n", g);
        rc = fclose(g) != 0;
        if (rc == 0)
            rc = dt_gnuplot_run("dtctl plan --plot", gnuplot, script, out)
                     ? 1 : 0;
        if (rc == 0)
            dt_info("%s: efficiency and communication share for N up to "
                    "%g (%d points)", out, maxn, rows);
    }
    unlink(data);
    unlink(script);
    rmdir(dir);
    return rc;
}

/* One simulation of `spec` with `extra` lines appended (later keys of a
 * spec override earlier ones): the last row's step, efficiency and
 * exposed communication. 0 on success. */
static int sweep_one(const char *sim, const char *spec, const char *path,
                     const char *extra, double *step, double *eff,
                     double *exp)
{
    FILE *in = fopen(spec, "r"), *out = fopen(path, "w");
    int ok = in && out;
    char line[512], last[512] = "";
    while (ok && fgets(line, sizeof line, in))
        ok = fputs(line, out) >= 0;
    ok = ok && fputs(extra, out) >= 0;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        ok = 0;
    if (!ok)
        return -1;
    pid_t pid;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    if ((pid = fork()) == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(sim, sim, path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *p = fdopen(fds[0], "r");
    while (p && fgets(line, sizeof line, p))
        if (line[0] != '#')
            snprintf(last, sizeof last, "%s", line);
    if (p)
        fclose(p);
    else
        close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    int rn;
    double sps, cf;
    return sscanf(last, "%d %lf %lf %lf%% %lf%% %lf", &rn, step, &sps, eff,
                  &cf, exp) == 6 ? 0 : -1;
}

/* --sweep: the same step at the largest N with other bucket sizes, and
 * with the hierarchy off (hier_min beyond any bucket) where hosts have
 * several GPUs; then, at the fastest of those, the allreduce algorithm
 * (dt's choice by size, the ring or halving/doubling at every size) with
 * float32 or bf16 on the wire. Each row says the keys that give it. */
static int sweep(const char *sim, const char *spec, int n, int hier,
                 uint64_t job_bucket, double job_wire)
{
    static const unsigned mib[] = {1, 2, 4, 8, 16, 25, 32, 64, 128};
    char path[] = "/tmp/dt-plan-sweep-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    double best = 1e30, step, eff, exp;
    unsigned best_mib = 0;
    int best_h = 0;
    char extra[256];
    printf("\n# sweep at N = %d: bucket, hierarchy -> step\n"
           "# %10s %9s %12s %10s %11s\n", n, "bucket", "hierarchy",
           "step(ms)", "efficiency", "exposed(ms)");
    for (int h = 0; h <= hier; h++)
        for (size_t i = 0; i < sizeof mib / sizeof mib[0]; i++) {
            snprintf(extra, sizeof extra, "bucket = %u\n%s", mib[i] << 20,
                     h ? "hier_min = 4e18\n" : "");
            if (sweep_one(sim, spec, path, extra, &step, &eff, &exp) != 0)
                break;
            printf("  %9uM %9s %12.3f %9.1f%% %11.3f%s\n", mib[i],
                   h ? "off" : "on", step, eff, exp,
                   (uint64_t)mib[i] << 20 == job_bucket ? "  (the job's)"
                                                        : "");
            if (step < best) {
                best = step;
                best_mib = mib[i];
                best_h = h;
            }
        }
    if (!(best < 1e30)) {
        unlink(path);
        return 0;
    }
    /* The algorithm and the wire at that bucket and hierarchy: what
     * [collectives] allreduce_ring and compression would give. */
    static const struct {
        const char *spec, *name, *key;
    } alg[] = {{"", "by size", "allreduce_ring = 0"},
               {"allreduce_ring = 1\n", "ring", "allreduce_ring = 1"},
               {"allreduce_ring = 1.7e10\n", "halving", "allreduce_ring = 16G"}};
    printf("\n# at bucket %uM, hierarchy %s: allreduce algorithm, wire -> "
           "step ([collectives] keys)\n# %10s %9s %12s %10s %11s\n",
           best_mib, best_h ? "off" : "on", "algorithm", "wire", "step(ms)",
           "efficiency", "exposed(ms)");
    int best_a = 0, best_w = job_wire < 1, any = 0;
    for (int w = 0; w <= 1; w++)
        for (size_t k = 0; k < sizeof alg / sizeof alg[0]; k++) {
            snprintf(extra, sizeof extra, "bucket = %u\n%s%swire = %s\n",
                     best_mib << 20, best_h ? "hier_min = 4e18\n" : "",
                     alg[k].spec, w ? "0.5" : "1");
            if (sweep_one(sim, spec, path, extra, &step, &eff, &exp) != 0)
                continue;
            any = 1;
            printf("  %10s %9s %12.3f %9.1f%% %11.3f  %s, compression = "
                   "%s%s\n", alg[k].name, w ? "bf16" : "float32", step,
                   eff, exp, alg[k].key, w ? "bf16" : "none",
                   !k && w == (job_wire < 1) ? "  (the job's)" : "");
            if (step < best - 1e-9) {
                best = step;
                best_a = (int)k;
                best_w = w;
            }
        }
    unlink(path);
    printf("# fastest: bucket %uM, hierarchy %s, %s, %s (%.3f ms): [train] "
           "bucket = %uM; [collectives] %s%s, compression = %s%s\n",
           best_mib, best_h ? "off" : "on", any ? alg[best_a].name : "by size",
           best_w ? "bf16" : "float32", best, best_mib,
           best_h ? "hier_min = 16G, " : "", alg[best_a].key,
           best_w ? "bf16" : "none",
           best_w ? " (bf16 rounds the gradients: compression_feedback = "
                    "yes keeps the error)" : "");
    return 0;
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
        {"device-bandwidth", 1, 0, 'e'},
        {"help", 0, 0, 'h'},          {0, 0, 0, 0}};
    int c, li = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'a':
            if (dt_plan_parse_count(optarg, &a.model_params)) {
                dt_error("plan: --model-params %s: a parameter count like "
                         "138357544 or 44.7M", optarg);
                return 2;
            }
            break;
        case 'l':
            a.model_layers = (int)strtol(optarg, &end, 10);
            if (*end || a.model_layers < 1 || a.model_layers > 100000) {
                dt_error("plan: --model-layers %s: 1 to 100000", optarg);
                return 2;
            }
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
            a.batch = (int)strtol(optarg, &end, 10);
            if (*end || a.batch < 1) {
                dt_error("plan: --batch %s: a positive per-worker batch",
                         optarg);
                return 2;
            }
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
        case 'H': a.hosts = (int)strtol(optarg, &end, 10); break;
        case 'G': a.gpus = (int)strtol(optarg, &end, 10); break;
        case 'M': a.max_workers = (int)strtol(optarg, &end, 10); break;
        case 'N':
            if (dt_plan_parse_rate(optarg, &a.net_bw)) {
                dt_error("plan: --network %s: a rate like 25Gbit, 100Gbit "
                         "or 12GB/s", optarg);
                return 2;
            }
            break;
        case 'I':
            if (dt_plan_parse_rate(optarg, &a.intra_bw)) {
                dt_error("plan: --intra %s: a rate like 100Gbit or 50GB/s",
                         optarg);
                return 2;
            }
            break;
        case 'L':
        case 'J':
        case 'D': {
            double *d = c == 'L' ? &a.net_lat : c == 'J' ? &a.intra_lat
                                                         : &a.data_wait;
            if (dt_parse_duration(optarg, d) != DT_OK) {
                dt_error("plan: %s: a duration like 5us", optarg);
                return 2;
            }
            break;
        }
        case 'P': a.platform = optarg; break;
        case 'e':
            if (dt_plan_parse_rate(optarg, &a.device_bw)) {
                dt_error("plan: --device-bandwidth %s: the memory bandwidth "
                         "one worker achieves, e.g. 2.5TB/s", optarg);
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
        case 'S': a.compute_scale = strtod(optarg, &end); break;
        case 'i': a.input = optarg; break;
        case 'o': a.spec_out = optarg; break;
        case 'W': a.save_layers = optarg; break;
        case 'F': a.fit = optarg; break;
        case 'X': a.net_transport = optarg; break;
        case 'm': a.measure = 1; break;
        case 'w': a.sweep = 1; break;
        case 'g': a.plot = optarg; break;
        case 'f':
            if (parse_flops(optarg, &a.device_flops)) {
                dt_error("plan: --device-flops %s: one worker's achieved "
                         "rate, e.g. 150T or 1.5e14 (FLOP/s)", optarg);
                return 2;
            }
            break;
        default: return usage();
        }
        if (end && *end) {
            dt_error("plan: --%s %s: not a number", opts[li].name, optarg);
            return 2;
        }
    }
    if (a.measure)
        return optind == argc ? measure_profile(a.profile) : usage();
    if (a.fit)
        return fit_files(a.fit, argc - optind, argv + optind);
    if (optind == argc && (a.model_params > 0 || a.layer_times))
        a.job = NULL; /* the model is given: dt's defaults for the rest */
    else if (optind != argc - 1)
        return usage();
    else
        a.job = argv[optind];
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
    if (a.model_layers && !(a.model_params > 0)) {
        dt_error("plan: --model-layers goes with --model-params");
        return 2;
    }
    if (a.sweep && a.baseline && !strcmp(a.baseline, "horovod")) {
        dt_error("plan: --sweep varies dt's buckets and hierarchy, not "
                 "Horovod's fusion: leave out --baseline horovod");
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
    int layers_only = a.save_layers && a.hosts == 0 && !a.platform &&
                      !(a.net_bw > 0);
    char sim[4200];
    dt_cli_worker_program("core", SIM, sim, sizeof sim);
    if (!layers_only && access(sim, X_OK) != 0) {
        /* Without SimGrid configure builds no dt-plan-sim; with it, a
         * missing one is an unfinished build or install. */
        dt_error("plan: the simulator %s is missing. " INSTALL_HINT, sim);
        return 1;
    }
    if (layers_only)
        a.hosts = a.max_workers = 1;
    if (a.hosts < 1 || a.gpus < 1) {
        dt_error("plan: --hosts and --gpus-per-host must be at least 1");
        return 2;
    }
    if (!a.platform && a.hosts == 1 && !(a.net_bw > 0))
        a.net_bw = 1e12; /* one host: no network on any path */
    if (!a.platform && !(a.net_bw > 0)) {
        dt_error("plan: --network RATE (e.g. 25Gbit) or --platform FILE.xml "
                 "is needed");
        return 2;
    }
    if (a.platform && a.topology) {
        dt_error("plan: --platform %s describes the network itself: leave "
                 "out --topology", a.platform);
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
    int horovod = a.baseline && !strcmp(a.baseline, "horovod");
    const char *comp = a.compression ? a.compression
                       : horovod     ? "none"
                                     : dt_config_get(cfg, "collectives",
                                                     "compression");
    double wire = comp && strcmp(comp, "none") ? 0.5 : 1;
    char comp_name[16];
    snprintf(comp_name, sizeof comp_name, "%s", comp ? comp : "none");
    model_prof_t mp = {0};
    int d[4];
    if (a.model_params > 0) {
        if (synthetic_model(a.model_params,
                            a.model_layers ? a.model_layers : 50, &mp)) {
            dt_config_free(cfg);
            return 1;
        }
    } else if (a.layer_times) {
        if (read_layer_times(a.layer_times, &mp) != 0) {
            dt_config_free(cfg);
            return 1;
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
        if (input_dims(cfg, a.input, d) != 0 ||
            roofline_model(layers, d, (int)batch, a.device_flops,
                           a.device_bw, elem, &mp) != 0) {
            dt_config_free(cfg);
            return 1;
        }
        dt_info("plan: --device-flops %.4g TFLOP/s, --device-bandwidth %.4g "
                "GB/s: each layer's roofline (activations %zu bytes each), "
                "%.3f ms forward for a batch of %lld", a.device_flops * 1e-12,
                a.device_bw * 1e-9, elem, mp.forward * 1e3, batch);
    } else if (input_dims(cfg, a.input, d) != 0 ||
               measure_model(layers, d, (int)batch, &mp) != 0) {
        dt_config_free(cfg);
        return 1;
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
    dt_config_free(cfg);
    if (a.sps > 0) { /* one worker's step = batch / X */
        double tot = mp.forward + mp.optimizer;
        for (size_t i = 0; i < mp.n; i++)
            tot += mp.bwd[i];
        if (!(tot > 0)) {
            dt_error("plan: --samples-per-sec: the model has no compute "
                     "time to scale");
            return 1;
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
            return 1;
        }
        double step = 3.0 * mp.flops * (double)batch / a.device_flops;
        a.compute_scale = step / tot;
        dt_info("plan: --device-flops: %.4g GFLOP per sample forward, x3 "
                "per training step: %.3f ms for a batch of %lld at %.4g "
                "TFLOP/s (the layers in this machine's proportions)",
                mp.flops * 1e-9, step * 1e3, batch, a.device_flops * 1e-12);
    }
    if (a.save_layers) { /* measured once, planned many times */
        FILE *w = fopen(a.save_layers, "w");
        if (!w) {
            dt_error("plan: cannot write %s: %s", a.save_layers,
                     strerror(errno));
            return 1;
        }
        fprintf(w, "# dtctl plan --save-layers: seconds and gradient bytes "
                   "per gradient event, last layer first\n"
                   "forward %.9g\noptimizer %.9g\n", mp.forward,
                mp.optimizer);
        for (size_t i = 0; i < mp.n; i++)
            fprintf(w, "%.9g %.0f\n", mp.bwd[i], mp.bytes[i]);
        if (fclose(w) != 0) {
            dt_error("plan: cannot write %s: %s", a.save_layers,
                     strerror(errno));
            return 1;
        }
        if (layers_only) {
            printf("# layers of %s (per-worker batch %lld) written to %s: "
                   "plan with --layer-times\n", a.job ? a.job : "the model",
                   batch, a.save_layers);
            free(mp.bwd);
            free(mp.bytes);
            return 0;
        }
    }

    tprof_t net = {20e-6, 0, 0.25e-9, 0}, intra = {5e-6, 0.2e-9, 0.25e-9, 0};
    read_profile(a.profile, a.net_transport, &net);
    read_profile(a.profile, a.intra_transport, &intra);
    if (!net.found || !intra.found)
        dt_warn("plan: no profile %s (run dtctl plan --measure): assumed "
                "alpha %.0f/%.0f us, gamma %.2f ns/B, intra %.1f GB/s",
                a.profile, net.alpha * 1e6, intra.alpha * 1e6,
                net.gamma * 1e9, 1e-9 / intra.beta);
    if (!(a.intra_bw > 0))
        a.intra_bw = intra.beta > 0 ? 1.0 / intra.beta : 10e9;

    char tmpl[] = "/tmp/dt-plan-XXXXXX";
    const char *spec = a.spec_out;
    FILE *f;
    int fd = -1;
    if (spec) {
        f = fopen(spec, "w");
    } else {
        fd = mkstemp(tmpl);
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        spec = tmpl;
    }
    if (!f) {
        dt_error("plan: cannot write the simulation spec: %s",
                 strerror(errno));
        return 1;
    }
    fprintf(f, "# dtctl plan %s\nhosts = %d\ngpus_per_host = %d\n"
               "max_workers = %d\nnetwork_bw = %.9g\nnetwork_latency = %.9g\n"
               "intra_bw = %.9g\nintra_latency = %.9g\nalpha = %.9g\n"
               "gamma = %.9g\nalpha_intra = %.9g\ngamma_intra = %.9g\n"
               "bucket = %llu\nallreduce_small = %llu\nallreduce_ring = %llu\n"
               "hier_min = %llu\nbatch = %lld\nforward = %.9g\n"
               "optimizer = %.9g\ndata_wait = %.9g\n",
            a.job ? a.job : "(no job file)", a.hosts, a.gpus,
            a.max_workers, a.net_bw, a.net_lat,
            a.intra_bw, a.intra_lat, net.alpha, net.gamma, intra.alpha,
            intra.gamma, (unsigned long long)bucket,
            (unsigned long long)small, (unsigned long long)ring,
            (unsigned long long)hier, batch, mp.forward * a.compute_scale,
            mp.optimizer * a.compute_scale, a.data_wait);
    if (a.platform)
        fprintf(f, "platform = %s\n", a.platform);
    if (a.topology)
        fprintf(f, "topology = %s\n", a.topology);
    fprintf(f, "wire = %g\n", wire);
    if (horovod) /* NCCL's flat ring, Tensor Fusion's 64 MB, 5 ms cycle */
        fprintf(f, "force_ring = 1\ncycle = 0.005\nfusion = %llu\n",
                a.bucket ? (unsigned long long)a.bucket : 64ULL << 20);
    if (horovod || (a.hierarchy && !strcmp(a.hierarchy, "off")))
        fprintf(f, "hier_min = 4e18\n");
    /* The spec lists layers in model order; measured in ready order. */
    for (size_t i = mp.n; i-- > 0;)
        fprintf(f, "layer = %.9g %.0f\n", mp.bwd[i] * a.compute_scale,
                mp.bytes[i]);
    fclose(f);
    free(mp.bwd);
    free(mp.bytes);
    printf("# plan %s: %d host(s) x %d GPU(s), network %.3g Gbit/s %.3g us, "
           "intra %.3g GB/s, bucket %llu, per-worker batch %lld\n",
           a.job ? a.job : "(no job file)", a.hosts, a.gpus,
           a.net_bw * 8e-9, a.net_lat * 1e6, a.intra_bw * 1e-9,
           (unsigned long long)bucket, batch);
    if (a.topology)
        printf("# topology %s: every link %.3g Gbit/s, %.3g us per switch "
               "crossed\n", a.topology, a.net_bw * 8e-9, a.net_lat * 1e6);
    printf("# %s: %s allreduce, hierarchy %s, wire %s%s\n",
           horovod ? "Horovod-like baseline" : "dt",
           horovod ? "ring (NCCL)" : "dt's choice of",
           horovod || (a.hierarchy && !strcmp(a.hierarchy, "off")) ? "off"
                                                                    : "on",
           wire < 1 ? comp_name : "float32",
           horovod ? ", tensor fusion every 5 ms" : "");
    fflush(stdout);
    int rc;
    if (a.plot) {
        char title[512];
        snprintf(title, sizeof title, "dt plan: %d host(s) x %d GPU(s), "
                 "%.3g Gbit/s, %s", a.hosts, a.gpus, a.net_bw * 8e-9,
                 horovod ? "Horovod-like baseline" : "dt");
        rc = simulate_and_plot(sim, spec, a.plot, title);
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
        rc = sweep(sim, spec, a.max_workers, a.hosts > 1 && a.gpus > 1,
                   bucket, wire);
    if (!a.spec_out)
        unlink(spec);
    return rc;
}
