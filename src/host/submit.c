/* host/submit.c: asynchronous runs (pld_program_submit and the pld_job
 * handles).  A program's submitted runs go one of two ways, chosen at its
 * first submit:
 *   queued: where runs can be queued on the devices (the shm fabric, no
 *     host tasks, trace or race check, devices of its own:
 *     queue_eligible), a submit checks the run, copies its inputs and
 *     posts it behind the runs in flight, and the devices start it as soon
 *     as those succeeded everywhere, without the host in between.  The
 *     threads that submit, test and wait drive the runs in flight, one at
 *     a time (the driver): they watch the oldest and end its job once it
 *     is over, copying its outputs back;
 *   by a runner thread: the program's runner takes the runs from its
 *     queue in submission order and runs each as pld_program_run does
 *     (host/run.c's pld__program_run_now).
 * Either way the caller's thread goes on meanwhile.  At most max_in_flight
 * runs are queued or running: a further submit waits for one to finish,
 * or fails at once with PLD_SUBMIT_NOWAIT.  A failed run cancels the runs
 * queued behind it; a crash (the program dead) fails every run in flight.
 *
 * Handles stay valid until pld_job_free, whatever happens to the
 * program.  A freed handle's memory is kept for reuse by later handles, so
 * using it before it is reused is refused (PLD_ERR_ARG), and after is
 * undetectable: it then names another job. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "host/ctl.h"
#include "host/inspect.h"
#include "host/run.h"
#include "host/submit.h"

#define JOB_LIVE 0x6a6f626cu  /* "jobl" */
#define JOB_FREED 0x6a6f6266u /* "jobf" */

/* ---- queued runs: posted to the devices, watched by the driver --------- */

/* A run queued on the devices (struct pld__cmd), behind the runs in
 * flight; the driver watches it with the loop of host/run.c once it is
 * the oldest. */
struct pld__qrun {
  struct pld__loop l;
  uint32_t n; /* its number in its chain */
  int begun;  /* its watch began: it is the oldest in flight */
  uint32_t posted[];
};

/* Whether p's submitted runs can be queued on its devices: pld_compile
 * found they can (p->queue_ok), and it has devices of its own (the others
 * go through a runner thread). */
static int queue_eligible(const struct pld_program *p) {
  return p->plan.queue_ok && !p->rs.share && !p->rs.sharers;
}

int pld__queue_chain_full(const struct pld_program *p) {
  /* The devices' counts of the chain (n times the ranks) stay in 31
   * bits. */
  return p->rs.chain >= (UINT32_MAX / 2) / (uint32_t)p->plan.nranks - 1;
}

/* Checks a run's arguments, copies its inputs into the next data slot and
 * posts it behind the in_flight runs (0: a chain begins).  Returns PLD_OK
 * with *out the run, or the failure of its checks (message set). */
static int queue_post(struct pld_program *p, int argc, const pld_arg *argv,
                      int in_flight, struct pld__qrun **out) {
  *out = NULL;
  int st = pld__run_check(p, argc, argv);
  if (st)
    return st;
  struct pld__qrun *q =
      pld__malloc(sizeof *q + (size_t)p->plan.nranks * sizeof q->posted[0]);
  if (!q)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  if (!in_flight)
    pld__run_chain_begin(p);
  else
    p->rs.chain++;
  q->n = p->rs.chain;
  q->begun = 0;
  pld__run_slot_next(p);
  q->l.slot = p->rs.slot;
  p->rs.precopied = 0;
  st = p->be.cp->post(p, argv, q->posted);
  if (st)
    pld__free(q);
  else
    *out = q;
  return st;
}

/* The run's number in its chain. */
static uint32_t queue_number(const struct pld__qrun *q) { return q->n; }

/* Looks once at q, the oldest run in flight: 1 once it is over (*st its
 * status, message set; its Out slices copied into argv's tensors), else
 * 0; queue_await sleeps until the next look is due. */
static int queue_step(struct pld_program *p, struct pld__qrun *q,
                      const pld_arg *argv, int *st) {
  if (!q->begun) {
    pld__loop_begin(p, &q->l, q->posted, q->l.slot);
    q->begun = 1;
  }
  if (!pld__loop_step(p, &q->l, argv, st))
    return 0;
  pld__run_ended(p, *st);
  return 1;
}

static void queue_await(struct pld_program *p, struct pld__qrun *q) {
  pld__loop_await(p, &q->l);
}

static void queue_free(struct pld__qrun *q) { pld__free(q); }

/* Lets no more runs of the chain start; returns the number of the last
 * that did (or will: the runs up to it run to their end). */
static uint32_t queue_close(struct pld_program *p) {
  return atomic_fetch_or(&p->rs.world->q_open, PLD__Q_CLOSED) & ~PLD__Q_CLOSED;
}

/* Waits until every device took every command posted, the runs still
 * queued cancelled at their gates (stop: the chain is stopped first; a
 * failed run stopped it already).  Returns PLD_OK, or the crash of a
 * device meanwhile (the program is then dead). */
static int queue_drain(struct pld_program *p, int stop) {
  if (stop)
    p->be.cp->abort(p, PLD__ABORT_FAILED);
  char corrupt[160];
  for (;;) {
    uint32_t ev =
        atomic_load_explicit(&p->rs.world->event, memory_order_acquire);
    int left = 0;
    for (int r = 0; r < p->plan.nranks; r++)
      left += !p->be.cp->caught_up(p, r);
    if (!left)
      return PLD_OK;
    int dead = pld__find_dead(p, 1, corrupt, sizeof corrupt);
    if (dead >= 0)
      return pld__died(p, dead, corrupt);
    p->be.cp->await(p, ev, PLD__MS(PLD_LIVENESS_MS), &p->rs.spin);
  }
}

/* ---- jobs and runners --------------------------------------------------- */

enum { QUEUED, RUNNING, DONE };

struct pld_job {
  uint32_t magic;
  _Atomic int state; /* QUEUED, RUNNING, DONE (changed under the lock) */
  int precopied;     /* its inputs are in the data slot it will use */
  int status;
  uint64_t seq;          /* its number in the runner's submissions, from 1 */
  struct pld_program *p; /* the program it runs (one of a group's) */
  int queued;            /* queued on the devices (q, until it is done) */
  struct pld__qrun *q;
  int argc;
  pld_arg argv[PLD_MAX_PARAMS];
  struct pld_job *next; /* the queue, or the free list */
  char msg[PLD__MSG_MAX];
};

/* Every job's state and every runner's queue are under one lock; one
 * condition says something changed (a job queued or done, a runner
 * stopping).  Runs take microseconds at least: one lock is enough. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
/* Bumped with every change, for the threads that poll a little before
 * they sleep on the condition (a run takes microseconds: a sleep costs a
 * wake-up on the critical path). */
static _Atomic uint32_t changes;

/* Called with mu held: wakes everyone waiting for a change. */
static void announce(void) {
  atomic_fetch_add_explicit(&changes, 1, memory_order_release);
  pthread_cond_broadcast(&changed);
}

/* How runners and waiters poll: PLD_SPIN_US, counting themselves awake
 * among themselves (not in a program's world, which a crash or a destroy
 * unmaps while they may still poll). */
static _Atomic uint32_t pollers;

static struct pld__spin poll_spin(void) {
  struct pld__spin s = {
      pld__tunables()->PLD_SPIN_US * 1000, &pollers, NULL, pld__cpus(), 0, 0};
  return s;
}

/* Polls (as spin says, counting as awake) until `done` holds or the time
 * is up; called without mu. */
static void poll_until(int (*done)(const void *), const void *arg,
                       const struct pld__spin *spin) {
  if (done(arg))
    return;
  pld__awake(spin);
  uint32_t seen = atomic_load_explicit(&changes, memory_order_acquire);
  for (;;) {
    uint32_t now = pld__spin_change(&changes, seen, spin);
    if (now == seen || done(arg))
      break;
    seen = now;
  }
  pld__asleep(spin);
}

/* A program's runner: its queue and thread, or the program whose devices
 * queue its runs. */
struct pld__runner {
  pthread_t thread;
  int started, stopping;
  struct pld_job *head, *tail; /* queued, in submission order */
  int in_flight, max;
  uint64_t submitted;
  struct pld_program *queued; /* its jobs are queued on its devices */
  int driving;                /* a thread drives them */
  const char *driver_api;     /* the driver's call context before */
};

/* Freed handles, for reuse (never returned to the allocator). */
static struct pld_job *free_jobs;

/* Called with mu held: a new job of r running p with these arguments,
 * counted in flight (NULL: out of memory, the failure set). */
static struct pld_job *job_new(struct pld__runner *r, struct pld_program *p,
                               int argc, const pld_arg *argv) {
  struct pld_job *j = free_jobs;
  if (j)
    free_jobs = j->next;
  else if (!(j = pld__malloc(sizeof *j))) {
    pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    return NULL;
  }
  memset(j, 0, offsetof(struct pld_job, msg)); /* and an empty message: */
  j->msg[0] = '\0';
  j->magic = JOB_LIVE;
  j->argc = argc;
  memcpy(j->argv, argv, (size_t)argc * sizeof *argv);
  j->p = p;
  j->seq = ++r->submitted;
  j->state = QUEUED;
  r->in_flight++;
  return j;
}

/* Called with mu held: j joins the end of r's queue. */
static void job_append(struct pld__runner *r, struct pld_job *j) {
  if (r->tail)
    r->tail->next = j;
  else
    __atomic_store_n(&r->head, j, __ATOMIC_RELEASE);
  r->tail = j;
}

/* The refusal of a submit with PLD_SUBMIT_NOWAIT when r is full. */
static int runner_busy(const struct pld_program *p,
                       const struct pld__runner *r) {
  return pld__fail_api(PLD_ERR_BUSY,
                       "%s: %d runs are in flight already, "
                       "the most the program allows (pld_config.max_in_flight)",
                       p->plan.host.sig->name, r->max);
}

/* msg without the name of the call that said it when that is the run's
 * own ("pld_program_run: " or "pld_program_submit: "): the job's message
 * names the run instead. */
static const char *run_said(const char *msg) {
  static const char *const fns[] = {"pld_program_run: ",
                                    "pld_program_submit: "};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (!strncmp(msg, fns[i], strlen(fns[i])))
      return msg + strlen(fns[i]);
  return msg;
}

/* j's result: status st and message msg, the run's failure however it
 * failed (its checks, a kernel's or device function's failure, a
 * deadlock, a time limit, a crash), named by the job's run: "pld_job: run
 * 2: pld_load: kernel ...", "pld_job: run 2: deadlock: ...". */
static void job_result(struct pld_job *j, int st, const char *msg) {
  j->status = st;
  if (st)
    pld__catf(j->msg, sizeof j->msg, "pld_job: run %llu: %s",
              (unsigned long long)j->seq, run_said(msg));
}

/* A failed job's message past its "pld_job: run N: ". */
static const char *job_said(const struct pld_job *j) {
  const char *m = strchr(j->msg + strlen("pld_job: run "), ':');
  return m ? m + 2 : j->msg;
}

/* Called with mu held: j is finished, its result set. */
static void job_end(struct pld__runner *r, struct pld_job *j) {
  j->state = DONE;
  if (j->q) {
    queue_free(j->q);
    j->q = NULL;
  }
  r->in_flight--;
  announce();
}

/* Called with mu held: j is finished with status st and message msg. */
static void job_done(struct pld__runner *r, struct pld_job *j, int st,
                     const char *msg) {
  job_result(j, st, msg);
  job_end(r, j);
}

/* Called with mu held: every queued job cancelled, because run `why` (its
 * number) failed with status st, or (why 0) the program was destroyed.
 * The number, not the job: a done job may be freed and its memory reused
 * while its driver lets go of mu. */
static void cancel_queued(struct pld__runner *r, uint64_t why, int st) {
  while (r->head) {
    struct pld_job *j = r->head;
    __atomic_store_n(&r->head, j->next, __ATOMIC_RELEASE);
    j->status = PLD_ERR_CANCELLED;
    if (why)
      pld__catf(j->msg, sizeof j->msg,
                "pld_job: run %llu of the program was cancelled: run %llu, "
                "submitted before it, failed (%s)",
                (unsigned long long)j->seq, (unsigned long long)why,
                pld_status_name(st));
    else
      pld__catf(j->msg, sizeof j->msg,
                "pld_job: run %llu of the program was cancelled: the "
                "program was destroyed before it started",
                (unsigned long long)j->seq);
    job_end(r, j);
  }
  r->tail = NULL;
}

/* Called with mu held: every queued job fails with the crash (status st,
 * message msg, as the run or the drain said it) that ended the program
 * after run `why` (its number) failed with status why_st. */
static void fail_queued(struct pld__runner *r, uint64_t why, int why_st, int st,
                        const char *msg) {
  while (r->head) {
    struct pld_job *q = r->head;
    __atomic_store_n(&r->head, q->next, __ATOMIC_RELEASE);
    q->status = st;
    pld__catf(q->msg, sizeof q->msg,
              "pld_job: run %llu: the program died before this run ended "
              "(run %llu, submitted before it, failed with %s): %s",
              (unsigned long long)q->seq, (unsigned long long)why,
              pld_status_name(why_st), run_said(msg));
    job_end(r, q);
  }
  r->tail = NULL;
}

/* This thread is a runner (only a runner takes queued jobs off). */
static _Thread_local int in_runner;

/* The runner has work (or must stop). */
static int runner_has_work(const void *arg) {
  const struct pld__runner *r = arg;
  return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) != NULL ||
         __atomic_load_n(&r->stopping, __ATOMIC_ACQUIRE);
}

static void runner_precopy(struct pld_program *p, const pld_arg *now);

static void *runner_main(void *arg) {
  struct pld__runner *r = arg;
  in_runner = 1;
  /* Its runs are the submitted ones: their messages name the submit. */
  pld__api_enter("pld_program_submit");
  struct pld__spin spin = poll_spin();
  pthread_mutex_lock(&mu);
  for (;;) {
    if (!r->head && !r->stopping) {
      pthread_mutex_unlock(&mu);
      poll_until(runner_has_work, r, &spin);
      pthread_mutex_lock(&mu);
    }
    while (!r->head && !r->stopping)
      pthread_cond_wait(&changed, &mu);
    if (r->stopping)
      break;
    struct pld_job *j = r->head;
    __atomic_store_n(&r->head, j->next, __ATOMIC_RELEASE);
    if (!r->head)
      r->tail = NULL;
    j->state = RUNNING;
    pthread_mutex_unlock(&mu);
    j->p->rs.precopied = j->precopied;
    int st = pld__program_run_now(j->p, j->argc, j->argv, runner_precopy);
    j->p->rs.precopied = 0;
    pthread_mutex_lock(&mu);
    job_done(r, j, st, st ? pld_last_error() : NULL);
    if (st && j->p->rs.dead) {
      /* A crash: every run in flight fails with it. */
      fail_queued(r, j->seq, st, st, job_said(j));
    } else if (st) {
      cancel_queued(r, j->seq, st);
    }
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* ---- queued runs: the driver --------------------------------------------- */

/* Called with mu held: this thread becomes r's driver once no other
 * thread is; and gives it up.  The runs it drives are the submitted
 * ones, whichever public function drives them: their messages name the
 * submit. */
static void drive_take(struct pld__runner *r) {
  while (r->driving)
    pthread_cond_wait(&changed, &mu);
  r->driving = 1;
  r->driver_api = pld__api_enter("pld_program_submit");
}

static void drive_give(struct pld__runner *r) {
  pld__api_leave(r->driver_api);
  r->driving = 0;
  announce();
}

/* Called with mu held, as r's driver (mu is let go while it looks and
 * sleeps): ends the jobs of the oldest runs in flight that are over (a
 * failure cancels the runs behind it, a crash fails them); if none was,
 * sleep says whether to wait until the next look is due.  Only the driver
 * takes jobs off the queue or adds to it. */
static void drive_step(struct pld__runner *r, int sleep) {
  struct pld_program *p = r->queued;
  int ended = 0;
  while (r->head) {
    struct pld_job *j = r->head;
    int st = j->status, posted = j->q != NULL;
    uint64_t seq = j->seq; /* j may be freed once done and mu let go */
    pthread_mutex_unlock(&mu);
    int over = !posted || queue_step(p, j->q, j->argv, &st);
    if (!over && sleep && !ended)
      queue_await(p, j->q);
    pthread_mutex_lock(&mu);
    if (!over)
      return;
    ended = 1;
    __atomic_store_n(&r->head, j->next, __ATOMIC_RELEASE);
    if (!r->head)
      r->tail = NULL;
    if (posted)
      job_done(r, j, st, st ? pld_last_error() : NULL);
    else /* refused by its checks: its result is set */
      job_end(r, j);
    if (st && r->head) {
      /* The runs behind it are cancelled: on the devices at their gates
       * (or failed with a crash), or never posted. */
      int ds = PLD_OK;
      if (!p->rs.dead && r->head->q) {
        pthread_mutex_unlock(&mu);
        ds = queue_drain(p, 1);
        pthread_mutex_lock(&mu);
      }
      /* ds 0 and dead: the run itself crashed, and mu was held since (j
       * is still the job that ran it). */
      if (p->rs.dead)
        fail_queued(r, seq, st, ds ? ds : st,
                    ds ? pld_last_error() : job_said(j));
      else
        cancel_queued(r, seq, st);
    }
  }
}

/* Called with mu held, as r's driver: until no run is in flight. */
static void drive_all(struct pld__runner *r) {
  while (r->head)
    drive_step(r, 1);
}

/* Called with mu held, as r's driver: whether a run with these arguments
 * must wait for the runs in flight to end (it reads what one of them
 * writes, or their chain is full). */
static int must_follow(struct pld__runner *r, struct pld_program *p, int argc,
                       const pld_arg *argv) {
  if (!r->tail || !r->tail->q) /* none in flight, or none to be posted */
    return 0;
  if (pld__queue_chain_full(p))
    return 1;
  for (const struct pld_job *j = r->head; j && argc == p->plan.nargs;
       j = j->next)
    if (pld__run_depends(p, j->argv, argv))
      return 1;
  return 0;
}

/* pld_program_submit of a queued run (p is r->queued). */
static int submit_queued(struct pld__runner *r, struct pld_program *p, int argc,
                         const pld_arg *argv, int flags, pld_job **out) {
  pthread_mutex_lock(&mu);
  if ((flags & PLD_SUBMIT_NOWAIT) && r->in_flight >= r->max) {
    /* At once, not after the thread driving the runs is done. */
    pthread_mutex_unlock(&mu);
    return runner_busy(p, r);
  }
  drive_take(r);
  for (;;) {
    int full = r->in_flight >= r->max;
    if (full && (flags & PLD_SUBMIT_NOWAIT)) {
      drive_give(r);
      pthread_mutex_unlock(&mu);
      return runner_busy(p, r);
    }
    if (!full && !must_follow(r, p, argc, argv))
      break;
    drive_step(r, 1);
  }
  int in_flight = r->in_flight;
  struct pld_job *j = job_new(r, p, argc, argv);
  if (!j) {
    drive_give(r);
    pthread_mutex_unlock(&mu);
    return PLD_ERR_NOMEM;
  }
  j->queued = 1;
  /* Behind a run refused by its checks nothing is posted: that run
   * cancels it once the runs before have ended. */
  if (!r->tail || r->tail->q) {
    pthread_mutex_unlock(&mu);
    int st = queue_post(p, argc, argv, in_flight, &j->q);
    pthread_mutex_lock(&mu);
    if (st) /* refused: it fails in its turn, as a run by a runner would */
      job_result(j, st, pld_last_error());
  }
  job_append(r, j);
  drive_give(r);
  pthread_mutex_unlock(&mu);
  *out = j;
  return PLD_OK;
}

/* The runner of p's group (the first program's), made and started if
 * needed. */
static int runner_get(struct pld_program *p, struct pld__runner **out) {
  struct pld_program *owner = p->rs.share ? p->rs.share : p;
  if (!owner->rs.runner) {
    struct pld__runner *r = pld__calloc(1, sizeof *r);
    if (!r)
      return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    r->max = owner->plan.max_in_flight;
    r->queued = queue_eligible(owner) ? owner : NULL;
    owner->rs.runner = r;
  }
  /* Set once (the runner reads it while running p's jobs). */
  if (p->rs.runner != owner->rs.runner)
    p->rs.runner = owner->rs.runner;
  struct pld__runner *r = p->rs.runner;
  if (r->queued && (p != r->queued || p->rs.sharers)) {
    /* Programs share the devices now: their runs go one after another
     * through the runner thread, after the runs queued so far. */
    pthread_mutex_lock(&mu);
    drive_take(r);
    drive_all(r);
    r->queued = NULL;
    drive_give(r);
    pthread_mutex_unlock(&mu);
  }
  if (!r->started && !r->queued) {
    int e = pthread_create(&r->thread, NULL, runner_main, r);
    if (e)
      return pld__fail_api(PLD_ERR_SYSTEM, "starting the runner thread: %s",
                           strerror(e));
    r->started = 1;
  }
  *out = r;
  return PLD_OK;
}

static int submit(struct pld_program *p, int argc, const pld_arg *argv,
                  int flags, pld_job **out) {
  if (!out)
    return pld__fail_api(PLD_ERR_ARG, "out: expected where "
                                      "to store the job, got NULL");
  *out = NULL;
  if (!p)
    return pld__fail_api(PLD_ERR_ARG, "p: expected a "
                                      "program, got NULL");
  if (flags & ~PLD_SUBMIT_NOWAIT)
    return pld__fail_api(PLD_ERR_ARG,
                         "flags: expected 0 or "
                         "PLD_SUBMIT_NOWAIT, got %#x",
                         (unsigned)flags);
  if (argc < 0 || argc > PLD_MAX_PARAMS || (argc > 0 && !argv))
    return pld__fail_api(PLD_ERR_ARG,
                         "%s: expected the %d arguments it "
                         "was compiled for, got %d%s",
                         p->plan.host.sig->name, p->plan.nargs, argc,
                         argc > 0 && !argv ? " and a NULL argv" : "");
  if (p->rs.dead)
    return pld__fail_api(PLD_ERR_STATE,
                         "the program cannot run again (a "
                         "device crashed): %s",
                         p->rs.dead_msg);
  /* The devices start on this thread (a process forks best from the
   * thread that made the others, before the runner exists). */
  int st = pld_program_prepare(p);
  if (st)
    return st;
  struct pld__runner *r = NULL;
  st = runner_get(p, &r);
  if (st)
    return st;
  if (r->queued)
    return submit_queued(r, p, argc, argv, flags, out);
  pthread_mutex_lock(&mu);
  while (r->in_flight >= r->max) {
    if (flags & PLD_SUBMIT_NOWAIT) {
      pthread_mutex_unlock(&mu);
      return runner_busy(p, r);
    }
    pthread_cond_wait(&changed, &mu);
  }
  struct pld_job *j = job_new(r, p, argc, argv);
  if (!j) {
    pthread_mutex_unlock(&mu);
    return PLD_ERR_NOMEM;
  }
  job_append(r, j);
  announce();
  pthread_mutex_unlock(&mu);
  *out = j;
  return PLD_OK;
}

int pld_program_submit(pld_program *p, int argc, const pld_arg *argv, int flags,
                       pld_job **out) {
  const char *saved = pld__api_enter("pld_program_submit");
  int st = submit(p, argc, argv, flags, out);
  pld__api_leave(saved);
  return st;
}

/* The job behind a handle, or NULL after a failure naming fn. */
static struct pld_job *job_check(pld_job *j, const char *fn) {
  if (!j) {
    pld__fail(PLD_ERR_ARG, "%s: job: expected a job, got NULL", fn);
    return NULL;
  }
  if (j->magic != JOB_LIVE) {
    pld__fail(PLD_ERR_ARG, "%s: job: %s", fn,
              j->magic == JOB_FREED ? "this job was freed already"
                                    : "not a job of pld_program_submit");
    return NULL;
  }
  return j;
}

int pld_job_test(pld_job *job) {
  struct pld_job *j = job_check(job, "pld_job_test");
  if (!j)
    return 0;
  pthread_mutex_lock(&mu);
  int done = j->state == DONE;
  if (!done && j->queued && !j->p->rs.runner->driving) {
    /* One look, unless another thread drives the runs. */
    struct pld__runner *r = j->p->rs.runner;
    drive_take(r);
    drive_step(r, 0);
    drive_give(r);
    done = j->state == DONE;
  }
  pthread_mutex_unlock(&mu);
  return done;
}

static int job_done_p(const void *arg) {
  const struct pld_job *j = arg;
  return atomic_load_explicit(&j->state, memory_order_acquire) == DONE;
}

int pld_job_wait(pld_job *job, int64_t timeout_ms) {
  struct pld_job *j = job_check(job, "pld_job_wait");
  if (!j)
    return PLD_ERR_ARG;
  /* Beyond a century is forever (and the nanoseconds cannot overflow). */
  int64_t most_ms = INT64_MAX / 2000000;
  int64_t ns = (timeout_ms < 0         ? 0
                : timeout_ms < most_ms ? timeout_ms
                                       : most_ms) *
               (int64_t)1000000;
  struct timespec until = pld__realtime_after(ns);
  int64_t due = pld__now_ns() + ns;
  if (timeout_ms != 0 && !j->queued) {
    struct pld__spin spin = poll_spin();
    poll_until(job_done_p, j, &spin);
  }
  pthread_mutex_lock(&mu);
  int late = 0;
  while (j->state != DONE && !late) {
    struct pld__runner *r = j->queued ? j->p->rs.runner : NULL;
    if (r && !r->driving) {
      /* Drive the runs until this one is done, or the time is up. */
      drive_take(r);
      drive_step(r, timeout_ms != 0);
      drive_give(r);
      late = j->state != DONE &&
             (timeout_ms == 0 || (timeout_ms > 0 && pld__now_ns() >= due));
    } else if (timeout_ms < 0)
      pthread_cond_wait(&changed, &mu);
    else
      late =
          timeout_ms == 0 || pthread_cond_timedwait(&changed, &mu, &until) != 0;
  }
  int done = j->state == DONE;
  uint64_t seq = j->seq;
  pthread_mutex_unlock(&mu);
  if (done)
    return PLD_OK;
  return pld__fail(PLD_ERR_TIMEOUT,
                   "pld_job_wait: run %llu is not finished after %lld ms",
                   (unsigned long long)seq, (long long)timeout_ms);
}

/* Whether j is done, failing fn (PLD_ERR_STATE) if not. */
static int job_finished(struct pld_job *j, const char *fn) {
  pthread_mutex_lock(&mu);
  int done = j->state == DONE;
  uint64_t seq = j->seq;
  pthread_mutex_unlock(&mu);
  if (!done)
    pld__fail(PLD_ERR_STATE,
              "%s: run %llu is not finished: wait for it first "
              "(pld_job_wait)",
              fn, (unsigned long long)seq);
  return done;
}

int pld_job_status(pld_job *job) {
  struct pld_job *j = job_check(job, "pld_job_status");
  if (!j)
    return PLD_ERR_ARG;
  return job_finished(j, "pld_job_status") ? j->status : PLD_ERR_STATE;
}

const char *pld_job_message(pld_job *job) {
  struct pld_job *j = job_check(job, "pld_job_message");
  if (!j || !job_finished(j, "pld_job_message"))
    return pld_last_error();
  return j->msg;
}

int pld_job_free(pld_job *job) {
  struct pld_job *j = job_check(job, "pld_job_free");
  if (!j)
    return PLD_ERR_ARG;
  if (!job_finished(j, "pld_job_free"))
    return PLD_ERR_STATE;
  pthread_mutex_lock(&mu);
  j->magic = JOB_FREED;
  j->next = free_jobs;
  free_jobs = j;
  pthread_mutex_unlock(&mu);
  return PLD_OK;
}

/* While a run executes (its inputs in data slot p->slot): copies the
 * inputs of the run submitted next into the other slot, if its tensors and
 * scalars are the current run's kind (no new trace).  The next run then
 * skips its copy in (p->precopied). */
static void runner_precopy(struct pld_program *p, const pld_arg *now) {
  struct pld__runner *r = p->rs.runner;
  if (!in_runner)
    return;
  /* Only this thread (the runner's, running the current job) takes jobs
   * off the queue or cancels them: the head stays while it is copied. */
  pthread_mutex_lock(&mu);
  struct pld_job *next =
      r->stopping || !r->head || r->head->p != p ? NULL : r->head;
  pthread_mutex_unlock(&mu);
  if (next && pld__run_precopy(p, now, next->argc, next->argv)) {
    pthread_mutex_lock(&mu);
    next->precopied = 1;
    pthread_mutex_unlock(&mu);
  }
}

void pld__runner_drain(struct pld_program *p) {
  struct pld__runner *r = p->rs.runner;
  if (!r)
    return;
  pthread_mutex_lock(&mu);
  if (r->queued) {
    drive_take(r);
    drive_all(r);
    drive_give(r);
  }
  while (r->in_flight > 0)
    pthread_cond_wait(&changed, &mu);
  pthread_mutex_unlock(&mu);
}

void pld__runner_stop(struct pld_program *p) {
  struct pld__runner *r = p->rs.runner;
  if (!r)
    return;
  if (p->rs.share) {
    /* The group's runner: p's runs (and those before them) end first. */
    pld__runner_drain(p);
    p->rs.runner = NULL;
    return;
  }
  pthread_mutex_lock(&mu);
  if (r->queued) {
    /* The runs that started end (and a run refused by its checks fails,
     * cancelling those behind it); the others are cancelled at their
     * gates. */
    drive_take(r);
    if (r->head && !p->rs.dead) {
      uint32_t last = queue_close(p);
      while (r->head && (!r->head->q || queue_number(r->head->q) <= last))
        drive_step(r, 1);
      if (r->head) {
        pthread_mutex_unlock(&mu);
        queue_drain(p, 1);
        pthread_mutex_lock(&mu);
      }
    }
    cancel_queued(r, 0, PLD_ERR_CANCELLED);
    drive_give(r);
    pthread_mutex_unlock(&mu);
    pld__free(r);
    p->rs.runner = NULL;
    return;
  }
  /* The running job ends; the queued ones are cancelled after it. */
  __atomic_store_n(&r->stopping, 1, __ATOMIC_RELEASE);
  announce();
  pthread_mutex_unlock(&mu);
  if (r->started)
    pthread_join(r->thread, NULL);
  pthread_mutex_lock(&mu);
  cancel_queued(r, 0, PLD_ERR_CANCELLED);
  pthread_mutex_unlock(&mu);
  pld__free(r);
  p->rs.runner = NULL;
}
