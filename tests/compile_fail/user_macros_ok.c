/* The declaration macros use no name a user may define: a program whose
 * own macros are called T, W and S (a tile size, a width, a count: common
 * names) declares every kind of parameter, and calls with them, cleanly. */
#define T 64
#define W 128
#define S 3
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, T, W), PLD_OUT(y, FP32, T, W),
           PLD_WINDOW(w, INT32, S), PLD_SCALAR(s, INT32)) {
  (void)k;
  (void)x;
  (void)y;
  (void)w;
  (void)s;
}
PLD_DEVICE(dev, a, PLD_IN(x, FP32, T, W), PLD_OUT(y, FP32, T, W),
           PLD_WINDOW(w, INT32, S), PLD_SCALAR(s, INT32)) {
  pld_launch(a, kern, S, x, y, w, s);
}
PLD_HOST(host, h, PLD_IN(x, FP32, S, T, W), PLD_OUT(y, FP32, S, T, W)) {
  pld_window_buf wb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(S));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, dev, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_window_view(h, wb, PLD_INT32, PLD_SHAPE(S)), S);
}
