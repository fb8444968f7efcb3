/* host/run.c: one run of a compiled program, from its checks to its end:
 * preparing the devices (pld_program_prepare), posting the run and
 * looking at it until every rank is done (crashes, the watch of
 * host/watch.c, host tasks, stopping a failed run), through the control
 * plane of host/ctl.h: the devices are started, posted and stopped by
 * host/ctl_shm.c or host/ctl_mpi.c.  The runner and the queue of
 * host/submit.c drive runs through the same loop. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "host/ctl.h"
#include "host/inspect.h"
#include "host/resident.h"
#include "host/run.h"
#include "host/trace.h"

/* How often a stopped run is looked at (PLD_STOP_POLL_MS, the tunables
 * table: core/tunables.h). */
#define STOPPING_NS PLD__MS(PLD_STOP_POLL_MS)

/* The tensors of a run must be those the program was compiled for (a
 * failure, message set); its scalars may bring new values (*rescalar set:
 * pld__program_rescalar decides). */
static int check_run_tensors(const struct pld_program *p, int argc,
                             const pld_arg *argv, int *rescalar) {
  const pld_signature *sig = p->plan.host.sig;
  *rescalar = 0;
  if (argc != p->plan.nargs || (argc > 0 && !argv))
    return pld__fail_api(PLD_ERR_ARG,
                         "%s: expected the %d arguments it was "
                         "compiled for, got %d%s",
                         sig->name, p->plan.nargs, argc,
                         argc > 0 && !argv ? " and a NULL argv" : "");
  for (int i = 0; i < argc; i++) {
    const pld_arg *want = &p->plan.args[i], *got = &argv[i];
    const char *pn = sig->params[i].name;
    if (want->kind == PLD_ARG_TENSOR) {
      const struct pld__tensor *w = want->v.t, *g = got->v.t;
      /* The shapes are written for a failure only: this runs every run. */
      char ws[128], gs[128] = "a scalar";
      if (got->kind == PLD_ARG_TENSOR && g && (g->flags & PLD__T_INTER)) {
        pld__tensor_str(ws, sizeof ws, w);
        return pld__fail_api(
            PLD_ERR_ARG,
            "%s: parameter '%s' (%d of %d): "
            "expected a host tensor %s, got %s, an intermediate "
            "of a host orchestration (it has no data outside "
            "its run)",
            sig->name, pn, i + 1, argc, ws, g->name ? g->name : "?");
      }
      if (got->kind == PLD_ARG_TENSOR && g && (g->flags & PLD__T_RESIDENT) &&
          g->dtype == w->dtype && g->ndim == w->ndim &&
          !memcmp(g->shape, w->shape, (size_t)w->ndim * sizeof w->shape[0])) {
        int st = pld__resident_check(p, i, g);
        if (st)
          return st;
        continue;
      }
      if (got->kind != PLD_ARG_TENSOR || !g ||
          !(g->flags & (PLD__T_HOST | PLD__T_RESIDENT)) ||
          g->dtype != w->dtype || g->ndim != w->ndim ||
          memcmp(g->shape, w->shape, (size_t)w->ndim * sizeof w->shape[0])) {
        pld__tensor_str(ws, sizeof ws, w);
        if (got->kind == PLD_ARG_TENSOR && g)
          pld__tensor_str(gs, sizeof gs, g);
        return pld__fail_api(PLD_ERR_ARG,
                             "%s: parameter '%s' (%d of %d): "
                             "expected a host tensor %s as compiled, got %s",
                             sig->name, pn, i + 1, argc, ws, gs);
      }
    } else if (got->kind != PLD_ARG_SCALAR) {
      return pld__fail_api(PLD_ERR_ARG,
                           "%s: parameter '%s' (%d of %d): "
                           "expected a scalar, got a tensor",
                           sig->name, pn, i + 1, argc);
    } else if (got->v.u != want->v.u || got->dtype != want->dtype) {
      *rescalar = 1;
    }
  }
  return PLD_OK;
}

int pld__run_check(struct pld_program *p, int argc, const pld_arg *argv) {
  int rescalar;
  int st = check_run_tensors(p, argc, argv, &rescalar);
  /* Other scalar values: the same program with them, or a refusal. */
  return !st && rescalar ? pld__program_rescalar(p, argc, argv) : st;
}

int pld__run_depends(const struct pld_program *p, const pld_arg *before,
                     const pld_arg *argv) {
  const pld_signature *sig = p->plan.host.sig;
  for (int i = 0; i < p->plan.nargs; i++) {
    const struct pld__tensor *in = argv[i].v.t;
    if (argv[i].kind != PLD_ARG_TENSOR || !in ||
        !(sig->params[i].dir & PLD_DIR_IN) ||
        (in->flags & PLD__T_RESIDENT)) /* never copied */
      continue;
    for (int j = 0; j < p->plan.nargs; j++)
      if (before[j].kind == PLD_ARG_TENSOR &&
          (sig->params[j].dir & PLD_DIR_OUT) &&
          pld__ranges_overlap(in->data, in->nbytes, before[j].v.t->data,
                              before[j].v.t->nbytes))
        return 1;
  }
  return 0;
}

int pld__run_precopy(struct pld_program *p, const pld_arg *now, int argc,
                     const pld_arg *argv) {
  int rescalar;
  if (check_run_tensors(p, argc, argv, &rescalar) || rescalar || !p->rs.started)
    return 0;
  /* Its inputs must be final: none may be what the run in flight writes
   * (a chain of runs, one tensor updated in place). */
  if (pld__run_depends(p, now, argv))
    return 0;
  p->be.cp->copy_in(p, argv, (p->rs.slot + 1) % p->rs.nslots);
  return 1;
}

/* Tells every device to stop the run (why: PLD__ABORT_*), waking its
 * waiting cores. */
static void stop_run(struct pld_program *p, uint32_t why) {
  p->be.cp->abort(p, why);
}

/* Runs the host tasks whose calls have all finished, in order, from task
 * *next on.  Returns PLD_OK or the failure of a task (message set). */
static int run_tasks(struct pld_program *p, const pld_arg *argv, int *next) {
  while (*next < p->plan.ntasks) {
    const struct pld__taskplan *tp = &p->plan.tasks[*next];
    for (int r = 0; r < p->plan.nranks; r++)
      if (atomic_load_explicit(&pld__view(p, r)->calls_done,
                               memory_order_acquire) < (uint32_t)tp->need[r])
        return PLD_OK;
    p->be.cp->task_begin(p, *next);
    if (p->rs.race)
      pld__race_host_task(p->rs.race);
    struct pld__tev span;
    int spanned = pld__htrace_begin(p, &span, PLD__TH_TASK, tp->fn.sig->name);
    int st = pld__task_run(p, argv, *next);
    if (spanned)
      pld__htrace_end(p, &span, 0);
    if (st)
      return st;
    (*next)++;
    /* Done: the calls that wait for it may start (the store orders its
     * copies into device memory before them).  Sequentially consistent,
     * not only a release: the load of the sleepers below must not be
     * done before it, or a device counting itself asleep meanwhile could
     * still read the old count and sleep unwoken (core/futex.h:
     * pld__event_wait). */
    atomic_store(&p->rs.world->tasks_done, (uint32_t)*next);
    if (atomic_load(&p->rs.world->tasks_sleepers))
      pld__futex_wake(&p->rs.world->tasks_done, 1);
  }
  return PLD_OK;
}

static int prepare(struct pld_program *p) {
  if (!p)
    return pld__fail_api(PLD_ERR_ARG, "p: expected a "
                                      "program, got NULL");
  if (p->rs.dead)
    return pld__fail_api(PLD_ERR_STATE, "%s", p->rs.dead_msg);
  if (p->rs.started)
    return PLD_OK;
  const size_t slots = (size_t)p->plan.nranks * PLD__MAX_SLOTS;
  p->rs.resumes_seen = pld__calloc(slots, sizeof *p->rs.resumes_seen);
  p->rs.resumed_at = pld__calloc(slots, sizeof *p->rs.resumed_at);
  struct pld__tev span;
  int spanned =
      pld__htrace_begin(p, &span, PLD__TH_PREPARE, p->plan.host.sig->name);
  int st = !p->rs.resumes_seen || !p->rs.resumed_at
               ? pld__fail_api(PLD_ERR_NOMEM, "out of memory")
               : pld__trace_prepare(p);
  /* On another program's devices: those first (its memory is shared). */
  if (!st && p->rs.share)
    st = prepare(p->rs.share);
  if (!st)
    st = p->be.cp->start(p);
  if (!st) {
    /* The host thread counts as awake from now on, between runs too: it
     * runs the user's code then, and device threads polling for the next
     * run must yield to it rather than take every CPU (it leaves the
     * count only while it sleeps in a wait). */
    p->rs.spin = pld__world_spin(p->rs.world, NULL);
    pld__awake(&p->rs.spin);
  }
  if (spanned)
    pld__htrace_end(p, &span, 0);
  if (st && !p->rs.started) {
    pld__free(p->rs.resumes_seen);
    pld__free(p->rs.resumed_at);
    p->rs.resumes_seen = NULL;
    p->rs.resumed_at = NULL;
  }
  return st;
}

int pld_program_prepare(pld_program *p) {
  const char *saved = pld__api_enter("pld_program_prepare");
  int st = prepare(p);
  pld__api_leave(saved);
  return st;
}

/* The run's end on this process (copy out: a span of the trace). */
static int run_finish(struct pld_program *p, const pld_arg *argv, int slot,
                      int st, const char *msg) {
  struct pld__tev span;
  int spanned = pld__htrace_begin(p, &span, PLD__TH_COPY_OUT, NULL);
  st = p->be.cp->finish(p, argv, slot, st, msg);
  if (spanned)
    pld__htrace_end(p, &span, 0);
  return st;
}

static int run_once(struct pld_program *p, int argc, const pld_arg *argv,
                    pld__run_hook next_inputs, int *posted_run);

int pld__program_run_now(struct pld_program *p, int argc, const pld_arg *argv,
                         pld__run_hook next_inputs) {
  if (!p)
    return pld__fail_api(PLD_ERR_ARG, "p: expected a program, "
                                      "got NULL");
  if (p->rs.dead)
    return pld__fail_api(PLD_ERR_STATE, "%s", p->rs.dead_msg);
  int st = pld__run_check(p, argc, argv);
  if (st)
    return st;
  /* Starting the devices: the run's inputs can be copied in meanwhile (a
   * trace shows every copy in within its run). */
  int early = !p->rs.started && !p->rs.precopied && !p->plan.tracing;
  if (early)
    p->rs.start_argv = argv;
  st = pld_program_prepare(p);
  p->rs.start_argv = NULL;
  if (st) {
    if (early)
      p->rs.precopied = 0;
    return st;
  }
  struct pld__tev span;
  int spanned =
      pld__htrace_begin(p, &span, PLD__TH_RUN, p->plan.host.sig->name);
  int posted_run = 0;
  st = run_once(p, argc, argv, next_inputs, &posted_run);
  if (early)
    p->rs.precopied = 0;
  if (spanned)
    pld__htrace_end(p, &span, 0);
  if (posted_run && (p->plan.tracing || p->plan.modeling)) {
    /* Writing the trace must not replace the run's message; a run that
     * succeeded fails if its model does. */
    static _Thread_local char keep[PLD__MSG_MAX];
    memcpy(keep, pld_last_error(), sizeof keep);
    int model_st = pld__trace_run_end(p, argv);
    if (st)
      pld__fail_msg(st, keep);
    else
      st = model_st;
  }
  return st;
}

/* ---- a run from its post to its end -------------------------------------- */

void pld__loop_begin(struct pld_program *p, struct pld__loop *l,
                     const uint32_t *posted, int slot) {
  memset(&l->wt, 0, sizeof l->wt);
  l->wt.posted = posted;
  l->spin = p->rs.spin;
  l->slot = slot;
  l->failed_rank = -1;
  l->watch_st = PLD_OK;
  l->stragglers = 0;
  l->next_task = 0;
  l->last_reap = l->last_watch = pld__now_ns();
  l->stopped_at = 0;
  l->result[0] = '\0';
}

/* The run's end: its result, the Out slices copied back on success. */
static int loop_end(struct pld_program *p, struct pld__loop *l,
                    const pld_arg *argv) {
  if (!l->watch_st && l->failed_rank < 0)
    return run_finish(p, argv, l->slot, PLD_OK, NULL);
  int st = l->watch_st;
  if (!st) {
    /* The earliest failure (ranks finished: their reports are final). */
    const struct pld__devstate *c = pld__view(p, l->failed_rank);
    st = pld__watch_rank_status(p, &l->wt, l->failed_rank);
    pld__copy_printable(l->result, sizeof l->result, c->msg, sizeof c->msg, 1);
  }
  if (l->stragglers &&
      pld__watch_stragglers(p, &l->wt, l->result, sizeof l->result))
    st = PLD_ERR_CRASH;
  return run_finish(p, argv, l->slot, st, l->result);
}

/* A device died (status st, message set): every process learns of it (the
 * devices are stopped already). */
static int loop_crashed(struct pld_program *p, struct pld__loop *l,
                        const pld_arg *argv, int st) {
  memcpy(l->result, pld_last_error(), sizeof l->result);
  return run_finish(p, argv, l->slot, st, l->result);
}

/* Looks at the run once: 1 once it is over (*st its status, message set),
 * else 0 (l->ev and l->nap say how to sleep before the next look). */
int pld__loop_step(struct pld_program *p, struct pld__loop *l,
                   const pld_arg *argv, int *st) {
  struct pld__runwatch *wt = &l->wt;
  int64_t now = pld__now_ns();
  int dead;
  /* A device killed from outside rings no bell: look for it every
   * PLD__MS(PLD_LIVENESS_MS), however often the loop wakes. */
  if (now - l->last_reap >= PLD__MS(PLD_LIVENESS_MS)) {
    l->last_reap = now;
    if ((dead = pld__find_dead(p, 1, l->corrupt_what,
                               sizeof l->corrupt_what)) >= 0) {
      *st = loop_crashed(p, l, argv, pld__died(p, dead, l->corrupt_what));
      return 1;
    }
  }
  l->ev = atomic_load_explicit(&p->rs.world->event, memory_order_acquire);
  p->be.cp->look(p);
  dead = pld__find_dead(p, 0, l->corrupt_what, sizeof l->corrupt_what);
  if (dead >= 0) {
    *st = loop_crashed(p, l, argv, pld__died(p, dead, l->corrupt_what));
    return 1;
  }
  int done = 0;
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__devstate *c = pld__view(p, r);
    if (!pld__watch_finished(p, wt, r))
      continue;
    done++;
    int cs = pld__watch_rank_status(p, wt, r);
    if (cs && !pld__status_valid(cs)) {
      pld__catf(l->corrupt_what, sizeof l->corrupt_what,
                "its run status holds %d, no pld status", cs);
      *st = loop_crashed(p, l, argv, pld__died(p, r, l->corrupt_what));
      return 1;
    }
    if (cs && (l->failed_rank < 0 ||
               c->ticket < pld__view(p, l->failed_rank)->ticket))
      l->failed_rank = r;
  }
  /* Host tasks whose calls have finished (all of them, once every rank
   * is done); a failing one stops the run, as a failing rank does. */
  if (!l->stopped_at && l->failed_rank < 0 && !l->watch_st &&
      (l->watch_st = run_tasks(p, argv, &l->next_task))) {
    memcpy(l->result, pld_last_error(), sizeof l->result);
    stop_run(p, PLD__ABORT_FAILED);
    l->stopped_at = pld__now_ns();
  }
  if (done == p->plan.nranks) {
    *st = loop_end(p, l, argv);
    return 1;
  }
  now = pld__now_ns();
  if (l->failed_rank >= 0 && !l->stopped_at) {
    stop_run(p, PLD__ABORT_FAILED);
    l->stopped_at = now;
  }
  /* Once stopped, the first reason stands: a wait or kernel going over
   * its limit while the run winds down is only a straggler.  The watch
   * reads every core of every device: it looks every PLD__WATCH_NS at most
   * (a wake sooner shortens the next sleep to when it is due), so that
   * a short run costs no look at all. */
  int64_t watch_due = l->last_watch + PLD__WATCH_NS;
  if (!l->stopped_at && now >= watch_due) {
    l->last_watch = now;
    watch_due = now + PLD__WATCH_NS;
    if ((l->watch_st = pld__watch_look(p, wt))) {
      memcpy(l->result, pld_last_error(), sizeof l->result);
      stop_run(p, l->watch_st == PLD_ERR_DEADLOCK  ? PLD__ABORT_DEADLOCK
                  : l->watch_st == PLD_ERR_TIMEOUT ? PLD__ABORT_TIMEOUT
                                                   : PLD__ABORT_FAILED);
      l->stopped_at = now;
    }
  }
  if (wt->corrupt[0]) {
    *st = loop_crashed(p, l, argv, pld__died(p, wt->corrupt_rank, wt->corrupt));
    return 1;
  }
  if (l->stopped_at && pld__watch_stop_overdue(p, wt, now)) {
    /* Whoever is still running now does not stop by itself. */
    l->stragglers = 1;
    *st = loop_end(p, l, argv);
    return 1;
  }
  l->nap = l->stopped_at ? STOPPING_NS
           : wt->quiet   ? PLD__QUIET_NS / 4
                         : PLD__MS(PLD_LIVENESS_MS);
  if (!l->stopped_at && watch_due - now < l->nap)
    l->nap = watch_due - now;
  return 0;
}

/* The host's sleep between two looks at a run. */
void pld__loop_await(struct pld_program *p, struct pld__loop *l) {
  p->be.cp->await(p, l->ev, l->nap, &l->spin);
}

/* No run is in flight: the next one begins a chain (struct pld__cmd). */
void pld__run_chain_begin(struct pld_program *p) {
  struct pld__worldctl *w = p->rs.world;
  atomic_store(&w->abort, PLD__ABORT_NONE);
  atomic_store(&w->tickets, 0);
  atomic_store(&w->tasks_done, 0);
  atomic_store(&w->q_ok, 0);
  atomic_store(&w->q_zeroed, 0);
  atomic_store(&w->q_open, 0);
  p->rs.chain = 0;
}

/* The next data slot (where a precopy put the run's inputs, if one
 * did). */
void pld__run_slot_next(struct pld_program *p) {
  p->rs.slot = (p->rs.slot + 1) % p->rs.nslots;
}

/* A posted run ended with status st: after a failure, the collectives'
 * calls it broke must not be seen by the next run (struct
 * pld__ctl_ops.post). */
void pld__run_ended(struct pld_program *p, int st) {
  if (st)
    (p->rs.share ? p->rs.share : p)->rs.coll_dirty = 1;
}

/* One run, once prepared; *posted_run set once the devices have it. */
static int run_once(struct pld_program *p, int argc, const pld_arg *argv,
                    pld__run_hook next_inputs, int *posted_run) {
  (void)argc;
  int st;
  pld__run_chain_begin(p);
  if ((st = pld__inters_alloc(p)))
    return st;
  uint32_t seq[PLD_MAX_RANKS_INLINE];
  uint32_t *posted = p->plan.nranks <= PLD_MAX_RANKS_INLINE
                         ? seq
                         : pld__calloc((size_t)p->plan.nranks, sizeof *posted);
  if (!posted) {
    pld__inters_release(p);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  if (p->rs.race)
    pld__race_run_begin(p->rs.race);
  pld__run_slot_next(p);
  struct pld__tev copy_span;
  int copy_spanned = pld__htrace_begin(p, &copy_span, PLD__TH_COPY_IN, NULL);
  st = p->be.cp->post(p, argv, posted);
  if (copy_spanned)
    pld__htrace_end(p, &copy_span, 0);
  if (st)
    goto out;
  *posted_run = 1;
  /* While the devices run: the next submitted run's inputs, into the
   * other slot. */
  if (next_inputs && p->rs.runner)
    next_inputs(p, argv);
  if (p->be.cp->follow && p->be.cp->follow(p, argv, &st))
    goto out;
  struct pld__loop l;
  pld__loop_begin(p, &l, posted, p->rs.slot);
  while (!pld__loop_step(p, &l, argv, &st))
    pld__loop_await(p, &l);
out:
  if (*posted_run)
    pld__run_ended(p, st);
  pld__inters_release(p);
  if (posted != seq)
    pld__free(posted);
  return st;
}
