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
  m->bufs = calloc((size_t)(s->nbufs ? s->nbufs : 1), sizeof *m->bufs);
  m->dirty = calloc((size_t)(s->nbufs ? s->nbufs : 1) * (size_t)m->n, 1);
  m->dirty_list =
      calloc((size_t)(s->nbufs ? s->nbufs : 1) * (size_t)m->n, sizeof(int));
  m->late = calloc((size_t)m->n * 2, sizeof *m->late);
  m->unacked = calloc((size_t)m->n, sizeof *m->unacked);
  m->owed = calloc((size_t)m->n, sizeof *m->owed);
  if (!m->bufs || !m->dirty || !m->dirty_list || !m->late || !m->unacked ||
      !m->owed) {
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
  free(m->late);
  free(m->unacked);
  free(m->owed);
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
  int rc;
  const char *what;
};

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
  atomic_store_explicit(&m->any_dirty, keep > 0 || m->nlate || m->nunacked,
                        memory_order_relaxed);
  return rc;
}

/* MPI_Put or MPI_Get of n bytes at off of world rank peer's copy of
 * buffer buf, in pieces MPI's int counts hold; the peer marked dirty (a
 * flush completes it).  Returns the MPI status. */
static int rma_issue(struct pld__mpi_prog *m, int get, int buf, int peer,
                     size_t off, unsigned char *ptr, size_t n) {
  struct pld__mpi_buf *mb = &m->bufs[buf];
  int d = mb->drank[peer], rc = MPI_SUCCESS;
  for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += PLD__MPI_PIECE) {
    size_t len = n - at < PLD__MPI_PIECE ? n - at : PLD__MPI_PIECE;
    rc = get ? MPI_Get(ptr + at, (int)len, MPI_BYTE, d, (MPI_Aint)(off + at),
                       (int)len, MPI_BYTE, mb->win)
             : MPI_Put(ptr + at, (int)len, MPI_BYTE, d, (MPI_Aint)(off + at),
                       (int)len, MPI_BYTE, mb->win);
  }
  mark_dirty(m, buf, d);
  return rc;
}

/* Issues the pieces held back (before any other operation: MPI orders
 * nothing, but this rank's operations go out in program order). */
static int issue_pending(struct pld__mpi_prog *m) {
  if (!m->pend.active)
    return MPI_SUCCESS;
  m->pend.active = 0;
  return rma_issue(m, m->pend.get, m->pend.buf, m->pend.peer, m->pend.off,
                   m->pend.ptr, m->pend.n);
}

/* A write (o->src) or read (o->dst) done now: issued, and complete here
 * (the source may change, the destination be read) when it returns. */
static void do_now(void *arg) {
  struct op *o = arg;
  int get = o->dst != NULL;
  o->what = get ? "MPI_Get" : "MPI_Put";
  if ((o->rc = issue_pending(o->m)) != MPI_SUCCESS ||
      (o->rc = rma_issue(o->m, get, o->buf, o->peer, o->off,
                         get ? o->dst : (unsigned char *)o->src, o->n)) !=
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
    return;
  }
  if ((o->rc = issue_pending(m)) != MPI_SUCCESS)
    return;
  m->pend.active = 1;
  m->pend.get = get;
  m->pend.buf = o->buf;
  m->pend.peer = o->peer;
  m->pend.off = o->off;
  m->pend.n = o->n;
  m->pend.ptr = ptr;
  atomic_store_explicit(&m->any_dirty, 1, memory_order_relaxed);
}

static MPI_Datatype mpi_type(pld_dtype dt) {
  switch (dt) {
  case PLD_INT8:
    return MPI_INT8_T;
  case PLD_UINT8:
    return MPI_UINT8_T;
  case PLD_INT16:
    return MPI_INT16_T;
  case PLD_INT32:
    return MPI_INT32_T;
  case PLD_FP32:
    return MPI_FLOAT;
  default:
    return MPI_DATATYPE_NULL; /* FP16, BF16: no MPI type */
  }
}

/* Adds one FP16 or BF16 element at byte off of d's copy: compare-and-swap
 * on the 32-bit word holding it, until no other add came in between. */
static int add_half(struct pld__mpi_buf *mb, int d, size_t off, const void *v,
                    pld_dtype dt) {
  size_t woff = off & ~(size_t)3, shift = off & 3;
  uint32_t old = 0, nw, seen;
  int rc = MPI_Fetch_and_op(NULL, &old, MPI_UINT32_T, d, (MPI_Aint)woff,
                            MPI_NO_OP, mb->win);
  if (rc == MPI_SUCCESS)
    rc = MPI_Win_flush(d, mb->win);
  double add = pld__elem_get(dt, v);
  while (rc == MPI_SUCCESS) {
    unsigned char bytes[4];
    memcpy(bytes, &old, 4);
    pld__elem_set(dt, bytes + shift, pld__elem_get(dt, bytes + shift) + add);
    memcpy(&nw, bytes, 4);
    rc = MPI_Compare_and_swap(&nw, &old, &seen, MPI_UINT32_T, d, (MPI_Aint)woff,
                              mb->win);
    if (rc == MPI_SUCCESS)
      rc = MPI_Win_flush(d, mb->win);
    if (seen == old)
      break;
    old = seen;
  }
  return rc;
}

static void do_acc(void *arg) {
  struct op *o = arg;
  struct pld__mpi_buf *mb = &o->m->bufs[o->buf];
  int d = mb->drank[o->peer];
  size_t es = pld_dtype_size(o->dtype);
  MPI_Datatype t = mpi_type(o->dtype);
  o->what = "MPI_Accumulate";
  if ((o->rc = issue_pending(o->m)) != MPI_SUCCESS)
    return;
  if (t == MPI_DATATYPE_NULL) {
    o->what = "MPI_Compare_and_swap";
    for (size_t i = 0; i < o->n && o->rc == MPI_SUCCESS; i++)
      o->rc = add_half(mb, d, o->off + i * es,
                       (const unsigned char *)o->src + i * es, o->dtype);
    return;
  }
  size_t most = PLD__MPI_PIECE / es;
  for (size_t at = 0; at < o->n && o->rc == MPI_SUCCESS; at += most) {
    size_t len = o->n - at < most ? o->n - at : most;
    o->rc = MPI_Accumulate((const unsigned char *)o->src + at * es, (int)len, t,
                           d, (MPI_Aint)(o->off + at * es), (int)len, t,
                           MPI_SUM, mb->win);
  }
  if (o->rc == MPI_SUCCESS)
    o->rc = MPI_Win_flush_local(d, mb->win);
  mark_dirty(o->m, o->buf, d);
}

static void ring_bell(struct pld__bell *b) {
  pld__event_signal(&b->count, &b->sleepers, 1);
}

/* Rings world rank peer's doorbell for a signal on buffer buf that is
 * complete at the peer: in shared memory, or by a message its proxy turns
 * into a ring.  Returns the MPI status. */
static int ring_peer(struct pld__mpi_prog *m, int peer, int buf) {
  if (m->bells[peer]) {
    ring_bell(m->bells[peer]);
    return MPI_SUCCESS;
  }
  if (peer == m->me) {
    MPI_Win_sync(m->bufs[buf].win);
    ring_bell(m->bell);
    return MPI_SUCCESS;
  }
  /* Not waited for: the cell is updated already, and a waiter polls it
   * (fab_wait_events); the ring only wakes one asleep. */
  return pld__mpi_send(m, peer, PLD__MPI_TAG_BELL, &buf, sizeof buf);
}

/* Whether a signal to world rank peer goes as a message (its doorbell is
 * not in shared memory: the fabric reaches it through RMA only). */
static int by_message(const struct pld__mpi_prog *m, int peer) {
  return !m->bells[peer] && peer != m->me;
}

/* Completes every write since the last flush and every signal sent later
 * (their accumulates, issued together, complete together, then their
 * doorbells ring), and with acks every signal sent as a message. */
static int complete_all(struct pld__mpi_prog *m, int acks) {
  int rc = issue_pending(m);
  if (rc == MPI_SUCCESS)
    rc = flush_dirty(m, -1);
  for (int i = 0; i < m->nlate && rc == MPI_SUCCESS; i++) {
    struct pld__mpi_buf *mb = &m->bufs[m->late[2 * i + 1]];
    rc = MPI_Win_flush(mb->drank[m->late[2 * i]], mb->win);
  }
  for (int i = 0; i < m->nlate && rc == MPI_SUCCESS; i++)
    rc = ring_peer(m, m->late[2 * i], m->late[2 * i + 1]);
  m->nlate = 0;
  if (rc == MPI_SUCCESS && acks)
    rc = pld__mpi_sig_acked(m, -1);
  if (rc == MPI_SUCCESS)
    atomic_store_explicit(&m->any_dirty, m->nunacked > 0, memory_order_relaxed);
  return rc;
}

/* The accumulate of a signal onto its cell (never a plain put: pollers
 * read it). */
static int accumulate_cell(struct op *o) {
  struct pld__mpi_buf *mb = &o->m->bufs[o->sig_buf];
  return MPI_Accumulate(
      &o->value, 1, MPI_INT32_T, mb->drank[o->peer], (MPI_Aint)o->sig_off, 1,
      MPI_INT32_T, o->nop == PLD_NOTIFY_SET ? MPI_REPLACE : MPI_SUM, mb->win);
}

/* The signal after every RMA write before it: everything completed (the
 * signals sent to other ranks applied there: a signal releases them too),
 * then a message the target's proxy applies, or the cell updated
 * atomically, completed, and the target's doorbell rung. */
static void do_signal(void *arg) {
  struct op *o = arg;
  struct pld__mpi_prog *m = o->m;
  struct pld__mpi_buf *mb = &m->bufs[o->sig_buf];
  int msg = by_message(m, o->peer);
  o->what = "MPI_Win_flush";
  if (m->nlate || !msg) {
    if ((o->rc = complete_all(m, 1)) != MPI_SUCCESS)
      return;
  } else if ((o->rc = issue_pending(m)) != MPI_SUCCESS ||
             (o->rc = flush_dirty(m, -1)) != MPI_SUCCESS ||
             (o->rc = pld__mpi_sig_acked(m, o->peer)) != MPI_SUCCESS) {
    return;
  }
  if (msg) {
    o->what = "MPI_Isend";
    o->rc =
        pld__mpi_sig_send(m, o->peer, o->sig_buf, o->sig_off, o->value, o->nop);
    return;
  }
  o->what = "MPI_Accumulate";
  if ((o->rc = accumulate_cell(o)) != MPI_SUCCESS ||
      (o->rc = MPI_Win_flush(mb->drank[o->peer], mb->win)) != MPI_SUCCESS)
    return;
  o->what = "MPI_Isend";
  o->rc = ring_peer(m, o->peer, o->sig_buf);
}

/* A signal of a round: every write before it completed, then its message
 * sent, or its accumulate left in flight with the round's other signals,
 * completed and its doorbell rung by the next flush or signal. */
static void do_signal_later(void *arg) {
  struct op *o = arg;
  struct pld__mpi_prog *m = o->m;
  o->what = "MPI_Win_flush";
  if (m->nlate == m->n && (o->rc = complete_all(m, 1)) != MPI_SUCCESS)
    return;
  if ((o->rc = issue_pending(m)) != MPI_SUCCESS ||
      (o->rc = flush_dirty(m, -1)) != MPI_SUCCESS)
    return;
  if (by_message(m, o->peer)) {
    o->what = "MPI_Isend";
    o->rc =
        pld__mpi_sig_send(m, o->peer, o->sig_buf, o->sig_off, o->value, o->nop);
    return;
  }
  o->what = "MPI_Accumulate";
  if ((o->rc = accumulate_cell(o)) != MPI_SUCCESS)
    return;
  m->late[2 * m->nlate] = o->peer;
  m->late[2 * m->nlate + 1] = o->sig_buf;
  m->nlate++;
  atomic_store_explicit(&m->any_dirty, 1, memory_order_relaxed);
}

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
  if (o->m->nlate || o->peer < 0)
    o->rc = complete_all(o->m, o->peer != PLD__FLUSH_SENT);
  else if ((o->rc = issue_pending(o->m)) == MPI_SUCCESS)
    o->rc = flush_dirty(o->m, o->peer);
  if (o->rc == MPI_SUCCESS && o->m->nowed)
    o->rc = pld__mpi_acks_send(o->m);
}

/* The bytes from which a transfer is handed off to the proxy
 * (pld__mpi_handoff says why); a smaller one, an add, a signal or a flush
 * is made by the calling thread itself if no other is in MPI. */
#define HANDOFF_MIN ((size_t)64 << 10)

/* Runs op o by fn in MPI. */
static int run_op(struct op *o, void (*fn)(void *)) {
  o->rc = MPI_SUCCESS;
  int big = fn != do_acc && o->n >= HANDOFF_MIN;
  (big ? pld__mpi_handoff : pld__mpi_call)(fn, o, o->m->spin);
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
                 .n = n};
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

/* Where a buffer is an RMA window (some member of its domain is reached
 * through RMA), every atomic on it goes through MPI, on this rank's own
 * copy and same-node peers' too: MPI's accumulates are atomic only among
 * themselves.  Plain reads and writes still take shared memory. */
static unsigned char *atomic_shm(struct pld__mpi_prog *m, int buf, int peer) {
  struct pld__mpi_buf *mb = &m->bufs[buf];
  return mb->win != MPI_WIN_NULL ? NULL : mb->shm[peer];
}

static int fab_accumulate(struct pld__fabric *f, int buf, int peer, size_t off,
                          const void *src, size_t count, pld_dtype dtype) {
  struct pld__mpi_prog *m = prog_of(f);
  unsigned char *to = atomic_shm(m, buf, peer);
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
  return run_op(&o, do_acc);
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
  unsigned char *cell = atomic_shm(m, sig_buf, peer);
  if (cell && (m->bufs[buf].shm[peer] || !n)) {
    /* Through shared memory: RMA writes to other peers complete first. */
    int st = fab_flush(f, -1);
    if (st)
      return st;
    if (n)
      pld__copy(m->bufs[buf].shm[peer] + off, src, n);
    pld__shm_signal_at(cell + sig_off, value, op,
                       peer == m->me ? m->bell : m->bells[peer]);
    return PLD_OK;
  }
  if (n && m->bufs[buf].shm[peer]) {
    pld__copy(m->bufs[buf].shm[peer] + off, src, n);
    n = 0;
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
  if (atomic_shm(m, buf, peer)) /* lands at once */
    return fab_signal(f, buf, peer, off, value, op);
  struct op o = {.m = m,
                 .buf = buf,
                 .peer = peer,
                 .sig_buf = buf,
                 .sig_off = off,
                 .value = value,
                 .nop = op};
  return run_op(&o, do_signal_later);
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
 * proxy would cost more than the message. */
static void fab_wait_events(struct pld__fabric *f, uint32_t seen, int buf,
                            size_t off, const struct pld__spin *spin,
                            int64_t timeout_ns) {
  struct pld__mpi_prog *m = prog_of(f);
  struct pld__bell *b = m->bell;
  if (buf >= 0 && spin->ns > 0) {
    int32_t was = fab_cell(f, buf, off);
    int64_t deadline = pld__spin_deadline(spin);
    for (int i = 0; pld__spin_step(i, deadline, spin); i++) {
      int in_mpi = m->rma && pld__mpi_try_enter();
      if (in_mpi)
        pld__mpi_take_own(m);
      int moved =
          atomic_load_explicit(&b->count, memory_order_acquire) != seen ||
          fab_cell(f, buf, off) != was;
      if (in_mpi) {
        /* What it waited for first, the acknowledgements after. */
        if (!moved && m->nowed)
          pld__mpi_acks_send(m);
        pld__mpi_leave();
      }
      if (moved)
        return;
    }
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
};
