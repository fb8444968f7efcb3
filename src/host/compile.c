/* host/compile.c: tracing the host orchestrator into per-device plans. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/tunables.h"
#include "device/aicpu.h"
#include "host/backends.h"
#include "host/ctl.h"
#include "host/program.h"
#include "host/resident.h"
#include "host/trace.h"
#include "tile/isa.h"

/* pld__tensor_sink while a host function is traced. */
static int host_sink(void *ctx, int status, const char *msg) {
  return pld__hfail(ctx, status, "%s", msg);
}

/* ---- plans --------------------------------------------------------------- */

static void plans_free(struct pld_program *p) {
  if (!p->plan.plans)
    return;
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__devplan *pl = &p->plan.plans[r];
    for (int c = 0; pl->calls && c < pl->ncalls; c++) {
      pld__free(pl->calls[c].args);
      pld__free(pl->calls[c].launches);
    }
    pld__free(pl->calls);
    pld__free(pl->bufs);
  }
  pld__free(p->plan.plans);
  p->plan.plans = NULL;
}

void pld__program_free(struct pld_program *p) {
  pld__trace_release(p);
  pld__residents_release(p);
  plans_free(p);
  pld__tasks_free(p);
  pld__windows_free(p);
  pld__free(p->plan.device_ids);
  pld__free(p->plan.args);
  pld__free(p->plan.arg_meta);
  pld__free(p->plan.artifact_dir);
  pld__free(p->plan.diag_dir);
  pld__free(p);
}

/* Rank pl's device cannot hold `what` (n bytes) beyond the `used` bytes
 * of its global memory already planned. */
static int memory_refused(const struct pld_program *p,
                          const struct pld__devplan *pl, uint64_t used,
                          const char *what, uint64_t n) {
  return pld__fail_api(
      PLD_ERR_NOMEM,
      "%s: rank %d (device %d): its tensor slices "
      "and window buffers need more than the %llu bytes of an "
      "%s device's global memory (%llu bytes before %s of %llu "
      "bytes)",
      p->plan.host.sig->name, pl->rank, pl->device_id,
      (unsigned long long)p->plan.plat->global_bytes, p->plan.plat->name,
      (unsigned long long)used, what, (unsigned long long)n);
}

/* The device buffer for a tensor slice of a host argument: the same slice
 * dispatched twice to one device is one buffer, as it would be one region
 * of the device's memory; slices overlapping otherwise are refused. */
static int plan_buffer(struct pld_program *p, struct pld__devplan *pl,
                       const struct pld__tensor *t, pld_dir dir, int *out) {
  for (int b = 0; b < pl->nbufs; b++) {
    struct pld__devbuf *buf = &pl->bufs[b];
    if (buf->host_arg != t->host_arg)
      continue;
    if (buf->host_offset == t->host_offset && buf->nbytes == t->nbytes) {
      buf->dirs |= (unsigned)dir;
      *out = b;
      return PLD_OK;
    }
    if (t->host_offset < buf->host_offset + buf->nbytes &&
        buf->host_offset < t->host_offset + t->nbytes)
      return pld__fail_api(
          PLD_ERR_ARG,
          "%s: rank %d gets two different but "
          "overlapping slices of host argument '%s' (bytes [%zu, "
          "%zu) and [%zu, %zu)): dispatch the same slice or "
          "disjoint ones",
          p->plan.host.sig->name, pl->rank, pld__host_name(p, t->host_arg),
          buf->host_offset, buf->host_offset + buf->nbytes, t->host_offset,
          t->host_offset + t->nbytes);
  }
  struct pld__devbuf *v =
      pld__realloc(pl->bufs, (size_t)(pl->nbufs + 1) * sizeof *pl->bufs);
  if (!v)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  pl->bufs = v;
  struct pld__devbuf *buf = &pl->bufs[pl->nbufs];
  /* data_bytes stays within the device's memory, so this cannot wrap. */
  buf->offset = pld__round_up(pl->data_bytes, 64);
  if (pld__mem_exceeded(p->plan.plat, buf->offset, t->nbytes)) {
    char what[128];
    pld__catf(what, sizeof what, "a slice of '%s'",
              pld__host_name(p, t->host_arg));
    return memory_refused(p, pl, buf->offset, what, t->nbytes);
  }
  buf->nbytes = t->nbytes;
  buf->host_arg = t->host_arg;
  buf->host_offset = t->host_offset;
  buf->dirs = (unsigned)dir;
  pl->data_bytes = buf->offset + buf->nbytes;
  *out = pl->nbufs++;
  return PLD_OK;
}

/* ca = the tensor or window view t as a call argument: its dtype and
 * shape, and where a window view lies (a tensor's buffer is planned
 * apart). */
static void call_arg_of(struct pld__call_arg *ca, const struct pld__tensor *t) {
  ca->buf = -1;
  ca->win_buf = -1;
  ca->dtype = t->dtype;
  ca->ndim = t->ndim;
  memcpy(ca->shape, t->shape, sizeof ca->shape);
  if (t->flags & PLD__T_WINDOW) {
    ca->win_buf = t->win_buf;
    ca->win_offset = t->win_offset;
  }
}

static int plan_rank(struct pld_program *p, const struct pld__host *h,
                     int rank) {
  struct pld__devplan *pl = &p->plan.plans[rank];
  pl->rank = rank;
  pl->device_id = p->plan.device_ids[rank];
  pl->nranks = p->plan.nranks;
  pl->plat = p->plan.plat;
  pl->dims = &p->plan.dims;
  pl->comms = p->plan.comms;
  pl->nwinbufs = p->plan.nwinbufs;
  pl->coll_sig.buf = pl->coll_sig.win_buf = -1;
  if (h->coll_sig.p)
    call_arg_of(&pl->coll_sig, h->coll_sig.p);
  for (int i = 0; i < h->ndisps; i++)
    if (h->disps[i].rank == rank)
      pl->ncalls++;
  pl->calls = pld__calloc((size_t)pl->ncalls, sizeof *pl->calls);
  if (!pl->calls)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  int c = 0;
  for (int i = 0; i < h->ndisps; i++) {
    const struct pld__dispatch *d = &h->disps[i];
    if (d->rank != rank)
      continue;
    struct pld__call *call = &pl->calls[c++];
    call->fn = d->fn;
    call->argc = d->argc;
    call->args = pld__calloc((size_t)d->argc, sizeof *call->args);
    if (!call->args)
      return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    for (int a = 0; a < d->argc; a++) {
      struct pld__call_arg *ca = &call->args[a];
      ca->buf = -1;
      ca->win_buf = -1;
      if (d->argv[a].kind == PLD_ARG_SCALAR) {
        ca->scalar = d->argv[a];
        ca->scalar_at = pl->nscalars++;
        continue;
      }
      const struct pld__tensor *t = &d->t[a];
      call_arg_of(ca, t);
      if (t->flags & PLD__T_WINDOW)
        continue;
      int st = plan_buffer(p, pl, t, d->fn.sig->params[a].dir, &ca->buf);
      if (st)
        return st;
    }
  }
  /* Its copies of the window buffers of its domains live in its memory
   * too (the scalars are the calls' arguments, not device memory). */
  pl->mem_bytes = pl->data_bytes;
  pl->table_offset = pld__round_up(pl->data_bytes, 64);
  pl->scalars_offset = pl->table_offset + (size_t)pl->nbufs * sizeof(size_t);
  pl->data_bytes = pl->scalars_offset + (size_t)pl->nscalars * sizeof(pld_arg);
  for (int b = 0; b < p->plan.nwinbufs; b++) {
    const struct pld__winbuf *wb = p->plan.winbufs[b];
    if (!wb->member[rank])
      continue;
    if (pld__mem_exceeded(p->plan.plat, pl->mem_bytes, wb->phys)) {
      char what[64];
      pld__catf(what, sizeof what, "window buffer #%d", b);
      return memory_refused(p, pl, pl->mem_bytes, what, wb->phys);
    }
    pl->mem_bytes += wb->phys;
  }
  return PLD_OK;
}

/* Two ranks writing the same bytes of a host tensor would race on the way
 * back: refuse it at compile time rather than return either. */
static int check_write_conflicts(const struct pld_program *p) {
  for (int r1 = 0; r1 < p->plan.nranks; r1++)
    for (int r2 = r1 + 1; r2 < p->plan.nranks; r2++)
      for (int i = 0; i < p->plan.plans[r1].nbufs; i++)
        for (int j = 0; j < p->plan.plans[r2].nbufs; j++) {
          const struct pld__devbuf *a = &p->plan.plans[r1].bufs[i];
          const struct pld__devbuf *b = &p->plan.plans[r2].bufs[j];
          if (a->host_arg != b->host_arg || !(a->dirs & PLD_DIR_OUT) ||
              !(b->dirs & PLD_DIR_OUT))
            continue;
          size_t lo =
              a->host_offset > b->host_offset ? a->host_offset : b->host_offset;
          size_t ea = a->host_offset + a->nbytes,
                 eb = b->host_offset + b->nbytes;
          size_t hi = ea < eb ? ea : eb;
          if (lo < hi)
            return pld__fail_api(PLD_ERR_ARG,
                                 "%s: ranks %d and %d both write "
                                 "bytes [%zu, %zu) of host argument '%s': each "
                                 "rank must write its own slice",
                                 p->plan.host.sig->name, r1, r2, lo, hi,
                                 pld__host_name(p, a->host_arg));
        }
  return PLD_OK;
}

/* Traces every device call: its launches are checked against the kernels'
 * signatures and described, no kernel runs. */
static int trace_devices(struct pld_program *p) {
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__devplan *pl = &p->plan.plans[r];
    for (int c = 0; c < pl->ncalls; c++) {
      struct pld__call *call = &pl->calls[c];
      const pld_signature *sig = call->fn.sig;
      struct pld__tensor tensors[PLD_MAX_PARAMS];
      pld_arg argv[PLD_MAX_PARAMS];
      for (int i = 0; i < call->argc; i++)
        argv[i] = pld__call_arg_tensor(&call->args[i], &sig->params[i], pl,
                                       NULL, NULL, &tensors[i]);
      struct pld__tensor coll_sig;
      pld__call_arg_tensor(&pl->coll_sig, &pld__coll_sig_param, pl, NULL, NULL,
                           &coll_sig);
      struct pld__aicpu a;
      memset(&a, 0, sizeof a);
      a.coll_sig = pl->coll_sig.win_buf >= 0 ? &coll_sig : NULL;
      a.trace = 1;
      a.rank = r;
      a.device = pl->device_id;
      a.plat = p->plan.plat;
      a.dims = &p->plan.dims;
      a.mem_bytes = pl->mem_bytes;
      int st = pld__aicpu_call(&a, call->fn, argv);
      pld__aicpu_release(&a);
      call->launches = a.log;
      if (st)
        return pld__fail_msg(st, a.msg);
    }
  }
  return PLD_OK;
}

/* ---- pld_compile ------------------------------------------------------ */

/* The most MPI processes whose default device ids pld_compile computes:
 * the platforms' device limit. */
#define MPI_DEFAULT_IDS 128

/* A choice among a setting's words (core/tunables.h): the index of the
 * configuration field's value if set, else of the environment variable's,
 * else -1 (*bad: the status of a value that is none of them). */
static int choose_name(const char *field, const char *given,
                       enum pld__setting_id id, int *bad) {
  const char *v = given ? given : pld__setting(id);
  *bad = PLD_OK;
  if (!v)
    return -1;
  int i = pld__setting_word(id, v, strlen(v));
  if (i >= 0)
    return i;
  char why[1024];
  if (given) {
    pld__setting_words(id, '"', why, sizeof why);
    *bad = pld__fail_api(PLD_ERR_CONFIG, "cfg.%s: expected %s, got \"%s\"",
                         field, why, v);
  } else {
    pld__setting_refused(id, v, why, sizeof why);
    *bad = pld__fail_api(PLD_ERR_CONFIG, "environment: %s", why);
  }
  return -1;
}

/* The fabric (and control plane) of the configuration: cfg.fabric, else
 * PLD_FABRIC, else mpi when mpirun started this process (and the build
 * has MPI), shm otherwise.  Under mpi: one rank per MPI process, the
 * device ids those given or by default each process's (its node's index
 * times the platform's devices per server, plus its rank on the node). */
static int choose_fabric(const pld_config *cfg, const pld_platform_info *plat,
                         int *mpi, int *rma, int *ndevices, const int **ids) {
  int st;
  int f = choose_name("fabric", cfg->fabric, PLD__SET_FABRIC, &st);
  if (st)
    return st;
  int r = choose_name("mpi_same_node", cfg->mpi_same_node,
                      PLD__SET_MPI_SAME_NODE, &st);
  if (st)
    return st;
  *mpi = f < 0 ? pld__fabric_is_mpi() : f == 1;
  *rma = r == 1;
  *ndevices = cfg->ndevices;
  *ids = cfg->device_ids;
  if (!*mpi)
    return PLD_OK;
  const struct pld__ctl_backend *be;
  if ((st = pld__ctl_backend_mpi_start("pld_compile", &be)))
    return st;
  int size = be->size();
  if (!*ids) {
    static _Thread_local int dflt[MPI_DEFAULT_IDS];
    if (size > MPI_DEFAULT_IDS || size > plat->max_devices)
      return pld__fail_api(
          PLD_ERR_CONFIG,
          "the MPI fabric: mpirun started %d "
          "processes, one rank each; %s has at most %d devices",
          size, plat->name, plat->max_devices);
    for (int q = 0; q < size; q++)
      dflt[q] = be->default_device(q, plat->server_devices);
    *ids = dflt;
    *ndevices = cfg->ndevices ? cfg->ndevices : size;
  }
  if (*ndevices != size)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "cfg.ndevices: the MPI fabric runs one rank "
                         "per MPI process: expected %d (the processes mpirun "
                         "started), got %d",
                         size, *ndevices);
  return PLD_OK;
}

/* Whether the race detector is on: cfg.check, else PLD_CHECK ("races";
 * empty or unset: off).  It needs a control plane that can (the shm
 * fabric).  Returns PLD_OK or
 * PLD_ERR_CONFIG / PLD_ERR_UNSUPPORTED (message set). */
static int choose_check(const pld_config *cfg, const struct pld__ctl_ops *cp,
                        int *on) {
  const char *v = cfg->check ? cfg->check : pld__setting(PLD__SET_CHECK);
  *on = v && !strcmp(v, "races");
  char why[1024];
  if (v && *v && !*on && cfg->check)
    return pld__fail_api(
        PLD_ERR_CONFIG, "cfg.check: expected \"races\" or \"\", got \"%s\"", v);
  if (v && *v && !*on) {
    pld__setting_refused(PLD__SET_CHECK, v, why, sizeof why);
    return pld__fail_api(PLD_ERR_CONFIG, "environment: %s", why);
  }
  if (*on && !(cp->caps & PLD__CTL_RACES))
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "%s: the race detector needs the shm fabric "
                         "(one machine); under mpirun run without it",
                         cfg->check ? "cfg.check" : "PLD_CHECK");
  return PLD_OK;
}

static int check_config(const pld_config *cfg, const pld_platform_info **plat,
                        int *mpi, int *rma, int *ndevices, const int **ids) {
  if (!cfg)
    return pld__fail_api(PLD_ERR_CONFIG, "cfg: expected a "
                                         "configuration, got NULL");
  *plat = pld_platform_find(cfg->platform);
  if (!*plat)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "cfg.platform: expected a2a3sim or a5sim, "
                         "got '%s'",
                         cfg->platform ? cfg->platform : "(null)");
  if (!(*plat)->simulated)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "cfg.platform: '%s' is the hardware and "
                         "this build has no hardware backend; use '%ssim'",
                         cfg->platform, cfg->platform);
  int st = choose_fabric(cfg, *plat, mpi, rma, ndevices, ids);
  if (st)
    return st;
  if (*ndevices < 1 || !*ids)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "cfg.device_ids: expected at least one "
                         "device id, got %d",
                         *ids ? *ndevices : 0);
  if (cfg->wait_timeout_ms < 0)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "cfg.wait_timeout_ms: expected a limit in "
                         "milliseconds >= 0 (0: PLD_WAIT_TIMEOUT_MS), got %lld",
                         (long long)cfg->wait_timeout_ms);
  if (cfg->max_in_flight < 0)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "cfg.max_in_flight: expected a count of "
                         "runs >= 1 (0: 2), got %d",
                         cfg->max_in_flight);
  if (cfg->kernel_timeout_ms < 0)
    return pld__fail_api(
        PLD_ERR_CONFIG,
        "cfg.kernel_timeout_ms: expected a limit in "
        "milliseconds >= 0 (0: PLD_KERNEL_TIMEOUT_MS), got %lld",
        (long long)cfg->kernel_timeout_ms);
  int limit = (*plat)->max_devices;
  for (int r = 0; r < *ndevices; r++) {
    int id = (*ids)[r];
    if (id < 0 || id >= limit)
      return pld__fail_api(PLD_ERR_CONFIG,
                           "cfg.device_ids[%d]: expected a device id "
                           "in [0, %d) for %s, got %d",
                           r, limit, (*plat)->name, id);
    for (int q = 0; q < r; q++)
      if ((*ids)[q] == id)
        return pld__fail_api(PLD_ERR_CONFIG,
                             "cfg.device_ids[%d]: device %d is "
                             "already rank %d; device ids must be distinct",
                             r, id, q);
  }
  return PLD_OK;
}

/* A time limit in nanoseconds from the configuration's milliseconds
 * (checked >= 0; 0 takes the environment's, whose 0 means no limit): 0 for
 * no limit, saturated where milliseconds would overflow. */
static int64_t limit_ns(int64_t cfg_ms, int64_t env_ms) {
  int64_t ms = cfg_ms > 0 ? cfg_ms : env_ms;
  return ms > INT64_MAX / 1000000 ? INT64_MAX : ms * 1000000;
}

static void host_release(struct pld__host *h) {
  for (int i = 0; i < h->nkept; i++)
    pld__free(h->kept[i]);
  pld__free(h->kept);
  pld__free(h->disps);
  pld__free(h->tasks);
  pld__free(h->args);
}

/* Checks the host function's arguments and keeps their shapes. */
static int bind_args(struct pld_program *p, int argc, const pld_arg *argv) {
  const pld_signature *sig = p->plan.host.sig;
  char msg[PLD__MSG_MAX];
  p->plan.args =
      pld__calloc((size_t)(argc > 0 ? argc : 1), sizeof *p->plan.args);
  p->plan.arg_meta =
      pld__calloc((size_t)(argc > 0 ? argc : 1), sizeof *p->plan.arg_meta);
  if (!p->plan.args || !p->plan.arg_meta)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  if (argc < 0 || (argc > 0 && !argv))
    return pld__fail_api(PLD_ERR_ARG, "argv: expected %d arguments",
                         sig->nparams);
  for (int i = 0; i < argc && i < sig->nparams; i++)
    if (argv[i].kind == PLD_ARG_TENSOR && argv[i].v.t &&
        (argv[i].v.t->flags & PLD__T_INTER))
      return pld__fail_api(PLD_ERR_ARG,
                           "%s: parameter '%s' (%d of %d): expected "
                           "a host tensor, got %s, an intermediate of a host "
                           "orchestration (it has no data outside its run)",
                           sig->name, sig->params[i].name, i + 1, argc,
                           argv[i].v.t->name ? argv[i].v.t->name : "?");
  int st = pld__sig_check(sig, "pld_compile", &p->plan.dims, argc, argv,
                          p->plan.args, NULL, msg, sizeof msg);
  if (st)
    return pld__fail_msg(st, msg);
  p->plan.nargs = argc;
  for (int i = 0; i < argc; i++)
    if (argv[i].kind == PLD_ARG_TENSOR) {
      p->plan.arg_meta[i] = *argv[i].v.t;
      p->plan.arg_meta[i].flags = PLD__T_HOST;
      p->plan.arg_meta[i].host_arg = i;
      p->plan.arg_meta[i].host_offset = 0;
      p->plan.arg_meta[i].dir = sig->params[i].dir;
      p->plan.arg_meta[i].name = sig->params[i].name;
      p->plan.args[i].v.t = &p->plan.arg_meta[i];
    }
  return PLD_OK;
}

static int trace_host(struct pld_program *p, const pld_arg *argv) {
  struct pld__host h;
  memset(&h, 0, sizeof h);
  h.prog = p;
  int st = PLD_OK;
  pld_arg args[PLD_MAX_PARAMS];
  h.args = pld__calloc((size_t)(p->plan.nargs > 0 ? p->plan.nargs : 1),
                       sizeof *h.args);
  if (!h.args) {
    st = pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    goto release;
  }
  for (int i = 0; i < p->plan.nargs; i++) {
    args[i] = p->plan.args[i];
    if (args[i].kind == PLD_ARG_TENSOR) {
      h.args[i] = p->plan.arg_meta[i];
      h.args[i].data = argv[i].v.t->data; /* readable while tracing */
      args[i].v.t = &h.args[i];
    }
  }
  pld__tensor_sink = (struct pld__tensor_sink){host_sink, &h};
  p->plan.host.entry((pld_host){&h}, args);
  pld__tensor_sink = (struct pld__tensor_sink){NULL, NULL};
  if (h.status) {
    st = pld__fail_msg(h.status, h.msg);
    goto release;
  }
  for (int r = 0; r < p->plan.nranks; r++) {
    int found = 0;
    for (int i = 0; i < h.ndisps && !found; i++)
      found = h.disps[i].rank == r;
    if (!found) {
      st = pld__fail_api(PLD_ERR_ARG,
                         "%s: rank %d (device %d) is never "
                         "dispatched; every rank of the world (%d) must be, or "
                         "its peers wait for it forever",
                         p->plan.host.sig->name, r, p->plan.device_ids[r],
                         p->plan.nranks);
      goto release;
    }
  }
  p->plan.plans = pld__calloc((size_t)p->plan.nranks, sizeof *p->plan.plans);
  if (!p->plan.plans) {
    st = pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    goto release;
  }
  if ((st = pld__windows_plan(p)))
    goto release;
  for (int r = 0; r < p->plan.nranks && st == PLD_OK; r++)
    st = plan_rank(p, &h, r);
  if (!st)
    st = pld__tasks_plan(p, &h);
  if (!st)
    st = pld__residents_init(p);
  for (int r = 0; !st && r < p->plan.nranks; r++) {
    p->plan.plans[r].heap_bytes = pld__heap_bytes(p, r);
    p->plan.plans[r].nslots = p->rs.nslots;
  }
release:
  host_release(&h);
  return st;
}

/* cfg.share: p runs on the devices of `other` (of the first program of
 * its group): the same platform, device ids and fabric, and its windows,
 * if any, declared alike.  Returns PLD_OK (p joined the group) or
 * PLD_ERR_CONFIG / PLD_ERR_UNSUPPORTED / PLD_ERR_STATE naming the
 * difference. */
static int share_devices(struct pld_program *p, struct pld_program *other) {
  struct pld_program *root = other->rs.share ? other->rs.share : other;
  if (root->rs.dead || root->rs.destroy_pending)
    return pld__fail_api(PLD_ERR_STATE,
                         "cfg.share: the program whose devices to "
                         "share %s",
                         root->rs.dead ? "cannot run again (a device crashed)"
                                       : "was destroyed");
  if (!(p->be.cp->caps & PLD__CTL_SHARE) ||
      !(root->be.cp->caps & PLD__CTL_SHARE))
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "cfg.share: programs share devices on the "
                         "shm fabric only; under mpirun give each its own");
  if (p->plan.plat != root->plan.plat || p->plan.nranks != root->plan.nranks ||
      memcmp(p->plan.device_ids, root->plan.device_ids,
             (size_t)p->plan.nranks * sizeof *p->plan.device_ids))
    return pld__fail_api(
        PLD_ERR_CONFIG,
        "cfg.share: expected the platform and "
        "device ids of the program whose devices to share (%s, "
        "%d devices), got %s and %d devices%s",
        root->plan.plat->name, root->plan.nranks, p->plan.plat->name,
        p->plan.nranks,
        p->plan.nranks == root->plan.nranks ? ", other ids" : "");
  if (p->plan.races || root->plan.races)
    return pld__fail_api(PLD_ERR_UNSUPPORTED,
                         "cfg.share: the race check does not follow "
                         "programs that share devices; check each on its own");
  if (p->plan.nwinbufs) {
    int same = p->plan.nwinbufs == root->plan.nwinbufs;
    for (int b = 0; same && b < p->plan.nwinbufs; b++)
      same = p->plan.winbufs[b]->bytes == root->plan.winbufs[b]->bytes &&
             !memcmp(p->plan.member + (size_t)b * (size_t)p->plan.nranks,
                     root->plan.member + (size_t)b * (size_t)p->plan.nranks,
                     (size_t)p->plan.nranks);
    if (!same)
      return pld__fail_api(
          PLD_ERR_CONFIG,
          "cfg.share: programs sharing devices "
          "share their windows: %s declares %d window buffers, "
          "%s %d, and they differ %s; declare the same ones (or "
          "none)",
          p->plan.host.sig->name, p->plan.nwinbufs, root->plan.host.sig->name,
          root->plan.nwinbufs,
          p->plan.nwinbufs != root->plan.nwinbufs
              ? "in number"
              : "in a buffer's size or ranks");
  }
  p->rs.share = root;
  root->rs.sharers++;
  return PLD_OK;
}

/* The features a compiled program may use together, decided once (the
 * race check and shared devices were checked against the control
 * plane's capabilities as the configuration was read): its submitted runs
 * are queued on its devices where the control plane can, and no host
 * task, trace or race check needs the host between two runs, and its
 * runs in flight fit the devices' command rings. */
static void features_decide(struct pld_program *p) {
  p->plan.queue_ok = (p->be.cp->caps & PLD__CTL_QUEUE) && !p->plan.ntasks &&
                     !p->plan.tracing && !p->plan.modeling && !p->plan.races &&
                     p->plan.max_in_flight <= PLD__RING;
}

static int compile(pld_host_fn host, const pld_config *cfg, int argc,
                   const pld_arg *argv, pld_program **out) {
  /* A refused environment variable fails every program at its start,
   * rather than leaving it to run with a value nobody asked for. */
  int st = pld__tunables_check("pld_compile");
  if (!st)
    st = pld__isa_check("pld_compile");
  if (st)
    return st;
  if (!out)
    return pld__fail_api(PLD_ERR_ARG,
                         "out: expected where to store the program, "
                         "got NULL");
  const pld_platform_info *plat = NULL;
  int mpi = 0, rma = 0, ndevices = 0;
  const int *ids = NULL;
  int races = 0;
  if ((st = check_config(cfg, &plat, &mpi, &rma, &ndevices, &ids)))
    return st;
  const struct pld__ctl_ops *cp = pld__ctl_backend(mpi ? "mpi" : "shm")->ops;
  if ((st = choose_check(cfg, cp, &races)))
    return st;
  struct pld__machine machine;
  if ((st = pld__machine_config(&machine, cfg)))
    return st;
  const char *problem =
      pld__sig_problem(host.sig, PLD_LEVEL_HOST, !!host.entry);
  if (problem)
    return pld__fail_api(PLD_ERR_ARG,
                         "host: expected a function declared with "
                         "PLD_HOST, got %s",
                         problem);
  struct pld_program *p = pld__calloc(1, sizeof *p);
  if (!p)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  p->plan.host = host;
  p->plan.plat = plat;
  p->plan.keep_windows = cfg->keep_windows;
  p->plan.wait_timeout_ns =
      limit_ns(cfg->wait_timeout_ms, pld__tunables()->PLD_WAIT_TIMEOUT_MS);
  p->plan.kernel_timeout_ns =
      limit_ns(cfg->kernel_timeout_ms, pld__tunables()->PLD_KERNEL_TIMEOUT_MS);
  p->be.cp = cp;
  p->be.same_node_rma = rma;
  p->plan.races = races;
  p->plan.machine = machine;
  p->plan.max_in_flight = cfg->max_in_flight ? cfg->max_in_flight : 2;
  /* A data slot per run in flight where they are queued on the devices
   * (host/submit.c), else the two that let a run's inputs be copied while
   * the run before executes. */
  p->rs.nslots = p->plan.max_in_flight > PLD__DATA_SLOTS &&
                         p->plan.max_in_flight <= PLD__RING
                     ? p->plan.max_in_flight
                     : PLD__DATA_SLOTS;
  p->rs.slot = p->rs.nslots - 1; /* the first run takes slot 0 */
  p->plan.nranks = ndevices;
  p->plan.device_ids =
      pld__calloc((size_t)ndevices, sizeof *p->plan.device_ids);
  if (!p->plan.device_ids) {
    st = pld__fail_api(PLD_ERR_NOMEM, "out of memory");
    goto fail;
  }
  memcpy(p->plan.device_ids, ids,
         (size_t)ndevices * sizeof *p->plan.device_ids);
  if ((st = pld__trace_config(p, cfg)))
    goto fail;
  struct pld__tev span;
  int spanned = pld__htrace_begin(p, &span, PLD__TH_COMPILE, host.sig->name);
  if ((st = bind_args(p, argc, argv)) || (st = trace_host(p, argv)) ||
      (st = check_write_conflicts(p)) || (st = trace_devices(p)))
    goto fail;
  if (cfg->share && (st = share_devices(p, cfg->share)))
    goto fail;
  if (cfg->artifact_dir && (st = pld__artifacts_write(p, cfg->artifact_dir)))
    goto fail;
  if ((st = pld__diag_config(p, cfg)))
    goto fail;
  features_decide(p);
  if (spanned)
    pld__htrace_end(p, &span, 0);
  *out = p;
  return PLD_OK;
fail:
  if (p->rs.share) /* it joined a group: it leaves it */
    p->rs.share->rs.sharers--;
  pld__program_free(p);
  return st;
}

int pld_compile(pld_host_fn host, const pld_config *cfg, int argc,
                const pld_arg *argv, pld_program **out) {
  const char *saved = pld__api_enter("pld_compile");
  int st = compile(host, cfg, argc, argv, out);
  pld__api_leave(saved);
  return st;
}

const char *pld_program_artifact_dir(const pld_program *p) {
  return p ? p->plan.artifact_dir : NULL;
}

/* ---- new scalar values for a prepared program ----------------------------
 * A run may bring scalar values other than the compile's: the host
 * orchestrator is traced again with them, and the program keeps its
 * devices, windows and layout if the new trace has the same dispatches,
 * tensors and host tasks, only its scalars replacing the old ones. */

/* Two slices of a rank's plan are the same (field by field: the structs
 * have padding). */
static int same_buf(const struct pld__devbuf *a, const struct pld__devbuf *b) {
  return a->offset == b->offset && a->nbytes == b->nbytes &&
         a->host_arg == b->host_arg && a->host_offset == b->host_offset &&
         a->dirs == b->dirs;
}

/* Two arguments of a call are the same but for a scalar's value. */
static int same_arg(const struct pld__call_arg *a,
                    const struct pld__call_arg *b) {
  if (a->buf != b->buf || a->win_buf != b->win_buf)
    return 0;
  if (a->buf < 0 && a->win_buf < 0)
    return a->scalar.kind == b->scalar.kind &&
           a->scalar.dtype == b->scalar.dtype && a->scalar_at == b->scalar_at;
  return a->win_offset == b->win_offset && a->dtype == b->dtype &&
         a->ndim == b->ndim &&
         !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]);
}

/* Two tensors (a host task's arguments, intermediates) have the same
 * place and shape. */
static int same_tensor(const struct pld__tensor *a,
                       const struct pld__tensor *b) {
  return a->dtype == b->dtype && a->ndim == b->ndim &&
         a->host_arg == b->host_arg && a->host_offset == b->host_offset &&
         a->nbytes == b->nbytes && a->flags == b->flags &&
         !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]);
}

/* Two copies of a host task are the same. */
static int same_copy(const struct pld__hcopy *a, const struct pld__hcopy *b) {
  return a->rank == b->rank && a->host == b->host && a->dev_off == b->dev_off &&
         a->host_off == b->host_off && a->len == b->len;
}

/* The first way q (traced with the new values) differs from p other than
 * by scalar values, in msg; 0 when there is none. */
static int differs(const struct pld_program *p, const struct pld_program *q,
                   char *msg, size_t cap) {
  if (p->plan.nwinbufs != q->plan.nwinbufs)
    return (int)pld__catf(msg, cap, "allocates %d window buffers, not %d",
                          q->plan.nwinbufs, p->plan.nwinbufs);
  for (int b = 0; b < p->plan.nwinbufs; b++)
    if (p->plan.winbufs[b]->bytes != q->plan.winbufs[b]->bytes ||
        memcmp(p->plan.member + (size_t)b * (size_t)p->plan.nranks,
               q->plan.member + (size_t)b * (size_t)q->plan.nranks,
               (size_t)p->plan.nranks))
      return (int)pld__catf(msg, cap,
                            "changes window buffer #%d (its size or the "
                            "ranks it is viewed by)",
                            b);
  if (p->plan.ntasks != q->plan.ntasks || p->plan.ninters != q->plan.ninters)
    return (int)pld__catf(msg, cap,
                          "records %d host tasks and %d intermediates, not "
                          "%d and %d",
                          q->plan.ntasks, q->plan.ninters, p->plan.ntasks,
                          p->plan.ninters);
  for (int i = 0; i < p->plan.ninters; i++)
    if (p->plan.inters[i].rank != q->plan.inters[i].rank ||
        !same_tensor(p->plan.inters[i].t, q->plan.inters[i].t))
      return (int)pld__catf(msg, cap, "makes %s another shape",
                            q->plan.inters[i].name);
  for (int k = 0; k < p->plan.ntasks; k++) {
    const struct pld__taskplan *a = &p->plan.tasks[k], *b = &q->plan.tasks[k];
    int same =
        a->fn.sig == b->fn.sig && a->before == b->before &&
        a->argc == b->argc && a->npre == b->npre && a->npost == b->npost &&
        !memcmp(a->need, b->need, (size_t)p->plan.nranks * sizeof *a->need);
    for (int i = 0; same && i < a->npre + a->npost; i++)
      same = same_copy(&a->copies[i], &b->copies[i]);
    for (int i = 0; same && i < a->argc; i++)
      same = a->argv[i].kind != b->argv[i].kind ? 0
             : a->argv[i].kind == PLD_ARG_SCALAR
                 ? a->argv[i].dtype == b->argv[i].dtype
                 : same_tensor(&a->t[i], &b->t[i]);
    if (!same)
      return (int)pld__catf(msg, cap, "changes host task %d (%s)", k,
                            b->fn.sig->name);
  }
  for (int r = 0; r < p->plan.nranks; r++) {
    const struct pld__devplan *a = &p->plan.plans[r], *b = &q->plan.plans[r];
    if (a->ncalls != b->ncalls)
      return (int)pld__catf(msg, cap, "dispatches %d calls to rank %d, not %d",
                            b->ncalls, r, a->ncalls);
    int same = a->nbufs == b->nbufs && a->data_bytes == b->data_bytes;
    for (int i = 0; same && i < a->nbufs; i++)
      same = same_buf(&a->bufs[i], &b->bufs[i]);
    if (!same)
      return (int)pld__catf(msg, cap,
                            "passes rank %d other slices of its tensors", r);
    for (int c = 0; c < a->ncalls; c++) {
      const struct pld__call *x = &a->calls[c], *y = &b->calls[c];
      if (x->fn.sig != y->fn.sig || x->argc != y->argc ||
          x->after_tasks != y->after_tasks)
        return (int)pld__catf(msg, cap, "makes rank %d's call %d %s, not %s", r,
                              c, y->fn.sig->name, x->fn.sig->name);
      for (int i = 0; i < x->argc; i++)
        if (!same_arg(&x->args[i], &y->args[i]))
          return (int)pld__catf(msg, cap,
                                "passes rank %d's call %d (%s) another "
                                "argument '%s'",
                                r, c, x->fn.sig->name,
                                x->fn.sig->params[i].name);
    }
  }
  return 0;
}

int pld__program_rescalar(struct pld_program *p, int argc,
                          const pld_arg *argv) {
  const char *name = p->plan.host.sig->name;
  struct pld_program *q = pld__calloc(1, sizeof *q);
  if (!q || !(q->plan.device_ids = pld__calloc((size_t)p->plan.nranks,
                                               sizeof *q->plan.device_ids))) {
    pld__free(q);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  q->plan.host = p->plan.host;
  q->plan.plat = p->plan.plat;
  q->plan.nranks = p->plan.nranks;
  q->plan.keep_windows = p->plan.keep_windows;
  q->be.cp = p->be.cp;
  memcpy(q->plan.device_ids, p->plan.device_ids,
         (size_t)p->plan.nranks * sizeof *q->plan.device_ids);
  char msg[PLD__MSG_MAX];
  int st = PLD_OK;
  if ((st = bind_args(q, argc, argv)) || (st = trace_host(q, argv)) ||
      (st = check_write_conflicts(q)) || (st = trace_devices(q))) {
    pld__catf(msg, sizeof msg, "%s", pld_last_error());
    st = pld__fail_api(st,
                       "%s: traced again for its new scalar "
                       "values: %s",
                       name, msg);
    goto out;
  }
  if (differs(p, q, msg, sizeof msg)) {
    /* The values that changed, for the message. */
    char vals[512] = "";
    size_t n = 0;
    for (int i = 0; i < p->plan.nargs; i++) {
      if (p->plan.args[i].kind != PLD_ARG_SCALAR ||
          p->plan.args[i].v.u == q->plan.args[i].v.u)
        continue;
      char was[96], now[96];
      pld__scalar_str(was, sizeof was, &p->plan.host.sig->params[i],
                      &p->plan.args[i]);
      pld__scalar_str(now, sizeof now, &p->plan.host.sig->params[i],
                      &q->plan.args[i]);
      n += pld__catf(vals + n, sizeof vals - n, "%s'%s' %s, was %s",
                     n ? "; " : "", p->plan.host.sig->params[i].name, now, was);
    }
    st = pld__fail_api(PLD_ERR_ARG,
                       "%s: with its new scalar values (%s) the "
                       "host orchestrator %s; a prepared program keeps its "
                       "dispatches, tensors and windows: compile it again for "
                       "these values",
                       name, vals, msg);
    goto out;
  }
  /* The same program: its scalars take the new values. */
  for (int i = 0; i < p->plan.nargs; i++)
    if (p->plan.args[i].kind == PLD_ARG_SCALAR)
      p->plan.args[i] = q->plan.args[i];
  for (int r = 0; r < p->plan.nranks; r++)
    for (int c = 0; c < p->plan.plans[r].ncalls; c++)
      for (int i = 0; i < p->plan.plans[r].calls[c].argc; i++)
        p->plan.plans[r].calls[c].args[i].scalar =
            q->plan.plans[r].calls[c].args[i].scalar;
  for (int k = 0; k < p->plan.ntasks; k++)
    memcpy(p->plan.tasks[k].argv, q->plan.tasks[k].argv,
           sizeof p->plan.tasks[k].argv);
out:
  pld__program_free(q);
  return st;
}
