/* A C type where a pld dtype belongs: a scalar's. */
#include "decl_level.h"
DECLARE(fn, ctx, PLD_IN(x, FP32, 8), PLD_SCALAR(n, int)) {
  (void)ctx;
  (void)x;
  (void)n;
}
