/* comm/rma.c: remote loads and stores of tiles; puts and gets of tensor
 * regions, staged through tile memory. */
#include <string.h>

#include "comm/comm.h"
#include "pld/rma.h"

/* Bytes into a window buffer of (row, col) of a window view. */
static size_t win_at(const struct pld__tensor *w, int64_t row, int64_t col) {
  size_t es = pld_dtype_size(w->dtype);
  return w->win_offset +
         ((size_t)row * (size_t)pld__tensor_cols(w) + (size_t)col) * es;
}

/* Address of (row, col) of a local tensor. */
static unsigned char *tensor_at(const struct pld__tensor *t, int64_t row,
                                int64_t col) {
  size_t es = pld_dtype_size(t->dtype);
  return (unsigned char *)t->data +
         ((size_t)row * (size_t)pld__tensor_cols(t) + (size_t)col) * es;
}

static int fabric_failed(struct pld__core *c, const char *fn, int st) {
  return pld__kfail(c, st, fn, "%s", pld_last_error());
}

static void peer_str(char *buf, size_t cap, const struct pld__tensor *w,
                     int32_t peer) {
  size_t n = pld__win_str(buf, cap, w);
  pld__catf(buf + n, cap - n, " of peer %d", (int)peer);
}

static int read_rows(struct pld__core *c, const char *fn,
                     const struct pld__tensor *w, int world, int64_t row,
                     int64_t col, int64_t rows, int64_t cols,
                     unsigned char *dst, size_t dst_stride);

pld_tile *pld_remote_load(pld_core k, pld_window src, int32_t peer,
                          int64_t row, int64_t col, int32_t rows,
                          int32_t cols) {
  struct pld__core *c = k.p;
  const char *fn = "pld_remote_load";
  if (pld__win_check(c, fn, src, peer))
    return NULL;
  char what[160];
  peer_str(what, sizeof what, src.p, peer);
  if (pld__region_check(c, fn, src.p, what, row, col, rows, cols))
    return NULL;
  pld_tile *t = pld_tile_new(k, src.p->dtype, rows, cols);
  if (!t)
    return NULL;
  if (read_rows(c, fn, src.p, src.p->comm->members[peer], row, col, rows,
                cols, t->data, t->row_bytes)) {
    pld_tile_free(k, t);
    return NULL;
  }
  return t;
}

static int atomic_dtype_ok(pld_dtype d) {
  return d == PLD_FP32 || d == PLD_FP16 || d == PLD_BF16 || d == PLD_INT32 ||
         d == PLD_INT16 || d == PLD_INT8;
}

/* Writes rows x cols elements, row by row, from local memory (row stride
 * src_stride bytes) to peer's copy of window w at (row, col). */
static int write_rows(struct pld__core *c, const char *fn,
                      const struct pld__tensor *w, int world, int64_t row,
                      int64_t col, int64_t rows, int64_t cols,
                      const unsigned char *src, size_t src_stride,
                      pld_atomic atomic) {
  struct pld__fabric *f = c->env->fabric;
  size_t es = pld_dtype_size(w->dtype);
  /* Whole rows on both sides: one transfer. */
  if (src_stride == (size_t)cols * es && cols == pld__tensor_cols(w)) {
    cols *= rows;
    rows = 1;
  }
  for (int64_t r = 0; r < rows; r++) {
    size_t off = win_at(w, row + r, col);
    const unsigned char *s = src + (size_t)r * src_stride;
    int st = atomic == PLD_ATOMIC_ADD
                 ? f->ops->accumulate(f, w->win_buf, world, off, s,
                                      (size_t)cols, w->dtype)
                 : f->ops->write(f, w->win_buf, world, off, s,
                                 (size_t)cols * es);
    if (st)
      return fabric_failed(c, fn, st);
  }
  return PLD_OK;
}

/* Reads rows x cols elements of peer's copy of window w at (row, col) into
 * local memory of row stride dst_stride. */
static int read_rows(struct pld__core *c, const char *fn,
                     const struct pld__tensor *w, int world, int64_t row,
                     int64_t col, int64_t rows, int64_t cols,
                     unsigned char *dst, size_t dst_stride) {
  struct pld__fabric *f = c->env->fabric;
  size_t es = pld_dtype_size(w->dtype);
  if (dst_stride == (size_t)cols * es && cols == pld__tensor_cols(w)) {
    cols *= rows;
    rows = 1;
  }
  for (int64_t r = 0; r < rows; r++) {
    int st = f->ops->read(f, w->win_buf, world, win_at(w, row + r, col),
                          dst + (size_t)r * dst_stride, (size_t)cols * es);
    if (st)
      return fabric_failed(c, fn, st);
  }
  return PLD_OK;
}

static int check_atomic(struct pld__core *c, const char *fn,
                        const struct pld__tensor *w, pld_atomic atomic) {
  if (atomic != PLD_ATOMIC_NONE && atomic != PLD_ATOMIC_ADD)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "atomic: expected PLD_ATOMIC_NONE or PLD_ATOMIC_ADD, got "
                      "%d",
                      (int)atomic);
  if (atomic == PLD_ATOMIC_ADD && !atomic_dtype_ok(w->dtype))
    return pld__kfail(c, PLD_ERR_UNSUPPORTED, fn,
                      "atomic add on %s: supported for FP32, FP16, BF16, "
                      "INT32, INT16 and INT8",
                      pld_dtype_name(w->dtype));
  return PLD_OK;
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
  if (t->dtype != dst.p->dtype) {
    char ws[128];
    pld__win_str(ws, sizeof ws, dst.p);
    return pld__kfail(c, PLD_ERR_ARG, fn, "tile is %s, %s is %s",
                      pld_dtype_name(t->dtype), ws,
                      pld_dtype_name(dst.p->dtype));
  }
  char what[160];
  peer_str(what, sizeof what, dst.p, peer);
  if ((st = check_atomic(c, fn, dst.p, atomic)) ||
      (st = pld__region_check(c, fn, dst.p, what, row, col, t->rows, t->cols)))
    return st;
  return write_rows(c, fn, dst.p, dst.p->comm->members[peer], row, col,
                    t->rows, t->cols, t->data, t->row_bytes, atomic);
}

/* ---- put / get ----------------------------------------------------------- */

/* The staging chunk: up to this many bytes of tile memory per buffer. */
#define STAGE_BYTES ((size_t)64 * 1024)

struct xfer {
  int64_t src_row, src_col, dst_row, dst_col, rows, cols;
  int32_t chunk_rows, chunk_cols;
  pld_tile *stage[2];
};

/* Resolves the region and checks it against both sides; allocates the
 * staging tiles (two when pipelined), no larger than the region. */
static int xfer_plan(struct pld__core *c, pld_core k, const char *fn,
                     const struct pld__tensor *src, const char *src_what,
                     const struct pld__tensor *dst, const char *dst_what,
                     const pld_xfer *opt, struct xfer *x) {
  pld_xfer o;
  memset(&o, 0, sizeof o);
  if (opt)
    o = *opt;
  memset(x, 0, sizeof *x);
  x->src_row = o.src_row, x->src_col = o.src_col;
  x->dst_row = o.dst_row, x->dst_col = o.dst_col;
  x->rows = o.rows ? o.rows : pld__tensor_rows(src);
  x->cols = o.cols ? o.cols : pld__tensor_cols(src);
  if (src->dtype != dst->dtype)
    return pld__kfail(c, PLD_ERR_ARG, fn, "%s is %s but %s is %s", src_what,
                      pld_dtype_name(src->dtype), dst_what,
                      pld_dtype_name(dst->dtype));
  int st;
  if ((st = pld__region_check(c, fn, src, src_what, x->src_row, x->src_col,
                              x->rows, x->cols)) ||
      (st = pld__region_check(c, fn, dst, dst_what, x->dst_row, x->dst_col,
                              x->rows, x->cols)))
    return st;
  size_t es = pld_dtype_size(src->dtype);
  int64_t cc = x->cols;
  if ((size_t)cc * es > STAGE_BYTES)
    cc = (int64_t)(STAGE_BYTES / es);
  int64_t cr = (int64_t)(STAGE_BYTES / ((size_t)cc * es));
  if (cr > x->rows)
    cr = x->rows;
  x->chunk_rows = (int32_t)cr;
  x->chunk_cols = (int32_t)cc;
  for (int i = 0; i < (o.pipelined ? 2 : 1); i++) {
    x->stage[i] = pld_tile_new(k, src->dtype, x->chunk_rows, x->chunk_cols);
    if (!x->stage[i])
      return c->status;
  }
  if (!x->stage[1])
    x->stage[1] = x->stage[0];
  return PLD_OK;
}

static void xfer_release(pld_core k, struct xfer *x) {
  if (x->stage[1] != x->stage[0])
    pld_tile_free(k, x->stage[1]);
  pld_tile_free(k, x->stage[0]);
}

/* Copies a rows x cols block between local memory and a tile. */
static void stage_copy(unsigned char *dst, size_t dst_stride,
                       const unsigned char *src, size_t src_stride,
                       int64_t rows, size_t row_bytes) {
  if (dst_stride == row_bytes && src_stride == row_bytes) {
    memcpy(dst, src, (size_t)rows * row_bytes);
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + (size_t)r * dst_stride, src + (size_t)r * src_stride,
           row_bytes);
}

/* A put (local tensor -> peer's window) or a get (peer's window -> local
 * tensor), chunk by chunk through the staging tiles. */
static int transfer(pld_core k, const char *fn, int put, pld_tensor loc,
                    pld_window win, int32_t peer, const pld_xfer *opt) {
  struct pld__core *c = k.p;
  int st = pld__win_check(c, fn, win, peer);
  if (st)
    return st;
  const char *lname = loc.p && loc.p->name ? loc.p->name : "?";
  pld_atomic atomic = opt ? opt->atomic : PLD_ATOMIC_NONE;
  if (!loc.p || !loc.p->data || (loc.p->flags & PLD__T_INVALID))
    return pld__kfail(c, PLD_ERR_ARG, fn, "%s: expected a tensor with data",
                      put ? "src" : "dst");
  if (!put && loc.p->dir == PLD_DIR_IN)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "dst: tensor '%s' is an In parameter: only Out and "
                      "InOut tensors can be written",
                      lname);
  if (!put && atomic != PLD_ATOMIC_NONE)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "atomic: a get cannot accumulate; use PLD_ATOMIC_NONE");
  if (put && (st = check_atomic(c, fn, win.p, atomic)))
    return st;
  char wwhat[160], lwhat[96];
  peer_str(wwhat, sizeof wwhat, win.p, peer);
  pld__catf(lwhat, sizeof lwhat, "%s '%s'", put ? "source" : "destination",
            lname);
  struct xfer x;
  if ((st = put ? xfer_plan(c, k, fn, loc.p, lwhat, win.p, wwhat, opt, &x)
                : xfer_plan(c, k, fn, win.p, wwhat, loc.p, lwhat, opt, &x)))
    return st;
  int world = win.p->comm->members[peer];
  size_t es = pld_dtype_size(loc.p->dtype);
  size_t loc_stride = (size_t)pld__tensor_cols(loc.p) * es;
  int64_t lrow = put ? x.src_row : x.dst_row, lcol = put ? x.src_col : x.dst_col;
  int64_t wrow = put ? x.dst_row : x.src_row, wcol = put ? x.dst_col : x.src_col;
  int which = 0;
  for (int64_t r = 0; r < x.rows && !st; r += x.chunk_rows)
    for (int64_t q = 0; q < x.cols && !st; q += x.chunk_cols) {
      int64_t nr = x.rows - r < x.chunk_rows ? x.rows - r : x.chunk_rows;
      int64_t nc = x.cols - q < x.chunk_cols ? x.cols - q : x.chunk_cols;
      pld_tile *t = x.stage[which];
      unsigned char *l = tensor_at(loc.p, lrow + r, lcol + q);
      which ^= 1;
      if (put) {
        stage_copy(t->data, t->row_bytes, l, loc_stride, nr, (size_t)nc * es);
        st = write_rows(c, fn, win.p, world, wrow + r, wcol + q, nr, nc,
                        t->data, t->row_bytes, atomic);
      } else {
        st = read_rows(c, fn, win.p, world, wrow + r, wcol + q, nr, nc,
                       t->data, t->row_bytes);
        if (!st)
          stage_copy(l, loc_stride, t->data, t->row_bytes, nr,
                     (size_t)nc * es);
      }
    }
  xfer_release(k, &x);
  return st;
}

int pld_put(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
            const pld_xfer *opt) {
  return transfer(k, "pld_put", 1, src, dst, peer, opt);
}

int pld_get(pld_core k, pld_tensor dst, int32_t peer, pld_window src,
            const pld_xfer *opt) {
  return transfer(k, "pld_get", 0, dst, src, peer, opt);
}
