/* rate: osu_mbw_mr-style message rate, two ranks: rank 0 posts a window of
 * 64 8-byte MPI_Isend, rank 1 64 MPI_Irecv, both MPI_Waitall, then a 1-byte
 * acknowledgement 1 -> 0 (`rate WINDOWS wait`: one MPI_Wait per request
 * instead of the Waitall). `rate WINDOWS` (default 20000) prints
 * "rate M_PER_S NS_PER_MSG" from rank 0. With NBC set in the environment,
 * one MPI_Comm_idup and one MPI_Iallreduce run first (as the shim's
 * start-up does). Used by scripts/bench-instr.sh (instruction counts per
 * message under callgrind) and by hand for timings. */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { W = 64 };

/* The window's completion: one MPI_Waitall, or one MPI_Wait per request. */
static void complete(int each, MPI_Request *r, MPI_Status *st) {
  if (!each) {
    MPI_Waitall(W, r, st);
    return;
  }
  for (int j = 0; j < W; j++) MPI_Wait(&r[j], &st[j]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (getenv("NBC")) {
    MPI_Comm c;
    MPI_Request q;
    MPI_Comm_idup(MPI_COMM_WORLD, &c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    int x = 1, y;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
  }
  int nw = argc > 1 ? atoi(argv[1]) : 20000;
  int each = argc > 2 && strcmp(argv[2], "wait") == 0;
  static MPI_Request r[W];
  static MPI_Status st[W];
  static char buf[W * 8];
  char ack = 0;
  double t0 = 0;
  for (int i = -100; i < nw; i++) {
    start_at_zero(i, &t0);
    if (rank == 0) {
      for (int j = 0; j < W; j++) MPI_Isend(buf + 8 * j, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[j]);
      complete(each, r, st);
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      for (int j = 0; j < W; j++) MPI_Irecv(buf + 8 * j, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[j]);
      complete(each, r, st);
      MPI_Send(&ack, 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
    }
  }
  double t = now_us() - t0;
  if (rank == 0) printf("rate %.3f %.1f\n", (double)nw * W / t, t * 1e3 / ((double)nw * W));
  MPI_Finalize();
  return 0;
}
