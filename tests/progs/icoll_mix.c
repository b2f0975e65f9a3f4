/* Many nonblocking collectives in flight at once, of every kind, on three
 * communicators, interleaved with point-to-point traffic and completed by
 * every completion call (Wait, Test, Waitall, Testall, Waitany, Testany,
 * Waitsome, Testsome), each rank choosing its own way.
 *
 *   icoll_mix [iters]     rank 0 prints "icoll_mix: ok np=N ops=K"
 *
 * The sequence of operations (kind, communicator, root, size, slot) comes
 * from one seed shared by all ranks, so collectives start in the same order
 * everywhere, as MPI requires; how each rank completes them comes from a
 * seed of its own. Up to SLOTS operations are in flight; a slot's result is
 * checked when it completes. A hang is caught by the harness's timeout. */
#include "common.h"

enum { SLOTS = 12, MAXN = 64 };

enum Kind {
  K_BARRIER, K_BCAST, K_REDUCE, K_ALLREDUCE, K_ALLTOALL, K_ALLTOALLV, K_ALLGATHER,
  K_ALLGATHERV, K_GATHER, K_SCATTER, K_REDSCAT_BLOCK, K_REDSCAT, K_SCAN, K_EXSCAN,
  K_P2P, K_KINDS
};

static const char *kind_name[K_KINDS] = {
    "ibarrier",  "ibcast",  "ireduce", "iallreduce",          "ialltoall",
    "ialltoallv", "iallgather", "iallgatherv", "igather",   "iscatter",
    "ireduce_scatter_block", "ireduce_scatter", "iscan", "iexscan", "isend/irecv"};

struct Slot {
  int busy, kind, root, n, seq;
  MPI_Comm comm;
  int p, r; /* size and rank in comm */
  MPI_Request req[2];
  int *s, *d;
  int *counts, *displs;
};

static struct Slot slot[SLOTS];
static MPI_Comm comms[3];
static int P, R;
static unsigned shared_seed = 12345, own_seed;

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

static int val(int rank, int seq, int i) { return (rank + 1) * 7919 + seq * 31 + i; }

static void check(struct Slot *x) {
  int p = x->p, r = x->r, n = x->n, q = x->seq;
  const char *k = kind_name[x->kind];
  switch (x->kind) {
  case K_BARRIER:
    break;
  case K_BCAST:
    for (int i = 0; i < n; i++) CHECK(x->d[i] == val(x->root, q, i), "%s seq %d i=%d: %d", k, q, i, x->d[i]);
    break;
  case K_REDUCE:
  case K_ALLREDUCE:
    if (x->kind == K_REDUCE && r != x->root) break;
    for (int i = 0; i < n; i++) {
      long sum = 0;
      for (int j = 0; j < p; j++) sum += val(j, q, i);
      CHECK(x->d[i] == (int)sum, "%s seq %d i=%d: %d, not %ld", k, q, i, x->d[i], sum);
    }
    break;
  case K_ALLTOALL:
  case K_ALLTOALLV:
    for (int j = 0; j < p; j++)
      for (int i = 0; i < n; i++)
        CHECK(x->d[j * n + i] == val(j, q, r * n + i), "%s seq %d from %d i=%d", k, q, j, i);
    break;
  case K_ALLGATHER:
  case K_ALLGATHERV:
  case K_GATHER:
    if (x->kind == K_GATHER && r != x->root) break;
    for (int j = 0; j < p; j++)
      for (int i = 0; i < n; i++) CHECK(x->d[j * n + i] == val(j, q, i), "%s seq %d from %d i=%d", k, q, j, i);
    break;
  case K_SCATTER:
    for (int i = 0; i < n; i++) CHECK(x->d[i] == val(x->root, q, r * n + i), "%s seq %d i=%d", k, q, i);
    break;
  case K_REDSCAT_BLOCK:
  case K_REDSCAT:
    for (int i = 0; i < n; i++) {
      long sum = 0;
      for (int j = 0; j < p; j++) sum += val(j, q, r * n + i);
      CHECK(x->d[i] == (int)sum, "%s seq %d i=%d: %d, not %ld", k, q, i, x->d[i], sum);
    }
    break;
  case K_SCAN:
  case K_EXSCAN:
    if (x->kind == K_EXSCAN && r == 0) break;
    for (int i = 0; i < n; i++) {
      long sum = 0;
      for (int j = 0; j < (x->kind == K_SCAN ? r + 1 : r); j++) sum += val(j, q, i);
      CHECK(x->d[i] == (int)sum, "%s seq %d i=%d: %d, not %ld", k, q, i, x->d[i], sum);
    }
    break;
  case K_P2P:
    for (int i = 0; i < n; i++)
      CHECK(x->d[i] == val((r + p - 1) % p, q, i), "%s seq %d i=%d: %d", k, q, i, x->d[i]);
    break;
  }
}

static void start(struct Slot *x, int seq) {
  x->kind = (int)(rnd(&shared_seed) % K_KINDS);
  x->comm = comms[rnd(&shared_seed) % 3];
  MPI_Comm_size(x->comm, &x->p);
  MPI_Comm_rank(x->comm, &x->r);
  x->root = (int)(rnd(&shared_seed) % (unsigned)x->p);
  x->n = 1 + (int)(rnd(&shared_seed) % MAXN);
  x->seq = seq;
  x->busy = 1;
  int p = x->p, r = x->r, n = x->n;
  for (int i = 0; i < p * n; i++) {
    x->s[i] = val(r, seq, i);
    x->d[i] = -1;
  }
  for (int j = 0; j < p; j++) {
    x->counts[j] = n;
    x->displs[j] = j * n;
  }
  x->req[0] = x->req[1] = MPI_REQUEST_NULL;
  MPI_Comm c = x->comm;
  switch (x->kind) {
  case K_BARRIER: MPI_OK(MPI_Ibarrier(c, &x->req[0])); break;
  case K_BCAST:
    if (r == x->root) memcpy(x->d, x->s, sizeof(int) * (size_t)n);
    MPI_OK(MPI_Ibcast(x->d, n, MPI_INT, x->root, c, &x->req[0]));
    break;
  case K_REDUCE: MPI_OK(MPI_Ireduce(x->s, x->d, n, MPI_INT, MPI_SUM, x->root, c, &x->req[0])); break;
  case K_ALLREDUCE: MPI_OK(MPI_Iallreduce(x->s, x->d, n, MPI_INT, MPI_SUM, c, &x->req[0])); break;
  case K_ALLTOALL: MPI_OK(MPI_Ialltoall(x->s, n, MPI_INT, x->d, n, MPI_INT, c, &x->req[0])); break;
  case K_ALLTOALLV:
    MPI_OK(MPI_Ialltoallv(x->s, x->counts, x->displs, MPI_INT, x->d, x->counts, x->displs, MPI_INT, c, &x->req[0]));
    break;
  case K_ALLGATHER: MPI_OK(MPI_Iallgather(x->s, n, MPI_INT, x->d, n, MPI_INT, c, &x->req[0])); break;
  case K_ALLGATHERV:
    MPI_OK(MPI_Iallgatherv(x->s, n, MPI_INT, x->d, x->counts, x->displs, MPI_INT, c, &x->req[0]));
    break;
  case K_GATHER: MPI_OK(MPI_Igather(x->s, n, MPI_INT, x->d, n, MPI_INT, x->root, c, &x->req[0])); break;
  case K_SCATTER:
    /* The root's send buffer: its own values, laid out for everyone. */
    MPI_OK(MPI_Iscatter(x->s, n, MPI_INT, x->d, n, MPI_INT, x->root, c, &x->req[0]));
    break;
  case K_REDSCAT_BLOCK:
    MPI_OK(MPI_Ireduce_scatter_block(x->s, x->d, n, MPI_INT, MPI_SUM, c, &x->req[0]));
    break;
  case K_REDSCAT:
    MPI_OK(MPI_Ireduce_scatter(x->s, x->d, x->counts, MPI_INT, MPI_SUM, c, &x->req[0]));
    break;
  case K_SCAN: MPI_OK(MPI_Iscan(x->s, x->d, n, MPI_INT, MPI_SUM, c, &x->req[0])); break;
  case K_EXSCAN: MPI_OK(MPI_Iexscan(x->s, x->d, n, MPI_INT, MPI_SUM, c, &x->req[0])); break;
  case K_P2P:
    /* A ring on the slot's communicator, tagged by the slot's sequence. */
    MPI_OK(MPI_Irecv(x->d, n, MPI_INT, (r + p - 1) % p, seq % 30000, c, &x->req[0]));
    MPI_OK(MPI_Isend(x->s, n, MPI_INT, (r + 1) % p, seq % 30000, c, &x->req[1]));
    break;
  }
}

/* The slot is complete once both its requests are null. */
static void done_if_complete(struct Slot *x) {
  if (x->busy && x->req[0] == MPI_REQUEST_NULL && x->req[1] == MPI_REQUEST_NULL) {
    check(x);
    x->busy = 0;
  }
}

/* Completes something, this rank's own way; `all`: everything. */
static void complete_some(int all) {
  MPI_Request rs[2 * SLOTS];
  int n = 0;
  for (int k = 0; k < SLOTS; k++) {
    rs[n++] = slot[k].req[0];
    rs[n++] = slot[k].req[1];
  }
  int how = all ? (int)(rnd(&own_seed) % 3) : (int)(rnd(&own_seed) % 6);
  int idx[2 * SLOTS], outc = 0, flag = 0;
  switch (how) {
  case 0: MPI_OK(MPI_Waitall(n, rs, MPI_STATUSES_IGNORE)); break;
  case 1:
    while (!flag) MPI_OK(MPI_Testall(n, rs, &flag, MPI_STATUSES_IGNORE));
    break;
  case 2:
    for (int i = n - 1; i >= 0; i--) MPI_OK(MPI_Wait(&rs[i], MPI_STATUS_IGNORE));
    break;
  case 3: {
    int i;
    MPI_OK(MPI_Waitany(n, rs, &i, MPI_STATUS_IGNORE));
    break;
  }
  case 4: {
    int i;
    do MPI_OK(MPI_Testany(n, rs, &i, &flag, MPI_STATUS_IGNORE));
    while (!flag);
    break;
  }
  case 5:
    if (rnd(&own_seed) % 2) {
      MPI_OK(MPI_Waitsome(n, rs, &outc, idx, MPI_STATUSES_IGNORE));
    } else {
      do MPI_OK(MPI_Testsome(n, rs, &outc, idx, MPI_STATUSES_IGNORE));
      while (outc == 0);
    }
    break;
  }
  n = 0;
  for (int k = 0; k < SLOTS; k++) {
    slot[k].req[0] = rs[n++];
    slot[k].req[1] = rs[n++];
    done_if_complete(&slot[k]);
  }
}

int main(int argc, char **argv) {
  init_common("icoll_mix", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  R = my_rank;
  int iters = argc > 1 ? atoi(argv[1]) : 400;
  own_seed = 777u + (unsigned)R * 1000003u;
  comms[0] = MPI_COMM_WORLD;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, R % 2, P - R, &comms[2]));
  for (int k = 0; k < SLOTS; k++) {
    size_t sz = sizeof(int) * (size_t)P * MAXN;
    slot[k].s = malloc(sz);
    slot[k].d = malloc(sz);
    slot[k].counts = malloc(sizeof(int) * (size_t)P);
    slot[k].displs = malloc(sizeof(int) * (size_t)P);
    slot[k].req[0] = slot[k].req[1] = MPI_REQUEST_NULL;
  }
  int ops = 0;
  for (int it = 0; it < iters; it++) {
    /* The slot comes from the shared seed, so every rank reuses the same
     * one; a busy slot is completed first (locally: Wait on it alone). */
    int k = (int)(rnd(&shared_seed) % SLOTS);
    struct Slot *x = &slot[k];
    if (x->busy) {
      if (rnd(&own_seed) % 2) {
        MPI_OK(MPI_Wait(&x->req[1], MPI_STATUS_IGNORE));
        MPI_OK(MPI_Wait(&x->req[0], MPI_STATUS_IGNORE));
      } else {
        int flag = 0;
        while (!flag) MPI_OK(MPI_Testall(2, x->req, &flag, MPI_STATUSES_IGNORE));
      }
      done_if_complete(x);
    }
    start(x, it);
    ops++;
    /* Now and then complete something else, each rank its own way. */
    if (rnd(&own_seed) % 4 == 0) complete_some(0);
    /* And a blocking collective in between, now and then. */
    if (rnd(&shared_seed) % 16 == 0) {
      int v = R, s = -1;
      MPI_OK(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      CHECK(s == P * (P - 1) / 2, "allreduce between: %d", s);
    }
  }
  complete_some(1);
  for (int k = 0; k < SLOTS; k++) CHECK(!slot[k].busy, "slot %d still busy", k);
  MPI_OK(MPI_Comm_free(&comms[1]));
  MPI_OK(MPI_Comm_free(&comms[2]));
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  if (R == 0) printf("icoll_mix: ok np=%d ops=%d\n", P, ops);
  MPI_Finalize();
  return 0;
}
