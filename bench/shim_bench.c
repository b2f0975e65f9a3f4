/* shim_bench: micro-benchmark of the shim's own cost and accuracy.
 * Two ranks. Prints one line of key=value medians (microseconds):
 *   half_rtt_8   8-byte ping-pong, half round trip (median of 4000)
 *   o_s          time inside MPI_Send of 8 B (median of 2000)
 *   o_r          time inside MPI_Recv of an 8-B message that arrived long ago
 *                (receiver waits WAIT_US + L before receiving; median of 300)
 *   gap          (PRTT(100,0,8) - PRTT(1,0,8)) / 99, Hoefler's PRTT method
 *   half_rtt_1m  1 MiB ping-pong, half round trip (median of 60)
 *   rate_8       8-byte message rate, osu_mbw_mr style: a window of 64
 *                Isends (rank 0) against 64 posted Irecvs (rank 1), Waitall,
 *                a 1-byte acknowledgement; messages per second (median of
 *                300 windows), reported in millions
 *   inband_rtt_16, inband_rtt_32  the floor any in-band piggyback has, in
 *                the library alone: half_rtt_8 with the payload behind a 16-
 *                or 32-byte header in one message of 24 or 40 bytes, copied
 *                in and out as a staged message is (us). Meaningful natively
 *   inband_16, inband_32  the ceiling any in-band piggyback has, in the
 *                library alone: rate_8's windows with each 8-byte payload
 *                carried behind a 16- or 32-byte header (the shim's) in one
 *                message of 24 or 40 bytes, copied in and out as a staged
 *                message is; millions of messages per second. Meaningful
 *                natively (under the shim they carry its header too)
 *   bw_16k       streaming bandwidth at 16 KiB, osu_bw style: a window of 64
 *                Isends of 16 KiB (the shim's staging threshold,
 *                LOGGP_INLINE_MAX: the largest staged message), Waitall,
 *                acknowledgement; GB/s (median of 100)
 *   bw_1m        streaming bandwidth, osu_bw style: a window of 16 Isends of
 *                1 MiB, Waitall, acknowledgement; GB/s (median of 40)
 *   send_ns      time per MPI_Send of 8 B in a burst of 2000 that the
 *                receiver takes only afterwards (fastest of 30 bursts)
 *   recv_ns      time per MPI_Recv of 8 B when all 2000 have arrived
 *                (fastest of 30 bursts): with send_ns, the shim's own
 *                cost per message on each side
 *   call_ns      nanoseconds per MPI_Test on MPI_REQUEST_NULL, an almost
 *                empty MPI call (median of 9 batches of 200000): the cost
 *                of the interposed wrapper itself
 * and spread as p10/p90 for half_rtt_8. Run it natively and under the shim. */
#include <mpi.h>
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double pct(double *v, int n, double p) {
  qsort(v, n, sizeof(double), cmp);
  return v[(int)(p * (n - 1))];
}
static void spin_us(double us) {
  double end = now_us() + us;
  while (now_us() < end) {
  }
}

/* Message rate, osu_mbw_mr style: 300 windows (after 20 to warm up) of 64
 * 8-byte Isends (rank 0) against 64 posted Irecvs (rank 1), Waitall, a
 * 1-byte acknowledgement; the median in millions of messages per second.
 * With `hdr` > 0 each payload travels behind `hdr` header bytes in one
 * message, copied in before the send and out after the receive, as a
 * staged message is. Tags 7 and 8. */
static double window_rate(int rank, int hdr) {
  enum { W = 64, NW = 300 };
  static char payload[W][8], stage[W][8 + 32];
  MPI_Request r[W];
  double t[NW];
  char ack = 0;
  int n = 8 + hdr;
  for (int i = -20; i < NW; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    if (rank == 0) {
      for (int j = 0; j < W; j++) {
        char *p = payload[j];
        if (hdr > 0) {
          memset(stage[j], j, hdr);
          memcpy(stage[j] + hdr, payload[j], 8);
          p = stage[j];
        }
        MPI_Isend(p, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[j]);
      }
      MPI_Waitall(W, r, MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      for (int j = 0; j < W; j++) MPI_Irecv(hdr > 0 ? stage[j] : payload[j], n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[j]);
      MPI_Waitall(W, r, MPI_STATUSES_IGNORE);
      if (hdr > 0)
        for (int j = 0; j < W; j++) memcpy(payload[j], stage[j] + hdr, 8);
      MPI_Send(&ack, 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
    }
    if (i >= 0) t[i] = W / (now_us() - t0); /* messages per us = millions/s */
  }
  return pct(t, NW, 0.5);
}

/* Half round trip of an 8-byte ping-pong (median of `n`, after a warm-up),
 * with `hdr` > 0 the payload behind `hdr` header bytes in one message,
 * copied in before each send and out after each receive as a staged
 * message is (tag 1). Of `hdr` > 0 only the native figure means anything:
 * the floor an in-band piggyback of that size leaves. */
static double pingpong_8(int rank, int hdr, int n, double *t, double *p10, double *p90) {
  static char payload[8], stage[8 + 32];
  int len = 8 + hdr;
  char *p = hdr > 0 ? stage : payload;
  for (int i = -200; i < n; i++) {
    double t0 = now_us();
    if (rank == 0) {
      if (hdr > 0) {
        memset(stage, i & 0xff, hdr);
        memcpy(stage + hdr, payload, 8);
      }
      MPI_Send(p, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(p, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (hdr > 0) memcpy(payload, stage + hdr, 8);
    } else {
      MPI_Recv(p, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (hdr > 0) {
        memcpy(payload, stage + hdr, 8);
        memset(stage, i & 0xff, hdr);
        memcpy(stage + hdr, payload, 8);
      }
      MPI_Send(p, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
    if (i >= 0) t[i] = (now_us() - t0) / 2;
  }
  if (p10) *p10 = pct(t, n, 0.1);
  if (p90) *p90 = pct(t, n, 0.9);
  return pct(t, n, 0.5);
}

/* Streaming bandwidth, osu_bw style: `reps` windows (after a few to warm
 * up) of `w` Isends of `size` bytes against as many Irecvs, Waitall, a
 * 1-byte acknowledgement; the median in GB/s. Tags `tag` and `tag` + 1. */
static double stream(int rank, int size, int w, int reps, int tag) {
  char *buf = calloc((size_t)w, (size_t)size), ack = 0;
  MPI_Request *r = malloc(sizeof(MPI_Request) * (size_t)w);
  double *t = malloc(sizeof(double) * (size_t)reps);
  for (int i = -3; i < reps; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    for (int j = 0; j < w; j++) {
      char *p = buf + (size_t)j * (size_t)size;
      if (rank == 0) MPI_Isend(p, size, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &r[j]);
      else MPI_Irecv(p, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r[j]);
    }
    MPI_Waitall(w, r, MPI_STATUSES_IGNORE);
    if (rank == 0) MPI_Recv(&ack, 1, MPI_BYTE, 1, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(&ack, 1, MPI_BYTE, 0, tag + 1, MPI_COMM_WORLD);
    if (i >= 0) t[i] = (double)w * size / (now_us() - t0) / 1e3; /* GB/s */
  }
  double bw = pct(t, reps, 0.5);
  free(buf);
  free(r);
  free(t);
  return bw;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "shim_bench: needs exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double wait_us = argc > 1 ? atof(argv[1]) : 300.0;
  const int N8 = 4000, NOS = 2000, NOR = 300, NBURST = 100, NG = 200, N1M = 60;
  char small[8] = {0}, ack = 0;
  int big_n = 1 << 20;
  char *big = calloc(big_n, 1);
  double *t = malloc(sizeof(double) * N8);
  MPI_Status st;

  /* 8-byte ping-pong, and the same behind a 16- and a 32-byte header. */
  double hr8_10, hr8_90;
  double hr8 = pingpong_8(rank, 0, N8, t, &hr8_10, &hr8_90);
  double hr8_in[2] = {pingpong_8(rank, 16, N8, t, NULL, NULL), pingpong_8(rank, 32, N8, t, NULL, NULL)};

  /* o_s: time in MPI_Send; the receiver acknowledges each message. */
  for (int i = 0; i < NOS; i++) {
    if (rank == 0) {
      double t0 = now_us();
      MPI_Send(small, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
      t[i] = now_us() - t0;
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &st);
    } else {
      MPI_Recv(small, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st);
      MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
  }
  double os = rank == 0 ? pct(t, NOS, 0.5) : 0;

  /* o_r: rank 1 receives a message that arrived long ago. */
  for (int i = 0; i < NOR; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      MPI_Send(small, 8, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
    } else {
      spin_us(wait_us);
      double t0 = now_us();
      MPI_Recv(small, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &st);
      t[i] = now_us() - t0;
    }
  }
  double orr = 0;
  if (rank == 1) {
    orr = pct(t, NOR, 0.5);
    MPI_Send(&orr, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&orr, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, &st);
  }

  /* gap: PRTT(n,0,8) with n = 1 and NBURST (Hoefler et al. 2007, sec. 3). */
  double prtt[2];
  int ns[2] = {1, NBURST};
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < NG; i++) {
      double t0 = now_us();
      if (rank == 0) {
        for (int j = 0; j < ns[k]; j++) MPI_Send(small, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        MPI_Recv(small, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &st);
      } else {
        for (int j = 0; j < ns[k]; j++) MPI_Recv(small, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
        MPI_Send(small, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
      }
      t[i] = now_us() - t0;
    }
    prtt[k] = pct(t, NG, 0.5);
  }
  double gap = (prtt[1] - prtt[0]) / (NBURST - 1);

  /* 1 MiB ping-pong. */
  for (int i = -5; i < N1M; i++) {
    double t0 = now_us();
    if (rank == 0) {
      MPI_Send(big, big_n, MPI_BYTE, 1, 6, MPI_COMM_WORLD);
      MPI_Recv(big, big_n, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &st);
    } else {
      MPI_Recv(big, big_n, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &st);
      MPI_Send(big, big_n, MPI_BYTE, 0, 6, MPI_COMM_WORLD);
    }
    if (i >= 0) t[i] = (now_us() - t0) / 2;
  }
  double hr1m = pct(t, N1M, 0.5);

  /* Message rate (osu_mbw_mr's pattern), and the same windows with each
   * payload behind a header in one message. */
  double rate8 = window_rate(rank, 0);
  double inband[2] = {window_rate(rank, 16), window_rate(rank, 32)};

  /* Streaming bandwidth (osu_bw): windows of 64 messages of 16 KiB, and
   * of 16 of 1 MiB. */
  double bw16k = stream(rank, 16384, 64, 100, 13);
  double bw1m = stream(rank, big_n, 16, 40, 9);

  /* The shim's own cost per message on each side: a burst of sends that
   * the receiver takes afterwards, then the receives of what has arrived. */
  const int NBURST2 = 2000, NREP = 30;
  double best_s = 1e30, best_r = 1e30;
  for (int k = 0; k < NREP; k++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    if (rank == 0) {
      for (int j = 0; j < NBURST2; j++) MPI_Send(small, 8, MPI_BYTE, 1, 11, MPI_COMM_WORLD);
      double d = (now_us() - t0) * 1e3 / NBURST2;
      if (d < best_s) best_s = d;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_us();
    if (rank == 1) {
      for (int j = 0; j < NBURST2; j++) MPI_Recv(small, 8, MPI_BYTE, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      double d = (now_us() - t0) * 1e3 / NBURST2;
      if (d < best_r) best_r = d;
    }
  }
  if (rank == 1) MPI_Send(&best_r, 1, MPI_DOUBLE, 0, 12, MPI_COMM_WORLD);
  else MPI_Recv(&best_r, 1, MPI_DOUBLE, 1, 12, MPI_COMM_WORLD, &st);

  /* Wrapper cost: an almost empty call, many times. */
  double batches[9];
  for (int b = 0; b < 9; b++) {
    MPI_Request nul = MPI_REQUEST_NULL;
    int flag;
    double t0 = now_us();
    for (int i = 0; i < 200000; i++) MPI_Test(&nul, &flag, MPI_STATUS_IGNORE);
    batches[b] = (now_us() - t0) * 1e3 / 200000;
  }
  double call_ns = pct(batches, 9, 0.5);
  if (rank == 0)
    printf("half_rtt_8=%.4f half_rtt_8_p10=%.4f half_rtt_8_p90=%.4f o_s=%.4f o_r=%.4f gap=%.4f half_rtt_1m=%.3f "
           "inband_rtt_16=%.4f inband_rtt_32=%.4f rate_8=%.4f inband_16=%.4f inband_32=%.4f bw_16k=%.3f bw_1m=%.3f send_ns=%.1f recv_ns=%.1f call_ns=%.2f\n",
           hr8, hr8_10, hr8_90, os, orr, gap, hr1m, hr8_in[0], hr8_in[1], rate8, inband[0], inband[1], bw16k, bw1m, best_s, best_r, call_ns);
  free(big);
  free(t);
  MPI_Finalize();
  return 0;
}
