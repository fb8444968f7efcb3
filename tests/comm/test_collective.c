/* Collectives in kernels: every collective and mode against a C reference,
 * bitwise, over several rank counts, sizes and block counts. */
#include "comm_test.h"

PLD_DYNAMIC(R);  /* elements per row */
PLD_DYNAMIC(NS); /* signal cells */

enum { K_ALLREDUCE, K_BROADCAST, K_ALLGATHER, K_REDUCE_SCATTER, K_ALL_TO_ALL };
enum { P_KIND, P_OP, P_MODE, P_ROOT, NPARAMS };

#define WINDOWS                                                                \
  PLD_WINDOW(w, FP32, NR, R), PLD_WINDOW(t, FP32, NR, R),                      \
      PLD_WINDOW(s, FP32, 1, R)

/* Copies src to dst, both [rows, cols], through tiles. */
static void copy_rows(pld_core k, pld_tensor src, pld_tensor dst) {
  int64_t rows = pld_tensor_dim(dst, 0), cols = pld_tensor_dim(dst, 1);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c0 = 0; c0 < cols; c0 += 4096) {
      int32_t n = (int32_t)(cols - c0 < 4096 ? cols - c0 : 4096);
      pld_tile *tl = pld_load(k, src, r, c0, 1, n);
      pld_store(k, tl, dst, r, c0);
      pld_tile_free(k, tl);
    }
}

/* Stages x into w (and its first row into s). */
PLD_KERNEL(k_stage, k, PLD_IN(x, FP32, NR, R), WINDOWS) {
  (void)t;
  copy_rows(k, x, pld_local(w));
  copy_rows(k, x, pld_local(s));
}

PLD_KERNEL(k_coll, k, PLD_IN(x, FP32, NR, R), WINDOWS,
           PLD_WINDOW(sig, INT32, NS), PLD_IN(params, INT32, NPARAMS)) {
  int kind = (int)pld_read(k, params, PLD_AT(P_KIND));
  pld_reduce_op op = (pld_reduce_op)pld_read(k, params, PLD_AT(P_OP));
  pld_allreduce_mode mode =
      (pld_allreduce_mode)pld_read(k, params, PLD_AT(P_MODE));
  int32_t root = (int32_t)pld_read(k, params, PLD_AT(P_ROOT));
  if (kind == K_ALLREDUCE)
    pld_allreduce(k, w, sig, op, mode);
  else if (kind == K_BROADCAST)
    pld_broadcast(k, w, sig, root);
  else if (kind == K_ALLGATHER)
    pld_allgather(k, pld_local(s), t, sig);
  else if (kind == K_REDUCE_SCATTER)
    pld_reduce_scatter(k, w, sig, op);
  else
    pld_all_to_all(k, x, t, sig);
}

PLD_KERNEL(k_unstage, k, WINDOWS, PLD_IN(params, INT32, NPARAMS),
           PLD_OUT(y, FP32, NR, R)) {
  (void)s;
  int kind = (int)pld_read(k, params, PLD_AT(P_KIND));
  copy_rows(k, pld_local(kind == K_ALLGATHER || kind == K_ALL_TO_ALL ? t : w),
            y);
}

PLD_DEVICE(d_coll, a, PLD_IN(x, FP32, NR, R), WINDOWS,
           PLD_WINDOW(sig, INT32, NS), PLD_IN(params, INT32, NPARAMS),
           PLD_OUT(y, FP32, NR, R), PLD_SCALAR(blocks, INT32)) {
  pld_launch(a, k_stage, 1, x, w, t, s);
  pld_launch(a, k_coll, blocks, x, w, t, s, sig, params);
  pld_launch(a, k_unstage, 1, w, t, s, params, y);
}

PLD_HOST(h_coll, h, PLD_IN(x, FP32, NR, NR, R), PLD_IN(params, INT32, NPARAMS),
         PLD_OUT(y, FP32, NR, NR, R), PLD_SCALAR(blocks, INT32)) {
  int n = pld_world_size(h);
  int64_t r = pld_tensor_dim(x, 2), ns = PLD_SIGNAL_CELLS(n, blocks);
  pld_window_buf w = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, r));
  pld_window_buf t = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, r));
  pld_window_buf s = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1, r));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_coll, q, pld_slice(h, x, q),
                 pld_window_view(h, w, PLD_FP32, PLD_SHAPE(n, r)),
                 pld_window_view(h, t, PLD_FP32, PLD_SHAPE(n, r)),
                 pld_window_view(h, s, PLD_FP32, PLD_SHAPE(1, r)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)), params,
                 pld_slice(h, y, q), blocks);
}

/* ---- the reference ------------------------------------------------------- */

static float ref_op(int op, float a, float b) {
  switch (op) {
  case PLD_REDUCE_SUM:
    return a + b;
  case PLD_REDUCE_PROD:
    return a * b;
  case PLD_REDUCE_MAX:
    return a > b ? a : b;
  default:
    return a < b ? a : b;
  }
}

/* want[q] for every rank q of n, each [n, r], from x[q]. */
static void reference(int kind, int op, int root, int n, int64_t r,
                      const float *x, float *want) {
  const int64_t per = n * r;
  for (int q = 0; q < n; q++)
    for (int64_t row = 0; row < n; row++)
      for (int64_t e = 0; e < r; e++) {
        int64_t i = row * r + e;
        float v = x[q * per + i];
        if (kind == K_ALLREDUCE ||
            (kind == K_REDUCE_SCATTER && row == q)) {
          v = x[i];
          for (int p = 1; p < n; p++)
            v = ref_op(op, v, x[p * per + i]);
        } else if (kind == K_BROADCAST) {
          v = x[root * per + i];
        } else if (kind == K_ALLGATHER) {
          v = x[row * per + e]; /* rank row's first row */
        } else if (kind == K_ALL_TO_ALL) {
          v = x[row * per + q * r + e]; /* row q of rank row */
        }
        want[q * per + i] = v;
      }
}

/* Runs one collective over n ranks, r elements per row, on `blocks`
 * blocks, and checks every rank's result bitwise. */
static void check_collective(int n, int64_t r, int blocks, int kind, int op,
                             int mode, int root) {
  pld_config cfg = comm_config(n);
  const int64_t shape[] = {n, n, r};
  pld_tensor x = comm_tensor(PLD_FP32, 3, shape);
  pld_tensor y = comm_tensor(PLD_FP32, 3, shape);
  pld_tensor params = comm_int_tensor(0, 1, (int64_t[]){NPARAMS});
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) /* exact in FP32 */
    xs[i] = (float)((i * 7) % 97) - 40.0f + (float)(i / (n * r));
  int32_t *pm = pld_tensor_data(params);
  pm[P_KIND] = kind;
  pm[P_OP] = op;
  pm[P_MODE] = mode;
  pm[P_ROOT] = root;
  int32_t b = blocks;
  pld_program *p;
  assert_ok(pld_compile(h_coll, &cfg, PLD_ARGS(x, params, y, b), &p));
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, params, y, b)));
    float *want = malloc(sizeof(float) * (size_t)pld_tensor_numel(x));
    assert_non_null(want);
    reference(kind, op, root, n, r, xs, want);
    char what[128];
    snprintf(what, sizeof what,
             "kind %d op %d mode %d root %d, %d ranks, %lld per row, %d "
             "blocks",
             kind, op, mode, root, n, (long long)r, blocks);
    comm_expect_f32(what, pld_tensor_data(y), want, pld_tensor_numel(x));
    free(want);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(params);
}

static const int64_t lengths[] = {1, 5, 8193, 40000};

static void run_allreduce(int n) {
  for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
    for (int mode = PLD_ALLREDUCE_AUTO; mode <= PLD_ALLREDUCE_RING; mode++)
      for (int blocks = 1; blocks <= 3; blocks += 2)
        check_collective(n, lengths[l], blocks, K_ALLREDUCE, PLD_REDUCE_SUM,
                         mode, 0);
  check_collective(n, 33, 1, K_ALLREDUCE, PLD_REDUCE_MAX, PLD_ALLREDUCE_RING,
                   0);
  check_collective(n, 33, 2, K_ALLREDUCE, PLD_REDUCE_MIN,
                   PLD_ALLREDUCE_TWO_PHASE, 0);
}

static void test_allreduce(void **state) {
  (void)state;
  comm_over_rank_counts(run_allreduce);
}

static void run_others(int n) {
  for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
    for (int blocks = 1; blocks <= 2; blocks++) {
      check_collective(n, lengths[l], blocks, K_BROADCAST, 0, 0, n - 1);
      check_collective(n, lengths[l], blocks, K_ALLGATHER, 0, 0, 0);
      check_collective(n, lengths[l], blocks, K_REDUCE_SCATTER,
                       PLD_REDUCE_SUM, 0, 0);
      check_collective(n, lengths[l], blocks, K_ALL_TO_ALL, 0, 0, 0);
    }
}

static void test_broadcast_allgather_reduce_scatter_all_to_all(void **state) {
  (void)state;
  comm_over_rank_counts(run_others);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_allreduce),
    cmocka_unit_test(test_broadcast_allgather_reduce_scatter_all_to_all),
};

PLD_TEST_MAIN("comm_collective", tests)
