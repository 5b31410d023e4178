/* progress.c — the trainer's progress line: redrawn in place on a
 * terminal, plain lines otherwise (logs, pipes, dtctl's output). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include <dt/clock.h>

#define REDRAW_SECONDS 0.2

void dt_progress_init(dt_progress_t *p, FILE *out, uint64_t epochs)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = isatty(fileno(out));
    p->every = 100;
    p->epochs = epochs;
}

void dt_progress_epoch_start(dt_progress_t *p, uint64_t done)
{
    p->epoch_start = dt_clock_now();
    p->epoch_done = done;
    p->last_draw = 0.0;
}

double dt_progress_eta(double elapsed, uint64_t done, uint64_t step,
                       uint64_t steps)
{
    if (step <= done || step > steps)
        return -1.0;
    return elapsed / (double)(step - done) * (double)(steps - step);
}

static void eta_text(char *buf, size_t len, double seconds)
{
    if (!(seconds >= 0.0) || seconds > 1e7) {
        snprintf(buf, len, "--:--");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%02ld:%02ld", s / 60, s % 60);
}

/* A loss as %.4f ("2.3026"), but a blow-up's 1e36 as %.4g ("3.177e+36",
 * not 37 digits) and a loss below 1e-4 too ("5e-05", not "0.0000"). */
static const char *loss_text(char *buf, size_t len, double v)
{
    double a = fabs(v);
    if (isfinite(v) && (a >= 1e6 || (a > 0.0 && a < 1e-4)))
        snprintf(buf, len, "%.4g", v);
    else
        snprintf(buf, len, "%.4f", v);
    return buf;
}

void dt_progress_step(dt_progress_t *p, uint64_t epoch, uint64_t step,
                      uint64_t steps, double loss, double samples_per_sec,
                      double data_wait)
{
    double now = dt_clock_now();
    if (p->tty) {
        if (step != steps && now - p->last_draw < REDRAW_SECONDS)
            return;
    } else if (p->every == 0 || step % p->every != 0) {
        return;
    }
    p->last_draw = now;
    char eta[32], line[256], lt[64];
    eta_text(eta, sizeof eta,
             dt_progress_eta(now - p->epoch_start, p->epoch_done, step,
                             steps));
    int n = snprintf(line, sizeof line,
                     "epoch %llu/%llu  step %llu/%llu  loss %s  "
                     "%.0f samples/s  data %.1f%%  ETA %s",
                     (unsigned long long)epoch, (unsigned long long)p->epochs,
                     (unsigned long long)step, (unsigned long long)steps,
                     loss_text(lt, sizeof lt, loss), samples_per_sec,
                     100.0 * data_wait, eta);
    size_t len = n > 0 ? (size_t)n : 0;
    if (p->tty) {
        /* Pad with spaces over what a longer previous line left. */
        fprintf(p->out, "\r%s%*s", line,
                (int)(p->line_len > len ? p->line_len - len : 0), "");
        p->line_len = len;
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
}

void dt_progress_eval(dt_progress_t *p, uint64_t epoch, uint64_t step,
                      uint64_t steps, uint64_t global_step, double test_loss,
                      double test_accuracy)
{
    if (p->tty && p->line_len) { /* below the bar, which redraws after */
        fputc('\n', p->out);
        p->line_len = 0;
    }
    char test[64];
    fprintf(p->out, "epoch %llu/%llu  step %llu/%llu (job step %llu)  "
            "test_loss %s  test_accuracy %.2f%%\n",
            (unsigned long long)epoch, (unsigned long long)p->epochs,
            (unsigned long long)step, (unsigned long long)steps,
            (unsigned long long)global_step,
            loss_text(test, sizeof test, test_loss), 100.0 * test_accuracy);
    fflush(p->out);
}

void dt_progress_epoch_end(dt_progress_t *p, const dt_epoch_metrics_t *m)
{
    if (p->tty && p->line_len) {
        fputc('\n', p->out);
        p->line_len = 0;
    }
    char train[64], test[64];
    fprintf(p->out,
            "epoch %llu/%llu  train_loss %s  test_loss %s  "
            "test_accuracy %.2f%%  lr %.5g  %.0f samples/s  comm %.1f%%  "
            "data %.1f%%  %.1fs\n",
            (unsigned long long)m->epoch, (unsigned long long)p->epochs,
            loss_text(train, sizeof train, m->train_loss),
            loss_text(test, sizeof test, m->test_loss),
            100.0 * m->test_accuracy, m->lr,
            m->samples_per_sec, 100.0 * m->comm_fraction,
            100.0 * m->data_wait, m->epoch_seconds);
    fflush(p->out);
}
