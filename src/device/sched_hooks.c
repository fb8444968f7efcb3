/* device/sched_hooks.c: the scheduler's calls of its hooks
 * (device/sched_hooks.h), for device/sched.c: each point of a task or
 * block, to every registered table in order. */
#include "core/trace.h"
#include "device/sched_state.h"

/* Closes the first n hooks of s. */
void pld__sched_hooks_close(struct pld__sched *s, int n) {
  for (int i = 0; i < n; i++)
    if (s->hooks[i]->close)
      s->hooks[i]->close(s->hook_ctx[i]);
}

/* Registers the hooks env asks for (the trace and the debug log first,
 * as a block's thread observes as its core before the race detector sees
 * it as one) and opens them.  Returns PLD_OK or PLD_ERR_NOMEM. */
int pld__sched_hooks_open(struct pld__sched *s,
                          const struct pld__comm_env *env) {
  if (!env || env->trace || pld__debug_mask)
    s->hooks[s->nhooks++] = &pld__sched_trace_hooks;
  if (env && env->race)
    s->hooks[s->nhooks++] = &pld__sched_race_hooks;
  if (env && env->diag)
    s->hooks[s->nhooks++] = &pld__sched_diag_hooks;
  if (env && env->model)
    s->hooks[s->nhooks++] = &pld__sched_model_hooks;
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->open &&
        s->hooks[i]->open(env, s->rank, &s->hook_ctx[i]) != PLD_OK) {
      pld__sched_hooks_close(s, i);
      return PLD_ERR_NOMEM;
    }
  return PLD_OK;
}

/* A new task's states.  Returns PLD_OK or PLD_ERR_NOMEM. */
int pld__sched_hooks_task_new(struct pld__sched *s, struct task *t) {
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->task_new &&
        s->hooks[i]->task_new(s->hook_ctx[i], &t->hook[i]) != PLD_OK)
      return PLD_ERR_NOMEM;
  return PLD_OK;
}

/* Frees t and its states. */
void pld__sched_task_release(struct pld__sched *s, struct task *t) {
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->task_free && t->hook[i])
      s->hooks[i]->task_free(s->hook_ctx[i], t->hook[i]);
  pld__sched_task_free(t);
}

/* Called with mu held: t is ordered after `before`, finished. */
void pld__sched_hooks_task_after(struct pld__sched *s, struct task *t,
                                 const struct task *before) {
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->task_after)
      s->hooks[i]->task_after(s->hook_ctx[i], t->hook[i], before->hook[i]);
}

/* Called with mu held: t is launched (before it is ordered). */
void pld__sched_hooks_task_launch(struct pld__sched *s, struct task *t) {
  const struct pld__sched_launch l = {t->seq,    t->kernel.sig, t->launched,
                                      t->argc,   t->argv,       t->nregions,
                                      t->regions};
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->task_launch)
      s->hooks[i]->task_launch(s->hook_ctx[i], t->hook[i], &l);
}

/* Called with mu held: t is ordered after `before` for the reason why. */
void pld__sched_hooks_task_depends(struct pld__sched *s, struct task *t,
                                   const struct task *before,
                                   const struct pld__sched_dep *why) {
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->task_depends)
      s->hooks[i]->task_depends(s->hook_ctx[i], t->hook[i], before->hook[i],
                                why);
}

/* Called with mu held: t finished; its dependents are ordered after it. */
void pld__sched_hooks_task_done(struct pld__sched *s, struct task *t) {
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->task_done)
      s->hooks[i]->task_done(s->hook_ctx[i], t->hook[i]);
  for (int i = 0; i < t->ndependents; i++)
    pld__sched_hooks_task_after(s, t->dependents[i], t);
}

void pld__sched_hooks_block(struct pld__sched *s, struct task *t,
                            const struct pld__sched_block *b, int at) {
  for (int i = 0; i < s->nhooks; i++) {
    const struct pld__sched_hooks *h = s->hooks[i];
    void (*fn)(void *, void *, const struct pld__sched_block *) =
        at == PLD__AT_BEGIN    ? h->block_begin
        : at == PLD__AT_RETURN ? h->block_return
        : at == PLD__AT_END    ? h->block_end
                               : h->block_leave;
    if (fn)
      fn(s->hook_ctx[i], t->hook[i], b);
  }
}
