/* stage_bw: what staging costs a stream of mid-sized messages, without the
 * shim. Streaming windows as shim_bench's bw_16k (64 Isends of SIZE bytes
 * against 64 Irecvs into distinct parts of one buffer, Waitall, a 1-byte
 * acknowledgement), either straight from and into the application's
 * buffer (`direct`) or as the shim stages a message up to
 * LOGGP_INLINE_MAX: the sender copies the payload behind a 32-byte header
 * into a buffer of its own and sends that, the receiver receives into a
 * buffer of its own and copies the payload out after the Waitall
 * (`staged`). The difference is the copies' cost alone: no header is
 * read, no request is tracked.
 *
 *   mpirun -np 2 stage_bw direct|staged [SIZE] [WINDOWS]
 *
 * Prints one line: mode, size, GB/s over WINDOWS windows (default 16384
 * bytes, 2000 windows, after 10 to warm up). */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 64
#define HDR 32

int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2 || (strcmp(argv[1], "direct") && strcmp(argv[1], "staged"))) {
    if (rank == 0) fprintf(stderr, "usage: stage_bw direct|staged [SIZE] [WINDOWS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int staged = strcmp(argv[1], "staged") == 0;
  size_t n = argc > 2 ? (size_t)atol(argv[2]) : 16384;
  int windows = argc > 3 ? atoi(argv[3]) : 2000;
  if (n < 1 || windows < 1) MPI_Abort(MPI_COMM_WORLD, 2);
  char *buf = malloc(n * W), *stage[W], ack = 0;
  memset(buf, rank + 1, n * W);
  for (int j = 0; j < W; j++) {
    stage[j] = malloc(n + HDR);
    memset(stage[j], 0, n + HDR);
  }
  MPI_Request r[W];
  double t0 = 0;
  for (int i = -10; i < windows; i++) {
    if (i == 0) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_us();
    }
    for (int j = 0; j < W; j++) {
      char *p = buf + (size_t)j * n;
      if (rank == 0) {
        if (staged) {
          memcpy(stage[j] + HDR, p, n);
          MPI_Isend(stage[j], (int)(n + HDR), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[j]);
        } else {
          MPI_Isend(p, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[j]);
        }
      } else if (staged) {
        MPI_Irecv(stage[j], (int)(n + HDR), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[j]);
      } else {
        MPI_Irecv(p, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[j]);
      }
    }
    MPI_Waitall(W, r, MPI_STATUSES_IGNORE);
    if (rank == 1 && staged)
      for (int j = 0; j < W; j++) memcpy(buf + (size_t)j * n, stage[j] + HDR, n);
    if (rank == 0) MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
  }
  double us = now_us() - t0;
  if (rank == 0)
    printf("mode=%s size=%zu bw=%.3f\n", argv[1], n, (double)n * W * windows / us / 1e3);
  for (int j = 0; j < W; j++) free(stage[j]);
  free(buf);
  MPI_Finalize();
  return 0;
}
