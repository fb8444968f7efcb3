/* host/dispatch.c: pld_dispatch while the host orchestrator is traced:
 * its checks, and the record of each dispatch (the windows it passes make
 * its rank a member of their domains). */
#include "core/alloc.h"
#include "host/program.h"

int pld__dispatch(pld_host hh, pld_device_fn fn, int argc,
                  const pld_arg *argv) {
  struct pld__host *h = hh.p;
  int st = pld__host_callee(h, "pld_dispatch", fn.sig, !!fn.entry,
                            PLD_LEVEL_DEVICE, "PLD_DEVICE");
  if (st)
    return st;
  struct pld_program *p = h->prog;
  const char *name = p->plan.host.sig->name;
  const pld_signature *sig = fn.sig;
  const pld_arg *r = &argv[0];
  if (!pld__arg_is_integer(r))
    return pld__hfail(
        h, PLD_ERR_ARG,
        "pld_dispatch (in %s): rank: expected an integer, got a %s", name,
        r->kind != PLD_ARG_SCALAR ? "tensor" : "float");
  if (r->v.i < 0 || r->v.i >= p->plan.nranks)
    return pld__hfail(h, PLD_ERR_ARG,
                      "pld_dispatch (in %s): rank: expected [0, %d) (the world "
                      "size), got %lld",
                      name, p->plan.nranks, (long long)r->v.i);
  int rank = (int)r->v.i;
  char what[128];
  pld__catf(what, sizeof what, "pld_dispatch to rank %d (in %s)", rank, name);
  pld_arg norm[PLD_MAX_PARAMS];
  struct pld__tensor reshaped[PLD_MAX_PARAMS];
  st = pld__sig_check(sig, what, &p->plan.dims, argc - 1, argv + 1, norm,
                      reshaped, h->msg, sizeof h->msg);
  if (st)
    return h->status = st;
  return pld__dispatch_record(h, rank, fn, norm, what);
}

int pld__dispatch_record(struct pld__host *h, int rank, pld_device_fn fn,
                         const pld_arg *norm, const char *what) {
  struct pld_program *p = h->prog;
  const pld_signature *sig = fn.sig;
  const char *name = p->plan.host.sig->name;
  if (h->ndisps == h->capdisps) {
    int cap = h->capdisps ? 2 * h->capdisps : 8;
    struct pld__dispatch *v =
        pld__realloc(h->disps, (size_t)cap * sizeof *h->disps);
    if (!v)
      return pld__hfail(h, PLD_ERR_NOMEM, "%s: out of memory", what);
    h->disps = v;
    h->capdisps = cap;
  }
  struct pld__dispatch *d = &h->disps[h->ndisps];
  for (int i = 0; i < sig->nparams; i++) {
    d->argv[i] = norm[i];
    if (norm[i].kind == PLD_ARG_SCALAR)
      continue;
    const struct pld__tensor *t = norm[i].v.t;
    const struct pld__inter *in =
        t->host_arg >= 0 ? pld__host_inter(p, t->host_arg) : NULL;
    if (t->flags & PLD__T_WINDOW)
      pld__windows_member(p, t->win_buf, rank);
    else if (t->host_arg < 0)
      return pld__hfail(
          h, PLD_ERR_ARG,
          "%s: %s: parameter '%s' (%d of %d): expected a parameter of "
          "%s, a slice of one or an intermediate, got another tensor",
          what, sig->name, sig->params[i].name, i + 1, sig->nparams, name);
    else if (in && in->rank >= 0 && in->rank != rank)
      return pld__hfail(h, PLD_ERR_ARG,
                        "%s: %s: parameter '%s' (%d of %d): %s lives in the "
                        "memory of rank %d's device: only rank %d's "
                        "dispatches take it",
                        what, sig->name, sig->params[i].name, i + 1,
                        sig->nparams, in->name, in->rank, in->rank);
    /* Keep a copy: t lives only as long as the trace, and the dispatch
     * array moves as it grows, so the plan reads d->t[i] by index. */
    d->t[i] = *t;
    d->t[i].data = NULL;
    d->argv[i].v.t = NULL;
  }
  d->rank = rank;
  d->fn = fn;
  d->argc = sig->nparams;
  h->ndisps++;
  return PLD_OK;
}
