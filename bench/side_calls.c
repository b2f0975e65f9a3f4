/* side_calls: the cost of each MPI call the shim makes beside the
 * application's own on the 8-byte hot path of one message under virtual
 * time (engine/send.rs, engine/recv.rs), measured natively, one rank.
 * Prints one line of key=value, nanoseconds per call: the median of 9
 * batches of 200000 calls each.
 *   type_size        MPI_Type_size(MPI_BYTE)          send and receive: message size
 *   get_extent       MPI_Type_get_extent(MPI_BYTE)    contiguity test (staging)
 *   get_true_extent  MPI_Type_get_true_extent(...)    contiguity test (staging)
 *   test_cancelled   MPI_Test_cancelled(status)       receive: was it cancelled?
 *   get_elements_x   MPI_Get_elements_x(status, BYTE) receive: bytes that arrived
 *   set_elements_x   MPI_Status_set_elements_x(...)   receive: count without the header
 *   clock            clock_gettime(CLOCK_MONOTONIC)   virtual time (vDSO)
 *   rdtsc            the time-stamp counter           virtual time (shim's clock)
 *   mutex            pthread mutex lock + unlock      the engine's state lock
 * Run it natively: these calls are not wrapped by the shim. */
#include <mpi.h>
#include "util.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#define TICKS() __rdtsc()
#else
#define TICKS() 0
#endif

#define N 200000
#define TIME(label, stmt)                                  \
  do {                                                     \
    double b[9];                                           \
    for (int k = 0; k < 9; k++) {                          \
      double t0 = now_ns();                                \
      for (int i = 0; i < N; i++) { stmt; }                \
      b[k] = (now_ns() - t0) / N;                          \
    }                                                      \
    qsort(b, 9, sizeof(double), cmp);                      \
    printf("%s%s=%.2f", first ? "" : " ", label, b[4]);    \
    first = 0;                                             \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int first = 1, size = 0, flag = 0;
  MPI_Aint lb, ext;
  MPI_Count n = 0;
  MPI_Status st;
  /* A real status of an 8-byte message received from ourselves. */
  char out[24] = {0}, in[24];
  MPI_Sendrecv(out, 24, MPI_BYTE, 0, 1, in, 24, MPI_BYTE, 0, 1, MPI_COMM_SELF, &st);
  volatile int sink = 0;
  struct timespec ts;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  TIME("type_size", MPI_Type_size(MPI_BYTE, &size); sink += size);
  TIME("get_extent", MPI_Type_get_extent(MPI_BYTE, &lb, &ext); sink += (int)ext);
  TIME("get_true_extent", MPI_Type_get_true_extent(MPI_BYTE, &lb, &ext); sink += (int)ext);
  TIME("test_cancelled", MPI_Test_cancelled(&st, &flag); sink += flag);
  TIME("get_elements_x", MPI_Get_elements_x(&st, MPI_BYTE, &n); sink += (int)n);
  TIME("set_elements_x", MPI_Status_set_elements_x(&st, MPI_BYTE, 24); sink += 1);
  TIME("clock", clock_gettime(CLOCK_MONOTONIC, &ts); sink += (int)ts.tv_nsec);
  TIME("rdtsc", sink += (int)TICKS());
  TIME("mutex", pthread_mutex_lock(&m); sink += 1; pthread_mutex_unlock(&m));
  printf("\n");
  MPI_Finalize();
  return sink == 42;
}
