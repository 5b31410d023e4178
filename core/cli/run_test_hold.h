/* run_test_hold.h — a test hook that holds `dtctl run` between the
 * workers' start and their supervision. */
#ifndef DT_CLI_RUN_TEST_HOLD_H
#define DT_CLI_RUN_TEST_HOLD_H

/* DT_TEST_HOLD_START=FILE: with the workers started, dtctl says so on
 * stderr and waits until FILE exists (at most 60 s, or until a stop
 * signal) before it supervises them, so a test's signal lands in the
 * start-up for sure (tests/run_local_early_tstp.sh). Unset or empty: no
 * wait. */
void run_test_hold_start(void);

#endif
