/* host/run.c: starting device processes and running a compiled program. */
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
#include "host/program.h"

/* How long the host sleeps between checks that its devices are alive. */
#define LIVENESS_NS 100000000 /* 100 ms */

/* Ranks whose run bookkeeping fits on the stack. */
#define PLD_MAX_RANKS_INLINE 64

static const char *sig_name(int sig) {
  const char *n = sigabbrev_np(sig);
  return n ? n : "?";
}

/* Collects device r if it exited.  Returns 1 if it is gone. */
static int reap(struct pld__device *d, int block) {
  if (d->reaped)
    return 1;
  if (d->pid <= 0)
    return 1;
  pid_t w = waitpid(d->pid, &d->wstatus, block ? 0 : WNOHANG);
  if (w == d->pid || (w < 0 && errno == ECHILD)) {
    d->reaped = 1;
    return 1;
  }
  return 0;
}

/* The programs of this process whose devices run: a device process
 * started later must drop their memory (fork gives it all of it). */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pld_program *live;

static void live_remove(struct pld_program *p) {
  pthread_mutex_lock(&live_mu);
  for (struct pld_program **q = &live; *q; q = &(*q)->live_next)
    if (*q == p) {
      *q = p->live_next;
      break;
    }
  pthread_mutex_unlock(&live_mu);
}

/* Called with live_mu held: the shared mappings of the other live
 * programs, in *out (the caller frees it). */
static int live_mappings(struct pld__mapping **out, int *n) {
  int count = 0;
  for (struct pld_program *q = live; q; q = q->live_next)
    count += q->nranks + 2;
  *out = pld__calloc((size_t)(count ? count : 1), sizeof **out);
  if (!*out)
    return pld__fail(PLD_ERR_NOMEM, "pld_program_prepare: out of memory");
  *n = 0;
  for (struct pld_program *q = live; q; q = q->live_next) {
    (*out)[(*n)++] = (struct pld__mapping){q->world, sizeof *q->world};
    (*out)[(*n)++] = (struct pld__mapping){q->region, q->lay.total};
    for (int r = 0; r < q->nranks; r++)
      (*out)[(*n)++] =
          (struct pld__mapping){q->devs[r].ctl, q->devs[r].map_bytes};
  }
  return PLD_OK;
}

/* Stops every device process at once and frees their memory. */
static void kill_devices(struct pld_program *p) {
  live_remove(p);
  for (int r = 0; r < p->nranks; r++)
    if (p->devs[r].pid > 0 && !p->devs[r].reaped)
      kill(p->devs[r].pid, SIGKILL);
  for (int r = 0; r < p->nranks; r++)
    reap(&p->devs[r], 1);
  pld__devices_unmap(p->devs, p->nranks, p->world);
  if (p->region)
    munmap(p->region, p->lay.total);
  pld__free(p->devs);
  p->devs = NULL;
  p->world = NULL;
  p->region = NULL;
  p->started = 0;
}

/* A device died: the message names rank, device, what it was running and
 * the signal; the others are stopped and the program is done for. */
static int device_died(struct pld_program *p, int r) {
  struct pld__device *d = &p->devs[r];
  struct pld__devctl *c = d->ctl;
  char msg[PLD__MSG_MAX];
  int sig = atomic_load(&c->crash_signal);
  size_t n = pld__catf(msg, sizeof msg, "pld_program_run: rank %d (device %d) ",
                       r, p->device_ids[r]);
  if (sig) {
    n += pld__catf(msg + n, sizeof msg - n, "crashed with signal SIG%s (%s)",
                   sig_name(sig), strsignal(sig));
    if (sig == SIGSEGV || sig == SIGBUS)
      n += pld__catf(msg + n, sizeof msg - n, " at address %#lx",
                     (unsigned long)c->crash_addr);
    if (c->crash_core_type >= 0)
      n += pld__catf(msg + n, sizeof msg - n,
                     " in kernel %s on %s core %d (block %d of %d)",
                     c->crash_fn,
                     pld__core_type_name((pld_core_type)c->crash_core_type),
                     c->crash_core, c->crash_block, c->crash_blocks);
    else if (c->crash_fn[0])
      n += pld__catf(msg + n, sizeof msg - n,
                     " in device function %s on the AICPU", c->crash_fn);
  } else {
    reap(d, 1);
    if (WIFSIGNALED(d->wstatus))
      n += pld__catf(msg + n, sizeof msg - n, "was killed by signal SIG%s (%s)",
                     sig_name(WTERMSIG(d->wstatus)),
                     strsignal(WTERMSIG(d->wstatus)));
    else
      n += pld__catf(msg + n, sizeof msg - n, "exited with status %d",
                     WEXITSTATUS(d->wstatus));
  }
  pld__catf(msg + n, sizeof msg - n,
            "; the other devices were stopped and the program cannot run "
            "again");
  kill_devices(p);
  p->dead = 1;
  memcpy(p->dead_msg, msg, sizeof msg);
  return pld__fail_msg(PLD_ERR_CRASH, msg);
}

/* Returns the rank of a device process that died, or -1. */
static int find_dead(struct pld_program *p, int check_pids) {
  for (int r = 0; r < p->nranks; r++) {
    if (atomic_load(&p->devs[r].ctl->crash_signal))
      return r;
    if (check_pids && reap(&p->devs[r], 0))
      return r;
  }
  return -1;
}

int pld_program_prepare(pld_program *p) {
  if (!p)
    return pld__fail(PLD_ERR_ARG, "pld_program_prepare: p: expected a "
                                  "program, got NULL");
  if (p->dead)
    return pld__fail(PLD_ERR_STATE, "pld_program_prepare: %s", p->dead_msg);
  if (p->started)
    return PLD_OK;
  p->devs = pld__calloc((size_t)p->nranks, sizeof *p->devs);
  if (!p->devs)
    return pld__fail(PLD_ERR_NOMEM, "pld_program_prepare: out of memory");
  int st = pld__devices_map(p->devs, p->nranks, p->plans, &p->world);
  if (st) {
    pld__free(p->devs);
    p->devs = NULL;
    return st;
  }
  p->started = 1;
  /* The windows' region: every device process inherits it. */
  void *region = mmap(NULL, p->lay.total, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) {
    int e = errno;
    kill_devices(p);
    return pld__fail(PLD_ERR_SYSTEM,
                     "pld_program_prepare: mmap of %zu bytes of windows: %s",
                     p->lay.total, strerror(e));
  }
  p->region = region;
  pld__shm_fabric_init(&p->fabric, p->region, &p->lay, -1);
  fflush(NULL); /* nothing buffered is written twice */
  /* Hold the list while forking, so no mapping in it goes away (and its
   * address comes back as another) before the children dropped it. */
  pthread_mutex_lock(&live_mu);
  struct pld__mapping *foreign = NULL;
  int nforeign = 0;
  st = live_mappings(&foreign, &nforeign);
  for (int r = 0; r < p->nranks && st == PLD_OK; r++)
    st = pld__device_spawn(p->devs, p->nranks, r, &p->plans[r], p->world,
                           p->region, foreign, nforeign);
  if (st == PLD_OK) {
    p->live_next = live;
    live = p;
  }
  pthread_mutex_unlock(&live_mu);
  pld__free(foreign);
  if (st) {
    kill_devices(p);
    return st;
  }
  /* Wait until each device is up, or one died on the way. */
  int64_t deadline = pld__now_ns() + 30 * (int64_t)1000000000;
  for (;;) {
    uint32_t ev = atomic_load(&p->world->event);
    int up = 0;
    for (int r = 0; r < p->nranks; r++)
      up += (int)atomic_load_explicit(&p->devs[r].ctl->ready,
                                      memory_order_acquire);
    if (up == p->nranks)
      break;
    int dead = find_dead(p, 1);
    if (dead >= 0)
      return device_died(p, dead);
    if (pld__now_ns() > deadline) {
      kill_devices(p);
      return pld__fail(PLD_ERR_SYSTEM, "pld_program_prepare: %d of %d devices "
                                       "did not start within 30 s",
                       p->nranks - up, p->nranks);
    }
    struct pld__spin sleep_now = {0, &p->world->spinners, 1};
    pld__event_wait(&p->world->event, ev, &p->world->event_sleepers,
                    &sleep_now, LIVENESS_NS, 1);
  }
  for (int r = 0; r < p->nranks; r++)
    if (p->devs[r].ctl->status) {
      st = pld__fail_msg(p->devs[r].ctl->status, p->devs[r].ctl->msg);
      kill_devices(p);
      return st;
    }
  return PLD_OK;
}

/* The arguments of a run must be those the program was compiled for. */
static int check_run_args(const struct pld_program *p, int argc,
                          const pld_arg *argv) {
  const pld_signature *sig = p->host.sig;
  if (argc != p->nargs || (argc > 0 && !argv))
    return pld__fail(PLD_ERR_ARG,
                     "pld_program_run: %s: expected the %d arguments it was "
                     "compiled for, got %d",
                     sig->name, p->nargs, argc);
  for (int i = 0; i < argc; i++) {
    const pld_arg *want = &p->args[i], *got = &argv[i];
    const char *pn = sig->params[i].name;
    if (want->kind == PLD_ARG_TENSOR) {
      const struct pld__tensor *w = want->v.t, *g = got->v.t;
      char ws[128], gs[128] = "a scalar";
      pld__tensor_str(ws, sizeof ws, w);
      if (got->kind == PLD_ARG_TENSOR && g)
        pld__tensor_str(gs, sizeof gs, g);
      if (got->kind != PLD_ARG_TENSOR || !g || !(g->flags & PLD__T_HOST) ||
          g->dtype != w->dtype || g->ndim != w->ndim ||
          memcmp(g->shape, w->shape, (size_t)w->ndim * sizeof w->shape[0]))
        return pld__fail(PLD_ERR_ARG,
                         "pld_program_run: %s: parameter '%s' (%d of %d): "
                         "expected a host tensor %s as compiled, got %s",
                         sig->name, pn, i + 1, argc, ws, gs);
    } else if (got->kind != PLD_ARG_SCALAR || got->v.u != want->v.u) {
      return pld__fail(PLD_ERR_ARG,
                       "pld_program_run: %s: parameter '%s' (%d of %d): the "
                       "program was compiled for another value; scalars are "
                       "fixed at compile time, compile again",
                       sig->name, pn, i + 1, argc);
    }
  }
  return PLD_OK;
}

/* Copies tensor slices between the host arguments and device memory. */
static void copy_slices(struct pld_program *p, const pld_arg *argv, int in) {
  for (int r = 0; r < p->nranks; r++) {
    const struct pld__devplan *pl = &p->plans[r];
    for (int b = 0; b < pl->nbufs; b++) {
      const struct pld__devbuf *buf = &pl->bufs[b];
      unsigned char *host =
          (unsigned char *)argv[buf->host_arg].v.t->data + buf->host_offset;
      unsigned char *dev = p->devs[r].data + buf->offset;
      if (in && (buf->dirs & PLD_DIR_IN))
        memcpy(dev, host, buf->nbytes);
      else if (!in && (buf->dirs & PLD_DIR_OUT))
        memcpy(host, dev, buf->nbytes);
    }
  }
}

/* ---- the deadlock and wait-timeout watch --------------------------------- */

/* How long a quiet state must last, unchanged, to be called a deadlock. */
#define QUIET_NS 50000000 /* 50 ms */

struct watch {
  int quiet;          /* the last look found every device quiet */
  int64_t quiet_since;
  uint32_t progress;  /* signals sent by all devices then */
  int done;           /* devices done then */
};

static int slot_satisfied(struct pld_program *p, int r,
                          const struct pld__waitslot *w, int32_t *value) {
  *value = p->fabric.base.ops->peek(&p->fabric.base, w->buf, r, w->off);
  return w->cmp == PLD_WAIT_EQ ? *value == w->expected : *value >= w->expected;
}

/* Rank r finished this run. */
static int finished(const struct pld_program *p, const uint32_t *posted,
                    int r) {
  return atomic_load(&p->devs[r].ctl->done_seq) == posted[r];
}

/* Every device is finished, or has its AICPU waiting for its tasks, no
 * block running outside a wait and none ready to start; at least one wait
 * is blocked and none of them could return now. */
static int all_quiet(struct pld_program *p, const uint32_t *posted,
                     int *ndone) {
  int waits = 0;
  *ndone = 0;
  for (int r = 0; r < p->nranks; r++) {
    struct pld__devctl *c = p->devs[r].ctl;
    if (finished(p, posted, r)) {
      (*ndone)++;
      continue;
    }
    if (atomic_load(&c->aicpu_busy) || atomic_load(&c->running) > 0 ||
        atomic_load(&c->queued) > 0)
      return 0;
    for (int i = 0; i < PLD__MAX_CORES; i++) {
      const struct pld__waitslot *w = &c->waits[i];
      int32_t v;
      if (!atomic_load_explicit(&w->waiting, memory_order_acquire))
        continue;
      if (slot_satisfied(p, r, w, &v))
        return 0;
      waits++;
    }
  }
  return waits > 0;
}

/* The report: every blocked wait, who could still notify it (the
 * unfinished ranks of its window's domain), and the ranks already
 * finished. */
static int report_waits(struct pld_program *p, const uint32_t *posted,
                        int status, const char *head) {
  static _Thread_local char msg[PLD__MSG_MAX];
  size_t n = pld__catf(msg, sizeof msg, "pld_program_run: %s", head);
  for (int r = 0; r < p->nranks; r++) {
    struct pld__devctl *c = p->devs[r].ctl;
    for (int i = 0; i < PLD__MAX_CORES; i++) {
      const struct pld__waitslot *w = &c->waits[i];
      int32_t v;
      if (!atomic_load_explicit(&w->waiting, memory_order_acquire))
        continue;
      slot_satisfied(p, r, w, &v);
      n += pld__catf(msg + n, sizeof msg - n,
                     "\n  rank %d (device %d): kernel %s on %s core %d (block "
                     "%d of %d) waits on window '%s' (buffer #%d) cell [",
                     r, p->device_ids[r], w->kernel,
                     pld__core_type_name((pld_core_type)w->core_type), w->core,
                     w->block, w->blocks, w->window, w->buf);
      for (int d = 0; d < w->ndim; d++)
        n += pld__catf(msg + n, sizeof msg - n, d ? ", %lld" : "%lld",
                       (long long)w->idx[d]);
      n += pld__catf(msg + n, sizeof msg - n,
                     "] %s %d; it holds %d; waiting for %.1f ms; who could "
                     "still notify it:",
                     w->cmp == PLD_WAIT_EQ ? "==" : ">=", (int)w->expected,
                     (int)v, (double)(pld__now_ns() - w->since_ns) / 1e6);
      int any = 0;
      for (int q = 0; q < p->nranks; q++)
        if (p->winbufs[w->buf]->member[q] && !finished(p, posted, q)) {
          n += pld__catf(msg + n, sizeof msg - n, "%s rank %d", any ? "," : "",
                         q);
          any = 1;
        }
      if (!any)
        n += pld__catf(msg + n, sizeof msg - n, " no rank (all finished)");
    }
  }
  n += pld__catf(msg + n, sizeof msg - n, "\n  ranks already finished:");
  int any = 0;
  for (int r = 0; r < p->nranks; r++)
    if (finished(p, posted, r)) {
      n += pld__catf(msg + n, sizeof msg - n, " %d", r);
      any = 1;
    }
  if (!any)
    pld__catf(msg + n, sizeof msg - n, " none");
  return pld__fail_msg(status, msg);
}

/* Looks once; returns PLD_OK, or the status of a deadlock or timeout with
 * its report as the thread's message (the run is then being stopped). */
static int watch_waits(struct pld_program *p, const uint32_t *posted,
                       struct watch *wt) {
  int64_t now = pld__now_ns();
  for (int r = 0; r < p->nranks; r++) {
    struct pld__devctl *c = p->devs[r].ctl;
    if (finished(p, posted, r))
      continue;
    for (int i = 0; i < PLD__MAX_CORES; i++) {
      const struct pld__waitslot *w = &c->waits[i];
      if (atomic_load_explicit(&w->waiting, memory_order_acquire) &&
          now - w->since_ns > p->wait_timeout_ns) {
        char head[160];
        pld__catf(head, sizeof head,
                  "wait timeout: a wait was blocked longer than %lld ms "
                  "(pld_config.wait_timeout_ms or PLD_WAIT_TIMEOUT_MS):",
                  (long long)(p->wait_timeout_ns / 1000000));
        return report_waits(p, posted, PLD_ERR_TIMEOUT, head);
      }
    }
  }
  int done;
  if (!all_quiet(p, posted, &done)) {
    wt->quiet = 0;
    return PLD_OK;
  }
  uint32_t progress = 0;
  for (int r = 0; r < p->nranks; r++)
    progress += atomic_load(&p->devs[r].ctl->progress);
  if (!wt->quiet || progress != wt->progress || done != wt->done) {
    wt->quiet = 1;
    wt->quiet_since = now;
    wt->progress = progress;
    wt->done = done;
    return PLD_OK;
  }
  if (now - wt->quiet_since < QUIET_NS)
    return PLD_OK;
  return report_waits(p, posted, PLD_ERR_DEADLOCK,
                      "deadlock: these waits can never be satisfied (every "
                      "core of every device is finished or blocked in a wait, "
                      "and nothing is in flight):");
}

/* Tells every device to stop the run (why: PLD__ABORT_*), waking its
 * waiting cores. */
static void stop_run(struct pld_program *p, uint32_t why) {
  atomic_store_explicit(&p->world->abort, why, memory_order_release);
  p->fabric.base.ops->wake_all(&p->fabric.base);
}

int pld_program_run(pld_program *p, int argc, const pld_arg *argv) {
  if (!p)
    return pld__fail(PLD_ERR_ARG, "pld_program_run: p: expected a program, "
                                  "got NULL");
  if (p->dead)
    return pld__fail(PLD_ERR_STATE, "pld_program_run: %s", p->dead_msg);
  int st = check_run_args(p, argc, argv);
  if (st || (st = pld_program_prepare(p)))
    return st;

  struct pld__worldctl *w = p->world;
  atomic_store(&w->abort, PLD__ABORT_NONE);
  atomic_store(&w->tickets, 0);
  if (!p->keep_windows) /* fresh mappings are zero already */
    p->fabric.base.ops->zero_all(&p->fabric.base);
  copy_slices(p, argv, 1);
  uint32_t seq[PLD_MAX_RANKS_INLINE];
  uint32_t *posted = p->nranks <= PLD_MAX_RANKS_INLINE
                         ? seq
                         : pld__calloc((size_t)p->nranks, sizeof *posted);
  if (!posted)
    return pld__fail(PLD_ERR_NOMEM, "pld_program_run: out of memory");
  for (int r = 0; r < p->nranks; r++) {
    struct pld__devctl *c = p->devs[r].ctl;
    atomic_store_explicit(&c->cmd, PLD__CMD_RUN, memory_order_relaxed);
    posted[r] = atomic_load_explicit(&c->cmd_seq, memory_order_relaxed) + 1;
    pld__event_signal(&c->cmd_seq, &c->cmd_sleepers, 1);
  }
  struct pld__spin spin = pld__world_spin(w);

  int failed_rank = -1;
  struct watch wt = {0, 0, 0, 0};
  int64_t last_reap = pld__now_ns();
  int watch_st = PLD_OK;
  static _Thread_local char watch_msg[PLD__MSG_MAX];
  for (;;) {
    uint32_t ev = atomic_load_explicit(&w->event, memory_order_acquire);
    int done = 0;
    for (int r = 0; r < p->nranks; r++) {
      struct pld__devctl *c = p->devs[r].ctl;
      if (atomic_load_explicit(&c->done_seq, memory_order_acquire) !=
          posted[r])
        continue;
      done++;
      if (c->status && (failed_rank < 0 ||
                        c->ticket < p->devs[failed_rank].ctl->ticket))
        failed_rank = r;
    }
    int dead = find_dead(p, 0);
    if (dead >= 0) {
      st = device_died(p, dead);
      goto out;
    }
    if (done == p->nranks)
      break;
    if (failed_rank >= 0 && atomic_load(&w->abort) == PLD__ABORT_NONE)
      stop_run(p, PLD__ABORT_FAILED);
    if (!watch_st && (watch_st = watch_waits(p, posted, &wt))) {
      /* Keep the report: it is the run's result, whatever the devices say
       * when their waits are stopped. */
      memcpy(watch_msg, pld_last_error(), sizeof watch_msg);
      stop_run(p, watch_st == PLD_ERR_DEADLOCK ? PLD__ABORT_DEADLOCK
                                               : PLD__ABORT_TIMEOUT);
    }
    pld__event_wait(&w->event, ev, &w->event_sleepers, &spin,
                    wt.quiet ? QUIET_NS / 4 : LIVENESS_NS, 1);
    /* A device killed from outside rings no bell: look for it every
     * LIVENESS_NS, however often the loop wakes. */
    int64_t now = pld__now_ns();
    if (now - last_reap >= LIVENESS_NS) {
      last_reap = now;
      if ((dead = find_dead(p, 1)) >= 0) {
        st = device_died(p, dead);
        goto out;
      }
    }
  }
  if (watch_st) {
    st = pld__fail_msg(watch_st, watch_msg);
  } else if (failed_rank >= 0) {
    struct pld__devctl *c = p->devs[failed_rank].ctl;
    st = pld__fail_msg(c->status, c->msg);
  } else {
    copy_slices(p, argv, 0);
    st = PLD_OK;
  }
out:
  if (posted != seq)
    pld__free(posted);
  return st;
}

void pld_program_destroy(pld_program *p) {
  if (!p)
    return;
  if (p->started) {
    for (int r = 0; r < p->nranks; r++) {
      struct pld__devctl *c = p->devs[r].ctl;
      atomic_store_explicit(&c->cmd, PLD__CMD_STOP, memory_order_relaxed);
      pld__event_signal(&c->cmd_seq, &c->cmd_sleepers, 1);
    }
    /* Give each device a moment to stop its cores and exit by itself. */
    int64_t deadline = pld__now_ns() + 2 * (int64_t)1000000000;
    for (int r = 0; r < p->nranks; r++)
      while (!reap(&p->devs[r], 0) && pld__now_ns() < deadline) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
      }
    kill_devices(p);
  }
  pld__plans_free(p);
  pld__windows_free(p);
  pld__free(p->device_ids);
  pld__free(p->args);
  pld__free(p->arg_meta);
  pld__free(p->artifact_dir);
  pld__free(p);
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
