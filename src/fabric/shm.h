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
  size_t bells; /* offset of the doorbells, one cache line per rank */
  size_t *phys; /* bytes of each buffer's copies */
  size_t *copy; /* [buf * nranks + rank]: offset of that copy, or SIZE_MAX */
  size_t total; /* bytes of the region */
};

struct pld__shm_fabric {
  struct pld__fabric base;
  unsigned char *region;
  const struct pld__winlayout *lay;
};

/* A doorbell: the count of signals a rank received, which its waiting
 * cores sleep on after polling (one cache line each). */
struct pld__bell {
  _Atomic uint32_t count;
  _Atomic uint32_t sleepers;
};

/* The memory side of a signal, for every fabric that reaches a peer's
 * copy through shared memory (their atomic adds are
 * pld__elems_add_atomic, tile/convert.h): a signal on the INT32 cell (add
 * or set, sequentially consistent) followed by a ring of bell. */
void pld__shm_signal_at(unsigned char *cell, int32_t value, pld_notify_op op,
                        struct pld__bell *bell);

/* Lays out nbufs buffers of phys[b] bytes, member[b * nranks + r] saying
 * whether rank r has a copy of b.  Returns PLD_OK or PLD_ERR_NOMEM. */
int pld__winlayout_init(struct pld__winlayout *lay, int nranks, int nbufs,
                        const size_t *phys, const unsigned char *member);
void pld__winlayout_release(struct pld__winlayout *lay);

/* The fabric of world rank `rank` (-1: the host) over a mapped region. */
void pld__shm_fabric_init(struct pld__shm_fabric *f, unsigned char *region,
                          const struct pld__winlayout *lay, int rank);

/* Zeroes rank r's copy of every buffer (a device, before a queued run). */
void pld__shm_zero_rank(struct pld__shm_fabric *f, int r);

/* The host's side (the shared-memory control plane): zero every copy of
 * every buffer before a run; read any rank's cell (for a deadlock report);
 * wake every rank's waiting cores (they re-check their cells and the
 * abort word); forget what a rank's process left behind when it was killed
 * (before a new process takes its place; no run is in progress then). */
void pld__shm_zero_all(struct pld__shm_fabric *f);
/* Zeroes bytes [off, off + n) of rank r's copy of buffer buf, if r has
 * one. */
void pld__shm_zero_bytes(struct pld__shm_fabric *f, int buf, int r, size_t off,
                         size_t n);
int32_t pld__shm_peek(struct pld__shm_fabric *f, int buf, int rank, size_t off);
void pld__shm_wake_all(struct pld__shm_fabric *f);
void pld__shm_reset_rank(struct pld__shm_fabric *f, int rank);

#endif
