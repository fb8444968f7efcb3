#include "core/kctx.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

const char *pld__core_type_name(pld_core_type t) {
  return t == PLD_CORE_CUBE ? "AIC" : "AIV";
}

int pld__core_init(struct pld__core *c, const struct pld__core_spec *spec) {
  memset(c, 0, sizeof *c);
  c->spec = *spec;
  c->mem = pld__aligned_alloc(spec->capacity);
  if (!c->mem)
    return pld__fail(PLD_ERR_NOMEM,
                     "pld runtime: out of memory for %zu bytes of %s tile "
                     "memory",
                     spec->capacity, pld__core_type_name(spec->type));
  return PLD_OK;
}

void pld__core_release(struct pld__core *c) {
  pld__free(c->mem);
  c->mem = NULL;
}

void pld__core_begin(struct pld__core *c, const char *kernel, int rank,
                     int device, int32_t block_idx, int32_t block_num) {
  for (int i = 0; i < PLD__MAX_TILES; i++)
    c->tiles[i].live = 0;
  c->used = 0;
  c->kernel = kernel;
  c->rank = rank;
  c->device = device;
  c->block_idx = block_idx;
  c->block_num = block_num;
  c->status = PLD_OK;
  c->msg[0] = '\0';
}

int pld__kfail(struct pld__core *c, int status, const char *fn,
               const char *fmt, ...) {
  if (c->status)
    return c->status;
  c->status = status;
  size_t n = pld__catf(c->msg, sizeof c->msg,
                       "%s: kernel %s (rank %d, device %d, %s core %d, block "
                       "%d of %d): ",
                       fn, c->kernel ? c->kernel : "?", c->rank, c->device,
                       pld__core_type_name(c->spec.type), c->spec.index,
                       (int)c->block_idx, (int)c->block_num);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg + n, sizeof c->msg - n, fmt, ap);
  va_end(ap);
  return status;
}

int32_t pld_block_idx(pld_core k) { return k.p->block_idx; }
int32_t pld_block_num(pld_core k) { return k.p->block_num; }
