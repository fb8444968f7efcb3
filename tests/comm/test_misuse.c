/* Misuse of windows, signals and remote operations: each is refused with
 * its status and a message naming the call, the rank, the window, the peer
 * and the region.  Mistakes a host makes are refused when compiling;
 * kernels' mistakes fail the run, and the devices run again afterwards.
 * Limits are tested at the limit and one past it. */
#include "comm_test.h"

/* ---- mistakes of the host and of device functions, refused by pld_compile */

enum { VIEW_BUF = 4096 };

/* What h_views gets wrong, by `how`. */
enum {
  VIEW_OK,
  VIEW_UNDER_ALLOCATED, /* NR bytes for NR INT32 cells */
  VIEW_PAST_END,        /* a view at an offset that runs past the buffer */
  VIEW_MISALIGNED,      /* an offset that is no multiple of the element */
  VIEW_ZERO_BYTES,      /* a buffer of 0 bytes */
  VIEW_PLAIN_TENSOR,    /* a plain tensor dispatched for a window */
  VIEW_PLAIN_LAUNCH,    /* a device tensor launched for a window */
  VIEW_RANK_SKIPPED     /* rank 1 never dispatched */
};

#define COUNT_PARAMS PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, INT32, NR)

PLD_KERNEL(k_count, k, COUNT_PARAMS) {
  int32_t n = pld_nranks(k, pld_window_comm(sig));
  pld_barrier(k, sig);
  for (int64_t i = 0; i < n; i++)
    pld_write(k, y, PLD_AT(i), n);
}

PLD_DEVICE(d_count, a, COUNT_PARAMS) { pld_launch(a, k_count, 1, sig, y); }

/* Launches k_count with a device tensor where it takes a window. */
PLD_DEVICE(d_count_plain, a, PLD_WINDOW(sig, INT32, NR),
           PLD_OUT(y, INT32, NR)) {
  pld_tensor t = pld_device_alloc(a, PLD_INT32,
                                  PLD_SHAPE(pld_tensor_dim(pld_local(sig), 0)));
  pld_launch(a, k_count, 1, t, y);
}

PLD_HOST(h_views, h, PLD_OUT(y, INT32, NR, NR), PLD_SCALAR(how, INT32)) {
  int n = pld_world_size(h);
  size_t bytes = how == VIEW_UNDER_ALLOCATED ? (size_t)n
                 : how == VIEW_ZERO_BYTES    ? 0
                                             : VIEW_BUF;
  size_t offset = how == VIEW_PAST_END     ? VIEW_BUF - 4
                  : how == VIEW_MISALIGNED ? 2
                                           : 0;
  pld_window_buf buf = pld_window_alloc(h, bytes);
  for (int r = 0; r < n; r++) {
    if (how == VIEW_RANK_SKIPPED && r == 1)
      continue;
    pld_window w = pld_window_view_at(h, buf, offset, PLD_INT32, PLD_SHAPE(n));
    if (how == VIEW_PLAIN_TENSOR)
      pld_dispatch(h, d_count, r, pld_slice(h, y, r), pld_slice(h, y, r));
    else
      pld_dispatch(h, how == VIEW_PLAIN_LAUNCH ? d_count_plain : d_count, r, w,
                   pld_slice(h, y, r));
  }
}

/* Compiles h_views for n ranks, mistake `how`; returns the status (the
 * message is pld_last_error()) after checking that a failure gave no
 * program. */
static int compile_views(int n, int how) {
  pld_config cfg = comm_config(n);
  pld_tensor y = comm_int_tensor(0, 2, (int64_t[]){n, n});
  pld_program *p = NULL;
  int st = pld_compile(h_views, &cfg, PLD_ARGS(y, how), &p);
  if (st == PLD_OK) {
    assert_ok(pld_program_run(p, PLD_ARGS(y, how)));
    const int32_t *ys = pld_tensor_data(y);
    for (int i = 0; i < n * n; i++)
      assert_int_equal(ys[i], n);
  }
  assert_true((st == PLD_OK) == (p != NULL));
  pld_program_destroy(p);
  pld_tensor_destroy(y);
  return st;
}

/* Window sizes are bytes: NR bytes for NR INT32 cells is caught when the
 * view is taken, with the size it needs. */
static void run_window_under_allocated(int n) {
  char view[64], needs[64], alloc[64];
  snprintf(view, sizeof view, "view INT32[%d] at byte 0 needs %d bytes", n,
           4 * n);
  snprintf(alloc, sizeof alloc, "window buffer #0 was allocated with %d bytes",
           n);
  snprintf(needs, sizeof needs, "allocate at least %d)", 4 * n);
  assert_fails_with(compile_views(n, VIEW_UNDER_ALLOCATED), PLD_ERR_BOUNDS,
                    "pld_window_view (in h_views): ", view, alloc,
                    "sizes are in bytes, not elements", needs);
  assert_ok(compile_views(n, VIEW_OK));
}

static void test_window_under_allocated(void **state) {
  (void)state;
  comm_over_rank_counts(run_window_under_allocated);
}

static void test_window_view_outside_buffer(void **state) {
  (void)state;
  if (comm_fits(3))
    assert_fails_with(
        compile_views(3, VIEW_PAST_END), PLD_ERR_BOUNDS,
        "pld_window_view (in h_views): view INT32[3] at byte 4092 "
        "needs 4104 bytes",
        "window buffer #0 was allocated with 4096 bytes");
  if (comm_fits(2))
    assert_fails_with(compile_views(2, VIEW_MISALIGNED), PLD_ERR_ARG,
                      "pld_window_view (in h_views): offset: expected a "
                      "multiple of 4 (the size of INT32), got 2");
  if (comm_fits(2))
    assert_fails_with(compile_views(2, VIEW_ZERO_BYTES), PLD_ERR_ARG,
                      "pld_window_alloc (in h_views): bytes: expected 1 to ",
                      "got 0");
  comm_ran_or_skip();
}

/* A plain tensor is no window, whether the host dispatches it or a device
 * function launches it. */
static void test_plain_tensor_for_window(void **state) {
  (void)state;
  if (comm_fits(2))
    assert_fails_with(compile_views(2, VIEW_PLAIN_TENSOR), PLD_ERR_ARG,
                      "pld_dispatch to rank 0 (in h_views): d_count: parameter "
                      "'sig' (1 of 2)",
                      "expected a window INT32[NR], got a plain tensor: peers "
                      "cannot reach it");
  if (comm_fits(4))
    assert_fails_with(compile_views(4, VIEW_PLAIN_LAUNCH), PLD_ERR_ARG,
                      "pld_launch", "k_count: parameter 'sig' (1 of 2)",
                      "expected a window INT32[NR], got a plain tensor");
  comm_ran_or_skip();
}

/* Every rank must be dispatched, or its peers would wait forever. */
static void test_rank_never_dispatched(void **state) {
  (void)state;
  assert_fails_with(compile_views(3, VIEW_RANK_SKIPPED), PLD_ERR_ARG,
                    "pld_compile: h_views: rank 1 (device 3) is never "
                    "dispatched; every rank of the world (3) must be");
  assert_no_children();
}

/* ---- kernels' mistakes, at run time ------------------------------------- */

enum { MR = 4, MC = 16, MB = 32 };

/* What k_misuse does wrong on rank flag[0], by flag[1]. */
enum {
  MIS_NONE,
  MIS_LOAD_ROWS,   /* remote_load rows [1, 5) of a 4-row window */
  MIS_STORE_COLS,  /* remote_store cols [1, 17) of a 16-column window */
  MIS_PUT_DST,     /* put to rows [2, 6) */
  MIS_GET_SRC,     /* get from cols [13, 17) */
  MIS_LOAD_EMPTY,  /* remote_load of 0 rows */
  MIS_PUT_SRC,     /* put from outside the source tensor */
  MIS_LOAD_PEER_N, /* peer == nranks */
  MIS_LOAD_PEER_NEG,
  MIS_STORE_PEER_NEG,
  MIS_PUT_PEER_NEG,
  MIS_GET_PEER_NEG,
  MIS_PUT_PEER_N,
  MIS_NOTIFY_PEER_N,
  MIS_NOTIFY_PEER_NEG,
  MIS_WAIT_FP32, /* wait on an FP32 window */
  MIS_NOTIFY_FP32,
  MIS_WAIT_RANK2,  /* a 2-D index into a 1-D signal window */
  MIS_NOTIFY_CELL, /* a cell past the end */
  MIS_WAIT_CMP,    /* a comparison that does not exist */
  MIS_NOTIFY_OP,
  MIS_ATOMIC_UINT8, /* atomic add on a UINT8 window */
  MIS_GET_ATOMIC,   /* a get cannot accumulate */
  MIS_STORE_DTYPE,  /* an FP32 tile into a UINT8 window */
  MIS_PUT_DTYPE,
  MIS_GET_INTO_IN,     /* get into an In tensor */
  MIS_NO_COMM,         /* rank of an empty window handle */
  MIS_BARRIER_SMALL,   /* barrier on a window of fewer cells than ranks */
  MIS_BARRIER_FP32,    /* barrier on an FP32 window of nranks cells */
  MIS_BARRIER_2D,      /* barrier on an INT32[nranks, 1] window */
  MIS_GET_DST,         /* get into rows [1, 5) of a 4-row tensor */
  MIS_NOTIFY_NULL_IDX, /* an index pointer that is NULL */
  MIS_WAIT_NULL_IDX
};

/* Every rank copies x to y.  The others then tell the one at fault, which
 * waits for all of them before its mistake: its failure stops no kernel
 * midway, so each run's result is that mistake and nothing else. */
#define MISUSE_PARAMS                                                          \
  PLD_IN(x, FP32, MR, MC), PLD_WINDOW(data, FP32, MR, MC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(bytes, UINT8, MR, MB),            \
      PLD_WINDOW(one, INT32, 1), PLD_WINDOW(gate, INT32, 1),                   \
      PLD_OUT(y, FP32, MR, MC), PLD_IN(flag, INT32, 2),                        \
      PLD_SCALAR(rank, INT32), PLD_WINDOW(fsig, FP32, NR),                     \
      PLD_WINDOW(sig2d, INT32, NR, 1)

PLD_KERNEL(k_misuse, k, MISUSE_PARAMS) {
  int32_t n = pld_nranks(k, pld_window_comm(data));
  int32_t bad = (int32_t)pld_read(k, flag, PLD_AT(0));
  pld_tile *t = pld_load(k, x, 0, 0, MR, MC);
  pld_store(k, t, y, 0, 0);
  if (rank != bad) {
    pld_notify(k, gate, bad, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    return;
  }
  pld_wait(k, gate, PLD_AT(0), n - 1, PLD_WAIT_GE);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  pld_window none = {NULL};
  switch ((int)pld_read(k, flag, PLD_AT(1))) {
  case MIS_LOAD_ROWS:
    pld_remote_load(k, data, 1, 1, 0, MR, MC);
    break;
  case MIS_STORE_COLS:
    pld_remote_store(k, t, data, 1, 0, 1, PLD_ATOMIC_NONE);
    break;
  case MIS_PUT_DST:
    o.dst_row = 2;
    pld_put(k, data, 1, x, &o);
    break;
  case MIS_GET_SRC:
    o.src_col = MC - 3, o.rows = 1, o.cols = 4;
    pld_get(k, y, 1, data, &o);
    break;
  case MIS_LOAD_EMPTY:
    pld_remote_load(k, data, 1, 0, 0, 0, MC);
    break;
  case MIS_PUT_SRC:
    o.src_row = 3, o.rows = 2;
    pld_put(k, data, 1, x, &o);
    break;
  case MIS_LOAD_PEER_N:
    pld_remote_load(k, data, n, 0, 0, MR, MC);
    break;
  case MIS_LOAD_PEER_NEG:
    pld_remote_load(k, data, -1, 0, 0, MR, MC);
    break;
  case MIS_STORE_PEER_NEG:
    pld_remote_store(k, t, data, -2, 0, 0, PLD_ATOMIC_NONE);
    break;
  case MIS_PUT_PEER_NEG:
    pld_put(k, data, -1, x, NULL);
    break;
  case MIS_GET_PEER_NEG:
    pld_get(k, y, -1, data, NULL);
    break;
  case MIS_PUT_PEER_N:
    pld_put(k, data, n, x, NULL);
    break;
  case MIS_NOTIFY_PEER_N:
    pld_notify(k, sig, n, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    break;
  case MIS_NOTIFY_PEER_NEG:
    pld_notify(k, sig, -1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    break;
  case MIS_WAIT_FP32:
    pld_wait(k, data, PLD_AT(0, 0), 1, PLD_WAIT_GE);
    break;
  case MIS_NOTIFY_FP32:
    pld_notify(k, data, 0, PLD_AT(0, 0), 1, PLD_NOTIFY_SET);
    break;
  case MIS_WAIT_RANK2:
    pld_wait(k, sig, PLD_AT(0, 0), 1, PLD_WAIT_GE);
    break;
  case MIS_NOTIFY_CELL:
    pld_notify(k, sig, 1, PLD_AT(n), 1, PLD_NOTIFY_ADD);
    break;
  case MIS_WAIT_CMP:
    pld_wait(k, sig, PLD_AT(0), 1, (pld_wait_cmp)6);
    break;
  case MIS_NOTIFY_OP:
    pld_notify(k, sig, 1, PLD_AT(0), 1, (pld_notify_op)5);
    break;
  case MIS_ATOMIC_UINT8:
    pld_remote_store(k, pld_full(k, PLD_UINT8, 1, MB, 1), bytes, 1, 0, 0,
                     PLD_ATOMIC_ADD);
    break;
  case MIS_GET_ATOMIC:
    o.atomic = PLD_ATOMIC_ADD;
    pld_get(k, y, 1, data, &o);
    break;
  case MIS_STORE_DTYPE:
    pld_remote_store(k, t, bytes, 1, 0, 0, PLD_ATOMIC_NONE);
    break;
  case MIS_PUT_DTYPE:
    pld_put(k, bytes, 1, x, NULL);
    break;
  case MIS_GET_INTO_IN:
    pld_get(k, x, 1, data, NULL);
    break;
  case MIS_NO_COMM:
    pld_rank(k, pld_window_comm(none));
    break;
  case MIS_BARRIER_SMALL:
    pld_barrier(k, one);
    break;
  case MIS_BARRIER_FP32:
    pld_barrier(k, fsig);
    break;
  case MIS_BARRIER_2D:
    pld_barrier(k, sig2d);
    break;
  case MIS_GET_DST:
    o.dst_row = 1;
    pld_get(k, y, 1, data, &o);
    break;
  case MIS_NOTIFY_NULL_IDX:
    pld_notify(k, sig, 1, 1, NULL, 1, PLD_NOTIFY_ADD);
    break;
  case MIS_WAIT_NULL_IDX:
    pld_wait(k, sig, 1, NULL, 1, PLD_WAIT_GE);
    break;
  default:
    break;
  }
}

PLD_DEVICE(d_misuse, a, MISUSE_PARAMS) {
  pld_launch(a, k_misuse, 1, x, data, sig, bytes, one, gate, y, flag, rank,
             fsig, sig2d);
}

PLD_HOST(h_misuse, h, PLD_IN(x, FP32, NR, MR, MC), PLD_OUT(y, FP32, NR, MR, MC),
         PLD_IN(flag, INT32, 2)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(MR, MC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf bytes = pld_window_alloc(h, MR * MB);
  pld_window_buf one = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf gate = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf fsig = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n));
  pld_window_buf sig2d = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, 1));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_misuse, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(MR, MC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, bytes, PLD_UINT8, PLD_SHAPE(MR, MB)),
                 pld_window_view(h, one, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, gate, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, y, r), flag, r,
                 pld_window_view(h, fsig, PLD_FP32, PLD_SHAPE(n)),
                 pld_window_view(h, sig2d, PLD_INT32, PLD_SHAPE(n, 1)));
}

/* One mistake and what it must give: rank `bad` calls `fn` wrongly (by
 * `how`); the run fails with `status` and a message that starts with fn
 * and the kernel's identity and contains each of `says`. */
struct misuse_case {
  int bad, how, status;
  const char *fn;
  const char *says[3];
};

#define NCASES(cases) (sizeof(cases) / sizeof((cases)[0]))

/* Compiles h_misuse over n ranks and runs each case; then a correct run
 * works (the devices outlive their kernels' mistakes), and destroying the
 * program leaves no process behind. */
static void expect_misuses(int n, const struct misuse_case *cases,
                           size_t ncases) {
  pld_config cfg = comm_config(n);
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, MR, MC}, 1, 0);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){n, MR, MC}, 0, 0);
  pld_tensor flag = comm_int_tensor(0, 1, (int64_t[]){2});
  int32_t *f = pld_tensor_data(flag);
  pld_program *p;
  assert_ok(pld_compile(h_misuse, &cfg, PLD_ARGS(x, y, flag), &p));
  for (size_t i = 0; i < ncases; i++) {
    const struct misuse_case *c = &cases[i];
    f[0] = c->bad;
    f[1] = c->how;
    int st = pld_program_run(p, PLD_ARGS(x, y, flag));
    char who[160];
    snprintf(who, sizeof who,
             "%s: kernel k_misuse (rank %d, device %d, AIV core 0, block 0 "
             "of 1): ",
             c->fn, c->bad, comm_ids[c->bad]);
    const char *subs[] = {who, c->says[0], c->says[1], c->says[2], NULL};
    pld_test_assert_fails(st, c->status, __FILE__, __LINE__, subs);
  }
  f[0] = 0;
  f[1] = MIS_NONE;
  assert_ok(pld_program_run(p, PLD_ARGS(x, y, flag)));
  comm_expect_f32("y after the mistakes", pld_tensor_data(y),
                  pld_tensor_data(x), pld_tensor_numel(x));
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(flag);
}

/* The region of a remote access, and of a put's or get's local side, must
 * lie inside the tensor; the message names window, peer and region. */
static void test_remote_region_out_of_range(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {1,
       MIS_LOAD_ROWS,
       PLD_ERR_BOUNDS,
       "pld_remote_load",
       {"window 'data' (buffer #0) of peer 1: rows [1, 5) cols [0, 16) "
        "outside FP32[4, 16]"}},
      {1,
       MIS_STORE_COLS,
       PLD_ERR_BOUNDS,
       "pld_remote_store",
       {"window 'data' (buffer #0) of peer 1: rows [0, 4) cols [1, 17) "
        "outside FP32[4, 16]"}},
      {1,
       MIS_PUT_DST,
       PLD_ERR_BOUNDS,
       "pld_put",
       {"window 'data' (buffer #0) of peer 1: rows [2, 6) cols [0, 16) "
        "outside FP32[4, 16]"}},
      {1,
       MIS_GET_SRC,
       PLD_ERR_BOUNDS,
       "pld_get",
       {"window 'data' (buffer #0) of peer 1: rows [0, 1) cols [13, 17) "
        "outside FP32[4, 16]"}},
      {1,
       MIS_LOAD_EMPTY,
       PLD_ERR_BOUNDS,
       "pld_remote_load",
       {"window 'data' (buffer #0) of peer 1: rows [0, 0) cols [0, 16) "
        "outside"}},
      {1,
       MIS_PUT_SRC,
       PLD_ERR_BOUNDS,
       "pld_put",
       {"source 'x': rows [3, 5) cols [0, 16) outside FP32[4, 16]"}},
  };
  expect_misuses(3, cases, NCASES(cases));
}

/* A peer is a rank of the window's domain: 0 to nranks - 1. */
static void test_peer_out_of_range(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {2,
       MIS_LOAD_PEER_N,
       PLD_ERR_BOUNDS,
       "pld_remote_load",
       {"window 'data' (buffer #0): peer 4 outside its domain of 4 ranks "
        "(peers are 0 to 3)"}},
      {2,
       MIS_PUT_PEER_N,
       PLD_ERR_BOUNDS,
       "pld_put",
       {"window 'data' (buffer #0): peer 4 outside its domain"}},
      {2,
       MIS_NOTIFY_PEER_N,
       PLD_ERR_BOUNDS,
       "pld_notify",
       {"window 'sig' (buffer #1): peer 4 outside its domain of 4 ranks "
        "(peers are 0 to 3)"}},
      {2,
       MIS_NOTIFY_PEER_NEG,
       PLD_ERR_BOUNDS,
       "pld_notify",
       {"window 'sig' (buffer #1): peer -1 outside its domain of 4 ranks"}},
  };
  expect_misuses(4, cases, NCASES(cases));
}

/* A negative peer is outside the domain too.  (A regression test: the
 * remote operations used to accept it and read comm->members[-1]; fixed in
 * a8575b8.) */
static void test_negative_peer_rma(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {1,
       MIS_LOAD_PEER_NEG,
       PLD_ERR_BOUNDS,
       "pld_remote_load",
       {"window 'data' (buffer #0)", "peer -1"}},
      {1,
       MIS_STORE_PEER_NEG,
       PLD_ERR_BOUNDS,
       "pld_remote_store",
       {"window 'data' (buffer #0)", "peer -2"}},
      {1,
       MIS_PUT_PEER_NEG,
       PLD_ERR_BOUNDS,
       "pld_put",
       {"window 'data' (buffer #0)", "peer -1"}},
      {1,
       MIS_GET_PEER_NEG,
       PLD_ERR_BOUNDS,
       "pld_get",
       {"window 'data' (buffer #0)", "peer -1"}},
  };
  expect_misuses(2, cases, NCASES(cases));
}

/* Signals are INT32 cells, at indices of the window's rank inside it;
 * comparisons and operations are the enums' values. */
static void test_signal_misuse(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {0,
       MIS_WAIT_FP32,
       PLD_ERR_ARG,
       "pld_wait",
       {"window 'data' (buffer #0) is FP32: signals are INT32 cells"}},
      {1,
       MIS_NOTIFY_FP32,
       PLD_ERR_ARG,
       "pld_notify",
       {"window 'data' (buffer #0) is FP32: signals are INT32 cells"}},
      {2,
       MIS_WAIT_RANK2,
       PLD_ERR_BOUNDS,
       "pld_wait",
       {"window 'sig' (buffer #1) has 1 dimension, got an index of 2"}},
      {0,
       MIS_NOTIFY_CELL,
       PLD_ERR_BOUNDS,
       "pld_notify",
       {"window 'sig' (buffer #1) of peer 1: index 3 of dimension 0 outside "
        "INT32[3]"}},
      {1,
       MIS_WAIT_CMP,
       PLD_ERR_ARG,
       "pld_wait",
       {"cmp: expected PLD_WAIT_EQ, _GE, _NE, _GT, _LT or _LE, got 6"}},
      {1,
       MIS_NOTIFY_OP,
       PLD_ERR_ARG,
       "pld_notify",
       {"op: expected PLD_NOTIFY_ADD or PLD_NOTIFY_SET, got 5"}},
      {2,
       MIS_NOTIFY_NULL_IDX,
       PLD_ERR_ARG,
       "pld_notify",
       {"idx: expected an index (PLD_AT(...)), got NULL"}},
      {0,
       MIS_WAIT_NULL_IDX,
       PLD_ERR_ARG,
       "pld_wait",
       {"idx: expected an index (PLD_AT(...)), got NULL"}},
  };
  expect_misuses(3, cases, NCASES(cases));
}

static void test_atomic_and_dtype_misuse(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {0,
       MIS_ATOMIC_UINT8,
       PLD_ERR_UNSUPPORTED,
       "pld_remote_store",
       {"atomic add on UINT8: supported for FP32, FP16, BF16, INT32, INT16 "
        "and INT8"}},
      {0, MIS_GET_ATOMIC, PLD_ERR_ARG, "pld_get", {"a get cannot accumulate"}},
      {1,
       MIS_STORE_DTYPE,
       PLD_ERR_ARG,
       "pld_remote_store",
       {"tile is FP32, window 'bytes' (buffer #2) is UINT8"}},
      {1,
       MIS_PUT_DTYPE,
       PLD_ERR_ARG,
       "pld_put",
       {"source 'x' is FP32 but window 'bytes' (buffer #2) of peer 1 is "
        "UINT8"}},
  };
  expect_misuses(2, cases, NCASES(cases));
}

static void test_kernel_argument_misuse(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {2,
       MIS_GET_INTO_IN,
       PLD_ERR_ARG,
       "pld_get",
       {"dst: tensor 'x' is an In parameter"}},
      {0,
       MIS_NO_COMM,
       PLD_ERR_ARG,
       "pld_rank",
       {"comm: expected the context of a window, got none"}},
      {1,
       MIS_BARRIER_SMALL,
       PLD_ERR_ARG,
       "pld_barrier",
       {"window 'one' (buffer #3) is INT32[1]: expected INT32[n] with n >= 3 "
        "(the domain's size)"}},
  };
  expect_misuses(3, cases, NCASES(cases));
}

/* The barrier's window is checked as a whole: dtype and rank too, not
 * only its length. */
static void test_barrier_window_dtype_and_rank(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {0,
       MIS_BARRIER_FP32,
       PLD_ERR_ARG,
       "pld_barrier",
       {"window 'fsig' (buffer #5) is FP32[3]: expected INT32[n] with n >= 3 "
        "(the domain's size)"}},
      {2,
       MIS_BARRIER_2D,
       PLD_ERR_ARG,
       "pld_barrier",
       {"window 'sig2d' (buffer #6) is INT32[3, 1]: expected INT32[n] with "
        "n >= 3"}},
  };
  expect_misuses(3, cases, NCASES(cases));
}

/* A get's local destination is checked like a put's source. */
static void test_get_destination_out_of_range(void **state) {
  (void)state;
  static const struct misuse_case cases[] = {
      {0,
       MIS_GET_DST,
       PLD_ERR_BOUNDS,
       "pld_get",
       {"destination 'y': rows [1, 5) cols [0, 16) outside FP32[4, 16]"}},
  };
  expect_misuses(2, cases, NCASES(cases));
}

/* ---- the barrier's window at its limit ---------------------------------- */

PLD_DYNAMIC(NS); /* cells of the barrier's window */

/* Every rank adds 1 to `count` on every rank, then two barriers on a
 * window of NS cells; arrived = count after the first (n: every rank's
 * add came before), after = the window after the second (zero again). */
#define CELLS_PARAMS                                                           \
  PLD_WINDOW(sig, INT32, NS), PLD_WINDOW(count, INT32, 1),                     \
      PLD_OUT(arrived, INT32, 1), PLD_OUT(after, INT32, NS)

PLD_KERNEL(k_cells, k, CELLS_PARAMS) {
  int32_t n = pld_nranks(k, pld_window_comm(count));
  for (int32_t p = 0; p < n; p++)
    pld_notify(k, count, p, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_barrier(k, sig);
  pld_write(k, arrived, PLD_AT(0), pld_read(k, pld_local(count), PLD_AT(0)));
  pld_barrier(k, sig);
  for (int64_t i = 0; i < pld_tensor_dim(after, 0); i++)
    pld_write(k, after, PLD_AT(i), pld_read(k, pld_local(sig), PLD_AT(i)));
}

PLD_DEVICE(d_cells, a, CELLS_PARAMS) {
  pld_launch(a, k_cells, 1, sig, count, arrived, after);
}

PLD_HOST(h_cells, h, PLD_OUT(arrived, INT32, NR, 1),
         PLD_OUT(after, INT32, NR, NS)) {
  int64_t cells = pld_tensor_dim(after, 1);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(cells));
  pld_window_buf count = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_cells, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(cells)),
                 pld_window_view(h, count, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, arrived, r), pld_slice(h, after, r));
}

/* Runs h_cells over n ranks with a barrier window of `cells` cells;
 * returns its status, after checking the results when it worked. */
static int barrier_cells(int n, int cells) {
  pld_config cfg = comm_config(n);
  pld_tensor arrived = comm_int_tensor(-1, 2, (int64_t[]){n, 1});
  pld_tensor after = comm_int_tensor(-1, 2, (int64_t[]){n, cells});
  int st = pld_run(h_cells, &cfg, PLD_ARGS(arrived, after));
  if (st == PLD_OK) {
    int32_t want[4 * 5];
    for (int i = 0; i < n; i++)
      want[i] = n;
    comm_expect_i32("arrived (count after the first barrier)",
                    pld_tensor_data(arrived), want, n);
    memset(want, 0, sizeof want);
    comm_expect_i32("after (the window after the second barrier)",
                    pld_tensor_data(after), want, n * cells);
  }
  pld_tensor_destroy(arrived);
  pld_tensor_destroy(after);
  return st;
}

/* One cell short is refused with the clear message (not a notify out of
 * bounds or a deadlock); exactly nranks cells work, and more. */
static void run_barrier_window_limit(int n) {
  char shape[64], need[64];
  snprintf(shape, sizeof shape,
           "window 'sig' (buffer #0) is INT32[%d]: ", n - 1);
  snprintf(need, sizeof need,
           "expected INT32[n] with n >= %d (the domain's size)", n);
  assert_fails_with(barrier_cells(n, n - 1), PLD_ERR_ARG,
                    "pld_barrier: kernel k_cells (rank ", shape, need);
  assert_ok(barrier_cells(n, n));
  assert_ok(barrier_cells(n, n + 1));
}

static void test_barrier_window_one_cell_short(void **state) {
  (void)state;
  comm_over_rank_counts(run_barrier_window_limit);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_window_under_allocated),
    cmocka_unit_test(test_window_view_outside_buffer),
    cmocka_unit_test(test_plain_tensor_for_window),
    cmocka_unit_test(test_rank_never_dispatched),
    cmocka_unit_test(test_remote_region_out_of_range),
    cmocka_unit_test(test_peer_out_of_range),
    cmocka_unit_test(test_negative_peer_rma),
    cmocka_unit_test(test_signal_misuse),
    cmocka_unit_test(test_atomic_and_dtype_misuse),
    cmocka_unit_test(test_kernel_argument_misuse),
    cmocka_unit_test(test_barrier_window_dtype_and_rank),
    cmocka_unit_test(test_get_destination_out_of_range),
    cmocka_unit_test(test_barrier_window_one_cell_short),
};

PLD_TEST_MAIN("comm_misuse", tests)
