/* comm/signal.c: notify and wait on INT32 cells of windows. */
#include <string.h>

#include "comm/comm.h"
#include "core/futex.h"
#include "core/timeline.h"
#include "core/tunables.h"

_Thread_local struct pld__comm_call pld__comm_now;

/* Looks at a cell before a wait publishes itself: about a microsecond. */
#define PRE_POLL 64

int pld__cell_offset(struct pld__core *c, const char *fn, pld_window sig,
                     int32_t peer, int n, const int64_t *idx, size_t *off) {
  int st = pld__win_check(c, fn, sig, peer);
  if (st)
    return st;
  const struct pld__tensor *w = sig.p;
  char ws[160], ts[128];
  if (w->dtype != PLD_INT32) {
    pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
    return pld__kfail(c, PLD_ERR_ARG, fn, "%s is %s: signals are INT32 cells",
                      ws, pld_dtype_name(w->dtype));
  }
  if (!idx)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "idx: expected an index (PLD_AT(...)), got NULL");
  if (n != w->ndim) {
    pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
    return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "%s has %d dimension%s, got an index of %d", ws, w->ndim,
                      w->ndim == 1 ? "" : "s", n);
  }
  size_t linear = 0;
  for (int d = 0; d < n; d++) {
    if (idx[d] < 0 || idx[d] >= w->shape[d]) {
      pld__describe(ws, sizeof ws, w, peer, NULL);
      pld__tensor_str(ts, sizeof ts, w);
      return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                        "%s: index %lld of dimension %d outside %s", ws,
                        (long long)idx[d], d, ts);
    }
    linear = linear * (size_t)w->shape[d] + (size_t)idx[d];
  }
  *off = w->win_offset + linear * sizeof(int32_t);
  return PLD_OK;
}

static int signal_cell(struct pld__core *c, struct pld__fabric *f,
                       const char *fn, const struct pld__tensor *w,
                       int32_t peer, size_t off, int32_t value,
                       pld_notify_op op, int later) {
  const struct pld__comm_env *env = c->env;
  if (pld__observed(PLD__TEV_NOTIFY)) {
    /* Before the signal: the wait it releases ends after it. */
    struct pld__tev e;
    pld__tev_init(&e, PLD__TEV_NOTIFY, op, w->name);
    pld__tev_cell(&e, w->ndim, w->shape,
                  (int64_t)((off - w->win_offset) / sizeof(int32_t)));
    e.b = value;
    e.c = peer;
    e.d = w->win_buf;
    e.e = w->comm->members[peer];
    e.x = (int64_t)off;
    pld__obs_instant(&e);
  }
  pld__comm_now.fn = fn;
  pld__comm_now.sig = w;
  int st = (later ? f->ops->signal_later : f->ops->signal)(
      f, w->win_buf, w->comm->members[peer], off, value, op);
  if (st)
    return pld__kfail(c, st, fn, "%s", pld_last_error());
  atomic_fetch_add_explicit(&env->watch->progress, 1, memory_order_relaxed);
  return PLD_OK;
}

int pld__signal_cell(struct pld__core *c, const char *fn,
                     const struct pld__tensor *w, int32_t peer, size_t off,
                     int32_t value, pld_notify_op op) {
  return signal_cell(c, c->env->fabric, fn, w, peer, off, value, op, 0);
}

int pld__signal_cell_later(struct pld__core *c, struct pld__fabric *f,
                           const char *fn, const struct pld__tensor *w,
                           int32_t peer, size_t off, int32_t value,
                           pld_notify_op op) {
  return signal_cell(c, f, fn, w, peer, off, value, op, 1);
}

int pld__notify_check(struct pld__core *c, const char *fn, pld_window sig,
                      int32_t peer, int n, const int64_t *idx, pld_notify_op op,
                      size_t *off) {
  if (c->status)
    return c->status;
  if (op != PLD_NOTIFY_ADD && op != PLD_NOTIFY_SET)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "op: expected PLD_NOTIFY_ADD or PLD_NOTIFY_SET, got %d",
                      (int)op);
  int st = pld__cell_offset(c, fn, sig, peer, n, idx, off);
  return st ? st
            : pld__cell_use(c, fn, sig.p, *off, sizeof(int32_t),
                            PLD__USE_NOTIFY, n, idx);
}

int pld_notify(pld_core k, pld_window sig, int32_t peer, int n,
               const int64_t *idx, int32_t value, pld_notify_op op) {
  size_t off;
  int st = pld__notify_check(k.p, "pld_notify", sig, peer, n, idx, op, &off);
  return st ? st
            : pld__signal_cell(k.p, "pld_notify", sig.p, peer, off, value, op);
}

int pld_wait(pld_core k, pld_window sig, int n, const int64_t *idx,
             int32_t expected, pld_wait_cmp cmp) {
  struct pld__core *c = k.p;
  if (c->status)
    return c->status;
  if (!pld__wait_cmp_str((int)cmp))
    return pld__kfail(c, PLD_ERR_ARG, "pld_wait",
                      "cmp: expected PLD_WAIT_EQ, _GE, _NE, _GT, _LT or _LE, "
                      "got %d",
                      (int)cmp);
  size_t off;
  int st = pld__cell_offset(c, "pld_wait", sig, PLD__NO_PEER, n, idx, &off);
  if (!st)
    st = pld__cell_use(c, "pld_wait", sig.p, off, sizeof(int32_t),
                       PLD__USE_WAIT, n, idx);
  if (st)
    return st;
  return pld__wait_cell(c, "pld_wait", sig.p, off, n, idx, expected, cmp);
}

int pld_wait_deferred(pld_core k, pld_window sig, int n, const int64_t *idx,
                      int32_t expected, pld_wait_cmp cmp) {
  struct pld__core *c = k.p;
  const char *fn = "pld_wait_deferred";
  if (c->status)
    return c->status;
  if (!pld__wait_cmp_str((int)cmp))
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "cmp: expected PLD_WAIT_EQ, _GE, _NE, _GT, _LT or _LE, "
                      "got %d",
                      (int)cmp);
  size_t off;
  int st = pld__cell_offset(c, fn, sig, PLD__NO_PEER, n, idx, &off);
  if (!st)
    st = pld__cell_use(c, fn, sig.p, off, sizeof(int32_t), PLD__USE_WAIT, n,
                       idx);
  if (st)
    return st;
  struct pld__fabric *f = c->env->poll;
  int32_t value;
  if (pld__obs.model)
    pld__obs_model(PLD__TL_DEFER, cmp, f->rank,
                   pld__cell_id(sig.p->win_buf, off), expected, NULL);
  if (pld__cell_satisfied(f, sig.p->win_buf, off, expected, cmp, &value, NULL))
    return PLD_OK;
  if (c->ndeferred == PLD_MAX_DEFERRED_WAITS)
    return pld__kfail(c, PLD_ERR_UNSUPPORTED, fn,
                      "more than %d deferred waits in one block",
                      PLD_MAX_DEFERRED_WAITS);
  struct pld__deferred *d = &c->deferred[c->ndeferred++];
  d->buf = sig.p->win_buf;
  d->off = off;
  d->cmp = (int32_t)cmp;
  d->expected = expected;
  d->ndim = n;
  memcpy(d->idx, idx, (size_t)n * sizeof *idx);
  d->window = sig.p->name;
  return PLD_OK;
}

int pld__cell_satisfied(struct pld__fabric *f, int buf, size_t off,
                        int32_t expected, int cmp, int32_t *value,
                        uint32_t *into) {
  if (f->ops->satisfied)
    return f->ops->satisfied(f, buf, off, expected, cmp, value, into);
  return pld__wait_satisfied(*value = f->ops->cell(f, buf, off), expected, cmp);
}

int pld__wait_cell(struct pld__core *c, const char *fn,
                   const struct pld__tensor *sig, size_t off, int n,
                   const int64_t *idx, int32_t expected, int cmp) {
  const struct pld__comm_env *env = c->env;
  struct pld__fabric *f = env->poll;
  int buf = sig->win_buf;
  int32_t value;
  if (pld__obs.model) /* every wait: in modeled time it may block */
    pld__obs_model(PLD__TL_WAIT, cmp, f->rank, pld__cell_id(buf, off), expected,
                   NULL);
  if (pld__cell_satisfied(f, buf, off, expected, cmp, &value, NULL))
    return PLD_OK;
  /* A wait about to be satisfied (a neighbour's hand-over, a ping-pong) is
   * spared publishing itself for the watch, which costs more than such a
   * wait: a short poll first, unless more threads of the program are
   * awake than there are CPUs (the sender may need this one). */
  if (atomic_load_explicit(env->spin.awake, memory_order_relaxed) <=
      env->spin.cpus)
    for (int i = 0; i < PRE_POLL; i++) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (pld__cell_satisfied(f, buf, off, expected, cmp, &value, NULL))
        return PLD_OK;
    }

  /* The thread blocks: the scheduler gives the blocks queued behind this
   * one another thread. */
  if (c->on_wait)
    c->on_wait(c, PLD__WAIT_BLOCK);
  /* Publish the wait for the host's deadlock watch (the slot already names
   * the block), then stop counting as running. */
  struct pld__coreslot *w = &env->watch->slots[c->slot];
  pld__slot_write_begin(w);
  pld__slot_set_wait(w, buf, off, (int32_t)cmp, expected, n, idx, sig->name,
                     c->coll_kind, c->coll_call, c->coll_round);
  atomic_store_explicit(&w->since_ns, pld__now_ns(), memory_order_relaxed);
  atomic_store_explicit(&w->state, PLD__CORE_WAITING, memory_order_relaxed);
  pld__slot_write_end(w);
  atomic_fetch_sub(&env->watch->running, 1);

  struct pld__tev e;
  int observed = pld__observed(PLD__TEV_WAIT);
  if (observed) {
    pld__tev_init(&e, PLD__TEV_WAIT, cmp, sig->name);
    pld__tev_cell(&e, sig->ndim, sig->shape,
                  (int64_t)((off - sig->win_offset) / sizeof(int32_t)));
    e.b = expected;
    e.d = buf;
    e.x = (int64_t)off;
    e.e = c->coll_kind;
    e.f = c->coll_call;
    e.g = c->coll_round;
    pld__obs_begin(&e);
  }
  uint32_t why = PLD__ABORT_NONE;
  for (;;) {
    uint32_t seen = f->ops->events(f);
    if (pld__cell_satisfied(f, buf, off, expected, cmp, &value, NULL))
      break;
    why = atomic_load_explicit(env->abort, memory_order_acquire);
    if (why != PLD__ABORT_NONE)
      break;
    /* The timeout only bounds the sleep: the abort word is checked again. */
    f->ops->wait_events(f, seen, buf, off, &env->spin,
                        PLD__MS(PLD_ABORT_POLL_MS));
    if (c->on_wait)
      c->on_wait(c, PLD__WAIT_WOKE);
  }
  if (c->on_wait)
    c->on_wait(c, PLD__WAIT_RESUME);
  if (observed) {
    e.c = value;
    e.flag = why != PLD__ABORT_NONE;
    pld__obs_end(&e);
  }
  /* Running again: the kernel's time limit counts from here (see
   * struct pld__coreslot for why no clock is read). */
  atomic_fetch_add(&env->watch->running, 1);
  pld__slot_write_begin(w);
  atomic_store_explicit(&w->since_ns, 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&w->resumes, 1, memory_order_relaxed);
  atomic_store_explicit(&w->state, PLD__CORE_RUNNING, memory_order_relaxed);
  pld__slot_write_end(w);
  if (why == PLD__ABORT_NONE)
    return PLD_OK;
  char ws[160];
  pld__describe(ws, sizeof ws, sig, PLD__NO_PEER, NULL);
  return pld__kfail(c,
                    why == PLD__ABORT_DEADLOCK  ? PLD_ERR_DEADLOCK
                    : why == PLD__ABORT_TIMEOUT ? PLD_ERR_TIMEOUT
                                                : PLD_ERR_ABORTED,
                    fn, "stopped waiting on %s: %s", ws,
                    why == PLD__ABORT_DEADLOCK  ? "the run deadlocked"
                    : why == PLD__ABORT_TIMEOUT ? "a wait timed out"
                                                : "another rank failed");
}
