/* Elementwise operations, reductions and expansions against plain double
 * and int64 references, for every tile dtype and awkward shapes. */
#include <math.h>
#include <string.h>

#include "test_main.h"
#include "tile_test.h"
#include "tile_tests.h"

enum op {
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIV,
  OP_MAX,
  OP_MIN,
  OP_NEG,
  OP_ABS,
  OP_RELU,
  OP_EXP,
  OP_LOG,
  OP_SQRT,
  OP_RSQRT,
  OP_RECIP
};

static const char *const op_names[] = {
    "add", "sub",  "mul", "div", "max",  "min",   "neg",
    "abs", "relu", "exp", "log", "sqrt", "rsqrt", "reciprocal"};

/* Shapes: a single element, one row, cols not a multiple of 8, flat
 * (unpadded) tiles, padded rows, and the benchmark's shape. */
static const int32_t shapes[][2] = {{1, 1},  {1, 133}, {3, 37},
                                    {4, 64}, {7, 9},   {64, 128}};
#define NSHAPES (sizeof shapes / sizeof *shapes)

/* The exact result in double (for floats, rounding it to the dtype then
 * gives the correctly rounded result the library computes in float). */
static double ref_float(enum op op, double x, double y) {
  switch (op) {
  case OP_ADD:
    return x + y;
  case OP_SUB:
    return x - y;
  case OP_MUL:
    return x * y;
  case OP_DIV:
    return x / y;
  case OP_MAX:
    return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
  case OP_MIN:
    return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
  case OP_NEG:
    return -x;
  case OP_ABS:
    return fabs(x);
  case OP_RELU:
    return x < 0 ? 0.0 : x;
  case OP_EXP:
    return exp(x);
  case OP_LOG:
    return log(x);
  case OP_SQRT:
    return sqrt(x);
  case OP_RSQRT:
    return 1.0 / sqrt(x);
  case OP_RECIP:
    return 1.0 / x;
  }
  return 0;
}

static int64_t ref_int(enum op op, int64_t x, int64_t y) {
  switch (op) {
  case OP_ADD:
    return x + y;
  case OP_SUB:
    return x - y;
  case OP_MUL:
    return x * y;
  case OP_DIV:
    return x / y;
  case OP_MAX:
    return x > y ? x : y;
  case OP_MIN:
    return x < y ? x : y;
  case OP_NEG:
    return -x;
  case OP_ABS:
    return x < 0 ? -x : x;
  case OP_RELU:
    return x < 0 ? 0 : x;
  default:
    return 0;
  }
}

static double ref(enum op op, pld_dtype dt, double x, double y) {
  if (tt_is_float(dt))
    return tt_cast(dt, ref_float(op, x, y));
  return tt_wrap(dt, ref_int(op, (int64_t)x, (int64_t)y));
}

/* Units in the last place the library may be off by: exp and log are
 * approximations (4 float ulp, which rounding to FP16/BF16 turns into at
 * most 1), rsqrt rounds twice (sqrt, then the division). */
static double tolerance(enum op op, pld_dtype dt) {
  if (op == OP_EXP || op == OP_LOG)
    return dt == PLD_FP32 ? 4 : 1;
  return op == OP_RSQRT ? 1 : 0;
}

static void expect_element(const char *what, enum op op, pld_dtype dt, size_t i,
                           double x, double y, double got, double want) {
  const double tol = tolerance(op, dt);
  const int ok = tol > 0 && tt_is_float(dt) ? tt_ulps(dt, got, want) <= tol
                                            : tt_same(got, want);
  if (!ok)
    fail_msg("%s %s %s: element %zu: x = %.9g, y = %.9g: got %.9g, want "
             "%.9g",
             what, op_names[op], pld_dtype_name(dt), i, x, y, got, want);
}

/* Integer divisors: zeros are the subject of their own test. */
static void no_zeros(pld_tensor t) {
  for (size_t i = 0; i < (size_t)pld_tensor_numel(t); i++)
    if (tt_get(t, i) == 0)
      tt_set(t, i, 1);
}

static void check_binary(enum op op, tt_binary_fn *fn, tt_scalar_fn *sfn) {
  static const double scalars[] = {2.5, -3.0, 300.0, 1e10, -0.75, 7.0, NAN};
  uint64_t seed = 1000 + (uint64_t)op;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < NSHAPES; s++) {
      const int32_t rows = shapes[s][0], cols = shapes[s][1];
      const size_t n = (size_t)rows * (size_t)cols;
      struct pld__core c;
      pld_core k = tt_vector_core(&c);
      pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
      pld_tensor y = tt_tensor(dt, rows, cols, PLD_DIR_IN, "y");
      pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
      tt_fill_random(x, &seed);
      tt_fill_random(y, &seed);
      if (op == OP_DIV && !tt_is_float(dt))
        no_zeros(y);
      pld_tile *a = tt_load(k, x), *b = tt_load(k, y);
      pld_tile *t = pld_tile_new(k, dt, rows, cols);
      assert_int_equal(fn(k, t, a, b), PLD_OK);
      tt_store(k, t, z);
      for (size_t i = 0; i < n; i++)
        expect_element("tile", op, dt, i, tt_get(x, i), tt_get(y, i),
                       tt_get(z, i), ref(op, dt, tt_get(x, i), tt_get(y, i)));
      for (size_t v = 0; v < sizeof scalars / sizeof *scalars; v++) {
        const double sv = tt_cast(dt, scalars[v]);
        if (op == OP_DIV && sv == 0)
          continue;
        assert_int_equal(sfn(k, t, a, scalars[v]), PLD_OK);
        tt_store(k, t, z);
        for (size_t i = 0; i < n; i++)
          expect_element("scalar", op, dt, i, tt_get(x, i), sv, tt_get(z, i),
                         ref(op, dt, tt_get(x, i), sv));
      }
      assert_int_equal(k.p->status, PLD_OK);
      pld_tensor_destroy(x);
      pld_tensor_destroy(y);
      pld_tensor_destroy(z);
      tt_core_release(&c);
    }
  }
}

static void check_unary(enum op op, tt_unary_fn *fn, int float_only) {
  uint64_t seed = 2000 + (uint64_t)op;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    if (float_only && !tt_is_float(dt))
      continue;
    for (size_t s = 0; s < NSHAPES; s++) {
      const int32_t rows = shapes[s][0], cols = shapes[s][1];
      struct pld__core c;
      pld_core k = tt_vector_core(&c);
      pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
      pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
      tt_fill_random(x, &seed);
      pld_tile *a = tt_load(k, x), *t = pld_tile_new(k, dt, rows, cols);
      assert_int_equal(fn(k, t, a), PLD_OK);
      tt_store(k, t, z);
      for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        expect_element("unary", op, dt, i, tt_get(x, i), 0, tt_get(z, i),
                       ref(op, dt, tt_get(x, i), 0));
      pld_tensor_destroy(x);
      pld_tensor_destroy(z);
      tt_core_release(&c);
    }
  }
}

/* One test case per binary operation (tile-tile and tile-scalar). */
#define BINARY_TEST(name, op, tile_fn, scalar_fn)                              \
  void name(void **state) {                                                    \
    (void)state;                                                               \
    check_binary(op, tile_fn, scalar_fn);                                      \
  }
BINARY_TEST(test_add_all_dtypes, OP_ADD, pld_add, pld_adds)
BINARY_TEST(test_sub_all_dtypes, OP_SUB, pld_sub, pld_subs)
BINARY_TEST(test_mul_all_dtypes, OP_MUL, pld_mul, pld_muls)
BINARY_TEST(test_div_all_dtypes, OP_DIV, pld_div, pld_divs)
BINARY_TEST(test_maximum_all_dtypes, OP_MAX, pld_maximum, pld_maxs)
BINARY_TEST(test_minimum_all_dtypes, OP_MIN, pld_minimum, pld_mins)

void test_neg_abs_relu_all_dtypes(void **state) {
  (void)state;
  check_unary(OP_NEG, pld_neg, 0);
  check_unary(OP_ABS, pld_abs, 0);
  check_unary(OP_RELU, pld_relu, 0);
}

void test_float_unary_all_float_dtypes(void **state) {
  (void)state;
  check_unary(OP_EXP, pld_exp, 1);
  check_unary(OP_LOG, pld_log, 1);
  check_unary(OP_SQRT, pld_sqrt, 1);
  check_unary(OP_RSQRT, pld_rsqrt, 1);
  check_unary(OP_RECIP, pld_reciprocal, 1);
}

/* dst may be a source: the result equals the out-of-place one. */
void test_in_place_aliasing(void **state) {
  (void)state;
  uint64_t seed = 7;
  static const pld_dtype dts[] = {PLD_FP32, PLD_FP16, PLD_INT8, PLD_INT32};
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
    const pld_dtype dt = dts[d];
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor x = tt_tensor(dt, 5, 37, PLD_DIR_IN, "x");
    pld_tensor y = tt_tensor(dt, 5, 37, PLD_DIR_IN, "y");
    tt_fill_random(x, &seed);
    tt_fill_random(y, &seed);
    tt_check_aliasing(k, pld_sub, x, y);
    pld_tensor want = tt_tensor(dt, 5, 37, PLD_DIR_OUT, "want");
    pld_tensor got = tt_tensor(dt, 5, 37, PLD_DIR_OUT, "got");
    pld_tile *a = tt_load(k, x), *t = pld_tile_new(k, dt, 5, 37);
    /* Unary and scalar in place. */
    assert_int_equal(pld_muls(k, t, a, 3.0), PLD_OK);
    assert_int_equal(pld_abs(k, t, t), PLD_OK);
    tt_store(k, t, want);
    assert_int_equal(pld_muls(k, a, a, 3.0), PLD_OK);
    assert_int_equal(pld_abs(k, a, a), PLD_OK);
    tt_store(k, a, got);
    assert_memory_equal(got.p->data, want.p->data, want.p->nbytes);
    assert_int_equal(k.p->status, PLD_OK);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(want);
    pld_tensor_destroy(got);
    tt_core_release(&c);
  }
}

/* One operation on 1-element tiles, by value. */
static double op1(pld_core k, pld_dtype dt, enum op op, double x, double y) {
  pld_tile *a = pld_full(k, dt, 1, 1, x), *b = pld_full(k, dt, 1, 1, y);
  pld_tensor z = tt_tensor(dt, 1, 1, PLD_DIR_OUT, "z");
  switch (op) {
  case OP_ADD:
    pld_add(k, a, a, b);
    break;
  case OP_SUB:
    pld_sub(k, a, a, b);
    break;
  case OP_MUL:
    pld_mul(k, a, a, b);
    break;
  case OP_DIV:
    pld_div(k, a, a, b);
    break;
  case OP_NEG:
    pld_neg(k, a, a);
    break;
  case OP_ABS:
    pld_abs(k, a, a);
    break;
  default:
    fail_msg("op1: %s", op_names[op]);
  }
  tt_store(k, a, z);
  const double v = tt_get(z, 0);
  pld_tile_free(k, a);
  pld_tile_free(k, b);
  pld_tensor_destroy(z);
  return v;
}

void test_integer_wrap_and_division(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  static const struct {
    pld_dtype dt;
    enum op op;
    double x, y, want;
  } cases[] = {
      {PLD_INT8, OP_ADD, 127, 1, -128},
      {PLD_INT8, OP_SUB, -128, 1, 127},
      {PLD_UINT8, OP_SUB, 0, 1, 255},
      {PLD_UINT8, OP_ADD, 200, 100, 44},
      {PLD_INT16, OP_MUL, 300, 300, 24464}, /* 90000 - 65536 */
      {PLD_INT32, OP_ADD, 2147483647, 1, -2147483648.0},
      {PLD_INT32, OP_MUL, 65536, 65536, 0},
      {PLD_INT32, OP_MUL, -2147483648.0, -1, -2147483648.0},
      {PLD_INT32, OP_NEG, -2147483648.0, 0, -2147483648.0},
      {PLD_INT32, OP_ABS, -2147483648.0, 0, -2147483648.0},
      {PLD_INT8, OP_ABS, -128, 0, -128},
      {PLD_INT8, OP_NEG, -5, 0, 5},
      {PLD_UINT8, OP_NEG, 1, 0, 255},
      {PLD_UINT8, OP_ABS, 200, 0, 200},
      /* Division truncates toward zero; the one overflowing quotient
       * wraps. */
      {PLD_INT32, OP_DIV, -7, 2, -3},
      {PLD_INT32, OP_DIV, 7, -2, -3},
      {PLD_INT32, OP_DIV, -2147483648.0, -1, -2147483648.0},
      {PLD_INT32, OP_DIV, 2147483647, 2147483646, 1},
      {PLD_INT32, OP_DIV, -2147483647, 2147483647, -1},
      {PLD_INT32, OP_DIV, 2147483646, 2147483647, 0},
      {PLD_INT8, OP_DIV, -128, -1, -128},
      {PLD_INT16, OP_DIV, -32768, 3, -10922},
      {PLD_UINT8, OP_DIV, 255, 2, 127},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const double got = op1(k, cases[i].dt, cases[i].op, cases[i].x, cases[i].y);
    if (got != cases[i].want)
      fail_msg("%s %s(%g, %g) = %g, want %g", pld_dtype_name(cases[i].dt),
               op_names[cases[i].op], cases[i].x, cases[i].y, got,
               cases[i].want);
  }
  assert_int_equal(k.p->status, PLD_OK);
  tt_core_release(&c);
}

void test_float_special_values(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  /* Float division by zero is no failure. */
  assert_true(op1(k, PLD_FP32, OP_DIV, 1, 0) == INFINITY);
  assert_true(isnan(op1(k, PLD_FP32, OP_DIV, 0, 0)));
  assert_true(op1(k, PLD_FP16, OP_DIV, -1, 0) == -INFINITY);
  /* FP16 and BF16 results round to nearest even and overflow to inf. */
  assert_true(op1(k, PLD_FP16, OP_ADD, 65504, 8) == 65504);
  /* 65520 is the tie between 65504 (odd) and 2^16: even, so infinity. */
  assert_true(op1(k, PLD_FP16, OP_ADD, 65504, 16) == INFINITY);
  assert_true(op1(k, PLD_FP16, OP_ADD, 2048, 1) == 2048); /* tie: even */
  assert_true(op1(k, PLD_FP16, OP_ADD, 2050, 1) == 2052); /* tie: even */
  assert_true(op1(k, PLD_BF16, OP_ADD, 256, 1) == 256);
  assert_true(op1(k, PLD_BF16, OP_ADD, 258, 1) == 260);
  assert_true(op1(k, PLD_FP16, OP_MUL, 0x1p-14, 0x1p-10) == 0x1p-24);
  assert_true(op1(k, PLD_FP16, OP_MUL, 0x1p-14, 0x1p-11) == 0); /* tie */
  assert_true(signbit(op1(k, PLD_FP32, OP_NEG, 0, 0)));
  assert_true(isnan(op1(k, PLD_BF16, OP_SUB, INFINITY, INFINITY)));
  assert_int_equal(k.p->status, PLD_OK);
  tt_core_release(&c);
}

void test_int_divide_by_zero_tile(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_INT32, 4, 5, 10);
  pld_tile *b = pld_full(k, PLD_INT32, 4, 5, 2);
  pld_tensor y = tt_tensor(PLD_INT32, 4, 5, PLD_DIR_IN, "y");
  for (size_t i = 0; i < 20; i++)
    tt_set(y, i, i == 13 || i == 17 ? 0 : 2);
  assert_int_equal(pld_load_into(k, b, y, 0, 0), PLD_OK);
  pld_tile *d = pld_full(k, PLD_INT32, 4, 5, -1);
  assert_int_equal(pld_div(k, d, a, b), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_div", "kernel k",
                   "integer division by zero", "b is INT32[4, 5]",
                   "b[2, 3] is 0", NULL);
  /* Checked before computing: dst is untouched. */
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < 5; j++)
      assert_int_equal(((int32_t *)(d->data + (size_t)r * d->row_bytes))[j],
                       -1);
  pld_tensor_destroy(y);
  tt_core_release(&c);
}

void test_int_divide_by_zero_scalar(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_UINT8, 2, 2, 10);
  /* 0.4 rounds to 0 in an integer tile. */
  assert_int_equal(pld_divs(k, a, a, 0.4), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_divs", "integer division by zero",
                   "0.4 is 0 as UINT8", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  pld_tile *f = pld_full(k, PLD_FP32, 2, 2, 1);
  assert_int_equal(pld_divs(k, f, f, 0.0), PLD_OK);
  tt_core_release(&c);
}

void test_float_only_ops_reject_integers(void **state) {
  (void)state;
  tt_unary_fn *const fns[] = {pld_exp, pld_log, pld_sqrt, pld_rsqrt,
                              pld_reciprocal};
  const char *const names[] = {"pld_exp", "pld_log", "pld_sqrt", "pld_rsqrt",
                               "pld_reciprocal"};
  for (int i = 0; i < 5; i++) {
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tile *a = pld_full(k, PLD_INT16, 4, 4, 1);
    assert_int_equal(fns[i](k, a, a), PLD_ERR_UNSUPPORTED);
    tt_assert_failed(k, PLD_ERR_UNSUPPORTED, names[i], "a is INT16[4, 4]",
                     "takes float tiles only (FP32, FP16, BF16)", NULL);
    tt_core_release(&c);
  }
}

void test_shape_and_dtype_mismatch(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *d = pld_tile_new(k, PLD_FP32, 8, 16);
  pld_tile *a = pld_full(k, PLD_FP32, 8, 8, 1);
  assert_int_equal(pld_add(k, d, a, a), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_add: kernel k",
                   "dst is FP32[8, 16], a is FP32[8, 8]: shapes must match",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 8, 1);
  pld_tile *h = pld_full(k, PLD_FP16, 8, 8, 1);
  assert_int_equal(pld_mul(k, a, a, h), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_mul",
                   "a is FP32[8, 8], b is FP16[8, 8]: dtypes must match", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 8, 1);
  h = pld_full(k, PLD_FP16, 8, 8, 1);
  assert_int_equal(pld_cast(k, h, pld_full(k, PLD_INT8, 8, 4, 1)), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_cast",
                   "dst is FP16[8, 8], a is INT8[8, 4]: shapes must match",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT8, 8, 8, 1);
  assert_int_equal(pld_relu(k, pld_tile_new(k, PLD_UINT8, 8, 8), a),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_relu", "dtypes must match", NULL);
  tt_core_release(&c);
}

/* ---- reductions ---------------------------------------------------------- */

static const int32_t red_shapes[][2] = {{1, 1},   {1, 300},  {3, 37},
                                        {7, 300}, {64, 128}, {300, 3}};

/* The reduction of n values x[0], x[stride], ... in long double (floats)
 * or int64 (wrapped), as the dtype holds it. */
static double ref_reduce(pld_dtype dt, int kind, pld_tensor x, size_t first,
                         size_t stride, size_t n) {
  long double s = kind == 0 ? 0 : tt_get(x, first);
  int64_t is = 0;
  int nan = 0;
  for (size_t i = 0; i < n; i++) {
    const double v = tt_get(x, first + i * stride);
    nan |= isnan(v);
    if (!tt_is_float(dt))
      is += (int64_t)v;
    if (kind == 0)
      s += v;
    else if (kind == 1)
      s = v > s ? v : s;
    else
      s = v < s ? v : s;
  }
  if (!tt_is_float(dt))
    return kind == 0 ? tt_wrap(dt, is) : (double)s;
  return nan ? NAN : tt_cast(dt, (double)s);
}

typedef int reduce_fn(pld_core, pld_tile *, const pld_tile *);

static void check_reduce(int by_row, reduce_fn *const fns[3]) {
  static const char *const kinds[] = {"sum", "max", "min"};
  uint64_t seed = 77 + (uint64_t)by_row;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < sizeof red_shapes / sizeof *red_shapes; s++) {
      const int32_t rows = red_shapes[s][0], cols = red_shapes[s][1];
      const int32_t orows = by_row ? rows : 1, ocols = by_row ? 1 : cols;
      struct pld__core c;
      pld_core k = tt_vector_core(&c);
      pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
      pld_tensor z = tt_tensor(dt, orows, ocols, PLD_DIR_OUT, "z");
      tt_fill_random(x, &seed);
      pld_tile *a = tt_load(k, x), *t = pld_tile_new(k, dt, orows, ocols);
      const pld_tile *guard = tt_guard(k);
      for (int kind = 0; kind < 3; kind++) {
        char name[32];
        snprintf(name, sizeof name, "pld_%s_%s", by_row ? "row" : "col",
                 kinds[kind]);
        assert_int_equal(fns[kind](k, t, a), PLD_OK);
        tt_guard_intact(guard, name);
        tt_store(k, t, z);
        for (size_t o = 0; o < (size_t)(by_row ? rows : cols); o++) {
          const double want =
              by_row
                  ? ref_reduce(dt, kind, x, o * (size_t)cols, 1, (size_t)cols)
                  : ref_reduce(dt, kind, x, o, (size_t)cols, (size_t)rows);
          const double got = tt_get(z, o);
          /* Float sums may differ in the last place: the library adds in
           * another order. */
          const int ok = kind == 0 && tt_is_float(dt)
                             ? tt_ulps(dt, got, want) <= 1
                             : tt_same(got, want);
          if (!ok)
            fail_msg("%s_%s %s[%d, %d] #%zu: got %.9g, want %.9g",
                     by_row ? "row" : "col", kinds[kind], pld_dtype_name(dt),
                     (int)rows, (int)cols, o, got, want);
        }
      }
      pld_tensor_destroy(x);
      pld_tensor_destroy(z);
      tt_core_release(&c);
    }
  }
}

void test_row_reductions_all_dtypes(void **state) {
  (void)state;
  reduce_fn *const fns[3] = {pld_row_sum, pld_row_max, pld_row_min};
  check_reduce(1, fns);
}

void test_col_reductions_all_dtypes(void **state) {
  (void)state;
  reduce_fn *const fns[3] = {pld_col_sum, pld_col_max, pld_col_min};
  check_reduce(0, fns);
}

void test_reduction_values(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 2, 40, PLD_DIR_IN, "x");
  for (size_t i = 0; i < 80; i++)
    tt_set(x, i, 1.0);
  tt_set(x, 17, NAN);      /* row 0 */
  tt_set(x, 40 + 3, 1e10); /* row 1: 1e10 + 38 - 1e10 */
  tt_set(x, 40 + 39, -1e10);
  pld_tile *a = tt_load(k, x), *s = pld_tile_new(k, PLD_FP32, 2, 1);
  pld_tensor z = tt_tensor(PLD_FP32, 2, 1, PLD_DIR_OUT, "z");
  assert_int_equal(pld_row_max(k, s, a), PLD_OK);
  tt_store(k, s, z);
  assert_true(isnan(tt_get(z, 0)));
  assert_true(tt_get(z, 1) == 1e10);
  assert_int_equal(pld_row_sum(k, s, a), PLD_OK);
  tt_store(k, s, z);
  assert_true(isnan(tt_get(z, 0)));
  /* A double accumulator keeps the 38 that float would lose. */
  assert_true(tt_get(z, 1) == 38.0);
  /* In place: a single column reduced onto itself. */
  pld_tile *col = pld_full(k, PLD_INT8, 5, 1, -3);
  assert_int_equal(pld_row_sum(k, col, col), PLD_OK);
  assert_int_equal(pld_col_sum(k, pld_tile_new(k, PLD_INT8, 1, 1), col),
                   PLD_OK);
  /* INT8 sums wrap: 100 * 3 = 300 = 44 (mod 256). */
  pld_tile *w = pld_full(k, PLD_INT8, 1, 3, 100),
           *ws = pld_tile_new(k, PLD_INT8, 1, 1);
  pld_tensor wz = tt_tensor(PLD_INT8, 1, 1, PLD_DIR_OUT, "wz");
  assert_int_equal(pld_row_sum(k, ws, w), PLD_OK);
  tt_store(k, ws, wz);
  assert_true(tt_get(wz, 0) == 44.0);
  assert_int_equal(k.p->status, PLD_OK);
  pld_tensor_destroy(x);
  pld_tensor_destroy(z);
  pld_tensor_destroy(wz);
  tt_core_release(&c);
}

void test_reduction_shape_errors(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_FP32, 8, 16, 1);
  assert_int_equal(pld_row_sum(k, pld_tile_new(k, PLD_FP32, 8, 2), a),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_sum",
                   "dst is FP32[8, 2], a is FP32[8, 16]: dst must be [8, 1]",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 16, 1);
  assert_int_equal(pld_col_max(k, pld_tile_new(k, PLD_FP16, 1, 16), a),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_col_max", "dtypes must match", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 16, 1);
  assert_int_equal(pld_row_expand(k, a, pld_tile_new(k, PLD_FP32, 1, 8)),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_expand",
                   "v is FP32[1, 8], dst is FP32[8, 16]: v must be [8, 1]",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 8, 16, 1);
  assert_int_equal(pld_col_expand(k, a, pld_tile_new(k, PLD_FP32, 8, 1)),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_col_expand", "v must be [1, 16]", NULL);
  tt_core_release(&c);
}

void test_expand_all_dtypes(void **state) {
  (void)state;
  uint64_t seed = 99;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < NSHAPES; s++) {
      const int32_t rows = shapes[s][0], cols = shapes[s][1];
      struct pld__core c;
      pld_core k = tt_vector_core(&c);
      pld_tensor vr = tt_tensor(dt, rows, 1, PLD_DIR_IN, "vr");
      pld_tensor vc = tt_tensor(dt, 1, cols, PLD_DIR_IN, "vc");
      pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
      tt_fill_random(vr, &seed);
      tt_fill_random(vc, &seed);
      pld_tile *r = tt_load(k, vr), *v = tt_load(k, vc);
      pld_tile *t = pld_tile_new(k, dt, rows, cols);
      const pld_tile *guard = tt_guard(k);
      assert_int_equal(pld_row_expand(k, t, r), PLD_OK);
      tt_guard_intact(guard, "pld_row_expand");
      tt_store(k, t, z);
      for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        assert_true(tt_same(tt_get(z, i), tt_get(vr, i / (size_t)cols)));
      assert_int_equal(pld_col_expand(k, t, v), PLD_OK);
      tt_guard_intact(guard, "pld_col_expand");
      tt_store(k, t, z);
      for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        assert_true(tt_same(tt_get(z, i), tt_get(vc, i % (size_t)cols)));
      pld_tensor_destroy(vr);
      pld_tensor_destroy(vc);
      pld_tensor_destroy(z);
      tt_core_release(&c);
    }
  }
}
