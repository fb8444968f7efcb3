/* tile/convert.c: converting arrays of elements between dtypes, to and
 * from FP32 and INT32, with the rules of tile/convert.h. */
#include "tile/convert.h"

#include <string.h>

#include "tile/convert_loops.h"
#include "tile/tile.h"

/* The array conversions: one copy per level (tile/isa.h); the float ones
 * are tile/convert_loops.h's. */

PLD__ISA_FUNCTION(, pld__load_f32,
                  (pld_dtype dt, float *restrict out, const void *restrict in,
                   size_t n),
                  (dt, out, in, n)) {
  pld__load_f32_at(isa, dt, out, in, n);
}

PLD__ISA_FUNCTION(, pld__store_f32,
                  (pld_dtype dt, void *restrict out, const float *restrict in,
                   size_t n),
                  (dt, out, in, n)) {
  pld__store_f32_at(isa, dt, out, in, n);
}

PLD__ISA_FUNCTION(, pld__load_i32,
                  (pld_dtype dt, int32_t *restrict out, const void *restrict in,
                   size_t n),
                  (dt, out, in, n)) {
  switch (dt) {
#define PLD__LOAD_I32(name, T, lo, hi)                                         \
  case PLD_##name: {                                                           \
    const T *x = in;                                                           \
    PLD__VLOOP(int32_t, i, n, out[i] = (int32_t)x[i];);                        \
    break;                                                                     \
  }
    PLD__INT_DTYPES(PLD__LOAD_I32)
#undef PLD__LOAD_I32
  case PLD_BOOL: { /* a mask: 0 or 1 */
    const uint8_t *x = in;
    PLD__VLOOP(int32_t, i, n, out[i] = x[i] != 0;);
    break;
  }
  default:
    break;
  }
}

PLD__ISA_FUNCTION(, pld__store_i32,
                  (pld_dtype dt, void *restrict out, const int32_t *restrict in,
                   size_t n),
                  (dt, out, in, n)) {
  switch (dt) {
  case PLD_FP32: {
    float *o = out;
    PLD__VLOOP(float, i, n, o[i] = (float)in[i];);
    break;
  }
  /* An INT32 can need more than float's 24 bits: through a double (exact)
   * rounded to odd, so the narrow rounding sees the exact value. */
  case PLD_FP16: {
    uint16_t *o = out;
    PLD__VLOOP(double, i, n,
               o[i] = pld__f32_to_fp16(pld__f64_to_f32_odd((double)in[i])););
    break;
  }
  case PLD_BF16: {
    uint16_t *o = out;
    PLD__VLOOP(double, i, n,
               o[i] = pld__f32_to_bf16(pld__f64_to_f32_odd((double)in[i])););
    break;
  }
#define PLD__STORE_I32(name, T, lo, hi)                                        \
  case PLD_##name: {                                                           \
    T *o = out;                                                                \
    PLD__VLOOP(int32_t, i, n, o[i] = (T)pld__i32_clamp(in[i], lo, hi););       \
    break;                                                                     \
  }
    PLD__INT_DTYPES(PLD__STORE_I32)
#undef PLD__STORE_I32
  case PLD_BOOL: {
    uint8_t *o = out;
    PLD__VLOOP(int32_t, i, n, o[i] = in[i] != 0;);
    break;
  }
  default:
    break;
  }
}

/* ---- single elements ---------------------------------------------------- */

/* Round to nearest even, NaN to 0, saturate to [lo, hi].  (double)hi may
 * round up (INT64_MAX becomes 2^63), which the >= test covers. */
static int64_t sat_f64(double v, int64_t lo, int64_t hi) {
  const double r = __builtin_rint(v);
  if (r != r)
    return 0;
  if (r <= (double)lo)
    return lo;
  if (r >= (double)hi)
    return hi;
  return (int64_t)r;
}

/* X(name, C type, smallest, largest) - every integer dtype of tensors. */
#define PLD__ALL_INT_DTYPES(X)                                                 \
  PLD__INT_DTYPES(X)                                                           \
  X(INT64, int64_t, INT64_MIN, INT64_MAX)

double pld__elem_get(pld_dtype dt, const void *p) {
  switch (dt) {
  case PLD_FP32: {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
  }
  case PLD_FP64: {
    double d;
    memcpy(&d, p, sizeof d);
    return d;
  }
  case PLD_FP16:
  case PLD_BF16: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return dt == PLD_FP16 ? pld__fp16_to_f32(h) : pld__bf16_to_f32(h);
  }
  case PLD_BOOL:
    return *(const unsigned char *)p ? 1.0 : 0.0;
#define PLD__GET_INT(name, T, lo, hi)                                          \
  case PLD_##name: {                                                           \
    T x;                                                                       \
    memcpy(&x, p, sizeof x);                                                   \
    return (double)x;                                                          \
  }
    PLD__ALL_INT_DTYPES(PLD__GET_INT)
#undef PLD__GET_INT
  default:
    return 0.0;
  }
}

void pld__elem_set(pld_dtype dt, void *p, double v) {
  switch (dt) {
  case PLD_FP32: {
    const float f = (float)v;
    memcpy(p, &f, sizeof f);
    break;
  }
  case PLD_FP64:
    memcpy(p, &v, sizeof v);
    break;
  case PLD_FP16:
  case PLD_BF16: {
    const float odd = pld__f64_to_f32_odd(v);
    const uint16_t h =
        dt == PLD_FP16 ? pld__f32_to_fp16(odd) : pld__f32_to_bf16(odd);
    memcpy(p, &h, sizeof h);
    break;
  }
  case PLD_BOOL:
    *(unsigned char *)p = v != 0 && v == v;
    break;
#define PLD__SET_INT(name, T, lo, hi)                                          \
  case PLD_##name: {                                                           \
    const T x = (T)sat_f64(v, lo, hi);                                         \
    memcpy(p, &x, sizeof x);                                                   \
    break;                                                                     \
  }
    PLD__ALL_INT_DTYPES(PLD__SET_INT)
#undef PLD__SET_INT
  default:
    break;
  }
}

void pld__elem_wrap(pld_dtype dt, void *p, int64_t v) {
  switch (dt) {
    /* Narrowing an integer keeps its low bits (two's complement; C leaves it
     * to the implementation, and every compiler pld supports does this). */
#define PLD__WRAP_INT(name, T, lo, hi)                                         \
  case PLD_##name: {                                                           \
    const T x = (T)v;                                                          \
    memcpy(p, &x, sizeof x);                                                   \
    break;                                                                     \
  }
    PLD__ALL_INT_DTYPES(PLD__WRAP_INT)
#undef PLD__WRAP_INT
  default:
    pld__elem_set(dt, p, (double)v);
    break;
  }
}

/* ---- atomic adds --------------------------------------------------------- */

/* Adds *v to the element at p atomically: a compare-and-swap on the
 * aligned 32-bit word holding it, so 8- and 16-bit elements work too.
 * Floats add in double and round once (the correctly rounded sum);
 * integers wrap. */
static void add_elem(unsigned char *p, const unsigned char *v, pld_dtype dt) {
  uintptr_t a = (uintptr_t)p;
  uint32_t *word = (uint32_t *)(a & ~(uintptr_t)3);
  size_t shift = (size_t)(a & 3);
  double add = pld__elem_get(dt, v);
  uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED), nw;
  do {
    /* (8 bytes: the compiler sees pld__elem_wrap's 64-bit cases; the
     * dtypes that add atomically are 4 bytes at most, tile.c) */
    unsigned char bytes[8] = {0};
    memcpy(bytes, &old, 4);
    unsigned char *e = bytes + shift;
    if (dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16)
      pld__elem_set(dt, e, pld__elem_get(dt, e) + add);
    else
      pld__elem_wrap(dt, e, (int64_t)pld__elem_get(dt, e) + (int64_t)add);
    memcpy(&nw, bytes, 4);
  } while (!__atomic_compare_exchange_n(word, &old, nw, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
}

void pld__elems_add_atomic(unsigned char *dst, const void *src, size_t count,
                           pld_dtype dtype) {
  /* Aligned INT32 (the collectives' credits, taken back at the end of
   * every call): one atomic add each, which wraps as add_elem does, without
   * its round trip through double and a compare-and-swap loop. */
  if (dtype == PLD_INT32 && ((uintptr_t)dst & 3) == 0) {
    for (size_t i = 0; i < count; i++) {
      int32_t v;
      memcpy(&v, (const unsigned char *)src + i * 4, 4);
      if (v)
        __atomic_fetch_add((int32_t *)dst + i, v, __ATOMIC_RELAXED);
    }
    return;
  }
  size_t es = pld_dtype_size(dtype);
  for (size_t i = 0; i < count; i++)
    add_elem(dst + i * es, (const unsigned char *)src + i * es, dtype);
}
