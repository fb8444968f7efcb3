/* Step 18: keep the devices busy - runs submitted while the host prepares
 * the next inputs, and a state that stays on the devices.
 *
 * A decode loop: every step t feeds each rank a new input x_t, and each
 * rank updates a state that lives on its device from step to step:
 *
 *   h_t = h_(t-1) + s_t * x_t      (h_0 = 0)
 *   y_t = h_t
 *
 * The state h is a device-resident tensor (pld_device_tensor_create with
 * PLD_EACH_RANK: one part per rank): passed to every run where the host
 * function takes it, it is never copied in or out; only x_t goes in and
 * y_t comes back.  The step's weight s_t = t + 1 is a scalar of the run:
 * each run brings its own, and the prepared program runs with it (the
 * host orchestrator is traced again, cheaply, and keeps the devices).
 *
 * The host does not wait for a step before preparing the next: it
 * submits the run (pld_program_submit returns at once with a job), fills
 * x_(t+1) while the devices compute step t, and submits again; at most
 * two runs are in flight (the default of pld_config.max_in_flight), the
 * next one's inputs copied to the devices while the current one runs.
 * An input tensor is reused only once the run that read it is done.
 *
 *   host     x [P, N] and y [P, N] per step, h resident [P, N]; one
 *            dispatch per rank.
 *   AICPU    launches the kernel on one block.
 *   kernel   h += s * x, y = h, tile by tile.
 *
 * Every y_t and the final h (read back with pld_device_tensor_read) are
 * checked against a plain C loop: integer-valued inputs keep the sums
 * exact, bit for bit; random inputs within 1e-5.
 *
 *   18_async_decode -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 2048, TILE = 1024, STEPS = 12, RING = 3 };
PLD_DYNAMIC(NR);

PLD_KERNEL(decode_step, k, PLD_IN(x, FP32, N), PLD_INOUT(h, FP32, N),
           PLD_OUT(y, FP32, N), PLD_SCALAR(s, FP32)) {
  for (int64_t c = 0; c < N; c += TILE) {
    pld_tile *a = pld_load(k, x, 0, c, 1, TILE);
    pld_tile *b = pld_load(k, h, 0, c, 1, TILE);
    pld_muls(k, a, a, s);
    pld_add(k, b, b, a);
    pld_store(k, b, h, 0, c);
    pld_store(k, b, y, 0, c);
    pld_tile_free(k, b);
    pld_tile_free(k, a);
  }
}

PLD_DEVICE(decode_dev, a, PLD_IN(x, FP32, N), PLD_INOUT(h, FP32, N),
           PLD_OUT(y, FP32, N), PLD_SCALAR(s, FP32)) {
  pld_launch(a, decode_step, 1, x, h, y, s);
}

PLD_HOST(decode_host, hh, PLD_IN(x, FP32, NR, N), PLD_INOUT(h, FP32, NR, N),
         PLD_OUT(y, FP32, NR, N), PLD_SCALAR(s, FP32)) {
  for (int r = 0; r < pld_world_size(hh); r++)
    pld_dispatch(hh, decode_dev, r, pld_slice(hh, x, r), pld_slice(hh, h, r),
                 pld_slice(hh, y, r), s);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  const int64_t n = ex.cfg.ndevices;
  const int64_t shape[] = {n, N};
  pld_tensor x[RING], y[STEPS];
  for (int i = 0; i < RING; i++)
    x[i] = example_tensor(&ex, 2, shape, 0);
  for (int t = 0; t < STEPS; t++)
    y[t] = example_tensor(&ex, 2, shape, 0);
  pld_tensor h_host = example_tensor(&ex, 2, shape, 0);
  /* Compiled with a host tensor in h's place (the shape is what counts);
   * every run then passes the resident one. */
  pld_program *prog =
      example_compile(&ex, decode_host, x[0], h_host, y[0], 1.0f);
  double *want = example_reference(h_host);
  example_for_each_input(in) {
    pld_tensor h;
    example_check(pld_device_tensor_create(prog, PLD_EACH_RANK, PLD_FP32, 1,
                                           (const int64_t[]){N}, &h),
                  "pld_device_tensor_create");
    for (int64_t i = 0; i < n * N; i++)
      want[i] = 0;
    pld_job *job[STEPS];
    double *wy[STEPS];
    for (int t = 0; t < STEPS; t++) {
      pld_tensor xt = x[t % RING];
      /* The run that read this input RING steps ago is done (at most two
       * are in flight): the tensor is free to refill. */
      if (t >= RING)
        example_check(pld_job_wait(job[t - RING], -1), "pld_job_wait");
      example_fill(&ex, xt, in);
      const float *xs = pld_tensor_data(xt);
      const float s = (float)(t + 1);
      wy[t] = example_reference(y[t]);
      for (int64_t i = 0; i < n * N; i++) {
        /* What the kernel does, in FP32: h + (s * x). */
        want[i] = (double)((float)want[i] + s * xs[i]);
        wy[t][i] = want[i];
      }
      example_check(
          pld_program_submit(prog, PLD_ARGS(xt, h, y[t], s), 0, &job[t]),
          "pld_program_submit");
    }
    for (int t = 0; t < STEPS; t++) {
      example_check(pld_job_wait(job[t], -1), "pld_job_wait");
      int st = pld_job_status(job[t]);
      if (st != PLD_OK) {
        /* A job's failure is its own message, not the last error. */
        if (pld_process_index() == 0)
          fprintf(stderr, "step %d failed (%s): %s\n", t, pld_status_name(st),
                  pld_job_message(job[t]));
        return 1;
      }
      char what[64];
      snprintf(what, sizeof what, "y at step %d = the state h", t);
      example_expect(&ex, what, y[t], wy[t], in);
      example_check(pld_job_free(job[t]), "pld_job_free");
      free(wy[t]);
    }
    example_check(pld_device_tensor_read(h, h_host), "pld_device_tensor_read");
    example_expect(&ex, "the resident state h after every step", h_host, want,
                   in);
    example_check(pld_device_tensor_free(h), "pld_device_tensor_free");
    pld_tensor_destroy(h);
  }
  example_model_take(prog); /* --model: the last step's */
  pld_program_destroy(prog);
  free(want);
  for (int i = 0; i < RING; i++)
    pld_tensor_destroy(x[i]);
  for (int t = 0; t < STEPS; t++)
    pld_tensor_destroy(y[t]);
  pld_tensor_destroy(h_host);
  return example_done(&ex);
}
