/* The root of a small broadcast does not wait for the other ranks
 * (pld/collective.h, "Small broadcasts"): it returns once its part is
 * sent, and the rest of its call is settled at its next collective or
 * barrier, or at the end of its block.  Shown by a program no
 * barrier-like broadcast could finish: the other ranks call it only after
 * the root has returned from it and notified them; every rank's results
 * checked against the root's inputs, call by call, on 2, 3 and 4 ranks,
 * one and two blocks, the root first and last.  What the settling keeps:
 * ranks that all name themselves the root fail with PLD_ERR_MISMATCH
 * naming every rank's call, found when the block's end settles the
 * calls, in which no rank waited; a root whose call differs fails the
 * others' calls themselves; a barrier settles the calls first and then
 * waits for every rank; a rank that never calls leaves the root
 * deadlocked in the settling, reported with the broadcast, its call and
 * the rank it waits for; and the signal window is zero again once the
 * blocks ended. */
#include "comm_test.h"

PLD_DYNAMIC(L);  /* elements of a block's part of the data */
PLD_DYNAMIC(NC); /* calls */
PLD_DYNAMIC(NS); /* signal cells: PLD_SIGNAL_CELLS(P, blocks) */

/* How the ranks call (the kernel's `how`). */
enum {
  AFTER_ROOT,   /* the other ranks wait for the root's notify before each
                   call */
  SELF_ROOT,    /* every rank names itself the root */
  ONE_SKIPS,    /* the last rank returns without calling */
  LAST_LAGS,    /* the last rank calls only once every other rank has
                   made all its calls and notified it */
  ROOT_TURNS,   /* call i's root is rank i % n (`root` unused) */
  ROOT_REDUCES, /* the root calls a mesh allreduce (SUM) instead */
  ROOT_HOLDS,   /* the root broadcasts `after` (INT32, 1 element) instead,
                   then waits for a notify no rank sends */
  BARRIER_EACH, /* every rank calls pld_barrier on the signal window after
                   each call */
  BARRIER_HELD, /* the same, the root first waiting for a notify from every
                   other rank, which each sends after its barrier */
};

/* The root of call i. */
static int32_t root_of(int how, int32_t root, int64_t i, int32_t n) {
  return how == ROOT_TURNS ? (int32_t)(i % n) : root;
}

/* Each call i: the data is x[i] (every rank's own), then the broadcast
 * from `root`, then y[i] = the data; with AFTER_ROOT, the other ranks
 * first wait for the call's notify from the root, which it sends each of
 * them after its call; with LAST_LAGS, the last rank first waits for a
 * notify from every other rank, which each sends after its last call.
 * ok[i] is what the call returned. */
PLD_KERNEL(k_ahead, k, PLD_IN(x, FP32, NC, L), PLD_WINDOW(data, FP32, L),
           PLD_WINDOW(sig, INT32, NS), PLD_WINDOW(after, INT32, 1),
           PLD_OUT(y, FP32, NC, L), PLD_OUT(ok, INT32, NC),
           PLD_SCALAR(root, INT32), PLD_SCALAR(how, INT32)) {
  const int32_t me = pld_rank(k, pld_window_comm(data));
  const int32_t n = pld_nranks(k, pld_window_comm(data));
  const int32_t len = (int32_t)pld_tensor_dim(x, 1);
  const int64_t calls = pld_tensor_dim(x, 0);
  /* Block b's part of the data: the collective splits it so. */
  const int32_t b = pld_block_idx(k), nb = pld_block_num(k);
  const int32_t lo = (int32_t)((int64_t)len * b / nb);
  const int32_t hi = (int32_t)((int64_t)len * (b + 1) / nb);
  const int32_t block = b == 0; /* one block notifies and waits */
  if (how == ONE_SKIPS && me == n - 1)
    return;
  for (int64_t i = 0; i < calls; i++) {
    if (hi > lo) {
      pld_tile *t = pld_load(k, x, i, lo, 1, hi - lo);
      pld_store(k, t, pld_local(data), 0, lo);
      pld_tile_free(k, t);
    }
    if (how == AFTER_ROOT && me != root && block)
      pld_wait(k, after, PLD_AT(0), (int32_t)i + 1, PLD_WAIT_GE);
    if (how == LAST_LAGS && me == n - 1 && i == 0 && block)
      pld_wait(k, after, PLD_AT(0), n - 1, PLD_WAIT_GE);
    const int32_t from = how == SELF_ROOT ? me : root_of((int)how, root, i, n);
    int st =
        how == ROOT_REDUCES && me == root
            ? pld_allreduce(k, data, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH)
        : how == ROOT_HOLDS && me == root ? pld_broadcast(k, after, sig, root)
                                          : pld_broadcast(k, data, sig, from);
    if (block)
      pld_write(k, ok, PLD_AT(i), st);
    if (how == ROOT_HOLDS && me == root)
      pld_wait(k, after, PLD_AT(0), 1, PLD_WAIT_GE);
    if (how == ROOT_HOLDS && me != root && st == PLD_OK) /* out of bounds */
      pld_notify(k, after, root, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    if (how == BARRIER_HELD && me == root && block)
      pld_wait(k, after, PLD_AT(0), n - 1, PLD_WAIT_GE);
    if (how == BARRIER_EACH || how == BARRIER_HELD)
      pld_barrier(k, sig);
    if (how == BARRIER_HELD && me != root && block)
      pld_notify(k, after, root, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    for (int32_t q = 0; how == AFTER_ROOT && me == root && block && q < n; q++)
      if (q != root)
        pld_notify(k, after, q, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    if (hi > lo) {
      pld_tile *t = pld_load(k, pld_local(data), 0, lo, 1, hi - lo);
      pld_store(k, t, y, i, lo);
      pld_tile_free(k, t);
    }
  }
  if (how == LAST_LAGS && me != n - 1 && block)
    pld_notify(k, after, n - 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
}

/* The signal window's cells, once k_ahead's blocks have ended. */
PLD_KERNEL(k_cells, k, PLD_WINDOW(sig, INT32, NS), PLD_OUT(cells, INT32, NS)) {
  pld_tile *t =
      pld_load(k, pld_local(sig), 0, 0, 1, (int32_t)pld_tensor_dim(cells, 0));
  pld_store(k, t, cells, 0, 0);
}

#define AHEAD_PARAMS                                                           \
  PLD_IN(x, FP32, NC, L), PLD_WINDOW(data, FP32, L),                           \
      PLD_WINDOW(sig, INT32, NS), PLD_WINDOW(after, INT32, 1),                 \
      PLD_OUT(y, FP32, NC, L), PLD_OUT(ok, INT32, NC),                         \
      PLD_OUT(cells, INT32, NS), PLD_SCALAR(root, INT32),                      \
      PLD_SCALAR(how, INT32), PLD_SCALAR(blocks, INT32)

PLD_DEVICE(d_ahead, a, AHEAD_PARAMS) {
  pld_launch(a, k_ahead, blocks, x, data, sig, after, y, ok, root, how);
  pld_launch(a, k_cells, 1, sig, cells);
}

PLD_HOST(h_ahead, h, PLD_IN(x, FP32, NR, NC, L), PLD_OUT(y, FP32, NR, NC, L),
         PLD_OUT(ok, INT32, NR, NC), PLD_OUT(cells, INT32, NR, NS),
         PLD_SCALAR(root, INT32), PLD_SCALAR(how, INT32),
         PLD_SCALAR(blocks, INT32)) {
  const int64_t len = pld_tensor_dim(x, 2), ns = pld_tensor_dim(cells, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(len));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf after = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_ahead, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(len)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(h, after, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, y, r), pld_slice(h, ok, r),
                 pld_slice(h, cells, r), root, how, blocks);
}

struct ahead {
  int n, blocks;
  int64_t len, calls, ns;
  pld_tensor x, y, ok, cells;
};

static void ahead_init(struct ahead *a, int n, int blocks, int64_t len,
                       int64_t calls) {
  a->n = n, a->blocks = blocks, a->len = len, a->calls = calls;
  a->ns = PLD_SIGNAL_CELLS(n, blocks);
  a->x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, calls, len});
  a->y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, calls, len});
  a->ok = comm_int_tensor(-1, 2, (int64_t[]){n, calls});
  a->cells = comm_int_tensor(-1, 2, (int64_t[]){n, a->ns});
  float *xs = pld_tensor_data(a->x);
  for (int64_t i = 0; i < pld_tensor_numel(a->x); i++)
    xs[i] = (float)(i % 1000) + 0.25f * (float)(i / 1000);
}

static void ahead_free(struct ahead *a) {
  pld_tensor_destroy(a->x);
  pld_tensor_destroy(a->y);
  pld_tensor_destroy(a->ok);
  pld_tensor_destroy(a->cells);
}

static int ahead_run(struct ahead *a, int root, int how, double *seconds) {
  pld_config cfg = comm_config(a->n);
  pld_program *p;
  assert_ok(pld_compile(h_ahead, &cfg,
                        PLD_ARGS(a->x, a->y, a->ok, a->cells, (int32_t)root,
                                 (int32_t)how, (int32_t)a->blocks),
                        &p));
  int st = comm_timed_run(p,
                          PLD_ARGS(a->x, a->y, a->ok, a->cells, (int32_t)root,
                                   (int32_t)how, (int32_t)a->blocks),
                          seconds);
  pld_program_destroy(p);
  return st;
}

/* The ranks call as `how` says and the run succeeds: every call's result is
 * its root's x of that call on every rank, every call returned PLD_OK, and
 * each rank's signal window holds what pld/collective.h promises once the
 * blocks ended: zero credits and counts, and its number of calls on each
 * lane. */
static void run_calls(int n, int blocks, int64_t len, int64_t calls, int root,
                      int how) {
  struct ahead a;
  ahead_init(&a, n, blocks, len, calls);
  double seconds;
  assert_ok(ahead_run(&a, root, how, &seconds));
  const float *xs = pld_tensor_data(a.x), *ys = pld_tensor_data(a.y);
  const int32_t *oks = pld_tensor_data(a.ok), *cs = pld_tensor_data(a.cells);
  const int64_t lane = PLD_SIGNAL_LANE_CELLS(n);
  for (int r = 0; r < n; r++) {
    char what[96];
    for (int64_t i = 0; i < calls; i++) {
      const int32_t from = root_of(how, root, i, n);
      snprintf(what, sizeof what,
               "%d ranks, %d blocks, root %d: rank %d's call %lld", n, blocks,
               from, r, (long long)i + 1);
      comm_expect_f32(what, ys + (r * calls + i) * len,
                      xs + (from * calls + i) * len, len);
      if (oks[r * calls + i] != PLD_OK) {
        print_error("%s returned %d\n", what, oks[r * calls + i]);
        fail();
      }
    }
    for (int64_t c = 0; c < a.ns; c++) {
      const int64_t cell = c % lane;
      const int32_t want = cell == 2 * n ? (int32_t)calls : 0;
      if (cell < 2 * n + 4 && cs[r * a.ns + c] != want) {
        print_error("%d ranks, %d blocks: rank %d's signal cell %lld (cell "
                    "%lld of lane %lld) holds %d after the blocks, expected "
                    "%d\n",
                    n, blocks, r, (long long)c, (long long)cell,
                    (long long)(c / lane), cs[r * a.ns + c], want);
        fail();
      }
    }
  }
  ahead_free(&a);
}

static void run_after_root(int n, int blocks, int64_t len, int64_t calls,
                           int root) {
  run_calls(n, blocks, len, calls, root, AFTER_ROOT);
}

static void after_roots(int n) {
  run_after_root(n, 1, 7, 5, 0);
  run_after_root(n, 2, 256, 3, 0);     /* 512 bytes a block */
  run_after_root(n, 1, 256, 4, n - 1); /* exactly PLD_COLL_EAGER_BYTES */
}

static void test_root_goes_ahead(void **state) {
  (void)state;
  comm_over_rank_counts(after_roots);
}

/* The ranks make `calls` calls of 4 elements on one block as `how` says
 * (the root rank 0) and the run fails with `status`, its message holding
 * each of subs (NULL-terminated). */
static void run_fails(int n, int64_t calls, int how, int status,
                      const char **subs, int line) {
  struct ahead a;
  ahead_init(&a, n, 1, 4, calls);
  double seconds;
  int st = ahead_run(&a, 0, how, &seconds);
  pld_test_assert_fails(st, status, __FILE__, line, subs);
  ahead_free(&a);
}

/* Every rank names itself the root: no rank waits for another in the
 * call; the end of the block settles it, and the run fails with
 * PLD_ERR_MISMATCH naming each rank's call. */
static void run_self_roots(int n) {
  enum { MOST = 4 }; /* ranks (comm_rank_counts) */
  char parts[MOST][160];
  const char *subs[2 + MOST + 1] = {"pld_broadcast", "with different calls"};
  assert_true(n <= MOST);
  for (int r = 0; r < n; r++) {
    snprintf(parts[r], sizeof parts[r],
             "pld_broadcast(FP32, 4 elements, root %d, 1 block)", r);
    subs[2 + r] = parts[r];
  }
  subs[2 + n] = NULL;
  run_fails(n, 1, SELF_ROOT, PLD_ERR_MISMATCH, subs, __LINE__);
}

static void test_mismatch_found_when_settled(void **state) {
  (void)state;
  comm_over_rank_counts(run_self_roots);
}

/* The last rank returns without calling: the root waits for it in the
 * settling of its first call (at its second), the others in their first
 * call, as the deadlock report says; then the same program runs
 * correctly. */
static void run_one_skips(int n) {
  char waits[160];
  snprintf(waits, sizeof waits,
           "in pld_broadcast call 1, round 1; it waits for rank %d, which has "
           "finished",
           n - 1);
  const char *subs[] = {"deadlock: these waits can never be satisfied", waits,
                        NULL};
  run_fails(n, 2, ONE_SKIPS, PLD_ERR_DEADLOCK, subs, __LINE__);
  run_after_root(n, 1, 4, 2, 0);
}

static void test_deadlock_when_settled(void **state) {
  (void)state;
  comm_over_rank_counts(run_one_skips);
}

/* Calls in flight (pld/collective.h, "Small broadcasts"): every rank but
 * the last makes PLD_COLL_SLOTS_USED(n) / 2 calls before the last rank
 * makes any,
 * the others waiting for the root alone (rank 0, then the one before the
 * last), and every result is the root's;
 * one call more and the others wait in the settling of their first call
 * for the last rank, which waits for them: a deadlock, which the report
 * names. */
static void run_last_lags(int n) {
  const int64_t most = PLD_COLL_SLOTS_USED(n) / 2;
  run_calls(n, 1, 4, most, 0, LAST_LAGS);
  run_calls(n, 2, 64, most, n - 2, LAST_LAGS);
  char waits[160];
  snprintf(waits, sizeof waits,
           "in pld_broadcast call 1, round 1; it waits for rank %d", n - 1);
  const char *subs[] = {"deadlock: these waits can never be satisfied", waits,
                        NULL};
  run_fails(n, most + 1, LAST_LAGS, PLD_ERR_DEADLOCK, subs, __LINE__);
}

static void test_calls_in_flight(void **state) {
  (void)state;
  comm_over_rank_counts(run_last_lags);
}

/* Many more calls than the slots, the root turning from rank to rank:
 * every rank's every result is its call's root's data, one block and
 * two, small and exactly PLD_COLL_EAGER_BYTES a block. */
static void run_turns(int n) {
  run_calls(n, 1, 3, 3 * PLD_COLL_SLOTS_USED(n) + 1, 0, ROOT_TURNS);
  run_calls(n, 2, 512, 2 * PLD_COLL_SLOTS_USED(n) + 3, 0, ROOT_TURNS);
}

static void test_roots_in_turn(void **state) {
  (void)state;
  comm_over_rank_counts(run_turns);
}

/* The root calls an allreduce where the others broadcast from it: the
 * others find it in the root's entry, which they wait for, and every rank
 * fails with PLD_ERR_MISMATCH naming both calls. */
static void run_root_reduces(int n) {
  const char *subs[] = {"with different calls",
                        "rank 0: pld_allreduce(SUM, FP32, 4 elements, mesh",
                        "rank 1: pld_broadcast(FP32, 4 elements, root 0", NULL};
  run_fails(n, 2, ROOT_REDUCES, PLD_ERR_MISMATCH, subs, __LINE__);
}

/* The root broadcasts another window, then waits for what no rank sends:
 * only the others can find the mismatch, in the root's entry, and their
 * call itself returns PLD_ERR_MISMATCH naming both calls (a call that
 * returned PLD_OK would go on to a notify out of bounds, PLD_ERR_BOUNDS). */
static void run_root_holds(int n) {
  const char *subs[] = {"with different calls",
                        "rank 0: pld_broadcast(INT32, 1 elements, root 0",
                        "rank 1: pld_broadcast(FP32, 4 elements, root 0", NULL};
  run_fails(n, 1, ROOT_HOLDS, PLD_ERR_MISMATCH, subs, __LINE__);
}

static void run_root_differs(int n) {
  run_root_reduces(n);
  run_root_holds(n);
}

static void test_root_calls_another(void **state) {
  (void)state;
  comm_over_rank_counts(run_root_differs);
}

/* A barrier after small broadcasts: it settles them, then waits for every
 * rank's barrier.  Each call followed by a barrier, on one and two
 * blocks: every result is the root's and the signal window is zero again
 * (barriers not counted as calls).  The root held before its barrier
 * until every other rank has passed its own: a deadlock, which the report
 * names in the others' barrier, waiting for the root (not a barrier
 * passed on the credits of the broadcasts left to settle). */
static void run_barriers(int n) {
  run_calls(n, 1, 4, PLD_COLL_SLOTS_USED(n) + 1, 0, BARRIER_EACH);
  run_calls(n, 2, 64, 3, n - 1, BARRIER_EACH);
  const char *subs[] = {"deadlock: these waits can never be satisfied",
                        "in pld_barrier, round 1; it waits for rank 0", NULL};
  run_fails(n, 1, BARRIER_HELD, PLD_ERR_DEADLOCK, subs, __LINE__);
}

static void test_barrier_after_broadcasts(void **state) {
  (void)state;
  comm_over_rank_counts(run_barriers);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_calls_in_flight),
    cmocka_unit_test(test_roots_in_turn),
    cmocka_unit_test(test_root_calls_another),
    cmocka_unit_test(test_root_goes_ahead),
    cmocka_unit_test(test_mismatch_found_when_settled),
    cmocka_unit_test(test_deadlock_when_settled),
    cmocka_unit_test(test_barrier_after_broadcasts),
};

PLD_TEST_MAIN("broadcast_ahead", tests)
