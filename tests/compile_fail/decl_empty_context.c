/* An empty context name. */
#include "decl_level.h"
DECLARE(fn, , PLD_IN(x, FP32, 8)) { (void)x; }
