/* Entry points of newer libraries (shim/src/later.rs), np = 2, on whatever
 * the library offers:
 *   isendrecv   MPI_Isendrecv and MPI_Isendrecv_replace (MPICH 4+, Open
 *               MPI 5+): data right both ways;
 *   getstatus   MPI_Request_get_status_all/any/some (MPI-4.1: MPICH 5):
 *               rank 1 posts 4 receives, rank 0 sends 4 messages of 8 B
 *               after a barrier; rank 1 polls the three forms until each
 *               reports every request complete, then checks the data with
 *               Waitall. Prints getstatus_us (median over reps of the time
 *               from the barrier until get_status_all first says complete)
 *               so that a test can see L in it. With "waitall" as the
 *               second argument, MPI_Waitall instead of the polling (the
 *               same time through the shim's ordinary completion path).
 * Prints "later: PASS parts=<what ran>" and exits 0 when every check holds;
 * a part the library lacks is skipped and left out of parts=.
 *   later REPS [waitall] */
#include "common.h"

#if (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5) || \
    (defined(MPICH) && MPI_VERSION >= 4)
#define HAVE_ISENDRECV 1
#endif
#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
#define HAVE_GETSTATUS 1
#endif

int main(int argc, char **argv) {
  init_common("later", &argc, &argv);
  int reps = argc > 1 ? atoi(argv[1]) : 50;
  int waitall = argc > 2 && strcmp(argv[2], "waitall") == 0;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2 && reps >= 1, "needs 2 ranks and reps >= 1");
  int peer __attribute__((unused)) = 1 - my_rank;
  char parts[64] = "";
#ifdef HAVE_ISENDRECV
  for (int k = 0; k < reps; k++) {
    unsigned char s[64], r[64];
    fill(s, sizeof s, my_rank, k);
    memset(r, 0, sizeof r);
    MPI_Request q;
    MPI_OK(MPI_Isendrecv(s, 64, MPI_BYTE, peer, 5, r, 64, MPI_BYTE, peer, 5,
                         MPI_COMM_WORLD, &q));
    MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(verify(r, sizeof r, peer, k) < 0, "Isendrecv data");
    /* No status check: MPICH 4.0.2 and 5.0.2 themselves return an
     * Isendrecv status that does not describe the receive (zeroes; other
     * fields), measured natively. */
    fill(s, sizeof s, my_rank, k + 1000);
    MPI_OK(MPI_Isendrecv_replace(s, 64, MPI_BYTE, peer, 6, peer, 6,
                                 MPI_COMM_WORLD, &q));
    MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(verify(s, sizeof s, peer, k + 1000) < 0, "Isendrecv_replace data");
  }
  strcat(parts, "isendrecv,");
#endif
#ifdef HAVE_GETSTATUS
  double *t = malloc(sizeof(double) * reps);
  for (int k = 0; k < reps; k++) {
    enum { N = 4 };
    unsigned char b[N][8];
    MPI_Request q[N];
    if (my_rank == 1) {
      for (int i = 0; i < N; i++)
        MPI_OK(MPI_Irecv(b[i], 8, MPI_BYTE, 0, 10 + i, MPI_COMM_WORLD, &q[i]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    if (my_rank == 0) {
      for (int i = 0; i < N; i++) {
        fill(b[i], 8, 0, k * N + i);
        MPI_OK(MPI_Send(b[i], 8, MPI_BYTE, 1, 10 + i, MPI_COMM_WORLD));
      }
      t[k] = 0;
    } else {
      int all = 0, any = 0, some = 0, flag, idx, out, ind[N];
      MPI_Status sts[N], st1;
      while (!all) {
        if (waitall) {
          MPI_OK(MPI_Waitall(N, q, sts));
          flag = 1;
        } else {
          MPI_OK(MPI_Request_get_status_all(N, q, &flag, sts));
        }
        if (flag) {
          all = 1;
          t[k] = now_us() - t0;
          for (int i = 0; i < N; i++)
            CHECK(sts[i].MPI_SOURCE == 0 && sts[i].MPI_TAG == 10 + i,
                  "get_status_all status %d: source %d tag %d", i,
                  sts[i].MPI_SOURCE, sts[i].MPI_TAG);
        }
      }
      if (waitall) {
        /* Completed and freed: repost nothing, check the data below. */
        for (int i = 0; i < N; i++)
          CHECK(verify(b[i], 8, 0, k * N + i) < 0, "waitall data %d", i);
        continue;
      }
      MPI_OK(MPI_Request_get_status_any(N, q, &idx, &flag, &st1));
      any = flag && idx >= 0 && idx < N && st1.MPI_TAG == 10 + idx;
      MPI_OK(MPI_Request_get_status_some(N, q, &out, ind, sts));
      some = out == N;
      for (int i = 0; i < out && i < N; i++)
        some = some && sts[i].MPI_TAG == 10 + ind[i];
      CHECK(any && some, "after get_status_all: any %d (index %d) some %d (outcount %d)",
            any, idx, some, out);
      /* Non-destructive: the requests are still there. */
      MPI_OK(MPI_Waitall(N, q, MPI_STATUSES_IGNORE));
      for (int i = 0; i < N; i++)
        CHECK(verify(b[i], 8, 0, k * N + i) < 0, "get_status data %d", i);
      /* Only null requests left: any says flag, index MPI_UNDEFINED. */
      MPI_OK(MPI_Request_get_status_any(N, q, &idx, &flag, &st1));
      CHECK(flag && idx == MPI_UNDEFINED, "get_status_any on null requests: flag %d index %d",
            flag, idx);
      MPI_OK(MPI_Request_get_status_some(N, q, &out, ind, MPI_STATUSES_IGNORE));
      CHECK(out == MPI_UNDEFINED, "get_status_some on null requests: outcount %d", out);
    }
  }
  if (my_rank == 1) {
    /* A line of its own: rank 0's PASS line may come out beside it. */
    put_stat("getstatus_us", t, reps);
    printf("\n");
    fflush(stdout);
  }
  free(t);
  strcat(parts, "getstatus,");
#endif
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0 || my_rank == 1) {
    size_t n = strlen(parts);
    if (n) parts[n - 1] = 0;
    if (my_rank == 0) printf("later: PASS parts=%s checks=%ld\n", parts, n_checks);
  }
  MPI_Finalize();
  return 0;
}
