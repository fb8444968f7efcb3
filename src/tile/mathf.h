/* tile/mathf.h: expf and logf written for vector loops.
 *
 * libm's expf and logf are calls, which stop gcc from vectorizing a tile
 * loop (and cost a call per element).  These are branch-free - every case
 * is a select - so a loop over them becomes vector code.  Both use Cody-Waite
 * range reduction and the minimax polynomials of Cephes (S. Moshier),
 * whose peak relative error is about one float ulp; the tests hold them to
 * 4 ulp against double precision. */
#ifndef PLD_TILE_MATHF_H
#define PLD_TILE_MATHF_H

#include <stdint.h>

#include "tile/convert.h"

/* ln 2 split so that n * LN2_HI is exact for |n| < 2^15. */
#define PLD__LN2_HI 0.693359375f
#define PLD__LN2_LO (-2.12194440e-4f)

/* e^x.  x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7 polynomial,
 * then scaled by 2^n.  x is clamped to [-104, 89] first (beyond, the
 * result is 0 or infinity anyway), so n is in [-150, 128]; 2^n is applied
 * as two factors that are both normal floats, which lets overflow give
 * infinity and tiny results come out as subnormals.  NaN returns NaN. */
static inline float pld__expf(float x) {
  /* NaN becomes 0, then the clamp, with masks: chained choices let gcc
   * skip the second comparison after the first, and a comparison that
   * runs on one path only is not if-converted without AVX-512's masks
   * (the loop would stay scalar with AVX2 and NEON). */
  const uint32_t nan = 0u - (uint32_t)(x != x);
  float xc = pld__f32_from_bits(pld__f32_bits(x) & ~nan);
  const uint32_t big = 0u - (uint32_t)(xc > 89.0f);
  const uint32_t tiny = 0u - (uint32_t)(xc < -104.0f);
  xc = pld__f32_from_bits((pld__f32_bits(xc) & ~(big | tiny)) |
                          (pld__f32_bits(89.0f) & big) |
                          (pld__f32_bits(-104.0f) & tiny));
  const float n = __builtin_rintf(xc * 1.44269504088896341f);
  const float r = (xc - n * PLD__LN2_HI) - n * PLD__LN2_LO;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  const int32_t ni = (int32_t)n;
  const int32_t n1 = ni / 2;
  const int32_t n2 = ni - n1;
  const float s1 = pld__f32_from_bits((uint32_t)(n1 + 127) << 23);
  const float s2 = pld__f32_from_bits((uint32_t)(n2 + 127) << 23);
  const float y = er * s1 * s2;
  return pld__f32_from_bits((pld__f32_bits(y) & ~nan) |
                            (pld__f32_bits(x) & nan));
}

/* ln x.  x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m = ln(1 + f) by
 * f - f^2/2 + f^3 P(f), plus e ln2 in two parts.  Subnormal x is first
 * scaled by 2^23.  ln 0 = -inf, ln of a negative number is NaN, ln inf =
 * inf, NaN returns NaN. */
static inline float pld__logf(float x) {
  /* Scalings are multiplications by a power of two built from bits, and
   * doublings are exponent increments: gcc turns a multiplication by a
   * selected constant back into one done on one arm of a branch, which it
   * then will not if-convert (it could raise a flag the source would not),
   * and the loop would stay scalar. */
  const uint32_t sub = x < 0x1p-126f;
  const float xs = x * pld__f32_from_bits((127u + 23u * sub) << 23);
  const uint32_t u = pld__f32_bits(xs);
  int32_t e = (int32_t)((u >> 23) & 0xFFu) - 126 - 23 * (int32_t)sub;
  const uint32_t mbits = (u & 0x007FFFFFu) | 0x3F000000u; /* [0.5, 1) */
  const uint32_t small = pld__f32_from_bits(mbits) < 0.70710678118654752440f;
  e -= (int32_t)small;
  const float f = pld__f32_from_bits(mbits + (small << 23)) - 1.0f;
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float fe = (float)e;
  float y = p * f * z;
  y += PLD__LN2_LO * fe;
  y += -0.5f * z;
  float r = f + y;
  r += PLD__LN2_HI * fe;
  /* The special cases are added to r rather than selected instead of it,
   * and picked with masks rather than a chain of conditions: gcc moves a
   * computation used on one arm only into a branch, and tests evaluated
   * only on some arms (an ordered compare can raise a flag) are not
   * if-converted; either way the loop would stay scalar.  r is finite
   * here, so adding -inf, inf or NaN gives exactly that, and adding +0
   * changes nothing.  At most one of the tests holds. */
  const uint32_t zero = x == 0.0f, neg = x < 0.0f;
  const uint32_t inf = x == __builtin_inff(), nan = x != x;
  const uint32_t fix = ((0u - zero) & 0xFF800000u) |    /* ln 0 = -inf */
                       ((0u - neg) & 0x7FC00000u) |     /* ln -x = NaN */
                       ((0u - inf) & 0x7F800000u) |     /* ln inf = inf */
                       ((0u - nan) & pld__f32_bits(x)); /* NaN stays */
  return r + pld__f32_from_bits(fix);
}

#endif
