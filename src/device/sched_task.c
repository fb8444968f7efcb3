/* device/sched_task.c: a device's tasks, one per kernel launch: the
 * launch's arguments copied under the kernel's parameter names, the
 * tensor regions it touches, and the order among tasks those regions
 * decide (a task waits for the earlier ones it conflicts with). */
#include "core/alloc.h"
#include "device/sched_state.h"

void pld__sched_task_free(struct task *t) {
  if (!t)
    return;
  pld__free(t->argv);
  pld__free(t->tensors);
  pld__free(t->regions);
  pld__free(t->dependents);
  pld__free(t);
}

struct task *pld__sched_task_new(const struct pld__task_spec *spec) {
  struct task *t = pld__calloc(1, sizeof *t);
  int n = spec->argc;
  if (t) {
    t->argv = pld__calloc((size_t)n, sizeof *t->argv);
    t->tensors = pld__calloc((size_t)n, sizeof *t->tensors);
    t->regions = pld__calloc((size_t)n, sizeof *t->regions);
  }
  if (!t || !t->argv || !t->tensors || !t->regions) {
    pld__sched_task_free(t);
    return NULL;
  }
  t->kernel = spec->kernel;
  t->launched = t->blocks = spec->blocks;
  t->argc = n;
  const pld_signature *sig = spec->kernel.sig;
  for (int i = 0; i < n; i++) {
    t->argv[i] = spec->argv[i];
    if (spec->argv[i].kind == PLD_ARG_SCALAR)
      continue;
    /* The kernel sees the tensor (or window view: this rank's copy) under
     * its own parameter's name and direction, which also decide what this
     * task conflicts with. */
    t->tensors[i] = *spec->argv[i].v.t;
    t->tensors[i].dir = sig->params[i].dir;
    t->tensors[i].name = sig->params[i].name;
    t->argv[i].v.t = &t->tensors[i];
    t->regions[t->nregions++] =
        (struct region){t->tensors[i].data, t->tensors[i].nbytes,
                        sig->params[i].dir != PLD_DIR_IN};
  }
  return t;
}

int pld__sched_tasks_conflict(const struct task *a, const struct task *b) {
  for (int i = 0; i < a->nregions; i++)
    for (int j = 0; j < b->nregions; j++)
      if ((a->regions[i].writes || b->regions[j].writes) &&
          pld__ranges_overlap(a->regions[i].base, a->regions[i].nbytes,
                              b->regions[j].base, b->regions[j].nbytes))
        return 1;
  return 0;
}

int pld__sched_task_after(struct task *on, struct task *t) {
  if (on->ndependents == on->capdependents) {
    int cap = on->capdependents ? 2 * on->capdependents : 4;
    struct task **d =
        pld__realloc(on->dependents, (size_t)cap * sizeof *on->dependents);
    if (!d)
      return PLD_ERR_NOMEM;
    on->dependents = d;
    on->capdependents = cap;
  }
  on->dependents[on->ndependents++] = t;
  t->waiting_on++;
  return PLD_OK;
}
