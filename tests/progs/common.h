/* Helpers shared by the C test programs run under mpirun by cli/tests/mpi_*.rs.
 *
 * Every program checks its own results: on the first failure it prints one
 * line "FAIL <prog> rank R: file:line: what" to stderr and calls MPI_Abort,
 * so mpirun exits non-zero and nothing can hang on a half-finished exchange.
 * Timings use CLOCK_MONOTONIC directly (not MPI_Wtime) so that they do not
 * depend on anything the shim interposes. */
#ifndef LOGGP_TEST_COMMON_H
#define LOGGP_TEST_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *prog_name = "?";
static int my_rank = -1;
static long n_checks __attribute__((unused)) = 0;

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    n_checks++;                                                               \
    if (!(cond)) {                                                            \
      fprintf(stderr, "FAIL %s rank %d: %s:%d: ", prog_name, my_rank,         \
              __FILE__, __LINE__);                                            \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
      fflush(stderr);                                                         \
      MPI_Abort(MPI_COMM_WORLD, 1);                                           \
    }                                                                         \
  } while (0)

/* An MPI call that must succeed. */
#define MPI_OK(call)                                                          \
  do {                                                                        \
    int rc_ = (call);                                                         \
    CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);                  \
  } while (0)

static inline double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* CPU time of the calling thread, to tell a busy wait from a sleep. */
static inline double cpu_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Keeps the CPU busy until `until` (a now_us() value). */
static inline void busy_until(double until) {
  while (now_us() < until) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Prints " key=<median> key_p10=<10th percentile> key_min=<minimum>" for
 * v[0..n) (sorts v). Tests check lower bounds on the median and upper
 * bounds on the 10th percentile: on a shared machine, load from elsewhere
 * only ever adds time. */
static inline void put_stat(const char *key, double *v, int n) {
  double m = median(v, n);
  printf(" %s=%.3f %s_p10=%.3f %s_min=%.3f", key, m, key, v[n / 10], key, v[0]);
}

/* Byte i of message `seq` sent by rank `src`: a pattern in which a shifted,
 * truncated, duplicated or foreign byte shows up. */
static inline unsigned char pat(int src, int seq, size_t i) {
  uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)seq * 40503u ^
               (uint32_t)src * 97u;
  return (unsigned char)(x ^ (x >> 13) ^ (x >> 24));
}

static inline void fill(unsigned char *b, size_t n, int src, int seq) {
  for (size_t i = 0; i < n; i++) b[i] = pat(src, seq, i);
}

/* Returns the index of the first wrong byte, or -1. */
static inline long verify(const unsigned char *b, size_t n, int src, int seq) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pat(src, seq, i)) return (long)i;
  return -1;
}

/* FNV-1a, printed so that two runs can be compared by eye. */
static inline uint64_t fnv1a(const unsigned char *b, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static inline void init_common(const char *name, int *argc, char ***argv) {
  prog_name = name;
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
}

#endif
