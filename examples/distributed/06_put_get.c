/* Step 06: put and get, paired with notify and wait.
 *
 * put pushes a local tensor region into a peer's window; get pulls a
 * peer's window region into a local tensor.  Both are complete for the
 * caller when they return, but the other side learns of them only by a
 * signal: publish, then notify; wait, then read.
 *
 * The ring runs over P ranks, one per device id of -d: rank r's next rank
 * is (r + 1) % P, its previous (r - 1) % P.  Each rank hears from one
 * peer only, so its signal window has two cells whatever P; P is the
 * leading dimension NR of the host's tensors, a dynamic dimension (step
 * 01).
 *
 *   --mode put   put x into the next rank's window, notify it; wait for
 *                the previous rank's notify, read my window:
 *                y[r] = x[(r - 1) % P]
 *   --mode get   stage x in my window, notify the previous rank (it reads
 *                mine); wait for the next rank's notify, get its window:
 *                y[r] = x[(r + 1) % P]; a last round of notifies keeps
 *                every window alive until its reader is done.
 *
 *   06_put_get -p a2a3sim -d 0,1,2,3 --mode put      prints OK
 *   (any P from 2 to 128; -d 0,1 by default)
 */
#include "example.h"

enum { ROWS = 64, COLS = 128 };
PLD_DYNAMIC(NR); /* the rank count P */

/* Cells of the signal window: [0] "your data is ready", [1] "I am done
 * reading yours". */
PLD_KERNEL(put_get, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS), PLD_WINDOW(sig, INT32, 2),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(get_mode, BOOL)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  if (!get_mode) {
    pld_put(k, data, next, x, NULL); /* publish ... */
    pld_notify(k, sig, next, PLD_AT(0), 1,
               PLD_NOTIFY_ADD);                  /* ... then notify */
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE); /* prev's data is in */
    pld_get(k, y, me, data, NULL);               /* read my own copy */
  } else {
    pld_put(k, data, me, x, NULL); /* stage in my window */
    pld_notify(k, sig, prev, PLD_AT(0), 1, PLD_NOTIFY_ADD); /* prev reads it */
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE); /* next's is staged */
    pld_get(k, y, next, data, NULL);
    pld_notify(k, sig, next, PLD_AT(1), 1, PLD_NOTIFY_ADD); /* done with it */
    pld_wait(k, sig, PLD_AT(1), 1, PLD_WAIT_GE);            /* prev is done */
  }
}

PLD_DEVICE(put_get_device, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS), PLD_WINDOW(sig, INT32, 2),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(get_mode, BOOL)) {
  pld_launch(a, put_get, 1, x, data, sig, y, get_mode);
}

PLD_HOST(put_get_host, h, PLD_IN(x, FP32, NR, ROWS, COLS),
         PLD_OUT(y, FP32, NR, ROWS, COLS), PLD_SCALAR(get_mode, BOOL)) {
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(ROWS, COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, put_get_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(ROWS, COLS)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, y, r), get_mode);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, EXAMPLE_MAX_DEVICES,
               "  --mode put|get       put into the next rank's window (the "
               "default), or get\n"
               "                       from it\n");
  bool get_mode = example_mode(&ex, "put", "get");
  const int64_t shape[] = {ex.cfg.ndevices, ROWS, COLS};
  pld_tensor x = example_tensor(&ex, 3, shape, 1);
  pld_tensor y = example_tensor(&ex, 3, shape, 0);

  example_run(&ex, put_get_host, x, y, get_mode);

  /* put: y[r] = x[(r - 1) % P]; get: y[r] = x[(r + 1) % P]. */
  int bad = example_golden_shift(&ex, x, y, get_mode ? 1 : -1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
