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

static void describe_launch(struct pld__aicpu *a, pld_kernel_fn kernel,
                            int32_t blocks, const pld_arg *argv,
                            const pld_platform_info *plat) {
  char line[1024];
  const pld_signature *sig = kernel.sig;
  int cores = plat ? (sig->core_type == PLD_CORE_CUBE ? plat->cube_cores
                                                      : plat->vector_cores)
                   : 0;
  size_t n = pld__catf(line, sizeof line,
                       "    kernel %s on the AI cores: %d block%s on %s cores "
                       "(%d on the device)\n",
                       sig->name, (int)blocks, blocks == 1 ? "" : "s",
                       pld__core_type_name(sig->core_type), cores);
  for (int i = 0; i < sig->nparams; i++) {
    const pld_param *p = &sig->params[i];
    n += pld__catf(line + n, sizeof line - n, "      %s: ", p->name);
    if (argv[i].kind != PLD_ARG_SCALAR) {
      const struct pld__tensor *t = argv[i].v.t;
      n += pld__tensor_str(line + n, sizeof line - n, t);
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
launch_refused(struct pld__aicpu *a, int st) {
  char rest[PLD__MSG_MAX];
  pld__catf(rest, sizeof rest, "%s", a->msg + strlen("pld_launch"));
  pld__catf(a->msg, sizeof a->msg, "pld_launch (rank %d, device %d, in %s)%s",
            a->rank, a->device, a->fn, rest);
  return a->status = st;
}

int pld__launch(pld_aicpu ctx, pld_kernel_fn kernel, int argc,
                const pld_arg *argv) {
  struct pld__aicpu *a = ctx.p;
  if (a->status)
    return a->status;
  const pld_signature *sig = kernel.sig;
  const char *problem = pld__sig_problem(sig, PLD_LEVEL_KERNEL, !!kernel.entry);
  if (problem)
    return afail(a, PLD_ERR_ARG, "pld_launch",
                 "kernel: expected a function declared with PLD_KERNEL or "
                 "PLD_CUBE_KERNEL, got %s",
                 problem);
  if (!pld__arg_is_integer(&argv[0]))
    return afail(a, PLD_ERR_ARG, "pld_launch",
                 "%s: blocks: expected an integer in [1, 65535], got a %s",
                 sig->name,
                 argv[0].kind != PLD_ARG_SCALAR ? "tensor" : "float");
  if (argv[0].v.i < 1 || argv[0].v.i > 65535)
    return afail(a, PLD_ERR_ARG, "pld_launch",
                 "%s: blocks: expected an integer in [1, 65535], got %lld",
                 sig->name, (long long)argv[0].v.i);
  int32_t blocks = (int32_t)argv[0].v.i;
  pld_arg norm[PLD_MAX_PARAMS];
  struct pld__tensor reshaped[PLD_MAX_PARAMS];
  int st = pld__sig_check(sig, "pld_launch", a->dims, argc - 1, argv + 1, norm,
                          reshaped, a->msg, sizeof a->msg);
  if (st)
    return launch_refused(a, st);
  return pld__launch_checked(ctx, kernel, blocks, norm);
}

int pld__launch_checked(pld_aicpu ctx, pld_kernel_fn kernel, int32_t blocks,
                        const pld_arg *norm) {
  struct pld__aicpu *a = ctx.p;
  const pld_signature *sig = kernel.sig;
  if (a->status)
    return a->status;
  if (a->trace) {
    describe_launch(a, kernel, blocks, norm, a->plat);
    return PLD_OK;
  }
  for (int i = 0; i < sig->nparams; i++)
    if (norm[i].kind != PLD_ARG_SCALAR && !norm[i].v.t->data)
      return afail(a, PLD_ERR_ARG, "pld_launch",
                   "%s: parameter '%s': tensor has no device memory", sig->name,
                   sig->params[i].name);
  struct pld__task_spec spec = {kernel, blocks, sig->nparams, norm};
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
  return PLD_OK;
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
  if (a->nallocs == a->capallocs) {
    int cap = a->capallocs ? 2 * a->capallocs : 8;
    struct pld__tensor **v =
        pld__realloc(a->allocs, (size_t)cap * sizeof *a->allocs);
    if (!v) {
      afail(a, PLD_ERR_NOMEM, "pld_device_alloc", "out of memory");
      return bad;
    }
    a->allocs = v;
    a->capallocs = cap;
  }
  struct pld__tensor *t = pld__malloc(sizeof *t);
  if (!t) {
    afail(a, PLD_ERR_NOMEM, "pld_device_alloc", "out of memory");
    return bad;
  }
  *t = tmp;
  if (a->trace) {
    t->flags = PLD__T_TRACE;
  } else {
    t->flags = PLD__T_DEVICE | PLD__T_OWNED;
    t->data = pld__aligned_alloc(t->nbytes);
    if (!t->data) {
      pld__free(t);
      char s[128];
      pld__tensor_str(s, sizeof s, &tmp);
      afail(a, PLD_ERR_NOMEM, "pld_device_alloc",
            "out of device memory for %s (%zu bytes)", s, tmp.nbytes);
      return bad;
    }
  }
  a->allocs[a->nallocs++] = t;
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
  if (!a->trace) {
    pld__name_copy(a->watch->aicpu_fn, sizeof a->watch->aicpu_fn, a->fn);
    pld__aicpu_busy(a, 1);
  }
  fn.entry((pld_aicpu){a}, argv);
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
  for (int i = 0; i < a->nallocs; i++) {
    pld__free(a->allocs[i]->data);
    pld__free(a->allocs[i]);
  }
  a->nallocs = 0;
  a->alloc_bytes = 0;
  return a->status;
}

void pld__aicpu_release(struct pld__aicpu *a) {
  pld__free(a->allocs);
  a->allocs = NULL;
  a->capallocs = 0;
}
