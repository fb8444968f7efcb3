/* An empty parameter: a comma too many. */
#include "decl_level.h"
DECLARE(fn, ctx, PLD_IN(x, FP32, 8), ) {
  (void)ctx;
  (void)x;
}
