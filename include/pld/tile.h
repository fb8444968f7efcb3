/* pld/tile.h: tiles, the data kernels compute on.
 *
 * A tile is a 2-D block in the local memory of the AI core running the
 * kernel: the Unified Buffer of a vector core (a2a3: 192 KiB, a5: 256 KiB)
 * or the L1 buffer of a cube core (512 KiB).  A tile lives until
 * pld_tile_free or the end of the kernel block.
 *
 * Tile memory follows the hardware's rules, and only those:
 *  - Capacity: the tiles live at once on a core fit its Unified Buffer
 *    (vector core) or L1 (cube core).  Matmul operands must also each fit
 *    their cube buffer: a L0A, b L0B, c L0C (64, 64 and 128 KiB on a2a3;
 *    64, 64 and 256 KiB on a5).
 *  - Rows are padded to 32 bytes, the hardware granule, and the padding
 *    counts against capacity: pld_tile_bytes is rows * padded row.
 *  - Tiles start on 32-byte boundaries, so they pack with no space
 *    between them: tiles whose pld_tile_bytes add up to the capacity all
 *    fit at once.
 *  - Allocation is contiguous and first fit: a tile takes the lowest gap
 *    between live tiles that holds it whole, and tiles never move (as at
 *    fixed on-chip addresses: there is no compaction).  After frees, an
 *    allocation can therefore fail although enough bytes are free in
 *    total; its message says the memory is fragmented and gives the
 *    largest free gap.
 *  - The number of tiles is not limited: a core holds as many as fit
 *    (capacity / 32 one-row tiles of 32 bytes).
 * An allocation that breaks them fails with PLD_ERR_TILE_MEMORY and a
 * message naming the kernel, the tile, the bytes it needs, and the bytes
 * in use of the core's capacity.
 *
 * Vector and cube cores.  A PLD_KERNEL runs on vector cores and may call
 * everything here but matmul.  A PLD_CUBE_KERNEL runs on cube cores, which
 * do matmul and data movement only, and may call: pld_tile_new, pld_full,
 * pld_fill (the cube unit initialises its buffers with a constant),
 * pld_tile_free and the pld_tile_* accessors, pld_load, pld_load_into,
 * pld_store, pld_load_rows, pld_store_rows, pld_read, pld_write
 * (pld/tensor.h), pld_matmul and pld_matmul_acc, besides block identity
 * and communication (signals, remote loads and stores, barriers).  The
 * operations marked "Vector cores only" below (elementwise, tile-scalar,
 * unary, pld_cast, reductions, expansions, the routing section) fail
 * there with PLD_ERR_LEVEL (so in the cube part of a mixed kernel).
 *
 * Every call here takes the pld_core of the running kernel, so none of
 * them compiles outside a kernel.  Operations write into a destination tile
 * the caller provides; it may be one of the sources (in place).  Shapes
 * must match exactly and dtypes must be equal (pld_cast converts).  A
 * failing call records its message in the kernel and returns its status;
 * later calls of that kernel do nothing and return the same status.  Calls
 * returning a tile return NULL then.
 *
 * Tensors are seen as matrices for loads and stores: a tensor of shape
 * [d0, ..., dn-1] is [d0 * ... * dn-2, dn-1] (a 1-D tensor is one row).
 *
 * Conversions (pld_cast, scalar operands, pld_write): float to float rounds
 * to nearest even, overflowing to infinity; float to integer rounds to
 * nearest even, then saturates to the integer range (NaN becomes 0);
 * integer to integer saturates; integer to float rounds to nearest even;
 * BOOL (a mask) to any computing dtype gives 0 or 1 (a nonzero byte is
 * 1), and any computing dtype to BOOL gives 1 for nonzero and 0 for zero
 * and NaN (as pld_write stores a BOOL).
 * Integer arithmetic wraps (two's complement); integer division truncates
 * toward zero and fails the kernel on a zero divisor.  exp, log, sqrt,
 * rsqrt and reciprocal take float tiles only (PLD_ERR_UNSUPPORTED
 * otherwise).  Float reductions accumulate in double, integer ones in
 * int64 (sums keep the low bits: the wrapping sum).
 *
 * Statuses: PLD_OK; PLD_ERR_ARG (NULL tile, shape or dtype mismatch, a
 * store to an In tensor, integer division by zero); PLD_ERR_BOUNDS
 * (outside a tensor); PLD_ERR_TILE_MEMORY (the rules above);
 * PLD_ERR_UNSUPPORTED (an op the dtype lacks, any computation on an
 * INT64, FP64 or BOOL tile but the exceptions the routing section lists:
 * pld_select and pld_selects move every dtype, and BOOL masks are
 * compared into, combined, selected by and cast); PLD_ERR_LEVEL (matmul on a
 * vector core, a vector-only operation on a cube core); PLD_ERR_NOMEM
 * (matmul whose c is also a or b copies that operand to the heap).
 */
#ifndef PLD_TILE_H
#define PLD_TILE_H

#include "pld/types.h"

typedef struct pld_tile pld_tile; /* owned by the kernel's core */

/* Dtypes.  Tiles compute on FP32, FP16, BF16, INT32, INT16, INT8 and
 * UINT8.  They also hold INT64, FP64 and BOOL, to move data only: such
 * tiles are allocated, filled, loaded, stored, freed and moved between
 * ranks (pld/rma.h), and every operation that computes on them fails with
 * PLD_ERR_UNSUPPORTED. */

/* Allocation (any core).  pld_tile_new: uninitialised; pld_full: every
 * element = value.  rows and cols must be > 0.  The tile takes the lowest
 * free gap of tile memory that holds it (rules at the top of this file). */
pld_tile *pld_tile_new(pld_core k, pld_dtype dtype, int32_t rows, int32_t cols);
pld_tile *pld_full(pld_core k, pld_dtype dtype, int32_t rows, int32_t cols,
                   double value);
/* Returns the tile's memory to the core.  NULL is a no-op.  Unlike the
 * other calls it still frees after a failure, so cleanup code works. */
void pld_tile_free(pld_core k, pld_tile *t);

int32_t pld_tile_rows(const pld_tile *t);
int32_t pld_tile_cols(const pld_tile *t);
pld_dtype pld_tile_dtype(const pld_tile *t);
/* Bytes the tile occupies in tile memory (rows * padded row). */
size_t pld_tile_bytes(const pld_tile *t);

/* Tensor <-> tile (any core).  pld_load allocates a rows x cols tile of
 * the tensor's dtype and fills it from the tensor's matrix at (row, col);
 * pld_store writes the tile there.  Any part outside the tensor fails with
 * PLD_ERR_BOUNDS, naming the tensor, its shape and the region. */
pld_tile *pld_load(pld_core k, pld_tensor src, int64_t row, int64_t col,
                   int32_t rows, int32_t cols);
int pld_load_into(pld_core k, pld_tile *dst, pld_tensor src, int64_t row,
                  int64_t col);
int pld_store(pld_core k, const pld_tile *t, pld_tensor dst, int64_t row,
              int64_t col);

/* Asynchronous loads (the original's pl.prefetch).  pld_prefetch starts
 * filling dst from src's matrix at (row, col), as pld_load_into does (its
 * checks, at the prefetch); dst is in flight until pld_prefetch_wait(k,
 * dst), and any use of it before (an operation, a store, another prefetch,
 * pld_tile_free) fails with PLD_ERR_ARG, as does a wait with no prefetch
 * in flight and a block that returns with one.  Between the two the
 * kernel computes on other tiles: on the chip, the copy of the next tile
 * overlaps the compute on this one, and so it does in the timing model
 * (pld/model.h: the copy goes on the core's move engine, the wait takes
 * what is left of it).  src's region must not change before the wait
 * (the simulator copies at the prefetch). */
int pld_prefetch(pld_core k, pld_tile *dst, pld_tensor src, int64_t row,
                 int64_t col);
int pld_prefetch_wait(pld_core k, pld_tile *dst);

/* Rows by index (any core), the permutations of MoE routing.  idx is an
 * INT32 tile of shape [n, 1] or [1, n], n the rows of the tile moved; the
 * caller keeps ownership of every tile.  Entry i names the tensor matrix
 * row that tile row i comes from or goes to, at columns [col, col + the
 * tile's cols).  A negative entry names no row: pld_load_rows zero-fills
 * tile row i, pld_store_rows skips it (the padded capacity slots of an
 * expert).  pld_load_rows (gather): dst row i = src row idx[i]; dst and
 * src have one dtype.  pld_store_rows (scatter): dst row idx[i] = t row i;
 * rows are written in index order, so of duplicate entries the later one
 * lands.  With PLD_ATOMIC_ADD it adds t's rows element by element,
 * atomically (FP32, FP16, BF16, INT32, INT16, INT8; floats add in double
 * and round once, integers wrap): duplicate entries and other blocks
 * adding into the same rows all count (an MoE combine).  Every entry and
 * the columns are checked before any byte moves, so a failed call changes
 * nothing.  Returns PLD_OK; PLD_ERR_ARG (a NULL or foreign tile, idx not
 * an INT32 [n, 1] or [1, n] tile, dtypes that differ, a store to an In
 * tensor, an atomic that is neither PLD_ATOMIC_NONE nor PLD_ATOMIC_ADD);
 * PLD_ERR_BOUNDS (an entry >= the tensor's rows, or columns outside it:
 * the message names the tensor, its shape, the position i and the
 * entry's value); PLD_ERR_UNSUPPORTED (PLD_ATOMIC_ADD on another dtype).
 * The remote forms are pld_remote_load_rows and pld_remote_store_rows
 * (pld/rma.h). */
int pld_load_rows(pld_core k, pld_tile *dst, pld_tensor src,
                  const pld_tile *idx, int64_t col);
int pld_store_rows(pld_core k, const pld_tile *t, pld_tensor dst,
                   const pld_tile *idx, int64_t col, pld_atomic atomic);

/* dst = value everywhere (any core). */
int pld_fill(pld_core k, pld_tile *dst, double value);

/* Elementwise, tile op tile.  Vector cores only. */
int pld_add(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_sub(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_mul(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_div(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_maximum(pld_core k, pld_tile *dst, const pld_tile *a,
                const pld_tile *b);
int pld_minimum(pld_core k, pld_tile *dst, const pld_tile *a,
                const pld_tile *b);

/* Elementwise, tile op scalar (the scalar converted to the tile's dtype).
 * Vector cores only. */
int pld_adds(pld_core k, pld_tile *dst, const pld_tile *a, double s);
int pld_subs(pld_core k, pld_tile *dst, const pld_tile *a, double s);
int pld_muls(pld_core k, pld_tile *dst, const pld_tile *a, double s);
int pld_divs(pld_core k, pld_tile *dst, const pld_tile *a, double s);
int pld_maxs(pld_core k, pld_tile *dst, const pld_tile *a, double s);
int pld_mins(pld_core k, pld_tile *dst, const pld_tile *a, double s);

/* Elementwise, unary.  Vector cores only. */
int pld_neg(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_abs(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_relu(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_exp(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_log(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_sqrt(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_rsqrt(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_reciprocal(pld_core k, pld_tile *dst, const pld_tile *a);

/* dst = a converted to dst's dtype (rules at the top of this file).
 * Vector cores only. */
int pld_cast(pld_core k, pld_tile *dst, const pld_tile *a);

/* Reductions: row_* give dst [rows, 1], col_* give dst [1, cols].  Vector
 * cores only. */
int pld_row_sum(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_row_max(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_row_min(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_col_sum(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_col_max(pld_core k, pld_tile *dst, const pld_tile *a);
int pld_col_min(pld_core k, pld_tile *dst, const pld_tile *a);

/* Broadcast back: dst[i][j] = v[i][0] (row_expand, v is [rows, 1]) or
 * v[0][j] (col_expand, v is [1, cols]).  Vector cores only. */
int pld_row_expand(pld_core k, pld_tile *dst, const pld_tile *v);
int pld_col_expand(pld_core k, pld_tile *dst, const pld_tile *v);

/* ---- Routing: masks, selection, ranking, prefix sums, integer and index
 * arithmetic (the top-k routing of a mixture of experts).  Vector cores
 * only: on a cube core every call here fails with PLD_ERR_LEVEL.  Each
 * computes the same bits on every instruction level.
 *
 * Masks are BOOL tiles of their operands' shape, 1 for true and 0 for
 * false; an operation reading a mask takes any nonzero byte as true.
 * pld_cast turns a mask into 0/1 of a computing dtype (pld_row_sum of
 * that counts it) and a tile into a mask (nonzero is true). */

/* Comparisons: mask[i][j] = a[i][j] op b[i][j] (pld_cmp) or a[i][j] op s
 * (pld_cmps, s converted to a's dtype first, as pld_adds converts it: an
 * INT8 tile compared with 300 is compared with 127, with 2.5 with 2).
 * mask is BOOL of a's shape; a and b of one shape and computing dtype.
 * Floats compare as IEEE 754 says: NaN is unordered (only PLD_CMP_NE is
 * true of it), -0 equals +0.  Statuses: PLD_ERR_ARG (NULL tile, shape or
 * dtype mismatch, mask not BOOL, op not a pld_cmp_op);
 * PLD_ERR_UNSUPPORTED (INT64, FP64, BOOL operands). */
typedef enum pld_cmp_op {
  PLD_CMP_EQ, /* == */
  PLD_CMP_NE, /* != */
  PLD_CMP_LT, /* < */
  PLD_CMP_LE, /* <= */
  PLD_CMP_GT, /* > */
  PLD_CMP_GE  /* >= */
} pld_cmp_op;
int pld_cmp(pld_core k, pld_tile *mask, const pld_tile *a, const pld_tile *b,
            pld_cmp_op op);
int pld_cmps(pld_core k, pld_tile *mask, const pld_tile *a, double s,
             pld_cmp_op op);

/* Selection: dst[i][j] = mask[i][j] ? a[i][j] : b[i][j] (pld_select), or
 * with s in place of b (pld_selects, s converted to dst's dtype by the
 * rules at the top of this file).  It moves bits, so every dtype is
 * accepted (INT64, FP64 and BOOL too); dst, a and b have one shape and
 * dtype, mask is BOOL of that shape.  dst may be a or b. */
int pld_select(pld_core k, pld_tile *dst, const pld_tile *mask,
               const pld_tile *a, const pld_tile *b);
int pld_selects(pld_core k, pld_tile *dst, const pld_tile *mask,
                const pld_tile *a, double s);

/* Ranking along rows.  Values are ordered as numbers, with NaN larger
 * than every number (as PyTorch's argmax and topk order them) and -0
 * equal to +0; equal values rank by column, the lower column first.
 *  - pld_row_argmax / pld_row_argmin: idx[i][0] = the column of the
 *    largest / smallest element of row i (the first such column); idx is
 *    INT32 [rows, 1].  A row holding a NaN has its first NaN as argmax;
 *    argmin is a NaN only when the whole row is.
 *  - pld_row_topk: the topk largest elements of each row, largest first:
 *    idx[i][t] (INT32 [rows, topk]) is the column of the t-th and
 *    vals[i][t] (a's dtype, [rows, topk]; NULL when only the indices are
 *    wanted) its value, the element's bits.  topk in [1, cols].  vals and
 *    idx are different tiles; either may be a.
 * Statuses: PLD_ERR_ARG (NULL tile, idx not INT32, a shape or dtype
 * mismatch, topk out of range); PLD_ERR_UNSUPPORTED (INT64, FP64, BOOL
 * a); PLD_ERR_NOMEM (topk above 512: its scratch comes from the heap). */
int pld_row_argmax(pld_core k, pld_tile *idx, const pld_tile *a);
int pld_row_argmin(pld_core k, pld_tile *idx, const pld_tile *a);
int pld_row_topk(pld_core k, pld_tile *vals, pld_tile *idx, const pld_tile *a,
                 int32_t topk);

/* Prefix sums along each row (pld_row_cumsum: over the columns) or down
 * each column (pld_col_cumsum), dst of a's shape and dtype.  Inclusive
 * (exclusive = 0): element j is the sum of elements 0..j; exclusive (any
 * other value): of elements 0..j-1, and 0 for the first.  Integer sums
 * wrap (two's complement).  Float sums run in double, in order, and each
 * element of dst is the running double sum rounded once to dst's dtype:
 * the same bits on every level, and what a sequential loop summing in
 * double gives.  dst may be a. */
int pld_row_cumsum(pld_core k, pld_tile *dst, const pld_tile *a, int exclusive);
int pld_col_cumsum(pld_core k, pld_tile *dst, const pld_tile *a, int exclusive);

/* Integer arithmetic.  pld_rem, pld_rems: dst = a % b (or % s, s
 * converted to a's dtype), the remainder of the truncating division: the
 * sign of a, as C's %; INT_MIN % -1 is 0.  A zero integer divisor fails
 * the kernel (PLD_ERR_ARG), as pld_div.  Float tiles take C's fmodf (a
 * zero divisor gives NaN), computed in float for FP16 and BF16 and
 * exact. */
int pld_rem(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_rems(pld_core k, pld_tile *dst, const pld_tile *a, double s);
/* Bitwise and, or, xor and not of integer tiles (two's complement bits)
 * and of masks (BOOL: the logical operations, on nonzero as true, giving
 * 0 or 1).  Float tiles: PLD_ERR_UNSUPPORTED. */
int pld_and(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_or(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_xor(pld_core k, pld_tile *dst, const pld_tile *a, const pld_tile *b);
int pld_not(pld_core k, pld_tile *dst, const pld_tile *a);
/* Shifts of integer tiles by bits in [0, the dtype's width) (else
 * PLD_ERR_ARG): pld_shls shifts left (bits shifted out are lost);
 * pld_shrs shifts right, arithmetic (copies of the sign bit come in) for
 * the signed dtypes and logical for UINT8.  Float and BOOL tiles:
 * PLD_ERR_UNSUPPORTED. */
int pld_shls(pld_core k, pld_tile *dst, const pld_tile *a, int32_t bits);
int pld_shrs(pld_core k, pld_tile *dst, const pld_tile *a, int32_t bits);

/* Index tiles: dst[i][j] = start + i * row_step + j * col_step, evaluated
 * in double in that order (exact while the values are integers below
 * 2^53), then converted to dst's dtype by the rules at the top of this
 * file (integers saturate).  dst of a computing dtype. */
int pld_iota(pld_core k, pld_tile *dst, double start, double row_step,
             double col_step);

/* Cube cores only.  c = a @ b (pld_matmul) or c += a @ b
 * (pld_matmul_acc); a [M, K], b [K, N], c [M, N] FP32; a and b both FP32,
 * FP16 or BF16.  a must fit L0A, b L0B and c L0C of the platform, or the
 * call fails with PLD_ERR_TILE_MEMORY.  On a vector core: PLD_ERR_LEVEL.
 * Nothing is applied to c on the way out: an activation is a vector
 * kernel's work. */
int pld_matmul(pld_core k, pld_tile *c, const pld_tile *a, const pld_tile *b);
int pld_matmul_acc(pld_core k, pld_tile *c, const pld_tile *a,
                   const pld_tile *b);

#endif /* PLD_TILE_H */
