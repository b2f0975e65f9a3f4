/* spin_pingpong: 8-byte MPI_Send / MPI_Recv round trips at np = 2 where
 * each rank spins SPIN_NS right after each MPI_Recv, as an application
 * computing that long would (an o_r the program adds itself). Natively it
 * shows what a busy rank costs the round trip beyond the spins; through the
 * shim with LOGGP_O_R=SPIN and no spin it shows the same for the emulated
 * o_r (README, "Calibration report").
 *
 *   mpirun -np 2 [-x LD_PRELOAD=... -x LOGGP_O_R=20us] spin_pingpong SPIN_NS [REPS]
 *
 * Prints from rank 0: the median and quartiles of the round trip, ns. */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, i, reps;
  double spin, *t;
  char b[8] = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: spin_pingpong SPIN_NS [REPS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  spin = atof(argv[1]);
  reps = argc > 2 ? atoi(argv[2]) : 2000;
  if (reps < 4) reps = 4;
  t = malloc(sizeof(double) * (size_t)reps);
  for (i = -200; i < reps; i++) {
    double t0 = now_ns();
    if (rank == 0) {
      MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (spin > 0) spin_ns(spin);
    } else if (rank == 1) {
      MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (spin > 0) spin_ns(spin);
      MPI_Send(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
    if (i >= 0) t[i] = now_ns() - t0;
  }
  if (rank == 0) {
    qsort(t, (size_t)reps, sizeof(double), cmp);
    printf("spin_ns=%.0f rtt_ns=%.0f rtt_p25=%.0f rtt_p75=%.0f\n", spin, t[reps / 2], t[reps / 4],
           t[3 * reps / 4]);
  }
  free(t);
  MPI_Finalize();
  return 0;
}
