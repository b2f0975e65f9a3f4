/* hosts.c: latency between rank 0 and every other rank, for the tests of
 * jobs across hosts (cli/tests/mpi_hosts.rs). Run as
 *   hosts <repetitions> [<pause_ms>]
 * Rank 0 ping-pongs with each other rank in turn (8-byte messages that
 * carry the sender's CLOCK_MONOTONIC): the half round trip, and each one-way
 * time read on the receiver's clock. The test bed's "hosts" are namespaces
 * of one machine and share CLOCK_MONOTONIC, so one-way times are true times,
 * whatever LOGGP_TEST_CLOCK makes the shim see. With a pause, the ping-pongs
 * are spread over that many milliseconds (drift tests), paced by rank 0
 * alone: rank P waits for each ping inside MPI_Recv. (When both ranks paced
 * themselves by busy waits, a one-way time measured their schedules and
 * Open MPI rather than the network: its TCP transport leaves an eager reply
 * in the library until the sender's next MPI call, a pause later, and the
 * reply P to 0 took ~700 us natively, ~970 us through the shim, with 1 ms
 * between ping-pongs.) Rank 0 prints
 *   hosts: np=N hosts=H
 *   peer P: same<P>=0|1 rtt<P>=X fwd<P>=Y back<P>=Z first<P>=.. last<P>=..
 *           firstb<P>=.. lastb<P>=..
 * (medians in us: rtt half round trip, fwd 0 to P, back P to 0; first and
 * last: median one-way 0 to P of the first and last tenth of the run;
 * firstb and lastb the same P to 0).
 * Then it checks three collectives across the hosts (Allreduce, Bcast from
 * the last rank, Alltoall) and prints "hosts: collectives ok". */
#include "common.h"
#include <unistd.h>

enum { MAXREP = 20000, WARMUP = 20 };

static double rtt[MAXREP], fwd[MAXREP], back[MAXREP], tmp[MAXREP];

/* Median of the first or last tenth of v[0..n). */
static double tenth(const double *v, int n, int last) {
  int t = n / 10 > 0 ? n / 10 : 1;
  memcpy(tmp, last ? v + n - t : v, t * sizeof *tmp);
  return median(tmp, t);
}

/* A barrier that sleeps while it waits: the test bed runs every rank of
 * both "hosts" on one small machine, and ranks spinning in a barrier would
 * take the processors from the pair being measured. */
static void lazy_barrier(void) {
  MPI_Request r;
  int done = 0;
  MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
  while (!done) {
    MPI_OK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
    if (!done) usleep(200);
  }
}

int main(int argc, char **argv) {
  init_common("hosts", &argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  CHECK(argc >= 2, "usage: hosts <repetitions> [<pause_ms>]");
  int reps = atoi(argv[1]);
  CHECK(reps > 0 && reps <= MAXREP, "repetitions %d not in 1..%d", reps, MAXREP);
  double pause_us = argc >= 3 ? atof(argv[2]) * 1e3 : 0;
  char names[np][MPI_MAX_PROCESSOR_NAME];
  char mine[MPI_MAX_PROCESSOR_NAME];
  memset(mine, 0, sizeof mine);
  int len;
  MPI_OK(MPI_Get_processor_name(mine, &len));
  MPI_OK(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                       MPI_CHAR, MPI_COMM_WORLD));
  int hosts = 0;
  for (int r = 0; r < np; r++) {
    int first = 1;
    for (int q = 0; q < r; q++)
      if (strcmp(names[q], names[r]) == 0) first = 0;
    hosts += first;
  }
  if (my_rank == 0) printf("hosts: np=%d hosts=%d\n", np, hosts);
  for (int p = 1; p < np; p++) {
    lazy_barrier();
    double msg[2];
    int total = WARMUP + reps;
    double t_begin = now_us();
    for (int k = 0; k < total; k++) {
      if (pause_us > 0 && my_rank == 0) busy_until(t_begin + pause_us * k / total);
      if (my_rank == 0) {
        double t0 = now_us();
        msg[0] = t0;
        msg[1] = k;
        MPI_OK(MPI_Send(msg, 2, MPI_DOUBLE, p, 5, MPI_COMM_WORLD));
        MPI_OK(MPI_Recv(msg, 2, MPI_DOUBLE, p, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t1 = now_us();
        CHECK(msg[1] == -k, "reply %g to %d", msg[1], k);
        if (k >= WARMUP) {
          rtt[k - WARMUP] = (t1 - t0) / 2;
          back[k - WARMUP] = t1 - msg[0];
        }
      } else if (my_rank == p) {
        MPI_OK(MPI_Recv(msg, 2, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t = now_us();
        CHECK(msg[1] == k, "message %g, expected %d", msg[1], k);
        if (k >= WARMUP) fwd[k - WARMUP] = t - msg[0];
        msg[0] = now_us();
        msg[1] = -k;
        MPI_OK(MPI_Send(msg, 2, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD));
      }
    }
    if (my_rank == p) MPI_OK(MPI_Send(fwd, reps, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD));
    if (my_rank == 0) {
      MPI_OK(MPI_Recv(fwd, reps, MPI_DOUBLE, p, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      /* The tenths first: median() sorts its array. */
      double f0 = tenth(fwd, reps, 0), f1 = tenth(fwd, reps, 1);
      double b0 = tenth(back, reps, 0), b1 = tenth(back, reps, 1);
      printf("peer %d: same%d=%d rtt%d=%.3f fwd%d=%.3f back%d=%.3f first%d=%.3f last%d=%.3f "
             "firstb%d=%.3f lastb%d=%.3f\n",
             p, p, strcmp(names[0], names[p]) == 0, p, median(rtt, reps), p, median(fwd, reps), p,
             median(back, reps), p, f0, p, f1, p, b0, p, b1);
      fflush(stdout);
    }
  }
  lazy_barrier();
  {
    enum { N = 1000, B = 4096, A = 16 };
    static int in[N], out[N], bc[B], sa[A * 64], ra[A * 64];
    CHECK(np <= 64, "at most 64 ranks for the collective check");
    for (int i = 0; i < N; i++) in[i] = (my_rank + 1) * (i + 1);
    MPI_OK(MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
      CHECK(out[i] == np * (np + 1) / 2 * (i + 1), "Allreduce element %d: %d", i, out[i]);
    for (int i = 0; i < B; i++) bc[i] = my_rank == np - 1 ? i * 7 + 3 : -1;
    MPI_OK(MPI_Bcast(bc, B, MPI_INT, np - 1, MPI_COMM_WORLD));
    for (int i = 0; i < B; i++) CHECK(bc[i] == i * 7 + 3, "Bcast element %d: %d", i, bc[i]);
    for (int d = 0; d < np; d++)
      for (int i = 0; i < A; i++) sa[d * A + i] = my_rank * 100000 + d * 100 + i;
    MPI_OK(MPI_Alltoall(sa, A, MPI_INT, ra, A, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < np; s++)
      for (int i = 0; i < A; i++)
        CHECK(ra[s * A + i] == s * 100000 + my_rank * 100 + i, "Alltoall from %d element %d: %d",
              s, i, ra[s * A + i]);
    if (my_rank == 0) printf("hosts: collectives ok np=%d\n", np);
  }
  lazy_barrier();
  if (my_rank == 0) printf("hosts: PASS np=%d\n", np);
  MPI_Finalize();
  return 0;
}
