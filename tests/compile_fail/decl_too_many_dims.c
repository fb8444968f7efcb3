/* A tensor of more than PLD_MAX_DIMS dimensions. */
#include "decl_level.h"
_Static_assert(PLD_MAX_DIMS == 8, "9 dimensions below are one too many");
DECLARE(fn, ctx, PLD_IN(x, FP32, 1, 2, 3, 4, 5, 6, 7, 8, 9)) {
  (void)ctx;
  (void)x;
}
