/* device/device.c: the simulated device process: its AICPU main loop
 * taking run commands from the host, running the dispatches of the plan,
 * and reporting back (device/device.h). */
#include "device/device.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/kctx.h"
#include "core/tensor.h"
#include "core/tunables.h"
#include "device/aicpu.h"
#include "device/diag.h"
#include "device/sched.h"

#define PAGE ((size_t)4096)

static size_t ctl_bytes(void) {
  return pld__round_up(sizeof(struct pld__devctl), PAGE);
}

/* The magic words of a zeroed control block. */
static void devctl_mark(struct pld__devctl *c) {
  c->st.magic = PLD__CTL_MAGIC;
  c->st.magic_mid = PLD__CTL_MAGIC;
  c->st.magic_end = PLD__CTL_MAGIC;
}

void pld__devctl_reset(struct pld__devctl *c, int keep_uses) {
  memset(c, 0, keep_uses ? offsetof(struct pld__devctl, uses) : sizeof *c);
  if (keep_uses) /* the killed process may have held it */
    atomic_store(&c->uses.lock, 0);
  devctl_mark(c);
}

/* Pages are committed as they are first touched (a device's heap for
 * resident tensors is mostly never touched). */
static void *map_shared(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* The world's page, each device's region, then the windows', in one
 * mapping: one mmap and one munmap (each a file of its own to the kernel,
 * made and torn down). */
_Static_assert(sizeof(struct pld__worldctl) <= PAGE, "the world's page");
static size_t devices_bytes(const struct pld__device *devs, int n,
                            size_t windows_bytes) {
  size_t total = PAGE + windows_bytes;
  for (int r = 0; r < n; r++)
    total += devs[r].map_bytes;
  return total;
}

int pld__devices_map(struct pld__device *devs, int n,
                     const struct pld__devplan *plans, size_t windows_bytes,
                     struct pld__worldctl **world, unsigned char **windows) {
  for (int r = 0; r < n; r++) {
    memset(&devs[r], 0, sizeof devs[r]);
    devs[r].map_bytes =
        ctl_bytes() + PAGE +
        (size_t)plans[r].nslots * pld__plan_slot_stride(&plans[r]) +
        plans[r].heap_bytes;
  }
  size_t total = devices_bytes(devs, n, windows_bytes);
  unsigned char *base = map_shared(total);
  if (!base)
    return pld__fail_api(PLD_ERR_SYSTEM, "mapping %zu bytes for %d devices: %s",
                         total, n, strerror(errno));
  unsigned char *at = base + PAGE;
  for (int r = 0; r < n; r++) {
    size_t stride = pld__plan_slot_stride(&plans[r]);
    devs[r].ctl = (struct pld__devctl *)at;
    unsigned char *guard = at + ctl_bytes();
    for (int k = 0; k < plans[r].nslots; k++)
      if (mprotect(guard + (size_t)k * stride, PAGE, PROT_NONE) != 0) {
        int e = errno;
        munmap(base, total);
        for (int i = 0; i < n; i++)
          devs[i].ctl = NULL;
        return pld__fail_api(PLD_ERR_SYSTEM, "rank %d: a guard page: %s", r,
                             strerror(e));
      }
    devctl_mark(devs[r].ctl); /* a fresh mapping reads as zeros */
    devs[r].data = guard + PAGE;
    at += devs[r].map_bytes;
  }
  *world = (struct pld__worldctl *)base;
  if (windows)
    *windows = windows_bytes ? at : NULL;
  return PLD_OK;
}

void pld__devices_unmap(struct pld__device *devs, int n, size_t windows_bytes,
                        struct pld__worldctl *world) {
  if (world)
    munmap(world, devices_bytes(devs, n, windows_bytes));
  for (int r = 0; r < n; r++)
    devs[r].ctl = NULL;
}

struct pld__spin pld__world_spin(struct pld__worldctl *world,
                                 _Atomic uint32_t *own) {
  /* Under the MPI fabric awake_at counts the node's threads, and
   * world->awake, unused there, this process's (its host thread's and its
   * device's): the CPUs mpirun binds this process to are theirs. */
  const uint32_t mine = pld__cpus();
  struct pld__spin s = {pld__tunables()->PLD_SPIN_US * 1000,
                        world->awake_at ? world->awake_at : &world->awake,
                        world->awake_at ? &world->awake : own,
                        world->awake_at ? world->awake_cpus : mine,
                        0,
                        mine};
  return s;
}

/* ---- a device running --------------------------------------------------- */

/* The device of this process: a device process has one (set once it is
 * forked); under the MPI fabric, the latest started (a process runs one
 * rank, of each of its programs). */
static struct pld__devrun *self;
static int crash_prints; /* the MPI fabric: the handler prints the report */
static _Thread_local const char *aicpu_running_fn;
static _Thread_local const struct pld__devrun *aicpu_of;
/* Under the MPI fabric: the scheduler of the device running (the cores
 * a process stopped from outside tells about). */
static struct pld__sched *running_sched;

/* Records in the control block what this thread was running as the
 * process dies (kind PLD__CRASH_*); the first dying thread wins.  Async-
 * signal-safe: plain stores into shared memory and a futex wake. */
static void record_death(int kind, int sig, uintptr_t addr) {
  struct pld__crash *cr = &self->ctl->st.crash;
  int32_t expected = 0;
  if (!atomic_compare_exchange_strong(&cr->claimed, &expected, 1))
    return;
  const struct pld__core *core = pld__running_core;
  if (core) {
    cr->core_type = (int32_t)core->spec.type;
    cr->core = core->spec.index;
    cr->block = core->block_idx;
    cr->blocks = core->block_num;
    pld__name_copy(cr->fn, sizeof cr->fn, core->kernel);
  } else {
    cr->core_type = -1;
    pld__name_copy(cr->fn, sizeof cr->fn, aicpu_running_fn);
  }
  cr->signal = sig;
  cr->addr = addr;
  atomic_store_explicit(&cr->kind, kind, memory_order_release);
  atomic_fetch_add(&self->world->event, 1);
  pld__futex_wake(&self->world->event, 1);
}

/* "rank 1's process is gone" or "the processes of ranks 1 and 3 are
 * gone": the ranks on this node whose processes ended without saying
 * why (as a process stopped from outside does); nothing if none did (or
 * d cannot tell). */
static size_t say_gone(char *buf, size_t cap, const struct pld__devrun *d) {
  enum { LISTED = 8 };
  int gone[LISTED], k = 0, all = 0;
  for (int r = 0; d->peer_gone && r < d->plan->nranks; r++)
    if (d->peer_gone(r) && all++ < LISTED)
      gone[k++] = r;
  if (all == 1)
    return pld__catf(buf, cap, "rank %d's process is gone", gone[0]);
  size_t n = 0;
  for (int i = 0; i < k; i++)
    n += pld__catf(buf + n, cap - n, "%s%d",
                   i == 0         ? "the processes of ranks "
                   : i == all - 1 ? " and "
                                  : ", ",
                   gone[i]);
  if (all > k)
    n += pld__catf(buf + n, cap - n, " and %d more", all - k);
  if (all)
    n += pld__catf(buf + n, cap - n, " are gone");
  return n;
}

/* The world rank whose credit waiting slot s waits for, or -1 if its
 * cell is no credit (pld__slot_credit_from). */
static int credit_sender(const struct pld__devplan *pl,
                         const struct pld__coreslot *s) {
  if (s->buf < 0 || s->buf >= pl->nwinbufs)
    return -1;
  const struct pld__comm *cm =
      &pl->comms[(size_t)s->buf * (size_t)pl->nranks + (size_t)pl->rank];
  const int32_t from = cm->members ? pld__slot_credit_from(s, cm->nranks) : -1;
  return from >= 0 ? cm->members[from] : -1;
}

/* The first of d's cores that holds a block, preferring one waiting in
 * a collective, then one in a collective, then one waiting (NULL if none
 * holds a block): its slot's state in *state, and in *holding how many
 * cores hold a block. */
static const struct pld__core *telling_core(const struct pld__devrun *d,
                                            int *state, int *holding) {
  const struct pld__core *best = NULL;
  int best_score = -1;
  *state = PLD__CORE_IDLE;
  *holding = 0;
  for (int i = 0; running_sched && i < PLD__MAX_CORES; i++) {
    const struct pld__core *c = pld__sched_slot_core(running_sched, i);
    int st = atomic_load_explicit(&d->ctl->st.watch.slots[i].state,
                                  memory_order_relaxed);
    if (!c || (st != PLD__CORE_RUNNING && st != PLD__CORE_WAITING))
      continue;
    ++*holding;
    int in_coll = c->coll_kind != PLD__COLL_NONE;
    int score = in_coll ? (st == PLD__CORE_WAITING ? 3 : 2)
                        : (st == PLD__CORE_WAITING ? 1 : 0);
    if (score > best_score) {
      best = c;
      best_score = score;
      *state = st;
    }
  }
  return best;
}

/* " while kernel k on AIV core 0 (block 0 of 1) waited in pld_allreduce
 * call 3, round 1 for rank 1": what one of d's cores holding a block did
 * (telling_core), the wait from the watch's slot as it is (a kernel may
 * have scribbled on it: every field used is checked); nothing if no core
 * holds a block. */
static size_t say_cores(char *buf, size_t cap, const struct pld__devrun *d) {
  int state, holding;
  const struct pld__core *c = telling_core(d, &state, &holding);
  if (!c)
    return 0;
  const struct pld__coreslot *w = &d->ctl->st.watch.slots[c->slot];
  size_t n = pld__catf(
      buf, cap, " while kernel %s on %s core %d (block %d of %d) %s", c->kernel,
      pld__core_type_name(c->spec.type), c->spec.index, c->block_idx,
      c->block_num, state == PLD__CORE_WAITING ? "waited" : "ran");
  const char *coll =
      c->coll_kind != PLD__COLL_NONE ? pld__coll_name(c->coll_kind) : NULL;
  if (state == PLD__CORE_WAITING && w->buf == PLD__WAIT_PIPE) {
    char fn[PLD__NAME_MAX];
    pld__name_copy(fn, sizeof fn, w->window);
    n += pld__catf(buf + n, cap - n, " in %s", fn);
  } else if (coll) {
    n += pld__catf(buf + n, cap - n, " in %s call %d, round %d", coll,
                   c->coll_call, c->coll_round);
  } else if (state == PLD__CORE_WAITING) {
    char window[PLD__NAME_MAX];
    pld__name_copy(window, sizeof window, w->window);
    n += pld__catf(buf + n, cap - n, " on window '%s'", window);
  }
  int from =
      state == PLD__CORE_WAITING && coll ? credit_sender(d->plan, w) : -1;
  if (from >= 0)
    n += pld__catf(buf + n, cap - n, " for rank %d", from);
  if (holding > 1)
    n += pld__catf(buf + n, cap - n, " (and %d more block%s)", holding - 1,
                   holding == 2 ? "" : "s");
  return n;
}

/* Under the MPI fabric no host outlives the process to read the record:
 * the dying process says it on stderr, one line, before it dies.  A
 * signal that stops it from outside (mpirun ending the job after another
 * process failed), or a cause `ended` outside the device (non-NULL: its
 * words), is said so, with the ranks on this node whose processes are
 * gone and what the device's cores did. */
static void print_death(int kind, int sig, uintptr_t addr, const char *ended) {
  static char line[1024];
  static _Atomic int printed; /* 1 while a thread writes the line, then 2 */
  int was = 0;
  if (!atomic_compare_exchange_strong(&printed, &was, 1)) {
    /* Another thread writes it: this one must not end the process first. */
    for (int ms = 0; ms < 100 && atomic_load(&printed) != 2; ms++)
      nanosleep(&(struct timespec){0, 1000000}, NULL);
    return;
  }
  const struct pld__core *core = pld__running_core;
  const struct pld__devrun *d = core ? NULL : aicpu_of;
  int rank = core ? core->rank : d ? d->plan->rank : self->plan->rank;
  int dev = core ? core->device
            : d  ? d->plan->device_id
                 : self->plan->device_id;
  size_t n =
      pld__catf(line, sizeof line, "pld: rank %d (device %d) ", rank, dev);
  int outside = ended || sig == SIGTERM || sig == SIGINT || sig == SIGHUP;
  size_t cores_said = 0;
  if (kind == PLD__CRASH_EXIT) {
    n += pld__catf(line + n, sizeof line - n, "called exit()");
  } else if (outside) {
    if (self->ending)
      self->ending(0);
    if (ended)
      n += pld__catf(line + n, sizeof line - n, "%s", ended);
    else
      n += pld__catf(line + n, sizeof line - n,
                     "was stopped by signal SIG%s from outside",
                     sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
    n += pld__catf(line + n, sizeof line - n, " (the job is ending: ");
    size_t gone = say_gone(line + n, sizeof line - n, self);
    n += gone;
    if (!gone)
      n += pld__catf(line + n, sizeof line - n,
                     "another process failed or was killed");
    n += pld__catf(line + n, sizeof line - n, ")");
    n += cores_said = say_cores(line + n, sizeof line - n, self);
  } else {
    n += pld__catf(line + n, sizeof line - n, "crashed with signal SIG%s (%s)",
                   sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", strsignal(sig));
  }
  if (!outside && (sig == SIGSEGV || sig == SIGBUS))
    n += pld__catf(line + n, sizeof line - n, " at address %#llx",
                   (unsigned long long)addr);
  if (core && !cores_said)
    n += pld__catf(line + n, sizeof line - n,
                   " in kernel %s on %s core %d (block %d of %d)", core->kernel,
                   pld__core_type_name(core->spec.type), core->spec.index,
                   core->block_idx, core->block_num);
  else if (aicpu_running_fn && !cores_said)
    n += pld__catf(line + n, sizeof line - n,
                   " in device function %s on the AICPU", aicpu_running_fn);
  n += pld__catf(line + n, sizeof line - n, "\n");
  ssize_t w = write(2, line, n);
  (void)w;
  atomic_store(&printed, 2);
  if (outside && self->ending)
    self->ending(1);
}

static void on_death(int kind, int sig, uintptr_t addr) {
  if (!self)
    return;
  if (crash_prints)
    print_death(kind, sig, addr, NULL);
  else
    record_death(kind, sig, addr);
}

void pld__device_say_end(const char *why) {
  if (self && crash_prints)
    print_death(PLD__CRASH_SIGNAL, 0, 0, why);
}

/* SA_RESETHAND restored the default action; raising the signal again
 * makes the process die of it once the handler returns, whether it came
 * from a fault (which would also recur) or from kill or raise. */
static void crash_handler(int sig, siginfo_t *si, void *uctx) {
  (void)uctx;
  on_death(PLD__CRASH_SIGNAL, sig, (uintptr_t)si->si_addr);
  raise(sig);
}

/* The device's code called exit(): the process ends with it, so that is
 * reported like a crash, naming the kernel or function that called it.
 * (The device itself leaves through _exit, which runs no exit hooks.) */
static void exit_hook(void) {
  if (!crash_prints)
    on_death(PLD__CRASH_EXIT, 0, 0);
}

/* Every signal whose default action ends the process, and that a handler
 * can catch.  Under the MPI fabric (crash_prints) SIGPIPE is ignored
 * instead: it comes from MPI's writes to the socket of a process that
 * is gone, which then fail, and MPI reports the failure to the fabric
 * (fabric/mpi_proxy.c, failed_mpi), which says the peer is gone; caught,
 * it made a process that had lost a peer report a crash of its own
 * (mpi_faults kill-coll over tcp, once in a CI run). */
static void install_crash_handlers(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS,  SIGFPE,    SIGILL,  SIGABRT,
                             SIGTRAP, SIGSYS,  SIGTERM,   SIGINT,  SIGQUIT,
                             SIGHUP,  SIGUSR1, SIGUSR2,   SIGALRM, SIGXCPU,
                             SIGXFSZ, SIGPIPE, SIGVTALRM, SIGPROF};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = crash_handler;
  sa.sa_flags = (int)(SA_SIGINFO | SA_RESETHAND | SA_ONSTACK);
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &sa, NULL);
  if (crash_prints)
    signal(SIGPIPE, SIG_IGN);
  atexit(exit_hook);
}

static int aborted(const struct pld__devrun *d, char *msg, size_t cap) {
  if (!atomic_load_explicit(&d->world->abort, memory_order_acquire))
    return PLD_OK;
  pld__catf(msg, cap,
            "rank %d (device %d): stopped because another rank failed",
            d->plan->rank, d->plan->device_id);
  return PLD_ERR_ABORTED;
}

/* Waits until the host has run its first n host tasks of this run (or the
 * run is stopped), as an AICPU waiting for its work: not busy. */
static int await_tasks(const struct pld__devrun *d, struct pld__aicpu *a,
                       uint32_t n, char *msg, size_t cap) {
  _Atomic uint32_t *done = &d->world->tasks_done;
  int st;
  pld__aicpu_busy(a, 0);
  for (;;) {
    /* The count, then the abort word: a stop bumps the count too (see
     * await_count), so a count reached may be the stop's. */
    uint32_t seen = atomic_load_explicit(done, memory_order_acquire);
    if ((st = aborted(d, msg, cap)) || seen >= n)
      break;
    pld__event_wait(done, seen, &d->world->tasks_sleepers, &d->spin,
                    PLD__MS(PLD_ABORT_POLL_MS), 1);
  }
  pld__aicpu_busy(a, 1);
  return st;
}

/* Runs every dispatch of the plan once, each after the host tasks it
 * waits for; counts the calls done for the host.  Returns the first
 * failure. */
static int run_plan(const struct pld__devrun *d, struct pld__aicpu *a,
                    uint32_t slot, struct pld__diag *diag, uint32_t run,
                    char *msg, size_t cap) {
  const struct pld__devplan *plan = d->plan;
  unsigned char *data = d->data + slot * pld__plan_slot_stride(plan);
  for (int c = 0; c < plan->ncalls; c++) {
    const struct pld__call *call = &plan->calls[c];
    const pld_signature *sig = call->fn.sig;
    struct pld__tensor tensors[PLD_MAX_PARAMS];
    pld_arg argv[PLD_MAX_PARAMS];
    for (int i = 0; i < call->argc; i++)
      argv[i] = pld__call_arg_tensor(&call->args[i], &sig->params[i], plan,
                                     data, d->fabric, &tensors[i]);
    struct pld__tensor coll_sig;
    a->coll_sig = NULL;
    if (plan->coll_sig.win_buf >= 0) {
      pld__call_arg_tensor(&plan->coll_sig, &pld__coll_sig_param, plan, data,
                           d->fabric, &coll_sig);
      a->coll_sig = &coll_sig;
    }
    int st = call->after_tasks
                 ? await_tasks(d, a, (uint32_t)call->after_tasks, msg, cap)
                 : aborted(d, msg, cap);
    if (st)
      return st;
    if (call->after_tasks)
      pld__race_absorb_host(); /* what the host tasks waited for */
    aicpu_running_fn = sig->name;
    a->status = PLD_OK;
    struct pld__tev e;
    int observed = pld__observed(PLD__TEV_DISPATCH);
    if (observed) {
      pld__tev_init(&e, PLD__TEV_DISPATCH, 0, sig->name);
      e.a = c;
      pld__obs_begin(&e);
    }
    const int64_t t0 = diag ? pld__now_ns() : 0;
    st = pld__aicpu_call(a, call->fn, argv);
    if (observed)
      pld__obs_end(&e);
    /* Its transfers and signals land before the call counts as done. */
    if (!st && (st = d->fabric->ops->flush(d->fabric, -1)) != PLD_OK)
      pld__catf(a->msg, sizeof a->msg, "%s: completing its transfers: %s",
                sig->name, pld_last_error());
    aicpu_running_fn = NULL;
    if (st) {
      pld__catf(msg, cap, "%s", a->msg);
      if (diag)
        pld__diag_dispatch_end(diag, c, sig->name, run, t0, 0, st, NULL, 0);
      return st;
    }
    if (diag && (st = pld__diag_dispatch_end(diag, c, sig->name, run, t0,
                                             pld__now_ns(), st, msg, cap)))
      return st;
    atomic_store_explicit(&d->ctl->st.calls_done, (uint32_t)c + 1,
                          memory_order_release);
    if (plan->report_calls && c + 1 < plan->ncalls)
      pld__event_signal(&d->world->event, &d->world->event_sleepers, 1);
  }
  return PLD_OK;
}

static void report_done(const struct pld__devrun *d, uint32_t seq) {
  atomic_store_explicit(&d->ctl->st.done_seq, seq, memory_order_release);
  pld__event_signal(&d->world->event, &d->world->event_sleepers, 1);
}

/* Waits until *word holds at least need; 0 if the run is stopped first
 * (the host's abort word), as an AICPU waiting for its work: not busy.
 *
 * The host's stop raises the abort word, then bumps *word and wakes its
 * sleepers (shm_abort): a wake that left the word as it was would be lost
 * on a waiter still polling it, which would then sleep a whole
 * PLD_ABORT_POLL_MS on the value it saw.  So the count is read first and
 * the abort word after: a count reached may be the stop's bump, and a
 * count that moved is read with the abort word raised before it. */
static int await_count(const struct pld__devrun *d, _Atomic uint32_t *word,
                       uint32_t need) {
  for (;;) {
    uint32_t v = atomic_load_explicit(word, memory_order_acquire);
    if (atomic_load_explicit(&d->world->abort, memory_order_acquire))
      return 0;
    if (v >= need)
      return 1;
    pld__event_wait(word, v, &d->world->q_sleepers, &d->spin,
                    PLD__MS(PLD_ABORT_POLL_MS), 1);
  }
}

/* The gate of queued run k (struct pld__cmd), the run before it on this
 * device failed or not: 1 once it may start, 0 if it is cancelled (a run
 * before it failed, or the host closed the chain before it: the host then
 * stops the chain with its abort word). */
static int gate(const struct pld__devrun *d, const struct pld__cmd *k,
                int failed) {
  struct pld__worldctl *w = d->world;
  const uint32_t n = k->gate, need = n * (uint32_t)d->plan->nranks;
  if (atomic_load_explicit(&w->abort, memory_order_acquire))
    return 0;
  if (!await_count(d, &w->q_ok,
                   (k->flags & PLD__GATE_SYNC) ? need
                   : failed                    ? UINT32_MAX
                                               : 0))
    return 0;
  uint32_t open = atomic_load(&w->q_open);
  while ((open & ~PLD__Q_CLOSED) < n) {
    if (open & PLD__Q_CLOSED) /* never opens: wait for the stop */
      return await_count(d, &w->q_ok, UINT32_MAX);
    if (atomic_compare_exchange_weak(&w->q_open, &open, n))
      break;
  }
  if (!(k->flags & PLD__GATE_ZERO))
    return 1;
  /* Every rank finished the runs before: no one writes the windows until
   * every rank zeroed its copies. */
  d->zero_windows(d->fabric, d->plan->rank);
  pld__event_signal(&w->q_zeroed, &w->q_sleepers, 1);
  return await_count(d, &w->q_zeroed, need);
}

/* Runs this thread, and the core threads it starts, on d's share of the
 * CPUs it may use (PLD_PIN_DEVICES): the cpu_part-th of cpu_parts equal
 * parts, or CPU cpu_part mod their count where parts outnumber them (mode
 * 2 only).  Without it the OS may keep two devices' threads on one CPU
 * for a whole run while another idles: it places a woken thread near its
 * waker.  Returns the CPUs of the share, 0 where nothing is pinned. */
static uint32_t pin_device(const struct pld__devrun *d) {
  const int64_t mode = pld__tunables()->PLD_PIN_DEVICES;
  cpu_set_t may, share;
  if (!mode || d->cpu_parts < 2 || sched_getaffinity(0, sizeof may, &may) != 0)
    return 0;
  size_t cpus[CPU_SETSIZE], n = 0;
  for (size_t c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &may))
      cpus[n++] = c;
  const size_t parts = (size_t)d->cpu_parts, part = (size_t)d->cpu_part;
  if (n < 2 || (parts > n && mode < 2))
    return 0;
  CPU_ZERO(&share);
  if (parts >= n)
    CPU_SET(cpus[part % n], &share);
  else
    for (size_t i = part * n / parts; i < (part + 1) * n / parts; i++)
      CPU_SET(cpus[i], &share);
  if (sched_setaffinity(0, sizeof share, &share) != 0)
    return 0;
  return (uint32_t)CPU_COUNT(&share);
}

void pld__device_loop(struct pld__devrun *d) {
  const struct pld__devplan *plan = d->plan;
  struct pld__devctl *ctl = d->ctl;
  aicpu_of = d;
  /* The program's threads share every CPU it may use; the device's own,
   * its share. */
  d->spin = pld__world_spin(d->world, &ctl->awake);
  const uint32_t pinned = pin_device(d);
  if (pinned)
    d->spin.own_cpus = pinned;
  pld__awake(&d->spin);         /* the AICPU thread */
  struct pld__fabric_wrap wrap; /* the log's and race detector's */
  struct pld__diag *diag = NULL;
  int st = plan->diag ? pld__diag_create(plan->diag, plan->diag_dir, plan->rank,
                                         plan->device_id, &diag)
                      : PLD_OK;
  /* The timing model records where the trace does (core/trace.h). */
  const int model = d->trace && pld__trace_tbuf(d->trace, 0)->model;
  struct pld__fabric *wrapped =
      pld__fabric_wrapped(&wrap, d->fabric, d->race != NULL, model);
  struct pld__comm_env env = {
      .fabric = wrapped,
      .poll = d->race ? wrapped : d->fabric,
      .abort = &d->world->abort,
      .watch = &ctl->st.watch,
      .spin = d->spin,
      .trace = d->trace,
      .race = d->race,
      .uses = &ctl->uses,
      .diag = diag,
      .model = model,
      .cores = {[PLD_CORE_VECTOR] = plan->plat->vector_cores,
                [PLD_CORE_CUBE] = plan->plat->cube_cores}};
  pld__race_attach(d->race, plan->rank, 0);
  struct pld__tbuf *tbuf = d->trace ? pld__trace_tbuf(d->trace, 0) : NULL;
  if (tbuf)
    snprintf(tbuf->name, sizeof tbuf->name, "AICPU");
  pld__observe_as(plan->rank, plan->device_id, "AICPU", tbuf);
  struct pld__sched *sched = NULL;
  struct pld__dims dims;
  struct pld__aicpu a; /* all but its message's body (8 KiB), written
                          only by a failure */
  memset(&a, 0, offsetof(struct pld__aicpu, msg) + 1);
  if (!st)
    st = pld__sched_create(plan->plat, plan->rank, plan->device_id, &env,
                           &sched);
  if (st) {
    ctl->st.status = st;
    pld__catf(ctl->st.msg, sizeof ctl->st.msg, "%s", pld_last_error());
  }
  a.rank = plan->rank;
  a.device = plan->device_id;
  a.plat = plan->plat;
  a.mem_bytes = plan->mem_bytes;
  a.dims = &dims;
  a.sched = sched;
  running_sched = sched;
  a.watch = &ctl->st.watch;
  atomic_store_explicit(&ctl->ready, 1, memory_order_release);
  report_done(d, 0);
  /* A device just started expects its first command soon: it polls for
   * it as long as a thread woken early learnt to (core/futex.h). */
  pld__spin_extra_ns = (PLD__SPIN_GROWTH - 1) * d->spin.ns;

  /* The commands, one by one in the order posted. */
  int failed = 0; /* the last run this device ran */
  for (uint32_t seq = 1;; seq++) {
    while (pld__event_wait(&ctl->cmd_seq, seq - 1, &ctl->cmd_sleepers, &d->spin,
                           -1, 1) == seq - 1)
      ;
    const struct pld__cmd k = ctl->ring[seq % PLD__RING];
    if (k.cmd != PLD__CMD_RUN)
      break;
    atomic_store_explicit(&ctl->st.run_seq, seq, memory_order_release);
    if (!sched || (k.gate && !gate(d, &k, failed))) { /* failed start,
                                                         cancelled */
      report_done(d, seq);
      continue;
    }
    /* Dynamic dimensions start from the compiled bindings on every run. */
    dims = *plan->dims;
    pld__aicpu_busy(&a, 1);
    st = run_plan(d, &a, k.slot, diag, seq, ctl->st.msg, sizeof ctl->st.msg);
    pld__aicpu_busy(&a, 0);
    ctl->st.status = st;
    failed = st != PLD_OK;
    if (st)
      ctl->st.ticket = atomic_fetch_add(&d->world->tickets, 1);
    atomic_store_explicit(&ctl->st.result, (uint64_t)seq << 32 | (uint32_t)st,
                          memory_order_release);
    if (!st)
      pld__event_signal(&d->world->q_ok, &d->world->q_sleepers, 1);
    report_done(d, seq);
  }
  if (!d->exits) { /* else the process's end frees it all, and sooner */
    pld__aicpu_release(&a);
    if (running_sched == sched)
      running_sched = NULL;
    pld__sched_destroy(sched);
    pld__diag_destroy(diag);
  }
  pld__asleep(&d->spin);
}

void pld__device_process(struct pld__devrun *d) {
  self = d;
  install_crash_handlers();
  d->exits = 1;
  pld__device_loop(d);
  _exit(0);
}

static void *device_thread(void *arg) {
  pld__device_loop(arg);
  return NULL;
}

int pld__device_thread(struct pld__devrun *d, pthread_t *thread) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  crash_prints = 1;
  self = d;
  pthread_once(&once, install_crash_handlers);
  int e = pthread_create(thread, NULL, device_thread, d);
  if (e)
    return pld__fail_api(PLD_ERR_SYSTEM,
                         "rank %d (device %d): starting its "
                         "AICPU thread: %s",
                         d->plan->rank, d->plan->device_id, strerror(e));
  return PLD_OK;
}
