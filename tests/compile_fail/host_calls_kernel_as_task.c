/* pld_host_task takes a PLD_HOST_TASK function, not a kernel. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { (void)k; }
PLD_HOST(host, h, PLD_IN(x, FP32, 8)) { pld_host_task(h, kern, x); }
