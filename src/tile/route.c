/* tile/route.c: the routing operations of pld/tile.h that are not
 * elementwise arithmetic - comparisons into masks, selection by a mask
 * and index tiles.  (Ranking along rows (argmax, argmin, top-k) and
 * prefix sums: tile/rank.c.  Remainders and the bitwise operations are
 * elementwise: tile/elementwise.c.)
 *
 * Every loop is compiled once per level (tile/isa.h) from the same
 * source, and none of them depends on the order gcc picks for its lanes:
 * comparisons, selections and index tiles are elementwise.  So every
 * level computes the same bits. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "tile/convert.h"
#include "tile/convert_loops.h"
#include "tile/isa.h"
#include "tile/tile.h"

/* ---- comparisons ----------------------------------------------------------
 */

/* m[i] = a[i] OP b[i] (or OP *b, if scalar) for n elements of T, in
 * blocks of 128 mask bytes: every block narrows whole vectors of T into
 * whole vectors of bytes. */
#define CMP_LOOP(T, OP)                                                        \
  do {                                                                         \
    const T *a_ = a, *b_ = b;                                                  \
    if (scalar) {                                                              \
      const T y = *b_;                                                         \
      PLD__VLOOP(uint8_t, i, n, m[i] = (uint8_t)(a_[i] OP y););                \
    } else {                                                                   \
      PLD__VLOOP(uint8_t, i, n, m[i] = (uint8_t)(a_[i] OP b_[i]););            \
    }                                                                          \
  } while (0)

#define CMP_BY_OP(T)                                                           \
  switch (op) {                                                                \
  case PLD_CMP_EQ:                                                             \
    CMP_LOOP(T, ==);                                                           \
    break;                                                                     \
  case PLD_CMP_NE:                                                             \
    CMP_LOOP(T, !=);                                                           \
    break;                                                                     \
  case PLD_CMP_LT:                                                             \
    CMP_LOOP(T, <);                                                            \
    break;                                                                     \
  case PLD_CMP_LE:                                                             \
    CMP_LOOP(T, <=);                                                           \
    break;                                                                     \
  case PLD_CMP_GT:                                                             \
    CMP_LOOP(T, >);                                                            \
    break;                                                                     \
  case PLD_CMP_GE:                                                             \
    CMP_LOOP(T, >=);                                                           \
    break;                                                                     \
  }

PLD__ISA_INLINE void cmp_floats(pld_cmp_op op, uint8_t *m, const float *a,
                                const float *b, int scalar,
                                size_t n){CMP_BY_OP(float)}

/* n elements of dtype dt: m = a op b, where b is an array or, if scalar
 * is set, one value (a float for FP16 and BF16).  FP16 and BF16 are
 * compared as the floats they hold, converted a block at a time. */
PLD__ISA_FUNCTION(static, cmp_kernel,
                  (pld_cmp_op op, pld_dtype dt, uint8_t *m, const void *a,
                   const void *b, int scalar, size_t n),
                  (op, dt, m, a, b, scalar, n)) {
  switch (dt) {
  case PLD_FP32:
    CMP_BY_OP(float)
    break;
  case PLD_FP16:
  case PLD_BF16: {
    float fa[PLD__HALF_BLOCK], fb[PLD__HALF_BLOCK];
    const uint16_t *ha = a, *hb = b;
    for (size_t i0 = 0; i0 < n; i0 += PLD__HALF_BLOCK) {
      const size_t len = n - i0 < PLD__HALF_BLOCK ? n - i0 : PLD__HALF_BLOCK;
      pld__load_half_at(isa, dt, fa, ha + i0, len);
      if (!scalar)
        pld__load_half_at(isa, dt, fb, hb + i0, len);
      cmp_floats(op, m + i0, fa, scalar ? (const float *)b : fb, scalar, len);
    }
    break;
  }
#define CMP_INT_CASE(name, T, lo, hi)                                          \
  case PLD_##name:                                                             \
    CMP_BY_OP(T)                                                               \
    break;
    PLD__INT_DTYPES(CMP_INT_CASE)
#undef CMP_INT_CASE
  default:
    break;
  }
}

/* mask = a op b, or a op s when b is NULL. */
static int cmp_run(struct pld__core *c, const char *fn, pld_tile *mask,
                   const pld_tile *a, const pld_tile *b, double s,
                   pld_cmp_op op) {
  if (pld__vector_only(c, fn) || pld__tile_compute_check(c, fn, "a", a) ||
      (b && pld__tile_check2(c, fn, "a", a, "b", b, 1)) ||
      pld__mask_check(c, fn, mask, "a", a))
    return c->status;
  if ((unsigned)op > (unsigned)PLD_CMP_GE)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "op is %d: expected a pld_cmp_op (PLD_CMP_EQ, _NE, "
                      "_LT, _LE, _GT or _GE)",
                      (int)op);
  const union pld__scalar v = pld__scalar_of(a->dtype, s);
  pld__tile_work(PLD__TC_REDUCE, b ? 2 : 1, a);
  const struct pld__runs runs = pld__tile_runs(mask, a);
  for (size_t r = 0; r < runs.count; r++)
    cmp_kernel(op, a->dtype, pld__run_ptr(mask, r), pld__run_ptr(a, r),
               b ? (const void *)pld__run_ptr(b, r) : (const void *)&v, !b,
               runs.len);
  return PLD_OK;
}

int pld_cmp(pld_core k, pld_tile *mask, const pld_tile *a, const pld_tile *b,
            pld_cmp_op op) {
  return cmp_run(k.p, "pld_cmp", mask, a, b, 0, op);
}

int pld_cmps(pld_core k, pld_tile *mask, const pld_tile *a, double s,
             pld_cmp_op op) {
  return cmp_run(k.p, "pld_cmps", mask, a, NULL, s, op);
}

/* ---- selection ------------------------------------------------------------
 */

/* n elements of es bytes: d = m ? a : b (b an array, or if scalar one
 * value), as bits: a mask of all ones or zeros per element, so that the
 * loop is a blend on every level (and moves NaN payloads untouched). */
PLD__ISA_FUNCTION(static, select_kernel,
                  (size_t es, void *d, const uint8_t *m, const void *a,
                   const void *b, int scalar, size_t n),
                  (es, d, m, a, b, scalar, n)) {
  switch (es) {
#define SELECT_CASE(U)                                                         \
  case sizeof(U): {                                                            \
    U *d_ = d;                                                                 \
    const U *a_ = a, *b_ = b;                                                  \
    if (scalar) {                                                              \
      const U y = *b_;                                                         \
      PLD__VLOOP(U, i, n, const U t = (U)((U)0 - (U)(m[i] != 0));              \
                 d_[i] = (U)((a_[i] & t) | (y & (U)~t)););                     \
    } else {                                                                   \
      PLD__VLOOP(U, i, n, const U t = (U)((U)0 - (U)(m[i] != 0));              \
                 d_[i] = (U)((a_[i] & t) | (b_[i] & (U)~t)););                 \
    }                                                                          \
    break;                                                                     \
  }
    SELECT_CASE(uint8_t)
    SELECT_CASE(uint16_t)
    SELECT_CASE(uint32_t)
    SELECT_CASE(uint64_t)
#undef SELECT_CASE
  default:
    break;
  }
}

/* dst = mask ? a : b, or s where b is NULL (s holding the element). */
static int select_run(struct pld__core *c, const char *fn, pld_tile *dst,
                      const pld_tile *mask, const pld_tile *a,
                      const pld_tile *b, double s) {
  if (pld__vector_only(c, fn) || pld__tile_check(c, fn, "dst", dst) ||
      pld__tile_check(c, fn, "a", a) || (b && pld__tile_check(c, fn, "b", b)) ||
      pld__tile_match(c, fn, "dst", dst, "a", a, 1) ||
      (b && pld__tile_match(c, fn, "a", a, "b", b, 1)) ||
      pld__mask_check(c, fn, mask, "dst", dst))
    return c->status;
  union {
    uint64_t u;
    unsigned char bytes[8];
  } v = {0};
  pld__elem_set(dst->dtype, v.bytes, s);
  const size_t es = pld__dtype_size(dst->dtype);
  pld__tile_work(PLD__TC_REDUCE, b ? 3 : 2, dst);
  const struct pld__runs runs = pld__tile_runs(dst, mask);
  for (size_t r = 0; r < runs.count; r++)
    select_kernel(es, pld__run_ptr(dst, r), pld__run_ptr(mask, r),
                  pld__run_ptr(a, r),
                  b ? (const void *)pld__run_ptr(b, r) : (const void *)v.bytes,
                  !b, runs.len);
  return PLD_OK;
}

int pld_select(pld_core k, pld_tile *dst, const pld_tile *mask,
               const pld_tile *a, const pld_tile *b) {
  return select_run(k.p, "pld_select", dst, mask, a, b, 0);
}

int pld_selects(pld_core k, pld_tile *dst, const pld_tile *mask,
                const pld_tile *a, double s) {
  return select_run(k.p, "pld_selects", dst, mask, a, NULL, s);
}

/* ---- index tiles ----------------------------------------------------------
 */

/* Round to nearest even, NaN to 0, saturate to [lo, hi] (exact doubles):
 * the rule of float to integer conversions, on a double. */
static inline double iota_sat(double v, double lo, double hi) {
  double r = __builtin_rint(v);
  r = r == r ? r : 0.0;
  r = r < lo ? lo : r;
  return r > hi ? hi : r;
}

/* The rows of columns [j0, j0 + n): BODY stores o[j] from the row's base
 * and jd[j] = (j0 + j) * col_step, in double. */
#define IOTA_ROWS(T, BODY)                                                     \
  for (size_t r = 0; r < rows; r++) {                                          \
    T *o = (T *)(void *)(data + r * row_bytes + j0 * es);                      \
    const double base = start + (double)r * row_step;                          \
    PLD__VLOOP_UNROLLED(double, j, n, BODY);                                   \
  }

/* The exact path: x = the row's first multiple + j * s0 in int32
 * arithmetic (wrapping in uint32: every value it gives is in range),
 * stored as CONV(x).  The lanes of a block (v, which the compiler keeps
 * in a register) start at the row's first value + lane * s0 and step by
 * a block's worth, so an element costs an add and a store, as a loop
 * with the sizes known does it; the last, partial block takes the lanes'
 * next values.  The stores go through a pointer that moves a block at a
 * time (fixed offsets, no index arithmetic per vector), unrolled as far
 * as such a loop over a row of 128. */
#define IOTA_EXACT_ROWS(T, CONV)                                               \
  for (size_t r = 0; r < rows; r++) {                                          \
    T *o = (T *)(void *)(data + r * row_bytes);                                \
    const uint32_t b0 = start + (uint32_t)r * ri;                              \
    uint32_t v[PLD__VBLOCK(int32_t)];                                          \
    for (size_t l = 0; l < PLD__VBLOCK(int32_t); l++)                          \
      v[l] = b0 + (uint32_t)l * s0;                                            \
    T *const whole = o + (n - n % PLD__VBLOCK(int32_t));                       \
    PLD__UNROLL(16)                                                            \
    for (; o < whole; o += PLD__VBLOCK(int32_t)) {                             \
      PLD__IVDEP                                                               \
      for (size_t l = 0; l < PLD__VBLOCK(int32_t); l++) {                      \
        const int32_t x = (int32_t)v[l];                                       \
        o[l] = CONV;                                                           \
        v[l] += vstep;                                                         \
      }                                                                        \
    }                                                                          \
    for (size_t l = 0; l < n % PLD__VBLOCK(int32_t); l++) {                    \
      const int32_t x = (int32_t)v[l];                                         \
      o[l] = CONV;                                                             \
    }                                                                          \
  }

/* The exact path of pld_iota (pld_iota says when it holds): the
 * operands are multiples of unit, integers in int32 once divided by it,
 * and so is every value, so int32 arithmetic on them gives the double
 * one's values.  (A function of its own: the double path's scratch would
 * make every call pay for its frame.) */
PLD__ISA_FUNCTION(static, iota_exact_tile,
                  (pld_tile * dst, uint32_t start, uint32_t ri, uint32_t s0,
                   float u),
                  (dst, start, ri, s0, u)) {
  const pld_dtype dt = dst->dtype;
  const size_t es = pld__dtype_size(dt), cols = (size_t)dst->cols;
  /* Locals: the stores may alias *dst as far as the compiler knows. */
  unsigned char *const data = dst->data;
  size_t rows = (size_t)dst->rows, n = cols;
  const size_t row_bytes = dst->row_bytes;
  /* Rows without padding that continue each other (row_step = cols *
   * col_step, as the tile's linear indices) are one run.  (Equal modulo
   * 2^32 is enough: the values are computed modulo 2^32.) */
  if (row_bytes == cols * es && ri == (uint32_t)cols * s0) {
    n = rows * cols;
    rows = 1;
  }
  const uint32_t vstep = (uint32_t)PLD__VBLOCK(int32_t) * s0;
  switch (dt) {
  case PLD_FP32:
    IOTA_EXACT_ROWS(float, (float)x *u);
    break;
#define IOTA_INT_CASE(name, T, lo, hi)                                         \
  case PLD_##name:                                                             \
    IOTA_EXACT_ROWS(T, (T)x);                                                  \
    break;
    PLD__INT_DTYPES(IOTA_INT_CASE)
#undef IOTA_INT_CASE
  default:
    break;
  }
}

/* The tile: start + i * row_step + j * col_step in double, converted to
 * dt.  j * col_step is computed once per chunk of columns (jd) and added
 * to each row's base. */
PLD__ISA_FUNCTION(static, iota_tile,
                  (pld_tile * dst, double start, double row_step,
                   double col_step),
                  (dst, start, row_step, col_step)) {
  const pld_dtype dt = dst->dtype;
  const size_t es = pld__dtype_size(dt), cols = (size_t)dst->cols;
  /* Locals: the stores may alias *dst as far as the compiler knows. */
  unsigned char *const data = dst->data;
  const size_t rows = (size_t)dst->rows, row_bytes = dst->row_bytes;
  double jd[PLD__CHUNK];
  for (size_t j0 = 0; j0 < cols; j0 += PLD__CHUNK) {
    const size_t n = cols - j0 < PLD__CHUNK ? cols - j0 : PLD__CHUNK;
    PLD__VLOOP(double, j, n, jd[j] = (double)(int32_t)(j0 + j) * col_step;);
    switch (dt) {
    case PLD_FP32:
      IOTA_ROWS(float, o[j] = (float)(base + jd[j]););
      break;
    case PLD_FP16:
      IOTA_ROWS(uint16_t,
                o[j] = pld__f32_to_fp16(pld__f64_to_f32_odd(base + jd[j])););
      break;
    case PLD_BF16:
      IOTA_ROWS(uint16_t,
                o[j] = pld__f32_to_bf16(pld__f64_to_f32_odd(base + jd[j])););
      break;
#define IOTA_INT_CASE(name, T, lo, hi)                                         \
  case PLD_##name:                                                             \
    IOTA_ROWS(T, o[j] = (T)(int32_t)iota_sat(base + jd[j], lo, hi););          \
    break;
      PLD__INT_DTYPES(IOTA_INT_CASE)
#undef IOTA_INT_CASE
    default:
      break;
    }
  }
}

/* v as an int32 in *out, when it is one (NaN and values beyond int32
 * are not): converted back, it equals v.  x86's conversion gives INT32_MIN
 * for NaN and out of range, where C's cast is undefined; elsewhere v is
 * first clamped to int32's range (NaN to its least).  Both are cheaper
 * than trunc, a libm call below SSE4.1. */
static inline int int32_of(double v, int32_t *out) {
#if PLD__ISA_X86
  *out = _mm_cvttsd_si32(_mm_set_sd(v));
#else
  double c = v > INT32_MIN ? v : INT32_MIN;
  c = c < INT32_MAX ? c : INT32_MAX;
  *out = (int32_t)c;
#endif
  return (double)*out == v;
}

/* The binary digits after the point that finite v needs: 0 for an
 * integer, k for an odd multiple of 2^-k; INT_MAX for inf and NaN. */
static int frac_bits(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  const int ex = (int)(u >> 52 & 0x7ff);
  uint64_t man = u & ((UINT64_C(1) << 52) - 1);
  if (ex == 0x7ff)
    return INT_MAX;
  if (ex)
    man |= UINT64_C(1) << 52;
  if (!man)
    return 0;
  /* v = man * 2^(e - 1075), e = 1 for subnormals. */
  const int k = 1075 - (ex ? ex : 1) - __builtin_ctzll(man);
  return k > 0 ? k : 0;
}

/* The three operands as int32 multiples in m[3], when each is one. */
static inline int int32_ops(double start, double row_step, double col_step,
                            int32_t m[3]) {
  /* &, not &&: three independent tests, one branch. */
  return int32_of(start, &m[0]) & int32_of(row_step, &m[1]) &
         int32_of(col_step, &m[2]);
}

/* Whether pld_iota's exact path holds: the operands are multiples of unit
 * = 2^-bits and every value's multiple is in [lo, hi]: an integer dtype's
 * range, with no fraction (bits 0); for FP32, int32's with up to 30 bits.
 * The double path's values are then exact before the conversion to FP32
 * too, and rounding int32 x to float then scaling it by unit rounds
 * x * unit the same way (a power of two, no subnormal).  FP16 and BF16
 * take the double path.  Returns unit, with the operands' multiples in
 * m (start, row step, column step), or 0. */
static double iota_exact(const pld_tile *dst, double start, double row_step,
                         double col_step, int32_t m[3]) {
  int64_t lo = 0, hi = -1;
  int max_bits = 0;
  switch (dst->dtype) {
#define IOTA_RANGE(name, T, l, h)                                              \
  case PLD_##name:                                                             \
    lo = l;                                                                    \
    hi = h;                                                                    \
    break;
    PLD__INT_DTYPES(IOTA_RANGE)
#undef IOTA_RANGE
  case PLD_FP32:
    /* A start of -0.0 makes element (0, 0) -0.0 in double, 0 in int32
     * (the same 0 for the integer dtypes). */
    if (start == 0 && signbit(start))
      return 0;
    lo = INT32_MIN;
    hi = INT32_MAX;
    max_bits = 30;
    break;
  default:
    return 0;
  }
  double unit = 1;
  if (!int32_ops(start, row_step, col_step, m)) {
    const int bits = PLD__IMAX(PLD__IMAX(frac_bits(start), frac_bits(row_step)),
                               frac_bits(col_step));
    if (bits > max_bits)
      return 0;
    /* Exact (a power of two), or beyond int32 and refused. */
    const double scale = (double)(UINT32_C(1) << bits);
    if (!int32_ops(start * scale, row_step * scale, col_step * scale, m))
      return 0;
    unit = 1 / scale;
  }
  /* Every value is in [lo, hi] when the extremes are: the extreme row base
   * plus the extreme column term (linear in i and j), and then every row
   * base is too (the column term spans 0).  In int64: no term exceeds
   * 2^62. */
  const int64_t s = m[0];
  const int64_t rows_end = s + (int64_t)(dst->rows - 1) * m[1];
  const int64_t cols_end = (int64_t)(dst->cols - 1) * m[2];
  const int64_t least =
      (rows_end < s ? rows_end : s) + (cols_end < 0 ? cols_end : 0);
  const int64_t most =
      (rows_end > s ? rows_end : s) + (cols_end > 0 ? cols_end : 0);
  return least < lo || most > hi ? 0 : unit;
}

int pld_iota(pld_core k, pld_tile *dst, double start, double row_step,
             double col_step) {
  struct pld__core *c = k.p;
  if (pld__vector_only(c, "pld_iota") ||
      pld__tile_compute_check(c, "pld_iota", "dst", dst))
    return c->status;
  int32_t m[3] = {0, 0, 0};
  const double unit = iota_exact(dst, start, row_step, col_step, m);
  pld__tile_work(PLD__TC_VECTOR, 1, dst);
  if (unit > 0)
    iota_exact_tile(dst, (uint32_t)m[0], (uint32_t)m[1], (uint32_t)m[2],
                    (float)unit);
  else
    iota_tile(dst, start, row_step, col_step);
  return PLD_OK;
}
