/* pld/levels.h: the three levels of a pld program and the calls that cross
 * them, and the host tasks beside them.
 *
 *   level                     declared with      runs on           context
 *   host orchestrator         PLD_HOST           host CPU          pld_host
 *   per-device orchestration  PLD_DEVICE         a device's AICPU  pld_aicpu
 *   device kernel             PLD_KERNEL         AI vector cores   pld_core
 *                             PLD_CUBE_KERNEL    AI cube cores     pld_core
 *   host task                 PLD_HOST_TASK      host CPU          pld_task
 *
 * A host task is a step of the host orchestration that computes on the
 * host CPU, during the run (the host orchestrator itself only records its
 * steps, when the program is compiled): it reads and writes host tensors
 * with plain C through pld_tensor_data, and can neither dispatch, launch
 * nor touch tiles (its context is none of those calls').
 *
 * Each declaration names the function, the name of its context parameter,
 * and its parameters with their signature, then the body follows in braces:
 *
 *   PLD_KERNEL(scale, k, PLD_IN(x, FP32, 8, 8), PLD_OUT(y, FP32, 8, 8),
 *              PLD_SCALAR(rank, INT32)) { ... }
 *
 * The body sees `k` (a pld_core), `x` and `y` (pld_tensor) and `rank`
 * (int32_t).  Bodies return nothing: a failing pld call records its message
 * in the context and every later call of that body becomes a no-op
 * returning the same status, so no failure is lost and none needs checking
 * at each line.
 *
 * Which level may call what is decided by the context types: pld_dispatch
 * needs a pld_host and a PLD_DEVICE function, pld_launch a pld_aicpu and a
 * kernel, tile operations a pld_core.  Crossing levels does not compile.
 */
#ifndef PLD_LEVELS_H
#define PLD_LEVELS_H

#include "pld/pp.h"
#include "pld/types.h"

/* ---- signatures ------------------------------------------------------- */

typedef enum pld_dir {
  PLD_DIR_IN = 1,   /* read only (the default of the model) */
  PLD_DIR_OUT = 2,  /* written only; its content is garbage until written */
  PLD_DIR_INOUT = 3 /* read and written */
} pld_dir;

typedef enum pld_level {
  PLD_LEVEL_HOST = 1,
  PLD_LEVEL_DEVICE = 2,
  PLD_LEVEL_KERNEL = 3,
  PLD_LEVEL_TASK = 4
} pld_level;

typedef enum pld_core_type {
  PLD_CORE_VECTOR = 0, /* AIV: vector tiles in the Unified Buffer */
  PLD_CORE_CUBE = 1    /* AIC: matmul; tiles in L1, operands in L0A/L0B/L0C */
} pld_core_type;

/* A dimension of a declared tensor: a fixed size (> 0); a dynamic one
 * (PLD_DYN) named and bound to the first argument's size it meets (a host
 * function's program-wide, others' per call unless the host's bound it);
 * or a shape expression of dynamic dimensions and numbers (NR - 1, M * 2,
 * K / 4; + - * / % ( )) that must hold exactly, with the call's bindings;
 * a name standing alone nowhere is solved from the first expression of
 * the form a * M + b it is met in (M * 2 of 128 rows: M = 64), which must
 * have a whole solution > 0 and agree with the other parameters. */
typedef struct pld_dim {
  int64_t size;
  const char *name; /* the dimension as written in the declaration */
} pld_dim;

#define PLD_DYN (-1)
/* PLD_DYNAMIC(NR): declares NR as a dynamic dimension for use in parameter
 * shapes.  Its value is PLD_DYN, not the bound size: read actual sizes with
 * pld_tensor_dim(). */
#define PLD_DYNAMIC(name) enum { name = PLD_DYN }

typedef struct pld_param {
  const char *name;
  int kind; /* PLD_ARG_TENSOR, PLD_ARG_WINDOW or PLD_ARG_SCALAR */
  pld_dir dir;
  pld_dtype dtype;
  int ndim; /* 0 for scalars */
  pld_dim dims[PLD_MAX_DIMS];
} pld_param;

/* The most parameters a function may have (besides its context), and so
 * the most arguments a dispatch, launch or host task call may pass.  The
 * preprocessor machinery of pld/pp.h is generated for this value: after
 * changing it, run `python3 tools/gen_pp.py > include/pld/pp.h`. */
#define PLD_MAX_PARAMS 32

typedef struct pld_signature {
  const char *name;
  pld_level level;
  pld_core_type core_type; /* kernels only */
  int nparams;             /* 0 to PLD_MAX_PARAMS */
  const pld_param *params;
  const char *file;
  int line;
} pld_signature;

/* Function descriptors, one type per level (see the top of this file). */
typedef struct pld_host_fn {
  const pld_signature *sig;
  void (*entry)(pld_host, const pld_arg *);
} pld_host_fn;
typedef struct pld_device_fn {
  const pld_signature *sig;
  void (*entry)(pld_aicpu, const pld_arg *);
} pld_device_fn;
typedef struct pld_kernel_fn {
  const pld_signature *sig;
  void (*entry)(pld_core, const pld_arg *);
} pld_kernel_fn;
typedef struct pld_host_task_fn {
  const pld_signature *sig;
  void (*entry)(pld_task, const pld_arg *);
} pld_host_task_fn;

/* ---- parameter declarations ------------------------------------------ */

/* A tensor parameter: name, dtype (FP32, INT32, ...) and its dimensions,
 * 1 to PLD_MAX_DIMS, each an integer constant or a PLD_DYNAMIC name. */
#define PLD_IN(name, dtype, ...) (PLD__T, PLD_DIR_IN, name, dtype, __VA_ARGS__)
#define PLD_OUT(name, dtype, ...)                                              \
  (PLD__T, PLD_DIR_OUT, name, dtype, __VA_ARGS__)
#define PLD_INOUT(name, dtype, ...)                                            \
  (PLD__T, PLD_DIR_INOUT, name, dtype, __VA_ARGS__)
/* A window tensor parameter (pld/window.h): the body sees a pld_window,
 * which peers reach through signals and remote operations.  Always read
 * and written (InOut). */
#define PLD_WINDOW(name, dtype, ...)                                           \
  (PLD__W, PLD_DIR_INOUT, name, dtype, __VA_ARGS__)
/* A kernel's parameter for the program's collective signal window
 * (pld_coll_signal, pld/collective.h): the body sees it as a pld_window
 * (INT32, 1-D); a launch passes no argument for it (the device gives its
 * view), so no signature carries a dimension for it.  Kernels only. */
#define PLD_COLL_SIG(name)                                                     \
  (PLD__W, PLD_DIR_INOUT, name, INT32, PLD__COLL_SIG_CELLS)
PLD_DYNAMIC(PLD__COLL_SIG_CELLS);
/* A scalar parameter, passed by value; the body sees the C type of dtype
 * (INT32 -> int32_t, FP32 -> float, FP16/BF16 -> float, BOOL -> bool). */
#define PLD_SCALAR(name, dtype) (PLD__S, PLD_DIR_IN, name, dtype, 0)

/* ---- function declarations -------------------------------------------- */

/* Each takes the function's name, the name of its context, then at most
 * PLD_MAX_PARAMS parameters.  A mistake in the list (a dtype in lower
 * case or a C type for a dtype, no context name, a parameter without
 * PLD_IN & co., too many dimensions or parameters) is a compile error
 * that says so at the declaration. */
#define PLD_HOST(name, ...)                                                    \
  PLD__DEFINE(PLD_HOST, PLD_LEVEL_HOST, PLD_CORE_VECTOR, pld_host,             \
              pld_host_fn, name, __VA_ARGS__)
#define PLD_DEVICE(name, ...)                                                  \
  PLD__DEFINE(PLD_DEVICE, PLD_LEVEL_DEVICE, PLD_CORE_VECTOR, pld_aicpu,        \
              pld_device_fn, name, __VA_ARGS__)
#define PLD_KERNEL(name, ...)                                                  \
  PLD__DEFINE(PLD_KERNEL, PLD_LEVEL_KERNEL, PLD_CORE_VECTOR, pld_core,         \
              pld_kernel_fn, name, __VA_ARGS__)
#define PLD_CUBE_KERNEL(name, ...)                                             \
  PLD__DEFINE(PLD_CUBE_KERNEL, PLD_LEVEL_KERNEL, PLD_CORE_CUBE, pld_core,      \
              pld_kernel_fn, name, __VA_ARGS__)
#define PLD_HOST_TASK(name, ...)                                               \
  PLD__DEFINE(PLD_HOST_TASK, PLD_LEVEL_TASK, PLD_CORE_VECTOR, pld_task,        \
              pld_host_task_fn, name, __VA_ARGS__)

/* ---- host level --------------------------------------------------------- */

/* The number of ranks (= device ids in the configuration).  Host only. */
int pld_world_size(pld_host h);

/* x[index]: the tensor without its leading dimension, at that index (shape
 * [N, R, C] -> [R, C]).  Host only.  An index outside [0, N) is recorded as
 * a PLD_ERR_BOUNDS failure of the host function and yields a tensor that
 * every later call rejects. */
pld_tensor pld_slice(pld_host h, pld_tensor t, int64_t index);

/* pld_dispatch(h, device_fn, rank, args...): run device_fn once on the
 * device of `rank` with the arguments: tensors (slices of the host's world
 * tensors) and scalars.  Host only.  Asynchronous: devices run
 * concurrently; the program run returns when every dispatch has finished.
 * The arguments are checked against device_fn's signature (count, dtype,
 * shape, dynamic dimensions; an In tensor given to an Out or InOut
 * parameter is refused: what the caller may only read stays read-only).
 * Returns PLD_OK, PLD_ERR_ARG, PLD_ERR_BOUNDS, or the status of an earlier
 * failure of this host call. */
#define pld_dispatch(h, fn, ...)                                               \
  pld__dispatch((h), (fn), PLD__CALL_ARGS(pld_dispatch, fn, __VA_ARGS__))
int pld__dispatch(pld_host h, pld_device_fn fn, int argc, const pld_arg *argv);

/* pld_host_task(h, task, args...): run `task` on the host CPU as a step of
 * the run, with host tensors (the host function's tensor parameters, their
 * slices, host intermediates) and scalars.  Host only.  Ordering follows
 * the data, as for kernels on a device: the task starts once every earlier
 * dispatch whose tensors overlap its own (one of the two writing) has
 * finished, and a later dispatch that overlaps it starts once it has
 * finished; host tasks run one at a time, in program order.  What devices
 * wrote reaches the task's tensors before it runs, and what it wrote
 * reaches the devices' copies after.  Arguments are checked as
 * pld_dispatch's are.  Returns PLD_OK, PLD_ERR_ARG, or an earlier failure
 * of the host function. */
#define pld_host_task(h, fn, ...)                                              \
  pld__host_task((h), (fn), PLD__CALL_ARGS(pld_host_task, fn, __VA_ARGS__))
int pld__host_task(pld_host h, pld_host_task_fn fn, int argc,
                   const pld_arg *argv);

/* Intermediate tensors of the host orchestration: neither inputs nor
 * outputs of the program, sized now (PLD_SHAPE), with memory only during a
 * run, uninitialised at its start and freed at its end.  Host only.
 *  - pld_host_tensor: in host memory, for host tasks; its slices (or the
 *    tensor) may be dispatched too, like a parameter's, and then live in
 *    the device's memory between the steps that need them.
 *  - pld_rank_tensor: in the memory of rank's device, given to that rank's
 *    dispatches only, never copied to the host.
 * Outside a run the handle has no data: pld_tensor_data returns NULL (and
 * sets pld_last_error), and the handle is no argument of a program run.  It
 * belongs to the program (pld_tensor_destroy leaves it).  On failure
 * (PLD_ERR_ARG: dtype, shape, rank; PLD_ERR_NOMEM, also: beyond the
 * device's global memory) the failure is recorded in h and the tensor
 * returned is rejected by every later call. */
pld_tensor pld_host_tensor(pld_host h, pld_dtype dtype, int ndim,
                           const int64_t *shape);
pld_tensor pld_rank_tensor(pld_host h, int32_t rank, pld_dtype dtype, int ndim,
                           const int64_t *shape);

/* ---- host tasks ------------------------------------------------------- */

/* Fails the host task, and with it the run: the run returns `status` (an
 * error status; PLD_ERR_ARG replaces another) and the message, prefixed
 * with the task's name.  Later calls return the same status.  Host task
 * only. */
int pld_task_fail(pld_task t, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The world size of the program the task runs in.  Host task only. */
int pld_task_world_size(pld_task t);

/* ---- device level -------------------------------------------------------- */

/* pld_launch(a, kernel, blocks, args...): submit `kernel` as an SPMD task
 * of `blocks` blocks, each run on one AI core of the kernel's type.  Device
 * only.  The task runs once every earlier task whose tensor regions
 * conflict with its own (one of them writes) has finished; independent
 * tasks may run at once on different cores.  The device function returns
 * only after all its tasks have finished.  Arguments are checked as
 * pld_dispatch's are.  Returns PLD_OK, PLD_ERR_ARG, or the status of an
 * earlier failure of this device call. */
#define pld_launch(a, kernel, ...)                                             \
  pld__launch((a), (kernel), PLD__CALL_ARGS(pld_launch, kernel, __VA_ARGS__))
int pld__launch(pld_aicpu a, pld_kernel_fn kernel, int argc,
                const pld_arg *argv);

/* An intermediate tensor in device global memory, uninitialised, freed when
 * the device function returns.  Device only.  PLD_SHAPE(d0, d1, ...) gives
 * the shape.  On failure (PLD_ERR_ARG; PLD_ERR_NOMEM, also when the
 * device's global memory, pld_platform_info.global_bytes, cannot hold it
 * beside the rank's tensor slices, window copies and this call's earlier
 * allocations: checked when compiling) the failure is recorded in `a` and
 * the tensor returned is rejected by every later call. */
#define PLD_SHAPE(...)                                                         \
  PLD__NARG(__VA_ARGS__), (const int64_t[]) { __VA_ARGS__ }
pld_tensor pld_device_alloc(pld_aicpu a, pld_dtype dtype, int ndim,
                            const int64_t *shape);

/* ---- sizes decided on the device during the run -------------------------- */

/* A device function runs ahead of its kernels: it cannot read what a
 * kernel it launched computes.  Where a launch's block count or the rows a
 * kernel works on are computed earlier in the same run (the tokens each
 * expert received), the launch names where to read them instead, and the
 * device reads them when the launch's task is ready to start: once every
 * earlier task of the call that writes the counts tensor has finished (the
 * task reads it).  What the checks see, when compiling and at the launch,
 * is the limit fixed in the call (max_rows, max_blocks); the kernel sees
 * the value read (pld_tensor_dim, pld_block_num).  Device only.
 *
 * pld_segment(a, t, counts, index, max_rows): the rows of t (its leading
 * dimension) of segment `index` when t's rows are cut, in order, into
 * segments of counts[0], counts[1], ... rows: rows [counts[0] + ... +
 * counts[index - 1], that + counts[index]).  counts is a 1-D INT32 tensor
 * of the device (a parameter, a slice, a pld_device_alloc, or a window
 * view's local copy) with more than `index` elements; max_rows, in [0,
 * t's rows], is the most rows the segment may have, and the shape the
 * launch checks is t's with max_rows rows.  When the task starts, a count
 * below 0, a segment of more than max_rows rows, or one that ends beyond
 * t's rows fails the run with PLD_ERR_BOUNDS, naming the kernel, the
 * parameter, the counts and the values.  A segment may have 0 rows.
 * pld_segment_window does the same for a window view (the rows of every
 * rank's copy).  Tasks are ordered as if the segment were all of t: two
 * launches writing segments of one tensor run one after the other.  On
 * failure (PLD_ERR_ARG: t, counts, index or max_rows) the failure is
 * recorded in `a` and the view returned is rejected by every later call. */
pld_tensor pld_segment(pld_aicpu a, pld_tensor t, pld_tensor counts,
                       int32_t index, int64_t max_rows);
pld_window pld_segment_window(pld_aicpu a, pld_window w, pld_tensor counts,
                              int32_t index, int64_t max_rows);

/* A block count read on the device (pld_launch_by): ceil(counts[index] /
 * per_block) blocks, at most max_blocks (in [1, 65535]); counts a 1-D
 * INT32 tensor of the device, per_block >= 1. */
typedef struct pld_blocks_by {
  pld_tensor counts;
  int32_t index;
  int32_t per_block;
  int32_t max_blocks;
} pld_blocks_by;
#define PLD_BLOCKS_BY(counts, index, per_block, max_blocks)                    \
  ((pld_blocks_by){(counts), (index), (per_block), (max_blocks)})

/* pld_launch_by(a, kernel, by, args...): pld_launch with the block count
 * `by` decided when the task starts (checked with by.max_blocks).  0
 * blocks: the task runs no block and finishes at once.  A count below 0 or
 * needing more than by.max_blocks blocks fails the run with
 * PLD_ERR_BOUNDS.  The kernel takes at least one argument. */
#define pld_launch_by(a, kernel, by, ...)                                      \
  pld__launch_by((a), (kernel), (by),                                          \
                 PLD__CALL_ARGS(pld_launch_by, kernel, 1, __VA_ARGS__))
int pld__launch_by(pld_aicpu a, pld_kernel_fn kernel, pld_blocks_by by,
                   int argc, const pld_arg *argv);

/* ---- explicit dependencies ---------------------------------------------- */

/* Besides the order its tensors imply, a launch may name earlier tasks it
 * waits for: those of this call of the device function (ids of another
 * call or rank are refused).  An edge orders as an automatic one does:
 * the task starts once each task it names has finished (for a task whose
 * blocks deferred waits, once those are satisfied), and what those tasks
 * wrote is ordered before it (the race detector sees it so).  Edges only
 * point backwards, so they cannot make a cycle.
 *
 * pld_task_id: a launched task, valid in the call that launched it; all
 * zeros (PLD_NO_TASK, and what a failed launch returns) is no task. */
typedef struct pld_task_id {
  uint32_t call; /* the device call that launched it; 0: no task */
  int32_t rank;  /* the rank whose device function launched it */
  int32_t index; /* its launch number in the call, from 0 */
} pld_task_id;
#define PLD_NO_TASK ((pld_task_id){0, 0, 0})

/* The tasks a launch waits for: n ids (n in [0, PLD_MAX_DEPS]).
 * PLD_DEPS(t1, t2) makes one from its arguments; an id may repeat. */
#define PLD_MAX_DEPS 16
typedef struct pld_deps {
  int32_t n;
  const pld_task_id *ids;
} pld_deps;
#define PLD_DEPS(...)                                                          \
  ((pld_deps){PLD__NARG(__VA_ARGS__), (const pld_task_id[]){__VA_ARGS__}})

/* pld_launch_task(a, kernel, blocks, args...): pld_launch, returning the
 * task's id.  pld_launch_after(a, deps, kernel, blocks, args...): the same,
 * and the task also waits for each task of deps.  Device only.  On failure
 * (PLD_ERR_ARG: as pld_launch's, or deps: n out of range, ids NULL, an id
 * of no task, of another call or rank, or of a task not launched yet) the
 * failure is recorded in `a`, with the message naming the function, the
 * parameter, the rank and what was expected and got, and PLD_NO_TASK is
 * returned; a device function traced at compile time is refused there. */
#define pld_launch_task(a, kernel, ...)                                        \
  pld__launch_after((a), (pld_deps){0, 0}, 0, (kernel),                        \
                    PLD__CALL_ARGS(pld_launch_task, kernel, __VA_ARGS__))
#define pld_launch_after(a, deps, kernel, ...)                                 \
  pld__launch_after((a), (deps), 1, (kernel),                                  \
                    PLD__CALL_ARGS(pld_launch_after, kernel, __VA_ARGS__))
pld_task_id pld__launch_after(pld_aicpu a, pld_deps deps, int after,
                              pld_kernel_fn kernel, int argc,
                              const pld_arg *argv);
/* pld_launch_by_after(a, deps, kernel, by, args...): pld_launch_by whose
 * task also waits for each task of deps; returns its id, as
 * pld_launch_after. */
#define pld_launch_by_after(a, deps, kernel, by, ...)                          \
  pld__launch_by_after(                                                        \
      (a), (deps), (kernel), (by),                                             \
      PLD__CALL_ARGS(pld_launch_by_after, kernel, 1, __VA_ARGS__))
pld_task_id pld__launch_by_after(pld_aicpu a, pld_deps deps,
                                 pld_kernel_fn kernel, pld_blocks_by by,
                                 int argc, const pld_arg *argv);

/* A manual scope, as the original's MANUAL scope: between
 * pld_manual_scope_begin and pld_manual_scope_end, launches are not
 * ordered by their tensors among themselves, only by the edges they name
 * (pld_launch_after).  What still holds: a launch in the scope waits for
 * the earlier conflicting tasks launched before the scope (as ever), a
 * launch after the scope for the conflicting tasks in it, and every task
 * for the writers of the counts it reads (pld_segment, pld_launch_by:
 * the device reads them).  Scopes do not nest; the device function must
 * end its scope before it returns.  Device only.  Returns PLD_OK,
 * PLD_ERR_ARG (a scope open already, none open, with the message), or an
 * earlier failure of the call. */
int pld_manual_scope_begin(pld_aicpu a);
int pld_manual_scope_end(pld_aicpu a);

/* ---- kernel level -------------------------------------------------------- */

/* This block's index in [0, blocks) and the block count of the launch. */
int32_t pld_block_idx(pld_core k);
int32_t pld_block_num(pld_core k);

/* Fails the running kernel block, and with it the run: the run returns
 * `status` (an error status; PLD_ERR_ARG replaces PLD_OK or a code that is
 * not a pld status) and the message fmt... (printf), prefixed with the
 * block's identity in the words of the library's own kernel failures:
 * "pld_kernel_fail: kernel check (rank 1, device 1, AIV core 2, block 2 of
 * 4): expert 3 received 7 rows, expected 6".  A message longer than the
 * library's message buffer is cut.  As for any failure of a kernel's call,
 * only the block's first failure counts (a later pld_kernel_fail is
 * ignored), every later pld call of the block returns that status at once
 * and does nothing, the other blocks and ranks are stopped (their waits
 * return PLD_ERR_ABORTED), and the program may run again.  The kernel body
 * should return soon after: plain C code is not stopped.  Returns the
 * block's first failure.  Kernel only (vector and cube). */
int pld_kernel_fail(pld_core k, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- internals of the declaration macros --------------------------------- */

#if defined(__GNUC__)
#define PLD__UNUSED __attribute__((unused))
#else
#define PLD__UNUSED
#endif

#define PLD__CAT2(a, b) PLD__CAT2_(a, b)
#define PLD__CAT2_(a, b) a##b
#define PLD__EXPAND(...) __VA_ARGS__
#define PLD__HEAD(...) PLD__HEAD_(__VA_ARGS__, ~)
#define PLD__HEAD_(x, ...) x
#define PLD__APPLY(F, ...) F(__VA_ARGS__)
#define PLD__STRV(...) #__VA_ARGS__
/* PLD__IS_PAREN(x): 1 if x starts with a parenthesis; PLD__IS_EMPTY(x): 1
 * if x has no token (x may not end with the name of a function-like
 * macro). */
#define PLD__IS_PAREN(x) PLD__CHECK(PLD__PROBE x)
#define PLD__IS_EMPTY(x) PLD__CAT2(PLD__IS_EMPTY_, PLD__IS_PAREN(x))(x)
#define PLD__IS_EMPTY_1(x) 0
#define PLD__IS_EMPTY_0(x) PLD__CHECK(PLD__PROBE x())

/* Per-element macros for PLD__MAPH over (ctx, param, param, ...): the
 * context name, then parameter tuples (kind, dir, name, dtype, dims...);
 * and over call arguments (PLD__ARG0, PLD__ARGN; PLD__ARGF for PLD__MAPI,
 * that is PLD_ARGS). */
#define PLD__ARG0(c, x) PLD_ARG(x)
#define PLD__ARGN(c, i, x) , PLD_ARG(x)
#define PLD__ARGF(i, x)                                                        \
  PLD__CAT2(PLD__COMMA_IF_NOT_FIRST_, PLD__ISZERO(i)) PLD_ARG(x)
#define PLD__COMMA_IF_NOT_FIRST_1
#define PLD__COMMA_IF_NOT_FIRST_0 ,
#define PLD__NONE0(c, x) /* the context, for the walks that skip it */

#define PLD__PARAMF(c, i, p) PLD__PARAM_OF(PLD__EXPAND p),
#define PLD__PARAM_OF(...) PLD__PARAM_OF_(__VA_ARGS__)
#define PLD__PARAM_OF_(kind, dir, name, dtype, ...)                            \
  PLD__PARAM_##kind(dir, name, dtype, __VA_ARGS__)
#define PLD__PARAM_PLD__T(dir, name, dtype, ...)                               \
  {                                                                            \
#name, PLD_ARG_TENSOR, dir, PLD_##dtype, PLD__NARG(__VA_ARGS__), {         \
      PLD__MAPD(PLD__DIM, __VA_ARGS__)                                         \
    }                                                                          \
  }
#define PLD__PARAM_PLD__W(dir, name, dtype, ...)                               \
  {                                                                            \
#name, PLD_ARG_WINDOW, dir, PLD_##dtype, PLD__NARG(__VA_ARGS__), {         \
      PLD__MAPD(PLD__DIM, __VA_ARGS__)                                         \
    }                                                                          \
  }
#define PLD__PARAM_PLD__S(dir, name, dtype, unused)                            \
  {                                                                            \
#name, PLD_ARG_SCALAR, dir, PLD_##dtype, 0, {                              \
      { 0, 0 }                                                                 \
    }                                                                          \
  }
#define PLD__DIM(d)                                                            \
  { (d), #d }
#define PLD__PARAM_END                                                         \
  {                                                                            \
    0, 0, PLD_DIR_IN, PLD_DTYPE_COUNT, 0, {                                    \
      { 0, 0 }                                                                 \
    }                                                                          \
  }

#define PLD__DECLF(c, i, p) , PLD__DECL_OF(PLD__EXPAND p)
#define PLD__DECL_OF(...) PLD__DECL_OF_(__VA_ARGS__)
#define PLD__DECL_OF_(kind, dir, name, dtype, ...) PLD__DECL_##kind(name, dtype)
#define PLD__DECL_PLD__T(name, dtype) PLD__UNUSED pld_tensor name
#define PLD__DECL_PLD__W(name, dtype) PLD__UNUSED pld_window name
#define PLD__DECL_PLD__S(name, dtype) PLD__UNUSED PLD__CTYPE_##dtype name

#define PLD__UNPACKF(c, i, p) , PLD__UNPACK_OF(i, PLD__EXPAND p)
#define PLD__UNPACK_OF(...) PLD__UNPACK_OF_(__VA_ARGS__)
#define PLD__UNPACK_OF_(i, kind, dir, name, dtype, ...)                        \
  PLD__UNPACK_##kind(argv_[(i)-1], dtype)
#define PLD__UNPACK_PLD__T(a, dtype) ((pld_tensor){(a).v.t})
#define PLD__UNPACK_PLD__W(a, dtype) ((pld_window){(a).v.t})
#define PLD__UNPACK_PLD__S(a, dtype) ((PLD__CTYPE_##dtype)PLD__GET_##dtype(a))

/* Per dtype of PLD_DTYPE_MAP: its C type, how to read it from a pld_arg,
 * and PLD__DTYPE_OK_<dtype>, empty (the checks below: anything else that
 * follows PLD__DTYPE_OK_ is left as it is, so not empty). */
#define PLD__CTYPE_FP32 float
#define PLD__CTYPE_FP16 float
#define PLD__CTYPE_BF16 float
#define PLD__CTYPE_FP64 double
#define PLD__CTYPE_INT32 int32_t
#define PLD__CTYPE_INT16 int16_t
#define PLD__CTYPE_INT8 int8_t
#define PLD__CTYPE_UINT8 uint8_t
#define PLD__CTYPE_INT64 int64_t
#define PLD__CTYPE_BOOL bool
#define PLD__GET_FP32(a) (a).v.f
#define PLD__GET_FP16(a) (a).v.f
#define PLD__GET_BF16(a) (a).v.f
#define PLD__GET_FP64(a) (a).v.f
#define PLD__GET_INT32(a) (a).v.i
#define PLD__GET_INT16(a) (a).v.i
#define PLD__GET_INT8(a) (a).v.i
#define PLD__GET_UINT8(a) (a).v.i
#define PLD__GET_INT64(a) (a).v.i
#define PLD__GET_BOOL(a) ((a).v.i != 0)
#define PLD__DTYPE_OK_FP32
#define PLD__DTYPE_OK_FP16
#define PLD__DTYPE_OK_BF16
#define PLD__DTYPE_OK_FP64
#define PLD__DTYPE_OK_INT32
#define PLD__DTYPE_OK_INT16
#define PLD__DTYPE_OK_INT8
#define PLD__DTYPE_OK_UINT8
#define PLD__DTYPE_OK_INT64
#define PLD__DTYPE_OK_BOOL
/* (A dtype without its PLD__DTYPE_OK_ is a syntax error here.) */
#define PLD__DTYPE_KNOWN(name, value, bytes) PLD__DTYPE_OK_##name
_Static_assert(1 PLD_DTYPE_MAP(PLD__DTYPE_KNOWN), "PLD__DTYPE_OK_");

/* The definition, once the list is checked (below): a forward declaration
 * of the body, the parameter table (closed by an end marker so that it is
 * never empty), the signature, an entry that unpacks checked arguments into
 * the body's typed parameters, the descriptor, and finally the head of the
 * body the user's braces complete.  Arguments reach the entry only after
 * the runtime checked them against the signature. */
#define PLD__DEFINE_OK_1(what, level, coretype, ctxtype, fntype, name, ...)    \
  static void name##__body(ctxtype PLD__HEAD(__VA_ARGS__) PLD__MAPH(           \
      PLD__NONE0, PLD__DECLF, ~, __VA_ARGS__));                                \
  static const pld_param name##__params[] = {                                  \
      PLD__MAPH(PLD__NONE0, PLD__PARAMF, ~, __VA_ARGS__) PLD__PARAM_END};      \
  static const pld_signature name##__sig = {                                   \
      #name,                                                                   \
      level,                                                                   \
      coretype,                                                                \
      (int)(sizeof(name##__params) / sizeof(name##__params[0])) - 1,           \
      name##__params,                                                          \
      __FILE__,                                                                \
      __LINE__};                                                               \
  static void name##__entry(ctxtype ctx_, const pld_arg *argv_) {              \
    (void)argv_;                                                               \
    name##__body(ctx_ PLD__MAPH(PLD__NONE0, PLD__UNPACKF, ~, __VA_ARGS__));    \
  }                                                                            \
  PLD__UNUSED static const fntype name = {&name##__sig, name##__entry};        \
  static void name##__body(ctxtype PLD__HEAD(__VA_ARGS__) PLD__MAPH(           \
      PLD__NONE0, PLD__DECLF, ~, __VA_ARGS__))

/* ---- checks of a declaration's list ------------------------------------ */

/* pld/pp.h must have been generated for this header's limits. */
#if PLD__PP_MAX_PARAMS != PLD_MAX_PARAMS || PLD__PP_MAX_DIMS != PLD_MAX_DIMS
#error "pld/pp.h is stale: python3 tools/gen_pp.py > include/pld/pp.h"
#endif

/* A mistake in the list of a declaration would surface as errors from deep
 * inside the definition above, pages of them.  So PLD__DEFINE checks the
 * list first, in the preprocessor alone, and a wrong list gives one error
 * per mistake, in words, at the declaration (PLD__DECL_ERROR), then the
 * definition of the list repaired (a lower-case dtype or a C type becomes
 * the dtype meant, extra dimensions and parameters without PLD_IN & co.
 * are dropped, ...), so that no cascade of errors follows.
 *
 * The verdict on a correct list must cost little: each parameter becomes
 * the tokens PLD__VERDICT_<kind>(...) leaves, no token when its dtype is a
 * pld dtype (PLD__DTYPE_OK_) and its dimensions fit (PLD__DIMS_PAST_MAX),
 * and one emptiness test judges the whole list.  Only a wrong list is
 * walked again, entry by entry (PLD__CHECK_CTX for the context name,
 * PLD__CHECK_PARAM for a parameter), to classify each mistake and hand
 * it to one of three modes: PLD__BAD_* (a `0` per mistake), PLD__ERR_*
 * (the errors) and PLD__FIX_* (the repaired entry).  Should that walk find
 * nothing the verdict found, the list is defined as written, and the
 * compiler's own errors tell. */
#define PLD__DEFINE(what, level, coretype, ctxtype, fntype, name, ...)         \
  PLD__CAT2(PLD__DEFINE_FITS_, PLD__FITS(__VA_ARGS__))                         \
  (what, level, coretype, ctxtype, fntype, name, __VA_ARGS__)
/* More than PLD_MAX_PARAMS parameters: the error, then the first ones. */
#define PLD__DEFINE_FITS_0(what, level, coretype, ctxtype, fntype, name, ...)  \
  PLD__ERR_TOO_MANY(what, name, PLD_MAX_PARAMS)                                \
  PLD__DEFINE_FITS_1(what, level, coretype, ctxtype, fntype, name,             \
                     PLD__TAKE(__VA_ARGS__))
#define PLD__DEFINE_FITS_1(what, level, coretype, ctxtype, fntype, name, ...)  \
  PLD__CAT2(PLD__DEFINE_OK_, PLD__IS_EMPTY(PLD__MAPH(PLD__BAD0, PLD__VERDICTF, \
                                                     ~, __VA_ARGS__)))         \
  (what, level, coretype, ctxtype, fntype, name, __VA_ARGS__)
#define PLD__DEFINE_OK_0(what, level, coretype, ctxtype, fntype, name, ...)    \
  PLD__CAT2(PLD__DEFINE_UNNAMED_,                                              \
            PLD__IS_EMPTY(PLD__MAPH(PLD__BAD0, PLD__BADF, ~, __VA_ARGS__)))    \
  (what, level, coretype, ctxtype, fntype, name, __VA_ARGS__)
#define PLD__DEFINE_UNNAMED_1 PLD__DEFINE_OK_1
#define PLD__DEFINE_UNNAMED_0(what, level, coretype, ctxtype, fntype, name,    \
                              ...)                                             \
  PLD__MAPH(PLD__ERR0, PLD__ERRF, (what, name, ctxtype), __VA_ARGS__)          \
  PLD__DEFINE_OK_1(what, level, coretype, ctxtype, fntype, name,               \
                   PLD__MAPH(PLD__FIX0, PLD__FIXF, ~, __VA_ARGS__))

/* The verdict.  The context name gets the walk's check (PLD__BAD0, once
 * per declaration).  A parameter p becomes PLD__VERDICT_<its first
 * element> p: a call of the macro below if PLD_IN & co. made it, else
 * tokens that stay (p not a tuple gives PLD__VERDICT_PLD__HEAD ...). */
#define PLD__VERDICTF(c, i, x) PLD__CAT2(PLD__VERDICT_, PLD__HEAD x) x
#define PLD__VERDICT_PLD__T(kind, dir, name, dtype, ...)                       \
  PLD__DTYPE_OK_##dtype PLD__DIMS_PAST_MAX(__VA_ARGS__)
#define PLD__VERDICT_PLD__W(kind, dir, name, dtype, ...)                       \
  PLD__DTYPE_OK_##dtype PLD__DIMS_PAST_MAX(__VA_ARGS__)
#define PLD__VERDICT_PLD__S(kind, dir, name, dtype, unused)                    \
  PLD__DTYPE_OK_##dtype

/* The walk. */
#define PLD__BAD0(c, x) PLD__CHECK_CTX(PLD__BAD, c, x)
#define PLD__BADF(c, i, x) PLD__CHECK_PARAM(PLD__BAD, c, i, x)
#define PLD__ERR0(c, x) PLD__CHECK_CTX(PLD__ERR, c, x)
#define PLD__ERRF(c, i, x) PLD__CHECK_PARAM(PLD__ERR, c, i, x)
#define PLD__FIX0(c, x) PLD__CHECK_CTX(PLD__FIX, c, x)
#define PLD__FIXF(c, i, x) PLD__CHECK_PARAM(PLD__FIX, c, i, x)

/* The context name: neither a parameter nor empty.  (It is a name, so
 * it pastes, even if it is a function-like macro's.) */
#define PLD__CHECK_CTX(M, c, x)                                                \
  PLD__CAT2(PLD__CHECK_CTX_, PLD__IS_PAREN(x))(M, c, x)
#define PLD__CHECK_CTX_1(M, c, x) M##_CTX_MISSING(c, x)
#define PLD__CHECK_CTX_0(M, c, x)                                              \
  PLD__CAT2(PLD__CHECK_CTX_EMPTY_, PLD__CHECK(PLD__CTX_IS_##x))(M, c, x)
#define PLD__CTX_IS_ ~, 1, /* empty */
#define PLD__CHECK_CTX_EMPTY_1(M, c, x) M##_CTX_EMPTY(c, x)
#define PLD__CHECK_CTX_EMPTY_0(M, c, x) M##_CTX_OK(c, x)

/* A parameter: a tuple PLD_IN & co. made (it starts with their tag), its
 * dtype a pld dtype (dtype_ok 1), its tensor of at most PLD_MAX_DIMS
 * dimensions (dims_ok 1). */
#define PLD__CHECK_PARAM(M, c, i, p)                                           \
  PLD__CAT2(PLD__CHECK_KIND_,                                                  \
            PLD__CHECK(PLD__CAT2(PLD__KIND_IS_, PLD__HEAD p)))                 \
  (M, c, i, p)
#define PLD__KIND_IS_PLD__T ~, 1,
#define PLD__KIND_IS_PLD__W ~, 1,
#define PLD__KIND_IS_PLD__S ~, 1,
#define PLD__CHECK_KIND_0(M, c, i, p)                                          \
  PLD__CAT2(PLD__CHECK_KIND_EMPTY_, PLD__IS_EMPTY(p))(M, c, i, p)
#define PLD__CHECK_KIND_EMPTY_1(M, c, i, p) M##_PARAM_EMPTY(c, i, p)
#define PLD__CHECK_KIND_EMPTY_0(M, c, i, p) M##_PARAM_BARE(c, i, p)
#define PLD__CHECK_KIND_1(M, c, i, p)                                          \
  PLD__APPLY(PLD__CHECK_PARTS, M, c, i, PLD__EXPAND p)
#define PLD__CHECK_PARTS(M, c, i, kind, dir, name, dtype, ...)                 \
  M##_PARAM(c, i, kind, dir, name, dtype,                                      \
            PLD__IS_EMPTY(PLD__DTYPE_OK_##dtype),                              \
            PLD__CAT2(PLD__DIMS_FIT_, kind)(__VA_ARGS__), __VA_ARGS__)
#define PLD__DIMS_FIT_PLD__S(...) 1
#define PLD__DIMS_FIT_PLD__T(...) PLD__IS_EMPTY(PLD__DIMS_PAST_MAX(__VA_ARGS__))
#define PLD__DIMS_FIT_PLD__W(...) PLD__IS_EMPTY(PLD__DIMS_PAST_MAX(__VA_ARGS__))

/* Mode BAD. */
#define PLD__BAD_CTX_MISSING(c, x) 0
#define PLD__BAD_CTX_EMPTY(c, x) 0
#define PLD__BAD_CTX_OK(c, x)
#define PLD__BAD_PARAM_EMPTY(c, i, p) 0
#define PLD__BAD_PARAM_BARE(c, i, p) 0
#define PLD__BAD_PARAM(c, i, kind, dir, name, dtype, dtype_ok, dims_ok, ...)   \
  PLD__CAT2(PLD__BAD_, dtype_ok) PLD__CAT2(PLD__BAD_, dims_ok)
#define PLD__BAD_0 0
#define PLD__BAD_1

/* Mode FIX: the entry repaired (a parameter with its leading comma). */
#define PLD__FIX_CTX_MISSING(c, x)                                             \
  PLD__UNUSED pld__ctx_ PLD__CHECK_PARAM(PLD__FIX, c, 1, x)
#define PLD__FIX_CTX_EMPTY(c, x) PLD__UNUSED pld__ctx_
#define PLD__FIX_CTX_OK(c, x) x
#define PLD__FIX_PARAM_EMPTY(c, i, p)
#define PLD__FIX_PARAM_BARE(c, i, p)
#define PLD__FIX_PARAM(c, i, kind, dir, name, dtype, dtype_ok, dims_ok, ...)   \
  , (kind, dir, name, PLD__CAT2(PLD__FIX_DTYPE_, dtype_ok)(dtype),             \
     PLD__CAT2(PLD__FIX_DIMS_, dims_ok)(__VA_ARGS__))
#define PLD__FIX_DTYPE_1(d) d
#define PLD__FIX_DTYPE_0(d) PLD__HEAD(PLD__DTYPE_FIX(d))
#define PLD__FIX_DIMS_1(...) __VA_ARGS__
#define PLD__FIX_DIMS_0(...) 1

/* The dtype meant by a mistaken one, and the error that says why:
 * PLD__DTYPE_HINT_<mistake> for the likely mistakes (the trailing comma
 * absorbs the rest of a C type of more than one word, as in `long long`),
 * PLD__DTYPE_FIX(d) for any. */
#define PLD__DTYPE_HINT_ ~, INT64, PLD__ERR_DTYPE_MISSING,
#define PLD__DTYPE_HINT_fp32 ~, FP32, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_fp16 ~, FP16, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_bf16 ~, BF16, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_fp64 ~, FP64, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_int32 ~, INT32, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_int16 ~, INT16, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_int8 ~, INT8, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_uint8 ~, UINT8, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_int64 ~, INT64, PLD__ERR_DTYPE_LOWER,
#define PLD__DTYPE_HINT_float ~, FP32, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_double ~, FP64, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_int ~, INT32, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_short ~, INT16, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_long ~, INT64, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_char ~, INT8, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT__Bool ~, BOOL, PLD__ERR_DTYPE_CTYPE, /* and bool */
#define PLD__DTYPE_HINT_int8_t ~, INT8, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_int16_t ~, INT16, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_int32_t ~, INT32, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_int64_t ~, INT64, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_HINT_uint8_t ~, UINT8, PLD__ERR_DTYPE_CTYPE,
#define PLD__DTYPE_FIX(d)                                                      \
  PLD__DTYPE_FIX_(PLD__DTYPE_HINT_##d, INT64, PLD__ERR_DTYPE_UNKNOWN, ~)
#define PLD__DTYPE_FIX_(...) PLD__DTYPE_FIX__(__VA_ARGS__)
#define PLD__DTYPE_FIX__(probe, dtype, why, ...) dtype, why

/* (Not formatted: the spacing inside a message is the message's.) */
/* clang-format off */
/* Mode ERR.  Each message is written inside the PLD__STRV that makes it a
 * string, so that no word of it is ever macro-expanded (a program may well
 * define `not` or `empty`); only the names it quotes come from the list.
 * c is (what, name, ctxtype).  (PLD__APPLY_ERR: inside PLD__APPLY.) */
#define PLD__APPLY_ERR(F, ...) F(__VA_ARGS__)
#define PLD__ERR_CTX_MISSING(c, x)                                             \
  PLD__APPLY_ERR(PLD__ERR_CTX_MISSING_, PLD__EXPAND c)
#define PLD__ERR_CTX_MISSING_(what_, fn_, ctx_)                                \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: the context name is missing: write      \
                            what_(fn_, ctx, ...), where ctx names the ctx_ of  \
                            the body))
#define PLD__ERR_CTX_EMPTY(c, x)                                               \
  PLD__APPLY_ERR(PLD__ERR_CTX_EMPTY_, PLD__EXPAND c)
#define PLD__ERR_CTX_EMPTY_(what_, fn_, ctx_)                                  \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: the context name is empty: write        \
                            what_(fn_, ctx, ...), where ctx names the ctx_ of  \
                            the body))
#define PLD__ERR_CTX_OK(c, x)
#define PLD__ERR_PARAM_EMPTY(c, i, p)                                          \
  PLD__APPLY_ERR(PLD__ERR_PARAM_EMPTY_, PLD__EXPAND c, i)
#define PLD__ERR_PARAM_EMPTY_(what_, fn_, ctx_, i_)                            \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ is empty (a comma too      \
                            many?)))
#define PLD__ERR_PARAM_BARE(c, i, p)                                           \
  PLD__APPLY_ERR(PLD__ERR_PARAM_BARE_, PLD__EXPAND c, i, p)
#define PLD__ERR_PARAM_BARE_(what_, fn_, ctx_, i_, p_)                         \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ (p_) is not declared with  \
                            PLD_IN, PLD_OUT, PLD_INOUT, PLD_WINDOW or          \
                            PLD_SCALAR))
#define PLD__ERR_PARAM(c, i, kind, dir, name, dtype, dtype_ok, dims_ok, ...)   \
  PLD__CAT2(PLD__ERR_DTYPE_, dtype_ok)(c, i, name, dtype)                      \
  PLD__CAT2(PLD__ERR_DIMS_, dims_ok)(c, i, name, __VA_ARGS__)
#define PLD__ERR_DTYPE_1(c, i, name, dtype)
#define PLD__ERR_DTYPE_0(c, i, name, dtype)                                    \
  PLD__APPLY_ERR(PLD__ERR_DTYPE, PLD__EXPAND c, i, name, dtype,                \
                 PLD__DTYPE_FIX(dtype))
#define PLD__ERR_DTYPE(what_, fn_, ctx_, i_, p_, d_, fix_, why_)               \
  why_(what_, fn_, i_, p_, d_, fix_, PLD_DTYPE_MAP(PLD__DTYPE_WORD))
#define PLD__DTYPE_WORD(name, value, bytes) name
#define PLD__ERR_DTYPE_LOWER(what_, fn_, i_, p_, d_, fix_, all_)               \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ (p_): d_ is not a pld      \
                            dtype: dtypes are upper case, write fix_))
#define PLD__ERR_DTYPE_CTYPE(what_, fn_, i_, p_, d_, fix_, all_)               \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ (p_): d_ is a C type, not  \
                            a pld dtype: write fix_))
#define PLD__ERR_DTYPE_UNKNOWN(what_, fn_, i_, p_, d_, fix_, all_)             \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ (p_): d_ is not a pld      \
                            dtype (one of all_)))
#define PLD__ERR_DTYPE_MISSING(what_, fn_, i_, p_, d_, fix_, all_)             \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ (p_) has no dtype (one of  \
                            all_)))
#define PLD__ERR_DIMS_1(c, i, name, ...)
#define PLD__ERR_DIMS_0(c, i, name, ...)                                       \
  PLD__APPLY_ERR(PLD__ERR_DIMS_, PLD__EXPAND c, i, name,                       \
                 PLD__NARG(__VA_ARGS__), PLD_MAX_DIMS)
#define PLD__ERR_DIMS_(what_, fn_, ctx_, i_, p_, n_, max_)                     \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: parameter i_ (p_) has n_ dimensions,    \
                            more than PLD_MAX_DIMS (max_)))
#define PLD__ERR_TOO_MANY(what, name, max) PLD__ERR_TOO_MANY_(what, name, max)
#define PLD__ERR_TOO_MANY_(what_, fn_, max_)                                   \
  PLD__DECL_ERROR(PLD__STRV(what_ fn_: more than PLD_MAX_PARAMS (max_)         \
                            parameters))

/* The arguments of a call (pld_dispatch and pld_launch of fn, after the
 * rank or the block count; pld_host_task of fn): its argc, argv pair.  A
 * list longer than the rank or block count and PLD_MAX_PARAMS arguments,
 * which no function takes, is one error in words at the call, then the
 * call with the list's first PLD_MAX_PARAMS + 1 entries (no cascade of
 * errors follows; a task given PLD_MAX_PARAMS + 1 is refused at run time,
 * as any count its signature does not have). */
#define PLD__CALL_ARGS(what, fn, ...)                                          \
  PLD__CAT2(PLD__CALL_ARGS_, PLD__FITS(__VA_ARGS__))(what, fn, __VA_ARGS__)
#define PLD__CALL_ARGS_1(what, fn, ...)                                        \
  PLD__NARG(__VA_ARGS__),                                                      \
      (const pld_arg[]){PLD__MAPH(PLD__ARG0, PLD__ARGN, ~, __VA_ARGS__)}
#define PLD__CALL_ARGS_0(what, fn, ...)                                        \
  (PLD__TOO_MANY_ARGS(PLD_MAX_PARAMS, what of fn) PLD_MAX_PARAMS + 1),         \
      (const pld_arg[]) {                                                      \
    PLD__MAPH(PLD__ARG0, PLD__ARGN, ~, PLD__TAKE(__VA_ARGS__))                 \
  }
#define PLD__DROP1(...) PLD__DROP1_(__VA_ARGS__)
#define PLD__DROP1_(x, ...) __VA_ARGS__
/* The error of a call (who: its words) with more than max arguments. */
#define PLD__TOO_MANY_ARGS(max, ...) PLD__TOO_MANY_ARGS_(max, __VA_ARGS__)
#define PLD__TOO_MANY_ARGS_(max_, ...)                                         \
  PLD__EXPR_ERROR(PLD__STRV(__VA_ARGS__: more than PLD_MAX_PARAMS (max_)       \
                            arguments))

/* clang-format on */

/* The error itself.  GCC and Clang report a "GCC error" pragma at the
 * declaration, as its first line and without a trail of macro notes; other
 * compilers get a failed static assertion. */
#if defined(__clang__) || (defined(__GNUC__) && !defined(__INTEL_COMPILER))
#define PLD__DECL_ERROR(msg) _Pragma(PLD__STRV(GCC error msg))
#define PLD__EXPR_ERROR(msg) _Pragma(PLD__STRV(GCC error msg))
#else
#define PLD__DECL_ERROR(msg) _Static_assert(0, msg);
/* Where an expression stands: a failed assertion in a type's members. */
#define PLD__EXPR_ERROR(msg)                                                   \
  (void)sizeof(struct {                                                        \
    _Static_assert(0, msg);                                                    \
    int pld_x_;                                                                \
  }),
#endif

#endif /* PLD_LEVELS_H */
