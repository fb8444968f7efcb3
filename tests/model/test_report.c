/* The timing model's report API and its refusals on real programs: NULL
 * arguments, a program with the model off, a report asked for before any
 * run, PLD_MODEL with a word it does not take, PLD_MODEL_OUT naming a
 * file that cannot be written, buffers too small for a modeled run
 * (PLD_MODEL_RECORDS); and a mixed kernel, which the model now takes as
 * two tasks. */
#include "pld_test.h"

#include <math.h>

#include "../host/programs.h"
#include "pld/mix.h"

/* h_scale (tests/host/programs.h) on 2 ranks with the model's settings
 * (pld_config.model and .model_out): the program, run once unless run is
 * 0; *st the run's status. */
static pld_program *scale_program(const char *model, const char *out, int run,
                                  int *st) {
  int ids[2];
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.model = model;
  cfg.model_out = out;
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p = NULL;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  *st = run ? pld_program_run(p, PLD_ARGS(x, y)) : PLD_OK;
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return p;
}

static void clear_env(void) {
  assert_int_equal(unsetenv("PLD_MODEL"), 0);
  assert_int_equal(unsetenv("PLD_MODEL_OUT"), 0);
}

static void test_null_arguments(void **state) {
  (void)state;
  clear_env();
  pld_model_report r;
  assert_fails_with(pld_program_model(NULL, &r), PLD_ERR_ARG,
                    "pld_program_model: p: expected a program, got NULL");
  int st;
  pld_program *p = scale_program("on", NULL, 1, &st);
  assert_ok(st);
  assert_fails_with(pld_program_model(p, NULL), PLD_ERR_ARG,
                    "pld_program_model: out: expected a report to fill, got "
                    "NULL");
  assert_ok(pld_program_model(p, &r));
  assert_int_equal(r.nranks, 2);
  assert_string_equal(r.platform, "a2a3sim");
  /* The summary of no report, and one cut to the buffer. */
  char line[16];
  size_t need = pld_model_summary(NULL, line, sizeof line);
  assert_int_equal(need, strlen("model: no report"));
  need = pld_model_summary(&r, line, sizeof line);
  assert_true(need > sizeof line - 1);
  assert_int_equal(strlen(line), sizeof line - 1);
  pld_program_destroy(p);
}

/* A program without parameters, run with no arguments at all (argv
 * NULL): modeled like any other. */
PLD_KERNEL(k_none, k) { (void)k; }
PLD_DEVICE(d_none, a) { pld_launch(a, k_none, 1); }
PLD_HOST(h_none, h) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_none, r);
}

static void test_no_arguments(void **state) {
  (void)state;
  clear_env();
  int ids[2];
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.model = "on";
  pld_program *p;
  assert_ok(pld_compile(h_none, &cfg, 0, NULL, &p));
  assert_ok(pld_program_run(p, 0, NULL));
  pld_model_report r;
  assert_ok(pld_program_model(p, &r));
  assert_int_equal(r.nranks, 2);
  assert_true(r.total_ns > 0);
  pld_program_destroy(p);
}

static void test_model_off(void **state) {
  (void)state;
  clear_env();
  int st;
  pld_program *p = scale_program(NULL, NULL, 1, &st);
  assert_ok(st);
  pld_model_report r;
  memset(&r, 0x5a, sizeof r);
  pld_model_report before = r;
  assert_fails_with(pld_program_model(p, &r), PLD_ERR_STATE,
                    "pld_program_model: the timing model is off for this "
                    "program: set PLD_MODEL=on or pld_config.model = \"on\"");
  assert_memory_equal(&r, &before, sizeof r); /* written only on success */
  pld_program_destroy(p);
  /* "off" is off too, whatever the environment says. */
  assert_int_equal(setenv("PLD_MODEL", "on", 1), 0);
  p = scale_program("off", NULL, 1, &st);
  assert_ok(st);
  assert_fails_with(pld_program_model(p, &r), PLD_ERR_STATE,
                    "the timing model is off");
  pld_program_destroy(p);
  clear_env();
}

static void test_before_any_run(void **state) {
  (void)state;
  clear_env();
  assert_int_equal(setenv("PLD_MODEL", "on", 1), 0);
  int st;
  pld_program *p = scale_program(NULL, NULL, 0, &st);
  pld_model_report r;
  assert_fails_with(pld_program_model(p, &r), PLD_ERR_STATE,
                    "pld_program_model: no modeled run yet: the report comes "
                    "with a run's successful end");
  pld_program_destroy(p);
  clear_env();
}

static void test_bogus_word(void **state) {
  (void)state;
  clear_env();
  assert_int_equal(setenv("PLD_MODEL", "bogus", 1), 0);
  pld_config cfg = PLD_CONFIG_INIT;
  assert_fails_with(compile_h_scale(cfg), PLD_ERR_CONFIG,
                    "pld_compile: environment: PLD_MODEL='bogus': expected "
                    "on or off");
  clear_env();
  cfg.model = "yes";
  assert_fails_with(compile_h_scale(cfg), PLD_ERR_CONFIG,
                    "pld_compile: timing model: pld_config.model",
                    "'yes': expected on or off");
}

static void test_out_unwritable(void **state) {
  (void)state;
  clear_env();
  int st;
  pld_program *p =
      scale_program(NULL, "/nonexistent-pld-dir/model.json", 1, &st);
  assert_fails_with(st, PLD_ERR_SYSTEM,
                    "timing model: cannot write the report to "
                    "'/nonexistent-pld-dir/model.json' (PLD_MODEL_OUT): No "
                    "such file or directory");
  pld_program_destroy(p);
  /* The environment's file the same way. */
  assert_int_equal(setenv("PLD_MODEL_OUT", "/nonexistent-pld-dir/e.json", 1),
                   0);
  p = scale_program(NULL, NULL, 1, &st);
  assert_fails_with(st, PLD_ERR_SYSTEM, "'/nonexistent-pld-dir/e.json'");
  pld_program_destroy(p);
  clear_env();
}

/* A block that records n[0] + 2 records of the model: a notify, n[0]
 * waits (none blocks) and its end.  The waits expect -i^2, which steps
 * by no constant from one to the next: the recorder folds none of them
 * into a loop.  With n[0] < 0, -n[0] waits expecting 1: a loop it folds
 * into a few records. */
PLD_KERNEL(k_waits, k, PLD_IN(n, INT32, 1), PLD_WINDOW(sig, INT32, 1)) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  const int32_t waits = (int32_t)pld_read(k, n, PLD_AT(0));
  pld_notify(k, sig, me, PLD_AT(0), 1, PLD_NOTIFY_SET);
  for (int32_t i = 0; i < (waits < 0 ? -waits : waits); i++)
    pld_wait(k, sig, PLD_AT(0), waits < 0 ? 1 : -i * i, PLD_WAIT_GE);
}

/* The modeled total of p's run with n[0] = n[1] = waits. */
static double waits_total(pld_program *p, pld_tensor n, int32_t waits) {
  int32_t *nv = pld_tensor_data(n);
  nv[0] = nv[1] = waits;
  assert_ok(pld_program_run(p, PLD_ARGS(n)));
  pld_model_report r;
  assert_ok(pld_program_model(p, &r));
  return r.total_ns;
}

PLD_DEVICE(d_waits, a, PLD_IN(n, INT32, 1), PLD_WINDOW(sig, INT32, 1)) {
  pld_launch(a, k_waits, 1, n, sig);
}

PLD_HOST(h_waits, h, PLD_IN(n, INT32, NR, 1)) {
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_waits, r, pld_slice(h, n, r),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(1)));
}

/* PLD_MODEL_RECORDS=64 (the least it takes) is 16 events a buffer, 16
 * packs of PLD__PACK_RECS (4) records: a block of exactly 64 records is
 * modeled, one of 65 fails its run naming the variable, rather than model
 * a part of the run; without the model the run is fine; a loop of 100000
 * waits fits, folded.  The tunables are
 * read once a process: this case comes first. */
static void test_model_records_too_few(void **state) {
  (void)state;
  clear_env();
  assert_int_equal(setenv("PLD_MODEL_RECORDS", "64", 1), 0);
  int ids[2];
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, 1};
  pld_tensor n;
  assert_ok(pld_tensor_create(PLD_INT32, 2, shape, &n));
  int32_t *nv = pld_tensor_data(n);
  nv[0] = nv[1] = 63; /* 65 records */
  assert_ok(pld_run(h_waits, &cfg, PLD_ARGS(n)));
  cfg.model = "on";
  pld_program *p;
  assert_ok(pld_compile(h_waits, &cfg, PLD_ARGS(n), &p));
  assert_fails_with(pld_program_run(p, PLD_ARGS(n)), PLD_ERR_CONFIG,
                    "timing model: rank ",
                    "recorded more than its buffer holds "
                    "(PLD_MODEL_RECORDS=64: 16 events of 4 records, short "
                    "by 1 events): raise PLD_MODEL_RECORDS");
  /* 64 records; and each wait costs the same, folded or not: 50000
   * more waits in a folded loop take 50000/31 times what 31 more take
   * unfolded. */
  const double t62 = waits_total(p, n, 62), t31 = waits_total(p, n, 31);
  const double f100k = waits_total(p, n, -100000);
  const double f50k = waits_total(p, n, -50000);
  assert_true(t62 > t31 && t31 > 0);
  const double want = (t62 - t31) * 50000.0 / 31.0;
  if (fabs(f100k - f50k - want) > want * 1e-6)
    fail_msg("50000 folded waits: %.3f ns, 31 unfolded ones' share %.3f ns",
             f100k - f50k, want);
  pld_program_destroy(p);
  pld_tensor_destroy(n);
  assert_int_equal(unsetenv("PLD_MODEL_RECORDS"), 0);
}

/* A mixed kernel: its cube part and vector parts in one block. */
enum { XR = 16, XC = 16 };

PLD_MIX_KERNEL(k_mixed, k, PLD_IN(x, FP32, XR, XC), PLD_OUT(y, FP32, XR, XC)) {
  if (pld_core_type_of(k) == PLD_CORE_CUBE)
    return;
  int32_t h = XR / pld_subblock_num(k), r0 = pld_subblock_idx(k) * h;
  pld_tile *t = pld_load(k, x, r0, 0, h, XC);
  pld_store(k, t, y, r0, 0);
}

PLD_DEVICE(d_mixed, a, PLD_IN(x, FP32, XR, XC), PLD_OUT(y, FP32, XR, XC)) {
  pld_launch(a, k_mixed, 1, x, y);
}

PLD_HOST(h_mixed, h, PLD_IN(x, FP32, NR, XR, XC),
         PLD_OUT(y, FP32, NR, XR, XC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_mixed, r, pld_slice(h, x, r), pld_slice(h, y, r));
}

/* A mixed kernel's launch is two tasks of the model, its cube parts and
 * its vector parts, started at once if at_once is set (docs/model.md);
 * the same report in every run. */
static void run_mixed(int at_once) {
  clear_env();
  int ids[2];
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.model = "on";
  const int64_t shape[] = {2, XR, XC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_mixed, &cfg, PLD_ARGS(x, y), &p));
  double total = 0;
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    pld_model_report r;
    assert_ok(pld_program_model(p, &r));
    assert_true(run == 0 || r.total_ns == total);
    total = r.total_ns;
    for (int q = 0; q < 2; q++) {
      const pld_model_rank *k = &r.ranks[q];
      assert_int_equal(k->ntasks, 2);
      for (int t = 0; t < 2; t++) {
        assert_int_equal(k->tasks[t].call, 0);
        assert_int_equal(k->tasks[t].task, t);
        assert_string_equal(k->tasks[t].kernel, "k_mixed");
        assert_true(k->tasks[t].blocks >= 1);
      }
      assert_int_equal(k->tasks[0].type, PLD_CORE_CUBE);
      assert_int_equal(k->tasks[1].type, PLD_CORE_VECTOR);
      /* The parts start at once (docs/model.md): see CMakeLists.txt. */
      if (at_once)
        assert_true(k->tasks[0].start_ns == k->tasks[1].start_ns);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_mixed_modeled(void **state) {
  (void)state;
  run_mixed(0);
}

static void test_mixed_parts_at_once(void **state) {
  (void)state;
  run_mixed(1);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_model_records_too_few),
    cmocka_unit_test(test_null_arguments),
    cmocka_unit_test(test_model_off),
    cmocka_unit_test(test_no_arguments),
    cmocka_unit_test(test_before_any_run),
    cmocka_unit_test(test_bogus_word),
    cmocka_unit_test(test_out_unwritable),
    cmocka_unit_test(test_mixed_modeled),
    cmocka_unit_test(test_mixed_parts_at_once),
};

PLD_TEST_MAIN("model_report", tests)
