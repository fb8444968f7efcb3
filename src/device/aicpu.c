/* device/aicpu.c: a device orchestration call, traced on the host at
 * compile time or run on the device's AICPU: launches, tasks, its
 * allocations and its first failure (device/aicpu.h). */
#include "device/aicpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/kctx.h"
#include "pld/mix.h"

/* Records the first failure of the call: "fn (rank r, device d, in F): ". */
static int afail(struct pld__aicpu *a, int status, const char *fn,
                 const char *fmt, ...) PLD__PRINTF(4, 5);
static int afail(struct pld__aicpu *a, int status, const char *fn,
                 const char *fmt, ...) {
  char prefix[256];
  pld__catf(prefix, sizeof prefix, "%s (rank %d, device %d, in %s): ", fn,
            a->rank, a->device, a->fn);
  va_list ap;
  va_start(ap, fmt);
  int st = pld__first_failure(&a->status, a->msg, sizeof a->msg, status, prefix,
                              fmt, ap);
  va_end(ap);
  return st;
}

/* The explicit dependencies of a launch, checked: the launch numbers in
 * this call of the tasks it waits for. */
struct pld__deps_of {
  int n;
  int32_t seqs[PLD_MAX_DEPS];
};

/* Each call's stamp in its task ids: unique in the process (0: none). */
static _Atomic uint32_t call_stamps;

/* Room for one more element of size `size` in the array *v of *n elements
 * and *cap places, doubling it from `first`.  Returns 0, or -1 when out of
 * memory (the array unchanged). */
static int room(void *v, int32_t n, int32_t *cap, int32_t first, size_t size) {
  if (n < *cap)
    return 0;
  int32_t c = *cap ? 2 * *cap : first;
  void *g = pld__realloc(*(void **)v, (size_t)c * size);
  if (!g)
    return -1;
  *(void **)v = g;
  *cap = c;
  return 0;
}

static void log_append(struct pld__aicpu *a, const char *text) {
  size_t n = strlen(text);
  if (a->loglen + n + 1 > a->logcap) {
    size_t cap = a->logcap ? 2 * a->logcap : 256;
    while (cap < a->loglen + n + 1)
      cap *= 2;
    char *l = pld__realloc(a->log, cap);
    if (!l)
      return; /* the description is best effort; the trace itself is not */
    a->log = l;
    a->logcap = cap;
  }
  memcpy(a->log + a->loglen, text, n + 1);
  a->loglen += n;
}

/* The explicit edges of a launch, and its manual scope, in its
 * description. */
static size_t describe_order(const struct pld__aicpu *a, char *line, size_t cap,
                             const struct pld__deps_of *o) {
  size_t n = 0;
  if (a->scope)
    n += pld__catf(line, cap,
                   "      (in a manual scope: ordered by its "
                   "explicit dependencies only)\n");
  if (!o || !o->n)
    return n;
  n += pld__catf(line + n, cap - n, "      after (explicit):");
  for (int i = 0; i < o->n; i++)
    n +=
        pld__catf(line + n, cap - n, "%s task #%d (%s)", i ? "," : "",
                  (int)o->seqs[i], a->launched ? a->launched[o->seqs[i]] : "?");
  return n + pld__catf(line + n, cap - n, "\n");
}

static void describe_launch(struct pld__aicpu *a, pld_kernel_fn kernel,
                            int32_t blocks, const pld_arg *argv,
                            const pld_platform_info *plat,
                            const struct pld__blocks_by *by,
                            const struct pld__deps_of *o) {
  char line[1024];
  const pld_signature *sig = kernel.sig;
  int cores = plat ? (sig->core_type == PLD_CORE_VECTOR ? plat->vector_cores
                                                        : plat->cube_cores)
                   : 0;
  char where[64];
  if (sig->core_type == PLD_CORE_MIX)
    pld__catf(where, sizeof where, "clusters of 1 AIC + %d AIV",
              plat && plat->cube_cores ? plat->vector_cores / plat->cube_cores
                                       : 0);
  else
    pld__catf(where, sizeof where, "%s cores",
              pld__core_type_name(sig->core_type));
  size_t n =
      pld__catf(line, sizeof line,
                "    kernel %s on the AI cores: %d block%s on %s (%d "
                "on the device)\n",
                sig->name, (int)blocks, blocks == 1 ? "" : "s", where, cores);
  if (by)
    n += pld__catf(line + n, sizeof line - n,
                   "      (at most: ceil(%s[%d] / %d) blocks when it starts)\n",
                   by->at.name ? by->at.name : "counts", (int)by->at.index,
                   (int)by->per_block);
  n += describe_order(a, line + n, sizeof line - n, o);
  for (int i = 0; i < sig->nparams; i++) {
    const pld_param *p = &sig->params[i];
    n += pld__catf(line + n, sizeof line - n, "      %s: ", p->name);
    if (argv[i].kind != PLD_ARG_SCALAR) {
      const struct pld__tensor *t = argv[i].v.t;
      n += pld__tensor_str(line + n, sizeof line - n, t);
      if (t->seg)
        n += pld__catf(line + n, sizeof line - n,
                       " (at most: segment %d of %s's rows)",
                       (int)t->seg->at.index,
                       t->seg->at.name ? t->seg->at.name : "counts");
      if (argv[i].kind == PLD_ARG_WINDOW && t->comm)
        n += pld__catf(line + n, sizeof line - n,
                       " window (buffer #%d, rank %d of %d)\n", t->win_buf,
                       t->comm->rank, t->comm->nranks);
      else
        n += pld__catf(line + n, sizeof line - n, " %s\n",
                       pld__dir_name(p->dir));
    } else {
      n += pld__scalar_str(line + n, sizeof line - n, p, &argv[i]);
      n += pld__catf(line + n, sizeof line - n, "\n");
    }
  }
  log_append(a, line);
}

/* The call is named in full only once it failed (a launch formats
 * nothing): the message starts "pld_launch: ".  Out of line, so that a
 * launch's frame does not carry the copy. */
static int __attribute__((noinline, cold))
launch_refused(struct pld__aicpu *a, int st, const char *what) {
  char rest[PLD__MSG_MAX];
  pld__catf(rest, sizeof rest, "%s", a->msg + strlen(what));
  pld__catf(a->msg, sizeof a->msg, "%s (rank %d, device %d, in %s)%s", what,
            a->rank, a->device, a->fn, rest);
  return a->status = st;
}

static int launch_submit(pld_aicpu ctx, pld_kernel_fn kernel, int32_t blocks,
                         const pld_arg *norm, const struct pld__blocks_by *by,
                         const struct pld__deps_of *o);

/* Parameter p is a PLD_COLL_SIG: a window whose only dimension is named
 * as pld__coll_sig_param's. */
static int is_coll_sig(const pld_param *p) {
  const char *name = pld__coll_sig_param.dims[0].name;
  return p->kind == PLD_ARG_WINDOW && p->ndim == 1 && p->dims[0].name &&
         p->dims[0].name[0] == name[0] && !strcmp(p->dims[0].name, name);
}

/* The arguments of a launch of a kernel with PLD_COLL_SIG parameters:
 * argv (the block count, then the others) with the program's signal window
 * at those parameters, in full[].  Returns the count, or -1 with the
 * failure recorded. */
static int with_coll_sig(struct pld__aicpu *a, const char *what,
                         const pld_signature *sig, int argc,
                         const pld_arg *argv, pld_arg *full) {
  int n = 1, j = 1, own = 0;
  full[0] = argv[0];
  for (int i = 0; i < sig->nparams; i++)
    own += !is_coll_sig(&sig->params[i]);
  if (argc - 1 != own)
    return afail(a, PLD_ERR_ARG, what,
                 "%s: expected %d argument%s after the block count (%d "
                 "parameters, %d of them the program's collective signal "
                 "window, which the launch passes itself), got %d",
                 sig->name, own, own == 1 ? "" : "s", sig->nparams,
                 sig->nparams - own, argc - 1),
           -1;
  for (int i = 0; i < sig->nparams; i++) {
    if (!is_coll_sig(&sig->params[i])) {
      full[n++] = argv[j++];
      continue;
    }
    if (!a->coll_sig)
      return afail(a, PLD_ERR_ARG, what,
                   "%s: parameter '%s' (PLD_COLL_SIG): the program has no "
                   "collective signal window: declare it in the host "
                   "function with pld_coll_signal",
                   sig->name, sig->params[i].name),
             -1;
    full[n].kind = PLD_ARG_WINDOW;
    full[n].dtype = PLD_INT32;
    full[n++].v.t = (struct pld__tensor *)a->coll_sig;
  }
  return n;
}

/* pld_launch and pld_launch_by (`what`) after their own checks: the
 * kernel's arguments checked against its signature, then submitted. */
static int launch(struct pld__aicpu *a, const char *what, pld_kernel_fn kernel,
                  int argc, const pld_arg *argv,
                  const struct pld__blocks_by *by,
                  const struct pld__deps_of *o) {
  const pld_signature *sig = kernel.sig;
  pld_arg full[PLD_MAX_PARAMS + 1];
  for (int i = 0; i < sig->nparams; i++)
    if (is_coll_sig(&sig->params[i])) {
      if ((argc = with_coll_sig(a, what, sig, argc, argv, full)) < 0)
        return a->status;
      argv = full;
      break;
    }
  if (!pld__arg_is_integer(&argv[0]))
    return afail(a, PLD_ERR_ARG, what,
                 "%s: blocks: expected an integer in [1, 65535], got a %s",
                 sig->name,
                 argv[0].kind != PLD_ARG_SCALAR ? "tensor" : "float");
  if (argv[0].v.i < 1 || argv[0].v.i > 65535)
    return afail(a, PLD_ERR_ARG, what,
                 "%s: blocks: expected an integer in [1, 65535], got %lld",
                 sig->name, (long long)argv[0].v.i);
  int32_t blocks = (int32_t)argv[0].v.i;
  pld_arg norm[PLD_MAX_PARAMS];
  struct pld__tensor reshaped[PLD_MAX_PARAMS];
  int st = pld__sig_check(sig, what, a->dims, argc - 1, argv + 1, norm,
                          reshaped, a->msg, sizeof a->msg);
  if (st)
    return launch_refused(a, st, what);
  return launch_submit((pld_aicpu){a}, kernel, blocks, norm, by, o);
}

/* The kernel as a launch may name it: declared at the kernel level. */
static int kernel_refused(struct pld__aicpu *a, const char *what,
                          pld_kernel_fn kernel) {
  const char *problem =
      pld__sig_problem(kernel.sig, PLD_LEVEL_KERNEL, !!kernel.entry);
  if (!problem)
    return PLD_OK;
  return afail(a, PLD_ERR_ARG, what,
               "kernel: expected a function declared with PLD_KERNEL or "
               "PLD_CUBE_KERNEL, got %s",
               problem);
}

int pld__launch(pld_aicpu ctx, pld_kernel_fn kernel, int argc,
                const pld_arg *argv) {
  struct pld__aicpu *a = ctx.p;
  if (a->status)
    return a->status;
  int st = kernel_refused(a, "pld_launch", kernel);
  return st ? st : launch(a, "pld_launch", kernel, argc, argv, NULL, NULL);
}

/* deps of a launch of `kernel` by `what`, checked, into *o.  Returns
 * PLD_OK or the failure recorded. */
static int deps_check(struct pld__aicpu *a, const char *what,
                      const char *kernel, pld_deps deps,
                      struct pld__deps_of *o) {
  o->n = 0;
  if (deps.n < 0 || deps.n > PLD_MAX_DEPS)
    return afail(a, PLD_ERR_ARG, what,
                 "%s: deps.n: expected 0 to PLD_MAX_DEPS (%d) tasks, got %d",
                 kernel, PLD_MAX_DEPS, (int)deps.n);
  if (deps.n && !deps.ids)
    return afail(a, PLD_ERR_ARG, what,
                 "%s: deps.ids: expected %d task ids, got NULL", kernel,
                 (int)deps.n);
  for (int i = 0; i < deps.n; i++) {
    const pld_task_id d = deps.ids[i];
    const char *got = NULL;
    char other[96];
    if (!d.call)
      got = "no task (PLD_NO_TASK, or what a failed launch returned)";
    else if (d.rank != a->rank) {
      pld__catf(other, sizeof other, "a task of rank %d", (int)d.rank);
      got = other;
    } else if (d.call != a->call) {
      got = "a task of another device call (ids are valid only in the "
            "call that launched them)";
    } else if (d.index < 0 || d.index >= a->nlaunched) {
      pld__catf(other, sizeof other, "task #%d, not launched yet",
                (int)d.index);
      got = other;
    }
    if (got) {
      char range[48] = "none launched yet";
      if (a->nlaunched)
        pld__catf(range, sizeof range, "#0 to #%d", (int)a->nlaunched - 1);
      return afail(a, PLD_ERR_ARG, what,
                   "%s: deps.ids[%d]: expected a task launched earlier in "
                   "this call on rank %d (%s), got %s",
                   kernel, i, a->rank, range, got);
    }
    o->seqs[o->n++] = d.index;
  }
  return PLD_OK;
}

int pld_manual_scope_begin(pld_aicpu ctx) {
  struct pld__aicpu *a = ctx.p;
  if (a->status)
    return a->status;
  if (a->scope)
    return afail(a, PLD_ERR_ARG, "pld_manual_scope_begin",
                 "expected no manual scope open (scopes do not nest), got "
                 "the one begun before launch #%d still open",
                 (int)a->scope_from);
  a->scope = ++a->scopes;
  a->scope_from = a->nlaunched;
  return PLD_OK;
}

int pld_manual_scope_end(pld_aicpu ctx) {
  struct pld__aicpu *a = ctx.p;
  if (a->status)
    return a->status;
  if (!a->scope)
    return afail(a, PLD_ERR_ARG, "pld_manual_scope_end",
                 "expected a manual scope open (pld_manual_scope_begin), got "
                 "none");
  a->scope = 0;
  return PLD_OK;
}

/* counts (parameter `param` of `what`) as a device's 1-D INT32 tensor with
 * more than index elements: PLD_OK, or the failure recorded. */
static int counts_refused(struct pld__aicpu *a, const char *what,
                          const char *param, pld_tensor counts, int32_t index) {
  const struct pld__tensor *c = counts.p;
  char s[128];
  if (!c || (c->flags & PLD__T_INVALID))
    return afail(a, PLD_ERR_ARG, what, "%s: expected a tensor, got %s", param,
                 c ? "the result of a failed call" : "a NULL tensor");
  if (c->dtype != PLD_INT32 || c->ndim != 1) {
    pld__tensor_str(s, sizeof s, c);
    return afail(a, PLD_ERR_ARG, what,
                 "%s: expected a 1-D INT32 tensor, got %s", param, s);
  }
  if (!a->trace && !c->data)
    return afail(a, PLD_ERR_ARG, what, "%s: tensor has no device memory",
                 param);
  if (index < 0 || index >= c->shape[0]) {
    pld__tensor_str(s, sizeof s, c);
    return afail(a, PLD_ERR_ARG, what,
                 "index: expected [0, %lld) for %s %s, got %d",
                 (long long)c->shape[0], param, s, (int)index);
  }
  return PLD_OK;
}

static struct pld__countref count_ref(pld_tensor counts, int32_t index) {
  const struct pld__tensor *c = counts.p;
  return (struct pld__countref){c->data, c->nbytes, c->name, index};
}

/* pld_launch_by and pld_launch_by_after (`what`), the kernel checked. */
static int launch_by(struct pld__aicpu *a, const char *what,
                     pld_kernel_fn kernel, pld_blocks_by by, int argc,
                     const pld_arg *argv, const struct pld__deps_of *o) {
  int st = counts_refused(a, what, "by.counts", by.counts, by.index);
  if (st)
    return st;
  if (by.per_block < 1)
    return afail(a, PLD_ERR_ARG, what,
                 "%s: by.per_block: expected at least 1, got %d",
                 kernel.sig->name, (int)by.per_block);
  if (by.max_blocks < 1 || by.max_blocks > 65535)
    return afail(a, PLD_ERR_ARG, what,
                 "%s: by.max_blocks: expected an integer in [1, 65535], got "
                 "%d",
                 kernel.sig->name, (int)by.max_blocks);
  pld_arg args[PLD_MAX_PARAMS + 1];
  if (argc > PLD_MAX_PARAMS + 1)
    argc = PLD_MAX_PARAMS + 1; /* the signature check names the excess */
  memcpy(args, argv, (size_t)argc * sizeof *args);
  args[0] = PLD_ARG(by.max_blocks);
  const struct pld__blocks_by dyn = {count_ref(by.counts, by.index),
                                     by.per_block};
  return launch(a, what, kernel, argc, args, &dyn, o);
}

int pld__launch_by(pld_aicpu ctx, pld_kernel_fn kernel, pld_blocks_by by,
                   int argc, const pld_arg *argv) {
  struct pld__aicpu *a = ctx.p;
  const char *what = "pld_launch_by";
  if (a->status)
    return a->status;
  int st = kernel_refused(a, what, kernel);
  return st ? st : launch_by(a, what, kernel, by, argc, argv, NULL);
}

/* pld_launch_after and pld_launch_by_after (with `by`): the launch, which
 * waits for deps too, and its task's id. */
static pld_task_id launch_after(struct pld__aicpu *a, const char *what,
                                pld_deps deps, pld_kernel_fn kernel,
                                const pld_blocks_by *by, int argc,
                                const pld_arg *argv) {
  struct pld__deps_of o;
  if (a->status || kernel_refused(a, what, kernel) ||
      deps_check(a, what, kernel.sig->name, deps, &o))
    return PLD_NO_TASK;
  const int32_t index = a->nlaunched;
  if (by ? launch_by(a, what, kernel, *by, argc, argv, &o)
         : launch(a, what, kernel, argc, argv, NULL, &o))
    return PLD_NO_TASK;
  return (pld_task_id){a->call, a->rank, index};
}

pld_task_id pld__launch_after(pld_aicpu ctx, pld_deps deps, int after,
                              pld_kernel_fn kernel, int argc,
                              const pld_arg *argv) {
  return launch_after(ctx.p, after ? "pld_launch_after" : "pld_launch_task",
                      deps, kernel, NULL, argc, argv);
}

pld_task_id pld__launch_by_after(pld_aicpu ctx, pld_deps deps,
                                 pld_kernel_fn kernel, pld_blocks_by by,
                                 int argc, const pld_arg *argv) {
  return launch_after(ctx.p, "pld_launch_by_after", deps, kernel, &by, argc,
                      argv);
}

int pld__launch_checked(pld_aicpu ctx, pld_kernel_fn kernel, int32_t blocks,
                        const pld_arg *norm) {
  return launch_submit(ctx, kernel, blocks, norm, NULL, NULL);
}

/* Trace mode: kernel is the name of launch number a->nlaunched.  Returns
 * PLD_OK or the failure recorded. */
static int note_launched(struct pld__aicpu *a, const char *kernel) {
  if (room(&a->launched, a->nlaunched, &a->caplaunched, 16,
           sizeof *a->launched))
    return afail(a, PLD_ERR_NOMEM, "pld_launch", "out of memory");
  a->launched[a->nlaunched] = kernel;
  return PLD_OK;
}

static int launch_submit(pld_aicpu ctx, pld_kernel_fn kernel, int32_t blocks,
                         const pld_arg *norm, const struct pld__blocks_by *by,
                         const struct pld__deps_of *o) {
  struct pld__aicpu *a = ctx.p;
  const pld_signature *sig = kernel.sig;
  if (a->status)
    return a->status;
  if (a->trace) {
    describe_launch(a, kernel, blocks, norm, a->plat, by, o);
    if (note_launched(a, sig->name))
      return a->status;
    a->nlaunched++;
    return PLD_OK;
  }
  for (int i = 0; i < sig->nparams; i++)
    if (norm[i].kind != PLD_ARG_SCALAR && !norm[i].v.t->data)
      return afail(a, PLD_ERR_ARG, "pld_launch",
                   "%s: parameter '%s': tensor has no device memory", sig->name,
                   sig->params[i].name);
  struct pld__task_spec spec = {
      kernel, blocks,       sig->nparams,       norm,
      by,     o ? o->n : 0, o ? o->seqs : NULL, a->scope};
  struct pld__tev e;
  int observed = pld__observed(PLD__TEV_LAUNCH);
  if (observed) {
    pld__tev_init(&e, PLD__TEV_LAUNCH, 0, sig->name);
    e.a = blocks;
    e.b = pld__sched_submitted(a->sched);
    pld__obs_begin(&e);
  }
  int st = pld__sched_submit(a->sched, &spec);
  if (observed)
    pld__obs_end(&e);
  if (st)
    return afail(a, st, "pld_launch", "%s", pld_last_error());
  a->nlaunched++;
  return PLD_OK;
}

/* pld_segment and pld_segment_window (`what`): the view of t's rows that
 * segment `index` of counts covers, its rows decided when a task using it
 * starts (device/sched_task.c). */
static struct pld__tensor *segment(struct pld__aicpu *a, const char *what,
                                   const struct pld__tensor *t, int window,
                                   pld_tensor counts, int32_t index,
                                   int64_t max_rows) {
  if (a->status)
    return NULL;
  const char *kind = window ? "window view" : "tensor";
  if (!t || (t->flags & PLD__T_INVALID)) {
    afail(a, PLD_ERR_ARG, what, "%s: expected a %s, got %s", window ? "w" : "t",
          kind, t ? "the result of a failed call" : "a NULL handle");
    return NULL;
  }
  if (!!(t->flags & PLD__T_WINDOW) != window || t->ndim < 1) {
    char s[128];
    pld__tensor_str(s, sizeof s, t);
    afail(a, PLD_ERR_ARG, what,
          "%s: expected a %s of 1 or more dimensions, "
          "got %s%s",
          window ? "w" : "t", kind, s,
          (t->flags & PLD__T_WINDOW) ? " (a window view)" : "");
    return NULL;
  }
  if (counts_refused(a, what, "counts", counts, index))
    return NULL;
  if (max_rows < 0 || max_rows > t->shape[0]) {
    char s[128];
    pld__tensor_str(s, sizeof s, t);
    afail(a, PLD_ERR_ARG, what, "max_rows: expected [0, %lld] for %s, got %lld",
          (long long)t->shape[0], s, (long long)max_rows);
    return NULL;
  }
  if (room(&a->views, a->nviews, &a->capviews, 8, sizeof *a->views)) {
    afail(a, PLD_ERR_NOMEM, what, "out of memory");
    return NULL;
  }
  struct view {
    struct pld__tensor t;
    struct pld__segment seg;
  } *v = pld__malloc(sizeof *v);
  if (!v) {
    afail(a, PLD_ERR_NOMEM, what, "out of memory");
    return NULL;
  }
  a->views[a->nviews++] = v;
  const size_t row_bytes = t->shape[0] ? t->nbytes / (size_t)t->shape[0] : 0;
  v->seg = (struct pld__segment){
      count_ref(counts, index), t->ndim,      max_rows, t->shape[0], row_bytes,
      (unsigned char *)t->data, t->win_offset};
  v->t = *t;
  v->t.flags &= ~(unsigned)PLD__T_OWNED;
  v->t.shape[0] = max_rows;
  v->t.nbytes = (size_t)max_rows * row_bytes;
  v->t.seg = &v->seg;
  return &v->t;
}

pld_tensor pld_segment(pld_aicpu ctx, pld_tensor t, pld_tensor counts,
                       int32_t index, int64_t max_rows) {
  struct pld__tensor *v =
      segment(ctx.p, "pld_segment", t.p, 0, counts, index, max_rows);
  return (pld_tensor){v ? v : &pld__invalid_tensor};
}

pld_window pld_segment_window(pld_aicpu ctx, pld_window w, pld_tensor counts,
                              int32_t index, int64_t max_rows) {
  struct pld__tensor *v =
      segment(ctx.p, "pld_segment_window", w.p, 1, counts, index, max_rows);
  return (pld_window){v ? v : &pld__invalid_tensor};
}

/* A block for t's bytes: the smallest spare one that holds them and is at
 * most twice their size, else a new one (data NULL when out of memory). */
static struct pld__dblock take_spare(struct pld__aicpu *a,
                                     struct pld__tensor *t) {
  const size_t need = t->nbytes ? t->nbytes : 1;
  int best = -1;
  for (int i = 0; i < a->nspare; i++)
    if (a->spare[i].bytes >= need && a->spare[i].bytes / 2 <= need &&
        (best < 0 || a->spare[i].bytes < a->spare[best].bytes))
      best = i;
  if (best < 0)
    return (struct pld__dblock){t, pld__aligned_alloc(need), need};
  struct pld__dblock b = a->spare[best];
  a->spare[best] = a->spare[--a->nspare];
  b.t = t;
  return b;
}

/* Frees the spare blocks (their array stays). */
static void drop_spare(struct pld__aicpu *a) {
  for (int i = 0; i < a->nspare; i++)
    pld__free(a->spare[i].data);
  a->nspare = 0;
}

/* The end of a call: its blocks become the spare ones, and the spare
 * blocks it did not take are freed. */
static void keep_blocks(struct pld__aicpu *a) {
  drop_spare(a);
  for (int i = 0; i < a->nallocs; i++) {
    struct pld__dblock b = a->allocs[i];
    pld__free(b.t);
    if (!b.data)
      continue;
    if (room(&a->spare, a->nspare, &a->capspare, 8, sizeof *a->spare)) {
      pld__free(b.data);
      continue;
    }
    b.t = NULL;
    a->spare[a->nspare++] = b;
  }
  a->nallocs = 0;
  a->alloc_bytes = 0;
}

pld_tensor pld_device_alloc(pld_aicpu ctx, pld_dtype dtype, int ndim,
                            const int64_t *shape) {
  struct pld__aicpu *a = ctx.p;
  pld_tensor bad = {&pld__invalid_tensor};
  if (a->status)
    return bad;
  struct pld__tensor tmp;
  if (pld__tensor_init(&tmp, "pld_device_alloc", dtype, ndim, shape)) {
    afail(a, PLD_ERR_ARG, "pld_device_alloc", "%s", pld_last_error());
    return bad;
  }
  if (a->plat &&
      pld__mem_exceeded(a->plat, a->mem_bytes + a->alloc_bytes, tmp.nbytes)) {
    char s[128];
    pld__tensor_str(s, sizeof s, &tmp);
    afail(a, PLD_ERR_NOMEM, "pld_device_alloc",
          "%s needs %zu bytes, but %llu of the %llu bytes of the device's "
          "global memory are taken (tensor slices, window buffers, earlier "
          "allocations of this call)",
          s, tmp.nbytes, (unsigned long long)(a->mem_bytes + a->alloc_bytes),
          (unsigned long long)a->plat->global_bytes);
    return bad;
  }
  struct pld__tensor *t = NULL;
  if (room(&a->allocs, a->nallocs, &a->capallocs, 8, sizeof *a->allocs) ||
      !(t = pld__malloc(sizeof *t))) {
    afail(a, PLD_ERR_NOMEM, "pld_device_alloc", "out of memory");
    return bad;
  }
  *t = tmp;
  struct pld__dblock b = {t, NULL, 0};
  if (a->trace) {
    t->flags = PLD__T_TRACE;
  } else {
    t->flags = PLD__T_DEVICE | PLD__T_OWNED;
    b = take_spare(a, t);
    if (!b.data) {
      pld__free(t);
      char s[128];
      pld__tensor_str(s, sizeof s, &tmp);
      afail(a, PLD_ERR_NOMEM, "pld_device_alloc",
            "out of device memory for %s (%zu bytes)", s, tmp.nbytes);
      return bad;
    }
    t->data = b.data;
  }
  a->allocs[a->nallocs++] = b;
  a->alloc_bytes += t->nbytes;
  if (a->trace) {
    char line[256];
    size_t n = pld__catf(line, sizeof line, "    device tensor ");
    n += pld__tensor_str(line + n, sizeof line - n, t);
    pld__catf(line + n, sizeof line - n, " in device global memory\n");
    log_append(a, line);
  }
  return (pld_tensor){t};
}

void pld__aicpu_busy(struct pld__aicpu *a, int busy) {
  if (busy)
    atomic_store_explicit(&a->watch->aicpu_since_ns, pld__now_ns(),
                          memory_order_relaxed);
  atomic_store(&a->watch->aicpu_busy, busy);
}

int pld__aicpu_call(struct pld__aicpu *a, pld_device_fn fn,
                    const pld_arg *argv) {
  a->fn = fn.sig->name;
  a->call = atomic_fetch_add(&call_stamps, 1) + 1;
  if (!a->call) /* after 2^32 calls: 0 is no task's */
    a->call = atomic_fetch_add(&call_stamps, 1) + 1;
  a->nlaunched = a->scope = a->scopes = 0;
  if (!a->trace) {
    pld__name_copy(a->watch->aicpu_fn, sizeof a->watch->aicpu_fn, a->fn);
    pld__aicpu_busy(a, 1);
  }
  fn.entry((pld_aicpu){a}, argv);
  if (a->scope)
    afail(a, PLD_ERR_ARG, "pld_manual_scope_begin",
          "expected the manual scope begun before launch #%d ended "
          "(pld_manual_scope_end) before the device function returns, got "
          "it open",
          (int)a->scope_from);
  if (!a->trace) {
    /* Only while it waits for its tasks can the AICPU be part of a
     * deadlock: the host's watch reads this. */
    int first = !a->status; /* else the call's first failure stays */
    pld__aicpu_busy(a, 0);
    int st = pld__sched_drain(a->sched, first ? a->msg : NULL, sizeof a->msg);
    pld__aicpu_busy(a, 1);
    if (st && first)
      a->status = st;
  }
  keep_blocks(a);
  for (int i = 0; i < a->nviews; i++)
    pld__free(a->views[i]);
  a->nviews = 0;
  return a->status;
}

void pld__aicpu_release(struct pld__aicpu *a) {
  drop_spare(a);
  pld__free(a->spare);
  a->spare = NULL;
  a->capspare = 0;
  pld__free(a->allocs);
  a->allocs = NULL;
  a->capallocs = 0;
  pld__free(a->views);
  a->views = NULL;
  a->capviews = 0;
  pld__free(a->launched);
  a->launched = NULL;
  a->caplaunched = 0;
}
