/* An intercommunicator collective: the shim refuses it with one line while
 * virtual time is on (and it passes natively). np >= 2: even and odd ranks
 * form the two groups; a Bcast from rank 0 of the even group to the odd
 * group. Prints "coll inter: ok" on world rank 0 when it completes. */
#include "common.h"

int main(int argc, char **argv) {
  prog_name = "coll_inter";
  MPI_Init(&argc, &argv);
  int p, r;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  my_rank = r;
  MPI_Comm local, inter;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &local));
  MPI_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, r % 2 ? 0 : 1, 9, &inter));
  int v = r == 0 ? 42 : -1, lr;
  MPI_Comm_rank(local, &lr);
  int root = r % 2 == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  MPI_OK(MPI_Bcast(&v, 1, MPI_INT, root, inter));
  if (r % 2) CHECK(v == 42, "bcast over the intercommunicator: %d", v);
  MPI_OK(MPI_Comm_free(&inter));
  MPI_OK(MPI_Comm_free(&local));
  if (r == 0) printf("coll inter: ok\n");
  MPI_Finalize();
  return 0;
}
