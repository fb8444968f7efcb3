/* host/watch.c: the watch of a run.  It reads every rank's control block
 * (through the control plane of host/ctl.h, which keeps them fresh) and
 * finds deadlocks (every rank finished or blocked in a wait no one can
 * satisfy any more), waits and kernels over their time limits, and, once a
 * run is stopped, the ranks that do not stop (killed and restarted). */
#include <stdio.h>
#include <string.h>

#include "core/futex.h"
#include "host/ctl.h"
#include "host/inspect.h"
#include "host/watch.h"
#include "pld/collective.h"

/* The watch's timing (PLD_STOP_GRACE_MS) is in the tunables table
 * (core/tunables.h). */
#define STOP_GRACE_NS PLD__MS(PLD_STOP_GRACE_MS)

/* Rank r finished this run (a queued run: it may have gone on to the
 * next). */
int pld__watch_finished(const struct pld_program *p,
                        const struct pld__runwatch *wt, int r) {
  return (int32_t)(atomic_load(&pld__view(p, r)->done_seq) - wt->posted[r]) >=
         0;
}

/* The status of this run on rank r, once it finished: the one it reported
 * for the run, or success if it went on to a later one (a queued run
 * starts only once every run before it succeeded everywhere). */
int pld__watch_rank_status(const struct pld_program *p,
                           const struct pld__runwatch *wt, int r) {
  const struct pld__devstate *c = pld__view(p, r);
  uint64_t res = atomic_load_explicit(&c->result, memory_order_acquire);
  int32_t after = (int32_t)((uint32_t)(res >> 32) - wt->posted[r]);
  return after > 0 ? PLD_OK : after == 0 ? (int)(uint32_t)res : c->status;
}

/* Marks rank r's watch corrupt (what says how); returns 0, so that a
 * corrupt watch counts as neither quiet nor over a limit. */
static int mark_corrupt(struct pld__runwatch *wt, int r, const char *what) {
  if (!wt->corrupt[0]) {
    pld__catf(wt->corrupt, sizeof wt->corrupt, "%s", what);
    wt->corrupt_rank = r;
  }
  return 0;
}

/* The cell a waiting slot waits on holds a value that satisfies it. */
static int slot_satisfied(struct pld_program *p, int r, int i,
                          const struct pld__coreslot *s, int32_t *value) {
  *value = 0;
  if (s->buf == PLD__WAIT_PIPE) /* see core/watch.h */
    return 0;
  *value = p->be.cp->cell(p, r, i, s);
  return pld__wait_satisfied(*value, s->expected, s->cmp);
}

/* Rank r's next dispatch waits for a host task that has not run (here:
 * under mpi, process 0 runs each first). */
static int awaits_task(const struct pld_program *p, int r) {
  const struct pld__devplan *pl = &p->plan.plans[r];
  uint32_t c = atomic_load(&pld__view(p, r)->calls_done);
  return c < (uint32_t)pl->ncalls && (uint32_t)pl->calls[c].after_tasks >
                                         atomic_load(&p->rs.world->tasks_done);
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
static int rank_quiet(struct pld_program *p, struct pld__runwatch *wt, int r,
                      int *waits) {
  const struct pld__watch *w = &pld__view(p, r)->watch;
  const int cores[2] = {p->plan.plat->vector_cores, p->plan.plat->cube_cores};
  /* A device that has not taken up the run yet is not quiet, however it
   * looks (under mpi: nor one whose snapshot of this run has not come). */
  if (!p->be.cp->seen(p, r) ||
      atomic_load(&pld__view(p, r)->run_seq) != wt->posted[r])
    return 0;
  int32_t running = atomic_load(&w->running);
  if (running < 0 || running > PLD__MAX_CORES)
    return mark_corrupt(wt, r, "its count of running blocks is invalid");
  if (atomic_load(&w->aicpu_busy) || running > 0)
    return 0;
  for (int t = 0; t < 2; t++) {
    int32_t held = atomic_load(&w->queue[t].held);
    if (held < 0 || held > cores[t])
      return mark_corrupt(wt, r,
                          "its count of cores holding blocks is invalid");
    if (atomic_load(&w->queue[t].blocks) > 0 && held < cores[t])
      return 0;
  }
  int mine = 0;
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    struct pld__coreslot s;
    char why[96];
    int32_t v;
    int state = pld__slot_read(p, r, i, &s, why, sizeof why);
    if (state < 0)
      return mark_corrupt(wt, r, why);
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
static int all_quiet(struct pld_program *p, struct pld__runwatch *wt,
                     int *ndone) {
  int waits = 0;
  *ndone = 0;
  for (int r = 0; r < p->plan.nranks; r++) {
    if (pld__watch_finished(p, wt, r)) {
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
  for (int r = 0; r < p->plan.nranks; r++)
    size += p->plan.winbufs[s->buf]->member[r] != 0;
  return pld__slot_credit_from(s, size);
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
static size_t report_cores(struct pld_program *p, struct pld__runwatch *wt,
                           int r, char *msg, size_t cap) {
  static _Thread_local struct pld__coreslot slots[PLD__MAX_SLOTS];
  int state[PLD__MAX_SLOTS];
  const int64_t now = pld__now_ns();
  size_t n = 0;
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    char why[96];
    state[i] = pld__slot_read(p, r, i, &slots[i], why, sizeof why);
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
    n += pld__slot_where(msg + n, cap - n, s);
    if (state[i] == PLD__CORE_RUNNING) {
      n += pld__catf(msg + n, cap - n,
                     " has run for %.1f ms without finishing or waiting",
                     (double)(now - s->since_ns) / 1e6);
    } else if (s->buf == PLD__WAIT_PIPE) {
      char peer[32] = "the cube part";
      if (s->expected >= 0)
        pld__catf(peer, sizeof peer, "vector part %d", (int)s->expected);
      n += pld__catf(msg + n, cap - n,
                     " waits in %s %s %s of its block; waiting for %.1f ms",
                     s->window,
                     s->cmp ? "for room in the path to" : "for a tile from",
                     peer, (double)(now - s->since_ns) / 1e6);
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
            &p->plan.comm_members[(size_t)s->buf * (size_t)p->plan.nranks];
        n += pld__catf(msg + n, cap - n, "it waits for rank %d", from);
        if (members[from] != from)
          n += pld__catf(msg + n, cap - n, " (world rank %d)", members[from]);
        if (pld__watch_finished(p, wt, members[from]))
          n += pld__catf(msg + n, cap - n, ", which has finished");
      } else {
        /* The other unfinished ranks of the window's domain.  Not rank r:
         * the waiting block cannot notify its own cell, and what its
         * rank's other blocks do (wait, or lack a core) has lines of its
         * own. */
        n += pld__catf(msg + n, cap - n, "who could still notify it:");
        int any = 0;
        for (int q = 0; q < p->plan.nranks; q++)
          if (q != r && p->plan.winbufs[s->buf]->member[q] &&
              !pld__watch_finished(p, wt, q)) {
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
                     : s->buf == PLD__WAIT_PIPE    ? "wait the same way"
                                                   : "wait on the same cell");
  }
  return n;
}

/* "\n  rank 1 (device 5): ", the head of a line of a report. */
static size_t rank_head(char *buf, size_t cap, const struct pld_program *p,
                        int r) {
  return pld__catf(buf, cap, "\n  rank %d (device %d): ", r,
                   p->plan.device_ids[r]);
}

/* The line of a report for rank r if its next call waits for a host task:
 * which, and which call of which rank that task waits for. */
static size_t report_task_wait(struct pld_program *p, int r, char *msg,
                               size_t cap) {
  const struct pld__devplan *pl = &p->plan.plans[r];
  uint32_t c = atomic_load(&pld__view(p, r)->calls_done);
  uint32_t done = atomic_load(&p->rs.world->tasks_done);
  if (c >= (uint32_t)pl->ncalls || (uint32_t)pl->calls[c].after_tasks <= done ||
      done >= (uint32_t)p->plan.ntasks)
    return 0;
  const struct pld__taskplan *tp = &p->plan.tasks[done];
  size_t n = rank_head(msg, cap, p, r);
  n += pld__catf(msg + n, cap - n,
                 "dispatch %u (%s) waits for host task %d (%s), which waits "
                 "for",
                 c + 1, pl->calls[c].fn.sig->name, pl->calls[c].after_tasks,
                 p->plan.tasks[pl->calls[c].after_tasks - 1].fn.sig->name);
  if ((int)done + 1 < pl->calls[c].after_tasks)
    n += pld__catf(msg + n, cap - n, " host task %u (%s), which waits for",
                   done + 1, tp->fn.sig->name);
  int any = 0;
  for (int q = 0; q < p->plan.nranks; q++)
    if (atomic_load(&pld__view(p, q)->calls_done) < (uint32_t)tp->need[q]) {
      n += pld__catf(msg + n, cap - n, "%s rank %d's dispatch %d (%s)",
                     any ? "," : "", q, tp->need[q],
                     p->plan.plans[q].calls[tp->need[q] - 1].fn.sig->name);
      any = 1;
    }
  return n;
}

/* The report: for every unfinished rank, what runs (with how long), every
 * blocked wait (and who could still notify it: the other unfinished ranks
 * of its window's domain), the ready blocks that have no core; then the
 * ranks already finished. */
static int watch_report(struct pld_program *p, struct pld__runwatch *wt,
                        int status, const char *head) {
  static _Thread_local char msg[PLD__MSG_MAX];
  const int64_t now = pld__now_ns();
  size_t n = pld__catf(msg, sizeof msg, "%s: %s", pld__api_name(), head);
  for (int r = 0; r < p->plan.nranks; r++) {
    if (pld__watch_finished(p, wt, r))
      continue;
    const struct pld__watch *w = &pld__view(p, r)->watch;
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
  for (int r = 0; r < p->plan.nranks; r++)
    if (pld__watch_finished(p, wt, r)) {
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
static int over_limit(struct pld_program *p, struct pld__runwatch *wt,
                      int waiting, int64_t limit_ns, int64_t now) {
  if (limit_ns <= 0)
    return 0;
  for (int r = 0; r < p->plan.nranks; r++) {
    if (pld__watch_finished(p, wt, r))
      continue;
    const struct pld__watch *w = &pld__view(p, r)->watch;
    if (!waiting && atomic_load(&w->aicpu_busy) &&
        now - atomic_load(&w->aicpu_since_ns) > limit_ns)
      return 1;
    for (int i = 0; i < PLD__MAX_SLOTS; i++) {
      struct pld__coreslot s;
      char why[96];
      int state = pld__slot_read(p, r, i, &s, why, sizeof why);
      if (state < 0)
        return mark_corrupt(wt, r, why);
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
  *st = p->be.cp->confirm ? p->be.cp->confirm(p, asked, &yes) : PLD_OK;
  return !*st && yes;
}

/* Looks once; returns PLD_OK, or the status of a deadlock or time limit
 * with its report as the thread's message (the run is then being
 * stopped).  A watch found corrupt is left in wt->corrupt.  A snapshot
 * may show a wait or a kernel that has since ended, so limits, like
 * deadlocks, are reported on confirmed looks only. */
int pld__watch_look(struct pld_program *p, struct pld__runwatch *wt) {
  int64_t now = pld__now_ns();
  char head[256];
  int st = PLD_OK,
      over_wait = over_limit(p, wt, 1, p->plan.wait_timeout_ns, now);
  if (!over_wait && !over_limit(p, wt, 0, p->plan.kernel_timeout_ns, now))
    wt->limit_asked = 0;
  else if (!confirmed(p, &wt->limit_asked, &st))
    return st;
  else if (over_wait) {
    pld__catf(head, sizeof head,
              "wait timeout: a wait was blocked longer than %lld ms "
              "(pld_config.wait_timeout_ms or PLD_WAIT_TIMEOUT_MS):",
              (long long)(p->plan.wait_timeout_ns / 1000000));
    return watch_report(p, wt, PLD_ERR_TIMEOUT, head);
  } else {
    pld__catf(head, sizeof head,
              "kernel time limit: a kernel or device function ran longer "
              "than %lld ms without finishing or waiting "
              "(pld_config.kernel_timeout_ms or PLD_KERNEL_TIMEOUT_MS):",
              (long long)(p->plan.kernel_timeout_ns / 1000000));
    return watch_report(p, wt, PLD_ERR_TIMEOUT, head);
  }
  int done;
  if (!all_quiet(p, wt, &done)) {
    wt->quiet = 0;
    return PLD_OK;
  }
  uint32_t progress = 0;
  for (int r = 0; r < p->plan.nranks; r++)
    progress += atomic_load(&pld__view(p, r)->watch.progress);
  if (!wt->quiet || progress != wt->progress || done != wt->done) {
    wt->quiet = 1;
    wt->quiet_since = now;
    wt->progress = progress;
    wt->done = done;
    wt->asked = 0;
    return PLD_OK;
  }
  if (now - wt->quiet_since < PLD__QUIET_NS || !confirmed(p, &wt->asked, &st))
    return st;
  return watch_report(
      p, wt, PLD_ERR_DEADLOCK,
      "deadlock: these waits can never be satisfied (every core of "
      "every device is finished or blocked in a wait, and nothing "
      "is in flight):");
}

/* How far the unfinished ranks of a stopped run are from its end: each
 * counts one, and one for each block it runs, has waiting or has ready to
 * start, and one if its AICPU runs device-function code.  A rank stopping
 * brings it down (its waits return, its blocks end, the blocks not begun
 * are dropped, it finishes); nothing a stopped rank does brings it up. */
static int64_t left_to_stop(struct pld_program *p, struct pld__runwatch *wt) {
  int64_t left = 0;
  for (int r = 0; r < p->plan.nranks; r++) {
    if (pld__watch_finished(p, wt, r))
      continue;
    const struct pld__watch *w = &pld__view(p, r)->watch;
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
int pld__watch_stop_overdue(struct pld_program *p, struct pld__runwatch *wt,
                            int64_t now) {
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
int pld__watch_stragglers(struct pld_program *p, struct pld__runwatch *wt,
                          char *msg, size_t cap) {
  size_t n = strlen(msg);
  int64_t now = pld__now_ns();
  for (int r = 0; r < p->plan.nranks; r++) {
    if (pld__watch_finished(p, wt, r))
      continue;
    char running[2048];
    if (pld__running_str(p, r, now, running, sizeof running) != 0)
      pld__catf(running, sizeof running,
                "code unknown (its watch is "
                "corrupt)");
    n += pld__catf(msg + n, cap - n,
                   "\n  rank %d (device %d) was still running %s %lld ms "
                   "after the run was stopped (%lld ms without any rank "
                   "coming closer to its end): its process was killed and a "
                   "new one started",
                   r, p->plan.device_ids[r], running,
                   (long long)((now - wt->stopped) / 1000000),
                   (long long)((now - wt->stop_since) / 1000000));
    int st = p->be.cp->restart(p, r);
    if (st) {
      n += pld__catf(msg + n, cap - n, ", but that failed: %s",
                     pld_last_error());
      if (p->rs.started)
        p->be.cp->stop(p, 1);
      p->rs.dead = 1;
      pld__catf(p->rs.dead_msg, sizeof p->rs.dead_msg,
                "a device could not be restarted after a run was stopped: %s",
                pld_last_error());
      pld__catf(msg + n, cap - n, "; the program cannot run again");
      return st;
    }
  }
  pld__catf(msg + n, cap - n, "; the program can run again");
  return PLD_OK;
}
