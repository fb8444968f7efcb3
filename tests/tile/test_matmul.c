/* pld_matmul and pld_matmul_acc against a double-precision product. */
#include <math.h>
#include <string.h>

#include "test_main.h"
#include "tile_test.h"
#include "tile_tests.h"

/* Small integers times powers of two: products and sums of up to 2^16
 * terms are exact in float, so FP32 results must match exactly whatever
 * the order of summation; random fractions then check the rounding. */
static double operand(uint64_t *seed, int exact) {
  const uint64_t r = tt_rand(seed);
  if (exact)
    return (double)((int)(r % 17) - 8) / 4.0;
  return ((double)(r % 2000001) - 1000000.0) / 1e6;
}

/* c = c0 (or 0) + a @ b in double; each element's error bound is
 * K * 2^-23 * sum |a||b| (float accumulation). */
static void reference(pld_tensor a, pld_tensor b, pld_tensor c0, size_t m,
                      size_t kk, size_t n, double *want, double *bound) {
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = c0.p ? tt_get(c0, i * n + j) : 0.0, mag = fabs(s);
      for (size_t k = 0; k < kk; k++) {
        const double p = tt_get(a, i * kk + k) * tt_get(b, k * n + j);
        s += p;
        mag += fabs(p);
      }
      want[i * n + j] = s;
      bound[i * n + j] = (double)(kk + 1) * 0x1p-23 * mag;
    }
}

/* The bits every level must produce: c[i][j] = fmaf(a[i][k], b[k][j],
 * ...) over k in order, from c0 (or 0), in float (FP16 and BF16 operands
 * are exact in float). */
static float chain(pld_tensor a, pld_tensor b, pld_tensor c0, size_t kk,
                   size_t n, size_t i, size_t j) {
  float s = c0.p ? (float)tt_get(c0, i * n + j) : 0.0f;
  for (size_t k = 0; k < kk; k++)
    s = fmaf((float)tt_get(a, i * kk + k), (float)tt_get(b, k * n + j), s);
  return s;
}

static void check_matmul(pld_dtype dt, size_t m, size_t kk, size_t n,
                         int accumulate, int exact) {
  uint64_t seed = m * 131 + kk * 17 + n;
  struct pld__core c;
  pld_core k = tt_cube_core(&c);
  pld_tensor a = tt_tensor(dt, (int64_t)m, (int64_t)kk, PLD_DIR_IN, "a");
  pld_tensor b = tt_tensor(dt, (int64_t)kk, (int64_t)n, PLD_DIR_IN, "b");
  pld_tensor c0 = tt_tensor(PLD_FP32, (int64_t)m, (int64_t)n, PLD_DIR_IN, "c0");
  pld_tensor z = tt_tensor(PLD_FP32, (int64_t)m, (int64_t)n, PLD_DIR_OUT, "z");
  for (size_t i = 0; i < m * kk; i++)
    tt_set(a, i, tt_cast(dt, operand(&seed, exact)));
  for (size_t i = 0; i < kk * n; i++)
    tt_set(b, i, tt_cast(dt, operand(&seed, exact)));
  for (size_t i = 0; i < m * n; i++)
    tt_set(c0, i, (double)(float)operand(&seed, exact));
  pld_tile *ta = tt_load(k, a), *tb = tt_load(k, b), *tc = tt_load(k, c0);
  const int st =
      accumulate ? pld_matmul_acc(k, tc, ta, tb) : pld_matmul(k, tc, ta, tb);
  if (st != PLD_OK)
    fail_msg("matmul %s [%zu, %zu] @ [%zu, %zu]: %s", pld_dtype_name(dt), m, kk,
             kk, n, k.p->msg);
  tt_store(k, tc, z);
  double *want = test_malloc(m * n * sizeof *want);
  double *bound = test_malloc(m * n * sizeof *bound);
  reference(a, b, accumulate ? c0 : (pld_tensor){NULL}, m, kk, n, want, bound);
  for (size_t i = 0; i < m * n; i++) {
    const double got = tt_get(z, i);
    const int ok = exact ? got == want[i] : fabs(got - want[i]) <= bound[i];
    if (!ok)
      fail_msg("matmul%s %s [%zu, %zu] @ [%zu, %zu]: c[%zu, %zu] = %.9g, "
               "want %.9g (bound %.3g)",
               accumulate ? "_acc" : "", pld_dtype_name(dt), m, kk, kk, n,
               i / n, i % n, got, want[i], bound[i]);
    const float bits =
        chain(a, b, accumulate ? c0 : (pld_tensor){NULL}, kk, n, i / n, i % n);
    const float gotf = (float)got;
    if (memcmp(&gotf, &bits, sizeof bits))
      fail_msg("matmul%s %s [%zu, %zu] @ [%zu, %zu]: c[%zu, %zu] = %a, the "
               "fmaf chain over k gives %a (bitwise)",
               accumulate ? "_acc" : "", pld_dtype_name(dt), m, kk, kk, n,
               i / n, i % n, (double)gotf, (double)bits);
  }
  test_free(want);
  test_free(bound);
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c0);
  pld_tensor_destroy(z);
  tt_core_release(&c);
}

/* Full blocks, edges in every direction, K across several packed chunks,
 * single rows and columns; tiles whose rows are read in place (FP32 a,
 * whole slabs of rows) and converted ones. */
static const size_t mm_shapes[][3] = {
    {1, 1, 1},    {3, 5, 7},       {8, 128, 32},   {16, 16, 16},
    {17, 33, 65}, {128, 128, 128}, {9, 300, 40},   {1, 64, 100},
    {100, 64, 1}, {64, 256, 48},   {128, 64, 256}, {20, 129, 33}};

static void all_shapes(pld_dtype dt, int accumulate) {
  for (size_t s = 0; s < sizeof mm_shapes / sizeof *mm_shapes; s++)
    for (int exact = 0; exact < 2; exact++)
      check_matmul(dt, mm_shapes[s][0], mm_shapes[s][1], mm_shapes[s][2],
                   accumulate, exact);
}

void test_matmul_fp32_shapes(void **state) {
  (void)state;
  all_shapes(PLD_FP32, 0);
}

void test_matmul_acc(void **state) {
  (void)state;
  all_shapes(PLD_FP32, 1);
}

void test_matmul_fp16_bf16(void **state) {
  (void)state;
  all_shapes(PLD_FP16, 0);
  all_shapes(PLD_BF16, 1);
}

void test_matmul_aliasing(void **state) {
  (void)state;
  uint64_t seed = 11;
  struct pld__core c;
  pld_core k = tt_cube_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 40, 40, PLD_DIR_IN, "x");
  pld_tensor y = tt_tensor(PLD_FP32, 40, 40, PLD_DIR_IN, "y");
  for (size_t i = 0; i < 1600; i++) {
    tt_set(x, i, operand(&seed, 1));
    tt_set(y, i, operand(&seed, 1));
  }
  tt_check_aliasing(k, pld_matmul, x, y);
  pld_tensor want = tt_tensor(PLD_FP32, 40, 40, PLD_DIR_OUT, "want");
  pld_tensor got = tt_tensor(PLD_FP32, 40, 40, PLD_DIR_OUT, "got");
  pld_tile *a = tt_load(k, x);
  pld_tile *t = pld_tile_new(k, PLD_FP32, 40, 40);
  assert_int_equal(pld_matmul(k, t, a, a), PLD_OK);
  tt_store(k, t, want);
  /* a = a + a @ a with all three the same tile; minus a gives a @ a
   * (exactly: the operands are small multiples of 1/4).  The subtraction
   * is the test's, as a cube core has no elementwise ops. */
  assert_int_equal(pld_matmul_acc(k, a, a, a), PLD_OK);
  tt_store(k, a, got);
  for (size_t i = 0; i < 1600; i++)
    assert_true(tt_get(got, i) - tt_get(x, i) == tt_get(want, i));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(want);
  pld_tensor_destroy(got);
  tt_core_release(&c);
}

void test_matmul_on_vector_core(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_FP32, 8, 8, 1);
  assert_int_equal(pld_matmul(k, a, a, a), PLD_ERR_LEVEL);
  tt_assert_failed(k, PLD_ERR_LEVEL, "pld_matmul",
                   "matmul runs on cube cores; kernel k runs on vector cores: "
                   "declare it with PLD_CUBE_KERNEL",
                   NULL);
  tt_core_release(&c);
}

void test_matmul_operand_too_large(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_cube_core(&c);
  pld_tile *a = pld_full(k, PLD_FP32, 128, 256, 1); /* 128 KiB > 64 KiB */
  pld_tile *b = pld_full(k, PLD_FP32, 256, 16, 1);
  pld_tile *d = pld_tile_new(k, PLD_FP32, 128, 16);
  assert_int_equal(pld_matmul(k, d, a, b), PLD_ERR_TILE_MEMORY);
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "pld_matmul", "kernel k",
                   "a (FP32[128, 256], 131072 bytes) does not fit L0A: 65536 "
                   "bytes",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP16, 16, 16, 1);
  b = pld_full(k, PLD_FP16, 16, 4096, 1); /* 128 KiB > 64 KiB */
  d = pld_tile_new(k, PLD_FP32, 16, 4096);
  assert_int_equal(pld_matmul_acc(k, d, a, b), PLD_ERR_TILE_MEMORY);
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "pld_matmul_acc",
                   "b (FP16[16, 4096], 131072 bytes)", "L0B", NULL);
  tt_core_release(&c);
}

void test_matmul_argument_errors(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_cube_core(&c);
  pld_tile *a = pld_full(k, PLD_FP32, 8, 16, 1);
  pld_tile *b = pld_full(k, PLD_FP32, 8, 8, 1);
  pld_tile *d = pld_tile_new(k, PLD_FP32, 8, 8);
  assert_int_equal(pld_matmul(k, d, a, b), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG,
                   "a is FP32[8, 16], b is FP32[8, 8]: a's columns (16) must "
                   "equal b's rows (8)",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 8, 1);
  d = pld_tile_new(k, PLD_FP16, 8, 8);
  assert_int_equal(pld_matmul(k, d, a, a), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "c is FP16[8, 8]", "FP32 c", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT8, 8, 8, 1);
  d = pld_tile_new(k, PLD_FP32, 8, 8);
  assert_int_equal(pld_matmul(k, d, a, a), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "a is INT8[8, 8]",
                   "FP32, FP16 or BF16 operands", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP16, 8, 8, 1);
  b = pld_full(k, PLD_BF16, 8, 8, 1);
  d = pld_tile_new(k, PLD_FP32, 8, 8);
  assert_int_equal(pld_matmul(k, d, a, b), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "a is FP16[8, 8], b is BF16[8, 8]",
                   "dtypes must match", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 4, 1);
  b = pld_full(k, PLD_FP32, 4, 8, 1);
  d = pld_tile_new(k, PLD_FP32, 8, 4);
  assert_int_equal(pld_matmul(k, d, a, b), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "c is FP32[8, 4]: expected [8, 8]", NULL);
  tt_core_release(&c);
}
