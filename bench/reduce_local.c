/* reduce_local.c: what one call of the library's MPI_Reduce_local costs,
 * by type, operation and size: the call the shim's collectives made per
 * reduction step before session 27, and still make above 64 bytes
 * (shim/src/coll/ctx.rs, FAST_MAX). Best of 5 batches of back-to-back
 * calls on the same buffers, ns per call.
 *
 *   mpicc.openmpi -O2 -o reduce_local bench/reduce_local.c
 *   mpirun.openmpi -np 1 ./reduce_local      (likewise mpicc.mpich) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Datatype ts[3] = {MPI_DOUBLE, MPI_INT, MPI_FLOAT};
  const char *tn[3] = {"double", "int", "float"};
  size_t w[3] = {8, 4, 4};
  MPI_Op ops[2] = {MPI_SUM, MPI_MAX};
  const char *on[2] = {"sum", "max"};
  size_t sizes[5] = {8, 64, 256, 512, 2048};
  for (int j = 0; j < 5; j++)
    for (int k = 0; k < 3; k++)
      for (int o = 0; o < 2; o++) {
        size_t bytes = sizes[j];
        if (bytes < w[k]) continue;
        char *a = malloc(bytes), *b = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) a[i] = 1, b[i] = 2;
        long reps = (64L << 20) / (long)bytes;
        double best = 1e9;
        for (int r = 0; r < 5; r++) {
          double t = now();
          for (long i = 0; i < reps; i++) MPI_Reduce_local(a, b, (int)(bytes / w[k]), ts[k], ops[o]);
          t = (now() - t) / (double)reps;
          if (t < best) best = t;
        }
        printf("%-6s %s %5zu B: %8.1f ns\n", tn[k], on[o], bytes, best * 1e9);
        free(a), free(b);
      }
  MPI_Finalize();
  return 0;
}
