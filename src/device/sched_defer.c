/* device/sched_defer.c: deferred waits (pld_wait_deferred): a block that
 * ends with waits still unsatisfied hands them to its task, whose end
 * they hold up; each takes a watch slot after the cores' (for the host's
 * deadlock watch) until a poll finds its cell satisfied. */
#include "device/sched_state.h"

/* The watch slot of deferred wait i. */
static struct pld__coreslot *deferred_slot(struct pld__sched *s, int i) {
  return &s->env->watch->slots[PLD__MAX_CORES + i];
}

/* Frees deferred wait i (satisfied, or cancelled). */
static void deferred_drop(struct pld__sched *s, int i) {
  struct pld__coreslot *w = deferred_slot(s, i);
  pld__slot_write_begin(w);
  atomic_store_explicit(&w->state, PLD__CORE_IDLE, memory_order_relaxed);
  pld__slot_write_end(w);
  s->deferred[i]->ndeferred--;
  s->deferred[i] = NULL;
  s->ndeferred--;
}

int pld__sched_defer_take(struct pld__sched *s, struct task *t,
                          struct pld__core *c) {
  int next = 0;
  for (int k = 0; k < c->ndeferred; k++) {
    const struct pld__deferred *d = &c->deferred[k];
    while (next < PLD__MAX_DEFERRED && s->deferred[next])
      next++;
    if (next == PLD__MAX_DEFERRED)
      return pld__kfail(c, PLD_ERR_UNSUPPORTED, "pld_wait_deferred",
                        "more than %d deferred waits pending on the device",
                        PLD__MAX_DEFERRED);
    struct pld__coreslot *w = deferred_slot(s, next);
    pld__slot_write_begin(w);
    pld__slot_set_block(w, (int32_t)c->spec.type, -1, c->block_idx,
                        c->block_num, c->kernel);
    pld__slot_set_wait(w, d->buf, d->off, d->cmp, d->expected, d->ndim, d->idx,
                       d->window, 0, 0, 0);
    atomic_store_explicit(&w->since_ns, pld__now_ns(), memory_order_relaxed);
    atomic_store_explicit(&w->state, PLD__CORE_WAITING, memory_order_relaxed);
    pld__slot_write_end(w);
    s->deferred[next] = t;
    s->ndeferred++;
    t->ndeferred++;
  }
  return PLD_OK;
}

int pld__sched_defer_poll(struct pld__sched *s, struct task **done,
                          int *ndone) {
  struct pld__fabric *f = s->env ? s->env->poll : NULL;
  *ndone = 0;
  for (int i = 0; s->ndeferred && i < PLD__MAX_DEFERRED; i++) {
    struct task *t = s->deferred[i];
    if (!t)
      continue;
    const struct pld__coreslot *w = deferred_slot(s, i);
    int32_t value;
    if (!pld__cell_satisfied(f, w->buf, (size_t)w->off, w->expected, w->cmp,
                             &value, pld__sched_wait_into(s, t)))
      continue;
    deferred_drop(s, i);
    atomic_fetch_add_explicit(&s->env->watch->progress, 1,
                              memory_order_relaxed);
    done[(*ndone)++] = t;
  }
  return s->ndeferred;
}

void pld__sched_defer_drop_all(struct pld__sched *s) {
  for (int i = 0; s->ndeferred && i < PLD__MAX_DEFERRED; i++)
    if (s->deferred[i])
      deferred_drop(s, i);
}
