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
#define PLD__SCHED_HOOKS 2

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

/* The race detector's hooks (device/sched_race.c) and the observer's
 * (device/sched_trace.c): a block's thread traces and logs as its core. */
extern const struct pld__sched_hooks pld__sched_race_hooks;
extern const struct pld__sched_hooks pld__sched_trace_hooks;

#endif
