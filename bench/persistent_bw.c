/* persistent_bw: streaming bandwidth of large messages by nonblocking and
 * by persistent requests, on each side independently. Windows of 16
 * messages of SIZE bytes (default 1 MiB) from and into distinct parts of
 * one buffer, Waitall, a 1-byte acknowledgement; GB/s, the median of 30
 * windows after 3 to warm up, for each of four pairings, ROUNDS times
 * interleaved (default 3):
 *   isend/irecv                 MPI_Isend   against MPI_Irecv
 *   persistent/persistent       MPI_Send_init + MPI_Startall against
 *                               MPI_Recv_init + MPI_Startall
 *   isend/persistent-recv       MPI_Isend   against persistent receives
 *   persistent-send/irecv       persistent sends against MPI_Irecv
 * Run natively and with the shim preloaded (LOGGP_VT=on): the shim sends a
 * nonblocking send above LOGGP_INLINE_MAX split (the payload as the
 * application gave it), and a persistent one by a struct datatype.
 *
 *   mpirun -np 2 persistent_bw [SIZE] [ROUNDS]
 */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>

#define W 16
#define N 30

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int size = argc > 1 ? atoi(argv[1]) : 1 << 20;
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  if (size < 1 || rounds < 1) {
    if (rank == 0) fprintf(stderr, "persistent_bw: SIZE and ROUNDS must be positive\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static const char *const names[4] = {"isend/irecv", "persistent/persistent",
                                       "isend/persistent-recv", "persistent-send/irecv"};
  char *buf = malloc((size_t)W * (size_t)size), ack = 0;
  MPI_Request r[W], pr[W];
  double t[N];
  for (int j = 0; j < W; j++) {
    char *p = buf + (size_t)j * (size_t)size;
    if (rank == 0) MPI_Send_init(p, size, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &pr[j]);
    else MPI_Recv_init(p, size, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &pr[j]);
  }
  for (int round = 0; round < rounds; round++)
    for (int kind = 0; kind < 4; kind++) {
      /* Persistent on this rank's side? */
      int persistent = rank == 0 ? (kind == 1 || kind == 3) : (kind == 1 || kind == 2);
      for (int i = -3; i < N; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        MPI_Request *q = persistent ? pr : r;
        if (persistent) {
          MPI_Startall(W, pr);
        } else {
          for (int j = 0; j < W; j++) {
            char *p = buf + (size_t)j * (size_t)size;
            if (rank == 0) MPI_Isend(p, size, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r[j]);
            else MPI_Irecv(p, size, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &r[j]);
          }
        }
        MPI_Waitall(W, q, MPI_STATUSES_IGNORE);
        if (rank == 0) MPI_Recv(&ack, 1, MPI_BYTE, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(&ack, 1, MPI_BYTE, 0, 6, MPI_COMM_WORLD);
        if (i >= 0) t[i] = (double)W * size / (now_us() - t0) / 1e3; /* GB/s */
      }
      qsort(t, N, sizeof t[0], cmp);
      if (rank == 0)
        printf("round %d size %d %-22s %.2f GB/s [%.2f..%.2f]\n", round, size, names[kind], t[N / 2],
               t[0], t[N - 1]);
    }
  for (int j = 0; j < W; j++) MPI_Request_free(&pr[j]);
  free(buf);
  MPI_Finalize();
  return 0;
}
