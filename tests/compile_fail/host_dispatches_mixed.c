/* A mixed kernel is a kernel: the host dispatches device functions only. */
#include "pld.h"
PLD_MIX_KERNEL(mix, k, PLD_IN(x, FP32, 8)) { (void)x; }
PLD_HOST(host, h, PLD_IN(x, FP32, 8)) { pld_dispatch(h, mix, 0, x); }
