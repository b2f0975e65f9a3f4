/* coll_bench: time per collective call, osu_allreduce style, any number of
 * ranks. Prints one line of key=value (microseconds):
 *   allreduce_8     MPI_Allreduce of one double (8 B, MPI_SUM)
 *   allreduce_2k, allreduce_16k   of 256 and 2048 doubles (where the
 *                   shim's Allreduce changes algorithm)
 *   allreduce_64k   MPI_Allreduce of 8192 doubles (64 KiB, MPI_SUM)
 *   allreduce_1m    MPI_Allreduce of 131072 doubles (1 MiB, MPI_SUM), its
 *                   buffers allocated after MPI_Init as an application's
 *   bcast_8         MPI_Bcast of 8 B from rank 0
 *   bcast_2k, bcast_64k   of 2 KiB and 64 KiB (doubles)
 *   barrier         MPI_Barrier
 *   iallreduce_8    MPI_Iallreduce of one double + MPI_Wait at once
 *                   (osu_iallreduce's latency without the overlapped
 *                   compute: the shim's nonblocking collective path)
 * Each is timed as OSU Micro-Benchmarks 7.4 do: after a warm-up, a batch of
 * back-to-back calls between two barriers, its time on each rank divided
 * by the calls; the figure is the average over ranks (osu's "Avg
 * Latency"), and the median of BATCHES such batches. Usage:
 *   coll_bench [calls per batch, default 200] [batches, default 15] */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>

enum { BATCHES_MAX = 101 };

static double median(double *v, int n) {
  qsort(v, n, sizeof(double), cmp);
  return v[(n - 1) / 2];
}

/* One collective, `op`: 0 Allreduce of `n` doubles, 1 Bcast of `n`
 * doubles, 2 Barrier, 3 Iallreduce of `n` doubles and its Wait. */
static void call(int op, double *in, double *out, int n) {
  if (op == 0) MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else if (op == 1) MPI_Bcast(in, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  else if (op == 2) MPI_Barrier(MPI_COMM_WORLD);
  else {
    MPI_Request r;
    MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

static double timed(int op, int n, int calls, int batches, double *in, double *out) {
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double t[BATCHES_MAX];
  for (int i = 0; i < calls / 10 + 10; i++) call(op, in, out, n);
  for (int b = 0; b < batches; b++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    for (int i = 0; i < calls; i++) call(op, in, out, n);
    double mine = (now_us() - t0) / calls, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t[b] = sum / size;
  }
  return median(t, batches);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int calls = argc > 1 ? atoi(argv[1]) : 200;
  int batches = argc > 2 ? atoi(argv[2]) : 15;
  if (calls < 1 || batches < 1 || batches > BATCHES_MAX) {
    if (rank == 0) fprintf(stderr, "coll_bench: calls >= 1, 1 <= batches <= %d\n", BATCHES_MAX);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int big = 131072;
  double *in = malloc(sizeof(double) * big), *out = malloc(sizeof(double) * big);
  for (int i = 0; i < big; i++) in[i] = rank + i;
  double a8 = timed(0, 1, calls, batches, in, out);
  /* 64 KiB takes far longer per call: fewer calls keep the run short. */
  double a2k = timed(0, 256, calls, batches, in, out);
  double a16k = timed(0, 2048, calls / 4 > 0 ? calls / 4 : 1, batches, in, out);
  double a64 = timed(0, 8192, calls / 10 > 0 ? calls / 10 : 1, batches, in, out);
  double a1m = timed(0, big, calls / 50 > 0 ? calls / 50 : 1, batches, in, out);
  double b8 = timed(1, 1, calls, batches, in, out);
  double b2k = timed(1, 256, calls, batches, in, out);
  double b64 = timed(1, 8192, calls / 10 > 0 ? calls / 10 : 1, batches, in, out);
  double bar = timed(2, 0, calls, batches, in, out);
  double ia8 = timed(3, 1, calls, batches, in, out);
  if (rank == 0)
    printf("allreduce_8=%.4f allreduce_2k=%.4f allreduce_16k=%.4f allreduce_64k=%.4f "
           "allreduce_1m=%.3f bcast_8=%.4f bcast_2k=%.4f bcast_64k=%.4f barrier=%.4f "
           "iallreduce_8=%.4f\n",
           a8, a2k, a16k, a64, a1m, b8, b2k, b64, bar, ia8);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
