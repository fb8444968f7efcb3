/* device/sched.c: a device's AI cores (device/sched.h): the ready queues
 * of tasks (device/sched_task.c orders them by their tensor regions),
 * blocks run to completion on the thread at hand (the AICPU while it
 * drains, or a core thread), another thread taking over the queue when a
 * block blocks, the drain; deferred waits live in device/sched_defer.c. */
#include "device/sched.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "core/kctx.h"
#include "device/sched_state.h"

_Thread_local const struct pld__core *pld__running_core;

/* Bytes of each thread's signal stack: the crash handler must run even
 * when a kernel overflowed its stack. */
#define ALT_STACK_BYTES ((size_t)64 * 1024)

/* The calling thread as the scheduler knows it: the AICPU (type -1) or a
 * core thread of one type, and whether the block it runs is blocked in a
 * wait (it then runs nothing else until the wait returns). */
static _Thread_local struct {
  struct pld__sched *s;
  int type;
  int blocked;
} me;

/* Called with mu held: the host's deadlock watch sees the blocks ready to
 * start and the cores holding blocks, per core type, and which task is
 * first in line (its name copied only when another task comes first). */
static void publish_queued(struct pld__sched *s) {
  atomic_store_explicit(&s->queued,
                        s->types[0].pending + s->types[1].pending +
                            s->types[0].nparts + s->types[1].nparts +
                            s->mix_pending,
                        memory_order_relaxed);
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
  if (pld__sched_hooks_open(s, env)) {
    pld__free(s);
    return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory (scheduler)");
  }
  s->types[PLD_CORE_VECTOR].max = plat->vector_cores;
  s->ratio = pld__mix_ratio(plat->vector_cores, plat->cube_cores);
  s->types[PLD_CORE_VECTOR].spec = (struct pld__core_spec){
      PLD_CORE_VECTOR, 0, plat->ub_bytes, "Unified Buffer", 0, 0, 0};
  s->types[PLD_CORE_CUBE].max = plat->cube_cores;
  s->types[PLD_CORE_CUBE].spec =
      (struct pld__core_spec){PLD_CORE_CUBE,   0,
                              plat->l1_bytes,  "L1 buffer",
                              plat->l0a_bytes, plat->l0b_bytes,
                              plat->l0c_bytes};
  for (int t = 0; t < 2; t++) {
    struct coretype *ct = &s->types[t];
    ct->free_core = -1;
    ct->threads = pld__calloc((size_t)ct->max, sizeof *ct->threads);
    if (!ct->threads) {
      for (int i = 0; i < t; i++)
        pld__free(s->types[i].threads);
      pld__free(s);
      return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory (cores)");
    }
    pthread_cond_init(&ct->work, NULL);
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->drained, NULL);
  /* The AICPU runs blocks too: its crash handler must run even when a
   * kernel overflowed the stack (the core threads have theirs). */
  stack_t old;
  if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
    stack_t alt = {pld__malloc(ALT_STACK_BYTES), 0, ALT_STACK_BYTES};
    if (alt.ss_sp && sigaltstack(&alt, NULL) == 0)
      s->alt_stack = alt.ss_sp;
    else
      pld__free(alt.ss_sp);
  }
  s->aicpu_free = 1;
  me.s = s;
  me.type = -1;
  me.blocked = 0;
  *out = s;
  return PLD_OK;
}

static int spawn_worker(struct pld__sched *s, struct coretype *ct);
static void cancel_all(struct pld__sched *s);

/* Called with mu held: a block of ct is ready and a core free for it. */
static int can_take(const struct coretype *ct) {
  return ct->ready_head && ct->busy < ct->max;
}

/* Called with mu held: a block of a mixed kernel is ready and a cluster
 * free for it (a cube core and `ratio` vector cores). */
static int can_take_mix(const struct pld__sched *s) {
  const struct coretype *cube = &s->types[PLD_CORE_CUBE],
                        *vec = &s->types[PLD_CORE_VECTOR];
  return s->mix_head && s->ratio > 0 && cube->busy < cube->max &&
         vec->busy + s->ratio <= vec->max;
}

/* Called with mu held: a thread of type (-1: the AICPU, which runs both)
 * has something to take: a part of a mixed block, a block. */
static int has_work(const struct pld__sched *s, int type) {
  for (int i = 0; i < 2; i++)
    if ((type < 0 || type == i) &&
        (s->types[i].nparts > 0 || can_take(&s->types[i])))
      return 1;
  return can_take_mix(s);
}

/* Called with mu held: ct has blocks ready to start (and cores free for
 * them), or parts of mixed blocks (their cores held), that may lack a
 * thread; ready mixed blocks count as the cube type's.  A block runs to
 * completion on the thread that takes it, so one thread that will look
 * for work is enough; another is woken (or started) when none will, or
 * when a CPU is free and fewer threads look than there are blocks to
 * run. */
static void want_runner(struct pld__sched *s, struct coretype *ct) {
  int type = (int)(ct - s->types);
  int work =
      ct->max - ct->busy < ct->pending ? ct->max - ct->busy : ct->pending;
  if (type == PLD_CORE_CUBE && can_take_mix(s))
    work += s->mix_pending;
  work += ct->nparts;
  if (work <= 0)
    return;
  int self = me.s == s && !me.blocked && (me.type == -1 || me.type == type);
  int near = ct->looking + ct->woken + self +
             (s->aicpu_free && !(me.s == s && me.type == -1));
  if (near > 0) {
    uint32_t awake = atomic_load_explicit(s->spin.awake, memory_order_relaxed);
    if (near >= work ||
        awake + (uint32_t)(s->types[0].woken + s->types[1].woken) >=
            s->spin.cpus)
      return;
  }
  if (ct->idle > ct->woken) {
    ct->woken++;
    pthread_cond_signal(&ct->work);
  } else if (ct->spawned < ct->max && spawn_worker(s, ct) && near == 0) {
    /* No thread will ever run these blocks. */
    if (!s->status) {
      s->status = PLD_ERR_SYSTEM;
      pld__catf(s->msg, sizeof s->msg,
                "rank %d, device %d: cannot start a %s core thread for "
                "the blocks launched",
                s->rank, s->device, pld__core_type_name((pld_core_type)type));
    }
    cancel_all(s);
  }
}

/* Called with mu held: a change the draining AICPU must see. */
static void drain_bump(struct pld__sched *s) {
  atomic_fetch_add_explicit(&s->drain_seq, 1, memory_order_release);
  if (s->aicpu_asleep)
    pthread_cond_broadcast(&s->drained);
}

static void task_finish(struct pld__sched *s, struct task *t);
static void block_end(struct pld__sched *s, struct task *t,
                      struct pld__core *const *cores, int n);
static void mix_end(struct pld__sched *s, struct mixblock *mb);

/* Called with mu held: t, ready, reads its segments and block count; a
 * value out of bounds fails the dispatch as a block's failure does.
 * Returns whether t may start. */
static int __attribute__((noinline))
dynamic_ready(struct pld__sched *s, struct task *t) {
  char m[PLD__MSG_MAX];
  const char *what = "";
  int st = pld__sched_task_resolve(t, &what, m, sizeof m);
  if (!st)
    return 1;
  if (!s->status) {
    s->status = st;
    pld__catf(s->msg, sizeof s->msg, "%s (rank %d, device %d): %s", what,
              s->rank, s->device, m);
  }
  t->blocks = t->next_block = t->done_blocks = 0;
  cancel_all(s); /* finishes t, which runs no block */
  return 0;
}

/* Called with mu held: t's blocks may start. */
static void ready_push(struct pld__sched *s, struct task *t) {
  if (t->dynamic && !dynamic_ready(s, t))
    return;
  if (t->blocks == 0) { /* pld_launch_by with no block to run */
    task_finish(s, t);
    return;
  }
  /* Mixed tasks have a queue of their own; their blocks count as the cube
   * type's for threads (want_runner). */
  const int mixed = t->kernel.sig->core_type == PLD_CORE_MIX;
  struct coretype *ct =
      &s->types[mixed ? PLD_CORE_CUBE : t->kernel.sig->core_type];
  struct task **head = mixed ? &s->mix_head : &ct->ready_head,
              **tail = mixed ? &s->mix_tail : &ct->ready_tail;
  t->ready_next = NULL;
  if (*tail)
    (*tail)->ready_next = t;
  else
    *head = t;
  *tail = t;
  *(mixed ? &s->mix_pending : &ct->pending) += t->blocks - t->next_block;
  publish_queued(s);
  for (int i = 0; i < 2; i++)
    if (mixed || &s->types[i] == ct)
      atomic_fetch_add_explicit(&s->types[i].work_seq, 1, memory_order_release);
  drain_bump(s);
  want_runner(s, ct);
}

static void ready_pop(struct coretype *ct) {
  ct->ready_head = ct->ready_head->ready_next;
  if (!ct->ready_head)
    ct->ready_tail = NULL;
}

/* Called with mu held. */
static void unfinished_dec(struct pld__sched *s) {
  if (--s->unfinished == 0)
    drain_bump(s);
}

/* Called with mu held when t has handed out and completed all its blocks. */
static void task_finish(struct pld__sched *s, struct task *t) {
  t->finished = 1;
  if (s->nhooks)
    pld__sched_hooks_task_done(s, t);
  for (int i = 0; i < t->ndependents; i++) {
    struct task *d = t->dependents[i];
    if (--d->waiting_on == 0 && !d->finished)
      ready_push(s, d);
  }
  unfinished_dec(s);
}

/* Called with mu held: t is finished once its blocks are done and its
 * deferred waits satisfied. */
static void try_finish(struct pld__sched *s, struct task *t) {
  if (!t->finished && !t->ndeferred && t->done_blocks == t->blocks &&
      t->next_block == t->blocks)
    task_finish(s, t);
}

/* Called with mu held: drops the deferred waits now satisfied and
 * finishes the tasks that no longer wait.  Returns how many remain. */
static int deferred_poll(struct pld__sched *s) {
  struct task *done[PLD__MAX_DEFERRED];
  int ndone;
  int left = pld__sched_defer_poll(s, done, &ndone);
  for (int i = 0; i < ndone; i++)
    try_finish(s, done[i]);
  return left;
}

/* Called with mu held: no further block starts; tasks with no running
 * block finish now. */
static void cancel_all(struct pld__sched *s) {
  if (s->cancelled)
    return;
  s->cancelled = 1;
  pld__sched_defer_drop_all(s);
  for (int t = 0; t < 2; t++) {
    s->types[t].ready_head = s->types[t].ready_tail = NULL;
    s->types[t].pending = 0;
  }
  s->mix_head = s->mix_tail = NULL;
  s->mix_pending = 0;
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

static void on_wait(struct pld__core *c, int event);

/* Called with mu held: the dispatch fails for want of memory (what: the
 * message after the rank and device), unless it failed already; every
 * block not begun is cancelled. */
static void fail_nomem(struct pld__sched *s, const char *what) {
  if (!s->status) {
    s->status = PLD_ERR_NOMEM;
    pld__catf(s->msg, sizeof s->msg, "rank %d (device %d): %s", s->rank,
              s->device, what);
  }
  cancel_all(s);
}

/* The core type of part i of a mixed block: the cube's, then vector. */
static struct coretype *part_type(struct pld__sched *s, int i) {
  return &s->types[i ? PLD_CORE_VECTOR : PLD_CORE_CUBE];
}

/* Called with mu held: a free core of ct (the most recently freed: its
 * tile memory is warm), taken, running from now on; NULL if a core cannot
 * be set up, which fails the dispatch. */
static struct simcore *core_take(struct pld__sched *s, struct coretype *ct) {
  if (ct->free_core < 0 && pld__sched_core_setup(s, ct, on_wait)) {
    fail_nomem(s, pld_last_error());
    return NULL;
  }
  struct simcore *sc = &ct->cores[ct->free_core];
  ct->free_core = sc->next_free;
  ct->busy++;
  if (s->env)
    atomic_fetch_add(&s->env->watch->running, 1);
  return sc;
}

/* Called with mu held: core sc of ct, held by a block that ended, is free. */
static void core_put(struct coretype *ct, struct simcore *sc) {
  ct->busy--;
  sc->next_free = ct->free_core;
  ct->free_core = (int)(sc - ct->cores);
}

/* Called with mu held: the next ready block of ct and a free core for it
 * (the most recently freed: its tile memory is warm), both taken; NULL if
 * no block is ready or no core is free.  A core that cannot be set up
 * fails the dispatch. */
static struct simcore *take_block(struct pld__sched *s, struct coretype *ct,
                                  struct task **tp, int32_t *blockp) {
  if (!can_take(ct) || s->stopping)
    return NULL;
  struct simcore *sc = core_take(s, ct);
  if (!sc)
    return NULL;
  struct task *t = ct->ready_head;
  *tp = t;
  *blockp = t->next_block++;
  if (t->next_block == t->blocks)
    ready_pop(ct);
  ct->pending--;
  publish_queued(s);
  /* More blocks wait: another thread may take them in parallel. */
  want_runner(s, ct);
  return sc;
}

/* Called with mu held, returns with it held: runs block `block` of t on
 * core sc (taken by take_block) on the calling thread, which, for the
 * block, is that core to the hooks (it observes, and the race detector
 * sees it, as that core). */
static void run_block(struct pld__sched *s, struct coretype *ct,
                      struct simcore *sc, struct task *t, int32_t block,
                      struct part *part) {
  struct pld__core *c = &sc->core;
  pld_core k = {c};
  int aicpu = me.type == -1;
  if (aicpu)
    s->aicpu_free = 0;
  pthread_mutex_unlock(&s->mu);

  pld__core_begin(c, t->kernel.sig->name, s->rank, s->device, block,
                  t->launched);
  if (part) {
    c->mix = &part->mb->m;
    c->mix_part = part->idx;
  }
  struct pld__coreslot *slot = pld__sched_slot_begin(s, c);
  /* The hooks see the block (with none, nothing is set up for them). */
  const int hooked = s->nhooks > 0;
  struct pld__sched_block b;
  if (hooked) {
    b = (struct pld__sched_block){
        c,     sc->lane,    sc->tbuf, t->kernel.sig->name, s->rank, s->device,
        block, t->launched, t->seq};
    pld__sched_hooks_block(s, t, &b, PLD__AT_BEGIN);
  }
  pld__running_core = c;
  t->kernel.entry(k, t->argv);
  pld__coll_block_end(c);
  pld__running_core = NULL;
  if (c->prefetching && !c->status)
    pld__kfail(c, PLD_ERR_ARG, t->kernel.sig->name,
               "the block returned with %d prefetch%s in flight: wait for "
               "each (pld_prefetch_wait) before the kernel returns",
               c->prefetching, c->prefetching == 1 ? "" : "es");
  /* A failing part stops its block's others waiting for it; theirs, which
   * it caused, is not the dispatch's. */
  const int own_failure =
      c->status && (!part || pld__mix_part_failed(&part->mb->m, part->idx));
  if (hooked)
    pld__sched_hooks_block(s, t, &b, PLD__AT_RETURN);
  if (slot) {
    pld__slot_write_begin(slot);
    atomic_store_explicit(&slot->state, PLD__CORE_IDLE, memory_order_relaxed);
    pld__slot_write_end(slot);
  }

  pthread_mutex_lock(&s->mu);
  if (hooked)
    pld__sched_hooks_block(s, t, &b, PLD__AT_END);
  if (aicpu)
    s->aicpu_free = 1;
  if (s->env) {
    atomic_fetch_sub(&s->env->watch->running, 1);
    atomic_fetch_add_explicit(&s->env->watch->progress, 1,
                              memory_order_relaxed);
  }
  if (own_failure && !s->status) {
    s->status = c->status;
    memcpy(s->msg, c->msg, sizeof s->msg);
  }
  if (!part) {
    core_put(ct, sc);
    block_end(s, t, &c, 1);
  } else if (--part->mb->left == 0) {
    mix_end(s, part->mb); /* frees part */
  } else if (c->status) {
    cancel_all(s);
  }
  publish_queued(s);
  if (hooked)
    pld__sched_hooks_block(s, t, &b, PLD__AT_LEAVE);
}

/* Called with mu held: a block of t ended, on the n cores it held (freed
 * already): its deferred waits are handed over, its task may finish. */
static void block_end(struct pld__sched *s, struct task *t,
                      struct pld__core *const *cores, int n) {
  int failed = 0;
  t->done_blocks++;
  for (int i = 0; i < n; i++) {
    struct pld__core *c = cores[i];
    if (!c->status && c->ndeferred && !s->cancelled &&
        pld__sched_defer_take(s, t, c) && !s->status) {
      s->status = c->status;
      memcpy(s->msg, c->msg, sizeof s->msg);
    }
    failed |= c->status != PLD_OK;
  }
  if (failed) {
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

/* Called with mu held: the last part of mixed block mb returned: its
 * cluster is free, all at once, and mb is freed. */
static void mix_end(struct pld__sched *s, struct mixblock *mb) {
  struct pld__core *cores[1 + PLD__MIX_MAX_VEC];
  int n = 1 + mb->m.nvec;
  for (int i = 0; i < n; i++) {
    core_put(part_type(s, i), mb->sc[i]);
    cores[i] = &mb->sc[i]->core;
  }
  block_end(s, mb->t, cores, n);
  pld__mix_release(&mb->m);
  pld__free(mb);
}

/* Called with mu held: the next part of a mixed block waiting for a
 * thread of ct's type, taken; NULL if none. */
static struct part *take_part(struct pld__sched *s, struct coretype *ct) {
  struct part *p = ct->parts_head;
  if (!p)
    return NULL;
  ct->parts_head = p->next;
  if (!ct->parts_head)
    ct->parts_tail = NULL;
  ct->nparts--;
  publish_queued(s);
  return p;
}

/* Called with mu held: undoes the first n cores take_mix took for mb. */
static void mix_untake(struct pld__sched *s, struct mixblock *mb, int n) {
  for (int i = 0; i < n; i++) {
    core_put(part_type(s, i), mb->sc[i]);
    if (s->env)
      atomic_fetch_sub(&s->env->watch->running, 1);
  }
  pld__mix_release(&mb->m);
  pld__free(mb);
}

/* Called with mu held: the next ready block of a mixed kernel and a
 * cluster for it (a cube core and `ratio` vector cores), taken; its part
 * of the calling thread's type (the cube's for the AICPU) returned, the
 * others queued for threads of theirs.  NULL if no block is ready or no
 * cluster is free; memory short fails the dispatch. */
static struct part *take_mix(struct pld__sched *s, int type) {
  if (!can_take_mix(s) || s->stopping)
    return NULL;
  struct mixblock *mb = pld__calloc(1, sizeof *mb);
  if (!mb || pld__mix_init(&mb->m, s->ratio)) {
    pld__free(mb);
    fail_nomem(s, "out of memory for a mixed block");
    return NULL;
  }
  const int n = 1 + s->ratio;
  for (int i = 0; i < n; i++)
    if (!(mb->sc[i] = core_take(s, part_type(s, i)))) {
      mix_untake(s, mb, i);
      return NULL;
    }
  struct task *t = s->mix_head;
  mb->t = t;
  mb->block = t->next_block++;
  if (t->next_block == t->blocks && !(s->mix_head = t->ready_next))
    s->mix_tail = NULL;
  s->mix_pending--;
  mb->left = n;
  const int mine = type == PLD_CORE_VECTOR ? 1 : 0;
  for (int i = 0; i < n; i++) {
    mb->parts[i] = (struct part){mb, i, NULL};
    mb->m.part[i] = &mb->sc[i]->core;
    if (i == mine)
      continue;
    struct coretype *ct = part_type(s, i);
    if (ct->parts_tail)
      ct->parts_tail->next = &mb->parts[i];
    else
      ct->parts_head = &mb->parts[i];
    ct->parts_tail = &mb->parts[i];
    ct->nparts++;
    atomic_fetch_add_explicit(&ct->work_seq, 1, memory_order_release);
  }
  publish_queued(s);
  for (int i = 0; i < 2; i++)
    want_runner(s, &s->types[i]);
  return &mb->parts[mine];
}

/* What a thread takes to run: a block on a core, or a part of a mixed
 * block (part set: its core and block are its block's). */
struct work {
  struct coretype *ct;
  struct simcore *sc;
  struct task *t;
  int32_t block;
  struct part *part;
};

/* Called with mu held: the next work for a thread of type (-1: the AICPU,
 * any): parts of mixed blocks first (their cores wait for them), then a
 * mixed block, then a block (vector blocks first).  Returns 0 if none. */
static int take_work(struct pld__sched *s, int type, struct work *w) {
  w->part = NULL;
  for (int i = 0; i < 2 && !w->part; i++)
    if (type < 0 || type == i)
      w->part = take_part(s, &s->types[i]);
  if (!w->part)
    w->part = take_mix(s, type);
  if (w->part) {
    struct mixblock *mb = w->part->mb;
    w->ct = part_type(s, w->part->idx);
    w->sc = mb->sc[w->part->idx];
    w->t = mb->t;
    w->block = mb->block;
    return 1;
  }
  for (int i = 0; i < 2; i++)
    if ((type < 0 || type == i) &&
        (w->sc = take_block(s, &s->types[i], &w->t, &w->block))) {
      w->ct = &s->types[i];
      return 1;
    }
  return 0;
}

/* What a block's wait tells the scheduler (core/kctx.h). */
static void on_wait(struct pld__core *c, int event) {
  struct pld__sched *s = c->sched;
  if (event == PLD__WAIT_RESUME) {
    me.blocked = 0;
    return;
  }
  if (event == PLD__WAIT_BLOCK) {
    /* This thread runs nothing else until the wait returns: the blocks
     * queued behind it get another. */
    me.blocked = 1;
    /* Blocks queued later are the queuing thread's business; those queued
     * before, by this thread, it sees here. */
    if (!atomic_load_explicit(&s->queued, memory_order_relaxed))
      return;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < 2; i++)
      want_runner(s, &s->types[i]);
    pthread_mutex_unlock(&s->mu);
    return;
  }
  /* PLD__WAIT_WOKE: the AICPU, blocked in a block it runs, still watches
   * the deferred waits (woken by the same signals). */
  if (me.type == -1) {
    pthread_mutex_lock(&s->mu);
    if (s->ndeferred)
      deferred_poll(s);
    pthread_mutex_unlock(&s->mu);
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct pld__sched *s = w->s;
  struct coretype *ct = &s->types[w->type];
  stack_t alt = {pld__malloc(ALT_STACK_BYTES), 0, ALT_STACK_BYTES};
  if (alt.ss_sp)
    sigaltstack(&alt, NULL);
  me.s = s;
  me.type = w->type;
  me.blocked = 0;
  pld__awake(&s->spin);
  pld__observe_as(s->rank, s->device, pld__core_type_name(ct->spec.type), NULL);
  pthread_mutex_lock(&s->mu);
  ct->woken--; /* started as woken */
  for (;;) {
    struct work wk;
    while (take_work(s, w->type, &wk))
      run_block(s, wk.ct, wk.sc, wk.t, wk.block, wk.part);
    if (s->stopping)
      break;
    /* Poll a little for the next block before sleeping: dispatches come in
     * bursts, and a sleeping core costs a wake-up on the critical path. */
    uint32_t seq = atomic_load_explicit(&ct->work_seq, memory_order_acquire);
    ct->looking++;
    pthread_mutex_unlock(&s->mu);
    pld__spin_change(&ct->work_seq, seq, &s->spin);
    pthread_mutex_lock(&s->mu);
    ct->looking--;
    if (s->stopping || has_work(s, w->type))
      continue;
    ct->idle++;
    int64_t began = pld__sleep_begin(&s->spin);
    pthread_cond_wait(&ct->work, &s->mu);
    pld__sleep_end(&s->spin, began);
    ct->idle--;
    if (ct->woken > 0)
      ct->woken--;
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

/* Called with mu held: starts one more core thread of ct, counted as
 * woken until it looks for work.  Returns PLD_OK or PLD_ERR_SYSTEM. */
static int spawn_worker(struct pld__sched *s, struct coretype *ct) {
  struct worker *w = &ct->threads[ct->spawned];
  w->s = s;
  w->type = (int)(ct - s->types);
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
    return PLD_ERR_SYSTEM;
  ct->spawned++;
  ct->woken++;
  return PLD_OK;
}

int pld__sched_submit(struct pld__sched *s, const struct pld__task_spec *spec) {
  struct task *t = pld__sched_task_new(spec);
  if (t && s->nhooks && pld__sched_hooks_task_new(s, t)) {
    pld__sched_task_release(s, t);
    t = NULL;
  }
  if (!t)
    return pld__fail(PLD_ERR_NOMEM, "out of memory for a task");

  pthread_mutex_lock(&s->mu);
  t->seq = s->submitted++;
  if (s->nhooks)
    pld__sched_hooks_task_launch(s, t);
  int st = PLD_OK;
  struct pld__sched_dep why;
  for (struct task *o = s->head; o && st == PLD_OK; o = o->next)
    if (pld__sched_task_orders(o, t, spec, &why)) {
      if (s->nhooks)
        pld__sched_hooks_task_depends(s, t, o, &why);
      if (!o->finished)
        st = pld__sched_task_after(o, t);
      else if (s->nhooks) /* ordered before t all the same */
        pld__sched_hooks_task_after(s, t, o);
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
    return pld__fail(PLD_ERR_NOMEM, "out of memory for a task");
  }
  s->unfinished++;
  if (s->cancelled) {
    t->blocks = 0;
    t->finished = 1;
    unfinished_dec(s);
  } else if (t->waiting_on == 0) {
    ready_push(s, t);
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

int pld__sched_drain(struct pld__sched *s, char *msg, size_t cap) {
  pthread_mutex_lock(&s->mu);
  int polled = 0;
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
    /* The AICPU has nothing else to do: it runs the ready blocks itself,
     * one after the other, while none blocks. */
    struct work wk;
    if (take_work(s, -1, &wk)) {
      run_block(s, wk.ct, wk.sc, wk.t, wk.block, wk.part);
      polled = 0;
      continue;
    }
    if (s->ndeferred) {
      /* Deferred waits: the AICPU watches their cells, woken by the
       * signals this device receives (and, while blocks run, often, for
       * their ends).  Asleep there, it is not the thread ready blocks
       * count on. */
      struct pld__fabric *f = s->env->poll;
      uint32_t seen = f->ops->events(f);
      if (deferred_poll(s) && s->unfinished > 0 && !has_work(s, -1)) {
        int running = s->types[0].busy + s->types[1].busy;
        s->aicpu_free = 0;
        pthread_mutex_unlock(&s->mu);
        f->ops->wait_events(f, seen, -1, 0, &s->spin,
                            running ? PLD__MS(PLD_DEFERRED_POLL_MS)
                                    : PLD__MS(PLD_ABORT_POLL_MS));
        pthread_mutex_lock(&s->mu);
        s->aicpu_free = 1;
      }
      continue;
    }
    if (!polled) {
      /* Poll a little first: blocks of other threads end soon. */
      uint32_t seq = atomic_load_explicit(&s->drain_seq, memory_order_acquire);
      pthread_mutex_unlock(&s->mu);
      pld__spin_change(&s->drain_seq, seq, &s->spin);
      pthread_mutex_lock(&s->mu);
      polled = 1;
      continue;
    }
    /* The abort flag is polled. */
    struct timespec ts = pld__realtime_after(PLD__MS(PLD_DRAIN_POLL_MS));
    s->aicpu_asleep = 1;
    int64_t began = pld__sleep_begin(&s->spin);
    pthread_cond_timedwait(&s->drained, &s->mu, &ts);
    pld__sleep_end(&s->spin, began);
    s->aicpu_asleep = 0;
  }
  int st = s->status;
  if (st && msg)
    pld__catf(msg, cap, "%s", s->msg);
  /* The AICPU (draining) learns what its tasks did. */
  for (int i = 0; i < s->nhooks; i++)
    if (s->hooks[i]->drained)
      s->hooks[i]->drained(s->hook_ctx[i]);
  struct task *t = s->head;
  s->head = s->tail = NULL;
  s->published_head[0] = s->published_head[1] = NULL;
  s->status = PLD_OK;
  s->cancelled = 0;
  s->submitted = 0;
  pthread_mutex_unlock(&s->mu);
  while (t) {
    struct task *next = t->next;
    pld__sched_task_release(s, t);
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
    for (int i = 0; i < ct->spawned; i++)
      pthread_join(ct->threads[i].thread, NULL);
    for (int i = 0; i < ct->ncores; i++)
      pld__core_release(&ct->cores[i].core);
    pthread_cond_destroy(&ct->work);
    pld__free(ct->threads);
    pld__free(ct->cores);
  }
  pthread_cond_destroy(&s->drained);
  pthread_mutex_destroy(&s->mu);
  pld__sched_hooks_close(s, s->nhooks);
  if (s->alt_stack) {
    stack_t off = {NULL, SS_DISABLE, 0};
    sigaltstack(&off, NULL);
    pld__free(s->alt_stack);
  }
  if (me.s == s)
    me.s = NULL;
  pld__free(s);
}
