/* pld_launch_by belongs to device functions: it takes a pld_aicpu. */
#include "pld.h"
PLD_KERNEL(inner, k, PLD_IN(x, FP32, 2, 8)) { (void)x; }
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 2, 8), PLD_IN(counts, INT32, 2)) {
  pld_launch_by(k, inner, PLD_BLOCKS_BY(counts, 0, 1, 2), x);
}
