/* stage_bw: what staging costs a stream of mid-sized messages, without the
 * shim. Streaming windows as shim_bench's bw_16k (64 Isends of SIZE bytes
 * against 64 Irecvs into distinct parts of one buffer, Waitall, a 1-byte
 * acknowledgement), either straight from and into the application's
 * buffer (`direct`) or as the shim stages a message up to
 * LOGGP_INLINE_MAX: the sender copies the payload behind a 32-byte header
 * into a buffer of its own and sends that, the receiver receives into a
 * buffer of its own and copies the payload out after the Waitall
 * (`staged`). The difference is the copies' cost alone: no header is
 * read, no request is tracked. Three more modes move the 32-byte header
 * and the payload as one message of a struct datatype, built per message
 * as the shim builds it, on one side: the sender stages, the receiver
 * receives into `{header, buffer}` (`rstruct`, the shim's receives from
 * LOGGP_DIRECT_MIN); the sender sends `{header, buffer}`, the receiver
 * stages (`sstruct`, Open MPI's sends above its eager limit); both
 * (`both`).
 *
 *   mpirun -np 2 stage_bw direct|staged|rstruct|sstruct|both [SIZE] [WINDOWS]
 *   mpirun -np 2 stage_bw pingpong [SIZE] [REPS]
 *
 * `pingpong`: the half round trip of SIZE bytes straight from and into the
 * application's buffer (rank 0 MPI_Send + MPI_Recv, rank 1 MPI_Irecv +
 * MPI_Wait + MPI_Send), the best of 5 runs of REPS (default 2000), in us.
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
  static const char *modes[] = {"direct", "staged", "rstruct", "sstruct", "both", "pingpong"};
  int mode = pick_mode(argc, argv, modes, 6);
  if (mode < 0) {
    if (rank == 0)
      fprintf(stderr, "usage: stage_bw direct|staged|rstruct|sstruct|both|pingpong [SIZE] [WINDOWS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (mode == 5) {
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 16384;
    int reps = argc > 3 ? atoi(argv[3]) : 2000;
    if (n < 1 || reps < 1) MPI_Abort(MPI_COMM_WORLD, 2);
    char *b = malloc(n);
    memset(b, 1, n);
    double best = 1e30;
    for (int k = 0; k < 5; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = now_us();
      for (int i = 0; i < reps; i++) {
        if (rank == 0) {
          MPI_Send(b, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
          MPI_Recv(b, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
          MPI_Request q;
          MPI_Irecv(b, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &q);
          MPI_Wait(&q, MPI_STATUS_IGNORE);
          MPI_Send(b, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
      }
      t = (now_us() - t) / reps / 2;
      if (t < best) best = t;
    }
    if (rank == 0) printf("mode=pingpong size=%zu half_rtt=%.3f\n", n, best);
    free(b);
    MPI_Finalize();
    return 0;
  }
  /* Per side: 0 straight, 1 staged, 2 struct {header, buffer}. */
  static const int how_send[] = {0, 1, 1, 2, 2}, how_recv[] = {0, 1, 2, 1, 2};
  int how = rank == 0 ? how_send[mode] : how_recv[mode];
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
    start_at_zero(i, &t0);
    for (int j = 0; j < W; j++) {
      char *p = buf + (size_t)j * n;
      if (how == 2) {
        /* The header in the stage's first bytes, the payload in place. */
        int len[2] = {HDR, (int)n};
        MPI_Aint at[2];
        MPI_Datatype bytes[2] = {MPI_BYTE, MPI_BYTE}, t;
        MPI_Get_address(stage[j], &at[0]);
        MPI_Get_address(p, &at[1]);
        MPI_Type_create_struct(2, len, at, bytes, &t);
        MPI_Type_commit(&t);
        if (rank == 0)
          MPI_Isend(MPI_BOTTOM, 1, t, 1, 1, MPI_COMM_WORLD, &r[j]);
        else
          MPI_Irecv(MPI_BOTTOM, 1, t, 0, 1, MPI_COMM_WORLD, &r[j]);
        MPI_Type_free(&t);
      } else if (rank == 0) {
        if (how == 1) {
          memcpy(stage[j] + HDR, p, n);
          MPI_Isend(stage[j], (int)(n + HDR), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[j]);
        } else {
          MPI_Isend(p, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[j]);
        }
      } else if (how == 1) {
        MPI_Irecv(stage[j], (int)(n + HDR), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[j]);
      } else {
        MPI_Irecv(p, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[j]);
      }
    }
    MPI_Waitall(W, r, MPI_STATUSES_IGNORE);
    if (rank == 1 && how == 1)
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
