/* target.c: which pairs a targeted knob reaches (LOGGP_L=20us@pairs=0:1,
 * LOGGP_O_S=10us@to=2, ...), for cli/tests/mpi_target.rs. Run with np = 3
 * as
 *   target <repetitions>
 * Rank 0 measures against rank 1 and against rank 2 in turn, the third rank
 * sleeping in a barrier meanwhile (3 ranks may share 2 cores), and prints
 * one line "target: key=value ..." (median, _p10 and _min in microseconds):
 *   pp_1, pp_2     8-byte ping-pong half round trip on MPI_COMM_WORLD
 *   rev_1, rev_2   the same on a communicator whose ranks are
 *                  MPI_COMM_WORLD's reversed, addressed by its own ranks
 *                  (targeting names MPI_COMM_WORLD ranks, whatever the
 *                  communicator)
 *   send_1, send_2 time inside MPI_Send of 8 bytes from rank 0 (o_s)
 *   bar_1, bar_2   MPI_Barrier on a communicator of world ranks {0,1} or
 *                  {0,2} (a collective feels targeting through its
 *                  messages)
 * With a second argument, `target <repetitions> gaps`, it measures instead
 * what G, g_s and g_r change, against rank 1 and rank 2 in turn:
 *   bw_1, bw_2     rank 0 sends 64 KiB, the peer replies with 0 bytes (then
 *                  checks them): the time on rank 0 holds (64 KiB - 1) * G once
 *   sgap_1, sgap_2 rank 0 sends a burst of 20 8-byte MPI_Isends to the peer
 *                  (its receives posted) and waits for all: 19 g_s at least
 *   rgap_1, rgap_2 the peer sends rank 0 20 8-byte messages that all
 *                  arrived 500 us earlier; rank 0 receives them one after
 *                  another: 19 g_r at least
 * Data are checked; on failure "FAIL target rank R: ..." and exit non-zero. */
#define _GNU_SOURCE
#include "common.h"
#include <sched.h>
#include <unistd.h>

enum { MAXREP = 2000, WARMUP = 20 };
static double v[MAXREP];

static void lazy_barrier(void) {
  MPI_Request r;
  int done = 0;
  MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
  while (!done) {
    MPI_OK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
    if (!done) usleep(200);
  }
}

/* Ping-pong between rank 0 of `comm` (world rank 0) and `peer` (a rank of
 * `comm`); `me` is this process's rank in `comm`. Rank 0 prints key. */
static void pingpong(MPI_Comm comm, int me, int peer, int reps, const char *key) {
  unsigned char b[8];
  int zero = -1, r0;
  /* The rank of world rank 0 in comm. */
  MPI_Group g, wg;
  MPI_OK(MPI_Comm_group(comm, &g));
  MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
  r0 = 0;
  MPI_OK(MPI_Group_translate_ranks(wg, 1, &r0, g, &zero));
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  for (int k = -WARMUP; k < reps; k++) {
    int seq = k + WARMUP;
    if (me == zero) {
      fill(b, 8, 0, seq);
      double t0 = now_us();
      MPI_OK(MPI_Send(b, 8, MPI_BYTE, peer, 3, comm));
      MPI_OK(MPI_Recv(b, 8, MPI_BYTE, peer, 3, comm, MPI_STATUS_IGNORE));
      double dt = now_us() - t0;
      CHECK(verify(b, 8, 1, seq) < 0, "%s: reply %d differs", key, seq);
      if (k >= 0) v[k] = dt / 2;
    } else if (me == peer) {
      MPI_OK(MPI_Recv(b, 8, MPI_BYTE, zero, 3, comm, MPI_STATUS_IGNORE));
      CHECK(verify(b, 8, 0, seq) < 0, "%s: message %d differs", key, seq);
      fill(b, 8, 1, seq);
      MPI_OK(MPI_Send(b, 8, MPI_BYTE, zero, 3, comm));
    }
  }
  if (me == zero) put_stat(key, v, reps);
  lazy_barrier();
}

/* Time inside MPI_Send of 8 bytes from world rank 0 to `peer`. */
static void sendtime(int peer, int reps, const char *key) {
  unsigned char b[8];
  for (int k = -WARMUP; k < reps; k++) {
    int seq = k + WARMUP;
    if (my_rank == 0) {
      fill(b, 8, 0, seq);
      double t0 = now_us();
      MPI_OK(MPI_Send(b, 8, MPI_BYTE, peer, 4, MPI_COMM_WORLD));
      double dt = now_us() - t0;
      if (k >= 0) v[k] = dt;
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (my_rank == peer) {
      MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(verify(b, 8, 0, seq) < 0, "%s: message %d differs", key, seq);
      MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 5, MPI_COMM_WORLD));
    }
  }
  if (my_rank == 0) put_stat(key, v, reps);
  lazy_barrier();
}

/* MPI_Barrier on `pair` (world ranks {0, peer}; the others hold a
 * communicator of their own and skip). */
static void bartime(MPI_Comm pair, int peer, int reps, const char *key) {
  if (my_rank == 0 || my_rank == peer) {
    for (int k = -WARMUP; k < reps; k++) {
      double t0 = now_us();
      MPI_OK(MPI_Barrier(pair));
      if (k >= 0) v[k] = now_us() - t0;
    }
  }
  if (my_rank == 0) put_stat(key, v, reps);
  lazy_barrier();
}

enum { BW = 65536, BURST = 20 };
static unsigned char big[BW], small[BURST][8];

/* 64 KiB from world rank 0 to `peer`, a 0-byte reply. */
static void bwtime(int peer, int reps, const char *key) {
  for (int k = -WARMUP; k < reps; k++) {
    int seq = k + WARMUP;
    if (my_rank == 0) {
      fill(big, BW, 0, seq);
      double t0 = now_us();
      MPI_OK(MPI_Send(big, BW, MPI_BYTE, peer, 6, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      if (k >= 0) v[k] = now_us() - t0;
    } else if (my_rank == peer) {
      MPI_OK(MPI_Recv(big, BW, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      /* Reply first: checking 64 KiB takes longer than moving them, and
       * on shared cores that time wanders (kept out of the timing). */
      MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 6, MPI_COMM_WORLD));
      CHECK(verify(big, BW, 0, seq) < 0, "%s: message %d differs", key, seq);
    }
  }
  if (my_rank == 0) put_stat(key, v, reps);
  lazy_barrier();
}

/* A burst of BURST Isends from world rank 0 to `peer`, waited for. */
static void sendgap(int peer, int reps, const char *key) {
  MPI_Request r[BURST];
  for (int k = -2; k < reps; k++) {
    if (my_rank == 0) {
      for (int i = 0; i < BURST; i++) fill(small[i], 8, 0, i);
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      double t0 = now_us();
      for (int i = 0; i < BURST; i++)
        MPI_OK(MPI_Isend(small[i], 8, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &r[i]));
      MPI_OK(MPI_Waitall(BURST, r, MPI_STATUSES_IGNORE));
      if (k >= 0) v[k] = now_us() - t0;
    } else if (my_rank == peer) {
      for (int i = 0; i < BURST; i++)
        MPI_OK(MPI_Irecv(small[i], 8, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &r[i]));
      MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD));
      MPI_OK(MPI_Waitall(BURST, r, MPI_STATUSES_IGNORE));
      for (int i = 0; i < BURST; i++)
        CHECK(verify(small[i], 8, 0, i) < 0, "%s: message %d differs", key, i);
    }
  }
  if (my_rank == 0) put_stat(key, v, reps);
  lazy_barrier();
}

/* BURST messages from `peer` to world rank 0, received back to back
 * 500 us after they were sent. */
static void recvgap(int peer, int reps, const char *key) {
  MPI_Request r[BURST];
  for (int k = -2; k < reps; k++) {
    if (my_rank == 0) {
      MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, peer, 9, MPI_COMM_WORLD));
      busy_until(now_us() + 500);
      double t0 = now_us();
      for (int i = 0; i < BURST; i++)
        MPI_OK(MPI_Recv(small[i], 8, MPI_BYTE, peer, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      if (k >= 0) v[k] = now_us() - t0;
      for (int i = 0; i < BURST; i++)
        CHECK(verify(small[i], 8, peer, i) < 0, "%s: message %d differs", key, i);
    } else if (my_rank == peer) {
      for (int i = 0; i < BURST; i++) fill(small[i], 8, peer, i);
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      for (int i = 0; i < BURST; i++)
        MPI_OK(MPI_Isend(small[i], 8, MPI_BYTE, 0, 10, MPI_COMM_WORLD, &r[i]));
      MPI_OK(MPI_Waitall(BURST, r, MPI_STATUSES_IGNORE));
    }
  }
  if (my_rank == 0) put_stat(key, v, reps);
  lazy_barrier();
}

int main(int argc, char **argv) {
  init_common("target", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np == 3, "needs 3 ranks, got %d", np);
  CHECK(argc == 2 || (argc == 3 && !strcmp(argv[2], "gaps")),
        "usage: target <repetitions> [gaps]");
  int reps = atoi(argv[1]);
  CHECK(reps >= 1 && reps <= MAXREP, "repetitions must be 1..%d", MAXREP);
  /* Rank 0 on one CPU, its two peers on another: each pair then always
   * spans two CPUs, and the idle peer sleeps beside the busy one. Left to
   * the scheduler, 3 ranks on 2 cores sometimes put rank 0 and its peer on
   * one CPU for a whole job (every 64 KiB ping 50-90 us instead of 9-12;
   * an 8-byte half round trip with 2 of 1.06 us against 0.50 with 1).
   * Best effort: a mask the job may not change is kept. */
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(my_rank == 0 ? 0 : 1, &set);
    (void)sched_setaffinity(0, sizeof set, &set);
  }
  if (argc == 3) {
    lazy_barrier();
    if (my_rank == 0) printf("target:");
    bwtime(1, reps, "bw_1");
    bwtime(2, reps, "bw_2");
    sendgap(1, reps, "sgap_1");
    sendgap(2, reps, "sgap_2");
    recvgap(1, reps, "rgap_1");
    recvgap(2, reps, "rgap_2");
    if (my_rank == 0) printf(" n=%d\ntarget: PASS\n", reps);
    fflush(stdout);
    MPI_Finalize();
    return 0;
  }
  MPI_Comm rev, with1, with2;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, np - 1 - my_rank, &rev));
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, my_rank == 2, my_rank, &with1));
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, my_rank == 1, my_rank, &with2));
  int rme;
  MPI_Comm_rank(rev, &rme);
  CHECK(rme == np - 1 - my_rank, "reversed rank %d", rme);
  lazy_barrier();
  if (my_rank == 0) printf("target:");
  pingpong(MPI_COMM_WORLD, my_rank, 1, reps, "pp_1");
  pingpong(MPI_COMM_WORLD, my_rank, 2, reps, "pp_2");
  /* In rev, world rank 1 is rank 1 and world rank 2 is rank 0. */
  pingpong(rev, rme, 1, reps, "rev_1");
  pingpong(rev, rme, 0, reps, "rev_2");
  sendtime(1, reps, "send_1");
  sendtime(2, reps, "send_2");
  bartime(with1, 1, reps, "bar_1");
  bartime(with2, 2, reps, "bar_2");
  if (my_rank == 0) printf(" n=%d\ntarget: PASS\n", reps);
  fflush(stdout);
  MPI_Comm_free(&rev);
  MPI_Comm_free(&with1);
  MPI_Comm_free(&with2);
  MPI_Finalize();
  return 0;
}
