/* Host tasks and intermediates of the host orchestration: results against
 * plain C on 2, 3 and 4 ranks and both simulators; the order following the
 * data (a program that only data-driven order completes); overrides;
 * failures; misuse, each with its message. */
#include "pld_test.h"
#include "programs.h"

static int ids[16];

enum { L = 300 };

/* ---- kernels: tiles over a row of L INT32 ----------------------------- */

/* dst = a * s + b (b may be a itself with s = 0 for a copy plus a). */
static void axpb(pld_core k, pld_tensor a, int32_t s, pld_tensor b,
                 pld_tensor dst) {
  pld_tile *t = pld_load(k, a, 0, 0, 1, L);
  pld_tile *u = pld_load(k, b, 0, 0, 1, L);
  pld_muls(k, t, t, s);
  pld_add(k, t, t, u);
  pld_store(k, t, dst, 0, 0);
  pld_tile_free(k, u);
  pld_tile_free(k, t);
}

PLD_KERNEL(k_axpb, k, PLD_IN(a, INT32, L), PLD_IN(b, INT32, L),
           PLD_OUT(dst, INT32, L), PLD_SCALAR(s, INT32)) {
  axpb(k, a, s, b, dst);
}
PLD_DEVICE(d_axpb, a, PLD_IN(x, INT32, L), PLD_IN(b, INT32, L),
           PLD_OUT(dst, INT32, L), PLD_SCALAR(s, INT32)) {
  pld_launch(a, k_axpb, 1, x, b, dst, s);
}

/* ---- the reduction through intermediates ------------------------------ */

/* sum[i] = sum over r of partial[r][i]; prod: the product instead (the
 * override). */
PLD_HOST_TASK(t_sum, t, PLD_IN(partial, INT32, NR, L), PLD_OUT(sum, INT32, L)) {
  const int32_t *p = pld_tensor_data(partial);
  int32_t *s = pld_tensor_data(sum);
  int64_t n = pld_tensor_dim(partial, 0);
  assert_int_equal(n, pld_task_world_size(t));
  for (int64_t i = 0; i < L; i++) {
    int32_t v = 0;
    for (int64_t r = 0; r < n; r++)
      v += p[r * L + i];
    s[i] = v;
  }
}
PLD_HOST_TASK(t_prod, t, PLD_IN(partial, INT32, NR, L),
              PLD_OUT(sum, INT32, L)) {
  (void)t;
  const int32_t *p = pld_tensor_data(partial);
  int32_t *s = pld_tensor_data(sum);
  for (int64_t i = 0; i < L; i++) {
    int32_t v = 1;
    for (int64_t r = 0; r < pld_tensor_dim(partial, 0); r++)
      v *= p[r * L + i];
    s[i] = v;
  }
}
/* Another signature: refused as an override. */
PLD_HOST_TASK(t_other, t, PLD_IN(partial, INT32, NR, L),
              PLD_OUT(sum, FP32, L)) {
  (void)t;
  (void)partial;
  (void)sum;
}

/* Rank r: tmp (rank intermediate) = x[r] * 2 + x[r]; partial[r] = tmp * 1
 * + x[r] (= 4 x[r]); the task sums partial into s (host intermediate);
 * then y[r] = x[r] * (r + 1) + s. */
PLD_HOST(h_reduce, h, PLD_IN(x, INT32, NR, L), PLD_OUT(y, INT32, NR, L)) {
  int n = pld_world_size(h);
  pld_tensor partial = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(n, L));
  pld_tensor s = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  for (int r = 0; r < n; r++) {
    pld_tensor tmp = pld_rank_tensor(h, r, PLD_INT32, PLD_SHAPE(L));
    pld_tensor xr = pld_slice(h, x, r);
    pld_dispatch(h, d_axpb, r, xr, xr, tmp, 2);
    pld_dispatch(h, d_axpb, r, tmp, xr, pld_slice(h, partial, r), 1);
  }
  pld_host_task(h, t_sum, partial, s);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_axpb, r, pld_slice(h, x, r), s, pld_slice(h, y, r),
                 r + 1);
}

static pld_tensor int_tensor(int64_t rows, int64_t cols, int32_t seed) {
  pld_tensor t;
  assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){rows, cols}, &t));
  int32_t *d = pld_tensor_data(t);
  for (int64_t i = 0; i < rows * cols; i++)
    d[i] = (int32_t)((i * 37 + seed) % 101) - 50;
  return t;
}

/* y[r][i] == x[r][i] * (r + 1) + combine over q of 4 x[q][i]. */
static void expect_reduced(pld_tensor x, pld_tensor y, int n, int prod) {
  const int32_t *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < L; i++) {
    int32_t c = prod ? 1 : 0;
    for (int q = 0; q < n; q++)
      c = prod ? c * (4 * xs[q * L + i]) : c + 4 * xs[q * L + i];
    for (int r = 0; r < n; r++) {
      int32_t want = xs[r * L + i] * (r + 1) + c;
      if (ys[r * L + i] != want) {
        print_error("%d ranks: y[%d][%lld] = %d, expected %d\n", n, r,
                    (long long)i, ys[r * L + i], want);
        fail();
      }
    }
  }
}

static void test_task_reduces_partials(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++)
    for (int plat = 0; plat < 2; plat++) {
      pld_config cfg = test_config(ids, n, 1, 2);
      cfg.platform = plat ? "a5sim" : "a2a3sim";
      pld_tensor x = int_tensor(n, L, n), y = int_tensor(n, L, 0);
      pld_program *p;
      assert_ok(pld_compile(h_reduce, &cfg, PLD_ARGS(x, y), &p));
      assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
      expect_reduced(x, y, n, 0);
      /* Again with new data: intermediates start afresh. */
      int32_t *xs = pld_tensor_data(x);
      for (int64_t i = 0; i < n * L; i++)
        xs[i] = (int32_t)(i % 7) - 3;
      assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
      expect_reduced(x, y, n, 0);
      /* An override of the same signature; one of another is refused,
       * and so is a task the program never calls. */
      assert_ok(pld_program_override(p, t_sum, t_prod));
      assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
      expect_reduced(x, y, n, 1);
      assert_fails_with(pld_program_override(p, t_sum, t_other), PLD_ERR_ARG,
                        "pld_program_override: with: its signature must be "
                        "the task's: parameter 2 of t_sum is sum: INT32[L] "
                        "Out, of t_other sum: FP32[L] Out");
      assert_fails_with(pld_program_override(p, t_prod, t_sum), PLD_ERR_ARG,
                        "pld_program_override: task: t_prod is no host task "
                        "of this program (its host function h_reduce never "
                        "calls it)");
      assert_ok(pld_program_override(p, t_sum, t_sum));
      assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
      expect_reduced(x, y, n, 0);
      pld_program_destroy(p);
      pld_tensor_destroy(x);
      pld_tensor_destroy(y);
    }
}

/* ---- the order follows the data --------------------------------------- */

/* Rank 1's first dispatch waits for a signal that rank 0's second
 * dispatch sends, and rank 0's second dispatch reads what the task
 * writes; the task reads only rank 0's first dispatch's output.  Were the
 * task to wait for every earlier dispatch (rank 1's too), the program
 * could never finish: a deadlock. */
PLD_KERNEL(k_wait_flag, k, PLD_WINDOW(flag, INT32, 1)) {
  pld_wait(k, flag, PLD_AT(0), 1, PLD_WAIT_GE);
}
PLD_DEVICE(d_wait_flag, a, PLD_WINDOW(flag, INT32, 1)) {
  pld_launch(a, k_wait_flag, 1, flag);
}
PLD_KERNEL(k_copy_notify, k, PLD_IN(src, INT32, L), PLD_OUT(dst, INT32, L),
           PLD_WINDOW(flag, INT32, 1)) {
  axpb(k, src, 0, src, dst);
  pld_notify(k, flag, 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
}
PLD_DEVICE(d_copy_notify, a, PLD_IN(src, INT32, L), PLD_OUT(dst, INT32, L),
           PLD_WINDOW(flag, INT32, 1)) {
  pld_launch(a, k_copy_notify, 1, src, dst, flag);
}
PLD_HOST_TASK(t_double, t, PLD_IN(a, INT32, L), PLD_OUT(b, INT32, L)) {
  (void)t;
  const int32_t *s = pld_tensor_data(a);
  int32_t *d = pld_tensor_data(b);
  for (int i = 0; i < L; i++)
    d[i] = 2 * s[i];
}
PLD_HOST(h_order, h, PLD_IN(x, INT32, 2, L), PLD_OUT(y, INT32, 2, L)) {
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window flag = pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(1));
  pld_tensor a = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_tensor b = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_dispatch(h, d_axpb, 0, pld_slice(h, x, 0), pld_slice(h, x, 0), a, 2);
  pld_dispatch(h, d_wait_flag, 1, flag);
  pld_host_task(h, t_double, a, b);
  pld_dispatch(h, d_copy_notify, 0, b, pld_slice(h, y, 0), flag);
  pld_dispatch(h, d_axpb, 1, pld_slice(h, x, 1), pld_slice(h, x, 1),
               pld_slice(h, y, 1), 0);
}

static void test_task_order_follows_data(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 3);
  cfg.wait_timeout_ms = 10000;
  pld_tensor x = int_tensor(2, L, 5), y = int_tensor(2, L, 0);
  assert_ok(pld_run(h_order, &cfg, PLD_ARGS(x, y)));
  const int32_t *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int i = 0; i < L; i++) {
    assert_int_equal(ys[i], 2 * (3 * xs[i]));
    assert_int_equal(ys[L + i], xs[L + i]);
  }
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* Two tasks in a chain through a device, on slices of a parameter: the
 * first writes x[0] + 1 into y[0], rank 1 reads it (y[0] is copied to its
 * device) and writes y[1] = 3 y[0] + x[1], the second task reads y[1] (as
 * the device wrote it) and writes y[0] again: the run's result.  Rank 0
 * meanwhile copies x[0] into a host intermediate nobody reads. */
PLD_HOST_TASK(t_inc, t, PLD_IN(a, INT32, L), PLD_OUT(b, INT32, L),
              PLD_SCALAR(by, INT32)) {
  (void)t;
  const int32_t *s = pld_tensor_data(a);
  int32_t *d = pld_tensor_data(b);
  for (int i = 0; i < L; i++)
    d[i] = s[i] + by;
}
PLD_HOST(h_chain, h, PLD_IN(x, INT32, 2, L), PLD_INOUT(y, INT32, 2, L)) {
  pld_tensor spare = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_dispatch(h, d_axpb, 0, pld_slice(h, x, 0), pld_slice(h, x, 0), spare, 0);
  pld_host_task(h, t_inc, pld_slice(h, x, 0), pld_slice(h, y, 0), 1);
  pld_dispatch(h, d_axpb, 1, pld_slice(h, y, 0), pld_slice(h, x, 1),
               pld_slice(h, y, 1), 3);
  pld_host_task(h, t_inc, pld_slice(h, y, 1), pld_slice(h, y, 0), 1000);
}

static void test_task_chain(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 4, 1);
  cfg.platform = "a5sim";
  pld_tensor x = int_tensor(2, L, 9), y = int_tensor(2, L, 3);
  assert_ok(pld_run(h_chain, &cfg, PLD_ARGS(x, y)));
  const int32_t *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int i = 0; i < L; i++) {
    int32_t y1 = (xs[i] + 1) * 3 + xs[L + i];
    assert_int_equal(ys[L + i], y1);
    assert_int_equal(ys[i], y1 + 1000);
  }
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* The artifact folder's program.txt lists each task: what it runs after,
 * its tensors as slices of the host's, its scalars with their values. */
static void test_task_artifacts(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 4, 1);
  cfg.artifact_dir = "";
  pld_tensor x = int_tensor(2, L, 9), y = int_tensor(2, L, 3);
  pld_program *p = NULL;
  assert_ok(pld_compile(h_chain, &cfg, PLD_ARGS(x, y), &p));
  const char *dir = pld_program_artifact_dir(p);
  assert_non_null(dir);
  const char *prog = pld_test_slurp(dir, "program.txt");
  /* Each task: the call it follows, where its input lies, its `by`. */
  static const struct {
    const char *after, *a;
    int by;
  } tasks[] = {{"nothing on the devices", "x[0]", 1},
               {"rank 1's dispatch 1", "y[1]", 1000}};
  for (int t = 0; t < 2; t++) {
    char head[64], want[512];
    snprintf(head, sizeof head, "  host task %d: t_inc on the host CPU (",
             t + 1);
    snprintf(want, sizeof want,
             "), after %s\n"
             "    a: INT32[%d] In = %s (a slice)\n"
             "    b: INT32[%d] Out = y[0] (a slice)\n"
             "    by: INT32 = %d\n",
             tasks[t].after, L, tasks[t].a, L, tasks[t].by);
    const char *at = strstr(prog, head);
    if (!at || !strstr(at, want)) {
      print_error("program.txt lacks task %d as\n%s...%s\nit reads:\n%s\n",
                  t + 1, head, want, prog);
      fail();
    }
  }
  remove_dir(dir);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- a task after a write and a read of overlapping parts ------------- */

/* The writer rank writes x = src * 3 + 1 and the reader rank reads x into
 * y = x * 2 - 5, on overlapping parts of x: wide, the writer all of x and
 * the reader x[1]; narrow, the writer x[0] and the reader all of x.  The
 * task then copies x, as it sees it, into z.  It must see the writer's
 * result wherever the writer wrote: before a task, only what a call wrote
 * is copied back from device memory, never a slice a call only read (the
 * reader's copy of x holds x as it was).  Slices overlap only by one
 * holding the other, so wide and narrow put each call's part inside the
 * other's. */
/* dst = a * s + c over a's rows of L (a [L] tensor is one row). */
static void affine(pld_core k, pld_tensor a, pld_tensor dst, int32_t s,
                   int32_t c) {
  for (int64_t i = 0; i < pld_tensor_numel(a) / L; i++) {
    pld_tile *t = pld_load(k, a, i, 0, 1, L);
    pld_muls(k, t, t, s);
    pld_adds(k, t, t, c);
    pld_store(k, t, dst, i, 0);
    pld_tile_free(k, t);
  }
}
#define AFFINE_ROW_PARAMS                                                      \
  PLD_IN(a, INT32, L), PLD_OUT(dst, INT32, L), PLD_SCALAR(s, INT32),           \
      PLD_SCALAR(c, INT32)
#define AFFINE_ROWS_PARAMS                                                     \
  PLD_IN(a, INT32, 2, L), PLD_OUT(dst, INT32, 2, L), PLD_SCALAR(s, INT32),     \
      PLD_SCALAR(c, INT32)
PLD_KERNEL(k_affine_row, k, AFFINE_ROW_PARAMS) { affine(k, a, dst, s, c); }
PLD_KERNEL(k_affine_rows, k, AFFINE_ROWS_PARAMS) { affine(k, a, dst, s, c); }
PLD_DEVICE(d_affine_row, d, AFFINE_ROW_PARAMS) {
  pld_launch(d, k_affine_row, 1, a, dst, s, c);
}
PLD_DEVICE(d_affine_rows, d, AFFINE_ROWS_PARAMS) {
  pld_launch(d, k_affine_rows, 1, a, dst, s, c);
}
PLD_HOST_TASK(t_copy, t, PLD_IN(a, INT32, 2, L), PLD_OUT(b, INT32, 2, L)) {
  (void)t;
  memcpy(pld_tensor_data(b), pld_tensor_data(a), 2 * L * sizeof(int32_t));
}
PLD_HOST(h_overlap, h, PLD_IN(src, INT32, 2, L), PLD_INOUT(x, INT32, 2, L),
         PLD_OUT(y, INT32, 2, L), PLD_OUT(z, INT32, 2, L),
         PLD_SCALAR(writer, INT32), PLD_SCALAR(reader, INT32),
         PLD_SCALAR(wide, INT32)) {
  if (wide) {
    pld_dispatch(h, d_affine_rows, writer, src, x, 3, 1);
    pld_dispatch(h, d_affine_row, reader, pld_slice(h, x, 1),
                 pld_slice(h, y, 1), 2, -5);
  } else {
    pld_dispatch(h, d_affine_row, writer, pld_slice(h, src, 0),
                 pld_slice(h, x, 0), 3, 1);
    pld_dispatch(h, d_affine_rows, reader, x, y, 2, -5);
  }
  /* Every rank is dispatched: the others copy src[0] where nobody looks. */
  for (int r = 0; r < pld_world_size(h); r++)
    if (r != writer && r != reader)
      pld_dispatch(h, d_affine_row, r, pld_slice(h, src, 0),
                   pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L)), 1, 0);
  pld_host_task(h, t_copy, x, z);
}

static void test_task_sees_write_beside_overlapping_read(void **state) {
  (void)state;
  static const int32_t pairs[][2] = {{1, 2}, {2, 1}}; /* writer, reader */
  for (int n = 3; n <= 4; n++)
    for (int pair = 0; pair < 2; pair++)
      for (int32_t wide = 0; wide < 2; wide++) {
        pld_config cfg = test_config(ids, n, 0, 1);
        cfg.platform = n == 3 ? "a5sim" : "a2a3sim";
        int32_t writer = pairs[pair][0], reader = pairs[pair][1];
        pld_tensor src = int_tensor(2, L, 3), x = int_tensor(2, L, 8);
        pld_tensor y = int_tensor(2, L, 0), z = int_tensor(2, L, 0);
        int32_t x0[2 * L], y0[2 * L];
        memcpy(x0, pld_tensor_data(x), sizeof x0);
        memcpy(y0, pld_tensor_data(y), sizeof y0);
        assert_ok(pld_run(h_overlap, &cfg,
                          PLD_ARGS(src, x, y, z, writer, reader, wide)));
        /* Rows the writer wrote and the reader read: wide, 0 and 1 and
         * row 1; narrow, row 0 and 0 and 1. */
        const int32_t *ss = pld_tensor_data(src), *xs = pld_tensor_data(x),
                      *ys = pld_tensor_data(y), *zs = pld_tensor_data(z);
        for (int i = 0; i < 2 * L; i++) {
          int row = i / L;
          int written = wide || row == 0, read = !wide || row == 1;
          int32_t want_x = written ? ss[i] * 3 + 1 : x0[i];
          int32_t want_y = read ? x0[i] * 2 - 5 : y0[i];
          if (zs[i] != want_x || xs[i] != want_x || ys[i] != want_y) {
            print_error("%d ranks, writer %d, reader %d, %s: element %d: "
                        "the task saw x = %d, x after the run %d, y %d; "
                        "expected x = %d, y = %d\n",
                        n, writer, reader, wide ? "wide" : "narrow", i, zs[i],
                        xs[i], ys[i], want_x, want_y);
            fail();
          }
        }
        pld_tensor_destroy(src);
        pld_tensor_destroy(x);
        pld_tensor_destroy(y);
        pld_tensor_destroy(z);
      }
}

/* A cycle through the host: rank 0's dispatch waits for a flag rank 1's
 * second dispatch sets, which waits for the task, which waits for rank
 * 0's dispatch.  Reported as a deadlock naming each link. */
PLD_HOST(h_cycle, h, PLD_IN(x, INT32, 2, L), PLD_OUT(y, INT32, 2, L)) {
  pld_window_buf fb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window flag = pld_window_view(h, fb, PLD_INT32, PLD_SHAPE(1));
  pld_tensor a = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_tensor b = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_dispatch(h, d_wait_flag, 0, flag);
  pld_dispatch(h, d_axpb, 0, pld_slice(h, x, 0), pld_slice(h, x, 0), a, 1);
  pld_dispatch(h, d_axpb, 1, pld_slice(h, x, 1), pld_slice(h, x, 1),
               pld_slice(h, y, 1), 1);
  pld_host_task(h, t_double, a, b);
  pld_dispatch(h, d_copy_notify, 1, b, pld_slice(h, y, 0), flag);
}

static void test_task_deadlock_reported(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x = int_tensor(2, L, 5), y = int_tensor(2, L, 0);
  pld_program *p;
  assert_ok(pld_compile(h_cycle, &cfg, PLD_ARGS(x, y), &p));
  for (int run = 0; run < 2; run++)
    assert_fails_with(
        pld_program_run(p, PLD_ARGS(x, y)), PLD_ERR_DEADLOCK,
        "deadlock: these waits can never be satisfied",
        "rank 1 (device 1): dispatch 2 (d_copy_notify) waits for host task "
        "1 (t_double), which waits for rank 0's dispatch 2 (d_axpb)",
        "rank 0 (device 0): kernel k_wait_flag", "waits on window");
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- failures ----------------------------------------------------------- */

PLD_HOST_TASK(t_refuse, t, PLD_IN(a, INT32, L), PLD_OUT(b, INT32, L)) {
  (void)a;
  (void)b;
  assert_int_equal(
      pld_task_fail(t, PLD_ERR_BOUNDS, "element %d is %s", 7, "out of range"),
      PLD_ERR_BOUNDS);
  /* The first failure stands. */
  assert_int_equal(pld_task_fail(t, PLD_ERR_ARG, "later"), PLD_ERR_BOUNDS);
}
PLD_HOST(h_refuse, h, PLD_IN(x, INT32, NR, L), PLD_OUT(y, INT32, NR, L)) {
  int n = pld_world_size(h);
  pld_tensor a = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_tensor b = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  pld_dispatch(h, d_axpb, 0, pld_slice(h, x, 0), pld_slice(h, x, 0), a, 1);
  pld_host_task(h, t_refuse, a, b);
  for (int r = 0; r < n; r++) /* every rank waits for the task */
    pld_dispatch(h, d_axpb, r, b, pld_slice(h, x, r), pld_slice(h, y, r), 1);
}

static void test_task_failure(void **state) {
  (void)state;
  for (int n = 2; n <= 3; n++) {
    pld_config cfg = test_config(ids, n, 0, 1);
    pld_tensor x = int_tensor(n, L, 1), y = int_tensor(n, L, 0);
    pld_program *p;
    assert_ok(pld_compile(h_refuse, &cfg, PLD_ARGS(x, y), &p));
    /* Twice: the devices waiting for the task stop, and the program
     * runs again. */
    for (int run = 0; run < 2; run++)
      assert_fails_with(pld_program_run(p, PLD_ARGS(x, y)), PLD_ERR_BOUNDS,
                        "host task t_refuse: element 7 is out of range");
    pld_program_destroy(p);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
}

/* ---- intermediates outside their run, and misuse ------------------------ */

static pld_tensor kept_inter;

PLD_HOST(h_keeps, h, PLD_IN(x, INT32, NR, L), PLD_OUT(y, INT32, NR, L)) {
  pld_tensor a = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
  kept_inter = a;
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_axpb, r, pld_slice(h, x, r), pld_slice(h, x, r),
                 pld_slice(h, y, r), 1);
  pld_host_task(h, t_double, pld_slice(h, y, 0), a);
}

static void test_intermediate_after_run(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x = int_tensor(2, L, 1), y = int_tensor(2, L, 0);
  pld_program *p;
  assert_ok(pld_compile(h_keeps, &cfg, PLD_ARGS(x, y), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
  assert_null(pld_tensor_data(kept_inter));
  assert_string_equal(pld_last_error(),
                      "pld_tensor_data: t is host intermediate #0, an "
                      "intermediate of a host orchestration: it has data "
                      "only during a run, where host tasks receive it");
  assert_int_equal(pld_tensor_dim(kept_inter, 0), L);
  pld_tensor_destroy(kept_inter); /* refused: the program owns it */
  assert_non_null(strstr(pld_last_error(), "its program frees it"));
  assert_fails_with(pld_program_run(p, PLD_ARGS(kept_inter, y)), PLD_ERR_ARG,
                    "pld_program_run: h_keeps: parameter 'x' (1 of 2): "
                    "expected a host tensor INT32[2, 300], got host "
                    "intermediate #0, an intermediate of a host "
                    "orchestration");
  pld_program *q = NULL;
  assert_fails_with(pld_compile(h_keeps, &cfg, PLD_ARGS(x, kept_inter), &q),
                    PLD_ERR_ARG,
                    "pld_compile: h_keeps: parameter 'y' (2 of 2): expected a "
                    "host tensor, got host intermediate #0, an intermediate "
                    "of a host orchestration");
  assert_null(q);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

enum {
  M_RANK_OTHER,
  M_RANK_TO_TASK,
  M_WINDOW_TO_TASK,
  M_BAD_RANK,
  M_BAD_SHAPE,
  M_TOO_BIG,
  M_INTER_DATA,
  M_TASK_ARGS
};

PLD_DYNAMIC(A);
PLD_DYNAMIC(B);
PLD_DEVICE(d_nothing, a, PLD_OUT(t, INT32, A, B)) { (void)a; }

PLD_HOST_TASK(t_window, t, PLD_WINDOW(w, INT32, L)) {
  (void)t;
  (void)w;
}

PLD_HOST(h_misuse, h, PLD_IN(x, INT32, NR, L), PLD_OUT(y, INT32, NR, L),
         PLD_SCALAR(what, INT32)) {
  int n = pld_world_size(h);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_axpb, r, pld_slice(h, x, r), pld_slice(h, x, r),
                 pld_slice(h, y, r), 1);
  pld_tensor r0 = pld_rank_tensor(h, 0, PLD_INT32, PLD_SHAPE(L));
  pld_window_buf wb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(L));
  switch (what) {
  case M_RANK_OTHER:
    pld_dispatch(h, d_axpb, 1, pld_slice(h, x, 1), pld_slice(h, x, 1), r0, 1);
    break;
  case M_RANK_TO_TASK:
    pld_host_task(h, t_double, pld_slice(h, x, 0), r0);
    break;
  case M_WINDOW_TO_TASK:
    pld_host_task(h, t_window, pld_window_view(h, wb, PLD_INT32, PLD_SHAPE(L)));
    break;
  case M_BAD_RANK:
    pld_rank_tensor(h, n, PLD_INT32, PLD_SHAPE(L));
    break;
  case M_BAD_SHAPE:
    pld_host_tensor(h, PLD_INT32, PLD_SHAPE(4, 0));
    break;
  case M_TOO_BIG: {
    /* 2^35 INT32 = 128 GiB: beyond an a2a3sim device's 64 GiB. */
    pld_tensor big =
        pld_rank_tensor(h, 1, PLD_INT32, PLD_SHAPE(1 << 20, 1 << 15));
    pld_dispatch(h, d_nothing, 1, big);
    break;
  }
  case M_INTER_DATA: {
    /* An intermediate has no data while the host function is traced. */
    pld_tensor a = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(L));
    pld_host_task(h, t_double, pld_slice(h, x, 0), a);
    if (pld_tensor_data(a) == NULL)
      break;
    pld_host_task(h, t_double, a, a); /* not reached */
    break;
  }
  default:
    pld_host_task(h, t_double, pld_slice(h, x, 0));
    break;
  }
}

static int misuse(int what) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x = int_tensor(2, L, 1), y = int_tensor(2, L, 0);
  pld_program *p = NULL;
  int32_t w = what;
  int st = pld_compile(h_misuse, &cfg, PLD_ARGS(x, y, w), &p);
  assert_null(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void test_task_and_intermediate_misuse(void **state) {
  (void)state;
  assert_fails_with(misuse(M_RANK_OTHER), PLD_ERR_ARG,
                    "pld_dispatch to rank 1 (in h_misuse): d_axpb: parameter "
                    "'dst' (3 of 4): rank 0 intermediate #0 lives in the "
                    "memory of rank 0's device: only rank 0's dispatches "
                    "take it");
  assert_fails_with(misuse(M_RANK_TO_TASK), PLD_ERR_ARG,
                    "pld_host_task (in h_misuse): t_double: parameter 'b' (2 "
                    "of 2): expected a parameter of h_misuse, a slice of one "
                    "or a host intermediate, got a rank intermediate: it "
                    "lives in its rank's device memory");
  assert_fails_with(misuse(M_WINDOW_TO_TASK), PLD_ERR_ARG,
                    "pld_host_task (in h_misuse): t_window: parameter 'w' (1 "
                    "of 1): expected a parameter of h_misuse, a slice of one "
                    "or a host intermediate, got a window view: windows live "
                    "in the devices' memory");
  assert_fails_with(misuse(M_BAD_RANK), PLD_ERR_ARG,
                    "pld_rank_tensor (in h_misuse): rank: expected [0, 2) "
                    "(the world size), got 2");
  assert_fails_with(misuse(M_BAD_SHAPE), PLD_ERR_ARG, "pld_host_tensor",
                    "(in h_misuse)");
  assert_fails_with(misuse(M_TOO_BIG), PLD_ERR_NOMEM, "rank 1 (device 1)",
                    "a slice of 'rank 1 intermediate #1' of 137438953472 "
                    "bytes");
  assert_fails_with(misuse(M_INTER_DATA), PLD_ERR_STATE,
                    "pld_tensor_data: t is host intermediate #1, an "
                    "intermediate of a host orchestration: it has data only "
                    "during a run, where host tasks receive it");
  assert_fails_with(misuse(M_TASK_ARGS), PLD_ERR_ARG,
                    "pld_host_task (in h_misuse): t_double: expected 2 "
                    "arguments");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_task_reduces_partials),
    cmocka_unit_test(test_task_order_follows_data),
    cmocka_unit_test(test_task_chain),
    cmocka_unit_test(test_task_artifacts),
    cmocka_unit_test(test_task_deadlock_reported),
    cmocka_unit_test(test_task_sees_write_beside_overlapping_read),
    cmocka_unit_test(test_task_failure),
    cmocka_unit_test(test_intermediate_after_run),
    cmocka_unit_test(test_task_and_intermediate_misuse),
};

PLD_TEST_MAIN("tasks", tests)
