/* host/run.h: one run of a prepared program (host/run.c), as the queue
 * and the runner of host/submit.c and the public entries of
 * host/lifecycle.c drive it. */
#ifndef PLD_HOST_RUN_H
#define PLD_HOST_RUN_H

#include "host/program.h"
#include "host/watch.h"

/* Called while a run executes, with its arguments: the runner copies the
 * next job's inputs in meanwhile (host/submit.c). */
typedef void (*pld__run_hook)(struct pld_program *p, const pld_arg *now);

/* One run on the calling thread, as pld_program_run did before runs could
 * be submitted; next_inputs (or NULL) is called once the devices have it. */
int pld__program_run_now(struct pld_program *p, int argc, const pld_arg *argv,
                         pld__run_hook next_inputs);

/* Checks a run's arguments: the compiled tensors, and scalars whose new
 * values trace the host orchestrator again.  PLD_OK or the failure
 * (message set). */
int pld__run_check(struct pld_program *p, int argc, const pld_arg *argv);
/* Whether a run with arguments argv reads a host tensor that the run
 * before it (arguments before, checked) writes: its inputs are final only
 * once that run ended. */
int pld__run_depends(const struct pld_program *p, const pld_arg *before,
                     const pld_arg *argv);
/* Copies a run's inputs (argv) into the slot after p->slot if they can
 * run without a new trace and none of them is a tensor the current run
 * (now) may still write: 1 if it did. */
int pld__run_precopy(struct pld_program *p, const pld_arg *now, int argc,
                     const pld_arg *argv);

/* What the host keeps of a posted run while it watches it. */
struct pld__loop {
  struct pld__runwatch wt;
  struct pld__spin spin;
  int slot;        /* its data slot */
  int failed_rank; /* the earliest rank that failed it, or -1 */
  int watch_st;    /* the watch's (or a host task's) failure */
  int stragglers;  /* ranks still ran after the stop's grace */
  int next_task;
  int64_t last_reap, stopped_at, last_watch;
  uint32_t ev; /* the world's event word at the last look */
  int64_t nap; /* how long to sleep before the next look */
  /* The run's result when the watch or a rank failed it: it stands,
   * whatever the devices say when they are stopped. */
  char result[PLD__MSG_MAX];
  char corrupt_what[160];
};

/* A posted run (its commands posted[r], in data slot `slot`) begins to be
 * watched. */
void pld__loop_begin(struct pld_program *p, struct pld__loop *l,
                     const uint32_t *posted, int slot);
/* Looks at the run once: 1 once it is over (*st its status, message set),
 * else 0 (l->ev and l->nap say how to sleep before the next look). */
int pld__loop_step(struct pld_program *p, struct pld__loop *l,
                   const pld_arg *argv, int *st);
/* The host's sleep between two looks at a run. */
void pld__loop_await(struct pld_program *p, struct pld__loop *l);

/* No run is in flight: the next one begins a chain (struct pld__cmd). */
void pld__run_chain_begin(struct pld_program *p);
/* The next data slot (where a precopy put the run's inputs, if one
 * did). */
void pld__run_slot_next(struct pld_program *p);
/* A posted run ended with status st (after a failure the next run's post
 * clears the collectives' signal views). */
void pld__run_ended(struct pld_program *p, int st);

#endif
