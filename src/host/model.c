/* host/model.c: the timing model of a program's runs (host/model.h).
 *
 * After a run, each rank's buffers hold, in order, what its AICPU
 * launched (PLD__TM_TASK, PLD__TM_DEP, a dispatch's end) and what each
 * core did (the records of core/timeline.h, each block's closed by its
 * PLD__TM_BLOCK).  They become a timeline: calls in order, their tasks by
 * launch number with the tasks each was ordered after, each task's blocks
 * with their records.  Nothing of it comes from a clock, so the timeline,
 * and the replay of it, are the same in every run. */
#include "host/model.h"

#include <string.h>

#include "core/alloc.h"
#include "core/tunables.h"

/* ---- configuration ------------------------------------------------------ */

/* The value of a word setting from cfg's field (if set) or the
 * environment, checked: *on says whether it is `yes`. */
static int word_on(const char *field, const char *fname, int id,
                   const char *yes, int *on) {
  const char *v = field ? field : pld__setting(id);
  *on = 0;
  if (!v || !*v)
    return PLD_OK;
  char why[1024];
  if (pld__setting_refused(id, v, why, sizeof why))
    return pld__fail_api(PLD_ERR_CONFIG, "%s%s",
                         field ? fname : "environment: ", why);
  *on = strcmp(v, yes) == 0;
  return PLD_OK;
}

int pld__model_config(struct pld_program *p, const pld_config *cfg) {
  int on, clock;
  int st = word_on(cfg->model, "timing model: pld_config.model, read as ",
                   PLD__SET_MODEL, "on", &on);
  if (!st)
    st = word_on(NULL, "", PLD__SET_TRACE_CLOCK, "model", &clock);
  if (st)
    return st;
  clock = clock && p->plan.tracing;
  const char *out =
      cfg->model_out ? cfg->model_out : pld__setting(PLD__SET_MODEL_OUT);
  if (out && !*out)
    out = NULL;
  if (!on && !out && !clock)
    return PLD_OK;
  struct pld__model *m = pld__calloc(1, sizeof *m);
  if (!m || (out && !(m->out = pld__strdup(out)))) {
    pld__free(m);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory (timing model)");
  }
  m->clock = clock;
  p->rs.model = m;
  p->plan.modeling = 1;
  return PLD_OK;
}

static void report_free(struct pld__model *m) {
  if (m->have)
    pld__tl_report_free(&m->rep);
  pld__free(m->ranks);
  pld__free(m->cores);
  pld__free(m->tasks);
  pld__free(m->names);
  m->ranks = NULL;
  m->cores = NULL;
  m->tasks = NULL;
  m->names = NULL;
  m->have = 0;
}

void pld__model_release(struct pld_program *p) {
  struct pld__model *m = p->rs.model;
  if (!m)
    return;
  report_free(m);
  pld__free(m->out);
  pld__free(m);
  p->rs.model = NULL;
}

/* ---- the timeline from the buffers ---------------------------------------
 * One rank's calls, tasks, dependencies, blocks and records, each in an
 * array of its own (indices, not pointers, while they grow). */

/* A launch.  A mixed kernel's is two tasks of the timeline, its cube parts
 * and then its vector parts (nvec per block), run at once: tl and tl + 1
 * (the timeline's tasks of the call; tlg, of the rank). */
struct btask {
  int32_t id, seq, launched, cube, nvec, call, tl, tlg;
  char name[PLD__TEV_NAME];
  int32_t dep0, ndeps; /* into deps: the call's tasks of the timeline */
  int32_t block0;      /* cube parts, then vector parts (block * nvec + v) */
};

/* The timeline's tasks a launch is. */
static int32_t parts_of(const struct btask *t) { return t->nvec ? 2 : 1; }

struct bcall {
  char name[PLD__TEV_NAME];
  int32_t task0, ntasks;
};

struct bblock {
  int32_t rec0, nrec, seen;
};

/* For a trace in modeled time: event ev gets the times of records [r0,
 * r1) of its rank; a block's, those of the timeline's block `block` of
 * task `task` of call `call` (task -1 until the block's end names it); a
 * dispatch's or launch's, call `call`'s (and its task `task`'s). */
struct bstamp {
  struct pld__tev *ev;
  int32_t r0, r1, call, task, block;
};

struct brank {
  struct bcall *calls;
  struct btask *tasks;
  int32_t *deps;
  struct bblock *blocks;
  struct pld__tl_rec *recs;
  struct bstamp *stamps;
  size_t ncalls, ntasks, ndeps, nblocks, nrecs, nstamps;
  size_t capcalls, captasks, capdeps, capblocks, caprecs, capstamps;
  int32_t nranks; /* the program's */
};

/* Room for one more of *v (n of them, *cap allocated): its address, or
 * NULL when out of memory. */
static void *more(void *vp, size_t n, size_t *cap, size_t size) {
  void **v = vp;
  if (n == *cap) {
    size_t c = *cap ? 2 * *cap : 16;
    void *w = pld__realloc(*v, c * size);
    if (!w)
      return NULL;
    *v = w;
    *cap = c;
  }
  return (unsigned char *)*v + n * size;
}

static void brank_free(struct brank *b) {
  pld__free(b->stamps);
  pld__free(b->calls);
  pld__free(b->tasks);
  pld__free(b->deps);
  pld__free(b->blocks);
  pld__free(b->recs);
}

static int nomem(void) {
  return pld__fail_api(PLD_ERR_NOMEM, "out of memory (timing model)");
}

/* The task numbered id of the calls read so far (ids grow with launches),
 * or -1. */
static int32_t task_of(const struct brank *b, int32_t id) {
  size_t lo = 0, hi = b->ntasks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (b->tasks[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < b->ntasks && b->tasks[lo].id == id ? (int32_t)lo : -1;
}

/* Event e of the trace will have modeled times (struct bstamp). */
static int stamp(struct brank *b, struct pld__tev *e, size_t r0, size_t r1,
                 int32_t call, int32_t task) {
  struct bstamp *t =
      more(&b->stamps, b->nstamps, &b->capstamps, sizeof *b->stamps);
  if (!t)
    return nomem();
  *t = (struct bstamp){e, (int32_t)r0, (int32_t)r1, call, task, 0};
  b->nstamps++;
  return PLD_OK;
}

/* The records of the model event e holds: its pack's, or the one it is
 * (PLD__TEV_MODEL, copied into *one); *r points to them.  Returns how
 * many (0 for any other event). */
static int recs_of(const struct pld__tev *e, struct pld__mrec *one,
                   const struct pld__mrec **r) {
  if (e->kind == PLD__TEV_PACK) {
    *r = e->rec;
    return e->sub;
  }
  if (e->kind != PLD__TEV_MODEL)
    return 0;
  *one = (struct pld__mrec){
      .kind = e->sub, .sub = e->flag, .peer = e->e, .a = e->x, .b = e->b};
  *r = one;
  return 1;
}

/* Record d (PLD__TM_DEP) of rank r's AICPU: task d->peer of the dispatch
 * whose tasks begin at call_task0 goes after task d->a.  Returns
 * PLD_OK, or fails. */
static int depends(struct brank *b, int r, size_t call_task0,
                   const struct pld__mrec *d) {
  int32_t k = task_of(b, d->peer), before = task_of(b, (int32_t)d->a);
  if (k < 0 || before < (int32_t)call_task0 || before >= k)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d ordered a task after one "
                         "not earlier in its dispatch",
                         r);
  for (int32_t q = 0; q < parts_of(&b->tasks[before]); q++) {
    int32_t *dep = more(&b->deps, b->ndeps, &b->capdeps, sizeof *b->deps);
    if (!dep)
      return nomem();
    *dep = b->tasks[before].tl + q;
    b->ndeps++;
    b->tasks[k].ndeps++;
  }
  return PLD_OK;
}

/* The AICPU's buffer: calls, their launches and orders (and, with clock,
 * its dispatches and launches to stamp). */
static int read_aicpu(struct brank *b, int r, struct pld__tbuf *buf,
                      int clock) {
  size_t call_task0 = 0;
  int32_t tl = 0, tlg = 0; /* the call's and the rank's next timeline task */
  for (uint32_t i = 0; i < buf->n; i++) {
    struct pld__tev *e = &buf->ev[i];
    /* A launch's event follows its task's record. */
    if (clock && (e->kind == PLD__TEV_DISPATCH || e->kind == PLD__TEV_LAUNCH) &&
        stamp(b, e, 0, 0, (int32_t)b->ncalls,
              b->ntasks > call_task0 ? b->tasks[b->ntasks - 1].tl : 0))
      return PLD_ERR_NOMEM;
    if (e->kind == PLD__TEV_DISPATCH) {
      struct bcall *c =
          more(&b->calls, b->ncalls, &b->capcalls, sizeof *b->calls);
      if (!c)
        return nomem();
      memcpy(c->name, e->name, sizeof c->name);
      c->task0 = (int32_t)call_task0;
      c->ntasks = (int32_t)(b->ntasks - call_task0);
      b->ncalls++;
      call_task0 = b->ntasks;
      tl = 0;
    } else if (e->kind == PLD__TEV_MODEL && e->sub == PLD__TM_TASK) {
      struct btask *t =
          more(&b->tasks, b->ntasks, &b->captasks, sizeof *b->tasks);
      if (!t)
        return nomem();
      if (e->x != (int64_t)(b->ntasks - call_task0))
        return pld__fail_api(PLD_ERR_UNSUPPORTED,
                             "timing model: rank %d launched task %lld of its "
                             "dispatch as its %zu-th",
                             r, (long long)e->x, b->ntasks - call_task0);
      *t = (struct btask){.id = e->e,
                          .call = (int32_t)b->ncalls,
                          .seq = (int32_t)e->x,
                          .launched = e->b,
                          .cube = e->flag == 1,
                          .nvec = e->flag >= 2 ? e->flag - 2 : 0,
                          .tl = tl,
                          .tlg = tlg,
                          .dep0 = (int32_t)b->ndeps};
      if (e->flag == 2)
        return pld__fail_api(PLD_ERR_UNSUPPORTED,
                             "timing model: rank %d: mixed kernel %s on a "
                             "device without a cluster",
                             r, e->name);
      memcpy(t->name, e->name, sizeof t->name);
      tl += parts_of(t);
      tlg += parts_of(t);
      b->ntasks++;
    } else {
      struct pld__mrec one;
      const struct pld__mrec *rec;
      int st = PLD_OK;
      for (int j = recs_of(e, &one, &rec); j > 0 && !st; j--, rec++)
        if (rec->kind == PLD__TM_DEP)
          st = depends(b, r, call_task0, rec);
      if (st)
        return st;
    }
  }
  if (call_task0 != b->ntasks)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d launched tasks outside a "
                         "dispatch",
                         r);
  /* Each task's blocks, as launched (a count decided on the device may
   * leave some unrun: they are dropped below). */
  for (size_t k = 0; k < b->ntasks; k++) {
    struct btask *t = &b->tasks[k];
    t->block0 = (int32_t)b->nblocks;
    for (int32_t j = 0; j < t->launched * (1 + t->nvec); j++) {
      struct bblock *bl =
          more(&b->blocks, b->nblocks, &b->capblocks, sizeof *b->blocks);
      if (!bl)
        return nomem();
      *bl = (struct bblock){0, 0, 0};
      b->nblocks++;
    }
  }
  return PLD_OK;
}

/* Trace event e of a core's buffer, stored when the rank had `recs`
 * records (and, if a transfer's or collective's span, had at[i] when the
 * buffer held i events) is stamped with the times of its records: a
 * blocked wait its own (the last), a notify the next, a span those since
 * its beginning; a block's from the block's end that follows it. */
static int stamp_core(struct brank *b, struct pld__tev *e, const uint32_t *at,
                      uint32_t n) {
  size_t recs = b->nrecs;
  switch (e->kind) {
  case PLD__TEV_BLOCK:
    return stamp(b, e, 0, 0, 0, -1);
  case PLD__TEV_WAIT:
    return stamp(b, e, recs - (recs > 0), recs, 0, 0);
  case PLD__TEV_NOTIFY:
    return stamp(b, e, recs, recs + 1, 0, 0);
  case PLD__TEV_RMA:
  case PLD__TEV_COLL:
    return stamp(
        b, e, e->idx[0] >= 0 && (uint32_t)e->idx[0] < n ? at[e->idx[0]] : recs,
        recs, 0, 0);
  default:
    return PLD_OK;
  }
}

/* The end of a block (e, PLD__TM_BLOCK) on a core of rank r: the records
 * since *rec0 are its own; the block's span, stored just before, is
 * stamped with its times. */
static int block_ends(struct brank *b, int r, const struct pld__tbuf *buf,
                      const struct pld__mrec *e, size_t *rec0) {
  int32_t k = task_of(b, e->peer);
  if (k < 0)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d's %s ran a block of a task "
                         "its AICPU did not record",
                         r, buf->name);
  struct btask *t = &b->tasks[k];
  /* A mixed block's part p (flag 1 + p): the cube's (0) or vector part
   * p - 1. */
  const int mixed = e->sub != 0, p = mixed ? e->sub - 1 : 0, j = (int)e->a;
  if (j < 0 || j >= t->launched || mixed != (t->nvec > 0) || p > t->nvec)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d: kernel %s block %d (part "
                         "%d) was never launched as such",
                         r, t->name, j, e->sub);
  const int32_t in = p ? t->launched + j * t->nvec + (p - 1) : j;
  struct bblock *bl = &b->blocks[t->block0 + in];
  if (bl->seen)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d: kernel %s block %d ended "
                         "twice",
                         r, t->name, j);
  char msg[256];
  const int xs = pld__tl_expand_barriers(&b->recs, &b->nrecs, &b->caprecs,
                                         *rec0, r, b->nranks, msg, sizeof msg);
  if (xs)
    return pld__fail_api(xs, "timing model: %s", msg);
  *bl = (struct bblock){(int32_t)*rec0, (int32_t)(b->nrecs - *rec0), 1};
  /* A mixed block's paths are cells of its own (device/mix.h). */
  for (size_t q = *rec0; q < b->nrecs; q++)
    if (b->recs[q].peer < 0 && t->nvec) {
      b->recs[q].peer = r;
      b->recs[q].a =
          -1 - (((int64_t)t->id << 25 | (int64_t)j << 9) | b->recs[q].a);
    }
  *rec0 = b->nrecs;
  struct bstamp *st = b->nstamps ? &b->stamps[b->nstamps - 1] : NULL;
  if (st && st->task == -1) {
    st->call = t->call;
    st->task = t->tl + (p > 0);
    st->block = p ? j * t->nvec + (p - 1) : j;
  }
  return PLD_OK;
}

/* A folded loop (l, PLD__TM_LOOP) of rank r's core: its turns after the
 * two its block's records (since rec0) end with. */
static int unfold(struct brank *b, int r, const struct pld__tbuf *buf,
                  const struct pld__mrec *l, size_t rec0) {
  const size_t k = (size_t)l->peer;
  if (l->peer < 1 || l->peer > PLD__FOLD_TURN || l->a < 1 ||
      b->nrecs - rec0 < 2 * k)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d's %s folded a loop of %d "
                         "records a turn without two turns before it",
                         r, buf->name, l->peer);
  for (int64_t n = 1; n <= l->a; n++)
    for (size_t j = 0; j < k; j++) {
      struct pld__tl_rec *x =
          more(&b->recs, b->nrecs, &b->caprecs, sizeof *b->recs);
      if (!x)
        return nomem();
      /* The two recorded turns end where the unfolded ones begin. */
      const size_t w = b->nrecs - (size_t)(n - 1) * k - k, v = w - k;
      *x = b->recs[w];
      x->a = pld__fold_value(b->recs[v].a, b->recs[w].a, n);
      x->b = pld__fold_value(b->recs[v].b, b->recs[w].b, n);
      b->nrecs++;
    }
  return PLD_OK;
}

/* A core's buffer: its records, each block's closed by its end (and, with
 * clock, its events to stamp). */
static int read_core(struct brank *b, int r, struct pld__tbuf *buf, int clock) {
  size_t rec0 = b->nrecs;
  uint32_t *at = clock ? pld__calloc((size_t)buf->n + 1, sizeof *at) : NULL;
  int st = clock && !at ? nomem() : PLD_OK;
  for (uint32_t i = 0; i < buf->n && !st; i++) {
    struct pld__tev *e = &buf->ev[i];
    if (at)
      at[i] = (uint32_t)b->nrecs;
    struct pld__mrec one;
    const struct pld__mrec *m;
    int nm = recs_of(e, &one, &m);
    if (!nm && at)
      st = stamp_core(b, e, at, i);
    for (; nm > 0 && !st; nm--, m++) {
      if (m->kind == PLD__TM_BLOCK) {
        st = block_ends(b, r, buf, m, &rec0);
        continue;
      }
      if (m->kind == PLD__TM_LOOP) {
        st = unfold(b, r, buf, m, rec0);
        continue;
      }
      if (m->kind < PLD__TL_COMPUTE ||
          (m->kind > PLD__TL_LAST && m->kind != PLD__TM_BARRIER))
        continue;
      struct pld__tl_rec *rec =
          more(&b->recs, b->nrecs, &b->caprecs, sizeof *b->recs);
      if (!rec) {
        st = nomem();
        break;
      }
      *rec = (struct pld__tl_rec){.kind = m->kind,
                                  .sub = m->sub,
                                  .peer = m->peer,
                                  .a = m->a,
                                  .b = m->b};
      b->nrecs++;
    }
  }
  pld__free(at);
  if (!st && rec0 != b->nrecs)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "timing model: rank %d's %s recorded work outside a "
                         "block",
                         r, buf->name);
  return st;
}

/* The timeline of ranks' builders b (pointing into them), in arrays of
 * the caller's to free: tl->ranks, then per rank calls, tasks, blocks. */
struct tlmem {
  struct pld__tl_rank *ranks;
  struct pld__tl_call **calls;
  struct pld__tl_task **tasks;
  struct pld__tl_block **blocks;
  struct pld__tl_ref **after; /* per rank: its calls' waits on others */
  /* With the modeled clock, per rank: when each record began and ended,
   * and each call's start and end (the replay writes them). */
  int64_t **t0, **t1, **spans;
};

static void tlmem_free(struct tlmem *t, int n) {
  for (int r = 0; r < n && t->calls; r++) {
    pld__free(t->calls[r]);
    pld__free(t->tasks[r]);
    pld__free(t->blocks[r]);
    pld__free(t->after[r]);
    pld__free(t->t0[r]);
    pld__free(t->t1[r]);
    pld__free(t->spans[r]);
  }
  pld__free(t->ranks);
  pld__free(t->calls);
  pld__free(t->tasks);
  pld__free(t->blocks);
  pld__free(t->after);
  pld__free(t->t0);
  pld__free(t->t1);
  pld__free(t->spans);
}

/* The calls rank r's call c waits for through the host tasks it runs
 * after (each host task waits for a count of every rank's calls): the
 * last of each rank's, into ref.  Returns how many. */
static int32_t after_refs(const struct pld_program *p, int r, int c,
                          struct pld__tl_ref *ref) {
  const struct pld__devplan *pl = &p->plan.plans[r];
  const int before = c < pl->ncalls ? pl->calls[c].after_tasks : 0;
  int32_t n = 0;
  for (int q = 0; q < p->plan.nranks; q++) {
    int need = 0;
    for (int t = 0; t < before; t++)
      if (p->plan.tasks[t].need[q] > need)
        need = p->plan.tasks[t].need[q];
    if (need > 0)
      ref[n++] = (struct pld__tl_ref){q, need - 1};
  }
  return n;
}

/* The bytes a run of arguments argv copies to rank r's device (in 1) or
 * from it (in 0). */
static int64_t copied(const struct pld_program *p, const pld_arg *argv, int r,
                      int in) {
  const struct pld__devplan *pl = &p->plan.plans[r];
  int64_t n = 0;
  for (int b = 0; b < pl->nbufs; b++)
    if (pld__slice_copied(p, argv, &pl->bufs[b], in))
      n += (int64_t)pl->bufs[b].nbytes;
  return n;
}

static int assemble(const struct pld_program *p, const pld_arg *argv,
                    const struct brank *b, int clock, struct tlmem *mem,
                    struct pld__timeline *tl) {
  const int n = p->plan.nranks;
  mem->ranks = pld__calloc((size_t)n, sizeof *mem->ranks);
  mem->calls = pld__calloc((size_t)n, sizeof *mem->calls);
  mem->tasks = pld__calloc((size_t)n, sizeof *mem->tasks);
  mem->blocks = pld__calloc((size_t)n, sizeof *mem->blocks);
  mem->after = pld__calloc((size_t)n, sizeof *mem->after);
  mem->t0 = pld__calloc((size_t)n, sizeof *mem->t0);
  mem->t1 = pld__calloc((size_t)n, sizeof *mem->t1);
  mem->spans = pld__calloc((size_t)n, sizeof *mem->spans);
  if (!mem->ranks || !mem->calls || !mem->tasks || !mem->blocks || !mem->t0 ||
      !mem->t1 || !mem->spans)
    return nomem();
  for (int r = 0; r < n; r++) {
    const struct brank *q = &b[r];
    struct pld__tl_call *calls = mem->calls[r] =
        pld__calloc(q->ncalls + 1, sizeof *calls);
    struct pld__tl_task *tasks = mem->tasks[r] =
        pld__calloc(2 * q->ntasks + 1, sizeof *tasks);
    struct pld__tl_block *blocks = mem->blocks[r] =
        pld__calloc(q->nblocks + 1, sizeof *blocks);
    if (!calls || !tasks || !blocks)
      return nomem();
    int64_t *t0 = NULL, *t1 = NULL, *spans = NULL;
    if (clock) {
      t0 = mem->t0[r] = pld__calloc(q->nrecs + 1, sizeof *t0);
      t1 = mem->t1[r] = pld__calloc(q->nrecs + 1, sizeof *t1);
      spans = mem->spans[r] = pld__calloc(2 * q->ncalls + 1, sizeof *spans);
      if (!t0 || !t1 || !spans)
        return nomem();
    }
    for (size_t k = 0; k < q->ntasks; k++) {
      const struct btask *t = &q->tasks[k];
      /* Its parts: all of it, or a mixed kernel's cube parts and then
       * its vector parts. */
      for (int32_t part = 0, first = 0; part < parts_of(t); part++) {
        const int32_t count = part ? t->launched * t->nvec : t->launched;
        int32_t nb = 0; /* up to the last block that ran */
        for (int32_t j = first; j < first + count; j++) {
          const struct bblock *bl = &q->blocks[t->block0 + j];
          blocks[t->block0 + j] = (struct pld__tl_block){
              bl->nrec, q->recs + bl->rec0, t0 ? t0 + bl->rec0 : NULL,
              t1 ? t1 + bl->rec0 : NULL};
          if (bl->seen)
            nb = j - first + 1;
        }
        tasks[t->tlg + part] =
            (struct pld__tl_task){.name = t->name,
                                  .cube = t->nvec ? !part : t->cube,
                                  .with_previous = part > 0,
                                  .nblocks = nb,
                                  .blocks = blocks + t->block0 + first,
                                  .ndeps = t->ndeps,
                                  .deps = q->deps + t->dep0};
        first += count;
      }
    }
    struct pld__tl_ref *after = mem->after[r] =
        pld__calloc(q->ncalls * (size_t)n + 1, sizeof *after);
    if (!after)
      return nomem();
    for (size_t c = 0; c < q->ncalls; c++) {
      const struct bcall *bc = &q->calls[c];
      const struct btask *last = &q->tasks[bc->task0 + bc->ntasks - 1];
      calls[c] = (struct pld__tl_call){
          .name = bc->name,
          .ntasks = bc->ntasks ? last->tl + parts_of(last) : 0,
          .tasks = tasks + (bc->ntasks ? q->tasks[bc->task0].tlg : 0),
          .after = after + c * (size_t)n,
          .span_ps = spans ? spans + 2 * c : NULL};
      calls[c].nafter = after_refs(p, r, (int)c, after + c * (size_t)n);
    }
    mem->ranks[r] = (struct pld__tl_rank){.device = p->plan.device_ids[r],
                                          .bytes_in = copied(p, argv, r, 1),
                                          .bytes_out = copied(p, argv, r, 0),
                                          .ncalls = (int32_t)q->ncalls,
                                          .calls = calls};
  }
  tl->nranks = n;
  tl->ranks = mem->ranks;
  return PLD_OK;
}

/* ---- the trace in modeled time --------------------------------------- */

/* The report's span of rank r's block `block` of task `task` of call
 * `call` (the timeline's), or NULL. */
static const struct pld__tl_span *span_of(const struct pld__tl_report *rep,
                                          int32_t r, int32_t call, int32_t task,
                                          int32_t block) {
  const struct pld__tl_span key = {
      .rank = r, .call = call, .task = task, .block = block};
  int32_t lo = 0, hi = rep->nspans;
  while (lo < hi) { /* the spans are by (rank, call, task, block) */
    int32_t mid = lo + (hi - lo) / 2;
    const struct pld__tl_span *m = &rep->spans[mid];
    int before = m->rank != key.rank   ? m->rank < key.rank
                 : m->call != key.call ? m->call < key.call
                 : m->task != key.task ? m->task < key.task
                                       : m->block < key.block;
    if (before)
      lo = mid + 1;
    else
      hi = mid;
  }
  const struct pld__tl_span *f = lo < rep->nspans ? &rep->spans[lo] : NULL;
  return f && f->rank == r && f->call == call && f->task == task &&
                 f->block == block
             ? f
             : NULL;
}

/* Rank r's stamped events get their modeled times (from base, the run's
 * first device event, in the host's clock), in ps from the replay; those
 * the replay has no time for keep the host's. */
static void stamp_rank(const struct pld_program *p, const struct brank *b,
                       const struct tlmem *mem, int32_t r, int64_t base) {
  const struct pld__tl_report *rep = &p->rs.model->rep;
  const int64_t *t0 = mem->t0[r], *t1 = mem->t1[r], *calls = mem->spans[r];
  const int64_t *v = p->plan.machine.v;
  for (size_t i = 0; i < b->nstamps; i++) {
    const struct bstamp *s = &b->stamps[i];
    int64_t a = -1, z = -1;
    const int call_known = (size_t)s->call < b->ncalls;
    if (s->ev->kind == PLD__TEV_DISPATCH && call_known) {
      a = calls[2 * s->call];
      z = calls[2 * s->call + 1];
    } else if (s->ev->kind == PLD__TEV_LAUNCH && call_known) {
      /* The AICPU submits the call's launches one after another. */
      z = calls[2 * s->call] + 1000 * (v[PLD__M_HOST_DISPATCH_NS] +
                                       (s->task + 1) * v[PLD__M_LAUNCH_NS]);
      a = z - 1000 * v[PLD__M_LAUNCH_NS];
    } else if (s->ev->kind == PLD__TEV_BLOCK) {
      const struct pld__tl_span *sp =
          s->task >= 0 ? span_of(rep, r, s->call, s->task, s->block) : NULL;
      if (sp) {
        a = sp->start_ps;
        z = sp->end_ps;
      }
    } else if (s->r0 < s->r1 && (size_t)s->r1 <= b->nrecs) {
      a = t0[s->r0];
      z = t1[s->r1 - 1];
    } else if (s->r0 == s->r1 && s->r0 > 0 && (size_t)s->r0 <= b->nrecs) {
      a = z = t1[s->r0 - 1];
    }
    if (a >= 0) {
      s->ev->t0 = base + a / 1000;
      s->ev->t1 = base + (z > a ? z : a) / 1000;
    }
  }
}

static void stamp_run(const struct pld_program *p, const struct brank *b,
                      const struct tlmem *mem) {
  int64_t base = INT64_MAX;
  for (int r = 0; r < p->plan.nranks; r++)
    for (size_t i = 0; i < b[r].nstamps; i++)
      if (b[r].stamps[i].ev->t0 < base)
        base = b[r].stamps[i].ev->t0;
  for (int r = 0; r < p->plan.nranks; r++)
    stamp_rank(p, &b[r], mem, r, base);
}

/* ---- a run's end ------------------------------------------------------------
 */

/* Rank r's buffer b could not hold the run's records: the variable that
 * sets its size (the trace's, where it gives more). */
static int too_many(const struct pld_program *p, int r,
                    const struct pld__tbuf *b) {
  const struct pld__tunables *t = pld__tunables();
  if (p->plan.tracing && (int64_t)b->cap == t->PLD_TRACE_EVENTS)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "timing model: rank %d's %s recorded more than its "
                         "buffer holds (PLD_TRACE_EVENTS=%u with the trace "
                         "on, short by %llu events): raise PLD_TRACE_EVENTS",
                         r, b->name, b->cap, (unsigned long long)b->lost);
  return pld__fail_api(
      PLD_ERR_CONFIG,
      "timing model: rank %d's %s recorded more than its buffer holds "
      "(PLD_MODEL_RECORDS=%lld: %u events of %d records, short by %llu "
      "events): raise PLD_MODEL_RECORDS",
      r, b->name, (long long)t->PLD_MODEL_RECORDS, b->cap, PLD__PACK_RECS,
      (unsigned long long)b->lost);
}

int pld__model_run_end(struct pld_program *p, const pld_arg *argv,
                       struct pld__tbuf *const *const *bufs, const int *nbufs) {
  struct pld__model *m = p->rs.model;
  if (!m)
    return PLD_OK;
  report_free(m);
  const int n = p->plan.nranks;
  for (int r = 0; r < n; r++)
    for (int i = 0; i < nbufs[r]; i++)
      if (bufs[r][i]->lost)
        return too_many(p, r, bufs[r][i]);
  struct brank *b = pld__calloc((size_t)n, sizeof *b);
  if (!b)
    return nomem();
  int st = PLD_OK;
  for (int r = 0; r < n && !st; r++) {
    b[r].nranks = n;
    for (int i = 0; i < nbufs[r] && !st; i++)
      st = (i ? read_core : read_aicpu)(&b[r], r, bufs[r][i], m->clock);
  }
  struct tlmem mem = {0};
  struct pld__timeline tl;
  if (!st)
    st = assemble(p, argv, b, m->clock, &mem, &tl);
  if (!st) {
    char msg[1024];
    const pld_platform_info *plat = p->plan.plat;
    st = pld__tl_replay(&tl, &p->plan.machine, plat->vector_cores,
                        plat->cube_cores, plat->server_devices, &m->rep, msg,
                        sizeof msg);
    if (st)
      st = pld__fail_api(st, "timing model: %s", msg);
    else
      m->have = 1;
  }
  if (!st)
    st = pld__model_publish(p, m, &tl);
  if (!st && m->clock)
    stamp_run(p, b, &mem);
  tlmem_free(&mem, n);
  for (int r = 0; r < n; r++)
    brank_free(&b[r]);
  pld__free(b);
  if (!st && m->out && pld_process_index() == 0)
    st = pld__model_write_json(&m->pub, m->out);
  if (st)
    report_free(m);
  return st;
}
