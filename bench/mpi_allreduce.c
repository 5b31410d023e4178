/* mpi_allreduce.c — Open MPI's MPI_Allreduce on the same sizes, inputs and
 * timing method as dt_allreduce_bench (bench_args.h), for
 * compare-allreduce.sh. Build: mpicc -O2 -o mpi_allreduce mpi_allreduce.c */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bench_args_t a;
    if (bench_parse_args(argc, argv, &a) != 0 || a.allgather) {
        if (a.allgather)
            fprintf(stderr, "mpi_allreduce: --op allgather is "
                            "dt_allreduce_bench's only\n");
        MPI_Finalize();
        return 2;
    }
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t maxcount = a.max_bytes / sizeof(float);
    float *send = malloc(maxcount * sizeof *send);
    float *recv = malloc(maxcount * sizeof *recv);
    if (!send || !recv) {
        fprintf(stderr, "mpi_allreduce: rank %d: cannot allocate 2 buffers "
                "of %zu bytes (--sizes MAX): give a smaller MAX\n", rank,
                maxcount * sizeof(float));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        bench_header("Open MPI", size, &a);
    for (size_t b = a.min_bytes; b <= a.max_bytes; b *= (size_t)a.factor) {
        size_t count = b / sizeof(float);
        int n = bench_iters_for(&a, b);
        double *samples = malloc((size_t)n * sizeof *samples);
        if (!samples)
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (size_t i = 0; i < count; i++)
            send[i] = bench_input(rank, i);
        for (int it = -a.warmup; it < n; it++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0;
            if (it >= 0)
                MPI_Allreduce(&t, &samples[it], 1, MPI_DOUBLE, MPI_MAX,
                              MPI_COMM_WORLD);
        }
        int32_t wrong = 0, all = 0;
        for (size_t i = 0; i < count; i++)
            wrong += recv[i] != bench_expect(size, i);
        MPI_Allreduce(&wrong, &all, 1, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            /* the bytes dt_allreduce_bench shows for b: the tables join */
            bench_row(bench_shown_bytes(b, size, 0),
                      bench_stat(&a, samples, n), size, all);
        bad |= all != 0;
        free(samples);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return bad ? 3 : 0;
}
