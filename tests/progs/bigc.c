/* bigc.c: large-count calls above 2^31-1 elements (MPI-4.0 §3.2.5, large
 * counts): rank 0 sends 2^31 + 8 bytes (MPI_BYTE) to rank 1 with
 * MPI_Send_c / MPI_Recv_c, then back with MPI_Isend_c / MPI_Irecv_c + Wait.
 * Expects: the data arrives whole (every byte checked); MPI_Get_count_c and
 * MPI_Get_elements_c say 2^31 + 8, MPI_Get_count says MPI_UNDEFINED.
 * Build for MPICH 4 only. Other ranks only join the barrier. Rank 0 prints
 * "bigc: PASS np=N checks=C"; on failure "FAIL bigc rank R: ..." and a
 * non-zero exit. Needs about 2.2 GB of memory per taking part rank. */
#include "common.h"

#if !defined(MPICH_NUMVERSION) || MPI_VERSION < 4
#error "bigc.c needs MPICH 4"
#endif

#define N (((MPI_Count)1 << 31) + 8)

static unsigned char val(MPI_Count i, int round) { return (unsigned char)((i * 7 + round) % 251); }

static void check_got(const unsigned char *b, const MPI_Status *st, int tag, int round) {
  MPI_Count c = -1, e = -1;
  int ci = 0;
  MPI_OK(MPI_Get_count_c(st, MPI_BYTE, &c));
  MPI_OK(MPI_Get_elements_c(st, MPI_BYTE, &e));
  MPI_OK(MPI_Get_count(st, MPI_BYTE, &ci));
  CHECK(st->MPI_TAG == tag && c == N && e == N && ci == MPI_UNDEFINED,
        "round %d: tag %d, Get_count_c %lld, Get_elements_c %lld, Get_count %d; expected %d, "
        "%lld, %lld, MPI_UNDEFINED",
        round, st->MPI_TAG, (long long)c, (long long)e, ci, tag, (long long)N, (long long)N);
  MPI_Count bad = 0;
  for (MPI_Count i = 0; i < N; i++) bad += b[i] != val(i, round);
  CHECK(bad == 0, "round %d: %lld of %lld bytes wrong", round, (long long)bad, (long long)N);
}

int main(int argc, char **argv) {
  init_common("bigc", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (my_rank < 2) {
    unsigned char *b = malloc((size_t)N);
    CHECK(b, "cannot allocate %lld bytes", (long long)N);
    MPI_Status st;
    MPI_Request r;
    /* Round 0: 0 -> 1, blocking. */
    if (my_rank == 0) {
      for (MPI_Count i = 0; i < N; i++) b[i] = val(i, 0);
      MPI_OK(MPI_Send_c(b, N, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
    } else {
      b[0] = b[N - 1] = 255;
      MPI_OK(MPI_Recv_c(b, N, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
      check_got(b, &st, 7, 0);
    }
    /* Round 1: 1 -> 0, nonblocking. */
    if (my_rank == 1) {
      for (MPI_Count i = 0; i < N; i++) b[i] = val(i, 1);
      MPI_OK(MPI_Isend_c(b, N, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
      b[0] = b[N - 1] = 255;
      MPI_OK(MPI_Irecv_c(b, N, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      check_got(b, &st, 8, 1);
    }
    free(b);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("bigc: PASS np=%d checks=%ld\n", np, n_checks);
  MPI_Finalize();
  return 0;
}
