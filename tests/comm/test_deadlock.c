/* Waits that can never return are reported, not waited out: each deadlock
 * of the model's pitfalls ends the run within a second with
 * PLD_ERR_DEADLOCK and the blocked waits; a wait longer than the limit
 * while other cores still run ends it with PLD_ERR_TIMEOUT; a wait on a
 * peer that is slow but running is neither.  After each, the program runs
 * correctly again, and nothing is left behind when it is destroyed.  A
 * second is an idle machine's: on a busy one the work around the quiet
 * period may take as much longer as the machine is slower (load.h). */
#include <signal.h>
#include <unistd.h>

#include "comm_test.h"

/* ---- the tally barrier and its mistakes --------------------------------- */

/* What rank flag[0] does wrong, by flag[1]. */
enum {
  DL_NONE,
  DL_MISSING_NOTIFY, /* it notifies nobody */
  DL_NOTIFY_ZERO,    /* it notifies 0, awaited with Ge 1 */
  DL_WAIT_FIRST,     /* every rank waits before it notifies */
  DL_WRONG_ROW       /* it notifies row 1 where row 0 is awaited */
};

/* Rank me adds 1 to cell [0, me] of every other rank, then waits until
 * each of its own cells [0, p], p != me, is >= 1, and copies row 0 out:
 * y[r][i] = (i != r). */
#define TALLY_PARAMS                                                           \
  PLD_WINDOW(sig, INT32, 2, NR), PLD_IN(flag, INT32, 2), PLD_OUT(y, INT32, NR)

PLD_KERNEL(k_tally, k, TALLY_PARAMS) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int bad = me == (int32_t)pld_read(k, flag, PLD_AT(0));
  int how = (int)pld_read(k, flag, PLD_AT(1));
  int32_t value = bad && how == DL_NOTIFY_ZERO ? 0 : 1;
  int64_t row = bad && how == DL_WRONG_ROW ? 1 : 0;
  int notifies = !(bad && how == DL_MISSING_NOTIFY);
  for (int pass = 0; pass < 2; pass++) {
    int waiting = (pass == 0) == (how == DL_WAIT_FIRST);
    for (int32_t p = 0; p < n; p++) {
      if (p == me)
        continue;
      if (waiting)
        pld_wait(k, sig, PLD_AT(0, p), 1, PLD_WAIT_GE);
      else if (notifies)
        pld_notify(k, sig, p, PLD_AT(row, me), value, PLD_NOTIFY_ADD);
    }
  }
  for (int64_t i = 0; i < n; i++)
    pld_write(k, y, PLD_AT(i), pld_read(k, pld_local(sig), PLD_AT(0, i)));
}

PLD_DEVICE(d_tally, a, TALLY_PARAMS) {
  pld_launch(a, k_tally, 1, sig, flag, y);
}

PLD_HOST(h_tally, h, PLD_IN(flag, INT32, 2), PLD_OUT(y, INT32, NR, NR)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2, n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_tally, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2, n)), flag,
                 pld_slice(h, y, r));
}

/* A compiled, prepared tally over n ranks. */
struct tally {
  int n;
  pld_tensor flag, y;
  pld_program *p;
};

static void tally_setup(struct tally *t, int n) {
  pld_config cfg = comm_config(n);
  t->n = n;
  t->flag = comm_int_tensor(0, 1, (int64_t[]){2});
  t->y = comm_int_tensor(-1, 2, (int64_t[]){n, n});
  assert_ok(pld_compile(h_tally, &cfg, PLD_ARGS(t->flag, t->y), &t->p));
  assert_ok(pld_program_prepare(t->p));
}

/* Runs with rank `bad` making mistake `how`; *seconds is how long the run
 * took. */
static int tally_run(struct tally *t, int bad, int how, double *seconds) {
  int32_t *f = pld_tensor_data(t->flag);
  f[0] = bad;
  f[1] = how;
  return comm_timed_run(t->p, PLD_ARGS(t->flag, t->y), seconds);
}

/* The correct run works after whatever happened before it. */
static void tally_run_correctly(struct tally *t) {
  double seconds;
  assert_ok(tally_run(t, 0, DL_NONE, &seconds));
  const int32_t *ys = pld_tensor_data(t->y);
  for (int r = 0; r < t->n; r++)
    for (int i = 0; i < t->n; i++)
      assert_int_equal(ys[r * t->n + i], i != r);
}

/* The line of the report for a wait of rank r on cell [0, cell]. */
static void wait_line(char *buf, size_t cap, int r, int cell) {
  snprintf(buf, cap,
           "rank %d (device %d): kernel k_tally on AIV core 0 (block 0 of 1) "
           "waits on window 'sig' (buffer #0) cell [0, %d] >= 1; it holds 0",
           r, comm_ids[r], cell);
}

/* Runs mistake `how` of rank `bad` over n ranks: a deadlock reported
 * within a second, whose report names the wait of every rank but `bad`
 * on cell [0, waited(r)] and the ranks already finished; then a correct
 * run, and nothing left behind. */
static void expect_deadlock(int n, int bad, int how, const char *finished) {
  int shm_before = comm_count_dev_shm();
  struct tally t;
  tally_setup(&t, n);
  for (int round = 0; round < 2; round++) {
    double seconds;
    int st = tally_run(&t, bad, how, &seconds);
    assert_fails_with(st, PLD_ERR_DEADLOCK,
                      "pld_program_run: deadlock: these waits can never be "
                      "satisfied",
                      finished);
    /* Under mpirun the ranks' processes confirm it first: 2 s (as
     * mpi_faults.sh allows). */
    comm_assert_within("the deadlock's report", seconds, 0.05,
                       pld_process_count() > 1 ? 1.95 : 0.95);
    for (int r = 0; r < n; r++) {
      char line[256];
      if (how == DL_WAIT_FIRST)
        wait_line(line, sizeof line, r, r == 0 ? 1 : 0);
      else if (r != bad)
        wait_line(line, sizeof line, r, bad);
      else
        continue;
      assert_fails_with(st, PLD_ERR_DEADLOCK, line);
    }
    tally_run_correctly(&t);
  }
  pld_program_destroy(t.p);
  assert_no_children();
  assert_int_equal(comm_count_dev_shm(), shm_before);
  pld_tensor_destroy(t.flag);
  pld_tensor_destroy(t.y);
}

/* Rank 1 of 3 notifies nobody: ranks 0 and 2 wait on its cell. */
static void test_deadlock_missing_notify(void **state) {
  (void)state;
  expect_deadlock(3, 1, DL_MISSING_NOTIFY, "ranks already finished: 1");
}

/* A notify of 0 never satisfies Ge 1. */
static void test_deadlock_notify_zero(void **state) {
  (void)state;
  expect_deadlock(2, 0, DL_NOTIFY_ZERO, "ranks already finished: 0");
}

/* The notify loop after the wait loop: every rank waits, none finished. */
static void test_deadlock_wait_before_notify(void **state) {
  (void)state;
  expect_deadlock(4, -1, DL_WAIT_FIRST, "ranks already finished: none");
}

/* Rank 3 of 4 notifies row 1; row 0 is awaited. */
static void test_deadlock_wrong_row(void **state) {
  (void)state;
  expect_deadlock(4, 3, DL_WRONG_ROW, "ranks already finished: 3");
}

/* Who could still notify a blocked wait: the other unfinished ranks of its
 * window's domain, never the waiting rank itself.  Rank 1 of 3 notifies
 * nobody and finishes: ranks 0 and 2 wait on its cell, each able to blame
 * only the other. */
static void test_deadlock_report_names_others(void **state) {
  (void)state;
  struct tally t;
  double seconds;
  tally_setup(&t, 3);
  assert_fails_with(tally_run(&t, 1, DL_MISSING_NOTIFY, &seconds),
                    PLD_ERR_DEADLOCK, "who could still notify it: rank 2\n",
                    "who could still notify it: rank 0\n",
                    "ranks already finished: 1");
  pld_program_destroy(t.p);
  pld_tensor_destroy(t.flag);
  pld_tensor_destroy(t.y);
}

/* Rank 0 of 2 notifies 0 and finishes: rank 1 has nobody left. */
static void test_deadlock_report_nobody_left(void **state) {
  (void)state;
  struct tally t;
  double seconds;
  tally_setup(&t, 2);
  assert_fails_with(tally_run(&t, 0, DL_NOTIFY_ZERO, &seconds),
                    PLD_ERR_DEADLOCK,
                    "who could still notify it: no other rank (the others "
                    "finished)\n",
                    "ranks already finished: 0");
  pld_program_destroy(t.p);
  pld_tensor_destroy(t.flag);
  pld_tensor_destroy(t.y);
}

/* ---- wait timeout, and a slow peer -------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Keeps a core busy for `ms` milliseconds, reading t. */
static void spin(pld_core k, pld_tensor t, double ms) {
  double until = now_ms() + ms;
  while (now_ms() < until)
    (void)pld_read(k, t, PLD_AT(0));
}

/* Two blocks a rank.  Rank 0: block 0 notifies its own cell [1], then
 * waits on cell [0]; block 1 waits for that notify, then computes for
 * flag[0] ms (so that block 0 has waited that long, however late either
 * started).  Rank 1: block 0 computes for flag[1] ms, then notifies rank 0
 * if flag[2]; block 1 does nothing. */
#define SLOW_PARAMS PLD_WINDOW(sig, INT32, NR), PLD_IN(flag, INT32, 3)

PLD_KERNEL(k_slow, k, SLOW_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(sig)), b = pld_block_idx(k);
  if (me == 0 && b == 0) {
    pld_notify(k, sig, 0, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
  } else if (me == 0) {
    pld_wait(k, sig, PLD_AT(1), 1, PLD_WAIT_GE);
    spin(k, flag, pld_read(k, flag, PLD_AT(0)));
  } else if (b == 0) {
    spin(k, flag, pld_read(k, flag, PLD_AT(1)));
    if (pld_read(k, flag, PLD_AT(2)) != 0)
      pld_notify(k, sig, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  }
}

PLD_DEVICE(d_slow, a, SLOW_PARAMS) { pld_launch(a, k_slow, 2, sig, flag); }

PLD_HOST(h_slow, h, PLD_IN(flag, INT32, 3)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_slow, r, pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 flag);
}

/* Runs h_slow with flag = {busy0, busy1, notify}; *seconds is how long it
 * took. */
static int slow_run(pld_program *p, pld_tensor flag, int busy0, int busy1,
                    int notify, double *seconds) {
  int32_t *f = pld_tensor_data(flag);
  f[0] = busy0;
  f[1] = busy1;
  f[2] = notify;
  return comm_timed_run(p, PLD_ARGS(flag), seconds);
}

/* Rank 0's wait is never satisfied, but block 1 of the same kernel keeps
 * computing, so it is no deadlock: the 200 ms limit ends it. */
static void test_wait_timeout(void **state) {
  (void)state;
  pld_config cfg = comm_config(2);
  cfg.wait_timeout_ms = 200;
  pld_tensor flag = comm_int_tensor(0, 1, (int64_t[]){3});
  pld_program *p;
  assert_ok(pld_compile(h_slow, &cfg, PLD_ARGS(flag), &p));
  assert_ok(pld_program_prepare(p));
  double seconds;
  assert_fails_with(slow_run(p, flag, 450, 0, 0, &seconds), PLD_ERR_TIMEOUT,
                    "pld_program_run: wait timeout: a wait was blocked longer "
                    "than 200 ms",
                    "rank 0 (device 0): kernel k_slow on AIV core ",
                    "(block 0 of 2) waits on window 'sig' (buffer #0) cell "
                    "[0] >= 1; it holds 0",
                    "ranks already finished: 1");
  assert_true(seconds >= 0.2);
  assert_ok(slow_run(p, flag, 50, 0, 1, &seconds));
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(flag);
}

/* Rank 0 waits for 300 ms on rank 1, which computes before it notifies:
 * a slow peer is no deadlock. */
static void test_slow_peer_is_no_deadlock(void **state) {
  (void)state;
  pld_config cfg = comm_config(2);
  pld_tensor flag = comm_int_tensor(0, 1, (int64_t[]){3});
  pld_program *p;
  assert_ok(pld_compile(h_slow, &cfg, PLD_ARGS(flag), &p));
  double seconds;
  assert_ok(slow_run(p, flag, 0, 300, 1, &seconds));
  assert_true(seconds >= 0.3);
  pld_program_destroy(p);
  pld_tensor_destroy(flag);
}

/* ---- steps of a rank that waits for nothing ----------------------------- */

/* Rank 0 waits on its cell [0], which rank 1 notifies in its second
 * dispatch; that dispatch waits for a host task, which waits for rank 1's
 * first.  Between the steps (the first dispatch done, the task run, the
 * second not begun) rank 1 has no wait while rank 0 waits: the watch then
 * sees every rank blocked or between steps, and with a quiet period of
 * 1 ms it would call that a deadlock whenever rank 1's thread takes longer
 * to go on, as a busy machine's scheduler makes it.  y[0] = the value
 * rank 0 was woken by (1). */
PLD_KERNEL(k_steps_wait, k, PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, INT32, 1)) {
  pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_write(k, y, PLD_AT(0), pld_read(k, pld_local(sig), PLD_AT(0)));
}
PLD_DEVICE(d_steps_wait, a, PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, INT32, 1)) {
  pld_launch(a, k_steps_wait, 1, sig, y);
}
PLD_KERNEL(k_steps_make, k, PLD_OUT(z, INT32, 1)) {
  pld_write(k, z, PLD_AT(0), 1);
}
PLD_DEVICE(d_steps_make, a, PLD_OUT(z, INT32, 1)) {
  pld_launch(a, k_steps_make, 1, z);
}
PLD_HOST_TASK(t_steps, t, PLD_IN(z, INT32, 1), PLD_OUT(u, INT32, 1)) {
  (void)t;
  *(int32_t *)pld_tensor_data(u) = *(const int32_t *)pld_tensor_data(z);
}
PLD_KERNEL(k_steps_notify, k, PLD_WINDOW(sig, INT32, NR), PLD_IN(u, INT32, 1)) {
  pld_notify(k, sig, 0, PLD_AT(0), (int32_t)pld_read(k, u, PLD_AT(0)),
             PLD_NOTIFY_ADD);
}
PLD_DEVICE(d_steps_notify, a, PLD_WINDOW(sig, INT32, NR), PLD_IN(u, INT32, 1)) {
  pld_launch(a, k_steps_notify, 1, sig, u);
}
PLD_HOST(h_steps, h, PLD_OUT(y, INT32, NR, 1)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_tensor z = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(1));
  pld_tensor u = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(1));
  pld_dispatch(h, d_steps_wait, 0,
               pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
               pld_slice(h, y, 0));
  pld_dispatch(h, d_steps_make, 1, z);
  pld_host_task(h, t_steps, z, u);
  pld_dispatch(h, d_steps_notify, 1,
               pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), u);
}

static void test_no_deadlock_between_steps(void **state) {
  (void)state;
  /* Unless set already (it is read once a process). */
  setenv("PLD_DEADLOCK_QUIET_MS", "1", 0);
  pld_config cfg = comm_config(2);
  pld_tensor y = comm_int_tensor(0, 2, (int64_t[]){2, 1});
  pld_program *p;
  assert_ok(pld_compile(h_steps, &cfg, PLD_ARGS(y), &p));
  for (int run = 0; run < 100; run++) {
    *(int32_t *)pld_tensor_data(y) = 0;
    assert_ok(pld_program_run(p, PLD_ARGS(y)));
    assert_int_equal(*(const int32_t *)pld_tensor_data(y), 1);
  }
  pld_program_destroy(p);
  pld_tensor_destroy(y);
}

/* ---- a device process killed -------------------------------------------- */

/* Both ranks wait on a cell nobody notifies.  Rank 1's process is killed
 * (as by the OOM killer, or a sanitizer ending it: no crash handler runs),
 * before its wait if when[0] is 0, else once its wait is stopped as a
 * deadlock. */
#define KILLED_PARAMS PLD_WINDOW(sig, INT32, NR), PLD_IN(when, INT32, 1)

PLD_KERNEL(k_killed, k, KILLED_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  int after_deadlock = pld_read(k, when, PLD_AT(0)) != 0;
  if (me == 1 && !after_deadlock)
    kill(getpid(), SIGKILL);
  if (pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE) == PLD_ERR_DEADLOCK &&
      me == 1)
    kill(getpid(), SIGKILL);
}

PLD_DEVICE(d_killed, a, KILLED_PARAMS) {
  pld_launch(a, k_killed, 1, sig, when);
}

PLD_HOST(h_killed, h, PLD_IN(when, INT32, 1), PLD_OUT(y, INT32, NR, 1)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_killed, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), when);
}

/* Rank 1's process is killed; the run must end within 2 s with
 * PLD_ERR_CRASH naming it, and leave no process behind. */
static void expect_killed(int after_deadlock) {
  /* Under mpirun a device is its MPI process: killing it ends the job
   * (tests/comm/mpi_faults.sh checks that). */
  if (pld_process_count() > 1)
    skip();
  alarm(10); /* a hang ends here rather than at the CTest timeout */
  pld_config cfg = comm_config(2);
  pld_tensor when = comm_int_tensor(after_deadlock, 1, (int64_t[]){1});
  pld_tensor y = comm_int_tensor(0, 2, (int64_t[]){2, 1});
  pld_program *p;
  assert_ok(pld_compile(h_killed, &cfg, PLD_ARGS(when, y), &p));
  assert_ok(pld_program_prepare(p));
  double seconds;
  assert_fails_with(comm_timed_run(p, PLD_ARGS(when, y), &seconds),
                    PLD_ERR_CRASH,
                    "pld_program_run: rank 1 (device 1) was killed by signal "
                    "SIGKILL");
  comm_assert_within("the report of the killed device", seconds, 0.1, 1.9);
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(when);
  pld_tensor_destroy(y);
  alarm(0);
}

static void test_device_killed_while_peer_waits(void **state) {
  (void)state;
  expect_killed(0);
}

/* The same once the world is quiet: the deadlock is found and being
 * stopped when the process dies.  (A regression test: the host used to
 * stop reaping devices while it watched a quiet world, and waited for
 * this one forever; fixed in 89ffe51.) */
static void test_device_killed_after_deadlock(void **state) {
  (void)state;
  expect_killed(1);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_deadlock_missing_notify),
    cmocka_unit_test(test_deadlock_notify_zero),
    cmocka_unit_test(test_deadlock_wait_before_notify),
    cmocka_unit_test(test_deadlock_wrong_row),
    cmocka_unit_test(test_deadlock_report_names_others),
    cmocka_unit_test(test_deadlock_report_nobody_left),
    cmocka_unit_test(test_wait_timeout),
    cmocka_unit_test(test_slow_peer_is_no_deadlock),
    cmocka_unit_test(test_no_deadlock_between_steps),
    cmocka_unit_test(test_device_killed_while_peer_waits),
    cmocka_unit_test(test_device_killed_after_deadlock),
};

PLD_TEST_MAIN("comm_deadlock", tests)
