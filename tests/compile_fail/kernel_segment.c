/* pld_segment belongs to device functions: it takes a pld_aicpu. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 2, 8), PLD_IN(counts, INT32, 2)) {
  (void)pld_segment(k, x, counts, 0, 2);
}
