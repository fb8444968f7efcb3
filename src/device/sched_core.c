/* device/sched_core.c: a device's simulated cores as the scheduler
 * (device/sched.c) sets them up and publishes their blocks for the
 * host's watch. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/trace.h"
#include "device/sched_state.h"

/* Publishes that core c starts its block now (for the host's kernel time
 * limit, deadlock report and crash report).  Returns its slot, or NULL
 * without a watch. */
struct pld__coreslot *pld__sched_slot_begin(struct pld__sched *s,
                                            const struct pld__core *c) {
  if (!s->env)
    return NULL;
  struct pld__coreslot *slot = &s->env->watch->slots[c->slot];
  pld__slot_write_begin(slot);
  pld__slot_set_block(slot, (int32_t)c->spec.type, c->spec.index, c->block_idx,
                      c->block_num, c->kernel);
  atomic_store_explicit(&slot->since_ns, pld__now_ns(), memory_order_relaxed);
  atomic_store_explicit(&slot->state, PLD__CORE_RUNNING, memory_order_relaxed);
  pld__slot_write_end(slot);
  return slot;
}

/* lane = the core type's name and index ("AIV3"), without stdio: a
 * device's first core is set up on its first run's way. */
static void lane_name(char lane[16], const char *type, int index) {
  char digits[12];
  int n = 0;
  do
    digits[n++] = (char)('0' + index % 10);
  while ((index /= 10) > 0 && n < (int)sizeof digits);
  size_t at = strlen(type);
  memcpy(lane, type, at);
  while (n > 0)
    lane[at++] = digits[--n];
  lane[at] = '\0';
}

/* Called with mu held: sets up the next core of ct (tile memory, wait
 * slot, trace lane).  Returns PLD_OK or PLD_ERR_NOMEM (message set). */
int pld__sched_core_setup(struct pld__sched *s, struct coretype *ct,
                          void (*on_wait)(struct pld__core *, int)) {
  /* The cores of a type are allocated with its first: a device whose
   * kernels use one type never maps the other's. */
  if (!ct->cores &&
      !(ct->cores = pld__calloc((size_t)ct->max, sizeof *ct->cores)))
    return pld__fail(PLD_ERR_NOMEM, "pld runtime: out of memory (cores)");
  struct simcore *sc = &ct->cores[ct->ncores];
  struct pld__core_spec spec = ct->spec;
  spec.index = ct->ncores;
  int st = pld__core_init(&sc->core, &spec);
  if (st)
    return st;
  /* Wait slots: vector cores first, then cube cores. */
  sc->core.env = s->env;
  sc->core.slot = spec.type == PLD_CORE_VECTOR
                      ? spec.index
                      : s->types[PLD_CORE_VECTOR].max + spec.index;
  sc->core.on_wait = on_wait;
  sc->core.sched = s;
  const char *type_name = pld__core_type_name(spec.type);
  lane_name(sc->lane, type_name, spec.index);
  sc->tbuf = s->env && s->env->trace
                 ? pld__trace_tbuf(s->env->trace, 1 + sc->core.slot)
                 : NULL;
  if (sc->tbuf)
    snprintf(sc->tbuf->name, sizeof sc->tbuf->name, "%s core %d", type_name,
             spec.index);
  sc->next_free = ct->free_core;
  ct->free_core = ct->ncores++;
  return PLD_OK;
}

const struct pld__core *pld__sched_slot_core(const struct pld__sched *s,
                                             int slot) {
  const struct coretype *ct = &s->types[PLD_CORE_VECTOR];
  if (slot >= ct->max) {
    slot -= ct->max;
    ct = &s->types[PLD_CORE_CUBE];
  }
  return slot >= 0 && slot < ct->ncores && ct->cores ? &ct->cores[slot].core
                                                     : NULL;
}
