/* pld_cast for every dtype pair, its rounding and saturation, and the
 * accuracy of exp and log. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "test_main.h"
#include "tile_test.h"
#include "tile_tests.h"

void test_cast_all_pairs(void **state) {
  (void)state;
  static const int32_t cast_shapes[][2] = {{3, 37}, {4, 64}, {1, 600}};
  uint64_t seed = 5;
  for (int s = 0; s < 7; s++)
    for (int d = 0; d < 7; d++)
      for (size_t sh = 0; sh < 3; sh++) {
        const pld_dtype from = tt_tile_dtypes[s], to = tt_tile_dtypes[d];
        const int32_t rows = cast_shapes[sh][0], cols = cast_shapes[sh][1];
        struct pld__core c;
        pld_core k = tt_vector_core(&c);
        pld_tensor x = tt_tensor(from, rows, cols, PLD_DIR_IN, "x");
        pld_tensor z = tt_tensor(to, rows, cols, PLD_DIR_OUT, "z");
        tt_fill_random(x, &seed);
        pld_tile *a = tt_load(k, x), *t = pld_tile_new(k, to, rows, cols);
        assert_int_equal(pld_cast(k, t, a), PLD_OK);
        tt_store(k, t, z);
        for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++) {
          const double v = tt_get(x, i), want = tt_cast(to, v);
          if (!tt_same(tt_get(z, i), want))
            fail_msg("cast %s -> %s [%d, %d] #%zu: %.17g gave %.17g, want "
                     "%.17g",
                     pld_dtype_name(from), pld_dtype_name(to), (int)rows,
                     (int)cols, i, v, tt_get(z, i), want);
        }
        pld_tensor_destroy(x);
        pld_tensor_destroy(z);
        tt_core_release(&c);
      }
}

void test_cast_rounding_and_saturation(void **state) {
  (void)state;
  static const struct {
    pld_dtype from;
    double v;
    pld_dtype to;
    double want;
  } cases[] = {
      /* Float to integer: nearest, ties to even, then saturate. */
      {PLD_FP32, 2.5, PLD_INT32, 2},
      {PLD_FP32, 3.5, PLD_INT32, 4},
      {PLD_FP32, -2.5, PLD_INT32, -2},
      {PLD_FP32, 0.5, PLD_INT16, 0},
      {PLD_FP32, 1.5, PLD_INT8, 2},
      {PLD_FP32, 0x1.3ffffep1, PLD_INT32, 2}, /* just below 2.5 */
      {PLD_FP32, 3e9, PLD_INT32, 2147483647},
      {PLD_FP32, 2147483648.0, PLD_INT32, 2147483647},
      {PLD_FP32, -2147483648.0, PLD_INT32, -2147483648.0},
      {PLD_FP32, -3e9, PLD_INT32, -2147483648.0},
      {PLD_FP32, INFINITY, PLD_UINT8, 255},
      {PLD_FP32, -INFINITY, PLD_INT8, -128},
      {PLD_FP32, NAN, PLD_INT32, 0},
      {PLD_FP16, NAN, PLD_UINT8, 0},
      {PLD_FP32, -3, PLD_UINT8, 0},
      {PLD_FP32, 255.5, PLD_UINT8, 255},
      {PLD_FP32, 254.5, PLD_UINT8, 254},
      {PLD_BF16, 65536, PLD_INT16, 32767},
      /* Integer to integer saturates. */
      {PLD_INT32, 70000, PLD_INT16, 32767},
      {PLD_INT32, -70000, PLD_INT8, -128},
      {PLD_INT8, -1, PLD_UINT8, 0},
      {PLD_UINT8, 255, PLD_INT8, 127},
      {PLD_INT16, -32768, PLD_INT32, -32768},
      /* Float to FP16: nearest even, ties, subnormals, overflow. */
      {PLD_FP32, 1.0 + 0x1p-11, PLD_FP16, 1.0},
      {PLD_FP32, 1.0 + 0x3p-11, PLD_FP16, 1.0 + 0x1p-9},
      {PLD_FP32, 1.0 + 0x1p-11 + 0x1p-23, PLD_FP16, 1.0 + 0x1p-10},
      {PLD_FP32, -(1.0 + 0x1p-11), PLD_FP16, -1.0},
      {PLD_FP32, 65519, PLD_FP16, 65504},
      {PLD_FP32, 65520, PLD_FP16, INFINITY},
      {PLD_FP32, 0x1p-25, PLD_FP16, 0},
      {PLD_FP32, 0x3p-25, PLD_FP16, 0x1p-23},
      {PLD_FP32, 0x1p-24, PLD_FP16, 0x1p-24},
      {PLD_FP32, 0x1.8p-15, PLD_FP16, 0x1.8p-15}, /* a subnormal */
      {PLD_FP32, NAN, PLD_FP16, NAN},
      {PLD_FP32, -INFINITY, PLD_FP16, -INFINITY},
      /* Float to BF16. */
      {PLD_FP32, 1.0 + 0x1p-8, PLD_BF16, 1.0},
      {PLD_FP32, 1.0 + 0x3p-8, PLD_BF16, 1.0 + 0x1p-6},
      {PLD_FP32, 1.0 + 0x1p-8 + 0x1p-23, PLD_BF16, 1.0 + 0x1p-7},
      {PLD_FP32, FLT_MAX, PLD_BF16, INFINITY},
      {PLD_FP32, 0x1p-133, PLD_BF16, 0x1p-133}, /* smallest subnormal */
      {PLD_FP32, 0x1p-149, PLD_BF16, 0},
      {PLD_FP32, 0x3p-134, PLD_BF16, 0x1p-132}, /* tie: even */
      {PLD_FP32, NAN, PLD_BF16, NAN},
      {PLD_FP16, 0x1.ffcp15, PLD_BF16, 65536},
      {PLD_BF16, 0x1p100, PLD_FP16, INFINITY},
      /* Integer to float: one rounding, to nearest even. */
      {PLD_INT32, 16777217, PLD_FP32, 16777216},
      {PLD_INT32, 16777219, PLD_FP32, 16777220},
      {PLD_INT32, 2049, PLD_FP16, 2048},
      {PLD_INT32, 2051, PLD_FP16, 2052},
      {PLD_INT32, 65519, PLD_FP16, 65504},
      {PLD_INT32, 65520, PLD_FP16, INFINITY},
      {PLD_INT32, 257, PLD_BF16, 256},
      /* 2^25 + 2^17 + 1 lies just above a BF16 tie; rounding it to float
       * first would land on the tie and round down. */
      {PLD_INT32, 33685505, PLD_BF16, 33816576},
      {PLD_INT32, -33685505, PLD_BF16, -33816576},
      {PLD_INT32, 2147483647, PLD_BF16, 2147483648.0},
      {PLD_INT16, -32768, PLD_BF16, -32768},
      {PLD_UINT8, 255, PLD_BF16, 255}, /* 8 significant bits: exact */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor x = tt_tensor(cases[i].from, 1, 3, PLD_DIR_IN, "x");
    pld_tensor z = tt_tensor(cases[i].to, 1, 3, PLD_DIR_OUT, "z");
    for (size_t j = 0; j < 3; j++)
      tt_set(x, j, cases[i].v);
    if (!tt_same(tt_get(x, 0), cases[i].v))
      fail_msg("case %zu: %.17g is not a %s", i, cases[i].v,
               pld_dtype_name(cases[i].from));
    pld_tile *t = pld_tile_new(k, cases[i].to, 1, 3);
    assert_int_equal(pld_cast(k, t, tt_load(k, x)), PLD_OK);
    tt_store(k, t, z);
    if (!tt_same(tt_get(z, 2), cases[i].want))
      fail_msg("case %zu: cast %s %.17g -> %s gave %.17g, want %.17g", i,
               pld_dtype_name(cases[i].from), cases[i].v,
               pld_dtype_name(cases[i].to), tt_get(z, 2), cases[i].want);
    pld_tensor_destroy(x);
    pld_tensor_destroy(z);
    tt_core_release(&c);
  }
}

void test_cast_same_dtype_and_in_place(void **state) {
  (void)state;
  uint64_t seed = 3;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP16, 5, 19, PLD_DIR_IN, "x");
  pld_tensor z = tt_tensor(PLD_FP16, 5, 19, PLD_DIR_OUT, "z");
  tt_fill_random(x, &seed);
  pld_tile *a = tt_load(k, x), *t = pld_tile_new(k, PLD_FP16, 5, 19);
  assert_int_equal(pld_cast(k, t, a), PLD_OK);
  assert_int_equal(pld_cast(k, t, t), PLD_OK);
  tt_store(k, t, z);
  assert_memory_equal(z.p->data, x.p->data, x.p->nbytes);
  pld_tensor_destroy(x);
  pld_tensor_destroy(z);
  tt_core_release(&c);
}

/* ---- exp and log --------------------------------------------------------- */

/* Applies fn to the n values of xs (FP32), chunk by chunk, and checks each
 * against ref within max_ulps float ulps of the exact result. */
static void check_accuracy(const char *name, tt_unary_fn *fn,
                           double (*ref)(double), const float *xs, size_t n,
                           double max_ulps) {
  enum { ROWS = 64, COLS = 512 };
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, ROWS, COLS, PLD_DIR_IN, "x");
  pld_tensor z = tt_tensor(PLD_FP32, ROWS, COLS, PLD_DIR_OUT, "z");
  pld_tile *t = pld_tile_new(k, PLD_FP32, ROWS, COLS);
  double worst = 0;
  for (size_t i0 = 0; i0 < n; i0 += ROWS * COLS) {
    const size_t m = n - i0 < ROWS * COLS ? n - i0 : ROWS * COLS;
    memset(x.p->data, 0, x.p->nbytes);
    memcpy(x.p->data, xs + i0, m * sizeof(float));
    assert_int_equal(pld_load_into(k, t, x, 0, 0), PLD_OK);
    assert_int_equal(fn(k, t, t), PLD_OK);
    tt_store(k, t, z);
    for (size_t i = 0; i < m; i++) {
      const double v = xs[i0 + i], got = tt_get(z, i);
      double want = ref(v);
      /* Beyond the float range the reference is its rounding (infinity,
       * or FLT_MAX when it rounds down). */
      if (fabs(want) > FLT_MAX)
        want = tt_cast(PLD_FP32, want);
      const double u = tt_ulps(PLD_FP32, got, want);
      if (u > max_ulps)
        fail_msg("%s(%.9g) = %.9g, want %.17g: %.2f ulp", name, v, got, want,
                 u);
      worst = u > worst ? u : worst;
    }
  }
  print_message("%s: %zu values, worst error %.3f ulp\n", name, n, worst);
  pld_tensor_destroy(x);
  pld_tensor_destroy(z);
  tt_core_release(&c);
}

static float *sweep(double lo, double hi, size_t n) {
  float *xs = test_malloc(n * sizeof *xs);
  for (size_t i = 0; i < n; i++)
    xs[i] = (float)(lo + (hi - lo) * (double)i / (double)(n - 1));
  return xs;
}

void test_exp_accuracy(void **state) {
  (void)state;
  /* Normal and subnormal results, overflow, and the points near 0. */
  const size_t n = 400000;
  float *xs = sweep(-103.9, 88.8, n);
  check_accuracy("exp", pld_exp, exp, xs, n, 4);
  for (size_t i = 0; i < n; i++)
    xs[i] = (float)ldexp((double)i / (double)n - 0.5, -(int)(i % 30));
  check_accuracy("exp near 0", pld_exp, exp, xs, n, 4);
  test_free(xs);
  static const float specials[] = {
      0.0f,      -0.0f,   INFINITY, -INFINITY, NAN,    89.0f,      88.72283f,
      88.72284f, -104.0f, -150.0f,  1e30f,     -1e30f, -87.33655f, 0x1p-149f};
  check_accuracy("exp specials", pld_exp, exp, specials,
                 sizeof specials / sizeof *specials, 4);
}

void test_log_accuracy(void **state) {
  (void)state;
  /* Every binade: bit patterns from the smallest subnormal to the
   * largest float, then densely around 1, where the result is tiny. */
  const size_t n = 400000;
  float *xs = test_malloc(n * sizeof *xs);
  for (size_t i = 0; i < n; i++) {
    const uint32_t u =
        (uint32_t)(1 + (uint64_t)i * (0x7F7FFFFFu - 1) / (n - 1));
    memcpy(&xs[i], &u, sizeof u);
  }
  check_accuracy("log", pld_log, log, xs, n, 4);
  test_free(xs);
  xs = sweep(0.5, 2.0, n);
  check_accuracy("log near 1", pld_log, log, xs, n, 4);
  test_free(xs);
  static const float specials[] = {
      0.0f, -0.0f,     1.0f,    -1.0f,     INFINITY,    -INFINITY,
      NAN,  0x1p-149f, FLT_MAX, 0x1p-126f, 0.70710677f, 0.70710683f};
  check_accuracy("log specials", pld_log, log, specials,
                 sizeof specials / sizeof *specials, 4);
}
