/* pld_kernel_fail on one simulated core: the block's status and message
 * (its identity in the words of the library's own kernel failures), the
 * status replaced when it is no error, the first failure kept, later calls
 * refused without effect, and a long message cut.  Whole runs are in
 * tests/comm/test_kernel_fail.c. */
#include <string.h>

#include "test_main.h"
#include "tile_test.h"

/* The core's message is exactly `want`. */
static void assert_msg(pld_core k, const char *want) {
  if (strcmp(k.p->msg, want) != 0)
    fail_msg("message \"%s\", expected \"%s\"", k.p->msg, want);
}

/* The message of the example, word for word, with its status. */
static void test_message_names_the_block(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  c.spec.index = 2;
  pld__core_begin(&c, "check_counts", 1, 1, 2, 4);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_BOUNDS,
                                   "expert %d received %d rows, expected %d", 3,
                                   7, 6),
                   PLD_ERR_BOUNDS);
  assert_int_equal(c.status, PLD_ERR_BOUNDS);
  assert_msg(k, "pld_kernel_fail: kernel check_counts (rank 1, device 1, AIV "
                "core 2, block 2 of 4): expert 3 received 7 rows, expected 6");
  /* The next block of the core starts clean and is named as itself. */
  c.spec.index = 0;
  pld__core_begin(&c, "other", 3, 7, 0, 1);
  assert_int_equal(c.status, PLD_OK);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_STATE, "%s", "plain"),
                   PLD_ERR_STATE);
  assert_msg(k, "pld_kernel_fail: kernel other (rank 3, device 7, AIV core 0, "
                "block 0 of 1): plain");
  tt_core_release(&c);
}

static void test_cube_core(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_cube_core(&c);
  c.spec.index = 1;
  pld__core_begin(&c, "mm", 0, 4, 3, 8);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_UNSUPPORTED, "k = %lld", 17LL),
                   PLD_ERR_UNSUPPORTED);
  assert_msg(k, "pld_kernel_fail: kernel mm (rank 0, device 4, AIC core 1, "
                "block 3 of 8): k = 17");
  tt_core_release(&c);
}

/* PLD_OK, or a code that is no pld status, fails with PLD_ERR_ARG. */
static void test_no_error_status_is_arg(void **state) {
  (void)state;
  static const int given[] = {PLD_OK, -1, 9999, PLD_ERR_CANCELLED + 1};
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    assert_int_equal(pld_kernel_fail(k, given[i], "given %d", given[i]),
                     PLD_ERR_ARG);
    tt_assert_failed(k, PLD_ERR_ARG, "pld_kernel_fail: kernel k", "given ",
                     NULL);
  }
  /* Every status of the table is kept as given. */
  for (int st = PLD_ERR_ARG; st <= PLD_ERR_CANCELLED; st++) {
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    assert_int_equal(pld_kernel_fail(k, st, "as given"), st);
    assert_int_equal(c.status, st);
  }
  /* No format: a message still. */
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_ARG, NULL), PLD_ERR_ARG);
  assert_msg(k, "pld_kernel_fail: kernel k (rank 0, device 0, AIV core 0, "
                "block 0 of 1): (no message)");
  tt_core_release(&c);
}

/* The first failure wins, a kernel's own or the library's, and every
 * later call returns it without doing anything. */
static void test_first_failure_is_sticky(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor out = tt_tensor(PLD_FP32, 2, 8, PLD_DIR_OUT, "out");
  pld_tile *t = pld_full(k, PLD_FP32, 2, 8, 5.0);
  assert_non_null(t);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_BOUNDS, "first %d", 1),
                   PLD_ERR_BOUNDS);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_STATE, "second %d", 2),
                   PLD_ERR_BOUNDS);
  assert_int_equal(pld_store(k, t, out, 0, 0), PLD_ERR_BOUNDS);
  assert_int_equal(pld_fill(k, t, 1.0), PLD_ERR_BOUNDS);
  assert_null(pld_full(k, PLD_FP32, 1, 8, 2.0));
  for (size_t i = 0; i < 16; i++)
    assert_true(tt_get(out, i) == 0.0); /* the store wrote nothing */
  assert_msg(k, "pld_kernel_fail: kernel k (rank 0, device 0, AIV core 0, "
                "block 0 of 1): first 1");
  assert_int_equal(c.status, PLD_ERR_BOUNDS);

  /* A library failure first: pld_kernel_fail returns it, message kept. */
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  t = pld_full(k, PLD_FP32, 2, 8, 5.0);
  assert_int_equal(pld_store(k, t, out, 1, 0), PLD_ERR_BOUNDS);
  char before[PLD__MSG_MAX];
  memcpy(before, c.msg, sizeof before);
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_STATE, "mine"), PLD_ERR_BOUNDS);
  assert_string_equal(c.msg, before);
  tt_assert_failed(k, PLD_ERR_BOUNDS, "pld_store: kernel k", NULL);
  pld_tensor_destroy(out);
  tt_core_release(&c);
}

/* A message longer than the buffer is cut there, the block's identity
 * first and whole. */
static void test_long_message_is_cut(void **state) {
  (void)state;
  enum { LONG = 3 * PLD__MSG_MAX };
  static char text[LONG + 8];
  memset(text, 'x', LONG);
  memcpy(text + LONG, "END", 4);
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  /* The bytes after the message buffer: nothing may reach them. */
  static struct {
    struct pld__core core;
    unsigned char guard[64];
  } wrapped;
  memset(wrapped.guard, 0xA5, sizeof wrapped.guard);
  wrapped.core = c;
  k.p = &wrapped.core;
  assert_int_equal(pld_kernel_fail(k, PLD_ERR_ARG, "%s", text), PLD_ERR_ARG);
  const char *head = "pld_kernel_fail: kernel k (rank 0, device 0, AIV core "
                     "0, block 0 of 1): xxxx";
  assert_memory_equal(wrapped.core.msg, head, strlen(head));
  assert_int_equal(strlen(wrapped.core.msg), PLD__MSG_MAX - 1);
  assert_null(strstr(wrapped.core.msg, "END"));
  for (size_t i = 0; i < sizeof wrapped.guard; i++)
    assert_int_equal(wrapped.guard[i], 0xA5);
  tt_core_release(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_message_names_the_block),
    cmocka_unit_test(test_cube_core),
    cmocka_unit_test(test_no_error_status_is_arg),
    cmocka_unit_test(test_first_failure_is_sticky),
    cmocka_unit_test(test_long_message_is_cut),
};

PLD_TEST_MAIN("kernel_fail", tests)
