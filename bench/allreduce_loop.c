/* allreduce_loop: back-to-back MPI_Allreduce calls of COUNT doubles
 * (MPI_SUM, distinct input and output buffers allocated after MPI_Init,
 * each on a page of its own as OSU Micro-Benchmarks allocate theirs), the
 * time per call on rank 0 after 50 untimed calls and a barrier. Prints
 * "allreduce_loop: count=COUNT us=T". For scripts/bench-allreduce.sh:
 *   allreduce_loop COUNT CALLS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int n = argc > 1 ? atoi(argv[1]) : 131072;
  int calls = argc > 2 ? atoi(argv[2]) : 2000;
  if (n < 1 || calls < 1) {
    fprintf(stderr, "usage: allreduce_loop COUNT CALLS (both at least 1)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* Page-aligned: two plain mallocs of 16 KiB lay the output 16 bytes past
   * a multiple of 4 KiB from the input, and native MPICH 4.0's Allreduce of
   * 2048 doubles at np=2 then read 15-19 us here instead of 4-6 (4K
   * aliasing in its reduction, by the pattern; pairs of page-aligned
   * buffers at a common offset read 4-6 us; session 42). */
  double *a = NULL, *b = NULL;
  if (posix_memalign((void **)&a, 4096, sizeof(double) * (size_t)n) ||
      posix_memalign((void **)&b, 4096, sizeof(double) * (size_t)n))
    MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < n; i++) a[i] = i;
  for (int i = 0; i < 50; i++) MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t = MPI_Wtime();
  for (int i = 0; i < calls; i++) MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  t = MPI_Wtime() - t;
  int r, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  /* Every element sums i over the ranks: a wrong result is not timed. */
  for (int i = 0; i < n; i++)
    if (b[i] != (double)i * p) {
      fprintf(stderr, "allreduce_loop rank %d: element %d is %g, expected %g\n", r, i, b[i], (double)i * p);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  if (r == 0) printf("allreduce_loop: count=%d us=%.3f\n", n, t / calls * 1e6);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
