/* comm/coll_check.c: what can be checked of a collective call without
 * its data (pld__coll_check), for a kernel's call and for the host's
 * forms while the host orchestrator is traced (the EP calls' dtypes and
 * shapes too; what their data holds is checked in comm/ep.c); and the
 * names of reduction ops and allreduce modes for messages. */
#include <string.h>

#include "comm/coll.h"
#include "pld/ep.h"

const char *pld__coll_op_name(int op) {
  static const char *const names[] = {"SUM", "MAX", "MIN", "PROD"};
  return op >= 0 && op < 4 ? names[op] : "?";
}

const char *pld__coll_mode_name(int mode) {
  static const char *const names[] = {"auto", "mesh", "two-phase", "ring"};
  return mode >= 0 && mode < 4 ? names[mode] : "?";
}

/* ---- arguments -------------------------------------------------------- */

static int reducible(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16 ||
         dt == PLD_INT32 || dt == PLD_INT16 || dt == PLD_INT8;
}

int pld__coll_overlap(const struct pld__tensor *a,
                      const struct pld__tensor *b) {
  if ((a->flags & PLD__T_WINDOW) && (b->flags & PLD__T_WINDOW))
    return a->win_buf == b->win_buf &&
           a->win_offset < b->win_offset + b->nbytes &&
           b->win_offset < a->win_offset + a->nbytes;
  return a->data && b->data &&
         pld__ranges_overlap(a->data, a->nbytes, b->data, b->nbytes);
}

/* Fails with status and the message (msg, cap); returns status. */
#define REFUSE(status, ...) (pld__catf(msg, cap, __VA_ARGS__), (status))

static int refuse_overlap(const struct pld__tensor *a, const char *ra,
                          const struct pld__tensor *b, const char *rb,
                          char *msg, size_t cap) {
  if (!a || !b || !pld__coll_overlap(a, b))
    return PLD_OK;
  char sa[160], sb[160];
  pld__describe(sa, sizeof sa, a, PLD__NO_PEER, ra);
  pld__describe(sb, sizeof sb, b, PLD__NO_PEER, rb);
  return REFUSE(PLD_ERR_ARG,
                "%s and %s share memory: the collective would read what it "
                "writes; use separate buffers",
                sa, sb);
}

/* The leading dimension of t is the domain's size n (with `multiple`, a
 * multiple of it); *row gets the elements per rank's row (block). */
static int check_rows(const struct pld__tensor *t, int32_t n, int multiple,
                      int64_t *row, char *msg, size_t cap) {
  if (multiple ? t->shape[0] % n == 0 : t->shape[0] == n) {
    *row = (int64_t)(t->nbytes / pld_dtype_size(t->dtype)) / n;
    return PLD_OK;
  }
  char ts[160], shape[128];
  pld__describe(ts, sizeof ts, t, PLD__NO_PEER, NULL);
  pld__tensor_str(shape, sizeof shape, t);
  return REFUSE(PLD_ERR_ARG,
                "%s is %s: its leading dimension must be %s%d, the ranks of "
                "its domain",
                ts, shape, multiple ? "a multiple of " : "", (int)n);
}

/* a's dtype and shape are b's. */
static int shapes_match(const struct pld__tensor *a, const char *ra,
                        const struct pld__tensor *b, char *msg, size_t cap) {
  if (a->dtype == b->dtype && a->ndim == b->ndim &&
      !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]))
    return PLD_OK;
  char as[160], bs[160], ashape[128], bshape[128];
  pld__describe(as, sizeof as, a, PLD__NO_PEER, ra);
  pld__describe(bs, sizeof bs, b, PLD__NO_PEER, NULL);
  pld__tensor_str(ashape, sizeof ashape, a);
  pld__tensor_str(bshape, sizeof bshape, b);
  return REFUSE(PLD_ERR_ARG,
                "%s is %s, %s is %s: expected the same dtype and shape", as,
                ashape, bs, bshape);
}

/* An out-of-place form's other tensor (a->src or a->dst) has the data's
 * dtype and the elements it needs (reduce-scatter's result: one row of the
 * data), and shares no memory with it. */
static int check_out_of_place(const struct pld__coll_args *a, char *msg,
                              size_t cap) {
  const struct pld__tensor *d = a->data;
  const struct pld__tensor *o = a->src ? a->src : a->dst;
  if (!o)
    return PLD_OK;
  const char *role = a->src ? "src" : "dst";
  const int64_t n = (int64_t)(d->nbytes / pld_dtype_size(d->dtype));
  const int64_t want = a->kind == PLD__COLL_REDUCE_SCATTER ? n / a->nranks : n;
  const int64_t got = (int64_t)(o->nbytes / pld_dtype_size(o->dtype));
  if (o->dtype != d->dtype || got != want) {
    char os[160], ds[160], oshape[128], dshape[128];
    pld__describe(os, sizeof os, o, PLD__NO_PEER, role);
    pld__describe(ds, sizeof ds, d, PLD__NO_PEER, NULL);
    pld__tensor_str(oshape, sizeof oshape, o);
    pld__tensor_str(dshape, sizeof dshape, d);
    return REFUSE(
        PLD_ERR_ARG, "%s is %s, %s is %s: expected %lld %s elements (%s)", os,
        oshape, ds, dshape, (long long)want, pld_dtype_name(d->dtype),
        a->kind == PLD__COLL_REDUCE_SCATTER ? "one row of the data, this rank's"
                                            : "as many as the data");
  }
  return refuse_overlap(o, role, d, NULL, msg, cap);
}

/* ---- the EP calls' shapes (pld/ep.h) ------------------------------------ */

/* "<role> 'name' is FP32[3, 4]: expected <what>": t's shape refused. */
static int refuse_shape(const struct pld__tensor *t, const char *role,
                        const char *what, char *msg, size_t cap) {
  char ts[160], shape[128];
  pld__describe(ts, sizeof ts, t, PLD__NO_PEER, role);
  pld__tensor_str(shape, sizeof shape, t);
  return REFUSE(PLD_ERR_ARG, "%s is %s: expected %s", ts, shape, what);
}

/* t is an INT32 vector of n counts. */
static int check_counts(const struct pld__tensor *t, const char *role,
                        int64_t n, const char *per, char *msg, size_t cap) {
  if (t->dtype == PLD_INT32 && t->ndim == 1 && t->shape[0] == n)
    return PLD_OK;
  char what[96];
  pld__catf(what, sizeof what, "INT32[%lld], a count per %s", (long long)n,
            per);
  return refuse_shape(t, role, what, msg, cap);
}

/* Windows a and b (roles ra and rb) share bytes of one buffer. */
static int refuse_shared(const struct pld__tensor *a, const char *ra,
                         const struct pld__tensor *b, const char *rb, char *msg,
                         size_t cap) {
  if (!pld__coll_overlap(a, b))
    return PLD_OK;
  char sa[160], sb[160];
  pld__describe(sa, sizeof sa, a, PLD__NO_PEER, ra);
  pld__describe(sb, sizeof sb, b, PLD__NO_PEER, rb);
  return REFUSE(PLD_ERR_ARG,
                "%s and %s share memory: use separate window views", sa, sb);
}

/* pld_all_to_all_packed: input's rows are target's; a count per rank. */
static int check_packed(const struct pld__coll_args *a, char *msg, size_t cap) {
  const struct pld__tensor *in = a->data, *w = a->target;
  const int64_t cols = pld__tensor_cols(in);
  if (in->dtype != w->dtype || pld__tensor_cols(w) != cols) {
    char what[96], ts[160], shape[128];
    pld__describe(ts, sizeof ts, w, PLD__NO_PEER, NULL);
    pld__tensor_str(shape, sizeof shape, w);
    pld__catf(what, sizeof what, "rows of %lld %s elements, as %s %s has",
              (long long)pld__tensor_cols(w), pld_dtype_name(w->dtype), ts,
              shape);
    return refuse_shape(in, "input", what, msg, cap);
  }
  int st =
      check_counts(a->send_counts, "send_counts", a->nranks, "rank", msg, cap);
  return st ? st
            : check_counts(a->recv_counts, "recv_counts", a->nranks, "rank",
                           msg, cap);
}

/* pld_ep_dispatch: the expert count, then each tensor's dtype and shape,
 * then windows that share bytes. */
static int check_dispatch(const struct pld__coll_args *a, char *msg,
                          size_t cap) {
  const struct pld__tensor *x = a->data, *idx = a->topk_idx, *wt = a->topk_w;
  const struct pld__tensor *rx = a->target, *meta = a->recv_meta;
  const struct pld__tensor *rw = a->recv_w;
  const int32_t n = a->nranks, experts = a->experts;
  if (experts < 1 || experts % n || experts > PLD_EP_MAX_EXPERTS)
    return REFUSE(PLD_ERR_ARG,
                  "experts is %d: expected a multiple of the domain's %d "
                  "ranks from %d to %d (PLD_EP_MAX_EXPERTS)",
                  (int)experts, (int)n, (int)n,
                  (int)(PLD_EP_MAX_EXPERTS / n * n));
  const int64_t t_rows = pld__tensor_rows(x), h = pld__tensor_cols(x);
  const int64_t rows = pld__tensor_rows(rx);
  char what[160];
  if (idx->dtype != PLD_INT32 || idx->ndim != 2 || idx->shape[0] != t_rows ||
      idx->shape[1] < 1) {
    pld__catf(what, sizeof what, "INT32[%lld, K], a row per token of x",
              (long long)t_rows);
    return refuse_shape(idx, "topk_idx", what, msg, cap);
  }
  const int64_t kk = idx->shape[1];
  if (wt->dtype != PLD_FP32 || wt->ndim != 2 || wt->shape[0] != t_rows ||
      wt->shape[1] != kk) {
    pld__catf(what, sizeof what, "FP32[%lld, %lld], as topk_idx",
              (long long)t_rows, (long long)kk);
    return refuse_shape(wt, "topk_w", what, msg, cap);
  }
  if (rx->dtype != x->dtype || pld__tensor_cols(rx) != h) {
    pld__catf(what, sizeof what, "a window [CAP, %lld] of %s, as x",
              (long long)h, pld_dtype_name(x->dtype));
    return refuse_shape(rx, "recv_x", what, msg, cap);
  }
  if (meta->dtype != PLD_INT32 || pld__tensor_cols(meta) != PLD_EP_META_COLS ||
      pld__tensor_rows(meta) != rows) {
    pld__catf(what, sizeof what, "INT32[%lld, %d], a row per row of recv_x",
              (long long)rows, PLD_EP_META_COLS);
    return refuse_shape(meta, "recv_meta", what, msg, cap);
  }
  if (rw->dtype != PLD_FP32 || (int64_t)(rw->nbytes / 4) != rows) {
    pld__catf(what, sizeof what, "FP32 of %lld elements, one per row of recv_x",
              (long long)rows);
    return refuse_shape(rw, "recv_w", what, msg, cap);
  }
  int st = check_counts(a->recv_counts, "recv_counts", experts / n,
                        "local expert", msg, cap);
  const struct pld__tensor *const w[4] = {rx, meta, rw, a->sig};
  static const char *const roles[4] = {"recv_x", "recv_meta", "recv_w", "sig"};
  static const int pairs[5][2] = {{1, 0}, {2, 0}, {2, 1}, {1, 3}, {2, 3}};
  for (int i = 0; i < 5 && !st; i++)
    st = refuse_shared(w[pairs[i][0]], roles[pairs[i][0]], w[pairs[i][1]],
                       roles[pairs[i][1]], msg, cap);
  return st;
}

static int is_float(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16;
}

/* pld_ep_combine: each tensor's dtype and shape (E: P times recv_counts'
 * length). */
static int check_combine(const struct pld__coll_args *a, char *msg,
                         size_t cap) {
  const struct pld__tensor *y = a->data, *stage = a->target;
  const struct pld__tensor *idx = a->topk_idx, *wt = a->topk_w, *out = a->out;
  const struct pld__tensor *meta = a->recv_meta, *rc = a->recv_counts;
  char what[160];
  const int64_t h = pld__tensor_cols(y);
  if (!is_float(y->dtype))
    return refuse_shape(y, "expert_out", "FP32, FP16 or BF16 rows", msg, cap);
  if (idx->dtype != PLD_INT32 || idx->ndim != 2 || idx->shape[1] < 1)
    return refuse_shape(idx, "topk_idx", "INT32[T, K]", msg, cap);
  const int64_t t_rows = idx->shape[0], kk = idx->shape[1];
  if (wt->dtype != PLD_FP32 || wt->ndim != 2 || wt->shape[0] != t_rows ||
      wt->shape[1] != kk) {
    pld__catf(what, sizeof what, "FP32[%lld, %lld], as topk_idx",
              (long long)t_rows, (long long)kk);
    return refuse_shape(wt, "topk_w", what, msg, cap);
  }
  if (out->dtype != y->dtype || pld__tensor_rows(out) != t_rows ||
      pld__tensor_cols(out) != h) {
    pld__catf(what, sizeof what,
              "%s[%lld, %lld]: a row per token of the "
              "columns and dtype of expert_out",
              pld_dtype_name(y->dtype), (long long)t_rows, (long long)h);
    return refuse_shape(out, "out", what, msg, cap);
  }
  if (stage->dtype != y->dtype || pld__tensor_cols(stage) != h ||
      pld__tensor_rows(stage) < t_rows * kk) {
    pld__catf(what, sizeof what,
              "a window [S, %lld] of %s with S >= T K = %lld (T = %lld tokens "
              "here)",
              (long long)h, pld_dtype_name(y->dtype), (long long)(t_rows * kk),
              (long long)t_rows);
    return refuse_shape(stage, "stage", what, msg, cap);
  }
  if (meta->dtype != PLD_INT32 || pld__tensor_cols(meta) != PLD_EP_META_COLS) {
    pld__catf(what, sizeof what, "INT32[R, %d], a dispatch's",
              PLD_EP_META_COLS);
    return refuse_shape(meta, "recv_meta", what, msg, cap);
  }
  const int64_t experts = rc->ndim == 1 ? rc->shape[0] * a->nranks : 0;
  if (rc->dtype != PLD_INT32 || rc->ndim != 1 || experts < 1 ||
      experts > PLD_EP_MAX_EXPERTS) {
    pld__catf(what, sizeof what,
              "INT32[L], a dispatch's count per local expert (L from 1 to "
              "%d over %d ranks: PLD_EP_MAX_EXPERTS)",
              PLD_EP_MAX_EXPERTS / a->nranks, (int)a->nranks);
    return refuse_shape(rc, "recv_counts", what, msg, cap);
  }
  return PLD_OK;
}

int pld__coll_check(const struct pld__coll_args *a, char *msg, size_t cap) {
  const int32_t n = a->nranks;
  const struct pld__tensor *sig = a->sig, *d = a->data, *t = a->target;
  const int64_t lane = PLD_SIGNAL_LANE_CELLS(n);
  /* A barrier on one block needs only its credits. */
  const int64_t need = a->kind == PLD__COLL_BARRIER
                           ? (int64_t)(a->blocks - 1) * lane + n
                           : (int64_t)a->blocks * lane;
  if (sig->dtype != PLD_INT32 || sig->ndim != 1 || sig->shape[0] < need) {
    char ws[160], ts[128], why[64];
    pld__describe(ws, sizeof ws, sig, PLD__NO_PEER, NULL);
    pld__tensor_str(ts, sizeof ts, sig);
    if (a->kind == PLD__COLL_BARRIER && a->blocks == 1)
      pld__catf(why, sizeof why, "the domain's size");
    else
      pld__catf(why, sizeof why, "%s(%d, %d)",
                a->kind == PLD__COLL_BARRIER ? "lanes of PLD_SIGNAL_CELLS"
                                             : "PLD_SIGNAL_CELLS",
                (int)n, (int)a->blocks);
    return REFUSE(PLD_ERR_ARG,
                  "%s is %s: expected INT32[n] with n >= %lld (%s)", ws, ts,
                  (long long)need, why);
  }
  if (a->kind == PLD__COLL_BARRIER)
    return PLD_OK;
  const int reducing =
      a->kind == PLD__COLL_ALLREDUCE || a->kind == PLD__COLL_REDUCE_SCATTER;
  if (reducing && (a->op < PLD_REDUCE_SUM || a->op > PLD_REDUCE_PROD))
    return REFUSE(PLD_ERR_ARG,
                  "op: expected PLD_REDUCE_SUM, _MAX, _MIN or _PROD, got %d",
                  a->op);
  if (reducing && !reducible(d->dtype)) {
    char ws[160];
    pld__describe(ws, sizeof ws, d, PLD__NO_PEER, NULL);
    return REFUSE(PLD_ERR_UNSUPPORTED,
                  "%s %s is %s: reductions take FP32, FP16, BF16, INT32, "
                  "INT16 or INT8",
                  pld__coll_op_name(a->op), ws, pld_dtype_name(d->dtype));
  }
  if ((reducing || a->kind == PLD__COLL_EP_COMBINE) && a->cube)
    return REFUSE(PLD_ERR_LEVEL,
                  "runs on vector cores (PLD_KERNEL); a cube core "
                  "(PLD_CUBE_KERNEL) does matmul and data movement only");
  if (a->kind == PLD__COLL_ALLREDUCE &&
      (a->mode < PLD_ALLREDUCE_AUTO || a->mode > PLD_ALLREDUCE_RING))
    return REFUSE(PLD_ERR_ARG,
                  "mode: expected PLD_ALLREDUCE_AUTO, _MESH, _TWO_PHASE or "
                  "_RING, got %d",
                  a->mode);
  if (a->kind == PLD__COLL_BROADCAST && (a->root < 0 || a->root >= n)) {
    char ws[160];
    pld__describe(ws, sizeof ws, d, PLD__NO_PEER, NULL);
    return REFUSE(PLD_ERR_BOUNDS,
                  "root: expected a rank of the domain of %s, [0, %d), got %d",
                  ws, (int)n, a->root);
  }
  int64_t row = 0;
  int st = PLD_OK;
  switch (a->kind) {
  case PLD__COLL_ALLGATHER:
    if ((st = check_rows(t, n, 0, &row, msg, cap)))
      return st;
    if (d->dtype != t->dtype ||
        (int64_t)(d->nbytes / pld_dtype_size(d->dtype)) != row) {
      char ss[160], ts[160], sshape[128], tshape[128];
      pld__describe(ss, sizeof ss, d, PLD__NO_PEER, "stage");
      pld__describe(ts, sizeof ts, t, PLD__NO_PEER, NULL);
      pld__tensor_str(sshape, sizeof sshape, d);
      pld__tensor_str(tshape, sizeof tshape, t);
      return REFUSE(PLD_ERR_ARG,
                    "%s is %s, %s is %s: the target holds one stage per rank "
                    "(%d rows of %lld %s elements)",
                    ss, sshape, ts, tshape, (int)n, (long long)row,
                    pld_dtype_name(t->dtype));
    }
    st = refuse_overlap(d, "stage", t, NULL, msg, cap);
    break;
  case PLD__COLL_REDUCE_SCATTER:
    st = check_rows(d, n, 0, &row, msg, cap);
    break;
  case PLD__COLL_ALL_TO_ALL_V:
    for (int i = 0; i < 2; i++) {
      const struct pld__tensor *ct = i ? a->recv_counts : a->send_counts;
      if (ct->dtype != PLD_INT32 || ct->ndim != 1 || ct->shape[0] != n) {
        char ts[160], shape[128];
        pld__describe(ts, sizeof ts, ct, PLD__NO_PEER,
                      i ? "recv_counts" : "send_counts");
        pld__tensor_str(shape, sizeof shape, ct);
        return REFUSE(PLD_ERR_ARG,
                      "%s is %s: expected INT32[%d], a count per rank", ts,
                      shape, (int)n);
      }
    }
    /* The rows are all-to-all's, blocks of them. */
    __attribute__((fallthrough));
  case PLD__COLL_ALL_TO_ALL:
    if ((st = check_rows(t, n, a->kind == PLD__COLL_ALL_TO_ALL_V, &row, msg,
                         cap)) ||
        (st = shapes_match(d, "input", t, msg, cap)))
      return st;
    st = refuse_overlap(d, "input", t, NULL, msg, cap);
    break;
  case PLD__COLL_ALL_TO_ALL_PACKED: /* the shapes: last, below */
  case PLD__COLL_EP_DISPATCH:
  case PLD__COLL_EP_COMBINE:
    st = refuse_overlap(d,
                        a->kind == PLD__COLL_EP_DISPATCH  ? "x"
                        : a->kind == PLD__COLL_EP_COMBINE ? "expert_out"
                                                          : "input",
                        t, NULL, msg, cap);
    break;
  default:
    break;
  }
  if (!st)
    st = check_out_of_place(a, msg, cap);
  if (!st)
    st = refuse_overlap(t ? t : d, NULL, sig, NULL, msg, cap);
  if (!st && (a->src || a->dst))
    st = refuse_overlap(a->src ? a->src : a->dst, a->src ? "src" : "dst", sig,
                        NULL, msg, cap);
  if (!st && a->kind == PLD__COLL_ALL_TO_ALL_PACKED)
    st = check_packed(a, msg, cap);
  if (!st && a->kind == PLD__COLL_EP_DISPATCH)
    st = check_dispatch(a, msg, cap);
  if (!st && a->kind == PLD__COLL_EP_COMBINE)
    st = check_combine(a, msg, cap);
  return st;
}
