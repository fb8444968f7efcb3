/* pld/collective.h: collectives built on signals and one-sided movement.
 * Every rank of the domain calls the same collective, one block per rank. */
#ifndef PLD_COLLECTIVE_H
#define PLD_COLLECTIVE_H

#include "pld/signal.h"

/* All ranks of sig's domain rendezvous.  sig is an INT32 window of at
 * least nranks cells, zero when first used and not written by anything
 * else.  The self-clearing protocol (each rank adds 1 to its own cell on
 * every peer, waits until every peer's cell on itself is >= 1, then adds -1
 * to each of those cells) leaves it zero again, so the same window serves
 * back-to-back barriers and barriers in loops.  Kernels only.  Returns as
 * pld_wait does. */
int pld_barrier(pld_core k, pld_window sig);

#endif /* PLD_COLLECTIVE_H */
