/* core/replay.c: a run's timeline replayed in modeled time
 * (core/timeline.h): a discrete-event simulation, sequential and
 * deterministic, of every rank's AICPU, cores, device memory and links. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/timeline.h"
#include "core/watch.h"
#include "pld/signal.h"
#include "pld/status.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- state ------------------------------------------------------------ */

enum ev_kind { EV_READY, EV_ACTOR, EV_LAND, EV_TASKEND };

struct event {
  int64_t t;
  uint64_t seq; /* creation order: ties go to the older event */
  int kind;
  int32_t rank, idx; /* the rank; the task or actor */
  int32_t cell_rank;
  uint8_t op;
  int64_t cell, value;
};

/* A block running on a core (an actor of the simulation). */
struct actor {
  int32_t rank, task, block, core;
  int cube;
  int32_t rec;        /* next record */
  int64_t rep;        /* repetitions of it done (PLD__TL_FLUSHED) */
  int64_t start;      /* when it started on its core */
  int64_t t;          /* its clock */
  int64_t later_end;  /* its transfers issued later complete by then */
  int64_t wait_since; /* blocked in a wait since then (-1: not) */
  int ndefer;         /* deferred waits still unsatisfied */
  int64_t move_free;  /* its core's move engine is free from then */
  int64_t *moved;     /* [nmoved]: when each move it started completes */
  size_t nmoved, capmoved;
};

/* One task of the call a rank runs. */
struct task {
  int64_t launch; /* when the AICPU submitted it */
  int64_t ready;  /* when it may start (-1: not yet) */
  int64_t end;    /* its blocks' last end */
  int32_t deps_left;
  int32_t next_block;
  int32_t blocks_done;
  int32_t defers; /* its blocks' deferred waits still unsatisfied */
  int finished;
};

/* A waiter on a cell: an actor, or a deferred wait of a task (actor -1). */
struct waiter {
  int32_t actor, rank, task;
  uint8_t cmp;
  int32_t expected;
  struct waiter *next;
};

struct cell {
  int32_t rank;
  int64_t id;
  int32_t value;
  int used;
  struct waiter *waiters, *last;
};

struct rankstate {
  int32_t call;       /* the call running, or the next one */
  int running;        /* a call is running */
  int done;           /* every call ended */
  int64_t call_start; /* when the running call started */
  int32_t tasks_done;
  struct task *tasks; /* of the running call */
  int32_t *ready;     /* tasks ready with blocks left, by (ready, index) */
  int32_t nready;
  int64_t *core_free; /* [vector_cores + cube_cores]: when each is free */
  unsigned char *held;
  int32_t *core_report; /* index into the report's cores, or -1 */
  int64_t hbm_free;
  int64_t port_out, port_in; /* in the server */
  int64_t net_out, net_in;   /* to other servers */
  int32_t *calls_ended;      /* [ncalls]: 1 once ended */
};

struct sim {
  const struct pld__timeline *tl;
  const struct pld__machine *m;
  int nv, nc, server;
  struct rankstate *rs;
  int64_t *links; /* [src * nranks + dst]: free from then */
  struct event *heap;
  size_t nheap, capheap;
  uint64_t seq;
  struct actor *actors;
  size_t nactors, capactors;
  struct cell *cells;
  size_t capcells, ncells;
  struct pld__tl_report *out;
  size_t capcores, capspans;
  int nomem;
};

#define M(s, id) ((s)->m->v[PLD__M_##id])

/* The array p of *cap elements of size bytes with room for element n:
 * p, or p grown (doubled) when full; NULL with s->nomem set. */
static void *room(struct sim *s, void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return p;
  size_t more = *cap ? *cap * 2 : 256;
  void *q = pld__realloc(p, more * size);
  if (!q) {
    s->nomem = 1;
    return NULL;
  }
  *cap = more;
  return q;
}

/* ---- the event queue: a binary heap by (t, seq) ----------------------- */

static int ev_before(const struct event *a, const struct event *b) {
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct sim *s, struct event e) {
  struct event *h = room(s, s->heap, &s->capheap, s->nheap, sizeof *h);
  if (!h)
    return;
  s->heap = h;
  e.seq = s->seq++;
  size_t i = s->nheap++;
  while (i > 0 && ev_before(&e, &s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = e;
}

static struct event pop(struct sim *s) {
  struct event top = s->heap[0], e = s->heap[--s->nheap];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= s->nheap)
      break;
    if (c + 1 < s->nheap && ev_before(&s->heap[c + 1], &s->heap[c]))
      c++;
    if (!ev_before(&s->heap[c], &e))
      break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->nheap)
    s->heap[i] = e;
  return top;
}

static void at(struct sim *s, int64_t t, int kind, int32_t rank, int32_t idx) {
  push(s, (struct event){.t = t, .kind = kind, .rank = rank, .idx = idx});
}

/* ---- cells: open addressing by (rank, id) ----------------------------- */

static uint64_t cell_hash(int32_t rank, int64_t id) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15u ^ (uint64_t)(uint32_t)rank;
  return h ^ (h >> 29);
}

static struct cell *cell_at(struct sim *s, int32_t rank, int64_t id) {
  if (2 * (s->ncells + 1) > s->capcells) {
    size_t cap = s->capcells ? s->capcells * 2 : 1024;
    struct cell *c = pld__calloc(cap, sizeof *c);
    if (!c) {
      s->nomem = 1;
      return NULL;
    }
    for (size_t i = 0; i < s->capcells; i++)
      if (s->cells[i].used) {
        size_t j = cell_hash(s->cells[i].rank, s->cells[i].id) & (cap - 1);
        while (c[j].used)
          j = (j + 1) & (cap - 1);
        c[j] = s->cells[i];
      }
    pld__free(s->cells);
    s->cells = c;
    s->capcells = cap;
  }
  size_t j = cell_hash(rank, id) & (s->capcells - 1);
  while (s->cells[j].used && (s->cells[j].rank != rank || s->cells[j].id != id))
    j = (j + 1) & (s->capcells - 1);
  if (!s->cells[j].used) {
    s->cells[j] = (struct cell){.rank = rank, .id = id, .used = 1};
    s->ncells++;
  }
  return &s->cells[j];
}

/* ---- the report ------------------------------------------------------- */

static struct pld__tl_core *core_report(struct sim *s, int32_t rank, int cube,
                                        int32_t core) {
  struct rankstate *r = &s->rs[rank];
  int32_t slot = (cube ? s->nv : 0) + core;
  if (r->core_report[slot] < 0) {
    struct pld__tl_report *o = s->out;
    struct pld__tl_core *c =
        room(s, o->cores, &s->capcores, (size_t)o->ncores, sizeof *c);
    if (!c)
      return NULL;
    o->cores = c;
    o->cores[o->ncores] =
        (struct pld__tl_core){.rank = rank, .cube = cube, .id = core};
    r->core_report[slot] = o->ncores++;
  }
  return &s->out->cores[r->core_report[slot]];
}

static void busy(struct sim *s, const struct actor *a, int cls, int64_t dt) {
  struct pld__tl_core *c = core_report(s, a->rank, a->cube, a->core);
  if (c)
    c->busy_ps[cls] += dt;
}

/* ---- calls and tasks -------------------------------------------------- */

static const struct pld__tl_call *call_of(const struct sim *s, int32_t rank) {
  return &s->tl->ranks[rank].calls[s->rs[rank].call];
}

/* Starts rank's next call at t if the calls it waits for have ended (else
 * a later call's end starts it); at its end, finishes the rank. */
static void start_call(struct sim *s, int32_t rank, int64_t t) {
  struct rankstate *r = &s->rs[rank];
  const struct pld__tl_rank *tr = &s->tl->ranks[rank];
  if (r->running || r->done)
    return;
  if (r->call == tr->ncalls) {
    r->done = 1;
    s->out->rank_ps[rank] =
        t + pld__tl_bytes_ps(tr->bytes_out, M(s, HOST_GBPS));
    return;
  }
  const struct pld__tl_call *c = call_of(s, rank);
  for (int32_t i = 0; i < c->nafter; i++)
    if (!s->rs[c->after[i].rank].calls_ended[c->after[i].call])
      return;
  r->running = 1;
  r->call_start = t;
  if (c->span_ps)
    c->span_ps[0] = t;
  r->tasks_done = 0;
  r->nready = 0;
  int64_t aicpu = t + M(s, HOST_DISPATCH_NS) * 1000;
  for (int32_t i = 0; i < c->ntasks; i++) {
    struct task *k = &r->tasks[i];
    if (!c->tasks[i].with_previous)
      aicpu += M(s, LAUNCH_NS) * 1000;
    *k = (struct task){
        .launch = aicpu, .ready = -1, .deps_left = c->tasks[i].ndeps};
    if (!k->deps_left)
      at(s, aicpu, EV_READY, rank, i);
  }
  if (!c->ntasks)
    at(s, aicpu, EV_TASKEND, rank, -1);
}

/* The call's end at t: the calls waiting for it may start. */
static void end_call(struct sim *s, int32_t rank, int64_t t) {
  struct rankstate *r = &s->rs[rank];
  if (call_of(s, rank)->span_ps)
    call_of(s, rank)->span_ps[1] = t;
  r->calls_ended[r->call] = 1;
  r->call++;
  r->running = 0;
  for (int32_t q = 0; q < s->tl->nranks; q++)
    if (q != rank)
      start_call(s, q, t);
  start_call(s, rank, t);
}

static void end_task(struct sim *s, int32_t rank, int32_t task, int64_t t) {
  struct rankstate *r = &s->rs[rank];
  const struct pld__tl_call *c = call_of(s, rank);
  if (task >= 0) {
    r->tasks[task].finished = 1;
    for (int32_t i = task + 1; i < c->ntasks; i++)
      for (int32_t d = 0; d < c->tasks[i].ndeps; d++)
        if (c->tasks[i].deps[d] == task && --r->tasks[i].deps_left == 0)
          at(s, max64(t, r->tasks[i].launch), EV_READY, rank, i);
    if (++r->tasks_done < c->ntasks)
      return;
  }
  end_call(s, rank, t);
}

/* A task's blocks all ended (and its deferred waits satisfied) by t. */
static void task_blocks_over(struct sim *s, int32_t rank, int32_t task,
                             int64_t t) {
  at(s, t + M(s, BLOCK_END_NS) * 1000, EV_TASKEND, rank, task);
}

/* ---- cores ------------------------------------------------------------ */

static void dispatch(struct sim *s, int32_t rank, int64_t now);

static void make_ready(struct sim *s, int32_t rank, int32_t task, int64_t now) {
  struct rankstate *r = &s->rs[rank];
  const struct pld__tl_task *tt = &call_of(s, rank)->tasks[task];
  r->tasks[task].ready = now;
  if (!tt->nblocks) {
    task_blocks_over(s, rank, task, now);
    return;
  }
  /* Kept by (ready, index): a later ready time, or the same and a later
   * index, goes after. */
  int32_t i = r->nready++;
  while (i > 0) {
    struct task *o = &r->tasks[r->ready[i - 1]];
    if (o->ready < now || (o->ready == now && r->ready[i - 1] < task))
      break;
    r->ready[i] = r->ready[i - 1];
    i--;
  }
  r->ready[i] = task;
  dispatch(s, rank, now);
}

static int new_actor(struct sim *s) {
  struct actor *a = room(s, s->actors, &s->capactors, s->nactors, sizeof *a);
  if (!a)
    return -1;
  s->actors = a;
  return (int)s->nactors++;
}

/* Every ready block of rank that a free core of its type can take at now
 * starts: the first by (ready, launch, block) on the free core with the
 * smallest clock, then the lowest number. */
static void dispatch(struct sim *s, int32_t rank, int64_t now) {
  struct rankstate *r = &s->rs[rank];
  const struct pld__tl_call *c = call_of(s, rank);
  for (int32_t i = 0; i < r->nready && !s->nomem;) {
    int32_t task = r->ready[i];
    const struct pld__tl_task *tt = &c->tasks[task];
    int base = tt->cube ? s->nv : 0, n = tt->cube ? s->nc : s->nv;
    int core = -1;
    for (int q = 0; q < n; q++)
      if (!r->held[base + q] &&
          (core < 0 || r->core_free[base + q] < r->core_free[base + core]))
        core = q;
    if (core < 0) { /* none of this type: a task of the other may go */
      i++;
      continue;
    }
    int id = new_actor(s);
    if (id < 0)
      return;
    struct actor *a = &s->actors[id];
    *a = (struct actor){
        .rank = rank,
        .task = task,
        .block = r->tasks[task].next_block++,
        .core = core,
        .cube = tt->cube,
        .start = now + (M(s, BLOCK_DISPATCH_NS) + M(s, BLOCK_START_NS)) * 1000,
        .wait_since = -1};
    a->t = a->start;
    r->held[base + core] = 1;
    if (r->tasks[task].next_block == tt->nblocks) {
      memmove(&r->ready[i], &r->ready[i + 1],
              (size_t)(r->nready - i - 1) * sizeof *r->ready);
      r->nready--;
    }
    at(s, a->t, EV_ACTOR, -1, id);
  }
}

/* ---- what a block does ------------------------------------------------ */

static int same_server(const struct sim *s, int32_t a, int32_t b) {
  return s->tl->ranks[a].device / s->server ==
         s->tl->ranks[b].device / s->server;
}

static int64_t latency_ps(const struct sim *s, int32_t from, int32_t to) {
  if (from == to)
    return 0;
  return (same_server(s, from, to) ? M(s, LINK_NS) : M(s, NET_NS)) * 1000;
}

/* A transfer of bytes from rank src to rank dst asked for at t: when its
 * data has landed.  The link and both ports (the NICs across servers) are
 * pipes that take their bytes in the order asked, each at its bandwidth:
 * the data is through when the last of the three is, then the latency
 * passes.  So transfers to several peers share the sender's port, and
 * those to one peer its link. */
static int64_t transfer(struct sim *s, int32_t src, int32_t dst, int64_t bytes,
                        int64_t t) {
  struct rankstate *a = &s->rs[src], *b = &s->rs[dst];
  if (src == dst) { /* a copy within the device's memory */
    int64_t start = max64(t, a->hbm_free);
    a->hbm_free = start + 2 * pld__tl_bytes_ps(bytes, M(s, HBM_GBPS));
    return a->hbm_free;
  }
  int same = same_server(s, src, dst);
  int64_t *link = &s->links[(size_t)src * (size_t)s->tl->nranks + (size_t)dst];
  int64_t *out = same ? &a->port_out : &a->net_out;
  int64_t *in = same ? &b->port_in : &b->net_in;
  int64_t on_link =
      pld__tl_bytes_ps(bytes, same ? M(s, LINK_GBPS) : M(s, NET_GBPS));
  int64_t on_port =
      pld__tl_bytes_ps(bytes, same ? M(s, PORT_GBPS) : M(s, NET_GBPS));
  *link = max64(t, *link) + on_link;
  *out = max64(t, *out) + on_port;
  *in = max64(t, *in) + on_port;
  return max64(*link, max64(*out, *in)) + latency_ps(s, src, dst);
}

static int64_t compute_ps(const struct sim *s, const struct actor *a,
                          const struct pld__tl_rec *r) {
  static const enum pld__model_id rate[PLD__TC_CLASSES] = {
      PLD__M_VEC_BYTES,      PLD__M_VEC_SPECIAL_BYTES, PLD__M_VEC_REDUCE_BYTES,
      PLD__M_CUBE_MACS_FP16, PLD__M_CUBE_MACS_BF16,    PLD__M_CUBE_MACS_FP32,
      PLD__M_CUBE_MACS_INT8};
  int cube = r->sub >= PLD__TC_FP16;
  int64_t fixed = cube ? M(s, CUBE_OP_CYCLES) : M(s, VEC_OP_CYCLES);
  int64_t cycles = r->b * fixed + ceil_div(r->a, s->m->v[rate[r->sub]]);
  return pld__tl_cycles_ps(cycles, a->cube ? M(s, AIC_MHZ) : M(s, AIV_MHZ));
}

/* The block's transfers issued later complete. */
static void settle(struct sim *s, struct actor *a) {
  if (a->later_end > a->t) {
    busy(s, a, PLD__TB_COMM, a->later_end - a->t);
    a->t = a->later_end;
  }
}

static int wait_on(struct sim *s, int32_t actor, int32_t rank, int32_t task,
                   const struct pld__tl_rec *r) {
  struct cell *c = cell_at(s, r->peer, r->a);
  if (!c)
    return 0;
  if (pld__wait_satisfied(c->value, (int32_t)r->b, r->sub))
    return 1;
  struct waiter *w = pld__malloc(sizeof *w);
  if (!w) {
    s->nomem = 1;
    return 0;
  }
  *w = (struct waiter){.actor = actor,
                       .rank = rank,
                       .task = task,
                       .cmp = r->sub,
                       .expected = (int32_t)r->b};
  if (c->last)
    c->last->next = w;
  else
    c->waiters = w;
  c->last = w;
  return 0;
}

static void block_end(struct sim *s, int32_t id);
static void land(struct sim *s, const struct event *e);

/* Runs actor id from its clock, which is now, up to the next record that
 * must wait for its time or a cell. */
static void run_actor(struct sim *s, int32_t id, int64_t now) {
  struct actor *a = &s->actors[id];
  const struct pld__tl_block *b =
      &call_of(s, a->rank)->tasks[a->task].blocks[a->block];
  while (a->rec < b->nrec && !s->nomem) {
    const struct pld__tl_rec *r = &b->rec[a->rec];
    if (b->t0_ps && !a->rep)
      b->t0_ps[a->rec] = b->t1_ps[a->rec] = a->t;
    if (r->kind == PLD__TL_COMPUTE) {
      int64_t dt = compute_ps(s, a, r);
      busy(s, a, PLD__TB_COMPUTE, dt);
      a->t += dt;
      if (b->t1_ps)
        b->t1_ps[a->rec] = a->t;
      a->rec++;
      continue;
    }
    if (a->t > now) { /* shared state is touched at its time */
      at(s, a->t, EV_ACTOR, -1, id);
      return;
    }
    a->rec++;
    int64_t t0 = a->t, t1 = -1; /* t1: a record's end other than a->t */
    switch (r->kind) {
    case PLD__TL_MOVE: {
      /* On the core's move engine after the moves started before it, and
       * on the device's memory. */
      struct rankstate *rs = &s->rs[a->rank];
      int64_t go = max64(a->t, a->move_free);
      int64_t start = max64(go, rs->hbm_free);
      int64_t on_hbm = pld__tl_bytes_ps(r->a, M(s, HBM_GBPS));
      rs->hbm_free = start + on_hbm;
      int64_t on_core =
          pld__tl_cycles_ps(ceil_div(r->a, M(s, MOVE_BYTES)),
                            a->cube ? M(s, AIC_MHZ) : M(s, AIV_MHZ));
      int64_t through = max64(go + on_core, start + on_hbm);
      if (r->sub & PLD__TL_ASYNC) { /* the core goes on */
        int64_t *m = room(s, a->moved, &a->capmoved, a->nmoved, sizeof *m);
        if (!m)
          break;
        a->moved = m;
        a->moved[a->nmoved++] = through + M(s, MOVE_NS) * 1000;
        a->move_free = through;
        if (b->t1_ps)
          t1 = a->moved[a->nmoved - 1];
        break;
      }
      /* Each of the record's moves (b, at least one) pays the latency. */
      a->t = through + M(s, MOVE_NS) * 1000 * (r->b > 1 ? r->b : 1);
      busy(s, a, PLD__TB_MOVE, a->t - t0);
      break;
    }
    case PLD__TL_MOVED: /* (pld__tl_check: a move it started) */
      if (a->moved[r->a] > a->t) {
        busy(s, a, PLD__TB_MOVE, a->moved[r->a] - a->t);
        a->t = a->moved[r->a];
      }
      break;
    case PLD__TL_XFER: {
      int get = r->sub & PLD__TL_GET;
      int64_t end = get ? transfer(s, r->peer, a->rank, r->a, a->t)
                        : transfer(s, a->rank, r->peer, r->a, a->t);
      if (r->sub & PLD__TL_LATER) {
        a->later_end = max64(a->later_end, end);
        /* Each repetition, and its flush, is a step of its own: the
         * next one touches the link at its own time. */
        if (r->sub & PLD__TL_FLUSHED) {
          settle(s, a);
          if (++a->rep < r->b)
            a->rec--;
          else
            a->rep = 0;
        }
      } else {
        a->t = end;
        busy(s, a, PLD__TB_COMM, a->t - t0);
      }
      break;
    }
    case PLD__TL_FLUSH:
      settle(s, a);
      break;
    case PLD__TL_NOTIFY:
      /* The core issues it; it goes behind the block's transfers issued
       * later (their order, not a wait of the core's). */
      a->t += M(s, NOTIFY_NS) * 1000;
      busy(s, a, PLD__TB_COMM, M(s, NOTIFY_NS) * 1000);
      push(s, (struct event){.t = max64(a->t, a->later_end) +
                                  latency_ps(s, a->rank, r->peer),
                             .kind = EV_LAND,
                             .cell_rank = r->peer,
                             .cell = r->a,
                             .op = r->sub,
                             .value = r->b});
      break;
    case PLD__TL_WAIT:
      if (!wait_on(s, id, a->rank, a->task, r)) {
        a->wait_since = a->t;
        return;
      }
      a->t += M(s, WAIT_NS) * 1000;
      busy(s, a, PLD__TB_WAIT, M(s, WAIT_NS) * 1000);
      break;
    case PLD__TL_TAKE: /* at once: the core's next wait sees it */
      land(s, &(struct event){.t = a->t,
                              .kind = EV_LAND,
                              .cell_rank = r->peer,
                              .cell = r->a,
                              .op = PLD_NOTIFY_ADD,
                              .value = -r->b});
      break;
    case PLD__TL_DEFER:
      if (!wait_on(s, -1, a->rank, a->task, r))
        s->rs[a->rank].tasks[a->task].defers++;
      break;
    }
    if (b->t1_ps) /* (a wait that blocks ends in land) */
      b->t1_ps[a->rep ? a->rec : a->rec - 1] = t1 >= 0 ? t1 : a->t;
  }
  if (s->nomem)
    return;
  settle(s, a);
  if (a->t > now) {
    at(s, a->t, EV_ACTOR, -1, id);
    return;
  }
  block_end(s, id);
}

static void block_end(struct sim *s, int32_t id) {
  struct actor *a = &s->actors[id];
  pld__free(a->moved); /* (its moves were waited for) */
  a->moved = NULL;
  a->nmoved = a->capmoved = 0;
  struct rankstate *r = &s->rs[a->rank];
  const struct pld__tl_call *c = call_of(s, a->rank);
  struct pld__tl_core *cr = core_report(s, a->rank, a->cube, a->core);
  if (!cr)
    return;
  cr->blocks++;
  cr->finish_ps = a->t;
  struct pld__tl_report *o = s->out;
  struct pld__tl_span *sp =
      room(s, o->spans, &s->capspans, (size_t)o->nspans, sizeof *sp);
  if (!sp)
    return;
  o->spans = sp;
  o->spans[o->nspans++] = (struct pld__tl_span){.rank = a->rank,
                                                .call = r->call,
                                                .task = a->task,
                                                .block = a->block,
                                                .cube = a->cube,
                                                .core = a->core,
                                                .start_ps = a->start,
                                                .end_ps = a->t};
  int slot = (a->cube ? s->nv : 0) + a->core;
  r->held[slot] = 0;
  r->core_free[slot] = a->t;
  struct task *k = &r->tasks[a->task];
  k->end = max64(k->end, a->t);
  if (++k->blocks_done == c->tasks[a->task].nblocks && !k->defers)
    task_blocks_over(s, a->rank, a->task, k->end);
  dispatch(s, a->rank, a->t);
}

/* A contribution lands on a cell at t: the waits it satisfies go on. */
static void land(struct sim *s, const struct event *e) {
  struct cell *c = cell_at(s, e->cell_rank, e->cell);
  if (!c)
    return;
  c->value = e->op == PLD_NOTIFY_SET
                 ? (int32_t)e->value
                 : (int32_t)((uint32_t)c->value + (uint32_t)e->value);
  struct waiter **p = &c->waiters, *last = NULL;
  while (*p) {
    struct waiter *w = *p;
    if (!pld__wait_satisfied(c->value, w->expected, w->cmp)) {
      last = w;
      p = &w->next;
      continue;
    }
    *p = w->next;
    int64_t go = e->t + M(s, WAIT_NS) * 1000;
    if (w->actor >= 0) {
      struct actor *a = &s->actors[w->actor];
      busy(s, a, PLD__TB_WAIT, go - a->wait_since);
      a->t = go;
      const struct pld__tl_block *b =
          &call_of(s, a->rank)->tasks[a->task].blocks[a->block];
      if (b->t1_ps)
        b->t1_ps[a->rec - 1] = go;
      a->wait_since = -1;
      at(s, go, EV_ACTOR, -1, w->actor);
    } else {
      struct task *k = &s->rs[w->rank].tasks[w->task];
      k->end = max64(k->end, go);
      if (--k->defers == 0 &&
          k->blocks_done == call_of(s, w->rank)->tasks[w->task].nblocks)
        task_blocks_over(s, w->rank, w->task, k->end);
    }
    pld__free(w);
  }
  c->last = last;
}

/* ---- the loop, what is left ------------------------------------------- */

static const char *const cmp_names[] = {"==", ">=", "!=", ">", "<", "<="};

/* Why ranks are left unfinished with no event to come: the first wait
 * never satisfied, else the first block with no core, else the first
 * call whose calls never end. */
static void stuck(struct sim *s, char *msg, size_t cap) {
  for (size_t i = 0; i < s->capcells; i++)
    for (struct waiter *w = s->cells[i].used ? s->cells[i].waiters : NULL; w;
         w = w->next) {
      const struct pld__tl_call *c = call_of(s, w->rank);
      pld__catf(msg, cap,
                "the model: rank %d, %s, kernel %s %s waits for cell %lld of "
                "rank %d to be %s %d, which holds %d once every notify has "
                "landed: in modeled order it is never satisfied",
                w->rank, c->name ? c->name : "?",
                c->tasks[w->task].name ? c->tasks[w->task].name : "?",
                w->actor >= 0 ? "a block" : "a deferred wait of a block",
                (long long)s->cells[i].id, s->cells[i].rank, cmp_names[w->cmp],
                w->expected, s->cells[i].value);
      return;
    }
  for (int32_t q = 0; q < s->tl->nranks; q++) {
    struct rankstate *r = &s->rs[q];
    if (r->done)
      continue;
    const struct pld__tl_call *c = call_of(s, q);
    if (r->nready) {
      pld__catf(msg, cap,
                "the model: rank %d, %s: kernel %s has blocks that no core "
                "is left for",
                q, c->name ? c->name : "?",
                c->tasks[r->ready[0]].name ? c->tasks[r->ready[0]].name : "?");
      return;
    }
    if (!r->running) {
      pld__catf(msg, cap,
                "the model: rank %d, %s waits for calls of other ranks that "
                "never end",
                q, c->name ? c->name : "?");
      return;
    }
  }
  pld__catf(msg, cap, "the model: ranks left unfinished");
}

static void sim_free(struct sim *s) {
  for (size_t i = 0; i < s->capcells; i++)
    for (struct waiter *w = s->cells[i].used ? s->cells[i].waiters : NULL,
                       *next;
         w; w = next) {
      next = w->next;
      pld__free(w);
    }
  pld__free(s->cells);
  for (int32_t q = 0; s->rs && q < s->tl->nranks; q++) {
    pld__free(s->rs[q].tasks);
    pld__free(s->rs[q].ready);
    pld__free(s->rs[q].core_free);
    pld__free(s->rs[q].held);
    pld__free(s->rs[q].core_report);
    pld__free(s->rs[q].calls_ended);
  }
  pld__free(s->rs);
  pld__free(s->links);
  pld__free(s->heap);
  for (size_t i = 0; i < s->nactors; i++)
    pld__free(s->actors[i].moved);
  pld__free(s->actors);
}

void pld__tl_report_free(struct pld__tl_report *r) {
  pld__free(r->rank_ps);
  pld__free(r->cores);
  pld__free(r->spans);
  memset(r, 0, sizeof *r);
}

static int span_cmp(const void *x, const void *y) {
  const struct pld__tl_span *a = x, *b = y;
  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  if (a->call != b->call)
    return a->call < b->call ? -1 : 1;
  if (a->task != b->task)
    return a->task < b->task ? -1 : 1;
  return (a->block > b->block) - (a->block < b->block);
}

static int core_cmp(const void *x, const void *y) {
  const struct pld__tl_core *a = x, *b = y;
  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  if (a->cube != b->cube)
    return a->cube < b->cube ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

static int sim_alloc(struct sim *s) {
  const struct pld__timeline *tl = s->tl;
  size_t n = (size_t)tl->nranks, cores = (size_t)(s->nv + s->nc);
  s->rs = pld__calloc(n, sizeof *s->rs);
  s->links = pld__calloc(n * n, sizeof *s->links);
  s->out->rank_ps = pld__calloc(n, sizeof *s->out->rank_ps);
  if (!s->rs || !s->links || !s->out->rank_ps)
    return PLD_ERR_NOMEM;
  for (size_t q = 0; q < n; q++) {
    struct rankstate *r = &s->rs[q];
    int32_t most = 1;
    for (int32_t c = 0; c < tl->ranks[q].ncalls; c++)
      if (tl->ranks[q].calls[c].ntasks > most)
        most = tl->ranks[q].calls[c].ntasks;
    r->tasks = pld__calloc((size_t)most, sizeof *r->tasks);
    r->ready = pld__calloc((size_t)most, sizeof *r->ready);
    r->core_free = pld__calloc(cores, sizeof *r->core_free);
    r->held = pld__calloc(cores, 1);
    r->core_report = pld__malloc(cores * sizeof *r->core_report);
    r->calls_ended =
        pld__calloc((size_t)tl->ranks[q].ncalls + 1, sizeof *r->calls_ended);
    if (!r->tasks || !r->ready || !r->core_free || !r->held ||
        !r->core_report || !r->calls_ended)
      return PLD_ERR_NOMEM;
    for (size_t i = 0; i < cores; i++)
      r->core_report[i] = -1;
  }
  return PLD_OK;
}

int pld__tl_replay(const struct pld__timeline *tl, const struct pld__machine *m,
                   int vector_cores, int cube_cores, int server_devices,
                   struct pld__tl_report *out, char *msg, size_t cap) {
  memset(out, 0, sizeof *out);
  msg[0] = '\0';
  int st = pld__tl_check(tl, vector_cores, cube_cores, msg, cap);
  if (st)
    return st;
  struct sim s = {.tl = tl,
                  .m = m,
                  .nv = vector_cores,
                  .nc = cube_cores,
                  .server = server_devices > 0 ? server_devices : 1,
                  .out = out};
  out->nranks = tl->nranks;
  st = sim_alloc(&s);
  for (int32_t q = 0; !st && q < tl->nranks; q++)
    start_call(&s, q,
               pld__tl_bytes_ps(tl->ranks[q].bytes_in, M(&s, HOST_GBPS)));
  while (!st && s.nheap && !s.nomem) {
    struct event e = pop(&s);
    switch (e.kind) {
    case EV_READY:
      make_ready(&s, e.rank, e.idx, e.t);
      break;
    case EV_ACTOR:
      run_actor(&s, e.idx, e.t);
      break;
    case EV_LAND:
      land(&s, &e);
      break;
    case EV_TASKEND:
      end_task(&s, e.rank, e.idx, e.t);
      break;
    }
  }
  if (!st && s.nomem)
    st = PLD_ERR_NOMEM;
  for (int32_t q = 0; !st && q < tl->nranks; q++)
    if (!s.rs[q].done) {
      stuck(&s, msg, cap);
      st = PLD_ERR_DEADLOCK;
    }
  if (st == PLD_ERR_NOMEM)
    pld__catf(msg, cap, "the model: out of memory");
  for (int32_t q = 0; !st && q < tl->nranks; q++)
    out->total_ps = max64(out->total_ps, out->rank_ps[q]);
  if (!st) {
    qsort(out->spans, (size_t)out->nspans, sizeof *out->spans, span_cmp);
    qsort(out->cores, (size_t)out->ncores, sizeof *out->cores, core_cmp);
  }
  sim_free(&s);
  if (st)
    pld__tl_report_free(out);
  return st;
}
