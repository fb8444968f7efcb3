/* device/sched.h: a device's AI cores.  Kernel launches become tasks;
 * a task waits for the earlier tasks whose tensor regions conflict with
 * its own, then its blocks go to free cores of the kernel's type.  A block
 * runs to completion on the thread that takes it: the AICPU while it
 * drains, or a core thread (started when first needed, asleep when idle).
 * A block about to block in a wait has the blocks queued behind it given
 * another thread, so it never holds them up, and idle cores cost no CPU. */
#ifndef PLD_DEVICE_SCHED_H
#define PLD_DEVICE_SCHED_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm/comm.h"
#include "core/error.h"
#include "core/tensor.h"
#include "pld/program.h"

struct pld__sched;

/* A task as submitted: the kernel, its block count, the arguments as its
 * entry unpacks them (tensor arguments point into `tensors`). */
struct pld__task_spec {
  pld_kernel_fn kernel;
  int32_t blocks;
  int argc;
  const pld_arg *argv;
  /* pld_launch_by: the block count is ceil(counts[index] / per_block),
   * read when the task is ready (blocks above is the most), else NULL. */
  const struct pld__blocks_by *by;
  /* Explicit dependencies: the launch numbers in the dispatch of earlier
   * tasks it waits for (checked), and its manual scope (0: none): tasks
   * of one scope are not ordered by their tensors, only by their counts
   * and their explicit dependencies. */
  int ndeps;
  const int32_t *deps;
  int32_t scope;
};

/* Where pld_launch_by reads its block count, and the rows of a block. */
struct pld__blocks_by {
  struct pld__countref at;
  int32_t per_block;
};

/* Creates the scheduler of one device (no threads yet).  Its cores
 * communicate through env, whose abort word is polled: once non-zero,
 * tasks not yet started are cancelled.  env may be NULL (no comm). */
int pld__sched_create(const pld_platform_info *plat, int rank, int device,
                      const struct pld__comm_env *env, struct pld__sched **out);
/* Stops and joins the core threads, frees everything.  NULL: no-op. */
void pld__sched_destroy(struct pld__sched *s);

/* Submits a task; the scheduler copies the spec and tensor descriptors.
 * Returns PLD_OK or PLD_ERR_NOMEM / PLD_ERR_SYSTEM (message set). */
int pld__sched_submit(struct pld__sched *s, const struct pld__task_spec *t);

/* Tasks submitted in the current dispatch (the next one's number). */
int32_t pld__sched_submitted(struct pld__sched *s);

/* Waits until every submitted task has finished or been cancelled,
 * running ready blocks on the calling thread (the AICPU) meanwhile, then
 * forgets them.  Returns PLD_OK or the first failure of a block, whose
 * message is copied into msg (unless it is NULL). */
int pld__sched_drain(struct pld__sched *s, char *msg, size_t cap);

/* The core whose wait slot is `slot` (vector cores first, then cube
 * cores), or NULL if it is not set up: for the report of a process
 * stopped from outside, read as it is (async-signal-safe). */
const struct pld__core *pld__sched_slot_core(const struct pld__sched *s,
                                             int slot);

/* The kernel block the calling thread runs now, for the crash report. */
extern _Thread_local const struct pld__core *pld__running_core;

#endif
