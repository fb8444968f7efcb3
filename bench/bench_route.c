/* bench_route: the routing operations of pld/tile.h (comparisons,
 * selection, ranking, prefix sums, integer arithmetic, index tiles, mask
 * casts) next to the plain C loop a programmer writes for the same work,
 * on 64 x 128 tiles (one Unified Buffer tile of FP32), at every level of
 * instructions this machine runs (tile/isa.h), in one process.
 *
 * The plain loops are compiled once per level as the tile loops are
 * (PLD__ISA_FUNCTION), with the sizes known and restrict pointers, so at
 * each level they get the same instructions pld's loops get.  The tile
 * calls run on a simulated vector core made directly (core/kctx.h): the
 * figures are the tile layer's alone.  Each figure is the median of REPS
 * timings of about a millisecond, pld's and the loop's taken alternately,
 * and each ratio (pld's rate over the loop's: above 1 is pld faster) the
 * median of the REPS pairs' ratios.  Nothing here fails.
 *
 * The loops do the work pld's rules define: masks are read as nonzero
 * (mask and/or/xor: (p != 0) & (q != 0)), a float cast to BOOL is 1 for
 * nonzero and 0 for 0 and NaN.  The ranking loops ignore NaN (pld ranks
 * it above every number), the top-k loop inserts into the sorted best k.
 * Scalars the pld call takes at run time (shift counts, divisors) are
 * run-time values in the loops too.
 *
 * Usage: bench_route [LEVEL...]   (generic, avx2, avx512; default: every
 *                                  level the machine runs) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h" /* first: no pld failure reporting needed */
#include "core/kctx.h"
#include "pld.h"
#include "tile/isa.h"

enum { REPS = 15, ROWS = 64, COLS = 128, N = ROWS * COLS, K2 = 2, K8 = 8 };

#define NOINLINE __attribute__((noinline))

/* ---- the data ------------------------------------------------------------ */

static struct pld__core vcore;
static pld_core kv;
/* FP32 a, b, d; INT32 ia, ib (nonzero), id; masks m (random), md; index
 * and value tiles of argmax and top-k; q a second mask. */
static pld_tile *ta, *tb, *td, *ia, *ib, *id, *tm, *tq, *tmd, *targ, *tv2, *ti2,
    *tv8, *ti8;

/* The tiles' data, which the plain loops read and write too: both sides
 * work on the same memory (with arrays of their own, the loops' placement
 * against the tiles moved single ratios by up to 2x from process to
 * process). */
static float *g_fa, *g_fb, *g_fd;
static int32_t *g_xa, *g_xb, *g_xd;
static uint8_t *g_ma, *g_mq, *g_md;
static _Alignas(64) int32_t arg[ROWS], ki[ROWS * K8];
static _Alignas(64) float kf[ROWS * K8];
static volatile float vs = 0.25f; /* scalars the compiler cannot see */
static volatile int32_t vi = 7;

/* ---- plain loops, one copy per level ------------------------------------- */

/* X(id, pld call, plain loop body over i, text).  The bodies see d, a, b
 * (float), xd, xa, xb (int32), m, mo (masks), s, si (scalars). */
#define EW_OPS(X)                                                              \
  X(cmp_lt_fp32, pld_cmp(kv, tmd, ta, tb, PLD_CMP_LT), mo[i] = a[i] < b[i],    \
    "m[i] = a[i] < b[i]")                                                      \
  X(cmps_gt_fp32, pld_cmps(kv, tmd, ta, 0.25, PLD_CMP_GT), mo[i] = a[i] > s,   \
    "m[i] = a[i] > s")                                                         \
  X(cmp_eq_int32, pld_cmp(kv, tmd, ia, ib, PLD_CMP_EQ),                        \
    mo[i] = xa[i] == xb[i], "m[i] = a[i] == b[i]")                             \
  X(select_fp32, pld_select(kv, td, tm, ta, tb), d[i] = m[i] ? a[i] : b[i],    \
    "d[i] = m[i] ? a[i] : b[i]")                                               \
  X(selects_fp32, pld_selects(kv, td, tm, ta, 0.25), d[i] = m[i] ? a[i] : s,   \
    "d[i] = m[i] ? a[i] : s")                                                  \
  X(rem_int32, pld_rem(kv, id, ia, ib), xd[i] = xa[i] % xb[i],                 \
    "d[i] = a[i] % b[i]")                                                      \
  X(rems_int32, pld_rems(kv, id, ia, 7), xd[i] = xa[i] % si,                   \
    "d[i] = a[i] % s")                                                         \
  X(and_int32, pld_and(kv, id, ia, ib), xd[i] = xa[i] & xb[i],                 \
    "d[i] = a[i] & b[i]")                                                      \
  X(xor_int32, pld_xor(kv, id, ia, ib), xd[i] = xa[i] ^ xb[i],                 \
    "d[i] = a[i] ^ b[i]")                                                      \
  X(not_int32, pld_not(kv, id, ia), xd[i] = ~xa[i], "d[i] = ~a[i]")            \
  X(and_bool, pld_and(kv, tmd, tm, tq), mo[i] = (m[i] != 0) & (q[i] != 0),     \
    "m[i] = (p[i] != 0) & (q[i] != 0)")                                        \
  X(shls_int32, pld_shls(kv, id, ia, 7),                                       \
    xd[i] = (int32_t)((uint32_t)xa[i] << si), "d[i] = a[i] << s (s = 7)")      \
  X(shrs_int32, pld_shrs(kv, id, ia, 7), xd[i] = xa[i] >> si,                  \
    "d[i] = a[i] >> s (s = 7)")                                                \
  X(cast_bool_fp32, pld_cast(kv, td, tm), d[i] = m[i] ? 1.0f : 0.0f,           \
    "d[i] = m[i] ? 1 : 0")                                                     \
  X(cast_fp32_bool, pld_cast(kv, tmd, ta),                                     \
    mo[i] = (a[i] != 0.0f) & (a[i] == a[i]),                                   \
    "m[i] = a[i] != 0 && a[i] == a[i]")

#define DEFINE_EW(name, CALL, BODY, text)                                      \
  static NOINLINE void tile_##name(void) { (void)(CALL); }                     \
  PLD__ISA_FUNCTION(static, loop_##name,                                       \
                    (float *restrict d, const float *restrict a,               \
                     const float *restrict b, int32_t *restrict xd,            \
                     const int32_t *restrict xa, const int32_t *restrict xb,   \
                     const uint8_t *restrict m, const uint8_t *restrict q,     \
                     uint8_t *restrict mo, float s, int32_t si),               \
                    (d, a, b, xd, xa, xb, m, q, mo, s, si)) {                  \
    (void)d, (void)a, (void)b, (void)xd, (void)xa, (void)xb, (void)m, (void)q, \
        (void)mo, (void)s, (void)si;                                           \
    for (int i = 0; i < N; i++)                                                \
      BODY;                                                                    \
  }                                                                            \
  static void plain_##name(void) {                                             \
    loop_##name(g_fd, g_fa, g_fb, g_xd, g_xa, g_xb, g_ma, g_mq, g_md, vs, vi); \
  }
EW_OPS(DEFINE_EW)

/* Index tiles: dst[i][j] = i * COLS + j. */
static NOINLINE void tile_iota_int32(void) { pld_iota(kv, id, 0, COLS, 1); }
PLD__ISA_FUNCTION(static, loop_iota_int32, (int32_t *restrict d), (d)) {
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++)
      d[i * COLS + j] = i * COLS + j;
}
static void plain_iota_int32(void) { loop_iota_int32(g_xd); }

static NOINLINE void tile_iota_fp32(void) { pld_iota(kv, td, 0.5, 2, 0.25); }
PLD__ISA_FUNCTION(static, loop_iota_fp32, (float *restrict d), (d)) {
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++)
      d[i * COLS + j] = (float)(0.5 + i * 2.0 + j * 0.25);
}
static void plain_iota_fp32(void) { loop_iota_fp32(g_fd); }

/* Ranking: the loops a programmer writes (which ignore NaN). */
static NOINLINE void tile_argmax_fp32(void) { pld_row_argmax(kv, targ, ta); }
PLD__ISA_FUNCTION(static, loop_argmax_fp32,
                  (int32_t *restrict out, const float *restrict a), (out, a)) {
  for (int r = 0; r < ROWS; r++) {
    const float *x = a + r * COLS;
    int32_t best = 0;
    for (int j = 1; j < COLS; j++)
      if (x[j] > x[best])
        best = j;
    out[r] = best;
  }
}
static void plain_argmax_fp32(void) { loop_argmax_fp32(arg, g_fa); }

static NOINLINE void tile_argmin_int32(void) { pld_row_argmin(kv, targ, ia); }
PLD__ISA_FUNCTION(static, loop_argmin_int32,
                  (int32_t *restrict out, const int32_t *restrict a),
                  (out, a)) {
  for (int r = 0; r < ROWS; r++) {
    const int32_t *x = a + r * COLS;
    int32_t best = 0;
    for (int j = 1; j < COLS; j++)
      if (x[j] < x[best])
        best = j;
    out[r] = best;
  }
}
static void plain_argmin_int32(void) { loop_argmin_int32(arg, g_xa); }

/* Top-k by insertion into the sorted best k of the row. */
PLD__ISA_INLINE void topk_plain(int k, float *restrict vals,
                                int32_t *restrict idx,
                                const float *restrict a) {
  for (int r = 0; r < ROWS; r++) {
    const float *x = a + r * COLS;
    float *v = vals + r * k;
    int32_t *ix = idx + r * k;
    int n = 0;
    for (int j = 0; j < COLS; j++) {
      if (n == k && !(x[j] > v[k - 1]))
        continue;
      int p = n < k ? n++ : k - 1;
      for (; p > 0 && v[p - 1] < x[j]; p--) {
        v[p] = v[p - 1];
        ix[p] = ix[p - 1];
      }
      v[p] = x[j];
      ix[p] = j;
    }
  }
}
static NOINLINE void tile_topk2_fp32(void) {
  pld_row_topk(kv, tv2, ti2, ta, K2);
}
static NOINLINE void tile_topk8_fp32(void) {
  pld_row_topk(kv, tv8, ti8, ta, K8);
}
PLD__ISA_FUNCTION(static, loop_topk,
                  (int k, float *restrict vals, int32_t *restrict idx,
                   const float *restrict a),
                  (k, vals, idx, a)) {
  topk_plain(k, vals, idx, a);
}
static void plain_topk2_fp32(void) { loop_topk(K2, kf, ki, g_fa); }
static void plain_topk8_fp32(void) { loop_topk(K8, kf, ki, g_fa); }

/* Prefix sums: floats in double as pld sums them, integers wrapping. */
static NOINLINE void tile_row_cumsum_fp32(void) {
  pld_row_cumsum(kv, td, ta, 0);
}
PLD__ISA_FUNCTION(static, loop_row_cumsum_fp32,
                  (float *restrict d, const float *restrict a), (d, a)) {
  for (int r = 0; r < ROWS; r++) {
    double s = 0;
    for (int j = 0; j < COLS; j++) {
      s += a[r * COLS + j];
      d[r * COLS + j] = (float)s;
    }
  }
}
static void plain_row_cumsum_fp32(void) { loop_row_cumsum_fp32(g_fd, g_fa); }

static NOINLINE void tile_row_cumsum_int32(void) {
  pld_row_cumsum(kv, id, ia, 1);
}
PLD__ISA_FUNCTION(static, loop_row_cumsum_int32,
                  (int32_t *restrict d, const int32_t *restrict a), (d, a)) {
  for (int r = 0; r < ROWS; r++) {
    uint32_t s = 0;
    for (int j = 0; j < COLS; j++) {
      d[r * COLS + j] = (int32_t)s;
      s += (uint32_t)a[r * COLS + j];
    }
  }
}
static void plain_row_cumsum_int32(void) { loop_row_cumsum_int32(g_xd, g_xa); }

static NOINLINE void tile_col_cumsum_fp32(void) {
  pld_col_cumsum(kv, td, ta, 0);
}
PLD__ISA_FUNCTION(static, loop_col_cumsum_fp32,
                  (float *restrict d, const float *restrict a), (d, a)) {
  double acc[COLS] = {0};
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < COLS; j++) {
      acc[j] += a[r * COLS + j];
      d[r * COLS + j] = (float)acc[j];
    }
}
static void plain_col_cumsum_fp32(void) { loop_col_cumsum_fp32(g_fd, g_fa); }

static NOINLINE void tile_col_cumsum_int32(void) {
  pld_col_cumsum(kv, id, ia, 0);
}
PLD__ISA_FUNCTION(static, loop_col_cumsum_int32,
                  (int32_t *restrict d, const int32_t *restrict a), (d, a)) {
  uint32_t acc[COLS] = {0};
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < COLS; j++) {
      acc[j] += (uint32_t)a[r * COLS + j];
      d[r * COLS + j] = (int32_t)acc[j];
    }
}
static void plain_col_cumsum_int32(void) { loop_col_cumsum_int32(g_xd, g_xa); }

/* ---- the rows ------------------------------------------------------------ */

struct row {
  const char *label, *loop;
  void (*pld)(void), (*ref)(void);
};

/* clang-format off */
#define EW_ROW(name, CALL, BODY, text) {#name, text, tile_##name, plain_##name},
static const struct row rows[] = {
  EW_OPS(EW_ROW)
  {"iota_int32", "d[i][j] = i * C + j", tile_iota_int32, plain_iota_int32},
  {"iota_fp32", "d = 0.5 + 2i + 0.25j", tile_iota_fp32, plain_iota_fp32},
  {"row_argmax_fp32", "if (x[j] > x[best]) best = j", tile_argmax_fp32, plain_argmax_fp32},
  {"row_argmin_int32", "if (x[j] < x[best]) best = j", tile_argmin_int32, plain_argmin_int32},
  {"row_topk_fp32 k=2", "insertion into the best k", tile_topk2_fp32, plain_topk2_fp32},
  {"row_topk_fp32 k=8", "insertion into the best k", tile_topk8_fp32, plain_topk8_fp32},
  {"row_cumsum_fp32", "s += a (double); d = s", tile_row_cumsum_fp32, plain_row_cumsum_fp32},
  {"row_cumsum_int32 excl", "d = s; s += a", tile_row_cumsum_int32, plain_row_cumsum_int32},
  {"col_cumsum_fp32", "acc[j] += a (double)", tile_col_cumsum_fp32, plain_col_cumsum_fp32},
  {"col_cumsum_int32", "acc[j] += a", tile_col_cumsum_int32, plain_col_cumsum_int32},
};
/* clang-format on */
enum { NROWS = sizeof rows / sizeof rows[0] };

/* Seconds per call of fn over iters calls. */
static double per_call(void (*fn)(void), int64_t iters) {
  const double t0 = now_s();
  for (int64_t i = 0; i < iters; i++)
    fn();
  return (now_s() - t0) / (double)iters;
}

/* Calls of fn that take about a millisecond, after a warm-up. */
static int64_t iters_of(void (*fn)(void)) {
  double t = per_call(fn, 8);
  t = per_call(fn, 8) < t ? per_call(fn, 8) : t;
  int64_t iters;
  int nreps;
  bench_plan(t, REPS * 1e-3, REPS, &iters, &nreps);
  return iters;
}

/* Row i at the level in force: pld's and the loop's Gelem/s (medians)
 * and the median ratio. */
static double measure(const struct row *r, double *pld, double *ref) {
  const int64_t np = iters_of(r->pld), nr = iters_of(r->ref);
  double rp[REPS], rr[REPS], ratio[REPS];
  for (int k = 0; k < REPS; k++) {
    rp[k] = N / per_call(r->pld, np) * 1e-9;
    rr[k] = N / per_call(r->ref, nr) * 1e-9;
    ratio[k] = rp[k] / rr[k];
  }
  *pld = median(rp, REPS);
  *ref = median(rr, REPS);
  return median(ratio, REPS);
}

static void setup(void) {
  /* Six 32 KiB tiles and the small ones: more than a real Unified
   * Buffer holds at once, which the figures do not depend on. */
  const struct pld__core_spec spec = {
      PLD_CORE_VECTOR, 0, 512 * 1024, "Unified Buffer", 0, 0, 0};
  if (pld__core_init(&vcore, &spec) != PLD_OK) {
    fprintf(stderr, "bench_route: no core\n");
    exit(1);
  }
  pld__core_begin(&vcore, "bench_route", 0, 0, 0, 1);
  kv = (pld_core){&vcore};
  ta = pld_tile_new(kv, PLD_FP32, ROWS, COLS);
  tb = pld_tile_new(kv, PLD_FP32, ROWS, COLS);
  td = pld_tile_new(kv, PLD_FP32, ROWS, COLS);
  ia = pld_tile_new(kv, PLD_INT32, ROWS, COLS);
  ib = pld_tile_new(kv, PLD_INT32, ROWS, COLS);
  id = pld_tile_new(kv, PLD_INT32, ROWS, COLS);
  tm = pld_tile_new(kv, PLD_BOOL, ROWS, COLS);
  tq = pld_tile_new(kv, PLD_BOOL, ROWS, COLS);
  tmd = pld_tile_new(kv, PLD_BOOL, ROWS, COLS);
  targ = pld_tile_new(kv, PLD_INT32, ROWS, 1);
  tv2 = pld_tile_new(kv, PLD_FP32, ROWS, K2);
  ti2 = pld_tile_new(kv, PLD_INT32, ROWS, K2);
  tv8 = pld_tile_new(kv, PLD_FP32, ROWS, K8);
  ti8 = pld_tile_new(kv, PLD_INT32, ROWS, K8);
  if (vcore.status) {
    fprintf(stderr, "bench_route: %s\n", vcore.msg);
    exit(1);
  }
  /* 64 x 128 FP32 and INT32 rows are unpadded, BOOL rows of 128 bytes
   * too: each tile is one array of N elements. */
  g_fa = (float *)(void *)ta->data;
  g_fb = (float *)(void *)tb->data;
  g_fd = (float *)(void *)td->data;
  g_xa = (int32_t *)(void *)ia->data;
  g_xb = (int32_t *)(void *)ib->data;
  g_xd = (int32_t *)(void *)id->data;
  g_ma = tm->data;
  g_mq = tq->data;
  g_md = tmd->data;
  uint64_t z = 12345;
  for (int i = 0; i < N; i++) {
    z = z * 6364136223846793005u + 1442695040888963407u;
    g_fa[i] = (float)((int64_t)(z >> 40) - (1 << 23)) / (float)(1 << 23);
    g_fb[i] =
        (float)((int64_t)((z >> 16) & 0xFFFFFF) - (1 << 23)) / (float)(1 << 23);
    g_xa[i] = (int32_t)(z >> 33);
    g_xb[i] = (int32_t)((z >> 20) & 0xFFF) + 1;
    g_ma[i] = (uint8_t)((z >> 60) & 1);
    g_mq[i] = (uint8_t)((z >> 59) & 1);
  }
}

int main(int argc, char **argv) {
  setup();
  int levels[PLD__ISA_LEVELS], nlevels = 0;
  for (int i = 1; i < argc && nlevels < PLD__ISA_LEVELS; i++) {
    const int l = pld__isa_parse(argv[i]);
    if (l < 0 || !pld__isa_runs(l)) {
      fprintf(stderr, "bench_route: %s: no level this machine runs\n", argv[i]);
      return 2;
    }
    levels[nlevels++] = l;
  }
  for (int l = 0; argc < 2 && l < PLD__ISA_LEVELS; l++)
    if (pld__isa_runs(l))
      levels[nlevels++] = l;
  printf("bench_route: routing tile operations on %d x %d tiles against "
         "plain C loops\n(Gelem/s, medians of %d alternated timings; ratio = "
         "pld / loop, above 1 is pld faster)\n",
         ROWS, COLS, REPS);
  for (int li = 0; li < nlevels; li++) {
    if (pld__isa_set(levels[li]) != PLD_OK) {
      fprintf(stderr, "bench_route: level %s refused\n",
              pld__isa_name(levels[li]));
      continue;
    }
    printf("\nlevel %s\n%-22s %9s %9s %7s  %s\n", pld__isa_name(levels[li]),
           "pld_", "pld", "loop", "ratio", "loop");
    double lowest = INFINITY;
    const char *low_row = "";
    for (int i = 0; i < NROWS; i++) {
      double p, r;
      const double ratio = measure(&rows[i], &p, &r);
      printf("%-22s %9.3f %9.3f %7.2f  %s\n", rows[i].label, p, r, ratio,
             rows[i].loop);
      if (ratio < lowest) {
        lowest = ratio;
        low_row = rows[i].label;
      }
      fflush(stdout);
    }
    printf("lowest ratio at %s: %.2f (%s)\n", pld__isa_name(levels[li]), lowest,
           low_row);
  }
  if (vcore.status)
    fprintf(stderr, "bench_route: a tile call failed: %s\n", vcore.msg);
  pld__core_release(&vcore);
  return 0;
}
