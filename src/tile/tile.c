/* tile/tile.c: tile memory (allocation, release), the checks the tile
 * layer shares, fill, and the moves between tensors and tiles. */
#include "tile/tile.h"

#include <string.h>

#include "core/alloc.h"
#include "core/trace.h"
#include "tile/convert.h"
#include "tile/isa.h"

/* Rows are padded to the hardware's 32-byte granule and tiles start on
 * one, as on the chip: tiles pack with no space between them, so whatever
 * fits the hardware's buffer fits here. */

/* ---- checks ------------------------------------------------------------- */

int pld__vector_only_fail(struct pld__core *c, const char *fn) {
  if (c->status)
    return c->status;
  if (c->spec.type == PLD_CORE_CUBE && c->mix)
    return pld__kfail(c, PLD_ERR_LEVEL, fn,
                      "runs on vector cores; the cube part of a mixed kernel "
                      "does matmul and data movement only: call it from a "
                      "vector part (pld_core_type_of)");
  if (c->spec.type == PLD_CORE_CUBE)
    return pld__kfail(c, PLD_ERR_LEVEL, fn,
                      "runs on vector cores (PLD_KERNEL); a cube core "
                      "(PLD_CUBE_KERNEL) does matmul and data movement only");
  return pld__isa_kcheck(c, fn);
}

int pld__isa_kcheck(struct pld__core *c, const char *fn) {
  const char *refusal = pld__isa_refusal();
  return refusal ? pld__kfail(c, PLD_ERR_CONFIG, fn, "%s", refusal) : c->status;
}

size_t pld__tile_str(char *buf, size_t cap, const pld_tile *t) {
  return pld__catf(buf, cap, "%s[%d, %d]", pld_dtype_name(t->dtype),
                   (int)t->rows, (int)t->cols);
}

/* Why t is not a live tile of core c, or NULL if it is one. */
static const char *tile_dead(const struct pld__core *c, const pld_tile *t) {
  if (!t)
    return "expected a tile, got NULL";
  if (!pld__tile_of(c, t))
    return "not a tile of this core (a tile belongs to the kernel block that "
           "allocated it)";
  if (t->block_seq != c->block_seq)
    return "the tile was freed (pld_tile_free) or belongs to an earlier block";
  return NULL;
}

/* Why t is no tile this block may use now, or NULL.  pld__tile_check
 * (tile.h) passes inline exactly when this finds nothing: a rule added
 * here goes there too. */
static const char *tile_problem(const struct pld__core *c, const pld_tile *t) {
  const char *dead = tile_dead(c, t);
  if (dead)
    return dead;
  if (t->in_flight)
    return "a prefetch into the tile is in flight: wait for it "
           "(pld_prefetch_wait) before using the tile";
  return NULL;
}

int pld__tile_check_fail(struct pld__core *c, const char *fn, const char *what,
                         const pld_tile *t) {
  if (c->status)
    return c->status;
  const char *problem = tile_problem(c, t);
  return problem ? pld__kfail(c, PLD_ERR_ARG, fn, "%s: %s", what, problem)
                 : PLD_OK;
}

int pld__tile_compute_fail(struct pld__core *c, const char *fn,
                           const char *what, const pld_tile *t) {
  char s[64];
  pld__tile_str(s, sizeof s, t);
  return pld__kfail(c, PLD_ERR_UNSUPPORTED, fn,
                    "%s is %s: tiles compute on FP32, FP16, BF16, INT32, "
                    "INT16, INT8 and UINT8; %s tiles only move data (load, "
                    "store, fill, remote load and store)",
                    what, s, pld_dtype_name(t->dtype));
}

int pld__tile_check2(struct pld__core *c, const char *fn, const char *wa,
                     const pld_tile *a, const char *wb, const pld_tile *b,
                     int same_dtype) {
  if (pld__tile_compute_check(c, fn, wa, a) ||
      pld__tile_compute_check(c, fn, wb, b))
    return c->status;
  return pld__tile_match(c, fn, wa, a, wb, b, same_dtype);
}

int pld__tile_match_fail(struct pld__core *c, const char *fn, const char *wa,
                         const pld_tile *a, const char *wb, const pld_tile *b) {
  const int shape_ok = a->rows == b->rows && a->cols == b->cols;
  char sa[64], sb[64];
  pld__tile_str(sa, sizeof sa, a);
  pld__tile_str(sb, sizeof sb, b);
  return pld__kfail(c, PLD_ERR_ARG, fn, "%s is %s, %s is %s: %s must match%s",
                    wa, sa, wb, sb, shape_ok ? "dtypes" : "shapes",
                    shape_ok ? " (pld_cast converts)" : "");
}

int pld__tensor_dtype_match(struct pld__core *c, const char *fn,
                            const char *what, const pld_tile *t,
                            const struct pld__tensor *ten) {
  if (t->dtype == ten->dtype)
    return PLD_OK;
  char ts[64], name[160], shape[160];
  pld__tile_str(ts, sizeof ts, t);
  pld__tensor_label(name, sizeof name, ten);
  pld__tensor_str(shape, sizeof shape, ten);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "%s is %s, %s is %s: dtypes must match (pld_cast "
                    "converts tiles)",
                    what, ts, name, shape);
}

static int atomic_dtype_ok(pld_dtype d) {
  return d == PLD_FP32 || d == PLD_FP16 || d == PLD_BF16 || d == PLD_INT32 ||
         d == PLD_INT16 || d == PLD_INT8;
}

int pld__atomic_check(struct pld__core *c, const char *fn, pld_dtype dt,
                      pld_atomic atomic) {
  if (atomic != PLD_ATOMIC_NONE && atomic != PLD_ATOMIC_ADD)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "atomic: expected PLD_ATOMIC_NONE or PLD_ATOMIC_ADD, got "
                      "%d",
                      (int)atomic);
  if (atomic == PLD_ATOMIC_ADD && !atomic_dtype_ok(dt))
    return pld__kfail(c, PLD_ERR_UNSUPPORTED, fn,
                      "atomic add on %s: supported for FP32, FP16, BF16, "
                      "INT32, INT16 and INT8",
                      pld_dtype_name(dt));
  return c->status;
}

int pld__mask_check(struct pld__core *c, const char *fn, const pld_tile *mask,
                    const char *wt, const pld_tile *t) {
  if (pld__tile_check(c, fn, "mask", mask))
    return c->status;
  if (mask->dtype != PLD_BOOL) {
    char sm[64];
    pld__tile_str(sm, sizeof sm, mask);
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "mask is %s: expected a BOOL tile (pld_cmp makes one, "
                      "pld_cast converts)",
                      sm);
  }
  return pld__tile_match(c, fn, "mask", mask, wt, t, 0);
}

size_t pld__tensor_label(char *buf, size_t cap, const struct pld__tensor *t) {
  return t->name ? pld__catf(buf, cap, "tensor '%s'", t->name)
                 : pld__catf(buf, cap, "tensor");
}

size_t pld__tensor_matrix_str(char *buf, size_t cap,
                              const struct pld__tensor *t) {
  char shape[160];
  pld__tensor_str(shape, sizeof shape, t);
  size_t n = pld__tensor_label(buf, cap, t);
  n += pld__catf(buf + n, cap - n, " %s", shape);
  if (t->ndim != 2)
    n += pld__catf(buf + n, cap - n, " (seen as a [%lld, %lld] matrix)",
                   (long long)pld__tensor_rows(t),
                   (long long)pld__tensor_cols(t));
  return n;
}

int pld__tensor_check(struct pld__core *c, const char *fn, pld_tensor t,
                      int writing) {
  if (c->status)
    return c->status;
  if (!t.p)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "tensor: expected a tensor, got a NULL handle");
  const char *problem =
      (t.p->flags & PLD__T_INVALID)
          ? "is the result of a failed call: it has no data"
      : (t.p->flags & PLD__T_TRACE)
          ? "has no data: it is a traced tensor (shape only)"
      : !t.p->data ? "has no data"
      : writing && t.p->dir == PLD_DIR_IN
          ? "is an In parameter: only Out and InOut tensors can be written"
          : NULL;
  if (!problem) /* the tensor is named only for a failure: this runs for
                   every load and store */
    return PLD_OK;
  char name[160];
  pld__tensor_label(name, sizeof name, t.p);
  return pld__kfail(c, PLD_ERR_ARG, fn, "%s %s", name, problem);
}

/* ---- walking a tile's elements ------------------------------------------ */

PLD__ISA_FUNCTION(, pld__fill_elems,
                  (void *dst, const void *elem, size_t esize, size_t n),
                  (dst, elem, esize, n)) {
  switch (esize) {
#define PLD__FILL_CASE(T)                                                      \
  case sizeof(T): {                                                            \
    T v, *d = dst;                                                             \
    memcpy(&v, elem, sizeof v);                                                \
    PLD__VLOOP(T, i, n, d[i] = v;);                                            \
    break;                                                                     \
  }
    PLD__FILL_CASE(uint8_t)
    PLD__FILL_CASE(uint16_t)
    PLD__FILL_CASE(uint32_t)
    PLD__FILL_CASE(uint64_t)
#undef PLD__FILL_CASE
  default:
    break;
  }
}

/* ---- allocation --------------------------------------------------------- */

static size_t offset_end(const pld_tile *t) { return t->offset + t->bytes; }

/* First fit: the lowest offset where `bytes` fit between the live tiles,
 * and the live tile just below it (*below, NULL at offset 0).  Offsets and
 * sizes are multiples of the granule, so every gap starts aligned.
 * Returns 0 if no gap is large enough, with *largest the largest one.
 * There is no gap below the end of c->packed. */
static int find_gap(const struct pld__core *c, size_t bytes, size_t *offset,
                    pld_tile **below, size_t *largest) {
  pld_tile *prev = c->packed;
  size_t pos = prev ? offset_end(prev) : 0;
  *largest = 0;
  for (pld_tile *t = prev ? prev->next : c->live;; t = t->next) {
    const size_t gap = (t ? t->offset : c->spec.capacity) - pos;
    if (gap >= bytes) {
      *offset = pos;
      *below = prev;
      return 1;
    }
    *largest = gap > *largest ? gap : *largest;
    if (!t)
      return 0;
    pos = offset_end(t);
    prev = t;
  }
}

void pld__tile_gaps(const struct pld__core *c, size_t *largest,
                    size_t *second) {
  *largest = *second = 0;
  pld_tile *prev = c->packed;
  size_t pos = prev ? offset_end(prev) : 0;
  for (pld_tile *t = prev ? prev->next : c->live;; t = t->next) {
    const size_t gap = (t ? t->offset : c->spec.capacity) - pos;
    if (gap > *largest) {
      *second = *largest;
      *largest = gap;
    } else if (gap > *second) {
      *second = gap;
    }
    if (!t)
      return;
    pos = offset_end(t);
  }
}

/* A free descriptor: one freed in this block, else the next never used in
 * it.  There is always one when the tile fits: then the free list being
 * empty means every used descriptor holds a live tile, and the live tiles
 * with the new one take a granule each at least, so there are fewer than
 * capacity / granule = tiles_max of them. */
static pld_tile *descriptor_take(struct pld__core *c) {
  pld_tile *t = c->tiles_free;
  if (t) {
    c->tiles_free = t->next;
    return t;
  }
  return &c->tiles[c->tiles_issued++];
}

pld_tile *pld__tile_alloc(struct pld__core *c, const char *fn, pld_dtype dt,
                          int32_t rows, int32_t cols) {
  if (c->status)
    return NULL;
  if ((int)dt < 0 || dt >= PLD_DTYPE_COUNT) {
    pld__kfail(c, PLD_ERR_ARG, fn, "dtype: expected a pld_dtype, got %d",
               (int)dt);
    return NULL;
  }
  if (rows <= 0 || cols <= 0) {
    pld__kfail(c, PLD_ERR_ARG, fn,
               "shape: expected rows > 0 and cols > 0, got [%d, %d]", (int)rows,
               (int)cols);
    return NULL;
  }
  /* At most (2^31 - 1) * 2^33 bytes: no overflow in 64 bits. */
  const uint64_t row_bytes =
      pld__round_up((size_t)cols * pld_dtype_size(dt), PLD__TILE_GRANULE);
  const uint64_t bytes = (uint64_t)rows * row_bytes;
  const size_t free_bytes = c->spec.capacity - c->used;
  size_t offset = 0, largest = 0;
  pld_tile *below = NULL;
  if (bytes > free_bytes ||
      !find_gap(c, (size_t)bytes, &offset, &below, &largest)) {
    char gap[128] = "";
    if (bytes <= free_bytes)
      pld__catf(gap, sizeof gap,
                " (fragmented: a tile needs one contiguous gap; the largest "
                "free gap is %zu bytes)",
                largest);
    pld__kfail(c, PLD_ERR_TILE_MEMORY, fn,
               "tile memory over capacity: %s[%d, %d] tile needs %llu bytes; "
               "%zu of %zu bytes of the %s core %s in use%s",
               pld_dtype_name(dt), (int)rows, (int)cols,
               (unsigned long long)bytes, c->used, c->spec.capacity,
               pld__core_type_name(c->spec.type),
               c->spec.memory ? c->spec.memory : "tile memory", gap);
    return NULL;
  }
  pld_tile *t = descriptor_take(c);
  t->data = c->mem + offset;
  t->dtype = dt;
  t->rows = rows;
  t->cols = cols;
  t->row_bytes = (size_t)row_bytes;
  t->offset = offset;
  t->bytes = (size_t)bytes;
  t->block_seq = c->block_seq;
  t->in_flight = 0;
  t->prev = below;
  t->next = below ? below->next : c->live;
  if (t->next)
    t->next->prev = t;
  *(below ? &below->next : &c->live) = t;
  /* Placed at the end of the packed tiles: they now end with t, or with
   * the tiles t joins them to. */
  if (below == c->packed) {
    c->packed = t;
    while (c->packed->next && c->packed->next->offset == offset_end(c->packed))
      c->packed = c->packed->next;
  }
  c->used += t->bytes;
  return t;
}

pld_tile *pld_tile_new(pld_core k, pld_dtype dtype, int32_t rows,
                       int32_t cols) {
  return pld__tile_alloc(k.p, "pld_tile_new", dtype, rows, cols);
}

/* dst = value converted to dst's dtype, on the elements only (the row
 * padding is left alone). */
static void fill_value(pld_tile *dst, double value) {
  unsigned char elem[sizeof(double)];
  pld__elem_set(dst->dtype, elem, value);
  const struct pld__runs runs = pld__tile_runs(dst, dst);
  for (size_t r = 0; r < runs.count; r++)
    pld__fill_elems(pld__run_ptr(dst, r), elem, pld_dtype_size(dst->dtype),
                    runs.len);
}

pld_tile *pld_full(pld_core k, pld_dtype dtype, int32_t rows, int32_t cols,
                   double value) {
  pld_tile *t = pld__tile_alloc(k.p, "pld_full", dtype, rows, cols);
  if (t)
    fill_value(t, value);
  return t;
}

/* Unlike the other calls, freeing works after a failure too: it undoes
 * nothing the failure is about, and cleanup code may run regardless. */
void pld_tile_free(pld_core k, pld_tile *t) {
  struct pld__core *c = k.p;
  if (!t)
    return;
  if (tile_problem(c, t)) {
    pld__tile_check(c, "pld_tile_free", "t", t);
    return;
  }
  if (c->packed && t->offset <= c->packed->offset)
    c->packed = t->prev;
  *(t->prev ? &t->prev->next : &c->live) = t->next;
  if (t->next)
    t->next->prev = t->prev;
  t->block_seq = 0;
  t->next = c->tiles_free;
  c->tiles_free = t;
  c->used -= t->bytes;
}

int32_t pld_tile_rows(const pld_tile *t) { return t ? t->rows : 0; }
int32_t pld_tile_cols(const pld_tile *t) { return t ? t->cols : 0; }
pld_dtype pld_tile_dtype(const pld_tile *t) {
  return t ? t->dtype : PLD_DTYPE_COUNT;
}
size_t pld_tile_bytes(const pld_tile *t) { return t ? t->bytes : 0; }

int pld_fill(pld_core k, pld_tile *dst, double value) {
  if (pld__tile_check(k.p, "pld_fill", "dst", dst))
    return k.p->status;
  pld__tile_work(PLD__TC_VECTOR, 1, dst);
  fill_value(dst, value);
  return PLD_OK;
}

/* ---- tensors <-> tiles -------------------------------------------------- */

/* The region [row, row + rows) x [col, col + cols) lies inside t's
 * matrix. */
static int region_check(struct pld__core *c, const char *fn,
                        const struct pld__tensor *t, int64_t row, int64_t col,
                        int32_t rows, int32_t cols) {
  const int64_t trows = pld__tensor_rows(t), tcols = pld__tensor_cols(t);
  if (row >= 0 && col >= 0 && row <= trows - rows && col <= tcols - cols)
    return PLD_OK;
  char what[480];
  pld__tensor_matrix_str(what, sizeof what, t);
  return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                    "rows [%lld, %lld) cols [%lld, %lld) are outside %s",
                    (long long)row, pld__region_end(row, rows), (long long)col,
                    pld__region_end(col, cols), what);
}

/* rows blocks of len bytes between two strided layouts. */
static void copy_rows(unsigned char *dst, size_t dst_stride,
                      const unsigned char *src, size_t src_stride, size_t rows,
                      size_t len) {
  if (dst_stride == len && src_stride == len) {
    memcpy(dst, src, rows * len);
    return;
  }
  for (size_t r = 0; r < rows; r++)
    memcpy(dst + r * dst_stride, src + r * src_stride, len);
}

int pld__tensor_race_check(struct pld__core *c, const char *fn, int kind,
                           const struct pld__tensor *t, int64_t row,
                           int64_t col, size_t row_bytes, size_t rows) {
  int st = pld__race_access(kind, fn, t->name, t->win_buf, c->rank,
                            t->win_offset + pld__tensor_offset(t, row, col),
                            row_bytes, rows, pld__tensor_stride(t));
  return st ? pld__kfail(c, st, fn, "%s", pld_last_error()) : PLD_OK;
}

/* A load into dst; with c, a prefetch of c's (the core waits for it
 * later). */
static void load_block(struct pld__core *c, pld_tile *dst,
                       const struct pld__tensor *src, int64_t row,
                       int64_t col) {
  const size_t len = (size_t)dst->cols * pld_dtype_size(dst->dtype);
  if (c)
    pld__obs_gm_async(len * (size_t)dst->rows,
                      dst->prefetch = (int32_t)(c->prefetches++ & INT32_MAX));
  else
    pld__obs_gm(0, len * (size_t)dst->rows);
  copy_rows(dst->data, dst->row_bytes,
            (const unsigned char *)src->data +
                pld__tensor_offset(src, row, col),
            pld__tensor_stride(src), (size_t)dst->rows, len);
}

pld_tile *pld_load(pld_core k, pld_tensor src, int64_t row, int64_t col,
                   int32_t rows, int32_t cols) {
  struct pld__core *c = k.p;
  const char *fn = "pld_load";
  if (pld__tensor_check(c, fn, src, 0))
    return NULL;
  if (rows > 0 && cols > 0 && region_check(c, fn, src.p, row, col, rows, cols))
    return NULL;
  pld_tile *t = pld__tile_alloc(c, fn, src.p->dtype, rows, cols);
  if (t &&
      pld__tensor_race(c, fn, PLD__RACE_READ, src.p, row, col,
                       (size_t)cols * pld_dtype_size(t->dtype), (size_t)rows)) {
    pld_tile_free(k, t);
    return NULL;
  }
  if (t)
    load_block(NULL, t, src.p, row, col);
  return t;
}

/* pld_load_into for fn (a prefetch: `prefetch`). */
static int load_into(struct pld__core *c, const char *fn, pld_tile *dst,
                     pld_tensor src, int64_t row, int64_t col, int prefetch) {
  if (pld__tile_check(c, fn, "dst", dst) || pld__tensor_check(c, fn, src, 0) ||
      pld__tensor_dtype_match(c, fn, "dst", dst, src.p) ||
      region_check(c, fn, src.p, row, col, dst->rows, dst->cols) ||
      pld__tensor_race(c, fn, PLD__RACE_READ, src.p, row, col,
                       (size_t)dst->cols * pld_dtype_size(dst->dtype),
                       (size_t)dst->rows))
    return c->status;
  load_block(prefetch ? c : NULL, dst, src.p, row, col);
  return PLD_OK;
}

int pld_load_into(pld_core k, pld_tile *dst, pld_tensor src, int64_t row,
                  int64_t col) {
  return load_into(k.p, "pld_load_into", dst, src, row, col, 0);
}

int pld_prefetch(pld_core k, pld_tile *dst, pld_tensor src, int64_t row,
                 int64_t col) {
  struct pld__core *c = k.p;
  if (load_into(c, "pld_prefetch", dst, src, row, col, 1))
    return c->status;
  dst->in_flight = 1;
  c->prefetching++;
  return PLD_OK;
}

int pld_prefetch_wait(pld_core k, pld_tile *dst) {
  struct pld__core *c = k.p;
  const char *fn = "pld_prefetch_wait";
  if (c->status)
    return c->status;
  const char *dead = tile_dead(c, dst);
  if (dead)
    return pld__kfail(c, PLD_ERR_ARG, fn, "dst: %s", dead);
  if (!dst->in_flight)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "dst: no prefetch into the tile is in flight (one "
                      "pld_prefetch, one wait)");
  dst->in_flight = 0;
  c->prefetching--;
  pld__obs_moved(dst->prefetch);
  return PLD_OK;
}

int pld_store(pld_core k, const pld_tile *t, pld_tensor dst, int64_t row,
              int64_t col) {
  struct pld__core *c = k.p;
  const char *fn = "pld_store";
  if (pld__tile_check(c, fn, "t", t) || pld__tensor_check(c, fn, dst, 1) ||
      pld__tensor_dtype_match(c, fn, "t", t, dst.p) ||
      region_check(c, fn, dst.p, row, col, t->rows, t->cols) ||
      pld__tensor_race(c, fn, PLD__RACE_WRITE, dst.p, row, col,
                       (size_t)t->cols * pld_dtype_size(t->dtype),
                       (size_t)t->rows))
    return c->status;
  const size_t len = (size_t)t->cols * pld_dtype_size(t->dtype);
  pld__obs_gm(1, len * (size_t)t->rows);
  copy_rows((unsigned char *)dst.p->data + pld__tensor_offset(dst.p, row, col),
            pld__tensor_stride(dst.p), t->data, t->row_bytes, (size_t)t->rows,
            len);
  return PLD_OK;
}
