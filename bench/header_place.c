/* header_place: where a per-message header could travel, without the
 * shim. An 8-byte ping-pong (np = 2, one host), its payload sent
 *   plain     alone (native);
 *   inband    behind a 16-byte header in one 24-byte message, copied in
 *             before the send and out after the receive (as the shim's
 *             compact header travels);
 *   outband   alone, with a 16-byte header written to a ring in shared
 *             memory (MPI_Win_allocate_shared) before the send and read
 *             by the receiver after its receive: a header outside the
 *             message, as a same-host side channel would carry it.
 * Each mode's half round trip, in 15 interleaved batches of 2000 round
 * trips; prints per mode "best/median" in ns (and on stderr how many
 * headers the receiver read wrong: none, or the ring is broken).
 *
 *   mpirun -np 2 header_place
 *
 * Whatever the header's place, its bytes must move between the cores; the
 * question is what that costs next to the message's own. */
#include <mpi.h>
#include "util.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint64_t d;
  uint32_t seq, src;
} hdr_t;

enum { RING = 256, BATCHES = 15, ROUNDS = 2000, MODES = 3 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (r == 0) fprintf(stderr, "header_place: needs exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nn;
  MPI_Comm_size(node, &nn);
  if (nn != 2) {
    if (r == 0) fprintf(stderr, "header_place: the two ranks must share a host\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hdr_t *mine, *peer;
  MPI_Win win;
  MPI_Win_allocate_shared(sizeof(hdr_t) * RING, 64, MPI_INFO_NULL, node, &mine, &win);
  MPI_Aint wsz;
  int du;
  MPI_Win_shared_query(win, 1 - r, &wsz, &du, &peer);
  static char b[8], st[24];
  static double res[MODES][BATCHES];
  uint64_t seq = 0;
  long bad = 0;
  for (int k = 0; k < BATCHES; k++)
    for (int mode = 0; mode < MODES; mode++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_ns();
      for (int i = 0; i < ROUNDS; i++)
        for (int sender = 0; sender < 2; sender++, seq++) {
          if (r == sender) {
            if (mode == 0) {
              MPI_Send(b, 8, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD);
            } else if (mode == 1) {
              memset(st, i, 16);
              memcpy(st + 16, b, 8);
              MPI_Send(st, 24, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD);
            } else {
              hdr_t *h = &mine[seq % RING];
              h->d = (uint64_t)i;
              h->seq = (uint32_t)seq;
              h->src = (uint32_t)r;
              __atomic_thread_fence(__ATOMIC_RELEASE);
              MPI_Send(b, 8, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD);
            }
          } else {
            if (mode == 0) {
              MPI_Recv(b, 8, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (mode == 1) {
              MPI_Recv(st, 24, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
              memcpy(b, st + 16, 8);
            } else {
              MPI_Recv(b, 8, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
              __atomic_thread_fence(__ATOMIC_ACQUIRE);
              /* Used before the receive counts as done, as a gate would
               * use it (a value never used would not be loaded at all). */
              const hdr_t *h = &peer[seq % RING];
              if (h->seq != (uint32_t)seq || h->d != (uint64_t)i) bad++;
            }
          }
        }
      res[mode][k] = (now_ns() - t0) / (2.0 * ROUNDS);
    }
  long bad_all = 0;
  MPI_Reduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (r == 0) {
    if (bad_all) fprintf(stderr, "header_place: %ld headers read wrong\n", bad_all);
    const char *name[MODES] = {"plain", "inband", "outband"};
    for (int m = 0; m < MODES; m++) {
      qsort(res[m], BATCHES, sizeof(double), cmp);
      printf("%s=%.0f/%.0f%s", name[m], res[m][0], res[m][BATCHES / 2], m + 1 < MODES ? " " : "\n");
    }
  }
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return 0;
}
