/* comm/window.c: comm contexts and the checks every remote access makes. */
#include "comm/comm.h"

#include "core/error.h"

pld_comm pld_window_comm(pld_window w) {
  pld_comm c = {w.p ? w.p->comm : NULL};
  return c;
}

int32_t pld_rank(pld_core k, pld_comm c) {
  if (!c.p) {
    pld__kfail(k.p, PLD_ERR_ARG, "pld_rank",
               "comm: expected the context of a window, got none");
    return 0;
  }
  return c.p->rank;
}

int32_t pld_nranks(pld_core k, pld_comm c) {
  if (!c.p) {
    pld__kfail(k.p, PLD_ERR_ARG, "pld_nranks",
               "comm: expected the context of a window, got none");
    return 0;
  }
  return c.p->nranks;
}

size_t pld__describe(char *buf, size_t cap, const struct pld__tensor *t,
                     int32_t peer, const char *role) {
  const int window = (t->flags & PLD__T_WINDOW) != 0;
  /* Views the host made have no name yet (names come from parameters):
   * their buffer names them. */
  if (!t->name)
    return window ? pld__catf(buf, cap, "%s%swindow buffer #%d%s",
                              role ? role : "", role ? " (" : "", t->win_buf,
                              role ? ")" : "")
                  : pld__catf(buf, cap, "%s", role ? role : "tensor");
  if (!window || role)
    return pld__catf(buf, cap, "%s '%s'", role ? role : "tensor", t->name);
  size_t n =
      pld__catf(buf, cap, "window '%s' (buffer #%d)", t->name, t->win_buf);
  if (peer != PLD__NO_PEER)
    n += pld__catf(buf + n, cap - n, " of peer %d", (int)peer);
  return n;
}

int pld__win_check(struct pld__core *c, const char *fn, pld_window w,
                   int32_t peer) {
  if (c->status)
    return c->status;
  if (!w.p || !(w.p->flags & PLD__T_WINDOW) || !w.p->comm)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "expected a window tensor with a comm context, got %s",
                      !w.p ? "NULL" : "a plain tensor (peers cannot reach it)");
  if (!c->env || !c->env->fabric)
    return pld__kfail(c, PLD_ERR_STATE, fn, "no fabric on this device");
  if (peer != PLD__NO_PEER && (peer < 0 || peer >= w.p->comm->nranks)) {
    char ws[128];
    pld__describe(ws, sizeof ws, w.p, PLD__NO_PEER, NULL);
    return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "%s: peer %d outside its domain of %d rank%s (peers are "
                      "0 to %d)",
                      ws, (int)peer, w.p->comm->nranks,
                      w.p->comm->nranks == 1 ? "" : "s", w.p->comm->nranks - 1);
  }
  return PLD_OK;
}

int pld__region_check(struct pld__core *c, const char *fn,
                      const struct pld__tensor *t, int32_t peer,
                      const char *role, int64_t row, int64_t col, int64_t rows,
                      int64_t cols) {
  int64_t trows = pld__tensor_rows(t), tcols = pld__tensor_cols(t);
  if (rows <= 0 || cols <= 0 || row < 0 || col < 0 || row > trows - rows ||
      col > tcols - cols) {
    char ts[128], what[160];
    pld__tensor_str(ts, sizeof ts, t);
    pld__describe(what, sizeof what, t, peer, role);
    return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "%s: rows [%lld, %lld) cols [%lld, %lld) outside %s "
                      "(a matrix of %lld x %lld)",
                      what, (long long)row, pld__region_end(row, rows),
                      (long long)col, pld__region_end(col, cols), ts,
                      (long long)trows, (long long)tcols);
  }
  return PLD_OK;
}
