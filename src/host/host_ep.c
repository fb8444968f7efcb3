/* host/host_ep.c: the host forms of the collectives with per-rank tensor
 * arguments, pld/ep.h's and pld_all_to_all_v, as host/host_collective.c
 * makes the other collectives': each call is
 * checked while the host is traced (pld__coll_check, as the kernel forms'
 * arguments are), then recorded as one dispatch per rank of a builtin
 * device function named like the kernel form, which launches a builtin
 * kernel of that name on one block calling the kernel form.  A tensor
 * argument is a tensor of the host with a leading dimension of the world
 * size, of which rank r's dispatch passes slice r, or pld_local of a
 * window view, which every rank's dispatch passes (its own copy). */
#include "device/aicpu.h"
#include "host/host_coll.h"
#include "pld/ep.h"

/* The builtins' parameters: the kernel forms', in their order.  The dtypes
 * and shapes here are nominal: the host checked the arguments itself, and
 * the builtins launch and unpack them without a signature check; the
 * directions are real (what a dispatch copies back, what a launch
 * writes). */
#define PARAM(name, kind, dir)                                                 \
  {                                                                            \
    name, kind, dir, PLD_FP32, 1, {                                            \
      { PLD_DYN, "N" }                                                         \
    }                                                                          \
  }
#define IN(name) PARAM(name, PLD_ARG_TENSOR, PLD_DIR_IN)
#define OUT(name) PARAM(name, PLD_ARG_TENSOR, PLD_DIR_OUT)
#define WIN(name) PARAM(name, PLD_ARG_WINDOW, PLD_DIR_INOUT)
#define SCALAR(name)                                                           \
  {                                                                            \
    name, PLD_ARG_SCALAR, PLD_DIR_IN, PLD_INT32, 0, {                          \
      { 0, 0 }                                                                 \
    }                                                                          \
  }
#define END                                                                    \
  {                                                                            \
    0, 0, PLD_DIR_IN, PLD_DTYPE_COUNT, 0, {                                    \
      { 0, 0 }                                                                 \
    }                                                                          \
  }

/* The most parameters of a builtin's device function here. */
#define MAX_ARGS 10

/* Each table ends with the device function's last parameter, the blocks
 * it launches the kernel on, which the kernel's signature leaves out. */
enum { PK_INPUT, PK_SEND, PK_TARGET, PK_RECV, PK_SIG, PK_N };
static const pld_param packed_params[PK_N + 2] = {IN("input"),
                                                  IN("send_counts"),
                                                  WIN("target"),
                                                  OUT("recv_counts"),
                                                  WIN("sig"),
                                                  SCALAR("blocks"),
                                                  END};

enum {
  DS_X,
  DS_IDX,
  DS_W,
  DS_EXPERTS,
  DS_RX,
  DS_META,
  DS_RW,
  DS_RC,
  DS_SIG,
  DS_N
};
static const pld_param dispatch_params[DS_N + 2] = {IN("x"),
                                                    IN("topk_idx"),
                                                    IN("topk_w"),
                                                    SCALAR("experts"),
                                                    WIN("recv_x"),
                                                    WIN("recv_meta"),
                                                    WIN("recv_w"),
                                                    OUT("recv_counts"),
                                                    WIN("sig"),
                                                    SCALAR("blocks"),
                                                    END};

enum { CB_Y, CB_META, CB_RC, CB_IDX, CB_W, CB_STAGE, CB_OUT, CB_SIG, CB_N };
static const pld_param combine_params[CB_N + 2] = {
    IN("expert_out"),  IN("recv_meta"),
    IN("recv_counts"), IN("topk_idx"),
    IN("topk_w"),      WIN("stage"),
    OUT("out"),        WIN("sig"),
    SCALAR("blocks"),  END};

_Static_assert(DS_N < MAX_ARGS && CB_N < MAX_ARGS && PK_N < MAX_ARGS,
               "MAX_ARGS holds every builtin's arguments and its blocks");

#define T(i) ((pld_tensor){argv[i].v.t})
#define W(i) ((pld_window){argv[i].v.t})

/* The kernels: the kernel form, on one block.  pld_all_to_all_v takes
 * the packed all-to-all's parameters. */
static void packed_kernel(pld_core k, const pld_arg *argv) {
  pld_all_to_all_packed(k, T(PK_INPUT), T(PK_SEND), W(PK_TARGET), T(PK_RECV),
                        W(PK_SIG));
}

static void a2av_kernel(pld_core k, const pld_arg *argv) {
  pld_all_to_all_v(k, T(PK_INPUT), T(PK_SEND), W(PK_TARGET), T(PK_RECV),
                   W(PK_SIG));
}

static void dispatch_kernel(pld_core k, const pld_arg *argv) {
  pld_ep_dispatch(k, T(DS_X), T(DS_IDX), T(DS_W), (int32_t)argv[DS_EXPERTS].v.i,
                  W(DS_RX), W(DS_META), W(DS_RW), T(DS_RC), W(DS_SIG));
}

static void combine_kernel(pld_core k, const pld_arg *argv) {
  pld_ep_combine(k, T(CB_Y), T(CB_META), T(CB_RC), T(CB_IDX), T(CB_W),
                 W(CB_STAGE), T(CB_OUT), W(CB_SIG));
}

#define SIGNATURE(fn, level, params, n)                                        \
  { fn, level, PLD_CORE_VECTOR, n, params, __FILE__, __LINE__ }
static const pld_signature packed_ksig =
    SIGNATURE("pld_all_to_all_packed", PLD_LEVEL_KERNEL, packed_params, PK_N);
static const pld_signature a2av_ksig =
    SIGNATURE("pld_all_to_all_v", PLD_LEVEL_KERNEL, packed_params, PK_N);
static const pld_signature dispatch_ksig =
    SIGNATURE("pld_ep_dispatch", PLD_LEVEL_KERNEL, dispatch_params, DS_N);
static const pld_signature combine_ksig =
    SIGNATURE("pld_ep_combine", PLD_LEVEL_KERNEL, combine_params, CB_N);

/* The device functions: each launches its kernel on one block. */
/* The blocks a device function launches its kernel on: its last
 * argument, after the kernel's n. */
#define BLOCKS(n) ((int32_t)argv[n].v.i)

static void packed_device(pld_aicpu a, const pld_arg *argv) {
  pld__launch_checked(a, (pld_kernel_fn){&packed_ksig, packed_kernel},
                      BLOCKS(PK_N), argv);
}

static void a2av_device(pld_aicpu a, const pld_arg *argv) {
  pld__launch_checked(a, (pld_kernel_fn){&a2av_ksig, a2av_kernel}, BLOCKS(PK_N),
                      argv);
}

static void dispatch_device(pld_aicpu a, const pld_arg *argv) {
  pld__launch_checked(a, (pld_kernel_fn){&dispatch_ksig, dispatch_kernel},
                      BLOCKS(DS_N), argv);
}

static void combine_device(pld_aicpu a, const pld_arg *argv) {
  pld__launch_checked(a, (pld_kernel_fn){&combine_ksig, combine_kernel},
                      BLOCKS(CB_N), argv);
}

static const pld_signature packed_dsig = SIGNATURE(
    "pld_all_to_all_packed", PLD_LEVEL_DEVICE, packed_params, PK_N + 1);
static const pld_signature a2av_dsig =
    SIGNATURE("pld_all_to_all_v", PLD_LEVEL_DEVICE, packed_params, PK_N + 1);
static const pld_signature dispatch_dsig =
    SIGNATURE("pld_ep_dispatch", PLD_LEVEL_DEVICE, dispatch_params, DS_N + 1);
static const pld_signature combine_dsig =
    SIGNATURE("pld_ep_combine", PLD_LEVEL_DEVICE, combine_params, CB_N + 1);

/* One argument of a host form, of its builtin's parameter of the same
 * index: a tensor or window (t), or a scalar (v).  The signal window, the
 * last parameter, is passed apart. */
struct ep_arg {
  struct pld__tensor *t;
  int64_t v;
};

/* t, a tensor argument (role; written by the call or not): a tensor of the
 * host of P = world size rows (a parameter of the host function, a slice
 * of one, a host intermediate) or pld_local of a window view; else fails
 * h naming fn and role. */
static int tensor_check(struct pld__host *h, const char *fn, const char *role,
                        const struct pld__tensor *t, int writes) {
  struct pld_program *p = h->prog;
  const char *name = p->plan.host.sig->name;
  const int n = p->plan.nranks;
  char got[192];
  if (!t || (t->flags & PLD__T_INVALID))
    pld__catf(got, sizeof got, "%s",
              t ? "the result of a failed call" : "a NULL tensor");
  else if (t->flags & PLD__T_WINDOW)
    return PLD_OK; /* pld_local of a window view: every rank's own copy */
  else if (t->host_arg < 0)
    pld__catf(got, sizeof got, "a tensor that is not the host's");
  else if (pld__host_inter(p, t->host_arg) &&
           pld__host_inter(p, t->host_arg)->rank >= 0)
    pld__catf(got, sizeof got, "%s (pld_rank_tensor), which no other rank has",
              pld__host_inter(p, t->host_arg)->name);
  else if (t->ndim < 2 || t->shape[0] != n) {
    char s[128];
    pld__tensor_str(s, sizeof s, t);
    pld__catf(got, sizeof got, "%s", s);
  } else if (writes && t->dir == PLD_DIR_IN)
    return pld__hfail(h, PLD_ERR_ARG,
                      "%s (in %s): %s: the call writes it, but '%s' is an In "
                      "parameter of %s (read only): pass a tensor the host "
                      "function may write",
                      fn, name, role, pld__host_name(p, t->host_arg), name);
  else
    return PLD_OK;
  return pld__hfail(h, PLD_ERR_ARG,
                    "%s (in %s): %s: expected a tensor of the host [%d, ...] "
                    "(row r for rank r) or pld_local of a window view, got %s",
                    fn, name, role, n, got);
}

/* What rank r passes for tensor argument t: t[r] into *sl, or t itself
 * (pld_local of a window view). */
static const struct pld__tensor *rank_part(const struct pld__tensor *t, int r,
                                           struct pld__tensor *sl) {
  if (t->flags & PLD__T_WINDOW)
    return t;
  pld__slice_of(sl, t, r);
  return sl;
}

/* A host form of dsig's builtin (entry: its device function), on `blocks`
 * blocks: checks the arguments (argv[i] for dsig's parameter i, the
 * signal window and the blocks apart) in order, then calls fill(a, parts)
 * with rank 0's parts (the same shapes as every rank's) to describe the
 * call for pld__coll_check, then records one dispatch per rank. */
static int
host_ep(pld_host hh, const char *fn, const pld_signature *dsig,
        void (*entry)(pld_aicpu, const pld_arg *), const struct ep_arg *argv,
        pld_window sig, int32_t blocks, struct pld__coll_args *a,
        void (*fill)(struct pld__coll_args *, const struct pld__tensor *)) {
  struct pld__host *h = hh.p;
  if (h->status)
    return h->status;
  const int nargs = dsig->nparams - 2; /* the last two: sig, blocks */
  struct pld__tensor parts[MAX_ARGS];
  int st = PLD_OK;
  for (int i = 0; i < nargs && !st; i++) {
    const pld_param *pm = &dsig->params[i];
    if (pm->kind == PLD_ARG_WINDOW)
      st = pld__host_view_check(h, fn, pm->name, (pld_window){argv[i].t});
    else if (pm->kind == PLD_ARG_TENSOR)
      st = tensor_check(h, fn, pm->name, argv[i].t, pm->dir & PLD_DIR_OUT);
    if (!st && pm->kind != PLD_ARG_SCALAR) {
      struct pld__tensor sl;
      parts[i] = *rank_part(argv[i].t, 0, &sl);
    }
  }
  if (st)
    return st;
  fill(a, parts);
  if ((st = pld__host_coll_check(h, fn, a, &sig, blocks)))
    return st;
  for (int r = 0; r < h->prog->plan.nranks && !st; r++) {
    pld_arg norm[MAX_ARGS];
    struct pld__tensor sl[MAX_ARGS]; /* rank r's slices */
    for (int i = 0; i < nargs; i++) {
      const pld_param *pm = &dsig->params[i];
      if (pm->kind == PLD_ARG_SCALAR)
        norm[i] = pld__arg_int(argv[i].v, pm->dtype);
      else if (pm->kind == PLD_ARG_WINDOW)
        norm[i] = pld__arg_window((pld_window){argv[i].t});
      else
        norm[i] = pld__arg_tensor((pld_tensor){
            (struct pld__tensor *)rank_part(argv[i].t, r, &sl[i])});
    }
    norm[nargs] = pld__arg_window(sig);
    norm[nargs + 1] = pld__arg_int(blocks, PLD_INT32);
    st = pld__host_coll_record(h, fn, r, (pld_device_fn){dsig, entry}, norm);
  }
  return st;
}

/* ---- the four calls ------------------------------------------------------ */

static void packed_fill(struct pld__coll_args *a, const struct pld__tensor *v) {
  a->data = &v[PK_INPUT];
  a->send_counts = &v[PK_SEND];
  a->target = &v[PK_TARGET];
  a->recv_counts = &v[PK_RECV];
}

int pld_host_all_to_all_packed(pld_host h, pld_tensor input,
                               pld_tensor send_counts, pld_window target,
                               pld_tensor recv_counts, pld_window sig,
                               int32_t blocks) {
  const struct ep_arg argv[PK_N - 1] = {[PK_INPUT] = {input.p, 0},
                                        [PK_SEND] = {send_counts.p, 0},
                                        [PK_TARGET] = {target.p, 0},
                                        [PK_RECV] = {recv_counts.p, 0}};
  struct pld__coll_args a = {.kind = PLD__COLL_ALL_TO_ALL_PACKED};
  return host_ep(h, "pld_host_all_to_all_packed", &packed_dsig, packed_device,
                 argv, sig, blocks, &a, packed_fill);
}

int pld_host_all_to_all_v(pld_host h, pld_tensor input, pld_tensor send_counts,
                          pld_window target, pld_tensor recv_counts,
                          pld_window sig, int32_t blocks) {
  const struct ep_arg argv[PK_N - 1] = {[PK_INPUT] = {input.p, 0},
                                        [PK_SEND] = {send_counts.p, 0},
                                        [PK_TARGET] = {target.p, 0},
                                        [PK_RECV] = {recv_counts.p, 0}};
  struct pld__coll_args a = {.kind = PLD__COLL_ALL_TO_ALL_V};
  return host_ep(h, "pld_host_all_to_all_v", &a2av_dsig, a2av_device, argv, sig,
                 blocks, &a, packed_fill);
}

static void dispatch_fill(struct pld__coll_args *a,
                          const struct pld__tensor *v) {
  a->data = &v[DS_X];
  a->topk_idx = &v[DS_IDX];
  a->topk_w = &v[DS_W];
  a->target = &v[DS_RX];
  a->recv_meta = &v[DS_META];
  a->recv_w = &v[DS_RW];
  a->recv_counts = &v[DS_RC];
}

int pld_host_ep_dispatch(pld_host h, pld_tensor x, pld_tensor topk_idx,
                         pld_tensor topk_w, int32_t experts, pld_window recv_x,
                         pld_window recv_meta, pld_window recv_w,
                         pld_tensor recv_counts, pld_window sig,
                         int32_t blocks) {
  const struct ep_arg argv[DS_N - 1] = {
      [DS_X] = {x.p, 0},       [DS_IDX] = {topk_idx.p, 0},
      [DS_W] = {topk_w.p, 0},  [DS_EXPERTS] = {NULL, experts},
      [DS_RX] = {recv_x.p, 0}, [DS_META] = {recv_meta.p, 0},
      [DS_RW] = {recv_w.p, 0}, [DS_RC] = {recv_counts.p, 0}};
  struct pld__coll_args a = {.kind = PLD__COLL_EP_DISPATCH, .experts = experts};
  return host_ep(h, "pld_host_ep_dispatch", &dispatch_dsig, dispatch_device,
                 argv, sig, blocks, &a, dispatch_fill);
}

static void combine_fill(struct pld__coll_args *a,
                         const struct pld__tensor *v) {
  a->data = &v[CB_Y];
  a->recv_meta = &v[CB_META];
  a->recv_counts = &v[CB_RC];
  a->topk_idx = &v[CB_IDX];
  a->topk_w = &v[CB_W];
  a->target = &v[CB_STAGE];
  a->out = &v[CB_OUT];
}

int pld_host_ep_combine(pld_host h, pld_tensor expert_out, pld_tensor recv_meta,
                        pld_tensor recv_counts, pld_tensor topk_idx,
                        pld_tensor topk_w, pld_window stage, pld_tensor out,
                        pld_window sig, int32_t blocks) {
  const struct ep_arg argv[CB_N - 1] = {
      [CB_Y] = {expert_out.p, 0},   [CB_META] = {recv_meta.p, 0},
      [CB_RC] = {recv_counts.p, 0}, [CB_IDX] = {topk_idx.p, 0},
      [CB_W] = {topk_w.p, 0},       [CB_STAGE] = {stage.p, 0},
      [CB_OUT] = {out.p, 0}};
  struct pld__coll_args a = {.kind = PLD__COLL_EP_COMBINE};
  return host_ep(h, "pld_host_ep_combine", &combine_dsig, combine_device, argv,
                 sig, blocks, &a, combine_fill);
}
