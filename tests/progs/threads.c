/* threads.c: MPI_THREAD_MULTIPLE under the shim.
 *
 * Run with np = 2 (more ranks only wait at the final barrier). Ranks 0 and
 * 1 each start 2 threads; thread t of rank 0 ping-pongs with thread t of
 * rank 1 on tag 10 + t, 150 rounds, alternating 8-byte and 20000-byte
 * messages (below and above the shim's staging threshold), each checked byte
 * for byte with its status. Expects: MPI_Init_thread provides
 * MPI_THREAD_MULTIPLE, no message crosses to the other thread's tag, every
 * byte arrives. Rank 0 prints "threads: PASS"; on failure a line
 * "FAIL threads rank R: ..." and a non-zero exit. */
#include <pthread.h>

#include "common.h"

enum { ROUNDS = 150, NT = 2 };

static void *pingpong(void *arg) {
  int t = (int)(intptr_t)arg, peer = 1 - my_rank, tag = 10 + t;
  unsigned char *b = malloc(20000);
  for (int k = 0; k < ROUNDS; k++) {
    int n = k % 2 ? 20000 : 8, seq = t * 100000 + k;
    MPI_Status st;
    int c;
    if (my_rank == 0) {
      fill(b, (size_t)n, 0, seq);
      MPI_OK(MPI_Send(b, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv(b, 20000, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, MPI_BYTE, &c);
      CHECK(st.MPI_TAG == tag && st.MPI_SOURCE == peer && c == n,
            "thread %d round %d: status (%d, %d, %d)", t, k, st.MPI_SOURCE, st.MPI_TAG, c);
      CHECK(verify(b, (size_t)n, 1, seq) < 0, "thread %d round %d: reply differs", t, k);
    } else {
      MPI_Request r;
      MPI_OK(MPI_Irecv(b, 20000, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      MPI_Get_count(&st, MPI_BYTE, &c);
      CHECK(st.MPI_TAG == tag && st.MPI_SOURCE == peer && c == n,
            "thread %d round %d: status (%d, %d, %d)", t, k, st.MPI_SOURCE, st.MPI_TAG, c);
      CHECK(verify(b, (size_t)n, 0, seq) < 0, "thread %d round %d: data differs", t, k);
      fill(b, (size_t)n, 1, seq);
      MPI_OK(MPI_Isend(b, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
  }
  free(b);
  return NULL;
}

int main(int argc, char **argv) {
  int provided = -1, np;
  prog_name = "threads";
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np >= 2, "needs at least 2 ranks, got %d", np);
  CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided %d, asked for %d", provided,
        MPI_THREAD_MULTIPLE);
  if (my_rank < 2) {
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
      CHECK(pthread_create(&th[t], NULL, pingpong, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) {
    printf("threads: PASS np=%d rounds=%d threads=%d\n", np, ROUNDS, NT);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
