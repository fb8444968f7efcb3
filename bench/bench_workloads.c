/* bench_workloads: the layers this model exists for, written with pld as a
 * user writes them, next to the same layers written with MPI and OpenBLAS
 * (bench/mpi_workloads.c, started under mpirun), in one run (issue 25).
 *
 *   (1) moe  an MoE layer as examples/distributed/19_moe_layer.c: gate
 *            matmul, top-2 routing (pld_row_topk and a softmax), dispatch
 *            (pld_ep_dispatch), per local expert up (cube) over its
 *            segment only (pld_segment, pld_launch_by), one relu (vector)
 *            over every local expert's rows, per local expert down
 *            (cube), combine (pld_ep_combine); the products tiled as mm
 *            says (each tile of the weights loaded once per group of up
 *            to 384 rows, the C tiles resident); T tokens per rank,
 *            E = 8 experts, at T=64 H=256 F=512 and T=512 H=1024 F=2048,
 *            P = 2 and 4.  "route%" is the share of pld's layer time in
 *            routing and permutation (route kernel + dispatch + combine),
 *            measured with two more programs on the same devices and
 *            weights (pld_config.share): one that runs gate, route,
 *            dispatch and combine only (combining the received rows
 *            themselves, no FFN), one that runs the gate only:
 *            route% = (median(route program) - median(gate program)) /
 *            median(layer).  The native layer: cblas_sgemm for gate, up
 *            and down, top-2 and softmax in C, MPI_Alltoall of the counts
 *            per expert and MPI_Alltoallv of the rows there and back.
 *   (2) ep   the original's EP test at its size: T=128 tokens per rank,
 *            top-6, D=4096, 16 experts per rank (E = 16 P), P = 2 and 4,
 *            routes given (workloads.h), dispatch + combine only; the
 *            expert step is the identity (combine takes the received rows
 *            as the experts' outputs: nothing computed, on both sides).
 *            Native: each token sent once per rank holding one of its
 *            experts, MPI_Alltoallv there and back, weighted sum.
 *   (3) tp   the TP-MLP of steps 20 and 21: T tokens in all, T/P rows
 *            per rank, Y = relu(X W1) W2 with W1 split by columns and W2
 *            by rows: pld_allgather_matmul, relu, pld_matmul_reduce_scatter
 *            and its sum; at the MoE's two sizes (T, H, F), P = 2 and 4.
 *            Native: MPI_Allgather, cblas_sgemm, relu, cblas_sgemm,
 *            MPI_Reduce_scatter_block.
 *   (4) ag, rs  each fused kernel of (3) against the same steps one after
 *            the other in pld, same shapes: pld_allgather_matmul against
 *            pld_allgather then the tiled product; pld_matmul_reduce_
 *            scatter (+ _sum) against the tiled product into a window then
 *            pld_reduce_scatter_to.  The "native" column is the unfused
 *            pld program; the ratio fused/unfused.
 *
 * What a time covers.  pld: one pld_program_run of a prepared program
 * (compiled and its device processes started beforehand): every rank's
 * dispatch, its launches and kernels, until every device finished.  Every
 * tensor of the run is device-resident (pld_device_tensor_create with
 * PLD_EACH_RANK, written once before the timings and read back once for
 * the check): the weights, and also the tokens, the routes and the
 * outputs, so that no host copy is timed, as the native side's data is in
 * its processes already.  Windows are kept from run to run
 * (pld_config.keep_windows: no zeroing of the receive windows per run;
 * the signal cells clear themselves).  Native: the layer on every rank
 * between an MPI_Barrier and its end, the slowest rank's time; MPI_Init,
 * making inputs and weights, and mpirun are outside it.  OpenBLAS runs
 * one thread per process (OPENBLAS_NUM_THREADS=1): the ranks are the
 * parallelism, as pld's devices are.
 *
 * Where pld's time goes (the "pld split" line under a row): programs
 * that stop earlier, on the same devices and resident tensors
 * (pld_config.share), timed in the same repetitions; each part is a
 * difference of medians (noisy when the machine is busy: a part can come
 * out negative).  MoE: the gate program (run + gate matmul), the route
 * program minus it (route + dispatch + combine: route%), the layer minus
 * the route program (up, act, down).  EP: a run launching nothing, the
 * dispatch alone minus it, the layer minus the dispatch (combine).  TP:
 * a run launching nothing, AllGather-GEMM + relu minus it, the layer
 * minus that (GEMM-ReduceScatter + sum).
 *
 * How the two alternate.  For each row, the pld program(s) are compiled
 * and prepared and run once untimed; that run's result is checked against
 * workloads.h's plain C reference (the MoE: the top-2 of every token and
 * the output of up to 32 tokens per rank; EP: every token; ag and rs against
 * the unfused result and a plain C reference of sampled rows; TP: up to 32 rows
 * in all; the MoE's route program: out = x, its weights summing to 1).  Then N
 * repetitions (5; `quick`: 3), each one timed run of each pld program of the
 * row right after an untimed one (warm, as the native side's timed run;
 * the layer, then the split's programs; ag and rs: fused and unfused,
 * which goes first alternating), then, but for ag and rs, one mpirun of
 * mpi_workloads that runs the layer once untimed and once timed (the
 * first of them also checks its result).  The figures are medians over
 * the N repetitions.
 *
 *   bench_workloads [quick] [moe] [ep] [tp] [fused] [-n P] [-s SIZE]
 *                   [--trace FILE]
 *       quick: 3 repetitions; naming parts runs only those (all by
 *       default); -n: only P ranks (2 or 4); -s: only the MoE's and
 *       TP's size SIZE (0: T=64 H=256 F=512, 1: T=512 H=1024 F=2048);
 *       --trace: every pld run writes its trace to FILE (for pld-trace:
 *       where the kernels' time goes; the figures then include the
 *       trace's cost).
 *
 * A pld call that fails, or a result that differs from the reference (on
 * either side), makes the exit status 1; a slow figure never does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pld.h"

#include "bench_util.h"
#include "workloads.h"

#ifdef PLD_MPI_WORKLOADS
#define HAVE_NATIVE 1
#else
#define HAVE_NATIVE 0
#define PLD_MPI_WORKLOADS "mpi_workloads"
#endif

enum { K2 = 2, MAX_P = 4, ACT_BLOCKS = 4 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(T);
PLD_DYNAMIC(H);
PLD_DYNAMIC(F);
PLD_DYNAMIC(NE);
PLD_DYNAMIC(L);
PLD_DYNAMIC(KK);
PLD_DYNAMIC(TK);
PLD_DYNAMIC(CAP);
PLD_DYNAMIC(R);
PLD_DYNAMIC(PM);
PLD_DYNAMIC(NS);
PLD_DYNAMIC(NC);

/* ---- kernels' building blocks ---------------------------------------------
 */

/* The tiles of mm: row tiles of MM_M rows, B tiles of MM_K x MM_N (64
 * KiB FP32, the a2a3 cube's L0B), C tiles of MM_M x MM_N (128 KiB, its
 * L0C); MM_RT row tiles share each B tile: 3 C tiles, a B and an A tile
 * are 480 of the cube core's 512 KiB of L1. */
enum { MM_M = 128, MM_K = 64, MM_N = 256, MM_RT = 3 };

/* c[cr0 + i][col + j] = sum_k a[ar0 + i][k] b[br0 + k][col + j], i < rows,
 * j < n, k < kd, tensors seen as matrices.  For each group of up to MM_RT
 * row tiles and each MM_N columns, the C tiles stay in tile memory over
 * the whole k loop and each B tile is loaded once for the group's row
 * tiles (B is the weights: each load of it is a strided read of global
 * memory, the costliest part of the loads); pld_matmul_acc keeps the fmaf
 * chain over k in order. */
static void mm(pld_core k, pld_tensor a, int64_t ar0, int64_t rows, int64_t kd,
               pld_tensor b, int64_t br0, pld_tensor c, int64_t cr0,
               int64_t col, int64_t n) {
  for (int64_t g0 = 0; g0 < rows; g0 += MM_RT * MM_M)
    for (int64_t n0 = col; n0 < col + n; n0 += MM_N) {
      const int32_t nr = (int32_t)(col + n - n0 < MM_N ? col + n - n0 : MM_N);
      pld_tile *ct[MM_RT];
      int32_t mr[MM_RT];
      int tiles = 0;
      for (; tiles < MM_RT && g0 + tiles * MM_M < rows; tiles++) {
        const int64_t left = rows - g0 - tiles * MM_M;
        mr[tiles] = (int32_t)(left < MM_M ? left : MM_M);
        ct[tiles] = pld_tile_new(k, PLD_FP32, mr[tiles], nr);
      }
      for (int64_t k0 = 0; k0 < kd; k0 += MM_K) {
        const int32_t kr = (int32_t)(kd - k0 < MM_K ? kd - k0 : MM_K);
        pld_tile *bt = pld_load(k, b, br0 + k0, n0, kr, nr);
        for (int i = 0; i < tiles; i++) {
          pld_tile *at =
              pld_load(k, a, ar0 + g0 + (int64_t)i * MM_M, k0, mr[i], kr);
          if (k0 == 0)
            pld_matmul(k, ct[i], at, bt);
          else
            pld_matmul_acc(k, ct[i], at, bt);
          pld_tile_free(k, at);
        }
        pld_tile_free(k, bt);
      }
      for (int i = 0; i < tiles; i++) {
        pld_store(k, ct[i], c, cr0 + g0 + (int64_t)i * MM_M, n0);
        pld_tile_free(k, ct[i]);
      }
    }
}

/* The whole product a @ b into c (all rows and columns) on one block. */
static void mm_all(pld_core k, pld_tensor a, pld_tensor b, pld_tensor c) {
  mm(k, a, 0, pld_tensor_dim(a, 0), pld_tensor_dim(a, 1), b, 0, c, 0, 0,
     pld_tensor_dim(b, 1));
}

/* This block's part of an expert's product of `rows` rows by n columns,
 * launched on ceil(rows / MM_M) blocks: the rows in as few groups of one
 * size as hold at most MM_RT row tiles each (mm's, which share each tile
 * of the weights), each group's columns split, in multiples of 64, among
 * the blocks that group gets.  The launch keeps its blocks, and each tile
 * of the weights is loaded once per group, not once per row tile.
 * Returns the part's rows [*r0, *r0 + return) and columns [*c0, *c0 +
 * *nc); 0 rows when the block has no part. */
static int64_t block_part(pld_core k, int64_t rows, int64_t n, int64_t *r0,
                          int64_t *c0, int64_t *nc) {
  const int64_t most = MM_RT * MM_M, groups = (rows + most - 1) / most;
  const int64_t group = (rows + groups - 1) / groups; /* groups of a size */
  const int64_t b = pld_block_idx(k), parts = pld_block_num(k) / groups;
  const int64_t chunk = (n + parts * 64 - 1) / (parts * 64) * 64;
  *r0 = b % groups * group;
  *c0 = b / groups * chunk;
  *nc = n - *c0 < chunk ? n - *c0 : chunk;
  if (b >= parts * groups || *nc <= 0)
    return 0;
  return rows - *r0 < group ? rows - *r0 : group;
}

/* dst = relu(src) for rows [r0, r0 + rows), in tiles of 64 x 256 FP32. */
static void relu_rows(pld_core k, pld_tensor src, pld_tensor dst, int64_t r0,
                      int64_t rows) {
  const int64_t cols = pld_tensor_dim(src, 1);
  for (int64_t i = 0; i < rows; i += 64)
    for (int64_t c0 = 0; c0 < cols; c0 += 256) {
      const int32_t mr = (int32_t)(rows - i < 64 ? rows - i : 64);
      const int32_t nc = (int32_t)(cols - c0 < 256 ? cols - c0 : 256);
      pld_tile *t = pld_load(k, src, r0 + i, c0, mr, nc);
      pld_relu(k, t, t);
      pld_store(k, t, dst, r0 + i, c0);
      pld_tile_free(k, t);
    }
}

/* ---- (1) the MoE layer ------------------------------------------------------
 * As example 19 with T, H, F, E and L dynamic and the matrices tiled; mode
 * 0 the layer, 1 without the FFN (combine of the received rows), 2 the
 * gate only. */

PLD_CUBE_KERNEL(gate, k, PLD_IN(x, FP32, T, H), PLD_IN(wg, FP32, H, NE),
                PLD_OUT(logits, FP32, T, NE)) {
  mm_all(k, x, wg, logits);
}

/* The top-2 of each token's logits and their softmax, 128 tokens at a
 * time. */
PLD_KERNEL(route, k, PLD_IN(logits, FP32, T, NE),
           PLD_OUT(topk_idx, INT32, T, KK), PLD_OUT(topk_w, FP32, T, KK)) {
  const int64_t t = pld_tensor_dim(logits, 0);
  const int32_t e = (int32_t)pld_tensor_dim(logits, 1);
  for (int64_t r0 = 0; r0 < t; r0 += 128) {
    const int32_t n = (int32_t)(t - r0 < 128 ? t - r0 : 128);
    pld_tile *l = pld_load(k, logits, r0, 0, n, e);
    pld_tile *v = pld_tile_new(k, PLD_FP32, n, K2);
    pld_tile *idx = pld_tile_new(k, PLD_INT32, n, K2);
    pld_row_topk(k, v, idx, l, K2);
    pld_tile *col = pld_tile_new(k, PLD_FP32, n, 1);
    pld_tile *wide = pld_tile_new(k, PLD_FP32, n, K2);
    pld_row_max(k, col, v);
    pld_row_expand(k, wide, col);
    pld_sub(k, v, v, wide);
    pld_exp(k, v, v);
    pld_row_sum(k, col, v);
    pld_row_expand(k, wide, col);
    pld_div(k, v, v, wide);
    pld_store(k, idx, topk_idx, r0, 0);
    pld_store(k, v, topk_w, r0, 0);
    pld_tile_free(k, l);
    pld_tile_free(k, v);
    pld_tile_free(k, idx);
    pld_tile_free(k, col);
    pld_tile_free(k, wide);
  }
}

PLD_KERNEL(dispatch, k, PLD_IN(x, FP32, T, H), PLD_IN(topk_idx, INT32, T, KK),
           PLD_IN(topk_w, FP32, T, KK), PLD_WINDOW(recv_x, FP32, CAP, H),
           PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),
           PLD_WINDOW(recv_w, FP32, CAP), PLD_OUT(counts, INT32, L),
           PLD_SCALAR(experts, INT32), PLD_COLL_SIG(sig)) {
  pld_ep_dispatch(k, x, topk_idx, topk_w, experts, recv_x, recv_meta, recv_w,
                  counts, sig);
}

/* h = x_e @ W1_e, this block's part (block_part); w1 is [L, H, F]. */
PLD_CUBE_KERNEL(up, k, PLD_WINDOW(xe, FP32, R, H), PLD_IN(w1, FP32, L, H, F),
                PLD_OUT(he, FP32, R, F), PLD_SCALAR(e, INT32)) {
  const int64_t h = pld_tensor_dim(w1, 1), f = pld_tensor_dim(w1, 2);
  int64_t r0, c0, nc;
  const int64_t mr = block_part(k, pld_tensor_dim(he, 0), f, &r0, &c0, &nc);
  mm(k, pld_local(xe), r0, mr, h, w1, (int64_t)e * h, he, r0, c0, nc);
}

/* z = relu(h) over the rows of every local expert at once (their
 * segments follow each other from row 0: sum(counts) rows), in equal
 * parts of whole 64-row tiles, one per block: one vector launch between
 * the experts' up and down launches rather than one per expert. */
PLD_KERNEL(act, k, PLD_IN(counts, INT32, L), PLD_IN(he, FP32, CAP, F),
           PLD_OUT(ze, FP32, CAP, F)) {
  int64_t rows = 0;
  for (int64_t e = 0; e < pld_tensor_dim(counts, 0); e++)
    rows += (int64_t)pld_read(k, counts, 1, &e);
  const int64_t nb = pld_block_num(k);
  const int64_t part = (rows + nb * 64 - 1) / (nb * 64) * 64;
  const int64_t r0 = pld_block_idx(k) * part;
  if (r0 < rows)
    relu_rows(k, he, ze, r0, rows - r0 < part ? rows - r0 : part);
}

/* y_e = z @ W2_e, this block's part; w2 is [L, F, H]. */
PLD_CUBE_KERNEL(down, k, PLD_IN(ze, FP32, R, F), PLD_IN(w2, FP32, L, F, H),
                PLD_OUT(ye, FP32, R, H), PLD_SCALAR(e, INT32)) {
  const int64_t f = pld_tensor_dim(w2, 1), h = pld_tensor_dim(w2, 2);
  int64_t r0, c0, nc;
  const int64_t mr = block_part(k, pld_tensor_dim(ze, 0), h, &r0, &c0, &nc);
  mm(k, ze, r0, mr, f, w2, (int64_t)e * f, ye, r0, c0, nc);
}

PLD_KERNEL(combine, k, PLD_IN(eout, FP32, CAP, H),
           PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),
           PLD_IN(counts, INT32, L), PLD_IN(topk_idx, INT32, T, KK),
           PLD_IN(topk_w, FP32, T, KK), PLD_WINDOW(stage, FP32, TK, H),
           PLD_OUT(out, FP32, T, H), PLD_COLL_SIG(sig)) {
  pld_ep_combine(k, eout, pld_local(recv_meta), counts, topk_idx, topk_w, stage,
                 out, sig);
}

/* The combine of the received rows themselves (the identity expert). */
PLD_KERNEL(combine_id, k, PLD_WINDOW(recv_x, FP32, CAP, H),
           PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),
           PLD_IN(counts, INT32, L), PLD_IN(topk_idx, INT32, T, KK),
           PLD_IN(topk_w, FP32, T, KK), PLD_WINDOW(stage, FP32, TK, H),
           PLD_OUT(out, FP32, T, H), PLD_COLL_SIG(sig)) {
  pld_ep_combine(k, pld_local(recv_x), pld_local(recv_meta), counts, topk_idx,
                 topk_w, stage, out, sig);
}

#define MOE_WINDOWS                                                            \
  PLD_WINDOW(recv_x, FP32, CAP, H),                                            \
      PLD_WINDOW(recv_meta, INT32, CAP, PLD_EP_META_COLS),                     \
      PLD_WINDOW(recv_w, FP32, CAP), PLD_WINDOW(stage, FP32, TK, H)

PLD_DEVICE(moe_device, cpu, PLD_IN(x, FP32, T, H), PLD_IN(wg, FP32, H, NE),
           PLD_IN(w1, FP32, L, H, F), PLD_IN(w2, FP32, L, F, H), MOE_WINDOWS,
           PLD_OUT(topk_idx, INT32, T, KK), PLD_OUT(topk_w, FP32, T, KK),
           PLD_OUT(out, FP32, T, H), PLD_SCALAR(mode, INT32)) {
  const int64_t cap = pld_tensor_dim(pld_local(recv_w), 0);
  const int64_t t = pld_tensor_dim(x, 0), h = pld_tensor_dim(x, 1);
  const int64_t l = pld_tensor_dim(w1, 0), f = pld_tensor_dim(w1, 2);
  const int32_t experts = (int32_t)pld_tensor_dim(wg, 1);
  /* A block per MM_M rows (the experts' kernels split them further by
   * columns: block_part). */
  const int32_t rpb = MM_M;
  const int32_t max_blocks = (int32_t)((cap + rpb - 1) / rpb);
  pld_tensor logits = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(t, experts));
  pld_tensor counts = pld_device_alloc(cpu, PLD_INT32, PLD_SHAPE(l));
  pld_launch(cpu, gate, 1, x, wg, logits);
  if (mode == 2)
    return;
  pld_launch(cpu, route, 1, logits, topk_idx, topk_w);
  pld_launch(cpu, dispatch, 1, x, topk_idx, topk_w, recv_x, recv_meta, recv_w,
             counts, experts);
  if (mode == 1) {
    pld_launch(cpu, combine_id, 1, recv_x, recv_meta, counts, topk_idx, topk_w,
               stage, out);
    return;
  }
  pld_tensor hb = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(cap, f));
  pld_tensor z = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(cap, f));
  pld_tensor eout = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(cap, h));
  for (int32_t e = 0; e < (int32_t)l; e++) {
    const pld_blocks_by by = PLD_BLOCKS_BY(counts, e, rpb, max_blocks);
    pld_launch_by(cpu, up, by, pld_segment_window(cpu, recv_x, counts, e, cap),
                  w1, pld_segment(cpu, hb, counts, e, cap), e);
  }
  pld_launch(cpu, act, ACT_BLOCKS, counts, hb, z);
  for (int32_t e = 0; e < (int32_t)l; e++) {
    const pld_blocks_by by = PLD_BLOCKS_BY(counts, e, rpb, max_blocks);
    pld_launch_by(cpu, down, by, pld_segment(cpu, z, counts, e, cap), w2,
                  pld_segment(cpu, eout, counts, e, cap), e);
  }
  pld_launch(cpu, combine, 1, eout, recv_meta, counts, topk_idx, topk_w, stage,
             out);
}

/* The host of (1) and (2): the windows of a top-k dispatch with cap rows
 * per rank (the most a rank may receive). */
struct ep_windows {
  pld_window recv_x, recv_meta, recv_w, stage;
};

static struct ep_windows ep_windows(pld_host hs, int64_t cap, int64_t tk,
                                    int64_t h) {
  pld_window_buf rx = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(cap, h));
  pld_window_buf rm =
      pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(cap, PLD_EP_META_COLS));
  pld_window_buf rw = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(cap));
  pld_window_buf st = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(tk, h));
  pld_coll_signal(hs, 1);
  return (struct ep_windows){
      pld_window_view(hs, rx, PLD_FP32, PLD_SHAPE(cap, h)),
      pld_window_view(hs, rm, PLD_INT32, PLD_SHAPE(cap, PLD_EP_META_COLS)),
      pld_window_view(hs, rw, PLD_FP32, PLD_SHAPE(cap)),
      pld_window_view(hs, st, PLD_FP32, PLD_SHAPE(tk, h))};
}

PLD_HOST(moe_host, hs, PLD_IN(x, FP32, NR, T, H), PLD_IN(wg, FP32, NR, H, NE),
         PLD_IN(w1, FP32, NR, L, H, F), PLD_IN(w2, FP32, NR, L, F, H),
         PLD_OUT(topk_idx, INT32, NR, T, KK), PLD_OUT(topk_w, FP32, NR, T, KK),
         PLD_OUT(out, FP32, NR, T, H), PLD_SCALAR(mode, INT32)) {
  const int n = pld_world_size(hs);
  const int64_t t = pld_tensor_dim(x, 1), h = pld_tensor_dim(x, 2);
  const struct ep_windows w = ep_windows(hs, (int64_t)n * t * K2, t * K2, h);
  for (int r = 0; r < n; r++)
    pld_dispatch(hs, moe_device, r, pld_slice(hs, x, r), pld_slice(hs, wg, r),
                 pld_slice(hs, w1, r), pld_slice(hs, w2, r), w.recv_x,
                 w.recv_meta, w.recv_w, w.stage, pld_slice(hs, topk_idx, r),
                 pld_slice(hs, topk_w, r), pld_slice(hs, out, r), mode);
}

/* ---- (2) EP dispatch + combine ---------------------------------------------
 */

PLD_DEVICE(ep_device, cpu, PLD_IN(x, FP32, T, H),
           PLD_IN(topk_idx, INT32, T, KK), PLD_IN(topk_w, FP32, T, KK),
           MOE_WINDOWS, PLD_OUT(out, FP32, T, H), PLD_SCALAR(experts, INT32),
           PLD_SCALAR(l, INT32), PLD_SCALAR(mode, INT32)) {
  pld_tensor counts = pld_device_alloc(cpu, PLD_INT32, PLD_SHAPE(l));
  if (mode == 2) /* nothing: the run's own cost */
    return;
  pld_launch(cpu, dispatch, 1, x, topk_idx, topk_w, recv_x, recv_meta, recv_w,
             counts, experts);
  if (mode == 1) /* the dispatch only */
    return;
  pld_launch(cpu, combine_id, 1, recv_x, recv_meta, counts, topk_idx, topk_w,
             stage, out);
}

PLD_HOST(ep_host, hs, PLD_IN(x, FP32, NR, T, H),
         PLD_IN(topk_idx, INT32, NR, T, KK), PLD_IN(topk_w, FP32, NR, T, KK),
         PLD_OUT(out, FP32, NR, T, H), PLD_SCALAR(experts, INT32),
         PLD_SCALAR(cap, INT32), PLD_SCALAR(mode, INT32)) {
  const int n = pld_world_size(hs);
  const int64_t t = pld_tensor_dim(x, 1), h = pld_tensor_dim(x, 2);
  const int64_t kk = pld_tensor_dim(topk_idx, 2);
  const struct ep_windows w = ep_windows(hs, cap, t * kk, h);
  for (int r = 0; r < n; r++)
    pld_dispatch(hs, ep_device, r, pld_slice(hs, x, r),
                 pld_slice(hs, topk_idx, r), pld_slice(hs, topk_w, r), w.recv_x,
                 w.recv_meta, w.recv_w, w.stage, pld_slice(hs, out, r), experts,
                 experts / n, mode);
}

/* ---- (3) the TP-MLP of steps 20 and 21 -------------------------------------
 * x [MB, H] per rank (MB = T / P), w1 [H, FL], w2 [FL, H] (FL = F / P). */

PLD_CUBE_KERNEL(tp_up, k, PLD_IN(x, FP32, T, H),
                PLD_WINDOW(gathered, FP32, PM, H), PLD_IN(w1, FP32, H, F),
                PLD_OUT(h, FP32, PM, F), PLD_WINDOW(sig, INT32, NS)) {
  pld_allgather_matmul(k, x, gathered, w1, h, sig);
}

PLD_KERNEL(tp_act, k, PLD_IN(h, FP32, PM, F), PLD_OUT(z, FP32, PM, F)) {
  relu_rows(k, h, z, 0, pld_tensor_dim(h, 0));
}

PLD_CUBE_KERNEL(tp_down, k, PLD_IN(z, FP32, PM, F), PLD_IN(w2, FP32, F, H),
                PLD_WINDOW(stage, FP32, PM, H), PLD_WINDOW(sig, INT32, NS)) {
  pld_matmul_reduce_scatter(k, z, w2, stage, sig);
}

PLD_KERNEL(tp_sum, k, PLD_WINDOW(stage, FP32, PM, H), PLD_OUT(y, FP32, T, H),
           PLD_WINDOW(sig, INT32, NS)) {
  pld_matmul_reduce_scatter_sum(k, stage, y, sig);
}

PLD_DEVICE(tp_device, cpu, PLD_IN(x, FP32, T, H),
           PLD_WINDOW(gathered, FP32, PM, H), PLD_IN(w1, FP32, H, F),
           PLD_IN(w2, FP32, F, H), PLD_WINDOW(stage, FP32, PM, H),
           PLD_WINDOW(sig_up, INT32, NS), PLD_WINDOW(sig_down, INT32, NS),
           PLD_OUT(y, FP32, T, H), PLD_SCALAR(mode, INT32)) {
  const int64_t pm = pld_tensor_dim(pld_local(gathered), 0);
  const int64_t fl = pld_tensor_dim(w1, 1);
  pld_tensor h = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(pm, fl));
  pld_tensor z = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(pm, fl));
  if (mode == 2) /* nothing: the run's own cost */
    return;
  pld_launch(cpu, tp_up, 1, x, gathered, w1, h, sig_up);
  pld_launch(cpu, tp_act, 1, h, z);
  if (mode == 1) /* the AllGather-GEMM and relu only */
    return;
  pld_launch(cpu, tp_down, 1, z, w2, stage, sig_down);
  pld_launch(cpu, tp_sum, 1, stage, y, sig_down);
}

PLD_HOST(tp_host, hs, PLD_IN(x, FP32, NR, T, H), PLD_IN(w1, FP32, NR, H, F),
         PLD_IN(w2, FP32, NR, F, H), PLD_OUT(y, FP32, NR, T, H),
         PLD_SCALAR(mode, INT32)) {
  const int n = pld_world_size(hs);
  const int64_t mb = pld_tensor_dim(x, 1), h = pld_tensor_dim(x, 2);
  const int64_t ns = PLD_FUSED_SIGNAL_CELLS(n, 1);
  pld_window_buf g = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(n * mb, h));
  pld_window_buf st =
      pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(n * mb, h));
  pld_window_buf s_up = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf s_dn = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(hs, tp_device, r, pld_slice(hs, x, r),
                 pld_window_view(hs, g, PLD_FP32, PLD_SHAPE(n * mb, h)),
                 pld_slice(hs, w1, r), pld_slice(hs, w2, r),
                 pld_window_view(hs, st, PLD_FP32, PLD_SHAPE(n * mb, h)),
                 pld_window_view(hs, s_up, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(hs, s_dn, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(hs, y, r), mode);
}

/* ---- (4) each fused kernel against its steps one after the other -----------
 * ag: c = allgather(a) @ b, a [MB, H], b [H, FL], c [PM, FL] per rank.
 * rs: y = rows `me` of sum over ranks of a @ b, a [PM, FL], b [FL, H],
 * y [MB, H]. */

PLD_CUBE_KERNEL(ag_gemm, k, PLD_IN(a, FP32, T, H),
                PLD_WINDOW(gathered, FP32, PM, H),
                PLD_WINDOW(blocks, FP32, NR, T, H), PLD_IN(b, FP32, H, F),
                PLD_OUT(c, FP32, PM, F), PLD_WINDOW(sig, INT32, NS),
                PLD_WINDOW(csig, INT32, NC), PLD_SCALAR(plain, BOOL)) {
  if (plain) {
    pld_allgather(k, a, blocks, csig);
    pld_tensor g = pld_local(gathered);
    mm_all(k, g, b, c);
  } else {
    pld_allgather_matmul(k, a, gathered, b, c, sig);
  }
}

PLD_DEVICE(ag_device, cpu, PLD_IN(a, FP32, T, H),
           PLD_WINDOW(gathered, FP32, PM, H),
           PLD_WINDOW(blocks, FP32, NR, T, H), PLD_IN(b, FP32, H, F),
           PLD_OUT(c, FP32, PM, F), PLD_WINDOW(sig, INT32, NS),
           PLD_WINDOW(csig, INT32, NC), PLD_SCALAR(plain, BOOL)) {
  pld_launch(cpu, ag_gemm, 1, a, gathered, blocks, b, c, sig, csig, plain);
}

PLD_HOST(ag_host, hs, PLD_IN(a, FP32, NR, T, H), PLD_IN(b, FP32, NR, H, F),
         PLD_OUT(c, FP32, NR, PM, F), PLD_SCALAR(plain, BOOL)) {
  const int n = pld_world_size(hs);
  const int64_t mb = pld_tensor_dim(a, 1), h = pld_tensor_dim(a, 2);
  const int64_t ns = PLD_FUSED_SIGNAL_CELLS(n, 1), nc = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf g = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(n * mb, h));
  pld_window_buf sig = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf csig = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(nc));
  for (int r = 0; r < n; r++)
    pld_dispatch(hs, ag_device, r, pld_slice(hs, a, r),
                 pld_window_view(hs, g, PLD_FP32, PLD_SHAPE(n * mb, h)),
                 pld_window_view(hs, g, PLD_FP32, PLD_SHAPE(n, mb, h)),
                 pld_slice(hs, b, r), pld_slice(hs, c, r),
                 pld_window_view(hs, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(hs, csig, PLD_INT32, PLD_SHAPE(nc)), plain);
}

/* The products: fused, pld_matmul_reduce_scatter into the ranks' stages;
 * plain, the tiled product into this rank's window `data`. */
PLD_CUBE_KERNEL(rs_gemm, k, PLD_IN(a, FP32, PM, F), PLD_IN(b, FP32, F, H),
                PLD_WINDOW(stage, FP32, PM, H),
                PLD_WINDOW(data, FP32, NR, T, H), PLD_WINDOW(sig, INT32, NS),
                PLD_SCALAR(plain, BOOL)) {
  if (plain) {
    mm_all(k, a, b, pld_local(stage));
    (void)data;
  } else {
    pld_matmul_reduce_scatter(k, a, b, stage, sig);
  }
}

/* The sums: fused, pld_matmul_reduce_scatter_sum; plain,
 * pld_reduce_scatter_to from the window of products. */
PLD_KERNEL(rs_sum, k, PLD_WINDOW(stage, FP32, PM, H),
           PLD_WINDOW(data, FP32, NR, T, H), PLD_OUT(y, FP32, T, H),
           PLD_WINDOW(sig, INT32, NS), PLD_WINDOW(csig, INT32, NC),
           PLD_SCALAR(plain, BOOL)) {
  if (plain)
    pld_reduce_scatter_to(k, data, y, csig, PLD_REDUCE_SUM);
  else
    pld_matmul_reduce_scatter_sum(k, stage, y, sig);
}

PLD_DEVICE(rs_device, cpu, PLD_IN(a, FP32, PM, F), PLD_IN(b, FP32, F, H),
           PLD_WINDOW(stage, FP32, PM, H), PLD_WINDOW(data, FP32, NR, T, H),
           PLD_OUT(y, FP32, T, H), PLD_WINDOW(sig, INT32, NS),
           PLD_WINDOW(csig, INT32, NC), PLD_SCALAR(plain, BOOL)) {
  pld_launch(cpu, rs_gemm, 1, a, b, stage, data, sig, plain);
  pld_launch(cpu, rs_sum, 1, stage, data, y, sig, csig, plain);
}

PLD_HOST(rs_host, hs, PLD_IN(a, FP32, NR, PM, F), PLD_IN(b, FP32, NR, F, H),
         PLD_OUT(y, FP32, NR, T, H), PLD_SCALAR(plain, BOOL)) {
  const int n = pld_world_size(hs);
  const int64_t mb = pld_tensor_dim(y, 1), h = pld_tensor_dim(y, 2);
  const int64_t ns = PLD_FUSED_SIGNAL_CELLS(n, 1), nc = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf st =
      pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(n * mb, h));
  pld_window_buf sig = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf csig = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(nc));
  for (int r = 0; r < n; r++)
    pld_dispatch(hs, rs_device, r, pld_slice(hs, a, r), pld_slice(hs, b, r),
                 pld_window_view(hs, st, PLD_FP32, PLD_SHAPE(n * mb, h)),
                 pld_window_view(hs, st, PLD_FP32, PLD_SHAPE(n, mb, h)),
                 pld_slice(hs, y, r),
                 pld_window_view(hs, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(hs, csig, PLD_INT32, PLD_SHAPE(nc)), plain);
}

/* ---- the harness
 * -------------------------------------------------------------
 */

static int reps = 5;      /* repetitions; `quick`: 3 */
static const char *trace; /* --trace: every pld run's trace, or NULL */

/* A row of the table. */
struct row {
  char what[8], size[48];
  int p;
  double pld, native, route; /* medians in seconds; route: share, or -1 */
  const char *target;        /* "<= 1.0x", or NULL: reported */
  char split[160];           /* where pld's time goes, or "" */
};
static struct row table[32];
static int nrows;

/* No tensor: what tensor() and resident() return on failure. */
static const pld_tensor NO_TENSOR = {NULL};

static pld_config config(int p) {
  static const int ids[MAX_P] = {0, 1, 2, 3};
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.device_ids = ids;
  cfg.ndevices = p;
  cfg.keep_windows = 1;
  cfg.trace = trace ? trace : "";
  return cfg;
}

/* A host tensor, NULL (reported, failed set) if it cannot be made. */
static pld_tensor tensor(pld_dtype dt, int ndim, const int64_t *shape) {
  pld_tensor t;
  const int st = pld_tensor_create(dt, ndim, shape, &t);
  if (st) {
    pld_failed(st, "pld_tensor_create");
    return NO_TENSOR;
  }
  return t;
}

/* Compiled for argv and prepared (shared with `share` if not NULL), or
 * NULL, reported. */
static pld_program *program(pld_host_fn host, int p, pld_program *share,
                            int argc, const pld_arg *argv, const char *what) {
  pld_config cfg = config(p);
  cfg.share = share;
  pld_program *prog = NULL;
  char buf[96];
  int st = pld_compile(host, &cfg, argc, argv, &prog);
  if (st) {
    snprintf(buf, sizeof buf, "pld_compile (%s)", what);
    pld_failed(st, buf);
    return NULL;
  }
  if ((st = pld_program_prepare(prog))) {
    snprintf(buf, sizeof buf, "pld_program_prepare (%s)", what);
    pld_failed(st, buf);
    pld_program_destroy(prog);
    return NULL;
  }
  return prog;
}

/* A device-resident copy (one part per rank) of host tensor src [P, ...],
 * or NULL, reported. */
static pld_tensor resident(pld_program *prog, pld_tensor src) {
  pld_tensor d;
  const int nd = pld_tensor_ndim(src);
  int64_t shape[PLD_MAX_DIMS];
  for (int i = 1; i < nd; i++)
    shape[i - 1] = pld_tensor_dim(src, i);
  int st = pld_device_tensor_create(prog, PLD_EACH_RANK, pld_tensor_dtype(src),
                                    nd - 1, shape, &d);
  if (st) {
    pld_failed(st, "pld_device_tensor_create");
    return NO_TENSOR;
  }
  if ((st = pld_device_tensor_write(d, src))) {
    pld_failed(st, "pld_device_tensor_write");
    pld_tensor_destroy(d);
    return NO_TENSOR;
  }
  return d;
}

/* Host tensor dst = device-resident src; 0, or -1 (reported). */
static int back(pld_tensor src, pld_tensor dst) {
  const int st = pld_device_tensor_read(src, dst);
  return st ? pld_failed(st, "pld_device_tensor_read"), -1 : 0;
}

/* One run of prog: its seconds, or -1 if it failed (reported). */
static double run(pld_program *prog, int argc, const pld_arg *argv,
                  const char *what) {
  const double t0 = now_s();
  const int st = pld_program_run(prog, argc, argv);
  const double t = now_s() - t0;
  if (st) {
    char buf[96];
    snprintf(buf, sizeof buf, "pld_program_run (%s)", what);
    pld_failed(st, buf);
    return -1;
  }
  return t;
}

/* A timed run of prog right after an untimed one, as mpi_workloads
 * times the layer right after its warm-up: both sides warm (a prepared
 * program's first run after the machine ran something else for a while
 * finds its device threads asleep and their caches cold, 0.3 ms of the
 * small TP-MLP's 0.7). */
static double warm_run(pld_program *prog, int argc, const pld_arg *argv,
                       const char *what) {
  return run(prog, argc, argv, what) < 0 ? -1 : run(prog, argc, argv, what);
}

/* One job of mpi_workloads `args` on p ranks, one timed repetition:
 * its seconds, or -1 (no MPI, or the job failed: reported).  With check,
 * its result was checked; a wrong one fails this run. */
static double native(int p, const char *args, int check) {
  if (!HAVE_NATIVE)
    return -1;
  char a[256];
  double out[4];
  snprintf(a, sizeof a, "%s 1 %d", args, check);
  const int n = mpi_job(p, "", PLD_MPI_WORKLOADS, a, out, 4);
  if (n < 2) {
    fprintf(stderr, "bench_workloads: mpi_workloads %s: no figures\n", a);
    failed = 1;
    return -1;
  }
  if (out[0] != 0) {
    fprintf(stderr,
            "bench_workloads: mpi_workloads %s: a wrong result on %g "
            "ranks\n",
            a, out[0]);
    failed = 1;
    return -1;
  }
  return out[1];
}

/* The median of v[0, n), or -1 if any is -1. */
static double med(double *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i] < 0)
      return -1;
  return median(v, n);
}

/* A row's repetitions: in each, its three programs (prog[m] with argv,
 * whose last argument, the mode, is set to m) and then one native job of
 * `args` on p ranks.  The medians: mode 0's and the native jobs' into w,
 * every mode's into t. */
static void alternate(struct row *w, pld_program *const prog[3],
                      const char *const names[3], int argc, const pld_arg *argv,
                      int p, const char *args, double t[3]) {
  pld_arg a[PLD_MAX_PARAMS];
  memcpy(a, argv, (size_t)argc * sizeof *a);
  double v[3][16], nv[16];
  for (int i = 0; i < reps; i++) {
    for (int32_t m = 0; m < 3; m++) {
      a[argc - 1].v.i = m;
      v[m][i] = warm_run(prog[m], argc, a, names[m]);
    }
    nv[i] = native(p, args, i == 0);
  }
  for (int m = 0; m < 3; m++)
    t[m] = med(v[m], reps);
  w->pld = t[0];
  w->native = med(nv, reps);
}

/* A wrong result (what, where, got and expected): reported, failed set;
 * returns 1. */
static int wrong(const char *what, int r, int64_t i, int64_t c, double got,
                 double want) {
  fprintf(stderr,
          "bench_workloads: %s: a wrong result: rank %d, row %lld, column "
          "%lld: %.9g, expected %.9g\n",
          what, r, (long long)i, (long long)c, got, want);
  failed = 1;
  return 1;
}

/* Rows a check samples: every one up to 32, else 32 spread. */
static int64_t sample_step(int64_t n) { return n <= 32 ? 1 : n / 32; }

static struct row *add_row(const char *what, const char *size, int p,
                           const char *target) {
  struct row *w = &table[nrows++];
  snprintf(w->what, sizeof w->what, "%s", what);
  snprintf(w->size, sizeof w->size, "%s", size);
  w->p = p;
  w->pld = w->native = w->route = -1;
  w->target = target;
  w->split[0] = '\0';
  return w;
}

static void print_row(const struct row *w) {
  char a[32], b[32], c[32], d[32];
  const double ratio = w->pld > 0 && w->native > 0 ? w->pld / w->native : -1;
  const char *verdict = ratio < 0      ? "n/a"
                        : !w->target   ? "reported"
                        : ratio <= 1.0 ? "met"
                                       : "missed";
  printf("  %-5s %-24s %d  %11s %11s %8s %7s  %s %s", w->what, w->size, w->p,
         fmt(a, sizeof a, 2, " ms", w->pld * 1e3),
         fmt(b, sizeof b, 2, " ms", w->native * 1e3),
         fmt(c, sizeof c, 2, "x", ratio),
         fmt(d, sizeof d, 1, "%", w->route * 100), w->target ? w->target : "",
         verdict);
  if (w->route >= 0)
    printf(", route %s", w->route <= 0.15 ? "met" : "missed");
  printf("\n");
  if (w->split[0])
    printf("        pld split: %s\n", w->split);
  fflush(stdout);
}

/* ---- (1) ------------------------------------------------------------------
 */

/* Checks the MoE layer's run: the top-2 of every token bit for bit (but
 * near ties), the output of sampled tokens against the plain C layer. */
static int moe_check(int p, int64_t t, int64_t h, int64_t f, int64_t e,
                     pld_tensor x, pld_tensor ti, pld_tensor out) {
  const float *xs = pld_tensor_data(x), *os = pld_tensor_data(out);
  const int32_t *is = pld_tensor_data(ti);
  const float *rx[32 * MAX_P];
  int32_t idx[64 * MAX_P];
  float w[64 * MAX_P], lg[256];
  int64_t where[32 * MAX_P], n = 0;
  float *wg = malloc(sizeof(float) * (size_t)(h * e));
  float *want = malloc(sizeof(float) * (size_t)(32 * MAX_P * h));
  int bad = !wg || !want;
  if (bad)
    fprintf(stderr, "bench_workloads: out of memory\n"), failed = 1;
  else
    wl_fill(wg, h * e, WL_WG, 0, wl_scale(h));
  for (int64_t g = 0; g < p * t && !bad; g++) {
    const float *xt = xs + g * h;
    const int32_t *got = is + g * 2;
    int32_t ix[2];
    float v[2];
    wl_row_matmul(xt, wg, h, e, lg);
    if (wl_topk(lg, (int32_t)e, 2, ix) < 1e-4f)
      continue;
    if (got[0] != ix[0] || got[1] != ix[1]) {
      const int j = got[0] != ix[0] ? 0 : 1;
      bad = wrong("moe top-2", (int)(g / t), g % t, j, got[j], ix[j]);
      break;
    }
    if ((g % t) % sample_step(t) || n == 32 * MAX_P)
      continue;
    v[0] = lg[ix[0]], v[1] = lg[ix[1]];
    wl_softmax(v, 2, w + 2 * n);
    idx[2 * n] = ix[0], idx[2 * n + 1] = ix[1];
    rx[n] = xt;
    where[n++] = g;
  }
  if (!bad && wl_moe_ref(n, rx, idx, w, h, f, (int32_t)e, want)) {
    fprintf(stderr, "bench_workloads: out of memory\n");
    bad = failed = 1;
  }
  for (int64_t q = 0; q < n && !bad; q++)
    for (int64_t c = 0; c < h && !bad; c++)
      if (!wl_close(os[where[q] * h + c], want[q * h + c]))
        bad = wrong("moe", (int)(where[q] / t), where[q] % t, c,
                    os[where[q] * h + c], want[q * h + c]);
  free(wg), free(want);
  return bad;
}

/* out[t] = (w0 + w1 + ...) x[t] = x[t]: the combine of the received rows
 * (the identity expert), for every token. */
static int identity_check(const char *what, pld_tensor x, pld_tensor out) {
  const float *xs = pld_tensor_data(x), *os = pld_tensor_data(out);
  const int64_t rows = pld_tensor_numel(x) / pld_tensor_dim(x, 2);
  const int64_t h = pld_tensor_dim(x, 2), t = pld_tensor_dim(x, 1);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < h; c++)
      if (!wl_close(os[i * h + c], xs[i * h + c]))
        return wrong(what, (int)(i / t), i % t, c, os[i * h + c],
                     xs[i * h + c]);
  return 0;
}

static void moe_row(int p, int64_t t, int64_t h, int64_t f, int64_t e) {
  char size[48], args[128];
  snprintf(size, sizeof size, "T=%lld H=%lld F=%lld E=%lld", (long long)t,
           (long long)h, (long long)f, (long long)e);
  struct row *w = add_row("moe", size, p, "<= 1.0x");
  const int64_t l = e / p;
  pld_tensor x = tensor(PLD_FP32, 3, (const int64_t[]){p, t, h});
  pld_tensor wg = tensor(PLD_FP32, 3, (const int64_t[]){p, h, e});
  pld_tensor w1 = tensor(PLD_FP32, 4, (const int64_t[]){p, l, h, f});
  pld_tensor w2 = tensor(PLD_FP32, 4, (const int64_t[]){p, l, f, h});
  pld_tensor ti = tensor(PLD_INT32, 3, (const int64_t[]){p, t, K2});
  pld_tensor tw = tensor(PLD_FP32, 3, (const int64_t[]){p, t, K2});
  pld_tensor out = tensor(PLD_FP32, 3, (const int64_t[]){p, t, h});
  pld_program *prog[3] = {NULL, NULL, NULL};
  pld_tensor dwg = NO_TENSOR, dw1 = NO_TENSOR, dw2 = NO_TENSOR;
  pld_tensor dx = NO_TENSOR, dti = NO_TENSOR, dtw = NO_TENSOR;
  pld_tensor dout = NO_TENSOR;
  if (!x.p || !wg.p || !w1.p || !w2.p || !ti.p || !tw.p || !out.p)
    goto done;
  wl_fill(pld_tensor_data(x), p * t * h, WL_X, 0, 1.0f);
  for (int r = 0; r < p; r++)
    wl_fill((float *)pld_tensor_data(wg) + r * h * e, h * e, WL_WG, 0,
            wl_scale(h));
  wl_fill(pld_tensor_data(w1), p * l * h * f, WL_W1, 0, wl_scale(h));
  wl_fill(pld_tensor_data(w2), p * l * f * h, WL_W2, 0, wl_scale(f));
  static const char *const names[3] = {"moe layer", "moe route", "moe gate"};
  for (int32_t m = 0; m < 3; m++) {
    prog[m] = program(moe_host, p, prog[0],
                      PLD_ARGS(x, wg, w1, w2, ti, tw, out, m), names[m]);
    if (!prog[m])
      goto done;
  }
  if (!(dwg = resident(prog[0], wg)).p || !(dw1 = resident(prog[0], w1)).p ||
      !(dw2 = resident(prog[0], w2)).p || !(dx = resident(prog[0], x)).p ||
      !(dti = resident(prog[0], ti)).p || !(dtw = resident(prog[0], tw)).p ||
      !(dout = resident(prog[0], out)).p)
    goto done;
  /* The checked runs, untimed: the route program's, then the layer's. */
  if (run(prog[1], PLD_ARGS(dx, dwg, dw1, dw2, dti, dtw, dout, 1), names[1]) <
          0 ||
      back(dout, out) || identity_check("moe route", x, out) ||
      run(prog[2], PLD_ARGS(dx, dwg, dw1, dw2, dti, dtw, dout, 2), names[2]) <
          0 ||
      run(prog[0], PLD_ARGS(dx, dwg, dw1, dw2, dti, dtw, dout, 0), names[0]) <
          0 ||
      back(dout, out) || back(dti, ti) || moe_check(p, t, h, f, e, x, ti, out))
    goto done;
  snprintf(args, sizeof args, "moe %lld %lld %lld %lld", (long long)t,
           (long long)h, (long long)f, (long long)e);
  const int32_t mode = 0;
  double t3[3];
  alternate(w, prog, names, PLD_ARGS(dx, dwg, dw1, dw2, dti, dtw, dout, mode),
            p, args, t3);
  const double rt = t3[1], gt = t3[2];
  if (w->pld > 0 && rt >= 0 && gt >= 0) {
    w->route = (rt - gt > 0 ? rt - gt : 0) / w->pld;
    snprintf(w->split, sizeof w->split,
             "gate program (run + gate) %.2f ms, route + dispatch + combine "
             "%.2f ms, up/act/down %.2f ms",
             gt * 1e3, (rt - gt) * 1e3, (w->pld - rt) * 1e3);
  }
done:
  print_row(w);
  pld_tensor_destroy(dwg), pld_tensor_destroy(dw1), pld_tensor_destroy(dw2);
  pld_tensor_destroy(dx), pld_tensor_destroy(dti), pld_tensor_destroy(dtw);
  pld_tensor_destroy(dout);
  for (int m = 2; m >= 0; m--)
    pld_program_destroy(prog[m]);
  pld_tensor_destroy(x), pld_tensor_destroy(wg), pld_tensor_destroy(w1);
  pld_tensor_destroy(w2), pld_tensor_destroy(ti), pld_tensor_destroy(tw);
  pld_tensor_destroy(out);
}

/* ---- (2) ------------------------------------------------------------------
 */

static void ep_row(int p, int64_t t, int64_t d, int32_t k, int32_t e) {
  char size[48], args[128];
  snprintf(size, sizeof size, "T=%lld D=%lld top-%d E=%d", (long long)t,
           (long long)d, k, e);
  struct row *w = add_row("ep", size, p, "<= 1.0x");
  pld_tensor x = tensor(PLD_FP32, 3, (const int64_t[]){p, t, d});
  pld_tensor ti = tensor(PLD_INT32, 3, (const int64_t[]){p, t, k});
  pld_tensor tw = tensor(PLD_FP32, 3, (const int64_t[]){p, t, k});
  pld_tensor out = tensor(PLD_FP32, 3, (const int64_t[]){p, t, d});
  pld_program *prog[3] = {NULL, NULL, NULL};
  pld_tensor dx = NO_TENSOR, dti = NO_TENSOR, dtw = NO_TENSOR;
  pld_tensor dout = NO_TENSOR;
  if (!x.p || !ti.p || !tw.p || !out.p)
    goto done;
  wl_fill(pld_tensor_data(x), p * t * d, WL_X, 0, 1.0f);
  /* The routes, and the most rows a rank receives with them: the
   * capacity of the receive windows. */
  int64_t recv[MAX_P] = {0};
  const int32_t l = e / p;
  for (int64_t i = 0; i < p * t; i++) {
    int32_t *idx = (int32_t *)pld_tensor_data(ti) + i * k;
    wl_ep_route(i, e, k, idx, (float *)pld_tensor_data(tw) + i * k);
    for (int32_t j = 0; j < k; j++)
      recv[idx[j] / l]++;
  }
  int32_t cap = 0;
  for (int r = 0; r < p; r++)
    cap = recv[r] > cap ? (int32_t)recv[r] : cap;
  /* The layer (mode 0), and for the split the dispatch alone (1) and a
   * run launching nothing (2), on the same devices. */
  static const char *const names[3] = {"ep", "ep dispatch", "ep empty"};
  for (int32_t m = 0; m < 3; m++)
    if (!(prog[m] = program(ep_host, p, prog[0],
                            PLD_ARGS(x, ti, tw, out, e, cap, m), names[m])))
      goto done;
  if (!(dx = resident(prog[0], x)).p || !(dti = resident(prog[0], ti)).p ||
      !(dtw = resident(prog[0], tw)).p || !(dout = resident(prog[0], out)).p ||
      run(prog[0], PLD_ARGS(dx, dti, dtw, dout, e, cap, 0), "ep") < 0 ||
      back(dout, out) || identity_check("ep", x, out))
    goto done;
  snprintf(args, sizeof args, "ep %lld %lld %d %d", (long long)t, (long long)d,
           k, e);
  const int32_t mode = 0;
  double t3[3];
  alternate(w, prog, names, PLD_ARGS(dx, dti, dtw, dout, e, cap, mode), p, args,
            t3);
  const double dt = t3[1], et = t3[2];
  if (w->pld > 0 && dt >= 0 && et >= 0)
    snprintf(w->split, sizeof w->split,
             "empty run (no kernel) %.2f ms, dispatch %.2f ms, "
             "combine %.2f ms",
             et * 1e3, (dt - et) * 1e3, (w->pld - dt) * 1e3);
done:
  print_row(w);
  for (int m = 2; m >= 0; m--)
    pld_program_destroy(prog[m]);
  pld_tensor_destroy(dx), pld_tensor_destroy(dti), pld_tensor_destroy(dtw);
  pld_tensor_destroy(dout);
  pld_tensor_destroy(x), pld_tensor_destroy(ti), pld_tensor_destroy(tw);
  pld_tensor_destroy(out);
}

/* ---- (3) and (4) ----------------------------------------------------------
 */

/* The TP shapes at (T, H, F) over p ranks, their host tensors: x [P, MB,
 * H], w1 [P, H, FL] (W1's columns of rank r), w2 [P, FL, H] (W2's rows). */
struct tp {
  int64_t t, h, f, mb, fl;
  pld_tensor x, w1, w2;
};

static int tp_make(struct tp *s, int p, int64_t t, int64_t h, int64_t f) {
  *s = (struct tp){.t = t, .h = h, .f = f, .mb = t / p, .fl = f / p};
  s->x = tensor(PLD_FP32, 3, (const int64_t[]){p, s->mb, h});
  s->w1 = tensor(PLD_FP32, 3, (const int64_t[]){p, h, s->fl});
  s->w2 = tensor(PLD_FP32, 3, (const int64_t[]){p, s->fl, h});
  if (!s->x.p || !s->w1.p || !s->w2.p)
    return -1;
  wl_fill(pld_tensor_data(s->x), t * h, WL_X, 0, 1.0f);
  float *w1 = pld_tensor_data(s->w1);
  for (int r = 0; r < p; r++)
    for (int64_t i = 0; i < h; i++)
      wl_fill(w1 + (r * h + i) * s->fl, s->fl, WL_W1, i * f + r * s->fl,
              wl_scale(h));
  wl_fill(pld_tensor_data(s->w2), f * h, WL_W2, 0, wl_scale(f));
  return 0;
}

static void tp_free(struct tp *s) {
  pld_tensor_destroy(s->x), pld_tensor_destroy(s->w1);
  pld_tensor_destroy(s->w2);
}

static void tp_row(int p, int64_t t, int64_t h, int64_t f) {
  char size[48], args[128];
  snprintf(size, sizeof size, "T=%lld H=%lld F=%lld", (long long)t,
           (long long)h, (long long)f);
  struct row *w = add_row("tp", size, p, "<= 1.0x");
  struct tp s;
  pld_program *prog[3] = {NULL, NULL, NULL};
  pld_tensor y = NO_TENSOR, dw1 = NO_TENSOR, dw2 = NO_TENSOR;
  pld_tensor dx = NO_TENSOR, dy = NO_TENSOR;
  float *w1 = NULL, *w2 = NULL, *z = NULL, *ry = NULL;
  if (tp_make(&s, p, t, h, f) ||
      !(y = tensor(PLD_FP32, 3, (const int64_t[]){p, s.mb, h})).p)
    goto done;
  /* The layer (mode 0), and for the split the AllGather-GEMM and relu
   * alone (1) and a run launching nothing (2), on the same devices. */
  static const char *const names[3] = {"tp", "tp up", "tp empty"};
  for (int32_t m = 0; m < 3; m++)
    if (!(prog[m] = program(tp_host, p, prog[0],
                            PLD_ARGS(s.x, s.w1, s.w2, y, m), names[m])))
      goto done;
  if (!(dw1 = resident(prog[0], s.w1)).p ||
      !(dw2 = resident(prog[0], s.w2)).p || !(dx = resident(prog[0], s.x)).p ||
      !(dy = resident(prog[0], y)).p ||
      run(prog[0], PLD_ARGS(dx, dw1, dw2, dy, 0), "tp") < 0 || back(dy, y))
    goto done;
  /* The check: sampled rows of Y against the plain C MLP. */
  w1 = malloc(sizeof(float) * (size_t)(h * f));
  w2 = malloc(sizeof(float) * (size_t)(f * h));
  z = malloc(sizeof(float) * (size_t)f);
  ry = malloc(sizeof(float) * (size_t)h);
  if (!w1 || !w2 || !z || !ry) {
    fprintf(stderr, "bench_workloads: out of memory\n");
    failed = 1;
    goto done;
  }
  wl_fill(w1, h * f, WL_W1, 0, wl_scale(h));
  wl_fill(w2, f * h, WL_W2, 0, wl_scale(f));
  const float *xs = pld_tensor_data(s.x), *ys = pld_tensor_data(y);
  for (int64_t i = 0; i < t; i += sample_step(t)) {
    wl_ffn(xs + i * h, w1, w2, h, f, z, ry);
    for (int64_t c = 0; c < h; c++)
      if (!wl_close(ys[i * h + c], ry[c])) {
        wrong("tp", (int)(i / s.mb), i % s.mb, c, ys[i * h + c], ry[c]);
        goto done;
      }
  }
  snprintf(args, sizeof args, "tp %lld %lld %lld", (long long)t, (long long)h,
           (long long)f);
  const int32_t mode = 0;
  double t3[3];
  alternate(w, prog, names, PLD_ARGS(dx, dw1, dw2, dy, mode), p, args, t3);
  const double ut = t3[1], et = t3[2];
  if (w->pld > 0 && ut >= 0 && et >= 0)
    snprintf(w->split, sizeof w->split,
             "empty run (no kernel) %.2f ms, AllGather-GEMM + relu "
             "%.2f ms, GEMM-ReduceScatter + sum %.2f ms",
             et * 1e3, (ut - et) * 1e3, (w->pld - ut) * 1e3);
done:
  print_row(w);
  free(w1), free(w2), free(z), free(ry);
  pld_tensor_destroy(dw1), pld_tensor_destroy(dw2), pld_tensor_destroy(y);
  pld_tensor_destroy(dx), pld_tensor_destroy(dy);
  for (int m = 2; m >= 0; m--)
    pld_program_destroy(prog[m]);
  tp_free(&s);
}

/* Whether two results agree (within wl_close) everywhere. */
static int same(const char *what, pld_tensor a, pld_tensor b) {
  const float *as = pld_tensor_data(a), *bs = pld_tensor_data(b);
  const int64_t n = pld_tensor_numel(a), c = pld_tensor_dim(a, 2);
  const int64_t per = n / pld_tensor_dim(a, 0);
  for (int64_t i = 0; i < n; i++)
    if (!wl_close(as[i], bs[i]))
      return wrong(what, (int)(i / per), i % per / c, i % c, as[i], bs[i]);
  return 0;
}

/* Times the fused program p[0] against the unfused p[1], alternating
 * which goes first: argv[0] and argv[1] their arguments. */
static void fused_times(struct row *w, pld_program *const prog[2],
                        const pld_arg *const argv[2], int argc,
                        const char *what) {
  double v[2][16];
  for (int i = 0; i < reps; i++)
    for (int j = 0; j < 2; j++) {
      const int m = (i + j) % 2;
      v[m][i] = warm_run(prog[m], argc, argv[m], what);
    }
  w->pld = med(v[0], reps);
  w->native = med(v[1], reps);
}

static void ag_row(int p, int64_t t, int64_t h, int64_t f) {
  char size[48];
  struct tp s;
  if (tp_make(&s, p, t, h, f))
    return;
  snprintf(size, sizeof size, "%lldx%lld @ %lldx%lld", (long long)s.mb,
           (long long)h, (long long)h, (long long)s.fl);
  struct row *w = add_row("ag", size, p, NULL);
  pld_program *prog[2] = {NULL, NULL};
  pld_tensor c[2] = {NO_TENSOR, NO_TENSOR}, db = NO_TENSOR;
  pld_tensor dc[2] = {NO_TENSOR, NO_TENSOR}, da = NO_TENSOR;
  for (int m = 0; m < 2; m++)
    if (!(c[m] = tensor(PLD_FP32, 3, (const int64_t[]){p, t, s.fl})).p)
      goto done;
  for (int m = 0; m < 2; m++) {
    const bool plain = m;
    if (!(prog[m] =
              program(ag_host, p, prog[0], PLD_ARGS(s.x, s.w1, c[m], plain),
                      m ? "ag unfused" : "ag fused")))
      goto done;
  }
  if (!(db = resident(prog[0], s.w1)).p || !(da = resident(prog[0], s.x)).p ||
      !(dc[0] = resident(prog[0], c[0])).p ||
      !(dc[1] = resident(prog[0], c[1])).p)
    goto done;
  const pld_arg args[2][4] = {
      {PLD_ARG(da), PLD_ARG(db), PLD_ARG(dc[0]), PLD_ARG(false)},
      {PLD_ARG(da), PLD_ARG(db), PLD_ARG(dc[1]), PLD_ARG(true)}};
  if (run(prog[0], 4, args[0], "ag fused") < 0 ||
      run(prog[1], 4, args[1], "ag unfused") < 0 || back(dc[0], c[0]) ||
      back(dc[1], c[1]) || same("ag fused against unfused", c[0], c[1]))
    goto done;
  /* Sampled rows of C against the plain C product, on every rank. */
  const float *xs = pld_tensor_data(s.x), *bs = pld_tensor_data(s.w1);
  const float *cs = pld_tensor_data(c[0]);
  float *ref = malloc(sizeof(float) * (size_t)s.fl);
  for (int r = 0; r < p && ref; r++)
    for (int64_t i = 0; i < t; i += sample_step(t)) {
      wl_row_matmul(xs + i * h, bs + r * h * s.fl, h, s.fl, ref);
      for (int64_t j = 0; j < s.fl; j++)
        if (!wl_close(cs[(r * t + i) * s.fl + j], ref[j])) {
          wrong("ag", r, i, j, cs[(r * t + i) * s.fl + j], ref[j]);
          free(ref);
          goto done;
        }
    }
  free(ref);
  fused_times(w, prog, (const pld_arg *const[2]){args[0], args[1]}, 4, "ag");
done:
  print_row(w);
  pld_tensor_destroy(da), pld_tensor_destroy(dc[0]);
  pld_tensor_destroy(dc[1]);
  pld_tensor_destroy(db);
  pld_program_destroy(prog[1]), pld_program_destroy(prog[0]);
  pld_tensor_destroy(c[0]), pld_tensor_destroy(c[1]);
  tp_free(&s);
}

static void rs_row(int p, int64_t t, int64_t h, int64_t f) {
  char size[48];
  struct tp s;
  if (tp_make(&s, p, t, h, f))
    return;
  snprintf(size, sizeof size, "%lldx%lld @ %lldx%lld", (long long)t,
           (long long)s.fl, (long long)s.fl, (long long)h);
  struct row *w = add_row("rs", size, p, NULL);
  pld_program *prog[2] = {NULL, NULL};
  pld_tensor y[2] = {NO_TENSOR, NO_TENSOR}, da = NO_TENSOR, db = NO_TENSOR;
  pld_tensor dy[2] = {NO_TENSOR, NO_TENSOR};
  pld_tensor a = tensor(PLD_FP32, 3, (const int64_t[]){p, t, s.fl});
  if (!a.p)
    goto done;
  wl_fill(pld_tensor_data(a), p * t * s.fl, WL_X + 10, 0, 1.0f);
  for (int m = 0; m < 2; m++)
    if (!(y[m] = tensor(PLD_FP32, 3, (const int64_t[]){p, s.mb, h})).p)
      goto done;
  for (int m = 0; m < 2; m++) {
    const bool plain = m;
    if (!(prog[m] = program(rs_host, p, prog[0], PLD_ARGS(a, s.w2, y[m], plain),
                            m ? "rs unfused" : "rs fused")))
      goto done;
  }
  if (!(da = resident(prog[0], a)).p || !(db = resident(prog[0], s.w2)).p ||
      !(dy[0] = resident(prog[0], y[0])).p ||
      !(dy[1] = resident(prog[0], y[1])).p)
    goto done;
  const pld_arg args[2][4] = {
      {PLD_ARG(da), PLD_ARG(db), PLD_ARG(dy[0]), PLD_ARG(false)},
      {PLD_ARG(da), PLD_ARG(db), PLD_ARG(dy[1]), PLD_ARG(true)}};
  if (run(prog[0], 4, args[0], "rs fused") < 0 ||
      run(prog[1], 4, args[1], "rs unfused") < 0 || back(dy[0], y[0]) ||
      back(dy[1], y[1]) || same("rs fused against unfused", y[0], y[1]))
    goto done;
  /* Sampled rows of Y against the plain C sum of the ranks' products. */
  const float *as = pld_tensor_data(a), *bs = pld_tensor_data(s.w2);
  const float *ys = pld_tensor_data(y[0]);
  float *ref = malloc(sizeof(float) * (size_t)h * 2);
  for (int64_t i = 0; i < t && ref; i += sample_step(t)) {
    for (int64_t j = 0; j < h; j++)
      ref[j] = 0.0f;
    for (int r = 0; r < p; r++) {
      wl_row_matmul(as + (r * t + i) * s.fl, bs + r * s.fl * h, s.fl, h,
                    ref + h);
      for (int64_t j = 0; j < h; j++)
        ref[j] += ref[h + j];
    }
    for (int64_t j = 0; j < h; j++)
      if (!wl_close(ys[i * h + j], ref[j])) {
        wrong("rs", (int)(i / s.mb), i % s.mb, j, ys[i * h + j], ref[j]);
        free(ref);
        goto done;
      }
  }
  free(ref);
  fused_times(w, prog, (const pld_arg *const[2]){args[0], args[1]}, 4, "rs");
done:
  print_row(w);
  pld_tensor_destroy(dy[0]), pld_tensor_destroy(dy[1]);
  pld_tensor_destroy(da), pld_tensor_destroy(db);
  pld_program_destroy(prog[1]), pld_program_destroy(prog[0]);
  pld_tensor_destroy(y[0]), pld_tensor_destroy(y[1]);
  pld_tensor_destroy(a);
  tp_free(&s);
}

/* ---- main -----------------------------------------------------------------
 */

static const int64_t sizes[2][3] = {{64, 256, 512}, {512, 1024, 2048}};

int main(int argc, char **argv) {
  int want[4] = {0, 0, 0, 0}, any = 0, only_p = 0, only_size = -1;
  static const char *const parts[4] = {"moe", "ep", "tp", "fused"};
  for (int i = 1; i < argc; i++) {
    int known = strcmp(argv[i], "quick") == 0;
    if (known)
      reps = 3;
    if (i + 1 < argc && !known) {
      known = 1;
      if (strcmp(argv[i], "-n") == 0)
        only_p = atoi(argv[++i]);
      else if (strcmp(argv[i], "-s") == 0)
        only_size = atoi(argv[++i]);
      else if (strcmp(argv[i], "--trace") == 0)
        trace = argv[++i];
      else
        known = 0;
    }
    for (int j = 0; j < 4; j++)
      if (strcmp(argv[i], parts[j]) == 0)
        want[j] = known = any = 1;
    if (!known) {
      fprintf(stderr,
              "usage: %s [quick] [moe] [ep] [tp] [fused] [-n P] [-s SIZE] "
              "[--trace FILE]\n",
              argv[0]);
      return 2;
    }
  }
  for (int j = 0; j < 4 && !any; j++)
    want[j] = 1;
  /* The references observe nothing; OpenBLAS one thread per rank. */
  unsetenv("PLD_TRACE");
  unsetenv("PLD_CHECK");
  unsetenv("PLD_DEBUG");
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  printf("bench_workloads: MoE layer, EP dispatch+combine, TP-MLP and the "
         "fused GEMMs, pld (a2a3sim, shm fabric) against MPI + OpenBLAS "
         "(median of %d repetitions, pld and native alternating)\n",
         reps);
  if (HAVE_NATIVE) {
    char cmd[512];
    mpi_cmd(cmd, sizeof cmd, 2, "", PLD_MPI_WORKLOADS, "moe T H F E 1 CHECK");
    printf("native: %s (one job per repetition; see bench/mpi_workloads.c)\n",
           cmd);
  } else {
    printf("  (Open MPI or OpenBLAS was not found when building: native "
           "figures are n/a)\n");
  }
  print_busy("figures");
  printf("  %-5s %-24s %s  %11s %11s %8s %7s  %s\n", "what", "size", "P", "pld",
         "native", "ratio", "route%", "target");
  for (int p = 2; p <= MAX_P; p += 2) {
    if (only_p && p != only_p)
      continue;
    for (int z = 0; z < 2 && want[0]; z++)
      if (only_size < 0 || z == only_size)
        moe_row(p, sizes[z][0], sizes[z][1], sizes[z][2], 8);
    if (want[1])
      ep_row(p, 128, 4096, 6, 16 * p);
    for (int z = 0; z < 2 && want[2]; z++)
      if (only_size < 0 || z == only_size)
        tp_row(p, sizes[z][0], sizes[z][1], sizes[z][2]);
    for (int z = 0; z < 2 && want[3]; z++) {
      if (only_size >= 0 && z != only_size)
        continue;
      ag_row(p, sizes[z][0], sizes[z][1], sizes[z][2]);
      rs_row(p, sizes[z][0], sizes[z][1], sizes[z][2]);
    }
  }
  printf("  (ratio: pld / native; for ag and rs, fused / unfused pld, the "
         "\"native\" column the unfused steps; route%%: route kernel + "
         "dispatch + combine as a share of pld's layer)\n");
  return failed;
}
