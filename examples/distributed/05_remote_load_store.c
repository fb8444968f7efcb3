/* Step 05: remote load and store - a ring shift.
 *
 * A rank reads or writes a peer's window one-sidedly: the peer takes no
 * part.  What makes it safe is the barrier around it: nobody reads before
 * everybody has staged, nobody goes on before everybody has written.
 *
 * The ring runs over P ranks, one per device id of -d: rank r's next rank
 * is (r + 1) % P, and the barrier's signal window has P cells, its shape
 * NR, a dynamic dimension (step 01) that the host sizes from
 * pld_world_size.
 *
 *   --mode load   stage x in my window; barrier; load the next rank's
 *                 window: y[r] = x[(r + 1) % P]
 *   --mode store  store x into the next rank's window; barrier; load my
 *                 own: y[r] = x[(r - 1) % P]
 *
 *   05_remote_load_store -p a2a3sim -d 0,1,2,3 --mode load      prints OK
 *   (any P from 2 to 128; -d 0,1 by default)
 */
#include "example.h"

enum { ROWS = 8, COLS = 32 };
PLD_DYNAMIC(NR); /* the rank count P */

PLD_KERNEL(ring_shift, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS), PLD_WINDOW(sig, INT32, NR),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(store_mode, BOOL)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = (me + 1) % n;
  pld_tile *t = pld_load(k, x, 0, 0, ROWS, COLS);
  if (store_mode) {
    pld_remote_store(k, t, data, next, 0, 0, PLD_ATOMIC_NONE);
    pld_barrier(k, sig); /* every rank's data has landed */
    pld_tile *mine = pld_load(k, pld_local(data), 0, 0, ROWS, COLS);
    pld_store(k, mine, y, 0, 0);
  } else {
    pld_store(k, t, pld_local(data), 0, 0);
    pld_barrier(k, sig); /* every rank has staged its data */
    pld_tile *theirs = pld_remote_load(k, data, next, 0, 0, ROWS, COLS);
    pld_store(k, theirs, y, 0, 0);
    pld_barrier(k, sig); /* nobody leaves while a peer still reads */
  }
}

PLD_DEVICE(ring_device, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS), PLD_WINDOW(sig, INT32, NR),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(store_mode, BOOL)) {
  pld_launch(a, ring_shift, 1, x, data, sig, y, store_mode);
}

PLD_HOST(ring_host, h, PLD_IN(x, FP32, NR, ROWS, COLS),
         PLD_OUT(y, FP32, NR, ROWS, COLS), PLD_SCALAR(store_mode, BOOL)) {
  int n = pld_world_size(h);
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(ROWS, COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, ring_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(ROWS, COLS)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r), store_mode);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, EXAMPLE_MAX_DEVICES,
               "  --mode load|store    load the next rank's window (the "
               "default), or store\n"
               "                       into it\n");
  bool store_mode = example_mode(&ex, "load", "store");
  const int64_t shape[] = {ex.cfg.ndevices, ROWS, COLS};
  pld_tensor x = example_tensor(&ex, 3, shape, 1);
  pld_tensor y = example_tensor(&ex, 3, shape, 0);

  example_run(&ex, ring_host, x, y, store_mode);

  /* load: y[r] = x[(r + 1) % P]; store: y[r] = x[(r - 1) % P]. */
  int bad = example_golden_shift(&ex, x, y, store_mode ? -1 : 1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
