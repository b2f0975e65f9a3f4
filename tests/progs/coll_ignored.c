/* coll_ignored.c: collectives given junk in the arguments that MPI says
 * are ignored (MPI-4.0 §6.5–6.9). A correct implementation never
 * reads them: a shim that asks MPI_Type_size about MPI_DATATYPE_NULL fails
 * with MPI_ERR_TYPE (fatal by default) or hangs.
 *
 * Junk is a count of -1, MPI_DATATYPE_NULL, NULL buffers and NULL arrays:
 *
 *   Gather(v)   the receive arguments at the non-roots; with MPI_IN_PLACE
 *               at the root, its send count and type;
 *   Scatter(v)  the send arguments at the non-roots; with MPI_IN_PLACE as
 *               the root's receive buffer, its receive count and type;
 *   Allgather(v), Alltoall(v,w)  with MPI_IN_PLACE, the send count(s),
 *               displacements and type(s);
 *   Reduce      the receive buffer at the non-roots; MPI_IN_PLACE at root.
 *
 * (Neighbourhood collectives take no MPI_IN_PLACE and ignore nothing.)
 * Each call's results are checked. Roots 0 and np-1; every call in the
 * forms blocking and nonblocking (MPI_Ixxx + MPI_Wait), and, where the MPI
 * has them (MPI >= 4: MPICH), the scalar large-count ones (MPI_Gather_c;
 * MPI_Igather_c + MPI_Wait; ...). Any np up to 16.
 *
 * Prints "coll ignored: ok np=N forms=F" on rank 0, where F counts the
 * forms run (2, or 4 with the large-count ones); on failure
 * "FAIL coll_ignored rank R: ..." and MPI_Abort. */
#include "common.h"

enum { K = 3, MAXP = 16 };
enum { BLOCKING, NONBLOCKING, LARGE, LARGE_NB };
static int form;

static void wait1(MPI_Request *r) { MPI_OK(MPI_Wait(r, MPI_STATUS_IGNORE)); }

/* MPI_<B>(args) or MPI_I<n>(args) + Wait, by `form`. */
#define COLL(B, n, ...)                                                       \
  do {                                                                        \
    if (form == BLOCKING) {                                                   \
      MPI_OK(MPI_##B(__VA_ARGS__));                                           \
    } else {                                                                  \
      MPI_Request r_;                                                         \
      MPI_OK(MPI_I##n(__VA_ARGS__, &r_));                                     \
      wait1(&r_);                                                             \
    }                                                                         \
  } while (0)

/* Scalar-count collectives: also MPI_<B>_c (form LARGE) and MPI_I<n>_c +
 * Wait (LARGE_NB) where they exist. */
#if MPI_VERSION >= 4
#define FORMS 4
#define COLLC(B, n, ...)                                                      \
  do {                                                                        \
    if (form == LARGE) {                                                      \
      MPI_OK(MPI_##B##_c(__VA_ARGS__));                                       \
    } else if (form == LARGE_NB) {                                            \
      MPI_Request r_;                                                         \
      MPI_OK(MPI_I##n##_c(__VA_ARGS__, &r_));                                 \
      wait1(&r_);                                                             \
    } else {                                                                  \
      COLL(B, n, __VA_ARGS__);                                                \
    }                                                                         \
  } while (0)
#else
#define FORMS 2
#define COLLC COLL
#endif

static int val(int rank, int i) { return rank * 100 + i; }

/* Element i of block b of an all-to-all from rank `from` to rank `to`. */
static int a2a(int from, int to, int i) { return from * 1000 + to * 10 + i; }

static void check_blocks(const int *buf, int np, const char *what) {
  for (int r = 0; r < np; r++)
    for (int i = 0; i < K; i++)
      CHECK(buf[r * K + i] == val(r, i), "%s: block %d element %d is %d, expected %d",
            what, r, i, buf[r * K + i], val(r, i));
}

static void run(int np, int root) {
  int me = my_rank, is_root = me == root;
  int sb[K], rb[K], all[MAXP * K], counts[MAXP], displs[MAXP];
  MPI_Datatype types[MAXP];
  for (int i = 0; i < K; i++) sb[i] = val(me, i);
  for (int r = 0; r < np; r++) counts[r] = K, displs[r] = r * K, types[r] = MPI_INT;

  /* Gather, then Gather with MPI_IN_PLACE at the root. */
  for (int inplace = 0; inplace < 2; inplace++) {
    memset(all, 0xff, sizeof all);
    if (is_root && inplace) {
      memcpy(all + root * K, sb, sizeof sb);
      COLLC(Gather, gather, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, all, K, MPI_INT, root,
            MPI_COMM_WORLD);
    } else if (is_root) {
      COLLC(Gather, gather, sb, K, MPI_INT, all, K, MPI_INT, root, MPI_COMM_WORLD);
    } else {
      COLLC(Gather, gather, sb, K, MPI_INT, NULL, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    }
    if (is_root) check_blocks(all, np, inplace ? "gather in place" : "gather");
  }

  /* Scatter, then Scatter with MPI_IN_PLACE at the root. */
  for (int inplace = 0; inplace < 2; inplace++) {
    for (int r = 0; r < np; r++)
      for (int i = 0; i < K; i++) all[r * K + i] = is_root ? val(r, i) : -1;
    memset(rb, 0xff, sizeof rb);
    if (is_root && inplace) {
      COLLC(Scatter, scatter, all, K, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root,
            MPI_COMM_WORLD);
      memcpy(rb, all + root * K, sizeof rb);
    } else if (is_root) {
      COLLC(Scatter, scatter, all, K, MPI_INT, rb, K, MPI_INT, root, MPI_COMM_WORLD);
    } else {
      COLLC(Scatter, scatter, NULL, -1, MPI_DATATYPE_NULL, rb, K, MPI_INT, root, MPI_COMM_WORLD);
    }
    for (int i = 0; i < K; i++)
      CHECK(rb[i] == val(me, i), "scatter%s: element %d is %d", inplace ? " in place" : "", i,
            rb[i]);
  }

  /* Allgather and Alltoall in place. */
  memset(all, 0xff, sizeof all);
  memcpy(all + me * K, sb, sizeof sb);
  COLLC(Allgather, allgather, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, all, K, MPI_INT,
        MPI_COMM_WORLD);
  check_blocks(all, np, "allgather in place");
  for (int r = 0; r < np; r++)
    for (int i = 0; i < K; i++) all[r * K + i] = a2a(me, r, i);
  COLLC(Alltoall, alltoall, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, all, K, MPI_INT,
        MPI_COMM_WORLD);
  for (int r = 0; r < np; r++)
    for (int i = 0; i < K; i++)
      CHECK(all[r * K + i] == a2a(r, me, i), "alltoall in place: from %d element %d is %d", r,
            i, all[r * K + i]);

  if (form >= LARGE) return; /* The vector forms have no _c wrapper here. */

  /* Gatherv and Scatterv, with and without MPI_IN_PLACE at the root. */
  for (int inplace = 0; inplace < 2; inplace++) {
    memset(all, 0xff, sizeof all);
    if (is_root) {
      if (inplace) memcpy(all + root * K, sb, sizeof sb);
      COLL(Gatherv, gatherv, inplace ? MPI_IN_PLACE : sb, inplace ? -1 : K,
           inplace ? MPI_DATATYPE_NULL : MPI_INT, all, counts, displs, MPI_INT, root,
           MPI_COMM_WORLD);
      check_blocks(all, np, inplace ? "gatherv in place" : "gatherv");
    } else {
      COLL(Gatherv, gatherv, sb, K, MPI_INT, NULL, NULL, NULL, MPI_DATATYPE_NULL, root,
           MPI_COMM_WORLD);
    }
    for (int r = 0; r < np; r++)
      for (int i = 0; i < K; i++) all[r * K + i] = is_root ? val(r, i) : -1;
    memset(rb, 0xff, sizeof rb);
    if (is_root) {
      COLL(Scatterv, scatterv, all, counts, displs, MPI_INT, inplace ? MPI_IN_PLACE : rb,
           inplace ? -1 : K, inplace ? MPI_DATATYPE_NULL : MPI_INT, root, MPI_COMM_WORLD);
      if (inplace) memcpy(rb, all + root * K, sizeof rb);
    } else {
      COLL(Scatterv, scatterv, NULL, NULL, NULL, MPI_DATATYPE_NULL, rb, K, MPI_INT, root,
           MPI_COMM_WORLD);
    }
    for (int i = 0; i < K; i++)
      CHECK(rb[i] == val(me, i), "scatterv%s: element %d is %d", inplace ? " in place" : "", i,
            rb[i]);
  }

  /* Allgatherv, Alltoallv, Alltoallw in place. */
  memset(all, 0xff, sizeof all);
  memcpy(all + me * K, sb, sizeof sb);
  COLL(Allgatherv, allgatherv, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, all, counts, displs,
       MPI_INT, MPI_COMM_WORLD);
  check_blocks(all, np, "allgatherv in place");
  for (int w = 0; w < 2; w++) {
    for (int r = 0; r < np; r++)
      for (int i = 0; i < K; i++) all[r * K + i] = a2a(me, r, i);
    if (w) {
      int bytes[MAXP];
      for (int r = 0; r < np; r++) bytes[r] = displs[r] * (int)sizeof(int);
      COLL(Alltoallw, alltoallw, MPI_IN_PLACE, NULL, NULL, NULL, all, counts, bytes, types,
           MPI_COMM_WORLD);
    } else {
      COLL(Alltoallv, alltoallv, MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, all, counts,
           displs, MPI_INT, MPI_COMM_WORLD);
    }
    for (int r = 0; r < np; r++)
      for (int i = 0; i < K; i++)
        CHECK(all[r * K + i] == a2a(r, me, i), "alltoall%s in place: from %d element %d is %d",
              w ? "w" : "v", r, i, all[r * K + i]);
  }

  /* Reduce: no receive buffer at the non-roots; in place at the root. */
  for (int i = 0; i < K; i++) rb[i] = sb[i];
  COLL(Reduce, reduce, is_root ? MPI_IN_PLACE : sb, is_root ? rb : NULL, K, MPI_INT, MPI_SUM,
       root, MPI_COMM_WORLD);
  if (is_root)
    for (int i = 0; i < K; i++)
      CHECK(rb[i] == 100 * np * (np - 1) / 2 + np * i, "reduce in place: element %d is %d", i,
            rb[i]);
}

int main(int argc, char **argv) {
  int np;
  init_common("coll_ignored", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np <= MAXP, "at most %d ranks", MAXP);
  int forms = FORMS;
  for (form = 0; form < forms; form++) {
    run(np, 0);
    run(np, np - 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("coll ignored: ok np=%d forms=%d\n", np, forms);
  MPI_Finalize();
  return 0;
}
