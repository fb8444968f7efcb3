/* The path between the parts of a mixed kernel is the AI cores': the
 * AICPU cannot hand a tile to a part. */
#include "pld.h"
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8)) {
  (void)x;
  (void)pld_push_tile(a, 0, NULL);
}
