/* One-sided movement of every dtype, and what steers a transfer:
 *  - puts, gets, remote loads and stores, put-with-notify and the
 *    tile-staged transfers move FP32, FP16, BF16, INT32, INT16, INT8,
 *    UINT8, INT64, FP64 and BOOL windows bit for bit (NaN payloads,
 *    signalling NaNs, negative zero, subnormals included), at offsets;
 *    atomic add is refused where the hardware has none, and tiles of the
 *    move-only dtypes refuse to compute;
 *  - pld_remote_load_into reuses one tile over every peer, and takes no
 *    tile memory;
 *  - a whole-tensor put or get of unequal shapes is refused and moves
 *    nothing; leading dimensions of size 1 aside, and a zeroed pld_xfer
 *    still means the whole source at the origin;
 *  - chunk shapes: odd ones, larger than the region, 1 x 1, at the tile
 *    memory limit and one row past it, negative;
 *  - pld_put_tiles / pld_get_tiles through the kernel's ping and pong:
 *    the data, which chunk each tile holds afterwards, no tile memory of
 *    their own, and the refusals.
 * Inputs are random bit patterns; results are compared byte for byte
 * against a plain C model. */
#include <inttypes.h>

#include "comm_test.h"

/* ---- bytes, models and worlds ------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void fill_random(void *p, size_t bytes, uint64_t seed) {
  unsigned char *b = p;
  uint64_t s = seed;
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t r = splitmix(&s);
    memcpy(b + i, &r, bytes - i < 8 ? bytes - i : 8);
  }
}

/* Bit patterns a trip through a float register would change: signalling
 * and quiet NaNs with payloads (of both signs), negative zero, the
 * smallest subnormal, negative infinity. */
static const uint32_t specials_fp32[] = {0x7fa00001u, 0xffc0deadu, 0x7f800001u,
                                         0x80000000u, 0x00000001u, 0xff800000u};
static const uint16_t specials_fp16[] = {0x7c01u, 0xfe5au, 0x7d55u,
                                         0x8000u, 0x0001u, 0xfc00u};
static const uint16_t specials_bf16[] = {0x7f81u, 0xffc5u, 0x7fa5u,
                                         0x8000u, 0x0001u, 0xff80u};
static const uint64_t specials_fp64[] = {
    0x7ff0000000000001u, 0xfff8deadbeef0001u, 0x7ff4000000000abcu,
    0x8000000000000000u, 0x0000000000000001u, 0xfff0000000000000u};
enum { NSPECIAL = 6 };

/* Every 5th of the n elements at p becomes one of dt's specials (float
 * dtypes only), so that every region and chunk holds some. */
static void plant_specials(void *p, int64_t n, pld_dtype dt) {
  const void *sp = dt == PLD_FP32   ? (const void *)specials_fp32
                   : dt == PLD_FP16 ? (const void *)specials_fp16
                   : dt == PLD_BF16 ? (const void *)specials_bf16
                   : dt == PLD_FP64 ? (const void *)specials_fp64
                                    : NULL;
  if (!sp)
    return;
  const size_t es = pld_dtype_size(dt);
  for (int64_t i = 0; i < n; i += 5)
    memcpy((unsigned char *)p + (size_t)i * es,
           (const unsigned char *)sp + (size_t)(i / 5 % NSPECIAL) * es, es);
}

/* A host tensor of random bit patterns (and specials). */
static pld_tensor random_tensor(pld_dtype dt, int ndim, const int64_t *shape,
                                uint64_t seed) {
  pld_tensor t = comm_tensor(dt, ndim, shape);
  fill_random(pld_tensor_data(t),
              (size_t)pld_tensor_numel(t) * pld_dtype_size(dt), seed);
  plant_specials(pld_tensor_data(t), pld_tensor_numel(t), dt);
  return t;
}

static size_t tensor_bytes(pld_tensor t) {
  return (size_t)pld_tensor_numel(t) * pld_dtype_size(pld_tensor_dtype(t));
}

/* A copy of t's bytes (the caller frees it). */
static unsigned char *bytes_of(pld_tensor t) {
  unsigned char *b = malloc(tensor_bytes(t));
  assert_non_null(b);
  memcpy(b, pld_tensor_data(t), tensor_bytes(t));
  return b;
}

/* Asserts n elements of es bytes equal, bit for bit; the report shows the
 * first that differs as a little-endian hex number. */
static void expect_bytes(const char *what, const void *got, const void *want,
                         int64_t n, size_t es) {
  const unsigned char *g = got, *w = want;
  for (int64_t i = 0; i < n; i++)
    if (memcmp(g + (size_t)i * es, w + (size_t)i * es, es)) {
      uint64_t gv = 0, wv = 0;
      memcpy(&gv, g + (size_t)i * es, es);
      memcpy(&wv, w + (size_t)i * es, es);
      print_error("%s: element %" PRId64 ": got 0x%0*" PRIx64
                  ", expected 0x%0*" PRIx64 "\n",
                  what, i, (int)(2 * es), gv, (int)(2 * es), wv);
      fail();
    }
}

/* A block of rows x cols elements of es bytes from (srow, scol) of a
 * matrix of scols columns to (drow, dcol) of one of dcols columns. */
static void paste(unsigned char *dst, int64_t dcols, int64_t drow, int64_t dcol,
                  const unsigned char *src, int64_t scols, int64_t srow,
                  int64_t scol, int64_t rows, int64_t cols, size_t es) {
  for (int64_t i = 0; i < rows; i++)
    memcpy(dst + ((size_t)((drow + i) * dcols + dcol)) * es,
           src + ((size_t)((srow + i) * scols + scol)) * es, (size_t)cols * es);
}

/* The region of o (rows = cols = 0: all of the source's) from a source
 * of srows x scols to a destination of dcols columns. */
static void paste_xfer(unsigned char *dst, int64_t dcols,
                       const unsigned char *src, int64_t srows, int64_t scols,
                       const pld_xfer *o, size_t es) {
  paste(dst, dcols, o->dst_row, o->dst_col, src, scols, o->src_row, o->src_col,
        o->rows ? o->rows : srows, o->cols ? o->cols : scols, es);
}

static const char *const platforms[] = {"a2a3sim", "a5sim"};

/* comm_config's devices (ids neither contiguous nor from 0 past 2 ranks)
 * on the given simulator. */
static pld_config rma_config(int n, const char *platform) {
  pld_config cfg = comm_config(n);
  cfg.platform = platform;
  return cfg;
}

static int ub_bytes(const char *platform) {
  return (int)pld_platform_find(platform)->ub_bytes;
}

/* run(n, platform) for 2, 3 and 4 ranks on both simulators. */
static void over_worlds(void (*run)(int n, const char *platform)) {
  for (int c = 0; c < COMM_NCOUNTS; c++)
    for (int p = 0; p < 2 && comm_world_fits(comm_rank_counts[c]); p++)
      run(comm_rank_counts[c], platforms[p]);
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* "pld_put: kernel k (rank " - the start of any rank's failure. */
static const char *any_rank(char *buf, size_t cap, const char *fn,
                            const char *kernel) {
  snprintf(buf, cap, "%s: kernel %s (rank ", fn, kernel);
  return buf;
}

/* ---- every dtype moves -------------------------------------------------- */

enum { DR = 5, DC = 37, NSLOT = 9, YR = NSLOT * DR };

/* x's region put at offsets into the next rank's `we`, and the region of
 * the next rank's `wc` got at offsets into slot 6 of y. */
static const pld_xfer move_put_at = {1, 4, 2, 3, 3, 30, PLD_ATOMIC_NONE,
                                     0, 0, 0};
static const pld_xfer move_get_at = {2, 6, 1, 3, 3, 30, PLD_ATOMIC_NONE,
                                     1, 0, 0};
/* x's block [1, 4) x [2, 22) stored into the next rank's `wf` at (2, 10);
 * the block [1, 5) x [9, 31) of my `wf` loaded into slot 8 at (1, 5). */
enum { SUB_ROW = 1, SUB_COL = 2, SUB_ROWS = 3, SUB_COLS = 20 };
enum { SUB_AT_ROW = 2, SUB_AT_COL = 10 };
enum { BACK_ROW = 1, BACK_COL = 9, BACK_ROWS = 4, BACK_COLS = 22 };
enum { BACK_AT_ROW = 1, BACK_AT_COL = 5 };

/* Rank me of n (next nx, previous pv), each call of another kind:
 *   wa[nx] = x (put), wb[nx] = x (put with notify on note[0]),
 *   wc[pv] = x (remote store of a tile), wd[me + 2] = x (put through 2 x 8
 *   ping-pong tiles), we[nx] = x's region (put at offsets), wf[nx] at an
 *   offset = a block of x (remote store of a sub-tile);
 * then into the slots of y (DR rows each):
 *   1: my wb, read once its notify arrived; after a barrier,
 *   0: my wa (get), 2: wc of nx (remote load), 3: wd of pv (remote load
 *   into a tile held since the start), 4: wa of pv (get through ping
 *   alone), 5: my we (get, pipelined), 6: wc of nx's region at offsets,
 *   7: my wf (get), 8: a block of my wf (remote load at an offset). */
static void move_body(pld_core k, pld_tensor x, pld_window wa, pld_window wb,
                      pld_window wc, pld_window wd, pld_window we,
                      pld_window wf, pld_window sig, pld_window note,
                      pld_tensor y) {
  pld_comm comm = pld_window_comm(wa);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t nx = (me + 1) % n, pv = (me + n - 1) % n;
  pld_dtype dt = pld_tensor_dtype(x);
  pld_xfer o;
  memset(&o, 0, sizeof o);
  pld_put(k, wa, nx, x, NULL);
  pld_put_notify(k, wb, nx, x, NULL, note, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_tile *t = pld_load(k, x, 0, 0, DR, DC);
  pld_remote_store(k, t, wc, pv, 0, 0, PLD_ATOMIC_NONE);
  pld_tile *ping = pld_tile_new(k, dt, 2, 8), *pong = pld_tile_new(k, dt, 2, 8);
  pld_put_tiles(k, wd, (me + 2) % n, x, NULL, ping, pong);
  pld_put(k, we, nx, x, &move_put_at);
  pld_tile *sub = pld_load(k, x, SUB_ROW, SUB_COL, SUB_ROWS, SUB_COLS);
  pld_remote_store(k, sub, wf, nx, SUB_AT_ROW, SUB_AT_COL, PLD_ATOMIC_NONE);
  pld_wait(k, note, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_tile *tb = pld_load(k, pld_local(wb), 0, 0, DR, DC);
  pld_store(k, tb, y, 1 * DR, 0);
  pld_barrier(k, sig);
  pld_get(k, y, me, wa, &o);
  pld_store(k, pld_remote_load(k, wc, nx, 0, 0, DR, DC), y, 2 * DR, 0);
  pld_remote_load_into(k, t, wd, pv, 0, 0);
  pld_store(k, t, y, 3 * DR, 0);
  o.dst_row = 4 * DR;
  pld_get_tiles(k, y, pv, wa, &o, ping, NULL);
  o.dst_row = 5 * DR;
  o.pipelined = 1;
  pld_get(k, y, me, we, &o);
  pld_xfer at = move_get_at;
  at.dst_row += 6 * DR;
  pld_get(k, y, nx, wc, &at);
  o.dst_row = 7 * DR;
  o.pipelined = 0;
  pld_get(k, y, me, wf, &o);
  pld_store(
      k, pld_remote_load(k, wf, me, BACK_ROW, BACK_COL, BACK_ROWS, BACK_COLS),
      y, 8 * DR + BACK_AT_ROW, BACK_AT_COL);
}

static void move_host(pld_host h, pld_dtype dt, pld_device_fn fn, pld_tensor x,
                      pld_tensor y) {
  int n = pld_world_size(h);
  pld_window_buf w[6];
  for (int i = 0; i < 6; i++)
    w[i] = pld_window_alloc_shape(h, dt, PLD_SHAPE(DR, DC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf note = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < n; r++) {
    pld_window v[6];
    for (int i = 0; i < 6; i++)
      v[i] = pld_window_view(h, w[i], dt, PLD_SHAPE(DR, DC));
    pld_dispatch(h, fn, r, pld_slice(h, x, r), v[0], v[1], v[2], v[3], v[4],
                 v[5], pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, note, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, y, r));
  }
}

#define MOVE_PARAMS(DT)                                                        \
  PLD_IN(x, DT, DR, DC), PLD_WINDOW(wa, DT, DR, DC),                           \
      PLD_WINDOW(wb, DT, DR, DC), PLD_WINDOW(wc, DT, DR, DC),                  \
      PLD_WINDOW(wd, DT, DR, DC), PLD_WINDOW(we, DT, DR, DC),                  \
      PLD_WINDOW(wf, DT, DR, DC), PLD_WINDOW(sig, INT32, NR),                  \
      PLD_WINDOW(note, INT32, 1), PLD_INOUT(y, DT, YR, DC)

/* The program of one dtype: kernel k_move_DT, device function and host. */
#define MOVE_PROGRAM(DT)                                                       \
  PLD_KERNEL(k_move_##DT, k, MOVE_PARAMS(DT)) {                                \
    move_body(k, x, wa, wb, wc, wd, we, wf, sig, note, y);                     \
  }                                                                            \
  PLD_DEVICE(d_move_##DT, a, MOVE_PARAMS(DT)) {                                \
    pld_launch(a, k_move_##DT, 1, x, wa, wb, wc, wd, we, wf, sig, note, y);    \
  }                                                                            \
  PLD_HOST(h_move_##DT, h, PLD_IN(x, DT, NR, DR, DC),                          \
           PLD_INOUT(y, DT, NR, YR, DC)) {                                     \
    move_host(h, PLD_##DT, d_move_##DT, x, y);                                 \
  }

MOVE_PROGRAM(FP32)
MOVE_PROGRAM(FP16)
MOVE_PROGRAM(BF16)
MOVE_PROGRAM(INT32)
MOVE_PROGRAM(INT16)
MOVE_PROGRAM(INT8)
MOVE_PROGRAM(UINT8)
MOVE_PROGRAM(INT64)
MOVE_PROGRAM(FP64)
MOVE_PROGRAM(BOOL)

/* The model of move_body: each rank's windows, then its y. */
static void move_model(unsigned char *want, const unsigned char *xs,
                       const unsigned char *y0, int n, size_t es) {
  const size_t per = (size_t)(DR * DC) * es, yper = NSLOT * per;
  unsigned char *we = calloc((size_t)n, per), *wf = calloc((size_t)n, per);
  assert_non_null(we);
  assert_non_null(wf);
#define X(r) (xs + (size_t)mod(r, n) * per)
  for (int r = 0; r < n; r++) {
    paste_xfer(we + (size_t)r * per, DC, X(r - 1), DR, DC, &move_put_at, es);
    paste(wf + (size_t)r * per, DC, SUB_AT_ROW, SUB_AT_COL, X(r - 1), DC,
          SUB_ROW, SUB_COL, SUB_ROWS, SUB_COLS, es);
  }
  memcpy(want, y0, (size_t)n * yper);
  for (int r = 0; r < n; r++) {
    unsigned char *y = want + (size_t)r * yper;
    memcpy(y + 0 * per, X(r - 1), per); /* wa[r] */
    memcpy(y + 1 * per, X(r - 1), per); /* wb[r] */
    memcpy(y + 2 * per, X(r + 2), per); /* wc[r + 1] = x[r + 2] */
    memcpy(y + 3 * per, X(r - 3), per); /* wd[r - 1] = x[r - 3] */
    memcpy(y + 4 * per, X(r - 2), per); /* wa[r - 1] */
    memcpy(y + 5 * per, we + (size_t)r * per, per);
    pld_xfer at = move_get_at;
    at.dst_row += 6 * DR;
    paste_xfer(y, DC, X(r + 2), DR, DC, &at, es); /* wc[r + 1] */
    memcpy(y + 7 * per, wf + (size_t)r * per, per);
    paste(y, DC, 8 * DR + BACK_AT_ROW, BACK_AT_COL, wf + (size_t)r * per, DC,
          BACK_ROW, BACK_COL, BACK_ROWS, BACK_COLS, es);
  }
#undef X
  free(we);
  free(wf);
}

static void run_move(pld_host_fn host, pld_dtype dt, int n,
                     const char *platform) {
  pld_config cfg = rma_config(n, platform);
  const size_t es = pld_dtype_size(dt);
  pld_tensor x = random_tensor(dt, 3, (int64_t[]){n, DR, DC},
                               0x1000u + (uint64_t)dt * 16 + (uint64_t)n);
  pld_tensor y = random_tensor(dt, 3, (int64_t[]){n, NSLOT * DR, DC},
                               0x2000u + (uint64_t)dt * 16 + (uint64_t)n);
  unsigned char *y0 = bytes_of(y), *want = malloc(tensor_bytes(y));
  assert_non_null(want);
  move_model(want, pld_tensor_data(x), y0, n, es);
  assert_ok(pld_run(host, &cfg, PLD_ARGS(x, y)));
  for (int r = 0; r < n; r++)
    for (int s = 0; s < NSLOT; s++) {
      char what[96];
      snprintf(what, sizeof what, "%s, %d ranks on %s: rank %d, slot %d",
               pld_dtype_name(dt), n, platform, r, s);
      const size_t off = (size_t)((r * NSLOT + s) * DR * DC) * es;
      expect_bytes(what, (const unsigned char *)pld_tensor_data(y) + off,
                   want + off, DR * DC, es);
    }
  free(y0);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

#define MOVE_TEST(DT, dt)                                                      \
  static void run_move_##dt(int n, const char *platform) {                     \
    run_move(h_move_##DT, PLD_##DT, n, platform);                              \
  }                                                                            \
  static void test_move_##dt(void **state) {                                   \
    (void)state;                                                               \
    over_worlds(run_move_##dt);                                                \
  }

MOVE_TEST(FP32, fp32)
MOVE_TEST(FP16, fp16)
MOVE_TEST(BF16, bf16)
MOVE_TEST(INT32, int32)
MOVE_TEST(INT16, int16)
MOVE_TEST(INT8, int8)
MOVE_TEST(UINT8, uint8)
MOVE_TEST(INT64, int64)
MOVE_TEST(FP64, fp64)
MOVE_TEST(BOOL, bool)

/* ---- remote load into a held tile, over every peer ---------------------- */

enum { LR = 6, LC = 20, LTR = 3, LTC = 12, LROW = 2, LCOL = 5 };

/* plan = {the core's tile memory in bytes, the loop's call: 0
 * pld_remote_load_into, 1 pld_remote_load}.  Every rank puts x into its
 * window; after a barrier it takes a tile t and an accumulator, then the
 * rest of tile memory, and for every peer p (from its own rank on) reads
 * the LTR x LTC region at (LROW, LCOL) of p's window into t, copies t to
 * row block p of `copies` and adds it to the accumulator: `sum` is the
 * wrapping INT32 sum over the peers.  With tile memory full, a loop of
 * pld_remote_load (a new tile a peer) fails where pld_remote_load_into
 * does not. */
#define LOOP_PARAMS                                                            \
  PLD_IN(x, INT32, LR, LC), PLD_WINDOW(w, INT32, LR, LC),                      \
      PLD_WINDOW(sig, INT32, NR), PLD_IN(plan, INT32, 2),                      \
      PLD_OUT(copies, INT32, NR, LTR, LTC), PLD_OUT(sum, INT32, LTR, LTC)

PLD_KERNEL(k_loop, k, LOOP_PARAMS) {
  pld_comm comm = pld_window_comm(w);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t ub = (int32_t)pld_read(k, plan, PLD_AT(0));
  int fresh = (int)pld_read(k, plan, PLD_AT(1));
  pld_put(k, w, me, x, NULL);
  pld_barrier(k, sig);
  pld_tile *t = pld_tile_new(k, PLD_INT32, LTR, LTC);
  pld_tile *acc = pld_full(k, PLD_INT32, LTR, LTC, 0);
  int32_t rest = ub - (int32_t)(pld_tile_bytes(t) + pld_tile_bytes(acc));
  pld_tile_new(k, PLD_UINT8, rest / 32, 32);
  for (int32_t i = 0; i < n; i++) {
    int32_t p = (me + i) % n;
    if (fresh)
      t = pld_remote_load(k, w, p, LROW, LCOL, LTR, LTC);
    else
      pld_remote_load_into(k, t, w, p, LROW, LCOL);
    pld_store(k, t, copies, p * LTR, 0);
    pld_add(k, acc, acc, t);
  }
  pld_store(k, acc, sum, 0, 0);
}

PLD_DEVICE(d_loop, a, LOOP_PARAMS) {
  pld_launch(a, k_loop, 1, x, w, sig, plan, copies, sum);
}

PLD_HOST(h_loop, h, PLD_IN(x, INT32, NR, LR, LC), PLD_IN(plan, INT32, 2),
         PLD_OUT(copies, INT32, NR, NR, LTR, LTC),
         PLD_OUT(sum, INT32, NR, LTR, LTC)) {
  int n = pld_world_size(h);
  pld_window_buf w = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(LR, LC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_loop, r, pld_slice(h, x, r),
                 pld_window_view(h, w, PLD_INT32, PLD_SHAPE(LR, LC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), plan,
                 pld_slice(h, copies, r), pld_slice(h, sum, r));
}

static void run_load_into_loop(int n, const char *platform) {
  pld_config cfg = rma_config(n, platform);
  pld_tensor x = random_tensor(PLD_INT32, 3, (int64_t[]){n, LR, LC},
                               0x3000u + (uint64_t)n);
  pld_tensor plan = comm_int_tensor(0, 1, (int64_t[]){2});
  int32_t *pl = pld_tensor_data(plan);
  pl[0] = ub_bytes(platform);
  pld_tensor copies = comm_tensor(PLD_INT32, 4, (int64_t[]){n, n, LTR, LTC});
  pld_tensor sum = comm_tensor(PLD_INT32, 3, (int64_t[]){n, LTR, LTC});
  const int32_t *xs = pld_tensor_data(x);
  /* Every rank sees the same copies and the same sum. */
  int32_t want_copies[4 * LTR * LTC], want_sum[LTR * LTC];
  for (int e = 0; e < LTR * LTC; e++) {
    uint32_t s = 0;
    for (int p = 0; p < n; p++) {
      int32_t v = xs[(p * LR + LROW + e / LTC) * LC + LCOL + e % LTC];
      want_copies[p * LTR * LTC + e] = v;
      s += (uint32_t)v;
    }
    memcpy(&want_sum[e], &s, sizeof s);
  }
  pld_program *p;
  assert_ok(pld_compile(h_loop, &cfg, PLD_ARGS(x, plan, copies, sum), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(x, plan, copies, sum)));
  for (int r = 0; r < n; r++) {
    char what[96];
    snprintf(what, sizeof what, "%d ranks on %s: rank %d's copies", n, platform,
             r);
    comm_expect_i32(
        what, (const int32_t *)pld_tensor_data(copies) + r * n * LTR * LTC,
        want_copies, n * LTR * LTC);
    snprintf(what, sizeof what, "%d ranks on %s: rank %d's sum", n, platform,
             r);
    comm_expect_i32(what, (const int32_t *)pld_tensor_data(sum) + r * LTR * LTC,
                    want_sum, LTR * LTC);
  }
  /* The same loop of pld_remote_load: no room for its first tile. */
  pl[1] = 1;
  char who[64], over[160];
  snprintf(over, sizeof over,
           "tile memory over capacity: INT32[%d, %d] tile needs %d bytes; %d "
           "of %d bytes of the AIV core Unified Buffer in use",
           LTR, LTC, LTR * 64, pl[0], pl[0]);
  assert_fails_with(
      pld_program_run(p, PLD_ARGS(x, plan, copies, sum)), PLD_ERR_TILE_MEMORY,
      any_rank(who, sizeof who, "pld_remote_load", "k_loop"), over);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(plan);
  pld_tensor_destroy(copies);
  pld_tensor_destroy(sum);
}

/* One tile, read into from every peer in turn: copies and sums of every
 * peer's region match a plain C loop, with the rest of tile memory taken
 * (pld_remote_load_into allocates nothing; pld_remote_load would). */
static void test_remote_load_into_every_peer(void **state) {
  (void)state;
  over_worlds(run_load_into_loop);
}

/* ---- whole-tensor transfers: the shapes that pass ----------------------- */

enum { SR = 3, SC = 8, SN = SR * SC };

/* Rank me (next nx, previous pv) puts without a pld_xfer
 *   v [SN] into wrow [1, SN] of nx and into wrow3 [1, 1, SN] of pv,
 *   x [SR, SC] into my wm [SR, SC],
 * and with a zeroed pld_xfer x into wbig [SR + 2, SC + 3] of nx (at the
 * origin); after a barrier it gets without a pld_xfer
 *   my wrow into yv [SN], wrow3 of nx into yv3 [1, SN], wm of nx into
 *   ym [1, SR, SC], my wbig into ybig (one shape),
 * and with a zeroed pld_xfer wm of pv into ylarge [SR + 2, SC + 3] (at the
 * origin; the rest keeps the host's values). */
#define SHAPES_PARAMS                                                          \
  PLD_IN(x, INT32, SR, SC), PLD_IN(v, INT32, SN),                              \
      PLD_WINDOW(wrow, INT32, 1, SN), PLD_WINDOW(wrow3, INT32, 1, 1, SN),      \
      PLD_WINDOW(wm, INT32, SR, SC), PLD_WINDOW(wbig, INT32, SR + 2, SC + 3),  \
      PLD_WINDOW(sig, INT32, NR), PLD_OUT(yv, INT32, SN),                      \
      PLD_OUT(yv3, INT32, 1, SN), PLD_OUT(ym, INT32, 1, SR, SC),               \
      PLD_OUT(ybig, INT32, SR + 2, SC + 3),                                    \
      PLD_INOUT(ylarge, INT32, SR + 2, SC + 3)

PLD_KERNEL(k_shapes, k, SHAPES_PARAMS) {
  pld_comm comm = pld_window_comm(wm);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t nx = (me + 1) % n, pv = (me + n - 1) % n;
  pld_xfer zero;
  memset(&zero, 0, sizeof zero);
  pld_put(k, wrow, nx, v, NULL);
  pld_put(k, wrow3, pv, v, NULL);
  pld_put(k, wm, me, x, NULL);
  pld_put(k, wbig, nx, x, &zero);
  pld_barrier(k, sig);
  pld_get(k, yv, me, wrow, NULL);
  pld_get(k, yv3, nx, wrow3, NULL);
  pld_get(k, ym, nx, wm, NULL);
  pld_get(k, ybig, me, wbig, NULL);
  pld_get(k, ylarge, pv, wm, &zero);
}

PLD_DEVICE(d_shapes, a, SHAPES_PARAMS) {
  pld_launch(a, k_shapes, 1, x, v, wrow, wrow3, wm, wbig, sig, yv, yv3, ym,
             ybig, ylarge);
}

PLD_HOST(h_shapes, h, PLD_IN(x, INT32, NR, SR, SC), PLD_IN(v, INT32, NR, SN),
         PLD_OUT(yv, INT32, NR, SN), PLD_OUT(yv3, INT32, NR, 1, SN),
         PLD_OUT(ym, INT32, NR, 1, SR, SC),
         PLD_OUT(ybig, INT32, NR, SR + 2, SC + 3),
         PLD_INOUT(ylarge, INT32, NR, SR + 2, SC + 3)) {
  int n = pld_world_size(h);
  pld_window_buf wrow = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, SN));
  pld_window_buf wrow3 =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, 1, SN));
  pld_window_buf wm = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR, SC));
  pld_window_buf wbig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR + 2, SC + 3));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_shapes, r, pld_slice(h, x, r), pld_slice(h, v, r),
                 pld_window_view(h, wrow, PLD_INT32, PLD_SHAPE(1, SN)),
                 pld_window_view(h, wrow3, PLD_INT32, PLD_SHAPE(1, 1, SN)),
                 pld_window_view(h, wm, PLD_INT32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, wbig, PLD_INT32, PLD_SHAPE(SR + 2, SC + 3)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, yv, r), pld_slice(h, yv3, r), pld_slice(h, ym, r),
                 pld_slice(h, ybig, r), pld_slice(h, ylarge, r));
}

static void run_shapes_accepted(int n, const char *platform) {
  pld_config cfg = rma_config(n, platform);
  enum { BR = SR + 2, BC = SC + 3 };
  pld_tensor x = random_tensor(PLD_INT32, 3, (int64_t[]){n, SR, SC},
                               0x4000u + (uint64_t)n);
  pld_tensor v =
      random_tensor(PLD_INT32, 2, (int64_t[]){n, SN}, 0x4100u + (uint64_t)n);
  pld_tensor yv = comm_tensor(PLD_INT32, 2, (int64_t[]){n, SN});
  pld_tensor yv3 = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 1, SN});
  pld_tensor ym = comm_tensor(PLD_INT32, 4, (int64_t[]){n, 1, SR, SC});
  pld_tensor ybig = comm_tensor(PLD_INT32, 3, (int64_t[]){n, BR, BC});
  pld_tensor ylarge = random_tensor(PLD_INT32, 3, (int64_t[]){n, BR, BC},
                                    0x4200u + (uint64_t)n);
  const int32_t *xs = pld_tensor_data(x), *vs = pld_tensor_data(v);
  int32_t want_big[4 * BR * BC], want_large[4 * BR * BC];
  memset(want_big, 0, sizeof want_big);
  memcpy(want_large, pld_tensor_data(ylarge), tensor_bytes(ylarge));
  for (int r = 0; r < n; r++) {
    paste((unsigned char *)(want_big + r * BR * BC), BC, 0, 0,
          (const unsigned char *)(xs + mod(r - 1, n) * SN), SC, 0, 0, SR, SC,
          4);
    paste((unsigned char *)(want_large + r * BR * BC), BC, 0, 0,
          (const unsigned char *)(xs + mod(r - 1, n) * SN), SC, 0, 0, SR, SC,
          4);
  }
  assert_ok(pld_run(h_shapes, &cfg, PLD_ARGS(x, v, yv, yv3, ym, ybig, ylarge)));
  for (int r = 0; r < n; r++) {
    char what[96];
    snprintf(what, sizeof what, "%d ranks on %s: rank %d: ", n, platform, r);
    char w[160];
    snprintf(w, sizeof w, "%s[SN] from [1, SN]", what);
    comm_expect_i32(w, (const int32_t *)pld_tensor_data(yv) + r * SN,
                    vs + mod(r - 1, n) * SN, SN);
    snprintf(w, sizeof w, "%s[1, SN] from [1, 1, SN]", what);
    comm_expect_i32(w, (const int32_t *)pld_tensor_data(yv3) + r * SN,
                    vs + mod(r + 2, n) * SN, SN);
    snprintf(w, sizeof w, "%s[1, SR, SC] from [SR, SC]", what);
    comm_expect_i32(w, (const int32_t *)pld_tensor_data(ym) + r * SN,
                    xs + mod(r + 1, n) * SN, SN);
    snprintf(w, sizeof w, "%szeroed pld_xfer into a larger window", what);
    comm_expect_i32(w, (const int32_t *)pld_tensor_data(ybig) + r * BR * BC,
                    want_big + r * BR * BC, BR * BC);
    snprintf(w, sizeof w, "%szeroed pld_xfer into a larger tensor", what);
    comm_expect_i32(w, (const int32_t *)pld_tensor_data(ylarge) + r * BR * BC,
                    want_large + r * BR * BC, BR * BC);
  }
  pld_tensor_destroy(x);
  pld_tensor_destroy(v);
  pld_tensor_destroy(yv);
  pld_tensor_destroy(yv3);
  pld_tensor_destroy(ym);
  pld_tensor_destroy(ybig);
  pld_tensor_destroy(ylarge);
}

/* Without a pld_xfer, shapes equal but for leading dimensions of size 1
 * pass both ways; a zeroed pld_xfer is the whole source at the origin of
 * a larger destination, window or tensor. */
static void test_whole_tensor_shapes_accepted(void **state) {
  (void)state;
  over_worlds(run_shapes_accepted);
}

/* ---- refusals, and what they leave behind ------------------------------- */

/* What rank flag[0] does wrong, by flag[1]; the peer it targets is the
 * next rank.  FILL (every rank) writes each rank's windows with known
 * values; every run starts by copying this rank's windows out (the
 * program keeps windows from run to run), so the run after a refusal
 * shows what the refused call left. */
enum {
  REF_NONE,
  REF_FILL,
  /* whole-tensor transfers of unequal shapes */
  REF_PUT_T,         /* x [3, 8] into wt [8, 3] */
  REF_PUT_FLAT,      /* x [3, 8] into wflat [24] */
  REF_PUT_COL,       /* v [24] into wcol [24, 1] */
  REF_PUT_BIG,       /* x [3, 8] into wbig [4, 8] */
  REF_PUT_CUBE,      /* cube [2, 3, 4] into wsix [6, 4] */
  REF_GET_T,         /* wm [3, 8] into my wt [8, 3] */
  REF_GET_BIG,       /* wm [3, 8] into my wbig [4, 8] */
  REF_GET_FLAT,      /* wflat [24] into my wm [3, 8] */
  REF_PUT_NOTIFY_T,  /* as REF_PUT_T, with a notify behind it */
  REF_PUT_TILES_T,   /* as REF_PUT_T, through a tile */
  REF_GET_TILES_BIG, /* as REF_GET_BIG, through a tile */
  /* atomic add where the hardware has none */
  REF_STORE_ADD_INT64,
  REF_STORE_ADD_FP64,
  REF_STORE_ADD_BOOL,
  REF_STORE_ADD_UINT8,
  REF_PUT_ADD_INT64,
  REF_PUT_ADD_FP64,
  REF_PUT_ADD_BOOL,
  REF_PUT_ADD_UINT8,
  REF_PUT_NOTIFY_ADD_INT64,
  REF_PUT_TILES_ADD_INT64,
  /* tiles that only move data */
  REF_ADD_INT64,
  REF_CAST_FP64,
  REF_MULS_BOOL,
  REF_ROW_SUM_INT64,
  /* pld_remote_load_into */
  REF_INTO_FP32_TILE,  /* an FP32 tile from wm (INT32) */
  REF_INTO_INT32_TILE, /* an INT32 tile from w64 (INT64) */
  REF_INTO_ROWS,       /* [3, 8] at (1, 0) of wm [3, 8] */
  REF_INTO_COLS,       /* [2, 4] at (1, 5) */
  REF_INTO_NEG,        /* [1, 1] at (-1, 0) */
  REF_INTO_VIEW,       /* [2, 8] at (1, 0) of wpart, a [2, 8] view inside a
                          4 KiB buffer */
  REF_INTO_PEER,       /* peer = nranks */
  REF_INTO_NULL,       /* a NULL tile */
  REF_INTO_FREED,      /* a freed tile */
  REF_INTO_LIMIT       /* [2, 4] at (1, 4) of wm and [1, 8] at (1, 0) of
                          wpart: at the limits, into `li` */
};

#define REFUSE_PARAMS                                                          \
  PLD_IN(x, INT32, SR, SC), PLD_IN(v, INT32, SN),                              \
      PLD_IN(cube, INT32, 2, 3, 4), PLD_IN(flag, INT32, 2),                    \
      PLD_WINDOW(wm, INT32, SR, SC), PLD_WINDOW(wt, INT32, SC, SR),            \
      PLD_WINDOW(wflat, INT32, SN), PLD_WINDOW(wcol, INT32, SN, 1),            \
      PLD_WINDOW(wbig, INT32, SR + 1, SC), PLD_WINDOW(wsix, INT32, 6, 4),      \
      PLD_WINDOW(wnote, INT32, 1), PLD_WINDOW(w64, INT64, SR, SC),             \
      PLD_WINDOW(wf64, FP64, SR, SC), PLD_WINDOW(wbool, BOOL, SR, SC),         \
      PLD_WINDOW(wu8, UINT8, SR, SC), PLD_WINDOW(wpart, INT32, 2, SC),         \
      PLD_OUT(dm, INT32, SR, SC), PLD_OUT(dt, INT32, SC, SR),                  \
      PLD_OUT(dflat, INT32, SN), PLD_OUT(dcol, INT32, SN, 1),                  \
      PLD_OUT(dbig, INT32, SR + 1, SC), PLD_OUT(dsix, INT32, 6, 4),            \
      PLD_OUT(dnote, INT32, 1), PLD_OUT(d64, INT64, SR, SC),                   \
      PLD_OUT(dpart, INT32, 2, SC), PLD_INOUT(li, INT32, 3, SC)

/* The windows FILL writes and each run copies out, in buffer order. */
enum { NDUMP = 9 };

/* The value FILL writes at element i of dumped window d of rank r. */
static double fill_value(int r, int d, int64_t i) {
  if (d == 7) /* w64: beyond 32 bits, exact in a double */
    return (double)((int64_t)(r + 1) << 40) + (double)(d * 1000 + i);
  return (double)(r + 1) * 100000 + d * 1000 + (double)i;
}

/* Writes fill_value(r, d, i) to every element of t (1-D or 2-D). */
static void fill_window(pld_core k, pld_tensor t, int r, int d) {
  int64_t rows = pld_tensor_ndim(t) == 1 ? 1 : pld_tensor_dim(t, 0);
  int64_t cols = pld_tensor_dim(t, pld_tensor_ndim(t) - 1);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      if (pld_tensor_ndim(t) == 1)
        pld_write(k, t, PLD_AT(j), fill_value(r, d, j));
      else
        pld_write(k, t, PLD_AT(i, j), fill_value(r, d, i * cols + j));
    }
}

PLD_KERNEL(k_refuse, k, REFUSE_PARAMS) {
  pld_comm comm = pld_window_comm(wm);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t bad = (int32_t)pld_read(k, flag, PLD_AT(0));
  int how = (int)pld_read(k, flag, PLD_AT(1));
  int32_t peer = (me + 1) % n;
  const pld_window win[NDUMP] = {wm,   wt,    wflat, wcol, wbig,
                                 wsix, wnote, w64,   wpart};
  const pld_tensor dump[NDUMP] = {dm,   dt,    dflat, dcol, dbig,
                                  dsix, dnote, d64,   dpart};
  for (int d = 0; d < NDUMP; d++)
    pld_get(k, dump[d], me, win[d], NULL);
  if (how == REF_FILL) {
    for (int d = 0; d < NDUMP; d++)
      fill_window(k, pld_local(win[d]), me, d);
    return;
  }
  if (me != bad)
    return;
  pld_xfer add;
  memset(&add, 0, sizeof add);
  add.atomic = PLD_ATOMIC_ADD;
  pld_tile *t = NULL;
  switch (how) {
  case REF_PUT_T:
    pld_put(k, wt, peer, x, NULL);
    break;
  case REF_PUT_FLAT:
    pld_put(k, wflat, peer, x, NULL);
    break;
  case REF_PUT_COL:
    pld_put(k, wcol, peer, v, NULL);
    break;
  case REF_PUT_BIG:
    pld_put(k, wbig, peer, x, NULL);
    break;
  case REF_PUT_CUBE:
    pld_put(k, wsix, peer, cube, NULL);
    break;
  case REF_GET_T:
    pld_get(k, pld_local(wt), peer, wm, NULL);
    break;
  case REF_GET_BIG:
    pld_get(k, pld_local(wbig), peer, wm, NULL);
    break;
  case REF_GET_FLAT:
    pld_get(k, pld_local(wm), peer, wflat, NULL);
    break;
  case REF_PUT_NOTIFY_T:
    pld_put_notify(k, wt, peer, x, NULL, wnote, PLD_AT(0), 7, PLD_NOTIFY_SET);
    break;
  case REF_PUT_TILES_T:
    pld_put_tiles(k, wt, peer, x, NULL, pld_tile_new(k, PLD_INT32, 1, SC),
                  NULL);
    break;
  case REF_GET_TILES_BIG:
    pld_get_tiles(k, pld_local(wbig), peer, wm, NULL,
                  pld_tile_new(k, PLD_INT32, 1, SC), NULL);
    break;
  case REF_STORE_ADD_INT64:
    pld_remote_store(k, pld_full(k, PLD_INT64, SR, SC, 1), w64, peer, 0, 0,
                     PLD_ATOMIC_ADD);
    break;
  case REF_STORE_ADD_FP64:
    pld_remote_store(k, pld_full(k, PLD_FP64, SR, SC, 1), wf64, peer, 0, 0,
                     PLD_ATOMIC_ADD);
    break;
  case REF_STORE_ADD_BOOL:
    pld_remote_store(k, pld_full(k, PLD_BOOL, SR, SC, 1), wbool, peer, 0, 0,
                     PLD_ATOMIC_ADD);
    break;
  case REF_STORE_ADD_UINT8:
    pld_remote_store(k, pld_full(k, PLD_UINT8, SR, SC, 1), wu8, peer, 0, 0,
                     PLD_ATOMIC_ADD);
    break;
  case REF_PUT_ADD_INT64:
    pld_put(k, w64, peer, pld_local(w64), &add);
    break;
  case REF_PUT_ADD_FP64:
    pld_put(k, wf64, peer, pld_local(wf64), &add);
    break;
  case REF_PUT_ADD_BOOL:
    pld_put(k, wbool, peer, pld_local(wbool), &add);
    break;
  case REF_PUT_ADD_UINT8:
    pld_put(k, wu8, peer, pld_local(wu8), &add);
    break;
  case REF_PUT_NOTIFY_ADD_INT64:
    pld_put_notify(k, w64, peer, pld_local(w64), &add, wnote, PLD_AT(0), 7,
                   PLD_NOTIFY_SET);
    break;
  case REF_PUT_TILES_ADD_INT64:
    pld_put_tiles(k, w64, peer, pld_local(w64), &add,
                  pld_tile_new(k, PLD_INT64, 1, SC), NULL);
    break;
  case REF_ADD_INT64:
    t = pld_remote_load(k, w64, peer, 0, 0, SR, SC);
    pld_add(k, t, t, t);
    break;
  case REF_CAST_FP64:
    pld_cast(k, pld_tile_new(k, PLD_FP32, SR, SC),
             pld_remote_load(k, wf64, peer, 0, 0, SR, SC));
    break;
  case REF_MULS_BOOL:
    t = pld_remote_load(k, wbool, peer, 0, 0, SR, SC);
    pld_muls(k, t, t, 2);
    break;
  case REF_ROW_SUM_INT64:
    pld_row_sum(k, pld_tile_new(k, PLD_INT64, SR, 1),
                pld_remote_load(k, w64, peer, 0, 0, SR, SC));
    break;
  case REF_INTO_FP32_TILE:
    pld_remote_load_into(k, pld_tile_new(k, PLD_FP32, SR, SC), wm, peer, 0, 0);
    break;
  case REF_INTO_INT32_TILE:
    pld_remote_load_into(k, pld_tile_new(k, PLD_INT32, SR, SC), w64, peer, 0,
                         0);
    break;
  case REF_INTO_ROWS:
    pld_remote_load_into(k, pld_tile_new(k, PLD_INT32, SR, SC), wm, peer, 1, 0);
    break;
  case REF_INTO_COLS:
    pld_remote_load_into(k, pld_tile_new(k, PLD_INT32, 2, 4), wm, peer, 1, 5);
    break;
  case REF_INTO_NEG:
    pld_remote_load_into(k, pld_tile_new(k, PLD_INT32, 1, 1), wm, peer, -1, 0);
    break;
  case REF_INTO_VIEW:
    pld_remote_load_into(k, pld_tile_new(k, PLD_INT32, 2, SC), wpart, peer, 1,
                         0);
    break;
  case REF_INTO_PEER:
    pld_remote_load_into(k, pld_tile_new(k, PLD_INT32, 1, 1), wm, n, 0, 0);
    break;
  case REF_INTO_NULL:
    pld_remote_load_into(k, NULL, wm, peer, 0, 0);
    break;
  case REF_INTO_FREED:
    t = pld_tile_new(k, PLD_INT32, 1, 1);
    pld_tile_free(k, t);
    pld_remote_load_into(k, t, wm, peer, 0, 0);
    break;
  case REF_INTO_LIMIT:
    t = pld_tile_new(k, PLD_INT32, 2, 4);
    pld_remote_load_into(k, t, wm, peer, 1, 4);
    pld_store(k, t, li, 0, 0);
    t = pld_tile_new(k, PLD_INT32, 1, SC);
    pld_remote_load_into(k, t, wpart, peer, 1, 0);
    pld_store(k, t, li, 2, 0);
    break;
  default:
    break;
  }
}

PLD_DEVICE(d_refuse, a, REFUSE_PARAMS) {
  pld_launch(a, k_refuse, 1, x, v, cube, flag, wm, wt, wflat, wcol, wbig, wsix,
             wnote, w64, wf64, wbool, wu8, wpart, dm, dt, dflat, dcol, dbig,
             dsix, dnote, d64, dpart, li);
}

PLD_HOST(h_refuse, h, PLD_IN(x, INT32, NR, SR, SC), PLD_IN(v, INT32, NR, SN),
         PLD_IN(cube, INT32, NR, 2, 3, 4), PLD_IN(flag, INT32, 2),
         PLD_OUT(dm, INT32, NR, SR, SC), PLD_OUT(dt, INT32, NR, SC, SR),
         PLD_OUT(dflat, INT32, NR, SN), PLD_OUT(dcol, INT32, NR, SN, 1),
         PLD_OUT(dbig, INT32, NR, SR + 1, SC), PLD_OUT(dsix, INT32, NR, 6, 4),
         PLD_OUT(dnote, INT32, NR, 1), PLD_OUT(d64, INT64, NR, SR, SC),
         PLD_OUT(dpart, INT32, NR, 2, SC), PLD_INOUT(li, INT32, NR, 3, SC)) {
  int n = pld_world_size(h);
  /* Buffers #0 to #12, in the order of the parameters. */
  pld_window_buf b[13];
  b[0] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR, SC));
  b[1] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SC, SR));
  b[2] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SN));
  b[3] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SN, 1));
  b[4] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR + 1, SC));
  b[5] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(6, 4));
  b[6] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  b[7] = pld_window_alloc_shape(h, PLD_INT64, PLD_SHAPE(SR, SC));
  b[8] = pld_window_alloc_shape(h, PLD_FP64, PLD_SHAPE(SR, SC));
  b[9] = pld_window_alloc_shape(h, PLD_BOOL, PLD_SHAPE(SR, SC));
  b[10] = pld_window_alloc_shape(h, PLD_UINT8, PLD_SHAPE(SR, SC));
  b[11] = pld_window_alloc(h, 4096);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_refuse, r, pld_slice(h, x, r), pld_slice(h, v, r),
                 pld_slice(h, cube, r), flag,
                 pld_window_view(h, b[0], PLD_INT32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, b[1], PLD_INT32, PLD_SHAPE(SC, SR)),
                 pld_window_view(h, b[2], PLD_INT32, PLD_SHAPE(SN)),
                 pld_window_view(h, b[3], PLD_INT32, PLD_SHAPE(SN, 1)),
                 pld_window_view(h, b[4], PLD_INT32, PLD_SHAPE(SR + 1, SC)),
                 pld_window_view(h, b[5], PLD_INT32, PLD_SHAPE(6, 4)),
                 pld_window_view(h, b[6], PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, b[7], PLD_INT64, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, b[8], PLD_FP64, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, b[9], PLD_BOOL, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, b[10], PLD_UINT8, PLD_SHAPE(SR, SC)),
                 pld_window_view_at(h, b[11], 32, PLD_INT32, PLD_SHAPE(2, SC)),
                 pld_slice(h, dm, r), pld_slice(h, dt, r),
                 pld_slice(h, dflat, r), pld_slice(h, dcol, r),
                 pld_slice(h, dbig, r), pld_slice(h, dsix, r),
                 pld_slice(h, dnote, r), pld_slice(h, d64, r),
                 pld_slice(h, dpart, r), pld_slice(h, li, r));
}

/* One refusal: rank `bad` (modulo the rank count) makes mistake `how`;
 * the run fails with status and a message holding "fn: kernel k_refuse
 * (rank bad, ...): " and each of says, where "{peer}" stands for the
 * peer's number and "{n}" for the domain's size. */
struct refusal {
  int bad, how, status;
  const char *fn;
  const char *says[3];
};

/* The program over n ranks, with its tensors. */
struct refuse_prog {
  int n;
  pld_program *p;
  pld_tensor in[4], out[10];
};

/* s with "{peer}" and "{n}" replaced. */
static const char *subst(char *out, size_t cap, const char *s, int peer,
                         int n) {
  size_t len = 0;
  out[0] = '\0';
  while (s && *s && len + 1 < cap) {
    if (!strncmp(s, "{peer}", 6) || !strncmp(s, "{n}", 3)) {
      const int v = s[1] == 'p' ? peer : n;
      len += (size_t)snprintf(out + len, cap - len, "%d", v);
      s += s[1] == 'p' ? 6 : 3;
    } else {
      out[len++] = *s++;
      out[len] = '\0';
    }
  }
  return s ? out : NULL;
}

static const char *const dump_names[NDUMP] = {
    "wm", "wt", "wflat", "wcol", "wbig", "wsix", "wnote", "w64", "wpart"};
static const int dump_elems[NDUMP] = {SN, SN, SN, SN,    (SR + 1) * SC,
                                      24, 1,  SN, 2 * SC};

static void refuse_run_args(struct refuse_prog *rp, int *argc, pld_arg *argv) {
  *argc = 0;
  for (int i = 0; i < 4; i++)
    argv[(*argc)++] = PLD_ARG(rp->in[i]);
  for (int i = 0; i < 10; i++)
    argv[(*argc)++] = PLD_ARG(rp->out[i]);
}

static int refuse_run(struct refuse_prog *rp, int bad, int how) {
  int32_t *f = pld_tensor_data(rp->in[3]);
  f[0] = bad;
  f[1] = how;
  int argc;
  pld_arg argv[14];
  refuse_run_args(rp, &argc, argv);
  return pld_program_run(rp->p, argc, argv);
}

static void refuse_open(struct refuse_prog *rp, int n, const char *platform) {
  pld_config cfg = rma_config(n, platform);
  cfg.keep_windows = 1;
  rp->n = n;
  rp->in[0] = random_tensor(PLD_INT32, 3, (int64_t[]){n, SR, SC}, 0x5000u);
  rp->in[1] = random_tensor(PLD_INT32, 2, (int64_t[]){n, SN}, 0x5100u);
  rp->in[2] = random_tensor(PLD_INT32, 4, (int64_t[]){n, 2, 3, 4}, 0x5200u);
  rp->in[3] = comm_int_tensor(0, 1, (int64_t[]){2});
  rp->out[0] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, SR, SC});
  rp->out[1] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, SC, SR});
  rp->out[2] = comm_tensor(PLD_INT32, 2, (int64_t[]){n, SN});
  rp->out[3] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, SN, 1});
  rp->out[4] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, SR + 1, SC});
  rp->out[5] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 6, 4});
  rp->out[6] = comm_tensor(PLD_INT32, 2, (int64_t[]){n, 1});
  rp->out[7] = comm_tensor(PLD_INT64, 3, (int64_t[]){n, SR, SC});
  rp->out[8] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 2, SC});
  rp->out[9] = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 3, SC});
  int argc;
  pld_arg argv[14];
  refuse_run_args(rp, &argc, argv);
  assert_ok(pld_compile(h_refuse, &cfg, argc, argv, &rp->p));
  assert_ok(refuse_run(rp, 0, REF_FILL));
}

/* Asserts every rank's windows hold what FILL wrote (the dumps of a run
 * with nothing to do). */
static void refuse_expect_filled(struct refuse_prog *rp, const char *after) {
  assert_ok(refuse_run(rp, 0, REF_NONE));
  for (int d = 0; d < NDUMP; d++)
    for (int r = 0; r < rp->n; r++) {
      char what[160];
      snprintf(what, sizeof what,
               "after %s: rank %d of %d, window '%s' (FILL's values)", after, r,
               rp->n, dump_names[d]);
      const int m = dump_elems[d];
      if (d == 7) {
        int64_t want[SN];
        for (int i = 0; i < m; i++)
          want[i] = (int64_t)fill_value(r, d, i);
        expect_bytes(what, (const int64_t *)pld_tensor_data(rp->out[d]) + r * m,
                     want, m, 8);
      } else {
        int32_t want[(SR + 1) * SC];
        for (int i = 0; i < m; i++)
          want[i] = (int32_t)fill_value(r, d, i);
        comm_expect_i32(what,
                        (const int32_t *)pld_tensor_data(rp->out[d]) + r * m,
                        want, m);
      }
    }
}

static void refuse_close(struct refuse_prog *rp) {
  pld_program_destroy(rp->p);
  assert_no_children();
  for (int i = 0; i < 4; i++)
    pld_tensor_destroy(rp->in[i]);
  for (int i = 0; i < 10; i++)
    pld_tensor_destroy(rp->out[i]);
}

/* Runs each refusal on the open program: its status and message, then a
 * run that shows every window as FILL left it. */
static void expect_refusals(struct refuse_prog *rp, const char *platform,
                            const struct refusal *cases, size_t ncases) {
  const int n = rp->n;
  for (size_t i = 0; i < ncases; i++) {
    const struct refusal *c = &cases[i];
    const int bad = c->bad % n;
    char who[160], says[3][256];
    snprintf(who, sizeof who,
             "%s: kernel k_refuse (rank %d, device %d, AIV core 0, block 0 "
             "of 1): ",
             c->fn, bad, comm_ids[bad]);
    const char *subs[] = {who, NULL, NULL, NULL, NULL};
    for (int j = 0; j < 3; j++)
      subs[j + 1] =
          subst(says[j], sizeof says[j], c->says[j], (bad + 1) % n, n);
    pld_test_assert_fails(refuse_run(rp, bad, c->how), c->status, __FILE__,
                          __LINE__, subs);
    char after[128];
    snprintf(after, sizeof after, "refusal %zu (%s, %d ranks on %s)", i, c->fn,
             n, platform);
    refuse_expect_filled(rp, after);
  }
}

/* Opens the program over n ranks on platform, fills the windows, runs the
 * cases and closes it. */
static void refusals_over(int n, const char *platform,
                          const struct refusal *cases, size_t ncases) {
  struct refuse_prog rp;
  refuse_open(&rp, n, platform);
  refuse_expect_filled(&rp, "FILL");
  expect_refusals(&rp, platform, cases, ncases);
  refuse_close(&rp);
}

#define NCASES(cases) (sizeof(cases) / sizeof((cases)[0]))

/* Whole-tensor puts and gets (and their notify and tile-staged forms)
 * between tensors of unequal shapes, even of equal element counts or
 * matrices, are refused before anything moves: the peer's windows and
 * signal cell, or my own destination window, keep every value. */
static void run_shapes_refused(int n, const char *platform) {
  static const char put_says[] = "a whole-tensor put needs one shape on both "
                                 "sides (a pld_xfer region moves part of one)";
  static const char get_says[] = "a whole-tensor get needs one shape on both "
                                 "sides";
  static const struct refusal cases[] = {
      {1,
       REF_PUT_T,
       PLD_ERR_ARG,
       "pld_put",
       {"source 'x' is INT32[3, 8] but window 'wt' (buffer #1) of peer {peer} "
        "is INT32[8, 3]: ",
        put_says}},
      {0,
       REF_PUT_FLAT,
       PLD_ERR_ARG,
       "pld_put",
       {"source 'x' is INT32[3, 8] but window 'wflat' (buffer #2) of peer "
        "{peer} is INT32[24]: ",
        put_says}},
      {2,
       REF_PUT_COL,
       PLD_ERR_ARG,
       "pld_put",
       {"source 'v' is INT32[24] but window 'wcol' (buffer #3) of peer {peer} "
        "is INT32[24, 1]: ",
        put_says}},
      {3,
       REF_PUT_BIG,
       PLD_ERR_ARG,
       "pld_put",
       {"source 'x' is INT32[3, 8] but window 'wbig' (buffer #4) of peer "
        "{peer} is INT32[4, 8]: ",
        put_says}},
      {1,
       REF_PUT_CUBE,
       PLD_ERR_ARG,
       "pld_put",
       {"source 'cube' is INT32[2, 3, 4] but window 'wsix' (buffer #5) of "
        "peer {peer} is INT32[6, 4]: ",
        put_says}},
      {0,
       REF_GET_T,
       PLD_ERR_ARG,
       "pld_get",
       {"window 'wm' (buffer #0) of peer {peer} is INT32[3, 8] but "
        "destination 'wt' is INT32[8, 3]: ",
        get_says}},
      {1,
       REF_GET_BIG,
       PLD_ERR_ARG,
       "pld_get",
       {"window 'wm' (buffer #0) of peer {peer} is INT32[3, 8] but "
        "destination 'wbig' is INT32[4, 8]: ",
        get_says}},
      {2,
       REF_GET_FLAT,
       PLD_ERR_ARG,
       "pld_get",
       {"window 'wflat' (buffer #2) of peer {peer} is INT32[24] but "
        "destination 'wm' is INT32[3, 8]: ",
        get_says}},
      {1,
       REF_PUT_NOTIFY_T,
       PLD_ERR_ARG,
       "pld_put_notify",
       {"source 'x' is INT32[3, 8] but window 'wt' (buffer #1) of peer {peer} "
        "is INT32[8, 3]: ",
        put_says}},
      {0,
       REF_PUT_TILES_T,
       PLD_ERR_ARG,
       "pld_put_tiles",
       {"source 'x' is INT32[3, 8] but window 'wt' (buffer #1) of peer {peer} "
        "is INT32[8, 3]: ",
        put_says}},
      {1,
       REF_GET_TILES_BIG,
       PLD_ERR_ARG,
       "pld_get_tiles",
       {"window 'wm' (buffer #0) of peer {peer} is INT32[3, 8] but "
        "destination 'wbig' is INT32[4, 8]: ",
        get_says}},
  };
  refusals_over(n, platform, cases, NCASES(cases));
}

static void test_whole_tensor_shapes_refused(void **state) {
  (void)state;
  over_worlds(run_shapes_refused);
}

/* Atomic add stays on the dtypes the hardware adds: on INT64, FP64, BOOL
 * and UINT8 windows a remote store, a put, a put with notify and a put
 * through tiles that add are refused, and nothing is added (nor is the
 * notify delivered). */
static void run_atomic_refused(int n, const char *platform) {
  static const char only[] =
      ": supported for FP32, FP16, BF16, INT32, INT16 and INT8";
  static const struct refusal cases[] = {
      {0,
       REF_STORE_ADD_INT64,
       PLD_ERR_UNSUPPORTED,
       "pld_remote_store",
       {"atomic add on INT64", only}},
      {1,
       REF_STORE_ADD_FP64,
       PLD_ERR_UNSUPPORTED,
       "pld_remote_store",
       {"atomic add on FP64", only}},
      {2,
       REF_STORE_ADD_BOOL,
       PLD_ERR_UNSUPPORTED,
       "pld_remote_store",
       {"atomic add on BOOL", only}},
      {3,
       REF_STORE_ADD_UINT8,
       PLD_ERR_UNSUPPORTED,
       "pld_remote_store",
       {"atomic add on UINT8", only}},
      {1,
       REF_PUT_ADD_INT64,
       PLD_ERR_UNSUPPORTED,
       "pld_put",
       {"atomic add on INT64", only}},
      {0,
       REF_PUT_ADD_FP64,
       PLD_ERR_UNSUPPORTED,
       "pld_put",
       {"atomic add on FP64", only}},
      {1,
       REF_PUT_ADD_BOOL,
       PLD_ERR_UNSUPPORTED,
       "pld_put",
       {"atomic add on BOOL", only}},
      {2,
       REF_PUT_ADD_UINT8,
       PLD_ERR_UNSUPPORTED,
       "pld_put",
       {"atomic add on UINT8", only}},
      {0,
       REF_PUT_NOTIFY_ADD_INT64,
       PLD_ERR_UNSUPPORTED,
       "pld_put_notify",
       {"atomic add on INT64", only}},
      {1,
       REF_PUT_TILES_ADD_INT64,
       PLD_ERR_UNSUPPORTED,
       "pld_put_tiles",
       {"atomic add on INT64", only}},
  };
  refusals_over(n, platform, cases, NCASES(cases));
}

static void test_atomic_add_refused_where_unsupported(void **state) {
  (void)state;
  over_worlds(run_atomic_refused);
}

/* Tiles of INT64, FP64 and BOOL read from peers move data only: any
 * computation on them is refused. */
static void test_move_only_tiles_refuse_to_compute(void **state) {
  (void)state;
  static const char computes[] = "tiles compute on FP32, FP16, BF16, INT32, "
                                 "INT16, INT8 and UINT8; ";
  static const struct refusal cases[] = {
      {1,
       REF_ADD_INT64,
       PLD_ERR_UNSUPPORTED,
       "pld_add",
       {"dst is INT64[3, 8]: ", computes, "; INT64 tiles only move data"}},
      {0,
       REF_CAST_FP64,
       PLD_ERR_UNSUPPORTED,
       "pld_cast",
       {"a is FP64[3, 8]: ", computes, "; FP64 tiles only move data"}},
      {2,
       REF_MULS_BOOL,
       PLD_ERR_UNSUPPORTED,
       "pld_muls",
       {"dst is BOOL[3, 8]: ", computes, "; BOOL tiles only move data"}},
      {1,
       REF_ROW_SUM_INT64,
       PLD_ERR_UNSUPPORTED,
       "pld_row_sum",
       {computes, "; INT64 tiles only move data"}},
  };
  if (comm_fits(2))
    refusals_over(2, "a2a3sim", cases, NCASES(cases));
  if (comm_fits(3))
    refusals_over(3, "a5sim", cases, NCASES(cases));
  comm_ran_or_skip();
}

/* pld_remote_load_into: a tile of another dtype, a region outside the
 * peer's view (also where the buffer behind the view goes on), a peer
 * outside the domain, a NULL or freed tile are refused; regions at the
 * limits are read. */
static void run_load_into_refused(int n, const char *platform) {
  static const struct refusal cases[] = {
      {1,
       REF_INTO_FP32_TILE,
       PLD_ERR_ARG,
       "pld_remote_load_into",
       {"tile is FP32, window 'wm' (buffer #0) is INT32"}},
      {0,
       REF_INTO_INT32_TILE,
       PLD_ERR_ARG,
       "pld_remote_load_into",
       {"tile is INT32, window 'w64' (buffer #7) is INT64"}},
      {2,
       REF_INTO_ROWS,
       PLD_ERR_BOUNDS,
       "pld_remote_load_into",
       {"window 'wm' (buffer #0) of peer {peer}: rows [1, 4) cols [0, 8) "
        "outside INT32[3, 8]"}},
      {1,
       REF_INTO_COLS,
       PLD_ERR_BOUNDS,
       "pld_remote_load_into",
       {"window 'wm' (buffer #0) of peer {peer}: rows [1, 3) cols [5, 9) "
        "outside INT32[3, 8]"}},
      {3,
       REF_INTO_NEG,
       PLD_ERR_BOUNDS,
       "pld_remote_load_into",
       {"window 'wm' (buffer #0) of peer {peer}: rows [-1, 0) cols [0, 1) "
        "outside INT32[3, 8]"}},
      {0,
       REF_INTO_VIEW,
       PLD_ERR_BOUNDS,
       "pld_remote_load_into",
       {"window 'wpart' (buffer #11) of peer {peer}: rows [1, 3) cols [0, 8) "
        "outside INT32[2, 8]"}},
      {1,
       REF_INTO_PEER,
       PLD_ERR_BOUNDS,
       "pld_remote_load_into",
       {"window 'wm' (buffer #0): peer {n} outside its domain of {n} ranks"}},
      {2,
       REF_INTO_NULL,
       PLD_ERR_ARG,
       "pld_remote_load_into",
       {"dst: expected a tile, got NULL"}},
      {0,
       REF_INTO_FREED,
       PLD_ERR_ARG,
       "pld_remote_load_into",
       {"dst: the tile was freed"}},
  };
  struct refuse_prog rp;
  refuse_open(&rp, n, platform);
  expect_refusals(&rp, platform, cases, NCASES(cases));
  /* At the limits: wm [1, 3) x [4, 8) into li at (0, 0), wpart row 1 into
   * li row 2, read by the last rank from rank 0. */
  assert_ok(refuse_run(&rp, n - 1, REF_INTO_LIMIT));
  int32_t want[3 * SC];
  memset(want, 0, sizeof want);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++)
      want[i * SC + j] = (int32_t)fill_value(0, 0, (1 + i) * SC + 4 + j);
  for (int j = 0; j < SC; j++)
    want[2 * SC + j] = (int32_t)fill_value(0, 8, SC + j);
  char what[96];
  snprintf(what, sizeof what, "%d ranks on %s: regions at the limits", n,
           platform);
  comm_expect_i32(
      what, (const int32_t *)pld_tensor_data(rp.out[9]) + (n - 1) * 3 * SC,
      want, 3 * SC);
  refuse_close(&rp);
}

static void test_remote_load_into_refused(void **state) {
  (void)state;
  over_worlds(run_load_into_refused);
}

/* ---- chunk shapes ------------------------------------------------------- */

PLD_DYNAMIC(XR);
PLD_DYNAMIC(XC);

/* plan = a region {dst_row, dst_col, src_row, src_col, rows, cols}, then
 * the put's {chunk_rows, chunk_cols, pipelined} and the get's.  Each rank
 * puts bg into its own window (default chunks, whole tensor); after a
 * barrier x's region into the next rank's window with the put's chunks;
 * after another it gets its whole window into box, and the region of the
 * next rank's window into got with the get's chunks (the rest of got
 * keeps the host's values).  INT16 elements. */
#define CHUNK_PARAMS                                                           \
  PLD_IN(x, INT16, XR, XC), PLD_IN(bg, INT16, XR, XC),                         \
      PLD_WINDOW(data, INT16, XR, XC), PLD_WINDOW(sig, INT32, NR),             \
      PLD_IN(plan, INT32, 12), PLD_OUT(box, INT16, XR, XC),                    \
      PLD_INOUT(got, INT16, XR, XC)

PLD_KERNEL(k_chunk, k, CHUNK_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t v[12];
  for (int64_t i = 0; i < 12; i++)
    v[i] = (int32_t)pld_read(k, plan, PLD_AT(i));
  pld_xfer o;
  memset(&o, 0, sizeof o);
  pld_put(k, data, me, bg, NULL);
  pld_barrier(k, sig);
  o.dst_row = v[0], o.dst_col = v[1], o.src_row = v[2], o.src_col = v[3];
  o.rows = v[4], o.cols = v[5];
  o.chunk_rows = v[6], o.chunk_cols = v[7], o.pipelined = v[8];
  pld_put(k, data, (me + 1) % n, x, &o);
  pld_barrier(k, sig);
  pld_get(k, box, me, data, NULL);
  o.chunk_rows = v[9], o.chunk_cols = v[10], o.pipelined = v[11];
  pld_get(k, got, (me + 1) % n, data, &o);
}

PLD_DEVICE(d_chunk, a, CHUNK_PARAMS) {
  pld_launch(a, k_chunk, 1, x, bg, data, sig, plan, box, got);
}

PLD_HOST(h_chunk, h, PLD_IN(x, INT16, NR, XR, XC),
         PLD_IN(bg, INT16, NR, XR, XC), PLD_IN(plan, INT32, 12),
         PLD_OUT(box, INT16, NR, XR, XC), PLD_INOUT(got, INT16, NR, XR, XC)) {
  int n = pld_world_size(h);
  int64_t rows = pld_tensor_dim(x, 1), cols = pld_tensor_dim(x, 2);
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_INT16, PLD_SHAPE(rows, cols));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_chunk, r, pld_slice(h, x, r), pld_slice(h, bg, r),
                 pld_window_view(h, data, PLD_INT16, PLD_SHAPE(rows, cols)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), plan,
                 pld_slice(h, box, r), pld_slice(h, got, r));
}

/* h_chunk compiled over n ranks for rows x cols tensors. */
struct chunk_prog {
  int n;
  int64_t rows, cols;
  pld_program *p;
  pld_tensor x, bg, plan, box, got, got0;
};

static void chunk_open(struct chunk_prog *cp, int n, const char *platform,
                       int64_t rows, int64_t cols) {
  pld_config cfg = rma_config(n, platform);
  const int64_t shape[] = {n, rows, cols};
  cp->n = n, cp->rows = rows, cp->cols = cols;
  cp->x = random_tensor(PLD_INT16, 3, shape, 0x6000u + (uint64_t)rows);
  cp->bg = random_tensor(PLD_INT16, 3, shape, 0x6100u + (uint64_t)rows);
  cp->got0 = random_tensor(PLD_INT16, 3, shape, 0x6200u + (uint64_t)rows);
  cp->got = comm_tensor(PLD_INT16, 3, shape);
  cp->box = comm_tensor(PLD_INT16, 3, shape);
  cp->plan = comm_int_tensor(0, 1, (int64_t[]){12});
  assert_ok(pld_compile(h_chunk, &cfg,
                        PLD_ARGS(cp->x, cp->bg, cp->plan, cp->box, cp->got),
                        &cp->p));
}

static void chunk_close(struct chunk_prog *cp) {
  pld_program_destroy(cp->p);
  pld_tensor_destroy(cp->x);
  pld_tensor_destroy(cp->bg);
  pld_tensor_destroy(cp->plan);
  pld_tensor_destroy(cp->box);
  pld_tensor_destroy(cp->got);
  pld_tensor_destroy(cp->got0);
}

/* One run with the region o and the put's and get's chunks (each {rows,
 * cols, pipelined}); returns its status. */
static int chunk_run(struct chunk_prog *cp, const pld_xfer *o, const int put[3],
                     const int get[3]) {
  int32_t *pl = pld_tensor_data(cp->plan);
  const int64_t region[6] = {o->dst_row, o->dst_col, o->src_row,
                             o->src_col, o->rows,    o->cols};
  for (int i = 0; i < 6; i++)
    pl[i] = (int32_t)region[i];
  for (int i = 0; i < 3; i++) {
    pl[6 + i] = put[i];
    pl[9 + i] = get[i];
  }
  memset(pld_tensor_data(cp->box), 0, tensor_bytes(cp->box));
  memcpy(pld_tensor_data(cp->got), pld_tensor_data(cp->got0),
         tensor_bytes(cp->got));
  return pld_program_run(cp->p,
                         PLD_ARGS(cp->x, cp->bg, cp->plan, cp->box, cp->got));
}

/* Checks box and got of a successful run against the model: rank r's
 * window is bg[r] with the previous rank's region of x; got[r] is got0[r]
 * with the region of window r + 1. */
static void chunk_expect(struct chunk_prog *cp, const pld_xfer *o,
                         const char *what) {
  const int n = cp->n;
  const int64_t per = cp->rows * cp->cols;
  const size_t pb = (size_t)per * 2;
  unsigned char *win = bytes_of(cp->bg), *want = bytes_of(cp->got0);
  const unsigned char *xs = pld_tensor_data(cp->x);
  for (int r = 0; r < n; r++)
    paste_xfer(win + (size_t)r * pb, cp->cols, xs + (size_t)mod(r - 1, n) * pb,
               cp->rows, cp->cols, o, 2);
  for (int r = 0; r < n; r++)
    paste_xfer(want + (size_t)r * pb, cp->cols,
               win + (size_t)mod(r + 1, n) * pb, cp->rows, cp->cols, o, 2);
  char w[256];
  snprintf(w, sizeof w, "%s: box (my window)", what);
  expect_bytes(w, pld_tensor_data(cp->box), win, n * per, 2);
  snprintf(w, sizeof w, "%s: got (the next rank's region)", what);
  expect_bytes(w, pld_tensor_data(cp->got), want, n * per, 2);
  free(win);
  free(want);
}

/* Chunks of odd shapes over a 10 x 13 region at offsets on both sides of
 * 16 x 20 tensors: 3 x 5 (partial last chunks both ways), 1 x 1, larger
 * than the region, the region's shape, rows only, columns only, the
 * default, wider than the region, one more than the region both ways;
 * and 3 x 7 over whole tensors.  Put and get, unpipelined and pipelined,
 * each with its own chunk. */
static void run_odd_chunks(int n, const char *platform) {
  static const pld_xfer region = {4, 1, 2, 3, 10, 13, PLD_ATOMIC_NONE, 0, 0, 0};
  static const pld_xfer whole = {0, 0, 0, 0, 0, 0, PLD_ATOMIC_NONE, 0, 0, 0};
  static const int chunks[][2] = {{3, 5},   {1, 1}, {1000, 1000}, {10, 13},
                                  {4, 0},   {0, 6}, {0, 0},       {3, 20},
                                  {11, 14}, {2, 13}};
  const int nchunks = (int)(sizeof chunks / sizeof chunks[0]);
  struct chunk_prog cp;
  chunk_open(&cp, n, platform, 16, 20);
  for (int c = 0; c < nchunks; c++)
    for (int pipelined = 0; pipelined < 2; pipelined++) {
      /* The get takes the next chunk shape: put and get differ. */
      const int *pc = chunks[c], *gc = chunks[(c + 1) % nchunks];
      const int put[3] = {pc[0], pc[1], pipelined};
      const int get[3] = {gc[0], gc[1], !pipelined};
      assert_ok(chunk_run(&cp, &region, put, get));
      char what[160];
      snprintf(what, sizeof what,
               "%d ranks on %s, put chunks [%d, %d]%s, get chunks [%d, %d]%s",
               n, platform, pc[0], pc[1], pipelined ? " pipelined" : "", gc[0],
               gc[1], pipelined ? "" : " pipelined");
      chunk_expect(&cp, &region, what);
    }
  const int put[3] = {3, 7, 1}, get[3] = {3, 7, 0};
  assert_ok(chunk_run(&cp, &whole, put, get));
  chunk_expect(&cp, &whole, "whole tensors in 3 x 7 chunks");
  /* A negative chunk dimension is refused, on either side. */
  char who[64];
  const int neg_rows[3] = {-1, 0, 0}, neg_cols[3] = {0, -5, 1},
            fine[3] = {0, 0, 0};
  assert_fails_with(chunk_run(&cp, &region, neg_rows, fine), PLD_ERR_ARG,
                    any_rank(who, sizeof who, "pld_put", "k_chunk"),
                    "chunk shape: expected rows and cols >= 0 (0: the "
                    "default), got [-1, 0]");
  assert_fails_with(chunk_run(&cp, &region, fine, neg_cols), PLD_ERR_ARG,
                    any_rank(who, sizeof who, "pld_get", "k_chunk"),
                    "chunk shape: expected rows and cols >= 0 (0: the "
                    "default), got [0, -5]");
  /* The devices run on. */
  assert_ok(chunk_run(&cp, &region, fine, fine));
  chunk_expect(&cp, &region, "after the refusals");
  chunk_close(&cp);
}

static void test_chunk_shapes(void **state) {
  (void)state;
  over_worlds(run_odd_chunks);
}

/* INT16 rows of 1010 elements: 2020 bytes, padded to 2048 in tile
 * memory.  A chunk of `fit` = capacity / 2048 rows is exactly the
 * capacity; one row more does not fit (without the padding, 97 rows of
 * 2020 bytes would fit a2a3sim's 192 KiB).  Pipelined, two tiles of
 * fit / 2 rows fill it exactly, and one row more fails at the second.
 * Chunks of half the columns fit twice the rows. */
enum { PAD_COLS = 1010, PADDED_ROW = 2048 };

static void run_chunk_tile_memory(int n, const char *platform) {
  const int ub = ub_bytes(platform), fit = ub / PADDED_ROW;
  assert_int_equal(ub % PADDED_ROW, 0);
  struct chunk_prog cp;
  chunk_open(&cp, n, platform, 2 * fit + 8, PAD_COLS);
  static const pld_xfer whole = {0, 0, 0, 0, 0, 0, PLD_ATOMIC_NONE, 0, 0, 0};
  const int plain[3] = {fit, 0, 0}, plain_cols[3] = {fit, PAD_COLS, 0},
            piped[3] = {fit / 2, 0, 1}, piped_cols[3] = {fit / 2, PAD_COLS, 1};
  const int over[3] = {fit + 1, 0, 0}, over_piped[3] = {fit / 2 + 1, 0, 1};
  char what[96];
  snprintf(what, sizeof what, "%d ranks on %s, chunks at the capacity", n,
           platform);
  assert_ok(chunk_run(&cp, &whole, plain, plain_cols));
  chunk_expect(&cp, &whole, what);
  assert_ok(chunk_run(&cp, &whole, piped_cols, piped));
  chunk_expect(&cp, &whole, what);
  char who[64], msg[192];
  /* One row more: the put's tile, or the get's. */
  snprintf(msg, sizeof msg,
           "tile memory over capacity: INT16[%d, %d] tile needs %d bytes; 0 "
           "of %d bytes of the AIV core Unified Buffer in use",
           fit + 1, PAD_COLS, (fit + 1) * PADDED_ROW, ub);
  assert_fails_with(chunk_run(&cp, &whole, over, plain), PLD_ERR_TILE_MEMORY,
                    any_rank(who, sizeof who, "pld_put", "k_chunk"), msg);
  assert_fails_with(chunk_run(&cp, &whole, plain, over), PLD_ERR_TILE_MEMORY,
                    any_rank(who, sizeof who, "pld_get", "k_chunk"), msg);
  /* Pipelined: the first of the two tiles fits, the second does not. */
  snprintf(msg, sizeof msg,
           "tile memory over capacity: INT16[%d, %d] tile needs %d bytes; %d "
           "of %d bytes of the AIV core Unified Buffer in use",
           fit / 2 + 1, PAD_COLS, (fit / 2 + 1) * PADDED_ROW,
           (fit / 2 + 1) * PADDED_ROW, ub);
  assert_fails_with(chunk_run(&cp, &whole, over_piped, piped),
                    PLD_ERR_TILE_MEMORY,
                    any_rank(who, sizeof who, "pld_put", "k_chunk"), msg);
  assert_fails_with(chunk_run(&cp, &whole, piped, over_piped),
                    PLD_ERR_TILE_MEMORY,
                    any_rank(who, sizeof who, "pld_get", "k_chunk"), msg);
  /* Half as wide (1010 bytes, padded to 1024), twice as tall: chunk_cols
   * counts too. */
  const int narrow[3] = {2 * fit, PAD_COLS / 2, 0},
            narrow_over[3] = {2 * fit + 1, PAD_COLS / 2, 0};
  assert_ok(chunk_run(&cp, &whole, narrow, narrow));
  chunk_expect(&cp, &whole, what);
  snprintf(msg, sizeof msg,
           "tile memory over capacity: INT16[%d, %d] tile needs %d bytes; 0 "
           "of %d bytes of the AIV core Unified Buffer in use",
           2 * fit + 1, PAD_COLS / 2, (2 * fit + 1) * PADDED_ROW / 2, ub);
  assert_fails_with(chunk_run(&cp, &whole, narrow_over, narrow),
                    PLD_ERR_TILE_MEMORY,
                    any_rank(who, sizeof who, "pld_put", "k_chunk"), msg);
  /* The devices run on. */
  assert_ok(chunk_run(&cp, &whole, plain, piped));
  chunk_expect(&cp, &whole, what);
  chunk_close(&cp);
}

/* A chunk's staging tile must fit tile memory (192 KiB on a2a3sim, 256
 * KiB on a5sim; rows padded to 32 bytes; two tiles when pipelined): at
 * the capacity it works, one row more fails with PLD_ERR_TILE_MEMORY. */
static void test_chunk_at_tile_memory_limit(void **state) {
  (void)state;
  over_worlds(run_chunk_tile_memory);
}

/* ---- put and get through the kernel's tiles ----------------------------- */

enum { TTR = 16, TTC = 20, TM = 20, TPLAN = 15 };

/* plan[TILES_*]: the region, whether to pass no pld_xfer at all, ping's
 * shape, whether there is a pong, the chunk shape the pld_xfer asks for,
 * what to get wrong and in which call, how much tile memory to take, and
 * the core's tile memory. */
enum {
  TP_REGION = 0, /* 6 values, as a pld_xfer's first six */
  TP_NO_XFER = 6,
  TP_ROWS = 7,
  TP_COLS = 8,
  TP_PONG = 9,
  TP_CHUNK = 10,
  TP_BAD = 11,
  TP_BAD_IN_GET = 12,
  TP_FILL = 13,
  TP_UB = 14
};
/* TP_CHUNK: the pld_xfer's chunk shape. */
enum {
  CH_NONE,  /* [0, 0] */
  CH_TILE,  /* [rows, cols] */
  CH_ROWS,  /* [rows, 0] */
  CH_COLS,  /* [0, cols] */
  CH_WIDER, /* [rows, cols + 1] */
  CH_TALLER /* [rows + 1, 0] */
};
/* TP_BAD: the tiles given instead of ping and pong. */
enum {
  BAD_NONE,
  BAD_PING_DTYPE, /* an FP32 ping */
  BAD_PONG_SHAPE, /* a pong of one column more */
  BAD_PONG_DTYPE, /* an INT64 pong */
  BAD_SAME,       /* pong = ping */
  BAD_NULL_PING,
  BAD_FREED_PONG
};
/* TP_FILL: the rest of tile memory taken (after ping and pong), and a
 * plain put that needs a staging tile of its own. */
enum { FILL_NONE, FILL_REST, FILL_REST_PLAIN_PUT };

static void bad_tiles(pld_core k, int bad, int32_t rows, int32_t cols,
                      pld_tile **ping, pld_tile **pong) {
  pld_tile *t;
  switch (bad) {
  case BAD_PING_DTYPE:
    *ping = pld_tile_new(k, PLD_FP32, rows, cols);
    break;
  case BAD_PONG_SHAPE:
    *pong = pld_tile_new(k, PLD_FP64, rows, cols + 1);
    break;
  case BAD_PONG_DTYPE:
    *pong = pld_tile_new(k, PLD_INT64, rows, cols);
    break;
  case BAD_SAME:
    *pong = *ping;
    break;
  case BAD_NULL_PING:
    *ping = NULL;
    break;
  case BAD_FREED_PONG:
    t = pld_tile_new(k, PLD_FP64, rows, cols);
    pld_tile_free(k, t);
    *pong = t;
    break;
  default:
    break;
  }
}

/* Each rank puts bg into its own window; after a barrier it takes ping
 * (filled with -1) and pong (-2), puts x's region into the next rank's
 * window through them, and copies them to tiles' slots 0 and 1; after
 * another it gets the next rank's region into got through them and
 * copies them to slots 2 and 3; then it gets its whole window into box.
 * FP64 elements (tiles that only move data). */
#define TILES_PARAMS                                                           \
  PLD_IN(x, FP64, TTR, TTC), PLD_IN(bg, FP64, TTR, TTC),                       \
      PLD_WINDOW(data, FP64, TTR, TTC), PLD_WINDOW(sig, INT32, NR),            \
      PLD_IN(plan, INT32, TPLAN), PLD_OUT(box, FP64, TTR, TTC),                \
      PLD_INOUT(got, FP64, TTR, TTC), PLD_INOUT(tiles, FP64, 4 * TM, TM)

PLD_KERNEL(k_tiles, k, TILES_PARAMS) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t v[TPLAN];
  for (int64_t i = 0; i < TPLAN; i++)
    v[i] = (int32_t)pld_read(k, plan, PLD_AT(i));
  pld_put(k, data, me, bg, NULL);
  pld_barrier(k, sig);
  const int32_t rows = v[TP_ROWS], cols = v[TP_COLS];
  pld_xfer o;
  memset(&o, 0, sizeof o);
  o.dst_row = v[0], o.dst_col = v[1], o.src_row = v[2], o.src_col = v[3];
  o.rows = v[4], o.cols = v[5];
  o.pipelined = 1; /* ignored */
  const int32_t chunk[][2] = {{0, 0},    {rows, cols},     {rows, 0},
                              {0, cols}, {rows, cols + 1}, {rows + 1, 0}};
  o.chunk_rows = chunk[v[TP_CHUNK]][0];
  o.chunk_cols = chunk[v[TP_CHUNK]][1];
  const pld_xfer *opt = v[TP_NO_XFER] ? NULL : &o;
  pld_tile *ping = pld_tile_new(k, PLD_FP64, rows, cols);
  pld_tile *pong = v[TP_PONG] ? pld_tile_new(k, PLD_FP64, rows, cols) : NULL;
  pld_fill(k, ping, -1);
  if (pong)
    pld_fill(k, pong, -2);
  pld_tile *rest = NULL;
  if (v[TP_FILL] != FILL_NONE) {
    size_t used = pld_tile_bytes(ping) + pld_tile_bytes(pong);
    rest = pld_tile_new(k, PLD_UINT8, (int32_t)(((size_t)v[TP_UB] - used) / 32),
                        32);
  }
  if (v[TP_FILL] == FILL_REST_PLAIN_PUT)
    pld_put(k, data, (me + 1) % n, x, opt);
  for (int get = 0; get < 2; get++) {
    pld_tile *a = ping, *b = pong;
    if (v[TP_BAD_IN_GET] == get)
      bad_tiles(k, v[TP_BAD], rows, cols, &a, &b);
    if (get)
      pld_get_tiles(k, got, (me + 1) % n, data, opt, a, b);
    else
      pld_put_tiles(k, data, (me + 1) % n, x, opt, a, b);
    pld_store(k, ping, tiles, 2 * get * TM, 0);
    if (pong)
      pld_store(k, pong, tiles, (2 * get + 1) * TM, 0);
    if (!get)
      pld_barrier(k, sig);
  }
  pld_tile_free(k, rest);
  pld_get(k, box, me, data, NULL);
}

PLD_DEVICE(d_tiles, a, TILES_PARAMS) {
  pld_launch(a, k_tiles, 1, x, bg, data, sig, plan, box, got, tiles);
}

PLD_HOST(h_tiles, h, PLD_IN(x, FP64, NR, TTR, TTC),
         PLD_IN(bg, FP64, NR, TTR, TTC), PLD_IN(plan, INT32, TPLAN),
         PLD_OUT(box, FP64, NR, TTR, TTC), PLD_INOUT(got, FP64, NR, TTR, TTC),
         PLD_INOUT(tiles, FP64, NR, 4 * TM, TM)) {
  int n = pld_world_size(h);
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP64, PLD_SHAPE(TTR, TTC));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_tiles, r, pld_slice(h, x, r), pld_slice(h, bg, r),
                 pld_window_view(h, data, PLD_FP64, PLD_SHAPE(TTR, TTC)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), plan,
                 pld_slice(h, box, r), pld_slice(h, got, r),
                 pld_slice(h, tiles, r));
}

/* One transfer through tiles: the region (no_xfer: whole tensors), ping's
 * shape, whether there is a pong, the chunk shape asked, what to take of
 * tile memory. */
struct tiles_case {
  pld_xfer region;
  int no_xfer, rows, cols, pong, chunk, fill;
};

struct tiles_prog {
  int n;
  const char *platform;
  pld_program *p;
  pld_tensor x, bg, plan, box, got, got0, tiles, tiles0;
};

static void tiles_open(struct tiles_prog *tp, int n, const char *platform) {
  pld_config cfg = rma_config(n, platform);
  const int64_t shape[] = {n, TTR, TTC};
  tp->n = n;
  tp->platform = platform;
  tp->x = random_tensor(PLD_FP64, 3, shape, 0x7000u + (uint64_t)n);
  tp->bg = random_tensor(PLD_FP64, 3, shape, 0x7100u + (uint64_t)n);
  tp->got0 = random_tensor(PLD_FP64, 3, shape, 0x7200u + (uint64_t)n);
  tp->got = comm_tensor(PLD_FP64, 3, shape);
  tp->box = comm_tensor(PLD_FP64, 3, shape);
  tp->tiles0 = random_tensor(PLD_FP64, 3, (int64_t[]){n, 4 * TM, TM},
                             0x7300u + (uint64_t)n);
  tp->tiles = comm_tensor(PLD_FP64, 3, (int64_t[]){n, 4 * TM, TM});
  tp->plan = comm_int_tensor(0, 1, (int64_t[]){TPLAN});
  assert_ok(pld_compile(
      h_tiles, &cfg,
      PLD_ARGS(tp->x, tp->bg, tp->plan, tp->box, tp->got, tp->tiles), &tp->p));
}

static void tiles_close(struct tiles_prog *tp) {
  pld_program_destroy(tp->p);
  pld_tensor_destroy(tp->x);
  pld_tensor_destroy(tp->bg);
  pld_tensor_destroy(tp->plan);
  pld_tensor_destroy(tp->box);
  pld_tensor_destroy(tp->got);
  pld_tensor_destroy(tp->got0);
  pld_tensor_destroy(tp->tiles);
  pld_tensor_destroy(tp->tiles0);
}

static int tiles_run(struct tiles_prog *tp, const struct tiles_case *c, int bad,
                     int bad_in_get) {
  int32_t *pl = pld_tensor_data(tp->plan);
  const int64_t region[6] = {c->region.dst_row, c->region.dst_col,
                             c->region.src_row, c->region.src_col,
                             c->region.rows,    c->region.cols};
  for (int i = 0; i < 6; i++)
    pl[TP_REGION + i] = (int32_t)region[i];
  pl[TP_NO_XFER] = c->no_xfer;
  pl[TP_ROWS] = c->rows;
  pl[TP_COLS] = c->cols;
  pl[TP_PONG] = c->pong;
  pl[TP_CHUNK] = c->chunk;
  pl[TP_BAD] = bad;
  pl[TP_BAD_IN_GET] = bad_in_get;
  pl[TP_FILL] = c->fill;
  pl[TP_UB] = ub_bytes(tp->platform);
  memset(pld_tensor_data(tp->box), 0, tensor_bytes(tp->box));
  memcpy(pld_tensor_data(tp->got), pld_tensor_data(tp->got0),
         tensor_bytes(tp->got));
  memcpy(pld_tensor_data(tp->tiles), pld_tensor_data(tp->tiles0),
         tensor_bytes(tp->tiles));
  return pld_program_run(
      tp->p, PLD_ARGS(tp->x, tp->bg, tp->plan, tp->box, tp->got, tp->tiles));
}

/* What a tile holds in the model: its elements, and the shape of the
 * last chunk it staged (rows 0: none yet, it holds its fill). */
struct tile_model {
  double e[TM * TM];
  int64_t rows, cols;
};

/* Stages the region of src (a TTR x TTC matrix) at (srow, scol), rows x
 * cols, in chunks of crows x ccols through the models (pong NULL: ping
 * alone): row block by row block, column block by column block within,
 * alternating from ping. */
static void stage_chunks(struct tile_model *ping, struct tile_model *pong,
                         int tcols, const double *src, int64_t srow,
                         int64_t scol, int64_t rows, int64_t cols,
                         int64_t crows, int64_t ccols) {
  int turn = 0;
  for (int64_t r = 0; r < rows; r += crows)
    for (int64_t q = 0; q < cols; q += ccols) {
      struct tile_model *t = turn && pong ? pong : ping;
      turn = !turn;
      t->rows = rows - r < crows ? rows - r : crows;
      t->cols = cols - q < ccols ? cols - q : ccols;
      paste((unsigned char *)t->e, tcols, 0, 0, (const unsigned char *)src, TTC,
            srow + r, scol + q, t->rows, t->cols, 8);
    }
}

/* Asserts the tile copied to slot s of rank r's tiles holds its model's
 * last chunk (or, having staged none, its fill everywhere). */
static void expect_tile(struct tiles_prog *tp, int r, int s,
                        const struct tile_model *m, int rows, int cols,
                        const char *what) {
  const double *got =
      (const double *)pld_tensor_data(tp->tiles) + (r * 4 + s) * TM * TM;
  const int64_t nr = m->rows ? m->rows : rows, nc = m->rows ? m->cols : cols;
  for (int64_t i = 0; i < nr; i++) {
    char w[256];
    snprintf(w, sizeof w, "%s: rank %d, %s %s, row %" PRId64 " of %s", what, r,
             s & 1 ? "pong" : "ping", s & 2 ? "after the get" : "after the put",
             i, m->rows ? "its last chunk" : "its fill (it staged nothing)");
    expect_bytes(w, got + i * TM, m->e + i * cols, nc, 8);
  }
}

/* Runs a transfer through tiles and checks the windows, got, and what
 * each tile holds against the model. */
static void tiles_expect_run(struct tiles_prog *tp, const struct tiles_case *c,
                             const char *what) {
  assert_ok(tiles_run(tp, c, BAD_NONE, 0));
  const int n = tp->n;
  const int per = TTR * TTC;
  const size_t pb = (size_t)per * 8;
  const pld_xfer whole = {0, 0, 0, 0, 0, 0, PLD_ATOMIC_NONE, 0, 0, 0};
  const pld_xfer *o = c->no_xfer ? &whole : &c->region;
  const int64_t rows = o->rows ? o->rows : TTR, cols = o->cols ? o->cols : TTC;
  const int64_t crows = c->rows < rows ? c->rows : rows;
  const int64_t ccols = c->cols < cols ? c->cols : cols;
  unsigned char *win = bytes_of(tp->bg), *want = bytes_of(tp->got0);
  const double *xs = pld_tensor_data(tp->x);
  for (int r = 0; r < n; r++)
    paste_xfer(win + (size_t)r * pb, TTC,
               (const unsigned char *)(xs + mod(r - 1, n) * per), TTR, TTC, o,
               8);
  for (int r = 0; r < n; r++)
    paste_xfer(want + (size_t)r * pb, TTC, win + (size_t)mod(r + 1, n) * pb,
               TTR, TTC, o, 8);
  char w[256];
  snprintf(w, sizeof w, "%s: box (my window)", what);
  expect_bytes(w, pld_tensor_data(tp->box), win, n * per, 8);
  snprintf(w, sizeof w, "%s: got (the next rank's region)", what);
  expect_bytes(w, pld_tensor_data(tp->got), want, n * per, 8);
  for (int r = 0; r < n; r++) {
    struct tile_model m[2];
    for (int t = 0; t < 2; t++) {
      m[t].rows = m[t].cols = 0;
      for (int e = 0; e < c->rows * c->cols; e++)
        m[t].e[e] = -1.0 - t;
    }
    struct tile_model *pong = c->pong ? &m[1] : NULL;
    stage_chunks(&m[0], pong, c->cols, xs + r * per, o->src_row, o->src_col,
                 rows, cols, crows, ccols);
    expect_tile(tp, r, 0, &m[0], c->rows, c->cols, what);
    if (pong)
      expect_tile(tp, r, 1, pong, c->rows, c->cols, what);
    stage_chunks(&m[0], pong, c->cols,
                 (const double *)(win + (size_t)mod(r + 1, n) * pb), o->src_row,
                 o->src_col, rows, cols, crows, ccols);
    expect_tile(tp, r, 2, &m[0], c->rows, c->cols, what);
    if (pong)
      expect_tile(tp, r, 3, pong, c->rows, c->cols, what);
    else /* no pong: its slots keep the host's values */
      for (int s = 1; s < 4; s += 2) {
        const size_t off = (size_t)((r * 4 + s) * TM * TM);
        snprintf(w, sizeof w, "%s: rank %d, slot %d (no pong)", what, r, s);
        expect_bytes(w, (const double *)pld_tensor_data(tp->tiles) + off,
                     (const double *)pld_tensor_data(tp->tiles0) + off, TM * TM,
                     8);
      }
  }
  free(win);
  free(want);
}

static const pld_xfer tiles_region = {3, 2, 1, 4, 10, 13, PLD_ATOMIC_NONE,
                                      0, 0, 0};

static void run_tiles_data(int n, const char *platform) {
  const pld_xfer R = tiles_region;
  const struct tiles_case cases[] = {
      {R, 0, 3, 5, 1, CH_NONE, FILL_NONE},   /* partial last chunks */
      {R, 0, 3, 5, 0, CH_NONE, FILL_NONE},   /* ping alone */
      {R, 0, 4, 13, 1, CH_TILE, FILL_NONE},  /* whole rows of the region */
      {R, 0, 1, 1, 1, CH_NONE, FILL_NONE},   /* element by element */
      {R, 0, 10, 13, 1, CH_ROWS, FILL_NONE}, /* one chunk: pong stays */
      {R, 0, 16, 20, 1, CH_NONE, FILL_NONE}, /* larger than the region */
      {R, 0, 2, 20, 1, CH_COLS, FILL_NONE},  /* wider than the region */
      {R, 0, 7, 3, 1, CH_NONE, FILL_NONE},   /* tall and narrow */
      {R, 0, 3, 13, 1, CH_NONE, FILL_NONE},  /* 4 row blocks: pong last */
      {R, 1, 5, 7, 1, CH_NONE, FILL_NONE},   /* whole tensors */
      {R, 1, 5, 7, 0, CH_NONE, FILL_NONE},
      {R, 1, 16, 20, 1, CH_NONE, FILL_NONE}, /* one chunk of it all */
  };
  struct tiles_prog tp;
  tiles_open(&tp, n, platform);
  for (size_t i = 0; i < NCASES(cases); i++) {
    const struct tiles_case *c = &cases[i];
    char what[160];
    snprintf(what, sizeof what, "%d ranks on %s, %s through %s[%d, %d]%s", n,
             platform, c->no_xfer ? "whole tensors" : "a region", "FP64",
             c->rows, c->cols, c->pong ? " and a pong" : " alone");
    tiles_expect_run(&tp, c, what);
  }
  tiles_close(&tp);
}

/* Data staged through the kernel's tiles in chunks of ping's shape lands
 * where it belongs, both ways; afterwards ping and pong hold the last
 * chunks they staged (chunk i went through ping for even i, through pong
 * for odd i, or always ping without a pong). */
static void test_put_get_tiles(void **state) {
  (void)state;
  over_worlds(run_tiles_data);
}

static void run_tiles_room(int n, const char *platform) {
  const pld_xfer R = tiles_region;
  const struct tiles_case cases[] = {
      {R, 0, 4, 5, 1, CH_NONE, FILL_REST},
      {R, 0, 4, 5, 0, CH_NONE, FILL_REST},
      {R, 1, 16, 20, 1, CH_NONE, FILL_REST},
  };
  struct tiles_prog tp;
  tiles_open(&tp, n, platform);
  for (size_t i = 0; i < NCASES(cases); i++) {
    char what[160];
    snprintf(what, sizeof what,
             "%d ranks on %s, tile memory full but for FP64[%d, %d] ping%s", n,
             platform, cases[i].rows, cases[i].cols,
             cases[i].pong ? " and pong" : "");
    tiles_expect_run(&tp, &cases[i], what);
  }
  /* The same memory leaves no room for a plain put's staging tile. */
  const struct tiles_case plain = {R, 0, 4, 5, 1, CH_NONE, FILL_REST_PLAIN_PUT};
  const int ub = ub_bytes(platform);
  char who[64], msg[192];
  snprintf(msg, sizeof msg,
           "tile memory over capacity: FP64[10, 13] tile needs 1280 bytes; %d "
           "of %d bytes of the AIV core Unified Buffer in use",
           ub, ub);
  assert_fails_with(tiles_run(&tp, &plain, BAD_NONE, 0), PLD_ERR_TILE_MEMORY,
                    any_rank(who, sizeof who, "pld_put", "k_tiles"), msg);
  tiles_close(&tp);
}

/* pld_put_tiles and pld_get_tiles take no tile memory of their own: with
 * every byte but ping's and pong's taken they still move everything
 * (where a plain put finds no room for its staging tile). */
static void test_put_get_tiles_take_no_tile_memory(void **state) {
  (void)state;
  over_worlds(run_tiles_room);
}

static void run_tiles_refused(int n, const char *platform) {
  const pld_xfer R = tiles_region;
  const struct tiles_case good = {R, 0, 4, 5, 1, CH_NONE, FILL_NONE};
  struct {
    int bad, in_get, chunk;
    const char *fn, *says;
  } const cases[] = {
      {BAD_PING_DTYPE, 0, CH_NONE, "pld_put_tiles",
       "ping is FP32[4, 5]: expected a tile of FP64"},
      {BAD_PING_DTYPE, 1, CH_NONE, "pld_get_tiles",
       "ping is FP32[4, 5]: expected a tile of FP64"},
      {BAD_PONG_DTYPE, 0, CH_NONE, "pld_put_tiles",
       "pong is INT64[4, 5]: expected a tile of FP64 of ping's shape FP64[4, "
       "5]"},
      {BAD_PONG_SHAPE, 1, CH_NONE, "pld_get_tiles",
       "pong is FP64[4, 6]: expected a tile of FP64 of ping's shape FP64[4, "
       "5]"},
      {BAD_PONG_SHAPE, 0, CH_NONE, "pld_put_tiles",
       "pong is FP64[4, 6]: expected a tile of FP64 of ping's shape FP64[4, "
       "5]"},
      {BAD_SAME, 0, CH_NONE, "pld_put_tiles",
       "ping and pong are one tile: give two, or pong NULL"},
      {BAD_SAME, 1, CH_NONE, "pld_get_tiles",
       "ping and pong are one tile: give two, or pong NULL"},
      {BAD_NULL_PING, 0, CH_NONE, "pld_put_tiles",
       "ping: expected a tile, got NULL"},
      {BAD_NULL_PING, 1, CH_NONE, "pld_get_tiles",
       "ping: expected a tile, got NULL"},
      {BAD_FREED_PONG, 1, CH_NONE, "pld_get_tiles", "pong: the tile was freed"},
      {BAD_NONE, 0, CH_WIDER, "pld_put_tiles",
       "chunk shape [4, 6] is not the staging tiles' [4, 5]"},
      {BAD_NONE, 0, CH_TALLER, "pld_put_tiles",
       "chunk shape [5, 0] is not the staging tiles' [4, 5]"},
  };
  struct tiles_prog tp;
  tiles_open(&tp, n, platform);
  for (size_t i = 0; i < NCASES(cases); i++) {
    struct tiles_case c = good;
    c.chunk = cases[i].chunk;
    char who[64];
    assert_fails_with(
        tiles_run(&tp, &c, cases[i].bad, cases[i].in_get), PLD_ERR_ARG,
        any_rank(who, sizeof who, cases[i].fn, "k_tiles"), cases[i].says);
  }
  /* The chunk shape the pld_xfer gives may be ping's, in full or in part. */
  for (int chunk = CH_TILE; chunk <= CH_COLS; chunk++) {
    struct tiles_case c = good;
    c.chunk = chunk;
    char what[96];
    snprintf(what, sizeof what, "%d ranks on %s, chunk shape kind %d", n,
             platform, chunk);
    tiles_expect_run(&tp, &c, what);
  }
  tiles_close(&tp);
}

/* Refused: ping or pong of another dtype, a pong of another shape, ping
 * as pong, a NULL ping, a freed pong, a pld_xfer chunk shape that is not
 * ping's; in a put or a get. */
static void test_put_get_tiles_refused(void **state) {
  (void)state;
  over_worlds(run_tiles_refused);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_move_fp32),
    cmocka_unit_test(test_move_fp16),
    cmocka_unit_test(test_move_bf16),
    cmocka_unit_test(test_move_int32),
    cmocka_unit_test(test_move_int16),
    cmocka_unit_test(test_move_int8),
    cmocka_unit_test(test_move_uint8),
    cmocka_unit_test(test_move_int64),
    cmocka_unit_test(test_move_fp64),
    cmocka_unit_test(test_move_bool),
    cmocka_unit_test(test_atomic_add_refused_where_unsupported),
    cmocka_unit_test(test_move_only_tiles_refuse_to_compute),
    cmocka_unit_test(test_remote_load_into_every_peer),
    cmocka_unit_test(test_remote_load_into_refused),
    cmocka_unit_test(test_whole_tensor_shapes_accepted),
    cmocka_unit_test(test_whole_tensor_shapes_refused),
    cmocka_unit_test(test_chunk_shapes),
    cmocka_unit_test(test_chunk_at_tile_memory_limit),
    cmocka_unit_test(test_put_get_tiles),
    cmocka_unit_test(test_put_get_tiles_take_no_tile_memory),
    cmocka_unit_test(test_put_get_tiles_refused),
};

PLD_TEST_MAIN("comm_rma_dtypes", tests)
