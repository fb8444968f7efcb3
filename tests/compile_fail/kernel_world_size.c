/* world_size is host only: a kernel reads nranks from a comm context. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { (void)pld_world_size(k); }
