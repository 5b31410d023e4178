/* wait_spin.c — a short poll before a transport's wait sleeps.
 *
 * A small message's time is mostly the wake-up of the rank sleeping on
 * it. Bound to its own core ([cluster] bind), a rank takes nobody's CPU by
 * polling: 4 KiB at N = 2 over tcp went from 40 to 8 us. With ranks
 * outnumbering cores, yielding between polls lets the partner on the same
 * core answer first (4 KiB at N = 4: 114 -> 68 us). Bounded, so ranks that
 * wait long still sleep. A yield that returns only after a long while
 * handed the CPU to something that runs a full time slice (another job, a
 * rank computing): spinning then costs milliseconds (4 ms per call with
 * two CPU hogs beside the job), so it pauses, longer each time. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/wait.h>
#include <dt/clock.h>

/* A yield that took this long ran someone's time slice (CFS: 0.75-4 ms),
 * not a partner's short turn. */
#define YIELD_LOST 500e-6

/* auto, measured on 2 cores (docs/TRANSPORTS.md): 100 us for a rank bound
 * to CPUs of its own (its mask times the host's ranks fits the online
 * CPUs), 30 us when ranks outnumber CPUs, else 0 (unbound ranks with a
 * core each lost by spinning, 22 -> 35 us: the scheduler moves them). */
static double auto_spin(int local_size)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mask;
    if (online < 1)
        return 0;
    if (local_size > online)
        return 30e-6;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0 &&
        (long)CPU_COUNT(&mask) * local_size <= online)
        return 100e-6;
    return 0;
}

dt_status_t dt_wait_spin_init(dt_wait_spin_t *s, const char *text,
                              const char *section, int local_size)
{
    memset(s, 0, sizeof *s);
    if (!text || strcmp(text, "auto") == 0) {
        s->spin = auto_spin(local_size);
        return DT_OK;
    }
    if (dt_parse_duration(text, &s->spin) != DT_OK || s->spin > 0.01) {
        dt_error("[%s] spin = '%s': give auto or a duration of at most "
                 "10ms, e.g. 30us (it keeps a CPU busy while it lasts)",
                 section, text);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

int dt_wait_spin_again(dt_wait_spin_t *s, double start)
{
    if (s->spin <= 0 || start < s->paused_until)
        return 0;
    double before = dt_clock_now();
    if (before >= start + s->spin)
        return 0;
    sched_yield();
    double after = dt_clock_now();
    if (after - before > YIELD_LOST) {
        s->backoff = s->backoff > 0 ? s->backoff * 2 : 0.1;
        if (s->backoff > 10.0)
            s->backoff = 10.0;
        s->paused_until = after + s->backoff;
        return 0;
    }
    return 1;
}

void dt_wait_spin_paid(dt_wait_spin_t *s)
{
    s->backoff = 0;
}
