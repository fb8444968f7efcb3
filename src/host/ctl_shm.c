/* host/ctl_shm.c: the shared-memory control plane (see host/ctl.h).  Every
 * device is a process forked by the host; the host maps one region per
 * device (its control block and data area) and one for the world, and the
 * windows' region of the shared-memory fabric, before forking. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/copy.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "fabric/shm.h"
#include "host/ctl.h"
#include "host/ctl_shm.h"
#include "host/inspect.h"
#include "host/resident.h"
#include "host/trace.h"

/* What this control plane adds to a started program. */
struct shm_state {
  struct pld__winlayout lay;      /* where each window copy lies in it */
  unsigned char *region;          /* the windows' shared region */
  struct pld__shm_fabric fabric;  /* the host's side of it */
  struct pld__devrun *runs;       /* [rank]: what each device process runs */
  struct pld__shm_fabric *devfab; /* [rank]: each device's side of it */
};

static struct shm_state *shm_of(const struct pld_program *p) {
  return p->be.cps;
}

/* p uses the windows of the program whose devices it shares (it declares
 * the same ones, pld_compile checked). */
static int shares_windows(const struct pld_program *p) {
  return p->rs.share && p->plan.nwinbufs > 0;
}

/* The bytes of the windows' region this program maps (none when it uses
 * the first program's). */
static size_t shm_windows_bytes(const struct pld_program *p) {
  return shares_windows(p) ? 0 : shm_of(p)->lay.total;
}

unsigned char *pld__shm_region(const struct pld_program *p) {
  return p->be.cps ? shm_of(p)->region : NULL;
}

/* Collects device d if it exited (block: wait); 1 if it is gone. */
static int shm_reap(struct pld__device *d, int block) {
  if (d->reaped)
    return 1;
  if (d->pid <= 0)
    return 1;
  pid_t w = waitpid(d->pid, &d->wstatus, block ? 0 : WNOHANG);
  if (w == d->pid || (w < 0 && errno == ECHILD)) {
    d->reaped = 1;
    return 1;
  }
  return 0;
}

/* Reaps d's process once it exits, or gives up at the deadline.  The wait
 * sleeps on a process descriptor, which wakes the moment the process is
 * gone (kernels without pidfd_open: short naps).  Returns 1 once reaped. */
static int reap_by(struct pld__device *d, int64_t deadline) {
  if (shm_reap(d, 0))
    return 1;
  int fd = (int)syscall(SYS_pidfd_open, d->pid, 0);
  while (!shm_reap(d, 0)) {
    int64_t left = deadline - pld__now_ns();
    if (left <= 0)
      break;
    if (fd >= 0) {
      struct pollfd pfd = {fd, POLLIN, 0};
      poll(&pfd, 1, (int)((left + 999999) / 1000000));
    } else {
      pld__nap_ns(PLD__US(PLD_REAP_POLL_US));
    }
  }
  if (fd >= 0)
    close(fd);
  return d->reaped;
}

static int shm_gone(struct pld_program *p, int r, int block) {
  return shm_reap(&p->rs.devs[r], block);
}

/* The wait status of a reaped device process, decoded (0 while it is not
 * reaped: an exit with status 0). */
static void shm_ended(struct pld_program *p, int r, struct pld__dev_end *e) {
  int ws = p->rs.devs[r].wstatus;
  e->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
  e->status = WIFSIGNALED(ws) ? 0 : WEXITSTATUS(ws);
}

/* The programs of this process whose devices run: a device process
 * started later must drop their memory (fork gives it all of it). */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pld_program *live;

static void live_remove(struct pld_program *p) {
  pthread_mutex_lock(&live_mu);
  for (struct pld_program **q = &live; *q; q = &(*q)->rs.live_next)
    if (*q == p) {
      *q = p->rs.live_next;
      break;
    }
  pthread_mutex_unlock(&live_mu);
}

/* Called with live_mu held: the shared mappings of the live programs but
 * self, in *out (the caller frees it). */
static int live_mappings(const struct pld_program *self,
                         struct pld__mapping **out, int *n) {
  int count = 0;
  for (struct pld_program *q = live; q; q = q->rs.live_next)
    count += 2 * q->plan.nranks + 2;
  *out = pld__calloc((size_t)(count ? count : 1), sizeof **out);
  if (!*out)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  *n = 0;
  const struct pld_program *group = self->rs.share ? self->rs.share : self;
  for (struct pld_program *q = live; q; q = q->rs.live_next) {
    /* A group sharing devices shares their memory. */
    if (q == self || q == group || q->rs.share == group)
      continue;
    (*out)[(*n)++] = (struct pld__mapping){q->rs.world, sizeof *q->rs.world};
    (*out)[(*n)++] =
        (struct pld__mapping){shm_of(q)->region, shm_of(q)->lay.total};
    for (int r = 0; r < q->plan.nranks; r++) {
      (*out)[(*n)++] =
          (struct pld__mapping){q->rs.devs[r].ctl, q->rs.devs[r].map_bytes};
      if (q->rs.devs[r].trace)
        (*out)[(*n)++] = (struct pld__mapping){q->rs.devs[r].trace,
                                               q->rs.devs[r].trace_bytes};
    }
  }
  return PLD_OK;
}

/* Starts the process of device `rank`, which inherits what runs[rank]
 * holds (its plan, control block, world, data area and fabric).  The child
 * drops the other devices' regions and the `nforeign` mappings of other
 * programs, so it can reach no memory but its own and the windows; it dies
 * with the host. */
static int spawn_device(struct pld_program *p, int rank,
                        const struct pld__mapping *foreign, int nforeign) {
  struct pld__device *devs = p->rs.devs;
  struct pld__devrun *d = &shm_of(p)->runs[rank];
  pid_t host = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return pld__fail_api(PLD_ERR_SYSTEM, "rank %d (device %d): fork: %s", rank,
                         d->plan->device_id, strerror(errno));
  if (pid > 0) {
    devs[rank].pid = pid;
    return PLD_OK;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != host)
    _exit(1);
  for (int r = 0; r < p->plan.nranks; r++)
    if (r != rank) {
      if (devs[r].ctl)
        munmap(devs[r].ctl, devs[r].map_bytes);
      if (devs[r].trace)
        munmap(devs[r].trace, devs[r].trace_bytes);
    }
  for (int i = 0; i < nforeign; i++)
    munmap(foreign[i].addr, foreign[i].len);
  pld__device_process(d);
}

/* Starts the process of each rank r with start[r] set (NULL: every rank),
 * and makes p live if it was not. */
static int spawn(struct pld_program *p, const unsigned char *start) {
  fflush(NULL); /* nothing buffered is written twice */
  /* Hold the list while forking, so no mapping in it goes away (and its
   * address comes back as another) before the children dropped it. */
  pthread_mutex_lock(&live_mu);
  struct pld__mapping *foreign = NULL;
  int nforeign = 0;
  int st = live_mappings(p, &foreign, &nforeign);
  for (int r = 0; r < p->plan.nranks && st == PLD_OK; r++)
    if (!start || start[r])
      st = spawn_device(p, r, foreign, nforeign);
  int is_live = 0;
  for (struct pld_program *q = live; q; q = q->rs.live_next)
    is_live |= q == p;
  if (st == PLD_OK && !is_live) {
    p->rs.live_next = live;
    live = p;
  }
  pthread_mutex_unlock(&live_mu);
  pld__free(foreign);
  return st;
}

/* Stops every device process (kill: at once; otherwise each gets a
 * moment to stop its cores and exit by itself) and frees their memory.
 * The host lets go of the shared memory while the devices exit: the last
 * process to let go frees it, so that is a device's end, in parallel
 * with the others, rather than the host's after reaping them all. */
static void shm_stop(struct pld_program *p, int kill_now) {
  struct shm_state *s = shm_of(p);
  for (int r = 0; r < p->plan.nranks; r++)
    if (!kill_now)
      pld__devctl_post(p->rs.devs[r].ctl,
                       (struct pld__cmd){PLD__CMD_STOP, 0, 0, 0});
    else if (p->rs.devs[r].pid > 0 && !p->rs.devs[r].reaped)
      kill(p->rs.devs[r].pid, SIGKILL);
  int64_t deadline = pld__now_ns() + PLD__MS(PLD_SHUTDOWN_MS);
  /* Off the list before its mappings go: a device forked later must not
   * unmap their addresses, which may be another's by then. */
  live_remove(p);
  pld__devices_unmap(p->rs.devs, p->plan.nranks, shm_windows_bytes(p),
                     p->rs.world);
  if (p->rs.race)
    munmap(p->rs.race, p->rs.race_bytes);
  p->rs.race = NULL;
  for (int r = 0; r < p->plan.nranks && !kill_now; r++)
    reap_by(&p->rs.devs[r], deadline);
  for (int r = 0; r < p->plan.nranks; r++)
    if (p->rs.devs[r].pid > 0 && !p->rs.devs[r].reaped)
      kill(p->rs.devs[r].pid, SIGKILL);
  for (int r = 0; r < p->plan.nranks; r++)
    shm_reap(&p->rs.devs[r], 1);
  if (s) {
    pld__free(s->runs);
    pld__free(s->devfab);
    pld__winlayout_release(&s->lay);
  }
  pld__free(s);
  p->be.cps = NULL;
  pld__free(p->rs.devs);
  pld__free(p->rs.resumes_seen);
  pld__free(p->rs.resumed_at);
  p->rs.devs = NULL;
  p->rs.resumes_seen = NULL;
  p->rs.resumed_at = NULL;
  p->rs.world = NULL;
  p->rs.started = 0;
}

/* Waits until each rank with start[r] set (NULL: every rank) reports
 * ready, or one died on the way. */
static int await_ready(struct pld_program *p, const unsigned char *start,
                       const char *fn) {
  int64_t deadline = pld__now_ns() + PLD__MS(PLD_START_TIMEOUT_MS);
  char corrupt[160];
  for (;;) {
    uint32_t ev = atomic_load(&p->rs.world->event);
    int up = 0, want = 0;
    for (int r = 0; r < p->plan.nranks; r++)
      if (!start || start[r]) {
        want++;
        up += (int)atomic_load_explicit(&p->rs.devs[r].ctl->ready,
                                        memory_order_acquire);
      }
    if (up == want)
      break;
    int dead = pld__find_dead(p, 1, corrupt, sizeof corrupt);
    if (dead >= 0)
      return pld__died(p, dead, corrupt);
    if (pld__now_ns() > deadline) {
      shm_stop(p, 1);
      return pld__fail(PLD_ERR_SYSTEM,
                       "%s: %d of %d devices did not start within %lld ms "
                       "(PLD_START_TIMEOUT_MS)",
                       fn, want - up, want,
                       (long long)pld__tunables()->PLD_START_TIMEOUT_MS);
    }
    /* Devices start: the host does not count as awake, and yields the
     * CPU at every look (as if more were awake than there are CPUs), for
     * as long as a start takes (a few hundred microseconds); a sleep
     * would add a wake-up to every start. */
    _Atomic uint32_t uncounted = 1;
    struct pld__spin yield_always = {.ns = PLD__SPIN_GROWTH *
                                           pld__tunables()->PLD_SPIN_US * 1000,
                                     .awake = &uncounted};
    pld__event_wait(&p->rs.world->event, ev, &p->rs.world->event_sleepers,
                    &yield_always, PLD__MS(PLD_LIVENESS_MS), 1);
  }
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__devstate *c = &p->rs.devs[r].ctl->st;
    if ((!start || start[r]) && c->status) {
      char msg[PLD__MSG_MAX];
      pld__copy_printable(msg, sizeof msg, c->msg, sizeof c->msg, 1);
      int st = pld__status_valid(c->status) ? c->status : PLD_ERR_SYSTEM;
      shm_stop(p, 1);
      return pld__fail_msg(st, msg);
    }
  }
  return PLD_OK;
}

/* Kills and reaps rank r's process, takes back what it left in shared
 * state (its share of the world's pollers, its doorbell's sleepers, its
 * control block) and starts a new one in its place, ready for the next
 * run.  Returns PLD_OK or the failure (message set). */
static int shm_restart(struct pld_program *p, int r) {
  struct pld__device *d = &p->rs.devs[r];
  if (!d->reaped)
    kill(d->pid, SIGKILL);
  shm_reap(d, 1);
  atomic_fetch_sub(&p->rs.world->awake, atomic_load(&d->ctl->awake));
  pld__shm_reset_rank(&shm_of(p)->fabric, r);
  pld__devctl_reset(d->ctl, 1);
  d->pid = 0;
  d->reaped = 0;
  unsigned char start[PLD_MAX_RANKS_INLINE];
  unsigned char *mask = p->plan.nranks <= PLD_MAX_RANKS_INLINE
                            ? start
                            : pld__calloc((size_t)p->plan.nranks, 1);
  if (!mask)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  memset(mask, 0, (size_t)p->plan.nranks);
  mask[r] = 1;
  int st = spawn(p, mask);
  if (st == PLD_OK)
    st = await_ready(p, mask, "pld_program_run");
  if (mask != start)
    pld__free(mask);
  return st;
}

/* The race detector's region (core/race.h), mapped before the device
 * processes start so that all of them share it; its pages are committed
 * only as shadows and records fill them. */
static int race_map(struct pld_program *p) {
  size_t *copy = pld__calloc((size_t)p->plan.nwinbufs + 1, sizeof *copy);
  if (!copy)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  for (int b = 0; b < p->plan.nwinbufs; b++)
    copy[b] = p->plan.winbufs[b]->phys;
  struct pld__race_shape shape = {
      p->plan.nranks, 1 + p->plan.plat->vector_cores + p->plan.plat->cube_cores,
      p->plan.nwinbufs, copy};
  size_t bytes = pld__race_bytes(&shape);
  void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (a == MAP_FAILED) {
    pld__free(copy);
    return pld__fail_api(PLD_ERR_SYSTEM, "race check: mapping %zu bytes: %s",
                         bytes, strerror(errno));
  }
  pld__race_init(a, &shape);
  pld__free(copy);
  p->rs.race = a;
  p->rs.race_bytes = bytes;
  return PLD_OK;
}

static void shm_copy_in(struct pld_program *p, const pld_arg *argv, int slot);

/* A device's zeroing of its own copies of the windows, at a queued run's
 * gate (f: its side of the fabric, struct pld__devrun.fabric). */
static void shm_zero_windows(struct pld__fabric *f, int rank) {
  pld__shm_zero_rank((struct pld__shm_fabric *)(void *)f, rank);
}

/* Maps the regions and forks every device process. */
static int shm_start(struct pld_program *p) {
  /* On another program's devices: pld_program_prepare started those
   * first (its memory is shared). */
  struct shm_state *s = pld__calloc(1, sizeof *s);
  p->rs.devs = pld__calloc((size_t)p->plan.nranks, sizeof *p->rs.devs);
  size_t *phys = pld__calloc(
      (size_t)(p->plan.nwinbufs > 0 ? p->plan.nwinbufs : 1), sizeof *phys);
  int st = !s || !p->rs.devs || !phys ||
                   !(s->runs = pld__calloc((size_t)p->plan.nranks,
                                           sizeof *s->runs)) ||
                   !(s->devfab =
                         pld__calloc((size_t)p->plan.nranks, sizeof *s->devfab))
               ? pld__fail_api(PLD_ERR_NOMEM, "out of memory")
               : PLD_OK;
  /* The windows' region: every device process inherits it (a program
   * sharing another's devices and windows: that one's, at the same
   * places, pld_compile checked). */
  for (int b = 0; b < p->plan.nwinbufs && !st; b++)
    phys[b] = p->plan.winbufs[b]->phys;
  if (!st)
    st = pld__winlayout_init(&s->lay, p->plan.nranks, p->plan.nwinbufs, phys,
                             p->plan.member);
  pld__free(phys);
  unsigned char *region = NULL;
  if (!st)
    st = pld__devices_map(p->rs.devs, p->plan.nranks, p->plan.plans,
                          shares_windows(p) ? 0 : s->lay.total, &p->rs.world,
                          &region);
  if (st) {
    if (s) {
      pld__free(s->runs);
      pld__free(s->devfab);
      pld__winlayout_release(&s->lay);
    }
    pld__free(s);
    pld__free(p->rs.devs);
    p->rs.devs = NULL;
    return st;
  }
  p->be.cps = s;
  p->rs.started = 1;
  s->region = shares_windows(p) ? shm_of(p->rs.share)->region : region;
  if (p->plan.races && (st = race_map(p))) {
    shm_stop(p, 1);
    return st;
  }
  pld__shm_fabric_init(&s->fabric, s->region, &s->lay, -1);
  for (int r = 0; r < p->plan.nranks; r++) {
    p->rs.devs[r].trace = pld__trace_area_of(p, r, &p->rs.devs[r].trace_bytes);
    /* Each device's side of the fabric, which its process inherits. */
    pld__shm_fabric_init(&s->devfab[r], s->region, &s->lay, r);
    s->runs[r] = (struct pld__devrun){.plan = &p->plan.plans[r],
                                      .ctl = p->rs.devs[r].ctl,
                                      .world = p->rs.world,
                                      .data = p->rs.devs[r].data,
                                      .fabric = &s->devfab[r].base,
                                      .trace = p->rs.devs[r].trace,
                                      .race = p->rs.race,
                                      .zero_windows = shm_zero_windows,
                                      .cpu_parts = p->plan.nranks,
                                      .cpu_part = r};
  }
  if ((st = spawn(p, NULL))) {
    shm_stop(p, 1);
    return st;
  }
  if (p->rs.start_argv) { /* the first run's inputs, while the devices start */
    shm_copy_in(p, p->rs.start_argv, (p->rs.slot + 1) % p->rs.nslots);
    p->rs.precopied = 1;
  }
  return await_ready(p, NULL, "pld_program_prepare");
}
/* Copies tensor slices between the host arguments and the device memory
 * of data slot `slot`. */
static void shm_copy_slices(struct pld_program *p, const pld_arg *argv, int in,
                            int slot) {
  for (int r = 0; r < p->plan.nranks; r++) {
    const struct pld__devplan *pl = &p->plan.plans[r];
    for (int b = 0; b < pl->nbufs; b++) {
      const struct pld__devbuf *buf = &pl->bufs[b];
      if (!pld__slice_copied(p, argv, buf, in))
        continue;
      unsigned char *host =
          (unsigned char *)argv[buf->host_arg].v.t->data + buf->host_offset;
      unsigned char *dev = pld__run_data(p, r, slot) + buf->offset;
      if (in)
        pld__copy(dev, host, buf->nbytes);
      else
        pld__copy(host, dev, buf->nbytes);
    }
  }
}

static void shm_copy_in(struct pld_program *p, const pld_arg *argv, int slot) {
  shm_copy_slices(p, argv, 1, slot);
  for (int r = 0; r < p->plan.nranks; r++)
    pld__plan_table_write(&p->plan.plans[r], pld__run_data(p, r, slot),
                          pld__run_table(p, r, argv, slot));
}

/* After a failed run, the collectives' signal views any device used, on
 * every rank (the devices are idle): the calls the failure broke left
 * credits, counts and call numbers behind, on ranks that took part in
 * them whether or not they noted the view. */
static void shm_clear_coll_sigs(struct pld_program *p) {
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__sig_uses *u = &p->rs.devs[r].ctl->uses;
    for (int i = 0, n = pld__coll_sig_count(u); i < n; i++) {
      int buf;
      size_t off, len;
      for (int q = 0;
           pld__coll_sig_view(p, u, i, &buf, &off, &len) && q < p->plan.nranks;
           q++)
        pld__shm_zero_bytes(&shm_of(p)->fabric, buf, q, off, len);
    }
  }
}

static int shm_post(struct pld_program *p, const pld_arg *argv,
                    uint32_t *posted) {
  const uint32_t n = p->rs.chain; /* > 0: a queued run, behind runs in flight */
  struct pld_program *group = p->rs.share ? p->rs.share : p;
  if (!n && !p->plan.keep_windows) /* fresh mappings are zero already */
    pld__shm_zero_all(&shm_of(p)->fabric);
  else if (!n && group->rs.coll_dirty)
    shm_clear_coll_sigs(p);
  if (!n)
    group->rs.coll_dirty = 0;
  if (!p->rs.precopied)
    shm_copy_in(p, argv, p->rs.slot);
  for (int r = 0; !n && r < p->plan.nranks; r++)
    atomic_store(&p->rs.devs[r].ctl->st.calls_done, 0);
  /* A queued run waits for every rank if it can reach beyond its
   * device's data slot (windows, device-resident tensors). */
  int reach = p->plan.nwinbufs > 0;
  for (int i = 0; i < p->plan.nargs && !reach; i++)
    reach = argv[i].kind == PLD_ARG_TENSOR &&
            (argv[i].v.t->flags & PLD__T_RESIDENT);
  const struct pld__cmd k = {PLD__CMD_RUN, (uint32_t)p->rs.slot, n,
                             (reach ? PLD__GATE_SYNC : 0u) |
                                 (p->plan.nwinbufs > 0 && !p->plan.keep_windows
                                      ? PLD__GATE_ZERO
                                      : 0u)};
  for (int r = 0; r < p->plan.nranks; r++)
    posted[r] = pld__devctl_post(p->rs.devs[r].ctl, k);
  return PLD_OK;
}

/* The host sees every control block live. */
/* The host sees each device's control block live. */
static struct pld__devstate *shm_view(const struct pld_program *p, int r) {
  return &p->rs.devs[r].ctl->st;
}

static int shm_caught_up(const struct pld_program *p, int r) {
  const struct pld__devctl *c = p->rs.devs[r].ctl;
  return atomic_load(&c->st.done_seq) == atomic_load(&c->cmd_seq);
}

static void shm_look(struct pld_program *p) { (void)p; }
static int shm_seen(struct pld_program *p, int r) {
  (void)p;
  (void)r;
  return 1;
}

static int32_t shm_cell_value(struct pld_program *p, int r, int i,
                              const struct pld__coreslot *s) {
  (void)i;
  return pld__shm_peek(&shm_of(p)->fabric, s->buf, r, (size_t)s->off);
}

static void shm_abort(struct pld_program *p, uint32_t why) {
  atomic_store_explicit(&p->rs.world->abort, why, memory_order_release);
  pld__shm_wake_all(&shm_of(p)->fabric);
  /* Devices waiting for a host task, or at a queued run's gate, look at
   * the abort word too.  Each word they wait on is bumped as they are
   * woken: a device still polling one sees it move (a wake alone would
   * be lost on it, and it would sleep a whole PLD_ABORT_POLL_MS), and
   * reads the abort word after the word (device.c: await_count). */
  pld__event_signal(&p->rs.world->tasks_done, &p->rs.world->tasks_sleepers, 1);
  pld__event_signal(&p->rs.world->q_ok, &p->rs.world->q_sleepers, 1);
  pld__event_signal(&p->rs.world->q_zeroed, &p->rs.world->q_sleepers, 1);
}

static void shm_await(struct pld_program *p, uint32_t seen, int64_t ns,
                      const struct pld__spin *spin) {
  pld__event_wait(&p->rs.world->event, seen, &p->rs.world->event_sleepers, spin,
                  ns, 1);
}

static int shm_finish(struct pld_program *p, const pld_arg *argv, int slot,
                      int st, const char *msg) {
  if (st)
    return pld__fail_msg(st, msg);
  shm_copy_slices(p, argv, 0, slot);
  return PLD_OK;
}

/* Every device's memory is mapped here: a host task's copies are
 * copies. */
static void shm_task_begin(struct pld_program *p, int k) {
  (void)p;
  (void)k;
}

static int shm_fetch(struct pld_program *p, int r, size_t dev_off, void *host,
                     size_t len) {
  pld__copy(host, pld__run_data(p, r, p->rs.slot) + dev_off, len);
  return PLD_OK;
}

static void shm_store(struct pld_program *p, int r, size_t dev_off,
                      const void *host, size_t len) {
  pld__copy(pld__run_data(p, r, p->rs.slot) + dev_off, host, len);
}

const struct pld__ctl_ops pld__ctl_shm = {
    .name = "shm",
    .caps = PLD__CTL_QUEUE | PLD__CTL_SHARE | PLD__CTL_RACES,
    .start = shm_start,
    .post = shm_post,
    .copy_in = shm_copy_in,
    .view = shm_view,
    .caught_up = shm_caught_up,
    .look = shm_look,
    .seen = shm_seen,
    .cell = shm_cell_value,
    .gone = shm_gone,
    .ended = shm_ended,
    .abort = shm_abort,
    .await = shm_await,
    .task_begin = shm_task_begin,
    .fetch = shm_fetch,
    .store = shm_store,
    .restart = shm_restart,
    .finish = shm_finish,
    .follow = NULL,
    .stop = shm_stop,
};
