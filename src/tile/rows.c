/* tile/rows.c: rows by index between tensors and tiles - pld_load_rows
 * (gather) and pld_store_rows (scatter, plain or adding atomically) - and
 * the index checks their remote forms (comm/rma.c) share.
 *
 * Every check, bounds of every index included, is made before any byte
 * moves, so a failed call changes nothing.  Entries naming consecutive
 * rows move as one block (sorted tokens are the common case). */
#include <string.h>

#include "core/trace.h"
#include "tile/convert.h"
#include "tile/tile.h"

int pld__rows_index_check(struct pld__core *c, const char *fn,
                          const pld_tile *idx, int32_t n) {
  if (pld__tile_check(c, fn, "idx", idx))
    return c->status;
  if (idx->dtype == PLD_INT32 && ((idx->rows == n && idx->cols == 1) ||
                                  (idx->rows == 1 && idx->cols == n)))
    return PLD_OK;
  char s[64];
  pld__tile_str(s, sizeof s, idx);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "idx is %s: expected an INT32 tile of shape [%d, 1] or "
                    "[1, %d] (one row index per row moved)",
                    s, (int)n, (int)n);
}

int pld__rows_fit(const struct pld__tensor *t, const pld_tile *idx, int32_t n,
                  int64_t col, int32_t cols, int32_t *bad) {
  const int64_t trows = pld__tensor_rows(t), tcols = pld__tensor_cols(t);
  *bad = -1;
  if (col < 0 || col > tcols - cols)
    return 0;
  for (int32_t i = 0; i < n; i++)
    if (pld__rows_index(idx, i) >= trows) {
      *bad = i;
      return 0;
    }
  return 1;
}

/* The rows idx names and [col, col + cols) lie inside t's matrix: the
 * message names t, its shape, and the first index position outside with
 * its value (or the columns). */
static int rows_bounds(struct pld__core *c, const char *fn,
                       const struct pld__tensor *t, const pld_tile *idx,
                       int32_t n, int64_t col, int32_t cols) {
  int32_t bad;
  if (pld__rows_fit(t, idx, n, col, cols, &bad))
    return PLD_OK;
  char what[480];
  pld__tensor_matrix_str(what, sizeof what, t);
  if (bad < 0)
    return pld__kfail(c, PLD_ERR_BOUNDS, fn, "cols [%lld, %lld) are outside %s",
                      (long long)col, pld__region_end(col, cols), what);
  return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                    "row idx[%d] = %d is outside %s (rows 0 to %lld; a "
                    "negative index names no row)",
                    (int)bad, (int)pld__rows_index(idx, bad), what,
                    (long long)(pld__tensor_rows(t) - 1));
}

/* The race detector's check of every row idx names (kind PLD__RACE_*),
 * before any moves. */
static int rows_race(struct pld__core *c, const char *fn, int kind,
                     const struct pld__tensor *t, const pld_tile *idx,
                     int32_t n, int64_t col, size_t row_len) {
  if (!pld__race_on() || !(t->flags & PLD__T_WINDOW))
    return c->status;
  for (int32_t i = 0, m; i < n; i += m) {
    m = pld__rows_run(idx, i, n);
    const int32_t r = pld__rows_index(idx, i);
    if (r >= 0 &&
        pld__tensor_race_check(c, fn, kind, t, r, col, row_len, (size_t)m))
      return c->status;
  }
  return c->status;
}

int pld_load_rows(pld_core k, pld_tile *dst, pld_tensor src,
                  const pld_tile *idx, int64_t col) {
  struct pld__core *c = k.p;
  const char *fn = "pld_load_rows";
  if (pld__tile_check(c, fn, "dst", dst) || pld__tensor_check(c, fn, src, 0) ||
      pld__tensor_dtype_match(c, fn, "dst", dst, src.p) ||
      pld__rows_index_check(c, fn, idx, dst->rows) ||
      rows_bounds(c, fn, src.p, idx, dst->rows, col, dst->cols))
    return c->status;
  const size_t len = (size_t)dst->cols * pld_dtype_size(dst->dtype);
  const size_t stride = pld__tensor_stride(src.p);
  const int32_t n = dst->rows;
  if (rows_race(c, fn, PLD__RACE_READ, src.p, idx, n, col, len))
    return c->status;
  for (int32_t i = 0, m; i < n; i += m) {
    m = pld__rows_run(idx, i, n);
    const int32_t r = pld__rows_index(idx, i);
    unsigned char *to = pld__run_ptr(dst, (size_t)i);
    if (r < 0) {
      memset(to, 0, len);
      continue;
    }
    pld__obs_gm(0, len * (size_t)m);
    const unsigned char *from =
        (const unsigned char *)src.p->data + pld__tensor_offset(src.p, r, col);
    for (int32_t j = 0; j < m; j++)
      memcpy(to + (size_t)j * dst->row_bytes, from + (size_t)j * stride, len);
  }
  return PLD_OK;
}

int pld_store_rows(pld_core k, const pld_tile *t, pld_tensor dst,
                   const pld_tile *idx, int64_t col, pld_atomic atomic) {
  struct pld__core *c = k.p;
  const char *fn = "pld_store_rows";
  if (pld__tile_check(c, fn, "t", t) || pld__tensor_check(c, fn, dst, 1) ||
      pld__tensor_dtype_match(c, fn, "t", t, dst.p) ||
      pld__atomic_check(c, fn, dst.p->dtype, atomic) ||
      pld__rows_index_check(c, fn, idx, t->rows) ||
      rows_bounds(c, fn, dst.p, idx, t->rows, col, t->cols))
    return c->status;
  const int add = atomic == PLD_ATOMIC_ADD;
  const size_t len = (size_t)t->cols * pld_dtype_size(t->dtype);
  const size_t stride = pld__tensor_stride(dst.p);
  const int32_t n = t->rows;
  if (rows_race(c, fn, add ? PLD__RACE_ATOMIC : PLD__RACE_WRITE, dst.p, idx, n,
                col, len))
    return c->status;
  /* In index order: of two plain stores to one row, the later lands. */
  for (int32_t i = 0, m; i < n; i += m) {
    m = pld__rows_run(idx, i, n);
    const int32_t r = pld__rows_index(idx, i);
    if (r < 0)
      continue;
    pld__obs_gm(1, len * (size_t)m);
    unsigned char *to =
        (unsigned char *)dst.p->data + pld__tensor_offset(dst.p, r, col);
    const unsigned char *from = pld__run_ptr(t, (size_t)i);
    for (int32_t j = 0; j < m; j++) {
      unsigned char *d = to + (size_t)j * stride;
      const unsigned char *s = from + (size_t)j * t->row_bytes;
      if (add)
        pld__elems_add_atomic(d, s, (size_t)t->cols, t->dtype);
      else
        memcpy(d, s, len);
    }
  }
  return PLD_OK;
}
