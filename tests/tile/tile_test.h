/* tests/tile/tile_test.h: what the tile tests share - a simulated core,
 * device tensors, and reference arithmetic written independently of the
 * library (plain double arithmetic, frexp/ldexp, int64). */
#ifndef PLD_TESTS_TILE_TEST_H
#define PLD_TESTS_TILE_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/kctx.h"
#include "core/tensor.h"
#include "pld.h"

/* ---- cores --------------------------------------------------------------- */

/* A vector core (192 KiB Unified Buffer) or a cube core (512 KiB L1, L0A
 * and L0B 64 KiB, L0C 128 KiB), running block 0 of 1 of kernel "k". */
pld_core tt_vector_core(struct pld__core *c);
pld_core tt_cube_core(struct pld__core *c);
/* A core of the given type with the buffers of a platform of the table
 * ("a5sim"), as the device layer makes it. */
pld_core tt_platform_core(struct pld__core *c, const char *platform,
                          pld_core_type type);
void tt_core_release(struct pld__core *c);

/* Asserts the n tiles are live tiles of k's core laid out as the hardware
 * would: each starts on 32 bytes inside the core's memory, none overlaps
 * another, and the bytes in use are theirs. */
void tt_assert_tile_layout(pld_core k, pld_tile *const *tiles, size_t n);

/* Asserts the kernel failed with status and its message contains every
 * one of the NULL-terminated fragments. */
void tt_assert_failed(pld_core k, int status, ...);

/* ---- device tensors ------------------------------------------------------ */

/* A 2-D device tensor, zero-filled, with direction and name. */
pld_tensor tt_tensor(pld_dtype dt, int64_t rows, int64_t cols, pld_dir dir,
                     const char *name);
/* Element i (row-major) as a double; stores an exactly representable v. */
double tt_get(pld_tensor t, size_t i);
void tt_set(pld_tensor t, size_t i, double v);
/* Fills t with values from tt_random. */
void tt_fill_random(pld_tensor t, uint64_t *seed);

/* A tile holding the whole of t, and its elements stored into t. */
pld_tile *tt_load(pld_core k, pld_tensor t);
/* A tile of 256 bytes of 0xA5 in the lowest free gap of tile memory: on a
 * core whose tiles were allocated one after another, right after the last
 * one.  tt_guard_intact fails, naming `what`, if an operation wrote into
 * it: past the end of its destination, allocated just before. */
const pld_tile *tt_guard(pld_core k);
void tt_guard_intact(const pld_tile *g, const char *what);
void tt_store(pld_core k, const pld_tile *tile, pld_tensor t);

/* The shapes of the tile operations: dst = op(a, b), op(a, s), op(a). */
typedef int tt_binary_fn(pld_core, pld_tile *, const pld_tile *,
                         const pld_tile *);
typedef int tt_scalar_fn(pld_core, pld_tile *, const pld_tile *, double);
typedef int tt_unary_fn(pld_core, pld_tile *, const pld_tile *);

/* fn(dst, a, b) gives the same bytes with dst a tile of its own, dst == a,
 * dst == b, and (with b = a) dst == a == b; a and b hold x and y, of one
 * shape and dtype, which is also dst's. */
void tt_check_aliasing(pld_core k, tt_binary_fn *fn, pld_tensor x,
                       pld_tensor y);

/* ---- reference arithmetic ------------------------------------------------ */

uint64_t tt_rand(uint64_t *seed);
/* A random element of dt: any bit pattern for FP16 and BF16; for FP32
 * mostly ordinary values (exponents -20..20) and now and then a special
 * (0, -0, inf, NaN, the largest, a subnormal); integers anywhere in the
 * range, often at its ends. */
double tt_random(pld_dtype dt, uint64_t *seed);

/* v converted to dt by the rules of pld/tile.h. */
double tt_cast(pld_dtype dt, double v);
/* An exact integer v wrapped to dt's width (two's complement). */
double tt_wrap(pld_dtype dt, int64_t v);
/* The distance between a and b in units in the last place of dt (float
 * dtypes), 0 when both are NaN or equal. */
double tt_ulps(pld_dtype dt, double a, double b);
int tt_same(double a, double b); /* equal, or both NaN */
int tt_is_float(pld_dtype dt);

extern const pld_dtype tt_tile_dtypes[7];

#endif
