/* Asynchronous runs (pld_program_submit and the pld_job handles): results
 * and submission order against plain C over 2, 3 and 4 ranks and both
 * simulators, at several depths, also when a run reads what the run before
 * it wrote (the next run's inputs may be copied while one runs: runs with
 * equal scalar values); the caller's thread runs on while a run
 * computes; the depth limit; a failed, deadlocked or crashed run and the
 * runs queued behind it; the message of a failed run, which names it
 * however it failed, on both ways of running submitted runs; destroying a
 * program with runs in flight; misuse
 * of the handles; pld_program_run after submits; and new scalar values
 * through submits. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../host/programs.h"
#include "load.h"
#include "pld_test.h"

static int ids[16];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Stale results cannot pass. */
static const float POISON = -12345.0f;

static void poison(pld_tensor y) {
  float *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(y); i++)
    ys[i] = POISON;
}

static void expect_poisoned(pld_tensor y, const char *what) {
  const float *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(y); i++)
    if (ys[i] != POISON) {
      print_error("%s: y[%lld] = %g: a run that should not have run wrote "
                  "it\n",
                  what, (long long)i, (double)ys[i]);
      fail();
    }
}

/* y == x * s, element by element, as FP32 computes it (one rounding). */
static void expect_mul(pld_tensor x, pld_tensor y, float s, const char *what) {
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) {
    volatile float want = xs[i] * s;
    if (ys[i] != want) {
      print_error("%s: s = %g: y[%lld] = %.9g, expected %.9g\n", what,
                  (double)s, (long long)i, (double)ys[i], (double)want);
      fail();
    }
  }
}

/* Waits for j and asserts its status and that its message holds each of
 * the NULL-terminated substrings ("" for success). */
#define expect_job(j, status, ...)                                             \
  expect_job_at((j), (status), __FILE__, __LINE__,                             \
                (const char *[]){__VA_ARGS__, NULL})

static void expect_job_at(pld_job *j, int want, const char *file, int line,
                          const char **subs) {
  assert_ok(pld_job_wait(j, -1));
  assert_int_equal(pld_job_test(j), 1);
  int got = pld_job_status(j);
  const char *msg = pld_job_message(j);
  assert_non_null(msg);
  if (got != want) {
    print_error("%s:%d: job: expected %s, got %s: %s\n", file, line,
                pld_status_name(want), pld_status_name(got), msg);
    _fail(file, line);
  }
  if (want == PLD_OK && msg[0]) {
    print_error("%s:%d: job succeeded with a message: %s\n", file, line, msg);
    _fail(file, line);
  }
  for (; *subs; subs++)
    if (!strstr(msg, *subs)) {
      print_error("%s:%d: job message lacks \"%s\": %s\n", file, line, *subs,
                  msg);
      _fail(file, line);
    }
}

/* ---- y = x * s ---------------------------------------------------------- */

PLD_DEVICE(d_mul, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(s, FP32)) {
  pld_launch(a, k_scale, 1, x, y, s);
}
PLD_HOST(h_mul, h, PLD_IN(x, FP32, NR, TR, TC), PLD_OUT(y, FP32, NR, TR, TC),
         PLD_SCALAR(s, FP32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_mul, r, pld_slice(h, x, r), pld_slice(h, y, r), s);
}

enum { K = 12 };

/* K runs of y_k = x * s_k submitted at once (each submit waits while
 * `depth` runs are in flight), then waited for in turn. */
static void submit_in_order(int n, int first, int step, const char *platform,
                            int depth, int prepare) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x[K], y[K];
  float s[K];
  for (int k = 0; k < K; k++) {
    x[k] = pld_test_tensor(3, shape, 0.37f * (float)(k + 1), (float)k - 5.0f);
    y[k] = pld_test_tensor(3, shape, 0, 0);
    s[k] = (float)(k / 3 - 2) * 0.75f + 0.1f; /* three runs each */
  }
  pld_program *p = NULL;
  assert_ok(pld_compile(h_mul, &cfg, PLD_ARGS(x[0], y[0], s[0]), &p));
  if (prepare)
    assert_ok(pld_program_prepare(p));
  pld_job *jobs[K];
  int limit = depth ? depth : 2;
  for (int k = 0; k < K; k++) {
    poison(y[k]);
    assert_ok(pld_program_submit(p, PLD_ARGS(x[k], y[k], s[k]), 0, &jobs[k]));
    assert_non_null(jobs[k]);
    /* At most `limit` in flight: the run `limit` places back is done. */
    if (k >= limit && !pld_job_test(jobs[k - limit])) {
      print_error("depth %d: run %d is not done after run %d was "
                  "submitted\n",
                  limit, k - limit + 1, k + 1);
      fail();
    }
  }
  char what[64];
  for (int k = 0; k < K; k++) {
    expect_job(jobs[k], PLD_OK, "");
    snprintf(what, sizeof what, "%s, %d ranks, depth %d, run %d", platform, n,
             limit, k + 1);
    expect_mul(x[k], y[k], s[k], what);
  }
  for (int k = 0; k < K; k++)
    assert_ok(pld_job_free(jobs[k]));
  pld_program_destroy(p);
  assert_no_children();
  for (int k = 0; k < K; k++) {
    pld_tensor_destroy(x[k]);
    pld_tensor_destroy(y[k]);
  }
}

/* Each run reads the tensor the run before it wrote: y_k = y_(k-1) * s_k,
 * as the same calls made one by one give. */
static void submit_chained(int n, int first, int step, const char *platform,
                           int depth) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor t[K + 1];
  float s[K];
  t[0] = pld_test_tensor(3, shape, 0.25f, -3.0f);
  for (int k = 0; k < K; k++) {
    t[k + 1] = pld_test_tensor(3, shape, 0, 0);
    poison(t[k + 1]);
    /* One value for all: no run traces again, so the next run's inputs
     * may be copied while the one before runs. */
    s[k] = -1.5f;
  }
  pld_program *p = NULL;
  assert_ok(pld_compile(h_mul, &cfg, PLD_ARGS(t[0], t[1], s[0]), &p));
  assert_ok(pld_program_prepare(p));
  pld_job *jobs[K];
  for (int k = 0; k < K; k++)
    assert_ok(
        pld_program_submit(p, PLD_ARGS(t[k], t[k + 1], s[k]), 0, &jobs[k]));
  /* The same by plain C. */
  int64_t numel = pld_tensor_numel(t[0]);
  float *want = malloc((size_t)numel * sizeof *want);
  assert_non_null(want);
  memcpy(want, pld_tensor_data(t[0]), (size_t)numel * sizeof *want);
  for (int k = 0; k < K; k++) {
    expect_job(jobs[k], PLD_OK, "");
    for (int64_t i = 0; i < numel; i++) {
      want[i] *= s[k];
      float got = ((const float *)pld_tensor_data(t[k + 1]))[i];
      if (got != want[i]) {
        print_error("%s, %d ranks, depth %d: run %d reads run %d's output: "
                    "element %lld = %.9g, expected %.9g\n",
                    platform, n, depth, k + 1, k, (long long)i, (double)got,
                    (double)want[i]);
        fail();
      }
    }
    assert_ok(pld_job_free(jobs[k]));
  }
  free(want);
  pld_program_destroy(p);
  for (int k = 0; k <= K; k++)
    pld_tensor_destroy(t[k]);
}

static void test_order_chained(void **state) {
  (void)state;
  submit_chained(2, 0, 1, "a2a3sim", 0);
  submit_chained(3, 4, 1, "a5sim", 3);
  submit_chained(4, 0, 2, "a2a3sim", 1);
}

/* In place: y = y * s + 1, every run on the same tensor. */
PLD_KERNEL(k_axpb, k, PLD_INOUT(y, FP32, TR, TC), PLD_SCALAR(s, FP32)) {
  pld_tile *t = pld_load(k, y, 0, 0, TR, TC);
  pld_muls(k, t, t, s);
  pld_adds(k, t, t, 1.0);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_axpb, a, PLD_INOUT(y, FP32, TR, TC), PLD_SCALAR(s, FP32)) {
  pld_launch(a, k_axpb, 1, y, s);
}
PLD_HOST(h_axpb, h, PLD_INOUT(y, FP32, NR, TR, TC), PLD_SCALAR(s, FP32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_axpb, r, pld_slice(h, y, r), s);
}

static void submit_in_place(int n, int first, int step, const char *platform,
                            int depth) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor y = pld_test_tensor(3, shape, 0.125f, -2.0f);
  int64_t numel = pld_tensor_numel(y);
  float *want = malloc((size_t)numel * sizeof *want);
  assert_non_null(want);
  memcpy(want, pld_tensor_data(y), (size_t)numel * sizeof *want);
  const float s = 0.75f;
  pld_program *p = NULL;
  assert_ok(pld_compile(h_axpb, &cfg, PLD_ARGS(y, s), &p));
  assert_ok(pld_program_prepare(p));
  pld_job *jobs[K];
  for (int k = 0; k < K; k++)
    assert_ok(pld_program_submit(p, PLD_ARGS(y, s), 0, &jobs[k]));
  for (int k = 0; k < K; k++) {
    expect_job(jobs[k], PLD_OK, "");
    assert_ok(pld_job_free(jobs[k]));
  }
  for (int k = 0; k < K; k++)
    for (int64_t i = 0; i < numel; i++) {
      volatile float m = want[i] * s;
      want[i] = m + 1.0f;
    }
  const float *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < numel; i++)
    if (ys[i] != want[i]) {
      print_error("%s, %d ranks, depth %d: %d runs in place: element %lld = "
                  "%.9g, expected %.9g\n",
                  platform, n, depth, K, (long long)i, (double)ys[i],
                  (double)want[i]);
      fail();
    }
  free(want);
  pld_program_destroy(p);
  pld_tensor_destroy(y);
}

static void test_order_in_place(void **state) {
  (void)state;
  submit_in_place(2, 0, 1, "a5sim", 0);
  submit_in_place(3, 1, 4, "a2a3sim", 4);
}

static void test_order_default_depth(void **state) {
  (void)state;
  submit_in_order(2, 0, 1, "a2a3sim", 0, 1);
  submit_in_order(3, 1, 4, "a5sim", 0, 1);
}

static void test_order_depths(void **state) {
  (void)state;
  submit_in_order(3, 1, 4, "a5sim", 1, 1);
  submit_in_order(4, 15, -5, "a2a3sim", 3, 1);
  submit_in_order(2, 6, 1, "a5sim", 8, 1);
}

/* A program not prepared: its first run, submitted, starts the devices. */
static void test_first_run_submitted(void **state) {
  (void)state;
  submit_in_order(2, 0, 1, "a2a3sim", 0, 0);
  submit_in_order(4, 4, 1, "a5sim", 3, 0);
}

/* ---- a window kept from run to run: the order of the runs --------------- */

/* Each run writes the window cell plus `add` to seen, and adds `add` to
 * the cell: with the windows kept, run i sees the sum of the adds of the
 * runs before it, plus its own. */
PLD_KERNEL(k_acc, k, PLD_WINDOW(acc, INT32, 1), PLD_OUT(seen, INT32, 1),
           PLD_SCALAR(add, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(acc));
  double before = pld_read(k, pld_local(acc), PLD_AT(0));
  pld_write(k, seen, PLD_AT(0), before + (double)add);
  pld_notify(k, acc, me, PLD_AT(0), add, PLD_NOTIFY_ADD);
}
PLD_DEVICE(d_acc, a, PLD_WINDOW(acc, INT32, 1), PLD_OUT(seen, INT32, 1),
           PLD_SCALAR(add, INT32)) {
  pld_launch(a, k_acc, 1, acc, seen, add);
}
PLD_HOST(h_acc, h, PLD_OUT(seen, INT32, NR, 1), PLD_SCALAR(add, INT32)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_acc, r, pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, seen, r), add);
}

static pld_tensor int_tensor(int n, int32_t value) {
  pld_tensor t;
  assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){n, 1}, &t));
  int32_t *d = pld_tensor_data(t);
  for (int r = 0; r < n; r++)
    d[r] = value;
  return t;
}

static void expect_seen(pld_tensor seen, int n, int64_t want, int run) {
  const int32_t *d = pld_tensor_data(seen);
  for (int r = 0; r < n; r++)
    if (d[r] != want) {
      print_error("run %d, rank %d: saw %d, expected the prefix sum %lld\n",
                  run, r, d[r], (long long)want);
      fail();
    }
}

/* Run i (from 1) adds i: run i sees 1 + 2 + ... + i. */
static void accumulate_in_order(int n, int first, int step,
                                const char *platform, int depth) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.keep_windows = 1;
  cfg.max_in_flight = depth;
  pld_tensor seen[K];
  for (int k = 0; k < K; k++)
    seen[k] = int_tensor(n, -1);
  pld_program *p = NULL;
  int32_t add0 = 1;
  assert_ok(pld_compile(h_acc, &cfg, PLD_ARGS(seen[0], add0), &p));
  assert_ok(pld_program_prepare(p));
  pld_job *jobs[K];
  for (int k = 0; k < K; k++) {
    int32_t add = k + 1;
    assert_ok(pld_program_submit(p, PLD_ARGS(seen[k], add), 0, &jobs[k]));
  }
  int64_t sum = 0;
  for (int k = 0; k < K; k++) {
    expect_job(jobs[k], PLD_OK, "");
    sum += k + 1;
    expect_seen(seen[k], n, sum, k + 1);
    assert_ok(pld_job_free(jobs[k]));
  }
  pld_program_destroy(p);
  for (int k = 0; k < K; k++)
    pld_tensor_destroy(seen[k]);
}

static void test_order_kept_window(void **state) {
  (void)state;
  accumulate_in_order(3, 2, 3, "a5sim", 8);
  accumulate_in_order(4, 0, 1, "a2a3sim", 0);
  accumulate_in_order(2, 9, -9, "a2a3sim", 3);
}

/* ---- a program that computes, spins, fails, deadlocks or crashes ------- */

/* What the kernel does, besides y = x * tag.  When ms > 0, rank 0 and the
 * last rank (the one that fails) first spin for ms milliseconds and until
 * the test releases them (ctl_release, at most 10 s): the runs submitted
 * before the release are queued by the time it fails, however slowly a
 * busy machine runs the test's thread. */
enum {
  C_OK,
  C_OOB,      /* the last rank loads a row past the end of x */
  C_DEADLOCK, /* rank 0 waits on a cell nobody notifies */
  C_CRASH,    /* the last rank writes to an address nobody maps */
  C_EXTRA,    /* the host orchestrator makes one more dispatch to rank 0 */
  C_TILES,    /* the last rank asks for a tile larger than tile memory */
  C_LAUNCH,   /* the last rank's device function launches 0 blocks */
  C_HOLD      /* the host orchestrator, traced again for this value, waits
                 until the test lets it go (release) */
};

/* Created by rank 0's kernel when it starts spinning: the run is running.
 * Set before the device processes are forked, which inherit it. */
static char marker[64];
/* Created by the test to let runs go on: spinning kernels may end
 * (ctl_release), a run with C_HOLD starts. */
static char release[64];
/* An address no process maps, read at run time so that the compiler cannot
 * see the fault coming. */
static volatile uintptr_t bad_address = 16;
/* Compiling traces the device functions in the test's process: C_LAUNCH
 * fails only where it runs, on the device. */
static pid_t test_pid;

static void spin_for(int32_t ms) {
  double until = now_ms() + ms;
  volatile uint64_t count = 0;
  while (now_ms() < until)
    count++;
}

PLD_KERNEL(k_ctl, k, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_WINDOW(sig, INT32, 1), PLD_SCALAR(tag, FP32),
           PLD_SCALAR(mode, INT32), PLD_SCALAR(ms, INT32)) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm);
  int last = me == pld_nranks(k, comm) - 1;
  if (me == 0 && ms > 0) {
    int fd = marker[0] ? open(marker, O_CREAT | O_WRONLY, 0600) : -1;
    if (fd >= 0)
      close(fd);
  }
  if ((me == 0 || last) && ms > 0) {
    spin_for(ms);
    double until = now_ms() + 10000;
    while (release[0] && access(release, F_OK) != 0 && now_ms() < until)
      spin_for(1);
  }
  if (mode == C_DEADLOCK && me == 0)
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
  if (mode == C_CRASH && last)
    *(volatile int *)bad_address = 1;
  if (mode == C_TILES && last)
    pld_tile_new(k, PLD_FP32, 1024, 1024);
  pld_tile *t = pld_load(k, x, mode == C_OOB && last ? 1 : 0, 0, TR, TC);
  pld_muls(k, t, t, tag);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_ctl, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_WINDOW(sig, INT32, 1), PLD_SCALAR(tag, FP32),
           PLD_SCALAR(mode, INT32), PLD_SCALAR(ms, INT32)) {
  int32_t blocks = mode == C_LAUNCH && getpid() != test_pid ? 0 : 1;
  pld_launch(a, k_ctl, blocks, x, y, sig, tag, mode, ms);
}
PLD_HOST(h_ctl, h, PLD_IN(x, FP32, NR, TR, TC), PLD_OUT(y, FP32, NR, TR, TC),
         PLD_SCALAR(tag, FP32), PLD_SCALAR(mode, INT32),
         PLD_SCALAR(ms, INT32)) {
  /* Traced on the thread that runs the run (the runner's): the runs
   * submitted meanwhile wait behind it.  At most 10 s. */
  for (int i = 0; mode == C_HOLD && access(release, F_OK) != 0 && i < 10000;
       i++)
    usleep(1000);
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_ctl, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1)), tag,
                 mode == C_LAUNCH && r != n - 1 ? C_OK : mode, ms);
  if (mode == C_EXTRA)
    pld_dispatch(h, d_ctl, 0, pld_slice(h, x, 0), pld_slice(h, y, 0),
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1)), tag, mode,
                 ms);
}

enum { NY = 8 };

struct ctl {
  int n;
  pld_tensor x[NY], y[NY];
  pld_program *p;
};

/* A prepared h_ctl over n ranks (cfg's), compiled with tag 1, C_OK, no
 * spin.  Run i reads x[i] (each different) and writes y[i]. */
static void ctl_setup_cfg(struct ctl *c, int n, const pld_config *cfg) {
  test_pid = getpid();
  snprintf(marker, sizeof marker, "/tmp/pld-submit-%d", (int)getpid());
  snprintf(release, sizeof release, "/tmp/pld-submit-%d.go", (int)getpid());
  unlink(marker);
  unlink(release);
  c->n = n;
  const int64_t shape[] = {n, TR, TC};
  for (int i = 0; i < NY; i++) {
    c->x[i] =
        pld_test_tensor(3, shape, 0.5f + 0.25f * (float)i, (float)i - 7.0f);
    c->y[i] = pld_test_tensor(3, shape, 0, 0);
    poison(c->y[i]);
  }
  float tag = 1.0f;
  int32_t mode = C_OK, ms = 0;
  c->p = NULL;
  assert_ok(pld_compile(h_ctl, cfg, PLD_ARGS(c->x[0], c->y[0], tag, mode, ms),
                        &c->p));
  assert_ok(pld_program_prepare(c->p));
}

static void ctl_setup(struct ctl *c, int n, int first, int step,
                      const char *platform, int depth) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  ctl_setup_cfg(c, n, &cfg);
}

static int ctl_submit(struct ctl *c, int yi, float tag, int32_t mode,
                      int32_t ms, int flags, pld_job **out) {
  return pld_program_submit(c->p, PLD_ARGS(c->x[yi], c->y[yi], tag, mode, ms),
                            flags, out);
}

/* The runs spinning since ctl_setup may end (and later ones spin only
 * their milliseconds). */
static void ctl_release(void) {
  int fd = open(release, O_CREAT | O_WRONLY, 0600);
  assert_true(fd >= 0);
  close(fd);
}

static void ctl_teardown(struct ctl *c) {
  ctl_release(); /* destroy waits for a run that started */
  pld_program_destroy(c->p);
  assert_no_children();
  for (int i = 0; i < NY; i++) {
    pld_tensor_destroy(c->x[i]);
    pld_tensor_destroy(c->y[i]);
  }
  unlink(marker);
  unlink(release);
}

/* Waits (at most 10 s) until a run has started spinning. */
static void wait_marker(void) {
  double until = now_ms() + 10000;
  while (access(marker, F_OK) != 0) {
    if (now_ms() > until) {
      print_error("no run started within 10 s (%s)\n", marker);
      fail();
    }
    usleep(1000);
  }
}

/* ---- the caller goes on while a run computes ---------------------------- */

enum { SPIN_MS = 100 };

static void test_overlap(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 3, 1, 4, "a5sim", 0);
  float tag = 2.5f;
  pld_job *j = NULL;
  double t0 = now_ms();
  assert_ok(ctl_submit(&c, 0, tag, C_OK, SPIN_MS, 0, &j));
  /* The run spins until released, which only the loop below does: the
   * submit returned without it, however long it took (no bound by the
   * clock: a submit under TSan on a busy machine took 36 ms, 3.6 times
   * the bound this test had). */
  assert_int_equal(pld_job_test(j), 0);
  assert_fails_with(pld_job_wait(j, 1), PLD_ERR_TIMEOUT,
                    "pld_job_wait: run 1 is not finished after 1 ms");
  assert_fails_with(pld_job_wait(j, 0), PLD_ERR_TIMEOUT,
                    "pld_job_wait: run 1 is not finished after 0 ms");
  /* Meanwhile the host computes what the run should give, and counts. */
  pld_tensor want = pld_test_tensor(3, (int64_t[]){3, TR, TC}, 0, 0);
  uint64_t rounds = 0;
  while (!pld_job_test(j)) {
    const float *xs = pld_tensor_data(c.x[0]);
    float *ws = pld_tensor_data(want);
    for (int64_t i = 0; i < pld_tensor_numel(c.x[0]); i++)
      ws[i] = xs[i] * tag;
    if (++rounds == 10)
      ctl_release();
  }
  double done = now_ms() - t0;
  if (rounds < 10 || done < SPIN_MS) {
    print_error("the host did %llu rounds in %.3f ms while the run spun for "
                "%d ms\n",
                (unsigned long long)rounds, done, SPIN_MS);
    fail();
  }
  assert_ok(pld_job_wait(j, -1));
  assert_ok(pld_job_wait(j, 0));
  assert_int_equal(pld_job_test(j), 1);
  expect_job(j, PLD_OK, "");
  expect_mul(c.x[0], c.y[0], tag, "the spinning run");
  const float *ws = pld_tensor_data(want), *ys = pld_tensor_data(c.y[0]);
  for (int64_t i = 0; i < pld_tensor_numel(want); i++)
    assert_true(ys[i] == ws[i]);
  assert_ok(pld_job_free(j));
  pld_tensor_destroy(want);
  ctl_teardown(&c);
}

/* ---- the depth limit ---------------------------------------------------- */

/* Fills c's program's `depth` runs in flight (run i: y[i] = x[i] *
 * tags[i], rank 0 and the last spinning 150 ms and until released); a
 * further submit with PLD_SUBMIT_NOWAIT is refused, one without it waits
 * for the first run to end; every run's result as computed. */
static void fill_depth(struct ctl *c, int depth, const float *tags) {
  pld_job *j[3] = {NULL, NULL, NULL};
  double t0 = now_ms();
  for (int i = 0; i < depth; i++)
    assert_ok(ctl_submit(c, i, tags[i], C_OK, 150, 0, &j[i]));
  char busy[96];
  snprintf(busy, sizeof busy,
           "pld_program_submit: h_ctl: %d runs are in flight already", depth);
  assert_fails_with(
      ctl_submit(c, depth, tags[depth], C_OK, 0, PLD_SUBMIT_NOWAIT, &j[depth]),
      PLD_ERR_BUSY, busy, "pld_config.max_in_flight");
  assert_null(j[depth]);
  ctl_release();
  assert_ok(ctl_submit(c, depth, tags[depth], C_OK, 0, 0, &j[depth]));
  double returned = now_ms() - t0;
  assert_int_equal(pld_job_test(j[0]), 1);
  if (returned < 150) {
    print_error("submit %d returned after %.3f ms, before the first run's "
                "150 ms\n",
                depth + 1, returned);
    fail();
  }
  for (int i = 0; i <= depth; i++) {
    char what[16];
    snprintf(what, sizeof what, "run %d", i + 1);
    expect_job(j[i], PLD_OK, "");
    expect_mul(c->x[i], c->y[i], tags[i], what);
    assert_ok(pld_job_free(j[i]));
  }
}

static void test_depth_limit(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 4, 15, -5, "a2a3sim", 2);
  fill_depth(&c, 2, (const float[]){1.5f, -2.0f, 3.0f});
  ctl_teardown(&c);

  /* One at a time. */
  ctl_setup(&c, 2, 3, 2, "a5sim", 1);
  fill_depth(&c, 1, (const float[]){0.25f, 4.0f});
  ctl_teardown(&c);

  /* The same limit where a runner thread runs the runs: a race-checked
   * program needs the host between two runs, so its runs are not queued
   * on the devices. */
  pld_config rc = test_config(ids, 3, 0, 1);
  rc.check = "races";
  rc.max_in_flight = 2;
  ctl_setup_cfg(&c, 3, &rc);
  fill_depth(&c, 2, (const float[]){2.5f, -0.5f, 3.0f});
  ctl_teardown(&c);

  /* A negative depth is refused. */
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.max_in_flight = -1;
  pld_tensor x = pld_test_tensor(3, (int64_t[]){2, TR, TC}, 1, 0);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){2, TR, TC}, 0, 0);
  float s = 1.0f;
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_mul, &cfg, PLD_ARGS(x, y, s), &p),
                    PLD_ERR_CONFIG,
                    "pld_compile: cfg.max_in_flight: expected a count of runs "
                    ">= 1",
                    "got -1");
  assert_null(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- failures ------------------------------------------------------------ */

/* A failed run reports through its own job and cancels the run queued
 * behind it (run 2: the same values, so its inputs may have been copied
 * while run 1 ran); runs submitted afterwards run (runs 3 and 4, again
 * with equal values). */
static void test_failure_cancels_queued(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 2, 0, 1, "a5sim", 3);
  pld_job *j1, *j2, *j3, *j4;
  /* Run 1 spins first, so that run 2 is queued when it fails. */
  assert_ok(ctl_submit(&c, 0, 2.0f, C_OOB, 50, 0, &j1));
  assert_ok(ctl_submit(&c, 1, 2.0f, C_OOB, 50, 0, &j2));
  ctl_release();
  char where[128];
  snprintf(where, sizeof where, "pld_load: kernel k_ctl (rank 1, device %d",
           ids[1]);
  expect_job(j1, PLD_ERR_BOUNDS, where, "rows [1, 5) cols [0, 8)", "'x'");
  expect_job(j2, PLD_ERR_CANCELLED, "run 2 of the program was cancelled",
             "run 1, submitted before it, failed (PLD_ERR_BOUNDS)");
  expect_poisoned(c.y[1], "the cancelled run 2");
  assert_ok(ctl_submit(&c, 2, -1.25f, C_OK, 30, 0, &j3));
  assert_ok(ctl_submit(&c, 3, -1.25f, C_OK, 30, 0, &j4));
  expect_job(j3, PLD_OK, "");
  expect_job(j4, PLD_OK, "");
  expect_mul(c.x[2], c.y[2], -1.25f, "run 3, after the failure");
  expect_mul(c.x[3], c.y[3], -1.25f, "run 4, after the failure");
  assert_ok(pld_job_free(j1));
  assert_ok(pld_job_free(j2));
  assert_ok(pld_job_free(j3));
  assert_ok(pld_job_free(j4));
  ctl_teardown(&c);
}

static void test_deadlock_cancels_queued(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 3, 2, 3, "a2a3sim", 0);
  pld_job *j1, *j2, *j3, *j4;
  assert_ok(ctl_submit(&c, 0, 2.0f, C_OK, 0, 0, &j1));
  expect_job(j1, PLD_OK, "");
  expect_mul(c.x[0], c.y[0], 2.0f, "run 1");
  assert_ok(ctl_submit(&c, 1, 2.0f, C_DEADLOCK, 50, 0, &j2));
  assert_ok(ctl_submit(&c, 2, 5.0f, C_OK, 0, 0, &j3));
  ctl_release();
  char line[160];
  snprintf(line, sizeof line,
           "rank 0 (device %d): kernel k_ctl on AIV core 0 (block 0 of 1) "
           "waits on window 'sig'",
           ids[0]);
  expect_job(j2, PLD_ERR_DEADLOCK,
             "pld_job: run 2: deadlock: these waits can never be "
             "satisfied",
             line);
  expect_job(j3, PLD_ERR_CANCELLED, "run 3 of the program was cancelled",
             "run 2, submitted before it, failed (PLD_ERR_DEADLOCK)");
  expect_poisoned(c.y[2], "the cancelled run 3");
  assert_ok(ctl_submit(&c, 3, 0.5f, C_OK, 0, 0, &j4));
  expect_job(j4, PLD_OK, "");
  expect_mul(c.x[3], c.y[3], 0.5f, "run 4, after the deadlock");
  assert_ok(pld_job_free(j1));
  assert_ok(pld_job_free(j2));
  assert_ok(pld_job_free(j3));
  assert_ok(pld_job_free(j4));
  ctl_teardown(&c);
}

/* A crash fails every run in flight with its report; the program is dead. */
static void test_crash_fails_all(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 4, 2, 1, "a2a3sim", 3);
  pld_job *j[3];
  assert_ok(ctl_submit(&c, 0, 2.0f, C_CRASH, 50, 0, &j[0]));
  assert_ok(ctl_submit(&c, 1, 2.0f, C_CRASH, 50, 0, &j[1]));
  assert_ok(ctl_submit(&c, 2, 4.0f, C_OK, 0, 0, &j[2]));
  ctl_release();
  char head[128];
  snprintf(head, sizeof head, "rank 3 (device %d) crashed with signal SIGSEGV",
           ids[3]);
  for (int i = 0; i < 3; i++)
    expect_job(j[i], PLD_ERR_CRASH, head, "in kernel k_ctl on AIV core 0");
  expect_poisoned(c.y[1], "run 2, behind the crash");
  expect_poisoned(c.y[2], "run 3, behind the crash");
  pld_job *late = NULL;
  assert_fails_with(ctl_submit(&c, 3, 1.0f, C_OK, 0, 0, &late), PLD_ERR_STATE,
                    "pld_program_submit: ", head);
  assert_null(late);
  float tag = 1.0f;
  int32_t mode = C_OK, ms = 0;
  assert_fails_with(
      pld_program_run(c.p, PLD_ARGS(c.x[3], c.y[3], tag, mode, ms)),
      PLD_ERR_STATE, head);
  for (int i = 0; i < 3; i++)
    assert_ok(pld_job_free(j[i]));
  ctl_teardown(&c);
}

/* ---- a failed run's message names it ------------------------------------ */

/* How run 2 fails, and what its message says: it starts with `start`
 * and holds `sub`, where "{r}" stands for the rank the message names
 * (`rank`: 0 or the last), "{d}" for its device and "{n}" for the rank
 * count. */
enum {
  F_BOUNDS,   /* a kernel's pld_load out of range */
  F_TILES,    /* a kernel's tile over tile memory */
  F_LAUNCH,   /* a device function's launch refused */
  F_DEADLOCK, /* a wait nobody notifies */
  F_TIMEOUT,  /* a kernel over its time limit */
  F_CRASH,    /* a kernel's fault */
  F_SHAPE,    /* refused by its checks: a tensor of another shape */
  F_VALUES,   /* refused by its checks: values that change the program */
  F_KINDS
};
enum { FIRST, LAST };
static const struct {
  const char *name;
  int32_t mode, ms; /* ms: rank 0 and the last spin first */
  int status, rank;
  const char *start, *sub;
} kinds[F_KINDS] = {
    [F_BOUNDS] = {"bounds", C_OOB, 30, PLD_ERR_BOUNDS, LAST,
                  "pld_load: kernel k_ctl (rank {r}, device {d}, ",
                  "rows [1, 5) cols [0, 8) are outside tensor 'x' FP32[4, 8]"},
    [F_TILES] =
        {"tile memory", C_TILES, 0, PLD_ERR_TILE_MEMORY, LAST,
         "pld_tile_new: kernel k_ctl (rank {r}, device {d}, ",
         "tile memory over capacity: FP32[1024, 1024] tile needs 4194304 "
         "bytes"},
    [F_LAUNCH] =
        {"launch", C_LAUNCH, 0, PLD_ERR_ARG, LAST,
         "pld_launch (rank {r}, device {d}, in d_ctl): k_ctl: blocks: expected "
         "an integer in [1, 65535], got 0",
         ""},
    [F_DEADLOCK] = {"deadlock", C_DEADLOCK, 0, PLD_ERR_DEADLOCK, FIRST,
                    "deadlock: these waits can never be satisfied",
                    "rank {r} (device {d}): kernel k_ctl on AIV core 0 "
                    "(block 0 of 1) waits on window 'sig'"},
    /* A limit of 1 s (runs of a few milliseconds stay far within it on a
     * loaded machine); the kernel computes on after the stop: its device
     * is killed and started again. */
    [F_TIMEOUT] =
        {"time limit", C_OK, 30000, PLD_ERR_TIMEOUT, FIRST,
         "kernel time limit: a kernel or device function ran longer than 1000 "
         "ms without finishing or waiting",
         "rank {r} (device {d}): kernel k_ctl on AIV core"},
    [F_CRASH] = {"crash", C_CRASH, 30, PLD_ERR_CRASH, LAST,
                 "rank {r} (device {d}) crashed with signal SIGSEGV",
                 "in kernel k_ctl on AIV core 0"},
    /* Refused by its checks: a tensor of another shape (C_OK: its x is
     * wide), and values that change the program. */
    [F_SHAPE] =
        {"shape", C_OK, 0, PLD_ERR_ARG, LAST, "h_ctl: parameter 'x' (1 of 5): ",
         "expected a host tensor FP32[{n}, 4, 8] as compiled, got FP32[{n}, 4, "
         "16]"},
    [F_VALUES] =
        {"new values", C_EXTRA, 0, PLD_ERR_ARG, LAST,
         "h_ctl: with its new scalar values ('tag' FP32 = 2, was FP32 = 1.5; "
         "'mode' INT32 = 4, was INT32 = ",
         ") the host orchestrator dispatches 2 calls to rank 0, not 1"},
};

/* tmpl with {r}, {d} and {n} replaced. */
static void fill(char *out, size_t cap, const char *tmpl, int r, int d, int n) {
  size_t k = 0;
  for (const char *t = tmpl; *t && k + 12 < cap;) {
    if (t[0] == '{' && t[1] && t[2] == '}') {
      int v = t[1] == 'r' ? r : t[1] == 'd' ? d : n;
      k += (size_t)snprintf(out + k, cap - k, "%d", v);
      t += 3;
    } else {
      out[k++] = *t++;
    }
  }
  out[k] = '\0';
}

/* Asserts that msg starts exactly with `start` and holds `sub`, and that
 * it names no other call than its own failure's. */
static void expect_named(const char *what, const char *msg, const char *start,
                         const char *sub) {
  if (strncmp(msg, start, strlen(start)) != 0) {
    print_error("%s: the message does not start with \"%s\": %s\n", what, start,
                msg);
    fail();
  }
  if (strstr(msg + 1, "pld_job") || strstr(msg, "pld_program_run")) {
    print_error("%s: the message names a call twice: %s\n", what, msg);
    fail();
  }
  if (!strstr(msg, sub)) {
    print_error("%s: the message lacks \"%s\": %s\n", what, sub, msg);
    fail();
  }
}

/* Run 1 succeeds, run 2 fails as kinds[kind] says, run 3 is submitted
 * behind it; on the runs queued on the devices (depth 3) or by the runner
 * thread (depth 65: more than a device's ring of 64 takes; run 1 holds
 * the runner until runs 2 and 3 are submitted, so that run 3 is queued
 * when run 2 fails, however fast it fails).  Run 2's
 * message starts "pld_job: run 2: " then the failure's own words, naming
 * rank, kernel or function, and what went wrong; run 3 is cancelled
 * naming run 2 (a crash: fails with it, naming it); a run after that
 * succeeds (not after a crash: the program is dead). */
static void failure_named(int kind, int n, int first, const char *platform,
                          int depth) {
  pld_config cfg = test_config(ids, n, first, 1);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  if (kind == F_TIMEOUT)
    cfg.kernel_timeout_ms = 1000;
  struct ctl c;
  ctl_setup_cfg(&c, n, &cfg);
  const int runner = depth > 64;
  char what[96];
  snprintf(what, sizeof what, "%s, %d ranks, %s, %s", platform, n,
           runner ? "runner thread" : "queued on the devices",
           kinds[kind].name);
  pld_job *j1, *j2, *j3, *j4;
  assert_ok(ctl_submit(&c, 0, 1.5f, runner ? C_HOLD : C_OK, 0, 0, &j1));
  pld_tensor wide = pld_test_tensor(3, (int64_t[]){n, TR, TC * 2}, 1, 0);
  float tag = 2.0f;
  int32_t mode = kinds[kind].mode, ms = kinds[kind].ms;
  assert_ok(pld_program_submit(
      c.p, PLD_ARGS(kind == F_SHAPE ? wide : c.x[1], c.y[1], tag, mode, ms), 0,
      &j2));
  assert_ok(ctl_submit(&c, 2, 3.0f, C_OK, 0, 0, &j3));
  ctl_release();
  expect_job(j1, PLD_OK, "");
  expect_mul(c.x[0], c.y[0], 1.5f, what);
  assert_ok(pld_job_wait(j2, -1));
  const char *msg = pld_job_message(j2);
  if (pld_job_status(j2) != kinds[kind].status) {
    print_error("%s: expected %s, got %s: %s\n", what,
                pld_status_name(kinds[kind].status),
                pld_status_name(pld_job_status(j2)), msg);
    fail();
  }
  const int r = kinds[kind].rank == LAST ? n - 1 : 0;
  char start[512], sub[256], head[256];
  fill(head, sizeof head, kinds[kind].start, r, ids[r], n);
  snprintf(start, sizeof start, "pld_job: run 2: %s", head);
  fill(sub, sizeof sub, kinds[kind].sub, r, ids[r], n);
  expect_named(what, msg, start, sub);
  expect_poisoned(c.y[1], what);
  assert_ok(pld_job_wait(j3, -1));
  if (kind == F_CRASH) {
    /* The runs behind a crash fail with it, naming the run that did. */
    snprintf(start, sizeof start,
             "pld_job: run 3: the program died before this run ended (run "
             "2, submitted before it, failed with PLD_ERR_CRASH): %s",
             head);
    assert_int_equal(pld_job_status(j3), PLD_ERR_CRASH);
    expect_named(what, pld_job_message(j3), start, sub);
  } else {
    snprintf(start, sizeof start,
             "pld_job: run 3 of the program was cancelled: run 2, submitted "
             "before it, failed (%s)",
             pld_status_name(kinds[kind].status));
    expect_job(j3, PLD_ERR_CANCELLED, start);
    assert_ok(ctl_submit(&c, 3, -0.5f, C_OK, 0, 0, &j4));
    expect_job(j4, PLD_OK, "");
    expect_mul(c.x[3], c.y[3], -0.5f, what);
    assert_ok(pld_job_free(j4));
  }
  expect_poisoned(c.y[2], what);
  assert_ok(pld_job_free(j1));
  assert_ok(pld_job_free(j2));
  assert_ok(pld_job_free(j3));
  pld_tensor_destroy(wide);
  ctl_teardown(&c);
}

/* Every kind, on 2, 3 and 4 ranks in turn and both simulators. */
static void failures_named(int depth) {
  for (int kind = 0; kind < F_KINDS; kind++)
    failure_named(kind, 2 + kind % 3, kind, kind % 2 ? "a5sim" : "a2a3sim",
                  depth);
}

static void test_failure_names_run_queued(void **state) {
  (void)state;
  failures_named(3);
}

static void test_failure_names_run_runner(void **state) {
  (void)state;
  failures_named(65);
}

/* ---- destroy with runs in flight ---------------------------------------- */

/* Releases the spinning runs after *(double *)ms milliseconds. */
static void *release_later(void *ms) {
  double until = now_ms() + *(double *)ms;
  while (now_ms() < until)
    usleep(1000);
  ctl_release();
  return NULL;
}

static void test_destroy_in_flight(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 3, 1, 4, "a5sim", 0);
  pld_job *j1, *j2;
  assert_ok(ctl_submit(&c, 0, 1.75f, C_OK, 150, 0, &j1));
  assert_ok(ctl_submit(&c, 1, -3.0f, C_OK, 150, 0, &j2));
  wait_marker(); /* run 1 is running (until released), run 2 queued */
  assert_int_equal(pld_job_test(j1), 0);
  /* Run 1 ends once destroy has begun (300 ms of an idle machine's time
   * from now, far more than the call takes to get there), and run 2 must
   * not start then. */
  double ms = pld_test_bound(0, 300, pld_test_slowdown());
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, release_later, &ms), 0);
  pld_program_destroy(c.p);
  pthread_join(t, NULL);
  c.p = NULL;
  assert_no_children();
  /* Both handles outlive the program. */
  assert_int_equal(pld_job_test(j1), 1);
  assert_int_equal(pld_job_test(j2), 1);
  expect_job(j1, PLD_OK, "");
  expect_mul(c.x[0], c.y[0], 1.75f, "run 1, finished by destroy");
  expect_job(j2, PLD_ERR_CANCELLED,
             "run 2 of the program was cancelled: the program was destroyed "
             "before it started");
  expect_poisoned(c.y[1], "run 2, cancelled by destroy");
  assert_ok(pld_job_free(j1));
  assert_ok(pld_job_free(j2));
  ctl_teardown(&c);
}

/* ---- the handles, and submit's own refusals ------------------------------ */

static void test_job_handles(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 2, 0, 1, "a2a3sim", 0);
  pld_job *j;
  assert_ok(ctl_submit(&c, 0, 1.5f, C_OK, 100, 0, &j));
  assert_fails_with(pld_job_free(j), PLD_ERR_STATE,
                    "pld_job_free: run 1 is not finished");
  assert_fails_with(pld_job_status(j), PLD_ERR_STATE,
                    "pld_job_status: run 1 is not finished");
  const char *m = pld_job_message(j);
  assert_non_null(strstr(m, "pld_job_message: run 1 is not finished"));
  ctl_release();
  expect_job(j, PLD_OK, "");
  expect_mul(c.x[0], c.y[0], 1.5f, "run 1");
  assert_ok(pld_job_free(j));
  assert_fails_with(pld_job_free(j), PLD_ERR_ARG,
                    "pld_job_free: job: this job was freed already");
  assert_fails_with(pld_job_status(j), PLD_ERR_ARG,
                    "pld_job_status: job: this job was freed already");
  assert_fails_with(pld_job_wait(j, -1), PLD_ERR_ARG,
                    "pld_job_wait: job: this job was freed already");
  assert_int_equal(pld_job_test(j), 0);
  assert_fails_with(pld_job_free(NULL), PLD_ERR_ARG,
                    "pld_job_free: job: expected a job, got NULL");
  assert_fails_with(pld_job_status(NULL), PLD_ERR_ARG, "pld_job_status: job:");
  assert_fails_with(pld_job_wait(NULL, 0), PLD_ERR_ARG, "pld_job_wait: job:");
  assert_int_equal(pld_job_test(NULL), 0);
  m = pld_job_message(NULL);
  assert_non_null(strstr(m, "pld_job_message: job: expected a job"));

  /* Submit's own checks. */
  float tag = 1.0f;
  int32_t mode = C_OK, ms = 0;
  assert_fails_with(
      pld_program_submit(c.p, PLD_ARGS(c.x[1], c.y[1], tag, mode, ms), 0, NULL),
      PLD_ERR_ARG, "pld_program_submit: out: expected where");
  assert_fails_with(
      pld_program_submit(NULL, PLD_ARGS(c.x[1], c.y[1], tag, mode, ms), 0, &j),
      PLD_ERR_ARG,
      "pld_program_submit: p: expected a program, "
      "got NULL");
  assert_fails_with(
      pld_program_submit(c.p, PLD_ARGS(c.x[1], c.y[1], tag, mode, ms), 2, &j),
      PLD_ERR_ARG,
      "pld_program_submit: flags: expected 0 or "
      "PLD_SUBMIT_NOWAIT, got 0x2");
  assert_fails_with(pld_program_submit(c.p, 3, NULL, 0, &j), PLD_ERR_ARG,
                    "pld_program_submit: h_ctl: expected the 5 arguments",
                    "NULL argv");

  /* Arguments the program was not compiled for are the run's failure,
   * also queued behind a run with the same scalar values. */
  pld_tensor bad = pld_test_tensor(3, (int64_t[]){2, TR, TC * 2}, 1, 0);
  pld_job *ja = NULL, *jb = NULL, *jc = NULL, *jd = NULL;
  tag = 2.0f;
  ms = 50;
  assert_ok(ctl_submit(&c, 3, tag, mode, ms, 0, &ja));
  assert_ok(
      pld_program_submit(c.p, PLD_ARGS(bad, c.y[1], tag, mode, ms), 0, &jb));
  assert_non_null(jb);
  expect_job(ja, PLD_OK, "");
  expect_mul(c.x[3], c.y[3], tag, "the run before the refusal");
  expect_job(jb, PLD_ERR_ARG, "h_ctl: parameter 'x' (1 of 5)",
             "expected a host tensor FP32[2, 4, 8] as compiled, got FP32[2, "
             "4, 16]");
  assert_ok(pld_program_submit(c.p, PLD_ARGS(c.x[1], c.y[1]), 0, &jc));
  expect_job(jc, PLD_ERR_ARG, "h_ctl: expected the 5 arguments");
  expect_poisoned(c.y[1], "the refused runs");
  assert_ok(ctl_submit(&c, 2, -0.5f, C_OK, 0, 0, &jd));
  expect_job(jd, PLD_OK, "");
  expect_mul(c.x[2], c.y[2], -0.5f, "the run after the refusals");
  assert_ok(pld_job_free(ja));
  assert_ok(pld_job_free(jb));
  assert_ok(pld_job_free(jc));
  assert_ok(pld_job_free(jd));
  pld_tensor_destroy(bad);
  ctl_teardown(&c);
}

/* ---- pld_program_run after submits -------------------------------------- */

static void test_run_after_submits(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 4, 3, 1, "a5sim", 4);
  ctl_release(); /* the runs spin their 40 ms */
  pld_job *j[3];
  /* The submitted runs share their values (the inputs of the next may be
   * copied while one runs); the run brings new ones. */
  const float tags[4] = {1.25f, 1.25f, 1.25f, 0.125f};
  for (int i = 0; i < 3; i++)
    assert_ok(ctl_submit(&c, i, tags[i], C_OK, 40, 0, &j[i]));
  float tag = tags[3];
  int32_t mode = C_OK, ms = 0;
  assert_ok(pld_program_run(c.p, PLD_ARGS(c.x[3], c.y[3], tag, mode, ms)));
  for (int i = 0; i < 3; i++)
    assert_int_equal(pld_job_test(j[i]), 1);
  for (int i = 0; i < 3; i++) {
    expect_job(j[i], PLD_OK, "");
    expect_mul(c.x[i], c.y[i], tags[i], "a submitted run");
    assert_ok(pld_job_free(j[i]));
  }
  expect_mul(c.x[3], c.y[3], tags[3], "pld_program_run after the submits");
  ctl_teardown(&c);

  /* With the windows kept, the run sees every submitted run before it. */
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.keep_windows = 1;
  cfg.max_in_flight = 8;
  pld_tensor seen[6];
  for (int k = 0; k < 6; k++)
    seen[k] = int_tensor(2, -1);
  int32_t add = 1;
  pld_program *p = NULL;
  assert_ok(pld_compile(h_acc, &cfg, PLD_ARGS(seen[0], add), &p));
  assert_ok(pld_program_prepare(p));
  pld_job *jobs[5];
  int64_t sum = 0;
  for (int k = 0; k < 5; k++) {
    add = 3 * k + 1;
    sum += add;
    assert_ok(pld_program_submit(p, PLD_ARGS(seen[k], add), 0, &jobs[k]));
  }
  add = 1000;
  assert_ok(pld_program_run(p, PLD_ARGS(seen[5], add)));
  expect_seen(seen[5], 2, sum + 1000, 6);
  for (int k = 0; k < 5; k++) {
    assert_int_equal(pld_job_test(jobs[k]), 1);
    expect_job(jobs[k], PLD_OK, "");
    assert_ok(pld_job_free(jobs[k]));
  }
  pld_program_destroy(p);
  for (int k = 0; k < 6; k++)
    pld_tensor_destroy(seen[k]);
}

/* ---- new scalar values through submits ----------------------------------- */

static void test_new_values_through_submit(void **state) {
  (void)state;
  struct ctl c;
  ctl_setup(&c, 3, 5, -2, "a2a3sim", 4);
  pld_job *j[7];
  assert_ok(ctl_submit(&c, 0, 2.0f, C_OK, 50, 0, &j[0]));
  assert_ok(ctl_submit(&c, 1, 3.0f, C_EXTRA, 0, 0, &j[1]));
  assert_ok(ctl_submit(&c, 2, 4.0f, C_OK, 0, 0, &j[2]));
  ctl_release();
  expect_job(j[0], PLD_OK, "");
  expect_mul(c.x[0], c.y[0], 2.0f, "run 1");
  expect_job(j[1], PLD_ERR_ARG, "h_ctl: with its new scalar values (",
             "'mode' INT32 = 4, was INT32 = 0",
             "dispatches 2 calls to rank 0, not 1");
  expect_poisoned(c.y[1], "run 2, refused");
  expect_job(j[2], PLD_ERR_CANCELLED, "run 3 of the program was cancelled",
             "run 2, submitted before it, failed (PLD_ERR_ARG)");
  expect_poisoned(c.y[2], "run 3, cancelled");
  /* Acceptable values, new, repeated and the compile's, run. */
  assert_ok(ctl_submit(&c, 3, -0.5f, C_OK, 0, 0, &j[3]));
  assert_ok(ctl_submit(&c, 4, 7.25f, C_OK, 20, 0, &j[4]));
  assert_ok(ctl_submit(&c, 5, 7.25f, C_OK, 20, 0, &j[5]));
  assert_ok(ctl_submit(&c, 6, 1.0f, C_OK, 0, 0, &j[6]));
  for (int i = 3; i < 7; i++)
    expect_job(j[i], PLD_OK, "");
  expect_mul(c.x[3], c.y[3], -0.5f, "run 4");
  expect_mul(c.x[4], c.y[4], 7.25f, "run 5");
  expect_mul(c.x[5], c.y[5], 7.25f, "run 6, run 5's values");
  expect_mul(c.x[6], c.y[6], 1.0f, "run 7, the compile's values");
  for (int i = 0; i < 7; i++)
    assert_ok(pld_job_free(j[i]));
  ctl_teardown(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_order_default_depth),
    cmocka_unit_test(test_order_depths),
    cmocka_unit_test(test_first_run_submitted),
    cmocka_unit_test(test_order_chained),
    cmocka_unit_test(test_order_in_place),
    cmocka_unit_test(test_order_kept_window),
    cmocka_unit_test(test_overlap),
    cmocka_unit_test(test_depth_limit),
    cmocka_unit_test(test_failure_cancels_queued),
    cmocka_unit_test(test_deadlock_cancels_queued),
    cmocka_unit_test(test_crash_fails_all),
    cmocka_unit_test(test_failure_names_run_queued),
    cmocka_unit_test(test_failure_names_run_runner),
    cmocka_unit_test(test_destroy_in_flight),
    cmocka_unit_test(test_job_handles),
    cmocka_unit_test(test_run_after_submits),
    cmocka_unit_test(test_new_values_through_submit),
};

PLD_TEST_MAIN("submit", tests)
