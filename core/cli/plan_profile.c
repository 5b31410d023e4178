/* plan_profile.c — the transports' costs for dtctl plan (plan_cli.h):
 * --measure runs dtctl bench here and fits alpha, beta, gamma per
 * transport; --fit does it for tables measured elsewhere; and reading a
 * profile's section. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "plan/plan_model.h"
#include "plan_cli.h"

/* ---- the transport profile ----------------------------------------- */


void plan_read_profile(const char *path, const char *transport, tprof_t *t)
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

int plan_measure_profile(const char *path)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = '\0';
    /* Each transport that runs here: the shared segment (the whole job
     * on one host), tcp, and ucx where its plugin works (optional: a
     * build or host without it leaves its section out). */
    struct {
        const char *name, *env, *transport;
        int optional;
    } tr[] = {{"shm", NULL, "tcp", 0},
              {"tcp", "DT_COLLECTIVES_SHM=off", "tcp", 0},
              {"ucx", "DT_COLLECTIVES_SHM=off", "ucx", 1}};
    FILE *pf = fopen(path, "w");
    if (!pf) {
        dt_error("plan: cannot write %s: %s", path, strerror(errno));
        return 1;
    }
    fprintf(pf, "# dtctl plan --measure: allreduce costs fitted from dtctl "
                "bench allreduce (tcp, ucx: and allgather, which has no "
                "reduction) at N = 2, 4 on this host, the faster of two "
                "sweeps per size\n"
                "# t = c_a(N) alpha + c_b(N, bytes) beta + c_g(N, bytes) "
                "gamma (docs/PLAN.md)\n");
    dt_plan_thresholds_t th;
    dt_plan_thresholds_default(&th);
    for (size_t k = 0; k < sizeof tr / sizeof tr[0]; k++) {
        dt_plan_sample_t s[256];
        size_t m = 0;
        int skipped = 0;
        /* tcp's allgather (the ring's second half over the transport,
         * no sums) pins alpha and beta apart from gamma; the shared
         * segment's allgather is another algorithm: allreduce only. Each
         * sweep twice, the faster of each size kept (keep_fastest). */
        int ops = k == 0 ? 1 : 2; /* shm: allreduce only */
        for (int j = 0; j < 2 * ops * 2; j++) { /* 2 sweeps x ops x N */
            int n = j % 2 ? 4 : 2;
            const char *op = (j / 2) % ops == 0 ? "allreduce" : "allgather";
            char ns[8];
            snprintf(ns, sizeof ns, "%d", n);
            char *argv[] = {self, "-q", "--transport", (char *)tr[k].transport,
                            "-n", ns, "bench", (char *)op, "--sizes",
                            "4K:16M", "--iters", "50", NULL};
            FILE *o;
            dt_info("plan: dtctl bench %s -n %d (%s)", op, n, tr[k].name);
            if (run_capture(argv, tr[k].env, &o) != 0) {
                if (tr[k].optional) {
                    dt_warn("plan: dtctl bench %s -n %d over %s failed: no "
                            "[transport.%s] in the profile (dtctl plugins "
                            "says why)", op, n, tr[k].name, tr[k].name);
                    skipped = 1;
                    break;
                }
                dt_error("plan: dtctl bench %s -n %d failed", op, n);
                fclose(pf);
                return 1;
            }
            /* shm: the whole job on one host is one algorithm (the shared
             * segment), fitted in the ring's form; tcp: dt's choice. */
            dt_plan_parse_bench(o, n, k == 0 ? NULL : &th, s, &m, 256);
            fclose(o);
        }
        if (skipped)
            continue;
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
int plan_fit_files(const char *name, int n, char **files)
{
    dt_plan_sample_t s[512];
    size_t m = 0;
    dt_plan_thresholds_t th;
    dt_plan_thresholds_default(&th);
    if (n < 1) {
        dt_error("plan: --fit NAME N:BENCH_OUTPUT...: no bench output given");
        return 2;
    }
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
