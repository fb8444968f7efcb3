/* tile/rank.c: the operations of pld/tile.h that rank along rows
 * (argmax, argmin, top-k) and the prefix sums along rows and columns.
 * (Comparisons, selection and index tiles: tile/route.c.)
 *
 * Every loop is compiled once per level (tile/isa.h) from the same
 * source, and none of them depends on the order gcc picks for its lanes:
 * ranking compares integer keys (exact), and prefix sums add in order.
 * So every level computes the same bits.
 *
 * Ranking compares keys: int32s in the order of the numbers.  An integer
 * is its own key.  A float's key is its bits as an int32 with a negative
 * float's magnitude bits flipped (the larger the magnitude, the smaller
 * the key), after adding +0 (which makes -0 into +0: they are equal
 * numbers), and every NaN's key is INT32_MAX (larger than every number,
 * all NaNs equal).  Keys are computed a chunk of a row at a time, in a
 * vectorized loop; the extreme of a chunk and the first column holding it
 * are found in blocks of LANES (vectorized), and top-k keeps its best
 * keys sorted, inserting only the keys above the k-th best, which a mask
 * of each block of LANES keys points at. */
#include <string.h>

#include "tile/convert.h"
#include "tile/convert_loops.h"
#include "tile/isa.h"
#include "tile/tile.h"

/* ---- ranking --------------------------------------------------------------
 */

#define LANES 16

/* The key of a float (top of this file). */
static inline int32_t key_f32(float x) {
  const float z = x + 0.0f;
  const int32_t s = (int32_t)pld__f32_bits(z);
  const int32_t key = s ^ (int32_t)((uint32_t)(s >> 31) >> 1);
  return z == z ? key : INT32_MAX;
}

/* The keys of n elements of dt at x (tmp: floats of FP16 and BF16). */
PLD__ISA_INLINE void keys_of(const int isa, pld_dtype dt, int32_t *restrict key,
                             float *restrict tmp, const unsigned char *x,
                             size_t n) {
  switch (dt) {
  case PLD_FP32: {
    const float *f = (const float *)(const void *)x;
    PLD__VLOOP(float, i, n, key[i] = key_f32(f[i]););
    break;
  }
  case PLD_FP16:
  case PLD_BF16:
    pld__load_f32_at(isa, dt, tmp, x, n);
    PLD__VLOOP(float, i, n, key[i] = key_f32(tmp[i]););
    break;
#define KEYS_INT_CASE(name, T, lo, hi)                                         \
  case PLD_##name: {                                                           \
    const T *v = (const T *)(const void *)x;                                   \
    PLD__VLOOP(int32_t, i, n, key[i] = (int32_t)v[i];);                        \
    break;                                                                     \
  }
    PLD__INT_DTYPES(KEYS_INT_CASE)
#undef KEYS_INT_CASE
  default:
    break;
  }
}

/* The largest (or smallest) of n > 0 keys, in LANES independent lanes. */
#define KEY_FOLD(PICK)                                                         \
  do {                                                                         \
    for (size_t l = 0; l < LANES; l++)                                         \
      lane[l] = key[0];                                                        \
    size_t i = 0;                                                              \
    for (; i + LANES <= n; i += LANES)                                         \
      for (size_t l = 0; l < LANES; l++)                                       \
        lane[l] = PICK(lane[l], key[i + l]);                                   \
    for (; i < n; i++)                                                         \
      lane[0] = PICK(lane[0], key[i]);                                         \
    for (size_t l = 1; l < LANES; l++)                                         \
      lane[0] = PICK(lane[0], lane[l]);                                        \
  } while (0)

PLD__ISA_INLINE int32_t key_extreme(int largest, const int32_t *key, size_t n) {
  int32_t lane[LANES];
  if (largest)
    KEY_FOLD(PLD__IMAX);
  else
    KEY_FOLD(PLD__IMIN);
  return lane[0];
}

/* The first i < n with key[i] == v, which one of them is: blocks of
 * LANES tested at once, then the block that holds it one by one. */
PLD__ISA_INLINE size_t key_find(const int32_t *key, size_t n, int32_t v) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    int hit = 0;
    for (size_t l = 0; l < LANES; l++)
      hit |= key[i + l] == v;
    if (hit)
      break;
  }
  while (key[i] != v)
    i++;
  return i;
}

/* idx[r][0] = the first column of the largest (or smallest) key of row
 * r; reading the whole row before writing keeps idx == a correct. */
PLD__ISA_FUNCTION(static, arg_rows,
                  (int largest, pld_tile *idx, const pld_tile *a),
                  (largest, idx, a)) {
  const pld_dtype dt = a->dtype;
  const size_t cols = (size_t)a->cols, es = pld__dtype_size(dt);
  int32_t key[PLD__CHUNK];
  float tmp[PLD__CHUNK];
  for (size_t r = 0; r < (size_t)a->rows; r++) {
    const unsigned char *row = pld__run_ptr(a, r);
    int32_t best = 0, at = -1;
    for (size_t j0 = 0; j0 < cols; j0 += PLD__CHUNK) {
      const size_t n = cols - j0 < PLD__CHUNK ? cols - j0 : PLD__CHUNK;
      keys_of(isa, dt, key, tmp, row + j0 * es, n);
      const int32_t m = key_extreme(largest, key, n);
      /* A later chunk wins only with a strictly better key: ties go to
       * the lower column. */
      if (at < 0 || (largest ? m > best : m < best)) {
        best = m;
        at = (int32_t)(j0 + key_find(key, n, m));
      }
    }
    memcpy(pld__run_ptr(idx, r), &at, sizeof at);
  }
}

/* Inserts (key, col) into the sorted best keys bk and their columns bc,
 * of which there are *count (at most topk): after every key at least as
 * large (a later column loses a tie), dropping the last if full. */
static inline void topk_insert(int32_t *restrict bk, int32_t *restrict bc,
                               size_t *restrict count, size_t topk, int32_t key,
                               int32_t col) {
  size_t p = *count < topk ? (*count)++ : topk - 1;
  for (; p > 0 && bk[p - 1] < key; p--) {
    bk[p] = bk[p - 1];
    bc[p] = bc[p - 1];
  }
  bk[p] = key;
  bc[p] = col;
}

/* Bit l set where key[l] > thr, for the LANES keys at key: one compare
 * and a mask move per vector (gcc does not find those: it builds the
 * mask lane by lane, 3 instructions per key). */
#if PLD__ISA_X86
PLD__ISA_TARGET_AVX512 static inline uint32_t
keys_above_avx512(const int32_t *key, int32_t thr) {
  return _mm512_cmpgt_epi32_mask(_mm512_loadu_si512(key),
                                 _mm512_set1_epi32(thr));
}

PLD__ISA_TARGET_AVX2 static inline uint32_t keys_above_avx2(const int32_t *key,
                                                            int32_t thr) {
  const __m256i t = _mm256_set1_epi32(thr);
  uint32_t m = 0;
  for (size_t l = 0; l < LANES; l += 8) {
    const __m256i v =
        _mm256_loadu_si256((const __m256i *)(const void *)(key + l));
    m |= (uint32_t)_mm256_movemask_ps(
             _mm256_castsi256_ps(_mm256_cmpgt_epi32(v, t)))
         << l;
  }
  return m;
}

static inline uint32_t keys_above_sse2(const int32_t *key, int32_t thr) {
  const __m128i t = _mm_set1_epi32(thr);
  uint32_t m = 0;
  for (size_t l = 0; l < LANES; l += 4) {
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(key + l));
    m |= (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(v, t)))
         << l;
  }
  return m;
}
#endif

PLD__ISA_INLINE uint32_t keys_above(const int isa, const int32_t *key,
                                    int32_t thr) {
  (void)isa;
#if PLD__ISA_X86
  if (isa >= PLD__ISA_AVX512)
    return keys_above_avx512(key, thr);
  if (isa >= PLD__ISA_AVX2)
    return keys_above_avx2(key, thr);
  return keys_above_sse2(key, thr);
#else
  uint32_t m = 0;
  for (size_t l = 0; l < LANES; l++)
    m |= (uint32_t)(key[l] > thr) << l;
  return m;
#endif
}

/* Top-k by insertion: the chunks' keys go through the sorted best (bk,
 * bc); once topk are there, only a key above the k-th best (thr) enters.
 * A block of LANES keys gives the mask of those above thr at once, and
 * only its set bits are looked at. */
PLD__ISA_INLINE void topk_by_insertion(const int isa, pld_dtype dt,
                                       const unsigned char *row, size_t cols,
                                       size_t topk, int32_t *restrict key,
                                       float *restrict tmp,
                                       int32_t *restrict bk,
                                       int32_t *restrict bc) {
  const size_t es = pld__dtype_size(dt);
  size_t count = 0;
  for (size_t j0 = 0; j0 < cols; j0 += PLD__CHUNK) {
    const size_t n = cols - j0 < PLD__CHUNK ? cols - j0 : PLD__CHUNK;
    keys_of(isa, dt, key, tmp, row + j0 * es, n);
    size_t t = 0;
    for (; t < n && count < topk; t++)
      topk_insert(bk, bc, &count, topk, key[t], (int32_t)(j0 + t));
    /* (Not full only when the chunk ended: then t == n.) */
    int32_t thr = count == topk ? bk[topk - 1] : INT32_MIN;
    /* At every level: with SSE2 too a mask beats key by key (measured:
     * 1.5 against 1.0 Gelem/s for k = 2 on 64 x 128). */
    for (; t + LANES <= n; t += LANES) {
      uint32_t above = keys_above(isa, key + t, thr);
      while (above) {
        const size_t i = t + (size_t)__builtin_ctz(above);
        above &= above - 1;
        if (key[i] > thr) {
          topk_insert(bk, bc, &count, topk, key[i], (int32_t)(j0 + i));
          thr = bk[topk - 1];
        }
      }
    }
    for (; t < n; t++)
      if (key[t] > thr) {
        topk_insert(bk, bc, &count, topk, key[t], (int32_t)(j0 + t));
        thr = bk[topk - 1];
      }
  }
}

/* out[t] = the element of es bytes at column col[t] of row, t < n: typed
 * copies (a memcpy of a size known only at run time is a library call
 * per element). */
static inline void gather_elems(unsigned char *restrict out,
                                const unsigned char *restrict row,
                                const int32_t *restrict col, size_t n,
                                size_t es) {
#define GATHER_ELEMS(T)                                                        \
  do {                                                                         \
    for (size_t t = 0; t < n; t++)                                             \
      memcpy(out + t * sizeof(T), row + (size_t)col[t] * sizeof(T),            \
             sizeof(T));                                                       \
  } while (0)
  if (es == 4)
    GATHER_ELEMS(uint32_t);
  else if (es == 2)
    GATHER_ELEMS(uint16_t);
  else
    GATHER_ELEMS(uint8_t);
#undef GATHER_ELEMS
}

/* The topk best keys of each row into idx (and their elements into vals,
 * unless NULL); bk, bc and bv are scratch of topk keys, columns and
 * elements. */
PLD__ISA_FUNCTION(static, topk_rows,
                  (pld_tile * vals, pld_tile *idx, const pld_tile *a,
                   size_t topk, int32_t *bk, int32_t *bc, unsigned char *bv),
                  (vals, idx, a, topk, bk, bc, bv)) {
  const pld_dtype dt = a->dtype;
  const size_t cols = (size_t)a->cols, es = pld__dtype_size(dt);
  int32_t key[PLD__CHUNK];
  float tmp[PLD__CHUNK];
  for (size_t r = 0; r < (size_t)a->rows; r++) {
    const unsigned char *row = pld__run_ptr(a, r);
    topk_by_insertion(isa, dt, row, cols, topk, key, tmp, bk, bc);
    /* The elements are gathered before idx or vals is written: either
     * may be a. */
    if (vals)
      gather_elems(bv, row, bc, topk, es);
    int32_t *out = (int32_t *)(void *)pld__run_ptr(idx, r);
    for (size_t t = 0; t < topk; t++)
      out[t] = bc[t];
    if (vals)
      memcpy(pld__run_ptr(vals, r), bv, topk * es);
  }
}

/* idx is an INT32 tile of [rows, cols]; `why` says what it holds. */
static int idx_check(struct pld__core *c, const char *fn, const pld_tile *idx,
                     int32_t rows, int32_t cols, const pld_tile *a,
                     const char *why) {
  if (pld__tile_check(c, fn, "idx", idx))
    return c->status;
  if (idx->dtype == PLD_INT32 && idx->rows == rows && idx->cols == cols)
    return PLD_OK;
  char si[64], sa[64];
  pld__tile_str(si, sizeof si, idx);
  pld__tile_str(sa, sizeof sa, a);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "idx is %s, a is %s: idx must be INT32[%d, %d] (%s)", si,
                    sa, (int)rows, (int)cols, why);
}

static int arg_run(struct pld__core *c, const char *fn, int largest,
                   pld_tile *idx, const pld_tile *a) {
  if (pld__vector_only(c, fn) || pld__tile_compute_check(c, fn, "a", a) ||
      idx_check(c, fn, idx, a->rows, 1, a, "one column index per row of a"))
    return c->status;
  pld__tile_work(PLD__TC_REDUCE, 1, a);
  arg_rows(largest, idx, a);
  return PLD_OK;
}

int pld_row_argmax(pld_core k, pld_tile *idx, const pld_tile *a) {
  return arg_run(k.p, "pld_row_argmax", 1, idx, a);
}

int pld_row_argmin(pld_core k, pld_tile *idx, const pld_tile *a) {
  return arg_run(k.p, "pld_row_argmin", 0, idx, a);
}

/* Scratch of top-k on the stack up to this many; above, from the heap. */
#define TOPK_STACK 512

int pld_row_topk(pld_core k, pld_tile *vals, pld_tile *idx, const pld_tile *a,
                 int32_t topk) {
  struct pld__core *c = k.p;
  const char *fn = "pld_row_topk";
  if (pld__vector_only(c, fn) || pld__tile_compute_check(c, fn, "a", a))
    return c->status;
  char sa[64];
  pld__tile_str(sa, sizeof sa, a);
  if (topk < 1 || topk > a->cols)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "topk is %d: expected 1 to %d (the columns of a, %s)",
                      (int)topk, (int)a->cols, sa);
  if (idx_check(c, fn, idx, a->rows, topk, a,
                "topk column indices per row of a"))
    return c->status;
  if (vals) {
    if (pld__tile_check(c, fn, "vals", vals))
      return c->status;
    if (vals->dtype != a->dtype || vals->rows != a->rows ||
        vals->cols != topk) {
      char sv[64];
      pld__tile_str(sv, sizeof sv, vals);
      return pld__kfail(c, PLD_ERR_ARG, fn,
                        "vals is %s, a is %s: vals must be %s[%d, %d] (topk "
                        "values per row of a, a's dtype)",
                        sv, sa, pld_dtype_name(a->dtype), (int)a->rows,
                        (int)topk);
    }
    if (vals == idx)
      return pld__kfail(c, PLD_ERR_ARG, fn,
                        "vals and idx are the same tile: they must differ");
  }
  const size_t n = (size_t)topk;
  int32_t stack_keys[TOPK_STACK], stack_cols[TOPK_STACK];
  unsigned char stack_vals[TOPK_STACK * sizeof(int32_t)];
  int32_t *bk = stack_keys, *bc = stack_cols;
  unsigned char *bv = stack_vals, *heap = NULL;
  if (n > TOPK_STACK) {
    heap = pld__malloc(n * (2 * sizeof(int32_t) + pld__dtype_size(a->dtype)));
    if (!heap)
      return pld__kfail(c, PLD_ERR_NOMEM, fn,
                        "no memory for the scratch of topk %d", (int)topk);
    bk = (int32_t *)(void *)heap;
    bc = bk + n;
    bv = (unsigned char *)(bc + n);
  }
  pld__tile_work(PLD__TC_REDUCE, 1, a);
  topk_rows(vals, idx, a, n, bk, bc, bv);
  pld__free(heap);
  return PLD_OK;
}

/* ---- prefix sums ----------------------------------------------------------
 */

/* Columns per block of column sums (on the stack). */
#define COL_BLOCK 256

/* One step of a prefix sum: OUT gets CONV of the sum S (of type ACC)
 * before adding V (excl) or after. */
#define CUM_STEP(ACC, S, V, OUT, CONV)                                         \
  do {                                                                         \
    const ACC v_ = V; /* read before OUT, which may be V's element */          \
    if (excl) {                                                                \
      OUT = CONV(S);                                                           \
      S = (ACC)(S + v_);                                                       \
    } else {                                                                   \
      S = (ACC)(S + v_);                                                       \
      OUT = CONV(S);                                                           \
    }                                                                          \
  } while (0)

#define TO_F32(s) ((float)(s))
#define TO_F32_ODD(s) pld__f64_to_f32_odd(s)

/* A row of 32-bit integers four at a time, the first n - n % 4: in each
 * block the lanes' own prefix sums (two shifted adds, off the chain from
 * block to block), then the sum so far (a vector of it: the chain is an
 * add and a broadcast per block, where a scalar sum is an add per
 * element).  Wrapping sums are the same in any order.  *s is the sum of
 * the elements done; returns their count. */
typedef uint32_t cum_u32x4 __attribute__((vector_size(16)));
#if defined(__clang__)
#define CUM_LANES(x, y, a, b, c, d) __builtin_shufflevector(x, y, a, b, c, d)
#else
#define CUM_LANES(x, y, a, b, c, d)                                            \
  __builtin_shuffle(x, y, (cum_u32x4){a, b, c, d})
#endif
PLD__ISA_INLINE size_t cumsum_int32_lanes(const int excl, unsigned char *d,
                                          const unsigned char *x, size_t n,
                                          uint32_t *s) {
  const cum_u32x4 zero = {0, 0, 0, 0};
  cum_u32x4 carry = zero;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    cum_u32x4 v, p;
    memcpy(&v, x + j * 4, sizeof v);
    p = v + CUM_LANES(v, zero, 4, 0, 1, 2);
    p = p + CUM_LANES(p, zero, 4, 4, 0, 1) + carry;
    carry = CUM_LANES(p, p, 3, 3, 3, 3);
    const cum_u32x4 out = excl ? p - v : p;
    memcpy(d + j * 4, &out, sizeof out);
  }
  *s = carry[0];
  return j;
}

/* Row r of a into dst, summing along it (excl a constant where this is
 * inlined, so that each case is two loops). */
PLD__ISA_INLINE void cumsum_row(const int isa, const int excl, pld_dtype dt,
                                unsigned char *d, const unsigned char *x,
                                size_t n, float *tmp) {
  switch (dt) {
  case PLD_FP32: {
    const float *f = (const float *)(const void *)x;
    float *o = (float *)(void *)d;
    double s = 0;
    for (size_t j = 0; j < n; j++)
      CUM_STEP(double, s, (double)f[j], o[j], TO_F32);
    break;
  }
  case PLD_FP16:
  case PLD_BF16: {
    /* Through floats (exact), the sums rounded to odd so that the
     * conversion to the half rounds them once. */
    double s = 0;
    for (size_t j0 = 0; j0 < n; j0 += PLD__CHUNK) {
      const size_t m = n - j0 < PLD__CHUNK ? n - j0 : PLD__CHUNK;
      pld__load_f32_at(isa, dt, tmp, x + j0 * 2, m);
      for (size_t j = 0; j < m; j++)
        CUM_STEP(double, s, (double)tmp[j], tmp[j], TO_F32_ODD);
      pld__store_f32_at(isa, dt, d + j0 * 2, tmp, m);
    }
    break;
  }
#define CUMSUM_ROW_INT(name, T, lo, hi)                                        \
  case PLD_##name: {                                                           \
    const T *v = (const T *)(const void *)x;                                   \
    T *o = (T *)(void *)d;                                                     \
    uint32_t s = 0; /* the wrapping sum */                                     \
    size_t j = sizeof(T) == 4 ? cumsum_int32_lanes(excl, d, x, n, &s) : 0;     \
    for (; j < n; j++)                                                         \
      CUM_STEP(uint32_t, s, (uint32_t)v[j], o[j], (T));                        \
    break;                                                                     \
  }
    PLD__INT_DTYPES(CUMSUM_ROW_INT)
#undef CUMSUM_ROW_INT
  default:
    break;
  }
}

PLD__ISA_FUNCTION(static, cumsum_rows,
                  (int exclusive, pld_tile *dst, const pld_tile *a),
                  (exclusive, dst, a)) {
  float tmp[PLD__CHUNK];
  for (size_t r = 0; r < (size_t)a->rows; r++) {
    if (exclusive)
      cumsum_row(isa, 1, a->dtype, pld__run_ptr(dst, r), pld__run_ptr(a, r),
                 (size_t)a->cols, tmp);
    else
      cumsum_row(isa, 0, a->dtype, pld__run_ptr(dst, r), pld__run_ptr(a, r),
                 (size_t)a->cols, tmp);
  }
}

/* Columns [j0, j0 + n) of every row: the running sums acc (double for
 * floats, uint32 for integers, which wrap) take each row of a in turn,
 * and dst's row gets them.  The dtype is chosen once, outside the rows
 * (at these speeds a switch per row would cost a tenth). */
#define CUM_COLS_ROWS(BODY)                                                    \
  for (size_t r = 0; r < (size_t)a->rows; r++) {                               \
    unsigned char *d = pld__run_ptr(dst, r) + j0 * es;                         \
    const unsigned char *x = pld__run_ptr(a, r) + j0 * es;                     \
    BODY                                                                       \
  }

PLD__ISA_INLINE void
cumsum_col_block(const int isa, const int excl, pld_tile *dst,
                 const pld_tile *a, size_t j0, size_t n, double *restrict accf,
                 uint32_t *restrict acci, float *restrict tmp) {
  const pld_dtype dt = a->dtype;
  const size_t es = pld__dtype_size(dt);
  switch (dt) {
  case PLD_FP32:
    CUM_COLS_ROWS(const float *f = (const float *)(const void *)x;
                  float *o = (float *)(void *)d; PLD__VLOOP(
                      double, j, n,
                      CUM_STEP(double, accf[j], (double)f[j], o[j], TO_F32););)
    break;
  case PLD_FP16:
  case PLD_BF16:
    CUM_COLS_ROWS(pld__load_f32_at(isa, dt, tmp, x, n);
                  PLD__VLOOP(double, j, n,
                             CUM_STEP(double, accf[j], (double)tmp[j], tmp[j],
                                      TO_F32_ODD););
                  pld__store_f32_at(isa, dt, d, tmp, n);)
    break;
#define CUMSUM_COLS_INT(name, T, lo, hi)                                       \
  case PLD_##name:                                                             \
    CUM_COLS_ROWS(                                                             \
        const T *v = (const T *)(const void *)x; T *o = (T *)(void *)d;        \
        PLD__VLOOP(uint32_t, j, n,                                             \
                   CUM_STEP(uint32_t, acci[j], (uint32_t)v[j], o[j], (T)););)  \
    break;
    PLD__INT_DTYPES(CUMSUM_COLS_INT)
#undef CUMSUM_COLS_INT
  default:
    break;
  }
}

/* Columns in strips of W, summed down every row with the strip's sums in
 * a local array the compiler keeps in registers (as a loop that knows the
 * tile's width does): sums kept in memory cost a load and a store more
 * per vector.  W is what the level's registers hold (for integers, 16
 * SSE registers 64 sums, 16 AVX2 ones 128).  Returns the columns done. */
#define CUM_COLS_STRIPS(ACC, T, W, CONV)                                       \
  do {                                                                         \
    for (; j0 + (W) <= cols; j0 += (W)) {                                      \
      ACC s[W] = {0};                                                          \
      for (size_t r = 0; r < rows; r++) {                                      \
        const T *x = (const T *)(const void *)(ad + r * arb) + j0;             \
        T *o = (T *)(void *)(dd + r * drb) + j0;                               \
        PLD__IVDEP                                                             \
        for (size_t l = 0; l < (W); l++)                                       \
          CUM_STEP(ACC, s[l], (ACC)x[l], o[l], CONV);                          \
      }                                                                        \
    }                                                                          \
  } while (0)

PLD__ISA_INLINE size_t cumsum_col_strips(const int isa, const int excl,
                                         pld_tile *dst, const pld_tile *a) {
  const size_t rows = (size_t)a->rows, cols = (size_t)a->cols;
  const unsigned char *const ad = a->data;
  unsigned char *const dd = dst->data;
  const size_t arb = a->row_bytes, drb = dst->row_bytes;
  size_t j0 = 0;
  switch (a->dtype) {
  case PLD_FP32:
    CUM_COLS_STRIPS(double, float, 2 * PLD__VBLOCK(double), TO_F32);
    break;
#define CUMSUM_STRIPS_INT(name, T, lo, hi)                                     \
  case PLD_##name:                                                             \
    if (isa >= PLD__ISA_AVX2)                                                  \
      CUM_COLS_STRIPS(uint32_t, T, 4 * PLD__VBLOCK(uint32_t), (T));            \
    else                                                                       \
      CUM_COLS_STRIPS(uint32_t, T, 2 * PLD__VBLOCK(uint32_t), (T));            \
    break;
    PLD__INT_DTYPES(CUMSUM_STRIPS_INT)
#undef CUMSUM_STRIPS_INT
  default:
    break;
  }
  return j0;
}

PLD__ISA_FUNCTION(static, cumsum_cols,
                  (int exclusive, pld_tile *dst, const pld_tile *a),
                  (exclusive, dst, a)) {
  const size_t cols = (size_t)a->cols;
  double accf[COL_BLOCK];
  uint32_t acci[COL_BLOCK];
  float tmp[COL_BLOCK];
  size_t j0 = exclusive ? cumsum_col_strips(isa, 1, dst, a)
                        : cumsum_col_strips(isa, 0, dst, a);
  for (; j0 < cols; j0 += COL_BLOCK) {
    const size_t n = cols - j0 < COL_BLOCK ? cols - j0 : COL_BLOCK;
    memset(accf, 0, n * sizeof *accf);
    memset(acci, 0, n * sizeof *acci);
    if (exclusive)
      cumsum_col_block(isa, 1, dst, a, j0, n, accf, acci, tmp);
    else
      cumsum_col_block(isa, 0, dst, a, j0, n, accf, acci, tmp);
  }
}

static int cumsum_run(struct pld__core *c, const char *fn, int by_row,
                      pld_tile *dst, const pld_tile *a, int exclusive) {
  if (pld__vector_only(c, fn) || pld__tile_check2(c, fn, "dst", dst, "a", a, 1))
    return c->status;
  pld__tile_work(PLD__TC_REDUCE, 2, a);
  (by_row ? cumsum_rows : cumsum_cols)(exclusive != 0, dst, a);
  return PLD_OK;
}

int pld_row_cumsum(pld_core k, pld_tile *dst, const pld_tile *a,
                   int exclusive) {
  return cumsum_run(k.p, "pld_row_cumsum", 1, dst, a, exclusive);
}

int pld_col_cumsum(pld_core k, pld_tile *dst, const pld_tile *a,
                   int exclusive) {
  return cumsum_run(k.p, "pld_col_cumsum", 0, dst, a, exclusive);
}
