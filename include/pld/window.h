/* pld/window.h: symmetric window memory and comm contexts.
 *
 * A window buffer is one buffer per rank with the same layout everywhere,
 * zero at the start of every program run, 32-byte aligned, at least 4 KiB.
 * The host allocates it once, before its rank loop, and takes typed views
 * of it (pld_window) to pass in dispatches; the ranks whose dispatches
 * receive a view of a buffer form its comm domain, numbered 0.. in world
 * rank order (all ranks when the loop covers the world).  A device in two
 * domains has two contexts with different rank numbers.
 *
 * Every remote access is checked against the view: a peer outside the
 * domain, or offsets and shapes outside the view, fail with PLD_ERR_BOUNDS
 * naming rank, peer, window and region.  A view must fit the bytes that
 * were asked for (not the 4 KiB the buffer rounds up to), so allocating N
 * bytes for N INT32 cells is caught when the view is taken.
 */
#ifndef PLD_WINDOW_H
#define PLD_WINDOW_H

#include "pld/levels.h"

typedef struct pld_window_buf {
  struct pld__winbuf *p;
} pld_window_buf;

/* A comm context: which domain a window belongs to and this rank's place in
 * it. */
typedef struct pld_comm {
  const struct pld__comm *p;
} pld_comm;

/* A window buffer of `bytes` per rank.  Host only.  bytes must be 1 to the
 * platform's device global memory (pld_platform_info.global_bytes), or it
 * fails with PLD_ERR_ARG; failures are recorded in h (see pld/levels.h)
 * and the buffer returned is rejected by every later call.  Every rank of
 * the domain holds a copy in its device's global memory: pld_compile
 * refuses (PLD_ERR_NOMEM) a rank whose tensor slices and window copies
 * together exceed it. */
pld_window_buf pld_window_alloc(pld_host h, size_t bytes);

/* A window buffer holding one tensor of the shape and dtype per rank. */
pld_window_buf pld_window_alloc_shape(pld_host h, pld_dtype dtype, int ndim,
                                      const int64_t *shape);

/* A typed view of buf, starting `offset` bytes into it (a multiple of the
 * element size).  Host only.  Views not fitting the requested bytes fail
 * with PLD_ERR_BOUNDS. */
pld_window pld_window_view(pld_host h, pld_window_buf buf, pld_dtype dtype,
                           int ndim, const int64_t *shape);
pld_window pld_window_view_at(pld_host h, pld_window_buf buf, size_t offset,
                              pld_dtype dtype, int ndim, const int64_t *shape);

/* No window: for the optional window arguments of some calls. */
#define PLD_NO_WINDOW ((pld_window){NULL})

/* The comm context of a window.  Any level. */
pld_comm pld_window_comm(pld_window w);

/* This rank's number in the context's domain, and the domain's size.
 * Kernels only. */
int32_t pld_rank(pld_core k, pld_comm c);
int32_t pld_nranks(pld_core k, pld_comm c);

#endif /* PLD_WINDOW_H */
