/* device/sched_hooks.h: how features that follow a device's tasks and
 * blocks attach to its scheduler (device/sched.h): a table of hooks each
 * registers when it is on (the race detector: device/sched_race.c; the
 * trace and the debug log: device/sched_trace.c), called at the points
 * below.  With none registered the scheduler calls nothing: each point
 * is one test of the hook count.  A hook that has nothing to do at a
 * point leaves it NULL. */
#ifndef PLD_DEVICE_SCHED_HOOKS_H
#define PLD_DEVICE_SCHED_HOOKS_H

#include <stdint.h>

#include "comm/comm.h"
#include "core/kctx.h"

/* The most hook tables one scheduler holds. */
#define PLD__SCHED_HOOKS 4

/* A byte region a task touches, as the scheduler orders tasks by them
 * (device/sched_task.c): arg is the kernel parameter it belongs to (-1:
 * pld_launch_by's counts), counts says it is the counts a size is read
 * from (pld_segment, pld_launch_by) rather than the tensor itself. */
struct pld__sched_region {
  const void *base;
  size_t nbytes;
  int writes;
  int32_t arg, counts;
};

/* Why a task is ordered after an earlier one: PLD__DEP_OVERLAP, regions
 * r_before of the earlier task and r of the later one overlap on bytes
 * [lo, lo + n), one of them writing (their `writes` say which);
 * PLD__DEP_EXPLICIT, an order the program asked for (no regions: NULL). */
enum { PLD__DEP_OVERLAP = 1, PLD__DEP_EXPLICIT = 2 };
struct pld__sched_dep {
  int kind;
  const struct pld__sched_region *r_before, *r;
  const void *lo;
  size_t n;
};

/* A launch as the hooks see it: its kernel, blocks (as launched: a count
 * decided on the device may cut them), arguments (tensors under the
 * kernel's parameter names and directions) and regions. */
struct pld__sched_launch {
  int32_t seq; /* launch number in the dispatch, from 0 */
  const pld_signature *sig;
  int32_t blocks;
  int argc;
  const pld_arg *argv;
  int nregions;
  const struct pld__sched_region *regions;
};

/* A block as the hooks see it, on the thread that runs it. */
struct pld__sched_block {
  struct pld__core *core; /* begun (pld__core_begin) */
  const char *lane;       /* the core's lane ("AIV3") */
  struct pld__tbuf *tbuf; /* the core's trace buffer, or NULL */
  const char *kernel;
  int rank, device;
  int32_t block, blocks; /* its index, and the launch's block count */
  int32_t seq;           /* the task's launch number in the dispatch */
};

struct pld__sched_hooks {
  const char *name;
  /* The scheduler of rank's device is made, on its AICPU's thread: the
   * hook's state in *ctx.  Returns PLD_OK or PLD_ERR_NOMEM (no message:
   * the scheduler composes it). */
  int (*open)(const struct pld__comm_env *env, int rank, void **ctx);
  void (*close)(void *ctx);
  /* A launch on the AICPU: the task's state in *task; PLD_OK or
   * PLD_ERR_NOMEM (no message).  And the task freed after its drain. */
  int (*task_new)(void *ctx, void **task);
  void (*task_free)(void *ctx, void *task);
  /* With the scheduler's lock held: task is ordered after `before`,
   * which has finished (a conflict with a finished task, or a finished
   * task's dependent); and task has finished. */
  void (*task_after)(void *ctx, void *task, const void *before);
  /* With the lock held, at a launch: what the task is, then, once for
   * each earlier task of the dispatch it is ordered after (finished or
   * not), why: the dependency graph as the scheduler decides it. */
  void (*task_launch)(void *ctx, void *task, const struct pld__sched_launch *l);
  void (*task_depends)(void *ctx, void *task, const void *before,
                       const struct pld__sched_dep *why);
  void (*task_done)(void *ctx, void *task);
  /* The calling thread runs block b of task: it begins (just before the
   * kernel's entry), the entry returned, and with the lock held its end
   * (before its task may finish) and, last, the thread is itself again. */
  void (*block_begin)(void *ctx, void *task, const struct pld__sched_block *b);
  void (*block_return)(void *ctx, void *task, const struct pld__sched_block *b);
  void (*block_end)(void *ctx, void *task, const struct pld__sched_block *b);
  void (*block_leave)(void *ctx, void *task, const struct pld__sched_block *b);
  /* With the lock held: what a satisfied deferred wait of task acquires
   * into (pld__cell_satisfied's `into`), or NULL. */
  uint32_t *(*wait_into)(void *ctx, void *task);
  /* With the lock held, at the end of a drain, on the AICPU: it learns
   * what its tasks did. */
  void (*drained)(void *ctx);
};

/* The race detector's hooks (device/sched_race.c), the observer's
 * (device/sched_trace.c): a block's thread traces and logs as its core,
 * and the diagnostics' (device/diag.c): the graph and each task's
 * counts. */
extern const struct pld__sched_hooks pld__sched_race_hooks;
extern const struct pld__sched_hooks pld__sched_trace_hooks;
extern const struct pld__sched_hooks pld__sched_diag_hooks;
/* The timing model's (device/sched_model.c): launches, their order and
 * each block's end. */
extern const struct pld__sched_hooks pld__sched_model_hooks;

#endif
