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
/* Whether a run with arguments argv reads a host tensor that the run
 * before it (arguments before, checked) writes: its inputs are final only
 * once that run ended (host/run.c). */
int pld__run_depends(const struct pld_program *p, const pld_arg *before,
                     const pld_arg *argv);
/* Copies a run's inputs (argv) into the slot after p->slot if they can
 * run without a new trace and none of them is a tensor the current run
 * (now) may still write: 1 if it did (host/run.c). */
int pld__run_precopy(struct pld_program *p, const pld_arg *now, int argc,
                     const pld_arg *argv);

/* Queued runs (host/run.c): where a program's submitted runs go straight
 * to its devices, each behind the runs in flight (struct pld__cmd), the
 * threads that submit and wait drive them (host/submit.c); one thread at
 * a time, the driver, calls these. */
struct pld__qrun;
/* Whether p's submitted runs can be queued on its devices: the shm
 * fabric, no host tasks, trace or race check, devices of its own, at most
 * PLD__RING runs in flight (the others go through a runner thread). */
int pld__queue_eligible(const struct pld_program *p);
/* The chain of runs in flight cannot take one more: the runs in flight
 * must end first. */
int pld__queue_chain_full(const struct pld_program *p);
/* Checks a run's arguments, copies its inputs into the next data slot and
 * posts it behind the in_flight runs (0: a chain begins).  Returns PLD_OK
 * with *out the run, or the failure of its checks (message set). */
int pld__queue_post(struct pld_program *p, int argc, const pld_arg *argv,
                    int in_flight, struct pld__qrun **out);
/* The run's number in its chain. */
uint32_t pld__queue_number(const struct pld__qrun *q);
/* Looks once at q, the oldest run in flight: 1 once it is over (*st its
 * status, message set; its Out slices copied into argv's tensors), else
 * 0; await sleeps until the next look is due. */
int pld__queue_step(struct pld_program *p, struct pld__qrun *q,
                    const pld_arg *argv, int *st);
void pld__queue_await(struct pld_program *p, struct pld__qrun *q);
void pld__queue_free(struct pld__qrun *q);
/* Lets no more runs of the chain start; returns the number of the last
 * that did (or will: the runs up to it run to their end). */
uint32_t pld__queue_close(struct pld_program *p);
/* Waits until every device took every command posted, the runs still
 * queued cancelled at their gates (stop: the chain is stopped first; a
 * failed run stopped it already).  Returns PLD_OK, or the crash of a
 * device meanwhile (the program is then dead). */
int pld__queue_drain(struct pld_program *p, int stop);

/* Waits until p has no run in flight. */
void pld__runner_drain(struct pld_program *p);
/* Cancels p's queued runs, waits for its running one, stops its runner
 * thread (destroy). */
void pld__runner_stop(struct pld_program *p);

#endif
