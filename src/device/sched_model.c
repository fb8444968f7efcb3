/* device/sched_model.c: the timing model's records of what the scheduler
 * did (PLD_MODEL; core/timeline.h), as hooks of the scheduler
 * (device/sched_hooks.h): each launch with its number in the dispatch,
 * its blocks and its core type, each order it was given after an earlier
 * task, and each block's end on the core that ran it, which closes the
 * block's records.  Tasks are named by a number of the scheduler's own,
 * so that a block's end names its task and dispatch without the clock;
 * the host assembles the timeline (host/model.c). */
#include "core/alloc.h"
#include "core/timeline.h"
#include "core/trace.h"
#include "device/mix.h"
#include "device/sched_hooks.h"
#include "pld/mix.h"
#include "pld/status.h"

struct mctx {
  int32_t next; /* the next task's number */
  int ratio;    /* a mixed block's vector parts */
};

struct mtask {
  int32_t id;
};

static int model_open(const struct pld__comm_env *env, int rank, void **ctx) {
  (void)rank;
  struct mctx *m = pld__calloc(1, sizeof *m);
  if (m && env)
    m->ratio =
        pld__mix_ratio(env->cores[PLD_CORE_VECTOR], env->cores[PLD_CORE_CUBE]);
  *ctx = m;
  return m ? PLD_OK : PLD_ERR_NOMEM;
}

static void model_close(void *ctx) { pld__free(ctx); }

static int model_task_new(void *ctx, void **task) {
  struct mctx *m = ctx;
  struct mtask *t = pld__malloc(sizeof *t);
  if (!t)
    return PLD_ERR_NOMEM;
  t->id = ++m->next;
  *task = t;
  return PLD_OK;
}

static void model_task_free(void *ctx, void *task) {
  (void)ctx;
  pld__free(task);
}

static void model_task_launch(void *ctx, void *task,
                              const struct pld__sched_launch *l) {
  const struct mctx *m = ctx;
  const struct mtask *t = task;
  pld_core_type type = l->sig->core_type;
  pld__obs_model(PLD__TM_TASK,
                 type == PLD_CORE_MIX    ? 2 + m->ratio
                 : type == PLD_CORE_CUBE ? 1
                                         : 0,
                 t->id, l->seq, l->blocks, l->sig->name);
}

static void model_task_depends(void *ctx, void *task, const void *before,
                               const struct pld__sched_dep *why) {
  (void)ctx;
  (void)why;
  const struct mtask *t = task, *b = before;
  pld__obs_model(PLD__TM_DEP, 0, t->id, b->id, 0, NULL);
}

static void model_block_return(void *ctx, void *task,
                               const struct pld__sched_block *b) {
  (void)ctx;
  const struct mtask *t = task;
  const struct pld__core *c = b->core;
  pld__obs_model(PLD__TM_BLOCK, c->mix ? 1 + c->mix_part : 0, t->id, b->block,
                 0, NULL);
}

const struct pld__sched_hooks pld__sched_model_hooks = {
    .name = "model",
    .open = model_open,
    .close = model_close,
    .task_new = model_task_new,
    .task_free = model_task_free,
    .task_launch = model_task_launch,
    .task_depends = model_task_depends,
    .block_return = model_block_return,
};
