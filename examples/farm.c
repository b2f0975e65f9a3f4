/* farm.c: master-worker task farm. Rank 0 hands out small tasks and
 * collects results, polling with MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG)
 * and answering whichever worker spoke; workers loop on receive, compute,
 * send. The master keeps `depth` tasks queued at each worker, so a worker
 * always has its next task at hand and the latency L of the round trip is
 * hidden behind the work as long as a task takes longer than about 2L.
 * The per-message overheads are not hidden: every task costs each worker
 * one receive (o_r) and one send (o_s) of CPU time, and costs the master
 * the same, so o (and the gaps g when the master serves many workers)
 * drive the run time.
 *
 *   mpirun -np 2 ./farm [tasks=4000] [work=10000] [depth=2]
 *
 * Checks: the sum of all results equals the serial sum, and every task was
 * done exactly once. Prints:
 *   farm: 4000 tasks on 1 workers in 0.123456 s (30.9 us per task) OK
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG_TASK = 1, TAG_RESULT = 2, TAG_STOP = 3 };

/* deterministic busy work: `work` steps of an xorshift seeded by the task */
static uint64_t task(int64_t k, int work)
{
    uint64_t x = (uint64_t)k * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < work; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ntasks = argc > 1 ? atoi(argv[1]) : 4000;
    int work = argc > 2 ? atoi(argv[2]) : 10000;
    int depth = argc > 3 ? atoi(argv[3]) : 2;
    if (size < 2 || ntasks < 1 || work < 0 || depth < 1) {
        if (rank == 0)
            fprintf(stderr, "farm: needs 2 or more ranks, tasks >= 1, work >= 0, depth >= 1\n");
        MPI_Finalize(); /* every rank sees the same arguments: leave cleanly */
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int ok = 1;
    if (rank == 0) {
        char *done = calloc((size_t)ntasks, 1);
        int *queued = calloc((size_t)size, sizeof(int)); /* tasks out at each worker */
        uint64_t sum = 0;
        int64_t next = 0;
        int received = 0, active = 0;
        /* prime every worker with `depth` tasks (or stop it at once) */
        for (int w = 1; w < size; w++) {
            for (int d = 0; d < depth && next < ntasks; d++) {
                MPI_Send(&next, 1, MPI_INT64_T, w, TAG_TASK, MPI_COMM_WORLD);
                next++;
                queued[w]++;
            }
            if (queued[w] == 0)
                MPI_Send(&next, 1, MPI_INT64_T, w, TAG_STOP, MPI_COMM_WORLD);
            else
                active++;
        }
        while (active > 0) {
            int flag = 0;
            MPI_Status st;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            if (!flag)
                continue;
            uint64_t msg[2]; /* task number, result */
            int count;
            MPI_Get_count(&st, MPI_UINT64_T, &count);
            if (st.MPI_TAG != TAG_RESULT || count != 2) {
                fprintf(stderr, "farm: FAILED: unexpected message tag %d count %d from %d\n", st.MPI_TAG, count,
                        st.MPI_SOURCE);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            int w = st.MPI_SOURCE;
            MPI_Recv(msg, 2, MPI_UINT64_T, w, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (msg[0] >= (uint64_t)ntasks || done[msg[0]]) {
                fprintf(stderr, "farm: FAILED: task %llu reported twice or out of range\n", (unsigned long long)msg[0]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            done[msg[0]] = 1;
            sum += msg[1];
            received++;
            queued[w]--;
            if (next < ntasks) {
                MPI_Send(&next, 1, MPI_INT64_T, w, TAG_TASK, MPI_COMM_WORLD);
                next++;
                queued[w]++;
            } else if (queued[w] == 0) {
                /* after its last result: non-overtaking order puts STOP behind every task */
                MPI_Send(&next, 1, MPI_INT64_T, w, TAG_STOP, MPI_COMM_WORLD);
                active--;
            }
        }
        double t = MPI_Wtime() - t0;
        uint64_t expect = 0;
        for (int64_t k = 0; k < ntasks; k++)
            expect += task(k, work);
        ok = received == ntasks && sum == expect;
        printf("farm: %d tasks on %d workers in %.6f s (%.1f us per task) %s\n", ntasks, size - 1, t,
               t / ntasks * 1e6, ok ? "OK" : "FAILED");
        free(done);
        free(queued);
    } else {
        for (;;) {
            int64_t k;
            MPI_Status st;
            MPI_Recv(&k, 1, MPI_INT64_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_STOP)
                break;
            uint64_t msg[2] = {(uint64_t)k, task(k, work)};
            MPI_Send(msg, 2, MPI_UINT64_T, 0, TAG_RESULT, MPI_COMM_WORLD);
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return ok ? 0 : 1;
}
