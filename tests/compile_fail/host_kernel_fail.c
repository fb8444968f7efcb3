/* pld_kernel_fail belongs to kernels: it takes a pld_core. */
#include "pld.h"
PLD_HOST(host, h, PLD_IN(x, FP32, 2, 8)) {
  (void)x;
  pld_kernel_fail(h, PLD_ERR_ARG, "no");
}
