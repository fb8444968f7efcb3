/* A wait is on a cell of a window, which peers can notify. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_INOUT(s, INT32, 2)) {
  pld_wait(k, s, PLD_AT(0), 1, PLD_WAIT_GE);
}
