/* inflight.c: emulated CPU time must not stall transfers already under way
 * (DESIGN.md §1, "Emulated CPU time is CPU time, not a stopped network").
 *
 * Run with np = 2 as  inflight <bytes> <repetitions>. Rank 1 posts two
 * receives of <bytes>; after a barrier rank 0 starts two MPI_Isend of
 * <bytes> back to back, then waits for both. Rank 1 times, from its own
 * barrier exit, the completion of the first receive (first_us) and of the
 * second (second_us); both ranks share one host's CLOCK_MONOTONIC, and a
 * barrier lets ranks go within a microsecond or two of each other. With
 * LOGGP_O_S=+50us a LogGP machine delivers the first message about o_s +
 * transit after the start, whatever the second send costs; a shim whose
 * o_s spin stops the native transfer of the first message (a rendezvous
 * waiting for the sender to re-enter MPI) delivers it with the second.
 * Rank 1 prints "inflight: first_us=<median> ... second_us=<median> ..."
 * (each with _p10 and _min); data are checked. */
#include "common.h"

int main(int argc, char **argv) {
  init_common("inflight", &argc, &argv);
  int n = argc > 1 ? atoi(argv[1]) : 65536;
  int reps = argc > 2 ? atoi(argv[2]) : 50;
  unsigned char *a = malloc((size_t)n), *b = malloc((size_t)n);
  double *first = calloc((size_t)reps, sizeof(double));
  double *second = calloc((size_t)reps, sizeof(double));
  for (int k = -5; k < reps; k++) {
    int seq = k + 10;
    MPI_Request r[2];
    if (my_rank == 0) {
      fill(a, (size_t)n, 0, seq);
      fill(b, (size_t)n, 0, seq + 1000);
      MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
      MPI_OK(MPI_Isend(a, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[0]));
      MPI_OK(MPI_Isend(b, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r[1]));
      MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    } else if (my_rank == 1) {
      MPI_OK(MPI_Irecv(a, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[0]));
      MPI_OK(MPI_Irecv(b, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[1]));
      MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
      double t0 = now_us();
      MPI_OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
      double t1 = now_us();
      MPI_OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
      double t2 = now_us();
      CHECK(verify(a, (size_t)n, 0, seq) < 0, "first message differs");
      CHECK(verify(b, (size_t)n, 0, seq + 1000) < 0, "second message differs");
      if (k >= 0) {
        first[k] = t1 - t0;
        second[k] = t2 - t0;
      }
    } else {
      MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* Both ranks out of the exchange before the next barrier. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  }
  if (my_rank == 1) {
    printf("inflight:");
    put_stat("first_us", first, reps);
    put_stat("second_us", second, reps);
    printf(" n=%d bytes=%d\n", reps, n);
  }
  MPI_Finalize();
  return 0;
}
