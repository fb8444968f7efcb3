/* host/resident.h: device-resident tensors (host/resident.c) as the rest
 * of the host layer sees them. */
#ifndef PLD_HOST_RESIDENT_H
#define PLD_HOST_RESIDENT_H

#include "host/program.h"

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
