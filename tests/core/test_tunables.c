/* The environment variables: strict parsing, ranges, and pld_compile
 * refusing a bad value.  The environment is read once per process, so each
 * case sets it before anything reads it; one CTest entry per case runs each
 * in a process of its own. */
#include <stdlib.h>

#include "pld_test.h"

#include "../host/programs.h"
#include "core/error.h"
#include "core/tunables.h"

/* Sets (or with NULL unsets) `name`, then compiles a small valid program
 * and returns pld_compile's status, its message left in place. */
static int compile_under(const char *name, const char *value) {
  if (value)
    assert_int_equal(setenv(name, value, 1), 0);
  else
    assert_int_equal(unsetenv(name), 0);
  pld_config cfg = PLD_CONFIG_INIT;
  return compile_h_scale(cfg);
}

/* The tunable `name` as pld-env sees it. */
static struct pld__tunable found;
static const char *wanted;
static void find(const struct pld__tunable *t) {
  if (!strcmp(t->name, wanted))
    found = *t;
}
static struct pld__tunable tunable(const char *name) {
  wanted = name;
  found.name = NULL;
  pld__tunables_each(find);
  assert_non_null(found.name);
  return found;
}

/* name=value makes pld_compile fail with exactly `message`; the default
 * stays in force, and pld-env gives the same refusal. */
static void refused(const char *name, const char *value, const char *message) {
  assert_fails_with(compile_under(name, value), PLD_ERR_CONFIG, message);
  assert_string_equal(pld_last_error(), message);
  struct pld__tunable t = tunable(name);
  assert_int_equal(t.value, t.def);
  assert_non_null(t.refusal);
  assert_string_equal(t.refusal, message + strlen("pld_compile: "));
}

/* name=value compiles, and is the value in force. */
static void accepted(const char *name, const char *value, long long want) {
  assert_ok(compile_under(name, value));
  struct pld__tunable t = tunable(name);
  assert_int_equal(t.value, want);
  assert_null(t.refusal);
}

#define SPIN_RANGE                                                             \
  "expected a decimal integer in [0, 1000000] (microseconds), got "
#define TIMEOUT_RANGE                                                          \
  "expected a decimal integer in [0, 86400000] (milliseconds), got "

static void test_spin_us_not_integer(void **state) {
  (void)state;
  refused("PLD_SPIN_US", "abc",
          "pld_compile: environment: PLD_SPIN_US='abc': " SPIN_RANGE
          "something else");
}

static void test_spin_us_negative(void **state) {
  (void)state;
  refused("PLD_SPIN_US", "-1",
          "pld_compile: environment: PLD_SPIN_US='-1': " SPIN_RANGE
          "a number below 0");
}

/* Beyond 64 bits: out of range, not clamped or wrapped. */
static void test_spin_us_overflow(void **state) {
  (void)state;
  refused("PLD_SPIN_US", "99999999999999999999",
          "pld_compile: environment: "
          "PLD_SPIN_US='99999999999999999999': " SPIN_RANGE
          "a number above 1000000");
}

static void test_spin_us_empty(void **state) {
  (void)state;
  refused("PLD_SPIN_US", "",
          "pld_compile: environment: PLD_SPIN_US='': " SPIN_RANGE
          "an empty value (unset it for the default, 50)");
}

static void test_spin_us_one_past_max(void **state) {
  (void)state;
  refused("PLD_SPIN_US", "1000001",
          "pld_compile: environment: PLD_SPIN_US='1000001': " SPIN_RANGE
          "a number above 1000000");
}

/* Whitespace is refused rather than trimmed (see core/tunables.h). */
static void test_spin_us_space(void **state) {
  (void)state;
  refused("PLD_SPIN_US", " 5",
          "pld_compile: environment: PLD_SPIN_US=' 5': " SPIN_RANGE
          "something else");
}

static void test_spin_us_max(void **state) {
  (void)state;
  accepted("PLD_SPIN_US", "1000000", 1000000);
}

static void test_spin_us_zero(void **state) {
  (void)state;
  accepted("PLD_SPIN_US", "0", 0);
}

static void test_wait_timeout_trailing(void **state) {
  (void)state;
  refused("PLD_WAIT_TIMEOUT_MS", "1x",
          "pld_compile: environment: PLD_WAIT_TIMEOUT_MS='1x': " TIMEOUT_RANGE
          "something else");
}

static void test_kernel_timeout_negative(void **state) {
  (void)state;
  refused("PLD_KERNEL_TIMEOUT_MS", "-5",
          "pld_compile: environment: PLD_KERNEL_TIMEOUT_MS='-5': " TIMEOUT_RANGE
          "a number below 0");
}

static void test_kernel_timeout_max(void **state) {
  (void)state;
  accepted("PLD_KERNEL_TIMEOUT_MS", "86400000", 86400000);
}

static void test_kernel_timeout_one_past_max(void **state) {
  (void)state;
  refused("PLD_KERNEL_TIMEOUT_MS", "86400001",
          "pld_compile: environment: "
          "PLD_KERNEL_TIMEOUT_MS='86400001': " TIMEOUT_RANGE
          "a number above 86400000");
}

/* A negative least value: itself accepted, one below it refused. */
static void test_stream_copy_min(void **state) {
  (void)state;
  accepted("PLD_STREAM_COPY_KB", "-1", -1);
}

static void test_stream_copy_one_below_min(void **state) {
  (void)state;
  refused("PLD_STREAM_COPY_KB", "-2",
          "pld_compile: environment: PLD_STREAM_COPY_KB='-2': expected a "
          "decimal integer in [-1, 1073741824] (KiB), got a number below -1");
}

static void test_unset_defaults(void **state) {
  (void)state;
  assert_int_equal(unsetenv("PLD_SPIN_US"), 0);
  assert_int_equal(unsetenv("PLD_WAIT_TIMEOUT_MS"), 0);
  assert_ok(compile_under("PLD_KERNEL_TIMEOUT_MS", NULL));
  const struct pld__tunables *t = pld__tunables();
  assert_int_equal(t->PLD_SPIN_US, 50);
  assert_int_equal(t->PLD_WAIT_TIMEOUT_MS, 60000);
  assert_int_equal(t->PLD_KERNEL_TIMEOUT_MS, 60000);
  assert_null(tunable("PLD_SPIN_US").given);
}

/* A huge value with bytes that are not text is quoted escaped and cut
 * short, so the message stays one readable line. */
static void test_value_quoted_bounded(void **state) {
  (void)state;
  enum { LEN = 100000 };
  char *v = malloc(LEN + 1);
  assert_non_null(v);
  memset(v, '7', LEN);
  v[1] = '\x01';
  v[2] = '\n';
  v[3] = '\'';
  v[LEN] = '\0';
  /* The first 64 bytes: 4 written out above, then 60 sevens. */
  char want[160] = "PLD_WAIT_TIMEOUT_MS='7\\x01\\x0a\\'";
  size_t at = strlen(want);
  memset(want + at, '7', 60);
  strcpy(want + at + 60, "'... (100000 bytes): expected a decimal integer");
  assert_fails_with(compile_under("PLD_WAIT_TIMEOUT_MS", v), PLD_ERR_CONFIG,
                    want, "got something else");
  free(v);
  assert_null(strchr(pld_last_error(), '\n'));
  assert_true(strlen(pld_last_error()) < 512);
}

/* ---- the settings: words checked where they are used, and by pld-env ---- */

/* name=value makes pld_compile fail with exactly `message`, and the
 * settings' own check (pld-env's) gives the same refusal. */
static void setting_refused(enum pld__setting_id id, const char *value,
                            const char *message) {
  assert_fails_with(compile_under(pld__setting_name(id), value), PLD_ERR_CONFIG,
                    message);
  assert_string_equal(pld_last_error(), message);
  char why[1024];
  assert_true(pld__setting_refused(id, value, why, sizeof why));
  assert_string_equal(why, message + strlen("pld_compile: environment: "));
}

static void test_setting_fabric_refused(void **state) {
  (void)state;
  setting_refused(PLD__SET_FABRIC, "tcp",
                  "pld_compile: environment: PLD_FABRIC='tcp': expected shm "
                  "or mpi");
}

/* Only empty where empty means unset: PLD_FABRIC has no such meaning. */
static void test_setting_fabric_empty_refused(void **state) {
  (void)state;
  setting_refused(PLD__SET_FABRIC, "",
                  "pld_compile: environment: PLD_FABRIC='': expected shm or "
                  "mpi");
}

static void test_setting_same_node_refused(void **state) {
  (void)state;
  setting_refused(PLD__SET_MPI_SAME_NODE, "shmem",
                  "pld_compile: environment: PLD_MPI_SAME_NODE='shmem': "
                  "expected shm or rma");
}

static void test_setting_check_refused(void **state) {
  (void)state;
  setting_refused(PLD__SET_CHECK, "race",
                  "pld_compile: environment: PLD_CHECK='race': expected "
                  "races");
}

/* The first word of the list that is none is named; a prefix of a word
 * is no word. */
static void test_setting_debug_refused(void **state) {
  (void)state;
  assert_fails_with(compile_under("PLD_DEBUG", "launch,rm,coll"),
                    PLD_ERR_CONFIG,
                    "pld_compile: debug log: PLD_DEBUG='launch,rm,coll': "
                    "expected a comma-separated list of launch, signal, rma, "
                    "coll, fabric, host or all, got 'rm'");
  char why[1024];
  assert_true(
      pld__setting_refused(PLD__SET_DEBUG, "rma,,coll", why, sizeof why));
  assert_string_equal(why, "PLD_DEBUG='rma,,coll': expected a "
                           "comma-separated list of launch, signal, rma, "
                           "coll, fabric, host or all, got ''");
}

/* Every word, a list ending in a comma, and empty where empty is unset. */
static void test_setting_accepted(void **state) {
  (void)state;
  char why[1024];
  static const char *const fabric[] = {"shm", "mpi"};
  for (int i = 0; i < 2; i++) {
    assert_false(
        pld__setting_refused(PLD__SET_FABRIC, fabric[i], why, sizeof why));
    assert_int_equal(pld__setting_word(PLD__SET_FABRIC, fabric[i], 3), i);
  }
  assert_int_equal(pld__setting_word(PLD__SET_FABRIC, "shmx", 4), -1);
  assert_int_equal(pld__setting_word(PLD__SET_FABRIC, "sh", 2), -1);
  assert_false(pld__setting_refused(PLD__SET_DEBUG,
                                    "launch,signal,rma,coll,fabric,host,all",
                                    why, sizeof why));
  assert_false(pld__setting_refused(PLD__SET_DEBUG, "rma,", why, sizeof why));
  assert_false(pld__setting_refused(PLD__SET_DEBUG, "", why, sizeof why));
  assert_false(pld__setting_refused(PLD__SET_CHECK, "", why, sizeof why));
  assert_false(pld__setting_refused(PLD__SET_ISA, "auto", why, sizeof why));
  assert_false(pld__setting_refused(PLD__SET_TRACE, "x,y", why, sizeof why));
  assert_ok(compile_under("PLD_DEBUG", "rma,"));
  assert_ok(compile_under("PLD_CHECK", ""));
}

/* ---- the call context: messages of shared code name the public call ---- */

static void test_call_context(void **state) {
  (void)state;
  assert_string_equal(pld__api_name(), "pld");
  const char *outer = pld__api_enter("pld_program_run");
  const char *inner = pld__api_enter("pld_program_prepare");
  assert_int_equal(pld__fail_api(PLD_ERR_NOMEM, "out of memory (%d)", 7),
                   PLD_ERR_NOMEM);
  assert_string_equal(pld_last_error(),
                      "pld_program_prepare: out of memory (7)");
  pld__api_leave(inner);
  /* The message may quote the last one. */
  pld__fail_api(PLD_ERR_STATE, "%s", pld_last_error());
  assert_string_equal(
      pld_last_error(),
      "pld_program_run: pld_program_prepare: out of memory (7)");
  pld__api_leave(outer);
  assert_string_equal(pld__api_name(), "pld");
}

/* A public function leaves its context on every way out, failure too. */
static void test_call_context_left(void **state) {
  (void)state;
  assert_fails_with(compile_under("PLD_FABRIC", "tcp"), PLD_ERR_CONFIG,
                    "pld_compile: environment: PLD_FABRIC");
  assert_string_equal(pld__api_name(), "pld");
  assert_int_equal(pld_program_prepare(NULL), PLD_ERR_ARG);
  assert_string_equal(pld_last_error(),
                      "pld_program_prepare: p: expected a program, got NULL");
  assert_string_equal(pld__api_name(), "pld");
  assert_int_equal(pld_program_run(NULL, 0, NULL), PLD_ERR_ARG);
  assert_string_equal(pld_last_error(),
                      "pld_program_run: p: expected a program, got NULL");
  assert_string_equal(pld__api_name(), "pld");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_spin_us_not_integer),
    cmocka_unit_test(test_spin_us_negative),
    cmocka_unit_test(test_spin_us_overflow),
    cmocka_unit_test(test_spin_us_empty),
    cmocka_unit_test(test_spin_us_one_past_max),
    cmocka_unit_test(test_spin_us_space),
    cmocka_unit_test(test_spin_us_max),
    cmocka_unit_test(test_spin_us_zero),
    cmocka_unit_test(test_wait_timeout_trailing),
    cmocka_unit_test(test_kernel_timeout_negative),
    cmocka_unit_test(test_kernel_timeout_max),
    cmocka_unit_test(test_kernel_timeout_one_past_max),
    cmocka_unit_test(test_stream_copy_min),
    cmocka_unit_test(test_stream_copy_one_below_min),
    cmocka_unit_test(test_unset_defaults),
    cmocka_unit_test(test_value_quoted_bounded),
    cmocka_unit_test(test_setting_fabric_refused),
    cmocka_unit_test(test_setting_fabric_empty_refused),
    cmocka_unit_test(test_setting_same_node_refused),
    cmocka_unit_test(test_setting_check_refused),
    cmocka_unit_test(test_setting_debug_refused),
    cmocka_unit_test(test_setting_accepted),
    cmocka_unit_test(test_call_context),
    cmocka_unit_test(test_call_context_left),
};

PLD_TEST_MAIN("tunables", tests)
