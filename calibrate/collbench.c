/*
 * loggp-collbench: the measurement kernel of `loggp calibrate --collectives`.
 *
 * Times MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce and MPI_Alltoall
 * (natively, or as run by the loggp shim when it is preloaded with
 * LOGGP_VT=on) so that they can be held against the LogGP formulas
 * (Pjesivac-Grbovic et al., Tables 1-4; cli/src/calibrate/coll/model.rs).
 *
 * One repetition, on every rank:
 *   1. MPI_Allreduce(MAX) of {now + slack, my lateness in the previous
 *      repetition}: every rank learns the same start time t0, in the
 *      future (all ranks of one host share CLOCK_MONOTONIC);
 *   2. wait until t0 (spin; when there are more ranks than CPUs,
 *      sched_yield while more than 50 us away, then spin), so every rank
 *      enters the collective at t0, with nothing pending; a rank that
 *      first sees the clock past t0 by more than 1 us (it was descheduled,
 *      or the allreduce ended late) records by how much, and the slack
 *      doubles for the next repetition (see start_together);
 *   3. the collective; end = now.
 * The time of the repetition is max over ranks of (end - t0): when the last
 * rank is done, which is what the LogGP formulas give. The per-rank ends
 * and lateness are reduced (MAX) to rank 0 after each (op, size).
 *
 * Rows on stdout (rank 0), all times in ns:
 *   op size rep t_ns late_ns     one per timed repetition (warm-up not printed)
 *   gamma size rep t_ns 0        time of one MPI_Reduce_local(SUM) of size
 *                                bytes of doubles on rank 0 (the gamma*m
 *                                term of the reduce formulas)
 * Header lines start with '#': "# meta key value", "# library: ...".
 *
 * Reductions are MPI_SUM over MPI_DOUBLE (size/8 elements; sizes must be
 * multiples of 8), the root is rank 0, Alltoall moves size bytes per pair.
 *
 * Build: mpicc -O2 -o loggp-collbench collbench.c
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, np;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *msg) {
    if (rank == 0) fprintf(stderr, "loggp-collbench: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLTOALL, NOPS };
static const char *names[NOPS] = {"barrier", "bcast", "reduce", "allreduce", "alltoall"};

/* Parses a comma-separated list of whole numbers into v (at most max). */
static int parse_list(const char *s, long *v, int max) {
    int n = 0;
    char *copy = strdup(s), *tok, *save = NULL;
    for (tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long x = strtol(tok, &end, 10);
        if (*end != '\0' || x < 0) {
            free(copy);
            return -1;
        }
        v[n++] = x;
    }
    free(copy);
    return n;
}

static int64_t slack = 50000; /* ns; see start_together */
static int on_time = 0;
static int64_t late_prev = 0;

static int oversubscribed; /* more ranks than online CPUs */

/* Steps 1 and 2 above; returns t0 and sets *late: how far after t0 this
 * rank first saw the clock at or past t0 (it was descheduled, or the
 * allreduce ended after t0). */
static int64_t start_together(int64_t *late) {
    int64_t mine[2], all[2], t;
    mine[0] = now_ns() + slack;
    mine[1] = late_prev;
    MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    /* Adapt the slack: double after a late start (up to 1 ms, 20 ms when
     * oversubscribed), halve after 8 on-time starts (down to 50 us). It
     * must stay short: on this machine (a VM) a rank that spins for
     * milliseconds before a collective runs it tens of us slower. */
    if (all[1] > 1000) {
        if (slack < (oversubscribed ? 20000000 : 1000000)) slack *= 2;
        on_time = 0;
    } else if (++on_time >= 8 && slack > 50000) {
        slack /= 2;
        on_time = 0;
    }
    t = now_ns();
    /* Oversubscribed: give the core to a rank that has not got there yet. */
    while (oversubscribed && all[0] - t > 50000) {
        sched_yield();
        t = now_ns();
    }
    while (t < all[0]) t = now_ns();
    *late = t - all[0];
    late_prev = *late;
    return all[0];
}

static void run_op(int op, long size, double *sbuf, double *rbuf) {
    int n = (int)(size / 8);
    switch (op) {
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(sbuf, n, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(sbuf, n, MPI_DOUBLE, rbuf, n, MPI_DOUBLE, MPI_COMM_WORLD); break;
    }
}

int main(int argc, char **argv) {
    long sizes[64], opsel[NOPS] = {1, 1, 1, 1, 1};
    int nsizes = 3, reps = 40, warmup = 5, i, o, s, r;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen;
    long maxsize = 0;
    double *sbuf, *rbuf, *tmp;
    int64_t *ends, *lates, *ends_max, *lates_max;
    sizes[0] = 8;
    sizes[1] = 1024;
    sizes[2] = 16384;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        oversubscribed = cpus > 0 && np > cpus;
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("every option needs a value");
        if (!strcmp(a, "--sizes")) {
            nsizes = parse_list(v, sizes, 64);
            if (nsizes <= 0) die("--sizes: expected whole numbers of bytes, comma-separated");
        } else if (!strcmp(a, "--reps")) {
            reps = atoi(v);
        } else if (!strcmp(a, "--warmup")) {
            warmup = atoi(v);
        } else if (!strcmp(a, "--ops")) {
            char *copy = strdup(v), *tok, *save = NULL;
            memset(opsel, 0, sizeof opsel);
            for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                for (o = 0; o < NOPS && strcmp(tok, names[o]); o++) {}
                if (o == NOPS) die("--ops: expected barrier,bcast,reduce,allreduce,alltoall");
                opsel[o] = 1;
            }
            free(copy);
        } else {
            die("unknown option (expected --sizes, --reps, --warmup, --ops)");
        }
        i++;
    }
    if (reps < 1 || warmup < 0) die("--reps must be >= 1 and --warmup >= 0");
    for (s = 0; s < nsizes; s++) {
        if (sizes[s] < 8 || sizes[s] % 8) die("--sizes: every size must be a multiple of 8 bytes, at least 8");
        if (sizes[s] > maxsize) maxsize = sizes[s];
    }
    sbuf = malloc((size_t)maxsize * np);
    rbuf = malloc((size_t)maxsize * np);
    tmp = malloc((size_t)maxsize);
    ends = malloc(sizeof(int64_t) * reps);
    lates = malloc(sizeof(int64_t) * reps);
    ends_max = malloc(sizeof(int64_t) * reps);
    lates_max = malloc(sizeof(int64_t) * reps);
    if (!sbuf || !rbuf || !tmp || !ends || !lates || !ends_max || !lates_max) die("out of memory");
    for (i = 0; i < (int)(maxsize / 8) * np; i++) sbuf[i] = rank + i * 1e-3;

    if (rank == 0) {
        MPI_Get_library_version(lib, &liblen);
        for (i = 0; i < liblen; i++)
            if (lib[i] == '\n' || lib[i] == '\r') lib[i] = ' ';
        printf("# loggp-collbench: time of each collective, max over ranks, ns\n");
        printf("# library: %.*s\n", liblen, lib);
        printf("# meta np %d\n# meta reps %d\n# meta warmup %d\n", np, reps, warmup);
        printf("# op size rep t_ns late_ns\n");
    }

    /* gamma: local reduction cost on rank 0 */
    if (rank == 0) {
        for (s = 0; s < nsizes; s++) {
            int n = (int)(sizes[s] / 8);
            for (r = 0; r < warmup + reps; r++) {
                int64_t t0 = now_ns();
                MPI_Reduce_local(sbuf, tmp, n, MPI_DOUBLE, MPI_SUM);
                if (r >= warmup) printf("gamma %ld %d %lld 0\n", sizes[s], r - warmup, (long long)(now_ns() - t0));
            }
        }
    }

    for (o = 0; o < NOPS; o++) {
        if (!opsel[o]) continue;
        for (s = 0; s < nsizes; s++) {
            long size = o == BARRIER ? 0 : sizes[s];
            if (o == BARRIER && s > 0) break;
            for (r = 0; r < warmup + reps; r++) {
                int64_t late, t0 = start_together(&late);
                run_op(o, size, sbuf, rbuf);
                if (r >= warmup) {
                    ends[r - warmup] = now_ns() - t0;
                    lates[r - warmup] = late;
                }
            }
            MPI_Reduce(ends, ends_max, reps, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(lates, lates_max, reps, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                for (r = 0; r < reps; r++)
                    printf("%s %ld %d %lld %lld\n", names[o], size, r, (long long)ends_max[r],
                           (long long)lates_max[r]);
                fflush(stdout);
            }
        }
    }
    free(sbuf);
    free(rbuf);
    free(tmp);
    free(ends);
    free(lates);
    free(ends_max);
    free(lates_max);
    MPI_Finalize();
    return 0;
}
