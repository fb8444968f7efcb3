/* tile/matmul.c: c (+)= a @ b on cube cores.
 *
 * The product is computed in blocks of MR x NR of c held in registers (a
 * register-blocked micro-kernel in plain C that gcc vectorizes: for each
 * k, one row of the B panel is NR/16 vector loads, and each of the MR rows
 * of A contributes a broadcast and NR/16 fused multiply-adds).  FP32
 * operands are read where they are, a KC x NR panel of b and an MR x KC
 * slab of a at their tiles' row strides (a copy would cost about a tenth
 * of the product at 128 x 128 x 128, and the tile rows are in cache
 * already); FP16/BF16 operands, and the edges (fewer than MR rows of a or
 * NR columns of b), are packed first, converted to float (exact) and
 * zero-padded, so that every block runs through the same kernel.  Each
 * element of c is the same chain of fused multiply-adds over k in order
 * whichever way it is read, so the bits do not depend on the path.  Sums
 * accumulate in float, as the FP32 accumulator of the hardware does. */
#include <string.h>

#include "core/alloc.h"
#include "tile/convert.h"
#include "tile/convert_loops.h"
#include "tile/isa.h"
#include "tile/tile.h"

#define MR 8
#define NR 32
#define KC 128

/* a * b + c rounded once, as every level computes it (tile/isa.h: the
 * same bits on every level).  The CPU's FMA from avx2 up (and on arm64);
 * without one, fmaf would be a libm call per element, so the generic
 * level of x86-64 computes it in double: the product of two floats is
 * exact there, the sum is rounded once, and when that rounding was
 * inexact (the exact error is TwoSum's) the sum is moved to the odd
 * neighbour on the side of the exact value: rounding to odd, which
 * rounding to float (29 bits fewer) then turns into the correctly rounded
 * result.  The tests on the bits are adds and shifts of 64-bit words, not
 * comparisons, which SSE2 lacks for them: the loop stays vectorized. */
PLD__ISA_INLINE float fmadd(const int isa, float a, float b, float c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || !PLD__ISA_X86
  (void)isa;
  return __builtin_fmaf(a, b, c);
#else
  if (isa >= PLD__ISA_AVX2)
    return __builtin_fmaf(a, b, c);
  const double p = (double)a * (double)b, dc = (double)c;
  const double s = p + dc;
  const double bv = s - p;
  const double err = (p - (s - bv)) + (dc - bv);
  uint64_t u, e;
  memcpy(&u, &s, sizeof u);
  memcpy(&e, &err, sizeof e);
  const uint64_t magnitude = 0x7FFFFFFFFFFFFFFFu;
  const uint64_t inexact = ((e & magnitude) + magnitude) >> 63; /* err != 0 */
  const uint64_t finite =
      1u ^ (((u & 0x7FF0000000000000u) + 0x0010000000000000u) >> 63);
  const uint64_t fix = inexact & finite & ~u & 1u; /* inexact and even */
  const uint64_t up = ~(e ^ u) >> 63; /* err away from zero, as s */
  u = u + (fix & up) - (fix & (up ^ 1u));
  double odd;
  memcpy(&odd, &u, sizeof odd);
  return (float)odd;
#endif
}

/* c[MR][NR] (row stride ldc) += ap[MR][kc] (row stride lda) @
 * bp[kc][NR].  The accumulators are a local array that gcc keeps in
 * vector registers: MR * NR / 16 = 16 of the 32 AVX-512 registers. */
PLD__ISA_INLINE void micro_kernel(const int isa, size_t kc,
                                  const float *restrict ap, size_t lda,
                                  const float *restrict bp, size_t ldb,
                                  float *restrict c, size_t ldc) {
  float acc[MR][NR];
  for (size_t r = 0; r < MR; r++)
    for (size_t j = 0; j < NR; j++)
      acc[r][j] = c[r * ldc + j];
  for (size_t k = 0; k < kc; k++) {
    const float *restrict bk = bp + k * ldb;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
    for (size_t r = 0; r < MR; r++) {
      const float ar = ap[r * lda + k];
      for (size_t j = 0; j < NR; j++)
        acc[r][j] = fmadd(isa, ar, bk[j], acc[r][j]);
    }
  }
  for (size_t r = 0; r < MR; r++)
    for (size_t j = 0; j < NR; j++)
      c[r * ldc + j] = acc[r][j];
}

/* Element (r, col) of tile t. */
static const unsigned char *mat_at(const pld_tile *t, size_t r, size_t col) {
  return t->data + r * t->row_bytes + col * pld_dtype_size(t->dtype);
}

/* One copy per level (tile/isa.h), with the micro-kernel and the packing
 * conversions inlined. */
PLD__ISA_FUNCTION(static, gemm,
                  (pld_tile * c, const pld_tile *a, const pld_tile *b,
                   int accumulate),
                  (c, a, b, accumulate)) {
  const size_t m = (size_t)a->rows, kk = (size_t)a->cols, n = (size_t)b->cols;
  const size_t ldc = c->row_bytes / sizeof(float);
  float *cd = (float *)c->data;
  const int fp32 = a->dtype == PLD_FP32; /* b's dtype is a's */
  const size_t a_stride = a->row_bytes / sizeof(float);
  const size_t b_stride = b->row_bytes / sizeof(float);
  float ap[MR * KC], bp[KC * NR], cb[MR * NR];
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    const size_t nr = n - j0 < NR ? n - j0 : NR;
    for (size_t k0 = 0; k0 < kk; k0 += KC) {
      const size_t kc = kk - k0 < KC ? kk - k0 : KC;
      const float *bs = bp;
      size_t ldb = NR;
      if (fp32 && nr == NR) { /* b read in place */
        bs = (const float *)(const void *)mat_at(b, k0, j0);
        ldb = b_stride;
      } else
        for (size_t k = 0; k < kc; k++) {
          pld__load_f32_at(isa, b->dtype, bp + k * NR, mat_at(b, k0 + k, j0),
                           nr);
          memset(bp + k * NR + nr, 0, (NR - nr) * sizeof(float));
        }
      for (size_t i0 = 0; i0 < m; i0 += MR) {
        const size_t mr = m - i0 < MR ? m - i0 : MR;
        /* A whole slab of an FP32 a is read in place (row stride lda). */
        const float *as = ap;
        size_t lda = KC;
        if (fp32 && mr == MR) {
          as = (const float *)(const void *)mat_at(a, i0, k0);
          lda = a_stride;
        } else
          for (size_t r = 0; r < MR; r++) {
            if (r < mr)
              pld__load_f32_at(isa, a->dtype, ap + r * KC,
                               mat_at(a, i0 + r, k0), kc);
            else
              memset(ap + r * KC, 0, kc * sizeof(float));
          }
        const int load = accumulate || k0 > 0;
        float *cblk = cd + i0 * ldc + j0;
        if (mr == MR && nr == NR) {
          if (!load)
            for (size_t r = 0; r < MR; r++)
              memset(cblk + r * ldc, 0, NR * sizeof(float));
          micro_kernel(isa, kc, as, lda, bs, ldb, cblk, ldc);
          continue;
        }
        /* An edge block: computed whole in cb, its valid part copied. */
        memset(cb, 0, sizeof cb);
        for (size_t r = 0; r < mr && load; r++)
          memcpy(cb + r * NR, cblk + r * ldc, nr * sizeof(float));
        micro_kernel(isa, kc, as, lda, bs, ldb, cb, NR);
        for (size_t r = 0; r < mr; r++)
          memcpy(cblk + r * ldc, cb + r * NR, nr * sizeof(float));
      }
    }
  }
}

/* Fails unless t fits the cube operand buffer `name` of `limit` bytes. */
static int check_l0(struct pld__core *c, const char *fn, const char *what,
                    const pld_tile *t, const char *name, size_t limit) {
  if (t->bytes <= limit)
    return PLD_OK;
  char st[64];
  pld__tile_str(st, sizeof st, t);
  return pld__kfail(c, PLD_ERR_TILE_MEMORY, fn,
                    "%s (%s, %zu bytes) does not fit %s: %zu bytes", what, st,
                    t->bytes, name, limit);
}

/* The failure of a matmul whose operands do not go together (the
 * strings are composed here only: a matmul that runs formats nothing). */
static int matmul_arg_fail(struct pld__core *c, const char *fn,
                           const pld_tile *cc, const pld_tile *a,
                           const pld_tile *b) {
  char sc[64], sa[64], sb[64];
  pld__tile_str(sc, sizeof sc, cc);
  pld__tile_str(sa, sizeof sa, a);
  pld__tile_str(sb, sizeof sb, b);
  if (cc->dtype != PLD_FP32)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "c is %s: matmul accumulates into an FP32 c", sc);
  if (!pld__is_float_dtype(a->dtype))
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "a is %s: matmul takes FP32, FP16 or BF16 operands", sa);
  if (a->dtype != b->dtype)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "a is %s, b is %s: dtypes must match (pld_cast "
                      "converts)",
                      sa, sb);
  if (a->cols != b->rows)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "a is %s, b is %s: a's columns (%d) must equal b's "
                      "rows (%d)",
                      sa, sb, (int)a->cols, (int)b->rows);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "c is %s: expected [%d, %d] for a %s @ b %s", sc,
                    (int)a->rows, (int)b->cols, sa, sb);
}

static int check_matmul(struct pld__core *c, const char *fn, const pld_tile *cc,
                        const pld_tile *a, const pld_tile *b) {
  if (c->status)
    return c->status;
  if (c->spec.type != PLD_CORE_CUBE && c->mix)
    return pld__kfail(c, PLD_ERR_LEVEL, fn,
                      "matmul runs on cube cores; this is a vector part of "
                      "mixed kernel %s: call it from the cube part "
                      "(pld_core_type_of)",
                      c->kernel ? c->kernel : "?");
  if (c->spec.type != PLD_CORE_CUBE)
    return pld__kfail(c, PLD_ERR_LEVEL, fn,
                      "matmul runs on cube cores; kernel %s runs on vector "
                      "cores: declare it with PLD_CUBE_KERNEL",
                      c->kernel ? c->kernel : "?");
  if (pld__isa_kcheck(c, fn) || pld__tile_compute_check(c, fn, "c", cc) ||
      pld__tile_compute_check(c, fn, "a", a) ||
      pld__tile_compute_check(c, fn, "b", b))
    return c->status;
  if (cc->dtype != PLD_FP32 || !pld__is_float_dtype(a->dtype) ||
      a->dtype != b->dtype || a->cols != b->rows || cc->rows != a->rows ||
      cc->cols != b->cols)
    return matmul_arg_fail(c, fn, cc, a, b);
  if (check_l0(c, fn, "a", a, "L0A", c->spec.l0a) ||
      check_l0(c, fn, "b", b, "L0B", c->spec.l0b) ||
      check_l0(c, fn, "c", cc, "L0C", c->spec.l0c))
    return c->status;
  return PLD_OK;
}

static int matmul(pld_core k, const char *fn, pld_tile *c, const pld_tile *a,
                  const pld_tile *b, int accumulate) {
  struct pld__core *core = k.p;
  if (check_matmul(core, fn, c, a, b))
    return core->status;
  /* For the timing model: a->rows x b->cols x a->cols multiply-adds. */
  pld__obs_work(a->dtype == PLD_FP16   ? PLD__TC_FP16
                : a->dtype == PLD_BF16 ? PLD__TC_BF16
                                       : PLD__TC_FP32,
                (int64_t)a->rows * b->cols * a->cols);
  /* c can be a or b itself (an FP32 square operand).  The blocks of c are
   * written while later blocks still read the operands, so the operand is
   * copied first.  The copy is at most an L0 buffer. */
  const pld_tile *alias = c == a ? a : c == b ? b : NULL;
  if (!alias) {
    gemm(c, a, b, accumulate);
    return PLD_OK;
  }
  struct pld_tile copy = *alias;
  copy.data = pld__aligned_alloc(alias->bytes);
  if (!copy.data)
    return pld__kfail(core, PLD_ERR_NOMEM, fn,
                      "out of memory for a %zu-byte copy of the operand c "
                      "aliases",
                      alias->bytes);
  memcpy(copy.data, alias->data, alias->bytes);
  gemm(c, alias == a ? &copy : a, alias == b ? &copy : b, accumulate);
  pld__free(copy.data);
  return PLD_OK;
}

int pld_matmul(pld_core k, pld_tile *c, const pld_tile *a, const pld_tile *b) {
  return matmul(k, "pld_matmul", c, a, b, 0);
}

int pld_matmul_acc(pld_core k, pld_tile *c, const pld_tile *a,
                   const pld_tile *b) {
  return matmul(k, "pld_matmul_acc", c, a, b, 1);
}
