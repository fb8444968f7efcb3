/* host/ctl.h: the control plane - how the host reaches its devices (start
 * them, post a run, copy slices, see their status and waits, stop a run,
 * reap).  The run loop of host/run.c is written against this table; two
 * implementations are chosen at run time (pld_config.fabric, PLD_FABRIC):
 *   shm (host/ctl_shm.c): one process per device, forked by the host,
 *     control blocks and data areas in memory shared with it;
 *   mpi (host/ctl_mpi.c): under mpirun, every process runs the same host
 *     orchestrator and one rank's device in itself; process 0 watches
 *     every rank through snapshots of their control blocks and decides the
 *     run's result, which it sends to the others.
 * Either way the host code sees what each rank's device publishes, struct
 * pld__devstate, through pld__view (under shm: live in its control block;
 * under mpi: its own rank's live, the latest snapshot of the others'), and
 * nothing else of a control block. */
#ifndef PLD_HOST_CTL_H
#define PLD_HOST_CTL_H

#include "host/program.h"

/* What a control plane can do (struct pld__ctl_ops.caps).  Generic code
 * asks these, never which control plane it has; pld_compile decides once
 * what a program may use (host/compile.c: features_decide). */
enum {
  /* Runs queued on the devices behind the runs in flight, gated there
   * (struct pld__cmd): pld_program_submit without a runner thread. */
  PLD__CTL_QUEUE = 1u << 0,
  /* Programs sharing devices (pld_config.share). */
  PLD__CTL_SHARE = 1u << 1,
  /* The race detector: its region is mapped by every device. */
  PLD__CTL_RACES = 1u << 2,
  /* Each process runs the device of one rank only, its own (under
   * mpirun: pld_process_index), and a trace is gathered through share. */
  PLD__CTL_OWN_RANK = 1u << 3,
};

/* How a device's process ended, as far as its control plane knows
 * (struct pld__ctl_ops.ended): killed by a signal, or exited with a
 * status. */
struct pld__dev_end {
  int signal; /* the signal that killed it, or 0 */
  int status; /* its exit status, when no signal killed it */
};

struct pld__ctl_ops {
  const char *name;
  unsigned caps; /* PLD__CTL_* */
  /* Starts every device this process runs and waits until they are ready
   * (pld_program_prepare).  Returns PLD_OK or the failure. */
  int (*start)(struct pld_program *p);
  /* Before a run: windows zeroed (unless kept; kept, the collectives'
   * signal views of every rank after a failed run, p->coll_dirty), In
   * slices copied, the run
   * posted to every device this process runs; posted[r] is the command
   * rank r runs.  A queued run (p->chain > 0, shm only) is posted behind
   * the runs in flight, its windows zeroed by the devices (struct
   * pld__cmd). */
  int (*post)(struct pld_program *p, const pld_arg *argv, uint32_t *posted);
  /* The In slices and the scalars of a run, into data slot `slot` of the
   * ranks this process runs (post does it, unless p->precopied says it
   * was done while the run before executed). */
  void (*copy_in)(struct pld_program *p, const pld_arg *argv, int slot);
  /* What rank r's device published, as this process last saw it (its
   * results, crash record and watch): live, or the latest snapshot (which
   * look refreshes). */
  struct pld__devstate *(*view)(const struct pld_program *p, int r);
  /* Whether rank r's device finished every command posted to it. */
  int (*caught_up)(const struct pld_program *p, int r);
  /* Refreshes the views of the ranks this process does not run. */
  void (*look)(struct pld_program *p);
  /* Whether the host may judge rank r from what it sees (a snapshot of
   * this run arrived). */
  int (*seen)(struct pld_program *p, int r);
  /* The watch found every rank quiet for the quiet period: whether what
   * it saw of each rank was taken after the quiet began.  *asked is 0 at
   * the first call of a quiet period, which may start a confirmation (and
   * set *asked); *yes says whether it is confirmed.  Returns PLD_OK or a
   * failure (message set).  NULL: the host sees every rank live. */
  int (*confirm)(struct pld_program *p, uint32_t *asked, int *yes);
  /* The value of the cell rank r's wait slot i (s) waits on. */
  int32_t (*cell)(struct pld_program *p, int r, int i,
                  const struct pld__coreslot *s);
  /* Rank r's device is gone (its process ended); block: wait for it. */
  int (*gone)(struct pld_program *p, int r, int block);
  /* How rank r's device process ended, once gone (else as an exit with
   * status 0).  NULL: the control plane learns nothing of it (its devices
   * are not its children), taken as an exit with status 0. */
  void (*ended)(struct pld_program *p, int r, struct pld__dev_end *e);
  /* Stops the run everywhere (why: PLD__ABORT_*), waking every waiter. */
  void (*abort)(struct pld_program *p, uint32_t why);
  /* The host's sleep until something happens, at most ns. */
  void (*await)(struct pld_program *p, uint32_t seen, int64_t ns,
                const struct pld__spin *spin);
  /* Host tasks.  task_begin: the watching process is about to run host
   * task k (under mpi every process runs it, with the same inputs; the
   * others are told).  fetch and store: a host task's copies from and to
   * rank r's device memory (under mpi a fetch is collective: the bytes of
   * rank r reach every process). */
  void (*task_begin)(struct pld_program *p, int k);
  int (*fetch)(struct pld_program *p, int r, size_t dev_off, void *host,
               size_t len);
  void (*store)(struct pld_program *p, int r, size_t dev_off, const void *host,
                size_t len);
  /* Rank r still runs after a stopped run's grace: a new device in its
   * place.  Returns PLD_OK or the failure (message set). */
  int (*restart)(struct pld_program *p, int r);
  /* The run's end on this process: the result st with message msg
   * decided (by this process, or the one that watches), Out slices copied
   * back from data slot `slot` on success.  Returns the run's status,
   * message set. */
  int (*finish)(struct pld_program *p, const pld_arg *argv, int slot, int st,
                const char *msg);
  /* Processes that do not watch follow the run instead: they wait for the
   * watching process's result, store the run's status in *st and return
   * 1; 0 where this process watches (NULL: every process watches). */
  int (*follow)(struct pld_program *p, const pld_arg *argv, int *st);
  /* Every process gets the n bytes at buf of the process that runs rank
   * r (collective under mpi: every process calls it in the same order;
   * NULL under shm, where one process runs every rank). */
  void (*share)(struct pld_program *p, int r, void *buf, size_t n);
  /* Stops the devices and frees what start made: politely (destroy), or
   * at once (kill: after a crash or a failed start). */
  void (*stop)(struct pld_program *p, int kill);
};

extern const struct pld__ctl_ops pld__ctl_shm;

/* Shared by the control planes and the run loop (host/run.c). */

/* What rank r's device published (struct pld__ctl_ops.view). */
static inline struct pld__devstate *pld__view(const struct pld_program *p,
                                              int r) {
  return p->be.cp->view(p, r);
}

/* Entry i of a device's collectives' signal views (struct
 * pld__sig_uses), which the device wrote: 1 with its buffer and bytes if
 * they lie in one of the program's window buffers, else 0. */
static inline int pld__coll_sig_view(const struct pld_program *p,
                                     const struct pld__sig_uses *u, int i,
                                     int *buf, size_t *off, size_t *len) {
  const struct pld__coll_sig *v = &u->coll[i];
  if (v->buf < 0 || v->buf >= p->plan.nwinbufs || v->off > v->end ||
      v->end > p->plan.winbufs[v->buf]->phys)
    return 0;
  *buf = v->buf;
  *off = (size_t)v->off;
  *len = (size_t)(v->end - v->off);
  return 1;
}

/* Ranks whose run bookkeeping fits on the stack. */
#define PLD_MAX_RANKS_INLINE 64

#endif
