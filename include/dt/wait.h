/* wait.h — the bounded poll a transport's wait does before it sleeps
 * ([transport.tcp] spin, [transport.ucx] spin): poll while it pays, yield
 * the CPU between polls, then block in the transport's own sleep (poll(),
 * an event fd). A transport's `wait` uses it so a rank that shares its CPU
 * never burns the time another rank needs. */
#ifndef DT_WAIT_H
#define DT_WAIT_H

#include <dt/status.h>
#include <dt/clock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_wait_spin {
    double spin;         /* seconds a wait polls before it sleeps; 0: none */
    double paused_until; /* after a yield that lost the CPU: no spin until */
    double backoff;      /* the next pause                                 */
} dt_wait_spin_t;

/* From a key's text: "auto" (by how this host's ranks sit on its CPUs) or
 * a duration of at most 10ms. A bad value is a config error naming
 * section.spin. */
dt_status_t dt_wait_spin_init(dt_wait_spin_t *s, const char *text,
                              const char *section, int local_size);

/* Called when a poll found nothing: 1 to poll again (it yielded the CPU
 * once), 0 to go to sleep. start: when the wait began (dt_clock_now). */
int dt_wait_spin_again(dt_wait_spin_t *s, double start);

/* The wait finished while spinning: spinning pays, no pause next time. */
void dt_wait_spin_paid(dt_wait_spin_t *s);


#ifdef __cplusplus
}
#endif
#endif /* DT_WAIT_H */
