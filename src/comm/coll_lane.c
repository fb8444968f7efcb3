/* comm/coll_lane.c: the steps every collective takes on its lane of the
 * signal window (comm/coll.h): the arguments checked and the lane laid
 * out, the entry with every rank's descriptor, credits and rounds, moving
 * bytes between ranks' copies, the epilogue; and pld_barrier, which is a
 * round of credits and nothing else. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"

/* The call's span begins: call is its number on the lane, bytes this
 * rank's payload. */
static void coll_span_begin(struct coll *cc, int32_t call, int64_t bytes) {
  if (!(cc->observed = pld__observed(PLD__TEV_COLL)))
    return;
  pld__tev_init(&cc->ev, PLD__TEV_COLL, cc->kind, cc->sig->name);
  cc->ev.a = call;
  cc->ev.x = bytes;
  pld__obs_begin(&cc->ev);
}

/* ---- the lane: credits, waits, descriptors ------------------------------- */

/* Adds 1 to my credit cell on rank `to`. */
int pld__coll_credit(struct coll *cc, int32_t to) {
  return pld__signal_cell(cc->c, cc->fn, cc->sig, to,
                          pld__coll_cell_off(cc, CREDIT(cc->me)), 1,
                          PLD_NOTIFY_ADD);
}

/* The same, landing at the latest at round_end: the credits of one
 * round to every rank travel together. */
static int credit_later(struct coll *cc, int32_t to) {
  return pld__signal_cell_later(cc->c, cc->f, cc->fn, cc->sig, to,
                                pld__coll_cell_off(cc, CREDIT(cc->me)), 1,
                                PLD_NOTIFY_ADD);
}

/* A round of credits begins: each write of it goes to a peer that then
 * reads it in its own copy (an entry's descriptor, a push's part), with
 * the round's credit to that peer behind it (comm.h, `set_round`). */
static void round_begin(struct coll *cc) {
  if (cc->f->ops->set_round)
    cc->f->ops->set_round(cc->f, 1);
}

/* The round ends, its credits sent (unless st says it failed). */
static int round_end(struct coll *cc, int st) {
  if (!st && (st = cc->f->ops->flush(cc->f, PLD__FLUSH_SENT)))
    st = pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error());
  if (cc->f->ops->set_round)
    cc->f->ops->set_round(cc->f, 0);
  return st;
}

/* Waits until rank `from`'s credit cell holds at least `want`. */
static int await_credits(struct coll *cc, int32_t from, int32_t want) {
  int64_t idx =
      (int64_t)((pld__coll_cell_off(cc, CREDIT(from)) - cc->sig->win_offset) /
                sizeof(int32_t));
  return pld__wait_cell(cc->c, cc->fn, cc->sig,
                        pld__coll_cell_off(cc, CREDIT(from)), 1, &idx, want,
                        PLD_WAIT_GE);
}

/* Waits for one more credit from rank `from` than this call waited for so
 * far. */
int pld__coll_await(struct coll *cc, int32_t from) {
  if (cc->ahead) /* what was read ahead may change from here on */
    memset(cc->ahead, 0, (size_t)cc->n * sizeof *cc->ahead);
  return await_credits(cc, from, ++cc->exp[from]);
}

/* Waits for a credit from every other rank q with with[q] set (NULL:
 * every other rank; a rank needs none from itself to know it arrived). */
static int await_with(struct coll *cc, const unsigned char *with) {
  int st = PLD_OK;
  for (int32_t q = 0; q < cc->n && !st; q++)
    if (q != cc->me && (!with || with[q]))
      st = pld__coll_await(cc, q);
  return st;
}

int pld__coll_await_all(struct coll *cc) { return await_with(cc, NULL); }

int pld__coll_round_with(struct coll *cc, const unsigned char *with) {
  int st = PLD_OK;
  cc->c->coll_round++;
  round_begin(cc);
  for (int32_t q = 0; q < cc->n && !st; q++)
    if (q != cc->me && (!with || with[q]))
      st = credit_later(cc, q);
  st = round_end(cc, st);
  return st ? st : await_with(cc, with);
}

int pld__coll_round(struct coll *cc) { return pld__coll_round_with(cc, NULL); }

/* The entry round's sending: every rank gets this call's descriptor and
 * its part of the data (ep) in its slot of this lane, and a credit behind
 * them (coll_entered waits for every rank's). */
static int coll_enter(struct coll *cc, const struct eager *ep) {
  int32_t msg[SLOT_CELLS];
  const size_t at = pld__coll_cell_off(cc, SLOT(cc->n, cc->me, cc->slot)) -
                    cc->sig->win_offset;
  int st = PLD_OK;
  cc->c->coll_round++;
  round_begin(cc);
  memcpy(msg, cc->desc, sizeof cc->desc);
  /* The peers from the next rank on, spreading the writes; this rank
   * last. */
  for (int32_t i = 1; i <= cc->n && !st; i++) {
    int32_t q = (cc->me + i) % cc->n;
    if (ep->bytes && (ep->stride || i == 1)) /* the same for all: once */
      memcpy(msg + D_WORDS, ep->src + (size_t)q * ep->stride, ep->bytes);
    st = pld__coll_write(cc, cc->sig, q, at, msg, sizeof cc->desc + ep->bytes);
    if (!st && q != cc->me)
      st = credit_later(cc, q);
  }
  return round_end(cc, st);
}

/* Takes back the credits this call waited for: the lane is zero again
 * (but for credits a faster rank already sent for its next call).  The
 * cells are this rank's own and taking back satisfies no wait, so no
 * signal is needed: one atomic add of every credit cell on this rank's
 * copy, through the fabric, whose adds are atomic with the peers' (a
 * fabric may apply them otherwise than by this CPU's atomics: the add
 * then stays atomic with a peer's credit arriving at the same time). */
static int coll_give_back(struct coll *cc) {
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
      pld__coll_cell_off(cc, CREDIT(0)), back, (size_t)cc->n, PLD_INT32);
  if (st)
    return pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error());
  for (int32_t q = 0; q < cc->n && pld__obs.model; q++)
    if (back[q])
      pld__obs_model(
          PLD__TL_TAKE, 0, cc->f->rank,
          pld__cell_id(cc->sig->win_buf, pld__coll_cell_off(cc, CREDIT(q))),
          -back[q], NULL);
  return PLD_OK;
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
static size_t coll_desc_str(char *buf, size_t cap, const int32_t *d,
                            int32_t call, int32_t n) {
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
    m += pld__catf(buf + m, cap - m, "%s, ", pld__coll_op_name(op));
  m += pld__catf(buf + m, cap - m, "%s, %lld elements", pld_dtype_name(dt),
                 count);
  if (kind == PLD__COLL_ALL_TO_ALL_V || kind == PLD__COLL_ALL_TO_ALL_PACKED)
    m += pld__catf(buf + m, cap - m, " in %d rows", (int)d[D_ROWS]);
  if (kind == PLD__COLL_EP_DISPATCH)
    m += pld__catf(buf + m, cap - m, ", %d experts", (int)d[D_ROWS]);
  if (kind == PLD__COLL_EP_COMBINE) /* the experts in the root's place */
    m += pld__catf(buf + m, cap - m, ", top-%d of %d experts", (int)d[D_ROWS],
                   root);
  if (kind == PLD__COLL_ALLREDUCE)
    m += pld__catf(buf + m, cap - m, ", %s", pld__coll_mode_name(mode));
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

/* Whether rank q's descriptor in this call's slot is this call's (every
 * word but D_GROUP equal). */
static int coll_same(const struct coll *cc, int32_t q) {
  const int32_t *d = &cc->cells[SLOT(cc->n, q, cc->slot)];
  int same = 1;
  for (int i = 0; i < D_WORDS; i++)
    same &= i == D_GROUP || d[i] == cc->desc[i];
  return same;
}

/* Every rank's descriptor of this call equals mine but for D_GROUP, or
 * the call fails with PLD_ERR_MISMATCH naming each rank's call.  Then
 * the call reduces as many elements at a time as the rank with the least
 * tile memory can. */
static int coll_compare(struct coll *cc) {
  int32_t call = cc->desc[D_CALL] - 1;
  int same = 1;
  for (int32_t q = 0; q < cc->n; q++)
    same &= coll_same(cc, q);
  if (same) {
    for (int32_t q = 0; q < cc->n; q++) {
      int32_t g = cc->cells[SLOT(cc->n, q, cc->slot) + D_GROUP];
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
    m += coll_desc_str(msg + m, sizeof msg - m,
                       &cc->cells[SLOT(cc->n, q, cc->slot)], call, cc->n);
    m += pld__catf(msg + m, sizeof msg - m, ";");
  }
  msg[m ? m - 1 : 0] = '\0';
  return pld__kfail(cc->c, PLD_ERR_MISMATCH, cc->fn, "%s", msg);
}

/* The entry round's end: a credit from every rank, then every rank's call
 * compared with this one. */
static int coll_entered(struct coll *cc) {
  int st = pld__coll_await_all(cc);
  return st ? st : coll_compare(cc);
}

/* The calls this thread's block left to settle (deferred calls that
 * returned PLD_OK), oldest first, `npending` of them from pending[head]
 * on, in a ring: their first fields.  A block runs on one thread from its
 * start to its end.  A deferred call of a domain of P ranks leaves at most
 * A = PLD_COLL_SLOTS_USED(P) / 2 (PENDING_MOST at most): a rank that
 * starts call m with A - 1 calls left has settled call m - A, so every
 * rank has started that call, and so settled call m - 2A, the last whose
 * slots call m's entry overwrites. */
#define PENDING_MOST (PLD_COLL_SLOTS / 2)
static _Thread_local struct coll pending[PENDING_MOST];
static _Thread_local int head, npending;

static void coll_leave_pending(const struct coll *cc) {
  struct coll *p = &pending[(head + npending++) % PENDING_MOST];
  memcpy(p, cc, offsetof(struct coll, exp));
  p->ahead = NULL; /* pld__coll_finish frees it */
}

/* The calls left to settle on cc's lane (the same cells): each has one
 * credit from every rank coming, in the cells before cc's. */
static int32_t pending_on(const struct coll *cc) {
  int32_t k = 0;
  for (int i = 0; i < npending; i++)
    k += pending[(head + i) % PENDING_MOST].cells == cc->cells;
  return k;
}

/* Settles the calls left to settle, the oldest first, until at most
 * `keep` are left, on fabric f (the settling step's, which the timing
 * model may have muted): the rest of each one's entry (every rank's
 * credit, every rank's call compared) and its credits back.  While it
 * waits, the core's waits name that call. */
static int coll_settle(struct pld__fabric *f, int keep) {
  int st = PLD_OK;
  while (npending > keep && !st) {
    struct coll *cc = &pending[head];
    head = (head + 1) % PENDING_MOST;
    npending--;
    struct pld__core *c = cc->c;
    if (c->status)
      return c->status;
    const int32_t kind = c->coll_kind, call = c->coll_call,
                  round = c->coll_round;
    c->coll_kind = cc->kind;
    c->coll_call = cc->desc[D_CALL];
    c->coll_round = 1;
    cc->f = f;
    memset(cc->exp, 0, (size_t)cc->n * sizeof cc->exp[0]);
    st = coll_entered(cc);
    if (!st)
      st = coll_give_back(cc);
    c->coll_kind = kind;
    c->coll_call = call;
    c->coll_round = round;
  }
  return st;
}

void pld__coll_block_end(struct pld__core *c) {
  if (npending && pending[head].c == c)
    coll_settle(c->env->fabric, 0);
  npending = 0;
}

/* Checks a kernel's call: the windows usable from core c, local tensors
 * with data, then pld__coll_check; lays out the call's lane of the signal
 * window.  Failures are recorded in c as fn's. */
int pld__coll_begin(struct coll *cc, struct pld__core *c, const char *fn,
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
    if (pld__coll_same_domain(d, w->comm))
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
 * ranks' (coll_compare). */
#define GROUP ((size_t)8192)

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
int pld__coll_reserve(struct coll *cc, size_t es, int reduce, int64_t most) {
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

/* For the timing model, a call that repeats the last one (the same
 * collective on the same windows, sizes and choices: its descriptor but
 * the call's number, the function, the eager path, the lane, and the
 * calls left to settle before it, which it may settle) records
 * nothing once the last one was a whole turn of the loop the records
 * fold (core/trace.h): its records would be that turn's.  Not the
 * all-to-all-v's nor the EP builtins', whose transfers follow counts in
 * the data.  The steps then go to the device's own fabric (the wrapper
 * where the race detector needs it, as for the waits). */
static void coll_repeats(struct coll *cc) {
  if (!pld__obs.model ||
      (cc->kind != PLD__COLL_ALLREDUCE && cc->kind != PLD__COLL_BROADCAST &&
       cc->kind != PLD__COLL_ALLGATHER &&
       cc->kind != PLD__COLL_REDUCE_SCATTER &&
       cc->kind != PLD__COLL_ALL_TO_ALL))
    return;
  int32_t w[PLD__CALL_WORDS] = {0};
  _Static_assert(D_CALL + 5 <= PLD__CALL_WORDS, "a call's words fit");
  const uint64_t fn = (uint64_t)(uintptr_t)cc->fn;
  memcpy(w, cc->desc, D_CALL * sizeof *w);
  w[D_CALL] = (int32_t)(uint32_t)fn;
  w[D_CALL + 1] = (int32_t)(uint32_t)(fn >> 32);
  w[D_CALL + 2] = cc->eager;
  w[D_CALL + 3] = cc->lane;
  w[D_CALL + 4] = npending; /* the calls it may settle first */
  cc->repeat = 1 + pld__obs_call_begin(w);
  if (cc->repeat == 2)
    cc->f = cc->c->env->poll;
}

/* A deferred call on a rank other than the root: the root's entry (its
 * credit comes after those of the calls left to settle on the lane) and
 * its call compared with this one.  Where they differ the call is no
 * longer deferred: the calls left are settled, then this one's entry,
 * which names every rank's call in its PLD_ERR_MISMATCH. */
static int root_entered(struct coll *cc, int32_t root) {
  int st = await_credits(cc, root, pending_on(cc) + 1);
  if (st || coll_same(cc, root))
    return st;
  cc->defer = 0;
  st = coll_settle(cc->f, 0);
  return st ? st : coll_entered(cc);
}

/* Counts the call on window w (the window of its data or target); then
 * the entry (sending ep) and the comparison of every rank's call. */
int pld__coll_start(struct coll *cc, const struct pld__tensor *w, int op,
                    int mode, int root, int64_t count, const struct eager *ep) {
  const pld_dtype dt = w->dtype;
  int32_t call = cc->cells[CALLS(cc->n)];
  int32_t *d = cc->desc;
  d[D_WHAT] =
      (int32_t)((uint32_t)cc->kind | (uint32_t)op << 4 | (uint32_t)dt << 8 |
                (uint32_t)mode << 12 | (uint32_t)(cc->lanes - 1) << 16);
  d[D_COUNT_LO] = (int32_t)(uint32_t)((uint64_t)count & 0xffffffffu);
  d[D_COUNT_HI] = (int32_t)((uint32_t)((uint64_t)count >> 32 & 0xffff) |
                            (uint32_t)root << 16);
  d[D_ROWS] =
      cc->kind == PLD__COLL_ALL_TO_ALL_V ? (int32_t)w->shape[0] : cc->rows;
  d[D_DATA_BUF] = w->win_buf;
  desc_set_u64(d, D_DATA_LO, w->win_offset);
  d[D_SIG_BUF] = cc->sig->win_buf;
  desc_set_u64(d, D_SIG_LO, cc->sig->win_offset);
  d[D_GROUP] = (int32_t)cc->group;
  d[D_CALL] = call + 1;
  cc->slot = call % PLD_COLL_SLOTS_USED(cc->n);
  cc->cells[CALLS(cc->n)] = call + 1;
  cc->c->coll_kind = cc->kind;
  cc->c->coll_call = call + 1;
  cc->c->coll_round = 0;
  coll_repeats(cc);
  coll_span_begin(cc, call + 1, count * (int64_t)pld_dtype_size(dt));
  int st =
      coll_settle(cc->f, cc->defer ? PLD_COLL_SLOTS_USED(cc->n) / 2 - 1 : 0);
  if (!st)
    st = coll_enter(cc, ep);
  if (st || !cc->defer)
    return st ? st : coll_entered(cc);
  return cc->me == root ? PLD_OK : root_entered(cc, root);
}

/* The end of every call, however it went: the credits back, the tiles
 * freed.  Returns st, or a failure of the epilogue. */
int pld__coll_finish(struct coll *cc, int st) {
  struct pld__core *c = cc->c;
  if (!st && cc->sig) {
    if (cc->defer)
      coll_leave_pending(cc);
    else
      st = coll_give_back(cc);
  }
  pld_core k = {c};
  pld_tile_free(k, cc->acc);
  pld_tile_free(k, cc->stage);
  free(cc->ahead);
  if (cc->observed) {
    cc->ev.b = c->coll_round;
    pld__obs_end(&cc->ev);
  }
  if (cc->repeat)
    pld__obs_call_end(cc->repeat == 2, st);
  c->coll_kind = c->coll_call = c->coll_round = 0;
  return c->status ? c->status : st;
}

/* ---- moving bytes ------------------------------------------------------- */

/* The race detector's check of the call's access (PLD__RACE_*) to `bytes`
 * bytes at byte `off` of rank q's copy of window w (its own signal window
 * is its synchronisation, not data). */
static int coll_race(struct coll *cc, int kind, const struct pld__tensor *w,
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
int pld__coll_read(struct coll *cc, const struct pld__tensor *w, int32_t q,
                   size_t off, void *dst, size_t bytes) {
  if (!bytes)
    return PLD_OK;
  if (coll_race(cc, PLD__RACE_READ, w, q, off, bytes))
    return cc->c->status;
  if (q == cc->me) {
    memmove(dst, (const unsigned char *)w->data + off, bytes);
    return PLD_OK;
  }
  int st = cc->f->ops->read(cc->f, w->win_buf, cc->comm->members[q],
                            w->win_offset + off, dst, bytes);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

const void *pld__coll_view(struct coll *cc, const struct pld__tensor *w,
                           int32_t q, size_t off, size_t bytes) {
  const void *in =
      q == cc->me ? (const unsigned char *)w->data + off
                  : cc->f->ops->view(cc->f, w->win_buf, cc->comm->members[q],
                                     w->win_offset + off, bytes);
  return in && bytes && coll_race(cc, PLD__RACE_READ, w, q, off, bytes) ? NULL
                                                                        : in;
}

/* Bytes read ahead from peers, in all and per peer at least: over tcp
 * a read of 1 MiB runs at 4 times the rate of one of 32 KiB, of 128 KiB
 * at twice (bench_comm bandwidth --fabric mpi-tcp). */
#define AHEAD_BYTES ((size_t)1 << 20)
#define AHEAD_MIN ((size_t)128 << 10)

/* Whether the collective has room to read ahead from peers into, for
 * window w (allocated when it first reads ahead: a span per rank, then
 * the rooms). */
static int have_ahead(struct coll *cc, const struct pld__tensor *w) {
  if (!cc->ahead) {
    /* Rooms of whole cache lines, so that each starts aligned for any
     * dtype: the data is combined from there. */
    size_t room = AHEAD_BYTES / (size_t)(cc->n - 1) / 64 * 64;
    cc->ahead_room = room < AHEAD_MIN ? AHEAD_MIN : room;
    const size_t spans = (size_t)cc->n * sizeof *cc->ahead;
    if (!(cc->ahead = malloc(spans + (size_t)cc->n * cc->ahead_room)))
      return 0;
    memset(cc->ahead, 0, spans);
    cc->ahead_w = w;
  }
  return cc->ahead_w == w;
}

/* Rank q's room to read ahead into. */
static unsigned char *ahead_room(const struct coll *cc, int32_t q) {
  return (unsigned char *)(cc->ahead + cc->n) + (size_t)q * cc->ahead_room;
}

/* Rank q's `bytes` bytes at byte `off` of window w, where they lie (this
 * rank's, a peer's the fabric can show in place, or read ahead before),
 * else read into stage, or with the bytes ahead of them into the call's
 * room for q.  NULL on a failure (recorded). */
const void *pld__coll_rank_bytes(struct coll *cc, const struct pld__tensor *w,
                                 int32_t q, size_t off, void *stage,
                                 size_t bytes, size_t ahead) {
  if (cc->eager && q != cc->me)
    return pld__coll_sent(cc, q) + (off - cc->eager_off);
  const struct pld__coll_ahead *a =
      cc->ahead && cc->ahead_w == w ? &cc->ahead[q] : NULL;
  if (a && a->len && off >= a->off && off + bytes <= a->off + a->len)
    return ahead_room(cc, q) + (off - a->off);
  const void *in = pld__coll_view(cc, w, q, off, bytes);
  if (in || cc->c->status)
    return in;
  if (ahead <= bytes || !have_ahead(cc, w) || bytes >= cc->ahead_room)
    return pld__coll_read(cc, w, q, off, stage, bytes) ? NULL : stage;
  struct pld__coll_ahead *next = &cc->ahead[q];
  next->off = off;
  /* Short of `ahead`, whole pieces of the caller's: the next read then
   * starts where this one ends (the timing model sums the bytes). */
  next->len = ahead <= cc->ahead_room ? ahead : cc->ahead_room / bytes * bytes;
  if (pld__coll_read(cc, w, q, off, ahead_room(cc, q), next->len)) {
    next->len = 0;
    return NULL;
  }
  return ahead_room(cc, q);
}

int pld__coll_write(struct coll *cc, const struct pld__tensor *w, int32_t q,
                    size_t off, const void *src, size_t bytes) {
  if (!bytes)
    return PLD_OK;
  if (coll_race(cc, PLD__RACE_WRITE, w, q, off, bytes))
    return cc->c->status;
  if (q == cc->me) {
    memmove((unsigned char *)w->data + off, src, bytes);
    return PLD_OK;
  }
  int st = cc->f->ops->write(cc->f, w->win_buf, cc->comm->members[q],
                             w->win_offset + off, src, bytes);
  return st ? pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error()) : PLD_OK;
}

int pld__coll_push(struct coll *cc, const struct pld__tensor *w, size_t off,
                   const void *src, size_t bytes) {
  int st = PLD_OK;
  round_begin(cc);
  for (int32_t i = 1; i < cc->n && !st; i++) {
    const int32_t q = (cc->me + i) % cc->n;
    if (coll_race(cc, PLD__RACE_WRITE, w, q, off, bytes))
      st = cc->c->status;
    else if (bytes && (st = cc->f->ops->write_later(
                           cc->f, w->win_buf, cc->comm->members[q],
                           w->win_offset + off, src, bytes)))
      st = pld__kfail(cc->c, st, cc->fn, "%s", pld_last_error());
    else
      st = credit_later(cc, q);
  }
  return round_end(cc, st);
}

/* Whether the timing model records the barrier as one record
 * (PLD__TM_BARRIER) rather than by its steps (a notify to each peer, the
 * flush, a wait on each peer's credit, the credits taken back): so that a
 * barrier costs the core one record, and a loop of them one comparison a
 * turn.  Over the program's ranks as numbered, with nothing but the model
 * observing the steps (a trace's events, stamped between the steps'
 * records, need those). */
static int barrier_whole(const struct coll *cc) {
  if (!pld__obs_model_alone() || cc->n < 2 || cc->c->env->poll->rank != cc->me)
    return 0;
  for (int32_t q = 0; q < cc->n; q++)
    if (cc->comm->members[q] != q)
      return 0;
  return 1;
}

int pld_barrier(pld_core k, pld_window sig) {
  struct coll cc;
  struct pld__coll_args a = {.kind = PLD__COLL_BARRIER};
  int st =
      pld__coll_begin(&cc, k.p, "pld_barrier", &a, sig, NULL, 0, NULL, NULL, 0);
  int whole = 0;
  if (!st)
    st = coll_settle(cc.f, 0);
  if (!st) {
    k.p->coll_kind = PLD__COLL_BARRIER;
    coll_span_begin(&cc, 0, 0);
    if ((whole = barrier_whole(&cc))) {
      /* The steps record nothing, and need nothing else of the wrapper:
       * the device's own fabric (the wrapper where the race detector
       * needs it, as for the waits). */
      pld__obs.model = 0;
      cc.f = k.p->env->poll;
    }
    st = pld__coll_round(&cc);
  }
  st = pld__coll_finish(&cc, st);
  if (whole) {
    pld__obs.model = 1;
    if (!st)
      pld__obs_model(PLD__TM_BARRIER, 0, cc.n,
                     pld__cell_id(cc.sig->win_buf, pld__coll_cell_off(&cc, 0)),
                     0, NULL);
  }
  return st;
}
