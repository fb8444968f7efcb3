/* host/program.h: a compiled program and the host orchestrator's context. */
#ifndef PLD_HOST_PROGRAM_H
#define PLD_HOST_PROGRAM_H

#include "core/error.h"
#include "core/model.h"
#include "core/sig.h"
#include "core/tensor.h"
#include "device/device.h"
#include "device/plan.h"
#include "pld/program.h"
#include "pld/window.h"

/* One pld_dispatch as the host trace recorded it. */
struct pld__dispatch {
  int rank;
  pld_device_fn fn;
  int argc;
  pld_arg argv[PLD_MAX_PARAMS];         /* normalized scalars (kind for all) */
  struct pld__tensor t[PLD_MAX_PARAMS]; /* copies of the tensor arguments */
};

/* One pld_host_task as the host trace recorded it, after `before`
 * dispatches (program order). */
struct pld__hosttask {
  pld_host_task_fn fn;
  int argc, before;
  pld_arg argv[PLD_MAX_PARAMS];         /* normalized scalars (kind for all) */
  struct pld__tensor t[PLD_MAX_PARAMS]; /* copies of the tensor arguments */
};

/* An intermediate of the host orchestration: pld_host_tensor (rank -1) or
 * pld_rank_tensor.  Its handle belongs to the program (host_arg: the
 * program's nargs plus its index); a host intermediate has memory during
 * a run. */
struct pld__inter {
  struct pld__tensor *t;
  int rank;
  char *name; /* "host intermediate #0" (the handle points to it) */
  unsigned char *data;
};

/* A copy between a host tensor (host: its index among the host function's
 * tensors, then the intermediates) and a rank's device memory, before or
 * after a host task. */
struct pld__hcopy {
  int rank, host;
  size_t dev_off, host_off, len;
};

/* A host task as it runs: what it waits for and what it copies. */
struct pld__taskplan {
  pld_host_task_fn fn, run; /* run: fn, or its override */
  int argc, before;
  pld_arg argv[PLD_MAX_PARAMS];
  struct pld__tensor t[PLD_MAX_PARAMS]; /* no data: host_arg and offset */
  int *need;                 /* [rank]: the calls it waits for (a count) */
  struct pld__hcopy *copies; /* npre device -> host, then npost back */
  int npre, npost;
};

/* A window buffer, as pld_window_alloc made it. */
struct pld__winbuf {
  int id;
  size_t bytes;          /* asked for: views must fit these */
  size_t phys;           /* each copy: at least 4 KiB */
  unsigned char *member; /* [rank]: the rank received a view */
  unsigned invalid;      /* the result of a failed call */
};

struct pld__host {
  struct pld_program *prog;
  struct pld__tensor *args;  /* the host arguments, host_arg = index */
  struct pld__tensor **kept; /* slices and window views of the trace */
  int nkept, capkept;
  struct pld__dispatch *disps;
  int ndisps, capdisps;
  struct pld__hosttask *tasks;
  int ntasks, captasks;
  /* The program's collective signal window: declared (pld_coll_signal),
   * or made by the first host-level collective given none.  Kernels reach
   * it through PLD_COLL_SIG parameters. */
  pld_window coll_sig;
  int status; /* first failure: sticky */
  char msg[PLD__MSG_MAX];
};

struct pld__ctl_ops;
struct pld__trace_area;
struct pld__race;
struct pld__runner;
struct pld__heap;
struct pld__resident;

/* What pld_compile made of the host function: the trace's dispatches
 * planned per rank, the windows and their domains, the host tasks and the
 * limits and choices of the configuration.  Nothing changes it after
 * pld_compile but pld__program_rescalar (a run with other scalar values
 * replaces its scalars) and the memory of the host intermediates, which
 * each run takes and gives back (struct pld__inter.data). */
struct pld__plan {
  pld_host_fn host;
  const pld_platform_info *plat;
  int nranks;
  int *device_ids;
  int nargs;
  pld_arg *args; /* as compiled; tensors point into arg_meta */
  struct pld__tensor *arg_meta;
  struct pld__dims dims;
  struct pld__devplan *plans; /* per rank */
  /* Intermediates (made while tracing) and host tasks (program order). */
  struct pld__inter *inters;
  int ninters;
  struct pld__taskplan *tasks;
  int ntasks;
  char *artifact_dir;
  char *diag_dir; /* the diagnostics' dfx folder, or NULL (device/diag.h) */
  int64_t wait_timeout_ns;   /* 0: no limit */
  int64_t kernel_timeout_ns; /* 0: no limit */
  int keep_windows;
  int max_in_flight;
  /* Its submitted runs may be queued on its devices while it has them to
   * itself. */
  int queue_ok;
  struct pld__machine machine; /* the timing model's figures */
  int races;                   /* the race detector is on */
  int tracing;                 /* the trace is on */
  int modeling;                /* the timing model is on (host/model.h) */

  /* Window buffers and their domains. */
  int nwinbufs;
  struct pld__winbuf **winbufs;
  unsigned char *member;   /* [buf * nranks + rank]: rank has a view */
  struct pld__comm *comms; /* [buf * nranks + rank] */
  int *comm_members;       /* [buf * nranks + i]: world rank of domain rank i */
};

/* The control plane (host/ctl.h) the program runs on: its operations, its
 * options as pld_compile chose them, and what it keeps while started. */
struct pld__backend {
  const struct pld__ctl_ops *cp;
  void *cps;
  int same_node_rma; /* the MPI backend: PLD_MPI_SAME_NODE=rma */
};

/* What running the plan keeps: the devices, the runs in flight, the
 * programs sharing devices, resident tensors, the race region and the
 * trace. */
struct pld__runstate {
  /* A run failed since the collectives' signal views were last cleared:
   * the next run's post clears them where windows are kept (the first
   * program of a group of programs sharing devices holds it). */
  int coll_dirty;

  /* The devices, from the first run (or prepare) to destroy: every rank's
   * control block as the host sees it. */
  struct pld__device *devs;
  /* Per core slot of each rank ([rank * PLD__MAX_CORES + slot]): the last
   * resume from a wait the host saw, and when it saw it (see struct
   * pld__coreslot). */
  uint32_t *resumes_seen;
  int64_t *resumed_at;
  struct pld__worldctl *world;
  struct pld__spin spin; /* how the host polls its devices (from prepare) */
  int started;
  struct pld_program *live_next; /* the started programs of this process */
  int dead; /* a device crashed: the program cannot run again */
  char dead_msg[PLD__MSG_MAX];

  /* Submitted runs (host/submit.c): its runner, made at the first. */
  struct pld__runner *runner;
  /* The data slots (plan.h), the slot of the run posted last, and whether
   * its inputs were copied in already, while the run before it executed.
   * chain: the number of the run being posted in its chain of queued runs
   * (struct pld__cmd; 0 begins one). */
  int nslots, slot, precopied;
  uint32_t chain;
  /* A blocking run that starts the devices: its arguments, whose inputs
   * start (shm) copies in while the device processes start up. */
  const pld_arg *start_argv;

  /* Sharing devices (pld_config.share): the program whose devices, windows
   * and heaps this one uses (the first of the group), the programs using
   * this one's, and whether it was destroyed while they did. */
  struct pld_program *share;
  int sharers, destroy_pending;

  /* Device-resident tensors (host/resident.c): each rank's heap, the
   * tensors made on them, a run's table of buffer offsets (scratch). */
  struct pld__heap *heaps;
  struct pld__resident *resident;
  size_t *table;

  /* The race detector's region (core/race.h), shared with the device
   * processes from the start. */
  struct pld__race *race;
  size_t race_bytes;

  /* The trace (host/trace.c). */
  struct {
    int k, runs;                   /* k: the program's number in the file */
    uint32_t cap;                  /* events per thread and run */
    struct pld__trace_area **area; /* [rank]: where this process runs it */
    size_t *bytes;
    unsigned char *named; /* lanes named in the file */
    int offset_known;
    int64_t offset; /* under mpi: this clock minus process 0's */
  } trace;

  /* The timing model (host/model.c): its settings and last report. */
  struct pld__model *model;
};

/* A compiled program: the compiler's plan (host/compile.c and the files
 * of the trace), the control plane it runs on, and the runtime's state
 * (host/run.c, submit.c, resident.c and the files they use). */
struct pld_program {
  struct pld__plan plan;
  struct pld__backend be;
  struct pld__runstate rs;
};

/* A run with scalar values other than p's: traces the host orchestrator
 * again with them and, if the trace has the same dispatches, tensors,
 * windows and host tasks, makes them p's.  Returns PLD_OK, or
 * PLD_ERR_ARG naming the values and the first difference (or the new
 * trace's failure). */
int pld__program_rescalar(struct pld_program *p, int argc, const pld_arg *argv);

/* Rank r's device memory of data slot `slot` (its slices, as the plan
 * lays them out). */
static inline unsigned char *pld__run_data(const struct pld_program *p, int r,
                                           int slot) {
  return p->rs.devs[r].data +
         (size_t)slot * pld__plan_slot_stride(&p->plan.plans[r]);
}

/* Writes the artifact folder of a compiled program.  Returns PLD_OK or
 * PLD_ERR_SYSTEM (message set). */
int pld__artifacts_write(struct pld_program *p, const char *dir);
/* Decides the diagnostics files (cfg->diag, PLD_DIAG) and makes their
 * folders (<artifact folder or PLD_DIAG_DIR>/dfx/rank<r>), removing the
 * files of dispatches a rank no longer has.  Returns PLD_OK, or
 * PLD_ERR_CONFIG or PLD_ERR_SYSTEM (message set). */
int pld__diag_config(struct pld_program *p, const pld_config *cfg);

/* Frees what pld_compile made of p, and p (its devices must be stopped,
 * its runner gone: pld_program_destroy). */
void pld__program_free(struct pld_program *p);

/* Window buffers: records that `rank` receives a view of buf; after the
 * trace, numbers every domain and lays the copies out; frees them. */
void pld__windows_member(struct pld_program *p, int buf, int rank);
int pld__windows_plan(struct pld_program *p);
void pld__windows_free(struct pld_program *p);

/* The start of a host call `call` of a function whose descriptor is sig
 * (with an entry or not), which must be declared with `decl` at `level`:
 * PLD_OK, the host's earlier failure, or the descriptor refused
 * (PLD_ERR_ARG, recorded). */
int pld__host_callee(struct pld__host *h, const char *call,
                     const pld_signature *sig, int entry, pld_level level,
                     const char *decl);

/* Fails the host function being traced (first failure wins). */
int pld__hfail(struct pld__host *h, int status, const char *fmt, ...)
    PLD__PRINTF(3, 4);

/* Records a dispatch of fn to `rank` with arguments checked and normalized
 * (norm: fn's parameters); `what` names the call in failures.  Windows
 * make the rank a member of their domains. */
int pld__dispatch_record(struct pld__host *h, int rank, pld_device_fn fn,
                         const pld_arg *norm, const char *what);

/* *sl = t[index] (t of 2 or more dimensions, index within the first), as
 * pld_slice makes it. */
void pld__slice_of(struct pld__tensor *sl, const struct pld__tensor *t,
                   int64_t index);

/* Keeps t (a view made while tracing) until the trace ends.  Returns t, or
 * NULL after recording PLD_ERR_NOMEM. */
struct pld__tensor *pld__host_keep(struct pld__host *h, struct pld__tensor *t);

/* Host tensors by index (host_arg): the host function's, then the
 * intermediates.  Their descriptor (no data), their name for messages,
 * and the intermediate of an index (NULL for a parameter). */
const struct pld__tensor *pld__host_meta(const struct pld_program *p, int i);
const char *pld__host_name(const struct pld_program *p, int i);
struct pld__inter *pld__host_inter(const struct pld_program *p, int i);

/* After the ranks are planned: each host task's waits (and the calls that
 * wait for it) and copies.  Returns PLD_OK or PLD_ERR_NOMEM. */
int pld__tasks_plan(struct pld_program *p, const struct pld__host *h);
void pld__tasks_free(struct pld_program *p);

/* A run's host tensors: the memory of the host intermediates (and
 * releasing it), the data of host tensor i (argv: the run's arguments). */
int pld__inters_alloc(struct pld_program *p);
void pld__inters_release(struct pld_program *p);
unsigned char *pld__host_data(const struct pld_program *p, const pld_arg *argv,
                              int i);

/* Whether a run copies device buffer buf of a rank's plan in (in 1:
 * from the host argument it is a slice of, before the run) or out (in 0:
 * into it, after): a slice of an argument (intermediates stay on the
 * devices) that is not resident, passed in that direction. */
static inline int pld__slice_copied(const struct pld_program *p,
                                    const pld_arg *argv,
                                    const struct pld__devbuf *buf, int in) {
  return buf->host_arg < p->plan.nargs &&
         !(argv[buf->host_arg].v.t->flags & PLD__T_RESIDENT) &&
         (buf->dirs & (in ? PLD_DIR_IN : PLD_DIR_OUT));
}

/* Runs host task k: its copies in, its function, its copies out.  Returns
 * PLD_OK or its failure (message set). */
int pld__task_run(struct pld_program *p, const pld_arg *argv, int k);

#endif
