/* Collectives called by the host orchestrator: each becomes one builtin
 * dispatch per rank, in program order with the host's own dispatches; the
 * results equal the kernel forms' (and a C reference), bitwise; mistakes
 * fail pld_compile; the artifact folder shows them like any dispatch. */
#include <time.h>

#include "comm_test.h"

PLD_DYNAMIC(R);  /* elements per row */
PLD_DYNAMIC(NS); /* signal cells */

enum { H_ALLREDUCE, H_BROADCAST, H_ALLGATHER, H_REDUCE_SCATTER, H_ALL_TO_ALL };

/* Copies src to dst, both [rows, cols], through tiles. */
static void copy_rows(pld_core k, pld_tensor src, pld_tensor dst) {
  int64_t rows = pld_tensor_dim(dst, 0), cols = pld_tensor_dim(dst, 1);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c0 = 0; c0 < cols; c0 += 4096) {
      int32_t n = (int32_t)(cols - c0 < 4096 ? cols - c0 : 4096);
      pld_tile *tl = pld_load(k, src, r, c0, 1, n);
      pld_store(k, tl, dst, r, c0);
      pld_tile_free(k, tl);
    }
}

PLD_KERNEL(k_in, k, PLD_IN(x, INT32, NR, R), PLD_WINDOW(w, INT32, NR, R)) {
  copy_rows(k, x, pld_local(w));
}
PLD_DEVICE(d_in, a, PLD_IN(x, INT32, NR, R), PLD_WINDOW(w, INT32, NR, R)) {
  pld_launch(a, k_in, 1, x, w);
}
PLD_KERNEL(k_out, k, PLD_WINDOW(w, INT32, NR, R), PLD_OUT(y, INT32, NR, R)) {
  copy_rows(k, pld_local(w), y);
}
PLD_DEVICE(d_out, a, PLD_WINDOW(w, INT32, NR, R), PLD_OUT(y, INT32, NR, R)) {
  pld_launch(a, k_out, 1, w, y);
}

/* The kernel form of the same call, for the comparison. */
PLD_KERNEL(k_same, k, PLD_WINDOW(w, INT32, NR, R), PLD_WINDOW(t, INT32, NR, R),
           PLD_WINDOW(sig, INT32, NS), PLD_SCALAR(kind, INT32),
           PLD_SCALAR(root, INT32)) {
  if (kind == H_ALLREDUCE)
    pld_allreduce(k, w, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_RING);
  else if (kind == H_BROADCAST)
    pld_broadcast(k, w, sig, root);
  else if (kind == H_REDUCE_SCATTER)
    pld_reduce_scatter(k, w, sig, PLD_REDUCE_MAX);
  else if (kind == H_ALL_TO_ALL)
    pld_all_to_all(k, pld_local(w), t, sig);
}
PLD_DEVICE(d_same, a, PLD_WINDOW(w, INT32, NR, R), PLD_WINDOW(t, INT32, NR, R),
           PLD_WINDOW(sig, INT32, NS), PLD_SCALAR(kind, INT32),
           PLD_SCALAR(root, INT32)) {
  pld_launch(a, k_same, 1, w, t, sig, kind, root);
}

/* x[r] into window w on every rank; the collective `kind` at host level
 * (or, with `kernel`, the kernel form); the result (w, or t for the ones
 * with a target) into y[r].  Allgather's stage is a window of one row. */
PLD_HOST(h_coll, h, PLD_IN(x, INT32, NR, NR, R), PLD_OUT(y, INT32, NR, NR, R),
         PLD_SCALAR(kind, INT32), PLD_SCALAR(root, INT32),
         PLD_SCALAR(kernel, INT32), PLD_SCALAR(blocks, INT32)) {
  int n = pld_world_size(h);
  int64_t r = pld_tensor_dim(x, 2), ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf wb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, r));
  pld_window_buf tb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, r));
  pld_window w = pld_window_view(h, wb, PLD_INT32, PLD_SHAPE(n, r));
  pld_window t = pld_window_view(h, tb, PLD_INT32, PLD_SHAPE(n, r));
  pld_window stage = pld_window_view(h, wb, PLD_INT32, PLD_SHAPE(r));
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_in, q, pld_slice(h, x, q), w);
  if (kernel) {
    pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
    pld_window sig = pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(ns));
    for (int q = 0; q < n; q++)
      pld_dispatch(h, d_same, q, w, t, sig, kind, root);
  } else if (kind == H_ALLREDUCE) {
    pld_host_allreduce(h, w, PLD_NO_WINDOW, PLD_REDUCE_SUM, PLD_ALLREDUCE_RING,
                       blocks);
  } else if (kind == H_BROADCAST) {
    pld_host_broadcast(h, w, PLD_NO_WINDOW, root, blocks);
  } else if (kind == H_ALLGATHER) {
    pld_host_allgather(h, stage, t, PLD_NO_WINDOW, blocks);
  } else if (kind == H_REDUCE_SCATTER) {
    pld_host_reduce_scatter(h, w, PLD_NO_WINDOW, PLD_REDUCE_MAX, blocks);
  } else {
    pld_host_all_to_all(h, w, t, PLD_NO_WINDOW, blocks);
  }
  int has_target = kind == H_ALLGATHER || kind == H_ALL_TO_ALL;
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_out, q, has_target ? t : w, pld_slice(h, y, q));
}

/* The results of one call, kernel form or host form, over n ranks. */
static pld_tensor run_kind(int n, int64_t r, int kind, int root, int kernel,
                           int blocks, pld_tensor x) {
  pld_config cfg = comm_config(n);
  pld_tensor y = comm_int_tensor(-1, 3, (int64_t[]){n, n, r});
  int32_t k = kind, rt = root, kn = kernel, bl = blocks;
  assert_ok(pld_run(h_coll, &cfg, PLD_ARGS(x, y, k, rt, kn, bl)));
  return y;
}

/* The C reference of rank q's result. */
static int32_t want(int kind, int root, int n, int64_t r, const int32_t *x,
                    int q, int64_t row, int64_t e) {
  const int64_t per = n * r, i = row * r + e;
  switch (kind) {
  case H_ALLREDUCE: {
    int32_t s = 0;
    for (int p = 0; p < n; p++)
      s += x[p * per + i];
    return s;
  }
  case H_BROADCAST:
    return x[root * per + i];
  case H_ALLGATHER:
    return x[row * per + e];
  case H_REDUCE_SCATTER: {
    if (row != q)
      return x[q * per + i];
    int32_t m = x[i];
    for (int p = 1; p < n; p++)
      m = x[p * per + i] > m ? x[p * per + i] : m;
    return m;
  }
  default:
    return x[row * per + q * r + e];
  }
}

static void run_every_kind(int n) {
  const int64_t r = 1000 + n; /* not a multiple of n */
  pld_tensor x = comm_tensor(PLD_INT32, 3, (int64_t[]){n, n, r});
  int32_t *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (int32_t)((i * 2654435761u) % 1000003) - 500000;
  for (int kind = H_ALLREDUCE; kind <= H_ALL_TO_ALL; kind++) {
    int root = kind == H_BROADCAST ? n - 1 : 0;
    pld_tensor host = run_kind(n, r, kind, root, 0, 1, x);
    const int32_t *ys = pld_tensor_data(host);
    for (int q = 0; q < n; q++)
      for (int64_t row = 0; row < n; row++)
        for (int64_t e = 0; e < r; e++) {
          int32_t got = ys[(q * n + row) * r + e];
          int32_t w = want(kind, root, n, r, xs, q, row, e);
          if (got != w) {
            print_error("kind %d, %d ranks: rank %d row %lld element %lld: "
                        "got %d, expected %d\n",
                        kind, n, q, (long long)row, (long long)e, (int)got,
                        (int)w);
            fail();
          }
        }
    if (kind != H_ALLGATHER) { /* the kernel form gives the same bits */
      pld_tensor kern = run_kind(n, r, kind, root, 1, 1, x);
      comm_expect_i32("kernel form vs host form", pld_tensor_data(kern), ys,
                      pld_tensor_numel(x));
      pld_tensor_destroy(kern);
    }
    /* On 2 and 3 blocks (the original's core_num): the same bits. */
    for (int blocks = 2; blocks <= 3; blocks++) {
      pld_tensor more = run_kind(n, r, kind, root, 0, blocks, x);
      char what[64];
      snprintf(what, sizeof what, "host form on %d blocks vs on 1", blocks);
      comm_expect_i32(what, pld_tensor_data(more), ys, pld_tensor_numel(x));
      pld_tensor_destroy(more);
    }
    pld_tensor_destroy(host);
  }
  pld_tensor_destroy(x);
}

static void test_host_collectives(void **state) {
  (void)state;
  comm_over_rank_counts(run_every_kind);
}

/* ---- all-to-all-v from the host ---------------------------------------- */

/* Rank s sends rows [q VMAX, q VMAX + sc[s][q]) of x[s] to rows [s VMAX,
 * ...) of rank q's target; the counts are tensors of the host [P, P] (row
 * r for rank r).  The target starts at V_SENTINEL, so that rows past a
 * count are seen to be left alone. */
enum { VMAX = 5, V_SENTINEL = -7 };
PLD_DYNAMIC(VR); /* NR * VMAX rows */

PLD_KERNEL(k_v_fill, k, PLD_WINDOW(t, INT32, VR, R)) {
  int64_t rows = pld_tensor_dim(pld_local(t), 0);
  int32_t cols = (int32_t)pld_tensor_dim(pld_local(t), 1);
  pld_tile *tl = pld_full(k, PLD_INT32, 1, cols, V_SENTINEL);
  for (int64_t r = 0; r < rows; r++)
    pld_store(k, tl, pld_local(t), r, 0);
}
PLD_DEVICE(d_v_fill, a, PLD_WINDOW(t, INT32, VR, R)) {
  pld_launch(a, k_v_fill, 1, t);
}
PLD_KERNEL(k_v_out, k, PLD_WINDOW(t, INT32, VR, R), PLD_OUT(y, INT32, VR, R)) {
  copy_rows(k, pld_local(t), y);
}
PLD_DEVICE(d_v_out, a, PLD_WINDOW(t, INT32, VR, R), PLD_OUT(y, INT32, VR, R)) {
  pld_launch(a, k_v_out, 1, t, y);
}
PLD_HOST(h_a2av, h, PLD_IN(x, INT32, NR, VR, R), PLD_IN(sc, INT32, NR, NR),
         PLD_OUT(rc, INT32, NR, NR), PLD_OUT(y, INT32, NR, VR, R),
         PLD_SCALAR(blocks, INT32)) {
  int n = pld_world_size(h);
  int64_t vr = pld_tensor_dim(x, 1), r = pld_tensor_dim(x, 2);
  pld_window_buf tb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(vr, r));
  pld_window t = pld_window_view(h, tb, PLD_INT32, PLD_SHAPE(vr, r));
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_v_fill, q, t);
  pld_host_all_to_all_v(h, x, sc, t, rc, PLD_NO_WINDOW, blocks);
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_v_out, q, t, pld_slice(h, y, q));
}

/* Runs h_a2av with counts sc on n ranks; checks the result against the C
 * reference when the run succeeds; returns its status. */
static int a2av_run(int n, const int32_t *counts, int32_t blocks) {
  const int64_t vr = (int64_t)n * VMAX, r = 3;
  pld_config cfg = comm_config(n);
  pld_tensor x = comm_tensor(PLD_INT32, 3, (int64_t[]){n, vr, r});
  pld_tensor sc = comm_tensor(PLD_INT32, 2, (int64_t[]){n, n});
  pld_tensor rc = comm_int_tensor(-1, 2, (int64_t[]){n, n});
  pld_tensor y = comm_int_tensor(-1, 3, (int64_t[]){n, vr, r});
  int32_t *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (int32_t)(i * 7 + 1);
  memcpy(pld_tensor_data(sc), counts, (size_t)(n * n) * sizeof *counts);
  int st = pld_run(h_a2av, &cfg, PLD_ARGS(x, sc, rc, y, blocks));
  const int32_t *ys = pld_tensor_data(y), *rcs = pld_tensor_data(rc);
  for (int q = 0; q < n && st == PLD_OK; q++)
    for (int s = 0; s < n; s++) {
      const int32_t c = counts[s * n + q];
      assert_int_equal(rcs[q * n + s], c); /* rank q got c rows from s */
      for (int64_t row = 0; row < VMAX; row++)
        for (int64_t e = 0; e < r; e++) {
          int32_t got = ys[(q * vr + s * VMAX + row) * r + e];
          int32_t w =
              row < c ? xs[(s * vr + q * VMAX + row) * r + e] : V_SENTINEL;
          if (got != w) {
            print_error("%d ranks: rank %d, block of rank %d, row %lld "
                        "element %lld: got %d, expected %d\n",
                        n, q, s, (long long)row, (long long)e, (int)got,
                        (int)w);
            fail();
          }
        }
    }
  pld_tensor_destroy(x);
  pld_tensor_destroy(sc);
  pld_tensor_destroy(rc);
  pld_tensor_destroy(y);
  return st;
}

static void run_host_all_to_all_v(int n) {
  int32_t counts[16];
  for (int i = 0; i < n * n; i++) /* 0 and VMAX among them */
    counts[i] = (int32_t)((i * 3 + n) % (VMAX + 1));
  assert_ok(a2av_run(n, counts, 1));
  assert_ok(a2av_run(n, counts, 2));
  counts[n * n - 1] = VMAX + 1; /* one past the block: nothing moves */
  pld_test_assert_fails(a2av_run(n, counts, 1), PLD_ERR_BOUNDS, __FILE__,
                        __LINE__, (const char *[]){"pld_all_to_all_v", NULL});
}

static void test_host_all_to_all_v(void **state) {
  (void)state;
  comm_over_rank_counts(run_host_all_to_all_v);
}

/* ---- mistakes fail the compile ------------------------------------------ */

enum {
  M_ROOT,
  M_ROOT_NEG,
  M_OP,
  M_DTYPE,
  M_TARGET_ROWS,
  M_OVERLAP,
  M_SIG,
  M_BLOCKS,
  M_BLOCKS_MORE,
  M_SIG_BLOCKS,
  M_BLOCKS_ALL,
  M_NULL
};

PLD_HOST(h_mistake, h, PLD_SCALAR(how, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf b = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, 8));
  pld_window w = pld_window_view(h, b, PLD_INT32, PLD_SHAPE(n, 8));
  pld_window_buf u = pld_window_alloc(h, 64);
  pld_window bytes = pld_window_view(h, u, PLD_UINT8, PLD_SHAPE(64));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window small = pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n));
  switch (how) {
  case M_ROOT:
    pld_host_broadcast(h, w, PLD_NO_WINDOW, n, 1);
    break;
  case M_ROOT_NEG:
    pld_host_broadcast(h, w, PLD_NO_WINDOW, -1, 1);
    break;
  case M_OP:
    pld_host_allreduce(h, w, PLD_NO_WINDOW, (pld_reduce_op)4,
                       PLD_ALLREDUCE_AUTO, 1);
    break;
  case M_DTYPE:
    pld_host_allreduce(h, bytes, PLD_NO_WINDOW, PLD_REDUCE_SUM,
                       PLD_ALLREDUCE_AUTO, 1);
    break;
  case M_TARGET_ROWS:
    pld_host_allgather(h, pld_window_view(h, b, PLD_INT32, PLD_SHAPE(8)),
                       pld_window_view(h, b, PLD_INT32, PLD_SHAPE(8 * n)),
                       PLD_NO_WINDOW, 1);
    break;
  case M_OVERLAP:
    pld_host_all_to_all(h, w, w, PLD_NO_WINDOW, 1);
    break;
  case M_SIG:
    pld_host_allreduce(h, w, small, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO, 1);
    break;
  case M_BLOCKS: /* past the vector cores (48 on a2a3sim) */
    pld_host_barrier(h, PLD_NO_WINDOW, 49);
    break;
  case M_BLOCKS_MORE: /* the program's own window, made for 2 blocks */
    pld_host_barrier(h, PLD_NO_WINDOW, 2);
    pld_host_barrier(h, PLD_NO_WINDOW, 3);
    break;
  case M_SIG_BLOCKS: /* the program's own window past the vector cores */
    pld_coll_signal(h, 49);
    break;
  case M_BLOCKS_ALL: /* no mistake: every vector core, the most allowed */
    pld_coll_signal(h, 48);
    pld_host_barrier(h, PLD_NO_WINDOW, 48);
    break;
  default:
    pld_host_allreduce(h, PLD_NO_WINDOW, PLD_NO_WINDOW, PLD_REDUCE_SUM,
                       PLD_ALLREDUCE_AUTO, 1);
    break;
  }
}

static int compile_mistake(int n, int how) {
  pld_config cfg = comm_config(n);
  pld_program *p = NULL;
  int32_t h = how;
  int st = pld_compile(h_mistake, &cfg, PLD_ARGS(h), &p);
  assert_null(p);
  return st;
}

static void test_host_collective_mistakes(void **state) {
  (void)state;
  if (comm_fits(3))
    assert_fails_with(
        compile_mistake(3, M_ROOT), PLD_ERR_BOUNDS,
        "pld_host_broadcast (in h_mistake): root: expected a rank "
        "of the domain of window buffer #0, [0, 3), got 3");
  if (comm_fits(2))
    assert_fails_with(compile_mistake(2, M_ROOT_NEG), PLD_ERR_BOUNDS,
                      "root: expected a rank of the domain", "[0, 2), got -1");
  if (comm_fits(2))
    assert_fails_with(compile_mistake(2, M_OP), PLD_ERR_ARG,
                      "pld_host_allreduce (in h_mistake): op: expected "
                      "PLD_REDUCE_SUM, _MAX, _MIN or _PROD, got 4");
  if (comm_fits(2))
    assert_fails_with(
        compile_mistake(2, M_DTYPE), PLD_ERR_UNSUPPORTED,
        "pld_host_allreduce (in h_mistake): SUM window buffer #1 "
        "is UINT8: reductions take FP32, FP16, BF16, INT32, INT16 "
        "or INT8");
  if (comm_fits(4))
    assert_fails_with(compile_mistake(4, M_TARGET_ROWS), PLD_ERR_ARG,
                      "pld_host_allgather (in h_mistake): window buffer #0 is "
                      "INT32[32]: its leading dimension must be 4, the ranks "
                      "of its domain");
  if (comm_fits(2))
    assert_fails_with(
        compile_mistake(2, M_OVERLAP), PLD_ERR_ARG,
        "pld_host_all_to_all (in h_mistake): input (window buffer "
        "#0) and window buffer #0 share memory");
  char sig_small[160];
  snprintf(sig_small, sizeof sig_small,
           "pld_host_allreduce (in h_mistake): window buffer #2 is INT32[3]: "
           "expected INT32[n] with n >= %d (PLD_SIGNAL_CELLS(3, 1))",
           PLD_SIGNAL_CELLS(3, 1));
  if (comm_fits(3))
    assert_fails_with(compile_mistake(3, M_SIG), PLD_ERR_ARG, sig_small);
  if (comm_fits(2))
    assert_fails_with(compile_mistake(2, M_BLOCKS), PLD_ERR_ARG,
                      "pld_host_barrier (in h_mistake): blocks: expected 1 to "
                      "48 (the vector cores of an a2a3sim device), got 49");
  if (comm_fits(2))
    assert_fails_with(compile_mistake(2, M_BLOCKS_MORE), PLD_ERR_ARG,
                      "pld_host_barrier (in h_mistake): blocks: 3, but the "
                      "program's collective signal window holds the cells of 2 "
                      "blocks: declare it for the most blocks a call takes "
                      "(pld_coll_signal) before the first call");
  if (comm_fits(2))
    assert_fails_with(compile_mistake(2, M_SIG_BLOCKS), PLD_ERR_ARG,
                      "pld_coll_signal (in h_mistake): blocks: expected 1 to "
                      "48 (the vector cores of an a2a3sim device), got 49");
  if (comm_fits(2)) {
    /* Exactly the vector cores: compiles, and runs. */
    pld_config cfg = comm_config(2);
    pld_program *p = NULL;
    int32_t how = M_BLOCKS_ALL;
    assert_ok(pld_compile(h_mistake, &cfg, PLD_ARGS(how), &p));
    assert_ok(pld_program_run(p, PLD_ARGS(how)));
    pld_program_destroy(p);
  }
  if (comm_fits(2))
    assert_fails_with(compile_mistake(2, M_NULL), PLD_ERR_ARG,
                      "pld_host_allreduce (in h_mistake): data: expected a "
                      "window view (pld_window_view), got NULL");
  comm_ran_or_skip();
}

/* A kernel-level collective runs over one domain: a data window whose
 * domain (ranks 0 and 1) is not the signal's (ranks 0 to 2) is refused,
 * not read on a rank that has no copy of it. */
PLD_KERNEL(k_two_domains, k, PLD_WINDOW(data, INT32, 8),
           PLD_WINDOW(sig, INT32, NS)) {
  pld_allreduce(k, data, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
}
PLD_DEVICE(d_two_domains, a, PLD_WINDOW(data, INT32, 8),
           PLD_WINDOW(sig, INT32, NS)) {
  pld_launch(a, k_two_domains, 1, data, sig);
}
PLD_KERNEL(k_waits, k, PLD_WINDOW(sig, INT32, NS)) { pld_barrier(k, sig); }
PLD_DEVICE(d_waits, a, PLD_WINDOW(sig, INT32, NS)) {
  pld_launch(a, k_waits, 1, sig);
}
PLD_HOST(h_two_domains, h) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf d = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(8));
  pld_window_buf s = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  pld_window sig = pld_window_view(h, s, PLD_INT32, PLD_SHAPE(ns));
  for (int q = 0; q < n; q++)
    if (q < 2)
      pld_dispatch(h, d_two_domains, q,
                   pld_window_view(h, d, PLD_INT32, PLD_SHAPE(8)), sig);
    else
      pld_dispatch(h, d_waits, q, sig);
}

static void test_collective_over_two_domains(void **state) {
  (void)state;
  pld_config cfg = comm_config(3);
  assert_fails_with(pld_run(h_two_domains, &cfg, 0, NULL), PLD_ERR_ARG,
                    "pld_allreduce: kernel k_two_domains (rank ",
                    "window 'data' (buffer #0) spans 2 ranks and signal "
                    "window 'sig' (buffer #1) 3: a collective runs over one "
                    "domain");
}

/* pld_host_barrier: rank r writes 100 + r into its window after sleeping
 * (P - r) * 4 ms; then, after the host barrier, every rank reads its right
 * neighbour's window.  Without the barrier the early readers would see
 * zeros.  A barrier before the writes is harmless; one on a signal window
 * too small fails pld_compile. */
PLD_KERNEL(k_late_write, k, PLD_WINDOW(w, INT32, 1), PLD_SCALAR(ms, INT32)) {
  struct timespec ts = {0, (long)ms * 1000000L};
  nanosleep(&ts, NULL);
  pld_write(k, pld_local(w), PLD_AT(0), 100 + pld_rank(k, pld_window_comm(w)));
}
PLD_DEVICE(d_late_write, a, PLD_WINDOW(w, INT32, 1), PLD_SCALAR(ms, INT32)) {
  pld_launch(a, k_late_write, 1, w, ms);
}
PLD_KERNEL(k_read_right, k, PLD_WINDOW(w, INT32, 1), PLD_OUT(y, INT32, 1)) {
  pld_comm c = pld_window_comm(w);
  int32_t right = (pld_rank(k, c) + 1) % pld_nranks(k, c);
  pld_tile *t = pld_remote_load(k, w, right, 0, 0, 1, 1);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_read_right, a, PLD_WINDOW(w, INT32, 1), PLD_OUT(y, INT32, 1)) {
  pld_launch(a, k_read_right, 1, w, y);
}
PLD_HOST(h_barrier, h, PLD_OUT(y, INT32, NR, 1), PLD_SCALAR(sig_cells, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf b = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window w = pld_window_view(h, b, PLD_INT32, PLD_SHAPE(1));
  pld_window sig = PLD_NO_WINDOW;
  if (sig_cells) {
    pld_window_buf s =
        pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(sig_cells));
    sig = pld_window_view(h, s, PLD_INT32, PLD_SHAPE(sig_cells));
  }
  pld_host_barrier(h, sig, 1);
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_late_write, q, w, (int32_t)(n - q) * 4);
  pld_host_barrier(h, sig, 1);
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_read_right, q, w, pld_slice(h, y, q));
}

static void test_host_barrier(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    if (!comm_world_fits(n))
      continue; /* another job size runs it */
    pld_config cfg = comm_config(n);
    pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){n, 1});
    for (int own = 0; own < 2; own++) {
      int32_t cells = own ? PLD_SIGNAL_CELLS(n, 1) : 0;
      assert_ok(pld_run(h_barrier, &cfg, PLD_ARGS(y, cells)));
      const int32_t *ys = pld_tensor_data(y);
      for (int q = 0; q < n; q++)
        assert_int_equal(ys[q], 100 + (q + 1) % n);
    }
    /* One cell short of the signal a barrier needs: n cells. */
    int32_t cells = n - 1;
    char msg[160];
    snprintf(msg, sizeof msg,
             "pld_host_barrier (in h_barrier): window buffer #1 is "
             "INT32[%d]: expected INT32[n] with n >= %d (the domain's size)",
             n - 1, n);
    pld_program *p = NULL;
    assert_fails_with(pld_compile(h_barrier, &cfg, PLD_ARGS(y, cells), &p),
                      PLD_ERR_ARG, msg);
    pld_tensor_destroy(y);
  }
}

/* The artifact folder lists the builtin dispatches like the others, with
 * the blocks the call asked for. */
static void test_host_collective_artifacts(void **state) {
  (void)state;
  pld_config cfg = comm_config(2);
  cfg.artifact_dir = "";
  pld_tensor x = comm_int_tensor(1, 3, (int64_t[]){2, 2, 16});
  pld_tensor y = comm_int_tensor(0, 3, (int64_t[]){2, 2, 16});
  int32_t kind = H_ALLREDUCE, root = 0, kernel = 0, blocks = 2;
  pld_program *p;
  assert_ok(pld_compile(h_coll, &cfg,
                        PLD_ARGS(x, y, kind, root, kernel, blocks), &p));
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "grep -q 'dispatch 2: pld_allreduce on the AICPU' '%s/rank1.txt' "
           "&& grep -q 'kernel pld_allreduce on the AI cores: 2 blocks' "
           "'%s/rank1.txt' && grep -q 'dispatch 3: d_out' '%s/rank1.txt'",
           pld_program_artifact_dir(p), pld_program_artifact_dir(p),
           pld_program_artifact_dir(p));
  assert_int_equal(system(cmd), 0);
  assert_ok(pld_program_run(p, PLD_ARGS(x, y, kind, root, kernel, blocks)));
  const int32_t *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(y); i++)
    assert_int_equal(ys[i], 2);
  remove_dir(pld_program_artifact_dir(p));
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_host_collectives),
    cmocka_unit_test(test_host_collective_mistakes),
    cmocka_unit_test(test_host_collective_artifacts),
    cmocka_unit_test(test_collective_over_two_domains),
    cmocka_unit_test(test_host_barrier),
    cmocka_unit_test(test_host_all_to_all_v),
};

PLD_TEST_MAIN("comm_host_collective", tests)
