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

/* One dimension of a declared tensor: a fixed size (> 0); a dynamic
 * dimension (size PLD_DYN) identified by its name and bound to the size
 * of the first argument it meets (a host function's program-wide; a
 * device function's, kernel's or host task's for the call, unless the
 * host function's parameters bound it); or a shape expression, an integer
 * expression of dynamic dimensions and numbers (NR - 1, M * 2, K / 4; + -
 * * / % and parentheses), checked against the call's bindings: it must
 * hold exactly (a division must leave no remainder). */
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

typedef struct pld_signature {
  const char *name;
  pld_level level;
  pld_core_type core_type; /* kernels only */
  int nparams;
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
 * each an integer constant or a PLD_DYNAMIC name. */
#define PLD_IN(name, dtype, ...) (T, PLD_DIR_IN, name, dtype, __VA_ARGS__)
#define PLD_OUT(name, dtype, ...) (T, PLD_DIR_OUT, name, dtype, __VA_ARGS__)
#define PLD_INOUT(name, dtype, ...) (T, PLD_DIR_INOUT, name, dtype, __VA_ARGS__)
/* A window tensor parameter (pld/window.h): the body sees a pld_window,
 * which peers reach through signals and remote operations.  Always read
 * and written (InOut). */
#define PLD_WINDOW(name, dtype, ...) (W, PLD_DIR_INOUT, name, dtype, __VA_ARGS__)
/* A scalar parameter, passed by value; the body sees the C type of dtype
 * (INT32 -> int32_t, FP32 -> float, FP16/BF16 -> float, BOOL -> bool). */
#define PLD_SCALAR(name, dtype) (S, PLD_DIR_IN, name, dtype, 0)

/* ---- function declarations -------------------------------------------- */

#define PLD_HOST(name, ...)                                                    \
  PLD__DEFINE(PLD_LEVEL_HOST, PLD_CORE_VECTOR, pld_host, pld_host_fn, name,   \
              __VA_ARGS__)
#define PLD_DEVICE(name, ...)                                                  \
  PLD__DEFINE(PLD_LEVEL_DEVICE, PLD_CORE_VECTOR, pld_aicpu, pld_device_fn,    \
              name, __VA_ARGS__)
#define PLD_KERNEL(name, ...)                                                  \
  PLD__DEFINE(PLD_LEVEL_KERNEL, PLD_CORE_VECTOR, pld_core, pld_kernel_fn,     \
              name, __VA_ARGS__)
#define PLD_CUBE_KERNEL(name, ...)                                             \
  PLD__DEFINE(PLD_LEVEL_KERNEL, PLD_CORE_CUBE, pld_core, pld_kernel_fn, name, \
              __VA_ARGS__)
#define PLD_HOST_TASK(name, ...)                                               \
  PLD__DEFINE(PLD_LEVEL_TASK, PLD_CORE_VECTOR, pld_task, pld_host_task_fn,    \
              name, __VA_ARGS__)

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
  pld__dispatch((h), (fn), PLD__NARG(__VA_ARGS__),                             \
                (const pld_arg[]){PLD__MAPI(PLD__ARGF, __VA_ARGS__)})
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
  pld__host_task((h), (fn), PLD__NARG(__VA_ARGS__),                            \
                 (const pld_arg[]){PLD__MAPI(PLD__ARGF, __VA_ARGS__)})
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
  pld__launch((a), (kernel), PLD__NARG(__VA_ARGS__),                           \
              (const pld_arg[]){PLD__MAPI(PLD__ARGF, __VA_ARGS__)})
int pld__launch(pld_aicpu a, pld_kernel_fn kernel, int argc,
                const pld_arg *argv);

/* An intermediate tensor in device global memory, uninitialised, freed when
 * the device function returns.  Device only.  PLD_SHAPE(d0, d1, ...) gives
 * the shape.  On failure (PLD_ERR_ARG; PLD_ERR_NOMEM, also when the
 * device's global memory, pld_platform_info.global_bytes, cannot hold it
 * beside the rank's tensor slices, window copies and this call's earlier
 * allocations: checked when compiling) the failure is recorded in `a` and
 * the tensor returned is rejected by every later call. */
#define PLD_SHAPE(...) PLD__NARG(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}
pld_tensor pld_device_alloc(pld_aicpu a, pld_dtype dtype, int ndim,
                            const int64_t *shape);

/* ---- kernel level -------------------------------------------------------- */

/* This block's index in [0, blocks) and the block count of the launch. */
int32_t pld_block_idx(pld_core k);
int32_t pld_block_num(pld_core k);

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

/* Per-element macros for PLD__MAPI over (ctx, param, param, ...): index 0
 * is the context name, the others are parameter tuples
 * (kind, dir, name, dtype, dims...). */
#define PLD__ARGF(i, x) PLD__CAT2(PLD__COMMA_IF_NOT_FIRST_, PLD__ISZERO(i)) PLD_ARG(x)
#define PLD__COMMA_IF_NOT_FIRST_1
#define PLD__COMMA_IF_NOT_FIRST_0 ,

#define PLD__PARAMF(i, p) PLD__CAT2(PLD__PARAMF_, PLD__ISZERO(i))(p)
#define PLD__PARAMF_1(p)
#define PLD__PARAMF_0(p) PLD__PARAM_OF(PLD__EXPAND p),
#define PLD__PARAM_OF(...) PLD__PARAM_OF_(__VA_ARGS__)
#define PLD__PARAM_OF_(kind, dir, name, dtype, ...)                            \
  PLD__PARAM_##kind(dir, name, dtype, __VA_ARGS__)
#define PLD__PARAM_T(dir, name, dtype, ...)                                    \
  {#name, PLD_ARG_TENSOR, dir, PLD_##dtype, PLD__NARG(__VA_ARGS__),            \
   {PLD__MAPD(PLD__DIM, __VA_ARGS__)}}
#define PLD__PARAM_W(dir, name, dtype, ...)                                    \
  {#name, PLD_ARG_WINDOW, dir, PLD_##dtype, PLD__NARG(__VA_ARGS__),            \
   {PLD__MAPD(PLD__DIM, __VA_ARGS__)}}
#define PLD__PARAM_S(dir, name, dtype, unused)                                 \
  {#name, PLD_ARG_SCALAR, dir, PLD_##dtype, 0, {{0, 0}}}
#define PLD__DIM(d) {(d), #d}
#define PLD__PARAM_END {0, 0, PLD_DIR_IN, PLD_DTYPE_COUNT, 0, {{0, 0}}}

#define PLD__DECLF(i, p) PLD__CAT2(PLD__DECLF_, PLD__ISZERO(i))(p)
#define PLD__DECLF_1(p)
#define PLD__DECLF_0(p) , PLD__DECL_OF(PLD__EXPAND p)
#define PLD__DECL_OF(...) PLD__DECL_OF_(__VA_ARGS__)
#define PLD__DECL_OF_(kind, dir, name, dtype, ...) PLD__DECL_##kind(name, dtype)
#define PLD__DECL_T(name, dtype) PLD__UNUSED pld_tensor name
#define PLD__DECL_W(name, dtype) PLD__UNUSED pld_window name
#define PLD__DECL_S(name, dtype) PLD__UNUSED PLD__CTYPE_##dtype name

#define PLD__UNPACKF(i, p) PLD__CAT2(PLD__UNPACKF_, PLD__ISZERO(i))(i, p)
#define PLD__UNPACKF_1(i, p)
#define PLD__UNPACKF_0(i, p) , PLD__UNPACK_OF(i, PLD__EXPAND p)
#define PLD__UNPACK_OF(...) PLD__UNPACK_OF_(__VA_ARGS__)
#define PLD__UNPACK_OF_(i, kind, dir, name, dtype, ...)                        \
  PLD__UNPACK_##kind(argv_[(i) - 1], dtype)
#define PLD__UNPACK_T(a, dtype) ((pld_tensor){(a).v.t})
#define PLD__UNPACK_W(a, dtype) ((pld_window){(a).v.t})
#define PLD__UNPACK_S(a, dtype) ((PLD__CTYPE_##dtype)PLD__GET_##dtype(a))

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

/* The definition: a forward declaration of the body, the parameter table
 * (closed by an end marker so that it is never empty), the signature, an
 * entry that unpacks checked arguments into the body's typed parameters,
 * the descriptor, and finally the head of the body the user's braces
 * complete.  Arguments reach the entry only after the runtime checked them
 * against the signature. */
#define PLD__DEFINE(level, coretype, ctxtype, fntype, name, ...)               \
  static void name##__body(ctxtype PLD__HEAD(__VA_ARGS__)                      \
                               PLD__MAPI(PLD__DECLF, __VA_ARGS__));            \
  static const pld_param name##__params[] = {                                  \
      PLD__MAPI(PLD__PARAMF, __VA_ARGS__) PLD__PARAM_END};                     \
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
    name##__body(ctx_ PLD__MAPI(PLD__UNPACKF, __VA_ARGS__));                   \
  }                                                                            \
  PLD__UNUSED static const fntype name = {&name##__sig, name##__entry};       \
  static void name##__body(ctxtype PLD__HEAD(__VA_ARGS__)                      \
                               PLD__MAPI(PLD__DECLF, __VA_ARGS__))

#endif /* PLD_LEVELS_H */
