/* fpenv.c: MPI calls leave the calling thread's floating-point environment
 * as they found it: no exception flag raised, the rounding mode
 * and the enabled traps unchanged. A shim that computes NaN or ∞ − ∞, or
 * converts such a value to an integer (x86 cvttsd2si), raises FE_INVALID
 * in the application's thread: gfortran then reports "IEEE_INVALID_FLAG"
 * at STOP, and a program built with -ffpe-trap=invalid dies of SIGFPE.
 *
 * Any np. Every rank clears the flags and sets the rounding mode to
 * FE_TOWARDZERO before MPI_Init; with the argument "trap" it also enables
 * traps on FE_INVALID, FE_DIVBYZERO and FE_OVERFLOW (what
 * -ffpe-trap=invalid,zero,overflow does), so that a raising call dies of
 * SIGFPE where it raises. After each phase (MPI_Init; point-to-point;
 * blocking collectives; nonblocking ones; communicator management;
 * MPI_Finalize) it checks that none of FE_INVALID, FE_DIVBYZERO,
 * FE_OVERFLOW, FE_UNDERFLOW is raised and that the rounding mode and traps
 * are as set. The data reduced are small integers held in doubles: exact,
 * so the application's own arithmetic raises nothing.
 *
 * Prints "fpenv: ok np=N mode=flags|trap" on rank 0, or
 * "FAIL fpenv rank R: ...: after <phase>: raised FE_INVALID ..." and exits
 * non-zero (after MPI_Finalize the program cannot MPI_Abort, so it exits 1). */
#define _GNU_SOURCE
#include <fenv.h>

#include "common.h"

static const int watched = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW;
static const int traps = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW;
static int trap_mode = 0;

/* Describes what differs from the environment set before MPI_Init, or
 * returns 0 when nothing does. */
static int fp_differs(char *buf, size_t len) {
  int raised = fetestexcept(watched);
  int round = fegetround();
  int enabled = fegetexcept();
  int want_traps = trap_mode ? traps : 0;
  if (!raised && round == FE_TOWARDZERO && enabled == want_traps) return 0;
  snprintf(buf, len, "raised%s%s%s%s%s; rounding %s; traps 0x%x (expected 0x%x)",
           raised ? "" : " nothing", raised & FE_INVALID ? " FE_INVALID" : "",
           raised & FE_DIVBYZERO ? " FE_DIVBYZERO" : "",
           raised & FE_OVERFLOW ? " FE_OVERFLOW" : "",
           raised & FE_UNDERFLOW ? " FE_UNDERFLOW" : "",
           round == FE_TOWARDZERO ? "unchanged" : "CHANGED", enabled, want_traps);
  return 1;
}

#define FP_SAME(phase)                                                        \
  do {                                                                        \
    char why_[200];                                                           \
    int bad_ = fp_differs(why_, sizeof why_);                                 \
    CHECK(!bad_, "after %s: %s", phase, why_);                                \
  } while (0)

int main(int argc, char **argv) {
  trap_mode = argc > 1 && strcmp(argv[1], "trap") == 0;
  feclearexcept(FE_ALL_EXCEPT);
  fesetround(FE_TOWARDZERO);
  if (trap_mode) feenableexcept(traps);
  prog_name = "fpenv";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  FP_SAME("MPI_Init");

  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int right = (my_rank + 1) % np, left = (my_rank + np - 1) % np;
  enum { N = 64 };
  double a[N], b[N], all[N * 8];
  for (int i = 0; i < N; i++) a[i] = my_rank * 100 + i;

  /* Point-to-point: blocking, nonblocking, probe. */
  MPI_OK(MPI_Sendrecv(a, N, MPI_DOUBLE, right, 1, b, N, MPI_DOUBLE, left, 1,
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(b[3] == left * 100 + 3, "sendrecv got %g", b[3]);
  MPI_Request rq[2];
  MPI_OK(MPI_Irecv(b, N, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rq[0]));
  MPI_OK(MPI_Isend(a, N, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]));
  MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
  MPI_Status st;
  MPI_OK(MPI_Send(a, 1, MPI_DOUBLE, right, 3, MPI_COMM_WORLD));
  MPI_OK(MPI_Probe(left, 3, MPI_COMM_WORLD, &st));
  MPI_OK(MPI_Recv(b, 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &st));
  double t = MPI_Wtime();
  (void)t;
  FP_SAME("point-to-point");

  /* Blocking collectives. */
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  MPI_OK(MPI_Bcast(a, N, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  CHECK(a[5] == 5, "bcast got %g", a[5]);
  for (int i = 0; i < N; i++) a[i] = my_rank + i;
  MPI_OK(MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  CHECK(b[1] == np * (np - 1) / 2 + np, "allreduce got %g", b[1]);
  MPI_OK(MPI_Reduce(a, b, N, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  MPI_OK(MPI_Scan(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  if (np <= 8) {
    MPI_OK(MPI_Allgather(a, N / 8, MPI_DOUBLE, all, N / 8, MPI_DOUBLE, MPI_COMM_WORLD));
    MPI_OK(MPI_Gather(a, N / 8, MPI_DOUBLE, all, N / 8, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    MPI_OK(MPI_Alltoall(all, 1, MPI_DOUBLE, b, 1, MPI_DOUBLE, MPI_COMM_WORLD));
  }
  FP_SAME("blocking collectives");

  /* Nonblocking collectives, completed by Wait and by Test. */
  MPI_OK(MPI_Iallreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq[0]));
  MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &rq[1]));
  MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  int done = 0;
  while (!done) MPI_OK(MPI_Test(&rq[1], &done, MPI_STATUS_IGNORE));
  CHECK(b[1] == np * (np - 1) / 2 + np, "iallreduce got %g", b[1]);
  FP_SAME("nonblocking collectives");

  /* A communicator of its own: its first collective makes the shim's
   * private duplicate, its free frees it. */
  MPI_Comm half;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, my_rank % 2, my_rank, &half));
  MPI_OK(MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_DOUBLE, MPI_MIN, half));
  MPI_OK(MPI_Comm_free(&half));
  FP_SAME("communicator management");

  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  char why[200];
  if (fp_differs(why, sizeof why)) {
    fprintf(stderr, "FAIL fpenv rank %d: after MPI_Finalize: %s\n", my_rank, why);
    return 1;
  }
  if (my_rank == 0) printf("fpenv: ok np=%d mode=%s\n", np, trap_mode ? "trap" : "flags");
  return 0;
}
