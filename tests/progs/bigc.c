/* bigc.c: large-count calls above 2^31-1 elements (MPI-4.0 §3.2.5, large
 * counts), each with a message of 2^31 + 8 bytes (MPI_BYTE), between ranks
 * 0 and 1, one round per step:
 *   0  0 -> 1  MPI_Send_c / MPI_Recv_c
 *   1  1 -> 0  MPI_Isend_c / MPI_Irecv_c + Wait
 *   2  0 -> 1  MPI_Probe, then MPI_Recv_c
 *   3  1 -> 0  MPI_Mprobe + MPI_Mrecv_c
 *   4  0 -> 1  MPI_Improbe (until found) + MPI_Imrecv_c + Wait
 *   5  0 <-> 1 MPI_Sendrecv_c (each rank sends and receives 2^31 + 8 bytes)
 *   6  0 <-> 1 MPI_Sendrecv_replace_c
 *   7  0 <-> 1 MPI_Isendrecv_c + Wait
 *   8  0 <-> 1 MPI_Isendrecv_replace_c + Wait
 * Expects: every byte arrives (each round, and each direction of a round,
 * has its own byte pattern, so data of another round is caught); the
 * status of each receive, and of each probe before one, has the source and
 * tag sent and says 2^31 + 8 to MPI_Get_count_c and MPI_Get_elements_c and
 * MPI_UNDEFINED to MPI_Get_count; Mrecv_c/Imrecv_c set the message handle
 * to MPI_MESSAGE_NULL; the send buffer of Sendrecv_c and Isendrecv_c is
 * left as it was. The status of Isendrecv(_replace)_c's Wait is checked
 * only with the argument "isendrecv-status": MPICH 4.0.2 leaves it unset
 * (what an earlier request left there), the shim under virtual time sets
 * it. Build for MPICH 4 only. Other ranks only join the barrier. Rank 0
 * prints "bigc: PASS np=N checks=C isendrecv_status=checked|not checked";
 * on failure "FAIL bigc rank R: ..." and a non-zero exit. Needs two
 * buffers of 2^31 + 8 bytes per taking part rank (about 4.3 GB); MPI or
 * the shim adds a third for a probed message or a *_replace call. */
#include "common.h"

#if !defined(MPICH_NUMVERSION) || MPI_VERSION < 4
#error "bigc.c needs MPICH 4"
#endif

#define N (((MPI_Count)1 << 31) + 8)

/* Byte i of the data of `pattern`. */
static unsigned char val(MPI_Count i, int pattern) {
  return (unsigned char)((i * 7 + pattern) % 251);
}

/* val() repeats every 251 bytes: a block of whole periods is compared with
 * memcmp, byte by byte only where it differs (same result, 2 GB in a
 * fraction of a second). */
#define BLOCK ((MPI_Count)251 * 4096)
static unsigned char ref[BLOCK];
static int ref_pattern = -1;

static void make_ref(int pattern) {
  if (ref_pattern == pattern) return;
  for (MPI_Count i = 0; i < BLOCK; i++) ref[i] = val(i, pattern);
  ref_pattern = pattern;
}

static void fill_pattern(unsigned char *b, int pattern) {
  make_ref(pattern);
  for (MPI_Count at = 0; at < N; at += BLOCK) {
    MPI_Count k = N - at < BLOCK ? N - at : BLOCK;
    memcpy(b + at, ref, (size_t)k);
  }
}

/* Bytes of b[0..N) that differ from val(i, pattern). */
static MPI_Count count_bad(const unsigned char *b, int pattern) {
  make_ref(pattern);
  MPI_Count bad = 0;
  for (MPI_Count at = 0; at < N; at += BLOCK) {
    MPI_Count k = N - at < BLOCK ? N - at : BLOCK;
    if (memcmp(b + at, ref, (size_t)k) == 0) continue;
    for (MPI_Count i = 0; i < k; i++) bad += b[at + i] != val(at + i, pattern);
  }
  return bad;
}

/* A status (of a receive or a probe) for N bytes from `src` with `tag`. */
static void check_status(const MPI_Status *st, int src, int tag, const char *what) {
  MPI_Count c = -1, e = -1;
  int ci = 0;
  MPI_OK(MPI_Get_count_c(st, MPI_BYTE, &c));
  MPI_OK(MPI_Get_elements_c(st, MPI_BYTE, &e));
  MPI_OK(MPI_Get_count(st, MPI_BYTE, &ci));
  CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && c == N && e == N &&
            ci == MPI_UNDEFINED,
        "%s: source %d, tag %d, Get_count_c %lld, Get_elements_c %lld, Get_count %d; "
        "expected %d, %d, %lld, %lld, MPI_UNDEFINED",
        what, st->MPI_SOURCE, st->MPI_TAG, (long long)c, (long long)e, ci, src, tag,
        (long long)N, (long long)N);
}

/* Received data and its status. */
static void check_got(const unsigned char *b, const MPI_Status *st, int src, int tag,
                      int pattern, const char *what) {
  check_status(st, src, tag, what);
  MPI_Count bad = count_bad(b, pattern);
  CHECK(bad == 0, "%s: %lld of %lld bytes wrong", what, (long long)bad, (long long)N);
}

/* A send buffer after its send: unchanged. */
static void check_kept(const unsigned char *b, int pattern, const char *what) {
  MPI_Count bad = count_bad(b, pattern);
  CHECK(bad == 0, "%s: the send buffer changed, %lld of %lld bytes", what, (long long)bad,
        (long long)N);
}

/* Whether the statuses of Isendrecv(_replace)_c's Wait are checked
 * (argument "isendrecv-status"): MPICH 4.0.2 leaves them unset, with
 * whatever an earlier request left there (mpi4.c), so only the data are
 * checked natively; the shim's under virtual time must be right. */
static int isendrecv_status = 0;

static void check_isendrecv(const unsigned char *b, const MPI_Status *st, int src, int tag,
                            int pattern, const char *what) {
  if (isendrecv_status) {
    check_got(b, st, src, tag, pattern, what);
  } else {
    MPI_Count bad = count_bad(b, pattern);
    CHECK(bad == 0, "%s: %lld of %lld bytes wrong", what, (long long)bad, (long long)N);
  }
}

/* Marks a receive buffer as not yet received: bytes of no pattern at both
 * ends (the middle holds an earlier round's pattern, or nothing yet). */
static void mark(unsigned char *b) { b[0] = b[N - 1] = 255; }

int main(int argc, char **argv) {
  init_common("bigc", &argc, &argv);
  isendrecv_status = argc > 1 && strcmp(argv[1], "isendrecv-status") == 0;
  CHECK(argc == 1 || isendrecv_status, "unknown argument %s", argv[1]);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (my_rank < 2) {
    const int me = my_rank, other = 1 - my_rank;
    unsigned char *a = malloc((size_t)N), *b = malloc((size_t)N);
    CHECK(a && b, "cannot allocate 2 x %lld bytes", (long long)N);
    MPI_Status st;
    MPI_Request r;
    MPI_Message msg;
    /* The pattern of round k sent by rank s: 2k + s (distinct per round and
     * direction). */
#define PAT(k, s) (2 * (k) + (s))

    /* Round 0: 0 -> 1, blocking. */
    if (me == 0) {
      fill_pattern(a, PAT(0, 0));
      MPI_OK(MPI_Send_c(a, N, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
    } else {
      mark(b);
      MPI_OK(MPI_Recv_c(b, N, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
      check_got(b, &st, 0, 7, PAT(0, 0), "round 0, Send_c/Recv_c");
    }

    /* Round 1: 1 -> 0, nonblocking. */
    if (me == 1) {
      fill_pattern(a, PAT(1, 1));
      MPI_OK(MPI_Isend_c(a, N, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
      mark(b);
      MPI_OK(MPI_Irecv_c(b, N, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, &st));
      check_got(b, &st, 1, 8, PAT(1, 1), "round 1, Isend_c/Irecv_c");
    }

    /* Round 2: 0 -> 1, MPI_Probe reports the whole size, then Recv_c. */
    if (me == 0) {
      fill_pattern(a, PAT(2, 0));
      MPI_OK(MPI_Send_c(a, N, MPI_BYTE, 1, 9, MPI_COMM_WORLD));
    } else {
      mark(b);
      MPI_OK(MPI_Probe(0, 9, MPI_COMM_WORLD, &st));
      check_status(&st, 0, 9, "round 2, MPI_Probe's status");
      MPI_OK(MPI_Recv_c(b, N, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st));
      check_got(b, &st, 0, 9, PAT(2, 0), "round 2, Recv_c after Probe");
    }

    /* Round 3: 1 -> 0, MPI_Mprobe + MPI_Mrecv_c. */
    if (me == 1) {
      fill_pattern(a, PAT(3, 1));
      MPI_OK(MPI_Send_c(a, N, MPI_BYTE, 0, 10, MPI_COMM_WORLD));
    } else {
      mark(b);
      MPI_OK(MPI_Mprobe(1, 10, MPI_COMM_WORLD, &msg, &st));
      check_status(&st, 1, 10, "round 3, MPI_Mprobe's status");
      MPI_OK(MPI_Mrecv_c(b, N, MPI_BYTE, &msg, &st));
      CHECK(msg == MPI_MESSAGE_NULL, "round 3: MPI_Mrecv_c left the message handle set");
      check_got(b, &st, 1, 10, PAT(3, 1), "round 3, Mrecv_c");
    }

    /* Round 4: 0 -> 1, MPI_Improbe until found + MPI_Imrecv_c + Wait. */
    if (me == 0) {
      fill_pattern(a, PAT(4, 0));
      MPI_OK(MPI_Isend_c(a, N, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &r));
      MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
      mark(b);
      int flag = 0;
      while (!flag) MPI_OK(MPI_Improbe(0, 11, MPI_COMM_WORLD, &flag, &msg, &st));
      check_status(&st, 0, 11, "round 4, MPI_Improbe's status");
      MPI_OK(MPI_Imrecv_c(b, N, MPI_BYTE, &msg, &r));
      CHECK(msg == MPI_MESSAGE_NULL, "round 4: MPI_Imrecv_c left the message handle set");
      MPI_OK(MPI_Wait(&r, &st));
      check_got(b, &st, 0, 11, PAT(4, 0), "round 4, Imrecv_c");
    }

    /* Round 5: both ways at once, MPI_Sendrecv_c. */
    fill_pattern(a, PAT(5, me));
    mark(b);
    MPI_OK(MPI_Sendrecv_c(a, N, MPI_BYTE, other, 12, b, N, MPI_BYTE, other, 12,
                          MPI_COMM_WORLD, &st));
    check_got(b, &st, other, 12, PAT(5, other), "round 5, Sendrecv_c");
    check_kept(a, PAT(5, me), "round 5, Sendrecv_c");

    /* Round 6: both ways at once, MPI_Sendrecv_replace_c. */
    fill_pattern(b, PAT(6, me));
    MPI_OK(MPI_Sendrecv_replace_c(b, N, MPI_BYTE, other, 13, other, 13, MPI_COMM_WORLD, &st));
    check_got(b, &st, other, 13, PAT(6, other), "round 6, Sendrecv_replace_c");

    /* Round 7: both ways at once, MPI_Isendrecv_c + Wait. */
    fill_pattern(a, PAT(7, me));
    mark(b);
    MPI_OK(MPI_Isendrecv_c(a, N, MPI_BYTE, other, 14, b, N, MPI_BYTE, other, 14,
                           MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Wait(&r, &st));
    check_isendrecv(b, &st, other, 14, PAT(7, other), "round 7, Isendrecv_c");
    check_kept(a, PAT(7, me), "round 7, Isendrecv_c");

    /* Round 8: both ways at once, MPI_Isendrecv_replace_c + Wait. */
    fill_pattern(b, PAT(8, me));
    MPI_OK(MPI_Isendrecv_replace_c(b, N, MPI_BYTE, other, 15, other, 15, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Wait(&r, &st));
    check_isendrecv(b, &st, other, 15, PAT(8, other), "round 8, Isendrecv_replace_c");
#undef PAT
    free(a);
    free(b);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0)
    printf("bigc: PASS np=%d checks=%ld isendrecv_status=%s\n", np, n_checks,
           isendrecv_status ? "checked" : "not checked");
  MPI_Finalize();
  return 0;
}
