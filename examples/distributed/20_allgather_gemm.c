/* Step 20: AllGather-GEMM, a matrix product overlapped with the
 * all-gather of its left operand.
 *
 * Each rank holds a row block A_r [ML, K] of A (sequence parallelism: its
 * own tokens) and the whole B [K, N]; every rank wants C = A @ B [P ML, N],
 * the product of the gathered A.  Gathering first and multiplying after
 * leaves the cube core idle while the chunks travel; the fused call
 * multiplies each chunk as soon as it is there:
 *
 *   --mode fused  (the default) pld_allgather_matmul(k, a, gathered, b, c,
 *                 sig) in a cube kernel: at step j, rank me pushes its
 *                 chunk to the rank that needs it next step ((me - j - 1)
 *                 mod P) with a signal behind it, and multiplies chunk
 *                 (me + j) mod P: its own first, with no wait, then the
 *                 others in ring order, each after the wait for its
 *                 signal.  One signal per chunk, cells that clear
 *                 themselves (pld/fused.h).
 *   --mode plain  pld_allgather (the collective, step 13) into the same
 *                 window, then the product of the whole gathered matrix,
 *                 tile by tile: the sequence the fused call overlaps, for
 *                 comparison (at small sizes it is the better choice: the
 *                 fused call waits P - 1 times).
 *
 *   host     gathered [P ML, K] (and a second view of it, blocks [P, ML,
 *            K], the shape pld_allgather takes) and the signal windows (P
 *            a dynamic dimension); A sliced per rank, B given whole to
 *            every rank.
 *   AICPU    launches the cube kernel on one block.
 *   kernel   (cube core) the product, into c.
 *
 * Both modes compute each element as the FP32 multiply-add chain over k in
 * order (pld_matmul's, whatever the tiling), so the example checks C bit
 * for bit against a plain C loop doing the same, and that every rank got
 * the same bits.  ML, K and N are not multiples of the 128-element tile.
 *
 *   20_allgather_gemm -p a2a3sim -d 0,1,2,3                prints OK
 *   (any P >= 2; --mode plain too)
 */
#include "example.h"

enum { ML = 67, K = 200, N = 150, TILE = PLD_FUSED_TILE };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(PM); /* NR * ML */
PLD_DYNAMIC(NS); /* PLD_FUSED_SIGNAL_CELLS(NR, 1) */
PLD_DYNAMIC(NC); /* PLD_SIGNAL_CELLS(NR, 1), the collective's */

/* c = g @ b for the rows of g, in tiles of at most TILE rows, columns and
 * inner elements (operands of 64 KiB: L0A and L0B hold them). */
static void product(pld_core k, pld_tensor g, pld_tensor b, pld_tensor c) {
  const int64_t rows = pld_tensor_dim(g, 0);
  for (int64_t r0 = 0; r0 < rows; r0 += TILE)
    for (int64_t n0 = 0; n0 < N; n0 += TILE) {
      int32_t mr = (int32_t)(rows - r0 < TILE ? rows - r0 : TILE);
      int32_t nr = (int32_t)(N - n0 < TILE ? N - n0 : TILE);
      pld_tile *ct = pld_tile_new(k, PLD_FP32, mr, nr);
      for (int64_t k0 = 0; k0 < K; k0 += TILE) {
        int32_t kr = (int32_t)(K - k0 < TILE ? K - k0 : TILE);
        pld_tile *at = pld_load(k, g, r0, k0, mr, kr);
        pld_tile *bt = pld_load(k, b, k0, n0, kr, nr);
        if (k0 == 0)
          pld_matmul(k, ct, at, bt);
        else
          pld_matmul_acc(k, ct, at, bt);
        pld_tile_free(k, at);
        pld_tile_free(k, bt);
      }
      pld_store(k, ct, c, r0, n0);
      pld_tile_free(k, ct);
    }
}

#define PARAMS                                                                 \
  PLD_IN(a, FP32, ML, K), PLD_WINDOW(gathered, FP32, PM, K),                   \
      PLD_WINDOW(blocks, FP32, NR, ML, K), PLD_IN(b, FP32, K, N),              \
      PLD_OUT(c, FP32, PM, N), PLD_WINDOW(sig, INT32, NS),                     \
      PLD_WINDOW(csig, INT32, NC), PLD_SCALAR(plain, BOOL)

PLD_CUBE_KERNEL(ag_gemm, k, PARAMS) {
  if (plain) {
    pld_allgather(k, a, blocks, csig); /* row r of blocks: rank r's A */
    product(k, pld_local(gathered), b, c);
  } else {
    pld_allgather_matmul(k, a, gathered, b, c, sig);
  }
}

PLD_DEVICE(ag_gemm_device, cpu, PARAMS) {
  pld_launch(cpu, ag_gemm, 1, a, gathered, blocks, b, c, sig, csig, plain);
}

PLD_HOST(ag_gemm_host, h, PLD_IN(a, FP32, NR, ML, K), PLD_IN(b, FP32, K, N),
         PLD_OUT(c, FP32, NR, PM, N), PLD_SCALAR(plain, BOOL)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_FUSED_SIGNAL_CELLS(n, 1), nc = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf g = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n * ML, K));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf csig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(nc));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, ag_gemm_device, r, pld_slice(h, a, r),
                 pld_window_view(h, g, PLD_FP32, PLD_SHAPE(n * ML, K)),
                 pld_window_view(h, g, PLD_FP32, PLD_SHAPE(n, ML, K)), b,
                 pld_slice(h, c, r),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(h, csig, PLD_INT32, PLD_SHAPE(nc)), plain);
}

/* The reference: C[i][j] = the fmaf chain over k of A[i][k] B[k][j], A
 * the ranks' blocks one under the other. */
static void reference(pld_tensor a, pld_tensor b, float *want) {
  const float *as = pld_tensor_data(a), *bs = pld_tensor_data(b);
  const int64_t rows = pld_tensor_numel(a) / K;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < K; kk++)
        acc = fmaf(as[i * K + kk], bs[kk * N + j], acc);
      want[i * N + j] = acc;
    }
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv,
                     "  --mode fused|plain   fused: pld_allgather_matmul (the "
                     "default);\n"
                     "                       plain: pld_allgather, then the "
                     "product\n");
  bool plain = example_mode(&ex, "fused", "plain");
  const int64_t n = ex.cfg.ndevices;
  pld_tensor a = example_tensor(&ex, 3, (const int64_t[]){n, ML, K}, 1);
  pld_tensor b = example_tensor(&ex, 2, (const int64_t[]){K, N}, 1);
  pld_tensor c = example_tensor(&ex, 3, (const int64_t[]){n, n * ML, N}, 0);
  pld_program *prog = example_compile(&ex, ag_gemm_host, a, b, c, plain);
  float *want = malloc(sizeof(float) * (size_t)(n * ML * N));
  if (!want)
    example_check(PLD_ERR_NOMEM, "malloc");
  /* Two runs: the signal cells are zero again after each. */
  for (int run = 0; run < 2; run++) {
    for (int64_t i = 0; i < pld_tensor_numel(a); i++)
      ((float *)pld_tensor_data(a))[i] = example_random(&ex);
    example_run_program(prog, a, b, c, plain);
    reference(a, b, want);
    const float *got = pld_tensor_data(c);
    for (int64_t r = 0; r < n && !ex.failed; r++)
      for (int64_t i = 0; i < n * ML * N; i++)
        if (memcmp(&got[r * n * ML * N + i], &want[i], sizeof(float))) {
          printf("FAILED: rank %lld, C[%lld][%lld]: got %.9g, expected %.9g "
                 "(bitwise; seed %llu)\n",
                 (long long)r, (long long)(i / N), (long long)(i % N),
                 (double)got[r * n * ML * N + i], (double)want[i], ex.seed);
          ex.failed++;
          break;
        }
  }
  free(want);
  pld_program_destroy(prog);
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
  return example_done(&ex);
}
