/* A name that is no dtype at all. */
#include "decl_level.h"
DECLARE(fn, ctx, PLD_OUT(y, FLOAT32, 8)) {
  (void)ctx;
  (void)y;
}
