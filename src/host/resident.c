/* host/resident.c: device-resident tensors (pld_device_tensor_create).
 * Each device's data area ends with a heap (after its data slots, see
 * device/plan.h), PLD_DEVICE_HEAP_MB reserved when the program is
 * prepared; the host keeps the heap's allocations.  A resident tensor is
 * a host-side descriptor (flags PLD__T_RESIDENT, no data) whose res says
 * where its bytes lie: on one rank's device, or one part per rank.  A run
 * that passes one where its host function takes a host tensor uses its
 * slices where they lie: the run's table (plan.h) points the rank's
 * buffer there, and nothing is copied in or out. */
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "core/tunables.h"
#include "host/ctl.h"
#include "host/resident.h"
#include "host/submit.h"

#define RES_LIVE 0x72657369u /* "resi" */

struct pld__resident {
  uint32_t magic;
  struct pld_program *p; /* NULL once the program is destroyed */
  int rank;              /* its device, or PLD_EACH_RANK */
  size_t part;           /* bytes on each device it lies on */
  size_t *off;           /* [rank]: heap offset, or SIZE_MAX */
  int freed;
  struct pld__resident *next; /* the program's */
};

/* One device's heap: its allocations by increasing offset. */
struct pld__heap {
  size_t bytes;
  struct block {
    size_t off, len;
  } * used;
  int nused, cap;
};

/* ---- the heap ------------------------------------------------------------ */

size_t pld__heap_bytes(const struct pld_program *p, int r) {
  const struct pld__devplan *pl = &p->plans[r];
  uint64_t want = (uint64_t)pld__tunables()->PLD_DEVICE_HEAP_MB << 20;
  uint64_t left = p->plat->global_bytes > pl->mem_bytes
                      ? p->plat->global_bytes - pl->mem_bytes
                      : 0;
  return (size_t)(want < left ? want : left);
}

/* First fit: the offset of len bytes (64-aligned) in h, or SIZE_MAX. */
static size_t heap_alloc(struct pld__heap *h, size_t len) {
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
    struct block *b = pld__realloc(h->used, (size_t)cap * sizeof *b);
    if (!b)
      return SIZE_MAX;
    h->used = b;
    h->cap = cap;
  }
  memmove(&h->used[i + 1], &h->used[i],
          (size_t)(h->nused - i) * sizeof h->used[0]);
  h->used[i] = (struct block){at, len};
  h->nused++;
  return at;
}

static void heap_release(struct pld__heap *h, size_t off) {
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
static size_t from_slot(const struct pld_program *p, int r, int slot,
                        size_t off) {
  size_t stride = pld__plan_slot_stride(&p->plans[r]);
  return ((size_t)p->plans[r].nslots - (size_t)slot) * stride + off;
}

/* ---- the API ------------------------------------------------------------- */

/* pld_tensor_destroy of a resident tensor (core/tensor.h's hook). */
static void resident_destroy(struct pld__tensor *t);

int pld_device_tensor_create(pld_program *p, int rank, pld_dtype dtype,
                             int ndim, const int64_t *shape, pld_tensor *out) {
  const char *fn = "pld_device_tensor_create";
  if (!out)
    return pld__fail(PLD_ERR_ARG,
                     "%s: out: expected where to store the "
                     "tensor, got NULL",
                     fn);
  if (!p)
    return pld__fail(PLD_ERR_ARG, "%s: p: expected a program, got NULL", fn);
  if (p->share) /* the devices are the group's first program's */
    p = p->share;
  if (rank != PLD_EACH_RANK && (rank < 0 || rank >= p->nranks))
    return pld__fail(PLD_ERR_ARG,
                     "%s: rank: expected a rank of the program's world "
                     "(0 to %d) or PLD_EACH_RANK, got %d",
                     fn, p->nranks - 1, rank);
  int each = rank == PLD_EACH_RANK;
  if (ndim < 1 || ndim > PLD_MAX_DIMS - each)
    return pld__fail(PLD_ERR_ARG, "%s: ndim: expected 1 to %d%s, got %d", fn,
                     PLD_MAX_DIMS - each,
                     each ? " (a tensor of a part per rank has the rank "
                            "dimension too)"
                          : "",
                     ndim);
  int64_t full[PLD_MAX_DIMS];
  if (shape)
    memcpy(full + each, shape, (size_t)ndim * sizeof *shape);
  if (each)
    full[0] = p->nranks;
  struct pld__tensor *t = pld__calloc(1, sizeof *t);
  struct pld__resident *res = pld__calloc(1, sizeof *res);
  size_t *off = pld__calloc((size_t)p->nranks, sizeof *off);
  if (!t || !res || !off) {
    pld__free(t);
    pld__free(res);
    pld__free(off);
    return pld__fail(PLD_ERR_NOMEM, "%s: out of memory", fn);
  }
  int st = !shape ? pld__fail(PLD_ERR_ARG,
                              "%s: shape: expected %d "
                              "dimensions, got NULL",
                              fn, ndim)
                  : pld__tensor_init(t, fn, dtype, ndim + each, full);
  if (!st)
    st = pld_program_prepare(p);
  if (!st) /* what runs in flight write is theirs until they are done */
    pld__runner_drain(p);
  res->magic = RES_LIVE;
  res->p = p;
  res->rank = rank;
  res->part = each ? t->nbytes / (size_t)p->nranks : t->nbytes;
  res->off = off;
  for (int r = 0; r < p->nranks; r++)
    off[r] = SIZE_MAX;
  for (int r = 0; r < p->nranks && !st; r++) {
    if (!each && r != rank)
      continue;
    off[r] = heap_alloc(&p->heaps[r], res->part);
    if (off[r] == SIZE_MAX)
      st = pld__fail(PLD_ERR_NOMEM,
                     "%s: rank %d (device %d): %zu bytes do not fit in the "
                     "%zu of device memory left for resident tensors "
                     "(PLD_DEVICE_HEAP_MB, and the platform's memory)",
                     fn, r, p->device_ids[r], res->part, p->heaps[r].bytes);
  }
  if (st) {
    for (int r = 0; r < p->nranks; r++)
      if (off[r] != SIZE_MAX)
        heap_release(&p->heaps[r], off[r]);
    pld__free(t);
    pld__free(res);
    pld__free(off);
    return st;
  }
  /* A fresh tensor holds zeros, as a fresh mapping does. */
  for (int r = 0; r < p->nranks; r++)
    if (off[r] != SIZE_MAX) {
      static const unsigned char zeros[4096];
      for (size_t done = 0; done < res->part; done += sizeof zeros) {
        size_t n =
            res->part - done < sizeof zeros ? res->part - done : sizeof zeros;
        p->cp->store(p, r, from_slot(p, r, p->slot, off[r] + done), zeros, n);
      }
    }
  t->flags = PLD__T_RESIDENT;
  t->host_arg = -1;
  t->win_buf = -1;
  t->res = res;
  res->next = p->resident;
  p->resident = res;
  pld__tensor_release_hook = resident_destroy;
  out->p = t;
  return PLD_OK;
}

/* The resident tensor t in *out: PLD_OK, or the failure naming fn and
 * role. */
static int check(pld_tensor t, const char *fn, const char *role,
                 struct pld__resident **out) {
  if (!t.p || !(t.p->flags & PLD__T_RESIDENT) || !t.p->res ||
      t.p->res->magic != RES_LIVE)
    return pld__fail(PLD_ERR_ARG,
                     "%s: %s: expected a tensor of pld_device_tensor_create",
                     fn, role);
  struct pld__resident *res = t.p->res;
  if (res->freed || !res->p)
    return pld__fail(PLD_ERR_STATE, "%s: %s: %s", fn, role,
                     res->freed ? "the device tensor was freed "
                                  "(pld_device_tensor_free)"
                                : "the device tensor's program was "
                                  "destroyed");
  *out = res;
  return PLD_OK;
}

/* Copies between a resident tensor and a host tensor of its shape. */
static int transfer(pld_tensor dev, pld_tensor host, int write) {
  const char *fn = write ? "pld_device_tensor_write" : "pld_device_tensor_read";
  struct pld__resident *res = NULL;
  int st = check(dev, fn, write ? "dst" : "src", &res);
  if (st)
    return st;
  const struct pld__tensor *d = dev.p, *h = host.p;
  if (!h || !(h->flags & PLD__T_HOST) || h->dtype != d->dtype ||
      h->ndim != d->ndim ||
      memcmp(h->shape, d->shape, (size_t)d->ndim * sizeof d->shape[0])) {
    char ds[128], hs[128] = "not a host tensor";
    pld__tensor_str(ds, sizeof ds, d);
    if (h && (h->flags & PLD__T_HOST))
      pld__tensor_str(hs, sizeof hs, h);
    return pld__fail(PLD_ERR_ARG,
                     "%s: %s: expected a host tensor %s (the device "
                     "tensor's shape), got %s",
                     fn, write ? "src" : "dst", ds, hs);
  }
  struct pld_program *p = res->p;
  /* After the runs in flight: what they read or write is theirs. */
  pld__runner_drain(p);
  for (int r = 0; r < p->nranks; r++) {
    if (res->off[r] == SIZE_MAX)
      continue;
    unsigned char *at =
        (unsigned char *)h->data +
        (res->rank == PLD_EACH_RANK ? (size_t)r * res->part : 0);
    size_t dev_off = from_slot(p, r, p->slot, res->off[r]);
    if (write)
      p->cp->store(p, r, dev_off, at, res->part);
    else if ((st = p->cp->fetch(p, r, dev_off, at, res->part)))
      return st;
  }
  return PLD_OK;
}

int pld_device_tensor_write(pld_tensor dst, pld_tensor src) {
  return transfer(dst, src, 1);
}

int pld_device_tensor_read(pld_tensor src, pld_tensor dst) {
  return transfer(src, dst, 0);
}

int pld_device_tensor_free(pld_tensor t) {
  struct pld__resident *res = NULL;
  int st = check(t, "pld_device_tensor_free", "t", &res);
  if (st)
    return st;
  struct pld_program *p = res->p;
  pld__runner_drain(p);
  for (int r = 0; r < p->nranks; r++)
    if (res->off[r] != SIZE_MAX)
      heap_release(&p->heaps[r], res->off[r]);
  res->freed = 1;
  return PLD_OK;
}

/* ---- runs ---------------------------------------------------------------- */

int pld__resident_check(const struct pld_program *p, int i,
                        const struct pld__tensor *g) {
  const pld_signature *sig = p->host.sig;
  const char *pn = sig->params[i].name;
  struct pld__resident *res = g->res;
  const struct pld_program *owner = p->share ? p->share : p;
  if (!res || res->magic != RES_LIVE || res->freed || !res->p ||
      res->p != owner)
    return pld__fail(res && res->magic == RES_LIVE && (res->freed || !res->p)
                         ? PLD_ERR_STATE
                         : PLD_ERR_ARG,
                     "pld_program_run: %s: parameter '%s' (%d of %d): %s",
                     sig->name, pn, i + 1, p->nargs,
                     !res || res->magic != RES_LIVE ? "not a device tensor"
                     : res->freed ? "the device tensor was freed "
                                    "(pld_device_tensor_free)"
                     : !res->p    ? "the device tensor's program was destroyed"
                                  : "the device tensor lies on another "
                                    "program's devices");
  /* Host tasks compute on host memory: none may take it. */
  for (int k = 0; k < p->ntasks; k++)
    for (int a = 0; a < p->tasks[k].argc; a++)
      if (p->tasks[k].argv[a].kind == PLD_ARG_TENSOR &&
          p->tasks[k].t[a].host_arg == i)
        return pld__fail(PLD_ERR_ARG,
                         "pld_program_run: %s: parameter '%s' (%d of %d): a "
                         "device tensor, but host task %d (%s) takes it: "
                         "host tasks compute on host memory; pass a host "
                         "tensor",
                         sig->name, pn, i + 1, p->nargs, k,
                         p->tasks[k].fn.sig->name);
  /* Every rank's slice of it must lie on its own device. */
  for (int r = 0; r < p->nranks; r++) {
    const struct pld__devplan *pl = &p->plans[r];
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
                  p->device_ids[res->rank]);
      return pld__fail(PLD_ERR_ARG,
                       "pld_program_run: %s: parameter '%s' (%d of %d): rank "
                       "%d (device %d) is dispatched bytes [%zu, %zu) of it, "
                       "but %s",
                       sig->name, pn, i + 1, p->nargs, r, p->device_ids[r],
                       buf->host_offset, buf->host_offset + buf->nbytes, where);
    }
  }
  return PLD_OK;
}

const size_t *pld__run_table(struct pld_program *p, int r, const pld_arg *argv,
                             int slot) {
  const struct pld__devplan *pl = &p->plans[r];
  size_t *at = p->table;
  int any = 0;
  for (int b = 0; b < pl->nbufs; b++) {
    const struct pld__devbuf *buf = &pl->bufs[b];
    const struct pld__tensor *t =
        buf->host_arg < p->nargs ? argv[buf->host_arg].v.t : NULL;
    at[b] = buf->offset;
    if (!t || !(t->flags & PLD__T_RESIDENT))
      continue;
    const struct pld__resident *res = t->res;
    size_t lo = res->rank == PLD_EACH_RANK ? (size_t)r * res->part : 0;
    /* Its bytes lie in the heap of the device's first program (this
     * one's, or the one whose devices it shares): measured from this
     * run's slot, in the address space the device process shares. */
    const struct pld_program *q = res->p;
    uintptr_t target = (uintptr_t)pld__run_data(q, r, q->slot) +
                       from_slot(q, r, q->slot, res->off[r]) +
                       (buf->host_offset - lo);
    at[b] = (size_t)(target - (uintptr_t)pld__run_data(p, r, slot));
    any = 1;
  }
  return any ? at : NULL;
}

int pld__residents_init(struct pld_program *p) {
  int most = 1;
  for (int r = 0; r < p->nranks; r++)
    if (p->plans[r].nbufs > most)
      most = p->plans[r].nbufs;
  p->heaps = pld__calloc((size_t)p->nranks, sizeof *p->heaps);
  p->table = pld__calloc((size_t)most, sizeof *p->table);
  if (!p->heaps || !p->table)
    return pld__fail(PLD_ERR_NOMEM, "pld_compile: out of memory");
  for (int r = 0; r < p->nranks; r++)
    p->heaps[r].bytes = pld__heap_bytes(p, r);
  return PLD_OK;
}

void pld__residents_release(struct pld_program *p) {
  /* Its tensors outlive it, refused from now on. */
  for (struct pld__resident *res = p->resident; res; res = res->next)
    res->p = NULL;
  for (int r = 0; p->heaps && r < p->nranks; r++)
    pld__free(p->heaps[r].used);
  pld__free(p->heaps);
  pld__free(p->table);
  p->heaps = NULL;
  p->table = NULL;
  p->resident = NULL;
}

static void resident_destroy(struct pld__tensor *t) {
  if (!t->res)
    return;
  /* Its memory goes back if the program still has it. */
  struct pld__resident *res = t->res;
  if (!res->freed && res->p)
    pld_device_tensor_free((pld_tensor){t});
  if (res->p) /* unlink it */
    for (struct pld__resident **q = &res->p->resident; *q; q = &(*q)->next)
      if (*q == res) {
        *q = res->next;
        break;
      }
  res->magic = 0;
  pld__free(res->off);
  pld__free(res);
  t->res = NULL;
}
