/* The routing operations (pld/tile.h's routing section) against plain C
 * references written here: comparisons, selection, casts of masks,
 * argmax/argmin, top-k, prefix sums, remainders, bitwise operations,
 * shifts and index tiles, for every dtype they take, on random inputs and
 * on inputs with many ties (small integers), NaN among the floats, and
 * column counts of 1, 7, 33, 300 and 1100 (past a chunk of 512). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_main.h"
#include "tile_test.h"
#include "tile_tests.h"

static const int32_t shapes[][2] = {{1, 1},   {3, 7},    {2, 33},
                                    {4, 300}, {2, 1100}, {3, 64}};
#define NSHAPES (sizeof shapes / sizeof *shapes)

/* Inputs: random over the dtype (mode 0), or small integers - many ties -
 * with now and then a NaN or a -0 among floats (mode 1). */
static void fill(pld_tensor t, int mode, uint64_t *seed) {
  const pld_dtype dt = t.p->dtype;
  const size_t n = (size_t)pld_tensor_numel(t);
  for (size_t i = 0; i < n; i++) {
    double v = tt_random(dt, seed);
    if (mode == 1) {
      const uint64_t r = tt_rand(seed);
      v = (double)(int)(r % 7) - (dt == PLD_UINT8 ? 0 : 3);
      if (tt_is_float(dt) && r % 23 == 0)
        v = NAN;
      if (tt_is_float(dt) && r % 29 == 0)
        v = -0.0;
    }
    tt_set(t, i, v);
  }
}

/* ---- comparisons and masks ----------------------------------------------- */

static int ref_cmp(pld_cmp_op op, double x, double y) {
  switch (op) {
  case PLD_CMP_EQ:
    return x == y;
  case PLD_CMP_NE:
    return x != y;
  case PLD_CMP_LT:
    return x < y;
  case PLD_CMP_LE:
    return x <= y;
  case PLD_CMP_GT:
    return x > y;
  case PLD_CMP_GE:
    return x >= y;
  }
  return -1;
}

void test_cmp_all_dtypes(void **state) {
  (void)state;
  static const double scalars[] = {0.0, 1.0, -2.5, 300.0, NAN, -3.0};
  uint64_t seed = 31;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < NSHAPES; s++)
      for (int mode = 0; mode < 2; mode++) {
        const int32_t rows = shapes[s][0], cols = shapes[s][1];
        const size_t n = (size_t)rows * (size_t)cols;
        struct pld__core c;
        pld_core k = tt_vector_core(&c);
        pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
        pld_tensor y = tt_tensor(dt, rows, cols, PLD_DIR_IN, "y");
        pld_tensor z = tt_tensor(PLD_BOOL, rows, cols, PLD_DIR_OUT, "z");
        fill(x, mode, &seed);
        fill(y, mode, &seed);
        pld_tile *a = tt_load(k, x), *b = tt_load(k, y);
        pld_tile *m = pld_tile_new(k, PLD_BOOL, rows, cols);
        for (int op = PLD_CMP_EQ; op <= PLD_CMP_GE; op++) {
          assert_int_equal(pld_cmp(k, m, a, b, (pld_cmp_op)op), PLD_OK);
          tt_store(k, m, z);
          for (size_t i = 0; i < n; i++) {
            const double xv = tt_get(x, i), yv = tt_get(y, i);
            if (tt_get(z, i) != ref_cmp((pld_cmp_op)op, xv, yv))
              fail_msg("pld_cmp op %d %s[%d, %d] #%zu: %g vs %g gave %g", op,
                       pld_dtype_name(dt), (int)rows, (int)cols, i, xv, yv,
                       tt_get(z, i));
          }
          for (size_t v = 0; v < sizeof scalars / sizeof *scalars; v++) {
            /* The scalar is converted to a's dtype first. */
            const double sv = tt_cast(dt, scalars[v]);
            assert_int_equal(pld_cmps(k, m, a, scalars[v], (pld_cmp_op)op),
                             PLD_OK);
            tt_store(k, m, z);
            for (size_t i = 0; i < n; i++)
              if (tt_get(z, i) != ref_cmp((pld_cmp_op)op, tt_get(x, i), sv))
                fail_msg("pld_cmps op %d %s #%zu: %g vs %g (%g) gave %g", op,
                         pld_dtype_name(dt), i, tt_get(x, i), sv, scalars[v],
                         tt_get(z, i));
          }
        }
        assert_int_equal(k.p->status, PLD_OK);
        pld_tensor_destroy(x);
        pld_tensor_destroy(y);
        pld_tensor_destroy(z);
        tt_core_release(&c);
      }
  }
}

static const pld_dtype all_dtypes[10] = {
    PLD_FP32, PLD_FP16,  PLD_BF16,  PLD_INT32, PLD_INT16,
    PLD_INT8, PLD_UINT8, PLD_INT64, PLD_FP64,  PLD_BOOL};

/* Random bytes into t (every element any bit pattern; BOOL 0, 1 or 2). */
static void fill_bytes(pld_tensor t, uint64_t *seed) {
  unsigned char *p = pld_tensor_data(t);
  for (size_t i = 0; i < t.p->nbytes; i++)
    p[i] = t.p->dtype == PLD_BOOL ? (unsigned char)(tt_rand(seed) % 3)
                                  : (unsigned char)tt_rand(seed);
}

void test_select_all_dtypes(void **state) {
  (void)state;
  uint64_t seed = 41;
  for (int d = 0; d < 10; d++) {
    const pld_dtype dt = all_dtypes[d];
    const size_t es = pld_dtype_size(dt);
    for (size_t s = 0; s < NSHAPES; s++) {
      const int32_t rows = shapes[s][0], cols = shapes[s][1];
      const size_t n = (size_t)rows * (size_t)cols;
      struct pld__core c;
      pld_core k = tt_vector_core(&c);
      pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
      pld_tensor y = tt_tensor(dt, rows, cols, PLD_DIR_IN, "y");
      pld_tensor mk = tt_tensor(PLD_BOOL, rows, cols, PLD_DIR_IN, "m");
      pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
      fill_bytes(x, &seed);
      fill_bytes(y, &seed);
      fill_bytes(mk, &seed); /* 2 is true as well */
      const unsigned char *xb = pld_tensor_data(x), *yb = pld_tensor_data(y);
      const unsigned char *mb = pld_tensor_data(mk), *zb = pld_tensor_data(z);
      pld_tile *a = tt_load(k, x), *b = tt_load(k, y), *m = tt_load(k, mk);
      pld_tile *t = pld_tile_new(k, dt, rows, cols);
      assert_int_equal(pld_select(k, t, m, a, b), PLD_OK);
      tt_store(k, t, z);
      for (size_t i = 0; i < n; i++)
        if (memcmp(zb + i * es, (mb[i] ? xb : yb) + i * es, es) != 0)
          fail_msg("pld_select %s #%zu (mask %d): wrong bits",
                   pld_dtype_name(dt), i, mb[i]);
      /* In place, dst == b. */
      assert_int_equal(pld_select(k, b, m, a, b), PLD_OK);
      tt_store(k, b, z);
      for (size_t i = 0; i < n; i++)
        if (memcmp(zb + i * es, (mb[i] ? xb : yb) + i * es, es) != 0)
          fail_msg("pld_select in place %s #%zu: wrong bits",
                   pld_dtype_name(dt), i);
      /* The scalar converted to the dtype: 2.5 (BOOL: 1, integers: 2). */
      assert_int_equal(pld_selects(k, t, m, a, 2.5), PLD_OK);
      tt_store(k, t, z);
      const double want = tt_cast(dt, 2.5);
      for (size_t i = 0; i < n; i++) {
        const int ok = mb[i] ? !memcmp(zb + i * es, xb + i * es, es)
                             : tt_get(z, i) == want;
        if (!ok)
          fail_msg("pld_selects %s #%zu (mask %d): got %g", pld_dtype_name(dt),
                   i, mb[i], tt_get(z, i));
      }
      assert_int_equal(k.p->status, PLD_OK);
      pld_tensor_destroy(x);
      pld_tensor_destroy(y);
      pld_tensor_destroy(mk);
      pld_tensor_destroy(z);
      tt_core_release(&c);
    }
  }
}

/* A mask cast to every computing dtype is 0/1 (a nonzero byte is 1), and
 * every computing dtype cast to BOOL is 1 for nonzero, 0 for 0 and NaN;
 * a cast mask counts with pld_row_sum. */
void test_cast_masks(void **state) {
  (void)state;
  uint64_t seed = 51;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    const int32_t rows = 3, cols = 300;
    const size_t n = (size_t)rows * (size_t)cols;
    pld_tensor mk = tt_tensor(PLD_BOOL, rows, cols, PLD_DIR_IN, "m");
    pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
    pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
    pld_tensor zb = tt_tensor(PLD_BOOL, rows, cols, PLD_DIR_OUT, "zb");
    pld_tensor cnt = tt_tensor(dt, rows, 1, PLD_DIR_OUT, "cnt");
    fill_bytes(mk, &seed);
    fill(x, 1, &seed);
    const unsigned char *mb = pld_tensor_data(mk);
    pld_tile *m = tt_load(k, mk), *a = tt_load(k, x);
    pld_tile *t = pld_tile_new(k, dt, rows, cols);
    pld_tile *tb = pld_tile_new(k, PLD_BOOL, rows, cols);
    pld_tile *sum = pld_tile_new(k, dt, rows, 1);
    assert_int_equal(pld_cast(k, t, m), PLD_OK);
    tt_store(k, t, z);
    for (size_t i = 0; i < n; i++)
      if (tt_get(z, i) != (mb[i] != 0))
        fail_msg("BOOL -> %s #%zu: byte %d gave %g", pld_dtype_name(dt), i,
                 mb[i], tt_get(z, i));
    assert_int_equal(pld_row_sum(k, sum, t), PLD_OK);
    tt_store(k, sum, cnt);
    for (int32_t r = 0; r < rows; r++) {
      int count = 0;
      for (int32_t j = 0; j < cols; j++)
        count += mb[(size_t)r * (size_t)cols + (size_t)j] != 0;
      const double want =
          tt_is_float(dt) ? tt_cast(dt, count) : tt_wrap(dt, (int64_t)count);
      if (tt_get(cnt, (size_t)r) != want)
        fail_msg("count %s row %d: %g, want %g", pld_dtype_name(dt), (int)r,
                 tt_get(cnt, (size_t)r), want);
    }
    assert_int_equal(pld_cast(k, tb, a), PLD_OK);
    tt_store(k, tb, zb);
    for (size_t i = 0; i < n; i++) {
      const double v = tt_get(x, i);
      if (tt_get(zb, i) != (v != 0 && !isnan(v)))
        fail_msg("%s -> BOOL #%zu: %g gave %g", pld_dtype_name(dt), i, v,
                 tt_get(zb, i));
    }
    assert_int_equal(k.p->status, PLD_OK);
    pld_tensor_destroy(mk);
    pld_tensor_destroy(x);
    pld_tensor_destroy(z);
    pld_tensor_destroy(zb);
    pld_tensor_destroy(cnt);
    tt_core_release(&c);
  }
}

/* ---- ranking ------------------------------------------------------------- */

/* x ranks above y: NaN above every number, NaNs and equal numbers (-0
 * and +0 included) tied. */
static int ranks_above(double x, double y) {
  if (isnan(x))
    return !isnan(y);
  if (isnan(y))
    return 0;
  return x > y;
}

static void check_arg(int largest) {
  uint64_t seed = 61 + (uint64_t)largest;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < NSHAPES; s++)
      for (int mode = 0; mode < 2; mode++) {
        const int32_t rows = shapes[s][0], cols = shapes[s][1];
        struct pld__core c;
        pld_core k = tt_vector_core(&c);
        pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
        pld_tensor z = tt_tensor(PLD_INT32, rows, 1, PLD_DIR_OUT, "z");
        fill(x, mode, &seed);
        pld_tile *a = tt_load(k, x);
        pld_tile *idx = pld_full(k, PLD_INT32, rows, 1, -7);
        const pld_tile *guard = tt_guard(k);
        assert_int_equal((largest ? pld_row_argmax : pld_row_argmin)(k, idx, a),
                         PLD_OK);
        tt_guard_intact(guard, largest ? "pld_row_argmax" : "pld_row_argmin");
        tt_store(k, idx, z);
        for (int32_t r = 0; r < rows; r++) {
          const size_t row = (size_t)r * (size_t)cols;
          int32_t best = 0;
          for (int32_t j = 1; j < cols; j++) {
            const double v = tt_get(x, row + (size_t)j);
            const double b = tt_get(x, row + (size_t)best);
            if (largest ? ranks_above(v, b) : ranks_above(b, v))
              best = j;
          }
          if (tt_get(z, (size_t)r) != best)
            fail_msg("pld_row_arg%s %s[%d, %d] mode %d row %d: got %g, want "
                     "%d (%g)",
                     largest ? "max" : "min", pld_dtype_name(dt), (int)rows,
                     (int)cols, mode, (int)r, tt_get(z, (size_t)r), (int)best,
                     tt_get(x, row + (size_t)best));
        }
        assert_int_equal(k.p->status, PLD_OK);
        pld_tensor_destroy(x);
        pld_tensor_destroy(z);
        tt_core_release(&c);
      }
  }
}

void test_row_argmax_all_dtypes(void **state) {
  (void)state;
  check_arg(1);
}

void test_row_argmin_all_dtypes(void **state) {
  (void)state;
  check_arg(0);
}

/* The reference order of one row: the columns sorted by rank, ties by
 * column (insertion sort, stable). */
static void ref_order(pld_tensor x, size_t row, int32_t cols, int32_t *order) {
  for (int32_t j = 0; j < cols; j++) {
    const double v = tt_get(x, row + (size_t)j);
    int32_t p = j;
    while (p > 0 && ranks_above(v, tt_get(x, row + (size_t)order[p - 1]))) {
      order[p] = order[p - 1];
      p--;
    }
    order[p] = j;
  }
}

/* Top-k of x for each k in ks: indices and the elements' bits. */
static void check_topk_case(pld_tensor x, int mode, const int32_t *ks,
                            size_t nks) {
  const pld_dtype dt = x.p->dtype;
  const size_t es = pld_dtype_size(dt);
  const int32_t rows = (int32_t)pld__tensor_rows(x.p);
  const int32_t cols = (int32_t)pld__tensor_cols(x.p);
  /* The reference order of every row, once. */
  int32_t *orders = test_malloc((size_t)rows * (size_t)cols * sizeof *orders);
  for (int32_t r = 0; r < rows; r++)
    ref_order(x, (size_t)r * (size_t)cols, cols,
              orders + (size_t)r * (size_t)cols);
  const unsigned char *xb = pld_tensor_data(x);
  for (size_t q = 0; q < nks; q++) {
    const int32_t topk = ks[q];
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor zi = tt_tensor(PLD_INT32, rows, topk, PLD_DIR_OUT, "zi");
    pld_tensor zv = tt_tensor(dt, rows, topk, PLD_DIR_OUT, "zv");
    pld_tile *a = tt_load(k, x);
    pld_tile *idx = pld_tile_new(k, PLD_INT32, rows, topk);
    pld_tile *vals = pld_tile_new(k, dt, rows, topk);
    /* With values; then indices only (vals NULL) must agree. */
    for (int with_vals = 1; with_vals >= 0; with_vals--) {
      assert_int_equal(pld_row_topk(k, with_vals ? vals : NULL, idx, a, topk),
                       PLD_OK);
      tt_store(k, idx, zi);
      if (with_vals)
        tt_store(k, vals, zv);
      const unsigned char *vb = pld_tensor_data(zv);
      for (int32_t r = 0; r < rows; r++) {
        const size_t row = (size_t)r * (size_t)cols;
        const int32_t *order = orders + row;
        for (int32_t t = 0; t < topk; t++) {
          const size_t o = (size_t)r * (size_t)topk + (size_t)t;
          if (tt_get(zi, o) != order[t])
            fail_msg("pld_row_topk %s[%d, %d] mode %d topk %d row %d #%d: "
                     "column %g, want %d",
                     pld_dtype_name(dt), (int)rows, (int)cols, mode, (int)topk,
                     (int)r, (int)t, tt_get(zi, o), (int)order[t]);
          if (memcmp(vb + o * es, xb + (row + (size_t)order[t]) * es, es))
            fail_msg("pld_row_topk %s topk %d row %d #%d: value %g, want %g",
                     pld_dtype_name(dt), (int)topk, (int)r, (int)t,
                     tt_get(zv, o), tt_get(x, row + (size_t)order[t]));
        }
      }
    }
    /* topk = cols sorts the row: in place, vals == a, gives the same. */
    if (topk == cols) {
      pld_tensor za = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "za");
      assert_int_equal(pld_row_topk(k, a, idx, a, topk), PLD_OK);
      tt_store(k, a, za);
      assert_memory_equal(pld_tensor_data(za), pld_tensor_data(zv),
                          (size_t)rows * (size_t)cols * es);
      pld_tensor_destroy(za);
    }
    assert_int_equal(k.p->status, PLD_OK);
    pld_tensor_destroy(zi);
    pld_tensor_destroy(zv);
    tt_core_release(&c);
  }
  test_free(orders);
}

void test_row_topk_all_dtypes(void **state) {
  (void)state;
  uint64_t seed = 71;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < NSHAPES; s++)
      for (int mode = 0; mode < 2; mode++) {
        const int32_t rows = shapes[s][0], cols = shapes[s][1];
        pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
        fill(x, mode, &seed);
        /* topk = 1, 2, 6 (routing's top-6), half and all of the columns,
         * each where it fits. */
        int32_t ks[5];
        size_t nks = 0;
        const int32_t want[5] = {1, 2, 6, cols / 2, cols};
        for (size_t q = 0; q < 5; q++)
          if (want[q] >= 1 && want[q] <= cols &&
              (nks == 0 || ks[nks - 1] < want[q]))
            ks[nks++] = want[q];
        /* A full sort of 1100 columns is slow in the reference: the
         * largest shape stops at half. */
        if (cols > 512)
          nks--;
        check_topk_case(x, mode, ks, nks);
        pld_tensor_destroy(x);
      }
  }
}

/* INT32_MIN elements among the top k, where a taken column's key is
 * INT32_MIN too: the next of them is the lowest column not taken. */
void test_row_topk_int_min(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_INT32, 1, 6, PLD_DIR_IN, "x");
  const double v[6] = {-2147483648.0, 5, -2147483648.0,
                       -2147483648.0, 5, -2147483647.0};
  const double want[6] = {1, 4, 5, 0, 2, 3};
  for (size_t i = 0; i < 6; i++)
    tt_set(x, i, v[i]);
  pld_tile *a = tt_load(k, x);
  for (int32_t topk = 1; topk <= 6; topk++) {
    pld_tile *id = pld_tile_new(k, PLD_INT32, 1, topk);
    assert_int_equal(pld_row_topk(k, NULL, id, a, topk), PLD_OK);
    pld_tensor zt = tt_tensor(PLD_INT32, 1, topk, PLD_DIR_OUT, "zt");
    tt_store(k, id, zt);
    for (int32_t t = 0; t < topk; t++)
      if (tt_get(zt, (size_t)t) != want[t])
        fail_msg("topk %d #%d: column %g, want %g", (int)topk, (int)t,
                 tt_get(zt, (size_t)t), want[t]);
    pld_tensor_destroy(zt);
    pld_tile_free(k, id);
  }
  assert_int_equal(k.p->status, PLD_OK);
  pld_tensor_destroy(x);
  tt_core_release(&c);
}

void test_ranking_errors(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_FP32, 4, 7, 1);
  pld_tile *idx = pld_tile_new(k, PLD_INT32, 4, 7);
  assert_int_equal(pld_row_topk(k, NULL, idx, a, 0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_topk: kernel k",
                   "topk is 0: expected 1 to 7 (the columns of a, FP32[4, 7])",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 7, 1);
  idx = pld_tile_new(k, PLD_INT32, 4, 8);
  assert_int_equal(pld_row_topk(k, NULL, idx, a, 8), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "topk is 8: expected 1 to 7", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 7, 1);
  idx = pld_tile_new(k, PLD_FP32, 4, 2);
  assert_int_equal(pld_row_topk(k, NULL, idx, a, 2), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_topk",
                   "idx is FP32[4, 2], a is FP32[4, 7]: idx must be "
                   "INT32[4, 2]",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 7, 1);
  idx = pld_tile_new(k, PLD_INT32, 4, 2);
  pld_tile *vals = pld_tile_new(k, PLD_FP16, 4, 2);
  assert_int_equal(pld_row_topk(k, vals, idx, a, 2), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG,
                   "vals is FP16[4, 2], a is FP32[4, 7]: vals must be "
                   "FP32[4, 2]",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT32, 4, 7, 1);
  idx = pld_tile_new(k, PLD_INT32, 4, 2);
  assert_int_equal(pld_row_topk(k, idx, idx, a, 2), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "vals and idx are the same tile", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  idx = pld_tile_new(k, PLD_INT32, 4, 1);
  assert_int_equal(pld_row_argmax(k, idx, NULL), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_argmax", "a: expected a tile",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 7, 1);
  assert_int_equal(pld_row_argmin(k, pld_tile_new(k, PLD_INT16, 4, 1), a),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_argmin",
                   "idx is INT16[4, 1], a is FP32[4, 7]: idx must be "
                   "INT32[4, 1]",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT64, 4, 7, 1);
  assert_int_equal(pld_row_argmax(k, pld_tile_new(k, PLD_INT32, 4, 1), a),
                   PLD_ERR_UNSUPPORTED);
  tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_row_argmax", "a is INT64[4, 7]",
                   NULL);
  tt_core_release(&c);
}

/* ---- prefix sums --------------------------------------------------------- */

static void check_cumsum(int by_row) {
  uint64_t seed = 81 + (uint64_t)by_row;
  /* Column sums go in strips of 32 (FP32), 64 or 128 (integers, by
   * level) columns: widths at and just below a strip. */
  static const int32_t cshapes[][2] = {{1, 1},   {3, 7},    {33, 2},  {4, 300},
                                       {300, 3}, {2, 1100}, {5, 128}, {3, 127},
                                       {2, 64},  {2, 63},   {4, 32},  {2, 31}};
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < sizeof cshapes / sizeof *cshapes; s++)
      for (int mode = 0; mode < 2; mode++)
        for (int excl = 0; excl < 2; excl++) {
          const int32_t rows = cshapes[s][0], cols = cshapes[s][1];
          struct pld__core c;
          pld_core k = tt_vector_core(&c);
          pld_tensor x = tt_tensor(dt, rows, cols, PLD_DIR_IN, "x");
          pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
          fill(x, mode, &seed);
          pld_tile *a = tt_load(k, x);
          pld_tile *t = pld_tile_new(k, dt, rows, cols);
          const pld_tile *guard = tt_guard(k);
          assert_int_equal(
              (by_row ? pld_row_cumsum : pld_col_cumsum)(k, t, a, excl ? 7 : 0),
              PLD_OK);
          tt_guard_intact(guard, by_row ? "pld_row_cumsum" : "pld_col_cumsum");
          tt_store(k, t, z);
          const size_t lines = (size_t)(by_row ? rows : cols);
          const size_t len = (size_t)(by_row ? cols : rows);
          const size_t step = by_row ? 1 : (size_t)cols;
          for (size_t l = 0; l < lines; l++) {
            const size_t first = by_row ? l * (size_t)cols : l;
            double fs = 0;
            int64_t is = 0;
            for (size_t j = 0; j < len; j++) {
              const size_t i = first + j * step;
              const double v = tt_get(x, i);
              /* Integers sum exactly in int64 (wrapped at the end). */
              const int64_t iv = tt_is_float(dt) ? 0 : (int64_t)v;
              if (!excl) {
                fs += v;
                is += iv;
              }
              const double want =
                  tt_is_float(dt) ? tt_cast(dt, fs) : tt_wrap(dt, is);
              if (!tt_same(tt_get(z, i), want))
                fail_msg("pld_%s_cumsum %s[%d, %d] exclusive %d mode %d: "
                         "line %zu element %zu: got %.9g, want %.9g",
                         by_row ? "row" : "col", pld_dtype_name(dt), (int)rows,
                         (int)cols, excl, mode, l, j, tt_get(z, i), want);
              if (excl) {
                fs += v;
                is += iv;
              }
            }
          }
          /* In place gives the same. */
          assert_int_equal(
              (by_row ? pld_row_cumsum : pld_col_cumsum)(k, a, a, excl),
              PLD_OK);
          pld_tensor za = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "za");
          tt_store(k, a, za);
          if (memcmp(pld_tensor_data(za), pld_tensor_data(z), z.p->nbytes))
            fail_msg("pld_%s_cumsum %s[%d, %d] exclusive %d mode %d: in "
                     "place differs",
                     by_row ? "row" : "col", pld_dtype_name(dt), (int)rows,
                     (int)cols, excl, mode);
          assert_memory_equal(pld_tensor_data(za), pld_tensor_data(z),
                              z.p->nbytes);
          assert_int_equal(k.p->status, PLD_OK);
          pld_tensor_destroy(x);
          pld_tensor_destroy(z);
          pld_tensor_destroy(za);
          tt_core_release(&c);
        }
  }
}

void test_row_cumsum_all_dtypes(void **state) {
  (void)state;
  check_cumsum(1);
}

void test_col_cumsum_all_dtypes(void **state) {
  (void)state;
  check_cumsum(0);
}

/* ---- integer arithmetic and index tiles -----------------------------------
 */

enum iop { I_REM, I_AND, I_OR, I_XOR, I_NOT, I_SHL, I_SHR };

static double ref_iop(enum iop op, pld_dtype dt, double x, double y) {
  if (dt == PLD_BOOL) {
    const int p = x != 0, q = y != 0;
    return op == I_AND ? p & q : op == I_OR ? p | q : op == I_XOR ? p ^ q : !p;
  }
  if (tt_is_float(dt))
    return tt_cast(dt, fmod(x, y)); /* exact */
  const int64_t a = (int64_t)x, b = (int64_t)y;
  switch (op) {
  case I_REM:
    return tt_wrap(dt, a % b);
  case I_AND:
    return tt_wrap(dt, a & b);
  case I_OR:
    return tt_wrap(dt, a | b);
  case I_XOR:
    return tt_wrap(dt, a ^ b);
  case I_NOT:
    return tt_wrap(dt, -a - 1);
  case I_SHL:
    return tt_wrap(dt, (int64_t)((uint64_t)a << b));
  case I_SHR:
    return floor(x / ldexp(1, (int)b)); /* arithmetic */
  }
  return 0;
}

static void expect_iop(const char *fn, enum iop op, pld_tensor x, pld_tensor y,
                       double s, pld_tensor z) {
  const pld_dtype dt = x.p->dtype;
  for (size_t i = 0; i < (size_t)pld_tensor_numel(x); i++) {
    const double xv = tt_get(x, i), yv = y.p ? tt_get(y, i) : s;
    const double want = ref_iop(op, dt, xv, yv);
    if (!tt_same(tt_get(z, i), want))
      fail_msg("%s %s #%zu: (%.9g, %.9g) gave %.9g, want %.9g", fn,
               pld_dtype_name(dt), i, xv, yv, tt_get(z, i), want);
  }
}

void test_rem_all_dtypes(void **state) {
  (void)state;
  uint64_t seed = 91;
  static const double scalars[] = {3, -3, 7.5, 1, 1000};
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (int mode = 0; mode < 2; mode++) {
      struct pld__core c;
      pld_core k = tt_vector_core(&c);
      pld_tensor x = tt_tensor(dt, 4, 33, PLD_DIR_IN, "x");
      pld_tensor y = tt_tensor(dt, 4, 33, PLD_DIR_IN, "y");
      pld_tensor z = tt_tensor(dt, 4, 33, PLD_DIR_OUT, "z");
      fill(x, mode, &seed);
      fill(y, mode, &seed);
      for (size_t i = 0; i < 4 * 33 && !tt_is_float(dt); i++)
        if (tt_get(y, i) == 0)
          tt_set(y, i, i % 2 ? -1 : 5);
      if (dt == PLD_INT32) { /* the overflowing quotient */
        tt_set(x, 0, -2147483648.0);
        tt_set(y, 0, -1);
      }
      pld_tile *a = tt_load(k, x), *b = tt_load(k, y);
      pld_tile *t = pld_tile_new(k, dt, 4, 33);
      assert_int_equal(pld_rem(k, t, a, b), PLD_OK);
      tt_store(k, t, z);
      expect_iop("pld_rem", I_REM, x, y, 0, z);
      for (size_t v = 0; v < sizeof scalars / sizeof *scalars; v++) {
        if (tt_cast(dt, scalars[v]) == 0) /* -3 as UINT8 */
          continue;
        assert_int_equal(pld_rems(k, t, a, scalars[v]), PLD_OK);
        tt_store(k, t, z);
        expect_iop("pld_rems", I_REM, x, (pld_tensor){NULL},
                   tt_cast(dt, scalars[v]), z);
      }
      assert_int_equal(k.p->status, PLD_OK);
      pld_tensor_destroy(x);
      pld_tensor_destroy(y);
      pld_tensor_destroy(z);
      tt_core_release(&c);
    }
  }
  /* A zero divisor fails as pld_div's does. */
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_INT16, 2, 3, 5);
  pld_tile *b = pld_full(k, PLD_INT16, 2, 3, 0);
  assert_int_equal(pld_rem(k, a, a, b), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_rem", "integer division by zero",
                   "b[0, 0] is 0", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT8, 2, 3, 5);
  assert_int_equal(pld_rems(k, a, a, 0.2), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_rems", "0.2 is 0 as INT8", NULL);
  tt_core_release(&c);
}

static const pld_dtype bit_dtypes[5] = {PLD_INT32, PLD_INT16, PLD_INT8,
                                        PLD_UINT8, PLD_BOOL};

void test_bitwise_and_shifts(void **state) {
  (void)state;
  uint64_t seed = 101;
  tt_binary_fn *const fns[3] = {pld_and, pld_or, pld_xor};
  const char *const names[3] = {"pld_and", "pld_or", "pld_xor"};
  for (int d = 0; d < 5; d++) {
    const pld_dtype dt = bit_dtypes[d];
    const int32_t width = (int32_t)(8 * pld_dtype_size(dt));
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor x = tt_tensor(dt, 3, 300, PLD_DIR_IN, "x");
    pld_tensor y = tt_tensor(dt, 3, 300, PLD_DIR_IN, "y");
    pld_tensor z = tt_tensor(dt, 3, 300, PLD_DIR_OUT, "z");
    if (dt == PLD_BOOL) {
      fill_bytes(x, &seed); /* 0, 1 and 2 */
      fill_bytes(y, &seed);
    } else {
      tt_fill_random(x, &seed);
      tt_fill_random(y, &seed);
    }
    pld_tile *a = tt_load(k, x), *b = tt_load(k, y);
    pld_tile *t = pld_tile_new(k, dt, 3, 300);
    for (int f = 0; f < 3; f++) {
      assert_int_equal(fns[f](k, t, a, b), PLD_OK);
      tt_store(k, t, z);
      expect_iop(names[f], (enum iop)(I_AND + f), x, y, 0, z);
    }
    assert_int_equal(pld_not(k, t, a), PLD_OK);
    tt_store(k, t, z);
    expect_iop("pld_not", I_NOT, x, y, 0, z);
    if (dt != PLD_BOOL)
      for (int32_t bits = 0; bits < width; bits += bits < 3 ? 1 : 5) {
        assert_int_equal(pld_shls(k, t, a, bits), PLD_OK);
        tt_store(k, t, z);
        expect_iop("pld_shls", I_SHL, x, (pld_tensor){NULL}, bits, z);
        assert_int_equal(pld_shrs(k, t, a, bits), PLD_OK);
        tt_store(k, t, z);
        expect_iop("pld_shrs", I_SHR, x, (pld_tensor){NULL}, bits, z);
      }
    assert_int_equal(k.p->status, PLD_OK);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(z);
    tt_core_release(&c);
  }
}

void test_iota_all_dtypes(void **state) {
  (void)state;
  static const double params[][3] = {
      {0, 0, 1},
      {0, 8, 1},
      {5, -3, 2},
      {0.5, 0.25, -1.5},
      {-200, 100, 3},
      {1e9, 1e9, 7},
      {0, 1, 1e6},
      /* the sign of a zero start; integers past FP32's 2^24 (rounded);
       * fractions of 2^-30 and 2^-31; multiples of 2^-30 below and past
       * int32's bound; no binary fraction; a fraction in the start
       * alone */
      {-0.0, -1, -2},
      {16777214, 0, 1},
      {16777215, 1, 1},
      {0x1p-30, 0x1p-30, -0x1p-30},
      {0x1p-31, 0, 0x1p-31},
      {1.5, 0, 0x1p-30},
      {2.5, 0, 0x1p-30},
      {0.1, 0.2, 0.3},
      {0.5, 2, 3},
      /* not finite: NaN, infinities (and 0 x inf, NaN) */
      {NAN, 1, 1},
      {INFINITY, 0, 1},
      {0, 1, -INFINITY},
      /* int32's extremes two rows apart: a row step past int32 */
      {-2147483648.0, 4294967295.0, 0},
      /* a start at int32's bound, one past it, and far past it */
      {2147483647.0, -1, 0},
      {2147483648.0, -1, 0},
      {-3e9, 0, 1},
      /* rows that continue each other in a 3 x 64 tile (one run), and
       * rows 64 apart that do not (columns 2 apart) */
      {0, 64, 1},
      {1, 64, 2},
      {5, -128, -2},
      {0.5, 16, 0.25}};
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    for (size_t s = 0; s < NSHAPES; s++)
      for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
        const int32_t rows = shapes[s][0], cols = shapes[s][1];
        struct pld__core c;
        pld_core k = tt_vector_core(&c);
        pld_tensor z = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "z");
        pld_tile *t = pld_tile_new(k, dt, rows, cols);
        const pld_tile *guard = tt_guard(k);
        assert_int_equal(
            pld_iota(k, t, params[p][0], params[p][1], params[p][2]), PLD_OK);
        tt_guard_intact(guard, "pld_iota");
        tt_store(k, t, z);
        for (int32_t i = 0; i < rows; i++)
          for (int32_t j = 0; j < cols; j++) {
            const double want =
                tt_cast(dt, params[p][0] + i * params[p][1] + j * params[p][2]);
            const double got = tt_get(z, (size_t)i * (size_t)cols + (size_t)j);
            const int is_float =
                dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16;
            const int both_nan = got != got && want != want;
            /* (the sign of a NaN is not the value's) */
            if (!both_nan &&
                (got != want || (is_float && signbit(got) != signbit(want))))
              fail_msg("pld_iota %s (%g, %g, %g) [%d, %d]: got %.9g, want "
                       "%.9g",
                       pld_dtype_name(dt), params[p][0], params[p][1],
                       params[p][2], (int)i, (int)j, got, want);
          }
        assert_int_equal(k.p->status, PLD_OK);
        pld_tensor_destroy(z);
        tt_core_release(&c);
      }
  }
}

/* ---- misuse -------------------------------------------------------------- */

void test_route_argument_errors(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_full(k, PLD_FP32, 4, 8, 1);
  pld_tile *m = pld_tile_new(k, PLD_INT8, 4, 8);
  assert_int_equal(pld_cmps(k, m, a, 0, PLD_CMP_LT), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_cmps: kernel k",
                   "mask is INT8[4, 8]: expected a BOOL tile", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 8, 1);
  m = pld_tile_new(k, PLD_BOOL, 4, 7);
  assert_int_equal(pld_cmp(k, m, a, a, PLD_CMP_EQ), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_cmp",
                   "mask is BOOL[4, 7], a is FP32[4, 8]: shapes must match",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 8, 1);
  m = pld_tile_new(k, PLD_BOOL, 4, 8);
  assert_int_equal(pld_cmp(k, m, a, pld_full(k, PLD_FP16, 4, 8, 1), 0),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_cmp",
                   "a is FP32[4, 8], b is FP16[4, 8]: dtypes must match", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 8, 1);
  m = pld_tile_new(k, PLD_BOOL, 4, 8);
  assert_int_equal(pld_cmp(k, m, a, a, (pld_cmp_op)6), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_cmp", "op is 6: expected a pld_cmp_op",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT64, 4, 8, 1);
  m = pld_tile_new(k, PLD_BOOL, 4, 8);
  assert_int_equal(pld_cmps(k, m, a, 1, PLD_CMP_EQ), PLD_ERR_UNSUPPORTED);
  tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_cmps", "a is INT64[4, 8]",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 8, 1);
  m = pld_tile_new(k, PLD_BOOL, 4, 8);
  assert_int_equal(pld_select(k, a, m, a, pld_full(k, PLD_INT32, 4, 8, 1)),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_select",
                   "a is FP32[4, 8], b is INT32[4, 8]: dtypes must match",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 8, 1);
  assert_int_equal(pld_selects(k, a, a, a, 0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_selects",
                   "mask is FP32[4, 8]: expected a BOOL tile", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_int_equal(pld_selects(k, NULL, NULL, NULL, 0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_selects",
                   "dst: expected a tile, got "
                   "NULL",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP32, 4, 8, 1);
  assert_int_equal(pld_and(k, a, a, a), PLD_ERR_UNSUPPORTED);
  tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_and",
                   "dst is FP32[4, 8]: pld_and takes integer tiles (INT32, "
                   "INT16, INT8, UINT8) and masks (BOOL) only",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_BOOL, 4, 8, 1);
  assert_int_equal(pld_shls(k, a, a, 1), PLD_ERR_UNSUPPORTED);
  tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_shls", "a is BOOL[4, 8]",
                   "integer tiles (INT32, INT16, INT8, UINT8) only", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT16, 4, 8, 1);
  assert_int_equal(pld_shrs(k, a, a, 16), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_shrs",
                   "bits is 16: expected [0, 16) for a, INT16[4, 8]", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT16, 4, 8, 1);
  assert_int_equal(pld_xor(k, a, a, pld_full(k, PLD_INT16, 4, 7, 1)),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_xor", "shapes must match", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_INT16, 4, 8, 1);
  assert_int_equal(pld_row_cumsum(k, pld_tile_new(k, PLD_INT32, 4, 8), a, 0),
                   PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_row_cumsum",
                   "dst is INT32[4, 8], a is INT16[4, 8]: dtypes must match",
                   NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  a = pld_full(k, PLD_FP64, 4, 8, 1);
  assert_int_equal(pld_iota(k, a, 0, 1, 1), PLD_ERR_UNSUPPORTED);
  tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_iota", "dst is FP64[4, 8]",
                   NULL);
  tt_core_release(&c);
}
