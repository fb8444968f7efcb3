/* Signals are kernel-level: the host has no core to notify from. */
#include "pld.h"
PLD_HOST(host, h, PLD_IN(x, FP32, 2, 8)) {
  pld_window_buf b = pld_window_alloc(h, 64);
  pld_window w = pld_window_view(h, b, PLD_INT32, PLD_SHAPE(2));
  pld_notify(h, w, 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
}
