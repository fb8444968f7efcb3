/* comm/ep.c: pld_all_to_all_packed, pld_ep_dispatch and pld_ep_combine
 * (pld/ep.h), on the steps of comm/coll.h.
 *
 * The first two learn every rank's counts in the entry (each rank sends
 * every rank the same row of counts in its slot of the signal window), so
 * that every rank holds the whole matrix: a sender takes its offsets on
 * each receiver from it, and every rank checks every receiver's capacity
 * before any row moves.  Then the rows are written and one round of
 * credits tells every receiver they have landed.  Combine exchanges the
 * dispatch's counts again, to send each expert's rows for each source rank
 * in one write. */
#include <string.h>

#include "comm/coll.h"
#include "core/alloc.h"
#include "pld/ep.h"
#include "tile/convert.h"

/* ---- checks -------------------------------------------------------------- */

/* The dtypes and shapes of the calls' tensors are pld__coll_check's
 * (comm/coll_check.c), which pld__coll_begin runs, and which the host's
 * forms run while the host orchestrator is traced; here, what the data
 * holds. */

/* Every receiver's total of rows (tot[d]) fits the cap rows of target w;
 * or every rank fails with the same line naming the first that does
 * not. */
static int check_capacity(struct coll *cc, const int64_t *tot, int64_t cap,
                          const struct pld__tensor *w, const char *what) {
  for (int32_t d = 0; d < cc->n; d++)
    if (tot[d] > cap) {
      char ws[160], shape[128];
      pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
      pld__tensor_str(shape, sizeof shape, w);
      return pld__kfail(cc->c, PLD_ERR_BOUNDS, cc->fn,
                        "rank %d would receive %lld rows (%s), more than the "
                        "%lld rows of %s %s: no row was sent",
                        (int)d, (long long)tot[d], what, (long long)cap, ws,
                        shape);
    }
  return PLD_OK;
}

/* Rank s's row of counts (send_counts, or routes per expert), which it
 * sent every rank in the call's entry. */
static const int32_t *counts_of(const struct coll *cc, int32_t s) {
  return (const int32_t *)(const void *)pld__coll_sent(cc, s);
}

/* ---- pld_all_to_all_packed ----------------------------------------------- */

int pld_all_to_all_packed(pld_core k, pld_tensor input, pld_tensor send_counts,
                          pld_window target, pld_tensor recv_counts,
                          pld_window sig) {
  struct pld__core *c = k.p;
  const char *fn = "pld_all_to_all_packed";
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_ALL_TO_ALL_PACKED,
                             .data = input.p,
                             .target = target.p,
                             .send_counts = send_counts.p,
                             .recv_counts = recv_counts.p};
  const pld_tensor locals[3] = {input, send_counts, recv_counts};
  const int writes[3] = {0, 0, 1};
  int st = pld__coll_begin(&cc, c, fn, &a, sig, &target, 1, locals, writes, 3);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *in = input.p, *w = target.p;
  const int32_t n = cc.n, me = cc.me;
  const int64_t rows = pld__tensor_rows(in), cols = pld__tensor_cols(in);
  const int64_t cap = pld__tensor_rows(w);
  const int32_t *send = send_counts.p->data;
  int64_t sum = 0;
  for (int32_t d = 0; d < n && !st; d++) {
    if (send[d] < 0)
      st = pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "send_counts[%d] is %d: expected a count >= 0", (int)d,
                      (int)send[d]);
    sum += send[d];
  }
  if (!st && sum > rows) {
    char is[160], shape[128];
    pld__describe(is, sizeof is, in, PLD__NO_PEER, "input");
    pld__tensor_str(shape, sizeof shape, in);
    st = pld__kfail(c, PLD_ERR_BOUNDS, fn,
                    "send_counts sum to %lld rows, more than the %lld rows of "
                    "%s %s",
                    (long long)sum, (long long)rows, is, shape);
  }
  const size_t es = pld_dtype_size(w->dtype), row = (size_t)cols * es;
  const struct eager ep = {(const unsigned char *)send,
                           (size_t)n * sizeof(int32_t), 0};
  cc.rows = (int32_t)cap;
  if (st || (st = pld__coll_reserve(&cc, es, 0, cols)) ||
      (st = pld__coll_start(&cc, w, 0, 0, 0, cap * cols, &ep)))
    return pld__coll_finish(&cc, st);
  int64_t tot[MAX_RANKS] = {0};
  for (int32_t d = 0; d < n; d++) {
    for (int32_t s = 0; s < n; s++)
      tot[d] += counts_of(&cc, s)[d];
  }
  if ((st = check_capacity(&cc, tot, cap, w, "the sum of every rank's count")))
    return pld__coll_finish(&cc, st);
  const unsigned char *src = (const unsigned char *)in->data;
  int64_t first[MAX_RANKS], at = 0; /* my first row for rank d */
  for (int32_t d = 0; d < n; d++) {
    first[d] = at;
    at += send[d];
  }
  for (int32_t i = 0; i < n && !st; i++) {
    const int32_t d = (me + i) % n; /* spread the pushes over the ranks */
    if (d % cc.lanes != cc.lane)
      continue;
    int64_t off = 0; /* of my rows on rank d: the ranks' before me */
    for (int32_t s = 0; s < me; s++)
      off += counts_of(&cc, s)[d];
    st = pld__coll_write(&cc, w, d, (size_t)off * row,
                         src + (size_t)first[d] * row, (size_t)send[d] * row);
  }
  if (!st) /* every row has landed */
    st = pld__coll_round(&cc);
  if (!st && me % cc.lanes == cc.lane) {
    int32_t *recv = recv_counts.p->data;
    for (int32_t s = 0; s < n; s++)
      recv[s] = counts_of(&cc, s)[me];
  }
  return pld__coll_finish(&cc, st);
}

/* ---- pld_ep_dispatch ----------------------------------------------------- */

/* cnt[e] = the routes of tokens [0, t_rows) to expert e in topk_idx (e
 * [t_rows, kk]; negative entries route nowhere).  Returns PLD_OK, or
 * PLD_ERR_BOUNDS for an entry of E or more (recorded as fn's). */
static int count_routes(struct pld__core *c, const char *fn, const int32_t *e,
                        int64_t t_rows, int64_t kk, int64_t experts,
                        int32_t *cnt) {
  memset(cnt, 0, (size_t)experts * sizeof cnt[0]);
  for (int64_t t = 0; t < t_rows; t++)
    for (int64_t j = 0; j < kk; j++) {
      const int32_t v = e[t * kk + j];
      if (v >= experts)
        return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                          "topk_idx[%lld, %lld] (token %lld, slot %lld) is "
                          "%d: expected an expert in [0, %lld), or a negative "
                          "index for none",
                          (long long)t, (long long)j, (long long)t,
                          (long long)j, (int)v, (long long)experts);
      if (v >= 0)
        cnt[v]++;
    }
  return PLD_OK;
}

/* Rows of metadata (and weights) staged on the stack per write: a write
 * per local expert and this many rows, not one per row. */
#define META_BATCH 128

/* What a dispatch walks per destination: this rank's routes (topk_idx
 * [T, K] at e, weights w), the first row on the destination of each token
 * (first[T], -1 for none) and the routes to it sorted by local expert
 * (hits[T K], t K + j each): scratch allocated before the entry. */
struct routes {
  const int32_t *e;
  const float *w;
  int64_t t_rows, kk;
  int32_t *first, *hits;
};

/* This rank's rows for rank d: each token with an expert there goes once,
 * into the first of its rows on d, runs of consecutive tokens in one
 * write; every (token, slot) of d's experts gets its metadata and weight,
 * a write per local expert and META_BATCH rows.  base[e] is the first row
 * on d of this rank's rows for d's local expert e, mine[e] how many they
 * are. */
static int dispatch_to(struct coll *cc, int32_t d, const int64_t *base,
                       const int32_t *mine, const struct routes *rt,
                       const struct pld__tensor *x,
                       const struct pld__tensor *rx,
                       const struct pld__tensor *meta,
                       const struct pld__tensor *rw, int32_t l) {
  int64_t cur[PLD_EP_MAX_EXPERTS], at[PLD_EP_MAX_EXPERTS];
  for (int32_t e = 0, sum = 0; e < l; sum += mine[e], e++) {
    cur[e] = 0;
    at[e] = sum; /* where expert e's routes start in hits */
  }
  const int64_t kk = rt->kk;
  const int32_t lo = d * l, hi = lo + l;
  /* The routes to d in (token, slot) order, sorted (stably) by local
   * expert; each token's first row: that of its lowest local expert (an
   * expert's rows come before the next's) at its lowest slot. */
  for (int64_t t = 0; t < rt->t_rows; t++) {
    const int32_t *et = rt->e + t * kk;
    int64_t first = -1;
    for (int64_t j = 0; j < kk; j++)
      if (et[j] >= lo && et[j] < hi) {
        const int32_t e = et[j] - lo;
        if (first < 0 || base[e] + cur[e] < first)
          first = base[e] + cur[e];
        rt->hits[at[e] + cur[e]++] = (int32_t)(t * kk + j);
      }
    rt->first[t] = (int32_t)first;
  }
  int st = PLD_OK;
  int32_t m[META_BATCH][PLD_EP_META_COLS];
  float w[META_BATCH];
  for (int32_t e = 0; e < l && !st; e++)
    for (int64_t i0 = 0; i0 < mine[e] && !st; i0 += META_BATCH) {
      const int64_t n = mine[e] - i0 < META_BATCH ? mine[e] - i0 : META_BATCH;
      for (int64_t i = 0; i < n; i++) {
        const int32_t h = rt->hits[at[e] + i0 + i];
        const int32_t t = h / (int32_t)kk;
        m[i][0] = cc->me;
        m[i][1] = t;
        m[i][2] = h % (int32_t)kk;
        m[i][3] = rt->first[t];
        w[i] = rt->w[h];
      }
      st = pld__coll_write(cc, meta, d, (size_t)(base[e] + i0) * sizeof m[0], m,
                           (size_t)n * sizeof m[0]);
      if (!st)
        st = pld__coll_write(cc, rw, d, (size_t)(base[e] + i0) * sizeof w[0], w,
                             (size_t)n * sizeof w[0]);
    }
  /* The tokens' data: a run of consecutive tokens whose first rows are
   * consecutive too travels in one write. */
  const size_t row = pld__tensor_stride(x);
  for (int64_t t = 0; t < rt->t_rows && !st; t++) {
    if (rt->first[t] < 0)
      continue;
    int64_t n = 1;
    while (t + n < rt->t_rows && rt->first[t + n] == rt->first[t] + n)
      n++;
    st = pld__coll_write(cc, rx, d, (size_t)rt->first[t] * row,
                         (const unsigned char *)x->data + (size_t)t * row,
                         (size_t)n * row);
    t += n - 1;
  }
  return st;
}

int pld_ep_dispatch(pld_core k, pld_tensor x, pld_tensor topk_idx,
                    pld_tensor topk_w, int32_t experts, pld_window recv_x,
                    pld_window recv_meta, pld_window recv_w,
                    pld_tensor recv_counts, pld_window sig) {
  struct pld__core *c = k.p;
  const char *fn = "pld_ep_dispatch";
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_EP_DISPATCH,
                             .data = x.p,
                             .target = recv_x.p,
                             .recv_counts = recv_counts.p,
                             .topk_idx = topk_idx.p,
                             .topk_w = topk_w.p,
                             .recv_meta = recv_meta.p,
                             .recv_w = recv_w.p,
                             .experts = experts};
  const pld_window windows[3] = {recv_x, recv_meta, recv_w};
  const pld_tensor locals[4] = {x, topk_idx, topk_w, recv_counts};
  const int writes[4] = {0, 0, 0, 1};
  int st = pld__coll_begin(&cc, c, fn, &a, sig, windows, 3, locals, writes, 4);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *rx = recv_x.p, *meta = recv_meta.p, *rw = recv_w.p;
  const struct pld__tensor *idx = topk_idx.p;
  int32_t cnt[PLD_EP_MAX_EXPERTS];
  if ((st = count_routes(c, fn, idx->data, idx->shape[0], idx->shape[1],
                         experts, cnt)))
    return pld__coll_finish(&cc, st);
  const int32_t n = cc.n, me = cc.me, l = experts / n;
  const int64_t cap = pld__tensor_rows(rx), h = pld__tensor_cols(rx);
  const size_t es = pld_dtype_size(rx->dtype);
  struct routes rt = {idx->data,     topk_w.p->data, idx->shape[0],
                      idx->shape[1], NULL,           NULL};
  /* The scratch before the entry: a rank short of memory fails alone,
   * before any rank moves a row. */
  const size_t routes = (size_t)(rt.t_rows * rt.kk);
  rt.first = pld__malloc((routes + (size_t)rt.t_rows + 1) * sizeof(int32_t));
  if (!rt.first) {
    st = pld__kfail(c, PLD_ERR_NOMEM, fn,
                    "no memory for the scratch of %lld routes",
                    (long long)routes);
    goto finish;
  }
  rt.hits = rt.first + rt.t_rows;
  const struct eager ep = {(const unsigned char *)cnt,
                           (size_t)experts * sizeof(int32_t), 0};
  cc.rows = experts;
  if ((st = pld__coll_reserve(&cc, es, 0, h)) ||
      (st = pld__coll_start(&cc, rx, 0, 0, 0, cap * h, &ep)))
    goto free_scratch;
  int64_t tot[MAX_RANKS] = {0};
  for (int32_t d = 0; d < n; d++) {
    for (int32_t s = 0; s < n; s++)
      for (int32_t e = d * l; e < (d + 1) * l; e++)
        tot[d] += counts_of(&cc, s)[e];
  }
  if ((st = check_capacity(&cc, tot, cap, rx,
                           "tokens times their slots choosing its experts")))
    goto free_scratch;
  for (int32_t i = 0; i < n && !st; i++) {
    const int32_t d = (me + i) % n; /* spread the pushes over the ranks */
    if (d % cc.lanes != cc.lane)
      continue;
    /* Rows on d: its expert 0's (every rank's), then expert 1's, ...;
     * within an expert, rank 0's rows first. */
    int64_t base[PLD_EP_MAX_EXPERTS], at = 0;
    for (int32_t e = 0; e < l; e++) {
      base[e] = at;
      for (int32_t s = 0; s < n; s++) {
        if (s == me)
          base[e] = at;
        at += counts_of(&cc, s)[d * l + e];
      }
    }
    /* What goes to d is one transfer for the timing model, as the rows
     * of one pld_remote_store_rows are (core/trace.h). */
    pld__obs_group_begin();
    st = dispatch_to(&cc, d, base, cnt + d * l, &rt, x.p, rx, meta, rw, l);
    pld__obs_group_end();
  }
  if (!st) /* every row has landed */
    st = pld__coll_round(&cc);
  if (!st && me % cc.lanes == cc.lane) {
    /* Each token's data into its other rows here, in row order: a first
     * row comes before the others of its token and is never written. */
    const int32_t *mr = meta->data;
    const size_t row = (size_t)h * es;
    for (int64_t r = 0; r < tot[me] && !st; r++) {
      const int64_t from = mr[r * PLD_EP_META_COLS + 3];
      if (from < 0 || from > r)
        st = pld__kfail(c, PLD_ERR_ARG, fn,
                        "recv_meta[%lld, 3] is %lld: expected a row from 0 "
                        "to %lld (was recv_meta written during the call?)",
                        (long long)r, (long long)from, (long long)r);
      else if (from != r)
        st = pld__coll_write(
            &cc, rx, me, (size_t)r * row,
            (const unsigned char *)rx->data + (size_t)from * row, row);
    }
    int32_t *recv = recv_counts.p->data;
    for (int32_t e = 0; e < l && !st; e++) {
      int64_t got = 0;
      for (int32_t s = 0; s < n; s++)
        got += counts_of(&cc, s)[me * l + e];
      recv[e] = (int32_t)got;
    }
  }
free_scratch:
  pld__free(rt.first);
finish:
  return pld__coll_finish(&cc, st);
}

/* ---- pld_ep_combine ------------------------------------------------------ */

/* The checks of a combine before its entry on what the data holds: the
 * rows of the dispatch, and topk_idx's entries, counted per expert into
 * cnt[E] (E = P times recv_counts' length). */
static int combine_check(struct coll *cc, const struct pld__tensor *y,
                         const struct pld__tensor *meta,
                         const struct pld__tensor *rc,
                         const struct pld__tensor *idx, int32_t *cnt) {
  struct pld__core *c = cc->c;
  const char *fn = cc->fn;
  const int64_t experts = rc->shape[0] * cc->n;
  const int32_t *cn = rc->data;
  int64_t sum = 0;
  for (int64_t e = 0; e < rc->shape[0]; e++) {
    if (cn[e] < 0)
      return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                        "recv_counts[%lld] is %d: expected a count >= 0",
                        (long long)e, (int)cn[e]);
    sum += cn[e];
  }
  if (sum > pld__tensor_rows(y) || sum > pld__tensor_rows(meta))
    return pld__kfail(c, PLD_ERR_BOUNDS, fn,
                      "recv_counts sum to %lld rows, more than expert_out's "
                      "%lld or recv_meta's %lld rows",
                      (long long)sum, (long long)pld__tensor_rows(y),
                      (long long)pld__tensor_rows(meta));
  return count_routes(c, fn, idx->data, idx->shape[0], idx->shape[1], experts,
                      cnt);
}

/* This rank's rows are the dispatch's: for each local expert e, each rank
 * s routed as many rows to it as recv_counts[e] sums, and recv_meta names
 * s in each of them.  (A combine given another dispatch's arguments would
 * send rows where they do not belong.) */
static int combine_agrees(struct coll *cc, const struct pld__tensor *rc,
                          const struct pld__tensor *meta, int32_t l) {
  const int32_t *cn = rc->data, *m = meta->data;
  int64_t r = 0;
  for (int32_t e = 0; e < l; e++) {
    int64_t routed = 0;
    for (int32_t s = 0; s < cc->n; s++) {
      const int32_t n = counts_of(cc, s)[cc->me * l + e];
      for (int64_t i = 0; i < n && routed + i < cn[e]; i++)
        if (m[(r + i) * PLD_EP_META_COLS] != s)
          return pld__kfail(cc->c, PLD_ERR_ARG, cc->fn,
                            "recv_meta[%lld, 0] is %d: expected rank %d, "
                            "whose topk_idx routes it to local expert %d "
                            "(pass the dispatch's recv_meta, recv_counts and "
                            "topk_idx)",
                            (long long)(r + i),
                            (int)m[(r + i) * PLD_EP_META_COLS], (int)s, (int)e);
      r += n;
      routed += n;
    }
    if (routed != cn[e])
      return pld__kfail(cc->c, PLD_ERR_ARG, cc->fn,
                        "recv_counts[%d] is %d, but the ranks' topk_idx "
                        "route %lld rows to local expert %d (pass the "
                        "dispatch's recv_counts and topk_idx)",
                        (int)e, (int)cn[e], (long long)routed, (int)e);
  }
  return PLD_OK;
}

/* Where a combine reads expert g's rows for this rank's routes to it, in
 * (token, slot) order: at[g], the first of them, in this rank's stage, in
 * its own expert_out (its own experts: rows for its own routes are never
 * copied), or in the owner's expert_out read in place (a pulling owner:
 * see pulls). */
struct combine_rows {
  const unsigned char *at[PLD_EP_MAX_EXPERTS];
};

/* What a combine's entry carries after the counts per expert, when they
 * leave room for it (E + VIEW_WORDS <= PLD_EP_MAX_EXPERTS): the rank's
 * expert_out as a window view of the call's domain (buffer, view offset,
 * rows), or a buffer of -1. */
enum { V_BUF, V_OFF_LO, V_OFF_HI, V_ROWS_LO, V_ROWS_HI, VIEW_WORDS };

static int64_t word_pair(const int32_t *w, int lo) {
  return (int64_t)((uint64_t)(uint32_t)w[lo] | (uint64_t)(uint32_t)w[lo + 1]
                                                   << 32);
}

static void view_words(int32_t *w, const struct coll *cc,
                       const struct pld__tensor *y) {
  const int window = (y->flags & PLD__T_WINDOW) && !y->seg &&
                     pld__coll_same_domain(y->comm, cc->comm);
  const uint64_t off = window ? y->win_offset : 0;
  const uint64_t rows = (uint64_t)pld__tensor_rows(y);
  w[V_BUF] = window ? y->win_buf : -1;
  w[V_OFF_LO] = (int32_t)(uint32_t)off;
  w[V_OFF_HI] = (int32_t)(uint32_t)(off >> 32);
  w[V_ROWS_LO] = (int32_t)(uint32_t)rows;
  w[V_ROWS_HI] = (int32_t)(uint32_t)(rows >> 32);
}

/* Whether rank q (not this rank) and this rank read each other's rows of
 * expert_out in place rather than write them into each other's stage:
 * both pass the same window view of the call's domain as expert_out,
 * large enough on each for every row routed to its experts, and the
 * fabric shows each one's copy to the other (comm.h: the same seen from
 * either side).  Both ranks reach the same answer from what the entry
 * carried.  Reading in place moves each row once, where writing it into
 * the stage moves it twice (written there, then read). */
static int pulls(struct coll *cc, const struct pld__tensor *y, int32_t q,
                 int32_t experts, int32_t l) {
  if (experts + VIEW_WORDS > PLD_EP_MAX_EXPERTS)
    return 0;
  const int32_t *a = counts_of(cc, cc->me) + experts,
                *b = counts_of(cc, q) + experts;
  if (a[V_BUF] < 0 || memcmp(a, b, V_ROWS_LO * sizeof *a))
    return 0;
  const int32_t who[2] = {cc->me, q};
  for (int i = 0; i < 2; i++) {
    int64_t routed = 0; /* rows routed to who[i]'s experts */
    for (int32_t s = 0; s < cc->n; s++)
      for (int32_t g = who[i] * l; g < who[i] * l + l; g++)
        routed += counts_of(cc, s)[g];
    if (routed > word_pair(i ? b : a, V_ROWS_LO))
      return 0;
  }
  return pld__coll_view(cc, y, q, 0, 0) != NULL;
}

/* Rank o's rows [base, base + rows) of expert_out y (the same view on o
 * as here: pulls), read in place: *at the first of them.  The lane's
 * columns [h0, h1) of them are checked by the race detector and recorded
 * as one transfer for the timing model, as written rows are. */
static int pull_rows(struct coll *cc, const struct pld__tensor *y, int32_t o,
                     int64_t base, int32_t rows, int64_t h0, int64_t h1,
                     const unsigned char **at) {
  const size_t es = pld_dtype_size(y->dtype);
  const size_t row = (size_t)pld__tensor_cols(y) * es;
  const size_t part = (size_t)(h1 - h0) * es;
  *at = pld__coll_view(cc, y, o, (size_t)base * row, 0);
  pld__obs_group_begin();
  if (part == row)
    pld__coll_view(cc, y, o, (size_t)base * row, (size_t)rows * row);
  for (int32_t i = 0; i < rows && part && part < row && !cc->c->status; i++)
    pld__coll_view(cc, y, o, (size_t)(base + i) * row + (size_t)h0 * es, part);
  pld__obs_group_end();
  return cc->c->status;
}

/* out[t], columns [h0, h1), for every token t: the FP32 weighted sum over
 * its slots in order, from the rows cr names (from[K] of scratch: the row
 * of each slot of a token); group columns at a time in the accumulator
 * tile. */
static void combine_reduce(struct coll *cc, const struct pld__tensor *idx,
                           const struct pld__tensor *wt,
                           const struct combine_rows *cr,
                           const struct pld__tensor *out,
                           const unsigned char **from, int64_t h0, int64_t h1) {
  const int64_t t_rows = idx->shape[0], kk = idx->shape[1];
  const int64_t h = pld__tensor_cols(out);
  const pld_dtype dt = out->dtype;
  const size_t es = pld_dtype_size(dt);
  const int32_t *e = idx->data;
  const float *w = wt->data;
  float *acc = (float *)(void *)cc->acc->data;
  int64_t cur[PLD_EP_MAX_EXPERTS] = {0};
  for (int64_t t = 0; t < t_rows; t++) {
    for (int64_t j = 0; j < kk; j++) {
      const int32_t g = e[t * kk + j];
      from[j] = g < 0 ? NULL : cr->at[g] + (size_t)cur[g]++ * (size_t)h * es;
    }
    for (int64_t g = h0; g < h1; g += (int64_t)cc->group) {
      const size_t len =
          (size_t)(h1 - g) < cc->group ? (size_t)(h1 - g) : cc->group;
      memset(acc, 0, len * sizeof(float));
      for (int64_t j = 0; j < kk; j++) {
        if (!from[j])
          continue;
        const float wj = w[t * kk + j];
        /* For the timing model, a multiply-add of the row into the
         * accumulator (Ascend C's Axpy): one elementwise operation
         * through the row and the accumulator, read and written. */
        pld__obs_work(PLD__TC_VECTOR,
                      (int64_t)(len * (es + 2 * sizeof(float))));
        const unsigned char *y = from[j] + (size_t)g * es;
        for (size_t i = 0; i < len; i += PLD__CHUNK) {
          const size_t m = len - i < PLD__CHUNK ? len - i : PLD__CHUNK;
          float wide[PLD__CHUNK];
          pld__load_f32(dt, wide, y + i * es, m);
          /* The product rounded to FP32, then the sum, never fused into
           * one rounding (an FMA): GCC contracts nothing in ISO C11 (the
           * project's -std=c11), and clang only within one expression. */
          for (size_t q = 0; q < m; q++) {
            const float p = wj * wide[q];
            acc[i + q] = acc[i + q] + p;
          }
        }
      }
      pld__store_f32(dt,
                     (unsigned char *)out->data +
                         ((size_t)t * (size_t)h + (size_t)g) * es,
                     acc, len);
    }
  }
}

int pld_ep_combine(pld_core k, pld_tensor expert_out, pld_tensor recv_meta,
                   pld_tensor recv_counts, pld_tensor topk_idx,
                   pld_tensor topk_w, pld_window stage, pld_tensor out,
                   pld_window sig) {
  struct pld__core *c = k.p;
  const char *fn = "pld_ep_combine";
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_EP_COMBINE,
                             .data = expert_out.p,
                             .target = stage.p,
                             .recv_counts = recv_counts.p,
                             .topk_idx = topk_idx.p,
                             .topk_w = topk_w.p,
                             .recv_meta = recv_meta.p,
                             .out = out.p};
  const pld_tensor locals[6] = {expert_out, recv_meta, recv_counts,
                                topk_idx,   topk_w,    out};
  const int writes[6] = {0, 0, 0, 0, 0, 1};
  int st = pld__coll_begin(&cc, c, fn, &a, sig, &stage, 1, locals, writes, 6);
  if (st)
    return pld__coll_finish(&cc, st);
  const struct pld__tensor *y = expert_out.p, *sw = stage.p, *idx = topk_idx.p;
  int32_t cnt[PLD_EP_MAX_EXPERTS];
  if ((st = combine_check(&cc, y, recv_meta.p, recv_counts.p, idx, cnt)))
    return pld__coll_finish(&cc, st);
  const int32_t n = cc.n, me = cc.me, l = (int32_t)recv_counts.p->shape[0];
  const int64_t h = pld__tensor_cols(y), kk = idx->shape[1];
  const size_t es = pld_dtype_size(y->dtype);
  int64_t h0, h1;
  pld__coll_lane_part(&cc, h, &h0, &h1);
  /* The scratch before the entry (a rank short of memory fails alone). */
  const unsigned char **from = pld__malloc((size_t)kk * sizeof *from);
  if (!from) {
    st = pld__kfail(c, PLD_ERR_NOMEM, fn, "no memory for %lld slots",
                    (long long)kk);
    goto finish;
  }
  /* The entry: the counts per expert, then (where they leave room) where
   * expert_out lies (pulls). */
  const int32_t experts = l * n;
  int32_t words = experts;
  if (experts + VIEW_WORDS <= PLD_EP_MAX_EXPERTS) {
    view_words(cnt + experts, &cc, y);
    words += VIEW_WORDS;
  }
  const struct eager ep = {(const unsigned char *)cnt,
                           (size_t)words * sizeof(int32_t), 0};
  /* Ranks compare K (in D_ROWS) and E (as the root): both shape the
   * stage. */
  cc.rows = (int32_t)kk;
  const int64_t count = pld__tensor_rows(sw) * pld__tensor_cols(sw);
  if ((st = pld__coll_reserve(&cc, es, 1, h1 - h0)) ||
      (st = pld__coll_start(&cc, sw, 0, 0, experts, count, &ep)) ||
      (st = combine_agrees(&cc, recv_counts.p, recv_meta.p, l)))
    goto free_rows;
  /* The ranks that read this rank's rows in place and whose rows this rank
   * reads in place (pull[q]); the others (push[q]) get them written. */
  unsigned char pull[MAX_RANKS], push[MAX_RANKS];
  int any_push = 0, any_pull = 0;
  for (int32_t q = 0; q < n; q++) {
    pull[q] = q != me && pulls(&cc, y, q, experts, l);
    push[q] = q != me && !pull[q];
    any_pull |= pull[q];
    any_push |= push[q];
  }
  /* This lane's columns of the rows of each local expert e for each
   * pushed rank s (rows of expert_out in dispatch order: experts, then
   * ranks) go to s's stage after its rows for the experts before: one
   * write each when the lane has whole rows.  This rank's own rows stay
   * where they are (cr.at of its experts). */
  struct combine_rows cr;
  const size_t row = (size_t)h * es, part = (size_t)(h1 - h0) * es;
  const unsigned char *src = (const unsigned char *)y->data + (size_t)h0 * es;
  int64_t r = 0;
  for (int32_t e = 0; e < l && !st; e++)
    for (int32_t s = 0; s < n && !st; s++) {
      const int32_t g = me * l + e, rs = counts_of(&cc, s)[g];
      if (s == me)
        cr.at[g] = (const unsigned char *)y->data + (size_t)r * row;
      if (!push[s]) {
        r += rs;
        continue;
      }
      int64_t to = 0; /* s's rows for the experts before g */
      for (int32_t g2 = 0; g2 < g; g2++)
        to += counts_of(&cc, s)[g2];
      pld__obs_group_begin(); /* the rows to s: one transfer, as above */
      if (part == row)
        st = pld__coll_write(&cc, sw, s, (size_t)to * row,
                             src + (size_t)r * row, (size_t)rs * row);
      for (int32_t i = 0; i < rs && !st && part && part < row; i++)
        st = pld__coll_write(&cc, sw, s,
                             (size_t)(to + i) * row + (size_t)h0 * es,
                             src + (size_t)(r + i) * row, part);
      pld__obs_group_end();
      r += rs;
    }
  if (!st && any_push) /* every pushed row has landed */
    st = pld__coll_round_with(&cc, push);
  /* Where this rank's rows are for the others' experts: in its stage, or
   * in the pulled owner's expert_out, after the rows of the owner's
   * experts before g and of the ranks before this one for g. */
  int64_t at = 0;
  for (int32_t g = 0; g < experts && !st; g++) {
    const int32_t o = g / l, mine = counts_of(&cc, me)[g];
    if (o != me && !pull[o])
      cr.at[g] = (const unsigned char *)sw->data + (size_t)at * row;
    at += mine;
    if (o == me || !pull[o] || !mine)
      continue;
    int64_t base = 0;
    for (int32_t s = 0; s < n; s++) {
      for (int32_t g2 = o * l; g2 < g; g2++)
        base += counts_of(&cc, s)[g2];
      if (s < me)
        base += counts_of(&cc, s)[g];
    }
    st = pull_rows(&cc, y, o, base, mine, h0, h1, &cr.at[g]);
  }
  if (!st)
    combine_reduce(&cc, idx, topk_w.p, &cr, out.p, from, h0, h1);
  if (!st && any_pull) /* the pulling ranks have read this rank's rows */
    st = pld__coll_round_with(&cc, pull);
free_rows:
  pld__free(from);
finish:
  return pld__coll_finish(&cc, st);
}
