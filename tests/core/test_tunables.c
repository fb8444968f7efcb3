/* The environment variables: strict parsing, ranges, and pld_compile
 * refusing a bad value.  The environment is read once per process, so each
 * case sets it before anything reads it; one CTest entry per case runs each
 * in a process of its own. */
#include <stdlib.h>

#include "pld_test.h"

#include "../host/programs.h"
#include "core/tunables.h"

/* Sets (or with NULL unsets) `name`, then compiles a small valid program
 * and returns pld_compile's status, its message left in place. */
static int compile_under(const char *name, const char *value) {
  if (value)
    assert_int_equal(setenv(name, value, 1), 0);
  else
    assert_int_equal(unsetenv(name), 0);
  int ids[2];
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p = NULL;
  int st = pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p);
  assert_true(st == PLD_OK ? p != NULL : p == NULL);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
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
  assert_fails_with(compile_under("PLD_WAIT_TIMEOUT_MS", v), PLD_ERR_CONFIG,
                    "PLD_WAIT_TIMEOUT_MS='7\\x01\\x0a\\'777",
                    "777'... (100000 bytes): expected a decimal integer",
                    "got something else");
  free(v);
  assert_null(strchr(pld_last_error(), '\n'));
  assert_true(strlen(pld_last_error()) < 512);
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
    cmocka_unit_test(test_unset_defaults),
    cmocka_unit_test(test_value_quoted_bounded),
};

PLD_TEST_MAIN("tunables", tests)
