/* host/hosttrace.c: the host orchestrator's context while pld_compile
 * traces it: its first failure, the views it made (kept until the trace
 * ends), the check of a function it calls, and the calls that only read
 * the context (pld_world_size, pld_slice). */
#include <stdarg.h>
#include <string.h>

#include "core/alloc.h"
#include "host/program.h"

int pld__hfail(struct pld__host *h, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int st = pld__first_failure(&h->status, h->msg, sizeof h->msg, status, "",
                              fmt, ap);
  va_end(ap);
  return st;
}

int pld_world_size(pld_host h) { return h.p->prog->plan.nranks; }

pld_tensor pld_slice(pld_host hh, pld_tensor t, int64_t index) {
  struct pld__host *h = hh.p;
  pld_tensor bad = {&pld__invalid_tensor};
  if (h->status)
    return bad;
  const char *name = h->prog->plan.host.sig->name;
  if (!t.p || (t.p->flags & PLD__T_INVALID)) {
    pld__hfail(h, PLD_ERR_ARG,
               "pld_slice (in %s): t: expected a tensor, got %s", name,
               t.p ? "the result of a failed call" : "a NULL tensor");
    return bad;
  }
  if (t.p->host_arg < 0) {
    pld__hfail(
        h, PLD_ERR_ARG,
        "pld_slice (in %s): t: expected a parameter of %s or a slice of one, "
        "got another tensor",
        name, name);
    return bad;
  }
  char s[128]; /* its shape, for a failure */
  if (t.p->ndim < 2) {
    pld__tensor_str(s, sizeof s, t.p);
    pld__hfail(
        h, PLD_ERR_ARG,
        "pld_slice (in %s): t: expected a tensor of 2 or more dimensions, "
        "got %s",
        name, s);
    return bad;
  }
  if (index < 0 || index >= t.p->shape[0]) {
    pld__tensor_str(s, sizeof s, t.p);
    pld__hfail(h, PLD_ERR_BOUNDS,
               "pld_slice (in %s): index: expected [0, %lld) for %s, got %lld",
               name, (long long)t.p->shape[0], s, (long long)index);
    return bad;
  }
  struct pld__tensor *sl = pld__host_keep(h, pld__malloc(sizeof *sl));
  if (!sl)
    return bad;
  pld__slice_of(sl, t.p, index);
  return (pld_tensor){sl};
}

void pld__slice_of(struct pld__tensor *sl, const struct pld__tensor *t,
                   int64_t index) {
  *sl = *t;
  sl->flags &= ~(unsigned)PLD__T_OWNED;
  size_t stride = t->nbytes / (size_t)t->shape[0];
  sl->ndim = t->ndim - 1;
  memmove(sl->shape, t->shape + 1, (size_t)sl->ndim * sizeof sl->shape[0]);
  sl->nbytes = stride;
  sl->host_offset = t->host_offset + (size_t)index * stride;
  if (sl->data)
    sl->data = (char *)t->data + (size_t)index * stride;
}

struct pld__tensor *pld__host_keep(struct pld__host *h, struct pld__tensor *t) {
  if (t && h->nkept == h->capkept) {
    int cap = h->capkept ? 2 * h->capkept : 16;
    struct pld__tensor **v =
        pld__realloc(h->kept, (size_t)cap * sizeof *h->kept);
    if (!v) {
      pld__free(t);
      t = NULL;
    } else {
      h->kept = v;
      h->capkept = cap;
    }
  }
  if (!t) {
    pld__hfail(h, PLD_ERR_NOMEM, "%s: out of memory",
               h->prog->plan.host.sig->name);
    return NULL;
  }
  h->kept[h->nkept++] = t;
  return t;
}

int pld__host_callee(struct pld__host *h, const char *call,
                     const pld_signature *sig, int entry, pld_level level,
                     const char *decl) {
  if (h->status)
    return h->status;
  const char *problem = pld__sig_problem(sig, level, entry);
  if (problem)
    return pld__hfail(h, PLD_ERR_ARG,
                      "%s (in %s): fn: expected a function declared with %s, "
                      "got %s",
                      call, h->prog->plan.host.sig->name, decl, problem);
  return PLD_OK;
}
