/* split_bw: what the shim's split protocol costs a stream of messages
 * above LOGGP_INLINE_MAX, without the shim. Windows of 64 messages of SIZE
 * bytes from and into distinct parts of one buffer, Waitall, a 1-byte
 * acknowledgement, as stage_bw's. Modes:
 *   direct  the messages themselves;
 *   built   as the shim splits them: a 32-byte header on the application's
 *           envelope, the payload on a duplicate communicator tagged by its
 *           index; the receiver posts each header's receive as a struct
 *           datatype {header, buffer} (a receive accepts a whole message or
 *           a header alone), built, committed and freed per receive, and
 *           posts a payload's receive once its header is in (Testsome);
 *   kept    as `built`, with the 64 struct datatypes built once (the
 *           shim's kept headers, `wire::Kept`);
 *   staged  as `built`, each header received into a buffer of 32 + 16384
 *           bytes instead of a struct datatype.
 *
 *   mpirun -np 2 split_bw direct|built|kept|staged [SIZE] [WINDOWS]
 *
 * Prints one line: mode, size, GB/s over WINDOWS windows (default 20000
 * bytes, 1000 windows, after 10 to warm up). */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 64
#define HDR 32
#define INLINE_MAX 16384

int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static const char *modes[] = {"direct", "built", "kept", "staged"};
  int mode = pick_mode(argc, argv, modes, 4);
  size_t n = argc > 2 ? (size_t)atol(argv[2]) : 20000;
  int windows = argc > 3 ? atoi(argv[3]) : 1000;
  if (mode < 0 || n < 1 || n > (1u << 30) || windows < 1) {
    if (rank == 0)
      fprintf(stderr, "usage: split_bw direct|built|kept|staged [SIZE] [WINDOWS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm payload;
  MPI_Comm_dup(MPI_COMM_WORLD, &payload);
  char *buf = malloc(n * W), (*hdr)[HDR] = calloc(W, HDR), ack = 0;
  char *stage = malloc((size_t)(HDR + INLINE_MAX) * W);
  memset(buf, rank + 1, n * W);
  MPI_Datatype kept[W];
  for (int j = 0; j < W && mode == 2 && rank == 1; j++) {
    int len[2] = {HDR, (int)n};
    MPI_Aint at[2];
    MPI_Datatype bytes[2] = {MPI_BYTE, MPI_BYTE};
    MPI_Get_address(hdr[j], &at[0]);
    MPI_Get_address(buf + (size_t)j * n, &at[1]);
    MPI_Type_create_struct(2, len, at, bytes, &kept[j]);
    MPI_Type_commit(&kept[j]);
  }
  MPI_Request r[2 * W];
  int idx[W];
  double t0 = 0;
  for (int i = -10; i < windows; i++) {
    start_at_zero(i, &t0);
    if (rank == 0) {
      int k = 0;
      for (int j = 0; j < W; j++) {
        char *p = buf + (size_t)j * n;
        if (mode == 0) {
          MPI_Isend(p, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[k++]);
        } else {
          MPI_Isend(p, (int)n, MPI_BYTE, 1, j, payload, &r[k++]);
          MPI_Isend(hdr[j], HDR, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[k++]);
        }
      }
      MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      continue;
    }
    for (int j = 0; j < W; j++) {
      char *p = buf + (size_t)j * n;
      if (mode == 0) {
        MPI_Irecv(p, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[j]);
      } else if (mode == 1) {
        int len[2] = {HDR, (int)n};
        MPI_Aint at[2];
        MPI_Datatype bytes[2] = {MPI_BYTE, MPI_BYTE}, t;
        MPI_Get_address(hdr[j], &at[0]);
        MPI_Get_address(p, &at[1]);
        MPI_Type_create_struct(2, len, at, bytes, &t);
        MPI_Type_commit(&t);
        MPI_Irecv(MPI_BOTTOM, 1, t, 0, 1, MPI_COMM_WORLD, &r[j]);
        MPI_Type_free(&t);
      } else if (mode == 2) {
        MPI_Irecv(MPI_BOTTOM, 1, kept[j], 0, 1, MPI_COMM_WORLD, &r[j]);
      } else {
        MPI_Irecv(stage + (size_t)j * (HDR + INLINE_MAX), HDR + INLINE_MAX, MPI_BYTE, 0, 1,
                  MPI_COMM_WORLD, &r[j]);
      }
    }
    if (mode == 0) {
      MPI_Waitall(W, r, MPI_STATUSES_IGNORE);
    } else {
      for (int done = 0; done < W;) {
        int got;
        MPI_Testsome(W, r, &got, idx, MPI_STATUSES_IGNORE);
        for (int g = 0; g < got; g++, done++)
          MPI_Irecv(buf + (size_t)idx[g] * n, (int)n, MPI_BYTE, 0, idx[g], payload,
                    &r[W + idx[g]]);
      }
      MPI_Waitall(W, r + W, MPI_STATUSES_IGNORE);
    }
    MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
  }
  double us = now_us() - t0;
  if (rank == 0)
    printf("mode=%s size=%zu bw=%.3f\n", argv[1], n, (double)n * W * windows / us / 1e3);
  for (int j = 0; j < W && mode == 2 && rank == 1; j++) MPI_Type_free(&kept[j]);
  MPI_Comm_free(&payload);
  free(stage);
  free(hdr);
  free(buf);
  MPI_Finalize();
  return 0;
}
