/* overlap.c: latency overlaps computation (DESIGN.md, "Virtual time").
 * Run with np = 2 as  overlap <compute_us> <repetitions>.
 * Each repetition: rank 1 posts an 8-byte MPI_Irecv; at the same instant
 * (both ranks on one host read the same CLOCK_MONOTONIC) rank 0 sends and
 * rank 1 starts computing (busy loop) compute_us, then calls MPI_Wait.
 * Rank 1 prints
 *   "overlap: wait_us=<median time inside MPI_Wait> wait_us_p10=.. wait_us_min=..
 *    compute_us=C n=N".
 * A correct shim with L well below compute_us gives a Wait as short as
 * native (the latency was hidden by the computation); with L above it, the
 * Wait returns about L - compute_us late. Data are checked; on failure
 * "FAIL overlap rank R: ..." and a non-zero exit. */
#include "common.h"

enum { MAXREP = 1000 };
static double w[MAXREP];

int main(int argc, char **argv) {
  init_common("overlap", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np == 2, "needs 2 ranks, got %d", np);
  CHECK(argc == 3, "usage: overlap <compute_us> <repetitions>");
  double compute = atof(argv[1]);
  int reps = atoi(argv[2]);
  CHECK(reps >= 1 && reps <= MAXREP, "repetitions must be 1..%d", MAXREP);
  unsigned char b[8];
  int n = 0, skipped = 0;
  for (int k = -5; k < reps; k++) {
    int seq = k + 5;
    /* Both ranks start at the same instant T of the host's CLOCK_MONOTONIC,
     * chosen by rank 0 1.5 ms ahead (no barrier: the shim may emulate
     * collectives, and their exit skew would blur the measurement). */
    double start;
    if (my_rank == 1) {
      MPI_Request r;
      MPI_OK(MPI_Recv(&start, 1, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      MPI_OK(MPI_Irecv(b, 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &r));
      /* A start message delayed past T (the machine is shared) spoils
       * this repetition only: it is not counted. */
      int late = now_us() >= start;
      busy_until(start);
      busy_until(start + compute);
      double t0 = now_us();
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
      double t1 = now_us();
      CHECK(verify(b, 8, 0, seq) < 0, "message %d differs", seq);
      if (late) skipped++;
      if (k >= 0 && !late) w[n++] = t1 - t0;
      /* Rank 0 may choose the next start only once this one is over. */
      MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 5, MPI_COMM_WORLD));
    } else {
      start = now_us() + 1500;
      MPI_OK(MPI_Send(&start, 1, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD));
      fill(b, 8, 0, seq);
      busy_until(start);
      MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
  }
  if (my_rank == 1) {
    CHECK(n >= reps / 2, "%d of %d repetitions spoilt by a late start message", skipped,
          reps + 5);
    printf("overlap:");
    put_stat("wait_us", w, n);
    printf(" compute_us=%.0f n=%d skipped=%d\n", compute, n, skipped);
  }
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
