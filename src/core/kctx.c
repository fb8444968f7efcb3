/* core/kctx.c: the kernel context of one simulated AI core: its tile
 * memory reset between blocks, its block indices, and its first failure
 * (core/kctx.h). */
#include "core/kctx.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "pld/mix.h"

const char *pld__core_type_name(pld_core_type t) {
  return t == PLD_CORE_CUBE ? "AIC" : t == PLD_CORE_MIX ? "AIC + AIV" : "AIV";
}

int pld__core_init(struct pld__core *c, const struct pld__core_spec *spec) {
  /* All but the message's body, which only a failure writes: it is most
   * of the struct, pages a device need not touch. */
  memset(c, 0, offsetof(struct pld__core, msg) + 1);
  c->spec = *spec;
  /* Descriptors start at block_seq 0: none is live before a block. */
  c->block_seq = 1;
  c->tiles_max = spec->capacity / PLD__TILE_GRANULE;
  c->mem = pld__aligned_alloc(spec->capacity);
  c->tiles = c->mem ? pld__calloc(c->tiles_max, sizeof *c->tiles) : NULL;
  if (!c->tiles) {
    pld__core_release(c);
    return pld__fail(PLD_ERR_NOMEM,
                     "pld runtime: out of memory for %zu bytes of %s tile "
                     "memory and its %zu tile descriptors",
                     spec->capacity, pld__core_type_name(spec->type),
                     spec->capacity / PLD__TILE_GRANULE);
  }
  return PLD_OK;
}

void pld__core_release(struct pld__core *c) {
  pld__free(c->mem);
  pld__free(c->tiles);
  c->mem = NULL;
  c->tiles = NULL;
  c->tiles_max = 0;
}

/* This runs before every block, so it touches no descriptor: the new
 * block_seq is what makes the last block's tiles dead. */
void pld__core_begin(struct pld__core *c, const char *kernel, int rank,
                     int device, int32_t block_idx, int32_t block_num) {
  c->block_seq++;
  c->tiles_issued = 0;
  c->tiles_free = NULL;
  c->live = NULL;
  c->packed = NULL;
  c->used = 0;
  c->kernel = kernel;
  c->rank = rank;
  c->device = device;
  c->block_idx = block_idx;
  c->block_num = block_num;
  c->coll_kind = c->coll_call = c->coll_round = 0;
  c->ndeferred = 0;
  c->prefetching = 0;
  c->prefetches = 0;
  c->mix = NULL;
  c->mix_part = 0;
  c->status = PLD_OK;
  c->msg[0] = '\0';
}

/* pld__kfail with a va_list, shared with pld_kernel_fail. */
static int kfail_v(struct pld__core *c, int status, const char *fn,
                   const char *fmt, va_list ap) PLD__PRINTF(4, 0);
static int kfail_v(struct pld__core *c, int status, const char *fn,
                   const char *fmt, va_list ap) {
  char prefix[512];
  pld__catf(prefix, sizeof prefix,
            "%s: kernel %s (rank %d, device %d, %s core %d, block %d of %d): ",
            fn, c->kernel ? c->kernel : "?", c->rank, c->device,
            pld__core_type_name(c->spec.type), c->spec.index, (int)c->block_idx,
            (int)c->block_num);
  return pld__first_failure(&c->status, c->msg, sizeof c->msg, status, prefix,
                            fmt, ap);
}

int pld__kfail(struct pld__core *c, int status, const char *fn, const char *fmt,
               ...) {
  va_list ap;
  va_start(ap, fmt);
  int st = kfail_v(c, status, fn, fmt, ap);
  va_end(ap);
  return st;
}

int32_t pld_block_idx(pld_core k) { return k.p->block_idx; }
int32_t pld_block_num(pld_core k) { return k.p->block_num; }
pld_core_type pld_core_type_of(pld_core k) { return k.p->spec.type; }

int pld_kernel_fail(pld_core k, int status, const char *fmt, ...) {
  struct pld__core *c = k.p;
  va_list ap;
  va_start(ap, fmt);
  int st = kfail_v(c, pld__user_status(status), "pld_kernel_fail",
                   fmt ? fmt : "(no message)", ap);
  va_end(ap);
  return st;
}
