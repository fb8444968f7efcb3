/* A host task runs on the host CPU: it launches no kernel. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) { (void)k; }
PLD_HOST_TASK(task, t, PLD_IN(x, FP32, 8)) { pld_launch(t, kern, 1, x); }
