/* pld/model.h: how long a run would take on the chip - the timing
 * model's report (docs/model.md).
 *
 * With the model on (PLD_MODEL=on, or pld_config.model = "on"), every
 * run of a program records what its blocks did in amounts (operations and
 * their bytes, moves between global and tile memory, transfers, notifies
 * and waits, launches and their order) and, after it, replays them on the
 * platform's machine description: one clock per core, AICPU, link and
 * device memory, in the model's figures (pld-env lists them).  The
 * modeled times depend on the program and its inputs only: the same in
 * every run, on every machine, at every instruction level and fabric.
 * They are not cycle-accurate: the figures are public ones or assumed
 * (docs/model.md says which), and the model knows no caches, no bank
 * conflicts and no pipelining inside an operation.  Host code. */
#ifndef PLD_MODEL_H
#define PLD_MODEL_H

#include <stdint.h>

#include "pld/levels.h"
#include "pld/program.h"

/* Where a core's modeled time went. */
typedef enum pld_model_class {
  PLD_MODEL_COMPUTE, /* tile operations */
  PLD_MODEL_MOVE,    /* loads and stores between global and tile memory */
  PLD_MODEL_COMM,    /* transfers, notifies, the wait for its transfers */
  PLD_MODEL_WAIT,    /* blocked in waits */
  PLD_MODEL_IDLE,    /* the rest, up to its rank's finish */
  PLD_MODEL_CLASSES
} pld_model_class;

/* One core that ran at least one block. */
typedef struct pld_model_core {
  pld_core_type type; /* PLD_CORE_VECTOR or PLD_CORE_CUBE */
  int32_t index;      /* among its device's cores of that type */
  int32_t blocks;     /* blocks it ran */
  double finish_ns;   /* its last block's end, from the run's start */
  double busy_ns[PLD_MODEL_CLASSES];
} pld_model_core;

/* One kernel launch (task) of a call: from its first block's start to its
 * last block's end. */
typedef struct pld_model_task {
  int32_t call;       /* the rank's call (dispatch) of the run, from 0 */
  int32_t task;       /* its number among the call's tasks, from 0: a
                         launch, or a mixed kernel's two (its cube parts,
                         then its vector parts, each a task) */
  const char *kernel; /* the kernel's name */
  pld_core_type type;
  int32_t blocks; /* blocks that ran */
  double start_ns, end_ns;
} pld_model_task;

typedef struct pld_model_rank {
  int32_t rank, device;
  double finish_ns; /* its last call's end */
  int32_t ncores;
  const pld_model_core *cores; /* vector cores, then cube, by index */
  int32_t ntasks;
  const pld_model_task *tasks; /* by call, then launch */
} pld_model_rank;

typedef struct pld_model_report {
  const char *platform;
  double total_ns; /* the run's modeled time: the last rank's finish */
  int32_t nranks;
  const pld_model_rank *ranks;
} pld_model_report;

/* The modeled report of p's last run, valid until p's next run or its
 * destruction.  PLD_OK; PLD_ERR_ARG for a NULL argument; PLD_ERR_STATE
 * when p's model is off or no run has ended yet. */
int pld_program_model(const pld_program *p, pld_model_report *out);

/* One line for people: "model: a2a3sim, 2 ranks, 12.345 us (rank 1 last);
 * cores busy 61% (compute 40%, moves 12%, comm 5%, waiting 4%)", into
 * buf (cap bytes, always terminated).  Returns the length it needed. */
size_t pld_model_summary(const pld_model_report *r, char *buf, size_t cap);

#endif
