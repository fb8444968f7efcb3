/* Tile operations run on AI cores, not on the AICPU. */
#include "pld.h"
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8)) { (void)pld_load(a, x, 0, 0, 1, 8); }
