/* integrity.c: no byte, count or match changes under the shim.
 *
 * Run with np >= 2 (ranks >= 2 only take part in the wildcard section).
 * Expects, under any knobs:
 *   1. messages of 0, 1, 8, 200, 4 KiB, 10 KiB, 64 KiB and 1 MiB arrive byte for byte,
 *      with MPI_Get_count, MPI_SOURCE and MPI_TAG as sent, and nothing is
 *      written past the message in a larger receive buffer;
 *   2. derived datatypes (a vector, small and above the shim's staging
 *      threshold, and a resized struct) arrive element for element, and the
 *      gaps of a strided receive are left alone;
 *   3. ANY_SOURCE/ANY_TAG receives see each source's messages in send order
 *      (non-overtaking), and receives by tag in a different order than the
 *      sends keep each (source, tag) stream in order;
 *   4. Probe, Iprobe, Mprobe/Mrecv, Improbe/Imrecv report source, tag and
 *      count as sent and receive the probed message; Iprobe of a tag never
 *      sent stays false; nonblocking receives posted after a probe of
 *      another tag (one that the shim holds) get their own messages, and
 *      the probed message goes to the first receive of its tag;
 *   5. persistent requests (Send_init, Ssend_init, Recv_init, Start,
 *      Startall) deliver every round's data.
 * Rank 0 prints "integrity: PASS np=N checks=C checksum=X" where X is an
 * order-independent sum of per-message FNV-1a hashes of everything received:
 * it must be the same with and without the shim. On failure a line
 * "FAIL integrity rank R: ..." and a non-zero exit. */
#include "common.h"

#define KIB 1024
#define MIB (1024 * 1024)

static uint64_t checksum = 0;

static void account(const void *b, size_t n, int src, int tag) {
  uint64_t h = fnv1a((const unsigned char *)b, n, 0xcbf29ce484222325ull);
  h = fnv1a((const unsigned char *)&src, sizeof src, h);
  h = fnv1a((const unsigned char *)&tag, sizeof tag, h);
  checksum += h;
}

static void check_status(MPI_Status *st, MPI_Datatype t, int src, int tag,
                         int count, const char *what) {
  int c = -7;
  MPI_Get_count(st, t, &c);
  CHECK(st->MPI_SOURCE == src, "%s: MPI_SOURCE %d, expected %d", what,
        st->MPI_SOURCE, src);
  CHECK(st->MPI_TAG == tag, "%s: MPI_TAG %d, expected %d", what, st->MPI_TAG,
        tag);
  CHECK(c == count, "%s: MPI_Get_count %d, expected %d", what, c, count);
}

/* 1. Sizes, out with MPI_Send and back with MPI_Isend. */
static void sizes(void) {
  /* 200 and 3000: receives (n + pad) into the shim's mid slots, sent
   * from a slot and from a mid slot; 10 KiB: a receive above the slots and
   * up to its staging threshold, which lands staged or straight in the
   * buffer by LOGGP_DIRECT_MIN; 16 KiB: sent as a struct from there. */
  static const int sz[] = {0, 1, 8, 200, 3000, 4 * KIB, 10 * KIB, 16 * KIB, 64 * KIB, MIB};
  const int nsz = (int)(sizeof sz / sizeof sz[0]);
  const int pad = 64;
  unsigned char *b = malloc(MIB + pad);
  for (int k = 0; k < nsz; k++) {
    int n = sz[k];
    MPI_Status st;
    if (my_rank == 0) {
      fill(b, (size_t)n, 0, k);
      MPI_OK(MPI_Send(b, n, MPI_BYTE, 1, 10 + k, MPI_COMM_WORLD));
      memset(b, 0xEE, (size_t)n + pad);
      MPI_Request r;
      MPI_OK(MPI_Irecv(b, n + pad, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      check_status(&st, MPI_BYTE, 1, 20 + k, n, "sizes echo");
      long bad = verify(b, (size_t)n, 1, 100 + k);
      CHECK(bad < 0, "sizes echo of %d bytes: byte %ld differs", n, bad);
      for (int i = 0; i < pad; i++)
        CHECK(b[n + i] == 0xEE, "sizes echo of %d bytes: byte %d past the end written", n, n + i);
      account(b, (size_t)n, 1, 20 + k);
    } else if (my_rank == 1) {
      memset(b, 0xEE, (size_t)n + pad);
      /* A receive buffer larger than the message. */
      MPI_OK(MPI_Recv(b, n + pad, MPI_BYTE, 0, 10 + k, MPI_COMM_WORLD, &st));
      check_status(&st, MPI_BYTE, 0, 10 + k, n, "sizes");
      long bad = verify(b, (size_t)n, 0, k);
      CHECK(bad < 0, "sizes: %d bytes: byte %ld differs", n, bad);
      for (int i = 0; i < pad; i++)
        CHECK(b[n + i] == 0xEE, "sizes: %d bytes: byte %d past the end written", n, n + i);
      account(b, (size_t)n, 0, 10 + k);
      fill(b, (size_t)n, 1, 100 + k);
      MPI_Request r;
      MPI_OK(MPI_Isend(b, n, MPI_BYTE, 0, 20 + k, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
  }
  free(b);
}

/* 2. Derived datatypes. */
struct rec {
  int a;
  double b;
  char c[5];
};

static void vector_case(int blocks) {
  const int bl = 3, stride = 5;
  MPI_Datatype vt;
  MPI_OK(MPI_Type_vector(blocks, bl, stride, MPI_INT, &vt));
  MPI_OK(MPI_Type_commit(&vt));
  int span = blocks * stride, packed = blocks * bl;
  int *strided = malloc(sizeof(int) * (size_t)span);
  int *flat = malloc(sizeof(int) * ((size_t)packed + 8));
  MPI_Status st;
  int tag = 30 + (blocks > 1000);
  if (my_rank == 0) {
    for (int i = 0; i < span; i++) strided[i] = i * 7 + blocks;
    MPI_OK(MPI_Send(strided, 1, vt, 1, tag, MPI_COMM_WORLD));
    /* Back into a strided buffer: the gaps must stay -1. */
    for (int i = 0; i < span; i++) strided[i] = -1;
    MPI_OK(MPI_Recv(strided, 1, vt, 1, tag, MPI_COMM_WORLD, &st));
    check_status(&st, vt, 1, tag, 1, "vector back");
    for (int i = 0; i < span; i++) {
      int in_block = i % stride < bl;
      int want = in_block ? -(i * 7 + blocks) : -1;
      CHECK(strided[i] == want, "vector back (%d blocks): element %d is %d, expected %d",
            blocks, i, strided[i], want);
    }
    account(strided, sizeof(int) * (size_t)span, 1, tag);
  } else if (my_rank == 1) {
    for (int i = 0; i < packed + 8; i++) flat[i] = 12345;
    MPI_OK(MPI_Recv(flat, packed + 8, MPI_INT, 0, tag, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_INT, 0, tag, packed, "vector as ints");
    for (int j = 0; j < packed; j++) {
      int i = (j / bl) * stride + j % bl;
      CHECK(flat[j] == i * 7 + blocks, "vector (%d blocks): int %d is %d, expected %d",
            blocks, j, flat[j], i * 7 + blocks);
    }
    for (int j = packed; j < packed + 8; j++)
      CHECK(flat[j] == 12345, "vector: int %d past the end written", j);
    account(flat, sizeof(int) * (size_t)packed, 0, tag);
    for (int i = 0; i < span; i++) strided[i] = 999;
    for (int j = 0; j < packed; j++) strided[(j / bl) * stride + j % bl] = -flat[j];
    MPI_OK(MPI_Send(strided, 1, vt, 0, tag, MPI_COMM_WORLD));
  }
  MPI_Type_free(&vt);
  free(strided);
  free(flat);
}

static void struct_case(void) {
  int bl[3] = {1, 1, 5};
  MPI_Aint disp[3] = {offsetof(struct rec, a), offsetof(struct rec, b),
                      offsetof(struct rec, c)};
  MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, t0, t;
  MPI_OK(MPI_Type_create_struct(3, bl, disp, types, &t0));
  MPI_OK(MPI_Type_create_resized(t0, 0, sizeof(struct rec), &t));
  MPI_OK(MPI_Type_commit(&t));
  enum { N = 37 };
  struct rec r[N + 2];
  MPI_Status st;
  if (my_rank == 0) {
    for (int i = 0; i < N; i++) {
      r[i].a = i * 3 - 50;
      r[i].b = i * 0.25 + 1e-3;
      memcpy(r[i].c, "wxyz", 5);
      r[i].c[0] = (char)('a' + i % 26);
    }
    MPI_OK(MPI_Send(r, N, t, 1, 33, MPI_COMM_WORLD));
  } else if (my_rank == 1) {
    memset(r, 0, sizeof r);
    MPI_OK(MPI_Recv(r, N + 2, t, 0, 33, MPI_COMM_WORLD, &st));
    check_status(&st, t, 0, 33, N, "struct");
    for (int i = 0; i < N; i++) {
      CHECK(r[i].a == i * 3 - 50 && r[i].b == i * 0.25 + 1e-3 &&
                r[i].c[0] == (char)('a' + i % 26) && memcmp(r[i].c + 1, "xyz", 4) == 0,
            "struct element %d differs", i);
      account(&r[i].a, sizeof r[i].a, 0, 33);
      account(&r[i].b, sizeof r[i].b, 0, 33);
      account(r[i].c, 5, 0, 33);
    }
  }
  MPI_Type_free(&t);
  MPI_Type_free(&t0);
}

/* 3. Wildcards and non-overtaking. Message j from a source carries j in its
 * first 4 bytes, has tag j % 3 and a size that cycles across the shim's
 * staging threshold. */
static int stream_size(int j) {
  static const int s[] = {4, 8, 100, 20000, 70000, 4, 4096};
  return s[j % 7];
}

static void stream_fill(unsigned char *b, int src, int j) {
  int n = stream_size(j);
  fill(b, (size_t)n, src, 1000 + j);
  memcpy(b, &j, sizeof j);
}

static void stream_check(unsigned char *b, MPI_Status *st, int j, const char *what) {
  int src = st->MPI_SOURCE, n = stream_size(j), c;
  MPI_Get_count(st, MPI_BYTE, &c);
  int got;
  memcpy(&got, b, sizeof got);
  CHECK(got == j, "%s: from rank %d got message %d, expected %d (overtaken)", what, src, got, j);
  CHECK(st->MPI_TAG == j % 3, "%s: message %d from %d has tag %d, expected %d", what, j, src,
        st->MPI_TAG, j % 3);
  CHECK(c == n, "%s: message %d from %d has count %d, expected %d", what, j, src, c, n);
  unsigned char first[4];
  memcpy(first, b, 4);
  fill(b, 4, src, 1000 + j); /* restore the pattern under the header */
  long bad = verify(b, (size_t)n, src, 1000 + j);
  CHECK(bad < 0, "%s: message %d from %d: byte %ld differs", what, j, src, bad);
  memcpy(b, first, 4);
  account(b, (size_t)n, src, st->MPI_TAG);
}

static void release_senders(int np) {
  for (int s = 0; s < np; s++)
    if (s != 1) MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, s, 90, MPI_COMM_WORLD));
}

static void wildcards(int np) {
  enum { NA = 42, NB = 30 };
  unsigned char *b = malloc(70000 + 64);
  if (my_rank == 1) {
    int next[64] = {0};
    MPI_Status st;
    /* Phase a: everything with ANY_SOURCE, ANY_TAG. */
    for (int k = 0; k < NA * (np - 1); k++) {
      MPI_OK(MPI_Recv(b, 70000 + 64, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
      CHECK(st.MPI_SOURCE != 1 && st.MPI_SOURCE < np, "wildcard: source %d", st.MPI_SOURCE);
      stream_check(b, &st, next[st.MPI_SOURCE]++, "wildcard");
    }
    release_senders(np);
    /* Phase b: by tag, 2 then 1 then 0, from any source. */
    int nextb[64][3];
    for (int s = 0; s < np; s++)
      for (int t = 0; t < 3; t++) nextb[s][t] = t;
    for (int t = 2; t >= 0; t--) {
      int per_src = (NB - t + 2) / 3; /* messages j < NB with j % 3 == t */
      for (int k = 0; k < per_src * (np - 1); k++) {
        MPI_OK(MPI_Recv(b, 70000 + 64, MPI_BYTE, MPI_ANY_SOURCE, t, MPI_COMM_WORLD, &st));
        int s = st.MPI_SOURCE;
        stream_check(b, &st, nextb[s][t], "by tag");
        nextb[s][t] += 3;
      }
    }
    release_senders(np);
    /* Phase c: ANY_TAG from each source in turn, last source first. */
    for (int s = np - 1; s >= 0; s--) {
      if (s == 1) continue;
      for (int j = 0; j < NB; j++) {
        MPI_OK(MPI_Recv(b, 70000 + 64, MPI_BYTE, s, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == s, "by source: got %d, expected %d", st.MPI_SOURCE, s);
        stream_check(b, &st, j, "by source");
      }
    }
  } else {
    for (int j = 0; j < NA; j++) {
      stream_fill(b, my_rank, j);
      MPI_OK(MPI_Send(b, stream_size(j), MPI_BYTE, 1, j % 3, MPI_COMM_WORLD));
    }
    /* Phases b and c: nonblocking, since the receiver takes them out of order. */
    for (int phase = 0; phase < 2; phase++) {
      /* Wait until the receiver has taken every message of the previous
       * phase, so that its wildcards cannot match this phase's. */
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      unsigned char *bufs = malloc((size_t)NB * 70000);
      MPI_Request r[NB];
      for (int j = 0; j < NB; j++) {
        stream_fill(bufs + (size_t)j * 70000, my_rank, j);
        MPI_OK(MPI_Isend(bufs + (size_t)j * 70000, stream_size(j), MPI_BYTE, 1, j % 3,
                         MPI_COMM_WORLD, &r[j]));
      }
      MPI_OK(MPI_Waitall(NB, r, MPI_STATUSES_IGNORE));
      free(bufs);
    }
  }
  free(b);
}

/* 4. Probes, rank 0 to rank 1. */
static void probes(void) {
  /* Then four 8-byte messages: tags 47, 48, 48 and 111 (= 47 + 64). */
  static const int n_[] = {777, 5000, 100, 200, 70000, 0, 8, 8, 8, 8};
  static const int tag_[] = {42, 43, 44, 44, 45, 46, 47, 48, 48, 111};
  unsigned char *b = malloc(70000);
  if (my_rank == 0) {
    for (int k = 0; k < 10; k++) {
      fill(b, (size_t)n_[k], 0, 2000 + k);
      MPI_OK(MPI_Send(b, n_[k], MPI_BYTE, 1, tag_[k], MPI_COMM_WORLD));
    }
  } else if (my_rank == 1) {
    MPI_Status st;
    int flag = 0;
    /* Probe with wildcards, then receive exactly what was announced. */
    MPI_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_BYTE, 0, 42, 777, "Probe");
    MPI_OK(MPI_Recv(b, 777, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_BYTE, 0, 42, 777, "Recv after Probe");
    CHECK(verify(b, 777, 0, 2000) < 0, "Recv after Probe: data differs");
    account(b, 777, 0, 42);
    /* Iprobe until the message is there. */
    double give_up = now_us() + 20e6;
    while (!flag) {
      MPI_OK(MPI_Iprobe(0, 43, MPI_COMM_WORLD, &flag, &st));
      CHECK(flag || now_us() < give_up, "Iprobe never saw tag 43");
    }
    check_status(&st, MPI_BYTE, 0, 43, 5000, "Iprobe");
    MPI_OK(MPI_Recv(b, 5000, MPI_BYTE, 0, 43, MPI_COMM_WORLD, &st));
    CHECK(verify(b, 5000, 0, 2001) < 0, "Recv after Iprobe: data differs");
    account(b, 5000, 0, 43);
    /* Two Mprobes of the same tag: matched in send order, received in reverse. */
    MPI_Message m1, m2;
    MPI_Status s1, s2;
    MPI_OK(MPI_Mprobe(0, 44, MPI_COMM_WORLD, &m1, &s1));
    MPI_OK(MPI_Mprobe(0, 44, MPI_COMM_WORLD, &m2, &s2));
    check_status(&s1, MPI_BYTE, 0, 44, 100, "Mprobe 1");
    check_status(&s2, MPI_BYTE, 0, 44, 200, "Mprobe 2");
    MPI_OK(MPI_Mrecv(b, 200, MPI_BYTE, &m2, &st));
    CHECK(m2 == MPI_MESSAGE_NULL, "Mrecv did not reset the message handle");
    check_status(&st, MPI_BYTE, 0, 44, 200, "Mrecv 2");
    CHECK(verify(b, 200, 0, 2003) < 0, "Mrecv 2: data differs");
    account(b, 200, 0, 44);
    MPI_OK(MPI_Mrecv(b, 100, MPI_BYTE, &m1, &st));
    check_status(&st, MPI_BYTE, 0, 44, 100, "Mrecv 1");
    CHECK(verify(b, 100, 0, 2002) < 0, "Mrecv 1: data differs");
    account(b, 100, 0, 44);
    /* Improbe until there, then Imrecv. */
    flag = 0;
    give_up = now_us() + 20e6;
    while (!flag) {
      MPI_OK(MPI_Improbe(MPI_ANY_SOURCE, 45, MPI_COMM_WORLD, &flag, &m1, &st));
      CHECK(flag || now_us() < give_up, "Improbe never saw tag 45");
    }
    check_status(&st, MPI_BYTE, 0, 45, 70000, "Improbe");
    MPI_Request r;
    MPI_OK(MPI_Imrecv(b, 70000, MPI_BYTE, &m1, &r));
    MPI_OK(MPI_Wait(&r, &st));
    check_status(&st, MPI_BYTE, 0, 45, 70000, "Imrecv");
    CHECK(verify(b, 70000, 0, 2004) < 0, "Imrecv: data differs");
    account(b, 70000, 0, 45);
    /* A zero-byte message. */
    MPI_OK(MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_BYTE, 0, 46, 0, "Probe of 0 bytes");
    MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 46, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_BYTE, 0, 46, 0, "Recv of 0 bytes");
    account(b, 0, 0, 46);
    /* A probe of tag 48 (the shim keeps that message aside), then
     * receives posted for tags 48, 47, 48, 111: the first of tag 48 gets
     * the probed message, the second the next one; 47 and 111 (which no
     * held message has, though 111 is 47 modulo 64) get theirs. */
    MPI_OK(MPI_Probe(0, 48, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_BYTE, 0, 48, 8, "Probe of tag 48");
    static const int rtag[] = {48, 47, 48, 111}, rseq[] = {2007, 2006, 2008, 2009};
    unsigned char rb[4][8];
    MPI_Request rq[4];
    MPI_Status rs[4];
    for (int k = 0; k < 4; k++)
      MPI_OK(MPI_Irecv(rb[k], 8, MPI_BYTE, 0, rtag[k], MPI_COMM_WORLD, &rq[k]));
    MPI_OK(MPI_Waitall(4, rq, rs));
    for (int k = 0; k < 4; k++) {
      check_status(&rs[k], MPI_BYTE, 0, rtag[k], 8, "Irecv after a probe of another tag");
      CHECK(verify(rb[k], 8, 0, rseq[k]) < 0, "Irecv %d (tag %d) after a probe: data differs", k,
            rtag[k]);
      account(rb[k], 8, 0, rtag[k]);
    }
    /* Nothing else is pending from rank 0 on these tags. */
    MPI_OK(MPI_Iprobe(0, 999, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "Iprobe reported a message with tag 999 that was never sent");
  }
  free(b);
}

/* 5. Persistent requests, 12 rounds. */
static void persistent(void) {
  enum { ROUNDS = 12 };
  static const int n_[] = {4 * KIB, MIB, 0, 64};
  unsigned char *b[4];
  for (int i = 0; i < 4; i++) b[i] = malloc((size_t)n_[i] + 1);
  MPI_Request r[4];
  if (my_rank == 0) {
    MPI_OK(MPI_Send_init(b[0], n_[0], MPI_BYTE, 1, 50, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Send_init(b[1], n_[1], MPI_BYTE, 1, 51, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Send_init(b[2], n_[2], MPI_BYTE, 1, 52, MPI_COMM_WORLD, &r[2]));
    MPI_OK(MPI_Ssend_init(b[3], n_[3], MPI_BYTE, 1, 53, MPI_COMM_WORLD, &r[3]));
    for (int round = 0; round < ROUNDS; round++) {
      for (int i = 0; i < 4; i++) fill(b[i], (size_t)n_[i], 0, 3000 + round * 4 + i);
      if (round % 2) {
        MPI_OK(MPI_Startall(4, r));
      } else {
        for (int i = 3; i >= 0; i--) MPI_OK(MPI_Start(&r[i]));
      }
      MPI_OK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
    }
  } else if (my_rank == 1) {
    for (int i = 0; i < 4; i++)
      MPI_OK(MPI_Recv_init(b[i], n_[i] + 1, MPI_BYTE, 0, 50 + i, MPI_COMM_WORLD, &r[i]));
    for (int round = 0; round < ROUNDS; round++) {
      MPI_Status st[4];
      for (int i = 0; i < 4; i++) memset(b[i], 0xEE, (size_t)n_[i] + 1);
      if (round % 3 == 0) {
        for (int i = 0; i < 4; i++) MPI_OK(MPI_Start(&r[i]));
      } else {
        MPI_OK(MPI_Startall(4, r));
      }
      MPI_OK(MPI_Waitall(4, r, st));
      for (int i = 0; i < 4; i++) {
        check_status(&st[i], MPI_BYTE, 0, 50 + i, n_[i], "persistent");
        long bad = verify(b[i], (size_t)n_[i], 0, 3000 + round * 4 + i);
        CHECK(bad < 0, "persistent round %d request %d: byte %ld differs", round, i, bad);
        CHECK(b[i][n_[i]] == 0xEE, "persistent: byte past the end written");
        account(b[i], (size_t)n_[i], 0, 50 + i);
      }
    }
  }
  if (my_rank <= 1)
    for (int i = 0; i < 4; i++) {
      MPI_OK(MPI_Request_free(&r[i]));
      CHECK(r[i] == MPI_REQUEST_NULL, "Request_free did not reset the request");
    }
  for (int i = 0; i < 4; i++) free(b[i]);
}

int main(int argc, char **argv) {
  int np;
  init_common("integrity", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np >= 2 && np <= 64, "needs 2 to 64 ranks, got %d", np);
  sizes();
  vector_case(64);
  vector_case(8192);
  struct_case();
  wildcards(np);
  probes();
  persistent();
  unsigned long long sum = 0, mine = checksum;
  long checks = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&n_checks, &checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (my_rank == 0) {
    printf("integrity: PASS np=%d checks=%ld checksum=%016llx\n", np, checks, sum);
    fflush(stdout);
  }
  /* Every rank's traffic done before the library's MPI_Finalize: MPICH 4.0
   * over UCX's TCP between the test bed's two "hosts" (netns-mpirun.sh
   * mpich 1 2) otherwise hung in MPI_Finalize after the PASS line, natively,
   * in 5 of 20 jobs on an idle machine and 4 of 8 with both cores loaded
   * (rank 0 in UCX's progress, rank 1 in the launcher's barrier); with this
   * barrier 0 of 20 and 0 of 15. (The shim's MPI_Finalize does the same.) */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
