/* plan_cli.h — the parts of `dtctl plan` (cmd_plan.c) in files of their
 * own: the model's profile (plan_model_prof.c: measured here, a roofline,
 * a layer-times file or a size), the transports' profile
 * (plan_profile.c: --measure, --fit, reading it), the job's input
 * pipeline (plan_input.c: the data wait) and the runs of dt-plan-sim
 * beyond the table (plan_runs.c: --plot, --sweep). */
#ifndef DT_CLI_PLAN_CLI_H
#define DT_CLI_PLAN_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <dt/config.h>
#include <dt/device.h>
#include <dt/nn.h>
#include <dt/train.h>

typedef struct {
    double forward, optimizer;
    double *bwd, *bytes; /* in the order they are ready (reverse layers) */
    size_t n;
    double flops;        /* one sample's forward (dt_model_flops); 0:
                            not known (a model given by size or times) */
    long long batch;     /* the per-worker batch the times are for (a
                            layer-times file's "batch B"); 0: unsaid */
} model_prof_t;

/* The input's C, H, W and classes: --input, else the dataset's. */
int plan_input_dims(const dt_config_t *cfg, const char *given, int d[4]);
int plan_roofline_model(const char *layers, const int d[4], int batch,
                        double rate, double bw, size_t elem,
                        model_prof_t *mp);
int plan_measure_model(const char *layers, const int d[4], int batch,
                       model_prof_t *mp);
/* The job's model on one CPU thread and a batch of fixed pseudo-random
 * inputs and labels, for the timings above and --colocation's copies. */
/* -1 on failure; -2: the batch too big for this host (said). */
int plan_model_setup(const char *layers, const int d[4], int batch,
                     dt_device_t **dev, dt_model_t **m, float **x, int **y);
/* 0, or -1 with an error saying what to do when timing m here at batch
 * would need more memory than this host has (plan_memory.c). */
int plan_check_measure_memory(const dt_model_t *m, const int d[4], int batch);
int plan_read_layer_times(const char *path, model_prof_t *mp);
/* The layer passes a step of m launches: every layer forward, those from
 * the first with parameters backward, and the optimizer once. */
int plan_model_launches(const dt_model_t *m);
/* --device-launch: the host launches `launches` passes of per_launch
 * seconds each while the GPU works through mp's times. Launches queue
 * ahead of the GPU, so a step takes max(host, GPU), not their sum: where
 * the host's is the longer (small layers, small batches: launch-bound),
 * every time of mp is scaled to it. Returns the factor (1: GPU-bound). */
double plan_launch_bound(model_prof_t *mp, int launches, double per_launch);
int plan_synthetic_model(double params, int layers, model_prof_t *mp);

typedef struct {
    double alpha, beta, gamma;
    int found; /* bits: 1 alpha, 2 beta, 4 gamma read from the file */
    int file;  /* the profile file exists */
} tprof_t;

/* --colocation (plan_colocation.c): each step's compute seconds with k
 * copies of the model running at once on one host, sorted per k. */
#define PLAN_COLOC_MAX 16
typedef struct {
    int nk;
    int k[PLAN_COLOC_MAX];
    double *t[PLAN_COLOC_MAX];
    size_t n[PLAN_COLOC_MAX];
    long long batch;
} coloc_t;
int plan_colocation_measure(const char *layers, const int d[4], int batch,
                            const int *ks, int nk, coloc_t *c);
int plan_colocation_read(const char *path, coloc_t *c);
int plan_colocation_write(const char *path, const coloc_t *c);
/* E[slowest of n steps with k co-located] over the fastest step of one
 * copy alone; 0 when k (or k = 1) was not measured. */
double plan_colocation_factor(const coloc_t *c, int k, int n);
void plan_colocation_free(coloc_t *c);
/* The k (workers per host) of each N the plan runs: min(N, gpus);
 * returns how many distinct ones went into ks (at most 64). */
int plan_colocation_ks(int gpus, int max_workers, int *ks);
/* Print each N's factor and write it into the spec; -1 (said) if c
 * lacks a k the plan needs. src names c (a file or "measured here"). */
int plan_colocation_spec(const coloc_t *c, int gpus, int max_workers,
                         const char *src, FILE *spec);

/* The job's input pipeline timed here (plan_input.c): 0, or -1 with a
 * warning that the plan goes on without (no data here, a bad [data]). */
int plan_measure_input(const dt_config_t *cfg, const char *job, size_t batch,
                       dt_train_input_rate_t *out);
void plan_print_input(const dt_train_input_rate_t *in);

/* The [transport.NAME] section's alpha, beta, gamma into t (keys it
 * lacks keep t's values); -1 (said, with file:line) for a bad value. */
int plan_read_profile(const char *path, const char *transport, tprof_t *t);
int plan_measure_profile(const char *path);
int plan_fit_files(const char *name, int n, char **files);

int plan_simulate_and_plot(const char *sim, const char *spec,
                           const char *out, const char *title);
/* hier: both hierarchy settings swept; hier_on: the hier_min of "on";
 * job_off: the plan's own setting is off. */
int plan_sweep(const char *sim, const char *spec, int n, int hier,
               uint64_t hier_on, int job_off, uint64_t job_bucket,
               double job_wire);

#endif
