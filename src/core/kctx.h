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
#include "pld/tile.h"

/* The most tiles one core holds at once. */
#define PLD__MAX_TILES 64

struct pld_tile {
  unsigned char *data; /* in the core's tile memory */
  pld_dtype dtype;
  int32_t rows, cols;
  size_t row_bytes; /* cols * element size, rounded up to 32 */
  size_t offset;    /* in the core's tile memory */
  size_t bytes;     /* rows * row_bytes */
  int live;
};

/* Static facts of one core, from the platform. */
struct pld__core_spec {
  pld_core_type type;
  int index;          /* core number within its type on the device */
  size_t capacity;    /* tile memory: UB (vector) or L1 (cube) */
  const char *memory; /* its name, for messages */
  size_t l0a, l0b, l0c; /* cube operand buffers; 0 on vector cores */
};

struct pld__comm_env; /* the device's fabric and wait bookkeeping (comm/) */

struct pld__core {
  struct pld__core_spec spec;
  const struct pld__comm_env *env; /* NULL where there is no comm */
  int slot;                        /* this core's wait slot on the device */
  unsigned char *mem; /* capacity bytes, 64-byte aligned */
  size_t used;        /* bytes held by live tiles */
  struct pld_tile tiles[PLD__MAX_TILES];

  /* The block running now (set by the device layer before each block). */
  const char *kernel;
  int rank, device;
  int32_t block_idx, block_num;

  /* First failure of this block: sticky; every later call returns it. */
  int status;
  char msg[PLD__MSG_MAX];
};

/* Allocates tile memory.  Returns PLD_OK or PLD_ERR_NOMEM (message set). */
int pld__core_init(struct pld__core *c, const struct pld__core_spec *spec);
void pld__core_release(struct pld__core *c);
/* Before a block: frees every tile, clears the status, sets identity. */
void pld__core_begin(struct pld__core *c, const char *kernel, int rank,
                     int device, int32_t block_idx, int32_t block_num);

/* Records a failure of a call made by the block: the message is prefixed
 * with fn and the block's identity ("pld_load: kernel k (rank 1, device 5,
 * AIV core 3, block 0 of 1): ...").  Only the first failure is kept.
 * Returns the block's status. */
int pld__kfail(struct pld__core *c, int status, const char *fn,
               const char *fmt, ...) PLD__PRINTF(4, 5);

/* "AIV" or "AIC". */
const char *pld__core_type_name(pld_core_type t);

#endif
