/* device/plan.c: a run's table of scalars and buffer offsets in the data
 * slot, and the tensor arguments of a call built from it (device/plan.h). */
#include "device/plan.h"

void pld__plan_table_write(const struct pld__devplan *pl, unsigned char *data,
                           const size_t *at) {
  for (int b = 0; b < pl->nbufs; b++)
    memcpy(data + pl->table_offset + (size_t)b * sizeof(size_t),
           at ? &at[b] : &pl->bufs[b].offset, sizeof(size_t));
  for (int c = 0; c < pl->ncalls; c++)
    for (int a = 0; a < pl->calls[c].argc; a++) {
      const struct pld__call_arg *ca = &pl->calls[c].args[a];
      if (ca->buf < 0 && ca->win_buf < 0)
        memcpy(data + pl->scalars_offset +
                   (size_t)ca->scalar_at * sizeof ca->scalar,
               &ca->scalar, sizeof ca->scalar);
    }
}

const pld_param pld__coll_sig_param = {"coll_sig",
                                       PLD_ARG_WINDOW,
                                       PLD_DIR_INOUT,
                                       PLD_INT32,
                                       1,
                                       {{PLD_DYN, "PLD__COLL_SIG_CELLS"}}};

pld_arg pld__call_arg_tensor(const struct pld__call_arg *ca,
                             const pld_param *pm, const struct pld__devplan *pl,
                             unsigned char *data, struct pld__fabric *f,
                             struct pld__tensor *t) {
  if (ca->buf < 0 && ca->win_buf < 0) {
    if (!data)
      return ca->scalar;
    pld_arg v;
    memcpy(&v, data + pl->scalars_offset + (size_t)ca->scalar_at * sizeof v,
           sizeof v);
    return v;
  }
  pld__tensor_init(t, "pld runtime", ca->dtype, ca->ndim, ca->shape);
  t->dir = pm->dir;
  t->name = pm->name;
  t->flags = data ? PLD__T_DEVICE : PLD__T_TRACE;
  if (ca->win_buf >= 0) {
    t->flags |= PLD__T_WINDOW;
    t->win_buf = ca->win_buf;
    t->win_offset = ca->win_offset;
    t->comm =
        &pl->comms[(size_t)ca->win_buf * (size_t)pl->nranks + (size_t)pl->rank];
    if (f)
      t->data = (unsigned char *)f->ops->local(f, ca->win_buf) + ca->win_offset;
    return pld__arg_window((pld_window){t});
  }
  if (data) {
    size_t at;
    memcpy(&at, data + pl->table_offset + (size_t)ca->buf * sizeof at,
           sizeof at);
    /* (modulo the address space: a heap of another program may lie
     * before the slot) */
    t->data = (unsigned char *)((uintptr_t)data + at);
  }
  return pld__arg_tensor((pld_tensor){t});
}
