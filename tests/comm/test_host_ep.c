/* The host forms of pld/ep.h's calls: pld_host_all_to_all_packed,
 * pld_host_ep_dispatch and pld_host_ep_combine, called by the host
 * orchestrator on tensors of the host [P, ...] (rank r's row r) and
 * window views.  Over 2, 3 and 4 ranks, FP32 and BF16: random top-k
 * routes (tied weights, masked slots, a token choosing two experts of one
 * rank, one expert in two slots) checked bit for bit against the serial C
 * reference of ep_ref.h and against the kernel forms run on the same
 * inputs; expert outputs in a host intermediate and in a window
 * (pld_local); the program's own signal window, declared or made by the
 * first call, and one the host gives; a rank that sends nothing, one that
 * receives nothing, every token to one expert; capacity exactly at the
 * limit and one row past it (the run fails naming the receiver); an
 * expert index out of range (the run fails); the packed all-to-all-v
 * alone on random counts with zeros; argument mistakes, which fail
 * pld_compile with one line naming the host form; and the artifact
 * folder, which shows the builtin dispatches with each rank's rows. */
#include "ep_ref.h"

PLD_DYNAMIC(T);   /* tokens per rank */
PLD_DYNAMIC(H);   /* columns of a token (and of the packed rows) */
PLD_DYNAMIC(K);   /* top-k slots */
PLD_DYNAMIC(N);   /* rows of the packed all-to-all-v's input */
PLD_DYNAMIC(CAP); /* rows of the targets */
PLD_DYNAMIC(L);   /* experts per rank */
PLD_DYNAMIC(S);   /* rows of combine's stage: T * K */
PLD_DYNAMIC(NS);  /* signal cells */

/* Besides MODE_PACKED and MODE_EP (ep_ref.h): how the host runs them. */
enum {
  HM_KERNEL = 32,      /* the kernel forms, in one kernel per rank */
  HM_EBUF_WINDOW = 64, /* expert outputs in a window, not a host tensor */
  HM_OWN_SIG = 128,    /* a signal window the host gives */
  HM_DECLARED = 256    /* pld_coll_signal declared (else made by a call) */
};

#define WINDOWS(DT)                                                            \
  PLD_WINDOW(rx, DT, CAP, H), PLD_WINDOW(meta, INT32, CAP, 4),                 \
      PLD_WINDOW(rw, FP32, CAP), PLD_WINDOW(tgt, DT, CAP, H)

#define DEFINE_PROGRAM(DT)                                                     \
  /* Every window's rows: SENTINEL, so that rows past a total are seen to      \
   * be left alone. */                                                         \
  PLD_KERNEL(k_fill_##DT, k, WINDOWS(DT)) {                                    \
    const pld_tensor none = {0};                                               \
    copy_all(k, none, pld_local(rx), SENTINEL);                                \
    copy_all(k, none, pld_local(meta), SENTINEL);                              \
    copy_all(k, none, pld_local(rw), SENTINEL);                                \
    copy_all(k, none, pld_local(tgt), SENTINEL);                               \
  }                                                                            \
  PLD_DEVICE(d_fill_##DT, a, WINDOWS(DT)) {                                    \
    pld_launch(a, k_fill_##DT, 1, rx, meta, rw, tgt);                          \
  }                                                                            \
  PLD_KERNEL(k_expert_##DT, k, PLD_WINDOW(rx, DT, CAP, H),                     \
             PLD_IN(rc, INT32, L), PLD_OUT(ebuf, DT, CAP, H)) {                \
    experts_compute(k, pld_local(rx), rc, ebuf,                                \
                    pld_rank(k, pld_window_comm(rx)));                         \
  }                                                                            \
  PLD_DEVICE(d_expert_##DT, a, PLD_WINDOW(rx, DT, CAP, H),                     \
             PLD_IN(rc, INT32, L), PLD_OUT(ebuf, DT, CAP, H)) {                \
    pld_launch(a, k_expert_##DT, 1, rx, rc, ebuf);                             \
  }                                                                            \
  PLD_KERNEL(k_out_##DT, k, WINDOWS(DT), PLD_OUT(o_rx, DT, CAP, H),            \
             PLD_OUT(o_meta, INT32, CAP, 4), PLD_OUT(o_rw, FP32, CAP),         \
             PLD_OUT(o_tgt, DT, CAP, H)) {                                     \
    copy_all(k, pld_local(rx), o_rx, 0);                                       \
    copy_all(k, pld_local(meta), o_meta, 0);                                   \
    copy_all(k, pld_local(rw), o_rw, 0);                                       \
    copy_all(k, pld_local(tgt), o_tgt, 0);                                     \
  }                                                                            \
  PLD_DEVICE(d_out_##DT, a, WINDOWS(DT), PLD_OUT(o_rx, DT, CAP, H),            \
             PLD_OUT(o_meta, INT32, CAP, 4), PLD_OUT(o_rw, FP32, CAP),         \
             PLD_OUT(o_tgt, DT, CAP, H)) {                                     \
    pld_launch(a, k_out_##DT, 1, rx, meta, rw, tgt, o_rx, o_meta, o_rw,        \
               o_tgt);                                                         \
  }                                                                            \
  /* The kernel forms on the same inputs, for the comparison. */               \
  PLD_KERNEL(k_kern_##DT, k, PLD_IN(x, DT, T, H), PLD_IN(idx, INT32, T, K),    \
             PLD_IN(wt, FP32, T, K), PLD_IN(pin, DT, N, H),                    \
             PLD_IN(scnt, INT32, NR), WINDOWS(DT),                             \
             PLD_WINDOW(stage, DT, S, H), PLD_WINDOW(ebuf, DT, CAP, H),        \
             PLD_OUT(o_rc, INT32, L), PLD_OUT(o_out, DT, T, H),                \
             PLD_OUT(o_pc, INT32, NR), PLD_SCALAR(experts, INT32),             \
             PLD_SCALAR(mode, INT32), PLD_COLL_SIG(sig)) {                     \
    if ((mode & MODE_PACKED) &&                                                \
        pld_all_to_all_packed(k, pin, scnt, tgt, o_pc, sig))                   \
      return;                                                                  \
    if (!(mode & MODE_EP) ||                                                   \
        pld_ep_dispatch(k, x, idx, wt, experts, rx, meta, rw, o_rc, sig))      \
      return;                                                                  \
    experts_compute(k, pld_local(rx), o_rc, pld_local(ebuf),                   \
                    pld_rank(k, pld_window_comm(rx)));                         \
    pld_ep_combine(k, pld_local(ebuf), pld_local(meta), o_rc, idx, wt, stage,  \
                   o_out, sig);                                                \
  }                                                                            \
  PLD_DEVICE(d_kern_##DT, a, PLD_IN(x, DT, T, H), PLD_IN(idx, INT32, T, K),    \
             PLD_IN(wt, FP32, T, K), PLD_IN(pin, DT, N, H),                    \
             PLD_IN(scnt, INT32, NR), WINDOWS(DT),                             \
             PLD_WINDOW(stage, DT, S, H), PLD_WINDOW(ebuf, DT, CAP, H),        \
             PLD_OUT(o_rc, INT32, L), PLD_OUT(o_out, DT, T, H),                \
             PLD_OUT(o_pc, INT32, NR), PLD_SCALAR(experts, INT32),             \
             PLD_SCALAR(mode, INT32)) {                                        \
    pld_launch(a, k_kern_##DT, 1, x, idx, wt, pin, scnt, rx, meta, rw, tgt,    \
               stage, ebuf, o_rc, o_out, o_pc, experts, mode);                 \
  }                                                                            \
  PLD_HOST(h_hep_##DT, h, PLD_IN(x, DT, NR, T, H),                             \
           PLD_IN(idx, INT32, NR, T, K), PLD_IN(wt, FP32, NR, T, K),           \
           PLD_IN(pin, DT, NR, N, H), PLD_IN(scnt, INT32, NR, NR),             \
           PLD_OUT(o_rx, DT, NR, CAP, H), PLD_OUT(o_meta, INT32, NR, CAP, 4),  \
           PLD_OUT(o_rw, FP32, NR, CAP), PLD_OUT(o_rc, INT32, NR, L),          \
           PLD_OUT(o_out, DT, NR, T, H), PLD_OUT(o_tgt, DT, NR, CAP, H),       \
           PLD_OUT(o_pc, INT32, NR, NR), PLD_SCALAR(experts, INT32),           \
           PLD_SCALAR(mode, INT32)) {                                          \
    const int n = pld_world_size(h);                                           \
    const pld_dtype dt = PLD_##DT;                                             \
    const int64_t t = pld_tensor_dim(x, 1), h_ = pld_tensor_dim(x, 2);         \
    const int64_t kk = pld_tensor_dim(idx, 2);                                 \
    const int64_t cap = pld_tensor_dim(o_rx, 1);                               \
    pld_window rx =                                                            \
        pld_window_view(h, pld_window_alloc_shape(h, dt, PLD_SHAPE(cap, h_)),  \
                        dt, PLD_SHAPE(cap, h_));                               \
    pld_window meta = pld_window_view(                                         \
        h, pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(cap, 4)), PLD_INT32, \
        PLD_SHAPE(cap, 4));                                                    \
    pld_window rw = pld_window_view(                                           \
        h, pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(cap)), PLD_FP32,      \
        PLD_SHAPE(cap));                                                       \
    pld_window tgt =                                                           \
        pld_window_view(h, pld_window_alloc_shape(h, dt, PLD_SHAPE(cap, h_)),  \
                        dt, PLD_SHAPE(cap, h_));                               \
    pld_window stage = pld_window_view(                                        \
        h, pld_window_alloc_shape(h, dt, PLD_SHAPE(t * kk, h_)), dt,           \
        PLD_SHAPE(t * kk, h_));                                                \
    pld_window ebuf =                                                          \
        pld_window_view(h, pld_window_alloc_shape(h, dt, PLD_SHAPE(cap, h_)),  \
                        dt, PLD_SHAPE(cap, h_));                               \
    pld_window sig = PLD_NO_WINDOW;                                            \
    if (mode & HM_OWN_SIG) {                                                   \
      const int64_t ns = PLD_SIGNAL_CELLS(n, 1);                               \
      sig = pld_window_view(                                                   \
          h, pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns)), PLD_INT32,   \
          PLD_SHAPE(ns));                                                      \
    }                                                                          \
    if (mode & (HM_KERNEL | HM_DECLARED))                                      \
      pld_coll_signal(h, 1);                                                   \
    for (int q = 0; q < n; q++)                                                \
      pld_dispatch(h, d_fill_##DT, q, rx, meta, rw, tgt);                      \
    if (mode & HM_KERNEL) {                                                    \
      for (int q = 0; q < n; q++)                                              \
        pld_dispatch(                                                          \
            h, d_kern_##DT, q, pld_slice(h, x, q), pld_slice(h, idx, q),       \
            pld_slice(h, wt, q), pld_slice(h, pin, q), pld_slice(h, scnt, q),  \
            rx, meta, rw, tgt, stage, ebuf, pld_slice(h, o_rc, q),             \
            pld_slice(h, o_out, q), pld_slice(h, o_pc, q), experts, mode);     \
    } else {                                                                   \
      if (mode & MODE_PACKED)                                                  \
        pld_host_all_to_all_packed(h, pin, scnt, tgt, o_pc, sig, 1);           \
      if (mode & MODE_EP) {                                                    \
        pld_host_ep_dispatch(h, x, idx, wt, experts, rx, meta, rw, o_rc, sig,  \
                             1);                                               \
        pld_tensor eo = (mode & HM_EBUF_WINDOW)                                \
                            ? pld_local(ebuf)                                  \
                            : pld_host_tensor(h, dt, PLD_SHAPE(n, cap, h_));   \
        for (int q = 0; q < n; q++)                                            \
          pld_dispatch(h, d_expert_##DT, q, rx, pld_slice(h, o_rc, q),         \
                       (mode & HM_EBUF_WINDOW) ? eo : pld_slice(h, eo, q));    \
        pld_host_ep_combine(h, eo, pld_local(meta), o_rc, idx, wt, stage,      \
                            o_out, sig, 1);                                    \
      }                                                                        \
    }                                                                          \
    for (int q = 0; q < n; q++)                                                \
      pld_dispatch(h, d_out_##DT, q, rx, meta, rw, tgt, pld_slice(h, o_rx, q), \
                   pld_slice(h, o_meta, q), pld_slice(h, o_rw, q),             \
                   pld_slice(h, o_tgt, q));                                    \
  }

DEFINE_PROGRAM(FP32)
DEFINE_PROGRAM(BF16)

/* ---- running a case ------------------------------------------------------ */

/* The host tensors of a run: inputs, then outputs (o_rx first). */
enum {
  X,
  IDX,
  WT,
  PIN,
  SCNT,
  O_RX,
  O_META,
  O_RW,
  O_RC,
  O_OUT,
  O_TGT,
  O_PC,
  NT
};

struct hep_run {
  pld_tensor t[NT];
};

static void run_build(struct hep_run *r, const struct ep_case *c) {
  const int64_t p = c->p, t = c->t, h = c->h, k = c->k, cap = c->cap;
  const int64_t l = c->e / c->p, n = c->n;
  const int64_t shapes[NT][4] = {
      [X] = {3, p, t, h},        [IDX] = {3, p, t, k},
      [WT] = {3, p, t, k},       [PIN] = {3, p, n, h},
      [SCNT] = {2, p, p},        [O_RX] = {3, p, cap, h},
      [O_META] = {3, p, cap, 4}, [O_RW] = {2, p, cap},
      [O_RC] = {2, p, l},        [O_OUT] = {3, p, t, h},
      [O_TGT] = {3, p, cap, h},  [O_PC] = {2, p, p}};
  for (int i = 0; i < NT; i++) {
    pld_dtype dt = i == X || i == PIN || i == O_RX || i == O_OUT || i == O_TGT
                       ? c->dt
                   : i == WT || i == O_RW ? PLD_FP32
                                          : PLD_INT32;
    r->t[i] = comm_tensor(dt, (int)shapes[i][0], shapes[i] + 1);
  }
  put_floats(r->t[X], c->x, p * t * h);
  put_floats(r->t[PIN], c->pin, p * n * h);
  memcpy(pld_tensor_data(r->t[WT]), c->w, (size_t)(p * t * k) * sizeof(float));
  memcpy(pld_tensor_data(r->t[IDX]), c->idx,
         (size_t)(p * t * k) * sizeof(int32_t));
  memcpy(pld_tensor_data(r->t[SCNT]), c->scnt,
         (size_t)(p * p) * sizeof(int32_t));
  /* Outputs scribbled over: each run writes what is checked. */
  for (int i = O_RX; i < NT; i++)
    memset(pld_tensor_data(r->t[i]), 0x5a,
           (size_t)pld_tensor_numel(r->t[i]) *
               pld_dtype_size(pld_tensor_dtype(r->t[i])));
}

/* Runs the case's program in `mode` (the case's calls, and how). */
static int run_exec(struct hep_run *r, const struct ep_case *c, int mode) {
  pld_config cfg = comm_config(c->p);
  int32_t experts = c->e, m = mode;
  pld_tensor *t = r->t;
  return pld_run(c->dt == PLD_FP32 ? h_hep_FP32 : h_hep_BF16, &cfg,
                 PLD_ARGS(t[X], t[IDX], t[WT], t[PIN], t[SCNT], t[O_RX],
                          t[O_META], t[O_RW], t[O_RC], t[O_OUT], t[O_TGT],
                          t[O_PC], experts, m));
}

static void run_free(struct hep_run *r) {
  for (int i = 0; i < NT; i++)
    pld_tensor_destroy(r->t[i]);
}

/* Every output the case's calls write, against the reference. */
static void run_check(const struct hep_run *r, const struct ep_case *c,
                      const struct ep_ref *ref) {
  const int p = c->p, l = c->e / p, cap = c->cap, h = c->h, t = c->t;
  const int32_t *meta = pld_tensor_data(r->t[O_META]);
  const int32_t *rc = pld_tensor_data(r->t[O_RC]);
  const int32_t *pc = pld_tensor_data(r->t[O_PC]);
  const float *rw = pld_tensor_data(r->t[O_RW]);
  for (int q = 0; q < p; q++) {
    if (c->mode & MODE_EP) {
      for (int64_t i = 0; i < (int64_t)cap * 4; i++)
        expect_int("recv_meta", q, i, meta[q * cap * 4 + i],
                   ref->meta[q * cap * 4 + i]);
      for (int64_t i = 0; i < l; i++)
        expect_int("recv_counts", q, i, rc[q * l + i], ref->rc[q * l + i]);
      for (int64_t i = 0; i < cap; i++)
        expect_float("recv_w", q, i, rw[q * cap + i], ref->rw[q * cap + i]);
      for (int64_t i = 0; i < (int64_t)cap * h; i++)
        expect_float("recv_x", q, i, get_float(r->t[O_RX], q * cap * h + i),
                     ref->rx[q * cap * h + i]);
      for (int64_t i = 0; i < (int64_t)t * h; i++)
        expect_float("out (combined)", q, i,
                     get_float(r->t[O_OUT], q * t * h + i),
                     ref->out[q * t * h + i]);
    }
    if (c->mode & MODE_PACKED) {
      for (int64_t i = 0; i < p; i++)
        expect_int("recv_counts (packed)", q, i, pc[q * p + i],
                   ref->pc[q * p + i]);
      for (int64_t i = 0; i < (int64_t)cap * h; i++)
        expect_float("target (packed)", q, i,
                     get_float(r->t[O_TGT], q * cap * h + i),
                     ref->tgt[q * cap * h + i]);
    }
  }
}

/* The outputs the case's calls write are the same bits in a and b. */
static void runs_agree(const struct hep_run *a, const struct hep_run *b,
                       const struct ep_case *c, const char *what) {
  for (int i = O_RX; i < NT; i++) {
    const int ep = i != O_TGT && i != O_PC;
    if (ep ? !(c->mode & MODE_EP) : !(c->mode & MODE_PACKED))
      continue;
    size_t n = (size_t)pld_tensor_numel(a->t[i]) *
               pld_dtype_size(pld_tensor_dtype(a->t[i]));
    if (memcmp(pld_tensor_data(a->t[i]), pld_tensor_data(b->t[i]), n)) {
      print_error("%s: output %d differs\n", what, i);
      fail();
    }
  }
}

/* The host forms in each way given (ways: HM_* flags), each run twice,
 * against the reference, and against the kernel forms, bit for bit. */
static void case_run(const struct ep_case *c, const int *ways, int nways) {
  struct ep_ref ref;
  ref_build(c, &ref);
  struct hep_run kern;
  run_build(&kern, c);
  assert_ok(run_exec(&kern, c, c->mode | HM_KERNEL));
  run_check(&kern, c, &ref);
  for (int w = 0; w < nways; w++) {
    struct hep_run r;
    run_build(&r, c);
    for (int i = 0; i < 2; i++) {
      assert_ok(run_exec(&r, c, c->mode | ways[w]));
      run_check(&r, c, &ref);
      runs_agree(&r, &kern, c, "host forms vs kernel forms");
      if (i == 0) /* the second run writes them all again */
        for (int j = O_RX; j < NT; j++)
          memset(pld_tensor_data(r.t[j]), 0x5a,
                 (size_t)pld_tensor_numel(r.t[j]) *
                     pld_dtype_size(pld_tensor_dtype(r.t[j])));
    }
    run_free(&r);
  }
  run_free(&kern);
  ref_free(&ref);
}

/* Runs the host forms of a case expected to fail with `status` and the
 * message parts. */
static void case_fails(const struct ep_case *c, int status, const char *a,
                       const char *b) {
  struct hep_run r;
  run_build(&r, c);
  assert_fails_with(run_exec(&r, c, c->mode), status, a, b);
  run_free(&r);
}

/* ---- the cases ----------------------------------------------------------- */

static const int every_way[] = {0, HM_EBUF_WINDOW | HM_OWN_SIG, HM_DECLARED};

static void random_cases(pld_dtype dt) {
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    rng_state = (uint64_t)(p * 1000 + 17);
    case_random_both(&c, dt, p);
    case_run(&c, every_way, 3);
    case_free(&c);
  }
}

static void test_host_dispatch_combine_fp32(void **state) {
  (void)state;
  random_cases(PLD_FP32);
}

static void test_host_dispatch_combine_bf16(void **state) {
  (void)state;
  random_cases(PLD_BF16);
}

/* Rank 0 sends nothing (every slot masked) and rank P-1 receives nothing;
 * then every token of every rank chooses expert 1 alone, whose rank
 * receives everything. */
static void test_host_zero_counts_and_one_expert(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    case_init(&c, PLD_FP32, p, 2 * p, 6, 8, 2);
    rng_state = 70 + (uint64_t)p;
    case_random(&c);
    case_route_around(&c);
    c.cap = ref_max_total(&c) + 1;
    assert_int_equal(ref_total(&c, p - 1), 0);
    case_run(&c, every_way, 1);
    case_all_to_expert_1(&c);
    c.cap = ref_max_total(&c);
    assert_int_equal(ref_total(&c, 0), p * c.t);
    case_run(&c, every_way, 1);
    case_free(&c);
  }
}

/* Capacity exactly the largest receiver's rows passes; one less fails the
 * run, naming the receiver, its rows and the capacity; so does an expert
 * index of E.  The same for the packed all-to-all-v's target. */
static void test_host_capacity_and_bounds(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    case_init(&c, PLD_BF16, p, 2 * p, 7, 16, 2);
    rng_state = 110 + (uint64_t)p;
    case_random(&c);
    int at;
    const int most = ref_busiest(&c, &at);
    c.cap = most;
    c.mode = MODE_EP;
    case_run(&c, every_way, 1);
    c.cap = most - 1;
    char line[200];
    snprintf(line, sizeof line,
             "rank %d would receive %d rows (tokens times their slots "
             "choosing its experts), more than the %d rows of window "
             "'recv_x' (buffer #0) BF16[%d, 16]: no row was sent",
             at, most, most - 1, most - 1);
    case_fails(&c, PLD_ERR_BOUNDS,
               "pld_ep_dispatch: kernel pld_ep_dispatch (rank ", line);
    c.cap = most;
    c.idx[(1 * c.t + 2) * c.k + 1] = 2 * p;
    snprintf(line, sizeof line,
             "topk_idx[2, 1] (token 2, slot 1) is %d: expected an expert in "
             "[0, %d), or a negative index for none",
             2 * p, 2 * p);
    case_fails(&c, PLD_ERR_BOUNDS,
               "pld_ep_dispatch: kernel pld_ep_dispatch (rank 1,", line);
    case_free(&c);
  }
}

/* The packed all-to-all-v alone: random counts with zeros, a total of
 * exactly its capacity; one row more fails the run, naming the receiver;
 * a negative count fails on its rank. */
static void test_host_packed(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    case_init(&c, p == 3 ? PLD_BF16 : PLD_FP32, p, p, 2, 8, 1);
    rng_state = 310 + (uint64_t)p;
    case_random(&c);
    c.mode = MODE_PACKED;
    case_packed_counts(&c);
    int at;
    const int most = packed_busiest(&c, &at);
    assert_true(most >= 2);
    c.cap = most;
    case_run(&c, every_way, 3);
    c.cap = most - 1;
    char line[200];
    snprintf(line, sizeof line,
             "rank %d would receive %d rows (the sum of every rank's count), "
             "more than the %d rows of window 'target'",
             at, most, most - 1);
    case_fails(&c, PLD_ERR_BOUNDS,
               "pld_all_to_all_packed: kernel pld_all_to_all_packed (rank ",
               line);
    c.cap = most;
    c.scnt[(p - 1) * p + 0] = -1;
    snprintf(line, sizeof line,
             "pld_all_to_all_packed: kernel pld_all_to_all_packed (rank %d",
             p - 1);
    case_fails(&c, PLD_ERR_BOUNDS, line,
               "send_counts[0] is -1: expected a count >= 0");
    case_free(&c);
  }
}

/* ---- mistakes fail the compile ------------------------------------------ */

enum {
  M_EXPERTS,
  M_X_ROWS,
  M_RECV_X_NULL,
  M_TOPK_W_DTYPE,
  M_RECV_COUNTS_IN,
  M_RANK_TENSOR,
  M_SHARED,
  M_SIG_SMALL,
  M_STAGE,
  M_COMBINE_COUNTS,
  M_PACKED_COUNTS,
  M_PACKED_COLS,
  M_COUNT
};

/* A dispatch and combine of 4 tokens of 8 FP32 columns, top-2, 2 experts
 * per rank, or the packed all-to-all-v, with the mistake `how`. */
PLD_HOST(h_mistake, h, PLD_IN(x, FP32, NR, 4, 8), PLD_IN(idx, INT32, NR, 4, 2),
         PLD_IN(w, FP32, NR, 4, 2), PLD_IN(c_in, INT32, NR, 2),
         PLD_OUT(rc, INT32, NR, 2), PLD_OUT(out, FP32, NR, 4, 8),
         PLD_SCALAR(how, INT32)) {
  const int n = pld_world_size(h);
  const int64_t cap = 8 * n;
  pld_window_buf bx = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(cap, 8));
  pld_window_buf bm = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(cap, 4));
  pld_window_buf bw = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(cap));
  pld_window_buf bs = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(8, 8));
  pld_window rx = pld_window_view(h, bx, PLD_FP32, PLD_SHAPE(cap, 8));
  pld_window meta = pld_window_view(h, bm, PLD_INT32, PLD_SHAPE(cap, 4));
  pld_window rw = pld_window_view(h, bw, PLD_FP32, PLD_SHAPE(cap));
  pld_window stage = pld_window_view(h, bs, PLD_FP32, PLD_SHAPE(8, 8));
  pld_window sig = PLD_NO_WINDOW;
  int32_t experts = 2 * n;
  pld_tensor xx = x, ww = w, rcc = rc;
  switch (how) {
  case M_EXPERTS:
    experts = 2 * n + 1;
    break;
  case M_X_ROWS:
    xx = pld_host_tensor(h, PLD_FP32, PLD_SHAPE(n + 1, 4, 8));
    break;
  case M_RECV_X_NULL:
    rx = PLD_NO_WINDOW;
    break;
  case M_TOPK_W_DTYPE:
    ww = idx;
    break;
  case M_RECV_COUNTS_IN:
    rcc = c_in;
    break;
  case M_RANK_TENSOR:
    xx = pld_rank_tensor(h, 1, PLD_FP32, PLD_SHAPE(n, 4, 8));
    break;
  case M_SHARED: /* recv_w: the first rows of recv_meta's buffer */
    rw = pld_window_view(h, bm, PLD_FP32, PLD_SHAPE(cap));
    break;
  case M_SIG_SMALL:
    sig = pld_window_view(h, pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(8)),
                          PLD_INT32, PLD_SHAPE(8));
    break;
  case M_STAGE:
    stage = pld_window_view(h, bs, PLD_FP32, PLD_SHAPE(7, 8));
    break;
  default:
    break;
  }
  if (how == M_PACKED_COUNTS || how == M_PACKED_COLS) {
    pld_tensor counts = pld_host_tensor(
        h, PLD_INT32, PLD_SHAPE(n, how == M_PACKED_COUNTS ? n + 1 : n));
    pld_tensor recv = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(n, n));
    pld_host_all_to_all_packed(h, how == M_PACKED_COLS ? idx : x, counts, rx,
                               recv, sig, 1);
    return;
  }
  pld_host_ep_dispatch(h, xx, idx, ww, experts, rx, meta, rw, rcc, sig, 1);
  pld_host_ep_combine(h, pld_local(rx), pld_local(meta),
                      how == M_COMBINE_COUNTS ? w : rc, idx, w, stage, out, sig,
                      1);
}

/* The message of compiling h_mistake over n ranks with mistake `how`. */
static int compile_mistake(int n, int how) {
  pld_config cfg = comm_config(n);
  pld_tensor x = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 4, 8});
  pld_tensor idx = comm_tensor(PLD_INT32, 3, (int64_t[]){n, 4, 2});
  pld_tensor w = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 4, 2});
  pld_tensor c_in = comm_tensor(PLD_INT32, 2, (int64_t[]){n, 2});
  pld_tensor rc = comm_tensor(PLD_INT32, 2, (int64_t[]){n, 2});
  pld_tensor out = comm_tensor(PLD_FP32, 3, (int64_t[]){n, 4, 8});
  pld_program *p = NULL;
  int32_t hw = how;
  int st =
      pld_compile(h_mistake, &cfg, PLD_ARGS(x, idx, w, c_in, rc, out, hw), &p);
  if (how == M_COUNT) /* no mistake */
    pld_program_destroy(p);
  else
    assert_null(p);
  pld_tensor all[] = {x, idx, w, c_in, rc, out};
  for (int i = 0; i < 6; i++)
    pld_tensor_destroy(all[i]);
  return st;
}

/* Compiling h_mistake over 3 ranks with mistake `how` fails with status
 * and exactly the message want. */
static void mistake_is(int how, int status, const char *want) {
  int st = compile_mistake(3, how);
  if (st != status || strcmp(pld_last_error(), want)) {
    print_error("mistake %d: expected %s \"%s\", got %s \"%s\"\n", how,
                pld_status_name(status), want, pld_status_name(st),
                pld_last_error());
    fail();
  }
}

static void test_host_ep_mistakes(void **state) {
  (void)state;
  if (!comm_world_fits(3))
    skip();
  assert_ok(compile_mistake(3, M_COUNT)); /* the program without mistakes */
  mistake_is(M_EXPERTS, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): experts is 7: expected a "
             "multiple of the domain's 3 ranks from 3 to 255 "
             "(PLD_EP_MAX_EXPERTS)");
  mistake_is(M_X_ROWS, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): x: expected a tensor of "
             "the host [3, ...] (row r for rank r) or pld_local of a window "
             "view, got FP32[4, 4, 8]");
  mistake_is(M_RECV_X_NULL, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): recv_x: expected a window "
             "view (pld_window_view), got NULL");
  mistake_is(M_TOPK_W_DTYPE, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): topk_w 'idx' is INT32[4, "
             "2]: expected FP32[4, 2], as topk_idx");
  mistake_is(M_RECV_COUNTS_IN, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): recv_counts: the call "
             "writes it, but 'c_in' is an In parameter of h_mistake (read "
             "only): pass a tensor the host function may write");
  mistake_is(M_RANK_TENSOR, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): x: expected a tensor of "
             "the host [3, ...] (row r for rank r) or pld_local of a window "
             "view, got rank 1 intermediate #0 (pld_rank_tensor), which no "
             "other rank has");
  mistake_is(M_SHARED, PLD_ERR_ARG,
             "pld_host_ep_dispatch (in h_mistake): recv_w (window buffer #1) "
             "and recv_meta (window buffer #1) share memory: use separate "
             "window views");
  char sig_small[200];
  snprintf(sig_small, sizeof sig_small,
           "pld_host_ep_dispatch (in h_mistake): window buffer #4 is "
           "INT32[8]: expected INT32[n] with n >= %d (PLD_SIGNAL_CELLS(3, 1))",
           PLD_SIGNAL_CELLS(3, 1));
  mistake_is(M_SIG_SMALL, PLD_ERR_ARG, sig_small);
  mistake_is(M_STAGE, PLD_ERR_ARG,
             "pld_host_ep_combine (in h_mistake): stage (window buffer #3) "
             "is FP32[7, 8]: expected a window [S, 8] of FP32 with S >= T K "
             "= 8 (T = 4 tokens here)");
  mistake_is(M_COMBINE_COUNTS, PLD_ERR_ARG,
             "pld_host_ep_combine (in h_mistake): recv_counts 'w' is "
             "FP32[4, 2]: expected INT32[L], a dispatch's count per local "
             "expert (L from 1 to 85 over 3 ranks: PLD_EP_MAX_EXPERTS)");
  mistake_is(M_PACKED_COUNTS, PLD_ERR_ARG,
             "pld_host_all_to_all_packed (in h_mistake): send_counts 'host "
             "intermediate #0' is INT32[4]: expected INT32[3], a count per "
             "rank");
  mistake_is(M_PACKED_COLS, PLD_ERR_ARG,
             "pld_host_all_to_all_packed (in h_mistake): input 'idx' is "
             "INT32[4, 2]: expected rows of 8 FP32 elements, as window "
             "buffer #0 FP32[24, 8] has");
}

/* The artifact folder lists the builtin dispatches like the others, each
 * rank's with its rows of the host's tensors. */
static void test_host_ep_artifacts(void **state) {
  (void)state;
  if (!comm_world_fits(2))
    skip();
  struct ep_case c;
  case_init(&c, PLD_FP32, 2, 4, 3, 8, 2);
  rng_state = 5;
  case_random(&c);
  c.cap = ref_max_total(&c) + 1;
  c.mode = MODE_EP | MODE_PACKED;
  struct hep_run r;
  run_build(&r, &c);
  pld_config cfg = comm_config(2);
  cfg.artifact_dir = "";
  int32_t experts = c.e, m = c.mode;
  pld_tensor *t = r.t;
  pld_program *p;
  assert_ok(pld_compile(h_hep_FP32, &cfg,
                        PLD_ARGS(t[X], t[IDX], t[WT], t[PIN], t[SCNT], t[O_RX],
                                 t[O_META], t[O_RW], t[O_RC], t[O_OUT],
                                 t[O_TGT], t[O_PC], experts, m),
                        &p));
  static const char *const lines[] = {
      "dispatch 2: pld_all_to_all_packed on the AICPU",
      "input: FP32\\[8, 8\\] In = pin\\[1\\], copied in",
      "recv_counts: INT32\\[2\\] Out = o_pc\\[1\\], copied back",
      "dispatch 3: pld_ep_dispatch on the AICPU",
      "x: FP32\\[3, 8\\] In = x\\[1\\], copied in",
      "recv_x: FP32\\[7, 8\\] window, view of buffer #0 at byte 0; rank 1",
      "kernel pld_ep_dispatch on the AI cores: 1 block on AIV cores",
      "dispatch 5: pld_ep_combine on the AICPU",
      "expert_out: FP32\\[7, 8\\] In = host intermediate #0\\[1\\]",
      "out: FP32\\[3, 8\\] Out = o_out\\[1\\], copied back",
      "dispatch 6: d_out_FP32"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "grep -q '%s' '%s/rank1.txt'", lines[i],
             pld_program_artifact_dir(p));
    if (system(cmd)) {
      print_error("rank1.txt lacks \"%s\"\n", lines[i]);
      fail();
    }
  }
  remove_dir(pld_program_artifact_dir(p));
  pld_program_destroy(p);
  run_free(&r);
  case_free(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_host_dispatch_combine_fp32),
    cmocka_unit_test(test_host_dispatch_combine_bf16),
    cmocka_unit_test(test_host_zero_counts_and_one_expert),
    cmocka_unit_test(test_host_capacity_and_bounds),
    cmocka_unit_test(test_host_packed),
    cmocka_unit_test(test_host_ep_mistakes),
    cmocka_unit_test(test_host_ep_artifacts),
};

PLD_TEST_MAIN("comm_host_ep", tests)
