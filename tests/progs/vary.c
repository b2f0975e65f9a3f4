/* vary.c: the realised distribution of a varied L (LOGGP_L_DIST) and the
 * order it must keep, for cli/tests/mpi_vary.rs. Run with np = 2 as
 *   vary oneway <repetitions>
 *       rank 0 sends 8 bytes holding its send time, rank 1 takes the
 *       one-way time (arrival - send time: one host, one CLOCK_MONOTONIC)
 *       and answers with 0 bytes; rank 1 prints
 *       "vary oneway: ow=<median> ow_p25= ow_p75= ow_mean= n=" (us)
 *   vary osend <repetitions>
 *       time inside MPI_Send of 8 bytes on rank 0 (o_s; LOGGP_O_S_DIST),
 *       rank 1 answering with 0 bytes; rank 0 prints
 *       "vary osend: t=<median> t_p25= t_p75= n=" (us)
 *   vary orecv <repetitions>
 *       time inside MPI_Recv on rank 1 of an 8-byte message that arrived
 *       200 us before (o_r; LOGGP_O_R_DIST); rank 1 prints
 *       "vary orecv: t=<median> t_p25= t_p75= n=" (us)
 *   vary order <rounds>
 *       each round rank 0 Isends 20 8-byte messages of one tag back to
 *       back; rank 1 has posted 20 Irecvs and completes them with
 *       MPI_Waitany: each must complete in the order sent, since a message
 *       may not be seen before an earlier one of its channel (it fails
 *       with the index that came first); rank 1 prints "vary order: PASS"
 * On failure "FAIL vary rank R: ..." and exit non-zero. */
#include "common.h"

enum { MAXREP = 5000, WARMUP = 20, BURST = 20 };
static double ow[MAXREP];

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  init_common("vary", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np == 2, "needs 2 ranks, got %d", np);
  CHECK(argc == 3, "usage: vary oneway|order <repetitions>");
  int reps = atoi(argv[2]);
  CHECK(reps >= 1 && reps <= MAXREP, "repetitions must be 1..%d", MAXREP);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!strcmp(argv[1], "oneway")) {
    double msg;
    for (int k = -WARMUP; k < reps; k++) {
      if (my_rank == 0) {
        msg = now_us();
        MPI_OK(MPI_Send(&msg, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD));
        MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else {
        MPI_OK(MPI_Recv(&msg, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t = now_us();
        if (k >= 0) ow[k] = t - msg;
        MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
      }
    }
    if (my_rank == 1) {
      double sum = 0;
      for (int i = 0; i < reps; i++) sum += ow[i];
      qsort(ow, (size_t)reps, sizeof *ow, cmp);
      printf("vary oneway: ow=%.3f ow_p25=%.3f ow_p75=%.3f ow_mean=%.3f n=%d\n", ow[reps / 2],
             ow[reps / 4], ow[3 * reps / 4], sum / reps, reps);
    }
  } else if (!strcmp(argv[1], "osend") || !strcmp(argv[1], "orecv")) {
    int send = !strcmp(argv[1], "osend");
    unsigned char b[8];
    for (int k = -WARMUP; k < reps; k++) {
      if (my_rank == 0) {
        if (!send) MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        fill(b, 8, 0, k + WARMUP);
        double t0 = now_us();
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        if (send && k >= 0) ow[k] = now_us() - t0;
        if (send) MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else {
        if (!send) {
          MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
          busy_until(now_us() + 200);
        }
        double t0 = now_us();
        MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (!send && k >= 0) ow[k] = now_us() - t0;
        CHECK(verify(b, 8, 0, k + WARMUP) < 0, "message %d differs", k + WARMUP);
        if (send) MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
      }
    }
    if (my_rank == (send ? 0 : 1)) {
      qsort(ow, (size_t)reps, sizeof *ow, cmp);
      printf("vary %s: t=%.3f t_p25=%.3f t_p75=%.3f n=%d\n", argv[1], ow[reps / 2], ow[reps / 4],
             ow[3 * reps / 4], reps);
    }
  } else if (!strcmp(argv[1], "order")) {
    unsigned char b[BURST][8];
    MPI_Request r[BURST];
    for (int k = 0; k < reps; k++) {
      if (my_rank == 0) {
        MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < BURST; i++) {
          fill(b[i], 8, 0, k * BURST + i);
          MPI_OK(MPI_Isend(b[i], 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &r[i]));
        }
        MPI_OK(MPI_Waitall(BURST, r, MPI_STATUSES_IGNORE));
      } else {
        for (int i = 0; i < BURST; i++)
          MPI_OK(MPI_Irecv(b[i], 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &r[i]));
        MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 4, MPI_COMM_WORLD));
        for (int n = 0; n < BURST; n++) {
          int i;
          MPI_OK(MPI_Waitany(BURST, r, &i, MPI_STATUS_IGNORE));
          CHECK(i == n, "round %d: message %d completed before message %d (overtaking)", k, i, n);
          CHECK(verify(b[i], 8, 0, k * BURST + i) < 0, "round %d: message %d differs", k, i);
        }
      }
    }
    if (my_rank == 1) printf("vary order: PASS rounds=%d\n", reps);
  } else {
    CHECK(0, "unknown mode %s", argv[1]);
  }
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
