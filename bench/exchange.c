/* exchange: MPI_Sendrecv exchanges between ranks 0 and 1, as a halo
 * exchange or a step of a collective makes them: for each SIZE given, the
 * time per exchange on rank 0 (us), median of 9 batches of 300 after one
 * untimed batch, each batch between barriers; page-aligned buffers. The
 * data received is checked after each size. Prints "SIZE US" per size.
 *   exchange SIZE... */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>

enum { BATCHES = 9, CALLS = 300, MAX = 1 << 20 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  unsigned char *s = NULL, *b = NULL;
  if (p < 2 || posix_memalign((void **)&s, 4096, MAX) || posix_memalign((void **)&b, 4096, MAX)) {
    if (r == 0) fprintf(stderr, "exchange: needs 2 ranks or more and 2 MiB of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 0; i < MAX; i++) s[i] = (unsigned char)(i * 7 + r);
  for (int k = 1; k < argc; k++) {
    int n = atoi(argv[k]);
    if (n < 0 || n > MAX) {
      if (r == 0) fprintf(stderr, "exchange: SIZE %s: expected 0 to %d bytes\n", argv[k], MAX);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double t[BATCHES];
    for (int bt = -1; bt < BATCHES; bt++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_us();
      if (r < 2)
        for (int i = 0; i < CALLS; i++)
          MPI_Sendrecv(s, n, MPI_BYTE, 1 - r, 0, b, n, MPI_BYTE, 1 - r, 0, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE);
      if (bt >= 0) t[bt] = (now_us() - t0) / CALLS;
    }
    if (r < 2)
      for (int i = 0; i < n; i++)
        if (b[i] != (unsigned char)(i * 7 + 1 - r)) {
          fprintf(stderr, "exchange rank %d: %d bytes: byte %d differs\n", r, n, i);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
    qsort(t, BATCHES, sizeof(double), cmp);
    if (r == 0) printf("%d %.3f\n", n, t[(BATCHES - 1) / 2]);
  }
  free(s);
  free(b);
  MPI_Finalize();
  return 0;
}
