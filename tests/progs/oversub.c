/* Workloads for more ranks than cores (2x the cores in the tests and in
 * scripts/bench-oversub.sh): what a test suite or a laptop run does, timed
 * as a whole. Each mode runs a fixed amount of work and checks its data;
 * rank 0 prints "oversub MODE: ok np=N s=<wall seconds of the work>"
 * (the slowest rank's time between two barriers).
 *
 *   oversub nbx [iters]    nonblocking exchanges with the neighbours of a
 *                          ring (Irecv x2, Isend x2, Waitall), 64 B and 8 KiB
 *   oversub pp [iters]     blocking ping-pong between pairs (Send/Recv)
 *   oversub coll [iters]   blocking collectives (Allreduce, Bcast, Barrier,
 *                          Alltoall), the shim's own under virtual time
 *   oversub icoll [iters]  nonblocking collectives (Iallreduce, Ibcast,
 *                          Ibarrier) completed by Wait / Waitall / Test
 *   oversub all [iters]    each of the above, in turn
 *   oversub idle           rank 1 waits ~300 ms for rank 0 (which sleeps)
 *                          in MPI_Probe, then in MPI_Waitany, then in
 *                          MPI_Wait with an Ibarrier in flight, and prints
 *                          "oversub idle: ok np=N probe_cpu=F waitany_cpu=F
 *                          wait_cpu=F sleep_cpu=F": the CPU time rank 1 used
 *                          in each wait over its wall time (near 1 for a
 *                          spinning wait, near 0 for one that gives the
 *                          processor away), and, as a control, in a bare
 *                          loop of 1 ms nanosleeps for 100 ms (what this
 *                          machine charges a thread that only sleeps)
 */
#include "common.h"

static int P, R;

static void nbx(int iters) {
  enum { BIG = 2048 };
  static int sl[BIG], sr[BIG], rl[BIG], rr[BIG];
  int left = (R + P - 1) % P, right = (R + 1) % P;
  for (int it = 0; it < iters; it++) {
    int n = (it % 4 == 3) ? BIG : 16;
    for (int i = 0; i < n; i++) {
      sl[i] = R * 100000 + it + i;
      sr[i] = R * 100000 + it - i;
    }
    MPI_Request q[4];
    MPI_OK(MPI_Irecv(rl, n, MPI_INT, left, 1, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Irecv(rr, n, MPI_INT, right, 2, MPI_COMM_WORLD, &q[1]));
    MPI_OK(MPI_Isend(sl, n, MPI_INT, left, 2, MPI_COMM_WORLD, &q[2]));
    MPI_OK(MPI_Isend(sr, n, MPI_INT, right, 1, MPI_COMM_WORLD, &q[3]));
    MPI_OK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
    CHECK(rl[n - 1] == left * 100000 + it - (n - 1), "nbx it=%d from left: %d", it, rl[n - 1]);
    CHECK(rr[0] == right * 100000 + it, "nbx it=%d from right: %d", it, rr[0]);
  }
}

static void pp(int iters) {
  /* Pairs (0,1), (2,3), ...; an odd last rank sits it out. */
  int peer = R ^ 1;
  if (peer >= P) return;
  int v = 0;
  for (int it = 0; it < iters; it++) {
    if (R < peer) {
      v = it;
      MPI_OK(MPI_Send(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(v == it + 1, "pp it=%d: %d", it, v);
    } else {
      MPI_OK(MPI_Recv(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      v++;
      MPI_OK(MPI_Send(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD));
    }
  }
}

static void coll(int iters) {
  int *a = malloc(sizeof(int) * (size_t)P * 4), *b = malloc(sizeof(int) * (size_t)P * 4);
  for (int it = 0; it < iters; it++) {
    int x = R + it, y = -1;
    MPI_OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == P * (P - 1) / 2 + P * it, "allreduce it=%d: %d", it, y);
    int root = it % P;
    y = R == root ? it * 7 : -1;
    MPI_OK(MPI_Bcast(&y, 1, MPI_INT, root, MPI_COMM_WORLD));
    CHECK(y == it * 7, "bcast it=%d: %d", it, y);
    if (it % 4 == 0) MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (it % 4 == 1) {
      for (int i = 0; i < P * 4; i++) a[i] = R * 1000 + i;
      MPI_OK(MPI_Alltoall(a, 4, MPI_INT, b, 4, MPI_INT, MPI_COMM_WORLD));
      for (int j = 0; j < P; j++) CHECK(b[j * 4] == j * 1000 + R * 4, "alltoall it=%d from %d", it, j);
    }
  }
  free(a);
  free(b);
}

static void icoll(int iters) {
  for (int it = 0; it < iters; it++) {
    int x = R + it, y = -1, z = R == it % P ? it : -1;
    MPI_Request q[3];
    MPI_OK(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Ibcast(&z, 1, MPI_INT, it % P, MPI_COMM_WORLD, &q[1]));
    MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &q[2]));
    if (it % 3 == 0) {
      MPI_OK(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
    } else if (it % 3 == 1) {
      for (int k = 2; k >= 0; k--) MPI_OK(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
    } else {
      int flag = 0;
      while (!flag) MPI_OK(MPI_Testall(3, q, &flag, MPI_STATUSES_IGNORE));
    }
    CHECK(y == P * (P - 1) / 2 + P * it, "iallreduce it=%d: %d", it, y);
    CHECK(z == it, "ibcast it=%d: %d", it, z);
  }
}

/* Rank 1's CPU time over wall time while it waits for rank 0, which
 * sleeps `ms` first; `how`: 0 Probe, 1 Waitany, 2 Wait with an Ibarrier in
 * flight (the others are in it too). */
static double idle_wait(int how, int ms) {
  int v = 0, got = -1;
  double frac = -1;
  MPI_Request ib = MPI_REQUEST_NULL;
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  if (how == 2) MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &ib));
  if (R == 0) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    v = 40 + how;
    MPI_OK(MPI_Send(&v, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
  } else if (R == 1) {
    double w0 = now_us(), c0 = cpu_us();
    if (how == 0) {
      MPI_OK(MPI_Probe(0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      frac = (cpu_us() - c0) / (now_us() - w0);
      MPI_OK(MPI_Recv(&got, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
      MPI_Request q;
      int idx;
      MPI_OK(MPI_Irecv(&got, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &q));
      if (how == 1)
        MPI_OK(MPI_Waitany(1, &q, &idx, MPI_STATUS_IGNORE));
      else
        MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      frac = (cpu_us() - c0) / (now_us() - w0);
    }
    CHECK(got == 40 + how, "idle %d: got %d", how, got);
  }
  if (how == 2) MPI_OK(MPI_Wait(&ib, MPI_STATUS_IGNORE));
  return frac;
}

/* The CPU share of a thread that only sleeps, 1 ms at a time, for `ms`. */
static double sleep_share(int ms) {
  double w0 = now_us(), c0 = cpu_us();
  while (now_us() - w0 < ms * 1000.0) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  return (cpu_us() - c0) / (now_us() - w0);
}

static double timed(void (*f)(int), int iters) {
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = now_us();
  f(iters);
  double t = now_us() - t0, mx = 0;
  MPI_OK(MPI_Reduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  return mx / 1e6;
}

int main(int argc, char **argv) {
  prog_name = "oversub";
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  my_rank = R;
  const char *mode = argc > 1 ? argv[1] : "all";
  int iters = argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(mode, "idle")) {
    CHECK(P >= 2, "idle needs 2 ranks");
    double f[3];
    for (int how = 0; how < 3; how++) f[how] = idle_wait(how, 300);
    if (R == 1) {
      double s = sleep_share(100);
      printf("oversub idle: ok np=%d probe_cpu=%.3f waitany_cpu=%.3f wait_cpu=%.3f sleep_cpu=%.3f\n", P,
             f[0], f[1], f[2], s);
      fflush(stdout);
    }
    MPI_Finalize();
    return 0;
  }
  static const struct {
    const char *name;
    void (*f)(int);
    int iters;
  } modes[] = {{"nbx", nbx, 2000}, {"pp", pp, 2000}, {"coll", coll, 1000}, {"icoll", icoll, 500}};
  int any = 0;
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    if (strcmp(mode, "all") && strcmp(mode, modes[m].name)) continue;
    any = 1;
    double s = timed(modes[m].f, iters > 0 ? iters : modes[m].iters);
    if (R == 0) {
      printf("oversub %s: ok np=%d s=%.4f\n", modes[m].name, P, s);
      fflush(stdout);
    }
  }
  CHECK(any, "unknown mode %s", mode);
  MPI_Finalize();
  return 0;
}
