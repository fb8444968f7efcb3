/* pld_kernel_fail in whole runs, on 2, 3 and 4 ranks (and under mpirun):
 * one block of one rank fails with its own message while the other ranks
 * wait for it or finish; the run returns that status and the message
 * naming rank, device, kernel, core and block; the first of two failures
 * wins; a status that is no error becomes PLD_ERR_ARG; cube kernels fail
 * the same way; a long message is cut; and the program runs correctly
 * afterwards.  The calls on one core are in tests/tile/test_kernel_fail.c. */
#include "comm_test.h"
#include "core/error.h"

enum { KB = 4, KR = 2, KC = 8, CB = 2 };
/* ctl: the rank and block that fail, how, and with what status. */
enum { CTL_RANK, CTL_BLOCK, CTL_MODE, CTL_STATUS, NCTL };
enum { M_NONE, M_FAIL, M_TWICE, M_LONG, M_CUBE };
/* What y and z hold before a run: a run that writes nothing shows. */
static const float sentinel = -7.0f;

/* Longer than any message: cut, never overflowing. */
enum { LONG_TEXT = 3 * PLD__MSG_MAX };
static char long_text[LONG_TEXT + 8];

/* Each block b copies rows [b * KR, (b + 1) * KR) of x times (rank + 1)
 * into y.  The failing block fails after its load, then notifies every
 * rank and stores its rows: both refused (a failed run's outputs do not
 * reach the host, so that the store did nothing is checked on one core, in
 * tests/tile/test_kernel_fail.c), while block 0 of every other rank waits
 * for the notify until the failure stops it. */
#define CHECK_PARAMS                                                           \
  PLD_IN(ctl, INT32, NCTL), PLD_IN(x, FP32, KB *KR, KC),                       \
      PLD_OUT(y, FP32, KB *KR, KC), PLD_WINDOW(sig, INT32, 1),                 \
      PLD_SCALAR(rank, INT32)

PLD_KERNEL(k_check, k, CHECK_PARAMS) {
  int32_t b = pld_block_idx(k), n = pld_nranks(k, pld_window_comm(sig));
  int bad_rank = (int)pld_read(k, ctl, PLD_AT(CTL_RANK));
  int bad = rank == bad_rank && b == (int)pld_read(k, ctl, PLD_AT(CTL_BLOCK));
  int mode = (int)pld_read(k, ctl, PLD_AT(CTL_MODE));
  int status = (int)pld_read(k, ctl, PLD_AT(CTL_STATUS));
  pld_tile *t = pld_load(k, x, b * KR, 0, KR, KC);
  pld_muls(k, t, t, (double)(rank + 1));
  if (bad && mode == M_LONG) {
    memset(long_text, 'x', LONG_TEXT);
    memcpy(long_text + LONG_TEXT, "END", 4);
    pld_kernel_fail(k, status, "%s", long_text);
  } else if (bad && (mode == M_FAIL || mode == M_TWICE)) {
    pld_kernel_fail(k, status, "expert %d received %d rows, expected %d",
                    (int)b + 1, 7, 6);
    if (mode == M_TWICE)
      pld_kernel_fail(k, PLD_ERR_BOUNDS, "second failure of block %d", (int)b);
  }
  if (bad && mode != M_NONE && mode != M_CUBE)
    for (int32_t p = 0; p < n; p++)
      pld_notify(k, sig, p, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  else if (mode != M_NONE && mode != M_CUBE && rank != bad_rank && b == 0)
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_store(k, t, y, b * KR, 0);
}

/* Each block copies its rows of x into z; the failing one fails first. */
PLD_CUBE_KERNEL(k_cube_check, k, PLD_IN(ctl, INT32, NCTL),
                PLD_IN(x, FP32, KB *KR, KC), PLD_OUT(z, FP32, CB *KR, KC),
                PLD_SCALAR(rank, INT32)) {
  int32_t b = pld_block_idx(k);
  if ((int)pld_read(k, ctl, PLD_AT(CTL_MODE)) == M_CUBE &&
      rank == (int)pld_read(k, ctl, PLD_AT(CTL_RANK)) &&
      b == (int)pld_read(k, ctl, PLD_AT(CTL_BLOCK)) % CB)
    pld_kernel_fail(k, (int)pld_read(k, ctl, PLD_AT(CTL_STATUS)),
                    "cube block %d of rank %d", (int)b, rank);
  pld_tile *t = pld_load(k, x, b * KR, 0, KR, KC);
  pld_store(k, t, z, b * KR, 0);
}

PLD_DEVICE(d_check, a, CHECK_PARAMS, PLD_OUT(z, FP32, CB *KR, KC)) {
  pld_launch(a, k_check, KB, ctl, x, y, sig, rank);
  pld_launch(a, k_cube_check, CB, ctl, x, z, rank);
}

PLD_HOST(h_check, h, PLD_IN(ctl, INT32, NCTL), PLD_IN(x, FP32, NR, KB *KR, KC),
         PLD_OUT(y, FP32, NR, KB *KR, KC), PLD_OUT(z, FP32, NR, CB *KR, KC)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_check, r, ctl, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1)), r,
                 pld_slice(h, z, r));
}

struct check {
  int n;
  pld_config cfg;
  pld_tensor ctl, x, y, z;
  pld_program *p;
};

static void check_init(struct check *c, int n) {
  c->n = n;
  c->cfg = comm_config(n);
  c->ctl = comm_int_tensor(0, 1, (int64_t[]){NCTL});
  c->x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, KB * KR, KC});
  float *xs = pld_tensor_data(c->x);
  for (int64_t i = 0; i < pld_tensor_numel(c->x); i++)
    xs[i] = (float)(i % 97) - 40.0f;
  c->y = comm_tensor(PLD_FP32, 3, (int64_t[]){n, KB * KR, KC});
  c->z = comm_tensor(PLD_FP32, 3, (int64_t[]){n, CB * KR, KC});
  assert_ok(
      pld_compile(h_check, &c->cfg, PLD_ARGS(c->ctl, c->x, c->y, c->z), &c->p));
}

static void check_free(struct check *c) {
  pld_program_destroy(c->p);
  if (pld_process_count() == 1)
    assert_no_children();
  pld_tensor_destroy(c->ctl);
  pld_tensor_destroy(c->x);
  pld_tensor_destroy(c->y);
  pld_tensor_destroy(c->z);
}

static int check_run(struct check *c, int bad_rank, int bad_block, int mode,
                     int status) {
  int32_t *ctl = pld_tensor_data(c->ctl);
  ctl[CTL_RANK] = bad_rank, ctl[CTL_BLOCK] = bad_block;
  ctl[CTL_MODE] = mode, ctl[CTL_STATUS] = status;
  float *y = pld_tensor_data(c->y), *z = pld_tensor_data(c->z);
  for (int64_t i = 0; i < pld_tensor_numel(c->y); i++)
    y[i] = sentinel;
  for (int64_t i = 0; i < pld_tensor_numel(c->z); i++)
    z[i] = sentinel;
  return pld_program_run(c->p, PLD_ARGS(c->ctl, c->x, c->y, c->z));
}

/* A run with no failure: y = x * (rank + 1) and z = x's first rows. */
static void runs_correctly(struct check *c) {
  assert_ok(check_run(c, 0, 0, M_NONE, 0));
  const float *xs = pld_tensor_data(c->x), *ys = pld_tensor_data(c->y),
              *zs = pld_tensor_data(c->z);
  const int64_t per = KB * KR * KC, zper = CB * KR * KC;
  for (int r = 0; r < c->n; r++) {
    float want_y[KB * KR * KC];
    for (int64_t i = 0; i < per; i++)
      want_y[i] = xs[r * per + i] * (float)(r + 1);
    comm_expect_f32("y", ys + r * per, want_y, per);
    comm_expect_f32("z", zs + r * zper, xs + r * per, zper);
  }
}

/* The run failed with `status` and the message of block `block` of
 * `blocks` of `kernel` on rank `rank`, on a core of `core_type` ("AIV",
 * "AIC") whose index is below `blocks`, followed by `text`. */
static void assert_block_failed(const struct check *c, int got, int status,
                                const char *kernel, int rank,
                                const char *core_type, int block, int blocks,
                                const char *text) {
  char who[160], where[96];
  snprintf(who, sizeof who,
           "pld_kernel_fail: kernel %s (rank %d, device %d, %s core ", kernel,
           rank, c->cfg.device_ids[rank], core_type);
  snprintf(where, sizeof where, ", block %d of %d): %s", block, blocks, text);
  const char *subs[] = {who, where, NULL};
  pld_test_assert_fails(got, status, __FILE__, __LINE__, subs);
  /* The core: a number, then the block, in one piece of the message. */
  const char *msg = pld_last_error(), *at = strstr(msg, who) + strlen(who);
  char *end;
  long core = strtol(at, &end, 10);
  if (end == at || core < 0 || core >= blocks || strncmp(end, where, 8) != 0)
    fail_msg("no core index below %d before \"%s\": %s", blocks, where, msg);
}

/* The rank and block that fail on n ranks: rank 0 somewhere, never always
 * the last rank or block 0. */
static int bad_rank_of(int n) { return n == 3 ? 0 : n - 1; }
static int bad_block_of(int n) { return n - 1; }

static void fails_with_its_message(int n) {
  struct check c;
  check_init(&c, n);
  runs_correctly(&c);
  const int rank = bad_rank_of(n), block = bad_block_of(n);
  char text[64];
  snprintf(text, sizeof text, "expert %d received 7 rows, expected 6",
           block + 1);
  for (int round = 0; round < 2; round++) {
    assert_block_failed(&c, check_run(&c, rank, block, M_FAIL, PLD_ERR_BOUNDS),
                        PLD_ERR_BOUNDS, "k_check", rank, "AIV", block, KB,
                        text);
    runs_correctly(&c);
  }
  check_free(&c);
}

static void test_fails_with_its_message(void **state) {
  (void)state;
  comm_over_rank_counts(fails_with_its_message);
}

/* The first failure of the block wins; the second is not in the message. */
static void first_failure_wins(int n) {
  struct check c;
  check_init(&c, n);
  const int rank = (bad_rank_of(n) + 1) % n, block = 0;
  assert_block_failed(&c,
                      check_run(&c, rank, block, M_TWICE, PLD_ERR_UNSUPPORTED),
                      PLD_ERR_UNSUPPORTED, "k_check", rank, "AIV", block, KB,
                      "expert 1 received 7 rows, expected 6");
  if (strstr(pld_last_error(), "second failure"))
    fail_msg("the second failure reached the message: %s", pld_last_error());
  runs_correctly(&c);
  check_free(&c);
}

static void test_first_failure_wins(void **state) {
  (void)state;
  comm_over_rank_counts(first_failure_wins);
}

/* PLD_OK, or a code that is no pld status, fails the run with
 * PLD_ERR_ARG. */
static void no_error_status_is_arg(int n) {
  struct check c;
  check_init(&c, n);
  const int rank = n - 1;
  static const int given[] = {PLD_OK, 4242, -3};
  for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
    assert_block_failed(&c, check_run(&c, rank, 1, M_FAIL, given[i]),
                        PLD_ERR_ARG, "k_check", rank, "AIV", 1, KB,
                        "expert 2 received 7 rows, expected 6");
    runs_correctly(&c);
  }
  check_free(&c);
}

static void test_no_error_status_is_arg(void **state) {
  (void)state;
  comm_over_rank_counts(no_error_status_is_arg);
}

/* A cube kernel fails the same way, named on its AIC core. */
static void cube_kernel_fails(int n) {
  struct check c;
  check_init(&c, n);
  const int rank = bad_rank_of(n), block = bad_block_of(n) % CB;
  char text[64];
  snprintf(text, sizeof text, "cube block %d of rank %d", block, rank);
  assert_block_failed(&c, check_run(&c, rank, block, M_CUBE, PLD_ERR_LEVEL),
                      PLD_ERR_LEVEL, "k_cube_check", rank, "AIC", block, CB,
                      text);
  runs_correctly(&c);
  check_free(&c);
}

static void test_cube_kernel_fails(void **state) {
  (void)state;
  comm_over_rank_counts(cube_kernel_fails);
}

/* A message longer than any message is cut: the block's identity whole,
 * then as much of the text as fits. */
static void long_message_is_cut(int n) {
  struct check c;
  check_init(&c, n);
  const int rank = bad_rank_of(n);
  assert_block_failed(&c, check_run(&c, rank, 2, M_LONG, PLD_ERR_NOMEM),
                      PLD_ERR_NOMEM, "k_check", rank, "AIV", 2, KB,
                      "xxxxxxxxxxxxxxxx");
  const char *msg = pld_last_error();
  assert_true(strlen(msg) < PLD__MSG_MAX);
  assert_true(strlen(msg) > PLD__MSG_MAX / 2);
  assert_null(strstr(msg, "END"));
  runs_correctly(&c);
  check_free(&c);
}

static void test_long_message_is_cut(void **state) {
  (void)state;
  comm_over_rank_counts(long_message_is_cut);
}

/* A block that returns with a prefetch in flight (pld_prefetch, no
 * pld_prefetch_wait) fails its run, named like any kernel failure; with
 * the wait, the same kernel copies x. */
PLD_KERNEL(k_prefetch_left, k, PLD_IN(x, FP32, KR, KC),
           PLD_OUT(y, FP32, KR, KC), PLD_SCALAR(waits, INT32)) {
  pld_tile *t = pld_tile_new(k, PLD_FP32, KR, KC);
  pld_prefetch(k, t, x, 0, 0);
  if (waits) {
    pld_prefetch_wait(k, t);
    pld_store(k, t, y, 0, 0);
  }
}
PLD_DEVICE(d_prefetch_left, a, PLD_IN(x, FP32, KR, KC),
           PLD_OUT(y, FP32, KR, KC), PLD_SCALAR(waits, INT32)) {
  pld_launch(a, k_prefetch_left, 1, x, y, waits);
}
PLD_HOST(h_prefetch_left, h, PLD_IN(x, FP32, NR, KR, KC),
         PLD_OUT(y, FP32, NR, KR, KC), PLD_SCALAR(waits, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_prefetch_left, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 waits);
}

static void prefetch_left_in_flight(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor x = comm_tensor(PLD_FP32, PLD_SHAPE(n, KR, KC));
  pld_tensor y = comm_tensor(PLD_FP32, PLD_SHAPE(n, KR, KC));
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (float)(i * 3 - 50);
  pld_program *p;
  int32_t waits = 1;
  assert_ok(pld_compile(h_prefetch_left, &cfg, PLD_ARGS(x, y, waits), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(x, y, waits)));
  comm_expect_f32("y = x", pld_tensor_data(y), xs, pld_tensor_numel(x));
  waits = 0;
  int st = pld_program_run(p, PLD_ARGS(x, y, waits));
  assert_int_equal(st, PLD_ERR_ARG);
  const char *msg = pld_last_error();
  if (!strstr(msg, "k_prefetch_left: kernel k_prefetch_left (rank ") ||
      !strstr(msg, "block 0 of 1): the block returned with 1 prefetch in "
                   "flight: wait for each (pld_prefetch_wait) before the "
                   "kernel returns"))
    fail_msg("unexpected message: %s", msg);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_prefetch_left_in_flight(void **state) {
  (void)state;
  comm_over_rank_counts(prefetch_left_in_flight);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fails_with_its_message),
    cmocka_unit_test(test_first_failure_wins),
    cmocka_unit_test(test_no_error_status_is_arg),
    cmocka_unit_test(test_cube_kernel_fails),
    cmocka_unit_test(test_long_message_is_cut),
    cmocka_unit_test(test_prefetch_left_in_flight),
};

PLD_TEST_MAIN("kernel_fail", tests)
