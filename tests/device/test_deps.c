/* Explicit dependencies (pld_launch_task, pld_launch_after,
 * pld_launch_by_after) and manual scopes (pld_manual_scope_begin/end),
 * issue 27 point 3.
 *
 * Every order here is made by signals, never by time.  What an edge does
 * shows every time, not by chance: a consumer whose producer is released
 * only after the consumer ran is a deadlock the watch reports with the
 * edge, and reads the value from before the producer without it; with a
 * free release, the edge makes it read the producer's value.
 *
 *  - In a manual scope, a consumer ordered after a slow producer by an
 *    edge reads what the producer left in a side channel pld cannot see;
 *    without the edge it reads it before (the producer's release waits
 *    for the consumer); with the edge and that release, the run is a
 *    deadlock the watch reports (a task waiting on a dependency that never
 *    finishes).
 *  - pld_launch_by_after in a manual scope: the block count's writer
 *    still orders the reader, the data's writer only by the edge (the same
 *    three modes).
 *  - A manual scope drops the automatic edge: two writers of one tensor
 *    that wait for each other's signal complete in the scope and deadlock
 *    without it; the order against tasks before and after the scope holds.
 *  - The original's deferred-completion scenario (deferred_notify_demo):
 *    a producer puts its data into a peer's mailbox, a task whose
 *    completion is deferred until the peer's notify arrives, and a consumer
 *    of the mailbox that waits for that task by an edge, on 2, 3 and 4
 *    ranks, against plain C; with the race detector on, the same program
 *    without the edge is reported as a race.
 *  - Every misuse is refused when compiling, with its message. */
#include <stdatomic.h>

#include "../comm/comm_test.h"

/* ---- an edge orders a side channel, in a manual scope -------------------- */

enum { MAGIC = 4242 };

/* The side channel: memory of the device process, which no signature
 * names, so the scheduler cannot order anything by it. */
static atomic_int side;

/* Waits for go[0], then leaves MAGIC in the side channel. */
PLD_KERNEL(k_slow_producer, k, PLD_WINDOW(go, INT32, 2)) {
  pld_wait(k, go, PLD_AT(0), 1, PLD_WAIT_GE);
  atomic_store(&side, MAGIC);
}
/* y = the side channel; then go[1] += 1 (this rank's). */
PLD_KERNEL(k_side_reader, k, PLD_WINDOW(go, INT32, 2), PLD_OUT(y, INT32, 1)) {
  pld_write(k, y, PLD_AT(0), atomic_load(&side));
  pld_notify(k, go, pld_rank(k, pld_window_comm(go)), PLD_AT(1), 1,
             PLD_NOTIFY_ADD);
}
/* Releases the producer (go[0] = 1), after the reader if `after_reader`. */
PLD_KERNEL(k_release, k, PLD_WINDOW(go, INT32, 2),
           PLD_SCALAR(after_reader, INT32)) {
  if (after_reader)
    pld_wait(k, go, PLD_AT(1), 1, PLD_WAIT_GE);
  pld_notify(k, go, pld_rank(k, pld_window_comm(go)), PLD_AT(0), 1,
             PLD_NOTIFY_SET);
}

/* mode 0: the reader after the producer, the release free: MAGIC.
 * mode 1: no edge, the release after the reader: 0 (the reader ran first).
 * mode 2: the edge and the release after the reader: a deadlock. */
PLD_DEVICE(d_side, a, PLD_WINDOW(go, INT32, 2), PLD_OUT(y, INT32, 1),
           PLD_SCALAR(mode, INT32)) {
  atomic_store(&side, 0);
  pld_manual_scope_begin(a);
  pld_task_id p = pld_launch_task(a, k_slow_producer, 1, go);
  if (mode == 1)
    pld_launch(a, k_side_reader, 1, go, y);
  else
    pld_launch_after(a, PLD_DEPS(p), k_side_reader, 1, go, y);
  pld_launch(a, k_release, 1, go, mode != 0);
  pld_manual_scope_end(a);
}
PLD_HOST(h_side, h, PLD_OUT(y, INT32, NR, 1), PLD_SCALAR(mode, INT32)) {
  pld_window_buf gb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_side, r, pld_window_view(h, gb, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, y, r), mode);
}

static int side_run(int n, int32_t mode, pld_tensor y) {
  pld_config cfg = comm_config(n);
  if (mode == 2)
    cfg.wait_timeout_ms = 0; /* the deadlock watch tells, not a limit */
  return pld_run(h_side, &cfg, PLD_ARGS(y, mode));
}

static void test_edge_orders_side_channel(void **state) {
  (void)state;
  for (int n = 2; n <= 3; n++) {
    if (!comm_world_fits(n))
      continue;
    pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){n, 1});
    for (int32_t mode = 0; mode <= 1; mode++) {
      assert_ok(side_run(n, mode, y));
      for (int r = 0; r < n; r++)
        assert_int_equal(((int32_t *)pld_tensor_data(y))[r],
                         mode == 0 ? MAGIC : 0);
    }
    pld_tensor_destroy(y);
  }
}

static void test_edge_deadlock_reported(void **state) {
  (void)state;
  pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){2, 1});
  /* The producer waits for the release, which waits for the reader,
   * which waits (by its edge) for the producer. */
  assert_fails_with(side_run(2, 2, y), PLD_ERR_DEADLOCK, "deadlock",
                    "k_slow_producer", "k_release");
  pld_tensor_destroy(y);
}

/* ---- pld_launch_by_after: a block count read on the device, an edge ----- */

enum { NB = 4 };

/* counts[0] = NB. */
PLD_KERNEL(k_count, k, PLD_OUT(counts, INT32, 1)) {
  pld_write(k, counts, PLD_AT(0), NB);
}
/* t = 7 everywhere. */
PLD_KERNEL(k_sevens, k, PLD_OUT(t, INT32, NB)) {
  for (int64_t i = 0; i < NB; i++)
    pld_write(k, t, PLD_AT(i), 7);
}
/* Waits for go[0], then t[i] = 100 + i. */
PLD_KERNEL(k_slow_writer, k, PLD_OUT(t, INT32, NB), PLD_WINDOW(go, INT32, 2)) {
  pld_wait(k, go, PLD_AT(0), 1, PLD_WAIT_GE);
  for (int64_t i = 0; i < NB; i++)
    pld_write(k, t, PLD_AT(i), 100 + (double)i);
}
/* Block b: y[b] = t[b], then go[1] += 1. */
PLD_KERNEL(k_by_reader, k, PLD_IN(t, INT32, NB), PLD_OUT(y, INT32, NB),
           PLD_WINDOW(go, INT32, 2)) {
  int32_t b = pld_block_idx(k);
  pld_write(k, y, PLD_AT(b), pld_read(k, t, PLD_AT(b)));
  pld_notify(k, go, pld_rank(k, pld_window_comm(go)), PLD_AT(1), 1,
             PLD_NOTIFY_ADD);
}
/* Releases the writer, after every reader block if `after_reader`. */
PLD_KERNEL(k_release_by, k, PLD_WINDOW(go, INT32, 2),
           PLD_SCALAR(after_reader, INT32)) {
  if (after_reader)
    pld_wait(k, go, PLD_AT(1), NB, PLD_WAIT_GE);
  pld_notify(k, go, pld_rank(k, pld_window_comm(go)), PLD_AT(0), 1,
             PLD_NOTIFY_SET);
}
/* In a manual scope: the counts' writer still orders the reader (the
 * device reads them); t's writer only by the edge.  mode 0: the edge, the
 * release free: 100 + i.  mode 1: no edge, the release after the reader:
 * the sevens launched before the scope.  mode 2: the edge and the release
 * after the reader: a deadlock. */
PLD_DEVICE(d_by, a, PLD_WINDOW(go, INT32, 2), PLD_OUT(y, INT32, NB),
           PLD_SCALAR(mode, INT32)) {
  pld_tensor counts = pld_device_alloc(a, PLD_INT32, PLD_SHAPE(1));
  pld_tensor t = pld_device_alloc(a, PLD_INT32, PLD_SHAPE(NB));
  pld_launch(a, k_sevens, 1, t);
  pld_manual_scope_begin(a);
  pld_launch(a, k_count, 1, counts);
  pld_task_id w = pld_launch_task(a, k_slow_writer, 1, t, go);
  pld_blocks_by by = PLD_BLOCKS_BY(counts, 0, 1, NB);
  if (mode == 1)
    pld_launch_by(a, k_by_reader, by, t, y, go);
  else
    pld_launch_by_after(a, PLD_DEPS(w), k_by_reader, by, t, y, go);
  pld_launch(a, k_release_by, 1, go, mode != 0);
  pld_manual_scope_end(a);
}
PLD_HOST(h_by, h, PLD_OUT(y, INT32, NR, NB), PLD_SCALAR(mode, INT32)) {
  pld_window_buf gb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_by, r, pld_window_view(h, gb, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, y, r), mode);
}

static void test_launch_by_after(void **state) {
  (void)state;
  pld_config cfg = comm_config(2);
  pld_tensor y = comm_int_tensor(-1, 2, (int64_t[]){2, NB});
  int32_t mode;
  for (mode = 0; mode <= 1; mode++) {
    assert_ok(pld_run(h_by, &cfg, PLD_ARGS(y, mode)));
    const int32_t *ys = pld_tensor_data(y);
    for (int i = 0; i < 2 * NB; i++)
      assert_int_equal(ys[i], mode == 0 ? 100 + i % NB : 7);
  }
  mode = 2;
  cfg.wait_timeout_ms = 0;
  assert_fails_with(pld_run(h_by, &cfg, PLD_ARGS(y, mode)), PLD_ERR_DEADLOCK,
                    "deadlock", "k_slow_writer", "k_release_by");
  pld_tensor_destroy(y);
}

/* ---- a manual scope drops the automatic edge ----------------------------- */

enum { SC = 8 };

/* t[0] = 1 everywhere. */
PLD_KERNEL(k_init, k, PLD_OUT(t, FP32, 2, SC)) {
  pld_store(k, pld_full(k, PLD_FP32, 2, SC, 1.0), t, 0, 0);
}
/* Row `row` of t += 10 * (row + 1), once the other writer signalled:
 * sig[row] += 1, then wait for sig[1 - row]. */
PLD_KERNEL(k_pair_writer, k, PLD_INOUT(t, FP32, 2, SC),
           PLD_WINDOW(sig, INT32, 2), PLD_SCALAR(row, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  pld_notify(k, sig, me, PLD_AT(row), 1, PLD_NOTIFY_ADD);
  pld_wait(k, sig, PLD_AT(1 - row), 1, PLD_WAIT_GE);
  pld_tile *v = pld_load(k, t, row, 0, 1, SC);
  pld_adds(k, v, v, 10.0 * (row + 1));
  pld_store(k, v, t, row, 0);
}
PLD_KERNEL(k_copy_out, k, PLD_IN(t, FP32, 2, SC), PLD_OUT(y, FP32, 2, SC)) {
  pld_store(k, pld_load(k, t, 0, 0, 2, SC), y, 0, 0);
}
PLD_DEVICE(d_pair, a, PLD_WINDOW(sig, INT32, 2), PLD_OUT(y, FP32, 2, SC),
           PLD_SCALAR(manual, INT32)) {
  pld_tensor t = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(2, SC));
  pld_launch(a, k_init, 1, t); /* before the scope: both writers wait */
  if (manual)
    pld_manual_scope_begin(a);
  pld_launch(a, k_pair_writer, 1, t, sig, 0);
  pld_launch(a, k_pair_writer, 1, t, sig, 1);
  if (manual)
    pld_manual_scope_end(a);
  pld_launch(a, k_copy_out, 1, t, y); /* after: waits for both */
}
PLD_HOST(h_pair, h, PLD_OUT(y, FP32, NR, 2, SC), PLD_SCALAR(manual, INT32)) {
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_pair, r, pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, y, r), manual);
}

static void pair_run(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor y = comm_tensor(PLD_FP32, PLD_SHAPE(n, 2, SC));
  int32_t manual = 1;
  assert_ok(pld_run(h_pair, &cfg, PLD_ARGS(y, manual)));
  const float *ys = pld_tensor_data(y);
  for (int i = 0; i < n * 2 * SC; i++)
    assert_true(ys[i] == ((i / SC) % 2 ? 21.0f : 11.0f));
  /* Without the scope the second writer waits for the first, which waits
   * for the second's signal. */
  manual = 0;
  cfg.wait_timeout_ms = 0;
  assert_fails_with(pld_run(h_pair, &cfg, PLD_ARGS(y, manual)),
                    PLD_ERR_DEADLOCK, "deadlock", "k_pair_writer");
  pld_tensor_destroy(y);
}

static void test_manual_scope_drops_tensor_order(void **state) {
  (void)state;
  comm_over_rank_counts(pair_run);
}

/* ---- the original's deferred-completion scenario ------------------------ */

enum { W = 64 };

/* Puts this rank's partial into the previous rank's mailbox, a notify on
 * its counter behind the data. */
PLD_KERNEL(k_producer, k, PLD_IN(partial, FP32, W),
           PLD_WINDOW(mailbox, FP32, W), PLD_WINDOW(counter, INT32, 1)) {
  pld_comm c = pld_window_comm(mailbox);
  int32_t n = pld_nranks(k, c), to = (pld_rank(k, c) + n - 1) % n;
  pld_put_notify(k, mailbox, to, partial, NULL, counter, PLD_AT(0), 1,
                 PLD_NOTIFY_ADD);
}
/* Completes (its task finishes) once this rank's counter reached 1: the
 * block itself ends at once. */
PLD_KERNEL(k_notify_wait, k, PLD_WINDOW(counter, INT32, 1)) {
  pld_wait_deferred(k, counter, PLD_AT(0), 1, PLD_WAIT_GE);
}
/* result = this rank's mailbox. */
PLD_KERNEL(k_consumer, k, PLD_WINDOW(mailbox, FP32, W),
           PLD_OUT(result, FP32, W)) {
  pld_store(k, pld_load(k, pld_local(mailbox), 0, 0, 1, W), result, 0, 0);
}
/* The consumer shares no tensor with the notify wait: only the edge
 * (`edge`) makes it wait for the peer's data. */
PLD_DEVICE(d_deferred, a, PLD_IN(partial, FP32, W),
           PLD_WINDOW(mailbox, FP32, W), PLD_WINDOW(counter, INT32, 1),
           PLD_OUT(result, FP32, W), PLD_SCALAR(edge, INT32)) {
  pld_launch(a, k_producer, 1, partial, mailbox, counter);
  pld_task_id notified = pld_launch_task(a, k_notify_wait, 1, counter);
  if (edge)
    pld_launch_after(a, PLD_DEPS(notified), k_consumer, 1, mailbox, result);
  else
    pld_launch(a, k_consumer, 1, mailbox, result);
}
PLD_HOST(h_deferred, h, PLD_IN(partial, FP32, NR, W),
         PLD_OUT(result, FP32, NR, W), PLD_SCALAR(edge, INT32)) {
  pld_window_buf mb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(W));
  pld_window_buf cb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_deferred, r, pld_slice(h, partial, r),
                 pld_window_view(h, mb, PLD_FP32, PLD_SHAPE(W)),
                 pld_window_view(h, cb, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, result, r), edge);
}

static void deferred_run(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor partial = comm_tensor(PLD_FP32, PLD_SHAPE(n, W));
  pld_tensor result = comm_tensor(PLD_FP32, PLD_SHAPE(n, W));
  float *ps = pld_tensor_data(partial);
  for (int i = 0; i < n * W; i++)
    ps[i] = (float)(i / W + 1) + (float)(i % W) / 100.0f;
  int32_t edge = 1;
  for (int run = 0; run < 3; run++) {
    assert_ok(pld_run(h_deferred, &cfg, PLD_ARGS(partial, result, edge)));
    /* The original's golden: rank r's result is rank r + 1's partial. */
    const float *rs = pld_tensor_data(result);
    for (int r = 0; r < n; r++)
      comm_expect_f32("result", rs + r * W, ps + ((r + 1) % n) * W, W);
  }
  if (pld_process_count() == 1) {
    /* The race detector sees the edge as an order: with it, no race. */
    cfg.check = "races";
    assert_ok(pld_run(h_deferred, &cfg, PLD_ARGS(partial, result, edge)));
    /* Without it the consumer's read of its mailbox is ordered after no
     * put into it. */
    edge = 0;
    assert_fails_with(
        pld_run(h_deferred, &cfg, PLD_ARGS(partial, result, edge)),
        PLD_ERR_RACE, "k_consumer", "k_producer");
  }
  pld_tensor_destroy(partial);
  pld_tensor_destroy(result);
}

static void test_deferred_completion_edge(void **state) {
  (void)state;
  comm_over_rank_counts(deferred_run);
}

/* A deferred wait never satisfied: its dependent never starts, and the
 * deadlock watch reports the wait. */
PLD_DEVICE(d_never, a, PLD_WINDOW(mailbox, FP32, W),
           PLD_WINDOW(counter, INT32, 1), PLD_OUT(result, FP32, W)) {
  pld_task_id notified = pld_launch_task(a, k_notify_wait, 1, counter);
  pld_launch_after(a, PLD_DEPS(notified), k_consumer, 1, mailbox, result);
}
PLD_HOST(h_never, h, PLD_OUT(result, FP32, NR, W)) {
  pld_window_buf mb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(W));
  pld_window_buf cb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_never, r, pld_window_view(h, mb, PLD_FP32, PLD_SHAPE(W)),
                 pld_window_view(h, cb, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, result, r));
}

static void test_deferred_never_satisfied(void **state) {
  (void)state;
  pld_config cfg = comm_config(2);
  cfg.wait_timeout_ms = 0;
  pld_tensor result = comm_tensor(PLD_FP32, PLD_SHAPE(2, W));
  assert_fails_with(pld_run(h_never, &cfg, PLD_ARGS(result)), PLD_ERR_DEADLOCK,
                    "deadlock", "k_notify_wait", "deferred");
  pld_tensor_destroy(result);
}

/* ---- misuse, refused when compiling -------------------------------------- */

PLD_KERNEL(k_touch, k, PLD_OUT(y, INT32, 1)) { pld_write(k, y, PLD_AT(0), 1); }

/* An id kept from another trace of a device function. */
static pld_task_id kept;

PLD_DEVICE(d_misuse, a, PLD_OUT(y, INT32, 1), PLD_SCALAR(what, INT32),
           PLD_SCALAR(rank, INT32), PLD_SCALAR(last, INT32)) {
  pld_task_id t = pld_launch_task(a, k_touch, 1, y);
  pld_task_id many[PLD_MAX_DEPS + 1];
  for (int i = 0; i <= PLD_MAX_DEPS; i++)
    many[i] = t;
  switch (what) {
  case 0: /* another rank's (rank 0 keeps, the last uses) */
  case 1: /* another call's (rank 0's first call keeps, its second uses) */
    if (rank == (what == 0 ? last : 0) && kept.call)
      pld_launch_after(a, PLD_DEPS(kept), k_touch, 1, y);
    if (rank == 0)
      kept = t;
    break;
  case 2:
    pld_launch_after(a, PLD_DEPS(t, PLD_NO_TASK), k_touch, 1, y);
    break;
  case 3:
    t.index += 5;
    pld_launch_after(a, PLD_DEPS(t), k_touch, 1, y);
    break;
  case 4:
    pld_launch_after(a, ((pld_deps){PLD_MAX_DEPS + 1, many}), k_touch, 1, y);
    break;
  case 5:
    pld_launch_after(a, ((pld_deps){2, NULL}), k_touch, 1, y);
    break;
  case 6:
    pld_manual_scope_begin(a);
    pld_launch(a, k_touch, 1, y);
    pld_manual_scope_begin(a);
    break;
  case 7:
    pld_manual_scope_end(a);
    break;
  case 8:
    pld_manual_scope_begin(a);
    break;
  default: /* every form right: compiles */
    pld_manual_scope_begin(a);
    pld_launch_after(a, ((pld_deps){PLD_MAX_DEPS, many}), k_touch, 1, y);
    pld_manual_scope_end(a);
    break;
  }
}
PLD_HOST(h_misuse, h, PLD_OUT(y, INT32, NR, 1), PLD_SCALAR(what, INT32)) {
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_misuse, r, pld_slice(h, y, r), what, r, n - 1);
  if (what == 1) /* a second call on rank 0 */
    pld_dispatch(h, d_misuse, 0, pld_slice(h, y, 0), what, 0, n - 1);
}

static void misuse_run(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor y = comm_int_tensor(0, 2, (int64_t[]){n, 1});
  char last[96], other[96];
  snprintf(last, sizeof last,
           "pld_launch_after (rank %d, device %d, in "
           "d_misuse): k_touch: deps.ids[0]",
           n - 1, comm_ids[n - 1]);
  snprintf(other, sizeof other, "on rank %d (#0 to #0), got a task of rank 0",
           n - 1);
  const struct {
    const char *a, *b;
  } want[] = {
      {last, other},
      {"pld_launch_after (rank 0, device",
       "deps.ids[0]: expected a task "
       "launched earlier in this call on rank 0 (#0 to #0), got a task of "
       "another device call (ids are valid only in the call that launched "
       "them)"},
      {"k_touch: deps.ids[1]: expected a task launched earlier in this call "
       "on rank 0 (#0 to #0), got no task (PLD_NO_TASK, or what a failed "
       "launch returned)",
       "pld_launch_after (rank 0, device"},
      {"deps.ids[0]: expected", "got task #5, not launched yet"},
      {"pld_launch_after", "k_touch: deps.n: expected 0 to PLD_MAX_DEPS (16) "
                           "tasks, got 17"},
      {"pld_launch_after", "k_touch: deps.ids: expected 2 task ids, got NULL"},
      {"pld_manual_scope_begin (rank 0, device",
       "expected no manual scope "
       "open (scopes do not nest), got the one begun before launch #1 still "
       "open"},
      {"pld_manual_scope_end (rank 0, device",
       "expected a manual scope open "
       "(pld_manual_scope_begin), got none"},
      {"pld_manual_scope_begin (rank 0, device",
       "expected the manual scope begun before launch #1 ended "
       "(pld_manual_scope_end) before the device function returns, got it "
       "open"},
  };
  for (int32_t what = 0; what <= 9; what++) {
    kept = PLD_NO_TASK;
    pld_program *p = NULL;
    int st = pld_compile(h_misuse, &cfg, PLD_ARGS(y, what), &p);
    if (what == 9) {
      assert_ok(st);
      pld_program_destroy(p);
      continue;
    }
    assert_fails_with(st, PLD_ERR_ARG, want[what].a, want[what].b);
    assert_null(p);
  }
  pld_tensor_destroy(y);
}

static void test_misuse_refused_when_compiling(void **state) {
  (void)state;
  comm_over_rank_counts(misuse_run);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_edge_orders_side_channel),
    cmocka_unit_test(test_edge_deadlock_reported),
    cmocka_unit_test(test_launch_by_after),
    cmocka_unit_test(test_manual_scope_drops_tensor_order),
    cmocka_unit_test(test_deferred_completion_edge),
    cmocka_unit_test(test_deferred_never_satisfied),
    cmocka_unit_test(test_misuse_refused_when_compiling),
};

PLD_TEST_MAIN("deps", tests)
