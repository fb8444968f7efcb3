/* tile/elementwise.c: tile op tile, tile op scalar, and unary operations.
 *
 * Each operation is one expression in x (the element of a) and y (the
 * element of b, or the scalar), written once for floats and once for
 * integers; the macros below turn it into one vectorizable loop per dtype
 * with the dtype switch outside the loops, compiled once per level
 * (tile/isa.h).  FP16 and BF16 tiles are computed in float, converted
 * exactly and rounded back to nearest even: in one loop, or a block at a
 * time through the CPU's conversions (EW_HALF_BLOCKS). */
/* gcc's pre-allocation scheduling, with register pressure in mind: the
 * unrolled loops of the float functions (exp, log) on two vectors at a
 * time otherwise come out with merge-masked moves into registers that the
 * previous iteration's chain last wrote, a false dependency from one
 * iteration to the next that halved the FP16 and BF16 exp rate (llvm-mca
 * and bench_tile agree); the other loops are unchanged by it. */
#pragma GCC optimize("schedule-insns", "sched-pressure")

#include <string.h>

#include "tile/convert.h"
#include "tile/convert_loops.h"
#include "tile/isa.h"
#include "tile/mathf.h"
#include "tile/tile.h"

/* n elements of dtype dt: d = op(a, b), where b is an array or, if
 * scalar is set, one value (a float for FP16 and BF16).  d may be a or
 * b. */
typedef void ew_kernel(pld_dtype dt, void *d, const void *a, const void *b,
                       int scalar, size_t n);

/* The loop over n elements of T from A and B (or the scalar *B) into D. */
#define EW_LOOP(T, EXPR, D, A, B, SCALAR, N)                                   \
  do {                                                                         \
    T *d_ = (D);                                                               \
    const T *a_ = (A), *b_ = (B);                                              \
    if (SCALAR) {                                                              \
      const T y = *b_;                                                         \
      PLD__VLOOP_VECTOR(T, i, (N), const T x = a_[i]; (void)y;                 \
                        d_[i] = (T)(EXPR););                                   \
    } else {                                                                   \
      PLD__VLOOP_VECTOR(T, i, (N), const T x = a_[i]; const T y = b_[i];       \
                        (void)y; d_[i] = (T)(EXPR););                          \
    }                                                                          \
  } while (0)

#define EW_CASE(name, T, EXPR)                                                 \
  case PLD_##name:                                                             \
    EW_LOOP(T, EXPR, d, a, b, scalar, n);                                      \
    break;

/* FP16 and BF16 are computed in float: converted exactly, the float
 * expression, rounded back to nearest even.  Where the conversions are
 * plain C (BF16 always, FP16 on the generic level), one loop does all
 * three and gcc vectorizes it whole. */
#define EW_FUSED(FEXPR, FROM, TO)                                              \
  do {                                                                         \
    const uint16_t *ha_ = a, *hb_ = b;                                         \
    uint16_t *hd_ = d;                                                         \
    if (scalar) {                                                              \
      const float y = *(const float *)b;                                       \
      PLD__VLOOP(float, i, n, const float x = FROM(ha_[i]); (void)y;           \
                 hd_[i] = TO((float)(FEXPR)););                                \
    } else {                                                                   \
      PLD__VLOOP(float, i, n, const float x = FROM(ha_[i]);                    \
                 const float y = FROM(hb_[i]); (void)y;                        \
                 hd_[i] = TO((float)(FEXPR)););                                \
    }                                                                          \
  } while (0)

/* With the CPU's conversions (avx2 and avx512: F16C, and AVX-512's FP16
 * and BF16 loops, tile/convert_loops.h), which gcc does not generate, FP16
 * and BF16 go in blocks of PLD__HALF_BLOCK elements: a block of each
 * operand converted to float, the float loop, the conversion back, in
 * registers (every loop over a block is unrolled whole), so that the
 * operation is one pass over the tiles.  The remainder shorter than a
 * block goes the same way, through a float scratch. */
#define EW_HALF_PASS(DT, FEXPR, I0, M)                                         \
  do {                                                                         \
    float fa_[PLD__HALF_BLOCK], fb_[PLD__HALF_BLOCK];                          \
    pld__load_half_at(isa, DT, fa_, (const uint16_t *)a + (I0), (M));          \
    if (!scalar)                                                               \
      pld__load_half_at(isa, DT, fb_, (const uint16_t *)b + (I0), (M));        \
    EW_LOOP(float, FEXPR, fa_, fa_, scalar ? (const float *)b : fb_, scalar,   \
            (M));                                                              \
    pld__store_half_at(isa, DT, (uint16_t *)d + (I0), fa_, (M));               \
  } while (0)

#define EW_HALF_BLOCKS(DT, FEXPR)                                              \
  do {                                                                         \
    size_t i0 = 0;                                                             \
    for (; i0 + PLD__HALF_BLOCK <= n; i0 += PLD__HALF_BLOCK)                   \
      EW_HALF_PASS(DT, FEXPR, i0, PLD__HALF_BLOCK);                            \
    if (i0 < n)                                                                \
      EW_HALF_PASS(DT, FEXPR, i0, n - i0);                                     \
  } while (0)

/* BF16 takes the blocks with avx512 only: with AVX2, gcc's vectorization
 * of the fused plain C loop is the faster. */
#define EW_HALF_CASE(FEXPR)                                                    \
  case PLD_BF16:                                                               \
    if (isa >= PLD__ISA_AVX512)                                                \
      EW_HALF_BLOCKS(PLD_BF16, FEXPR);                                         \
    else                                                                       \
      EW_FUSED(FEXPR, pld__bf16_to_f32, pld__f32_to_bf16);                     \
    break;                                                                     \
  case PLD_FP16:                                                               \
    if (isa >= PLD__ISA_AVX2)                                                  \
      EW_HALF_BLOCKS(PLD_FP16, FEXPR);                                         \
    else                                                                       \
      EW_FUSED(FEXPR, pld__fp16_to_f32, pld__f32_to_fp16);                     \
    break;

/* The kernel of an operation defined for every tile dtype, one copy per
 * level (tile/isa.h). */
#define EW_KERNEL(op, FEXPR, IEXPR)                                            \
  PLD__ISA_FUNCTION(static, op##_kernel,                                       \
                    (pld_dtype dt, void *d, const void *a, const void *b,      \
                     int scalar, size_t n),                                    \
                    (dt, d, a, b, scalar, n)) {                                \
    switch (dt) {                                                              \
      EW_CASE(FP32, float, FEXPR)                                              \
      EW_HALF_CASE(FEXPR)                                                      \
      EW_INT_CASES(IEXPR)                                                      \
    default:                                                                   \
      break;                                                                   \
    }                                                                          \
  }

/* The kernel of an operation of float tiles only. */
#define EW_FLOAT_KERNEL(op, FEXPR)                                             \
  PLD__ISA_FUNCTION(static, op##_kernel,                                       \
                    (pld_dtype dt, void *d, const void *a, const void *b,      \
                     int scalar, size_t n),                                    \
                    (dt, d, a, b, scalar, n)) {                                \
    switch (dt) {                                                              \
      EW_CASE(FP32, float, FEXPR)                                              \
      EW_HALF_CASE(FEXPR)                                                      \
    default:                                                                   \
      break;                                                                   \
    }                                                                          \
  }

/* The integer dtypes' cases, and the kernels of the operations of
 * integer tiles only (shifts) and of integer and BOOL tiles (bitwise: a
 * BOOL element is a truth value, nonzero true, and BEXPR of them gives 0
 * or 1). */
#define EW_INT_CASES(IEXPR)                                                    \
  EW_CASE(INT32, int32_t, IEXPR)                                               \
  EW_CASE(INT16, int16_t, IEXPR)                                               \
  EW_CASE(INT8, int8_t, IEXPR)                                                 \
  EW_CASE(UINT8, uint8_t, IEXPR)

#define EW_INT_KERNEL(op, IEXPR, BEXPR)                                        \
  PLD__ISA_FUNCTION(static, op##_kernel,                                       \
                    (pld_dtype dt, void *d, const void *a, const void *b,      \
                     int scalar, size_t n),                                    \
                    (dt, d, a, b, scalar, n)) {                                \
    switch (dt) {                                                              \
      EW_INT_CASES(IEXPR)                                                      \
      EW_CASE(BOOL, uint8_t, BEXPR)                                            \
    default:                                                                   \
      break;                                                                   \
    }                                                                          \
  }

/* Integer arithmetic goes through uint32_t, where it wraps without signed
 * overflow; narrowing back keeps the low bits (two's complement).
 * Integer division goes through double, which holds every quotient of two
 * INT32s closely enough that truncation is exact (the rounding error is
 * below 1/|divisor|), and which vectorizes where integer division does
 * not; INT32_MIN / -1 wraps to INT32_MIN on narrowing.  Maximum and
 * minimum are tile/tile.h's. */
#define IDIV(x, y) ((int64_t)__builtin_trunc((double)(x) / (double)(y)))
/* The remainder of that division, x - (x / y) * y in wrapping arithmetic
 * (INT32_MIN % -1 is 0); float remainders are fmodf's, which are exact. */
#define IREM(x, y) ((uint32_t)(x) - (uint32_t)IDIV(x, y) * (uint32_t)(y))
#define FREM(x, y) __builtin_fmodf(x, y)
#define FMAX PLD__FMAX
#define FMIN PLD__FMIN
#define IMAX PLD__IMAX
#define IMIN PLD__IMIN
/* |x| with -INT_MIN wrapping to INT_MIN; the identity for UINT8. */
#define ISIGN(x) ((uint32_t)(x) >> 31)
#define IABS(x) (((uint32_t)(x) ^ (0u - ISIGN(x))) + ISIGN(x))

/* ---- running a kernel over tiles ---------------------------------------- */

/* dst = op(a, b) for every element: b is a tile, or NULL with s the scalar
 * (unary operations pass a zero scalar they ignore). */
static void ew_run(ew_kernel *kern, int cls, pld_tile *dst, const pld_tile *a,
                   const pld_tile *b, const union pld__scalar *s) {
  const pld_dtype dt = dst->dtype;
  pld__tile_work(cls, b ? 3 : 2, dst);
  const struct pld__runs runs = pld__tile_runs(dst, dst);
  for (size_t r = 0; r < runs.count; r++) {
    const unsigned char *pb = b ? pld__run_ptr(b, r) : NULL;
    kern(dt, pld__run_ptr(dst, r), pld__run_ptr(a, r), b ? (const void *)pb : s,
         !b, runs.len);
  }
}

union pld__scalar pld__scalar_of(pld_dtype dt, double s) {
  union pld__scalar v;
  memset(&v, 0, sizeof v);
  if (pld__is_half_dtype(dt)) {
    uint16_t h;
    pld__elem_set(dt, &h, s);
    v.f = (float)pld__elem_get(dt, &h);
  } else {
    pld__elem_set(dt, &v, s);
  }
  return v;
}

/* Whether n integers of dtype dt hold a zero (an OR-reduction, so that the
 * check before a division costs a vector pass, not a branch per element). */
static int has_zero(pld_dtype dt, const void *p, size_t n) {
  int z = 0;
  switch (dt) {
#define HAS_ZERO_CASE(name, T, lo, hi)                                         \
  case PLD_##name: {                                                           \
    const T *x = p;                                                            \
    PLD__VLOOP(T, i, n, z |= x[i] == 0;);                                      \
    break;                                                                     \
  }
    PLD__INT_DTYPES(HAS_ZERO_CASE)
#undef HAS_ZERO_CASE
  default:
    break;
  }
  return z;
}

/* Fails the kernel if the integer divisor tile b holds a zero, naming the
 * first one. */
static int check_divisor(struct pld__core *c, const char *fn,
                         const pld_tile *b) {
  const size_t es = pld_dtype_size(b->dtype);
  for (int32_t r = 0; r < b->rows; r++) {
    const unsigned char *row = pld__run_ptr(b, (size_t)r);
    if (!has_zero(b->dtype, row, (size_t)b->cols))
      continue;
    int32_t col = 0;
    while (pld__elem_get(b->dtype, row + (size_t)col * es) != 0)
      col++;
    char sb[64];
    pld__tile_str(sb, sizeof sb, b);
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "integer division by zero: b is %s and b[%d, %d] is 0",
                      sb, (int)r, (int)col);
  }
  return PLD_OK;
}

static int ew_binary(struct pld__core *c, const char *fn, ew_kernel *kern,
                     int divides, pld_tile *dst, const pld_tile *a,
                     const pld_tile *b) {
  if (pld__vector_only(c, fn) ||
      pld__tile_check2(c, fn, "dst", dst, "a", a, 1) ||
      pld__tile_check2(c, fn, "a", a, "b", b, 1))
    return c->status;
  if (divides && !pld__is_float_dtype(b->dtype) && check_divisor(c, fn, b))
    return c->status;
  ew_run(kern, divides ? PLD__TC_SPECIAL : PLD__TC_VECTOR, dst, a, b, NULL);
  return PLD_OK;
}

static int ew_scalar(struct pld__core *c, const char *fn, ew_kernel *kern,
                     int divides, pld_tile *dst, const pld_tile *a, double s) {
  if (pld__vector_only(c, fn) || pld__tile_check2(c, fn, "dst", dst, "a", a, 1))
    return c->status;
  const union pld__scalar v = pld__scalar_of(a->dtype, s);
  if (divides && !pld__is_float_dtype(a->dtype) &&
      pld__elem_get(a->dtype, &v) == 0)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "integer division by zero: the divisor %g is 0 as %s", s,
                      pld_dtype_name(a->dtype));
  ew_run(kern, divides ? PLD__TC_SPECIAL : PLD__TC_VECTOR, dst, a, NULL, &v);
  return PLD_OK;
}

static int ew_unary(struct pld__core *c, const char *fn, ew_kernel *kern,
                    int float_only, pld_tile *dst, const pld_tile *a) {
  if (pld__vector_only(c, fn) || pld__tile_check2(c, fn, "dst", dst, "a", a, 1))
    return c->status;
  if (float_only && !pld__is_float_dtype(a->dtype)) {
    char sa[64];
    pld__tile_str(sa, sizeof sa, a);
    return pld__kfail(c, PLD_ERR_UNSUPPORTED, fn,
                      "a is %s: %s takes float tiles only (FP32, FP16, "
                      "BF16); pld_cast converts",
                      sa, fn);
  }
  const union pld__scalar zero = {0};
  ew_run(kern, float_only ? PLD__TC_SPECIAL : PLD__TC_VECTOR, dst, a, NULL,
         &zero);
  return PLD_OK;
}

/* ---- the operations ------------------------------------------------------ */

/* X(op, tile-tile function, tile-scalar function, divides, float
 * expression, integer expression) */
#define BINARY_OPS(X)                                                          \
  X(add, pld_add, pld_adds, 0, x + y, (uint32_t)x + (uint32_t)y)               \
  X(sub, pld_sub, pld_subs, 0, x - y, (uint32_t)x - (uint32_t)y)               \
  X(mul, pld_mul, pld_muls, 0, x *y, (uint32_t)x *(uint32_t)y)                 \
  X(div, pld_div, pld_divs, 1, x / y, IDIV(x, y))                              \
  X(rem, pld_rem, pld_rems, 1, FREM(x, y), IREM(x, y))                         \
  X(max, pld_maximum, pld_maxs, 0, FMAX(x, y), IMAX(x, y))                     \
  X(min, pld_minimum, pld_mins, 0, FMIN(x, y), IMIN(x, y))

#define DEFINE_BINARY(op, tile_fn, scalar_fn, divides, FEXPR, IEXPR)           \
  EW_KERNEL(op, FEXPR, IEXPR)                                                  \
  int tile_fn(pld_core k, pld_tile *dst, const pld_tile *a,                    \
              const pld_tile *b) {                                             \
    return ew_binary(k.p, #tile_fn, op##_kernel, divides, dst, a, b);          \
  }                                                                            \
  int scalar_fn(pld_core k, pld_tile *dst, const pld_tile *a, double s) {      \
    return ew_scalar(k.p, #scalar_fn, op##_kernel, divides, dst, a, s);        \
  }
BINARY_OPS(DEFINE_BINARY)

/* X(op, float expression, integer expression).  relu keeps NaN. */
#define UNARY_OPS(X)                                                           \
  X(neg, -x, 0u - (uint32_t)x)                                                 \
  X(abs, __builtin_fabsf(x), IABS(x))                                          \
  X(relu, x<0.0f ? 0.0f : x, x> 0 ? x : 0)

#define DEFINE_UNARY(op, FEXPR, IEXPR)                                         \
  EW_KERNEL(op, FEXPR, IEXPR)                                                  \
  int pld_##op(pld_core k, pld_tile *dst, const pld_tile *a) {                 \
    return ew_unary(k.p, "pld_" #op, op##_kernel, 0, dst, a);                  \
  }
UNARY_OPS(DEFINE_UNARY)

/* X(op, float expression).  sqrt is a builtin that compiles to the vector
 * instruction (the library builds with -fno-math-errno); exp and log are
 * in tile/mathf.h. */
#define FLOAT_UNARY_OPS(X)                                                     \
  X(exp, pld__expf(x))                                                         \
  X(log, pld__logf(x))                                                         \
  X(sqrt, __builtin_sqrtf(x))                                                  \
  X(rsqrt, 1.0f / __builtin_sqrtf(x))                                          \
  X(reciprocal, 1.0f / x)

#define DEFINE_FLOAT_UNARY(op, FEXPR)                                          \
  EW_FLOAT_KERNEL(op, FEXPR)                                                   \
  int pld_##op(pld_core k, pld_tile *dst, const pld_tile *a) {                 \
    return ew_unary(k.p, "pld_" #op, op##_kernel, 1, dst, a);                  \
  }
FLOAT_UNARY_OPS(DEFINE_FLOAT_UNARY)

/* ---- integer and mask operations ----------------------------------------- */

/* t is a live tile of an integer dtype, or (if with_bool) BOOL. */
static int int_check(struct pld__core *c, const char *fn, int with_bool,
                     const char *what, const pld_tile *t) {
  if (pld__tile_check(c, fn, what, t))
    return c->status;
  if ((pld__is_tile_dtype(t->dtype) && !pld__is_float_dtype(t->dtype)) ||
      (with_bool && t->dtype == PLD_BOOL))
    return PLD_OK;
  char st[64];
  pld__tile_str(st, sizeof st, t);
  return pld__kfail(c, PLD_ERR_UNSUPPORTED, fn,
                    "%s is %s: %s takes integer tiles (INT32, INT16, INT8, "
                    "UINT8)%s only",
                    what, st, fn, with_bool ? " and masks (BOOL)" : "");
}

/* dst = op(a, b), or op(a, *s) when b is NULL, for integer (and, if
 * with_bool, BOOL) tiles of one shape and dtype. */
static int ew_int(struct pld__core *c, const char *fn, ew_kernel *kern,
                  int with_bool, pld_tile *dst, const pld_tile *a,
                  const pld_tile *b, const union pld__scalar *s) {
  if (pld__vector_only(c, fn) || int_check(c, fn, with_bool, "dst", dst) ||
      int_check(c, fn, with_bool, "a", a) ||
      (b && int_check(c, fn, with_bool, "b", b)) ||
      pld__tile_match(c, fn, "dst", dst, "a", a, 1) ||
      (b && pld__tile_match(c, fn, "a", a, "b", b, 1)))
    return c->status;
  ew_run(kern, PLD__TC_VECTOR, dst, a, b, s);
  return PLD_OK;
}

/* X(op, integer expression, BOOL expression) */
#define BITWISE_OPS(X)                                                         \
  X(and, x &y, (x != 0) & (y != 0))                                            \
  X(or, x | y, (x != 0) | (y != 0))                                            \
  X(xor, x ^ y, (x != 0) ^ (y != 0))

#define DEFINE_BITWISE(op, IEXPR, BEXPR)                                       \
  EW_INT_KERNEL(op, IEXPR, BEXPR)                                              \
  int pld_##op(pld_core k, pld_tile *dst, const pld_tile *a,                   \
               const pld_tile *b) {                                            \
    return ew_int(k.p, "pld_" #op, op##_kernel, 1, dst, a, b, NULL);           \
  }
BITWISE_OPS(DEFINE_BITWISE)

EW_INT_KERNEL(not, ~x, x == 0)

int pld_not(pld_core k, pld_tile *dst, const pld_tile *a) {
  const union pld__scalar zero = {0};
  return ew_int(k.p, "pld_not", not_kernel, 1, dst, a, NULL, &zero);
}

/* Shifts by y, in [0, width): left through uint32_t (the bits shifted out
 * are dropped on narrowing), right in the element's own type (arithmetic
 * for the signed ones: gcc's >> of a negative value).  Their BOOL case
 * (the identity) is never reached: ew_shift refuses BOOL. */
EW_INT_KERNEL(shl, (uint32_t)x << y, x)
EW_INT_KERNEL(shr, x >> y, x)

static int ew_shift(struct pld__core *c, const char *fn, ew_kernel *kern,
                    pld_tile *dst, const pld_tile *a, int32_t bits) {
  if (pld__vector_only(c, fn) || int_check(c, fn, 0, "a", a))
    return c->status;
  const int32_t width = (int32_t)(8 * pld_dtype_size(a->dtype));
  if (bits < 0 || bits >= width) {
    char sa[64];
    pld__tile_str(sa, sizeof sa, a);
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "bits is %d: expected [0, %d) for a, %s", (int)bits,
                      (int)width, sa);
  }
  const union pld__scalar v = pld__scalar_of(a->dtype, bits);
  return ew_int(c, fn, kern, 0, dst, a, NULL, &v);
}

int pld_shls(pld_core k, pld_tile *dst, const pld_tile *a, int32_t bits) {
  return ew_shift(k.p, "pld_shls", shl_kernel, dst, a, bits);
}

int pld_shrs(pld_core k, pld_tile *dst, const pld_tile *a, int32_t bits) {
  return ew_shift(k.p, "pld_shrs", shr_kernel, dst, a, bits);
}
