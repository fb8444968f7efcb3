/* comm/uses.c: what a device's kernels used window cells for (struct
 * pld__sig_uses): the signal views of collectives, and the bytes notifies,
 * waits and remote stores touched.  The two must never meet: a collective
 * counts every cell of its signal view (pld/collective.h), so a notify of
 * one of them, a wait on one, or a store into one corrupts a call or
 * reads a count that is not the user's.  Whichever of the two comes first
 * is recorded, and the second is refused.
 *
 * Ordering.  Each side is checked against the other before it is recorded
 * (a call that is refused records nothing) and again after.  Entries are
 * added under the registry's lock: of a notify and a collective racing on
 * two cores, the one that takes the lock second sees the other's entry
 * when it checks again.  A use recorded already is not added again; its
 * entry, read with acquire, was stored after the lock of its first use was
 * taken, so what that use saw then is seen too.  Use runs only ever grow,
 * so a reader seeing half of a growth sees a run that is recorded either
 * way. */
#include <sched.h>
#include <string.h>

#include "comm/comm.h"

static void lock(struct pld__sig_uses *u) {
  while (atomic_exchange_explicit(&u->lock, 1, memory_order_acquire))
    sched_yield();
}

static void unlock(struct pld__sig_uses *u) {
  atomic_store_explicit(&u->lock, 0, memory_order_release);
}

/* The counts, within the arrays whatever a wild write left in them. */
static int coll_count(struct pld__sig_uses *u, memory_order mo) {
  unsigned n = (unsigned)atomic_load_explicit(&u->ncoll, mo);
  return n < PLD__COLL_SIGS ? (int)n : PLD__COLL_SIGS;
}

int pld__coll_sig_count(struct pld__sig_uses *u) {
  return coll_count(u, memory_order_acquire);
}

static int use_count(struct pld__sig_uses *u, memory_order mo) {
  unsigned n = (unsigned)atomic_load_explicit(&u->nuses, mo);
  return n < PLD__CELL_USES ? (int)n : PLD__CELL_USES;
}

static uint64_t run_off(const struct pld__cell_use *r) {
  return atomic_load_explicit(&r->off, memory_order_acquire);
}

static uint64_t run_end(const struct pld__cell_use *r) {
  return atomic_load_explicit(&r->end, memory_order_acquire);
}

/* The first collectives' signal view holding a byte of [off, end) of
 * buffer buf, or NULL. */
static const struct pld__coll_sig *
coll_meeting(struct pld__sig_uses *u, int32_t buf, uint64_t off, uint64_t end) {
  const int n = coll_count(u, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (u->coll[i].buf == buf && off < u->coll[i].end && u->coll[i].off < end)
      return &u->coll[i];
  return NULL;
}

/* The first use run holding a byte of [off, end) of buffer buf, or NULL;
 * with `whole`, only one holding all of them. */
static const struct pld__cell_use *use_meeting(struct pld__sig_uses *u,
                                               int32_t buf, uint64_t off,
                                               uint64_t end, int whole) {
  const int n = use_count(u, memory_order_acquire);
  for (int i = 0; i < n; i++) {
    const struct pld__cell_use *r = &u->uses[i];
    if (r->buf != buf)
      continue;
    uint64_t ro = run_off(r), re = run_end(r);
    if (whole ? ro <= off && end <= re : off < re && ro < end)
      return r;
  }
  return NULL;
}

/* Records a use of [off, end) of buffer buf: joined to a run it meets or
 * touches, else a run of its own while there is room. */
static void use_record(struct pld__sig_uses *u, int32_t buf, uint64_t off,
                       uint64_t end, int what) {
  lock(u);
  const int n = use_count(u, memory_order_relaxed);
  int i = 0;
  for (; i < n; i++) {
    struct pld__cell_use *r = &u->uses[i];
    if (r->buf != buf || off > run_end(r) || run_off(r) > end)
      continue;
    if (off < run_off(r))
      atomic_store_explicit(&r->off, off, memory_order_release);
    if (end > run_end(r))
      atomic_store_explicit(&r->end, end, memory_order_release);
    atomic_fetch_or_explicit(&r->what, what, memory_order_relaxed);
    break;
  }
  if (i == n && n < PLD__CELL_USES) {
    struct pld__cell_use *r = &u->uses[n];
    r->buf = buf;
    atomic_store_explicit(&r->what, what, memory_order_relaxed);
    atomic_store_explicit(&r->off, off, memory_order_relaxed);
    atomic_store_explicit(&r->end, end, memory_order_relaxed);
    atomic_store_explicit(&u->nuses, n + 1, memory_order_release);
  }
  unlock(u);
}

/* "pld_notify and pld_wait" for the uses in mask `what`. */
static void use_names(char *buf, size_t cap, int what) {
  static const char *const names[] = {"pld_notify", "pld_wait",
                                      "a remote store"};
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < 3; i++)
    if (what & 1 << i)
      k += pld__catf(buf + k, cap - k, "%s%s", k ? " and " : "", names[i]);
}

/* "cell [1, 2]" of a multi-dimensional index, or "bytes [a, b)" of the
 * view w. */
static void cell_where_str(char *buf, size_t cap, const struct pld__tensor *w,
                           uint64_t off, uint64_t end, int nidx,
                           const int64_t *idx) {
  if (!idx) {
    pld__catf(buf, cap, "bytes [%llu, %llu)",
              (unsigned long long)(off - w->win_offset),
              (unsigned long long)(end - w->win_offset));
    return;
  }
  size_t k = pld__catf(buf, cap, "cell [");
  for (int d = 0; d < nidx; d++)
    k += pld__catf(buf + k, cap - k, d ? ", %lld" : "%lld", (long long)idx[d]);
  pld__catf(buf + k, cap - k, "]");
}

static int __attribute__((noinline, cold))
refuse_use(struct pld__core *c, const char *fn, const struct pld__tensor *w,
           uint64_t off, uint64_t end, int nidx, const int64_t *idx,
           const struct pld__coll_sig *cs) {
  char ws[160], at[96];
  pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
  cell_where_str(at, sizeof at, w, off, end, nidx, idx);
  return pld__kfail(c, PLD_ERR_ARG, fn,
                    "%s of %s %s the signal window %s used on rank %d in this "
                    "program: the collectives count its cells, and nothing "
                    "else may write or wait on them (pld/collective.h); use "
                    "a window of your own",
                    at, ws, idx ? "is a cell of" : "hold cells of",
                    pld__coll_name(cs->kind), c->rank);
}

int pld__cell_use(struct pld__core *c, const char *fn,
                  const struct pld__tensor *w, size_t off, size_t n, int what,
                  int nidx, const int64_t *idx) {
  struct pld__sig_uses *u = c->env ? c->env->uses : NULL;
  if (!u || !n)
    return PLD_OK;
  const int32_t buf = w->win_buf;
  const uint64_t end = (uint64_t)off + n;
  /* A use that is refused is not one: it is checked before it is
   * recorded, and again after (a collective may have come meanwhile).  No
   * collective used a signal yet is the usual case: nothing to meet. */
  const struct pld__coll_sig *cs = NULL;
  if (atomic_load_explicit(&u->ncoll, memory_order_acquire) &&
      (cs = coll_meeting(u, buf, off, end)))
    return refuse_use(c, fn, w, off, end, nidx, idx, cs);
  const struct pld__cell_use *r = use_meeting(u, buf, off, end, 1);
  if (r && (atomic_load_explicit(&r->what, memory_order_relaxed) & what))
    return PLD_OK; /* recorded, and checked then */
  use_record(u, buf, off, end, what);
  if (atomic_load_explicit(&u->ncoll, memory_order_acquire) &&
      (cs = coll_meeting(u, buf, off, end)))
    return refuse_use(c, fn, w, off, end, nidx, idx, cs);
  return PLD_OK;
}

/* The index of the collectives' signal view [off, end) of buffer buf,
 * or -1. */
static int coll_index(struct pld__sig_uses *u, int n, int32_t buf, uint64_t off,
                      uint64_t end) {
  for (int i = 0; i < n; i++)
    if (u->coll[i].buf == buf && u->coll[i].off == off && u->coll[i].end == end)
      return i;
  return -1;
}

static int __attribute__((noinline, cold))
refuse_coll(struct pld__core *c, const char *fn, const struct pld__tensor *w,
            const struct pld__cell_use *r) {
  /* The first cell of the view the run holds. */
  const uint64_t first =
      run_off(r) > w->win_offset ? run_off(r) : w->win_offset;
  char ws[160], names[64];
  pld__describe(ws, sizeof ws, w, PLD__NO_PEER, NULL);
  use_names(names, sizeof names,
            atomic_load_explicit(&r->what, memory_order_relaxed));
  return pld__kfail(
      c, PLD_ERR_ARG, fn,
      "signal %s: %s of rank %d used its cells in this program "
      "(the first: cell [%llu]): the collectives count every "
      "cell of their signal window, and nothing else may write "
      "or wait on them (pld/collective.h); give the "
      "collectives a signal window of their own",
      ws, names, c->rank,
      (unsigned long long)((first - w->win_offset) / sizeof(int32_t)));
}

int pld__coll_sig_use(struct pld__core *c, const char *fn,
                      const struct pld__tensor *w, int kind) {
  struct pld__sig_uses *u = c->env ? c->env->uses : NULL;
  if (!u)
    return PLD_OK;
  const int32_t buf = w->win_buf;
  const uint64_t off = w->win_offset, end = off + w->nbytes;
  /* Noted already: checked then. */
  if (coll_index(u, coll_count(u, memory_order_acquire), buf, off, end) >= 0)
    return PLD_OK;
  /* As for a use: checked before it is noted (a refused call notes
   * nothing), and again after. */
  const struct pld__cell_use *r = use_meeting(u, buf, off, end, 0);
  if (r)
    return refuse_coll(c, fn, w, r);
  lock(u);
  const int n = coll_count(u, memory_order_relaxed);
  if (coll_index(u, n, buf, off, end) < 0 && n < PLD__COLL_SIGS) {
    u->coll[n] = (struct pld__coll_sig){buf, kind, off, end};
    atomic_store_explicit(&u->ncoll, n + 1, memory_order_release);
  }
  unlock(u);
  r = use_meeting(u, buf, off, end, 0);
  return r ? refuse_coll(c, fn, w, r) : PLD_OK;
}
