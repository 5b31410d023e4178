/* check_gpu.c — judge a host's `dt-train --gpus` report (the format is
 * dt_gpu_inventory_print's, core/nn/gpu_inventory.h) for `dtctl check`. */
#define _GNU_SOURCE
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "check_gpu.h"

#define MAX_GPUS 64
#define NLIBS 4

typedef struct report {
    int complete;               /* the "end" line was there            */
    int count;
    char driver[64], cuda[16];
    char name[MAX_GPUS][128];
    long mib[MAX_GPUS];
    char cc[MAX_GPUS][16];
    char lib[NLIBS][32];        /* "-": cannot be loaded there          */
    char why[512];
} report_t;

static const char *const lib_names[NLIBS] = {"cudart", "cublas", "cudnn",
                                             "nccl"};

static void parse_line(report_t *r, const char *line)
{
    int idx = 0, used = 0;
    long mib = 0;
    char cc[16], a[64], b[32];
    if (strcmp(line, "end") == 0) {
        r->complete = 1;
    } else if (sscanf(line, "driver %63s cuda %15s", r->driver, r->cuda) ==
               2) {
    } else if (sscanf(line, "gpu %d %ld %15s %n", &idx, &mib, cc, &used) ==
                   3 && used > 0 && idx == r->count && idx < MAX_GPUS) {
        snprintf(r->name[idx], sizeof r->name[idx], "%.127s", line + used);
        snprintf(r->cc[idx], sizeof r->cc[idx], "%s", cc);
        r->mib[idx] = mib;
        r->count++;
    } else if (sscanf(line, "lib %63s %31s", a, b) == 2) {
        for (int i = 0; i < NLIBS; i++)
            if (strcmp(a, lib_names[i]) == 0)
                snprintf(r->lib[i], sizeof r->lib[i], "%s", b);
    } else if (strncmp(line, "none ", 5) == 0) {
        snprintf(r->why, sizeof r->why, "%.511s", line + 5);
    }
}

static void parse(const char *out, report_t *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < NLIBS; i++)
        strcpy(r->lib[i], "-");
    while (out && *out) {
        const char *nl = strchr(out, '\n');
        size_t n = nl ? (size_t)(nl - out) : strlen(out);
        char line[640];
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, out, n);
        line[n] = '\0';
        /* A login shell's own lines come first on some hosts: only the
         * lines of the report's grammar count. */
        parse_line(r, line);
        out = nl ? nl + 1 : out + strlen(out);
    }
}

/* "2 x NVIDIA H100 80GB HBM3 (81559 MiB, compute 9.0)", or one entry per
 * GPU when they differ. */
static void describe_gpus(const report_t *r, char *buf, size_t len)
{
    int same = 1;
    for (int i = 1; i < r->count; i++)
        same &= strcmp(r->name[i], r->name[0]) == 0 && r->mib[i] == r->mib[0];
    size_t o = 0;
    if (same && r->count > 1)
        o = (size_t)snprintf(buf, len, "%d x ", r->count);
    for (int i = 0; i < (same ? 1 : r->count) && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s (%ld MiB, compute %s)",
                              i ? ", " : "", r->name[i], r->mib[i],
                              r->cc[i]);
}

static void describe_libs(const report_t *r, char *buf, size_t len)
{
    size_t o = 0;
    for (int i = 0; i < NLIBS && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s %s", i ? ", " : "",
                              lib_names[i],
                              strcmp(r->lib[i], "-") ? r->lib[i] : "missing");
}

int check_gpu_unknown(const char *why, const char *fix,
                      const check_gpu_job_t *job, char *detail, size_t len)
{
    int needed = job->want_cuda || job->nccl;
    snprintf(detail, len, "could not ask the host for its GPUs (%s)%s%s", why,
             needed ? "; " : "", needed ? fix : "");
    return needed ? CHECK_GPU_FAIL : CHECK_GPU_SKIP;
}

int check_gpu_judge(const char *out, const check_gpu_job_t *job,
                    char *detail, size_t len)
{
    report_t r;
    parse(out, &r);
    int needed = job->want_cuda || job->nccl;
    const char *needer = job->nccl ? "[cluster] transport = nccl"
                                   : "[train] device = cuda";
    if (!r.complete)
        return check_gpu_unknown("dt-train --gpus gave no report: an older "
                                 "or missing dt there?",
                                 "install this version of dt on the host",
                                 job, detail, len);
    if (r.count == 0) {
        if (needed)
            snprintf(detail, len, "%s, but no GPU here: %s; use a host with "
                     "NVIDIA GPUs, or device = cpu and transport = tcp",
                     needer, r.why);
        else
            snprintf(detail, len, "no GPU (%s): the job computes on the CPU",
                     r.why);
        return needed ? CHECK_GPU_FAIL : CHECK_GPU_SKIP;
    }
    char gpus[1024], libs[256];
    describe_gpus(&r, gpus, sizeof gpus);
    describe_libs(&r, libs, sizeof libs);
    if (job->nccl && job->ranks > r.count) {
        snprintf(detail, len,
                 "nccl runs one rank per GPU: %d ranks would share %d GPU%s "
                 "(%s); give the host %d slot%s (hostfile slots=, -H "
                 "host:%d) or lower -n", job->ranks, r.count,
                 r.count == 1 ? "" : "s", gpus, r.count,
                 r.count == 1 ? "" : "s", r.count);
        return CHECK_GPU_FAIL;
    }
    int missing = -1;
    if (job->want_cuda && strcmp(r.lib[0], "-") == 0)
        missing = 0;
    else if (job->want_cuda && strcmp(r.lib[1], "-") == 0)
        missing = 1;
#ifdef DT_HAVE_CUDNN
    /* this dt's CUDA backend links libcudnn.so.9: it loads only with it */
    else if (job->want_cuda && strcmp(r.lib[2], "-") == 0)
        missing = 2;
#endif
    else if (job->nccl && strcmp(r.lib[3], "-") == 0)
        missing = 3;
    if (missing >= 0) {
        snprintf(detail, len, "%s needs %s, which cannot be loaded there "
                 "(%s); install it (CUDA 13 under /usr/local/cuda, or on "
                 "LD_LIBRARY_PATH)", needer, lib_names[missing], libs);
        return CHECK_GPU_FAIL;
    }
    snprintf(detail, len, "%s; driver %s (CUDA %s); %s%s", gpus,
             strcmp(r.driver, "-") ? r.driver : "release unknown", r.cuda,
             libs,
             job->want_cuda && strcmp(r.lib[2], "-") == 0
                 ? " (without cuDNN, convolutions take dt's own path)"
                 : "");
    return CHECK_GPU_OK;
}
