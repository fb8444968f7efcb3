/* fabric/mpi.c: the MPI-3 RMA fabric's table (see fabric/mpi.h): the
 * operations of comm/comm.h, through shared memory where the peer's copy
 * is there, else on the proxy thread through MPI RMA; and a program's
 * life, whose collective part is fabric/mpi_win.c's. */
#include <stdlib.h>
#include <string.h>

#include "core/copy.h"
#include "core/error.h"
#include "core/futex.h"
#include "fabric/mpi_int.h"
#include "tile/convert.h"

static const struct pld__fabric_ops fab_ops;

/* The most bytes of a write to a peer reached through RMA that the next
 * signal to that peer carries in its message, instead of an MPI_Put and
 * the flush's round trip before the signal. */
#define EAGER_MAX ((size_t)16 << 10)

int pld__mpi_prog_create(const struct pld__mpi_setup *s,
                         struct pld__mpi_prog **out) {
  struct pld__mpi_prog *m = calloc(1, sizeof *m);
  if (!m)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  m->set = *s;
  m->me = pld__mpi_rank();
  m->n = s->nranks;
  m->fab.base.ops = &fab_ops;
  m->fab.base.rank = m->me;
  m->fab.m = m;
  const size_t nbufs = (size_t)(s->nbufs ? s->nbufs : 1);
  m->bufs = calloc(nbufs, sizeof *m->bufs);
  m->dirty = calloc(nbufs * (size_t)m->n, 1);
  m->dirty_list = calloc(nbufs * (size_t)m->n, sizeof(int));
  m->peers = calloc((size_t)m->n, sizeof *m->peers);
  m->last_in = calloc(nbufs * (size_t)m->n, sizeof *m->last_in);
  m->held = malloc(EAGER_MAX);
  if (!m->bufs || !m->dirty || !m->dirty_list || !m->peers || !m->last_in ||
      !m->held) {
    pld__mpi_prog_destroy(m, 1);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  int st = pld__mpi_win_create(m);
  if (st)
    return st;
  *out = m;
  return PLD_OK;
}

void pld__mpi_prog_destroy(struct pld__mpi_prog *m, int abandon) {
  if (!m)
    return;
  if (m->comm)
    pld__mpi_win_destroy(m, abandon);
  if (abandon && m->comm)
    return; /* a device thread may still use it */
  for (int b = 0; m->bufs && b < m->set.nbufs; b++) {
    free(m->bufs[b].drank);
    free(m->bufs[b].shm);
  }
  free(m->bufs);
  free(m->bells);
  free(m->private_bell);
  free(m->dirty);
  free(m->dirty_list);
  free(m->peers);
  free(m->last_in);
  free(m->held);
  free(m);
}

struct pld__fabric *pld__mpi_fabric(struct pld__mpi_prog *m) {
  return &m->fab.base;
}

void pld__mpi_set_spin(struct pld__mpi_prog *m, const struct pld__spin *spin) {
  m->spin = spin;
}

/* ---- the data plane ------------------------------------------------------ */

struct op {
  struct pld__mpi_prog *m;
  int buf, peer;
  size_t off;
  const void *src;
  void *dst;
  size_t n;
  pld_dtype dtype;
  int sig_buf;
  size_t sig_off;
  int32_t value;
  pld_notify_op nop;
  int round; /* a write or signal_later of a round (fab_set_round) */
  int rc;
  const char *what;
};

/* The calling thread is in a round of signal_later (comm.h, `set_round`):
 * its writes, each followed by the round's signal to their peer, go to
 * that peer alone. */
static _Thread_local int in_round;

static void mark_dirty(struct pld__mpi_prog *m, int buf, int drank) {
  size_t i = (size_t)buf * (size_t)m->n + (size_t)drank;
  if (!m->dirty[i]) {
    m->dirty[i] = 1;
    m->dirty_list[m->ndirty++] = (int)i;
    atomic_store_explicit(&m->any_dirty, 1, memory_order_relaxed);
  }
}

/* Completes at their targets every RMA write since the last flush (to
 * world rank peer only, unless peer < 0). */
static int flush_dirty(struct pld__mpi_prog *m, int peer) {
  int keep = 0, rc = MPI_SUCCESS;
  for (int k = 0; k < m->ndirty; k++) {
    int i = m->dirty_list[k], b = i / m->n, d = i % m->n;
    struct pld__mpi_buf *mb = &m->bufs[b];
    if (peer >= 0 && mb->drank[peer] != d) {
      m->dirty_list[keep++] = i;
      continue;
    }
    int r = MPI_Win_flush(d, mb->win);
    if (r != MPI_SUCCESS)
      rc = r;
    m->dirty[i] = 0;
  }
  m->ndirty = keep;
  atomic_store_explicit(&m->any_dirty, keep > 0 || m->nunacked,
                        memory_order_relaxed);
  return rc;
}

/* MPI_Put or MPI_Get of n bytes at off of world rank peer's copy of
 * buffer buf, in pieces MPI's int counts hold; with `mark`, the peer
 * marked dirty (a flush completes it).  A get its caller completes here
 * needs no mark: its bytes arrived, so they were read there, and the next
 * signal to the peer costs no flush's round trip.  Returns the MPI
 * status. */
static int rma_issue(struct pld__mpi_prog *m, int get, int buf, int peer,
                     size_t off, unsigned char *ptr, size_t n, int mark) {
  struct pld__mpi_buf *mb = &m->bufs[buf];
  /* After the bytes signals carried to the peer's copy of this buffer:
   * RMA could overtake them. */
  int d = mb->drank[peer], rc = pld__mpi_acked(m, peer, PLD__ACKED_IN(buf));
  for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += PLD__MPI_PIECE) {
    size_t len = pld__mpi_piece(n, at, PLD__MPI_PIECE);
    rc = get ? MPI_Get(ptr + at, (int)len, MPI_BYTE, d, (MPI_Aint)(off + at),
                       (int)len, MPI_BYTE, mb->win)
             : MPI_Put(ptr + at, (int)len, MPI_BYTE, d, (MPI_Aint)(off + at),
                       (int)len, MPI_BYTE, mb->win);
  }
  if (mark)
    mark_dirty(m, buf, d);
  return rc;
}

/* Whether a transfer of n bytes goes as messages rather than RMA: more
 * than the next signal carries, and at most m->carry. */
static int by_messages(const struct pld__mpi_prog *m, size_t n) {
  return n > EAGER_MAX && n <= m->carry;
}

/* A write (pld__mpi_put_send, of a round with `round`) or read
 * (pld__mpi_get_recv: after this rank's RMA writes to the peer, as its
 * messages are) as messages.  Returns the MPI status. */
static int msg_issue(struct pld__mpi_prog *m, int get, int buf, int peer,
                     size_t off, unsigned char *ptr, size_t n, int round) {
  if (!get)
    return pld__mpi_put_send(m, peer, buf, off, ptr, n, round);
  int rc = flush_dirty(m, peer);
  return rc == MPI_SUCCESS ? pld__mpi_get_recv(m, peer, buf, off, ptr, n) : rc;
}

/* Issues the pieces held back (before any other operation: MPI orders
 * nothing, but this rank's operations go out in program order); a copy
 * in m->held completes here, so that the next can take its place. */
static int issue_pending(struct pld__mpi_prog *m) {
  if (!m->pend.active)
    return MPI_SUCCESS;
  m->pend.active = 0;
  if (by_messages(m, m->pend.n))
    return msg_issue(m, m->pend.get, m->pend.buf, m->pend.peer, m->pend.off,
                     m->pend.ptr, m->pend.n, m->pend.round);
  int rc = rma_issue(m, m->pend.get, m->pend.buf, m->pend.peer, m->pend.off,
                     m->pend.ptr, m->pend.n, 1);
  if (rc == MPI_SUCCESS && m->pend.ptr == m->held) {
    struct pld__mpi_buf *mb = &m->bufs[m->pend.buf];
    rc = MPI_Win_flush_local(mb->drank[m->pend.peer], mb->win);
  }
  return rc;
}

/* Holds back o's piece (ptr: its bytes) until the next operation. */
static void hold(struct op *o, int get, unsigned char *ptr) {
  struct pld__mpi_prog *m = o->m;
  m->pend.active = 1;
  m->pend.round = o->round;
  m->pend.get = get;
  m->pend.buf = o->buf;
  m->pend.peer = o->peer;
  m->pend.off = o->off;
  m->pend.n = o->n;
  m->pend.ptr = ptr;
  atomic_store_explicit(&m->any_dirty, 1, memory_order_relaxed);
}

/* A write (o->src) or read (o->dst) done now: issued, and complete here
 * (the source may change, the destination be read) when it returns; a
 * small write copied and held back instead, which the next signal to the
 * peer carries (else it goes out as any piece held back). */
static void do_now(void *arg) {
  struct op *o = arg;
  int get = o->dst != NULL;
  o->what = get ? "MPI_Get" : "MPI_Put";
  if ((o->rc = issue_pending(o->m)) != MPI_SUCCESS)
    return;
  if (!get && o->n <= EAGER_MAX) {
    /* A copy held back, for the next signal to carry. */
    memcpy(o->m->held, o->src, o->n);
    hold(o, 0, o->m->held);
    return;
  }
  if (by_messages(o->m, o->n)) {
    o->what = "MPI_Isend";
    o->rc = msg_issue(o->m, get, o->buf, o->peer, o->off,
                      get ? o->dst : (unsigned char *)o->src, o->n, o->round);
    return;
  }
  if ((o->rc = rma_issue(o->m, get, o->buf, o->peer, o->off,
                         get ? o->dst : (unsigned char *)o->src, o->n, !get)) !=
      MPI_SUCCESS)
    return;
  o->rc = MPI_Win_flush_local(o->m->bufs[o->buf].drank[o->peer],
                              o->m->bufs[o->buf].win);
}

/* A piece held back: joined to the held one if it continues it on both
 * sides, else the held one goes out and this one is held. */
static void do_later(void *arg) {
  struct op *o = arg;
  struct pld__mpi_prog *m = o->m;
  int get = o->dst != NULL;
  unsigned char *ptr = get ? o->dst : (unsigned char *)o->src;
  o->what = get ? "MPI_Get" : "MPI_Put";
  if (m->pend.active && m->pend.get == get && m->pend.buf == o->buf &&
      m->pend.peer == o->peer && m->pend.off + m->pend.n == o->off &&
      m->pend.ptr + m->pend.n == ptr) {
    m->pend.n += o->n;
    m->pend.round &= o->round;
    return;
  }
  if ((o->rc = issue_pending(m)) == MPI_SUCCESS)
    hold(o, get, ptr);
}

/* An add to a peer reached through RMA: a message it applies
 * (pld__mpi_add_send). */
static void do_add(void *arg) {
  struct op *o = arg;
  o->what = "MPI_Isend";
  if ((o->rc = issue_pending(o->m)) == MPI_SUCCESS)
    o->rc = pld__mpi_add_send(o->m, o->peer, o->buf, o->off, o->src, o->n,
                              o->dtype);
}

/* Completes every write since the last flush, and waits until every
 * message sent is acknowledged (acks), or every add (a signal's bytes
 * travel with it). */
static int complete_all(struct pld__mpi_prog *m, int acks) {
  int rc = issue_pending(m);
  if (rc == MPI_SUCCESS)
    rc = flush_dirty(m, -1);
  if (rc == MPI_SUCCESS)
    rc = pld__mpi_acked(m, -1, acks ? PLD__ACKED_OTHERS : PLD__ACKED_ADDS);
  if (rc == MPI_SUCCESS)
    atomic_store_explicit(&m->any_dirty, m->nunacked > 0, memory_order_relaxed);
  return rc;
}

/* A signal to a peer reached through RMA: every write before it
 * completed, the messages sent to other peers acknowledged (a signal
 * releases them too; a signal of a round, those that write, but for the
 * round's own writes to their peers), then its message. */
static void signal_message(struct op *o, int later) {
  struct pld__mpi_prog *m = o->m;
  /* A small write to the peer held back travels in the message: for the
   * peer alone where the round wrote it. */
  int carry = m->pend.active && !m->pend.get && m->pend.peer == o->peer &&
              m->pend.n <= EAGER_MAX;
  int alone = carry && o->round && m->pend.round;
  m->pend.active &= !carry;
  o->what = "MPI_Win_flush";
  if ((o->rc = issue_pending(m)) != MPI_SUCCESS ||
      (o->rc = flush_dirty(m, -1)) != MPI_SUCCESS ||
      (o->rc = pld__mpi_acked(m, o->peer,
                              later ? PLD__ACKED_WRITES : PLD__ACKED_OTHERS)) !=
          MPI_SUCCESS)
    return;
  o->what = "MPI_Isend";
  o->rc = pld__mpi_sig_send(
      m, o->peer, o->sig_buf, o->sig_off, o->value, o->nop, m->pend.buf,
      m->pend.off, carry ? m->pend.ptr : NULL, carry ? m->pend.n : 0, alone);
}

static void do_signal(void *arg) { signal_message(arg, 0); }

/* A signal of a round: the signals sent before it to other peers need
 * not have landed (the round's receivers wait for each). */
static void do_signal_later(void *arg) { signal_message(arg, 1); }

/* The data joins the pieces held back (the signal flushes them all). */
static void do_put_signal(void *arg) {
  struct op *o = arg;
  if (o->n)
    do_later(o);
  if (o->rc == MPI_SUCCESS)
    do_signal(o);
}

static void do_flush(void *arg) {
  struct op *o = arg;
  o->what = "MPI_Win_flush";
  if (o->peer < 0)
    o->rc = complete_all(o->m, o->peer != PLD__FLUSH_SENT);
  else if ((o->rc = issue_pending(o->m)) == MPI_SUCCESS &&
           (o->rc = flush_dirty(o->m, o->peer)) == MPI_SUCCESS)
    o->rc = pld__mpi_acked(o->m, o->peer, PLD__ACKED_WRITES_TO);
  if (o->rc == MPI_SUCCESS && o->m->nowed)
    o->rc = pld__mpi_acks_send(o->m);
}

/* Runs op o by fn in MPI. */
static int run_op(struct op *o, void (*fn)(void *)) {
  o->rc = MPI_SUCCESS;
  pld__mpi_call(fn, o, o->m->spin);
  if (o->rc == MPI_SUCCESS)
    return PLD_OK;
  char what[96];
  pld__catf(what, sizeof what, "%s to rank %d", o->what, o->peer);
  return pld__mpi_failed(o->rc, what);
}

static struct pld__mpi_prog *prog_of(struct pld__fabric *f) {
  return ((struct pld__mpi_fab *)f)->m;
}

static void *fab_local(struct pld__fabric *f, int buf) {
  return prog_of(f)->bufs[buf].local;
}

/* A write (src) or read (dst) of n bytes at off of peer's copy: through
 * shared memory at once where the copy is there, else on the proxy by fn
 * (do_now or do_later). */
static int move(struct pld__fabric *f, void (*fn)(void *), int buf, int peer,
                size_t off, const void *src, void *dst, size_t n) {
  struct pld__mpi_prog *m = prog_of(f);
  unsigned char *p = m->bufs[buf].shm[peer];
  if (p) {
    if (dst)
      pld__copy(dst, p + off, n);
    else if (src)
      pld__copy(p + off, src, n);
    return PLD_OK;
  }
  struct op o = {.m = m,
                 .buf = buf,
                 .peer = peer,
                 .off = off,
                 .src = src,
                 .dst = dst,
                 .n = n,
                 .round = in_round && !dst};
  return run_op(&o, fn);
}

static int fab_write(struct pld__fabric *f, int buf, int peer, size_t off,
                     const void *src, size_t n) {
  return move(f, do_now, buf, peer, off, src, NULL, n);
}

static int fab_read(struct pld__fabric *f, int buf, int peer, size_t off,
                    void *dst, size_t n) {
  return move(f, do_now, buf, peer, off, NULL, dst, n);
}

static int fab_write_later(struct pld__fabric *f, int buf, int peer, size_t off,
                           const void *src, size_t n) {
  return move(f, do_later, buf, peer, off, src, NULL, n);
}

static int fab_read_later(struct pld__fabric *f, int buf, int peer, size_t off,
                          void *dst, size_t n) {
  return move(f, do_later, buf, peer, off, NULL, dst, n);
}

/* A peer's copy in shared memory (this rank's own included) takes every
 * atomic directly; through RMA, the peer applies it (do_add, do_signal):
 * never MPI's accumulates. */
static int fab_accumulate(struct pld__fabric *f, int buf, int peer, size_t off,
                          const void *src, size_t count, pld_dtype dtype) {
  struct pld__mpi_prog *m = prog_of(f);
  unsigned char *to = m->bufs[buf].shm[peer];
  if (to) {
    pld__elems_add_atomic(to + off, src, count, dtype);
    return PLD_OK;
  }
  struct op o = {.m = m,
                 .buf = buf,
                 .peer = peer,
                 .off = off,
                 .src = src,
                 .n = count,
                 .dtype = dtype};
  return run_op(&o, do_add);
}

static int fab_flush(struct pld__fabric *f, int peer) {
  struct pld__mpi_prog *m = prog_of(f);
  if (!atomic_load_explicit(&m->any_dirty, memory_order_relaxed))
    return PLD_OK;
  struct op o = {.m = m, .peer = peer};
  return run_op(&o, do_flush);
}

static int fab_put_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                          const void *src, size_t n, int sig_buf,
                          size_t sig_off, int32_t value, pld_notify_op op) {
  struct pld__mpi_prog *m = prog_of(f);
  unsigned char *cell = m->bufs[sig_buf].shm[peer];
  if (cell) {
    /* Through shared memory (a peer with the cell there has the data
     * there too): RMA writes and messages to other peers complete
     * first. */
    int st = fab_flush(f, -1);
    if (st)
      return st;
    if (n)
      pld__copy(m->bufs[buf].shm[peer] + off, src, n);
    pld__shm_signal_at(cell + sig_off, value, op,
                       peer == m->me ? m->bell : m->bells[peer]);
    return PLD_OK;
  }
  struct op o = {.m = m,
                 .buf = buf,
                 .peer = peer,
                 .off = off,
                 .src = src,
                 .n = n,
                 .sig_buf = sig_buf,
                 .sig_off = sig_off,
                 .value = value,
                 .nop = op};
  return run_op(&o, do_put_signal);
}

static int fab_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                      int32_t value, pld_notify_op op) {
  return fab_put_signal(f, buf, peer, 0, NULL, 0, buf, off, value, op);
}

static int fab_signal_later(struct pld__fabric *f, int buf, int peer,
                            size_t off, int32_t value, pld_notify_op op) {
  struct pld__mpi_prog *m = prog_of(f);
  if (m->bufs[buf].shm[peer]) /* lands at once */
    return fab_signal(f, buf, peer, off, value, op);
  struct op o = {.m = m,
                 .buf = buf,
                 .peer = peer,
                 .sig_buf = buf,
                 .sig_off = off,
                 .value = value,
                 .nop = op,
                 .round = in_round};
  return run_op(&o, do_signal_later);
}

static void fab_set_round(struct pld__fabric *f, int on) {
  (void)f;
  in_round = on;
}

static const void *fab_view(struct pld__fabric *f, int buf, int peer,
                            size_t off, size_t n) {
  (void)n;
  const unsigned char *p = prog_of(f)->bufs[buf].shm[peer];
  return p ? p + off : NULL;
}

static int32_t fab_cell(struct pld__fabric *f, int buf, size_t off) {
  const int32_t *cell = (const int32_t *)(prog_of(f)->bufs[buf].local + off);
  return __atomic_load_n(cell, __ATOMIC_ACQUIRE);
}

static uint32_t fab_events(struct pld__fabric *f) {
  return atomic_load_explicit(&prog_of(f)->bell->count, memory_order_acquire);
}

/* A signal lands in the cell before its doorbell rings: a waiter polling
 * the cell too sees it at once.  Polling as spin says, then asleep on the
 * doorbell.  With peers reached through RMA the poller takes the signals
 * that arrive itself, when no other thread is in MPI: waking it from the
 * proxy would cost more than the message (where the node's CPUs are
 * fewer than its processes, the proxy rests meanwhile). */
static void fab_wait_events(struct pld__fabric *f, uint32_t seen, int buf,
                            size_t off, const struct pld__spin *spin,
                            int64_t timeout_ns) {
  struct pld__mpi_prog *m = prog_of(f);
  struct pld__bell *b = m->bell;
  if (buf >= 0 && spin->ns > 0) {
    int32_t was = fab_cell(f, buf, off);
    int64_t deadline = pld__spin_deadline(spin);
    int moved = 0;
    if (m->rma)
      pld__mpi_polling_begin();
    for (int i = 0; pld__spin_step(i, deadline, spin); i++) {
      int in_mpi = m->rma && pld__mpi_try_enter();
      if (in_mpi)
        pld__mpi_take_own(m);
      moved = atomic_load_explicit(&b->count, memory_order_acquire) != seen ||
              fab_cell(f, buf, off) != was;
      if (in_mpi) {
        /* What it waited for first, the acknowledgements after. */
        if (!moved && m->nowed)
          pld__mpi_acks_send(m);
        pld__mpi_leave();
      }
      if (moved)
        break;
    }
    if (m->rma)
      pld__mpi_polling_end(!moved);
    if (moved)
      return;
  }
  pld__event_wait(&b->count, seen, &b->sleepers, spin, timeout_ns, 1);
}

static const struct pld__fabric_ops fab_ops = {
    .version = PLD__FABRIC_OPS_VERSION,
    .name = "mpi",
    .local = fab_local,
    .write = fab_write,
    .read = fab_read,
    .write_later = fab_write_later,
    .read_later = fab_read_later,
    .accumulate = fab_accumulate,
    .signal = fab_signal,
    .signal_later = fab_signal_later,
    .flush = fab_flush,
    .put_signal = fab_put_signal,
    .view = fab_view,
    .cell = fab_cell,
    .events = fab_events,
    .wait_events = fab_wait_events,
    .set_round = fab_set_round,
};
