/* host/inspect.c: reading what a device wrote, and the report of a device
 * that died.
 *
 * Everything the host reads from a device's control block was written by a
 * process that runs user code: a kernel's wild write can put anything
 * there.  So every field is checked before use (magic words at both ends,
 * statuses, signal numbers, indices, names made printable and bounded),
 * and a block that fails a check is reported as a crash of that rank. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/futex.h"
#include "core/tunables.h"
#include "host/ctl.h"
#include "host/inspect.h"

/* How long a device that called exit() is given to be gone
 * (PLD_EXIT_GRACE_MS, core/tunables.h). */
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
  const struct pld__devstate *c = pld__view(p, r);
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
int pld__slot_read(const struct pld_program *p, int r, int i,
                   struct pld__coreslot *s, char *what, size_t cap) {
  const struct pld__coreslot *w = &pld__view(p, r)->watch.slots[i];
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
    /* Its start unknown (never seen resumed, as a block that stops
     * counting its resumes with the watch): from this look on. */
    if (p->rs.resumes_seen[at] != resumes || !p->rs.resumed_at[at]) {
      p->rs.resumes_seen[at] = resumes;
      p->rs.resumed_at[at] = pld__now_ns();
    }
    s->since_ns = p->rs.resumed_at[at];
  }
  const pld_platform_info *pl = p->plan.plat;
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
  else if (state == PLD__CORE_WAITING && s->buf == PLD__WAIT_PIPE)
    /* In the path between the parts of a mixed block (core/watch.h). */
    bad = s->since_ns <= 0 || deferred || (s->cmp != 0 && s->cmp != 1) ||
                  s->expected < -1 || s->expected >= PLD__MAX_CORES ||
                  s->ndim != 0
              ? "wait"
              : NULL;
  else if (state == PLD__CORE_WAITING &&
           (s->since_ns <= 0 || s->buf < 0 || s->buf >= p->plan.nwinbufs ||
            !p->plan.winbufs[s->buf]->member[r] || s->off % 4 != 0 ||
            s->off + 4 > p->plan.winbufs[s->buf]->phys ||
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
size_t pld__slot_where(char *buf, size_t cap, const struct pld__coreslot *s) {
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
int pld__running_str(const struct pld_program *p, int r, int64_t now, char *buf,
                     size_t cap) {
  const struct pld__watch *w = &pld__view(p, r)->watch;
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
    int state = pld__slot_read(p, r, i, &s, why, sizeof why);
    if (state < 0) {
      pld__catf(buf, cap, "%s", why);
      return -1;
    }
    if (state == PLD__CORE_IDLE)
      continue;
    n += pld__catf(buf + n, cap - n, "%s", any ? ", " : "");
    n += pld__slot_where(buf + n, cap - n, &s);
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

/* How rank r's device process ended, as its control plane knows it. */
static struct pld__dev_end device_end(struct pld_program *p, int r) {
  struct pld__dev_end e = {0, 0};
  if (p->be.cp->ended)
    p->be.cp->ended(p, r, &e);
  return e;
}

/* A device died, or wrote over its control block: the message names rank,
 * device, what it was running and how it died; the others are stopped and
 * the program is done for.  corrupt (if not NULL) says what was found
 * overwritten. */
static int device_died(struct pld_program *p, int r, const char *corrupt) {
  const struct pld__devstate *c = pld__view(p, r);
  char msg[PLD__MSG_MAX], running[2048];
  const pld_platform_info *pl = p->plan.plat;
  int64_t now = pld__now_ns();
  size_t n = pld__catf(msg, sizeof msg, "%s: rank %d (device %d) ",
                       pld__api_name(), r, p->plan.device_ids[r]);
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
      while (!p->be.cp->gone(p, r, 0) && pld__now_ns() < deadline) {
        pld__nap_ns(PLD__US(PLD_REAP_POLL_US));
      }
      n += pld__catf(msg + n, sizeof msg - n, "called exit()");
      struct pld__dev_end e = device_end(p, r);
      if (!e.signal)
        n += pld__catf(msg + n, sizeof msg - n, " and exited with status %d",
                       e.status);
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
    p->be.cp->gone(p, r, 1);
    struct pld__dev_end e = device_end(p, r);
    if (e.signal)
      n += pld__catf(msg + n, sizeof msg - n, "was killed by signal SIG%s (%s)",
                     sig_name(e.signal), strsignal(e.signal));
    else
      n +=
          pld__catf(msg + n, sizeof msg - n, "exited with status %d", e.status);
    if (pld__running_str(p, r, now, running, sizeof running) == 0)
      n += pld__catf(msg + n, sizeof msg - n, " while running %s", running);
    else
      n += pld__catf(msg + n, sizeof msg - n,
                     "; what it ran is unknown: %s (a wild write?)", running);
  }
  pld__catf(msg + n, sizeof msg - n,
            "; the other devices were stopped and the program cannot run "
            "again");
  p->be.cp->stop(p, 1);
  p->rs.dead = 1;
  memcpy(p->rs.dead_msg, msg, sizeof msg);
  return pld__fail_msg(PLD_ERR_CRASH, msg);
}

/* Returns the rank of a device process that died or whose control block
 * is overwritten (*corrupt then says what), or -1. */
int pld__find_dead(struct pld_program *p, int check_pids, char *corrupt,
                   size_t cap) {
  corrupt[0] = '\0';
  for (int r = 0; r < p->plan.nranks; r++) {
    if (!ctl_intact(p, r, corrupt, cap))
      return r;
    if (atomic_load(&pld__view(p, r)->crash.kind) != PLD__CRASH_NONE)
      return r;
    if (check_pids && p->be.cp->gone(p, r, 0))
      return r;
  }
  return -1;
}

int pld__died(struct pld_program *p, int r, const char *corrupt) {
  return device_died(p, r, corrupt[0] ? corrupt : NULL);
}
