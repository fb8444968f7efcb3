/* device/sched_state.h: the scheduler's insides (device/sched.h), shared
 * by its files: device/sched.c (the ready queues, the core threads, the
 * blocks, the drain), device/sched_task.c (tasks and their order) and
 * device/sched_defer.c (deferred waits).  Nothing else includes it. */
#ifndef PLD_DEVICE_SCHED_STATE_H
#define PLD_DEVICE_SCHED_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/kctx.h"
#include "device/mix.h"
#include "device/sched.h"
#include "device/sched_hooks.h"

struct task {
  pld_kernel_fn kernel;
  int32_t launched;   /* the launch's block count: read without the lock */
  int32_t blocks;     /* blocks to run (cut short when cancelled) */
  int32_t next_block; /* next block to hand to a core */
  int32_t done_blocks;
  int32_t seq;                  /* launch number in the dispatch, from 0 */
  int32_t scope;                /* its manual scope, 0 for none */
  void *hook[PLD__SCHED_HOOKS]; /* each hook's state of the task */
  int argc;
  pld_arg *argv;
  struct pld__tensor *tensors;
  /* Segments among its tensors, or a block count by counts (by.counts
   * set): decided when it is ready (pld__sched_task_resolve). */
  int dynamic;
  struct pld__blocks_by by;
  int nregions;
  struct pld__sched_region *regions;
  int ndeferred;            /* deferred waits pending (watch slots) */
  int waiting_on;           /* unfinished tasks this one depends on */
  struct task **dependents; /* tasks waiting on this one */
  int ndependents, capdependents;
  int finished;
  struct task *next;       /* submission order */
  struct task *ready_next; /* ready queue of its core type */
};

/* A simulated core: its identity, tile memory, wait slot and trace lane.
 * A block holds one from start to end; whichever thread runs the block
 * runs it on that core. */
struct simcore {
  struct pld__core core;
  char lane[16];
  struct pld__tbuf *tbuf;
  int next_free; /* the free list (indices), -1 at its end */
};

/* A block of a mixed kernel (pld/mix.h) holds a cube core and `ratio`
 * vector cores from when it is taken until its last part returns; each
 * part runs on a thread of its core's type (or the AICPU), taken from
 * its type's queue of parts before any block. */
struct mixblock;
struct part {
  struct mixblock *mb;
  int idx; /* 0 the cube part, 1 + v vector part v */
  struct part *next;
};
struct mixblock {
  struct pld__mix m;
  struct task *t;
  int32_t block;
  int left; /* parts not returned */
  struct simcore *sc[1 + PLD__MIX_MAX_VEC];
  struct part parts[1 + PLD__MIX_MAX_VEC];
};

/* A core thread: runs blocks of one core type, on any free core of it. */
struct worker {
  pthread_t thread;
  struct pld__sched *s;
  int type;
};

struct coretype {
  int max;                   /* cores of this type on the device */
  int ncores;                /* cores set up so far (0 .. ncores-1) */
  int free_core;             /* first free set-up core, -1 for none */
  int busy;                  /* cores holding a block */
  int pending;               /* blocks in the ready queue not handed out yet */
  int spawned;               /* core threads started */
  int idle;                  /* core threads asleep waiting for work */
  int looking;               /* core threads polling for work */
  int woken;                 /* core threads told to look, not looking yet */
  _Atomic uint32_t work_seq; /* bumped when work arrives: pollers watch it */
  struct simcore *cores;
  struct worker *threads;
  pthread_cond_t work;
  struct task *ready_head, *ready_tail;
  struct part *parts_head, *parts_tail; /* parts of mixed blocks */
  int nparts;
  struct pld__core_spec spec;
};

struct pld__sched {
  pthread_mutex_t mu;
  pthread_cond_t drained;
  struct coretype types[2]; /* indexed by pld_core_type */
  /* Mixed tasks ready (their own queue: each block takes a cluster), the
   * blocks in it not handed out, and the vector cores per cube core. */
  struct task *mix_head, *mix_tail;
  int mix_pending;
  int ratio;
  struct task *head, *tail; /* every task of the current dispatch */
  int unfinished;
  /* Bumped when unfinished reaches 0, and when work arrives: the AICPU,
   * draining, watches it. */
  _Atomic uint32_t drain_seq;
  int aicpu_free;   /* the AICPU will look for blocks (not in one now) */
  int aicpu_asleep; /* the AICPU sleeps on drained */
  /* Blocks ready and not handed out, of both types (written with mu
   * held): a block about to wait looks here before it takes the lock. */
  _Atomic int queued;
  struct pld__spin spin;
  _Atomic uint32_t local_awake; /* without an env */
  int stopping;
  int cancelled;
  int status; /* first block failure */
  char msg[PLD__MSG_MAX];
  int rank, device;
  const struct pld__comm_env *env;
  const struct task *published_head[2]; /* see publish_queued */
  /* Deferred waits: the task of each in-use slot (NULL: free), and the
   * count in use. */
  struct task *deferred[PLD__MAX_DEFERRED];
  int ndeferred;
  int32_t submitted; /* tasks of the current dispatch */
  /* What follows the tasks and blocks (device/sched_hooks.h): nhooks
   * tables, each with its state. */
  const struct pld__sched_hooks *hooks[PLD__SCHED_HOOKS];
  void *hook_ctx[PLD__SCHED_HOOKS];
  int nhooks;
  void *alt_stack; /* the AICPU thread's signal stack, if set here */
};

/* ---- tasks (device/sched_task.c) ---------------------------------------- */

/* A task of spec, not yet ordered or queued: its own copy of the
 * arguments and tensor descriptors.  NULL when memory is short (no
 * message set). */
struct task *pld__sched_task_new(const struct pld__task_spec *spec);
/* Frees t and what it holds.  NULL: no-op. */
void pld__sched_task_free(struct task *t);
/* A task ready to start whose segments or block count are read now
 * (t->dynamic): its views' rows and its block count set.  Returns PLD_OK
 * or PLD_ERR_BOUNDS, with the call that made the value (*what) and the
 * message (kernel, parameter, counts, values) in msg. */
int pld__sched_task_resolve(struct task *t, const char **what, char *msg,
                            size_t cap);
/* Whether a and b touch overlapping regions, one of them writing (in one
 * manual scope: only regions of counts the device reads count); if so and
 * why is not NULL, *why says which (the first such pair). */
int pld__sched_tasks_conflict(const struct task *a, const struct task *b,
                              struct pld__sched_dep *why);
/* Whether t, launched by spec, goes after the earlier task o: their
 * regions conflict, or spec names o among its explicit dependencies
 * (pld_launch_after); *why says which. */
int pld__sched_task_orders(const struct task *o, const struct task *t,
                           const struct pld__task_spec *spec,
                           struct pld__sched_dep *why);
/* t waits for `on` to finish.  Returns PLD_OK or PLD_ERR_NOMEM. */
int pld__sched_task_after(struct task *on, struct task *t);

/* With mu held: what a satisfied deferred wait of t acquires into (the
 * hooks' wait_into; NULL without one). */
static inline uint32_t *pld__sched_wait_into(const struct pld__sched *s,
                                             const struct task *t) {
  uint32_t *into = NULL;
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->wait_into)
      into = s->hooks[i]->wait_into(s->hook_ctx[i], t->hook[i]);
  return into;
}

/* ---- cores (device/sched_core.c) ---------------------------------------- */

/* Called with mu held: sets up the next core of ct (tile memory, wait
 * slot, trace lane), whose waits tell on_wait.  Returns PLD_OK or
 * PLD_ERR_NOMEM (message set). */
int pld__sched_core_setup(struct pld__sched *s, struct coretype *ct,
                          void (*on_wait)(struct pld__core *, int));
/* Publishes that core c starts its block now (for the host's kernel time
 * limit, deadlock report and crash report).  Returns its slot, or NULL
 * without a watch. */
struct pld__coreslot *pld__sched_slot_begin(struct pld__sched *s,
                                            const struct pld__core *c);

/* ---- hooks (device/sched_hooks.c) --------------------------------------- */

/* The points of a block the hooks see (struct pld__sched_hooks). */
enum { PLD__AT_BEGIN, PLD__AT_RETURN, PLD__AT_END, PLD__AT_LEAVE };

int pld__sched_hooks_open(struct pld__sched *s,
                          const struct pld__comm_env *env);
void pld__sched_hooks_close(struct pld__sched *s, int n);
int pld__sched_hooks_task_new(struct pld__sched *s, struct task *t);
/* Frees t and its hooks' states. */
void pld__sched_task_release(struct pld__sched *s, struct task *t);
/* With mu held (as the three below): t is ordered after `before`. */
void pld__sched_hooks_task_after(struct pld__sched *s, struct task *t,
                                 const struct task *before);
void pld__sched_hooks_task_done(struct pld__sched *s, struct task *t);
/* t is launched (before it is ordered). */
void pld__sched_hooks_task_launch(struct pld__sched *s, struct task *t);
/* t is ordered after `before` for the reason why. */
void pld__sched_hooks_task_depends(struct pld__sched *s, struct task *t,
                                   const struct task *before,
                                   const struct pld__sched_dep *why);
void pld__sched_hooks_block(struct pld__sched *s, struct task *t,
                            const struct pld__sched_block *b, int at);

/* ---- deferred waits (device/sched_defer.c), called with mu held ---------- */

/* Block c of task t ended with deferred waits; they take watch slots
 * until satisfied.  Returns PLD_OK or, with no slot left, the block's
 * failure. */
int pld__sched_defer_take(struct pld__sched *s, struct task *t,
                          struct pld__core *c);
/* Drops the deferred waits now satisfied; their tasks (in the order of
 * their slots, a task once per satisfied wait) go to done[*ndone], at
 * most PLD__MAX_DEFERRED.  Returns how many waits remain. */
int pld__sched_defer_poll(struct pld__sched *s, struct task **done, int *ndone);
/* Frees every deferred wait (the dispatch is cancelled). */
void pld__sched_defer_drop_all(struct pld__sched *s);

#endif
