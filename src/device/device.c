#include "device/device.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/kctx.h"
#include "core/tensor.h"
#include "core/tunables.h"
#include "device/aicpu.h"
#include "device/sched.h"
#include "fabric/shm.h"

static size_t ctl_bytes(void) {
  return (sizeof(struct pld__devctl) + 4095) & ~(size_t)4095;
}

static void *map_shared(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

int pld__devices_map(struct pld__device *devs, int n,
                     const struct pld__devplan *plans,
                     struct pld__worldctl **world) {
  *world = map_shared(sizeof **world);
  if (!*world)
    return pld__fail(PLD_ERR_SYSTEM, "pld_program_prepare: mmap: %s",
                     strerror(errno));
  for (int r = 0; r < n; r++) {
    memset(&devs[r], 0, sizeof devs[r]);
    devs[r].map_bytes = ctl_bytes() + plans[r].data_bytes;
    devs[r].ctl = map_shared(devs[r].map_bytes);
    if (!devs[r].ctl) {
      int e = errno;
      pld__devices_unmap(devs, r, *world);
      *world = NULL;
      return pld__fail(PLD_ERR_SYSTEM,
                       "pld_program_prepare: rank %d: mmap of %zu bytes: %s",
                       r, plans[r].data_bytes, strerror(e));
    }
    devs[r].data = (unsigned char *)devs[r].ctl + ctl_bytes();
  }
  return PLD_OK;
}

void pld__devices_unmap(struct pld__device *devs, int n,
                        struct pld__worldctl *world) {
  for (int r = 0; r < n; r++)
    if (devs[r].ctl) {
      munmap(devs[r].ctl, devs[r].map_bytes);
      devs[r].ctl = NULL;
    }
  if (world)
    munmap(world, sizeof *world);
}

struct pld__spin pld__world_spin(struct pld__worldctl *world) {
  struct pld__spin s = {pld__tunables()->PLD_SPIN_US * 1000, &world->spinners,
                        pld__cpus()};
  return s;
}

/* ---- inside the device process ---------------------------------------- */

static struct pld__devctl *self_ctl;
static struct pld__worldctl *self_world;
static _Thread_local const char *aicpu_running_fn;

static void copy_name(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src && src[i] && i + 1 < cap; i++)
    dst[i] = src[i];
  dst[i] = '\0';
}

/* Async-signal-safe: plain stores into shared memory and a futex wake.
 * SA_RESETHAND restored the default action, so returning re-raises a
 * synchronous fault (or abort() raises again) and the process dies. */
static void crash_handler(int sig, siginfo_t *si, void *uctx) {
  (void)uctx;
  struct pld__devctl *c = self_ctl;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&c->crash_signal, &expected, sig))
    return;
  const struct pld__core *core = pld__running_core;
  if (core) {
    c->crash_core_type = (int)core->spec.type;
    c->crash_core = core->spec.index;
    c->crash_block = (int)core->block_idx;
    c->crash_blocks = (int)core->block_num;
    copy_name(c->crash_fn, sizeof c->crash_fn, core->kernel);
  } else {
    c->crash_core_type = -1;
    copy_name(c->crash_fn, sizeof c->crash_fn, aicpu_running_fn);
  }
  c->crash_addr = (uintptr_t)si->si_addr;
  atomic_fetch_add(&self_world->event, 1);
  pld__futex_wake(&self_world->event, 1);
}

static void install_crash_handlers(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = crash_handler;
  sa.sa_flags = (int)(SA_SIGINFO | SA_RESETHAND | SA_ONSTACK);
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &sa, NULL);
}

/* Runs every dispatch of the plan once.  Returns the first failure. */
static int run_plan(const struct pld__devplan *plan, unsigned char *data,
                    struct pld__fabric *fabric, struct pld__aicpu *a,
                    char *msg, size_t cap) {
  for (int c = 0; c < plan->ncalls; c++) {
    const struct pld__call *call = &plan->calls[c];
    const pld_signature *sig = call->fn.sig;
    struct pld__tensor tensors[32];
    pld_arg argv[32];
    for (int i = 0; i < call->argc; i++)
      argv[i] = pld__call_arg_tensor(&call->args[i], &sig->params[i], plan,
                                     data, fabric, &tensors[i]);
    if (atomic_load_explicit(&self_world->abort, memory_order_acquire)) {
      pld__catf(msg, cap,
                "rank %d (device %d): stopped because another rank failed",
                plan->rank, plan->device_id);
      return PLD_ERR_ABORTED;
    }
    aicpu_running_fn = sig->name;
    a->status = PLD_OK;
    int st = pld__aicpu_call(a, call->fn, argv);
    aicpu_running_fn = NULL;
    if (st) {
      pld__catf(msg, cap, "%s", a->msg);
      return st;
    }
  }
  return PLD_OK;
}

static void report(struct pld__devctl *ctl, uint32_t seq) {
  atomic_store_explicit(&ctl->done_seq, seq, memory_order_release);
  pld__event_signal(&self_world->event, &self_world->event_sleepers, 1);
}

static _Noreturn void device_main(const struct pld__devplan *plan,
                                  struct pld__devctl *ctl, unsigned char *data,
                                  unsigned char *region) {
  install_crash_handlers();
  struct pld__shm_fabric fabric;
  pld__shm_fabric_init(&fabric, region, plan->lay, plan->rank);
  struct pld__spin spin = pld__world_spin(self_world);
  struct pld__comm_env env = {&fabric.base, &self_world->abort,
                              &ctl->progress, &ctl->running,
                              &ctl->queued, ctl->waits, spin};
  struct pld__sched *sched = NULL;
  struct pld__dims dims;
  struct pld__aicpu a;
  memset(&a, 0, sizeof a);
  int st = pld__sched_create(plan->plat, plan->rank, plan->device_id, &env,
                             &sched);
  if (st) {
    ctl->status = st;
    pld__catf(ctl->msg, sizeof ctl->msg, "%s", pld_last_error());
  }
  a.rank = plan->rank;
  a.device = plan->device_id;
  a.plat = plan->plat;
  a.dims = &dims;
  a.sched = sched;
  a.busy = &ctl->aicpu_busy;
  atomic_store_explicit(&ctl->ready, 1, memory_order_release);
  report(ctl, 0);

  uint32_t seen = 0;
  for (;;) {
    uint32_t seq;
    while ((seq = pld__event_wait(&ctl->cmd_seq, seen, &ctl->cmd_sleepers,
                                  &spin, -1, 1)) == seen)
      ;
    seen = seq;
    if (atomic_load_explicit(&ctl->cmd, memory_order_relaxed) != PLD__CMD_RUN)
      break;
    if (!sched) {
      report(ctl, seq);
      continue;
    }
    /* Dynamic dimensions start from the compiled bindings on every run. */
    dims = *plan->dims;
    atomic_store(a.busy, 1);
    st = run_plan(plan, data, &fabric.base, &a, ctl->msg, sizeof ctl->msg);
    atomic_store(a.busy, 0);
    ctl->status = st;
    if (st)
      ctl->ticket = atomic_fetch_add(&self_world->tickets, 1);
    report(ctl, seq);
  }
  pld__aicpu_release(&a);
  pld__sched_destroy(sched);
  _exit(0);
}

int pld__device_spawn(struct pld__device *devs, int n, int rank,
                      const struct pld__devplan *plan,
                      struct pld__worldctl *world, unsigned char *region,
                      const struct pld__mapping *foreign, int nforeign) {
  pid_t host = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return pld__fail(PLD_ERR_SYSTEM,
                     "pld_program_prepare: rank %d (device %d): fork: %s",
                     rank, plan->device_id, strerror(errno));
  if (pid > 0) {
    devs[rank].pid = pid;
    return PLD_OK;
  }
  /* The device process.  It dies with the host, and sees no other
   * device's memory: those regions are unmapped at once. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != host)
    _exit(1);
  for (int r = 0; r < n; r++)
    if (r != rank && devs[r].ctl)
      munmap(devs[r].ctl, devs[r].map_bytes);
  for (int i = 0; i < nforeign; i++)
    munmap(foreign[i].addr, foreign[i].len);
  self_ctl = devs[rank].ctl;
  self_world = world;
  device_main(plan, devs[rank].ctl, devs[rank].data, region);
}
