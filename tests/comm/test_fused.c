/* The fused GEMMs of pld/fused.h in whole runs on 2, 3 and 4 ranks (the
 * a2a3 and a5 simulators, as comm_config chooses), checked bit for bit
 * against a plain C reference that follows the header's contract: each
 * product element the FP32 fused multiply-add chain over k in order, and
 * GEMM-ReduceScatter's partials summed in FP32 in rank order 0..P-1.
 * Shapes are ragged (M, N and K off the tile size, one row, one column),
 * on 1 and 2 blocks; each run makes two calls back to back on one signal
 * window (one kernel for AllGather-GEMM, two launch pairs for
 * GEMM-ReduceScatter), whose cells must be zero afterwards; two runs give
 * the same bits; FP32, FP16 and BF16 operands.  Then each user mistake: its
 * status and its message (function, parameter, rank, expected, got); and
 * GEMM-ReduceScatter's two parts on different block counts, which the sum
 * refuses (PLD_ERR_MISMATCH) before it reads a slot. */
#include "comm_test.h"

PLD_DYNAMIC(M);  /* rows of a rank's A */
PLD_DYNAMIC(K);  /* inner dimension (this rank's share, for GEMM-RS) */
PLD_DYNAMIC(N);  /* columns of B and C */
PLD_DYNAMIC(PM); /* P * M: AllGather-GEMM's gathered rows */
PLD_DYNAMIC(MB); /* M / P: GEMM-RS's row block */
PLD_DYNAMIC(NS); /* signal cells: PLD_FUSED_SIGNAL_CELLS(P, blocks) */

/* Each block copies its lane's cells of sig (5P of them) into sigout, once
 * its calls are over: they must be zero again. */
static void copy_lane_cells(pld_core k, pld_window sig, pld_tensor sigout) {
  const int32_t p = pld_nranks(k, pld_window_comm(sig));
  const int64_t at = 5 * (int64_t)p * pld_block_idx(k);
  pld_tile *t = pld_load(k, pld_local(sig), 0, at, 1, 5 * p);
  pld_store(k, t, sigout, 0, at);
  pld_tile_free(k, t);
}

/* ---- the programs, per operand dtype ----------------------------------- */

#define AG_PARAMS(DT)                                                          \
  PLD_IN(a, DT, M, K), PLD_WINDOW(g, DT, PM, K), PLD_IN(b, DT, K, N),          \
      PLD_OUT(c, FP32, PM, N), PLD_WINDOW(sig, INT32, NS),                     \
      PLD_OUT(sigout, INT32, NS), PLD_SCALAR(reps, INT32)

#define RS_PARAMS(DT)                                                          \
  PLD_IN(a, DT, M, K), PLD_IN(b, DT, K, N), PLD_WINDOW(st, FP32, M, N),        \
      PLD_OUT(c, FP32, MB, N), PLD_WINDOW(sig, INT32, NS),                     \
      PLD_OUT(sigout, INT32, NS), PLD_SCALAR(reps, INT32),                     \
      PLD_SCALAR(blocks, INT32)

/* The sum part of GEMM-RS takes FP32 whatever the operands. */
PLD_KERNEL(k_rs_sum, k, PLD_WINDOW(st, FP32, M, N), PLD_OUT(c, FP32, MB, N),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(sigout, INT32, NS)) {
  pld_matmul_reduce_scatter_sum(k, st, c, sig);
  copy_lane_cells(k, sig, sigout);
}

#define DEFINE_PROGRAMS(DT)                                                    \
  PLD_CUBE_KERNEL(k_ag_##DT, k, AG_PARAMS(DT)) {                               \
    for (int32_t i = 0; i < reps; i++)                                         \
      pld_allgather_matmul(k, a, g, b, c, sig);                                \
    copy_lane_cells(k, sig, sigout);                                           \
  }                                                                            \
  PLD_DEVICE(d_ag_##DT, cpu, AG_PARAMS(DT), PLD_SCALAR(blocks, INT32)) {       \
    pld_launch(cpu, k_ag_##DT, blocks, a, g, b, c, sig, sigout, reps);         \
  }                                                                            \
  PLD_HOST(h_ag_##DT, h, PLD_IN(a, DT, NR, M, K), PLD_IN(b, DT, NR, K, N),     \
           PLD_OUT(c, FP32, NR, PM, N), PLD_OUT(sigout, INT32, NR, NS),        \
           PLD_SCALAR(reps, INT32), PLD_SCALAR(blocks, INT32)) {               \
    const int n = pld_world_size(h);                                           \
    const int64_t m = pld_tensor_dim(a, 1), kk = pld_tensor_dim(a, 2);         \
    const int64_t ns = pld_tensor_dim(sigout, 1);                              \
    pld_window_buf g =                                                         \
        pld_window_alloc_shape(h, PLD_##DT, PLD_SHAPE(n * m, kk));             \
    pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));  \
    for (int r = 0; r < n; r++)                                                \
      pld_dispatch(h, d_ag_##DT, r, pld_slice(h, a, r),                        \
                   pld_window_view(h, g, PLD_##DT, PLD_SHAPE(n *m, kk)),       \
                   pld_slice(h, b, r), pld_slice(h, c, r),                     \
                   pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),          \
                   pld_slice(h, sigout, r), reps, blocks);                     \
  }                                                                            \
  PLD_CUBE_KERNEL(k_rs_mm_##DT, k, PLD_IN(a, DT, M, K), PLD_IN(b, DT, K, N),   \
                  PLD_WINDOW(st, FP32, M, N), PLD_WINDOW(sig, INT32, NS)) {    \
    pld_matmul_reduce_scatter(k, a, b, st, sig);                               \
  }                                                                            \
  PLD_DEVICE(d_rs_##DT, cpu, RS_PARAMS(DT)) {                                  \
    for (int32_t i = 0; i < reps; i++) {                                       \
      pld_launch(cpu, k_rs_mm_##DT, blocks, a, b, st, sig);                    \
      pld_launch(cpu, k_rs_sum, blocks, st, c, sig, sigout);                   \
    }                                                                          \
  }                                                                            \
  PLD_HOST(h_rs_##DT, h, PLD_IN(a, DT, NR, M, K), PLD_IN(b, DT, NR, K, N),     \
           PLD_OUT(c, FP32, NR, MB, N), PLD_OUT(sigout, INT32, NR, NS),        \
           PLD_SCALAR(reps, INT32), PLD_SCALAR(blocks, INT32)) {               \
    const int n = pld_world_size(h);                                           \
    const int64_t m = pld_tensor_dim(a, 1), nn = pld_tensor_dim(b, 2);         \
    const int64_t ns = pld_tensor_dim(sigout, 1);                              \
    pld_window_buf st = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(m, nn)); \
    pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));  \
    for (int r = 0; r < n; r++)                                                \
      pld_dispatch(h, d_rs_##DT, r, pld_slice(h, a, r), pld_slice(h, b, r),    \
                   pld_window_view(h, st, PLD_FP32, PLD_SHAPE(m, nn)),         \
                   pld_slice(h, c, r),                                         \
                   pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),          \
                   pld_slice(h, sigout, r), reps, blocks);                     \
  }

DEFINE_PROGRAMS(FP32)
DEFINE_PROGRAMS(FP16)
DEFINE_PROGRAMS(BF16)

/* ---- the reference, written from the contract ------------------------- */

/* Element i of an FP32, FP16 or BF16 host tensor, as a float: FP16 from
 * the IEEE format's definition (1 sign bit, 5 exponent bits of bias 15,
 * 10 mantissa bits; the inputs here are normal numbers), BF16 as the high
 * half of an FP32. */
static float elem(pld_tensor t, int64_t i) {
  if (pld_tensor_dtype(t) == PLD_FP32)
    return ((const float *)pld_tensor_data(t))[i];
  const uint16_t h = ((const uint16_t *)pld_tensor_data(t))[i];
  if (pld_tensor_dtype(t) == PLD_FP16) {
    double v = ldexp((double)(1024 + (h & 1023)), (int)(h >> 10 & 31) - 25);
    return (float)(h >> 15 ? -v : v);
  }
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Uniform in [-1, 1), from a fixed generator (the same inputs each
 * run, so a failure repeats). */
static uint64_t seed = 0x2545F4914F6CDD1DULL;
static float uniform(void) {
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A host tensor of dtype dt (FP32 or BF16) and the shape, random. */
static pld_tensor random_tensor(pld_dtype dt, int ndim, const int64_t *shape) {
  pld_tensor t = comm_tensor(dt, ndim, shape);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++) {
    float f = uniform();
    if (dt == PLD_FP32) {
      ((float *)pld_tensor_data(t))[i] = f;
    } else if (dt == PLD_FP16) {
      /* A normal half in [2^-6, 2) of either sign: exponent 9 to 15. */
      const uint32_t u = (uint32_t)((f + 1.0f) * 32768.0f);
      ((uint16_t *)pld_tensor_data(t))[i] =
          (uint16_t)((u & 1) << 15 | (9 + (u >> 1) % 7) << 10 |
                     (u >> 4 & 1023));
    } else {
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      ((uint16_t *)pld_tensor_data(t))[i] = (uint16_t)(bits >> 16);
    }
  }
  return t;
}

/* sum over k < kk of x[xoff + i kk + k] y[yoff + k n + j], the chain of
 * fused multiply-adds in k's order from +0. */
static float dot(pld_tensor x, int64_t xoff, pld_tensor y, int64_t yoff,
                 int64_t i, int64_t j, int64_t kk, int64_t n) {
  float acc = 0.0f;
  for (int64_t k = 0; k < kk; k++)
    acc = fmaf(elem(x, xoff + i * kk + k), elem(y, yoff + k * n + j), acc);
  return acc;
}

/* AllGather-GEMM: c[r] = (a[0]; a[1]; ...; a[P-1]) @ b[r]. */
static void ref_ag(pld_tensor a, pld_tensor b, float *want) {
  const int64_t p = pld_tensor_dim(a, 0), m = pld_tensor_dim(a, 1);
  const int64_t kk = pld_tensor_dim(a, 2), n = pld_tensor_dim(b, 2);
  for (int64_t r = 0; r < p; r++)
    for (int64_t s = 0; s < p; s++)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
          want[((r * p + s) * m + i) * n + j] =
              dot(a, s * m * kk, b, r * kk * n, i, j, kk, n);
}

/* GEMM-ReduceScatter: c[d] = rows [d MB, (d+1) MB) of the sum over r =
 * 0, 1, ..., P-1 of a[r] @ b[r], added in FP32 in that order. */
static void ref_rs(pld_tensor a, pld_tensor b, float *want) {
  const int64_t p = pld_tensor_dim(a, 0), m = pld_tensor_dim(a, 1);
  const int64_t kk = pld_tensor_dim(a, 2), n = pld_tensor_dim(b, 2);
  const int64_t mb = m / p;
  for (int64_t d = 0; d < p; d++)
    for (int64_t i = 0; i < mb; i++)
      for (int64_t j = 0; j < n; j++) {
        float s = 0.0f;
        for (int64_t r = 0; r < p; r++) {
          float part = dot(a, r * m * kk, b, r * kk * n, d * mb + i, j, kk, n);
          s = r == 0 ? part : s + part;
        }
        want[(d * mb + i) * n + j] = s;
      }
}

/* ---- running them ------------------------------------------------------ */

/* Bitwise: got[i] and want[i] have the same bits. */
static void expect_bits(const char *what, const float *got, const float *want,
                        int64_t count) {
  for (int64_t i = 0; i < count; i++)
    if (memcmp(&got[i], &want[i], sizeof *got)) {
      print_error("%s: element %lld: got %.9g, expected %.9g (bitwise)\n", what,
                  (long long)i, (double)got[i], (double)want[i]);
      fail();
    }
}

static void expect_zero_cells(pld_tensor sigout) {
  const int32_t *s = pld_tensor_data(sigout);
  for (int64_t i = 0; i < pld_tensor_numel(sigout); i++)
    if (s[i]) {
      print_error("signal cell %lld of rank %lld is %d after the calls, "
                  "expected 0\n",
                  (long long)(i % pld_tensor_dim(sigout, 1)),
                  (long long)(i / pld_tensor_dim(sigout, 1)), (int)s[i]);
      fail();
    }
}

enum { AG, RS };

/* One shape: compiled for n ranks on `blocks` blocks, run twice (each run
 * two calls), checked each time against the reference. */
static void run_shape(int kind, pld_dtype dt, int n, int64_t m, int64_t kk,
                      int64_t nn, int32_t blocks) {
  pld_config cfg = comm_config(n);
  const int64_t ns = PLD_FUSED_SIGNAL_CELLS(n, blocks);
  /* GEMM-RS: m is the row block; A has n * m rows. */
  const int64_t arows = kind == AG ? m : n * m;
  pld_tensor a = random_tensor(dt, 3, (const int64_t[]){n, arows, kk});
  pld_tensor b = random_tensor(dt, 3, (const int64_t[]){n, kk, nn});
  const int64_t crows = kind == AG ? n * m : m;
  pld_tensor c = comm_tensor(PLD_FP32, 3, (const int64_t[]){n, crows, nn});
  pld_tensor sigout = comm_tensor(PLD_INT32, 2, (const int64_t[]){n, ns});
  const int32_t reps = 2;
  const pld_host_fn host = kind == AG ? (dt == PLD_FP32   ? h_ag_FP32
                                         : dt == PLD_FP16 ? h_ag_FP16
                                                          : h_ag_BF16)
                                      : (dt == PLD_FP32   ? h_rs_FP32
                                         : dt == PLD_FP16 ? h_rs_FP16
                                                          : h_rs_BF16);
  pld_program *prog;
  assert_ok(
      pld_compile(host, &cfg, PLD_ARGS(a, b, c, sigout, reps, blocks), &prog));
  float *want = malloc((size_t)pld_tensor_numel(c) * sizeof *want);
  float *first = malloc((size_t)pld_tensor_numel(c) * sizeof *first);
  assert_non_null(want);
  assert_non_null(first);
  if (kind == AG)
    ref_ag(a, b, want);
  else
    ref_rs(a, b, want);
  char what[160];
  snprintf(what, sizeof what,
           "%s %s, %d ranks, m %lld k %lld n %lld, %d "
           "block%s",
           kind == AG ? "pld_allgather_matmul" : "pld_matmul_reduce_scatter",
           pld_dtype_name(dt), n, (long long)m, (long long)kk, (long long)nn,
           (int)blocks, blocks == 1 ? "" : "s");
  for (int run = 0; run < 2; run++) {
    memset(pld_tensor_data(c), 0xff,
           (size_t)pld_tensor_numel(c) * sizeof(float));
    assert_ok(pld_program_run(prog, PLD_ARGS(a, b, c, sigout, reps, blocks)));
    expect_bits(what, pld_tensor_data(c), want, pld_tensor_numel(c));
    expect_zero_cells(sigout);
    if (run == 0)
      memcpy(first, pld_tensor_data(c),
             (size_t)pld_tensor_numel(c) * sizeof(float));
    else
      expect_bits("second run against the first", pld_tensor_data(c), first,
                  pld_tensor_numel(c));
  }
  free(first);
  free(want);
  pld_program_destroy(prog);
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
  pld_tensor_destroy(sigout);
}

/* Shapes (M, K, N) around the tiles (pld/fused.h: C tiles of 128 rows
 * and 256 columns, two a group; K in steps of 128, or of 64 for FP32 C
 * tiles wider than 128 columns): one element, ragged in every dimension,
 * more than one tile in each, and more than one group of row tiles (one
 * block: 257 rows) with a last C tile narrow enough for steps of 128.
 * The races.* entries of ctest run them with the race check on, which
 * fails a sum that reads a slot before the signal of its tile. */
static const int64_t shapes[][3] = {
    {1, 1, 1}, {3, 130, 131}, {129, 5, 7}, {2, 257, 3}, {257, 65, 257}};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void ag_fp32(int n) {
  for (int s = 0; s < NSHAPES; s++)
    for (int32_t blocks = 1; blocks <= 2; blocks++)
      run_shape(AG, PLD_FP32, n, shapes[s][0], shapes[s][1], shapes[s][2],
                blocks);
}

static void rs_fp32(int n) {
  for (int s = 0; s < NSHAPES; s++)
    for (int32_t blocks = 1; blocks <= 2; blocks++)
      run_shape(RS, PLD_FP32, n, shapes[s][0], shapes[s][1], shapes[s][2],
                blocks);
}

static void half_operands(int n) {
  run_shape(AG, PLD_BF16, n, 3, 130, 131, 1);
  run_shape(RS, PLD_BF16, n, 3, 130, 131, 2);
  run_shape(AG, PLD_FP16, n, 5, 129, 9, 2);
  run_shape(RS, PLD_FP16, n, 5, 129, 9, 1);
}

static void test_allgather_matmul(void **state) {
  (void)state;
  comm_over_rank_counts(ag_fp32);
}

static void test_matmul_reduce_scatter(void **state) {
  (void)state;
  comm_over_rank_counts(rs_fp32);
}

static void test_half_operands(void **state) {
  (void)state;
  comm_over_rank_counts(half_operands);
}

/* ---- mistakes ---------------------------------------------------------- */

enum {
  E_AG_ON_VECTOR,  /* pld_allgather_matmul from a vector kernel */
  E_SUM_ON_CUBE,   /* pld_matmul_reduce_scatter_sum from a cube kernel */
  E_AG_B_ROWS,     /* b's rows differ from a's columns */
  E_AG_SIG_SMALL,  /* sig holds fewer cells than P and C need */
  E_AG_DTYPES,     /* a FP16, b FP32 */
  E_RS_M_RAGGED,   /* M not a multiple of P */
  E_RS_STAGE_COLS, /* stage's columns differ from b's */
  E_SUM_C_DTYPE,   /* c of the sum not FP32 */
  E_AG_C_ROWS,     /* c without P * M rows */
  E_AG_GATHERED,   /* gathered without P * M rows: too small */
  E_TILE_MEMORY,   /* the cube core's tile memory nearly full */
  E_BLOCKS,        /* more blocks than cube cores */
  E_COLL_SIG,      /* sig used by a collective (pld_barrier) first */
  E_AG_A_OVERLAPS, /* a a view of gathered's buffer, sharing its last row */
  E_AG_A_APART,    /* a the rows of that buffer right after gathered: no
                      mistake */
  NE
};

/* One program makes the mistake `mistake` picks, on every rank.  x [M, K]
 * FP32, h16 [M, K] FP16, y [KB, N] FP32 (KB = K + 1 makes b's rows
 * wrong), w and st windows (st a view of w's buffer, M rows beyond PM,
 * for E_AG_A_*), sig a window of NS cells. */
#define E_PARAMS                                                               \
  PLD_IN(x, FP32, M, K), PLD_IN(h16, FP16, M, K), PLD_IN(y, FP32, KB, N),      \
      PLD_WINDOW(w, FP32, PM, K), PLD_WINDOW(st, FP32, M, SN),                 \
      PLD_OUT(z, FP32, PM, N), PLD_OUT(z16, FP16, MB, N),                      \
      PLD_WINDOW(sig, INT32, NS), PLD_SCALAR(mistake, INT32)
PLD_DYNAMIC(KB);
PLD_DYNAMIC(SN);

PLD_CUBE_KERNEL(k_e_cube, k, E_PARAMS) {
  switch (mistake) {
  case E_SUM_ON_CUBE:
    pld_matmul_reduce_scatter_sum(k, st, z, sig);
    break;
  case E_AG_DTYPES:
    pld_allgather_matmul(k, h16, w, y, z, sig);
    break;
  case E_RS_M_RAGGED:
  case E_RS_STAGE_COLS:
    pld_matmul_reduce_scatter(k, x, y, st, sig);
    break;
  case E_AG_C_ROWS:
    pld_allgather_matmul(k, x, w, y, pld_local(st), sig);
    break;
  case E_AG_A_OVERLAPS:
  case E_AG_A_APART:
    pld_allgather_matmul(k, pld_local(st), w, y, z, sig);
    break;
  case E_COLL_SIG:
    pld_barrier(k, sig);
    pld_allgather_matmul(k, x, w, y, z, sig);
    break;
  case E_AG_GATHERED:
    pld_allgather_matmul(k, x, st, y, z, sig);
    break;
  case E_TILE_MEMORY: {
    /* All of L1 (512 KiB on both platforms) but one 32-byte granule. */
    pld_tile *big = pld_tile_new(k, PLD_UINT8, 1, 512 * 1024 - 32);
    pld_allgather_matmul(k, x, w, y, z, sig);
    pld_tile_free(k, big);
    break;
  }
  default:
    pld_allgather_matmul(k, x, w, y, z, sig);
    break;
  }
}

PLD_KERNEL(k_e_vector, k, E_PARAMS) {
  if (mistake == E_SUM_C_DTYPE)
    pld_matmul_reduce_scatter_sum(k, st, z16, sig);
  else
    pld_allgather_matmul(k, x, w, y, z, sig);
}

PLD_DEVICE(d_e, cpu, E_PARAMS) {
  if (mistake == E_AG_ON_VECTOR || mistake == E_SUM_C_DTYPE)
    pld_launch(cpu, k_e_vector, 1, x, h16, y, w, st, z, z16, sig, mistake);
  else /* more than a2a3's 24 and a5's 36 cube cores for E_BLOCKS */
    pld_launch(cpu, k_e_cube, mistake == E_BLOCKS ? 37 : 1, x, h16, y, w, st, z,
               z16, sig, mistake);
}

PLD_HOST(h_e, h, PLD_IN(x, FP32, NR, M, K), PLD_IN(h16, FP16, NR, M, K),
         PLD_IN(y, FP32, NR, KB, N), PLD_OUT(z, FP32, NR, PM, N),
         PLD_OUT(z16, FP16, NR, MB, N), PLD_SCALAR(mistake, INT32),
         PLD_SCALAR(ns, INT32), PLD_SCALAR(sn, INT32)) {
  const int n = pld_world_size(h);
  const int64_t m = pld_tensor_dim(x, 1), kk = pld_tensor_dim(x, 2);
  pld_window_buf w =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE((n + 1) * m, kk));
  pld_window_buf st = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(m, sn));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  /* a from gathered's last row on, or from the row after it. */
  const int64_t at = mistake == E_AG_A_OVERLAPS ? n * m - 1
                     : mistake == E_AG_A_APART  ? n * m
                                                : -1;
  for (int r = 0; r < n; r++)
    pld_dispatch(
        h, d_e, r, pld_slice(h, x, r), pld_slice(h, h16, r), pld_slice(h, y, r),
        pld_window_view(h, w, PLD_FP32, PLD_SHAPE(n * m, kk)),
        at < 0 ? pld_window_view(h, st, PLD_FP32, PLD_SHAPE(m, sn))
               : pld_window_view_at(h, w, (size_t)(at * kk) * sizeof(float),
                                    PLD_FP32, PLD_SHAPE(m, sn)),
        pld_slice(h, z, r), pld_slice(h, z16, r),
        pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)), mistake);
}

/* Runs mistake e on n ranks with M rows, b of kb rows, sig of ns cells,
 * stage of sn columns (N = 4, K = 3); returns the status. */
static int run_mistake(int n, int32_t e, int64_t m, int64_t kb, int32_t ns,
                       int32_t sn) {
  pld_config cfg = comm_config(n);
  cfg.wait_timeout_ms = 20000;
  const int64_t kk = 3, nn = 4;
  pld_tensor x = comm_tensor(PLD_FP32, 3, (const int64_t[]){n, m, kk});
  pld_tensor h16 = comm_tensor(PLD_FP16, 3, (const int64_t[]){n, m, kk});
  pld_tensor y = comm_tensor(PLD_FP32, 3, (const int64_t[]){n, kb, nn});
  pld_tensor z = comm_tensor(PLD_FP32, 3, (const int64_t[]){n, n * m, nn});
  pld_tensor z16 = comm_tensor(PLD_FP16, 3, (const int64_t[]){n, 1, nn});
  int st = pld_run(h_e, &cfg, PLD_ARGS(x, h16, y, z, z16, e, ns, sn));
  pld_tensor_destroy(x);
  pld_tensor_destroy(h16);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
  pld_tensor_destroy(z16);
  return st;
}

static void mistakes(int n) {
  const int32_t ns = PLD_FUSED_SIGNAL_CELLS(n, 1);
  assert_fails_with(run_mistake(n, E_AG_ON_VECTOR, 2, 3, ns, 4), PLD_ERR_LEVEL,
                    "pld_allgather_matmul: kernel k_e_vector", "(rank ",
                    "runs on AIC cores, and kernel k_e_vector "
                    "runs on AIV cores: call it from a PLD_CUBE_KERNEL");
  assert_fails_with(run_mistake(n, E_SUM_ON_CUBE, n, 3, ns, 4), PLD_ERR_LEVEL,
                    "pld_matmul_reduce_scatter_sum: kernel k_e_cube",
                    "call it from a PLD_KERNEL");
  assert_fails_with(run_mistake(n, E_AG_B_ROWS, 2, 4, ns, 4), PLD_ERR_ARG,
                    "pld_allgather_matmul: kernel k_e_cube (rank ",
                    "b: expected 3 rows (a's columns, K), got 4");
  assert_fails_with(run_mistake(n, E_AG_SIG_SMALL, 2, 3, ns - 1, 4),
                    PLD_ERR_ARG, "pld_allgather_matmul",
                    "sig: expected at least", "INT32 cells", "got ");
  assert_fails_with(run_mistake(n, E_AG_DTYPES, 2, 3, ns, 4), PLD_ERR_ARG,
                    "pld_allgather_matmul",
                    "gathered: expected FP16, got "
                    "window 'w' FP32");
  assert_fails_with(run_mistake(n, E_RS_M_RAGGED, n + 1, 3, ns, 4), PLD_ERR_ARG,
                    "pld_matmul_reduce_scatter: kernel k_e_cube",
                    "a: expected a multiple of");
  assert_fails_with(run_mistake(n, E_RS_STAGE_COLS, n, 3, ns, 5), PLD_ERR_ARG,
                    "pld_matmul_reduce_scatter",
                    "stage: expected 4 columns (b's columns, N), got 5");
  assert_fails_with(run_mistake(n, E_SUM_C_DTYPE, n, 3, ns, 4), PLD_ERR_ARG,
                    "pld_matmul_reduce_scatter_sum: kernel k_e_vector",
                    "c: expected FP32, got tensor 'z16' FP16");
  assert_fails_with(run_mistake(n, E_AG_C_ROWS, 2, 3, ns, 4), PLD_ERR_ARG,
                    "pld_allgather_matmul", "c: expected ",
                    "rows (P * a's rows), got 2");
  char rows[64];
  snprintf(rows, sizeof rows, "gathered: expected %d rows (P * a's rows, P",
           2 * n);
  assert_fails_with(run_mistake(n, E_AG_GATHERED, 2, 3, ns, 3), PLD_ERR_ARG,
                    "pld_allgather_matmul: kernel k_e_cube (rank ", rows,
                    "got 2: window 'st' FP32[2, 3]");
  assert_fails_with(run_mistake(n, E_COLL_SIG, 2, 3, ns, 4), PLD_ERR_ARG,
                    "pld_put_notify: kernel k_e_cube (rank ",
                    "of window 'sig' (buffer #2) is a cell of the signal "
                    "window pld_barrier used");
  assert_fails_with(run_mistake(n, E_TILE_MEMORY, 2, 3, ns, 4),
                    PLD_ERR_TILE_MEMORY,
                    "pld_allgather_matmul: kernel k_e_cube (rank ");
  assert_fails_with(run_mistake(n, E_BLOCKS, 2, 3, ns, 4), PLD_ERR_ARG,
                    "pld_allgather_matmul: kernel k_e_cube (rank ",
                    "launched on 37 blocks, but the device has ",
                    " AIC cores: the lanes of a fused call must run at once");
  assert_fails_with(run_mistake(n, E_AG_A_OVERLAPS, 2, 3, ns, 3), PLD_ERR_ARG,
                    "pld_allgather_matmul: kernel k_e_cube (rank ",
                    "a: expected a tensor apart from window gathered, got a "
                    "view that overlaps it");
  assert_ok(run_mistake(n, E_AG_A_APART, 2, 3, ns, 3));
}

/* The products and the sum on different block counts: mm_blocks for the
 * products, sum_blocks for the sum, on a signal window for the larger;
 * with sum_first, the sum launched before the products: its waits hold
 * the windows the products need, a deadlock the run reports (pld/fused.h
 * says so). */
PLD_DEVICE(d_rs_blocks, cpu, RS_PARAMS(FP32), PLD_SCALAR(sum_blocks, INT32),
           PLD_SCALAR(sum_first, INT32)) {
  (void)reps;
  if (sum_first)
    pld_launch(cpu, k_rs_sum, sum_blocks, st, c, sig, sigout);
  pld_launch(cpu, k_rs_mm_FP32, blocks, a, b, st, sig);
  if (!sum_first)
    pld_launch(cpu, k_rs_sum, sum_blocks, st, c, sig, sigout);
}

PLD_HOST(h_rs_blocks, h, PLD_IN(a, FP32, NR, M, K), PLD_IN(b, FP32, NR, K, N),
         PLD_OUT(c, FP32, NR, MB, N), PLD_OUT(sigout, INT32, NR, NS),
         PLD_SCALAR(mm_blocks, INT32), PLD_SCALAR(sum_blocks, INT32),
         PLD_SCALAR(sum_first, INT32)) {
  const int n = pld_world_size(h);
  const int64_t m = pld_tensor_dim(a, 1), nn = pld_tensor_dim(b, 2);
  const int64_t ns = pld_tensor_dim(sigout, 1);
  pld_window_buf st = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(m, nn));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_rs_blocks, r, pld_slice(h, a, r), pld_slice(h, b, r),
                 pld_window_view(h, st, PLD_FP32, PLD_SHAPE(m, nn)),
                 pld_slice(h, c, r),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, sigout, r), 1, mm_blocks, sum_blocks, sum_first);
}

/* The sum launched before the products: reported as a deadlock. */
static void wrong_order(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor a = random_tensor(PLD_FP32, 3, (const int64_t[]){n, 2 * n, 3});
  pld_tensor b = random_tensor(PLD_FP32, 3, (const int64_t[]){n, 3, 5});
  pld_tensor c = comm_tensor(PLD_FP32, 3, (const int64_t[]){n, 2, 5});
  pld_tensor sigout = comm_tensor(
      PLD_INT32, 2, (const int64_t[]){n, PLD_FUSED_SIGNAL_CELLS(n, 1)});
  assert_fails_with(
      pld_run(h_rs_blocks, &cfg, PLD_ARGS(a, b, c, sigout, 1, 1, 1)),
      PLD_ERR_DEADLOCK, "deadlock", "k_rs_sum");
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
  pld_tensor_destroy(sigout);
}

/* Runs the pair on n ranks (row blocks of 37 rows, N 96, as step 21's
 * tutorial) with the products on mm blocks and the sum on sum blocks;
 * returns the status. */
static int run_blocks(int n, int32_t mm, int32_t sum) {
  pld_config cfg = comm_config(n);
  cfg.wait_timeout_ms = 20000;
  const int32_t most = mm > sum ? mm : sum;
  pld_tensor a = random_tensor(PLD_FP32, 3, (const int64_t[]){n, 37 * n, 40});
  pld_tensor b = random_tensor(PLD_FP32, 3, (const int64_t[]){n, 40, 96});
  pld_tensor c = comm_tensor(PLD_FP32, 3, (const int64_t[]){n, 37, 96});
  pld_tensor sigout = comm_tensor(
      PLD_INT32, 2, (const int64_t[]){n, PLD_FUSED_SIGNAL_CELLS(n, most)});
  int st = pld_run(h_rs_blocks, &cfg, PLD_ARGS(a, b, c, sigout, mm, sum, 0));
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
  pld_tensor_destroy(sigout);
  return st;
}

/* Products on 2 blocks, the sum on 1: the sum's check refuses before it
 * reads a slot, whatever the timing (ten runs), naming both counts. */
static void more_product_blocks(int n) {
  for (int i = 0; i < 10; i++)
    assert_fails_with(run_blocks(n, 2, 1), PLD_ERR_MISMATCH,
                      "pld_matmul_reduce_scatter_sum: kernel k_rs_sum (rank ",
                      "block 0 of 1): rank ",
                      " ran pld_matmul_reduce_scatter on 2 blocks and this "
                      "call runs on 1 block: launch the products and the sum "
                      "on the same number of blocks");
}

/* The sum on 2 blocks, the products on 1: the sum's lane 0 refuses (or
 * its lane 1, which nothing announces to, is reported as a deadlock). */
static void more_sum_blocks(int n) {
  for (int i = 0; i < 3; i++) {
    const int st = run_blocks(n, 1, 2);
    if (st == PLD_ERR_MISMATCH)
      assert_fails_with(st, PLD_ERR_MISMATCH,
                        "pld_matmul_reduce_scatter_sum: kernel k_rs_sum",
                        " ran pld_matmul_reduce_scatter on 1 block and this "
                        "call runs on 2 blocks");
    else
      assert_fails_with(st, PLD_ERR_DEADLOCK, "deadlock", "k_rs_sum");
  }
}

static void test_mistakes(void **state) {
  (void)state;
  comm_over_rank_counts(mistakes);
}

static void test_sum_before_products_deadlocks(void **state) {
  (void)state;
  comm_over_rank_counts(wrong_order);
}

static void test_more_product_blocks_than_sum_blocks(void **state) {
  (void)state;
  comm_over_rank_counts(more_product_blocks);
}

static void test_more_sum_blocks_than_product_blocks(void **state) {
  (void)state;
  comm_over_rank_counts(more_sum_blocks);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_allgather_matmul),
    cmocka_unit_test(test_matmul_reduce_scatter),
    cmocka_unit_test(test_half_operands),
    cmocka_unit_test(test_mistakes),
    cmocka_unit_test(test_sum_before_products_deadlocks),
    cmocka_unit_test(test_more_product_blocks_than_sum_blocks),
    cmocka_unit_test(test_more_sum_blocks_than_product_blocks),
};

PLD_TEST_MAIN("fused", tests)
