/* plan_runs.c — dt-plan-sim runs beyond the table (plan_cli.h): --plot
 * (the table through gnuplot) and --sweep (buckets, hierarchy, algorithm
 * and wire at the largest N). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "gnuplot.h"
#include "plan_cli.h"
#include "temp_files.h"

/* `sim spec` with its stdout on a pipe, no shell between (a path may hold
 * any character, a quote included): the read end, or NULL having
 * reaped the child. *pid: for reap_sim. */
static FILE *spawn_sim(const char *sim, const char *spec, pid_t *pid)
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    if ((*pid = fork()) == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(sim, sim, spec, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *p = *pid > 0 ? fdopen(fds[0], "r") : NULL;
    if (!p) {
        close(fds[0]);
        if (*pid > 0)
            waitpid(*pid, NULL, 0);
    }
    return p;
}

/* The pipe closed and the child waited for: its exit status, 1 if it
 * did not exit. */
static int reap_sim(FILE *p, pid_t pid)
{
    int st = 0;
    fclose(p);
    if (waitpid(pid, &st, 0) < 0)
        return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* --plot: the simulation's table passes through as usual, its rows (N,
 * step, samples/s, efficiency %, communication %) go to a data file, and
 * gnuplot draws efficiency and communication share against N (log 2). */
int plan_simulate_and_plot(const char *sim, const char *spec,
                           const char *out, const char *title)
{
    char term_buf[128], gnuplot[4096];
    const char *term = dt_gnuplot_terminal("dtctl plan --plot", out, 900,
                                           600, term_buf, sizeof term_buf);
    if (!term)
        return 2;
    if (!dt_gnuplot_output_writable("dtctl plan --plot", out))
        return 1;
    if (!dt_gnuplot_find("dtctl plan --plot", gnuplot, sizeof gnuplot))
        return 1;
    char dir[4096];
    if (dt_temp_mkdtemp("plan: --plot", "dt-plan-plot.", dir,
                        sizeof dir) != 0)
        return 1;
    char data[4200], script[4200];
    snprintf(data, sizeof data, "%s/plan.dat", dir);
    snprintf(script, sizeof script, "%s/plan.gp", dir);
    int rc = 1, rows = 0;
    double maxn = 0;
    pid_t pid = -1;
    FILE *d = fopen(data, "w");
    FILE *p = d ? spawn_sim(sim, spec, &pid) : NULL;
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
        rc = reap_sim(p, pid);
    } else {
        dt_error("plan: --plot: cannot %s %s: %s", d ? "run" : "write",
                 d ? sim : data, strerror(errno));
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
    pid_t pid = -1;
    FILE *p = spawn_sim(sim, path, &pid);
    if (!p)
        return -1;
    while (fgets(line, sizeof line, p))
        if (line[0] != '#')
            snprintf(last, sizeof last, "%s", line);
    if (reap_sim(p, pid) != 0)
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
int plan_sweep(const char *sim, const char *spec, int n, int hier,
               uint64_t hier_on, int job_off, uint64_t job_bucket,
               double job_wire)
{
    static const unsigned mib[] = {1, 2, 4, 8, 16, 25, 32, 64, 128};
    char path[4096];
    int fd = dt_temp_mkstemp("plan: --sweep", "dt-plan-sweep-", path,
                             sizeof path);
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
    /* on: hier_min = hier_on (the job's, or dt's default where the job
     * has none); off: never. Without both (one GPU a host, shm = off):
     * the job's only. */
    char on_key[64];
    snprintf(on_key, sizeof on_key, "hier_min = %llu\n",
             (unsigned long long)hier_on);
    for (int h = hier ? 0 : job_off; h <= (hier ? 1 : job_off); h++)
        for (size_t i = 0; i < sizeof mib / sizeof mib[0]; i++) {
            snprintf(extra, sizeof extra, "bucket = %u\n%s", mib[i] << 20,
                     h ? "hier_min = 4e18\n" : on_key);
            if (sweep_one(sim, spec, path, extra, &step, &eff, &exp) != 0)
                break;
            printf("  %9uM %9s %12.3f %9.1f%% %11.3f%s\n", mib[i],
                   h ? "off" : "on", step, eff, exp,
                   (uint64_t)mib[i] << 20 == job_bucket && h == job_off
                       ? "  (the job's)" : "");
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
                     best_mib << 20, best_h ? "hier_min = 4e18\n" : on_key,
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
    /* the keys that change the job: hier_min only where the hierarchy
     * setting differs from the job's */
    char hk[64] = "";
    if (best_h && !job_off)
        snprintf(hk, sizeof hk, "hier_min = 16G, ");
    else if (!best_h && job_off)
        snprintf(hk, sizeof hk, "hier_min = %lluK, ",
                 (unsigned long long)(hier_on >> 10));
    printf("# fastest: bucket %uM, hierarchy %s, %s, %s (%.3f ms): [train] "
           "bucket = %uM; [collectives] %s%s, compression = %s%s\n",
           best_mib, best_h ? "off" : "on", any ? alg[best_a].name : "by size",
           best_w ? "bf16" : "float32", best, best_mib, hk, alg[best_a].key,
           best_w ? "bf16" : "none",
           best_w ? " (bf16 rounds the gradients: compression_feedback = "
                    "yes keeps the error)" : "");
    return 0;
}
