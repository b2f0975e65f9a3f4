/* coll_loop: N back-to-back 8-byte Allreduces (one double, MPI_SUM) on
 * MPI_COMM_WORLD, for scripts/bench-instr-coll.sh to count instructions
 * per call (callgrind; the difference of two N leaves out start-up).
 * With "i", each is MPI_Iallreduce + MPI_Wait (the shim's nonblocking
 * collectives: a job progressed from the Wait); with "b", an 8-byte
 * MPI_Bcast from rank 0; with "B", an MPI_Barrier; with "r", an 8-byte
 * MPI_Reduce to rank 0; with "x SIZE", an MPI_Sendrecv of SIZE bytes each
 * way between ranks 0 and 1 (page-aligned buffers).
 *   coll_loop N [i|b|B|r|x SIZE] */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  char what = argc > 2 ? argv[2][0] : 'a';
  int nb = what == 'i';
  double in = 1, out = 0;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int xsize = what == 'x' && argc > 3 ? atoi(argv[3]) : 0;
  char *xs = NULL, *xr = NULL;
  if (what == 'x' && (xsize < 0 || posix_memalign((void **)&xs, 4096, (size_t)xsize + 1) ||
                      posix_memalign((void **)&xr, 4096, (size_t)xsize + 1)))
    MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < n; i++) {
    if (what == 'x') {
      if (rank < 2)
        MPI_Sendrecv(xs, xsize, MPI_BYTE, 1 - rank, 0, xr, xsize, MPI_BYTE, 1 - rank, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      out = 2;
    } else if (what == 'p' || what == 'g') {
      int k = what == 'g' ? 16 : 1;
      double v[16];
      if (rank == 0) {
        MPI_Request q[16];
        for (int j = 0; j < k; j++) MPI_Isend(&in, 1, MPI_DOUBLE, 1, j, MPI_COMM_WORLD, &q[j]);
        MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Probe(0, k - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int j = 0; j < k; j++) MPI_Recv(&v[j], 1, MPI_DOUBLE, 0, j, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
      }
      out = 2;
    } else if (what == 'b') {
      out = 2;
      MPI_Bcast(&out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    } else if (what == 'r') {
      MPI_Reduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      out = 2;
    } else if (what == 'B') {
      out = 2;
      MPI_Barrier(MPI_COMM_WORLD);
    } else if (nb) {
      MPI_Request r;
      MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return out == 2 ? 0 : 1;
}
