/* Rows by index: pld_load_rows and pld_store_rows on a device's tensors,
 * pld_remote_load_rows and pld_remote_store_rows on peers' windows.
 *
 * Each is checked against a plain C loop on random permutations and on
 * random indices with duplicates and negative entries (negative: a
 * zero-filled row on a gather, a skipped row on a scatter; duplicates on a
 * plain scatter: the later entry lands), at an interior column and at the
 * last column range that fits; atomic adds from several blocks and from
 * every rank into the same rows give the exact sum (INT32).  The refusals
 * name what they refuse: an entry equal to the tensor's rows or a column
 * range one past the edge (an entry of rows - 1 and the range at the edge
 * pass), an atomic add on INT64 or UINT8, a store to an In tensor, an
 * index tile of the wrong shape or dtype.  The race detector sees every
 * row a remote or a local scatter writes (the racing row is not its
 * first), and passes the signalled program; the trace has one span per remote
 * call, remote_load_rows or remote_store_rows. */
#include <unistd.h>

#include "comm_test.h"

enum {
  SR = 12, /* rows of the tensors and windows rows go to and from */
  SC = 20, /* their columns */
  NI = 9,  /* rows moved: the entries of an index tile */
  GC = 8,  /* columns moved */
  NB = 3,  /* blocks of the local kernel, all adding into the same rows */
  MID_COL = 5,
  EDGE_COL = SC - GC
};

/* A small deterministic generator (tests must not depend on rand()). */
static uint32_t rng_state;
static void rng_seed(uint32_t s) { rng_state = s * 2654435761u + 1; }
static int32_t rng_below(int32_t n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (int32_t)((rng_state >> 8) % (uint32_t)n);
}

/* n index entries: a random choice of n distinct rows of SR (a permutation
 * of part of them), or (dups) random rows with repeats, where about one
 * entry in five is negative.  The last entry is always row SR - 1 (the
 * last row there is, and a row that must move). */
static void random_index(int32_t *idx, int n, int dups) {
  int32_t rows[SR];
  for (int i = 0; i < SR; i++)
    rows[i] = i;
  for (int i = SR - 1; i > 0; i--) {
    int j = rng_below(i + 1);
    int32_t t = rows[i];
    rows[i] = rows[j];
    rows[j] = t;
  }
  for (int i = 0; i < n; i++)
    idx[i] = !dups               ? rows[i]
             : rng_below(5) == 0 ? -1 - rng_below(3)
                                 : rng_below(SR / 2);
  /* The last row in the last entry, where no other entry holds it (rows
   * n - 1 is then a row no other entry holds either). */
  for (int i = 0; i < n - 1; i++)
    if (idx[i] == SR - 1)
      idx[i] = rows[n - 1];
  idx[n - 1] = SR - 1;
}

/* ---- a C reference ------------------------------------------------------ */

/* g (n x GC) = rows idx of src (SR x SC) at col; zero for negative. */
static void ref_gather_f32(float *g, const float *src, const int32_t *idx,
                           int stride, int n, int64_t col) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < GC; j++)
      g[i * GC + j] =
          idx[i * stride] < 0 ? 0.0f : src[idx[i * stride] * SC + col + j];
}

/* Rows of t (n x GC) into dst (SR x SC) at col: in index order, or added
 * (add), negative entries skipped. */
static void ref_scatter_i32(int32_t *dst, const int32_t *t, const int32_t *idx,
                            int stride, int n, int64_t col, int add) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < GC && idx[i * stride] >= 0; j++) {
      int32_t *d = &dst[idx[i * stride] * SC + col + j];
      *d = add ? *d + t[i * GC + j] : t[i * GC + j];
    }
}

static void ref_scatter_f32(float *dst, const float *t, const int32_t *idx,
                            int n, int64_t col) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < GC && idx[i] >= 0; j++)
      dst[idx[i] * SC + col + j] = t[i * GC + j];
}

/* ---- local: pld_load_rows and pld_store_rows ---------------------------- */

/* What k_local does besides its gather and scatters (MODE_OK): one
 * mistake. */
enum {
  MODE_OK,
  MODE_STORE_IN,     /* pld_store_rows into the In tensor src */
  MODE_ATOMIC_INT64, /* an atomic add on INT64 */
  MODE_IDX_SHAPE,    /* an index tile of 9 entries for 8 rows */
  MODE_IDX_DTYPE,    /* an FP32 index tile */
  MODE_ATOMIC_BAD,   /* an atomic that is no pld_atomic */
  MODE_BLOCK_0       /* MODE_OK in block 0 only, so its error is the one */
};

/* Block 0 gathers rows gidx (an [NI, 1] tile) of src at col into g and
 * scatters them to rows sidx (a [1, NI] tile) of s; it scatters an INT64
 * tile of 7s to rows sidx of wide.  Every block adds vals into rows gidx
 * of acc, atomically. */
#define LOCAL_PARAMS                                                           \
  PLD_IN(src, FP32, SR, SC), PLD_IN(gidx, INT32, NI, 1),                       \
      PLD_IN(sidx, INT32, 1, NI), PLD_IN(vals, INT32, NI, GC),                 \
      PLD_OUT(g, FP32, NI, GC), PLD_INOUT(s, FP32, SR, SC),                    \
      PLD_INOUT(acc, INT32, SR, SC), PLD_INOUT(wide, INT64, SR, SC),           \
      PLD_SCALAR(col, INT64), PLD_SCALAR(mode, INT32)

PLD_KERNEL(k_local, k, LOCAL_PARAMS) {
  pld_tile *gi = pld_load(k, gidx, 0, 0, NI, 1);
  pld_tile *si = pld_load(k, sidx, 0, 0, 1, NI);
  pld_tile *t = pld_tile_new(k, PLD_FP32, NI, GC);
  switch (mode) {
  case MODE_STORE_IN:
    pld_store_rows(k, t, src, si, col, PLD_ATOMIC_NONE);
    return;
  case MODE_ATOMIC_INT64:
    pld_store_rows(k, pld_full(k, PLD_INT64, NI, GC, 1), wide, gi, col,
                   PLD_ATOMIC_ADD);
    return;
  case MODE_IDX_SHAPE:
    pld_load_rows(k, pld_tile_new(k, PLD_FP32, NI - 1, GC), src, gi, col);
    return;
  case MODE_IDX_DTYPE:
    pld_load_rows(k, t, src, pld_full(k, PLD_FP32, NI, 1, 0), col);
    return;
  case MODE_ATOMIC_BAD:
    pld_store_rows(k, pld_load(k, vals, 0, 0, NI, GC), acc, gi, col,
                   (pld_atomic)2);
    return;
  case MODE_BLOCK_0:
    if (pld_block_idx(k) != 0)
      return;
    break;
  default:
    break;
  }
  if (pld_block_idx(k) == 0) {
    pld_load_rows(k, t, src, gi, col);
    pld_store(k, t, g, 0, 0);
    pld_store_rows(k, t, s, si, col, PLD_ATOMIC_NONE);
    pld_store_rows(k, pld_full(k, PLD_INT64, NI, GC, 7), wide, si, col,
                   PLD_ATOMIC_NONE);
  }
  pld_store_rows(k, pld_load(k, vals, 0, 0, NI, GC), acc, gi, col,
                 PLD_ATOMIC_ADD);
}

PLD_DEVICE(d_local, a, LOCAL_PARAMS) {
  pld_launch(a, k_local, NB, src, gidx, sidx, vals, g, s, acc, wide, col, mode);
}

PLD_HOST(h_local, h, LOCAL_PARAMS) {
  pld_dispatch(h, d_local, 0, src, gidx, sidx, vals, g, s, acc, wide, col,
               mode);
}

/* The host tensors of h_local. */
struct local {
  pld_tensor src, gidx, sidx, vals, g, s, acc, wide;
};

static struct local local_create(void) {
  struct local l;
  l.src = pld_test_tensor(2, (int64_t[]){SR, SC}, 0.25f, 1);
  l.gidx = comm_tensor(PLD_INT32, 2, (int64_t[]){NI, 1});
  l.sidx = comm_tensor(PLD_INT32, 2, (int64_t[]){1, NI});
  l.vals = comm_tensor(PLD_INT32, 2, (int64_t[]){NI, GC});
  l.g = comm_tensor(PLD_FP32, 2, (int64_t[]){NI, GC});
  l.s = comm_tensor(PLD_FP32, 2, (int64_t[]){SR, SC});
  l.acc = comm_tensor(PLD_INT32, 2, (int64_t[]){SR, SC});
  l.wide = comm_tensor(PLD_INT64, 2, (int64_t[]){SR, SC});
  return l;
}

static void local_destroy(struct local *l) {
  pld_tensor all[] = {l->src, l->gidx, l->sidx, l->vals,
                      l->g,   l->s,    l->acc,  l->wide};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    pld_tensor_destroy(all[i]);
}

/* Fresh outputs and values: s and acc start nonzero, so skipped rows and
 * adds onto what is there show. */
static void local_reset(struct local *l) {
  float *s = pld_tensor_data(l->s);
  int32_t *acc = pld_tensor_data(l->acc), *vals = pld_tensor_data(l->vals);
  int64_t *wide = pld_tensor_data(l->wide);
  for (int i = 0; i < SR * SC; i++) {
    s[i] = -1.0f - (float)i;
    acc[i] = i % 5;
    wide[i] = -i;
  }
  for (int i = 0; i < NI * GC; i++)
    vals[i] = rng_below(101) - 50;
  memset(pld_tensor_data(l->g), 0xff, sizeof(float) * NI * GC);
}

static int local_run(pld_program *p, struct local *l, int64_t col,
                     int32_t mode) {
  return pld_program_run(p, PLD_ARGS(l->src, l->gidx, l->sidx, l->vals, l->g,
                                     l->s, l->acc, l->wide, col, mode));
}

static pld_program *local_compile(struct local *l) {
  pld_config cfg = comm_config(1);
  pld_program *p;
  int64_t col = 0;
  int32_t mode = MODE_OK;
  assert_ok(pld_compile(h_local, &cfg,
                        PLD_ARGS(l->src, l->gidx, l->sidx, l->vals, l->g, l->s,
                                 l->acc, l->wide, col, mode),
                        &p));
  return p;
}

/* Runs p at col and checks every output against the C loops. */
static void local_check(pld_program *p, struct local *l, int64_t col) {
  local_reset(l);
  float s_want[SR * SC], g_want[NI * GC];
  int32_t acc_want[SR * SC];
  int64_t wide_want[SR * SC];
  memcpy(s_want, pld_tensor_data(l->s), sizeof s_want);
  memcpy(acc_want, pld_tensor_data(l->acc), sizeof acc_want);
  memcpy(wide_want, pld_tensor_data(l->wide), sizeof wide_want);
  const int32_t *gidx = pld_tensor_data(l->gidx),
                *sidx = pld_tensor_data(l->sidx);
  ref_gather_f32(g_want, pld_tensor_data(l->src), gidx, 1, NI, col);
  ref_scatter_f32(s_want, g_want, sidx, NI, col);
  for (int b = 0; b < NB; b++)
    ref_scatter_i32(acc_want, pld_tensor_data(l->vals), gidx, 1, NI, col, 1);
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < GC && sidx[i] >= 0; j++)
      wide_want[sidx[i] * SC + col + j] = 7;
  assert_ok(local_run(p, l, col, MODE_OK));
  comm_expect_f32("g (gathered)", pld_tensor_data(l->g), g_want, NI * GC);
  comm_expect_f32("s (scattered)", pld_tensor_data(l->s), s_want, SR * SC);
  comm_expect_i32("acc (added by every block)", pld_tensor_data(l->acc),
                  acc_want, SR * SC);
  const int64_t *wide = pld_tensor_data(l->wide);
  for (int i = 0; i < SR * SC; i++)
    if (wide[i] != wide_want[i]) {
      print_error("wide (INT64 scattered): element %d: got %lld, expected "
                  "%lld\n",
                  i, (long long)wide[i], (long long)wide_want[i]);
      fail();
    }
}

static void test_local_against_c(void **state) {
  (void)state;
  struct local l = local_create();
  pld_program *p = local_compile(&l);
  for (uint32_t seed = 1; seed <= 6; seed++) {
    rng_seed(seed);
    random_index(pld_tensor_data(l.gidx), NI, seed > 2);
    random_index(pld_tensor_data(l.sidx), NI, seed > 3);
    local_check(p, &l, seed % 2 ? MID_COL : EDGE_COL);
  }
  pld_program_destroy(p);
  local_destroy(&l);
}

/* Every entry negative: a gather of zeros, a scatter that writes nothing. */
static void test_local_negative_indices(void **state) {
  (void)state;
  struct local l = local_create();
  pld_program *p = local_compile(&l);
  int32_t *gidx = pld_tensor_data(l.gidx), *sidx = pld_tensor_data(l.sidx);
  for (int i = 0; i < NI; i++)
    gidx[i] = sidx[i] = -1 - i;
  rng_seed(7);
  local_check(p, &l, MID_COL);
  const float *g = pld_tensor_data(l.g), *s = pld_tensor_data(l.s);
  for (int i = 0; i < NI * GC; i++)
    assert_true(g[i] == 0.0f);
  for (int i = 0; i < SR * SC; i++)
    assert_true(s[i] == -1.0f - (float)i);
  /* One row moves, between two that do not. */
  gidx[4] = sidx[4] = 3;
  local_check(p, &l, MID_COL);
  pld_program_destroy(p);
  local_destroy(&l);
}

/* An entry of SR - 1 and the columns at the edge pass (local_check); an
 * entry of SR, a negative column or one column past the edge fail, naming
 * the tensor, its shape, the position and the value.  A bad gidx entry
 * also fails every block's add into acc, and which block fails first is
 * the machine's choice: those runs use block 0 alone. */
static void test_local_bounds(void **state) {
  (void)state;
  struct local l = local_create();
  pld_program *p = local_compile(&l);
  int32_t *gidx = pld_tensor_data(l.gidx), *sidx = pld_tensor_data(l.sidx);
  rng_seed(11);
  random_index(gidx, NI, 1);
  random_index(sidx, NI, 0);
  gidx[4] = SR - 1;
  local_check(p, &l, EDGE_COL);
  gidx[4] = SR;
  assert_fails_with(local_run(p, &l, MID_COL, MODE_BLOCK_0), PLD_ERR_BOUNDS,
                    "pld_load_rows: kernel k_local",
                    "row idx[4] = 12 is outside tensor 'src' FP32[12, 20] "
                    "(rows 0 to 11; a negative index names no row)");
  gidx[4] = SR - 1;
  assert_fails_with(local_run(p, &l, EDGE_COL + 1, MODE_BLOCK_0),
                    PLD_ERR_BOUNDS, "pld_load_rows: kernel k_local",
                    "cols [13, 21) are outside tensor 'src' FP32[12, 20]");
  assert_fails_with(local_run(p, &l, -1, MODE_BLOCK_0), PLD_ERR_BOUNDS,
                    "pld_load_rows: kernel k_local",
                    "cols [-1, 7) are outside tensor 'src' FP32[12, 20]");
  /* The scatter's last entry (gidx passes). */
  sidx[NI - 1] = SR;
  assert_fails_with(local_run(p, &l, MID_COL, MODE_OK), PLD_ERR_BOUNDS,
                    "pld_store_rows: kernel k_local",
                    "row idx[8] = 12 is outside tensor 's' FP32[12, 20]");
  sidx[NI - 1] = SR - 1;
  local_check(p, &l, MID_COL);
  pld_program_destroy(p);
  local_destroy(&l);
}

static void test_local_refusals(void **state) {
  (void)state;
  struct local l = local_create();
  pld_program *p = local_compile(&l);
  rng_seed(17);
  random_index(pld_tensor_data(l.gidx), NI, 1);
  random_index(pld_tensor_data(l.sidx), NI, 1);
  assert_fails_with(local_run(p, &l, MID_COL, MODE_STORE_IN), PLD_ERR_ARG,
                    "pld_store_rows: kernel k_local",
                    "tensor 'src' is an In parameter");
  assert_fails_with(local_run(p, &l, MID_COL, MODE_ATOMIC_INT64),
                    PLD_ERR_UNSUPPORTED, "pld_store_rows: kernel k_local",
                    "atomic add on INT64: supported for FP32, FP16, BF16, "
                    "INT32, INT16 and INT8");
  assert_fails_with(local_run(p, &l, MID_COL, MODE_IDX_SHAPE), PLD_ERR_ARG,
                    "pld_load_rows: kernel k_local",
                    "idx is INT32[9, 1]: expected an INT32 tile of shape "
                    "[8, 1] or [1, 8]");
  assert_fails_with(local_run(p, &l, MID_COL, MODE_IDX_DTYPE), PLD_ERR_ARG,
                    "pld_load_rows: kernel k_local",
                    "idx is FP32[9, 1]: expected an INT32 tile");
  assert_fails_with(local_run(p, &l, MID_COL, MODE_ATOMIC_BAD), PLD_ERR_ARG,
                    "pld_store_rows: kernel k_local",
                    "atomic: expected PLD_ATOMIC_NONE or PLD_ATOMIC_ADD, got "
                    "2");
  /* The program still runs. */
  local_check(p, &l, MID_COL);
  pld_program_destroy(p);
  local_destroy(&l);
}

/* ---- remote: pld_remote_load_rows and pld_remote_store_rows ------------- */

/* The mistake rank 0 makes at the end of k_remote, after the others are
 * done with it (none: REMOTE_OK). */
enum {
  REMOTE_OK,
  REMOTE_LOAD_BAD,  /* a gather from peer 1 with bidx at column bcol */
  REMOTE_STORE_BAD, /* an atomic scatter to peer 1 with bidx at bcol */
  REMOTE_ATOMIC_U8  /* an atomic scatter into a UINT8 window */
};

/* Each rank publishes x in its window `table`; after a barrier it gathers,
 * from every peer p, the rows of row p of gidx (a [1, NI] tile) at col
 * into rows [p * NI, (p + 1) * NI) of g, and adds vals into p's `acc` at
 * the rows of column p of sidx (an [NI, 1] tile); and it stores vals into
 * the next rank's `plain` at the rows of column next of sidx.  After
 * another barrier it copies out its acc and plain. */
#define REMOTE_PARAMS                                                          \
  PLD_IN(x, FP32, SR, SC), PLD_IN(gidx, INT32, NR, NI),                        \
      PLD_IN(sidx, INT32, NI, NR), PLD_IN(vals, INT32, NI, GC),                \
      PLD_IN(bidx, INT32, NI, 1), PLD_WINDOW(table, FP32, SR, SC),             \
      PLD_WINDOW(acc, INT32, SR, SC), PLD_WINDOW(plain, INT32, SR, SC),        \
      PLD_WINDOW(bytes, UINT8, SR, SC), PLD_WINDOW(sig, INT32, NR),            \
      PLD_WINDOW(gate, INT32, 1), PLD_OUT(g, FP32, NR, NI, GC),                \
      PLD_OUT(acc_out, INT32, SR, SC), PLD_OUT(plain_out, INT32, SR, SC),      \
      PLD_SCALAR(col, INT64), PLD_SCALAR(mode, INT32), PLD_SCALAR(bcol, INT64)

PLD_KERNEL(k_remote, k, REMOTE_PARAMS) {
  pld_comm comm = pld_window_comm(table);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = comm_next(me, n);
  pld_store(k, pld_load(k, x, 0, 0, SR, SC), pld_local(table), 0, 0);
  pld_barrier(k, sig);
  pld_tile *got = pld_tile_new(k, PLD_FP32, NI, GC);
  pld_tile *v = pld_load(k, vals, 0, 0, NI, GC);
  for (int32_t p = 0; p < n; p++) {
    pld_tile *gi = pld_load(k, gidx, p, 0, 1, NI);
    pld_tile *si = pld_load(k, sidx, 0, p, NI, 1);
    pld_remote_load_rows(k, got, table, p, gi, col);
    pld_store(k, got, g, (int64_t)p * NI, 0);
    pld_remote_store_rows(k, v, acc, p, si, col, PLD_ATOMIC_ADD);
    if (p == next)
      pld_remote_store_rows(k, v, plain, p, si, col, PLD_ATOMIC_NONE);
    pld_tile_free(k, si);
    pld_tile_free(k, gi);
  }
  pld_barrier(k, sig);
  pld_store(k, pld_load(k, pld_local(acc), 0, 0, SR, SC), acc_out, 0, 0);
  pld_store(k, pld_load(k, pld_local(plain), 0, 0, SR, SC), plain_out, 0, 0);
  if (mode == REMOTE_OK)
    return;
  /* The others tell rank 0 they are done with the windows (so that its
   * mistake races with nothing, under PLD_CHECK=races too). */
  if (me != 0) {
    pld_notify(k, gate, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    return;
  }
  pld_wait(k, gate, PLD_AT(0), n - 1, PLD_WAIT_GE);
  pld_tile *bi = pld_load(k, bidx, 0, 0, NI, 1);
  if (mode == REMOTE_LOAD_BAD)
    pld_remote_load_rows(k, got, table, 1, bi, bcol);
  else if (mode == REMOTE_STORE_BAD)
    pld_remote_store_rows(k, v, acc, 1, bi, bcol, PLD_ATOMIC_ADD);
  else
    pld_remote_store_rows(k, pld_full(k, PLD_UINT8, NI, GC, 1), bytes, 1, bi,
                          bcol, PLD_ATOMIC_ADD);
}

PLD_DEVICE(d_remote, a, REMOTE_PARAMS) {
  pld_launch(a, k_remote, 1, x, gidx, sidx, vals, bidx, table, acc, plain,
             bytes, sig, gate, g, acc_out, plain_out, col, mode, bcol);
}

PLD_HOST(h_remote, h, PLD_IN(x, FP32, NR, SR, SC),
         PLD_IN(gidx, INT32, NR, NR, NI), PLD_IN(sidx, INT32, NR, NI, NR),
         PLD_IN(vals, INT32, NR, NI, GC), PLD_IN(bidx, INT32, NI, 1),
         PLD_OUT(g, FP32, NR, NR, NI, GC), PLD_OUT(acc_out, INT32, NR, SR, SC),
         PLD_OUT(plain_out, INT32, NR, SR, SC), PLD_SCALAR(col, INT64),
         PLD_SCALAR(mode, INT32), PLD_SCALAR(bcol, INT64)) {
  int n = pld_world_size(h);
  pld_window_buf tb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(SR, SC));
  pld_window_buf ab = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR, SC));
  pld_window_buf pb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR, SC));
  pld_window_buf ub = pld_window_alloc_shape(h, PLD_UINT8, PLD_SHAPE(SR, SC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  pld_window_buf gb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_remote, r, pld_slice(h, x, r), pld_slice(h, gidx, r),
                 pld_slice(h, sidx, r), pld_slice(h, vals, r), bidx,
                 pld_window_view(h, tb, PLD_FP32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, ab, PLD_INT32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, pb, PLD_INT32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, ub, PLD_UINT8, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_window_view(h, gb, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, g, r), pld_slice(h, acc_out, r),
                 pld_slice(h, plain_out, r), col, mode, bcol);
}

/* The host tensors of h_remote for n ranks. */
struct remote {
  int n;
  pld_tensor x, gidx, sidx, vals, bidx, g, acc_out, plain_out;
};

static struct remote remote_create(int n, uint32_t seed) {
  struct remote m;
  m.n = n;
  m.x = pld_test_tensor(3, (int64_t[]){n, SR, SC}, 0.5f, 3);
  m.gidx = comm_tensor(PLD_INT32, 3, (int64_t[]){n, n, NI});
  m.sidx = comm_tensor(PLD_INT32, 3, (int64_t[]){n, NI, n});
  m.vals = comm_tensor(PLD_INT32, 3, (int64_t[]){n, NI, GC});
  m.bidx = comm_tensor(PLD_INT32, 2, (int64_t[]){NI, 1});
  m.g = comm_tensor(PLD_FP32, 4, (int64_t[]){n, n, NI, GC});
  m.acc_out = comm_tensor(PLD_INT32, 3, (int64_t[]){n, SR, SC});
  m.plain_out = comm_tensor(PLD_INT32, 3, (int64_t[]){n, SR, SC});
  rng_seed(seed);
  int32_t *gidx = pld_tensor_data(m.gidx), *sidx = pld_tensor_data(m.sidx);
  int32_t *vals = pld_tensor_data(m.vals);
  for (int r = 0; r < n; r++)
    for (int p = 0; p < n; p++) {
      int32_t col_of_sidx[NI];
      random_index(gidx + (r * n + p) * NI, NI, (r + p + (int)seed) % 2);
      random_index(col_of_sidx, NI, (r + p + (int)seed + 1) % 2);
      for (int i = 0; i < NI; i++)
        sidx[(r * NI + i) * n + p] = col_of_sidx[i];
    }
  for (int i = 0; i < n * NI * GC; i++)
    vals[i] = rng_below(2001) - 1000;
  int32_t *bidx = pld_tensor_data(m.bidx);
  for (int i = 0; i < NI; i++)
    bidx[i] = i % 2 ? SR - 1 - i : -1;
  return m;
}

static void remote_destroy(struct remote *m) {
  pld_tensor all[] = {m->x,    m->gidx, m->sidx,    m->vals,
                      m->bidx, m->g,    m->acc_out, m->plain_out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    pld_tensor_destroy(all[i]);
}

static int remote_run(pld_program *p, struct remote *m, int64_t col,
                      int32_t mode, int64_t bcol) {
  return pld_program_run(p, PLD_ARGS(m->x, m->gidx, m->sidx, m->vals, m->bidx,
                                     m->g, m->acc_out, m->plain_out, col, mode,
                                     bcol));
}

static pld_program *remote_compile(struct remote *m, const pld_config *cfg) {
  pld_program *p;
  int64_t col = 0, bcol = 0;
  int32_t mode = REMOTE_OK;
  assert_ok(pld_compile(h_remote, cfg,
                        PLD_ARGS(m->x, m->gidx, m->sidx, m->vals, m->bidx, m->g,
                                 m->acc_out, m->plain_out, col, mode, bcol),
                        &p));
  return p;
}

/* Runs p at col and checks every rank's outputs against the C loops. */
static void remote_check(pld_program *prog, struct remote *m, int64_t col) {
  const int n = m->n;
  memset(pld_tensor_data(m->g), 0xff,
         sizeof(float) * (size_t)(n * n * NI * GC));
  assert_ok(remote_run(prog, m, col, REMOTE_OK, 0));
  const float *x = pld_tensor_data(m->x);
  const int32_t *gidx = pld_tensor_data(m->gidx),
                *sidx = pld_tensor_data(m->sidx),
                *vals = pld_tensor_data(m->vals);
  float g_want[NI * GC];
  int32_t acc_want[SR * SC], plain_want[SR * SC];
  for (int r = 0; r < n; r++) {
    char what[96];
    for (int p = 0; p < n; p++) {
      ref_gather_f32(g_want, x + p * SR * SC, gidx + (r * n + p) * NI, 1, NI,
                     col);
      snprintf(what, sizeof what, "rank %d of %d: rows gathered from peer %d",
               r, n, p);
      comm_expect_f32(
          what, (const float *)pld_tensor_data(m->g) + (r * n + p) * NI * GC,
          g_want, NI * GC);
    }
    /* acc: every rank q's vals at the rows of column r of its sidx;
     * plain: the previous rank's alone, in index order. */
    memset(acc_want, 0, sizeof acc_want);
    memset(plain_want, 0, sizeof plain_want);
    for (int q = 0; q < n; q++)
      ref_scatter_i32(acc_want, vals + q * NI * GC, sidx + q * NI * n + r, n,
                      NI, col, 1);
    int q = comm_prev(r, n);
    ref_scatter_i32(plain_want, vals + q * NI * GC, sidx + q * NI * n + r, n,
                    NI, col, 0);
    snprintf(what, sizeof what, "rank %d of %d: acc (every rank's adds)", r, n);
    comm_expect_i32(what,
                    (const int32_t *)pld_tensor_data(m->acc_out) + r * SR * SC,
                    acc_want, SR * SC);
    snprintf(what, sizeof what, "rank %d of %d: plain (rank %d's stores)", r, n,
             q);
    comm_expect_i32(
        what, (const int32_t *)pld_tensor_data(m->plain_out) + r * SR * SC,
        plain_want, SR * SC);
  }
}

static void run_remote_against_c(int n) {
  pld_config cfg = comm_config(n);
  for (uint32_t seed = 1; seed <= 2; seed++) {
    struct remote m = remote_create(n, seed);
    pld_program *p = remote_compile(&m, &cfg);
    remote_check(p, &m, MID_COL);
    remote_check(p, &m, EDGE_COL);
    pld_program_destroy(p);
    remote_destroy(&m);
  }
}

static void test_remote_against_c(void **state) {
  (void)state;
  comm_over_rank_counts(run_remote_against_c);
}

/* Against the peer's view: an entry of SR - 1 and the columns at the edge
 * pass; SR and one column more fail, naming the peer, the window, its
 * shape, the position and the value. */
static void run_remote_bounds(int n) {
  pld_config cfg = comm_config(n);
  struct remote m = remote_create(n, 3);
  pld_program *p = remote_compile(&m, &cfg);
  int32_t *bidx = pld_tensor_data(m.bidx);
  bidx[NI - 2] = SR - 1;
  assert_ok(remote_run(p, &m, MID_COL, REMOTE_LOAD_BAD, EDGE_COL));
  assert_ok(remote_run(p, &m, MID_COL, REMOTE_STORE_BAD, EDGE_COL));
  bidx[NI - 2] = SR;
  assert_fails_with(remote_run(p, &m, MID_COL, REMOTE_LOAD_BAD, EDGE_COL),
                    PLD_ERR_BOUNDS, "pld_remote_load_rows: kernel k_remote",
                    "window 'table' (buffer #0) of peer 1: row idx[7] = 12 "
                    "outside FP32[12, 20] (a matrix of 12 x 20; a negative "
                    "index names no row)");
  assert_fails_with(remote_run(p, &m, MID_COL, REMOTE_STORE_BAD, 0),
                    PLD_ERR_BOUNDS, "pld_remote_store_rows: kernel k_remote",
                    "window 'acc' (buffer #1) of peer 1: row idx[7] = 12 "
                    "outside INT32[12, 20]");
  bidx[NI - 2] = SR - 1;
  assert_fails_with(remote_run(p, &m, MID_COL, REMOTE_LOAD_BAD, EDGE_COL + 1),
                    PLD_ERR_BOUNDS, "pld_remote_load_rows: kernel k_remote",
                    "window 'table' (buffer #0) of peer 1: cols [13, 21) "
                    "outside FP32[12, 20] (a matrix of 12 x 20)");
  assert_fails_with(remote_run(p, &m, MID_COL, REMOTE_STORE_BAD, EDGE_COL + 1),
                    PLD_ERR_BOUNDS, "pld_remote_store_rows: kernel k_remote",
                    "window 'acc' (buffer #1) of peer 1: cols [13, 21) "
                    "outside INT32[12, 20]");
  assert_fails_with(remote_run(p, &m, MID_COL, REMOTE_ATOMIC_U8, 0),
                    PLD_ERR_UNSUPPORTED,
                    "pld_remote_store_rows: kernel k_remote",
                    "atomic add on UINT8: supported for FP32, FP16, BF16, "
                    "INT32, INT16 and INT8");
  /* The devices run again after the refusals. */
  remote_check(p, &m, MID_COL);
  pld_program_destroy(p);
  remote_destroy(&m);
}

static void test_remote_bounds(void **state) {
  (void)state;
  comm_over_rank_counts(run_remote_bounds);
}

/* ---- the race detector -------------------------------------------------- */

enum { RACE_ROW = 10 };
/* k_race_rows's orders: none, a barrier, or (RACE_LOCAL) a local scatter
 * the next rank reads with none. */
enum { RACE_NONE, RACE_BARRIER, RACE_LOCAL };

/* Each rank scatters vals into the next rank's `plain` at the rows of
 * ridx, of which only the last, RACE_ROW, is read: then (order) a barrier
 * or nothing; then it reads row RACE_ROW of its own plain.  RACE_LOCAL:
 * each scatters into its own plain instead and reads row RACE_ROW of the
 * previous rank's. */
#define RACE_PARAMS                                                            \
  PLD_IN(vals, INT32, NI, GC), PLD_IN(ridx, INT32, 1, NI),                     \
      PLD_WINDOW(plain, INT32, SR, SC), PLD_WINDOW(sig, INT32, NR),            \
      PLD_OUT(y, INT32, 1, SC), PLD_SCALAR(order, INT32)

PLD_KERNEL(k_race_rows, k, RACE_PARAMS) {
  pld_comm comm = pld_window_comm(plain);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t next = comm_next(me, n);
  pld_tile *ri = pld_load(k, ridx, 0, 0, 1, NI);
  if (order == RACE_LOCAL) {
    /* A local scatter into my own copy, which the next rank reads. */
    pld_store_rows(k, pld_load(k, vals, 0, 0, NI, GC), pld_local(plain), ri,
                   MID_COL, PLD_ATOMIC_NONE);
    pld_store(k,
              pld_remote_load(k, plain, comm_prev(me, n), RACE_ROW, 0, 1, SC),
              y, 0, 0);
    return;
  }
  pld_remote_store_rows(k, pld_load(k, vals, 0, 0, NI, GC), plain, next, ri,
                        MID_COL, PLD_ATOMIC_NONE);
  if (order == RACE_BARRIER)
    pld_barrier(k, sig);
  pld_store(k, pld_load(k, pld_local(plain), RACE_ROW, 0, 1, SC), y, 0, 0);
}

PLD_DEVICE(d_race_rows, a, RACE_PARAMS) {
  pld_launch(a, k_race_rows, 1, vals, ridx, plain, sig, y, order);
}

PLD_HOST(h_race_rows, h, PLD_IN(vals, INT32, NR, NI, GC),
         PLD_IN(ridx, INT32, 1, NI), PLD_OUT(y, INT32, NR, 1, SC),
         PLD_SCALAR(order, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf pb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SR, SC));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_race_rows, r, pld_slice(h, vals, r), ridx,
                 pld_window_view(h, pb, PLD_INT32, PLD_SHAPE(SR, SC)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r), order);
}

static void test_races_remote_scatter(void **state) {
  (void)state;
  if (pld_process_count() > 1)
    skip(); /* the check is the shared-memory fabric's */
  const int n = 3;
  pld_config cfg = comm_config(n);
  cfg.check = "races";
  pld_tensor vals = comm_tensor(PLD_INT32, 3, (int64_t[]){n, NI, GC});
  pld_tensor ridx = comm_tensor(PLD_INT32, 2, (int64_t[]){1, NI});
  pld_tensor y = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 1, SC});
  int32_t *vs = pld_tensor_data(vals), *ri = pld_tensor_data(ridx);
  for (int i = 0; i < n * NI * GC; i++)
    vs[i] = i + 1;
  /* Rows 0, 2, 4, ... (never two in a row: each is its own run), the
   * last RACE_ROW; one negative entry. */
  for (int i = 0; i < NI; i++)
    ri[i] = i == 3 ? -1 : 2 * (i % 5);
  ri[NI - 1] = RACE_ROW;
  pld_program *p;
  int32_t order = RACE_NONE;
  assert_ok(pld_compile(h_race_rows, &cfg, PLD_ARGS(vals, ridx, y, order), &p));
  int st = pld_program_run(p, PLD_ARGS(vals, ridx, y, order));
  assert_fails_with(st, PLD_ERR_RACE, "data race on window 'plain' (buffer #",
                    "pld_remote_store_rows");
  order = RACE_LOCAL;
  st = pld_program_run(p, PLD_ARGS(vals, ridx, y, order));
  assert_fails_with(st, PLD_ERR_RACE, "data race on window 'plain' (buffer #",
                    "pld_store_rows");
  order = RACE_BARRIER;
  assert_ok(pld_program_run(p, PLD_ARGS(vals, ridx, y, order)));
  const int32_t *ys = pld_tensor_data(y);
  for (int r = 0; r < n; r++)
    for (int j = 0; j < SC; j++) {
      int q = comm_prev(r, n);
      int32_t want = j >= MID_COL && j < MID_COL + GC
                         ? vs[(q * NI + NI - 1) * GC + j - MID_COL]
                         : 0;
      assert_int_equal(ys[r * SC + j], want);
    }
  pld_program_destroy(p);
  pld_tensor_destroy(vals);
  pld_tensor_destroy(ridx);
  pld_tensor_destroy(y);
}

/* The gathers and atomic scatters of k_remote with the check on: its
 * barriers order every access, so it passes, with the same results. */
static void test_races_signalled_rows(void **state) {
  (void)state;
  if (pld_process_count() > 1)
    skip();
  const int n = 4;
  pld_config cfg = comm_config(n);
  cfg.check = "races";
  struct remote m = remote_create(n, 5);
  pld_program *p = remote_compile(&m, &cfg);
  remote_check(p, &m, MID_COL);
  pld_program_destroy(p);
  remote_destroy(&m);
}

/* ---- the trace ---------------------------------------------------------- */

/* Every gather and scatter of k_remote is one transfer span of its own
 * name in the trace, naming the window. */
static void test_trace_names_rows(void **state) {
  (void)state;
  if (pld_process_count() > 1)
    skip(); /* one process's file is enough */
  const int n = 2;
  pld_config cfg = comm_config(n);
  char path[64];
  snprintf(path, sizeof path, "/tmp/pld-test-rows-%d.json", (int)getpid());
  cfg.trace = path;
  struct remote m = remote_create(n, 9);
  pld_program *p = remote_compile(&m, &cfg);
  remote_check(p, &m, MID_COL);
  pld_program_destroy(p);
  remote_destroy(&m);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  unlink(path);
  text[len] = '\0';
  /* Each rank: n gathers, n atomic scatters and one plain one. */
  const char *names[] = {"\"remote_load_rows\"", "\"remote_store_rows\""};
  const int want[] = {n * n, n * (n + 1)};
  for (int i = 0; i < 2; i++) {
    int count = 0;
    for (const char *q = strstr(text, names[i]); q; q = strstr(q + 1, names[i]))
      count++;
    if (count != want[i]) {
      print_error("the trace has %d events %s, expected %d\n", count, names[i],
                  want[i]);
      fail();
    }
  }
  assert_non_null(strstr(text, "\"table\""));
  assert_non_null(strstr(text, "\"acc\""));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_local_against_c),
    cmocka_unit_test(test_local_negative_indices),
    cmocka_unit_test(test_local_bounds),
    cmocka_unit_test(test_local_refusals),
    cmocka_unit_test(test_remote_against_c),
    cmocka_unit_test(test_remote_bounds),
    cmocka_unit_test(test_races_remote_scatter),
    cmocka_unit_test(test_races_signalled_rows),
    cmocka_unit_test(test_trace_names_rows),
};

PLD_TEST_MAIN("comm_rows", tests)
