/* How to carry the shim's 32-byte header with a large message, measured
 * without the shim: windows of 64 messages 0 -> 1 (osu_bw's pattern),
 * GB/s, median [min..max] over rounds, the three ways interleaved in
 * every round:
 *   native  the payload alone (what the application would get);
 *   struct  one message of a struct datatype {32 B header, payload} on
 *           MPI_BOTTOM, both sides (the shim's path above
 *           LOGGP_INLINE_MAX), which MPI moves by its non-contiguous
 *           protocol;
 *   split   the header alone on the application's communicator, the
 *           payload contiguous on a duplicate (tag per message), posted
 *           by the receiver once the header is in.
 * Build and run (one MPI job at a time on a shared machine):
 *   mpicc.openmpi -O2 -o /tmp/piggyback bench/piggyback.c
 *   flock /tmp/loggp-mpi.lock mpirun.openmpi -np 2 /tmp/piggyback
 *   (MPICH: mpicc.mpich, mpirun.mpich -genv UCX_NET_DEVICES lo) */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { W = 64, WAYS = 3 };
static MPI_Request r[2 * W];
static char hdr[W][32];
static MPI_Comm payload_comm;

static MPI_Datatype with_header(char *h, char *b, long n) {
  MPI_Aint d[2];
  int len[2] = {32, (int)n};
  MPI_Datatype t[2] = {MPI_BYTE, MPI_BYTE}, out;
  MPI_Get_address(h, &d[0]);
  MPI_Get_address(b, &d[1]);
  MPI_Type_create_struct(2, len, d, t, &out);
  MPI_Type_commit(&out);
  return out;
}

static void window(int way, int rank, char *buf, long n) {
  for (int j = 0; j < W; j++) {
    char *b = buf + n * j;
    MPI_Datatype t;
    if (rank == 0) {
      if (way == 0) {
        MPI_Isend(b, (int)n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[j]);
      } else if (way == 1) {
        t = with_header(hdr[j], b, n);
        MPI_Isend(MPI_BOTTOM, 1, t, 1, 7, MPI_COMM_WORLD, &r[j]);
        MPI_Type_free(&t);
      } else {
        MPI_Isend(b, (int)n, MPI_BYTE, 1, j, payload_comm, &r[W + j]);
        MPI_Isend(hdr[j], 32, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[j]);
      }
    } else {
      if (way == 1) {
        t = with_header(hdr[j], b, n);
        MPI_Irecv(MPI_BOTTOM, 1, t, 0, 7, MPI_COMM_WORLD, &r[j]);
        MPI_Type_free(&t);
      } else {
        MPI_Irecv(way == 0 ? b : hdr[j], way == 0 ? (int)n : 32, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                  &r[j]);
      }
    }
  }
  MPI_Waitall(rank == 0 && way == 2 ? 2 * W : W, r, MPI_STATUSES_IGNORE);
  if (rank == 1 && way == 2) {
    for (int j = 0; j < W; j++)
      MPI_Irecv(buf + n * j, (int)n, MPI_BYTE, 0, j, payload_comm, &r[j]);
    MPI_Waitall(W, r, MPI_STATUSES_IGNORE);
  }
}

int main(int argc, char **argv) {
  static const long sizes[] = {16384, 65536, 1048576};
  static const char *name[WAYS] = {"native", "struct", "split"};
  int rank;
  char ack = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_dup(MPI_COMM_WORLD, &payload_comm);
  char *buf = malloc(W * 1048576L);
  for (long i = 0; i < W * 1048576L; i++) buf[i] = (char)i;
  for (int s = 0; s < 3; s++) {
    long n = sizes[s];
    int rounds = n > 100000 ? 15 : 40;
    double v[WAYS][40];
    for (int it = -3; it < rounds; it++) {
      for (int way = 0; way < WAYS; way++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        window(way, rank, buf, n);
        if (rank == 0)
          MPI_Recv(&ack, 1, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
          MPI_Send(&ack, 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
        if (it >= 0) v[way][it] = W * n / (now_us() - t0) / 1e3;
      }
    }
    if (rank == 0) {
      printf("%7ld B:", n);
      for (int way = 0; way < WAYS; way++) {
        qsort(v[way], rounds, sizeof(double), cmp);
        printf("  %s %.2f [%.2f..%.2f]", name[way], v[way][rounds / 2], v[way][0],
               v[way][rounds - 1]);
      }
      printf("\n");
    }
  }
  MPI_Comm_free(&payload_comm);
  free(buf);
  MPI_Finalize();
  return 0;
}
