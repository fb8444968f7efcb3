/* The program's collective signal window (pld_coll_signal, PLD_COLL_SIG):
 * declared once by the host function, reached by kernels through a
 * parameter their launches pass nothing for, with no dimension for it in
 * any device function's or kernel's signature; used by the host-level
 * collectives given no sig too.  Results against plain C on 2, 3 and 4
 * ranks (and under mpirun), one and two blocks, calls in a row on it; and
 * the mistakes: no window declared, declared twice or with a bad block
 * count, an argument passed for it, more blocks than declared. */
#include "comm_test.h"

PLD_DYNAMIC(N);

/* data = x; then y = data after the allreduce on the program's window. */
PLD_KERNEL(k_fill, k, PLD_IN(x, FP32, 1, N), PLD_WINDOW(data, FP32, 1, N)) {
  pld_tile *t = pld_load(k, x, 0, 0, 1, (int32_t)pld_tensor_dim(x, 1));
  pld_store(k, t, pld_local(data), 0, 0);
}
PLD_KERNEL(k_sum, k, PLD_WINDOW(data, FP32, 1, N), PLD_COLL_SIG(sig)) {
  pld_allreduce(k, data, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO);
}
PLD_KERNEL(k_barrier, k, PLD_COLL_SIG(sig)) { pld_barrier(k, sig); }
PLD_KERNEL(k_out, k, PLD_WINDOW(data, FP32, 1, N), PLD_OUT(y, FP32, 1, N)) {
  pld_tile *t =
      pld_load(k, pld_local(data), 0, 0, 1, (int32_t)pld_tensor_dim(y, 1));
  pld_store(k, t, y, 0, 0);
}

/* No signal window in its signature. */
PLD_DEVICE(d_sum, a, PLD_IN(x, FP32, 1, N), PLD_WINDOW(data, FP32, 1, N),
           PLD_OUT(y, FP32, 1, N), PLD_SCALAR(blocks, INT32)) {
  pld_launch(a, k_fill, 1, x, data);
  pld_launch(a, k_sum, blocks, data);
  pld_launch(a, k_barrier, 1);
  pld_launch(a, k_sum, blocks, data); /* again: the window reused */
  pld_launch(a, k_out, 1, data, y);
}

PLD_DEVICE(d_out, a, PLD_WINDOW(data, FP32, 1, N), PLD_OUT(z, FP32, 1, N)) {
  pld_launch(a, k_out, 1, data, z);
}

PLD_HOST(h_sum, h, PLD_IN(x, FP32, NR, 1, N), PLD_OUT(y, FP32, NR, 1, N),
         PLD_OUT(z, FP32, NR, 1, N), PLD_SCALAR(blocks, INT32),
         PLD_SCALAR(declared, INT32)) {
  const int64_t len = pld_tensor_dim(x, 2);
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1, len));
  pld_window data = pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(1, len));
  pld_coll_signal(h, declared);
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_sum, r, pld_slice(h, x, r), data, pld_slice(h, y, r),
                 blocks);
  /* The host-level allreduce given no sig: the same window. */
  pld_host_allreduce(h, data, (pld_window){NULL}, PLD_REDUCE_SUM,
                     PLD_ALLREDUCE_AUTO, 1);
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_out, r, data, pld_slice(h, z, r));
}

/* y = the sum of x over ranks 0, ..., P-1 (in FP32, in that order) summed
 * the same way twice over (the second allreduce adds P copies of it), z
 * that again (the host's allreduce). */
static void run_sum(int n, int64_t len, int blocks) {
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  pld_tensor z = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, len});
  float *xs = pld_tensor_data(x);
  srand((unsigned)(n * 31 + len));
  for (int64_t i = 0; i < n * len; i++)
    xs[i] = (float)(rand() % 2001 - 1000) / 3.0f;
  pld_config cfg = comm_config(n);
  assert_ok(
      pld_run(h_sum, &cfg, PLD_ARGS(x, y, z, (int32_t)blocks, (int32_t)2)));
  float *want = malloc((size_t)len * sizeof *want);
  for (int64_t e = 0; e < len; e++) {
    float s = xs[e];
    for (int q = 1; q < n; q++)
      s += xs[q * len + e];
    float s2 = s; /* every rank holds s: P copies summed in order */
    for (int q = 1; q < n; q++)
      s2 += s;
    want[e] = s2;
  }
  for (int r = 0; r < n; r++)
    comm_expect_f32("y", (float *)pld_tensor_data(y) + r * len, want, len);
  for (int64_t e = 0; e < len; e++) {
    float s3 = want[e];
    for (int q = 1; q < n; q++)
      s3 += want[e];
    want[e] = s3;
  }
  for (int r = 0; r < n; r++)
    comm_expect_f32("z", (float *)pld_tensor_data(z) + r * len, want, len);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
}

static void sums(int n) {
  run_sum(n, 5, 1);
  run_sum(n, 3001, 2);
}

static void test_program_window(void **state) {
  (void)state;
  comm_over_rank_counts(sums);
}

/* ---- mistakes ----------------------------------------------------------- */

/* A kernel with PLD_COLL_SIG in a program that declares none. */
PLD_DEVICE(d_barrier, a) { pld_launch(a, k_barrier, 1); }
PLD_HOST(h_undeclared, h) {
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_barrier, r);
}

/* An argument passed for the window. */
PLD_DEVICE(d_passes, a, PLD_WINDOW(data, FP32, 1, N)) {
  pld_launch(a, k_sum, 1, data, data);
}
PLD_HOST(h_passes, h, PLD_SCALAR(declared, INT32), PLD_SCALAR(twice, INT32)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1, 8));
  pld_coll_signal(h, declared);
  if (twice)
    pld_coll_signal(h, declared);
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_passes, r,
                 pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(1, 8)));
}

static void test_mistakes(void **state) {
  (void)state;
  if (!comm_world_fits(2))
    skip();
  pld_config cfg = comm_config(2);
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_undeclared, &cfg, 0, NULL, &p), PLD_ERR_ARG,
                    "pld_launch (rank 0, device ",
                    "in d_barrier): k_barrier: "
                    "parameter 'sig' (PLD_COLL_SIG): the program has no "
                    "collective signal window: declare it in the host "
                    "function with pld_coll_signal");
  assert_null(p);
  assert_fails_with(
      pld_compile(h_passes, &cfg, PLD_ARGS((int32_t)1, (int32_t)0), &p),
      PLD_ERR_ARG, "pld_launch (rank 0, device ",
      "k_sum: expected 1 argument after the block count (2 parameters, 1 of "
      "them the program's collective signal window, which the launch passes "
      "itself), got 2");
  assert_fails_with(
      pld_compile(h_passes, &cfg, PLD_ARGS((int32_t)1, (int32_t)1), &p),
      PLD_ERR_ARG,
      "pld_coll_signal (in h_passes): the program's collective "
      "signal window exists already");
  const pld_platform_info *plat = pld_platform_find(cfg.platform);
  char want[160];
  snprintf(want, sizeof want, "blocks: expected 1 to %d (the vector cores",
           plat->vector_cores);
  for (int bad = 0; bad < 2; bad++)
    assert_fails_with(
        pld_compile(h_passes, &cfg,
                    PLD_ARGS(bad ? plat->vector_cores + 1 : 0, (int32_t)0), &p),
        PLD_ERR_ARG, "pld_coll_signal (in h_passes): ", want);
  /* Declared for 1 block, used on 2: the collective's own check. */
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){2, 1, 8});
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){2, 1, 8});
  pld_tensor z = comm_tensor(PLD_FP32, 3, (int64_t[]){2, 1, 8});
  assert_fails_with(
      pld_run(h_sum, &cfg, PLD_ARGS(x, y, z, (int32_t)2, (int32_t)1)),
      PLD_ERR_ARG, "pld_allreduce: kernel k_sum", "PLD_SIGNAL_CELLS(2, 2)");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_program_window),
    cmocka_unit_test(test_mistakes),
};

PLD_TEST_MAIN("coll_sig", tests)
