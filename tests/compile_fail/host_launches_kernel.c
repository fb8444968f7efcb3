/* Only a per-device function launches kernels. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { (void)k; }
PLD_HOST(host, h, PLD_IN(x, FP32, 2, 8)) {
  pld_launch(h, kern, 1, pld_slice(h, x, 0));
}
