/* Collectives in kernels, checked as a demanding user checks them: every
 * collective, allreduce mode, reduction op and dtype, over 1 to 8 ranks
 * (and 64), on 1 to 3 blocks, with lengths around the rank count and
 * around the implementation's reduction group; every result compared bit
 * for bit with a C reference that follows the contract of pld/collective.h
 * (the reduction order of each mode, FP16/BF16 reduced in FP32, integers
 * wrapping, NaN propagating), on every rank and on two runs of the same
 * program; calls back to back, mixed and in loops on one signal window,
 * whose credit and count cells must be zero again afterwards, as the
 * header promises; a domain that is not the world.
 *
 * One program per dtype (a PLD_KERNEL's signature fixes its dtype) runs a
 * plan: a list of calls, each with the input set it stages and the output
 * row it records its result in, so that one run checks dozens of calls. */
#include "comm_test.h"

/* Elements the implementation reduces at a time (src/comm/coll_lane.c):
 * lengths of one group plus one element end in a ragged last group. */
enum { GROUP = 8192 };

/* ---- the program --------------------------------------------------------- */

PLD_DYNAMIC(ND);    /* ranks of the windows' domain (NR: of the world) */
PLD_DYNAMIC(NX);    /* input sets */
PLD_DYNAMIC(LA);    /* elements of allreduce and broadcast data */
PLD_DYNAMIC(L);     /* elements of a row of the [P, L] matrices */
PLD_DYNAMIC(NV);    /* rows of all-to-all-v data: P * MAX */
PLD_DYNAMIC(CV);    /* columns of all-to-all-v data */
PLD_DYNAMIC(NSTEP); /* calls of the plan */
PLD_DYNAMIC(NYA);   /* recorded allreduce and broadcast results */
PLD_DYNAMIC(NYM);   /* recorded allgather, reduce-scatter, all-to-all ones */
PLD_DYNAMIC(NYV);   /* recorded all-to-all-v ones */
PLD_DYNAMIC(NS);    /* signal cells */

enum {
  K_NONE,
  K_ALLREDUCE,
  K_BROADCAST,
  K_ALLGATHER,
  K_REDUCE_SCATTER,
  K_ALL_TO_ALL,
  K_ALL_TO_ALL_V,
  K_BARRIER
};

/* A call of the plan: the collective and its arguments; `variant` picks a
 * plain tensor (0) or pld_local of a window (1) for allgather's stage and
 * all-to-all's input; `set` the input set staged; `rec` the row of the
 * output tensor of its kind that receives the result. */
enum { F_KIND, F_OP, F_MODE, F_ROOT, F_VARIANT, F_SET, F_REC, NF };

/* What the targets hold before each call, so that rows a call must not
 * write are seen to be left as they were. */
#define SENTINEL (-7.0)

/* Inputs (In), windows, plain device tensors (InOut), outputs (Out). */
struct prog {
  pld_tensor xa, xm, xv, counts, plan;
  pld_window a, s, w, t, tv, sig, bsig;
  pld_tensor p, ps, pv, sc, rcnt;
  pld_tensor ya, ym, yv, rc;
};

/* A tensor as a matrix: rows (all dimensions but the last) and columns. */
static int64_t mat_cols(pld_tensor t) {
  return pld_tensor_dim(t, pld_tensor_ndim(t) - 1);
}
static int64_t mat_rows(pld_tensor t) {
  return pld_tensor_numel(t) / mat_cols(t);
}

/* This block's columns of n: the blocks of the launch split them. */
static void block_share(pld_core k, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t b = pld_block_idx(k), c = pld_block_num(k);
  *lo = n * b / c;
  *hi = n * (b + 1) / c;
}

enum { COPY_CHUNK = 4096 };

/* dst rows [dr, dr + rows) = src rows [sr, sr + rows), this block's share
 * of the columns (both have as many). */
static void copy_rows(pld_core k, pld_tensor src, int64_t sr, pld_tensor dst,
                      int64_t dr, int64_t rows) {
  int64_t lo, hi;
  block_share(k, mat_cols(dst), &lo, &hi);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c0 = lo; c0 < hi; c0 += COPY_CHUNK) {
      int32_t n = (int32_t)(hi - c0 < COPY_CHUNK ? hi - c0 : COPY_CHUNK);
      pld_tile *tl = pld_load(k, src, sr + r, c0, 1, n);
      pld_store(k, tl, dst, dr + r, c0);
      pld_tile_free(k, tl);
    }
}

/* Every element of dst = v, this block's share of the columns. */
static void fill(pld_core k, pld_tensor dst, double v) {
  int64_t lo, hi;
  block_share(k, mat_cols(dst), &lo, &hi);
  for (int64_t r = 0; r < mat_rows(dst); r++)
    for (int64_t c0 = lo; c0 < hi; c0 += COPY_CHUNK) {
      int32_t n = (int32_t)(hi - c0 < COPY_CHUNK ? hi - c0 : COPY_CHUNK);
      pld_tile *tl = pld_full(k, pld_tensor_dtype(dst), 1, n, v);
      pld_store(k, tl, dst, r, c0);
      pld_tile_free(k, tl);
    }
}

/* A call's inputs from input set f[F_SET]; its targets filled with
 * SENTINEL, its recv_counts with -1. */
static void stage(pld_core k, const struct prog *g, const int32_t *f) {
  const int64_t set = f[F_SET], nr = pld_tensor_dim(pld_local(g->w), 0);
  const int64_t nv = pld_tensor_dim(pld_local(g->tv), 0);
  switch (f[F_KIND]) {
  case K_ALLREDUCE:
  case K_BROADCAST:
    copy_rows(k, g->xa, set, pld_local(g->a), 0, 1);
    break;
  case K_ALLGATHER:
    copy_rows(k, g->xm, set * nr, f[F_VARIANT] ? pld_local(g->s) : g->ps, 0, 1);
    fill(k, pld_local(g->t), SENTINEL);
    break;
  case K_REDUCE_SCATTER:
    copy_rows(k, g->xm, set * nr, pld_local(g->w), 0, nr);
    break;
  case K_ALL_TO_ALL:
    copy_rows(k, g->xm, set * nr, f[F_VARIANT] ? pld_local(g->w) : g->p, 0, nr);
    fill(k, pld_local(g->t), SENTINEL);
    break;
  case K_ALL_TO_ALL_V:
    copy_rows(k, g->xv, set * nv, g->pv, 0, nv);
    fill(k, pld_local(g->tv), SENTINEL);
    if (pld_block_idx(k) == 0)
      for (int64_t d = 0; d < nr; d++) {
        pld_write(k, g->sc, PLD_AT(d), pld_read(k, g->counts, PLD_AT(set, d)));
        pld_write(k, g->rcnt, PLD_AT(d), -1);
      }
    break;
  default:
    break;
  }
}

static void call(pld_core k, const struct prog *g, const int32_t *f) {
  const pld_reduce_op op = (pld_reduce_op)f[F_OP];
  switch (f[F_KIND]) {
  case K_ALLREDUCE:
    pld_allreduce(k, g->a, g->sig, op, (pld_allreduce_mode)f[F_MODE]);
    break;
  case K_BROADCAST:
    pld_broadcast(k, g->a, g->sig, f[F_ROOT]);
    break;
  case K_ALLGATHER:
    pld_allgather(k, f[F_VARIANT] ? pld_local(g->s) : g->ps, g->t, g->sig);
    break;
  case K_REDUCE_SCATTER:
    pld_reduce_scatter(k, g->w, g->sig, op);
    break;
  case K_ALL_TO_ALL:
    pld_all_to_all(k, f[F_VARIANT] ? pld_local(g->w) : g->p, g->t, g->sig);
    break;
  case K_ALL_TO_ALL_V:
    pld_all_to_all_v(k, g->pv, g->sc, g->tv, g->rcnt, g->sig);
    break;
  case K_BARRIER:
    pld_barrier(k, g->sig);
    break;
  default:
    break;
  }
}

/* The call's result into row f[F_REC] of the output of its kind. */
static void unstage(pld_core k, const struct prog *g, const int32_t *f) {
  const int64_t rec = f[F_REC], nr = pld_tensor_dim(pld_local(g->w), 0);
  const int64_t nv = pld_tensor_dim(pld_local(g->tv), 0);
  switch (f[F_KIND]) {
  case K_ALLREDUCE:
  case K_BROADCAST:
    copy_rows(k, pld_local(g->a), 0, g->ya, rec, 1);
    break;
  case K_ALLGATHER:
  case K_ALL_TO_ALL:
    copy_rows(k, pld_local(g->t), 0, g->ym, rec * nr, nr);
    break;
  case K_REDUCE_SCATTER:
    copy_rows(k, pld_local(g->w), 0, g->ym, rec * nr, nr);
    break;
  case K_ALL_TO_ALL_V:
    copy_rows(k, pld_local(g->tv), 0, g->yv, rec * nv, nv);
    if (pld_block_idx(k) == 0)
      for (int64_t d = 0; d < nr; d++)
        pld_write(k, g->rc, PLD_AT(rec, d), pld_read(k, g->rcnt, PLD_AT(d)));
    break;
  default:
    break;
  }
}

/* Every call of the plan in one kernel, on one signal window; then the
 * window as this rank holds it. */
static void run_plan(pld_core k, const struct prog *g) {
  const int32_t me = pld_rank(k, pld_window_comm(g->sig));
  /* A rank alone in a domain of its own (a split run) makes no call. */
  const int alone = pld_nranks(k, pld_window_comm(g->sig)) !=
                    pld_tensor_dim(pld_local(g->w), 0);
  int32_t gen = 0;
  for (int64_t i = 0; i < pld_tensor_dim(g->plan, 0) && !alone; i++) {
    int32_t f[NF];
    for (int j = 0; j < NF; j++)
      f[j] = (int32_t)pld_read(k, g->plan, PLD_AT(i, j));
    if (f[F_KIND] == K_NONE)
      continue;
    comm_block_sync(k, g->bsig, me, &gen); /* the last call's results are out */
    stage(k, g, f);
    comm_block_sync(k, g->bsig, me, &gen);
    call(k, g, f);
    comm_block_sync(k, g->bsig, me, &gen);
    unstage(k, g, f);
  }
}

/* The signal window's cells once every block of the plan's kernel has
 * ended (a small broadcast settles its call at its block's end at the
 * latest: pld/collective.h): launched after it, which passes the same
 * window. */
PLD_KERNEL(k_sigout, k, PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(sigout, INT32, NS)) {
  copy_rows(k, pld_local(sig), 0, sigout, 0, 1);
}

/* Parameters of the kernel and the device function, per dtype. */
#define IN_PARAMS(DT)                                                          \
  PLD_IN(xa, DT, NX, LA), PLD_IN(xm, DT, NX, ND, L),                           \
      PLD_IN(xv, DT, NX, NV, CV), PLD_IN(counts, INT32, NX, ND),               \
      PLD_IN(plan, INT32, NSTEP, NF)
#define WINDOW_PARAMS(DT)                                                      \
  PLD_WINDOW(a, DT, LA), PLD_WINDOW(s, DT, L), PLD_WINDOW(w, DT, ND, L),       \
      PLD_WINDOW(t, DT, ND, L), PLD_WINDOW(tv, DT, NV, CV),                    \
      PLD_WINDOW(sig, INT32, NS), PLD_WINDOW(bsig, INT32, 1)
#define OUT_PARAMS(DT)                                                         \
  PLD_OUT(ya, DT, NYA, LA), PLD_OUT(ym, DT, NYM, ND, L),                       \
      PLD_OUT(yv, DT, NYV, NV, CV), PLD_OUT(rc, INT32, NYV, ND)
#define HOST_OUT_PARAMS(DT)                                                    \
  PLD_OUT(ya, DT, NR, NYA, LA), PLD_OUT(ym, DT, NR, NYM, ND, L),               \
      PLD_OUT(yv, DT, NR, NYV, NV, CV), PLD_OUT(rc, INT32, NR, NYV, ND),       \
      PLD_OUT(sigout, INT32, NR, NS)

/* The kernel, device function and host orchestrator of dtype DT.  The
 * device function gives the kernel plain device tensors for what may be a
 * plain tensor (allgather's stage, all-to-all's input, the counts). */
#define DEFINE_PROGRAM(DT)                                                     \
  PLD_KERNEL(k_run_##DT, k, IN_PARAMS(DT), WINDOW_PARAMS(DT),                  \
             PLD_INOUT(p, DT, ND, L), PLD_INOUT(ps, DT, L),                    \
             PLD_INOUT(pv, DT, NV, CV), PLD_INOUT(sc, INT32, ND),              \
             PLD_INOUT(rcnt, INT32, ND), OUT_PARAMS(DT)) {                     \
    const struct prog g = {xa, xm, xv,   counts, plan, a,  s,                  \
                           w,  t,  tv,   sig,    bsig, p,  ps,                 \
                           pv, sc, rcnt, ya,     ym,   yv, rc};                \
    run_plan(k, &g);                                                           \
  }                                                                            \
  PLD_DEVICE(d_run_##DT, cpu, IN_PARAMS(DT), WINDOW_PARAMS(DT),                \
             OUT_PARAMS(DT), PLD_OUT(sigout, INT32, NS),                       \
             PLD_SCALAR(blocks, INT32)) {                                      \
    const int64_t nr = pld_tensor_dim(pld_local(w), 0);                        \
    const int64_t l = pld_tensor_dim(pld_local(w), 1);                         \
    const int64_t nv = pld_tensor_dim(pld_local(tv), 0);                       \
    const int64_t cv = pld_tensor_dim(pld_local(tv), 1);                       \
    pld_tensor p = pld_device_alloc(cpu, PLD_##DT, PLD_SHAPE(nr, l));          \
    pld_tensor ps = pld_device_alloc(cpu, PLD_##DT, PLD_SHAPE(l));             \
    pld_tensor pv = pld_device_alloc(cpu, PLD_##DT, PLD_SHAPE(nv, cv));        \
    pld_tensor sc = pld_device_alloc(cpu, PLD_INT32, PLD_SHAPE(nr));           \
    pld_tensor rcnt = pld_device_alloc(cpu, PLD_INT32, PLD_SHAPE(nr));         \
    pld_launch(cpu, k_run_##DT, blocks, xa, xm, xv, counts, plan, a, s, w, t,  \
               tv, sig, bsig, p, ps, pv, sc, rcnt, ya, ym, yv, rc);            \
    pld_launch(cpu, k_sigout, 1, sig, sigout);                                 \
  }                                                                            \
  PLD_HOST(h_run_##DT, h, PLD_IN(xa, DT, NR, NX, LA),                          \
           PLD_IN(xm, DT, NR, NX, ND, L), PLD_IN(xv, DT, NR, NX, NV, CV),      \
           PLD_IN(counts, INT32, NR, NX, ND), PLD_IN(plan, INT32, NSTEP, NF),  \
           HOST_OUT_PARAMS(DT), PLD_SCALAR(blocks, INT32),                     \
           PLD_SCALAR(split, INT32)) {                                         \
    const int n = pld_world_size(h);                                           \
    const int64_t nd = pld_tensor_dim(xm, 2), l = pld_tensor_dim(xm, 3);       \
    const int64_t la = pld_tensor_dim(xa, 2), ns = pld_tensor_dim(sigout, 1);  \
    const int64_t nv = pld_tensor_dim(xv, 2), cv = pld_tensor_dim(xv, 3);      \
    const pld_dtype dt = PLD_##DT;                                             \
    const size_t es = pld_dtype_size(dt), a_at = (size_t)(l * (int64_t)es);    \
    /* Buffers of the domain (0) and, with split, of rank 0 alone (1).         \
     * Views away from their buffer's start: s, then a, in one buffer; t       \
     * 3 elements in; sig 8 cells in. */                                       \
    pld_window_buf sa[2], w[2], t[2], tv[2], sig[2], bsig[2];                  \
    for (int g = 0; g <= (split != 0); g++) {                                  \
      sa[g] = pld_window_alloc(h, (size_t)(l + la) * es);                      \
      w[g] = pld_window_alloc_shape(h, dt, PLD_SHAPE(nd, l));                  \
      t[g] = pld_window_alloc(h, (size_t)(nd * l + 3) * es);                   \
      tv[g] = pld_window_alloc_shape(h, dt, PLD_SHAPE(nv, cv));                \
      sig[g] = pld_window_alloc(h, (size_t)(ns + 8) * 4);                      \
      bsig[g] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));            \
    }                                                                          \
    for (int q = 0; q < n; q++) {                                              \
      const int g = split && q == 0;                                           \
      pld_dispatch(                                                            \
          h, d_run_##DT, q, pld_slice(h, xa, q), pld_slice(h, xm, q),          \
          pld_slice(h, xv, q), pld_slice(h, counts, q), plan,                  \
          pld_window_view_at(h, sa[g], a_at, dt, PLD_SHAPE(la)),               \
          pld_window_view(h, sa[g], dt, PLD_SHAPE(l)),                         \
          pld_window_view(h, w[g], dt, PLD_SHAPE(nd, l)),                      \
          pld_window_view_at(h, t[g], 3 * es, dt, PLD_SHAPE(nd, l)),           \
          pld_window_view(h, tv[g], dt, PLD_SHAPE(nv, cv)),                    \
          pld_window_view_at(h, sig[g], 32, PLD_INT32, PLD_SHAPE(ns)),         \
          pld_window_view(h, bsig[g], PLD_INT32, PLD_SHAPE(1)),                \
          pld_slice(h, ya, q), pld_slice(h, ym, q), pld_slice(h, yv, q),       \
          pld_slice(h, rc, q), pld_slice(h, sigout, q), blocks);               \
    }                                                                          \
  }

DEFINE_PROGRAM(FP32)
DEFINE_PROGRAM(FP16)
DEFINE_PROGRAM(BF16)
DEFINE_PROGRAM(INT32)
DEFINE_PROGRAM(INT16)
DEFINE_PROGRAM(INT8)

/* Indexed by dtype: FP32 .. INT8 are 0 .. 5. */
static const pld_host_fn programs[] = {h_run_FP32,  h_run_FP16,  h_run_BF16,
                                       h_run_INT32, h_run_INT16, h_run_INT8};
static const pld_dtype all_dtypes[] = {PLD_FP32,  PLD_FP16,  PLD_BF16,
                                       PLD_INT32, PLD_INT16, PLD_INT8};

/* ---- the reference: elements of every dtype, written independently ------ */

/* The reference runs in this process's one thread: under TSan, watching
 * each of its accesses only costs time (the devices are what TSan is
 * for). */
#if defined(__SANITIZE_THREAD__)
#define REFERENCE __attribute__((no_sanitize_thread))
#else
#define REFERENCE
#endif

REFERENCE static int is_float(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16;
}

/* Bytes of an element of the dtypes tested. */
REFERENCE static size_t esize(pld_dtype dt) {
  return dt == PLD_INT8 ? 1 : dt == PLD_FP32 || dt == PLD_INT32 ? 4 : 2;
}

/* The bits of element i (zero-extended), and back. */
REFERENCE static uint32_t raw_get(pld_dtype dt, const void *base, int64_t i) {
  const unsigned char *p = (const unsigned char *)base;
  switch (esize(dt)) {
  case 1:
    return p[i];
  case 2: {
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return v;
  }
  default: {
    uint32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
  }
  }
}

REFERENCE static void raw_put(pld_dtype dt, void *base, int64_t i,
                              uint32_t bits) {
  unsigned char *p = (unsigned char *)base;
  size_t es = esize(dt);
  if (es == 1) {
    p[i] = (unsigned char)bits;
  } else if (es == 2) {
    uint16_t v = (uint16_t)bits;
    memcpy(p + 2 * i, &v, 2);
  } else {
    memcpy(p + 4 * i, &bits, 4);
  }
}

/* IEEE half (FP16) and bfloat16, written from the formats' definitions
 * (not from the library's conversions): decoding fills a table once;
 * encoding rounds to nearest even on the bits of the float. */
REFERENCE static float half_dec(uint32_t h, int mbits, int bias) {
  const uint32_t emax = (1u << (15 - mbits)) - 1;
  const uint32_t m = h & ((1u << mbits) - 1), e = h >> mbits & emax;
  double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
             : e == emax
                 ? (m ? NAN : INFINITY)
                 : ldexp((double)(m | 1u << mbits), (int)e - bias - mbits);
  return (float)(h >> 15 ? -v : v);
}

REFERENCE static float f_dec(pld_dtype dt, uint32_t bits) {
  static float fp16[1 << 16], bf16[1 << 16];
  static int filled;
  if (!filled) {
    for (uint32_t h = 0; h < 1u << 16; h++) {
      fp16[h] = half_dec(h, 10, 15);
      bf16[h] = half_dec(h, 7, 127);
    }
    filled = 1;
  }
  if (dt == PLD_FP16)
    return fp16[bits & 0xffff];
  if (dt == PLD_BF16)
    return bf16[bits & 0xffff];
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Drops the low `shift` bits of x, rounding to nearest even (a carry
 * into the exponent is the next binade, or infinity). */
REFERENCE static uint32_t round_bits(uint32_t x, int shift) {
  const uint32_t half = (1u << (shift - 1)) - 1;
  return (x + half + (x >> shift & 1)) >> shift;
}

REFERENCE static uint32_t f_enc(pld_dtype dt, float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (dt == PLD_FP32)
    return x;
  const uint32_t sign = x >> 16 & 0x8000, mag = x & 0x7fffffff;
  if (mag > 0x7f800000) /* NaN */
    return sign | (dt == PLD_FP16 ? 0x7e00 : 0x7fc0);
  if (dt == PLD_BF16)
    return sign | round_bits(mag, 16);
  if (mag >= 0x477ff000) /* 65520 and above: infinity */
    return sign | 0x7c00;
  if (mag < 0x38800000) /* below 2^-14: multiples of 2^-24 */
    return sign | (uint32_t)nearbyintf(fabsf(f) * 0x1p24f);
  return sign | round_bits(mag - ((127u - 15) << 23), 13);
}

REFERENCE static int32_t i_dec(pld_dtype dt, uint32_t bits) {
  if (dt == PLD_INT8)
    return (int8_t)(uint8_t)bits;
  if (dt == PLD_INT16)
    return (int16_t)(uint16_t)bits;
  return (int32_t)bits;
}

/* Two's complement: the low bits. */
REFERENCE static uint32_t i_enc(pld_dtype dt, uint32_t v) {
  size_t es = esize(dt);
  return es == 4 ? v : v & ((1u << (8 * es)) - 1);
}

REFERENCE static uint32_t enc(pld_dtype dt, double v) {
  return is_float(dt) ? f_enc(dt, (float)v) : i_enc(dt, (uint32_t)(int64_t)v);
}

REFERENCE static float f_op(int op, float a, float b) {
  switch (op) {
  case PLD_REDUCE_SUM:
    return a + b;
  case PLD_REDUCE_PROD:
    return a * b;
  case PLD_REDUCE_MAX:
    return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  default:
    return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  }
}

REFERENCE static uint32_t i_op(int op, uint32_t a, uint32_t b) {
  switch (op) {
  case PLD_REDUCE_SUM:
    return a + b;
  case PLD_REDUCE_PROD:
    return a * b;
  case PLD_REDUCE_MAX:
    return (int32_t)a > (int32_t)b ? a : b;
  default:
    return (int32_t)a < (int32_t)b ? a : b;
  }
}

/* One element reduced as the contract says: the ranks' values v[] taken
 * in the order first, first + 1, ... (mod p); floats combined in FP32
 * (FP16 and BF16 widened), rounded to the dtype once, or after every
 * combination when round_each (the ring's hops); integers wrapping. */
REFERENCE static uint32_t model(pld_dtype dt, int op, int p, const uint32_t *v,
                                int first, int round_each) {
  if (!is_float(dt)) {
    uint32_t acc = (uint32_t)i_dec(dt, v[first]);
    for (int j = 1; j < p; j++)
      acc = i_op(op, acc, (uint32_t)i_dec(dt, v[(first + j) % p]));
    return i_enc(dt, acc);
  }
  float acc = f_dec(dt, v[first]);
  for (int j = 1; j < p; j++) {
    acc = f_op(op, acc, f_dec(dt, v[(first + j) % p]));
    if (round_each)
      acc = f_dec(dt, f_enc(dt, acc));
  }
  return f_enc(dt, acc);
}

/* got is within what rounding allows of the exact (double) result. */
REFERENCE static int tolerable(pld_dtype dt, int op, int p, const uint32_t *v,
                               uint32_t got) {
  const double u = dt == PLD_FP16 ? 0x1p-11 : dt == PLD_BF16 ? 0x1p-8 : 0x1p-24;
  const double tiny = dt == PLD_FP16 ? 0x1p-24 : 0x1p-126;
  double sum = 0, mag = 0, prod = 1, hi = -INFINITY, lo = INFINITY;
  int nan = 0;
  for (int q = 0; q < p; q++) {
    double x = f_dec(dt, v[q]);
    nan |= isnan(x);
    sum += x, mag += fabs(x), prod *= x;
    hi = x > hi ? x : hi, lo = x < lo ? x : lo;
  }
  const double g = f_dec(dt, got);
  if (nan)
    return isnan(g);
  switch (op) {
  case PLD_REDUCE_SUM:
    return fabs(g - sum) <= p * u * mag + p * tiny;
  case PLD_REDUCE_PROD:
    return fabs(g - prod) <= (p + 1) * u * fabs(prod) + p * tiny;
  case PLD_REDUCE_MAX:
    return g == hi;
  default:
    return g == lo;
  }
}

REFERENCE static int same_value(pld_dtype dt, uint32_t a, uint32_t b) {
  if (is_float(dt) && isnan(f_dec(dt, a)))
    return isnan(f_dec(dt, b));
  return a == b;
}

/* ---- input sets -----------------------------------------------------------
 */

enum {
  S_EXACT,       /* integer values whose every partial sum is exact */
  S_EXACT_PROD,  /* +-1 and +-2: every partial product is exact */
  S_RANDOM,      /* floats in [-1, 1]; integers over their whole range */
  S_RANDOM_PROD, /* floats of magnitude [0.5, 2]; integers as S_RANDOM */
  S_NAN,         /* S_RANDOM with one float in eight a NaN */
  S_BIG          /* the first half of the ranks +[34000, 38850], the others
                    -[34000, 38850]: the total fits FP16, the sum of the
                    first two ranks does not */
};

REFERENCE static int exact_set(int kind) {
  return kind == S_EXACT || kind == S_EXACT_PROD;
}

/* The modulus of S_EXACT: sums of p values in [-m/2, m/2) stay below
 * where the dtype's integers are exact (FP16 2048, BF16 256). */
REFERENCE static int64_t exact_modulus(pld_dtype dt, int p) {
  int64_t lim = dt == PLD_FP16 ? 2048 : dt == PLD_BF16 ? 256 : 1 << 24;
  int64_t m = 2 * lim / p;
  return m < 97 ? m : 97;
}

static uint64_t rng_state;
REFERENCE static uint64_t rng(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
REFERENCE static double rng_unit(void) {
  return (double)(rng() >> 11) * 0x1p-53;
}

/* Element i of rank q's input set `set` of kind `kind`. */
REFERENCE static uint32_t input_value(pld_dtype dt, int kind, int p, int q,
                                      int64_t set, int64_t i) {
  static const double prod_values[] = {1, -1, 2, -2};
  const int64_t m = exact_modulus(dt, p);
  switch (kind) {
  case S_EXACT:
    return enc(dt, (double)((i * 7 + 3 * q + 5 * set) % m - m / 2));
  case S_EXACT_PROD:
    return enc(dt, prod_values[(i * 3 + q + set) % 4]);
  case S_BIG:
    return enc(dt, (q < (p + 1) / 2 ? 1 : -1) *
                       (34000.0 + (double)((i * 7 + q) % 98) * 50));
  default:
    break;
  }
  if (!is_float(dt))
    return i_enc(dt, (uint32_t)rng());
  if (kind == S_NAN && rng() % 8 == 0)
    return f_enc(dt, NAN);
  double u = rng_unit();
  if (kind == S_RANDOM_PROD)
    return f_enc(dt, (float)((rng() & 1 ? -1 : 1) * (0.5 + 1.5 * u)));
  return f_enc(dt, (float)(u == 0.5 ? 0.25 : 2 * u - 1));
}

/* ---- a plan, its tensors, its program -------------------------------- */

struct step {
  int kind, op, mode, root, variant, set, rec;
};

struct run {
  pld_dtype dt;
  int p, c;                 /* ranks of the domain, blocks */
  int world, first;         /* the domain is ranks first.. of world */
  int64_t la, l, m, cv, ns; /* lengths (see the dynamic dimensions) */
  int nx, nsteps, cap;      /* input sets, calls */
  int *set_kind;            /* [nx] */
  struct step *steps;       /* [nsteps] */
  int64_t nya, nym, nyv;    /* recorded results of each output */
  pld_tensor xa, xm, xv, counts, plan, ya, ym, yv, rc, sigout;
  /* Their data from world rank `first` on: domain rank 0's. */
  const void *dxa, *dxm, *dxv, *dya, *dym, *dyv;
  const int32_t *dcounts, *drc, *dsig;
  pld_program *prog;
};

/* A plan over p ranks on c blocks, with nx input sets (kinds from
 * kinds[], repeated), allreduce data of la elements, rows of l, and
 * all-to-all-v blocks of 3 rows; signal cells PLD_SIGNAL_CELLS(p, c). */
static void run_init(struct run *r, pld_dtype dt, int p, int c, int64_t la,
                     int64_t l, int nx, const int *kinds, int nkinds) {
  memset(r, 0, sizeof *r);
  r->dt = dt, r->p = p, r->c = c, r->la = la, r->l = l, r->m = 3;
  r->world = p;
  r->cv = l < 64 ? l : 7; /* all-to-all-v has no groups: short rows do */
  r->ns = PLD_SIGNAL_CELLS(p, c);
  r->nx = nx;
  r->set_kind = calloc((size_t)nx, sizeof *r->set_kind);
  assert_non_null(r->set_kind);
  for (int i = 0; i < nx; i++)
    r->set_kind[i] = kinds[i % nkinds];
}

static void add(struct run *r, int kind, int op, int mode, int root,
                int variant, int set) {
  if (r->nsteps == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->steps = realloc(r->steps, (size_t)r->cap * sizeof *r->steps);
    assert_non_null(r->steps);
  }
  int64_t *rec = kind == K_ALLREDUCE || kind == K_BROADCAST ? &r->nya
                 : kind == K_ALL_TO_ALL_V                   ? &r->nyv
                 : kind == K_BARRIER                        ? NULL
                                                            : &r->nym;
  struct step s = {kind, op, mode, root, variant, set, rec ? (int)(*rec)++ : 0};
  r->steps[r->nsteps++] = s;
}

static int64_t at_least_1(int64_t n) { return n > 0 ? n : 1; }

/* comm_config's scattered devices up to 16 ranks; devices 0 to p-1
 * beyond. */
static pld_config config_for(int p) {
  static int ids[128];
  if (!comm_world_fits(p))
    skip(); /* another job size runs it */
  return p <= 16 ? comm_config(p) : test_config(ids, p, 0, 1);
}

/* Makes the tensors (inputs from their set kinds, a fixed seed) and
 * compiles the program. */
REFERENCE static void run_build(struct run *r, uint64_t seed) {
  const int64_t p = r->p, nx = r->nx, nv = p * r->m, wd = r->world;
  const int64_t nya = at_least_1(r->nya), nym = at_least_1(r->nym);
  const int64_t nyv = at_least_1(r->nyv);
  const pld_dtype dt = r->dt;
  const size_t es = esize(dt);
  r->xa = comm_tensor(dt, 3, (int64_t[]){wd, nx, r->la});
  r->xm = comm_tensor(dt, 4, (int64_t[]){wd, nx, p, r->l});
  r->xv = comm_tensor(dt, 4, (int64_t[]){wd, nx, nv, r->cv});
  r->counts = comm_tensor(PLD_INT32, 3, (int64_t[]){wd, nx, p});
  r->plan = comm_tensor(PLD_INT32, 2, (int64_t[]){r->nsteps, NF});
  r->ya = comm_tensor(dt, 3, (int64_t[]){wd, nya, r->la});
  r->ym = comm_tensor(dt, 4, (int64_t[]){wd, nym, p, r->l});
  r->yv = comm_tensor(dt, 4, (int64_t[]){wd, nyv, nv, r->cv});
  r->rc = comm_tensor(PLD_INT32, 3, (int64_t[]){wd, nyv, p});
  r->sigout = comm_tensor(PLD_INT32, 2, (int64_t[]){wd, r->ns});
  const size_t f = (size_t)r->first;
  r->dxa = (char *)pld_tensor_data(r->xa) + f * (size_t)(nx * r->la) * es;
  r->dxm = (char *)pld_tensor_data(r->xm) + f * (size_t)(nx * p * r->l) * es;
  r->dxv = (char *)pld_tensor_data(r->xv) + f * (size_t)(nx * nv * r->cv) * es;
  r->dya = (char *)pld_tensor_data(r->ya) + f * (size_t)(nya * r->la) * es;
  r->dym = (char *)pld_tensor_data(r->ym) + f * (size_t)(nym * p * r->l) * es;
  r->dyv = (char *)pld_tensor_data(r->yv) + f * (size_t)(nyv * nv * r->cv) * es;
  r->dcounts = (int32_t *)pld_tensor_data(r->counts) + f * (size_t)(nx * p);
  r->drc = (int32_t *)pld_tensor_data(r->rc) + f * (size_t)(nyv * p);
  r->dsig = (int32_t *)pld_tensor_data(r->sigout) + f * (size_t)r->ns;
  rng_state = seed;
  /* Every world rank's inputs, as its domain rank's (0 outside). */
  const int64_t per[3] = {r->la, p * r->l, nv * r->cv};
  void *data[3] = {pld_tensor_data(r->xa), pld_tensor_data(r->xm),
                   pld_tensor_data(r->xv)};
  int32_t *cn = pld_tensor_data(r->counts);
  for (int q = 0; q < wd; q++) {
    const int d = q >= r->first ? q - r->first : 0;
    for (int64_t s = 0; s < nx; s++) {
      for (int x = 0; x < 3; x++)
        for (int64_t i = 0; i < per[x]; i++)
          raw_put(dt, data[x], (q * nx + s) * per[x] + i,
                  input_value(dt, r->set_kind[s], r->p, d, s, i));
      /* Counts from 0 to MAX, both ends included over the ranks. */
      for (int to = 0; to < p; to++)
        cn[(q * nx + s) * p + to] = (int32_t)((d + 2 * to + s) % (r->m + 1));
    }
  }
  int32_t *pl = pld_tensor_data(r->plan);
  for (int i = 0; i < r->nsteps; i++) {
    const struct step *st = &r->steps[i];
    const int32_t fl[NF] = {st->kind,    st->op,  st->mode, st->root,
                            st->variant, st->set, st->rec};
    memcpy(pl + i * NF, fl, sizeof fl);
  }
  pld_config cfg = config_for(r->world);
  int32_t blocks = r->c, split = r->first > 0;
  assert_ok(pld_compile(programs[dt], &cfg,
                        PLD_ARGS(r->xa, r->xm, r->xv, r->counts, r->plan, r->ya,
                                 r->ym, r->yv, r->rc, r->sigout, blocks, split),
                        &r->prog));
}

static int run_exec(struct run *r) {
  int32_t blocks = r->c, split = r->first > 0;
  return pld_program_run(r->prog, PLD_ARGS(r->xa, r->xm, r->xv, r->counts,
                                           r->plan, r->ya, r->ym, r->yv, r->rc,
                                           r->sigout, blocks, split));
}

static void run_free(struct run *r) {
  pld_program_destroy(r->prog);
  pld_tensor t[] = {r->xa, r->xm, r->xv, r->counts, r->plan,
                    r->ya, r->ym, r->yv, r->rc,     r->sigout};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    pld_tensor_destroy(t[i]);
  free(r->steps);
  free(r->set_kind);
}

/* ---- checking a run against the reference -------------------------------- */

static const char *const kind_names[] = {"none",
                                         "pld_allreduce",
                                         "pld_broadcast",
                                         "pld_allgather",
                                         "pld_reduce_scatter",
                                         "pld_all_to_all",
                                         "pld_all_to_all_v",
                                         "pld_barrier"};
static const char *const op_names[] = {"SUM", "MAX", "MIN", "PROD"};
static const char *const mode_names[] = {"auto", "mesh", "two-phase", "ring"};

/* Reports a wrong element of call si (the call, which rank and where)
 * and fails the test. */
static void step_fail(const struct run *r, int si, int q, const char *where,
                      uint32_t got, uint32_t want, const char *why) {
  const struct step *s = &r->steps[si];
  char args[64] = "";
  if (s->kind == K_ALLREDUCE)
    snprintf(args, sizeof args, "%s, %s", op_names[s->op], mode_names[s->mode]);
  else if (s->kind == K_REDUCE_SCATTER)
    snprintf(args, sizeof args, "%s", op_names[s->op]);
  else if (s->kind == K_BROADCAST)
    snprintf(args, sizeof args, "root %d", s->root);
  else
    snprintf(args, sizeof args, "variant %d", s->variant);
  print_error("call %d of the plan, %s(%s) on input set %d (kind %d), %s, "
              "%d ranks, %d blocks, %lld allreduce elements, rows of %lld: "
              "rank %d, %s: got 0x%x, expected 0x%x: %s\n",
              si, kind_names[s->kind], args, s->set, r->set_kind[s->set],
              pld_dtype_name(r->dt), r->p, r->c, (long long)r->la,
              (long long)r->l, q, where, got, want, why);
  fail();
}

/* Element [q][s][row][e] of a tensor [P, n, rows, cols] of the run's
 * dtype: the inputs (s an input set) and the results (s a record). */
REFERENCE static uint32_t el(const struct run *r, const void *base, int64_t n,
                             int64_t rows, int64_t cols, int q, int64_t s,
                             int64_t row, int64_t e) {
  return raw_get(r->dt, base, ((q * n + s) * rows + row) * cols + e);
}
#define XA(q, set, i) el(r, r->dxa, r->nx, 1, r->la, q, set, 0, i)
#define XM(q, set, row, e) el(r, r->dxm, r->nx, r->p, r->l, q, set, row, e)
#define XV(q, set, row, e)                                                     \
  el(r, r->dxv, r->nx, r->p * r->m, r->cv, q, set, row, e)
#define YA(q, rec, i) el(r, r->dya, r->nya, 1, r->la, q, rec, 0, i)
#define YM(q, rec, row, e) el(r, r->dym, r->nym, r->p, r->l, q, rec, row, e)
#define YV(q, rec, row, e)                                                     \
  el(r, r->dyv, r->nyv, r->p * r->m, r->cv, q, rec, row, e)

/* One reduced element got, element e of an allreduce's (-1: of a
 * reduce-scatter's), from the ranks' inputs v[]: exact sets give the exact
 * value whatever the order; otherwise mesh, two-phase and reduce-scatter
 * reduce in rank order and round once, the ring in ring order from rank
 * c+1 to rank c of e's chunk c (floor(c N / P) <= e < floor((c+1) N / P),
 * whatever the block count) rounding at each hop; floats stay within
 * rounding of the exact result.  Returns NULL, or what is wrong. */
REFERENCE static const char *check_reduced(const struct run *r,
                                           const struct step *s, int64_t e,
                                           const uint32_t *v, uint32_t got,
                                           uint32_t *want) {
  const pld_dtype dt = r->dt;
  *want = model(dt, s->op, r->p, v, 0, 0);
  if (!is_float(dt))
    return got == *want ? NULL : "not the wrapping integer reduction";
  if (exact_set(r->set_kind[s->set]))
    return got == *want ? NULL : "not the exact result (all partials exact)";
  if (!tolerable(dt, s->op, r->p, v, got))
    return "beyond rounding of the exact result";
  int mode = s->mode;
  if (s->kind == K_ALLREDUCE && mode == PLD_ALLREDUCE_AUTO)
    mode = pld_allreduce_auto(r->p, r->la * (int64_t)pld_dtype_size(dt));
  if (s->kind == K_REDUCE_SCATTER || mode != PLD_ALLREDUCE_RING)
    return same_value(dt, got, *want) ? NULL
                                      : "not reduced in rank order 0..P-1 "
                                        "in FP32, rounded once";
  int c = 0;
  while (!((int64_t)(c + 1) * r->la / r->p > e))
    c++;
  *want = model(dt, s->op, r->p, v, (c + 1) % r->p, 1);
  return same_value(dt, got, *want)
             ? NULL
             : "not reduced in ring order from rank c+1 to rank c of its "
               "chunk c, rounded at each hop";
}

REFERENCE static void check_allreduce(const struct run *r, int si) {
  const struct step *s = &r->steps[si];
  uint32_t v[128], want;
  char where[64];
  for (int64_t i = 0; i < r->la; i++) {
    for (int q = 0; q < r->p; q++)
      v[q] = XA(q, s->set, i);
    /* Every rank has rank 0's bits. */
    const uint32_t got = YA(0, s->rec, i);
    for (int q = 0; q < r->p; q++)
      if (YA(q, s->rec, i) != got) {
        snprintf(where, sizeof where, "element %lld", (long long)i);
        step_fail(r, si, q, where, YA(q, s->rec, i), got,
                  "differs from rank 0's bits");
      }
    const char *why = check_reduced(r, s, i, v, got, &want);
    if (why) {
      snprintf(where, sizeof where, "element %lld", (long long)i);
      step_fail(r, si, 0, where, got, want, why);
    }
  }
}

REFERENCE static void check_broadcast(const struct run *r, int si) {
  const struct step *s = &r->steps[si];
  for (int q = 0; q < r->p; q++)
    for (int64_t i = 0; i < r->la; i++) {
      uint32_t want = XA(s->root, s->set, i), got = YA(q, s->rec, i);
      if (got != want) {
        char where[64];
        snprintf(where, sizeof where, "element %lld", (long long)i);
        step_fail(r, si, q, where, got, want, "not the root's bits");
      }
    }
}

/* Allgather, reduce-scatter, all-to-all: row `row` of rank q's result. */
REFERENCE static void check_matrix(const struct run *r, int si) {
  const struct step *s = &r->steps[si];
  uint32_t v[128], want = 0;
  char where[64];
  for (int q = 0; q < r->p; q++)
    for (int row = 0; row < r->p; row++)
      for (int64_t e = 0; e < r->l; e++) {
        const uint32_t got = YM(q, s->rec, row, e);
        const char *why = NULL;
        if (s->kind == K_ALLGATHER) {
          want = XM(row, s->set, 0, e);
          why = got == want ? NULL : "not the stage of the rank of this row";
        } else if (s->kind == K_ALL_TO_ALL) {
          want = XM(row, s->set, q, e);
          why = got == want ? NULL
                            : "not row q of the input of the rank of this row";
        } else if (row != q) {
          want = XM(q, s->set, row, e);
          why = got == want ? NULL : "a row of another rank was changed";
        } else {
          for (int k = 0; k < r->p; k++)
            v[k] = XM(k, s->set, q, e);
          why = check_reduced(r, s, -1, v, got, &want);
        }
        if (why) {
          snprintf(where, sizeof where, "row %d element %lld", row,
                   (long long)e);
          step_fail(r, si, q, where, got, want, why);
        }
      }
}

REFERENCE static void check_all_to_all_v(const struct run *r, int si) {
  const struct step *s = &r->steps[si];
  const int32_t *cn = r->dcounts, *rc = r->drc;
  const uint32_t sentinel = enc(r->dt, SENTINEL);
  char where[64];
  for (int q = 0; q < r->p; q++)
    for (int src = 0; src < r->p; src++) {
      const int32_t n = cn[(src * r->nx + s->set) * r->p + q];
      const int32_t got_n = rc[(q * r->nyv + s->rec) * r->p + src];
      if (got_n != n) {
        snprintf(where, sizeof where, "recv_counts[%d]", src);
        step_fail(r, si, q, where, (uint32_t)got_n, (uint32_t)n,
                  "not the count rank src sent");
      }
      for (int64_t j = 0; j < r->m; j++)
        for (int64_t e = 0; e < r->cv; e++) {
          const uint32_t got = YV(q, s->rec, src * r->m + j, e);
          const uint32_t want =
              j < n ? XV(src, s->set, q * r->m + j, e) : sentinel;
          if (got != want) {
            snprintf(where, sizeof where, "row %lld element %lld",
                     (long long)(src * r->m + j), (long long)e);
            step_fail(r, si, q, where, got, want,
                      j < n ? "not the row rank src sent"
                            : "a row past the count was written");
          }
        }
    }
}

/* Every call's result; then every rank's signal window, as
 * pld/collective.h promises it after the calls: in each lane, the credit
 * and all-to-all-v count cells [0, 2P) and the cells 2P+1 to 2P+3 zero
 * again, cell 2P the lane's count of collective calls (barriers not
 * counted); the slots from 2P+4 on keep what ranks sent. */
REFERENCE static void run_check(const struct run *r) {
  for (int si = 0; si < r->nsteps; si++)
    switch (r->steps[si].kind) {
    case K_ALLREDUCE:
      check_allreduce(r, si);
      break;
    case K_BROADCAST:
      check_broadcast(r, si);
      break;
    case K_ALLGATHER:
    case K_REDUCE_SCATTER:
    case K_ALL_TO_ALL:
      check_matrix(r, si);
      break;
    case K_ALL_TO_ALL_V:
      check_all_to_all_v(r, si);
      break;
    default:
      break;
    }
  const int32_t *sg = r->dsig;
  const int64_t lane = PLD_SIGNAL_LANE_CELLS(r->p), calls_cell = 2 * r->p;
  int32_t calls = 0;
  for (int i = 0; i < r->nsteps; i++)
    calls += r->steps[i].kind != K_BARRIER;
  for (int q = 0; q < r->p; q++)
    for (int64_t i = 0; i < r->ns; i++) {
      const int64_t cell = i % lane;
      const int32_t want = cell == calls_cell ? calls : 0;
      if (cell < calls_cell + 4 && sg[q * r->ns + i] != want) {
        print_error("%s, %d ranks, %d blocks, %d calls: rank %d's signal "
                    "window holds %d in cell %lld after the calls (lane %lld, "
                    "cell %lld of the lane), expected %d\n",
                    pld_dtype_name(r->dt), r->p, r->c, r->nsteps, q,
                    sg[q * r->ns + i], (long long)i, (long long)(i / lane),
                    (long long)cell, (int)want);
        fail();
      }
    }
}

/* The outputs of a run, to compare runs bit for bit. */
static size_t outputs_size(const struct run *r) {
  pld_tensor t[] = {r->ya, r->ym, r->yv, r->rc};
  size_t n = 0;
  for (int i = 0; i < 4; i++)
    n +=
        (size_t)pld_tensor_numel(t[i]) * pld_dtype_size(pld_tensor_dtype(t[i]));
  return n;
}

static void outputs_copy(const struct run *r, unsigned char *buf) {
  pld_tensor t[] = {r->ya, r->ym, r->yv, r->rc};
  for (int i = 0; i < 4; i++) {
    size_t n =
        (size_t)pld_tensor_numel(t[i]) * pld_dtype_size(pld_tensor_dtype(t[i]));
    memcpy(buf, pld_tensor_data(t[i]), n);
    buf += n;
  }
}

/* Builds, runs `runs` times (checking each, and that every run gives the
 * bits of the first) and frees. */
static void run_all(struct run *r, uint64_t seed, int runs) {
  if (!comm_fits(r->world)) { /* another job size runs it */
    free(r->steps);
    free(r->set_kind);
    return;
  }
  run_build(r, seed);
  unsigned char *first = NULL, *again = NULL;
  for (int i = 0; i < runs; i++) {
    assert_ok(run_exec(r));
    run_check(r);
    if (runs == 1)
      break;
    unsigned char **buf = i == 0 ? &first : &again;
    if (!*buf)
      *buf = malloc(outputs_size(r));
    assert_non_null(*buf);
    outputs_copy(r, *buf);
    if (i > 0 && memcmp(first, again, outputs_size(r)) != 0) {
      print_error("%s, %d ranks: run %d gave other bits than run 1\n",
                  pld_dtype_name(r->dt), r->p, i + 1);
      fail();
    }
  }
  free(first);
  free(again);
  run_free(r);
}

/* ---- plans ------------------------------------------------------------- */

/* Input sets of the sweeps: set i is of kind i (S_EXACT, ...), so the
 * plans name sets by their kinds. */
static const int sweep_sets[] = {S_EXACT,       S_EXACT_PROD, S_RANDOM,
                                 S_RANDOM_PROD, S_NAN,        S_BIG};
#define NSWEEP_SETS ((int)(sizeof sweep_sets / sizeof sweep_sets[0]))

/* The exact and the random set for op. */
static int exact_set_for(int op) {
  return op == PLD_REDUCE_PROD ? S_EXACT_PROD : S_EXACT;
}
static int random_set_for(int op) {
  return op == PLD_REDUCE_PROD ? S_RANDOM_PROD : S_RANDOM;
}

/* Float sums that leave FP16's range in rank order, on the reductions
 * that round once (FP32 accumulators): mesh, two-phase, reduce-scatter. */
static void plan_big(struct run *r) {
  if (!is_float(r->dt))
    return;
  add(r, K_ALLREDUCE, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH, 0, 0, S_BIG);
  add(r, K_ALLREDUCE, PLD_REDUCE_SUM, PLD_ALLREDUCE_TWO_PHASE, 0, 0, S_BIG);
  add(r, K_REDUCE_SCATTER, PLD_REDUCE_SUM, 0, 0, 0, S_BIG);
}

/* Every collective, op, mode and root once (reductions on exact, random
 * and, but for products, NaN-holding inputs), with a barrier in between:
 * one kernel, one signal window. */
static void plan_sweep(struct run *r) {
  plan_big(r);
  for (int op = PLD_REDUCE_SUM; op <= PLD_REDUCE_PROD; op++) {
    for (int mode = PLD_ALLREDUCE_AUTO; mode <= PLD_ALLREDUCE_RING; mode++) {
      add(r, K_ALLREDUCE, op, mode, 0, 0, exact_set_for(op));
      add(r, K_ALLREDUCE, op, mode, 0, 0, random_set_for(op));
      if (op != PLD_REDUCE_PROD && is_float(r->dt))
        add(r, K_ALLREDUCE, op, mode, 0, 0, S_NAN);
    }
    add(r, K_REDUCE_SCATTER, op, 0, 0, 0, exact_set_for(op));
    add(r, K_REDUCE_SCATTER, op, 0, 0, 0, random_set_for(op));
    if (op != PLD_REDUCE_PROD && is_float(r->dt))
      add(r, K_REDUCE_SCATTER, op, 0, 0, 0, S_NAN);
  }
  add(r, K_BARRIER, 0, 0, 0, 0, 0);
  for (int root = 0; root < r->p; root++)
    add(r, K_BROADCAST, 0, 0, root, 0, S_NAN); /* NaNs keep their bits */
  for (int variant = 0; variant < 2; variant++) {
    add(r, K_ALLGATHER, 0, 0, 0, variant, S_NAN);
    add(r, K_ALL_TO_ALL, 0, 0, 0, variant, S_RANDOM + variant);
  }
  add(r, K_ALL_TO_ALL_V, 0, 0, 0, 0, S_EXACT); /* two sets of counts */
  add(r, K_ALL_TO_ALL_V, 0, 0, 0, 0, S_EXACT_PROD);
  add(r, K_BARRIER, 0, 0, 0, 0, 0);
}

/* Long data: the reductions of every mode (exact, random and NaN-holding
 * inputs), reduce-scatter, and each other collective once. */
static void plan_groups(struct run *r) {
  plan_big(r);
  for (int mode = PLD_ALLREDUCE_AUTO; mode <= PLD_ALLREDUCE_RING; mode++) {
    add(r, K_ALLREDUCE, PLD_REDUCE_SUM, mode, 0, 0, S_EXACT);
    add(r, K_ALLREDUCE, PLD_REDUCE_SUM, mode, 0, 0, S_RANDOM);
    add(r, K_ALLREDUCE, PLD_REDUCE_PROD, mode, 0, 0, S_EXACT_PROD);
    add(r, K_ALLREDUCE, PLD_REDUCE_MAX, mode, 0, 0, S_NAN);
  }
  add(r, K_REDUCE_SCATTER, PLD_REDUCE_SUM, 0, 0, 0, S_EXACT);
  add(r, K_REDUCE_SCATTER, PLD_REDUCE_SUM, 0, 0, 0, S_RANDOM);
  add(r, K_REDUCE_SCATTER, PLD_REDUCE_MIN, 0, 0, 0, S_NAN);
  add(r, K_BROADCAST, 0, 0, r->p - 1, 0, S_NAN);
  add(r, K_ALLGATHER, 0, 0, 0, 1, S_NAN);
  add(r, K_ALL_TO_ALL, 0, 0, 0, 0, S_RANDOM);
  add(r, K_ALL_TO_ALL_V, 0, 0, 0, 0, S_EXACT);
  add(r, K_BARRIER, 0, 0, 0, 0, 0);
}

/* Over a domain of p ranks, world ranks first to first + p - 1 of a world
 * of first + p, on c blocks, allreduce data of la elements and rows of l,
 * run twice: plan_sweep for short data, plan_groups for long. */
static void sweep_domain(pld_dtype dt, int first, int p, int c, int64_t la,
                         int64_t l) {
  struct run r;
  run_init(&r, dt, p, c, la, l, NSWEEP_SETS, sweep_sets, NSWEEP_SETS);
  r.world = first + p, r.first = first;
  if (la > 2 * GROUP || l > GROUP)
    plan_groups(&r);
  else
    plan_sweep(&r);
  run_all(&r, (uint64_t)((int)dt * 1000 + p * 100 + c * 10 + la), 2);
}

/* The domain is the world. */
static void sweep(pld_dtype dt, int p, int c, int64_t la, int64_t l) {
  sweep_domain(dt, 0, p, c, la, l);
}

/* Rank counts of the sweeps. */
static const int rank_counts[] = {1, 2, 3, 4, 5, 8};
#define NRANK_COUNTS ((int)(sizeof rank_counts / sizeof rank_counts[0]))

/* Over the rank counts rank_counts[from] to rank_counts[to - 1] on c
 * blocks: lengths of 1 element (fewer than blocks), P-1 (no multiple of
 * P), one group plus one element (mesh's and reduce-scatter's ragged last
 * group), and P groups plus P+1 elements (two-phase's and the ring's
 * chunks of a group and one or two). */
static void sweep_lengths(pld_dtype dt, int c, int from, int to) {
  for (int i = from; i < to; i++) {
    const int p = rank_counts[i];
    sweep(dt, p, c, 1, 1);
    if (p > 2)
      sweep(dt, p, c, p - 1, p - 1);
    sweep(dt, p, c, GROUP + 1, GROUP + 1);
    if (p > 1)
      sweep(dt, p, c, (int64_t)p * (GROUP + 1) + 1, 5);
  }
}

/* The first SWEEP_SMALL rank counts (1 to 4 ranks) in one CTest entry,
 * the rest (5 and 8) in another, per dtype: test_sweep_fp32_small, ...
 * Each stays well inside its time limit under TSan on a busy machine. */
enum { SWEEP_SMALL = 4 };
#define SWEEP_TEST(name, dt)                                                   \
  static void test_sweep_##name##_small(void **state) {                        \
    (void)state;                                                               \
    sweep_lengths(dt, 1, 0, SWEEP_SMALL);                                      \
    comm_ran_or_skip();                                                        \
  }                                                                            \
  static void test_sweep_##name##_large(void **state) {                        \
    (void)state;                                                               \
    sweep_lengths(dt, 1, SWEEP_SMALL, NRANK_COUNTS);                           \
    comm_ran_or_skip();                                                        \
  }
SWEEP_TEST(fp32, PLD_FP32)
SWEEP_TEST(fp16, PLD_FP16)
SWEEP_TEST(bf16, PLD_BF16)
SWEEP_TEST(int32, PLD_INT32)
SWEEP_TEST(int16, PLD_INT16)
SWEEP_TEST(int8, PLD_INT8)

/* Several blocks per rank: every dtype over 2 or 3 and 5 ranks on c
 * blocks, with lengths of fewer elements than blocks (blocks without data
 * take part; all-to-all-v has lanes that serve no rank), P-1, and more
 * than a group per block and chunk. */
static void blocks(int c) {
  for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
    sweep(all_dtypes[d], 2 + (int)d % 2, c, 1, 1);
    sweep(all_dtypes[d], 5, c, 4, 4);
    sweep(all_dtypes[d], 3, c, c * 3 * (GROUP + 1) + 1, c * (GROUP + 1) + 1);
  }
}

static void test_two_blocks(void **state) {
  (void)state;
  blocks(2);
  comm_ran_or_skip();
}

static void test_three_blocks(void **state) {
  (void)state;
  blocks(3);
  comm_ran_or_skip();
}

/* A domain that is not the world: ranks 1 to p of a world of p + 1 (rank
 * 0 alone in a domain of its own, making no call), so that domain ranks,
 * world ranks and devices all differ. */
static void test_sub_domain(void **state) {
  (void)state;
  sweep_domain(PLD_FP32, 1, 3, 1, 5, 5);
  sweep_domain(PLD_INT16, 1, 4, 2, 3, 3);
  sweep_domain(PLD_BF16, 1, 2, 2, 2 * (GROUP + 1) + 1, GROUP + 1);
  comm_ran_or_skip();
}

/* ---- one signal window, many calls ------------------------------------- */

enum { BACK_TO_BACK = 100 };

/* BACK_TO_BACK calls of one collective in one kernel, each on its own
 * input set (exact and random sets alternating; roots, variants and counts
 * changing from call to call), each result checked; p ranks on c blocks,
 * 33 elements (no multiple of any p here). */
static void back_to_back(pld_dtype dt, int p, int c, int kind, int op,
                         int mode) {
  const int kinds[] = {op == PLD_REDUCE_PROD ? S_EXACT_PROD : S_EXACT,
                       op == PLD_REDUCE_PROD ? S_RANDOM_PROD : S_RANDOM};
  struct run r;
  run_init(&r, dt, p, c, 33, 33, BACK_TO_BACK, kinds, 2);
  for (int i = 0; i < BACK_TO_BACK; i++)
    add(&r, kind, op, mode, i % p, i % 2, i);
  run_all(&r, (uint64_t)(kind * 100 + op * 10 + mode), 1);
}

static void back_to_back_everything(int p, int c) {
  for (int mode = PLD_ALLREDUCE_AUTO; mode <= PLD_ALLREDUCE_RING; mode++)
    back_to_back(PLD_FP32, p, c, K_ALLREDUCE, mode, mode);
  back_to_back(PLD_INT16, p, c, K_REDUCE_SCATTER, PLD_REDUCE_SUM, 0);
  back_to_back(PLD_BF16, p, c, K_BROADCAST, 0, 0);
  back_to_back(PLD_FP16, p, c, K_ALLGATHER, 0, 0);
  back_to_back(PLD_INT8, p, c, K_ALL_TO_ALL, 0, 0);
  back_to_back(PLD_INT32, p, c, K_ALL_TO_ALL_V, 0, 0);
  back_to_back(PLD_FP32, p, c, K_BARRIER, 0, 0);
}

static void test_back_to_back_one_block(void **state) {
  (void)state;
  back_to_back_everything(3, 1);
  comm_ran_or_skip();
}

static void test_back_to_back_two_blocks(void **state) {
  (void)state;
  back_to_back_everything(4, 2);
  comm_ran_or_skip();
}

/* Different collectives mixed in a loop on one signal window: ten rounds
 * of broadcast, allreduce (op and mode changing), allgather, barrier,
 * reduce-scatter, all-to-all and all-to-all-v. */
static void mixed(pld_dtype dt, int p, int c, int64_t len) {
  struct run r;
  run_init(&r, dt, p, c, len, len, NSWEEP_SETS, sweep_sets, NSWEEP_SETS);
  for (int i = 0; i < 10; i++) {
    const int op = i % 4;
    add(&r, K_BROADCAST, 0, 0, (i * 7) % p, 0, i % NSWEEP_SETS);
    add(&r, K_ALLREDUCE, op, (i + i / 4) % 4, 0, 0,
        i % 2 ? exact_set_for(op) : random_set_for(op));
    add(&r, K_ALLGATHER, 0, 0, 0, i % 2, S_NAN);
    add(&r, K_BARRIER, 0, 0, 0, 0, 0);
    add(&r, K_REDUCE_SCATTER, op, 0, 0, 0, exact_set_for(op));
    add(&r, K_ALL_TO_ALL, 0, 0, 0, i % 2, S_RANDOM);
    add(&r, K_ALL_TO_ALL_V, 0, 0, 0, 0, i % NSWEEP_SETS);
  }
  run_all(&r, (uint64_t)(p * 10 + c), 2);
}

static void test_mixed_in_a_loop(void **state) {
  (void)state;
  mixed(PLD_FP32, 2, 1, 17);
  mixed(PLD_FP16, 3, 2, 100);
  mixed(PLD_BF16, 5, 1, 9);
  mixed(PLD_INT8, 8, 3, 2);
  mixed(PLD_INT32, 1, 2, 5);
  comm_ran_or_skip();
}

/* Five small mesh allreduces (they travel in the slots) on one signal
 * window, which then holds what the header promises (run_check). */
static void test_signal_window_after_calls(void **state) {
  (void)state;
  struct run r;
  run_init(&r, PLD_FP32, 2, 1, 5, 5, NSWEEP_SETS, sweep_sets, NSWEEP_SETS);
  add(&r, K_ALLREDUCE, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH, 0, 0, 0);
  run_build(&r, 1);
  assert_ok(run_exec(&r));
  run_check(&r);
  run_free(&r);
}

/* pld/collective.h: a call whose data per block and rank pair is at most
 * PLD_COLL_EAGER_BYTES sends it in the signal window, in the sender's slot
 * on the receiver (cell 2P+4 + (S s + (i-1) % U) * (D + EAGER/4) for call
 * i of rank s, S = PLD_COLL_SLOTS, U = PLD_COLL_SLOTS_USED(P),
 * D = PLD_COLL_DESC_CELLS: D cells naming the call, the last its number,
 * then the data).  Two calls of
 * exactly that much (pair 0: an allreduce, then an all-to-all of rows that
 * long; pair 1: a broadcast from the last rank, then a reduce-scatter)
 * leave each rank's data for each receiver there (the broadcast: the
 * root's only); one element more and the data goes the other way, the
 * slots hold the calls' descriptions only (their data cells stay zero). */
static void small_calls(int p, int64_t len, int pair) {
  const int64_t words = PLD_COLL_EAGER_BYTES / 4, desc = PLD_COLL_DESC_CELLS;
  const int64_t slot = desc + words;
  struct run r;
  const int kinds[] = {S_EXACT};
  run_init(&r, PLD_FP32, p, 1, len, len, 1, kinds, 1);
  if (pair == 0) {
    add(&r, K_ALLREDUCE, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH, 0, 0, 0);
    add(&r, K_ALL_TO_ALL, 0, 0, 0, 0, 0);
  } else {
    add(&r, K_BROADCAST, 0, 0, p - 1, 0, 0);
    add(&r, K_REDUCE_SCATTER, PLD_REDUCE_SUM, 0, 0, 0, 0);
  }
  run_build(&r, 3);
  assert_ok(run_exec(&r));
  run_check(&r);
  const int small = len <= words;
  for (int q = 0; q < p; q++)
    for (int s = 0; s < p; s++)
      for (int call = 1; call <= 2; call++) {
        const int32_t *cells =
            r.dsig + (size_t)q * (size_t)r.ns + 2 * p + 4 +
            (PLD_COLL_SLOTS * s + (call - 1) % PLD_COLL_SLOTS_USED(p)) * slot;
        /* The call number, in the description's last cell. */
        assert_int_equal(cells[desc - 1], call);
        const char *want = call == 1
                               ? (const char *)r.dxa + s * len * 4
                               : (const char *)r.dxm + (s * p + q) * len * 4;
        for (int64_t i = 0; i < words; i++) {
          int32_t w = 0;
          if (small && i < len && (pair == 0 || call == 2 || s == p - 1))
            memcpy(&w, want + i * 4, 4);
          if (cells[desc + i] != w) {
            print_error("%d ranks, %lld elements: rank %d's slot for rank %d, "
                        "call %d of pair %d, data word %lld holds %d, "
                        "expected %d\n",
                        p, (long long)len, q, s, call, pair, (long long)i,
                        (int)cells[desc + i], (int)w);
            fail();
          }
        }
      }
  run_free(&r);
}

static void test_small_calls_in_the_slots(void **state) {
  (void)state;
  for (int p = 2; p <= 3; p++)
    for (int pair = 0; pair < 2 && comm_fits(p); pair++) {
      small_calls(p, PLD_COLL_EAGER_BYTES / 4, pair);
      small_calls(p, PLD_COLL_EAGER_BYTES / 4 + 1, pair);
    }
  comm_ran_or_skip();
}

/* ---- slow: megabytes, 64 ranks --------------------------------------- */

/* Allreduce of 4 MiB per rank in every mode, over 4 ranks on 2 blocks:
 * exact, random and NaN-holding inputs; broadcast of it. */
static void test_slow_megabytes(void **state) {
  (void)state;
  const int sets[] = {S_EXACT, S_RANDOM, S_NAN};
  struct run r;
  run_init(&r, PLD_FP32, 4, 2, (1 << 20) + 3, 1, 3, sets, 3);
  for (int mode = PLD_ALLREDUCE_AUTO; mode <= PLD_ALLREDUCE_RING; mode++)
    for (int set = 0; set < 3; set++)
      add(&r, K_ALLREDUCE, set == 2 ? PLD_REDUCE_MAX : PLD_REDUCE_SUM, mode, 0,
          0, set);
  add(&r, K_BROADCAST, 0, 0, 3, 0, 1);
  run_all(&r, 4, 1);
  /* An allgather on one block: each rank writes 4 MiB and 12 bytes to
   * every peer at once: where transfers go as messages, in a piece of
   * PLD__MPI_MSG_PIECE and the rest. */
  run_init(&r, PLD_FP32, 4, 1, 3, (1 << 20) + 3, 2, sets, 3);
  add(&r, K_ALLGATHER, 0, 0, 0, 0, 1);
  run_all(&r, 4, 1);
  comm_ran_or_skip();
}

/* 64 ranks (device ids 0 to 63): the sweep (every collective, op, mode
 * and root) on 1 and 2 blocks, allreduce data of 67 elements, rows of 3. */
static void test_slow_64_ranks(void **state) {
  (void)state;
  for (int c = 1; c <= 2; c++) {
    struct run r;
    run_init(&r, PLD_FP32, 64, c, 67, 3, NSWEEP_SETS, sweep_sets, NSWEEP_SETS);
    plan_sweep(&r);
    run_all(&r, 64, 1);
  }
  comm_ran_or_skip();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sweep_fp32_small),
    cmocka_unit_test(test_sweep_fp32_large),
    cmocka_unit_test(test_sweep_fp16_small),
    cmocka_unit_test(test_sweep_fp16_large),
    cmocka_unit_test(test_sweep_bf16_small),
    cmocka_unit_test(test_sweep_bf16_large),
    cmocka_unit_test(test_sweep_int32_small),
    cmocka_unit_test(test_sweep_int32_large),
    cmocka_unit_test(test_sweep_int16_small),
    cmocka_unit_test(test_sweep_int16_large),
    cmocka_unit_test(test_sweep_int8_small),
    cmocka_unit_test(test_sweep_int8_large),
    cmocka_unit_test(test_two_blocks),
    cmocka_unit_test(test_three_blocks),
    cmocka_unit_test(test_sub_domain),
    cmocka_unit_test(test_back_to_back_one_block),
    cmocka_unit_test(test_back_to_back_two_blocks),
    cmocka_unit_test(test_mixed_in_a_loop),
    cmocka_unit_test(test_signal_window_after_calls),
    cmocka_unit_test(test_small_calls_in_the_slots),
    cmocka_unit_test(test_slow_megabytes),
    cmocka_unit_test(test_slow_64_ranks),
};

PLD_TEST_MAIN("comm_collective", tests)
