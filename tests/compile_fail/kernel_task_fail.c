/* pld_task_fail belongs to host tasks. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { pld_task_fail(k, PLD_ERR_ARG, "no"); }
