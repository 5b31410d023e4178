/* cmd_plot.c — `dtctl plot METRICS.jsonl [MORE.jsonl...] [-o OUT]`: the
 * training curves of one or more runs (the --metrics files, one JSON
 * object per epoch: core/metrics/metrics_jsonl.c) drawn by gnuplot into
 * a PNG or SVG file: loss (train and test), test accuracy, learning rate
 * and samples/s per epoch, each run one colour, overlaid. A file where
 * the step goes back (runs appended to one file) holds one run per such
 * point; dtctl's own restart records in it are passed over; a panel no
 * run has a value for is drawn empty (gnuplot refuses to plot nothing).
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
#include "base/line_read.h"
#include "cli.h"
#include "gnuplot.h"
#include "temp_files.h"

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
    double epoch, step;
    double v[NFIELDS];
} row_t;

/* One run: the rows of one file between two points where the step went
 * back (a fresh run appended by an older dt, or files concatenated). */
typedef struct series {
    const char *file;
    int run, runs;          /* 1-based; the file's number of runs       */
    row_t *rows;
    int n;
} series_t;

typedef struct plot_set {
    series_t *s;
    int n;
} plot_set_t;

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

static series_t *new_series(plot_set_t *set, const char *file)
{
    series_t *ns = realloc(set->s, (size_t)(set->n + 1) * sizeof *ns);
    if (!ns)
        return NULL;
    set->s = ns;
    series_t *r = &ns[set->n++];
    memset(r, 0, sizeof *r);
    r->file = file;
    return r;
}

/* A line of the same run: its step is not below the previous line's, or
 * it redoes an epoch after a resume (the checkpoint resumed from was at
 * or after the end of the epoch before, so the step is above that
 * epoch's). A fresh run's epoch 1 after a longer run is neither. */
static int same_run(const series_t *r, double prev_step, double epoch,
                    double step)
{
    if (r->n == 0 || !isfinite(step) || !isfinite(prev_step) ||
        step >= prev_step)
        return 1;
    for (int i = 0; i < r->n; i++)
        if (r->rows[i].epoch == epoch - 1 && r->rows[i].step < step)
            return 1;
    return 0;
}

/* The row for `epoch` in r (a later line for the same epoch, as a resumed
 * run writes, replaces the earlier), added when new; NULL: no memory. */
static row_t *epoch_row(series_t *r, double epoch)
{
    /* Epochs mostly come in order: a new one is past the last row. */
    int i = r->n > 0 && r->rows[r->n - 1].epoch < epoch ? r->n : 0;
    while (i < r->n && r->rows[i].epoch != epoch)
        i++;
    if (i == r->n) {
        if ((r->n & (r->n - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
            size_t cap = r->n ? 2 * (size_t)r->n : 1;
            row_t *nr = realloc(r->rows, cap * sizeof *nr);
            if (!nr)
                return NULL;
            r->rows = nr;
        }
        r->n++;
    }
    return &r->rows[i];
}

/* What a line is: 1 a metrics line, 0 dtctl's own record (a restart,
 * the end: "event") or blank, -1 something else. */
static int line_kind(const char *line, double epoch)
{
    const char *p = line + strspn(line, " \t\r\n");
    if (*p == '\0')
        return 0;
    if (*p == '{' && strstr(p, "\"event\":"))
        return 0;
    return *p == '{' && isfinite(epoch) ? 1 : -1;
}

/* Read one metrics file into set: one series per run in it. Returns the
 * number of runs, -1 on error (logged). */
static int read_metrics(const char *path, plot_set_t *set)
{
    FILE *f = fopen(path, "r");
    struct stat sb;
    if (!f) {
        dt_error("%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        dt_error("%s: is a directory; name the metrics file (dtctl run "
                 "--metrics FILE)", path);
        fclose(f);
        return -1;
    }
    series_t *r = NULL;
    int first = set->n, lineno = 0, bad = 0;
    double prev_step = NAN;
    char *line = NULL; /* whole lines, up to DT_LINE_MAX */
    size_t cap = 0;
    ssize_t got;
    int nul;
    while ((got = dt_line_read(f, &line, &cap, &nul)) >= 0 ||
           got == DT_LINE_TOO_LONG) {
        lineno++;
        if (got == DT_LINE_TOO_LONG) { /* /dev/zero, a data file */
            dt_error("%s:%d: a line longer than " DT_LINE_MAX_TEXT ": not a "
                     "metrics file (check the path: dtctl run --metrics "
                     "FILE writes one JSON object a line)", path, lineno);
            free(line);
            fclose(f);
            return -1;
        }
        double epoch = json_number(line, "epoch"),
               step = json_number(line, "step");
        /* A NUL byte: binary data, or the zeros a crash can leave at a
         * file's end; skipped like any line that is not a metrics one. */
        int kind = nul ? -1 : line_kind(line, epoch);
        if (kind < 0 && !bad++)
            dt_warn("%s:%d: not a metrics line (%s); skipped", path, lineno,
                    nul ? "a NUL byte: binary data" : "no \"epoch\"");
        if (kind <= 0)
            continue;
        if (r && !same_run(r, prev_step, epoch, step))
            dt_warn("%s:%d: the step goes back from %g to %g (epoch %g): "
                    "another run starts there, drawn as a curve of its own "
                    "(a fresh run now empties its --metrics file)", path,
                    lineno, prev_step, step, epoch);
        if (!r || !same_run(r, prev_step, epoch, step))
            r = new_series(set, path);
        row_t *row = r ? epoch_row(r, epoch) : NULL;
        if (!row) {
            free(line);
            fclose(f);
            return -1;
        }
        row->epoch = epoch;
        row->step = step;
        for (size_t k = 0; k < NFIELDS; k++)
            row->v[k] = json_number(line, fields[k]);
        prev_step = step;
    }
    free(line);
    fclose(f);
    if (got == DT_LINE_NOMEM) {
        dt_error("%s: out of memory", path);
        return -1;
    }
    if (set->n == first) {
        dt_error("%s: no metrics lines (one JSON object per epoch, as "
                 "dtctl run --metrics FILE writes)", path);
        return -1;
    }
    for (int i = first; i < set->n; i++) {
        set->s[i].run = i - first + 1;
        set->s[i].runs = set->n - first;
    }
    return set->n - first;
}

static int cmp_epoch(const void *a, const void *b)
{
    double x = ((const row_t *)a)->epoch, y = ((const row_t *)b)->epoch;
    return (x > y) - (x < y);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* "m.jsonl", or "m.jsonl #2" for a file's second run; the path as given
 * when another file has the same name (runs/a/m.jsonl, runs/b/m.jsonl). */
static void series_name(const plot_set_t *set, const series_t *r, char *buf,
                        size_t len)
{
    const char *base = base_name(r->file);
    for (int i = 0; i < set->n; i++)
        if (strcmp(set->s[i].file, r->file) != 0 &&
            strcmp(base_name(set->s[i].file), base) == 0)
            base = r->file;
    if (r->runs > 1)
        snprintf(buf, len, "%s #%d", base, r->run);
    else
        snprintf(buf, len, "%s", base);
}

/* Any value in data column col (2..) of any run: gnuplot refuses a panel
 * with none ("x range is invalid"). */
static int has_values(const plot_set_t *set, int col)
{
    for (int i = 0; i < set->n; i++)
        for (int r = 0; r < set->s[i].n; r++)
            if (isfinite(set->s[i].rows[r].v[col - 2]))
                return 1;
    return 0;
}

/* A panel without values: drawn empty, titled so. */
static void put_empty(FILE *f, const char *title, double lo, double hi)
{
    fputs("set title ", f);
    dt_gnuplot_quote(f, title);
    fprintf(f, "\nset xrange [%g:%g]\nset yrange [0:1]\nunset key\n"
               "plot NaN notitle\nset autoscale\nset key\n",
            lo - 0.5, hi + 0.5);
}

static void put_plot(FILE *f, const char *dir, const plot_set_t *set,
                     int col, const char *what, int dashed_test_loss)
{
    fputs("plot ", f);
    for (int i = 0; i < set->n; i++) {
        char base[600], data[4200], title[700];
        series_name(set, &set->s[i], base, sizeof base);
        snprintf(data, sizeof data, "%s/run%d.dat", dir, i);
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

/* A range of one value (one epoch; a constant lr): gnuplot widens it by
 * 1% itself but prints "Warning: empty y range" on dtctl's stderr for
 * every such panel (seven for a one-epoch run); set that range first. */
static void put_flat_range(FILE *f, const char *axis, double lo, double hi)
{
    if (!(lo == hi))
        return;
    double d = lo != 0.0 ? fabs(lo) * 0.01 : 1.0;
    fprintf(f, "set %srange [%.9g:%.9g]\n", axis, lo - d, hi + d);
}

/* The least and largest value of data column col (and col + 1). */
static void value_range(const plot_set_t *set, int col, int both,
                        double out[2])
{
    out[0] = INFINITY, out[1] = -INFINITY;
    for (int i = 0; i < set->n; i++)
        for (int r = 0; r < set->s[i].n; r++)
            for (int c = col; c <= col + both; c++) {
                double v = set->s[i].rows[r].v[c - 2];
                if (c == 4)
                    v *= 100.0; /* accuracy in percent, as written */
                if (isfinite(v)) {
                    out[0] = fmin(out[0], v);
                    out[1] = fmax(out[1], v);
                }
            }
}

/* One panel: the curves of data column col (and col + 1 dashed for the
 * loss), or an empty panel when no run has a value there. */
static void put_panel(FILE *f, const char *dir, const plot_set_t *set,
                      const char *title, const char *ylabel, int col,
                      const char *what, int dashed, const double range[2])
{
    fputs("set ylabel ", f);
    dt_gnuplot_quote(f, ylabel);
    fputc('\n', f);
    if (!has_values(set, col) && !(dashed && has_values(set, col + 1))) {
        char t[200];
        snprintf(t, sizeof t, "%s (no values)", title);
        put_empty(f, t, range[0], range[1]);
        return;
    }
    fputs("set title ", f);
    dt_gnuplot_quote(f, title);
    fputc('\n', f);
    double y[2];
    value_range(set, col, dashed, y);
    put_flat_range(f, "x", range[0], range[1]);
    put_flat_range(f, "y", y[0], y[1]);
    put_plot(f, dir, set, col, what, dashed);
    fputs("set autoscale\n", f);
}

/* run<i>.dat: epoch, then the fields (accuracy in percent), NaN where a
 * value is missing. */
static int write_data(const char *path, const series_t *r)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        dt_error("%s: %s", path, strerror(errno));
        return -1;
    }
    fputs("# epoch train_loss test_loss test_accuracy_pct lr "
          "samples_per_sec\n", f);
    for (int i = 0; i < r->n; i++) {
        fprintf(f, "%g", r->rows[i].epoch);
        for (size_t k = 0; k < NFIELDS; k++) {
            double v = r->rows[i].v[k];
            if (k == 2)
                v *= 100.0; /* accuracy in percent */
            if (isfinite(v))
                fprintf(f, " %.9g", v);
            else
                fputs(" NaN", f);
        }
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        dt_error("%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void free_set(plot_set_t *set)
{
    for (int i = 0; i < set->n; i++)
        free(set->s[i].rows);
    free(set->s);
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
        case 'h':
            fputs(plot_usage, stdout);
            return dt_cli_flush_stdout("plot --help");
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
    if (!dt_gnuplot_output_writable("dtctl plot -o", out))
        return 1;
    char gnuplot[4096];
    if (!dt_gnuplot_find("dtctl plot", gnuplot, sizeof gnuplot))
        return 1;

    char dir[4096];
    if (dt_temp_mkdtemp("dtctl plot", "dtctl-plot.", dir, sizeof dir) != 0)
        return 1;
    int rc = 1;
    plot_set_t set = {NULL, 0};
    double range[2] = {INFINITY, -INFINITY}; /* epochs, all runs */
    char path[4200], script[4200];
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    for (int i = 0; i < nfiles; i++)
        if (read_metrics(files[i], &set) < 0)
            goto done;
    for (int i = 0; i < set.n; i++) {
        series_t *r = &set.s[i];
        qsort(r->rows, (size_t)r->n, sizeof *r->rows, cmp_epoch);
        range[0] = fmin(range[0], r->rows[0].epoch);
        range[1] = fmax(range[1], r->rows[r->n - 1].epoch);
        snprintf(path, sizeof path, "%s/run%d.dat", dir, i);
        if (write_data(path, r) != 0)
            goto done;
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
    if (range[1] <= 20)
        fputs("set xtics 1\n", g); /* whole epochs */
    put_panel(g, dir, &set, "loss (solid: train, dashed: test)", "loss", 2,
              " train", 1, range);
    put_panel(g, dir, &set, "test accuracy", "accuracy (%)", 4, "", 0,
              range);
    put_panel(g, dir, &set, "learning rate (at the end of the epoch)", "lr",
              5, "", 0, range);
    put_panel(g, dir, &set, "throughput", "samples/s (all workers)", 6, "",
              0, range);
    fputs("unset multiplot\nset output\n", g);
    if (fclose(g) != 0) {
        dt_error("%s: %s", script, strerror(errno));
        goto done;
    }
    if (dt_gnuplot_run("dtctl plot", gnuplot, script, out) == 0) {
        dt_info("%s: %d run%s, %s", out, set.n, set.n == 1 ? "" : "s",
                "loss, accuracy, learning rate and samples/s per epoch");
        rc = 0;
    }
done:
    for (int i = 0; i < set.n; i++) {
        snprintf(path, sizeof path, "%s/run%d.dat", dir, i);
        unlink(path);
    }
    unlink(script);
    rmdir(dir);
    free_set(&set);
    return rc;
}
