/* Task order on one device: a kernel reading a tensor waits for an earlier
 * kernel still writing it, a writer waits for earlier readers and writers,
 * a task waits for every earlier task it conflicts with (not only the
 * latest), and tasks conflict by the bytes they touch, so two different
 * window views that overlap in part are ordered too.
 *
 * How the tests make a wrong order show every time, not by chance: the
 * earlier task of each pair is slow, and its last block writes (or reads)
 * its second stage only once the later task has finished, or after
 * SLOW_MS.  A correct scheduler never starts the later task before the
 * slow one ends, so the slow one always waits SLOW_MS and nothing changes.
 * A scheduler that let the later task run early would start it at once on
 * another core (the device has more cores than the tasks here have
 * blocks); it finishes, and the slow task's second stage then lands after
 * it, so the later task saw the first stage (or the slow reader the later
 * writer's values).  Which task has finished is told by marks in the
 * device process's memory, which the kernels set and the slow kernels
 * poll: instrumentation outside the model, invisible to the scheduler. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "../host/programs.h"
#include "pld_test.h"

static int ids[16];

enum {
  R = 16,   /* rows of every tensor */
  C = 64,   /* columns */
  NOUT = 3, /* outputs per rank: y, z, w */
  SLOW = 4, /* blocks of the slow tasks: the last block is the slow one */
  SLOW_MS = 60,
  RUNS = 3, /* per platform */
  NO_MARK = -1,
  /* The marks, each set by one task and awaited by one slow task. */
  M_READ = 0,
  M_WRITE = 1,
  M_READ2 = 2,
  NMARKS = 3
};

/* What a writer adds to x, and what it stores first (stage one). */
#define ADD 100000.0f
#define STALE (-1.0f)

static atomic_int marks[NMARKS];

/* Called by device functions before their launches: every device process
 * has its own marks. */
static void clear_marks(void) {
  for (int i = 0; i < NMARKS; i++)
    atomic_store(&marks[i], 0);
}

static void set_mark(int32_t id) {
  if (id != NO_MARK)
    atomic_store(&marks[id], 1);
}

/* Returns once mark `id` is set or SLOW_MS have passed (at once for
 * NO_MARK), sleeping meanwhile so that the other cores get the CPUs. */
static void await_mark(int32_t id) {
  if (id == NO_MARK)
    return;
  struct timespec t0, now, nap = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    if (atomic_load(&marks[id]))
      return;
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - t0.tv_sec) * 1000 +
               (now.tv_nsec - t0.tv_nsec) / 1000000 <
           SLOW_MS);
}

/* The rows block b of nb handles. */
static int32_t first_row(pld_core k) {
  return pld_block_idx(k) * (R / pld_block_num(k));
}
static int is_last_block(pld_core k) {
  return pld_block_idx(k) == pld_block_num(k) - 1;
}

/* t = x + add, each block its rows: first STALE, then (the last block
 * after awaiting `await`) the values; sets `mark` at the end. */
PLD_KERNEL(k_write, k, PLD_OUT(t, FP32, R, C), PLD_IN(x, FP32, R, C),
           PLD_SCALAR(add, FP32), PLD_SCALAR(await, INT32),
           PLD_SCALAR(mark, INT32)) {
  int32_t row = first_row(k), rows = R / pld_block_num(k);
  pld_store(k, pld_full(k, PLD_FP32, rows, C, (double)STALE), t, row, 0);
  if (is_last_block(k))
    await_mark(await);
  pld_tile *v = pld_load(k, x, row, 0, rows, C);
  pld_adds(k, v, v, (double)add);
  pld_store(k, v, t, row, 0);
  set_mark(mark);
}

/* y = t, each block its rows (the last block after awaiting `await`);
 * sets `mark` at the end. */
PLD_KERNEL(k_copy, k, PLD_IN(t, FP32, R, C), PLD_OUT(y, FP32, R, C),
           PLD_SCALAR(await, INT32), PLD_SCALAR(mark, INT32)) {
  int32_t row = first_row(k), rows = R / pld_block_num(k);
  if (is_last_block(k))
    await_mark(await);
  pld_store(k, pld_load(k, t, row, 0, rows, C), y, row, 0);
  set_mark(mark);
}

/* t += add (reads and writes t); sets `mark`. */
PLD_KERNEL(k_add, k, PLD_INOUT(t, FP32, R, C), PLD_SCALAR(add, FP32),
           PLD_SCALAR(mark, INT32)) {
  pld_tile *v = pld_load(k, t, 0, 0, R, C);
  pld_adds(k, v, v, (double)add);
  pld_store(k, v, t, 0, 0);
  set_mark(mark);
}

/* Every scenario is a device function of these parameters, dispatched to
 * each rank by a host function of x[NR, R, C] and out[NR, NOUT, R, C]. */
#define ORDER_PARAMS                                                           \
  PLD_IN(x, FP32, R, C), PLD_OUT(y, FP32, R, C), PLD_OUT(z, FP32, R, C),       \
      PLD_OUT(w, FP32, R, C)

#define ORDER_HOST(name, device)                                               \
  PLD_HOST(name, h, PLD_IN(x, FP32, NR, R, C),                                 \
           PLD_OUT(out, FP32, NR, NOUT, R, C)) {                               \
    for (int r = 0; r < pld_world_size(h); r++) {                              \
      pld_tensor o = pld_slice(h, out, r);                                     \
      pld_dispatch(h, device, r, pld_slice(h, x, r), pld_slice(h, o, 0),       \
                   pld_slice(h, o, 1), pld_slice(h, o, 2));                    \
    }                                                                          \
  }

/* The expected outputs of one rank (NOUT tensors of R x C) from its x. */
typedef void order_reference(float *want, const float *x);

static void shifted_copy(float *dst, const float *src, float add) {
  for (int i = 0; i < R * C; i++)
    dst[i] = src[i] + add;
}

/* Runs h over 2 ranks of each simulated platform, RUNS times each with a
 * new x, and checks the first `nouts` outputs of every rank against ref,
 * exactly. */
static void run_order(pld_host_fn h, order_reference *ref, int nouts) {
  static const char *const platforms[] = {"a2a3sim", "a5sim"};
  for (int p = 0; p < 2; p++) {
    pld_config cfg = test_config(ids, 2, p ? 5 : 0, p ? -3 : 1);
    cfg.platform = platforms[p];
    pld_tensor x = pld_test_tensor(3, (int64_t[]){2, R, C}, 0, 0);
    pld_tensor out = pld_test_tensor(4, (int64_t[]){2, NOUT, R, C}, 0, 0);
    pld_program *prog;
    assert_ok(pld_compile(h, &cfg, PLD_ARGS(x, out), &prog));
    float want[NOUT * R * C];
    for (int run = 0; run < RUNS; run++) {
      /* New values every run: what a kernel run too early could find
       * left over from the previous run differs from what it must see. */
      float *xs = pld_tensor_data(x);
      for (int64_t i = 0; i < pld_tensor_numel(x); i++)
        xs[i] = (float)((p * RUNS + run) * 2 * R * C + i + 1);
      assert_ok(pld_program_run(prog, PLD_ARGS(x, out)));
      for (int r = 0; r < 2; r++) {
        ref(want, xs + r * R * C);
        for (int o = 0; o < nouts; o++) {
          char what[96];
          snprintf(what, sizeof what, "%s, run %d, rank %d, output %c",
                   platforms[p], run, r, "yzw"[o]);
          const float *got =
              (const float *)pld_tensor_data(out) + (r * NOUT + o) * R * C;
          for (int i = 0; i < R * C; i++)
            if (!(got[i] == want[o * R * C + i])) {
              print_error("%s: element %d: got %.9g, expected %.9g\n", what, i,
                          (double)got[i], (double)want[o * R * C + i]);
              fail();
            }
        }
      }
    }
    pld_program_destroy(prog);
    pld_tensor_destroy(x);
    pld_tensor_destroy(out);
  }
}

/* ---- read after write --------------------------------------------------- */

/* A slow writer, then a reader of what it writes: through a device tensor
 * (y = tmp = x), and through an Out tensor of the device function that the
 * reader takes as an In parameter in another position than the writer's
 * (z = x + ADD, then w = z + 0).  The two chains are independent. */
PLD_DEVICE(d_raw, a, ORDER_PARAMS) {
  clear_marks();
  pld_tensor tmp = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(R, C));
  pld_launch(a, k_write, SLOW, tmp, x, 0.0f, M_READ, NO_MARK);
  pld_launch(a, k_copy, 1, tmp, y, NO_MARK, M_READ);
  pld_launch(a, k_write, SLOW, z, x, ADD, M_READ2, NO_MARK);
  pld_launch(a, k_write, 1, w, z, 0.0f, NO_MARK, M_READ2);
}
ORDER_HOST(h_raw, d_raw)

static void ref_raw(float *want, const float *x) {
  shifted_copy(want, x, 0);
  shifted_copy(want + R * C, x, ADD);
  shifted_copy(want + 2 * R * C, x, ADD);
}

static void test_read_waits_for_writer(void **state) {
  (void)state;
  run_order(h_raw, ref_raw, 3);
}

/* ---- write after read --------------------------------------------------- */

/* tmp = x; a slow reader copies tmp to y (y = tmp + 0, tmp its second
 * parameter); a writer then sets tmp = x + ADD (it must wait for the
 * reader); z = tmp afterwards. */
PLD_DEVICE(d_war, a, ORDER_PARAMS) {
  clear_marks();
  pld_tensor tmp = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(R, C));
  pld_launch(a, k_write, 1, tmp, x, 0.0f, NO_MARK, NO_MARK);
  pld_launch(a, k_write, SLOW, y, tmp, 0.0f, M_WRITE, NO_MARK);
  pld_launch(a, k_write, 1, tmp, x, ADD, NO_MARK, M_WRITE);
  pld_launch(a, k_copy, 1, tmp, z, NO_MARK, NO_MARK);
}
ORDER_HOST(h_war, d_war)

static void ref_war(float *want, const float *x) {
  shifted_copy(want, x, 0);
  shifted_copy(want + R * C, x, ADD);
}

static void test_writer_waits_for_reader(void **state) {
  (void)state;
  run_order(h_war, ref_war, 2);
}

/* ---- write after write -------------------------------------------------- */

/* A slow writer of y (y = x), then another (y = x + ADD); and a slow
 * writer of z (z = x), then a kernel reading and writing it (z += ADD). */
PLD_DEVICE(d_waw, a, ORDER_PARAMS) {
  clear_marks();
  pld_launch(a, k_write, SLOW, y, x, 0.0f, M_WRITE, NO_MARK);
  pld_launch(a, k_write, 1, y, x, ADD, NO_MARK, M_WRITE);
  pld_launch(a, k_write, SLOW, z, x, 0.0f, M_READ2, NO_MARK);
  pld_launch(a, k_add, 1, z, ADD, M_READ2);
}
ORDER_HOST(h_waw, d_waw)

static void ref_waw(float *want, const float *x) {
  shifted_copy(want, x, ADD);
  shifted_copy(want + R * C, x, ADD);
}

static void test_writer_waits_for_writer(void **state) {
  (void)state;
  run_order(h_waw, ref_waw, 2);
}

/* ---- several readers, then a writer ------------------------------------- */

/* A slow writer of tmp (tmp = x); two readers of it, which do not conflict
 * with each other (y = tmp, slow, and z = tmp); a writer that must wait
 * for both (tmp = x + ADD), though the later reader finishes first; and
 * w = tmp. */
PLD_DEVICE(d_fan, a, ORDER_PARAMS) {
  clear_marks();
  pld_tensor tmp = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(R, C));
  pld_launch(a, k_write, SLOW, tmp, x, 0.0f, M_READ, NO_MARK);
  pld_launch(a, k_copy, SLOW, tmp, y, M_WRITE, NO_MARK);
  pld_launch(a, k_copy, 1, tmp, z, NO_MARK, M_READ);
  pld_launch(a, k_write, 1, tmp, x, ADD, NO_MARK, M_WRITE);
  pld_launch(a, k_copy, 1, tmp, w, NO_MARK, NO_MARK);
}
ORDER_HOST(h_fan, d_fan)

static void ref_fan(float *want, const float *x) {
  shifted_copy(want, x, 0);
  shifted_copy(want + R * C, x, 0);
  shifted_copy(want + 2 * R * C, x, ADD);
}

static void test_writer_waits_for_every_reader(void **state) {
  (void)state;
  run_order(h_fan, ref_fan, 3);
}

/* ---- views that overlap in part ----------------------------------------- */

enum { HALF = R / 2, VIEW_BYTES = R * C * 4 };

/* Two views of one window buffer of R + HALF rows: `lo` rows [0, R) and
 * `hi` rows [HALF, R + HALF), which share rows [HALF, R).  Kernels take
 * them as plain tensors, In or Out.  A slow writer sets lo = x; a reader
 * copies hi to y (x's second half, then zeros: the window starts every
 * run at zero).  A slow reader copies lo to z while a writer sets
 * hi = x + ADD, which must wait for it; then w = lo. */
PLD_DEVICE(d_overlap, a, ORDER_PARAMS, PLD_WINDOW(lo, FP32, R, C),
           PLD_WINDOW(hi, FP32, R, C)) {
  clear_marks();
  pld_launch(a, k_write, SLOW, lo, x, 0.0f, M_READ, NO_MARK);
  pld_launch(a, k_copy, 1, hi, y, NO_MARK, M_READ);
  pld_launch(a, k_copy, SLOW, lo, z, M_WRITE, NO_MARK);
  pld_launch(a, k_write, 1, hi, x, ADD, NO_MARK, M_WRITE);
  pld_launch(a, k_copy, 1, lo, w, NO_MARK, NO_MARK);
}

PLD_HOST(h_overlap, h, PLD_IN(x, FP32, NR, R, C),
         PLD_OUT(out, FP32, NR, NOUT, R, C)) {
  pld_window_buf buf = pld_window_alloc(h, (size_t)VIEW_BYTES * 3 / 2);
  for (int r = 0; r < pld_world_size(h); r++) {
    pld_tensor o = pld_slice(h, out, r);
    pld_dispatch(
        h, d_overlap, r, pld_slice(h, x, r), pld_slice(h, o, 0),
        pld_slice(h, o, 1), pld_slice(h, o, 2),
        pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(R, C)),
        pld_window_view_at(h, buf, VIEW_BYTES / 2, PLD_FP32, PLD_SHAPE(R, C)));
  }
}

static void ref_overlap(float *want, const float *x) {
  float *y = want, *z = want + R * C, *w = want + 2 * R * C;
  memset(y, 0, sizeof(float) * R * C);
  memcpy(y, x + HALF * C, sizeof(float) * HALF * C);
  shifted_copy(z, x, 0);
  memcpy(w, x, sizeof(float) * HALF * C);
  for (int i = 0; i < HALF * C; i++)
    w[HALF * C + i] = x[i] + ADD;
}

static void test_overlapping_views_ordered(void **state) {
  (void)state;
  run_order(h_overlap, ref_overlap, 3);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_read_waits_for_writer),
    cmocka_unit_test(test_writer_waits_for_reader),
    cmocka_unit_test(test_writer_waits_for_writer),
    cmocka_unit_test(test_writer_waits_for_every_reader),
    cmocka_unit_test(test_overlapping_views_ordered),
};

PLD_TEST_MAIN("order", tests)
