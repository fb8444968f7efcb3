/* comm/fabric_log.c: the debug log of the data plane (PLD_DEBUG=fabric):
 * a fabric that logs each call that moves bytes or signals, then hands it
 * to the fabric it wraps.  Installed only when the log is on, so that a
 * device without it calls its fabric directly. */
#include "comm/comm.h"
#include "core/alloc.h"

struct logged {
  struct pld__fabric base;
  struct pld__fabric *in;
};

static struct pld__fabric *inner(struct pld__fabric *f) {
  return ((struct logged *)f)->in;
}

static void *l_local(struct pld__fabric *f, int buf) {
  struct pld__fabric *g = inner(f);
  return g->ops->local(g, buf);
}

static int l_write(struct pld__fabric *f, int buf, int peer, size_t off,
                   const void *src, size_t n) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("write", buf, peer, off, n);
  return g->ops->write(g, buf, peer, off, src, n);
}

static int l_read(struct pld__fabric *f, int buf, int peer, size_t off,
                  void *dst, size_t n) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("read", buf, peer, off, n);
  return g->ops->read(g, buf, peer, off, dst, n);
}

static int l_write_later(struct pld__fabric *f, int buf, int peer, size_t off,
                         const void *src, size_t n) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("write_later", buf, peer, off, n);
  return g->ops->write_later(g, buf, peer, off, src, n);
}

static int l_read_later(struct pld__fabric *f, int buf, int peer, size_t off,
                        void *dst, size_t n) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("read_later", buf, peer, off, n);
  return g->ops->read_later(g, buf, peer, off, dst, n);
}

static int l_accumulate(struct pld__fabric *f, int buf, int peer, size_t off,
                        const void *src, size_t count, pld_dtype dtype) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("accumulate", buf, peer, off, count * pld_dtype_size(dtype));
  return g->ops->accumulate(g, buf, peer, off, src, count, dtype);
}

static int l_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                    int32_t value, pld_notify_op op) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric(op == PLD_NOTIFY_SET ? "signal set" : "signal add", buf, peer,
                  off, sizeof(int32_t));
  return g->ops->signal(g, buf, peer, off, value, op);
}

static int l_signal_later(struct pld__fabric *f, int buf, int peer, size_t off,
                          int32_t value, pld_notify_op op) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric(op == PLD_NOTIFY_SET ? "signal_later set"
                                       : "signal_later add",
                  buf, peer, off, sizeof(int32_t));
  return g->ops->signal_later(g, buf, peer, off, value, op);
}

static int l_flush(struct pld__fabric *f, int peer) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("flush", -1, peer, 0, 0);
  return g->ops->flush(g, peer);
}

static int l_put_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                        const void *src, size_t n, int sig_buf, size_t sig_off,
                        int32_t value, pld_notify_op op) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("put_signal", buf, peer, off, n);
  return g->ops->put_signal(g, buf, peer, off, src, n, sig_buf, sig_off, value,
                            op);
}

static const void *l_view(struct pld__fabric *f, int buf, int peer, size_t off,
                          size_t n) {
  struct pld__fabric *g = inner(f);
  pld__obs_fabric("view", buf, peer, off, n);
  return g->ops->view(g, buf, peer, off, n);
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

static const struct pld__fabric_ops logged_ops = {
    PLD__FABRIC_OPS_VERSION,
    "logged",
    l_local,
    l_write,
    l_read,
    l_write_later,
    l_read_later,
    l_accumulate,
    l_signal,
    l_signal_later,
    l_flush,
    l_put_signal,
    l_view,
    l_cell,
    l_events,
    l_wait_events,
};

struct pld__fabric *pld__fabric_logged(struct pld__fabric *f) {
  if (!(pld__debug_mask & PLD__DBG_FABRIC) || !f)
    return f;
  struct logged *l = pld__calloc(1, sizeof *l);
  if (!l)
    return f; /* no log rather than no device */
  l->base.ops = &logged_ops;
  l->base.rank = f->rank;
  l->in = f;
  return &l->base;
}

void pld__fabric_unlogged(struct pld__fabric *f, struct pld__fabric *was) {
  if (f != was)
    pld__free(f);
}
