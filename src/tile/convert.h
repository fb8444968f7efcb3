/* tile/convert.h: conversions between element types, with the rules of
 * pld/tile.h: float to float rounds to nearest even (overflow gives
 * infinity), float to integer rounds to nearest even then saturates (NaN
 * gives 0), integer to integer saturates, integer to float rounds to
 * nearest even.
 *
 * The element functions are branch-free so that the loops calling them
 * vectorize - choices between values are masks, since gcc moves a
 * computation that only one arm of a choice uses into a branch, which it
 * then does not if-convert without AVX-512's masked instructions (the
 * loop would stay scalar on SSE2, AVX2 and NEON).  FP16 and BF16 go
 * through float bit patterns rather than compiler half types, which would
 * tie the code to F16C or AVX-512 FP16; the array conversions use F16C
 * where the CPU has it (tile/convert_loops.h), with the same results. */
#ifndef PLD_TILE_CONVERT_H
#define PLD_TILE_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pld/types.h"

static inline uint32_t pld__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float pld__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* IEEE binary16 to float, exact.  Normal halves are rebiased by a multiply
 * (2^-112 moves the exponent from bias 15 to 127 and makes infinities and
 * NaNs stay so); subnormals come from the magic-number subtraction
 * (0.5 + m * 2^-24) - 0.5.  (Method of Maratyszcza's FP16 library.) */
static inline float pld__fp16_to_f32(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normal =
      pld__f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float subnormal =
      pld__f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t sub = 0u - (uint32_t)(two_w < (1u << 27));
  const uint32_t magnitude =
      (pld__f32_bits(subnormal) & sub) | (pld__f32_bits(normal) & ~sub);
  return pld__f32_from_bits(sign | magnitude);
}

/* Float to IEEE binary16, rounding to nearest even; overflow gives
 * infinity, NaN the quiet NaN of the same sign.  The float adder does the
 * rounding: adding a power of two chosen from the exponent leaves exactly
 * the half's significand bits, rounded, at the bottom of the sum.  The
 * first scalings push values beyond the half range to infinity. */
static inline uint16_t pld__f32_to_fp16(float f) {
  float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = pld__f32_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  const uint32_t small = 0u - (uint32_t)(bias < 0x71000000u);
  bias = (bias & ~small) | (0x71000000u & small);
  base = pld__f32_from_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = pld__f32_bits(base);
  const uint32_t nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
  const uint32_t nan = 0u - (uint32_t)(shl1_w > 0xFF000000u);
  return (uint16_t)((sign >> 16) | (0x7E00u & nan) | (nonsign & ~nan));
}

static inline float pld__bf16_to_f32(uint16_t h) {
  return pld__f32_from_bits((uint32_t)h << 16);
}

/* Float to bfloat16, rounding to nearest even on the 16 dropped bits; a
 * carry out of the significand moves into the exponent, so overflow gives
 * infinity.  NaNs stay NaN (made quiet: truncation could drop every
 * payload bit and leave an infinity): their rounding increment is masked
 * off and the quiet bit set instead.  Masks rather than a choice between
 * two results: gcc narrows both arms of a choice, then widens them again
 * to blend, at twice the cost of this loop. */
static inline uint16_t pld__f32_to_bf16(float f) {
  const uint32_t u = pld__f32_bits(f);
  const uint32_t nan = 0u - (uint32_t)((u & 0x7FFFFFFFu) > 0x7F800000u);
  const uint32_t increment = 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(((u | (nan & 0x00400000u)) + (~nan & increment)) >> 16);
}

/* Double to float rounding to odd: the float next to d toward zero, with
 * its last bit set when d is not exact.  Rounding that to nearest even in
 * a format at least two bits narrower (FP16: 11, BF16: 8, float: 24) gives
 * the correctly rounded result of d, which rounding d to nearest float
 * first would not (the float could land on a tie of the narrow format).
 * Computed from the nearest float: if it is inexact and even, its odd
 * neighbour toward d is the answer. */
static inline float pld__f64_to_f32_odd(double d) {
  const float f = (float)d;
  const double back = (double)f;
  const uint32_t u = pld__f32_bits(f);
  const uint32_t fix = (uint32_t)(back != d) & ~u & 1u;
  const uint32_t away = (uint32_t)(__builtin_fabs(d) > __builtin_fabs(back));
  return pld__f32_from_bits(u + (fix & away) - (fix & (away ^ 1u)));
}

/* Float to an integer range, rounding to nearest even, NaN to 0, then
 * saturating.  lo and hi must be exact floats (INT16, INT8, UINT8). */
static inline int32_t pld__f32_to_int(float x, float lo, float hi) {
  float r = __builtin_rintf(x);
  r = r == r ? r : 0.0f;
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  return (int32_t)r;
}

/* The same for INT32, whose largest value is no float: 2^31 and above
 * saturate explicitly (the conversion only runs in range). */
static inline int32_t pld__f32_to_i32(float x) {
  float r = __builtin_rintf(x);
  r = r == r ? r : 0.0f;
  r = r < -0x1p31f ? -0x1p31f : r;
  const int32_t v = (int32_t)(r < 0x1p31f ? r : 0.0f);
  return r < 0x1p31f ? v : INT32_MAX;
}

static inline int32_t pld__i32_clamp(int32_t x, int32_t lo, int32_t hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

/* ---- arrays (convert.c) ------------------------------------------------- */

/* n elements of a float tile dtype (FP32, FP16, BF16) to float, exact;
 * also BOOL, to 0 or 1 (nonzero being 1). */
void pld__load_f32(pld_dtype dt, float *restrict out, const void *restrict in,
                   size_t n);
/* n elements of an integer tile dtype to int32, exact (BOOL: 0 or 1,
 * nonzero being 1). */
void pld__load_i32(pld_dtype dt, int32_t *restrict out, const void *restrict in,
                   size_t n);
/* n floats / int32s to any tile dtype or BOOL, by the conversion
 * rules. */
void pld__store_f32(pld_dtype dt, void *restrict out, const float *restrict in,
                    size_t n);
void pld__store_i32(pld_dtype dt, void *restrict out,
                    const int32_t *restrict in, size_t n);

/* ---- single elements, any dtype (tensors too) --------------------------- */

/* The element at p as a double (exact but for INT64 beyond 2^53). */
double pld__elem_get(pld_dtype dt, const void *p);
/* Stores v converted by the rules (BOOL: 1 for nonzero, 0 for 0 and NaN). */
void pld__elem_set(pld_dtype dt, void *p, double v);
/* Stores the low bits of v: integer results that wrap. */
void pld__elem_wrap(pld_dtype dt, void *p, int64_t v);
/* dst[i] += src[i] for count elements of dtype (FP32, FP16, BF16, INT32,
 * INT16 or INT8), each add atomic: a compare-and-swap on its 32-bit word,
 * so 8- and 16-bit elements work too (aligned INT32: one atomic add).
 * Floats add in double and round once; integers wrap.  What the fabrics
 * that reach a peer's copy through shared memory and pld_store_rows do
 * for PLD_ATOMIC_ADD. */
void pld__elems_add_atomic(unsigned char *dst, const void *src, size_t count,
                           pld_dtype dtype);

#endif
