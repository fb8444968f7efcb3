/* device/sched.c: a device's AI cores: kernel launches as tasks ordered
 * by their tensor regions, blocks on core threads, deferred waits
 * (device/sched.h). */
#include "device/sched.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "core/kctx.h"

_Thread_local const struct pld__core *pld__running_core;

/* A tensor region a task touches. */
struct region {
  const void *base;
  size_t nbytes;
  int writes;
};

struct task {
  pld_kernel_fn kernel;
  int32_t launched;   /* the launch's block count: read without the lock */
  int32_t blocks;     /* blocks to run (cut short when cancelled) */
  int32_t next_block; /* next block to hand to a core */
  int32_t done_blocks;
  int32_t seq; /* launch number in the dispatch, from 0 */
  /* The race detector's clocks (core/race.h), NULL when it is off: what
   * the task's blocks start from, and the join of their ends. */
  uint32_t *vc_start, *vc_end;
  int argc;
  pld_arg *argv;
  struct pld__tensor *tensors;
  int nregions;
  struct region *regions;
  int ndeferred;            /* deferred waits pending (watch slots) */
  int waiting_on;           /* unfinished tasks this one depends on */
  struct task **dependents; /* tasks waiting on this one */
  int ndependents, capdependents;
  int finished;
  struct task *next;       /* submission order */
  struct task *ready_next; /* ready queue of its core type */
};

struct corethread {
  pthread_t thread;
  struct pld__sched *s;
  struct pld__core core;
};

struct coretype {
  int max;                   /* cores of this type on the device */
  int spawned;               /* threads started */
  int idle;                  /* threads asleep waiting for work */
  int busy;                  /* threads running a block */
  int pending;               /* blocks in the ready queue not handed out yet */
  _Atomic uint32_t work_seq; /* bumped when work arrives: pollers watch it */
  struct corethread *threads;
  pthread_cond_t work;
  struct task *ready_head, *ready_tail;
  struct pld__core_spec spec;
};

struct pld__sched {
  pthread_mutex_t mu;
  pthread_cond_t drained;
  struct coretype types[2]; /* indexed by pld_core_type */
  struct task *head, *tail; /* every task of the current dispatch */
  int unfinished;
  _Atomic uint32_t finish_seq; /* bumped when unfinished reaches 0 */
  struct pld__spin spin;
  _Atomic uint32_t local_awake; /* without an env */
  int stopping;
  int cancelled;
  int status; /* first block failure */
  char msg[PLD__MSG_MAX];
  int rank, device;
  const struct pld__comm_env *env;
  const struct task *published_head[2]; /* see publish_queued */
  /* Deferred waits: the task of each in-use slot (NULL: free), and the
   * count in use. */
  struct task *deferred[PLD__MAX_DEFERRED];
  int ndeferred;
  int32_t submitted;     /* tasks of the current dispatch */
  uint32_t *vc_finished; /* race detector: the join of finished tasks */
};

/* Called with mu held: the host's deadlock watch sees the blocks ready to
 * start and the cores holding blocks, per core type, and which task is
 * first in line (its name copied only when another task comes first). */
static void publish_queued(struct pld__sched *s) {
  if (!s->env)
    return;
  for (int i = 0; i < 2; i++) {
    struct coretype *ct = &s->types[i];
    struct pld__readyq *q = &s->env->watch->queue[i];
    const struct task *head = ct->ready_head;
    if (head && head != s->published_head[i])
      pld__name_copy(q->kernel, sizeof q->kernel, head->kernel.sig->name);
    s->published_head[i] = head;
    q->next_block = head ? head->next_block : 0;
    q->nblocks = head ? head->blocks : 0;
    atomic_store(&q->held, ct->busy);
    atomic_store(&q->blocks, ct->pending);
  }
}

int pld__sched_create(const pld_platform_info *plat, int rank, int device,
                      const struct pld__comm_env *env,
                      struct pld__sched **out) {
  struct pld__sched *s = pld__calloc(1, sizeof *s);
  if (!s)
    return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory (scheduler)");
  s->rank = rank;
  s->device = device;
  if (env) {
    s->spin = env->spin;
  } else {
    s->spin.ns = pld__tunables()->PLD_SPIN_US * 1000;
    s->spin.awake = &s->local_awake;
    s->spin.cpus = pld__cpus();
  }
  s->env = env;
  /* Made on the AICPU's thread, which the race detector knows by now. */
  if (pld__race_on() && !(s->vc_finished = pld__race_vc_new())) {
    pld__free(s);
    return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory (scheduler)");
  }
  s->types[PLD_CORE_VECTOR].max = plat->vector_cores;
  s->types[PLD_CORE_VECTOR].spec = (struct pld__core_spec){
      PLD_CORE_VECTOR, 0, plat->ub_bytes, "Unified Buffer", 0, 0, 0};
  s->types[PLD_CORE_CUBE].max = plat->cube_cores;
  s->types[PLD_CORE_CUBE].spec =
      (struct pld__core_spec){PLD_CORE_CUBE,   0,
                              plat->l1_bytes,  "L1 buffer",
                              plat->l0a_bytes, plat->l0b_bytes,
                              plat->l0c_bytes};
  for (int t = 0; t < 2; t++) {
    s->types[t].threads =
        pld__calloc((size_t)s->types[t].max, sizeof *s->types[t].threads);
    if (!s->types[t].threads) {
      pld__free(s->types[0].threads);
      pld__free(s);
      return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory (cores)");
    }
    pthread_cond_init(&s->types[t].work, NULL);
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->drained, NULL);
  *out = s;
  return PLD_OK;
}

static int spawn_cores(struct pld__sched *s, struct coretype *ct);

/* Called with mu held: t's blocks may start; enough cores are there to
 * take them and the idle ones are told. */
static void ready_push(struct pld__sched *s, struct task *t) {
  struct coretype *ct = &s->types[t->kernel.sig->core_type];
  t->ready_next = NULL;
  if (ct->ready_tail)
    ct->ready_tail->ready_next = t;
  else
    ct->ready_head = t;
  ct->ready_tail = t;
  ct->pending += t->blocks - t->next_block;
  publish_queued(s);
  atomic_fetch_add_explicit(&ct->work_seq, 1, memory_order_release);
  spawn_cores(s, ct);
  if (ct->idle)
    pthread_cond_broadcast(&ct->work);
}

static void ready_pop(struct coretype *ct) {
  ct->ready_head = ct->ready_head->ready_next;
  if (!ct->ready_head)
    ct->ready_tail = NULL;
}

/* Called with mu held. */
static void unfinished_dec(struct pld__sched *s) {
  if (--s->unfinished == 0) {
    atomic_fetch_add_explicit(&s->finish_seq, 1, memory_order_release);
    pthread_cond_broadcast(&s->drained);
  }
}

/* Called with mu held when t has handed out and completed all its blocks. */
static void task_finish(struct pld__sched *s, struct task *t) {
  t->finished = 1;
  pld__race_vc_join(s->vc_finished, t->vc_end);
  for (int i = 0; i < t->ndependents; i++) {
    struct task *d = t->dependents[i];
    pld__race_vc_join(d->vc_start, t->vc_end);
    if (--d->waiting_on == 0 && !d->finished)
      ready_push(s, d);
  }
  unfinished_dec(s);
}

/* ---- deferred waits -------------------------------------------------- */

/* The watch slot of deferred wait i. */
static struct pld__coreslot *deferred_slot(struct pld__sched *s, int i) {
  return &s->env->watch->slots[PLD__MAX_CORES + i];
}

/* Called with mu held: frees deferred wait i (satisfied, or cancelled). */
static void deferred_drop(struct pld__sched *s, int i) {
  struct pld__coreslot *w = deferred_slot(s, i);
  pld__slot_write_begin(w);
  atomic_store_explicit(&w->state, PLD__CORE_IDLE, memory_order_relaxed);
  pld__slot_write_end(w);
  s->deferred[i]->ndeferred--;
  s->deferred[i] = NULL;
  s->ndeferred--;
}

/* Called with mu held: t is finished once its blocks are done and its
 * deferred waits satisfied. */
static void task_finish(struct pld__sched *s, struct task *t);
static void try_finish(struct pld__sched *s, struct task *t) {
  if (!t->finished && !t->ndeferred && t->done_blocks == t->blocks &&
      t->next_block == t->blocks)
    task_finish(s, t);
}

/* Called with mu held: block c of task t ended with deferred waits; they
 * take watch slots until satisfied.  Returns PLD_OK or, with no slot
 * left, the block's failure. */
static int deferred_take(struct pld__sched *s, struct task *t,
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

/* Called with mu held: drops the deferred waits now satisfied and
 * finishes the tasks that no longer wait.  Returns how many remain. */
static int deferred_poll(struct pld__sched *s) {
  struct pld__fabric *f = s->env ? s->env->fabric : NULL;
  for (int i = 0; s->ndeferred && i < PLD__MAX_DEFERRED; i++) {
    struct task *t = s->deferred[i];
    if (!t)
      continue;
    const struct pld__coreslot *w = deferred_slot(s, i);
    int32_t value;
    if (!pld__cell_satisfied(f, s->rank, w->buf, (size_t)w->off, w->expected,
                             w->cmp, &value, t->vc_end))
      continue;
    deferred_drop(s, i);
    atomic_fetch_add_explicit(&s->env->watch->progress, 1,
                              memory_order_relaxed);
    try_finish(s, t);
  }
  return s->ndeferred;
}

/* Called with mu held: no further block starts; tasks with no running
 * block finish now. */
static void cancel_all(struct pld__sched *s) {
  if (s->cancelled)
    return;
  s->cancelled = 1;
  for (int i = 0; s->ndeferred && i < PLD__MAX_DEFERRED; i++)
    if (s->deferred[i])
      deferred_drop(s, i);
  for (int t = 0; t < 2; t++) {
    s->types[t].ready_head = s->types[t].ready_tail = NULL;
    s->types[t].pending = 0;
  }
  publish_queued(s);
  for (struct task *t = s->head; t; t = t->next) {
    if (t->finished)
      continue;
    t->blocks = t->next_block;
    t->ndependents = 0; /* they are cancelled here too */
    if (t->done_blocks == t->blocks) {
      t->finished = 1;
      unfinished_dec(s);
    }
  }
}

/* Publishes that core c starts its block now (for the host's kernel time
 * limit, deadlock report and crash report).  Returns its slot, or NULL
 * without a watch. */
static struct pld__coreslot *slot_begin(struct pld__sched *s,
                                        const struct pld__core *c) {
  if (!s->env)
    return NULL;
  struct pld__coreslot *slot = &s->env->watch->slots[c->slot];
  pld__slot_write_begin(slot);
  pld__slot_set_block(slot, (int32_t)c->spec.type, c->spec.index, c->block_idx,
                      c->block_num, c->kernel);
  atomic_store_explicit(&slot->since_ns, pld__now_ns(), memory_order_relaxed);
  atomic_store_explicit(&slot->state, PLD__CORE_RUNNING, memory_order_relaxed);
  pld__slot_write_end(slot);
  return slot;
}

/* Bytes of each core thread's signal stack: the crash handler must run
 * even when a kernel overflowed its stack. */
#define ALT_STACK_BYTES ((size_t)64 * 1024)

static void *core_main(void *arg) {
  struct corethread *ct = arg;
  struct pld__sched *s = ct->s;
  struct coretype *type = &s->types[ct->core.spec.type];
  pld_core k = {&ct->core};
  stack_t alt = {pld__malloc(ALT_STACK_BYTES), 0, ALT_STACK_BYTES};
  if (alt.ss_sp)
    sigaltstack(&alt, NULL);
  pld__awake(&s->spin);
  {
    char lane[16];
    const char *type_name = pld__core_type_name(ct->core.spec.type);
    snprintf(lane, sizeof lane, "%s%d", type_name, ct->core.spec.index);
    struct pld__tbuf *buf =
        s->env && s->env->trace
            ? pld__trace_tbuf(s->env->trace, 1 + ct->core.slot)
            : NULL;
    if (buf)
      snprintf(buf->name, sizeof buf->name, "%s core %d", type_name,
               ct->core.spec.index);
    pld__observe_as(s->rank, s->device, lane, buf);
    pld__race_attach(s->env ? s->env->race : NULL, s->rank, 1 + ct->core.slot);
  }
  pthread_mutex_lock(&s->mu);
  for (;;) {
    /* Poll a little for the next block before sleeping: dispatches come in
     * bursts, and a sleeping core costs a wake-up on the critical path. */
    if (!s->stopping && !type->ready_head) {
      uint32_t seq =
          atomic_load_explicit(&type->work_seq, memory_order_acquire);
      pthread_mutex_unlock(&s->mu);
      pld__spin_change(&type->work_seq, seq, &s->spin);
      pthread_mutex_lock(&s->mu);
    }
    while (!s->stopping && !type->ready_head) {
      type->idle++;
      int64_t began = pld__sleep_begin(&s->spin);
      pthread_cond_wait(&type->work, &s->mu);
      pld__sleep_end(&s->spin, began);
      type->idle--;
    }
    if (s->stopping)
      break;
    struct task *t = type->ready_head;
    int32_t block = t->next_block++;
    if (t->next_block == t->blocks)
      ready_pop(type);
    type->pending--;
    type->busy++;
    if (s->env)
      atomic_fetch_add(&s->env->watch->running, 1);
    publish_queued(s);
    pthread_mutex_unlock(&s->mu);

    pld__core_begin(&ct->core, t->kernel.sig->name, s->rank, s->device, block,
                    t->launched);
    struct pld__coreslot *slot = slot_begin(s, &ct->core);
    struct pld__tev e;
    int observed = pld__observed(PLD__TEV_BLOCK);
    if (observed) {
      pld__tev_init(&e, PLD__TEV_BLOCK, 0, t->kernel.sig->name);
      e.a = block;
      e.b = t->launched;
      e.c = t->seq;
      pld__obs_begin(&e);
    }
    pld__running_core = &ct->core;
    pld__race_block_begin(t->vc_start, &ct->core);
    t->kernel.entry(k, t->argv);
    pld__running_core = NULL;
    if (observed)
      pld__obs_end(&e);
    if (slot) {
      pld__slot_write_begin(slot);
      atomic_store_explicit(&slot->state, PLD__CORE_IDLE, memory_order_relaxed);
      pld__slot_write_end(slot);
    }

    pthread_mutex_lock(&s->mu);
    pld__race_block_end(t->vc_end);
    type->busy--;
    if (s->env) {
      atomic_fetch_sub(&s->env->watch->running, 1);
      atomic_fetch_add_explicit(&s->env->watch->progress, 1,
                                memory_order_relaxed);
    }
    publish_queued(s);
    if (ct->core.status && !s->status) {
      s->status = ct->core.status;
      memcpy(s->msg, ct->core.msg, sizeof s->msg);
    }
    t->done_blocks++;
    if (!ct->core.status && ct->core.ndeferred && !s->cancelled &&
        deferred_take(s, t, &ct->core) && !s->status) {
      s->status = ct->core.status;
      memcpy(s->msg, ct->core.msg, sizeof s->msg);
    }
    if (ct->core.status) {
      cancel_all(s);
    } else {
      /* A deferred wait may be satisfied already; this block's end may
       * finish its task, or another's whose waits are satisfied. */
      if (s->ndeferred)
        deferred_poll(s);
      try_finish(s, t);
    }
    if (s->cancelled && !t->finished && t->done_blocks == t->blocks) {
      t->finished = 1;
      unfinished_dec(s);
    }
  }
  pthread_mutex_unlock(&s->mu);
  pld__asleep(&s->spin);
  if (alt.ss_sp) {
    stack_t off = {NULL, SS_DISABLE, 0};
    sigaltstack(&off, NULL);
    pld__free(alt.ss_sp);
  }
  return NULL;
}

/* Called with mu held: a thread for each pending block, while the device
 * has cores left.  Threads not running a block (polling or asleep) take
 * pending blocks first. */
static int spawn_cores(struct pld__sched *s, struct coretype *ct) {
  while (ct->spawned - ct->busy < ct->pending && ct->spawned < ct->max) {
    struct corethread *th = &ct->threads[ct->spawned];
    struct pld__core_spec spec = ct->spec;
    spec.index = ct->spawned;
    int st = pld__core_init(&th->core, &spec);
    if (st)
      return st;
    /* Wait slots: vector cores first, then cube cores. */
    th->core.env = s->env;
    th->core.slot = spec.type == PLD_CORE_VECTOR
                        ? spec.index
                        : s->types[PLD_CORE_VECTOR].max + spec.index;
    th->s = s;
    if (pthread_create(&th->thread, NULL, core_main, th) != 0) {
      /* The running cores will get through the work; with none running,
       * the submit reports it. */
      pld__core_release(&th->core);
      return PLD_ERR_SYSTEM;
    }
    ct->spawned++;
  }
  return PLD_OK;
}

static void task_free(struct task *t) {
  pld__race_vc_free(t->vc_start);
  pld__race_vc_free(t->vc_end);
  pld__free(t->argv);
  pld__free(t->tensors);
  pld__free(t->regions);
  pld__free(t->dependents);
  pld__free(t);
}

static int conflicts(const struct task *a, const struct task *b) {
  for (int i = 0; i < a->nregions; i++)
    for (int j = 0; j < b->nregions; j++)
      if ((a->regions[i].writes || b->regions[j].writes) &&
          pld__ranges_overlap(a->regions[i].base, a->regions[i].nbytes,
                              b->regions[j].base, b->regions[j].nbytes))
        return 1;
  return 0;
}

static int add_dependent(struct task *on, struct task *t) {
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

int pld__sched_submit(struct pld__sched *s, const struct pld__task_spec *spec) {
  struct task *t = pld__calloc(1, sizeof *t);
  int n = spec->argc;
  if (t) {
    t->argv = pld__calloc((size_t)n, sizeof *t->argv);
    t->tensors = pld__calloc((size_t)n, sizeof *t->tensors);
    t->regions = pld__calloc((size_t)n, sizeof *t->regions);
  }
  if (!t || !t->argv || !t->tensors || !t->regions) {
    if (t)
      task_free(t);
    return pld__fail(PLD_ERR_NOMEM, "pld_launch: out of memory for a task");
  }
  t->kernel = spec->kernel;
  t->launched = t->blocks = spec->blocks;
  if (pld__race_on()) {
    t->vc_start = pld__race_vc_new();
    t->vc_end = pld__race_vc_new();
    if (!t->vc_start || !t->vc_end) {
      task_free(t);
      return pld__fail(PLD_ERR_NOMEM, "pld_launch: out of memory for a task");
    }
    pld__race_launch(t->vc_start);
  }
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

  pthread_mutex_lock(&s->mu);
  t->seq = s->submitted++;
  int st = PLD_OK;
  for (struct task *o = s->head; o && st == PLD_OK; o = o->next)
    if (conflicts(o, t)) {
      if (!o->finished)
        st = add_dependent(o, t);
      else /* ordered before t all the same */
        pld__race_vc_join(t->vc_start, o->vc_end);
    }
  /* Listed even when it cannot run, so the drain frees it: it may be in
   * some dependents lists already. */
  if (s->tail)
    s->tail->next = t;
  else
    s->head = t;
  s->tail = t;
  if (st) {
    t->finished = 1;
    pthread_mutex_unlock(&s->mu);
    return pld__fail(PLD_ERR_NOMEM, "pld_launch: out of memory for a task");
  }
  s->unfinished++;
  if (s->cancelled) {
    t->blocks = 0;
    t->finished = 1;
    unfinished_dec(s);
  } else if (t->waiting_on == 0) {
    ready_push(s, t);
    if (s->types[sig->core_type].spawned == 0) {
      cancel_all(s);
      st = pld__fail(PLD_ERR_SYSTEM,
                     "pld_launch: rank %d, device %d: cannot start a %s core "
                     "thread",
                     s->rank, s->device,
                     pld__core_type_name((pld_core_type)sig->core_type));
    }
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

int pld__sched_drain(struct pld__sched *s, char *msg, size_t cap) {
  pthread_mutex_lock(&s->mu);
  if (s->unfinished > 0) {
    uint32_t seq = atomic_load_explicit(&s->finish_seq, memory_order_acquire);
    pthread_mutex_unlock(&s->mu);
    pld__spin_change(&s->finish_seq, seq, &s->spin);
    pthread_mutex_lock(&s->mu);
  }
  while (s->unfinished > 0) {
    if (s->env && atomic_load_explicit(s->env->abort, memory_order_acquire)) {
      if (!s->status) {
        s->status = PLD_ERR_ABORTED;
        pld__catf(s->msg, sizeof s->msg,
                  "rank %d (device %d): stopped because another rank failed",
                  s->rank, s->device);
      }
      cancel_all(s);
    }
    if (s->unfinished == 0)
      break;
    if (s->ndeferred) {
      /* Deferred waits: the AICPU watches their cells, woken by the
       * signals this device receives (and, while blocks run, often, for
       * their ends). */
      struct pld__fabric *f = s->env->fabric;
      uint32_t seen = f->ops->events(f);
      if (deferred_poll(s) && s->unfinished > 0) {
        int running = s->types[0].busy + s->types[1].busy;
        pthread_mutex_unlock(&s->mu);
        f->ops->wait_events(f, seen, -1, 0, &s->spin,
                            running ? PLD__MS(PLD_DEFERRED_POLL_MS)
                                    : PLD__MS(PLD_ABORT_POLL_MS));
        pthread_mutex_lock(&s->mu);
      }
      continue;
    }
    /* The abort flag is polled. */
    struct timespec ts = pld__realtime_after(PLD__MS(PLD_DRAIN_POLL_MS));
    int64_t began = pld__sleep_begin(&s->spin);
    pthread_cond_timedwait(&s->drained, &s->mu, &ts);
    pld__sleep_end(&s->spin, began);
  }
  int st = s->status;
  if (st && msg)
    pld__catf(msg, cap, "%s", s->msg);
  /* The AICPU (draining) learns what its tasks did. */
  pld__race_absorb(s->vc_finished);
  pld__race_vc_clear(s->vc_finished);
  struct task *t = s->head;
  s->head = s->tail = NULL;
  s->published_head[0] = s->published_head[1] = NULL;
  s->status = PLD_OK;
  s->cancelled = 0;
  s->submitted = 0;
  pthread_mutex_unlock(&s->mu);
  while (t) {
    struct task *next = t->next;
    task_free(t);
    t = next;
  }
  return st;
}

int32_t pld__sched_submitted(struct pld__sched *s) {
  pthread_mutex_lock(&s->mu);
  int32_t n = s->submitted;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void pld__sched_destroy(struct pld__sched *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  for (int t = 0; t < 2; t++)
    pthread_cond_broadcast(&s->types[t].work);
  pthread_mutex_unlock(&s->mu);
  for (int t = 0; t < 2; t++) {
    struct coretype *ct = &s->types[t];
    for (int i = 0; i < ct->spawned; i++) {
      pthread_join(ct->threads[i].thread, NULL);
      pld__core_release(&ct->threads[i].core);
    }
    pthread_cond_destroy(&ct->work);
    pld__free(ct->threads);
  }
  pthread_cond_destroy(&s->drained);
  pthread_mutex_destroy(&s->mu);
  pld__race_vc_free(s->vc_finished);
  pld__free(s);
}
