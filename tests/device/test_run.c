/* Running programs: results over 2, 3 and 4 ranks, replay of a prepared
 * program, SPMD blocks, task ordering, kernel failures and crashes. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host/ctl_shm.h"
#include "pld_test.h"
#include "../host/programs.h"

static int ids[16];

static void run_scaled(int n, int first, int step, const char *platform) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  const int64_t shape[] = {n, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 0.5f, -3.0f);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  assert_ok(pld_run(h_scale, &cfg, PLD_ARGS(x, y)));
  assert_scaled(x, y);
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_two_ranks(void **s) {
  (void)s;
  run_scaled(2, 0, 1, "a2a3sim");
}
static void test_three_ranks(void **s) {
  (void)s;
  run_scaled(3, 1, 4, "a5sim");
}
static void test_four_ranks(void **s) {
  (void)s;
  run_scaled(4, 15, -5, "a2a3sim");
}

/* A prepared program replays with new data, keeping its device processes. */
static void test_replay_keeps_devices(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 3, 0, 1);
  const int64_t shape[] = {3, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  assert_ok(pld_program_prepare(p));
  int mappings = count_shared_mappings();
  for (int run = 0; run < 5; run++) {
    float *xs = pld_tensor_data(x);
    for (int64_t i = 0; i < pld_tensor_numel(x); i++)
      xs[i] = (float)(run * 1000) - (float)i;
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    assert_scaled(x, y);
    /* The devices are still there: no child has exited. */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), 0);
  }
  assert_int_equal(count_shared_mappings(), mappings);
  /* New tensors of the same shapes work too; other shapes do not. */
  pld_tensor x2 = pld_test_tensor(3, shape, -2, 1);
  assert_ok(pld_program_run(p, PLD_ARGS(x2, y)));
  assert_scaled(x2, y);
  pld_tensor bad = pld_test_tensor(3, (int64_t[]){3, TR, TC * 2}, 1, 0);
  assert_fails_with(pld_program_run(p, PLD_ARGS(bad, y)), PLD_ERR_ARG,
                    "pld_program_run: h_scale: parameter 'x' (1 of 2)",
                    "expected a host tensor FP32[3, 4, 8] as compiled, got "
                    "FP32[3, 4, 16]");
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(x2);
  pld_tensor_destroy(bad);
  pld_tensor_destroy(y);
}

/* ---- SPMD blocks and task order ------------------------------------------ */

enum { BR = 64, BC = 16, BLOCKS = 8 };

/* Each block scales its own BR / BLOCKS rows by (block index + 1). */
PLD_KERNEL(k_rows, k, PLD_IN(x, FP32, BR, BC), PLD_OUT(y, FP32, BR, BC)) {
  int32_t b = pld_block_idx(k), n = pld_block_num(k);
  int32_t rows = BR / n;
  pld_tile *t = pld_load(k, x, b * rows, 0, rows, BC);
  pld_muls(k, t, t, (float)(b + 1));
  pld_store(k, t, y, b * rows, 0);
}

/* tmp = x * 2; y = tmp + 1; y = y * 3, through a device tensor: each task
 * depends on the one before, so the result shows the order was kept. */
PLD_KERNEL(k_twice, k, PLD_IN(x, FP32, BR, BC), PLD_OUT(y, FP32, BR, BC)) {
  pld_tile *t = pld_load(k, x, 0, 0, BR, BC);
  pld_muls(k, t, t, 2.0);
  pld_store(k, t, y, 0, 0);
}
PLD_KERNEL(k_plus1, k, PLD_IN(x, FP32, BR, BC), PLD_OUT(y, FP32, BR, BC)) {
  pld_tile *t = pld_load(k, x, 0, 0, BR, BC);
  pld_adds(k, t, t, 1.0);
  pld_store(k, t, y, 0, 0);
}
PLD_KERNEL(k_times3, k, PLD_INOUT(y, FP32, BR, BC)) {
  pld_tile *t = pld_load(k, y, 0, 0, BR, BC);
  pld_muls(k, t, t, 3.0);
  pld_store(k, t, y, 0, 0);
}

PLD_DEVICE(d_blocks, a, PLD_IN(x, FP32, BR, BC), PLD_OUT(y, FP32, BR, BC),
           PLD_OUT(z, FP32, BR, BC)) {
  pld_launch(a, k_rows, BLOCKS, x, y);
  pld_tensor tmp = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(BR, BC));
  pld_launch(a, k_twice, 1, x, tmp);
  pld_launch(a, k_plus1, 1, tmp, z);
  pld_launch(a, k_times3, 1, z);
}

PLD_HOST(h_blocks, h, PLD_IN(x, FP32, NR, BR, BC), PLD_OUT(y, FP32, NR, BR, BC),
         PLD_OUT(z, FP32, NR, BR, BC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_blocks, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_slice(h, z, r));
}

static void test_blocks_and_order(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, BR, BC};
  pld_tensor x = pld_test_tensor(3, shape, 0.25f, 1);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_tensor z = pld_test_tensor(3, shape, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_blocks, &cfg, PLD_ARGS(x, y, z), &p));
  for (int run = 0; run < 20; run++) {
    memset(pld_tensor_data(y), 0, (size_t)pld_tensor_numel(y) * 4);
    memset(pld_tensor_data(z), 0, (size_t)pld_tensor_numel(z) * 4);
    assert_ok(pld_program_run(p, PLD_ARGS(x, y, z)));
    const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y),
                *zs = pld_tensor_data(z);
    for (int64_t i = 0; i < pld_tensor_numel(x); i++) {
      int64_t row = (i / BC) % BR;
      assert_true(ys[i] == xs[i] * (float)(row / (BR / BLOCKS) + 1));
      assert_true(zs[i] == (xs[i] * 2.0f + 1.0f) * 3.0f);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
}

/* Device allocations from one call to the next.  Each call allocates two
 * tensors of R rows that live at once, writes x * 2 and x + 1 into them
 * and sums them (3 x + 1): two allocations given the same memory would
 * show.  Each rank's two calls per run have 8 and 12 rows, so a call
 * finds the last one's blocks smaller than it needs (12 after 8: they
 * must not be taken) or larger (8 after 12, up to twice: taken), and the
 * runs repeat it with the blocks kept from the run before. */
enum { AR1 = 8, AR2 = 12 };
PLD_DYNAMIC(R);
PLD_KERNEL(k_lin, k, PLD_IN(x, FP32, R, BC), PLD_OUT(y, FP32, R, BC),
           PLD_SCALAR(mul, FP32), PLD_SCALAR(add, FP32)) {
  const int32_t rows = (int32_t)pld_tensor_dim(x, 0);
  pld_tile *t = pld_load(k, x, 0, 0, rows, BC);
  pld_muls(k, t, t, mul);
  pld_adds(k, t, t, add);
  pld_store(k, t, y, 0, 0);
}
PLD_KERNEL(k_sum2, k, PLD_IN(a, FP32, R, BC), PLD_IN(b, FP32, R, BC),
           PLD_OUT(y, FP32, R, BC)) {
  const int32_t rows = (int32_t)pld_tensor_dim(a, 0);
  pld_tile *ta = pld_load(k, a, 0, 0, rows, BC);
  pld_tile *tb = pld_load(k, b, 0, 0, rows, BC);
  pld_add(k, ta, ta, tb);
  pld_store(k, ta, y, 0, 0);
}
PLD_DEVICE(d_allocs, a, PLD_IN(x, FP32, R, BC), PLD_OUT(y, FP32, R, BC)) {
  const int64_t rows = pld_tensor_dim(x, 0);
  pld_tensor t1 = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(rows, BC));
  pld_tensor t2 = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(rows, BC));
  pld_launch(a, k_lin, 1, x, t1, 2.0f, 0.0f);
  pld_launch(a, k_lin, 1, x, t2, 1.0f, 1.0f);
  pld_launch(a, k_sum2, 1, t1, t2, y);
}
PLD_HOST(h_allocs, h, PLD_IN(x1, FP32, NR, AR1, BC),
         PLD_OUT(y1, FP32, NR, AR1, BC), PLD_IN(x2, FP32, NR, AR2, BC),
         PLD_OUT(y2, FP32, NR, AR2, BC)) {
  for (int r = 0; r < pld_world_size(h); r++) {
    pld_dispatch(h, d_allocs, r, pld_slice(h, x1, r), pld_slice(h, y1, r));
    pld_dispatch(h, d_allocs, r, pld_slice(h, x2, r), pld_slice(h, y2, r));
  }
}

static void test_allocations_across_calls(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 3, 0, 1);
  pld_tensor x1 = pld_test_tensor(3, (int64_t[]){3, AR1, BC}, 0.5f, 1);
  pld_tensor x2 = pld_test_tensor(3, (int64_t[]){3, AR2, BC}, -0.25f, 3);
  pld_tensor y1 = pld_test_tensor(3, (int64_t[]){3, AR1, BC}, 0, 0);
  pld_tensor y2 = pld_test_tensor(3, (int64_t[]){3, AR2, BC}, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_allocs, &cfg, PLD_ARGS(x1, y1, x2, y2), &p));
  for (int run = 0; run < 4; run++) {
    float *x = pld_tensor_data(run % 2 ? x2 : x1);
    x[0] = (float)run; /* each run's inputs differ */
    memset(pld_tensor_data(y1), 0, (size_t)pld_tensor_numel(y1) * 4);
    memset(pld_tensor_data(y2), 0, (size_t)pld_tensor_numel(y2) * 4);
    assert_ok(pld_program_run(p, PLD_ARGS(x1, y1, x2, y2)));
    const pld_tensor xs[] = {x1, x2}, ys[] = {y1, y2};
    for (int c = 0; c < 2; c++) {
      const float *xv = pld_tensor_data(xs[c]), *yv = pld_tensor_data(ys[c]);
      for (int64_t i = 0; i < pld_tensor_numel(xs[c]); i++) {
        const float want = xv[i] * 2.0f + (xv[i] + 1.0f);
        if (yv[i] != want) {
          print_error("run %d, call %d, element %lld: got %g, expected %g\n",
                      run, c, (long long)i, (double)yv[i], (double)want);
          fail();
        }
      }
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x1);
  pld_tensor_destroy(x2);
  pld_tensor_destroy(y1);
  pld_tensor_destroy(y2);
}

/* Many independent single-block tasks, more than the device has cores. */
enum { MANY = 100 };
PLD_KERNEL(k_one_row, k, PLD_IN(x, FP32, MANY, BC),
           PLD_INOUT(y, FP32, MANY, BC), PLD_SCALAR(row, INT32)) {
  pld_tile *t = pld_load(k, x, row, 0, 1, BC);
  pld_adds(k, t, t, (double)row);
  pld_store(k, t, y, row, 0);
}
PLD_DEVICE(d_many, a, PLD_IN(x, FP32, MANY, BC), PLD_OUT(y, FP32, MANY, BC)) {
  for (int r = 0; r < MANY; r++)
    pld_launch(a, k_one_row, 1, x, y, r);
}
PLD_HOST(h_many, h, PLD_IN(x, FP32, NR, MANY, BC),
         PLD_OUT(y, FP32, NR, MANY, BC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_many, r, pld_slice(h, x, r), pld_slice(h, y, r));
}

static void test_many_tasks(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, MANY, BC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  assert_ok(pld_run(h_many, &cfg, PLD_ARGS(x, y)));
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    assert_true(ys[i] == xs[i] + (float)((i / BC) % MANY));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- cube cores --------------------------------------------------------- */

enum { MM = 32, MK = 16, MN = 24 };
PLD_CUBE_KERNEL(k_matmul, k, PLD_IN(a, FP32, MM, MK), PLD_IN(b, FP32, MK, MN),
                PLD_OUT(c, FP32, MM, MN)) {
  pld_tile *ta = pld_load(k, a, 0, 0, MM, MK);
  pld_tile *tb = pld_load(k, b, 0, 0, MK, MN);
  pld_tile *tc = pld_full(k, PLD_FP32, MM, MN, 0.0);
  pld_matmul_acc(k, tc, ta, tb);
  pld_store(k, tc, c, 0, 0);
}
PLD_DEVICE(d_matmul, d, PLD_IN(a, FP32, MM, MK), PLD_IN(b, FP32, MK, MN),
           PLD_OUT(c, FP32, MM, MN)) {
  pld_launch(d, k_matmul, 1, a, b, c);
}
PLD_HOST(h_matmul, h, PLD_IN(a, FP32, NR, MM, MK), PLD_IN(b, FP32, NR, MK, MN),
         PLD_OUT(c, FP32, NR, MM, MN)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_matmul, r, pld_slice(h, a, r), pld_slice(h, b, r),
                 pld_slice(h, c, r));
}

static void test_cube_matmul(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor a = pld_test_tensor(3, (int64_t[]){2, MM, MK}, 0.125f, -2);
  pld_tensor b = pld_test_tensor(3, (int64_t[]){2, MK, MN}, -0.0625f, 1);
  pld_tensor c = pld_test_tensor(3, (int64_t[]){2, MM, MN}, 0, 0);
  assert_ok(pld_run(h_matmul, &cfg, PLD_ARGS(a, b, c)));
  const float *as = pld_tensor_data(a), *bs = pld_tensor_data(b),
              *cs = pld_tensor_data(c);
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < MM; i++)
      for (int j = 0; j < MN; j++) {
        double want = 0;
        for (int q = 0; q < MK; q++)
          want += (double)as[(r * MM + i) * MK + q] *
                  (double)bs[(r * MK + q) * MN + j];
        assert_true(fabs((double)cs[(r * MM + i) * MN + j] - want) <=
                    1e-5 * (1 + fabs(want)));
      }
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
}

/* ---- failures inside kernels ------------------------------------------- */

/* Addresses no process maps, read at run time so the compiler cannot see
 * the fault coming. */
static volatile uintptr_t bad_address = 16, bad_address2 = 24;

/* Recurses until the core's stack overflows. */
static int overflow(volatile char *prev, int depth) {
  volatile char frame[1024];
  frame[0] = prev ? prev[0] : 1;
  return depth > 1000000000 ? frame[0] : overflow(frame, depth + 1) + frame[1];
}

/* Reads a byte of a file mapping past the end of the (empty) file:
 * SIGBUS, as when a file a kernel maps is truncated under it. */
static int read_past_file_end(void) {
  char path[] = "/tmp/pld-sigbus-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  unlink(path);
  volatile unsigned char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  return m == MAP_FAILED ? -1 : m[0];
}

/* An integer division by zero the compiler cannot see, done by the CPU:
 * SIGFPE.  (In C it would be undefined, and UBSan would end the process
 * its own way first.) */
static int divide_by_zero(void) {
#if defined(__x86_64__)
  int q, zero = 0;
  __asm__ volatile("cltd\n\tidivl %2" : "=a"(q) : "a"(1), "r"(zero) : "edx");
  return q;
#else
  return raise(SIGFPE);
#endif
}

/* What rank flag[0] / 100 does wrong, by flag[0] % 100. */
enum {
  MB_NONE,
  MB_LOAD_PAST_END,
  MB_TILE_TOO_LARGE,
  MB_BAD_POINTER,
  MB_STORE_PAST_END,
  MB_STACK_OVERFLOW,
  MB_ABORT,
  MB_SIGBUS,
  MB_SIGILL,
  MB_SIGFPE,
  MB_SIGKILL,
  MB_SIGTERM,
  MB_UNDERSCORE_EXIT
};

/* Rank `bad` misbehaves as told by flag[0]; the others work normally. */
PLD_KERNEL(k_misbehave, k, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_IN(flag, INT32, 1), PLD_SCALAR(rank, INT32)) {
  int how = (int)pld_read(k, flag, PLD_AT(0));
  int bad = how / 100;
  how %= 100;
  pld_tile *t = NULL;
  if (rank != bad || how == 0)
    t = pld_load(k, x, 0, 0, TR, TC);
  else if (how == 1)
    t = pld_load(k, x, 1, 0, TR, TC); /* one row past the end */
  else if (how == 2)
    t = pld_tile_new(k, PLD_FP32, 300, 256); /* over any Unified Buffer */
  else if (how == 3)
    *(volatile int *)bad_address = 1; /* a bad pointer */
  else if (how == 4)
    t = pld_load(k, x, 0, 0, TR, TC), pld_store(k, t, y, 0, 1);
  else if (how == 5)
    pld_write(k, y, PLD_AT(0, 0), overflow(NULL, 0));
  else if (how == MB_ABORT)
    abort();
  else if (how == MB_SIGBUS)
    pld_write(k, y, PLD_AT(0, 0), read_past_file_end());
  else if (how == MB_SIGILL)
    __builtin_trap();
  else if (how == MB_SIGFPE)
    pld_write(k, y, PLD_AT(0, 0), divide_by_zero());
  else if (how == MB_SIGKILL)
    kill(getpid(), SIGKILL);
  else if (how == MB_SIGTERM)
    raise(SIGTERM);
  else if (how == MB_UNDERSCORE_EXIT)
    _exit(7);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_misbehave, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_IN(flag, INT32, 1), PLD_SCALAR(rank, INT32)) {
  pld_launch(a, k_misbehave, 1, x, y, flag, rank);
}
PLD_HOST(h_misbehave, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC), PLD_IN(flag, INT32, 1)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_misbehave, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 flag, r);
}

struct misbehave {
  pld_tensor x, y, flag;
  pld_program *p;
};

static void misbehave_setup(struct misbehave *m, int n, int first,
                            const char *platform) {
  pld_config cfg = test_config(ids, n, first, 1);
  cfg.platform = platform;
  const int64_t shape[] = {n, TR, TC};
  m->x = pld_test_tensor(3, shape, 1, 0);
  m->y = pld_test_tensor(3, shape, 0, 0);
  assert_ok(pld_tensor_create(PLD_INT32, 1, (int64_t[]){1}, &m->flag));
  assert_ok(
      pld_compile(h_misbehave, &cfg, PLD_ARGS(m->x, m->y, m->flag), &m->p));
}

static int misbehave_run(struct misbehave *m, int bad_rank, int how) {
  *(int32_t *)pld_tensor_data(m->flag) = bad_rank * 100 + how;
  return pld_program_run(m->p, PLD_ARGS(m->x, m->y, m->flag));
}

static void misbehave_teardown(struct misbehave *m) {
  pld_program_destroy(m->p);
  pld_tensor_destroy(m->x);
  pld_tensor_destroy(m->y);
  pld_tensor_destroy(m->flag);
  assert_no_children();
}

static void assert_copied(struct misbehave *m) {
  const float *xs = pld_tensor_data(m->x), *ys = pld_tensor_data(m->y);
  for (int64_t i = 0; i < pld_tensor_numel(m->x); i++)
    assert_true(ys[i] == xs[i]);
}

static void test_load_outside_tensor(void **state) {
  (void)state;
  struct misbehave m;
  misbehave_setup(&m, 3, 4, "a2a3sim");
  assert_fails_with(misbehave_run(&m, 1, 1), PLD_ERR_BOUNDS,
                    "pld_load: kernel k_misbehave (rank 1, device 5, AIV core "
                    "0, block 0 of 1)",
                    "rows [1, 5) cols [0, 8)", "'x'", "FP32[4, 8]");
  /* The devices survive a kernel's failure: the next run works. */
  assert_ok(misbehave_run(&m, 1, 0));
  assert_copied(&m);
  misbehave_teardown(&m);
}

static void test_store_outside_tensor(void **state) {
  (void)state;
  struct misbehave m;
  misbehave_setup(&m, 2, 0, "a5sim");
  assert_fails_with(misbehave_run(&m, 0, 4), PLD_ERR_BOUNDS,
                    "pld_store: kernel k_misbehave (rank 0, device 0",
                    "rows [0, 4) cols [1, 9)", "'y'", "FP32[4, 8]");
  misbehave_teardown(&m);
}

static void test_tile_memory_over_capacity(void **state) {
  (void)state;
  struct misbehave m;
  misbehave_setup(&m, 2, 0, "a2a3sim");
  assert_fails_with(misbehave_run(&m, 1, 2), PLD_ERR_TILE_MEMORY,
                    "kernel k_misbehave (rank 1, device 1, AIV core 0",
                    "307200", "196608");
  misbehave_teardown(&m);
  misbehave_setup(&m, 2, 0, "a5sim");
  assert_fails_with(misbehave_run(&m, 0, 2), PLD_ERR_TILE_MEMORY,
                    "kernel k_misbehave (rank 0, device 0", "307200", "262144");
  misbehave_teardown(&m);
}

static void test_kernel_crash(void **state) {
  (void)state;
  int shm_before = count_dev_shm();
  int maps_before = count_shared_mappings();
  struct misbehave m;
  misbehave_setup(&m, 4, 2, "a2a3sim");
  assert_ok(misbehave_run(&m, 0, 0));
  assert_fails_with(misbehave_run(&m, 2, 3), PLD_ERR_CRASH,
                    "pld_program_run: rank 2 (device 4) crashed with signal "
                    "SIGSEGV",
                    "at address 0x10", "in kernel k_misbehave on AIV core 0",
                    "the other devices were stopped");
  /* Every device process is gone, and so is their memory. */
  assert_no_children();
  assert_int_equal(count_shared_mappings(), maps_before);
  assert_int_equal(count_dev_shm(), shm_before);
  assert_fails_with(misbehave_run(&m, 0, 0), PLD_ERR_STATE,
                    "rank 2 (device 4) crashed");
  misbehave_teardown(&m);
}

/* Every way a kernel can kill its device process is reported with the
 * signal (or exit status) and the kernel it was in. */
static void expect_death(int how, const char *head, const char *where) {
  struct misbehave m;
  misbehave_setup(&m, 3, 2, "a5sim");
  assert_ok(misbehave_run(&m, 0, MB_NONE));
  assert_fails_with(misbehave_run(&m, 1, how), PLD_ERR_CRASH, head, where,
                    "the other devices were stopped");
  assert_fails_with(misbehave_run(&m, 0, MB_NONE), PLD_ERR_STATE, head);
  misbehave_teardown(&m);
}

/* Where the kernel was, right after the signal's name for a signal
 * that names no address (only SIGSEGV and SIGBUS do). */
#define IN_KERNEL "in kernel k_misbehave on AIV core 0 (block 0 of 1)"

static void test_kernel_abort(void **state) {
  (void)state;
  expect_death(
      MB_ABORT,
      "rank 1 (device 3) crashed with signal SIGABRT (Aborted) " IN_KERNEL,
      IN_KERNEL);
}

static void test_kernel_sigbus(void **state) {
  (void)state;
  expect_death(MB_SIGBUS,
               "rank 1 (device 3) crashed with signal SIGBUS (Bus "
               "error) at address 0x",
               IN_KERNEL);
}

static void test_kernel_sigill(void **state) {
  (void)state;
  expect_death(MB_SIGILL,
               "rank 1 (device 3) crashed with signal SIGILL "
               "(Illegal instruction) " IN_KERNEL,
               IN_KERNEL);
}

static void test_kernel_sigfpe(void **state) {
  (void)state;
  expect_death(MB_SIGFPE,
               "rank 1 (device 3) crashed with signal SIGFPE "
               "(Floating point exception) " IN_KERNEL,
               IN_KERNEL);
}

/* No handler runs for SIGKILL or _exit: what the device was running comes
 * from what it publishes for the watch. */
static void test_kernel_sigkill(void **state) {
  (void)state;
  expect_death(MB_SIGKILL,
               "rank 1 (device 3) was killed by signal SIGKILL (Killed) while "
               "running ",
               "kernel k_misbehave on AIV core 0 (block 0 of 1), running for");
}

static void test_kernel_sigterm(void **state) {
  (void)state;
  expect_death(
      MB_SIGTERM,
      "rank 1 (device 3) crashed with signal SIGTERM (Terminated) " IN_KERNEL,
      IN_KERNEL);
}

static void test_kernel_underscore_exit(void **state) {
  (void)state;
  expect_death(MB_UNDERSCORE_EXIT,
               "rank 1 (device 3) exited with status 7 while running ",
               "kernel k_misbehave on AIV core 0 (block 0 of 1), running for");
}

/* Compiling traces device functions in the host process, so d_crash
 * crashes only where it is not the test's own process: on the device. */
static pid_t test_pid;
/* A kernel that overflows its stack is reported like any crash, by name
 * (the crash handler runs on a stack of its own). */
static void test_kernel_stack_overflow(void **state) {
  (void)state;
  struct misbehave m;
  misbehave_setup(&m, 2, 0, "a5sim");
  assert_fails_with(misbehave_run(&m, 1, 5), PLD_ERR_CRASH,
                    "rank 1 (device 1) crashed with signal SIGSEGV",
                    "in kernel k_misbehave on AIV core 0");
  misbehave_teardown(&m);
}

/* On the device, rank 1's device function faults (exits, with `exits`). */
PLD_DEVICE(d_crash, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32), PLD_SCALAR(exits, INT32)) {
  (void)a;
  if (getpid() != test_pid && rank == 1 && exits)
    exit(4);
  if (getpid() != test_pid && rank == 1)
    *(volatile int *)bad_address2 = 1;
}
PLD_HOST(h_crash, h, PLD_IN(x, FP32, NR, TR, TC), PLD_OUT(y, FP32, NR, TR, TC),
         PLD_SCALAR(exits, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_crash, r, pld_slice(h, x, r), pld_slice(h, y, r), r,
                 exits);
}

/* A crash in a device function (not a kernel), on the AICPU: a fault, or
 * exit(). */
static void test_device_function_crash(void **state) {
  (void)state;
  test_pid = getpid();
  pld_config cfg = test_config(ids, 2, 6, 1);
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  int32_t exits = 0;
  assert_fails_with(pld_run(h_crash, &cfg, PLD_ARGS(x, y, exits)),
                    PLD_ERR_CRASH,
                    "rank 1 (device 7) crashed with signal SIGSEGV",
                    "in device function d_crash on the AICPU");
  assert_no_children();
  exits = 1;
  assert_fails_with(pld_run(h_crash, &cfg, PLD_ARGS(x, y, exits)),
                    PLD_ERR_CRASH,
                    "rank 1 (device 7) called exit() and exited with status ",
                    "in device function d_crash on the AICPU");
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* Does process pid map a region starting at addr? */
/* A line of /proc/PID/maps: its addresses, the file (device, inode) and
 * the file offset it starts at. */
struct map_line {
  unsigned long lo, hi, pgoff, inode;
  char dev[16];
};

static int read_map_line(FILE *f, struct map_line *m) {
  char line[512];
  if (!fgets(line, sizeof line, f))
    return 0;
  assert_int_equal(sscanf(line, "%lx-%lx %*s %lx %15s %lu", &m->lo, &m->hi,
                          &m->pgoff, m->dev, &m->inode),
                   5);
  return 1;
}

/* Whether process pid maps the memory at the host's address addr: the
 * same part of the same file (shared memory is a file to the kernel),
 * wherever it maps it. */
static int maps_memory(pid_t pid, const void *addr) {
  FILE *f = fopen("/proc/self/maps", "r");
  assert_non_null(f);
  struct map_line m, own = {0};
  uintptr_t a = (uintptr_t)addr;
  int found = 0;
  while (!found && read_map_line(f, &m))
    if ((found = m.lo <= a && a < m.hi))
      own = m;
  fclose(f);
  assert_true(found && own.inode != 0); /* the host maps it, a file */
  unsigned long off = own.pgoff + (a - own.lo);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  f = fopen(path, "r");
  assert_non_null(f);
  found = 0;
  while (!found && read_map_line(f, &m))
    found = m.inode == own.inode && strcmp(m.dev, own.dev) == 0 &&
            m.pgoff <= off && off < m.pgoff + (m.hi - m.lo);
  fclose(f);
  return found;
}

/* A device reaches only its own memory and its program's windows: the
 * devices of a program started while another runs do not keep the other
 * program's regions that fork handed them. */
static void test_devices_isolated_between_programs(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, TR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *a, *b;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &a));
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &b));
  assert_ok(pld_program_prepare(a));
  assert_ok(pld_program_prepare(b));
  for (int r = 0; r < 2; r++) {
    pid_t pid = b->rs.devs[r].pid;
    assert_true(maps_memory(pid, b->rs.devs[r].ctl)); /* its own */
    assert_true(maps_memory(pid, b->rs.devs[r].data));
    assert_false(maps_memory(pid, b->rs.devs[1 - r].ctl)); /* its peer's */
    assert_false(maps_memory(pid, b->rs.devs[1 - r].data));
    assert_true(maps_memory(pid, pld__shm_region(b)));
    assert_true(maps_memory(pid, b->rs.world));
    assert_false(maps_memory(pid, pld__shm_region(a)));
    assert_false(maps_memory(pid, a->rs.world));
    for (int q = 0; q < 2; q++) {
      assert_false(maps_memory(pid, a->rs.devs[q].ctl));
      assert_false(maps_memory(pid, a->rs.devs[q].data));
    }
  }
  /* Both still run, in any order. */
  assert_ok(pld_program_run(b, PLD_ARGS(x, y)));
  assert_scaled(x, y);
  assert_ok(pld_program_run(a, PLD_ARGS(x, y)));
  assert_scaled(x, y);
  pld_program_destroy(a);
  assert_ok(pld_program_run(b, PLD_ARGS(x, y)));
  pld_program_destroy(b);
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_two_ranks),
    cmocka_unit_test(test_three_ranks),
    cmocka_unit_test(test_four_ranks),
    cmocka_unit_test(test_replay_keeps_devices),
    cmocka_unit_test(test_devices_isolated_between_programs),
    cmocka_unit_test(test_blocks_and_order),
    cmocka_unit_test(test_allocations_across_calls),
    cmocka_unit_test(test_many_tasks),
    cmocka_unit_test(test_cube_matmul),
    cmocka_unit_test(test_load_outside_tensor),
    cmocka_unit_test(test_store_outside_tensor),
    cmocka_unit_test(test_tile_memory_over_capacity),
    cmocka_unit_test(test_kernel_crash),
    cmocka_unit_test(test_kernel_stack_overflow),
    cmocka_unit_test(test_kernel_abort),
    cmocka_unit_test(test_kernel_sigbus),
    cmocka_unit_test(test_kernel_sigill),
    cmocka_unit_test(test_kernel_sigfpe),
    cmocka_unit_test(test_kernel_sigkill),
    cmocka_unit_test(test_kernel_sigterm),
    cmocka_unit_test(test_kernel_underscore_exit),
    cmocka_unit_test(test_device_function_crash),
};

PLD_TEST_MAIN("run", tests)
