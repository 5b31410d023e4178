/* clock.h — the monotonic clock every timeout, wait and measurement in dt
 * reads (CLOCK_MONOTONIC: never jumps with the wall clock). */
#ifndef DT_CLOCK_H
#define DT_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since an arbitrary fixed point, with nanosecond resolution. */
double dt_clock_now(void);

/* The same clock in whole milliseconds (deadlines given in ms). */
long long dt_clock_now_ms(void);

#ifdef __cplusplus
}
#endif
#endif /* DT_CLOCK_H */
