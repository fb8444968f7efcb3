/* fabric/mpi_proxy.c: the MPI proxy thread (see fabric/mpi_proxy.h):
 * MPI's initialisation and finalisation, the queue of requests the other
 * threads wait on, and the rounds of the pollers its users add. */
#include "fabric/mpi_proxy.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "core/error.h"
#include "core/futex.h"
#include "core/tunables.h"

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
  struct pld__mpi_poller *pollers; /* touched by the proxy thread only */
} px = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int on_proxy;
static _Atomic uint32_t host_awake; /* the awake count of host threads */

static struct pld__spin default_spin(void) {
  struct pld__spin s = {pld__tunables()->PLD_SPIN_US * 1000,
                        &host_awake,
                        NULL,
                        pld__cpus(),
                        0,
                        0};
  return s;
}

/* Runs fn(arg) on the proxy thread and waits for it. */
void pld__mpi_call(void (*fn)(void *), void *arg,
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

static int serve_queue(void) {
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

/* A round of every poller.  Returns whether any did something. */
static int poll_all(void) {
  int any = 0;
  for (struct pld__mpi_poller *pl = px.pollers; pl; pl = pl->next)
    any |= pl->poll(pl->arg);
  return any;
}

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
    int did = serve_queue();
    if (atomic_load(&px.running) || px.pollers)
      did |= poll_all();
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

MPI_Comm pld__mpi_world(void) { return px.world; }

int pld__mpi_failed(int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  s[0] = '\0';
  MPI_Error_string(rc, s, &len);
  return pld__fail(PLD_ERR_SYSTEM, "the MPI fabric: %s: %s", what, s);
}

void pld__mpi_poller_add(struct pld__mpi_poller *pl) {
  pl->next = px.pollers;
  px.pollers = pl;
}

void pld__mpi_poller_remove(struct pld__mpi_poller *pl) {
  for (struct pld__mpi_poller **q = &px.pollers; *q; q = &(*q)->next)
    if (*q == pl) {
      *q = pl->next;
      break;
    }
}

void pld__mpi_proxy_running(int delta, int rma) {
  atomic_fetch_add(&px.running, delta);
  if (rma)
    atomic_fetch_add(&px.running_rma, delta);
  atomic_fetch_add(&px.queued, 1);
  pld__futex_wake(&px.queued, 0);
}
