/* heap.c: MPI calls leave the application's malloc as they found it. glibc
 * serves a block of at least M_MMAP_THRESHOLD (128 KiB at start) with a
 * mapping of its own, and raises the threshold to the size of any such
 * block freed (mallopt(3), "dynamic mmap threshold"). The shim's start-up
 * once freed a 1 MiB buffer: the application's later 1 MiB blocks then
 * came from the heap, at another alignment, and MPICH moved them 30 %
 * slower (a 1 MiB half round trip of 155 against 118 us).
 *
 * Any np (ranks above 1 take part in the collectives only). After each phase
 * (MPI_Init; 1 MiB point-to-point, blocking and nonblocking, each way; a 1
 * MiB message probed, then received; with the argument "coll", 1 MiB
 * Allreduce and Bcast) each rank checks that a
 * 1 MiB malloc is one of glibc's mappings (mallinfo2's hblks grows by one),
 * as it is in a fresh process. The program itself frees no block of 128 KiB
 * or more before its last check. (Not checked after MPI_Finalize: Open
 * MPI 4.1's own raises the threshold natively.)
 *
 * Prints "heap: ok np=N" on rank 0, or "FAIL heap rank R: ...: after
 * <phase>: ..." and exits non-zero. */
#define _GNU_SOURCE
#include <malloc.h>

#include "common.h"

enum { N = 1 << 20 };

/* Whether a block of N bytes comes from a mapping of its own now. The
 * block is kept: freeing it would raise the threshold itself. */
static int mapped_now(void) {
  size_t before = mallinfo2().hblks;
  char *p = malloc(N);
  size_t after = mallinfo2().hblks;
  return p != NULL && after == before + 1;
}

#define MAPPED(phase) CHECK(mapped_now(), "after %s: a %d-byte malloc came from the heap", phase, N)

int main(int argc, char **argv) {
  prog_name = "heap";
  CHECK(mapped_now(), "before MPI_Init: a %d-byte malloc came from the heap", N);
  MPI_OK(MPI_Init(&argc, &argv));
  int np;
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MAPPED("MPI_Init");
  /* The buffers are made once, before the traffic, as an application would. */
  char *buf = malloc(N);
  CHECK(buf != NULL, "malloc");
  memset(buf, my_rank + 1, N);
  if (my_rank < 2) {
    int peer = 1 - my_rank;
    MPI_Request r[2];
    for (int i = 0; i < 3; i++) {
      if (my_rank == 0) {
        MPI_OK(MPI_Send(buf, N, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
        MPI_OK(MPI_Recv(buf, N, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else {
        MPI_OK(MPI_Recv(buf, N, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Send(buf, N, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
      }
    }
    MAPPED("blocking 1 MiB messages");
    char *other = malloc(N);
    CHECK(other != NULL, "malloc");
    for (int i = 0; i < 3; i++) {
      MPI_OK(MPI_Irecv(other, N, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r[0]));
      MPI_OK(MPI_Isend(buf, N, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r[1]));
      MPI_Status sts[2];
      MPI_OK(MPI_Waitall(2, r, sts));
    }
    MAPPED("nonblocking 1 MiB messages");
    if (my_rank == 0) {
      MPI_OK(MPI_Send(buf, N, MPI_BYTE, peer, 3, MPI_COMM_WORLD));
    } else {
      MPI_Status st;
      int count = 0;
      MPI_OK(MPI_Probe(peer, 3, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, MPI_BYTE, &count);
      CHECK(count == N, "probed count %d, expected %d", count, N);
      MPI_OK(MPI_Recv(other, N, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(other[0] == 1 && other[N - 1] == 1, "probed message's data");
    }
    MAPPED("a probed 1 MiB message");
  }
  /* Collectives of 1 MiB, whose temporary buffers are large (with the
   * argument "coll": those of Open MPI 4.1 and MPICH 4.0 raise the
   * threshold natively). */
  if (argc > 1 && strcmp(argv[1], "coll") == 0) {
    double *in = malloc(N), *out = malloc(N);
    CHECK(in != NULL && out != NULL, "malloc");
    for (int i = 0; i < N / 8; i++) in[i] = my_rank + i % 7;
    for (int i = 0; i < 3; i++) {
      MPI_OK(MPI_Allreduce(in, out, N / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
      MPI_OK(MPI_Bcast(buf, N, MPI_BYTE, 0, MPI_COMM_WORLD));
    }
    CHECK(out[1] == np * 1.0 + np * (np - 1) / 2.0, "Allreduce: %g", out[1]);
    MAPPED("1 MiB Allreduce and Bcast");
  }
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  MPI_OK(MPI_Finalize());
  if (my_rank == 0) printf("heap: ok np=%d\n", np);
  return 0;
}
