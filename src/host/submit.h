/* host/submit.h: asynchronous runs (host/submit.c) as the rest of the host
 * layer sees them. */
#ifndef PLD_HOST_SUBMIT_H
#define PLD_HOST_SUBMIT_H

#include "host/program.h"

/* One run on the calling thread, as pld_program_run did before runs could
 * be submitted (host/run.c). */
int pld__program_run_now(struct pld_program *p, int argc, const pld_arg *argv);

/* While a run executes (its inputs in data slot p->slot): copies the
 * inputs of the run submitted next into the other slot, if its tensors and
 * scalars are the current run's kind (no new trace).  The next run then
 * skips its copy in (p->precopied). */
void pld__runner_precopy(struct pld_program *p, const pld_arg *now);
/* Copies a run's inputs (argv) into the slot after p->slot if they can
 * run without a new trace and none of them is a tensor the current run
 * (now) may still write: 1 if it did (host/run.c). */
int pld__run_precopy(struct pld_program *p, const pld_arg *now, int argc,
                     const pld_arg *argv);

/* Waits until p has no run in flight. */
void pld__runner_drain(struct pld_program *p);
/* Cancels p's queued runs, waits for its running one, stops its runner
 * thread (destroy). */
void pld__runner_stop(struct pld_program *p);

#endif
