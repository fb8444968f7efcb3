/* The control: the same shapes of program, written correctly, compile. */
#include "pld.h"
PLD_KERNEL(kern, k, PLD_IN(x, FP32, 8)) {
  if (!pld_load(k, x, 0, 0, 1, 8))
    pld_kernel_fail(k, PLD_ERR_ARG, "no tile");
}
PLD_MIX_KERNEL(mix, k, PLD_IN(x, FP32, 8)) {
  if (pld_core_type_of(k) == PLD_CORE_CUBE)
    pld_push_tile(k, 0, pld_load(k, x, 0, 0, 1, 8));
  else if (pld_subblock_idx(k) == 0)
    pld_tile_free(k, pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, 1, 8));
}
PLD_DEVICE(dev, a, PLD_IN(x, FP32, 8)) {
  pld_launch(a, kern, 1, x);
  pld_launch(a, mix, 1, x);
}
PLD_HOST_TASK(task, t, PLD_IN(x, FP32, 8)) {
  if (!pld_tensor_data(x))
    pld_task_fail(t, PLD_ERR_ARG, "no data");
}
PLD_HOST(host, h, PLD_IN(x, FP32, 2, 8)) {
  (void)pld_world_size(h);
  pld_dispatch(h, dev, 0, pld_slice(h, x, 0));
  pld_host_task(h, task, pld_slice(h, x, 0));
}
