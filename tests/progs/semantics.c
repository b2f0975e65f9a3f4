/* semantics.c: MPI point-to-point semantics are unchanged under the shim.
 *
 * Run with np >= 2 (ranks >= 2 take part in the ring and MPI_PROC_NULL
 * sections only). Expects, under any knobs:
 *   1. truncation: with MPI_ERRORS_RETURN, a receive smaller than the message
 *      returns an error of class MPI_ERR_TRUNCATE (Recv, Irecv+Wait, below
 *      and above the shim's staging threshold and at 1 MiB), and the next
 *      message is received normally;
 *   2. every completion form (Wait, Test, Waitany, Testany, Waitsome,
 *      Testsome, Waitall, Testall) completes every request once, with the
 *      right status for each index, on the sending and the receiving side,
 *      and Waitany/Testany report MPI_UNDEFINED when nothing is active;
 *   3. a cancelled Irecv, and a cancelled started persistent receive,
 *      report MPI_Test_cancelled true; an Isend whose request was freed
 *      with MPI_Request_free still delivers its data;
 *   4. MPI_PROC_NULL: sends and receives complete at once, the status says
 *      MPI_PROC_NULL / MPI_ANY_TAG / count 0; Test and Wait on
 *      MPI_REQUEST_NULL complete at once with an empty status;
 *   5. MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are accepted everywhere;
 *   6. Sendrecv and Sendrecv_replace around a ring deliver the right data
 *      (and a Sendrecv of two small messages, and of two of 3000 bytes, from
 *      any source, its status);
 *      a Sendrecv into too small a receive returns MPI_ERR_TRUNCATE (1.),
 *      one from a source that is no rank MPI_ERR_RANK, sending nothing,
 *      and one to a destination that is no rank MPI_ERR_RANK, leaving no
 *      receive posted; so does one whose send count is negative
 *      (MPI_ERR_COUNT) or whose send datatype is MPI_DATATYPE_NULL
 *      (MPI_ERR_TYPE), and a Send, Isend or Irecv MPI refuses so leaves
 *      nothing sent or posted; so does an uncommitted derived datatype
 *      on either side (MPI_ERR_TYPE), and in a Bcast or Allreduce;
 *   7. every send mode (Send, Ssend, Bsend, Rsend, Isend, Issend, Ibsend,
 *      Irsend, Bsend_init, Rsend_init) delivers, at 8 bytes and 70000 bytes;
 *      an Ssend (1 byte) and an Issend (20000 bytes) do not complete
 *      before the matching receive is posted (3 ms late, compared on the
 *      shared CLOCK_MONOTONIC of one host);
 *   8. several nonblocking receives of probed messages (which the shim has
 *      already taken off the network) in flight at once, completed by
 *      Waitall, Waitany and Wait in reverse order, each get their own data
 *      and status;
 *   9. tiny messages (up to 16 bytes: the shim sends them behind a
 *      16-byte header, which fits in the room any receive keeps for its
 *      32-byte one, so it must place them and raise their truncation
 *      itself): 16 bytes into 8 and 12 into 4 (Recv; Irecv + Waitall,
 *      MPI_ERR_IN_STATUS) are truncations that write nothing past the
 *      receive; 8 bytes into receives of 1 MiB and of 20000 bytes, 12 and
 *      16 bytes into a vector type (a partial element: only its first
 *      three ints land; one whole element), through a persistent receive, after MPI_Probe,
 *      MPI_Mprobe + MPI_Mrecv, and MPI_Request_get_status; and receives
 *      of any tag take 8-, 100- and 8-byte messages in send order when the
 *      last was probed first; and tiny messages the shim stages instead
 *      (MPI_Bsend, MPI_Ibsend, sends from a vector type) or sends as
 *      persistent requests (MPI_Send_init, MPI_Ssend_init): whole,
 *      truncated, and three ints into a vector of four.
 * Rank 0 prints "semantics: PASS np=N checks=C"; on failure a line
 * "FAIL semantics rank R: ..." and a non-zero exit. */
#include "common.h"

static void check_st(MPI_Status *st, int src, int tag, int count, const char *what) {
  int c = -7;
  MPI_Get_count(st, MPI_BYTE, &c);
  CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && c == count,
        "%s: status (source %d, tag %d, count %d), expected (%d, %d, %d)", what,
        st->MPI_SOURCE, st->MPI_TAG, c, src, tag, count);
}

/* After a call of n bytes MPI refused (`what`, which returned rc and left
 * rq): its error class is `want`, it returned no request, and a Sendrecv
 * of n bytes with peer on tag (from b into got) brings the peer's data:
 * the refused call sent nothing and left nothing posted. */
static void refused(const char *what, int n, int rc, int want, MPI_Request rq, unsigned char *b,
                    unsigned char *got, int peer, int tag) {
  int cls = -1;
  MPI_Status st;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  CHECK(cls == want, "%s (%d bytes): return %d (class %d), expected class %d", what, n, rc, cls,
        want);
  CHECK(rq == MPI_REQUEST_NULL, "%s: a request was returned", what);
  fill(b, (size_t)n, my_rank, tag);
  MPI_OK(MPI_Sendrecv(b, n, MPI_BYTE, peer, tag, got, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
  check_st(&st, peer, tag, n, "Sendrecv after a call MPI refused");
  CHECK(verify(got, (size_t)n, peer, tag) < 0, "Sendrecv of %d bytes after a %s: data differs", n,
        what);
}

/* 1. Truncation. */
static void truncation(void) {
  /* 12000 and 9000: a message up to the shim's staging threshold into a
   * smaller receive that lands staged or straight in the buffer by
   * LOGGP_DIRECT_MIN; 12000 and 8000 into receives of the shim's slots;
   * 12000 and 3000 (sent from a mid slot) into its mid slots; 8 (behind
   * the tiny header at zero knobs) into 4 and 0; 16384 (sent from
   * LOGGP_DIRECT_MIN as a struct on both MPIs) into a mid slot and a
   * staging buffer.
   * (Open MPI 4.1 and 5.0 move a contiguous message above their eager
   * limit by a single-copy get that writes all of it past a smaller
   * receive buffer; under the shim that buffer was its own.) */
  static const int sent[] = {100,  20000, 1 << 20, 12000, 9000, 12000, 8000,
                             12000, 3000, 8,       8,     16384, 16384};
  static const int room[] = {50, 10000, 4096, 6000, 5000, 100, 64, 3000, 1000, 4, 0, 8000, 16000};
  unsigned char *b = malloc(1 << 20);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int k = 0; k < 13; k++) {
    if (my_rank == 0) {
      fill(b, (size_t)sent[k], 0, 60 + k);
      MPI_OK(MPI_Send(b, sent[k], MPI_BYTE, 1, 60 + k, MPI_COMM_WORLD));
      fill(b, 64, 0, 90 + k);
      MPI_OK(MPI_Send(b, 64, MPI_BYTE, 1, 90 + k, MPI_COMM_WORLD));
    } else if (my_rank == 1) {
      MPI_Status st;
      int rc, cls = -1;
      if (k % 2 == 0) {
        rc = MPI_Recv(b, room[k], MPI_BYTE, 0, 60 + k, MPI_COMM_WORLD, &st);
      } else {
        MPI_Request r;
        MPI_OK(MPI_Irecv(b, room[k], MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
        rc = MPI_Wait(&r, &st);
        CHECK(st.MPI_TAG == 60 + k && st.MPI_SOURCE == 0,
              "truncated Wait: status (source %d, tag %d)", st.MPI_SOURCE, st.MPI_TAG);
      }
      if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
      CHECK(cls == MPI_ERR_TRUNCATE,
            "%d bytes into %d: return %d (class %d), expected class MPI_ERR_TRUNCATE (%d)",
            sent[k], room[k], rc, cls, MPI_ERR_TRUNCATE);
      /* The next message is unaffected. */
      MPI_OK(MPI_Recv(b, 64, MPI_BYTE, 0, 90 + k, MPI_COMM_WORLD, &st));
      check_st(&st, 0, 90 + k, 64, "after truncation");
      CHECK(verify(b, 64, 0, 90 + k) < 0, "after truncation: data differs");
    }
  }
  /* A Sendrecv whose receive is too small, both halves small (the
   * shim's light Sendrecv): rank 1's returns MPI_ERR_TRUNCATE, rank 0's
   * succeeds, and the next exchange is unaffected. */
  if (my_rank < 2) {
    int peer = 1 - my_rank, out_n = my_rank == 0 ? 100 : 40, cls = -1;
    unsigned char in[100];
    MPI_Status st;
    fill(b, (size_t)out_n, my_rank, 80);
    int rc = MPI_Sendrecv(b, out_n, MPI_BYTE, peer, 80, in, my_rank == 1 ? 50 : 40, MPI_BYTE,
                          peer, 80, MPI_COMM_WORLD, &st);
    if (my_rank == 1) {
      if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
      CHECK(cls == MPI_ERR_TRUNCATE,
            "Sendrecv of 100 bytes into 50: return %d (class %d), expected class MPI_ERR_TRUNCATE",
            rc, cls);
    } else {
      CHECK(rc == MPI_SUCCESS, "Sendrecv beside a truncated one: return %d", rc);
      check_st(&st, 1, 80, 40, "Sendrecv beside a truncated one");
      CHECK(verify(in, 40, 1, 80) < 0, "Sendrecv beside a truncated one: data differs");
    }
    fill(b, 64, my_rank, 81);
    MPI_OK(MPI_Sendrecv(b, 64, MPI_BYTE, peer, 81, in, 64, MPI_BYTE, peer, 81, MPI_COMM_WORLD,
                        &st));
    check_st(&st, peer, 81, 64, "Sendrecv after truncation");
    CHECK(verify(in, 64, peer, 81) < 0, "Sendrecv after truncation: data differs");
    /* A small Sendrecv from a source that is no rank returns MPI_ERR_RANK
     * and sends nothing (on MPICH the shim makes it one native Sendrecv,
     * whose slots it must not reuse), and the next exchange is
     * unaffected. */
    int size, flag = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = MPI_Sendrecv(b, 8, MPI_BYTE, peer, 82, in, 8, MPI_BYTE, size, 82, MPI_COMM_WORLD, &st);
    cls = -1;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "Sendrecv from source %d: return %d (class %d), expected class MPI_ERR_RANK",
          size, rc, cls);
    fill(b, 8, my_rank, 83);
    MPI_OK(MPI_Sendrecv(b, 8, MPI_BYTE, peer, 83, in, 8, MPI_BYTE, peer, 83, MPI_COMM_WORLD, &st));
    check_st(&st, peer, 83, 8, "Sendrecv after a failed one");
    CHECK(verify(in, 8, peer, 83) < 0, "Sendrecv after a failed one: data differs");
    MPI_OK(MPI_Iprobe(peer, 82, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0, "a Sendrecv that failed (source %d) sent its message", size);
    /* One to a destination that is no rank returns MPI_ERR_RANK and
     * leaves no receive posted: the peer's next message on the tag it
     * named goes to the next receive (small: the shim's light Sendrecv;
     * 20000 bytes: its general path). */
    for (int k = 0; k < 2; k++) {
      int n = k == 0 ? 8 : 20000, tag = 84 + 2 * k;
      unsigned char *got = b + 500000;
      rc = MPI_Sendrecv(b, n, MPI_BYTE, size, tag + 1, got, n, MPI_BYTE, peer, tag,
                        MPI_COMM_WORLD, &st);
      cls = -1;
      if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
      CHECK(cls == MPI_ERR_RANK,
            "Sendrecv of %d bytes to destination %d: return %d (class %d), expected class MPI_ERR_RANK",
            n, size, rc, cls);
      fill(b, (size_t)n, my_rank, tag);
      MPI_OK(MPI_Sendrecv(b, n, MPI_BYTE, peer, tag, got, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                          &st));
      check_st(&st, peer, tag, n, "Sendrecv after one to no rank");
      CHECK(verify(got, (size_t)n, peer, tag) < 0, "Sendrecv of %d bytes after one to no rank: data differs", n);
    }
    /* So does one whose send half MPI refuses for its count or datatype
     * (the shim posts the receive first where it cannot tell, and must
     * withdraw it); and a Send, Isend or Irecv MPI refuses must send or
     * post nothing that a later call on its tag would meet. */
    static const char *bad_call[] = {"Sendrecv with count -1", "Sendrecv with count -1",
                                     "Sendrecv with MPI_DATATYPE_NULL",
                                     "Sendrecv with MPI_DATATYPE_NULL", "Send with count -1",
                                     "Isend with MPI_DATATYPE_NULL", "Irecv with count -1"};
    for (int k = 0; k < 7; k++) {
      int n = k % 2 == 0 ? 8 : 20000, tag = 60 + k;
      int want = k == 2 || k == 3 || k == 5 ? MPI_ERR_TYPE : MPI_ERR_COUNT;
      unsigned char *got = b + 500000;
      MPI_Request rq = MPI_REQUEST_NULL;
      if (k < 4)
        rc = MPI_Sendrecv(b, k < 2 ? -1 : n, k < 2 ? MPI_BYTE : MPI_DATATYPE_NULL, peer, tag + 10,
                          got, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
      else if (k == 4)
        rc = MPI_Send(b, -1, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
      else if (k == 5)
        rc = MPI_Isend(b, n, MPI_DATATYPE_NULL, peer, tag, MPI_COMM_WORLD, &rq);
      else
        rc = MPI_Irecv(got, -1, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq);
      refused(bad_call[k], n, rc, want, rq, b, got, peer, tag);
    }
    /* So is an uncommitted derived datatype (MPI_ERR_TYPE), on either
     * side, at 8 and 20000 bytes. Under virtual time the shim once staged
     * such a send (Open MPI 4.1's MPI_Pack_size crashed on the type), and
     * took a message for such a receive, then failed to unpack it: the
     * message was lost and the next receive on its tag waited for ever. */
    static const char *unc_call[] = {"Sendrecv with an uncommitted send type",
                                     "Sendrecv with an uncommitted receive type",
                                     "Send with an uncommitted type",
                                     "Isend with an uncommitted type",
                                     "Irecv with an uncommitted type"};
    for (int k = 0; k < 10; k++) {
      int n = k % 2 == 0 ? 8 : 20000, tag = 610 + k, c = k / 2;
      unsigned char *got = b + 500000;
      MPI_Datatype v; /* n bytes: every other int of 2n */
      MPI_OK(MPI_Type_vector(n / 4, 1, 2, MPI_INT, &v));
      MPI_Request rq = MPI_REQUEST_NULL;
      if (c == 0)
        rc = MPI_Sendrecv(b, 1, v, peer, tag + 20, got, n, MPI_BYTE, peer, tag + 20,
                          MPI_COMM_WORLD, &st);
      else if (c == 1)
        rc = MPI_Sendrecv(b, n, MPI_BYTE, peer, tag + 20, got, 1, v, peer, tag + 20,
                          MPI_COMM_WORLD, &st);
      else if (c == 2)
        rc = MPI_Send(b, 1, v, peer, tag, MPI_COMM_WORLD);
      else if (c == 3)
        rc = MPI_Isend(b, 1, v, peer, tag, MPI_COMM_WORLD, &rq);
      else
        rc = MPI_Irecv(got, 1, v, peer, tag, MPI_COMM_WORLD, &rq);
      MPI_OK(MPI_Type_free(&v));
      refused(unc_call[c], n, rc, MPI_ERR_TYPE, rq, b, got, peer, tag);
    }
  }
  /* A persistent receive of 100 bytes gets 40000 (which the shim sends
   * split: its header alone, then the payload) and returns
   * MPI_ERR_TRUNCATE; another gets the next message whole. (Bytes past
   * the 100 are not checked: Open MPI writes them natively; nor is the
   * first request started again: Open MPI 4.1 frees it natively.) */
  if (my_rank == 0) {
    fill(b, 40000, 0, 82);
    MPI_OK(MPI_Send(b, 40000, MPI_BYTE, 1, 82, MPI_COMM_WORLD));
    fill(b, 64, 0, 83);
    MPI_OK(MPI_Send(b, 64, MPI_BYTE, 1, 82, MPI_COMM_WORLD));
  } else if (my_rank == 1) {
    MPI_Request pr;
    MPI_Status st;
    int cls = -1;
    MPI_OK(MPI_Recv_init(b, 100, MPI_BYTE, 0, 82, MPI_COMM_WORLD, &pr));
    MPI_OK(MPI_Start(&pr));
    int rc = MPI_Wait(&pr, &st);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "40000 bytes into a persistent 100: return %d (class %d)", rc,
          cls);
    /* Open MPI 4.1 natively has set the handle to MPI_REQUEST_NULL. */
    if (pr != MPI_REQUEST_NULL) MPI_OK(MPI_Request_free(&pr));
    MPI_OK(MPI_Recv_init(b, 100, MPI_BYTE, 0, 82, MPI_COMM_WORLD, &pr));
    MPI_OK(MPI_Start(&pr));
    MPI_OK(MPI_Wait(&pr, &st));
    check_st(&st, 0, 82, 64, "a persistent receive after its truncation");
    CHECK(verify(b, 64, 0, 83) < 0, "a persistent receive after its truncation: data differs");
    MPI_OK(MPI_Request_free(&pr));
  }
  /* A Bcast or Allreduce of an uncommitted datatype returns an error on
   * every rank, and the next Bcast is unaffected. (Under virtual time the
   * shim's Bcast once sent from the root, which MPI refused, while the
   * other ranks waited for ever.) */
  for (int k = 0; k < 4; k++) {
    int n = k % 2 == 0 ? 8 : 20000, tag = 640 + k, cls = -1, rc;
    MPI_Datatype v; /* n bytes: every other int of 2n */
    MPI_OK(MPI_Type_vector(n / 4, 1, 2, MPI_INT, &v));
    if (k < 2)
      rc = MPI_Bcast(b, 1, v, 0, MPI_COMM_WORLD);
    else
      rc = MPI_Allreduce(b, b + 500000, 1, v, MPI_SUM, MPI_COMM_WORLD);
    MPI_OK(MPI_Type_free(&v));
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    /* (MPICH 4.0 refuses the Allreduce for its op first: MPI_ERR_OP.) */
    CHECK(cls == MPI_ERR_TYPE || (k >= 2 && cls == MPI_ERR_OP),
          "%s of %d bytes, uncommitted type: return %d (class %d), expected %d",
          k < 2 ? "Bcast" : "Allreduce", n, rc, cls, MPI_ERR_TYPE);
    if (my_rank == 0) fill(b, (size_t)n, 0, tag);
    MPI_OK(MPI_Bcast(b, n, MPI_BYTE, 0, MPI_COMM_WORLD));
    CHECK(verify(b, (size_t)n, 0, tag) < 0, "Bcast of %d bytes after one MPI refused: data differs",
          n);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  free(b);
}

/* 2. Completion forms. Completes n requests with form f; st[i] receives the
 * status of request i (indices from Waitany etc. are checked to be unique). */
enum { F_WAIT, F_TEST, F_WAITANY, F_TESTANY, F_WAITSOME, F_TESTSOME, F_WAITALL, F_TESTALL, NFORMS };
static const char *form_name[] = {"Wait", "Test", "Waitany", "Testany",
                                  "Waitsome", "Testsome", "Waitall", "Testall"};

static void complete(int f, int n, MPI_Request *r, MPI_Status *st) {
  int done[16] = {0}, ndone = 0, idx, flag, out, ind[16];
  MPI_Status tmp[16];
  double give_up = now_us() + 30e6;
  switch (f) {
    case F_WAIT:
      for (int i = 0; i < n; i++) MPI_OK(MPI_Wait(&r[i], &st[i]));
      ndone = n;
      break;
    case F_TEST:
      for (int i = 0; i < n; i++) {
        flag = 0;
        while (!flag) {
          MPI_OK(MPI_Test(&r[i], &flag, &st[i]));
          CHECK(flag || now_us() < give_up, "Test never completed");
        }
      }
      ndone = n;
      break;
    case F_WAITANY:
    case F_TESTANY:
      while (ndone < n) {
        if (f == F_WAITANY) {
          MPI_OK(MPI_Waitany(n, r, &idx, tmp));
        } else {
          flag = 0;
          MPI_OK(MPI_Testany(n, r, &idx, &flag, tmp));
          CHECK(now_us() < give_up, "Testany never completed");
          if (!flag) continue;
        }
        CHECK(idx >= 0 && idx < n && !done[idx], "%s returned index %d twice or out of range",
              form_name[f], idx);
        CHECK(r[idx] == MPI_REQUEST_NULL, "%s did not reset request %d", form_name[f], idx);
        done[idx] = 1;
        st[idx] = tmp[0];
        ndone++;
      }
      if (f == F_WAITANY) {
        MPI_OK(MPI_Waitany(n, r, &idx, tmp));
      } else {
        MPI_OK(MPI_Testany(n, r, &idx, &flag, tmp));
        CHECK(flag, "Testany with no active request must set flag");
      }
      CHECK(idx == MPI_UNDEFINED, "%s with no active request returned index %d", form_name[f], idx);
      break;
    case F_WAITSOME:
    case F_TESTSOME:
      while (ndone < n) {
        if (f == F_WAITSOME) {
          MPI_OK(MPI_Waitsome(n, r, &out, ind, tmp));
        } else {
          MPI_OK(MPI_Testsome(n, r, &out, ind, tmp));
          CHECK(now_us() < give_up, "Testsome never completed");
        }
        CHECK(out >= 0 && out <= n - ndone, "%s outcount %d", form_name[f], out);
        for (int k = 0; k < out; k++) {
          CHECK(ind[k] >= 0 && ind[k] < n && !done[ind[k]], "%s returned index %d twice",
                form_name[f], ind[k]);
          done[ind[k]] = 1;
          st[ind[k]] = tmp[k];
          ndone++;
        }
      }
      if (f == F_WAITSOME) {
        MPI_OK(MPI_Waitsome(n, r, &out, ind, tmp));
      } else {
        MPI_OK(MPI_Testsome(n, r, &out, ind, tmp));
      }
      CHECK(out == MPI_UNDEFINED, "%s with no active request: outcount %d", form_name[f], out);
      break;
    case F_WAITALL:
      MPI_OK(MPI_Waitall(n, r, st));
      ndone = n;
      break;
    case F_TESTALL:
      flag = 0;
      while (!flag) {
        MPI_OK(MPI_Testall(n, r, &flag, st));
        CHECK(flag || now_us() < give_up, "Testall never completed");
      }
      ndone = n;
      break;
  }
  for (int i = 0; i < n; i++)
    CHECK(r[i] == MPI_REQUEST_NULL, "%s left request %d active", form_name[f], i);
}

/* `small`: receives of at most 64 bytes into 64-byte buffers, the shim's
 * light lane (each staged in a slot; at zero knobs Testall over them is MPI's
 * own, then each finished), before the larger ones of the general path. */
static void completion_forms_of(int small) {
  enum { N = 5 };
  unsigned char b[N][30000];
  MPI_Request r[N];
  MPI_Status st[N];
  for (int f = 0; f < NFORMS; f++) {
    int base = (small ? 500 : 100) + 10 * f;
    int cap = small ? 64 : 30000;
    if (my_rank == 1) {
      for (int i = 0; i < N; i++)
        MPI_OK(MPI_Irecv(b[i], cap, MPI_BYTE, 0, base + i, MPI_COMM_WORLD, &r[i]));
      MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, base + 9, MPI_COMM_WORLD));
      complete(f, N, r, st);
      for (int i = 0; i < N; i++) {
        int n = small ? 16 * i : i == 2 ? 25000 : 64 * i;
        check_st(&st[i], 0, base + i, n, form_name[f]);
        CHECK(verify(b[i], (size_t)n, 0, base + i) < 0, "%s: request %d data differs",
              form_name[f], i);
      }
    } else if (my_rank == 0) {
      MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, base + 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      for (int i = N - 1; i >= 0; i--) {
        int n = small ? 16 * i : i == 2 ? 25000 : 64 * i;
        fill(b[i], (size_t)n, 0, base + i);
        MPI_OK(MPI_Isend(b[i], n, MPI_BYTE, 1, base + i, MPI_COMM_WORLD, &r[i]));
      }
      complete(f, N, r, st);
    }
  }
}

static void completion_forms(void) {
  completion_forms_of(1);
  completion_forms_of(0);
}

/* 3. Cancel and Request_free. */
static void cancel_and_free(void) {
  MPI_Request r;
  MPI_Status st;
  int flag = 0;
  unsigned char b[5000];
  if (my_rank == 1) {
    MPI_OK(MPI_Irecv(b, 10, MPI_BYTE, 0, 999, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Cancel(&r));
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "a cancelled Irecv (specific source) is not reported cancelled");
    CHECK(r == MPI_REQUEST_NULL, "Wait on a cancelled request did not reset it");
    MPI_OK(MPI_Irecv(b, 10, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Cancel(&r));
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "a cancelled Irecv (wildcards) is not reported cancelled");
    /* A started persistent receive (staged by the shim), cancelled. */
    MPI_OK(MPI_Recv_init(b, 10, MPI_BYTE, 0, 998, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Start(&r));
    MPI_OK(MPI_Cancel(&r));
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "a cancelled persistent receive is not reported cancelled");
    CHECK(r != MPI_REQUEST_NULL, "Wait on a cancelled persistent request freed it");
    MPI_OK(MPI_Request_free(&r));
    /* Only now may rank 0 send: the wildcard receive above must not match. */
    MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 202, MPI_COMM_WORLD));
    /* The freed Isend of rank 0 arrives intact. */
    MPI_OK(MPI_Recv(b, 5000, MPI_BYTE, 0, 200, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 200, 5000, "after Request_free");
    CHECK(verify(b, 5000, 0, 200) < 0, "after Request_free: data differs");
    MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 201, MPI_COMM_WORLD));
  } else if (my_rank == 0) {
    fill(b, 5000, 0, 200);
    MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 202, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Isend(b, 5000, MPI_BYTE, 1, 200, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL, "Request_free did not reset the request");
    /* The buffer may be reused only once the receiver says so. */
    MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 201, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
}

/* 4. MPI_PROC_NULL, on every rank. */
static void proc_null(void) {
  MPI_Status st;
  MPI_Request r[2];
  MPI_Status sts[2];
  char b[8] = "abcdefg";
  int c = -7, flag = 0;
  MPI_OK(MPI_Send(b, 8, MPI_BYTE, MPI_PROC_NULL, 5, MPI_COMM_WORLD));
  MPI_OK(MPI_Recv(b, 8, MPI_BYTE, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
  MPI_Get_count(&st, MPI_BYTE, &c);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && c == 0,
        "Recv from MPI_PROC_NULL: status (%d, %d, %d)", st.MPI_SOURCE, st.MPI_TAG, c);
  CHECK(strcmp(b, "abcdefg") == 0, "Recv from MPI_PROC_NULL wrote the buffer");
  MPI_OK(MPI_Isend(b, 8, MPI_BYTE, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &r[0]));
  MPI_OK(MPI_Irecv(b, 8, MPI_BYTE, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &r[1]));
  /* MPICH 4.0.2 natively reports MPI_SOURCE 0 for a completed Irecv from
   * MPI_PROC_NULL, so that status is not checked (Open MPI says PROC_NULL). */
  MPI_OK(MPI_Waitall(2, r, sts));
  CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "PROC_NULL requests left active");
  /* Test and Wait on MPI_REQUEST_NULL: complete at once with an empty
   * status (MPI-4.0 section 3.7.3). */
  for (int w = 0; w < 2; w++) {
    memset(&st, 0x5A, sizeof st);
    flag = 0;
    if (w) {
      MPI_OK(MPI_Wait(&r[0], &st));
      flag = 1;
    } else {
      MPI_OK(MPI_Test(&r[0], &flag, &st));
    }
    c = -7;
    MPI_Get_count(&st, MPI_BYTE, &c);
    CHECK(flag && r[0] == MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_ANY_SOURCE &&
              st.MPI_TAG == MPI_ANY_TAG && c == 0,
          "%s on MPI_REQUEST_NULL: flag %d, status (%d, %d, %d)", w ? "Wait" : "Test", flag,
          st.MPI_SOURCE, st.MPI_TAG, c);
  }
  MPI_OK(MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Probe of MPI_PROC_NULL: source %d", st.MPI_SOURCE);
  MPI_OK(MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st));
  CHECK(flag, "Iprobe of MPI_PROC_NULL must set flag");
  MPI_OK(MPI_Sendrecv(b, 8, MPI_BYTE, MPI_PROC_NULL, 5, b, 8, MPI_BYTE, MPI_PROC_NULL, 5,
                      MPI_COMM_WORLD, &st));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Sendrecv with MPI_PROC_NULL: source %d", st.MPI_SOURCE);
  MPI_OK(MPI_Ssend(b, 8, MPI_BYTE, MPI_PROC_NULL, 5, MPI_COMM_WORLD));
  CHECK(strcmp(b, "abcdefg") == 0, "MPI_PROC_NULL operations wrote the buffer");
}

/* 5. Status-ignore forms, rank 0 to rank 1. */
static void status_ignore(void) {
  unsigned char b[4][3000];
  MPI_Request r[4];
  int flag = 0;
  if (my_rank == 0) {
    for (int i = 0; i < 4; i++) {
      fill(b[i], 3000, 0, 300 + i);
      MPI_OK(MPI_Send(b[i], 3000, MPI_BYTE, 1, 300 + i, MPI_COMM_WORLD));
    }
  } else if (my_rank == 1) {
    MPI_OK(MPI_Recv(b[0], 3000, MPI_BYTE, 0, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Irecv(b[1], 3000, MPI_BYTE, 0, 301, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    MPI_OK(MPI_Irecv(b[2], 3000, MPI_BYTE, 0, 302, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Irecv(b[3], 3000, MPI_BYTE, 0, 303, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++)
      CHECK(verify(b[i], 3000, 0, 300 + i) < 0, "status ignored, message %d differs", i);
    MPI_OK(MPI_Irecv(b[0], 3000, MPI_BYTE, 0, 304, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 305, MPI_COMM_WORLD));
    double give_up = now_us() + 30e6;
    while (!flag) {
      MPI_OK(MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE));
      CHECK(flag || now_us() < give_up, "Test with MPI_STATUS_IGNORE never completed");
    }
    CHECK(verify(b[0], 3000, 0, 304) < 0, "Test with MPI_STATUS_IGNORE: data differs");
  }
  if (my_rank == 0) {
    MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 305, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    fill(b[0], 3000, 0, 304);
    MPI_OK(MPI_Send(b[0], 3000, MPI_BYTE, 1, 304, MPI_COMM_WORLD));
  }
}

/* 6. Sendrecv and Sendrecv_replace around the ring of all ranks. */
static void ring(int np) {
  int right = (my_rank + 1) % np, left = (my_rank + np - 1) % np;
  static const int n_[] = {8, 70000};
  unsigned char *out = malloc(70000), *in = malloc(70000);
  MPI_Status st;
  for (int k = 0; k < 2; k++) {
    fill(out, (size_t)n_[k], my_rank, 400 + k);
    MPI_OK(MPI_Sendrecv(out, n_[k], MPI_BYTE, right, 400 + k, in, 70000, MPI_BYTE,
                        k ? MPI_ANY_SOURCE : left, 400 + k, MPI_COMM_WORLD, &st));
    check_st(&st, left, 400 + k, n_[k], "Sendrecv");
    CHECK(verify(in, (size_t)n_[k], left, 400 + k) < 0, "Sendrecv: data differs");
    fill(out, (size_t)n_[k], my_rank, 410 + k);
    MPI_OK(MPI_Sendrecv_replace(out, n_[k], MPI_BYTE, right, 410 + k, left, MPI_ANY_TAG,
                                MPI_COMM_WORLD, &st));
    check_st(&st, left, 410 + k, n_[k], "Sendrecv_replace");
    CHECK(verify(out, (size_t)n_[k], left, 410 + k) < 0, "Sendrecv_replace: data differs");
  }
  /* Both halves small (the shim's light Sendrecv), any source (not any tag:
   * a rank ahead may already send the next section's messages). */
  fill(out, 8, my_rank, 420);
  MPI_OK(MPI_Sendrecv(out, 8, MPI_BYTE, right, 420, in, 8, MPI_BYTE, MPI_ANY_SOURCE, 420, MPI_COMM_WORLD,
                      &st));
  check_st(&st, left, 420, 8, "Sendrecv of 8 bytes from any source");
  CHECK(verify(in, 8, left, 420) < 0, "Sendrecv of 8 bytes from any source: data differs");
  /* Both halves in the shim's mid slots (3000 bytes into room for 4000),
   * any source. */
  fill(out, 3000, my_rank, 422);
  memset(in, 0xEE, 4000);
  MPI_OK(MPI_Sendrecv(out, 3000, MPI_BYTE, right, 422, in, 4000, MPI_BYTE, MPI_ANY_SOURCE, 422,
                      MPI_COMM_WORLD, &st));
  check_st(&st, left, 422, 3000, "Sendrecv of 3000 bytes from any source");
  CHECK(verify(in, 3000, left, 422) < 0, "Sendrecv of 3000 bytes from any source: data differs");
  for (int i = 3000; i < 4000; i++)
    CHECK(in[i] == 0xEE, "Sendrecv of 3000 bytes into 4000 wrote byte %d", i);
  /* Empty messages (a Barrier's): status, count 0. */
  MPI_OK(MPI_Sendrecv(out, 0, MPI_BYTE, right, 421, in, 8, MPI_BYTE, MPI_ANY_SOURCE, 421,
                      MPI_COMM_WORLD, &st));
  check_st(&st, left, 421, 0, "Sendrecv of 0 bytes from any source");
  free(out);
  free(in);
}

/* 7. Send modes, rank 0 to rank 1. Tag 500 + 2 * mode + (size is large). */
enum { M_SEND, M_SSEND, M_BSEND, M_RSEND, M_ISEND, M_ISSEND, M_IBSEND, M_IRSEND, M_BSEND_INIT,
       M_RSEND_INIT, NMODES };

static void send_modes(void) {
  static const int n_[] = {8, 70000};
  enum { NMSG = 2 * NMODES };
  unsigned char *b = malloc((size_t)NMSG * 70000);
  MPI_Request r[NMSG];
  MPI_Status st[NMSG];
  if (my_rank == 1) {
    /* Pre-post everything so that the ready modes are legal. */
    for (int i = 0; i < NMSG; i++)
      MPI_OK(MPI_Irecv(b + (size_t)i * 70000, 70000, MPI_BYTE, 0, 500 + i, MPI_COMM_WORLD, &r[i]));
    MPI_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 599, MPI_COMM_WORLD));
    MPI_OK(MPI_Waitall(NMSG, r, st));
    for (int i = 0; i < NMSG; i++) {
      int n = n_[i % 2];
      check_st(&st[i], 0, 500 + i, n, "send modes");
      CHECK(verify(b + (size_t)i * 70000, (size_t)n, 0, 500 + i) < 0, "send mode %d (%s): data differs",
            i / 2, i % 2 ? "70000 B" : "8 B");
    }
  } else if (my_rank == 0) {
    int bsize = 4 * (70000 + MPI_BSEND_OVERHEAD) + 4096;
    void *att = malloc((size_t)bsize);
    MPI_OK(MPI_Buffer_attach(att, bsize));
    for (int i = 0; i < NMSG; i++) fill(b + (size_t)i * 70000, (size_t)n_[i % 2], 0, 500 + i);
    MPI_OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 599, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int nr = 0;
    for (int i = 0; i < NMSG; i++) {
      void *p = b + (size_t)i * 70000;
      int n = n_[i % 2], t = 500 + i;
      MPI_Comm w = MPI_COMM_WORLD;
      switch (i / 2) {
        case M_SEND: MPI_OK(MPI_Send(p, n, MPI_BYTE, 1, t, w)); break;
        case M_SSEND: MPI_OK(MPI_Ssend(p, n, MPI_BYTE, 1, t, w)); break;
        case M_BSEND: MPI_OK(MPI_Bsend(p, n, MPI_BYTE, 1, t, w)); break;
        case M_RSEND: MPI_OK(MPI_Rsend(p, n, MPI_BYTE, 1, t, w)); break;
        case M_ISEND: MPI_OK(MPI_Isend(p, n, MPI_BYTE, 1, t, w, &r[nr++])); break;
        case M_ISSEND: MPI_OK(MPI_Issend(p, n, MPI_BYTE, 1, t, w, &r[nr++])); break;
        case M_IBSEND: MPI_OK(MPI_Ibsend(p, n, MPI_BYTE, 1, t, w, &r[nr++])); break;
        case M_IRSEND: MPI_OK(MPI_Irsend(p, n, MPI_BYTE, 1, t, w, &r[nr++])); break;
        case M_BSEND_INIT:
        case M_RSEND_INIT: {
          MPI_Request pr;
          if (i / 2 == M_BSEND_INIT) {
            MPI_OK(MPI_Bsend_init(p, n, MPI_BYTE, 1, t, w, &pr));
          } else {
            MPI_OK(MPI_Rsend_init(p, n, MPI_BYTE, 1, t, w, &pr));
          }
          MPI_OK(MPI_Start(&pr));
          MPI_OK(MPI_Wait(&pr, MPI_STATUS_IGNORE));
          MPI_OK(MPI_Request_free(&pr));
          break;
        }
      }
    }
    MPI_OK(MPI_Waitall(nr, r, MPI_STATUSES_IGNORE));
    int sz;
    MPI_OK(MPI_Buffer_detach(&att, &sz));
    free(att);
  }
  /* Ssend completes only once the receive is posted (here 3 ms later):
   * a blocking Ssend of one byte, and an Issend + Wait of 20000 bytes
   * (above the shim's staging threshold: the shim sends its payload and
   * its header as two messages, and the request is the payload's).
   * Both ranks read the same CLOCK_MONOTONIC (one host), so rank 1 sends
   * the time it posted the receive and rank 0 compares: under
   * oversubscription the barrier does not line the ranks up. */
  enum { SBIG = 20000 };
  for (int big = 0; big < 2; big++) {
    int sn = big ? SBIG : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (my_rank == 0) {
      memset(b, 7, (size_t)sn);
      double posted = 0;
      if (big) {
        MPI_Request sr;
        MPI_OK(MPI_Issend(b, sn, MPI_BYTE, 1, 598, MPI_COMM_WORLD, &sr));
        MPI_OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
      } else {
        MPI_OK(MPI_Ssend(b, sn, MPI_BYTE, 1, 598, MPI_COMM_WORLD));
      }
      double done = now_us();
      MPI_OK(MPI_Recv(&posted, 1, MPI_DOUBLE, 1, 597, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(done >= posted, "%s of %d bytes completed %.0f us before the matching receive was posted",
            big ? "Issend" : "Ssend", sn, posted - done);
    } else if (my_rank == 1) {
      memset(b, 0, (size_t)sn);
      busy_until(now_us() + 3000);
      double posted = now_us();
      MPI_OK(MPI_Recv(b, sn, MPI_BYTE, 0, 598, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      int same = 1;
      for (int i = 0; i < sn; i++) same &= b[i] == 7;
      CHECK(same, "%s of %d bytes: data differs", big ? "Issend" : "Ssend", sn);
      MPI_OK(MPI_Send(&posted, 1, MPI_DOUBLE, 0, 597, MPI_COMM_WORLD));
    }
  }
  free(b);
}

/* 8. Rank 1 sends tags 1..3; rank 0 probes all three, then posts three
 * Irecvs at once. */
static void probed_in_flight(void) {
  for (int how = 0; how < 3; how++) {
    if (my_rank == 1) {
      for (int t = 1; t <= 3; t++) {
        int v = 100 * how + t;
        MPI_OK(MPI_Send(&v, 1, MPI_INT, 0, t, MPI_COMM_WORLD));
      }
    } else if (my_rank == 0) {
      MPI_Status st[3];
      for (int t = 1; t <= 3; t++) MPI_OK(MPI_Probe(1, t, MPI_COMM_WORLD, &st[0]));
      int v[3] = {-1, -1, -1};
      MPI_Request q[3];
      for (int t = 1; t <= 3; t++) MPI_OK(MPI_Irecv(&v[t - 1], 1, MPI_INT, 1, t, MPI_COMM_WORLD, &q[t - 1]));
      if (how == 0) {
        MPI_OK(MPI_Waitall(3, q, st));
      } else if (how == 1) {
        MPI_Status s1;
        for (int k = 0; k < 3; k++) {
          int idx;
          MPI_OK(MPI_Waitany(3, q, &idx, &s1));
          CHECK(idx >= 0 && idx < 3, "Waitany index %d", idx);
          st[idx] = s1;
        }
      } else {
        for (int k = 2; k >= 0; k--) MPI_OK(MPI_Wait(&q[k], &st[k]));
      }
      for (int t = 1; t <= 3; t++) {
        CHECK(v[t - 1] == 100 * how + t, "probed receive %d (form %d) got %d", t, how, v[t - 1]);
        check_st(&st[t - 1], 1, t, (int)sizeof(int), "probed receive in flight");
      }
    }
  }
}

/* 9. Tiny messages. */
/* Receives a message of tag `tag` from rank 0 into `room` of 64 bytes at
 * `b`: it must fail with MPI_ERR_TRUNCATE and write nothing past `room`. */
static void truncated_into(unsigned char *b, int room, int tag, const char *what) {
  MPI_Status st;
  int cls = -1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  memset(b, 0xEE, 64);
  int rc = MPI_Recv(b, room, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st);
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TRUNCATE, "%s: return %d (class %d)", what, rc, cls);
  for (int i = room; i < 64; i++) CHECK(b[i] == 0xEE, "%s wrote byte %d", what, i);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void tiny(void) {
  unsigned char *b = malloc(1 << 20);
  MPI_Status st;
  if (my_rank == 0) {
    unsigned char m[100];
    fill(m, 16, 0, 90);
    MPI_OK(MPI_Send(m, 16, MPI_BYTE, 1, 90, MPI_COMM_WORLD));
    fill(m, 12, 0, 91);
    MPI_OK(MPI_Send(m, 12, MPI_BYTE, 1, 91, MPI_COMM_WORLD));
    fill(m, 8, 0, 92);
    MPI_OK(MPI_Send(m, 8, MPI_BYTE, 1, 92, MPI_COMM_WORLD));
    for (int t = 93; t <= 99; t++) {
      fill(m, 8, 0, t);
      MPI_OK(MPI_Send(m, 8, MPI_BYTE, 1, t, MPI_COMM_WORLD));
    }
    fill(m, 12, 0, 100);
    MPI_OK(MPI_Send(m, 12, MPI_BYTE, 1, 100, MPI_COMM_WORLD));
    fill(m, 16, 0, 104);
    MPI_OK(MPI_Send(m, 16, MPI_BYTE, 1, 104, MPI_COMM_WORLD));
    int sizes[3] = {8, 100, 8};
    for (int k = 0; k < 3; k++) {
      fill(m, (size_t)sizes[k], 0, 101 + k);
      MPI_OK(MPI_Send(m, sizes[k], MPI_BYTE, 1, 101 + k, MPI_COMM_WORLD));
    }
    /* Tiny messages the shim stages rather than slots: buffered, and
     * from a non-contiguous type (packed). */
    int bsize = 4096;
    void *att = malloc((size_t)bsize);
    MPI_OK(MPI_Buffer_attach(att, bsize));
    fill(m, 8, 0, 105);
    MPI_OK(MPI_Bsend(m, 8, MPI_BYTE, 1, 105, MPI_COMM_WORLD));
    MPI_Request bq;
    fill(m, 16, 0, 106);
    MPI_OK(MPI_Ibsend(m, 16, MPI_BYTE, 1, 106, MPI_COMM_WORLD, &bq));
    MPI_OK(MPI_Wait(&bq, MPI_STATUS_IGNORE));
    MPI_Datatype vs;
    MPI_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vs));
    MPI_OK(MPI_Type_commit(&vs));
    int sv[8];
    for (int i = 0; i < 8; i++) sv[i] = 1000 + i;
    MPI_OK(MPI_Send(sv, 1, vs, 1, 107, MPI_COMM_WORLD));
    MPI_OK(MPI_Bsend(sv, 1, vs, 1, 108, MPI_COMM_WORLD));
    /* Persistent: 12 bytes started twice (whole, then into 4), and a
     * synchronous one from the vector type. */
    MPI_Request ps;
    MPI_OK(MPI_Send_init(m, 12, MPI_BYTE, 1, 109, MPI_COMM_WORLD, &ps));
    for (int k = 0; k < 2; k++) {
      fill(m, 12, 0, 109 + k);
      MPI_OK(MPI_Start(&ps));
      MPI_OK(MPI_Wait(&ps, MPI_STATUS_IGNORE));
    }
    MPI_OK(MPI_Request_free(&ps));
    MPI_OK(MPI_Ssend_init(sv, 1, vs, 1, 111, MPI_COMM_WORLD, &ps));
    MPI_OK(MPI_Start(&ps));
    MPI_OK(MPI_Wait(&ps, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&ps));
    MPI_OK(MPI_Type_free(&vs));
    void *back;
    int bsz;
    MPI_OK(MPI_Buffer_detach(&back, &bsz));
    free(att);
  } else if (my_rank == 1) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = -1;
    /* 16 into 8, blocking. */
    memset(b, 0xEE, 64);
    int rc = MPI_Recv(b, 8, MPI_BYTE, 0, 90, MPI_COMM_WORLD, &st);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "16 bytes into 8: return %d (class %d)", rc, cls);
    for (int i = 8; i < 64; i++) CHECK(b[i] == 0xEE, "16 bytes into 8 wrote byte %d", i);
    /* 12 into 4 beside a whole one, Irecv + Waitall. */
    MPI_Request q[2];
    memset(b, 0xEE, 64);
    MPI_OK(MPI_Irecv(b, 4, MPI_BYTE, 0, 91, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Irecv(b + 32, 8, MPI_BYTE, 0, 92, MPI_COMM_WORLD, &q[1]));
    MPI_Status sts[2];
    rc = MPI_Waitall(2, q, sts);
    cls = -1;
    if (sts[0].MPI_ERROR != MPI_SUCCESS) MPI_Error_class(sts[0].MPI_ERROR, &cls);
    CHECK(rc == MPI_ERR_IN_STATUS && cls == MPI_ERR_TRUNCATE,
          "12 bytes into 4 in a Waitall: return %d, status class %d", rc, cls);
    CHECK(sts[1].MPI_ERROR == MPI_SUCCESS || sts[1].MPI_ERROR == MPI_ERR_PENDING,
          "the whole one beside it: status error %d", sts[1].MPI_ERROR);
    if (sts[1].MPI_ERROR == MPI_ERR_PENDING) MPI_OK(MPI_Wait(&q[1], &sts[1]));
    for (int i = 4; i < 32; i++) CHECK(b[i] == 0xEE, "12 bytes into 4 wrote byte %d", i);
    CHECK(verify(b + 32, 8, 0, 92) < 0, "8 bytes beside a truncation: data differs");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* 8 bytes into 1 MiB and into 20000 bytes. */
    MPI_OK(MPI_Recv(b, 1 << 20, MPI_BYTE, 0, 93, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 93, 8, "8 bytes into 1 MiB");
    CHECK(verify(b, 8, 0, 93) < 0, "8 bytes into 1 MiB: data differs");
    MPI_OK(MPI_Irecv(b, 20000, MPI_BYTE, 0, 94, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Wait(&q[0], &st));
    check_st(&st, 0, 94, 8, "8 bytes into 20000");
    CHECK(verify(b, 8, 0, 94) < 0, "8 bytes into 20000: data differs");
    /* A persistent receive, twice. */
    MPI_Request pr;
    MPI_OK(MPI_Recv_init(b, 64, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &pr));
    for (int t = 95; t <= 96; t++) {
      MPI_OK(MPI_Start(&pr));
      MPI_OK(MPI_Wait(&pr, &st));
      check_st(&st, 0, t, 8, "8 bytes into a persistent receive");
      CHECK(verify(b, 8, 0, t) < 0, "persistent receive of tag %d: data differs", t);
    }
    MPI_OK(MPI_Request_free(&pr));
    /* After MPI_Probe; MPI_Mprobe + MPI_Mrecv. */
    MPI_OK(MPI_Probe(0, 97, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 97, 8, "probed 8 bytes");
    MPI_OK(MPI_Recv(b, 64, MPI_BYTE, 0, 97, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 97, 8, "8 bytes after a probe");
    CHECK(verify(b, 8, 0, 97) < 0, "8 bytes after a probe: data differs");
    MPI_Message msg;
    MPI_OK(MPI_Mprobe(0, 98, MPI_COMM_WORLD, &msg, &st));
    check_st(&st, 0, 98, 8, "Mprobe of 8 bytes");
    MPI_OK(MPI_Mrecv(b, 64, MPI_BYTE, &msg, &st));
    check_st(&st, 0, 98, 8, "Mrecv of 8 bytes");
    CHECK(verify(b, 8, 0, 98) < 0, "Mrecv of 8 bytes: data differs");
    /* MPI_Request_get_status, then MPI_Wait. */
    MPI_OK(MPI_Irecv(b, 64, MPI_BYTE, 0, 99, MPI_COMM_WORLD, &q[0]));
    int flag = 0;
    while (!flag) MPI_OK(MPI_Request_get_status(q[0], &flag, &st));
    check_st(&st, 0, 99, 8, "Request_get_status of 8 bytes");
    MPI_OK(MPI_Wait(&q[0], &st));
    check_st(&st, 0, 99, 8, "Wait after Request_get_status");
    CHECK(verify(b, 8, 0, 99) < 0, "8 bytes after Request_get_status: data differs");
    /* 12 bytes into two elements of a vector of 4 ints with stride 2: the
     * first three ints land at 0, 2 and 4; nothing else is written. */
    MPI_Datatype vec;
    MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    MPI_OK(MPI_Type_commit(&vec));
    int iv[16], want[16];
    for (int i = 0; i < 16; i++) iv[i] = want[i] = -5 - i;
    unsigned char src12[12];
    fill(src12, 12, 0, 100);
    memcpy(&want[0], src12, 4);
    memcpy(&want[2], src12 + 4, 4);
    memcpy(&want[4], src12 + 8, 4);
    MPI_OK(MPI_Irecv(iv, 2, vec, 0, 100, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Type_free(&vec));
    MPI_OK(MPI_Wait(&q[0], &st));
    int elems = -1;
    MPI_OK(MPI_Get_elements(&st, MPI_INT, &elems));
    CHECK(elems == 3, "12 bytes into a vector: %d ints, expected 3", elems);
    for (int i = 0; i < 16; i++)
      CHECK(iv[i] == want[i], "12 bytes into a vector: int %d is %d, expected %d", i, iv[i], want[i]);
    /* 16 bytes, one whole element: ints 0, 2, 4 and 6 (blocking). */
    MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    MPI_OK(MPI_Type_commit(&vec));
    unsigned char src16[16];
    fill(src16, 16, 0, 104);
    for (int i = 0; i < 16; i++) iv[i] = want[i] = -5 - i;
    for (int i = 0; i < 4; i++) memcpy(&want[2 * i], src16 + 4 * i, 4);
    MPI_OK(MPI_Recv(iv, 2, vec, 0, 104, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Type_free(&vec));
    MPI_OK(MPI_Get_elements(&st, MPI_INT, &elems));
    CHECK(elems == 4, "16 bytes into a vector: %d ints, expected 4", elems);
    for (int i = 0; i < 16; i++)
      CHECK(iv[i] == want[i], "16 bytes into a vector: int %d is %d, expected %d", i, iv[i], want[i]);
    /* Any tag, in send order, the last probed first. */
    MPI_OK(MPI_Probe(0, 103, MPI_COMM_WORLD, &st));
    int sizes[3] = {8, 100, 8};
    for (int k = 0; k < 3; k++) {
      MPI_OK(MPI_Recv(b, 100, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
      check_st(&st, 0, 101 + k, sizes[k], "any tag after a probe of the last");
      CHECK(verify(b, (size_t)sizes[k], 0, 101 + k) < 0, "any tag, message %d: data differs", k);
    }
    /* Buffered: 8 bytes whole; 16 into 8 a truncation. */
    MPI_OK(MPI_Recv(b, 64, MPI_BYTE, 0, 105, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 105, 8, "8 bytes buffered");
    CHECK(verify(b, 8, 0, 105) < 0, "8 bytes buffered: data differs");
    truncated_into(b, 8, 106, "16 bytes buffered into 8");
    /* From a vector of 3 ints (stride 2): 1000, 1002, 1004, contiguous
     * here; then buffered, into a vector of 4 (a partial element). */
    int got3[4] = {-1, -1, -1, -1};
    MPI_OK(MPI_Recv(got3, 4, MPI_INT, 0, 107, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 107, 12, "3 ints from a vector");
    for (int i = 0; i < 3; i++)
      CHECK(got3[i] == 1000 + 2 * i, "3 ints from a vector: int %d is %d", i, got3[i]);
    CHECK(got3[3] == -1, "3 ints from a vector wrote a fourth");
    MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    MPI_OK(MPI_Type_commit(&vec));
    for (int i = 0; i < 16; i++) iv[i] = -5 - i;
    MPI_OK(MPI_Recv(iv, 1, vec, 0, 108, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Type_free(&vec));
    MPI_OK(MPI_Get_elements(&st, MPI_INT, &elems));
    CHECK(elems == 3, "3 ints buffered into a vector: %d ints, expected 3", elems);
    for (int i = 0; i < 16; i++) {
      int w = (i % 2 == 0 && i < 6) ? 1000 + i : -5 - i;
      CHECK(iv[i] == w, "3 ints buffered into a vector: int %d is %d, expected %d", i, iv[i], w);
    }
    /* Persistent: 12 bytes whole, then 12 into 4; 3 ints from a vector. */
    MPI_OK(MPI_Recv(b, 64, MPI_BYTE, 0, 109, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 109, 12, "12 bytes persistent");
    CHECK(verify(b, 12, 0, 109) < 0, "12 bytes persistent: data differs");
    truncated_into(b, 4, 109, "12 bytes persistent into 4");
    for (int i = 0; i < 4; i++) got3[i] = -1;
    MPI_OK(MPI_Recv(got3, 4, MPI_INT, 0, 111, MPI_COMM_WORLD, &st));
    check_st(&st, 0, 111, 12, "3 ints persistent from a vector");
    for (int i = 0; i < 3; i++)
      CHECK(got3[i] == 1000 + 2 * i, "3 ints persistent from a vector: int %d is %d", i, got3[i]);
    CHECK(got3[3] == -1, "3 ints persistent from a vector wrote a fourth");
  }
  free(b);
}

int main(int argc, char **argv) {
  int np;
  init_common("semantics", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np >= 2, "needs at least 2 ranks, got %d", np);
  truncation();
  completion_forms();
  cancel_and_free();
  proc_null();
  status_ignore();
  ring(np);
  send_modes();
  probed_in_flight();
  tiny();
  long checks = 0;
  MPI_Reduce(&n_checks, &checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (my_rank == 0) {
    printf("semantics: PASS np=%d checks=%ld\n", np, checks);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
