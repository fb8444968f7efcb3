/* Step 17: a host task - the host CPU reduces what the ranks computed.
 *
 * Every rank computes a partial result of its own data: sq[r] = x[r] *
 * x[r], in a rank intermediate, a tensor that lives in its device's memory
 * between two of its dispatches and is never copied to the host.  A second
 * dispatch per rank scales it into its row of `partial`, a host
 * intermediate: partial[r] = (r + 1) * sq[r].  Then the host CPU itself
 * sums the rows, as a host task:
 *
 *   t_sum (host task)   y[i] = sum over r of partial[r][i]
 *
 * and every rank goes on with the sum: z[r] = x[r] + y.
 *
 * The host orchestrator only records these steps (when the program is
 * compiled); the order they run in follows the data.  t_sum reads partial,
 * which the second dispatches write: it starts when each rank's second
 * dispatch has finished, and what the devices wrote reaches partial first.
 * The last dispatches read y, which t_sum writes: each starts when t_sum
 * has finished, with y copied to its device.  Nothing else waits: a rank's
 * first dispatches run while other ranks are still starting.
 *
 *   host       intermediates sq (one per rank) and partial [P, N]; three
 *              dispatches per rank and the host task.
 *   AICPU      launches each kernel on one block.
 *   kernels    square, scale into the partial row, add y.
 *   host task  the sum over the rows, in plain C on the host CPU.
 *
 * The scale (r + 1) is a scalar of the dispatch; an integer-valued x gives
 * exact sums, checked bit for bit against a plain C loop in double.
 *
 *   17_host_task -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 3001, TILE = 1024 };
PLD_DYNAMIC(NR);

/* dst = f(a) tile by tile over a row of N; f: 0 square, 1 scale by s,
 * 2 add b. */
static void rowwise(pld_core k, pld_tensor a, pld_tensor b, pld_tensor dst,
                    int f, float s) {
  for (int64_t c = 0; c < N; c += TILE) {
    int32_t n = (int32_t)(N - c < TILE ? N - c : TILE);
    pld_tile *t = pld_load(k, a, 0, c, 1, n);
    if (f == 0) {
      pld_mul(k, t, t, t);
    } else if (f == 1) {
      pld_muls(k, t, t, s);
    } else {
      pld_tile *u = pld_load(k, b, 0, c, 1, n);
      pld_add(k, t, t, u);
      pld_tile_free(k, u);
    }
    pld_store(k, t, dst, 0, c);
    pld_tile_free(k, t);
  }
}

PLD_KERNEL(square, k, PLD_IN(x, FP32, N), PLD_OUT(sq, FP32, N)) {
  rowwise(k, x, x, sq, 0, 0);
}
PLD_KERNEL(scale, k, PLD_IN(sq, FP32, N), PLD_OUT(row, FP32, N),
           PLD_SCALAR(s, FP32)) {
  rowwise(k, sq, sq, row, 1, s);
}
PLD_KERNEL(add_sum, k, PLD_IN(x, FP32, N), PLD_IN(y, FP32, N),
           PLD_OUT(z, FP32, N)) {
  rowwise(k, x, y, z, 2, 0);
}

PLD_DEVICE(square_dev, a, PLD_IN(x, FP32, N), PLD_OUT(sq, FP32, N)) {
  pld_launch(a, square, 1, x, sq);
}
PLD_DEVICE(scale_dev, a, PLD_IN(sq, FP32, N), PLD_OUT(row, FP32, N),
           PLD_SCALAR(s, FP32)) {
  pld_launch(a, scale, 1, sq, row, s);
}
PLD_DEVICE(add_dev, a, PLD_IN(x, FP32, N), PLD_IN(y, FP32, N),
           PLD_OUT(z, FP32, N)) {
  pld_launch(a, add_sum, 1, x, y, z);
}

/* The host task: plain C on host memory. */
PLD_HOST_TASK(t_sum, t, PLD_IN(partial, FP32, NR, N), PLD_OUT(y, FP32, N)) {
  const float *p = pld_tensor_data(partial);
  float *out = pld_tensor_data(y);
  int64_t n = pld_tensor_dim(partial, 0);
  if (n != pld_task_world_size(t)) {
    pld_task_fail(t, PLD_ERR_ARG, "partial has %lld rows for %d ranks",
                  (long long)n, pld_task_world_size(t));
    return;
  }
  for (int64_t i = 0; i < N; i++) {
    float s = 0;
    for (int64_t r = 0; r < n; r++)
      s += p[r * N + i];
    out[i] = s;
  }
}

PLD_HOST(host_task_demo, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, N),
         PLD_OUT(z, FP32, NR, N)) {
  int n = pld_world_size(h);
  pld_tensor partial = pld_host_tensor(h, PLD_FP32, PLD_SHAPE(n, N));
  for (int r = 0; r < n; r++) {
    pld_tensor sq = pld_rank_tensor(h, r, PLD_FP32, PLD_SHAPE(N));
    pld_dispatch(h, square_dev, r, pld_slice(h, x, r), sq);
    pld_dispatch(h, scale_dev, r, sq, pld_slice(h, partial, r), (float)(r + 1));
  }
  pld_host_task(h, t_sum, partial, y);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, add_dev, r, pld_slice(h, x, r), y, pld_slice(h, z, r));
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  const int64_t n = ex.cfg.ndevices;
  pld_tensor x = example_tensor(&ex, 2, (const int64_t[]){n, N}, 0);
  pld_tensor y = example_tensor(&ex, 2, (const int64_t[]){1, N}, 0);
  pld_tensor z = example_tensor(&ex, 2, (const int64_t[]){n, N}, 0);
  /* y as the host function declares it: one row of N. */
  pld_tensor y1;
  example_check(pld_tensor_wrap(PLD_FP32, pld_tensor_data(y), 1,
                                (const int64_t[]){N}, &y1),
                "pld_tensor_wrap");
  pld_program *prog = example_compile(&ex, host_task_demo, x, y1, z);
  double *want_y = example_reference(y), *want_z = example_reference(z);
  example_for_each_input(in) {
    example_fill(&ex, x, in);
    example_run_program(prog, x, y1, z);
    const float *xs = pld_tensor_data(x);
    for (int64_t i = 0; i < N; i++) {
      /* The host task adds in float, rank after rank: so does this. */
      float s = 0;
      for (int64_t r = 0; r < n; r++) {
        float v = xs[r * N + i];
        s += (float)(r + 1) * (v * v);
      }
      want_y[i] = s;
      for (int64_t r = 0; r < n; r++)
        want_z[r * N + i] = (double)(xs[r * N + i] + s);
    }
    example_expect(&ex, "y = sum of the partial rows (host task)", y, want_y,
                   in);
    example_expect(&ex, "z = x + y", z, want_z, in);
  }
  pld_program_destroy(prog);
  free(want_y);
  free(want_z);
  pld_tensor_destroy(y1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
  return example_done(&ex);
}
