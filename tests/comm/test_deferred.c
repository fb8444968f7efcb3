/* Deferred waits (pld_wait_deferred): a block ends while its wait is
 * pending, its core goes to other blocks, and what depends on its launch
 * (a continuation kernel, the rank's next dispatch) starts once the cell
 * reaches its value.  Results against plain C, on 2, 3 and 4 ranks and
 * both simulators; more waiting blocks than cores; never-satisfied waits
 * reported as deadlocks; misuse with its messages. */
#include "comm_test.h"

enum { W = 8 }; /* elements each producer writes */

/* ---- more waiting blocks than cores, on one rank ----------------------- */

/* Blocks [0, nwait) wait until cell 0 of flag reaches nprod; blocks
 * [nwait, nwait + nprod) each write W values into data and add 1 to the
 * cell.  With nwait = the device's vector cores, the waiting blocks take
 * every core: a plain wait never lets a producer start (deadlock), a
 * deferred one frees the cores. */
PLD_DYNAMIC(NB);
PLD_KERNEL(k_waiters, k, PLD_WINDOW(flag, INT32, 1),
           PLD_WINDOW(data, INT32, NB, W), PLD_SCALAR(nwait, INT32),
           PLD_SCALAR(deferred, INT32)) {
  int32_t b = pld_block_idx(k), nprod = pld_block_num(k) - nwait;
  if (b < nwait) {
    if (deferred)
      pld_wait_deferred(k, flag, PLD_AT(0), nprod, PLD_WAIT_GE);
    else
      pld_wait(k, flag, PLD_AT(0), nprod, PLD_WAIT_GE);
    return;
  }
  int32_t p = b - nwait;
  for (int64_t i = 0; i < W; i++)
    pld_write(k, pld_local(data), PLD_AT(p, i), 1000 * p + (double)i);
  pld_notify(k, flag, pld_rank(k, pld_window_comm(flag)), PLD_AT(0), 1,
             PLD_NOTIFY_ADD);
}
/* The continuation: its window overlaps the waiting launch's, so it
 * starts once every deferred wait of that launch is satisfied; it sums
 * each producer's row into y. */
PLD_KERNEL(k_sum_rows, k, PLD_WINDOW(data, INT32, NB, W),
           PLD_OUT(y, INT32, NB)) {
  for (int64_t p = 0; p < pld_tensor_dim(y, 0); p++) {
    double s = 0;
    for (int64_t i = 0; i < W; i++)
      s += pld_read(k, pld_local(data), PLD_AT(p, i));
    pld_write(k, y, PLD_AT(p), s);
  }
}
PLD_DEVICE(d_waiters, a, PLD_WINDOW(flag, INT32, 1),
           PLD_WINDOW(data, INT32, NB, W), PLD_OUT(y, INT32, NB),
           PLD_SCALAR(nwait, INT32), PLD_SCALAR(deferred, INT32)) {
  int32_t nprod = (int32_t)pld_tensor_dim(y, 0);
  pld_launch(a, k_waiters, nwait + nprod, flag, data, nwait, deferred);
  pld_launch(a, k_sum_rows, 1, data, y);
}
PLD_HOST(h_waiters, h, PLD_OUT(y, INT32, NR, NB), PLD_SCALAR(nwait, INT32),
         PLD_SCALAR(deferred, INT32)) {
  int n = pld_world_size(h);
  int64_t nb = pld_tensor_dim(y, 1);
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf db = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(nb, W));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_waiters, r,
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, db, PLD_INT32, PLD_SHAPE(nb, W)),
                 pld_slice(h, y, r), nwait, deferred);
}

static void waiters_run(int n, const char *platform, int deferred) {
  if (!comm_fits(n))
    return;
  pld_config cfg = comm_config(n);
  cfg.platform = platform;
  cfg.wait_timeout_ms = 20000;
  const pld_platform_info *pf = pld_platform_find(platform);
  int32_t nwait = pf->vector_cores, nprod = 5, dfr = deferred;
  pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){n, nprod});
  int st = pld_run(h_waiters, &cfg, PLD_ARGS(y, nwait, dfr));
  if (!deferred) {
    /* Every core holds a waiting block: the producers never start. */
    char lack[160];
    snprintf(lack, sizeof lack,
             "%d AIV blocks cannot start for lack of a core: all %d AIV "
             "cores hold blocks that wait",
             (int)nprod, pf->vector_cores);
    assert_fails_with(st, PLD_ERR_DEADLOCK, "deadlock", lack);
  } else {
    assert_ok(st);
    const int32_t *ys = pld_tensor_data(y);
    for (int r = 0; r < n; r++)
      for (int p = 0; p < nprod; p++)
        assert_int_equal(ys[r * nprod + p], 8000 * p + 28);
  }
  pld_tensor_destroy(y);
}

static void test_more_waiting_blocks_than_cores(void **state) {
  (void)state;
  waiters_run(2, "a2a3sim", 0);
  for (int n = 2; n <= 3; n++) {
    waiters_run(n, "a2a3sim", 1);
    waiters_run(n, "a5sim", 1);
  }
  comm_ran_or_skip();
}

/* ---- a deferred wait satisfied while the AICPU waits in a block -------- */

/* Rank 0 launches k_hold (waits until its cell go[0] is set), k_defer
 * (defers waiting until every other rank added 1 to its flag) and
 * k_after, which depends on k_defer through flag and releases rank 1,
 * which then sets rank 0's go.  The AICPU runs k_hold itself and blocks
 * in it; k_defer's block ends on a core thread before the flag is full,
 * and no block ends after that: only the AICPU, woken in k_hold's wait by
 * the other ranks' notifies, can see the deferred wait satisfied. */
PLD_KERNEL(k_hold, k, PLD_WINDOW(go, INT32, 1), PLD_OUT(y, INT32, 1)) {
  pld_wait(k, go, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_write(k, y, PLD_AT(0), 7);
}
PLD_KERNEL(k_defer, k, PLD_WINDOW(flag, INT32, 1)) {
  int32_t n = pld_nranks(k, pld_window_comm(flag));
  pld_wait_deferred(k, flag, PLD_AT(0), n - 1, PLD_WAIT_GE);
}
PLD_KERNEL(k_after, k, PLD_WINDOW(flag, INT32, 1), PLD_WINDOW(rel, INT32, 1)) {
  pld_notify(k, rel, 1, PLD_AT(0), 1, PLD_NOTIFY_SET);
}
PLD_KERNEL(k_other, k, PLD_WINDOW(flag, INT32, 1), PLD_WINDOW(rel, INT32, 1),
           PLD_WINDOW(go, INT32, 1)) {
  struct timespec ts = {0, 30 * 1000000L}; /* rank 0 is waiting by now */
  nanosleep(&ts, NULL);
  pld_notify(k, flag, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  if (pld_rank(k, pld_window_comm(flag)) != 1)
    return;
  pld_wait(k, rel, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_notify(k, go, 0, PLD_AT(0), 1, PLD_NOTIFY_SET);
}
PLD_DEVICE(d_hold, a, PLD_WINDOW(go, INT32, 1), PLD_WINDOW(flag, INT32, 1),
           PLD_WINDOW(rel, INT32, 1), PLD_OUT(y, INT32, 1),
           PLD_SCALAR(rank, INT32)) {
  if (rank == 0) {
    pld_launch(a, k_hold, 1, go, y);
    pld_launch(a, k_defer, 1, flag);
    pld_launch(a, k_after, 1, flag, rel);
  } else {
    pld_launch(a, k_other, 1, flag, rel, go);
  }
}
PLD_HOST(h_hold, h, PLD_OUT(y, INT32, NR, 1)) {
  pld_window_buf gb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf rb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_hold, r, pld_window_view(h, gb, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, rb, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, y, r), r);
}

static void test_deferred_while_aicpu_waits(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    if (!comm_world_fits(n))
      continue; /* another job size runs it */
    pld_config cfg = comm_config(n);
    cfg.wait_timeout_ms = 5000; /* unseen, the deferred wait times out */
    pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){n, 1});
    assert_ok(pld_run(h_hold, &cfg, PLD_ARGS(y)));
    const int32_t *ys = pld_tensor_data(y);
    assert_int_equal(ys[0], 7);
    pld_tensor_destroy(y);
  }
}

/* ---- across ranks, and the rank's next dispatch ------------------------ */

/* Rank r defers waiting for the row its left neighbour puts into its
 * window (with a notify behind it), after the neighbour slept a little;
 * its next dispatch copies the row out, which it can only do right once
 * the wait is satisfied. */
PLD_KERNEL(k_ring_send, k, PLD_IN(x, INT32, W), PLD_WINDOW(box, INT32, W),
           PLD_WINDOW(flag, INT32, 1), PLD_SCALAR(sleep_ms, INT32)) {
  pld_comm c = pld_window_comm(box);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_wait_deferred(k, flag, PLD_AT(0), 1, PLD_WAIT_GE);
  struct timespec ts = {0, (long)sleep_ms * 1000000L};
  nanosleep(&ts, NULL);
  pld_put_notify(k, box, comm_next(me, n), x, NULL, flag, PLD_AT(0), 1,
                 PLD_NOTIFY_ADD);
}
PLD_DEVICE(d_ring_send, a, PLD_IN(x, INT32, W), PLD_WINDOW(box, INT32, W),
           PLD_WINDOW(flag, INT32, 1), PLD_SCALAR(sleep_ms, INT32)) {
  pld_launch(a, k_ring_send, 1, x, box, flag, sleep_ms);
}
PLD_KERNEL(k_take, k, PLD_WINDOW(box, INT32, W), PLD_OUT(y, INT32, W)) {
  pld_get(k, y, pld_rank(k, pld_window_comm(box)), box, NULL);
}
PLD_DEVICE(d_take, a, PLD_WINDOW(box, INT32, W), PLD_OUT(y, INT32, W)) {
  pld_launch(a, k_take, 1, box, y);
}
PLD_HOST(h_ring, h, PLD_IN(x, INT32, NR, W), PLD_OUT(y, INT32, NR, W)) {
  int n = pld_world_size(h);
  pld_window_buf bb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(W));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window box = pld_window_view(h, bb, PLD_INT32, PLD_SHAPE(W));
  pld_window flag = pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_ring_send, r, pld_slice(h, x, r), box, flag,
                 (int32_t)(n - r) * 3);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_take, r, box, pld_slice(h, y, r));
}

static void ring_run(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor x = comm_int_tensor(0, 2, (int64_t[]){n, W});
  pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){n, W});
  int32_t *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < n * W; i++)
    xs[i] = (int32_t)(i * 13 + 7);
  pld_program *p;
  assert_ok(pld_compile(h_ring, &cfg, PLD_ARGS(x, y), &p));
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    const int32_t *ys = pld_tensor_data(y);
    for (int r = 0; r < n; r++)
      comm_expect_i32("y[r] = x[r - 1]", ys + r * W, xs + comm_prev(r, n) * W,
                      W);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_deferred_across_ranks(void **state) {
  (void)state;
  comm_over_rank_counts(ring_run);
}

/* ---- never satisfied, and misuse ---------------------------------------- */

enum { U_NEVER, U_FLOAT_WINDOW, U_BAD_CMP, U_TOO_MANY, U_SATISFIED };

PLD_KERNEL(k_misuse, k, PLD_WINDOW(flag, INT32, 1), PLD_WINDOW(f, FP32, 1),
           PLD_SCALAR(what, INT32)) {
  switch (what) {
  case U_NEVER:
    pld_wait_deferred(k, flag, PLD_AT(0), 5, PLD_WAIT_EQ);
    break;
  case U_FLOAT_WINDOW:
    pld_wait_deferred(k, f, PLD_AT(0), 1, PLD_WAIT_GE);
    break;
  case U_BAD_CMP:
    pld_wait_deferred(k, flag, PLD_AT(0), 1, (pld_wait_cmp)9);
    break;
  case U_TOO_MANY:
    for (int i = 0; i <= PLD_MAX_DEFERRED_WAITS; i++)
      pld_wait_deferred(k, flag, PLD_AT(0), 100 + i, PLD_WAIT_GE);
    break;
  default: /* already satisfied: nothing waits */
    pld_wait_deferred(k, flag, PLD_AT(0), 0, PLD_WAIT_EQ);
    break;
  }
}
PLD_DEVICE(d_misuse, a, PLD_WINDOW(flag, INT32, 1), PLD_WINDOW(f, FP32, 1),
           PLD_SCALAR(what, INT32)) {
  pld_launch(a, k_misuse, 1, flag, f, what);
}
PLD_HOST(h_misuse, h, PLD_SCALAR(what, INT32)) {
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf gb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_misuse, r,
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, gb, PLD_FP32, PLD_SHAPE(1)), what);
}

static int misuse_run(int what) {
  pld_config cfg = comm_config(2);
  int32_t w = what;
  return pld_run(h_misuse, &cfg, PLD_ARGS(w));
}

static void test_deferred_never_satisfied(void **state) {
  (void)state;
  assert_fails_with(misuse_run(U_NEVER), PLD_ERR_DEADLOCK,
                    "deadlock: these waits can never be satisfied",
                    "kernel k_misuse (block 0 of 1, ended with its wait "
                    "deferred) waits on window 'flag' (buffer #0) cell [0] == "
                    "5; it holds 0");
  assert_ok(misuse_run(U_SATISFIED));
}

static void test_deferred_misuse(void **state) {
  (void)state;
  assert_fails_with(misuse_run(U_FLOAT_WINDOW), PLD_ERR_ARG,
                    "pld_wait_deferred: kernel k_misuse (rank ",
                    "window 'f' (buffer #1) is FP32: signals are INT32 cells");
  assert_fails_with(misuse_run(U_BAD_CMP), PLD_ERR_ARG,
                    "pld_wait_deferred: kernel k_misuse",
                    "cmp: expected PLD_WAIT_EQ, _GE, _NE, _GT, _LT or _LE, "
                    "got 9");
  assert_fails_with(misuse_run(U_TOO_MANY), PLD_ERR_UNSUPPORTED,
                    "pld_wait_deferred: kernel k_misuse",
                    "more than 8 deferred waits in one block");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_more_waiting_blocks_than_cores),
    cmocka_unit_test(test_deferred_across_ranks),
    cmocka_unit_test(test_deferred_while_aicpu_waits),
    cmocka_unit_test(test_deferred_never_satisfied),
    cmocka_unit_test(test_deferred_misuse),
};

PLD_TEST_MAIN("deferred", tests)
