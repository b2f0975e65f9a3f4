/*
 * loggp-prtt: the measurement kernel of `loggp calibrate`.
 *
 * Measures the LogGP parameters of the machine it runs on (native, or the
 * machine emulated by the loggp shim) with the parametrized round trip
 * PRTT(n,d,s) of Hoefler, Lichei and Rehm, "Low-Overhead LogGP Parameter
 * Assessment for Modern Interconnection Networks" (IPDPS 2007), §3:
 *
 *   PRTT(n,d,s): rank 0 sends n messages of s bytes, spinning d ns between
 *   them; rank 1 receives all n and replies with one message of s bytes.
 *   PRTT(n,d,s) = PRTT(1,0,s) + (n-1)·max(o + d, G_all)             (eq. 5)
 *   o       = (PRTT(n,d,s) - PRTT(1,0,s))/(n-1) - d, d > G_all      (eq. 6)
 *   g+(s-1)G = (PRTT(n,0,s) - PRTT(1,0,s))/(n-1), fitted over s      (eq. 7)
 *
 * This program only measures and prints raw repetitions; all statistics,
 * fits and formulas live in Rust (loggp-core: stats.rs, fit.rs; loggp
 * calibrate). Rows go to stdout from rank 0, one per repetition:
 *
 *   kind n d_ns size rep t_ns aux_ns
 *
 * kinds (all times in ns, CLOCK_MONOTONIC of the rank named):
 *   prtt     PRTT(n,d,s) on rank 0; aux = mean delay actually spun between
 *            sends (the spin overshoots d by tens of ns; Rust uses aux, not
 *            d, in eq. 6). Size s = --size for n=1/n/d rows, every grid
 *            size for the fit rows (d = 0). PRTT(1,0,s), PRTT(n,0,s) and
 *            PRTT(n,d,s) are interleaved repetition by repetition.
 *   or_call  time inside MPI_Recv on rank 1 for a message that has already
 *            (virtually) arrived: rank 1 MPI_Probes it, spins `wait` more
 *            (longer than any gap, so no receive gap g_r is pending), then
 *            times MPI_Recv. This is o_r.
 *   gs_burst time on rank 0 from the first of n blocking MPI_Sends to the
 *            return of the last; rank 1 only receives. A sender-side gap
 *            (g_s, the link) stretches this; a receive-side gap cannot,
 *            because small sends complete eagerly at departure.
 *            g_s = (T(n) - T(1)) / (n-1). T(1), the time inside one
 *            MPI_Send, is also a direct cross-check of o_s.
 *   gr_burst time on rank 1 to MPI_Recv n messages that have all already
 *            arrived (probe of the last tag, then `wait`): only the gap
 *            between deliveries (g_r) and o_r can stretch it.
 *            g_r = (T(n) - T(1)) / (n-1).
 *   oneway   one-way time of one message from rank 0 to rank 1: rank 0
 *            reads its clock and sends; rank 1 reads its clock when
 *            MPI_Recv returns and sends that time back (the ranks share
 *            one host's CLOCK_MONOTONIC). Each repetition starts after
 *            `wait` on an idle machine; 4x --reps repetitions. Less the
 *            baseline's median, this is the added delay of each message:
 *            the realised distribution of a varied L (LOGGP_L_DIST).
 *   gs_1toN  (np >= 3) one-to-many PRTT: rank 0 sends n messages round-robin
 *            to ranks 1..P-1, each replies after its share. Receivers get
 *            n/(P-1) each, so it exposes the sender's gap unless
 *            g_r > (P-1)·g_s.
 *   gr_Nto1  (np >= 3) many-to-one: rank 0 sends a token to each of ranks
 *            1..P-1, each sends k messages back; time on rank 0 until all
 *            k·(P-1) have been received; n = k·(P-1). Exposes the
 *            receiver's gap unless g_s > (P-1)·g_r.
 *
 * Between repetitions rank 0 (and rank 1 in or_call/gr_burst) spins `wait`,
 * chosen from a pilot measurement as larger than every gap, so that each
 * repetition starts on an idle machine (no pending g_s, g_r or link time).
 *
 * Control: rank 0 drives; the other ranks loop on commands (tag CMD_TAG).
 * Build: mpicc -O2 -o loggp-prtt prtt.c -lm
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD_TAG 30000
#define ACK_TAG 30001
#define TIMES_TAG 30002
#define HOST_TAG 30003

enum { CMD_DONE, CMD_PRTT, CMD_OR, CMD_GS, CMD_GR, CMD_1TON, CMD_NTO1, CMD_OW };

/* A command: kind, n, size, reps, wait_ns. Sent as doubles. */
typedef struct {
    double kind, n, size, reps, wait;
} cmd_t;

static int rank, np;
static char *sbuf, *rbuf;
static char host0[MPI_MAX_PROCESSOR_NAME], host1[MPI_MAX_PROCESSOR_NAME];
static long max_size = 1L << 20;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Spins (CPU busy, like the delay of Listing 1) for at least ns; returns
 * the time actually spent. */
static double spin_ns(double ns) {
    double t0 = now_ns(), t;
    if (ns <= 0) return 0;
    do {
        t = now_ns();
    } while (t - t0 < ns);
    return t - t0;
}

static void die(const char *msg) {
    fprintf(stderr, "loggp-prtt: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void send_cmd(int to, int kind, int n, long size, int reps, double wait) {
    cmd_t c = {kind, n, (double)size, reps, wait};
    MPI_Send(&c, 5, MPI_DOUBLE, to, CMD_TAG, MPI_COMM_WORLD);
}

static void row(const char *kind, int n, double d, long size, int rep, double t, double aux) {
    printf("%s %d %.0f %ld %d %.1f %.1f\n", kind, n, d, size, rep, t, aux);
}

/* ---------------- rank 0 side ---------------- */

/* One PRTT(n,d,s) repetition after spinning `pause`. Returns the time;
 * *dact = mean delay actually spun. Nothing else is timed inside the loop,
 * so that eq. 6 sees only the send call and the loop. */
static double prtt_once(int n, double d, long s, double pause, double *dact) {
    double spun = 0, t0, t1;
    int i;
    spin_ns(pause);
    t0 = now_ns();
    MPI_Send(sbuf, (int)s, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    for (i = 1; i < n; i++) {
        if (d > 0) spun += spin_ns(d);
        MPI_Send(sbuf, (int)s, MPI_BYTE, 1, i, MPI_COMM_WORLD);
    }
    MPI_Recv(rbuf, (int)s, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    t1 = now_ns();
    if (dact) *dact = n > 1 ? spun / (n - 1) : 0;
    return t1 - t0;
}

/* reps repetitions of PRTT(n,d,s) (after one unrecorded warm-up);
 * prints rows when `print`; returns the median. */
static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int k) {
    double *c = malloc(sizeof(double) * (size_t)k), m;
    memcpy(c, v, sizeof(double) * (size_t)k);
    qsort(c, (size_t)k, sizeof(double), cmp_dbl);
    m = k % 2 ? c[k / 2] : 0.5 * (c[k / 2 - 1] + c[k / 2]);
    free(c);
    return m;
}

/* Interleaved repetitions of PRTT(1,0,s), PRTT(n,0,s) and, when d > 0,
 * PRTT(n,d,s), after one unrecorded warm-up round. Interleaving makes a
 * slow period of the machine (another process) hit all three alike, so the
 * differences in eq. 6 and 7 stay sound. Rows printed when `print`; the
 * medians are returned in m[0..3]. pause1 precedes PRTT(1,0,s), pausen the
 * others. */
static void run_prtt(int n, double d, long s, int reps, double pause1, double pausen, int print,
                     double *m) {
    int k = d > 0 ? 3 : 2, r, j;
    double *t = malloc(sizeof(double) * (size_t)(reps * 3)), dact;
    send_cmd(1, CMD_PRTT, n, s, reps + 1, k);
    for (r = -1; r < reps; r++) {
        for (j = 0; j < k; j++) {
            int nn = j == 0 ? 1 : n;
            double dd = j == 2 ? d : 0;
            double v = prtt_once(nn, dd, s, j == 0 ? pause1 : pausen, &dact);
            if (r < 0) continue; /* warm-up */
            t[j * reps + r] = v;
            if (print) row("prtt", nn, dd, s, r, v, dact);
        }
    }
    for (j = 0; j < k; j++) m[j] = median(t + j * reps, reps);
    free(t);
}

/* Receives `reps` times measured on rank `from` and prints them. */
static void print_remote(const char *kind, int n, long s, int reps, int from) {
    double *t = malloc(sizeof(double) * (size_t)reps);
    int r;
    MPI_Recv(t, reps, MPI_DOUBLE, from, TIMES_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (r = 0; r < reps; r++) row(kind, n, 0, s, r, t[r], 0);
    free(t);
}

static void run_or(long s, int reps, double wait) {
    int r;
    send_cmd(1, CMD_OR, 1, s, reps + 1, wait);
    for (r = 0; r < reps + 1; r++) {
        spin_ns(wait);
        MPI_Send(sbuf, (int)s, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(rbuf, 1, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    print_remote("or_call", 1, s, reps, 1);
}

static void run_gs(int n, long s, int reps, double wait) {
    int r, i;
    double t0;
    send_cmd(1, CMD_GS, n, s, reps + 1, wait);
    for (r = 0; r < reps + 1; r++) {
        MPI_Recv(rbuf, 1, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        spin_ns(wait);
        t0 = now_ns();
        for (i = 0; i < n; i++) MPI_Send(sbuf, (int)s, MPI_BYTE, 1, i, MPI_COMM_WORLD);
        if (r > 0) row("gs_burst", n, 0, s, r - 1, now_ns() - t0, 0);
    }
}

static void run_gr(int n, long s, int reps, double wait) {
    int r, i;
    /* Nonblocking: rank 1 probes for the last message before receiving
     * any, so a blocking send above the eager limit (rendezvous) would
     * never complete. */
    MPI_Request *q = malloc(sizeof(MPI_Request) * (size_t)n);
    send_cmd(1, CMD_GR, n, s, reps + 1, wait);
    for (r = 0; r < reps + 1; r++) {
        spin_ns(wait);
        for (i = 0; i < n; i++) MPI_Isend(sbuf, (int)s, MPI_BYTE, 1, i, MPI_COMM_WORLD, &q[i]);
        MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
        MPI_Recv(rbuf, 1, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(q);
    print_remote("gr_burst", n, s, reps, 1);
}

/* One-way times 0 -> 1 (rank 1 returns its receive time). */
static void run_ow(long s, int reps, double wait) {
    int r;
    double t0, t1;
    send_cmd(1, CMD_OW, 1, s, reps + 1, wait);
    for (r = 0; r < reps + 1; r++) {
        spin_ns(wait);
        t0 = now_ns();
        MPI_Send(sbuf, (int)s, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&t1, 1, MPI_DOUBLE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (r > 0) row("oneway", 1, 0, s, r - 1, t1 - t0, 0);
    }
}

/* One-to-many PRTT: n messages round-robin to ranks 1..np-1. */
static void run_1ton(int n, long s, int reps, double wait) {
    int r, i, p;
    double t0;
    for (p = 1; p < np; p++) {
        int share = n / (np - 1) + (p - 1 < n % (np - 1) ? 1 : 0);
        send_cmd(p, CMD_1TON, share, s, reps + 1, wait);
    }
    for (r = 0; r < reps + 1; r++) {
        spin_ns(wait);
        t0 = now_ns();
        for (i = 0; i < n; i++)
            MPI_Send(sbuf, (int)s, MPI_BYTE, 1 + i % (np - 1), i, MPI_COMM_WORLD);
        for (p = 1; p < np; p++)
            MPI_Recv(rbuf, (int)s, MPI_BYTE, MPI_ANY_SOURCE, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (r > 0) row("gs_1toN", n, 0, s, r - 1, now_ns() - t0, 0);
    }
}

/* Many-to-one: k messages from each of ranks 1..np-1 to rank 0. */
static void run_nto1(int k, long s, int reps, double wait) {
    int r, i, p, total = k * (np - 1);
    double t0;
    for (p = 1; p < np; p++) send_cmd(p, CMD_NTO1, k, s, reps + 1, wait);
    for (r = 0; r < reps + 1; r++) {
        spin_ns(wait);
        t0 = now_ns();
        for (p = 1; p < np; p++) MPI_Send(sbuf, 1, MPI_BYTE, p, ACK_TAG, MPI_COMM_WORLD);
        for (i = 0; i < total; i++)
            MPI_Recv(rbuf, (int)s, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (r > 0) row("gr_Nto1", total, 0, s, r - 1, now_ns() - t0, 0);
    }
}

/* ---------------- server side (ranks >= 1) ---------------- */

static void serve(void) {
    cmd_t c;
    int r, i, n, reps;
    long s;
    double *t, t0;
    for (;;) {
        MPI_Recv(&c, 5, MPI_DOUBLE, 0, CMD_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        n = (int)c.n;
        s = (long)c.size;
        reps = (int)c.reps;
        switch ((int)c.kind) {
        case CMD_DONE:
            return;
        case CMD_PRTT: /* wait field = patterns per round: 1, n[, n] */
            for (r = 0; r < reps; r++) {
                int j, k = (int)c.wait;
                for (j = 0; j < k; j++) {
                    int nn = j == 0 ? 1 : n;
                    for (i = 0; i < nn; i++)
                        MPI_Recv(rbuf, (int)s, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, (int)s, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
                }
            }
            break;
        case CMD_OR:
            t = malloc(sizeof(double) * (size_t)reps);
            for (r = 0; r < reps; r++) {
                MPI_Probe(0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                spin_ns(c.wait);
                t0 = now_ns();
                MPI_Recv(rbuf, (int)s, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t[r] = now_ns() - t0;
                MPI_Send(sbuf, 1, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
            }
            /* the first repetition is a warm-up */
            MPI_Send(t + 1, reps - 1, MPI_DOUBLE, 0, TIMES_TAG, MPI_COMM_WORLD);
            free(t);
            break;
        case CMD_OW:
            for (r = 0; r < reps; r++) {
                MPI_Recv(rbuf, (int)s, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t0 = now_ns();
                MPI_Send(&t0, 1, MPI_DOUBLE, 0, ACK_TAG, MPI_COMM_WORLD);
            }
            break;
        case CMD_GS:
            for (r = 0; r < reps; r++) {
                MPI_Send(sbuf, 1, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
                for (i = 0; i < n; i++)
                    MPI_Recv(rbuf, (int)s, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            break;
        case CMD_GR:
            t = malloc(sizeof(double) * (size_t)reps);
            for (r = 0; r < reps; r++) {
                MPI_Probe(0, n - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                spin_ns(c.wait);
                t0 = now_ns();
                for (i = 0; i < n; i++)
                    MPI_Recv(rbuf, (int)s, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t[r] = now_ns() - t0;
                MPI_Send(sbuf, 1, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
            }
            MPI_Send(t + 1, reps - 1, MPI_DOUBLE, 0, TIMES_TAG, MPI_COMM_WORLD);
            free(t);
            break;
        case CMD_1TON:
            for (r = 0; r < reps; r++) {
                for (i = 0; i < n; i++)
                    MPI_Recv(rbuf, (int)s, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)s, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
            }
            break;
        case CMD_NTO1:
            for (r = 0; r < reps; r++) {
                MPI_Recv(rbuf, 1, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                spin_ns(c.wait);
                for (i = 0; i < n; i++) MPI_Send(sbuf, (int)s, MPI_BYTE, 0, i, MPI_COMM_WORLD);
            }
            break;
        default:
            die("unknown command");
        }
    }
}

/* ---------------- driver ---------------- */

static void usage(void) {
    die("usage: loggp-prtt [--size BYTES] [--n N] [--reps R] [--fit-reps R] "
        "[--max-size BYTES] [--budget-us US] [--min-d NS] [--no-fit]");
}

int main(int argc, char **argv) {
    long size = 8, s;
    int n = 16, reps = 100, fit_reps = 10, do_fit = 1, i, p;
    double budget = 4000e3; /* ns: stop growing s once PRTT(n,0,s) exceeds it (see below) */
    double min_d = 0;       /* ns: --min-d (see below) */
    double rtt, gap, d, wait, t_start;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-fit")) { do_fit = 0; continue; }
        if (!v) usage();
        if (!strcmp(a, "--size")) size = atol(v);
        else if (!strcmp(a, "--n")) n = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--fit-reps")) fit_reps = atoi(v);
        else if (!strcmp(a, "--max-size")) max_size = atol(v);
        else if (!strcmp(a, "--budget-us")) budget = atof(v) * 1e3;
        else if (!strcmp(a, "--min-d")) {
            char *end;
            min_d = strtod(v, &end);
            if (*end || !(min_d >= 0) || min_d > 1e9)
                die("--min-d is a delay in ns, 0 to 1e9");
        }
        else usage();
        i++;
    }
    if (np < 2) die("needs at least 2 ranks");
    if (size < 1 || n < 2 || reps < 3 || fit_reps < 3 || max_size < size || max_size > (1L << 30))
        die("bad argument (size>=1, n>=2, reps>=3, fit-reps>=3, size<=max-size<=1GiB)");
    sbuf = malloc((size_t)max_size);
    rbuf = malloc((size_t)max_size);
    if (!sbuf || !rbuf) die("out of memory");
    memset(sbuf, 0x5a, (size_t)max_size);
    memset(rbuf, 0, (size_t)max_size);

    /* Which pair is measured: rank 1 tells rank 0 its processor name. */
    {
        int hl = 0;
        MPI_Get_processor_name(host0, &hl);
        if (rank == 1)
            MPI_Send(host0, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, HOST_TAG, MPI_COMM_WORLD);
        if (rank == 0)
            MPI_Recv(host1, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, HOST_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        host1[MPI_MAX_PROCESSOR_NAME - 1] = 0;
        for (i = 0; host0[i]; i++)
            if (host0[i] == ' ') host0[i] = '_';
        for (i = 0; host1[i]; i++)
            if (host1[i] == ' ') host1[i] = '_';
    }

    if (rank != 0) {
        serve();
        MPI_Finalize();
        return 0;
    }

    t_start = now_ns();
    MPI_Get_library_version(lib, &liblen);
    for (i = 0; i < liblen; i++)
        if (lib[i] == '\n' || lib[i] == '\r') lib[i] = ' ';
    printf("# loggp-prtt 1: raw repetitions; times in ns (CLOCK_MONOTONIC)\n");
    printf("# library: %.120s\n", lib);
    printf("# meta np %d\n# meta n %d\n# meta size %ld\n# meta reps %d\n# meta fit_reps %d\n",
           np, n, size, reps, fit_reps);
    printf("# meta host0 %s\n# meta host1 %s\n", host0, host1);

    /* Pilot: gap and round trip at --size, to choose d and the pause.
     * Start from a generous pause and repeat once if the gap is larger. */
    wait = 20e3;
    for (i = 0; i < 2; i++) {
        double m[3];
        run_prtt(n, 0, size, 15, wait, wait, 0, m);
        rtt = m[0];
        gap = (m[1] - rtt) / (n - 1);
        if (gap < 0) gap = 0;
        if (2 * gap + rtt <= wait) break;
        wait = 2 * gap + rtt + 1e3;
    }
    /* Hoefler §3.2: d = PRTT(1,0,s) guarantees d > G_all on real networks;
     * fall back to a larger d when the gap is large. */
    d = rtt > 1.5 * gap ? rtt : 1.5 * gap;
    wait = 2 * (gap > rtt ? gap : rtt) + 1e3;
    /* --min-d: d at least that many ns (and the pause between repetitions
     * at least 2d + 1 us, as a knob's run with that d has), so that the
     * native machine can be measured at a knob run's d: a rank that spun
     * longer before an MPI_Send spends longer in it, natively too, which
     * eq. 6 reads as o_s (calibrate/README.md). */
    if (min_d > 0) {
        if (d < min_d) d = min_d;
        if (wait < 2 * d + 1e3) wait = 2 * d + 1e3;
        printf("# meta min_d_ns %.0f\n", min_d);
    }
    printf("# meta d_ns %.0f\n# meta wait_ns %.0f\n", d, wait);
    printf("# kind n d_ns size rep t_ns aux_ns\n");

    {
        double m[3];
        run_prtt(n, d, size, reps, wait, wait, 1, m);
    }
    run_or(size, reps, wait);
    run_gs(1, size, reps, wait);
    run_gs(n, size, reps, wait);
    run_gr(1, size, reps, wait);
    run_gr(n, size, reps, wait);
    run_ow(size, 4 * reps, wait);
    if (np >= 3) {
        run_1ton(np - 1, size, reps, wait);
        run_1ton(n * (np - 1), size, reps, wait);
        run_nto1(1, size, reps, wait);
        run_nto1(n, size, reps, wait);
    }
    fflush(stdout);

    /* g and G: PRTT(1,0,s) and PRTT(n,0,s) over a size grid 1, 2, 3, 4,
     * 6, 8, 12, ... (powers of two and 1.5 times them). */
    if (do_fit) {
        double limit = budget;
        for (s = 1; s <= max_size;) {
            double m[3], pn;
            /* the pause before PRTT(n,0,s) covers the link time (s-1)G of
             * the previous round, bounded by the last PRTT(1,0,s) */
            run_prtt(n, 0, s, 1, wait, wait, 0, m); /* sizes the pause */
            run_prtt(n, 0, s, fit_reps, wait + m[0], wait + m[0], 1, m);
            pn = m[1];
            fflush(stdout);
            /* The budget bounds the byte term, not a large per-message gap
             * (a g_s or o_r of 100 us makes every PRTT(n,0,s) ~2 ms): stop
             * once PRTT(n,0,s) exceeds max(budget, 8 PRTT(n,0,1)). */
            if (s == 1 && 8 * pn > limit) limit = 8 * pn;
            if (pn > limit) break;
            /* next grid point: 1,2,3,4,6,8,12,16,... */
            if (s < 4) s++;
            else if ((s & (s - 1)) == 0) s = s + s / 2;
            else s = s / 3 * 4;
        }
    }
    for (p = 1; p < np; p++) send_cmd(p, CMD_DONE, 0, 0, 0, 0);
    printf("# meta seconds %.3f\n", (now_ns() - t_start) / 1e9);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
