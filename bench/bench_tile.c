/* bench_tile: tile operations next to what they are measured against.
 *
 *   (c) elementwise throughput on 64 x 128 tiles (the data of one Unified
 *       Buffer tile, hot in L1): pld_add, pld_muls, pld_exp on FP32 and
 *       pld_add on FP16, against plain C loops over the same data built
 *       with the same flags;
 *   (d) FP32 matmul 128 x 128 x 128 on a cube core against a naive i-j-k
 *       triple loop and single-threaded OpenBLAS cblas_sgemm.
 *
 * The tile calls run on a simulated core made directly (core/kctx.h), so
 * the figures are the tile layer's alone, without dispatch.  Each figure
 * is the median of REPS timings of many calls.  Nothing here fails: the
 * figures are printed, with the ratio to the reference. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/kctx.h"
#include "pld.h"

enum { REPS = 51, ROWS = 64, COLS = 128, N = ROWS * COLS, MM = 128 };

#define NOINLINE __attribute__((noinline))

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median seconds per call of fn, over REPS timings of `inner` calls. */
static double median_time(void (*fn)(void), int inner) {
  double t[REPS];
  for (int i = 0; i < inner; i++)
    fn(); /* warm caches and branch predictors */
  for (int r = 0; r < REPS; r++) {
    const double t0 = now();
    for (int i = 0; i < inner; i++)
      fn();
    t[r] = (now() - t0) / inner;
  }
  qsort(t, REPS, sizeof *t, cmp_double);
  return t[REPS / 2];
}

/* ---- the data ------------------------------------------------------------ */

static struct pld__core vcore, ccore, scratch;
static pld_core kv, kc, ks;
static pld_tile *ta, *tb, *td, *ha, *hb, *hd;   /* vector core */
static pld_tile *ma, *mb, *mc, *mha, *mhb;      /* cube core */

/* The plain loops' data, 64-byte aligned like tiles. */
static _Alignas(64) float fa[N], fb[N], fd[N];
__extension__ typedef _Float16 half; /* gcc's half type, for the FP16 loop */
static _Alignas(64) half ga[N], gb[N], gd[N];
static _Alignas(64) float xa[MM * MM], xb[MM * MM], xc[MM * MM];
static volatile int runtime_size = MM; /* a size the compiler cannot see */

/* ---- (c) elementwise ------------------------------------------------------ */

static NOINLINE void tile_add(void) { pld_add(kv, td, ta, tb); }
static NOINLINE void tile_muls(void) { pld_muls(kv, td, ta, 1.0001); }
static NOINLINE void tile_exp(void) { pld_exp(kv, td, ta); }
static NOINLINE void tile_add_fp16(void) { pld_add(kv, hd, ha, hb); }

/* The loops a C programmer writes, with the size known and restrict
 * pointers: gcc vectorizes them fully (the best case for the reference),
 * except the _Float16 one, which gcc 12 leaves scalar. */
static NOINLINE void add_loop(float *restrict d, const float *restrict a,
                              const float *restrict b) {
  for (int i = 0; i < N; i++)
    d[i] = a[i] + b[i];
}
static NOINLINE void muls_loop(float *restrict d, const float *restrict a,
                               float s) {
  for (int i = 0; i < N; i++)
    d[i] = a[i] * s;
}
static NOINLINE void exp_loop(float *restrict d, const float *restrict a) {
  for (int i = 0; i < N; i++)
    d[i] = expf(a[i]);
}
static NOINLINE void add_loop_fp16(half *restrict d, const half *restrict a,
                                   const half *restrict b) {
  for (int i = 0; i < N; i++)
    d[i] = a[i] + b[i];
}
static void c_add(void) { add_loop(fd, fa, fb); }
static void c_muls(void) { muls_loop(fd, fa, 1.0001f); }
static void c_exp(void) { exp_loop(fd, fa); }
static void c_add_fp16(void) { add_loop_fp16(gd, ga, gb); }

static void elementwise_row(const char *name, const char *ref_name,
                            void (*tile)(void), void (*ref)(void),
                            double bytes) {
  const double tt = median_time(tile, 2000), tr = median_time(ref, 2000);
  printf("  %-22s %7.2f %7.1f    %-24s %7.2f %7.1f    %5.0f%%\n", name,
         N / tt * 1e-9, bytes / tt * 1e-9, ref_name, N / tr * 1e-9,
         bytes / tr * 1e-9, 100.0 * tr / tt);
}

static void bench_elementwise(void) {
  printf("(c) elementwise, 64 x 128 tiles (%d elements), median of %d x 2000 "
         "calls\n",
         N, REPS);
  printf("  %-22s %7s %7s    %-24s %7s %7s    %6s\n", "tile op", "Gelem/s",
         "GB/s", "plain C loop", "Gelem/s", "GB/s", "ratio");
  elementwise_row("pld_add FP32", "d[i] = a[i] + b[i]", tile_add, c_add,
                  3.0 * N * 4);
  elementwise_row("pld_muls FP32", "d[i] = a[i] * s", tile_muls, c_muls,
                  2.0 * N * 4);
  elementwise_row("pld_exp FP32", "d[i] = expf(a[i])", tile_exp, c_exp,
                  2.0 * N * 4);
  elementwise_row("pld_add FP16", "_Float16 d[i]=a[i]+b[i]", tile_add_fp16,
                  c_add_fp16, 3.0 * N * 2);
  printf("  (ratio: tile op throughput / plain loop throughput; the plain "
         "loops know the size at compile time)\n");
}

/* ---- (d) matmul ---------------------------------------------------------- */

static NOINLINE void tile_matmul(void) { pld_matmul(kc, mc, ma, mb); }
static NOINLINE void tile_matmul_bf16(void) { pld_matmul(kc, mc, mha, mhb); }

/* Textbook i-j-k. */
static inline void naive_sgemm(int m, int n, int kk, const float *a,
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
 * much stronger reference. */
static NOINLINE void naive_runtime(int m, int n, int kk, const float *a,
                                   const float *b, float *c) {
  naive_sgemm(m, n, kk, a, b, c);
}
static NOINLINE void naive_const(const float *a, const float *b, float *c) {
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

static double gflops(double seconds) {
  return 2.0 * MM * MM * MM / seconds * 1e-9;
}

/* Largest |pld - OpenBLAS| over c, relative to the largest |c|. */
static double matmul_difference(void) {
  tile_matmul();
  c_openblas();
  double diff = 0, mag = 0;
  for (int i = 0; i < MM; i++)
    for (int j = 0; j < MM; j++) {
      const float v = ((const float *)(mc->data + (size_t)i * mc->row_bytes))[j];
      diff = fmax(diff, fabs((double)v - xc[i * MM + j]));
      mag = fmax(mag, fabs((double)xc[i * MM + j]));
    }
  return diff / mag;
}

static void bench_matmul(void) {
  openblas_set_num_threads(1);
  const double t_tile = median_time(tile_matmul, 200);
  const double t_bf16 = median_time(tile_matmul_bf16, 200);
  const double t_naive = median_time(c_naive, 5);
  const double t_const = median_time(c_naive_const, 20);
  const double t_blas = median_time(c_openblas, 200);
  printf("\n(d) matmul FP32 %d x %d x %d, median of %d timings, GFLOP/s\n", MM,
         MM, MM, REPS);
  printf("  %-44s %7.1f\n", "pld_matmul (FP32 tiles, cube core)",
         gflops(t_tile));
  printf("  %-44s %7.1f   pld is %5.1fx\n", "naive i-j-k loop, run-time sizes",
         gflops(t_naive), t_naive / t_tile);
  printf("  %-44s %7.1f   pld is %5.1fx\n",
         "naive i-j-k loop, compile-time sizes", gflops(t_const),
         t_const / t_tile);
  printf("  %-44s %7.1f   pld is %5.2fx\n",
         "OpenBLAS cblas_sgemm, 1 thread", gflops(t_blas), t_blas / t_tile);
  printf("  %-44s %7.1f\n", "pld_matmul (BF16 operands, FP32 c)",
         gflops(t_bf16));
  printf("  (largest |pld - OpenBLAS| / largest |c|: %.2g)\n",
         matmul_difference());
}

/* ---- setup --------------------------------------------------------------- */

/* A tile of core k holding src converted to dt.  The conversion runs on
 * a scratch vector core, since cube cores have no pld_cast; a tile of one
 * shape and dtype has one layout, so its bytes are copied over whole. */
static pld_tile *filled(pld_core k, pld_dtype dt, int32_t rows, int32_t cols,
                        const float *src) {
  pld_tile *t = pld_tile_new(k, dt, rows, cols);
  pld_tile *f = pld_tile_new(ks, PLD_FP32, rows, cols);
  pld_tile *g = pld_tile_new(ks, dt, rows, cols);
  if (!t || !f || !g) {
    fprintf(stderr, "bench_tile: %s%s\n", k.p->msg, ks.p->msg);
    exit(1);
  }
  for (int32_t r = 0; r < rows; r++)
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

int main(void) {
  const struct pld__core_spec vspec = {PLD_CORE_VECTOR, 0, 192 * 1024,
                                       "Unified Buffer", 0, 0, 0};
  const struct pld__core_spec cspec = {PLD_CORE_CUBE, 0, 512 * 1024, "L1",
                                       64 * 1024, 64 * 1024, 128 * 1024};
  const struct pld__core_spec sspec = {PLD_CORE_VECTOR, 1, 512 * 1024,
                                       "scratch", 0, 0, 0};
  start(&vcore, &kv, &vspec);
  start(&ccore, &kc, &cspec);
  start(&scratch, &ks, &sspec);
  srand(1);
  for (int i = 0; i < N; i++) {
    fa[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    fb[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    ga[i] = (half)fa[i];
    gb[i] = (half)fb[i];
  }
  for (int i = 0; i < MM * MM; i++) {
    xa[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    xb[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  }
  ta = filled(kv, PLD_FP32, ROWS, COLS, fa);
  tb = filled(kv, PLD_FP32, ROWS, COLS, fb);
  td = pld_tile_new(kv, PLD_FP32, ROWS, COLS);
  ha = filled(kv, PLD_FP16, ROWS, COLS, fa);
  hb = filled(kv, PLD_FP16, ROWS, COLS, fb);
  hd = pld_tile_new(kv, PLD_FP16, ROWS, COLS);
  ma = filled(kc, PLD_FP32, MM, MM, xa);
  mb = filled(kc, PLD_FP32, MM, MM, xb);
  mc = pld_tile_new(kc, PLD_FP32, MM, MM);
  mha = filled(kc, PLD_BF16, MM, MM, xa);
  mhb = filled(kc, PLD_BF16, MM, MM, xb);

  printf("bench_tile: tile layer against plain C and OpenBLAS\n\n");
  bench_elementwise();
  bench_matmul();
  if (vcore.status || ccore.status || scratch.status)
    fprintf(stderr, "bench_tile: a tile call failed: %s%s%s\n", vcore.msg,
            ccore.msg, scratch.msg);
  pld__core_release(&vcore);
  pld__core_release(&ccore);
  pld__core_release(&scratch);
  return 0;
}
