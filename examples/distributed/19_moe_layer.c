/* Step 19: a mixture-of-experts layer with top-2 routing, expert-parallel.
 *
 * P ranks, each with T tokens of H features (FP32), E = 2 P experts, two
 * per rank (L = 2: expert e lives on rank e / L as its local expert e % L;
 * E grows with P so that E % P == 0, which pld_ep_dispatch requires, for
 * every P).  The gate Wg [H, E] is the same on every rank; expert e is
 * the FFN y = relu(x W1_e) W2_e, W1_e [H, F], W2_e [F, H].  On each rank:
 *
 *   host     the windows: recv_x [CAP, H], recv_meta [CAP, 4], recv_w
 *            [CAP] (CAP = P T K, the most rows a rank can receive: every
 *            token of every rank choosing both its experts), the stage
 *            [T K, H] of the combine, and the program's collective signal
 *            window (pld_coll_signal) for both EP calls.
 *   AICPU    launches, in this order:
 *     gate   (cube) logits = x @ Wg                       [T, E];
 *     route  (vector) the top-2 experts of each token (pld_row_topk) and
 *            the softmax of their two logits: its weights;
 *     dispatch (vector) pld_ep_dispatch: each token travels once to each
 *            rank holding one of its experts; the rows arrive packed by
 *            local expert, their counts in counts [L];
 *     up, act, down, once per local expert, over the segment of its rows
 *            only and on as many blocks as they need (pld_segment_window,
 *            pld_segment, pld_launch_by: the counts are known on the
 *            device only, during the run): h = x_e @ W1_e (cube),
 *            z = relu(h) (vector), y_e = z @ W2_e (cube);
 *     combine (vector) pld_ep_combine: each token's expert outputs come
 *            back to its rank and out[t] = w0 y(t, 0) + w1 y(t, 1), in FP32,
 *            in the tokens' order.
 *
 * The check, in plain C: the top-2 indices bit for bit; the weights within
 * 8 float ulps of expf's softmax (pld_exp is the library's own vectorised
 * exp, within about an ulp of the exact value, not libm's bits); and the
 * layer's output bit for bit, computed from the weights the device
 * produced, each product the fmaf chain over k in order and the combine
 * in pld/ep.h's order.  Two runs with new tokens.
 *
 *   19_moe_layer -p a2a3sim -d 0,1,2,3           prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { T = 16, H = 64, F = 128, K = 2, L = 2, RPB = 64 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NE);  /* E = L NR experts */
PLD_DYNAMIC(CAP); /* NR T K: the most rows a rank receives */
PLD_DYNAMIC(R);   /* the rows of one local expert, decided during the run */

PLD_CUBE_KERNEL(gate, k, PLD_IN(x, FP32, T, H), PLD_IN(wg, FP32, H, NE),
                PLD_OUT(logits, FP32, T, NE)) {
  const int32_t e = (int32_t)pld_tensor_dim(wg, 1);
  pld_tile *a = pld_load(k, x, 0, 0, T, H);
  pld_tile *b = pld_load(k, wg, 0, 0, H, e);
  pld_tile *c = pld_tile_new(k, PLD_FP32, T, e);
  pld_matmul(k, c, a, b);
  pld_store(k, c, logits, 0, 0);
}

/* The two largest logits of each token, largest first, and their
 * softmax: w_j = exp(v_j - v_0) / (exp(v_0 - v_0) + exp(v_1 - v_0)). */
PLD_KERNEL(route, k, PLD_IN(logits, FP32, T, NE),
           PLD_OUT(topk_idx, INT32, T, K), PLD_OUT(topk_w, FP32, T, K)) {
  const int32_t e = (int32_t)pld_tensor_dim(logits, 1);
  pld_tile *l = pld_load(k, logits, 0, 0, T, e);
  pld_tile *v = pld_tile_new(k, PLD_FP32, T, K);
  pld_tile *idx = pld_tile_new(k, PLD_INT32, T, K);
  pld_row_topk(k, v, idx, l, K);
  pld_tile *col = pld_tile_new(k, PLD_FP32, T, 1);
  pld_tile *wide = pld_tile_new(k, PLD_FP32, T, K);
  pld_row_max(k, col, v);
  pld_row_expand(k, wide, col);
  pld_sub(k, v, v, wide);
  pld_exp(k, v, v);
  pld_row_sum(k, col, v);
  pld_row_expand(k, wide, col);
  pld_div(k, v, v, wide);
  pld_store(k, idx, topk_idx, 0, 0);
  pld_store(k, v, topk_w, 0, 0);
}

PLD_KERNEL(dispatch, k, PLD_IN(x, FP32, T, H), PLD_IN(topk_idx, INT32, T, K),
           PLD_IN(topk_w, FP32, T, K), PLD_WINDOW(recv_x, FP32, CAP, H),
           PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),
           PLD_WINDOW(recv_w, FP32, CAP), PLD_OUT(counts, INT32, L),
           PLD_SCALAR(experts, INT32), PLD_COLL_SIG(sig)) {
  pld_ep_dispatch(k, x, topk_idx, topk_w, experts, recv_x, recv_meta, recv_w,
                  counts, sig);
}

/* Block b of a local expert's launch: rows [b RPB, b RPB + RPB) of its
 * segment (the last block's are fewer). */
static int32_t block_rows(pld_core k, int64_t rows, int64_t *r0) {
  *r0 = (int64_t)pld_block_idx(k) * RPB;
  return (int32_t)(rows - *r0 < RPB ? rows - *r0 : RPB);
}

/* h = x_e @ W1_e; w1 holds this rank's L experts, [L, H, F]. */
PLD_CUBE_KERNEL(up, k, PLD_WINDOW(xe, FP32, R, H), PLD_IN(w1, FP32, L, H, F),
                PLD_OUT(he, FP32, R, F), PLD_SCALAR(e, INT32)) {
  int64_t r0;
  const int32_t mr = block_rows(k, pld_tensor_dim(he, 0), &r0);
  pld_tile *a = pld_load(k, pld_local(xe), r0, 0, mr, H);
  pld_tile *b = pld_load(k, w1, (int64_t)e * H, 0, H, F);
  pld_tile *c = pld_tile_new(k, PLD_FP32, mr, F);
  pld_matmul(k, c, a, b);
  pld_store(k, c, he, r0, 0);
}

PLD_KERNEL(act, k, PLD_IN(he, FP32, R, F), PLD_OUT(ze, FP32, R, F)) {
  int64_t r0;
  const int32_t mr = block_rows(k, pld_tensor_dim(he, 0), &r0);
  pld_tile *t = pld_load(k, he, r0, 0, mr, F);
  pld_relu(k, t, t);
  pld_store(k, t, ze, r0, 0);
}

/* y_e = z @ W2_e; w2 is [L, F, H]. */
PLD_CUBE_KERNEL(down, k, PLD_IN(ze, FP32, R, F), PLD_IN(w2, FP32, L, F, H),
                PLD_OUT(ye, FP32, R, H), PLD_SCALAR(e, INT32)) {
  int64_t r0;
  const int32_t mr = block_rows(k, pld_tensor_dim(ze, 0), &r0);
  pld_tile *a = pld_load(k, ze, r0, 0, mr, F);
  pld_tile *b = pld_load(k, w2, (int64_t)e * F, 0, F, H);
  pld_tile *c = pld_tile_new(k, PLD_FP32, mr, H);
  pld_matmul(k, c, a, b);
  pld_store(k, c, ye, r0, 0);
}

PLD_KERNEL(combine, k, PLD_IN(eout, FP32, CAP, H),
           PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),
           PLD_IN(counts, INT32, L), PLD_IN(topk_idx, INT32, T, K),
           PLD_IN(topk_w, FP32, T, K), PLD_WINDOW(stage, FP32, T *K, H),
           PLD_OUT(out, FP32, T, H), PLD_COLL_SIG(sig)) {
  pld_ep_combine(k, eout, pld_local(recv_meta), counts, topk_idx, topk_w, stage,
                 out, sig);
}

PLD_DEVICE(moe_device, cpu, PLD_IN(x, FP32, T, H), PLD_IN(wg, FP32, H, NE),
           PLD_IN(w1, FP32, L, H, F), PLD_IN(w2, FP32, L, F, H),
           PLD_WINDOW(recv_x, FP32, CAP, H),
           PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),
           PLD_WINDOW(recv_w, FP32, CAP), PLD_WINDOW(stage, FP32, T *K, H),
           PLD_OUT(topk_idx, INT32, T, K), PLD_OUT(topk_w, FP32, T, K),
           PLD_OUT(out, FP32, T, H)) {
  const int64_t cap = pld_tensor_dim(pld_local(recv_w), 0);
  const int32_t experts = (int32_t)pld_tensor_dim(wg, 1);
  const int32_t max_blocks = (int32_t)((cap + RPB - 1) / RPB);
  pld_tensor logits = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(T, experts));
  pld_tensor counts = pld_device_alloc(cpu, PLD_INT32, PLD_SHAPE(L));
  pld_tensor h = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(cap, F));
  pld_tensor z = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(cap, F));
  pld_tensor eout = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(cap, H));
  pld_launch(cpu, gate, 1, x, wg, logits);
  pld_launch(cpu, route, 1, logits, topk_idx, topk_w);
  pld_launch(cpu, dispatch, 1, x, topk_idx, topk_w, recv_x, recv_meta, recv_w,
             counts, experts);
  for (int32_t e = 0; e < L; e++) {
    const pld_blocks_by by = PLD_BLOCKS_BY(counts, e, RPB, max_blocks);
    pld_launch_by(cpu, up, by, pld_segment_window(cpu, recv_x, counts, e, cap),
                  w1, pld_segment(cpu, h, counts, e, cap), e);
    pld_launch_by(cpu, act, by, pld_segment(cpu, h, counts, e, cap),
                  pld_segment(cpu, z, counts, e, cap));
    pld_launch_by(cpu, down, by, pld_segment(cpu, z, counts, e, cap), w2,
                  pld_segment(cpu, eout, counts, e, cap), e);
  }
  pld_launch(cpu, combine, 1, eout, recv_meta, counts, topk_idx, topk_w, stage,
             out);
}

PLD_HOST(moe_host, hs, PLD_IN(x, FP32, NR, T, H), PLD_IN(wg, FP32, H, NE),
         PLD_IN(w1, FP32, NR, L, H, F), PLD_IN(w2, FP32, NR, L, F, H),
         PLD_OUT(topk_idx, INT32, NR, T, K), PLD_OUT(topk_w, FP32, NR, T, K),
         PLD_OUT(out, FP32, NR, T, H)) {
  const int n = pld_world_size(hs);
  const int64_t cap = (int64_t)n * T * K;
  pld_window_buf rx = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(cap, H));
  pld_window_buf rm =
      pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(cap, PLD_EP_META_COLS));
  pld_window_buf rw = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(cap));
  pld_window_buf st = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(T * K, H));
  /* Every EP call runs on one block: the signal window they share. */
  pld_coll_signal(hs, 1);
  for (int r = 0; r < n; r++)
    pld_dispatch(
        hs, moe_device, r, pld_slice(hs, x, r), wg, pld_slice(hs, w1, r),
        pld_slice(hs, w2, r),
        pld_window_view(hs, rx, PLD_FP32, PLD_SHAPE(cap, H)),
        pld_window_view(hs, rm, PLD_INT32, PLD_SHAPE(cap, PLD_EP_META_COLS)),
        pld_window_view(hs, rw, PLD_FP32, PLD_SHAPE(cap)),
        pld_window_view(hs, st, PLD_FP32, PLD_SHAPE(T * K, H)),
        pld_slice(hs, topk_idx, r), pld_slice(hs, topk_w, r),
        pld_slice(hs, out, r));
}

/* The top-2 of row l[0, e), largest first, equal values by lower column
 * (pld_row_topk's order). */
static void top2(const float *l, int32_t e, int32_t idx[K]) {
  idx[0] = 0;
  for (int32_t c = 1; c < e; c++)
    if (l[c] > l[idx[0]])
      idx[0] = c;
  idx[1] = idx[0] == 0 ? 1 : 0;
  for (int32_t c = 0; c < e; c++)
    if (c != idx[0] && l[c] > l[idx[1]])
      idx[1] = c;
}

/* y = relu(x W1) W2 for one token row x [H] and one expert. */
static void expert_ffn(const float *x, const float *w1, const float *w2,
                       float *y) {
  float z[F];
  for (int j = 0; j < F; j++) {
    float acc = 0.0f;
    for (int i = 0; i < H; i++)
      acc = fmaf(x[i], w1[i * F + j], acc);
    z[j] = acc > 0.0f ? acc : 0.0f;
  }
  for (int j = 0; j < H; j++) {
    float acc = 0.0f;
    for (int i = 0; i < F; i++)
      acc = fmaf(z[i], w2[i * H + j], acc);
    y[j] = acc;
  }
}

/* Whether a and b are within `ulps` float ulps of each other (both
 * positive here: softmax weights). */
static bool within_ulps(float a, float b, int32_t ulps) {
  int32_t ia, ib;
  memcpy(&ia, &a, sizeof ia);
  memcpy(&ib, &b, sizeof ib);
  return ia - ib <= ulps && ib - ia <= ulps;
}

/* The check of one run (see the top of this file): returns false after
 * printing the first difference. */
static bool check(struct example *ex, pld_tensor x, pld_tensor wg,
                  pld_tensor w1, pld_tensor w2, pld_tensor topk_idx,
                  pld_tensor topk_w, pld_tensor out) {
  const int64_t p = pld_tensor_dim(x, 0);
  const int32_t e = (int32_t)(L * p);
  const float *xs = pld_tensor_data(x), *wgs = pld_tensor_data(wg);
  const float *w1s = pld_tensor_data(w1), *w2s = pld_tensor_data(w2);
  const int32_t *gi = pld_tensor_data(topk_idx);
  const float *gw = pld_tensor_data(topk_w), *go = pld_tensor_data(out);
  float logits[EXAMPLE_MAX_DEVICES * L], y[K][H];
  for (int64_t r = 0; r < p; r++)
    for (int64_t t = 0; t < T; t++) {
      const float *xt = xs + (r * T + t) * H;
      const int64_t rt = r * T + t;
      for (int32_t c = 0; c < e; c++) { /* logits = x @ Wg */
        float acc = 0.0f;
        for (int i = 0; i < H; i++)
          acc = fmaf(xt[i], wgs[i * e + c], acc);
        logits[c] = acc;
      }
      int32_t idx[K];
      top2(logits, e, idx);
      const float e1 = expf(logits[idx[1]] - logits[idx[0]]);
      const float sum = 1.0f + e1;
      const float w[K] = {1.0f / sum, e1 / sum};
      for (int j = 0; j < K; j++) {
        if (gi[rt * K + j] != idx[j]) {
          printf("FAILED: rank %lld, token %lld, slot %d: expert %d, "
                 "expected %d (seed %llu)\n",
                 (long long)r, (long long)t, j, (int)gi[rt * K + j],
                 (int)idx[j], ex->seed);
          return false;
        }
        if (!within_ulps(gw[rt * K + j], w[j], 8)) {
          printf("FAILED: rank %lld, token %lld, slot %d: weight %.9g, "
                 "expected %.9g within 8 ulps (seed %llu)\n",
                 (long long)r, (long long)t, j, (double)gw[rt * K + j],
                 (double)w[j], ex->seed);
          return false;
        }
        const int32_t owner = idx[j] / L, local = idx[j] % L;
        expert_ffn(xt, w1s + (owner * L + local) * H * F,
                   w2s + (owner * L + local) * F * H, y[j]);
      }
      for (int i = 0; i < H; i++) {
        /* pld_ep_combine's sum, with the device's weights. */
        float acc = 0.0f;
        for (int j = 0; j < K; j++) {
          const float term = gw[rt * K + j] * y[j][i];
          acc = acc + term;
        }
        if (memcmp(&go[rt * H + i], &acc, sizeof acc)) {
          printf("FAILED: rank %lld, out[%lld][%d]: got %.9g, expected "
                 "%.9g (bitwise; seed %llu)\n",
                 (long long)r, (long long)t, i, (double)go[rt * H + i],
                 (double)acc, ex->seed);
          return false;
        }
      }
    }
  return true;
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  const int64_t n = ex.cfg.ndevices;
  if (n * L > PLD_EP_MAX_EXPERTS) /* E = 2 P experts travel in one slot */
    example_usage_error(&ex, "-d: at most %d ranks, got %lld",
                        PLD_EP_MAX_EXPERTS / L, (long long)n);
  pld_tensor x = example_tensor(&ex, 3, (const int64_t[]){n, T, H}, 1);
  pld_tensor wg = example_tensor(&ex, 2, (const int64_t[]){H, L * n}, 1);
  pld_tensor w1 = example_tensor(&ex, 4, (const int64_t[]){n, L, H, F}, 1);
  pld_tensor w2 = example_tensor(&ex, 4, (const int64_t[]){n, L, F, H}, 1);
  pld_tensor out = example_tensor(&ex, 3, (const int64_t[]){n, T, H}, 0);
  pld_tensor tw = example_tensor(&ex, 3, (const int64_t[]){n, T, K}, 0);
  pld_tensor ti;
  example_check(
      pld_tensor_create(PLD_INT32, 3, (const int64_t[]){n, T, K}, &ti),
      "pld_tensor_create");
  pld_program *prog =
      example_compile(&ex, moe_host, x, wg, w1, w2, ti, tw, out);
  /* Two runs with new tokens: other routes, other counts per expert. */
  for (int run = 0; run < 2 && !ex.failed; run++) {
    for (int64_t i = 0; i < pld_tensor_numel(x); i++)
      ((float *)pld_tensor_data(x))[i] = example_random(&ex);
    example_run_program(prog, x, wg, w1, w2, ti, tw, out);
    if (!check(&ex, x, wg, w1, w2, ti, tw, out))
      ex.failed++;
  }
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(wg);
  pld_tensor_destroy(w1);
  pld_tensor_destroy(w2);
  pld_tensor_destroy(out);
  pld_tensor_destroy(tw);
  pld_tensor_destroy(ti);
  return example_done(&ex);
}
