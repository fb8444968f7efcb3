/* core/kctx.h: what a kernel body runs against - one simulated AI core
 * executing one block of a kernel.  The tile layer computes in the core's
 * tile memory and reports failures through it; the device layer creates
 * cores and points them at blocks. */
#ifndef PLD_CORE_KCTX_H
#define PLD_CORE_KCTX_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "pld/levels.h"
#include "pld/signal.h"
#include "pld/tile.h"

/* The hardware's granule of tile memory: rows are padded to it and tiles
 * start on it.  A tile thus takes one granule at least, and a core holds at
 * most capacity / PLD__TILE_GRANULE tiles. */
#define PLD__TILE_GRANULE 32u

struct pld_tile {
  unsigned char *data; /* in the core's tile memory */
  pld_dtype dtype;
  int32_t rows, cols;
  size_t row_bytes; /* cols * element size, rounded up to the granule */
  size_t offset;    /* in the core's tile memory, a multiple of the granule */
  size_t bytes;     /* rows * row_bytes */
  /* The core's block_seq when the tile was allocated, 0 once freed: a tile
   * is live while this equals the core's, so starting a block kills every
   * tile of the last one without touching them. */
  uint64_t block_seq;
  /* A prefetch into it is in flight (pld_prefetch, until its wait), and
   * its number among the block's prefetches (the timing model's). */
  int in_flight;
  int32_t prefetch;
  /* A live tile's neighbours in the core's offset order; a free
   * descriptor's next is the next free one. */
  struct pld_tile *prev, *next;
};

/* Static facts of one core, from the platform. */
struct pld__core_spec {
  pld_core_type type;
  int index;            /* core number within its type on the device */
  size_t capacity;      /* tile memory: UB (vector) or L1 (cube) */
  const char *memory;   /* its name, for messages */
  size_t l0a, l0b, l0c; /* cube operand buffers; 0 on vector cores */
};

struct pld__comm_env; /* the device's fabric and wait bookkeeping (comm/) */

struct pld__core {
  struct pld__core_spec spec;
  const struct pld__comm_env *env; /* NULL where there is no comm */
  int slot;                        /* this core's wait slot on the device */
  unsigned char *mem;              /* capacity bytes, 64-byte aligned */
  size_t used;                     /* bytes held by live tiles */

  /* Tile descriptors: as many as the most tiles that can be live
   * (capacity / granule), so that only capacity limits the count.  They
   * never move, so a pld_tile pointer stays valid while its tile lives and
   * checking one is a range test; calloc commits the pages of the array
   * only as descriptors are first used. */
  struct pld_tile *tiles;
  size_t tiles_max;
  size_t tiles_issued;         /* this block has used tiles[0, issued) */
  struct pld_tile *tiles_free; /* freed in this block, reused first */
  struct pld_tile *live;       /* the live tiles by increasing offset */
  /* The last of the live tiles that fill tile memory from offset 0 with no
   * gap (NULL if offset 0 is free): first fit searches from its end, so
   * tiles allocated one after another take constant time each. */
  struct pld_tile *packed;
  uint64_t block_seq; /* counts blocks; never 0 */

  /* The block running now (set by the device layer before each block). */
  const char *kernel;
  int rank, device;
  int32_t block_idx, block_num;

  /* The collective the block is in (PLD__COLL_* of core/watch.h, 0 for
   * none), its call number and round: waits publish them. */
  int32_t coll_kind, coll_call, coll_round;

  /* The block's tiles with a prefetch in flight (pld_prefetch), and the
   * prefetches it started (counted modulo 2^32: a prefetch's number is
   * its count's low 31 bits, which no two in flight share). */
  int prefetching;
  uint32_t prefetches;

  /* The block's deferred waits (pld_wait_deferred), handed to its launch
   * when it ends. */
  int ndeferred;
  struct pld__deferred {
    int32_t buf, cmp, expected, ndim;
    uint64_t off;
    int64_t idx[PLD_MAX_DIMS];
    const char *window;
  } deferred[PLD_MAX_DEFERRED_WAITS];

  /* First failure of this block: sticky; every later call returns it.
   * Its message is the struct's last member (see pld__core_init). */
  int status;

  /* Set by the device layer: told by a wait of the block (comm/) before
   * the block's thread blocks (PLD__WAIT_BLOCK), each time it wakes in
   * the wait (PLD__WAIT_WOKE) and when the wait returns
   * (PLD__WAIT_RESUME), so that the blocks queued behind it get another
   * thread.  NULL: nothing to tell. */
  void (*on_wait)(struct pld__core *c, int event);
  void *sched;

  uint32_t race_seq; /* the race detector numbers the core's records */

  /* A part of a mixed block (pld/mix.h): the block's shared state
   * (device/mix.h) and this core's part in it (0 the cube part, 1 + v
   * vector part v); NULL outside a mixed kernel. */
  struct pld__mix *mix;
  int32_t mix_part;

  char msg[PLD__MSG_MAX];
};

enum { PLD__WAIT_BLOCK, PLD__WAIT_WOKE, PLD__WAIT_RESUME };

/* Allocates tile memory and its descriptors.  Returns PLD_OK or
 * PLD_ERR_NOMEM (message set). */
int pld__core_init(struct pld__core *c, const struct pld__core_spec *spec);
void pld__core_release(struct pld__core *c);
/* Before a block: frees every tile (in constant time), clears the status,
 * sets identity. */
void pld__core_begin(struct pld__core *c, const char *kernel, int rank,
                     int device, int32_t block_idx, int32_t block_num);

/* Records a failure of a call made by the block: the message is prefixed
 * with fn and the block's identity ("pld_load: kernel k (rank 1, device 5,
 * AIV core 3, block 0 of 1): ...").  Only the first failure is kept.
 * Returns the block's status. */
int pld__kfail(struct pld__core *c, int status, const char *fn, const char *fmt,
               ...) PLD__PRINTF(4, 5);

/* "AIV" or "AIC". */
const char *pld__core_type_name(pld_core_type t);

#endif
