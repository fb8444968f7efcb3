/* host/run.c: running a compiled program and watching the run (deadlocks,
 * time limits, crashes, devices that do not stop), through the control
 * plane of host/ctl.h: the devices are started, posted and stopped by
 * host/ctl_shm.c or host/ctl_mpi.c.
 *
 * Everything the host reads from a device's control block was written by a
 * process that runs user code: a kernel's wild write can put anything
 * there.  So every field is checked before use (magic words at both ends,
 * statuses, signal numbers, indices, names made printable and bounded),
 * and a block that fails a check is reported as a crash of that rank. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/kctx.h"
#include "core/tunables.h"
#include "host/ctl.h"
#include "host/resident.h"
#include "host/submit.h"
#include "host/trace.h"
#include "pld/collective.h"

/* The watch's timing (PLD_DEADLOCK_QUIET_MS, PLD_STOP_GRACE_MS,
 * PLD_STOP_POLL_MS, PLD_EXIT_GRACE_MS, PLD_LIVENESS_MS, PLD_WATCH_US) is in
 * the tunables table (core/tunables.h). */
#define QUIET_NS PLD__MS(PLD_DEADLOCK_QUIET_MS)
#define WATCH_NS PLD__US(PLD_WATCH_US)
#define STOP_GRACE_NS PLD__MS(PLD_STOP_GRACE_MS)
#define STOPPING_NS PLD__MS(PLD_STOP_POLL_MS)
#define EXIT_NS PLD__MS(PLD_EXIT_GRACE_MS)

static const char *sig_name(int sig) {
  const char *n = sigabbrev_np(sig);
  return n ? n : "?";
}

static int sig_valid(int sig) { return sig >= 1 && sig <= SIGRTMAX; }

/* ---- what a device wrote, checked --------------------------------------- */

/* The magic words of rank r's control block (at both ends and in the
 * middle) are intact.  Otherwise *what says which and what it holds. */
static int ctl_intact(const struct pld_program *p, int r, char *what,
                      size_t cap) {
  const struct pld__devctl *c = p->devs[r].ctl;
  const uint64_t words[3] = {c->magic, c->magic_mid, c->magic_end};
  static const char *const names[3] = {"first", "middle", "last"};
  for (int i = 0; i < 3; i++)
    if (words[i] != PLD__CTL_MAGIC) {
      pld__catf(what, cap, "its %s word holds %#llx instead of %#llx", names[i],
                (unsigned long long)words[i],
                (unsigned long long)PLD__CTL_MAGIC);
      return 0;
    }
  return 1;
}

/* A copy of one core's slot, validated: returns its state, or -1 (with
 * *what saying why) when the slot cannot be what a device wrote.  A slot
 * that changed while it was copied (its core is passing from one state to
 * another) is idle for this look.  A block resumed from a wait has run
 * since the host first saw the resume. */
static int slot_read(const struct pld_program *p, int r, int i,
                     struct pld__coreslot *s, char *what, size_t cap) {
  const struct pld__coreslot *w = &p->devs[r].ctl->watch.slots[i];
  uint32_t seq = atomic_load_explicit(&w->seq, memory_order_acquire);
  int state = atomic_load_explicit(&w->state, memory_order_relaxed);
  if (state == PLD__CORE_IDLE || (seq & 1))
    return PLD__CORE_IDLE;
  s->since_ns = atomic_load_explicit(&w->since_ns, memory_order_relaxed);
  uint32_t resumes = atomic_load_explicit(&w->resumes, memory_order_relaxed);
  s->core_type = w->core_type;
  s->core = w->core;
  s->block = w->block;
  s->blocks = w->blocks;
  s->buf = w->buf;
  s->cmp = w->cmp;
  s->expected = w->expected;
  s->ndim = w->ndim;
  s->off = w->off;
  s->coll = w->coll;
  s->call = w->call;
  s->round = w->round;
  memcpy(s->idx, w->idx, sizeof s->idx);
  pld__copy_printable(s->kernel, sizeof s->kernel, w->kernel, sizeof w->kernel,
                      0);
  pld__copy_printable(s->window, sizeof s->window, w->window, sizeof w->window,
                      0);
  PLD__SLOT_FENCE(memory_order_acquire);
  if (atomic_load_explicit(&w->seq, memory_order_relaxed) != seq)
    return PLD__CORE_IDLE;
  if (s->since_ns == 0 && state == PLD__CORE_RUNNING) {
    size_t at = (size_t)r * PLD__MAX_SLOTS + (size_t)i;
    if (p->resumes_seen[at] != resumes) {
      p->resumes_seen[at] = resumes;
      p->resumed_at[at] = pld__now_ns();
    }
    s->since_ns = p->resumed_at[at];
  }
  const pld_platform_info *pl = p->plat;
  int cores = s->core_type == PLD_CORE_CUBE ? pl->cube_cores : pl->vector_cores;
  const char *bad = NULL;
  /* A deferred wait's slot: no core, always waiting. */
  const int deferred = i >= PLD__MAX_CORES;
  if (state != PLD__CORE_RUNNING && state != PLD__CORE_WAITING)
    bad = "state";
  else if ((s->core_type != PLD_CORE_VECTOR && s->core_type != PLD_CORE_CUBE) ||
           (deferred ? s->core != -1 || state != PLD__CORE_WAITING
                     : s->core < 0 || s->core >= cores))
    bad = "core";
  else if (s->blocks < 1 || s->blocks > 65535 || s->block < 0 ||
           s->block >= s->blocks)
    bad = "block";
  else if (state == PLD__CORE_WAITING &&
           (s->since_ns <= 0 || s->buf < 0 || s->buf >= p->nwinbufs ||
            !p->winbufs[s->buf]->member[r] || s->off % 4 != 0 ||
            s->off + 4 > p->winbufs[s->buf]->phys ||
            !pld__wait_cmp_str(s->cmp) || s->ndim < 1 ||
            s->ndim > PLD_MAX_DIMS || !pld__coll_name(s->coll)))
    bad = "wait";
  if (bad) {
    pld__catf(what, cap, "the %s of its core slot %d is invalid", bad, i);
    return -1;
  }
  return state;
}

/* "kernel k on AIV core 3 (block 0 of 2)", or for a deferred wait
 * "kernel k (block 0 of 2, ended with its wait deferred)". */
static size_t where_str(char *buf, size_t cap, const struct pld__coreslot *s) {
  if (s->core < 0)
    return pld__catf(buf, cap,
                     "kernel %s (block %d of %d, ended with its wait "
                     "deferred)",
                     s->kernel, s->block, s->blocks);
  return pld__catf(buf, cap, "kernel %s on %s core %d (block %d of %d)",
                   s->kernel, pld__core_type_name((pld_core_type)s->core_type),
                   s->core, s->block, s->blocks);
}

/* What rank r runs, from its watch: every block on a core ("kernel k on
 * AIV core 0 (block 0 of 1), running for 12.5 ms") and the AICPU's device
 * function if it runs one; "nothing" if none.  Returns -1 and says why in
 * buf if the watch is corrupt. */
static int running_str(const struct pld_program *p, int r, int64_t now,
                       char *buf, size_t cap) {
  const struct pld__watch *w = &p->devs[r].ctl->watch;
  size_t n = 0;
  int any = 0;
  if (atomic_load(&w->aicpu_busy)) {
    char fn[PLD__NAME_MAX];
    pld__copy_printable(fn, sizeof fn, w->aicpu_fn, sizeof w->aicpu_fn, 0);
    n += pld__catf(buf + n, cap - n,
                   "device function %s on the AICPU, running for %.1f ms", fn,
                   (double)(now - atomic_load(&w->aicpu_since_ns)) / 1e6);
    any = 1;
  }
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    struct pld__coreslot s;
    char why[96];
    int state = slot_read(p, r, i, &s, why, sizeof why);
    if (state < 0) {
      pld__catf(buf, cap, "%s", why);
      return -1;
    }
    if (state == PLD__CORE_IDLE)
      continue;
    n += pld__catf(buf + n, cap - n, "%s", any ? ", " : "");
    n += where_str(buf + n, cap - n, &s);
    n += pld__catf(buf + n, cap - n, ", %s for %.1f ms",
                   state == PLD__CORE_WAITING ? "waiting" : "running",
                   (double)(now - s.since_ns) / 1e6);
    any = 1;
  }
  if (!any)
    pld__catf(buf, cap, "nothing");
  return 0;
}

/* ---- devices that died -------------------------------------------------- */

/* A device died, or wrote over its control block: the message names rank,
 * device, what it was running and how it died; the others are stopped and
 * the program is done for.  corrupt (if not NULL) says what was found
 * overwritten. */
static int device_died(struct pld_program *p, int r, const char *corrupt) {
  struct pld__device *d = &p->devs[r];
  struct pld__devctl *c = d->ctl;
  char msg[PLD__MSG_MAX], running[2048];
  const pld_platform_info *pl = p->plat;
  int64_t now = pld__now_ns();
  size_t n = pld__catf(msg, sizeof msg, "pld_program_run: rank %d (device %d) ",
                       r, p->device_ids[r]);
  struct pld__crash cr;
  /* A broken magic word says more than the field found invalid first (a
   * wild write may be caught while it is under way). */
  char magic[160];
  if (corrupt && !ctl_intact(p, r, magic, sizeof magic))
    corrupt = magic;
  int kind = corrupt
                 ? PLD__CRASH_NONE
                 : atomic_load_explicit(&c->crash.kind, memory_order_acquire);
  if (kind != PLD__CRASH_NONE) {
    cr.signal = c->crash.signal;
    cr.core_type = c->crash.core_type;
    cr.core = c->crash.core;
    cr.block = c->crash.block;
    cr.blocks = c->crash.blocks;
    cr.addr = c->crash.addr;
    pld__copy_printable(cr.fn, sizeof cr.fn, c->crash.fn, sizeof c->crash.fn,
                        0);
    int cores =
        cr.core_type == PLD_CORE_CUBE ? pl->cube_cores : pl->vector_cores;
    if ((kind != PLD__CRASH_SIGNAL && kind != PLD__CRASH_EXIT) ||
        (kind == PLD__CRASH_SIGNAL && !sig_valid(cr.signal)) ||
        cr.core_type < -1 || cr.core_type > PLD_CORE_CUBE ||
        (cr.core_type >= 0 &&
         (cr.core < 0 || cr.core >= cores || cr.blocks < 1 ||
          cr.blocks > 65535 || cr.block < 0 || cr.block >= cr.blocks))) {
      corrupt = "its crash record is invalid";
      kind = PLD__CRASH_NONE;
    }
  }
  if (corrupt) {
    n += pld__catf(msg + n, sizeof msg - n,
                   "wrote over its control block in shared memory (%s): a "
                   "kernel or device function wrote outside its memory",
                   corrupt);
  } else if (kind == PLD__CRASH_SIGNAL || kind == PLD__CRASH_EXIT) {
    if (kind == PLD__CRASH_SIGNAL) {
      n += pld__catf(msg + n, sizeof msg - n, "crashed with signal SIG%s (%s)",
                     sig_name(cr.signal), strsignal(cr.signal));
      if (cr.signal == SIGSEGV || cr.signal == SIGBUS)
        n += pld__catf(msg + n, sizeof msg - n, " at address %#llx",
                       (unsigned long long)cr.addr);
    } else {
      int64_t deadline = pld__now_ns() + EXIT_NS;
      while (!p->cp->gone(p, r, 0) && pld__now_ns() < deadline) {
        pld__nap_ns(PLD__US(PLD_REAP_POLL_US));
      }
      n += pld__catf(msg + n, sizeof msg - n, "called exit()");
      if (WIFEXITED(d->wstatus))
        n += pld__catf(msg + n, sizeof msg - n, " and exited with status %d",
                       WEXITSTATUS(d->wstatus));
    }
    if (cr.core_type >= 0)
      n += pld__catf(msg + n, sizeof msg - n,
                     " in kernel %s on %s core %d (block %d of %d)", cr.fn,
                     pld__core_type_name((pld_core_type)cr.core_type), cr.core,
                     cr.block, cr.blocks);
    else if (cr.fn[0])
      n += pld__catf(msg + n, sizeof msg - n,
                     " in device function %s on the AICPU", cr.fn);
  } else {
    /* No word from the process itself: it was killed, or left without
     * running its exit hook (_exit); its watch says what it was doing. */
    p->cp->gone(p, r, 1);
    if (WIFSIGNALED(d->wstatus))
      n += pld__catf(msg + n, sizeof msg - n, "was killed by signal SIG%s (%s)",
                     sig_name(WTERMSIG(d->wstatus)),
                     strsignal(WTERMSIG(d->wstatus)));
    else
      n += pld__catf(msg + n, sizeof msg - n, "exited with status %d",
                     WEXITSTATUS(d->wstatus));
    if (running_str(p, r, now, running, sizeof running) == 0)
      n += pld__catf(msg + n, sizeof msg - n, " while running %s", running);
    else
      n += pld__catf(msg + n, sizeof msg - n,
                     "; what it ran is unknown: %s (a wild write?)", running);
  }
  pld__catf(msg + n, sizeof msg - n,
            "; the other devices were stopped and the program cannot run "
            "again");
  p->cp->stop(p, 1);
  p->dead = 1;
  memcpy(p->dead_msg, msg, sizeof msg);
  return pld__fail_msg(PLD_ERR_CRASH, msg);
}

/* Returns the rank of a device process that died or whose control block
 * is overwritten (*corrupt then says what), or -1. */
int pld__find_dead(struct pld_program *p, int check_pids, char *corrupt,
                   size_t cap) {
  corrupt[0] = '\0';
  for (int r = 0; r < p->nranks; r++) {
    if (!ctl_intact(p, r, corrupt, cap))
      return r;
    if (atomic_load(&p->devs[r].ctl->crash.kind) != PLD__CRASH_NONE)
      return r;
    if (check_pids && p->cp->gone(p, r, 0))
      return r;
  }
  return -1;
}

int pld__died(struct pld_program *p, int r, const char *corrupt) {
  return device_died(p, r, corrupt[0] ? corrupt : NULL);
}

/* The tensors of a run must be those the program was compiled for (a
 * failure, message set); its scalars may bring new values (*rescalar set:
 * pld__program_rescalar decides). */
static int check_run_tensors(const struct pld_program *p, int argc,
                             const pld_arg *argv, int *rescalar) {
  const pld_signature *sig = p->host.sig;
  *rescalar = 0;
  if (argc != p->nargs || (argc > 0 && !argv))
    return pld__fail(PLD_ERR_ARG,
                     "pld_program_run: %s: expected the %d arguments it was "
                     "compiled for, got %d%s",
                     sig->name, p->nargs, argc,
                     argc > 0 && !argv ? " and a NULL argv" : "");
  for (int i = 0; i < argc; i++) {
    const pld_arg *want = &p->args[i], *got = &argv[i];
    const char *pn = sig->params[i].name;
    if (want->kind == PLD_ARG_TENSOR) {
      const struct pld__tensor *w = want->v.t, *g = got->v.t;
      /* The shapes are written for a failure only: this runs every run. */
      char ws[128], gs[128] = "a scalar";
      if (got->kind == PLD_ARG_TENSOR && g && (g->flags & PLD__T_INTER)) {
        pld__tensor_str(ws, sizeof ws, w);
        return pld__fail(PLD_ERR_ARG,
                         "pld_program_run: %s: parameter '%s' (%d of %d): "
                         "expected a host tensor %s, got %s, an intermediate "
                         "of a host orchestration (it has no data outside "
                         "its run)",
                         sig->name, pn, i + 1, argc, ws,
                         g->name ? g->name : "?");
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
        return pld__fail(PLD_ERR_ARG,
                         "pld_program_run: %s: parameter '%s' (%d of %d): "
                         "expected a host tensor %s as compiled, got %s",
                         sig->name, pn, i + 1, argc, ws, gs);
      }
    } else if (got->kind != PLD_ARG_SCALAR) {
      return pld__fail(PLD_ERR_ARG,
                       "pld_program_run: %s: parameter '%s' (%d of %d): "
                       "expected a scalar, got a tensor",
                       sig->name, pn, i + 1, argc);
    } else if (got->v.u != want->v.u || got->dtype != want->dtype) {
      *rescalar = 1;
    }
  }
  return PLD_OK;
}

static int check_run_args(struct pld_program *p, int argc,
                          const pld_arg *argv) {
  int rescalar;
  int st = check_run_tensors(p, argc, argv, &rescalar);
  /* Other scalar values: the same program with them, or a refusal. */
  return !st && rescalar ? pld__program_rescalar(p, argc, argv) : st;
}

int pld__run_depends(const struct pld_program *p, const pld_arg *before,
                     const pld_arg *argv) {
  const pld_signature *sig = p->host.sig;
  for (int i = 0; i < p->nargs; i++) {
    const struct pld__tensor *in = argv[i].v.t;
    if (argv[i].kind != PLD_ARG_TENSOR || !in ||
        !(sig->params[i].dir & PLD_DIR_IN) ||
        (in->flags & PLD__T_RESIDENT)) /* never copied */
      continue;
    for (int j = 0; j < p->nargs; j++)
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
  if (check_run_tensors(p, argc, argv, &rescalar) || rescalar || !p->started)
    return 0;
  /* Its inputs must be final: none may be what the run in flight writes
   * (a chain of runs, one tensor updated in place). */
  if (pld__run_depends(p, now, argv))
    return 0;
  p->cp->copy_in(p, argv, (p->slot + 1) % p->nslots);
  return 1;
}

/* ---- the watch: deadlocks and time limits -------------------------------- */

struct watch {
  const uint32_t *posted; /* the command each rank runs */
  int quiet;              /* the last look found every device quiet */
  int64_t quiet_since;
  uint32_t progress;    /* signals sent and blocks finished then */
  uint32_t asked;       /* the quiet's confirmation (host/ctl.h), 0: none */
  uint32_t limit_asked; /* a limit's confirmation, 0: none */
  int done;             /* devices done then */
  /* Once the run is stopped: when, how far the ranks were from its end at
   * their closest (left_to_stop), since when, and the confirmation that
   * they still are (host/ctl.h), 0: none. */
  int64_t stopped, stop_left, stop_since;
  uint32_t stop_asked;
  char corrupt[160]; /* set when a device's watch failed a check */
  int corrupt_rank;
};

/* Rank r finished this run (a queued run: it may have gone on to the
 * next). */
static int finished(const struct pld_program *p, const struct watch *wt,
                    int r) {
  return (int32_t)(atomic_load(&p->devs[r].ctl->done_seq) - wt->posted[r]) >= 0;
}

/* The status of this run on rank r, once it finished: the one it reported
 * for the run, or success if it went on to a later one (a queued run
 * starts only once every run before it succeeded everywhere). */
static int rank_status(const struct pld_program *p, const struct watch *wt,
                       int r) {
  const struct pld__devctl *c = p->devs[r].ctl;
  uint64_t res = atomic_load_explicit(&c->result, memory_order_acquire);
  int32_t after = (int32_t)((uint32_t)(res >> 32) - wt->posted[r]);
  return after > 0 ? PLD_OK : after == 0 ? (int)(uint32_t)res : c->status;
}

/* Marks rank r's watch corrupt (what says how); returns 0, so that a
 * corrupt watch counts as neither quiet nor over a limit. */
static int corrupt(struct watch *wt, int r, const char *what) {
  if (!wt->corrupt[0]) {
    pld__catf(wt->corrupt, sizeof wt->corrupt, "%s", what);
    wt->corrupt_rank = r;
  }
  return 0;
}

/* The cell a waiting slot waits on holds a value that satisfies it. */
static int slot_satisfied(struct pld_program *p, int r, int i,
                          const struct pld__coreslot *s, int32_t *value) {
  *value = p->cp->cell(p, r, i, s);
  return pld__wait_satisfied(*value, s->expected, s->cmp);
}

/* Rank r's next dispatch waits for a host task that has not run (here:
 * under mpi, process 0 runs each first). */
static int awaits_task(const struct pld_program *p, int r) {
  const struct pld__devplan *pl = &p->plans[r];
  uint32_t c = atomic_load(&p->devs[r].ctl->calls_done);
  return c < (uint32_t)pl->ncalls && (uint32_t)pl->calls[c].after_tasks >
                                         atomic_load(&p->world->tasks_done);
}

/* Rank r can do nothing more by itself: its AICPU waits for its tasks, no
 * block runs outside a wait, and no ready block can start (there is none,
 * or every core of its type holds a block that waits: on the hardware too
 * a block that never gets a core never runs); no blocked wait of it could
 * return now.  A rank with no blocked wait is quiet only while its next
 * dispatch waits for a host task that has not run: otherwise it is between
 * two steps (a dispatch ended, the next not begun, a host task it waited
 * for just done), which a thread does in a moment on an idle machine and
 * in however long the scheduler takes to run it on a busy one.  *waits
 * counts its blocked waits. */
static int rank_quiet(struct pld_program *p, struct watch *wt, int r,
                      int *waits) {
  const struct pld__watch *w = &p->devs[r].ctl->watch;
  const int cores[2] = {p->plat->vector_cores, p->plat->cube_cores};
  /* A device that has not taken up the run yet is not quiet, however it
   * looks (under mpi: nor one whose snapshot of this run has not come). */
  if (!p->cp->seen(p, r) ||
      atomic_load(&p->devs[r].ctl->run_seq) != wt->posted[r])
    return 0;
  int32_t running = atomic_load(&w->running);
  if (running < 0 || running > PLD__MAX_CORES)
    return corrupt(wt, r, "its count of running blocks is invalid");
  if (atomic_load(&w->aicpu_busy) || running > 0)
    return 0;
  for (int t = 0; t < 2; t++) {
    int32_t held = atomic_load(&w->queue[t].held);
    if (held < 0 || held > cores[t])
      return corrupt(wt, r, "its count of cores holding blocks is invalid");
    if (atomic_load(&w->queue[t].blocks) > 0 && held < cores[t])
      return 0;
  }
  int mine = 0;
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    struct pld__coreslot s;
    char why[96];
    int32_t v;
    int state = slot_read(p, r, i, &s, why, sizeof why);
    if (state < 0)
      return corrupt(wt, r, why);
    if (state != PLD__CORE_WAITING)
      continue;
    if (slot_satisfied(p, r, i, &s, &v))
      return 0;
    mine++;
  }
  if (!mine && !awaits_task(p, r))
    return 0;
  *waits += mine;
  return 1;
}

/* Every device is finished or quiet, and at least one wait is blocked. */
static int all_quiet(struct pld_program *p, struct watch *wt, int *ndone) {
  int waits = 0;
  *ndone = 0;
  for (int r = 0; r < p->nranks; r++) {
    if (finished(p, wt, r)) {
      (*ndone)++;
      continue;
    }
    if (!rank_quiet(p, wt, r, &waits))
      return 0;
  }
  return waits > 0;
}

/* The domain rank whose credits the collective's wait s counts (cell s of
 * its lane, of PLD_SIGNAL_LANE_CELLS(P) cells), or -1 if the cell is none. */
static int32_t credit_from(const struct pld_program *p,
                           const struct pld__coreslot *s) {
  int32_t size = 0;
  for (int r = 0; r < p->nranks; r++)
    size += p->winbufs[s->buf]->member[r] != 0;
  int64_t cell = s->ndim == 1 ? s->idx[0] % PLD_SIGNAL_LANE_CELLS(size) : -1;
  return cell >= 0 && cell < size ? (int32_t)cell : -1;
}

/* Slots a and b show blocks of one kernel doing the same: running, or
 * waiting on the same cell for the same value. */
static int same_activity(int state, const struct pld__coreslot *a,
                         const struct pld__coreslot *b) {
  return strcmp(a->kernel, b->kernel) == 0 &&
         (state == PLD__CORE_RUNNING ||
          (a->buf == b->buf && a->off == b->off && a->cmp == b->cmp &&
           a->expected == b->expected));
}

static size_t rank_head(char *buf, size_t cap, const struct pld_program *p,
                        int r);

/* The lines of a report for rank r's cores: each block running (how long)
 * or waiting (on what, what the cell holds, who could still notify it),
 * the blocks of one kernel doing the same summed up in one line. */
static size_t report_cores(struct pld_program *p, struct watch *wt, int r,
                           char *msg, size_t cap) {
  static _Thread_local struct pld__coreslot slots[PLD__MAX_SLOTS];
  int state[PLD__MAX_SLOTS];
  const int64_t now = pld__now_ns();
  size_t n = 0;
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    char why[96];
    state[i] = slot_read(p, r, i, &slots[i], why, sizeof why);
  }
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    const struct pld__coreslot *s = &slots[i];
    if (state[i] <= 0)
      continue;
    int more = 0;
    for (int j = i + 1; j < PLD__MAX_SLOTS; j++)
      if (state[j] == state[i] && same_activity(state[i], s, &slots[j])) {
        state[j] = PLD__CORE_IDLE; /* told by this line */
        more++;
      }
    n += rank_head(msg + n, cap - n, p, r);
    n += where_str(msg + n, cap - n, s);
    if (state[i] == PLD__CORE_RUNNING) {
      n += pld__catf(msg + n, cap - n,
                     " has run for %.1f ms without finishing or waiting",
                     (double)(now - s->since_ns) / 1e6);
    } else {
      int32_t v;
      slot_satisfied(p, r, i, s, &v);
      n += pld__catf(msg + n, cap - n,
                     " waits on window '%s' (buffer #%d) cell [", s->window,
                     s->buf);
      for (int d = 0; d < s->ndim; d++)
        n += pld__catf(msg + n, cap - n, d ? ", %lld" : "%lld",
                       (long long)s->idx[d]);
      n += pld__catf(msg + n, cap - n,
                     "] %s %d; it holds %d; waiting for %.1f ms; ",
                     pld__wait_cmp_str(s->cmp), (int)s->expected, (int)v,
                     (double)(now - s->since_ns) / 1e6);
      int32_t from = s->coll != PLD__COLL_NONE ? credit_from(p, s) : -1;
      if (s->coll != PLD__COLL_NONE && s->call)
        n += pld__catf(msg + n, cap - n, "in %s call %d, round %d; ",
                       pld__coll_name(s->coll), (int)s->call, (int)s->round);
      else if (s->coll != PLD__COLL_NONE)
        n += pld__catf(msg + n, cap - n, "in %s, round %d; ",
                       pld__coll_name(s->coll), (int)s->round);
      if (from >= 0) {
        /* A collective's credit cell has one sender. */
        const int *members =
            &p->comm_members[(size_t)s->buf * (size_t)p->nranks];
        n += pld__catf(msg + n, cap - n, "it waits for rank %d", from);
        if (members[from] != from)
          n += pld__catf(msg + n, cap - n, " (world rank %d)", members[from]);
        if (finished(p, wt, members[from]))
          n += pld__catf(msg + n, cap - n, ", which has finished");
      } else {
        /* The other unfinished ranks of the window's domain.  Not rank r:
         * the waiting block cannot notify its own cell, and what its
         * rank's other blocks do (wait, or lack a core) has lines of its
         * own. */
        n += pld__catf(msg + n, cap - n, "who could still notify it:");
        int any = 0;
        for (int q = 0; q < p->nranks; q++)
          if (q != r && p->winbufs[s->buf]->member[q] && !finished(p, wt, q)) {
            n += pld__catf(msg + n, cap - n, "%s rank %d", any ? "," : "", q);
            any = 1;
          }
        if (!any)
          n += pld__catf(msg + n, cap - n,
                         " no other rank (the others finished)");
      }
    }
    if (more)
      n += pld__catf(msg + n, cap - n,
                     "; and %d more block%s of kernel %s on other cores %s",
                     more, more == 1 ? "" : "s", s->kernel,
                     state[i] == PLD__CORE_RUNNING ? "run too"
                                                   : "wait on the same cell");
  }
  return n;
}

/* "\n  rank 1 (device 5): ", the head of a line of a report. */
static size_t rank_head(char *buf, size_t cap, const struct pld_program *p,
                        int r) {
  return pld__catf(buf, cap, "\n  rank %d (device %d): ", r, p->device_ids[r]);
}

/* The line of a report for rank r if its next call waits for a host task:
 * which, and which call of which rank that task waits for. */
static size_t report_task_wait(struct pld_program *p, int r, char *msg,
                               size_t cap) {
  const struct pld__devplan *pl = &p->plans[r];
  uint32_t c = atomic_load(&p->devs[r].ctl->calls_done);
  uint32_t done = atomic_load(&p->world->tasks_done);
  if (c >= (uint32_t)pl->ncalls || (uint32_t)pl->calls[c].after_tasks <= done ||
      done >= (uint32_t)p->ntasks)
    return 0;
  const struct pld__taskplan *tp = &p->tasks[done];
  size_t n = rank_head(msg, cap, p, r);
  n += pld__catf(msg + n, cap - n,
                 "dispatch %u (%s) waits for host task %d (%s), which waits "
                 "for",
                 c + 1, pl->calls[c].fn.sig->name, pl->calls[c].after_tasks,
                 p->tasks[pl->calls[c].after_tasks - 1].fn.sig->name);
  if ((int)done + 1 < pl->calls[c].after_tasks)
    n += pld__catf(msg + n, cap - n, " host task %u (%s), which waits for",
                   done + 1, tp->fn.sig->name);
  int any = 0;
  for (int q = 0; q < p->nranks; q++)
    if (atomic_load(&p->devs[q].ctl->calls_done) < (uint32_t)tp->need[q]) {
      n += pld__catf(msg + n, cap - n, "%s rank %d's dispatch %d (%s)",
                     any ? "," : "", q, tp->need[q],
                     p->plans[q].calls[tp->need[q] - 1].fn.sig->name);
      any = 1;
    }
  return n;
}

/* The report: for every unfinished rank, what runs (with how long), every
 * blocked wait (and who could still notify it: the other unfinished ranks
 * of its window's domain), the ready blocks that have no core; then the
 * ranks already finished. */
static int report(struct pld_program *p, struct watch *wt, int status,
                  const char *head) {
  static _Thread_local char msg[PLD__MSG_MAX];
  const int64_t now = pld__now_ns();
  size_t n = pld__catf(msg, sizeof msg, "pld_program_run: %s", head);
  for (int r = 0; r < p->nranks; r++) {
    if (finished(p, wt, r))
      continue;
    const struct pld__watch *w = &p->devs[r].ctl->watch;
    if (atomic_load(&w->aicpu_busy)) {
      char fn[PLD__NAME_MAX];
      pld__copy_printable(fn, sizeof fn, w->aicpu_fn, sizeof w->aicpu_fn, 0);
      n += rank_head(msg + n, sizeof msg - n, p, r);
      n += pld__catf(msg + n, sizeof msg - n,
                     "device function %s on the AICPU has run for %.1f ms "
                     "without waiting",
                     fn, (double)(now - atomic_load(&w->aicpu_since_ns)) / 1e6);
    }
    for (int t = 0; t < 2; t++) {
      const struct pld__readyq *q = &w->queue[t];
      int32_t blocks = atomic_load(&q->blocks);
      if (blocks <= 0)
        continue;
      char kernel[PLD__NAME_MAX];
      const char *type = pld__core_type_name((pld_core_type)t);
      pld__copy_printable(kernel, sizeof kernel, q->kernel, sizeof q->kernel,
                          0);
      n += rank_head(msg + n, sizeof msg - n, p, r);
      n += pld__catf(msg + n, sizeof msg - n,
                     "%d %s block%s cannot start for lack of a core: all %d "
                     "%s cores hold blocks that wait (first in line: kernel "
                     "%s, blocks %d to %d of %d)",
                     (int)blocks, type, blocks == 1 ? "" : "s",
                     (int)atomic_load(&q->held), type, kernel,
                     (int)q->next_block, (int)q->nblocks - 1, (int)q->nblocks);
    }
    n += report_task_wait(p, r, msg + n, sizeof msg - n);
    n += report_cores(p, wt, r, msg + n, sizeof msg - n);
  }
  n += pld__catf(msg + n, sizeof msg - n, "\n  ranks already finished:");
  int any = 0;
  for (int r = 0; r < p->nranks; r++)
    if (finished(p, wt, r)) {
      n += pld__catf(msg + n, sizeof msg - n, " %d", r);
      any = 1;
    }
  if (!any)
    n += pld__catf(msg + n, sizeof msg - n, " none");
  /* A report longer than a message is cut; say so where it ends. */
  static const char cut[] = "\n  ... (the report is cut here)";
  if (n + 1 >= sizeof msg)
    memcpy(msg + sizeof msg - sizeof cut, cut, sizeof cut);
  return pld__fail_msg(status, msg);
}

/* Some unfinished rank has a wait (waiting) or a kernel or device function
 * (running) older than limit_ns (0: no limit). */
static int over_limit(struct pld_program *p, struct watch *wt, int waiting,
                      int64_t limit_ns, int64_t now) {
  if (limit_ns <= 0)
    return 0;
  for (int r = 0; r < p->nranks; r++) {
    if (finished(p, wt, r))
      continue;
    const struct pld__watch *w = &p->devs[r].ctl->watch;
    if (!waiting && atomic_load(&w->aicpu_busy) &&
        now - atomic_load(&w->aicpu_since_ns) > limit_ns)
      return 1;
    for (int i = 0; i < PLD__MAX_SLOTS; i++) {
      struct pld__coreslot s;
      char why[96];
      int state = slot_read(p, r, i, &s, why, sizeof why);
      if (state < 0)
        return corrupt(wt, r, why);
      if (state == (waiting ? PLD__CORE_WAITING : PLD__CORE_RUNNING) &&
          now - s.since_ns > limit_ns)
        return 1;
    }
  }
  return 0;
}

/* Whether what the watch sees of every rank is fresh enough to report
 * on (host/ctl.h: confirm), the confirmation started by the first call
 * (*asked 0).  *st: the failure to ask, if any. */
static int confirmed(struct pld_program *p, uint32_t *asked, int *st) {
  int yes = 1;
  *st = p->cp->confirm ? p->cp->confirm(p, asked, &yes) : PLD_OK;
  return !*st && yes;
}

/* Looks once; returns PLD_OK, or the status of a deadlock or time limit
 * with its report as the thread's message (the run is then being
 * stopped).  A watch found corrupt is left in wt->corrupt.  A snapshot
 * may show a wait or a kernel that has since ended, so limits, like
 * deadlocks, are reported on confirmed looks only. */
static int watch_run(struct pld_program *p, struct watch *wt) {
  int64_t now = pld__now_ns();
  char head[256];
  int st = PLD_OK, over_wait = over_limit(p, wt, 1, p->wait_timeout_ns, now);
  if (!over_wait && !over_limit(p, wt, 0, p->kernel_timeout_ns, now))
    wt->limit_asked = 0;
  else if (!confirmed(p, &wt->limit_asked, &st))
    return st;
  else if (over_wait) {
    pld__catf(head, sizeof head,
              "wait timeout: a wait was blocked longer than %lld ms "
              "(pld_config.wait_timeout_ms or PLD_WAIT_TIMEOUT_MS):",
              (long long)(p->wait_timeout_ns / 1000000));
    return report(p, wt, PLD_ERR_TIMEOUT, head);
  } else {
    pld__catf(head, sizeof head,
              "kernel time limit: a kernel or device function ran longer "
              "than %lld ms without finishing or waiting "
              "(pld_config.kernel_timeout_ms or PLD_KERNEL_TIMEOUT_MS):",
              (long long)(p->kernel_timeout_ns / 1000000));
    return report(p, wt, PLD_ERR_TIMEOUT, head);
  }
  int done;
  if (!all_quiet(p, wt, &done)) {
    wt->quiet = 0;
    return PLD_OK;
  }
  uint32_t progress = 0;
  for (int r = 0; r < p->nranks; r++)
    progress += atomic_load(&p->devs[r].ctl->watch.progress);
  if (!wt->quiet || progress != wt->progress || done != wt->done) {
    wt->quiet = 1;
    wt->quiet_since = now;
    wt->progress = progress;
    wt->done = done;
    wt->asked = 0;
    return PLD_OK;
  }
  if (now - wt->quiet_since < QUIET_NS || !confirmed(p, &wt->asked, &st))
    return st;
  return report(p, wt, PLD_ERR_DEADLOCK,
                "deadlock: these waits can never be satisfied (every core of "
                "every device is finished or blocked in a wait, and nothing "
                "is in flight):");
}

/* Tells every device to stop the run (why: PLD__ABORT_*), waking its
 * waiting cores. */
static void stop_run(struct pld_program *p, uint32_t why) {
  p->cp->abort(p, why);
}

/* Runs the host tasks whose calls have all finished, in order, from task
 * *next on.  Returns PLD_OK or the failure of a task (message set). */
static int run_tasks(struct pld_program *p, const pld_arg *argv, int *next) {
  while (*next < p->ntasks) {
    const struct pld__taskplan *tp = &p->tasks[*next];
    for (int r = 0; r < p->nranks; r++)
      if (atomic_load_explicit(&p->devs[r].ctl->calls_done,
                               memory_order_acquire) < (uint32_t)tp->need[r])
        return PLD_OK;
    p->cp->task_begin(p, *next);
    if (p->race.region)
      pld__race_host_task(p->race.region);
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
    atomic_store(&p->world->tasks_done, (uint32_t)*next);
    if (atomic_load(&p->world->tasks_sleepers))
      pld__futex_wake(&p->world->tasks_done, 1);
  }
  return PLD_OK;
}

/* How far the unfinished ranks of a stopped run are from its end: each
 * counts one, and one for each block it runs, has waiting or has ready to
 * start, and one if its AICPU runs device-function code.  A rank stopping
 * brings it down (its waits return, its blocks end, the blocks not begun
 * are dropped, it finishes); nothing a stopped rank does brings it up. */
static int64_t left_to_stop(struct pld_program *p, struct watch *wt) {
  int64_t left = 0;
  for (int r = 0; r < p->nranks; r++) {
    if (finished(p, wt, r))
      continue;
    const struct pld__watch *w = &p->devs[r].ctl->watch;
    int32_t running = atomic_load(&w->running);
    left +=
        1 + (atomic_load(&w->aicpu_busy) != 0) + (running > 0 ? running : 0);
    for (int t = 0; t < 2; t++) {
      int32_t ready = atomic_load(&w->queue[t].blocks);
      left += ready > 0 ? ready : 0;
    }
    for (int i = 0; i < PLD__MAX_SLOTS; i++)
      left += atomic_load(&w->slots[i].state) == PLD__CORE_WAITING;
  }
  return left;
}

/* The grace of a stopped run is over: for STOP_GRACE_NS the unfinished
 * ranks have come no closer to its end, on a confirmed look (a snapshot
 * may show a rank that has stopped since still running).  A device that
 * computes without end is killed that long after the stop, as before; one
 * that stops slowly (a busy machine runs its threads late) is given the
 * grace again each time it gets closer, which it can do only so many
 * times. */
static int stop_overdue(struct pld_program *p, struct watch *wt, int64_t now) {
  int64_t left = left_to_stop(p, wt);
  if (!wt->stopped)
    wt->stopped = now;
  if (!wt->stop_since || left < wt->stop_left) {
    wt->stop_left = left;
    wt->stop_since = now;
    wt->stop_asked = 0;
  }
  int st;
  return now - wt->stop_since >= STOP_GRACE_NS &&
         (confirmed(p, &wt->stop_asked, &st) || st);
}

/* The grace after a stop is over: every rank still running is killed and
 * restarted; what each was running is appended to msg (which holds n
 * bytes).  Returns PLD_OK, or the failure of a restart (the program is
 * then dead and its devices stopped). */
static int stop_stragglers(struct pld_program *p, struct watch *wt, char *msg,
                           size_t cap) {
  size_t n = strlen(msg);
  int64_t now = pld__now_ns();
  for (int r = 0; r < p->nranks; r++) {
    if (finished(p, wt, r))
      continue;
    char running[2048];
    if (running_str(p, r, now, running, sizeof running) != 0)
      pld__catf(running, sizeof running,
                "code unknown (its watch is "
                "corrupt)");
    n += pld__catf(msg + n, cap - n,
                   "\n  rank %d (device %d) was still running %s %lld ms "
                   "after the run was stopped (%lld ms without any rank "
                   "coming closer to its end): its process was killed and a "
                   "new one started",
                   r, p->device_ids[r], running,
                   (long long)((now - wt->stopped) / 1000000),
                   (long long)((now - wt->stop_since) / 1000000));
    int st = p->cp->restart(p, r);
    if (st) {
      n += pld__catf(msg + n, cap - n, ", but that failed: %s",
                     pld_last_error());
      if (p->started)
        p->cp->stop(p, 1);
      p->dead = 1;
      pld__catf(p->dead_msg, sizeof p->dead_msg,
                "a device could not be restarted after a run was stopped: %s",
                pld_last_error());
      pld__catf(msg + n, cap - n, "; the program cannot run again");
      return st;
    }
  }
  pld__catf(msg + n, cap - n, "; the program can run again");
  return PLD_OK;
}

int pld_program_prepare(pld_program *p) {
  if (!p)
    return pld__fail(PLD_ERR_ARG, "pld_program_prepare: p: expected a "
                                  "program, got NULL");
  if (p->dead)
    return pld__fail(PLD_ERR_STATE, "pld_program_prepare: %s", p->dead_msg);
  if (p->started)
    return PLD_OK;
  const size_t slots = (size_t)p->nranks * PLD__MAX_SLOTS;
  p->resumes_seen = pld__calloc(slots, sizeof *p->resumes_seen);
  p->resumed_at = pld__calloc(slots, sizeof *p->resumed_at);
  struct pld__tev span;
  int spanned = pld__htrace_begin(p, &span, PLD__TH_PREPARE, p->host.sig->name);
  int st = !p->resumes_seen || !p->resumed_at
               ? pld__fail(PLD_ERR_NOMEM, "pld_program_prepare: out of memory")
               : pld__trace_prepare(p);
  if (!st)
    st = p->cp->start(p);
  if (!st) {
    /* The host thread counts as awake from now on, between runs too: it
     * runs the user's code then, and device threads polling for the next
     * run must yield to it rather than take every CPU (it leaves the
     * count only while it sleeps in a wait). */
    p->spin = pld__world_spin(p->world, NULL);
    pld__awake(&p->spin);
  }
  if (spanned)
    pld__htrace_end(p, &span, 0);
  if (st && !p->started) {
    pld__free(p->resumes_seen);
    pld__free(p->resumed_at);
    p->resumes_seen = NULL;
    p->resumed_at = NULL;
  }
  return st;
}

unsigned char *pld__run_data(const struct pld_program *p, int r, int slot) {
  return p->devs[r].data + (size_t)slot * pld__plan_slot_stride(&p->plans[r]);
}

/* The run's end on this process (copy out: a span of the trace). */
static int finish(struct pld_program *p, const pld_arg *argv, int slot, int st,
                  const char *msg) {
  struct pld__tev span;
  int spanned = pld__htrace_begin(p, &span, PLD__TH_COPY_OUT, NULL);
  st = p->cp->finish(p, argv, slot, st, msg);
  if (spanned)
    pld__htrace_end(p, &span, 0);
  return st;
}

static int run(struct pld_program *p, int argc, const pld_arg *argv,
               int *posted_run);

int pld_program_run(pld_program *p, int argc, const pld_arg *argv) {
  /* After the runs in flight on its devices (its group's: a program
   * sharing them that never submitted has no runner of its own), as a
   * submit then a wait would be. */
  struct pld_program *group = p && p->share ? p->share : p;
  if (p && (p->runner || group->runner))
    pld__runner_drain(p->runner ? p : group);
  return pld__program_run_now(p, argc, argv);
}

int pld__program_run_now(struct pld_program *p, int argc, const pld_arg *argv) {
  if (!p)
    return pld__fail(PLD_ERR_ARG, "pld_program_run: p: expected a program, "
                                  "got NULL");
  if (p->dead)
    return pld__fail(PLD_ERR_STATE, "pld_program_run: %s", p->dead_msg);
  int st = check_run_args(p, argc, argv);
  if (st)
    return st;
  /* Starting the devices: the run's inputs can be copied in meanwhile (a
   * trace shows every copy in within its run). */
  int early = !p->started && !p->precopied && !p->trace.on;
  if (early)
    p->start_argv = argv;
  st = pld_program_prepare(p);
  p->start_argv = NULL;
  if (st) {
    if (early)
      p->precopied = 0;
    return st;
  }
  struct pld__tev span;
  int spanned = pld__htrace_begin(p, &span, PLD__TH_RUN, p->host.sig->name);
  int posted_run = 0;
  st = run(p, argc, argv, &posted_run);
  if (early)
    p->precopied = 0;
  if (spanned)
    pld__htrace_end(p, &span, 0);
  if (posted_run && p->trace.on) {
    /* Writing the trace must not replace the run's message. */
    static _Thread_local char keep[PLD__MSG_MAX];
    memcpy(keep, pld_last_error(), sizeof keep);
    pld__trace_run_end(p);
    if (st)
      pld__fail_msg(st, keep);
  }
  return st;
}

/* ---- a run from its post to its end -------------------------------------- */

/* What the host keeps of a posted run while it watches it. */
struct loop {
  struct watch wt;
  struct pld__spin spin;
  int slot;        /* its data slot */
  int failed_rank; /* the earliest rank that failed it, or -1 */
  int watch_st;    /* the watch's (or a host task's) failure */
  int stragglers;  /* ranks still ran after the stop's grace */
  int next_task;
  int64_t last_reap, stopped_at, last_watch;
  uint32_t ev; /* the world's event word at the last look */
  int64_t nap; /* how long to sleep before the next look */
  /* The run's result when the watch or a rank failed it: it stands,
   * whatever the devices say when they are stopped. */
  char result[PLD__MSG_MAX];
  char corrupt_what[160];
};

static void loop_begin(struct pld_program *p, struct loop *l,
                       const uint32_t *posted, int slot) {
  memset(&l->wt, 0, sizeof l->wt);
  l->wt.posted = posted;
  l->spin = p->spin;
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
static int loop_end(struct pld_program *p, struct loop *l,
                    const pld_arg *argv) {
  if (!l->watch_st && l->failed_rank < 0)
    return finish(p, argv, l->slot, PLD_OK, NULL);
  int st = l->watch_st;
  if (!st) {
    /* The earliest failure (ranks finished: their reports are final). */
    const struct pld__devctl *c = p->devs[l->failed_rank].ctl;
    st = rank_status(p, &l->wt, l->failed_rank);
    pld__copy_printable(l->result, sizeof l->result, c->msg, sizeof c->msg, 1);
  }
  if (l->stragglers && stop_stragglers(p, &l->wt, l->result, sizeof l->result))
    st = PLD_ERR_CRASH;
  return finish(p, argv, l->slot, st, l->result);
}

/* A device died (status st, message set): every process learns of it (the
 * devices are stopped already). */
static int loop_crashed(struct pld_program *p, struct loop *l,
                        const pld_arg *argv, int st) {
  memcpy(l->result, pld_last_error(), sizeof l->result);
  return finish(p, argv, l->slot, st, l->result);
}

/* Looks at the run once: 1 once it is over (*st its status, message set),
 * else 0 (l->ev and l->nap say how to sleep before the next look). */
static int loop_step(struct pld_program *p, struct loop *l, const pld_arg *argv,
                     int *st) {
  struct watch *wt = &l->wt;
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
  l->ev = atomic_load_explicit(&p->world->event, memory_order_acquire);
  p->cp->look(p);
  dead = pld__find_dead(p, 0, l->corrupt_what, sizeof l->corrupt_what);
  if (dead >= 0) {
    *st = loop_crashed(p, l, argv, pld__died(p, dead, l->corrupt_what));
    return 1;
  }
  int done = 0;
  for (int r = 0; r < p->nranks; r++) {
    struct pld__devctl *c = p->devs[r].ctl;
    if (!finished(p, wt, r))
      continue;
    done++;
    int cs = rank_status(p, wt, r);
    if (cs && !pld__status_valid(cs)) {
      pld__catf(l->corrupt_what, sizeof l->corrupt_what,
                "its run status holds %d, no pld status", cs);
      *st = loop_crashed(p, l, argv, pld__died(p, r, l->corrupt_what));
      return 1;
    }
    if (cs &&
        (l->failed_rank < 0 || c->ticket < p->devs[l->failed_rank].ctl->ticket))
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
  if (done == p->nranks) {
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
   * reads every core of every device: it looks every WATCH_NS at most
   * (a wake sooner shortens the next sleep to when it is due), so that
   * a short run costs no look at all. */
  int64_t watch_due = l->last_watch + WATCH_NS;
  if (!l->stopped_at && now >= watch_due) {
    l->last_watch = now;
    watch_due = now + WATCH_NS;
    if ((l->watch_st = watch_run(p, wt))) {
      memcpy(l->result, pld_last_error(), sizeof l->result);
      stop_run(p, l->watch_st == PLD_ERR_DEADLOCK  ? PLD__ABORT_DEADLOCK
                  : l->watch_st == PLD_ERR_TIMEOUT ? PLD__ABORT_TIMEOUT
                                                   : PLD__ABORT_FAILED);
      l->stopped_at = now;
    }
  }
  if (wt->corrupt[0]) {
    *st =
        loop_crashed(p, l, argv, device_died(p, wt->corrupt_rank, wt->corrupt));
    return 1;
  }
  if (l->stopped_at && stop_overdue(p, wt, now)) {
    /* Whoever is still running now does not stop by itself. */
    l->stragglers = 1;
    *st = loop_end(p, l, argv);
    return 1;
  }
  l->nap = l->stopped_at ? STOPPING_NS
           : wt->quiet   ? QUIET_NS / 4
                         : PLD__MS(PLD_LIVENESS_MS);
  if (!l->stopped_at && watch_due - now < l->nap)
    l->nap = watch_due - now;
  return 0;
}

/* The host's sleep between two looks at a run. */
static void loop_await(struct pld_program *p, struct loop *l) {
  p->cp->await(p, l->ev, l->nap, &l->spin);
}

/* No run is in flight: the next one begins a chain (struct pld__cmd). */
static void chain_begin(struct pld_program *p) {
  struct pld__worldctl *w = p->world;
  atomic_store(&w->abort, PLD__ABORT_NONE);
  atomic_store(&w->tickets, 0);
  atomic_store(&w->tasks_done, 0);
  atomic_store(&w->q_ok, 0);
  atomic_store(&w->q_zeroed, 0);
  atomic_store(&w->q_open, 0);
  p->chain = 0;
}

/* The next data slot (where a precopy put the run's inputs, if one
 * did). */
static void slot_next(struct pld_program *p) {
  p->slot = (p->slot + 1) % p->nslots;
}

/* A posted run ended with status st: after a failure, the collectives'
 * calls it broke must not be seen by the next run (struct
 * pld__ctl_ops.post). */
static void run_ended(struct pld_program *p, int st) {
  if (st)
    (p->share ? p->share : p)->coll_dirty = 1;
}

/* One run, once prepared; *posted_run set once the devices have it. */
static int run(struct pld_program *p, int argc, const pld_arg *argv,
               int *posted_run) {
  (void)argc;
  int st;
  chain_begin(p);
  if ((st = pld__inters_alloc(p)))
    return st;
  uint32_t seq[PLD_MAX_RANKS_INLINE];
  uint32_t *posted = p->nranks <= PLD_MAX_RANKS_INLINE
                         ? seq
                         : pld__calloc((size_t)p->nranks, sizeof *posted);
  if (!posted) {
    pld__inters_release(p);
    return pld__fail(PLD_ERR_NOMEM, "pld_program_run: out of memory");
  }
  if (p->race.region)
    pld__race_run_begin(p->race.region);
  slot_next(p);
  struct pld__tev copy_span;
  int copy_spanned = pld__htrace_begin(p, &copy_span, PLD__TH_COPY_IN, NULL);
  st = p->cp->post(p, argv, posted);
  if (copy_spanned)
    pld__htrace_end(p, &copy_span, 0);
  if (st)
    goto out;
  *posted_run = 1;
  /* While the devices run: the next submitted run's inputs, into the
   * other slot. */
  if (p->runner)
    pld__runner_precopy(p, argv);
  if (p->cp->follow && p->cp->follow(p, argv, &st))
    goto out;
  struct loop l;
  loop_begin(p, &l, posted, p->slot);
  while (!loop_step(p, &l, argv, &st))
    loop_await(p, &l);
out:
  if (*posted_run)
    run_ended(p, st);
  pld__inters_release(p);
  if (posted != seq)
    pld__free(posted);
  return st;
}

/* ---- queued runs (host/submit.c) ----------------------------------------- */

struct pld__qrun {
  struct loop l;
  uint32_t n; /* its number in its chain */
  int begun;  /* its watch began: it is the oldest in flight */
  uint32_t posted[];
};

int pld__queue_eligible(const struct pld_program *p) {
  return p->cp == &pld__ctl_shm && !p->share && !p->sharers && !p->ntasks &&
         !p->trace.on && !p->race.on && p->max_in_flight <= PLD__RING;
}

int pld__queue_chain_full(const struct pld_program *p) {
  /* The devices' counts of the chain (n times the ranks) stay in 31
   * bits. */
  return p->chain >= (UINT32_MAX / 2) / (uint32_t)p->nranks - 1;
}

int pld__queue_post(struct pld_program *p, int argc, const pld_arg *argv,
                    int in_flight, struct pld__qrun **out) {
  *out = NULL;
  int st = check_run_args(p, argc, argv);
  if (st)
    return st;
  struct pld__qrun *q =
      pld__malloc(sizeof *q + (size_t)p->nranks * sizeof q->posted[0]);
  if (!q)
    return pld__fail(PLD_ERR_NOMEM, "pld_program_submit: out of memory");
  if (!in_flight)
    chain_begin(p);
  else
    p->chain++;
  q->n = p->chain;
  q->begun = 0;
  slot_next(p);
  q->l.slot = p->slot;
  p->precopied = 0;
  st = p->cp->post(p, argv, q->posted);
  if (st)
    pld__free(q);
  else
    *out = q;
  return st;
}

uint32_t pld__queue_number(const struct pld__qrun *q) { return q->n; }

int pld__queue_step(struct pld_program *p, struct pld__qrun *q,
                    const pld_arg *argv, int *st) {
  if (!q->begun) {
    loop_begin(p, &q->l, q->posted, q->l.slot);
    q->begun = 1;
  }
  if (!loop_step(p, &q->l, argv, st))
    return 0;
  run_ended(p, *st);
  return 1;
}

void pld__queue_await(struct pld_program *p, struct pld__qrun *q) {
  loop_await(p, &q->l);
}

void pld__queue_free(struct pld__qrun *q) { pld__free(q); }

uint32_t pld__queue_close(struct pld_program *p) {
  return atomic_fetch_or(&p->world->q_open, PLD__Q_CLOSED) & ~PLD__Q_CLOSED;
}

int pld__queue_drain(struct pld_program *p, int stop) {
  if (stop)
    stop_run(p, PLD__ABORT_FAILED);
  char corrupt[160];
  for (;;) {
    uint32_t ev = atomic_load_explicit(&p->world->event, memory_order_acquire);
    int left = 0;
    for (int r = 0; r < p->nranks; r++)
      left += atomic_load(&p->devs[r].ctl->done_seq) !=
              atomic_load(&p->devs[r].ctl->cmd_seq);
    if (!left)
      return PLD_OK;
    int dead = pld__find_dead(p, 1, corrupt, sizeof corrupt);
    if (dead >= 0)
      return pld__died(p, dead, corrupt);
    p->cp->await(p, ev, PLD__MS(PLD_LIVENESS_MS), &p->spin);
  }
}

void pld_program_destroy(pld_program *p) {
  if (!p)
    return;
  if (p->sharers > 0) {
    /* Other programs run on its devices: they stay until the last of
     * them is destroyed (and this one with it). */
    pld__runner_drain(p);
    p->destroy_pending = 1;
    return;
  }
  pld__runner_stop(p);
  if (p->started)
    p->cp->stop(p, 0);
  pld__trace_release(p);
  pld__residents_release(p);
  pld__plans_free(p);
  pld__tasks_free(p);
  pld__windows_free(p);
  pld__free(p->device_ids);
  pld__free(p->args);
  pld__free(p->arg_meta);
  pld__free(p->artifact_dir);
  struct pld_program *root = p->share;
  pld__free(p);
  if (root && --root->sharers == 0 && root->destroy_pending)
    pld_program_destroy(root);
}

int pld_run(pld_host_fn host, const pld_config *cfg, int argc,
            const pld_arg *argv) {
  pld_program *p;
  int st = pld_compile(host, cfg, argc, argv, &p);
  if (st)
    return st;
  st = pld_program_run(p, argc, argv);
  /* Keep the run's message: destroying must not overwrite it. */
  pld_program_destroy(p);
  return st;
}
