/* pld_all_to_all_packed, pld_ep_dispatch and pld_ep_combine (pld/ep.h),
 * checked against the serial C reference of ep_ref.h (written from the
 * header's contract, not from the library's code): over 2, 3 and 4 ranks, FP32
 * and BF16, on 1 and 2 blocks; random top-k routes with tied weights, masked
 * slots, a token choosing two experts of one rank (its data arrives in its
 * first row there and is copied: the `first row` column says so) and one
 * expert in two slots; a rank that sends nothing and one that receives
 * nothing; every token to one expert; the rows of x the fabric carries
 * (its debug log): one per token and receiving rank; a combine whose
 * experts wrote into a window every rank passes (the ranks read each
 * other's rows in place, which the log shows, and write where a rank
 * passes another tensor), with 250, 252 and 256 experts; capacity exactly at
 * the limit and one row past it (every rank fails, naming the receiver);
 * an expert index out of range; mismatched calls; the packed
 * all-to-all-v alone on random counts with zeros and a total of exactly
 * its capacity, and its refusals.  Each run calls dispatch and combine
 * twice back to back on one signal window (and the packed all-to-all-v
 * before them), checks every output bit for bit, that the window's credit
 * and count cells are zero again afterwards, and that a second run gives
 * the same bits. */
#include <stdio.h>
#include <unistd.h>

#include "ep_ref.h"

PLD_DYNAMIC(T);   /* tokens per rank */
PLD_DYNAMIC(H);   /* columns of a token (and of the packed rows) */
PLD_DYNAMIC(K);   /* top-k slots */
PLD_DYNAMIC(N);   /* rows of the packed all-to-all-v's input */
PLD_DYNAMIC(CAP); /* rows of the targets */
PLD_DYNAMIC(L);   /* experts per rank */
PLD_DYNAMIC(S);   /* rows of combine's stage: T * K */
PLD_DYNAMIC(NS);  /* signal cells */

/* ---- the program --------------------------------------------------------- */

#define KERNEL_PARAMS(DT)                                                      \
  PLD_IN(x, DT, T, H), PLD_IN(idx, INT32, T, K), PLD_IN(wt, FP32, T, K),       \
      PLD_IN(pin, DT, N, H), PLD_IN(scnt, INT32, NR),                          \
      PLD_WINDOW(rx, DT, CAP, H), PLD_WINDOW(meta, INT32, CAP, 4),             \
      PLD_WINDOW(rw, FP32, CAP), PLD_WINDOW(stage, DT, S, H),                  \
      PLD_WINDOW(tgt, DT, CAP, H), PLD_WINDOW(sig, INT32, NS),                 \
      PLD_WINDOW(bsig, INT32, 1)
#define OUT_PARAMS(DT)                                                         \
  PLD_OUT(o_rx, DT, CAP, H), PLD_OUT(o_meta, INT32, CAP, 4),                   \
      PLD_OUT(o_rw, FP32, CAP), PLD_OUT(o_rc, INT32, L),                       \
      PLD_OUT(o_out, DT, T, H), PLD_OUT(o_tgt, DT, CAP, H),                    \
      PLD_OUT(o_pc, INT32, NR), PLD_OUT(o_sig, INT32, NS)
#define SCALARS                                                                \
  PLD_SCALAR(experts, INT32), PLD_SCALAR(mode, INT32), PLD_SCALAR(reps, INT32)

/* Where rank me's experts write their outputs for the combine (MODE_IN_PLACE
 * and MODE_ASKEW in ep_ref.h). */
static pld_tensor expert_out(int32_t mode, int32_t me, pld_tensor ebuf,
                             pld_window rx, pld_window tgt) {
  if (!(mode & MODE_IN_PLACE) || ((mode & MODE_ASKEW) && me == 1))
    return ebuf;
  return (mode & MODE_ASKEW) && me == 2 ? pld_local(tgt) : pld_local(rx);
}

#define DEFINE_PROGRAM(DT)                                                     \
  PLD_KERNEL(k_ep_##DT, k, KERNEL_PARAMS(DT), PLD_INOUT(ebuf, DT, CAP, H),     \
             OUT_PARAMS(DT), SCALARS) {                                        \
    const int32_t me = pld_rank(k, pld_window_comm(sig));                      \
    const int lead = pld_block_idx(k) == 0;                                    \
    const pld_tensor none = {0};                                               \
    int32_t gen = 0;                                                           \
    if (mode & MODE_PACKED) {                                                  \
      if (lead)                                                                \
        copy_all(k, none, pld_local(tgt), SENTINEL);                           \
      comm_block_sync(k, bsig, me, &gen);                                      \
      if (pld_all_to_all_packed(k, pin, scnt, tgt, o_pc, sig))                 \
        return;                                                                \
      comm_block_sync(k, bsig, me, &gen);                                      \
      if (lead)                                                                \
        copy_all(k, pld_local(tgt), o_tgt, 0);                                 \
    }                                                                          \
    for (int32_t i = 0; i < reps && (mode & MODE_EP); i++) {                   \
      if (lead) {                                                              \
        copy_all(k, none, pld_local(rx), SENTINEL);                            \
        copy_all(k, none, pld_local(meta), SENTINEL);                          \
        copy_all(k, none, pld_local(rw), SENTINEL);                            \
      }                                                                        \
      comm_block_sync(k, bsig, me, &gen);                                      \
      if ((mode & MODE_MIX) && me == 1                                         \
              ? pld_all_to_all_packed(k, pin, scnt, tgt, o_pc, sig)            \
              : pld_ep_dispatch(k, x, idx, wt, experts, rx, meta, rw, o_rc,    \
                                sig))                                          \
        return;                                                                \
      comm_block_sync(k, bsig, me, &gen);                                      \
      const pld_tensor eout = expert_out(mode, me, ebuf, rx, tgt);             \
      if (lead) {                                                              \
        copy_all(k, pld_local(rx), o_rx, 0);                                   \
        experts_compute(k, pld_local(rx), o_rc, eout, me);                     \
      }                                                                        \
      if (lead && (mode & MODE_MISCOUNT) && me == 1)                           \
        pld_write(k, o_rc, PLD_AT(0), pld_read(k, o_rc, PLD_AT(0)) + 1);       \
      comm_block_sync(k, bsig, me, &gen);                                      \
      if (pld_ep_combine(k, eout, pld_local(meta), o_rc, idx, wt, stage,       \
                         o_out, sig))                                          \
        return;                                                                \
      comm_block_sync(k, bsig, me, &gen);                                      \
    }                                                                          \
    if (lead && (mode & MODE_EP)) {                                            \
      copy_all(k, pld_local(meta), o_meta, 0);                                 \
      copy_all(k, pld_local(rw), o_rw, 0);                                     \
    }                                                                          \
    comm_block_sync(k, bsig, me, &gen);                                        \
    if (lead)                                                                  \
      copy_all(k, pld_local(sig), o_sig, 0);                                   \
  }                                                                            \
  PLD_CUBE_KERNEL(k_cube_##DT, k, KERNEL_PARAMS(DT),                           \
                  PLD_INOUT(ebuf, DT, CAP, H), OUT_PARAMS(DT), SCALARS) {      \
    pld_ep_combine(k, ebuf, pld_local(meta), o_rc, idx, wt, stage, o_out,      \
                   sig);                                                       \
  }                                                                            \
  PLD_DEVICE(d_ep_##DT, cpu, KERNEL_PARAMS(DT), OUT_PARAMS(DT), SCALARS,       \
             PLD_SCALAR(blocks, INT32)) {                                      \
    pld_tensor ebuf =                                                          \
        pld_device_alloc(cpu, PLD_##DT,                                        \
                         PLD_SHAPE(pld_tensor_dim(pld_local(rx), 0),           \
                                   pld_tensor_dim(pld_local(rx), 1)));         \
    if (mode & MODE_CUBE)                                                      \
      pld_launch(cpu, k_cube_##DT, blocks, x, idx, wt, pin, scnt, rx, meta,    \
                 rw, stage, tgt, sig, bsig, ebuf, o_rx, o_meta, o_rw, o_rc,    \
                 o_out, o_tgt, o_pc, o_sig, experts, mode, reps);              \
    else                                                                       \
      pld_launch(cpu, k_ep_##DT, blocks, x, idx, wt, pin, scnt, rx, meta, rw,  \
                 stage, tgt, sig, bsig, ebuf, o_rx, o_meta, o_rw, o_rc, o_out, \
                 o_tgt, o_pc, o_sig, experts, mode, reps);                     \
  }                                                                            \
  PLD_HOST(h_ep_##DT, h, PLD_IN(x, DT, NR, T, H),                              \
           PLD_IN(idx, INT32, NR, T, K), PLD_IN(wt, FP32, NR, T, K),           \
           PLD_IN(pin, DT, NR, N, H), PLD_IN(scnt, INT32, NR, NR),             \
           PLD_OUT(o_rx, DT, NR, CAP, H), PLD_OUT(o_meta, INT32, NR, CAP, 4),  \
           PLD_OUT(o_rw, FP32, NR, CAP), PLD_OUT(o_rc, INT32, NR, L),          \
           PLD_OUT(o_out, DT, NR, T, H), PLD_OUT(o_tgt, DT, NR, CAP, H),       \
           PLD_OUT(o_pc, INT32, NR, NR), PLD_OUT(o_sig, INT32, NR, NS),        \
           SCALARS, PLD_SCALAR(blocks, INT32)) {                               \
    const int n = pld_world_size(h);                                           \
    const pld_dtype dt = PLD_##DT;                                             \
    const int64_t t = pld_tensor_dim(x, 1), h_ = pld_tensor_dim(x, 2);         \
    const int64_t kk = pld_tensor_dim(idx, 2);                                 \
    const int64_t cap = pld_tensor_dim(o_rx, 1);                               \
    const int64_t ns = pld_tensor_dim(o_sig, 1);                               \
    pld_window_buf rx = pld_window_alloc_shape(h, dt, PLD_SHAPE(cap, h_));     \
    pld_window_buf meta =                                                      \
        pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(cap, 4));               \
    pld_window_buf rw = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(cap));   \
    pld_window_buf stage =                                                     \
        pld_window_alloc_shape(h, dt, PLD_SHAPE(t * kk, h_));                  \
    pld_window_buf tgt = pld_window_alloc_shape(h, dt, PLD_SHAPE(cap, h_));    \
    pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));  \
    pld_window_buf bsig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));  \
    for (int q = 0; q < n; q++)                                                \
      pld_dispatch(h, d_ep_##DT, q, pld_slice(h, x, q), pld_slice(h, idx, q),  \
                   pld_slice(h, wt, q), pld_slice(h, pin, q),                  \
                   pld_slice(h, scnt, q),                                      \
                   pld_window_view(h, rx, dt, PLD_SHAPE(cap, h_)),             \
                   pld_window_view(h, meta, PLD_INT32, PLD_SHAPE(cap, 4)),     \
                   pld_window_view(h, rw, PLD_FP32, PLD_SHAPE(cap)),           \
                   pld_window_view(h, stage, dt, PLD_SHAPE(t *kk, h_)),        \
                   pld_window_view(h, tgt, dt, PLD_SHAPE(cap, h_)),            \
                   pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),          \
                   pld_window_view(h, bsig, PLD_INT32, PLD_SHAPE(1)),          \
                   pld_slice(h, o_rx, q), pld_slice(h, o_meta, q),             \
                   pld_slice(h, o_rw, q), pld_slice(h, o_rc, q),               \
                   pld_slice(h, o_out, q), pld_slice(h, o_tgt, q),             \
                   pld_slice(h, o_pc, q), pld_slice(h, o_sig, q), experts,     \
                   mode, reps, blocks);                                        \
  }

DEFINE_PROGRAM(FP32)
DEFINE_PROGRAM(BF16)

/* ---- running a case ------------------------------------------------------ */

struct ep_run {
  pld_tensor x, idx, wt, pin, scnt;
  pld_tensor o_rx, o_meta, o_rw, o_rc, o_out, o_tgt, o_pc, o_sig;
  pld_program *prog;
  int64_t ns;
};

static pld_tensor make(pld_dtype dt, int ndim, const int64_t *shape) {
  return comm_tensor(dt, ndim, shape);
}

static void run_build(struct ep_run *r, const struct ep_case *c) {
  const int64_t p = c->p, t = c->t, h = c->h, k = c->k, cap = c->cap;
  const int64_t l = c->e / c->p, n = c->n;
  r->ns = PLD_SIGNAL_CELLS(c->p, c->blocks);
  r->x = make(c->dt, 3, (int64_t[]){p, t, h});
  r->idx = make(PLD_INT32, 3, (int64_t[]){p, t, k});
  r->wt = make(PLD_FP32, 3, (int64_t[]){p, t, k});
  r->pin = make(c->dt, 3, (int64_t[]){p, n, h});
  r->scnt = make(PLD_INT32, 2, (int64_t[]){p, p});
  r->o_rx = make(c->dt, 3, (int64_t[]){p, cap, h});
  r->o_meta = make(PLD_INT32, 3, (int64_t[]){p, cap, 4});
  r->o_rw = make(PLD_FP32, 2, (int64_t[]){p, cap});
  r->o_rc = make(PLD_INT32, 2, (int64_t[]){p, l});
  r->o_out = make(c->dt, 3, (int64_t[]){p, t, h});
  r->o_tgt = make(c->dt, 3, (int64_t[]){p, cap, h});
  r->o_pc = make(PLD_INT32, 2, (int64_t[]){p, p});
  r->o_sig = make(PLD_INT32, 2, (int64_t[]){p, r->ns});
  put_floats(r->x, c->x, p * t * h);
  put_floats(r->pin, c->pin, p * n * h);
  memcpy(pld_tensor_data(r->wt), c->w, (size_t)(p * t * k) * sizeof(float));
  memcpy(pld_tensor_data(r->idx), c->idx,
         (size_t)(p * t * k) * sizeof(int32_t));
  memcpy(pld_tensor_data(r->scnt), c->scnt, (size_t)(p * p) * sizeof(int32_t));
  pld_config cfg = comm_config(c->p);
  int32_t experts = c->e, mode = c->mode, reps = c->reps, blocks = c->blocks;
  assert_ok(
      pld_compile(c->dt == PLD_FP32 ? h_ep_FP32 : h_ep_BF16, &cfg,
                  PLD_ARGS(r->x, r->idx, r->wt, r->pin, r->scnt, r->o_rx,
                           r->o_meta, r->o_rw, r->o_rc, r->o_out, r->o_tgt,
                           r->o_pc, r->o_sig, experts, mode, reps, blocks),
                  &r->prog));
}

static int run_exec(struct ep_run *r, const struct ep_case *c) {
  int32_t experts = c->e, mode = c->mode, reps = c->reps, blocks = c->blocks;
  return pld_program_run(
      r->prog, PLD_ARGS(r->x, r->idx, r->wt, r->pin, r->scnt, r->o_rx,
                        r->o_meta, r->o_rw, r->o_rc, r->o_out, r->o_tgt,
                        r->o_pc, r->o_sig, experts, mode, reps, blocks));
}

static void run_free(struct ep_run *r) {
  pld_program_destroy(r->prog);
  pld_tensor all[] = {r->x,     r->idx,    r->wt,   r->pin,  r->scnt,
                      r->o_rx,  r->o_meta, r->o_rw, r->o_rc, r->o_out,
                      r->o_tgt, r->o_pc,   r->o_sig};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    pld_tensor_destroy(all[i]);
}

/* Every output of every rank against the reference. */
static void run_check(const struct ep_run *r, const struct ep_case *c,
                      const struct ep_ref *ref) {
  const int p = c->p, l = c->e / p, cap = c->cap, h = c->h, t = c->t;
  const int32_t *meta = pld_tensor_data(r->o_meta);
  const int32_t *rc = pld_tensor_data(r->o_rc), *pc = pld_tensor_data(r->o_pc);
  const float *rw = pld_tensor_data(r->o_rw);
  const int32_t *sig = pld_tensor_data(r->o_sig);
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
        expect_float("recv_x", q, i, get_float(r->o_rx, q * cap * h + i),
                     ref->rx[q * cap * h + i]);
      for (int64_t i = 0; i < (int64_t)t * h; i++)
        expect_float("out (combined)", q, i, get_float(r->o_out, q * t * h + i),
                     ref->out[q * t * h + i]);
    }
    if (c->mode & MODE_PACKED) {
      for (int64_t i = 0; i < p; i++)
        expect_int("recv_counts (packed)", q, i, pc[q * p + i],
                   ref->pc[q * p + i]);
      for (int64_t i = 0; i < (int64_t)cap * h; i++)
        expect_float("target (packed)", q, i,
                     get_float(r->o_tgt, q * cap * h + i),
                     ref->tgt[q * cap * h + i]);
    }
    /* Each lane's credits and counts, and cells 2P+1 to 2P+3, are zero
     * again; cell 2P counts the lane's calls. */
    const int64_t lane = PLD_SIGNAL_LANE_CELLS(p);
    const int calls =
        (c->mode & MODE_PACKED ? 1 : 0) + (c->mode & MODE_EP ? 2 * c->reps : 0);
    for (int b = 0; b < c->blocks; b++) {
      const int32_t *cells = sig + q * r->ns + b * lane;
      for (int i = 0; i < 2 * p + 4; i++)
        expect_int("signal cell", q, b * lane + i, cells[i],
                   i == 2 * p ? calls : 0);
    }
  }
}

/* The outputs, to compare runs bit for bit. */
static unsigned char *outputs_copy(const struct ep_run *r, size_t *size) {
  const pld_tensor t[] = {r->o_rx,  r->o_meta, r->o_rw, r->o_rc,
                          r->o_out, r->o_tgt,  r->o_pc};
  size_t n = 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    n +=
        (size_t)pld_tensor_numel(t[i]) * pld_dtype_size(pld_tensor_dtype(t[i]));
  unsigned char *buf = malloc(n), *at = buf;
  assert_non_null(buf);
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    size_t m =
        (size_t)pld_tensor_numel(t[i]) * pld_dtype_size(pld_tensor_dtype(t[i]));
    memcpy(at, pld_tensor_data(t[i]), m);
    at += m;
  }
  *size = n;
  return buf;
}

/* Runs the case twice, checking both runs and that they agree bitwise. */
static void case_run(const struct ep_case *c) {
  struct ep_ref ref;
  ref_build(c, &ref);
  struct ep_run r;
  run_build(&r, c);
  unsigned char *first = NULL;
  size_t size = 0;
  for (int i = 0; i < 2; i++) {
    /* Outputs scribbled over between runs: each run writes them all. */
    memset(pld_tensor_data(r.o_out), 0x5a,
           (size_t)pld_tensor_numel(r.o_out) *
               pld_dtype_size(pld_tensor_dtype(r.o_out)));
    assert_ok(run_exec(&r, c));
    run_check(&r, c, &ref);
    size_t n;
    unsigned char *now = outputs_copy(&r, &n);
    if (first) {
      assert_int_equal(n, size);
      assert_memory_equal(now, first, n);
      free(now);
    } else {
      first = now, size = n;
    }
  }
  free(first);
  run_free(&r);
  ref_free(&ref);
}

/* Runs a case expected to fail with `status` and the message parts. */
static void case_fails(const struct ep_case *c, int status, const char *a,
                       const char *b) {
  struct ep_run r;
  run_build(&r, c);
  assert_fails_with(run_exec(&r, c), status, a, b);
  run_free(&r);
}

/* ---- the cases ----------------------------------------------------------- */

static void random_cases_mode(pld_dtype dt, int blocks, int mode) {
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    rng_state = (uint64_t)(p * 100 + blocks);
    case_random_both(&c, dt, p);
    c.blocks = blocks;
    c.mode |= mode;
    case_run(&c);
    case_free(&c);
  }
}

static void random_cases(pld_dtype dt, int blocks) {
  random_cases_mode(dt, blocks, 0);
}

static void test_dispatch_combine_fp32(void **state) {
  (void)state;
  random_cases(PLD_FP32, 1);
}

static void test_dispatch_combine_bf16(void **state) {
  (void)state;
  random_cases(PLD_BF16, 1);
}

static void test_dispatch_combine_two_blocks(void **state) {
  (void)state;
  random_cases(PLD_FP32, 2);
  random_cases(PLD_BF16, 2);
}

/* The experts' outputs in a window, the same view on every rank: the
 * ranks read each other's in place (pld/ep.h); and the same where ranks 1
 * and 2 pass other tensors, so that pairs of ranks read in place and
 * others write into the stage in one call. */
static void test_combine_in_place(void **state) {
  (void)state;
  for (int blocks = 1; blocks <= 2; blocks++) {
    random_cases_mode(PLD_FP32, blocks, MODE_IN_PLACE);
    random_cases_mode(PLD_BF16, blocks, MODE_IN_PLACE | MODE_ASKEW);
  }
  /* 250 experts leave the entry room to say where expert_out lies, 252
   * do not (the ranks write into the stage), 256 is the most there are. */
  static const int most[] = {250, 252, PLD_EP_MAX_EXPERTS};
  for (size_t i = 0; i < sizeof most / sizeof most[0]; i++) {
    struct ep_case c;
    rng_state = (uint64_t)most[i];
    case_init(&c, PLD_FP32, 2, most[i], 40, 8, 4);
    case_random(&c);
    c.cap = ref_max_total(&c);
    c.mode = MODE_EP | MODE_IN_PLACE;
    case_run(&c);
    case_free(&c);
  }
}

/* Rank 0 sends nothing (every slot masked) and rank P-1 receives nothing
 * (no token chooses its experts); then every token of every rank chooses
 * expert 1 alone, whose rank receives everything. */
static void test_zero_counts_and_one_expert(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    case_init(&c, PLD_FP32, p, 2 * p, 6, 8, 2);
    rng_state = 7;
    case_random(&c);
    case_route_around(&c);
    c.cap = ref_max_total(&c) + 1;
    assert_int_equal(ref_total(&c, p - 1), 0);
    case_run(&c);
    case_all_to_expert_1(&c);
    c.cap = ref_max_total(&c);
    assert_int_equal(ref_total(&c, 0), p * c.t);
    case_run(&c);
    case_free(&c);
  }
}

/* Capacity exactly the largest receiver's rows passes; one less fails on
 * every rank, naming the receiver, its rows and the capacity. */
static void test_capacity(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    struct ep_case c;
    case_init(&c, PLD_BF16, p, 2 * p, 7, 16, 2);
    rng_state = 11 + (uint64_t)p;
    case_random(&c);
    int at;
    const int most = ref_busiest(&c, &at);
    c.cap = most;
    case_run(&c);
    c.cap = most - 1;
    char line[200];
    snprintf(line, sizeof line,
             "rank %d would receive %d rows (tokens times their slots "
             "choosing its experts), more than the %d rows of window 'rx'",
             at, most, most - 1);
    case_fails(&c, PLD_ERR_BOUNDS, "pld_ep_dispatch: kernel k_ep_BF16", line);
    case_free(&c);
  }
}

/* An expert index of E fails naming the token, slot and value; a negative
 * one other than -1 is a masked slot. */
static void test_bad_expert(void **state) {
  (void)state;
  const int p = 3;
  if (!comm_world_fits(p))
    skip();
  struct ep_case c;
  case_init(&c, PLD_FP32, p, 6, 4, 8, 3);
  rng_state = 5;
  case_random(&c);
  c.idx[(1 * c.t + 2) * c.k + 1] = -7;
  c.cap = ref_max_total(&c);
  case_run(&c);
  c.idx[(1 * c.t + 2) * c.k + 1] = 6;
  c.cap = c.t * c.k * p;
  case_fails(&c, PLD_ERR_BOUNDS, "pld_ep_dispatch: kernel k_ep_FP32 (rank 1",
             "topk_idx[2, 1] (token 2, slot 1) is 6: expected an expert in "
             "[0, 6), or a negative index for none");
  case_free(&c);
}

/* The packed all-to-all-v alone: random counts with zeros; a total of
 * exactly its capacity; one row more fails on every rank; a rank's counts
 * summing to exactly its input's rows; a negative count and counts beyond
 * the input fail on their rank. */
static void test_packed(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    for (int b = 1; b <= 2; b++) {
      struct ep_case c;
      case_init(&c, b == 1 ? PLD_FP32 : PLD_BF16, p, p, 2, 8, 1);
      rng_state = 31 + (uint64_t)(p * b);
      case_random(&c);
      c.mode = MODE_PACKED;
      c.blocks = b;
      c.n = 8; /* sum of a row: at most N */
      case_packed_counts(&c);
      int at;
      const int most = packed_busiest(&c, &at);
      c.cap = most; /* exactly at the limit */
      case_run(&c);
      c.cap = most - 1;
      if (c.cap >= 1) {
        char line[200];
        snprintf(line, sizeof line,
                 "rank %d would receive %d rows (the sum of every rank's "
                 "count), more than the %d rows of window 'tgt'",
                 at, most, most - 1);
        case_fails(&c, PLD_ERR_BOUNDS, "pld_all_to_all_packed: kernel k_ep_",
                   line);
      }
      /* The last rank sends every row of its input, to rank 0: its counts
       * sum to exactly its rows. */
      for (int d = 0; d < p; d++)
        c.scnt[(p - 1) * p + d] = d == 0 ? (int32_t)c.n : 0;
      c.cap = packed_busiest(&c, &at);
      case_run(&c);
      c.cap = c.n * p + 1;
      c.scnt[(p - 1) * p + 0] = -1;
      char line[160];
      snprintf(line, sizeof line, "(rank %d", p - 1);
      case_fails(&c, PLD_ERR_BOUNDS, line,
                 "send_counts[0] is -1: expected a count >= 0");
      c.scnt[(p - 1) * p + 0] = c.n + 1;
      case_fails(&c, PLD_ERR_BOUNDS, line, "send_counts sum to");
      case_free(&c);
    }
  }
}

/* Rank 1 calls pld_all_to_all_packed where the others call
 * pld_ep_dispatch: every rank fails with PLD_ERR_MISMATCH naming each
 * rank's call, instead of hanging or moving rows. */
static void test_mismatch(void **state) {
  (void)state;
  const int p = 3;
  if (!comm_world_fits(p))
    skip();
  struct ep_case c;
  case_init(&c, PLD_FP32, p, 6, 4, 8, 2);
  rng_state = 9;
  case_random(&c);
  c.cap = c.t * c.k * p;
  c.mode = MODE_EP | MODE_MIX;
  case_fails(&c, PLD_ERR_MISMATCH,
             "rank 1: pld_all_to_all_packed(FP32, 192 elements in 24 rows, 1 "
             "block)",
             "rank 2: pld_ep_dispatch(FP32, 192 elements, 6 experts, 1 "
             "block)");
  case_free(&c);
}

/* Arguments refused on the calling rank, naming what they expected: an
 * expert count that is no multiple of the ranks; a combine whose
 * recv_counts are not the dispatch's; combine on a cube core. */
static void test_refusals(void **state) {
  (void)state;
  const int p = 3;
  if (!comm_world_fits(p))
    skip();
  struct ep_case c;
  case_init(&c, PLD_FP32, p, 7, 4, 8, 2);
  rng_state = 13;
  case_random(&c);
  c.cap = c.t * c.k * p;
  case_fails(&c, PLD_ERR_ARG, "pld_ep_dispatch: kernel k_ep_FP32 (rank ",
             "experts is 7: expected a multiple of the domain's 3 ranks from "
             "3 to 255 (PLD_EP_MAX_EXPERTS)");
  c.e = 6;
  case_random(&c);
  c.mode = MODE_EP | MODE_MISCOUNT;
  case_fails(&c, PLD_ERR_ARG, "pld_ep_combine: kernel k_ep_FP32 (rank 1",
             "but the ranks' topk_idx route ");
  c.mode = MODE_CUBE;
  case_fails(&c, PLD_ERR_LEVEL, "pld_ep_combine: kernel k_cube_FP32 (rank ",
             "runs on vector cores (PLD_KERNEL)");
  case_free(&c);
}

/* Rows a fabric operation moved, counted in its debug log: those that
 * each `what` ("write", "view") of buffer #buf of rank d moved, into
 * got[d] (runs of rows of `row` bytes: one line each). */
struct logged {
  const char *what;
  int buf, row;
  int *got;
};

/* The debug log's file: PLD_DEBUG_FILE is opened once per process, so
 * the tests share one, each reading what its run added. */
static char debug_log[] = "/tmp/pld_test_ep_XXXXXX";

static void debug_log_remove(void) { unlink(debug_log); }

/* Runs case c once with the fabric's debug log on (PLD_DEBUG=fabric) and
 * counts n kinds of rows in what the run logged. */
static void rows_logged(const struct ep_case *c, struct logged *q, int n) {
  if (!getenv("PLD_DEBUG_FILE")) {
    int fd = mkstemp(debug_log);
    assert_true(fd >= 0);
    close(fd);
    atexit(debug_log_remove);
    setenv("PLD_DEBUG_FILE", debug_log, 1);
  }
  FILE *f = fopen(getenv("PLD_DEBUG_FILE"), "r");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  setenv("PLD_DEBUG", "fabric", 1);
  struct ep_run r;
  run_build(&r, c);
  assert_ok(run_exec(&r, c));
  unsetenv("PLD_DEBUG");
  char line[512];
  while (fgets(line, sizeof line, f))
    for (int i = 0; i < n; i++) {
      char want[64];
      snprintf(want, sizeof want, "fabric: %s buffer #%d of rank ", q[i].what,
               q[i].buf);
      const char *at = strstr(line, want);
      int d;
      size_t off, bytes;
      if (at &&
          sscanf(at + strlen(want), "%d at %zu: %zu", &d, &off, &bytes) == 3 &&
          bytes % (size_t)q[i].row == 0 && d >= 0 && d < c->p)
        q[i].got[d] += (int)(bytes / (size_t)q[i].row);
    }
  fclose(f);
  run_free(&r);
}

/* Each token travels once to each rank holding any of its experts: the
 * rows of x written into recv_x (buffer #0: the host allocates it first)
 * of each rank are the (source rank, token) pairs with an expert there,
 * from other ranks (a rank's rows for itself are copied, not sent),
 * though tokens choose two experts of one rank and one expert in two
 * slots. */
static void test_token_travels_once(void **state) {
  (void)state;
  const int p = 3;
  if (pld_process_count() > 1)
    skip(); /* one log per process: the in-process fabric counts here */
  struct ep_case c;
  case_init(&c, PLD_FP32, p, 4 * p, 8, 24, 4);
  rng_state = 21;
  case_random(&c);
  add_doubles(&c);
  c.cap = ref_max_total(&c);
  c.reps = 1;
  const int l = 4;
  int want[3] = {0, 0, 0}, doubled = 0;
  for (int s = 0; s < p; s++)
    for (int t = 0; t < c.t; t++)
      for (int d = 0; d < p; d++) {
        int slots = 0;
        for (int j = 0; j < c.k; j++) {
          const int32_t e = c.idx[(s * c.t + t) * c.k + j];
          slots += e >= 0 && e / l == d;
        }
        want[d] += slots > 0 && s != d;
        doubled += slots > 1 && s != d;
      }
  assert_true(doubled > 0 && want[0] > 0 && want[1] > 0 && want[2] > 0);
  int got[3] = {0, 0, 0};
  rows_logged(&c, &(struct logged){"write", 0, c.h * 4, got}, 1);
  for (int d = 0; d < p; d++)
    expect_int("rows of x written into recv_x", d, 0, got[d], want[d]);
  case_free(&c);
}

/* Who moves the experts' rows in a combine: at 4 ranks, ranks 0 and 3
 * pass recv_x (buffer #0) as expert_out and read each other's rows there
 * in place; rank 1 passes a device allocation and rank 2 another window,
 * so every pair with rank 1 or 2 has the rows written into its stage
 * (buffer #3).  Rows counted in the fabric's log: written into each
 * rank's stage, and read in place from each rank's recv_x. */
static void test_combine_who_moves_rows(void **state) {
  (void)state;
  const int p = 4, l = 2;
  if (pld_process_count() > 1 || !comm_world_fits(p))
    skip(); /* one log per process: the in-process fabric counts here */
  struct ep_case c;
  case_init(&c, PLD_FP32, p, l * p, 8, 24, 3);
  rng_state = 23;
  case_random(&c);
  add_doubles(&c);
  c.cap = ref_max_total(&c);
  c.reps = 1;
  c.mode = MODE_EP | MODE_IN_PLACE | MODE_ASKEW;
  int written[4] = {0}, viewed[4] = {0}, got_w[4] = {0}, got_v[4] = {0};
  for (int s = 0; s < p; s++) /* the rows of s's routes to o's experts */
    for (int t = 0; t < c.t; t++)
      for (int j = 0; j < c.k; j++) {
        const int32_t e = c.idx[(s * c.t + t) * c.k + j], o = e / l;
        if (e < 0 || o == s)
          continue;
        if (o == 1 || o == 2 || s == 1 || s == 2)
          written[s]++;
        else
          viewed[o]++;
      }
  assert_true(viewed[0] > 0 && viewed[3] > 0 && written[1] > 0);
  struct logged q[2] = {{"write", 3, c.h * 4, got_w},
                        {"view", 0, c.h * 4, got_v}};
  rows_logged(&c, q, 2);
  for (int d = 0; d < p; d++) {
    expect_int("rows written into the stage", d, 0, got_w[d], written[d]);
    expect_int("rows of recv_x read in place", d, 0, got_v[d], viewed[d]);
  }
  case_free(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dispatch_combine_fp32),
    cmocka_unit_test(test_dispatch_combine_bf16),
    cmocka_unit_test(test_dispatch_combine_two_blocks),
    cmocka_unit_test(test_combine_in_place),
    cmocka_unit_test(test_zero_counts_and_one_expert),
    cmocka_unit_test(test_capacity),
    cmocka_unit_test(test_bad_expert),
    cmocka_unit_test(test_packed),
    cmocka_unit_test(test_mismatch),
    cmocka_unit_test(test_refusals),
    cmocka_unit_test(test_token_travels_once),
    cmocka_unit_test(test_combine_who_moves_rows),
};

PLD_TEST_MAIN("comm_ep", tests)
