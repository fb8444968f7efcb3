/* host/ctl_mpi_msg.c: the MPI control plane's messages (see
 * host/ctl_mpi_msg.h).  Every MPI call is made on the proxy thread
 * (fabric/mpi_proxy.h): the host thread's calls wait for it there, and the
 * messages that arrive are received there, in the proxy's rounds, through
 * the listener the program's fabric calls. */
#include "host/ctl_mpi_msg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/futex.h"
#include "fabric/mpi_proxy.h"

enum {
  TAG_SNAP = PLD__MPI_TAG_FREE, /* on a communicator of their own */
  TAG_ABORT,
  TAG_VERDICT,
  TAG_COUNT /* + PLD__MPI_TASKS, PLD__MPI_ASKS */
};

struct pld__mpi_msg {
  struct pld__mpi_prog *m;
  MPI_Comm comm; /* the program's */
  int me, n;
  size_t snap_bytes;
  struct pld__mpi_msg_hooks hooks;
  /* Snapshots (process 0 keeps the latest of each process) and the
   * verdict (the other processes). */
  pthread_mutex_t mu;
  unsigned char *stage; /* [proc * snap_bytes] */
  uint32_t *stage_gen;
  /* Snapshots go on a communicator of their own.  A process sends process
   * 0 one at a time: while one is in flight (snap_req), a newer one waits
   * in snap_next, replaced by the next (only the latest counts), and goes
   * once the one in flight has landed.  Process 0 has a receive posted for
   * each other process at all times (snap_in, landing in snap_land): its
   * proxy never waits in a receive for one (a snapshot is 70 KiB, sent
   * in two steps; on a busy machine process 0's proxy waited for one for
   * minutes, with the main thread's look waiting for the stage), and a
   * machine that runs process 0 late never piles them up. */
  MPI_Comm snap_comm;
  MPI_Request snap_req;
  unsigned char *snap_buf, *snap_next;
  int snap_waiting;
  MPI_Request *snap_in;     /* [proc] (process 0) */
  unsigned char *snap_land; /* [proc * snap_bytes] (process 0) */
  unsigned char *verdict;
  int verdict_in;
  size_t verdict_bytes;
  _Atomic uint32_t said[PLD__MPI_COUNTS]; /* the counts process 0 said */
};

static void free_msg(struct pld__mpi_msg *c) {
  free(c->stage);
  free(c->stage_gen);
  free(c->verdict);
  free(c->snap_buf);
  free(c->snap_in);
  free(c->snap_land);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static void control_event(struct pld__mpi_msg *c) {
  pld__event_signal(c->hooks.event, c->hooks.event_sleepers, 1);
}

/* Process 0: the receive of process q's next snapshot. */
static void snap_post(struct pld__mpi_msg *c, int q) {
  size_t n = c->snap_bytes;
  MPI_Irecv(c->snap_land + (size_t)q * n, (int)n, MPI_BYTE, q, TAG_SNAP,
            c->snap_comm, &c->snap_in[q]);
}

/* The snapshot in flight has landed (or none was in flight): the one
 * waiting, if any, goes. */
static int snap_send_next(struct pld__mpi_msg *c) {
  int done = 1;
  if (c->snap_req != MPI_REQUEST_NULL)
    MPI_Test(&c->snap_req, &done, MPI_STATUS_IGNORE);
  if (!done || !c->snap_waiting)
    return 0;
  memcpy(c->snap_buf, c->snap_next, c->snap_bytes);
  c->snap_waiting = 0;
  MPI_Isend(c->snap_buf, (int)c->snap_bytes, MPI_BYTE, 0, TAG_SNAP,
            c->snap_comm, &c->snap_req);
  return 1;
}

/* Process 0: the snapshots that landed are staged (the latest of each
 * process; one process's land in the order sent), and their receives
 * posted again.  Returns whether any landed. */
static int snap_take(struct pld__mpi_msg *c) {
  int any = 0;
  for (int q = 0; c->snap_in && q < c->n; q++) {
    int done = 0;
    if (c->snap_in[q] == MPI_REQUEST_NULL)
      continue;
    MPI_Test(&c->snap_in[q], &done, MPI_STATUS_IGNORE);
    if (!done)
      continue;
    size_t n = c->snap_bytes;
    pthread_mutex_lock(&c->mu);
    memcpy(c->stage + (size_t)q * n, c->snap_land + (size_t)q * n, n);
    c->stage_gen[q]++;
    pthread_mutex_unlock(&c->mu);
    snap_post(c, q);
    any = 1;
  }
  if (any)
    control_event(c);
  return any;
}

/* An abort arrived (or is made here): the device's threads see it. */
static void apply_abort(struct pld__mpi_msg *c, uint32_t why) {
  atomic_store_explicit(c->hooks.abort, why, memory_order_release);
  pld__mpi_wake(c->m);
  /* A device waiting for a host task reads the abort word after the count
   * (device.c: await_tasks): the count moves, or a device still polling
   * it would miss the wake. */
  atomic_fetch_add(c->hooks.tasks, 1);
  pld__futex_wake(c->hooks.tasks, 1);
}

/* The listener's round, before the fabric receives what arrived. */
static int msg_poll(void *arg) {
  struct pld__mpi_msg *c = arg;
  int any = snap_send_next(c);
  any |= snap_take(c);
  return any;
}

/* Receives a control message that arrived (s: its probe). */
static int msg_receive(void *arg, MPI_Comm comm, const MPI_Status *s) {
  struct pld__mpi_msg *c = arg;
  if (s->MPI_TAG == TAG_ABORT) {
    uint32_t why = 0;
    MPI_Recv(&why, (int)sizeof why, MPI_BYTE, s->MPI_SOURCE, TAG_ABORT, comm,
             MPI_STATUS_IGNORE);
    apply_abort(c, why);
  } else if (s->MPI_TAG >= TAG_COUNT &&
             s->MPI_TAG < TAG_COUNT + PLD__MPI_COUNTS) {
    uint32_t k = 0;
    MPI_Recv(&k, (int)sizeof k, MPI_BYTE, s->MPI_SOURCE, s->MPI_TAG, comm,
             MPI_STATUS_IGNORE);
    atomic_store_explicit(&c->said[s->MPI_TAG - TAG_COUNT], k,
                          memory_order_release);
  } else if (s->MPI_TAG == TAG_VERDICT) {
    pthread_mutex_lock(&c->mu);
    MPI_Recv(c->verdict, (int)c->verdict_bytes, MPI_BYTE, s->MPI_SOURCE,
             TAG_VERDICT, comm, MPI_STATUS_IGNORE);
    c->verdict_in = 1;
    pthread_mutex_unlock(&c->mu);
  } else {
    return 0;
  }
  control_event(c);
  return 1;
}

static void msg_open(void *arg) {
  struct pld__mpi_msg *c = arg;
  MPI_Comm_dup(c->comm, &c->snap_comm);
  for (int q = 0; c->snap_in && q < c->n; q++)
    if (q != c->me)
      snap_post(c, q);
  struct pld__mpi_listener l = {msg_poll, msg_receive, c};
  pld__mpi_listen(c->m, &l);
}

int pld__mpi_msg_create(struct pld__mpi_prog *m,
                        const struct pld__mpi_msg_setup *s,
                        struct pld__mpi_msg **out) {
  struct pld__mpi_msg *c = calloc(1, sizeof *c);
  if (!c)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  c->m = m;
  c->comm = pld__mpi_comm(m);
  c->me = pld__mpi_rank();
  c->n = s->nranks;
  c->snap_bytes = s->snap_bytes;
  c->hooks = s->hooks;
  pthread_mutex_init(&c->mu, NULL);
  c->stage = calloc((size_t)c->n, s->snap_bytes);
  c->stage_gen = calloc((size_t)c->n, sizeof *c->stage_gen);
  c->verdict_bytes = s->snap_bytes;
  c->verdict = calloc(1, s->snap_bytes);
  c->snap_req = MPI_REQUEST_NULL;
  c->snap_buf = calloc(2, s->snap_bytes);
  c->snap_next = c->snap_buf ? c->snap_buf + s->snap_bytes : NULL;
  if (c->me == 0) {
    c->snap_in = calloc((size_t)c->n, sizeof *c->snap_in);
    c->snap_land = calloc((size_t)c->n, s->snap_bytes);
    for (int q = 0; c->snap_in && q < c->n; q++)
      c->snap_in[q] = MPI_REQUEST_NULL;
  }
  if (!c->stage || !c->stage_gen || !c->verdict || !c->snap_buf ||
      (c->me == 0 && (!c->snap_in || !c->snap_land))) {
    free_msg(c);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  pld__mpi_call(msg_open, c, NULL);
  *out = c;
  return PLD_OK;
}

struct msg_close_args {
  struct pld__mpi_msg *c;
  int abandon;
};

static void msg_close(void *arg) {
  struct msg_close_args *a = arg;
  struct pld__mpi_msg *c = a->c;
  pld__mpi_listen(c->m, NULL);
  if (a->abandon)
    return;
  pld__mpi_sent_wait(c->m);
  /* A snapshot still in flight (an answer to an ask that came after the
   * run ended) lands before its process goes on, and process 0 takes
   * snapshots in until every process has come here; one waiting behind
   * it is of no use any more. */
  MPI_Wait(&c->snap_req, MPI_STATUS_IGNORE);
  MPI_Request here;
  MPI_Ibarrier(c->comm, &here);
  for (int done = 0; !done;) {
    snap_take(c);
    MPI_Test(&here, &done, MPI_STATUS_IGNORE);
  }
  /* No snapshot comes any more. */
  for (int q = 0; c->snap_in && q < c->n; q++)
    if (c->snap_in[q] != MPI_REQUEST_NULL) {
      MPI_Cancel(&c->snap_in[q]);
      MPI_Wait(&c->snap_in[q], MPI_STATUS_IGNORE);
    }
  MPI_Comm_free(&c->snap_comm);
}

void pld__mpi_msg_destroy(struct pld__mpi_msg *c, int abandon) {
  if (!c)
    return;
  struct msg_close_args a = {c, abandon};
  pld__mpi_call(msg_close, &a, NULL);
  if (!abandon)
    free_msg(c);
}

void pld__mpi_msg_running(struct pld__mpi_msg *c, int on) {
  if (on) /* a new run: no host task said yet */
    atomic_store(&c->said[PLD__MPI_TASKS], 0);
  pld__mpi_running(c->m, on);
}

/* ---- collectives of the host threads ------------------------------------ */

struct coll_args {
  struct pld__mpi_msg *c;
  void *buf;
  size_t n;
  int root, rc;
};

static void barrier_on_proxy(void *arg) {
  struct coll_args *a = arg;
  a->rc = MPI_Barrier(a->c->comm);
}

static void bcast_on_proxy(void *arg) {
  struct coll_args *a = arg;
  for (size_t at = 0; at < a->n && a->rc == MPI_SUCCESS; at += PLD__MPI_PIECE) {
    size_t len = a->n - at < PLD__MPI_PIECE ? a->n - at : PLD__MPI_PIECE;
    a->rc = MPI_Bcast((unsigned char *)a->buf + at, (int)len, MPI_BYTE, a->root,
                      a->c->comm);
  }
}

int pld__mpi_msg_barrier(struct pld__mpi_msg *c) {
  struct coll_args a = {c, NULL, 0, 0, MPI_SUCCESS};
  pld__mpi_call(barrier_on_proxy, &a, NULL);
  return a.rc == MPI_SUCCESS ? PLD_OK : pld__mpi_failed(a.rc, "MPI_Barrier");
}

int pld__mpi_msg_bcast(struct pld__mpi_msg *c, void *buf, size_t n, int root) {
  struct coll_args a = {c, buf, n, root, MPI_SUCCESS};
  pld__mpi_call(bcast_on_proxy, &a, NULL);
  return a.rc == MPI_SUCCESS ? PLD_OK : pld__mpi_failed(a.rc, "MPI_Bcast");
}

/* ---- control messages --------------------------------------------------- */

struct send_args {
  struct pld__mpi_msg *c;
  const void *buf;
  size_t n;
  int to, tag, rc;
};

static void send_on_proxy(void *arg) {
  struct send_args *a = arg;
  a->rc = pld__mpi_send(a->c->m, a->to, a->tag, a->buf, a->n);
}

static int send_to(struct pld__mpi_msg *c, int to, int tag, const void *buf,
                   size_t n) {
  struct send_args a = {c, buf, n, to, tag, MPI_SUCCESS};
  pld__mpi_call(send_on_proxy, &a, NULL);
  return a.rc == MPI_SUCCESS ? PLD_OK : pld__mpi_failed(a.rc, "MPI_Send");
}

static void snapshot_on_proxy(void *arg) {
  struct send_args *a = arg;
  struct pld__mpi_msg *c = a->c;
  memcpy(c->snap_next, a->buf, a->n);
  c->snap_waiting = 1;
  snap_send_next(c);
}

int pld__mpi_msg_send_snapshot(struct pld__mpi_msg *c, const void *buf,
                               size_t n) {
  struct send_args a = {c, buf,      n < c->snap_bytes ? n : c->snap_bytes,
                        0, TAG_SNAP, MPI_SUCCESS};
  pld__mpi_call(snapshot_on_proxy, &a, NULL);
  return PLD_OK;
}

int pld__mpi_msg_snapshot(struct pld__mpi_msg *c, int from, void *buf, size_t n,
                          uint32_t *gen) {
  int fresh = 0;
  pthread_mutex_lock(&c->mu);
  if (c->stage_gen[from] != *gen) {
    memcpy(buf, c->stage + (size_t)from * c->snap_bytes, n);
    *gen = c->stage_gen[from];
    fresh = 1;
  }
  pthread_mutex_unlock(&c->mu);
  return fresh;
}

int pld__mpi_msg_abort(struct pld__mpi_msg *c, uint32_t why) {
  apply_abort(c, why);
  return send_to(c, -1, TAG_ABORT, &why, sizeof why);
}

int pld__mpi_msg_send_verdict(struct pld__mpi_msg *c, const void *v, size_t n) {
  return send_to(c, -1, TAG_VERDICT, v, n);
}

int pld__mpi_msg_verdict(struct pld__mpi_msg *c, void *v, size_t n) {
  pthread_mutex_lock(&c->mu);
  int in = c->verdict_in;
  if (in)
    memcpy(v, c->verdict, n);
  c->verdict_in = 0;
  pthread_mutex_unlock(&c->mu);
  return in;
}

int pld__mpi_msg_say(struct pld__mpi_msg *c, int what, uint32_t k) {
  atomic_store(&c->said[what], k);
  return send_to(c, -1, TAG_COUNT + what, &k, sizeof k);
}

uint32_t pld__mpi_msg_said(struct pld__mpi_msg *c, int what) {
  return atomic_load_explicit(&c->said[what], memory_order_acquire);
}
