/* workloads.h: what bench_workloads (pld) and mpi_workloads (MPI +
 * OpenBLAS) share - the inputs, generated alike on both sides from each
 * element's index, and the plain C references both check their results
 * against.  Header-only and needing neither pld nor MPI.
 *
 * The workloads (T tokens per rank for the MoE and EP, T tokens in all
 * for the TP-MLP, split over P ranks):
 *   moe  x [P, T, H], gate wg [H, E], experts w1 [E, H, F], w2 [E, F, H]
 *        (expert e on rank e / L, L = E / P), top-2, softmax weights,
 *        y = sum_j w_j relu(x W1_e) W2_e;
 *   ep   x [P, T, D], top-K experts per token given (wl_ep_route), the
 *        identity expert: out[t] = sum_j w_j x[t];
 *   tp   X [T, H] (rank r its rows [r T/P, (r+1) T/P)), W1 [H, F] (rank
 *        r its columns [r F/P, ...)), W2 [F, H] (rank r its rows):
 *        Y = relu(X W1) W2, rank r its rows of Y. */
#ifndef PLD_BENCH_WORKLOADS_H
#define PLD_BENCH_WORKLOADS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The tensors' ids in wl_rand. */
enum { WL_X = 1, WL_WG = 2, WL_W1 = 3, WL_W2 = 4, WL_ROUTE = 5 };

/* Element i of tensor `id` (its index in the whole tensor, every rank's
 * part in it): uniform in [-1, 1), times scale. */
static inline float wl_rand(uint32_t id, int64_t i, float scale) {
  uint64_t z = (uint64_t)id * 0x9E3779B97F4A7C15ull + (uint64_t)i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return ((float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f) * scale;
}

/* n elements of tensor id from element i0 on. */
static inline void wl_fill(float *v, int64_t n, uint32_t id, int64_t i0,
                           float scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = wl_rand(id, i0 + i, scale);
}

/* The weights' scales: 1/sqrt(fan-in), so that values stay near 1. */
static inline float wl_scale(int64_t fan_in) {
  return 1.0f / sqrtf((float)fan_in);
}

/* The top-k of row l[0, e) (k <= e <= 256), largest first, equal values by
 * lower index (pld_row_topk's order); returns the smallest gap between
 * the k-th and (k+1)-th values and between neighbours among the k, so a
 * check can skip a token whose choice a rounding could flip. */
static inline float wl_topk(const float *l, int32_t e, int32_t k,
                            int32_t *idx) {
  unsigned char taken[256] = {0};
  float gap = INFINITY;
  for (int32_t j = 0; j <= k && j < e; j++) {
    int32_t best = -1;
    for (int32_t c = 0; c < e; c++)
      if (!taken[c] && (best < 0 || l[c] > l[best]))
        best = c;
    if (j > 0) {
      const float d = l[idx[j - 1]] - l[best];
      gap = d < gap ? d : gap;
    }
    if (j < k) {
      idx[j] = best;
      taken[best] = 1;
    }
  }
  return gap;
}

/* The softmax of the top-k logits v[0, k) (largest first): w_j =
 * exp(v_j - v_0) / sum. */
static inline void wl_softmax(const float *v, int32_t k, float *w) {
  float sum = 0.0f;
  for (int32_t j = 0; j < k; j++)
    sum += w[j] = expf(v[j] - v[0]);
  for (int32_t j = 0; j < k; j++)
    w[j] /= sum;
}

/* y[0, n) = x[0, kd) @ b [kd, n], one row, the fmaf chain over k. */
static inline void wl_row_matmul(const float *x, const float *b, int64_t kd,
                                 int64_t n, float *y) {
  for (int64_t j = 0; j < n; j++)
    y[j] = 0.0f;
  for (int64_t i = 0; i < kd; i++)
    for (int64_t j = 0; j < n; j++)
      y[j] = fmaf(x[i], b[i * n + j], y[j]);
}

/* y[H] = relu(x W1) W2 for one row x [H], W1 [H, F], W2 [F, H]; z is
 * scratch of F floats. */
static inline void wl_ffn(const float *x, const float *w1, const float *w2,
                          int64_t h, int64_t f, float *z, float *y) {
  wl_row_matmul(x, w1, h, f, z);
  for (int64_t j = 0; j < f; j++)
    z[j] = z[j] > 0.0f ? z[j] : 0.0f;
  wl_row_matmul(z, w2, f, h, y);
}

/* The MoE layer's output for n tokens, token i's row xs[i] [H], its
 * top-2 experts idx[2 i], idx[2 i + 1] and weights w[2 i], w[2 i + 1]:
 * out[i] = w0 ffn_{e0}(x) + w1 ffn_{e1}(x) [H], the experts' weights made
 * (wl_fill) one expert at a time.  0, or -1 out of memory. */
static inline int wl_moe_ref(int64_t n, const float *const *xs,
                             const int32_t *idx, const float *w, int64_t h,
                             int64_t f, int32_t e, float *out) {
  float *w1 = malloc(sizeof(float) * (size_t)(h * f));
  float *w2 = malloc(sizeof(float) * (size_t)(f * h));
  float *z = malloc(sizeof(float) * (size_t)f);
  float *y = malloc(sizeof(float) * (size_t)(n * 2 * h));
  const int ok = w1 && w2 && z && y;
  for (int32_t c = 0; c < e && ok; c++) {
    int made = 0;
    for (int64_t i = 0; i < 2 * n; i++)
      if (idx[i] == c) {
        if (!made) {
          wl_fill(w1, h * f, WL_W1, (int64_t)c * h * f, wl_scale(h));
          wl_fill(w2, f * h, WL_W2, (int64_t)c * f * h, wl_scale(f));
          made = 1;
        }
        wl_ffn(xs[i / 2], w1, w2, h, f, z, y + i * h);
      }
  }
  for (int64_t i = 0; i < n && ok; i++)
    for (int64_t c = 0; c < h; c++)
      out[i * h + c] =
          w[2 * i] * y[2 * i * h + c] + w[2 * i + 1] * y[(2 * i + 1) * h + c];
  free(w1), free(w2), free(z), free(y);
  return ok ? 0 : -1;
}

/* Whether got is want within the tolerance of a float computation whose
 * order of sums differs (OpenBLAS against a plain C loop). */
static inline int wl_close(float got, float want) {
  return fabsf(got - want) <= 1e-3f * (1.0f + fabsf(want));
}

/* The EP workload's routes: token t of rank r chooses K distinct experts
 * of E (from a hash of its global index), its weights positive and
 * summing to 1. */
static inline void wl_ep_route(int64_t token, int32_t e, int32_t k,
                               int32_t *idx, float *w) {
  float sum = 0.0f;
  for (int32_t j = 0; j < k; j++) {
    int64_t n = 0;
    int32_t c;
    for (;;) { /* the next candidate not chosen yet */
      c = (int32_t)((wl_rand(WL_ROUTE, token * 64 + j * 8 + n, 0.5f) + 0.5f) *
                    (float)e);
      c = c < 0 ? 0 : c >= e ? e - 1 : c;
      int32_t dup = 0;
      for (int32_t i = 0; i < j; i++)
        dup |= idx[i] == c;
      if (!dup)
        break;
      n++;
    }
    idx[j] = c;
    sum += w[j] = 1.5f + wl_rand(WL_ROUTE + 1, token * 64 + j, 1.0f);
  }
  for (int32_t j = 0; j < k; j++)
    w[j] /= sum;
}

#endif /* PLD_BENCH_WORKLOADS_H */
