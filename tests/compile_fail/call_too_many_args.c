/* Calls with one argument more than PLD_MAX_PARAMS (after the rank or the
 * block count): each is one error in words at the call, and nothing
 * else. */
#include "pld.h"
_Static_assert(PLD_MAX_PARAMS == 32, "33 arguments below are one too many");
#define A33                                                                    \
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,   \
      22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33
PLD_KERNEL(kern, k, PLD_SCALAR(x, INT32)) {
  (void)k;
  (void)x;
}
PLD_DEVICE(dev, a, PLD_SCALAR(x, INT32)) {
  (void)x;
  pld_launch(a, kern, 1, A33);
}
PLD_HOST_TASK(task, t, PLD_SCALAR(x, INT32)) {
  (void)t;
  (void)x;
}
PLD_HOST(host, h) {
  pld_dispatch(h, dev, 0, A33);
  pld_host_task(h, task, A33, 34);
}
int main(void) {
  pld_program *p;
  return pld_compile(host, NULL, PLD_ARGS(A33), &p);
}
