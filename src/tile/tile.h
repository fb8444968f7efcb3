/* tile/tile.h: what the files of the tile layer share - argument checks
 * that compose the failure messages, the walk over a tile's elements, and
 * the loop shape that gcc vectorizes. */
#ifndef PLD_TILE_TILE_H
#define PLD_TILE_TILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "core/kctx.h"
#include "core/race.h"
#include "core/tensor.h"
#include "core/timeline.h"
#include "core/trace.h"
#include "tile/isa.h"

/* ---- vectorizable loops ------------------------------------------------ */

/* At -O2 gcc (12) vectorizes with the "very cheap" cost model: only loops
 * whose vector code replaces the scalar code entirely, so a loop over a
 * run-time count (which needs a scalar epilogue) stays scalar.  Tile loops
 * therefore go in blocks of a constant number of elements - an inner loop
 * gcc vectorizes completely - followed by a scalar remainder shorter than
 * a block.  A block is 128 bytes of the widest element the loop touches:
 * two AVX-512 or four AVX2 vectors. */
#define PLD__VBLOCK(T) (128 / sizeof(T))

/* The destination of an operation may be one of its sources (in place), so
 * loops cannot promise `restrict`.  What they do promise is what ivdep
 * asserts: every element is read before its own store and no iteration
 * touches another's element, so the iterations may run as SIMD lanes.
 * Without it gcc would need a run-time alias check, which the very cheap
 * model refuses. */
#if defined(__clang__)
#define PLD__IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define PLD__IVDEP _Pragma("GCC ivdep")
#else
#define PLD__IVDEP
#endif

/* PLD__UNROLL(n) before a loop: gcc unrolls it n times. */
#if defined(__GNUC__) && !defined(__clang__)
#define PLD__PRAGMA(x) _Pragma(#x)
#define PLD__UNROLL(n) PLD__PRAGMA(GCC unroll n)
#else
#define PLD__UNROLL(n)
#endif

/* PLD__VLOOP(T, i, n, body...): runs body for every size_t i in [0, n),
 * in blocks of PLD__VBLOCK(T).  PLD__VLOOP_UNROLLED unrolls the loop over
 * the blocks four times (gcc): for bodies too short to hide the loop's
 * own instructions, such as a store of a value computed in registers.
 *
 * PLD__VLOOP_VECTOR, in a multi-versioned function (tile/isa.h: `isa` in
 * scope), goes one vector at a time with AVX2 and AVX-512 where T has 4
 * bytes or more: the elementwise operations' loops, which stream a tile
 * through a load, an operation and a store.  There the blocks of 128
 * bytes, four AVX2 vectors, were 10 to 20% slower than a loop of one
 * vector each (measured with bench_route on an AMD EPYC: pld_not and the
 * shifts, 0.77 to 0.89 of the plain loop before, 0.88 to 1.02 after);
 * with SSE2 the blocks of 128 bytes are the faster (1.4 times the plain
 * loop against 1.0), as for narrower elements (BOOL: 0.6 against 1.0). */
#define PLD__VLOOP(T, i, n, ...)                                               \
  PLD__VLOOP_BLOCK(PLD__VBLOCK(T), i, n, , __VA_ARGS__)
#define PLD__VLOOP_UNROLLED(T, i, n, ...)                                      \
  PLD__VLOOP_BLOCK(PLD__VBLOCK(T), i, n, PLD__UNROLL(4), __VA_ARGS__)
#define PLD__VLOOP_VECTOR(T, i, n, ...)                                        \
  PLD__VLOOP_BLOCK(isa >= PLD__ISA_AVX2 && sizeof(T) >= 4                      \
                       ? (isa >= PLD__ISA_AVX512 ? 64 : 32) / sizeof(T)        \
                       : PLD__VBLOCK(T),                                       \
                   i, n, , __VA_ARGS__)
/* (The block size in a local: gcc ignores the ivdep of a loop whose
 * bound is a conditional expression.  The whole blocks' end in one too:
 * against it, gcc counts the loop in the register that indexes it.) */
#define PLD__VLOOP_BLOCK(BLK, i, n, UNROLL, ...)                               \
  do {                                                                         \
    const size_t i##_bs = (BLK), i##_whole = (n) - (n) % i##_bs;               \
    size_t i##_blk = 0;                                                        \
    UNROLL                                                                     \
    for (; i##_blk < i##_whole; i##_blk += i##_bs) {                           \
      PLD__IVDEP                                                               \
      for (size_t i##_lane = 0; i##_lane < i##_bs; i##_lane++) {               \
        const size_t i = i##_blk + i##_lane;                                   \
        __VA_ARGS__                                                            \
      }                                                                        \
    }                                                                          \
    for (size_t i = i##_blk; i < (n); i++) {                                   \
      __VA_ARGS__                                                              \
    }                                                                          \
  } while (0)

/* Maximum and minimum, as the tile operations and the reducing
 * collectives compute them: float ones propagate NaN (x != x). */
#define PLD__FMAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define PLD__FMIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define PLD__IMAX(x, y) ((x) > (y) ? (x) : (y))
#define PLD__IMIN(x, y) ((x) < (y) ? (x) : (y))

/* Elements of a float scratch buffer: FP16 and BF16 tiles are computed
 * through one (convert a chunk in, compute in float, convert back). */
#define PLD__CHUNK 512

/* ---- dtypes ------------------------------------------------------------- */

/* X(name, C type of an element) - the dtypes tiles compute on (they hold
 * every dtype, the others to move data only).  FP16 and BF16 are stored
 * as their 16-bit patterns. */
#define PLD__TILE_DTYPES(X)                                                    \
  X(FP32, float)                                                               \
  X(FP16, uint16_t)                                                            \
  X(BF16, uint16_t)                                                            \
  X(INT32, int32_t)                                                            \
  X(INT16, int16_t)                                                            \
  X(INT8, int8_t)                                                              \
  X(UINT8, uint8_t)

/* X(name, C type, smallest, largest) - the integer tile dtypes; the narrow
 * ones are those whose range floats hold exactly. */
#define PLD__NARROW_INT_DTYPES(X)                                              \
  X(INT16, int16_t, INT16_MIN, INT16_MAX)                                      \
  X(INT8, int8_t, INT8_MIN, INT8_MAX)                                          \
  X(UINT8, uint8_t, 0, UINT8_MAX)
#define PLD__INT_DTYPES(X)                                                     \
  X(INT32, int32_t, INT32_MIN, INT32_MAX)                                      \
  PLD__NARROW_INT_DTYPES(X)

/* A dtype tiles compute on (PLD__TILE_DTYPES).  These three are inline:
 * every operation asks them before it computes. */
static inline int pld__is_tile_dtype(pld_dtype dt) {
  switch (dt) {
#define PLD__TILE_DTYPE_CASE(name, T) case PLD_##name:
    PLD__TILE_DTYPES(PLD__TILE_DTYPE_CASE)
#undef PLD__TILE_DTYPE_CASE
    return 1;
  default:
    return 0;
  }
}

/* FP16 or BF16 (stored narrower than they are computed). */
static inline int pld__is_half_dtype(pld_dtype dt) {
  return dt == PLD_FP16 || dt == PLD_BF16;
}

/* FP32, FP16 or BF16 (the dtypes computed in float). */
/* For the timing model (core/trace.h): an operation of class cls (enum
 * pld__tl_class) going through n tiles' worth of t's bytes (its operands
 * and result). */
static inline void pld__tile_work(int cls, int n, const pld_tile *t) {
  if (pld__obs.model)
    pld__obs_work(cls, (int64_t)n * t->rows * t->cols *
                           (int64_t)pld_dtype_size(t->dtype));
}

static inline int pld__is_float_dtype(pld_dtype dt) {
  return dt == PLD_FP32 || pld__is_half_dtype(dt);
}

/* ---- checks ------------------------------------------------------------- */

/* The operation fn runs only on vector cores: on a cube core it fails the
 * kernel with PLD_ERR_LEVEL, as the chip's cube cores have no vector unit
 * (they do matmul and data movement).  Every elementwise, tile-scalar,
 * unary, cast, reduction and expand operation starts with it.  Returns the
 * kernel's status. */
int pld__vector_only_fail(struct pld__core *c, const char *fn);
static inline int pld__vector_only(struct pld__core *c, const char *fn) {
  /* The checks that pass inline (every operation pays them per call);
   * the function out of line finds the failure and says it. */
  if (!c->status && c->spec.type != PLD_CORE_CUBE && !pld__isa_refusal())
    return PLD_OK;
  return pld__vector_only_fail(c, fn);
}

/* Fails the kernel with PLD_ERR_CONFIG if PLD_ISA is refused (tile/isa.h):
 * every operation that computes checks it (pld__vector_only, matmul), so
 * that a level the CPU lacks is never mistaken for the one asked for.
 * Returns the kernel's status. */
int pld__isa_kcheck(struct pld__core *c, const char *fn);

/* "FP32[8, 16]" into buf. */
size_t pld__tile_str(char *buf, size_t cap, const pld_tile *t);

/* Whether t (not NULL) points at one of core c's tile descriptors,
 * compared as integers: t may point anywhere. */
static inline int pld__tile_of(const struct pld__core *c, const pld_tile *t) {
  const uintptr_t p = (uintptr_t)t, first = (uintptr_t)c->tiles;
  return p >= first && p < (uintptr_t)(c->tiles + c->tiles_max) &&
         (p - first) % sizeof *t == 0;
}

/* t is a live tile of this core; `what` names the argument in the message.
 * Returns the kernel's status.  As the checks below: a check that passes
 * is inline, the _fail function finds and says what failed. */
int pld__tile_check_fail(struct pld__core *c, const char *fn, const char *what,
                         const pld_tile *t);
static inline int pld__tile_check(struct pld__core *c, const char *fn,
                                  const char *what, const pld_tile *t) {
  if (!c->status && t && pld__tile_of(c, t) && t->block_seq == c->block_seq &&
      !t->in_flight)
    return PLD_OK;
  return pld__tile_check_fail(c, fn, what, t);
}
/* t is a live tile of a dtype tiles compute on (PLD_ERR_UNSUPPORTED for
 * the others, which only move data).  Every operation that computes
 * starts with it. */
int pld__tile_compute_fail(struct pld__core *c, const char *fn,
                           const char *what, const pld_tile *t);
static inline int pld__tile_compute_check(struct pld__core *c, const char *fn,
                                          const char *what, const pld_tile *t) {
  if (pld__tile_check(c, fn, what, t))
    return c->status;
  return pld__is_tile_dtype(t->dtype) ? PLD_OK
                                      : pld__tile_compute_fail(c, fn, what, t);
}
/* Both tiles valid for computing, of equal shape and (if same_dtype)
 * equal dtype. */
int pld__tile_check2(struct pld__core *c, const char *fn, const char *wa,
                     const pld_tile *a, const char *wb, const pld_tile *b,
                     int same_dtype);
/* The same for two live tiles of any dtype (checked already): the shape
 * and dtype part of pld__tile_check2, with its messages. */
int pld__tile_match_fail(struct pld__core *c, const char *fn, const char *wa,
                         const pld_tile *a, const char *wb, const pld_tile *b);
static inline int pld__tile_match(struct pld__core *c, const char *fn,
                                  const char *wa, const pld_tile *a,
                                  const char *wb, const pld_tile *b,
                                  int same_dtype) {
  if (a->rows == b->rows && a->cols == b->cols &&
      (!same_dtype || a->dtype == b->dtype))
    return PLD_OK;
  return pld__tile_match_fail(c, fn, wa, a, wb, b);
}
/* The dtype of a mask (BOOL) and t's shape: mask is a live tile.  `wt`
 * names t.  Returns the kernel's status. */
int pld__mask_check(struct pld__core *c, const char *fn, const pld_tile *mask,
                    const char *wt, const pld_tile *t);

/* t is a tensor whose data the kernel may access (if writing: not an In
 * parameter).  Returns the kernel's status. */
int pld__tensor_check(struct pld__core *c, const char *fn, pld_tensor t,
                      int writing);
/* Where the race detector is on (core/race.h) and t is a view of a
 * window: checks a kernel's access (PLD__RACE_*) to this rank's copy, rows
 * of row_bytes bytes from element (row, col) of t's matrix.  Returns the
 * kernel's status (PLD_ERR_RACE with the report). */
int pld__tensor_race_check(struct pld__core *c, const char *fn, int kind,
                           const struct pld__tensor *t, int64_t row,
                           int64_t col, size_t row_bytes, size_t rows);
/* (Inline: every tile load and store asks, and with the detector off the
 * answer is one thread-local load.) */
static inline int pld__tensor_race(struct pld__core *c, const char *fn,
                                   int kind, const struct pld__tensor *t,
                                   int64_t row, int64_t col, size_t row_bytes,
                                   size_t rows) {
  if (!pld__race_on() || !(t->flags & PLD__T_WINDOW))
    return c->status;
  return pld__tensor_race_check(c, fn, kind, t, row, col, row_bytes, rows);
}

/* t's dtype is ten's (what names t in the message).  Returns the
 * kernel's status. */
int pld__tensor_dtype_match(struct pld__core *c, const char *fn,
                            const char *what, const pld_tile *t,
                            const struct pld__tensor *ten);

/* atomic is PLD_ATOMIC_NONE, or PLD_ATOMIC_ADD on a dtype the hardware
 * adds (FP32, FP16, BF16, INT32, INT16, INT8: PLD_ERR_UNSUPPORTED for the
 * others).  Returns the kernel's status. */
int pld__atomic_check(struct pld__core *c, const char *fn, pld_dtype dt,
                      pld_atomic atomic);

/* ---- rows by index (tile/rows.c; the remote forms in comm/rma.c) -------- */

/* idx is the index tile of a rows operation moving n rows: a live INT32
 * tile of shape [n, 1] or [1, n].  Returns the kernel's status. */
int pld__rows_index_check(struct pld__core *c, const char *fn,
                          const pld_tile *idx, int32_t n);

/* Entry i of a checked index tile. */
static inline int32_t pld__rows_index(const pld_tile *idx, int32_t i) {
  int32_t v;
  memcpy(&v,
         idx->data + (idx->cols == 1 ? (size_t)i * idx->row_bytes
                                     : (size_t)i * sizeof v),
         sizeof v);
  return v;
}

/* The entries from i on that name consecutive rows (idx[i], idx[i] + 1,
 * ...), at least 1 and at most n - i; 1 for a negative entry.  Such a run
 * moves as one block. */
static inline int32_t pld__rows_run(const pld_tile *idx, int32_t i, int32_t n) {
  const int64_t first = pld__rows_index(idx, i);
  int32_t m = 1;
  while (first >= 0 && i + m < n && pld__rows_index(idx, i + m) == first + m)
    m++;
  return m;
}

/* Whether the n rows idx names (negative entries name none) and the
 * columns [col, col + cols) lie inside t's matrix.  If not, *bad is the
 * first position whose entry is past t's rows, or -1 when the columns are
 * outside (both callers compose their own message). */
int pld__rows_fit(const struct pld__tensor *t, const pld_tile *idx, int32_t n,
                  int64_t col, int32_t cols, int32_t *bad);

/* "tensor 'x'", or "tensor" when it has no name. */
size_t pld__tensor_label(char *buf, size_t cap, const struct pld__tensor *t);
/* "tensor 'x' FP32[2, 3, 4]", and " (seen as a [6, 4] matrix)" unless it
 * has 2 dimensions: a tensor as the bounds messages of loads and stores
 * name it. */
size_t pld__tensor_matrix_str(char *buf, size_t cap,
                              const struct pld__tensor *t);

/* A rows x cols tile of dt in c's tile memory, failures reported as fn's
 * (pld_tile_new's rules); NULL on failure. */
pld_tile *pld__tile_alloc(struct pld__core *c, const char *fn, pld_dtype dt,
                          int32_t rows, int32_t cols);

/* The largest and the second largest gap between c's live tiles, in
 * bytes (multiples of the granule), where pld__tile_alloc places tiles
 * (first fit, each tile in one gap). */
void pld__tile_gaps(const struct pld__core *c, size_t *largest, size_t *second);

/* Whether n tiles of rows x cols elements of es bytes fit c's tile memory
 * with no tile live and no failure: then pld__tile_alloc places them from
 * offset 0 (rows of whole granules) and pld_tile_free of them leaves tile
 * memory as it was, so a caller that would free them at once may use that
 * memory without allocating (the short paths of pld_put and pld_get). */
static inline int pld__tiles_fit_empty(const struct pld__core *c, int n,
                                       int64_t rows, int64_t cols, size_t es) {
  if (c->live || c->status)
    return 0;
  const uint64_t row_bytes =
      pld__round_up((size_t)cols * es, (size_t)PLD__TILE_GRANULE);
  return (uint64_t)rows * row_bytes * (uint64_t)n <= c->spec.capacity;
}

/* A scalar operand in the representation the elementwise kernels read:
 * the tile's dtype, or the float an FP16 or BF16 holds. */
union pld__scalar {
  float f;
  int32_t i32;
  int16_t i16;
  int8_t i8;
  uint8_t u8;
};
/* s converted to dt (a computing dtype) by the rules; FP16 and BF16 as
 * the float they hold. */
union pld__scalar pld__scalar_of(pld_dtype dt, double s);

/* ---- walking a tile's elements ------------------------------------------ */

/* Tiles of one shape seen as contiguous runs of elements: a single run of
 * rows * cols when none of the tiles pads its rows (the whole tile is one
 * flat loop), else one run per row.  Run r of tile t starts at
 * t->data + r * t->row_bytes. */
struct pld__runs {
  size_t count, len;
};
static inline struct pld__runs pld__tile_runs(const pld_tile *a,
                                              const pld_tile *b) {
  struct pld__runs r;
  const size_t cols = (size_t)a->cols, rows = (size_t)a->rows;
  if (a->row_bytes == cols * pld__dtype_size(a->dtype) &&
      b->row_bytes == cols * pld__dtype_size(b->dtype)) {
    r.count = 1;
    r.len = rows * cols;
  } else {
    r.count = rows;
    r.len = cols;
  }
  return r;
}

static inline unsigned char *pld__run_ptr(const pld_tile *t, size_t r) {
  return t->data + r * t->row_bytes;
}

/* Byte offset of element (row, col) of t's matrix, and its row stride. */
static inline size_t pld__tensor_offset(const struct pld__tensor *t,
                                        int64_t row, int64_t col) {
  return ((size_t)row * (size_t)pld__tensor_cols(t) + (size_t)col) *
         pld_dtype_size(t->dtype);
}

static inline size_t pld__tensor_stride(const struct pld__tensor *t) {
  return (size_t)pld__tensor_cols(t) * pld_dtype_size(t->dtype);
}

/* n copies of the element at `elem` (esize bytes) from dst on. */
void pld__fill_elems(void *dst, const void *elem, size_t esize, size_t n);

#endif
