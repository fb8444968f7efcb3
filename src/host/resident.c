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
#include "host/run.h"
#include "host/submit.h"

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
  if (p->rs.share) /* the devices are the group's first program's */
    p = p->rs.share;
  if (rank != PLD_EACH_RANK && (rank < 0 || rank >= p->plan.nranks))
    return pld__fail(PLD_ERR_ARG,
                     "%s: rank: expected a rank of the program's world "
                     "(0 to %d) or PLD_EACH_RANK, got %d",
                     fn, p->plan.nranks - 1, rank);
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
    full[0] = p->plan.nranks;
  struct pld__tensor *t = pld__calloc(1, sizeof *t);
  struct pld__resident *res = pld__calloc(1, sizeof *res);
  size_t *off = pld__calloc((size_t)p->plan.nranks, sizeof *off);
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
  res->magic = PLD__RES_LIVE;
  res->p = p;
  res->rank = rank;
  res->part = each ? t->nbytes / (size_t)p->plan.nranks : t->nbytes;
  res->off = off;
  for (int r = 0; r < p->plan.nranks; r++)
    off[r] = SIZE_MAX;
  for (int r = 0; r < p->plan.nranks && !st; r++) {
    if (!each && r != rank)
      continue;
    off[r] = pld__heap_alloc(&p->rs.heaps[r], res->part);
    if (off[r] == SIZE_MAX)
      st = pld__fail(PLD_ERR_NOMEM,
                     "%s: rank %d (device %d): %zu bytes do not fit in the "
                     "%zu of device memory left for resident tensors "
                     "(PLD_DEVICE_HEAP_MB, and the platform's memory)",
                     fn, r, p->plan.device_ids[r], res->part,
                     p->rs.heaps[r].bytes);
  }
  if (st) {
    for (int r = 0; r < p->plan.nranks; r++)
      if (off[r] != SIZE_MAX)
        pld__heap_release(&p->rs.heaps[r], off[r]);
    pld__free(t);
    pld__free(res);
    pld__free(off);
    return st;
  }
  /* A fresh tensor holds zeros, as a fresh mapping does. */
  for (int r = 0; r < p->plan.nranks; r++)
    if (off[r] != SIZE_MAX) {
      static const unsigned char zeros[4096];
      for (size_t done = 0; done < res->part; done += sizeof zeros) {
        size_t n =
            res->part - done < sizeof zeros ? res->part - done : sizeof zeros;
        p->be.cp->store(p, r,
                        pld__heap_from_slot(p, r, p->rs.slot, off[r] + done),
                        zeros, n);
      }
    }
  t->flags = PLD__T_RESIDENT;
  t->host_arg = -1;
  t->win_buf = -1;
  t->res = res;
  res->next = p->rs.resident;
  p->rs.resident = res;
  pld__tensor_release_hook = resident_destroy;
  out->p = t;
  return PLD_OK;
}

/* The resident tensor t in *out: PLD_OK, or the failure naming fn and
 * role. */
static int resident_get(pld_tensor t, const char *fn, const char *role,
                        struct pld__resident **out) {
  if (!t.p || !(t.p->flags & PLD__T_RESIDENT) || !t.p->res ||
      t.p->res->magic != PLD__RES_LIVE)
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
static int tensor_copy(pld_tensor dev, pld_tensor host, int write) {
  const char *fn = write ? "pld_device_tensor_write" : "pld_device_tensor_read";
  struct pld__resident *res = NULL;
  int st = resident_get(dev, fn, write ? "dst" : "src", &res);
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
  for (int r = 0; r < p->plan.nranks; r++) {
    if (res->off[r] == SIZE_MAX)
      continue;
    unsigned char *at =
        (unsigned char *)h->data +
        (res->rank == PLD_EACH_RANK ? (size_t)r * res->part : 0);
    size_t dev_off = pld__heap_from_slot(p, r, p->rs.slot, res->off[r]);
    if (write)
      p->be.cp->store(p, r, dev_off, at, res->part);
    else if ((st = p->be.cp->fetch(p, r, dev_off, at, res->part)))
      return st;
  }
  return PLD_OK;
}

int pld_device_tensor_write(pld_tensor dst, pld_tensor src) {
  return tensor_copy(dst, src, 1);
}

int pld_device_tensor_read(pld_tensor src, pld_tensor dst) {
  return tensor_copy(src, dst, 0);
}

int pld_device_tensor_free(pld_tensor t) {
  struct pld__resident *res = NULL;
  int st = resident_get(t, "pld_device_tensor_free", "t", &res);
  if (st)
    return st;
  struct pld_program *p = res->p;
  pld__runner_drain(p);
  for (int r = 0; r < p->plan.nranks; r++)
    if (res->off[r] != SIZE_MAX)
      pld__heap_release(&p->rs.heaps[r], res->off[r]);
  res->freed = 1;
  return PLD_OK;
}

static void resident_destroy(struct pld__tensor *t) {
  if (!t->res)
    return;
  /* Its memory goes back if the program still has it. */
  struct pld__resident *res = t->res;
  if (!res->freed && res->p)
    pld_device_tensor_free((pld_tensor){t});
  if (res->p) /* unlink it */
    for (struct pld__resident **q = &res->p->rs.resident; *q; q = &(*q)->next)
      if (*q == res) {
        *q = res->next;
        break;
      }
  res->magic = 0;
  pld__free(res->off);
  pld__free(res);
  t->res = NULL;
}
