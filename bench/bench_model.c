/* bench_model: what the timing model (pld/model.h, docs/model.md) says
 * about the choices this library makes, in modeled time only: exact and
 * the same in every run, so every figure is one run, not a median, and
 * the host machine's load does not move it.
 *
 *   (a) collectives: the modeled time of one call of each allreduce mode
 *       (mesh, two-phase, ring) and of broadcast, allgather,
 *       reduce-scatter and all-to-all (one mode each), at 2, 4 and 8
 *       ranks, 8 B to 4 MiB per rank (-e), on a2a3sim and a5sim; then per
 *       platform and rank count the best allreduce mode at each size, the
 *       crossovers it gives, next to the mode pld_allreduce_auto takes.
 *       Each is called from the host (pld_host_allreduce & co.), so that
 *       it is a dispatch of its own; a call's time is that dispatch's
 *       span, from the first rank's first block start to the last rank's
 *       last block end (the inputs are staged and the result copied out
 *       by dispatches of their own, before and after).
 *   (b) the fused AllGather-GEMM and GEMM-ReduceScatter of steps 20 and 21
 *       against their unfused forms (pld_allgather then the tiled product;
 *       the product then pld_reduce_scatter_to), bench_workloads' kernels
 *       and sizes, at 2, 4 and 8 ranks: modeled time of the run (tensors
 *       device-resident) and fused speedup = unfused / fused.
 *   (c) the MoE layer of step 19 (bench_workloads' kernels): the modeled
 *       time of the rank that finishes last split by its kernels' spans
 *       into routing (gate and route), dispatch, experts (up, act, down)
 *       and combine.
 *
 * That the model changes nothing a program computes is checked: each
 * program of a2a3sim also runs with the model off, and the outputs must
 * be the same bits; (c) also checks the layer against the plain C one
 * (bench_workloads' moe_check), (b) fused against unfused.  (bench_coll and
 * bench_workloads check the collectives and the GEMMs against C references.)
 *
 *   bench_model [coll] [fused] [moe] [-e BYTES] [-B BLOCKS]
 *     naming parts runs only those (all by default); -e: the largest
 *     collective size (4M; K, M: binary); -B: blocks of each collective
 *     call (1, as bench_coll).
 *
 * The exit status is 1 if a pld call failed or a result was wrong, 2 on
 * bad usage; never for a figure. */
#include <stdbool.h>

/* bench_workloads.c's kernels, host functions and checks, used as they
 * are, so that the modeled workloads are the measured ones; its main
 * becomes a function nothing calls. */
#define main bench_workloads_main
int bench_workloads_main(int argc, char **argv);
#include "bench_workloads.c"
#undef main

enum { CM_MAX_P = 8, CM_MAX_SIZES = 24 };

static const char *const platforms[2] = {"a2a3sim", "a5sim"};
static const int worlds[3] = {2, 4, 8};
static int32_t coll_blocks = 1;

/* The program's settings: platform, p ranks, the model on or off, no
 * trace, no report file. */
static pld_config model_config(const char *platform, int p, int model) {
  static const int ids[CM_MAX_P] = {0, 1, 2, 3, 4, 5, 6, 7};
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.platform = platform;
  cfg.device_ids = ids;
  cfg.ndevices = p;
  cfg.keep_windows = 1;
  cfg.trace = "";
  cfg.check = "";
  cfg.model = model ? "on" : "off";
  cfg.model_out = "";
  return cfg;
}

/* Compiled and prepared, or NULL (reported). */
static pld_program *model_program(pld_host_fn host, const char *platform, int p,
                                  int model, int argc, const pld_arg *argv) {
  pld_config cfg = model_config(platform, p, model);
  pld_program *prog = NULL;
  int st = pld_compile(host, &cfg, argc, argv, &prog);
  if (st) {
    pld_failed(st, "pld_compile");
    return NULL;
  }
  if ((st = pld_program_prepare(prog))) {
    pld_failed(st, "pld_program_prepare");
    pld_program_destroy(prog);
    return NULL;
  }
  return prog;
}

/* The last run's report, or a NULL platform (reported). */
static pld_model_report report_of(const pld_program *prog) {
  pld_model_report r = {NULL, 0, 0, NULL};
  const int st = pld_program_model(prog, &r);
  if (st)
    pld_failed(st, "pld_program_model");
  return r;
}

/* Over every rank, the first start and the last end of the tasks whose
 * kernel is one of names (NULL-terminated); *end < 0 if none ran. */
static void span_of(const pld_model_rank *rk, int nranks,
                    const char *const *names, double *start, double *end) {
  *start = 1e300;
  *end = -1;
  for (int q = 0; q < nranks; q++)
    for (int32_t i = 0; i < rk[q].ntasks; i++)
      for (const char *const *n = names; *n; n++)
        if (strcmp(rk[q].tasks[i].kernel, *n) == 0) {
          const pld_model_task *t = &rk[q].tasks[i];
          *start = t->start_ns < *start ? t->start_ns : *start;
          *end = t->end_ns > *end ? t->end_ns : *end;
        }
}

/* Whether two host tensors hold the same bits; reported if not. */
static int same_bits(const char *what, pld_tensor a, pld_tensor b) {
  const size_t n =
      (size_t)pld_tensor_numel(a) * pld_dtype_size(pld_tensor_dtype(a));
  if (memcmp(pld_tensor_data(a), pld_tensor_data(b), n) == 0)
    return 1;
  fprintf(stderr,
          "bench_model: %s: the model on and off computed different "
          "results\n",
          what);
  failed = 1;
  return 0;
}

static const char *bytes_str(char *buf, size_t cap, int64_t b) {
  static const char *const unit[3] = {"B", "KiB", "MiB"};
  int u = 0;
  while (u < 2 && b >= 1024 && b % 1024 == 0)
    b /= 1024, u++;
  snprintf(buf, cap, "%lld %s", (long long)b, unit[u]);
  return buf;
}

/* The modeled ns of a run of host on p ranks of platform with the host
 * tensors in[0, nin) made device-resident, then the arguments extra:
 * the same program is run with the model off (on a2a3sim), then on, and its
 * output in[out_idx] must be the same bits in both; in[] is read back after the
 * run with the model on, *rep is its report (valid while *keep, the
 * program, lives; with keep NULL only the time is returned).  -1 if
 * anything failed (reported). */
static double modeled_run(pld_host_fn host, const char *platform, int p,
                          pld_tensor *in, int nin, int out_idx,
                          const pld_arg *extra, int nextra, const char *what,
                          pld_model_report *rep, pld_program **keep) {
  pld_arg args[PLD_MAX_PARAMS];
  pld_tensor dev[8] = {NO_TENSOR};
  pld_tensor off_out = NO_TENSOR;
  pld_program *prog = NULL;
  double ns = -1;
  for (int i = 0; i < nextra; i++)
    args[nin + i] = extra[i];
  const int argc = nin + nextra;
  int64_t sh[PLD_MAX_DIMS];
  for (int d = 0; d < pld_tensor_ndim(in[out_idx]); d++)
    sh[d] = pld_tensor_dim(in[out_idx], d);
  if (!(off_out = tensor(pld_tensor_dtype(in[out_idx]),
                         pld_tensor_ndim(in[out_idx]), sh))
           .p)
    goto done;
  /* The model off (on a2a3sim: a5sim's programs record the same way),
   * then on, one program at a time (8 ranks' device processes are enough
   * for 2 CPUs). */
  const int check = strcmp(platform, platforms[0]) == 0;
  for (int on = !check; on < 2; on++) {
    for (int i = 0; i < nin; i++)
      args[i] = PLD_ARG(in[i]);
    pld_program_destroy(prog);
    if (!(prog = model_program(host, platform, p, on, argc, args)))
      goto done;
    for (int i = 0; i < nin; i++) {
      pld_tensor_destroy(dev[i]);
      if (!(dev[i] = resident(prog, in[i])).p)
        goto done;
      args[i] = PLD_ARG(dev[i]);
    }
    const int st = pld_program_run(prog, argc, args);
    if (st) {
      char buf[160];
      snprintf(buf, sizeof buf, "pld_program_run (%s)", what);
      pld_failed(st, buf);
      goto done;
    }
    if (!on && back(dev[out_idx], off_out))
      goto done;
    for (int i = 0; i < nin && on; i++) /* the output, and the rest */
      if (back(dev[i], in[i]))
        goto done;
  }
  if (check && !same_bits(what, in[out_idx], off_out))
    goto done;
  *rep = report_of(prog);
  ns = rep->platform ? rep->total_ns : -1;
done:
  for (int i = 0; i < nin; i++)
    pld_tensor_destroy(dev[i]);
  pld_tensor_destroy(off_out);
  if (ns >= 0 && keep)
    *keep = prog;
  else
    pld_program_destroy(prog);
  return ns;
}

/* ---- (a) collectives ------------------------------------------------------
 * The host-level forms (one builtin dispatch per rank and collective), so
 * that the call is a dispatch of its own: w [CWR, CWC] the data (in place)
 * or the target, s [CSR, CSC] the source of allgather and all-to-all; a
 * dispatch before stages x into one of them, one after copies w out to
 * y.  The modeled time is the span of the collective's dispatch. */

enum cm_coll {
  CM_MESH = PLD_ALLREDUCE_MESH,
  CM_TWO_PHASE = PLD_ALLREDUCE_TWO_PHASE,
  CM_RING = PLD_ALLREDUCE_RING,
  CM_BROADCAST,
  CM_ALLGATHER,
  CM_REDUCE_SCATTER,
  CM_ALL_TO_ALL,
  CM_NCOLLS
};

static const char *const cm_names[CM_NCOLLS] = {[CM_MESH] = "mesh",
                                                [CM_TWO_PHASE] = "two-phase",
                                                [CM_RING] = "ring",
                                                [CM_BROADCAST] = "broadcast",
                                                [CM_ALLGATHER] = "allgather",
                                                [CM_REDUCE_SCATTER] =
                                                    "reduce-scatter",
                                                [CM_ALL_TO_ALL] = "all-to-all"};

PLD_DYNAMIC(CWR);
PLD_DYNAMIC(CWC);
PLD_DYNAMIC(CSR);
PLD_DYNAMIC(CSC);
PLD_DYNAMIC(CXR);

/* The staging and the copy out: one put and one get on the rank's own
 * copy of the window. */
PLD_KERNEL(cm_stage, k, PLD_IN(x, FP32, CXR, CWC),
           PLD_WINDOW(to, FP32, CXR, CWC)) {
  pld_put(k, to, pld_rank(k, pld_window_comm(to)), x, NULL);
}

PLD_KERNEL(cm_result, k, PLD_WINDOW(w, FP32, CWR, CWC),
           PLD_OUT(y, FP32, CWR, CWC)) {
  pld_get(k, y, pld_rank(k, pld_window_comm(w)), w, NULL);
}

PLD_DEVICE(cm_in, a, PLD_IN(x, FP32, CXR, CWC),
           PLD_WINDOW(to, FP32, CXR, CWC)) {
  pld_launch(a, cm_stage, 1, x, to);
}

PLD_DEVICE(cm_out, a, PLD_WINDOW(w, FP32, CWR, CWC),
           PLD_OUT(y, FP32, CWR, CWC)) {
  pld_launch(a, cm_result, 1, w, y);
}

/* x [P, xr, wc], y [P, wr, wc]; s is [sr, wc] (allgather: [1, wc],
 * all-to-all: [P, wc]), w [wr, wc] of y's shape. */
PLD_HOST(cm_host, h, PLD_IN(x, FP32, NR, CXR, CWC),
         PLD_OUT(y, FP32, NR, CWR, CWC), PLD_SCALAR(c, INT64),
         PLD_SCALAR(sr, INT64), PLD_SCALAR(blocks, INT32)) {
  const int n = pld_world_size(h);
  const int64_t wr = pld_tensor_dim(y, 1), wc = pld_tensor_dim(y, 2);
  const int64_t ns = PLD_SIGNAL_CELLS(n, blocks);
  pld_window w =
      pld_window_view(h, pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(wr, wc)),
                      PLD_FP32, PLD_SHAPE(wr, wc));
  pld_window s =
      pld_window_view(h, pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(sr, wc)),
                      PLD_FP32, PLD_SHAPE(sr, wc));
  pld_window sig =
      pld_window_view(h, pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns)),
                      PLD_INT32, PLD_SHAPE(ns));
  const int in_s = c == CM_ALLGATHER || c == CM_ALL_TO_ALL;
  for (int r = 0; r < n; r++)
    pld_dispatch(h, cm_in, r, pld_slice(h, x, r), in_s ? s : w);
  if (c == CM_BROADCAST)
    pld_host_broadcast(h, w, sig, 0, blocks);
  else if (c == CM_ALLGATHER)
    pld_host_allgather(h, s, w, sig, blocks);
  else if (c == CM_REDUCE_SCATTER)
    pld_host_reduce_scatter(h, w, sig, PLD_REDUCE_SUM, blocks);
  else if (c == CM_ALL_TO_ALL)
    pld_host_all_to_all(h, s, w, sig, blocks);
  else
    pld_host_allreduce(h, w, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)c,
                       blocks);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, cm_out, r, w, pld_slice(h, y, r));
}

/* One group of collectives sharing shapes: the allreduce modes and
 * broadcast on [1, n]; the others on [P, n / P]. */
struct cm_group {
  int rows;     /* P rows */
  int colls[4]; /* -1 ends */
};

static const struct cm_group cm_groups[2] = {
    {0, {CM_MESH, CM_TWO_PHASE, CM_RING, CM_BROADCAST}},
    {1, {CM_ALLGATHER, CM_REDUCE_SCATTER, CM_ALL_TO_ALL, -1}}};

/* The modeled microseconds of one call, [platform][world][coll][size];
 * -1 where not measured (a run failed, or the size repeats the one
 * before: fewer elements than a row per rank). */
static double cm_us[2][3][CM_NCOLLS][CM_MAX_SIZES];
static int64_t cm_sizes[CM_MAX_SIZES];
static int cm_nsizes;

/* Runs group g at p ranks and size si on platform pf (modeled_run: the
 * model off and on give the same bits); fills cm_us with the span of
 * each collective's dispatch (the second of every rank). */
static void cm_measure(int pf, int wi, const struct cm_group *g, int si) {
  const int p = worlds[wi];
  const int64_t n = cm_sizes[si] / 4 > 0 ? cm_sizes[si] / 4 : 1;
  const int64_t wr = g->rows ? p : 1;
  const int64_t wc = g->rows ? (n / p > 0 ? n / p : 1) : n;
  const int64_t pn = si > 0 ? cm_sizes[si - 1] / 4 : 0;
  for (int j = 0; j < 4 && g->colls[j] >= 0; j++)
    cm_us[pf][wi][g->colls[j]][si] = -1;
  if (si > 0 && (g->rows ? (pn / p > 0 ? pn / p : 1) : pn) == wc)
    return; /* the same buffer as the size before */
  for (int j = 0; j < 4 && g->colls[j] >= 0; j++) {
    const int64_t c = g->colls[j];
    const int64_t sr = c == CM_ALL_TO_ALL ? p : 1;
    const int64_t xr = c == CM_ALLGATHER ? 1 : wr;
    pld_tensor in[2] = {tensor(PLD_FP32, 3, (const int64_t[]){p, xr, wc}),
                        tensor(PLD_FP32, 3, (const int64_t[]){p, wr, wc})};
    pld_program *prog = NULL;
    pld_model_report r = {NULL, 0, 0, NULL};
    char what[96];
    snprintf(what, sizeof what, "%s, %s, %d ranks, %lld B", cm_names[c],
             platforms[pf], p, (long long)cm_sizes[si]);
    if (in[0].p && in[1].p) {
      wl_fill(pld_tensor_data(in[0]), p * xr * wc, WL_X, 0, 1.0f);
      const pld_arg extra[3] = {PLD_ARG(c), PLD_ARG(sr), PLD_ARG(coll_blocks)};
      if (modeled_run(cm_host, platforms[pf], p, in, 2, 1, extra, 3, what, &r,
                      &prog) >= 0) {
        double t0 = 1e300, t1 = -1;
        for (int q = 0; q < r.nranks; q++)
          for (int32_t i = 0; i < r.ranks[q].ntasks; i++)
            if (r.ranks[q].tasks[i].call == 1) {
              t0 = fmin(t0, r.ranks[q].tasks[i].start_ns);
              t1 = fmax(t1, r.ranks[q].tasks[i].end_ns);
            }
        cm_us[pf][wi][c][si] = t1 >= 0 ? (t1 - t0) * 1e-3 : -1;
      }
    }
    pld_program_destroy(prog);
    pld_tensor_destroy(in[0]), pld_tensor_destroy(in[1]);
  }
}

static const char *us_str(char *buf, size_t cap, double us) {
  if (us < 0)
    snprintf(buf, cap, "n/a");
  else if (us >= 1000)
    snprintf(buf, cap, "%.1f", us);
  else
    snprintf(buf, cap, "%.3f", us);
  return buf;
}

/* The allreduce mode of the model's least time at size si, or -1. */
static int cm_best(int pf, int wi, int si) {
  int best = -1;
  for (int c = CM_MESH; c <= CM_RING; c++)
    if (cm_us[pf][wi][c][si] >= 0 &&
        (best < 0 || cm_us[pf][wi][c][si] < cm_us[pf][wi][best][si]))
      best = c;
  return best;
}

/* "mesh from 8 B to 4 KiB, two-phase from 16 KiB" for the mode of each size
 * (mode[si], -1 skipped) into buf. */
static void cm_ranges(const int *mode, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int si = 0, first = -1; si < cm_nsizes && n < cap; si++) {
    char a[24], b[24];
    if (mode[si] < 0)
      continue;
    first = first < 0 ? si : first;
    int next = si + 1; /* the next size measured, or cm_nsizes */
    while (next < cm_nsizes && mode[next] < 0)
      next++;
    if (next < cm_nsizes && mode[next] == mode[si])
      continue;
    /* A run of sizes [first, si] with one mode: the last runs on. */
    bytes_str(a, sizeof a, cm_sizes[first]);
    bytes_str(b, sizeof b, cm_sizes[si]);
    if (next == cm_nsizes)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s from %s", n ? ", " : "",
                            cm_names[mode[si]], a);
    else if (first == si)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s at %s", n ? ", " : "",
                            cm_names[mode[si]], a);
    else
      n += (size_t)snprintf(buf + n, cap - n, "%s%s from %s to %s",
                            n ? ", " : "", cm_names[mode[si]], a, b);
    first = -1;
  }
}

static void cm_print(int pf, int wi) {
  const int p = worlds[wi];
  char a[CM_NCOLLS][24], sz[24];
  printf("\n%s, %d ranks: modeled us per call (%d block%s)\n", platforms[pf], p,
         coll_blocks, coll_blocks > 1 ? "s" : "");
  printf("  %9s |", "size");
  for (int c = 1; c < CM_NCOLLS; c++)
    printf(" %10s", cm_names[c]);
  printf(" | %9s %9s %9s\n", "best", "auto", "auto/best");
  int best[CM_MAX_SIZES], autom[CM_MAX_SIZES];
  for (int si = 0; si < cm_nsizes; si++) {
    best[si] = cm_best(pf, wi, si);
    autom[si] = best[si] < 0 ? -1 : (int)pld_allreduce_auto(p, cm_sizes[si]);
    if (best[si] < 0)
      continue;
    printf("  %9s |", bytes_str(sz, sizeof sz, cm_sizes[si]));
    for (int c = 1; c < CM_NCOLLS; c++)
      printf(" %10s", us_str(a[c], sizeof a[c], cm_us[pf][wi][c][si]));
    const double ratio =
        cm_us[pf][wi][autom[si]][si] / cm_us[pf][wi][best[si]][si];
    printf(" | %9s %9s %8.2fx%s\n", cm_names[best[si]], cm_names[autom[si]],
           ratio, ratio > 1.1 ? " <" : "");
  }
  char mb[256], ma[256];
  cm_ranges(best, mb, sizeof mb);
  cm_ranges(autom, ma, sizeof ma);
  printf("  crossover, model: %s\n  crossover, auto:  %s\n", mb, ma);
  fflush(stdout);
}

static void coll_part(int64_t max_bytes) {
  cm_nsizes = 0;
  cm_sizes[cm_nsizes++] = 8;
  for (int64_t b = 16; b <= max_bytes && cm_nsizes < CM_MAX_SIZES; b *= 4)
    cm_sizes[cm_nsizes++] = b;
  printf("\n(a) collectives: one call's modeled time, FP32 SUM, size = each "
         "rank's buffer (nccl-tests' sense); \"<\": auto more than 10%% over "
         "the model's best\n");
  for (int pf = 0; pf < 2; pf++)
    for (int wi = 0; wi < 3; wi++) {
      for (int si = 0; si < cm_nsizes; si++)
        for (int g = 0; g < 2; g++)
          cm_measure(pf, wi, &cm_groups[g], si);
      cm_print(pf, wi);
    }
}

/* ---- (b) fused GEMMs against their unfused forms --------------------------
 */

/* The fused (m = 0) and unfused (m = 1) form of ag or rs at p ranks: the
 * modeled ns of each into ns[2]; the two results compared. */
static void fused_pair(int is_rs, const char *platform, int p, int64_t t,
                       int64_t h, int64_t f, double ns[2], char *size,
                       size_t cap) {
  struct tp s;
  pld_tensor out[2] = {NO_TENSOR, NO_TENSOR}, a = NO_TENSOR;
  ns[0] = ns[1] = -1;
  if (tp_make(&s, p, t, h, f))
    goto done;
  if (is_rs) {
    snprintf(size, cap, "%lldx%lld @ %lldx%lld", (long long)t, (long long)s.fl,
             (long long)s.fl, (long long)h);
    a = tensor(PLD_FP32, 3, (const int64_t[]){p, t, s.fl});
    if (!a.p)
      goto done;
    wl_fill(pld_tensor_data(a), p * t * s.fl, WL_X, 0, 1.0f);
  } else {
    snprintf(size, cap, "%lldx%lld @ %lldx%lld", (long long)s.mb, (long long)h,
             (long long)h, (long long)s.fl);
  }
  for (int m = 0; m < 2; m++) {
    out[m] = is_rs ? tensor(PLD_FP32, 3, (const int64_t[]){p, s.mb, h})
                   : tensor(PLD_FP32, 3, (const int64_t[]){p, t, s.fl});
    if (!out[m].p)
      goto done;
    const bool plain = m;
    const pld_arg extra[1] = {PLD_ARG(plain)};
    pld_tensor in[3] = {is_rs ? a : s.x, is_rs ? s.w2 : s.w1, out[m]};
    pld_model_report rep = {NULL, 0, 0, NULL};
    char what[64];
    snprintf(what, sizeof what, "%s %s, %s, %d ranks", is_rs ? "rs" : "ag",
             m ? "unfused" : "fused", platform, p);
    ns[m] = modeled_run(is_rs ? rs_host : ag_host, platform, p, in, 3, 2, extra,
                        1, what, &rep, NULL);
  }
  if (ns[0] >= 0 && ns[1] >= 0 &&
      same(is_rs ? "rs fused against unfused" : "ag fused against unfused",
           out[0], out[1]))
    ns[0] = ns[1] = -1;
done:
  pld_tensor_destroy(out[0]), pld_tensor_destroy(out[1]);
  pld_tensor_destroy(a);
  tp_free(&s);
}

static void fused_part(void) {
  printf("\n(b) fused against unfused (bench_workloads' ag and rs: one "
         "block, tensors device-resident): modeled time of the run, "
         "speedup = unfused / fused\n");
  printf("  %-8s %-4s %-22s %2s %12s %12s %8s\n", "platform", "what",
         "size (one rank's A @ B)", "P", "fused us", "unfused us", "speedup");
  for (int pf = 0; pf < 2; pf++)
    for (int z = 0; z < 2; z++)
      for (int is_rs = 0; is_rs < 2; is_rs++)
        for (int wi = 0; wi < 3; wi++) {
          double ns[2];
          char size[48], a[24], b[24];
          fused_pair(is_rs, platforms[pf], worlds[wi], sizes[z][0], sizes[z][1],
                     sizes[z][2], ns, size, sizeof size);
          printf("  %-8s %-4s %-22s %2d %12s %12s %7.2fx\n", platforms[pf],
                 is_rs ? "rs" : "ag", size, worlds[wi],
                 us_str(a, sizeof a, ns[0] < 0 ? -1 : ns[0] * 1e-3),
                 us_str(b, sizeof b, ns[1] < 0 ? -1 : ns[1] * 1e-3),
                 ns[0] > 0 && ns[1] > 0 ? ns[1] / ns[0] : -1.0);
          fflush(stdout);
        }
}

/* ---- (c) the MoE layer's split --------------------------------------------
 */

/* The MoE layer's tensors (x, wg, w1, w2, then the outputs topk_idx,
 * topk_w, out), the inputs made as bench_workloads' moe_row makes them. */
enum { MOE_X, MOE_WG, MOE_W1, MOE_W2, MOE_TI, MOE_TW, MOE_OUT, MOE_N };

static void moe_split(const char *platform, int p, int64_t t, int64_t h,
                      int64_t f, int64_t e) {
  const int64_t l = e / p;
  const int64_t shape[MOE_N][4] = {{p, t, h},    {p, h, e},  {p, l, h, f},
                                   {p, l, f, h}, {p, t, K2}, {p, t, K2},
                                   {p, t, h}};
  pld_tensor in[MOE_N];
  int ok = 1;
  for (int i = 0; i < MOE_N; i++) {
    in[i] = tensor(i == MOE_TI ? PLD_INT32 : PLD_FP32,
                   i == MOE_W1 || i == MOE_W2 ? 4 : 3, shape[i]);
    ok &= in[i].p != NULL;
  }
  pld_program *prog = NULL;
  char size[64], what[64];
  snprintf(size, sizeof size, "T=%lld H=%lld F=%lld E=%lld", (long long)t,
           (long long)h, (long long)f, (long long)e);
  snprintf(what, sizeof what, "moe, %s, %d ranks", platform, p);
  if (!ok)
    goto done;
  wl_fill(pld_tensor_data(in[MOE_X]), p * t * h, WL_X, 0, 1.0f);
  for (int r = 0; r < p; r++) /* every rank has the whole gate */
    wl_fill((float *)pld_tensor_data(in[MOE_WG]) + r * h * e, h * e, WL_WG, 0,
            wl_scale(h));
  wl_fill(pld_tensor_data(in[MOE_W1]), p * l * h * f, WL_W1, 0, wl_scale(h));
  wl_fill(pld_tensor_data(in[MOE_W2]), p * l * f * h, WL_W2, 0, wl_scale(f));
  /* The output is checked against the model off (modeled_run), and the
   * top-2 and sampled tokens' output against the plain C layer
   * (bench_workloads' moe_check). */
  const int32_t mode = 0;
  const pld_arg extra[1] = {PLD_ARG(mode)};
  pld_model_report rep = {NULL, 0, 0, NULL};
  const double ns = modeled_run(moe_host, platform, p, in, MOE_N, MOE_OUT,
                                extra, 1, what, &rep, &prog);
  if (ns < 0 || moe_check(p, t, h, f, e, in[MOE_X], in[MOE_TI], in[MOE_OUT]))
    goto done;
  int last = 0;
  for (int q = 1; q < rep.nranks; q++)
    if (rep.ranks[q].finish_ns > rep.ranks[last].finish_ns)
      last = q;
  static const char *const phases[4][4] = {{"gate", "route", NULL},
                                           {"dispatch", NULL},
                                           {"up", "act", "down", NULL},
                                           {"combine", NULL}};
  double sum = 0;
  printf("  %-8s %-26s %d %10.1f |", platform, size, p, ns * 1e-3);
  for (int j = 0; j < 4; j++) {
    double t0, t1;
    span_of(&rep.ranks[last], 1, phases[j], &t0, &t1);
    const double len = t1 >= 0 ? t1 - t0 : 0;
    sum += len;
    printf(" %9.1f %5.1f%%", len * 1e-3, len / ns * 100);
  }
  printf(" | %9.1f %5.1f%%\n", (ns - sum) * 1e-3, (ns - sum) / ns * 100);
  fflush(stdout);
done:
  pld_program_destroy(prog);
  for (int i = 0; i < MOE_N; i++)
    pld_tensor_destroy(in[i]);
}

static void moe_part(void) {
  printf("\n(c) the MoE layer (bench_workloads' moe: top-2, one block per "
         "routing kernel, experts' blocks of 128 rows): the modeled run, and "
         "on its last rank each phase's span (first kernel start to last "
         "end), us and share of the run; rest: dispatch of the call, "
         "launches, gaps between phases\n");
  printf("  %-8s %-26s %s %10s | %16s %16s %16s %16s | %16s\n", "platform",
         "size", "P", "run us", "routing", "dispatch", "experts", "combine",
         "rest");
  for (int pf = 0; pf < 2; pf++)
    for (int z = 0; z < 2; z++)
      for (int wi = 0; wi < 3; wi++)
        moe_split(platforms[pf], worlds[wi], sizes[z][0], sizes[z][1],
                  sizes[z][2], 8);
}

int main(int argc, char **argv) {
  int mask = 0; /* parts: 1 coll, 2 fused, 4 moe */
  int64_t max_bytes = 4 << 20;
  for (int i = 1; i < argc; i++) {
    const int part = !strcmp(argv[i], "coll")    ? 1
                     : !strcmp(argv[i], "fused") ? 2
                     : !strcmp(argv[i], "moe")   ? 4
                                                 : 0;
    char *end = NULL;
    int bad = !part;
    if (bad && i + 1 < argc && !strcmp(argv[i], "-e")) {
      max_bytes = strtoll(argv[++i], &end, 10);
      max_bytes <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 0;
      bad = max_bytes < 8 || (*end && strcmp(end, "K") && strcmp(end, "M"));
    } else if (bad && i + 1 < argc && !strcmp(argv[i], "-B")) {
      coll_blocks = (int32_t)strtol(argv[++i], &end, 10);
      bad = coll_blocks < 1 || *end;
    }
    if (bad) {
      fprintf(stderr, "usage: %s [coll] [fused] [moe] [-e BYTES] [-B BLOCKS]\n",
              argv[0]);
      return 2;
    }
    mask |= part;
  }
  mask = mask ? mask : 7;
  unsetenv("PLD_DEBUG"); /* the model's settings are model_config's */
  const double t0 = now_s();
  printf("bench_model: the timing model's figures (modeled times: exact, the "
         "same in every run and on every machine, so one run each and no "
         "medians; wall time is not measured)\n");
  if (mask & 1)
    coll_part(max_bytes);
  if (mask & 2)
    fused_part();
  if (mask & 4)
    moe_part();
  printf("\nbench_model: %.0f s of wall time; every program's output the "
         "same bits with the model off (a2a3sim)%s\n",
         now_s() - t0, failed ? ": FAILED (above)" : "");
  return failed;
}
