/* The mistakes in a declaration's list (decl_*.c) are made with DECLARE,
 * which the test sets to each of the declaration macros in turn
 * (-DDECLARE=PLD_DEVICE, ...): they share one check. */
#include "pld.h"
#ifndef DECLARE
#define DECLARE PLD_KERNEL
#endif
