/* Signals live in windows: a plain tensor has no cell a peer can notify. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_INOUT(s, INT32, 2)) {
  pld_notify(k, s, 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
}
