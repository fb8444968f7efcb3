/* host/resident.h: device-resident tensors as the rest of the host layer
 * sees them: their placement, the heaps and what runs need of them
 * (host/heap.c; the API is host/resident.c's). */
#ifndef PLD_HOST_RESIDENT_H
#define PLD_HOST_RESIDENT_H

#include "host/program.h"

/* A live resident tensor's magic word ("resi"). */
#define PLD__RES_LIVE 0x72657369u

/* A resident tensor's placement (its descriptor's res). */
struct pld__resident {
  uint32_t magic;
  struct pld_program *p; /* NULL once the program is destroyed */
  int rank;              /* its device, or PLD_EACH_RANK */
  size_t part;           /* bytes on each device it lies on */
  size_t *off;           /* [rank]: heap offset, or SIZE_MAX */
  int freed;
  struct pld__resident *next; /* the program's */
};

/* One device's heap: its allocations by increasing offset. */
struct pld__heap {
  size_t bytes;
  struct pld__heap_block {
    size_t off, len;
  } * used;
  int nused, cap;
};

/* First fit: the offset of len bytes (64-aligned) in h, or SIZE_MAX; and
 * its release. */
size_t pld__heap_alloc(struct pld__heap *h, size_t len);
void pld__heap_release(struct pld__heap *h, size_t off);

/* Byte offset of rank r's heap byte `off` from the start of data slot
 * `slot` (what a run's table holds, and what fetch and store take). */
size_t pld__heap_from_slot(const struct pld_program *p, int r, int slot,
                           size_t off);

/* Bytes of rank r's heap for resident tensors: PLD_DEVICE_HEAP_MB, within
 * the device memory its plan leaves. */
size_t pld__heap_bytes(const struct pld_program *p, int r);

/* After the plans: the heaps' bookkeeping.  Returns PLD_OK or
 * PLD_ERR_NOMEM.  Release: the program's tensors are refused from then
 * on. */
int pld__residents_init(struct pld_program *p);
void pld__residents_release(struct pld_program *p);

/* Parameter i of a run is the resident tensor g: PLD_OK if it is this
 * program's, not freed, and every rank's slice of it lies on that rank's
 * device; else the failure (message set). */
int pld__resident_check(const struct pld_program *p, int i,
                        const struct pld__tensor *g);

/* Where rank r's buffers lie in a run with arguments argv in data slot
 * `slot` (offsets from the slot's start), when argv passes resident
 * tensors; NULL when it passes none (the plan's layout). */
const size_t *pld__run_table(struct pld_program *p, int r, const pld_arg *argv,
                             int slot);

#endif
