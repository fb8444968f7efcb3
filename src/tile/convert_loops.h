/* tile/convert_loops.h: the loops of the array conversions (pld__load_f32
 * and pld__store_f32, tile/convert.h), inline for a level known where
 * they are compiled (tile/isa.h): loops that convert as they go (matmul's
 * packing, FP16 and BF16 elementwise operations) run them in their own
 * copy, without a call per chunk.
 *
 * FP16 goes through the CPU's conversion instructions from avx2 up (F16C,
 * and AVX-512's 16-lane forms), with the same results as the plain C of
 * tile/convert.h on every input: both convert exactly to float and round
 * to nearest even from it (the instruction's rounding is fixed in its
 * immediate, not taken from MXCSR), infinities and zeros keep their
 * signs, subnormals are converted (no flushing: neither the instructions
 * nor the plain C look at MXCSR's DAZ and FTZ... as long as nobody sets
 * them, since the plain C's float arithmetic would).  NaNs differ: the
 * instructions keep the payload's top bits, the plain C gives the quiet
 * NaN of the same sign, 0x7E00, which the F16C path then gives too (one
 * mask per vector).  bench/vectorization.sh and an exhaustive comparison
 * (every half, every float) checked this.
 *
 * BF16 is bit manipulation that gcc vectorizes on every level.
 * AVX512-BF16's VCVTNEPS2BF16 is not used: it flushes subnormals to zero. */
#ifndef PLD_TILE_CONVERT_LOOPS_H
#define PLD_TILE_CONVERT_LOOPS_H

#include <string.h>

#include "tile/convert.h"
#include "tile/isa.h"
#include "tile/tile.h"

#if PLD__ISA_X86
#include <immintrin.h>

/* The 16-bit lanes of h that hold a NaN get the quiet NaN of their sign,
 * as pld__f32_to_fp16 gives it: a converted NaN has the quiet bit, so
 * clearing the 9 payload bits below it leaves sign | 0x7E00. */
static inline __m128i pld__fp16_nan_fix128(__m128i h) {
  const __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7FFF)),
                                      _mm_set1_epi16(0x7C00));
  return _mm_andnot_si128(_mm_and_si128(nan, _mm_set1_epi16(0x01FF)), h);
}

PLD__ISA_TARGET_AVX2 static inline void
pld__fp16_load_f16c(float *restrict out, const uint16_t *restrict in,
                    size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  (const __m128i *)(const void *)(in + i))));
  for (; i < n; i++)
    out[i] = pld__fp16_to_f32(in[i]);
}

PLD__ISA_TARGET_AVX2 static inline void
pld__fp16_store_f16c(uint16_t *restrict out, const float *restrict in,
                     size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)(void *)(out + i), pld__fp16_nan_fix128(h));
  }
  for (; i < n; i++)
    out[i] = pld__f32_to_fp16(in[i]);
}

PLD__ISA_TARGET_AVX512 static inline void
pld__fp16_load_avx512(float *restrict out, const uint16_t *restrict in,
                      size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                  (const __m256i *)(const void *)(in + i))));
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, in + i)));
  }
}

/* With AVX-512 the NaNs are fixed before the conversion, in two
 * instructions: a NaN float becomes sign | 0x7FC00000 (a mask of the
 * unordered lanes, one ternary-logic blend: (x & 0xFF800000) | 0x00400000),
 * which converts to sign | 0x7E00. */
PLD__ISA_TARGET_AVX512 static inline __m256i pld__fp16_from_avx512(__m512 x) {
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512i q = _mm512_mask_ternarylogic_epi32(
      _mm512_castps_si512(x), nan, _mm512_set1_epi32((int)0xFF800000u),
      _mm512_set1_epi32(0x00400000), 0xEA); /* (a & b) | c */
  return _mm512_cvtps_ph(_mm512_castsi512_ps(q), _MM_FROUND_TO_NEAREST_INT);
}

PLD__ISA_TARGET_AVX512 static inline void
pld__fp16_store_avx512(uint16_t *restrict out, const float *restrict in,
                       size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(void *)(out + i),
                        pld__fp16_from_avx512(_mm512_loadu_ps(in + i)));
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(
        out + i, m, pld__fp16_from_avx512(_mm512_maskz_loadu_ps(m, in + i)));
  }
}
#endif

/* pld__load_f32 at level isa. */
PLD__ISA_INLINE void pld__load_f32_at(const int isa, pld_dtype dt,
                                      float *restrict out,
                                      const void *restrict in, size_t n) {
  (void)isa;
  const uint16_t *h = in;
  switch (dt) {
  case PLD_FP16:
#if PLD__ISA_X86
    if (isa >= PLD__ISA_AVX512) {
      pld__fp16_load_avx512(out, h, n);
      break;
    }
    if (isa >= PLD__ISA_AVX2) {
      pld__fp16_load_f16c(out, h, n);
      break;
    }
#endif
    PLD__VLOOP(float, i, n, out[i] = pld__fp16_to_f32(h[i]););
    break;
  case PLD_BF16:
    PLD__VLOOP(float, i, n, out[i] = pld__bf16_to_f32(h[i]););
    break;
  default: { /* FP32 */
    /* A blocked loop, not memcpy: matmul packs rows of 8 to 128 floats,
     * where a library call costs more than the copy; gcc turns each block
     * into inline vector moves. */
    const float *f = in;
    PLD__VLOOP(float, i, n, out[i] = f[i];);
    break;
  }
  }
}

/* pld__store_f32 at level isa. */
PLD__ISA_INLINE void pld__store_f32_at(const int isa, pld_dtype dt,
                                       void *restrict out,
                                       const float *restrict in, size_t n) {
  (void)isa;
  switch (dt) {
  case PLD_FP32:
    memcpy(out, in, n * sizeof *in);
    break;
  case PLD_FP16: {
    uint16_t *o = out;
#if PLD__ISA_X86
    if (isa >= PLD__ISA_AVX512) {
      pld__fp16_store_avx512(o, in, n);
      break;
    }
    if (isa >= PLD__ISA_AVX2) {
      pld__fp16_store_f16c(o, in, n);
      break;
    }
#endif
    PLD__VLOOP(float, i, n, o[i] = pld__f32_to_fp16(in[i]););
    break;
  }
  case PLD_BF16: {
    uint16_t *o = out;
    PLD__VLOOP(float, i, n, o[i] = pld__f32_to_bf16(in[i]););
    break;
  }
  case PLD_INT32: {
    int32_t *o = out;
    PLD__VLOOP(float, i, n, o[i] = pld__f32_to_i32(in[i]););
    break;
  }
#define PLD__STORE_F32_NARROW(name, T, lo, hi)                                 \
  case PLD_##name: {                                                           \
    T *o = out;                                                                \
    PLD__VLOOP(float, i, n,                                                    \
               o[i] = (T)pld__f32_to_int(in[i], (float)(lo), (float)(hi)););   \
    break;                                                                     \
  }
    PLD__NARROW_INT_DTYPES(PLD__STORE_F32_NARROW)
#undef PLD__STORE_F32_NARROW
  default:
    break;
  }
}

#endif
