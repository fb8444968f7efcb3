/* device/mix.h: the state one block of a mixed kernel (pld/mix.h) shares
 * among its parts: the path between its cube part and each vector part,
 * one bounded FIFO of tiles per direction, and who waits in it.  The
 * scheduler (device/sched.c) makes it when the block takes its cluster
 * and frees it when the last part returns; device/mix.c is the kernel
 * calls on it. */
#ifndef PLD_DEVICE_MIX_H
#define PLD_DEVICE_MIX_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/kctx.h"
#include "pld/mix.h"

/* The most vector parts a block has (the platforms have 2). */
#define PLD__MIX_MAX_VEC 4

/* A tile in the path: its rows packed (cols * element size each), and
 * what its pusher released for the race detector (NULL when off). */
struct pld__mix_tile {
  pld_dtype dtype;
  int32_t rows, cols;
  unsigned char *data;
  uint32_t *vc;
};

struct pld__mix_pipe {
  struct pld__mix_tile slot[PLD_MIX_SLOTS];
  int head, count;
  int32_t pushed, popped; /* since the block began (the timing model) */
};

/* The vector parts of a mixed block on a device of `vector` and `cube`
 * cores: one cluster's (0 where there is no cube core). */
static inline int pld__mix_ratio(int vector, int cube) {
  int r = cube > 0 ? vector / cube : 0;
  return r > PLD__MIX_MAX_VEC ? PLD__MIX_MAX_VEC : r;
}

/* The timing model's cells of a mixed block's paths (records of
 * core/timeline.h with peer -1, which the host makes the block's own):
 * the tiles pushed into, or popped from, the path to or from vector part
 * v. */
#define PLD__MIX_CELL(up, v, popped)                                           \
  ((int64_t)(((up) ? 1 : 0) << 8 | (v) << 1 | ((popped) ? 1 : 0)))

struct pld__mix {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nvec;
  /* Each part's core: [0] the cube's, [1 + v] vector part v's. */
  struct pld__core *part[1 + PLD__MIX_MAX_VEC];
  /* The pipe a part is blocked in (published in its watch slot), or NULL:
   * the part that ends the wait marks it running again. */
  const struct pld__mix_pipe *waits_in[1 + PLD__MIX_MAX_VEC];
  _Atomic int failed; /* 1 + the first part that failed, 0 for none */
  /* Cube to vector part v (down[v]) and back (up[v]). */
  struct pld__mix_pipe down[PLD__MIX_MAX_VEC], up[PLD__MIX_MAX_VEC];
};

/* A block's state for nvec vector parts, in [1, PLD__MIX_MAX_VEC].
 * Returns PLD_OK or PLD_ERR_SYSTEM. */
int pld__mix_init(struct pld__mix *m, int nvec);
/* Frees the tiles left in its paths. */
void pld__mix_release(struct pld__mix *m);
/* Part `part` returned with a failure: the others' waits in the paths
 * return PLD_ERR_ABORTED.  Returns whether it is the block's first
 * failure (a part stopped by it is not), the one its dispatch reports. */
int pld__mix_part_failed(struct pld__mix *m, int part);

#endif
