/* Step 23: a mixed kernel, a matrix product and its epilogue in one
 * launch, on a cube core and its two vector cores together.
 *
 * Each rank holds X_r [MB, K]; every rank holds W [K, N] and a bias row
 * [N].  Rank r computes Y_r = relu(X_r @ W + bias), and hands its rows to
 * the next rank, which keeps them as prev: prev_{r+1} = Y_r.
 *
 * A matmul runs on a cube core (AIC), the bias and the relu on a vector
 * core (AIV): as two kernels, the product would go through global memory
 * between them.  A PLD_MIX_KERNEL's block runs on one cluster, the cube
 * core and its two vector cores at once, and the product goes straight
 * from the cube to the vector cores (pld_push_tile, pld_pop_tile):
 *
 *   cube part       for each vector part v: the product of its H rows,
 *                   pushed to part v.
 *   vector part v   pops its rows, adds the bias, applies relu, stores
 *                   them into y and into the next rank's window, and
 *                   notifies that rank; then waits for the previous
 *                   rank's rows and copies them into prev.
 *
 *   host     the window `ring` [MB, N] and the signal window [BLOCKS, 2]
 *            (a cell per block and vector part); X, Y and prev sliced
 *            per rank.
 *   AICPU    launches the mixed kernel on BLOCKS blocks of BR rows.
 *   kernel   the parts above.
 *
 * Each product element is the FP32 multiply-add chain over k in order
 * (pld_matmul's), then one FP32 add and relu: the example checks Y and
 * prev bit for bit against a plain C loop doing the same.
 *
 *   23_mixed_kernel -p a2a3sim -d 0,1                 prints OK
 *   (any P >= 2, a2a3sim or a5sim)
 */
#include "example.h"

enum {
  MB = 96,         /* rows per rank */
  K = 80,          /* inner dimension */
  N = 72,          /* columns */
  BR = 32,         /* rows per block */
  H = BR / 2,      /* rows per vector part */
  BLOCKS = MB / BR /* 3 */
};
PLD_DYNAMIC(NR);

#define PARAMS                                                                 \
  PLD_IN(x, FP32, MB, K), PLD_IN(w, FP32, K, N), PLD_IN(bias, FP32, 1, N),     \
      PLD_OUT(y, FP32, MB, N), PLD_WINDOW(ring, FP32, MB, N),                  \
      PLD_WINDOW(sig, INT32, BLOCKS, 2), PLD_OUT(prev, FP32, MB, N)

PLD_MIX_KERNEL(mm_bias_relu, k, PARAMS) {
  const int64_t row0 = (int64_t)pld_block_idx(k) * BR;
  if (pld_core_type_of(k) == PLD_CORE_CUBE) {
    pld_tile *wt = pld_load(k, w, 0, 0, K, N);
    for (int32_t v = 0; v < pld_subblock_num(k); v++) {
      pld_tile *xt = pld_load(k, x, row0 + v * H, 0, H, K);
      pld_tile *p = pld_tile_new(k, PLD_FP32, H, N);
      pld_matmul(k, p, xt, wt);
      pld_push_tile(k, v, p); /* a copy: p is ours again */
      pld_tile_free(k, p);
      pld_tile_free(k, xt);
    }
    return;
  }
  /* A vector part: its rows of the block. */
  const int32_t v = pld_subblock_idx(k);
  const int64_t row = row0 + v * H, cell = pld_block_idx(k);
  pld_comm comm = pld_window_comm(sig);
  const int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_tile *t = pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, H, N);
  pld_tile *b = pld_tile_new(k, PLD_FP32, H, N);
  pld_col_expand(k, b, pld_load(k, bias, 0, 0, 1, N));
  pld_add(k, t, t, b);
  pld_relu(k, t, t);
  pld_store(k, t, y, row, 0);
  pld_remote_store(k, t, ring, (me + 1) % n, row, 0, PLD_ATOMIC_NONE);
  pld_notify(k, sig, (me + 1) % n, PLD_AT(cell, v), 1, PLD_NOTIFY_ADD);
  pld_wait(k, sig, PLD_AT(cell, v), 1, PLD_WAIT_GE);
  pld_store(k, pld_load(k, pld_local(ring), row, 0, H, N), prev, row, 0);
  /* Take the signal back: the cell is zero for the next run. */
  pld_notify(k, sig, me, PLD_AT(cell, v), -1, PLD_NOTIFY_ADD);
}

PLD_DEVICE(mixed_device, cpu, PARAMS) {
  pld_launch(cpu, mm_bias_relu, BLOCKS, x, w, bias, y, ring, sig, prev);
}

PLD_HOST(mixed_host, h, PLD_IN(x, FP32, NR, MB, K), PLD_IN(w, FP32, K, N),
         PLD_IN(bias, FP32, 1, N), PLD_OUT(y, FP32, NR, MB, N),
         PLD_OUT(prev, FP32, NR, MB, N)) {
  pld_window_buf ring = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(MB, N));
  pld_window_buf sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(BLOCKS, 2));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, mixed_device, r, pld_slice(h, x, r), w, bias,
                 pld_slice(h, y, r),
                 pld_window_view(h, ring, PLD_FP32, PLD_SHAPE(MB, N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(BLOCKS, 2)),
                 pld_slice(h, prev, r));
}

/* The reference of rank r's Y: the fmaf chain over k, the bias, relu. */
static void reference(const float *x, const float *w, const float *bias,
                      float *want) {
  for (int64_t i = 0; i < MB; i++)
    for (int64_t j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < K; kk++)
        acc = fmaf(x[i * K + kk], w[kk * N + j], acc);
      acc += bias[j];
      want[i * N + j] = acc > 0.0f ? acc : 0.0f;
    }
}

/* got (MB x N) equals want bit for bit, or a FAILED line. */
static void expect(struct example *ex, const char *what, int64_t r,
                   const float *got, const float *want) {
  for (int64_t i = 0; i < MB * N && !ex->failed; i++)
    if (memcmp(&got[i], &want[i], sizeof(float))) {
      printf("FAILED: rank %lld, %s[%lld][%lld]: got %.9g, expected %.9g "
             "(bitwise; seed %llu)\n",
             (long long)r, what, (long long)(i / N), (long long)(i % N),
             (double)got[i], (double)want[i], ex->seed);
      ex->failed++;
    }
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, "");
  const int64_t n = ex.cfg.ndevices;
  pld_tensor x = example_tensor(&ex, 3, (const int64_t[]){n, MB, K}, 1);
  pld_tensor w = example_tensor(&ex, 2, (const int64_t[]){K, N}, 1);
  pld_tensor bias = example_tensor(&ex, 2, (const int64_t[]){1, N}, 1);
  pld_tensor y = example_tensor(&ex, 3, (const int64_t[]){n, MB, N}, 0);
  pld_tensor prev = example_tensor(&ex, 3, (const int64_t[]){n, MB, N}, 0);
  pld_program *prog = example_compile(&ex, mixed_host, x, w, bias, y, prev);
  float *want = malloc(sizeof(float) * (size_t)(n * MB * N));
  if (!want)
    example_check(PLD_ERR_NOMEM, "malloc");
  /* Two runs: the signal cells are zero again after each. */
  for (int run = 0; run < 2 && !ex.failed; run++) {
    for (int64_t i = 0; i < pld_tensor_numel(x); i++)
      ((float *)pld_tensor_data(x))[i] = example_random(&ex);
    example_run_program(prog, x, w, bias, y, prev);
    const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y),
                *ps = pld_tensor_data(prev);
    for (int64_t r = 0; r < n; r++)
      reference(xs + r * MB * K, pld_tensor_data(w), pld_tensor_data(bias),
                want + r * MB * N);
    for (int64_t r = 0; r < n; r++) {
      expect(&ex, "Y", r, ys + r * MB * N, want + r * MB * N);
      expect(&ex, "prev", r, ps + r * MB * N,
             want + ((r + n - 1) % n) * MB * N);
    }
  }
  free(want);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(w);
  pld_tensor_destroy(bias);
  pld_tensor_destroy(y);
  pld_tensor_destroy(prev);
  return example_done(&ex);
}
