/* fabric/mpi_proxy.c: the MPI proxy thread (see fabric/mpi_proxy.h):
 * MPI's initialisation and finalisation, the queue of requests the other
 * threads wait on, and the rounds of the pollers its users add. */
#include "fabric/mpi_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

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
  int *pid;          /* [proc]: its process id if on this node, else 0 */
  /* Memory the node's processes share: a word per process (by its rank on
   * the node), ENDING once it is ending for a cause it says (stopped from
   * outside, a failed MPI call), WRITTEN once its line is out; NULL if it
   * could not be made. */
  _Atomic int32_t *ending;
  /* The errors of MPI calls on the world's communicators and the
   * fabric's windows: failed_mpi. */
  MPI_Errhandler comm_errors, win_errors;
  void (*say_end)(const char *why); /* pld__mpi_on_failure */
  MPI_Comm world;
  pthread_mutex_t mu;
  /* Held by the thread in MPI: the proxy in each round, or a device
   * thread calling it itself (pld__mpi_call, pld__mpi_try_enter). */
  pthread_mutex_t in_mpi;
  struct call *head, **tail;
  _Atomic uint32_t queued; /* bumped on every request: the proxy sleeps on it */
  _Atomic uint32_t queue_sleepers;
  /* The node's processes outnumber its CPUs; then the device threads
   * polling MPI as they wait, and when one last stopped
   * (rest_while_polled). */
  int crowded;
  _Atomic int polling;
  _Atomic int64_t polled_ns;
  _Atomic int running, running_rma; /* runs in progress (with RMA peers) */
  _Atomic int stop;
  _Atomic uint32_t init_done;
  struct pld__mpi_poller *pollers; /* touched by the proxy thread only */
} px = {.once = PTHREAD_ONCE_INIT,
        .mu = PTHREAD_MUTEX_INITIALIZER,
        .in_mpi = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int on_proxy;  /* the proxy, or a thread in MPI */
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

/* Enters MPI if no other thread is in it, or with `wait` once the thread
 * in it has left (asleep meanwhile).  Returns whether it did. */
static int enter_mpi(int wait) {
  if (wait)
    pthread_mutex_lock(&px.in_mpi);
  else if (pthread_mutex_trylock(&px.in_mpi) != 0)
    return 0;
  on_proxy = 1;
  return 1;
}

void pld__mpi_call(void (*fn)(void *), void *arg,
                   const struct pld__spin *spin) {
  if (on_proxy) {
    fn(arg);
    return;
  }
  /* A device thread calls MPI itself when no other thread is in it: a
   * hand-off to the proxy costs more than most calls.  Where the node is
   * crowded, also when another thread is in it, after waiting for it to
   * leave: a call handed off is work the proxy did, and a proxy that works
   * does not rest (rest_while_polled), so it goes on calling MPI, holding
   * it whenever the device thread comes back, and every call of that
   * thread became a hand-off, a wake and a switch each, for good (the
   * 4-rank barrier over TCP on 2 CPUs: 0.52 ms a barrier, one process's
   * proxy serving about 2 calls of its device thread per barrier; waiting
   * for MPI instead, 0.23 ms, 8 ranks 1.33 ms for 5.97: medians of eight
   * and four alternate runs of bench_comm's barrier job, 2026-12-06). */
  if (spin && enter_mpi(px.crowded)) {
    fn(arg);
    pld__mpi_leave();
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

int pld__mpi_try_enter(void) { return enter_mpi(0); }

void pld__mpi_leave(void) {
  on_proxy = 0;
  pthread_mutex_unlock(&px.in_mpi);
}

void pld__mpi_polling_begin(void) {
  if (px.crowded)
    atomic_fetch_add(&px.polling, 1);
}

void pld__mpi_polling_end(int sleeping) {
  if (!px.crowded)
    return;
  if (!sleeping)
    atomic_store_explicit(&px.polled_ns, pld__now_ns(), memory_order_relaxed);
  if (atomic_fetch_sub(&px.polling, 1) == 1 && sleeping)
    pld__event_signal(&px.queued, &px.queue_sleepers, 0);
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

static int any_waits(void) {
  for (struct pld__mpi_poller *pl = px.pollers; pl; pl = pl->next)
    if (pl->waits(pl->arg))
      return 1;
  return 0;
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

/* px.ending: the node's first process (local rank 0, process id leader)
 * makes the memory, the others map it, then its name is removed, so that
 * nothing is left behind however the job ends.  Not an MPI window: where
 * peers reach each other over TCP, MPI has no shared memory to give. */
static void share_flags(MPI_Comm node, int local, int leader) {
  int nsize;
  MPI_Comm_size(node, &nsize);
  size_t bytes = (size_t)nsize * sizeof *px.ending;
  char name[64];
  pld__catf(name, sizeof name, "/pld-ending-%d", leader);
  int fd = -1;
  if (local == 0) {
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0 && ftruncate(fd, (off_t)bytes) != 0) {
      close(fd);
      fd = -1;
    }
  }
  MPI_Barrier(node);
  if (local != 0)
    fd = shm_open(name, O_RDWR, 0600);
  if (fd >= 0) {
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    px.ending = mem == MAP_FAILED ? NULL : mem;
  }
  MPI_Barrier(node);
  if (local == 0)
    shm_unlink(name);
}

/* How long a process whose MPI call failed waits for the peer that is
 * the cause to be seen gone, then for mpirun to stop it; how long an
 * ending process waits for the others of its node to write their lines
 * (pld__mpi_ending); in ms. */
#define FAILED_PEER_MS 500
#define FAILED_END_MS 2000
#define WRITTEN_WAIT_MS 300

enum { ENDING = 1, WRITTEN = 2 };

static int any_peer_gone(void) {
  for (int q = 0; q < px.size; q++)
    if (pld__mpi_peer_gone(q))
      return 1;
  return 0;
}

/* An MPI call failed.  Outside a run the call returns the error, which
 * its caller reports.  In a run a peer's process is gone, most likely,
 * and MPI would abort the job in its own words: the process says why it
 * ends (what its device was doing: px.say_end), marks itself as having
 * said it, and ends when mpirun stops it (or after FAILED_END_MS). */
static void failed_mpi(int code) {
  if (!atomic_load(&px.running))
    return;
  char err[MPI_MAX_ERROR_STRING], why[MPI_MAX_ERROR_STRING + 64];
  int len = 0;
  err[0] = '\0';
  MPI_Error_string(code, err, &len);
  pld__catf(why, sizeof why, "ended: an MPI call failed: %s", err);
  pld__mpi_ending(0);
  /* The peer whose end failed the call may still be ending (its sockets
   * close before it is gone): a moment for it to be seen gone. */
  for (int ms = 0; ms < FAILED_PEER_MS && !any_peer_gone(); ms++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  if (px.say_end) {
    px.say_end(why);
  } else {
    char line[sizeof why + 32];
    size_t n =
        pld__catf(line, sizeof line, "pld: process %d %s\n", px.rank, why);
    ssize_t w = write(2, line, n);
    (void)w;
    pld__mpi_ending(1);
  }
  /* mpirun, seeing the peer's end, stops this process too: ending first
   * would make it name this process as the job's first failure. */
  struct timespec left = {FAILED_END_MS / 1000,
                          (FAILED_END_MS % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0)
    ;
  _exit(1);
}
static void failed_comm(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  failed_mpi(*code);
}
static void failed_win(MPI_Win *win, int *code, ...) {
  (void)win;
  failed_mpi(*code);
}

void pld__mpi_errors(MPI_Win win) {
  MPI_Win_set_errhandler(win, px.win_errors);
}

void pld__mpi_on_failure(void (*say)(const char *why)) { px.say_end = say; }

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
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) !=
            MPI_SUCCESS ||
        provided < MPI_THREAD_SERIALIZED) {
      pld__catf(px.why, sizeof px.why,
                "MPI_Init_thread failed or gave less than "
                "MPI_THREAD_SERIALIZED");
      return 0;
    }
    px.own_mpi = 1;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &px.world);
  /* The communicators made from it inherit the handler. */
  MPI_Comm_create_errhandler(failed_comm, &px.comm_errors);
  MPI_Win_create_errhandler(failed_win, &px.win_errors);
  MPI_Comm_set_errhandler(px.world, px.comm_errors);
  MPI_Comm_size(px.world, &px.size);
  MPI_Comm_rank(px.world, &px.rank);
  /* Node index of every process: the lowest world rank on each node,
   * numbered in order; and the process ids of this node's processes. */
  MPI_Comm node;
  MPI_Comm_split_type(px.world, MPI_COMM_TYPE_SHARED, px.rank, MPI_INFO_NULL,
                      &node);
  int mine[3] = {0, px.rank, (int)getpid()};
  int *all = malloc(3 * sizeof(int) * (size_t)px.size);
  MPI_Comm_rank(node, &mine[0]);
  MPI_Allreduce(MPI_IN_PLACE, &mine[1], 1, MPI_INT, MPI_MIN, node);
  MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, px.world);
  share_flags(node, mine[0], all[3 * mine[1] + 2]);
  MPI_Comm_free(&node);
  px.node = calloc((size_t)px.size, sizeof *px.node);
  px.local = calloc((size_t)px.size, sizeof *px.local);
  px.pid = calloc((size_t)px.size, sizeof *px.pid);
  for (int q = 0; q < px.size; q++) {
    px.local[q] = all[3 * q];
    int idx = 0;
    for (int s = 0; s < px.size; s++) /* distinct leaders below q's */
      idx += all[3 * s + 1] == s && s < all[3 * q + 1];
    px.node[q] = idx;
    px.pid[q] = all[3 * q + 1] == mine[1] ? all[3 * q + 2] : 0;
  }
  free(all);
  int here = 0;
  for (int q = 0; q < px.size; q++)
    here += px.pid[q] != 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  px.crowded = cpus > 0 && here > cpus;
  return 1;
}

/* Where the node's processes outnumber its CPUs (px.crowded), the proxy
 * rests while a device thread of its process polls MPI as it waits
 * (taking the fabric's messages itself), and for PLD_SPIN_US after the
 * last one stopped (whose next call into MPI most often follows, as a
 * barrier's next round does): the CPU is better left to the other
 * processes, and each of its yields costs a switch (about 200 a barrier
 * at 4 ranks on 2 CPUs over TCP, 18 resting; resting, such a barrier
 * took 0.62 ms where it took 0.82, 8 ranks 6.2 ms for 8.2: medians of
 * alternate runs of bench_comm's barrier job, 2026-12-05).  A request
 * wakes it, as does a thread that stops polling to sleep, which it then
 * polls for; after each rest it polls once, so that the messages no
 * device thread takes (the control plane's) wait at most a rest.  Not
 * where every process has a CPU: there the ping-pong and the 2-rank
 * barrier got 10% slower. */
static void rest_while_polled(uint32_t seen) {
  if (!px.crowded || atomic_load(&px.stop) || any_waits())
    return;
  int64_t left =
      atomic_load(&px.polling)
          ? PLD__US(PLD_MPI_NAP_RUN_US)
          : atomic_load(&px.polled_ns) + PLD__US(PLD_SPIN_US) - pld__now_ns();
  if (left <= 0)
    return;
  atomic_fetch_add(&px.queue_sleepers, 1);
  if (atomic_load(&px.queued) == seen)
    pld__futex_wait(&px.queued, seen, left, 0);
  atomic_fetch_sub(&px.queue_sleepers, 1);
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
    rest_while_polled(seen);
    /* A device thread in MPI progresses it: the proxy waits its turn
     * without queueing on the lock, whose hand-over at every call of
     * that thread would cost more than the call (a get of 4 KiB over
     * TCP took 55 us, 37 us since: bench_comm, 2026-12-05), and without
     * napping either (the 4-rank barrier over TCP took 30 times as
     * long). */
    if (pthread_mutex_trylock(&px.in_mpi) != 0) {
      sched_yield();
      continue;
    }
    int did = serve_queue();
    if (atomic_load(&px.running) || px.pollers)
      did |= poll_all();
    pthread_mutex_unlock(&px.in_mpi);
    if (atomic_load(&px.stop) && !did)
      break;
    int64_t now = pld__now_ns();
    if (did) {
      last = now;
      continue;
    }
    /* With RMA peers, a transfer landing here progresses only while the
     * proxy calls into MPI: it keeps calling a while after its last work,
     * and as long as a thread here sleeps until a signal lands. */
    int rma = atomic_load(&px.running_rma);
    if (rma && (now - last < PLD__US(PLD_MPI_BUSY_US) || any_waits())) {
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

/* Whether process pid has ended: gone, or dead and not yet reaped (a
 * zombie).  Async-signal-safe; errno is left as it was. */
static int process_ended(int pid) {
  int saved = errno, ended = 0;
  if (kill(pid, 0) != 0) {
    ended = errno == ESRCH;
  } else {
    char path[32], stat[256];
    pld__catf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
    if (fd >= 0)
      close(fd);
    if (n > 0) { /* "pid (name) S ...": the state after the name */
      stat[n] = '\0';
      const char *name_end = strrchr(stat, ')');
      ended = name_end && name_end[1] == ' ' &&
              (name_end[2] == 'Z' || name_end[2] == 'X');
    }
  }
  errno = saved;
  return ended;
}

int pld__mpi_peer_gone(int proc) {
  if (!px.ok || proc < 0 || proc >= px.size || proc == px.rank || !px.pid[proc])
    return 0;
  /* Ended first: a process sets its word before it ends, so a word read
   * after its end is the one it left. */
  return px.ending && process_ended(px.pid[proc]) &&
         !atomic_load(&px.ending[px.local[proc]]);
}

/* Whether every other process of the node has written its line or is
 * gone. */
static int node_written(void) {
  for (int q = 0; q < px.size; q++)
    if (q != px.rank && px.pid[q] &&
        atomic_load(&px.ending[px.local[q]]) != WRITTEN &&
        !process_ended(px.pid[q]))
      return 0;
  return 1;
}

void pld__mpi_ending(int written) {
  if (!px.ok || !px.ending)
    return;
  atomic_store(&px.ending[px.local[px.rank]], written ? WRITTEN : ENDING);
  for (int ms = 0; written && ms < WRITTEN_WAIT_MS && !node_written(); ms++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
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
