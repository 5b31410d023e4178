/* cacheline_rtt.c — how long one cache line takes to go from one CPU to
 * another and back (two threads, each pinned to one of the first two CPUs
 * this process may use, bouncing a counter). Printed by
 * compare-allreduce.sh before and after a comparison.
 *
 * Why: on the VMs we measure on, the same two vCPUs show ~95 ns at some
 * times and ~340 ns at others for minutes on end (the host placed them
 * further apart), and every shared-memory or loopback benchmark, dt's and
 * Open MPI's alike, runs 3-6x slower meanwhile. Ratios are only fair when
 * both sides ran under the same round trip. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define BOUNCES 200000

static volatile uint64_t line[8] __attribute__((aligned(64)));
static int cpus[2];

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *answer(void *arg)
{
    (void)arg;
    pin(cpus[1]);
    for (uint64_t i = 1; i <= BOUNCES; i++) {
        while (line[0] != 2 * i - 1)
            ;
        line[0] = 2 * i;
    }
    return NULL;
}

int main(void)
{
    cpu_set_t mask;
    int found = 0;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0)
        for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
            if (CPU_ISSET(c, &mask))
                cpus[found++] = c;
    if (found < 2) {
        printf("# cache-line round trip: needs two CPUs\n");
        return 0;
    }
    pthread_t t;
    pin(cpus[0]);
    if (pthread_create(&t, NULL, answer, NULL) != 0)
        return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (uint64_t i = 1; i <= BOUNCES; i++) {
        line[0] = 2 * i - 1;
        while (line[0] != 2 * i)
            ;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    pthread_join(t, NULL);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
                 (double)(b.tv_nsec - a.tv_nsec)) / BOUNCES;
    printf("# cache-line round trip between CPUs %d and %d: %.0f ns\n",
           cpus[0], cpus[1], ns);
    return 0;
}
