/* after_burst: whether a burst of messages changes the emulated transit of
 * the ping-pongs after it (the gate's per-source floors,
 * loggp_core::vt::RecvGate::reserve_for). Rank 0 and 1 ping-pong SIZE
 * bytes 30 times (a Barrier before each; rank 1 spins 5 us before its
 * receive, so that the message is natively there before its emulated
 * arrival), then rank 0 sends rank 1 a burst of 32 messages of SIZE bytes
 * (Isend, Irecv, Waitall), then they ping-pong again. Prints the median
 * half round trip before and after the burst, us; under a floor they
 * should agree.
 *
 *   mpicc -O2 -o after_burst bench/after_burst.c
 *   mpirun -np 2 -x LD_PRELOAD=target/release/libloggp-openmpi.so \
 *     -x LOGGP_VT=on -x LOGGP_G=256MB/s ./after_burst 4096
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define REPS 30
#define BURST 32

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pingpong(int rank, char *b, int s) {
  double t[REPS];
  for (int i = 0; i < REPS; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(b, s, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(b, s, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      double w0 = MPI_Wtime();
      while (MPI_Wtime() - w0 < 5e-6) {
      }
      MPI_Recv(b, s, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(b, s, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
    t[i] = (MPI_Wtime() - t0) / 2 * 1e6;
  }
  qsort(t, REPS, sizeof t[0], cmp);
  return t[REPS / 2];
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, s = argc > 1 ? atoi(argv[1]) : 4096;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char *b = calloc((size_t)s * BURST, 1);
  double before = pingpong(rank, b, s);
  MPI_Request r[BURST];
  int n = 0;
  for (int i = 0; i < BURST && rank < 2; i++, n++) {
    if (rank == 0)
      MPI_Isend(b + (size_t)i * s, s, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r[i]);
    else
      MPI_Irecv(b + (size_t)i * s, s, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[i]);
  }
  MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
  double after = pingpong(rank, b, s);
  if (rank == 0) printf("after_burst size=%d half_rtt_before=%.2f after=%.2f\n", s, before, after);
  free(b);
  MPI_Finalize();
  return 0;
}
