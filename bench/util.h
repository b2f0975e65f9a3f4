/* What the benchmarks in bench/ share: a monotonic clock in microseconds
 * and in nanoseconds, a busy wait, the comparison that sorts samples for
 * medians and percentiles, the choice of a mode by name, and the start of
 * a timed loop after its warm-up. */
#ifndef LOGGP_BENCH_UTIL_H
#define LOGGP_BENCH_UTIL_H
#include <mpi.h>
#include <string.h>
#include <time.h>

static inline double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* The same clock in nanoseconds. */
static inline double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Busy for `ns` nanoseconds, as a computing rank would be. */
static inline void spin_ns(double ns) {
  double end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

static inline int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The index of argv[1] among the `n` names of `modes`; -1 for none. */
static inline int pick_mode(int argc, char **argv, const char *const *modes, int n) {
  for (int i = 0; argc >= 2 && i < n; i++)
    if (strcmp(argv[1], modes[i]) == 0) return i;
  return -1;
}

/* At iteration 0 of a loop whose negative iterations warm up: all ranks
 * meet, and the clock starts (`*t0`, us). */
static inline void start_at_zero(int i, double *t0) {
  if (i == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    *t0 = now_us();
  }
}
#endif
