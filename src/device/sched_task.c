/* device/sched_task.c: a device's tasks, one per kernel launch: the
 * launch's arguments copied under the kernel's parameter names, the
 * tensor regions it touches, and the order among tasks those regions
 * decide (a task waits for the earlier ones it conflicts with). */
#include "core/alloc.h"
#include "device/sched_state.h"

void pld__sched_task_free(struct task *t) {
  if (!t)
    return;
  pld__free(t->argv);
  pld__free(t->tensors);
  pld__free(t->regions);
  pld__free(t->dependents);
  pld__free(t);
}

struct task *pld__sched_task_new(const struct pld__task_spec *spec) {
  struct task *t = pld__calloc(1, sizeof *t);
  int n = spec->argc;
  if (t) {
    t->argv = pld__calloc((size_t)n, sizeof *t->argv);
    t->tensors = pld__calloc((size_t)n, sizeof *t->tensors);
    /* A segment's tensor and its counts; pld_launch_by's counts. */
    t->regions = pld__calloc((size_t)(2 * n + 1), sizeof *t->regions);
  }
  if (!t || !t->argv || !t->tensors || !t->regions) {
    pld__sched_task_free(t);
    return NULL;
  }
  t->kernel = spec->kernel;
  t->scope = spec->scope;
  t->launched = t->blocks = spec->blocks;
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
    const struct pld__segment *seg = t->tensors[i].seg;
    if (seg) { /* ordered as all of the tensor cut, after its counts */
      t->regions[t->nregions++] = (struct pld__sched_region){
          seg->base, (size_t)seg->rows_of * seg->row_bytes,
          sig->params[i].dir != PLD_DIR_IN, i, 0};
      t->regions[t->nregions++] =
          (struct pld__sched_region){seg->at.counts, seg->at.bytes, 0, i, 1};
      t->dynamic = 1;
    } else {
      t->regions[t->nregions++] =
          (struct pld__sched_region){t->tensors[i].data, t->tensors[i].nbytes,
                                     sig->params[i].dir != PLD_DIR_IN, i, 0};
    }
  }
  if (spec->by) {
    t->by = *spec->by;
    t->regions[t->nregions++] =
        (struct pld__sched_region){t->by.at.counts, t->by.at.bytes, 0, -1, 1};
    t->dynamic = 1;
  }
  return t;
}

/* The name of the counts in messages. */
static const char *count_name(const struct pld__countref *at) {
  return at->name ? at->name : "counts";
}

/* Segment seg of parameter i of t: its rows now, in the task's copy of
 * the view.  Returns PLD_OK or PLD_ERR_BOUNDS (message in msg). */
static int segment_resolve(struct task *t, int i, char *msg, size_t cap) {
  struct pld__tensor *v = &t->tensors[i];
  const struct pld__segment *seg = v->seg;
  const char *cname = count_name(&seg->at);
  const char *k = t->kernel.sig->name;
  /* The counts' writers have finished: the scheduler's lock orders their
   * writes before these reads. */
  int64_t first = 0;
  for (int32_t j = 0; j <= seg->at.index; j++) {
    const int32_t n = seg->at.counts[j];
    if (n < 0)
      return pld__catf(msg, cap,
                       "kernel %s, parameter '%s': %s[%d] = %d: expected a "
                       "count of 0 or more",
                       k, v->name, cname, (int)j, (int)n),
             PLD_ERR_BOUNDS;
    first += j < seg->at.index ? n : 0;
  }
  const int32_t rows = seg->at.counts[seg->at.index];
  if (rows > seg->max_rows)
    return pld__catf(msg, cap,
                     "kernel %s, parameter '%s': segment %d of %s: %s[%d] = "
                     "%d rows, more than max_rows %lld",
                     k, v->name, (int)seg->at.index, cname, cname,
                     (int)seg->at.index, (int)rows, (long long)seg->max_rows),
           PLD_ERR_BOUNDS;
  if (first + rows > seg->rows_of)
    return pld__catf(msg, cap,
                     "kernel %s, parameter '%s': segment %d of %s: rows "
                     "[%lld, %lld) (%s[%d] = %d) end past the tensor's %lld "
                     "rows",
                     k, v->name, (int)seg->at.index, cname, (long long)first,
                     (long long)(first + rows), cname, (int)seg->at.index,
                     (int)rows, (long long)seg->rows_of),
           PLD_ERR_BOUNDS;
  /* The rows' dimension in the kernel's view: leading dimensions of 1
   * may have been added for the parameter (core/sig.c). */
  const int d = v->ndim - seg->ndim;
  if (d < 0)
    return pld__catf(msg, cap,
                     "kernel %s, parameter '%s': declared without the "
                     "segment's rows dimension",
                     k, v->name),
           PLD_ERR_BOUNDS;
  const size_t off = (size_t)first * seg->row_bytes;
  v->data = seg->base + off;
  v->win_offset = seg->base_win_offset + off;
  v->shape[d] = rows;
  v->nbytes = (size_t)rows * seg->row_bytes;
  return PLD_OK;
}

int pld__sched_task_resolve(struct task *t, const char **what, char *msg,
                            size_t cap) {
  const pld_signature *sig = t->kernel.sig;
  for (int i = 0; i < t->argc; i++)
    if (t->argv[i].kind != PLD_ARG_SCALAR && t->tensors[i].seg) {
      int st = segment_resolve(t, i, msg, cap);
      if (st) {
        *what = "pld_segment";
        return st;
      }
    }
  if (!t->by.at.counts)
    return PLD_OK;
  const int32_t n = t->by.at.counts[t->by.at.index];
  const char *cname = count_name(&t->by.at);
  const int64_t blocks =
      n < 0 ? -1 : ((int64_t)n + t->by.per_block - 1) / t->by.per_block;
  if (blocks < 0 || blocks > t->launched) {
    *what = "pld_launch_by";
    pld__catf(msg, cap,
              "kernel %s: %s[%d] = %d: expected 0 to %lld "
              "(at most %d blocks of %d)",
              sig->name, cname, (int)t->by.at.index, (int)n,
              (long long)t->launched * t->by.per_block, (int)t->launched,
              (int)t->by.per_block);
    return PLD_ERR_BOUNDS;
  }
  t->launched = t->blocks = (int32_t)blocks;
  return PLD_OK;
}

int pld__sched_tasks_conflict(const struct task *a, const struct task *b,
                              struct pld__sched_dep *why) {
  /* In a manual scope only explicit edges order tasks, but the device
   * itself reads counts when a task starts: their writers still come
   * first, and their readers before a later writer. */
  const int manual = a->scope && a->scope == b->scope;
  for (int i = 0; i < a->nregions; i++)
    for (int j = 0; j < b->nregions; j++) {
      const struct pld__sched_region *x = &a->regions[i], *y = &b->regions[j];
      if ((!manual || x->counts || y->counts) && (x->writes || y->writes) &&
          pld__ranges_overlap(x->base, x->nbytes, y->base, y->nbytes)) {
        if (why) {
          const char *lo =
              (const char *)x->base > (const char *)y->base ? x->base : y->base;
          const char *xe = (const char *)x->base + x->nbytes,
                     *ye = (const char *)y->base + y->nbytes;
          *why = (struct pld__sched_dep){PLD__DEP_OVERLAP, x, y, lo,
                                         (size_t)((xe < ye ? xe : ye) - lo)};
        }
        return 1;
      }
    }
  return 0;
}

int pld__sched_task_orders(const struct task *o, const struct task *t,
                           const struct pld__task_spec *spec,
                           struct pld__sched_dep *why) {
  if (pld__sched_tasks_conflict(o, t, why))
    return 1;
  for (int i = 0; i < spec->ndeps; i++)
    if (spec->deps[i] == o->seq) {
      *why = (struct pld__sched_dep){PLD__DEP_EXPLICIT, NULL, NULL, NULL, 0};
      return 1;
    }
  return 0;
}

int pld__sched_task_after(struct task *on, struct task *t) {
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
