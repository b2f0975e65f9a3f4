/* p2p_rules.c: point-to-point rules of MPI 4.0 chapter 3 that a shim can
 * break while the data still "looks" fine. Ranks 0 and 1 take part; any
 * others only join the final barrier. Expects, under any knobs:
 *   1. freed datatypes (§5.1.9: "any communication that is currently using
 *      this datatype will complete normally"): a derived datatype freed
 *      right after MPI_Irecv / MPI_Isend / MPI_Imrecv, before the Wait,
 *      still delivers every element to the right place and leaves the
 *      holes untouched; for a strided vector and a contiguous derived type,
 *      below and above the shim's staging threshold (16 KiB), and for a
 *      receive matched to a message the shim already took off the network
 *      (a probe first);
 *   2. partial elements (§3.3.1, §5.1.11): a message shorter than one
 *      element of a derived receive type fills the basic elements that
 *      arrived, in type-map order, and nothing else; MPI_Get_elements
 *      counts them and MPI_Get_count says MPI_UNDEFINED. An indexed type of
 *      1024 one-int blocks (increasing and decreasing displacements) gets a
 *      4-int message; an hindexed type with zero-length blocks, count 2,
 *      gets a 6-int message. Through Recv, Irecv+Wait, Probe+Recv and
 *      Mprobe+Mrecv;
 *   3. the MPI_ERROR field (§3.2.5: "message-passing calls do not modify the
 *      value of the error code field of status variables", but for the
 *      multiple-completion calls): a sentinel stays through Recv, Mprobe,
 *      Improbe, Mrecv, Wait, Test, Waitany, Testany, Sendrecv and
 *      Request_get_status (not Probe/Iprobe: native MPICH 4.0 writes it);
 *   4. MPI_BOTTOM (§5.1.12): a struct datatype built from absolute
 *      addresses is sent from and received into MPI_BOTTOM, by Send/Recv,
 *      Isend/Irecv, Bsend, Ssend and Sendrecv_replace, small and large;
 *   5. a communicator freed with two receives pending on it (below and
 *      above the staging threshold) still gets both messages; persistent
 *      Send_init, Bsend_init and Recv_init whose vector datatype was freed
 *      right after creation deliver it at every Start;
 *   6. a receive whose request was freed while active (MPI_Request_free)
 *      still delivers its data, nonblocking or persistent;
 *   7. non-overtaking past a probe (§3.5, §3.8.1): rank 0 sends tags A, B
 *      (and C) in that order; rank 1 probes for the later tag(s) first (the
 *      shim may take such a message off the network), then a receive or
 *      probe with MPI_ANY_TAG (and MPI_ANY_SOURCE) must still get A, the
 *      oldest match: through Recv, Irecv+Wait, Iprobe, Mprobe+Mrecv,
 *      Sendrecv, small and large (above the staging threshold); and past
 *      150 older messages of another tag;
 *   8. a completion call that finds nothing complete leaves the status
 *      alone, every byte of it: Test, Testany, Testsome and Testall with
 *      flag false (outcount 0) and Request_get_status with flag false, on a
 *      receive whose message is not sent yet and then (under the knobs) one
 *      that arrived natively but not yet in virtual time (MPI does not
 *      define the status then; both MPIs leave it, and the shim must not
 *      hand out what it has not delivered);
 *   9. sends pending on a freed communicator (§6.4.3: "any pending
 *      operations that use this communicator will complete normally"): an
 *      Isend (small and large) and an Issend whose communicator is freed
 *      before the Wait, and an Isend whose request and communicator are
 *      both freed (MPI_Request_free), all deliver;
 *  10. a persistent receive started after a probe took its message (see
 *      its function).
 * Arguments name the sections to run (freed, partial, error, bottom, comm,
 * reqfree, overtake, nostatus, commsend, persist; all by default). Rank 0 prints "p2p_rules: PASS np=N checks=C"; on failure a line
 * "FAIL p2p_rules rank R: ..." and a non-zero exit. */
#include "common.h"

#define SENT -777 /* fills holes and untouched slots */
#define ESENT 12345 /* MPI_ERROR sentinel */

static void set_all(int *b, int n, int v) {
  for (int i = 0; i < n; i++) b[i] = v;
}

/* 1. A derived datatype freed while an operation using it is pending. */
static void freed_types(void) {
  /* n ints spread with stride 2: 128 ints (512 B, staged by the shim) and
   * 8192 ints (32 KiB, above LOGGP_INLINE_MAX's default). */
  static const int ns[] = {128, 8192};
  for (int k = 0; k < 2; k++) {
    int n = ns[k];
    int *b = malloc(sizeof(int) * (size_t)(2 * n));
    for (int kind = 0; kind < 2; kind++) { /* 0: vector, 1: contiguous */
      for (int how = 0; how < 3; how++) { /* 0: Irecv, 1: probe first, 2: Mprobe+Imrecv */
        int tag = 100 + 10 * k + 3 * kind + how;
        int span = kind == 0 ? 2 * n : n;
        MPI_Datatype t;
        if (kind == 0)
          MPI_OK(MPI_Type_vector(n, 1, 2, MPI_INT, &t));
        else
          MPI_OK(MPI_Type_contiguous(n, MPI_INT, &t));
        MPI_OK(MPI_Type_commit(&t));
        if (my_rank == 0) {
          for (int i = 0; i < span; i++) b[i] = kind == 0 ? (i % 2 ? -1 : i / 2 + tag) : i + tag;
          MPI_Request r;
          MPI_OK(MPI_Isend(b, 1, t, 1, tag, MPI_COMM_WORLD, &r));
          MPI_OK(MPI_Type_free(&t));
          CHECK(t == MPI_DATATYPE_NULL, "Type_free left the handle");
          MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else if (my_rank == 1) {
          set_all(b, span, SENT);
          MPI_Request r;
          MPI_Status st;
          if (how == 0) {
            MPI_OK(MPI_Irecv(b, 1, t, 0, tag, MPI_COMM_WORLD, &r));
          } else if (how == 1) {
            MPI_OK(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
            MPI_OK(MPI_Irecv(b, 1, t, 0, tag, MPI_COMM_WORLD, &r));
          } else {
            MPI_Message m;
            MPI_OK(MPI_Mprobe(0, tag, MPI_COMM_WORLD, &m, &st));
            MPI_OK(MPI_Imrecv(b, 1, t, &m, &r));
          }
          MPI_OK(MPI_Type_free(&t));
          MPI_OK(MPI_Wait(&r, &st));
          int got = -1;
          MPI_OK(MPI_Get_count(&st, MPI_INT, &got));
          CHECK(got == n, "freed type n=%d kind=%d how=%d: count %d", n, kind, how, got);
          for (int i = 0; i < span; i++) {
            int want = kind == 0 ? (i % 2 ? SENT : i / 2 + tag) : i + tag;
            CHECK(b[i] == want, "freed type n=%d kind=%d how=%d: b[%d] = %d, expected %d", n,
                  kind, how, i, b[i], want);
          }
        } else {
          MPI_OK(MPI_Type_free(&t));
        }
      }
    }
    free(b);
  }
}

/* 2. A message shorter than one element of the receive type. */
static void partial_one(MPI_Datatype t, int count, int span, const int *slot, int nsent,
                        int tag, const char *what) {
  int *b = malloc(sizeof(int) * (size_t)span);
  for (int how = 0; how < 4; how++) {
    if (my_rank == 0) {
      int v[16];
      for (int i = 0; i < nsent; i++) v[i] = 1000 * how + i + 1;
      MPI_OK(MPI_Send(v, nsent, MPI_INT, 1, tag + how, MPI_COMM_WORLD));
    } else if (my_rank == 1) {
      set_all(b, span, SENT);
      MPI_Status st;
      if (how == 0) {
        MPI_OK(MPI_Recv(b, count, t, 0, tag + how, MPI_COMM_WORLD, &st));
      } else if (how == 1) {
        MPI_Request r;
        MPI_OK(MPI_Irecv(b, count, t, 0, tag + how, MPI_COMM_WORLD, &r));
        MPI_OK(MPI_Wait(&r, &st));
      } else if (how == 2) {
        MPI_OK(MPI_Probe(0, tag + how, MPI_COMM_WORLD, &st));
        MPI_OK(MPI_Recv(b, count, t, 0, tag + how, MPI_COMM_WORLD, &st));
      } else {
        MPI_Message m;
        MPI_OK(MPI_Mprobe(0, tag + how, MPI_COMM_WORLD, &m, &st));
        MPI_OK(MPI_Mrecv(b, count, t, &m, &st));
      }
      int el = -1, cnt = -1;
      MPI_OK(MPI_Get_elements(&st, t, &el));
      MPI_OK(MPI_Get_count(&st, t, &cnt));
      CHECK(el == nsent, "%s how=%d: MPI_Get_elements %d, expected %d", what, how, el, nsent);
      CHECK(cnt == MPI_UNDEFINED, "%s how=%d: MPI_Get_count %d, expected MPI_UNDEFINED", what,
            how, cnt);
      int *want = malloc(sizeof(int) * (size_t)span);
      set_all(want, span, SENT);
      for (int i = 0; i < nsent; i++) want[slot[i]] = 1000 * how + i + 1;
      for (int i = 0; i < span; i++)
        CHECK(b[i] == want[i], "%s how=%d: b[%d] = %d, expected %d", what, how, i, b[i],
              want[i]);
      free(want);
    }
  }
  free(b);
}

static void partial_elements(void) {
  enum { NB = 1024 };
  static int disp[NB], ones[NB];
  int slot[4];
  for (int dir = 0; dir < 2; dir++) {
    for (int i = 0; i < NB; i++) {
      ones[i] = 1;
      disp[i] = dir == 0 ? 2 * i : 2 * (NB - 1 - i);
    }
    MPI_Datatype t;
    MPI_OK(MPI_Type_indexed(NB, ones, disp, MPI_INT, &t));
    MPI_OK(MPI_Type_commit(&t));
    for (int i = 0; i < 4; i++) slot[i] = disp[i];
    partial_one(t, 1, 2 * NB, slot, 4, 200 + 10 * dir,
                dir == 0 ? "indexed 1024 blocks" : "indexed 1024 blocks, decreasing");
    MPI_OK(MPI_Type_free(&t));
  }
  /* hindexed {1 int at 0, 0 at 4, 2 ints at 12, 0 at 20, 1 int at 24} B:
   * 4 ints, extent 28 B (7 ints); count 2 gets 6 ints: all 4 of the first
   * element and 2 of the second. */
  int lens[5] = {1, 0, 2, 0, 1};
  MPI_Aint hd[5] = {0, 4, 12, 20, 24};
  MPI_Datatype h;
  MPI_OK(MPI_Type_create_hindexed(5, lens, hd, MPI_INT, &h));
  MPI_OK(MPI_Type_commit(&h));
  int hslot[6] = {0, 3, 4, 6, 7 + 0, 7 + 3};
  partial_one(h, 2, 14, hslot, 6, 240, "hindexed with empty blocks, count 2");
  MPI_OK(MPI_Type_free(&h));
}

/* 3. The MPI_ERROR field of single-completion statuses. */
/* Checks the sentinel, then sets it again for the next call. */
#define KEEP(st, what)                                                          \
  do {                                                                          \
    CHECK((st).MPI_ERROR == ESENT, "%s wrote MPI_ERROR (%d)", what, (st).MPI_ERROR); \
    (st).MPI_ERROR = ESENT;                                                     \
  } while (0)

static void error_field(void) {
  int v = 0, w = 0, flag = 0, idx = -1;
  MPI_Status st;
  MPI_Request r;
  MPI_Message m;
  if (my_rank == 0) {
    for (int tag = 300; tag < 310; tag++) MPI_OK(MPI_Send(&tag, 1, MPI_INT, 1, tag, MPI_COMM_WORLD));
    st.MPI_ERROR = ESENT;
    MPI_OK(MPI_Sendrecv(&v, 1, MPI_INT, 1, 310, &w, 1, MPI_INT, 1, 311, MPI_COMM_WORLD, &st));
    KEEP(st, "MPI_Sendrecv");
  } else if (my_rank == 1) {
    st.MPI_ERROR = ESENT;
    MPI_OK(MPI_Recv(&v, 1, MPI_INT, 0, 300, MPI_COMM_WORLD, &st));
    KEEP(st, "MPI_Recv");
    /* MPICH 4.0 itself writes MPI_ERROR in Probe and Iprobe (both MPIs
     * leave it in Mprobe and Improbe): not checked, only called. */
    MPI_OK(MPI_Probe(0, 301, MPI_COMM_WORLD, &st));
    do MPI_OK(MPI_Iprobe(0, 301, MPI_COMM_WORLD, &flag, &st));
    while (!flag);
    st.MPI_ERROR = ESENT;
    MPI_OK(MPI_Recv(&v, 1, MPI_INT, 0, 301, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Mprobe(0, 302, MPI_COMM_WORLD, &m, &st));
    KEEP(st, "MPI_Mprobe");
    MPI_OK(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
    KEEP(st, "MPI_Mrecv");
    do MPI_OK(MPI_Improbe(0, 303, MPI_COMM_WORLD, &flag, &m, &st));
    while (!flag);
    KEEP(st, "MPI_Improbe");
    MPI_OK(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
    KEEP(st, "MPI_Mrecv after Improbe");
    MPI_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 304, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Wait(&r, &st));
    KEEP(st, "MPI_Wait");
    MPI_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 305, MPI_COMM_WORLD, &r));
    do MPI_OK(MPI_Test(&r, &flag, &st));
    while (!flag);
    KEEP(st, "MPI_Test");
    MPI_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 306, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Waitany(1, &r, &idx, &st));
    KEEP(st, "MPI_Waitany");
    MPI_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 307, MPI_COMM_WORLD, &r));
    do MPI_OK(MPI_Testany(1, &r, &idx, &flag, &st));
    while (!flag);
    KEEP(st, "MPI_Testany");
    MPI_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 308, MPI_COMM_WORLD, &r));
    do MPI_OK(MPI_Request_get_status(r, &flag, &st));
    while (!flag);
    KEEP(st, "MPI_Request_get_status");
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(v == 308, "Request_get_status then Wait: got %d", v);
    MPI_OK(MPI_Recv(&v, 1, MPI_INT, 0, 309, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    st.MPI_ERROR = ESENT;
    MPI_OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 311, &w, 1, MPI_INT, 0, 310, MPI_COMM_WORLD, &st));
    KEEP(st, "MPI_Sendrecv");
  }
}

/* 4. Absolute addresses on MPI_BOTTOM. */
static void bottom(void) {
  static const int ns[] = {4, 6000}; /* 3 blocks of n ints: 48 B and 72 KB */
  for (int k = 0; k < 2; k++) {
    int n = ns[k];
    int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
    double *c = malloc(sizeof(double) * (size_t)n);
    int lens[3] = {n, n, n};
    MPI_Aint disp[3];
    MPI_Datatype types[3] = {MPI_INT, MPI_INT, MPI_DOUBLE}, t;
    MPI_Get_address(a, &disp[0]);
    MPI_Get_address(b, &disp[1]);
    MPI_Get_address(c, &disp[2]);
    MPI_OK(MPI_Type_create_struct(3, lens, disp, types, &t));
    MPI_OK(MPI_Type_commit(&t));
    int bsize = 0;
    MPI_OK(MPI_Pack_size(1, t, MPI_COMM_WORLD, &bsize));
    bsize += 4 * MPI_BSEND_OVERHEAD + 1024;
    void *battach = malloc((size_t)bsize);
    for (int mode = 0; mode < 5; mode++) { /* Send, Isend, Bsend, Ssend, Sendrecv_replace */
      int tag = 400 + 10 * k + mode;
      if (my_rank == 0) {
        for (int i = 0; i < n; i++) {
          a[i] = tag + i;
          b[i] = -tag - i;
          c[i] = 0.5 * (tag + i);
        }
        MPI_Request r;
        switch (mode) {
        case 0: MPI_OK(MPI_Send(MPI_BOTTOM, 1, t, 1, tag, MPI_COMM_WORLD)); break;
        case 1:
          MPI_OK(MPI_Isend(MPI_BOTTOM, 1, t, 1, tag, MPI_COMM_WORLD, &r));
          MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
          break;
        case 2:
          MPI_OK(MPI_Buffer_attach(battach, bsize));
          MPI_OK(MPI_Bsend(MPI_BOTTOM, 1, t, 1, tag, MPI_COMM_WORLD));
          MPI_OK(MPI_Buffer_detach(&battach, &bsize));
          break;
        case 3: MPI_OK(MPI_Ssend(MPI_BOTTOM, 1, t, 1, tag, MPI_COMM_WORLD)); break;
        default:
          MPI_OK(MPI_Sendrecv_replace(MPI_BOTTOM, 1, t, 1, tag, 1, tag, MPI_COMM_WORLD,
                                      MPI_STATUS_IGNORE));
          for (int i = 0; i < n; i++)
            CHECK(a[i] == 2 * tag + i && b[i] == -2 * tag - i && c[i] == 0.25 * (tag + i),
                  "Sendrecv_replace on MPI_BOTTOM n=%d: element %d wrong", n, i);
        }
      } else if (my_rank == 1) {
        for (int i = 0; i < n; i++) a[i] = b[i] = SENT, c[i] = -1.0;
        if (mode == 4) {
          for (int i = 0; i < n; i++) {
            a[i] = 2 * tag + i;
            b[i] = -2 * tag - i;
            c[i] = 0.25 * (tag + i);
          }
          MPI_OK(MPI_Sendrecv_replace(MPI_BOTTOM, 1, t, 0, tag, 0, tag, MPI_COMM_WORLD,
                                      MPI_STATUS_IGNORE));
        } else if (mode == 1) {
          MPI_Request r;
          MPI_OK(MPI_Irecv(MPI_BOTTOM, 1, t, 0, tag, MPI_COMM_WORLD, &r));
          MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
          MPI_OK(MPI_Recv(MPI_BOTTOM, 1, t, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        for (int i = 0; i < n; i++)
          CHECK(a[i] == tag + i && b[i] == -tag - i && c[i] == 0.5 * (tag + i),
                "MPI_BOTTOM n=%d mode=%d: element %d wrong (%d %d %g)", n, mode, i, a[i], b[i],
                c[i]);
      }
    }
    MPI_OK(MPI_Type_free(&t));
    free(battach);
    free(a);
    free(b);
    free(c);
  }
}

/* 5. A communicator freed with a receive pending (MPI-4.0 §6.4.3: "pending
 * operations ... complete normally"), and persistent requests whose
 * datatype was freed after their creation: each Start still sends and
 * receives it (§5.1.9), including a persistent buffered send. */
static void freed_comm_and_persistent(void) {
  enum { N = 64 };
  int v[2 * N], w[2 * N];
  MPI_Comm c;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  if (my_rank == 1) {
    MPI_Request r[2];
    set_all(v, N, SENT);
    w[0] = 0;
    MPI_OK(MPI_Irecv(v, N, MPI_INT, 0, 500, c, &r[0]));
    static int big[8192];
    MPI_OK(MPI_Irecv(big, 8192, MPI_INT, 0, 501, c, &r[1]));
    MPI_OK(MPI_Comm_free(&c));
    MPI_OK(MPI_Send(w, 1, MPI_INT, 0, 502, MPI_COMM_WORLD)); /* now send */
    MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++) CHECK(v[i] == 500 + i, "Comm_free: v[%d] = %d", i, v[i]);
    for (int i = 0; i < 8192; i += 97)
      CHECK(big[i] == 501 + i, "Comm_free: big[%d] = %d", i, big[i]);
  } else if (my_rank == 0) {
    static int big[8192];
    for (int i = 0; i < N; i++) v[i] = 500 + i;
    for (int i = 0; i < 8192; i++) big[i] = 501 + i;
    MPI_OK(MPI_Recv(w, 1, MPI_INT, 1, 502, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Send(v, N, MPI_INT, 1, 500, c));
    MPI_OK(MPI_Send(big, 8192, MPI_INT, 1, 501, c));
    MPI_OK(MPI_Comm_free(&c));
  } else {
    MPI_OK(MPI_Comm_free(&c));
  }

  /* Persistent: a vector of N ints with stride 2, freed after *_init. */
  int bsize = 4 * (int)sizeof(v) + 4 * MPI_BSEND_OVERHEAD;
  void *battach = malloc((size_t)bsize);
  MPI_OK(MPI_Buffer_attach(battach, bsize));
  for (int mode = 0; mode < 2; mode++) { /* 0: Send_init, 1: Bsend_init */
    MPI_Datatype t;
    MPI_OK(MPI_Type_vector(N, 1, 2, MPI_INT, &t));
    MPI_OK(MPI_Type_commit(&t));
    MPI_Request r = MPI_REQUEST_NULL;
    int tag = 510 + mode;
    if (my_rank == 0) {
      if (mode == 0)
        MPI_OK(MPI_Send_init(v, 1, t, 1, tag, MPI_COMM_WORLD, &r));
      else
        MPI_OK(MPI_Bsend_init(v, 1, t, 1, tag, MPI_COMM_WORLD, &r));
    } else if (my_rank == 1) {
      MPI_OK(MPI_Recv_init(v, 1, t, 0, tag, MPI_COMM_WORLD, &r));
    }
    MPI_OK(MPI_Type_free(&t));
    for (int round = 0; round < 3; round++) {
      if (my_rank == 0) {
        for (int i = 0; i < 2 * N; i++) v[i] = i % 2 ? -1 : 1000 * round + tag + i / 2;
        MPI_OK(MPI_Start(&r));
        MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
      } else if (my_rank == 1) {
        set_all(v, 2 * N, SENT);
        MPI_OK(MPI_Start(&r));
        MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < 2 * N; i++) {
          int want = i % 2 ? SENT : 1000 * round + tag + i / 2;
          CHECK(v[i] == want, "persistent mode=%d round=%d: v[%d] = %d, expected %d", mode,
                round, i, v[i], want);
        }
      }
    }
    if (r != MPI_REQUEST_NULL) MPI_OK(MPI_Request_free(&r));
  }
  MPI_OK(MPI_Buffer_detach(&battach, &bsize));
  free(battach);
}

/* 6. MPI_Request_free on an active receive (MPI-4.0 §3.7.3): the receive
 * still completes and its data lands. The application cannot test for
 * that; here a second message on the same channel (matched after the
 * first, §3.5) and a barrier stand for "later". Way 0: MPI_Irecv; ways 1
 * and 2: a persistent receive (MPI_Recv_init) started, completed once,
 * started again and freed, of 2 and of 16 ints (a message the shim may
 * carry with its payload in the header's room, and one behind it). */
static void freed_request(void) {
  enum { N = 16 };
  for (int way = 0; way < 3; way++) {
    int n = way == 1 ? 2 : N, tag = 600 + way;
    int v[N], w = 0;
    if (my_rank == 0) {
      for (int round = 0; round < (way ? 2 : 1); round++) {
        for (int i = 0; i < n; i++) v[i] = 1000 * way + 100 * round + i;
        MPI_OK(MPI_Send(v, n, MPI_INT, 1, tag, MPI_COMM_WORLD));
      }
      MPI_OK(MPI_Send(&w, 1, MPI_INT, 1, tag, MPI_COMM_WORLD));
    } else if (my_rank == 1) {
      MPI_Request r;
      set_all(v, N, SENT);
      if (way == 0) {
        MPI_OK(MPI_Irecv(v, n, MPI_INT, 0, tag, MPI_COMM_WORLD, &r));
      } else {
        MPI_OK(MPI_Recv_init(v, n, MPI_INT, 0, tag, MPI_COMM_WORLD, &r));
        MPI_OK(MPI_Start(&r));
        MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i++)
          CHECK(v[i] == 1000 * way + i, "persistent receive way %d: v[%d] = %d", way, i, v[i]);
        set_all(v, N, SENT);
        MPI_OK(MPI_Start(&r));
      }
      MPI_OK(MPI_Request_free(&r));
      CHECK(r == MPI_REQUEST_NULL, "Request_free left the handle");
      MPI_OK(MPI_Recv(&w, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (my_rank == 1)
      for (int i = 0; i < N; i++) {
        int want = i < n ? 1000 * way + 100 * (way ? 1 : 0) + i : SENT;
        CHECK(v[i] == want, "receive (way %d) freed while active: v[%d] = %d, expected %d", way,
              i, v[i], want);
      }
  }
}

/* 7. A probe for a later tag must not let a wildcard receive overtake the
 * older message (MPI-4.0 §3.5: "if a sender sends two messages in
 * succession to the same destination, and both match the same receive,
 * then this operation cannot receive the second message if the first one
 * is still pending"). Tags 700 + 10*way + {0, 1, 2} = A, B, C; each message
 * holds n ints tag*1000+i. */
static void check_msg(const int *b, int n, const MPI_Status *st, int want_tag, const char *what,
                      int way, int n_sent) {
  CHECK(st->MPI_SOURCE == 0 && st->MPI_TAG == want_tag,
        "overtake way=%d n=%d %s: got source %d tag %d, expected tag %d (the oldest)", way,
        n_sent, what, st->MPI_SOURCE, st->MPI_TAG, want_tag);
  int bad = 0;
  for (int i = 0; i < n; i++) bad += b[i] != st->MPI_TAG * 1000 + i;
  CHECK(bad == 0, "overtake way=%d n=%d %s: %d of %d ints wrong", way, n_sent, what, bad, n);
}

static void overtaking(void) {
  /* 8 B (tiny at zero knobs), 16 B staged, 32 KiB zero-copy */
  static const int ns[] = {2, 4, 8192};
  enum { WAYS = 8 };
  for (int k = 0; k < 3; k++) {
    int n = ns[k];
    int *b = malloc(sizeof(int) * (size_t)n * 3);
    for (int way = 0; way < WAYS; way++) {
      int a = 700 + 10 * way, three = way == 7;
      if (my_rank == 0) {
        MPI_Request r[3];
        int nm = three ? 3 : 2;
        for (int j = 0; j < nm; j++) {
          for (int i = 0; i < n; i++) b[j * n + i] = (a + j) * 1000 + i;
          MPI_OK(MPI_Isend(b + j * n, n, MPI_INT, 1, a + j, MPI_COMM_WORLD, &r[j]));
        }
        MPI_OK(MPI_Waitall(nm, r, MPI_STATUSES_IGNORE));
      } else if (my_rank == 1) {
        MPI_Status st;
        MPI_Message m = MPI_MESSAGE_NULL, m2;
        int flag = 0;
        set_all(b, n, SENT);
        if (way == 4)
          MPI_OK(MPI_Mprobe(0, a + 1, MPI_COMM_WORLD, &m, &st));
        else
          MPI_OK(MPI_Probe(0, a + 1, MPI_COMM_WORLD, &st));
        if (three) MPI_OK(MPI_Probe(0, a + 2, MPI_COMM_WORLD, &st));
        switch (way) {
        case 0: case 4: case 7:
          MPI_OK(MPI_Recv(b, n, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
          break;
        case 1:
          MPI_OK(MPI_Recv(b, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
          break;
        case 2: {
          MPI_Request r;
          MPI_OK(MPI_Irecv(b, n, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
          MPI_OK(MPI_Wait(&r, &st));
          break;
        }
        case 3:
          do MPI_OK(MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
          while (!flag);
          CHECK(st.MPI_TAG == a, "overtake way=3 n=%d: Iprobe(ANY_TAG) saw tag %d, expected %d",
                n, st.MPI_TAG, a);
          MPI_OK(MPI_Recv(b, n, MPI_INT, 0, st.MPI_TAG, MPI_COMM_WORLD, &st));
          break;
        case 5:
          MPI_OK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m2, &st));
          MPI_OK(MPI_Mrecv(b, n, MPI_INT, &m2, &st));
          break;
        case 6:
          MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, b, n, MPI_INT, 0, MPI_ANY_TAG,
                              MPI_COMM_WORLD, &st));
          break;
        }
        check_msg(b, n, &st, a, "first wildcard receive", way, n);
        /* The rest, in order. */
        set_all(b, n, SENT);
        if (way == 4)
          MPI_OK(MPI_Mrecv(b, n, MPI_INT, &m, &st));
        else
          MPI_OK(MPI_Recv(b, n, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_msg(b, n, &st, a + 1, "second receive", way, n);
        if (three) {
          MPI_OK(MPI_Recv(b, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
          check_msg(b, n, &st, a + 2, "third receive", way, n);
        }
      }
    }
    free(b);
  }
}

/* 7b. The same past many messages: rank 0 sends 150 two-int messages of
 * tag 750 and then one of tag 751; rank 1 probes for 751 first (the shim
 * takes the older ones off the network with it, some at a time), then
 * receives all with MPI_ANY_TAG, which must come in the order sent. */
static void overtaking_many(void) {
  enum { M = 150 };
  int b[2];
  if (my_rank == 0) {
    for (int j = 0; j <= M; j++) {
      b[0] = j;
      b[1] = -j;
      MPI_OK(MPI_Send(b, 2, MPI_INT, 1, j < M ? 750 : 751, MPI_COMM_WORLD));
    }
  } else if (my_rank == 1) {
    MPI_Status st;
    MPI_OK(MPI_Probe(0, 751, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_TAG == 751, "overtake past %d: Probe(751) saw tag %d", M, st.MPI_TAG);
    for (int j = 0; j <= M; j++) {
      b[0] = b[1] = SENT;
      MPI_OK(MPI_Recv(b, 2, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
      CHECK(st.MPI_TAG == (j < M ? 750 : 751) && b[0] == j && b[1] == -j,
            "overtake past %d: receive %d got tag %d holding %d, %d", M, j, st.MPI_TAG, b[0],
            b[1]);
    }
  }
}

/* 8. Completion calls with nothing complete leave the status alone. */
static void untouched(const MPI_Status *st, const char *what, int k) {
  const unsigned char *p = (const unsigned char *)st;
  int bad = 0;
  for (size_t i = 0; i < sizeof *st; i++) bad += p[i] != 0xA5;
  CHECK(bad == 0, "%s with flag false (message %d) wrote %d bytes of the status", what, k, bad);
}

static void status_when_incomplete(void) {
  enum { N = 8192 }; /* 32 KiB: zero-copy in the shim; message 0: 4 ints */
  static int v[N];
  for (int k = 0; k < 2; k++) {
    int n = k ? N : 4, tag = 800 + k, go = 0;
    if (my_rank == 0) {
      MPI_OK(MPI_Recv(&go, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      for (int i = 0; i < n; i++) v[i] = tag + i;
      MPI_OK(MPI_Send(v, n, MPI_INT, 1, tag, MPI_COMM_WORLD));
    } else if (my_rank == 1) {
      MPI_Request r;
      MPI_Status st[2];
      int flag = 0, idx = -1, out = -1, seen_false = 0;
      set_all(v, n, SENT);
      MPI_OK(MPI_Irecv(v, n, MPI_INT, 0, tag, MPI_COMM_WORLD, &r));
      for (int round = 0; !flag; round++) {
        if (round == 3) MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, tag, MPI_COMM_WORLD));
        memset(st, 0xA5, sizeof st);
        switch (round % 5) {
        case 0:
          MPI_OK(MPI_Test(&r, &flag, &st[0]));
          if (!flag) untouched(&st[0], "MPI_Test", k);
          break;
        case 1:
          MPI_OK(MPI_Testany(1, &r, &idx, &flag, &st[0]));
          if (!flag) untouched(&st[0], "MPI_Testany", k);
          break;
        case 2:
          MPI_OK(MPI_Testsome(1, &r, &out, &idx, st));
          flag = out > 0;
          if (!flag) untouched(&st[0], "MPI_Testsome", k);
          break;
        case 3:
          MPI_OK(MPI_Testall(1, &r, &flag, st));
          if (!flag) untouched(&st[0], "MPI_Testall", k);
          break;
        case 4:
          MPI_OK(MPI_Request_get_status(r, &flag, &st[0]));
          if (!flag) untouched(&st[0], "MPI_Request_get_status", k);
          if (flag) MPI_OK(MPI_Wait(&r, &st[0]));
          break;
        }
        if (round < 3) CHECK(!flag, "message %d complete before it was sent", k);
        seen_false += !flag;
      }
      CHECK(seen_false >= 3, "message %d: %d calls with flag false", k, seen_false);
      CHECK(r == MPI_REQUEST_NULL, "message %d: request still active", k);
      CHECK(st[0].MPI_SOURCE == 0 && st[0].MPI_TAG == tag, "message %d: status (%d, %d)", k,
            st[0].MPI_SOURCE, st[0].MPI_TAG);
      for (int i = 0; i < n; i++)
        CHECK(v[i] == tag + i, "message %d: v[%d] = %d, expected %d", k, i, v[i], tag + i);
    }
  }
}

/* 9. Sends pending on a freed communicator complete normally. */
static void freed_comm_sends(void) {
  enum { N = 8192 };
  static int v[4][N];
  MPI_Comm c;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  if (my_rank == 0) {
    MPI_Request r[4];
    for (int j = 0; j < 4; j++)
      for (int i = 0; i < N; i++) v[j][i] = 1000 * (j + 1) + i;
    MPI_OK(MPI_Isend(v[0], 4, MPI_INT, 1, 900, c, &r[0]));
    MPI_OK(MPI_Isend(v[1], N, MPI_INT, 1, 901, c, &r[1]));
    MPI_OK(MPI_Issend(v[2], N, MPI_INT, 1, 902, c, &r[2]));
    MPI_OK(MPI_Isend(v[3], 16, MPI_INT, 1, 903, c, &r[3]));
    MPI_OK(MPI_Request_free(&r[3]));
    MPI_OK(MPI_Comm_free(&c));
    CHECK(c == MPI_COMM_NULL, "Comm_free left the handle");
    MPI_OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
  } else if (my_rank == 1) {
    static const int ns[] = {4, N, N, 16};
    for (int j = 0; j < 4; j++) set_all(v[j], N, SENT);
    /* Received in reverse order: every send is still pending when its
     * communicator is freed on rank 0 (the Issend until its receive). */
    for (int j = 3; j >= 0; j--)
      MPI_OK(MPI_Recv(v[j], ns[j], MPI_INT, 0, 900 + j, c, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Comm_free(&c));
    for (int j = 0; j < 4; j++) {
      int bad = 0;
      for (int i = 0; i < ns[j]; i++) bad += v[j][i] != 1000 * (j + 1) + i;
      CHECK(bad == 0, "send %d on a freed communicator: %d of %d ints wrong", j, bad, ns[j]);
    }
  } else {
    MPI_OK(MPI_Comm_free(&c));
  }
}

/* 10. A persistent receive started after a probe took its message (§3.9,
 * §3.8.1): the shim's probes take a message off the network into its
 * stash; MPI_Start must find it there. Ways: Start+Wait, Startall+Waitall,
 * Start+Test, Start+Waitany (beside a receive that completes later),
 * Start+Request_get_status (the data in the buffer already) then Wait,
 * the second time too, MPI_ANY_TAG after a probe for the
 * later tag (non-overtaking), and a strided vector type freed after
 * Recv_init. Each request is started a second time for a message no probe
 * saw. Small (staged) and large (32 KiB) messages. */
static void persistent_after_probe(void) {
  enum { N = 8192, WAYS = 7 };
  static const int ns[] = {4, N};
  static int b[2 * N], s[2][N];
  for (int k = 0; k < 2; k++) {
    int n = ns[k];
    for (int way = 0; way < WAYS; way++) {
      int a = 1100 + 100 * k + 10 * way;
      int second = way == 5 ? a + 1 : a; /* tag of the second message */
      if (my_rank == 0) {
        MPI_Request r[2];
        for (int j = 0; j < 2; j++) {
          for (int i = 0; i < n; i++) s[j][i] = (a + j) * 1000 + i;
          MPI_OK(MPI_Isend(s[j], n, MPI_INT, 1, j ? second : a, MPI_COMM_WORLD, &r[j]));
        }
        MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        if (way == 3) { /* the other receive of the Waitany, after its answer */
          int w = 0;
          MPI_OK(MPI_Recv(&w, 1, MPI_INT, 1, a + 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
          MPI_OK(MPI_Send(&w, 1, MPI_INT, 1, a + 5, MPI_COMM_WORLD));
        }
      } else if (my_rank == 1) {
        MPI_Request p, two[2];
        MPI_Status st;
        MPI_Datatype t = MPI_INT;
        int count = n, stride = 1, flag = 0;
        if (way == 6) {
          MPI_OK(MPI_Type_vector(n, 1, 2, MPI_INT, &t));
          MPI_OK(MPI_Type_commit(&t));
          count = 1;
          stride = 2;
        }
        MPI_OK(MPI_Recv_init(b, count, t, 0, way == 5 ? MPI_ANY_TAG : a, MPI_COMM_WORLD, &p));
        if (way == 6) MPI_OK(MPI_Type_free(&t));
        for (int round = 0; round < 2; round++) {
          int want = a + round; /* the values' tag */
          set_all(b, 2 * N, SENT);
          st.MPI_SOURCE = st.MPI_TAG = -1;
          if (round == 0) MPI_OK(MPI_Probe(0, way == 5 ? a + 1 : a, MPI_COMM_WORLD, &st));
          if (way == 1 && round == 0) {
            MPI_OK(MPI_Startall(1, &p));
            MPI_OK(MPI_Waitall(1, &p, &st));
          } else {
            MPI_OK(MPI_Start(&p));
            if (way == 2 && round == 0) {
              do MPI_OK(MPI_Test(&p, &flag, &st));
              while (!flag);
            } else if (way == 3 && round == 0) {
              int w = 0, idx = -1;
              two[0] = MPI_REQUEST_NULL;
              MPI_OK(MPI_Irecv(&w, 1, MPI_INT, 0, a + 5, MPI_COMM_WORLD, &two[0]));
              two[1] = p;
              MPI_OK(MPI_Waitany(2, two, &idx, &st));
              CHECK(idx == 1, "persist way=3 n=%d: Waitany returned %d, expected 1", n, idx);
              p = two[1];
              MPI_OK(MPI_Send(&w, 1, MPI_INT, 0, a + 5, MPI_COMM_WORLD));
            } else if (way == 4) {
              do MPI_OK(MPI_Request_get_status(p, &flag, &st));
              while (!flag);
              /* Complete: the data is in the buffer before the Wait. */
              int early = 0;
              for (int i = 0; i < n; i++) early += b[i] != want * 1000 + i;
              CHECK(early == 0, "persist way=4 n=%d round=%d: %d ints wrong after get_status", n,
                    round, early);
              /* The status checked below is get_status's: MPICH 5.0 gives
               * an empty one to the Wait after it (natively too). */
              MPI_OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
            } else {
              MPI_OK(MPI_Wait(&p, &st));
            }
          }
          int tag = round && way != 5 ? a : want, got = -1;
          CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == tag,
                "persist way=%d n=%d round=%d: status source %d tag %d, expected 0 and %d", way,
                n, round, st.MPI_SOURCE, st.MPI_TAG, tag);
          MPI_OK(MPI_Get_count(&st, MPI_INT, &got));
          CHECK(got == n, "persist way=%d n=%d round=%d: Get_count %d", way, n, round, got);
          int bad = 0;
          for (int i = 0; i < 2 * N; i++) {
            int v = i % stride == 0 && i / stride < n ? want * 1000 + i / stride : SENT;
            bad += b[i] != v;
          }
          CHECK(bad == 0, "persist way=%d n=%d round=%d: %d ints wrong (b[0] = %d)", way, n,
                round, bad, b[0]);
        }
        MPI_OK(MPI_Request_free(&p));
        if (way == 3) MPI_OK(MPI_Wait(&two[0], MPI_STATUS_IGNORE)); /* after rank 0's Waitall */
      }
    }
  }
}

int main(int argc, char **argv) {
  init_common("p2p_rules", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  /* Sections by name (freed, partial, error, bottom); all by default. */
  int all = argc < 2;
  for (int i = 1; i < argc; i++) all |= !strcmp(argv[i], "all");
#define SECTION(name, fn)                                                     \
  do {                                                                        \
    int on_ = all;                                                            \
    for (int i_ = 1; i_ < argc; i_++) on_ |= !strcmp(argv[i_], name);         \
    if (on_) fn();                                                            \
  } while (0)
  SECTION("freed", freed_types);
  SECTION("partial", partial_elements);
  SECTION("error", error_field);
  SECTION("bottom", bottom);
  SECTION("comm", freed_comm_and_persistent);
  SECTION("reqfree", freed_request);
  SECTION("overtake", overtaking);
  SECTION("overtake past many", overtaking_many);
  SECTION("nostatus", status_when_incomplete);
  SECTION("commsend", freed_comm_sends);
  SECTION("persist", persistent_after_probe);
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("p2p_rules: PASS np=%d checks=%ld\n", np, n_checks);
  MPI_Finalize();
  return 0;
}
