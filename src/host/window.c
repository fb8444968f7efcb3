/* host/window.c: window buffers and views while tracing the host, then the
 * domains and the layout of their copies. */
#include <string.h>

#include "core/alloc.h"
#include "host/program.h"
#include "pld/window.h"

static struct pld__winbuf invalid_buf = {-1, 0, 0, NULL, 1};

/* Window buffers are at least this large, and their copies this aligned. */
#define WINDOW_MIN_BYTES ((size_t)4096)
#define WINDOW_ALIGN ((size_t)32)

static pld_window_buf window_alloc(struct pld__host *h, const char *fn,
                                   size_t bytes) {
  pld_window_buf bad = {&invalid_buf};
  struct pld_program *p = h->prog;
  if (h->status)
    return bad;
  /* Every rank holds a copy in its device's global memory: a size beyond
   * it is refused here, before any size computation could wrap. */
  if (bytes == 0 || bytes > p->plan.plat->global_bytes) {
    pld__hfail(h, PLD_ERR_ARG,
               "%s (in %s): bytes: expected 1 to %llu (the global memory of "
               "an %s device), got %zu",
               fn, p->plan.host.sig->name,
               (unsigned long long)p->plan.plat->global_bytes,
               p->plan.plat->name, bytes);
    return bad;
  }
  struct pld__winbuf **v =
      pld__realloc(p->plan.winbufs, (size_t)(p->plan.nwinbufs + 1) * sizeof *v);
  struct pld__winbuf *b = v ? pld__calloc(1, sizeof *b) : NULL;
  if (v)
    p->plan.winbufs = v;
  if (b && !(b->member = pld__calloc((size_t)p->plan.nranks, 1))) {
    pld__free(b);
    b = NULL;
  }
  if (!b) {
    pld__hfail(h, PLD_ERR_NOMEM, "%s (in %s): out of memory", fn,
               p->plan.host.sig->name);
    return bad;
  }
  b->id = p->plan.nwinbufs;
  b->bytes = bytes;
  b->phys = bytes < WINDOW_MIN_BYTES
                ? WINDOW_MIN_BYTES
                : (bytes + WINDOW_ALIGN - 1) / WINDOW_ALIGN * WINDOW_ALIGN;
  p->plan.winbufs[p->plan.nwinbufs++] = b;
  return (pld_window_buf){b};
}

pld_window_buf pld_window_alloc(pld_host h, size_t bytes) {
  return window_alloc(h.p, "pld_window_alloc", bytes);
}

pld_window_buf pld_window_alloc_shape(pld_host hh, pld_dtype dtype, int ndim,
                                      const int64_t *shape) {
  struct pld__host *h = hh.p;
  struct pld__tensor t;
  if (h->status)
    return (pld_window_buf){&invalid_buf};
  if (pld__tensor_init(&t, "pld_window_alloc_shape", dtype, ndim, shape)) {
    pld__hfail(h, PLD_ERR_ARG, "%s", pld_last_error());
    return (pld_window_buf){&invalid_buf};
  }
  return window_alloc(h, "pld_window_alloc_shape", t.nbytes);
}

pld_window pld_window_view(pld_host h, pld_window_buf buf, pld_dtype dtype,
                           int ndim, const int64_t *shape) {
  return pld_window_view_at(h, buf, 0, dtype, ndim, shape);
}

pld_window pld_window_view_at(pld_host hh, pld_window_buf buf, size_t offset,
                              pld_dtype dtype, int ndim, const int64_t *shape) {
  struct pld__host *h = hh.p;
  pld_window bad = {&pld__invalid_tensor};
  const char *name = h->prog->plan.host.sig->name;
  if (h->status)
    return bad;
  if (!buf.p || buf.p->invalid) {
    pld__hfail(h, PLD_ERR_ARG,
               "pld_window_view (in %s): buf: expected a window buffer, got %s",
               name, buf.p ? "the result of a failed call" : "NULL");
    return bad;
  }
  struct pld__tensor t;
  if (pld__tensor_init(&t, "pld_window_view", dtype, ndim, shape)) {
    pld__hfail(h, PLD_ERR_ARG, "%s", pld_last_error());
    return bad;
  }
  char ts[128];
  pld__tensor_str(ts, sizeof ts, &t);
  if (offset % pld_dtype_size(dtype) != 0) {
    pld__hfail(h, PLD_ERR_ARG,
               "pld_window_view (in %s): offset: expected a multiple of %zu "
               "(the size of %s), got %zu",
               name, pld_dtype_size(dtype), pld_dtype_name(dtype), offset);
    return bad;
  }
  if (offset > buf.p->bytes || t.nbytes > buf.p->bytes - offset) {
    /* offset + t.nbytes may not fit a size_t: said in words then. */
    char need[64];
    size_t end;
    if (__builtin_add_overflow(offset, t.nbytes, &end))
      pld__catf(need, sizeof need, "more than %zu", (size_t)SIZE_MAX);
    else
      pld__catf(need, sizeof need, "%zu", end);
    pld__hfail(h, PLD_ERR_BOUNDS,
               "pld_window_view (in %s): view %s at byte %zu needs %s bytes, "
               "but window buffer #%d was allocated with %zu bytes (sizes are "
               "in bytes, not elements: allocate at least %s)",
               name, ts, offset, need, buf.p->id, buf.p->bytes, need);
    return bad;
  }
  struct pld__tensor *v = pld__host_keep(h, pld__malloc(sizeof *v));
  if (!v)
    return bad;
  *v = t;
  v->flags = PLD__T_HOST | PLD__T_WINDOW;
  v->win_buf = buf.p->id;
  v->win_offset = offset;
  return (pld_window){v};
}

void pld__windows_member(struct pld_program *p, int buf, int rank) {
  p->plan.winbufs[buf]->member[rank] = 1;
}

int pld__windows_plan(struct pld_program *p) {
  size_t n = (size_t)p->plan.nwinbufs * (size_t)p->plan.nranks;
  p->plan.comms = pld__calloc(n ? n : 1, sizeof *p->plan.comms);
  p->plan.comm_members = pld__calloc(n ? n : 1, sizeof *p->plan.comm_members);
  p->plan.member = pld__calloc(n ? n : 1, 1);
  if (!p->plan.comms || !p->plan.comm_members || !p->plan.member)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  for (int b = 0; b < p->plan.nwinbufs; b++) {
    memcpy(&p->plan.member[(size_t)b * (size_t)p->plan.nranks],
           p->plan.winbufs[b]->member, (size_t)p->plan.nranks);
    /* Domain ranks follow world rank order. */
    int *members = &p->plan.comm_members[(size_t)b * (size_t)p->plan.nranks];
    int size = 0;
    for (int r = 0; r < p->plan.nranks; r++)
      if (p->plan.member[(size_t)b * (size_t)p->plan.nranks + (size_t)r])
        members[size++] = r;
    for (int i = 0; i < size; i++) {
      struct pld__comm *c =
          &p->plan
               .comms[(size_t)b * (size_t)p->plan.nranks + (size_t)members[i]];
      c->buf = b;
      c->rank = i;
      c->nranks = size;
      c->members = members;
    }
  }
  return PLD_OK;
}

void pld__windows_free(struct pld_program *p) {
  for (int b = 0; b < p->plan.nwinbufs; b++) {
    pld__free(p->plan.winbufs[b]->member);
    pld__free(p->plan.winbufs[b]);
  }
  pld__free(p->plan.winbufs);
  pld__free(p->plan.member);
  pld__free(p->plan.comms);
  pld__free(p->plan.comm_members);
}
