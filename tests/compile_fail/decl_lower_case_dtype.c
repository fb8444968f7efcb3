/* A dtype in lower case. */
#include "decl_level.h"
DECLARE(fn, ctx, PLD_IN(x, fp32, 8)) {
  (void)ctx;
  (void)x;
}
