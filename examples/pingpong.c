/* pingpong.c: ranks 0 and 1 bounce a message back and forth; any other
 * ranks wait at the final barrier. Sensitive to L (twice per round trip)
 * and to o_s + o_r; the reference case for `loggp sweep --knob L`.
 *
 *   mpirun -np 2 ./pingpong [round_trips=10000] [bytes=8]
 *
 * Checks: every byte of every message carries the round-trip number it
 * belongs to, and the reply is the request plus one. Prints one line:
 *   pingpong: 10000 round trips of 8 B in 0.001234 s (half round trip 0.31 us) OK
 * and exits non-zero (MPI_Abort) on a wrong byte.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(unsigned char *buf, int n, int v) { memset(buf, v & 0xff, (size_t)n); }

static int check(const unsigned char *buf, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != (unsigned char)(v & 0xff))
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 10000;
    int bytes = argc > 2 ? atoi(argv[2]) : 8;
    if (size < 2 || iters < 1 || bytes < 1) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs 2 or more ranks, round_trips >= 1, bytes >= 1\n");
        MPI_Finalize(); /* every rank sees the same arguments: leave cleanly */
        return 2;
    }
    unsigned char *buf = malloc((size_t)bytes);
    int warm = iters / 10 + 1;
    double t0 = 0.0;
    if (rank < 2) {
        int peer = 1 - rank;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) { /* ranks >= 2 meet this barrier in the else branch */
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
            }
            if (rank == 0) {
                fill(buf, bytes, 2 * i);
                MPI_Send(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_BYTE, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                int bad = check(buf, bytes, 2 * i + 1);
                if (bad >= 0) {
                    fprintf(stderr, "pingpong: FAILED: round trip %d byte %d is %d, expected %d\n",
                            i, bad, buf[bad], (2 * i + 1) & 0xff);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            } else {
                MPI_Status st;
                MPI_Recv(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
                int count;
                MPI_Get_count(&st, MPI_BYTE, &count);
                int bad = check(buf, bytes, 2 * i);
                if (bad >= 0 || count != bytes) {
                    fprintf(stderr, "pingpong: FAILED: rank 1 got %d B, byte %d wrong in round trip %d\n",
                            count, bad, i);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                fill(buf, bytes, 2 * i + 1);
                MPI_Send(buf, bytes, MPI_BYTE, peer, 8, MPI_COMM_WORLD);
            }
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double t = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("pingpong: %d round trips of %d B in %.6f s (half round trip %.3f us) OK\n",
               iters, bytes, t, t / iters / 2.0 * 1e6);
    free(buf);
    MPI_Finalize();
    return 0;
}
