/* Runs that would never return, and devices whose code misbehaves: a
 * reported time limit or deadlock ends the run within the limit plus a
 * second whatever the other devices do (a device that does not stop is
 * killed and restarted, and the program runs again); a kernel or device
 * function that neither finishes nor waits is stopped at its own limit;
 * blocks that can never get a core are a deadlock; a kernel that writes
 * over its device's control memory is reported as a failure of its rank,
 * never as success.  "Within" counts the time the library waits by the
 * clock (a limit, the stop's grace) as it is and the rest of an idle
 * machine's second as much longer as the machine is slower now
 * (tests/load.h); a run expected to succeed under a limit stays hundreds
 * of milliseconds away from it. */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../host/programs.h"
#include "device/device.h"
#include "host/program.h"
#include "load.h"
#include "pld_test.h"

static int ids[16];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How much slower than an idle machine this one ran around the last
 * timed_run (tests/load.h). */
static double slowdown = 1;

/* Runs p and returns its status; *seconds is how long it took. */
static int timed_run(pld_program *p, int argc, const pld_arg *argv,
                     double *seconds) {
  slowdown = pld_test_slowdown();
  double t0 = now_s();
  int st = pld_program_run(p, argc, argv);
  *seconds = now_s() - t0;
  pld_test_slowdown_max(&slowdown);
  return st;
}

/* The last timed run took at most `clock` seconds the library waits by
 * the clock and `work` seconds of an idle machine's work. */
static void assert_within(double seconds, double clock, double work) {
  double limit = pld_test_bound(clock, work, slowdown);
  if (seconds > limit) {
    print_error("the run took %.3f s, more than %.3f s (%.3f s, and %.3f s "
                "at %.1f times an idle machine's time)\n",
                seconds, limit, clock, work, slowdown);
    fail();
  }
}

/* Keeps a core busy for ms milliseconds (forever if ms < 0) without
 * waiting, reading t now and then as a kernel computing would. */
static void compute(pld_core k, pld_tensor t, double ms) {
  double until = now_s() + ms / 1e3;
  while (ms < 0 || now_s() < until)
    (void)pld_read(k, t, PLD_AT(0));
}

/* ---- a peer that never stops --------------------------------------------- */

/* What each rank does, by mode[rank]. */
enum {
  DO_NOTHING,     /* finish at once */
  DO_WAIT,        /* wait on its cell [0], which nobody notifies */
  DO_SPIN,        /* compute forever in the kernel */
  DO_SPIN_AICPU,  /* compute forever in the device function */
  DO_COMPUTE,     /* compute COMPUTE_MS, tell rank 1 it waits, wait for a
                     notify, compute COMPUTE_MS */
  DO_NOTIFY_LATE, /* wait until rank 0 waits, compute LATE_MS, then notify
                     rank 0 */
  DO_EXIT,        /* call exit(3) in the kernel */
  DO_WAIT_SPIN    /* tell rank 1 it waits, wait for a notify, then compute
                     forever */
};

/* A kernel limit of LIMIT_MS counts the time without waiting: COMPUTE_MS,
 * a wait of LATE_MS, COMPUTE_MS again is 2300 ms in all, 300 ms over it,
 * while the computing is 1400 ms, 600 ms under it even if the wait took
 * no time at all (a thread that lost its CPU between telling rank 1 and
 * waiting); the kernel computing LATE_MS stays 1100 ms under it. */
enum { COMPUTE_MS = 700, LATE_MS = 900, LIMIT_MS = 2000 };

#define RUNAWAY_PARAMS PLD_WINDOW(sig, INT32, NR), PLD_IN(mode, INT32, NR)

PLD_KERNEL(k_runaway, k, RUNAWAY_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  int how = (int)pld_read(k, mode, PLD_AT(me));
  if (how == DO_WAIT)
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
  else if (how == DO_SPIN)
    compute(k, mode, -1);
  else if (how == DO_COMPUTE) {
    compute(k, mode, COMPUTE_MS);
    pld_notify(k, sig, 1, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
    compute(k, mode, COMPUTE_MS);
  } else if (how == DO_NOTIFY_LATE) {
    pld_wait(k, sig, PLD_AT(1), 1, PLD_WAIT_GE);
    compute(k, mode, LATE_MS);
    pld_notify(k, sig, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  } else if (how == DO_EXIT) {
    exit(3);
  } else if (how == DO_WAIT_SPIN) {
    pld_notify(k, sig, 1, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
    compute(k, mode, -1);
  }
}

static pid_t test_pid; /* device functions trace in the test's process */

PLD_DEVICE(d_runaway, a, PLD_WINDOW(sig, INT32, NR), PLD_IN(mode, INT32, NR),
           PLD_SCALAR(rank, INT32)) {
  /* The device function cannot read tensors: rank r spins here when told
   * to by the host through the scalar, on the device only. */
  if (rank < 0 && getpid() != test_pid)
    for (volatile unsigned long i = 0;; i++)
      ;
  pld_launch(a, k_runaway, 1, sig, mode);
}

PLD_HOST(h_runaway, h, PLD_IN(mode, INT32, NR), PLD_SCALAR(spin_rank, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_runaway, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), mode,
                 r == spin_rank ? -1 : r);
}

struct runaway {
  int n;
  pld_tensor mode;
  int32_t spin_rank;
  pld_program *p;
};

static void runaway_setup(struct runaway *ra, int n, int32_t spin_rank,
                          int64_t wait_ms, int64_t kernel_ms) {
  test_pid = getpid();
  pld_config cfg = test_config(ids, n, 1, 2);
  cfg.wait_timeout_ms = wait_ms;
  cfg.kernel_timeout_ms = kernel_ms;
  ra->n = n;
  ra->spin_rank = spin_rank;
  assert_ok(pld_tensor_create(PLD_INT32, 1, (int64_t[]){n}, &ra->mode));
  assert_ok(
      pld_compile(h_runaway, &cfg, PLD_ARGS(ra->mode, ra->spin_rank), &ra->p));
  assert_ok(pld_program_prepare(ra->p));
}

static int runaway_run(struct runaway *ra, const int *modes, double *seconds) {
  int32_t *m = pld_tensor_data(ra->mode);
  for (int r = 0; r < ra->n; r++)
    m[r] = modes[r];
  return timed_run(ra->p, PLD_ARGS(ra->mode, ra->spin_rank), seconds);
}

static void runaway_teardown(struct runaway *ra) {
  pld_program_destroy(ra->p);
  assert_no_children();
  pld_tensor_destroy(ra->mode);
}

/* After a stopped run, the program runs again: every rank finishes. */
static void assert_runs_again(struct runaway *ra) {
  const int none[4] = {DO_NOTHING, DO_NOTHING, DO_NOTHING, DO_NOTHING};
  double seconds;
  assert_ok(runaway_run(ra, none, &seconds));
}

/* Rank 0 waits forever; rank 1 computes forever.  No deadlock (rank 1
 * runs), so the 200 ms wait limit ends the run, and rank 1, which does not
 * stop, is killed and restarted: all within the limit plus a second. */
static void test_wait_timeout_peer_never_stops(void **state) {
  (void)state;
  struct runaway ra;
  runaway_setup(&ra, 2, 99, 200, 0);
  pid_t before = ra.p->rs.devs[1].pid, other = ra.p->rs.devs[0].pid;
  double seconds;
  int st = runaway_run(&ra, (const int[]){DO_WAIT, DO_SPIN}, &seconds);
  assert_fails_with(st, PLD_ERR_TIMEOUT,
                    "pld_program_run: wait timeout: a wait was blocked longer "
                    "than 200 ms",
                    "rank 0 (device 1): kernel k_runaway on AIV core 0 (block "
                    "0 of 1) waits on window 'sig' (buffer #0) cell [0] >= 1",
                    "rank 1 (device 3): kernel k_runaway on AIV core 0 (block "
                    "0 of 1) has run for",
                    "rank 1 (device 3) was still running kernel k_runaway on "
                    "AIV core 0 (block 0 of 1), running for",
                    "ms after the run was stopped (",
                    " ms without any rank coming closer to its end): its "
                    "process was killed and a new one started; the program "
                    "can run again");
  assert_true(seconds >= 0.2);
  assert_within(seconds, 0.2 + 0.5, 0.5);
  /* Only rank 1 was replaced. */
  assert_int_not_equal(ra.p->rs.devs[1].pid, before);
  assert_int_equal(ra.p->rs.devs[0].pid, other);
  assert_runs_again(&ra);
  runaway_teardown(&ra);
}

/* The same with the device function of rank 2 of 3 computing forever on
 * its AICPU. */
static void test_wait_timeout_device_function_never_stops(void **state) {
  (void)state;
  struct runaway ra;
  runaway_setup(&ra, 3, 2, 200, 0);
  double seconds;
  int st = runaway_run(&ra, (const int[]){DO_WAIT, DO_NOTHING, DO_NOTHING},
                       &seconds);
  assert_fails_with(st, PLD_ERR_TIMEOUT, "wait timeout",
                    "rank 2 (device 5): device function d_runaway on the "
                    "AICPU has run for",
                    "rank 2 (device 5) was still running device function "
                    "d_runaway on the AICPU, running for",
                    "its process was killed and a new one started");
  assert_within(seconds, 0.2 + 0.5, 0.5);
  runaway_teardown(&ra);
}

/* A kernel computing without waiting is stopped at its own limit, whatever
 * the others do; so is a device function. */
static void test_kernel_time_limit(void **state) {
  (void)state;
  struct runaway ra;
  runaway_setup(&ra, 2, 99, 0, 200);
  double seconds;
  int st = runaway_run(&ra, (const int[]){DO_NOTHING, DO_SPIN}, &seconds);
  assert_fails_with(st, PLD_ERR_TIMEOUT,
                    "pld_program_run: kernel time limit: a kernel or device "
                    "function ran longer than 200 ms without finishing or "
                    "waiting (pld_config.kernel_timeout_ms or "
                    "PLD_KERNEL_TIMEOUT_MS):",
                    "rank 1 (device 3): kernel k_runaway on AIV core 0 (block "
                    "0 of 1) has run for",
                    "ranks already finished: 0",
                    "rank 1 (device 3) was still running kernel k_runaway",
                    "the program can run again");
  assert_true(seconds >= 0.2);
  assert_within(seconds, 0.2 + 0.5, 0.5);
  assert_runs_again(&ra);
  runaway_teardown(&ra);

  runaway_setup(&ra, 2, 0, 0, 200);
  st = runaway_run(&ra, (const int[]){DO_NOTHING, DO_NOTHING}, &seconds);
  assert_fails_with(st, PLD_ERR_TIMEOUT, "kernel time limit",
                    "rank 0 (device 1): device function d_runaway on the "
                    "AICPU has run for",
                    "ranks already finished: 1");
  assert_within(seconds, 0.2 + 0.5, 0.5);
  runaway_teardown(&ra);
}

/* The limit counts time without waiting: a kernel computing 700 ms, then
 * waiting 900 ms for a notify, then computing 700 ms more is within a
 * 2000 ms limit, though it runs 2300 ms in all. */
static void test_kernel_time_limit_restarts_after_a_wait(void **state) {
  (void)state;
  struct runaway ra;
  runaway_setup(&ra, 2, 99, 0, LIMIT_MS);
  double seconds;
  assert_ok(
      runaway_run(&ra, (const int[]){DO_COMPUTE, DO_NOTIFY_LATE}, &seconds));
  assert_true(seconds >= (COMPUTE_MS + LATE_MS + COMPUTE_MS) / 1e3);
  runaway_teardown(&ra);
}

/* ... and a kernel that computes forever after a wait returned is stopped
 * at the limit counted from that wait. */
static void test_kernel_time_limit_after_a_wait(void **state) {
  (void)state;
  struct runaway ra;
  runaway_setup(&ra, 2, 99, 0, LIMIT_MS);
  double seconds;
  int st =
      runaway_run(&ra, (const int[]){DO_WAIT_SPIN, DO_NOTIFY_LATE}, &seconds);
  assert_fails_with(st, PLD_ERR_TIMEOUT, "kernel time limit",
                    "rank 0 (device 1): kernel k_runaway on AIV core 0 (block "
                    "0 of 1) has run for",
                    "ranks already finished: 1", "the program can run again");
  assert_true(seconds >= (LATE_MS + LIMIT_MS) / 1e3);
  assert_within(seconds, (LATE_MS + LIMIT_MS) / 1e3 + 0.5, 0.5);
  assert_runs_again(&ra);
  runaway_teardown(&ra);
}

/* The host copies a core's slot while the core may be changing it: a copy
 * taken while a wait returns (the old state, waiting, with the new start,
 * still unset) must read as a core in passing, not as a wait begun at time
 * 0, which a wait limit would at once call too long, nor as a corrupt
 * slot.  The kernel holds its slot in the middle of such a change for
 * 300 ms, past a 100 ms limit and several looks of the host, then runs
 * 300 ms more with the slot left so. */
PLD_KERNEL(k_torn_slot, k, PLD_WINDOW(sig, INT32, NR),
           PLD_IN(mode, INT32, NR)) {
  (void)sig;
  struct pld__coreslot *slot = &k.p->env->watch->slots[k.p->slot];
  pld__slot_write_begin(slot);
  atomic_store(&slot->since_ns, 0);
  atomic_store(&slot->state, PLD__CORE_WAITING);
  compute(k, mode, 300);
  atomic_store(&slot->state, PLD__CORE_RUNNING);
  pld__slot_write_end(slot);
  /* Left running with no start and its resumes uncounted: a look must
   * count its time from then, not from time 0 (which the kernel time
   * limit would call too long). */
  compute(k, mode, 300);
}
PLD_DEVICE(d_torn_slot, a, PLD_WINDOW(sig, INT32, NR),
           PLD_IN(mode, INT32, NR)) {
  pld_launch(a, k_torn_slot, 1, sig, mode);
}
PLD_HOST(h_torn_slot, h, PLD_IN(mode, INT32, NR)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_torn_slot, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), mode);
}

static void test_wait_limit_ignores_a_slot_in_passing(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.wait_timeout_ms = 100;
  pld_tensor mode;
  assert_ok(pld_tensor_create(PLD_INT32, 1, (int64_t[]){2}, &mode));
  assert_ok(pld_run(h_torn_slot, &cfg, PLD_ARGS(mode)));
  pld_tensor_destroy(mode);
}

/* exit() in a kernel ends the device process: a crash naming the kernel. */
static void test_exit_in_kernel(void **state) {
  (void)state;
  struct runaway ra;
  runaway_setup(&ra, 2, 99, 0, 0);
  double seconds;
  int st = runaway_run(&ra, (const int[]){DO_WAIT, DO_EXIT}, &seconds);
  assert_fails_with(st, PLD_ERR_CRASH,
                    "pld_program_run: rank 1 (device 3) called exit() and "
                    "exited with status ",
                    "in kernel k_runaway on AIV core 0 (block 0 of 1)",
                    "the program cannot run again");
  assert_within(seconds, 0, 2.0);
  runaway_teardown(&ra);
}

/* Limits are milliseconds >= 0: a negative one is refused, not read as "no
 * limit". */
static void test_negative_limits_refused(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor mode;
  pld_program *p = NULL;
  int32_t none = 99;
  assert_ok(pld_tensor_create(PLD_INT32, 1, (int64_t[]){2}, &mode));
  cfg.wait_timeout_ms = -1;
  assert_fails_with(pld_compile(h_runaway, &cfg, PLD_ARGS(mode, none), &p),
                    PLD_ERR_CONFIG,
                    "pld_compile: cfg.wait_timeout_ms: expected a limit in "
                    "milliseconds >= 0 (0: PLD_WAIT_TIMEOUT_MS), got -1");
  cfg.wait_timeout_ms = 0;
  cfg.kernel_timeout_ms = INT64_MIN;
  assert_fails_with(pld_compile(h_runaway, &cfg, PLD_ARGS(mode, none), &p),
                    PLD_ERR_CONFIG,
                    "pld_compile: cfg.kernel_timeout_ms: expected a limit in "
                    "milliseconds >= 0 (0: PLD_KERNEL_TIMEOUT_MS), got "
                    "-9223372036854775808");
  assert_null(p);
  /* The largest limit is no limit in practice, and does not overflow. */
  cfg.kernel_timeout_ms = INT64_MAX;
  cfg.wait_timeout_ms = INT64_MAX;
  assert_ok(pld_compile(h_runaway, &cfg, PLD_ARGS(mode, none), &p));
  assert_true(p->plan.kernel_timeout_ns > 0 && p->plan.wait_timeout_ns > 0);
  pld_program_destroy(p);
  pld_tensor_destroy(mode);
}

/* ---- blocks that can never get a core ------------------------------------ */

/* Every block but the last waits on its rank's cell [0]; the last notifies
 * it.  With more blocks than the device has vector cores, the last block
 * can never start while the others hold every core: a deadlock, as on the
 * hardware. */
PLD_KERNEL(k_last_releases, k, PLD_WINDOW(sig, INT32, NR),
           PLD_OUT(y, INT32, 1)) {
  int32_t b = pld_block_idx(k), n = pld_block_num(k);
  int32_t me = pld_rank(k, pld_window_comm(sig));
  if (b == n - 1)
    pld_notify(k, sig, me, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  else
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
  if (b == 0)
    pld_write(k, y, PLD_AT(0), n);
}

PLD_DEVICE(d_last_releases, a, PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, INT32, 1),
           PLD_SCALAR(blocks, INT32)) {
  pld_launch(a, k_last_releases, blocks, sig, y);
}

PLD_HOST(h_last_releases, h, PLD_OUT(y, INT32, NR, 1),
         PLD_SCALAR(blocks, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_last_releases, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r), blocks);
}

static int run_blocks(const char *platform, int32_t blocks, pld_tensor y,
                      double *seconds) {
  pld_config cfg = test_config(ids, 2, 4, 3);
  cfg.platform = platform;
  pld_program *p;
  assert_ok(pld_compile(h_last_releases, &cfg, PLD_ARGS(y, blocks), &p));
  assert_ok(pld_program_prepare(p));
  int st = timed_run(p, PLD_ARGS(y, blocks), seconds);
  pld_program_destroy(p);
  return st;
}

static void expect_blocks_without_core(const char *platform) {
  const pld_platform_info *pl = pld_platform_find(platform);
  int32_t cores = pl->vector_cores;
  pld_tensor y;
  assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){2, 1}, &y));
  double seconds;
  /* Exactly as many blocks as cores: every block starts; it works. */
  assert_ok(run_blocks(platform, cores, y, &seconds));
  const int32_t *ys = pld_tensor_data(y);
  assert_int_equal(ys[0], cores);
  assert_int_equal(ys[1], cores);
  /* One more, and then three more: the last can never start. */
  for (int32_t extra = 1; extra <= 3; extra += 2) {
    char line[256], first[160], more[160];
    int32_t blocks = cores + extra;
    snprintf(line, sizeof line,
             "rank 1 (device 7): %d AIV block%s cannot start for lack of a "
             "core: all %d AIV cores hold blocks that wait (first in line: "
             "kernel k_last_releases, blocks %d to %d of %d)",
             extra, extra == 1 ? "" : "s", cores, cores, blocks - 1, blocks);
    snprintf(first, sizeof first,
             "of %d) waits on window 'sig' (buffer #0) cell [0] >= 1; it "
             "holds 0; waiting for ",
             blocks);
    snprintf(more, sizeof more,
             "and %d more blocks of kernel k_last_releases on other cores "
             "wait on the same cell",
             cores - 1);
    assert_fails_with(run_blocks(platform, blocks, y, &seconds),
                      PLD_ERR_DEADLOCK,
                      "pld_program_run: deadlock: these waits can never be "
                      "satisfied",
                      line, first, more, "ranks already finished: none");
    assert_within(seconds, 0.05, 0.95);
  }
  pld_tensor_destroy(y);
  assert_no_children();
}

static void test_deadlock_blocks_without_core_a2a3(void **state) {
  (void)state;
  expect_blocks_without_core("a2a3sim");
}

static void test_deadlock_blocks_without_core_a5(void **state) {
  (void)state;
  expect_blocks_without_core("a5sim");
}

/* ---- a kernel writing over its device's control memory ----------------- */

/* A wild write, byte by byte.  Other threads of the device use that
 * memory meanwhile: that is the bug being simulated, not one of the test,
 * so ThreadSanitizer is told not to look. */
#if defined(__GNUC__)
__attribute__((no_sanitize("thread")))
#endif
static void
wild_write(volatile unsigned char *p, int fill, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)fill;
}

/* The control block of the device whose first dispatched tensor slice is
 * x: it lies before the device's data area, one guard page, then x. */
static struct pld__devctl *ctl_block(pld_tensor x) {
  size_t ctl = (sizeof(struct pld__devctl) + 4095) & ~(size_t)4095;
  return (struct pld__devctl *)((unsigned char *)x.p->data - 4096 - ctl);
}

/* Rank 1's kernel writes byte `fill` over `bytes` bytes of its device's
 * control block starting at `at` (a wild write through a bad pointer, as
 * buggy kernels make), then returns normally. */
PLD_KERNEL(k_scribble, k, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32), PLD_SCALAR(fill, INT32),
           PLD_SCALAR(at, INT64), PLD_SCALAR(bytes, INT64)) {
  pld_tile *t = pld_load(k, x, 0, 0, TR, TC);
  pld_store(k, t, y, 0, 0);
  if (rank != 1)
    return;
  wild_write((unsigned char *)ctl_block(x) + at, fill, (size_t)bytes);
}
PLD_DEVICE(d_scribble, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32), PLD_SCALAR(fill, INT32),
           PLD_SCALAR(at, INT64), PLD_SCALAR(bytes, INT64)) {
  pld_launch(a, k_scribble, 1, x, y, rank, fill, at, bytes);
}
PLD_HOST(h_scribble, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC), PLD_SCALAR(fill, INT32),
         PLD_SCALAR(at, INT64), PLD_SCALAR(bytes, INT64)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_scribble, r, pld_slice(h, x, r), pld_slice(h, y, r), r,
                 fill, at, bytes);
}

static int scribble(int32_t fill, int64_t at, int64_t bytes) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  int st = pld_run(h_scribble, &cfg, PLD_ARGS(x, y, fill, at, bytes));
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void test_wild_write_over_control_block(void **state) {
  (void)state;
  const int64_t whole = (int64_t)sizeof(struct pld__devctl);
  /* 0xFF everywhere: no signal -1, no garbage read past a name. */
  assert_fails_with(scribble(0xFF, 0, whole), PLD_ERR_CRASH,
                    "pld_program_run: rank 1 (device 1) wrote over its "
                    "control block in shared memory (its first word holds "
                    "0xffffffffffffffff instead of 0x31746374636c6470): a "
                    "kernel or device function wrote outside its memory",
                    "the program cannot run again");
  assert_true(strlen(pld_last_error()) < 400);
  /* Zeros everywhere: not a success. */
  assert_fails_with(scribble(0, 0, whole), PLD_ERR_CRASH,
                    "rank 1 (device 1) wrote over its control block",
                    "its first word holds 0 instead of");
  /* Only the last magic word (of what the device publishes; its commands
   * and the registry of signal uses follow it: the host checks each entry
   * of the registry before it uses one). */
  const int64_t end = (int64_t)offsetof(struct pld__devctl, st.magic_end);
  assert_fails_with(scribble(0x41, end, 8), PLD_ERR_CRASH,
                    "rank 1 (device 1) wrote over its control block",
                    "its last word holds 0x4141414141414141");
  /* Over the watch: the middle word. */
  const int64_t watch = (int64_t)offsetof(struct pld__devctl, st.watch);
  assert_fails_with(scribble(0x42, watch - 8, 64), PLD_ERR_CRASH,
                    "rank 1 (device 1) wrote over its control block",
                    "its middle word holds 0x4242424242424242");
  /* Only the crash record, inside the block: an invalid record. */
  const int64_t crash = (int64_t)offsetof(struct pld__devctl, st.crash);
  assert_fails_with(scribble(0x7F, crash, sizeof(struct pld__crash)),
                    PLD_ERR_CRASH,
                    "rank 1 (device 1) wrote over its control "
                    "block in shared memory (its crash record "
                    "is invalid)");
  /* Nothing written: the control run works. */
  assert_ok(scribble(0, 0, 0));
}

/* The kernel names a forged crash record may hold, and how the report
 * shows each: a byte outside printable ASCII as '?'. */
static const char *const forged_names[][2] = {
    {"k_forge", "k_forge"},
    {"k forge~\x01\x1f\x7f\x80\xff", "k forge~?????"},
};

/* Rank 1's kernel writes a crash record into its device's control block,
 * as the crash handler would for a fault of a block of kernel
 * forged_names[name][0] on core `core` of type `type`, and returns
 * normally: the record is read as the device's death where its fields
 * are valid. */
PLD_KERNEL(k_forge, k, PLD_IN(x, FP32, TR, TC), PLD_SCALAR(rank, INT32),
           PLD_SCALAR(type, INT32), PLD_SCALAR(core, INT32),
           PLD_SCALAR(name, INT32)) {
  (void)k;
  if (rank != 1)
    return;
  struct pld__crash *cr = &ctl_block(x)->st.crash;
  cr->signal = SIGSEGV;
  cr->core_type = type;
  cr->core = core;
  cr->block = 0;
  cr->blocks = 1;
  snprintf(cr->fn, sizeof cr->fn, "%s", forged_names[name][0]);
  cr->addr = 0x40;
  atomic_store(&cr->kind, PLD__CRASH_SIGNAL);
}
PLD_DEVICE(d_forge, a, PLD_IN(x, FP32, TR, TC), PLD_SCALAR(rank, INT32),
           PLD_SCALAR(type, INT32), PLD_SCALAR(core, INT32),
           PLD_SCALAR(name, INT32)) {
  pld_launch(a, k_forge, 1, x, rank, type, core, name);
}
PLD_HOST(h_forge, h, PLD_IN(x, FP32, NR, TR, TC), PLD_SCALAR(type, INT32),
         PLD_SCALAR(core, INT32), PLD_SCALAR(name, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_forge, r, pld_slice(h, x, r), r, type, core, name);
}

/* The run of h_forge with a record of core `core` of type `type` and
 * kernel forged_names[name], which must fail naming that core and kernel,
 * or (valid 0) as an invalid record. */
static void forged_crash(int32_t type, int32_t core, int32_t name, int valid) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  char where[96];
  snprintf(where, sizeof where,
           "at address 0x40 in kernel %s on %s core %d (block 0 of 1)",
           forged_names[name][1], type == PLD_CORE_CUBE ? "AIC" : "AIV",
           (int)core);
  const int st = pld_run(h_forge, &cfg, PLD_ARGS(x, type, core, name));
  if (valid)
    assert_fails_with(st, PLD_ERR_CRASH,
                      "rank 1 (device 1) crashed with signal SIGSEGV", where);
  else
    assert_fails_with(st, PLD_ERR_CRASH,
                      "rank 1 (device 1) wrote over its control block in "
                      "shared memory (its crash record is invalid)");
  assert_no_children();
  pld_tensor_destroy(x);
}

/* A crash record names a core of its type: every vector core's, up to
 * the last, though a2a3 has fewer cube cores than vector ones, and every
 * cube core's; one past the last of either is an invalid record. */
static void test_crash_record_core_bounds(void **state) {
  (void)state;
  const pld_platform_info *pl = pld_platform_find("a2a3sim");
  assert_non_null(pl);
  assert_true(pl->cube_cores < pl->vector_cores);
  forged_crash(PLD_CORE_VECTOR, pl->vector_cores - 1, 0, 1);
  forged_crash(PLD_CORE_VECTOR, pl->vector_cores, 0, 0);
  forged_crash(PLD_CORE_CUBE, pl->cube_cores - 1, 0, 1);
  forged_crash(PLD_CORE_CUBE, pl->cube_cores, 0, 0);
}

/* A record's kernel name is shown with every byte outside printable ASCII
 * (a control byte, DEL, a byte above it) as '?', space and '~' as they
 * are: the record is the device's memory, which a kernel may have
 * written anything over. */
static void test_crash_record_name_printable(void **state) {
  (void)state;
  forged_crash(PLD_CORE_VECTOR, 0, 1, 1);
}

/* A write just before the first tensor hits the guard page: a crash at
 * that address, not a corrupted control block. */
PLD_KERNEL(k_underflow, k, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32)) {
  (void)k;
  (void)y;
  if (rank == 1)
    ((volatile unsigned char *)x.p->data)[-1] = 1;
}
PLD_DEVICE(d_underflow, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32)) {
  pld_launch(a, k_underflow, 1, x, y, rank);
}
PLD_HOST(h_underflow, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_underflow, r, pld_slice(h, x, r), pld_slice(h, y, r), r);
}

static void test_write_before_first_tensor_faults(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  assert_fails_with(
      pld_run(h_underflow, &cfg, PLD_ARGS(x, y)), PLD_ERR_CRASH,
      "rank 1 (device 1) crashed with signal SIGSEGV (Segmentation "
      "fault) at address",
      "in kernel k_underflow on AIV core 0 (block 0 of 1)");
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_wait_timeout_peer_never_stops),
    cmocka_unit_test(test_wait_timeout_device_function_never_stops),
    cmocka_unit_test(test_kernel_time_limit),
    cmocka_unit_test(test_kernel_time_limit_restarts_after_a_wait),
    cmocka_unit_test(test_kernel_time_limit_after_a_wait),
    cmocka_unit_test(test_wait_limit_ignores_a_slot_in_passing),
    cmocka_unit_test(test_exit_in_kernel),
    cmocka_unit_test(test_negative_limits_refused),
    cmocka_unit_test(test_deadlock_blocks_without_core_a2a3),
    cmocka_unit_test(test_deadlock_blocks_without_core_a5),
    cmocka_unit_test(test_wild_write_over_control_block),
    cmocka_unit_test(test_crash_record_core_bounds),
    cmocka_unit_test(test_crash_record_name_printable),
    cmocka_unit_test(test_write_before_first_tensor_faults),
};

PLD_TEST_MAIN("limits", tests)
