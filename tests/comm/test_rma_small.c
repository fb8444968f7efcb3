/* tests/comm/test_rma_small.c: small puts and gets, which take the short
 * path of comm/rma.c (one staging tile's worth, contiguous on both sides,
 * tile memory empty) or, for the same regions, the general one (a live
 * tile in tile memory, or a region whose rows are not contiguous): both
 * move the same bytes, and a small transfer that finds no room for its
 * staging tile fails as a large one does. */
#include <string.h>

#include "comm_test.h"

enum { SR = 8, SC = 256 };

/* plan: {whether to hold a live tile during the transfers, how many FP32
 * elements of tile memory to take with another (a multiple of SC)}.  Each rank
 * puts parts of x into the next rank's window: rows 2..5 whole (contiguous), a
 * piece of row 0 (one row), a 2 x 16 block of rows 6..7 (strided); then
 * gets the next rank's whole window into y (no pld_xfer) and the piece of
 * row 0 back into row 3 of z. */
#define SMALL_PARAMS                                                           \
  PLD_IN(x, FP32, SR, SC), PLD_WINDOW(data, FP32, SR, SC),                     \
      PLD_IN(plan, INT32, 2), PLD_OUT(y, FP32, SR, SC),                        \
      PLD_OUT(z, FP32, SR, SC)

PLD_KERNEL(k_small, k, SMALL_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = (me + 1) % n;
  pld_tile *live = NULL;
  if (pld_read(k, plan, PLD_AT(0)) != 0)
    live = pld_tile_new(k, PLD_FP32, 1, 64);
  int32_t take = (int32_t)pld_read(k, plan, PLD_AT(1));
  if (take > 0)
    live = pld_tile_new(k, PLD_FP32, take / SC, SC);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.src_row = o.dst_row = 2;
  o.rows = 4;
  if (pld_put(k, data, next, x, &o))
    return;
  memset(&o, 0, sizeof o);
  o.src_col = 16;
  o.dst_col = 100;
  o.rows = 1;
  o.cols = 32;
  if (pld_put(k, data, next, x, &o))
    return;
  memset(&o, 0, sizeof o);
  o.src_row = o.dst_row = 6;
  o.src_col = o.dst_col = 8;
  o.rows = 2;
  o.cols = 16;
  if (pld_put(k, data, next, x, &o))
    return;
  if (pld_get(k, y, next, data, NULL))
    return;
  memset(&o, 0, sizeof o);
  o.src_col = 100;
  o.dst_row = 3;
  o.dst_col = 5;
  o.rows = 1;
  o.cols = 32;
  if (pld_get(k, z, next, data, &o))
    return;
  pld_tile_free(k, live);
}

PLD_DEVICE(d_small, a, SMALL_PARAMS) {
  pld_launch(a, k_small, 1, x, data, plan, y, z);
}

PLD_HOST(h_small, h, PLD_IN(x, FP32, NR, SR, SC), PLD_IN(plan, INT32, 2),
         PLD_OUT(y, FP32, NR, SR, SC), PLD_OUT(z, FP32, NR, SR, SC)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(SR, SC));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_small, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(SR, SC)), plan,
                 pld_slice(h, y, r), pld_slice(h, z, r));
}

static void run_small(int n) {
  pld_config cfg = comm_config(n);
  const int64_t shape[] = {n, SR, SC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 1);
  pld_tensor y = comm_tensor(PLD_FP32, 3, shape);
  pld_tensor z = comm_tensor(PLD_FP32, 3, shape);
  pld_tensor plan = comm_int_tensor(0, 1, (int64_t[]){2});
  int32_t *pl = pld_tensor_data(plan);
  const float *xv = pld_tensor_data(x);
  float *wy = calloc((size_t)(n * SR * SC), sizeof(float));
  float *wz = calloc((size_t)(n * SR * SC), sizeof(float));
  assert_true(wy && wz);
  for (int r = 0; r < n; r++) {
    const float *xr = xv + (size_t)r * SR * SC;
    float *yr = wy + (size_t)r * SR * SC, *zr = wz + (size_t)r * SR * SC;
    for (int i = 2 * SC; i < 6 * SC; i++)
      yr[i] = xr[i];
    for (int j = 0; j < 32; j++) {
      yr[100 + j] = xr[16 + j];
      zr[3 * SC + 5 + j] = xr[16 + j];
    }
    for (int i = 6; i < 8; i++)
      for (int j = 8; j < 24; j++)
        yr[i * SC + j] = xr[i * SC + j];
  }
  pld_program *p;
  assert_ok(pld_compile(h_small, &cfg, PLD_ARGS(x, plan, y, z), &p));
  /* Tile memory empty, then with a live tile: the same bytes. */
  for (int live = 0; live < 2; live++) {
    pl[0] = live;
    pl[1] = 0;
    memset(pld_tensor_data(y), 0xff, sizeof(float) * (size_t)(n * SR * SC));
    memset(pld_tensor_data(z), 0xff, sizeof(float) * (size_t)(n * SR * SC));
    assert_ok(pld_program_run(p, PLD_ARGS(x, plan, y, z)));
    comm_expect_f32("y (the next rank's window)", pld_tensor_data(y), wy,
                    n * SR * SC);
    comm_expect_f32("z (a piece of row 0 of it)", pld_tensor_data(z), wz,
                    n * SR * SC);
  }
  /* Room for 3 rows of staging only: the 4-row put fails as large ones
   * do, although it is small. */
  const int ub = (int)pld_platform_find(cfg.platform)->ub_bytes;
  pl[0] = 0;
  pl[1] = ub / (int)sizeof(float) - 3 * SC;
  assert_fails_with(pld_program_run(p, PLD_ARGS(x, plan, y, z)),
                    PLD_ERR_TILE_MEMORY, "pld_put: kernel k_small (rank ",
                    "tile memory over capacity: FP32[4, 256] tile needs 4096 "
                    "bytes");
  pld_program_destroy(p);
  free(wy);
  free(wz);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
  pld_tensor_destroy(plan);
}

static void test_small_put_get(void **state) {
  (void)state;
  comm_over_rank_counts(run_small);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_small_put_get),
};

PLD_TEST_MAIN("comm_rma_small", tests)
