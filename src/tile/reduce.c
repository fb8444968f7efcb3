/* tile/reduce.c: row and column reductions, and the expansions that
 * broadcast their results back.
 *
 * Accumulators are double for the float dtypes and int64 for the integer
 * ones.  Float sums thus carry 29 more bits than the data (a row of 2^16
 * floats loses nothing to cancellation that float accumulation would), and
 * the single rounding to the tile's dtype happens at the end.  Integer
 * sums are exact in int64 (a tile holds far fewer than 2^32 elements) and
 * their low bits are kept, which is the wrapping sum.  Maximum and minimum
 * are exact either way; for floats they propagate NaN.
 *
 * A row is folded in 16 independent lanes (the blocked loop gcc
 * vectorizes; a single accumulator would be a serial dependence chain,
 * which gcc may not reorder for floats), then the lanes are combined. */
#include <math.h>
#include <string.h>

#include "tile/convert.h"
#include "tile/convert_loops.h"
#include "tile/isa.h"
#include "tile/tile.h"

enum red { RED_SUM, RED_MAX, RED_MIN };

#define RSUM(acc, v) ((acc) + (v))
#define RMAX_F(acc, v) (((acc) > (v) || (acc) != (acc)) ? (acc) : (v))
#define RMIN_F(acc, v) (((acc) < (v) || (acc) != (acc)) ? (acc) : (v))
#define RMAX_I(acc, v) ((acc) > (v) ? (acc) : (v))
#define RMIN_I(acc, v) ((acc) < (v) ? (acc) : (v))

#define LANES 16

/* *out combined with the n elements of x (T), in ACC. */
#define FOLD_ROW(T, ACC, COMBINE)                                              \
  do {                                                                         \
    const T *x_ = x;                                                           \
    ACC lane[LANES];                                                           \
    for (size_t l = 0; l < LANES; l++)                                         \
      lane[l] = *out;                                                          \
    size_t i = 0;                                                              \
    for (; i + LANES <= n; i += LANES)                                         \
      for (size_t l = 0; l < LANES; l++)                                       \
        lane[l] = COMBINE(lane[l], (ACC)x_[i + l]);                            \
    for (; i < n; i++)                                                         \
      lane[0] = COMBINE(lane[0], (ACC)x_[i]);                                  \
    for (size_t l = 1; l < LANES; l++)                                         \
      lane[0] = COMBINE(lane[0], lane[l]);                                     \
    *out = lane[0];                                                            \
  } while (0)

/* acc[j] combined with x[j] for j < n. */
#define FOLD_COLS(T, ACC, COMBINE)                                             \
  do {                                                                         \
    const T *x_ = x;                                                           \
    PLD__VLOOP(ACC, j, n, acc[j] = COMBINE(acc[j], (ACC)x_[j]););              \
  } while (0)

/* The switch over the operation, around one of the folds. */
#define BY_OP(FOLD, T, ACC, SUFFIX)                                            \
  switch (op) {                                                                \
  case RED_SUM:                                                                \
    FOLD(T, ACC, RSUM);                                                        \
    break;                                                                     \
  case RED_MAX:                                                                \
    FOLD(T, ACC, RMAX_##SUFFIX);                                               \
    break;                                                                     \
  case RED_MIN:                                                                \
    FOLD(T, ACC, RMIN_##SUFFIX);                                               \
    break;                                                                     \
  }

PLD__ISA_INLINE void fold_row_f(enum red op, double *out, const float *x,
                                size_t n) {
  BY_OP(FOLD_ROW, float, double, F);
}

PLD__ISA_INLINE void fold_cols_f(enum red op, double *restrict acc,
                                 const float *restrict x, size_t n) {
  BY_OP(FOLD_COLS, float, double, F);
}

/* The switch over the integer dtypes, around BY_OP. */
#define BY_INT_DTYPE(FOLD)                                                     \
  switch (dt) {                                                                \
  case PLD_INT32:                                                              \
    BY_OP(FOLD, int32_t, int64_t, I) break;                                    \
  case PLD_INT16:                                                              \
    BY_OP(FOLD, int16_t, int64_t, I) break;                                    \
  case PLD_INT8:                                                               \
    BY_OP(FOLD, int8_t, int64_t, I) break;                                     \
  case PLD_UINT8:                                                              \
    BY_OP(FOLD, uint8_t, int64_t, I) break;                                    \
  default:                                                                     \
    break;                                                                     \
  }

PLD__ISA_INLINE void fold_row_i(enum red op, pld_dtype dt, int64_t *out,
                                const void *x, size_t n) {
  BY_INT_DTYPE(FOLD_ROW);
}

PLD__ISA_INLINE void fold_cols_i(enum red op, pld_dtype dt,
                                 int64_t *restrict acc, const void *restrict x,
                                 size_t n) {
  BY_INT_DTYPE(FOLD_COLS);
}

/* The accumulators' starting value. */
union acc {
  double f;
  int64_t i;
};

static union acc acc_init(enum red op, int is_float) {
  union acc a;
  if (is_float)
    a.f = op == RED_SUM ? 0.0 : op == RED_MAX ? -INFINITY : INFINITY;
  else
    a.i = op == RED_SUM ? 0 : op == RED_MAX ? INT64_MIN : INT64_MAX;
  return a;
}

/* Stores an accumulator into an element of dtype dt. */
static void acc_store(pld_dtype dt, void *p, union acc a) {
  if (pld__is_float_dtype(dt))
    pld__elem_set(dt, p, a.f);
  else
    pld__elem_wrap(dt, p, a.i);
}

/* Columns per block of column accumulators (on the stack). */
#define COL_BLOCK 256

/* The reductions, one copy per level (tile/isa.h), the folds and
 * conversions inlined into each. */
PLD__ISA_FUNCTION(static, reduce_rows,
                  (enum red op, pld_tile *dst, const pld_tile *a),
                  (op, dst, a)) {
  const pld_dtype dt = a->dtype;
  const int is_float = pld__is_float_dtype(dt);
  const size_t n = (size_t)a->cols, es = pld_dtype_size(dt);
  float tmp[PLD__CHUNK];
  for (size_t r = 0; r < (size_t)a->rows; r++) {
    const unsigned char *row = pld__run_ptr(a, r);
    union acc v = acc_init(op, is_float);
    if (dt == PLD_FP32) {
      fold_row_f(op, &v.f, (const float *)row, n);
    } else if (is_float) {
      for (size_t j = 0; j < n; j += PLD__CHUNK) {
        const size_t m = n - j < PLD__CHUNK ? n - j : PLD__CHUNK;
        pld__load_f32_at(isa, dt, tmp, row + j * es, m);
        fold_row_f(op, &v.f, tmp, m);
      }
    } else {
      fold_row_i(op, dt, &v.i, row, n);
    }
    /* Reading all of row r before writing dst's row r keeps dst == a (a
     * single column) correct. */
    acc_store(dt, pld__run_ptr(dst, r), v);
  }
}

PLD__ISA_FUNCTION(static, reduce_cols,
                  (enum red op, pld_tile *dst, const pld_tile *a),
                  (op, dst, a)) {
  const pld_dtype dt = a->dtype;
  const int is_float = pld__is_float_dtype(dt);
  const size_t es = pld_dtype_size(dt);
  const union acc init = acc_init(op, is_float);
  union {
    double f[COL_BLOCK];
    int64_t i[COL_BLOCK];
  } acc;
  float tmp[COL_BLOCK];
  for (size_t j0 = 0; j0 < (size_t)a->cols; j0 += COL_BLOCK) {
    const size_t n =
        (size_t)a->cols - j0 < COL_BLOCK ? (size_t)a->cols - j0 : COL_BLOCK;
    for (size_t j = 0; j < n; j++) {
      if (is_float)
        acc.f[j] = init.f;
      else
        acc.i[j] = init.i;
    }
    for (size_t r = 0; r < (size_t)a->rows; r++) {
      const unsigned char *x = pld__run_ptr(a, r) + j0 * es;
      if (dt == PLD_FP32) {
        fold_cols_f(op, acc.f, (const float *)x, n);
      } else if (is_float) {
        pld__load_f32_at(isa, dt, tmp, x, n);
        fold_cols_f(op, acc.f, tmp, n);
      } else {
        fold_cols_i(op, dt, acc.i, x, n);
      }
    }
    for (size_t j = 0; j < n; j++) {
      union acc v;
      if (is_float)
        v.f = acc.f[j];
      else
        v.i = acc.i[j];
      acc_store(dt, dst->data + (j0 + j) * es, v);
    }
  }
}

/* The check every reduction and expansion starts with: a vector core, and
 * `a` (the larger tile) and `v` (a row or column of it) of one dtype with
 * v [a.rows, 1] (by_row) or [1, a.cols]. */
static int check_vector(struct pld__core *c, const char *fn, const char *wv,
                        const pld_tile *v, const char *wa, const pld_tile *a,
                        int by_row) {
  if (pld__vector_only(c, fn) || pld__tile_compute_check(c, fn, wv, v) ||
      pld__tile_compute_check(c, fn, wa, a))
    return c->status;
  const int32_t rows = by_row ? a->rows : 1, cols = by_row ? 1 : a->cols;
  if (v->rows == rows && v->cols == cols && v->dtype == a->dtype)
    return PLD_OK;
  char sv[64], sa[64];
  pld__tile_str(sv, sizeof sv, v);
  pld__tile_str(sa, sizeof sa, a);
  if (v->dtype != a->dtype)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "%s is %s, %s is %s: dtypes must match (pld_cast "
                      "converts)",
                      wv, sv, wa, sa);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "%s is %s, %s is %s: %s must be [%d, %d] (one value per "
                    "%s of %s)",
                    wv, sv, wa, sa, wv, (int)rows, (int)cols,
                    by_row ? "row" : "column", wa);
}

/* X(function, operation, by_row) */
#define REDUCTIONS(X)                                                          \
  X(pld_row_sum, RED_SUM, 1)                                                   \
  X(pld_row_max, RED_MAX, 1)                                                   \
  X(pld_row_min, RED_MIN, 1)                                                   \
  X(pld_col_sum, RED_SUM, 0)                                                   \
  X(pld_col_max, RED_MAX, 0)                                                   \
  X(pld_col_min, RED_MIN, 0)

#define DEFINE_REDUCTION(fn, op, by_row)                                       \
  int fn(pld_core k, pld_tile *dst, const pld_tile *a) {                       \
    if (check_vector(k.p, #fn, "dst", dst, "a", a, by_row))                    \
      return k.p->status;                                                      \
    pld__tile_work(PLD__TC_REDUCE, 1, a);                                      \
    (by_row ? reduce_rows : reduce_cols)(op, dst, a);                          \
    return PLD_OK;                                                             \
  }
REDUCTIONS(DEFINE_REDUCTION)

int pld_row_expand(pld_core k, pld_tile *dst, const pld_tile *v) {
  if (check_vector(k.p, "pld_row_expand", "v", v, "dst", dst, 1))
    return k.p->status;
  pld__tile_work(PLD__TC_VECTOR, 1, dst);
  /* Row r of dst is written after v's element r was read: dst == v (a
   * single column) is the identity. */
  const size_t es = pld_dtype_size(dst->dtype);
  unsigned char elem[sizeof(int64_t)];
  for (size_t r = 0; r < (size_t)dst->rows; r++) {
    memcpy(elem, pld__run_ptr(v, r), es);
    pld__fill_elems(pld__run_ptr(dst, r), elem, es, (size_t)dst->cols);
  }
  return PLD_OK;
}

int pld_col_expand(pld_core k, pld_tile *dst, const pld_tile *v) {
  if (check_vector(k.p, "pld_col_expand", "v", v, "dst", dst, 0))
    return k.p->status;
  pld__tile_work(PLD__TC_VECTOR, 1, dst);
  const size_t len = (size_t)dst->cols * pld_dtype_size(dst->dtype);
  for (size_t r = 0; r < (size_t)dst->rows && dst != v; r++)
    memcpy(pld__run_ptr(dst, r), v->data, len);
  return PLD_OK;
}
