/* timing.c: measures what each knob is meant to change, for the bounds
 * checked by cli/tests/mpi_knobs.rs. Run with np = 2 as
 *   timing <mode> <repetitions>
 * and read the one result line "timing <mode>: key=value ..." (for each
 * quantity its median over the repetitions, and key_p10 and key_min, in
 * microseconds; cpu_* is CPU time of the calling thread, which tells a busy
 * wait from a sleep). The program checks only the data;
 * the bounds are the test's. Modes and what a correct shim gives:
 *   pingpong   8-byte ping-pong, half_rtt_us: native + L (rank 0 prints)
 *   osend      time inside MPI_Send of 8 bytes, send_us and cpu_send_us:
 *              at least o_s, CPU busy (rank 0 prints)
 *   orecv      time inside MPI_Recv of an 8-byte message that arrived 300 us
 *              earlier, recv_us and cpu_recv_us: at least o_r (rank 1 prints)
 *   gap        50 back-to-back 8-byte MPI_Isend then MPI_Waitall: isend_us
 *              (the 50 calls) and total_us: total at least 49 * g_s; the
 *              calls alone block only once LOGGP_SEND_QUEUE messages wait
 *              (rank 0 prints)
 *   gapwait    as gap, but MPI_Wait on each request in turn: first_us
 *              (Isends and the first Wait) is short, total_us at least
 *              49 * g_s. MPI gives small eager sends one shared completed
 *              request handle; the shim must still complete each in its
 *              turn (rank 0 prints)
 *   recvgap    50 8-byte messages that all arrived 500 us earlier, received
 *              one after another: recv_us at least 49 * g_r (rank 1 prints)
 *   bw         1 MiB MPI_Send then a 0-byte reply: send_us (the Send) and
 *              time_us (until the reply): at least (2^20 - 1) * G (rank 0)
 *   probe      rank 1 sends a 0-byte go, rank 0 answers with 8 bytes, rank 1
 *              probes for it, in turn with an MPI_Iprobe loop (probe_us),
 *              a blocking MPI_Probe (bprobe_us) and an MPI_Improbe loop
 *              (mprobe_us), from go sent to probe true: a full round trip,
 *              at least 2 L; recv_us (the Recv or Mrecv after the probe)
 *              is small (rank 1 prints)
 * Data are checked; on failure "FAIL timing rank R: ..." and exit non-zero. */
#include "common.h"

enum { MAXREP = 2000, WARMUP = 20, GAPN = 50 };
static double v1[MAXREP], v2[MAXREP];

static void go_to_0(void) { MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD)); }
static void wait_go(void) {
  MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void check8(const unsigned char *b, int src, int seq) {
  CHECK(verify(b, 8, src, seq) < 0, "8-byte message %d from %d differs", seq, src);
}

int main(int argc, char **argv) {
  init_common("timing", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(argc == 3, "usage: timing <mode> <repetitions>");
  const char *mode = argv[1];
  int reps = atoi(argv[2]);
  CHECK(np == 2, "needs 2 ranks, got %d", np);
  CHECK(reps >= 1 && reps <= MAXREP, "repetitions must be 1..%d", MAXREP);
  unsigned char *b = malloc(1 << 20);
  unsigned char small[GAPN][8];
  MPI_Request r[GAPN];
  MPI_Barrier(MPI_COMM_WORLD);

  if (!strcmp(mode, "pingpong")) {
    for (int k = -WARMUP; k < reps; k++) {
      int seq = k + WARMUP;
      if (my_rank == 0) {
        fill(b, 8, 0, seq);
        double t0 = now_us();
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double dt = now_us() - t0;
        check8(b, 1, seq);
        if (k >= 0) v1[k] = dt / 2;
      } else {
        MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        check8(b, 0, seq);
        fill(b, 8, 1, seq);
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
      }
    }
    if (my_rank == 0) {
      printf("timing pingpong:");
      put_stat("half_rtt_us", v1, reps);
      printf(" n=%d\n", reps);
    }
  } else if (!strcmp(mode, "osend")) {
    for (int k = -WARMUP; k < reps; k++) {
      int seq = k + WARMUP;
      if (my_rank == 0) {
        fill(b, 8, 0, seq);
        double c0 = cpu_us(), t0 = now_us();
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        double t1 = now_us(), c1 = cpu_us();
        if (k >= 0) {
          v1[k] = t1 - t0;
          v2[k] = c1 - c0;
        }
        wait_go();
      } else {
        MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        check8(b, 0, seq);
        go_to_0();
      }
    }
    if (my_rank == 0)
    {
      printf("timing osend:");
      put_stat("send_us", v1, reps);
      put_stat("cpu_send_us", v2, reps);
      printf(" n=%d\n", reps);
    }
  } else if (!strcmp(mode, "orecv")) {
    for (int k = -WARMUP; k < reps; k++) {
      int seq = k + WARMUP;
      if (my_rank == 0) {
        wait_go();
        fill(b, 8, 0, seq);
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
      } else {
        go_to_0();
        busy_until(now_us() + 300);
        double c0 = cpu_us(), t0 = now_us();
        MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t1 = now_us(), c1 = cpu_us();
        check8(b, 0, seq);
        if (k >= 0) {
          v1[k] = t1 - t0;
          v2[k] = c1 - c0;
        }
      }
    }
    if (my_rank == 1)
    {
      printf("timing orecv:");
      put_stat("recv_us", v1, reps);
      put_stat("cpu_recv_us", v2, reps);
      printf(" n=%d\n", reps);
    }
  } else if (!strcmp(mode, "gap")) {
    for (int k = -2; k < reps; k++) {
      if (my_rank == 0) {
        for (int i = 0; i < GAPN; i++) fill(small[i], 8, 0, i);
        wait_go();
        double t0 = now_us();
        for (int i = 0; i < GAPN; i++)
          MPI_OK(MPI_Isend(small[i], 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[i]));
        double t1 = now_us();
        MPI_OK(MPI_Waitall(GAPN, r, MPI_STATUSES_IGNORE));
        double t2 = now_us();
        if (k >= 0) {
          v1[k] = t1 - t0;
          v2[k] = t2 - t0;
        }
      } else {
        for (int i = 0; i < GAPN; i++)
          MPI_OK(MPI_Irecv(small[i], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[i]));
        go_to_0();
        MPI_OK(MPI_Waitall(GAPN, r, MPI_STATUSES_IGNORE));
        for (int i = 0; i < GAPN; i++) check8(small[i], 0, i);
      }
    }
    if (my_rank == 0)
    {
      printf("timing gap:");
      put_stat("isend_us", v1, reps);
      put_stat("total_us", v2, reps);
      printf(" n=%d messages=%d\n", reps, GAPN);
    }
  } else if (!strcmp(mode, "gapwait")) {
    for (int k = -2; k < reps; k++) {
      if (my_rank == 0) {
        for (int i = 0; i < GAPN; i++) fill(small[i], 8, 0, i);
        wait_go();
        double t0 = now_us();
        for (int i = 0; i < GAPN; i++)
          MPI_OK(MPI_Isend(small[i], 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[i]));
        MPI_OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        double t1 = now_us();
        for (int i = 1; i < GAPN; i++) MPI_OK(MPI_Wait(&r[i], MPI_STATUS_IGNORE));
        double t2 = now_us();
        if (k >= 0) {
          v1[k] = t1 - t0;
          v2[k] = t2 - t0;
        }
      } else {
        for (int i = 0; i < GAPN; i++)
          MPI_OK(MPI_Irecv(small[i], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[i]));
        go_to_0();
        MPI_OK(MPI_Waitall(GAPN, r, MPI_STATUSES_IGNORE));
        for (int i = 0; i < GAPN; i++) check8(small[i], 0, i);
      }
    }
    if (my_rank == 0) {
      printf("timing gapwait:");
      put_stat("first_us", v1, reps);
      put_stat("total_us", v2, reps);
      printf(" n=%d messages=%d\n", reps, GAPN);
    }
  } else if (!strcmp(mode, "recvgap")) {
    for (int k = -2; k < reps; k++) {
      if (my_rank == 0) {
        for (int i = 0; i < GAPN; i++) fill(small[i], 8, 0, i);
        wait_go();
        for (int i = 0; i < GAPN; i++)
          MPI_OK(MPI_Isend(small[i], 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[i]));
        MPI_OK(MPI_Waitall(GAPN, r, MPI_STATUSES_IGNORE));
      } else {
        go_to_0();
        busy_until(now_us() + 500);
        double t0 = now_us();
        for (int i = 0; i < GAPN; i++)
          MPI_OK(MPI_Recv(small[i], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t1 = now_us();
        for (int i = 0; i < GAPN; i++) check8(small[i], 0, i);
        if (k >= 0) v1[k] = t1 - t0;
      }
    }
    if (my_rank == 1)
    {
      printf("timing recvgap:");
      put_stat("recv_us", v1, reps);
      printf(" n=%d messages=%d\n", reps, GAPN);
    }
  } else if (!strcmp(mode, "bw")) {
    const int n = 1 << 20;
    for (int k = -1; k < reps; k++) {
      if (my_rank == 0) {
        fill(b, (size_t)n, 0, k + 1);
        wait_go();
        double t0 = now_us();
        MPI_OK(MPI_Send(b, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        double t1 = now_us();
        MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t2 = now_us();
        if (k >= 0) {
          v1[k] = t1 - t0;
          v2[k] = t2 - t0;
        }
      } else {
        go_to_0();
        MPI_OK(MPI_Recv(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
        CHECK(verify(b, (size_t)n, 0, k + 1) < 0, "1 MiB message %d differs", k + 1);
      }
    }
    if (my_rank == 0)
    {
      printf("timing bw:");
      put_stat("send_us", v1, reps);
      put_stat("time_us", v2, reps);
      printf(" n=%d bytes=%d\n", reps, n);
    }
  } else if (!strcmp(mode, "probe")) {
    /* Repetition k uses variant k % 3: MPI_Iprobe loop then MPI_Recv,
     * blocking MPI_Probe then MPI_Recv, MPI_Improbe loop then MPI_Mrecv. */
    static double v3[MAXREP];
    int nv[3] = {0, 0, 0};
    double *pv[3] = {v1, v2, v3};
    static double rv[MAXREP];
    int nr = 0;
    for (int k = -3; k < reps; k++) {
      int variant = (k + 3) % 3;
      if (my_rank == 0) {
        wait_go();
        fill(b, 8, 0, k + 3);
        MPI_OK(MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
      } else {
        int flag = 0;
        MPI_Status st;
        MPI_Message msg = MPI_MESSAGE_NULL;
        double t0 = now_us(), give_up = t0 + 20e6;
        go_to_0();
        if (variant == 1) {
          MPI_OK(MPI_Probe(0, 1, MPI_COMM_WORLD, &st));
        } else {
          while (!flag) {
            if (variant == 0) {
              MPI_OK(MPI_Iprobe(0, 1, MPI_COMM_WORLD, &flag, &st));
            } else {
              MPI_OK(MPI_Improbe(0, 1, MPI_COMM_WORLD, &flag, &msg, &st));
            }
            CHECK(flag || now_us() < give_up, "the probe never saw the message");
          }
        }
        double t1 = now_us();
        if (variant == 2) {
          MPI_OK(MPI_Mrecv(b, 8, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
        } else {
          MPI_OK(MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        double t2 = now_us();
        check8(b, 0, k + 3);
        if (k >= 0) {
          pv[variant][nv[variant]++] = t1 - t0;
          rv[nr++] = t2 - t1;
        }
      }
    }
    if (my_rank == 1) {
      CHECK(nv[0] > 0 && nv[1] > 0 && nv[2] > 0, "probe needs at least 3 repetitions");
      printf("timing probe:");
      put_stat("probe_us", v1, nv[0]);
      put_stat("bprobe_us", v2, nv[1]);
      put_stat("mprobe_us", v3, nv[2]);
      put_stat("recv_us", rv, nr);
      printf(" n=%d\n", reps);
    }
  } else {
    CHECK(0, "unknown mode %s", mode);
  }
  fflush(stdout);
  free(b);
  MPI_Finalize();
  return 0;
}
