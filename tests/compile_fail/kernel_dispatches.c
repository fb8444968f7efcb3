/* A kernel cannot dispatch to devices. */
#include "pld.h"
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8)) { (void)a; }
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { pld_dispatch(k, dev, 0, x); }
