/* Collectives whose ranks work on different memory, and programs that run
 * again after a failed run.
 *
 * Ranks that make the same call (collective, op, dtype, count, mode) on
 * different windows - another window buffer, or another view of one
 * buffer, as ping-pong buffers one step out of phase - all fail with
 * PLD_ERR_MISMATCH naming each rank's buffer and bytes, for every
 * collective, instead of returning rank-dependent results.
 *
 * A run that fails anywhere (a mismatch, a kernel's own failure before its
 * call, a rank that never calls: a deadlock, a kernel over its time limit)
 * leaves the collectives' calls it interrupted behind; the same program
 * then runs again as usual, with its windows zeroed or kept between runs
 * (pld_config.keep_windows), for every collective and mode: each later
 * run's results are checked against a plain C loop, twice (the call
 * numbers go on agreeing from run to run). */
#include "comm_test.h"

PLD_DYNAMIC(L);  /* elements of a row */
PLD_DYNAMIC(NS); /* cells of sig: PLD_SIGNAL_CELLS(P, 1) */

/* The call every rank makes. */
enum {
  C_MESH, /* pld_allreduce(v, sig, SUM, mode) */
  C_TWO_PHASE,
  C_RING,
  C_AUTO,
  C_BROADCAST,      /* pld_broadcast(v, sig, 0) */
  C_ALLGATHER,      /* pld_allgather(local(stage), m, sig) */
  C_REDUCE_SCATTER, /* pld_reduce_scatter(m, sig, SUM) */
  C_ALL_TO_ALL,     /* pld_all_to_all(x, m, sig) */
  C_ALL_TO_ALL_V,   /* pld_all_to_all_v(x, sc, m, rc, sig), every count 1 */
  C_BARRIER,
  NCALLS
};

static const char *const call_names[NCALLS] = {
    "pld_allreduce",    "pld_allreduce", "pld_allreduce",      "pld_allreduce",
    "pld_broadcast",    "pld_allgather", "pld_reduce_scatter", "pld_all_to_all",
    "pld_all_to_all_v", "pld_barrier"};

/* What the rank at fault does instead. */
enum {
  F_NONE,
  F_WINDOW, /* the call on window flag[FL_BAD_WIN], the others' on
               flag[FL_WIN] */
  F_LOCAL,  /* fails a check of its own (a load out of bounds) first */
  F_RETURN, /* returns without calling: the others deadlock */
  F_SPIN    /* computes without end: over its time limit */
};

enum { FL_CALL, FL_BAD, FL_FAULT, FL_WIN, FL_BAD_WIN, NFL };

/* The windows a call works on, by index: vectors v[i] and matrices m[i]:
 * 0 the usual one, 1 another buffer, 2 and 3 two views of one buffer. */
enum { NWIN = 4 };

/* Window buffers in the order h_rerun allocates them ("buffer #k"). */
enum { B_V, B_V2, B_VP, B_M, B_M2, B_MP, B_STAGE, B_SIG };

#define RERUN_WINDOWS                                                          \
  PLD_WINDOW(v0, FP32, L), PLD_WINDOW(v1, FP32, L), PLD_WINDOW(v2, FP32, L),   \
      PLD_WINDOW(v3, FP32, L), PLD_WINDOW(m0, FP32, NR, L),                    \
      PLD_WINDOW(m1, FP32, NR, L), PLD_WINDOW(m2, FP32, NR, L),                \
      PLD_WINDOW(m3, FP32, NR, L), PLD_WINDOW(stage, FP32, L),                 \
      PLD_WINDOW(sig, INT32, NS)

/* Every vector window = row 0 of x, every matrix window = x, stage = row
 * 0 of x. */
PLD_KERNEL(k_stage, k, PLD_IN(x, FP32, NR, L), RERUN_WINDOWS) {
  (void)sig;
  const pld_window vs[] = {v0, v1, v2, v3, stage};
  const pld_window ms[] = {m0, m1, m2, m3};
  const int64_t n = pld_tensor_dim(x, 0), len = pld_tensor_dim(x, 1);
  for (int64_t r = 0; r < n; r++) {
    pld_tile *t = pld_load(k, x, r, 0, 1, (int32_t)len);
    for (int i = 0; i < NWIN; i++)
      pld_store(k, t, pld_local(ms[i]), r, 0);
    for (int i = 0; r == 0 && i < NWIN + 1; i++)
      pld_store(k, t, pld_local(vs[i]), 0, 0);
    pld_tile_free(k, t);
  }
}

PLD_KERNEL(k_call, k, PLD_IN(flag, INT32, NFL), PLD_IN(x, FP32, NR, L),
           PLD_IN(sc, INT32, NR), PLD_OUT(rc, INT32, NR), RERUN_WINDOWS) {
  const pld_window vs[] = {v0, v1, v2, v3};
  const pld_window ms[] = {m0, m1, m2, m3};
  const int32_t me = pld_rank(k, pld_window_comm(sig));
  const int call = (int)pld_read(k, flag, PLD_AT(FL_CALL));
  const int bad = me == (int32_t)pld_read(k, flag, PLD_AT(FL_BAD));
  const int fault = bad ? (int)pld_read(k, flag, PLD_AT(FL_FAULT)) : F_NONE;
  const int w =
      (int)pld_read(k, flag, PLD_AT(fault == F_WINDOW ? FL_BAD_WIN : FL_WIN));
  if (fault == F_RETURN)
    return;
  if (fault == F_LOCAL) /* a row past x's last: PLD_ERR_BOUNDS */
    pld_load(k, x, pld_tensor_dim(x, 0), 0, 1, 1);
  while (fault == F_SPIN) /* until the host stops this process */
    if (pld_read(k, flag, PLD_AT(FL_CALL)) < 0)
      return;
  static const pld_allreduce_mode modes[] = {
      PLD_ALLREDUCE_MESH, PLD_ALLREDUCE_TWO_PHASE, PLD_ALLREDUCE_RING,
      PLD_ALLREDUCE_AUTO};
  switch (call) {
  case C_MESH:
  case C_TWO_PHASE:
  case C_RING:
  case C_AUTO:
    pld_allreduce(k, vs[w], sig, PLD_REDUCE_SUM, modes[call - C_MESH]);
    break;
  case C_BROADCAST:
    pld_broadcast(k, vs[w], sig, 0);
    break;
  case C_ALLGATHER:
    pld_allgather(k, pld_local(stage), ms[w], sig);
    break;
  case C_REDUCE_SCATTER:
    pld_reduce_scatter(k, ms[w], sig, PLD_REDUCE_SUM);
    break;
  case C_ALL_TO_ALL:
    pld_all_to_all(k, x, ms[w], sig);
    break;
  case C_ALL_TO_ALL_V:
    pld_all_to_all_v(k, x, sc, ms[w], rc, sig);
    break;
  default:
    pld_barrier(k, sig);
    break;
  }
}

/* y row 0 = v0, rows 1 to P = m0. */
PLD_KERNEL(k_out, k, PLD_WINDOW(v0, FP32, L), PLD_WINDOW(m0, FP32, NR, L),
           PLD_OUT(y, FP32, NR + 1, L)) {
  const int64_t n = pld_tensor_dim(y, 0) - 1, len = pld_tensor_dim(y, 1);
  pld_tile *t = pld_load(k, pld_local(v0), 0, 0, 1, (int32_t)len);
  pld_store(k, t, y, 0, 0);
  pld_tile_free(k, t);
  for (int64_t r = 0; r < n; r++) {
    t = pld_load(k, pld_local(m0), r, 0, 1, (int32_t)len);
    pld_store(k, t, y, r + 1, 0);
    pld_tile_free(k, t);
  }
}

PLD_DEVICE(d_rerun, a, PLD_IN(flag, INT32, NFL), PLD_IN(x, FP32, NR, L),
           PLD_IN(sc, INT32, NR), PLD_OUT(rc, INT32, NR), RERUN_WINDOWS,
           PLD_OUT(y, FP32, NR + 1, L)) {
  pld_launch(a, k_stage, 1, x, v0, v1, v2, v3, m0, m1, m2, m3, stage, sig);
  pld_launch(a, k_call, 1, flag, x, sc, rc, v0, v1, v2, v3, m0, m1, m2, m3,
             stage, sig);
  pld_launch(a, k_out, 1, v0, m0, y);
}

PLD_HOST(h_rerun, h, PLD_IN(flag, INT32, NFL), PLD_IN(x, FP32, NR, NR, L),
         PLD_IN(sc, INT32, NR, NR), PLD_OUT(rc, INT32, NR, NR),
         PLD_OUT(y, FP32, NR, NR + 1, L)) {
  const int n = pld_world_size(h);
  const int64_t len = pld_tensor_dim(x, 2);
  const int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf b[B_SIG + 1];
  b[B_V] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(len));
  b[B_V2] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(len));
  b[B_VP] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(2, len));
  b[B_M] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, len));
  b[B_M2] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, len));
  b[B_MP] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(2, n, len));
  b[B_STAGE] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(len));
  b[B_SIG] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  const size_t vb = (size_t)len * 4, mb = (size_t)(n * len) * 4;
  for (int q = 0; q < n; q++)
    pld_dispatch(
        h, d_rerun, q, flag, pld_slice(h, x, q), pld_slice(h, sc, q),
        pld_slice(h, rc, q),
        pld_window_view(h, b[B_V], PLD_FP32, PLD_SHAPE(len)),
        pld_window_view(h, b[B_V2], PLD_FP32, PLD_SHAPE(len)),
        pld_window_view_at(h, b[B_VP], 0, PLD_FP32, PLD_SHAPE(len)),
        pld_window_view_at(h, b[B_VP], vb, PLD_FP32, PLD_SHAPE(len)),
        pld_window_view(h, b[B_M], PLD_FP32, PLD_SHAPE(n, len)),
        pld_window_view(h, b[B_M2], PLD_FP32, PLD_SHAPE(n, len)),
        pld_window_view_at(h, b[B_MP], 0, PLD_FP32, PLD_SHAPE(n, len)),
        pld_window_view_at(h, b[B_MP], mb, PLD_FP32, PLD_SHAPE(n, len)),
        pld_window_view(h, b[B_STAGE], PLD_FP32, PLD_SHAPE(len)),
        pld_window_view(h, b[B_SIG], PLD_INT32, PLD_SHAPE(ns)),
        pld_slice(h, y, q));
}

/* ---- running it ---------------------------------------------------------- */

struct prog {
  int p;
  int64_t len;
  pld_tensor flag, x, sc, rc, y;
  pld_program *prog;
};

/* x[q][r][i]: integers, so that every sum is exact whatever the order,
 * and ranks, rows and elements all apart. */
static float x_at(int q, int r, int64_t i) {
  return (float)(1000 * q + 100 * r + i % 89);
}

static void prog_init(struct prog *g, int p, int64_t len, int keep,
                      int64_t kernel_timeout_ms) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->len = len;
  g->flag = comm_int_tensor(0, 1, (int64_t[]){NFL});
  g->x = comm_tensor(PLD_FP32, 3, (int64_t[]){p, p, len});
  float *xs = pld_tensor_data(g->x);
  for (int q = 0; q < p; q++)
    for (int r = 0; r < p; r++)
      for (int64_t i = 0; i < len; i++)
        xs[(q * p + r) * len + i] = x_at(q, r, i);
  g->sc = comm_int_tensor(1, 2, (int64_t[]){p, p});
  g->rc = comm_int_tensor(0, 2, (int64_t[]){p, p});
  g->y = comm_tensor(PLD_FP32, 3, (int64_t[]){p, p + 1, len});
  pld_config cfg = comm_config(p);
  cfg.keep_windows = keep;
  if (kernel_timeout_ms)
    cfg.kernel_timeout_ms = kernel_timeout_ms;
  assert_ok(pld_compile(h_rerun, &cfg,
                        PLD_ARGS(g->flag, g->x, g->sc, g->rc, g->y), &g->prog));
}

static void prog_free(struct prog *g) {
  pld_program_destroy(g->prog);
  if (pld_process_count() == 1)
    assert_no_children();
  pld_tensor t[] = {g->flag, g->x, g->sc, g->rc, g->y};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    pld_tensor_destroy(t[i]);
}

/* Every rank makes `call` on window index `win` but rank `bad`, which
 * makes `fault` (on window bad_win: F_WINDOW). */
static int prog_run(struct prog *g, int call, int bad, int fault, int win,
                    int bad_win) {
  int32_t *f = pld_tensor_data(g->flag);
  f[FL_CALL] = call, f[FL_BAD] = bad, f[FL_FAULT] = fault;
  f[FL_WIN] = win, f[FL_BAD_WIN] = bad_win;
  return pld_program_run(g->prog, PLD_ARGS(g->flag, g->x, g->sc, g->rc, g->y));
}

/* What rank q's y holds after `call` on every rank: row 0 its vector
 * window, rows 1 to P its matrix window (a plain C loop of the header's
 * contract). */
static float expected(const struct prog *g, int call, int q, int row,
                      int64_t i) {
  const int p = g->p;
  float sum = 0;
  if (row == 0) {
    switch (call) {
    case C_MESH:
    case C_TWO_PHASE:
    case C_RING:
    case C_AUTO:
      for (int s = 0; s < p; s++)
        sum += x_at(s, 0, i);
      return sum;
    case C_BROADCAST:
      return x_at(0, 0, i);
    default:
      return x_at(q, 0, i);
    }
  }
  const int r = row - 1;
  switch (call) {
  case C_ALLGATHER:
    return x_at(r, 0, i);
  case C_REDUCE_SCATTER:
    if (r != q)
      return x_at(q, r, i);
    for (int s = 0; s < p; s++)
      sum += x_at(s, r, i);
    return sum;
  case C_ALL_TO_ALL:
  case C_ALL_TO_ALL_V:
    return x_at(r, q, i);
  default:
    return x_at(q, r, i);
  }
}

/* Every rank makes `call` correctly, twice: y and the counts as the C
 * loop says, bit for bit. */
static void runs_correctly(struct prog *g, int call) {
  for (int round = 0; round < 2; round++) {
    float *y = pld_tensor_data(g->y);
    memset(y, 0, (size_t)pld_tensor_numel(g->y) * sizeof *y);
    assert_ok(prog_run(g, call, 0, F_NONE, 0, 0));
    int32_t *rc = pld_tensor_data(g->rc);
    for (int q = 0; q < g->p; q++) {
      for (int row = 0; row <= g->p; row++)
        for (int64_t i = 0; i < g->len; i++) {
          float got = y[((int64_t)q * (g->p + 1) + row) * g->len + i];
          float want = expected(g, call, q, row, i);
          if (got != want) {
            print_error("%s, %d ranks, run %d: rank %d row %d element %lld: "
                        "got %g, expected %g\n",
                        call_names[call], g->p, round + 1, q, row, (long long)i,
                        (double)got, (double)want);
            fail();
          }
        }
      for (int s = 0; call == C_ALL_TO_ALL_V && s < g->p; s++)
        assert_int_equal(rc[q * g->p + s], 1);
    }
  }
}

/* ---- different windows --------------------------------------------------- */

/* "on buffer #b bytes [lo, hi)" of window index w (0 to 3) for `call`. */
static const char *window_bytes(const struct prog *g, int call, int w,
                                char *buf, size_t cap) {
  const int mat = call >= C_ALLGATHER;
  const size_t bytes = (size_t)g->len * 4 * (size_t)(mat ? g->p : 1);
  static const int vbuf[] = {B_V, B_V2, B_VP, B_VP},
                   mbuf[] = {B_M, B_M2, B_MP, B_MP};
  const size_t at = w == 3 ? bytes : 0;
  snprintf(buf, cap,
           "on buffer #%d bytes [%zu, %zu), signal buffer #%d from "
           "byte 0",
           mat ? mbuf[w] : vbuf[w], at, at + bytes, B_SIG);
  return buf;
}

/* Rank `bad` makes `call` on window index bad_win where the others use
 * window `win` (0 and 1: two buffers; 2 and 3: ping-pong views of one
 * buffer, a step apart): PLD_ERR_MISMATCH, naming both ranks' windows;
 * then the program runs correctly. */
static void expect_window_mismatch(struct prog *g, int call, int bad, int win,
                                   int bad_win) {
  int st = prog_run(g, call, bad, F_WINDOW, win, bad_win);
  char good_s[128], bad_s[128], head[128], rank_s[64];
  snprintf(head, sizeof head,
           "ranks reached call 1 of signal window 'sig' (buffer #%d) (lane "
           "0) with different calls:",
           B_SIG);
  snprintf(rank_s, sizeof rank_s, "rank %d: %s(", bad, call_names[call]);
  const char *subs[] = {
      head, rank_s, window_bytes(g, call, win, good_s, sizeof good_s),
      window_bytes(g, call, bad_win, bad_s, sizeof bad_s), NULL};
  pld_test_assert_fails(st, PLD_ERR_MISMATCH, __FILE__, __LINE__, subs);
  runs_correctly(g, call);
}

static void window_mismatches(int p) {
  struct prog g;
  prog_init(&g, p, 6, 0, 0);
  for (int call = 0; call < C_BARRIER; call++) {
    expect_window_mismatch(&g, call, (call + 1) % p, 0, 1);
    expect_window_mismatch(&g, call, p - 1 - call % p, 2, 3);
    expect_window_mismatch(&g, call, call % p, 3, 2);
  }
  prog_free(&g);
}

static void test_window_mismatch(void **state) {
  (void)state;
  comm_over_rank_counts(window_mismatches);
}

/* Larger data: past the small calls' eager slots, the algorithms proper. */
static void window_mismatches_large(int p) {
  struct prog g;
  prog_init(&g, p, 1000, 0, 0);
  for (int call = 0; call < C_BARRIER; call++)
    expect_window_mismatch(&g, call, call % p, call % 2 ? 0 : 2,
                           call % 2 ? 1 : 3);
  prog_free(&g);
}

static void test_window_mismatch_large(void **state) {
  (void)state;
  comm_over_rank_counts(window_mismatches_large);
}

/* ---- running again ------------------------------------------------------- */

/* A run of `call` that fails with `status` because rank `bad` makes
 * `fault`, then the program runs correctly. */
static void fails_then_runs(struct prog *g, int call, int bad, int fault,
                            int status) {
  int st = prog_run(g, call, bad, fault, 0, 1);
  if (st != status) {
    print_error("%s, %d ranks, fault %d: expected %s, got %s: %s\n",
                call_names[call], g->p, fault, pld_status_name(status),
                pld_status_name(st), pld_last_error());
    fail();
  }
  runs_correctly(g, call);
}

/* Every collective and mode, after a mismatch (a barrier, which has no
 * window to mismatch: after a kernel's own failure), with windows zeroed
 * and kept. */
static void after_mismatch(int p) {
  for (int keep = 0; keep < 2; keep++)
    for (int64_t len = 6; len <= 1000; len += 994) {
      struct prog g;
      prog_init(&g, p, len, keep, 0);
      for (int call = 0; call < NCALLS; call++)
        if (call == C_BARRIER)
          fails_then_runs(&g, call, p - 1, F_LOCAL, PLD_ERR_BOUNDS);
        else
          fails_then_runs(&g, call, call % p, F_WINDOW, PLD_ERR_MISMATCH);
      prog_free(&g);
    }
}

static void test_runs_again_after_mismatch(void **state) {
  (void)state;
  comm_over_rank_counts(after_mismatch);
}

/* A kernel's own failure before its call, on every collective, with
 * windows kept and zeroed. */
static void after_failure(int p) {
  for (int keep = 0; keep < 2; keep++) {
    struct prog g;
    prog_init(&g, p, 1000, keep, 0);
    for (int call = 0; call < NCALLS; call++)
      fails_then_runs(&g, call, (call + 2) % p, F_LOCAL, PLD_ERR_BOUNDS);
    prog_free(&g);
  }
}

static void test_runs_again_after_failure(void **state) {
  (void)state;
  comm_over_rank_counts(after_failure);
}

/* A rank that never calls: the others deadlock in their calls. */
static void after_deadlock(int p) {
  static const int calls[] = {C_MESH, C_RING, C_ALL_TO_ALL_V, C_BARRIER};
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    struct prog g;
    prog_init(&g, p, 1000, i != 1, 0);
    fails_then_runs(&g, calls[i], (int)i % p, F_RETURN, PLD_ERR_DEADLOCK);
    prog_free(&g);
  }
}

static void test_runs_again_after_deadlock(void **state) {
  (void)state;
  comm_over_rank_counts(after_deadlock);
}

/* A kernel that computes past its time limit is stopped and its device
 * started again in its place (one process per device: not under mpirun,
 * where a device is a thread of the job): the others were in their calls.
 * The limit leaves the correct runs seconds of margin. */
static void after_time_limit(int p) {
  if (pld_process_count() > 1)
    skip();
  for (int keep = 0; keep < 2; keep++) {
    struct prog g;
    prog_init(&g, p, 1000, keep, 3000);
    fails_then_runs(&g, keep ? C_RING : C_ALL_TO_ALL_V, p - 1, F_SPIN,
                    PLD_ERR_TIMEOUT);
    prog_free(&g);
  }
}

static void test_runs_again_after_time_limit(void **state) {
  (void)state;
  after_time_limit(2);
  after_time_limit(4);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_window_mismatch),
    cmocka_unit_test(test_window_mismatch_large),
    cmocka_unit_test(test_runs_again_after_mismatch),
    cmocka_unit_test(test_runs_again_after_failure),
    cmocka_unit_test(test_runs_again_after_deadlock),
    cmocka_unit_test(test_runs_again_after_time_limit),
};

PLD_TEST_MAIN("comm_collective_rerun", tests)
