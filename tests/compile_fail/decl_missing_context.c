/* No context name: the parameters follow the function's name. */
#include "decl_level.h"
DECLARE(fn, PLD_IN(x, FP32, 8)) { (void)x; }
