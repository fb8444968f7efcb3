/* Step 15: all-to-all, by hand and builtin, and its "v" form.
 *
 * Each rank has P rows, one for each rank: row d of rank s goes to rank d,
 * where it becomes row s.  Afterwards y[r][s] = x[s][r]: a transpose of
 * (rank, row).  It is how data sharded one way is resharded another (the
 * experts of a mixture-of-experts layer, a distributed FFT).
 *
 *   --mode hand       (the default) every rank pushes row d of x into row
 *                     me of rank d's target window, for every d (its own
 *                     included, starting with its right neighbour so that
 *                     the ranks do not all write to rank 0 first); a
 *                     barrier (step 04's, by hand, example_barrier in
 *                     example.h): once through it, every row has landed.
 *   --mode builtin    pld_all_to_all(k, x, target, sig): the same, with
 *                     the builtin's checks and self-clearing signal window.
 *
 * The "v" form sends a different number of rows to each rank, up to a
 * fixed block of MAX rows: x and the target are [P * MAX, COLS], rank s
 * sends send_counts[d] rows of its block d to rank d, where they land in
 * block s, and rank d learns how many came (recv_counts[s]).  Rows past a
 * count are left as they were (zero here: windows are zero at the start of
 * every run).  Here rank s sends (s + 2 d + 1) mod (MAX + 1) rows to rank
 * d: every count from 0 to MAX occurs.
 *
 *   --mode hand-v     every rank puts its rows to each rank d, then tells
 *                     d how many with a Set notify on cell [0][me] of d's
 *                     hand_sig: the count plus one, so that 0 rows still
 *                     says "done".  Each rank waits until every cell [0][s]
 *                     is set and reads its counts there: the data a sender
 *                     put before its notify is visible once the wait
 *                     returns, and nobody reads a peer's window, so no
 *                     barrier is needed at all.  This is a one-shot
 *                     protocol: the cells keep their counts until the next
 *                     run zeroes the window; a call in a loop would need
 *                     to clear them and a barrier before the next call's
 *                     notifies.
 *   --mode builtin-v  pld_all_to_all_v(k, x, send_counts, target,
 *                     recv_counts, sig): the same Set notifies on cells
 *                     of its own, which it clears, and counts checked
 *                     against MAX before anything moves.
 *
 *   host     the target window, hand_sig [1, P], sig
 *            [PLD_SIGNAL_CELLS(P, 1)]; P and P * MAX are dynamic
 *            dimensions.
 *   AICPU    launches the kernel on one block.
 *   kernel   the all-to-all; y = its target window.
 *
 *   15_all_to_all -p a2a3sim -d 0,1,2,3 --mode builtin-v      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { SIZE = 2503, MAX = 6, COLS = 417 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NRM); /* NR * MAX */
PLD_DYNAMIC(NS);  /* PLD_SIGNAL_CELLS(NR, 1) */

PLD_KERNEL(all_to_all, k, PLD_IN(x, FP32, NR, SIZE),
           PLD_WINDOW(target, FP32, NR, SIZE),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  pld_comm comm = pld_window_comm(target);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  if (builtin) {
    pld_all_to_all(k, x, target, sig);
  } else {
    for (int32_t i = 1; i <= n; i++) {
      int32_t d = (me + i) % n;
      const pld_xfer row = {
          .src_row = d, .dst_row = me, .rows = 1, .cols = SIZE};
      pld_put(k, target, d, x, &row); /* my row d, to row me of rank d */
    }
    example_barrier(k, hand_sig, 0, 1); /* every row has landed */
  }
  pld_get(k, y, me, target, NULL); /* y = my target */
}

PLD_KERNEL(all_to_all_v, k, PLD_IN(x, FP32, NRM, COLS),
           PLD_IN(send_counts, INT32, NR), PLD_WINDOW(target, FP32, NRM, COLS),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, NRM, COLS), PLD_OUT(recv_counts, INT32, NR),
           PLD_SCALAR(builtin, BOOL)) {
  pld_comm comm = pld_window_comm(target);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  if (builtin) {
    pld_all_to_all_v(k, x, send_counts, target, recv_counts, sig);
  } else {
    for (int32_t i = 1; i <= n; i++) {
      int32_t d = (me + i) % n;
      int32_t rows = (int32_t)pld_read(k, send_counts, PLD_AT(d));
      const pld_xfer block = {
          .src_row = d * MAX, .dst_row = me * MAX, .rows = rows, .cols = COLS};
      if (rows > 0) /* rows = 0 would mean all of x */
        pld_put(k, target, d, x, &block);
      pld_notify(k, hand_sig, d, PLD_AT(0, me), rows + 1, PLD_NOTIFY_SET);
    }
    for (int32_t s = 0; s < n; s++) {
      pld_wait(k, hand_sig, PLD_AT(0, s), 1, PLD_WAIT_GE);
      double count = pld_read(k, pld_local(hand_sig), PLD_AT(0, s)) - 1;
      pld_write(k, recv_counts, PLD_AT(s), count);
    }
  }
  pld_get(k, y, me, target, NULL); /* y = my target */
}

PLD_DEVICE(all_to_all_device, a, PLD_IN(x, FP32, NR, SIZE),
           PLD_WINDOW(target, FP32, NR, SIZE),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  pld_launch(a, all_to_all, 1, x, target, hand_sig, sig, y, builtin);
}

PLD_DEVICE(all_to_all_v_device, a, PLD_IN(x, FP32, NRM, COLS),
           PLD_IN(send_counts, INT32, NR), PLD_WINDOW(target, FP32, NRM, COLS),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, NRM, COLS), PLD_OUT(recv_counts, INT32, NR),
           PLD_SCALAR(builtin, BOOL)) {
  pld_launch(a, all_to_all_v, 1, x, send_counts, target, hand_sig, sig, y,
             recv_counts, builtin);
}

PLD_HOST(all_to_all_host, h, PLD_IN(x, FP32, NR, NR, SIZE),
         PLD_OUT(y, FP32, NR, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf target =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, SIZE));
  pld_window_buf hand_sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, all_to_all_device, r, pld_slice(h, x, r),
                 pld_window_view(h, target, PLD_FP32, PLD_SHAPE(n, SIZE)),
                 pld_window_view(h, hand_sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, r), builtin);
}

PLD_HOST(all_to_all_v_host, h, PLD_IN(x, FP32, NR, NRM, COLS),
         PLD_IN(send_counts, INT32, NR, NR), PLD_OUT(y, FP32, NR, NRM, COLS),
         PLD_OUT(recv_counts, INT32, NR, NR), PLD_SCALAR(builtin, BOOL)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf target =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n * MAX, COLS));
  pld_window_buf hand_sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, all_to_all_v_device, r, pld_slice(h, x, r),
                 pld_slice(h, send_counts, r),
                 pld_window_view(h, target, PLD_FP32, PLD_SHAPE(n * MAX, COLS)),
                 pld_window_view(h, hand_sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, r), pld_slice(h, recv_counts, r), builtin);
}

/* Rows rank s sends to rank d in the v form: 0 to MAX. */
static int32_t count(int64_t s, int64_t d) {
  return (int32_t)((s + 2 * d + 1) % (MAX + 1));
}

/* want[r][s] = x[s][r], in double. */
static void reference(pld_tensor x, int32_t unused, double *want) {
  (void)unused;
  const float *xs = pld_tensor_data(x);
  int64_t n = pld_tensor_dim(x, 0);
  for (int64_t r = 0; r < n; r++)
    for (int64_t s = 0; s < n; s++)
      for (int64_t i = 0; i < SIZE; i++)
        want[(r * n + s) * SIZE + i] = (double)xs[(s * n + r) * SIZE + i];
}

/* The v form: row j of block s of y[r] = row j of block r of x[s] for the
 * count(s, r) rows sent, 0 past them. */
static void reference_v(pld_tensor x, int32_t unused, double *want) {
  (void)unused;
  const float *xs = pld_tensor_data(x);
  int64_t n = pld_tensor_dim(x, 0), block = MAX * COLS;
  for (int64_t r = 0; r < n; r++)
    for (int64_t s = 0; s < n; s++)
      for (int64_t i = 0; i < block; i++)
        want[(r * n + s) * block + i] =
            i / COLS < count(s, r) ? (double)xs[(s * n + r) * block + i] : 0;
}

/* hand and builtin. */
static void run(struct example *ex, bool builtin) {
  const int64_t n = ex->cfg.ndevices, shape[] = {n, n, SIZE};
  pld_tensor x = example_tensor(ex, 3, shape, 0);
  pld_tensor y = example_tensor(ex, 3, shape, 0);
  pld_program *prog = example_compile(ex, all_to_all_host, x, y, builtin);
  example_runs(ex, prog, x, y, "all-to-all", reference, 0, false, x, y,
               builtin);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* recv[r][s] = count(s, r): every rank learnt how many rows each sent it
 * (in the last run; both send the same counts). */
static void check_counts(struct example *ex, pld_tensor recv) {
  const int32_t *got = pld_tensor_data(recv);
  int64_t n = pld_tensor_dim(recv, 0);
  for (int64_t i = 0; i < n * n; i++)
    if (got[i] != count(i % n, i / n)) {
      printf("FAILED: all-to-all-v: rank %lld learnt %d rows from rank "
             "%lld, which sent %d\n",
             (long long)(i / n), (int)got[i], (long long)(i % n),
             (int)count(i % n, i / n));
      ex->failed++;
      return;
    }
}

/* hand-v and builtin-v: the rows as run() checks them, then the counts. */
static void run_v(struct example *ex, bool builtin) {
  const int64_t n = ex->cfg.ndevices, shape[] = {n, n * MAX, COLS};
  pld_tensor x = example_tensor(ex, 3, shape, 0);
  pld_tensor y = example_tensor(ex, 3, shape, 0);
  const int64_t counts_shape[] = {n, n};
  pld_tensor send, recv;
  example_check(pld_tensor_create(PLD_INT32, 2, counts_shape, &send),
                "pld_tensor_create");
  example_check(pld_tensor_create(PLD_INT32, 2, counts_shape, &recv),
                "pld_tensor_create");
  int32_t *sends = pld_tensor_data(send);
  for (int64_t s = 0; s < n; s++)
    for (int64_t d = 0; d < n; d++)
      sends[s * n + d] = count(s, d);
  pld_program *prog =
      example_compile(ex, all_to_all_v_host, x, send, y, recv, builtin);
  example_runs(ex, prog, x, y, "all-to-all-v", reference_v, 0, false, x, send,
               y, recv, builtin);
  check_counts(ex, recv);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(send);
  pld_tensor_destroy(recv);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv,
                     "  --mode hand|builtin|hand-v|builtin-v\n"
                     "                       hand: built from signals and "
                     "one-sided transfers (the\n"
                     "                       default); builtin: "
                     "pld_all_to_all; -v: a count of rows\n"
                     "                       per peer, by hand or "
                     "pld_all_to_all_v\n");
  int mode = example_mode_of(&ex, "hand", "builtin", "hand-v", "builtin-v");
  if (mode < 2)
    run(&ex, mode == 1);
  else
    run_v(&ex, mode == 3);
  return example_done(&ex);
}
