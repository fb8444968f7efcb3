/* A host task is no host orchestrator: it dispatches nothing. */
#include "pld.h"
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8)) { (void)a; }
PLD_HOST_TASK(task, t, PLD_IN(x, FP32, 8)) { pld_dispatch(t, dev, 0, x); }
