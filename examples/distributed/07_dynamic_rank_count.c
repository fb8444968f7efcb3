/* Step 07: the rank count as a dynamic dimension.
 *
 * Steps 01 to 06 run on any number of ranks too, but size their world
 * tensors from the device count in main.  Here the leading dimension of
 * the world tensors is NR, a dynamic dimension bound when the program is
 * compiled from the actual tensors: the same source serves any number of
 * devices.  The kernels never see NR: they take their rank and the domain's
 * size from the comm context of a window.  The exchange is step 06's.
 *
 *   07_dynamic_rank_count -p a2a3sim -d 0,1,2,3 --mode put      prints OK
 *   (2 to 16 devices; --mode put | get)
 */
#include "example.h"

enum { ROWS = 32, COLS = 64, MAX_RANKS = 16 };
PLD_DYNAMIC(NR);

PLD_KERNEL(exchange, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS), PLD_WINDOW(sig, INT32, 2),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(get_mode, BOOL)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  if (!get_mode) {
    pld_put(k, data, next, x, NULL);
    pld_notify(k, sig, next, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
    pld_store(k, pld_load(k, pld_local(data), 0, 0, ROWS, COLS), y, 0, 0);
  } else {
    pld_store(k, pld_load(k, x, 0, 0, ROWS, COLS), pld_local(data), 0, 0);
    pld_notify(k, sig, prev, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
    pld_get(k, y, next, data, NULL);
    pld_notify(k, sig, next, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT(1), 1, PLD_WAIT_GE);
  }
}

PLD_DEVICE(exchange_device, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS), PLD_WINDOW(sig, INT32, 2),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(get_mode, BOOL)) {
  pld_launch(a, exchange, 1, x, data, sig, y, get_mode);
}

/* x and y are [NR, ROWS, COLS]: NR is whatever the tensors say. */
PLD_HOST(exchange_host, h, PLD_IN(x, FP32, NR, ROWS, COLS),
         PLD_OUT(y, FP32, NR, ROWS, COLS), PLD_SCALAR(get_mode, BOOL)) {
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(ROWS, COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, exchange_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(ROWS, COLS)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, y, r), get_mode);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, MAX_RANKS,
               "  --mode put|get       put into the next rank's window (the "
               "default), or get\n"
               "                       from it\n");
  bool get_mode = example_mode(&ex, "put", "get");
  const int64_t shape[] = {ex.cfg.ndevices, ROWS, COLS};
  pld_tensor x = example_tensor(&ex, 3, shape, 1);
  pld_tensor y = example_tensor(&ex, 3, shape, 0);

  example_run(&ex, exchange_host, x, y, get_mode);

  /* As step 06, for the actual rank count. */
  int bad = example_golden_shift(&ex, x, y, get_mode ? 1 : -1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
