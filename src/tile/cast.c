/* tile/cast.c: pld_cast.  Every conversion goes through one of two exact
 * intermediates - float for the float dtypes, int32 for the integer ones
 * and BOOL (a mask of 0 and 1) - so 8 loaders and 16 storers
 * (tile/convert.c) cover all 56 dtype pairs, each with a single
 * rounding; when one side is the intermediate itself (FP32, INT32), its
 * loader or storer alone converts. */
#include <string.h>

#include "tile/convert.h"
#include "tile/tile.h"

int pld_cast(pld_core k, pld_tile *dst, const pld_tile *a) {
  struct pld__core *c = k.p;
  /* BOOL (a mask) converts as an integer of 0 and 1, both ways. */
  if (pld__vector_only(c, "pld_cast") ||
      pld__tile_check(c, "pld_cast", "dst", dst) ||
      pld__tile_check(c, "pld_cast", "a", a) ||
      (dst->dtype != PLD_BOOL &&
       pld__tile_compute_check(c, "pld_cast", "dst", dst)) ||
      (a->dtype != PLD_BOOL &&
       pld__tile_compute_check(c, "pld_cast", "a", a)) ||
      pld__tile_match(c, "pld_cast", "dst", dst, "a", a, 0))
    return c->status;
  pld__obs_work(PLD__TC_VECTOR, (int64_t)(a->rows * a->cols) *
                                    (int64_t)(pld_dtype_size(a->dtype) +
                                              pld_dtype_size(dst->dtype)));
  const struct pld__runs runs = pld__tile_runs(dst, a);
  if (dst->dtype == a->dtype) {
    /* A copy; a tile cast onto itself is nothing to do. */
    const size_t len = runs.len * pld_dtype_size(a->dtype);
    for (size_t r = 0; r < runs.count && dst != a; r++)
      memcpy(pld__run_ptr(dst, r), pld__run_ptr(a, r), len);
    return PLD_OK;
  }
  const size_t esd = pld_dtype_size(dst->dtype);
  const size_t esa = pld_dtype_size(a->dtype);
  const int from_float = pld__is_float_dtype(a->dtype);
  const int to_float = pld__is_float_dtype(dst->dtype);
  union {
    float f[PLD__CHUNK];
    int32_t i[PLD__CHUNK];
  } tmp;
  for (size_t r = 0; r < runs.count; r++) {
    unsigned char *d = pld__run_ptr(dst, r);
    const unsigned char *s = pld__run_ptr(a, r);
    /* When one side is the intermediate itself, one conversion does. */
    if ((from_float || a->dtype == PLD_BOOL) && dst->dtype == PLD_FP32) {
      pld__load_f32(a->dtype, (float *)(void *)d, s, runs.len);
      continue;
    }
    if (a->dtype == PLD_FP32) {
      pld__store_f32(dst->dtype, d, (const float *)(const void *)s, runs.len);
      continue;
    }
    if (!from_float && !to_float && dst->dtype == PLD_INT32) {
      pld__load_i32(a->dtype, (int32_t *)(void *)d, s, runs.len);
      continue;
    }
    if (a->dtype == PLD_INT32) {
      pld__store_i32(dst->dtype, d, (const int32_t *)(const void *)s, runs.len);
      continue;
    }
    for (size_t i = 0; i < runs.len; i += PLD__CHUNK) {
      const size_t m = runs.len - i < PLD__CHUNK ? runs.len - i : PLD__CHUNK;
      if (from_float) {
        pld__load_f32(a->dtype, tmp.f, s + i * esa, m);
        pld__store_f32(dst->dtype, d + i * esd, tmp.f, m);
      } else {
        pld__load_i32(a->dtype, tmp.i, s + i * esa, m);
        pld__store_i32(dst->dtype, d + i * esd, tmp.i, m);
      }
    }
  }
  return PLD_OK;
}
