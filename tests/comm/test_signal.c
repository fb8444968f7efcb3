/* Signals: notify (Set, AtomicAdd with signed values, to self) and wait
 * (Eq, Ge); data published before a notify is seen after the wait; the
 * builtin barrier back to back; a signal visible to a rank that learns of
 * a later signal of its sender through a third rank; blocks of one kernel
 * synchronising through signals on their own device; cells of 2-D views at an
 * offset. */
#include "comm_test.h"

/* ---- notify and wait ---------------------------------------------------- */

enum { NCELLS = 5 };

/* What rank p adds to cell [0] of every rank, and sets in cell [2] of the
 * next: signed, never 0. */
static inline int32_t added_by(int32_t p) {
  return (p % 2 ? -1 : 1) * (3 * p + 2);
}
static inline int32_t set_by(int32_t p) {
  return (p % 2 ? 1 : -1) * (1000 + p);
}

/* Cells: [0] every rank adds added_by(itself) on every rank (itself too);
 * [1] then counts itself in on every rank, and each waits for == n, so
 * [0] is complete; [2] the previous rank sets set_by(prev), awaited with
 * Eq; [3] two notifies to this rank itself, -5 then +12, awaited with Ge 7
 * and Eq 7; [4] the previous rank adds 3, awaited with Ge 2. */
#define SIGNALS_PARAMS                                                         \
  PLD_WINDOW(sig, INT32, NCELLS), PLD_OUT(cells, INT32, NCELLS)

PLD_KERNEL(k_signals, k, SIGNALS_PARAMS) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = (me + 1) % n;
  for (int32_t p = 0; p < n; p++)
    pld_notify(k, sig, p, PLD_AT(0), added_by(me), PLD_NOTIFY_ADD);
  for (int32_t p = 0; p < n; p++)
    pld_notify(k, sig, p, PLD_AT(1), 1, PLD_NOTIFY_ADD);
  pld_wait(k, sig, PLD_AT(1), n, PLD_WAIT_EQ);

  pld_notify(k, sig, next, PLD_AT(2), set_by(me), PLD_NOTIFY_SET);
  pld_wait(k, sig, PLD_AT(2), set_by((me + n - 1) % n), PLD_WAIT_EQ);

  pld_notify(k, sig, me, PLD_AT(3), -5, PLD_NOTIFY_ADD);
  pld_notify(k, sig, me, PLD_AT(3), 12, PLD_NOTIFY_ADD);
  pld_wait(k, sig, PLD_AT(3), 7, PLD_WAIT_GE);
  pld_wait(k, sig, PLD_AT(3), 7, PLD_WAIT_EQ);

  pld_notify(k, sig, next, PLD_AT(4), 3, PLD_NOTIFY_ADD);
  pld_wait(k, sig, PLD_AT(4), 2, PLD_WAIT_GE);

  for (int64_t i = 0; i < NCELLS; i++)
    pld_write(k, cells, PLD_AT(i), pld_read(k, pld_local(sig), PLD_AT(i)));
}

PLD_DEVICE(d_signals, a, SIGNALS_PARAMS) {
  pld_launch(a, k_signals, 1, sig, cells);
}

PLD_HOST(h_signals, h, PLD_OUT(cells, INT32, NR, NCELLS)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NCELLS));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_signals, r,
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(NCELLS)),
                 pld_slice(h, cells, r));
}

static void run_notify_and_wait(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor cells = comm_int_tensor(-1, 2, (int64_t[]){n, NCELLS});
  pld_program *p;
  assert_ok(pld_compile(h_signals, &cfg, PLD_ARGS(cells), &p));
  int32_t sum = 0;
  for (int q = 0; q < n; q++)
    sum += added_by(q);
  int32_t want[4 * NCELLS];
  for (int r = 0; r < n; r++) {
    const int32_t row[NCELLS] = {sum, n, set_by(comm_prev(r, n)), 7, 3};
    memcpy(&want[r * NCELLS], row, sizeof row);
  }
  /* Twice: the second run starts from zero cells again. */
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(cells)));
    comm_expect_i32("cells", pld_tensor_data(cells), want, n * NCELLS);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(cells);
}

static void test_notify_and_wait(void **state) {
  (void)state;
  comm_over_rank_counts(run_notify_and_wait);
}

/* ---- publish before notify ---------------------------------------------- */

enum { OR = 8, OC = 64, ITERS = 200 };

/* The value rank `from` writes at iteration i on top of the ramp. */
static inline double pattern_base(int i, int32_t from) {
  return (double)(i * 1000 + from * 100);
}

/* Each iteration: wait until the next rank has checked the previous
 * pattern (cell [1]), write a fresh pattern into its window (remote_store
 * on even iterations, put on odd ones), notify it (cell [0]); then wait
 * for the previous rank's pattern, check every element, and release the
 * previous rank.  bad = {elements that differed, iterations done}. */
PLD_KERNEL(k_publish, k, PLD_IN(ramp, FP32, OR, OC),
           PLD_WINDOW(data, FP32, OR, OC), PLD_WINDOW(sig, INT32, 2),
           PLD_OUT(stage, FP32, OR, OC), PLD_OUT(bad, INT32, 2)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  int32_t mismatches = 0;
  int i;
  pld_tile *t = pld_tile_new(k, PLD_FP32, OR, OC);
  pld_tile *got = pld_tile_new(k, PLD_FP32, OR, OC);
  pld_tile *rows = pld_tile_new(k, PLD_FP32, OR, 1);
  pld_tile *total = pld_tile_new(k, PLD_FP32, 1, 1);
  for (i = 0; i < ITERS; i++) {
    if (pld_wait(k, sig, PLD_AT(1), i, PLD_WAIT_GE))
      break;
    pld_load_into(k, t, ramp, 0, 0);
    pld_adds(k, t, t, pattern_base(i, me));
    if (i % 2 == 0) {
      pld_remote_store(k, t, data, next, 0, 0, PLD_ATOMIC_NONE);
    } else {
      pld_store(k, t, stage, 0, 0);
      pld_put(k, data, next, stage, NULL);
    }
    pld_notify(k, sig, next, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    if (pld_wait(k, sig, PLD_AT(0), i + 1, PLD_WAIT_GE))
      break;
    /* Elements off by at least 1 (patterns are whole numbers): the sum of
     * min(|got - want|, 1), through stage[0][0]. */
    pld_load_into(k, t, ramp, 0, 0);
    pld_adds(k, t, t, pattern_base(i, prev));
    pld_load_into(k, got, pld_local(data), 0, 0);
    pld_sub(k, got, got, t);
    pld_abs(k, got, got);
    pld_mins(k, got, got, 1.0);
    pld_row_sum(k, rows, got);
    pld_col_sum(k, total, rows);
    pld_store(k, total, stage, 0, 0);
    mismatches += (int32_t)pld_read(k, stage, PLD_AT(0, 0));
    pld_notify(k, sig, prev, PLD_AT(1), 1, PLD_NOTIFY_ADD);
  }
  pld_write(k, bad, PLD_AT(0), mismatches);
  pld_write(k, bad, PLD_AT(1), i);
}

PLD_DEVICE(d_publish, a, PLD_IN(ramp, FP32, OR, OC),
           PLD_WINDOW(data, FP32, OR, OC), PLD_WINDOW(sig, INT32, 2),
           PLD_OUT(bad, INT32, 2)) {
  pld_tensor stage = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(OR, OC));
  pld_launch(a, k_publish, 1, ramp, data, sig, stage, bad);
}

PLD_HOST(h_publish, h, PLD_IN(ramp, FP32, NR, OR, OC),
         PLD_OUT(bad, INT32, NR, 2)) {
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(OR, OC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_publish, r, pld_slice(h, ramp, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(OR, OC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, bad, r));
}

static void run_publish_before_notify(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor ramp = comm_tensor(PLD_FP32, 3, (int64_t[]){n, OR, OC});
  float *rs = pld_tensor_data(ramp);
  for (int64_t i = 0; i < pld_tensor_numel(ramp); i++)
    rs[i] = (float)(i % (OR * OC) % 97); /* the same on every rank */
  pld_tensor bad = comm_int_tensor(-1, 2, (int64_t[]){n, 2});
  assert_ok(pld_run(h_publish, &cfg, PLD_ARGS(ramp, bad)));
  int32_t want[4 * 2];
  for (int r = 0; r < n; r++)
    want[2 * r] = 0, want[2 * r + 1] = ITERS;
  comm_expect_i32("bad (mismatches, iterations)", pld_tensor_data(bad), want,
                  2 * n);
  pld_tensor_destroy(ramp);
  pld_tensor_destroy(bad);
}

static void test_publish_before_notify(void **state) {
  (void)state;
  comm_over_rank_counts(run_publish_before_notify);
}

/* ---- the builtin barrier ------------------------------------------------ */

enum { NBAR = 100 };

/* Before barrier i every rank adds 1 to count[i] on every rank.  After
 * it, every rank records count[i] (all n arrivals: n) and the sum of
 * count[j] for j >= i + 2 (no rank can be two barriers ahead: 0).  After
 * the last one, the signal window is copied out: zero again. */
#define BARRIERS_PARAMS                                                        \
  PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(count, INT32, NBAR),                  \
      PLD_OUT(seen, INT32, 2, NBAR), PLD_OUT(after, INT32, NR)

PLD_KERNEL(k_barriers, k, BARRIERS_PARAMS) {
  pld_comm comm = pld_window_comm(sig);
  int32_t n = pld_nranks(k, comm);
  pld_tensor mine = pld_local(count);
  for (int64_t i = 0; i < NBAR; i++) {
    for (int32_t p = 0; p < n; p++)
      pld_notify(k, count, p, PLD_AT(i), 1, PLD_NOTIFY_ADD);
    pld_barrier(k, sig);
    double ahead = 0;
    for (int64_t j = i + 2; j < NBAR; j++)
      ahead += pld_read(k, mine, PLD_AT(j));
    pld_write(k, seen, PLD_AT(0, i), pld_read(k, mine, PLD_AT(i)));
    pld_write(k, seen, PLD_AT(1, i), ahead);
  }
  for (int64_t p = 0; p < n; p++)
    pld_write(k, after, PLD_AT(p), pld_read(k, pld_local(sig), PLD_AT(p)));
}

PLD_DEVICE(d_barriers, a, BARRIERS_PARAMS) {
  pld_launch(a, k_barriers, 1, sig, count, seen, after);
}

PLD_HOST(h_barriers, h, PLD_OUT(seen, INT32, NR, 2, NBAR),
         PLD_OUT(after, INT32, NR, NR)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf count = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NBAR));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_barriers, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, count, PLD_INT32, PLD_SHAPE(NBAR)),
                 pld_slice(h, seen, r), pld_slice(h, after, r));
}

static void run_barrier_back_to_back(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor seen = comm_int_tensor(-1, 3, (int64_t[]){n, 2, NBAR});
  pld_tensor after = comm_int_tensor(-1, 2, (int64_t[]){n, n});
  assert_ok(pld_run(h_barriers, &cfg, PLD_ARGS(seen, after)));
  int32_t want[4 * 2 * NBAR];
  for (int r = 0; r < n; r++)
    for (int i = 0; i < NBAR; i++) {
      want[(r * 2 + 0) * NBAR + i] = n; /* every rank arrived */
      want[(r * 2 + 1) * NBAR + i] = 0; /* none is two barriers ahead */
    }
  comm_expect_i32("seen (count[i] after barrier i, counts two ahead)",
                  pld_tensor_data(seen), want, n * 2 * NBAR);
  memset(want, 0, sizeof want);
  comm_expect_i32("after (the signal window after the last barrier)",
                  pld_tensor_data(after), want, n * n);
  pld_tensor_destroy(seen);
  pld_tensor_destroy(after);
}

static void test_barrier_back_to_back(void **state) {
  (void)state;
  comm_over_rank_counts(run_barrier_back_to_back);
}

/* ---- a signal releases the signals and adds before it ------------------ */

enum { NRELAY = 300 };

/* Rank 0 adds 1 to rank 1's x (by a signal on its cell [0] of sig, or,
 * with add, by an atomic store of ones into its row of data), then
 * signals cell [1] of the last rank (y); the last rank waits for y and
 * adds 1 to rank 1's cell [2] (z); rank 1 waits for z, then reads x,
 * which rank 0 changed before its signal to the last rank: it must see it
 * (a signal releases everything its rank did before, signals and adds to
 * other ranks included), and releases rank 0 through its cell [3].
 * late: the turns in which rank 1 found x behind (0), then the turns
 * done. */
#define RELAY_PARAMS                                                           \
  PLD_WINDOW(sig, INT32, 4), PLD_WINDOW(data, INT32, 1, 8),                    \
      PLD_OUT(late, INT32, 2)

static void relay(pld_core k, pld_window sig, pld_window data, pld_tensor late,
                  int add) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), last = pld_nranks(k, comm) - 1;
  pld_tile *ones = add ? pld_full(k, PLD_INT32, 1, 8, 1) : NULL;
  int32_t behind = 0, turns = 0;
  for (int32_t i = 1; i <= NRELAY; i++) {
    if (me == 0) {
      if (add)
        pld_remote_store(k, ones, data, 1, 0, 0, PLD_ATOMIC_ADD);
      else
        pld_notify(k, sig, 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
      pld_notify(k, sig, last, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    }
    if (me == last) {
      pld_wait(k, sig, PLD_AT(1), i, PLD_WAIT_GE);
      pld_notify(k, sig, 1, PLD_AT(2), 1, PLD_NOTIFY_ADD);
    }
    if (me == 1) {
      pld_wait(k, sig, PLD_AT(2), i, PLD_WAIT_GE);
      behind += add ? pld_read(k, pld_local(data), PLD_AT(0, 7)) < i
                    : pld_read(k, pld_local(sig), PLD_AT(0)) < i;
      turns++;
      pld_notify(k, sig, 0, PLD_AT(3), 1, PLD_NOTIFY_ADD);
    }
    if (me == 0)
      pld_wait(k, sig, PLD_AT(3), i, PLD_WAIT_GE);
  }
  pld_write(k, late, PLD_AT(0), behind);
  pld_write(k, late, PLD_AT(1), turns);
}

PLD_KERNEL(k_relay, k, RELAY_PARAMS) { relay(k, sig, data, late, 0); }

PLD_KERNEL(k_relay_adds, k, RELAY_PARAMS) { relay(k, sig, data, late, 1); }

PLD_DEVICE(d_relay, a, RELAY_PARAMS) {
  pld_launch(a, k_relay, 1, sig, data, late);
}

PLD_DEVICE(d_relay_adds, a, RELAY_PARAMS) {
  pld_launch(a, k_relay_adds, 1, sig, data, late);
}

static void relay_host(pld_host h, pld_device_fn d, pld_tensor late) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(4));
  pld_window_buf data = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, 8));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d, r, pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(4)),
                 pld_window_view(h, data, PLD_INT32, PLD_SHAPE(1, 8)),
                 pld_slice(h, late, r));
}

PLD_HOST(h_relay, h, PLD_OUT(late, INT32, NR, 2)) {
  relay_host(h, d_relay, late);
}

PLD_HOST(h_relay_adds, h, PLD_OUT(late, INT32, NR, 2)) {
  relay_host(h, d_relay_adds, late);
}

static void run_relay(int n, pld_host_fn host) {
  pld_config cfg = comm_config(n);
  pld_tensor late = comm_int_tensor(-1, 2, (int64_t[]){n, 2});
  assert_ok(pld_run(host, &cfg, PLD_ARGS(late)));
  int32_t want[4 * 2] = {0};
  want[1 * 2 + 1] = NRELAY; /* rank 1's turns, none behind */
  comm_expect_i32("late (x found behind, turns)", pld_tensor_data(late), want,
                  n * 2);
  pld_tensor_destroy(late);
}

static void run_signal_releases_signals(int n) { run_relay(n, h_relay); }

static void test_signal_releases_signals(void **state) {
  (void)state;
  comm_over_rank_counts(run_signal_releases_signals);
}

static void run_signal_releases_adds(int n) { run_relay(n, h_relay_adds); }

static void test_signal_releases_adds(void **state) {
  (void)state;
  comm_over_rank_counts(run_signal_releases_adds);
}

/* ---- blocks of one kernel ----------------------------------------------- */

enum { CB = 8, CC = 16 };

/* A chain over the CB blocks of one kernel on each device: block b waits
 * until block b + 1 has written row b + 1 of the window, adds it to row b
 * of x, writes row b, and releases block b - 1 by a notify to its own
 * rank.  Block 0 then holds the suffix sums.  Every block but the last
 * starts by waiting, so a waiting core must not keep the others from
 * running. */
#define CHAIN_PARAMS                                                           \
  PLD_IN(x, FP32, CB, CC), PLD_WINDOW(data, FP32, CB, CC),                     \
      PLD_WINDOW(sig, INT32, CB), PLD_OUT(y, FP32, CB, CC)

PLD_KERNEL(k_chain, k, CHAIN_PARAMS) {
  int32_t b = pld_block_idx(k), nb = pld_block_num(k);
  int32_t me = pld_rank(k, pld_window_comm(sig));
  pld_tile *t = pld_load(k, x, b, 0, 1, CC);
  if (b + 1 < nb) {
    pld_wait(k, sig, PLD_AT(b), 1, PLD_WAIT_GE);
    pld_add(k, t, t, pld_load(k, pld_local(data), b + 1, 0, 1, CC));
  }
  pld_store(k, t, pld_local(data), b, 0);
  if (b > 0)
    pld_notify(k, sig, me, PLD_AT(b - 1), 1, PLD_NOTIFY_ADD);
  else
    pld_store(k, pld_load(k, pld_local(data), 0, 0, CB, CC), y, 0, 0);
}

PLD_DEVICE(d_chain, a, CHAIN_PARAMS) {
  pld_launch(a, k_chain, CB, x, data, sig, y);
}

PLD_HOST(h_chain, h, PLD_IN(x, FP32, NR, CB, CC),
         PLD_OUT(y, FP32, NR, CB, CC)) {
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(CB, CC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(CB));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_chain, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(CB, CC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(CB)),
                 pld_slice(h, y, r));
}

static void test_blocks_chain_through_signals(void **state) {
  (void)state;
  const int n = 2;
  pld_config cfg = comm_config(n);
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, CB, CC}, 1, -40);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){n, CB, CC}, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_chain, &cfg, PLD_ARGS(x, y), &p));
  const float *xs = pld_tensor_data(x);
  float want[2 * CB * CC];
  for (int r = 0; r < n; r++)
    for (int e = 0; e < CC; e++) {
      float acc = 0;
      for (int b = CB - 1; b >= 0; b--) {
        acc += xs[(r * CB + b) * CC + e];
        want[(r * CB + b) * CC + e] = acc;
      }
    }
  for (int run = 0; run < 10; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    comm_expect_f32("y (suffix sums over the blocks)", pld_tensor_data(y), want,
                    n * CB * CC);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- signal cells in views at an offset --------------------------------- */

PLD_DYNAMIC(NA); /* cells of the whole buffer: 3 * NR + 1 */

/* One buffer of NA INT32 cells and three views of it: `all` of every
 * cell, `lo` of cells [0, n) (the barrier's window) and `hi` = INT32[2, n]
 * from cell n + 1 (cell n is in no view but `all`).  Every rank adds
 * me + 1 to hi[0][me] and sets hi[1][me] = set_by(me) on every rank, waits
 * until it holds every rank's, then a barrier on lo; then all is copied
 * out.  Each cell must be where its view and index put it. */
#define OFFSET_CELLS_PARAMS                                                    \
  PLD_WINDOW(all, INT32, NA), PLD_WINDOW(lo, INT32, NR),                       \
      PLD_WINDOW(hi, INT32, 2, NR), PLD_OUT(cells, INT32, NA)

PLD_KERNEL(k_offset_cells, k, OFFSET_CELLS_PARAMS) {
  pld_comm comm = pld_window_comm(hi);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  for (int32_t p = 0; p < n; p++) {
    pld_notify(k, hi, p, PLD_AT(0, me), me + 1, PLD_NOTIFY_ADD);
    pld_notify(k, hi, p, PLD_AT(1, me), set_by(me), PLD_NOTIFY_SET);
  }
  for (int32_t p = 0; p < n; p++) {
    pld_wait(k, hi, PLD_AT(0, p), p + 1, PLD_WAIT_EQ);
    pld_wait(k, hi, PLD_AT(1, p), set_by(p), PLD_WAIT_EQ);
  }
  pld_barrier(k, lo);
  for (int64_t i = 0; i < pld_tensor_dim(cells, 0); i++)
    pld_write(k, cells, PLD_AT(i), pld_read(k, pld_local(all), PLD_AT(i)));
}

PLD_DEVICE(d_offset_cells, a, OFFSET_CELLS_PARAMS) {
  pld_launch(a, k_offset_cells, 1, all, lo, hi, cells);
}

PLD_HOST(h_offset_cells, h, PLD_OUT(cells, INT32, NR, NA)) {
  int n = pld_world_size(h);
  int64_t na = pld_tensor_dim(cells, 1);
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(na));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_offset_cells, r,
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(na)),
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view_at(h, buf, sizeof(int32_t) * (size_t)(n + 1),
                                    PLD_INT32, PLD_SHAPE(2, n)),
                 pld_slice(h, cells, r));
}

static void run_signals_in_view_at_offset(int n) {
  pld_config cfg = comm_config(n);
  const int na = 3 * n + 1;
  pld_tensor cells = comm_int_tensor(-1, 2, (int64_t[]){n, na});
  pld_program *p;
  assert_ok(pld_compile(h_offset_cells, &cfg, PLD_ARGS(cells), &p));
  /* Rank r: lo and the gap zero; hi[0][q] = q + 1, hi[1][q] = set_by(q). */
  int32_t want[4 * (3 * 4 + 1)];
  memset(want, 0, sizeof want);
  for (int r = 0; r < n; r++)
    for (int q = 0; q < n; q++) {
      want[r * na + n + 1 + q] = q + 1;
      want[r * na + 2 * n + 1 + q] = set_by(q);
    }
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(cells)));
    comm_expect_i32("cells (the whole buffer)", pld_tensor_data(cells), want,
                    n * na);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(cells);
}

/* Notify and wait address a cell by its view's offset in the buffer and
 * its index in the view (row-major in a 2-D view). */
static void test_signals_in_view_at_offset(void **state) {
  (void)state;
  comm_over_rank_counts(run_signals_in_view_at_offset);
}

/* ---- every comparison ------------------------------------------------------
 */

/* Rank 0 sets cell [0] of every other rank to value[0] (after a barrier on
 * cells [1, n], so the cell is still 0 when the others look first); each
 * other rank waits until its cell compares with value[1] as value[2]
 * says, then writes what it saw. */
#define CMP_PARAMS                                                             \
  PLD_WINDOW(sig, INT32, NR1), PLD_IN(value, INT32, 3), PLD_OUT(seen, INT32, 1)
PLD_DYNAMIC(NR1); /* cells: NR + 1 */

PLD_KERNEL(k_cmp, k, CMP_PARAMS) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t v = (int32_t)pld_read(k, value, PLD_AT(0));
  int32_t want = (int32_t)pld_read(k, value, PLD_AT(1));
  pld_wait_cmp cmp = (pld_wait_cmp)pld_read(k, value, PLD_AT(2));
  if (me == 0) {
    for (int32_t p = 1; p < n; p++)
      pld_notify(k, sig, p, PLD_AT(0), v, PLD_NOTIFY_SET);
    pld_write(k, seen, PLD_AT(0), v);
    return;
  }
  pld_wait(k, sig, PLD_AT(0), want, cmp);
  pld_write(k, seen, PLD_AT(0), pld_read(k, pld_local(sig), PLD_AT(0)));
}
PLD_DEVICE(d_cmp, a, CMP_PARAMS) { pld_launch(a, k_cmp, 1, sig, value, seen); }
PLD_HOST(h_cmp, h, PLD_IN(value, INT32, 3), PLD_OUT(seen, INT32, NR, 1)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n + 1));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_cmp, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n + 1)), value,
                 pld_slice(h, seen, r));
}

/* For each comparison: a value that satisfies it returns with that value;
 * one that cannot (the cell is only ever 0 or v) is a deadlock whose
 * report shows the comparison. */
static void run_every_comparison(int n) {
  static const struct {
    int cmp;
    int32_t v, ok, never;
    const char *sym;
  } cases[] = {
      {PLD_WAIT_EQ, 7, 7, 8, "=="},   {PLD_WAIT_GE, 7, 7, 8, ">="},
      {PLD_WAIT_NE, -3, 0, -3, "!="}, {PLD_WAIT_GT, 7, 6, 7, ">"},
      {PLD_WAIT_LT, -5, -4, -5, "<"}, {PLD_WAIT_LE, -5, -5, -6, "<="},
  };
  pld_config cfg = comm_config(n);
  pld_tensor value = comm_int_tensor(0, 1, (int64_t[]){3});
  pld_tensor seen = comm_int_tensor(99, 2, (int64_t[]){n, 1});
  int32_t *v = pld_tensor_data(value);
  const int32_t *got = pld_tensor_data(seen);
  pld_program *p;
  assert_ok(pld_compile(h_cmp, &cfg, PLD_ARGS(value, seen), &p));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    v[0] = cases[i].v;
    v[1] = cases[i].ok;
    v[2] = cases[i].cmp;
    assert_ok(pld_program_run(p, PLD_ARGS(value, seen)));
    for (int r = 0; r < n; r++)
      assert_int_equal(got[r], cases[i].v);
    /* A cell that is 0 and then v never satisfies `never`: a deadlock
     * that says what the wait waited for and what the cell holds. */
    v[1] = cases[i].never;
    char line[96];
    snprintf(line, sizeof line, "cell [0] %s %d; it holds %d", cases[i].sym,
             (int)cases[i].never, (int)cases[i].v);
    int st = pld_program_run(p, PLD_ARGS(value, seen));
    /* != -3 is satisfied by the 0 the cell starts with, if the wait
     * looks before rank 0's set lands: either outcome is legal then. */
    if (cases[i].cmp == PLD_WAIT_NE && st == PLD_OK)
      continue;
    assert_fails_with(st, PLD_ERR_DEADLOCK, line);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(value);
  pld_tensor_destroy(seen);
}

static void test_every_wait_comparison(void **state) {
  (void)state;
  comm_over_rank_counts(run_every_comparison);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_notify_and_wait),
    cmocka_unit_test(test_publish_before_notify),
    cmocka_unit_test(test_barrier_back_to_back),
    cmocka_unit_test(test_signal_releases_signals),
    cmocka_unit_test(test_signal_releases_adds),
    cmocka_unit_test(test_blocks_chain_through_signals),
    cmocka_unit_test(test_signals_in_view_at_offset),
    cmocka_unit_test(test_every_wait_comparison),
};

PLD_TEST_MAIN("comm_signal", tests)
