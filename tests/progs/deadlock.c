/* deadlock.c: a job that never ends, to test the harness itself: every
 * rank waits for a message nobody sends. Expects to be killed by the test
 * harness's timeout, with every process it started. Prints
 * "deadlock: waiting rank R" once MPI_Init has returned. */
#include "common.h"

int main(int argc, char **argv) {
  init_common("deadlock", &argc, &argv);
  printf("deadlock: waiting rank %d\n", my_rank);
  fflush(stdout);
  int x;
  MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
