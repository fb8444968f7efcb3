/* A host task computes with plain C on host memory, not on tiles. */
#include "pld.h"
PLD_HOST_TASK(task, t, PLD_IN(x, FP32, 8)) {
  pld_tile *a = pld_load(t, x, 0, 0, 1, 8);
  (void)a;
}
