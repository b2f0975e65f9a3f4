/* psplit.c: persistent sends above LOGGP_INLINE_MAX (16 KiB by default),
 * which the shim sends split like nonblocking ones: the header alone on
 * the application's envelope, the payload as the application gave it on
 * the shim's own communicator, by a persistent synchronous send with a
 * tag of the request's own. Standard ones only from 64 KiB (below, an MPI
 * may send them eagerly, which a synchronous payload would not).
 *
 * Run with np >= 2 as  psplit. Rank 0 sends to rank 1 (other ranks only
 * take part in the barriers):
 *   1. a Send_init of 64 KiB (tag 7) and an Ssend_init of 20000 bytes
 *      (tag 8), ROUNDS rounds, each message's bytes a pattern of its round:
 *      started by Startall or by Start in reverse order, completed by
 *      Waitall, by Test loops, or by Waitany; rank 1 takes tag 7 by a
 *      persistent receive and tag 8 by Irecv or by Recv, alternately;
 *   2. a third Send_init of 64 KiB (tag 9) started and freed while
 *      active (its message must still arrive whole), then a fourth (tag 10),
 *      set up after the first two are freed, ROUNDS rounds;
 *   3. a Send_init of 20000 bytes (tag 11), ROUNDS rounds: standard and
 *      below 64 KiB, it does not go split.
 * Rank 1 checks every byte and every status (source, tag, count).
 * Rank 0 starts persistent sends that go split 2 * ROUNDS + 1 + ROUNDS
 * times in all: with LOGGP_LOG=debug its shim reports that many "sent
 * split" (section 3's are not among them).
 * Prints "psplit: PASS" from rank 0, or "FAIL psplit rank R: ..." and
 * exits non-zero. */
#include "common.h"

enum { ROUNDS = 6, BIG = 64 * 1024, MID = 20000 };

static void check_msg(const unsigned char *b, size_t n, const MPI_Status *st, int tag, int seq) {
  int count = -1;
  MPI_Get_count(st, MPI_BYTE, &count);
  CHECK(st->MPI_SOURCE == 0 && st->MPI_TAG == tag, "tag %d round %d: status source %d tag %d",
        tag, seq, st->MPI_SOURCE, st->MPI_TAG);
  CHECK(count == (int)n, "tag %d round %d: count %d, expected %zu", tag, seq, count, n);
  long bad = verify(b, n, 0, seq);
  CHECK(bad < 0, "tag %d round %d: byte %ld differs", tag, seq, bad);
  CHECK(b[n] == 0xEE, "tag %d round %d: byte past the end written", tag, seq);
}

/* Rank 0: ROUNDS Start + Wait of `q` from `buf` (n bytes, round r's
 * pattern seq0 + r), then frees it. */
static void send_rounds(MPI_Request *q, unsigned char *buf, size_t n, int seq0) {
  for (int round = 0; round < ROUNDS; round++) {
    fill(buf, n, 0, seq0 + round);
    MPI_OK(MPI_Start(q));
    MPI_OK(MPI_Wait(q, MPI_STATUS_IGNORE));
  }
  MPI_OK(MPI_Request_free(q));
}

/* Rank 1: ROUNDS blocking receives of `send_rounds`' messages, checked. */
static void recv_rounds(unsigned char *buf, size_t n, int tag, int seq0) {
  for (int round = 0; round < ROUNDS; round++) {
    MPI_Status st;
    memset(buf, 0xEE, n + 1);
    MPI_OK(MPI_Recv(buf, (int)n + 1, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
    check_msg(buf, n, &st, tag, seq0 + round);
  }
}

int main(int argc, char **argv) {
  int np;
  init_common("psplit", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np >= 2, "needs at least 2 ranks, got %d", np);
  unsigned char *a = malloc(BIG + 1), *b = malloc(MID + 1), *c = malloc(BIG + 1);
  MPI_Request r[2], q;
  MPI_Status st[2];

  /* 1. Two persistent sends, ROUNDS rounds. */
  if (my_rank == 0) {
    MPI_OK(MPI_Send_init(a, BIG, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Ssend_init(b, MID, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &r[1]));
    for (int round = 0; round < ROUNDS; round++) {
      fill(a, BIG, 0, 100 + round);
      fill(b, MID, 0, 200 + round);
      if (round % 2) {
        MPI_OK(MPI_Startall(2, r));
      } else {
        MPI_OK(MPI_Start(&r[1]));
        MPI_OK(MPI_Start(&r[0]));
      }
      if (round % 3 == 0) {
        MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
      } else if (round % 3 == 1) {
        for (int i = 0; i < 2; i++) {
          int flag = 0;
          while (!flag) MPI_OK(MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE));
        }
      } else {
        int idx;
        for (int k = 0; k < 2; k++) MPI_OK(MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE));
      }
    }
    for (int i = 0; i < 2; i++) MPI_OK(MPI_Request_free(&r[i]));
    CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "Request_free left a request");
  } else if (my_rank == 1) {
    MPI_OK(MPI_Recv_init(a, BIG + 1, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[0]));
    for (int round = 0; round < ROUNDS; round++) {
      memset(a, 0xEE, BIG + 1);
      memset(b, 0xEE, MID + 1);
      MPI_OK(MPI_Start(&r[0]));
      if (round % 2) {
        MPI_OK(MPI_Irecv(b, MID + 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &r[1]));
        MPI_OK(MPI_Waitall(2, r, st));
      } else {
        MPI_OK(MPI_Recv(b, MID + 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &st[1]));
        MPI_OK(MPI_Wait(&r[0], &st[0]));
      }
      check_msg(a, BIG, &st[0], 7, 100 + round);
      check_msg(b, MID, &st[1], 8, 200 + round);
    }
    MPI_OK(MPI_Request_free(&r[0]));
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* 2. Freed while active, then a new request. */
  if (my_rank == 0) {
    fill(c, BIG, 0, 300);
    MPI_OK(MPI_Send_init(c, BIG, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &q));
    MPI_OK(MPI_Start(&q));
    MPI_OK(MPI_Request_free(&q));
    CHECK(q == MPI_REQUEST_NULL, "Request_free of an active request left it");
    MPI_OK(MPI_Send_init(a, BIG, MPI_BYTE, 1, 10, MPI_COMM_WORLD, &q));
    send_rounds(&q, a, BIG, 400);
  } else if (my_rank == 1) {
    memset(c, 0xEE, BIG + 1);
    MPI_OK(MPI_Recv(c, BIG + 1, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st[0]));
    check_msg(c, BIG, &st[0], 9, 300);
    recv_rounds(a, BIG, 10, 400);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* 3. Standard, below 64 KiB. */
  if (my_rank == 0) {
    MPI_OK(MPI_Send_init(b, MID, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &q));
    send_rounds(&q, b, MID, 500);
  } else if (my_rank == 1) {
    recv_rounds(b, MID, 11, 500);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(a);
  free(b);
  free(c);
  if (my_rank == 0) {
    printf("psplit: PASS np=%d checks=%ld\n", np, n_checks);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
