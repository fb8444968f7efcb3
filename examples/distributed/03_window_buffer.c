/* Step 03: window buffers.
 *
 * A window buffer is memory every rank has a copy of, with the same layout
 * everywhere, that peers can reach (steps 05 and 06 reach it).  The host
 * allocates it once, before its rank loop, and passes each rank a typed
 * view of it; the kernel sees a pld_window, whose own copy it reads and
 * writes like a tensor through pld_local.  Here every rank of the P stores
 * its x into its own window and loads it back: y = x.  The window has the
 * shape of one rank's slice whatever P; only the host's tensors,
 * [NR, ROWS, COLS], grow with it (NR, the rank count, a dynamic dimension
 * as in step 01).
 *
 *   03_window_buffer -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P from 2 to 128; -d 0,1 by default)
 */
#include "example.h"

enum { ROWS = 16, COLS = 64 };
PLD_DYNAMIC(NR);

PLD_KERNEL(window_roundtrip, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(win, FP32, ROWS, COLS), PLD_OUT(y, FP32, ROWS, COLS)) {
  pld_tile *t = pld_load(k, x, 0, 0, ROWS, COLS);
  pld_store(k, t, pld_local(win), 0, 0); /* into this rank's window */
  pld_tile *back = pld_load(k, pld_local(win), 0, 0, ROWS, COLS);
  pld_store(k, back, y, 0, 0);
}

PLD_DEVICE(window_device, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(win, FP32, ROWS, COLS), PLD_OUT(y, FP32, ROWS, COLS)) {
  pld_launch(a, window_roundtrip, 1, x, win, y);
}

PLD_HOST(window_host, h, PLD_IN(x, FP32, NR, ROWS, COLS),
         PLD_OUT(y, FP32, NR, ROWS, COLS)) {
  /* Once, before the loop: one buffer, a copy per rank.  Allocated inside
   * the loop, each rank would get a buffer of its own that no peer shares. */
  pld_window_buf buf = pld_window_alloc(h, ROWS * COLS * sizeof(float));
  for (int r = 0; r < pld_world_size(h); r++) {
    pld_window win = pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(ROWS, COLS));
    pld_dispatch(h, window_device, r, pld_slice(h, x, r), win,
                 pld_slice(h, y, r));
  }
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, EXAMPLE_MAX_DEVICES, NULL);
  const int64_t shape[] = {ex.cfg.ndevices, ROWS, COLS};
  pld_tensor x = example_tensor(&ex, 3, shape, 1);
  pld_tensor y = example_tensor(&ex, 3, shape, 0);

  example_run(&ex, window_host, x, y);

  int bad = example_golden(&ex, y, pld_tensor_data(x)); /* y == x */
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
