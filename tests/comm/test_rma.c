/* One-sided movement: remote loads and stores at offsets, atomic remote
 * stores for every dtype that has them, puts and gets of regions, of a
 * tensor larger than tile memory (chunked, pipelined or not), puts that
 * accumulate, the tile memory staging needs (exactly one tile's room, or
 * two pipelined), transfers whose last chunk of rows or last piece of
 * a row is partial, whole or at offsets, transfers in program order, and
 * a barrier that releases small writes to every rank, and rows that
 * follow each other on one side of a transfer only. */
#include "comm_test.h"

/* ---- remote load and store ---------------------------------------------- */

enum { RR = 6, RC = 24, WRR = 16, WRC = 40 };
/* Where x is staged in `stage` and where it lands in the next rank's
 * `inbox`. */
enum { STAGE_ROW = 3, STAGE_COL = 8, INBOX_ROW = 9, INBOX_COL = 16 };

/* Stage x in my window at an offset and store it into the next rank's
 * inbox at another; after a barrier, load the next rank's staged x and my
 * own (from myself, remotely), and copy out my inbox. */
#define LOAD_STORE_PARAMS                                                      \
  PLD_IN(x, FP32, RR, RC), PLD_WINDOW(stage, FP32, WRR, WRC),                  \
      PLD_WINDOW(inbox, FP32, WRR, WRC), PLD_WINDOW(sig, INT32, NR),           \
      PLD_OUT(from_next, FP32, RR, RC), PLD_OUT(from_self, FP32, RR, RC),      \
      PLD_OUT(box, FP32, WRR, WRC)

PLD_KERNEL(k_load_store, k, LOAD_STORE_PARAMS) {
  pld_comm comm = pld_window_comm(stage);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_tile *t = pld_load(k, x, 0, 0, RR, RC);
  pld_store(k, t, pld_local(stage), STAGE_ROW, STAGE_COL);
  pld_remote_store(k, t, inbox, (me + 1) % n, INBOX_ROW, INBOX_COL,
                   PLD_ATOMIC_NONE);
  pld_barrier(k, sig);
  pld_store(
      k, pld_remote_load(k, stage, (me + 1) % n, STAGE_ROW, STAGE_COL, RR, RC),
      from_next, 0, 0);
  pld_store(k, pld_remote_load(k, stage, me, STAGE_ROW, STAGE_COL, RR, RC),
            from_self, 0, 0);
  pld_store(k, pld_load(k, pld_local(inbox), 0, 0, WRR, WRC), box, 0, 0);
}

PLD_DEVICE(d_load_store, a, LOAD_STORE_PARAMS) {
  pld_launch(a, k_load_store, 1, x, stage, inbox, sig, from_next, from_self,
             box);
}

PLD_HOST(h_load_store, h, PLD_IN(x, FP32, NR, RR, RC),
         PLD_OUT(from_next, FP32, NR, RR, RC),
         PLD_OUT(from_self, FP32, NR, RR, RC),
         PLD_OUT(box, FP32, NR, WRR, WRC)) {
  int n = pld_world_size(h);
  pld_window_buf stage =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(WRR, WRC));
  pld_window_buf inbox =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(WRR, WRC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_load_store, r, pld_slice(h, x, r),
                 pld_window_view(h, stage, PLD_FP32, PLD_SHAPE(WRR, WRC)),
                 pld_window_view(h, inbox, PLD_FP32, PLD_SHAPE(WRR, WRC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, from_next, r), pld_slice(h, from_self, r),
                 pld_slice(h, box, r));
}

/* want[r] = src[map(r)] for each of the n ranks' blocks of `per` floats. */
static void shifted(float *want, const float *src, int n, int per, int step) {
  for (int r = 0; r < n; r++)
    memcpy(want + r * per, src + ((r + step + n) % n) * per,
           sizeof(float) * (size_t)per);
}

static void run_remote_load_store(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, RR, RC}, 0.75f, -20);
  pld_tensor from_next = pld_test_tensor(3, (int64_t[]){n, RR, RC}, 0, 0);
  pld_tensor from_self = pld_test_tensor(3, (int64_t[]){n, RR, RC}, 0, 0);
  pld_tensor box = pld_test_tensor(3, (int64_t[]){n, WRR, WRC}, 0, 0);
  assert_ok(
      pld_run(h_load_store, &cfg, PLD_ARGS(x, from_next, from_self, box)));
  const float *xs = pld_tensor_data(x);
  float want[4 * WRR * WRC];
  shifted(want, xs, n, RR * RC, 1);
  comm_expect_f32("from_next", pld_tensor_data(from_next), want, n * RR * RC);
  comm_expect_f32("from_self", pld_tensor_data(from_self), xs, n * RR * RC);
  /* The inbox: zero but for the previous rank's x at its offset. */
  memset(want, 0, sizeof want);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < RR; i++)
      for (int j = 0; j < RC; j++)
        want[(r * WRR + INBOX_ROW + i) * WRC + INBOX_COL + j] =
            xs[(comm_prev(r, n) * RR + i) * RC + j];
  comm_expect_f32("box", pld_tensor_data(box), want, n * WRR * WRC);
  pld_tensor_destroy(x);
  pld_tensor_destroy(from_next);
  pld_tensor_destroy(from_self);
  pld_tensor_destroy(box);
}

static void test_remote_load_store(void **state) {
  (void)state;
  comm_over_rank_counts(run_remote_load_store);
}

/* ---- remote loads and stores, plain and atomic, every dtype ------------- */

enum { AR = 4, AC = 32, REPS = 8, NDT = 6 };

/* Every rank adds x (whole numbers in [-3, 3], exact in every dtype) REPS
 * times into each dtype's window of every rank, all at once (the sums stay
 * within INT8).  After a barrier each rank loads the next rank's sums
 * remotely, converted back to FP32 into rows [d * AR, (d + 1) * AR) of y;
 * after another, it stores x plainly into the next rank's windows, and
 * after a third copies its own windows into the second half of y. */
#define ATOMIC_PARAMS                                                          \
  PLD_IN(x, FP32, AR, AC), PLD_WINDOW(f32, FP32, AR, AC),                      \
      PLD_WINDOW(f16, FP16, AR, AC), PLD_WINDOW(bf16, BF16, AR, AC),           \
      PLD_WINDOW(i32, INT32, AR, AC), PLD_WINDOW(i16, INT16, AR, AC),          \
      PLD_WINDOW(i8, INT8, AR, AC), PLD_WINDOW(sig, INT32, NR),                \
      PLD_OUT(y, FP32, 2 * NDT * AR, AC)

PLD_KERNEL(k_atomic, k, ATOMIC_PARAMS) {
  const pld_window acc[NDT] = {f32, f16, bf16, i32, i16, i8};
  int32_t n = pld_nranks(k, pld_window_comm(sig));
  pld_tile *xs = pld_load(k, x, 0, 0, AR, AC);
  pld_tile *back = pld_tile_new(k, PLD_FP32, AR, AC);
  for (int d = 0; d < NDT; d++) {
    pld_tile *t = pld_tile_new(k, pld_tensor_dtype(pld_local(acc[d])), AR, AC);
    pld_cast(k, t, xs);
    for (int rep = 0; rep < REPS; rep++)
      for (int32_t p = 0; p < n; p++)
        pld_remote_store(k, t, acc[d], p, 0, 0, PLD_ATOMIC_ADD);
    pld_tile_free(k, t);
  }
  int32_t next = (pld_rank(k, pld_window_comm(sig)) + 1) % n;
  pld_barrier(k, sig);
  for (int d = 0; d < NDT; d++) {
    pld_tile *t = pld_remote_load(k, acc[d], next, 0, 0, AR, AC);
    pld_cast(k, back, t);
    pld_store(k, back, y, d * AR, 0);
    pld_tile_free(k, t);
  }
  pld_barrier(k, sig); /* nobody reads the sums any more */
  for (int d = 0; d < NDT; d++) {
    pld_tile *t = pld_tile_new(k, pld_tensor_dtype(pld_local(acc[d])), AR, AC);
    pld_cast(k, t, xs);
    pld_remote_store(k, t, acc[d], next, 0, 0, PLD_ATOMIC_NONE);
    pld_tile_free(k, t);
  }
  pld_barrier(k, sig);
  for (int d = 0; d < NDT; d++) {
    pld_tile *t = pld_load(k, pld_local(acc[d]), 0, 0, AR, AC);
    pld_cast(k, back, t);
    pld_store(k, back, y, (NDT + d) * AR, 0);
    pld_tile_free(k, t);
  }
}

PLD_DEVICE(d_atomic, a, ATOMIC_PARAMS) {
  pld_launch(a, k_atomic, 1, x, f32, f16, bf16, i32, i16, i8, sig, y);
}

static const pld_dtype atomic_dtypes[NDT] = {PLD_FP32,  PLD_FP16,  PLD_BF16,
                                             PLD_INT32, PLD_INT16, PLD_INT8};

PLD_HOST(h_atomic, h, PLD_IN(x, FP32, NR, AR, AC),
         PLD_OUT(y, FP32, NR, 2 * NDT * AR, AC)) {
  int n = pld_world_size(h);
  pld_window_buf buf[NDT];
  for (int d = 0; d < NDT; d++)
    buf[d] = pld_window_alloc_shape(h, atomic_dtypes[d], PLD_SHAPE(AR, AC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++) {
    pld_window v[NDT];
    for (int d = 0; d < NDT; d++)
      v[d] = pld_window_view(h, buf[d], atomic_dtypes[d], PLD_SHAPE(AR, AC));
    pld_dispatch(h, d_atomic, r, pld_slice(h, x, r), v[0], v[1], v[2], v[3],
                 v[4], v[5], pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r));
  }
}

static void run_remote_every_dtype(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, AR, AC});
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (float)((i * 3 + i / (AR * AC) * 5) % 7 - 3);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){n, 2 * NDT * AR, AC}, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_atomic, &cfg, PLD_ARGS(x, y), &p));
  /* Rank r: the sums, then the previous rank's x, per dtype. */
  float want[4 * 2 * NDT * AR * AC];
  for (int r = 0; r < n; r++)
    for (int d = 0; d < NDT; d++)
      for (int e = 0; e < AR * AC; e++) {
        float sum = 0;
        for (int q = 0; q < n; q++)
          sum += xs[q * AR * AC + e];
        want[((r * 2 + 0) * NDT + d) * AR * AC + e] = REPS * sum;
        want[((r * 2 + 1) * NDT + d) * AR * AC + e] =
            xs[comm_prev(r, n) * AR * AC + e];
      }
  for (int run = 0; run < 3; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
    for (int i = 0; i < 2 * n * NDT; i++) {
      char what[80];
      snprintf(what, sizeof what, "rank %d of %d: %s %s", i / (2 * NDT), n,
               pld_dtype_name(atomic_dtypes[i % NDT]),
               i / NDT % 2 ? "plain stores" : "atomic sums");
      comm_expect_f32(what, (const float *)pld_tensor_data(y) + i * AR * AC,
                      want + i * AR * AC, AR * AC);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_remote_every_dtype(void **state) {
  (void)state;
  comm_over_rank_counts(run_remote_every_dtype);
}

/* ---- put and get of regions --------------------------------------------- */

enum { GR = 12, GC = 40 };

/* Put a 5 x 13 region of x at (2, 8) into the next rank's window at
 * (7, 16), notifying my cell of its `arrived` (one notify behind the five
 * rows), and wait for the previous rank's; after a barrier, copy out my
 * window and my `arrived`, and get a 4 x 20 region at (6, 14) of the next
 * rank's window into `got` at (1, 3) (the rest of got keeps the host's
 * values). */
static const pld_xfer put_region = {7, 16, 2, 8, 5, 13, PLD_ATOMIC_NONE,
                                    0, 0,  0};
static const pld_xfer get_region = {1, 3, 6, 14, 4, 20, PLD_ATOMIC_NONE,
                                    1, 0, 0};

#define REGIONS_PARAMS                                                         \
  PLD_IN(x, FP32, GR, GC), PLD_WINDOW(data, FP32, GR, GC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_WINDOW(arrived, INT32, NR),              \
      PLD_OUT(box, FP32, GR, GC), PLD_INOUT(got, FP32, GR, GC),                \
      PLD_OUT(cells, INT32, NR)

PLD_KERNEL(k_regions, k, REGIONS_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_put_notify(k, data, (me + 1) % n, x, &put_region, arrived, PLD_AT(me), 1,
                 PLD_NOTIFY_ADD);
  pld_wait(k, arrived, PLD_AT(comm_prev(me, n)), 1, PLD_WAIT_GE);
  pld_barrier(k, sig);
  pld_get(k, box, me, data, NULL);
  pld_get(k, got, (me + 1) % n, data, &get_region);
  pld_tile *t = pld_load(k, pld_local(arrived), 0, 0, 1, n);
  pld_store(k, t, cells, 0, 0);
  pld_tile_free(k, t);
}

PLD_DEVICE(d_regions, a, REGIONS_PARAMS) {
  pld_launch(a, k_regions, 1, x, data, sig, arrived, box, got, cells);
}

PLD_HOST(h_regions, h, PLD_IN(x, FP32, NR, GR, GC),
         PLD_OUT(box, FP32, NR, GR, GC), PLD_INOUT(got, FP32, NR, GR, GC),
         PLD_OUT(cells, INT32, NR, NR)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(GR, GC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf arrived = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_regions, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(GR, GC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, arrived, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, box, r), pld_slice(h, got, r),
                 pld_slice(h, cells, r));
}

/* dst gets the region of src that o describes, both matrices of `cols`
 * columns; rows = cols = 0 in o mean all of src (rows x cols). */
static void paste(float *dst, const float *src, const pld_xfer *o, int64_t rows,
                  int64_t cols) {
  int64_t nr = o->rows ? o->rows : rows, nc = o->cols ? o->cols : cols;
  for (int64_t i = 0; i < nr; i++)
    for (int64_t j = 0; j < nc; j++)
      dst[(o->dst_row + i) * cols + o->dst_col + j] =
          src[(o->src_row + i) * cols + o->src_col + j];
}

static void run_put_get_regions(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, GR, GC}, 0.5f, 3);
  pld_tensor box = pld_test_tensor(3, (int64_t[]){n, GR, GC}, 0, 0);
  pld_tensor got = pld_test_tensor(3, (int64_t[]){n, GR, GC}, -1, -1);
  float *want_got = malloc(sizeof(float) * (size_t)(n * GR * GC));
  assert_non_null(want_got);
  memcpy(want_got, pld_tensor_data(got), sizeof(float) * (size_t)(n * GR * GC));
  pld_tensor cells = comm_int_tensor(-1, 2, (int64_t[]){n, n});
  assert_ok(pld_run(h_regions, &cfg, PLD_ARGS(x, box, got, cells)));
  /* One notify per put, however many rows it moves: 1 from the previous
   * rank, 0 from the others. */
  const int32_t *cs = pld_tensor_data(cells);
  for (int r = 0; r < n; r++)
    for (int q = 0; q < n; q++)
      if (cs[r * n + q] != (q == comm_prev(r, n))) {
        print_error("rank %d's arrived[%d] is %d after the puts, expected %d\n",
                    r, q, cs[r * n + q], q == comm_prev(r, n));
        fail();
      }
  pld_tensor_destroy(cells);
  /* A model of each rank's window: zero but for the previous rank's
   * region. */
  float win[4 * GR * GC];
  memset(win, 0, sizeof win);
  const float *xs = pld_tensor_data(x);
  for (int r = 0; r < n; r++)
    paste(win + r * GR * GC, xs + comm_prev(r, n) * GR * GC, &put_region, GR,
          GC);
  comm_expect_f32("box (my window)", pld_tensor_data(box), win, n * GR * GC);
  for (int r = 0; r < n; r++)
    paste(want_got + r * GR * GC, win + comm_next(r, n) * GR * GC, &get_region,
          GR, GC);
  comm_expect_f32("got (the next rank's region)", pld_tensor_data(got),
                  want_got, n * GR * GC);
  free(want_got);
  pld_tensor_destroy(x);
  pld_tensor_destroy(box);
  pld_tensor_destroy(got);
}

static void test_put_get_regions(void **state) {
  (void)state;
  comm_over_rank_counts(run_put_get_regions);
}

/* ---- put and get larger than tile memory -------------------------------- */

/* 4 MiB and 4 KiB of FP32: where transfers go as messages, a piece of
 * PLD__MPI_MSG_PIECE and the rest. */
enum { BR = 1025, BC = 1024 };

/* Put x into the next rank's window; after a barrier get my own window
 * (the previous rank's x) and the previous rank's (the x of the rank
 * before it), chunked through tile memory; flag[0] says pipelined. */
#define BIG_PARAMS                                                             \
  PLD_IN(x, FP32, BR, BC), PLD_WINDOW(data, FP32, BR, BC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_IN(flag, INT32, 1),                      \
      PLD_OUT(mine, FP32, BR, BC), PLD_OUT(far, FP32, BR, BC)

PLD_KERNEL(k_big, k, BIG_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.pipelined = (int)pld_read(k, flag, PLD_AT(0));
  pld_put(k, data, (me + 1) % n, x, &o);
  pld_barrier(k, sig);
  pld_get(k, mine, me, data, &o);
  pld_get(k, far, (me + n - 1) % n, data, &o);
}

PLD_DEVICE(d_big, a, BIG_PARAMS) {
  pld_launch(a, k_big, 1, x, data, sig, flag, mine, far);
}

PLD_HOST(h_big, h, PLD_IN(x, FP32, NR, BR, BC), PLD_IN(flag, INT32, 1),
         PLD_OUT(mine, FP32, NR, BR, BC), PLD_OUT(far, FP32, NR, BR, BC)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(BR, BC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_big, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(BR, BC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), flag,
                 pld_slice(h, mine, r), pld_slice(h, far, r));
}

static void run_put_get_larger_than_tile_memory(int n) {
  pld_config cfg = comm_config(n);
  const int64_t shape[] = {n, BR, BC};
  const int per = BR * BC;
  pld_tensor x = pld_test_tensor(3, shape, 1, -1e6f);
  pld_tensor mine = pld_test_tensor(3, shape, 0, 0);
  pld_tensor far = pld_test_tensor(3, shape, 0, 0);
  pld_tensor flag = comm_int_tensor(0, 1, (int64_t[]){1});
  float *want = malloc(sizeof(float) * (size_t)(n * per));
  assert_non_null(want);
  pld_program *p;
  assert_ok(pld_compile(h_big, &cfg, PLD_ARGS(x, flag, mine, far), &p));
  for (int pipelined = 0; pipelined < 2; pipelined++) {
    *(int32_t *)pld_tensor_data(flag) = pipelined;
    memset(pld_tensor_data(mine), 0, sizeof(float) * (size_t)(n * per));
    memset(pld_tensor_data(far), 0, sizeof(float) * (size_t)(n * per));
    assert_ok(pld_program_run(p, PLD_ARGS(x, flag, mine, far)));
    shifted(want, pld_tensor_data(x), n, per, -1);
    comm_expect_f32(pipelined ? "mine (pipelined)" : "mine",
                    pld_tensor_data(mine), want, n * per);
    shifted(want, pld_tensor_data(x), n, per, -2);
    comm_expect_f32(pipelined ? "far (pipelined)" : "far", pld_tensor_data(far),
                    want, n * per);
  }
  pld_program_destroy(p);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(mine);
  pld_tensor_destroy(far);
  pld_tensor_destroy(flag);
}

static void test_put_get_larger_than_tile_memory(void **state) {
  (void)state;
  comm_over_rank_counts(run_put_get_larger_than_tile_memory);
}

/* ---- put with atomic add ------------------------------------------------ */

enum { PR = 100, PC = 256 }; /* 100 KiB: two staging chunks, the last short */

/* Each rank stages x in a window (a put to itself), then puts that window
 * into `acc` of every rank, accumulating, pipelined; after a barrier,
 * acc = the sum of all x.  x holds quarters, so every order of addition
 * gives the exact sum. */
#define PUT_ADD_PARAMS                                                         \
  PLD_IN(x, FP32, PR, PC), PLD_WINDOW(src, FP32, PR, PC),                      \
      PLD_WINDOW(acc, FP32, PR, PC), PLD_WINDOW(sig, INT32, NR),               \
      PLD_OUT(y, FP32, PR, PC)

PLD_KERNEL(k_put_add, k, PUT_ADD_PARAMS) {
  pld_comm comm = pld_window_comm(acc);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_put(k, src, me, x, NULL);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.atomic = PLD_ATOMIC_ADD;
  o.pipelined = 1;
  for (int32_t p = 0; p < n; p++)
    pld_put(k, acc, (me + p) % n, pld_local(src), &o);
  pld_barrier(k, sig);
  pld_get(k, y, me, acc, NULL);
}

PLD_DEVICE(d_put_add, a, PUT_ADD_PARAMS) {
  pld_launch(a, k_put_add, 1, x, src, acc, sig, y);
}

PLD_HOST(h_put_add, h, PLD_IN(x, FP32, NR, PR, PC),
         PLD_OUT(y, FP32, NR, PR, PC)) {
  int n = pld_world_size(h);
  pld_window_buf src = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(PR, PC));
  pld_window_buf acc = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(PR, PC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_put_add, r, pld_slice(h, x, r),
                 pld_window_view(h, src, PLD_FP32, PLD_SHAPE(PR, PC)),
                 pld_window_view(h, acc, PLD_FP32, PLD_SHAPE(PR, PC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r));
}

static void run_put_atomic_add(int n) {
  pld_config cfg = comm_config(n);
  const int per = PR * PC;
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, PR, PC});
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (float)((i * 13 + i / per) % 64 - 32) * 0.25f;
  pld_tensor y = pld_test_tensor(3, (int64_t[]){n, PR, PC}, 0, 0);
  assert_ok(pld_run(h_put_add, &cfg, PLD_ARGS(x, y)));
  float *want = malloc(sizeof(float) * (size_t)(n * per));
  assert_non_null(want);
  for (int e = 0; e < per; e++) {
    float sum = 0;
    for (int q = 0; q < n; q++)
      sum += xs[q * per + e];
    for (int r = 0; r < n; r++)
      want[r * per + e] = sum;
  }
  comm_expect_f32("y (the sum of every rank's x)", pld_tensor_data(y), want,
                  n * per);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_put_atomic_add(void **state) {
  (void)state;
  comm_over_rank_counts(run_put_atomic_add);
}

/* ---- room for the staging tiles ----------------------------------------- */

enum { SR = 96, SC = 256 }; /* FP32 rows of 1 KiB */
enum { STAGE = 64 * 1024 }; /* a staging tile: 64 of those rows */

/* plan = {bytes of tile memory to take before the transfers, put
 * pipelined, get pipelined}.  Takes them in tiles of multiples of 64
 * bytes, which pack without gaps whatever the alignment of tile starts,
 * puts x into the next rank's window, and after a barrier gets its own
 * window (the previous rank's x) into y. */
#define ROOM_PARAMS                                                            \
  PLD_IN(x, FP32, SR, SC), PLD_WINDOW(data, FP32, SR, SC),                     \
      PLD_WINDOW(sig, INT32, NR), PLD_IN(plan, INT32, 3),                      \
      PLD_OUT(y, FP32, SR, SC)

PLD_KERNEL(k_room, k, ROOM_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t taken = (int32_t)pld_read(k, plan, PLD_AT(0));
  if (taken >= 1024)
    pld_tile_new(k, PLD_FP32, taken / 1024, 256);
  if (taken % 1024)
    pld_tile_new(k, PLD_FP32, taken % 1024 / 64, 16);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.pipelined = (int)pld_read(k, plan, PLD_AT(1));
  pld_put(k, data, (me + 1) % n, x, &o);
  pld_barrier(k, sig);
  o.pipelined = (int)pld_read(k, plan, PLD_AT(2));
  pld_get(k, y, me, data, &o);
}

PLD_DEVICE(d_room, a, ROOM_PARAMS) {
  pld_launch(a, k_room, 1, x, data, sig, plan, y);
}

PLD_HOST(h_room, h, PLD_IN(x, FP32, NR, SR, SC), PLD_IN(plan, INT32, 3),
         PLD_OUT(y, FP32, NR, SR, SC)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(SR, SC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_room, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), plan,
                 pld_slice(h, y, r));
}

/* Tile memory left free for the transfers, whether the put and the get
 * are pipelined, and whether one of them must fail for want of room. */
struct room_case {
  int room, put_pipelined, get_pipelined, fails;
};

static void run_staging_tile_room(int n) {
  if (!comm_fits(n))
    return;
  static const struct room_case cases[] = {
      {STAGE, 0, 0, 0},      /* one staging tile: enough unpipelined */
      {STAGE, 1, 0, 1},      /* a pipelined put needs two */
      {STAGE, 0, 1, 1},      /* so does a pipelined get */
      {STAGE - 64, 0, 0, 1}, /* not even one */
      {2 * STAGE, 1, 1, 0},  /* two: pipelined works */
      {STAGE, 0, 0, 0},      /* and the devices still run */
  };
  pld_config cfg = comm_config(n);
  const int ub = (int)pld_platform_find(cfg.platform)->ub_bytes;
  const int64_t shape[] = {n, SR, SC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 1);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_tensor plan = comm_int_tensor(0, 1, (int64_t[]){3});
  int32_t *pl = pld_tensor_data(plan);
  float *want = malloc(sizeof(float) * (size_t)(n * SR * SC));
  assert_non_null(want);
  shifted(want, pld_tensor_data(x), n, SR * SC, -1);
  pld_program *p;
  assert_ok(pld_compile(h_room, &cfg, PLD_ARGS(x, plan, y), &p));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct room_case *c = &cases[i];
    pl[0] = ub - c->room;
    pl[1] = c->put_pipelined;
    pl[2] = c->get_pipelined;
    memset(pld_tensor_data(y), 0, sizeof(float) * (size_t)(n * SR * SC));
    int st = pld_program_run(p, PLD_ARGS(x, plan, y));
    if (!c->fails) {
      assert_ok(st);
      comm_expect_f32("y (the previous rank's x)", pld_tensor_data(y), want,
                      n * SR * SC);
      continue;
    }
    /* The first staging tile fits when there is room for one. */
    char over[192];
    snprintf(over, sizeof over,
             "tile memory over capacity: FP32[64, 256] tile needs %d bytes; "
             "%d of %d bytes of the AIV core Unified Buffer in use",
             STAGE, ub - c->room + (c->room >= STAGE ? STAGE : 0), ub);
    /* The put comes first: it fails unless only the get is pipelined. */
    const char *who = c->put_pipelined || c->room < STAGE
                          ? "pld_put: kernel k_room (rank "
                          : "pld_get: kernel k_room (rank ";
    assert_fails_with(st, PLD_ERR_TILE_MEMORY, who, over);
  }
  pld_program_destroy(p);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(plan);
}

/* A transfer holds one staging tile of 64 KiB, two when pipelined: with
 * exactly one tile's room left, plain transfers work and pipelined ones
 * fail; with one 64-byte granule less, plain ones fail too; with room for
 * two, pipelined ones work.  2 ranks on a2a3sim, 3 on a5sim. */
static void test_staging_tile_room(void **state) {
  (void)state;
  run_staging_tile_room(2);
  run_staging_tile_room(3);
  comm_ran_or_skip();
}

/* ---- transfers whose last chunk is partial ------------------------------ */

PLD_DYNAMIC(XR);
PLD_DYNAMIC(XC);

/* plan = a region {dst_row, dst_col, src_row, src_col, rows, cols} and
 * whether to pipeline.  Each rank puts bg into its own window, then after
 * a barrier x's region into the next rank's window; after another it gets
 * its whole window into box, and the region of the next rank's window
 * into got (whose other elements keep the host's values). */
#define PARTIAL_PARAMS                                                         \
  PLD_IN(x, FP32, XR, XC), PLD_IN(bg, FP32, XR, XC),                           \
      PLD_WINDOW(data, FP32, XR, XC), PLD_WINDOW(sig, INT32, NR),              \
      PLD_IN(plan, INT32, 7), PLD_OUT(box, FP32, XR, XC),                      \
      PLD_INOUT(got, FP32, XR, XC)

PLD_KERNEL(k_partial, k, PARTIAL_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t v[7];
  for (int64_t i = 0; i < 7; i++)
    v[i] = (int32_t)pld_read(k, plan, PLD_AT(i));
  pld_xfer whole, o;
  memset(&whole, 0, sizeof whole);
  whole.pipelined = v[6];
  o = whole;
  o.dst_row = v[0], o.dst_col = v[1], o.src_row = v[2], o.src_col = v[3];
  o.rows = v[4], o.cols = v[5];
  pld_put(k, data, me, bg, &whole);
  pld_barrier(k, sig);
  pld_put(k, data, (me + 1) % n, x, &o);
  pld_barrier(k, sig);
  pld_get(k, box, me, data, &whole);
  pld_get(k, got, (me + 1) % n, data, &o);
}

PLD_DEVICE(d_partial, a, PARTIAL_PARAMS) {
  pld_launch(a, k_partial, 1, x, bg, data, sig, plan, box, got);
}

PLD_HOST(h_partial, h, PLD_IN(x, FP32, NR, XR, XC),
         PLD_IN(bg, FP32, NR, XR, XC), PLD_IN(plan, INT32, 7),
         PLD_OUT(box, FP32, NR, XR, XC), PLD_INOUT(got, FP32, NR, XR, XC)) {
  int n = pld_world_size(h);
  int64_t rows = pld_tensor_dim(x, 1), cols = pld_tensor_dim(x, 2);
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(rows, cols));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_partial, r, pld_slice(h, x, r), pld_slice(h, bg, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(rows, cols)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), plan,
                 pld_slice(h, box, r), pld_slice(h, got, r));
}

/* Runs h_partial over n ranks with tensors of rows x cols and the region
 * o (rows = cols = 0: whole tensors), unpipelined then pipelined, and
 * checks every element of box and got against a model of the windows.
 * Every element of x, bg and got differs from every other, so a chunk
 * dropped, moved or moved twice shows. */
static void run_partial(int n, int64_t rows, int64_t cols, const pld_xfer *o) {
  pld_config cfg = comm_config(n);
  const int64_t shape[] = {n, rows, cols}, per = rows * cols;
  const size_t bytes = sizeof(float) * (size_t)(n * per);
  pld_tensor x = pld_test_tensor(3, shape, 1, 1);
  pld_tensor bg = pld_test_tensor(3, shape, -1, -1);
  pld_tensor box = pld_test_tensor(3, shape, 0, 0);
  pld_tensor got0 = pld_test_tensor(3, shape, -1, 0.5f);
  pld_tensor got = pld_test_tensor(3, shape, 0, 0);
  pld_tensor plan = comm_int_tensor(0, 1, (int64_t[]){7});
  int32_t *pl = pld_tensor_data(plan);
  const int64_t region[6] = {o->dst_row, o->dst_col, o->src_row,
                             o->src_col, o->rows,    o->cols};
  for (int i = 0; i < 6; i++)
    pl[i] = (int32_t)region[i];
  float *win = malloc(bytes), *want = malloc(bytes);
  assert_non_null(win);
  assert_non_null(want);
  /* Rank r's window: bg[r] with the previous rank's region of x. */
  const float *xs = pld_tensor_data(x);
  memcpy(win, pld_tensor_data(bg), bytes);
  for (int r = 0; r < n; r++)
    paste(win + r * per, xs + comm_prev(r, n) * per, o, rows, cols);
  memcpy(want, pld_tensor_data(got0), bytes);
  for (int r = 0; r < n; r++)
    paste(want + r * per, win + comm_next(r, n) * per, o, rows, cols);
  pld_program *p;
  assert_ok(pld_compile(h_partial, &cfg, PLD_ARGS(x, bg, plan, box, got), &p));
  for (int pipelined = 0; pipelined < 2; pipelined++) {
    pl[6] = pipelined;
    memset(pld_tensor_data(box), 0, bytes);
    memcpy(pld_tensor_data(got), pld_tensor_data(got0), bytes);
    assert_ok(pld_program_run(p, PLD_ARGS(x, bg, plan, box, got)));
    comm_expect_f32(pipelined ? "box (my window, pipelined)"
                              : "box (my window)",
                    pld_tensor_data(box), win, n * per);
    comm_expect_f32(pipelined ? "got (the next rank's region, pipelined)"
                              : "got (the next rank's region)",
                    pld_tensor_data(got), want, n * per);
  }
  pld_program_destroy(p);
  free(win);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(bg);
  pld_tensor_destroy(box);
  pld_tensor_destroy(got0);
  pld_tensor_destroy(got);
  pld_tensor_destroy(plan);
}

static void run_partial_over_rank_counts(int64_t rows, int64_t cols,
                                         const pld_xfer *o) {
  for (int c = 0; c < COMM_NCOUNTS; c++)
    if (comm_world_fits(comm_rank_counts[c]))
      run_partial(comm_rank_counts[c], rows, cols, o);
}

static const pld_xfer whole_tensor = {0, 0, 0, 0, 0, 0, PLD_ATOMIC_NONE,
                                      0, 0, 0};

/* Rows of 800 bytes: chunks of 81 rows, the last of 69. */
static void test_put_get_last_chunk_partial(void **state) {
  (void)state;
  run_partial_over_rank_counts(150, 200, &whole_tensor);
}

/* A row wider than a staging tile goes in pieces: 16384 elements, then
 * the last 5. */
static void test_put_get_row_in_pieces(void **state) {
  (void)state;
  run_partial_over_rank_counts(3, 16384 + 5, &whole_tensor);
}

/* A region at offsets: chunks of 65 rows of 250 elements, the last of 5;
 * the source region ends at the source's last row and column. */
static void test_put_get_region_last_chunk_partial(void **state) {
  (void)state;
  static const pld_xfer o = {3, 7, 10, 50, 70, 250, PLD_ATOMIC_NONE, 0, 0, 0};
  run_partial_over_rank_counts(80, 300, &o);
}

/* A region of rows wider than a staging tile at offsets: pieces of 16384
 * elements and the last of 1; the destination region ends at the
 * destination's last row and column. */
static void test_put_get_region_row_in_pieces(void **state) {
  (void)state;
  static const pld_xfer o = {1, 15, 0, 3, 3, 16385, PLD_ATOMIC_NONE, 0, 0, 0};
  run_partial_over_rank_counts(4, 16400, &o);
}

/* ---- rows one after another on one side only ---------------------------- */

PLD_DYNAMIC(APR);
PLD_DYNAMIC(APW);
PLD_DYNAMIC(APX);

/* A window's whole rows lie one after another, the rows of a region of a
 * wider tensor apart.  Each rank puts columns [APART_SRC, APART_SRC + APW)
 * of x into the next rank's whole window; after a barrier it gets its own
 * window into box, and the next rank's whole window into got at column
 * APART_DST (got's other columns keep the host's values).  A fabric that
 * joins rows into one transfer where they follow each other on the
 * window's side alone moves the wrong bytes. */
enum { APART_SRC = 5, APART_DST = 2, APART_MORE = 7 };

#define APART_PARAMS                                                           \
  PLD_IN(x, FP32, APR, APX), PLD_WINDOW(data, FP32, APR, APW),                 \
      PLD_WINDOW(sig, INT32, NR), PLD_OUT(box, FP32, APR, APW),                \
      PLD_INOUT(got, FP32, APR, APX)

PLD_KERNEL(k_apart, k, APART_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.rows = (int32_t)pld_tensor_dim(box, 0);
  o.cols = (int32_t)pld_tensor_dim(box, 1);
  o.src_col = APART_SRC;
  pld_put(k, data, (me + 1) % n, x, &o);
  pld_barrier(k, sig);
  pld_get(k, box, me, data, NULL);
  o.src_col = 0;
  o.dst_col = APART_DST;
  pld_get(k, got, (me + 1) % n, data, &o);
}

PLD_DEVICE(d_apart, a, APART_PARAMS) {
  pld_launch(a, k_apart, 1, x, data, sig, box, got);
}

PLD_HOST(h_apart, h, PLD_IN(x, FP32, NR, APR, APX),
         PLD_OUT(box, FP32, NR, APR, APW), PLD_INOUT(got, FP32, NR, APR, APX)) {
  int n = pld_world_size(h);
  int64_t rows = pld_tensor_dim(box, 1), cols = pld_tensor_dim(box, 2);
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(rows, cols));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_apart, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(rows, cols)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, box, r), pld_slice(h, got, r));
}

/* Runs h_apart over n ranks with windows of rows x cols, and checks box
 * and got against a plain loop over x. */
static void run_apart(int n, int64_t rows, int64_t cols) {
  pld_config cfg = comm_config(n);
  const int64_t wide = cols + APART_MORE;
  const int64_t xshape[] = {n, rows, wide}, wshape[] = {n, rows, cols};
  pld_tensor x = pld_test_tensor(3, xshape, 1, 1);
  pld_tensor box = pld_test_tensor(3, wshape, 0, 0);
  pld_tensor got = pld_test_tensor(3, xshape, -1, -0.5f);
  float *want_box = malloc(sizeof(float) * (size_t)(n * rows * cols));
  float *want_got = malloc(sizeof(float) * (size_t)(n * rows * wide));
  assert_non_null(want_box);
  assert_non_null(want_got);
  memcpy(want_got, pld_tensor_data(got),
         sizeof(float) * (size_t)(n * rows * wide));
  const float *xs = pld_tensor_data(x);
  for (int r = 0; r < n; r++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        want_box[(r * rows + i) * cols + j] =
            xs[(comm_prev(r, n) * rows + i) * wide + APART_SRC + j];
        want_got[(r * rows + i) * wide + APART_DST + j] =
            xs[(r * rows + i) * wide + APART_SRC + j];
      }
  assert_ok(pld_run(h_apart, &cfg, PLD_ARGS(x, box, got)));
  comm_expect_f32("box (my window: the previous rank's columns of x)",
                  pld_tensor_data(box), want_box, n * rows * cols);
  comm_expect_f32("got (the next rank's window, at a column)",
                  pld_tensor_data(got), want_got, n * rows * wide);
  free(want_box);
  free(want_got);
  pld_tensor_destroy(x);
  pld_tensor_destroy(box);
  pld_tensor_destroy(got);
}

/* Rows of 96 bytes (576 joined on the window's side), and of 4 KiB (24 KiB
 * joined: more than a signal carries, so as messages where the fabric
 * sends transfers of that size as messages). */
static void run_apart_sizes(int n) {
  run_apart(n, 6, 24);
  run_apart(n, 6, 1024);
}

static void test_put_get_rows_apart_on_one_side(void **state) {
  (void)state;
  comm_over_rank_counts(run_apart_sizes);
}

/* ---- put with notify ------------------------------------------------------
 */

/* Each rank puts x into the next rank's inbox with a notify behind the
 * data, then waits for its own inbox's notify, `rounds` times (the count
 * grows by one a round; a barrier between rounds keeps the next put from
 * overwriting an inbox not yet read).  With flag[0] = 1, rank 0 passes a
 * signal cell outside the window instead: the call fails, with nothing
 * moved. */
enum { PN_ROWS = 70, PN_COLS = 300 };
#define PUT_NOTIFY_PARAMS                                                      \
  PLD_IN(x, FP32, PN_ROWS, PN_COLS),                                           \
      PLD_WINDOW(inbox, FP32, PN_ROWS, PN_COLS), PLD_WINDOW(sig, INT32, NR),   \
      PLD_WINDOW(other, INT32, NR), PLD_IN(flag, INT32, 2),                    \
      PLD_OUT(y, FP32, PN_ROWS, PN_COLS)

PLD_KERNEL(k_put_notify, k, PUT_NOTIFY_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(inbox)),
          n = pld_nranks(k, pld_window_comm(inbox));
  int bad = me == 0 ? (int)pld_read(k, flag, PLD_AT(0)) : 0;
  int rounds = (int)pld_read(k, flag, PLD_AT(1));
  for (int r = 1; r <= rounds; r++) {
    pld_put_notify(k, inbox, (me + 1) % n, x, NULL, sig,
                   PLD_AT(bad == 1 ? n : me), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT((me + n - 1) % n), r, PLD_WAIT_GE);
    /* Everyone has read its inbox before the next round overwrites it. */
    pld_barrier(k, other);
  }
  pld_store(k, pld_load(k, pld_local(inbox), 0, 0, PN_ROWS, PN_COLS), y, 0, 0);
}
PLD_DEVICE(d_put_notify, a, PUT_NOTIFY_PARAMS) {
  pld_launch(a, k_put_notify, 1, x, inbox, sig, other, flag, y);
}
PLD_HOST(h_put_notify, h, PLD_IN(x, FP32, NR, PN_ROWS, PN_COLS),
         PLD_IN(flag, INT32, 2), PLD_OUT(y, FP32, NR, PN_ROWS, PN_COLS)) {
  int n = pld_world_size(h);
  pld_window_buf inbox =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(PN_ROWS, PN_COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf other = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(
        h, d_put_notify, r, pld_slice(h, x, r),
        pld_window_view(h, inbox, PLD_FP32, PLD_SHAPE(PN_ROWS, PN_COLS)),
        pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
        pld_window_view(h, other, PLD_INT32, PLD_SHAPE(n)), flag,
        pld_slice(h, y, r));
}

static void run_put_notify(int n) {
  pld_config cfg = comm_config(n);
  const int64_t shape[] = {n, PN_ROWS, PN_COLS};
  const int per = PN_ROWS * PN_COLS;
  pld_tensor x = pld_test_tensor(3, shape, 0.5f, -7);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_tensor flag = comm_int_tensor(0, 1, (int64_t[]){2});
  int32_t *f = pld_tensor_data(flag);
  float *want = malloc(sizeof(float) * (size_t)(n * per));
  assert_non_null(want);
  shifted(want, pld_tensor_data(x), n, per, -1);
  pld_program *p;
  assert_ok(pld_compile(h_put_notify, &cfg, PLD_ARGS(x, flag, y), &p));
  for (int rounds = 1; rounds <= 3; rounds += 2) {
    f[0] = 0;
    f[1] = rounds;
    memset(pld_tensor_data(y), 0, sizeof(float) * (size_t)(n * per));
    assert_ok(pld_program_run(p, PLD_ARGS(x, flag, y)));
    comm_expect_f32("y (the previous rank's x)", pld_tensor_data(y), want,
                    n * per);
  }
  f[0] = 1;
  f[1] = 1;
  char where[96];
  snprintf(where, sizeof where, "index %d of dimension 0 outside INT32[%d]", n,
           n);
  assert_fails_with(pld_program_run(p, PLD_ARGS(x, flag, y)), PLD_ERR_BOUNDS,
                    "pld_put_notify: kernel k_put_notify (rank 0,",
                    "window 'sig' (buffer #1) of peer 1", where);
  pld_program_destroy(p);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(flag);
}

static void test_put_notify(void **state) {
  (void)state;
  comm_over_rank_counts(run_put_notify);
}

/* ---- a rank's own transfers in program order ---------------------------- */

/* Each rank, IO_ROUNDS times: puts IO_SMALL rows of x (from row r) into the
 * next rank's inbox with a notify behind them (a write small enough to
 * travel with the notify on the MPI fabric), then at once gets those rows
 * back into `got`: it reads what it wrote.  Then a small put with its
 * notify, and a put of the whole of x (large: RMA) over it: the inbox
 * holds the later one.  No transfer may overtake one made before it to
 * the same peer. */
enum { IO_ROWS = 48, IO_COLS = 256, IO_SMALL = 4, IO_ROUNDS = 8 };
#define IN_ORDER_PARAMS                                                        \
  PLD_IN(x, FP32, IO_ROWS, IO_COLS),                                           \
      PLD_WINDOW(inbox, FP32, IO_ROWS, IO_COLS), PLD_WINDOW(sig, INT32, NR),   \
      PLD_WINDOW(other, INT32, NR),                                            \
      PLD_OUT(got, FP32, IO_ROUNDS *IO_SMALL, IO_COLS),                        \
      PLD_OUT(y, FP32, IO_ROWS, IO_COLS)

PLD_KERNEL(k_in_order, k, IN_ORDER_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(inbox)),
          n = pld_nranks(k, pld_window_comm(inbox)), next = (me + 1) % n;
  pld_xfer o;
  for (int r = 0; r <= IO_ROUNDS; r++) {
    memset(&o, 0, sizeof o);
    o.src_row = r;
    o.rows = IO_SMALL;
    pld_put_notify(k, inbox, next, x, &o, sig, PLD_AT(me), 1, PLD_NOTIFY_ADD);
    if (r == IO_ROUNDS)
      break;
    memset(&o, 0, sizeof o);
    o.dst_row = r * IO_SMALL;
    o.rows = IO_SMALL;
    pld_get(k, got, next, inbox, &o);
  }
  pld_put(k, inbox, next, x, NULL);
  pld_barrier(k, other);
  pld_store(k, pld_load(k, pld_local(inbox), 0, 0, IO_ROWS, IO_COLS), y, 0, 0);
}
PLD_DEVICE(d_in_order, a, IN_ORDER_PARAMS) {
  pld_launch(a, k_in_order, 1, x, inbox, sig, other, got, y);
}
PLD_HOST(h_in_order, h, PLD_IN(x, FP32, NR, IO_ROWS, IO_COLS),
         PLD_OUT(got, FP32, NR, IO_ROUNDS *IO_SMALL, IO_COLS),
         PLD_OUT(y, FP32, NR, IO_ROWS, IO_COLS)) {
  int n = pld_world_size(h);
  pld_window_buf inbox =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(IO_ROWS, IO_COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf other = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(
        h, d_in_order, r, pld_slice(h, x, r),
        pld_window_view(h, inbox, PLD_FP32, PLD_SHAPE(IO_ROWS, IO_COLS)),
        pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
        pld_window_view(h, other, PLD_INT32, PLD_SHAPE(n)),
        pld_slice(h, got, r), pld_slice(h, y, r));
}

static void run_in_order(int n) {
  pld_config cfg = comm_config(n);
  const int per = IO_ROWS * IO_COLS, got_per = IO_ROUNDS * IO_SMALL * IO_COLS;
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, IO_ROWS, IO_COLS}, 0.25f, 9);
  pld_tensor got =
      pld_test_tensor(3, (int64_t[]){n, IO_ROUNDS * IO_SMALL, IO_COLS}, 0, 0);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){n, IO_ROWS, IO_COLS}, 0, 0);
  float *want_y = malloc(sizeof(float) * (size_t)(n * per));
  float *want_got = malloc(sizeof(float) * (size_t)(n * got_per));
  assert_non_null(want_y);
  assert_non_null(want_got);
  const float *xs = pld_tensor_data(x);
  shifted(want_y, xs, n, per, -1);
  /* Round r reads back rows r .. r + IO_SMALL - 1 of the rank's own x. */
  for (int q = 0; q < n; q++)
    for (int r = 0; r < IO_ROUNDS; r++)
      memcpy(want_got + q * got_per + r * IO_SMALL * IO_COLS,
             xs + q * per + r * IO_COLS,
             sizeof(float) * (size_t)(IO_SMALL * IO_COLS));
  pld_program *p;
  assert_ok(pld_compile(h_in_order, &cfg, PLD_ARGS(x, got, y), &p));
  for (int run = 0; run < 3; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, got, y)));
    comm_expect_f32("got (what the rank put, read back)", pld_tensor_data(got),
                    want_got, n * got_per);
    comm_expect_f32("y (the previous rank's x, put last)", pld_tensor_data(y),
                    want_y, n * per);
  }
  pld_program_destroy(p);
  free(want_y);
  free(want_got);
  pld_tensor_destroy(x);
  pld_tensor_destroy(got);
  pld_tensor_destroy(y);
}

static void test_transfers_in_program_order(void **state) {
  (void)state;
  comm_over_rank_counts(run_in_order);
}

/* ---- a barrier releases each rank's writes to every rank ---------------- */

/* rounds times: every rank but 0 writes row r of its x into row `me` of
 * rank 0's window, rank 0 into row 0 of rank 1's; after a barrier, every
 * rank gets rank 0's window, then rank 1's row 0 over its row 0 (what the
 * others wrote there); a second barrier before the next round's writes.
 * The readers are third ranks: each of a rank's barrier credits must
 * release its write to rank 0, not only its credit to rank 0.  Small
 * rows are stored (the MPI fabric holds them back for the next signal to
 * their peer, the barrier's credit, to carry); rows of more than 16 KiB
 * are put (held back to be joined with the next, then sent as messages
 * where transfers go as messages: tools/mpirun.sh tcp-msg). */
enum { BAR_MAX = 4 };                               /* ranks */
enum { BAR_ROUNDS = 32, BAR_COLS = 16 };            /* stored rows */
enum { BIG_ROUNDS = 4, BIG_COLS = (32 << 10) / 4 }; /* put rows, 32 KiB */

static void bar_release(pld_core k, pld_tensor x, pld_window data,
                        pld_window sig, pld_tensor seen, int rounds, int put) {
  int32_t me = pld_rank(k, pld_window_comm(data));
  for (int r = 0; r < rounds; r++) {
    pld_xfer o;
    memset(&o, 0, sizeof o);
    if (put) {
      o.dst_row = me;
      o.src_row = r;
      o.rows = 1;
      pld_put(k, data, me == 0 ? 1 : 0, x, &o);
    } else {
      pld_remote_store(k, pld_load(k, x, r, 0, 1, BAR_COLS), data,
                       me == 0 ? 1 : 0, me, 0, PLD_ATOMIC_NONE);
    }
    pld_barrier(k, sig);
    memset(&o, 0, sizeof o);
    o.dst_row = r * BAR_MAX;
    pld_get(k, seen, 0, data, &o);
    o.rows = 1;
    pld_get(k, seen, 1, data, &o);
    pld_barrier(k, sig);
  }
}

#define BAR_PARAMS(R, C)                                                       \
  PLD_IN(x, FP32, R, C), PLD_WINDOW(data, FP32, BAR_MAX, C),                   \
      PLD_WINDOW(sig, INT32, NR), PLD_OUT(seen, FP32, R *BAR_MAX, C)

/* The kernel, device and host functions of rows of C columns, R rounds. */
#define BAR_PROGRAM(name, R, C, put)                                           \
  PLD_KERNEL(k_##name, k, BAR_PARAMS(R, C)) {                                  \
    bar_release(k, x, data, sig, seen, R, put);                                \
  }                                                                            \
  PLD_DEVICE(d_##name, a, BAR_PARAMS(R, C)) {                                  \
    pld_launch(a, k_##name, 1, x, data, sig, seen);                            \
  }                                                                            \
  PLD_HOST(h_##name, h, PLD_IN(x, FP32, NR, R, C),                             \
           PLD_OUT(seen, FP32, NR, R *BAR_MAX, C)) {                           \
    int n = pld_world_size(h);                                                 \
    pld_window_buf data =                                                      \
        pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(BAR_MAX, C));            \
    pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));   \
    for (int r = 0; r < n; r++)                                                \
      pld_dispatch(h, d_##name, r, pld_slice(h, x, r),                         \
                   pld_window_view(h, data, PLD_FP32, PLD_SHAPE(BAR_MAX, C)),  \
                   pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),           \
                   pld_slice(h, seen, r));                                     \
  }

BAR_PROGRAM(bar_stores, BAR_ROUNDS, BAR_COLS, 0)
BAR_PROGRAM(bar_puts, BIG_ROUNDS, BIG_COLS, 1)

/* Runs host function h (BAR_PROGRAM's, rows of `cols` columns, `rounds`
 * rounds) over n ranks, three times, against what every rank must see. */
static void run_bar_release(int n, pld_host_fn h, int rounds, int cols) {
  pld_config cfg = comm_config(n);
  const int per = rounds * cols, seen_per = rounds * BAR_MAX * cols;
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, rounds, cols}, 0.5f, 11);
  pld_tensor seen =
      pld_test_tensor(3, (int64_t[]){n, rounds * BAR_MAX, cols}, 0, 0);
  float *want = calloc((size_t)n * (size_t)seen_per, sizeof(float));
  assert_non_null(want);
  /* Round r: row w of what every rank sees is rank w's row r of x (rank
   * 0's in row 0, from rank 1's window); rows from n on stay 0. */
  const float *xs = pld_tensor_data(x);
  for (int q = 0; q < n; q++)
    for (int r = 0; r < rounds; r++)
      for (int w = 0; w < n; w++)
        memcpy(want + q * seen_per + (r * BAR_MAX + w) * cols,
               xs + w * per + r * cols, sizeof(float) * (size_t)cols);
  pld_program *p;
  assert_ok(pld_compile(h, &cfg, PLD_ARGS(x, seen), &p));
  for (int run = 0; run < 3; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(x, seen)));
    comm_expect_f32("seen (rank 0's window and rank 1's row 0, each round)",
                    pld_tensor_data(seen), want, (int64_t)n * seen_per);
  }
  pld_program_destroy(p);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(seen);
}

static void run_bar_stores(int n) {
  run_bar_release(n, h_bar_stores, BAR_ROUNDS, BAR_COLS);
}

static void run_bar_puts(int n) {
  run_bar_release(n, h_bar_puts, BIG_ROUNDS, BIG_COLS);
}

static void test_barrier_releases_to_every_rank(void **state) {
  (void)state;
  comm_over_rank_counts(run_bar_stores);
}

static void test_barrier_releases_large_puts(void **state) {
  (void)state;
  comm_over_rank_counts(run_bar_puts);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_remote_load_store),
    cmocka_unit_test(test_remote_every_dtype),
    cmocka_unit_test(test_put_get_regions),
    cmocka_unit_test(test_put_get_larger_than_tile_memory),
    cmocka_unit_test(test_put_atomic_add),
    cmocka_unit_test(test_staging_tile_room),
    cmocka_unit_test(test_put_get_last_chunk_partial),
    cmocka_unit_test(test_put_get_row_in_pieces),
    cmocka_unit_test(test_put_get_region_last_chunk_partial),
    cmocka_unit_test(test_put_get_region_row_in_pieces),
    cmocka_unit_test(test_put_get_rows_apart_on_one_side),
    cmocka_unit_test(test_put_notify),
    cmocka_unit_test(test_transfers_in_program_order),
    cmocka_unit_test(test_barrier_releases_to_every_rank),
    cmocka_unit_test(test_barrier_releases_large_puts),
};

PLD_TEST_MAIN("comm_rma", tests)
