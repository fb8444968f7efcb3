/* core/trace.c: the observer of core/trace.h - trace buffers and the debug
 * log. */
#include "core/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/timeline.h"
#include "core/tunables.h"
#include "core/watch.h"
#include "pld/signal.h"
#include "pld/status.h"

_Static_assert(PLD__WORK_MOVE == PLD__TC_CLASSES,
               "a core's work: the classes, then moves");

_Thread_local struct pld__observer pld__obs = {
    .rank = -1, .device = -1, .lane = "host"};
unsigned pld__debug_mask;
static int debug_fd = 2;
/* Debug lines count time from here: the first pld__debug_set (inherited
 * by device processes). */
static int64_t debug_epoch;

const unsigned pld__tev_subsystem[PLD__TEV_KINDS] = {
    [PLD__TEV_HOST] = PLD__DBG_HOST,     [PLD__TEV_DISPATCH] = PLD__DBG_LAUNCH,
    [PLD__TEV_LAUNCH] = PLD__DBG_LAUNCH, [PLD__TEV_BLOCK] = PLD__DBG_LAUNCH,
    [PLD__TEV_WAIT] = PLD__DBG_SIGNAL,   [PLD__TEV_NOTIFY] = PLD__DBG_SIGNAL,
    [PLD__TEV_RMA] = PLD__DBG_RMA,       [PLD__TEV_COLL] = PLD__DBG_COLL,
    [PLD__TEV_FABRIC] = PLD__DBG_FABRIC,
};

/* ---- buffers ------------------------------------------------------------ */

static size_t stride_of(uint32_t cap) {
  size_t n = sizeof(struct pld__tbuf) + (size_t)cap * sizeof(struct pld__tev);
  return pld__round_up(n, 64);
}

size_t pld__trace_area_bytes(int nthreads, uint32_t cap) {
  return 64 + (size_t)nthreads * stride_of(cap);
}

void pld__trace_area_init(struct pld__trace_area *a, int nthreads, uint32_t cap,
                          int trace, int model) {
  a->nthreads = (uint32_t)nthreads;
  a->cap = cap;
  a->stride = stride_of(cap);
  for (int i = 0; i < nthreads; i++) {
    struct pld__tbuf *b = pld__trace_tbuf(a, i);
    memset(b, 0, sizeof *b);
    b->cap = cap;
    b->trace = (int16_t)trace;
    b->model = (int16_t)model;
  }
}

struct pld__tbuf *pld__trace_tbuf(const struct pld__trace_area *a, int i) {
  return (struct pld__tbuf *)((unsigned char *)a + 64 + (size_t)i * a->stride);
}

void pld__trace_area_clear(struct pld__trace_area *a) {
  for (uint32_t i = 0; i < a->nthreads; i++) {
    struct pld__tbuf *b = pld__trace_tbuf(a, (int)i);
    if (b->n || b->lost) { /* (an idle core's line stays clean) */
      b->n = 0;
      b->lost = 0;
    }
  }
}

static void fold_reset(struct pld__fold *f);

void pld__observe_as(int rank, int device, const char *lane,
                     struct pld__tbuf *buf) {
  pld__obs.rank = rank;
  pld__obs.device = device;
  pld__name_copy(pld__obs.lane, sizeof pld__obs.lane, lane);
  pld__obs.buf = buf;
  pld__obs.traced = buf && buf->trace;
  pld__obs.model = buf && buf->model;
  memset(&pld__obs.work, 0, sizeof pld__obs.work);
  pld__obs.group = pld__obs.npend = 0;
  fold_reset(&pld__obs.fold);
  pld__obs.hold = pld__obs.again = 0;
  memset(&pld__obs.call, 0, sizeof pld__obs.call);
  pld__obs.in_call = 0;
}

void pld__tev_init(struct pld__tev *e, int kind, int sub, const char *name) {
  memset(e, 0, sizeof *e);
  e->kind = (uint8_t)kind;
  e->sub = (uint8_t)sub;
  pld__name_copy(e->name, sizeof e->name, name ? name : "");
}

void pld__tev_cell(struct pld__tev *e, int ndim, const int64_t *shape,
                   int64_t linear) {
  e->a = (int32_t)linear;
  e->ndim = (uint8_t)(ndim > 0 && ndim <= PLD_MAX_DIMS ? ndim : 1);
  if (e->ndim != ndim) { /* not a view's: the linear index alone */
    e->idx[0] = (int32_t)linear;
    return;
  }
  for (int d = ndim - 1; d >= 0; d--) {
    int64_t n = shape[d] > 0 ? shape[d] : 1;
    e->idx[d] = (int32_t)(d ? linear % n : linear);
    linear /= n;
  }
}

size_t pld__tev_cell_str(char *buf, size_t cap, const struct pld__tev *e) {
  size_t n = pld__catf(buf, cap, "[");
  for (int d = 0; d < e->ndim && d < PLD_MAX_DIMS; d++)
    n += pld__catf(buf + n, cap - n, d ? ", %d" : "%d", (int)e->idx[d]);
  return n + pld__catf(buf + n, cap - n, "]");
}

static void store(const struct pld__tev *e);

/* Events a buffer's pages are made present for at once, ahead of them. */
enum { AHEAD = 512 };

/* The next free event of b (NULL when b is full: counted as lost).  A
 * buffer's pages are shared memory, present only once written: a fault
 * each costs microseconds, so a long run's loop would pay one every 32
 * events; instead the pages of the next AHEAD events are made present by
 * one call as the buffer first reaches them (where the kernel can). */
static struct pld__tev *next_event(struct pld__tbuf *b) {
  b->used = 1;
  if (b->n >= b->cap) {
    b->lost++;
    return NULL;
  }
#ifdef MADV_POPULATE_WRITE
  if (b->n >= b->present) {
    uintptr_t from = (uintptr_t)&b->ev[b->n] & ~(uintptr_t)4095;
    b->present = b->cap - b->n < AHEAD ? b->cap : b->n + AHEAD;
    (void)madvise((void *)from, (uintptr_t)&b->ev[b->present] - from,
                  MADV_POPULATE_WRITE);
  }
#endif
  return &b->ev[b->n++];
}

/* ---- the timing model's records ----------------------------------------- */

/* The pack event p, if it may take records (a span's beginning closes
 * it: flag 1, so that the span's records follow in later events). */
static int open_pack(const struct pld__tev *p) {
  return p->kind == PLD__TEV_PACK && !p->flag;
}

/* Room for one more record: in the open pack the buffer ends with, or a
 * new one (NULL when the buffer is full: counted as lost). */
static struct pld__mrec *new_rec(void) {
  struct pld__tbuf *b = pld__obs.buf;
  b->used = 1;
  struct pld__tev *p = b->n ? &b->ev[b->n - 1] : NULL;
  if (p && open_pack(p) && p->sub < PLD__PACK_RECS)
    return &p->rec[p->sub++];
  if (!(p = next_event(b)))
    return NULL;
  p->t0 = p->t1 = 0;
  p->kind = PLD__TEV_PACK;
  p->flag = 0;
  p->sub = 1;
  return &p->rec[0];
}

/* Takes the thread's last record back (a turn a folded loop stands for). */
static void drop_last_rec(void) {
  struct pld__tbuf *b = pld__obs.buf;
  if (!--b->ev[b->n - 1].sub)
    b->n--;
}

/* ---- folding loops ---------------------------------------------------------
 *
 * A kernel's loop records the same records turn after turn (a barrier's
 * credits and waits, a ping-pong's notify and wait, a tile loop's work),
 * but for values that step by the same amount each turn (the round a
 * wait expects).  Once three turns of k records (at most PLD__FOLD_TURN)
 * follow each other with the same steps, the third is taken back and one
 * PLD__TM_LOOP record stands for it and for every later turn that keeps
 * the steps: a turn costs the core a comparison per record instead of
 * memory, and the host unfolds them (host/model.c).  Only records that
 * nothing changes once stored fold (transfers are stored once whole:
 * a group's, one issued later), not a launch's or block's. */

static int foldable(int kind) {
  return (kind >= PLD__TL_COMPUTE && kind <= PLD__TL_LAST) ||
         kind == PLD__TM_BARRIER;
}

static int same_kind(const struct pld__mrec *x, const struct pld__mrec *y) {
  return x->kind == y->kind && x->sub == y->sub && x->peer == y->peer;
}

static struct pld__mrec *hist(struct pld__fold *f, uint64_t i) {
  return &f->hist[i & (PLD__FOLD_HIST - 1)];
}

/* Whether record i repeats the two k and 2 k before it, each value
 * stepping alike (the third of three turns of k records). */
static int repeats(struct pld__fold *f, uint64_t i, int32_t k) {
  if (!k || i < f->base + 2 * (uint64_t)k)
    return 0;
  const struct pld__mrec *x = hist(f, i), *w = hist(f, i - (uint64_t)k),
                         *v = hist(f, i - 2 * (uint64_t)k);
  return same_kind(x, w) && same_kind(v, w) &&
         x->a == pld__fold_value(v->a, w->a, 1) &&
         x->b == pld__fold_value(v->b, w->b, 1);
}

/* The folder forgets what it saw: the next records start afresh. */
static void fold_reset(struct pld__fold *f) {
  f->lk = f->pos = f->k = f->run = 0;
  f->base = f->seq;
}

static struct pld__mrec *rec_add(const struct pld__mrec *m) {
  struct pld__mrec *r = new_rec();
  if (r)
    *r = *m;
  return r;
}

/* Ends the loop being folded, if any: the records of its unfinished turn
 * are stored as they were. */
static void fold_break(struct pld__fold *f) {
  if (f->lk && pld__obs.buf->n == f->lev + 1)
    for (int32_t j = 0; j < f->pos; j++) {
      struct pld__mrec m = f->turn0[j];
      m.a = pld__fold_at(m.a, f->da[j], f->turns);
      m.b = (int32_t)pld__fold_at(m.b, f->db[j], f->turns);
      rec_add(&m);
    }
  fold_reset(f);
}

/* The last 3 k records stored are three turns: the third is taken back
 * for a loop record. */
static void fold_begin(struct pld__fold *f) {
  struct pld__tbuf *b = pld__obs.buf;
  const int32_t k = f->k;
  if (b->lost) { /* some were not stored */
    fold_reset(f);
    return;
  }
  for (int32_t j = 0; j < k; j++)
    drop_last_rec();
  struct pld__mrec *r = new_rec();
  if (!r)
    return;
  *r = (struct pld__mrec){.kind = PLD__TM_LOOP, .peer = k, .a = 1};
  /* Turn 0 the third (the loop's one turn so far), stepping as the
   * second did from the first. */
  const uint64_t first = f->seq - 3 * (uint64_t)k;
  for (int32_t j = 0; j < k; j++) {
    const struct pld__mrec *v = hist(f, first + (uint64_t)j);
    const struct pld__mrec *w = hist(f, first + (uint64_t)(2 * k + j));
    f->da[j] = (int64_t)((uint64_t)hist(f, first + (uint64_t)(k + j))->a -
                         (uint64_t)v->a);
    f->db[j] = (int64_t)hist(f, first + (uint64_t)(k + j))->b - v->b;
    f->turn0[j] = *w;
  }
  f->lk = k;
  f->pos = 0;
  f->turns = 1;
  f->loop = r;
  f->lev = b->n - 1;
}

static uint32_t fold_hash(const struct pld__mrec *m) {
  uint64_t h = ((uint64_t)m->a ^ (uint64_t)(uint32_t)m->peer << 24 ^
                (uint64_t)m->kind << 56 ^ (uint64_t)m->sub << 48) *
               0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> (64 - PLD__FOLD_HASH_BITS));
}

/* A loop begins, if none is being folded and the last records stored
 * are three turns of one. */
static void fold_ready(struct pld__fold *f) {
  if (!f->lk && f->k && f->run >= f->k &&
      f->seq - f->base >= 3 * (uint64_t)f->k)
    fold_begin(f);
}

/* The folder sees m, just stored: the turn it may repeat, and a loop
 * once three turns are recorded (not inside a call: pld__obs.in_call). */
static void fold_see(struct pld__fold *f, const struct pld__mrec *m) {
  const uint64_t i = f->seq++;
  *hist(f, i) = *m;
  uint64_t *last = &f->last[fold_hash(m)];
  const uint64_t before = *last;
  *last = i + 1;
  int32_t k = f->k;
  int ok = repeats(f, i, k);
  if (!ok) { /* the last record like this one (but for b) gives the turn */
    const struct pld__mrec *y = before > f->base ? hist(f, before - 1) : NULL;
    k = y && same_kind(m, y) && m->a == y->a &&
                i - (before - 1) <= PLD__FOLD_TURN
            ? (int32_t)(i - (before - 1))
            : 0;
    f->k = k;
    f->run = 0;
    ok = repeats(f, i, k);
  }
  f->run += ok;
  if (!pld__obs.in_call)
    fold_ready(f);
}

static void held_store(void);

/* Stores a record (the held one first): folded, or in the buffer. */
static void add_rec(int kind, int sub, int32_t peer, int64_t a, int32_t b) {
  struct pld__observer *o = &pld__obs;
  struct pld__fold *f = &o->fold;
  held_store();
  const struct pld__mrec m = {
      .kind = (uint8_t)kind, .sub = (uint8_t)sub, .peer = peer, .a = a, .b = b};
  if (foldable(kind) && pld__fold_next(kind, sub, peer, a, b))
    return;
  if (!foldable(kind) || f->lk) /* (and if the buffer was emptied) */
    fold_break(f);
  struct pld__mrec *r = rec_add(&m);
  if (foldable(kind)) {
    if (r)
      fold_see(f, &m);
    else
      fold_reset(f);
  }
}

/* The held record stored, if any. */
static void held_store(void) {
  struct pld__observer *o = &pld__obs;
  if (!o->hold)
    return;
  o->hold = 0;
  add_rec(o->held.kind, o->held.sub, o->held.peer, o->held.a, o->held.b);
}

/* Stores a record, or holds it back if it is a transfer issued later
 * (a flush right after it may still change it). */
static void emit(int kind, int sub, int32_t peer, int64_t a, int32_t b) {
  struct pld__observer *o = &pld__obs;
  if (kind != PLD__TL_XFER ||
      (sub & (PLD__TL_LATER | PLD__TL_FLUSHED)) != PLD__TL_LATER) {
    add_rec(kind, sub, peer, a, b);
    return;
  }
  held_store();
  o->held = (struct pld__mrec){
      .kind = (uint8_t)kind, .sub = (uint8_t)sub, .peer = peer, .a = a, .b = b};
  o->hold = 1;
}

/* ---- calls that repeat the last ---------------------------------------- */

void pld__obs_call_new(const int32_t *w) {
  struct pld__observer *o = &pld__obs;
  struct pld__call_memo *m = &o->call;
  const struct pld__fold *f = &o->fold;
  m->turn = 0;
  o->in_call = 1;
  if (!pld__obs_model_alone()) {
    m->loop = NULL;
    return;
  }
  memcpy(m->w, w, sizeof m->w);
  m->loop = pld__obs_in_loop() ? f->loop : NULL;
  m->turns = f->turns;
  m->pos = f->pos;
}

void pld__obs_call_ended(int st) {
  struct pld__call_memo *m = &pld__obs.call;
  struct pld__fold *f = &pld__obs.fold;
  pld__obs.in_call = 0;
  fold_ready(f);
  m->turn = !st && m->loop && pld__obs_in_loop() && f->loop == m->loop &&
            f->turns == m->turns + 1 && f->pos == m->pos;
  m->turns = f->turns;
}

void pld__obs_group_store(void) {
  struct pld__observer *o = &pld__obs;
  const int32_t n = o->npend;
  o->npend = 0;
  for (int32_t i = 0; i < n; i++)
    emit(o->pend[i].kind, o->pend[i].sub, o->pend[i].peer, o->pend[i].a,
         o->pend[i].b);
}

/* A transfer of the group in course: its bytes added to the one held
 * back with its peer and sub, else held back as one more. */
static void group_xfer(int sub, int32_t peer, int64_t a, int32_t b) {
  struct pld__observer *o = &pld__obs;
  if (o->pgroup != o->group) /* (an earlier group's, not ended) */
    pld__obs_group_store();
  o->pgroup = o->group;
  for (int32_t i = 0; i < o->npend; i++)
    if (o->pend[i].sub == sub && o->pend[i].peer == peer) {
      o->pend[i].a += a;
      return;
    }
  if (o->npend == PLD__GROUP_PEERS)
    pld__obs_group_store();
  o->pend[o->npend++] = (struct pld__mrec){
      .kind = PLD__TL_XFER, .sub = (uint8_t)sub, .peer = peer, .a = a, .b = b};
}

/* The thread's work of kind k (a class, or PLD__WORK_MOVE) since its last
 * record, as one record of the model, if any. */
static void work_record(int k) {
  struct pld__work *w = &pld__obs.work;
  if (!w->ops[k])
    return;
  add_rec(k == PLD__WORK_MOVE ? PLD__TL_MOVE : PLD__TL_COMPUTE,
          k == PLD__WORK_MOVE ? 0 : k, 0, w->amount[k], w->ops[k]);
  w->amount[k] = 0;
  w->ops[k] = 0;
}

/* The work the thread did since its last record: its moves, then its
 * computing by class. */
static void work_flush(void) {
  pld__obs.work.pending = 0;
  work_record(PLD__WORK_MOVE);
  for (int k = 0; k < PLD__WORK_MOVE; k++)
    work_record(k);
}

/* A flush of peer's transfers right after the thread's last record, a
 * transfer issued later with peer (held), makes it one of
 * PLD__TL_FLUSHED, done once; its repetitions, each flushed before the
 * next (a loop of plain puts), add to its count inline
 * (pld__obs_repeat).  Returns whether it did. */
static int flush_folded(int32_t peer) {
  struct pld__mrec *h = &pld__obs.held;
  if (!pld__obs.hold || (h->sub & ~PLD__TL_GET) != PLD__TL_LATER ||
      h->peer != peer)
    return 0;
  h->sub |= PLD__TL_FLUSHED;
  h->b = 1;
  return 1;
}

/* The transfer held back by pld__obs_repeat, if any, stored as it came
 * (something other than its flush follows it). */
static void again_store(void) {
  struct pld__observer *o = &pld__obs;
  if (!o->again)
    return;
  const struct pld__mrec m = o->held;
  o->again = 0;
  if (o->group)
    group_xfer(m.sub & ~PLD__TL_FLUSHED, m.peer, m.a, 0);
  else
    emit(m.kind, m.sub & ~PLD__TL_FLUSHED, m.peer, m.a, 0);
}

void pld__obs_record(int kind, int sub, int32_t peer, int64_t a, int32_t b,
                     const char *name) {
  if (!pld__obs.model)
    return;
  again_store();
  if (kind == PLD__TL_XFER && pld__obs.group && !name) {
    if (pld__obs.work.pending) { /* (the work came before it) */
      pld__obs_group_store();
      work_flush();
    }
    group_xfer(sub, peer, a, b);
    return;
  }
  pld__obs_group_store();
  if (pld__obs.work.pending)
    work_flush();
  if (kind == PLD__TL_FLUSH && flush_folded(peer))
    return;
  if (!name) {
    emit(kind, sub, peer, a, b);
    return;
  }
  struct pld__tev e;
  pld__tev_init(&e, PLD__TEV_MODEL, kind, name);
  e.flag = (uint8_t)sub;
  e.e = peer;
  e.x = a;
  e.b = b;
  store(&e);
}

static void store(const struct pld__tev *e) {
  struct pld__tbuf *b = pld__obs.buf;
  if (!b)
    return;
  again_store();
  held_store(); /* (an event follows it) */
  if (pld__obs.work.pending) {
    pld__obs_group_store(); /* (the work came after them) */
    work_flush();
  }
  fold_break(&pld__obs.fold); /* its records before the event */
  struct pld__tev *at = next_event(b);
  if (at)
    *at = *e;
}

/* ---- the debug log ------------------------------------------------------- */

int pld__debug_parse(const char *fn, const char *value, unsigned *mask) {
  *mask = 0;
  char why[1024];
  if (pld__setting_refused(PLD__SET_DEBUG, value, why, sizeof why))
    return pld__fail(PLD_ERR_CONFIG, "%s: debug log: %s", fn, why);
  for (const char *p = value; *p;) {
    size_t len = strcspn(p, ",");
    /* The words of PLD_DEBUG (core/tunables.h) are in the order of the
     * bits, "all" (every bit) last. */
    unsigned bit = 1u << pld__setting_word(PLD__SET_DEBUG, p, len);
    *mask |= bit <= PLD__DBG_HOST ? bit : PLD__DBG_ALL;
    p += len + (p[len] == ',');
  }
  return PLD_OK;
}

void pld__debug_set(unsigned mask, int fd) {
  if (mask && !debug_epoch)
    debug_epoch = pld__now_ns();
  pld__debug_mask = mask;
  debug_fd = fd;
}

static const char *tev_op_name(int op) {
  return op == PLD_NOTIFY_SET ? "set" : "add";
}

const char *pld__tev_rma_name(int sub) {
  static const char *const names[] = {
      "put",       "get",       "remote_load",      "remote_store",
      "put_tiles", "get_tiles", "remote_load_rows", "remote_store_rows"};
  return sub >= 0 && sub < (int)(sizeof names / sizeof names[0]) ? names[sub]
                                                                 : "?";
}

const char *pld__tev_host_name(int sub) {
  static const char *const names[] = {"compile", "prepare",  "run",
                                      "copy in", "copy out", "host task"};
  return sub >= 0 && sub < 6 ? names[sub] : "?";
}

/* One line, written with one write(2) so that lines of several threads
 * and processes never interleave. */
static void log_line(int64_t t, const char *fmt, ...) PLD__PRINTF(2, 3);
static void log_line(int64_t t, const char *fmt, ...) {
  char line[512];
  size_t n;
  int64_t rel = t - debug_epoch;
  if (pld__obs.rank >= 0)
    n = pld__catf(line, sizeof line,
                  "pld: rank %d dev %d %s %lld.%06llds: ", pld__obs.rank,
                  pld__obs.device, pld__obs.lane, (long long)(rel / 1000000000),
                  (long long)(rel % 1000000000 / 1000));
  else
    n = pld__catf(line, sizeof line,
                  "pld: host %lld.%06llds: ", (long long)(rel / 1000000000),
                  (long long)(rel % 1000000000 / 1000));
  va_list ap;
  va_start(ap, fmt);
  n += (size_t)vsnprintf(line + n, sizeof line - n, fmt, ap);
  va_end(ap);
  if (n > sizeof line - 2)
    n = sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(debug_fd, line, n);
  (void)w;
}

static void log_event(const struct pld__tev *e, int begun) {
  if (!(pld__debug_mask & pld__tev_subsystem[e->kind]))
    return;
  int64_t t = begun ? e->t0 : e->t1;
  double us = (double)(e->t1 - e->t0) / 1000.0;
  char cell[12 * PLD_MAX_DIMS + 4];
  switch (e->kind) {
  case PLD__TEV_HOST:
    if (begun)
      log_line(t, "host: %s%s%s begins", pld__tev_host_name(e->sub),
               e->name[0] ? " " : "", e->name);
    else
      log_line(t, "host: %s%s%s ends after %.3f us", pld__tev_host_name(e->sub),
               e->name[0] ? " " : "", e->name, us);
    break;
  case PLD__TEV_DISPATCH:
    if (begun)
      log_line(t, "launch: call %d: device function %s begins", e->a, e->name);
    else
      log_line(t, "launch: call %d: device function %s ends after %.3f us",
               e->a, e->name, us);
    break;
  case PLD__TEV_LAUNCH:
    if (!begun)
      log_line(t, "launch: task %d: kernel %s, %d block%s", e->b, e->name, e->a,
               e->a == 1 ? "" : "s");
    break;
  case PLD__TEV_BLOCK:
    if (begun)
      log_line(t, "launch: task %d: kernel %s block %d of %d begins", e->c,
               e->name, e->a, e->b);
    else
      log_line(t,
               "launch: task %d: kernel %s block %d of %d ends after "
               "%.3f us",
               e->c, e->name, e->a, e->b, us);
    break;
  case PLD__TEV_WAIT:
    pld__tev_cell_str(cell, sizeof cell, e);
    if (begun)
      log_line(t, "signal: wait on window '%s' cell %s %s %d blocks", e->name,
               cell, pld__wait_cmp_str(e->sub), e->b);
    else
      log_line(t,
               "signal: wait on window '%s' cell %s %s %d %s after %.3f us "
               "(it holds %d)",
               e->name, cell, pld__wait_cmp_str(e->sub), e->b,
               e->flag ? "stopped" : "returns", us, e->c);
    break;
  case PLD__TEV_NOTIFY:
    pld__tev_cell_str(cell, sizeof cell, e);
    log_line(t,
             "signal: notify window '%s' cell %s of peer %d (rank %d): %s %d",
             e->name, cell, e->c, e->e, tev_op_name(e->sub), e->b);
    break;
  case PLD__TEV_RMA:
    if (!begun)
      log_line(t, "rma: %s %s of peer %d: %lld bytes in %.3f us",
               pld__tev_rma_name(e->sub), e->name, e->c, (long long)e->x, us);
    break;
  case PLD__TEV_COLL:
    if (begun)
      log_line(t, "coll: %s call %d begins (%lld bytes)",
               pld__coll_name(e->sub), e->a, (long long)e->x);
    else
      log_line(t, "coll: %s call %d ends after %.3f us", pld__coll_name(e->sub),
               e->a, us);
    break;
  default:
    break;
  }
}

/* ---- the counts --------------------------------------------------------- */

void pld__counts_add(struct pld__counts *a, const struct pld__counts *b) {
  a->waits += b->waits;
  a->wait_ns += b->wait_ns;
  a->notifies += b->notifies;
  a->colls += b->colls;
  a->coll_bytes += b->coll_bytes;
  for (int i = 0; i < 4; i++)
    a->rma[i] += b->rma[i];
  a->gm_load += b->gm_load;
  a->gm_store += b->gm_store;
}

/* The thread counts what it observed (an ended event or an instant). */
static void count(struct pld__counts *n, const struct pld__tev *e) {
  /* PLD__TR_*: the tile and row forms move as put, get, load, store. */
  static const unsigned char cnt[] = {[PLD__TR_PUT] = PLD__CNT_PUT,
                                      [PLD__TR_GET] = PLD__CNT_GET,
                                      [PLD__TR_RLOAD] = PLD__CNT_RLOAD,
                                      [PLD__TR_RSTORE] = PLD__CNT_RSTORE,
                                      [PLD__TR_PUT_TILES] = PLD__CNT_PUT,
                                      [PLD__TR_GET_TILES] = PLD__CNT_GET,
                                      [PLD__TR_RLOAD_ROWS] = PLD__CNT_RLOAD,
                                      [PLD__TR_RSTORE_ROWS] = PLD__CNT_RSTORE};
  switch (e->kind) {
  case PLD__TEV_WAIT:
    n->waits++;
    n->wait_ns += e->t1 - e->t0;
    break;
  case PLD__TEV_NOTIFY:
    n->notifies++;
    break;
  case PLD__TEV_RMA:
    if (e->sub < sizeof cnt)
      n->rma[cnt[e->sub]] += e->x;
    break;
  case PLD__TEV_COLL:
    n->colls++;
    n->coll_bytes += e->x;
    break;
  default:
    break;
  }
}

void pld__obs_begin(struct pld__tev *e) {
  e->t0 = e->t1 = pld__now_ns();
  /* A transfer's or collective's span: where its records begin, for a
   * trace in modeled time (host/model.c). */
  if (pld__obs.model && (e->kind == PLD__TEV_RMA || e->kind == PLD__TEV_COLL)) {
    struct pld__tbuf *b = pld__obs.buf;
    again_store(); /* what came before it goes before it */
    pld__obs_group_store();
    held_store();
    if (pld__obs.work.pending)
      work_flush();
    fold_break(&pld__obs.fold);
    if (b->n && b->ev[b->n - 1].kind == PLD__TEV_PACK)
      b->ev[b->n - 1].flag = 1;
    e->idx[0] = (int32_t)b->n;
  }
  if (pld__debug_mask)
    log_event(e, 1);
}

void pld__obs_end(struct pld__tev *e) {
  e->t1 = pld__now_ns();
  store(e);
  if (pld__obs.counts)
    count(pld__obs.counts, e);
  if (pld__debug_mask)
    log_event(e, 0);
}

void pld__obs_instant(struct pld__tev *e) {
  e->t0 = e->t1 = pld__now_ns();
  store(e);
  if (pld__obs.counts)
    count(pld__obs.counts, e);
  if (pld__debug_mask)
    log_event(e, 0);
}

void pld__obs_fabric(const char *what, int buf, int peer, size_t off,
                     size_t n) {
  if (!(pld__debug_mask & PLD__DBG_FABRIC))
    return;
  if (buf < 0)
    log_line(pld__now_ns(), "fabric: %s to %s %d", what,
             peer < 0 ? "every rank" : "rank", peer < 0 ? 0 : peer);
  else
    log_line(pld__now_ns(),
             "fabric: %s buffer #%d of rank %d at %zu: %zu "
             "bytes",
             what, buf, peer, off, n);
}
