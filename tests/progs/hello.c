/* hello.c: the smallest MPI program, for the bad-input, wrong-MPI and
 * logging tests. Each rank prints "hello: after MPI_Init rank R of N" once
 * MPI_Init has returned, so a test can tell that a job stopped inside
 * MPI_Init, then exchanges one message with its neighbour and prints
 * "hello: PASS" on rank 0. */
#include "common.h"

int main(int argc, char **argv) {
  int np;
  init_common("hello", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  printf("hello: after MPI_Init rank %d of %d\n", my_rank, np);
  fflush(stdout);
  int out = 1000 + my_rank, in = -1;
  MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, (my_rank + 1) % np, 1, &in, 1, MPI_INT,
                      (my_rank + np - 1) % np, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(in == 1000 + (my_rank + np - 1) % np, "got %d from the left neighbour", in);
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("hello: PASS np=%d\n", np);
  MPI_Finalize();
  return 0;
}
