/* mpi4.c: the MPI-4 point-to-point entry points MPICH 4.0 exports and Open
 * MPI 4.1 does not (large-count MPI_Send_c / MPI_Recv_c / MPI_Isend_c /
 * MPI_Irecv_c / MPI_Get_count_c, MPI_Isendrecv, MPI_Isendrecv_replace).
 * DESIGN.md §2: the shim must see every entry point through which a message
 * leaves or enters a rank, or refuse it clearly. Build for MPICH only.
 *
 * Run with np = 2 as  mpi4 <repetitions> all|c  ("c": sections 1 and 2
 * only, the large-count calls). Expects:
 *   1. data: messages sent with a _c call and received with the classic
 *      call (and the reverse) arrive intact with the right status, so a
 *      shim that adds a header on one side and not the other is caught;
 *   2. timing: an 8-byte MPI_Send_c / MPI_Recv_c ping-pong; rank 0 prints
 *      "mpi4: large-count half_rtt_us=<median> ..._p10 ..._min n=N"; with
 *      LOGGP_L=+20us the test expects it raised by 20 us;
 *   3. MPI_Isendrecv and MPI_Isendrecv_replace exchange the right data;
 *      8-byte Isendrecv exchanges are timed:
 *      "mpi4: isendrecv isendrecv_us=<median> ..._p10 ..._min";
 *   4. large-count collectives (MPI_Allreduce_c, MPI_Bcast_c,
 *      MPI_Ialltoall_c) give the right results; the slower rank's time in
 *      MPI_Allreduce_c: "mpi4: large-count collective allreduce_c_us=...".
 * Prints "mpi4: PASS" on rank 0 at the end. On failure
 * "FAIL mpi4 rank R: ..." and a non-zero exit; a shim that refuses a call
 * must say so in one "loggp-shim:" line naming it. */
#include "common.h"

#if !defined(MPICH_NUMVERSION) || MPI_VERSION < 4
#error "mpi4.c needs MPICH 4"
#endif

enum { MAXREP = 1000 };
static double v[MAXREP];

static void st_check(MPI_Status *st, int src, int tag, MPI_Count n, const char *what) {
  MPI_Count c = -7;
  MPI_Get_count_c(st, MPI_BYTE, &c);
  CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && c == n,
        "%s: status (%d, %d, %ld), expected (%d, %d, %ld)", what, st->MPI_SOURCE, st->MPI_TAG,
        (long)c, src, tag, (long)n);
}

int main(int argc, char **argv) {
  init_common("mpi4", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np == 2, "needs 2 ranks, got %d", np);
  CHECK(argc == 3 && (!strcmp(argv[2], "all") || !strcmp(argv[2], "c")),
        "usage: mpi4 <repetitions> all|c");
  int reps = atoi(argv[1]);
  int with_sendrecv = !strcmp(argv[2], "all");
  CHECK(reps >= 1 && reps <= MAXREP, "repetitions must be 1..%d", MAXREP);
  int peer = 1 - my_rank;
  static const MPI_Count n_[] = {8, 20000};
  unsigned char *b = malloc(20000), *b2 = malloc(20000);
  MPI_Status st;
  MPI_Request r;

  /* 1. Mixed classic / large-count calls, both sizes. */
  for (int k = 0; k < 2; k++) {
    MPI_Count n = n_[k];
    if (my_rank == 0) {
      fill(b, (size_t)n, 0, 10 + k);
      MPI_OK(MPI_Send_c(b, n, MPI_BYTE, 1, 10 + k, MPI_COMM_WORLD));
      fill(b, (size_t)n, 0, 20 + k);
      MPI_OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 20 + k, MPI_COMM_WORLD));
      fill(b, (size_t)n, 0, 30 + k);
      MPI_OK(MPI_Isend_c(b, n, MPI_BYTE, 1, 30 + k, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
      MPI_OK(MPI_Recv(b, 20000, MPI_BYTE, 0, 10 + k, MPI_COMM_WORLD, &st));
      st_check(&st, 0, 10 + k, n, "MPI_Send_c to MPI_Recv");
      CHECK(verify(b, (size_t)n, 0, 10 + k) < 0, "MPI_Send_c to MPI_Recv: data differs");
      MPI_OK(MPI_Recv_c(b, 20000, MPI_BYTE, 0, 20 + k, MPI_COMM_WORLD, &st));
      st_check(&st, 0, 20 + k, n, "MPI_Send to MPI_Recv_c");
      CHECK(verify(b, (size_t)n, 0, 20 + k) < 0, "MPI_Send to MPI_Recv_c: data differs");
      MPI_OK(MPI_Irecv_c(b, 20000, MPI_BYTE, 0, 30 + k, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      st_check(&st, 0, 30 + k, n, "MPI_Isend_c to MPI_Irecv_c");
      CHECK(verify(b, (size_t)n, 0, 30 + k) < 0, "MPI_Isend_c to MPI_Irecv_c: data differs");
    }
  }
  /* 2. Large-count ping-pong. */
  for (int k = -20; k < reps; k++) {
    int seq = k + 100;
    if (my_rank == 0) {
      fill(b, 8, 0, seq);
      double t0 = now_us();
      MPI_OK(MPI_Send_c(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv_c(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      double dt = now_us() - t0;
      CHECK(verify(b, 8, 1, seq) < 0, "ping-pong reply %d differs", seq);
      if (k >= 0) v[k] = dt / 2;
    } else {
      MPI_OK(MPI_Recv_c(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(verify(b, 8, 0, seq) < 0, "ping-pong message %d differs", seq);
      fill(b, 8, 1, seq);
      MPI_OK(MPI_Send_c(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
    }
  }
  if (my_rank == 0) {
    printf("mpi4: large-count");
    put_stat("half_rtt_us", v, reps);
    printf(" n=%d\n", reps);
    fflush(stdout);
  }
  /* 4. Large-count collectives: results, then the time of MPI_Allreduce_c
   * (with L=+20us the shim's recursive doubling adds 20 us at np = 2). */
  {
    int x[3] = {my_rank + 1, 10 * my_rank, -my_rank}, y[3] = {0, 0, 0}, z = my_rank ? -1 : 42;
    MPI_OK(MPI_Allreduce_c(x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y[0] == 3 && y[1] == 10 && y[2] == -1, "MPI_Allreduce_c: %d %d %d", y[0], y[1], y[2]);
    MPI_OK(MPI_Bcast_c(&z, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(z == 42, "MPI_Bcast_c: %d", z);
    int a[2] = {my_rank * 2, my_rank * 2 + 1}, c[2] = {-1, -1};
    MPI_OK(MPI_Ialltoall_c(a, 1, MPI_INT, c, 1, MPI_INT, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(c[0] == my_rank && c[1] == 2 + my_rank, "MPI_Ialltoall_c: %d %d", c[0], c[1]);
    for (int k = -5; k < reps; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_us();
      MPI_OK(MPI_Allreduce_c(x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      double dt = now_us() - t0;
      /* the slower rank's time (ranks leave a barrier apart) */
      MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
      if (k >= 0) v[k] = dt;
    }
    if (my_rank == 0) {
      printf("mpi4: large-count collective");
      put_stat("allreduce_c_us", v, reps);
      printf("\n");
      fflush(stdout);
    }
  }
  /* So that the line above is out before a refusal in section 3 stops the job. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (with_sendrecv) {
    /* 3. Isendrecv and Isendrecv_replace between the two ranks. Only the data
     * are checked: MPICH 4.0.2 itself leaves the status of their Wait unset
     * (seen at 8 and 20000 bytes). */
    for (int k = 0; k < 2; k++) {
      int n = (int)n_[k];
      fill(b, (size_t)n, my_rank, 40 + k);
      MPI_OK(MPI_Isendrecv(b, n, MPI_BYTE, peer, 40 + k, b2, 20000, MPI_BYTE, peer, 40 + k,
                           MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      CHECK(verify(b2, (size_t)n, peer, 40 + k) < 0, "MPI_Isendrecv: data differs");
      fill(b, (size_t)n, my_rank, 50 + k);
      MPI_OK(MPI_Isendrecv_replace(b, n, MPI_BYTE, peer, 50 + k, peer, MPI_ANY_TAG,
                                   MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      CHECK(verify(b, (size_t)n, peer, 50 + k) < 0, "MPI_Isendrecv_replace: data differs");
    }
    /* Timed: 8-byte exchanges, each an Isendrecv and its Wait on both
     * ranks; one message each way, so an exchange costs one latency. Back
     * to back in batches of 10 (time per exchange = batch / 10): a barrier
     * before each would leave the ranks up to one latency apart, and the
     * rank that left first would time the skew too. */
    double xv[100];
    int xreps = 100;
    for (int k = -10; k < xreps; k++) {
      double t0 = now_us();
      for (int j = 0; j < 10; j++) {
        MPI_OK(MPI_Isendrecv(b, 8, MPI_BYTE, peer, 60, b2, 8, MPI_BYTE, peer, 60,
                             MPI_COMM_WORLD, &r));
        MPI_OK(MPI_Wait(&r, &st));
      }
      if (k >= 0) xv[k] = (now_us() - t0) / 10;
    }
    if (my_rank == 0) {
      printf("mpi4: isendrecv");
      put_stat("isendrecv_us", xv, xreps);
      printf("\n");
    }
  }
  if (my_rank == 0) {
    printf("mpi4: PASS\n");
    fflush(stdout);
  }
  free(b);
  free(b2);
  MPI_Finalize();
  return 0;
}
