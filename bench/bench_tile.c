/* bench_tile: tile operations next to what they are measured against.
 *
 *   (c) elementwise throughput on 64 x 128 tiles (the data of one Unified
 *       Buffer tile): every FP32 elementwise, tile-scalar and unary
 *       operation against the plain C loop computing the same; FP16 and
 *       BF16 operations against the FP32 rate of the same operation (and
 *       pld_add FP16 against a `_Float16` loop); casts between FP32 and
 *       FP16 / BF16 against plain C conversion loops; reductions against
 *       plain C loops with the same double accumulators;
 *   (d) matmul 128 x 128 x 128 on a cube core (FP32, FP16 and BF16
 *       operands, FP32 c) against a naive i-j-k triple loop and
 *       single-threaded OpenBLAS cblas_sgemm.
 *
 * bench/CMakeLists.txt builds it twice: bench_tile with the library as
 * configured (by default portable: the tile loops choose AVX2 or AVX-512
 * at run time, tile/isa.h) and bench_tile_native with a copy of the
 * library built -march=native.  `bench_tile --versus bench_tile_native`
 * (what `bench/run.sh tile` runs) starts both as servers and measures
 * every row in each, alternately, in several pairs of fresh processes:
 * figures of a shared machine drift by tens of percent within seconds,
 * and from one process to the next (where its memory lands), so only
 * alternating row by row and taking medians over process pairs puts the
 * two side by side.  The plain C
 * loops are built the way the tile loops are (one copy per level, the
 * level in force running), so that each binary compares pld with what the
 * same instructions give a plain loop.
 *
 * The tile calls run on a simulated core made directly (core/kctx.h), so
 * the figures are the tile layer's alone, without dispatch.  Each figure
 * is the median of REPS timings of about two milliseconds each, pld's and
 * the reference's taken alternately, and each ratio the median of the
 * REPS pairs' ratios.  Nothing
 * here fails: the figures are printed, with the ratio to the reference.
 *
 * Usage: bench_tile                  the tables
 *        bench_tile --versus PROGRAM [ROUNDS]
 *                                    each row in this program and in
 *                                    PROGRAM (another build of bench_tile),
 *                                    alternately, in ROUNDS pairs of fresh
 *                                    processes (11): the medians of both
 *                                    and of their ratios
 *        bench_tile --serve          PROGRAM's side of --versus: reads row
 *                                    numbers, answers "pld reference" */
#include <cblas.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h" /* first: bench_tile reports no pld failures */
#include "core/kctx.h"
#include "core/trace.h"
#include "pld.h"
#include "tile/isa.h"

enum {
  REPS = 31,
  ROWS = 64,
  COLS = 128,
  N = ROWS * COLS,
  MM = 128,
  MAX_ROUNDS = 99
};

#define NOINLINE __attribute__((noinline))
#define S 1.0001f /* the scalar operand */

/* Calls of fn that take about 2 ms (warming caches and branch predictors
 * as it calibrates). */
static int64_t calibrate(void (*fn)(void)) {
  for (int64_t inner = 1;; inner *= 4) {
    const double t0 = now_s();
    for (int64_t i = 0; i < inner; i++)
      fn();
    const double t = now_s() - t0;
    if (t > 2e-4 || inner > (int64_t)1 << 24)
      return (int64_t)((double)inner * 2e-3 / (t > 1e-9 ? t : 1e-9)) + 1;
  }
}

/* Seconds per call of fn, over inner calls. */
static double time_calls(void (*fn)(void), int64_t inner) {
  const double t0 = now_s();
  for (int64_t i = 0; i < inner; i++)
    fn();
  return (now_s() - t0) / (double)inner;
}

/* ---- the data ------------------------------------------------------------ */

static struct pld__core vcore, ccore, scratch;
static pld_core kv, kc, ks;
/* Vector core: FP32 a, b, positive p (log, sqrt), d; FP16 and BF16 a, b,
 * d; reduction results. */
static pld_tile *ta, *tb, *tp, *td, *ha, *hb, *hd, *ba, *bb, *bd;
static pld_tile *trow, *tcol, *hrow;
/* Cube core: FP32, FP16 and BF16 operands, c. */
static pld_tile *ma, *mb, *mc, *mha, *mhb, *mba, *mbb;

/* The plain loops' data: the tiles' own (set up with them), so that both
 * sides work on the same memory.  With arrays of their own, where the
 * loops' data lay against the tiles' moved single ratios from process to
 * process (pld_maxs: 107% and 80% of its loop in two runs of a binary). */
__extension__ typedef _Float16 half; /* gcc's half type */
static float *fa, *fb, *fp, *fd;
static half *ga, *gb, *gd;
static uint16_t *ua, *ud; /* BF16 bits */
/* The inputs the tiles are made from, and OpenBLAS's operands. */
static float in_a[N], in_b[N], in_p[N];
static _Alignas(64) float xa[MM * MM], xb[MM * MM], xc[MM * MM];
static volatile int runtime_size = MM; /* a size the compiler cannot see */

/* ---- (c) elementwise FP32 ------------------------------------------------ */

#define FMAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define FMIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* X(id, inputs, pld call, plain C loop's element, its text).  The loops
 * read a[i], b[i], p[i] (positive) and s. */
#define FP32_OPS(X)                                                            \
  X(add, 2, pld_add(kv, td, ta, tb), a[i] + b[i], "d[i] = a[i] + b[i]")        \
  X(sub, 2, pld_sub(kv, td, ta, tb), a[i] - b[i], "d[i] = a[i] - b[i]")        \
  X(mul, 2, pld_mul(kv, td, ta, tb), a[i] * b[i], "d[i] = a[i] * b[i]")        \
  X(div, 2, pld_div(kv, td, ta, tb), a[i] / b[i], "d[i] = a[i] / b[i]")        \
  X(maximum, 2, pld_maximum(kv, td, ta, tb), FMAX(a[i], b[i]),                 \
    "d[i] = max(a[i], b[i])")                                                  \
  X(minimum, 2, pld_minimum(kv, td, ta, tb), FMIN(a[i], b[i]),                 \
    "d[i] = min(a[i], b[i])")                                                  \
  X(adds, 1, pld_adds(kv, td, ta, S), a[i] + s, "d[i] = a[i] + s")             \
  X(subs, 1, pld_subs(kv, td, ta, S), a[i] - s, "d[i] = a[i] - s")             \
  X(muls, 1, pld_muls(kv, td, ta, S), a[i] * s, "d[i] = a[i] * s")             \
  X(divs, 1, pld_divs(kv, td, ta, S), a[i] / s, "d[i] = a[i] / s")             \
  X(maxs, 1, pld_maxs(kv, td, ta, S), FMAX(a[i], s), "d[i] = max(a[i], s)")    \
  X(mins, 1, pld_mins(kv, td, ta, S), FMIN(a[i], s), "d[i] = min(a[i], s)")    \
  X(neg, 1, pld_neg(kv, td, ta), -a[i], "d[i] = -a[i]")                        \
  X(abs, 1, pld_abs(kv, td, ta), __builtin_fabsf(a[i]), "d[i] = fabsf(a[i])")  \
  X(relu, 1, pld_relu(kv, td, ta), a[i] < 0.0f ? 0.0f : a[i],                  \
    "d[i] = a[i] < 0 ? 0 : a[i]")                                              \
  X(exp, 1, pld_exp(kv, td, ta), expf(a[i]), "d[i] = expf(a[i])")              \
  X(log, 1, pld_log(kv, td, tp), logf(p[i]), "d[i] = logf(a[i])")              \
  X(sqrt, 1, pld_sqrt(kv, td, tp), sqrtf(p[i]), "d[i] = sqrtf(a[i])")          \
  X(rsqrt, 1, pld_rsqrt(kv, td, tp), 1.0f / sqrtf(p[i]),                       \
    "d[i] = 1 / sqrtf(a[i])")                                                  \
  X(reciprocal, 1, pld_reciprocal(kv, td, ta), 1.0f / a[i], "d[i] = 1 / a[i]")

/* The loops a C programmer writes, with the size known and restrict
 * pointers: gcc vectorizes them fully (the best case for the reference),
 * but for expf and logf, which are libm calls. */
#define DEFINE_FP32_OP(id, inputs, CALL, EXPR, text)                           \
  static NOINLINE void tile_##id(void) { (void)(CALL); }                       \
  PLD__ISA_FUNCTION(static, loop_##id,                                         \
                    (float *restrict d, const float *restrict a,               \
                     const float *restrict b, const float *restrict p,         \
                     float s),                                                 \
                    (d, a, b, p, s)) {                                         \
    (void)a, (void)b, (void)p, (void)s;                                        \
    for (int i = 0; i < N; i++)                                                \
      d[i] = EXPR;                                                             \
  }                                                                            \
  static void plain_##id(void) { loop_##id(fd, fa, fb, fp, S); }
FP32_OPS(DEFINE_FP32_OP)

/* ---- (c) FP16 and BF16 ----------------------------------------------------
 */

/* X(id, dtype name, FP32 operation, pld call) */
#define HALF_OPS(X)                                                            \
  X(add_fp16, "FP16", add, pld_add(kv, hd, ha, hb))                            \
  X(muls_fp16, "FP16", muls, pld_muls(kv, hd, ha, S))                          \
  X(exp_fp16, "FP16", exp, pld_exp(kv, hd, ha))                                \
  X(add_bf16, "BF16", add, pld_add(kv, bd, ba, bb))                            \
  X(muls_bf16, "BF16", muls, pld_muls(kv, bd, ba, S))                          \
  X(exp_bf16, "BF16", exp, pld_exp(kv, bd, ba))

#define DEFINE_HALF_OP(id, dtype, op, CALL)                                    \
  static NOINLINE void tile_##id(void) { (void)(CALL); }
HALF_OPS(DEFINE_HALF_OP)

/* gcc computes _Float16 in float but with AVX512-FP16, which the
 * portable copies do not assume: there the loop converts element by
 * element. */
PLD__ISA_FUNCTION(static, loop_add_fp16,
                  (half *restrict d, const half *restrict a,
                   const half *restrict b),
                  (d, a, b)) {
  for (int i = 0; i < N; i++)
    d[i] = a[i] + b[i];
}
static void plain_add_fp16(void) { loop_add_fp16(gd, ga, gb); }

/* ---- (c) casts ------------------------------------------------------------
 */

static NOINLINE void tile_f32_f16(void) { pld_cast(kv, hd, ta); }
static NOINLINE void tile_f16_f32(void) { pld_cast(kv, td, ha); }
static NOINLINE void tile_f32_bf16(void) { pld_cast(kv, bd, ta); }
static NOINLINE void tile_bf16_f32(void) { pld_cast(kv, td, ba); }

PLD__ISA_FUNCTION(static, loop_f32_f16,
                  (half *restrict d, const float *restrict a), (d, a)) {
  for (int i = 0; i < N; i++)
    d[i] = (half)a[i];
}
PLD__ISA_FUNCTION(static, loop_f16_f32,
                  (float *restrict d, const half *restrict a), (d, a)) {
  for (int i = 0; i < N; i++)
    d[i] = (float)a[i];
}
/* BF16 by its definition: the top half of the float, rounded to nearest
 * even (NaNs aside). */
PLD__ISA_FUNCTION(static, loop_f32_bf16,
                  (uint16_t *restrict d, const float *restrict a), (d, a)) {
  for (int i = 0; i < N; i++) {
    uint32_t u;
    memcpy(&u, &a[i], sizeof u);
    d[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
}
PLD__ISA_FUNCTION(static, loop_bf16_f32,
                  (float *restrict d, const uint16_t *restrict a), (d, a)) {
  for (int i = 0; i < N; i++) {
    const uint32_t u = (uint32_t)a[i] << 16;
    memcpy(&d[i], &u, sizeof u);
  }
}
static void plain_f32_f16(void) { loop_f32_f16(gd, fa); }
static void plain_f16_f32(void) { loop_f16_f32(fd, ga); }
static void plain_f32_bf16(void) { loop_f32_bf16(ud, fa); }
static void plain_bf16_f32(void) { loop_bf16_f32(fd, ua); }

/* ---- (c) reductions -------------------------------------------------------
 */

static NOINLINE void tile_row_sum(void) { pld_row_sum(kv, trow, ta); }
static NOINLINE void tile_col_sum(void) { pld_col_sum(kv, tcol, ta); }
static NOINLINE void tile_row_max(void) { pld_row_max(kv, trow, ta); }
static NOINLINE void tile_row_sum_fp16(void) { pld_row_sum(kv, hrow, ha); }

/* As a C programmer writes them, accumulating in double as pld does: the
 * row sums are one dependence chain per row (gcc may not reorder float
 * additions), the column sums independent lanes. */
PLD__ISA_FUNCTION(static, loop_row_sum,
                  (float *restrict d, const float *restrict a), (d, a)) {
  for (int r = 0; r < ROWS; r++) {
    double s = 0;
    for (int c = 0; c < COLS; c++)
      s += a[r * COLS + c];
    d[r] = (float)s;
  }
}
PLD__ISA_FUNCTION(static, loop_col_sum,
                  (float *restrict d, const float *restrict a), (d, a)) {
  double acc[COLS] = {0};
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++)
      acc[c] += a[r * COLS + c];
  for (int c = 0; c < COLS; c++)
    d[c] = (float)acc[c];
}
PLD__ISA_FUNCTION(static, loop_row_max,
                  (float *restrict d, const float *restrict a), (d, a)) {
  for (int r = 0; r < ROWS; r++) {
    float m = -INFINITY;
    for (int c = 0; c < COLS; c++)
      m = FMAX(a[r * COLS + c], m);
    d[r] = m;
  }
}
static void plain_row_sum(void) { loop_row_sum(fd, fa); }
static void plain_col_sum(void) { loop_col_sum(fd, fa); }
static void plain_row_max(void) { loop_row_max(fd, fa); }

/* ---- (d) matmul ---------------------------------------------------------- */

static NOINLINE void tile_matmul(void) { pld_matmul(kc, mc, ma, mb); }
static NOINLINE void tile_matmul_fp16(void) { pld_matmul(kc, mc, mha, mhb); }
static NOINLINE void tile_matmul_bf16(void) { pld_matmul(kc, mc, mba, mbb); }

/* Textbook i-j-k (always inlined: a copy per level for naive_const). */
PLD__ISA_INLINE void naive_sgemm(int m, int n, int kk, const float *a,
                                 const float *b, float *c) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int k = 0; k < kk; k++)
        s += a[i * kk + k] * b[k * n + j];
      c[i * n + j] = s;
    }
}

/* With sizes known only at run time (how it is written in a library), and
 * with the sizes compile-time constants, when gcc vectorizes it over j - a
 * much stronger reference (with -march=native; the copies of the portable
 * build, tuned for no CPU in particular, leave it scalar). */
static NOINLINE void naive_runtime(int m, int n, int kk, const float *a,
                                   const float *b, float *c) {
  naive_sgemm(m, n, kk, a, b, c);
}
PLD__ISA_FUNCTION(static, naive_const,
                  (const float *a, const float *b, float *c), (a, b, c)) {
  naive_sgemm(MM, MM, MM, a, b, c);
}

static void c_naive(void) {
  naive_runtime(runtime_size, runtime_size, runtime_size, xa, xb, xc);
}
static void c_naive_const(void) { naive_const(xa, xb, xc); }
static void c_openblas(void) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, MM, MM, MM, 1.0f, xa,
              MM, xb, MM, 0.0f, xc, MM);
}

/* Largest |pld - OpenBLAS| over c, relative to the largest |c|. */
static double matmul_difference(void) {
  tile_matmul();
  c_openblas();
  double diff = 0, mag = 0;
  for (int i = 0; i < MM; i++)
    for (int j = 0; j < MM; j++) {
      const float v =
          ((const float *)(mc->data + (size_t)i * mc->row_bytes))[j];
      diff = fmax(diff, fabs((double)v - xc[i * MM + j]));
      mag = fmax(mag, fabs((double)xc[i * MM + j]));
    }
  return diff / mag;
}

/* ---- the rows ------------------------------------------------------------ */

/* A row: pld's call and its reference, each with the work of one call
 * (elements, or floating-point operations for matmul), in its table. */
struct row {
  const char *table, *label, *ref_label;
  void (*pld)(void), (*ref)(void);
  double work, ref_work;
  double bytes; /* per element, for the GB/s columns (0: none) */
};

#define FLOPS (2.0 * MM * MM * MM)
static const char *const TABLE_FP32 =
    "(c) elementwise FP32, 64 x 128 tiles (8192 elements)";
static const char *const TABLE_HALF = "(c) FP16 and BF16 (computed in float), "
                                      "against the FP32 rate of the same "
                                      "operation";
static const char *const TABLE_CAST = "(c) pld_cast, 64 x 128 tiles";
static const char *const TABLE_REDUCE =
    "(c) reductions of 64 x 128 tiles (Gelem/s: elements reduced)";
static const char *const TABLE_MATMUL =
    "(d) matmul 128 x 128 x 128 on a cube core (GFLOP/s)";

/* One row a line, the X-macro tables expanding in the list. */
/* clang-format off */
#define FP32_ROW(id, inputs, CALL, EXPR, text)                                 \
  {TABLE_FP32, "pld_" #id " FP32", text, tile_##id, plain_##id, N, N,          \
   4.0 * (inputs + 1)},
#define HALF_ROW(id, dtype, op, CALL)                                          \
  {TABLE_HALF, "pld_" #op " " dtype, "pld_" #op " FP32", tile_##id,           \
   tile_##op, N, N, 0},
static const struct row rows[] = {
  FP32_OPS(FP32_ROW)
  HALF_OPS(HALF_ROW)
  {TABLE_HALF, "pld_add FP16", "_Float16 loop d = a + b", tile_add_fp16, plain_add_fp16, N, N, 0},
  {TABLE_CAST, "pld_cast FP32->FP16", "d[i] = (_Float16)a[i]", tile_f32_f16, plain_f32_f16, N, N, 6},
  {TABLE_CAST, "pld_cast FP16->FP32", "d[i] = (float)a[i], _Float16", tile_f16_f32, plain_f16_f32, N, N, 6},
  {TABLE_CAST, "pld_cast FP32->BF16", "rounded top half of the bits", tile_f32_bf16, plain_f32_bf16, N, N, 6},
  {TABLE_CAST, "pld_cast BF16->FP32", "d[i] = a[i] << 16 (bits)", tile_bf16_f32, plain_bf16_f32, N, N, 6},
  {TABLE_REDUCE, "pld_row_sum FP32", "row sums in double", tile_row_sum, plain_row_sum, N, N, 0},
  {TABLE_REDUCE, "pld_col_sum FP32", "column sums in double", tile_col_sum, plain_col_sum, N, N, 0},
  {TABLE_REDUCE, "pld_row_max FP32", "row maxima", tile_row_max, plain_row_max, N, N, 0},
  {TABLE_REDUCE, "pld_row_sum FP16", "pld_row_sum FP32", tile_row_sum_fp16, tile_row_sum, N, N, 0},
  {TABLE_MATMUL, "pld_matmul FP32", "OpenBLAS cblas_sgemm, 1 thread", tile_matmul, c_openblas, FLOPS, FLOPS, 0},
  {TABLE_MATMUL, "pld_matmul FP32", "naive i-j-k, run-time sizes", tile_matmul, c_naive, FLOPS, FLOPS, 0},
  {TABLE_MATMUL, "pld_matmul FP32", "naive i-j-k, compile-time sizes", tile_matmul, c_naive_const, FLOPS, FLOPS, 0},
  {TABLE_MATMUL, "pld_matmul FP16", "pld_matmul FP32", tile_matmul_fp16, tile_matmul, FLOPS, FLOPS, 0},
  {TABLE_MATMUL, "pld_matmul BF16", "pld_matmul FP32", tile_matmul_bf16, tile_matmul, FLOPS, FLOPS, 0},
};
/* clang-format on */
enum { NROWS = sizeof rows / sizeof rows[0] };

/* Row i measured: pld's figure and the reference's, per nanosecond
 * (Gelem/s, GFLOP/s), medians of REPS timings of about 2 ms each; returns
 * the median of the REPS ratios pld / reference.  The two are timed
 * alternately, so that each ratio compares timings a few milliseconds
 * apart: a machine whose speed drifts by 10% within a second (another
 * process on the other CPU, its memory traffic) drifts both alike. */
static double measure(int i, double *pld, double *ref) {
  const struct row *r = &rows[i];
  const int64_t np = calibrate(r->pld), nr = calibrate(r->ref);
  double rate_pld[REPS], rate_ref[REPS], ratio[REPS];
  for (int k = 0; k < REPS; k++) {
    rate_pld[k] = r->work / time_calls(r->pld, np) * 1e-9;
    rate_ref[k] = r->ref_work / time_calls(r->ref, nr) * 1e-9;
    ratio[k] = rate_pld[k] / rate_ref[k];
  }
  *pld = median(rate_pld, REPS);
  *ref = median(rate_ref, REPS);
  return median(ratio, REPS);
}

static const char *unit_of(const struct row *r) {
  return r->table == TABLE_MATMUL ? "GFLOP/s" : "Gelem/s";
}

/* ---- printing ------------------------------------------------------------ */

/* Where the tile loops' instructions come from, in words. */
static void print_level(void) {
  const char *refusal = pld__isa_refusal();
  if (refusal)
    fprintf(stderr, "bench_tile: %s\n", refusal);
  if (PLD__ISA_BASE == PLD__ISA_AVX512 || !PLD__ISA_X86)
    printf("tile loops: one copy, built for the compiler's flags%s\n",
           PLD__ISA_BASE == PLD__ISA_AVX512 ? " (AVX-512: -march=native)" : "");
  else
    printf("tile loops: %s, chosen at run time (PLD_ISA=generic|avx2|avx512 "
           "caps it)\n",
           pld__isa_name(pld__isa()));
}

/* The tables of one run. */
static void print_tables(void) {
  const char *table = NULL;
  /* Issue 13's target 7: the lowest ratio of each kind, and its row. */
  double low[2] = {1e9, 1e9};
  const char *low_row[2] = {"", ""};
  for (int i = 0; i < NROWS; i++) {
    const struct row *r = &rows[i];
    double pld, ref, ratio = measure(i, &pld, &ref);
    int kind = r->table == TABLE_FP32 ? 0
               : r->table == TABLE_HALF && !strncmp(r->ref_label, "pld_", 4)
                   ? 1 /* against the FP32 op, not the _Float16 loop */
                   : -1;
    if (kind >= 0 && ratio < low[kind]) {
      low[kind] = ratio;
      low_row[kind] = r->label;
    }
    if (r->table != table) {
      table = r->table;
      printf("\n%s\n  %-22s %7s %7s    %-32s %7s %7s    %6s\n", table,
             "tile op", unit_of(r), r->bytes > 0 ? "GB/s" : "", "reference",
             unit_of(r), r->bytes > 0 ? "GB/s" : "", "ratio");
    }
    if (r->bytes > 0)
      printf("  %-22s %7.2f %7.1f    %-32s %7.2f %7.1f    %5.0f%%\n", r->label,
             pld, pld * r->bytes, r->ref_label, ref, ref * r->bytes,
             100.0 * ratio);
    else
      printf("  %-22s %7.2f            %-32s %7.2f            %5.0f%%\n",
             r->label, pld, r->ref_label, ref, 100.0 * ratio);
  }
  printf("  (ratio: the median of %d ratios of pld's throughput to the "
         "reference's, timed alternately; the plain loops know the size at "
         "compile time)\n",
         REPS);
  printf("  (matmul: largest |pld - OpenBLAS| / largest |c|: %.2g)\n",
         matmul_difference());
  printf("\nissue 13 target 7 (one run; single rows swing by 10%% while the "
         "other CPU is busy: compare several runs):\n");
  printf("  %s: every FP32 elementwise op >= 95%% of its plain C loop: "
         "lowest %.1f%% (%s)\n",
         low[0] >= 0.95 ? "met    " : "not met", 100 * low[0], low_row[0]);
  printf("  %s: FP16 and BF16 ops >= 80%% of the FP32 rate: lowest %.1f%% "
         "(%s)\n",
         low[1] >= 0.80 ? "met    " : "not met", 100 * low[1], low_row[1]);
}

/* --serve: answers row numbers with "pld reference" lines; -1 with the
 * level line. */
static int serve(void) {
  int i;
  while (scanf("%d", &i) == 1) {
    if (i < 0) {
      printf(": ");
      print_level();
    } else if (i < NROWS) {
      double pld, ref;
      measure(i, &pld, &ref);
      printf("%.6f %.6f\n", pld, ref);
    }
    fflush(stdout);
  }
  return 0;
}

/* A `program --serve` to ask rows of. */
struct server {
  pid_t pid;
  FILE *ask, *answer;
};

static int server_start(struct server *sv, const char *program) {
  int to[2], from[2];
  /* Close-on-exec: the next server must not hold this one's pipes, or
   * this one would never see the end of its input. */
  if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) {
    perror("bench_tile: pipe");
    return -1;
  }
  sv->pid = fork();
  if (sv->pid < 0) {
    perror("bench_tile: fork");
    return -1;
  }
  if (sv->pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[0]), close(to[1]), close(from[0]), close(from[1]);
    execl(program, program, "--serve", (char *)NULL);
    fprintf(stderr, "bench_tile: cannot run %s\n", program);
    _exit(127);
  }
  close(to[0]), close(from[1]);
  sv->ask = fdopen(to[1], "w");
  sv->answer = fdopen(from[0], "r");
  return sv->ask && sv->answer ? 0 : -1;
}

static void server_stop(struct server *sv) {
  fclose(sv->ask); /* end of input: it exits */
  fclose(sv->answer);
  waitpid(sv->pid, NULL, 0);
}

/* Row i (or, for -1, the level line into line) from server sv. */
static int server_row(struct server *sv, int i, double *pld, double *ref,
                      char *line, size_t cap) {
  fprintf(sv->ask, "%d\n", i);
  fflush(sv->ask);
  if (i < 0)
    return fgets(line, (int)cap, sv->answer) ? 0 : -1;
  return fscanf(sv->answer, "%lf %lf", pld, ref) == 2 ? 0 : -1;
}

/* --versus: every row in `bench_tile --serve` (this program) and in
 * `program --serve`, alternately (which one goes first alternates too),
 * `rounds` times; then the medians.  Each round starts both servers
 * afresh: where a process's memory lands in the caches moves some figures
 * by 10 to 30% from one process to the next, so a comparison of two
 * processes only holds as the median of several pairs. */
static int versus(const char *program, int rounds) {
  static double fig[2][NROWS][2][MAX_ROUNDS]; /* [side][row][pld, ref] */
  const char *name[2] = {self_exe(), program};
  char level[2][256] = {"", ""};
  for (int k = 0; k < rounds; k++) {
    struct server sv[2];
    for (int side = 0; side < 2; side++)
      if (server_start(&sv[side], name[side]) ||
          server_row(&sv[side], -1, NULL, NULL, level[side],
                     sizeof level[side])) {
        fprintf(stderr, "bench_tile: %s --serve does not answer\n", name[side]);
        return 1;
      }
    if (k == 0) {
      printf("here:  %s%sthere: %s%s", name[0], level[0], name[1], level[1]);
      print_busy("figures");
      fflush(stdout);
    }
    for (int i = 0; i < NROWS; i++)
      for (int turn = 0; turn < 2; turn++) {
        const int side = (turn + k + i) % 2;
        if (server_row(&sv[side], i, &fig[side][i][0][k], &fig[side][i][1][k],
                       NULL, 0)) {
          fprintf(stderr, "bench_tile: %s --serve stopped answering\n",
                  name[side]);
          return 1;
        }
      }
    server_stop(&sv[0]);
    server_stop(&sv[1]);
    fprintf(stderr, ".");
  }
  fprintf(stderr, "\n");
  printf("\nEvery row measured here and there alternately, in %d pairs of "
         "fresh processes: medians; here/there is the median of the pairs' "
         "ratios, and the middle half of them spans the range after it\n",
         rounds);
  printf("  %-22s %-8s %8s %8s %10s %-15s %-32s %8s %9s\n", "tile benchmark",
         "unit", "here", "there", "here/there", "", "reference (in each)",
         "here", "here/ref");
  for (int i = 0; i < NROWS; i++) {
    double ratio[MAX_ROUNDS];
    for (int k = 0; k < rounds; k++)
      ratio[k] = fig[0][i][0][k] / fig[1][i][0][k];
    const double mid = median(ratio, rounds); /* sorts ratio */
    const double p = median(fig[0][i][0], rounds);
    const double q = median(fig[1][i][0], rounds);
    const double r = median(fig[0][i][1], rounds);
    char span[32];
    snprintf(span, sizeof span, "(%.0f-%.0f%%)", 100 * ratio[rounds / 4],
             100 * ratio[(3 * rounds) / 4 - (rounds % 4 == 0)]);
    printf("  %-22s %-8s %8.2f %8.2f %9.1f%% %-15s %-32s %8.2f %8.1f%%\n",
           rows[i].label, unit_of(&rows[i]), p, q, 100 * mid, span,
           rows[i].ref_label, r, 100 * p / r);
  }
  return 0;
}

/* ---- setup --------------------------------------------------------------- */

/* A tile of core k holding src converted to dt.  The conversion runs on
 * a scratch vector core, since cube cores have no pld_cast; a tile of one
 * shape and dtype has one layout, so its bytes are copied over whole. */
static pld_tile *filled(pld_core k, pld_dtype dt, int32_t rows_, int32_t cols,
                        const float *src) {
  pld_tile *t = pld_tile_new(k, dt, rows_, cols);
  pld_tile *f = pld_tile_new(ks, PLD_FP32, rows_, cols);
  pld_tile *g = pld_tile_new(ks, dt, rows_, cols);
  if (!t || !f || !g) {
    fprintf(stderr, "bench_tile: %s%s\n", k.p->msg, ks.p->msg);
    exit(1);
  }
  for (int32_t r = 0; r < rows_; r++)
    memcpy(f->data + (size_t)r * f->row_bytes, src + (size_t)r * (size_t)cols,
           (size_t)cols * sizeof(float));
  pld_cast(ks, g, f);
  memcpy(t->data, g->data, t->bytes);
  pld_tile_free(ks, g);
  pld_tile_free(ks, f);
  return t;
}

static void start(struct pld__core *c, pld_core *k,
                  const struct pld__core_spec *spec) {
  if (pld__core_init(c, spec) != PLD_OK) {
    fprintf(stderr, "bench_tile: %s\n", pld_last_error());
    exit(1);
  }
  pld__core_begin(c, "bench", 0, 0, 0, 1);
  k->p = c;
}

/* With PLD_MODEL=on, the tile calls record for the timing model as a
 * program's cores do (their work, counted per class; the cores made here
 * run no block, so nothing is ever stored): what the model costs a tile
 * operation, `bench/run.sh model` compares with it off. */
static void model_recording(void) {
  const char *m = getenv("PLD_MODEL");
  if (!m || strcmp(m, "on"))
    return;
  static union {
    struct pld__trace_area a;
    unsigned char bytes[4096];
  } area;
  if (pld__trace_area_bytes(1, 16) > sizeof area) {
    fprintf(stderr, "bench_tile: a trace area of one buffer is larger "
                    "than expected\n");
    exit(1);
  }
  pld__trace_area_init(&area.a, 1, 16, 0, 1);
  pld__observe_as(0, 0, "bench", pld__trace_tbuf(&area.a, 0));
  fprintf(stderr, "bench_tile: the timing model records (PLD_MODEL=on)\n");
}

static void setup(void) {
  model_recording();
  /* Tile memory for every operand at once (the Unified Buffer's 192 KiB
   * would hold the FP32 and FP16 ones only). */
  const struct pld__core_spec vspec = {
      PLD_CORE_VECTOR, 0, 512 * 1024, "Unified Buffer", 0, 0, 0};
  const struct pld__core_spec cspec = {
      PLD_CORE_CUBE, 0, 512 * 1024, "L1", 64 * 1024, 64 * 1024, 128 * 1024};
  const struct pld__core_spec sspec = {
      PLD_CORE_VECTOR, 1, 512 * 1024, "scratch", 0, 0, 0};
  start(&vcore, &kv, &vspec);
  start(&ccore, &kc, &cspec);
  start(&scratch, &ks, &sspec);
  srand(1);
  for (int i = 0; i < N; i++) {
    in_a[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    in_b[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    in_p[i] = (float)rand() / (float)RAND_MAX * 4.0f + 0.25f;
  }
  for (int i = 0; i < MM * MM; i++) {
    xa[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    xb[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  }
  ta = filled(kv, PLD_FP32, ROWS, COLS, in_a);
  tb = filled(kv, PLD_FP32, ROWS, COLS, in_b);
  tp = filled(kv, PLD_FP32, ROWS, COLS, in_p);
  td = pld_tile_new(kv, PLD_FP32, ROWS, COLS);
  ha = filled(kv, PLD_FP16, ROWS, COLS, in_a);
  hb = filled(kv, PLD_FP16, ROWS, COLS, in_b);
  hd = pld_tile_new(kv, PLD_FP16, ROWS, COLS);
  ba = filled(kv, PLD_BF16, ROWS, COLS, in_a);
  bb = filled(kv, PLD_BF16, ROWS, COLS, in_b);
  bd = pld_tile_new(kv, PLD_BF16, ROWS, COLS);
  trow = pld_tile_new(kv, PLD_FP32, ROWS, 1);
  tcol = pld_tile_new(kv, PLD_FP32, 1, COLS);
  hrow = pld_tile_new(kv, PLD_FP16, ROWS, 1);
  ma = filled(kc, PLD_FP32, MM, MM, xa);
  mb = filled(kc, PLD_FP32, MM, MM, xb);
  mc = pld_tile_new(kc, PLD_FP32, MM, MM);
  mha = filled(kc, PLD_FP16, MM, MM, xa);
  mhb = filled(kc, PLD_FP16, MM, MM, xb);
  mba = filled(kc, PLD_BF16, MM, MM, xa);
  mbb = filled(kc, PLD_BF16, MM, MM, xb);
  if (!td || !hd || !bd || !trow || !tcol || !hrow || !mc) {
    fprintf(stderr, "bench_tile: %s%s\n", vcore.msg, ccore.msg);
    exit(1);
  }
  /* 64 x 128 rows of 2 and 4 bytes are unpadded: each tile's data is N
   * elements in a row. */
  fa = (float *)(void *)ta->data;
  fb = (float *)(void *)tb->data;
  fp = (float *)(void *)tp->data;
  fd = (float *)(void *)td->data;
  ga = (half *)(void *)ha->data;
  gb = (half *)(void *)hb->data;
  gd = (half *)(void *)hd->data;
  ua = (uint16_t *)(void *)ba->data;
  ud = (uint16_t *)(void *)bd->data;
  openblas_set_num_threads(1);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int st = 0;
  setup();
  if (!strcmp(mode, "--serve")) {
    st = serve();
  } else if (!strcmp(mode, "--versus") && argc > 2) {
    const int rounds = argc > 3 ? atoi(argv[3]) : 11;
    st = versus(argv[2], rounds < 1            ? 1
                         : rounds > MAX_ROUNDS ? MAX_ROUNDS
                                               : rounds);
  } else if (!*mode) {
    printf("bench_tile: tile layer against plain C and OpenBLAS\n");
    print_level();
    print_busy("figures");
    print_tables();
  } else {
    fprintf(stderr,
            "usage: bench_tile [--versus PROGRAM [ROUNDS] | --serve]\n");
    return 2;
  }
  if (vcore.status || ccore.status || scratch.status) {
    fprintf(stderr, "bench_tile: a tile call failed: %s%s%s\n", vcore.msg,
            ccore.msg, scratch.msg);
    st = 1;
  }
  pld__core_release(&vcore);
  pld__core_release(&ccore);
  pld__core_release(&scratch);
  return st;
}
