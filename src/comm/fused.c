/* comm/fused.c: AllGather-GEMM and GEMM-ReduceScatter (pld/fused.h), built
 * from the public tile, RMA and signal calls: the products are pld_matmul
 * chains on cube cores, the chunks and tiles travel by pld_put_notify and
 * pld_remote_store + pld_notify, the sum is pld_add on a vector core.
 * This file adds the checks that name the fused call and its parameters,
 * the order of the work, and the signal cells' protocol. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "pld/fused.h"
#include "tile/tile.h"

/* The products' tiles (pld/fused.h): C tiles of TILE x TILE_N, stepped
 * over K by k_step's, ROW_TILES of them sharing each B tile, which holds
 * at most B_TILE_BYTES (a2a3's L0B). */
#define TILE PLD_FUSED_TILE
#define TILE_N 256
#define ROW_TILES 2
#define B_TILE_BYTES (64 * 1024)

/* The most ranks of a domain: the platforms' device ids (comm/coll.h's
 * MAX_RANKS). */
#define PLD_FUSED_MAX_RANKS 128

/* ---- checks ---- */

/* "tensor 'a' FP32 [4, 8]" (or "window 'sig' ..."), for messages. */
static size_t param_str(char *buf, size_t cap, const struct pld__tensor *t) {
  char shape[160];
  pld__tensor_str(shape, sizeof shape, t);
  return pld__catf(buf, cap, "%s '%s' %s",
                   (t->flags & PLD__T_WINDOW) ? "window" : "tensor",
                   t->name ? t->name : "?", shape);
}

/* Parameter `what` of fn: a usable tensor (a window when `window`, a
 * plain tensor or pld_local of a window otherwise), written when
 * `writing`. */
static int check_param(struct pld__core *c, const char *fn, const char *what,
                       const struct pld__tensor *t, int window, int writing) {
  if (c->status)
    return c->status;
  if (!t)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "%s: expected a %s, got a NULL handle", what,
                      window ? "window" : "tensor");
  if (window && (!(t->flags & PLD__T_WINDOW) || !t->comm))
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "%s: expected a window (a PLD_WINDOW parameter), got a "
                      "plain tensor, which peers cannot reach",
                      what);
  pld_tensor as = {(struct pld__tensor *)t};
  return pld__tensor_check(c, fn, as, writing);
}

/* The dtype of `what` is `want` (or, want_float, one of FP32, FP16, BF16). */
static int check_dtype(struct pld__core *c, const char *fn, const char *what,
                       const struct pld__tensor *t, pld_dtype want,
                       int want_float) {
  if (want_float ? pld__is_float_dtype(t->dtype) : t->dtype == want)
    return PLD_OK;
  char ts[256];
  param_str(ts, sizeof ts, t);
  return pld__kfail(c, PLD_ERR_ARG, fn, "%s: expected %s, got %s", what,
                    want_float ? "FP32, FP16 or BF16" : pld_dtype_name(want),
                    ts);
}

/* Dimension `dim` ("rows", "columns") of `what` is `want` (`why` says
 * where the number comes from). */
static int check_dim(struct pld__core *c, const char *fn, const char *what,
                     const struct pld__tensor *t, const char *dim, int64_t got,
                     int64_t want, const char *why) {
  if (got == want)
    return PLD_OK;
  char ts[256];
  param_str(ts, sizeof ts, t);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "%s: expected %lld %s (%s), got %lld: %s is seen as a "
                    "[%lld, %lld] matrix",
                    what, (long long)want, dim, why, (long long)got, ts,
                    (long long)pld__tensor_rows(t),
                    (long long)pld__tensor_cols(t));
}

/* The kernel runs on cores of `type`, on at most as many blocks as the
 * device has such cores (the lanes of every rank must run at once). */
static int check_core(struct pld__core *c, const char *fn, pld_core_type type) {
  if (c->status)
    return c->status;
  if (c->spec.type != type)
    return pld__kfail(
        c, PLD_ERR_LEVEL, fn,
        "runs on %s cores, and kernel %s runs on %s cores: call it from a %s",
        pld__core_type_name(type), c->kernel ? c->kernel : "?",
        pld__core_type_name(c->spec.type),
        type == PLD_CORE_CUBE ? "PLD_CUBE_KERNEL" : "PLD_KERNEL");
  const int cores = c->env ? c->env->cores[type] : 0;
  if (cores > 0 && c->block_num > cores)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "launched on %d blocks, but the device has %d %s "
                      "cores: the lanes of a fused call must run at once; "
                      "launch it on at most %d",
                      (int)c->block_num, cores, pld__core_type_name(type),
                      cores);
  return PLD_OK;
}

/* sig: an INT32 window of PLD_FUSED_SIGNAL_CELLS(P, C) cells or more, of
 * the domain of `data` (the other window). */
static int check_sig(struct pld__core *c, const char *fn,
                     const struct pld__tensor *sig,
                     const struct pld__tensor *data, const char *data_name) {
  if (check_param(c, fn, "sig", sig, 1, 1) ||
      check_dtype(c, fn, "sig", sig, PLD_INT32, 0))
    return c->status;
  const int32_t p = sig->comm->nranks;
  const int64_t cells = (int64_t)(sig->nbytes / sizeof(int32_t));
  const int64_t need = PLD_FUSED_SIGNAL_CELLS((int64_t)p, c->block_num);
  if (cells < need)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "sig: expected at least %lld INT32 cells "
                      "(PLD_FUSED_SIGNAL_CELLS(%d rank%s, %d block%s)), got "
                      "%lld",
                      (long long)need, (int)p, p == 1 ? "" : "s",
                      (int)c->block_num, c->block_num == 1 ? "" : "s",
                      (long long)cells);
  const struct pld__comm *d = data->comm;
  if (d->nranks != p ||
      memcmp(d->members, sig->comm->members, (size_t)p * sizeof *d->members))
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "%s spans %d ranks and sig %d, or other ranks: expected "
                      "windows of one domain",
                      data_name, d->nranks, (int)p);
  return PLD_OK;
}

/* t (a plain tensor or a window view) overlaps window w's copy on this
 * rank. */
static int overlaps(const struct pld__tensor *t, const struct pld__tensor *w) {
  if (!(t->flags & PLD__T_WINDOW) || t->win_buf != w->win_buf)
    return 0;
  return t->win_offset < w->win_offset + w->nbytes &&
         w->win_offset < t->win_offset + t->nbytes;
}

/* The call's tiles fit the free tile memory: reserved once at their
 * largest (failures named fn's), then freed, so that the loops' tiles,
 * never larger, find room at the same places. */
#define MOST_TILES (2 + ROW_TILES)
static int reserve(struct pld__core *c, const char *fn, int n,
                   const pld_dtype *dt, const int32_t *rows,
                   const int32_t *cols) {
  pld_tile *t[MOST_TILES] = {NULL};
  for (int i = 0; i < n && !c->status; i++)
    t[i] = pld__tile_alloc(c, fn, dt[i], rows[i], cols[i]);
  pld_core k = {c};
  for (int i = 0; i < n; i++)
    pld_tile_free(k, t[i]);
  return c->status;
}

static int32_t min32(int64_t a, int64_t b) { return (int32_t)(a < b ? a : b); }

/* The elements of K a product takes per step for C tiles of nr columns
 * and operands of es bytes: TILE when a B tile [TILE, nr] stays within
 * B_TILE_BYTES, else half as many. */
static int64_t k_step(size_t es, int64_t nr) {
  return (size_t)nr * es * TILE <= B_TILE_BYTES ? TILE : TILE / 2;
}

/* The tiles of a product of m rows (the most of one call) by k by n with
 * operands of dtype dt (product_rows'), at their largest: an A tile (its
 * K step the largest of the C tiles' widths: the first, and a ragged
 * last), a B tile and the C tiles of a group. */
static int reserve_product(struct pld__core *c, const char *fn, pld_dtype dt,
                           int64_t m, int64_t k, int64_t n) {
  const size_t es = pld_dtype_size(dt);
  const int32_t mr = min32(m, TILE), nr = min32(n, TILE_N);
  int64_t ks = k_step(es, nr);
  if (n > TILE_N && n % TILE_N && k_step(es, n % TILE_N) > ks)
    ks = k_step(es, n % TILE_N);
  const int ctiles = (int)((min32(m, ROW_TILES * TILE) + TILE - 1) / TILE);
  pld_dtype dts[MOST_TILES] = {dt, dt};
  int32_t rows[MOST_TILES] = {mr, min32(k, k_step(es, nr))};
  int32_t cols[MOST_TILES] = {min32(k, ks), nr};
  for (int i = 2; i < 2 + ctiles; i++) {
    dts[i] = PLD_FP32;
    rows[i] = mr;
    cols[i] = nr;
  }
  return reserve(c, fn, 2 + ctiles, dts, rows, cols);
}

/* ---- the pieces ---- */

/* c rows [crow, crow + rows) = a rows [arow, arow + rows) @ b, by
 * groups of up to ROW_TILES row tiles: for each group and each TILE_N
 * columns, the group's C tiles stay in tile memory over the whole k loop
 * and each B tile (k_step x TILE_N) is loaded once for all of them; after
 * the k loop, done(tile, row, col, ctx) for each finished C tile in row
 * order if given, else the tile is stored into c at its place. */
struct product {
  pld_tensor a, b, c;
  int64_t k, n;
  /* Called with each finished C tile and its row and column in the
   * product's rows (0 is arow); NULL: store into c. */
  int (*done)(pld_core k, pld_tile *t, int64_t row, int64_t col, void *ctx);
  void *ctx;
};

/* The C tiles of the group at row g0 of rows (up to ROW_TILES), into ct
 * and their rows into mr: how many. */
static int group_tiles(pld_core k, int64_t g0, int64_t rows, int32_t nr,
                       pld_tile **ct, int32_t *mr) {
  int n = 0;
  for (; n < ROW_TILES && g0 + (int64_t)n * TILE < rows; n++) {
    mr[n] = min32(rows - g0 - (int64_t)n * TILE, TILE);
    ct[n] = pld_tile_new(k, PLD_FP32, mr[n], nr);
  }
  return n;
}

static int product_rows(pld_core k, const struct product *p, int64_t arow,
                        int64_t crow, int64_t rows) {
  for (int64_t g0 = 0; g0 < rows && !k.p->status; g0 += ROW_TILES * TILE)
    for (int64_t n0 = 0; n0 < p->n && !k.p->status; n0 += TILE_N) {
      const int32_t nr = min32(p->n - n0, TILE_N);
      pld_tile *ct[ROW_TILES];
      int32_t mr[ROW_TILES];
      const int tiles = group_tiles(k, g0, rows, nr, ct, mr);
      const int64_t ks = k_step(pld_dtype_size(p->b.p->dtype), nr);
      for (int64_t k0 = 0; k0 < p->k && !k.p->status; k0 += ks) {
        const int32_t kr = min32(p->k - k0, ks);
        pld_tile *bt = pld_load(k, p->b, k0, n0, kr, nr);
        for (int i = 0; i < tiles; i++) {
          pld_tile *at =
              pld_load(k, p->a, arow + g0 + (int64_t)i * TILE, k0, mr[i], kr);
          if (k0 == 0)
            pld_matmul(k, ct[i], at, bt);
          else
            pld_matmul_acc(k, ct[i], at, bt);
          pld_tile_free(k, at);
        }
        pld_tile_free(k, bt);
      }
      int st = k.p->status;
      for (int i = 0; i < tiles; i++) {
        const int64_t row = g0 + (int64_t)i * TILE;
        if (!st)
          st = p->done ? p->done(k, ct[i], row, n0, p->ctx)
                       : pld_store(k, ct[i], p->c, crow + row, n0);
        pld_tile_free(k, ct[i]);
      }
      if (st)
        return st;
    }
  return k.p->status;
}

/* Cell i of lane `lane` (5P cells each, pld/fused.h) of sig. */
static int64_t cell(int32_t p, int32_t lane, int32_t i) {
  return 5 * (int64_t)p * lane + i;
}

/* The cells of a lane: counts, end arrivals, and what the products of
 * GEMM-ReduceScatter announce to the sums (word w of rank s's). */
#define CELL_COUNT(p, s) (s)
#define CELL_END(p, s) ((p) + (s))
#define CELL_ANNOUNCE(p, s, w) (2 * (p) + 3 * (s) + (w))

/* The words of an announcement, sent in this order: the blocks last,
 * which the sum waits for (signals from one rank land in order). */
enum { ANN_ROWS, ANN_COLS, ANN_BLOCKS, ANN_WORDS };

/* The end of a call on lane `lane`: a rendezvous of the lane on every
 * rank (the end cells), then every count this call waited for taken
 * back: got[s] from rank s's count cell, 1 from its end cell, and the
 * words of its announcement, ann[s] (NULL: none). */
static int lane_end(pld_core k, pld_window sig, int32_t me, int32_t p,
                    int32_t lane, const int32_t *got,
                    const int32_t (*ann)[ANN_WORDS]) {
  for (int32_t q = 0; q < p; q++)
    if (q != me)
      pld_notify(k, sig, q, PLD_AT(cell(p, lane, CELL_END(p, me))), 1,
                 PLD_NOTIFY_ADD);
  for (int32_t q = 0; q < p; q++)
    if (q != me)
      pld_wait(k, sig, PLD_AT(cell(p, lane, CELL_END(p, q))), 1, PLD_WAIT_GE);
  for (int32_t q = 0; q < p; q++) {
    if (got[q])
      pld_notify(k, sig, me, PLD_AT(cell(p, lane, CELL_COUNT(p, q))), -got[q],
                 PLD_NOTIFY_ADD);
    if (q != me)
      pld_notify(k, sig, me, PLD_AT(cell(p, lane, CELL_END(p, q))), -1,
                 PLD_NOTIFY_ADD);
    for (int w = 0; ann && w < ANN_WORDS; w++)
      if (ann[q][w])
        pld_notify(k, sig, me, PLD_AT(cell(p, lane, CELL_ANNOUNCE(p, q, w))),
                   -ann[q][w], PLD_NOTIFY_ADD);
  }
  return k.p->status;
}

/* ---- AllGather-GEMM ---- */

int pld_allgather_matmul(pld_core k, pld_tensor a, pld_window gathered,
                         pld_tensor b, pld_tensor c, pld_window sig) {
  struct pld__core *core = k.p;
  const char *fn = "pld_allgather_matmul";
  if (check_core(core, fn, PLD_CORE_CUBE) ||
      check_param(core, fn, "a", a.p, 0, 0) ||
      check_param(core, fn, "gathered", gathered.p, 1, 1) ||
      check_param(core, fn, "b", b.p, 0, 0) ||
      check_param(core, fn, "c", c.p, 0, 1) ||
      check_sig(core, fn, sig.p, gathered.p, "gathered") ||
      check_dtype(core, fn, "a", a.p, PLD_FP32, 1) ||
      check_dtype(core, fn, "gathered", gathered.p, a.p->dtype, 0) ||
      check_dtype(core, fn, "b", b.p, a.p->dtype, 0) ||
      check_dtype(core, fn, "c", c.p, PLD_FP32, 0))
    return core->status;
  const int32_t p = sig.p->comm->nranks, me = sig.p->comm->rank;
  const int64_t m = pld__tensor_rows(a.p), kk = pld__tensor_cols(a.p);
  const int64_t n = pld__tensor_cols(b.p);
  if (check_dim(core, fn, "gathered", gathered.p, "rows",
                pld__tensor_rows(gathered.p), p * m,
                "P * a's rows, P the ranks of sig's domain") ||
      check_dim(core, fn, "gathered", gathered.p, "columns",
                pld__tensor_cols(gathered.p), kk, "a's columns, K") ||
      check_dim(core, fn, "b", b.p, "rows", pld__tensor_rows(b.p), kk,
                "a's columns, K") ||
      check_dim(core, fn, "c", c.p, "rows", pld__tensor_rows(c.p), p * m,
                "P * a's rows") ||
      check_dim(core, fn, "c", c.p, "columns", pld__tensor_cols(c.p), n,
                "b's columns, N"))
    return core->status;
  if (p > PLD_FUSED_MAX_RANKS)
    return pld__kfail(core, PLD_ERR_ARG, fn,
                      "sig: a domain of %d ranks; expected at most %d", (int)p,
                      PLD_FUSED_MAX_RANKS);
  if (overlaps(a.p, gathered.p))
    return pld__kfail(core, PLD_ERR_ARG, fn,
                      "a: expected a tensor apart from window gathered, got "
                      "a view that overlaps it (the chunks of the other "
                      "ranks land there)");
  if (reserve_product(core, fn, a.p->dtype, m, kk, n))
    return core->status;
  const int32_t lane = core->block_idx, lanes = core->block_num;
  const int64_t lo = m * lane / lanes, hi = m * (lane + 1) / lanes;
  const pld_xfer mine = {.dst_row = me * m + lo,
                         .src_row = lo,
                         .rows = (int32_t)(hi - lo),
                         .cols = (int32_t)kk};
  struct product pr = {.a = a, .b = b, .c = c, .k = kk, .n = n};
  int32_t got[PLD_FUSED_MAX_RANKS];
  memset(got, 0, sizeof got);
  for (int32_t j = 0; j < p && !core->status; j++) {
    /* My chunk to the rank that multiplies it next step, signal behind. */
    if (j + 1 < p) {
      const int32_t q = (me - j - 1 + p) % p;
      const int64_t at = cell(p, lane, CELL_COUNT(p, me));
      if (hi > lo)
        pld_put_notify(k, gathered, q, a, &mine, sig, PLD_AT(at), 1,
                       PLD_NOTIFY_ADD);
      else
        pld_notify(k, sig, q, PLD_AT(at), 1, PLD_NOTIFY_ADD);
    }
    const int32_t s = (me + j) % p;
    if (s == me) {
      if (hi > lo) /* gathered holds every chunk afterwards */
        pld_put(k, gathered, me, a, &mine);
      pr.a = a;
      product_rows(k, &pr, lo, me * m + lo, hi - lo);
    } else {
      pld_wait(k, sig, PLD_AT(cell(p, lane, CELL_COUNT(p, s))), 1, PLD_WAIT_GE);
      got[s] = 1;
      pr.a = pld_local(gathered);
      product_rows(k, &pr, s * m + lo, s * m + lo, hi - lo);
    }
  }
  if (core->status)
    return core->status;
  return lane_end(k, sig, me, p, lane, got, NULL);
}

/* ---- GEMM-ReduceScatter ---- */

/* Where a finished tile of the partial product goes: rank d's stage, rows
 * of slot me. */
struct send {
  pld_window stage, sig;
  int32_t d, me, p, lane;
  int64_t slot_row; /* me * M/P + the lane's first row */
};

static int send_tile(pld_core k, pld_tile *t, int64_t row, int64_t col,
                     void *ctx) {
  const struct send *s = ctx;
  pld_remote_store(k, t, s->stage, s->d, s->slot_row + row, col,
                   PLD_ATOMIC_NONE);
  return pld_notify(k, s->sig, s->d,
                    PLD_AT(cell(s->p, s->lane, CELL_COUNT(s->p, s->me))), 1,
                    PLD_NOTIFY_ADD);
}

/* A dimension as an announcement word (a row block or N beyond INT32_MAX
 * is announced as INT32_MAX). */
static int32_t ann_word(int64_t v) {
  return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* The products' announcement to rank d's lane: the row block's rows, N,
 * and the block count last; the sum checks them before it reads a slot
 * (check_announce). */
static int announce(pld_core k, pld_window sig, int32_t d, int32_t me,
                    int32_t p, int32_t lane, const int32_t *words) {
  for (int w = 0; w < ANN_WORDS; w++)
    pld_notify(k, sig, d, PLD_AT(cell(p, lane, CELL_ANNOUNCE(p, me, w))),
               words[w], PLD_NOTIFY_ADD);
  return k.p->status;
}

int pld_matmul_reduce_scatter(pld_core k, pld_tensor a, pld_tensor b,
                              pld_window stage, pld_window sig) {
  struct pld__core *core = k.p;
  const char *fn = "pld_matmul_reduce_scatter";
  if (check_core(core, fn, PLD_CORE_CUBE) ||
      check_param(core, fn, "a", a.p, 0, 0) ||
      check_param(core, fn, "b", b.p, 0, 0) ||
      check_param(core, fn, "stage", stage.p, 1, 1) ||
      check_sig(core, fn, sig.p, stage.p, "stage") ||
      check_dtype(core, fn, "a", a.p, PLD_FP32, 1) ||
      check_dtype(core, fn, "b", b.p, a.p->dtype, 0) ||
      check_dtype(core, fn, "stage", stage.p, PLD_FP32, 0))
    return core->status;
  const int32_t p = sig.p->comm->nranks, me = sig.p->comm->rank;
  const int64_t m = pld__tensor_rows(a.p), kk = pld__tensor_cols(a.p);
  const int64_t n = pld__tensor_cols(b.p);
  if (check_dim(core, fn, "b", b.p, "rows", pld__tensor_rows(b.p), kk,
                "a's columns, this rank's K") ||
      check_dim(core, fn, "stage", stage.p, "rows", pld__tensor_rows(stage.p),
                m, "a's rows, M") ||
      check_dim(core, fn, "stage", stage.p, "columns",
                pld__tensor_cols(stage.p), n, "b's columns, N"))
    return core->status;
  if (m % p)
    return pld__kfail(core, PLD_ERR_ARG, fn,
                      "a: expected a multiple of %d rows (P, the ranks of "
                      "sig's domain: row block d of the product goes to rank "
                      "d), got %lld",
                      (int)p, (long long)m);
  const int64_t mb = m / p;
  if (reserve_product(core, fn, a.p->dtype, mb, kk, n))
    return core->status;
  const int32_t lane = core->block_idx, lanes = core->block_num;
  const int64_t lo = mb * lane / lanes, hi = mb * (lane + 1) / lanes;
  struct send sd = {stage, sig, 0, me, p, lane, me * mb + lo};
  const struct product pr = {
      .a = a, .b = b, .k = kk, .n = n, .done = send_tile, .ctx = &sd};
  /* Every rank's sum on this lane learns first what this call is: a sum
   * on another block count or shape would read slots that this call does
   * not fill, or not yet. */
  int32_t words[ANN_WORDS];
  words[ANN_ROWS] = ann_word(mb);
  words[ANN_COLS] = ann_word(n);
  words[ANN_BLOCKS] = lanes;
  for (int32_t i = 1; i <= p && !core->status; i++)
    announce(k, sig, (me + i) % p, me, p, lane, words);
  /* Row blocks from the next rank's on, my own last (its sum waits for
   * everyone's anyway). */
  for (int32_t i = 1; i <= p && !core->status; i++) {
    sd.d = (me + i) % p;
    product_rows(k, &pr, sd.d * mb + lo, 0, hi - lo);
  }
  return core->status;
}

/* This rank's copy of sig's cell at. */
static int32_t cell_value(struct pld__core *c, const char *fn, pld_window sig,
                          int64_t at) {
  size_t off = 0;
  if (pld__cell_offset(c, fn, sig, PLD__NO_PEER, PLD_AT(at), &off))
    return 0;
  struct pld__fabric *f = c->env->fabric;
  return f->ops->cell(f, sig.p->win_buf, off);
}

/* Waits for the announcement of rank s's pld_matmul_reduce_scatter on
 * this lane (into ann) and checks that it is this call's: the same block
 * count, row block and N; else PLD_ERR_MISMATCH, before any slot is
 * read. */
static int check_announce(pld_core k, const char *fn, pld_window sig, int32_t p,
                          int32_t lane, int32_t s, int64_t mb, int64_t n,
                          int32_t *ann) {
  struct pld__core *core = k.p;
  if (pld_wait(k, sig, PLD_AT(cell(p, lane, CELL_ANNOUNCE(p, s, ANN_BLOCKS))),
               1, PLD_WAIT_GE))
    return core->status;
  for (int w = 0; w < ANN_WORDS; w++)
    ann[w] = cell_value(core, fn, sig, cell(p, lane, CELL_ANNOUNCE(p, s, w)));
  if (core->status)
    return core->status;
  const int32_t lanes = core->block_num;
  if (ann[ANN_BLOCKS] != lanes)
    return pld__kfail(
        core, PLD_ERR_MISMATCH, fn,
        "rank %d ran pld_matmul_reduce_scatter on %d block%s and this call "
        "runs on %d block%s: launch the products and the sum on the same "
        "number of blocks (lane b of one talks to lane b of the other)",
        (int)s, (int)ann[ANN_BLOCKS], ann[ANN_BLOCKS] == 1 ? "" : "s",
        (int)lanes, lanes == 1 ? "" : "s");
  if (ann[ANN_ROWS] != ann_word(mb) || ann[ANN_COLS] != ann_word(n))
    return pld__kfail(core, PLD_ERR_MISMATCH, fn,
                      "rank %d ran pld_matmul_reduce_scatter on row blocks "
                      "of %d rows and %d columns (its stage's M / P and N), "
                      "and this call expects %lld rows and %lld columns "
                      "(c's): expected identical calls on every rank",
                      (int)s, (int)ann[ANN_ROWS], (int)ann[ANN_COLS],
                      (long long)mb, (long long)n);
  return PLD_OK;
}

/* c rows [r0, r0 + mr) cols [c0, c0 + nr) = slot 0 + slot 1 + ... +
 * slot p-1 of those rows (slot s: the rows of rank s's products, from s
 * mb on), added in rank order. */
static void sum_piece(pld_core k, pld_tensor slots, pld_tensor c, int32_t p,
                      int64_t mb, int64_t r0, int64_t c0, int32_t mr,
                      int32_t nr) {
  pld_tile *acc = pld_load(k, slots, r0, c0, mr, nr);
  for (int32_t s = 1; s < p; s++) {
    pld_tile *t = pld_load(k, slots, s * mb + r0, c0, mr, nr);
    pld_add(k, acc, acc, t);
    pld_tile_free(k, t);
  }
  pld_store(k, acc, c, r0, c0);
  pld_tile_free(k, acc);
}

int pld_matmul_reduce_scatter_sum(pld_core k, pld_window stage, pld_tensor c,
                                  pld_window sig) {
  struct pld__core *core = k.p;
  const char *fn = "pld_matmul_reduce_scatter_sum";
  if (check_core(core, fn, PLD_CORE_VECTOR) ||
      check_param(core, fn, "stage", stage.p, 1, 0) ||
      check_param(core, fn, "c", c.p, 0, 1) ||
      check_sig(core, fn, sig.p, stage.p, "stage") ||
      check_dtype(core, fn, "stage", stage.p, PLD_FP32, 0) ||
      check_dtype(core, fn, "c", c.p, PLD_FP32, 0))
    return core->status;
  const int32_t p = sig.p->comm->nranks, me = sig.p->comm->rank;
  const int64_t mb = pld__tensor_rows(c.p), n = pld__tensor_cols(c.p);
  if (check_dim(core, fn, "stage", stage.p, "rows", pld__tensor_rows(stage.p),
                p * mb, "P * c's rows, P the ranks of sig's domain") ||
      check_dim(core, fn, "stage", stage.p, "columns",
                pld__tensor_cols(stage.p), n, "c's columns, N"))
    return core->status;
  if (p > PLD_FUSED_MAX_RANKS)
    return pld__kfail(core, PLD_ERR_ARG, fn,
                      "sig: a domain of %d ranks; expected at most %d", (int)p,
                      PLD_FUSED_MAX_RANKS);
  if (reserve(core, fn, 2, (const pld_dtype[]){PLD_FP32, PLD_FP32},
              (const int32_t[]){min32(mb, TILE), min32(mb, TILE)},
              (const int32_t[]){min32(n, TILE), min32(n, TILE)}))
    return core->status;
  const int32_t lane = core->block_idx, lanes = core->block_num;
  const int64_t lo = mb * lane / lanes, hi = mb * (lane + 1) / lanes;
  const pld_tensor slots = pld_local(stage);
  int32_t ann[PLD_FUSED_MAX_RANKS][ANN_WORDS];
  for (int32_t s = 0; s < p && !core->status; s++)
    check_announce(k, fn, sig, p, lane, s, mb, n, ann[s]);
  int32_t tiles = 0;
  /* The products' C tiles in the order the senders send them
   * (product_rows'), each summed in pieces of TILE x TILE. */
  for (int64_t g0 = lo; g0 < hi && !core->status; g0 += ROW_TILES * TILE)
    for (int64_t n0 = 0; n0 < n && !core->status; n0 += TILE_N)
      for (int64_t r0 = g0; r0 < hi && r0 < g0 + ROW_TILES * TILE; r0 += TILE) {
        tiles++;
        for (int32_t s = 0; s < p; s++)
          pld_wait(k, sig, PLD_AT(cell(p, lane, CELL_COUNT(p, s))), tiles,
                   PLD_WAIT_GE);
        for (int64_t c0 = n0; c0 < n && c0 < n0 + TILE_N; c0 += TILE)
          sum_piece(k, slots, c, p, mb, r0, c0, min32(hi - r0, TILE),
                    min32(n - c0, TILE));
      }
  if (core->status)
    return core->status;
  int32_t got[PLD_FUSED_MAX_RANKS];
  for (int32_t s = 0; s < p; s++)
    got[s] = tiles;
  return lane_end(k, sig, me, p, lane, got, (const int32_t(*)[ANN_WORDS])ann);
}
