/* plan_profile.c — the transports' costs for dtctl plan (plan_cli.h):
 * --measure runs dtctl bench here and fits alpha, beta, gamma per
 * transport; --fit does it for tables measured elsewhere; and reading a
 * profile's section. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "base/line_read.h"
#include "plan/plan_model.h"
#include "plan_cli.h"
#include "temp_files.h"

/* ---- the transport profile ----------------------------------------- */

/* A cost in range, else what the key takes: beyond these the simulation
 * stalls (beta 1e300 is an intra-host rate of 1e-300 B/s) or overflows.
 * bit: 1 alpha, 2 beta, 4 gamma. */
static const char *profile_range(int bit, double v)
{
    if (bit == 1 && v > DT_PLAN_LATENCY_MAX)
        return "alpha (seconds a round) at most 1";
    if (bit == 2 && v != 0 &&
        (v < 1 / DT_PLAN_RATE_MAX || v > 1 / DT_PLAN_RATE_MIN))
        return "beta (seconds a byte) 0 or 8e-16 to 8 (a rate of "
               DT_PLAN_RATE_RANGE ")";
    if (bit == 4 && v > 1 / DT_PLAN_RATE_MIN)
        return "gamma (seconds a byte reduced) at most 8";
    return NULL;
}

int plan_read_profile(const char *path, const char *transport, tprof_t *t)
{
    t->found = t->file = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    t->file = 1;
    char *line = NULL, want[96], sec[96] = "";
    size_t line_cap = 0;
    snprintf(want, sizeof want, "transport.%s", transport);
    int ln = 0, nul, rc = 0;
    ssize_t got;
    /* Whole lines, bounded: fgets in pieces looped on /dev/zero. */
    while ((got = dt_line_read(f, &line, &line_cap, &nul)) >= 0 ||
           got == DT_LINE_TOO_LONG) {
        ln++;
        char k[64], *val, *end;
        int n = 0;
        if (got == DT_LINE_TOO_LONG || nul) {
            dt_error("plan: %s:%d: %s: not a profile (check the path: "
                     "dtctl plan --measure --profile FILE writes one)", path,
                     ln, nul ? "a NUL byte (binary data)"
                             : "a line longer than " DT_LINE_MAX_TEXT);
            rc = -1;
            break;
        }
        if (sscanf(line, " [%95[^]]]", sec) == 1)
            continue;
        if (strcmp(sec, want) || sscanf(line, " %63[a-z] =%n", k, &n) != 1 ||
            !n)
            continue;
        int bit = !strcmp(k, "alpha") ? 1 : !strcmp(k, "beta") ? 2
                  : !strcmp(k, "gamma") ? 4 : 0;
        if (!bit)
            continue; /* samples, and keys of later versions */
        val = line + n;
        errno = 0;
        double v = strtod(val, &end);
        if (end == val || errno || !isfinite(v) || v < 0 ||
            end[strspn(end, " \t\r\n")]) {
            dt_error("plan: %s:%d: [%s] %s = %.*s: seconds (per byte for "
                     "beta and gamma) as a plain number, e.g. 2e-05; finite, "
                     "not negative (dtctl plan --measure writes them)",
                     path, ln, want, k,
                     (int)strcspn(val + strspn(val, " \t"), "\r\n"),
                     val + strspn(val, " \t"));
            rc = -1;
            break;
        }
        const char *range = profile_range(bit, v);
        if (range) {
            dt_error("plan: %s:%d: [%s] %s = %g: out of range: %s (dtctl "
                     "plan --measure writes them)", path, ln, want, k, v,
                     range);
            rc = -1;
            break;
        }
        if (bit == 1)
            t->alpha = v;
        else if (bit == 2)
            t->beta = v;
        else
            t->gamma = v;
        t->found |= bit;
    }
    free(line);
    fclose(f);
    if (got == DT_LINE_NOMEM) {
        dt_error("plan: %s: out of memory", path);
        rc = -1;
    }
    return rc;
}

/* argv's standard output in *out, a scratch file rewound: 0; -1 when it
 * could not be run or failed, *out closed (NULL). */
static int run_capture(char *const argv[], const char *env, FILE **out)
{
    *out = dt_temp_file("plan --measure");
    if (!*out)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        /* The file is close-on-exec; dup2 gives fd 1 without the flag,
         * but is a no-op when it is fd 1 already (dtctl's stdout closed). */
        int fd = fileno(*out);
        if (fd == STDOUT_FILENO ? fcntl(fd, F_SETFD, 0) != 0
                                : dup2(fd, STDOUT_FILENO) < 0)
            _exit(127);
        if (env)
            putenv((char *)env);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
        WEXITSTATUS(st)) {
        fclose(*out);
        *out = NULL;
        return -1;
    }
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
    /* Written beside it and renamed at the end: a failed or interrupted
     * measurement leaves the previous profile as it was. */
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        dt_error("plan: --profile %s: path too long", path);
        return 1;
    }
    FILE *pf = fopen(tmp, "we"); /* not held open by the benches */
    if (!pf) {
        dt_error("plan: cannot write %s: %s", tmp, strerror(errno));
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
                dt_error("plan: dtctl bench %s -n %d failed (%s kept as "
                         "it was)", op, n, path);
                fclose(pf);
                unlink(tmp);
                return 1;
            }
            /* shm: the whole job on one host is one algorithm (the shared
             * segment), fitted in the ring's form; tcp: dt's choice. */
            dt_plan_bench_stop_t stop;
            long got = dt_plan_parse_bench(o, n, k == 0 ? NULL : &th, s, &m,
                                           256, &stop);
            fclose(o);
            if (got < 0) { /* its own output: only memory can run out */
                dt_error("plan: reading dtctl bench %s -n %d's output: %s "
                         "(%s kept as it was)", op, n, stop.why, path);
                fclose(pf);
                unlink(tmp);
                return 1;
            }
        }
        if (skipped)
            continue;
        dt_plan_keep_fastest(s, &m);
        double a, b, g;
        if (dt_plan_fit(s, m, &a, &b, &g) != 0) {
            dt_error("plan: cannot fit %s (%zu samples; %s kept as it "
                     "was)", tr[k].name, m, path);
            fclose(pf);
            unlink(tmp);
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
    if (fclose(pf) != 0 || rename(tmp, path) != 0) {
        dt_error("plan: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return 1;
    }
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
        char *colon = strchr(files[i], ':'), *end = NULL;
        long ranks = colon ? strtol(files[i], &end, 10) : 0;
        if (end != colon || ranks > 65536)
            ranks = 0;
        FILE *f = ranks >= 2 ? fopen(colon + 1, "r") : NULL;
        if (ranks < 2 || !f) {
            dt_error("plan: --fit: '%s': expected N:FILE, N >= 2, a "
                     "readable dtctl bench allreduce output", files[i]);
            if (f)
                fclose(f);
            return 2;
        }
        size_t before = m;
        dt_plan_bench_stop_t stop;
        long got = dt_plan_parse_bench(f, (int)ranks, &th, s, &m, 512, &stop);
        fclose(f);
        if (got < 0 && stop.line) {
            dt_error("plan: --fit: %s:%d: %s: not dtctl bench output (check "
                     "the path: dtctl bench allreduce prints one table a "
                     "run)", colon + 1, stop.line, stop.why);
            return 1;
        }
        if (got < 0) {
            dt_error("plan: --fit: %s: %s", colon + 1, stop.why);
            return 1;
        }
        if (m == before) {
            dt_error("plan: --fit: %s has no row of dtctl bench allreduce "
                     "(or allgather) output checked ok", colon + 1);
            return 1;
        }
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
