/* pld_launch takes kernels, not device functions. */
#include "pld.h"
PLD_DEVICE(inner, a, PLD_IN(x, FP32, 8)) { (void)a; }
PLD_DEVICE(outer, a, PLD_IN(x, FP32, 8)) { pld_launch(a, inner, 1, x); }
