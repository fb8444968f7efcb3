/* Compiling: argument and configuration checks, dispatch checks, the
 * artifact folder, allocation failures. */
#include <stdlib.h>
#include <sys/stat.h>

#include "pld_test.h"
#include "core/alloc.h"
#include "programs.h"

static int ids[16];

static void compile_fails(pld_host_fn fn, pld_config *cfg, pld_tensor x,
                          pld_tensor y, int status, const char **subs) {
  pld_program *p = NULL;
  int st = pld_compile(fn, cfg, PLD_ARGS(x, y), &p);
  pld_test_assert_fails(st, status, __FILE__, __LINE__, subs);
  assert_null(p);
}
#define COMPILE_FAILS(fn, cfg, x, y, status, ...)                              \
  compile_fails(fn, cfg, x, y, status, (const char *[]){__VA_ARGS__, NULL})

static void with_tensors(int nr, int64_t r, int64_t c, pld_tensor *x,
                         pld_tensor *y) {
  const int64_t shape[] = {nr, r, c};
  *x = pld_test_tensor(3, shape, 1, 0);
  *y = pld_test_tensor(3, shape, 0, 0);
}

static void test_compile_ok(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_program *p = NULL;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  assert_non_null(p);
  assert_null(pld_program_artifact_dir(p));
  pld_program_destroy(p);
  assert_no_children(); /* compiling starts no device */
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_host_arg_count(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_scale, &cfg, PLD_ARGS(x), &p), PLD_ERR_ARG,
                    "pld_compile: h_scale: expected 2 arguments",
                    "x: FP32[NR, TR, TC] In", "got 1");
  assert_null(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_host_arg_dtype(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_tensor xi;
  assert_ok(pld_tensor_create(PLD_INT32, 3, (int64_t[]){2, TR, TC}, &xi));
  COMPILE_FAILS(h_scale, &cfg, xi, y, PLD_ERR_ARG,
                "pld_compile: h_scale: parameter 'x' (1 of 2)",
                "expected FP32[NR, TR, TC], got INT32[2, 4, 8]");
  pld_tensor_destroy(xi);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_host_arg_shape(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC + 1, &x, &y);
  COMPILE_FAILS(h_scale, &cfg, x, y, PLD_ERR_ARG, "parameter 'x' (1 of 2)",
                "expected FP32[NR, TR, TC], got FP32[2, 4, 9]");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_host_arg_scalar_for_tensor(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_scale, &cfg, PLD_ARGS(x, 3), &p), PLD_ERR_ARG,
                    "parameter 'y' (2 of 2)",
                    "expected a tensor FP32[NR, TR, TC], got a INT32 scalar");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_dynamic_dim_two_values(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y, y3;
  with_tensors(2, TR, TC, &x, &y);
  assert_ok(pld_tensor_create(PLD_FP32, 3, (int64_t[]){3, TR, TC}, &y3));
  COMPILE_FAILS(h_scale, &cfg, x, y3, PLD_ERR_ARG, "parameter 'y' (2 of 2)",
                "dynamic dimension NR (dimension 0) is 3 here",
                "parameter 'x' of h_scale bound it to 2");
  pld_tensor_destroy(y3);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* The world has 3 ranks but the tensors are sliced for 2. */
static void test_world_larger_than_tensors(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 3, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_scale, &cfg, x, y, PLD_ERR_BOUNDS,
                "pld_slice (in h_scale): index: expected [0, 2)", "got 2");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_HOST(h_missing_arg, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_scale, r, pld_slice(h, x, r), pld_slice(h, y, r));
}

static void test_dispatch_arg_count(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_missing_arg, &cfg, x, y, PLD_ERR_ARG,
                "pld_dispatch to rank 0 (in h_missing_arg): d_scale: expected "
                "3 arguments",
                "rank: INT32 scalar", "got 2");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_HOST(h_float_rank, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_scale, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 (double)r);
}

static void test_dispatch_scalar_dtype(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_float_rank, &cfg, x, y, PLD_ERR_ARG,
                "d_scale: parameter 'rank' (3 of 3)",
                "expected an integer scalar for INT32, got FP64");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_HOST(h_unsliced, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_scale, r, x, pld_slice(h, y, r), r);
}

static void test_dispatch_shape(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_unsliced, &cfg, x, y, PLD_ERR_ARG,
                "pld_dispatch to rank 0 (in h_unsliced): d_scale: parameter "
                "'x' (1 of 3)",
                "expected FP32[TR, TC], got FP32[2, 4, 8]");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_DEVICE(d_bad_launch, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(rank, INT32)) {
  pld_launch(a, k_scale, 1, x, y, rank); /* k_scale's s is FP32 */
}

PLD_HOST(h_bad_launch, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_bad_launch, r, pld_slice(h, x, r), pld_slice(h, y, r), r);
}

static void test_launch_checked_at_compile(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_bad_launch, &cfg, x, y, PLD_ERR_ARG,
                "pld_launch (rank 0, device 0, in d_bad_launch): k_scale: "
                "parameter 's' (3 of 3)",
                "expected a float scalar for FP32, got INT32");
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_DEVICE(d_blocks, a, PLD_IN(x, FP32, TR, TC), PLD_OUT(y, FP32, TR, TC),
           PLD_SCALAR(blocks, INT64)) {
  pld_launch(a, k_scale, blocks, x, y, 1.0f);
}

PLD_HOST(h_blocks, h, PLD_IN(x, FP32, NR, TR, TC), PLD_OUT(y, FP32, NR, TR, TC),
         PLD_SCALAR(blocks, INT64)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_blocks, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 blocks);
}

/* A launch takes 1 to 65535 blocks: both ends compile, one past either
 * is refused with the count it got. */
static void test_launch_blocks(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  const int64_t ok[] = {1, 65535}, bad[] = {0, 65536};
  for (int i = 0; i < 2; i++) {
    pld_program *p = NULL;
    assert_ok(pld_compile(h_blocks, &cfg, PLD_ARGS(x, y, ok[i]), &p));
    pld_program_destroy(p);
    p = NULL;
    char got[32];
    snprintf(got, sizeof got, "got %lld", (long long)bad[i]);
    assert_fails_with(pld_compile(h_blocks, &cfg, PLD_ARGS(x, y, bad[i]), &p),
                      PLD_ERR_ARG, "pld_launch (rank 0, device 0, in d_blocks)",
                      "k_scale: blocks: expected an integer in [1, 65535]",
                      got);
    assert_null(p);
  }
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_HOST(h_rank0_only, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  pld_dispatch(h, d_scale, 0, pld_slice(h, x, 0), pld_slice(h, y, 0), 0);
}

static void test_rank_not_dispatched(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 3, 2, 3);
  pld_tensor x, y;
  with_tensors(3, TR, TC, &x, &y);
  COMPILE_FAILS(h_rank0_only, &cfg, x, y, PLD_ERR_ARG,
                "pld_compile: h_rank0_only: rank 1 (device 5) is never "
                "dispatched");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_HOST(h_rank_range, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r <= pld_world_size(h); r++)
    pld_dispatch(h, d_scale, r, pld_slice(h, x, 0), pld_slice(h, y, 0), r);
}

static void test_dispatch_rank_out_of_range(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_rank_range, &cfg, x, y, PLD_ERR_ARG,
                "pld_dispatch (in h_rank_range): rank: expected [0, 2) (the "
                "world size), got 2");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

PLD_HOST(h_same_out, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_scale, r, pld_slice(h, x, r), pld_slice(h, y, 0), r);
}

static void test_two_ranks_write_one_slice(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_same_out, &cfg, x, y, PLD_ERR_ARG,
                "ranks 0 and 1 both write bytes [0, 128) of host argument 'y'");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void config_fails(const char *platform, int *dev, int n, int status,
                         const char *sub1, const char *sub2) {
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.platform = platform;
  cfg.device_ids = dev;
  cfg.ndevices = n;
  pld_tensor x, y;
  with_tensors(n > 0 ? n : 1, TR, TC, &x, &y);
  COMPILE_FAILS(h_scale, &cfg, x, y, status, sub1, sub2);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_config_duplicate_device(void **state) {
  (void)state;
  config_fails("a2a3sim", (int[]){3, 3}, 2, PLD_ERR_CONFIG,
               "pld_compile: cfg.device_ids[1]: device 3 is already rank 0",
               "must be distinct");
}

static void test_config_negative_device(void **state) {
  (void)state;
  config_fails("a5sim", (int[]){0, -2}, 2, PLD_ERR_CONFIG,
               "pld_compile: cfg.device_ids[1]: expected a device id in [0, "
               "128) for a5sim",
               "got -2");
}

static void test_config_device_beyond_limit(void **state) {
  (void)state;
  config_fails("a2a3sim", (int[]){128, 0}, 2, PLD_ERR_CONFIG,
               "pld_compile: cfg.device_ids[0]: expected a device id in [0, "
               "128) for a2a3sim",
               "got 128");
  /* The last card of the cluster is a device like any other. */
  pld_config cfg = test_config(ids, 2, 127, -100);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_program *p;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_config_unknown_platform(void **state) {
  (void)state;
  config_fails("a9sim", (int[]){0, 1}, 2, PLD_ERR_CONFIG,
               "pld_compile: cfg.platform: expected a2a3sim or a5sim",
               "got 'a9sim'");
}

static void test_config_hardware_platform(void **state) {
  (void)state;
  config_fails("a5", (int[]){0, 1}, 2, PLD_ERR_UNSUPPORTED,
               "pld_compile: cfg.platform: 'a5' is the hardware",
               "no hardware backend");
}

static void test_config_no_devices(void **state) {
  (void)state;
  config_fails("a2a3sim", NULL, 0, PLD_ERR_CONFIG,
               "pld_compile: cfg.device_ids: expected at least one device id",
               "got 0");
}

/* The fabric: cfg.fabric and cfg.mpi_same_node, else PLD_FABRIC and
 * PLD_MPI_SAME_NODE; a value that names neither choice is refused before
 * anything starts (MPI included). */
static void fabric_fails(const char *fabric, const char *same_node,
                         const char *sub1, const char *sub2) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.fabric = fabric;
  cfg.mpi_same_node = same_node;
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_scale, &cfg, x, y, PLD_ERR_CONFIG, sub1, sub2);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_config_fabric(void **state) {
  (void)state;
  fabric_fails("tcp", NULL,
               "pld_compile: cfg.fabric: expected \"shm\" or "
               "\"mpi\", got \"tcp\"",
               "");
  fabric_fails("MPI", NULL, "cfg.fabric", "got \"MPI\"");
  fabric_fails("shm", "ucx",
               "pld_compile: cfg.mpi_same_node: expected "
               "\"shm\" or \"rma\", got \"ucx\"",
               "");
  assert_int_equal(setenv("PLD_FABRIC", "shmem", 1), 0);
  fabric_fails(NULL, NULL,
               "pld_compile: environment: PLD_FABRIC='shmem': "
               "expected shm or mpi",
               "");
  /* The configuration wins over the environment. */
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.fabric = "shm";
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_program *p;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(x, y)));
  pld_program_destroy(p);
  assert_int_equal(setenv("PLD_FABRIC", "shm", 1), 0);
  assert_int_equal(setenv("PLD_MPI_SAME_NODE", "", 1), 0);
  fabric_fails(NULL, NULL,
               "pld_compile: environment: PLD_MPI_SAME_NODE='': "
               "expected shm or rma",
               "");
  assert_int_equal(unsetenv("PLD_MPI_SAME_NODE"), 0);
  assert_int_equal(unsetenv("PLD_FABRIC"), 0);
  /* Without mpirun: one process, every rank on this machine. */
  assert_int_equal(pld_process_count(), 1);
  assert_int_equal(pld_process_index(), 0);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_artifacts(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 3, 2);
  cfg.artifact_dir = "";
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_program *p = NULL;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  const char *dir = pld_program_artifact_dir(p);
  assert_non_null(dir);
  struct stat sb;
  assert_int_equal(stat(dir, &sb), 0);
  const char *prog = pld_test_slurp(dir, "program.txt");
  assert_non_null(strstr(prog, "pld program h_scale"));
  assert_non_null(strstr(prog, "rank 0 -> device 3"));
  assert_non_null(strstr(prog, "rank 1 -> device 5"));
  assert_non_null(strstr(prog, "host orchestrator h_scale on the host CPU"));
  assert_non_null(strstr(prog, "x: FP32[2, 4, 8] In"));
  assert_non_null(strstr(prog, "dynamic dimension NR = 2"));
  const char *r1 = pld_test_slurp(dir, "rank1.txt");
  assert_non_null(strstr(r1, "d_scale on the AICPU of device 5"));
  assert_non_null(strstr(r1, "x: FP32[4, 8] In = x[1], copied in"));
  assert_non_null(strstr(r1, "y: FP32[4, 8] Out = y[1], copied back"));
  assert_non_null(strstr(r1, "rank: INT32 = 1"));
  assert_non_null(strstr(r1, "kernel k_scale on the AI cores: 1 block on AIV "
                             "cores (48 on the device)"));
  assert_non_null(strstr(r1, "s: FP32 = 2"));
  remove_dir(dir);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* Every allocation pld_compile makes may fail: the error is clean and
 * nothing leaks (the ASan build checks the leaks). */
static void test_allocation_failures(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  int failures = 0;
  for (long n = 1; n < 1000; n++) {
    pld_program *p = NULL;
    pld__alloc_fail_after(n);
    int st = pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p);
    pld__alloc_fail_after(0);
    if (st == PLD_OK) {
      pld_program_destroy(p);
      break;
    }
    assert_null(p);
    assert_fails_with(st, PLD_ERR_NOMEM, "out of memory");
    failures++;
  }
  assert_true(failures > 5);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

static void test_tensor_create_errors(void **state) {
  (void)state;
  pld_tensor t = {NULL};
  assert_fails_with(pld_tensor_create(PLD_FP32, 2, (int64_t[]){4, 0}, &t),
                    PLD_ERR_ARG, "pld_tensor_create: shape[1]",
                    "expected a size > 0, got 0");
  assert_fails_with(pld_tensor_create(PLD_FP32, 9, (int64_t[9]){1}, &t),
                    PLD_ERR_ARG, "pld_tensor_create: ndim: expected 1 to 8",
                    "got 9");
  assert_fails_with(pld_tensor_wrap(PLD_FP32, NULL, 1, (int64_t[]){4}, &t),
                    PLD_ERR_ARG, "pld_tensor_wrap: data");
  assert_null(t.p);
  pld_tensor_destroy(t); /* a NULL handle is a no-op */
}

/* ---- NULL out-parameters ------------------------------------------------ */

/* A NULL result pointer is refused before any work (no artifact folder is
 * written), never written through. */
static void test_null_out_parameters(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.artifact_dir = "/nonexistent-parent/pld-null-out";
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  assert_fails_with(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), NULL),
                    PLD_ERR_ARG,
                    "pld_compile: out: expected where to store the program, "
                    "got NULL");
  float data[4];
  assert_fails_with(pld_tensor_create(PLD_FP32, 1, (int64_t[]){4}, NULL),
                    PLD_ERR_ARG,
                    "pld_tensor_create: out: expected where to store the "
                    "tensor, got NULL");
  assert_fails_with(pld_tensor_wrap(PLD_FP32, data, 1, (int64_t[]){4}, NULL),
                    PLD_ERR_ARG,
                    "pld_tensor_wrap: out: expected where to store the "
                    "tensor, got NULL");
  assert_fails_with(pld_program_run(NULL, PLD_ARGS(x, y)), PLD_ERR_ARG,
                    "pld_program_run: p: expected a program, got NULL");
  assert_fails_with(pld_program_prepare(NULL), PLD_ERR_ARG,
                    "pld_program_prepare: p: expected a program, got NULL");
  assert_fails_with(pld_run(h_scale, NULL, PLD_ARGS(x, y)), PLD_ERR_CONFIG,
                    "pld_compile: cfg: expected a configuration, got NULL");
  pld_program *p;
  cfg.artifact_dir = NULL;
  assert_ok(pld_compile(h_scale, &cfg, PLD_ARGS(x, y), &p));
  assert_fails_with(pld_program_run(p, 2, NULL), PLD_ERR_ARG,
                    "pld_program_run: h_scale: expected the 2 arguments it "
                    "was compiled for, got 2 and a NULL argv");
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* Read-only data stays read-only at every level: an In slice of the host
 * given to a device function's Out parameter (it would be copied back over
 * the host's input), and a device function's In tensor given to a
 * kernel's InOut parameter, are refused when compiling. */
PLD_DEVICE(d_writes_input, a, PLD_IN(x, FP32, TR, TC),
           PLD_OUT(y, FP32, TR, TC)) {
  (void)a;
  (void)x;
  (void)y;
}
PLD_HOST(h_input_as_output, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_writes_input, r, pld_slice(h, x, r), pld_slice(h, x, r));
}
PLD_KERNEL(k_inout, k, PLD_INOUT(t, FP32, TR, TC)) {
  (void)k;
  (void)t;
}
PLD_DEVICE(d_kernel_writes_input, a, PLD_IN(x, FP32, TR, TC),
           PLD_OUT(y, FP32, TR, TC)) {
  pld_launch(a, k_inout, 1, y);
  pld_launch(a, k_inout, 1, x);
}
PLD_HOST(h_kernel_writes_input, h, PLD_IN(x, FP32, NR, TR, TC),
         PLD_OUT(y, FP32, NR, TR, TC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_kernel_writes_input, r, pld_slice(h, x, r),
                 pld_slice(h, y, r));
}

static void test_input_passed_as_output(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  COMPILE_FAILS(h_input_as_output, &cfg, x, y, PLD_ERR_ARG,
                "pld_dispatch to rank 0 (in h_input_as_output): "
                "d_writes_input: parameter 'y' (2 of 2): an Out parameter is "
                "written, but the tensor passed is 'x', an In parameter (read "
                "only)");
  COMPILE_FAILS(h_kernel_writes_input, &cfg, x, y, PLD_ERR_ARG,
                "pld_launch (rank 0, device 0, in d_kernel_writes_input): "
                "k_inout: parameter 't' (1 of 1): an InOut parameter is "
                "written, but the tensor passed is 'x', an In parameter");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* A descriptor made by hand with more parameters than any function may
 * have is refused, not copied into argument arrays past their end. */
static void test_descriptor_too_many_parameters(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  with_tensors(2, TR, TC, &x, &y);
  pld_param params[PLD_MAX_PARAMS + 1]; /* one past the limit */
  memset(params, 0, sizeof params);
  pld_signature sig = *h_scale.sig;
  sig.nparams = PLD_MAX_PARAMS + 1;
  sig.params = params;
  pld_host_fn forged = {&sig, h_scale.entry};
  COMPILE_FAILS(forged, &cfg, x, y, PLD_ERR_ARG,
                "pld_compile: host: expected a function declared with "
                "PLD_HOST, got a descriptor whose parameter table is invalid");
  sig.nparams = -1;
  COMPILE_FAILS(forged, &cfg, x, y, PLD_ERR_ARG, "parameter table is invalid");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- sizes beyond a device ----------------------------------------------- */

/* A window of (hi << 32 | lo) bytes, viewed as FP32[4] at byte `at`; and
 * if `second`, a second window of that many bytes, viewed too. */
PLD_DEVICE(d_window, a, PLD_WINDOW(w, FP32, 4)) {
  (void)a;
  (void)w;
}
PLD_HOST(h_window, h, PLD_SCALAR(lo, INT64), PLD_SCALAR(hi, INT64),
         PLD_SCALAR(at, INT64), PLD_SCALAR(second, INT64)) {
  size_t bytes = (size_t)hi << 32 | (size_t)lo;
  pld_window_buf b = pld_window_alloc(h, bytes);
  pld_window_buf b2 = {NULL};
  if (second)
    b2 = pld_window_alloc(h, (size_t)second);
  for (int r = 0; r < pld_world_size(h); r++) {
    pld_dispatch(h, d_window, r,
                 pld_window_view_at(h, b, (size_t)at, PLD_FP32, PLD_SHAPE(4)));
    if (second)
      pld_dispatch(h, d_window, r,
                   pld_window_view(h, b2, PLD_FP32, PLD_SHAPE(4)));
  }
}

static int compile_window(const char *platform, uint64_t bytes, uint64_t at,
                          uint64_t second) {
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.platform = platform;
  int64_t lo = (int64_t)(bytes & 0xffffffffu), hi = (int64_t)(bytes >> 32);
  int64_t off = (int64_t)at, sec = (int64_t)second;
  pld_program *p = NULL;
  int st = pld_compile(h_window, &cfg, PLD_ARGS(lo, hi, off, sec), &p);
  assert_true((st == PLD_OK) == (p != NULL));
  pld_program_destroy(p);
  return st;
}

#define GIB ((uint64_t)1 << 30)

/* A window must fit a device's global memory: a size near SIZE_MAX is
 * refused with the size given, never rounded up into a small one. */
static void test_window_size_beyond_device(void **state) {
  (void)state;
  const uint64_t sizes[] = {SIZE_MAX, SIZE_MAX - 10, SIZE_MAX - 31,
                            64 * GIB + 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char got[64];
    snprintf(got, sizeof got, "got %llu", (unsigned long long)sizes[i]);
    assert_fails_with(compile_window("a2a3sim", sizes[i], 0, 0), PLD_ERR_ARG,
                      "pld_window_alloc (in h_window): bytes: expected 1 to "
                      "68719476736 (the global memory of an a2a3sim device)",
                      got);
  }
  assert_fails_with(compile_window("a5sim", 128 * GIB + 1, 0, 0), PLD_ERR_ARG,
                    "expected 1 to 137438953472 (the global memory of an "
                    "a5sim device), got 137438953473");
  assert_fails_with(compile_window("a2a3sim", 0, 0, 0), PLD_ERR_ARG,
                    "bytes: expected 1 to 68719476736", "got 0");
  /* Exactly the device's memory compiles (it is not mapped until run). */
  assert_ok(compile_window("a2a3sim", 64 * GIB, 0, 0));
  assert_ok(compile_window("a5sim", 128 * GIB, 0, 0));
  /* Two windows that fit one by one but not together. */
  assert_fails_with(compile_window("a2a3sim", 32 * GIB, 0, 32 * GIB + 4096),
                    PLD_ERR_NOMEM,
                    "pld_compile: h_window: rank 0 (device 0): its tensor "
                    "slices and window buffers need more than the "
                    "68719476736 bytes of an a2a3sim device's global memory "
                    "(34359738368 bytes before window buffer #1 of "
                    "34359742464 bytes)");
  assert_ok(compile_window("a2a3sim", 32 * GIB, 0, 32 * GIB));
}

/* A view at an offset near SIZE_MAX: the message says what it needs
 * without wrapping. */
static void test_window_view_offset_wraps(void **state) {
  (void)state;
  assert_fails_with(compile_window("a2a3sim", 4096, SIZE_MAX - 7, 0),
                    PLD_ERR_BOUNDS,
                    "pld_window_view (in h_window): view FP32[4] at byte "
                    "18446744073709551608 needs more than "
                    "18446744073709551615 bytes, but window buffer #0 was "
                    "allocated with 4096 bytes");
  assert_fails_with(compile_window("a2a3sim", 4096, 4084, 0), PLD_ERR_BOUNDS,
                    "view FP32[4] at byte 4084 needs 4100 bytes");
  assert_ok(compile_window("a2a3sim", 4096, 4080, 0));
}

/* Tensor slices and device allocations beyond a device's memory.  Host
 * tensors wrapped over a small buffer can claim any size (nothing reads
 * them while compiling); compiling refuses what a device cannot hold. */
PLD_DYNAMIC(RW);
PLD_DEVICE(d_big, a, PLD_IN(x, FP32, RW, 8), PLD_OUT(y, FP32, RW, 8),
           PLD_SCALAR(alloc_rows, INT64)) {
  if (alloc_rows > 0)
    (void)pld_device_alloc(a, PLD_FP32, PLD_SHAPE(alloc_rows, 8));
}
PLD_HOST(h_big, h, PLD_IN(x, FP32, NR, RW, 8), PLD_OUT(y, FP32, NR, RW, 8),
         PLD_SCALAR(alloc_rows, INT64)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_big, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 alloc_rows);
}

/* x and y of `rows` rows of 32 bytes per rank; the device function
 * allocates alloc_rows more. */
static int compile_big(int64_t rows, int64_t alloc_rows) {
  static float small[8];
  pld_config cfg = test_config(ids, 2, 0, 1);
  pld_tensor x, y;
  assert_ok(pld_tensor_wrap(PLD_FP32, small, 3, (int64_t[]){2, rows, 8}, &x));
  assert_ok(pld_tensor_wrap(PLD_FP32, small, 3, (int64_t[]){2, rows, 8}, &y));
  pld_program *p = NULL;
  int st = pld_compile(h_big, &cfg, PLD_ARGS(x, y, alloc_rows), &p);
  assert_true((st == PLD_OK) == (p != NULL));
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return st;
}

static void test_slices_beyond_device(void **state) {
  (void)state;
  const int64_t half = (int64_t)(32 * GIB / 32); /* rows of 32 GiB */
  /* x and y of 32 GiB each fill an a2a3sim device exactly. */
  assert_ok(compile_big(half, 0));
  assert_fails_with(compile_big(half + 2, 0), PLD_ERR_NOMEM,
                    "pld_compile: h_big: rank 0 (device 0): its tensor slices "
                    "and window buffers need more than the 68719476736 bytes "
                    "of an a2a3sim device's global memory (34359738432 bytes "
                    "before a slice of 'y' of 34359738432 bytes)");
  /* Then nothing is left for a device allocation, even of one row. */
  assert_fails_with(compile_big(half, 1), PLD_ERR_NOMEM,
                    "pld_device_alloc (rank 0, device 0, in d_big): FP32[1, "
                    "8] needs 32 bytes, but 68719476736 of the 68719476736 "
                    "bytes of the device's global memory are taken");
  /* With 32 GiB of slices, 32 GiB can be allocated, and not a row more. */
  assert_ok(compile_big(half / 2, half));
  assert_fails_with(compile_big(half / 2, half + 1), PLD_ERR_NOMEM,
                    "FP32[1073741825, 8] needs 34359738400 bytes, but "
                    "34359738368 of the 68719476736 bytes");
}

/* A shape whose size overflows is refused naming the shape. */
static void test_tensor_size_overflow(void **state) {
  (void)state;
  pld_tensor t = {NULL};
  assert_fails_with(
      pld_tensor_create(PLD_FP32, 2, (int64_t[]){INT64_MAX, 2}, &t),
      PLD_ERR_ARG,
      "pld_tensor_create: shape: FP32[9223372036854775807, 2] holds more "
      "than 9223372036854775807 bytes (half the address space)");
  assert_fails_with(
      pld_tensor_create(PLD_INT8, 2,
                        (int64_t[]){(int64_t)1 << 32, (int64_t)1 << 31}, &t),
      PLD_ERR_ARG, "INT8[4294967296, 2147483648] holds more than");
  assert_null(t.p);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_compile_ok),
    cmocka_unit_test(test_host_arg_count),
    cmocka_unit_test(test_host_arg_dtype),
    cmocka_unit_test(test_host_arg_shape),
    cmocka_unit_test(test_host_arg_scalar_for_tensor),
    cmocka_unit_test(test_dynamic_dim_two_values),
    cmocka_unit_test(test_world_larger_than_tensors),
    cmocka_unit_test(test_dispatch_arg_count),
    cmocka_unit_test(test_dispatch_scalar_dtype),
    cmocka_unit_test(test_dispatch_shape),
    cmocka_unit_test(test_launch_checked_at_compile),
    cmocka_unit_test(test_launch_blocks),
    cmocka_unit_test(test_rank_not_dispatched),
    cmocka_unit_test(test_dispatch_rank_out_of_range),
    cmocka_unit_test(test_two_ranks_write_one_slice),
    cmocka_unit_test(test_config_duplicate_device),
    cmocka_unit_test(test_config_negative_device),
    cmocka_unit_test(test_config_device_beyond_limit),
    cmocka_unit_test(test_config_unknown_platform),
    cmocka_unit_test(test_config_hardware_platform),
    cmocka_unit_test(test_config_no_devices),
    cmocka_unit_test(test_artifacts),
    cmocka_unit_test(test_allocation_failures),
    cmocka_unit_test(test_tensor_create_errors),
    cmocka_unit_test(test_null_out_parameters),
    cmocka_unit_test(test_descriptor_too_many_parameters),
    cmocka_unit_test(test_input_passed_as_output),
    cmocka_unit_test(test_window_size_beyond_device),
    cmocka_unit_test(test_window_view_offset_wraps),
    cmocka_unit_test(test_slices_beyond_device),
    cmocka_unit_test(test_tensor_size_overflow),
    cmocka_unit_test(test_config_fabric),
};

PLD_TEST_MAIN("compile", tests)
