/* The control of the communication cases: the same calls, on windows from
 * a kernel, and window allocation on the host, compile cleanly. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8, 8), PLD_OUT(y, FP32, 8, 8),
           PLD_WINDOW(w, FP32, 8, 8), PLD_WINDOW(s, INT32, 2)) {
  (void)pld_remote_load(k, w, 1, 0, 0, 8, 8);
  pld_notify(k, s, 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_wait(k, s, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_put(k, w, 1, x, NULL);
  pld_get(k, y, 1, w, NULL);
  (void)pld_load(k, pld_local(w), 0, 0, 8, 8);
}
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8, 8), PLD_OUT(y, FP32, 8, 8),
           PLD_WINDOW(w, FP32, 8, 8), PLD_WINDOW(s, INT32, 2)) {
  pld_launch(a, kern, 1, x, y, w, s);
}
PLD_HOST(host, h, PLD_IN(x, FP32, 2, 8, 8), PLD_OUT(y, FP32, 2, 8, 8)) {
  pld_window_buf b = pld_window_alloc(h, 8 * 8 * sizeof(float));
  pld_window_buf c = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, dev, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_window_view(h, b, PLD_FP32, PLD_SHAPE(8, 8)),
                 pld_window_view(h, c, PLD_INT32, PLD_SHAPE(2)));
}
