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
 * BF16 is bit manipulation that gcc vectorizes on every level; with
 * AVX-512 it is written out (word permutations and mask registers), in
 * half the instructions gcc finds, with the same results (compared on
 * every float).  AVX512-BF16's VCVTNEPS2BF16 is not used: it flushes
 * subnormals to zero. */
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

/* Eight halves with F16C. */
PLD__ISA_TARGET_AVX2 static inline void
pld__fp16_load8_f16c(float *restrict out, const uint16_t *restrict in) {
  _mm256_storeu_ps(
      out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)in)));
}

PLD__ISA_TARGET_AVX2 static inline void
pld__fp16_store8_f16c(uint16_t *restrict out, const float *restrict in) {
  const __m128i h =
      _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT);
  _mm_storeu_si128((__m128i *)(void *)out, pld__fp16_nan_fix128(h));
}

PLD__ISA_TARGET_AVX2 static inline void
pld__fp16_load_f16c(float *restrict out, const uint16_t *restrict in,
                    size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    pld__fp16_load8_f16c(out + i, in + i);
  for (; i < n; i++)
    out[i] = pld__fp16_to_f32(in[i]);
}

PLD__ISA_TARGET_AVX2 static inline void
pld__fp16_store_f16c(uint16_t *restrict out, const float *restrict in,
                     size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    pld__fp16_store8_f16c(out + i, in + i);
  for (; i < n; i++)
    out[i] = pld__f32_to_fp16(in[i]);
}

/* 16 halves with AVX-512. */
PLD__ISA_TARGET_AVX512 static inline void
pld__fp16_load16_avx512(float *restrict out, const uint16_t *restrict in) {
  _mm512_storeu_ps(out, _mm512_cvtph_ps(_mm256_loadu_si256(
                            (const __m256i *)(const void *)in)));
}

PLD__ISA_TARGET_AVX512 static inline void
pld__fp16_load_avx512(float *restrict out, const uint16_t *restrict in,
                      size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    pld__fp16_load16_avx512(out + i, in + i);
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
pld__fp16_store16_avx512(uint16_t *restrict out, const float *restrict in) {
  _mm256_storeu_si256((__m256i *)(void *)out,
                      pld__fp16_from_avx512(_mm512_loadu_ps(in)));
}

PLD__ISA_TARGET_AVX512 static inline void
pld__fp16_store_avx512(uint16_t *restrict out, const float *restrict in,
                       size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    pld__fp16_store16_avx512(out + i, in + i);
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(
        out + i, m, pld__fp16_from_avx512(_mm512_maskz_loadu_ps(m, in + i)));
  }
}

/* BF16 with AVX-512: the same bits as pld__f32_to_bf16 and
 * pld__bf16_to_f32, in fewer instructions than gcc finds for them.  32
 * halves go to two float vectors in one word permutation each (half j to
 * the top of lane j, zeros below it), and two vectors of rounded floats
 * back to 32 halves in one (the top word of every lane). */
#define PLD__BF16_WORDS(f)                                                     \
  f(31), f(30), f(29), f(28), f(27), f(26), f(25), f(24), f(23), f(22), f(21), \
      f(20), f(19), f(18), f(17), f(16), f(15), f(14), f(13), f(12), f(11),    \
      f(10), f(9), f(8), f(7), f(6), f(5), f(4), f(3), f(2), f(1), f(0)
#define PLD__BF16_WIDEN(j) (short)((j) / 2) /* odd words; even ones zeroed */
#define PLD__BF16_TOP(j) (short)(2 * (j) + 1)

/* The two float vectors of 32 halves (odd words j take half (j - 1) / 2,
 * of the upper 16 in hi; even words are zeroed). */
PLD__ISA_TARGET_AVX512 static inline __m512 pld__bf16_widen_avx512(__m512i h,
                                                                   int hi) {
  const __m512i lo = _mm512_set_epi16(PLD__BF16_WORDS(PLD__BF16_WIDEN));
  const __m512i idx = hi ? _mm512_add_epi16(lo, _mm512_set1_epi16(16)) : lo;
  return _mm512_castsi512_ps(
      _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, h));
}

PLD__ISA_TARGET_AVX512 static inline void
pld__bf16_load32_avx512(float *restrict out, const uint16_t *restrict in) {
  const __m512i h = _mm512_loadu_si512(in);
  _mm512_storeu_ps(out, pld__bf16_widen_avx512(h, 0));
  _mm512_storeu_ps(out + 16, pld__bf16_widen_avx512(h, 1));
}

/* The first of 16 halves that m selects. */
PLD__ISA_TARGET_AVX512 static inline void
pld__bf16_load16_avx512(float *restrict out, const uint16_t *restrict in,
                        __mmask16 m) {
  const __m512i u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, in));
  _mm512_mask_storeu_epi32(out, m, _mm512_slli_epi32(u, 16));
}

/* The float's bits rounded as pld__f32_to_bf16 rounds them: the BF16 is
 * the top half. */
PLD__ISA_TARGET_AVX512 static inline __m512i pld__bf16_round_avx512(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 odd = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000));
  __m512i t = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF));
  t = _mm512_mask_add_epi32(t, odd, t, _mm512_set1_epi32(1));
  return _mm512_mask_or_epi32(t, nan, u, _mm512_set1_epi32(0x00400000));
}

/* 32 halves from two vectors of floats, rounded. */
PLD__ISA_TARGET_AVX512 static inline __m512i
pld__bf16_narrow_avx512(__m512 x0, __m512 x1) {
  const __m512i top = _mm512_set_epi16(PLD__BF16_WORDS(PLD__BF16_TOP));
  return _mm512_permutex2var_epi16(pld__bf16_round_avx512(x0), top,
                                   pld__bf16_round_avx512(x1));
}

PLD__ISA_TARGET_AVX512 static inline void
pld__bf16_store32_avx512(uint16_t *restrict out, const float *restrict in) {
  _mm512_storeu_si512(out, pld__bf16_narrow_avx512(_mm512_loadu_ps(in),
                                                   _mm512_loadu_ps(in + 16)));
}

PLD__ISA_TARGET_AVX512 static inline void
pld__bf16_store16_avx512(uint16_t *restrict out, const float *restrict in,
                         __mmask16 m) {
  const __m512i t = pld__bf16_round_avx512(_mm512_maskz_loadu_ps(m, in));
  _mm512_mask_cvtepi32_storeu_epi16(out, m, _mm512_srli_epi32(t, 16));
}

/* pld__bf16_load_avx512 and pld__bf16_store_avx512: n elements, 32 at a
 * time, then the tail 16 at a time. */
#define PLD__BF16_ARRAY(dir, OUT, IN)                                          \
  PLD__ISA_TARGET_AVX512 static inline void pld__bf16_##dir##_avx512(          \
      OUT *restrict out, const IN *restrict in, size_t n) {                    \
    size_t i = 0;                                                              \
    for (; i + 32 <= n; i += 32)                                               \
      pld__bf16_##dir##32_avx512(out + i, in + i);                             \
    for (; i < n; i += 16)                                                     \
      pld__bf16_##dir##16_avx512(                                              \
          out + i, in + i,                                                     \
          (__mmask16)(n - i >= 16 ? 0xFFFFu : (1u << (n - i)) - 1));           \
  }
PLD__BF16_ARRAY(load, float, uint16_t)
PLD__BF16_ARRAY(store, uint16_t, float)
#undef PLD__BF16_ARRAY
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
#if PLD__ISA_X86
    if (isa >= PLD__ISA_AVX512) {
      pld__bf16_load_avx512(out, h, n);
      break;
    }
#endif
    PLD__VLOOP(float, i, n, out[i] = pld__bf16_to_f32(h[i]););
    break;
  case PLD_BOOL: { /* a mask: 0 or 1 (pld_cast) */
    const uint8_t *x = in;
    PLD__VLOOP(uint8_t, i, n, out[i] = (float)(x[i] != 0););
    break;
  }
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
#if PLD__ISA_X86
    if (isa >= PLD__ISA_AVX512) {
      pld__bf16_store_avx512(o, in, n);
      break;
    }
#endif
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
  case PLD_BOOL: { /* nonzero is true, NaN false (pld__elem_set's rule) */
    uint8_t *o = out;
    PLD__VLOOP(uint8_t, i, n,
               o[i] = (uint8_t)((in[i] != 0.0f) & (in[i] == in[i])););
    break;
  }
  default:
    break;
  }
}

/* ---- FP16 and BF16 in blocks ------------------------------------------- */

/* The elements of a block: loops that convert as they go (FP16 and BF16
 * elementwise operations) convert a block of each operand to float,
 * compute, and convert back. */
#define PLD__HALF_BLOCK 32

/* pld__load_half_at: pld__load_f32_at for FP16 or BF16; and
 * pld__store_half_at: pld__store_f32_at to FP16 or BF16.  A whole block (n
 * is PLD__HALF_BLOCK, a constant where they are inlined) is converted
 * without a loop or a tail, so that gcc keeps its floats in registers
 * rather than storing them and loading them back. */
#if PLD__ISA_X86
#define PLD__HALF_BLOCK_X86(dir)                                               \
  if (n == PLD__HALF_BLOCK && dt == PLD_FP16 && isa >= PLD__ISA_AVX512) {      \
    pld__fp16_##dir##16_avx512(out, in);                                       \
    pld__fp16_##dir##16_avx512(out + 16, in + 16);                             \
    return;                                                                    \
  }                                                                            \
  if (n == PLD__HALF_BLOCK && dt == PLD_FP16 && isa >= PLD__ISA_AVX2) {        \
    for (size_t i = 0; i < PLD__HALF_BLOCK; i += 8)                            \
      pld__fp16_##dir##8_f16c(out + i, in + i);                                \
    return;                                                                    \
  }                                                                            \
  if (n == PLD__HALF_BLOCK && dt == PLD_BF16 && isa >= PLD__ISA_AVX512) {      \
    pld__bf16_##dir##32_avx512(out, in);                                       \
    return;                                                                    \
  }
#else
#define PLD__HALF_BLOCK_X86(dir)
#endif

#define PLD__HALF_AT(dir, OUT, IN)                                             \
  PLD__ISA_INLINE void pld__##dir##_half_at(const int isa, pld_dtype dt,       \
                                            OUT *restrict out,                 \
                                            const IN *restrict in, size_t n) { \
    PLD__HALF_BLOCK_X86(dir)                                                   \
    pld__##dir##_f32_at(isa, dt, out, in, n);                                  \
  }
PLD__HALF_AT(load, float, uint16_t)
PLD__HALF_AT(store, uint16_t, float)
#undef PLD__HALF_AT
#undef PLD__HALF_BLOCK_X86

#endif
