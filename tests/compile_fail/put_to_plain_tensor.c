/* A put lands in a peer's window, never in a plain tensor. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8, 8), PLD_OUT(y, FP32, 8, 8)) {
  pld_put(k, y, 1, x, NULL);
}
