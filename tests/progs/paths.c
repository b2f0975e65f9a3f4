/* paths.c: every way a message enters or leaves a rank feels the knobs.
 *
 * Run with np = 2 as  paths <repetitions>. For each path below, rank 0 and
 * rank 1 exchange 8-byte messages <repetitions> times (after 5 warm-up
 * rounds) and rank 0 prints the median one-way time of each path as
 * "<path>=<us>" (with <path>_p10 and <path>_min) on one line starting
 * "paths:". A ping-pong path gives half
 * the round trip; an exchange path (both ranks in MPI_Sendrecv at once)
 * gives the whole iteration. Rank 0 always uses MPI_Send / MPI_Irecv+Wait;
 * rank 1 uses the path named:
 *   receive paths (rank 1 replies with MPI_Send): recv, irecv_wait,
 *     irecv_test, waitany, waitall, waitsome, testany, testall, testsome,
 *     mprobe_mrecv, improbe_imrecv, recv_init_start;
 *   send paths (rank 1 receives with MPI_Recv): send, isend_wait, ssend,
 *     bsend, rsend, issend, ibsend, irsend, send_init_start,
 *     ssend_init_start;
 *   exchange paths: sendrecv, sendrecv_replace.
 * Expected with the shim: L, o_r (receive paths), o_s (send paths) raise
 * every one-way time by the knob, like the plain MPI_Send/MPI_Recv pair; a
 * path the shim does not see stays at native speed or stops the job.
 * Every message is checked; on failure "FAIL paths rank R: ..." and a
 * non-zero exit. */
#include "common.h"

enum {
  RECV, IRECV_WAIT, IRECV_TEST, WAITANY, WAITALL, WAITSOME, TESTANY, TESTALL, TESTSOME,
  MPROBE_MRECV, IMPROBE_IMRECV, RECV_INIT_START,
  SEND, ISEND_WAIT, SSEND, BSEND, RSEND, ISSEND, IBSEND, IRSEND, SEND_INIT_START,
  SSEND_INIT_START,
  SENDRECV, SENDRECV_REPLACE, NPATHS
};
static const char *names[NPATHS] = {
    "recv", "irecv_wait", "irecv_test", "waitany", "waitall", "waitsome", "testany", "testall",
    "testsome", "mprobe_mrecv", "improbe_imrecv", "recv_init_start", "send", "isend_wait",
    "ssend", "bsend", "rsend", "issend", "ibsend", "irsend", "send_init_start",
    "ssend_init_start", "sendrecv", "sendrecv_replace"};

enum { MAXREP = 500 };
static double v[MAXREP];

/* Rank 1 receives 8 bytes from rank 0 (tag 1) through path p. */
static void recv_via(int p, unsigned char *b) {
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Status st;
  MPI_Message m;
  int flag = 0, idx, out, ind[1];
  double give_up = now_us() + 20e6;
  switch (p) {
    case RECV:
      MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
      return;
    case MPROBE_MRECV:
      MPI_OK(MPI_Mprobe(0, 1, MPI_COMM_WORLD, &m, &st));
      MPI_OK(MPI_Mrecv(b, 8, MPI_BYTE, &m, &st));
      return;
    case IMPROBE_IMRECV:
      while (!flag) {
        MPI_OK(MPI_Improbe(0, 1, MPI_COMM_WORLD, &flag, &m, &st));
        CHECK(flag || now_us() < give_up, "Improbe never saw the message");
      }
      MPI_OK(MPI_Imrecv(b, 8, MPI_BYTE, &m, &r));
      MPI_OK(MPI_Wait(&r, &st));
      return;
    case RECV_INIT_START:
      MPI_OK(MPI_Recv_init(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Start(&r));
      MPI_OK(MPI_Wait(&r, &st));
      MPI_OK(MPI_Request_free(&r));
      return;
  }
  MPI_OK(MPI_Irecv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r));
  switch (p) {
    case IRECV_WAIT: MPI_OK(MPI_Wait(&r, &st)); break;
    case WAITANY: MPI_OK(MPI_Waitany(1, &r, &idx, &st)); break;
    case WAITALL: MPI_OK(MPI_Waitall(1, &r, &st)); break;
    case WAITSOME:
      MPI_OK(MPI_Waitsome(1, &r, &out, ind, &st));
      CHECK(out == 1, "Waitsome outcount %d", out);
      break;
    default:
      while (!flag) {
        if (p == IRECV_TEST) MPI_OK(MPI_Test(&r, &flag, &st));
        if (p == TESTANY) MPI_OK(MPI_Testany(1, &r, &idx, &flag, &st));
        if (p == TESTALL) MPI_OK(MPI_Testall(1, &r, &flag, &st));
        if (p == TESTSOME) {
          MPI_OK(MPI_Testsome(1, &r, &out, ind, &st));
          flag = out == 1;
        }
        CHECK(flag || now_us() < give_up, "%s never completed", names[p]);
      }
  }
  CHECK(r == MPI_REQUEST_NULL, "%s left the request active", names[p]);
}

/* Rank 1 sends 8 bytes to rank 0 (tag 2) through path p; rank 0 has its
 * receive posted already, so the ready modes are legal. */
static void send_via(int p, unsigned char *b) {
  MPI_Request r;
  MPI_Comm w = MPI_COMM_WORLD;
  switch (p) {
    case SEND: MPI_OK(MPI_Send(b, 8, MPI_BYTE, 0, 2, w)); return;
    case SSEND: MPI_OK(MPI_Ssend(b, 8, MPI_BYTE, 0, 2, w)); return;
    case BSEND: MPI_OK(MPI_Bsend(b, 8, MPI_BYTE, 0, 2, w)); return;
    case RSEND: MPI_OK(MPI_Rsend(b, 8, MPI_BYTE, 0, 2, w)); return;
    case ISEND_WAIT: MPI_OK(MPI_Isend(b, 8, MPI_BYTE, 0, 2, w, &r)); break;
    case ISSEND: MPI_OK(MPI_Issend(b, 8, MPI_BYTE, 0, 2, w, &r)); break;
    case IBSEND: MPI_OK(MPI_Ibsend(b, 8, MPI_BYTE, 0, 2, w, &r)); break;
    case IRSEND: MPI_OK(MPI_Irsend(b, 8, MPI_BYTE, 0, 2, w, &r)); break;
    case SEND_INIT_START:
    case SSEND_INIT_START:
      if (p == SEND_INIT_START) {
        MPI_OK(MPI_Send_init(b, 8, MPI_BYTE, 0, 2, w, &r));
      } else {
        MPI_OK(MPI_Ssend_init(b, 8, MPI_BYTE, 0, 2, w, &r));
      }
      MPI_OK(MPI_Start(&r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
      MPI_OK(MPI_Request_free(&r));
      return;
  }
  MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv) {
  init_common("paths", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np == 2, "needs 2 ranks, got %d", np);
  CHECK(argc == 2, "usage: paths <repetitions>");
  int reps = atoi(argv[1]);
  CHECK(reps >= 1 && reps <= MAXREP, "repetitions must be 1..%d", MAXREP);
  int bsize = 64 * (8 + MPI_BSEND_OVERHEAD);
  void *att = malloc((size_t)bsize);
  MPI_OK(MPI_Buffer_attach(att, bsize));
  unsigned char b[8], in[8];
  int peer = 1 - my_rank, seq = 0;
  if (my_rank == 0) printf("paths:");
  for (int p = 0; p < NPATHS; p++) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = -5; k < reps; k++, seq++) {
      double dt;
      if (p == SENDRECV || p == SENDRECV_REPLACE) {
        MPI_Status st;
        fill(b, 8, my_rank, seq);
        double t0 = now_us();
        if (p == SENDRECV) {
          MPI_OK(MPI_Sendrecv(b, 8, MPI_BYTE, peer, 3, in, 8, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
                              &st));
        } else {
          MPI_OK(MPI_Sendrecv_replace(b, 8, MPI_BYTE, peer, 3, peer, 3, MPI_COMM_WORLD, &st));
          memcpy(in, b, 8);
        }
        dt = now_us() - t0;
        CHECK(verify(in, 8, peer, seq) < 0, "%s: message %d differs", names[p], seq);
      } else if (my_rank == 0) {
        MPI_Request r;
        fill(b, 8, 0, seq);
        double t0 = now_us();
        MPI_OK(MPI_Irecv(in, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r));
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        dt = (now_us() - t0) / 2;
        CHECK(verify(in, 8, 1, seq) < 0, "%s: reply %d differs", names[p], seq);
      } else {
        recv_via(p < SEND ? p : RECV, in);
        CHECK(verify(in, 8, 0, seq) < 0, "%s: message %d differs", names[p], seq);
        fill(b, 8, 1, seq);
        send_via(p >= SEND ? p : SEND, b);
        dt = 0;
      }
      if (k >= 0) v[k] = dt;
    }
    if (my_rank == 0) put_stat(names[p], v, reps);
  }
  if (my_rank == 0) printf(" n=%d\n", reps);
  fflush(stdout);
  int sz;
  MPI_OK(MPI_Buffer_detach(&att, &sz));
  free(att);
  MPI_Finalize();
  return 0;
}
