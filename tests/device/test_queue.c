/* Submitted runs queued on the devices (host/submit.c, struct pld__cmd):
 * a run posted behind the runs in flight starts at its gate on each device
 * without the host in between, so these tests hold the gate's promises
 * over 2, 3 and 4 ranks and both simulators:
 *   - a run with windows starts on no rank before every rank finished the
 *     run before it, and finds the windows zeroed (each run sees exactly
 *     its own notify), up to the 64 runs in flight a device's ring holds
 *     and past it;
 *   - a run with a device-resident tensor waits for every rank too: after
 *     a failed run, no rank applied a run behind it to the tensor;
 *   - a run that reaches nothing beyond its data slot may run ahead on a
 *     device, but a failure still cancels every run behind it (their
 *     outputs never reach the host);
 *   - destroy lets the runs that started end and cancels the others;
 *   - several threads wait at once (one of them drives the runs);
 *   - a program sharing the devices comes after the runs queued so far,
 *     run or submitted;
 *   - the watch runs while a thread waits: a kernel over its time limit
 *     fails its run, and cancels the runs behind it;
 *   - a stop reaches a device still polling at its gate, or for a host
 *     task, at once: with a 20 s abort poll, a failed run and the runs
 *     behind it end within 4 s;
 *   - a chain of queued runs ends before the devices' counts of it (its
 *     length times the ranks) could leave 31 bits. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../host/programs.h"
#include "core/tunables.h" /* the long poll (test_stop_reaches_*) */
#include "host/program.h"  /* a chain's length (test_chain_full) */
#include "load.h"
#include "host/submit.h"
#include "pld_test.h"

static int ids[16];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void spin_for(int32_t ms) {
  double until = now_ms() + ms;
  volatile uint64_t count = 0;
  while (now_ms() < until)
    count++;
}

/* Waits for j and asserts its status and that its message holds `sub`. */
static void expect_job(pld_job *j, int want, const char *sub,
                       const char *what) {
  assert_ok(pld_job_wait(j, -1));
  int got = pld_job_status(j);
  const char *msg = pld_job_message(j);
  if (got != want || !strstr(msg, sub)) {
    print_error("%s: expected %s with \"%s\", got %s: %s\n", what,
                pld_status_name(want), sub, pld_status_name(got), msg);
    fail();
  }
}

static const float POISON = -12345.0f;

static void poison(pld_tensor y) {
  float *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(y); i++)
    ys[i] = POISON;
}

/* y holds POISON (poisoned: its run must not have reached the host) or
 * x * s exactly. */
static void expect_y(pld_tensor x, pld_tensor y, float s, int poisoned,
                     const char *what) {
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(y); i++) {
    volatile float want = poisoned ? POISON : xs[i] * s;
    if (ys[i] != want) {
      print_error("%s: y[%lld] = %.9g, expected %.9g\n", what, (long long)i,
                  (double)ys[i], (double)want);
      fail();
    }
  }
}

/* ---- windows: every rank waits, the windows are zeroed ------------------ */

/* Each rank adds `add` to its successor's cell, waits until its own cell
 * holds at least `add` and reports what it holds: exactly `add` when the
 * windows start zeroed and the predecessor's next run has not begun. */
PLD_KERNEL(k_ring, k, PLD_WINDOW(w, INT32, 1), PLD_OUT(seen, INT32, 1),
           PLD_SCALAR(add, INT32)) {
  pld_comm c = pld_window_comm(w);
  int32_t me = pld_rank(k, c), n = pld_nranks(k, c);
  pld_notify(k, w, (me + 1) % n, PLD_AT(0), add, PLD_NOTIFY_ADD);
  pld_wait(k, w, PLD_AT(0), add, PLD_WAIT_GE);
  pld_write(k, seen, PLD_AT(0), pld_read(k, pld_local(w), PLD_AT(0)));
}
PLD_DEVICE(d_ring, a, PLD_WINDOW(w, INT32, 1), PLD_OUT(seen, INT32, 1),
           PLD_SCALAR(add, INT32)) {
  pld_launch(a, k_ring, 1, w, seen, add);
}
PLD_HOST(h_ring, h, PLD_OUT(seen, INT32, NR, 1), PLD_SCALAR(add, INT32)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_ring, r, pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, seen, r), add);
}

/* More than the 64 runs a device's ring holds. */
enum { RUNS = 70 };

static void ring_runs(int n, int first, int step, const char *platform,
                      int depth) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  pld_tensor seen[RUNS];
  for (int k = 0; k < RUNS; k++) {
    assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){n, 1}, &seen[k]));
    int32_t *d = pld_tensor_data(seen[k]);
    for (int r = 0; r < n; r++)
      d[r] = -1;
  }
  pld_program *p = NULL;
  int32_t add = 1;
  assert_ok(pld_compile(h_ring, &cfg, PLD_ARGS(seen[0], add), &p));
  assert_ok(pld_program_prepare(p));
  pld_job *jobs[RUNS];
  /* The same value twice in a row, then another: equal and new scalars. */
  for (int k = 0; k < RUNS; k++) {
    add = 1 + k / 2 * 3;
    assert_ok(pld_program_submit(p, PLD_ARGS(seen[k], add), 0, &jobs[k]));
  }
  for (int k = 0; k < RUNS; k++) {
    char what[96];
    snprintf(what, sizeof what, "%s, %d ranks, depth %d, run %d", platform, n,
             depth, k + 1);
    expect_job(jobs[k], PLD_OK, "", what);
    const int32_t *d = pld_tensor_data(seen[k]);
    for (int r = 0; r < n; r++)
      if (d[r] != 1 + k / 2 * 3) {
        print_error("%s: rank %d saw %d in its cell, expected its own "
                    "notify's %d alone\n",
                    what, r, d[r], 1 + k / 2 * 3);
        fail();
      }
    assert_ok(pld_job_free(jobs[k]));
  }
  pld_program_destroy(p);
  for (int k = 0; k < RUNS; k++)
    pld_tensor_destroy(seen[k]);
}

static void test_windows_zeroed_between_queued_runs(void **state) {
  (void)state;
  ring_runs(2, 0, 1, "a2a3sim", 8);
  ring_runs(3, 4, 2, "a5sim", 4);
  ring_runs(4, 1, 3, "a2a3sim", 16);
  /* The most the devices' rings take, and one more (a runner thread). */
  ring_runs(2, 5, 1, "a5sim", 64);
  ring_runs(3, 0, 1, "a2a3sim", 65);
}

/* ---- y = x * s; the rank told to fail spins first, then fails ---------- */

/* Set (before the device processes are forked, which inherit it) while
 * a test holds its spinning runs: they go on once the file exists (at
 * most 10 s). */
static char release[64];

/* Spins |fail_ms| milliseconds (and, when fail_ms < 0, until `release`
 * exists where one is set), then loads x's tile: out of bounds (one row
 * down) when fail_ms > 0. */
static pld_tile *spin_then_load(pld_core k, pld_tensor x, int32_t fail_ms) {
  spin_for(fail_ms > 0 ? fail_ms : -fail_ms);
  double until = now_ms() + 10000;
  while (fail_ms < 0 && release[0] && access(release, F_OK) != 0 &&
         now_ms() < until)
    spin_for(1);
  return pld_load(k, x, fail_ms > 0 ? 1 : 0, 0, TR, TC);
}

/* Creates `release` after *(double *)ms milliseconds. */
static void *release_later(void *ms) {
  double until = now_ms() + *(double *)ms;
  while (now_ms() < until)
    usleep(1000);
  int fd = open(release, O_CREAT | O_WRONLY, 0600);
  if (fd >= 0)
    close(fd);
  return NULL;
}

PLD_KERNEL(k_mulf, k, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  pld_tile *t = spin_then_load(k, x, fail_ms);
  pld_muls(k, t, t, s);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_mulf, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  pld_launch(a, k_mulf, 1, x, y, s, fail_ms);
}
/* fail_ms > 0: the last rank spins that long and loads out of bounds;
 * < 0: every rank spins -fail_ms milliseconds and succeeds. */
PLD_HOST(h_mulf, h, PLD_IN(x, FP32, NR, TR, TC), PLD_OUT(y, FP32, NR, TR, TC),
         PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_mulf, r, pld_slice(h, x, r), pld_slice(h, y, r), s,
                 r == n - 1 || fail_ms < 0 ? fail_ms : 0);
}

enum { NJ = 8 };

/* Runs 1 and 2 succeed, run 3 fails on the last rank after 30 ms (the
 * other ranks may run ahead meanwhile), runs 4 to 7 behind it are
 * cancelled, run 8 after that succeeds.  Returns the milliseconds from
 * the first submit until run 7 was cancelled. */
static double failure_cancels(int n, int first, int step,
                              const char *platform) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  /* Room for all 7: no submit drives the runs (a driver could end runs 1
   * to 3 and cancel those behind before run 7 is posted, which would then
   * begin a chain of its own and succeed). */
  cfg.max_in_flight = NJ;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x[NJ], y[NJ];
  for (int k = 0; k < NJ; k++) {
    x[k] = pld_test_tensor(3, shape, 0.5f + 0.125f * (float)k, (float)k);
    y[k] = pld_test_tensor(3, shape, 0, 0);
    poison(y[k]);
  }
  pld_program *p = NULL;
  float s = 1.0f;
  int32_t fail_ms = 0;
  assert_ok(pld_compile(h_mulf, &cfg, PLD_ARGS(x[0], y[0], s, fail_ms), &p));
  assert_ok(pld_program_prepare(p));
  pld_job *j[NJ];
  double t0 = now_ms();
  for (int k = 0; k < 7; k++) {
    s = 1.5f + (float)k;
    fail_ms = k == 2 ? 30 : 0;
    assert_ok(
        pld_program_submit(p, PLD_ARGS(x[k], y[k], s, fail_ms), 0, &j[k]));
  }
  char what[96];
  snprintf(what, sizeof what, "%s, %d ranks", platform, n);
  expect_job(j[0], PLD_OK, "", what);
  expect_job(j[1], PLD_OK, "", what);
  char where[96];
  snprintf(where, sizeof where, "pld_load: kernel k_mulf (rank %d, device %d",
           n - 1, ids[n - 1]);
  expect_job(j[2], PLD_ERR_BOUNDS, where, what);
  for (int k = 3; k < 7; k++) {
    char cancelled[128];
    snprintf(cancelled, sizeof cancelled,
             "run %d of the program was cancelled: run 3, submitted before "
             "it, failed (PLD_ERR_BOUNDS)",
             k + 1);
    expect_job(j[k], PLD_ERR_CANCELLED, cancelled, what);
  }
  double took = now_ms() - t0;
  s = -0.75f;
  fail_ms = 0;
  assert_ok(pld_program_submit(p, PLD_ARGS(x[7], y[7], s, fail_ms), 0, &j[7]));
  expect_job(j[7], PLD_OK, "", what);
  for (int k = 0; k < NJ; k++) {
    float sk = k == 7 ? -0.75f : 1.5f + (float)k;
    expect_y(x[k], y[k], sk, k >= 2 && k < 7, what);
    assert_ok(pld_job_free(j[k]));
  }
  pld_program_destroy(p);
  for (int k = 0; k < NJ; k++) {
    pld_tensor_destroy(x[k]);
    pld_tensor_destroy(y[k]);
  }
  return took;
}

static void test_failure_cancels_runs_ahead(void **state) {
  (void)state;
  failure_cancels(2, 0, 1, "a2a3sim");
  failure_cancels(3, 6, -3, "a5sim");
  failure_cancels(4, 2, 1, "a2a3sim");
}

/* ---- a device-resident state: no rank applies a run behind a failure --- */

PLD_KERNEL(k_acc, k, PLD_IN(x, FP32, TR, TC), PLD_INOUT(h, FP32, TR, TC),
           PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  pld_tile *a = spin_then_load(k, x, fail_ms);
  pld_tile *b = pld_load(k, h, 0, 0, TR, TC);
  pld_muls(k, a, a, s);
  pld_add(k, b, b, a);
  pld_store(k, b, h, 0, 0);
}
PLD_DEVICE(d_acc, a, PLD_IN(x, FP32, TR, TC), PLD_INOUT(h, FP32, TR, TC),
           PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  pld_launch(a, k_acc, 1, x, h, s, fail_ms);
}
PLD_HOST(h_acc, hh, PLD_IN(x, FP32, NR, TR, TC), PLD_INOUT(h, FP32, NR, TR, TC),
         PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  int n = pld_world_size(hh);
  for (int r = 0; r < n; r++)
    pld_dispatch(hh, d_acc, r, pld_slice(hh, x, r), pld_slice(hh, h, r), s,
                 r == n - 1 ? fail_ms : 0);
}

/* want[rank part] += x * s, in FP32, on the ranks below `upto`. */
static void acc_ref(float *want, pld_tensor x, float s, int n, int upto) {
  const float *xs = pld_tensor_data(x);
  int64_t per = pld_tensor_numel(x) / n;
  for (int64_t i = 0; i < per * upto; i++) {
    volatile float m = xs[i] * s;
    want[i] = want[i] + m;
  }
}

static void resident_failure(int n, int first, int step, const char *platform) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = 8;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 0.25f, -1.0f);
  pld_tensor hinit = pld_test_tensor(3, shape, 0.5f, 2.0f);
  pld_program *p = NULL;
  float s = 1.0f;
  int32_t fail_ms = 0;
  assert_ok(pld_compile(h_acc, &cfg, PLD_ARGS(x, hinit, s, fail_ms), &p));
  pld_tensor h;
  assert_ok(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_FP32, 2,
                                     (const int64_t[]){TR, TC}, &h));
  assert_ok(pld_device_tensor_write(h, hinit));
  int64_t numel = pld_tensor_numel(x);
  float *want = malloc((size_t)numel * sizeof *want);
  float *want4 = malloc((size_t)numel * sizeof *want4);
  assert_non_null(want);
  assert_non_null(want4);
  memcpy(want, pld_tensor_data(hinit), (size_t)numel * sizeof *want);
  /* Runs 1 to 3 succeed; run 4 fails on the last rank after 30 ms (each
   * other rank applies it, or was stopped before it began: want4 or
   * want); runs 5 to 8 are cancelled everywhere. */
  pld_job *j[8];
  for (int k = 0; k < 8; k++) {
    s = 0.5f + (float)k;
    fail_ms = k == 3 ? 30 : 0;
    assert_ok(pld_program_submit(p, PLD_ARGS(x, h, s, fail_ms), 0, &j[k]));
    if (k == 3)
      memcpy(want4, want, (size_t)numel * sizeof *want);
    if (k < 3)
      acc_ref(want, x, s, n, n);
    if (k == 3)
      acc_ref(want4, x, s, n, n - 1);
  }
  char what[96];
  snprintf(what, sizeof what, "%s, %d ranks, resident state", platform, n);
  for (int k = 0; k < 8; k++) {
    expect_job(j[k],
               k < 3    ? PLD_OK
               : k == 3 ? PLD_ERR_BOUNDS
                        : PLD_ERR_CANCELLED,
               k < 3    ? ""
               : k == 3 ? "pld_load"
                        : "run 4, submitted before it",
               what);
    assert_ok(pld_job_free(j[k]));
  }
  pld_tensor back = pld_test_tensor(3, shape, 0, 0);
  assert_ok(pld_device_tensor_read(h, back));
  const float *got = pld_tensor_data(back);
  const int64_t per = numel / n;
  for (int r = 0; r < n; r++) {
    const float *g = got + r * per;
    if (!memcmp(g, want4 + r * per, (size_t)per * sizeof *g))
      continue; /* run 4 applied (never on the failing rank: want4 = want) */
    for (int64_t i = 0; i < per; i++)
      if (memcmp(&g[i], &want[r * per + i], sizeof g[i]) != 0) {
        print_error("%s: rank %d, element %lld = %.9g, expected %.9g (or "
                    "%.9g with run 4): a run behind the failed one changed "
                    "the state\n",
                    what, r, (long long)i, (double)g[i],
                    (double)want[r * per + i], (double)want4[r * per + i]);
        fail();
      }
  }
  pld_tensor_destroy(back);
  free(want);
  free(want4);
  pld_tensor_destroy(h);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(hinit);
}

static void test_resident_waits_for_every_rank(void **state) {
  (void)state;
  resident_failure(2, 3, 1, "a5sim");
  resident_failure(3, 0, 2, "a2a3sim");
  resident_failure(4, 8, -2, "a5sim");
}

/* ---- destroy: the runs that started end, the others are cancelled ------ */

static void destroy_queued(int n, const char *platform) {
  pld_config cfg = test_config(ids, n, 0, 1);
  cfg.platform = platform;
  cfg.max_in_flight = 6;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x[6], y[6];
  for (int k = 0; k < 6; k++) {
    x[k] = pld_test_tensor(3, shape, 1.0f + (float)k, 0.5f);
    y[k] = pld_test_tensor(3, shape, 0, 0);
    poison(y[k]);
  }
  pld_program *p = NULL;
  float s = 2.0f;
  int32_t spin = 0;
  assert_ok(pld_compile(h_mulf, &cfg, PLD_ARGS(x[0], y[0], s, spin), &p));
  snprintf(release, sizeof release, "/tmp/pld-queue-%d.go", (int)getpid());
  unlink(release);
  assert_ok(pld_program_prepare(p));
  /* Run 1 spins on every rank until released, 300 ms of an idle
   * machine's time into the destroy (far more than the call takes to
   * close the queue): the runs behind it have not started when the
   * program is destroyed, however slowly this thread got there. */
  pld_job *j[6];
  for (int k = 0; k < 6; k++) {
    s = 2.0f + (float)k;
    spin = k == 0 ? -1 : 0;
    assert_ok(pld_program_submit(p, PLD_ARGS(x[k], y[k], s, spin), 0, &j[k]));
  }
  double ms = pld_test_bound(0, 300, pld_test_slowdown());
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, release_later, &ms), 0);
  pld_program_destroy(p);
  pthread_join(t, NULL);
  unlink(release);
  release[0] = '\0';
  assert_no_children();
  /* Every job is done: the run that started, then the cancelled ones. */
  int cancelled = 0;
  for (int k = 0; k < 6; k++) {
    assert_int_equal(pld_job_test(j[k]), 1);
    int st = pld_job_status(j[k]);
    char what[64];
    snprintf(what, sizeof what, "%s, %d ranks, run %d", platform, n, k + 1);
    if (st == PLD_ERR_CANCELLED) {
      expect_job(j[k], PLD_ERR_CANCELLED,
                 "was cancelled: the program was destroyed before it "
                 "started",
                 what);
      cancelled = 1;
    } else if (cancelled || st != PLD_OK) {
      print_error("%s: %s after a cancelled run: %s\n", what,
                  pld_status_name(st), pld_job_message(j[k]));
      fail();
    }
    expect_y(x[k], y[k], 2.0f + (float)k, st == PLD_ERR_CANCELLED, what);
    assert_int_equal(st, k == 0 ? PLD_OK : PLD_ERR_CANCELLED);
    assert_ok(pld_job_free(j[k]));
  }
  for (int k = 0; k < 6; k++) {
    pld_tensor_destroy(x[k]);
    pld_tensor_destroy(y[k]);
  }
}

/* A run refused by its checks, and one behind it, still queued when the
 * program is destroyed: the refused one reports its refusal, the other
 * is cancelled by it. */
static void destroy_refused(int n, const char *platform) {
  pld_config cfg = test_config(ids, n, 1, 1);
  cfg.platform = platform;
  cfg.max_in_flight = 4;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1.0f, 2.0f);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p = NULL;
  float s = 2.0f;
  int32_t spin = 0;
  assert_ok(pld_compile(h_mulf, &cfg, PLD_ARGS(x, y, s, spin), &p));
  pld_job *j[3];
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y, s, spin), 0, &j[0]));
  expect_job(j[0], PLD_OK, "", platform);
  /* Two arguments of four: refused when it is queued. */
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y), 0, &j[1]));
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y, s, spin), 0, &j[2]));
  pld_program_destroy(p);
  assert_no_children();
  expect_job(j[1], PLD_ERR_ARG,
             "pld_job: run 2: h_mulf: expected the 4 arguments it was "
             "compiled for, got 2",
             platform);
  expect_job(j[2], PLD_ERR_CANCELLED,
             "run 3 of the program was cancelled: run 2, submitted before "
             "it, failed (PLD_ERR_ARG)",
             platform);
  for (int k = 0; k < 3; k++)
    assert_ok(pld_job_free(j[k]));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_destroy_ends_started_cancels_rest(void **state) {
  (void)state;
  destroy_queued(2, "a2a3sim");
  destroy_queued(3, "a5sim");
  destroy_queued(4, "a2a3sim");
  destroy_refused(2, "a5sim");
  destroy_refused(3, "a2a3sim");
}

/* ---- several threads wait at once --------------------------------------- */

struct waiter {
  pld_job *job;
  int status;
};

static void *wait_thread(void *arg) {
  struct waiter *w = arg;
  w->status = pld_job_wait(w->job, -1);
  if (w->status == PLD_OK)
    w->status = pld_job_status(w->job);
  return NULL;
}

static void test_threads_wait_together(void **state) {
  (void)state;
  enum { N = 3, T = 4, ROUNDS = 20 };
  pld_config cfg = test_config(ids, N, 1, 1);
  cfg.max_in_flight = T;
  const int64_t shape[] = {N, TR, TC};
  pld_tensor x[T], y[T];
  for (int k = 0; k < T; k++) {
    x[k] = pld_test_tensor(3, shape, 0.75f * (float)(k + 1), -2.0f);
    y[k] = pld_test_tensor(3, shape, 0, 0);
  }
  pld_program *p = NULL;
  float s = 1.0f;
  int32_t spin = 0;
  assert_ok(pld_compile(h_mulf, &cfg, PLD_ARGS(x[0], y[0], s, spin), &p));
  for (int round = 0; round < ROUNDS; round++) {
    struct waiter w[T];
    pthread_t th[T];
    for (int k = 0; k < T; k++) {
      poison(y[k]);
      s = (float)(round + 1) + 0.5f * (float)k;
      assert_ok(
          pld_program_submit(p, PLD_ARGS(x[k], y[k], s, spin), 0, &w[k].job));
    }
    /* The last job is waited for here, the others each by a thread. */
    for (int k = 0; k < T - 1; k++)
      assert_int_equal(pthread_create(&th[k], NULL, wait_thread, &w[k]), 0);
    wait_thread(&w[T - 1]);
    for (int k = 0; k < T - 1; k++)
      assert_int_equal(pthread_join(th[k], NULL), 0);
    for (int k = 0; k < T; k++) {
      assert_int_equal(w[k].status, PLD_OK);
      expect_y(x[k], y[k], (float)(round + 1) + 0.5f * (float)k, 0,
               "a run waited for by a thread");
      assert_ok(pld_job_free(w[k].job));
    }
  }
  pld_program_destroy(p);
  for (int k = 0; k < T; k++) {
    pld_tensor_destroy(x[k]);
    pld_tensor_destroy(y[k]);
  }
}

/* ---- another program comes to share the devices ------------------------- */

static void share_after_queued(int n, const char *platform) {
  pld_config cfg = test_config(ids, n, 2, 1);
  cfg.platform = platform;
  cfg.max_in_flight = 4;
  const int64_t shape[] = {n, TR, TC};
  enum { NA = 3 };
  pld_tensor x = pld_test_tensor(3, shape, 0.5f, -1.5f);
  pld_tensor ya[NA + 1], yb[2];
  for (int k = 0; k < NA + 1; k++)
    ya[k] = pld_test_tensor(3, shape, 0, 0);
  for (int k = 0; k < 2; k++)
    yb[k] = pld_test_tensor(3, shape, 0, 0);
  pld_program *a = NULL, *b = NULL;
  float s = 1.0f;
  int32_t spin = -30; /* every rank spins 30 ms */
  assert_ok(pld_compile(h_mulf, &cfg, PLD_ARGS(x, ya[0], s, spin), &a));
  assert_ok(pld_program_prepare(a));
  pld_job *ja[NA + 1], *jb;
  for (int k = 0; k < NA; k++) {
    s = 1.0f + (float)k;
    assert_ok(pld_program_submit(a, PLD_ARGS(x, ya[k], s, spin), 0, &ja[k]));
  }
  /* B runs on A's devices: its run comes after A's three. */
  pld_config cb = cfg;
  cb.share = a;
  spin = 0;
  s = -2.0f;
  assert_ok(pld_compile(h_mulf, &cb, PLD_ARGS(x, yb[0], s, spin), &b));
  assert_ok(pld_program_run(b, PLD_ARGS(x, yb[0], s, spin)));
  for (int k = 0; k < NA; k++)
    if (!pld_job_test(ja[k])) {
      print_error("%s, %d ranks: the sharing program's run returned before "
                  "run %d of the first program ended\n",
                  platform, n, k + 1);
      fail();
    }
  /* Submitted, both, from now on through the group's runner thread. */
  s = 4.0f;
  spin = -10;
  assert_ok(pld_program_submit(a, PLD_ARGS(x, ya[NA], s, spin), 0, &ja[NA]));
  s = 0.25f;
  spin = 0;
  assert_ok(pld_program_submit(b, PLD_ARGS(x, yb[1], s, spin), 0, &jb));
  expect_job(jb, PLD_OK, "", "B's submitted run");
  assert_int_equal(pld_job_test(ja[NA]), 1);
  for (int k = 0; k < NA + 1; k++) {
    expect_job(ja[k], PLD_OK, "", "A's run");
    expect_y(x, ya[k], 1.0f + (float)k, 0, "A's run");
    assert_ok(pld_job_free(ja[k]));
  }
  expect_y(x, yb[0], -2.0f, 0, "B's run");
  expect_y(x, yb[1], 0.25f, 0, "B's submitted run");
  assert_ok(pld_job_free(jb));
  pld_program_destroy(b);
  pld_program_destroy(a);
  assert_no_children();
  pld_tensor_destroy(x);
  for (int k = 0; k < NA + 1; k++)
    pld_tensor_destroy(ya[k]);
  for (int k = 0; k < 2; k++)
    pld_tensor_destroy(yb[k]);
}

static void test_sharing_program_comes_after(void **state) {
  (void)state;
  share_after_queued(2, "a2a3sim");
  share_after_queued(3, "a5sim");
}

/* ---- a time limit, watched by the waiting thread ------------------------ */

static void time_limit(int n, const char *platform) {
  pld_config cfg = test_config(ids, n, 1, 2);
  cfg.platform = platform;
  cfg.max_in_flight = 3;
  cfg.kernel_timeout_ms = 40;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1.25f, 0.5f);
  pld_tensor y[4];
  for (int k = 0; k < 4; k++) {
    y[k] = pld_test_tensor(3, shape, 0, 0);
    poison(y[k]);
  }
  pld_program *p = NULL;
  float s = 3.0f;
  int32_t spin = 0;
  assert_ok(pld_compile(h_mulf, &cfg, PLD_ARGS(x, y[0], s, spin), &p));
  pld_job *j[4];
  /* Before the runs, whose threads spin. */
  double slowdown = pld_test_slowdown();
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y[0], s, spin), 0, &j[0]));
  spin = -2000; /* every rank spins 2 s: far over the limit */
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y[1], s, spin), 0, &j[1]));
  spin = 0;
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y[2], s, spin), 0, &j[2]));
  double t0 = now_ms();
  char what[64];
  snprintf(what, sizeof what, "%s, %d ranks", platform, n);
  expect_job(j[0], PLD_OK, "", what);
  expect_job(j[1], PLD_ERR_TIMEOUT,
             "pld_job: run 2: kernel time limit: a kernel or device function "
             "ran longer than 40 ms",
             what);
  expect_job(j[2], PLD_ERR_CANCELLED,
             "run 3 of the program was cancelled: run 2, submitted before "
             "it, failed (PLD_ERR_TIMEOUT)",
             what);
  /* Reported at the limit, not when the spin ends (the stop's grace
   * ends it: the devices are killed and started again): the limit and
   * the grace, and 960 ms of an idle machine's work around them. */
  double took = now_ms() - t0;
  double bound =
      pld_test_bound(40 + 500, 960, pld_test_slowdown_max(&slowdown));
  if (took > bound) {
    print_error("%s: the time limit was reported after %.0f ms, more than "
                "%.0f ms\n",
                what, took, bound);
    fail();
  }
  s = -1.5f;
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y[3], s, spin), 0, &j[3]));
  expect_job(j[3], PLD_OK, "", what);
  expect_y(x, y[0], 3.0f, 0, what);
  expect_y(x, y[1], 3.0f, 1, what);
  expect_y(x, y[2], 3.0f, 1, what);
  expect_y(x, y[3], -1.5f, 0, what);
  for (int k = 0; k < 4; k++)
    assert_ok(pld_job_free(j[k]));
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(x);
  for (int k = 0; k < 4; k++)
    pld_tensor_destroy(y[k]);
}

static void test_time_limit_while_waiting(void **state) {
  (void)state;
  time_limit(2, "a5sim");
  time_limit(3, "a2a3sim");
}

/* ---- a stop reaches the devices still polling --------------------------- */

/* A stopped run wakes the devices waiting at a queued run's gate, or for a
 * host task, by changing the word they wait on: a device still polling
 * that word, not yet asleep, sees the stop at once.  These cases leave no
 * other way to see it soon: a device asleep looks at the abort word only
 * every PLD_ABORT_POLL_MS, 20 s here, and the devices poll 20 ms before
 * they sleep (PLD_SPIN_US), so that the stop comes while the device it
 * must reach still polls.  A wake that leaves the word as it was is lost
 * on that device, and the run ends only when its 20 s sleep does.  The
 * runs themselves take milliseconds: the bound, 4 s, leaves a machine
 * loaded many times over a wide margin, and is a fifth of the poll. */
enum { LONG_POLL_MS = 20000, POLL_US = 20000, STOPPED_WITHIN_MS = 4000 };

static void set_env(const char *name, long long value) {
  char text[32];
  snprintf(text, sizeof text, "%lld", value);
  assert_int_equal(setenv(name, text, 1), 0);
}

/* The long poll, for this process and its devices; the stop's grace past
 * the poll, so that a lost wake is not cut short by a restart.  The
 * tunables are read once per process: a case run after another (all of
 * them in one process) skips, as CTest runs each alone. */
static void long_poll(void) {
  set_env("PLD_ABORT_POLL_MS", LONG_POLL_MS);
  set_env("PLD_SPIN_US", POLL_US);
  set_env("PLD_STOP_GRACE_MS", 2 * LONG_POLL_MS);
  const struct pld__tunables *t = pld__tunables();
  if (t->PLD_ABORT_POLL_MS != LONG_POLL_MS || t->PLD_SPIN_US != POLL_US ||
      t->PLD_STOP_GRACE_MS != 2 * LONG_POLL_MS) {
    print_message("the tunables were read before this case: run it alone "
                  "(ctest does)\n");
    skip();
  }
}

static void expect_within(double took, const char *what) {
  if (took > STOPPED_WITHIN_MS) {
    print_error("%s: the stop took %.0f ms to reach every device (abort "
                "poll %d ms, bound %d ms): a wake was lost\n",
                what, took, LONG_POLL_MS, STOPPED_WITHIN_MS);
    fail();
  }
}

/* The failed rank alone waits at a gate when the stop comes: the other
 * ranks ran ahead (runs without windows wait only for their own device),
 * and the failed one is at its next run's gate, still polling. */
static void test_stop_reaches_polling_gate(void **state) {
  (void)state;
  long_poll();
  static const struct {
    int n, first, step;
    const char *platform;
  } cases[] = {{2, 0, 1, "a2a3sim"}, {3, 6, -3, "a5sim"},  {4, 2, 1, "a2a3sim"},
               {2, 3, 1, "a5sim"},   {3, 0, 2, "a2a3sim"}, {4, 7, -2, "a5sim"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double took = failure_cancels(cases[i].n, cases[i].first, cases[i].step,
                                  cases[i].platform);
    char what[96];
    snprintf(what, sizeof what,
             "%s, %d ranks: a failed run and the 4 runs "
             "cancelled behind it",
             cases[i].platform, cases[i].n);
    expect_within(took, what);
  }
}

/* b = a, on the host. */
PLD_HOST_TASK(t_copy, t, PLD_IN(a, FP32, NR, TR, TC),
              PLD_OUT(b, FP32, NR, TR, TC)) {
  (void)t;
  memcpy(pld_tensor_data(b), pld_tensor_data(a),
         (size_t)pld_tensor_numel(a) * sizeof(float));
}
/* Call 1 on each rank: part = x * s (on the last rank after spinning
 * fail_ms, then out of bounds, when fail_ms > 0); the host task copies
 * part to mid; call 2 on each rank waits for it: y = mid * s. */
PLD_HOST(h_task, h, PLD_IN(x, FP32, NR, TR, TC), PLD_OUT(y, FP32, NR, TR, TC),
         PLD_SCALAR(s, FP32), PLD_SCALAR(fail_ms, INT32)) {
  int n = pld_world_size(h);
  pld_tensor part = pld_host_tensor(h, PLD_FP32, PLD_SHAPE(n, TR, TC));
  pld_tensor mid = pld_host_tensor(h, PLD_FP32, PLD_SHAPE(n, TR, TC));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_mulf, r, pld_slice(h, x, r), pld_slice(h, part, r), s,
                 r == n - 1 ? fail_ms : 0);
  pld_host_task(h, t_copy, part, mid);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_mulf, r, pld_slice(h, mid, r), pld_slice(h, y, r), s, 0);
}

/* Every rank but the last waits for the host task when the last one fails
 * (5 ms into the run, well within the devices' 20 ms of polling). */
static void task_wait_stopped(int n, int first, const char *platform) {
  pld_config cfg = test_config(ids, n, first, 1);
  cfg.platform = platform;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 0.75f, -1.0f);
  pld_tensor y[2];
  for (int k = 0; k < 2; k++) {
    y[k] = pld_test_tensor(3, shape, 0, 0);
    poison(y[k]);
  }
  pld_program *p = NULL;
  float s = 2.0f;
  int32_t fail_ms = 0;
  assert_ok(pld_compile(h_task, &cfg, PLD_ARGS(x, y[0], s, fail_ms), &p));
  assert_ok(pld_program_prepare(p));
  char what[96];
  snprintf(what, sizeof what, "%s, %d ranks, waiting for a host task", platform,
           n);
  pld_job *j[2];
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y[0], s, fail_ms), 0, &j[0]));
  expect_job(j[0], PLD_OK, "", what);
  expect_y(x, y[0], 2.0f * 2.0f, 0, what); /* x * 2 * 2: exact */
  /* Its job ends once every rank ended the run. */
  double t0 = now_ms();
  fail_ms = 5;
  assert_ok(pld_program_submit(p, PLD_ARGS(x, y[1], s, fail_ms), 0, &j[1]));
  char head[128];
  snprintf(head, sizeof head,
           "pld_job: run 2: pld_load: kernel k_mulf (rank %d, device %d", n - 1,
           ids[n - 1]);
  expect_job(j[1], PLD_ERR_BOUNDS, head, what);
  double took = now_ms() - t0;
  if (strstr(pld_job_message(j[1]), "restart")) {
    print_error("%s: a device was restarted: %s\n", what,
                pld_job_message(j[1]));
    fail();
  }
  expect_within(took, what);
  expect_y(x, y[1], 0, 1, what);
  for (int k = 0; k < 2; k++)
    assert_ok(pld_job_free(j[k]));
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(x);
  for (int k = 0; k < 2; k++)
    pld_tensor_destroy(y[k]);
}

static void test_stop_reaches_task_wait(void **state) {
  (void)state;
  long_poll();
  task_wait_stopped(2, 0, "a2a3sim");
  task_wait_stopped(3, 4, "a5sim");
  task_wait_stopped(4, 1, "a2a3sim");
  task_wait_stopped(2, 6, "a5sim");
}

/* ---- the length of a chain ---------------------------------------------- */

static void test_chain_full(void **state) {
  (void)state;
  struct pld_program p;
  memset(&p, 0, sizeof p);
  for (int n = 1; n <= 64; n = n * 3 + 1) {
    p.plan.nranks = n;
    /* The run posted next has number chain + 1: its gate's count, n
     * times that, must stay below 2^31. */
    uint32_t last = (uint32_t)(0x7fffffffu / (uint32_t)n) - 1;
    p.rs.chain = last - 1;
    assert_int_equal(pld__queue_chain_full(&p), 0);
    assert_true((uint64_t)(p.rs.chain + 1) * (uint64_t)n < 0x80000000u);
    p.rs.chain = last;
    assert_int_equal(pld__queue_chain_full(&p), 1);
    p.rs.chain = 0;
    assert_int_equal(pld__queue_chain_full(&p), 0);
  }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_windows_zeroed_between_queued_runs),
    cmocka_unit_test(test_failure_cancels_runs_ahead),
    cmocka_unit_test(test_resident_waits_for_every_rank),
    cmocka_unit_test(test_destroy_ends_started_cancels_rest),
    cmocka_unit_test(test_threads_wait_together),
    cmocka_unit_test(test_sharing_program_comes_after),
    cmocka_unit_test(test_time_limit_while_waiting),
    cmocka_unit_test(test_stop_reaches_polling_gate),
    cmocka_unit_test(test_stop_reaches_task_wait),
    cmocka_unit_test(test_chain_full),
};

PLD_TEST_MAIN("queue", tests)
