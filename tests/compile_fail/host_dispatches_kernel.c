/* The host must dispatch the per-device function, never a kernel. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { (void)k; }
PLD_HOST(host, h, PLD_IN(x, FP32, 2, 8)) {
  pld_dispatch(h, kern, 0, pld_slice(h, x, 0));
}
