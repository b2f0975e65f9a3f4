/* Nonblocking collectives in flight together, and MPI's progress rule
 *. Complements coll_nb.c, which checks each nonblocking
 * collective's result on its own.
 *
 *   icoll check           all checks (np >= 4 for the progress checks);
 *                         rank 0 prints "icoll check: ok np=..."
 *   icoll freed           see freed_comm(): "icoll freed: ok np=..."
 *   icoll ibarrier <reps> times Ibarrier+Wait: "icoll ibarrier: us=..."
 *
 * Checks:
 *  - several collectives in flight on one communicator (different roots,
 *    ops and kinds), completed in reverse order, by Waitall, by a Testany
 *    loop, with a blocking collective and point-to-point traffic in between;
 *  - progress: a rank that must forward its part of an Ibcast is blocked in
 *    MPI_Recv, MPI_Ssend or MPI_Probe waiting for a rank that waits for that
 *    Ibcast (correct MPI: the library must progress the collective inside
 *    the blocking call);
 *  - the first collective on a new communicator is a nonblocking one that a
 *    peer joins only after a point-to-point exchange (initiation must not
 *    block);
 *  - (mode "freed") a communicator freed while a collective on it is in
 *    flight.
 * A deadlock is caught by the harness's timeout. */
#include "common.h"

static int P, R;

static int ival(int r, int i) { return (r + 1) * 1000 + i; }

/* Several in flight, completed in reverse order / by Waitall / Testany. */
static void in_flight(MPI_Comm comm, int how) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  enum { N = 6, LEN = 2049 };
  static int b[N][LEN], s[LEN], ar[LEN], red[LEN];
  MPI_Request q[N + 3];
  int nq = 0;
  for (int k = 0; k < N; k++) {
    int root = k % p;
    for (int i = 0; i < LEN; i++) b[k][i] = r == root ? ival(root, i) + k : -1;
    MPI_OK(MPI_Ibcast(b[k], LEN, MPI_INT, root, comm, &q[nq++]));
  }
  for (int i = 0; i < LEN; i++) s[i] = ival(r, i);
  MPI_OK(MPI_Iallreduce(s, ar, LEN, MPI_INT, MPI_SUM, comm, &q[nq++]));
  MPI_OK(MPI_Ireduce(s, red, LEN, MPI_INT, MPI_MAX, p - 1, comm, &q[nq++]));
  MPI_OK(MPI_Ibarrier(comm, &q[nq++]));
  /* Traffic in between: a blocking collective and a ring exchange. */
  int x = r, y = -1;
  MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, comm));
  CHECK(x == p * (p - 1) / 2, "blocking allreduce between nonblocking ones: %d", x);
  MPI_OK(MPI_Sendrecv(&r, 1, MPI_INT, (r + 1) % p, 7, &y, 1, MPI_INT, (r + p - 1) % p, 7, comm,
                      MPI_STATUS_IGNORE));
  CHECK(y == (r + p - 1) % p, "ring exchange: %d", y);
  if (how == 0) {
    for (int k = nq - 1; k >= 0; k--) MPI_OK(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
  } else if (how == 1) {
    MPI_OK(MPI_Waitall(nq, q, MPI_STATUSES_IGNORE));
  } else {
    int left = nq;
    while (left > 0) {
      int idx, f;
      MPI_OK(MPI_Testany(nq, q, &idx, &f, MPI_STATUS_IGNORE));
      if (f && idx != MPI_UNDEFINED) left--;
    }
  }
  for (int k = 0; k < nq; k++) CHECK(q[k] == MPI_REQUEST_NULL, "request %d not freed", k);
  for (int k = 0; k < N; k++)
    for (int i = 0; i < LEN; i++)
      CHECK(b[k][i] == ival(k % p, i) + k, "ibcast %d i=%d: %d", k, i, b[k][i]);
  for (int i = 0; i < LEN; i++) {
    long sum = 0;
    for (int j = 0; j < p; j++) sum += ival(j, i);
    CHECK(ar[i] == (int)sum, "iallreduce i=%d", i);
    if (r == p - 1) CHECK(red[i] == ival(p - 1, i), "ireduce i=%d", i);
  }
}

/* Binomial Ibcast from 0 on 4+ ranks: rank 2 forwards to rank 3. Rank 2
 * then blocks in `how` (0 Recv, 1 Ssend, 2 Probe+Recv) on rank 3, which
 * first waits for the Ibcast. */
static void progress_rule(int how) {
  if (P < 4) return;
  int b = R == 0 ? 4242 + how : -1, v = -1;
  MPI_Request q;
  /* The root starts only once rank 2 has started, so rank 2 cannot have
   * forwarded before it blocks. */
  int go = 0;
  if (R == 0) MPI_OK(MPI_Recv(&go, 1, MPI_INT, 2, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  MPI_OK(MPI_Ibcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD, &q));
  if (R == 2) {
    MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
    if (how == 1) {
      v = 99;
      MPI_OK(MPI_Ssend(&v, 1, MPI_INT, 3, 5, MPI_COMM_WORLD));
    } else {
      if (how == 2) MPI_OK(MPI_Probe(3, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      MPI_OK(MPI_Recv(&v, 1, MPI_INT, 3, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(v == 4242 + how, "rank 3 sent %d", v);
    }
    MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
  } else if (R == 3) {
    MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (how == 1) {
      MPI_OK(MPI_Recv(&v, 1, MPI_INT, 2, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(v == 99, "rank 2 sent %d", v);
    } else {
      MPI_OK(MPI_Send(&b, 1, MPI_INT, 2, 5, MPI_COMM_WORLD));
    }
  } else {
    MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
  }
  CHECK(b == 4242 + how, "ibcast under the progress rule (%d): %d", how, b);
}

/* A fresh communicator whose first collective is nonblocking: rank 0 starts
 * it, then synchronously sends to rank 1, which joins only after receiving. */
static void first_on_new_comm(void) {
  MPI_Comm c;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, R, &c));
  MPI_Request q;
  int v = -1;
  if (R == 0) {
    MPI_OK(MPI_Ibarrier(c, &q));
    v = 17;
    MPI_OK(MPI_Ssend(&v, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
  } else if (R == 1) {
    MPI_OK(MPI_Recv(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(v == 17, "got %d", v);
    MPI_OK(MPI_Ibarrier(c, &q));
  } else {
    MPI_OK(MPI_Ibarrier(c, &q));
  }
  MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
  /* And a blocking one after it on the same communicator. */
  int x = 1;
  MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, c));
  CHECK(x == P, "allreduce on the new communicator: %d", x);
  MPI_OK(MPI_Comm_free(&c));
}

/* A communicator freed while a collective on it is in flight (allowed: the
 * free is deferred). Native Open MPI 4.1.4 crashes here (libnbc). */
static void freed_comm(void) {
  MPI_Comm sub;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &sub));
  int fb[64], fr[64];
  for (int i = 0; i < 64; i++) fb[i] = R + i;
  MPI_Request fq;
  MPI_OK(MPI_Iallreduce(fb, fr, 64, MPI_INT, MPI_SUM, sub, &fq));
  MPI_OK(MPI_Comm_free(&sub));
  MPI_OK(MPI_Wait(&fq, MPI_STATUS_IGNORE));
  for (int i = 0; i < 64; i++) CHECK(fr[i] == P * (P - 1) / 2 + P * i, "iallreduce on a freed comm i=%d", i);
  /* A new communicator may reuse the freed handle. */
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &sub));
  int x = 1;
  MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, sub));
  CHECK(x == P, "allreduce after the free: %d", x);
  MPI_OK(MPI_Comm_free(&sub));
}

int main(int argc, char **argv) {
  prog_name = "icoll";
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  my_rank = R;
  const char *mode = argc > 1 ? argv[1] : "check";
  if (!strcmp(mode, "check")) {
    first_on_new_comm();
    for (int how = 0; how < 3; how++) in_flight(MPI_COMM_WORLD, how);
    MPI_Comm sub;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, R % 2, R, &sub));
    in_flight(sub, 1);
    MPI_OK(MPI_Comm_free(&sub));
    for (int how = 0; how < 3; how++) progress_rule(how);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (R == 0) printf("icoll check: ok np=%d checks=%ld\n", P, n_checks);
  } else if (!strcmp(mode, "freed")) {
    freed_comm();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (R == 0) printf("icoll freed: ok np=%d\n", P);
  } else if (!strcmp(mode, "ibarrier")) {
    int reps = argc > 2 ? atoi(argv[2]) : 50;
    double *t = malloc(sizeof(double) * (size_t)reps);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -3; i < reps; i++) {
      MPI_Request q;
      double t0 = now_us();
      MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &q));
      MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      if (i >= 0) t[i] = now_us() - t0;
    }
    if (R == 0) {
      printf("icoll ibarrier:");
      put_stat("us", t, reps);
      printf("\n");
    }
    free(t);
  } else {
    fprintf(stderr, "icoll: unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return 0;
}
