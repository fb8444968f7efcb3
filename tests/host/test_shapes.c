/* Shapes: dynamic dimensions bound per call (one generic kernel launched,
 * one device function dispatched, at several shapes), shape expressions
 * checked at the host, at dispatch and at launch, and window views that
 * differ from their parameter only by leading unit dimensions.  Results
 * are checked against plain C loops over 2, 3 and 4 ranks on both
 * simulators. */
#include <stdlib.h>

#include "pld_test.h"
#include "programs.h"

static int ids[16];

/* n ranks on `platform`: devices 0, 1 for two ranks, else 2n+1, 2n-1, ...
 * (device ids that are not the ranks). */
static pld_config config_on(int n, const char *platform) {
  pld_config cfg =
      n == 2 ? test_config(ids, n, 0, 1) : test_config(ids, n, 2 * n + 1, -2);
  cfg.platform = platform;
  return cfg;
}

/* Every program that runs, runs over these worlds. */
static void over_worlds(void (*run)(int n, const char *platform)) {
  static const char *const platforms[] = {"a2a3sim", "a5sim"};
  for (int n = 2; n <= 4; n++)
    for (int p = 0; p < 2; p++)
      run(n, platforms[p]);
}

/* Small integers, different for each seed: every sum and product below
 * stays exact in float, so results must match bit for bit. */
static void fill_ints(pld_tensor t, int seed) {
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = (float)((i * 5 + seed * 11 + i / 7) % 9 - 4);
}

static pld_tensor ints(int seed, int ndim, const int64_t *shape) {
  pld_tensor t;
  assert_ok(pld_tensor_create(PLD_FP32, ndim, shape, &t));
  fill_ints(t, seed);
  return t;
}

/* An output: every element 777, which no result below is. */
static pld_tensor out(int ndim, const int64_t *shape) {
  pld_tensor t;
  assert_ok(pld_tensor_create(PLD_FP32, ndim, shape, &t));
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = 777.0f;
  return t;
}

static void expect_f32(const char *what, int n, const char *platform,
                       pld_tensor got, const float *want) {
  const float *g = pld_tensor_data(got);
  for (int64_t i = 0; i < pld_tensor_numel(got); i++)
    if (!(g[i] == want[i])) {
      print_error("%s (%d ranks, %s): element %lld: got %.9g, expected "
                  "%.9g\n",
                  what, n, platform, (long long)i, (double)g[i],
                  (double)want[i]);
      fail();
    }
}

static float *want_of(pld_tensor t) {
  float *w = malloc((size_t)pld_tensor_numel(t) * sizeof *w);
  assert_non_null(w);
  return w;
}

/* got holds 2 x, element by element. */
static void expect_doubled(const char *what, int n, const char *platform,
                           pld_tensor got, pld_tensor x) {
  const float *xs = pld_tensor_data(x);
  float *want = want_of(got);
  for (int64_t i = 0; i < pld_tensor_numel(got); i++)
    want[i] = 2.0f * xs[i];
  expect_f32(what, n, platform, got, want);
  free(want);
}

/* c = a @ b, a [m, kk], b [kk, n], row-major. */
static void matmul_ref(const float *a, const float *b, float *c, int64_t m,
                       int64_t kk, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float s = 0;
      for (int64_t l = 0; l < kk; l++)
        s += a[i * kk + l] * b[l * n + j];
      c[i * n + j] = s;
    }
}

static int compile_only(pld_host_fn fn, pld_config *cfg, int argc,
                        const pld_arg *argv) {
  pld_program *p = NULL;
  int st = pld_compile(fn, cfg, argc, argv, &p);
  assert_true((st == PLD_OK) == (p != NULL));
  pld_program_destroy(p);
  return st;
}

/* ======================================================================
 * 1. Dynamic dimensions bound per call
 * ====================================================================== */

PLD_DYNAMIC(M);
PLD_DYNAMIC(K);
PLD_DYNAMIC(N);
PLD_DYNAMIC(P);

/* Generic kernels: c = a @ b at any M, K, N; y = x * s + t at any M, N. */
PLD_CUBE_KERNEL(k_mm, k, PLD_IN(a, FP32, M, K), PLD_IN(b, FP32, K, N),
                PLD_OUT(c, FP32, M, N)) {
  int32_t m = (int32_t)pld_tensor_dim(a, 0);
  int32_t kk = (int32_t)pld_tensor_dim(a, 1);
  int32_t n = (int32_t)pld_tensor_dim(b, 1);
  pld_tile *ta = pld_load(k, a, 0, 0, m, kk);
  pld_tile *tb = pld_load(k, b, 0, 0, kk, n);
  pld_tile *tc = pld_tile_new(k, PLD_FP32, m, n);
  pld_matmul(k, tc, ta, tb);
  pld_store(k, tc, c, 0, 0);
}

PLD_KERNEL(k_axpy, k, PLD_IN(x, FP32, M, N), PLD_IN(t, FP32, M, N),
           PLD_OUT(y, FP32, M, N), PLD_SCALAR(s, FP32)) {
  int32_t m = (int32_t)pld_tensor_dim(x, 0), n = (int32_t)pld_tensor_dim(x, 1);
  pld_tile *tx = pld_load(k, x, 0, 0, m, n);
  pld_tile *tt = pld_load(k, t, 0, 0, m, n);
  pld_muls(k, tx, tx, s);
  pld_add(k, tx, tx, tt);
  pld_store(k, tx, y, 0, 0);
}

/* out = ((a @ b) @ d) * s + e through two device-allocated intermediates:
 * k_mm runs at [M, K] x [K, N] and then at [M, N] x [N, P] in one call, and
 * the device function's own M, K, N, P are bound per dispatch. */
PLD_DEVICE(d_chain, cpu, PLD_IN(a, FP32, M, K), PLD_IN(b, FP32, K, N),
           PLD_IN(d, FP32, N, P), PLD_IN(e, FP32, M, P), PLD_OUT(o, FP32, M, P),
           PLD_SCALAR(s, FP32)) {
  int64_t m = pld_tensor_dim(a, 0), n = pld_tensor_dim(b, 1);
  int64_t p = pld_tensor_dim(d, 1);
  pld_tensor ab = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(m, n));
  pld_tensor abd = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(m, p));
  pld_launch(cpu, k_mm, 1, a, b, ab);
  pld_launch(cpu, k_mm, 1, ab, d, abd);
  pld_launch(cpu, k_axpy, 1, abd, e, o, s);
}

enum { M1 = 4, K1 = 8, N1 = 16, P1 = 8, M2 = 6, K2 = 16, N2 = 8, P2 = 24 };

/* Each rank runs d_chain twice, at two sets of shapes. */
PLD_HOST(h_chain, h, PLD_IN(a1, FP32, NR, M1, K1), PLD_IN(b1, FP32, NR, K1, N1),
         PLD_IN(d1, FP32, NR, N1, P1), PLD_IN(e1, FP32, NR, M1, P1),
         PLD_OUT(o1, FP32, NR, M1, P1), PLD_IN(a2, FP32, NR, M2, K2),
         PLD_IN(b2, FP32, NR, K2, N2), PLD_IN(d2, FP32, NR, N2, P2),
         PLD_IN(e2, FP32, NR, M2, P2), PLD_OUT(o2, FP32, NR, M2, P2)) {
  for (int r = 0; r < pld_world_size(h); r++) {
    pld_dispatch(h, d_chain, r, pld_slice(h, a1, r), pld_slice(h, b1, r),
                 pld_slice(h, d1, r), pld_slice(h, e1, r), pld_slice(h, o1, r),
                 (float)(r + 1));
    pld_dispatch(h, d_chain, r, pld_slice(h, a2, r), pld_slice(h, b2, r),
                 pld_slice(h, d2, r), pld_slice(h, e2, r), pld_slice(h, o2, r),
                 -(float)(r + 1));
  }
}

/* The reference of one set: t = {a, b, d, e, o}, shapes m, kk, n, p. */
static void check_chain(int nr, const char *platform, const pld_tensor *t,
                        const int64_t *sz, float sign) {
  const int64_t m = sz[0], kk = sz[1], n = sz[2], p = sz[3];
  const float *a = pld_tensor_data(t[0]), *b = pld_tensor_data(t[1]);
  const float *d = pld_tensor_data(t[2]), *e = pld_tensor_data(t[3]);
  float *want = want_of(t[4]);
  float *ab = malloc((size_t)(m * n) * sizeof *ab);
  float *abd = malloc((size_t)(m * p) * sizeof *abd);
  assert_non_null(ab);
  assert_non_null(abd);
  for (int r = 0; r < nr; r++) {
    matmul_ref(a + r * m * kk, b + r * kk * n, ab, m, kk, n);
    matmul_ref(ab, d + r * n * p, abd, m, n, p);
    for (int64_t i = 0; i < m * p; i++)
      want[r * m * p + i] = abd[i] * (sign * (float)(r + 1)) + e[r * m * p + i];
  }
  expect_f32(sign > 0 ? "o1" : "o2", nr, platform, t[4], want);
  free(ab);
  free(abd);
  free(want);
}

static void run_chain(int n, const char *platform) {
  pld_config cfg = config_on(n, platform);
  static const int64_t sz[2][4] = {{M1, K1, N1, P1}, {M2, K2, N2, P2}};
  pld_tensor t[2][5];
  for (int s = 0; s < 2; s++) {
    const int64_t m = sz[s][0], kk = sz[s][1], nn = sz[s][2], p = sz[s][3];
    t[s][0] = ints(10 * s + 1, PLD_SHAPE(n, m, kk));
    t[s][1] = ints(10 * s + 2, PLD_SHAPE(n, kk, nn));
    t[s][2] = ints(10 * s + 3, PLD_SHAPE(n, nn, p));
    t[s][3] = ints(10 * s + 4, PLD_SHAPE(n, m, p));
    t[s][4] = out(PLD_SHAPE(n, m, p));
  }
  pld_program *prog;
#define CHAIN_ARGS                                                             \
  PLD_ARGS(t[0][0], t[0][1], t[0][2], t[0][3], t[0][4], t[1][0], t[1][1],      \
           t[1][2], t[1][3], t[1][4])
  assert_ok(pld_compile(h_chain, &cfg, CHAIN_ARGS, &prog));
  for (int run = 0; run < 2; run++) {
    for (int s = 0; s < 2; s++)
      for (int i = 0; i < 4; i++)
        fill_ints(t[s][i], 100 * run + 10 * s + i);
    assert_ok(pld_program_run(prog, CHAIN_ARGS));
    check_chain(n, platform, t[0], sz[0], 1.0f);
    check_chain(n, platform, t[1], sz[1], -1.0f);
  }
#undef CHAIN_ARGS
  pld_program_destroy(prog);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 5; i++)
      pld_tensor_destroy(t[s][i]);
}

/* One generic kernel launched at two shapes in one device function, one
 * device function dispatched at two shapes to every rank. */
static void test_generic_kernel_and_device_fn_at_two_shapes(void **state) {
  (void)state;
  over_worlds(run_chain);
}

/* Within one call all parameters share the bindings: c = a @ b through
 * d_mm (M, K, N of the device function) or d_mm_loose (names of the host
 * only, so that k_mm's launch is the call that checks them). */
PLD_DYNAMIC(AM);
PLD_DYNAMIC(AK);
PLD_DYNAMIC(BK);
PLD_DYNAMIC(BN);
PLD_DYNAMIC(CM);
PLD_DYNAMIC(CN);

PLD_DEVICE(d_mm, cpu, PLD_IN(a, FP32, M, K), PLD_IN(b, FP32, K, N),
           PLD_OUT(c, FP32, M, N)) {
  pld_launch(cpu, k_mm, 1, a, b, c);
}
PLD_DEVICE(d_mm_loose, cpu, PLD_IN(a, FP32, AM, AK), PLD_IN(b, FP32, BK, BN),
           PLD_OUT(c, FP32, CM, CN)) {
  pld_launch(cpu, k_mm, 1, a, b, c);
}
PLD_HOST(h_mm, h, PLD_IN(a, FP32, NR, AM, AK), PLD_IN(b, FP32, NR, BK, BN),
         PLD_OUT(c, FP32, NR, CM, CN), PLD_SCALAR(loose, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    if (loose)
      pld_dispatch(h, d_mm_loose, r, pld_slice(h, a, r), pld_slice(h, b, r),
                   pld_slice(h, c, r));
    else
      pld_dispatch(h, d_mm, r, pld_slice(h, a, r), pld_slice(h, b, r),
                   pld_slice(h, c, r));
}

/* Compiles h_mm with a [am, ak], b [bk, bn], c [cm, cn] per rank; when it
 * compiles, runs it and checks c = a @ b. */
static int mm_case(int loose, int n, const char *platform, int64_t am,
                   int64_t ak, int64_t bk, int64_t bn, int64_t cm, int64_t cn) {
  pld_config cfg = config_on(n, platform);
  pld_tensor a = ints(1, PLD_SHAPE(n, am, ak));
  pld_tensor b = ints(2, PLD_SHAPE(n, bk, bn));
  pld_tensor c = out(PLD_SHAPE(n, cm, cn));
  pld_program *p = NULL;
  int st = pld_compile(h_mm, &cfg, PLD_ARGS(a, b, c, loose), &p);
  if (st == PLD_OK) {
    assert_ok(pld_program_run(p, PLD_ARGS(a, b, c, loose)));
    float *want = want_of(c);
    for (int r = 0; r < n; r++)
      matmul_ref((const float *)pld_tensor_data(a) + r * am * ak,
                 (const float *)pld_tensor_data(b) + r * bk * bn,
                 want + r * cm * cn, am, ak, bn);
    expect_f32(loose ? "c (d_mm_loose)" : "c (d_mm)", n, platform, c, want);
    free(want);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
  return st;
}

static void run_mm_agreeing(int n, const char *platform) {
  for (int loose = 0; loose < 2; loose++) {
    assert_ok(mm_case(loose, n, platform, 4, 8, 8, 16, 4, 16));
    assert_ok(mm_case(loose, n, platform, 5, 3, 3, 8, 5, 8));
  }
}

static void mm_mismatches(int loose) {
  const char *call = loose ? "pld_launch (rank 0, device 0, in d_mm_loose): "
                             "k_mm: "
                           : "pld_dispatch to rank 0 (in h_mm): d_mm: ";
  const char *owner = loose ? "k_mm" : "d_mm";
  char head[160], why[200];
  /* M of c one above and one below a's. */
  for (int64_t cm = 3; cm <= 5; cm += 2) {
    snprintf(head, sizeof head, "%sparameter 'c' (3 of 3): ", call);
    snprintf(why, sizeof why,
             "dynamic dimension M (dimension 0) is %lld here, but parameter "
             "'a' of %s bound it to 4",
             (long long)cm, owner);
    assert_fails_with(mm_case(loose, 2, "a2a3sim", 4, 8, 8, 16, cm, 16),
                      PLD_ERR_ARG, head, why);
  }
  snprintf(head, sizeof head, "%sparameter 'b' (2 of 3): ", call);
  snprintf(why, sizeof why,
           "dynamic dimension K (dimension 0) is 9 here, but parameter 'a' "
           "of %s bound it to 8",
           owner);
  assert_fails_with(mm_case(loose, 2, "a5sim", 4, 8, 9, 16, 4, 16), PLD_ERR_ARG,
                    head, why);
  snprintf(head, sizeof head, "%sparameter 'c' (3 of 3): ", call);
  snprintf(why, sizeof why,
           "dynamic dimension N (dimension 1) is 15 here, but parameter 'b' "
           "of %s bound it to 16",
           owner);
  assert_fails_with(mm_case(loose, 2, "a2a3sim", 4, 8, 8, 16, 4, 15),
                    PLD_ERR_ARG, head, why);
}

static void test_call_shares_its_bindings(void **state) {
  (void)state;
  over_worlds(run_mm_agreeing);
  mm_mismatches(0); /* checked at the dispatch */
  mm_mismatches(1); /* checked at the launch */
}

/* A name the host function bound stays program-wide: R is the host's,
 * F is bound per call.  Modes: 0 z through d_free / k_free (F = ZR, any
 * size); 1 z through d_rows (R at dispatch); 2 z through d_free, which
 * launches k_rows (R at launch). */
enum { RC = 8 };
PLD_DYNAMIC(R);
PLD_DYNAMIC(F);
PLD_DYNAMIC(ZR);

static void scale_rows(pld_core k, pld_tensor x, pld_tensor y, float s) {
  pld_tile *t =
      pld_load(k, x, 0, 0, (int32_t)pld_tensor_dim(x, 0), (int32_t)RC);
  pld_muls(k, t, t, s);
  pld_store(k, t, y, 0, 0);
}
PLD_KERNEL(k_rows, k, PLD_IN(x, FP32, R, RC), PLD_OUT(y, FP32, R, RC),
           PLD_SCALAR(s, FP32)) {
  scale_rows(k, x, y, s);
}
PLD_KERNEL(k_free, k, PLD_IN(x, FP32, F, RC), PLD_OUT(y, FP32, F, RC),
           PLD_SCALAR(s, FP32)) {
  scale_rows(k, x, y, s);
}
PLD_DEVICE(d_rows, cpu, PLD_IN(x, FP32, R, RC), PLD_OUT(y, FP32, R, RC),
           PLD_SCALAR(s, FP32)) {
  pld_launch(cpu, k_rows, 1, x, y, s);
}
PLD_DEVICE(d_free, cpu, PLD_IN(x, FP32, F, RC), PLD_OUT(y, FP32, F, RC),
           PLD_SCALAR(s, FP32), PLD_SCALAR(use_r, INT32)) {
  if (use_r)
    pld_launch(cpu, k_rows, 1, x, y, s);
  else
    pld_launch(cpu, k_free, 1, x, y, s);
}
PLD_HOST(h_rows, h, PLD_IN(x, FP32, NR, R, RC), PLD_IN(z, FP32, NR, ZR, RC),
         PLD_OUT(y, FP32, NR, R, RC), PLD_OUT(w, FP32, NR, ZR, RC),
         PLD_SCALAR(mode, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++) {
    float s = (float)(r + 1);
    pld_dispatch(h, d_rows, r, pld_slice(h, x, r), pld_slice(h, y, r), s);
    if (mode == 1)
      pld_dispatch(h, d_rows, r, pld_slice(h, z, r), pld_slice(h, w, r), s);
    else
      pld_dispatch(h, d_free, r, pld_slice(h, z, r), pld_slice(h, w, r), s,
                   mode == 2);
  }
}

static int rows_case(int mode, int n, const char *platform, int64_t zr) {
  pld_config cfg = config_on(n, platform);
  pld_tensor x = ints(3, PLD_SHAPE(n, 4, RC)),
             z = ints(4, PLD_SHAPE(n, zr, RC));
  pld_tensor y = out(PLD_SHAPE(n, 4, RC)), w = out(PLD_SHAPE(n, zr, RC));
  pld_program *p = NULL;
  int st = pld_compile(h_rows, &cfg, PLD_ARGS(x, z, y, w, mode), &p);
  if (st == PLD_OK) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, z, y, w, mode)));
    pld_tensor in[2] = {x, z}, res[2] = {y, w};
    for (int i = 0; i < 2; i++) {
      const float *xs = pld_tensor_data(in[i]);
      float *want = want_of(res[i]);
      int64_t per = pld_tensor_numel(in[i]) / n;
      for (int64_t e = 0; e < pld_tensor_numel(in[i]); e++)
        want[e] = xs[e] * (float)(e / per + 1);
      expect_f32(i ? "w" : "y", n, platform, res[i], want);
      free(want);
    }
    pld_program_destroy(p);
  }
  pld_tensor_destroy(x);
  pld_tensor_destroy(z);
  pld_tensor_destroy(y);
  pld_tensor_destroy(w);
  return st;
}

static void run_rows(int n, const char *platform) {
  /* F is bound per call: any size.  R the host bound: its size only. */
  assert_ok(rows_case(0, n, platform, 6));
  assert_ok(rows_case(0, n, platform, 4));
  assert_ok(rows_case(1, n, platform, 4));
  assert_ok(rows_case(2, n, platform, 4));
}

static void test_host_bound_name_is_program_wide(void **state) {
  (void)state;
  over_worlds(run_rows);
  char why[160];
  for (int64_t zr = 3; zr <= 5; zr += 2) {
    snprintf(why, sizeof why,
             "dynamic dimension R (dimension 0) is %lld here, but parameter "
             "'x' of h_rows bound it to 4",
             (long long)zr);
    assert_fails_with(rows_case(1, 2, "a2a3sim", zr), PLD_ERR_ARG,
                      "pld_dispatch to rank 0 (in h_rows): d_rows: parameter "
                      "'x' (1 of 3): ",
                      why);
    assert_fails_with(rows_case(2, 2, "a5sim", zr), PLD_ERR_ARG,
                      "pld_launch (rank 0, device 0, in d_free): k_rows: "
                      "parameter 'x' (1 of 3): ",
                      why);
  }
}

/* ======================================================================
 * 2. Shape expressions
 * ====================================================================== */

enum { EC = 8, TILE = 8 };
PLD_DYNAMIC(C);
PLD_DYNAMIC(L);
PLD_DYNAMIC(Q);

/* Expressions of the host's NR at every level: y = a + b + c - d + w[r %
 * (NR - 1)]. */
PLD_KERNEL(k_ring, k, PLD_IN(a, FP32, C), PLD_IN(b, FP32, C),
           PLD_IN(c, FP32, C), PLD_IN(d, FP32, C), PLD_IN(w, FP32, NR - 1),
           PLD_OUT(y, FP32, C), PLD_SCALAR(r, INT32)) {
  int32_t n = (int32_t)pld_tensor_dim(a, 0);
  pld_tile *ta = pld_load(k, a, 0, 0, 1, n), *tb = pld_load(k, b, 0, 0, 1, n);
  pld_tile *tc = pld_load(k, c, 0, 0, 1, n), *td = pld_load(k, d, 0, 0, 1, n);
  pld_add(k, ta, ta, tb);
  pld_add(k, ta, ta, tc);
  pld_sub(k, ta, ta, td);
  pld_adds(k, ta, ta, pld_read(k, w, PLD_AT(r % pld_tensor_dim(w, 0))));
  pld_store(k, ta, y, 0, 0);
}
PLD_DEVICE(d_ring, cpu, PLD_IN(a, FP32, C), PLD_IN(b, FP32, C),
           PLD_IN(c, FP32, C), PLD_IN(d, FP32, C), PLD_IN(w, FP32, NR - 1),
           PLD_OUT(y, FP32, C), PLD_SCALAR(r, INT32)) {
  pld_launch(cpu, k_ring, 1, a, b, c, d, w, y, r);
}
PLD_HOST(h_ring, h, PLD_IN(x, FP32, NR, EC), PLD_IN(prev, FP32, NR - 1, EC),
         PLD_IN(pair, FP32, NR * 2, EC), PLD_IN(w, FP32, NR - 1),
         PLD_OUT(y, FP32, NR, EC)) {
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_ring, r, pld_slice(h, x, r),
                 pld_slice(h, prev, n > 1 ? r % (n - 1) : 0),
                 pld_slice(h, pair, 2 * r), pld_slice(h, pair, 2 * r + 1), w,
                 pld_slice(h, y, r), r);
}

static int ring_case(int n, const char *platform, int64_t nr, int64_t prev_rows,
                     int64_t pair_rows, int64_t w_len, int run) {
  pld_config cfg = config_on(n, platform);
  pld_tensor x = ints(1, PLD_SHAPE(nr, EC));
  pld_tensor prev = ints(2, PLD_SHAPE(prev_rows, EC));
  pld_tensor pair = ints(3, PLD_SHAPE(pair_rows, EC));
  pld_tensor w = ints(4, PLD_SHAPE(w_len));
  pld_tensor y = out(PLD_SHAPE(nr, EC));
  pld_program *p = NULL;
  int st = pld_compile(h_ring, &cfg, PLD_ARGS(x, prev, pair, w, y), &p);
  if (st == PLD_OK && run) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, prev, pair, w, y)));
    const float *xs = pld_tensor_data(x), *ps = pld_tensor_data(prev);
    const float *qs = pld_tensor_data(pair), *ws = pld_tensor_data(w);
    float *want = want_of(y);
    for (int r = 0; r < n; r++)
      for (int j = 0; j < EC; j++)
        want[r * EC + j] = xs[r * EC + j] + ps[(r % (n - 1)) * EC + j] +
                           qs[2 * r * EC + j] - qs[(2 * r + 1) * EC + j] +
                           ws[r % (n - 1)];
    expect_f32("y (h_ring)", n, platform, y, want);
    free(want);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(prev);
  pld_tensor_destroy(pair);
  pld_tensor_destroy(w);
  pld_tensor_destroy(y);
  return st;
}

static void run_ring(int n, const char *platform) {
  assert_ok(ring_case(n, platform, n, n - 1, 2 * n, n - 1, 1));
}

static void test_expressions_of_host_names(void **state) {
  (void)state;
  over_worlds(run_ring);
  /* One off either way, for each expression; NR = 4. */
  assert_fails_with(ring_case(4, "a2a3sim", 4, 3, 8, 5, 0), PLD_ERR_ARG,
                    "pld_compile: h_ring: parameter 'w' (4 of 5): expected "
                    "FP32[NR - 1], got FP32[5]: dimension 0 is NR - 1 = 3 "
                    "(NR = 4)");
  assert_fails_with(ring_case(4, "a5sim", 4, 3, 8, 2, 0), PLD_ERR_ARG,
                    "parameter 'w' (4 of 5): expected FP32[NR - 1], got "
                    "FP32[2]: dimension 0 is NR - 1 = 3 (NR = 4)");
  assert_fails_with(ring_case(4, "a2a3sim", 4, 4, 8, 3, 0), PLD_ERR_ARG,
                    "pld_compile: h_ring: parameter 'prev' (2 of 5): "
                    "expected FP32[NR - 1, EC], got FP32[4, 8]: dimension 0 "
                    "is NR - 1 = 3 (NR = 4)");
  assert_fails_with(ring_case(4, "a2a3sim", 4, 3, 7, 3, 0), PLD_ERR_ARG,
                    "parameter 'pair' (3 of 5): expected FP32[NR * 2, EC], "
                    "got FP32[7, 8]: dimension 0 is NR * 2 = 8 (NR = 4)");
  assert_fails_with(ring_case(4, "a5sim", 4, 3, 9, 3, 0), PLD_ERR_ARG,
                    "got FP32[9, 8]: dimension 0 is NR * 2 = 8 (NR = 4)");
  /* NR = 1: NR - 1 is no size. */
  assert_fails_with(ring_case(1, "a2a3sim", 1, 1, 2, 1, 0), PLD_ERR_ARG,
                    "pld_compile: h_ring: parameter 'prev' (2 of 5): "
                    "dimension 0 is the shape expression NR - 1 = 0 (NR = "
                    "1): a dimension must be > 0");
}

/* y: [NR - 4]: exactly 1 row at NR = 5, none at 4, -1 at 3. */
PLD_DEVICE(d_nop, cpu, PLD_IN(x, FP32, L)) {
  (void)cpu;
  (void)x;
}
PLD_HOST(h_minus, h, PLD_IN(x, FP32, NR, EC), PLD_IN(y, FP32, NR - 4, EC)) {
  (void)y;
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_nop, r, pld_slice(h, x, r));
}

static int minus_case(int64_t nr, int64_t y_rows) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x = ints(1, PLD_SHAPE(nr, EC)), y = ints(2, PLD_SHAPE(y_rows, EC));
  int st = compile_only(h_minus, &cfg, PLD_ARGS(x, y));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void test_expression_at_most_zero(void **state) {
  (void)state;
  assert_ok(minus_case(5, 1));
  assert_ok(minus_case(6, 2));
  assert_fails_with(minus_case(5, 2), PLD_ERR_ARG,
                    "pld_compile: h_minus: parameter 'y' (2 of 2): expected "
                    "FP32[NR - 4, EC], got FP32[2, 8]: dimension 0 is NR - 4 "
                    "= 1 (NR = 5)");
  assert_fails_with(minus_case(4, 1), PLD_ERR_ARG,
                    "pld_compile: h_minus: parameter 'y' (2 of 2): dimension "
                    "0 is the shape expression NR - 4 = 0 (NR = 4): a "
                    "dimension must be > 0");
  assert_fails_with(minus_case(3, 1), PLD_ERR_ARG,
                    "dimension 0 is the shape expression NR - 4 = -1 (NR = "
                    "3): a dimension must be > 0");
}

/* One generic program at every level: the host's XR, XC, the device
 * function's M, N (per dispatch) and each kernel's M, N (per launch).
 *   diff    = x[1:] - x[:-1]            [M - 1, N]
 *   stack   = x over -x                 [M * 2, N]
 *   quarter = 3 x[:, :N/4]              [M, N / 4]
 *   odd     = x[0::2, :N%3+1] + 1       [(M + 1) / 2, N % 3 + 1] */
PLD_DYNAMIC(XR);
PLD_DYNAMIC(XC);

/* y before x: expressions wait for every plain name of the call. */
PLD_KERNEL(k_diff, k, PLD_OUT(y, FP32, M - 1, N), PLD_IN(x, FP32, M, N)) {
  int32_t m = (int32_t)pld_tensor_dim(x, 0), n = (int32_t)pld_tensor_dim(x, 1);
  pld_tile *lo = pld_load(k, x, 0, 0, m - 1, n);
  pld_tile *hi = pld_load(k, x, 1, 0, m - 1, n);
  pld_sub(k, hi, hi, lo);
  pld_store(k, hi, y, 0, 0);
}
PLD_KERNEL(k_stack, k, PLD_IN(x, FP32, M, N), PLD_OUT(y, FP32, M * 2, N)) {
  int32_t m = (int32_t)pld_tensor_dim(x, 0), n = (int32_t)pld_tensor_dim(x, 1);
  pld_tile *t = pld_load(k, x, 0, 0, m, n);
  pld_store(k, t, y, 0, 0);
  pld_neg(k, t, t);
  pld_store(k, t, y, m, 0);
}
PLD_KERNEL(k_quarter, k, PLD_IN(x, FP32, M, N), PLD_OUT(y, FP32, M, N / 4)) {
  int32_t m = (int32_t)pld_tensor_dim(x, 0), n = (int32_t)pld_tensor_dim(x, 1);
  pld_tile *t = pld_load(k, x, 0, 0, m, n / 4);
  pld_muls(k, t, t, 3.0);
  pld_store(k, t, y, 0, 0);
}
PLD_KERNEL(k_odd, k, PLD_IN(x, FP32, M, N),
           PLD_OUT(y, FP32, (M + 1) / 2, N % 3 + 1)) {
  int32_t m = (int32_t)pld_tensor_dim(x, 0), n = (int32_t)pld_tensor_dim(x, 1);
  for (int32_t i = 0; i < (m + 1) / 2; i++) {
    pld_tile *t = pld_load(k, x, 2 * i, 0, 1, n % 3 + 1);
    pld_adds(k, t, t, 1.0);
    pld_store(k, t, y, i, 0);
    pld_tile_free(k, t);
  }
}

#define SHAPES_LAUNCHES                                                        \
  pld_launch(cpu, k_diff, 1, diff, x);                                         \
  pld_launch(cpu, k_stack, 1, x, stack);                                       \
  pld_launch(cpu, k_quarter, 1, x, quarter);                                   \
  pld_launch(cpu, k_odd, 1, x, odd)

PLD_DEVICE(d_shapes, cpu, PLD_IN(x, FP32, M, N), PLD_OUT(diff, FP32, M - 1, N),
           PLD_OUT(stack, FP32, M * 2, N), PLD_OUT(quarter, FP32, M, N / 4),
           PLD_OUT(odd, FP32, (M + 1) / 2, N % 3 + 1)) {
  SHAPES_LAUNCHES;
}

/* The host's own names for each output (no expressions): d_loose checks
 * nothing beyond them, so only the launches check the expressions. */
PLD_DYNAMIC(DR);
PLD_DYNAMIC(DC);
PLD_DYNAMIC(SR);
PLD_DYNAMIC(SC);
PLD_DYNAMIC(QR);
PLD_DYNAMIC(QC);
PLD_DYNAMIC(OR);
PLD_DYNAMIC(OC);
PLD_DEVICE(d_loose, cpu, PLD_IN(x, FP32, XR, XC), PLD_OUT(diff, FP32, DR, DC),
           PLD_OUT(stack, FP32, SR, SC), PLD_OUT(quarter, FP32, QR, QC),
           PLD_OUT(odd, FP32, OR, OC)) {
  SHAPES_LAUNCHES;
}

#define SHAPES_DISPATCH(dev)                                                   \
  for (int r = 0; r < pld_world_size(h); r++)                                  \
  pld_dispatch(h, dev, r, pld_slice(h, x, r), pld_slice(h, diff, r),           \
               pld_slice(h, stack, r), pld_slice(h, quarter, r),               \
               pld_slice(h, odd, r))

/* Expressions checked by pld_compile (h_shapes), at dispatch (h_loose_dev)
 * and at launch (h_loose_kern). */
PLD_HOST(h_shapes, h, PLD_IN(x, FP32, NR, XR, XC),
         PLD_OUT(diff, FP32, NR, XR - 1, XC),
         PLD_OUT(stack, FP32, NR, XR * 2, XC),
         PLD_OUT(quarter, FP32, NR, XR, XC / 4),
         PLD_OUT(odd, FP32, NR, (XR + 1) / 2, XC % 3 + 1)) {
  SHAPES_DISPATCH(d_shapes);
}
PLD_HOST(h_loose_dev, h, PLD_IN(x, FP32, NR, XR, XC),
         PLD_OUT(diff, FP32, NR, DR, DC), PLD_OUT(stack, FP32, NR, SR, SC),
         PLD_OUT(quarter, FP32, NR, QR, QC), PLD_OUT(odd, FP32, NR, OR, OC)) {
  SHAPES_DISPATCH(d_shapes);
}
PLD_HOST(h_loose_kern, h, PLD_IN(x, FP32, NR, XR, XC),
         PLD_OUT(diff, FP32, NR, DR, DC), PLD_OUT(stack, FP32, NR, SR, SC),
         PLD_OUT(quarter, FP32, NR, QR, QC), PLD_OUT(odd, FP32, NR, OR, OC)) {
  SHAPES_DISPATCH(d_loose);
}

/* The outputs' shapes for x [xr, xc] (the expressions in C), then `delta`
 * added to dimension `dim` (1 rows, 2 columns) of output `which` (0 diff,
 * 1 stack, 2 quarter, 3 odd; -1 none).  Compiles; run 1: then runs and
 * checks the results; run 2: pld_run instead. */
static int shapes_case(pld_host_fn fn, int n, const char *platform, int64_t xr,
                       int64_t xc, int which, int dim, int64_t delta, int run) {
  pld_config cfg = config_on(n, platform);
  int64_t sh[4][3] = {{n, xr - 1 > 0 ? xr - 1 : 1, xc},
                      {n, xr * 2, xc},
                      {n, xr, xc / 4},
                      {n, (xr + 1) / 2, xc % 3 + 1}};
  if (which >= 0)
    sh[which][dim] += delta;
  pld_tensor x = ints(7, PLD_SHAPE(n, xr, xc)), o[4];
  for (int i = 0; i < 4; i++)
    o[i] = out(3, sh[i]);
  pld_program *p = NULL;
  int st = run == 2
               ? pld_run(fn, &cfg, PLD_ARGS(x, o[0], o[1], o[2], o[3]))
               : pld_compile(fn, &cfg, PLD_ARGS(x, o[0], o[1], o[2], o[3]), &p);
  if (st == PLD_OK && run == 1) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, o[0], o[1], o[2], o[3])));
    const float *xs = pld_tensor_data(x);
    float *want[4];
    for (int i = 0; i < 4; i++)
      want[i] = want_of(o[i]);
    const int64_t q = xc / 4, oc = xc % 3 + 1, orow = (xr + 1) / 2;
    for (int r = 0; r < n; r++) {
      const float *xr_ = xs + r * xr * xc;
      for (int64_t i = 0; i < xr; i++)
        for (int64_t j = 0; j < xc; j++) {
          if (i + 1 < xr)
            want[0][(r * (xr - 1) + i) * xc + j] =
                xr_[(i + 1) * xc + j] - xr_[i * xc + j];
          want[1][(r * 2 * xr + i) * xc + j] = xr_[i * xc + j];
          want[1][(r * 2 * xr + xr + i) * xc + j] = -xr_[i * xc + j];
          if (j < q)
            want[2][(r * xr + i) * q + j] = 3.0f * xr_[i * xc + j];
          if (i % 2 == 0 && j < oc)
            want[3][(r * orow + i / 2) * oc + j] = xr_[i * xc + j] + 1.0f;
        }
    }
    static const char *const names[4] = {"diff", "stack", "quarter", "odd"};
    for (int i = 0; i < 4; i++) {
      expect_f32(names[i], n, platform, o[i], want[i]);
      free(want[i]);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  for (int i = 0; i < 4; i++)
    pld_tensor_destroy(o[i]);
  return st;
}

static void run_shapes(int n, const char *platform) {
  static const int64_t xs[][2] = {{5, 8}, {3, 12}, {7, 16}, {9, 4}};
  const pld_host_fn fns[] = {h_shapes, h_loose_dev, h_loose_kern};
  for (size_t s = 0; s < sizeof xs / sizeof xs[0]; s++)
    for (int f = 0; f < 3; f++)
      assert_ok(
          shapes_case(fns[f], n, platform, xs[s][0], xs[s][1], -1, 0, 0, 1));
}

static void test_expressions_run_at_every_level(void **state) {
  (void)state;
  over_worlds(run_shapes);
}

/* A failing case of h_shapes (host), h_loose_dev (dispatch) and
 * h_loose_kern (launch): level 0, 1, 2. */
static int shapes_fail(int level, int64_t xr, int64_t xc, int which, int dim,
                       int64_t delta) {
  const pld_host_fn fns[] = {h_shapes, h_loose_dev, h_loose_kern};
  return shapes_case(fns[level], 2, level == 1 ? "a5sim" : "a2a3sim", xr, xc,
                     which, dim, delta, 0);
}

static void test_expression_errors_at_the_host(void **state) {
  (void)state;
  const char *h = "pld_compile: h_shapes: ";
  assert_fails_with(shapes_fail(0, 5, 8, 0, 1, 1), PLD_ERR_ARG, h,
                    "parameter 'diff' (2 of 5): expected FP32[NR, XR - 1, "
                    "XC], got FP32[2, 5, 8]: dimension 1 is XR - 1 = 4 (XR = "
                    "5)");
  assert_fails_with(shapes_fail(0, 5, 8, 0, 1, -1), PLD_ERR_ARG, h,
                    "got FP32[2, 3, 8]: dimension 1 is XR - 1 = 4 (XR = 5)");
  assert_fails_with(shapes_fail(0, 5, 8, 1, 1, -1), PLD_ERR_ARG, h,
                    "parameter 'stack' (3 of 5): expected FP32[NR, XR * 2, "
                    "XC], got FP32[2, 9, 8]: dimension 1 is XR * 2 = 10 (XR "
                    "= 5)");
  assert_fails_with(shapes_fail(0, 5, 8, 3, 2, 1), PLD_ERR_ARG, h,
                    "parameter 'odd' (5 of 5): expected FP32[NR, (XR + 1) / "
                    "2, XC % 3 + 1], got FP32[2, 3, 4]: dimension 2 is XC % "
                    "3 + 1 = 3 (XC = 8)");
  /* Divisible (12, 4 above) or not. */
  assert_fails_with(shapes_fail(0, 5, 10, -1, 0, 0), PLD_ERR_ARG, h,
                    "parameter 'quarter' (4 of 5): dimension 2 is the shape "
                    "expression XC / 4 (XC = 10): 10 / 4 does not divide");
  assert_fails_with(shapes_fail(0, 5, 13, -1, 0, 0), PLD_ERR_ARG, h,
                    "(XC = 13): 13 / 4 does not divide");
  assert_fails_with(shapes_fail(0, 4, 8, -1, 0, 0), PLD_ERR_ARG, h,
                    "parameter 'odd' (5 of 5): dimension 1 is the shape "
                    "expression (XR + 1) / 2 (XR = 4): 5 / 2 does not "
                    "divide");
  assert_fails_with(shapes_fail(0, 1, 8, -1, 0, 0), PLD_ERR_ARG, h,
                    "parameter 'diff' (2 of 5): dimension 1 is the shape "
                    "expression XR - 1 = 0 (XR = 1): a dimension must be > "
                    "0");
}

static void test_expression_errors_at_dispatch(void **state) {
  (void)state;
  const char *h = "pld_dispatch to rank 0 (in h_loose_dev): d_shapes: ";
  assert_fails_with(shapes_fail(1, 5, 8, 0, 1, 1), PLD_ERR_ARG, h,
                    "parameter 'diff' (2 of 5): expected FP32[M - 1, N], got "
                    "FP32[5, 8]: dimension 0 is M - 1 = 4 (M = 5)");
  assert_fails_with(shapes_fail(1, 5, 8, 0, 1, -1), PLD_ERR_ARG, h,
                    "got FP32[3, 8]: dimension 0 is M - 1 = 4 (M = 5)");
  assert_fails_with(shapes_fail(1, 5, 8, 1, 1, 1), PLD_ERR_ARG, h,
                    "parameter 'stack' (3 of 5): expected FP32[M * 2, N], "
                    "got FP32[11, 8]: dimension 0 is M * 2 = 10 (M = 5)");
  assert_fails_with(shapes_fail(1, 7, 16, 3, 1, -1), PLD_ERR_ARG, h,
                    "parameter 'odd' (5 of 5): expected FP32[(M + 1) / 2, N "
                    "% 3 + 1], got FP32[3, 2]: dimension 0 is (M + 1) / 2 = "
                    "4 (M = 7)");
  assert_fails_with(shapes_fail(1, 5, 10, -1, 0, 0), PLD_ERR_ARG, h,
                    "parameter 'quarter' (4 of 5): dimension 1 is the shape "
                    "expression N / 4 (N = 10): 10 / 4 does not divide");
  assert_fails_with(shapes_fail(1, 6, 8, -1, 0, 0), PLD_ERR_ARG, h,
                    "parameter 'odd' (5 of 5): dimension 0 is the shape "
                    "expression (M + 1) / 2 (M = 6): 7 / 2 does not divide");
  assert_fails_with(shapes_fail(1, 1, 8, -1, 0, 0), PLD_ERR_ARG, h,
                    "parameter 'diff' (2 of 5): dimension 0 is the shape "
                    "expression M - 1 = 0 (M = 1): a dimension must be > 0");
}

static void test_expression_errors_at_launch(void **state) {
  (void)state;
  const char *h = "pld_launch (rank 0, device 0, in d_loose): ";
  /* pld_compile traces every device function, so a launch that cannot
   * run fails there, before any device starts; pld_run says the same. */
  assert_fails_with(shapes_case(h_loose_kern, 3, "a5sim", 5, 8, 0, 1, 1, 2),
                    PLD_ERR_ARG,
                    "pld_launch (rank 0, device 7, in d_loose): k_diff: "
                    "parameter 'y' (1 of 2): expected FP32[M - 1, N], got "
                    "FP32[5, 8]: dimension 0 is M - 1 = 4 (M = 5)");
  assert_no_children();
  assert_fails_with(shapes_fail(2, 5, 8, 0, 1, 1), PLD_ERR_ARG, h,
                    "k_diff: parameter 'y' (1 of 2): expected FP32[M - 1, N], "
                    "got FP32[5, 8]: dimension 0 is M - 1 = 4 (M = 5)");
  assert_fails_with(shapes_fail(2, 5, 8, 1, 1, -1), PLD_ERR_ARG, h,
                    "k_stack: parameter 'y' (2 of 2): expected FP32[M * 2, "
                    "N], got FP32[9, 8]: dimension 0 is M * 2 = 10 (M = 5)");
  assert_fails_with(shapes_fail(2, 3, 12, 2, 2, 1), PLD_ERR_ARG, h,
                    "k_quarter: parameter 'y' (2 of 2): expected FP32[M, N / "
                    "4], got FP32[3, 4]: dimension 1 is N / 4 = 3 (N = 12)");
  assert_fails_with(shapes_fail(2, 5, 10, -1, 0, 0), PLD_ERR_ARG, h,
                    "k_quarter: parameter 'y' (2 of 2): dimension 1 is the "
                    "shape expression N / 4 (N = 10): 10 / 4 does not "
                    "divide");
  assert_fails_with(shapes_fail(2, 4, 8, -1, 0, 0), PLD_ERR_ARG, h,
                    "k_odd: parameter 'y' (2 of 2): dimension 0 is the shape "
                    "expression (M + 1) / 2 (M = 4): 5 / 2 does not divide");
  assert_fails_with(shapes_fail(2, 1, 8, -1, 0, 0), PLD_ERR_ARG, h,
                    "k_diff: parameter 'y' (1 of 2): dimension 0 is the shape "
                    "expression M - 1 = 0 (M = 1): a dimension must be > 0");
}

/* Names in expressions: a dynamic name no parameter binds alone, an enum
 * constant beside dynamic names, at the host, at dispatch and at launch;
 * the same expressions with numbers work. */
PLD_HOST(h_unbound, h, PLD_IN(x, FP32, NR, EC), PLD_IN(y, FP32, Q * 2, EC)) {
  (void)y;
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_nop, r, pld_slice(h, x, r));
}
/* Unformatted: clang-format writes the product of two names as a pointer
 * declaration, TILE *NR, and messages quote the text as written. */
/* clang-format off */
PLD_HOST(h_beside, h, PLD_IN(x, FP32, NR, EC), PLD_IN(y, FP32, TILE * NR, EC)) {
  (void)y;
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_nop, r, pld_slice(h, x, r));
}
/* clang-format on */
PLD_HOST(h_eight, h, PLD_IN(x, FP32, NR, EC), PLD_IN(y, FP32, 8 * NR, EC)) {
  (void)y;
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_nop, r, pld_slice(h, x, r));
}

/* Kernels whose y is [TILE + L] (refused), [8 + L] (fine) or [Q + 1]: Q is
 * bound by the device function that launches it, which is another call. */
PLD_KERNEL(k_beside, k, PLD_IN(x, FP32, L), PLD_IN(y, FP32, TILE + L)) {
  (void)k;
  (void)x;
  (void)y;
}
PLD_KERNEL(k_eight, k, PLD_IN(x, FP32, L), PLD_IN(y, FP32, 8 + L),
           PLD_OUT(z, FP32, 8 + L)) {
  int32_t l = (int32_t)pld_tensor_dim(x, 0);
  pld_tile *t = pld_load(k, y, 0, 0, 1, 8 + l);
  pld_muls(k, t, t, 2.0);
  pld_store(k, t, z, 0, 0);
}
PLD_KERNEL(k_caller_q, k, PLD_IN(y, FP32, Q + 1)) {
  (void)k;
  (void)y;
}
PLD_DEVICE(d_unbound, cpu, PLD_IN(x, FP32, L), PLD_IN(y, FP32, Q + L)) {
  (void)cpu;
  (void)x;
  (void)y;
}
PLD_DEVICE(d_ternary, cpu, PLD_IN(x, FP32, L), PLD_IN(y, FP32, L > 4 ? L : 8)) {
  (void)cpu;
  (void)x;
  (void)y;
}
PLD_DEVICE(d_names, cpu, PLD_IN(x, FP32, L), PLD_IN(y, FP32, Q),
           PLD_OUT(z, FP32, Q), PLD_SCALAR(mode, INT32)) {
  if (mode == 0)
    pld_launch(cpu, k_eight, 1, x, y, z);
  else if (mode == 1)
    pld_launch(cpu, k_beside, 1, x, y);
  else
    pld_launch(cpu, k_caller_q, 1, y);
}
PLD_HOST(h_names, h, PLD_IN(x, FP32, NR, EC), PLD_IN(y, FP32, NR, XC),
         PLD_OUT(z, FP32, NR, XC), PLD_SCALAR(mode, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    if (mode == 3)
      pld_dispatch(h, d_unbound, r, pld_slice(h, x, r), pld_slice(h, y, r));
    else if (mode == 4)
      pld_dispatch(h, d_ternary, r, pld_slice(h, x, r), pld_slice(h, y, r));
    else
      pld_dispatch(h, d_names, r, pld_slice(h, x, r), pld_slice(h, y, r),
                   pld_slice(h, z, r), mode);
}

static int names_host(pld_host_fn fn, int64_t y_rows) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x = ints(1, PLD_SHAPE(2, EC)), y = ints(2, PLD_SHAPE(y_rows, EC));
  int st = compile_only(fn, &cfg, PLD_ARGS(x, y));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static int names_case(int mode, int n, const char *platform, int64_t yc,
                      int run) {
  pld_config cfg = config_on(n, platform);
  pld_tensor x = ints(1, PLD_SHAPE(n, EC)), y = ints(2, PLD_SHAPE(n, yc));
  pld_tensor z = out(PLD_SHAPE(n, yc));
  pld_program *p = NULL;
  int st = pld_compile(h_names, &cfg, PLD_ARGS(x, y, z, mode), &p);
  if (st == PLD_OK && run) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y, z, mode)));
    expect_doubled("z (k_eight)", n, platform, z, y);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
  return st;
}

static void run_names(int n, const char *platform) {
  assert_ok(names_case(0, n, platform, 16, 1));
}

static void test_expression_names(void **state) {
  (void)state;
  /* The host. */
  /* Q is solved from y: 2, from 4 rows; 5 rows have no whole Q. */
  assert_ok(names_host(h_unbound, 4));
  assert_fails_with(names_host(h_unbound, 5), PLD_ERR_ARG,
                    "pld_compile: h_unbound: parameter 'y' (2 of 2): "
                    "dimension 0 is the shape expression Q * 2 = 5 (the "
                    "argument's size), which no whole Q > 0 solves");
  assert_fails_with(names_host(h_beside, 16), PLD_ERR_ARG,
                    "pld_compile: h_beside: parameter 'y' (2 of 2): "
                    "dimension 0 is the shape expression TILE * NR, but TILE "
                    "in it is a constant beside dynamic dimensions: write "
                    "constants in shape expressions as numbers");
  assert_ok(names_host(h_eight, 16));
  assert_fails_with(names_host(h_eight, 17), PLD_ERR_ARG,
                    "pld_compile: h_eight: parameter 'y' (2 of 2): expected "
                    "FP32[8 * NR, EC], got FP32[17, 8]: dimension 0 is 8 * "
                    "NR = 16 (NR = 2)");
  assert_fails_with(names_host(h_eight, 15), PLD_ERR_ARG,
                    "got FP32[15, 8]: dimension 0 is 8 * NR = 16 (NR = 2)");
  /* The dispatch. */
  /* The dispatch: Q + L = 12 with L = 8 solves Q = 4; Q + 8 = 8 has no
   * Q > 0. */
  assert_ok(names_case(3, 2, "a5sim", 12, 0));
  assert_fails_with(names_case(3, 2, "a5sim", 8, 0), PLD_ERR_ARG,
                    "pld_dispatch to rank 0 (in h_names): d_unbound: "
                    "parameter 'y' (2 of 2): dimension 0 is the shape "
                    "expression Q + L = 8 (the argument's size), which no "
                    "whole Q > 0 solves");
  /* C beyond shape expressions around a dynamic name: refused. */
  assert_fails_with(names_case(4, 2, "a2a3sim", 16, 0), PLD_ERR_ARG,
                    "pld_dispatch to rank 0 (in h_names): d_ternary: "
                    "parameter 'y' (2 of 2): dimension 0 is the shape "
                    "expression L > 4 ? L : 8 (L = 8): '>' is not part of a "
                    "shape expression");
  /* The launch: numbers work, exactly. */
  over_worlds(run_names);
  assert_fails_with(names_case(0, 2, "a2a3sim", 15, 0), PLD_ERR_ARG,
                    "pld_launch (rank 0, device 0, in d_names): k_eight: "
                    "parameter 'y' (2 of 3): expected FP32[8 + L], got "
                    "FP32[15]: dimension 0 is 8 + L = 16 (L = 8)");
  assert_fails_with(names_case(0, 2, "a2a3sim", 17, 0), PLD_ERR_ARG,
                    "k_eight: parameter 'y' (2 of 3): expected FP32[8 + L], "
                    "got FP32[17]: dimension 0 is 8 + L = 16 (L = 8)");
  assert_fails_with(names_case(1, 2, "a2a3sim", 16, 0), PLD_ERR_ARG,
                    "pld_launch (rank 0, device 0, in d_names): k_beside: "
                    "parameter 'y' (2 of 2): dimension 0 is the shape "
                    "expression TILE + L, but TILE in it is a constant beside "
                    "dynamic dimensions: write constants in shape "
                    "expressions as numbers");
  /* The kernel's Q is its own (the caller's Q = 16 is another call's):
   * solved, 15. */
  assert_ok(names_case(2, 2, "a5sim", 16, 0));
}

/* Names solved from shape expressions (the original's composite shape
 * dimension): every parameter of the host function is [NR, MS * 2, EC],
 * MS standing alone nowhere, and MS = 64 is solved from 128 rows,
 * program-wide; the device function's [MS * 2, EC] then checks against
 * it, and the kernel's [KS * 4, EC] solves its own KS = 32 per launch. */
PLD_DYNAMIC(MS);
PLD_DYNAMIC(KS);
PLD_KERNEL(k_solved, k, PLD_IN(x, FP32, KS * 4, EC),
           PLD_OUT(y, FP32, KS * 4, EC)) {
  const int32_t rows = (int32_t)pld_tensor_dim(x, 0);
  pld_tile *t = pld_load(k, x, 0, 0, rows, EC);
  pld_muls(k, t, t, 2.0f);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_solved, cpu, PLD_IN(x, FP32, MS * 2, EC),
           PLD_OUT(y, FP32, MS * 2, EC)) {
  pld_launch(cpu, k_solved, 1, x, y);
}
PLD_HOST(h_solved, h, PLD_IN(x, FP32, NR, MS * 2, EC),
         PLD_OUT(y, FP32, NR, MS * 2, EC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_solved, r, pld_slice(h, x, r), pld_slice(h, y, r));
}
/* Rank r runs d_nop on row r of x. */
static void nop_each_rank(pld_host h, pld_tensor x) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_nop, r, pld_slice(h, x, r));
}

/* Two parameters disagreeing on MS; an expression not linear in MS; two
 * unknown names in one expression.  (Unformatted: clang-format writes
 * MS * MS as a pointer declaration.) */
/* clang-format off */
PLD_HOST(h_disagree, h, PLD_IN(x, FP32, MS * 2, EC),
         PLD_IN(y, FP32, MS * 3, EC)) {
  (void)y;
  nop_each_rank(h, x);
}
PLD_HOST(h_square, h, PLD_IN(x, FP32, MS * MS, EC)) {
  nop_each_rank(h, x);
}
PLD_HOST(h_two_unknown, h, PLD_IN(x, FP32, MS + KS, EC)) {
  nop_each_rank(h, x);
}
/* clang-format on */

static void run_solved(int n, const char *platform) {
  pld_config cfg = config_on(n, platform);
  const int64_t shape[] = {n, 128, EC};
  pld_tensor x = ints(3, 3, shape), y = out(3, shape);
  pld_program *p = NULL;
  assert_ok(pld_compile(h_solved, &cfg, PLD_ARGS(x, y), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
  expect_doubled("y (h_solved)", n, platform, y, x);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* fn compiled with a tensor [rows[i], EC] per parameter (at most 2). */
static int solved_host(pld_host_fn fn, int nparams, int64_t rows0,
                       int64_t rows1) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x = ints(1, 2, (const int64_t[]){rows0, EC});
  pld_tensor y = ints(2, 2, (const int64_t[]){rows1, EC});
  int st = nparams == 1 ? compile_only(fn, &cfg, PLD_ARGS(x))
                        : compile_only(fn, &cfg, PLD_ARGS(x, y));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void test_names_solved_from_expressions(void **state) {
  (void)state;
  over_worlds(run_solved);
  /* 129 rows: no whole MS. */
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t odd[] = {2, 129, EC};
  pld_tensor x = ints(1, 3, odd), y = out(3, odd);
  assert_fails_with(compile_only(h_solved, &cfg, PLD_ARGS(x, y)), PLD_ERR_ARG,
                    "pld_compile: h_solved: parameter 'x' (1 of 2): "
                    "dimension 1 is the shape expression MS * 2 = 129 (the "
                    "argument's size), which no whole MS > 0 solves");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  /* Agreeing and disagreeing parameters: the message names both. */
  assert_ok(solved_host(h_disagree, 2, 128, 192));
  /* The least solution, MS = 1, is one. */
  assert_ok(solved_host(h_disagree, 2, 2, 3));
  assert_fails_with(solved_host(h_disagree, 2, 128, 190), PLD_ERR_ARG,
                    "pld_compile: h_disagree: parameter 'y' (2 of 2): "
                    "expected FP32[MS * 3, EC], got FP32[190, 8]: dimension "
                    "0 is MS * 3 = 192 (MS = 64, solved from parameter 'x' "
                    "of h_disagree (dimension 0 is MS * 2 = 128))");
  assert_fails_with(solved_host(h_square, 1, 64, 1), PLD_ERR_ARG,
                    "pld_compile: h_square: parameter 'x' (1 of 1): "
                    "dimension 0 is the shape expression MS * MS, but MS in "
                    "it is no dynamic dimension bound by a parameter where it "
                    "stands alone, and is solved only from an expression of "
                    "the form a * MS + b");
  assert_fails_with(solved_host(h_two_unknown, 1, 64, 1), PLD_ERR_ARG,
                    "pld_compile: h_two_unknown: parameter 'x' (1 of 1): "
                    "dimension 0 is the shape expression MS + KS, but MS in "
                    "it is no dynamic dimension bound by a parameter where it "
                    "stands alone (of this call, or of the host function)");
}

/* Expressions of constants alone are fixed sizes, at every level, also
 * those of C beyond shape expressions (ternaries, shifts, sizeof). */
PLD_KERNEL(k_vec_scale, k, PLD_IN(x, FP32, L), PLD_OUT(y, FP32, L),
           PLD_SCALAR(s, FP32)) {
  pld_tile *t = pld_load(k, x, 0, 0, 1, (int32_t)pld_tensor_dim(x, 0));
  pld_muls(k, t, t, s);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_const, cpu, PLD_IN(x, FP32, TILE * 2),
           PLD_OUT(y, FP32, (TILE + 8) * 1), PLD_SCALAR(s, FP32)) {
  pld_launch(cpu, k_vec_scale, 1, x, y, s);
}
PLD_DEVICE(d_cexpr, cpu, PLD_IN(x, FP32, 1 << 4),
           PLD_OUT(y, FP32, sizeof(float) * 4), PLD_SCALAR(s, FP32)) {
  pld_launch(cpu, k_vec_scale, 1, x, y, s);
}
PLD_HOST(h_const, h, PLD_IN(x, FP32, NR, TILE * 2),
         PLD_OUT(y, FP32, NR, TILE > 4 ? 16 : 8)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, r % 2 ? d_cexpr : d_const, r, pld_slice(h, x, r),
                 pld_slice(h, y, r), (float)(r + 1));
}

static int const_case(int n, const char *platform, int64_t xc, int64_t yc,
                      int run) {
  pld_config cfg = config_on(n, platform);
  pld_tensor x = ints(5, PLD_SHAPE(n, xc)), y = out(PLD_SHAPE(n, yc));
  pld_program *p = NULL;
  int st = pld_compile(h_const, &cfg, PLD_ARGS(x, y), &p);
  if (st == PLD_OK && run) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    assert_scaled(x, y);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void run_const(int n, const char *platform) {
  assert_ok(const_case(n, platform, 16, 16, 1));
}

static void test_constant_expression_is_a_fixed_size(void **state) {
  (void)state;
  over_worlds(run_const);
  assert_fails_with(const_case(2, "a2a3sim", 15, 16, 0), PLD_ERR_ARG,
                    "pld_compile: h_const: parameter 'x' (1 of 2): expected "
                    "FP32[NR, TILE * 2], got FP32[2, 15]: dimension 1 is TILE "
                    "* 2 = 16");
  assert_fails_with(const_case(2, "a5sim", 16, 17, 0), PLD_ERR_ARG,
                    "pld_compile: h_const: parameter 'y' (2 of 2): expected "
                    "FP32[NR, TILE > 4 ? 16 : 8], got FP32[2, 17]");
}

/* An expression of constants whose value is no size is refused as a
 * number would be, naming it. */
PLD_HOST(h_const_zero, h, PLD_IN(x, FP32, NR, TILE - 8)) { (void)h; }

static void test_constant_expression_not_a_size(void **state) {
  (void)state;
  pld_config cfg = config_on(2, "a2a3sim");
  pld_tensor x = ints(5, PLD_SHAPE(2, 1));
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_const_zero, &cfg, PLD_ARGS(x), &p),
                    PLD_ERR_ARG,
                    "pld_compile: h_const_zero: parameter 'x' (1 of 1): "
                    "declared dimension 1 (TILE - 8 = 0) must be > 0 or a "
                    "PLD_DYNAMIC name");
  assert_null(p);
  pld_tensor_destroy(x);
}

/* ======================================================================
 * 3. Window views with leading unit dimensions
 * ====================================================================== */

enum { SIZE = 16 };

/* x * s into the window through the kernel's view, back into y; info:
 * the device function's view (ndim, dim 0, dim 1), the kernel's, and the
 * rank and size of the window's domain. */
static void win_body(pld_core k, pld_tensor x, pld_window w, pld_tensor y,
                     pld_tensor info, int32_t dn, int64_t d0, int64_t d1,
                     float s) {
  int32_t l = (int32_t)pld_tensor_dim(x, 0);
  pld_tile *t = pld_load(k, x, 0, 0, 1, l);
  pld_muls(k, t, t, s);
  pld_store(k, t, pld_local(w), 0, 0);
  pld_store(k, pld_load(k, pld_local(w), 0, 0, 1, l), y, 0, 0);
  pld_comm comm = pld_window_comm(w);
  const double v[8] = {dn,
                       (double)d0,
                       (double)d1,
                       pld_tensor_ndim(pld_local(w)),
                       (double)pld_tensor_dim(pld_local(w), 0),
                       (double)pld_tensor_dim(pld_local(w), 1),
                       pld_rank(k, comm),
                       pld_nranks(k, comm)};
  for (int64_t i = 0; i < 8; i++)
    pld_write(k, info, PLD_AT(i), v[i]);
}

#define WIN_KERNEL_PARAMS(...)                                                 \
  PLD_IN(x, FP32, L), PLD_WINDOW(w, FP32, __VA_ARGS__), PLD_OUT(y, FP32, L),   \
      PLD_OUT(info, INT32, 8), PLD_SCALAR(dn, INT32), PLD_SCALAR(d0, INT64),   \
      PLD_SCALAR(d1, INT64), PLD_SCALAR(s, FP32)
PLD_KERNEL(k_win_1d, k, WIN_KERNEL_PARAMS(L)) {
  win_body(k, x, w, y, info, dn, d0, d1, s);
}
PLD_KERNEL(k_win_2d, k, WIN_KERNEL_PARAMS(1, L)) {
  win_body(k, x, w, y, info, dn, d0, d1, s);
}
PLD_KERNEL(k_win_2rows, k, PLD_WINDOW(w, FP32, 2, SIZE)) {
  (void)k;
  (void)w;
}

#define WIN_DEVICE_PARAMS(...)                                                 \
  PLD_IN(x, FP32, SIZE), PLD_WINDOW(w, FP32, __VA_ARGS__),                     \
      PLD_OUT(y, FP32, SIZE), PLD_OUT(info, INT32, 8), PLD_SCALAR(s, FP32)
#define WIN_LAUNCH(kernel)                                                     \
  pld_launch(cpu, kernel, 1, x, w, y, info, pld_tensor_ndim(pld_local(w)),     \
             pld_tensor_dim(pld_local(w), 0), pld_tensor_dim(pld_local(w), 1), \
             s)
/* Each device function launches the kernel of the other rank. */
PLD_DEVICE(d_win_2d, cpu, WIN_DEVICE_PARAMS(1, SIZE)) { WIN_LAUNCH(k_win_1d); }
PLD_DEVICE(d_win_1d, cpu, WIN_DEVICE_PARAMS(SIZE)) { WIN_LAUNCH(k_win_2d); }
PLD_DEVICE(d_win_2rows, cpu, WIN_DEVICE_PARAMS(2, SIZE)) {
  (void)cpu, (void)x, (void)w, (void)y, (void)info, (void)s;
}
PLD_DEVICE(d_win_bad_launch, cpu, WIN_DEVICE_PARAMS(SIZE)) {
  (void)x, (void)y, (void)info, (void)s;
  pld_launch(cpu, k_win_2rows, 1, w);
}

/* Plain tensors get no such leniency. */
PLD_KERNEL(k_plain_2d, k, PLD_IN(x, FP32, 1, SIZE)) {
  (void)k;
  (void)x;
}
PLD_DEVICE(d_plain_2d, cpu, PLD_IN(x, FP32, 1, SIZE)) {
  (void)cpu;
  (void)x;
}
PLD_DEVICE(d_plain_launch, cpu, PLD_IN(x, FP32, SIZE)) {
  pld_launch(cpu, k_plain_2d, 1, x);
}

/* Modes: which device function gets which view (see win_modes). */
PLD_HOST(h_win, h, PLD_IN(x, FP32, NR, SIZE), PLD_OUT(y, FP32, NR, SIZE),
         PLD_OUT(info, INT32, NR, 8), PLD_SCALAR(mode, INT32)) {
  pld_window_buf buf = {NULL};
  if (mode < 17)
    buf = pld_window_alloc(h, 2 * SIZE * sizeof(float));
  for (int r = 0; r < pld_world_size(h); r++) {
    pld_tensor xr = pld_slice(h, x, r), yr = pld_slice(h, y, r);
    pld_tensor ir = pld_slice(h, info, r);
    float s = (float)(r + 1);
    switch (mode) {
    case 0:
      pld_dispatch(h, d_win_2d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(SIZE)), yr, ir,
                   s);
      break;
    case 1:
      pld_dispatch(h, d_win_1d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(1, SIZE)), yr,
                   ir, s);
      break;
    case 2:
      pld_dispatch(h, d_win_1d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(1, 1, SIZE)), yr,
                   ir, s);
      break;
    case 3:
      pld_dispatch(h, d_win_2d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(1, SIZE)), yr,
                   ir, s);
      break;
    case 4:
      pld_dispatch(h, d_win_1d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(SIZE)), yr, ir,
                   s);
      break;
    case 10:
      pld_dispatch(h, d_win_1d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(2, SIZE)), yr,
                   ir, s);
      break;
    case 11:
      pld_dispatch(h, d_win_2rows, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(SIZE)), yr, ir,
                   s);
      break;
    case 12:
      pld_dispatch(h, d_win_1d, r, xr,
                   pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1, SIZE)), yr,
                   ir, s);
      break;
    case 13:
      pld_dispatch(h, d_win_2d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(2, 1, SIZE)), yr,
                   ir, s);
      break;
    case 14:
      pld_dispatch(h, d_win_1d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(1, SIZE / 2)),
                   yr, ir, s);
      break;
    case 15:
      pld_dispatch(h, d_win_2d, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(SIZE / 2)), yr,
                   ir, s);
      break;
    case 16:
      pld_dispatch(h, d_win_bad_launch, r, xr,
                   pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(SIZE)), yr, ir,
                   s);
      break;
    case 17:
      pld_dispatch(h, d_plain_2d, r, xr);
      break;
    case 18:
      pld_dispatch(h, d_plain_launch, r, xr);
      break;
    }
  }
}

static int win_case(int mode, int n, const char *platform, int run) {
  pld_config cfg = config_on(n, platform);
  pld_tensor x = ints(9, PLD_SHAPE(n, SIZE)), y = out(PLD_SHAPE(n, SIZE));
  pld_tensor info;
  assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){n, 8}, &info));
  int32_t *is = pld_tensor_data(info);
  for (int i = 0; i < n * 8; i++)
    is[i] = -7;
  pld_program *p = NULL;
  int st = pld_compile(h_win, &cfg, PLD_ARGS(x, y, info, mode), &p);
  if (st == PLD_OK && run) {
    /* Mode 0 and 3: the device function sees [1, SIZE] and its kernel
     * [SIZE]; the others the other way round. */
    const int dev2 = mode == 0 || mode == 3;
    for (int again = 0; again < 2; again++) {
      fill_ints(x, 20 + again);
      assert_ok(pld_program_run(p, PLD_ARGS(x, y, info, mode)));
      assert_scaled(x, y);
      for (int r = 0; r < n; r++) {
        const int32_t want[8] = {dev2 ? 2 : 1,
                                 dev2 ? 1 : SIZE,
                                 dev2 ? SIZE : 0,
                                 dev2 ? 1 : 2,
                                 dev2 ? SIZE : 1,
                                 dev2 ? 0 : SIZE,
                                 r,
                                 n};
        for (int i = 0; i < 8; i++)
          if (is[r * 8 + i] != want[i]) {
            print_error("mode %d (%d ranks, %s): rank %d: info[%d] = %d, "
                        "expected %d\n",
                        mode, n, platform, r, i, is[r * 8 + i], want[i]);
            fail();
          }
      }
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(info);
  return st;
}

static void run_win(int n, const char *platform) {
  for (int mode = 0; mode <= 4; mode++)
    assert_ok(win_case(mode, n, platform, 1));
}

/* [SIZE] for [1, SIZE] and [1, SIZE] (or [1, 1, SIZE]) for [SIZE], at the
 * dispatch and at the launch; the function sees its parameter's rank. */
static void test_window_leading_unit_dimensions(void **state) {
  (void)state;
  over_worlds(run_win);
}

static void test_window_other_differences_refused(void **state) {
  (void)state;
  const char *h = "pld_dispatch to rank 0 (in h_win): ";
  assert_fails_with(win_case(10, 2, "a2a3sim", 0), PLD_ERR_ARG, h,
                    "d_win_1d: parameter 'w' (2 of 5): expected FP32[SIZE], "
                    "got FP32[2, 16]");
  assert_fails_with(win_case(11, 2, "a5sim", 0), PLD_ERR_ARG, h,
                    "d_win_2rows: parameter 'w' (2 of 5): expected FP32[2, "
                    "SIZE], got FP32[16]");
  assert_fails_with(win_case(12, 2, "a2a3sim", 0), PLD_ERR_ARG, h,
                    "d_win_1d: parameter 'w' (2 of 5): expected FP32[SIZE], "
                    "got INT32[1, 16]");
  assert_fails_with(win_case(13, 2, "a5sim", 0), PLD_ERR_ARG, h,
                    "d_win_2d: parameter 'w' (2 of 5): expected FP32[1, "
                    "SIZE], got FP32[2, 1, 16]");
  assert_fails_with(win_case(14, 2, "a2a3sim", 0), PLD_ERR_ARG, h,
                    "d_win_1d: parameter 'w' (2 of 5): expected FP32[SIZE], "
                    "got FP32[1, 8]");
  assert_fails_with(win_case(15, 2, "a5sim", 0), PLD_ERR_ARG, h,
                    "d_win_2d: parameter 'w' (2 of 5): expected FP32[1, "
                    "SIZE], got FP32[8]");
  assert_fails_with(win_case(16, 2, "a2a3sim", 0), PLD_ERR_ARG,
                    "pld_launch (rank 0, device 0, in d_win_bad_launch): "
                    "k_win_2rows: parameter 'w' (1 of 1): expected FP32[2, "
                    "SIZE], got FP32[16]");
  /* Plain tensors: the rank must be the parameter's. */
  assert_fails_with(win_case(17, 2, "a5sim", 0), PLD_ERR_ARG, h,
                    "d_plain_2d: parameter 'x' (1 of 1): expected FP32[1, "
                    "SIZE], got FP32[16]");
  assert_fails_with(win_case(18, 2, "a2a3sim", 0), PLD_ERR_ARG,
                    "pld_launch (rank 0, device 0, in d_plain_launch): "
                    "k_plain_2d: parameter 'x' (1 of 1): expected FP32[1, "
                    "SIZE], got FP32[16]");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_generic_kernel_and_device_fn_at_two_shapes),
    cmocka_unit_test(test_call_shares_its_bindings),
    cmocka_unit_test(test_host_bound_name_is_program_wide),
    cmocka_unit_test(test_expressions_of_host_names),
    cmocka_unit_test(test_expression_at_most_zero),
    cmocka_unit_test(test_expressions_run_at_every_level),
    cmocka_unit_test(test_expression_errors_at_the_host),
    cmocka_unit_test(test_expression_errors_at_dispatch),
    cmocka_unit_test(test_expression_errors_at_launch),
    cmocka_unit_test(test_expression_names),
    cmocka_unit_test(test_names_solved_from_expressions),
    cmocka_unit_test(test_constant_expression_is_a_fixed_size),
    cmocka_unit_test(test_constant_expression_not_a_size),
    cmocka_unit_test(test_window_leading_unit_dimensions),
    cmocka_unit_test(test_window_other_differences_refused),
};

PLD_TEST_MAIN("shapes", tests)
