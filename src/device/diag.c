/* device/diag.c: the diagnostics files of a device (device/diag.h): the
 * scheduler's hooks that record a dispatch's tasks, their order and
 * counts, and the writer of its deps.json and scope_stats.jsonl.  The
 * format: docs/diagnostics-files.md. */
#include "device/diag.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "device/sched_hooks.h"

/* A launch's argument as recorded (the task's own copy is freed with it). */
struct darg {
  const char *param; /* the kernel's parameter name (static) */
  int dir, kind;     /* kind: PLD_ARG_SCALAR, else tensor (window: win) */
  int win;
  pld_dtype dtype;
  int ndim;
  int64_t shape[PLD_MAX_DIMS];
  size_t nbytes, win_offset;
  uintptr_t addr;
  int32_t win_buf;
  const char *counts; /* a segment's counts (name), or NULL */
  int32_t counts_index;
};

struct dtask {
  int32_t seq, blocks, blocks_run;
  const pld_signature *sig;
  int argc, nregions;
  struct darg *args;
  struct pld__sched_region *regions;
  int64_t launched_ns, first_ns, last_ns;
  struct pld__counts counts;
};

struct dedge {
  int32_t from, to;
  int kind;
  struct pld__sched_region rf, rt; /* regions (arg -2: none) */
  size_t from_off, to_off, n;
};

struct pld__diag {
  unsigned what;
  char *dir;
  int rank, device;
  int ntasks, captasks, nedges, capedges;
  struct dtask **tasks;
  struct dedge *edges;
  int lost; /* a record did not fit in memory */
};

int pld__diag_create(unsigned what, const char *dir, int rank, int device,
                     struct pld__diag **out) {
  struct pld__diag *d = pld__calloc(1, sizeof *d);
  char *copy = d ? pld__strdup(dir) : NULL;
  if (!copy) {
    pld__free(d);
    return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory "
                                    "(diagnostics)");
  }
  d->what = what;
  d->dir = copy;
  d->rank = rank;
  d->device = device;
  *out = d;
  return PLD_OK;
}

/* Drops the dispatch's records. */
static void records_clear(struct pld__diag *d) {
  for (int i = 0; i < d->ntasks; i++) {
    pld__free(d->tasks[i]->args);
    pld__free(d->tasks[i]->regions);
    pld__free(d->tasks[i]);
  }
  d->ntasks = d->nedges = 0;
  d->lost = 0;
}

void pld__diag_destroy(struct pld__diag *d) {
  if (!d)
    return;
  records_clear(d);
  pld__free(d->tasks);
  pld__free(d->edges);
  pld__free(d->dir);
  pld__free(d);
}

/* ---- the hooks (device/sched_hooks.h) ------------------------------------ */

static int diag_open(const struct pld__comm_env *env, int rank, void **ctx) {
  (void)rank;
  *ctx = env->diag;
  return PLD_OK;
}

/* The task's record, listed in the dispatch's (freed with them). */
static int diag_task_new(void *ctx, void **task) {
  struct pld__diag *d = ctx;
  if (d->ntasks == d->captasks) {
    int cap = d->captasks ? 2 * d->captasks : 16;
    struct dtask **v = pld__realloc(d->tasks, (size_t)cap * sizeof *v);
    if (!v)
      return PLD_ERR_NOMEM;
    d->tasks = v;
    d->captasks = cap;
  }
  struct dtask *t = pld__calloc(1, sizeof *t);
  if (!t)
    return PLD_ERR_NOMEM;
  t->seq = -1;
  d->tasks[d->ntasks++] = t;
  *task = t;
  return PLD_OK;
}

static void diag_task_launch(void *ctx, void *task,
                             const struct pld__sched_launch *l) {
  struct pld__diag *d = ctx;
  struct dtask *t = task;
  t->seq = l->seq;
  t->sig = l->sig;
  t->blocks = l->blocks;
  t->launched_ns = pld__now_ns();
  t->args = pld__calloc((size_t)l->argc + 1, sizeof *t->args);
  t->regions = pld__calloc((size_t)l->nregions + 1, sizeof *t->regions);
  if (!t->args || !t->regions) {
    d->lost = 1;
    return;
  }
  t->argc = l->argc;
  t->nregions = l->nregions;
  memcpy(t->regions, l->regions, (size_t)l->nregions * sizeof *t->regions);
  for (int i = 0; i < l->argc; i++) {
    struct darg *a = &t->args[i];
    a->param = l->sig->params[i].name;
    a->dir = (int)l->sig->params[i].dir;
    a->kind = (int)l->argv[i].kind;
    if (a->kind == PLD_ARG_SCALAR)
      continue;
    const struct pld__tensor *v = l->argv[i].v.t;
    a->win = (v->flags & PLD__T_WINDOW) != 0;
    a->dtype = v->dtype;
    a->ndim = v->ndim;
    memcpy(a->shape, v->shape, sizeof a->shape);
    a->nbytes = v->nbytes;
    a->addr = (uintptr_t)v->data;
    a->win_buf = v->win_buf;
    a->win_offset = v->win_offset;
    if (v->seg) {
      a->counts = v->seg->at.name ? v->seg->at.name : "counts";
      a->counts_index = v->seg->at.index;
    }
  }
}

static void diag_task_depends(void *ctx, void *task, const void *before,
                              const struct pld__sched_dep *why) {
  struct pld__diag *d = ctx;
  if (d->nedges == d->capedges) {
    int cap = d->capedges ? 2 * d->capedges : 16;
    struct dedge *v = pld__realloc(d->edges, (size_t)cap * sizeof *v);
    if (!v) {
      d->lost = 1;
      return;
    }
    d->edges = v;
    d->capedges = cap;
  }
  const struct dtask *from = before, *to = task;
  struct dedge e = {from->seq,   to->seq, why->kind, {.arg = -2},
                    {.arg = -2}, 0,       0,         why->n};
  if (why->r_before) {
    e.rf = *why->r_before;
    e.from_off = (size_t)((const char *)why->lo - (const char *)e.rf.base);
  }
  if (why->r) {
    e.rt = *why->r;
    e.to_off = (size_t)((const char *)why->lo - (const char *)e.rt.base);
  }
  d->edges[d->nedges++] = e;
}

/* What the block on this thread counts, and what it replaced. */
static _Thread_local struct {
  struct pld__counts counts, *saved;
  int64_t t0;
} me_count;

static void diag_block_begin(void *ctx, void *task,
                             const struct pld__sched_block *b) {
  (void)task;
  (void)b;
  if (!(((struct pld__diag *)ctx)->what & PLD__DIAG_STATS))
    return;
  memset(&me_count.counts, 0, sizeof me_count.counts);
  me_count.saved = pld__obs.counts;
  pld__obs.counts = &me_count.counts;
  me_count.t0 = pld__now_ns();
}

/* With the lock held: the block's counts join its task's. */
static void diag_block_end(void *ctx, void *task,
                           const struct pld__sched_block *b) {
  (void)b;
  if (!(((struct pld__diag *)ctx)->what & PLD__DIAG_STATS))
    return;
  struct dtask *t = task;
  int64_t now = pld__now_ns();
  if (!t->blocks_run++ || me_count.t0 < t->first_ns)
    t->first_ns = me_count.t0;
  if (now > t->last_ns)
    t->last_ns = now;
  pld__counts_add(&t->counts, &me_count.counts);
}

static void diag_block_leave(void *ctx, void *task,
                             const struct pld__sched_block *b) {
  (void)task;
  (void)b;
  if (((struct pld__diag *)ctx)->what & PLD__DIAG_STATS)
    pld__obs.counts = me_count.saved;
}

const struct pld__sched_hooks pld__sched_diag_hooks = {
    .name = "diag",
    .open = diag_open,
    .task_new = diag_task_new,
    .task_launch = diag_task_launch,
    .task_depends = diag_task_depends,
    .block_begin = diag_block_begin,
    .block_end = diag_block_end,
    .block_leave = diag_block_leave,
};

/* ---- the files ------------------------------------------------------------
 */

/* A JSON string (names are identifiers, but escaped all the same). */
static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    char e[8];
    fwrite(e, 1, pld__json_char(e, (unsigned char)*s), f);
  }
  fputc('"', f);
}

static const char *dir_name(int dir) {
  return dir == PLD_DIR_IN ? "in" : dir == PLD_DIR_OUT ? "out" : "inout";
}

static const char *why_name(int kind, const struct dedge *e) {
  if (kind == PLD__DEP_OVERLAP)
    return e->rf.counts || e->rt.counts ? "counts" : "overlap";
  return kind == PLD__DEP_EXPLICIT ? "explicit" : "?";
}

/* The parameter a region belongs to, for an edge. */
static const char *region_param(const struct dtask *t,
                                const struct pld__sched_region *r) {
  if (r->arg >= 0 && r->arg < t->argc)
    return t->args[r->arg].param;
  return r->arg == -1 ? "launch_by" : NULL;
}

static const struct dtask *task_of(const struct pld__diag *d, int32_t seq) {
  for (int i = 0; i < d->ntasks; i++)
    if (d->tasks[i]->seq == seq)
      return d->tasks[i];
  return NULL;
}

static void put_arg(FILE *f, const struct darg *a) {
  fputs("{\"param\":", f);
  put_str(f, a->param);
  fprintf(f, ",\"dir\":\"%s\"", dir_name(a->dir));
  if (a->kind == PLD_ARG_SCALAR) {
    fputs(",\"kind\":\"scalar\"}", f);
    return;
  }
  fprintf(f, ",\"kind\":\"%s\",\"dtype\":\"%s\",\"shape\":[",
          a->win ? "window" : "tensor", pld_dtype_name(a->dtype));
  for (int k = 0; k < a->ndim; k++)
    fprintf(f, k ? ",%lld" : "%lld", (long long)a->shape[k]);
  fprintf(f, "],\"bytes\":%zu,\"addr\":\"0x%llx\"", a->nbytes,
          (unsigned long long)a->addr);
  if (a->win)
    fprintf(f, ",\"buffer\":%d,\"offset\":%zu", (int)a->win_buf, a->win_offset);
  if (a->counts) {
    fputs(",\"segment\":{\"counts\":", f);
    put_str(f, a->counts);
    fprintf(f, ",\"index\":%d}", (int)a->counts_index);
  }
  fputc('}', f);
}

static void put_task(FILE *f, const struct dtask *t) {
  fprintf(f, "{\"id\":%d,\"kernel\":", (int)t->seq);
  put_str(f, t->sig ? t->sig->name : "?");
  fprintf(f, ",\"core\":\"%s\",\"blocks\":%d,\"args\":[",
          t->sig ? pld__core_type_name(t->sig->core_type) : "?",
          (int)t->blocks);
  for (int i = 0; i < t->argc; i++) {
    fputs(i ? ",\n    " : "\n    ", f);
    put_arg(f, &t->args[i]);
  }
  fputs("],\n   \"regions\":[", f);
  for (int i = 0; i < t->nregions; i++) {
    const struct pld__sched_region *r = &t->regions[i];
    fputs(i ? "," : "", f);
    fputs("{\"param\":", f);
    put_str(f, region_param(t, r));
    fprintf(f,
            ",\"addr\":\"0x%llx\",\"bytes\":%zu,\"writes\":%s,\"counts\":%s}",
            (unsigned long long)(uintptr_t)r->base, r->nbytes,
            r->writes ? "true" : "false", r->counts ? "true" : "false");
  }
  fputs("]}", f);
}

/* One side of an edge: its parameter, whether it writes, its bytes. */
static void put_side(FILE *f, const char *side, const struct dtask *t,
                     const struct pld__sched_region *r, size_t off, size_t n) {
  if (r->arg == -2)
    return;
  fprintf(f, ",\"%s\":{\"param\":", side);
  put_str(f, t ? region_param(t, r) : NULL);
  fprintf(f, ",\"writes\":%s,\"counts\":%s,\"bytes\":[%zu,%zu]}",
          r->writes ? "true" : "false", r->counts ? "true" : "false", off,
          off + n);
}

static int write_deps(const struct pld__diag *d, const char *path, int call,
                      const char *fn, uint32_t run) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f,
          "{\"producer\":\"pld\",\"format\":\"deps\",\"version\":1,"
          "\"rank\":%d,\"device\":%d,\"run\":%u,\"dispatch\":%d,"
          "\"function\":",
          d->rank, d->device, run, call);
  put_str(f, fn);
  fputs(",\n \"tasks\":[", f);
  for (int i = 0; i < d->ntasks; i++) {
    fputs(i ? ",\n  " : "\n  ", f);
    put_task(f, d->tasks[i]);
  }
  fputs("],\n \"edges\":[", f);
  for (int i = 0; i < d->nedges; i++) {
    const struct dedge *e = &d->edges[i];
    fprintf(f, "%s{\"from\":%d,\"to\":%d,\"why\":\"%s\"", i ? ",\n  " : "\n  ",
            (int)e->from, (int)e->to, why_name(e->kind, e));
    put_side(f, "from_side", task_of(d, e->from), &e->rf, e->from_off, e->n);
    put_side(f, "to_side", task_of(d, e->to), &e->rt, e->to_off, e->n);
    fputc('}', f);
  }
  fputs("]}\n", f);
  return fclose(f);
}

/* ,"key":<ns as microseconds, three decimals> */
static void put_us(FILE *f, const char *key, int64_t ns) {
  fprintf(f, ",\"%s\":%s%lld.%03lld", key, ns < 0 ? "-" : "",
          (long long)((ns < 0 ? -ns : ns) / 1000),
          (long long)((ns < 0 ? -ns : ns) % 1000));
}

static void put_counts(FILE *f, const struct pld__counts *c) {
  fprintf(f,
          ",\"gm_load_bytes\":%lld,\"gm_store_bytes\":%lld,"
          "\"put_bytes\":%lld,\"get_bytes\":%lld,"
          "\"remote_load_bytes\":%lld,\"remote_store_bytes\":%lld,"
          "\"colls\":%lld,\"coll_bytes\":%lld,\"notifies\":%lld,"
          "\"waits\":%lld",
          (long long)c->gm_load, (long long)c->gm_store,
          (long long)c->rma[PLD__CNT_PUT], (long long)c->rma[PLD__CNT_GET],
          (long long)c->rma[PLD__CNT_RLOAD], (long long)c->rma[PLD__CNT_RSTORE],
          (long long)c->colls, (long long)c->coll_bytes, (long long)c->notifies,
          (long long)c->waits);
  put_us(f, "wait_us", c->wait_ns);
}

static int write_stats(const struct pld__diag *d, const char *path, int call,
                       const char *fn, uint32_t run, int64_t t0, int64_t t1) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  struct pld__counts sum;
  memset(&sum, 0, sizeof sum);
  long long blocks = 0;
  for (int i = 0; i < d->ntasks; i++) {
    pld__counts_add(&sum, &d->tasks[i]->counts);
    blocks += d->tasks[i]->blocks_run;
  }
  fprintf(f,
          "{\"scope\":\"dispatch\",\"rank\":%d,\"device\":%d,\"run\":%u,"
          "\"dispatch\":%d,\"name\":",
          d->rank, d->device, run, call);
  put_str(f, fn);
  fprintf(f, ",\"launches\":%d,\"blocks\":%lld", d->ntasks, blocks);
  put_us(f, "start_us", 0);
  put_us(f, "end_us", t1 - t0);
  put_counts(f, &sum);
  fputs("}\n", f);
  for (int i = 0; i < d->ntasks; i++) {
    const struct dtask *t = d->tasks[i];
    fprintf(f, "{\"scope\":\"task\",\"task\":%d,\"name\":", (int)t->seq);
    put_str(f, t->sig ? t->sig->name : "?");
    fprintf(f, ",\"core\":\"%s\",\"launches\":1,\"blocks\":%d",
            t->sig ? pld__core_type_name(t->sig->core_type) : "?",
            (int)t->blocks_run);
    put_us(f, "launch_us", t->launched_ns - t0);
    put_us(f, "start_us", (t->blocks_run ? t->first_ns : t->launched_ns) - t0);
    put_us(f, "end_us", (t->blocks_run ? t->last_ns : t->launched_ns) - t0);
    put_counts(f, &t->counts);
    fputs("}\n", f);
  }
  return fclose(f);
}

/* mkdir that accepts a folder already there. */
static int make_dir(const char *path) {
  return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

int pld__diag_dispatch_end(struct pld__diag *d, int call, const char *fn,
                           uint32_t run, int64_t t0, int64_t t1, int st,
                           char *msg, size_t cap) {
  int ret = PLD_OK;
  char path[4096 + 96];
  size_t n = (size_t)snprintf(path, sizeof path, "%s/rank%d/d%d", d->dir,
                              d->rank, call);
  if (st) {
    /* A failed dispatch writes nothing: its run fails. */
  } else if (d->lost) {
    ret = PLD_ERR_NOMEM;
    pld__catf(msg, cap,
              "pld diagnostics (rank %d, device %d): dispatch %d (%s): out "
              "of memory recording its tasks",
              d->rank, d->device, call, fn);
  } else if (n >= sizeof path - 40 || make_dir(path) ||
             ((d->what & PLD__DIAG_DEPS) &&
              (snprintf(path + n, sizeof path - n, "/deps.json"),
               write_deps(d, path, call, fn, run))) ||
             ((d->what & PLD__DIAG_STATS) &&
              (snprintf(path + n, sizeof path - n, "/scope_stats"),
               make_dir(path) ||
                   (snprintf(path + n, sizeof path - n,
                             "/scope_stats/scope_stats.jsonl"),
                    write_stats(d, path, call, fn, run, t0, t1))))) {
    ret = PLD_ERR_SYSTEM;
    pld__catf(msg, cap,
              "pld diagnostics (rank %d, device %d): dispatch %d (%s): "
              "cannot write %s: %s",
              d->rank, d->device, call, fn, path, strerror(errno));
  }
  records_clear(d);
  return ret;
}
