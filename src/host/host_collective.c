/* host/host_collective.c: collectives called by the host orchestrator.  Each
 * call is checked while the host is traced (a mistake fails pld_compile),
 * then recorded as one dispatch per rank of a builtin device function,
 * "pld_allreduce" and so on, in program order with the host's other
 * dispatches.  The builtin device function launches a builtin kernel of
 * the same name on one block, which calls the kernel-level collective; the
 * signal window is the caller's, or one the runtime allocates once per
 * program for all of its host-level collectives (they run one after the
 * other on every rank, and each leaves it zero). */
#include <string.h>

#include "comm/comm.h"
#include "device/aicpu.h"
#include "host/host_coll.h"
#include "pld/collective.h"

/* The builtins' parameters: the windows, then the call.  The dtypes and
 * shapes here are nominal: the host checked the arguments itself, and the
 * builtins launch and unpack them without a signature check. */
enum { A_DATA, A_TARGET, A_SIG, A_KIND, A_OP, A_MODE, A_ROOT, A_BLOCKS, NARGS };
#define WINDOW_PARAM(name, dt)                                                 \
  {                                                                            \
    name, PLD_ARG_WINDOW, PLD_DIR_INOUT, dt, 1, {                              \
      { PLD_DYN, "N" }                                                         \
    }                                                                          \
  }
#define SCALAR_PARAM(name)                                                     \
  {                                                                            \
    name, PLD_ARG_SCALAR, PLD_DIR_IN, PLD_INT32, 0, {                          \
      { 0, 0 }                                                                 \
    }                                                                          \
  }
static const pld_param params[NARGS + 1] = {
    WINDOW_PARAM("data", PLD_FP32),
    WINDOW_PARAM("target", PLD_FP32),
    WINDOW_PARAM("sig", PLD_INT32),
    SCALAR_PARAM("kind"),
    SCALAR_PARAM("op"),
    SCALAR_PARAM("mode"),
    SCALAR_PARAM("root"),
    SCALAR_PARAM("blocks"),
    {0, 0, PLD_DIR_IN, PLD_DTYPE_COUNT, 0, {{0, 0}}}};

/* The kernel: the collective of argv's kind on one block. */
static void builtin_kernel(pld_core k, const pld_arg *argv) {
  pld_window data = {argv[A_DATA].v.t}, target = {argv[A_TARGET].v.t};
  pld_window sig = {argv[A_SIG].v.t};
  int op = (int)argv[A_OP].v.i;
  switch ((int)argv[A_KIND].v.i) {
  case PLD__COLL_BARRIER:
    pld_barrier(k, sig);
    break;
  case PLD__COLL_ALLREDUCE:
    pld_allreduce(k, data, sig, (pld_reduce_op)op,
                  (pld_allreduce_mode)argv[A_MODE].v.i);
    break;
  case PLD__COLL_BROADCAST:
    pld_broadcast(k, data, sig, (int32_t)argv[A_ROOT].v.i);
    break;
  case PLD__COLL_ALLGATHER:
    pld_allgather(k, pld_local(data), target, sig);
    break;
  case PLD__COLL_REDUCE_SCATTER:
    pld_reduce_scatter(k, data, sig, (pld_reduce_op)op);
    break;
  default:
    pld_all_to_all(k, pld_local(data), target, sig);
    break;
  }
}

#define SIGNATURE(fn, level)                                                   \
  { fn, level, PLD_CORE_VECTOR, NARGS, params, __FILE__, __LINE__ }
static const pld_signature kernel_sigs[PLD__COLL_COUNT] = {
    [PLD__COLL_BARRIER] = SIGNATURE("pld_barrier", PLD_LEVEL_KERNEL),
    [PLD__COLL_ALLREDUCE] = SIGNATURE("pld_allreduce", PLD_LEVEL_KERNEL),
    [PLD__COLL_BROADCAST] = SIGNATURE("pld_broadcast", PLD_LEVEL_KERNEL),
    [PLD__COLL_ALLGATHER] = SIGNATURE("pld_allgather", PLD_LEVEL_KERNEL),
    [PLD__COLL_REDUCE_SCATTER] =
        SIGNATURE("pld_reduce_scatter", PLD_LEVEL_KERNEL),
    [PLD__COLL_ALL_TO_ALL] = SIGNATURE("pld_all_to_all", PLD_LEVEL_KERNEL),
};

/* The device function: launches the kernel of its kind on the call's
 * blocks. */
static void builtin_device(pld_aicpu a, const pld_arg *argv) {
  int kind = (int)argv[A_KIND].v.i;
  pld_kernel_fn kernel = {&kernel_sigs[kind], builtin_kernel};
  pld__launch_checked(a, kernel, (int32_t)argv[A_BLOCKS].v.i, argv);
}

static const pld_signature device_sigs[PLD__COLL_COUNT] = {
    [PLD__COLL_BARRIER] = SIGNATURE("pld_barrier", PLD_LEVEL_DEVICE),
    [PLD__COLL_ALLREDUCE] = SIGNATURE("pld_allreduce", PLD_LEVEL_DEVICE),
    [PLD__COLL_BROADCAST] = SIGNATURE("pld_broadcast", PLD_LEVEL_DEVICE),
    [PLD__COLL_ALLGATHER] = SIGNATURE("pld_allgather", PLD_LEVEL_DEVICE),
    [PLD__COLL_REDUCE_SCATTER] =
        SIGNATURE("pld_reduce_scatter", PLD_LEVEL_DEVICE),
    [PLD__COLL_ALL_TO_ALL] = SIGNATURE("pld_all_to_all", PLD_LEVEL_DEVICE),
};

/* The window view w, or the reason it is none (for messages). */
static const char *not_a_view(pld_window w) {
  if (!w.p)
    return "NULL";
  if (w.p->flags & PLD__T_INVALID)
    return "the result of a failed call";
  if (!(w.p->flags & PLD__T_WINDOW))
    return "no window view";
  return NULL;
}

int pld__host_view_check(struct pld__host *h, const char *fn, const char *role,
                         pld_window w) {
  const char *why = not_a_view(w);
  if (!why)
    return PLD_OK;
  return pld__hfail(h, PLD_ERR_ARG,
                    "%s (in %s): %s: expected a window view "
                    "(pld_window_view), got %s",
                    fn, h->prog->plan.host.sig->name, role, why);
}

int pld__host_coll_check(struct pld__host *h, const char *fn,
                         struct pld__coll_args *a, pld_window *sig,
                         int32_t blocks) {
  struct pld_program *p = h->prog;
  int st;
  if (blocks < 1 || blocks > p->plan.plat->vector_cores)
    return pld__hfail(h, PLD_ERR_ARG,
                      "%s (in %s): blocks: expected 1 to %d (the vector cores "
                      "of an %s device), got %d",
                      fn, p->plan.host.sig->name, p->plan.plat->vector_cores,
                      p->plan.plat->name, (int)blocks);
  if (sig->p && (st = pld__host_view_check(h, fn, "sig", *sig)))
    return st;
  if (!sig->p) {
    if (!h->coll_sig.p) {
      int64_t cells = PLD_SIGNAL_CELLS(p->plan.nranks, blocks);
      pld_host hh = {h};
      pld_window_buf b =
          pld_window_alloc_shape(hh, PLD_INT32, PLD_SHAPE(cells));
      h->coll_sig = pld_window_view(hh, b, PLD_INT32, PLD_SHAPE(cells));
      if (h->status)
        return h->status;
    } else if (pld_tensor_numel((pld_tensor){h->coll_sig.p}) <
               PLD_SIGNAL_CELLS(p->plan.nranks, blocks)) {
      const long long has = pld_tensor_numel((pld_tensor){h->coll_sig.p}) /
                            PLD_SIGNAL_LANE_CELLS(p->plan.nranks);
      return pld__hfail(h, PLD_ERR_ARG,
                        "%s (in %s): blocks: %d, but the program's collective "
                        "signal window holds the cells of %lld block%s: "
                        "declare it for the most blocks a call takes "
                        "(pld_coll_signal) before the first call",
                        fn, p->plan.host.sig->name, (int)blocks, has,
                        has == 1 ? "" : "s");
    }
    *sig = h->coll_sig;
  }
  a->sig = sig->p;
  a->nranks = p->plan.nranks;
  a->blocks = blocks;
  char msg[1024];
  if ((st = pld__coll_check(a, msg, sizeof msg)))
    return pld__hfail(h, st, "%s (in %s): %s", fn, p->plan.host.sig->name, msg);
  return PLD_OK;
}

int pld__host_coll_record(struct pld__host *h, const char *fn, int rank,
                          pld_device_fn dev, const pld_arg *norm) {
  char what[128];
  pld__catf(what, sizeof what, "%s (in %s)", fn, h->prog->plan.host.sig->name);
  return pld__dispatch_record(h, rank, dev, norm, what);
}

/* Checks a host-level call (fn, of a's kind and arguments) and records it
 * as one dispatch per rank; sig NULL: the program's own signal window. */
static int host_collective(pld_host hh, const char *fn,
                           struct pld__coll_args *a, pld_window data,
                           pld_window target, pld_window sig, int32_t blocks) {
  struct pld__host *h = hh.p;
  struct pld_program *p = h->prog;
  if (h->status)
    return h->status;
  const int has_target =
      a->kind == PLD__COLL_ALLGATHER || a->kind == PLD__COLL_ALL_TO_ALL;
  const int has_data = a->kind != PLD__COLL_BARRIER;
  int st = PLD_OK;
  if ((has_data && (st = pld__host_view_check(h, fn, "data", data))) ||
      (has_target && (st = pld__host_view_check(h, fn, "target", target))) ||
      (st = pld__host_coll_check(h, fn, a, &sig, blocks)))
    return st;
  pld_arg norm[NARGS];
  if (!has_data) /* the builtin's nominal data */
    data = sig;
  norm[A_DATA] = pld__arg_window(data);
  norm[A_TARGET] = pld__arg_window(has_target ? target : data);
  norm[A_SIG] = pld__arg_window(sig);
  norm[A_KIND] = pld__arg_int(a->kind, PLD_INT32);
  norm[A_OP] = pld__arg_int(a->op, PLD_INT32);
  norm[A_MODE] = pld__arg_int(a->mode, PLD_INT32);
  norm[A_ROOT] = pld__arg_int(a->root, PLD_INT32);
  norm[A_BLOCKS] = pld__arg_int(blocks, PLD_INT32);
  pld_device_fn dev = {&device_sigs[a->kind], builtin_device};
  for (int r = 0; r < p->plan.nranks && !st; r++)
    st = pld__host_coll_record(h, fn, r, dev, norm);
  return st;
}

pld_window pld_coll_signal(pld_host hh, int32_t blocks) {
  struct pld__host *h = hh.p;
  struct pld_program *p = h->prog;
  const char *name = p->plan.host.sig->name;
  pld_window bad = {&pld__invalid_tensor};
  if (h->status)
    return bad;
  if (blocks < 1 || blocks > p->plan.plat->vector_cores) {
    pld__hfail(h, PLD_ERR_ARG,
               "pld_coll_signal (in %s): blocks: expected 1 to %d (the "
               "vector cores of an %s device), got %d",
               name, p->plan.plat->vector_cores, p->plan.plat->name,
               (int)blocks);
    return bad;
  }
  if (h->coll_sig.p) {
    pld__hfail(h, PLD_ERR_ARG,
               "pld_coll_signal (in %s): the program's collective signal "
               "window exists already (declared before, or made by a "
               "host-level collective given no sig): declare it once, before "
               "those",
               name);
    return bad;
  }
  const int64_t cells = PLD_SIGNAL_CELLS(p->plan.nranks, blocks);
  pld_window_buf b = pld_window_alloc_shape(hh, PLD_INT32, PLD_SHAPE(cells));
  pld_window v = pld_window_view(hh, b, PLD_INT32, PLD_SHAPE(cells));
  if (h->status)
    return bad;
  /* Its domain is the world, whether or not a dispatch passes it. */
  for (int r = 0; r < p->plan.nranks; r++)
    pld__windows_member(p, v.p->win_buf, r);
  return h->coll_sig = v;
}

int pld_host_allreduce(pld_host h, pld_window data, pld_window sig,
                       pld_reduce_op op, pld_allreduce_mode mode,
                       int32_t blocks) {
  struct pld__coll_args a = {.kind = PLD__COLL_ALLREDUCE,
                             .data = data.p,
                             .op = (int)op,
                             .mode = (int)mode};
  return host_collective(h, "pld_host_allreduce", &a, data, PLD_NO_WINDOW, sig,
                         blocks);
}

int pld_host_broadcast(pld_host h, pld_window data, pld_window sig,
                       int32_t root, int32_t blocks) {
  struct pld__coll_args a = {
      .kind = PLD__COLL_BROADCAST, .data = data.p, .root = root};
  return host_collective(h, "pld_host_broadcast", &a, data, PLD_NO_WINDOW, sig,
                         blocks);
}

int pld_host_allgather(pld_host h, pld_window stage, pld_window target,
                       pld_window sig, int32_t blocks) {
  struct pld__coll_args a = {
      .kind = PLD__COLL_ALLGATHER, .data = stage.p, .target = target.p};
  return host_collective(h, "pld_host_allgather", &a, stage, target, sig,
                         blocks);
}

int pld_host_reduce_scatter(pld_host h, pld_window data, pld_window sig,
                            pld_reduce_op op, int32_t blocks) {
  struct pld__coll_args a = {
      .kind = PLD__COLL_REDUCE_SCATTER, .data = data.p, .op = (int)op};
  return host_collective(h, "pld_host_reduce_scatter", &a, data, PLD_NO_WINDOW,
                         sig, blocks);
}

int pld_host_barrier(pld_host h, pld_window sig, int32_t blocks) {
  struct pld__coll_args a = {.kind = PLD__COLL_BARRIER};
  return host_collective(h, "pld_host_barrier", &a, PLD_NO_WINDOW,
                         PLD_NO_WINDOW, sig, blocks);
}

int pld_host_all_to_all(pld_host h, pld_window input, pld_window target,
                        pld_window sig, int32_t blocks) {
  struct pld__coll_args a = {
      .kind = PLD__COLL_ALL_TO_ALL, .data = input.p, .target = target.p};
  return host_collective(h, "pld_host_all_to_all", &a, input, target, sig,
                         blocks);
}
