/* comm/rma.c: remote loads and stores of tiles; puts and gets of tensor
 * regions in chunks the size of staging tiles. */
#include <string.h>

#include "comm/comm.h"
#include "core/alloc.h"
#include "core/timeline.h"
#include "pld/rma.h"
#include "tile/tile.h"

/* Bytes into a window buffer of (row, col) of a window view. */
static size_t win_at(const struct pld__tensor *w, int64_t row, int64_t col) {
  size_t es = pld_dtype_size(w->dtype);
  return w->win_offset +
         ((size_t)row * (size_t)pld__tensor_cols(w) + (size_t)col) * es;
}

static int fabric_failed(struct pld__core *c, const char *fn, int st) {
  return pld__kfail(c, st, fn, "%s", pld_last_error());
}

/* A signal that follows the last write of a move, fused with it where
 * the fabric can (put_signal): the cell (offset in buffer buf) of the
 * peer, its value and op.  done is set once it was sent. */
struct fused {
  const struct pld__tensor *w; /* its window */
  int buf;
  size_t off;
  int32_t value;
  pld_notify_op op;
  int done;
};

/* The last write of a move with its signal (sig) in one fabric call. */
static int put_signal(struct pld__core *c, const char *fn,
                      const struct pld__tensor *w, int world, size_t off,
                      const void *src, size_t n, const struct fused *sig) {
  struct pld__fabric *f = c->env->fabric;
  pld__comm_now.fn = fn;
  pld__comm_now.sig = sig->w;
  return f->ops->put_signal(f, w->win_buf, world, off, src, n, sig->buf,
                            sig->off, sig->value, sig->op);
}

/* Columns and rows of a tensor seen as a matrix, as pld__tensor_cols and
 * pld__tensor_rows count them; here inline, since every put and get asks
 * several times and a 4 KiB copy takes only about 40 ns. */
static inline int64_t cols_of(const struct pld__tensor *t) {
  return t->shape[t->ndim - 1];
}
static inline int64_t rows_of(const struct pld__tensor *t) {
  int64_t r = 1;
  for (int i = 0; i + 1 < t->ndim; i++)
    r *= t->shape[i];
  return r;
}

/* Whether rows x cols at (row, col) lie inside t: pld__region_check's
 * test, which is called (for its message) only when this fails. */
static inline int in_region(const struct pld__tensor *t, int64_t row,
                            int64_t col, int64_t rows, int64_t cols) {
  int64_t trows = rows_of(t), tcols = cols_of(t);
  return !(rows <= 0 || cols <= 0 || row < 0 || col < 0 || row > trows - rows ||
           col > tcols - cols);
}

/* Moves rows x cols elements between local memory (row stride `stride`
 * bytes) and peer's copy of window w at (row, col): a write (put != 0,
 * accumulating with PLD_ATOMIC_ADD) or a read.  Whole rows on both sides
 * go as one transfer.  A plain write's last row carries sig's signal, if
 * given.  later: plain writes and reads may complete at the next flush
 * (local stays as it is until then). */
static int move_rows(struct pld__core *c, const char *fn, int put,
                     const struct pld__tensor *w, int world, int64_t row,
                     int64_t col, int64_t rows, int64_t cols,
                     unsigned char *local, size_t stride, pld_atomic atomic,
                     struct fused *sig, int later) {
  struct pld__fabric *f = c->env->fabric;
  const size_t es = pld_dtype_size(w->dtype);
  const int64_t wcols = cols_of(w);
  const size_t wstride = (size_t)wcols * es;
  /* A store into a collectives' signal view is refused (comm/uses.c). */
  if (put && pld__cell_use(c, fn, w, win_at(w, row, col),
                           (size_t)(rows - 1) * wstride + (size_t)cols * es,
                           PLD__USE_STORE, 0, NULL))
    return c->status;
  if (pld__race_on()) {
    int st =
        pld__race_access(!put                       ? PLD__RACE_READ
                         : atomic == PLD_ATOMIC_ADD ? PLD__RACE_ATOMIC
                                                    : PLD__RACE_WRITE,
                         fn, w->name, w->win_buf, world, win_at(w, row, col),
                         (size_t)cols * es, (size_t)rows, wstride);
    if (st)
      return fabric_failed(c, fn, st);
  }
  if (stride == (size_t)cols * es && cols == wcols) {
    cols *= rows;
    rows = 1;
  }
  size_t off = w->win_offset + ((size_t)row * (size_t)wcols + (size_t)col) * es;
  const size_t len = (size_t)cols * es;
  for (int64_t r = 0; r < rows; r++, off += wstride) {
    unsigned char *l = local + (size_t)r * stride;
    int last_plain = put && atomic != PLD_ATOMIC_ADD && sig && r == rows - 1;
    int st = !put ? (later ? f->ops->read_later
                           : f->ops->read)(f, w->win_buf, world, off, l, len)
             : atomic == PLD_ATOMIC_ADD
                 ? f->ops->accumulate(f, w->win_buf, world, off, l,
                                      (size_t)cols, w->dtype)
             : last_plain ? put_signal(c, fn, w, world, off, l, len, sig)
                          : (later ? f->ops->write_later : f->ops->write)(
                                f, w->win_buf, world, off, l, len);
    if (st)
      return fabric_failed(c, fn, st);
    if (last_plain) {
      sig->done = 1;
      atomic_fetch_add_explicit(&c->env->watch->progress, 1,
                                memory_order_relaxed);
    }
  }
  return PLD_OK;
}

/* The span of a transfer (sub: PLD__TR_*) of n bytes with peer of window
 * w, begun if anything observes it: returns whether it was. */
static int rma_begin(struct pld__tev *e, int sub, const struct pld__tensor *w,
                     int32_t peer, int64_t n) {
  pld__obs_group_begin();
  if (!pld__observed(PLD__TEV_RMA))
    return 0;
  pld__tev_init(e, PLD__TEV_RMA, sub, w->name);
  e->c = peer;
  e->x = n;
  pld__obs_begin(e);
  return 1;
}

/* The transfer ends (its span, if observed): its rows were one transfer
 * for the timing model. */
static void rma_end(struct pld__tev *e, int observed) {
  pld__obs_group_end();
  if (observed)
    pld__obs_end(e);
}

/* A remote load or store of a tile through move_rows: rows [row, row +
 * t->rows) of peer's copy of w, or with idx (checked) the rows it names,
 * entries naming consecutive rows as one move; a negative entry names no
 * row: a load zero-fills that row of t, a store skips it.  Rows go in
 * index order, so of two plain stores to one row the later lands. */
static int tile_rows(struct pld__core *c, const char *fn, int put,
                     const struct pld__tensor *w, int32_t peer, int64_t row,
                     int64_t col, const pld_tile *t, pld_atomic atomic,
                     const pld_tile *idx) {
  struct pld__tev e;
  const size_t len = (size_t)t->cols * pld_dtype_size(t->dtype);
  const int sub = idx ? (put ? PLD__TR_RSTORE_ROWS : PLD__TR_RLOAD_ROWS)
                      : (put ? PLD__TR_RSTORE : PLD__TR_RLOAD);
  int observed = rma_begin(&e, sub, w, peer, (int64_t)t->rows * (int64_t)len);
  const int world = w->comm->members[peer];
  int st = idx ? PLD_OK
               : move_rows(c, fn, put, w, world, row, col, t->rows, t->cols,
                           t->data, t->row_bytes, atomic, NULL, 0);
  for (int32_t i = 0, m; idx && i < t->rows && !st; i += m) {
    m = pld__rows_run(idx, i, t->rows);
    const int32_t r = pld__rows_index(idx, i);
    unsigned char *l = pld__run_ptr(t, (size_t)i);
    if (r >= 0)
      st = move_rows(c, fn, put, w, world, r, col, m, t->cols, l, t->row_bytes,
                     atomic, NULL, 0);
    else if (!put)
      memset(l, 0, len);
  }
  rma_end(&e, observed);
  return st;
}

pld_tile *pld_remote_load(pld_core k, pld_window src, int32_t peer, int64_t row,
                          int64_t col, int32_t rows, int32_t cols) {
  struct pld__core *c = k.p;
  const char *fn = "pld_remote_load";
  if (pld__win_check(c, fn, src, peer) ||
      pld__region_check(c, fn, src.p, peer, NULL, row, col, rows, cols))
    return NULL;
  pld_tile *t = pld__tile_alloc(c, fn, src.p->dtype, rows, cols);
  if (!t)
    return NULL;
  if (tile_rows(c, fn, 0, src.p, peer, row, col, t, PLD_ATOMIC_NONE, NULL)) {
    pld_tile_free(k, t);
    return NULL;
  }
  return t;
}

static int check_dtypes(struct pld__core *c, const char *fn, int put,
                        const struct pld__tensor *w, int32_t peer,
                        pld_dtype dtype, const struct pld__tensor *t);

int pld_remote_load_into(pld_core k, pld_tile *dst, pld_window src,
                         int32_t peer, int64_t row, int64_t col) {
  struct pld__core *c = k.p;
  const char *fn = "pld_remote_load_into";
  int st;
  if ((st = pld__win_check(c, fn, src, peer)) ||
      (st = pld__tile_check(c, fn, "dst", dst)) ||
      (st = check_dtypes(c, fn, 0, src.p, peer, dst->dtype, NULL)) ||
      (st = pld__region_check(c, fn, src.p, peer, NULL, row, col, dst->rows,
                              dst->cols)))
    return st;
  return tile_rows(c, fn, 0, src.p, peer, row, col, dst, PLD_ATOMIC_NONE, NULL);
}

/* Both sides of a transfer hold the same dtype: a tile (t NULL) stored
 * into window w, or local tensor t put into (or got from) peer's w. */
static int check_dtypes(struct pld__core *c, const char *fn, int put,
                        const struct pld__tensor *w, int32_t peer,
                        pld_dtype dtype, const struct pld__tensor *t) {
  if (w->dtype == dtype)
    return PLD_OK;
  char ws[160], ts[160];
  if (!t) {
    pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
    return pld__kfail(c, PLD_ERR_ARG, fn, "tile is %s, %s is %s",
                      pld_dtype_name(dtype), ws, pld_dtype_name(w->dtype));
  }
  pld__describe(ws, sizeof ws, w, peer, NULL);
  pld__describe(ts, sizeof ts, t, PLD__NO_PEER, put ? "source" : "destination");
  return pld__kfail(c, PLD_ERR_ARG, fn, "%s is %s but %s is %s", put ? ts : ws,
                    pld_dtype_name(put ? dtype : w->dtype), put ? ws : ts,
                    pld_dtype_name(put ? w->dtype : dtype));
}

int pld_remote_store(pld_core k, const pld_tile *t, pld_window dst,
                     int32_t peer, int64_t row, int64_t col,
                     pld_atomic atomic) {
  struct pld__core *c = k.p;
  const char *fn = "pld_remote_store";
  int st = pld__win_check(c, fn, dst, peer);
  if (st)
    return st;
  if (!t)
    return pld__kfail(c, PLD_ERR_ARG, fn, "t: expected a tile, got NULL");
  if ((st = check_dtypes(c, fn, 1, dst.p, peer, t->dtype, NULL)) ||
      (st = pld__atomic_check(c, fn, dst.p->dtype, atomic)) ||
      (st = pld__region_check(c, fn, dst.p, peer, NULL, row, col, t->rows,
                              t->cols)))
    return st;
  return tile_rows(c, fn, 1, dst.p, peer, row, col, t, atomic, NULL);
}

/* ---- rows by index ------------------------------------------------------ */

/* The n rows idx names and the columns [col, col + cols) lie inside
 * peer's view of w: the message, as pld__region_check's, names the peer,
 * the window and its shape, and the first index position outside with
 * its value (or the columns). */
static int rows_region_check(struct pld__core *c, const char *fn,
                             const struct pld__tensor *w, int32_t peer,
                             const pld_tile *idx, int32_t n, int64_t col,
                             int32_t cols) {
  int32_t bad;
  if (pld__rows_fit(w, idx, n, col, cols, &bad))
    return PLD_OK;
  char ts[128], what[160], outside[96];
  pld__tensor_str(ts, sizeof ts, w);
  pld__describe(what, sizeof what, w, peer, NULL);
  if (bad < 0)
    pld__catf(outside, sizeof outside, "cols [%lld, %lld)", (long long)col,
              pld__region_end(col, cols));
  else
    pld__catf(outside, sizeof outside, "row idx[%d] = %d", (int)bad,
              (int)pld__rows_index(idx, bad));
  return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                    "%s: %s outside %s (a matrix of %lld x %lld%s)", what,
                    outside, ts, (long long)rows_of(w), (long long)cols_of(w),
                    bad < 0 ? "" : "; a negative index names no row");
}

/* The checks of a remote load or store of rows by index, in the order
 * pld_remote_load_into and pld_remote_store make theirs, then the index
 * tile and every entry. */
static int rows_check(struct pld__core *c, const char *fn, int put,
                      pld_window w, int32_t peer, const pld_tile *t,
                      const pld_tile *idx, int64_t col, pld_atomic atomic) {
  int st;
  if ((st = pld__win_check(c, fn, w, peer)) ||
      (st = pld__tile_check(c, fn, put ? "t" : "dst", t)) ||
      (st = check_dtypes(c, fn, put, w.p, peer, t->dtype, NULL)) ||
      (put && (st = pld__atomic_check(c, fn, w.p->dtype, atomic))) ||
      (st = pld__rows_index_check(c, fn, idx, t->rows)))
    return st;
  return rows_region_check(c, fn, w.p, peer, idx, t->rows, col, t->cols);
}

int pld_remote_load_rows(pld_core k, pld_tile *dst, pld_window src,
                         int32_t peer, const pld_tile *idx, int64_t col) {
  const char *fn = "pld_remote_load_rows";
  int st = rows_check(k.p, fn, 0, src, peer, dst, idx, col, PLD_ATOMIC_NONE);
  return st ? st
            : tile_rows(k.p, fn, 0, src.p, peer, 0, col, dst, PLD_ATOMIC_NONE,
                        idx);
}

int pld_remote_store_rows(pld_core k, const pld_tile *t, pld_window dst,
                          int32_t peer, const pld_tile *idx, int64_t col,
                          pld_atomic atomic) {
  const char *fn = "pld_remote_store_rows";
  int st = rows_check(k.p, fn, 1, dst, peer, t, idx, col, atomic);
  return st ? st : tile_rows(k.p, fn, 1, dst.p, peer, 0, col, t, atomic, idx);
}

/* ---- put / get ----------------------------------------------------------- */

/* A staging tile holds at most this many bytes by default. */
#define STAGE_BYTES ((size_t)64 * 1024)

/* A notify that follows a put's data. */
struct then_notify {
  pld_window sig;
  int n;
  const int64_t *idx;
  int32_t value;
  pld_notify_op op;
};

/* Staging tiles the kernel gave (pld_put_tiles, pld_get_tiles). */
struct staging {
  pld_tile *tile[2];
};

/* Whether a and b have one shape, leading dimensions of size 1 aside. */
static int same_layout(const struct pld__tensor *a,
                       const struct pld__tensor *b) {
  int i = 0, j = 0;
  while (i < a->ndim - 1 && a->shape[i] == 1)
    i++;
  while (j < b->ndim - 1 && b->shape[j] == 1)
    j++;
  if (a->ndim - i != b->ndim - j)
    return 0;
  for (; i < a->ndim; i++, j++)
    if (a->shape[i] != b->shape[j])
      return 0;
  return 1;
}

/* The chunk shape of a transfer of rows x cols elements of es bytes: the
 * caller's (0 for a default), the staging tiles' if given, else whole rows
 * of up to STAGE_BYTES (or STAGE_BYTES pieces of a longer row); never
 * more than the region. */
static int chunk_shape(struct pld__core *c, const char *fn, const pld_xfer *o,
                       const struct staging *sg, size_t es, int64_t rows,
                       int64_t cols, int64_t *crows, int64_t *ccols) {
  if (o->chunk_rows < 0 || o->chunk_cols < 0)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "chunk shape: expected rows and cols >= 0 (0: the "
                      "default), got [%d, %d]",
                      (int)o->chunk_rows, (int)o->chunk_cols);
  int64_t cr = o->chunk_rows, cc = o->chunk_cols;
  if (sg) {
    const pld_tile *t = sg->tile[0];
    if ((cr && cr != t->rows) || (cc && cc != t->cols))
      return pld__kfail(c, PLD_ERR_ARG, fn,
                        "chunk shape [%d, %d] is not the staging tiles' "
                        "[%d, %d]",
                        (int)o->chunk_rows, (int)o->chunk_cols, (int)t->rows,
                        (int)t->cols);
    cr = t->rows;
    cc = t->cols;
  }
  /* A region of at most STAGE_BYTES is one chunk: no division (two
   * 64-bit divisions are a noticeable part of a small put). */
  if (!cc && !cr && (size_t)rows * (size_t)cols * es <= STAGE_BYTES) {
    *crows = rows;
    *ccols = cols;
    return PLD_OK;
  }
  if (!cc)
    cc = (size_t)cols * es > STAGE_BYTES ? (int64_t)(STAGE_BYTES / es) : cols;
  if (!cr)
    cr = (int64_t)(STAGE_BYTES / ((size_t)(cc < cols ? cc : cols) * es));
  *crows = cr < rows ? cr : rows;
  *ccols = cc < cols ? cc : cols;
  if (*crows < 1)
    *crows = 1;
  return PLD_OK;
}

/* The kernel's staging tiles: live, of the data's dtype, one shape. */
static int check_staging(struct pld__core *c, const char *fn,
                         const struct staging *sg, pld_dtype dt) {
  const char *names[2] = {"ping", "pong"};
  for (int i = 0; i < 2; i++) {
    const pld_tile *t = sg->tile[i];
    if (i == 1 && !t)
      break;
    int st = pld__tile_check(c, fn, names[i], t);
    if (st)
      return st;
    if (t->dtype != dt || t->rows != sg->tile[0]->rows ||
        t->cols != sg->tile[0]->cols) {
      char ts[64], ps[64];
      pld__tile_str(ts, sizeof ts, t);
      pld__tile_str(ps, sizeof ps, sg->tile[0]);
      return pld__kfail(
          c, PLD_ERR_ARG, fn, "%s is %s: expected a tile of %s%s%s", names[i],
          ts, pld_dtype_name(dt), i ? " of ping's shape " : "", i ? ps : "");
    }
  }
  if (sg->tile[1] == sg->tile[0])
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "ping and pong are one tile: give two, or pong NULL");
  return PLD_OK;
}

/* Copies rows of len bytes between strided buffers. */
static void copy_block(unsigned char *dst, size_t dstride,
                       const unsigned char *src, size_t sstride, int64_t rows,
                       size_t len) {
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + (size_t)r * dstride, src + (size_t)r * sstride, len);
}

/* Whether the staging tiles of a transfer (crows x ccols elements of es
 * bytes, two if pipelined) fit this core's empty tile memory: then the
 * reservation needs no doing (it costs a small put a sixth of its
 * time). */
static inline int stage_fits_empty(const struct pld__core *c, const pld_xfer *o,
                                   size_t es, int64_t crows, int64_t ccols) {
  return pld__tiles_fit_empty(c, o->pipelined ? 2 : 1, crows, ccols, es);
}

/* The failures of rma_transfer's checks, composed out of its way: a put of
 * 4 KiB takes about 40 ns, and the message buffers of every refusal in
 * its frame cost it more than the checks themselves. */
static int __attribute__((noinline, cold))
refuse_domains(struct pld__core *c, const char *fn, const struct pld__tensor *w,
               const struct pld__tensor *sig, int32_t peer) {
  char ws[160], ss[160];
  pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
  pld__describe(ss, sizeof ss, sig, PLD__NO_PEER, NULL);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "peer %d of %s is world rank %d, but of %s world rank "
                    "%d: the data and the signal must share the domain",
                    (int)peer, ws, w->comm->members[peer], ss,
                    sig->comm->members[peer]);
}

static int __attribute__((noinline, cold))
refuse_local(struct pld__core *c, const char *fn, int put,
             const struct pld__tensor *loc, pld_atomic atomic) {
  if (!loc || !loc->data || (loc->flags & PLD__T_INVALID))
    return pld__kfail(c, PLD_ERR_ARG, fn, "%s: expected a tensor with data",
                      put ? "src" : "dst");
  if (!put && loc->dir == PLD_DIR_IN)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "dst: tensor '%s' is an In parameter: only Out and "
                      "InOut tensors can be written",
                      loc->name ? loc->name : "?");
  (void)atomic;
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "atomic: a get cannot accumulate; use PLD_ATOMIC_NONE");
}

static int __attribute__((noinline, cold))
refuse_shape(struct pld__core *c, const char *fn, int put,
             const struct pld__tensor *loc, const struct pld__tensor *win,
             int32_t peer) {
  char ls[160], ws[160], lt[128], wt[128];
  pld__describe(ls, sizeof ls, loc, PLD__NO_PEER,
                put ? "source" : "destination");
  pld__describe(ws, sizeof ws, win, peer, NULL);
  pld__tensor_str(lt, sizeof lt, loc);
  pld__tensor_str(wt, sizeof wt, win);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "%s is %s but %s is %s: a whole-tensor %s needs one "
                    "shape on both sides (a pld_xfer region moves part of "
                    "one)",
                    put ? ls : ws, put ? lt : wt, put ? ws : ls, put ? wt : lt,
                    put ? "put" : "get");
}

/* A put (local tensor -> peer's window) or a get (peer's window -> local
 * tensor).  The transfer is cut in chunks the size of a staging tile.
 * Without the kernel's tiles (sg NULL) it reserves one such tile in this
 * core's tile memory (two when pipelined), so it needs the tile memory it
 * needs on the hardware and fails the same way when there is none; the
 * simulator then moves each chunk's bytes once, directly, rather than
 * copying them through the tile a second time, which would only halve the
 * bandwidth without changing what any core can observe.  With the
 * kernel's tiles, every chunk goes through one of them, in turn. */
static int rma_transfer(pld_core k, const char *fn, int put, pld_tensor loc,
                        pld_window win, int32_t peer, const pld_xfer *opt,
                        const struct then_notify *nt,
                        const struct staging *sg) {
  struct pld__core *c = k.p;
  int st = pld__win_check(c, fn, win, peer);
  if (st)
    return st;
  /* The notify is checked before any byte moves: a put whose notify
   * cannot be delivered does not happen.  Its peer is the same rank as
   * the data's, so both windows' domains must give it one world rank. */
  size_t sig_off = 0;
  if (nt && (st = pld__notify_check(c, fn, nt->sig, peer, nt->n, nt->idx,
                                    nt->op, &sig_off)))
    return st;
  if (nt && nt->sig.p->comm->members[peer] != win.p->comm->members[peer])
    return refuse_domains(c, fn, win.p, nt->sig.p, peer);
  static const pld_xfer whole; /* no pld_xfer: all zero */
  const pld_xfer *o = opt ? opt : &whole;
  if (!loc.p || !loc.p->data || (loc.p->flags & PLD__T_INVALID) ||
      (!put && (loc.p->dir == PLD_DIR_IN || o->atomic != PLD_ATOMIC_NONE)))
    return refuse_local(c, fn, put, loc.p, o->atomic);
  if (put && o->atomic != PLD_ATOMIC_NONE &&
      (st = pld__atomic_check(c, fn, win.p->dtype, o->atomic)))
    return st;
  const struct pld__tensor *src = put ? loc.p : win.p;
  const char *role = put ? "source" : "destination";
  if (win.p->dtype != loc.p->dtype &&
      (st = check_dtypes(c, fn, put, win.p, peer, loc.p->dtype, loc.p)))
    return st;
  /* The whole tensor (no pld_xfer): one shape on both sides. */
  if (!opt && !same_layout(loc.p, win.p))
    return refuse_shape(c, fn, put, loc.p, win.p, peer);
  /* 0 rows: all of the source's; 0 columns: all of its columns. */
  int64_t rows = o->rows ? o->rows : rows_of(src);
  int64_t cols = o->cols ? o->cols : cols_of(src);
  int64_t lrow = put ? o->src_row : o->dst_row,
          lcol = put ? o->src_col : o->dst_col;
  int64_t wrow = put ? o->dst_row : o->src_row,
          wcol = put ? o->dst_col : o->src_col;
  size_t es = pld_dtype_size(src->dtype);
  if ((!in_region(loc.p, lrow, lcol, rows, cols) &&
       (st = pld__region_check(c, fn, loc.p, PLD__NO_PEER, role, lrow, lcol,
                               rows, cols))) ||
      (!in_region(win.p, wrow, wcol, rows, cols) &&
       (st = pld__region_check(c, fn, win.p, peer, NULL, wrow, wcol, rows,
                               cols))) ||
      (sg && (st = check_staging(c, fn, sg, src->dtype))) ||
      /* the local side may be this rank's copy of a window */
      (st = pld__tensor_race(c, fn, put ? PLD__RACE_READ : PLD__RACE_WRITE,
                             loc.p, lrow, lcol, (size_t)cols * es,
                             (size_t)rows)))
    return st;

  int64_t crows = 1, ccols = 1;
  if ((st = chunk_shape(c, fn, o, sg, es, rows, cols, &crows, &ccols)))
    return st;
  pld_tile *stage[2] = {NULL, NULL};
  for (int i = 0; !sg && !stage_fits_empty(c, o, es, crows, ccols) &&
                  i < (o->pipelined ? 2 : 1);
       i++)
    if (!(stage[i] = pld__tile_alloc(c, fn, src->dtype, (int32_t)crows,
                                     (int32_t)ccols))) {
      pld_tile_free(k, stage[0]);
      return c->status;
    }
  int world = win.p->comm->members[peer];
  size_t stride = (size_t)cols_of(loc.p) * es;
  struct pld__tev e;
  int observed = rma_begin(&e,
                           sg ? (put ? PLD__TR_PUT_TILES : PLD__TR_GET_TILES)
                              : (put ? PLD__TR_PUT : PLD__TR_GET),
                           win.p, peer, rows * cols * (int64_t)es);
  int turn = 0;
  /* A put's notify rides on its last write (put_signal). */
  struct fused fz = {
      nt ? nt->sig.p : NULL, nt ? nt->sig.p->win_buf : -1, sig_off,
      nt ? nt->value : 0,    nt ? nt->op : PLD_NOTIFY_ADD, 0};
  /* Straight from (into) the tensor, the staging tiles only reserved:
   * the chunks would land where the whole region does, so it moves as one
   * (one transfer where the fabric crosses a network), nothing waiting
   * for a copy. */
  unsigned char *lbase = (unsigned char *)loc.p->data +
                         ((size_t)lrow * stride + (size_t)lcol * es);
  if (!sg)
    st = move_rows(c, fn, put, win.p, world, wrow, wcol, rows, cols, lbase,
                   stride, o->atomic, nt && put ? &fz : NULL, 1);
  for (int64_t r = 0; sg && r < rows && !st; r += crows)
    for (int64_t q = 0; q < cols && !st; q += ccols) {
      int64_t nr = rows - r < crows ? rows - r : crows;
      int64_t nc = cols - q < ccols ? cols - q : ccols;
      struct fused *last =
          nt && put && r + crows >= rows && q + ccols >= cols ? &fz : NULL;
      unsigned char *l = lbase + (size_t)r * stride + (size_t)q * es;
      pld_tile *t = sg->tile[turn];
      turn = sg->tile[1] ? !turn : 0;
      if (put)
        copy_block(t->data, t->row_bytes, l, stride, nr, (size_t)nc * es);
      st = move_rows(c, fn, put, win.p, world, wrow + r, wcol + q, nr, nc,
                     t->data, t->row_bytes, o->atomic, last, 0);
      if (!st && !put)
        copy_block(l, stride, t->data, t->row_bytes, nr, (size_t)nc * es);
    }
  pld_tile_free(k, stage[1]);
  pld_tile_free(k, stage[0]);
  if (!st && nt && !fz.done)
    st = pld__signal_cell(c, fn, nt->sig.p, peer, sig_off, nt->value, nt->op);
  /* What went later is done before the call returns (a fused signal did
   * that already). */
  if (!st && !sg && !fz.done &&
      (st = c->env->fabric->ops->flush(c->env->fabric, world)))
    st = fabric_failed(c, fn, st);
  rma_end(&e, observed);
  return st;
}

/* A plain put or get (no notify, no staging tiles of the kernel's) in the
 * common case, with every check of rma_transfer made and nothing else: the
 * region is at most one staging tile and contiguous on both sides (so it
 * moves in one fabric call), its staging tile fits the core's empty tile
 * memory, neither the race detector nor the trace nor the debug log is
 * on (the timing model's records, through the wrapped fabric, are those
 * rma_transfer makes: one transfer, then its flush).  Returns 1 with *st
 * set when it did the transfer, 0 when the case is not the
 * common one or a check fails: rma_transfer then does it, or composes the
 * failure.  (rma_transfer alone makes a 4 KiB put cost as much again as its
 * copy: about 500 instructions of general cases, calls and spills.) */
static inline int plain_transfer(struct pld__core *c, const char *fn, int put,
                                 pld_tensor loc, pld_window win, int32_t peer,
                                 const pld_xfer *opt, int *st) {
  static const pld_xfer whole;
  const struct pld__tensor *w = win.p, *l = loc.p;
  const pld_xfer *o = opt ? opt : &whole;
  if (c->status || !w || !(w->flags & PLD__T_WINDOW) || !w->comm || !c->env ||
      !c->env->fabric || peer < 0 || peer >= w->comm->nranks || !l ||
      !l->data || (l->flags & PLD__T_INVALID) ||
      (!put && l->dir == PLD_DIR_IN) || o->atomic != PLD_ATOMIC_NONE ||
      w->dtype != l->dtype || o->chunk_rows || o->chunk_cols ||
      pld__race_on() || pld__observed(PLD__TEV_RMA) ||
      (!opt && !same_layout(l, w)))
    return 0;
  const struct pld__tensor *src = put ? l : w;
  const int64_t rows = o->rows ? o->rows : rows_of(src);
  const int64_t cols = o->cols ? o->cols : cols_of(src);
  const int64_t lrow = put ? o->src_row : o->dst_row,
                lcol = put ? o->src_col : o->dst_col;
  const int64_t wrow = put ? o->dst_row : o->src_row,
                wcol = put ? o->dst_col : o->src_col;
  if (!in_region(l, lrow, lcol, rows, cols) ||
      !in_region(w, wrow, wcol, rows, cols))
    return 0;
  const size_t es = pld_dtype_size(w->dtype);
  const size_t len = (size_t)rows * (size_t)cols * es;
  const int64_t lcols = cols_of(l), wcols = cols_of(w);
  /* One staging tile, one run on both sides. */
  if (len > STAGE_BYTES || !stage_fits_empty(c, o, es, rows, cols) ||
      (rows > 1 && (cols != lcols || cols != wcols)))
    return 0;
  struct pld__fabric *f = c->env->fabric;
  const int world = w->comm->members[peer];
  const size_t off =
      w->win_offset + ((size_t)wrow * (size_t)wcols + (size_t)wcol) * es;
  unsigned char *at = (unsigned char *)l->data +
                      ((size_t)lrow * (size_t)lcols + (size_t)lcol) * es;
  if (put && pld__cell_use(c, fn, w, off, len, PLD__USE_STORE, 0, NULL)) {
    *st = c->status;
    return 1;
  }
  /* The timing model's records: rma_transfer's, or where the model alone
   * observes and this transfer repeats the last, that counted, the bytes
   * moved by the device's own fabric (the wrapper would only record). */
  const int again =
      pld__obs_model_alone() &&
      pld__obs_xfer_repeats((put ? PLD__TL_PUT : PLD__TL_GET) | PLD__TL_LATER,
                            world, (int64_t)len);
  if (again)
    f = c->env->poll;
  else
    pld__obs_group_begin();
  int r = put ? f->ops->write_later(f, w->win_buf, world, off, at, len)
              : f->ops->read_later(f, w->win_buf, world, off, at, len);
  if (!r)
    r = f->ops->flush(f, world);
  if (!again)
    pld__obs_group_end();
  else if (!r)
    pld__obs_xfer_repeated();
  *st = r ? fabric_failed(c, fn, r) : PLD_OK;
  return 1;
}

int pld_put(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
            const pld_xfer *opt) {
  int st;
  if (plain_transfer(k.p, "pld_put", 1, src, dst, peer, opt, &st))
    return st;
  return rma_transfer(k, "pld_put", 1, src, dst, peer, opt, NULL, NULL);
}

int pld_put_notify(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
                   const pld_xfer *opt, pld_window sig, int n,
                   const int64_t *idx, int32_t value, pld_notify_op op) {
  const struct then_notify nt = {sig, n, idx, value, op};
  return rma_transfer(k, "pld_put_notify", 1, src, dst, peer, opt, &nt, NULL);
}

int pld_get(pld_core k, pld_tensor dst, int32_t peer, pld_window src,
            const pld_xfer *opt) {
  int st;
  if (plain_transfer(k.p, "pld_get", 0, dst, src, peer, opt, &st))
    return st;
  return rma_transfer(k, "pld_get", 0, dst, src, peer, opt, NULL, NULL);
}

int pld_put_tiles(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
                  const pld_xfer *opt, pld_tile *ping, pld_tile *pong) {
  const struct staging sg = {{ping, pong}};
  return rma_transfer(k, "pld_put_tiles", 1, src, dst, peer, opt, NULL, &sg);
}

int pld_get_tiles(pld_core k, pld_tensor dst, int32_t peer, pld_window src,
                  const pld_xfer *opt, pld_tile *ping, pld_tile *pong) {
  const struct staging sg = {{ping, pong}};
  return rma_transfer(k, "pld_get_tiles", 0, dst, src, peer, opt, NULL, &sg);
}
