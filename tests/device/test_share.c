/* Programs sharing devices (pld_config.share): the second runs on the
 * first's devices, its windows (declared alike) are the first's memory,
 * the first's device-resident tensors pass to its runs, and the runs of
 * both keep the order they were asked for, run or submitted.  Destroying
 * the first while the second lives keeps the devices until the second
 * goes.  Refusals: other device ids, other windows, the race check, a
 * program already destroyed. */
#include <string.h>

#include "pld_test.h"
#include "../host/programs.h"

enum { R = 4, C = 8 };

/* A: w += a on every element (its window, kept across runs); y = w. */
PLD_KERNEL(k_add, k, PLD_WINDOW(w, FP32, R, C), PLD_OUT(y, FP32, R, C),
           PLD_SCALAR(a, FP32)) {
  pld_tile *t = pld_load(k, pld_local(w), 0, 0, R, C);
  pld_adds(k, t, t, a);
  pld_store(k, t, pld_local(w), 0, 0);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_add, a, PLD_WINDOW(w, FP32, R, C), PLD_OUT(y, FP32, R, C),
           PLD_SCALAR(s, FP32)) {
  pld_launch(a, k_add, 1, w, y, s);
}
PLD_HOST(h_add, h, PLD_OUT(y, FP32, NR, R, C), PLD_SCALAR(s, FP32)) {
  pld_window_buf b = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(R, C));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_add, r, pld_window_view(h, b, PLD_FP32, PLD_SHAPE(R, C)),
                 pld_slice(h, y, r), s);
}

/* B, on A's devices with A's window: st += w (st resident). */
PLD_KERNEL(k_acc, k, PLD_WINDOW(w, FP32, R, C), PLD_INOUT(st, FP32, R, C)) {
  pld_tile *t = pld_load(k, pld_local(w), 0, 0, R, C);
  pld_tile *u = pld_load(k, st, 0, 0, R, C);
  pld_add(k, u, u, t);
  pld_store(k, u, st, 0, 0);
}
PLD_DEVICE(d_acc, a, PLD_WINDOW(w, FP32, R, C), PLD_INOUT(st, FP32, R, C)) {
  pld_launch(a, k_acc, 1, w, st);
}
PLD_HOST(h_acc, h, PLD_INOUT(st, FP32, NR, R, C)) {
  pld_window_buf b = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(R, C));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_acc, r, pld_window_view(h, b, PLD_FP32, PLD_SHAPE(R, C)),
                 pld_slice(h, st, r));
}

/* C: two windows, not A's. */
PLD_HOST(h_two, h, PLD_INOUT(st, FP32, NR, R, C)) {
  pld_window_buf b = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(R, C));
  pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(R, C));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_acc, r, pld_window_view(h, b, PLD_FP32, PLD_SHAPE(R, C)),
                 pld_slice(h, st, r));
}

static int ids[8], other[8];

/* Every element of t equals v. */
static void expect_all(pld_tensor t, float v, const char *what) {
  const float *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    if (d[i] != v) {
      print_error("%s: element %lld: got %g, expected %g\n", what, (long long)i,
                  (double)d[i], (double)v);
      fail();
    }
}

/* A and B interleaved, submitted and run: the window and the resident
 * state follow the order asked for; then A destroyed first. */
static void run_interleaved(int n, const char *plat) {
  pld_config ca = test_config(ids, n, n == 2 ? 0 : 1, 2);
  ca.platform = plat;
  ca.keep_windows = 1;
  const int64_t shape[] = {n, R, C};
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_tensor st = pld_test_tensor(3, shape, 0, 0);
  pld_tensor out = pld_test_tensor(3, shape, 0, 0);
  pld_program *a, *b;
  assert_ok(pld_compile(h_add, &ca, PLD_ARGS(y, 1.0f), &a));
  pld_config cb = ca;
  cb.share = a;
  assert_ok(pld_compile(h_acc, &cb, PLD_ARGS(st), &b));
  /* Both started before any run has a thread running it (a process that
   * forks while other threads run is what TSan cannot follow). */
  assert_ok(pld_program_prepare(b));
  pld_tensor state;
  /* Made through B: on the group's devices, usable by both. */
  assert_ok(pld_device_tensor_create(b, PLD_EACH_RANK, PLD_FP32, 2,
                                     (const int64_t[]){R, C}, &state));
  float w = 0, acc = 0;
  pld_job *j[10];
  for (int i = 0; i < 10; i++) {
    if (i % 2 == 0) {
      float s = (float)(i / 2 + 1) * (i % 4 ? -0.5f : 1.0f);
      assert_ok(pld_program_submit(a, PLD_ARGS(y, s), 0, &j[i]));
      w += s;
    } else {
      assert_ok(pld_program_submit(b, PLD_ARGS(state), 0, &j[i]));
      acc += w;
    }
  }
  for (int i = 0; i < 10; i++) {
    assert_ok(pld_job_wait(j[i], -1));
    assert_int_equal(pld_job_status(j[i]), PLD_OK);
    assert_ok(pld_job_free(j[i]));
  }
  expect_all(y, w, "A's window after the submitted runs");
  assert_ok(pld_device_tensor_read(state, out));
  expect_all(out, acc, "the state B accumulated in submission order");
  /* Blocking runs, alternately. */
  assert_ok(pld_program_run(a, PLD_ARGS(y, 2.0f)));
  w += 2.0f;
  assert_ok(pld_program_run(b, PLD_ARGS(state)));
  acc += w;
  assert_ok(pld_device_tensor_read(state, out));
  expect_all(out, acc, "the state after blocking runs");
  /* A goes first: its devices stay for B. */
  pld_program_destroy(a);
  assert_ok(pld_program_run(b, PLD_ARGS(state)));
  acc += w;
  assert_ok(pld_device_tensor_read(state, out));
  expect_all(out, acc, "the state after A was destroyed");
  assert_ok(pld_device_tensor_free(state));
  pld_tensor_destroy(state);
  pld_program_destroy(b);
  assert_no_children();
  pld_tensor_destroy(y);
  pld_tensor_destroy(st);
  pld_tensor_destroy(out);
}

static void test_interleaved(void **unused) {
  (void)unused;
  run_interleaved(2, "a2a3sim");
  run_interleaved(3, "a5sim");
  run_interleaved(4, "a2a3sim");
}

/* A's resident tensor passed to B's run; B destroyed first. */
static void test_resident_of_the_first(void **unused) {
  (void)unused;
  for (int n = 2; n <= 4; n++) {
    pld_config ca = test_config(ids, n, 0, 1);
    ca.keep_windows = 1;
    const int64_t shape[] = {n, R, C};
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_tensor out = pld_test_tensor(3, shape, 0, 0);
    pld_program *a, *b;
    assert_ok(pld_compile(h_add, &ca, PLD_ARGS(y, 3.0f), &a));
    pld_config cb = ca;
    cb.share = a;
    assert_ok(pld_compile(h_acc, &cb, PLD_ARGS(y), &b));
    pld_tensor state;
    assert_ok(pld_device_tensor_create(a, PLD_EACH_RANK, PLD_FP32, 2,
                                       (const int64_t[]){R, C}, &state));
    pld_tensor init = pld_test_tensor(3, shape, 0.5f, 0.25f);
    assert_ok(pld_device_tensor_write(state, init));
    assert_ok(pld_program_run(a, PLD_ARGS(y, 3.0f))); /* window: 3 */
    assert_ok(pld_program_run(b, PLD_ARGS(state)));   /* state += 3 */
    assert_ok(pld_device_tensor_read(state, out));
    const float *i0 = pld_tensor_data(init), *o = pld_tensor_data(out);
    for (int64_t e = 0; e < pld_tensor_numel(out); e++)
      assert_true(o[e] == i0[e] + 3.0f);
    pld_program_destroy(b);
    assert_ok(pld_program_run(a, PLD_ARGS(y, 1.0f)));
    expect_all(y, 4.0f, "A's window after B was destroyed");
    pld_tensor_destroy(state);
    pld_program_destroy(a);
    assert_no_children();
    pld_tensor_destroy(init);
    pld_tensor_destroy(y);
    pld_tensor_destroy(out);
  }
}

static void test_refusals(void **unused) {
  (void)unused;
  pld_config ca = test_config(ids, 3, 0, 1);
  const int64_t shape[] = {3, R, C};
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *a, *b = NULL;
  assert_ok(pld_compile(h_add, &ca, PLD_ARGS(y, 1.0f), &a));
  /* Other device ids. */
  pld_config cb = test_config(other, 3, 4, 1);
  cb.share = a;
  assert_fails_with(pld_compile(h_acc, &cb, PLD_ARGS(y), &b), PLD_ERR_CONFIG,
                    "pld_compile: cfg.share: expected the platform and "
                    "device ids of the program whose devices to share "
                    "(a2a3sim, 3 devices), got a2a3sim and 3 devices, other "
                    "ids");
  /* Other windows. */
  cb = ca;
  cb.share = a;
  assert_fails_with(pld_compile(h_two, &cb, PLD_ARGS(y), &b), PLD_ERR_CONFIG,
                    "pld_compile: cfg.share: programs sharing devices share "
                    "their windows: h_two declares 2 window buffers, h_add 1, "
                    "and they differ in number");
  /* The race check. */
  cb.check = "races";
  assert_fails_with(pld_compile(h_acc, &cb, PLD_ARGS(y), &b),
                    PLD_ERR_UNSUPPORTED, "the race check does not follow");
  cb.check = NULL;
  /* A program destroyed while another shares it cannot be shared anew. */
  assert_ok(pld_compile(h_acc, &cb, PLD_ARGS(y), &b));
  pld_program_destroy(a);
  pld_program *c = NULL;
  assert_fails_with(pld_compile(h_acc, &cb, PLD_ARGS(y), &c), PLD_ERR_STATE,
                    "pld_compile: cfg.share: the program whose devices to "
                    "share was destroyed");
  assert_null(c);
  pld_program_destroy(b);
  assert_no_children();
  pld_tensor_destroy(y);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_interleaved),
    cmocka_unit_test(test_resident_of_the_first),
    cmocka_unit_test(test_refusals),
};

PLD_TEST_MAIN("share", tests)
