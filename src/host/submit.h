/* host/submit.h: asynchronous runs (host/submit.c), the queue and the
 * runner of a program, as the rest of the host layer sees them. */
#ifndef PLD_HOST_SUBMIT_H
#define PLD_HOST_SUBMIT_H

#include "host/program.h"

/* The chain of runs queued on p's devices cannot take one more: the runs
 * in flight must end first (its counts stay in 31 bits). */
int pld__queue_chain_full(const struct pld_program *p);

/* Waits until p has no run in flight. */
void pld__runner_drain(struct pld_program *p);
/* Cancels p's queued runs, waits for its running one, stops its runner
 * thread (destroy). */
void pld__runner_stop(struct pld_program *p);

#endif
