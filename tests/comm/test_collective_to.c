/* The out-of-place collectives, pld_allreduce_to, pld_broadcast_to and
 * pld_reduce_scatter_to, on 2, 3 and 4 ranks (and under mpirun): results
 * against plain C (ranks combined in order 0, 1, ..., P-1; the ring
 * against the in-place ring, which the documentation says it equals),
 * small calls and large ones, one and two blocks, every allreduce mode,
 * sources left as they were, an in-place call on one rank matching an
 * out-of-place one on the others, and the mistakes refused. */
#include "comm_test.h"

/* Elements per rank: N_SMALL travels in the call's entry, N_LARGE not. */
enum { N_SMALL = 7, N_LARGE = 3001, NCALLS = 2 };
PLD_DYNAMIC(N);
PLD_DYNAMIC(M);  /* elements of a row of reduce-scatter's data */
PLD_DYNAMIC(NS); /* PLD_SIGNAL_CELLS(NR, 2) */
PLD_DYNAMIC(K);  /* a source one element short */

/* dst = src, [1, n] tensors: one block, launched before a collective's
 * kernel (its input) or after it (its result), so that every block of the
 * collective finds its data whatever part of it the block works on. */
PLD_KERNEL(k_copy, k, PLD_IN(src, FP32, 1, N), PLD_OUT(dst, FP32, 1, N)) {
  pld_tile *t = pld_load(k, src, 0, 0, 1, (int32_t)pld_tensor_dim(src, 1));
  pld_store(k, t, dst, 0, 0);
}
PLD_KERNEL(k_copy_i, k, PLD_IN(src, INT32, 1, N), PLD_OUT(dst, INT32, 1, N)) {
  pld_tile *t = pld_load(k, src, 0, 0, 1, (int32_t)pld_tensor_dim(src, 1));
  pld_store(k, t, dst, 0, 0);
}

/* win = the allreduce of x, out of place; rank `inplace`, if any, calls
 * pld_allreduce on win, which holds its x already. */
PLD_KERNEL(k_ar, k, PLD_IN(x, FP32, 1, N), PLD_WINDOW(win, FP32, 1, N),
           PLD_WINDOW(sig, INT32, NS), PLD_SCALAR(mode, INT32),
           PLD_SCALAR(inplace, INT32), PLD_SCALAR(rank, INT32)) {
  if (rank == inplace)
    pld_allreduce(k, win, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)mode);
  else
    pld_allreduce_to(k, x, win, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)mode);
}

/* The same on INT32 data (sums exact in every mode). */
PLD_KERNEL(k_ar_i, k, PLD_IN(x, INT32, 1, N), PLD_WINDOW(win, INT32, 1, N),
           PLD_WINDOW(sig, INT32, NS), PLD_SCALAR(mode, INT32)) {
  pld_allreduce_to(k, x, win, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)mode);
}

/* The ring in place on win: what pld_allreduce_to must equal. */
PLD_KERNEL(k_ring, k, PLD_WINDOW(win, FP32, 1, N), PLD_WINDOW(sig, INT32, NS)) {
  pld_allreduce(k, win, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_RING);
}

/* y = root's win (holding its x). */
PLD_KERNEL(k_bc, k, PLD_OUT(y, FP32, 1, N), PLD_WINDOW(win, FP32, 1, N),
           PLD_WINDOW(sig, INT32, NS), PLD_SCALAR(root, INT32)) {
  pld_broadcast_to(k, win, y, sig, root);
}

/* y = the sum of every rank's row `rank` of x (through win), z = win
 * after the call; one block. */
PLD_KERNEL(k_rs, k, PLD_IN(x, FP32, NR, M), PLD_OUT(y, FP32, M),
           PLD_OUT(z, FP32, NR, M), PLD_WINDOW(win, FP32, NR, M),
           PLD_WINDOW(sig, INT32, NS)) {
  const int32_t rows = (int32_t)pld_tensor_dim(x, 0),
                cols = (int32_t)pld_tensor_dim(x, 1);
  pld_tile *t = pld_load(k, x, 0, 0, rows, cols);
  pld_store(k, t, pld_local(win), 0, 0);
  pld_tile_free(k, t);
  pld_reduce_scatter_to(k, win, y, sig, PLD_REDUCE_SUM);
  t = pld_load(k, pld_local(win), 0, 0, rows, cols);
  pld_store(k, t, z, 0, 0);
}

enum { W_AR, W_AR_I, W_RING, W_BC, W_RS };

PLD_DEVICE(d_to, a, PLD_IN(x, FP32, 1, N), PLD_OUT(y, FP32, 1, N),
           PLD_OUT(z, FP32, 1, N), PLD_IN(xi, INT32, 1, N),
           PLD_OUT(yi, INT32, 1, N), PLD_IN(xr, FP32, NR, M),
           PLD_OUT(yr, FP32, M), PLD_OUT(zr, FP32, NR, M),
           PLD_WINDOW(win, FP32, 1, N), PLD_WINDOW(wini, INT32, 1, N),
           PLD_WINDOW(winr, FP32, NR, M), PLD_WINDOW(sig, INT32, NS),
           PLD_SCALAR(what, INT32), PLD_SCALAR(mode, INT32),
           PLD_SCALAR(arg, INT32), PLD_SCALAR(blocks, INT32),
           PLD_SCALAR(rank, INT32)) {
  for (int call = 0; call < NCALLS; call++) /* the signal window reused */
    switch (what) {
    case W_AR:
      if (rank == arg)
        pld_launch(a, k_copy, 1, x, win);
      pld_launch(a, k_ar, blocks, x, win, sig, mode, arg, rank);
      pld_launch(a, k_copy, 1, win, y);
      break;
    case W_AR_I:
      pld_launch(a, k_ar_i, blocks, xi, wini, sig, mode);
      pld_launch(a, k_copy_i, 1, wini, yi);
      break;
    case W_RING:
      pld_launch(a, k_copy, 1, x, win);
      pld_launch(a, k_ring, blocks, win, sig);
      pld_launch(a, k_copy, 1, win, y);
      break;
    case W_BC:
      pld_launch(a, k_copy, 1, x, win);
      pld_launch(a, k_bc, blocks, y, win, sig, arg);
      pld_launch(a, k_copy, 1, win, z);
      break;
    default:
      pld_launch(a, k_rs, 1, xr, yr, zr, winr, sig);
      break;
    }
}

PLD_HOST(h_to, h, PLD_IN(x, FP32, NR, 1, N), PLD_OUT(y, FP32, NR, 1, N),
         PLD_OUT(z, FP32, NR, 1, N), PLD_IN(xi, INT32, NR, 1, N),
         PLD_OUT(yi, INT32, NR, 1, N), PLD_IN(xr, FP32, NR, NR, M),
         PLD_OUT(yr, FP32, NR, M), PLD_OUT(zr, FP32, NR, NR, M),
         PLD_SCALAR(what, INT32), PLD_SCALAR(mode, INT32),
         PLD_SCALAR(arg, INT32), PLD_SCALAR(blocks, INT32)) {
  const int32_t n = pld_world_size(h);
  const int64_t len = pld_tensor_dim(x, 2), m = pld_tensor_dim(xr, 2);
  pld_window_buf win = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1, len));
  pld_window_buf wini = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, len));
  pld_window_buf winr = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, m));
  const int64_t ns = PLD_SIGNAL_CELLS(n, 2);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int32_t r = 0; r < n; r++)
    pld_dispatch(h, d_to, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_slice(h, z, r), pld_slice(h, xi, r), pld_slice(h, yi, r),
                 pld_slice(h, xr, r), pld_slice(h, yr, r), pld_slice(h, zr, r),
                 pld_window_view(h, win, PLD_FP32, PLD_SHAPE(1, len)),
                 pld_window_view(h, wini, PLD_INT32, PLD_SHAPE(1, len)),
                 pld_window_view(h, winr, PLD_FP32, PLD_SHAPE(n, m)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)), what, mode,
                 arg, blocks, r);
}

struct to {
  int n;
  int64_t len, m;
  pld_tensor x, y, z, xi, yi, xr, yr, zr;
};

static void to_init(struct to *t, int n, int64_t len) {
  t->n = n, t->len = len, t->m = (len + n - 1) / n;
  t->x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  t->y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  t->z = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  t->xi = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 1, len});
  t->yi = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 1, len});
  t->xr = comm_tensor(PLD_FP32, 3, (int64_t[]){n, n, t->m});
  t->yr = comm_tensor(PLD_FP32, 2, (int64_t[]){n, t->m});
  t->zr = comm_tensor(PLD_FP32, 3, (int64_t[]){n, n, t->m});
  float *x = pld_tensor_data(t->x), *xr = pld_tensor_data(t->xr);
  int32_t *xi = pld_tensor_data(t->xi);
  srand((unsigned)(n * 1000 + len));
  /* Values whose sums round: the order of the ranks shows. */
  for (int64_t i = 0; i < n * len; i++) {
    x[i] = (float)(rand() % 20001 - 10000) / 7.0f;
    xi[i] = rand() - RAND_MAX / 2; /* sums wrap */
  }
  for (int64_t i = 0; i < n * n * t->m; i++)
    xr[i] = (float)(rand() % 20001 - 10000) / 3.0f;
}

static void to_free(struct to *t) {
  pld_tensor ts[] = {t->x, t->y, t->z, t->xi, t->yi, t->xr, t->yr, t->zr};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
    pld_tensor_destroy(ts[i]);
}

static int to_run(struct to *t, int what, int mode, int arg, int blocks) {
  pld_config cfg = comm_config(t->n);
  return pld_run(h_to, &cfg,
                 PLD_ARGS(t->x, t->y, t->z, t->xi, t->yi, t->xr, t->yr, t->zr,
                          what, mode, arg, blocks));
}

/* Every rank's y = the sum over ranks 0, 1, ..., P-1 of x, in that order,
 * in FP32 (mesh and two-phase). */
static void expect_sum(const struct to *t) {
  const float *x = pld_tensor_data(t->x), *y = pld_tensor_data(t->y);
  float *want = calloc((size_t)t->len, sizeof *want);
  for (int64_t e = 0; e < t->len; e++) {
    want[e] = x[e];
    for (int q = 1; q < t->n; q++)
      want[e] += x[q * t->len + e];
  }
  for (int r = 0; r < t->n; r++)
    comm_expect_f32("allreduce_to", y + r * t->len, want, t->len);
  free(want);
}

static void allreduce_to(int n) {
  const int64_t lens[] = {N_SMALL, N_LARGE};
  for (size_t l = 0; l < 2; l++)
    for (int blocks = 1; blocks <= 2; blocks++) {
      struct to t;
      to_init(&t, n, lens[l]);
      const int modes[] = {PLD_ALLREDUCE_AUTO, PLD_ALLREDUCE_MESH,
                           PLD_ALLREDUCE_TWO_PHASE};
      for (size_t m = 0; m < 3; m++) {
        /* Out of place on every rank, then in place on rank n - 1. */
        for (int inplace = -1; inplace < n; inplace += n) {
          assert_ok(to_run(&t, W_AR, modes[m], inplace, blocks));
          expect_sum(&t);
        }
      }
      /* The ring: as the ring in place. */
      assert_ok(to_run(&t, W_AR, PLD_ALLREDUCE_RING, -1, blocks));
      float *ring = malloc((size_t)(n * t.len) * sizeof *ring);
      memcpy(ring, pld_tensor_data(t.y), (size_t)(n * t.len) * sizeof *ring);
      assert_ok(to_run(&t, W_RING, 0, 0, blocks));
      comm_expect_f32("ring out of place", ring, pld_tensor_data(t.y),
                      n * t.len);
      free(ring);
      /* INT32, every mode: the exact wrapped sum. */
      const int32_t *xi = pld_tensor_data(t.xi), *yi = pld_tensor_data(t.yi);
      int32_t *want = calloc((size_t)t.len, sizeof *want);
      for (int64_t e = 0; e < t.len; e++)
        for (int q = 0; q < n; q++)
          want[e] = (int32_t)((uint32_t)want[e] + (uint32_t)xi[q * t.len + e]);
      for (int mode = 0; mode <= PLD_ALLREDUCE_RING; mode++) {
        assert_ok(to_run(&t, W_AR_I, mode, 0, blocks));
        for (int r = 0; r < n; r++)
          comm_expect_i32("allreduce_to INT32", yi + r * t.len, want, t.len);
      }
      free(want);
      to_free(&t);
    }
}

static void test_allreduce_to(void **state) {
  (void)state;
  comm_over_rank_counts(allreduce_to);
}

static void broadcast_to(int n) {
  const int64_t lens[] = {N_SMALL, N_LARGE};
  for (size_t l = 0; l < 2; l++)
    for (int blocks = 1; blocks <= 2; blocks++) {
      struct to t;
      to_init(&t, n, lens[l]);
      const int root = (int)(l + (size_t)blocks) % n;
      assert_ok(to_run(&t, W_BC, 0, root, blocks));
      const float *x = pld_tensor_data(t.x), *y = pld_tensor_data(t.y),
                  *z = pld_tensor_data(t.z);
      for (int r = 0; r < n; r++) {
        comm_expect_f32("broadcast_to", y + r * t.len, x + root * t.len, t.len);
        comm_expect_f32("broadcast_to's source", z + r * t.len, x + r * t.len,
                        t.len);
      }
      to_free(&t);
    }
}

static void test_broadcast_to(void **state) {
  (void)state;
  comm_over_rank_counts(broadcast_to);
}

static void reduce_scatter_to(int n) {
  const int64_t lens[] = {N_SMALL * 4, N_LARGE};
  for (size_t l = 0; l < 2; l++) {
    struct to t;
    to_init(&t, n, lens[l]);
    assert_ok(to_run(&t, W_RS, 0, 0, 1));
    const float *x = pld_tensor_data(t.xr), *y = pld_tensor_data(t.yr),
                *z = pld_tensor_data(t.zr);
    const int64_t m = t.m;
    float *want = calloc((size_t)m, sizeof *want);
    for (int r = 0; r < n; r++) {
      for (int64_t e = 0; e < m; e++) {
        want[e] = x[(0 * n + r) * m + e];
        for (int q = 1; q < n; q++)
          want[e] += x[((int64_t)q * n + r) * m + e];
      }
      comm_expect_f32("reduce_scatter_to", y + r * m, want, m);
      comm_expect_f32("reduce_scatter_to's source", z + (int64_t)r * n * m,
                      x + (int64_t)r * n * m, n * m);
    }
    free(want);
    to_free(&t);
  }
}

static void test_reduce_scatter_to(void **state) {
  (void)state;
  comm_over_rank_counts(reduce_scatter_to);
}

/* ---- mistakes ----------------------------------------------------------- */

enum { B_SHORT, B_DTYPE, B_OVERLAP, B_RS_ROW };

#define BAD_PARAMS                                                             \
  PLD_IN(x, FP32, 1, N), PLD_IN(xs, FP32, 1, K), PLD_OUT(y, FP32, 1, N),       \
      PLD_IN(xi, INT32, 1, N), PLD_WINDOW(win, FP32, 1, N),                    \
      PLD_WINDOW(winr, FP32, NR, M), PLD_WINDOW(sig, INT32, NS),               \
      PLD_SCALAR(what, INT32)

PLD_KERNEL(k_bad, k, BAD_PARAMS) {
  (void)x;
  switch (what) {
  case B_SHORT:
    pld_allreduce_to(k, xs, win, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO);
    break;
  case B_DTYPE:
    pld_allreduce_to(k, xi, win, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO);
    break;
  case B_OVERLAP:
    pld_broadcast_to(k, win, pld_local(win), sig, 0);
    break;
  default:
    pld_reduce_scatter_to(k, winr, y, sig, PLD_REDUCE_SUM);
    break;
  }
}

PLD_DEVICE(d_bad, a, BAD_PARAMS) {
  pld_launch(a, k_bad, 1, x, xs, y, xi, win, winr, sig, what);
}

PLD_HOST(h_bad, h, PLD_IN(x, FP32, NR, 1, N), PLD_IN(xs, FP32, NR, 1, K),
         PLD_OUT(y, FP32, NR, 1, N), PLD_IN(xi, INT32, NR, 1, N),
         PLD_SCALAR(what, INT32)) {
  const int32_t n = pld_world_size(h);
  const int64_t len = pld_tensor_dim(x, 2);
  pld_window_buf win = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1, len));
  pld_window_buf winr =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, 2 * len));
  const int64_t ns = PLD_SIGNAL_CELLS(n, 2);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int32_t r = 0; r < n; r++)
    pld_dispatch(h, d_bad, r, pld_slice(h, x, r), pld_slice(h, xs, r),
                 pld_slice(h, y, r), pld_slice(h, xi, r),
                 pld_window_view(h, win, PLD_FP32, PLD_SHAPE(1, len)),
                 pld_window_view(h, winr, PLD_FP32, PLD_SHAPE(n, 2 * len)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)), what);
}

static void test_mistakes(void **state) {
  (void)state;
  if (!comm_world_fits(2))
    skip();
  const int n = 2;
  const int64_t len = 16;
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  pld_tensor xs = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len - 1});
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  pld_tensor xi = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 1, len});
  pld_config cfg = comm_config(n);
  const char *want[][2] = {
      {"pld_allreduce_to", "src 'xs' is FP32[1, 15], window 'win' (buffer #0) "
                           "is FP32[1, 16]: expected 16 FP32 elements (as "
                           "many as the data)"},
      {"pld_allreduce_to", "src 'xi' is INT32[1, 16]"},
      {"pld_broadcast_to", "dst 'win' and window 'win' (buffer #0) share "
                           "memory: the collective would read what it writes"},
      {"pld_reduce_scatter_to",
       "dst 'y' is FP32[1, 16], window 'winr' (buffer #1) is FP32[2, 32]: "
       "expected 32 FP32 elements (one row of the data, this rank's)"},
  };
  for (int what = 0; what <= B_RS_ROW; what++)
    assert_fails_with(pld_run(h_bad, &cfg, PLD_ARGS(x, xs, y, xi, what)),
                      PLD_ERR_ARG, want[what][0], want[what][1]);
  pld_tensor_destroy(x);
  pld_tensor_destroy(xs);
  pld_tensor_destroy(y);
  pld_tensor_destroy(xi);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_allreduce_to),
    cmocka_unit_test(test_broadcast_to),
    cmocka_unit_test(test_reduce_scatter_to),
    cmocka_unit_test(test_mistakes),
};

PLD_TEST_MAIN("collective_to", tests)
