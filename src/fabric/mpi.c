/* fabric/mpi.c: the MPI-3 RMA fabric and its proxy thread (see
 * fabric/mpi.h).  Without MPI at build time only the stubs at the end are
 * built: they say the build has no MPI fabric. */
#include "fabric/mpi.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int pld__mpi_launched(void) {
  /* Open MPI, PMIx launchers, MPICH's hydra. */
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
         getenv("PMI_SIZE");
}

#ifdef PLD_HAVE_MPI

#include <mpi.h>
#include <pthread.h>
#include <sys/prctl.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "fabric/shm.h"
#include "tile/convert.h"

int pld__mpi_built(void) { return 1; }

enum {
  TAG_BELL = 1,
  TAG_SNAP = 2,
  TAG_ABORT = 3,
  TAG_VERDICT = 4,
  TAG_COUNT = 5 /* + PLD__MPI_TASKS, PLD__MPI_ASKS */
};

/* MPI counts are int: larger transfers go in pieces of this many bytes. */
#define PIECE ((size_t)1 << 30)

/* ---- the proxy thread ---------------------------------------------------- */

/* A request: fn runs on the proxy thread; the caller sleeps on done. */
struct call {
  void (*fn)(void *arg);
  void *arg;
  struct call *next;
  _Atomic uint32_t done;
  _Atomic uint32_t sleepers;
};

static struct {
  pthread_once_t once;
  pthread_t thread;
  int started, ok;
  char why[PLD__MSG_MAX];
  int own_mpi; /* pld initialised MPI (and finalises it) */
  int size, rank;
  int *node, *local; /* [proc]: node index and rank on the node */
  MPI_Comm world;
  pthread_mutex_t mu;
  struct call *head, **tail;
  _Atomic uint32_t queued; /* bumped on every request: the proxy sleeps on it */
  _Atomic uint32_t queue_sleepers;
  _Atomic int running, running_rma; /* runs in progress (with RMA peers) */
  _Atomic int stop;
  _Atomic uint32_t init_done;
  struct pld__mpi_prog *progs; /* touched by the proxy thread only */
} px = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int on_proxy;
static _Atomic uint32_t host_awake; /* the awake count of host threads */

static struct pld__spin default_spin(void) {
  struct pld__spin s = {pld__tunables()->PLD_SPIN_US * 1000, &host_awake, NULL,
                        pld__cpus(), 0};
  return s;
}

/* Runs fn(arg) on the proxy thread and waits for it. */
static void proxy_call(void (*fn)(void *), void *arg,
                       const struct pld__spin *spin) {
  if (on_proxy) {
    fn(arg);
    return;
  }
  /* The request lives as long as its thread, not on the stack: the proxy
   * may still be looking at its sleepers when the caller sees it done. */
  static _Thread_local struct call c;
  c.fn = fn;
  c.arg = arg;
  c.next = NULL;
  atomic_store_explicit(&c.done, 0, memory_order_relaxed);
  pthread_mutex_lock(&px.mu);
  *px.tail = &c;
  px.tail = &c.next;
  pthread_mutex_unlock(&px.mu);
  pld__event_signal(&px.queued, &px.queue_sleepers, 0);
  struct pld__spin dflt;
  if (!spin) {
    dflt = default_spin();
    spin = &dflt;
  }
  while (!atomic_load_explicit(&c.done, memory_order_acquire))
    pld__event_wait(&c.done, 0, &c.sleepers, spin, -1, 0);
}

static int drain(void) {
  pthread_mutex_lock(&px.mu);
  struct call *c = px.head;
  px.head = NULL;
  px.tail = &px.head;
  pthread_mutex_unlock(&px.mu);
  int any = 0;
  while (c) {
    struct call *next = c->next; /* c is gone once done is set */
    c->fn(c->arg);
    pld__event_signal(&c->done, &c->sleepers, 0);
    c = next;
    any = 1;
  }
  return any;
}

static int poll_programs(void);
struct pld__mpi_prog;
static int reap_sent(struct pld__mpi_prog *m, int wait);

/* Every process reaches the end before any leaves: UCX over TCP reports
 * an endpoint timeout when a peer has gone while it still disconnects. */
static void finalize(void) {
  if (!px.own_mpi)
    return;
  MPI_Barrier(px.world);
  MPI_Comm_free(&px.world);
  MPI_Finalize();
}

static int init_mpi(void) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (inited) {
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      pld__catf(px.why, sizeof px.why,
                "MPI was initialised by the program with thread level %d; "
                "pld calls MPI from a thread of its own, which needs "
                "MPI_THREAD_SERIALIZED, or let pld initialise MPI",
                provided);
      return 0;
    }
  } else {
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS) {
      pld__catf(px.why, sizeof px.why, "MPI_Init_thread failed");
      return 0;
    }
    px.own_mpi = 1;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &px.world);
  MPI_Comm_size(px.world, &px.size);
  MPI_Comm_rank(px.world, &px.rank);
  /* Node index of every process: the lowest world rank on each node,
   * numbered in order. */
  MPI_Comm node;
  MPI_Comm_split_type(px.world, MPI_COMM_TYPE_SHARED, px.rank, MPI_INFO_NULL,
                      &node);
  int mine[2] = {0, px.rank}, *all = malloc(2 * sizeof(int) * (size_t)px.size);
  MPI_Comm_rank(node, &mine[0]);
  int leader = px.rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  mine[1] = leader;
  MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, px.world);
  MPI_Comm_free(&node);
  px.node = calloc((size_t)px.size, sizeof *px.node);
  px.local = calloc((size_t)px.size, sizeof *px.local);
  for (int q = 0; q < px.size; q++) {
    px.local[q] = all[2 * q];
    int idx = 0;
    for (int s = 0; s < px.size; s++) /* distinct leaders below q's */
      idx += all[2 * s + 1] == s && s < all[2 * q + 1];
    px.node[q] = idx;
  }
  free(all);
  return 1;
}

static void *proxy_main(void *arg) {
  (void)arg;
  on_proxy = 1;
  /* Naps of a few microseconds must not become 50. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  px.ok = init_mpi();
  atomic_store(&px.init_done, 1);
  pld__futex_wake(&px.init_done, 0);
  if (!px.ok)
    return NULL;
  int64_t last = pld__now_ns();
  for (;;) {
    uint32_t seen = atomic_load(&px.queued);
    int did = drain();
    if (atomic_load(&px.running) || px.progs)
      did |= poll_programs();
    if (atomic_load(&px.stop) && !did)
      break;
    int64_t now = pld__now_ns();
    if (did) {
      last = now;
      continue;
    }
    int rma = atomic_load(&px.running_rma);
    if (rma && now - last < PLD__US(PLD_MPI_BUSY_US)) {
      sched_yield();
      continue;
    }
    /* The naps (PLD_MPI_NAP_*) follow what the proxy may have to do. */
    int64_t nap = rma                        ? PLD__US(PLD_MPI_NAP_RMA_US)
                  : atomic_load(&px.running) ? PLD__US(PLD_MPI_NAP_RUN_US)
                                             : PLD__US(PLD_MPI_NAP_IDLE_US);
    atomic_fetch_add(&px.queue_sleepers, 1);
    if (atomic_load(&px.queued) == seen && !atomic_load(&px.stop))
      pld__futex_wait(&px.queued, seen, nap, 0);
    atomic_fetch_sub(&px.queue_sleepers, 1);
  }
  finalize();
  return NULL;
}

static void stop_proxy(void) {
  if (!px.started)
    return;
  atomic_store(&px.stop, 1);
  atomic_fetch_add(&px.queued, 1);
  pld__futex_wake(&px.queued, 0);
  pthread_join(px.thread, NULL);
}

static void start_once(void) {
  px.tail = &px.head;
  if (pthread_create(&px.thread, NULL, proxy_main, NULL) != 0) {
    pld__catf(px.why, sizeof px.why, "starting the MPI proxy thread failed");
    return;
  }
  px.started = 1;
  while (!atomic_load(&px.init_done))
    pld__futex_wait(&px.init_done, 0, -1, 0);
  if (px.ok)
    atexit(stop_proxy);
  else
    pthread_join(px.thread, NULL);
}

int pld__mpi_init(const char *fn) {
  pthread_once(&px.once, start_once);
  if (px.ok)
    return PLD_OK;
  return fn ? pld__fail(PLD_ERR_SYSTEM, "%s: the MPI fabric: %s", fn, px.why)
            : PLD_ERR_SYSTEM;
}

int pld__mpi_size(void) { return px.size; }
int pld__mpi_rank(void) { return px.rank; }
int pld__mpi_default_device(int proc, int server_devices) {
  return px.node[proc] * server_devices + px.local[proc];
}

/* ---- a program's windows ---------------------------------------------- */

struct mbuf {
  int member;
  size_t bytes;
  MPI_Comm comm;        /* the domain, or MPI_COMM_NULL */
  MPI_Win win;          /* RMA over the domain, or MPI_WIN_NULL */
  MPI_Win shwin;        /* shared by the domain's node, or MPI_WIN_NULL */
  unsigned char *local; /* this rank's copy */
  int *drank;           /* [world rank]: its rank in comm, -1 if none */
  unsigned char **shm;  /* [world rank]: its copy in shared memory, or NULL */
};

struct mfabric {
  struct pld__fabric base;
  struct pld__mpi_prog *m;
};

struct pld__mpi_prog {
  struct mfabric fab;
  struct pld__mpi_setup set;
  int me, n;
  MPI_Comm comm, node;
  struct mbuf *bufs;
  struct pld__bell *bell;   /* this rank's doorbell */
  _Atomic uint32_t *awake;  /* the node's count of awake threads, or NULL */
  struct pld__bell **bells; /* [world rank]: in shared memory, or NULL */
  MPI_Win bellwin;
  unsigned char *private_bell;
  int rma; /* some peer is reached through RMA */
  /* Buffers and domain ranks written through RMA since the last signal:
   * dirty[buf * n + rank], and the list of them. */
  unsigned char *dirty;
  int *dirty_list, ndirty;
  _Atomic int any_dirty;
  /* Signals sent later whose doorbells wait for the next flush: (world
   * rank, buffer) pairs, at most one per rank. */
  int *late, nlate;
  /* A transfer's pieces not issued yet (write_later, read_later): the
   * next piece continuing it on both sides joins it, so that a transfer in
   * chunks is one MPI_Put or MPI_Get. */
  struct {
    int active, get, buf, peer;
    size_t off, n;
    unsigned char *ptr;
  } pend;
  const struct pld__spin *spin;
  _Atomic int running;
  /* Control: snapshots (process 0 keeps the latest of each process) and
   * the verdict (the other processes). */
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
  _Atomic uint32_t said[PLD__MPI_COUNTS]; /* the counts process 0 said */
  struct outmsg *out; /* control messages in flight (proxy only) */
  size_t verdict_bytes;
  struct pld__mpi_prog *next;
};

/* The failure of an MPI call made by the proxy, composed there. */
static int mpi_failed(int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  s[0] = '\0';
  MPI_Error_string(rc, s, &len);
  return pld__fail(PLD_ERR_SYSTEM, "the MPI fabric: %s: %s", what, s);
}

struct create_args {
  struct pld__mpi_prog *m;
  int st;
  char msg[PLD__MSG_MAX];
};

static int make_buf(struct pld__mpi_prog *m, int b) {
  struct mbuf *mb = &m->bufs[b];
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
    return mpi_failed(rc, "MPI_Comm_create_group");
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
      return mpi_failed(rc, "MPI_Win_allocate_shared (PLD_MPI_SAME_NODE=rma "
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
    return mpi_failed(rc, "creating a window");
  if (mb->win != MPI_WIN_NULL) {
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
    return mpi_failed(rc, "MPI_Win_allocate_shared of the doorbells");
  memset(mine, 0, 128);
  m->bell = (struct pld__bell *)mine;
  MPI_Aint fsz;
  int fdu;
  MPI_Win_shared_query(m->bellwin, 0, &fsz, &fdu, &first);
  m->awake = (_Atomic uint32_t *)(first + 64);
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

static const struct pld__fabric_ops mpi_ops;

static int snap_take(struct pld__mpi_prog *m);

/* Process 0: the receive of process q's next snapshot. */
static void snap_post(struct pld__mpi_prog *m, int q) {
  size_t n = m->set.snap_bytes;
  MPI_Irecv(m->snap_land + (size_t)q * n, (int)n, MPI_BYTE, q, TAG_SNAP,
            m->snap_comm, &m->snap_in[q]);
}

static void do_create(void *arg) {
  struct create_args *a = arg;
  struct pld__mpi_prog *m = a->m;
  int st = PLD_OK;
  MPI_Comm_dup(px.world, &m->comm);
  MPI_Comm_dup(m->comm, &m->snap_comm);
  for (int q = 0; m->snap_in && q < m->n; q++)
    if (q != m->me)
      snap_post(m, q);
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
    m->next = px.progs;
    px.progs = m;
  }
}

int pld__mpi_prog_create(const struct pld__mpi_setup *s,
                         struct pld__mpi_prog **out) {
  struct pld__mpi_prog *m = calloc(1, sizeof *m);
  if (!m)
    return pld__fail(PLD_ERR_NOMEM, "pld_program_prepare: out of memory");
  m->set = *s;
  m->me = px.rank;
  m->n = s->nranks;
  m->fab.base.ops = &mpi_ops;
  m->fab.base.rank = m->me;
  m->fab.m = m;
  pthread_mutex_init(&m->mu, NULL);
  m->bufs = calloc((size_t)(s->nbufs ? s->nbufs : 1), sizeof *m->bufs);
  m->dirty = calloc((size_t)(s->nbufs ? s->nbufs : 1) * (size_t)m->n, 1);
  m->dirty_list =
      calloc((size_t)(s->nbufs ? s->nbufs : 1) * (size_t)m->n, sizeof(int));
  m->late = calloc((size_t)m->n * 2, sizeof *m->late);
  m->stage = calloc((size_t)m->n, s->snap_bytes);
  m->stage_gen = calloc((size_t)m->n, sizeof *m->stage_gen);
  m->verdict_bytes = s->snap_bytes;
  m->verdict = calloc(1, s->snap_bytes);
  m->snap_req = MPI_REQUEST_NULL;
  m->snap_buf = calloc(2, s->snap_bytes);
  m->snap_next = m->snap_buf ? m->snap_buf + s->snap_bytes : NULL;
  if (m->me == 0) {
    m->snap_in = calloc((size_t)m->n, sizeof *m->snap_in);
    m->snap_land = calloc((size_t)m->n, s->snap_bytes);
    for (int q = 0; m->snap_in && q < m->n; q++)
      m->snap_in[q] = MPI_REQUEST_NULL;
  }
  if (!m->bufs || !m->dirty || !m->dirty_list || !m->late || !m->stage ||
      !m->stage_gen || !m->verdict || !m->snap_buf ||
      (m->me == 0 && (!m->snap_in || !m->snap_land))) {
    pld__mpi_prog_destroy(m, 1);
    return pld__fail(PLD_ERR_NOMEM, "pld_program_prepare: out of memory");
  }
  struct create_args a = {m, PLD_OK, ""};
  proxy_call(do_create, &a, NULL);
  if (a.st) {
    /* The collective part failed everywhere alike: what exists stays. */
    return pld__fail(a.st, "pld_program_prepare: %s", a.msg);
  }
  *out = m;
  return PLD_OK;
}

struct destroy_args {
  struct pld__mpi_prog *m;
  int abandon;
};

static void do_destroy(void *arg) {
  struct destroy_args *a = arg;
  struct pld__mpi_prog *m = a->m;
  for (struct pld__mpi_prog **q = &px.progs; *q; q = &(*q)->next)
    if (*q == m) {
      *q = m->next;
      break;
    }
  if (a->abandon)
    return;
  reap_sent(m, 1);
  /* A snapshot still in flight (an answer to an ask that came after the
   * run ended) lands before its process goes on, and process 0 takes
   * snapshots in until every process has come here; one waiting behind
   * it is of no use any more. */
  MPI_Wait(&m->snap_req, MPI_STATUS_IGNORE);
  MPI_Request here;
  MPI_Ibarrier(m->comm, &here);
  for (int done = 0; !done;) {
    snap_take(m);
    MPI_Test(&here, &done, MPI_STATUS_IGNORE);
  }
  /* No snapshot comes any more. */
  for (int q = 0; m->snap_in && q < m->n; q++)
    if (m->snap_in[q] != MPI_REQUEST_NULL) {
      MPI_Cancel(&m->snap_in[q]);
      MPI_Wait(&m->snap_in[q], MPI_STATUS_IGNORE);
    }
  MPI_Comm_free(&m->snap_comm);
  for (int b = 0; b < m->set.nbufs; b++) {
    struct mbuf *mb = &m->bufs[b];
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

void pld__mpi_prog_destroy(struct pld__mpi_prog *m, int abandon) {
  if (!m)
    return;
  if (m->comm) {
    struct destroy_args a = {m, abandon};
    proxy_call(do_destroy, &a, NULL);
  }
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
  free(m->stage);
  free(m->stage_gen);
  free(m->verdict);
  free(m->snap_buf);
  free(m->snap_in);
  free(m->snap_land);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

struct pld__fabric *pld__mpi_fabric(struct pld__mpi_prog *m) {
  return &m->fab.base;
}

void pld__mpi_set_spin(struct pld__mpi_prog *m, const struct pld__spin *spin) {
  m->spin = spin;
}

_Atomic uint32_t *pld__mpi_awake(struct pld__mpi_prog *m) { return m->awake; }

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
  if (on) /* a new run: no host task said yet */
    atomic_store(&m->said[PLD__MPI_TASKS], 0);
  if (atomic_exchange(&m->running, on) == on)
    return;
  atomic_fetch_add(&px.running, on ? 1 : -1);
  if (m->rma)
    atomic_fetch_add(&px.running_rma, on ? 1 : -1);
  atomic_fetch_add(&px.queued, 1);
  pld__futex_wake(&px.queued, 0);
}

/* ---- collective and control calls -------------------------------------- */

struct coll_args {
  struct pld__mpi_prog *m;
  void *buf;
  size_t n;
  int root, rc;
};

static void do_barrier(void *arg) {
  struct coll_args *a = arg;
  a->rc = MPI_Barrier(a->m->comm);
}

static void do_bcast(void *arg) {
  struct coll_args *a = arg;
  for (size_t at = 0; at < a->n && a->rc == MPI_SUCCESS; at += PIECE) {
    size_t len = a->n - at < PIECE ? a->n - at : PIECE;
    a->rc = MPI_Bcast((unsigned char *)a->buf + at, (int)len, MPI_BYTE, a->root,
                      a->m->comm);
  }
}

int pld__mpi_barrier(struct pld__mpi_prog *m) {
  struct coll_args a = {m, NULL, 0, 0, MPI_SUCCESS};
  proxy_call(do_barrier, &a, NULL);
  return a.rc == MPI_SUCCESS ? PLD_OK : mpi_failed(a.rc, "MPI_Barrier");
}

int pld__mpi_bcast(struct pld__mpi_prog *m, void *buf, size_t n, int root) {
  struct coll_args a = {m, buf, n, root, MPI_SUCCESS};
  proxy_call(do_bcast, &a, NULL);
  return a.rc == MPI_SUCCESS ? PLD_OK : mpi_failed(a.rc, "MPI_Bcast");
}

/* A control message in flight: sent without waiting for its receiver
 * (whose proxy may be in a collective that waits for this process),
 * freed once complete.  Messages of one tag to one process arrive in the
 * order sent. */
struct outmsg {
  MPI_Request req;
  struct outmsg *next;
  unsigned char buf[];
};

struct send_args {
  struct pld__mpi_prog *m;
  const void *buf;
  size_t n;
  int to, tag, rc;
};

static void do_send(void *arg) {
  struct send_args *a = arg;
  struct pld__mpi_prog *m = a->m;
  for (int q = 0; q < m->n; q++) {
    if (!((a->to < 0 && q != m->me) || q == a->to))
      continue;
    struct outmsg *om = malloc(sizeof *om + a->n);
    if (!om) {
      a->rc = MPI_ERR_NO_MEM;
      return;
    }
    memcpy(om->buf, a->buf, a->n);
    if ((a->rc = MPI_Isend(om->buf, (int)a->n, MPI_BYTE, q, a->tag, m->comm,
                           &om->req)) != MPI_SUCCESS) {
      free(om);
      return;
    }
    om->next = m->out;
    m->out = om;
  }
}

/* Frees the control messages that completed (all of them, waiting, with
 * wait).  Returns whether any did. */
static int reap_sent(struct pld__mpi_prog *m, int wait) {
  int any = 0;
  for (struct outmsg **q = &m->out; *q;) {
    int done = 1;
    if (wait)
      MPI_Wait(&(*q)->req, MPI_STATUS_IGNORE);
    else
      MPI_Test(&(*q)->req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      q = &(*q)->next;
      continue;
    }
    struct outmsg *om = *q;
    *q = om->next;
    free(om);
    any = 1;
  }
  return any;
}

static int send_to(struct pld__mpi_prog *m, int to, int tag, const void *buf,
                   size_t n) {
  struct send_args a = {m, buf, n, to, tag, MPI_SUCCESS};
  proxy_call(do_send, &a, NULL);
  return a.rc == MPI_SUCCESS ? PLD_OK : mpi_failed(a.rc, "MPI_Send");
}

/* The snapshot in flight has landed (or none was in flight): the one
 * waiting, if any, goes. */
static int snap_send_next(struct pld__mpi_prog *m) {
  int done = 1;
  if (m->snap_req != MPI_REQUEST_NULL)
    MPI_Test(&m->snap_req, &done, MPI_STATUS_IGNORE);
  if (!done || !m->snap_waiting)
    return 0;
  memcpy(m->snap_buf, m->snap_next, m->set.snap_bytes);
  m->snap_waiting = 0;
  MPI_Isend(m->snap_buf, (int)m->set.snap_bytes, MPI_BYTE, 0, TAG_SNAP,
            m->snap_comm, &m->snap_req);
  return 1;
}

static void control_event(struct pld__mpi_prog *m);

/* Process 0: the snapshots that landed are staged (the latest of each
 * process; one process's land in the order sent), and their receives
 * posted again.  Returns whether any landed. */
static int snap_take(struct pld__mpi_prog *m) {
  int any = 0;
  for (int q = 0; m->snap_in && q < m->n; q++) {
    int done = 0;
    if (m->snap_in[q] == MPI_REQUEST_NULL)
      continue;
    MPI_Test(&m->snap_in[q], &done, MPI_STATUS_IGNORE);
    if (!done)
      continue;
    size_t n = m->set.snap_bytes;
    pthread_mutex_lock(&m->mu);
    memcpy(m->stage + (size_t)q * n, m->snap_land + (size_t)q * n, n);
    m->stage_gen[q]++;
    pthread_mutex_unlock(&m->mu);
    snap_post(m, q);
    any = 1;
  }
  if (any)
    control_event(m);
  return any;
}

static void do_send_snapshot(void *arg) {
  struct send_args *a = arg;
  struct pld__mpi_prog *m = a->m;
  memcpy(m->snap_next, a->buf, a->n);
  m->snap_waiting = 1;
  snap_send_next(m);
}

int pld__mpi_send_snapshot(struct pld__mpi_prog *m, const void *buf, size_t n) {
  struct send_args a = {
      m, buf,      n < m->set.snap_bytes ? n : m->set.snap_bytes,
      0, TAG_SNAP, MPI_SUCCESS};
  proxy_call(do_send_snapshot, &a, NULL);
  return PLD_OK;
}

int pld__mpi_snapshot(struct pld__mpi_prog *m, int from, void *buf, size_t n,
                      uint32_t *gen) {
  int fresh = 0;
  pthread_mutex_lock(&m->mu);
  if (m->stage_gen[from] != *gen) {
    memcpy(buf, m->stage + (size_t)from * m->set.snap_bytes, n);
    *gen = m->stage_gen[from];
    fresh = 1;
  }
  pthread_mutex_unlock(&m->mu);
  return fresh;
}

/* An abort arrived (or is made here): the device's threads see it. */
static void apply_abort(struct pld__mpi_prog *m, uint32_t why) {
  atomic_store_explicit(m->set.hooks.abort, why, memory_order_release);
  atomic_fetch_add(&m->bell->count, 1);
  pld__futex_wake(&m->bell->count, 1);
  /* A device waiting for a host task reads the abort word after the count
   * (device.c: await_tasks): the count moves, or a device still polling
   * it would miss the wake. */
  atomic_fetch_add(m->set.hooks.tasks, 1);
  pld__futex_wake(m->set.hooks.tasks, 1);
}

int pld__mpi_abort(struct pld__mpi_prog *m, uint32_t why) {
  apply_abort(m, why);
  return send_to(m, -1, TAG_ABORT, &why, sizeof why);
}

int pld__mpi_send_verdict(struct pld__mpi_prog *m, const void *v, size_t n) {
  return send_to(m, -1, TAG_VERDICT, v, n);
}

int pld__mpi_say(struct pld__mpi_prog *m, int what, uint32_t k) {
  atomic_store(&m->said[what], k);
  return send_to(m, -1, TAG_COUNT + what, &k, sizeof k);
}

uint32_t pld__mpi_said(struct pld__mpi_prog *m, int what) {
  return atomic_load_explicit(&m->said[what], memory_order_acquire);
}

int pld__mpi_verdict(struct pld__mpi_prog *m, void *v, size_t n) {
  pthread_mutex_lock(&m->mu);
  int in = m->verdict_in;
  if (in)
    memcpy(v, m->verdict, n);
  m->verdict_in = 0;
  pthread_mutex_unlock(&m->mu);
  return in;
}

static void ring(struct pld__bell *b) {
  pld__event_signal(&b->count, &b->sleepers, 1);
}

static void control_event(struct pld__mpi_prog *m) {
  pld__event_signal(m->set.hooks.event, m->set.hooks.event_sleepers, 1);
}

/* Receives the messages that arrived for program m.  Returns whether any
 * did. */
static int poll_prog(struct pld__mpi_prog *m) {
  int any = m->out ? reap_sent(m, 0) : 0;
  any |= snap_send_next(m);
  any |= snap_take(m);
  for (;;) {
    int flag = 0;
    MPI_Status s;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m->comm, &flag, &s);
    if (!flag)
      return any;
    any = 1;
    int count = 0;
    MPI_Get_count(&s, MPI_BYTE, &count);
    if (s.MPI_TAG == TAG_BELL) {
      int buf = -1;
      MPI_Recv(&buf, (int)sizeof buf, MPI_BYTE, s.MPI_SOURCE, TAG_BELL, m->comm,
               MPI_STATUS_IGNORE);
      if (buf >= 0 && buf < m->set.nbufs && m->bufs[buf].win != MPI_WIN_NULL)
        MPI_Win_sync(m->bufs[buf].win);
      ring(m->bell);
    } else if (s.MPI_TAG == TAG_ABORT) {
      uint32_t why = 0;
      MPI_Recv(&why, (int)sizeof why, MPI_BYTE, s.MPI_SOURCE, TAG_ABORT,
               m->comm, MPI_STATUS_IGNORE);
      apply_abort(m, why);
      control_event(m);
    } else if (s.MPI_TAG >= TAG_COUNT &&
               s.MPI_TAG < TAG_COUNT + PLD__MPI_COUNTS) {
      uint32_t k = 0;
      MPI_Recv(&k, (int)sizeof k, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, m->comm,
               MPI_STATUS_IGNORE);
      atomic_store_explicit(&m->said[s.MPI_TAG - TAG_COUNT], k,
                            memory_order_release);
      control_event(m);
    } else if (s.MPI_TAG == TAG_VERDICT) {
      pthread_mutex_lock(&m->mu);
      MPI_Recv(m->verdict, (int)m->verdict_bytes, MPI_BYTE, s.MPI_SOURCE,
               TAG_VERDICT, m->comm, MPI_STATUS_IGNORE);
      m->verdict_in = 1;
      pthread_mutex_unlock(&m->mu);
      control_event(m);
    } else {
      /* Nothing else is sent on a program's communicator. */
      unsigned char sink[64];
      MPI_Recv(sink, count < 64 ? count : 64, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG,
               m->comm, MPI_STATUS_IGNORE);
    }
  }
}

static int poll_programs(void) {
  int any = 0;
  for (struct pld__mpi_prog *m = px.progs; m; m = m->next)
    any |= poll_prog(m);
  return any;
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
    struct mbuf *mb = &m->bufs[b];
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
  atomic_store_explicit(&m->any_dirty, keep > 0, memory_order_relaxed);
  return rc;
}

/* MPI_Put or MPI_Get of n bytes at off of world rank peer's copy of
 * buffer buf, in pieces MPI's int counts hold; the peer marked dirty (a
 * flush completes it).  Returns the MPI status. */
static int rma(struct pld__mpi_prog *m, int get, int buf, int peer, size_t off,
               unsigned char *ptr, size_t n) {
  struct mbuf *mb = &m->bufs[buf];
  int d = mb->drank[peer], rc = MPI_SUCCESS;
  for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += PIECE) {
    size_t len = n - at < PIECE ? n - at : PIECE;
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
  return rma(m, m->pend.get, m->pend.buf, m->pend.peer, m->pend.off,
             m->pend.ptr, m->pend.n);
}

/* A write (o->src) or read (o->dst) done now: issued, and complete here
 * (the source may change, the destination be read) when it returns. */
static void do_now(void *arg) {
  struct op *o = arg;
  int get = o->dst != NULL;
  o->what = get ? "MPI_Get" : "MPI_Put";
  if ((o->rc = issue_pending(o->m)) != MPI_SUCCESS ||
      (o->rc = rma(o->m, get, o->buf, o->peer, o->off,
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
static int add_half(struct mbuf *mb, int d, size_t off, const void *v,
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
  struct mbuf *mb = &o->m->bufs[o->buf];
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
  size_t most = PIECE / es;
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

/* Rings world rank peer's doorbell for a signal on buffer buf that is
 * complete at the peer: in shared memory, or by a message its proxy turns
 * into a ring.  Returns the MPI status. */
static int ring_peer(struct pld__mpi_prog *m, int peer, int buf) {
  if (m->bells[peer]) {
    ring(m->bells[peer]);
    return MPI_SUCCESS;
  }
  if (peer == m->me) {
    MPI_Win_sync(m->bufs[buf].win);
    ring(m->bell);
    return MPI_SUCCESS;
  }
  /* Not waited for: the cell is updated already, and a waiter polls it
   * (mpi_wait_events); the ring only wakes one asleep. */
  struct send_args a = {m, &buf, sizeof buf, peer, TAG_BELL, MPI_SUCCESS};
  do_send(&a);
  return a.rc;
}

/* Completes every write since the last flush and every signal sent later,
 * then rings those signals' doorbells (their accumulates, issued
 * together, complete together). */
static int complete_all(struct pld__mpi_prog *m) {
  int rc = issue_pending(m);
  if (rc == MPI_SUCCESS)
    rc = flush_dirty(m, -1);
  for (int i = 0; i < m->nlate && rc == MPI_SUCCESS; i++) {
    struct mbuf *mb = &m->bufs[m->late[2 * i + 1]];
    rc = MPI_Win_flush(mb->drank[m->late[2 * i]], mb->win);
  }
  for (int i = 0; i < m->nlate && rc == MPI_SUCCESS; i++)
    rc = ring_peer(m, m->late[2 * i], m->late[2 * i + 1]);
  m->nlate = 0;
  return rc;
}

/* The accumulate of a signal onto its cell (never a plain put: pollers
 * read it). */
static int accumulate_cell(struct op *o) {
  struct mbuf *mb = &o->m->bufs[o->sig_buf];
  return MPI_Accumulate(
      &o->value, 1, MPI_INT32_T, mb->drank[o->peer], (MPI_Aint)o->sig_off, 1,
      MPI_INT32_T, o->nop == PLD_NOTIFY_SET ? MPI_REPLACE : MPI_SUM, mb->win);
}

/* The signal after every RMA write before it: everything completed, the
 * cell updated atomically, completed, and the target's doorbell rung. */
static void do_signal(void *arg) {
  struct op *o = arg;
  struct pld__mpi_prog *m = o->m;
  struct mbuf *mb = &m->bufs[o->sig_buf];
  o->what = "MPI_Win_flush";
  if ((o->rc = complete_all(m)) != MPI_SUCCESS)
    return;
  o->what = "MPI_Accumulate";
  if ((o->rc = accumulate_cell(o)) != MPI_SUCCESS ||
      (o->rc = MPI_Win_flush(mb->drank[o->peer], mb->win)) != MPI_SUCCESS)
    return;
  o->what = "MPI_Isend";
  o->rc = ring_peer(m, o->peer, o->sig_buf);
}

/* A signal of a round: every write before it completed, its accumulate
 * left in flight with the round's other signals, completed and its
 * doorbell rung by the next flush or signal. */
static void do_signal_later(void *arg) {
  struct op *o = arg;
  struct pld__mpi_prog *m = o->m;
  o->what = "MPI_Win_flush";
  if (m->nlate == m->n && (o->rc = complete_all(m)) != MPI_SUCCESS)
    return;
  if ((o->rc = issue_pending(m)) != MPI_SUCCESS ||
      (o->rc = flush_dirty(m, -1)) != MPI_SUCCESS)
    return;
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
    o->rc = complete_all(o->m);
  else if ((o->rc = issue_pending(o->m)) == MPI_SUCCESS)
    o->rc = flush_dirty(o->m, o->peer);
}

static int run_op(struct op *o, void (*fn)(void *)) {
  o->rc = MPI_SUCCESS;
  proxy_call(fn, o, o->m->spin);
  if (o->rc == MPI_SUCCESS)
    return PLD_OK;
  char what[96];
  pld__catf(what, sizeof what, "%s to rank %d", o->what, o->peer);
  return mpi_failed(o->rc, what);
}

static struct pld__mpi_prog *prog_of(struct pld__fabric *f) {
  return ((struct mfabric *)f)->m;
}

static void *mpi_local(struct pld__fabric *f, int buf) {
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
      memcpy(dst, p + off, n);
    else if (src)
      memcpy(p + off, src, n);
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

static int mpi_write(struct pld__fabric *f, int buf, int peer, size_t off,
                     const void *src, size_t n) {
  return move(f, do_now, buf, peer, off, src, NULL, n);
}

static int mpi_read(struct pld__fabric *f, int buf, int peer, size_t off,
                    void *dst, size_t n) {
  return move(f, do_now, buf, peer, off, NULL, dst, n);
}

static int mpi_write_later(struct pld__fabric *f, int buf, int peer, size_t off,
                           const void *src, size_t n) {
  return move(f, do_later, buf, peer, off, src, NULL, n);
}

static int mpi_read_later(struct pld__fabric *f, int buf, int peer, size_t off,
                          void *dst, size_t n) {
  return move(f, do_later, buf, peer, off, NULL, dst, n);
}

/* Where a buffer is an RMA window (some member of its domain is reached
 * through RMA), every atomic on it goes through MPI, on this rank's own
 * copy and same-node peers' too: MPI's accumulates are atomic only among
 * themselves.  Plain reads and writes still take shared memory. */
static unsigned char *atomic_shm(struct pld__mpi_prog *m, int buf, int peer) {
  struct mbuf *mb = &m->bufs[buf];
  return mb->win != MPI_WIN_NULL ? NULL : mb->shm[peer];
}

static int mpi_accumulate(struct pld__fabric *f, int buf, int peer, size_t off,
                          const void *src, size_t count, pld_dtype dtype) {
  struct pld__mpi_prog *m = prog_of(f);
  unsigned char *to = atomic_shm(m, buf, peer);
  if (to) {
    pld__shm_add(to + off, src, count, dtype);
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

static int mpi_flush(struct pld__fabric *f, int peer) {
  struct pld__mpi_prog *m = prog_of(f);
  if (!atomic_load_explicit(&m->any_dirty, memory_order_relaxed))
    return PLD_OK;
  struct op o = {.m = m, .peer = peer};
  return run_op(&o, do_flush);
}

static int mpi_put_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                          const void *src, size_t n, int sig_buf,
                          size_t sig_off, int32_t value, pld_notify_op op) {
  struct pld__mpi_prog *m = prog_of(f);
  unsigned char *cell = atomic_shm(m, sig_buf, peer);
  if (cell && (m->bufs[buf].shm[peer] || !n)) {
    /* Through shared memory: RMA writes to other peers complete first. */
    int st = mpi_flush(f, -1);
    if (st)
      return st;
    if (n)
      memcpy(m->bufs[buf].shm[peer] + off, src, n);
    pld__shm_signal_at(cell + sig_off, value, op,
                       peer == m->me ? m->bell : m->bells[peer]);
    return PLD_OK;
  }
  if (n && m->bufs[buf].shm[peer]) {
    memcpy(m->bufs[buf].shm[peer] + off, src, n);
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

static int mpi_signal(struct pld__fabric *f, int buf, int peer, size_t off,
                      int32_t value, pld_notify_op op) {
  return mpi_put_signal(f, buf, peer, 0, NULL, 0, buf, off, value, op);
}

static int mpi_signal_later(struct pld__fabric *f, int buf, int peer,
                            size_t off, int32_t value, pld_notify_op op) {
  struct pld__mpi_prog *m = prog_of(f);
  if (atomic_shm(m, buf, peer)) /* lands at once */
    return mpi_signal(f, buf, peer, off, value, op);
  struct op o = {.m = m,
                 .buf = buf,
                 .peer = peer,
                 .sig_buf = buf,
                 .sig_off = off,
                 .value = value,
                 .nop = op};
  return run_op(&o, do_signal_later);
}

static const void *mpi_view(struct pld__fabric *f, int buf, int peer,
                            size_t off, size_t n) {
  (void)n;
  const unsigned char *p = prog_of(f)->bufs[buf].shm[peer];
  return p ? p + off : NULL;
}

static int32_t mpi_cell(struct pld__fabric *f, int buf, size_t off) {
  const int32_t *cell = (const int32_t *)(prog_of(f)->bufs[buf].local + off);
  return __atomic_load_n(cell, __ATOMIC_ACQUIRE);
}

static uint32_t mpi_events(struct pld__fabric *f) {
  return atomic_load_explicit(&prog_of(f)->bell->count, memory_order_acquire);
}

/* A signal through RMA lands in the cell before its doorbell (sent
 * without waiting) rings: a waiter polling the cell too sees it a message
 * earlier.  Polling as spin says, then asleep on the doorbell. */
static void mpi_wait_events(struct pld__fabric *f, uint32_t seen, int buf,
                            size_t off, const struct pld__spin *spin,
                            int64_t timeout_ns) {
  struct pld__bell *b = prog_of(f)->bell;
  if (buf >= 0 && spin->ns > 0) {
    int32_t was = mpi_cell(f, buf, off);
    int64_t deadline = pld__spin_deadline(spin);
    for (int i = 0; pld__spin_step(i, deadline, spin); i++)
      if (atomic_load_explicit(&b->count, memory_order_acquire) != seen ||
          mpi_cell(f, buf, off) != was)
        return;
  }
  pld__event_wait(&b->count, seen, &b->sleepers, spin, timeout_ns, 1);
}

static const struct pld__fabric_ops mpi_ops = {
    .version = PLD__FABRIC_OPS_VERSION,
    .name = "mpi",
    .local = mpi_local,
    .write = mpi_write,
    .read = mpi_read,
    .write_later = mpi_write_later,
    .read_later = mpi_read_later,
    .accumulate = mpi_accumulate,
    .signal = mpi_signal,
    .signal_later = mpi_signal_later,
    .flush = mpi_flush,
    .put_signal = mpi_put_signal,
    .view = mpi_view,
    .cell = mpi_cell,
    .events = mpi_events,
    .wait_events = mpi_wait_events,
};

#else /* no MPI at build time */

int pld__mpi_built(void) { return 0; }

int pld__mpi_init(const char *fn) {
  if (!fn)
    return PLD_ERR_UNSUPPORTED;
  return pld__fail(PLD_ERR_UNSUPPORTED,
                   "%s: the MPI fabric: this build of pld has no MPI (build "
                   "it where an MPI implementation is installed)",
                   fn);
}
int pld__mpi_size(void) { return 1; }
int pld__mpi_rank(void) { return 0; }
int pld__mpi_default_device(int proc, int server_devices) {
  (void)server_devices;
  return proc;
}
int pld__mpi_prog_create(const struct pld__mpi_setup *s,
                         struct pld__mpi_prog **out) {
  (void)s;
  (void)out;
  return pld__mpi_init("pld_program_prepare");
}
void pld__mpi_prog_destroy(struct pld__mpi_prog *m, int abandon) {
  (void)m;
  (void)abandon;
}
struct pld__fabric *pld__mpi_fabric(struct pld__mpi_prog *m) {
  (void)m;
  return NULL;
}
void pld__mpi_set_spin(struct pld__mpi_prog *m, const struct pld__spin *s) {
  (void)m;
  (void)s;
}
_Atomic uint32_t *pld__mpi_awake(struct pld__mpi_prog *m) {
  (void)m;
  return NULL;
}
void pld__mpi_zero(struct pld__mpi_prog *m) { (void)m; }
void pld__mpi_zero_bytes(struct pld__mpi_prog *m, int buf, size_t off,
                         size_t n) {
  (void)m;
  (void)buf;
  (void)off;
  (void)n;
}
void pld__mpi_running(struct pld__mpi_prog *m, int on) {
  (void)m;
  (void)on;
}
int pld__mpi_barrier(struct pld__mpi_prog *m) {
  (void)m;
  return PLD_ERR_UNSUPPORTED;
}
int pld__mpi_bcast(struct pld__mpi_prog *m, void *buf, size_t n, int root) {
  (void)m;
  (void)buf;
  (void)n;
  (void)root;
  return PLD_ERR_UNSUPPORTED;
}
int pld__mpi_send_snapshot(struct pld__mpi_prog *m, const void *buf, size_t n) {
  (void)m;
  (void)buf;
  (void)n;
  return PLD_ERR_UNSUPPORTED;
}
int pld__mpi_snapshot(struct pld__mpi_prog *m, int from, void *buf, size_t n,
                      uint32_t *gen) {
  (void)m;
  (void)from;
  (void)buf;
  (void)n;
  (void)gen;
  return 0;
}
int pld__mpi_abort(struct pld__mpi_prog *m, uint32_t why) {
  (void)m;
  (void)why;
  return PLD_ERR_UNSUPPORTED;
}
int pld__mpi_send_verdict(struct pld__mpi_prog *m, const void *v, size_t n) {
  (void)m;
  (void)v;
  (void)n;
  return PLD_ERR_UNSUPPORTED;
}
int pld__mpi_verdict(struct pld__mpi_prog *m, void *v, size_t n) {
  (void)m;
  (void)v;
  (void)n;
  return 0;
}
int pld__mpi_say(struct pld__mpi_prog *m, int what, uint32_t k) {
  (void)m;
  (void)what;
  (void)k;
  return PLD_ERR_UNSUPPORTED;
}
uint32_t pld__mpi_said(struct pld__mpi_prog *m, int what) {
  (void)m;
  (void)what;
  return 0;
}

#endif
