/* tests/host/programs.h: small pld programs the host and device suites
 * share.  y[r] = x[r] * (r + 1) over any number of ranks (NR dynamic). */
#ifndef PLD_TEST_PROGRAMS_H
#define PLD_TEST_PROGRAMS_H

#include "pld.h"
#include "pld_test.h" /* the checks below use cmocka */

enum { TR = 4, TC = 8 };
PLD_DYNAMIC(NR);

PLD_KERNEL(k_scale, k, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(s, FP32)) {
  pld_tile *t = pld_load(k, x, 0, 0, TR, TC);
  pld_muls(k, t, t, s);
  pld_store(k, t, y, 0, 0);
}

PLD_DEVICE(d_scale, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32)) {
  pld_launch(a, k_scale, 1, x, y, (float)(rank + 1));
}

PLD_HOST(h_scale, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_scale, r, pld_slice(h, x, r), pld_slice(h, y, r), r);
}

/* A configuration of n ranks on devices first, first + step, ... */
static inline pld_config test_config(int *ids, int n, int first, int step) {
  for (int i = 0; i < n; i++)
    ids[i] = first + i * step;
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.device_ids = ids;
  cfg.ndevices = n;
  return cfg;
}

/* pld_compile of h_scale on 2 ranks with cfg (its platform and devices
 * set here): the status, its message left in place; the program is
 * destroyed. */
static inline int compile_h_scale(pld_config cfg) {
  int ids[2];
  pld_config two = test_config(ids, 2, 0, 1);
  cfg.device_ids = two.device_ids;
  cfg.ndevices = two.ndevices;
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p = NULL;
  int st = pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p);
  assert_true(st == PLD_OK ? p != NULL : p == NULL);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

/* Asserts y[r] == x[r] * (r + 1) exactly (one float multiply). */
static inline void assert_scaled(pld_tensor x, pld_tensor y) {
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  int64_t per = pld_tensor_numel(x) / pld_tensor_dim(x, 0);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) {
    float want = xs[i] * (float)(i / per + 1);
    if (ys[i] != want) {
      print_error("element %lld: got %g, expected %g\n", (long long)i,
                  (double)ys[i], (double)want);
      fail();
    }
  }
}

#endif
