/* big.c: a message above 2 GiB (MPI-4.0 §3.2.5, §5.1.11): rank 0 sends
 * 270 000 000 long long (2.16 GB) to rank 1 with MPI_Send, then with
 * MPI_Isend, then with MPI_Send again, which rank 1 first probes (MPI_Probe:
 * the shim takes such a message off the network) and then receives; then
 * both ranks exchange such a message with MPI_Sendrecv_replace.
 * Expects: the data arrives whole (every 4096th element and the last
 * checked; after MPI_Sendrecv_replace every element); MPI_Get_count in long
 * long says 270 000 000, in bytes MPI_UNDEFINED (the count does not fit an
 * int); MPI_Get_elements_x in bytes says 2 160 000 000; the same counts
 * from the probe's status. Other ranks only join the barrier.
 * Rank 0 prints "big: PASS np=N checks=C"; on failure a line
 * "FAIL big rank R: ..." and a non-zero exit. Needs about 2.2 GB of memory
 * per taking part rank (twice that during MPI_Sendrecv_replace). */
#include "common.h"

#define N 270000000L

int main(int argc, char **argv) {
  init_common("big", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (my_rank < 2) {
    long long *b = malloc(sizeof(long long) * (size_t)N);
    CHECK(b, "cannot allocate %ld long long", N);
    for (int round = 0; round < 3; round++) {
      if (my_rank == 0) {
        for (long i = 0; i < N; i++) b[i] = i * 3 + round;
        if (round != 1) {
          MPI_OK(MPI_Send(b, (int)N, MPI_LONG_LONG, 1, 7 + round, MPI_COMM_WORLD));
        } else {
          MPI_Request r;
          MPI_OK(MPI_Isend(b, (int)N, MPI_LONG_LONG, 1, 8, MPI_COMM_WORLD, &r));
          MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
      } else {
        MPI_Status st;
        b[0] = b[N - 1] = -1;
        if (round == 2) {
          int pc = -1;
          MPI_OK(MPI_Probe(0, 9, MPI_COMM_WORLD, &st));
          MPI_OK(MPI_Get_count(&st, MPI_LONG_LONG, &pc));
          CHECK(pc == (int)N, "round 2: MPI_Get_count after MPI_Probe = %d", pc);
        }
        if (round != 1) {
          MPI_OK(MPI_Recv(b, (int)N, MPI_LONG_LONG, 0, 7 + round, MPI_COMM_WORLD, &st));
        } else {
          MPI_Request r;
          MPI_OK(MPI_Irecv(b, (int)N, MPI_LONG_LONG, 0, 8, MPI_COMM_WORLD, &r));
          MPI_OK(MPI_Wait(&r, &st));
        }
        int c = -1, cb = -1;
        MPI_Count e = -1;
        MPI_OK(MPI_Get_count(&st, MPI_LONG_LONG, &c));
        MPI_OK(MPI_Get_count(&st, MPI_BYTE, &cb));
        MPI_OK(MPI_Get_elements_x(&st, MPI_BYTE, &e));
        CHECK(c == (int)N, "round %d: MPI_Get_count(MPI_LONG_LONG) = %d", round, c);
        CHECK(cb == MPI_UNDEFINED, "round %d: MPI_Get_count(MPI_BYTE) = %d", round, cb);
        CHECK(e == (MPI_Count)N * 8, "round %d: MPI_Get_elements_x(MPI_BYTE) = %lld", round,
              (long long)e);
        for (long i = 0; i < N; i += 4096)
          CHECK(b[i] == i * 3 + round, "round %d: element %ld = %lld", round, i, b[i]);
        CHECK(b[N - 1] == (N - 1) * 3 + round, "round %d: last element %lld", round, b[N - 1]);
      }
    }
    /* Round 3: both ways at once, MPI_Sendrecv_replace of the whole
     * buffer (the shim once failed it: MPI_Pack_size says an int). Each
     * rank's data differ (3 + its rank); every element is checked. */
    const int other = 1 - my_rank;
    for (long i = 0; i < N; i++) b[i] = i * 3 + 3 + my_rank;
    MPI_Status st;
    MPI_OK(MPI_Sendrecv_replace(b, (int)N, MPI_LONG_LONG, other, 10, other, 10, MPI_COMM_WORLD,
                                &st));
    int c = -1;
    MPI_Count e = -1;
    MPI_OK(MPI_Get_count(&st, MPI_LONG_LONG, &c));
    MPI_OK(MPI_Get_elements_x(&st, MPI_BYTE, &e));
    CHECK(st.MPI_SOURCE == other && st.MPI_TAG == 10 && c == (int)N && e == (MPI_Count)N * 8,
          "round 3: source %d, tag %d, MPI_Get_count(MPI_LONG_LONG) %d, "
          "MPI_Get_elements_x(MPI_BYTE) %lld",
          st.MPI_SOURCE, st.MPI_TAG, c, (long long)e);
    long bad = 0;
    for (long i = 0; i < N; i++) bad += b[i] != i * 3 + 3 + other;
    CHECK(bad == 0, "round 3: %ld of %ld elements wrong after MPI_Sendrecv_replace", bad, N);
    free(b);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("big: PASS np=%d checks=%ld\n", np, n_checks);
  MPI_Finalize();
  return 0;
}
