/* after_pause: time inside one 8-byte MPI_Send, and inside one MPI_Recv of
 * a message that has arrived, each right after the calling rank spun for
 * a pause of its own, at np = 2. This is how `loggp calibrate`'s kernels
 * time o_s and o_r (calibrate/prtt.c: a `wait` before each timed call,
 * 40 us to 1 ms as the knobs grow), and where the shim's clock pays for
 * what it did not read during the pause (shim/src/clock.rs).
 *
 *   mpirun -np 2 [-x LD_PRELOAD=... -x LOGGP_L=60us] after_pause PAUSE_NS [REPS]
 *
 * Rank 0 spins PAUSE_NS, times MPI_Send; rank 1 probes the message, spins
 * PAUSE_NS, times MPI_Recv, and acknowledges. Prints one line of
 * key=value: the median and quartiles of each call's time, ns. */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, i, reps;
  double pause, *t, q[3];
  char b[8] = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: after_pause PAUSE_NS [REPS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  pause = atof(argv[1]);
  reps = argc > 2 ? atoi(argv[2]) : 400;
  if (reps < 4) reps = 4;
  t = malloc(sizeof(double) * (size_t)reps);
  for (i = 0; i < reps; i++) {
    if (rank == 0) {
      spin_ns(pause);
      double t0 = now_ns();
      MPI_Send(b, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      t[i] = now_ns() - t0;
      MPI_Recv(b, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Probe(0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      spin_ns(pause);
      double t0 = now_ns();
      MPI_Recv(b, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      t[i] = now_ns() - t0;
      MPI_Send(b, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  if (rank < 2) {
    qsort(t, (size_t)reps, sizeof(double), cmp);
    q[0] = t[reps / 4], q[1] = t[reps / 2], q[2] = t[3 * reps / 4];
  }
  if (rank == 1) MPI_Send(q, 3, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
  if (rank == 0) {
    double r[3];
    MPI_Recv(r, 3, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("pause_ns=%.0f send_ns=%.0f send_p25=%.0f send_p75=%.0f recv_ns=%.0f recv_p25=%.0f "
           "recv_p75=%.0f\n",
           pause, q[1], q[0], q[2], r[1], r[0], r[2]);
  }
  free(t);
  MPI_Finalize();
  return 0;
}
