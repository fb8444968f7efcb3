/* comm/barrier.c: the builtin barrier, with the self-clearing protocol. */
#include "comm/comm.h"
#include "pld/collective.h"
#include "pld/tensor.h"

int pld_barrier(pld_core k, pld_window sig) {
  struct pld__core *c = k.p;
  int st = pld__win_check(c, "pld_barrier", sig, PLD__NO_PEER);
  if (st)
    return st;
  const struct pld__comm *comm = sig.p->comm;
  int32_t me = comm->rank, n = comm->nranks;
  if (sig.p->dtype != PLD_INT32 || sig.p->ndim != 1 || sig.p->shape[0] < n) {
    char ws[128], ts[128];
    pld__describe(ws, sizeof ws, sig.p, PLD__NO_PEER, NULL);
    pld__tensor_str(ts, sizeof ts, sig.p);
    return pld__kfail(c, PLD_ERR_ARG, "pld_barrier",
                      "%s is %s: expected INT32[n] with n >= %d (the domain's "
                      "size)",
                      ws, ts, (int)n);
  }
  /* One round: cell [me] on every peer counts my arrival; I wait for every
   * peer's arrival on my cells, then take those arrivals back, so the
   * window is zero again for the next barrier.  A peer already in its next
   * barrier may have added again: the counts stay exact. */
  for (int32_t p = 0; p < n && !st; p++)
    st = pld_notify(k, sig, p, PLD_AT(me), 1, PLD_NOTIFY_ADD);
  for (int32_t p = 0; p < n && !st; p++)
    st = pld_wait(k, sig, PLD_AT(p), 1, PLD_WAIT_GE);
  for (int32_t p = 0; p < n && !st; p++)
    st = pld_notify(k, sig, me, PLD_AT(p), -1, PLD_NOTIFY_ADD);
  return st;
}
