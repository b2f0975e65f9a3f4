/* coll_errors.c: an error inside a collective is the application's, and is
 * raised on the application's communicator. The shim runs
 * collectives on a private duplicate; an error raised there used to reach
 * the duplicate's error handler (inherited from the application's), so
 * the application's handler saw a communicator it never made ("MPI
 * COMMUNICATOR 8 DUP FROM 4" in Open MPI's fatal message).
 *
 * The error is a truncation at the root of a Gather: every rank sends 2K
 * ints, the root receives K from each (erroneous, and reported by both
 * MPIs as MPI_ERR_TRUNCATE at the root only; the other ranks complete).
 *
 *   coll_errors handler   on a duplicate of MPI_COMM_WORLD named
 *                         "app-comm" with an error handler that records
 *                         the communicator's name and the error class and
 *                         returns: MPI_Gather, then MPI_Igather + MPI_Wait,
 *                         roots 0 and np-1. At the root the call returns an
 *                         error of class MPI_ERR_TRUNCATE and the handler
 *                         ran once, on "app-comm"; elsewhere the call
 *                         succeeds and the handler did not run. Rank 0
 *                         prints "coll errors: ok np=N".
 *   coll_errors fatal     the same Gather on MPI_COMM_WORLD, whose handler
 *                         is MPI_ERRORS_ARE_FATAL: the job aborts, with the
 *                         library's message naming the communicator (the
 *                         test reads it). Prints "coll errors: not
 *                         stopped" if the root returns.
 *
 * Any np >= 2. On failure "FAIL coll_errors rank R: ..." and MPI_Abort. */
#include "common.h"

enum { K = 4 };

static int calls, got_class;
static char got_name[MPI_MAX_OBJECT_NAME + 1];

static void record(MPI_Comm *comm, int *code, ...) {
  int len = 0;
  calls++;
  MPI_Error_class(*code, &got_class);
  got_name[0] = 0;
  MPI_Comm_get_name(*comm, got_name, &len);
}

static int class_of(int rc) {
  int c = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
  return c;
}

/* Static, and larger than any message: with these on the stack, a native
 * Open MPI 4.1 run once died of "stack smashing detected" in the Barrier
 * after a truncated Gather (the tail of a truncated message written after
 * the call returned, it seems). Not seen since they are static. */
static int sb[2 * K], rb[64 * K * 16];

/* Gather of 2K ints per rank into K per rank at `root`. */
static int gather(MPI_Comm comm, int root, int nonblocking) {
  for (int i = 0; i < 2 * K; i++) sb[i] = my_rank * 100 + i;
  if (!nonblocking) return MPI_Gather(sb, 2 * K, MPI_INT, rb, K, MPI_INT, root, comm);
  MPI_Request r;
  int rc = MPI_Igather(sb, 2 * K, MPI_INT, rb, K, MPI_INT, root, comm, &r);
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Wait(&r, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
  int np;
  init_common("coll_errors", &argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(np >= 2 && np <= 16, "2 to 16 ranks");
  if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
    gather(MPI_COMM_WORLD, 0, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (my_rank == 0) printf("coll errors: not stopped\n");
    MPI_Finalize();
    return 0;
  }
  MPI_Comm app;
  MPI_Errhandler eh;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &app));
  MPI_OK(MPI_Comm_set_name(app, "app-comm"));
  MPI_OK(MPI_Comm_create_errhandler(record, &eh));
  MPI_OK(MPI_Comm_set_errhandler(app, eh));
  /* A first, correct collective: the shim makes its duplicate here. */
  MPI_OK(MPI_Barrier(app));
  for (int nb = 0; nb < 2; nb++) {
    for (int root = 0; root < np; root += np - 1) {
      calls = 0;
      got_class = MPI_SUCCESS;
      const char *what = nb ? "MPI_Igather" : "MPI_Gather";
      int c = class_of(gather(app, root, nb));
      if (my_rank == root) {
        CHECK(c == MPI_ERR_TRUNCATE, "%s root %d: error class %d, expected MPI_ERR_TRUNCATE (%d)",
              what, root, c, MPI_ERR_TRUNCATE);
        CHECK(calls == 1, "%s root %d: the error handler ran %d times, expected once", what,
              root, calls);
        CHECK(strcmp(got_name, "app-comm") == 0,
              "%s root %d: the error handler was called on \"%s\", expected \"app-comm\"", what,
              root, got_name);
        CHECK(got_class == MPI_ERR_TRUNCATE, "%s root %d: the handler got class %d", what,
              root, got_class);
      } else {
        CHECK(c == MPI_SUCCESS, "%s root %d: a non-root got error class %d", what, root, c);
        CHECK(calls == 0, "%s root %d: the error handler ran at a non-root (on \"%s\")", what,
              root, got_name);
      }
      /* Messages of the failed collective must not leak into the next. */
      MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
  }
  MPI_OK(MPI_Comm_free(&app));
  MPI_OK(MPI_Errhandler_free(&eh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) printf("coll errors: ok np=%d\n", np);
  MPI_Finalize();
  return 0;
}
