/* plan_memory.c — whether the model can be timed here at the plan's
 * batch (plan_cli.h): `dtctl plan` runs the job's model on this CPU at the
 * per-worker batch it plans for, and a batch meant for a big GPU (or a
 * typo) would otherwise end in "out of memory" or the OOM killer. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/nn.h>
#include "plan_cli.h"

#define GIB(b) ((double)(b) / (1024.0 * 1024.0 * 1024.0))

/* MemAvailable + SwapFree (/proc/meminfo), else the physical memory: 0
 * when neither is known (nothing checked on a guess). */
static unsigned long long host_available(const char **what)
{
    unsigned long long avail = 0, swap = 0, v;
    char line[256], key[64];
    FILE *f = fopen("/proc/meminfo", "r");
    int have = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%63[^:]: %llu kB", key, &v) != 2)
            continue;
        if (!strcmp(key, "MemAvailable"))
            avail = v * 1024, have = 1;
        else if (!strcmp(key, "SwapFree"))
            swap = v * 1024;
    }
    if (f)
        fclose(f);
    if (have) {
        *what = "MemAvailable + SwapFree";
        return avail + swap;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *what = "physical memory";
    return pages > 0 && page > 0 ? (unsigned long long)pages * page : 0;
}

int plan_check_measure_memory(const dt_model_t *m, const int d[4], int batch)
{
    dt_model_memory_t mm;
    if (dt_model_memory_estimate(m, batch, 0, &mm) != DT_OK)
        return 0; /* the run itself says what is wrong */
    double inputs = (double)batch * d[0] * d[1] * d[2] * sizeof(float) +
                    (double)batch * sizeof(int);
    double need = inputs + (double)mm.params + mm.activations +
                  mm.act_grads + mm.act_copies + mm.scratch;
    const char *what = "";
    unsigned long long have = host_available(&what);
    if (!have || need <= (double)have)
        return 0;
    dt_error("plan: timing the model here at a per-worker batch of %d needs "
             "about %.2f GiB (an estimate, at least: inputs %.2f, activations "
             "and their gradients %.2f), and this host has %.2f GiB (%s): "
             "time it at a batch that fits (dtctl plan JOB.ini --batch 64 "
             "--save-layers FILE), then plan with --layer-times FILE "
             "--batch %d (the compute scaled in proportion), or give "
             "--device-flops with --device-bandwidth (nothing timed)",
             batch, GIB(need), GIB(inputs),
             GIB((double)mm.activations + mm.act_grads + mm.act_copies),
             GIB(have), what, batch);
    return -1;
}
