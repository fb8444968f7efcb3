/* fabric/mpi_win.c: a program of the MPI fabric on the proxy thread (see
 * fabric/mpi.h): its communicator, windows and doorbells, created and
 * destroyed by every process alike, and the messages on its communicator:
 * sent without waiting, received in every round of the proxy (the
 * doorbells here, the rest by the program's listener). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "fabric/mpi_int.h"
#include "tile/convert.h"

struct create_args {
  struct pld__mpi_prog *m;
  int st;
  char msg[PLD__MSG_MAX];
};

static int make_buf(struct pld__mpi_prog *m, int b) {
  struct pld__mpi_buf *mb = &m->bufs[b];
  const int n = m->n;
  mb->comm = MPI_COMM_NULL;
  mb->win = mb->shwin = MPI_WIN_NULL;
  mb->drank = calloc((size_t)n, sizeof *mb->drank);
  mb->shm = calloc((size_t)n, sizeof *mb->shm);
  int *members = calloc((size_t)n, sizeof *members);
  if (!mb->drank || !mb->shm || !members) {
    free(members);
    return pld__fail(PLD_ERR_NOMEM, "out of memory");
  }
  int size = 0;
  for (int r = 0; r < n; r++) {
    mb->drank[r] = -1;
    if (m->set.member[(size_t)b * (size_t)n + (size_t)r]) {
      mb->drank[r] = size;
      members[size++] = r;
    }
  }
  mb->member = mb->drank[m->me] >= 0;
  mb->bytes = m->set.phys[b];
  if (!mb->member) {
    free(members);
    return PLD_OK;
  }
  MPI_Group all, dom;
  MPI_Comm_group(m->comm, &all);
  MPI_Group_incl(all, size, members, &dom);
  free(members);
  int rc = MPI_Comm_create_group(m->comm, dom, b, &mb->comm);
  MPI_Group_free(&dom);
  if (rc != MPI_SUCCESS) {
    MPI_Group_free(&all);
    return pld__mpi_failed(rc, "MPI_Comm_create_group");
  }
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Info_set(info, "same_disp_unit", "true");
  if (!m->set.same_node_rma) {
    /* The domain's members on this node share memory. */
    MPI_Comm node;
    MPI_Comm_split_type(mb->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                        &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    int any_rma = nsize < size;
    rc = MPI_Win_allocate_shared((MPI_Aint)mb->bytes, 1, info, node, &mb->local,
                                 &mb->shwin);
    if (rc == MPI_SUCCESS) {
      MPI_Group ng;
      MPI_Comm_group(node, &ng);
      for (int i = 0; i < nsize; i++) {
        int w;
        MPI_Group_translate_ranks(ng, 1, &i, all, &w);
        MPI_Aint sz;
        int du;
        MPI_Win_shared_query(mb->shwin, i, &sz, &du, &mb->shm[w]);
      }
      MPI_Group_free(&ng);
    }
    MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS) {
      MPI_Info_free(&info);
      MPI_Group_free(&all);
      return pld__mpi_failed(rc,
                             "MPI_Win_allocate_shared (PLD_MPI_SAME_NODE=rma "
                             "sends every peer through RMA instead)");
    }
    if (any_rma)
      rc = MPI_Win_create(mb->local, (MPI_Aint)mb->bytes, 1, info, mb->comm,
                          &mb->win);
  } else {
    rc = MPI_Win_allocate((MPI_Aint)mb->bytes, 1, info, mb->comm, &mb->local,
                          &mb->win);
    mb->shm[m->me] = mb->local;
  }
  MPI_Info_free(&info);
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS)
    return pld__mpi_failed(rc, "creating a window");
  if (mb->shwin != MPI_WIN_NULL)
    pld__mpi_errors(mb->shwin);
  if (mb->win != MPI_WIN_NULL) {
    pld__mpi_errors(mb->win);
    int *model = NULL, flag = 0;
    MPI_Win_get_attr(mb->win, MPI_WIN_MODEL, &model, &flag);
    if (!flag || *model != MPI_WIN_UNIFIED)
      return pld__fail(PLD_ERR_SYSTEM,
                       "the MPI fabric: window buffer #%d: MPI gives the "
                       "separate memory model; pld needs the unified one",
                       b);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, mb->win);
    m->rma = 1;
  }
  memset(mb->local, 0, mb->bytes);
  return PLD_OK;
}

static int make_bells(struct pld__mpi_prog *m) {
  m->bells = calloc((size_t)m->n, sizeof *m->bells);
  if (!m->bells)
    return pld__fail(PLD_ERR_NOMEM, "out of memory");
  m->bellwin = MPI_WIN_NULL;
  if (m->set.same_node_rma) {
    m->private_bell = aligned_alloc(64, 64);
    if (!m->private_bell)
      return pld__fail(PLD_ERR_NOMEM, "out of memory");
    memset(m->private_bell, 0, 64);
    m->bell = (struct pld__bell *)m->private_bell;
    return PLD_OK;
  }
  MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &m->node);
  /* Each process's doorbell, then (the node's first process's) the count
   * of the node's awake threads: they share its CPUs. */
  unsigned char *mine, *first;
  int rc = MPI_Win_allocate_shared(128, 1, MPI_INFO_NULL, m->node, &mine,
                                   &m->bellwin);
  if (rc != MPI_SUCCESS)
    return pld__mpi_failed(rc, "MPI_Win_allocate_shared of the doorbells");
  pld__mpi_errors(m->bellwin);
  memset(mine, 0, 128);
  m->bell = (struct pld__bell *)mine;
  MPI_Aint fsz;
  int fdu;
  MPI_Win_shared_query(m->bellwin, 0, &fsz, &fdu, &first);
  m->awake = (_Atomic uint32_t *)(first + 64);
  /* The CPUs they share: the union of the processes' (each may be bound
   * to CPUs of its own). */
  cpu_set_t own, cpus;
  CPU_ZERO(&own);
  if (sched_getaffinity(0, sizeof own, &own) != 0 || CPU_COUNT(&own) < 1)
    CPU_SET(0, &own);
  cpus = own;
  int counts[2] = {CPU_COUNT(&own), CPU_COUNT(&own)}, sum = counts[0];
  if ((rc = MPI_Allreduce(MPI_IN_PLACE, &cpus, (int)sizeof cpus, MPI_BYTE,
                          MPI_BOR, m->node)) != MPI_SUCCESS ||
      (rc = MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, m->node)) !=
          MPI_SUCCESS ||
      (rc = MPI_Allreduce(MPI_IN_PLACE, &counts[1], 1, MPI_INT, MPI_MIN,
                          m->node)) != MPI_SUCCESS)
    return pld__mpi_failed(rc, "MPI_Allreduce of the node's CPUs");
  m->node_cpus = pld__node_cpus((uint32_t)counts[0], (uint32_t)CPU_COUNT(&cpus),
                                (uint32_t)sum, (uint32_t)counts[1]);
  int nsize;
  MPI_Comm_size(m->node, &nsize);
  MPI_Group ng, all;
  MPI_Comm_group(m->node, &ng);
  MPI_Comm_group(m->comm, &all);
  for (int i = 0; i < nsize; i++) {
    int w, du;
    MPI_Aint sz;
    unsigned char *p;
    MPI_Group_translate_ranks(ng, 1, &i, all, &w);
    MPI_Win_shared_query(m->bellwin, i, &sz, &du, &p);
    m->bells[w] = (struct pld__bell *)p;
  }
  MPI_Group_free(&ng);
  MPI_Group_free(&all);
  return PLD_OK;
}

/* A message in flight: sent without waiting for its receiver, freed once
 * complete. */
struct pld__mpi_outmsg {
  MPI_Request req[2];
  int nreq;
  size_t bytes;
  struct pld__mpi_outmsg *next;
  unsigned char buf[];
};

/* pld__mpi_send of the hn bytes at head followed by the bn at body: one
 * message, or with `apart`, the body in a message of its own right after
 * the head's (its receiver takes it straight into place). */
static int send_parts(struct pld__mpi_prog *m, int to, int tag,
                      const void *head, size_t hn, const void *body, size_t bn,
                      int apart) {
  for (int q = 0; q < m->n; q++) {
    if (!((to < 0 && q != m->me) || q == to))
      continue;
    struct pld__mpi_outmsg *om = malloc(sizeof *om + hn + bn);
    if (!om)
      return MPI_ERR_NO_MEM;
    om->bytes = hn + bn;
    memcpy(om->buf, head, hn);
    if (bn)
      memcpy(om->buf + hn, body, bn);
    om->nreq = apart ? 2 : 1;
    int rc = MPI_Isend(om->buf, (int)(apart ? hn : hn + bn), MPI_BYTE, q, tag,
                       m->comm, &om->req[0]);
    if (rc == MPI_SUCCESS && apart &&
        (rc = MPI_Isend(om->buf + hn, (int)bn, MPI_BYTE, q, tag, m->comm,
                        &om->req[1])) != MPI_SUCCESS)
      MPI_Wait(&om->req[0], MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      free(om);
      return rc;
    }
    om->next = m->out;
    m->out = om;
    m->out_bytes += om->bytes;
  }
  return MPI_SUCCESS;
}

int pld__mpi_send(struct pld__mpi_prog *m, int to, int tag, const void *buf,
                  size_t n) {
  return send_parts(m, to, tag, buf, n, NULL, 0, 0);
}

/* Frees the messages that completed (all of them, waiting, with wait).
 * Returns whether any did. */
static int reap_sent(struct pld__mpi_prog *m, int wait) {
  int any = 0;
  for (struct pld__mpi_outmsg **q = &m->out; *q;) {
    int done = 1;
    if (wait)
      MPI_Waitall((*q)->nreq, (*q)->req, MPI_STATUSES_IGNORE);
    else
      MPI_Testall((*q)->nreq, (*q)->req, &done, MPI_STATUSES_IGNORE);
    if (!done) {
      q = &(*q)->next;
      continue;
    }
    struct pld__mpi_outmsg *om = *q;
    *q = om->next;
    m->out_bytes -= om->bytes;
    free(om);
    any = 1;
  }
  return any;
}

/* The fabric's own messages (PLD__MPI_TAG_OWN), one tag so that a
 * rank's arrive in the order sent: a signal (bytes to write before it may
 * follow the header), an add (its elements after the header), a write
 * (its bytes), a read asked for (where and how many bytes, in off and
 * doff) and its answer (the bytes), or acknowledgements alone.  A read
 * and its answer are not acknowledged: the answer is the reader's. */
enum { OWN_SIG, OWN_ADD, OWN_ACK, OWN_PUT, OWN_GET, OWN_GOT };

/* The most bytes a message carries after its header: more follow in a
 * message of their own, which the peer receives straight into place. */
#define APART_MIN ((size_t)16 << 10)

struct ownmsg {
  int32_t kind;   /* OWN_* */
  int32_t buf;    /* the cell's or the add's buffer */
  int32_t what;   /* a signal's pld_notify_op, an add's pld_dtype */
  int32_t value;  /* a signal's */
  int32_t acks;   /* acknowledgements of the target's messages, carried */
  int32_t dbuf;   /* a signal's or a put's bytes: their buffer */
  uint64_t off;   /* bytes into the target's copy of buffer buf */
  uint64_t doff;  /* a signal's or a put's bytes: into dbuf */
  uint64_t apart; /* bytes for dbuf sent in a message of their own */
};

/* Sends g (and the bn bytes at body after it) to world rank peer, with
 * the acknowledgements this rank owes it.  Returns the MPI status. */
static int send_own(struct pld__mpi_prog *m, int peer, struct ownmsg *g,
                    const void *body, size_t bn, int alone) {
  struct pld__mpi_peer *p = &m->peers[peer];
  g->acks = p->owed;
  g->apart = g->kind != OWN_ADD && bn > APART_MIN ? bn : 0;
  int rc = send_parts(m, peer, PLD__MPI_TAG_OWN, g, sizeof *g, body, bn,
                      g->apart > 0);
  if (rc != MPI_SUCCESS)
    return rc;
  m->nowed -= p->owed;
  p->owed = 0;
  if (g->kind == OWN_ACK || g->kind == OWN_GET || g->kind == OWN_GOT)
    return rc;
  p->sent++;
  m->nunacked++;
  if (bn) {
    p->last_write = p->sent;
    if (!alone)
      p->last_shared = p->sent;
    m->last_in[(g->kind == OWN_ADD ? g->buf : g->dbuf) * m->n + peer] = p->sent;
  }
  if (g->kind == OWN_ADD)
    p->last_add = p->sent;
  atomic_store_explicit(&m->any_dirty, 1, memory_order_relaxed);
  return rc;
}

int pld__mpi_sig_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      int32_t value, pld_notify_op op, int dbuf, size_t doff,
                      const void *data, size_t n, int alone) {
  struct ownmsg g = {OWN_SIG, buf, (int32_t)op, value, 0, dbuf, off, doff, 0};
  return send_own(m, peer, &g, data, n, alone);
}

/* One turn of a wait in MPI for the peers: the next message of the
 * fabric's own taken, then the acknowledgements owed sent.  Returns the
 * MPI status. */
static int take_and_ack(struct pld__mpi_prog *m) {
  int rc = pld__mpi_take_own(m);
  return rc == MPI_SUCCESS && m->nowed ? pld__mpi_acks_send(m) : rc;
}

/* Waits, taking messages, until n more bytes in flight stay within
 * PLD__MPI_MSG_FLIGHT (or nothing is in flight).  Returns the MPI
 * status. */
static int make_room(struct pld__mpi_prog *m, size_t n) {
  int rc = MPI_SUCCESS;
  while (rc == MPI_SUCCESS && m->out_bytes > 0 &&
         m->out_bytes + n > PLD__MPI_MSG_FLIGHT)
    if (!reap_sent(m, 0))
      rc = take_and_ack(m);
  return rc;
}

int pld__mpi_put_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      const void *src, size_t n, int alone) {
  int rc = MPI_SUCCESS;
  for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += PLD__MPI_MSG_PIECE) {
    size_t len = pld__mpi_piece(n, at, PLD__MPI_MSG_PIECE);
    struct ownmsg g = {OWN_PUT, buf, 0, 0, 0, buf, off + at, off + at, 0};
    if ((rc = make_room(m, len)) == MPI_SUCCESS)
      rc = send_own(m, peer, &g, (const unsigned char *)src + at, len, alone);
  }
  return rc;
}

int pld__mpi_get_recv(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      void *dst, size_t n) {
  int rc = MPI_SUCCESS;
  for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += PLD__MPI_MSG_PIECE) {
    size_t len = pld__mpi_piece(n, at, PLD__MPI_MSG_PIECE);
    struct ownmsg g = {OWN_GET, buf, 0, 0, 0, 0, off + at, len, 0};
    m->get_to = (unsigned char *)dst + at;
    rc = send_own(m, peer, &g, NULL, 0, 0);
    /* Serving the others meanwhile (a peer may be reading from here). */
    while (rc == MPI_SUCCESS && m->get_to)
      rc = take_and_ack(m);
  }
  m->get_to = NULL;
  return rc;
}

int pld__mpi_add_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      const void *src, size_t count, pld_dtype dtype) {
  const size_t es = pld_dtype_size(dtype), most = PLD__MPI_MSG_PIECE / es;
  int rc = MPI_SUCCESS;
  for (size_t at = 0; at < count && rc == MPI_SUCCESS; at += most) {
    size_t len = pld__mpi_piece(count, at, most);
    struct ownmsg g = {OWN_ADD, buf, (int32_t)dtype, 0, 0, 0, off + at * es,
                       0,       0};
    if ((rc = make_room(m, len * es)) == MPI_SUCCESS)
      rc = send_own(m, peer, &g, (const unsigned char *)src + at * es, len * es,
                    0);
  }
  return rc;
}

/* count of this rank's messages to world rank q are acknowledged. */
static void acked(struct pld__mpi_prog *m, int q, int32_t count) {
  m->peers[q].acked += (uint32_t)count;
  m->nunacked -= count;
}

/* Whether count `at` of messages sent to a rank is not acknowledged. */
static int beyond(uint32_t at, uint32_t acked) {
  return (int32_t)(at - acked) > 0;
}

/* The bytes a message from world rank src brought to `to`: the n at data
 * after its header, or (g->apart) its next message, received in place. */
static int land(struct pld__mpi_prog *m, int src, const struct ownmsg *g,
                unsigned char *to, const unsigned char *data, size_t n) {
  if (g->apart)
    return MPI_Recv(to, (int)g->apart, MPI_BYTE, src, PLD__MPI_TAG_OWN, m->comm,
                    MPI_STATUS_IGNORE);
  if (n)
    memcpy(to, data, n);
  return MPI_SUCCESS;
}

/* A message that changes this rank's copy (g->kind OWN_SIG, OWN_ADD,
 * OWN_PUT) from world rank src: applied (the writes flushed before it was
 * sent are here: MPI_Win_sync; the bytes it carries written; then a
 * signal's cell as the shared-memory fabric's, the doorbell rung) or
 * elements added (each atomically), owing src an acknowledgement
 * (pld__mpi_acks_send).  Every atomic on a buffer's copies is so made by
 * a CPU of the node that holds them, never by MPI: atomic among
 * themselves. */
static int apply(struct pld__mpi_prog *m, int src, const struct ownmsg *g,
                 const unsigned char *data, size_t n) {
  struct pld__mpi_buf *mb = &m->bufs[g->buf];
  MPI_Win_sync(mb->win);
  int rc = MPI_SUCCESS;
  if (g->kind == OWN_ADD)
    pld__elems_add_atomic(mb->local + g->off, data,
                          n / pld_dtype_size((pld_dtype)g->what),
                          (pld_dtype)g->what);
  else
    rc = land(m, src, g, m->bufs[g->dbuf].local + g->doff, data, n);
  if (rc != MPI_SUCCESS)
    return rc;
  if (g->kind == OWN_SIG)
    pld__shm_signal_at(mb->local + g->off, g->value, (pld_notify_op)g->what,
                       m->bell);
  else
    MPI_Win_sync(mb->win);
  m->peers[src].owed++;
  m->nowed++;
  return MPI_SUCCESS;
}

/* Takes the message of the fabric's own that s probed (its acknowledgements
 * first): applied (apply), a read served (the bytes asked for sent back
 * from this rank's copy as it is now), or the bytes of this rank's read
 * (pld__mpi_get_recv) landed.  Returns the MPI status. */
static int take_own(struct pld__mpi_prog *m, const MPI_Status *s) {
  int bytes = 0;
  MPI_Get_count(s, MPI_BYTE, &bytes);
  struct ownmsg g;
  unsigned char *body = NULL;
  if (bytes > (int)sizeof g && !(body = malloc((size_t)bytes)))
    return MPI_ERR_NO_MEM;
  const int src = s->MPI_SOURCE;
  int rc = MPI_Recv(body ? (void *)body : (void *)&g, bytes, MPI_BYTE, src,
                    PLD__MPI_TAG_OWN, m->comm, MPI_STATUS_IGNORE);
  if (body)
    memcpy(&g, body, sizeof g);
  if (rc != MPI_SUCCESS || bytes < (int)sizeof g) {
    free(body);
    return rc != MPI_SUCCESS ? rc : MPI_ERR_TRUNCATE;
  }
  acked(m, src, g.acks);
  const unsigned char *data = body ? body + sizeof g : NULL;
  const size_t n = (size_t)bytes - sizeof g;
  if (g.kind == OWN_GET) {
    struct pld__mpi_buf *mb = &m->bufs[g.buf];
    MPI_Win_sync(mb->win);
    struct ownmsg r = {OWN_GOT, 0, 0, 0, 0, 0, 0, 0, 0};
    rc = send_own(m, src, &r, mb->local + g.off, (size_t)g.doff, 0);
  } else if (g.kind == OWN_GOT) {
    rc = land(m, src, &g, m->get_to, data, n);
    m->get_to = NULL;
  } else if (g.kind != OWN_ACK)
    rc = apply(m, src, &g, data, n);
  free(body);
  return rc;
}

int pld__mpi_acks_send(struct pld__mpi_prog *m) {
  int rc = MPI_SUCCESS;
  for (int q = 0; q < m->n && m->nowed > 0; q++)
    if (m->peers[q].owed > 0) {
      struct ownmsg g = {OWN_ACK, 0, 0, 0, 0, 0, 0, 0, 0};
      int r = send_own(m, q, &g, NULL, 0, 0);
      if (r != MPI_SUCCESS)
        rc = r;
    }
  return rc;
}

int pld__mpi_take_own(struct pld__mpi_prog *m) {
  int flag = 0;
  MPI_Status s;
  int rc = MPI_Iprobe(MPI_ANY_SOURCE, PLD__MPI_TAG_OWN, m->comm, &flag, &s);
  return rc == MPI_SUCCESS && flag ? take_own(m, &s) : rc;
}

/* Whether a message sent from here awaits its acknowledgement for the
 * caller of pld__mpi_acked. */
static int awaited(struct pld__mpi_prog *m, int peer, int which) {
  const struct pld__mpi_peer *p = peer >= 0 ? &m->peers[peer] : NULL;
  if (!m->nunacked) /* every message acknowledged: no scan of the peers */
    return 0;
  if (which == PLD__ACKED_OTHERS)
    return m->nunacked > (p ? (int)(p->sent - p->acked) : 0);
  if (which == PLD__ACKED_WRITES_TO)
    return beyond(p->last_write, p->acked);
  if (which >= PLD__ACKED_WRITES_IN)
    return beyond(m->last_in[(which - PLD__ACKED_WRITES_IN) * m->n + peer],
                  p->acked);
  for (int q = 0; q < m->n; q++) {
    const struct pld__mpi_peer *o = &m->peers[q];
    if (q != peer &&
        beyond(which == PLD__ACKED_ADDS ? o->last_add : o->last_shared,
               o->acked))
      return 1;
  }
  return 0;
}

int pld__mpi_acked(struct pld__mpi_prog *m, int peer, int which) {
  int rc = MPI_SUCCESS;
  while (rc == MPI_SUCCESS && awaited(m, peer, which))
    rc = take_and_ack(m);
  return rc;
}

/* A message nobody takes: only a control message that comes after the
 * listener left (nothing else is sent on a program's communicator). */
static void drop_message(struct pld__mpi_prog *m, const MPI_Status *s) {
  int count = 0;
  MPI_Get_count(s, MPI_BYTE, &count);
  unsigned char sink[64], *to = sink;
  if (count > (int)sizeof sink && !(to = malloc((size_t)count))) {
    to = sink;
    count = (int)sizeof sink;
  }
  MPI_Recv(to, count, MPI_BYTE, s->MPI_SOURCE, s->MPI_TAG, m->comm,
           MPI_STATUS_IGNORE);
  if (to != sink)
    free(to);
}

/* Receives the messages that arrived for program m, after its listener's
 * round.  Returns whether any did. */
static int poll_prog(void *arg) {
  struct pld__mpi_prog *m = arg;
  int any = m->out ? reap_sent(m, 0) : 0;
  if (m->listener.poll)
    any |= m->listener.poll(m->listener.arg);
  for (;;) {
    int flag = 0;
    MPI_Status s;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m->comm, &flag, &s);
    if (!flag)
      break;
    any = 1;
    if (s.MPI_TAG == PLD__MPI_TAG_OWN)
      take_own(m, &s);
    else if (!m->listener.message ||
             !m->listener.message(m->listener.arg, m->comm, &s))
      drop_message(m, &s);
  }
  if (m->nowed)
    pld__mpi_acks_send(m);
  return any;
}

/* Whether a device thread of program m sleeps on its doorbell while
 * peers reach it through RMA: what it waits for lands only while the
 * proxy calls into MPI. */
static int prog_waits(void *arg) {
  const struct pld__mpi_prog *m = arg;
  return m->rma &&
         atomic_load_explicit(&m->bell->sleepers, memory_order_relaxed) > 0;
}

/* The bytes of each transfer choose_carry measures, and how many of each
 * kind (the least time counts: the first may set up the connection). */
#define PROBE_BYTES ((size_t)1 << 20)
#define PROBE_REPS 4

/* On communicator c, every process alike: whether a write of PROBE_BYTES
 * lands at least twice as fast as a message (copied first, as
 * pld__mpi_put_send copies it, and answered) than as an MPI_Put and its
 * flush.  Rank r < n / 2 measures with rank r + n / 2 (on another node,
 * where mpirun places ranks by node), all pairs at once, each pair's
 * least times summed over the pairs (a crowded node slows some pairs'
 * transfers of either kind). */
static int messages_faster(MPI_Comm c) {
  int me, n;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &n);
  const int half = n / 2, lead = me < half;
  const int peer = lead ? me + half : me - half < half ? me - half : -1;
  unsigned char *src = calloc(1, PROBE_BYTES), *copy = malloc(PROBE_BYTES);
  int ok = src && copy;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c);
  unsigned char *mem;
  MPI_Win w;
  if (!ok || MPI_Win_allocate((MPI_Aint)PROBE_BYTES, 1, MPI_INFO_NULL, c, &mem,
                              &w) != MPI_SUCCESS) {
    free(src);
    free(copy);
    return 0;
  }
  MPI_Win_lock_all(MPI_MODE_NOCHECK, w);
  int64_t put = INT64_MAX, msg = INT64_MAX;
  for (int i = 0; i < PROBE_REPS && peer >= 0; i++) {
    if (!lead) {
      /* Inside MPI while the put lands, then the message. */
      MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, c, MPI_STATUS_IGNORE);
      MPI_Recv(copy, (int)PROBE_BYTES, MPI_BYTE, peer, 1, c, MPI_STATUS_IGNORE);
      MPI_Send(NULL, 0, MPI_BYTE, peer, 2, c);
      continue;
    }
    int64_t t0 = pld__now_ns();
    MPI_Put(src, (int)PROBE_BYTES, MPI_BYTE, peer, 0, (int)PROBE_BYTES,
            MPI_BYTE, w);
    MPI_Win_flush(peer, w);
    int64_t t1 = pld__now_ns();
    MPI_Send(NULL, 0, MPI_BYTE, peer, 0, c);
    int64_t t2 = pld__now_ns();
    memcpy(copy, src, PROBE_BYTES);
    MPI_Send(copy, (int)PROBE_BYTES, MPI_BYTE, peer, 1, c);
    MPI_Recv(NULL, 0, MPI_BYTE, peer, 2, c, MPI_STATUS_IGNORE);
    int64_t t3 = pld__now_ns();
    put = t1 - t0 < put ? t1 - t0 : put;
    msg = t3 - t2 < msg ? t3 - t2 : msg;
  }
  double t[2] = {lead ? (double)put : 0, lead ? (double)msg : 0};
  MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_SUM, c);
  MPI_Win_unlock_all(w);
  MPI_Win_free(&w);
  free(src);
  free(copy);
  return half > 0 && 2 * t[1] <= t[0];
}

/* m->carry: PLD_MPI_CARRY_KB, or where that is -1, all sizes or none as
 * messages_faster finds, once per process (on the first program with RMA
 * peers).  Processes may see different settings (a job's ranks may set
 * their own environment): every process joins the measurement while any
 * needs it, so that none waits in it alone. */
static void choose_carry(struct pld__mpi_prog *m) {
  static int faster = -1; /* not measured yet; the proxy's alone */
  const int64_t kb = pld__tunables()->PLD_MPI_CARRY_KB;
  if (faster < 0) {
    int need[2] = {kb < 0, m->rma};
    MPI_Allreduce(MPI_IN_PLACE, need, 2, MPI_INT, MPI_MAX, m->comm);
    if (need[0] && need[1]) {
      MPI_Comm c;
      MPI_Comm_dup(m->comm, &c);
      faster = messages_faster(c);
      MPI_Comm_free(&c);
    }
  }
  m->carry = kb >= 0 ? (size_t)kb << 10 : faster > 0 ? SIZE_MAX : 0;
}

static void do_create(void *arg) {
  struct create_args *a = arg;
  struct pld__mpi_prog *m = a->m;
  int st = PLD_OK;
  MPI_Comm_dup(pld__mpi_world(), &m->comm);
  m->node = MPI_COMM_NULL;
  MPI_Barrier(m->comm);
  for (int b = 0; b < m->set.nbufs && !st; b++)
    st = make_buf(m, b);
  if (!st)
    st = make_bells(m);
  /* Every process must agree before any uses the windows. */
  int ok = st == PLD_OK, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, m->comm);
  if (!st && !all_ok)
    st = pld__fail(PLD_ERR_SYSTEM,
                   "the MPI fabric: another process failed to create the "
                   "program's windows");
  a->st = st;
  if (st)
    pld__catf(a->msg, sizeof a->msg, "%s", pld_last_error());
  else {
    choose_carry(m);
    m->poller = (struct pld__mpi_poller){poll_prog, prog_waits, m, NULL};
    pld__mpi_poller_add(&m->poller);
  }
}

int pld__mpi_win_create(struct pld__mpi_prog *m) {
  struct create_args a = {m, PLD_OK, ""};
  pld__mpi_call(do_create, &a, NULL);
  if (a.st) {
    /* The collective part failed everywhere alike: what exists stays. */
    return pld__fail_api(a.st, "%s", a.msg);
  }
  return PLD_OK;
}

struct destroy_args {
  struct pld__mpi_prog *m;
  int abandon;
};

static void do_destroy(void *arg) {
  struct destroy_args *a = arg;
  struct pld__mpi_prog *m = a->m;
  pld__mpi_poller_remove(&m->poller);
  if (a->abandon)
    return;
  reap_sent(m, 1);
  for (int b = 0; b < m->set.nbufs; b++) {
    struct pld__mpi_buf *mb = &m->bufs[b];
    if (mb->win != MPI_WIN_NULL) {
      MPI_Win_flush_all(mb->win);
      MPI_Win_unlock_all(mb->win);
      MPI_Win_free(&mb->win);
    }
    if (mb->shwin != MPI_WIN_NULL)
      MPI_Win_free(&mb->shwin);
    if (mb->comm != MPI_COMM_NULL)
      MPI_Comm_free(&mb->comm);
  }
  if (m->bellwin != MPI_WIN_NULL)
    MPI_Win_free(&m->bellwin);
  if (m->node != MPI_COMM_NULL)
    MPI_Comm_free(&m->node);
  MPI_Comm_free(&m->comm);
}

void pld__mpi_win_destroy(struct pld__mpi_prog *m, int abandon) {
  struct destroy_args a = {m, abandon};
  pld__mpi_call(do_destroy, &a, NULL);
}

_Atomic uint32_t *pld__mpi_awake(struct pld__mpi_prog *m) { return m->awake; }

uint32_t pld__mpi_node_cpus(struct pld__mpi_prog *m) { return m->node_cpus; }

void pld__mpi_zero(struct pld__mpi_prog *m) {
  for (int b = 0; b < m->set.nbufs; b++)
    if (m->bufs[b].member)
      memset(m->bufs[b].local, 0, m->bufs[b].bytes);
}

void pld__mpi_zero_bytes(struct pld__mpi_prog *m, int buf, size_t off,
                         size_t n) {
  if (m->bufs[buf].member)
    memset((unsigned char *)m->bufs[buf].local + off, 0, n);
}

void pld__mpi_running(struct pld__mpi_prog *m, int on) {
  if (atomic_exchange(&m->running, on) == on)
    return;
  pld__mpi_proxy_running(on ? 1 : -1, m->rma);
}

MPI_Comm pld__mpi_comm(const struct pld__mpi_prog *m) { return m->comm; }

void pld__mpi_listen(struct pld__mpi_prog *m,
                     const struct pld__mpi_listener *l) {
  static const struct pld__mpi_listener none = {NULL, NULL, NULL};
  m->listener = l ? *l : none;
}

void pld__mpi_sent_wait(struct pld__mpi_prog *m) { reap_sent(m, 1); }

void pld__mpi_wake(struct pld__mpi_prog *m) {
  atomic_fetch_add(&m->bell->count, 1);
  pld__futex_wake(&m->bell->count, 1);
}
