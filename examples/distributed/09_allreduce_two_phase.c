/* Step 09: allreduce by hand in two phases, reduce-scatter then
 * all-gather.
 *
 * Step 08's mesh moves (P-1) N elements into every rank: each rank adds up
 * the whole row.  Here the row is cut into P chunks, chunk c being
 * [N c / P, N (c + 1) / P) (N need not be a multiple of P: chunks differ
 * by one element, and each has its own ragged last tile), and the work is
 * shared out:
 *
 *   phase 1, reduce-scatter: rank c adds up chunk c of every rank, in rank
 *            order 0, 1, ..., P-1, and stores the sum into chunk c of its
 *            own window.  Nobody else reads my chunk me, so the store
 *            needs no barrier before it (unlike step 08's).
 *   phase 2, all-gather: every rank gets each reduced chunk c from rank c
 *            (pld_get), into chunk c of its own window.
 *
 * Each rank reads (P-1)/P of N in each phase: 2 (P-1)/P N in all instead
 * of (P-1) N, for three barriers (by hand, as in step 08):
 *
 *   A  every rank has staged its input: phase 1 may read it;
 *   B  every chunk is reduced: phase 2 may read the sums, and overwrite
 *      chunks the reduce-scatter read;
 *   C  every rank has its copies: nobody leaves, and reuses its window,
 *      while a peer still reads its chunk.
 *
 *   host     windows `data` (N per rank) and sig [1, P]; one dispatch per
 *            rank; P is a dynamic dimension.
 *   AICPU    launches the kernel on one block.
 *   kernel   stage, A, reduce chunk me, B, get the others, C, y = window.
 *
 * Every chunk is summed in the same order by the one rank that owns it,
 * and copied as bits to the others: every rank ends with the same bits,
 * the same as step 08's.
 *
 *   09_allreduce_two_phase -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 20011 };
PLD_DYNAMIC(NR);

PLD_KERNEL(allreduce_two_phase, k, PLD_IN(x, FP32, N),
           PLD_WINDOW(data, FP32, N), PLD_WINDOW(sig, INT32, 1, NR),
           PLD_OUT(y, FP32, N)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int64_t c0, c1;
  pld_put(k, data, me, x, NULL); /* stage x in my window */
  example_barrier(k, sig, 0, 1); /* A: every input is staged */

  /* Phase 1: my chunk, summed over the ranks, into my window. */
  example_chunk(N, me, n, &c0, &c1);
  for (int64_t at = c0; at < c1; at += EXAMPLE_TILE) {
    pld_tile *sum =
        example_reduce_tile(k, data, 0, at, example_tile_len(at, c1));
    pld_store(k, sum, pld_local(data), 0, at);
    pld_tile_free(k, sum);
  }
  example_barrier(k, sig, 0, 2); /* B: every chunk is reduced */

  /* Phase 2: chunk q from rank q, for every q but me. */
  for (int32_t q = 0; q < n; q++) {
    example_chunk(N, q, n, &c0, &c1);
    pld_xfer chunk = {
        .src_col = c0, .dst_col = c0, .rows = 1, .cols = (int32_t)(c1 - c0)};
    if (q != me && c1 > c0)
      pld_get(k, pld_local(data), q, data, &chunk);
  }
  example_barrier(k, sig, 0, 3); /* C: everyone has every chunk */
  pld_get(k, y, me, data, NULL); /* y = my window */
}

PLD_DEVICE(allreduce_device, a, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, 1, NR), PLD_OUT(y, FP32, N)) {
  pld_launch(a, allreduce_two_phase, 1, x, data, sig, y);
}

PLD_HOST(allreduce_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, NR, N)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, allreduce_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_slice(h, y, r));
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  return example_allreduce_main(&ex, allreduce_host, N, NULL);
}
