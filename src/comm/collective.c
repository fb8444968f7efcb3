/* comm/collective.c: the builtin barrier and collectives, built from the
 * comm layer's primitives alone (credit signals, waits, fabric reads and
 * writes), so that every fabric carries them.
 *
 * The signal window is cut into lanes, one per block of the kernel, of
 * PLD_SIGNAL_LANE_CELLS(P) INT32 cells each (P: the domain's size):
 *
 *   [0, P)        credits: cell s counts what rank s signalled this rank
 *                 (added to only; each call takes back what it received);
 *   [P, 2P)       all-to-all-v row counts: cell s is set by rank s;
 *   2P            the number of calls this rank made on the lane;
 *   [2P+1, 2P+4)  zero;
 *   2P+4 on       a slot per rank s and call parity, written by rank s:
 *                 its call's descriptor, then up to PLD_COLL_EAGER_BYTES
 *                 of its data for this rank (small calls).
 *
 * A call: check the arguments locally; the entry: send every rank (this
 * one too) the call's descriptor, with the data it needs from this rank
 * if the call is small, and a credit behind it; wait for every credit;
 * compare every rank's descriptor with this one (PLD_ERR_MISMATCH); the
 * algorithm, whose synchronisations are credits too (a small call has
 * what it needs already, and none); the epilogue, which takes back every
 * credit the call waited for, so the lane is zero again.  A fast rank can
 * only be one call ahead (it needs everyone's credits to finish a call,
 * and they are sent when a rank has done with its previous call), so its
 * credits for the next call wait in the cells for that call, and what it
 * sends for the next call goes in the other slot. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "pld/collective.h"
#include "tile/convert.h"
#include "tile/tile.h"

/* The most ranks a domain has: the platform's device ids. */
#define MAX_RANKS 128

/* Cells of a lane (see the top of this file). */
#define CREDIT(s) (s)
#define COUNT(n, s) ((n) + (s))
#define CALLS(n) (2 * (n))
#define SLOT(n, s, parity) (2 * (n) + 4 + (2 * (s) + (parity)) * SLOT_CELLS)

/* Descriptor words: what a call is and the memory it works on, so that
 * ranks can compare calls (every word but D_GROUP must be equal), and the
 * call's number last.  D_GROUP is what the rank's tile memory lets it
 * reduce at a time: every rank takes the least. */
enum {
  D_WHAT,     /* collective, op, dtype, mode, blocks */
  D_COUNT_LO, /* element count, and the root */
  D_COUNT_HI,
  D_ROWS,     /* all-to-all-v: the target's leading dimension */
  D_DATA_BUF, /* the window the call works on: buffer, view offset */
  D_DATA_LO,
  D_DATA_HI,
  D_SIG_BUF, /* the signal window: buffer, view offset */
  D_SIG_LO,
  D_SIG_HI,
  D_GROUP,
  D_CALL,
  D_WORDS
};
_Static_assert(D_WORDS == PLD_COLL_DESC_CELLS, "pld/collective.h says so");

#define SLOT_CELLS (D_WORDS + PLD_COLL_EAGER_BYTES / 4)
_Static_assert(SLOT(1, 1, 0) == PLD_SIGNAL_LANE_CELLS(1) &&
                   SLOT(64, 64, 0) == PLD_SIGNAL_LANE_CELLS(64),
               "a lane holds the slots of every rank");

/* A call in progress on one lane. */
struct coll {
  struct pld__core *c;
  const char *fn;
  int kind;
  const struct pld__tensor *sig;
  struct pld__fabric *f;
  const struct pld__comm *comm;
  int32_t me, n;
  int32_t lane, lanes;
  size_t base;    /* bytes into the signal's buffer of the lane's cell 0 */
  int32_t *cells; /* the lane's cells in this rank's copy */
  int32_t desc[D_WORDS];
  int32_t parity; /* of the call's number: the slots it uses */
  /* A small call: every rank's part for this rank came in its slot; it
   * holds the rank's bytes from byte `eager_off` of the call's window. */
  int eager;
  size_t eager_off;
  /* Tile memory of the call: a staging tile (bytes of the data) and, for
   * reductions, an accumulator (FP32 or INT32, `group` elements). */
  pld_tile *stage, *acc;
  size_t group;
  /* Its span in the trace (core/trace.h), when observed. */
  struct pld__tev ev;
  int observed;
  /* Credits from each rank this call waited for: the first n used, and
   * zeroed (last in the struct, so that a call of a few ranks does not
   * clear all MAX_RANKS of them: a barrier of 2 ranks takes about 0.4 us,
   * and clearing 512 bytes is a tenth of it). */
  int32_t exp[MAX_RANKS];
};

/* The call's span begins: call is its number on the lane, bytes this
 * rank's payload. */
static void span_begin(struct coll *cc, int32_t call, int64_t bytes) {
  if (!(cc->observed = pld__observed(PLD__TEV_COLL)))
    return;
  pld__tev_init(&cc->ev, PLD__TEV_COLL, cc->kind, cc->sig->name);
  cc->ev.a = call;
  cc->ev.x = bytes;
  pld__obs_begin(&cc->ev);
}

/* ---- the lane: credits, waits, descriptors --------------------------------
 */

static int write_rank(struct coll *cc, const struct pld__tensor *w, int32_t q,
                      size_t off, const void *src, size_t bytes);

static size_t cell_off(const struct coll *cc, int cell) {
  return cc->base + (size_t)cell * sizeof(int32_t);
}

/* Adds 1 to my credit cell on rank `to`. */
static int credit(struct coll *cc, int32_t to) {
  return pld__signal_cell(cc->c, cc->fn, cc->sig, to,
                          cell_off(cc, CREDIT(cc->me)), 1, PLD_NOTIFY_ADD);
}

/* The same, landing at the latest at send_credits: the credits of one
 * round to every rank travel together. */
static int credit_later(struct coll *cc, int32_t to) {
  return pld__signal_cell_later(cc->c, cc->fn, cc->sig, to,
                                cell_off(cc, CREDIT(cc->me)), 1,
                                PLD_NOTIFY_ADD);
}

static int send_credits(struct coll *cc) {
  int st = cc->f->ops->flush(cc->f, -1);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

/* Waits for one more credit from rank `from` than this call waited for so
 * far. */
static int await(struct coll *cc, int32_t from) {
  int64_t idx = (int64_t)((cell_off(cc, CREDIT(from)) - cc->sig->win_offset) /
                          sizeof(int32_t));
  return pld__wait_cell(cc->c, cc->fn, cc->sig, cell_off(cc, CREDIT(from)), 1,
                        &idx, ++cc->exp[from], PLD_WAIT_GE);
}

/* Waits for a credit from every other rank (a rank needs none from
 * itself to know it arrived). */
static int await_all(struct coll *cc) {
  int st = PLD_OK;
  for (int32_t q = 0; q < cc->n && !st; q++)
    if (q != cc->me)
      st = await(cc, q);
  return st;
}

/* Every rank credits every other rank and waits for every other rank's
 * credit: one round of the call. */
static int barrier(struct coll *cc) {
  int st = PLD_OK;
  cc->c->coll_round++;
  for (int32_t q = 0; q < cc->n && !st; q++)
    if (q != cc->me)
      st = credit_later(cc, q);
  if (!st)
    st = send_credits(cc);
  return st ? st : await_all(cc);
}

/* What a call sends every rank in its entry besides its descriptor: for
 * rank q, `bytes` bytes at src + q * stride (none if bytes is 0). */
struct eager {
  const unsigned char *src;
  size_t bytes, stride;
};

/* The entry round: every rank gets this call's descriptor and its part of
 * the data (ep) in its slot of this lane, and a credit behind them; then
 * a credit from every rank. */
static int enter(struct coll *cc, const struct eager *ep) {
  int32_t msg[SLOT_CELLS];
  const size_t at =
      cell_off(cc, SLOT(cc->n, cc->me, cc->parity)) - cc->sig->win_offset;
  int st = PLD_OK;
  cc->c->coll_round++;
  memcpy(msg, cc->desc, sizeof cc->desc);
  /* The peers from the next rank on, spreading the writes; this rank
   * last. */
  for (int32_t i = 1; i <= cc->n && !st; i++) {
    int32_t q = (cc->me + i) % cc->n;
    if (ep->bytes && (ep->stride || i == 1)) /* the same for all: once */
      memcpy(msg + D_WORDS, ep->src + (size_t)q * ep->stride, ep->bytes);
    st = write_rank(cc, cc->sig, q, at, msg, sizeof cc->desc + ep->bytes);
    if (!st && q != cc->me)
      st = credit_later(cc, q);
  }
  if (!st)
    st = send_credits(cc);
  return st ? st : await_all(cc);
}

/* Rank q's part of a small call for this rank, from its slot. */
static const unsigned char *sent(const struct coll *cc, int32_t q) {
  return (const unsigned char *)&cc
      ->cells[SLOT(cc->n, q, cc->parity) + D_WORDS];
}

/* Takes back the credits this call waited for: the lane is zero again
 * (but for credits a faster rank already sent for its next call).  The
 * cells are this rank's own and taking back satisfies no wait, so no
 * signal is needed: one atomic add of every credit cell on this rank's
 * copy, through the fabric, whose adds are atomic with the peers' (under
 * MPI RMA a plain atomic here could lose a peer's credit arriving at the
 * same time). */
static int give_back(struct coll *cc) {
  int32_t back[MAX_RANKS];
  int any = 0;
  for (int32_t q = 0; q < cc->n; q++) {
    back[q] = -cc->exp[q];
    any |= back[q] != 0;
  }
  if (!any)
    return PLD_OK;
  int st = cc->f->ops->accumulate(
      cc->f, cc->sig->win_buf, cc->comm->members[cc->me],
      cell_off(cc, CREDIT(0)), back, (size_t)cc->n, PLD_INT32);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

static const char *op_name(int op) {
  static const char *const names[] = {"SUM", "MAX", "MIN", "PROD"};
  return op >= 0 && op < 4 ? names[op] : "?";
}

static const char *mode_name(int mode) {
  static const char *const names[] = {"auto", "mesh", "two-phase", "ring"};
  return mode >= 0 && mode < 4 ? names[mode] : "?";
}

static uint64_t desc_u64(const int32_t *d, int lo) {
  return (uint64_t)(uint32_t)d[lo] | (uint64_t)(uint32_t)d[lo + 1] << 32;
}

static void desc_set_u64(int32_t *d, int lo, uint64_t v) {
  d[lo] = (int32_t)(uint32_t)(v & 0xffffffffu);
  d[lo + 1] = (int32_t)(uint32_t)(v >> 32);
}

/* "pld_allreduce(SUM, FP32, 1024 elements, ring, 2 blocks) on buffer #3
 * bytes [0, 4096), signal buffer #5 from byte 0" for a descriptor of a
 * domain of n ranks, or what stands where call `call` should be. */
static size_t desc_str(char *buf, size_t cap, const int32_t *d, int32_t call,
                       int32_t n) {
  if (d[D_CALL] != call + 1)
    return pld__catf(buf, cap,
                     "no collective call %d on this window (a pld_barrier, "
                     "or another window's collective; its last call here "
                     "is %d)",
                     (int)call + 1, (int)d[D_CALL]);
  uint32_t w = (uint32_t)d[D_WHAT];
  int kind = (int)(w & 15), op = (int)(w >> 4 & 15), mode = (int)(w >> 12 & 15);
  pld_dtype dt = (pld_dtype)(w >> 8 & 15);
  int lanes = (int)(w >> 16) + 1;
  long long count =
      (long long)((uint64_t)(uint32_t)d[D_COUNT_LO] |
                  (uint64_t)((uint32_t)d[D_COUNT_HI] & 0xffff) << 32);
  int root = (int)((uint32_t)d[D_COUNT_HI] >> 16);
  const char *name = pld__coll_name(kind);
  size_t m = pld__catf(buf, cap, "%s(", name ? name : "?");
  if (kind == PLD__COLL_ALLREDUCE || kind == PLD__COLL_REDUCE_SCATTER)
    m += pld__catf(buf + m, cap - m, "%s, ", op_name(op));
  m += pld__catf(buf + m, cap - m, "%s, %lld elements", pld_dtype_name(dt),
                 count);
  if (kind == PLD__COLL_ALL_TO_ALL_V)
    m += pld__catf(buf + m, cap - m, " in %d rows", (int)d[D_ROWS]);
  if (kind == PLD__COLL_ALLREDUCE)
    m += pld__catf(buf + m, cap - m, ", %s", mode_name(mode));
  if (kind == PLD__COLL_BROADCAST)
    m += pld__catf(buf + m, cap - m, ", root %d", root);
  /* The window's bytes: an allgather's target holds a stage per rank. */
  const uint64_t at = desc_u64(d, D_DATA_LO);
  const uint64_t bytes = (uint64_t)count * pld_dtype_size(dt) *
                         (uint64_t)(kind == PLD__COLL_ALLGATHER ? n : 1);
  return m + pld__catf(buf + m, cap - m,
                       ", %d block%s) on buffer #%d bytes [%llu, %llu), "
                       "signal buffer #%d from byte %llu",
                       lanes, lanes == 1 ? "" : "s", (int)d[D_DATA_BUF],
                       (unsigned long long)at, (unsigned long long)(at + bytes),
                       (int)d[D_SIG_BUF],
                       (unsigned long long)desc_u64(d, D_SIG_LO));
}

/* Every rank's descriptor of this call equals mine but for D_GROUP, or
 * the call fails with PLD_ERR_MISMATCH naming each rank's call.  Then
 * the call reduces as many elements at a time as the rank with the least
 * tile memory can. */
static int compare_calls(struct coll *cc) {
  int32_t call = cc->desc[D_CALL] - 1;
  int same = 1;
  for (int32_t q = 0; q < cc->n; q++) {
    const int32_t *d = &cc->cells[SLOT(cc->n, q, cc->parity)];
    for (int i = 0; i < D_WORDS; i++)
      same &= i == D_GROUP || d[i] == cc->desc[i];
  }
  if (same) {
    for (int32_t q = 0; q < cc->n; q++) {
      int32_t g = cc->cells[SLOT(cc->n, q, cc->parity) + D_GROUP];
      if (g >= 1 && (size_t)g < cc->group)
        cc->group = (size_t)g;
    }
    return PLD_OK;
  }
  char msg[4096], ws[160];
  pld__describe(ws, sizeof ws, cc->sig, PLD__NO_PEER, NULL);
  size_t m = pld__catf(msg, sizeof msg,
                       "ranks reached call %d of signal %s (lane %d) with "
                       "different calls:",
                       (int)call + 1, ws, (int)cc->lane);
  for (int32_t q = 0; q < cc->n; q++) {
    /* Domain ranks; the world rank too where it differs. */
    m += pld__catf(msg + m, sizeof msg - m, " rank %d", (int)q);
    if (cc->comm->members[q] != q)
      m += pld__catf(msg + m, sizeof msg - m, " (world rank %d)",
                     cc->comm->members[q]);
    m += pld__catf(msg + m, sizeof msg - m, ": ");
    m += desc_str(msg + m, sizeof msg - m,
                  &cc->cells[SLOT(cc->n, q, cc->parity)], call, cc->n);
    m += pld__catf(msg + m, sizeof msg - m, ";");
  }
  msg[m ? m - 1 : 0] = '\0';
  return pld__kfail(cc->c, PLD_ERR_MISMATCH, cc->fn, "%s", msg);
}

/* ---- arguments -------------------------------------------------------- */

static int reducible(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16 ||
         dt == PLD_INT32 || dt == PLD_INT16 || dt == PLD_INT8;
}

/* a and b share bytes: views of one window buffer whose byte ranges
 * overlap (known while tracing too), or tensors whose memory does. */
static int overlap(const struct pld__tensor *a, const struct pld__tensor *b) {
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
  if (!a || !b || !overlap(a, b))
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
static int same_shape(const struct pld__tensor *a, const char *ra,
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
                  op_name(a->op), ws, pld_dtype_name(d->dtype));
  }
  if (reducing && a->cube)
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
        (st = same_shape(d, "input", t, msg, cap)))
      return st;
    st = refuse_overlap(d, "input", t, NULL, msg, cap);
    break;
  default:
    break;
  }
  if (!st)
    st = refuse_overlap(t ? t : d, NULL, sig, NULL, msg, cap);
  return st;
}

/* Checks a kernel's call: the windows usable from core c, local tensors
 * with data, then pld__coll_check; lays out the call's lane of the signal
 * window.  Failures are recorded in c as fn's. */
static int begin(struct coll *cc, struct pld__core *c, const char *fn,
                 struct pld__coll_args *a, pld_window sig,
                 const pld_window *windows, int nwindows,
                 const pld_tensor *locals, const int *writes, int nlocals) {
  memset(cc, 0, offsetof(struct coll, exp));
  cc->c = c;
  cc->fn = fn;
  cc->kind = a->kind;
  int st = pld__win_check(c, fn, sig, PLD__NO_PEER);
  for (int i = 0; i < nwindows && !st; i++)
    st = pld__win_check(c, fn, windows[i], PLD__NO_PEER);
  for (int i = 0; i < nlocals && !st; i++)
    st = pld__tensor_check(c, fn, locals[i], writes[i]);
  if (st)
    return st;
  const struct pld__tensor *w = sig.p;
  /* One domain: the signal's.  A window of another would have no copy on
   * some of its ranks. */
  for (int i = 0; i < nwindows; i++) {
    const struct pld__comm *d = windows[i].p->comm;
    if (d->nranks == w->comm->nranks &&
        !memcmp(d->members, w->comm->members,
                (size_t)d->nranks * sizeof d->members[0]))
      continue;
    char ds[160], ss[160];
    pld__describe(ds, sizeof ds, windows[i].p, PLD__NO_PEER, NULL);
    pld__describe(ss, sizeof ss, w, PLD__NO_PEER, NULL);
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "%s spans %d rank%s and signal %s %d: a collective runs "
                      "over one domain, the ranks whose dispatches received "
                      "views of both",
                      ds, d->nranks, d->nranks == 1 ? "" : "s", ss,
                      w->comm->nranks);
  }
  a->sig = w;
  a->nranks = w->comm->nranks;
  a->blocks = c->block_num;
  a->cube = c->spec.type == PLD_CORE_CUBE;
  char msg[1024];
  if ((st = pld__coll_check(a, msg, sizeof msg)))
    return pld__kfail(c, st, fn, "%s", msg);
  /* Every block of the call runs at once, as on the hardware: no more
   * blocks than the device has cores of the kernel's type. */
  const int cores = c->env->cores[c->spec.type];
  if (cores > 0 && c->block_num > cores)
    return pld__kfail(c, PLD_ERR_ARG, fn,
                      "launched on %d blocks, but the device has %d %s "
                      "cores: the blocks of a collective must run at once "
                      "(pld/collective.h); launch it on at most %d",
                      (int)c->block_num, cores,
                      pld__core_type_name(c->spec.type), cores);
  if ((st = pld__coll_sig_use(c, fn, w, a->kind)))
    return st;
  cc->sig = w;
  cc->f = c->env->fabric;
  cc->comm = w->comm;
  cc->me = w->comm->rank;
  cc->n = w->comm->nranks;
  memset(cc->exp, 0, (size_t)cc->n * sizeof cc->exp[0]);
  cc->lane = c->block_idx;
  cc->lanes = c->block_num;
  const int64_t lane = PLD_SIGNAL_LANE_CELLS(cc->n);
  cc->base = w->win_offset + (size_t)(cc->lane * lane) * sizeof(int32_t);
  cc->cells = (int32_t *)w->data + cc->lane * lane;
  return PLD_OK;
}

/* Elements of a group: what a reduction reads from each rank, combines in
 * the accumulator and stores at a time, at most (FP32 data: 32 KiB of
 * staging and 32 KiB of accumulator, which an empty core's tile memory
 * holds); less where the rank's tile memory has less room, and the same
 * on every rank (mesh synchronises once per group): the least of all
 * ranks' (compare_calls). */
#define GROUP ((size_t)8192)
#define PIECE ((size_t)1024)

/* Whether a group of g elements of es bytes fits tile memory with gaps
 * `largest` and `second` (pld__tile_gaps): its staging tile, and for a
 * reduction first its accumulator (FP32 or INT32, never smaller than the
 * staging: reducible dtypes are 4 bytes at most).  The accumulator fits
 * the second gap (the staging then fits whichever of the two largest it
 * left), or both fit the largest one together. */
static int group_fits(size_t g, size_t es, int reduce, size_t largest,
                      size_t second) {
  const size_t stage = pld__round_up(g * es, PLD__TILE_GRANULE);
  if (!reduce)
    return stage <= largest;
  const size_t acc = pld__round_up(g * sizeof(float), PLD__TILE_GRANULE);
  return acc <= second || acc + stage <= largest;
}

/* Reserves the call's tile memory: a staging tile for groups of elements
 * of `es` bytes, and for a reduction an accumulator; groups are at most
 * `most` elements, and as large as the free tile memory allows
 * (PLD_COLL_MIN_TILE_BYTES: one element fits, or the allocation fails
 * with its message). */
static int reserve(struct coll *cc, size_t es, int reduce, int64_t most) {
  struct pld__core *c = cc->c;
  size_t hi = most <= 0 ? 1 : (size_t)most < GROUP ? (size_t)most : GROUP;
  size_t largest, second;
  pld__tile_gaps(c, &largest, &second);
  if (!group_fits(hi, es, reduce, largest, second)) {
    size_t lo = 1; /* fits, or nothing does: the allocation says so */
    while (lo + 1 < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (group_fits(mid, es, reduce, largest, second))
        lo = mid;
      else
        hi = mid;
    }
    hi = lo;
  }
  cc->group = hi;
  if (reduce)
    cc->acc =
        pld__tile_alloc(c, cc->fn, PLD_UINT8, 1, (int32_t)(hi * sizeof(float)));
  if (!c->status)
    cc->stage = pld__tile_alloc(c, cc->fn, PLD_UINT8, 1, (int32_t)(hi * es));
  return c->status;
}

/* Counts the call on window w (the window of its data or target); then
 * the entry (sending ep) and the comparison of every rank's call. */
static int start(struct coll *cc, const struct pld__tensor *w, int op, int mode,
                 int root, int64_t count, const struct eager *ep) {
  const pld_dtype dt = w->dtype;
  int32_t call = cc->cells[CALLS(cc->n)];
  int32_t *d = cc->desc;
  d[D_WHAT] =
      (int32_t)((uint32_t)cc->kind | (uint32_t)op << 4 | (uint32_t)dt << 8 |
                (uint32_t)mode << 12 | (uint32_t)(cc->lanes - 1) << 16);
  d[D_COUNT_LO] = (int32_t)(uint32_t)((uint64_t)count & 0xffffffffu);
  d[D_COUNT_HI] = (int32_t)((uint32_t)((uint64_t)count >> 32 & 0xffff) |
                            (uint32_t)root << 16);
  d[D_ROWS] = cc->kind == PLD__COLL_ALL_TO_ALL_V ? (int32_t)w->shape[0] : 0;
  d[D_DATA_BUF] = w->win_buf;
  desc_set_u64(d, D_DATA_LO, w->win_offset);
  d[D_SIG_BUF] = cc->sig->win_buf;
  desc_set_u64(d, D_SIG_LO, cc->sig->win_offset);
  d[D_GROUP] = (int32_t)cc->group;
  d[D_CALL] = call + 1;
  cc->parity = call & 1;
  cc->cells[CALLS(cc->n)] = call + 1;
  cc->c->coll_kind = cc->kind;
  cc->c->coll_call = call + 1;
  cc->c->coll_round = 0;
  span_begin(cc, call + 1, count * (int64_t)pld_dtype_size(dt));
  int st = enter(cc, ep);
  return st ? st : compare_calls(cc);
}

/* The end of every call, however it went: the credits back, the tiles
 * freed.  Returns st, or a failure of the epilogue. */
static int finish(struct coll *cc, int st) {
  struct pld__core *c = cc->c;
  if (!st && cc->sig)
    st = give_back(cc);
  pld_core k = {c};
  pld_tile_free(k, cc->acc);
  pld_tile_free(k, cc->stage);
  if (cc->observed) {
    cc->ev.b = c->coll_round;
    pld__obs_end(&cc->ev);
  }
  c->coll_kind = c->coll_call = c->coll_round = 0;
  return c->status ? c->status : st;
}

/* This lane's part of n elements: [*lo, *hi). */
static void lane_part(const struct coll *cc, int64_t n, int64_t *lo,
                      int64_t *hi) {
  *lo = n * cc->lane / cc->lanes;
  *hi = n * (cc->lane + 1) / cc->lanes;
}

/* Part c of P parts of [lo, hi). */
static void chunk(int64_t lo, int64_t hi, int32_t c, int32_t p, int64_t *c0,
                  int64_t *c1) {
  *c0 = lo + (hi - lo) * c / p;
  *c1 = lo + (hi - lo) * (c + 1) / p;
}

/* ---- moving bytes ------------------------------------------------------- */

/* The race detector's check of the call's access (PLD__RACE_*) to `bytes`
 * bytes at byte `off` of rank q's copy of window w (its own signal window
 * is its synchronisation, not data). */
static int race(struct coll *cc, int kind, const struct pld__tensor *w,
                int32_t q, size_t off, size_t bytes) {
  if (!pld__race_on() || w == cc->sig || !(w->flags & PLD__T_WINDOW))
    return PLD_OK;
  int st =
      pld__race_access(kind, cc->fn, w->name, w->win_buf, cc->comm->members[q],
                       w->win_offset + off, bytes, 1, bytes);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

/* Reads `bytes` bytes at byte `off` of rank q's copy of window w into dst
 * (this rank's own copy: a local copy). */
static int read_rank(struct coll *cc, const struct pld__tensor *w, int32_t q,
                     size_t off, void *dst, size_t bytes) {
  if (!bytes)
    return PLD_OK;
  if (race(cc, PLD__RACE_READ, w, q, off, bytes))
    return cc->c->status;
  if (q == cc->me) {
    memmove(dst, (const unsigned char *)w->data + off, bytes);
    return PLD_OK;
  }
  int st = cc->f->ops->read(cc->f, w->win_buf, cc->comm->members[q],
                            w->win_offset + off, dst, bytes);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

/* Rank q's `bytes` bytes at byte `off` of window w, where they lie (this
 * rank's, or a peer's the fabric can show in place), or read into stage.
 * NULL on a failure (recorded). */
static const void *rank_bytes(struct coll *cc, const struct pld__tensor *w,
                              int32_t q, size_t off, void *stage,
                              size_t bytes) {
  if (cc->eager && q != cc->me)
    return sent(cc, q) + (off - cc->eager_off);
  if (race(cc, PLD__RACE_READ, w, q, off, bytes))
    return NULL;
  if (q == cc->me)
    return (const unsigned char *)w->data + off;
  const void *in = cc->f->ops->view(cc->f, w->win_buf, cc->comm->members[q],
                                    w->win_offset + off, bytes);
  if (in)
    return in;
  return read_rank(cc, w, q, off, stage, bytes) ? NULL : stage;
}

static int write_rank(struct coll *cc, const struct pld__tensor *w, int32_t q,
                      size_t off, const void *src, size_t bytes) {
  if (!bytes)
    return PLD_OK;
  if (race(cc, PLD__RACE_WRITE, w, q, off, bytes))
    return cc->c->status;
  if (q == cc->me) {
    memmove((unsigned char *)w->data + off, src, bytes);
    return PLD_OK;
  }
  int st = cc->f->ops->write(cc->f, w->win_buf, cc->comm->members[q],
                             w->win_offset + off, src, bytes);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

/* ---- reducing ----------------------------------------------------------- */

/* acc (FP32 for float dtypes, INT32 for integer ones) = in, or op(acc, in)
 * when combining, over n elements of dtype dt. */
#define COMBINE_LOOP(T, A, EXPR)                                               \
  do {                                                                         \
    A *a_ = acc;                                                               \
    const T *in_ = in;                                                         \
    PLD__VLOOP(A, i, n, const A x = a_[i]; const A y = (A)in_[i];              \
               a_[i] = (EXPR););                                               \
  } while (0)

static void combine_f32(pld_reduce_op op, float *acc, const float *in,
                        size_t n) {
  switch (op) {
  case PLD_REDUCE_SUM:
    COMBINE_LOOP(float, float, x + y);
    break;
  case PLD_REDUCE_PROD:
    COMBINE_LOOP(float, float, x *y);
    break;
  case PLD_REDUCE_MAX:
    COMBINE_LOOP(float, float, PLD__FMAX(x, y));
    break;
  case PLD_REDUCE_MIN:
    COMBINE_LOOP(float, float, PLD__FMIN(x, y));
    break;
  }
}

/* Integers wrap: sums and products go through uint32_t. */
static void combine_i32(pld_reduce_op op, int32_t *acc, const int32_t *in,
                        size_t n) {
  switch (op) {
  case PLD_REDUCE_SUM:
    COMBINE_LOOP(int32_t, int32_t, (int32_t)((uint32_t)x + (uint32_t)y));
    break;
  case PLD_REDUCE_PROD:
    COMBINE_LOOP(int32_t, int32_t, (int32_t)((uint32_t)x * (uint32_t)y));
    break;
  case PLD_REDUCE_MAX:
    COMBINE_LOOP(int32_t, int32_t, PLD__IMAX(x, y));
    break;
  case PLD_REDUCE_MIN:
    COMBINE_LOOP(int32_t, int32_t, PLD__IMIN(x, y));
    break;
  }
}

static int is_float(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16;
}

/* acc = in (first) or op(acc, in), n elements of dt at in. */
static void accumulate(pld_dtype dt, pld_reduce_op op, int first, void *acc,
                       const void *in, size_t n) {
  if (dt == PLD_FP32 || dt == PLD_INT32) {
    if (first)
      memcpy(acc, in, n * 4);
    else if (dt == PLD_FP32)
      combine_f32(op, acc, in, n);
    else
      combine_i32(op, acc, in, n);
    return;
  }
  /* Narrow dtypes: widened a chunk at a time. */
  const size_t es = pld_dtype_size(dt);
  for (size_t i = 0; i < n; i += PLD__CHUNK) {
    size_t m = n - i < PLD__CHUNK ? n - i : PLD__CHUNK;
    const unsigned char *src = (const unsigned char *)in + i * es;
    if (is_float(dt)) {
      float *a = (float *)acc + i, wide[PLD__CHUNK];
      pld__load_f32(dt, first ? a : wide, src, m);
      if (!first)
        combine_f32(op, a, wide, m);
    } else {
      int32_t *a = (int32_t *)acc + i, wide[PLD__CHUNK];
      pld__load_i32(dt, first ? a : wide, src, m);
      if (!first)
        combine_i32(op, a, wide, m);
    }
  }
}

/* out (n elements of dt) = acc: floats rounded to nearest even, integers
 * wrapped to their width. */
static void store_acc(pld_dtype dt, void *out, const void *acc, size_t n) {
  if (dt == PLD_FP32 || dt == PLD_INT32) {
    memcpy(out, acc, n * 4);
  } else if (is_float(dt)) {
    pld__store_f32(dt, out, acc, n);
  } else {
    const int32_t *a = acc;
    if (dt == PLD_INT16) {
      int16_t *o = out;
      PLD__VLOOP(int32_t, i, n, o[i] = (int16_t)(uint16_t)(uint32_t)a[i];);
    } else {
      int8_t *o = out;
      PLD__VLOOP(int32_t, i, n, o[i] = (int8_t)(uint8_t)(uint32_t)a[i];);
    }
  }
}

/* acc[0, len) = op over ranks 0, 1, ..., P-1 in that order of their
 * elements [e, e + len) of window w. */
static int reduce_ranks(struct coll *cc, const struct pld__tensor *w, int64_t e,
                        size_t len, pld_reduce_op op) {
  const size_t es = pld_dtype_size(w->dtype);
  for (int32_t q = 0; q < cc->n; q++) {
    const void *in =
        rank_bytes(cc, w, q, (size_t)e * es, cc->stage->data, len * es);
    if (!in)
      return cc->c->status;
    accumulate(w->dtype, op, q == 0, cc->acc->data, in, len);
  }
  return PLD_OK;
}

/* My elements [e0, e1) of w = op over every rank's, group by group; with
 * `sync`, a barrier between reading a group and storing it (a peer may
 * still read my unreduced group: mesh). */
static int reduce_into_mine(struct coll *cc, const struct pld__tensor *w,
                            int64_t e0, int64_t e1, pld_reduce_op op,
                            int sync) {
  const size_t es = pld_dtype_size(w->dtype);
  /* Without a barrier, pieces small enough that the accumulator stays in
   * the host CPU's first-level cache: every rank's data is read once. */
  const size_t step = sync || cc->group < PIECE ? cc->group : PIECE;
  int st = PLD_OK;
  for (int64_t g = e0; g < e1 && !st; g += (int64_t)step) {
    size_t len = (size_t)(e1 - g) < step ? (size_t)(e1 - g) : step;
    st = reduce_ranks(cc, w, g, len, op);
    if (!st && sync)
      st = barrier(cc);
    if (!st)
      store_acc(w->dtype, (unsigned char *)w->data + (size_t)g * es,
                cc->acc->data, len);
  }
  return st;
}

/* Allgather (my local row to row me of every rank's target) and
 * all-to-all (my local row q to row me of rank q's target), on this lane's
 * part [lo, hi) of the rows. */
static int exchange(pld_core k, const char *fn, int kind, pld_tensor local,
                    pld_window target, pld_window sig) {
  struct coll cc;
  struct pld__coll_args a = {.kind = kind, .data = local.p, .target = target.p};
  const int reads = 0;
  int st = begin(&cc, k.p, fn, &a, sig, &target, 1, &local, &reads, 1);
  if (st)
    return finish(&cc, st);
  const struct pld__tensor *w = target.p;
  const size_t es = pld_dtype_size(w->dtype);
  const int gather = kind == PLD__COLL_ALLGATHER;
  const int64_t row = gather ? (int64_t)(local.p->nbytes / es)
                             : (int64_t)(w->nbytes / es) / cc.n;
  int64_t lo, hi;
  lane_part(&cc, row, &lo, &hi);
  /* What goes to rank q: src + q * stride. */
  const unsigned char *src =
      (const unsigned char *)local.p->data + (size_t)lo * es;
  const size_t stride = gather ? 0 : (size_t)row * es;
  const size_t part = (size_t)(hi - lo) * es;
  cc.eager = part <= PLD_COLL_EAGER_BYTES;
  const struct eager ep = {src, cc.eager ? part : 0, stride};
  if ((st = reserve(&cc, es, 0, hi - lo)) ||
      (st = start(&cc, w, 0, 0, 0, gather ? row : row * cc.n, &ep)))
    return finish(&cc, st);
  unsigned char *rows = (unsigned char *)w->data + (size_t)lo * es;
  for (int32_t i = 0; i < cc.n && !st; i++) {
    int32_t q = (cc.me + i) % cc.n; /* spread the pushes over the ranks */
    if (cc.eager)
      memcpy(rows + (size_t)(q * row) * es,
             q == cc.me ? src + (size_t)q * stride : sent(&cc, q), part);
    else
      st = write_rank(&cc, w, q, (size_t)(cc.me * row + lo) * es,
                      src + (size_t)q * stride, part);
  }
  if (!st && !cc.eager) /* every row has landed */
    st = barrier(&cc);
  return finish(&cc, st);
}

/* ---- the collectives ---------------------------------------------------- */

pld_allreduce_mode pld_allreduce_auto(int32_t nranks, int64_t bytes) {
  /* Measured by bench_coll (2026-11-30, 2, 4 and 8 ranks): mesh is best
   * up to 4 KiB per rank at 2 ranks and 8 KiB at 4 and 8, two-phase above
   * (the ring ties with it at 2 ranks and is 1.2 to 1.6 times slower at 4
   * and 8).  A barrier of two-phase costs P^2 signals, a ring stage one:
   * past 8 ranks the ring is taken. */
  if (nranks <= 1 || bytes <= (nranks <= 2 ? 4 : 8) * 1024)
    return PLD_ALLREDUCE_MESH;
  return nranks <= 8 ? PLD_ALLREDUCE_TWO_PHASE : PLD_ALLREDUCE_RING;
}

/* The lane's part [*c0, *c1) of chunk k of the ring's `count` elements:
 * the data is cut into P chunks first and each chunk among the lanes, so
 * that the ranks that reduce an element, and their order, do not depend
 * on the block count. */
static void ring_piece(const struct coll *cc, int64_t count, int32_t k,
                       int64_t *c0, int64_t *c1) {
  int64_t k0, k1;
  chunk(0, count, k, cc->n, &k0, &k1);
  chunk(k0, k1, cc->lane, cc->lanes, c0, c1);
}

/* Ring allreduce of my lane's part of each chunk of the `count` elements
 * of w: chunk c is reduced by the ranks c+1, c+2, ..., c in turn (each
 * adds its own to its left neighbour's partial), then passed around.
 * Stage t (1 to 2 (P-1)) reads from the left neighbour what it finished at
 * stage t-1: before it, a credit from the left; after it, one to the
 * right (but for the last). */
static int ring(struct coll *cc, const struct pld__tensor *w, int64_t count,
                pld_reduce_op op) {
  const int32_t n = cc->n, me = cc->me, left = (me + n - 1) % n;
  const int32_t right = (me + 1) % n;
  const size_t es = pld_dtype_size(w->dtype);
  int st = PLD_OK;
  for (int32_t t = 1; t <= 2 * (n - 1) && !st; t++) {
    cc->c->coll_round++; /* a round per stage */
    if (t > 1)
      st = await(cc, left);
    /* Reducing, chunk me-t-1 (the left's partial of it is finished);
     * then passing on, chunk me-s at round s = t - (P-1) (the left has
     * it: its own, or received at its round s-1). */
    int reducing = t <= n - 1;
    int32_t k = reducing ? ((me - t - 1) % n + n) % n
                         : ((me - (t - (n - 1))) % n + n) % n;
    int64_t c0, c1;
    ring_piece(cc, count, k, &c0, &c1);
    for (int64_t g = c0; g < c1 && !st; g += (int64_t)cc->group) {
      size_t len = (size_t)(c1 - g) < cc->group ? (size_t)(c1 - g) : cc->group;
      unsigned char *mine = (unsigned char *)w->data + (size_t)g * es;
      if (!reducing) {
        st = read_rank(cc, w, left, (size_t)g * es, mine, len * es);
        continue;
      }
      const void *in =
          rank_bytes(cc, w, left, (size_t)g * es, cc->stage->data, len * es);
      if (!in) {
        st = cc->c->status;
        break;
      }
      accumulate(w->dtype, op, 1, cc->acc->data, in, len);
      accumulate(w->dtype, op, 0, cc->acc->data, mine, len);
      store_acc(w->dtype, mine, cc->acc->data, len);
    }
    if (!st && t < 2 * (n - 1))
      st = credit(cc, right);
  }
  return st;
}

int pld_allreduce(pld_core k, pld_window data, pld_window sig, pld_reduce_op op,
                  pld_allreduce_mode mode) {
  struct pld__core *c = k.p;
  const char *fn = "pld_allreduce";
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_ALLREDUCE,
                             .data = data.p,
                             .op = (int)op,
                             .mode = (int)mode};
  int st = begin(&cc, c, fn, &a, sig, &data, 1, NULL, NULL, 0);
  if (st)
    return finish(&cc, st);
  const struct pld__tensor *w = data.p;
  const int64_t n = (int64_t)(w->nbytes / pld_dtype_size(w->dtype));
  if (mode == PLD_ALLREDUCE_AUTO)
    mode = pld_allreduce_auto(cc.n, (int64_t)w->nbytes);
  const size_t es = pld_dtype_size(w->dtype);
  int64_t lo, hi;
  lane_part(&cc, n, &lo, &hi);
  /* Mesh with little data: every rank's part comes in the entry. */
  cc.eager = mode == PLD_ALLREDUCE_MESH &&
             (size_t)(hi - lo) * es <= PLD_COLL_EAGER_BYTES;
  cc.eager_off = (size_t)lo * es;
  const struct eager ep = {(const unsigned char *)w->data + cc.eager_off,
                           cc.eager ? (size_t)(hi - lo) * es : 0, 0};
  if ((st = reserve(&cc, es, 1, hi - lo)) ||
      (st = start(&cc, w, op, mode, 0, n, &ep)))
    return finish(&cc, st);
  if (cc.n == 1)
    return finish(&cc, PLD_OK);
  if (mode == PLD_ALLREDUCE_MESH) {
    /* Unless small, a peer may still read my unreduced data until the
     * barrier before each store. */
    st = reduce_into_mine(&cc, w, lo, hi, op, !cc.eager);
  } else if (mode == PLD_ALLREDUCE_TWO_PHASE) {
    /* Rank c reduces chunk c: nobody else reads my chunk me, so it is
     * stored at once; then every rank reads every reduced chunk. */
    int64_t c0, c1;
    chunk(lo, hi, cc.me, cc.n, &c0, &c1);
    st = reduce_into_mine(&cc, w, c0, c1, op, 0);
    if (!st)
      st = barrier(&cc);
    for (int32_t q = 0; q < cc.n && !st; q++) {
      if (q == cc.me)
        continue;
      chunk(lo, hi, q, cc.n, &c0, &c1);
      st = read_rank(&cc, w, q, (size_t)c0 * es,
                     (unsigned char *)w->data + (size_t)c0 * es,
                     (size_t)(c1 - c0) * es);
    }
    if (!st) /* nobody returns while others read its chunk */
      st = barrier(&cc);
  } else {
    st = ring(&cc, w, n, op);
    if (!st)
      st = barrier(&cc);
  }
  return finish(&cc, st);
}

int pld_broadcast(pld_core k, pld_window data, pld_window sig, int32_t root) {
  struct pld__core *c = k.p;
  const char *fn = "pld_broadcast";
  struct coll cc;
  struct pld__coll_args a = {
      .kind = PLD__COLL_BROADCAST, .data = data.p, .root = root};
  int st = begin(&cc, c, fn, &a, sig, &data, 1, NULL, NULL, 0);
  if (st)
    return finish(&cc, st);
  const struct pld__tensor *w = data.p;
  const size_t es = pld_dtype_size(w->dtype);
  const int64_t n = (int64_t)(w->nbytes / es);
  int64_t lo, hi;
  lane_part(&cc, n, &lo, &hi);
  unsigned char *mine = (unsigned char *)w->data + (size_t)lo * es;
  const size_t part = (size_t)(hi - lo) * es;
  cc.eager = part <= PLD_COLL_EAGER_BYTES;
  const struct eager ep = {mine, cc.eager && cc.me == root ? part : 0, 0};
  if ((st = reserve(&cc, es, 0, hi - lo)) ||
      (st = start(&cc, w, 0, 0, root, n, &ep)))
    return finish(&cc, st);
  if (cc.eager) {
    if (cc.me != root)
      memcpy(mine, sent(&cc, root), part);
    return finish(&cc, PLD_OK);
  }
  if (cc.me != root)
    st = read_rank(&cc, w, root, (size_t)lo * es, mine, part);
  if (!st) /* the root stays until everyone has read it */
    st = barrier(&cc);
  return finish(&cc, st);
}

int pld_allgather(pld_core k, pld_tensor stage, pld_window target,
                  pld_window sig) {
  return exchange(k, "pld_allgather", PLD__COLL_ALLGATHER, stage, target, sig);
}

int pld_reduce_scatter(pld_core k, pld_window data, pld_window sig,
                       pld_reduce_op op) {
  struct pld__core *c = k.p;
  const char *fn = "pld_reduce_scatter";
  struct coll cc;
  struct pld__coll_args a = {
      .kind = PLD__COLL_REDUCE_SCATTER, .data = data.p, .op = (int)op};
  int st = begin(&cc, c, fn, &a, sig, &data, 1, NULL, NULL, 0);
  if (st)
    return finish(&cc, st);
  const struct pld__tensor *w = data.p;
  const int64_t n = (int64_t)(w->nbytes / pld_dtype_size(w->dtype));
  const int64_t row = n / cc.n;
  const size_t es = pld_dtype_size(w->dtype);
  int64_t lo, hi;
  lane_part(&cc, row, &lo, &hi);
  /* Small rows: every rank's row me comes in the entry. */
  cc.eager = (size_t)(hi - lo) * es <= PLD_COLL_EAGER_BYTES;
  cc.eager_off = (size_t)(cc.me * row + lo) * es;
  const struct eager ep = {(const unsigned char *)w->data + (size_t)lo * es,
                           cc.eager ? (size_t)(hi - lo) * es : 0,
                           (size_t)row * es};
  if ((st = reserve(&cc, es, 1, hi - lo)) ||
      (st = start(&cc, w, op, 0, 0, n, &ep)))
    return finish(&cc, st);
  /* Nobody else reads my row me: it is stored as it is reduced. */
  st = reduce_into_mine(&cc, w, cc.me * row + lo, cc.me * row + hi, op, 0);
  if (!st && !cc.eager) /* nobody changes its rows while others read them */
    st = barrier(&cc);
  return finish(&cc, st);
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
  int st = begin(&cc, c, fn, &a, sig, &target, 1, locals, writes, 3);
  if (st)
    return finish(&cc, st);
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
  if (st || (st = reserve(&cc, es, 0, max * cols)) ||
      (st = start(&cc, w, 0, 0, 0, (int64_t)(w->nbytes / es), &none)))
    return finish(&cc, st);
  const unsigned char *in = (const unsigned char *)input.p->data;
  const size_t block = (size_t)(max * cols) * es;
  for (int32_t i = 0; i < cc.n && !st; i++) {
    int32_t d = (cc.me + i) % cc.n;
    if (d % cc.lanes != cc.lane)
      continue;
    st = write_rank(&cc, w, d, (size_t)cc.me * block, in + (size_t)d * block,
                    (size_t)(send[d] * cols) * es);
    if (!st)
      st = pld__signal_cell(c, fn, cc.sig, d, cell_off(&cc, COUNT(cc.n, cc.me)),
                            send[d], PLD_NOTIFY_SET);
  }
  if (!st) /* every block and count has landed */
    st = barrier(&cc);
  /* Senders to me wrote my counts in lane me % C: that lane reads them,
   * once, and clears them (the cells are zero again for the next call,
   * whose senders set them only after its entry). */
  int32_t *recv = recv_counts.p->data;
  for (int32_t q = 0; q < cc.n && !st && cc.me % cc.lanes == cc.lane; q++) {
    recv[q] = __atomic_load_n(&cc.cells[COUNT(cc.n, q)], __ATOMIC_ACQUIRE);
    cc.cells[COUNT(cc.n, q)] = 0;
  }
  return finish(&cc, st);
}

int pld_barrier(pld_core k, pld_window sig) {
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_BARRIER};
  int st = begin(&cc, k.p, "pld_barrier", &a, sig, NULL, 0, NULL, NULL, 0);
  if (!st) {
    k.p->coll_kind = PLD__COLL_BARRIER;
    span_begin(&cc, 0, 0);
    st = barrier(&cc);
  }
  return finish(&cc, st);
}
