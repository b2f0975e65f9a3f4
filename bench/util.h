/* What the benchmarks in bench/ share: a monotonic clock in microseconds
 * and in nanoseconds, a busy wait, and the comparison that sorts samples
 * for medians and percentiles. */
#ifndef LOGGP_BENCH_UTIL_H
#define LOGGP_BENCH_UTIL_H
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
#endif
