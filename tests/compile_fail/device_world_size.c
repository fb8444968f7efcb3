/* world_size is host only. */
#include "pld.h"
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8)) { (void)pld_world_size(a); }
