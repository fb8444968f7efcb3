/* Scalars are values of a run: a prepared program runs with new scalar
 * values, its host orchestrator traced again with them, keeping its device
 * processes when the dispatches stay the same; the kernels, device
 * functions and host tasks receive the new values (results against plain
 * C on 2, 3 and 4 ranks and both simulators).  New values that change the
 * dispatches, slices, windows or host tasks are refused with a message
 * naming the values and the difference, and the program keeps running
 * with its previous ones. */
#include <stdint.h>
#include <stdlib.h>

#include "host/program.h" /* p->devs[r].pid: the device processes */
#include "pld_test.h"
#include "programs.h"

static int ids[16];

enum { AR = 8, AC = 32 };

/* The n-rank configuration of each suite: devices spread differently, and
 * the a5sim simulator on 3 ranks. */
static pld_config config_for(int n) {
  pld_config cfg = n == 2   ? test_config(ids, 2, 3, 2)
                   : n == 3 ? test_config(ids, 3, 1, 4)
                            : test_config(ids, 4, 15, -5);
  cfg.platform = n == 3 ? "a5sim" : "a2a3sim";
  return cfg;
}

/* ---- the device processes stay --------------------------------------- */

static void pids_get(const pld_program *p, pid_t *pids) {
  for (int r = 0; r < p->plan.nranks; r++)
    pids[r] = p->rs.devs ? p->rs.devs[r].pid : 0;
}

/* The program still runs on the device processes it had (the shm fabric;
 * under mpirun each process runs its own rank elsewhere). */
static void assert_same_devices(const pld_program *p, const pid_t *before) {
  if (pld_process_count() > 1)
    return;
  assert_non_null(p->rs.devs);
  for (int r = 0; r < p->plan.nranks; r++) {
    assert_true(before[r] > 0);
    assert_int_equal(p->rs.devs[r].pid, before[r]);
  }
  /* ... and none of them has exited. */
  assert_int_equal(waitpid(-1, NULL, WNOHANG), 0);
}

/* ---- y = x * scale + step ---------------------------------------------- */

PLD_KERNEL(k_affine, k, PLD_IN(x, FP32, AR, AC), PLD_OUT(y, FP32, AR, AC),
           PLD_SCALAR(scale, FP32), PLD_SCALAR(step, INT32)) {
  pld_tile *t = pld_load(k, x, 0, 0, AR, AC);
  pld_muls(k, t, t, scale);
  pld_adds(k, t, t, step);
  pld_store(k, t, y, 0, 0);
  pld_tile_free(k, t);
}
PLD_DEVICE(d_affine, a, PLD_IN(x, FP32, AR, AC), PLD_OUT(y, FP32, AR, AC),
           PLD_SCALAR(scale, FP32), PLD_SCALAR(step, INT32)) {
  pld_launch(a, k_affine, 1, x, y, scale, step);
}
PLD_HOST(h_affine, h, PLD_IN(x, FP32, NR, AR, AC), PLD_OUT(y, FP32, NR, AR, AC),
         PLD_SCALAR(scale, FP32), PLD_SCALAR(step, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_affine, r, pld_slice(h, x, r), pld_slice(h, y, r), scale,
                 step);
}

/* x * scale + step as FP32 computes it: a rounded product, then a rounded
 * sum (volatile: no fused multiply-add). */
static float affine(float x, float scale, int32_t step) {
  volatile float m = x * scale;
  return m + (float)step;
}

/* y[r] == x[r] * scale + (step + r * per_rank) for every rank r. */
static void expect_affine(pld_tensor x, pld_tensor y, float scale, int32_t step,
                          int32_t per_rank, const char *what) {
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  int64_t per = AR * AC;
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) {
    int32_t s = step + (int32_t)(i / per) * per_rank;
    float want = affine(xs[i], scale, s);
    if (ys[i] != want) {
      print_error("%s: scale %g, step %d: y[%lld] = %.9g, expected %.9g\n",
                  what, (double)scale, s, (long long)i, (double)ys[i],
                  (double)want);
      fail();
    }
  }
}

/* Stale results cannot pass. */
static void poison(pld_tensor y) {
  float *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(y); i++)
    ys[i] = -12345.0f;
}

static void test_kernel_receives_new_values(void **state) {
  (void)state;
  static const struct {
    float scale;
    int32_t step;
  } runs[] = {
      {1.5f, 3}, /* the compile's */
      {-2.25f, -7},       {0.1f, 0},
      {0.0f, INT32_MAX},  {3.0e-3f, INT32_MIN},
      {-0.0f, 1},         {1e6f, 123456789},
      {0.1f, 0},                     /* a run with the last run's values */
      {-7.75f, -1000000}, {1.5f, 3}, /* back to the compile's */
  };
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, AR, AC};
    pld_tensor x = pld_test_tensor(3, shape, 0.37f, -20.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_program *p;
    assert_ok(pld_compile(h_affine, &cfg,
                          PLD_ARGS(x, y, runs[0].scale, runs[0].step), &p));
    pid_t pids[16];
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
      poison(y);
      assert_ok(
          pld_program_run(p, PLD_ARGS(x, y, runs[k].scale, runs[k].step)));
      expect_affine(x, y, runs[k].scale, runs[k].step, 0, cfg.platform);
      if (k == 0)
        pids_get(p, pids);
      else
        assert_same_devices(p, pids);
    }
    pld_program_destroy(p);
    assert_no_children();
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
}

/* ---- the device function chooses with the value ------------------------ */

enum { BR = 16 };

/* Each block adds (blocks * 100 + its index) to its BR / blocks rows. */
PLD_KERNEL(k_blocks, k, PLD_IN(x, FP32, BR, AC), PLD_OUT(y, FP32, BR, AC)) {
  int32_t b = pld_block_idx(k), nb = pld_block_num(k);
  int32_t rows = BR / nb;
  pld_tile *t = pld_load(k, x, b * rows, 0, rows, AC);
  pld_adds(k, t, t, (double)(nb * 100 + b));
  pld_store(k, t, y, b * rows, 0);
  pld_tile_free(k, t);
}
PLD_KERNEL(k_negate, k, PLD_IN(x, FP32, BR, AC), PLD_OUT(y, FP32, BR, AC)) {
  pld_tile *t = pld_load(k, x, 0, 0, BR, AC);
  pld_neg(k, t, t);
  pld_store(k, t, y, 0, 0);
  pld_tile_free(k, t);
}
/* mode > 0: k_blocks over mode blocks; otherwise k_negate. */
PLD_DEVICE(d_choose, a, PLD_IN(x, FP32, BR, AC), PLD_OUT(y, FP32, BR, AC),
           PLD_SCALAR(mode, INT32)) {
  if (mode > 0)
    pld_launch(a, k_blocks, mode, x, y);
  else
    pld_launch(a, k_negate, 1, x, y);
}
PLD_HOST(h_choose, h, PLD_IN(x, FP32, NR, BR, AC), PLD_OUT(y, FP32, NR, BR, AC),
         PLD_SCALAR(mode, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_choose, r, pld_slice(h, x, r), pld_slice(h, y, r), mode);
}

static void expect_chosen(pld_tensor x, pld_tensor y, int32_t mode) {
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) {
    int64_t row = (i / AC) % BR;
    float want =
        mode > 0 ? xs[i] + (float)(mode * 100 + (int32_t)(row / (BR / mode)))
                 : -xs[i];
    if (ys[i] != want) {
      print_error("mode %d: y[%lld] = %g, expected %g\n", mode, (long long)i,
                  (double)ys[i], (double)want);
      fail();
    }
  }
}

static void test_device_chooses_with_value(void **state) {
  (void)state;
  static const int32_t modes[] = {2, 8, 0, 1, 16, 4, -3, 2, 16};
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, BR, AC};
    pld_tensor x = pld_test_tensor(3, shape, -0.5f, 7.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_program *p;
    assert_ok(pld_compile(h_choose, &cfg, PLD_ARGS(x, y, modes[0]), &p));
    pid_t pids[16];
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
      poison(y);
      assert_ok(pld_program_run(p, PLD_ARGS(x, y, modes[k])));
      expect_chosen(x, y, modes[k]);
      if (k == 0)
        pids_get(p, pids);
      else
        assert_same_devices(p, pids);
    }
    pld_program_destroy(p);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
}

/* ---- host tasks receive the new values ------------------------------- */

/* o[i] = v + (i % 7). */
PLD_HOST_TASK(t_fill, t, PLD_OUT(o, FP32, AR, AC), PLD_SCALAR(v, FP32)) {
  (void)t;
  float *d = pld_tensor_data(o);
  for (int i = 0; i < AR * AC; i++)
    d[i] = v + (float)(i % 7);
}
/* z[j] = k + j. */
PLD_HOST_TASK(t_stamp, t, PLD_OUT(z, INT32, 4), PLD_SCALAR(k, INT32)) {
  (void)t;
  int32_t *d = pld_tensor_data(z);
  for (int j = 0; j < 4; j++)
    d[j] = k + j;
}

PLD_KERNEL(k_add, k, PLD_IN(x, FP32, AR, AC), PLD_IN(s, FP32, AR, AC),
           PLD_OUT(y, FP32, AR, AC)) {
  pld_tile *t = pld_load(k, x, 0, 0, AR, AC);
  pld_tile *u = pld_load(k, s, 0, 0, AR, AC);
  pld_add(k, t, t, u);
  pld_store(k, t, y, 0, 0);
  pld_tile_free(k, u);
  pld_tile_free(k, t);
}
PLD_DEVICE(d_add, a, PLD_IN(x, FP32, AR, AC), PLD_IN(s, FP32, AR, AC),
           PLD_OUT(y, FP32, AR, AC)) {
  pld_launch(a, k_add, 1, x, s, y);
}

/* s (host intermediate) = v + (i % 7) by a task; y[r] = x[r] + s on every
 * rank; z = k + j by another task. */
PLD_HOST(h_task, h, PLD_IN(x, FP32, NR, AR, AC), PLD_OUT(y, FP32, NR, AR, AC),
         PLD_OUT(z, INT32, 4), PLD_SCALAR(v, FP32), PLD_SCALAR(k, INT32)) {
  pld_tensor s = pld_host_tensor(h, PLD_FP32, PLD_SHAPE(AR, AC));
  pld_host_task(h, t_fill, s, v);
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_add, r, pld_slice(h, x, r), s, pld_slice(h, y, r));
  pld_host_task(h, t_stamp, z, k);
}

static pld_tensor int_tensor(int ndim, const int64_t *shape) {
  pld_tensor t;
  assert_ok(pld_tensor_create(PLD_INT32, ndim, shape, &t));
  int32_t *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = -777;
  return t;
}

static void test_task_receives_new_values(void **state) {
  (void)state;
  static const struct {
    float v;
    int32_t k;
  } runs[] = {
      {0.5f, 1}, {-3.75f, 7},       {1e-3f, -100}, {0.0f, INT32_MAX - 3},
      {0.5f, 1}, {0.5f, INT32_MIN}, {250.125f, 1},
  };
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, AR, AC};
    pld_tensor x = pld_test_tensor(3, shape, 0.25f, -9.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_tensor z = int_tensor(1, (int64_t[]){4});
    pld_program *p;
    assert_ok(
        pld_compile(h_task, &cfg, PLD_ARGS(x, y, z, runs[0].v, runs[0].k), &p));
    pid_t pids[16];
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
      poison(y);
      int32_t *zs = pld_tensor_data(z);
      for (int j = 0; j < 4; j++)
        zs[j] = -777;
      assert_ok(pld_program_run(p, PLD_ARGS(x, y, z, runs[r].v, runs[r].k)));
      const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
      for (int64_t i = 0; i < n * AR * AC; i++) {
        float s = runs[r].v + (float)((i % (AR * AC)) % 7);
        float want = xs[i] + s;
        if (ys[i] != want) {
          print_error("%d ranks, v %g: y[%lld] = %g, expected %g\n", n,
                      (double)runs[r].v, (long long)i, (double)ys[i],
                      (double)want);
          fail();
        }
      }
      for (int j = 0; j < 4; j++)
        assert_int_equal(zs[j], (int32_t)((int64_t)runs[r].k + j));
      if (r == 0)
        pids_get(p, pids);
      else
        assert_same_devices(p, pids);
    }
    pld_program_destroy(p);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(z);
  }
}

/* ---- refusals ------------------------------------------------------------ */

/* The same signature as d_affine, another function. */
PLD_DEVICE(d_affine_too, a, PLD_IN(x, FP32, AR, AC), PLD_OUT(y, FP32, AR, AC),
           PLD_SCALAR(scale, FP32), PLD_SCALAR(step, INT32)) {
  pld_launch(a, k_affine, 1, x, y, scale, step);
}

PLD_DYNAMIC(DA);
PLD_DYNAMIC(DB);
PLD_DEVICE(d_leave, a, PLD_OUT(t, FP32, DA, DB)) { (void)a; }

enum {
  M_TWICE = -1,    /* a second call to rank 0 */
  M_SHIFT = -2,    /* rank r reads x[r + 1] */
  M_FN = -3,       /* the last rank runs d_affine_too */
  M_BAD_RANK = -4, /* a dispatch to rank n: the host function fails */
  M_WINDOW = -5,   /* a window buffer */
  M_TASK = -6,     /* a host task (and its intermediate) */
  M_ARG = -7       /* rank 0's second call gets its tensor transposed */
};

/* Modes >= 0 and scales >= 0 keep the dispatches: y[r] = x[r] * scale +
 * (mode + r).  A negative scale adds a call to rank 1. */
PLD_HOST(h_modes, h, PLD_IN(x, FP32, NR, AR, AC), PLD_OUT(y, FP32, NR, AR, AC),
         PLD_SCALAR(mode, INT32), PLD_SCALAR(scale, FP32)) {
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++) {
    pld_tensor xr = pld_slice(h, x, mode == M_SHIFT ? (r + 1) % n : r);
    if (mode == M_FN && r == n - 1)
      pld_dispatch(h, d_affine_too, r, xr, pld_slice(h, y, r), scale, mode + r);
    else
      pld_dispatch(h, d_affine, r, xr, pld_slice(h, y, r), scale, mode + r);
  }
  pld_tensor spare = mode == M_ARG
                         ? pld_rank_tensor(h, 0, PLD_FP32, PLD_SHAPE(AC, AR))
                         : pld_rank_tensor(h, 0, PLD_FP32, PLD_SHAPE(AR, AC));
  pld_dispatch(h, d_leave, 0, spare);
  if (mode == M_TWICE || scale < 0) {
    int r = mode == M_TWICE ? 0 : 1;
    pld_dispatch(h, d_affine, r, pld_slice(h, x, r), pld_slice(h, y, r), scale,
                 mode + r);
  }
  if (mode == M_BAD_RANK)
    pld_dispatch(h, d_affine, n, pld_slice(h, x, 0), pld_slice(h, y, 0), scale,
                 mode);
  if (mode == M_WINDOW)
    pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(AC));
  if (mode == M_TASK)
    pld_host_task(h, t_fill, pld_host_tensor(h, PLD_FP32, PLD_SHAPE(AR, AC)),
                  scale);
}

/* Asserts the run with (mode, scale) is refused with the values listed as
 * `vals` and the difference `diff`. */
static void assert_refused(pld_program *p, pld_tensor x, pld_tensor y,
                           int32_t mode, float scale, const char *vals,
                           const char *diff) {
  char with[256], orch[256];
  snprintf(with, sizeof with,
           "with its new scalar values (%s) the host "
           "orchestrator ",
           vals);
  snprintf(orch, sizeof orch, "the host orchestrator %s; a prepared program",
           diff);
  assert_fails_with(pld_program_run(p, PLD_ARGS(x, y, mode, scale)),
                    PLD_ERR_ARG, "pld_program_run: h_modes: ", with, orch,
                    "; a prepared program keeps its dispatches, tensors and "
                    "windows: compile it again for these values");
}

/* Runs with (mode, scale) and checks the result. */
static void run_modes(pld_program *p, pld_tensor x, pld_tensor y, int32_t mode,
                      float scale) {
  poison(y);
  assert_ok(pld_program_run(p, PLD_ARGS(x, y, mode, scale)));
  expect_affine(x, y, scale, mode, 1, "h_modes");
}

static void test_refusals_keep_program(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, AR, AC};
    pld_tensor x = pld_test_tensor(3, shape, 0.75f, -31.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_program *p;
    int32_t cur = 0;
    const float scale = 1.5f;
    assert_ok(pld_compile(h_modes, &cfg, PLD_ARGS(x, y, cur, scale), &p));
    run_modes(p, x, y, cur, scale);
    pid_t pids[16];
    pids_get(p, pids);
    static const int32_t bad[] = {M_TWICE,  M_SHIFT, M_FN,
                                  M_WINDOW, M_TASK,  M_ARG};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      char vals[128], diff[128];
      snprintf(vals, sizeof vals, "'mode' INT32 = %d, was INT32 = %d", bad[k],
               cur);
      switch (bad[k]) {
      case M_TWICE:
        snprintf(diff, sizeof diff, "dispatches 3 calls to rank 0, not 2");
        break;
      case M_SHIFT:
        snprintf(diff, sizeof diff,
                 "passes rank 0 other slices of its "
                 "tensors");
        break;
      case M_FN:
        snprintf(diff, sizeof diff,
                 "makes rank %d's call 0 d_affine_too, "
                 "not d_affine",
                 n - 1);
        break;
      case M_WINDOW:
        snprintf(diff, sizeof diff, "allocates 1 window buffers, not 0");
        break;
      case M_TASK:
        snprintf(diff, sizeof diff,
                 "records 1 host tasks and 2 "
                 "intermediates, not 0 and 1");
        break;
      default:
        /* A rank intermediate of another shape (and so another
         * argument of d_leave): the intermediate is compared first. */
        snprintf(diff, sizeof diff,
                 "makes rank 0 intermediate #0 another shape");
        break;
      }
      assert_refused(p, x, y, bad[k], scale, vals, diff);
      /* The previous values still run, and so does another acceptable
       * one, on the same devices. */
      run_modes(p, x, y, cur, scale);
      cur += 3;
      run_modes(p, x, y, cur, scale);
      assert_same_devices(p, pids);
    }

    /* The host function failing with the new value: the failure pld_compile
     * reports for it, prefixed. */
    pld_program *q = NULL;
    int32_t m = M_BAD_RANK;
    int st = pld_compile(h_modes, &cfg, PLD_ARGS(x, y, m, scale), &q);
    assert_null(q);
    assert_int_not_equal(st, PLD_OK);
    char want[1024];
    snprintf(want, sizeof want,
             "pld_program_run: h_modes: traced again for its new scalar "
             "values: %s",
             pld_last_error());
    assert_non_null(strstr(want, "rank"));
    assert_int_equal(pld_program_run(p, PLD_ARGS(x, y, m, scale)), st);
    assert_string_equal(pld_last_error(), want);
    run_modes(p, x, y, cur, scale);
    run_modes(p, x, y, 1, scale);
    cur = 1;
    assert_same_devices(p, pids);

    pld_program_destroy(p);
    assert_no_children();
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
}

/* ---- two scalars, one changing ----------------------------------------- */

static void test_message_lists_changed_values(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, AR, AC};
    pld_tensor x = pld_test_tensor(3, shape, -0.125f, 4.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_program *p;
    int32_t mode = 2;
    float scale = 1.5f;
    assert_ok(pld_compile(h_modes, &cfg, PLD_ARGS(x, y, mode, scale), &p));
    run_modes(p, x, y, mode, scale);
    /* Only the mode changes: only it is listed. */
    assert_refused(p, x, y, M_TWICE, scale, "'mode' INT32 = -1, was INT32 = 2",
                   "dispatches 3 calls to rank 0, not 2");
    assert_null(strstr(pld_last_error(), "'scale'"));
    /* Only the scale: only it. */
    assert_refused(p, x, y, mode, -0.5f, "'scale' FP32 = -0.5, was FP32 = 1.5",
                   "dispatches 2 calls to rank 1, not 1");
    assert_null(strstr(pld_last_error(), "'mode'"));
    /* Both, in parameter order. */
    assert_refused(p, x, y, M_TWICE, -0.5f,
                   "'mode' INT32 = -1, was INT32 = 2; 'scale' FP32 = -0.5, "
                   "was FP32 = 1.5",
                   "dispatches 3 calls to rank 0, not 2");
    run_modes(p, x, y, mode, scale);
    /* A new scale alone that keeps the dispatches; then the mode refused
     * lists the mode only, the old scale being the new one's. */
    run_modes(p, x, y, mode, 0.25f);
    assert_refused(p, x, y, M_SHIFT, 0.25f, "'mode' INT32 = -2, was INT32 = 2",
                   "passes rank 0 other slices of its tensors");
    assert_null(strstr(pld_last_error(), "'scale'"));
    run_modes(p, x, y, mode, 0.25f);
    run_modes(p, x, y, 5, 2.0f);
    pld_program_destroy(p);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
}

/* ---- host tasks given other tensors ----------------------------------- */

/* The task stamps z[sel % n]: another value of sel, another slice. */
PLD_HOST(h_task_slice, h, PLD_IN(x, FP32, NR, AR, AC),
         PLD_OUT(y, FP32, NR, AR, AC), PLD_OUT(z, INT32, NR, 4),
         PLD_SCALAR(sel, INT32)) {
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_affine, r, pld_slice(h, x, r), pld_slice(h, y, r), 1.0f,
                 r);
  pld_host_task(h, t_stamp, pld_slice(h, z, sel % n), sel);
}

PLD_DYNAMIC(LEN);
/* z[0] = the length of s, which it fills. */
PLD_HOST_TASK(t_len, t, PLD_OUT(s, FP32, LEN), PLD_OUT(z, INT32, 4)) {
  (void)t;
  float *d = pld_tensor_data(s);
  int64_t len = pld_tensor_dim(s, 0);
  for (int64_t i = 0; i < len; i++)
    d[i] = (float)i;
  int32_t *zs = pld_tensor_data(z);
  zs[0] = (int32_t)len;
}

/* A host intermediate of len elements, only a task's. */
PLD_HOST(h_inter_len, h, PLD_IN(x, FP32, NR, AR, AC),
         PLD_OUT(y, FP32, NR, AR, AC), PLD_OUT(z, INT32, 4),
         PLD_SCALAR(len, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_affine, r, pld_slice(h, x, r), pld_slice(h, y, r), 1.0f,
                 r);
  pld_host_task(h, t_len, pld_host_tensor(h, PLD_FP32, PLD_SHAPE(len)), z);
}

static void test_refuses_other_task_tensors(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, AR, AC};
    pld_tensor x = pld_test_tensor(3, shape, 0.5f, 1.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_tensor z = int_tensor(2, (int64_t[]){n, 4});
    pld_program *p;
    int32_t sel = 0;
    assert_ok(pld_compile(h_task_slice, &cfg, PLD_ARGS(x, y, z, sel), &p));
    assert_ok(pld_program_run(p, PLD_ARGS(x, y, z, sel)));
    expect_affine(x, y, 1.0f, 0, 1, "h_task_slice");
    /* sel = n: the same slice z[0], stamped n + j. */
    sel = n;
    assert_ok(pld_program_run(p, PLD_ARGS(x, y, z, sel)));
    const int32_t *zs = pld_tensor_data(z);
    for (int j = 0; j < 4; j++)
      assert_int_equal(zs[j], n + j);
    /* sel = 1: the task's tensor is z[1], not z[0]. */
    sel = 1;
    int st = pld_program_run(p, PLD_ARGS(x, y, z, sel));
    if (st == PLD_OK)
      print_error("%d ranks: sel 1 ran: z[0] = {%d, %d, %d, %d}, z[1] = "
                  "{%d, %d, %d, %d} (expected a refusal, or z[1] = {1, 2, "
                  "3, 4})\n",
                  n, zs[0], zs[1], zs[2], zs[3], zs[4], zs[5], zs[6], zs[7]);
    char vals[96];
    snprintf(vals, sizeof vals, "('sel' INT32 = 1, was INT32 = %d)", n);
    assert_fails_with(st, PLD_ERR_ARG, "pld_program_run: h_task_slice: ", vals,
                      "changes host task 0 (t_stamp)");
    pld_program_destroy(p);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(z);
  }
}

static void test_refuses_other_task_shape(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    pld_config cfg = config_for(n);
    const int64_t shape[] = {n, AR, AC};
    pld_tensor x = pld_test_tensor(3, shape, 0.5f, 1.0f);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_tensor z = int_tensor(1, (int64_t[]){4});
    pld_program *p;
    int32_t len = 8;
    assert_ok(pld_compile(h_inter_len, &cfg, PLD_ARGS(x, y, z, len), &p));
    assert_ok(pld_program_run(p, PLD_ARGS(x, y, z, len)));
    const int32_t *zs = pld_tensor_data(z);
    assert_int_equal(zs[0], 8);
    expect_affine(x, y, 1.0f, 0, 1, "h_inter_len");
    /* len = 16: the task's intermediate has 16 elements, not 8. */
    len = 16;
    int st = pld_program_run(p, PLD_ARGS(x, y, z, len));
    if (st == PLD_OK)
      print_error("%d ranks: len 16 ran: the task saw length %d (expected a "
                  "refusal, or 16)\n",
                  n, zs[0]);
    assert_fails_with(st, PLD_ERR_ARG, "pld_program_run: h_inter_len: ",
                      "('len' INT32 = 16, was INT32 = 8)",
                      "makes host intermediate #0 another shape");
    len = 8;
    assert_ok(pld_program_run(p, PLD_ARGS(x, y, z, len)));
    assert_int_equal(zs[0], 8);
    pld_program_destroy(p);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(z);
  }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kernel_receives_new_values),
    cmocka_unit_test(test_device_chooses_with_value),
    cmocka_unit_test(test_task_receives_new_values),
    cmocka_unit_test(test_refusals_keep_program),
    cmocka_unit_test(test_message_lists_changed_values),
    cmocka_unit_test(test_refuses_other_task_tensors),
    cmocka_unit_test(test_refuses_other_task_shape),
};

PLD_TEST_MAIN("scalars", tests)
