/* comm/fabric_wrap.c: the fabric a device's cores call when the data
 * plane's debug log (PLD_DEBUG=fabric), the race detector or the timing
 * model (PLD_MODEL) is on, wrapped around the device's own: it logs each
 * call that moves bytes or signals, records it for the model (a transfer,
 * a notify, a flush: core/timeline.h), and, under the race detector, makes each
 * signal the release of what the notifying thread did before it and each
 * satisfied wait the acquire of what was released to its cell (core/race.h),
 * then hands the call to the fabric it wraps.  With neither on, a device calls
 * its fabric directly. The reads and writes themselves are the race detector's
 * at the comm layer's calls, which know the regions and views (comm/rma.c,
 * comm/coll_lane.c): many of them move no byte through the fabric. */
#include "comm/comm.h"
#include "core/race.h"
#include "core/timeline.h"

static struct pld__fabric *inner(struct pld__fabric *f) {
  return ((struct pld__fabric_wrap *)f)->in;
}

static int logs(struct pld__fabric *f) {
  return ((struct pld__fabric_wrap *)f)->log;
}

/* Whether the race detector follows the calling thread. */
static int races(struct pld__fabric *f) {
  return ((struct pld__fabric_wrap *)f)->race && pld__race_on();
}

/* Under the race detector, the notify of the calling thread to peer's cell
 * off of buffer buf (the view pld__comm_now.sig names it in reports) is
 * released as its signal lands: both with the cell locked, from
 * release_begin to release_end, which returns st (the release's failure,
 * or the signal's status). */
static int release_begin(struct pld__fabric *f, int buf, int peer, size_t off,
                         pld_notify_op op) {
  if (!races(f))
    return PLD_OK;
  const struct pld__tensor *w = pld__comm_now.sig;
  pld__race_cell_lock(buf, peer, off);
  return pld__race_release_locked(
      pld__comm_now.fn, w ? w->name : NULL, buf, peer, off,
      w ? (int64_t)((off - w->win_offset) / sizeof(int32_t)) : -1,
      op == PLD_NOTIFY_SET);
}

static int release_end(struct pld__fabric *f, int buf, int peer, size_t off,
                       int st) {
  if (races(f))
    pld__race_cell_unlock(buf, peer, off);
  return st;
}

/* For the timing model: a transfer of n bytes with peer (sub: PLD__TL_PUT
 * or _GET, | PLD__TL_LATER), and a notify of peer's cell. */
static void model_xfer(int sub, int peer, size_t n) {
  pld__obs_model(PLD__TL_XFER, sub, peer, (int64_t)n, 0, NULL);
}

/* A signal that went (st PLD_OK) is recorded after it, not before: the
 * record is off the path from the signal to the wait it releases (a
 * ping-pong, a barrier's round), and the thread's records keep their
 * order.  Returns st. */
static int modeled_notify(int st, int buf, int peer, size_t off, int32_t value,
                          pld_notify_op op) {
  if (!st)
    pld__obs_model(PLD__TL_NOTIFY, (int)op, peer, pld__cell_id(buf, off), value,
                   NULL);
  return st;
}

static void *l_local(struct pld__fabric *f, int buf) {
  struct pld__fabric *g = inner(f);
  return g->ops->local(g, buf);
}

static int l_write(struct pld__fabric *f, int buf, int peer, size_t off,
                   const void *src, size_t n) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("write", buf, peer, off, n);
  model_xfer(PLD__TL_PUT, peer, n);
  return g->ops->write(g, buf, peer, off, src, n);
}

static int l_read(struct pld__fabric *f, int buf, int peer, size_t off,
                  void *dst, size_t n) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("read", buf, peer, off, n);
  model_xfer(PLD__TL_GET, peer, n);
  return g->ops->read(g, buf, peer, off, dst, n);
}

static int l_write_later(struct pld__fabric *f, int buf, int peer, size_t off,
                         const void *src, size_t n) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("write_later", buf, peer, off, n);
  model_xfer(PLD__TL_PUT | PLD__TL_LATER, peer, n);
  return g->ops->write_later(g, buf, peer, off, src, n);
}

static int l_read_later(struct pld__fabric *f, int buf, int peer, size_t off,
                        void *dst, size_t n) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("read_later", buf, peer, off, n);
  model_xfer(PLD__TL_GET | PLD__TL_LATER, peer, n);
  return g->ops->read_later(g, buf, peer, off, dst, n);
}

static int l_accumulate(struct pld__fabric *f, int buf, int peer, size_t off,
                        const void *src, size_t count, pld_dtype dtype) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("accumulate", buf, peer, off,
                    count * pld_dtype_size(dtype));
  model_xfer(PLD__TL_PUT, peer, count * pld_dtype_size(dtype));
  return g->ops->accumulate(g, buf, peer, off, src, count, dtype);
}

static int l_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                    int32_t value, pld_notify_op op) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric(op == PLD_NOTIFY_SET ? "signal set" : "signal add", buf,
                    peer, off, sizeof(int32_t));
  int st = release_begin(f, buf, peer, off, op);
  st = release_end(f, buf, peer, off,
                   st ? st : g->ops->signal(g, buf, peer, off, value, op));
  return modeled_notify(st, buf, peer, off, value, op);
}

static int l_signal_later(struct pld__fabric *f, int buf, int peer, size_t off,
                          int32_t value, pld_notify_op op) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric(op == PLD_NOTIFY_SET ? "signal_later set"
                                         : "signal_later add",
                    buf, peer, off, sizeof(int32_t));
  int st = release_begin(f, buf, peer, off, op);
  st =
      release_end(f, buf, peer, off,
                  st ? st : g->ops->signal_later(g, buf, peer, off, value, op));
  return modeled_notify(st, buf, peer, off, value, op);
}

static int l_flush(struct pld__fabric *f, int peer) {
  struct pld__fabric *g = inner(f);
  const int to = peer < 0 ? -1 : peer; /* PLD__FLUSH_SENT: every peer */
  if (logs(f))
    pld__obs_fabric("flush", -1, to, 0, 0);
  int st = g->ops->flush(g, peer);
  if (!st) /* after the flush: see modeled_notify */
    pld__obs_model(PLD__TL_FLUSH, 0, to, 0, 0, NULL);
  return st;
}

static int l_put_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                        const void *src, size_t n, int sig_buf, size_t sig_off,
                        int32_t value, pld_notify_op op) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("put_signal", buf, peer, off, n);
  /* The data, then its signal behind it: the core issues both and goes
   * on (a DMA's order, not a wait of the core's). */
  int st = release_begin(f, sig_buf, peer, sig_off, op);
  st = release_end(f, sig_buf, peer, sig_off,
                   st ? st
                      : g->ops->put_signal(g, buf, peer, off, src, n, sig_buf,
                                           sig_off, value, op));
  if (!st)
    model_xfer(PLD__TL_PUT | PLD__TL_LATER, peer, n);
  return modeled_notify(st, sig_buf, peer, sig_off, value, op);
}

static const void *l_view(struct pld__fabric *f, int buf, int peer, size_t off,
                          size_t n) {
  struct pld__fabric *g = inner(f);
  if (logs(f))
    pld__obs_fabric("view", buf, peer, off, n);
  const void *v = g->ops->view(g, buf, peer, off, n);
  if (v && n) /* read in place: a get (else the caller reads) */
    model_xfer(PLD__TL_GET, peer, n);
  return v;
}

/* Waiting polls: not logged (the signal subsystem logs blocked waits). */
static int32_t l_cell(struct pld__fabric *f, int buf, size_t off) {
  struct pld__fabric *g = inner(f);
  return g->ops->cell(g, buf, off);
}

static uint32_t l_events(struct pld__fabric *f) {
  struct pld__fabric *g = inner(f);
  return g->ops->events(g);
}

static void l_wait_events(struct pld__fabric *f, uint32_t seen, int buf,
                          size_t off, const struct pld__spin *spin,
                          int64_t timeout_ns) {
  struct pld__fabric *g = inner(f);
  g->ops->wait_events(g, seen, buf, off, spin, timeout_ns);
}

/* Under the race detector, a wait's read of its cell and what it learns
 * are one step, with the cell locked: it learns the notifies whose signals
 * it saw, no later one. */
static int l_satisfied(struct pld__fabric *f, int buf, size_t off,
                       int32_t expected, int cmp, int32_t *value,
                       uint32_t *into) {
  struct pld__fabric *g = inner(f);
  if (!races(f))
    return pld__cell_satisfied(g, buf, off, expected, cmp, value, into);
  pld__race_cell_lock(buf, f->rank, off);
  int ok =
      pld__wait_satisfied(*value = g->ops->cell(g, buf, off), expected, cmp);
  if (ok)
    pld__race_acquire_locked(buf, f->rank, off, into);
  pld__race_cell_unlock(buf, f->rank, off);
  return ok;
}

/* Moves nothing: neither logged nor modeled. */
static void l_set_round(struct pld__fabric *f, int on) {
  struct pld__fabric *g = inner(f);
  if (g->ops->set_round)
    g->ops->set_round(g, on);
}

static const struct pld__fabric_ops wrap_ops = {
    .version = PLD__FABRIC_OPS_VERSION,
    .name = "wrapped",
    .local = l_local,
    .write = l_write,
    .read = l_read,
    .write_later = l_write_later,
    .read_later = l_read_later,
    .accumulate = l_accumulate,
    .signal = l_signal,
    .signal_later = l_signal_later,
    .flush = l_flush,
    .put_signal = l_put_signal,
    .view = l_view,
    .cell = l_cell,
    .events = l_events,
    .wait_events = l_wait_events,
    .satisfied = l_satisfied,
    .set_round = l_set_round,
};

struct pld__fabric *pld__fabric_wrapped(struct pld__fabric_wrap *w,
                                        struct pld__fabric *f, int race,
                                        int model) {
  const int log = (pld__debug_mask & PLD__DBG_FABRIC) != 0;
  if (!f || (!log && !race && !model))
    return f;
  w->base.ops = &wrap_ops;
  w->base.rank = f->rank;
  w->in = f;
  w->log = log;
  w->race = race;
  return &w->base;
}
