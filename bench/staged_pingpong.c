/* staged_pingpong: 8-byte ping-pongs whose sends do not take the shim's
 * slots (np = 2): MPI_Bsend + MPI_Recv of 8 bytes and MPI_Send of one
 * element of a vector of 2 ints (stride 2: 8 bytes packed) into 2 ints,
 * which the shim stages, a persistent send of 8 bytes (MPI_Send_init,
 * MPI_Start + MPI_Wait each round) against MPI_Recv, and MPI_Send against a
 * persistent receive (MPI_Recv_init, MPI_Start + MPI_Wait).
 * Half round trip, median of 15 interleaved batches of 2000 round trips,
 * ns; run it natively and through shim builds side by side:
 *
 *   mpirun -np 2 staged_pingpong
 *   mpirun -np 2 -x LD_PRELOAD=.../libloggp-openmpi.so -x LOGGP_VT=on staged_pingpong
 *
 * Prints "bsend=NS vector=NS persistent=NS precv=NS" from rank 0. */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>

enum { BATCHES = 15, ROUNDS = 2000, MODES = 4 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (r == 0) fprintf(stderr, "staged_pingpong: needs exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int bs = 1 << 20;
  void *att = malloc((size_t)bs);
  MPI_Buffer_attach(att, bs);
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 2, MPI_INT, &v);
  MPI_Type_commit(&v);
  char b[8] = {0};
  int iv[4] = {0}, ic[2];
  static double res[MODES][BATCHES];
  const int peer = 1 - r;
  MPI_Request ps, pr;
  MPI_Send_init(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &ps);
  MPI_Recv_init(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &pr);
  for (int k = 0; k < BATCHES; k++)
    for (int m = 0; m < MODES; m++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_ns();
      for (int i = 0; i < ROUNDS; i++)
        for (int sender = 0; sender < 2; sender++) {
          if (r == sender) {
            if (m == 0) {
              MPI_Bsend(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            } else if (m == 1) {
              MPI_Send(iv, 1, v, peer, 1, MPI_COMM_WORLD);
            } else if (m == 2) {
              MPI_Start(&ps);
              MPI_Wait(&ps, MPI_STATUS_IGNORE);
            } else {
              MPI_Send(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
          } else {
            if (m == 1) {
              MPI_Recv(ic, 2, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (m == 3) {
              MPI_Start(&pr);
              MPI_Wait(&pr, MPI_STATUS_IGNORE);
            } else {
              MPI_Recv(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
          }
        }
      res[m][k] = (now_ns() - t0) / (2.0 * ROUNDS);
    }
  if (r == 0) {
    for (int m = 0; m < MODES; m++) qsort(res[m], BATCHES, sizeof(double), cmp);
    printf("bsend=%.0f vector=%.0f persistent=%.0f precv=%.0f\n", res[0][BATCHES / 2],
           res[1][BATCHES / 2], res[2][BATCHES / 2], res[3][BATCHES / 2]);
  }
  void *back;
  int bsz;
  MPI_Request_free(&ps);
  MPI_Request_free(&pr);
  MPI_Buffer_detach(&back, &bsz);
  free(att);
  MPI_Type_free(&v);
  MPI_Finalize();
  return 0;
}
