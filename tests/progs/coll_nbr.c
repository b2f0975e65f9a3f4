/* Neighbourhood collectives (MPI_Neighbor_* and MPI_Ineighbor_*) on a
 * Cartesian, a graph and a distributed-graph communicator, against values
 * this program computes itself. Any np >= 1.
 *
 * Topologies:
 *  - cart2: 2-D grid from MPI_Dims_create, periodic in dimension 0 only (so
 *    dimension 1 has MPI_PROC_NULL neighbours at its edges);
 *  - ring: 1-D periodic Cartesian ring of all ranks (at np = 1 or 2 one rank
 *    is the neighbour on both sides: the directions must not be swapped);
 *  - graph: MPI_Graph_create ring with an extra edge 0 <-> np-1 twice
 *    counted as in the standard's examples (plain undirected ring);
 *  - dgraph: MPI_Dist_graph_create_adjacent where rank r receives from
 *    r-1 and r-2 and sends to r+1 and r+2 (mod np, no self edges).
 *
 * Every block sent by rank s to its i-th destination d holds the values
 * V(s, d, i, k) (a Cartesian receiver knows the sender's direction i: its
 * own slot j gets direction j ^ 1; for graphs i is not checked). Each of
 * allgather, allgatherv, alltoall, alltoallv and alltoallw, blocking and
 * nonblocking, with int blocks of 3 (alltoallv/w: 1 + slot ints).
 *
 * The Cartesian rule "block i of the sender lands in slot i ^ 1" holds even
 * where one rank is the neighbour on both sides (MPI-4.0 errata, MPI Forum
 * issue #153). Debian's Open MPI 4.1.4 (nonblocking forms) and MPICH 4.0.2
 * predate the fix and fail this program natively at np = 1, 2 and 4; at
 * np = 3 there is no such dimension and both pass natively.
 * Rank 0 prints "coll nbr: ok np=N checks=C".
 *
 *   coll_nbr time <reps>  times Neighbor_alltoall and Ineighbor_alltoall+Wait
 *                         of one int on the periodic ring, the slowest
 *                         rank's time per call:
 *                         "coll nbr time: us=<median> ... ius=<median> ..." */
#include "common.h"

static int P, R;

static int V(int s, int d, int i, int k) { return s * 100000 + d * 1000 + i * 100 + k; }

typedef struct {
  const char *name;
  MPI_Comm comm;
  int cart, nin, nout;
  int src[8], dst[8];
} topo;

static void neighbours(topo *t) {
  int kind;
  MPI_OK(MPI_Topo_test(t->comm, &kind));
  if (kind == MPI_CART) {
    int nd;
    MPI_OK(MPI_Cartdim_get(t->comm, &nd));
    t->cart = 1, t->nin = t->nout = 2 * nd;
    for (int d = 0; d < nd; d++) {
      MPI_OK(MPI_Cart_shift(t->comm, d, 1, &t->src[2 * d], &t->src[2 * d + 1]));
      t->dst[2 * d] = t->src[2 * d], t->dst[2 * d + 1] = t->src[2 * d + 1];
    }
  } else if (kind == MPI_GRAPH) {
    int n;
    MPI_OK(MPI_Graph_neighbors_count(t->comm, R, &n));
    CHECK(n <= 8, "too many neighbours");
    MPI_OK(MPI_Graph_neighbors(t->comm, R, n, t->src));
    t->nin = t->nout = n;
    memcpy(t->dst, t->src, sizeof(int) * (size_t)n);
  } else {
    int w, sw[8], dw[8];
    MPI_OK(MPI_Dist_graph_neighbors_count(t->comm, &t->nin, &t->nout, &w));
    MPI_OK(MPI_Dist_graph_neighbors(t->comm, t->nin, t->src, sw, t->nout, t->dst, dw));
  }
}

/* Expected value of element k of the block received in slot j. */
static int expect(const topo *t, int j, int k) {
  int s = t->src[j];
  return V(s, R, t->cart ? (j ^ 1) : 0, k);
}

static void fill_send(const topo *t, int *sb, const int *sdisp, const int *scnt) {
  for (int i = 0; i < t->nout; i++)
    for (int k = 0; k < scnt[i]; k++) sb[sdisp[i] + k] = V(R, t->dst[i], t->cart ? i : 0, k);
}

static int nb_wait(int rc, MPI_Request *q) {
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Wait(q, MPI_STATUS_IGNORE);
}

static void check_topo(topo *t) {
  neighbours(t);
  enum { B = 3 };
  int sb[64], rb[64], scnt[8], sdisp[8], rcnt[8], rdisp[8];
  MPI_Aint sdw[8], rdw[8];
  MPI_Datatype types[8];
  for (int nb = 0; nb < 2; nb++) {
    MPI_Request q;
    /* allgather(v): the same block to every destination (so no direction
     * to check); a MPI_PROC_NULL slot stays untouched. allgatherv puts
     * slot j at displacement 2 + 5 j. */
    int g[B];
    for (int k = 0; k < B; k++) g[k] = V(R, 0, 0, k);
    for (int j = 0; j < t->nin; j++) rcnt[j] = B, rdisp[j] = 2 + 5 * j;
    for (int v = 0; v < 2; v++) {
      for (int i = 0; i < 64; i++) rb[i] = -1;
      if (v == 0 && nb)
        MPI_OK(nb_wait(MPI_Ineighbor_allgather(g, B, MPI_INT, rb, B, MPI_INT, t->comm, &q), &q));
      else if (v == 0)
        MPI_OK(MPI_Neighbor_allgather(g, B, MPI_INT, rb, B, MPI_INT, t->comm));
      else if (nb)
        MPI_OK(nb_wait(MPI_Ineighbor_allgatherv(g, B, MPI_INT, rb, rcnt, rdisp, MPI_INT, t->comm, &q), &q));
      else
        MPI_OK(MPI_Neighbor_allgatherv(g, B, MPI_INT, rb, rcnt, rdisp, MPI_INT, t->comm));
      for (int j = 0; j < t->nin; j++)
        for (int k = 0; k < B; k++) {
          int at = v ? rdisp[j] + k : j * B + k;
          CHECK(rb[at] == (t->src[j] == MPI_PROC_NULL ? -1 : V(t->src[j], 0, 0, k)), "%s allgather%s nb=%d slot %d k %d: %d",
                t->name, v ? "v" : "", nb, j, k, rb[at]);
        }
    }
    /* alltoall: B ints per neighbour, direction-tagged values */
    for (int i = 0; i < t->nout; i++) scnt[i] = B, sdisp[i] = i * B;
    fill_send(t, sb, sdisp, scnt);
    for (int i = 0; i < 64; i++) rb[i] = -1;
    if (nb)
      MPI_OK(nb_wait(MPI_Ineighbor_alltoall(sb, B, MPI_INT, rb, B, MPI_INT, t->comm, &q), &q));
    else
      MPI_OK(MPI_Neighbor_alltoall(sb, B, MPI_INT, rb, B, MPI_INT, t->comm));
    for (int j = 0; j < t->nin; j++)
      for (int k = 0; k < B; k++)
        CHECK(rb[j * B + k] == (t->src[j] == MPI_PROC_NULL ? -1 : expect(t, j, k)), "%s alltoall nb=%d slot %d k %d: %d", t->name, nb,
              j, k, rb[j * B + k]);
    /* alltoallv: what goes to destination i / comes from slot j has
     * 1 + (the sender's direction index) ints for Cartesian, 2 for graphs */
    int off = 0;
    for (int i = 0; i < t->nout; i++) scnt[i] = t->cart ? 1 + i : 2, sdisp[i] = off, off += scnt[i] + 1;
    off = 1;
    for (int j = 0; j < t->nin; j++) rcnt[j] = t->cart ? 1 + (j ^ 1) : 2, rdisp[j] = off, off += rcnt[j] + 2;
    fill_send(t, sb, sdisp, scnt);
    for (int i = 0; i < 64; i++) rb[i] = -1;
    if (nb)
      MPI_OK(nb_wait(MPI_Ineighbor_alltoallv(sb, scnt, sdisp, MPI_INT, rb, rcnt, rdisp, MPI_INT, t->comm, &q), &q));
    else
      MPI_OK(MPI_Neighbor_alltoallv(sb, scnt, sdisp, MPI_INT, rb, rcnt, rdisp, MPI_INT, t->comm));
    for (int j = 0; j < t->nin; j++) {
      for (int k = 0; k < rcnt[j]; k++)
        CHECK(rb[rdisp[j] + k] == (t->src[j] == MPI_PROC_NULL ? -1 : expect(t, j, k)), "%s alltoallv nb=%d slot %d k %d", t->name, nb, j, k);
      CHECK(rb[rdisp[j] + rcnt[j]] == -1, "%s alltoallv wrote a gap", t->name);
    }
    /* alltoallw: the same layout in bytes, MPI_INT each */
    for (int i = 0; i < t->nout; i++) sdw[i] = (MPI_Aint)sizeof(int) * sdisp[i], types[i] = MPI_INT;
    for (int j = 0; j < t->nin; j++) rdw[j] = (MPI_Aint)sizeof(int) * rdisp[j];
    MPI_Datatype rtypes[8];
    for (int j = 0; j < 8; j++) rtypes[j] = MPI_INT;
    for (int i = 0; i < 64; i++) rb[i] = -1;
    if (nb)
      MPI_OK(nb_wait(MPI_Ineighbor_alltoallw(sb, scnt, sdw, types, rb, rcnt, rdw, rtypes, t->comm, &q), &q));
    else
      MPI_OK(MPI_Neighbor_alltoallw(sb, scnt, sdw, types, rb, rcnt, rdw, rtypes, t->comm));
    for (int j = 0; j < t->nin; j++)
      for (int k = 0; k < rcnt[j]; k++)
        CHECK(rb[rdisp[j] + k] == (t->src[j] == MPI_PROC_NULL ? -1 : expect(t, j, k)), "%s alltoallw nb=%d slot %d k %d", t->name, nb, j, k);
  }
}

int main(int argc, char **argv) {
  prog_name = "coll nbr";
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  my_rank = R;
  if (argc > 2 && !strcmp(argv[1], "time")) {
    int reps = atoi(argv[2]), d1 = P, p1 = 1, sb[2] = {R, R}, rb[2];
    MPI_Comm ring;
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p1, 0, &ring));
    double *t = malloc(sizeof(double) * (size_t)reps), *ti = malloc(sizeof(double) * (size_t)reps);
    for (int i = -3; i < reps; i++) {
      MPI_Request q;
      MPI_OK(MPI_Barrier(ring));
      double t0 = now_us();
      MPI_OK(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring));
      double t1 = now_us();
      MPI_OK(MPI_Barrier(ring));
      double t2 = now_us();
      MPI_OK(MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &q));
      MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      if (i >= 0) t[i] = t1 - t0, ti[i] = now_us() - t2;
    }
    /* The slowest rank's time per call: ranks leave the barrier up to L
     * apart, and a rank whose neighbours' messages are already there
     * returns at once, but the last to start waits the full L. */
    MPI_OK(MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    MPI_OK(MPI_Allreduce(MPI_IN_PLACE, ti, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (R == 0) {
      printf("coll nbr time:");
      put_stat("us", t, reps);
      put_stat("ius", ti, reps);
      printf("\n");
    }
    free(t), free(ti);
    MPI_OK(MPI_Comm_free(&ring));
    MPI_Finalize();
    return 0;
  }

  topo t[4];
  memset(t, 0, sizeof t);
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_OK(MPI_Dims_create(P, 2, dims));
  t[0].name = "cart2";
  MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &t[0].comm));
  int d1 = P, p1 = 1;
  t[1].name = "ring";
  MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p1, 0, &t[1].comm));
  /* graph: undirected ring (np >= 3), or a single edge (np = 2) */
  int *index = malloc(sizeof(int) * (size_t)P), *edges = malloc(sizeof(int) * 2 * (size_t)P), ne = 0;
  for (int r = 0; r < P; r++) {
    if (P >= 3) edges[ne++] = (r + P - 1) % P, edges[ne++] = (r + 1) % P;
    else if (P == 2) edges[ne++] = 1 - r;
    index[r] = ne;
  }
  t[2].name = "graph";
  MPI_OK(MPI_Graph_create(MPI_COMM_WORLD, P, index, edges, 0, &t[2].comm));
  int srcs[2], dsts[2], ws[2] = {1, 1}, ns = 0, nd = 0;
  for (int k = 1; k <= 2 && k < P; k++) srcs[ns++] = (R + P - k) % P, dsts[nd++] = (R + k) % P;
  t[3].name = "dgraph";
  MPI_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ns, srcs, ws, nd, dsts, ws, MPI_INFO_NULL, 0, &t[3].comm));
  for (int i = 0; i < 4; i++) {
    check_topo(&t[i]);
    MPI_OK(MPI_Comm_free(&t[i].comm));
  }
  free(index), free(edges);
  long checks = 0;
  MPI_OK(MPI_Reduce(&n_checks, &checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
  if (R == 0) printf("coll nbr: ok np=%d checks=%ld\n", P, checks);
  MPI_Finalize();
  return 0;
}
