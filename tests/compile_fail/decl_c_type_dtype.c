/* A C type where a pld dtype belongs: a tensor's. */
#include "decl_level.h"
DECLARE(fn, ctx, PLD_IN(x, float, 8)) {
  (void)ctx;
  (void)x;
}
