/* host/task.c: the host tasks and intermediates of a host orchestration.
 * While the host is traced they are recorded; once the ranks are planned,
 * each task learns which calls of which rank it waits for, the later calls
 * that overlap it learn to wait for it, and the copies between host and
 * device memory around it are fixed; during a run, the host runs each task
 * once its calls have finished (host/run.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "host/ctl.h"
#include "host/program.h"

/* The context of a running host task. */
struct pld__task {
  const char *name;
  int nranks;
  int status; /* first failure: sticky */
  char msg[PLD__MSG_MAX];
};

/* ---- host tensors by index ------------------------------------------- */

struct pld__inter *pld__host_inter(const struct pld_program *p, int i) {
  return i >= p->plan.nargs && i - p->plan.nargs < p->plan.ninters
             ? &p->plan.inters[i - p->plan.nargs]
             : NULL;
}

const struct pld__tensor *pld__host_meta(const struct pld_program *p, int i) {
  const struct pld__inter *in = pld__host_inter(p, i);
  return in ? in->t : &p->plan.arg_meta[i];
}

const char *pld__host_name(const struct pld_program *p, int i) {
  const struct pld__inter *in = pld__host_inter(p, i);
  return in ? in->name : p->plan.host.sig->params[i].name;
}

unsigned char *pld__host_data(const struct pld_program *p, const pld_arg *argv,
                              int i) {
  const struct pld__inter *in = pld__host_inter(p, i);
  return in ? in->data : (unsigned char *)argv[i].v.t->data;
}

/* ---- intermediates --------------------------------------------------------
 */

static pld_tensor intermediate(pld_host hh, const char *fn, int32_t rank,
                               pld_dtype dtype, int ndim,
                               const int64_t *shape) {
  struct pld__host *h = hh.p;
  struct pld_program *p = h->prog;
  const char *name = p->plan.host.sig->name;
  pld_tensor bad = {&pld__invalid_tensor};
  if (h->status)
    return bad;
  if (rank != -1 && (rank < 0 || rank >= p->plan.nranks)) {
    pld__hfail(h, PLD_ERR_ARG,
               "%s (in %s): rank: expected [0, %d) (the world size), got %d",
               fn, name, p->plan.nranks, (int)rank);
    return bad;
  }
  struct pld__tensor t;
  if (pld__tensor_init(&t, fn, dtype, ndim, shape)) {
    pld__hfail(h, PLD_ERR_ARG, "%s (in %s)", pld_last_error(), name);
    return bad;
  }
  char label[48];
  if (rank < 0)
    pld__catf(label, sizeof label, "host intermediate #%d", p->plan.ninters);
  else
    pld__catf(label, sizeof label, "rank %d intermediate #%d", (int)rank,
              p->plan.ninters);
  struct pld__inter *v =
      pld__realloc(p->plan.inters, (size_t)(p->plan.ninters + 1) * sizeof *v);
  struct pld__tensor *d = pld__malloc(sizeof *d);
  char *label_copy = pld__strdup(label);
  if (v)
    p->plan.inters = v;
  if (!v || !d || !label_copy) {
    pld__free(d);
    pld__free(label_copy);
    pld__hfail(h, PLD_ERR_NOMEM, "%s (in %s): out of memory", fn, name);
    return bad;
  }
  struct pld__inter *in = &p->plan.inters[p->plan.ninters];
  memset(in, 0, sizeof *in);
  in->rank = rank;
  in->name = label_copy;
  *d = t;
  d->flags = PLD__T_INTER | (rank < 0 ? PLD__T_HOST : PLD__T_DEVICE);
  d->host_arg = p->plan.nargs + p->plan.ninters;
  d->host_offset = 0;
  d->dir = PLD_DIR_INOUT;
  d->name = in->name;
  in->t = d;
  p->plan.ninters++;
  return (pld_tensor){d};
}

pld_tensor pld_host_tensor(pld_host h, pld_dtype dtype, int ndim,
                           const int64_t *shape) {
  return intermediate(h, "pld_host_tensor", -1, dtype, ndim, shape);
}

pld_tensor pld_rank_tensor(pld_host h, int32_t rank, pld_dtype dtype, int ndim,
                           const int64_t *shape) {
  /* -1 is pld_host_tensor's: named as out of range here. */
  return intermediate(h, "pld_rank_tensor", rank == -1 ? INT32_MIN : rank,
                      dtype, ndim, shape);
}

/* ---- recording a host task ----------------------------------------------- */

int pld__host_task(pld_host hh, pld_host_task_fn fn, int argc,
                   const pld_arg *argv) {
  struct pld__host *h = hh.p;
  int st = pld__host_callee(h, "pld_host_task", fn.sig, !!fn.entry,
                            PLD_LEVEL_TASK, "PLD_HOST_TASK");
  if (st)
    return st;
  struct pld_program *p = h->prog;
  const char *name = p->plan.host.sig->name;
  const pld_signature *sig = fn.sig;
  char what[128];
  pld__catf(what, sizeof what, "pld_host_task (in %s)", name);
  pld_arg norm[PLD_MAX_PARAMS];
  st = pld__sig_check(sig, what, &p->plan.dims, argc, argv, norm, NULL, h->msg,
                      sizeof h->msg);
  if (st)
    return h->status = st;
  for (int i = 0; i < sig->nparams; i++) {
    if (norm[i].kind == PLD_ARG_SCALAR)
      continue;
    const struct pld__tensor *t = norm[i].v.t;
    const struct pld__inter *in =
        t->host_arg >= 0 ? pld__host_inter(p, t->host_arg) : NULL;
    const char *why =
        (t->flags & PLD__T_WINDOW)
            ? "a window view: windows live in the devices' memory"
        : t->host_arg < 0 ? "another tensor"
        : in && in->rank >= 0
            ? "a rank intermediate: it lives in its rank's device memory"
            : NULL;
    if (why)
      return pld__hfail(h, PLD_ERR_ARG,
                        "%s: %s: parameter '%s' (%d of %d): expected a "
                        "parameter of %s, a slice of one or a host "
                        "intermediate, got %s",
                        what, sig->name, sig->params[i].name, i + 1,
                        sig->nparams, name, why);
  }
  if (h->ntasks == h->captasks) {
    int cap = h->captasks ? 2 * h->captasks : 4;
    struct pld__hosttask *v =
        pld__realloc(h->tasks, (size_t)cap * sizeof *h->tasks);
    if (!v)
      return pld__hfail(h, PLD_ERR_NOMEM, "%s: out of memory", what);
    h->tasks = v;
    h->captasks = cap;
  }
  struct pld__hosttask *k = &h->tasks[h->ntasks++];
  k->fn = fn;
  k->argc = sig->nparams;
  k->before = h->ndisps;
  for (int i = 0; i < sig->nparams; i++) {
    k->argv[i] = norm[i];
    if (norm[i].kind == PLD_ARG_SCALAR)
      continue;
    k->t[i] = *norm[i].v.t;
    k->t[i].data = NULL;
    k->argv[i].v.t = NULL;
  }
  return PLD_OK;
}

/* ---- planning ----------------------------------------------------------- */

static int ranges_overlap(size_t a, size_t na, size_t b, size_t nb) {
  return a < b + nb && b < a + na;
}

/* Dispatch d and task k touch the same bytes of a host tensor, one of them
 * writing. */
static int conflict(const struct pld__dispatch *d,
                    const struct pld__hosttask *k) {
  const pld_signature *ds = d->fn.sig, *ks = k->fn.sig;
  for (int i = 0; i < d->argc; i++) {
    const struct pld__tensor *x = &d->t[i];
    if (d->argv[i].kind == PLD_ARG_SCALAR || (x->flags & PLD__T_WINDOW))
      continue;
    for (int j = 0; j < k->argc; j++) {
      const struct pld__tensor *y = &k->t[j];
      if (k->argv[j].kind == PLD_ARG_SCALAR || x->host_arg != y->host_arg ||
          !ranges_overlap(x->host_offset, x->nbytes, y->host_offset, y->nbytes))
        continue;
      if ((ds->params[i].dir | ks->params[j].dir) & PLD_DIR_OUT)
        return 1;
    }
  }
  return 0;
}

/* Appends the copies between task k's tensors of direction `dir` and the
 * device buffers of every rank overlapping them (only those some call
 * before the task wrote, if `written` is given). */
static int add_copies(struct pld_program *p, struct pld__taskplan *tp,
                      const struct pld__hosttask *k, unsigned dir,
                      unsigned char *const *written, int *n) {
  for (int r = 0; r < p->plan.nranks; r++) {
    const struct pld__devplan *pl = &p->plan.plans[r];
    for (int b = 0; b < pl->nbufs; b++) {
      const struct pld__devbuf *buf = &pl->bufs[b];
      if (written && !written[r][b])
        continue;
      for (int j = 0; j < k->argc; j++) {
        const struct pld__tensor *y = &k->t[j];
        if (k->argv[j].kind == PLD_ARG_SCALAR ||
            !(k->fn.sig->params[j].dir & dir) || buf->host_arg != y->host_arg ||
            !ranges_overlap(buf->host_offset, buf->nbytes, y->host_offset,
                            y->nbytes))
          continue;
        size_t lo = buf->host_offset > y->host_offset ? buf->host_offset
                                                      : y->host_offset;
        size_t eb = buf->host_offset + buf->nbytes,
               ey = y->host_offset + y->nbytes;
        size_t hi = eb < ey ? eb : ey;
        struct pld__hcopy *v = pld__realloc(
            tp->copies, (size_t)(tp->npre + tp->npost + 1) * sizeof *v);
        if (!v)
          return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
        tp->copies = v;
        struct pld__hcopy *c = &v[tp->npre + tp->npost];
        c->rank = r;
        c->host = y->host_arg;
        c->host_off = lo;
        c->dev_off = buf->offset + (lo - buf->host_offset);
        c->len = hi - lo;
        (*n)++;
      }
    }
  }
  return PLD_OK;
}

int pld__tasks_plan(struct pld_program *p, const struct pld__host *h) {
  if (!h->ntasks)
    return PLD_OK;
  int st = PLD_OK;
  p->plan.tasks = pld__calloc((size_t)h->ntasks, sizeof *p->plan.tasks);
  int *callix =
      pld__calloc((size_t)(h->ndisps ? h->ndisps : 1), sizeof *callix);
  int *count = pld__calloc((size_t)p->plan.nranks, sizeof *count);
  unsigned char **written =
      pld__calloc((size_t)p->plan.nranks, sizeof *written);
  if (!p->plan.tasks || !callix || !count || !written) {
    st = pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    goto out;
  }
  p->plan.ntasks = h->ntasks;
  for (int r = 0; r < p->plan.nranks; r++)
    p->plan.plans[r].report_calls = 1;
  for (int i = 0; i < h->ndisps; i++)
    callix[i] = count[h->disps[i].rank]++;
  for (int r = 0; r < p->plan.nranks && !st; r++)
    if (!(written[r] = pld__calloc((size_t)(p->plan.plans[r].nbufs + 1), 1)))
      st = pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  int marked = 0; /* dispatches whose writes are in `written` */
  for (int t = 0; t < h->ntasks && !st; t++) {
    const struct pld__hosttask *k = &h->tasks[t];
    struct pld__taskplan *tp = &p->plan.tasks[t];
    tp->fn = tp->run = k->fn;
    tp->argc = k->argc;
    tp->before = k->before;
    memcpy(tp->argv, k->argv, sizeof tp->argv);
    memcpy(tp->t, k->t, sizeof tp->t);
    if (!(tp->need = pld__calloc((size_t)p->plan.nranks, sizeof *tp->need))) {
      st = pld__fail_api(PLD_ERR_NOMEM, "out of memory");
      break;
    }
    for (int i = 0; i < h->ndisps; i++) {
      const struct pld__dispatch *d = &h->disps[i];
      if (!conflict(d, k))
        continue;
      struct pld__call *call = &p->plan.plans[d->rank].calls[callix[i]];
      if (i < k->before && tp->need[d->rank] < callix[i] + 1)
        tp->need[d->rank] = callix[i] + 1;
      else if (i >= k->before && call->after_tasks < t + 1)
        call->after_tasks = t + 1;
    }
    for (; marked < k->before; marked++) {
      const struct pld__dispatch *d = &h->disps[marked];
      const struct pld__call *call =
          &p->plan.plans[d->rank].calls[callix[marked]];
      for (int a = 0; a < call->argc; a++)
        if (call->args[a].buf >= 0 && (d->fn.sig->params[a].dir & PLD_DIR_OUT))
          written[d->rank][call->args[a].buf] = 1;
    }
    if (!(st = add_copies(p, tp, k, PLD_DIR_IN, written, &tp->npre)))
      st = add_copies(p, tp, k, PLD_DIR_OUT, NULL, &tp->npost);
  }
out:
  for (int r = 0; written && r < p->plan.nranks; r++)
    pld__free(written[r]);
  pld__free(written);
  pld__free(count);
  pld__free(callix);
  return st;
}

void pld__tasks_free(struct pld_program *p) {
  for (int t = 0; t < p->plan.ntasks; t++) {
    pld__free(p->plan.tasks[t].need);
    pld__free(p->plan.tasks[t].copies);
  }
  pld__free(p->plan.tasks);
  p->plan.tasks = NULL;
  p->plan.ntasks = 0;
  for (int i = 0; i < p->plan.ninters; i++) {
    pld__free(p->plan.inters[i].data);
    pld__free(p->plan.inters[i].t);
    pld__free(p->plan.inters[i].name);
  }
  pld__free(p->plan.inters);
  p->plan.inters = NULL;
  p->plan.ninters = 0;
}

/* ---- running ------------------------------------------------------------ */

int pld__inters_alloc(struct pld_program *p) {
  for (int i = 0; i < p->plan.ninters; i++) {
    struct pld__inter *in = &p->plan.inters[i];
    if (in->rank >= 0)
      continue;
    if (!(in->data = pld__calloc(1, in->t->nbytes ? in->t->nbytes : 1))) {
      pld__inters_release(p);
      return pld__fail_api(PLD_ERR_NOMEM, "%s: out of memory for %zu bytes",
                           in->name, in->t->nbytes);
    }
  }
  return PLD_OK;
}

void pld__inters_release(struct pld_program *p) {
  for (int i = 0; i < p->plan.ninters; i++) {
    pld__free(p->plan.inters[i].data);
    p->plan.inters[i].data = NULL;
  }
}

int pld__task_run(struct pld_program *p, const pld_arg *argv, int k) {
  struct pld__taskplan *tp = &p->plan.tasks[k];
  const pld_signature *sig = tp->run.sig;
  for (int i = 0; i < tp->npre; i++) {
    const struct pld__hcopy *c = &tp->copies[i];
    int st =
        p->be.cp->fetch(p, c->rank, c->dev_off,
                        pld__host_data(p, argv, c->host) + c->host_off, c->len);
    if (st)
      return st;
  }
  struct pld__tensor tensors[PLD_MAX_PARAMS];
  pld_arg args[PLD_MAX_PARAMS];
  for (int i = 0; i < tp->argc; i++) {
    args[i] = tp->argv[i];
    if (args[i].kind == PLD_ARG_SCALAR)
      continue;
    tensors[i] = tp->t[i];
    tensors[i].flags = PLD__T_HOST;
    tensors[i].data =
        pld__host_data(p, argv, tp->t[i].host_arg) + tp->t[i].host_offset;
    tensors[i].dir = sig->params[i].dir;
    tensors[i].name = sig->params[i].name;
    args[i].v.t = &tensors[i];
  }
  struct pld__task ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.name = sig->name;
  ctx.nranks = p->plan.nranks;
  tp->run.entry((pld_task){&ctx}, args);
  if (ctx.status)
    return pld__fail_msg(ctx.status, ctx.msg);
  for (int i = tp->npre; i < tp->npre + tp->npost; i++) {
    const struct pld__hcopy *c = &tp->copies[i];
    p->be.cp->store(p, c->rank, c->dev_off,
                    pld__host_data(p, argv, c->host) + c->host_off, c->len);
  }
  return PLD_OK;
}

int pld_task_fail(pld_task t, int status, const char *fmt, ...) {
  struct pld__task *c = t.p;
  char prefix[256];
  pld__catf(prefix, sizeof prefix, "host task %s: ", c->name);
  va_list ap;
  va_start(ap, fmt);
  int st = pld__first_failure(&c->status, c->msg, sizeof c->msg,
                              pld__user_status(status), prefix,
                              fmt ? fmt : "(no message)", ap);
  va_end(ap);
  return st;
}

int pld_task_world_size(pld_task t) { return t.p->nranks; }

/* ---- overrides ---------------------------------------------------------- */

/* The first difference between signatures a and b, in msg; 0 if none. */
static int sig_differs(const pld_signature *a, const pld_signature *b,
                       char *msg, size_t cap) {
  if (a->nparams != b->nparams) {
    pld__catf(msg, cap, "%s has %d parameters, %s %d", a->name, a->nparams,
              b->name, b->nparams);
    return 1;
  }
  for (int i = 0; i < a->nparams; i++) {
    const pld_param *x = &a->params[i], *y = &b->params[i];
    int same = x->kind == y->kind && x->dir == y->dir && x->dtype == y->dtype &&
               x->ndim == y->ndim;
    for (int d = 0; same && d < x->ndim; d++)
      same = x->dims[d].size == y->dims[d].size &&
             (x->dims[d].size != PLD_DYN ||
              strcmp(x->dims[d].name, y->dims[d].name) == 0);
    if (same)
      continue;
    char xs[160], ys[160];
    pld__param_str(xs, sizeof xs, x);
    pld__param_str(ys, sizeof ys, y);
    pld__catf(msg, cap, "parameter %d of %s is %s, of %s %s", i + 1, a->name,
              xs, b->name, ys);
    return 1;
  }
  return 0;
}

int pld_program_override(pld_program *p, pld_host_task_fn task,
                         pld_host_task_fn with) {
  const char *fn = "pld_program_override";
  if (!p)
    return pld__fail(PLD_ERR_ARG, "%s: p: expected a program, got NULL", fn);
  const char *problem =
      pld__sig_problem(task.sig, PLD_LEVEL_TASK, !!task.entry);
  if (!problem)
    problem = pld__sig_problem(with.sig, PLD_LEVEL_TASK, !!with.entry);
  if (problem)
    return pld__fail(PLD_ERR_ARG,
                     "%s: expected functions declared with PLD_HOST_TASK, got "
                     "%s",
                     fn, problem);
  char why[512];
  if (sig_differs(task.sig, with.sig, why, sizeof why))
    return pld__fail(PLD_ERR_ARG,
                     "%s: with: its signature must be the task's: %s", fn, why);
  int found = 0;
  for (int t = 0; t < p->plan.ntasks; t++)
    if (p->plan.tasks[t].fn.sig == task.sig &&
        p->plan.tasks[t].fn.entry == task.entry) {
      p->plan.tasks[t].run = with;
      found = 1;
    }
  if (!found)
    return pld__fail(PLD_ERR_ARG,
                     "%s: task: %s is no host task of this program (its host "
                     "function %s never calls it)",
                     fn, task.sig->name, p->plan.host.sig->name);
  return PLD_OK;
}
