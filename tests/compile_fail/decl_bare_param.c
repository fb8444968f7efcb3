/* A parameter without PLD_IN & co. */
#include "decl_level.h"
DECLARE(fn, ctx, PLD_IN(x, FP32, 8), y) {
  (void)ctx;
  (void)x;
}
