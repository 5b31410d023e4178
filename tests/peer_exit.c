/* peer_exit.c — a worker for transport failure tests: every rank joins the
 * job, then the rank named by PEER_EXIT_RANK (default 1) leaves at once
 * without dt_finalize (as a crash would, but exiting 0 so that dtctl lets
 * the others run on), while the others run allreduces on it.
 *
 * A survivor prints "peer_exit: rank R: allreduce failed: STATUS" and exits
 * 3 when the transport reported the failure (the test then checks that the
 * transport's own error line named the rank that left), or exits 0 if
 * every allreduce succeeded (which the test counts as a failure).
 * PEER_EXIT_MODE=stop: the rank stops itself (SIGSTOP) instead, a hung
 * peer that only the transport's timeout can catch. PEER_EXIT_MODE=kill:
 * it runs the first 5 allreduces with the others, then kills itself
 * (SIGKILL) in the middle of the job, whatever the speed of the path.
 * PEER_EXIT_MODE=pause: every rank says its pid; the rank runs the first
 * allreduce, stops itself (SIGSTOP) and, once continued, runs the rest
 * with the others: a job that must survive being stopped and continued
 * (tests/stop_cont.sh). PEER_EXIT_MODE=finalize: every rank says its
 * pid, runs one allreduce, stops itself (SIGSTOP) and, once continued,
 * calls dt_finalize and says what it returned (exit 0 for DT_OK, else 4):
 * a job that succeeded, finalized while dtctl is stopped
 * (tests/store_stopped.sh). PEER_EXIT_MODE=nofinalize: every rank runs
 * one allreduce; then the rank stops itself (SIGSTOP) where it would
 * call dt_finalize, as a rank stuck after its last collective, and the
 * others call dt_finalize and say what it returned (exit 0 for DT_OK,
 * else 4) (tests/finalize_hung.sh). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include <dt/dt.h>

int main(void)
{
    const char *v = getenv("PEER_EXIT_RANK");
    const char *mode = getenv("PEER_EXIT_MODE");
    int victim = v ? atoi(v) : 1;
    if (dt_init() != DT_OK)
        return 2;
    size_t n = (size_t)4 << 20; /* 16 MiB of float32: a rendezvous path */
    float *buf = calloc(n, sizeof *buf);
    if (!buf)
        return 2;
    if (mode && strcmp(mode, "finalize") == 0) {
        fprintf(stderr, "peer_exit: rank %d pid %d\n", dt_rank(),
                (int)getpid());
        if (dt_allreduce(buf, buf, n, DT_FLOAT32, DT_SUM) != DT_OK)
            _exit(3);
        free(buf);
        raise(SIGSTOP);
        int rank = dt_rank();
        dt_status_t st = dt_finalize();
        fprintf(stderr, "peer_exit: rank %d: dt_finalize: %s\n", rank,
                dt_status_str(st));
        return st == DT_OK ? 0 : 4;
    }
    if (mode && strcmp(mode, "nofinalize") == 0) {
        if (dt_allreduce(buf, buf, n, DT_FLOAT32, DT_SUM) != DT_OK)
            _exit(3);
        free(buf);
        int rank = dt_rank();
        if (rank == victim) {
            fprintf(stderr, "peer_exit: rank %d stops (SIGSTOP) before "
                            "dt_finalize\n", rank);
            raise(SIGSTOP);
        }
        dt_status_t st = dt_finalize();
        fprintf(stderr, "peer_exit: rank %d: dt_finalize: %s\n", rank,
                dt_status_str(st));
        return st == DT_OK ? 0 : 4;
    }
    if (mode && strcmp(mode, "pause") == 0) {
        fprintf(stderr, "peer_exit: rank %d pid %d\n", dt_rank(),
                (int)getpid());
        if (dt_allreduce(buf, buf, n, DT_FLOAT32, DT_SUM) != DT_OK)
            _exit(3);
        if (dt_rank() == victim)
            raise(SIGSTOP);
        victim = -1; /* every rank runs the rest */
    }
    if (dt_rank() == victim && mode && strcmp(mode, "kill") == 0) {
        for (int i = 0; i < 5; i++)
            dt_allreduce(buf, buf, n, DT_FLOAT32, DT_SUM);
        fprintf(stderr, "peer_exit: rank %d kills itself (SIGKILL) now\n",
                victim);
        raise(SIGKILL);
    }
    if (dt_rank() == victim) {
        int stop = mode && strcmp(mode, "stop") == 0;
        fprintf(stderr, "peer_exit: rank %d %s now\n", victim,
                stop ? "stops (SIGSTOP)" : "leaves the job");
        if (stop)
            raise(SIGSTOP);
        _exit(0);
    }
    for (int i = 0; i < 50; i++) {
        dt_status_t st = dt_allreduce(buf, buf, n, DT_FLOAT32, DT_SUM);
        if (st != DT_OK) {
            fprintf(stderr, "peer_exit: rank %d: allreduce failed: %s\n",
                    dt_rank(), dt_status_str(st));
            free(buf);
            _exit(3);
        }
    }
    free(buf);
    dt_finalize();
    return 0;
}
