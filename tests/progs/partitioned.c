/* partitioned.c: MPI 4.0 partitioned communication (chapter 4), MPICH only.
 * Rank 0 sends 4 partitions of 256 ints with MPI_Psend_init + MPI_Pready,
 * rank 1 receives them with MPI_Precv_init and polls MPI_Parrived; both
 * check the data. Natively and with the shim as a pass-through it prints
 * "partitioned: PASS"; under virtual time the shim refuses MPI_Psend_init
 * and MPI_Precv_init with one "loggp-shim:" line naming the call. */
#include "common.h"

#if !defined(MPICH_NUMVERSION) || MPI_VERSION < 4
#error "partitioned.c needs MPICH 4"
#endif

enum { PARTS = 4, PER = 256 };

int main(int argc, char **argv) {
  init_common("partitioned", &argc, &argv);
  static int b[PARTS * PER];
  MPI_Request r;
  if (my_rank == 0) {
    for (int i = 0; i < PARTS * PER; i++) b[i] = 7 * i + 1;
    MPI_OK(MPI_Psend_init(b, PARTS, PER, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    MPI_OK(MPI_Start(&r));
    for (int p = PARTS - 1; p >= 0; p--) MPI_OK(MPI_Pready(p, r));
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&r));
  } else if (my_rank == 1) {
    MPI_OK(MPI_Precv_init(b, PARTS, PER, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    MPI_OK(MPI_Start(&r));
    for (int p = 0; p < PARTS; p++) {
      int flag = 0;
      while (!flag) MPI_OK(MPI_Parrived(r, p, &flag));
    }
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&r));
    for (int i = 0; i < PARTS * PER; i++) CHECK(b[i] == 7 * i + 1, "b[%d] = %d", i, b[i]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("partitioned: PASS\n");
  MPI_Finalize();
  return 0;
}
