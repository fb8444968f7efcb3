/* comm/allreduce.c: the reducing collectives, pld_allreduce (mesh,
 * two-phase, ring, and the choice among them) and pld_reduce_scatter, in
 * place and out of place (pld_allreduce_to, pld_reduce_scatter_to), on
 * the steps of comm/coll.h: each rank's data read in groups through a
 * staging tile into an FP32 (or INT32) accumulator tile, ranks combined
 * in a fixed order (FP32 and INT32 data where it lies: reduce_ranks). */
#include <string.h>

#include "comm/coll.h"
#include "tile/convert.h"

/* Elements reduced at a time without a barrier between groups: small
 * enough that the accumulator stays in the host CPU's first-level cache
 * (reduce_into_mine). */
#define PIECE ((size_t)1024)

/* ---- reducing ----------------------------------------------------------- */

/* out = op(a, b), elementwise over n elements: FP32 for float dtypes
 * (their accumulator), INT32 for integer ones.  out may be a or b (the
 * same elements: each is read before it is written). */
#define COMBINE_LOOP(T, EXPR)                                                  \
  do {                                                                         \
    T *o_ = out;                                                               \
    const T *a_ = a, *b_ = b;                                                  \
    PLD__VLOOP(T, i, n, const T x = a_[i]; const T y = b_[i];                  \
               o_[i] = (EXPR););                                               \
  } while (0)

static void combine_f32(pld_reduce_op op, float *out, const float *a,
                        const float *b, size_t n) {
  switch (op) {
  case PLD_REDUCE_SUM:
    COMBINE_LOOP(float, x + y);
    break;
  case PLD_REDUCE_PROD:
    COMBINE_LOOP(float, x *y);
    break;
  case PLD_REDUCE_MAX:
    COMBINE_LOOP(float, PLD__FMAX(x, y));
    break;
  case PLD_REDUCE_MIN:
    COMBINE_LOOP(float, PLD__FMIN(x, y));
    break;
  }
}

/* Integers wrap: sums and products go through uint32_t. */
static void combine_i32(pld_reduce_op op, int32_t *out, const int32_t *a,
                        const int32_t *b, size_t n) {
  switch (op) {
  case PLD_REDUCE_SUM:
    COMBINE_LOOP(int32_t, (int32_t)((uint32_t)x + (uint32_t)y));
    break;
  case PLD_REDUCE_PROD:
    COMBINE_LOOP(int32_t, (int32_t)((uint32_t)x * (uint32_t)y));
    break;
  case PLD_REDUCE_MAX:
    COMBINE_LOOP(int32_t, PLD__IMAX(x, y));
    break;
  case PLD_REDUCE_MIN:
    COMBINE_LOOP(int32_t, PLD__IMIN(x, y));
    break;
  }
}

static int is_float(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16;
}

/* Whether dt is its own accumulator's dtype: its elements are combined
 * where they lie, without widening. */
static int is_wide(pld_dtype dt) { return dt == PLD_FP32 || dt == PLD_INT32; }

/* out = op(a, b) over n elements of a wide dtype dt (is_wide). */
static void combine(pld_dtype dt, pld_reduce_op op, void *out, const void *a,
                    const void *b, size_t n) {
  if (dt == PLD_FP32)
    combine_f32(op, out, a, b, n);
  else
    combine_i32(op, out, a, b, n);
}

/* acc = in (first) or op(acc, in), n elements of a narrow dtype dt (not
 * is_wide: those combine where they lie) at in, widened a chunk at a
 * time. */
static void accumulate(pld_dtype dt, pld_reduce_op op, int first, void *acc,
                       const void *in, size_t n) {
  const size_t es = pld_dtype_size(dt);
  for (size_t i = 0; i < n; i += PLD__CHUNK) {
    size_t m = n - i < PLD__CHUNK ? n - i : PLD__CHUNK;
    const unsigned char *src = (const unsigned char *)in + i * es;
    if (is_float(dt)) {
      float *a = (float *)acc + i, wide[PLD__CHUNK];
      pld__load_f32(dt, first ? a : wide, src, m);
      if (!first)
        combine_f32(op, a, a, wide, m);
    } else {
      int32_t *a = (int32_t *)acc + i, wide[PLD__CHUNK];
      pld__load_i32(dt, first ? a : wide, src, m);
      if (!first)
        combine_i32(op, a, a, wide, m);
    }
  }
}

/* out (n elements of dt) = acc: floats rounded to nearest even, integers
 * wrapped to their width. */
static void store_acc(pld_dtype dt, void *out, const void *acc, size_t n) {
  if (is_wide(dt)) {
    memcpy(out, acc, n * 4);
  } else if (is_float(dt)) {
    pld__store_f32(dt, out, acc, n);
  } else {
    const int32_t *a = acc;
    if (dt == PLD_INT16) {
      int16_t *o = out;
      PLD__VLOOP(int32_t, i, n, o[i] = (int16_t)(uint16_t)(uint32_t)a[i];);
    } else {
      int8_t *o = out;
      PLD__VLOOP(int32_t, i, n, o[i] = (int8_t)(uint8_t)(uint32_t)a[i];);
    }
  }
}

/* ---- what the timing model sees of a reduction ------------------------- */

/* Combines of a reduction not charged to the timing model yet.  They are
 * charged after the reads that fed them, not between those reads: a
 * record between two reads of a transfer group would end its transfer
 * (core/trace.h), and the block's records take their modeled times one
 * after another either way. */
struct combines {
  int64_t ops, bytes;
};

/* n more combines of len elements of es bytes each: an elementwise
 * operation through its two operands and its result, as pld_add on tiles
 * of the data's dtype is charged. */
static void combines_add(struct combines *w, int64_t n, size_t len, size_t es) {
  w->ops += n;
  w->bytes += n * 3 * (int64_t)(len * es);
}

/* The core's vector work: one operation a combine, their bytes in all;
 * then none is pending. */
static void combines_charge(struct combines *w) {
  if (w->ops)
    pld__obs_work_ops(PLD__TC_VECTOR, w->bytes, (int32_t)w->ops);
  *w = (struct combines){0, 0};
}

/* out[0, len) (NULL: acc[0, len)) = op over ranks 0, 1, ..., P-1 in that
 * order of their elements [e, e + len) of window w; the elements up to
 * `end` are read next (pld__coll_rank_bytes' ahead).  out may be this
 * rank's own elements: it is written last.  A wide dtype combines where
 * the data lies: the first two ranks' elements into one, the last into
 * out, without copies through acc. */
static int reduce_ranks(struct coll *cc, const struct pld__tensor *w, int64_t e,
                        size_t len, int64_t end, pld_reduce_op op, void *out) {
  const pld_dtype dt = w->dtype;
  const size_t es = pld_dtype_size(dt);
  const int wide = is_wide(dt);
  void *acc = cc->acc->data;
  const void *first = NULL; /* rank 0's elements where they lie */
  for (int32_t q = 0; q < cc->n; q++) {
    const void *in =
        pld__coll_rank_bytes(cc, w, q, (size_t)e * es, cc->stage->data,
                             len * es, (size_t)(end - e) * es);
    if (!in)
      return cc->c->status;
    void *to = out && q == cc->n - 1 ? out : acc;
    if (!wide) {
      accumulate(dt, op, q == 0, acc, in, len);
    } else if (q == 0 && in != cc->stage->data && cc->n > 1) {
      first = in; /* not in the stage, which the next rank's read reuses */
    } else if (q == 0) {
      memmove(to, in, len * es);
    } else {
      combine(dt, op, to, first ? first : acc, in, len);
      first = NULL;
    }
  }
  if (out && !wide)
    store_acc(dt, out, acc, len);
  return PLD_OK;
}

/* Whether every peer's copy of w can be combined where it lies. */
static int all_in_place(struct coll *cc, const struct pld__tensor *w) {
  if (cc->eager) /* every peer's part came in the entry */
    return 1;
  for (int32_t q = 0; q < cc->n; q++)
    if (!pld__coll_view(cc, w, q, 0, 0))
      return 0;
  return 1;
}

/* out[0, e1 - e0) = op over every rank's elements [e0, e1) of w, group by
 * group; with `sync`, a barrier between reading a group and storing it (a
 * peer may still read my unreduced group: mesh in place). */
static int reduce_ranks_into(struct coll *cc, const struct pld__tensor *w,
                             int64_t e0, int64_t e1, pld_reduce_op op, int sync,
                             unsigned char *out) {
  const size_t es = pld_dtype_size(w->dtype);
  /* Without a barrier, pieces small enough that the accumulator stays in
   * the host CPU's first-level cache: every rank's data is read once.
   * Where a peer's data must be copied rather than combined where it
   * lies, whole groups of such pieces: a copy from a peer over MPI costs
   * a round trip.  The timing model counts the pieces either way. */
  const size_t piece = sync || cc->group < PIECE ? cc->group : PIECE;
  const size_t step = piece == cc->group || all_in_place(cc, w)
                          ? piece
                          : cc->group / piece * piece;
  struct combines red = {0, 0};
  int st = PLD_OK;
  /* Without a barrier, the pieces read from a peer are one transfer for
   * the timing model (the pieces are the host's cache's, not the chip's):
   * core/trace.h merges a group's transfers per peer. */
  if (!sync)
    pld__obs_group_begin();
  for (int64_t g = e0; g < e1 && !st; g += (int64_t)step) {
    size_t len = (size_t)(e1 - g) < step ? (size_t)(e1 - g) : step;
    /* With a barrier between groups, each group's reads are transfers
     * of their own for the timing model: nothing is read ahead. */
    unsigned char *to = out + (size_t)(g - e0) * es;
    st = reduce_ranks(cc, w, g, len, sync ? g + (int64_t)len : e1, op,
                      sync ? NULL : to);
    for (size_t i = 0; i < len; i += piece)
      combines_add(&red, cc->n - 1, len - i < piece ? len - i : piece, es);
    if (!st && sync) {
      combines_charge(&red);
      st = pld__coll_round(cc);
      if (!st)
        store_acc(w->dtype, to, cc->acc->data, len);
    }
  }
  pld__obs_group_end();
  combines_charge(&red);
  return st;
}

/* My elements [e0, e1) of w = op over every rank's (reduce_ranks_into). */
static int reduce_into_mine(struct coll *cc, const struct pld__tensor *w,
                            int64_t e0, int64_t e1, pld_reduce_op op,
                            int sync) {
  return reduce_ranks_into(cc, w, e0, e1, op, sync,
                           (unsigned char *)w->data +
                               (size_t)e0 * pld_dtype_size(w->dtype));
}

pld_allreduce_mode pld_allreduce_auto(int32_t nranks, int64_t bytes) {
  /* Measured by bench_coll (2026-12-06, 2, 4 and 8 ranks, two-phase
   * pushing its chunks): mesh is best up to 1 KiB per rank at 2 ranks
   * (where a call is one exchange: PLD_COLL_EAGER_BYTES) and the two
   * tie up to 8 KiB at 4 and 8, two-phase above (the ring ties with it at
   * 2 ranks and is 1.2 to 1.6 times slower at 4 and 8, 2026-11-30).  A
   * barrier of two-phase costs P^2 signals, a ring stage one: past 8
   * ranks the ring is taken. */
  if (nranks <= 1 || bytes <= (nranks <= 2 ? 1 : 8) * 1024)
    return PLD_ALLREDUCE_MESH;
  return nranks <= 8 ? PLD_ALLREDUCE_TWO_PHASE : PLD_ALLREDUCE_RING;
}

/* The lane's part [*c0, *c1) of chunk k of the ring's `count` elements:
 * the data is cut into P chunks first and each chunk among the lanes, so
 * that the ranks that reduce an element, and their order, do not depend
 * on the block count. */
static void ring_piece(const struct coll *cc, int64_t count, int32_t k,
                       int64_t *c0, int64_t *c1) {
  int64_t k0, k1;
  pld__coll_chunk(0, count, k, cc->n, &k0, &k1);
  pld__coll_chunk(k0, k1, cc->lane, cc->lanes, c0, c1);
}

/* Ring allreduce of my lane's part of each chunk of the `count` elements
 * of w: chunk c is reduced by the ranks c+1, c+2, ..., c in turn (each
 * adds its own to its left neighbour's partial), then passed around.
 * Stage t (1 to 2 (P-1)) reads from the left neighbour what it finished at
 * stage t-1: before it, a credit from the left; after it, one to the
 * right (but for the last). */
static int ring_allreduce(struct coll *cc, const struct pld__tensor *w,
                          int64_t count, pld_reduce_op op) {
  const int32_t n = cc->n, me = cc->me, left = (me + n - 1) % n;
  const int32_t right = (me + 1) % n;
  const size_t es = pld_dtype_size(w->dtype);
  int st = PLD_OK;
  for (int32_t t = 1; t <= 2 * (n - 1) && !st; t++) {
    cc->c->coll_round++; /* a round per stage */
    if (t > 1)
      st = pld__coll_await(cc, left);
    /* Reducing, chunk me-t-1 (the left's partial of it is finished);
     * then passing on, chunk me-s at round s = t - (P-1) (the left has
     * it: its own, or received at its round s-1). */
    int reducing = t <= n - 1;
    int32_t k = reducing ? ((me - t - 1) % n + n) % n
                         : ((me - (t - (n - 1))) % n + n) % n;
    int64_t c0, c1;
    ring_piece(cc, count, k, &c0, &c1);
    /* The stage's groups are one read from the left for the timing
     * model: one stream on the link, whatever the staging tile holds.
     * Passing on copies straight into my copy: in one transfer where
     * the left's copy is out of reach (a transfer costs a round trip). */
    const size_t step = reducing || pld__coll_view(cc, w, left, 0, 0)
                            ? cc->group
                            : (size_t)(c1 - c0);
    struct combines red = {0, 0};
    pld__obs_group_begin();
    for (int64_t g = c0; g < c1 && !st; g += (int64_t)step) {
      size_t len = (size_t)(c1 - g) < step ? (size_t)(c1 - g) : step;
      unsigned char *mine = (unsigned char *)w->data + (size_t)g * es;
      if (!reducing) {
        st = pld__coll_read(cc, w, left, (size_t)g * es, mine, len * es);
        continue;
      }
      const void *in =
          pld__coll_rank_bytes(cc, w, left, (size_t)g * es, cc->stage->data,
                               len * es, (size_t)(c1 - g) * es);
      if (!in) {
        st = cc->c->status;
        break;
      }
      if (is_wide(w->dtype)) {
        combine(w->dtype, op, mine, in, mine, len);
      } else {
        accumulate(w->dtype, op, 1, cc->acc->data, in, len);
        accumulate(w->dtype, op, 0, cc->acc->data, mine, len);
        store_acc(w->dtype, mine, cc->acc->data, len);
      }
      combines_add(&red, 1, len, es);
    }
    pld__obs_group_end();
    combines_charge(&red);
    if (!st && t < 2 * (n - 1))
      st = pld__coll_credit(cc, right);
  }
  return st;
}

/* Out of place: the elements of data w this lane works on = src's (the
 * ring's pieces of each chunk, else [lo, hi)), before the call's entry:
 * no peer reads them before it, and the last call on w ended with every
 * rank done reading. */
static int take_source(struct coll *cc, const struct pld__tensor *w,
                       const struct pld__tensor *src, pld_allreduce_mode mode,
                       int64_t n, int64_t lo, int64_t hi) {
  const size_t es = pld_dtype_size(w->dtype);
  const unsigned char *from = src->data;
  int st = PLD_OK;
  for (int32_t k = 0; k < (mode == PLD_ALLREDUCE_RING ? cc->n : 1) && !st;
       k++) {
    int64_t c0 = lo, c1 = hi;
    if (mode == PLD_ALLREDUCE_RING)
      ring_piece(cc, n, k, &c0, &c1);
    st = pld__coll_write(cc, w, cc->me, (size_t)c0 * es, from + (size_t)c0 * es,
                         (size_t)(c1 - c0) * es);
  }
  return st;
}

/* pld_allreduce, and pld_allreduce_to (src: its source, a tensor of this
 * rank, whose part of this lane goes into data first; in place, src.p is
 * NULL). */
static int allreduce(pld_core k, const char *fn, pld_tensor src,
                     pld_window data, pld_window sig, pld_reduce_op op,
                     pld_allreduce_mode mode) {
  struct pld__core *c = k.p;
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_ALLREDUCE,
                             .data = data.p,
                             .src = src.p,
                             .op = (int)op,
                             .mode = (int)mode};
  const int reads = 0;
  int st = pld__coll_begin(&cc, c, fn, &a, sig, &data, 1, src.p ? &src : NULL,
                           &reads, src.p ? 1 : 0);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *w = data.p;
  const int64_t n = (int64_t)(w->nbytes / pld_dtype_size(w->dtype));
  if (mode == PLD_ALLREDUCE_AUTO)
    mode = pld_allreduce_auto(cc.n, (int64_t)w->nbytes);
  const size_t es = pld_dtype_size(w->dtype);
  int64_t lo, hi;
  pld__coll_lane_part(&cc, n, &lo, &hi);
  /* Mesh with little data: every rank's part comes in the entry. */
  cc.eager = mode == PLD_ALLREDUCE_MESH &&
             (size_t)(hi - lo) * es <= PLD_COLL_EAGER_BYTES;
  cc.eager_off = (size_t)lo * es;
  const struct eager ep = {(const unsigned char *)w->data + cc.eager_off,
                           cc.eager ? (size_t)(hi - lo) * es : 0, 0};
  if ((st = pld__coll_reserve(&cc, es, 1, hi - lo)) ||
      (src.p && (st = take_source(&cc, w, src.p, mode, n, lo, hi))) ||
      (st = pld__coll_start(&cc, w, op, mode, 0, n, &ep)))
    return pld__coll_finish(&cc, st);
  if (cc.n == 1)
    return pld__coll_finish(&cc, PLD_OK);
  if (mode == PLD_ALLREDUCE_MESH) {
    /* Unless small, a peer may still read my unreduced data until the
     * barrier before each store. */
    st = reduce_into_mine(&cc, w, lo, hi, op, !cc.eager);
  } else if (mode == PLD_ALLREDUCE_TWO_PHASE) {
    /* Rank c reduces chunk c, which only rank c reads: it is stored at
     * once, then written into every peer's copy with a credit behind it,
     * and every rank waits for every peer's chunk.  Pushed rather than
     * read: the writes go to lines this rank has just read, the reads
     * would come from lines another CPU has just written (on the 2-CPU
     * machine of docs/benchmarks.md, 4 to 5 times the bus bandwidth at 2
     * ranks), and over MPI a put does not wait a round trip as a get
     * does.  The credits are the call's last round: a rank has every
     * peer's chunk, and every peer is done reading its copy. */
    int64_t c0, c1;
    pld__coll_chunk(lo, hi, cc.me, cc.n, &c0, &c1);
    st = reduce_into_mine(&cc, w, c0, c1, op, 0);
    if (!st) {
      cc.c->coll_round++;
      st = pld__coll_push(&cc, w, (size_t)c0 * es,
                          (unsigned char *)w->data + (size_t)c0 * es,
                          (size_t)(c1 - c0) * es);
    }
    if (!st)
      st = pld__coll_await_all(&cc);
  } else {
    st = ring_allreduce(&cc, w, n, op);
    if (!st)
      st = pld__coll_round(&cc);
  }
  return pld__coll_finish(&cc, st);
}

int pld_allreduce(pld_core k, pld_window data, pld_window sig, pld_reduce_op op,
                  pld_allreduce_mode mode) {
  return allreduce(k, "pld_allreduce", (pld_tensor){NULL}, data, sig, op, mode);
}

int pld_allreduce_to(pld_core k, pld_tensor src, pld_window dst, pld_window sig,
                     pld_reduce_op op, pld_allreduce_mode mode) {
  if (!src.p) /* NULL would mean in place */
    src.p = &pld__invalid_tensor;
  return allreduce(k, "pld_allreduce_to", src, dst, sig, op, mode);
}

/* pld_reduce_scatter, and pld_reduce_scatter_to (dst: where this rank's
 * row goes, a tensor of this rank; in place, dst.p is NULL). */
static int reduce_scatter(pld_core k, const char *fn, pld_window data,
                          pld_tensor dst, pld_window sig, pld_reduce_op op) {
  struct pld__core *c = k.p;
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_REDUCE_SCATTER,
                             .data = data.p,
                             .dst = dst.p,
                             .op = (int)op};
  const int writes = 1;
  int st = pld__coll_begin(&cc, c, fn, &a, sig, &data, 1, dst.p ? &dst : NULL,
                           &writes, dst.p ? 1 : 0);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *w = data.p;
  const int64_t n = (int64_t)(w->nbytes / pld_dtype_size(w->dtype));
  const int64_t row = n / cc.n;
  const size_t es = pld_dtype_size(w->dtype);
  int64_t lo, hi;
  pld__coll_lane_part(&cc, row, &lo, &hi);
  /* Small rows: every rank's row me comes in the entry. */
  cc.eager = (size_t)(hi - lo) * es <= PLD_COLL_EAGER_BYTES;
  cc.eager_off = (size_t)(cc.me * row + lo) * es;
  const struct eager ep = {(const unsigned char *)w->data + (size_t)lo * es,
                           cc.eager ? (size_t)(hi - lo) * es : 0,
                           (size_t)row * es};
  if ((st = pld__coll_reserve(&cc, es, 1, hi - lo)) ||
      (st = pld__coll_start(&cc, w, op, 0, 0, n, &ep)))
    return pld__coll_finish(&cc, st);
  /* Nobody else reads my row me: it is stored as it is reduced (out of
   * place, into dst). */
  unsigned char *out =
      dst.p ? (unsigned char *)dst.p->data + (size_t)lo * es
            : (unsigned char *)w->data + (size_t)(cc.me * row + lo) * es;
  st =
      reduce_ranks_into(&cc, w, cc.me * row + lo, cc.me * row + hi, op, 0, out);
  if (!st && !cc.eager) /* nobody changes its rows while others read them */
    st = pld__coll_round(&cc);
  return pld__coll_finish(&cc, st);
}

int pld_reduce_scatter(pld_core k, pld_window data, pld_window sig,
                       pld_reduce_op op) {
  return reduce_scatter(k, "pld_reduce_scatter", data, (pld_tensor){NULL}, sig,
                        op);
}

int pld_reduce_scatter_to(pld_core k, pld_window src, pld_tensor dst,
                          pld_window sig, pld_reduce_op op) {
  if (!dst.p)
    dst.p = &pld__invalid_tensor;
  return reduce_scatter(k, "pld_reduce_scatter_to", src, dst, sig, op);
}
