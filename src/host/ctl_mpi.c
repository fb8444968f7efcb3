/* host/ctl_mpi.c: the MPI control plane (see host/ctl.h).  Under mpirun
 * every process runs the same host code; process r runs rank r's device
 * in itself (its AICPU and core threads; nothing is forked after MPI
 * starts).  Each process copies its own rank's In slices and posts its
 * own run.  Process 0 watches the run as the shared-memory host does,
 * over the latest snapshot of every other rank's control block (each
 * process sends one when its device finishes and every SNAP_NS while it
 * runs); it decides the run's result, stops the run when it must (an
 * abort to every process) and sends the result to the others.  Then every
 * process gets every rank's Out slices (one broadcast per slice), so that
 * all of them end with the same tensors. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/copy.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "fabric/mpi.h"
#include "fabric/mpi_proxy.h"
#include "host/backends.h"
#include "host/ctl.h"
#include "host/ctl_mpi_msg.h"
#include "host/resident.h"
#include "host/trace.h"

/* How often a process that does not watch sends its snapshot while its
 * device runs (and at once when it finishes). */
#define SNAP_NS PLD__MS(PLD_SNAPSHOT_MS)

/* A snapshot of a process's control block, as process 0 receives it. */
struct snap {
  uint32_t run;     /* the run it belongs to (1, 2, ...) */
  uint32_t answers; /* the newest ask of process 0 before it was taken */
  int32_t rank;
  int64_t taken_ns;             /* the sender's clock when taken */
  int32_t held[PLD__MAX_SLOTS]; /* the cell of each waiting slot */
  struct pld__devstate st;      /* what its device published */
};
/* The bytes of a snapshot that are sent. */
#define SNAP_SHOWN sizeof(struct snap)

/* The run's result, from process 0 to the others. */
struct verdict {
  uint32_t run;
  int32_t status, dead;
  char msg[PLD__MSG_MAX];
};

struct mpi_state {
  struct pld__mpi_prog *m;  /* the program's fabric */
  struct pld__mpi_msg *msg; /* its control messages */
  int me;
  struct pld__devrun run; /* this process's device */
  pthread_t thread;
  int thread_started;
  struct pld__devctl *live; /* its control block */
  unsigned char *data;      /* its data area */
  size_t data_bytes;
  struct pld__devstate *mirror; /* [rank]: the others' latest snapshots */
  int32_t *held;                /* [rank * PLD__MAX_SLOTS] */
  uint32_t *gen;                /* [rank]: the snapshot generation seen */
  uint32_t *answered;      /* [rank]: the ask its latest snapshot answers */
  unsigned char *seen;     /* [rank]: a snapshot of this run arrived */
  unsigned char *ticketed; /* [rank]: its failure has a ticket */
  uint32_t tickets;
  uint32_t asks;    /* asks for fresh snapshots made (process 0) */
  uint32_t runs;    /* runs posted */
  struct snap *out; /* the snapshot this process sends */
};

static struct mpi_state *mpi_of(const struct pld_program *p) {
  return p->be.cps;
}

/* The host sees its own rank's device live, the others' latest snapshot. */
static struct pld__devstate *mpi_view(const struct pld_program *p, int r) {
  struct mpi_state *s = mpi_of(p);
  return r == s->me ? &s->live->st : &s->mirror[r];
}

/* Its own device against its commands, the others' last snapshot against
 * the runs posted (one command a run). */
static int mpi_caught_up(const struct pld_program *p, int r) {
  struct mpi_state *s = mpi_of(p);
  return r == s->me ? atomic_load(&s->live->st.done_seq) ==
                          atomic_load(&s->live->cmd_seq)
                    : atomic_load(&s->mirror[r].done_seq) == s->runs;
}

static void free_state(struct pld_program *p, struct mpi_state *s) {
  if (s) {
    if (s->data)
      munmap(s->data, s->data_bytes);
    free(s->live);
    pld__free(s->mirror);
    pld__free(s->held);
    pld__free(s->gen);
    pld__free(s->answered);
    pld__free(s->seen);
    pld__free(s->ticketed);
    pld__free(s->out);
    pld__free(s);
  }
  pld__free(p->rs.world);
  pld__free(p->rs.devs);
  p->rs.world = NULL;
  p->rs.devs = NULL;
  p->be.cps = NULL;
}

static int mpi_start(struct pld_program *p) {
  const int n = p->plan.nranks;
  struct mpi_state *s = pld__calloc(1, sizeof *s);
  p->rs.devs = pld__calloc((size_t)n, sizeof *p->rs.devs);
  p->rs.world = pld__calloc(1, sizeof *p->rs.world);
  size_t snap_bytes = sizeof(struct snap) > sizeof(struct verdict)
                          ? sizeof(struct snap)
                          : sizeof(struct verdict);
  if (s) {
    s->me = pld__mpi_rank();
    s->live = aligned_alloc(4096, pld__round_up(sizeof *s->live, 4096));
    s->mirror = pld__calloc((size_t)n, sizeof *s->mirror);
    s->held = pld__calloc((size_t)n * PLD__MAX_SLOTS, sizeof *s->held);
    s->gen = pld__calloc((size_t)n, sizeof *s->gen);
    s->answered = pld__calloc((size_t)n, sizeof *s->answered);
    s->seen = pld__calloc((size_t)n, 1);
    s->ticketed = pld__calloc((size_t)n, 1);
    s->out = pld__calloc(1, snap_bytes);
  }
  if (!s || !p->rs.devs || !p->rs.world || !s->live || !s->mirror || !s->held ||
      !s->gen || !s->answered || !s->seen || !s->ticketed || !s->out) {
    free_state(p, s);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  p->be.cps = s;
  const struct pld__devplan *plan = &p->plan.plans[s->me];
  s->data_bytes =
      (size_t)plan->nslots * pld__plan_slot_stride(plan) + plan->heap_bytes;
  s->data = mmap(NULL, s->data_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  /* A guard page before every slot but the first (see plan.h). */
  for (int k = 1; s->data != MAP_FAILED && k < plan->nslots; k++)
    mprotect(s->data + (size_t)k * pld__plan_slot_stride(plan) - 4096, 4096,
             PROT_NONE);
  if (s->data == MAP_FAILED) {
    s->data = NULL;
    free_state(p, s);
    return pld__fail_api(PLD_ERR_SYSTEM,
                         "rank %d: mapping %zu bytes of "
                         "device memory failed",
                         plan->rank, plan->data_bytes);
  }
  pld__devctl_reset(s->live, 0);
  for (int r = 0; r < n; r++) /* as a device's zeroed block reads */
    memcpy(&s->mirror[r], &s->live->st, sizeof s->mirror[r]);
  p->rs.devs[s->me].ctl = s->live;
  p->rs.devs[s->me].data = s->data;

  size_t *phys = pld__calloc((size_t)(p->plan.nwinbufs ? p->plan.nwinbufs : 1),
                             sizeof *phys);
  if (!phys) {
    free_state(p, s);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  for (int b = 0; b < p->plan.nwinbufs; b++)
    phys[b] = p->plan.winbufs[b]->phys;
  struct pld__mpi_setup set = {.nranks = n,
                               .nbufs = p->plan.nwinbufs,
                               .phys = phys,
                               .member = p->plan.member,
                               .same_node_rma = p->be.same_node_rma};
  struct pld__mpi_msg_setup msgset = {
      .nranks = n,
      .snap_bytes = snap_bytes,
      .hooks = {&p->rs.world->abort, &p->rs.world->event,
                &p->rs.world->event_sleepers, &p->rs.world->tasks_done}};
  int st = pld__mpi_prog_create(&set, &s->m);
  pld__free(phys);
  if (st) {
    free_state(p, s);
    return st;
  }
  if ((st = pld__mpi_msg_create(s->m, &msgset, &s->msg))) {
    pld__mpi_prog_destroy(s->m, 1);
    free_state(p, s);
    return st;
  }
  /* Processes of a node share its CPUs: they count their awake threads
   * together. */
  p->rs.world->awake_at = pld__mpi_awake(s->m);
  p->rs.world->awake_cpus = pld__mpi_node_cpus(s->m);
  /* No race detector under mpi, nor queued runs. */
  s->run = (struct pld__devrun){.plan = plan,
                                .ctl = s->live,
                                .world = p->rs.world,
                                .data = s->data,
                                .fabric = pld__mpi_fabric(s->m),
                                .trace = pld__trace_area_of(p, s->me, NULL),
                                .peer_gone = pld__mpi_peer_gone,
                                .ending = pld__mpi_ending};
  pld__mpi_set_spin(s->m, &s->run.spin);
  pld__mpi_on_failure(pld__device_say_end);
  if ((st = pld__device_thread(&s->run, &s->thread))) {
    pld__mpi_msg_destroy(s->msg, 0);
    pld__mpi_prog_destroy(s->m, 0);
    free_state(p, s);
    return st;
  }
  s->thread_started = 1;
  p->rs.started = 1;
  int64_t deadline = pld__now_ns() + PLD__MS(PLD_START_TIMEOUT_MS);
  while (!atomic_load_explicit(&s->live->ready, memory_order_acquire)) {
    if (pld__now_ns() > deadline)
      return pld__fail_api(PLD_ERR_SYSTEM,
                           "rank %d (device %d) did not "
                           "start within %lld ms (PLD_START_TIMEOUT_MS)",
                           s->me, plan->device_id,
                           (long long)pld__tunables()->PLD_START_TIMEOUT_MS);
    pld__nap_ns(PLD__US(PLD_REAP_POLL_US));
  }
  if (s->live->st.status) {
    char msg[PLD__MSG_MAX];
    pld__copy_printable(msg, sizeof msg, s->live->st.msg,
                        sizeof s->live->st.msg, 1);
    return pld__fail_msg(s->live->st.status, msg);
  }
  return PLD_OK;
}

/* Rank r's len bytes at dev_off of its device memory into host, on every
 * process (a broadcast from r's: collective). */
static int mpi_fetch(struct pld_program *p, int r, size_t dev_off, void *host,
                     size_t len) {
  struct mpi_state *s = mpi_of(p);
  if (r == s->me)
    pld__copy(host, pld__run_data(p, r, p->rs.slot) + dev_off, len);
  int st = pld__mpi_msg_bcast(s->msg, host, len, r);
  return st ? pld__fail_api(st,
                            "copying %zu bytes from rank %d's "
                            "device: %s",
                            len, r, pld_last_error())
            : PLD_OK;
}

/* Copies this rank's slices between the host arguments and its device
 * memory (in: the In slices; out: the Out slices, which every process
 * gets from every rank). */
static int mpi_copy_slices(struct pld_program *p, const pld_arg *argv, int in,
                           int slot) {
  struct mpi_state *s = mpi_of(p);
  for (int r = 0; r < p->plan.nranks; r++) {
    if (in && r != s->me)
      continue;
    const struct pld__devplan *pl = &p->plan.plans[r];
    for (int b = 0; b < pl->nbufs; b++) {
      const struct pld__devbuf *buf = &pl->bufs[b];
      if (!pld__slice_copied(p, argv, buf, in))
        continue;
      unsigned char *host =
          (unsigned char *)argv[buf->host_arg].v.t->data + buf->host_offset;
      int st = PLD_OK;
      if (in)
        pld__copy(pld__run_data(p, r, slot) + buf->offset, host, buf->nbytes);
      else
        st = mpi_fetch(p, r, buf->offset, host, buf->nbytes);
      if (st)
        return st;
    }
  }
  return PLD_OK;
}

static void mpi_copy_in(struct pld_program *p, const pld_arg *argv, int slot) {
  int me = mpi_of(p)->me;
  mpi_copy_slices(p, argv, 1, slot);
  pld__plan_table_write(&p->plan.plans[me], pld__run_data(p, me, slot),
                        pld__run_table(p, me, argv, slot));
}

/* After a failed run, this process's copies of the collectives' signal
 * views any rank's device used (each process learns every rank's: the
 * calls the failure broke left credits, counts and call numbers behind,
 * on ranks that took part in them whether or not they noted the view). */
static void mpi_clear_coll_sigs(struct pld_program *p) {
  struct mpi_state *s = mpi_of(p);
  static _Thread_local struct pld__sig_uses u;
  for (int r = 0; r < p->plan.nranks; r++) {
    memcpy(&u, &s->live->uses, sizeof u);
    /* Rank r runs in process r.  MPI failing here fails the barrier of
     * mpi_post, which reports it. */
    if (pld__mpi_msg_bcast(s->msg, &u, sizeof u, r))
      return;
    for (int i = 0, n = pld__coll_sig_count(&u); i < n; i++) {
      int buf;
      size_t off, len;
      if (pld__coll_sig_view(p, &u, i, &buf, &off, &len))
        pld__mpi_zero_bytes(s->m, buf, off, len);
    }
  }
}

static int mpi_post(struct pld_program *p, const pld_arg *argv,
                    uint32_t *posted) {
  struct mpi_state *s = mpi_of(p);
  if (!p->plan.keep_windows)
    pld__mpi_zero(s->m);
  else if (p->rs.coll_dirty)
    mpi_clear_coll_sigs(p);
  p->rs.coll_dirty = 0;
  if (!p->rs.precopied)
    mpi_copy_in(p, argv, p->rs.slot);
  /* Nothing of the other ranks' last run counts in this one (a host task
   * waits for their calls of this run). */
  for (int r = 0; r < p->plan.nranks; r++)
    atomic_store(&mpi_view(p, r)->calls_done, 0);
  memset(s->seen, 0, (size_t)p->plan.nranks);
  memset(s->ticketed, 0, (size_t)p->plan.nranks);
  s->tickets = 0;
  s->runs++;
  pld__mpi_msg_running(s->msg, 1);
  /* No rank's data may reach a window before its owner zeroed it. */
  int st = pld__mpi_msg_barrier(s->msg);
  if (st) {
    pld__mpi_msg_running(s->msg, 0);
    return pld__fail_api(st, "%s", pld_last_error());
  }
  pld__devctl_post(s->live,
                   (struct pld__cmd){PLD__CMD_RUN, (uint32_t)p->rs.slot, 0, 0});
  for (int r = 0; r < p->plan.nranks; r++)
    posted[r] = s->runs;
  return PLD_OK;
}

/* Takes the newest snapshot of every other rank into its mirror, its
 * times moved onto this process's clock. */
static void mpi_look(struct pld_program *p) {
  struct mpi_state *s = mpi_of(p);
  static _Thread_local struct snap in;
  for (int r = 0; r < p->plan.nranks; r++) {
    if (r == s->me ||
        !pld__mpi_msg_snapshot(s->msg, r, &in, SNAP_SHOWN, &s->gen[r]) ||
        in.run != s->runs)
      continue;
    int64_t shift = pld__now_ns() - in.taken_ns;
    struct pld__watch *w = &in.st.watch;
    if (atomic_load(&w->aicpu_since_ns))
      atomic_fetch_add(&w->aicpu_since_ns, shift);
    for (int i = 0; i < PLD__MAX_SLOTS; i++)
      if (atomic_load(&w->slots[i].since_ns))
        atomic_fetch_add(&w->slots[i].since_ns, shift);
    memcpy(&s->mirror[r], &in.st, sizeof s->mirror[r]);
    memcpy(&s->held[(size_t)r * PLD__MAX_SLOTS], in.held, sizeof in.held);
    s->answered[r] = in.answers;
    s->seen[r] = 1;
  }
  /* Failures in the order this process learns of them; a rank stopped
   * because another failed comes after every other. */
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__devstate *c = mpi_view(p, r);
    if (s->ticketed[r] || !(r == s->me || s->seen[r]) ||
        atomic_load(&c->done_seq) != s->runs || !c->status)
      continue;
    s->ticketed[r] = 1;
    c->ticket = s->tickets++ + (c->status == PLD_ERR_ABORTED ? 1u << 30 : 0);
  }
}

static int mpi_seen(struct pld_program *p, int r) {
  return r == mpi_of(p)->me || mpi_of(p)->seen[r];
}

/* A snapshot shows its rank as it was when taken, which may be before
 * the quiet began (snapshots come every SNAP_NS, later under load): rank
 * 1 waiting in an old one while rank 0 now waits for it is no deadlock
 * if rank 1 has since gone on.  So process 0 asks every other process for
 * a fresh snapshot, and confirms once each rank still running has sent
 * one taken after the ask arrived. */
static int mpi_confirm(struct pld_program *p, uint32_t *asked, int *yes) {
  struct mpi_state *s = mpi_of(p);
  *yes = 0;
  if (!*asked) {
    *asked = ++s->asks;
    int st = pld__mpi_msg_say(s->msg, PLD__MPI_ASKS, *asked);
    return st ? pld__fail_api(st, "%s", pld_last_error()) : 0;
  }
  for (int r = 0; r < p->plan.nranks; r++)
    if (r != s->me && atomic_load(&mpi_view(p, r)->done_seq) != s->runs &&
        s->answered[r] < *asked)
      return PLD_OK;
  *yes = 1;
  return PLD_OK;
}

static int32_t mpi_cell_value(struct pld_program *p, int r, int i,
                              const struct pld__coreslot *sl) {
  struct mpi_state *s = mpi_of(p);
  if (r == s->me) {
    struct pld__fabric *f = pld__mpi_fabric(s->m);
    return f->ops->cell(f, sl->buf, (size_t)sl->off);
  }
  return s->held[(size_t)r * PLD__MAX_SLOTS + (size_t)i];
}

/* A device in this process ends only with it (mpirun notices). */
static int mpi_gone(struct pld_program *p, int r, int block) {
  (void)p;
  (void)r;
  (void)block;
  return 0;
}

static void mpi_abort(struct pld_program *p, uint32_t why) {
  pld__mpi_msg_abort(mpi_of(p)->msg, why);
}

static void mpi_await(struct pld_program *p, uint32_t seen, int64_t ns,
                      const struct pld__spin *spin) {
  pld__event_wait(&p->rs.world->event, seen, &p->rs.world->event_sleepers, spin,
                  ns, 1);
}

/* Every process runs every host task, on the same inputs (each rank's
 * device bytes broadcast from its process), so that each has its host
 * intermediates and each can copy the results into its own device. */
static void mpi_task_begin(struct pld_program *p, int k) {
  pld__mpi_msg_say(mpi_of(p)->msg, PLD__MPI_TASKS, (uint32_t)k + 1);
}

static void mpi_store(struct pld_program *p, int r, size_t dev_off,
                      const void *host, size_t len) {
  struct mpi_state *s = mpi_of(p);
  if (r == s->me)
    pld__copy(pld__run_data(p, r, p->rs.slot) + dev_off, host, len);
}

/* A process that does not watch runs the host tasks process 0 said it
 * runs (its own result does not count: process 0's decides the run), and
 * lets its device go on after each. */
static void follow_tasks(struct pld_program *p, const pld_arg *argv,
                         uint32_t *ran) {
  struct mpi_state *s = mpi_of(p);
  uint32_t said = pld__mpi_msg_said(s->msg, PLD__MPI_TASKS);
  while (*ran < said && *ran < (uint32_t)p->plan.ntasks) {
    pld__task_run(p, argv, (int)*ran);
    ++*ran;
    atomic_store_explicit(&p->rs.world->tasks_done, *ran, memory_order_release);
    pld__futex_wake(&p->rs.world->tasks_done, 1);
  }
}

static int mpi_restart(struct pld_program *p, int r) {
  (void)p;
  return pld__fail(PLD_ERR_STATE,
                   "under the MPI fabric rank %d's device runs in its MPI "
                   "process and cannot be replaced",
                   r);
}

/* Every process: the result known, the Out slices gathered from data slot
 * `slot` on success. */
static int conclude(struct pld_program *p, const pld_arg *argv, int slot,
                    int st, const char *msg, int dead) {
  struct mpi_state *s = mpi_of(p);
  pld__mpi_msg_running(s->msg, 0);
  if (dead && !p->rs.dead) {
    p->rs.dead = 1;
    pld__catf(p->rs.dead_msg, sizeof p->rs.dead_msg, "%s", msg);
  }
  if (st)
    return pld__fail_msg(st, msg);
  return mpi_copy_slices(p, argv, 0, slot);
}

static int mpi_finish(struct pld_program *p, const pld_arg *argv, int slot,
                      int st, const char *msg) {
  struct mpi_state *s = mpi_of(p);
  static _Thread_local struct verdict v;
  memset(&v, 0, sizeof v);
  v.run = s->runs;
  v.status = st;
  v.dead = p->rs.dead;
  pld__catf(v.msg, sizeof v.msg, "%s", st ? msg : "");
  int sent = pld__mpi_msg_send_verdict(s->msg, &v, sizeof v);
  if (sent && !st) {
    st = sent;
    pld__catf(v.msg, sizeof v.msg, "%s: %s", pld__api_name(), pld_last_error());
  }
  return conclude(p, argv, slot, st, v.msg, p->rs.dead);
}

/* Sends this process's snapshot to process 0: the control block, each
 * slot copied whole or (changing while copied) shown idle, and the value
 * of each waited cell. */
static void send_snapshot(struct pld_program *p, uint32_t answers) {
  struct mpi_state *s = mpi_of(p);
  struct snap *o = s->out;
  o->run = s->runs;
  o->answers = answers;
  o->rank = s->me;
  memcpy(&o->st, &s->live->st, sizeof o->st);
  struct pld__fabric *f = pld__mpi_fabric(s->m);
  for (int i = 0; i < PLD__MAX_SLOTS; i++) {
    struct pld__coreslot *from = &s->live->st.watch.slots[i],
                         *to = &o->st.watch.slots[i];
    uint32_t seq = atomic_load_explicit(&from->seq, memory_order_acquire);
    memcpy(to, from, sizeof *to);
    PLD__SLOT_FENCE(memory_order_acquire);
    if ((seq & 1) || atomic_load(&from->seq) != seq) {
      atomic_store(&to->state, PLD__CORE_IDLE);
      atomic_store(&to->seq, seq & ~1u);
    }
    o->held[i] = atomic_load(&to->state) == PLD__CORE_WAITING && to->buf >= 0 &&
                         to->buf < p->plan.nwinbufs &&
                         (size_t)to->off + 4 <= p->plan.winbufs[to->buf]->phys
                     ? f->ops->cell(f, to->buf, (size_t)to->off)
                     : 0;
  }
  o->taken_ns = pld__now_ns();
  pld__mpi_msg_send_snapshot(s->msg, o, SNAP_SHOWN);
}

static int mpi_follow(struct pld_program *p, const pld_arg *argv, int *st) {
  struct mpi_state *s = mpi_of(p);
  if (s->me == 0)
    return 0; /* process 0 watches */
  static _Thread_local struct verdict v;
  struct pld__spin spin = pld__world_spin(p->rs.world, NULL);
  uint32_t done_sent = UINT32_MAX, calls_sent = 0, tasks_ran = 0;
  uint32_t answered = pld__mpi_msg_said(s->msg, PLD__MPI_ASKS);
  int64_t last = 0;
  for (;;) {
    uint32_t ev =
        atomic_load_explicit(&p->rs.world->event, memory_order_acquire);
    if (pld__mpi_msg_verdict(s->msg, &v, sizeof v) && v.run == s->runs)
      break;
    follow_tasks(p, argv, &tasks_ran);
    /* At once when the device finished or finished a call (a host task
     * may wait for it) or process 0 asks, else every SNAP_NS. */
    uint32_t asked = pld__mpi_msg_said(s->msg, PLD__MPI_ASKS);
    uint32_t done = atomic_load(&s->live->st.done_seq);
    uint32_t calls = atomic_load(&s->live->st.calls_done);
    int64_t now = pld__now_ns();
    if ((done == s->runs && done_sent != done) || calls != calls_sent ||
        asked != answered || (done != s->runs && now - last >= SNAP_NS)) {
      send_snapshot(p, asked);
      answered = asked;
      done_sent = done;
      calls_sent = calls;
      last = now;
    }
    pld__event_wait(&p->rs.world->event, ev, &p->rs.world->event_sleepers,
                    &spin, SNAP_NS, 1);
  }
  *st = conclude(p, argv, p->rs.slot, v.status, v.msg, v.dead);
  return 1;
}

/* Stops the device thread and frees the program's windows (collective:
 * every process destroys its programs alike).  A program found dead may
 * have a device thread that never stops: its memory is left to it. */
static void mpi_stop(struct pld_program *p, int kill_now) {
  struct mpi_state *s = mpi_of(p);
  if (kill_now || !s)
    return; /* the collective part comes with pld_program_destroy */
  int abandon = p->rs.dead;
  if (s->thread_started && !abandon) {
    pld__devctl_post(s->live, (struct pld__cmd){PLD__CMD_STOP, 0, 0, 0});
    pthread_join(s->thread, NULL);
  } else if (s->thread_started) {
    pthread_detach(s->thread);
  }
  pld__mpi_msg_destroy(s->msg, abandon);
  pld__mpi_prog_destroy(s->m, abandon);
  p->rs.started = 0;
  if (abandon) {
    p->be.cps = NULL; /* the device thread may still use it */
    pld__free(p->rs.devs);
    p->rs.devs = NULL;
  } else {
    free_state(p, s);
  }
  pld__free(p->rs.resumes_seen);
  pld__free(p->rs.resumed_at);
  p->rs.resumes_seen = NULL;
  p->rs.resumed_at = NULL;
}

/* Rank r runs in process r. */
static void mpi_share(struct pld_program *p, int r, void *buf, size_t n) {
  pld__mpi_msg_bcast(mpi_of(p)->msg, buf, n, r);
}

static const struct pld__ctl_ops mpi_ops = {
    .name = "mpi",
    .caps = PLD__CTL_OWN_RANK,
    .start = mpi_start,
    .post = mpi_post,
    .copy_in = mpi_copy_in,
    .view = mpi_view,
    .caught_up = mpi_caught_up,
    .look = mpi_look,
    .seen = mpi_seen,
    .confirm = mpi_confirm,
    .cell = mpi_cell_value,
    .gone = mpi_gone,
    .abort = mpi_abort,
    .await = mpi_await,
    .task_begin = mpi_task_begin,
    .fetch = mpi_fetch,
    .store = mpi_store,
    .restart = mpi_restart,
    .finish = mpi_finish,
    .follow = mpi_follow,
    .share = mpi_share,
    .stop = mpi_stop,
};

/* Registered in host/backends.c (in a build with MPI only). */
const struct pld__ctl_backend pld__ctl_backend_mpi = {
    .version = PLD__CTL_BACKEND_VERSION,
    .name = "mpi",
    .ops = &mpi_ops,
    .init = pld__mpi_init,
    .size = pld__mpi_size,
    .rank = pld__mpi_rank,
    .default_device = pld__mpi_default_device,
};
