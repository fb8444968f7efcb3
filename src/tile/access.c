/* tile/access.c: pld_read and pld_write, single elements of device tensors
 * from a kernel. */
#include "tile/convert.h"
#include "tile/tile.h"

/* The byte offset of element idx of t, or a failure naming the index
 * (the tensor's name and shape are written only then: this runs for
 * every element read or written). */
static int element_offset(struct pld__core *c, const char *fn,
                          const struct pld__tensor *t, int n,
                          const int64_t *idx, size_t *offset) {
  if (n > 0 && !idx)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "index: expected %d coordinates, got NULL", n);
  size_t off = 0;
  int i = 0;
  for (; n == t->ndim && i < n; i++) {
    if (idx[i] < 0 || idx[i] >= t->shape[i])
      break;
    off = off * (size_t)t->shape[i] + (size_t)idx[i];
  }
  if (n == t->ndim && i == n) {
    *offset = off * pld_dtype_size(t->dtype);
    return PLD_OK;
  }
  char name[160], shape[160];
  pld__tensor_label(name, sizeof name, t);
  pld__tensor_str(shape, sizeof shape, t);
  if (n != t->ndim)
    return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "index has %d coordinates, %s %s has %d dimensions", n,
                      name, shape, t->ndim);
  long long dims[PLD_MAX_DIMS];
  char at[160];
  for (int j = 0; j < n; j++)
    dims[j] = (long long)idx[j];
  pld__shape_str(at, sizeof at, n, dims);
  return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                    "index %s is outside %s %s (coordinate %d)", at, name,
                    shape, i);
}

/* The race detector's check of one element at byte off of t. */
static int element_race(struct pld__core *c, const char *fn, int kind,
                        const struct pld__tensor *t, size_t off) {
  size_t es = pld_dtype_size(t->dtype), cols = (size_t)pld__tensor_cols(t);
  size_t e = off / es;
  return pld__tensor_race(c, fn, kind, t, (int64_t)(e / cols),
                          (int64_t)(e % cols), es, 1);
}

double pld_read(pld_core k, pld_tensor t, int n, const int64_t *idx) {
  struct pld__core *c = k.p;
  size_t off = 0;
  if (pld__tensor_check(c, "pld_read", t, 0) ||
      element_offset(c, "pld_read", t.p, n, idx, &off) ||
      element_race(c, "pld_read", PLD__RACE_READ, t.p, off))
    return 0.0;
  return pld__elem_get(t.p->dtype, (const unsigned char *)t.p->data + off);
}

int pld_write(pld_core k, pld_tensor t, int n, const int64_t *idx, double v) {
  struct pld__core *c = k.p;
  size_t off = 0;
  if (pld__tensor_check(c, "pld_write", t, 1) ||
      element_offset(c, "pld_write", t.p, n, idx, &off) ||
      element_race(c, "pld_write", PLD__RACE_WRITE, t.p, off))
    return c->status;
  pld__elem_set(t.p->dtype, (unsigned char *)t.p->data + off, v);
  return PLD_OK;
}
