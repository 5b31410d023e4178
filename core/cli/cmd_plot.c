/* cmd_plot.c — `dtctl plot METRICS.jsonl [MORE.jsonl...] [-o OUT]`: the
 * training curves of one or more runs (the --metrics files, one JSON
 * object per epoch: core/metrics/metrics_jsonl.c) drawn by gnuplot into
 * a PNG or SVG file: loss (train and test), test accuracy, learning rate
 * and samples/s per epoch, each run one colour, overlaid.
 *
 * dt draws nothing itself: it writes the numbers and a gnuplot script to
 * a temporary directory and runs gnuplot (Debian's gnuplot-nox; $GNUPLOT
 * names another program). Without gnuplot it says which package to
 * install. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "cli.h"
#include "gnuplot.h"

static const char plot_usage[] =
    "usage: dtctl plot METRICS.jsonl [MORE.jsonl...] [-o curves.png|.svg]\n"
    "\n"
    "Draw loss, test accuracy, learning rate and samples/s per epoch from\n"
    "the files `dtctl run --metrics FILE` writes; several files are\n"
    "overlaid, one colour per run. Needs gnuplot (Debian: gnuplot-nox).\n"
    "\n"
    "  -o, --output FILE   the picture, .png or .svg (default curves.png)\n"
    "  -h, --help          this help\n";

/* The columns written for gnuplot, in this order after the epoch. */
static const char *const fields[] = {"train_loss", "test_loss",
                                     "test_accuracy", "lr",
                                     "samples_per_sec"};
#define NFIELDS (sizeof fields / sizeof fields[0])

typedef struct row {
    double epoch;
    double v[NFIELDS];
} row_t;

/* The number after "key": in one JSON line; NaN when absent or null. */
static double json_number(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return NAN;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

/* Read one metrics file into rows (one per epoch; a later line for the
 * same epoch, as a resumed run writes, replaces the earlier). Returns the
 * number of rows, -1 on error (logged). */
static int read_metrics(const char *path, row_t **out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        dt_error("%s: %s", path, strerror(errno));
        return -1;
    }
    row_t *rows = NULL;
    int n = 0, lineno = 0, bad = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        double epoch = json_number(line, "epoch");
        if (line[strspn(line, " \t")] != '{' || !isfinite(epoch)) {
            if (!bad++)
                dt_warn("%s:%d: not a metrics line (no \"epoch\"); skipped",
                        path, lineno);
            continue;
        }
        int i = 0;
        while (i < n && rows[i].epoch != epoch)
            i++;
        if (i == n) {
            row_t *nr = realloc(rows, (size_t)(n + 1) * sizeof *nr);
            if (!nr) {
                free(rows);
                fclose(f);
                return -1;
            }
            rows = nr;
            n++;
        }
        rows[i].epoch = epoch;
        for (size_t k = 0; k < NFIELDS; k++)
            rows[i].v[k] = json_number(line, fields[k]);
    }
    fclose(f);
    if (n == 0) {
        dt_error("%s: no metrics lines (one JSON object per epoch, as "
                 "dtctl run --metrics FILE writes)", path);
        free(rows);
        return -1;
    }
    *out = rows;
    return n;
}

static int cmp_epoch(const void *a, const void *b)
{
    double x = ((const row_t *)a)->epoch, y = ((const row_t *)b)->epoch;
    return (x > y) - (x < y);
}

static void put_plot(FILE *f, const char *dir, char *const *files, int nfiles,
                     int col, const char *what, int dashed_test_loss)
{
    fputs("plot ", f);
    for (int i = 0; i < nfiles; i++) {
        const char *base = strrchr(files[i], '/');
        base = base ? base + 1 : files[i];
        char data[4200];
        snprintf(data, sizeof data, "%s/run%d.dat", dir, i);
        char title[600];
        snprintf(title, sizeof title, "%s%s", base, what);
        if (i)
            fputs(", ", f);
        dt_gnuplot_quote(f, data);
        fprintf(f, " using 1:%d with linespoints linecolor %d pointtype 7 "
                   "pointsize 0.5 title ", col, i + 1);
        dt_gnuplot_quote(f, title);
        if (dashed_test_loss) {
            fputs(", ", f);
            dt_gnuplot_quote(f, data);
            snprintf(title, sizeof title, "%s test", base);
            fprintf(f, " using 1:%d with linespoints linecolor %d "
                       "dashtype 2 pointtype 6 pointsize 0.5 title ",
                    col + 1, i + 1);
            dt_gnuplot_quote(f, title);
        }
    }
    fputc('\n', f);
}

int dt_cmd_plot(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = "curves.png";
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': fputs(plot_usage, stdout); return 0;
        case ':':
            dt_error("dtctl plot: option '%s' needs a value", argv[optind - 1]);
            return 2;
        default:
            dt_error("dtctl plot: unknown option '%s'; see dtctl plot --help",
                     argv[optind - 1]);
            return 2;
        }
    }
    char **files = argv + optind;
    int nfiles = argc - optind;
    if (nfiles < 1) {
        fputs(plot_usage, stderr);
        return 2;
    }
    char term_buf[128];
    const char *term = dt_gnuplot_terminal("dtctl plot -o", out, 1280, 900,
                                           term_buf, sizeof term_buf);
    if (!term)
        return 2;
    char gnuplot[4096];
    double last_epoch = 0;
    if (!dt_gnuplot_find("dtctl plot", gnuplot, sizeof gnuplot))
        return 1;

    char dir[] = "/tmp/dtctl-plot.XXXXXX";
    if (!mkdtemp(dir)) {
        dt_error("dtctl plot: temporary directory: %s", strerror(errno));
        return 1;
    }
    int rc = 1;
    char path[4200], script[4200];
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    for (int i = 0; i < nfiles; i++) {
        row_t *rows;
        int n = read_metrics(files[i], &rows);
        if (n < 0)
            goto done;
        qsort(rows, (size_t)n, sizeof *rows, cmp_epoch);
        if (rows[n - 1].epoch > last_epoch)
            last_epoch = rows[n - 1].epoch;
        snprintf(path, sizeof path, "%s/run%d.dat", dir, i);
        FILE *f = fopen(path, "w");
        if (!f) {
            free(rows);
            dt_error("%s: %s", path, strerror(errno));
            goto done;
        }
        fputs("# epoch train_loss test_loss test_accuracy_pct lr "
              "samples_per_sec\n", f);
        for (int r = 0; r < n; r++) {
            fprintf(f, "%g", rows[r].epoch);
            for (size_t k = 0; k < NFIELDS; k++) {
                double v = rows[r].v[k];
                if (k == 2)
                    v *= 100.0; /* accuracy in percent */
                if (isfinite(v))
                    fprintf(f, " %.9g", v);
                else
                    fputs(" NaN", f);
            }
            fputc('\n', f);
        }
        free(rows);
        if (fclose(f) != 0) {
            dt_error("%s: %s", path, strerror(errno));
            goto done;
        }
    }
    FILE *g = fopen(script, "w");
    if (!g) {
        dt_error("%s: %s", script, strerror(errno));
        goto done;
    }
    fprintf(g, "set terminal %s\nset output ", term);
    dt_gnuplot_quote(g, out);
    fputs("\nset termoption noenhanced\n"
          "set key top right opaque box\n"
          "set grid\n"
          "set xlabel 'epoch'\n"
          "set datafile missing 'NaN'\n"
          "set multiplot layout 2,2 title 'dt training curves'\n", g);
    if (last_epoch <= 20)
        fputs("set xtics 1\n", g); /* whole epochs */
    fputs("set title 'loss (solid: train, dashed: test)'\n"
          "set ylabel 'loss'\n", g);
    put_plot(g, dir, files, nfiles, 2, " train", 1);
    fputs("set title 'test accuracy'\nset ylabel 'accuracy (%)'\n", g);
    put_plot(g, dir, files, nfiles, 4, "", 0);
    fputs("set title 'learning rate (at the end of the epoch)'\n"
          "set ylabel 'lr'\n", g);
    put_plot(g, dir, files, nfiles, 5, "", 0);
    fputs("set title 'throughput'\nset ylabel 'samples/s (all workers)'\n",
          g);
    put_plot(g, dir, files, nfiles, 6, "", 0);
    fputs("unset multiplot\nset output\n", g);
    if (fclose(g) != 0) {
        dt_error("%s: %s", script, strerror(errno));
        goto done;
    }
    if (dt_gnuplot_run("dtctl plot", gnuplot, script, out) == 0) {
        dt_info("%s: %d run%s, %s", out, nfiles, nfiles == 1 ? "" : "s",
                "loss, accuracy, learning rate and samples/s per epoch");
        rc = 0;
    }
done:
    for (int i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/run%d.dat", dir, i);
        unlink(path);
    }
    unlink(script);
    rmdir(dir);
    return rc;
}
