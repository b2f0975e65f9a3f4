/* seen.c: what the shim sees of a message's arrival (DESIGN.md, "Virtual
 * time": an added L counts from when a message came where the receiver
 * waited for it, so that a message the network delayed is not delivered
 * L early). np = 2. Rank 1 receives four 8-byte messages from rank 0:
 *   A  by MPI_Irecv + MPI_Waitall, posted 100 ms before rank 0 sends it;
 *   B  by MPI_Recv, likewise;
 *   C  by MPI_Waitall over an MPI_Isend of its own (to rank 0) and an
 *      MPI_Irecv, posted 100 ms before rank 0 sends C;
 *   D  by MPI_Recv 100 ms after rank 0 sent it: there already.
 * No barrier or other collective: the shim's own would add deliveries.
 * Data are checked; "seen: PASS" on success. Under the shim with an
 * added L and LOGGP_LOG=debug, rank 1's last line counts A, B and C as
 * "3 came during the wait for them", and not D (cli/tests/mpi_knobs.rs). */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
  init_common("seen", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np == 2, "needs 2 ranks, got %d", np);
  unsigned char b[8];
  const useconds_t pause = 100000;
  if (my_rank == 0) {
    for (int seq = 0; seq < 2; seq++) {
      usleep(pause);
      fill(b, 8, 0, seq);
      MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, seq, MPI_COMM_WORLD));
    }
    MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(verify(b, 8, 1, 9) < 0, "rank 1's message differs");
    usleep(pause);
    for (int seq = 2; seq < 4; seq++) {
      fill(b, 8, 0, seq);
      MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, seq, MPI_COMM_WORLD));
    }
  } else {
    MPI_Request r[2];
    MPI_OK(MPI_Irecv(b, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Waitall(1, r, MPI_STATUSES_IGNORE));
    CHECK(verify(b, 8, 0, 0) < 0, "message A differs");
    MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(verify(b, 8, 0, 1) < 0, "message B differs");
    unsigned char s[8];
    fill(s, 8, 1, 9);
    MPI_OK(MPI_Isend(s, 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Irecv(b, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    CHECK(verify(b, 8, 0, 2) < 0, "message C differs");
    usleep(pause);
    MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(verify(b, 8, 0, 3) < 0, "message D differs");
  }
  MPI_Finalize();
  if (my_rank == 1) printf("seen: PASS\n");
  return 0;
}
