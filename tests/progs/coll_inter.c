/* Collectives on an intercommunicator (MPI-4.0 §6.2.2). np >= 2: even and
 * odd world ranks form the two groups (A and B), joined by
 * MPI_Intercomm_create.
 *
 *   coll_inter [nb]     Barrier, Bcast, Gather, Gatherv, Scatter, Scatterv,
 *                       Allgather, Allgatherv, Alltoall, Alltoallv,
 *                       Alltoallw, Reduce_scatter_block, Reduce
 *                       (sum, and a non-commutative user operation, whose
 *                       result shows the order of the operands) and
 *                       Allreduce, each with roots in both groups, checked
 *                       element by element; with "nb" their nonblocking
 *                       forms, each completed by MPI_Wait; prints
 *                       "coll inter: ok np=N" (" nonblocking").
 *   coll_inter time     (np = 2) a Bcast of 8 bytes from group A to group
 *                       B and one back, 200 times: world rank 0 prints half
 *                       the round trip, one Bcast's latency, as
 *                       "coll inter: bcast_us=<median> ..._p10 ..._min".
 *   coll_inter refused  MPI_Reduce_scatter on the intercommunicator
 *                       (which the shim refuses under virtual time, with
 *                       one line).
 * On failure "FAIL coll_inter rank R: ..." and a non-zero exit. */
#include "common.h"

static int lr, lsize, rsize, grp; /* local rank, local size, remote size, 0=A 1=B */
static int nbmode; /* the nonblocking forms, each completed by MPI_Wait */

/* A collective: blocking `b`, or nonblocking `i` (request q_) and Wait. */
#define COLL(b, i)                                                            \
  do {                                                                        \
    if (nbmode) {                                                             \
      MPI_Request q_;                                                         \
      MPI_OK(i);                                                              \
      MPI_OK(MPI_Wait(&q_, MPI_STATUS_IGNORE));                               \
    } else {                                                                  \
      MPI_OK(b);                                                              \
    }                                                                         \
  } while (0)

/* A value that names its origin: group, rank in it, element. */
static int val(int g, int r, int i) { return 100000 * (g + 1) + 1000 * r + i; }

/* Associative, not commutative: pairs (m, c) are the affine maps
 * x -> m x + c modulo a prime, and the operation composes them:
 * (a, b) . (c, d) = (a c, a d + b). The result shows the operands' order. */
#define PR 1000003LL
static void compose(long long *f, long long *g) { /* g = f . g */
  long long m = f[0] * g[0] % PR, c = (f[0] * g[1] + f[1]) % PR;
  g[0] = m, g[1] = c;
}
static void lin(void *in, void *inout, int *n, MPI_Datatype *dt) {
  (void)dt;
  long long *a = in, *b = inout;
  for (int i = 0; i + 1 < *n; i += 2) compose(a + i, b + i);
}

/* root argument for a collective whose root is rank `r` of group `g`. */
static int root_arg(int g, int r) {
  if (grp == g) return lr == r ? MPI_ROOT : MPI_PROC_NULL;
  return r;
}

static void checks(MPI_Comm ic) {
  enum { N = 3 };
  int other = 1 - grp;
  int *sb = malloc(sizeof(int) * N * 64), *rb = malloc(sizeof(int) * N * 64);
  int *cnt = malloc(sizeof(int) * 64), *dsp = malloc(sizeof(int) * 64);
  COLL(MPI_Barrier(ic), MPI_Ibarrier(ic, &q_));
  for (int g = 0; g < 2; g++) {
    int rsz = g == grp ? rsize : lsize; /* size of the non-root group */
    int root = g == 0 ? 0 : (g == grp ? lsize : rsize) - 1;
    int ra = root_arg(g, root);
    /* Bcast */
    for (int i = 0; i < N; i++) rb[i] = grp == g && lr == root ? val(g, root, i) : -1;
    COLL(MPI_Bcast(rb, N, MPI_INT, ra, ic), MPI_Ibcast(rb, N, MPI_INT, ra, ic, &q_));
    if (grp != g)
      for (int i = 0; i < N; i++) CHECK(rb[i] == val(g, root, i), "Bcast root %d/%d: %d", g, root, rb[i]);
    /* Gather and Gatherv (block j of remote rank j; Gatherv in reverse slots) */
    for (int i = 0; i < N; i++) sb[i] = val(grp, lr, i);
    for (int i = 0; i < N * rsz; i++) rb[i] = -1;
    COLL(MPI_Gather(sb, N, MPI_INT, rb, N, MPI_INT, ra, ic), MPI_Igather(sb, N, MPI_INT, rb, N, MPI_INT, ra, ic, &q_));
    if (ra == MPI_ROOT)
      for (int j = 0; j < rsz; j++)
        for (int i = 0; i < N; i++)
          CHECK(rb[j * N + i] == val(other, j, i), "Gather: [%d][%d] = %d", j, i, rb[j * N + i]);
    for (int j = 0; j < rsz; j++) cnt[j] = 1 + j % N, dsp[j] = N * (rsz - 1 - j);
    for (int i = 0; i < N * rsz; i++) rb[i] = -1;
    COLL(MPI_Gatherv(sb, 1 + lr % N, MPI_INT, rb, cnt, dsp, MPI_INT, ra, ic), MPI_Igatherv(sb, 1 + lr % N, MPI_INT, rb, cnt, dsp, MPI_INT, ra, ic, &q_));
    if (ra == MPI_ROOT)
      for (int j = 0; j < rsz; j++)
        for (int i = 0; i < cnt[j]; i++)
          CHECK(rb[dsp[j] + i] == val(other, j, i), "Gatherv: [%d][%d] = %d", j, i, rb[dsp[j] + i]);
    /* Scatter and Scatterv */
    if (ra == MPI_ROOT)
      for (int j = 0; j < rsz; j++)
        for (int i = 0; i < N; i++) sb[j * N + i] = val(grp, j, i);
    for (int i = 0; i < N; i++) rb[i] = -1;
    COLL(MPI_Scatter(sb, N, MPI_INT, rb, N, MPI_INT, ra, ic), MPI_Iscatter(sb, N, MPI_INT, rb, N, MPI_INT, ra, ic, &q_));
    if (grp != g)
      for (int i = 0; i < N; i++) CHECK(rb[i] == val(g, lr, i), "Scatter: [%d] = %d", i, rb[i]);
    for (int i = 0; i < N; i++) rb[i] = -1;
    COLL(MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, 1 + lr % N, MPI_INT, ra, ic), MPI_Iscatterv(sb, cnt, dsp, MPI_INT, rb, 1 + lr % N, MPI_INT, ra, ic, &q_));
    if (grp != g)
      for (int i = 0; i < 1 + lr % N; i++) {
        int j = lr, want = val(g, (N * (rsz - 1 - j) + i) / N, (N * (rsz - 1 - j) + i) % N);
        CHECK(rb[i] == want, "Scatterv: [%d] = %d, expected %d", i, rb[i], want);
      }
    /* Reduce: sum, and the non-commutative operation */
    long long ls[N], lsum[N];
    for (int i = 0; i < N; i++) ls[i] = val(grp, lr, i), lsum[i] = -1;
    COLL(MPI_Reduce(ls, lsum, N, MPI_LONG_LONG, MPI_SUM, ra, ic), MPI_Ireduce(ls, lsum, N, MPI_LONG_LONG, MPI_SUM, ra, ic, &q_));
    if (ra == MPI_ROOT)
      for (int i = 0; i < N; i++) {
        long long want = 0;
        for (int j = 0; j < rsz; j++) want += val(other, j, i);
        CHECK(lsum[i] == want, "Reduce sum [%d] = %lld, expected %lld", i, lsum[i], want);
      }
    MPI_Op op;
    MPI_OK(MPI_Op_create(lin, 0, &op));
    long long fx[2] = {val(grp, lr, 0) % PR, val(grp, lr, 1) % PR}, fr[2] = {-1, -1};
    COLL(MPI_Reduce(fx, fr, 2, MPI_LONG_LONG, op, ra, ic), MPI_Ireduce(fx, fr, 2, MPI_LONG_LONG, op, ra, ic, &q_));
    if (ra == MPI_ROOT) {
      /* x0 . x1 . ... . x(P-1), in the remote group's rank order */
      long long want[2] = {val(other, rsz - 1, 0) % PR, val(other, rsz - 1, 1) % PR};
      for (int j = rsz - 2; j >= 0; j--) {
        long long f[2] = {val(other, j, 0) % PR, val(other, j, 1) % PR};
        compose(f, want);
      }
      CHECK(fr[0] == want[0] && fr[1] == want[1],
            "Reduce non-commutative = (%lld, %lld), expected (%lld, %lld)", fr[0], fr[1], want[0],
            want[1]);
    }
    MPI_OK(MPI_Op_free(&op));
  }
  /* Allgather, Allgatherv, Alltoall, Alltoallv, Allreduce: remote group's data */
  for (int i = 0; i < N; i++) sb[i] = val(grp, lr, i);
  for (int i = 0; i < N * rsize; i++) rb[i] = -1;
  COLL(MPI_Allgather(sb, N, MPI_INT, rb, N, MPI_INT, ic), MPI_Iallgather(sb, N, MPI_INT, rb, N, MPI_INT, ic, &q_));
  for (int j = 0; j < rsize; j++)
    for (int i = 0; i < N; i++)
      CHECK(rb[j * N + i] == val(1 - grp, j, i), "Allgather [%d][%d] = %d", j, i, rb[j * N + i]);
  for (int j = 0; j < rsize; j++) cnt[j] = 1 + j % N, dsp[j] = N * (rsize - 1 - j);
  for (int i = 0; i < N * rsize; i++) rb[i] = -1;
  COLL(MPI_Allgatherv(sb, 1 + lr % N, MPI_INT, rb, cnt, dsp, MPI_INT, ic), MPI_Iallgatherv(sb, 1 + lr % N, MPI_INT, rb, cnt, dsp, MPI_INT, ic, &q_));
  for (int j = 0; j < rsize; j++)
    for (int i = 0; i < cnt[j]; i++)
      CHECK(rb[dsp[j] + i] == val(1 - grp, j, i), "Allgatherv [%d][%d] = %d", j, i, rb[dsp[j] + i]);
  for (int j = 0; j < rsize; j++)
    for (int i = 0; i < N; i++) sb[j * N + i] = val(grp, lr, 100 * j + i);
  for (int i = 0; i < N * rsize; i++) rb[i] = -1;
  COLL(MPI_Alltoall(sb, N, MPI_INT, rb, N, MPI_INT, ic), MPI_Ialltoall(sb, N, MPI_INT, rb, N, MPI_INT, ic, &q_));
  for (int j = 0; j < rsize; j++)
    for (int i = 0; i < N; i++)
      CHECK(rb[j * N + i] == val(1 - grp, j, 100 * lr + i), "Alltoall [%d][%d] = %d", j, i,
            rb[j * N + i]);
  /* Alltoallv: to remote j, 1 + (lr + j) % N elements from block j;
   * received into reversed blocks. */
  int *scnt = malloc(sizeof(int) * 64), *sdsp = malloc(sizeof(int) * 64);
  for (int j = 0; j < rsize; j++) {
    scnt[j] = 1 + (lr + j) % N, sdsp[j] = N * j;
    cnt[j] = 1 + (j + lr) % N, dsp[j] = N * (rsize - 1 - j);
  }
  for (int i = 0; i < N * rsize; i++) rb[i] = -1;
  COLL(MPI_Alltoallv(sb, scnt, sdsp, MPI_INT, rb, cnt, dsp, MPI_INT, ic), MPI_Ialltoallv(sb, scnt, sdsp, MPI_INT, rb, cnt, dsp, MPI_INT, ic, &q_));
  for (int j = 0; j < rsize; j++)
    for (int i = 0; i < cnt[j]; i++)
      CHECK(rb[dsp[j] + i] == val(1 - grp, j, 100 * lr + i), "Alltoallv [%d][%d] = %d", j, i,
            rb[dsp[j] + i]);
  /* Alltoallw: to remote j one int of block j, as MPI_INT, at byte
   * displacement 4 N j; received as one int at reversed byte offsets. */
  MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * 64);
  for (int j = 0; j < rsize; j++) {
    scnt[j] = 1, sdsp[j] = (int)sizeof(int) * N * j, ty[j] = MPI_INT;
    cnt[j] = 1, dsp[j] = (int)sizeof(int) * (rsize - 1 - j);
  }
  for (int i = 0; i < N * rsize; i++) rb[i] = -1;
  COLL(MPI_Alltoallw(sb, scnt, sdsp, ty, rb, cnt, dsp, ty, ic),
       MPI_Ialltoallw(sb, scnt, sdsp, ty, rb, cnt, dsp, ty, ic, &q_));
  for (int j = 0; j < rsize; j++)
    CHECK(rb[rsize - 1 - j] == val(1 - grp, j, 100 * lr), "Alltoallw [%d] = %d", j,
          rb[rsize - 1 - j]);
  free(ty);
  /* Reduce_scatter_block: vectors of T = 60 elements (divisible by every
   * group size up to 5), n = T / local size; rank k gets block k (its n)
   * of the sum of the remote group's vectors. */
  {
    enum { T = 60 };
    int n = T / lsize, v[T], w[T];
    for (int i = 0; i < T; i++) v[i] = val(grp, lr, i), w[i] = -1;
    COLL(MPI_Reduce_scatter_block(v, w, n, MPI_INT, MPI_SUM, ic),
         MPI_Ireduce_scatter_block(v, w, n, MPI_INT, MPI_SUM, ic, &q_));
    for (int i = 0; i < n; i++) {
      int want = 0;
      for (int j = 0; j < rsize; j++) want += val(1 - grp, j, lr * n + i);
      CHECK(w[i] == want, "Reduce_scatter_block [%d] = %d, expected %d", i, w[i], want);
    }
  }
  long long ls[N], lsum[N];
  for (int i = 0; i < N; i++) ls[i] = val(grp, lr, i), lsum[i] = -1;
  COLL(MPI_Allreduce(ls, lsum, N, MPI_LONG_LONG, MPI_SUM, ic), MPI_Iallreduce(ls, lsum, N, MPI_LONG_LONG, MPI_SUM, ic, &q_));
  for (int i = 0; i < N; i++) {
    long long want = 0;
    for (int j = 0; j < rsize; j++) want += val(1 - grp, j, i);
    CHECK(lsum[i] == want, "Allreduce [%d] = %lld, expected %lld", i, lsum[i], want);
  }
  COLL(MPI_Barrier(ic), MPI_Ibarrier(ic, &q_));
  free(sb), free(rb), free(cnt), free(dsp), free(scnt), free(sdsp);
}

int main(int argc, char **argv) {
  prog_name = "coll_inter";
  MPI_Init(&argc, &argv);
  int p, r;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  my_rank = r;
  CHECK(p >= 2 && p <= 64, "run with 2 to 64 ranks");
  const char *mode = argc > 1 ? argv[1] : "check";
  MPI_Comm local, ic;
  grp = r % 2;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, grp, r, &local));
  MPI_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, grp ? 0 : 1, 9, &ic));
  MPI_Comm_rank(local, &lr);
  MPI_Comm_size(local, &lsize);
  MPI_Comm_remote_size(ic, &rsize);
  if (!strcmp(mode, "time")) {
    enum { REPS = 200 };
    double v[REPS];
    long long x = 0;
    for (int k = -10; k < REPS; k++) {
      double t0 = now_us();
      MPI_OK(MPI_Bcast(&x, 1, MPI_LONG_LONG, root_arg(0, 0), ic));
      MPI_OK(MPI_Bcast(&x, 1, MPI_LONG_LONG, root_arg(1, 0), ic));
      if (k >= 0) v[k] = (now_us() - t0) / 2;
    }
    if (r == 0) {
      printf("coll inter:");
      put_stat("bcast_us", v, REPS);
      printf("\n");
    }
  } else if (!strcmp(mode, "refused")) {
    int x[64] = {0}, y = 0, counts[64];
    for (int i = 0; i < 64; i++) counts[i] = 1;
    MPI_OK(MPI_Reduce_scatter(x, &y, counts, MPI_INT, MPI_SUM, ic));
    if (r == 0) printf("coll inter: ok reduce_scatter\n");
  } else {
    nbmode = !strcmp(mode, "nb");
    checks(ic);
    if (r == 0) printf("coll inter: ok np=%d%s\n", p, nbmode ? " nonblocking" : "");
  }
  MPI_OK(MPI_Comm_free(&ic));
  MPI_OK(MPI_Comm_free(&local));
  MPI_Finalize();
  return 0;
}
