/* comm/collective.c: the collectives that move data without reducing
 * it, pld_broadcast (and pld_broadcast_to), pld_allgather, pld_all_to_all
 * and pld_all_to_all_v, on the steps of comm/coll.h. */
#include <string.h>

#include "comm/coll.h"

/* Allgather (my local row to row me of every rank's target) and
 * all-to-all (my local row q to row me of rank q's target), on this lane's
 * part [lo, hi) of the rows. */
static int exchange(pld_core k, const char *fn, int kind, pld_tensor local,
                    pld_window target, pld_window sig) {
  struct coll cc;
  struct pld__coll_args a = {.kind = kind, .data = local.p, .target = target.p};
  const int reads = 0;
  int st =
      pld__coll_begin(&cc, k.p, fn, &a, sig, &target, 1, &local, &reads, 1);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *w = target.p;
  const size_t es = pld_dtype_size(w->dtype);
  const int gather = kind == PLD__COLL_ALLGATHER;
  const int64_t row = gather ? (int64_t)(local.p->nbytes / es)
                             : (int64_t)(w->nbytes / es) / cc.n;
  int64_t lo, hi;
  pld__coll_lane_part(&cc, row, &lo, &hi);
  /* What goes to rank q: src + q * stride. */
  const unsigned char *src =
      (const unsigned char *)local.p->data + (size_t)lo * es;
  const size_t stride = gather ? 0 : (size_t)row * es;
  const size_t part = (size_t)(hi - lo) * es;
  cc.eager = part <= PLD_COLL_EAGER_BYTES;
  const struct eager ep = {src, cc.eager ? part : 0, stride};
  if ((st = pld__coll_reserve(&cc, es, 0, hi - lo)) ||
      (st = pld__coll_start(&cc, w, 0, 0, 0, gather ? row : row * cc.n, &ep)))
    return pld__coll_finish(&cc, st);
  unsigned char *rows = (unsigned char *)w->data + (size_t)lo * es;
  for (int32_t i = 0; i < cc.n && !st; i++) {
    int32_t q = (cc.me + i) % cc.n; /* spread the pushes over the ranks */
    if (cc.eager)
      memcpy(rows + (size_t)(q * row) * es,
             q == cc.me ? src + (size_t)q * stride : pld__coll_sent(&cc, q),
             part);
    else
      st = pld__coll_write(&cc, w, q, (size_t)(cc.me * row + lo) * es,
                           src + (size_t)q * stride, part);
  }
  if (!st && !cc.eager) /* every row has landed */
    st = pld__coll_round(&cc);
  return pld__coll_finish(&cc, st);
}

/* The most bytes of a lane's part that the root of an in-place broadcast
 * writes into every peer's copy itself; a larger part is read by every
 * peer from the root's copy, so that the peers copy at once (at 2 ranks
 * the two move the same bytes). */
#define PUSH_BYTES ((size_t)64 << 10)

/* pld_broadcast, and pld_broadcast_to (dst: where every rank's copy goes,
 * a tensor of the rank, the root's too; in place, dst.p is NULL). */
static int broadcast(pld_core k, const char *fn, pld_window data,
                     pld_tensor dst, pld_window sig, int32_t root) {
  struct pld__core *c = k.p;
  struct coll cc;
  struct pld__coll_args a = {
      .kind = PLD__COLL_BROADCAST, .data = data.p, .dst = dst.p, .root = root};
  const int writes = 1;
  int st = pld__coll_begin(&cc, c, fn, &a, sig, &data, 1, dst.p ? &dst : NULL,
                           &writes, dst.p ? 1 : 0);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *w = data.p;
  const size_t es = pld_dtype_size(w->dtype);
  const int64_t n = (int64_t)(w->nbytes / es);
  int64_t lo, hi;
  pld__coll_lane_part(&cc, n, &lo, &hi);
  unsigned char *mine = (unsigned char *)w->data + (size_t)lo * es;
  /* Where the root's part goes: the data (in place; the root keeps its
   * own), or dst. */
  unsigned char *out =
      dst.p ? (unsigned char *)dst.p->data + (size_t)lo * es : mine;
  const int copy = cc.me != root || dst.p;
  const size_t part = (size_t)(hi - lo) * es;
  cc.eager = part <= PLD_COLL_EAGER_BYTES;
  /* Small: the root's part comes with its entry, and the root needs
   * nobody's, the others the root's alone (comm/coll.h: deferred). */
  cc.defer = cc.eager;
  const struct eager ep = {mine, cc.eager && cc.me == root ? part : 0, 0};
  if ((st = pld__coll_reserve(&cc, es, 0, hi - lo)) ||
      (st = pld__coll_start(&cc, w, 0, 0, root, n, &ep)))
    return pld__coll_finish(&cc, st);
  if (cc.eager) {
    if (copy)
      memcpy(out, cc.me == root ? mine : pld__coll_sent(&cc, root), part);
    return pld__coll_finish(&cc, PLD_OK);
  }
  cc.c->coll_round++; /* the data's round */
  if (!dst.p && part <= PUSH_BYTES) {
    /* In place, little data: every peer's copy is the call's since its
     * entry, so the root writes its part there with a credit behind it;
     * a peer waits for that credit alone, the root for nobody. */
    if (cc.me == root)
      st = pld__coll_push(&cc, w, (size_t)lo * es, mine, part);
    else
      st = pld__coll_await(&cc, root);
    return pld__coll_finish(&cc, st);
  }
  /* Every rank reads the root's part, and tells the root it has: the
   * root stays until everyone has read it, the others need not wait for
   * each other. */
  if (copy)
    st = pld__coll_read(&cc, w, root, (size_t)lo * es, out, part);
  if (!st)
    st = cc.me == root ? pld__coll_await_all(&cc) : pld__coll_credit(&cc, root);
  return pld__coll_finish(&cc, st);
}

int pld_broadcast(pld_core k, pld_window data, pld_window sig, int32_t root) {
  return broadcast(k, "pld_broadcast", data, (pld_tensor){NULL}, sig, root);
}

int pld_broadcast_to(pld_core k, pld_window src, pld_tensor dst, pld_window sig,
                     int32_t root) {
  if (!dst.p) /* NULL would mean in place */
    dst.p = &pld__invalid_tensor;
  return broadcast(k, "pld_broadcast_to", src, dst, sig, root);
}

int pld_allgather(pld_core k, pld_tensor stage, pld_window target,
                  pld_window sig) {
  return exchange(k, "pld_allgather", PLD__COLL_ALLGATHER, stage, target, sig);
}

int pld_all_to_all(pld_core k, pld_tensor input, pld_window target,
                   pld_window sig) {
  return exchange(k, "pld_all_to_all", PLD__COLL_ALL_TO_ALL, input, target,
                  sig);
}

int pld_all_to_all_v(pld_core k, pld_tensor input, pld_tensor send_counts,
                     pld_window target, pld_tensor recv_counts,
                     pld_window sig) {
  struct pld__core *c = k.p;
  const char *fn = "pld_all_to_all_v";
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_ALL_TO_ALL_V,
                             .data = input.p,
                             .target = target.p,
                             .send_counts = send_counts.p,
                             .recv_counts = recv_counts.p};
  const pld_tensor locals[3] = {input, send_counts, recv_counts};
  const int writes[3] = {0, 0, 1};
  int st = pld__coll_begin(&cc, c, fn, &a, sig, &target, 1, locals, writes, 3);
  if (st)
    return pld__coll_finish(&cc, st);
  const int64_t per =
      (int64_t)(target.p->nbytes / pld_dtype_size(target.p->dtype)) / cc.n;
  const struct pld__tensor *w = target.p;
  const size_t es = pld_dtype_size(w->dtype);
  /* Blocks of MAX rows of `cols` elements; lane b serves the ranks d with
   * d % C == b. */
  const int64_t max = w->shape[0] / cc.n, cols = per / max;
  const int32_t *send = send_counts.p->data;
  for (int32_t d = 0; d < cc.n && !st; d++)
    if (send[d] < 0 || send[d] > max)
      st = pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "send_counts[%d] is %d: expected 0 to %lld, the rows of "
                      "a block of target %s[%lld, ...] over %d ranks",
                      (int)d, (int)send[d], (long long)max,
                      pld_dtype_name(w->dtype), (long long)w->shape[0],
                      (int)cc.n);
  const struct eager none = {NULL, 0, 0};
  if (st || (st = pld__coll_reserve(&cc, es, 0, max * cols)) ||
      (st = pld__coll_start(&cc, w, 0, 0, 0, (int64_t)(w->nbytes / es), &none)))
    return pld__coll_finish(&cc, st);
  const unsigned char *in = (const unsigned char *)input.p->data;
  const size_t block = (size_t)(max * cols) * es;
  for (int32_t i = 0; i < cc.n && !st; i++) {
    int32_t d = (cc.me + i) % cc.n;
    if (d % cc.lanes != cc.lane)
      continue;
    st = pld__coll_write(&cc, w, d, (size_t)cc.me * block,
                         in + (size_t)d * block, (size_t)(send[d] * cols) * es);
    if (!st)
      st = pld__signal_cell(c, fn, cc.sig, d,
                            pld__coll_cell_off(&cc, COUNT(cc.n, cc.me)),
                            send[d], PLD_NOTIFY_SET);
  }
  if (!st) /* every block and count has landed */
    st = pld__coll_round(&cc);
  /* Senders to me wrote my counts in lane me % C: that lane reads them,
   * once, and clears them (the cells are zero again for the next call,
   * whose senders set them only after its entry). */
  int32_t *recv = recv_counts.p->data;
  for (int32_t q = 0; q < cc.n && !st && cc.me % cc.lanes == cc.lane; q++) {
    recv[q] = __atomic_load_n(&cc.cells[COUNT(cc.n, q)], __ATOMIC_ACQUIRE);
    cc.cells[COUNT(cc.n, q)] = 0;
  }
  return pld__coll_finish(&cc, st);
}
