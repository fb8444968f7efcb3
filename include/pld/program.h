/* pld/program.h: compile a host orchestrator into a program, then run it.
 *
 * pld_compile traces the host function with sample arguments, without
 * starting any device: every pld_dispatch is recorded and checked against
 * the device function's signature, and each device function is traced too,
 * so its kernel launches are checked against theirs.  The result is a
 * program that runs any number of times with new tensors of the same
 * shapes.  Its first run starts one process per device (its AICPU and AI
 * cores); they stay alive across runs until pld_program_destroy.
 *
 * These calls are made by host code outside any pld function, from one
 * thread at a time per program.
 */
#ifndef PLD_PROGRAM_H
#define PLD_PROGRAM_H

#include "pld/levels.h"

typedef struct pld_config {
  /* "a2a3sim" or "a5sim".  "a2a3" and "a5" name the hardware, which this
   * build has no backend for (PLD_ERR_UNSUPPORTED). */
  const char *platform;
  /* Rank r runs on device_ids[r]; ids distinct, >= 0 and below the
   * platform's device limit (pld_platform_info.max_devices: 128, a cluster
   * of 8 servers of 16 cards).  The world size is ndevices. */
  const int *device_ids;
  int ndevices;
  /* Where pld_compile writes a readable description of the program (which
   * function runs on which processor for each rank, argument shapes).
   * NULL: nowhere; "": a new folder under $TMPDIR (or /tmp); otherwise
   * that folder, created if missing, its files from an earlier compile
   * replaced (program.txt and a rank<r>.txt per rank: those of ranks
   * beyond this program's are removed). */
  const char *artifact_dir;
  /* A wait pending longer than this many milliseconds fails the run with
   * PLD_ERR_TIMEOUT and a report of the blocked waits.  0: the value of
   * PLD_WAIT_TIMEOUT_MS (see pld-env), where 0 means no limit; negative
   * values are refused (PLD_ERR_CONFIG). */
  int64_t wait_timeout_ms;
  /* Window buffers live as long as the program and start every run at
   * zero; non-zero keeps their content from one run to the next. */
  int keep_windows;
  /* A kernel block or device function that runs this many milliseconds
   * without finishing and without waiting (in pld_wait, or for its tasks)
   * fails the run with PLD_ERR_TIMEOUT and a report naming rank, device,
   * kernel or function, core and how long.  0: PLD_KERNEL_TIMEOUT_MS
   * (0 there: no limit); negative values are refused. */
  int64_t kernel_timeout_ms;
  /* How devices reach each other and the host: "shm" (one process per
   * device, forked by the host, on this machine) or "mpi" (under mpirun:
   * MPI process r runs rank r's device, over MPI-3 RMA; needs a build with
   * MPI).  NULL: PLD_FABRIC, else "mpi" when mpirun started the process
   * and "shm" otherwise.  Under "mpi" device_ids may be NULL: then the
   * world is one rank per MPI process (ndevices 0, or their count), each
   * on its node's device numbered by its rank on the node (plus the node's
   * index times the platform's devices per server). */
  const char *fabric;
  /* The MPI fabric's peers on the same node: "shm" (through shared
   * memory) or "rma" (through MPI RMA, as peers on other nodes: what a
   * cluster does, on one machine).  NULL: PLD_MPI_SAME_NODE, else "shm". */
  const char *mpi_same_node;
  /* Where every run of the program writes a trace (Chrome trace-event
   * JSON, for Perfetto, chrome://tracing and pld-trace; see
   * docs/trace-format.md): one file per process, shared by its programs.
   * NULL: PLD_TRACE (unset or empty: no trace); "": no trace. */
  const char *trace;
  /* "races": every access of a kernel to window memory is checked against
   * the order signals create, and a run with two accesses of which one
   * writes and neither is ordered before the other (or an unordered Set
   * and Add on one signal cell) fails with PLD_ERR_RACE and a report
   * naming both; runs are slower (docs/benchmarks.md).  Needs the shm fabric.
   * NULL: PLD_CHECK (unset or empty: no checking); "": no checking. */
  const char *check;
  /* Runs of the program queued or running at once (pld_program_submit):
   * 0 means 2 (one running, the next one waiting with its inputs).  Up to
   * 64, each run in flight has a copy of the program's slices of its own
   * on every device (at least 2 copies). */
  int max_in_flight;
  /* Another program whose devices this one runs on (the shm fabric): the
   * same platform and device ids; its windows, if it declares any, must
   * be declared alike (the same buffers, sizes and ranks in the same
   * order) and are then the same memory; its device-resident tensors can
   * be passed to this program's runs; the runs of both (run or submitted)
   * go one after another in the order they were asked for.  Destroying
   * the other program first keeps its devices until this one is
   * destroyed.  NULL: devices of its own. */
  struct pld_program *share;
  /* The timing model's figures (docs/model.md; pld-env lists them with
   * each platform's values): a file of lines "name = value" (a name may
   * be prefixed "a5sim." to apply to that platform alone; '#' starts a
   * comment) replacing the platform's, then model_values, in the same
   * syntax with ';' or newlines between its lines.  model_file NULL:
   * PLD_MODEL_FILE (unset or empty: none); "": none.  A line naming no
   * figure, or a value out of its range, fails pld_compile with
   * PLD_ERR_CONFIG naming the line. */
  const char *model_file;
  const char *model_values;
  /* Diagnostics files, written by each rank for each dispatch of every
   * run (a run's files replace the last run's): "deps" (the dispatch's
   * tasks, their kernels, tensors and windows, and the order the
   * scheduler decided among them and why), "stats" (launches, blocks,
   * bytes moved, waits and their time, for the dispatch and each task),
   * "deps,stats" or "all".  They go under <artifact_dir>/dfx/rank<r>/d<k>/
   * (k: the rank's k-th dispatch of the run), or, without an artifact
   * folder, PLD_DIAG_DIR's; neither fails pld_compile with
   * PLD_ERR_CONFIG.  The format: docs/diagnostics-files.md; pld-trace
   * --diag reads them.  NULL: PLD_DIAG (unset or empty: none); "":
   * none. */
  const char *diag;
  /* The timing model (pld/model.h, docs/model.md): "on" gives every run
   * a modeled report (pld_program_model), "off" none.  NULL: PLD_MODEL
   * (unset or empty: off).  model_out: a file each run's report replaces,
   * as JSON (docs/model.md; under mpirun process 0 writes it); NULL:
   * PLD_MODEL_OUT (unset or empty: none); a file turns the model on. */
  const char *model;
  const char *model_out;
} pld_config;

/* The defaults: every field not named is zero (NULL), which the comments
 * above describe. */
#define PLD_CONFIG_INIT                                                        \
  { .platform = "a2a3sim" }

/* The processes that run each program together: under mpirun with the
 * MPI fabric, the processes mpirun started and this one's index among
 * them (every process runs the same host code; each runs its own rank;
 * the results and Out tensors are the same in all); otherwise 1 and 0.
 * Print once (for instance from index 0).  Host code. */
int pld_process_count(void);
int pld_process_index(void);

typedef struct pld_program pld_program;

/* PLD_ARGS(x, y, ...): the argc, argv pair of a host call.  More than
 * PLD_MAX_PARAMS arguments is one error at the call (pld/levels.h:
 * PLD__CALL_ARGS). */
#define PLD_ARGS(...)                                                          \
  PLD__CAT2(PLD__ARGS_, PLD__FITS(~, __VA_ARGS__))(__VA_ARGS__)
#define PLD__ARGS_1(...)                                                       \
  PLD__NARG(__VA_ARGS__), (const pld_arg[]) {                                  \
    PLD__MAPI(PLD__ARGF, __VA_ARGS__)                                          \
  }
#define PLD__ARGS_0(...)                                                       \
  (PLD__TOO_MANY_ARGS(PLD_MAX_PARAMS, PLD_ARGS) PLD_MAX_PARAMS),               \
      (const pld_arg[]) {                                                      \
    PLD__MAPI(PLD__ARGF, PLD__DROP1(PLD__TAKE(~, __VA_ARGS__)))                \
  }

/* Compiles `host` for the arguments (see the top of this file).  On
 * success *out is a program the caller destroys; out must not be NULL
 * (PLD_ERR_ARG, before any work).  Returns PLD_OK, PLD_ERR_CONFIG
 * (platform, device ids, negative time limits, an invalid PLD_*
 * environment variable), PLD_ERR_UNSUPPORTED (hardware platform),
 * PLD_ERR_ARG (argument count, dtype, shape, dynamic dimension, dispatch,
 * window sizes beyond a device's global memory), PLD_ERR_BOUNDS,
 * PLD_ERR_NOMEM (also: a rank's tensors and windows exceed its device's
 * global memory), PLD_ERR_SYSTEM (artifact folder). */
int pld_compile(pld_host_fn host, const pld_config *cfg, int argc,
                const pld_arg *argv, pld_program **out);

/* The artifact folder written by pld_compile, or NULL if none. */
const char *pld_program_artifact_dir(const pld_program *p);

/* Starts the device processes now rather than at the first run. */
int pld_program_prepare(pld_program *p);

/* Runs `with` wherever the host function called host task `task`, in this
 * program's later runs (an override, as the original's sub-workers can be
 * given).  The signatures must match: parameter count, kinds, directions,
 * dtypes and dimensions.  Host code.  Returns PLD_OK, PLD_ERR_ARG (NULL
 * program, a task the program does not call, signatures that differ: the
 * message names the first difference). */
int pld_program_override(pld_program *p, pld_host_task_fn task,
                         pld_host_task_fn with);

/* Runs the program with tensors of the shapes it was compiled for.
 * Scalars are values of the run: with values other than the last run's
 * (or the compile's), the host orchestrator is traced again with them (it
 * is cheap) and the program keeps its devices, windows and layout if the
 * new trace makes the same dispatches with the same tensors and windows,
 * the same host tasks; otherwise the run fails with PLD_ERR_ARG naming the
 * values and the first difference, and the program keeps its last values.
 * Blocks until every device finished.  Returns PLD_OK or the first
 * failure: PLD_ERR_ARG (tensors that differ from the compiled ones, NULL
 * argv with argc > 0, new scalar values that change the program), a
 * kernel's or device
 * function's failure, PLD_ERR_DEADLOCK or PLD_ERR_TIMEOUT (with a report
 * of the waits and running kernels), PLD_ERR_CRASH (a device process died,
 * however: a fatal signal, exit() in a kernel or device function, killed
 * from outside, or its control memory overwritten by a wild write; the
 * message names rank, device, the kernel or function it was in, core and
 * the signal or exit status; the other devices are stopped and the
 * program can no longer run: PLD_ERR_STATE after that), PLD_ERR_SYSTEM.
 *
 * However a run fails, it returns promptly: once a failure, deadlock or
 * time limit stops the run, the devices get half a second to finish their
 * dispatch; a device still running then (a kernel computing without
 * waiting) has its process killed and a new one started in its place, and
 * the message says so.  The program then runs again as usual (unless that
 * restart failed, which the message says too). */
int pld_program_run(pld_program *p, int argc, const pld_arg *argv);

/* Stops the device processes and frees the program.  NULL is a no-op. */
/* ---- asynchronous runs ----------------------------------------------------
 * pld_program_submit queues a run and returns at once with a job; the
 * queued runs run one after another in submission order, each as
 * pld_program_run would (the results are those of the same calls made one
 * by one), while the caller goes on.  On the shm fabric a program without
 * host tasks, trace or race check, on devices of its own and with at most
 * 64 runs in flight queues its runs on the devices themselves: submit
 * copies the run's inputs and posts it, and each device starts it as soon
 * as the runs before it are done (no host turn in between); the calls
 * pld_job_test, pld_job_wait, pld_program_submit, pld_program_run and
 * pld_program_destroy then drive the runs in flight (watch them, copy
 * their outputs back, end their jobs), so a deadlock or a time limit is
 * reported once one of these is called.  Other programs have a thread of
 * their own that runs their queued runs.  The host tensors of a
 * submitted run must stay allocated and unchanged (its In tensors) and
 * unread (its Out tensors) until its job is done.
 * At most pld_config.max_in_flight runs are queued or running: a further
 * submit waits until one is done, or with PLD_SUBMIT_NOWAIT fails at once
 * with PLD_ERR_BUSY.  A run that fails (its job's status says how)
 * cancels the runs queued behind it: their jobs end with
 * PLD_ERR_CANCELLED naming it; runs submitted afterwards run.  A crash
 * fails every run in flight with its report, naming the run that crashed
 * (the program is dead: PLD_ERR_STATE after).  pld_program_run waits for the
 * runs in flight first, then runs, as a submit followed by a wait would.
 * pld_program_destroy cancels the runs still queued (PLD_ERR_CANCELLED)
 * and waits for the ones running (runs queued on the devices: those
 * that started on any device); every job stays valid until
 * pld_job_free, which each job needs once: a job used after it is freed
 * is refused (PLD_ERR_ARG) until its memory serves a later job. */
typedef struct pld_job pld_job;

enum { PLD_SUBMIT_NOWAIT = 1 };

/* Queues a run with these arguments (checked when it runs, or when it is
 * queued on the devices: either way its job reports PLD_ERR_ARG in its
 * turn, after the runs before it).  Returns PLD_OK with *out set, PLD_ERR_BUSY
 * (NOWAIT and max_in_flight runs in flight), PLD_ERR_STATE (the program
 * is dead), PLD_ERR_ARG (NULL program or out, unknown flags, argc out of
 * range). */
int pld_program_submit(pld_program *p, int argc, const pld_arg *argv, int flags,
                       pld_job **out);
/* 1 once the run is done (its status and message are final), else 0. */
int pld_job_test(pld_job *job);
/* Waits until the run is done: PLD_OK, or PLD_ERR_TIMEOUT after
 * timeout_ms milliseconds (0: do not wait; negative: no limit). */
int pld_job_wait(pld_job *job, int64_t timeout_ms);
/* A done run's status and message: "" on success; else it starts
 * "pld_job: run N: ", N the run's number in the program's submissions
 * (from 1), then says what failed, as pld_program_run would without its
 * own name, however the run failed: a kernel's failure ("pld_job: run 2:
 * pld_load: kernel k (rank 1, device 1, AIV core 0, block 0 of 1): ..."),
 * a device function's ("pld_job: run 2: pld_launch (rank 1, device 1, in
 * d): ..."), a deadlock or time limit report ("pld_job: run 2: deadlock:
 * ..."), a crash ("pld_job: run 2: rank 1 (device 1) crashed ..."), its
 * arguments refused by the checks; a run failed by the crash of an
 * earlier one: "pld_job: run 3: the program died before this run ended
 * (run 2, submitted before it, failed with PLD_ERR_CRASH): ..."; a
 * cancelled run: "pld_job: run 3 of the program was cancelled: run 2,
 * submitted before it, failed (...)".  PLD_ERR_STATE (and the calling
 * thread's message) while it is not done. */
int pld_job_status(pld_job *job);
const char *pld_job_message(pld_job *job);
/* Frees a done job: PLD_OK, PLD_ERR_STATE (not done), PLD_ERR_ARG (freed
 * already). */
int pld_job_free(pld_job *job);

/* ---- device-resident tensors --------------------------------------------
 * A tensor in the device memory of one rank of a program (rank >= 0), or
 * one part on every rank (PLD_EACH_RANK: shape is a part's; the tensor has
 * a leading dimension of the world size, as a host tensor the host
 * function slices per rank), that outlives runs and holds zeros when
 * made.  Pass it to pld_program_run or pld_program_submit where the host
 * function takes a host tensor of its shape: each rank's dispatches use
 * their slice of it where it lies, and nothing is copied in or out (a
 * rank whose dispatch is given bytes of it that lie on another rank's
 * device fails the run with PLD_ERR_ARG).  pld_device_tensor_write and
 * _read copy it from and to a host tensor of its shape, after the runs in
 * flight; pld_device_tensor_free gives its memory back (the handle is
 * then refused: PLD_ERR_STATE; pld_tensor_destroy frees the handle, and
 * the memory if that was not done).  A program's heaps hold
 * PLD_DEVICE_HEAP_MB per device (pld-env), within the platform's device
 * memory.  A tensor of another program, or whose program was destroyed,
 * is refused.  Returns PLD_OK, PLD_ERR_ARG, PLD_ERR_STATE, PLD_ERR_NOMEM
 * (no room on a device), or a failure to start the devices. */
enum { PLD_EACH_RANK = -1 };
int pld_device_tensor_create(pld_program *p, int rank, pld_dtype dtype,
                             int ndim, const int64_t *shape, pld_tensor *out);
int pld_device_tensor_write(pld_tensor dst, pld_tensor src);
int pld_device_tensor_read(pld_tensor src, pld_tensor dst);
int pld_device_tensor_free(pld_tensor t);

void pld_program_destroy(pld_program *p);

/* Compile, run once, destroy. */
int pld_run(pld_host_fn host, const pld_config *cfg, int argc,
            const pld_arg *argv);

/* Platform facts, for tools and messages.  NULL for an unknown name. */
typedef struct pld_platform_info {
  const char *name;
  int simulated;
  int max_devices;  /* device ids range over [0, max_devices): the
                       cards of a cluster of servers */
  int cube_cores;   /* AIC per device */
  int vector_cores; /* AIV per device */
  size_t ub_bytes;  /* vector core Unified Buffer */
  size_t l1_bytes, l0a_bytes, l0b_bytes, l0c_bytes; /* cube core buffers */
  /* Device global memory (HBM): what one rank's tensor slices, window
   * buffers and device allocations must fit together. */
  uint64_t global_bytes;
  int server_devices; /* cards per server: ids s * server_devices on
                         are server s */
} pld_platform_info;
const pld_platform_info *pld_platform_find(const char *name);

#endif /* PLD_PROGRAM_H */
