/* The race detector (pld_config.check = "races", PLD_CHECK=races): every
 * access to window memory is checked against the happens-before order
 * signals create, and the first access no signal orders after a
 * conflicting one fails the run with PLD_ERR_RACE and a report naming both.
 *
 * Racy programs: a read of a peer's write, a write into bytes a peer may
 * still be reading, two plain writes (down to one byte), a read beside a
 * neighbour's write in the same 4 bytes, an atomic add against a plain
 * access, Set and Add on one signal cell, the three bugs the original's
 * collectives had (collectives.md section 3) written by hand, puts and gets
 * with no signal behind them.  Correct programs (the same with their
 * barrier or notify and wait, neighbouring bytes down to one INT8 element,
 * atomic adds from every rank, the builtin collectives back to back, a
 * chain of blocks, a deferred wait) must pass with the check on and give
 * the results a plain C loop computes.  And the switch itself: off by
 * default, the environment, an invalid value.
 *
 * In a racy program nothing forces which of the two accesses happens
 * first in real time (forcing it would take a signal, which orders them),
 * so the report is accepted with either one as "this" access, each with
 * the reason that goes with it.  And a racy program must be racy in every
 * run, not only in some: a wait acquires whatever was released to its cell
 * by the time it sees the cell satisfy it, so a writer's later notify on a cell
 * its reader is still acquiring would order the race away in that run.  The
 * programs below therefore never notify, after a racy access, a cell the other
 * side acquires before its own (see k_overwrite). */
#include <fcntl.h>
#include <unistd.h>

#include "comm_test.h"

enum { DR = 4, DC = 8 }; /* the FP32 tile most programs move */
enum { NFLAG = 4 };      /* cells of the hand-rolled signal window */

/* ---- checks ------------------------------------------------------------- */

/* A config of n ranks with the check set to `check`.  The check is for the
 * shared-memory fabric only: under mpirun every case here is skipped. */
static pld_config race_config(int n, const char *check) {
  if (pld_process_count() > 1)
    skip();
  pld_config cfg = comm_config(n);
  cfg.check = check;
  return cfg;
}

/* What a racy program's report must say.  a and b are the kinds of the
 * two accesses ("read", "write", "atomic add"); why_a is the reason the
 * report gives when the a is the later access ("this a ... the b"), why_b
 * when the b is.  owner: the rank whose window it is (-1: any).  also:
 * more substrings, NULL-terminated (function and kernel names, bytes). */
struct race {
  const char *window;
  const char *a, *b;
  const char *why_a, *why_b;
  int owner;
  const char *also[6];
};

/* The reason for each pair of kinds (pld-model: what a report says). */
#define WHY_READ_AFTER_WRITE "no signal orders that write before this read"
#define WHY_WRITE_AFTER_READ "the reader may still be reading these bytes"
#define WHY_TWO_WRITES                                                         \
  "two writes to the same bytes with no signal ordering them"
#define WHY_ATOMIC                                                             \
  "an atomic add and a plain access to the same bytes with no signal "         \
  "ordering them"

/* "(rank R, device D" and "by rank R2 (device D2)": each rank of the n is
 * on the device comm_config gave it. */
static int ranks_on_their_devices(const char *msg, int n) {
  int r, d;
  const char *p = strstr(msg, "(rank ");
  if (!p || sscanf(p, "(rank %d, device %d", &r, &d) != 2 || r < 0 || r >= n ||
      comm_ids[r] != d)
    return 0;
  p = strstr(msg, "by rank ");
  if (!p || sscanf(p, "by rank %d (device %d)", &r, &d) != 2 || r < 0 ||
      r >= n || comm_ids[r] != d)
    return 0;
  return 1;
}

/* The two "bytes [lo, hi)" of the report are non-empty and overlap. */
static int ranges_overlap(const char *msg) {
  long long lo[2], hi[2];
  const char *p = msg;
  for (int i = 0; i < 2; i++) {
    p = strstr(p, "bytes [");
    if (!p || sscanf(p, "bytes [%lld, %lld)", &lo[i], &hi[i]) != 2 ||
        lo[i] >= hi[i])
      return 0;
    p++;
  }
  long long l = lo[0] > lo[1] ? lo[0] : lo[1];
  long long h = hi[0] < hi[1] ? hi[0] : hi[1];
  return l < h;
}

static void expect_race_at(int st, int n, const struct race *w,
                           const char *file, int line) {
  const char *msg = pld_last_error();
  if (st != PLD_ERR_RACE) {
    print_error("%s:%d: expected PLD_ERR_RACE, got %s: %s\n", file, line,
                pld_status_name(st), msg);
    _fail(file, line);
  }
  char want[160], this_a[160], this_b[160];
  snprintf(want, sizeof want, "data race on window '%s' (buffer #", w->window);
  snprintf(this_a, sizeof this_a,
           "this %s is not ordered after the %s by rank ", w->a, w->b);
  snprintf(this_b, sizeof this_b,
           "this %s is not ordered after the %s by rank ", w->b, w->a);
  int a_later = strstr(msg, this_a) && strstr(msg, w->why_a);
  int b_later = strstr(msg, this_b) && strstr(msg, w->why_b);
  if (!strstr(msg, want) || !(a_later || b_later)) {
    print_error("%s:%d: expected \"%s\" and either \"%s\" ... \"%s\" or "
                "\"%s\" ... \"%s\", got: %s\n",
                file, line, want, this_a, w->why_a, this_b, w->why_b, msg);
    _fail(file, line);
  }
  if (w->owner >= 0) {
    snprintf(want, sizeof want, ") of rank %d, bytes [", w->owner);
    if (!strstr(msg, want)) {
      print_error("%s:%d: message lacks \"%s\": %s\n", file, line, want, msg);
      _fail(file, line);
    }
  }
  for (int i = 0; w->also[i]; i++)
    if (!strstr(msg, w->also[i])) {
      print_error("%s:%d: message lacks \"%s\": %s\n", file, line, w->also[i],
                  msg);
      _fail(file, line);
    }
  if (!ranks_on_their_devices(msg, n)) {
    print_error("%s:%d: the report's ranks are not on their devices (%d "
                "ranks): %s\n",
                file, line, n, msg);
    _fail(file, line);
  }
  if (!ranges_overlap(msg)) {
    print_error("%s:%d: the report's two byte ranges do not overlap: %s\n",
                file, line, msg);
    _fail(file, line);
  }
}
#define expect_race(st, n, ...)                                                \
  expect_race_at((st), (n), &(const struct race){__VA_ARGS__}, __FILE__,       \
                 __LINE__)

/* A write and a read of one window by two ranks, in either order. */
#define WRITE_READ(window, owner, ...)                                         \
  window, "read", "write", WHY_READ_AFTER_WRITE, WHY_WRITE_AFTER_READ, owner,  \
  {                                                                            \
    __VA_ARGS__                                                                \
  }

/* PLD_CHECK set to value (NULL: unset); returns what it was (the caller
 * restores it with env_restore). */
static char *env_swap(const char *value) {
  const char *old = getenv("PLD_CHECK");
  char *saved = old ? strdup(old) : NULL;
  if (value)
    setenv("PLD_CHECK", value, 1);
  else
    unsetenv("PLD_CHECK");
  return saved;
}
static void env_restore(char *saved) {
  if (saved)
    setenv("PLD_CHECK", saved, 1);
  else
    unsetenv("PLD_CHECK");
  free(saved);
}

/* y[r] = x[(r + step) mod n], blocks of `per` floats. */
static void expect_shifted(const char *what, pld_tensor y, pld_tensor x, int n,
                           int step) {
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  int64_t per = pld_tensor_numel(x) / n;
  for (int r = 0; r < n; r++) {
    char w[96];
    snprintf(w, sizeof w, "%s, rank %d of %d", what, r, n);
    comm_expect_f32(w, ys + r * per, xs + ((r + step + n) % n) * per, per);
  }
}

/* An FP32 [n, DR, DC] tensor of whole numbers in [-50, 50), different on
 * each rank (sums of them are exact in any order). */
static pld_tensor whole_numbers(int n, int seed) {
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, DR, DC});
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (float)((i * 37 + seed * 11 + i / (DR * DC) * 7) % 100 - 50);
  return x;
}

static pld_tensor fp32_zeros(int n) {
  return comm_tensor(PLD_FP32, 3, (int64_t[]){n, DR, DC});
}

/* ---- ordering kernels can choose ---------------------------------------- */

enum { SYNC_NONE, SYNC_BARRIER, SYNC_SIGNAL };

/* Orders what this rank did before the call before what the ranks it
 * serves do after theirs: nothing; the builtin barrier on sig; or a notify
 * to `to` on flag[cell] and a wait until this rank's own flag[cell] was
 * notified (by the rank that has this one as its `to`). */
static void ring_sync(pld_core k, pld_window sig, pld_window flag, int64_t cell,
                      int32_t order, int32_t to) {
  if (order == SYNC_BARRIER) {
    pld_barrier(k, sig);
  } else if (order == SYNC_SIGNAL) {
    pld_notify(k, flag, to, PLD_AT(cell), 1, PLD_NOTIFY_ADD);
    pld_wait(k, flag, PLD_AT(cell), 1, PLD_WAIT_GE);
  }
}

/* ---- 1. a read of a peer's write ---------------------------------------- */

/* Each rank stores x into its own window, then (after `order`) loads the
 * previous rank's window: y[r] = x[r - 1]. */
#define PUBLISH_PARAMS                                                         \
  PLD_IN(x, FP32, DR, DC), PLD_WINDOW(data, FP32, DR, DC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(flag, INT32, NFLAG),              \
      PLD_OUT(y, FP32, DR, DC), PLD_SCALAR(order, INT32)

PLD_KERNEL(k_publish, k, PUBLISH_PARAMS) {
  pld_comm c = pld_window_comm(data);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_store(k, pld_load(k, x, 0, 0, DR, DC), pld_local(data), 0, 0);
  ring_sync(k, sig, flag, 0, order, comm_next(me, n));
  pld_store(k, pld_remote_load(k, data, comm_prev(me, n), 0, 0, DR, DC), y, 0,
            0);
}
PLD_DEVICE(d_publish, a, PUBLISH_PARAMS) {
  pld_launch(a, k_publish, 1, x, data, sig, flag, y, order);
}
PLD_HOST(h_publish, h, PLD_IN(x, FP32, NR, DR, DC),
         PLD_OUT(y, FP32, NR, DR, DC), PLD_SCALAR(order, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf db = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NFLAG));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_publish, r, pld_slice(h, x, r),
                 pld_window_view(h, db, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(NFLAG)),
                 pld_slice(h, y, r), order);
}

/* Runs h_publish on n ranks with cfg; returns the status. */
static int publish_run(int n, const pld_config *cfg, int32_t order,
                       int check_result) {
  pld_tensor x = whole_numbers(n, 1), y = fp32_zeros(n);
  pld_program *p;
  assert_ok(pld_compile(h_publish, cfg, PLD_ARGS(x, y, order), &p));
  int st = pld_program_run(p, PLD_ARGS(x, y, order));
  if (st == PLD_OK && check_result) {
    expect_shifted("y = the previous rank's x", y, x, n, -1);
    /* A second run starts afresh: its stores are no race with the
     * first run's loads. */
    memset(pld_tensor_data(y), 0, sizeof(float) * (size_t)(n * DR * DC));
    st = pld_program_run(p, PLD_ARGS(x, y, order));
    if (st == PLD_OK)
      expect_shifted("y = the previous rank's x (second run)", y, x, n, -1);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void run_read_of_unpublished_write(int n) {
  pld_config cfg = race_config(n, "races");
  expect_race(publish_run(n, &cfg, SYNC_NONE, 0), n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "kernel k_publish (rank ", ", block 0 of 1)"));
}
static void test_read_of_unpublished_write(void **state) {
  (void)state;
  comm_over_rank_counts(run_read_of_unpublished_write);
}

static void run_read_after_barrier_or_signal(int n) {
  pld_config cfg = race_config(n, "races");
  assert_ok(publish_run(n, &cfg, SYNC_BARRIER, 1));
  assert_ok(publish_run(n, &cfg, SYNC_SIGNAL, 1));
}
static void test_read_after_barrier_or_signal(void **state) {
  (void)state;
  comm_over_rank_counts(run_read_after_barrier_or_signal);
}

/* ---- rounds of publish, host barrier, consume -----------------------------
 */

/* The original's host barrier test with its signal reused for two rounds
 * (test_l3_host_tensor_barrier, signal reuse): each round every rank
 * stores its row into its own copy of a data window (publish), the host
 * barrier, then every rank loads the next rank's row (consume).  The
 * barrier orders every publish before every consume, not a peer's consume
 * of round 1 before this rank's publish of round 2: nothing does, there as
 * here.  The original gives round 2 a data window of its own ("a fast rank
 * must not overwrite data that a slower peer is still reading from round
 * 1"), and its result is right in every run.  With one data window for
 * both rounds, round 2's store races with the peer's round-1 load, and the
 * race detector reports it when each round's barrier has a signal window
 * of its own.  (With one signal window for both barriers, a rank still
 * waiting in round 1's barrier may see a peer's round-2 arrival on the
 * same cells and acquire what that peer did before it, its round-2 store
 * included: that run is ordered, and its result wrong, so the report comes
 * only in the runs where no rank is that late.) */
PLD_KERNEL(k_round_publish, k, PLD_IN(x, FP32, DR, DC),
           PLD_WINDOW(data, FP32, DR, DC)) {
  pld_store(k, pld_load(k, x, 0, 0, DR, DC), pld_local(data), 0, 0);
}
PLD_DEVICE(d_round_publish, a, PLD_IN(x, FP32, DR, DC),
           PLD_WINDOW(data, FP32, DR, DC)) {
  pld_launch(a, k_round_publish, 1, x, data);
}
PLD_KERNEL(k_round_consume, k, PLD_WINDOW(data, FP32, DR, DC),
           PLD_OUT(y, FP32, DR, DC)) {
  pld_comm c = pld_window_comm(data);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_store(k, pld_remote_load(k, data, comm_next(me, n), 0, 0, DR, DC), y, 0,
            0);
}
PLD_DEVICE(d_round_consume, a, PLD_WINDOW(data, FP32, DR, DC),
           PLD_OUT(y, FP32, DR, DC)) {
  pld_launch(a, k_round_consume, 1, data, y);
}
/* windows: 2, a data window per round and one signal window for both
 * barriers (the original's); 1, one data window and a signal window per
 * barrier. */
PLD_HOST(h_rounds, h, PLD_IN(x, FP32, 2, NR, DR, DC),
         PLD_OUT(y, FP32, 2, NR, DR, DC), PLD_SCALAR(windows, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf sb[2], db[2];
  sb[0] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  sb[1] =
      windows == 2 ? sb[0] : pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  db[0] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  db[1] = windows == 2 ? pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC))
                       : db[0];
  for (int round = 0; round < 2; round++) {
    pld_tensor xr = pld_slice(h, x, round), yr = pld_slice(h, y, round);
    for (int r = 0; r < n; r++)
      pld_dispatch(h, d_round_publish, r, pld_slice(h, xr, r),
                   pld_window_view(h, db[round], PLD_FP32, PLD_SHAPE(DR, DC)));
    pld_host_barrier(h, pld_window_view(h, sb[round], PLD_INT32, PLD_SHAPE(n)),
                     1);
    for (int r = 0; r < n; r++)
      pld_dispatch(h, d_round_consume, r,
                   pld_window_view(h, db[round], PLD_FP32, PLD_SHAPE(DR, DC)),
                   pld_slice(h, yr, r));
  }
}

/* Runs h_rounds with one or two data windows, checking y[round][r] =
 * x[round][r + 1] after a successful run; returns the status. */
static int rounds_run(int n, int32_t windows) {
  pld_config cfg = race_config(n, "races");
  const int64_t shape[] = {2, n, DR, DC};
  pld_tensor x = comm_tensor(PLD_FP32, 4, shape);
  pld_tensor y = comm_tensor(PLD_FP32, 4, shape);
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) /* rounds differ */
    xs[i] = (float)(i % 1000 + (i / (n * DR * DC)) * 10000);
  pld_program *p;
  assert_ok(pld_compile(h_rounds, &cfg, PLD_ARGS(x, y, windows), &p));
  int st = pld_program_run(p, PLD_ARGS(x, y, windows));
  const int64_t per = (int64_t)n * DR * DC; /* one round */
  for (int round = 0; round < 2 && st == PLD_OK; round++)
    for (int r = 0; r < n; r++) {
      char what[96];
      snprintf(what, sizeof what, "round %d, rank %d of %d", round, r, n);
      comm_expect_f32(
          what, (const float *)pld_tensor_data(y) + round * per + r * DR * DC,
          xs + round * per + comm_next(r, n) * DR * DC, DR * DC);
    }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void run_rounds_through_host_barrier(int n) {
  assert_ok(rounds_run(n, 2));
  expect_race(rounds_run(n, 1), n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "k_round_consume", "k_round_publish"));
}
static void test_rounds_through_host_barrier(void **state) {
  (void)state;
  comm_over_rank_counts(run_rounds_through_host_barrier);
}

/* ---- 9 and 10. the switch ----------------------------------------------- */

/* Without the check the racy program runs (and its result is whatever the
 * timing made it); "" turns the check off even when PLD_CHECK asks for
 * it. */
static void run_check_off(int n) {
  pld_config cfg = race_config(n, NULL);
  char *saved = env_swap(NULL);
  assert_ok(publish_run(n, &cfg, SYNC_NONE, 0));
  env_swap("races");
  cfg.check = "";
  int st = publish_run(n, &cfg, SYNC_NONE, 0);
  env_restore(saved);
  assert_ok(st);
}
static void test_check_off_by_default(void **state) {
  (void)state;
  comm_over_rank_counts(run_check_off);
}

/* PLD_CHECK=races turns it on when cfg.check is NULL. */
static void run_check_from_environment(int n) {
  pld_config cfg = race_config(n, NULL);
  char *saved = env_swap("races");
  int racy = publish_run(n, &cfg, SYNC_NONE, 0);
  int fine =
      racy == PLD_ERR_RACE ? publish_run(n, &cfg, SYNC_SIGNAL, 1) : PLD_OK;
  env_restore(saved);
  expect_race(racy, n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "kernel k_publish (rank "));
  assert_ok(fine);
}
static void test_check_from_environment(void **state) {
  (void)state;
  comm_over_rank_counts(run_check_from_environment);
}

static void test_check_invalid(void **state) {
  (void)state;
  const int n = 2;
  pld_config cfg = race_config(n, "bogus");
  pld_tensor x = whole_numbers(n, 1), y = fp32_zeros(n);
  int32_t order = SYNC_BARRIER;
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_publish, &cfg, PLD_ARGS(x, y, order), &p),
                    PLD_ERR_CONFIG,
                    "pld_compile: cfg.check: expected \"races\" or \"\", got "
                    "\"bogus\"");
  assert_null(p);
  cfg.check = "Races"; /* no case folding either */
  assert_fails_with(pld_run(h_publish, &cfg, PLD_ARGS(x, y, order)),
                    PLD_ERR_CONFIG, "cfg.check", "got \"Races\"");
  /* The environment's value, when the field leaves it to it. */
  cfg.check = NULL;
  char *saved = env_swap("bogus");
  int st = pld_compile(h_publish, &cfg, PLD_ARGS(x, y, order), &p);
  env_restore(saved);
  assert_fails_with(st, PLD_ERR_CONFIG,
                    "pld_compile: environment: PLD_CHECK='bogus': expected "
                    "races");
  assert_null(p);
  /* And the environment is as it was: the check is off again. */
  assert_ok(pld_run(h_publish, &cfg, PLD_ARGS(x, y, order)));
  expect_shifted("y after the invalid settings", y, x, n, -1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_status(void **state) {
  (void)state;
  assert_string_equal(pld_status_name(PLD_ERR_RACE), "PLD_ERR_RACE");
  assert_string_equal(pld_strerror(PLD_ERR_RACE), "data race between ranks");
  assert_true(PLD_ERR_RACE != PLD_OK);
}

/* ---- 2. a write into bytes a peer may still be reading ------------------ */

/* Stage x, barrier, load the next rank's window into y; after `order` (the
 * read-done signal), store x + 1000 into the own window; after a barrier
 * on another signal window (fin), load it back into y2.
 *
 * The last barrier has a window of its own because a wait acquires what
 * was released to its cell when it returns, however late: a rank that
 * overwrote its window and already notified the next barrier's cell, while
 * its reader is still returning from the first barrier's wait on that same
 * cell, would hand the reader the overwrite as ordered.  (By the rule that
 * a returning wait acquires everything released to its cell, that run has
 * no race to report; but then the race is found only in some runs: with
 * one window, 2 ranks on 2 CPUs, in none of 200.)  With fin, nothing the
 * writer releases after its store reaches a cell the reader acquires
 * before its load: every run reports the race. */
#define OVERWRITE_PARAMS                                                       \
  PLD_IN(x, FP32, DR, DC), PLD_WINDOW(data, FP32, DR, DC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(fin, INT32, NR),                  \
      PLD_WINDOW(flag, INT32, NFLAG), PLD_OUT(y, FP32, DR, DC),                \
      PLD_OUT(y2, FP32, DR, DC), PLD_SCALAR(order, INT32)

PLD_KERNEL(k_overwrite, k, OVERWRITE_PARAMS) {
  pld_comm c = pld_window_comm(data);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_tile *t = pld_load(k, x, 0, 0, DR, DC);
  pld_store(k, t, pld_local(data), 0, 0);
  pld_barrier(k, sig);
  pld_store(k, pld_remote_load(k, data, comm_next(me, n), 0, 0, DR, DC), y, 0,
            0);
  /* I have read the next rank's window: tell it; wait until the previous
   * rank has read mine. */
  ring_sync(k, sig, flag, 0, order, comm_next(me, n));
  pld_adds(k, t, t, 1000);
  pld_store(k, t, pld_local(data), 0, 0);
  pld_barrier(k, fin);
  pld_store(k, pld_load(k, pld_local(data), 0, 0, DR, DC), y2, 0, 0);
}
PLD_DEVICE(d_overwrite, a, OVERWRITE_PARAMS) {
  pld_launch(a, k_overwrite, 1, x, data, sig, fin, flag, y, y2, order);
}
PLD_HOST(h_overwrite, h, PLD_IN(x, FP32, NR, DR, DC),
         PLD_OUT(y, FP32, NR, DR, DC), PLD_OUT(y2, FP32, NR, DR, DC),
         PLD_SCALAR(order, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf db = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf eb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NFLAG));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_overwrite, r, pld_slice(h, x, r),
                 pld_window_view(h, db, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, eb, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(NFLAG)),
                 pld_slice(h, y, r), pld_slice(h, y2, r), order);
}

static int overwrite_run(int n, int32_t order) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = whole_numbers(n, 2), y = fp32_zeros(n), y2 = fp32_zeros(n);
  int st = pld_run(h_overwrite, &cfg, PLD_ARGS(x, y, y2, order));
  if (st == PLD_OK) {
    expect_shifted("y = the next rank's x", y, x, n, 1);
    float *xs = pld_tensor_data(x);
    for (int64_t i = 0; i < pld_tensor_numel(x); i++)
      xs[i] += 1000;
    expect_shifted("y2 = x + 1000", y2, x, n, 0);
  }
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(y2);
  return st;
}

static void run_write_while_peer_reads(int n) {
  expect_race(overwrite_run(n, SYNC_NONE), n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "kernel k_overwrite (rank "));
}
static void test_write_while_peer_reads(void **state) {
  (void)state;
  comm_over_rank_counts(run_write_while_peer_reads);
}

static void run_write_after_read_done(int n) {
  assert_ok(overwrite_run(n, SYNC_BARRIER));
  assert_ok(overwrite_run(n, SYNC_SIGNAL));
}
static void test_write_after_read_done(void **state) {
  (void)state;
  comm_over_rank_counts(run_write_after_read_done);
}

/* A read that a later, smaller read of the same bytes does not cover stays
 * known: rank 0 loads bytes [0, 4) of rank 1's INT8 window, then byte
 * [0, 1); only then does the last rank store bytes [2, 4) of it, with no
 * signal between (SYNC_NONE): the store races with the first load, whose
 * bytes [2, 4) the second does not cover.  The writer goes only once rank 0
 * has made the marker file after its loads - an order in real time that no
 * signal gives, so the detector does not see it - and the race must be
 * reported as this write after rank 0's first load in every run.  With
 * SYNC_SIGNAL, rank 0 notifies the writer after its loads and the writer
 * waits for it: no race, and rank 0 read the window's zeros. */
enum { UB = 8 }; /* bytes of the INT8 window */
static char uncovered_marker[64];

/* Makes the marker (rank 0, after its loads); waits for it (the writer),
 * at most 30 s: a run stopped meanwhile stops the writer itself. */
static void marker_make(void) {
  int fd = open(uncovered_marker, O_CREAT | O_WRONLY, 0600);
  if (fd >= 0)
    close(fd);
}
static void marker_await(void) {
  struct timespec nap = {0, 1000000L};
  for (int i = 0; i < 30000 && access(uncovered_marker, F_OK) != 0; i++)
    nanosleep(&nap, NULL);
}

#define UNCOVERED_PARAMS                                                       \
  PLD_WINDOW(bytes, INT8, 1, UB), PLD_WINDOW(flag, INT32, NFLAG),              \
      PLD_OUT(y, FP32, 1, 4), PLD_SCALAR(order, INT32)

PLD_KERNEL(k_uncovered, k, UNCOVERED_PARAMS) {
  pld_comm c = pld_window_comm(bytes);
  int32_t me = pld_rank(k, c), writer = pld_nranks(k, c) - 1;
  if (me == 0) {
    pld_tile *wide = pld_remote_load(k, bytes, 1, 0, 0, 1, 4);
    pld_tile *narrow = pld_remote_load(k, bytes, 1, 0, 0, 1, 1);
    pld_tile *f = pld_tile_new(k, PLD_FP32, 1, 4);
    pld_cast(k, f, wide);
    pld_store(k, f, y, 0, 0);
    pld_tile_free(k, narrow);
    if (order == SYNC_SIGNAL)
      pld_notify(k, flag, writer, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    marker_make();
  } else if (me == writer) {
    marker_await();
    if (order == SYNC_SIGNAL)
      pld_wait(k, flag, PLD_AT(0), 1, PLD_WAIT_GE);
    pld_remote_store(k, pld_full(k, PLD_INT8, 1, 2, 7), bytes, 1, 0, 2,
                     PLD_ATOMIC_NONE);
  }
}
PLD_DEVICE(d_uncovered, a, UNCOVERED_PARAMS) {
  pld_launch(a, k_uncovered, 1, bytes, flag, y, order);
}
PLD_HOST(h_uncovered, h, PLD_OUT(y, FP32, NR, 1, 4), PLD_SCALAR(order, INT32)) {
  pld_window_buf b8 = pld_window_alloc_shape(h, PLD_INT8, PLD_SHAPE(1, UB));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NFLAG));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_uncovered, r,
                 pld_window_view(h, b8, PLD_INT8, PLD_SHAPE(1, UB)),
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(NFLAG)),
                 pld_slice(h, y, r), order);
}

/* Runs h_uncovered on n ranks; y of rank 0 must be the window's zeros. */
static int uncovered_run(int n, int32_t order) {
  pld_config cfg = race_config(n, "races");
  snprintf(uncovered_marker, sizeof uncovered_marker, "/tmp/pld-races-%d",
           (int)getpid());
  unlink(uncovered_marker);
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, 4});
  float *ys = pld_tensor_data(y);
  for (int i = 0; i < 4; i++)
    ys[i] = -1;
  int st = pld_run(h_uncovered, &cfg, PLD_ARGS(y, order));
  unlink(uncovered_marker);
  if (st == PLD_OK)
    comm_expect_f32("rank 0's load of the window", ys,
                    (const float[4]){0, 0, 0, 0}, 4);
  pld_tensor_destroy(y);
  return st;
}

static void run_read_not_covered_by_a_smaller_one(int n) {
  expect_race(uncovered_run(n, SYNC_NONE), n, "bytes", "write", "read",
              WHY_WRITE_AFTER_READ, WHY_READ_AFTER_WRITE, 1,
              {"bytes [2, 4): this write is not ordered after the read by "
               "rank 0 (device ",
               "kernel k_uncovered on ", "(pld_remote_load, bytes [0, 4))",
               "pld_remote_store"});
  assert_ok(uncovered_run(n, SYNC_SIGNAL));
}
static void test_read_not_covered_by_a_smaller_one(void **state) {
  (void)state;
  comm_over_rank_counts(run_read_not_covered_by_a_smaller_one);
}

/* ---- 3. two plain writes ------------------------------------------------ */

enum { W_DISJOINT, W_SAME_F32, W_SAME_I8, W_SAME_F16 };
enum { F32C = 16, I8R = 4, I8C = 32 };

/* What rank r writes into rank 0's windows in W_DISJOINT: f32 row 0
 * columns [4r, 4r + 4) and row 1 column r; f16 rows 0 and 1 column r;
 * i8 rows 0 to 3 column r (neighbouring elements of one row, down to one
 * byte, each written by another rank). */
static double v32_row0(int r) { return 10.0 * (r + 1); }
static double v32_row1(int r) { return -(r + 1.0); }
static double v16(int r) { return 0.5 * (r + 1); }
static double v8(int r) { return -3.0 * (r + 1); }

#define WRITES_PARAMS                                                          \
  PLD_WINDOW(f32, FP32, 2, F32C), PLD_WINDOW(f16, FP16, 2, F32C),              \
      PLD_WINDOW(i8, INT8, I8R, I8C), PLD_WINDOW(sig, INT32, NR),              \
      PLD_OUT(y32, FP32, 2, F32C), PLD_OUT(y16, FP32, 2, F32C),                \
      PLD_OUT(y8, FP32, I8R, I8C), PLD_SCALAR(mode, INT32)

/* Rank 0's copy of w, converted to FP32, into y. */
static void copy_from_rank0(pld_core k, pld_window w, pld_tensor y,
                            int32_t rows, int32_t cols) {
  pld_tile *t = pld_remote_load(k, w, 0, 0, 0, rows, cols);
  pld_tile *f = pld_tile_new(k, PLD_FP32, rows, cols);
  pld_cast(k, f, t);
  pld_store(k, f, y, 0, 0);
  pld_tile_free(k, f);
  pld_tile_free(k, t);
}

PLD_KERNEL(k_writes, k, WRITES_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(f32));
  switch (mode) {
  case W_SAME_F32:
    pld_remote_store(k, pld_full(k, PLD_FP32, 1, 4, me + 1), f32, 0, 0, 0,
                     PLD_ATOMIC_NONE);
    break;
  case W_SAME_I8: /* one byte: row 2, column 5 */
    pld_remote_store(k, pld_full(k, PLD_INT8, 1, 1, me + 1), i8, 0, 2, 5,
                     PLD_ATOMIC_NONE);
    break;
  case W_SAME_F16: /* two bytes: row 1, column 3 */
    pld_remote_store(k, pld_full(k, PLD_FP16, 1, 1, me + 1), f16, 0, 1, 3,
                     PLD_ATOMIC_NONE);
    break;
  default:
    pld_remote_store(k, pld_full(k, PLD_FP32, 1, 4, v32_row0(me)), f32, 0, 0,
                     4 * me, PLD_ATOMIC_NONE);
    pld_remote_store(k, pld_full(k, PLD_FP32, 1, 1, v32_row1(me)), f32, 0, 1,
                     me, PLD_ATOMIC_NONE);
    pld_remote_store(k, pld_full(k, PLD_FP16, 2, 1, v16(me)), f16, 0, 0, me,
                     PLD_ATOMIC_NONE);
    pld_remote_store(k, pld_full(k, PLD_INT8, I8R, 1, v8(me)), i8, 0, 0, me,
                     PLD_ATOMIC_NONE);
    break;
  }
  pld_barrier(k, sig);
  copy_from_rank0(k, f32, y32, 2, F32C);
  copy_from_rank0(k, f16, y16, 2, F32C);
  copy_from_rank0(k, i8, y8, I8R, I8C);
}
PLD_DEVICE(d_writes, a, WRITES_PARAMS) {
  pld_launch(a, k_writes, 1, f32, f16, i8, sig, y32, y16, y8, mode);
}
PLD_HOST(h_writes, h, PLD_OUT(y32, FP32, NR, 2, F32C),
         PLD_OUT(y16, FP32, NR, 2, F32C), PLD_OUT(y8, FP32, NR, I8R, I8C),
         PLD_SCALAR(mode, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf b32 = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(2, F32C));
  pld_window_buf b16 = pld_window_alloc_shape(h, PLD_FP16, PLD_SHAPE(2, F32C));
  pld_window_buf b8 = pld_window_alloc_shape(h, PLD_INT8, PLD_SHAPE(I8R, I8C));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(
        h, d_writes, r, pld_window_view(h, b32, PLD_FP32, PLD_SHAPE(2, F32C)),
        pld_window_view(h, b16, PLD_FP16, PLD_SHAPE(2, F32C)),
        pld_window_view(h, b8, PLD_INT8, PLD_SHAPE(I8R, I8C)),
        pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)), pld_slice(h, y32, r),
        pld_slice(h, y16, r), pld_slice(h, y8, r), mode);
}

static int writes_run(int n, int32_t mode) {
  pld_config cfg = race_config(n, "races");
  pld_tensor y32 = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 2, F32C});
  pld_tensor y16 = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 2, F32C});
  pld_tensor y8 = comm_tensor(PLD_FP32, 3, (int64_t[]){n, I8R, I8C});
  int st = pld_run(h_writes, &cfg, PLD_ARGS(y32, y16, y8, mode));
  if (st == PLD_OK) {
    /* Rank 0's windows as the ranks' stores leave them, seen by every
     * rank. */
    float w32[2 * F32C] = {0}, w16[2 * F32C] = {0}, w8[I8R * I8C] = {0};
    for (int q = 0; q < n; q++) {
      for (int j = 0; j < 4; j++)
        w32[4 * q + j] = (float)v32_row0(q);
      w32[F32C + q] = (float)v32_row1(q);
      w16[q] = w16[F32C + q] = (float)v16(q);
      for (int i = 0; i < I8R; i++)
        w8[i * I8C + q] = (float)v8(q);
    }
    for (int r = 0; r < n; r++) {
      comm_expect_f32("rank 0's FP32 window",
                      (float *)pld_tensor_data(y32) + r * 2 * F32C, w32,
                      2 * F32C);
      comm_expect_f32("rank 0's FP16 window",
                      (float *)pld_tensor_data(y16) + r * 2 * F32C, w16,
                      2 * F32C);
      comm_expect_f32("rank 0's INT8 window",
                      (float *)pld_tensor_data(y8) + r * I8R * I8C, w8,
                      I8R * I8C);
    }
  }
  pld_tensor_destroy(y32);
  pld_tensor_destroy(y16);
  pld_tensor_destroy(y8);
  return st;
}

static void run_two_writes(int n) {
  expect_race(writes_run(n, W_SAME_F32), n, "f32", "write", "write",
              WHY_TWO_WRITES, WHY_TWO_WRITES, 0,
              {"pld_remote_store", "kernel k_writes (rank ", "bytes [0, 16)"});
  expect_race(writes_run(n, W_SAME_I8), n, "i8", "write", "write",
              WHY_TWO_WRITES, WHY_TWO_WRITES, 0,
              {"pld_remote_store", "bytes [69, 70)"});
  expect_race(writes_run(n, W_SAME_F16), n, "f16", "write", "write",
              WHY_TWO_WRITES, WHY_TWO_WRITES, 0,
              {"pld_remote_store", "bytes [38, 40)"});
}
static void test_two_unordered_writes(void **state) {
  (void)state;
  comm_over_rank_counts(run_two_writes);
}

static void run_neighbouring_writes(int n) {
  assert_ok(writes_run(n, W_DISJOINT));
}
static void test_neighbouring_bytes_are_no_race(void **state) {
  (void)state;
  comm_over_rank_counts(run_neighbouring_writes);
}

/* A write beside an earlier one in the same 4 bytes keeps the earlier one
 * known: rank 0 writes element 0 of its i8 and f16 windows at once; the
 * last rank naps, writes element 1 (no race: other bytes), then reads
 * element 0, which nothing ordered after rank 0's write.  Whichever comes
 * first, that pair is a race. */
PLD_KERNEL(k_beside, k, PLD_WINDOW(i8, INT8, I8R, I8C),
           PLD_WINDOW(f16, FP16, 2, F32C), PLD_OUT(y, FP32, 1, 2),
           PLD_SCALAR(half, INT32)) {
  pld_comm c = pld_window_comm(i8);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_window w = half ? f16 : i8;
  pld_dtype dt = half ? PLD_FP16 : PLD_INT8;
  if (me == 0) {
    pld_remote_store(k, pld_full(k, dt, 1, 1, 5), w, 0, 0, 0, PLD_ATOMIC_NONE);
  } else if (me == n - 1) {
    struct timespec nap = {0, 50 * 1000000L};
    nanosleep(&nap, NULL);
    pld_remote_store(k, pld_full(k, dt, 1, 1, 9), w, 0, 0, 1, PLD_ATOMIC_NONE);
    pld_tile *t = pld_remote_load(k, w, 0, 0, 0, 1, 2);
    pld_tile *f = pld_tile_new(k, PLD_FP32, 1, 2);
    pld_cast(k, f, t);
    pld_store(k, f, y, 0, 0);
  }
}
PLD_DEVICE(d_beside, a, PLD_WINDOW(i8, INT8, I8R, I8C),
           PLD_WINDOW(f16, FP16, 2, F32C), PLD_OUT(y, FP32, 1, 2),
           PLD_SCALAR(half, INT32)) {
  pld_launch(a, k_beside, 1, i8, f16, y, half);
}
PLD_HOST(h_beside, h, PLD_OUT(y, FP32, NR, 1, 2), PLD_SCALAR(half, INT32)) {
  pld_window_buf b8 = pld_window_alloc_shape(h, PLD_INT8, PLD_SHAPE(I8R, I8C));
  pld_window_buf b16 = pld_window_alloc_shape(h, PLD_FP16, PLD_SHAPE(2, F32C));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_beside, r,
                 pld_window_view(h, b8, PLD_INT8, PLD_SHAPE(I8R, I8C)),
                 pld_window_view(h, b16, PLD_FP16, PLD_SHAPE(2, F32C)),
                 pld_slice(h, y, r), half);
}

static void run_race_beside_write(int n) {
  pld_config cfg = race_config(n, "races");
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 1, 2});
  int32_t half = 0;
  expect_race(pld_run(h_beside, &cfg, PLD_ARGS(y, half)), n,
              WRITE_READ("i8", 0, "pld_remote_store", "pld_remote_load",
                         "bytes [0, 1)"));
  half = 1;
  expect_race(pld_run(h_beside, &cfg, PLD_ARGS(y, half)), n,
              WRITE_READ("f16", 0, "pld_remote_store", "pld_remote_load",
                         "bytes [0, 2)"));
  pld_tensor_destroy(y);
}
static void test_race_beside_a_neighbouring_write(void **state) {
  (void)state;
  comm_over_rank_counts(run_race_beside_write);
}

/* ---- 4. atomic adds ------------------------------------------------------ */

enum { A_ALL, A_VS_STORE, A_VS_READ, A_PUT_VS_STORE };
enum { AREPS = 3 };

/* A_ALL: every rank adds x AREPS times into every rank's acc (remote
 * stores) and accp (puts), all at once; after a barrier each copies its
 * own out.  The others: ranks 1.. add x into rank 0's acc (accp: by puts)
 * while rank 0 stores into it plainly (A_VS_STORE, A_PUT_VS_STORE) or
 * loads it (A_VS_READ), with no signal between. */
#define ATOMIC_PARAMS                                                          \
  PLD_IN(x, FP32, DR, DC), PLD_WINDOW(acc, FP32, DR, DC),                      \
      PLD_WINDOW(accp, FP32, DR, DC), PLD_WINDOW(sig, INT32, NR),              \
      PLD_OUT(y, FP32, DR, DC), PLD_OUT(yp, FP32, DR, DC),                     \
      PLD_SCALAR(mode, INT32)

PLD_KERNEL(k_atomic, k, ATOMIC_PARAMS) {
  pld_comm c = pld_window_comm(acc);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_xfer add;
  memset(&add, 0, sizeof add);
  add.atomic = PLD_ATOMIC_ADD;
  pld_tile *t = pld_load(k, x, 0, 0, DR, DC);
  if (mode == A_ALL) {
    for (int rep = 0; rep < AREPS; rep++)
      for (int32_t p = 0; p < n; p++) {
        pld_remote_store(k, t, acc, p, 0, 0, PLD_ATOMIC_ADD);
        pld_put(k, accp, p, x, &add);
      }
  } else if (me > 0) {
    if (mode == A_PUT_VS_STORE)
      pld_put(k, accp, 0, x, &add);
    else
      pld_remote_store(k, t, acc, 0, 0, 0, PLD_ATOMIC_ADD);
  } else if (mode == A_VS_STORE) {
    pld_remote_store(k, t, acc, 0, 0, 0, PLD_ATOMIC_NONE);
  } else if (mode == A_VS_READ) {
    pld_store(k, pld_load(k, pld_local(acc), 0, 0, DR, DC), y, 0, 0);
  } else {
    pld_store(k, t, pld_local(accp), 0, 0);
  }
  pld_barrier(k, sig);
  pld_store(k, pld_load(k, pld_local(acc), 0, 0, DR, DC), y, 0, 0);
  pld_store(k, pld_load(k, pld_local(accp), 0, 0, DR, DC), yp, 0, 0);
}
PLD_DEVICE(d_atomic, a, ATOMIC_PARAMS) {
  pld_launch(a, k_atomic, 1, x, acc, accp, sig, y, yp, mode);
}
PLD_HOST(h_atomic, h, PLD_IN(x, FP32, NR, DR, DC), PLD_OUT(y, FP32, NR, DR, DC),
         PLD_OUT(yp, FP32, NR, DR, DC), PLD_SCALAR(mode, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf ab = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf pb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_atomic, r, pld_slice(h, x, r),
                 pld_window_view(h, ab, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, pb, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r), pld_slice(h, yp, r), mode);
}

static int atomic_run(int n, int32_t mode) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = whole_numbers(n, 3), y = fp32_zeros(n), yp = fp32_zeros(n);
  pld_program *p;
  assert_ok(pld_compile(h_atomic, &cfg, PLD_ARGS(x, y, yp, mode), &p));
  int st = PLD_OK;
  for (int run = 0; run < 2 && st == PLD_OK; run++) {
    st = pld_program_run(p, PLD_ARGS(x, y, yp, mode));
    if (st != PLD_OK)
      break;
    const float *xs = pld_tensor_data(x);
    float want[DR * DC];
    for (int e = 0; e < DR * DC; e++) {
      float s = 0;
      for (int q = 0; q < n; q++)
        s += xs[q * DR * DC + e];
      want[e] = AREPS * s;
    }
    for (int r = 0; r < n; r++) {
      comm_expect_f32("acc (atomic remote stores)",
                      (float *)pld_tensor_data(y) + r * DR * DC, want, DR * DC);
      comm_expect_f32("accp (atomic puts)",
                      (float *)pld_tensor_data(yp) + r * DR * DC, want,
                      DR * DC);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(yp);
  return st;
}

static void run_atomic_adds(int n) { assert_ok(atomic_run(n, A_ALL)); }
static void test_atomic_adds_are_no_race(void **state) {
  (void)state;
  comm_over_rank_counts(run_atomic_adds);
}

static void run_atomic_vs_plain(int n) {
  expect_race(atomic_run(n, A_VS_STORE), n, "acc", "atomic add", "write",
              WHY_ATOMIC, WHY_ATOMIC, 0, {"pld_remote_store"});
  expect_race(atomic_run(n, A_VS_READ), n, "acc", "atomic add", "read",
              WHY_ATOMIC, WHY_ATOMIC, 0, {"pld_remote_store", "pld_load"});
  expect_race(atomic_run(n, A_PUT_VS_STORE), n, "accp", "atomic add", "write",
              WHY_ATOMIC, WHY_ATOMIC, 0, {"pld_put", "pld_store"});
}
static void test_atomic_add_vs_plain_access(void **state) {
  (void)state;
  comm_over_rank_counts(run_atomic_vs_plain);
}

/* ---- 5. Set and Add on one cell ----------------------------------------- */

enum { SA_RACE, SA_ORDERED };
enum { SET_VALUE = 5 };

/* SA_RACE: rank 1 sets cell 0 of rank 0 and another rank (2, or rank 0
 * itself with 2 ranks) adds to it, with nothing between.  SA_ORDERED:
 * rank 0 waits for the set, then adds 1 itself and releases ranks 2..,
 * which each add 1 after their wait; rank 0 waits for them all and
 * records the cell. */
#define SETADD_PARAMS                                                          \
  PLD_WINDOW(cells, INT32, NFLAG), PLD_OUT(seen, INT32, 1),                    \
      PLD_SCALAR(mode, INT32)

PLD_KERNEL(k_setadd, k, SETADD_PARAMS) {
  pld_comm c = pld_window_comm(cells);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  int32_t adder = n > 2 ? 2 : 0;
  pld_write(k, seen, PLD_AT(0), -1);
  if (mode == SA_RACE) {
    if (me == 1)
      pld_notify(k, cells, 0, PLD_AT(0), SET_VALUE, PLD_NOTIFY_SET);
    if (me == adder)
      pld_notify(k, cells, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    return;
  }
  if (me == 1) {
    pld_notify(k, cells, 0, PLD_AT(0), SET_VALUE, PLD_NOTIFY_SET);
  } else if (me == 0) {
    pld_wait(k, cells, PLD_AT(0), SET_VALUE, PLD_WAIT_EQ);
    pld_notify(k, cells, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    for (int32_t p = 2; p < n; p++)
      pld_notify(k, cells, p, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    pld_wait(k, cells, PLD_AT(0), SET_VALUE + n - 1, PLD_WAIT_EQ);
    pld_write(k, seen, PLD_AT(0), pld_read(k, pld_local(cells), PLD_AT(0)));
  } else {
    pld_wait(k, cells, PLD_AT(1), 1, PLD_WAIT_GE);
    pld_notify(k, cells, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  }
}
PLD_DEVICE(d_setadd, a, SETADD_PARAMS) {
  pld_launch(a, k_setadd, 1, cells, seen, mode);
}
PLD_HOST(h_setadd, h, PLD_OUT(seen, INT32, NR, 1), PLD_SCALAR(mode, INT32)) {
  pld_window_buf cb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NFLAG));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_setadd, r,
                 pld_window_view(h, cb, PLD_INT32, PLD_SHAPE(NFLAG)),
                 pld_slice(h, seen, r), mode);
}

static void run_set_and_add(int n) {
  pld_config cfg = race_config(n, "races");
  pld_tensor seen = comm_int_tensor(99, 2, (int64_t[]){n, 1});
  int32_t mode = SA_RACE;
  int st = pld_run(h_setadd, &cfg, PLD_ARGS(seen, mode));
  const char *msg = pld_last_error();
  if (st != PLD_ERR_RACE) {
    print_error("expected PLD_ERR_RACE, got %s: %s\n", pld_status_name(st),
                msg);
    fail();
  }
  const char *must[] = {
      "pld_notify: kernel k_setadd (rank ",
      "signal cell cells[0] (buffer #",
      (") of rank 0: PLD_NOTIFY_SET and PLD_NOTIFY_ADD on one cell with no "
       "signal ordering them: this "),
  };
  for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
    if (!strstr(msg, must[i])) {
      print_error("message lacks \"%s\": %s\n", must[i], msg);
      fail();
    }
  /* The later notify is "this": the set by rank 1, or the add by the
   * adder; the other is named with its rank. */
  char set_later[96], add_later[96];
  snprintf(set_later, sizeof set_later, "this set and the add by rank %d",
           n > 2 ? 2 : 0);
  snprintf(add_later, sizeof add_later, "this add and the set by rank 1");
  if (!strstr(msg, set_later) && !strstr(msg, add_later)) {
    print_error("message has neither \"%s\" nor \"%s\": %s\n", set_later,
                add_later, msg);
    fail();
  }
  int r, d;
  const char *p = strstr(msg, "(rank ");
  if (!p || sscanf(p, "(rank %d, device %d", &r, &d) != 2 || r < 0 || r >= n ||
      comm_ids[r] != d) {
    print_error("the notifying rank is not on its device: %s\n", msg);
    fail();
  }

  /* Ordered by the wait for the set: no report, and the cell holds the set
   * plus one add from rank 0 and from each rank from 2 on. */
  mode = SA_ORDERED;
  assert_ok(pld_run(h_setadd, &cfg, PLD_ARGS(seen, mode)));
  int32_t want = SET_VALUE;
  for (int q = 0; q < n; q++)
    want += q != 1;
  assert_int_equal(((int32_t *)pld_tensor_data(seen))[0], want);
  pld_tensor_destroy(seen);
}
static void test_set_and_add_on_one_cell(void **state) {
  (void)state;
  comm_over_rank_counts(run_set_and_add);
}

/* ---- 6. the original's bugs, by hand ------------------------------------ */

enum { READY = 1, READ_DONE = 2 };

/* A mesh allreduce: stage x in the own window; [READY barrier]; sum every
 * rank's window (remote loads, ranks 0..n-1 in order); [READ_DONE
 * barrier]; store the sum back into the own window; a barrier on fin (a
 * window of its own, as in k_overwrite); y = the own window. */
#define MESH_PARAMS                                                            \
  PLD_IN(x, FP32, DR, DC), PLD_WINDOW(data, FP32, DR, DC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(fin, INT32, NR),                  \
      PLD_OUT(y, FP32, DR, DC), PLD_SCALAR(flags, INT32)

PLD_KERNEL(k_mesh, k, MESH_PARAMS) {
  int32_t n = pld_nranks(k, pld_window_comm(data));
  pld_store(k, pld_load(k, x, 0, 0, DR, DC), pld_local(data), 0, 0);
  if (flags & READY)
    pld_barrier(k, sig);
  pld_tile *acc = pld_full(k, PLD_FP32, DR, DC, 0);
  pld_tile *t = pld_tile_new(k, PLD_FP32, DR, DC);
  for (int32_t p = 0; p < n; p++) {
    pld_remote_load_into(k, t, data, p, 0, 0);
    pld_add(k, acc, acc, t);
  }
  if (flags & READ_DONE)
    pld_barrier(k, sig);
  pld_store(k, acc, pld_local(data), 0, 0);
  pld_barrier(k, fin);
  pld_store(k, pld_load(k, pld_local(data), 0, 0, DR, DC), y, 0, 0);
}
PLD_DEVICE(d_mesh, a, MESH_PARAMS) {
  pld_launch(a, k_mesh, 1, x, data, sig, fin, y, flags);
}
PLD_HOST(h_mesh, h, PLD_IN(x, FP32, NR, DR, DC), PLD_OUT(y, FP32, NR, DR, DC),
         PLD_SCALAR(flags, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf db = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf eb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_mesh, r, pld_slice(h, x, r),
                 pld_window_view(h, db, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, eb, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r), flags);
}

/* y[r] = the sum over ranks of x (rows of `per` floats), on every rank. */
static void expect_sums(const char *what, pld_tensor y, pld_tensor x, int n) {
  int64_t per = pld_tensor_numel(x) / n;
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  float *want = malloc(sizeof(float) * (size_t)per);
  assert_non_null(want);
  for (int64_t e = 0; e < per; e++) {
    float s = 0;
    for (int q = 0; q < n; q++)
      s += xs[q * per + e];
    want[e] = s;
  }
  for (int r = 0; r < n; r++)
    comm_expect_f32(what, ys + r * per, want, per);
  free(want);
}

static int mesh_run(int n, int32_t flags) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = whole_numbers(n, 4), y = fp32_zeros(n);
  int st = pld_run(h_mesh, &cfg, PLD_ARGS(x, y, flags));
  if (st == PLD_OK)
    expect_sums("mesh allreduce", y, x, n);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

/* A ring allreduce of an [n, RC] window, chunk c = row c: stage x;
 * [READY barrier]; n - 1 rounds of reduce-scatter (get the previous
 * rank's chunk r - s - 1, add it to mine) and n - 1 of all-gather (get its
 * chunk r - s, keep it), a barrier after each round; y = the window. */
enum { RC = 24 };
#define RING_PARAMS                                                            \
  PLD_IN(x, FP32, NR, RC), PLD_WINDOW(w, FP32, NR, RC),                        \
      PLD_WINDOW(sig, INT32, NR), PLD_OUT(tmp, FP32, 1, RC),                   \
      PLD_OUT(y, FP32, NR, RC), PLD_SCALAR(flags, INT32)

PLD_KERNEL(k_ring, k, RING_PARAMS) {
  pld_comm c = pld_window_comm(w);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  int32_t prev = comm_prev(me, n);
  pld_store(k, pld_load(k, x, 0, 0, n, RC), pld_local(w), 0, 0);
  if (flags & READY)
    pld_barrier(k, sig);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.rows = 1;
  pld_tile *t = pld_tile_new(k, PLD_FP32, 1, RC);
  pld_tile *mine = pld_tile_new(k, PLD_FP32, 1, RC);
  for (int32_t s = 0; s < n - 1; s++) {
    int32_t ch = (me - s - 1 + 2 * n) % n;
    o.src_row = ch;
    pld_get(k, tmp, prev, w, &o);
    pld_load_into(k, t, tmp, 0, 0);
    pld_load_into(k, mine, pld_local(w), ch, 0);
    pld_add(k, mine, mine, t);
    pld_store(k, mine, pld_local(w), ch, 0);
    pld_barrier(k, sig);
  }
  for (int32_t s = 0; s < n - 1; s++) {
    int32_t ch = (me - s + 2 * n) % n;
    o.src_row = ch;
    pld_get(k, tmp, prev, w, &o);
    pld_load_into(k, t, tmp, 0, 0);
    pld_store(k, t, pld_local(w), ch, 0);
    pld_barrier(k, sig);
  }
  pld_store(k, pld_load(k, pld_local(w), 0, 0, n, RC), y, 0, 0);
}
PLD_DEVICE(d_ring, a, PLD_IN(x, FP32, NR, RC), PLD_WINDOW(w, FP32, NR, RC),
           PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, FP32, NR, RC),
           PLD_SCALAR(flags, INT32)) {
  pld_tensor tmp = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(1, RC));
  pld_launch(a, k_ring, 1, x, w, sig, tmp, y, flags);
}
PLD_HOST(h_ring, h, PLD_IN(x, FP32, NR, NR, RC), PLD_OUT(y, FP32, NR, NR, RC),
         PLD_SCALAR(flags, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf wb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, RC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_ring, r, pld_slice(h, x, r),
                 pld_window_view(h, wb, PLD_FP32, PLD_SHAPE(n, RC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r), flags);
}

static int ring_run(int n, int32_t flags) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, n, RC});
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, n, RC});
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (float)((i * 53 + 17) % 201 - 100);
  pld_program *p;
  assert_ok(pld_compile(h_ring, &cfg, PLD_ARGS(x, y, flags), &p));
  int st = pld_program_run(p, PLD_ARGS(x, y, flags));
  if (st == PLD_OK) {
    expect_sums("ring allreduce", y, x, n);
    st = pld_program_run(p, PLD_ARGS(x, y, flags));
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void run_stale_stage_in(int n) {
  expect_race(mesh_run(n, READ_DONE), n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "kernel k_mesh (rank "));
  expect_race(
      ring_run(n, 0), n,
      WRITE_READ("w", -1, "pld_get", "pld_store", "kernel k_ring (rank "));
}
static void test_stale_stage_in(void **state) {
  (void)state;
  comm_over_rank_counts(run_stale_stage_in);
}

static void run_ready_barrier(int n) {
  assert_ok(mesh_run(n, READY | READ_DONE));
  assert_ok(ring_run(n, READY));
}
static void test_ready_barrier_fixes_stage_in(void **state) {
  (void)state;
  comm_over_rank_counts(run_ready_barrier);
}

static void run_store_back_without_read_done(int n) {
  expect_race(mesh_run(n, READY), n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "kernel k_mesh (rank "));
}
static void test_store_back_without_read_done(void **state) {
  (void)state;
  comm_over_rank_counts(run_store_back_without_read_done);
}

/* One ring step per dispatch, two dispatches in a row per rank: stage x,
 * barrier, load the next rank's window into y, [final barrier].  Without
 * the final barrier a rank's second dispatch restages while its previous
 * rank may still be loading the first x.  Each dispatch synchronises on a
 * signal window of its own (see k_overwrite for why). */
#define STEP_PARAMS                                                            \
  PLD_IN(x, FP32, DR, DC), PLD_WINDOW(data, FP32, DR, DC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, FP32, DR, DC),                    \
      PLD_SCALAR(final, INT32)

PLD_KERNEL(k_step, k, STEP_PARAMS) {
  pld_comm c = pld_window_comm(data);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_store(k, pld_load(k, x, 0, 0, DR, DC), pld_local(data), 0, 0);
  pld_barrier(k, sig);
  pld_store(k, pld_remote_load(k, data, comm_next(me, n), 0, 0, DR, DC), y, 0,
            0);
  if (final)
    pld_barrier(k, sig);
}
PLD_DEVICE(d_step, a, STEP_PARAMS) {
  pld_launch(a, k_step, 1, x, data, sig, y, final);
}
PLD_HOST(h_steps, h, PLD_IN(x1, FP32, NR, DR, DC), PLD_IN(x2, FP32, NR, DR, DC),
         PLD_OUT(y1, FP32, NR, DR, DC), PLD_OUT(y2, FP32, NR, DR, DC),
         PLD_SCALAR(final, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf db = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf sb1 = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf sb2 = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window data = pld_window_view(h, db, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window sig1 = pld_window_view(h, sb1, PLD_INT32, PLD_SHAPE(n));
  pld_window sig2 = pld_window_view(h, sb2, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++) {
    pld_dispatch(h, d_step, r, pld_slice(h, x1, r), data, sig1,
                 pld_slice(h, y1, r), final);
    pld_dispatch(h, d_step, r, pld_slice(h, x2, r), data, sig2,
                 pld_slice(h, y2, r), final);
  }
}

static int steps_run(int n, int32_t final) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x1 = whole_numbers(n, 5), x2 = whole_numbers(n, 6);
  pld_tensor y1 = fp32_zeros(n), y2 = fp32_zeros(n);
  pld_program *p;
  assert_ok(pld_compile(h_steps, &cfg, PLD_ARGS(x1, x2, y1, y2, final), &p));
  int st = PLD_OK;
  for (int run = 0; run < 2 && st == PLD_OK; run++) {
    st = pld_program_run(p, PLD_ARGS(x1, x2, y1, y2, final));
    if (st == PLD_OK) {
      expect_shifted("first dispatch: the next rank's x1", y1, x1, n, 1);
      expect_shifted("second dispatch: the next rank's x2", y2, x2, n, 1);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x1);
  pld_tensor_destroy(x2);
  pld_tensor_destroy(y1);
  pld_tensor_destroy(y2);
  return st;
}

static void run_return_while_neighbour_reads(int n) {
  expect_race(steps_run(n, 0), n,
              WRITE_READ("data", -1, "pld_remote_load", "pld_store",
                         "kernel k_step (rank "));
}
static void test_return_while_neighbour_reads(void **state) {
  (void)state;
  comm_over_rank_counts(run_return_while_neighbour_reads);
}

static void run_final_barrier(int n) { assert_ok(steps_run(n, 1)); }
static void test_final_barrier_before_next_dispatch(void **state) {
  (void)state;
  comm_over_rank_counts(run_final_barrier);
}

/* ---- 7. puts and gets ---------------------------------------------------- */

enum {
  PG_PUT,              /* put x into the next rank; load the own window */
  PG_PUT_NOTIFY,       /* ... with put_notify and a wait before the load */
  PG_PUT_TILES,        /* put_tiles, no signal */
  PG_PUT_TILES_NOTIFY, /* put_tiles, a notify, the wait */
  PG_GET,              /* stage x; get the next rank's window */
  PG_GET_BARRIER,      /* ... with a barrier between */
  PG_GET_TILES,        /* get_tiles, no signal */
  PG_GET_TILES_SIGNAL  /* ... with a notify and a wait between */
};

#define PUTGET_PARAMS                                                          \
  PLD_IN(x, FP32, DR, DC), PLD_WINDOW(data, FP32, DR, DC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(flag, INT32, NFLAG),              \
      PLD_OUT(y, FP32, DR, DC), PLD_SCALAR(mode, INT32)

PLD_KERNEL(k_putget, k, PUTGET_PARAMS) {
  pld_comm c = pld_window_comm(data);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  int32_t next = comm_next(me, n), prev = comm_prev(me, n);
  pld_tile *ping = pld_tile_new(k, PLD_FP32, 2, DC);
  switch (mode) {
  case PG_PUT:
  case PG_PUT_NOTIFY:
  case PG_PUT_TILES:
  case PG_PUT_TILES_NOTIFY:
    if (mode == PG_PUT_NOTIFY) {
      pld_put_notify(k, data, next, x, NULL, flag, PLD_AT(0), 1,
                     PLD_NOTIFY_ADD);
      pld_wait(k, flag, PLD_AT(0), 1, PLD_WAIT_GE);
    } else if (mode == PG_PUT) {
      pld_put(k, data, next, x, NULL);
    } else {
      pld_put_tiles(k, data, next, x, NULL, ping, NULL);
      ring_sync(k, sig, flag, 0, mode == PG_PUT_TILES ? SYNC_NONE : SYNC_SIGNAL,
                next);
    }
    pld_store(k, pld_load(k, pld_local(data), 0, 0, DR, DC), y, 0, 0);
    break;
  default:
    pld_store(k, pld_load(k, x, 0, 0, DR, DC), pld_local(data), 0, 0);
    if (mode == PG_GET_BARRIER)
      pld_barrier(k, sig);
    if (mode == PG_GET_TILES_SIGNAL)
      ring_sync(k, sig, flag, 0, SYNC_SIGNAL, prev); /* prev reads mine */
    if (mode == PG_GET || mode == PG_GET_BARRIER)
      pld_get(k, y, next, data, NULL);
    else
      pld_get_tiles(k, y, next, data, NULL, ping, NULL);
    break;
  }
}
PLD_DEVICE(d_putget, a, PUTGET_PARAMS) {
  pld_launch(a, k_putget, 1, x, data, sig, flag, y, mode);
}
PLD_HOST(h_putget, h, PLD_IN(x, FP32, NR, DR, DC), PLD_OUT(y, FP32, NR, DR, DC),
         PLD_SCALAR(mode, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf db = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NFLAG));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_putget, r, pld_slice(h, x, r),
                 pld_window_view(h, db, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(NFLAG)),
                 pld_slice(h, y, r), mode);
}

static int putget_run(int n, int32_t mode) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = whole_numbers(n, 7), y = fp32_zeros(n);
  int st = pld_run(h_putget, &cfg, PLD_ARGS(x, y, mode));
  if (st == PLD_OK)
    expect_shifted(mode < PG_GET ? "put: y = the previous rank's x"
                                 : "get: y = the next rank's x",
                   y, x, n, mode < PG_GET ? -1 : 1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void run_put_then_read_without_wait(int n) {
  expect_race(
      putget_run(n, PG_PUT), n,
      WRITE_READ("data", -1, "pld_put", "pld_load", "kernel k_putget (rank "));
  expect_race(putget_run(n, PG_PUT_TILES), n,
              WRITE_READ("data", -1, "pld_put_tiles", "pld_load"));
}
static void test_put_then_read_without_wait(void **state) {
  (void)state;
  comm_over_rank_counts(run_put_then_read_without_wait);
}

static void run_put_notify_then_wait(int n) {
  assert_ok(putget_run(n, PG_PUT_NOTIFY));
  assert_ok(putget_run(n, PG_PUT_TILES_NOTIFY));
}
static void test_put_notify_then_wait(void **state) {
  (void)state;
  comm_over_rank_counts(run_put_notify_then_wait);
}

static void run_get_of_unordered_write(int n) {
  expect_race(
      putget_run(n, PG_GET), n,
      WRITE_READ("data", -1, "pld_get", "pld_store", "kernel k_putget (rank "));
  expect_race(putget_run(n, PG_GET_TILES), n,
              WRITE_READ("data", -1, "pld_get_tiles", "pld_store"));
}
static void test_get_of_unordered_write(void **state) {
  (void)state;
  comm_over_rank_counts(run_get_of_unordered_write);
}

static void run_get_after_signal(int n) {
  assert_ok(putget_run(n, PG_GET_BARRIER));
  assert_ok(putget_run(n, PG_GET_TILES_SIGNAL));
}
static void test_get_after_barrier_or_signal(void **state) {
  (void)state;
  comm_over_rank_counts(run_get_after_signal);
}

/* ---- 8. the builtin collectives ------------------------------------------ */

PLD_DYNAMIC(CL); /* elements of a row */
PLD_DYNAMIC(NS); /* signal cells: PLD_SIGNAL_CELLS(NR, 1) */

/* Results recorded: allreduce in each mode (sum, max, sum, min), then a
 * broadcast from the last rank, in ya; allgather, reduce-scatter (sum)
 * and all-to-all in ym. */
enum { NYA = 5, NYM = 3 };
static const pld_allreduce_mode coll_modes[4] = {
    PLD_ALLREDUCE_MESH, PLD_ALLREDUCE_TWO_PHASE, PLD_ALLREDUCE_RING,
    PLD_ALLREDUCE_AUTO};
static const pld_reduce_op coll_ops[4] = {PLD_REDUCE_SUM, PLD_REDUCE_MAX,
                                          PLD_REDUCE_SUM, PLD_REDUCE_MIN};

#define COLL_PARAMS                                                            \
  PLD_IN(xa, INT32, NYA + 1, CL), PLD_IN(xm, INT32, NR, CL),                   \
      PLD_WINDOW(a, INT32, CL), PLD_WINDOW(t, INT32, NR, CL),                  \
      PLD_WINDOW(sig, INT32, NS), PLD_OUT(ya, INT32, NYA, CL),                 \
      PLD_OUT(ym, INT32, NYM, NR, CL)

/* rows rows of src from row sr into dst from row dr, through one tile. */
static void copy(pld_core k, pld_tensor src, int64_t sr, pld_tensor dst,
                 int64_t dr, int32_t rows) {
  int32_t cols = (int32_t)pld_tensor_dim(dst, pld_tensor_ndim(dst) - 1);
  pld_tile *tl = pld_load(k, src, sr, 0, rows, cols);
  pld_store(k, tl, dst, dr, 0);
  pld_tile_free(k, tl);
}

/* Each call follows the store that stages its input into its window
 * (without a barrier: the collective orders it), and its result is
 * copied out and then overwritten by the next staging store, right after
 * the call returned (the collective must have let every peer finish with
 * this rank's window by then). */
PLD_KERNEL(k_coll, k, COLL_PARAMS) {
  int32_t n = pld_nranks(k, pld_window_comm(a));
  for (int i = 0; i < 4; i++) {
    copy(k, xa, i, pld_local(a), 0, 1);
    pld_allreduce(k, a, sig, coll_ops[i], coll_modes[i]);
    copy(k, pld_local(a), 0, ya, i, 1);
  }
  copy(k, xa, 4, pld_local(a), 0, 1);
  pld_broadcast(k, a, sig, n - 1);
  copy(k, pld_local(a), 0, ya, 4, 1);
  copy(k, xa, 5, pld_local(a), 0, 1);
  pld_allgather(k, pld_local(a), t, sig);
  copy(k, xa, 0, pld_local(a), 0, 1); /* the stage, overwritten */
  copy(k, pld_local(t), 0, ym, 0, n);
  copy(k, xm, 0, pld_local(t), 0, n);
  pld_reduce_scatter(k, t, sig, PLD_REDUCE_SUM);
  copy(k, pld_local(t), 0, ym, n, n);
  copy(k, xa, 1, pld_local(t), 0, 1); /* overwritten by the all-to-all */
  pld_all_to_all(k, xm, t, sig);
  copy(k, pld_local(t), 0, ym, 2 * n, n);
  copy(k, xm, 0, pld_local(t), 0, n);
  copy(k, xa, 2, pld_local(a), 0, 1);
}
PLD_DEVICE(d_coll, d, COLL_PARAMS) {
  pld_launch(d, k_coll, 1, xa, xm, a, t, sig, ya, ym);
}
PLD_HOST(h_coll, h, PLD_IN(xa, INT32, NR, NYA + 1, CL),
         PLD_IN(xm, INT32, NR, NR, CL), PLD_OUT(ya, INT32, NR, NYA, CL),
         PLD_OUT(ym, INT32, NR, NYM, NR, CL)) {
  int n = pld_world_size(h);
  int64_t cl = pld_tensor_dim(xa, 2), ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf ab = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(cl));
  pld_window_buf tb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, cl));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_coll, r, pld_slice(h, xa, r), pld_slice(h, xm, r),
                 pld_window_view(h, ab, PLD_INT32, PLD_SHAPE(cl)),
                 pld_window_view(h, tb, PLD_INT32, PLD_SHAPE(n, cl)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, ya, r), pld_slice(h, ym, r));
}

static int32_t reduce2(pld_reduce_op op, int32_t u, int32_t v) {
  switch (op) {
  case PLD_REDUCE_MAX:
    return u > v ? u : v;
  case PLD_REDUCE_MIN:
    return u < v ? u : v;
  default:
    return u + v;
  }
}

static void coll_run(int n, int64_t cl) {
  pld_config cfg = race_config(n, "races");
  pld_tensor xa = comm_tensor(PLD_INT32, 3, (int64_t[]){n, NYA + 1, cl});
  pld_tensor xm = comm_tensor(PLD_INT32, 3, (int64_t[]){n, n, cl});
  pld_tensor ya = comm_int_tensor(-1, 3, (int64_t[]){n, NYA, cl});
  pld_tensor ym = comm_int_tensor(-1, 4, (int64_t[]){n, NYM, n, cl});
  int32_t *as = pld_tensor_data(xa), *ms = pld_tensor_data(xm);
  for (int64_t i = 0; i < pld_tensor_numel(xa); i++)
    as[i] = (int32_t)((i * 2654435761u) % 20011) - 10000;
  for (int64_t i = 0; i < pld_tensor_numel(xm); i++)
    ms[i] = (int32_t)((i * 40503u + 7) % 30011) - 15000;
  pld_program *p;
  assert_ok(pld_compile(h_coll, &cfg, PLD_ARGS(xa, xm, ya, ym), &p));
  int32_t *wa = malloc(sizeof(int32_t) * (size_t)(NYA * cl));
  int32_t *wm = malloc(sizeof(int32_t) * (size_t)(NYM * n * cl));
  assert_non_null(wa);
  assert_non_null(wm);
  const int64_t pa = (NYA + 1) * cl, pm = n * cl; /* per rank */
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(xa, xm, ya, ym)));
    for (int r = 0; r < n; r++) {
      for (int i = 0; i < 4; i++)
        for (int64_t e = 0; e < cl; e++) {
          int32_t v = as[i * cl + e];
          for (int q = 1; q < n; q++)
            v = reduce2(coll_ops[i], v, as[q * pa + i * cl + e]);
          wa[i * cl + e] = v;
        }
      for (int64_t e = 0; e < cl; e++)
        wa[4 * cl + e] = as[(n - 1) * pa + 4 * cl + e];
      for (int q = 0; q < n; q++)
        for (int64_t e = 0; e < cl; e++) {
          /* allgather: row q is rank q's stage */
          wm[q * cl + e] = as[q * pa + 5 * cl + e];
          /* reduce-scatter: my row summed, the others as staged */
          int32_t s = 0;
          for (int u = 0; u < n; u++)
            s += ms[u * pm + q * cl + e];
          wm[(n + q) * cl + e] = q == r ? s : ms[r * pm + q * cl + e];
          /* all-to-all: row q came from rank q's row r */
          wm[(2 * n + q) * cl + e] = ms[q * pm + r * cl + e];
        }
      char what[96];
      snprintf(what, sizeof what,
               "rank %d of %d, %lld elements: allreduce x4, broadcast", r, n,
               (long long)cl);
      comm_expect_i32(what, (int32_t *)pld_tensor_data(ya) + r * NYA * cl, wa,
                      NYA * cl);
      snprintf(what, sizeof what,
               "rank %d of %d, %lld elements: allgather, reduce-scatter, "
               "all-to-all",
               r, n, (long long)cl);
      comm_expect_i32(what, (int32_t *)pld_tensor_data(ym) + r * NYM * pm, wm,
                      NYM * pm);
    }
  }
  free(wa);
  free(wm);
  pld_program_destroy(p);
  pld_tensor_destroy(xa);
  pld_tensor_destroy(xm);
  pld_tensor_destroy(ya);
  pld_tensor_destroy(ym);
}

/* Small calls travel in the signal window, large ones through the data
 * windows (PLD_COLL_EAGER_BYTES per rank pair). */
static void run_collectives(int n) {
  coll_run(n, 40);
  coll_run(n, 1000 + n);
}
static void test_builtin_collectives_race_free(void **state) {
  (void)state;
  comm_over_rank_counts(run_collectives);
}

/* ---- orders within a rank ------------------------------------------------ */

enum { NBLK = 6 };

/* The blocks of one kernel write rows of their own rank's window and hand
 * on through signals to themselves: block b waits until block b + 1 wrote
 * row b + 1, adds it to x's row b, writes row b and releases block b - 1;
 * block 0 copies out the suffix sums.  Every window access is ordered by
 * program order or the chain. */
#define CHAIN_PARAMS                                                           \
  PLD_IN(x, FP32, NBLK, DC), PLD_WINDOW(data, FP32, NBLK, DC),                 \
      PLD_WINDOW(chain, INT32, NBLK), PLD_OUT(y, FP32, NBLK, DC)

PLD_KERNEL(k_chain, k, CHAIN_PARAMS) {
  int32_t b = pld_block_idx(k), nb = pld_block_num(k);
  int32_t me = pld_rank(k, pld_window_comm(chain));
  pld_tile *t = pld_load(k, x, b, 0, 1, DC);
  if (b + 1 < nb) {
    pld_wait(k, chain, PLD_AT(b), 1, PLD_WAIT_GE);
    pld_add(k, t, t, pld_load(k, pld_local(data), b + 1, 0, 1, DC));
  }
  pld_store(k, t, pld_local(data), b, 0);
  if (b > 0)
    pld_notify(k, chain, me, PLD_AT(b - 1), 1, PLD_NOTIFY_ADD);
  else
    pld_store(k, pld_load(k, pld_local(data), 0, 0, NBLK, DC), y, 0, 0);
}
PLD_DEVICE(d_chain, a, CHAIN_PARAMS) {
  pld_launch(a, k_chain, NBLK, x, data, chain, y);
}
PLD_HOST(h_chain, h, PLD_IN(x, FP32, NR, NBLK, DC),
         PLD_OUT(y, FP32, NR, NBLK, DC)) {
  pld_window_buf db = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(NBLK, DC));
  pld_window_buf cb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NBLK));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_chain, r, pld_slice(h, x, r),
                 pld_window_view(h, db, PLD_FP32, PLD_SHAPE(NBLK, DC)),
                 pld_window_view(h, cb, PLD_INT32, PLD_SHAPE(NBLK)),
                 pld_slice(h, y, r));
}

static void run_block_chain(int n) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, NBLK, DC}, 1, -100);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){n, NBLK, DC}, 0, 0);
  assert_ok(pld_run(h_chain, &cfg, PLD_ARGS(x, y)));
  const float *xs = pld_tensor_data(x);
  float want[4 * NBLK * DC];
  for (int r = 0; r < n; r++)
    for (int e = 0; e < DC; e++) {
      float acc = 0;
      for (int b = NBLK - 1; b >= 0; b--) {
        acc += xs[(r * NBLK + b) * DC + e];
        want[(r * NBLK + b) * DC + e] = acc;
      }
    }
  comm_expect_f32("suffix sums over the blocks", pld_tensor_data(y), want,
                  n * NBLK * DC);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}
static void test_blocks_chained_by_signals(void **state) {
  (void)state;
  comm_over_rank_counts(run_block_chain);
}

/* A deferred wait orders what the launch depending on it does: each rank
 * puts x into the next rank's box with a notify behind it and defers the
 * wait for its own; the continuation kernel (its window overlaps) copies
 * the box out. */
PLD_KERNEL(k_send, k, PLD_IN(x, FP32, DR, DC), PLD_WINDOW(box, FP32, DR, DC),
           PLD_WINDOW(flag, INT32, NFLAG)) {
  pld_comm c = pld_window_comm(box);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_put_notify(k, box, comm_next(me, n), x, NULL, flag, PLD_AT(0), 1,
                 PLD_NOTIFY_ADD);
  pld_wait_deferred(k, flag, PLD_AT(0), 1, PLD_WAIT_GE);
}
PLD_KERNEL(k_take, k, PLD_WINDOW(box, FP32, DR, DC), PLD_OUT(y, FP32, DR, DC)) {
  pld_store(k, pld_load(k, pld_local(box), 0, 0, DR, DC), y, 0, 0);
}
PLD_DEVICE(d_deferred, a, PLD_IN(x, FP32, DR, DC),
           PLD_WINDOW(box, FP32, DR, DC), PLD_WINDOW(flag, INT32, NFLAG),
           PLD_OUT(y, FP32, DR, DC)) {
  pld_launch(a, k_send, 1, x, box, flag);
  pld_launch(a, k_take, 1, box, y);
}
PLD_HOST(h_deferred, h, PLD_IN(x, FP32, NR, DR, DC),
         PLD_OUT(y, FP32, NR, DR, DC)) {
  pld_window_buf bb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(DR, DC));
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(NFLAG));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_deferred, r, pld_slice(h, x, r),
                 pld_window_view(h, bb, PLD_FP32, PLD_SHAPE(DR, DC)),
                 pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(NFLAG)),
                 pld_slice(h, y, r));
}

static void run_deferred(int n) {
  pld_config cfg = race_config(n, "races");
  pld_tensor x = whole_numbers(n, 8), y = fp32_zeros(n);
  pld_program *p;
  assert_ok(pld_compile(h_deferred, &cfg, PLD_ARGS(x, y), &p));
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    expect_shifted("y = the previous rank's x", y, x, n, -1);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}
static void test_deferred_wait_orders_continuation(void **state) {
  (void)state;
  comm_over_rank_counts(run_deferred);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_status),
    cmocka_unit_test(test_read_of_unpublished_write),
    cmocka_unit_test(test_read_after_barrier_or_signal),
    cmocka_unit_test(test_write_while_peer_reads),
    cmocka_unit_test(test_write_after_read_done),
    cmocka_unit_test(test_read_not_covered_by_a_smaller_one),
    cmocka_unit_test(test_two_unordered_writes),
    cmocka_unit_test(test_neighbouring_bytes_are_no_race),
    cmocka_unit_test(test_race_beside_a_neighbouring_write),
    cmocka_unit_test(test_atomic_adds_are_no_race),
    cmocka_unit_test(test_atomic_add_vs_plain_access),
    cmocka_unit_test(test_set_and_add_on_one_cell),
    cmocka_unit_test(test_stale_stage_in),
    cmocka_unit_test(test_ready_barrier_fixes_stage_in),
    cmocka_unit_test(test_store_back_without_read_done),
    cmocka_unit_test(test_return_while_neighbour_reads),
    cmocka_unit_test(test_final_barrier_before_next_dispatch),
    cmocka_unit_test(test_put_then_read_without_wait),
    cmocka_unit_test(test_put_notify_then_wait),
    cmocka_unit_test(test_get_of_unordered_write),
    cmocka_unit_test(test_get_after_barrier_or_signal),
    cmocka_unit_test(test_builtin_collectives_race_free),
    cmocka_unit_test(test_blocks_chained_by_signals),
    cmocka_unit_test(test_deferred_wait_orders_continuation),
    cmocka_unit_test(test_rounds_through_host_barrier),
    cmocka_unit_test(test_check_off_by_default),
    cmocka_unit_test(test_check_from_environment),
    cmocka_unit_test(test_check_invalid),
};

PLD_TEST_MAIN("comm_races", tests)
