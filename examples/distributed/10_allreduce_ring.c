/* Step 10: allreduce by hand around a ring.
 *
 * Step 09 moves 2 (P-1)/P N per rank but synchronises everybody with
 * everybody.  A ring moves the same amount and synchronises each rank with
 * its neighbours only: rank me talks to left = me-1 and right = me+1
 * (mod P), pulling from the left.  The row is cut into P chunks as in step
 * 09, and the data goes round in 2 (P-1) rounds:
 *
 *   reduce-scatter, rounds s = 1 .. P-1: add the left's partial sum of
 *     chunk (me - s - 1) mod P to mine.  Chunk c starts at rank c+1 and
 *     travels right, each rank adding its own part, until rank c adds the
 *     last: after P-1 rounds rank me holds the whole sum of chunk me.
 *   all-gather, rounds s = 1 .. P-1: copy chunk (me - s) mod P from the
 *     left, which has its sum (its own, or received the round before).
 *
 * Each round is a hand-over between neighbours, on its own row of a signal
 * window sig [2 (P-1) + 1, P]: after writing its chunk of round t a rank
 * notifies its right neighbour on row t; before reading from its left
 * neighbour in round t+1 it waits on row t for the left's notify.  Row 0
 * says "my input is staged" (without it, round 1 could read a window the
 * left has not written yet).  Why no rank overwrites a chunk the right
 * still reads: a rank reaches round t only once its left finished round
 * t-1, which needed the left's left at t-2, ... so the right itself (P-1
 * hops to the left) has finished round t-(P-1), its last read of anything
 * the rank overwrites in round t.  The last row is a barrier (step 04's,
 * by hand, example_barrier in example.h): no rank returns, and reuses its
 * window, while its right neighbour still copies from it.
 *
 *   host     windows `data` (N per rank) and sig [2 (P-1) + 1, P]: both P
 *            and the row count are dynamic dimensions.
 *   AICPU    launches the kernel on one block.
 *   kernel   the rounds above, a tile at a time (remote load, add, store)
 *            in the reduce-scatter, a pld_get per chunk in the all-gather.
 *
 * Chunk c is summed in ring order, ranks c+1, c+2, ..., c, by the ranks
 * in turn, then copied as bits: every rank ends with the same bits.  With
 * random inputs they may differ by an ulp from steps 08-09's (which add
 * ranks 0 .. P-1), never between ranks; with integer-valued inputs every
 * step gives the same bits.
 *
 *   10_allreduce_ring -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 20011 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(ROWS); /* 2 (NR - 1) + 1 */

PLD_KERNEL(allreduce_ring, k, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, ROWS, NR), PLD_OUT(y, FP32, N)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t left = (me + n - 1) % n, right = (me + 1) % n;
  const int32_t rounds = 2 * (n - 1);
  pld_put(k, data, me, x, NULL); /* stage x in my window */
  pld_notify(k, sig, right, PLD_AT(0, me), 1, PLD_NOTIFY_ADD);
  for (int32_t t = 1; t <= rounds; t++) {
    pld_wait(k, sig, PLD_AT(t - 1, left), 1, PLD_WAIT_GE); /* left is done */
    int64_t c0, c1;
    if (t < n) { /* reduce-scatter: mine += left's partial, tile by tile */
      example_chunk(N, ((me - t - 1) % n + n) % n, n, &c0, &c1);
      for (int64_t at = c0; at < c1; at += EXAMPLE_TILE) {
        int32_t len = example_tile_len(at, c1);
        pld_tile *sum = pld_remote_load(k, data, left, 0, at, 1, len);
        pld_tile *mine = pld_load(k, pld_local(data), 0, at, 1, len);
        pld_add(k, sum, sum, mine);
        pld_store(k, sum, pld_local(data), 0, at);
        pld_tile_free(k, mine);
        pld_tile_free(k, sum);
      }
    } else { /* all-gather: copy the left's finished chunk */
      example_chunk(N, ((me - (t - n + 1)) % n + n) % n, n, &c0, &c1);
      pld_xfer chunk = {
          .src_col = c0, .dst_col = c0, .rows = 1, .cols = (int32_t)(c1 - c0)};
      if (c1 > c0)
        pld_get(k, pld_local(data), left, data, &chunk);
    }
    if (t < rounds) /* hand over to the right */
      pld_notify(k, sig, right, PLD_AT(t, me), 1, PLD_NOTIFY_ADD);
  }
  example_barrier(k, sig, rounds, 1); /* the right has read its last */
  pld_get(k, y, me, data, NULL);      /* y = my window */
}

PLD_DEVICE(allreduce_device, a, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, ROWS, NR), PLD_OUT(y, FP32, N)) {
  pld_launch(a, allreduce_ring, 1, x, data, sig, y);
}

PLD_HOST(allreduce_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, NR, N)) {
  int n = pld_world_size(h), rows = 2 * (n - 1) + 1;
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(rows, n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, allreduce_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(rows, n)),
                 pld_slice(h, y, r));
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  return example_allreduce_main(&ex, allreduce_host, N, NULL);
}
