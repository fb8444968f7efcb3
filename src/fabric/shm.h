/* fabric/shm.h: the shared-memory fabric.  Every window buffer has one copy
 * per member of its domain, all in one region shared by the host and every
 * device process (mapped before the devices start).  Remote writes and
 * reads are copies into and out of the peer's copy; signals are atomic
 * operations on its cells followed by a ring of its doorbell, a counter the
 * peer's waiting cores sleep on. */
#ifndef PLD_FABRIC_SHM_H
#define PLD_FABRIC_SHM_H

#include "comm/comm.h"

/* Where everything is in the region: computed once by the host's compile
 * step from the window buffers and their domains. */
struct pld__winlayout {
  int nranks, nbufs;
  size_t bells;  /* offset of the doorbells, one cache line per rank */
  size_t *phys;  /* bytes of each buffer's copies */
  size_t *copy;  /* [buf * nranks + rank]: offset of that copy, or SIZE_MAX */
  size_t total;  /* bytes of the region */
};

struct pld__shm_fabric {
  struct pld__fabric base;
  unsigned char *region;
  const struct pld__winlayout *lay;
};

/* Lays out nbufs buffers of phys[b] bytes, member[b * nranks + r] saying
 * whether rank r has a copy of b.  Returns PLD_OK or PLD_ERR_NOMEM. */
int pld__winlayout_init(struct pld__winlayout *lay, int nranks, int nbufs,
                        const size_t *phys, const unsigned char *member);
void pld__winlayout_release(struct pld__winlayout *lay);

/* The fabric of world rank `rank` (-1: the host) over a mapped region. */
void pld__shm_fabric_init(struct pld__shm_fabric *f, unsigned char *region,
                          const struct pld__winlayout *lay, int rank);

#endif
