/* host/heap.c: each device's heap for resident tensors and what a run
 * needs of them (host/resident.h): the heaps' first-fit bookkeeping, the
 * check of a resident tensor passed to a run, and the run's table that
 * points its buffers into the heaps.  The API that makes and frees them is
 * host/resident.c's. */
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "core/tunables.h"
#include "host/resident.h"

/* ---- the heap ------------------------------------------------------------ */

size_t pld__heap_bytes(const struct pld_program *p, int r) {
  const struct pld__devplan *pl = &p->plan.plans[r];
  uint64_t want = (uint64_t)pld__tunables()->PLD_DEVICE_HEAP_MB << 20;
  uint64_t left = p->plan.plat->global_bytes > pl->mem_bytes
                      ? p->plan.plat->global_bytes - pl->mem_bytes
                      : 0;
  return (size_t)(want < left ? want : left);
}

/* First fit: the offset of len bytes (64-aligned) in h, or SIZE_MAX. */
size_t pld__heap_alloc(struct pld__heap *h, size_t len) {
  len = pld__round_up(len, 64);
  size_t at = 0;
  int i = 0;
  for (; i < h->nused; i++) {
    if (h->used[i].off - at >= len)
      break;
    at = h->used[i].off + h->used[i].len;
  }
  if (len > h->bytes || at > h->bytes - len)
    return SIZE_MAX;
  if (h->nused == h->cap) {
    int cap = h->cap ? 2 * h->cap : 8;
    struct pld__heap_block *b = pld__realloc(h->used, (size_t)cap * sizeof *b);
    if (!b)
      return SIZE_MAX;
    h->used = b;
    h->cap = cap;
  }
  memmove(&h->used[i + 1], &h->used[i],
          (size_t)(h->nused - i) * sizeof h->used[0]);
  h->used[i] = (struct pld__heap_block){at, len};
  h->nused++;
  return at;
}

void pld__heap_release(struct pld__heap *h, size_t off) {
  for (int i = 0; i < h->nused; i++)
    if (h->used[i].off == off) {
      memmove(&h->used[i], &h->used[i + 1],
              (size_t)(h->nused - i - 1) * sizeof h->used[0]);
      h->nused--;
      return;
    }
}

/* Byte offset of rank r's heap byte `off` from the start of data slot
 * `slot` (what a run's table holds, and what fetch and store take). */
size_t pld__heap_from_slot(const struct pld_program *p, int r, int slot,
                           size_t off) {
  size_t stride = pld__plan_slot_stride(&p->plan.plans[r]);
  return ((size_t)p->plan.plans[r].nslots - (size_t)slot) * stride + off;
}

/* ---- runs ---------------------------------------------------------------- */

int pld__resident_check(const struct pld_program *p, int i,
                        const struct pld__tensor *g) {
  const pld_signature *sig = p->plan.host.sig;
  const char *pn = sig->params[i].name;
  struct pld__resident *res = g->res;
  const struct pld_program *owner = p->rs.share ? p->rs.share : p;
  if (!res || res->magic != PLD__RES_LIVE || res->freed || !res->p ||
      res->p != owner)
    return pld__fail_api(
        res && res->magic == PLD__RES_LIVE && (res->freed || !res->p)
            ? PLD_ERR_STATE
            : PLD_ERR_ARG,
        "%s: parameter '%s' (%d of %d): %s", sig->name, pn, i + 1,
        p->plan.nargs,
        !res || res->magic != PLD__RES_LIVE ? "not a device tensor"
        : res->freed                        ? "the device tensor was freed "
                                              "(pld_device_tensor_free)"
        : !res->p ? "the device tensor's program was destroyed"
                  : "the device tensor lies on another "
                    "program's devices");
  /* Host tasks compute on host memory: none may take it. */
  for (int k = 0; k < p->plan.ntasks; k++)
    for (int a = 0; a < p->plan.tasks[k].argc; a++)
      if (p->plan.tasks[k].argv[a].kind == PLD_ARG_TENSOR &&
          p->plan.tasks[k].t[a].host_arg == i)
        return pld__fail_api(PLD_ERR_ARG,
                             "%s: parameter '%s' (%d of %d): a "
                             "device tensor, but host task %d (%s) takes it: "
                             "host tasks compute on host memory; pass a host "
                             "tensor",
                             sig->name, pn, i + 1, p->plan.nargs, k,
                             p->plan.tasks[k].fn.sig->name);
  /* Every rank's slice of it must lie on its own device. */
  for (int r = 0; r < p->plan.nranks; r++) {
    const struct pld__devplan *pl = &p->plan.plans[r];
    for (int b = 0; b < pl->nbufs; b++) {
      const struct pld__devbuf *buf = &pl->bufs[b];
      if (buf->host_arg != i)
        continue;
      size_t lo = res->rank == PLD_EACH_RANK ? (size_t)r * res->part : 0;
      if (res->off[r] != SIZE_MAX && buf->host_offset >= lo &&
          buf->host_offset + buf->nbytes <= lo + res->part)
        continue;
      char where[128];
      if (res->rank == PLD_EACH_RANK)
        pld__catf(where, sizeof where,
                  "only its part, bytes [%zu, %zu), lies on that device", lo,
                  lo + res->part);
      else
        pld__catf(where, sizeof where,
                  "the device tensor lies on rank %d (device %d)", res->rank,
                  p->plan.device_ids[res->rank]);
      return pld__fail_api(
          PLD_ERR_ARG,
          "%s: parameter '%s' (%d of %d): rank "
          "%d (device %d) is dispatched bytes [%zu, %zu) of it, "
          "but %s",
          sig->name, pn, i + 1, p->plan.nargs, r, p->plan.device_ids[r],
          buf->host_offset, buf->host_offset + buf->nbytes, where);
    }
  }
  return PLD_OK;
}

const size_t *pld__run_table(struct pld_program *p, int r, const pld_arg *argv,
                             int slot) {
  const struct pld__devplan *pl = &p->plan.plans[r];
  size_t *at = p->rs.table;
  int any = 0;
  for (int b = 0; b < pl->nbufs; b++) {
    const struct pld__devbuf *buf = &pl->bufs[b];
    const struct pld__tensor *t =
        buf->host_arg < p->plan.nargs ? argv[buf->host_arg].v.t : NULL;
    at[b] = buf->offset;
    if (!t || !(t->flags & PLD__T_RESIDENT))
      continue;
    const struct pld__resident *res = t->res;
    size_t lo = res->rank == PLD_EACH_RANK ? (size_t)r * res->part : 0;
    /* Its bytes lie in the heap of the device's first program (this
     * one's, or the one whose devices it shares): measured from this
     * run's slot, in the address space the device process shares. */
    const struct pld_program *q = res->p;
    uintptr_t target = (uintptr_t)pld__run_data(q, r, q->rs.slot) +
                       pld__heap_from_slot(q, r, q->rs.slot, res->off[r]) +
                       (buf->host_offset - lo);
    at[b] = (size_t)(target - (uintptr_t)pld__run_data(p, r, slot));
    any = 1;
  }
  return any ? at : NULL;
}

int pld__residents_init(struct pld_program *p) {
  int most = 1;
  for (int r = 0; r < p->plan.nranks; r++)
    if (p->plan.plans[r].nbufs > most)
      most = p->plan.plans[r].nbufs;
  p->rs.heaps = pld__calloc((size_t)p->plan.nranks, sizeof *p->rs.heaps);
  p->rs.table = pld__calloc((size_t)most, sizeof *p->rs.table);
  if (!p->rs.heaps || !p->rs.table)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  for (int r = 0; r < p->plan.nranks; r++)
    p->rs.heaps[r].bytes = pld__heap_bytes(p, r);
  return PLD_OK;
}

void pld__residents_release(struct pld_program *p) {
  /* Its tensors outlive it, refused from now on. */
  for (struct pld__resident *res = p->rs.resident; res; res = res->next)
    res->p = NULL;
  for (int r = 0; p->rs.heaps && r < p->plan.nranks; r++)
    pld__free(p->rs.heaps[r].used);
  pld__free(p->rs.heaps);
  pld__free(p->rs.table);
  p->rs.heaps = NULL;
  p->rs.table = NULL;
  p->rs.resident = NULL;
}
